/* pipeline.h: stage 5: the initiator's pipelined loop, --depth work requests in flight, few of them signalled. */
#ifndef RDMA_STEPS_PIPELINE_H
#define RDMA_STEPS_PIPELINE_H

#include "poller.h"
#include "post_wr.h"
#include "reg_mr.h"

/*
 * Posts ITERS operations with up to DEPTH in flight, asking for a completion
 * on every (DEPTH+1)/2th and the last, never more in flight than the send
 * queue holds; reports the bandwidth.  The target runs run_target_loop.
 */
int run_pipelined_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int depth, int timeout_s);

#endif
