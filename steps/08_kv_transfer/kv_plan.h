/* kv_plan.h: a request's plan: its block tables cut into segments, one WR each, dealt to the K QPs in turn; push's immediate, which names a segment; and the queues the plan asks of stage 3. */
#ifndef RDMA_STEPS_KV_PLAN_H
#define RDMA_STEPS_KV_PLAN_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "kv_options.h"
#include "kv_pool.h"
#include "kv_wire.h"

/*
 * A run of a layer's blocks that are adjacent on both sides (with --merge),
 * or one block: one WR.  Segments are dealt to the QPs in turn.
 */
struct segment {
	int first, count;	/* entries of the block table */
	int layer, qp;
};

/* One request, on one side: its tables and the WRs they make. */
struct kv_request {
	int number;
	const struct kv_pool *pool;
	const struct block_table *mine;
	const struct remote_table *peer;
	struct segment *seg;
	int n_seg;
	const uint32_t *seg_rkey;	/* --windows: the peer's window for each segment; else NULL */
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

/* The QPs' capacities this step asks of stage 3, for OPTS and this side's role. */
struct ibv_qp_cap kv_queue_caps(const struct kv_opts *opts, bool decoder);

/*
 * The operations the QPs are created for with --post ex (stage 3 then uses
 * ibv_create_qp_ex): the mode's one; 0 with --post classic.
 */
uint64_t kv_send_ops(const struct kv_opts *opts);

/*
 * --violate past_window, on the initiator: moves REQ's first segment one
 * block on in PEER's table, so that its WR ends one block past the window
 * granted for it, still inside the peer's pool MR.  0, or -1 when that block
 * would lie past the pool's end.
 */
int kv_reach_past_window(const struct kv_request *req, struct remote_table *peer,
			 const struct kv_opts *opts);

/*
 * After a move with --violate past_window completed: a device that confines
 * a window's rkey to the window would have refused it.  Says so; always -1.
 */
int kv_past_window_passed(const struct kv_request *req, const struct kv_opts *opts);

/* Cuts REQ into segments (allocated; kv_request_free) from both tables. 0 or -1. */
int kv_request_plan(struct kv_request *req, const struct kv_opts *opts, int qps);
void kv_request_free(struct kv_request *req);

#endif
