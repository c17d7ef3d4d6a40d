/* ring.h: stage 7: the ring on verbs: one RC QP to the next rank and one from the previous, K slots of C bytes, credits, WRITE with immediate (set-up in ring.c, the data path in datapath.c). */
#ifndef RDMA_STEPS_RING_H
#define RDMA_STEPS_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "progress.h"
#include "cq_qp_rts.h"
#include "launch.h"
#include "open_pd.h"
#include "reg_mr.h"
#include "rendezvous.h"
#include "ring_options.h"
#include "schedule.h"

struct rdma_ring {
	struct rdma_dev dev;		/* stage 1 */
	struct rdma_buf data;		/* stage 2: the user buffer, registered once */
	struct rdma_buf slots;		/* K slots of C bytes that the previous rank writes into */
	struct rdma_conn to_next;	/* stage 3: our QP to the next rank */
	struct rdma_conn from_prev;	/* and the one from the previous rank */
	int rank, world, k;
	size_t c;
	enum progress_rule rule;	/* how a wait gives the CPU away: the runtime's, decided once */
	int slow_ms;			/* --slow: how long this rank holds each slot */
	/* Sender: the next rank's slots we may write, in the order it freed them. */
	int credits[MAX_SLOTS], credit_head, credit_count;
	int writes_in_flight;
	/* Receiver: the slots we have granted the previous rank, and SENDs carrying credits. */
	bool granted[MAX_SLOTS];
	int credit_sends_in_flight;
	uint32_t sent_msgs, taken_msgs;	/* messages on each link so far */
	/* Pieces of the next run, written by a previous rank that finished this run first. */
	struct ibv_wc early[MAX_SLOTS];
	int n_early;
};

/* The neighbours: the rank we WRITE to, and the rank that WRITEs to us. */
static inline int ring_next(const struct rdma_ring *r)
{
	return (r->rank + 1) % r->world;
}

static inline int ring_prev(const struct rdma_ring *r)
{
	return (r->rank + r->world - 1) % r->world;
}

/*
 * The immediate value of a piece's WRITE names what it carries: the ring
 * step in bits 31-24, the slot in 23-16, and the message's number on this
 * link (mod 65536) in 15-0.  The receiver checks all three.  (A credit's
 * SEND carries the slot alone.)
 */
static inline uint32_t ring_imm(int step, int slot, uint32_t seq)
{
	return (uint32_t)step << 24 | (uint32_t)slot << 16 | (seq & 0xffff);
}

static inline int ring_imm_step(uint32_t imm)
{
	return (int)(imm >> 24);
}

static inline int ring_imm_slot(uint32_t imm)
{
	return (int)(imm >> 16 & 0xff);
}

static inline uint32_t ring_imm_seq(uint32_t imm)
{
	return imm & 0xffff;
}

/* ring.c: set-up and teardown. */

/*
 * Stages 1 to 3 for a ring: the device and PD, the user buffer of BYTES
 * (its largest size) and the slots, both CQs and QPs in INIT, and the
 * receives for the slots and for the credits posted.  0 or -1; either way
 * the caller ends with ring_close.
 */
int ring_open(struct rdma_ring *r, const struct cli_common *common, const struct ring_opts *opts,
	      const struct launch *l, size_t bytes);

/* Moves both QPs to RTS against what the rendezvous said of the neighbours. */
int ring_connect(struct rdma_ring *r, const struct neighbours *nb);

/* datapath.c: grants the previous rank our K slots: one credit each, after its receive is posted. */
int ring_grant_slots(struct rdma_ring *r, struct ring_ctl *ctl);

/*
 * Meets the other ranks: MINE (its options and per-rank part filled in) gains
 * both QPs, goes to rank 0 through the rendezvous, or FAILURE instead; then
 * both QPs to RTS against what NB says of the neighbours, and every rank in
 * RTS; the caller then grants the slots (ring_grant_slots).  0, or -1 after
 * every rank was told.
 */
int ring_meet(struct rdma_ring *r, struct ring_ctl *ctl, const struct launch *l,
	      struct hello *mine, const char *failure, struct neighbours *nb);

/*
 * datapath.c: runs PLAN once over the ring (one collective), pipelined,
 * waiting by the runtime's progress loop; 0, or -1 after ctl_fail.
 */
int ring_run(struct rdma_ring *r, const struct ring_layout *l, const struct plan *plan,
	     struct ring_ctl *ctl, int timeout_s);

/* datapath.c: waits, quietly, until the SENDs that carry our last credits are acknowledged. */
int ring_finish(struct rdma_ring *r, struct ring_ctl *ctl, int timeout_s);

/* After ring_finish: a last meeting of every rank; 0 or -1. */
int ring_leave(struct ring_ctl *ctl);

/* Releases stages 3, 2 and 1; returns how many releases failed. */
int ring_close(struct rdma_ring *r);

#endif
