/* transfer.h: one request's KV cache moved, layer by layer: computed, announced or waited for, posted and counted in by the data path (datapath.c), and timed. */
#ifndef RDMA_STEPS_TRANSFER_H
#define RDMA_STEPS_TRANSFER_H

#include <stdbool.h>

#include "kv_datapath.h"
#include "kv_options.h"
#include "kv_plan.h"
#include "kv_qps.h"

/* What one request's move measured, on this side. */
struct kv_result {
	struct kv_counts counted;	/* the data path's counts */
	double ms;			/* the go-ahead to the last byte */
	double posted_ms;		/* the initiator: its first post to its last completion; else 0 */
	double after_compute_ms;	/* the decoder pulling: the compute's end, as the notices show it,
					 * to the last byte; else -1 */
};

/*
 * Moves REQ.  The prefiller computes each layer (--layer-ms) and fills it;
 * in push mode it then WRITEs it, in pull mode it tells the decoder over
 * the side channel FD that the layer is ready, and the decoder READs it.
 * The decoder counts blocks in until every one has come.  Fills RES.
 * Returns 0, or -1 after saying what failed.
 */
int kv_move(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
	    bool decoder, int fd, int timeout_s, struct kv_result *res);

#endif
