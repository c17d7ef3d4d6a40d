/* cq_qp_rts.h: stage 3 of the verbs workflow: create the CQ and QP, exchange addresses, drive the QP to RTS. */
#ifndef RDMA_STEPS_CQ_QP_RTS_H
#define RDMA_STEPS_CQ_QP_RTS_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "cli.h"
#include "device.h"
#include "exchange.h"
#include "fault.h"
#include "open_pd.h"
#include "reg_mr.h"

/* Stage 3's long-only option keys (cli.h's blocks). */
enum cq_qp_key {
	CLI_KEY_CM = CLI_STAGE_KEYS(3),	/* --cm */
	CLI_KEY_TCLASS,			/* --tclass */
	CLI_KEY_SL,			/* --sl */
};

/*
 * Stage 3's queues: QUEUE_DEPTH WRs each way, or fewer on a device that holds
 * fewer (max_qp_wr), or whose CQ could not take both queues' completions
 * (max_cqe): conn.send_depth and conn.recv_depth say what a QP got.  No
 * option sets them: a later step that keeps many WRs in flight names its
 * need in an option of its own, checked against the device and refused
 * naming that option; the rest post a few WRs at a time.
 */
#define QUEUE_DEPTH 64
#define INLINE_WANTED 64

/*
 * What a later step asks of stage 3 beyond its options: each field left 0 or
 * NULL keeps stage 3's own choice.  Stage 3 names no later step; a step that
 * needs more fills one in and points conn_opts.hook at it.
 */
struct foreign_peer;

struct conn_hook {
	struct ibv_qp_cap cap;		/* the QP's queues; max_send_wr 0: QUEUE_DEPTH each way,
					 * one SGE, INLINE_WANTED bytes inline */
	const struct foreign_peer *foreign;	/* a peer that speaks its own protocol */
	stranger_namer *name_stranger;	/* names a peer whose exchange is not ours */
	uint64_t send_ops_flags;	/* IBV_QP_EX_WITH_*: the QP comes from ibv_create_qp_ex, ready
					 * for the extended post API (ibv_wr_*) with those operations;
					 * 0: ibv_create_qp.  The --cm path (rdma_create_qp) ignores it */
	enum ibv_qp_type qp_type;	/* IBV_QPT_UC: an unreliable-connected QP, which has no
					 * ACKs, no retries and no READs or atomics; 0: RC.  The
					 * --cm path ignores it */
	/* The step's own requests against the device's limits (dev_limits.h), each refusal
	 * naming the option to change: session_open calls it after stage 1, before anything
	 * else is created, in place of its own check of -s; or NULL */
	int (*check_limits)(const struct rdma_dev *dev, const void *arg);
	const void *limits_arg;		/* its ARG */
};

struct conn_opts {
	bool events;			/* -e: use a completion channel */
	bool cm;			/* --cm: connect through rdma_cm, not the side channel */
	uint8_t tclass;			/* --tclass: the GRH's traffic class, DSCP << 2 | ECN */
	uint8_t sl;			/* --sl: the address vector's service level */
	bool tclass_given;		/* no --tclass: 0, or under --cm the device's default */
	bool sl_given;			/* no --sl: 0 */
	const struct conn_hook *hook;	/* set by a later step, never by an option; or NULL */
};

/*
 * Stage 3's part of the command line, filling a struct conn_opts: -e
 * (CQ_QP_STAGE), --cm (CQ_QP_CM_STAGE) in the steps that connect through
 * rdma_cm, and --tclass and --sl (CQ_QP_PATH_STAGE, the address vector's
 * priority) in every step that connects.
 */
extern const struct cli_option cq_qp_cli_options[];
extern const struct cli_option cq_qp_cm_cli_options[];
extern const struct cli_option cq_qp_path_cli_options[];
int cq_qp_parse_option(int key, const char *arg, void *opts);
#define CQ_QP_STAGE(opts) { cq_qp_cli_options, cq_qp_parse_option, (opts) }
#define CQ_QP_CM_STAGE(opts) { cq_qp_cm_cli_options, cq_qp_parse_option, (opts) }
#define CQ_QP_PATH_STAGE(opts) { cq_qp_path_cli_options, cq_qp_parse_option, (opts) }

struct rdma_conn {
	struct ibv_comp_channel *channel;	/* only with --events */
	struct ibv_cq *cq;			/* completions of both queues */
	struct ibv_qp *qp;			/* the queue pair: reliable-connected, unless a
						 * hook asked for UC */
	enum ibv_qp_type qp_type;		/* IBV_QPT_RC or IBV_QPT_UC */
	uint32_t max_inline;			/* bytes a send may carry inline */
	uint32_t send_depth, recv_depth;	/* WRs the program may keep in each queue: what
						 * stage 3 asked (the provider may make more) */
	/* A step may change these three between creating the QP and connecting it. */
	uint8_t timeout;			/* the ACK timeout: 4.096 us x 2^timeout a try */
	uint8_t retry_cnt;			/* retransmissions before status 12 */
	uint8_t rd_atomic;			/* RDMA READs and atomics we offer to keep in
						 * flight (conn_offer_rd_atomic) */
	uint8_t max_rd_atomic;			/* agreed with the peer: ours in flight, */
	uint8_t max_dest_rd_atomic;		/* and the peer's we serve (agree_rd_atomic) */
	uint8_t traffic_class;			/* the GRH's, as our packets carry it (--tclass) */
	uint8_t sl;				/* the service level (--sl) */
	stranger_namer *name_stranger;		/* from the hook, or NULL */
	int sock;				/* the side channel to the peer, or -1 */
	struct peer_info local, remote;
};

struct cm_link;

/*
 * The queues and the CQ that create_cq_qp would ask for under OPTS, checked
 * against DEV's limits (max_qp_wr, max_cqe, max_sge) before anything is
 * created: 0, or -1 after one line naming the limit.  A hook's queues are
 * the step's request, never shrunk; stage 3's own fit the device.
 */
int cq_qp_check_limits(const struct rdma_dev *dev, const struct conn_opts *opts);

/* The send WRs create_cq_qp would ask for under OPTS on DEV: a hook's, or stage 3's own fitted to the device. */
uint32_t cq_qp_send_depth(const struct rdma_dev *dev, const struct conn_opts *opts);

/*
 * Creates the CQ (and channel) and the RC QP, and moves the QP to INIT; with
 * CM (--cm), rdma_cm creates the QP on its cm_id and moves it to INIT
 * itself.  Returns 0 or -1.
 */
int create_cq_qp(struct rdma_dev *dev, const struct rdma_buf *buf, const struct conn_opts *opts,
		 struct rdma_conn *conn, struct cm_link *cm);

/*
 * Opens the side channel (server: waits for the client; client: connects to
 * OPTS->server), exchanges peer_info, and moves the QP to RTR and then RTS.
 */
int connect_qp(struct rdma_dev *dev, const struct cli_common *opts, struct rdma_conn *conn);

/* Moves the QP to RTR and RTS with what conn->remote says of the peer, and reads its state back. */
int bring_up_qp(struct rdma_dev *dev, struct rdma_conn *conn);

/*
 * Between create_cq_qp and the exchange: offer N READs and atomics in flight
 * instead of stage 3's 1.  Refused (-1, named) past the device's
 * max_qp_init_rd_atom or EXCHANGE_RD_ATOMIC_MAX: never shrunk in silence.
 */
int conn_offer_rd_atomic(const struct rdma_dev *dev, struct rdma_conn *conn, int n);

/*
 * Takes a QP in any state (ERR, after a failed work request) to RESET and
 * then INIT, and draws a new PSN for it; the caller exchanges with the peer
 * again and calls bring_up_qp.
 */
int reset_qp(struct rdma_dev *dev, const struct rdma_buf *buf, struct rdma_conn *conn);

/* Destroys what create_cq_qp made and closes the side channel; returns how many releases failed. */
int destroy_cq_qp(struct rdma_conn *conn);

/* The QP's state as the provider reports it (ibv_query_qp), into STATE; 0 or -1. */
int query_qp_state(struct rdma_conn *conn, enum ibv_qp_state *state);

/* Stage 3's fault points: creating the CQ and QP, moving the QP to RTS, and destroying them (release_qp, ...). */
extern const struct fault_point cq_qp_faults[];

#endif
