/* pingpong.h: stage 5: the loops of both roles, N messages each, the initiator timing every one. */
#ifndef RDMA_STEPS_PINGPONG_H
#define RDMA_STEPS_PINGPONG_H

#include "poller.h"
#include "post_wr.h"
#include "reg_mr.h"

/*
 * The initiator posts ITERS operations (a SEND is answered by the target,
 * a ping-pong), checks the bytes, and reports latency and bandwidth; the
 * target takes what arrives and checks it.  With PIPELINED the initiator
 * runs run_pipelined_loop, and the target answers no SEND.
 */
int run_initiator_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int timeout_s);
int run_target_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		    int iters, bool pipelined, int timeout_s);

#endif
