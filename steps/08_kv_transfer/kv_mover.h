/* kv_mover.h: step 08's own: one side's state while a request moves, shared by the transfer's three files. */
#ifndef RDMA_STEPS_KV_MOVER_H
#define RDMA_STEPS_KV_MOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "transfer.h"

/* One posted chain: its last WR is signalled, and its completion retires them all. */
struct chain {
	int qp, wrs, blocks;
	uint64_t bytes;
	bool has_last;		/* holds the request's last segment */
};

/*
 * Push's immediate: the request's number in the high 8 bits, the segment's
 * index in the low 24.  --requests is at most 255, and a request at most 255
 * layers of 4,096 blocks, 1,044,480 segments: every request the options allow
 * fits, checked here at compile time.  (16 bits each did not: --layers 255
 * --blocks 258 made segment 65,536 read as request 1's segment 0.)
 */
#define KV_IMM_SEG_BITS 24
_Static_assert((unsigned long)KV_MAX_LAYERS * KV_MAX_BLOCKS <= 1UL << KV_IMM_SEG_BITS,
	       "a request's segments must fit the immediate's segment field");
_Static_assert(KV_MAX_REQUESTS < 1 << (32 - KV_IMM_SEG_BITS),
	       "the request numbers must fit the immediate's request field");

static inline uint32_t kv_imm(int request, int seg)
{
	return (uint32_t)request << KV_IMM_SEG_BITS | (uint32_t)seg;
}

static inline int kv_imm_request(uint32_t imm)
{
	return (int)(imm >> KV_IMM_SEG_BITS);
}

static inline int kv_imm_segment(uint32_t imm)
{
	return (int)(imm & ((1U << KV_IMM_SEG_BITS) - 1));
}

/* One WR of a chain, whichever API posts it: its two ends, its rkey, its immediate. */
struct chain_wr {
	struct ibv_sge sge;	/* here: one SGE, the segment's blocks */
	uint64_t remote;	/* there, in the peer's pool */
	uint32_t rkey;		/* the peer's pool rkey, or with --windows the segment's window's */
	uint32_t imm;		/* push: the request and the segment (kv_imm) */
	bool signalled;		/* the chain's last */
};

/* One side's state while a request moves. */
struct mover {
	struct kv_qps *q;
	const struct kv_request *req;
	const struct kv_opts *opts;
	bool decoder, pull;
	int fd, timeout_s;
	struct kv_result *res;
	struct chain *chains;
	int n_chains, chains_done;
	struct chain_wr *cw;		/* room for one chain of --chain WRs, */
	struct ibv_send_wr *wr;		/* and for its list, posted the classic way */
	int outstanding[KV_MAX_QPS];	/* WRs posted on each QP and not yet retired */
	int *segs;			/* the segments of the chain being built */
	int *deferred;			/* --delay-qp: that QP's segments, posted last */
	int n_deferred;
	int blocks_in, total_blocks;
	double start_us;
	double first_post_us;		/* the initiator: when its first chain went; 0 before */
	int announced;			/* the prefiller, pulled from: layers told ready */
	double compute_end_us;		/* the decoder pulling: when a notice showed the compute over; 0 before */
};

/* The operation's name, for one WR or for N: what each of the three files says of a WR. */
static inline const char *kv_op_words(bool pull, int n)
{
	if (pull)
		return n == 1 ? "RDMA READ" : "RDMA READs";
	return n == 1 ? "RDMA WRITE with immediate" : "RDMA WRITEs with immediate";
}

/* kv_chains.c: a request's WRs, built and posted in chains. */

/* Posts segments SEGS[0..N) on QP K as one chain: one doorbell, the last WR signalled. 0 or -1. */
int kv_post_chain(struct mover *m, int k, const int *segs, int n);

/* Posts LAYER's segments on every QP but a held-back one, in chains of at most --chain WRs. */
int kv_post_layer(struct mover *m, int layer);

/* --delay-qp: after the wait, the held-back QP's layers. */
int kv_post_deferred(struct mover *m);

/* kv_arrivals.c: completions reaped, blocks counted in. */

/* Reaps every QP's CQ once; fails on a bad completion or when nothing moved for -t. 0 or -1. */
int kv_reap_all(struct mover *m, struct timespec *progress);

/* Waits, reaping, until QP K can take N more WRs. 0 or -1. */
int kv_wait_for_room(struct mover *m, int k, int n);

/* Waits until every chain has completed and, on the decoder, every block has come. 0 or -1. */
int kv_wait_all_in(struct mover *m);

/* The peer closed the side channel: says how far the request got; returns -1. */
int kv_report_peer_gone(const struct mover *m);

#endif
