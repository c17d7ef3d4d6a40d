/* transfer.h: one request's KV cache moved, layer by layer, in chains of one-sided WRs striped over K QPs, and counted in. */
#ifndef RDMA_STEPS_TRANSFER_H
#define RDMA_STEPS_TRANSFER_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "kv_options.h"
#include "kv_pool.h"
#include "kv_qps.h"
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

/* What one request's move measured, on this side. */
struct kv_result {
	uint64_t bytes, bytes_per_qp[KV_MAX_QPS];
	int blocks, wrs;
	double ms;			/* the go-ahead to the last byte */
	double posted_ms;		/* the initiator: its first post to its last completion; else 0 */
	double after_compute_ms;	/* the decoder pulling: the compute's end, as the notices show it,
					 * to the last byte; else -1 */
	int blocks_at_last;		/* decoder: blocks in when the last-posted WR's came */
	int last_qp;
};

/* The QPs' capacities this step asks of stage 3, for OPTS and this side's role. */
struct ibv_qp_cap kv_queue_caps(const struct kv_opts *opts, bool decoder);

/*
 * The operations the QPs are created for with --post ex (stage 3 then uses
 * ibv_create_qp_ex): the mode's one; 0 with --post classic.
 */
uint64_t kv_send_ops(const struct kv_opts *opts);

/* Cuts REQ into segments (allocated; kv_request_free) from both tables. 0 or -1. */
int kv_request_plan(struct kv_request *req, const struct kv_opts *opts, int qps);
void kv_request_free(struct kv_request *req);

/*
 * The decoder, before its table goes out: in push mode, one receive per
 * segment on the QP that segment comes by, for each WRITE with immediate
 * to consume.  0 or -1.
 */
int kv_post_receives(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts);

/*
 * Moves REQ.  The prefiller computes each layer (--layer-ms) and fills it;
 * in push mode it then WRITEs it, in pull mode it tells the decoder over
 * the side channel FD that the layer is ready, and the decoder READs it.
 * The decoder counts blocks in until every one has come.  Fills RES.
 * Returns 0, or -1 after saying what failed.
 */
int kv_move(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
	    bool decoder, int fd, int timeout_s, struct kv_result *res);

/*
 * --windows, after the granting side has taken its windows back: posts one
 * WR of REQ's first segment with that segment's old window rkey, which must
 * fail with a remote access error (moving both QPs to ERR).  0 when it
 * failed so; -1 when it did anything else.
 */
int kv_probe_revoked(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
		     int timeout_s);

#endif
