/* lossy_paths.h: the data QPs, UC (or RC to compare), one a path, beside the session's RC QP that carries the control messages; and the control messages' buffer. */
#ifndef RDMA_STEPS_LOSSY_PATHS_H
#define RDMA_STEPS_LOSSY_PATHS_H

#include <stdbool.h>
#include <stdint.h>

#include "fault.h"
#include "lossy_options.h"
#include "session.h"

/* A later plane's registration of the buffer (--plane): plane_reg_mr. */
extern const struct fault_point lossy_plane_faults[];

/* The sender's send queue on each path, and how many WRITEs it chains behind one doorbell. */
#define LOSSY_SQ_DEPTH 256
#define LOSSY_POST_BATCH 16
/*
 * The receives the receiver keeps posted on each path, unless the device's
 * CQ or queue is smaller: the sender's window.  1,024 chunks of 1 KiB are
 * 1 MiB in flight a path, above a fabric's bandwidth-delay product (100 Gb/s
 * over a 10 us round trip is 125 KB) and the emulated VMs'.
 */
#define LOSSY_RECV_AHEAD 1024
/*
 * Answers in a row after which a path whose WRITEs all vanished is taken
 * as cut: the sender deals no more chunks to it, and when every path is so,
 * it stops.  At 5% loss a round's one last chunk is lost three times in a
 * row once in 8,000 transfers; a cut path is found in three timers.
 */
#define LOSSY_SILENT_ROUNDS 3
/* Receives posted on the control QP, each a slot of the control buffer; one more slot for our SEND. */
#define LOSSY_CTL_RECVS 4

struct lossy_path {
	struct rdma_conn conn;	/* its QP and CQ, made by stage 3 */
	int plane;		/* the plane its QP is on: path K on plane K % planes */
	bool failed;		/* the sender, RC: its QP ended in error (status 12): cut for good */
	double alive_us;	/* the sender: its last sign of life (a SACK showed a receive
				 * consumed; RC: a completion) */
	uint64_t posted;	/* the sender: WRITEs posted on it */
	uint64_t consumed;	/* receives its WRITEs consumed: counted (the receiver), or as
				 * the last SACK said (the sender) */
	uint64_t receives;	/* receives posted on it since the start: counted (the
				 * receiver), or as the last SACK said (the sender) */
	uint64_t lost;		/* the sender: WRITEs an answer showed consumed none: lost */
	uint32_t in_sq;		/* the sender: WRs not yet retired by a completion */
	uint32_t recv_left;	/* the receiver: receives posted and not yet consumed */
	/* The sender's judgement of the path, at each answer to an ask. */
	uint64_t answer_posted;	/* WRITEs posted on it by the last answer */
	uint64_t answer_consumed;	/* receives consumed on it, as the last answer said */
	uint32_t silent;	/* answers in a row that found WRITEs posted and none consumed */
};

/*
 * A plane: a device on a network of its own.  Plane 0 is the session's
 * device, PD and MR; each other has its own device and PD, and the same
 * buffer registered with that PD: an MR, its lkey and rkey, belong to one PD.
 */
struct lossy_plane {
	struct rdma_dev *dev;		/* plane 0: the session's; else own_dev */
	const struct rdma_buf *buf;	/* plane 0: the session's; else own_buf */
	struct rdma_dev own_dev;
	struct rdma_buf own_buf;	/* the session's buffer, its MR this plane's */
	bool cut;			/* the sender: every path on it taken as cut */
};

struct lossy_link {
	int n;				/* paths */
	struct lossy_path path[LOSSY_MAX_PATHS];
	int planes;			/* planes open */
	struct lossy_plane plane[LOSSY_MAX_PLANES];
	uint32_t window;		/* receives posted ahead on each path */
	uint32_t sq_depth;		/* the sender's send queue on each path */
	struct rdma_buf ctl;		/* LOSSY_CTL_RECVS receive slots, then our send slot */
	size_t slot;			/* bytes a slot: the longest control message */
};

/*
 * The session's QP is the control channel: the queues it needs, for
 * session_open's hook.
 */
struct ibv_qp_cap lossy_ctl_caps(void);

/*
 * Opens each plane after the first (--plane: its device, a PD, the session's
 * buffer registered again) and creates --paths data QPs of O's type on each
 * plane's device, PD and buffer, path K on plane K % planes, each with its
 * own CQ, through stage 3's hook (OPTS: -i and -x for the other planes'
 * devices): the SENDER's with a send
 * queue of LOSSY_SQ_DEPTH, the receiver's with the window's receives, which
 * it reads off the device (max_cqe, max_qp_wr) and says; each with the
 * session's --tclass and --sl (CONN); --qp-timeout and --retry-cnt, when
 * given, on every RC QP, the session's control QP included.  0 or -1; lossy_paths_destroy
 * releases what was made.
 */
int lossy_paths_create(struct lossy_link *l, struct session *s, const struct lossy_opts *o,
		       const struct cli_common *opts, const struct conn_opts *conn, bool sender);

/* The device name of plane P. */
const char *lossy_plane_name(const struct lossy_link *l, int p);

/*
 * After connect_qp has brought the control QP up: exchanges each data QP's
 * address over the same side channel, checks what the peer sent (its
 * buffer's length ours; the receiver's rkey given; with planes, its path
 * and plane ours, and its address on the subnet of our plane's device) and
 * brings each to RTS.  0 or -1.
 */
int lossy_paths_connect(struct lossy_link *l, struct session *s, bool sender, int timeout_s);

/* The path MTU of the data QPs, in bytes: the smaller of the two sides' active MTUs. */
uint32_t lossy_path_mtu(const struct lossy_link *l);

/* Registers the control buffer: LOSSY_CTL_RECVS + 1 slots of SLOT bytes.  0 or -1. */
int lossy_ctl_register(struct lossy_link *l, struct session *s, size_t slot);

/* Releases the control buffer, the data QPs and the planes after the first, the last made first; returns how many releases failed. */
int lossy_paths_destroy(struct lossy_link *l);

#endif
