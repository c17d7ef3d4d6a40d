/* kv_datapath.h: step 08's data path (datapath.c): a request's chains of READs or WRITEs with immediate on K QPs, the receives for push, the windows bound and invalidated, and the one wait that reaps the CQs. */
#ifndef RDMA_STEPS_KV_DATAPATH_H
#define RDMA_STEPS_KV_DATAPATH_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "kv_options.h"
#include "kv_plan.h"
#include "kv_qps.h"

/* What the data path counted while one request moved, on this side. */
struct kv_counts {
	uint64_t bytes_per_qp[KV_MAX_QPS];	/* the initiator's chains completed, or the immediates taken */
	int blocks;		/* the decoder: blocks in (its READs completed, or the immediates taken) */
	int wrs;		/* the initiator: WRs posted */
	int blocks_at_last;	/* the decoder: blocks in when the request's last segment came */
	int last_qp;		/* the QP it came by; -1 before */
};

/*
 * One side's data path while one request moves: the chains posted and not
 * yet retired, each QP's WRs in flight, the blocks counted in.  Its fields
 * are datapath.c's alone.
 */
struct kv_mover;

/*
 * Opens REQ's data path on this side (DECODER or the prefiller): its QPs Q,
 * the side channel FD that tells whether the peer is still there, -t
 * (TIMEOUT_S) without a completion before a wait gives up.  It counts into
 * COUNTS, which it zeroes.  NULL after saying why (no memory).
 */
struct kv_mover *kv_mover_open(struct kv_qps *q, const struct kv_request *req,
			       const struct kv_opts *opts, bool decoder, int fd, int timeout_s,
			       struct kv_counts *counts);
void kv_mover_close(struct kv_mover *m);

/*
 * The decoder, before its table goes out: in push mode, one receive per
 * segment on the QP that segment comes by, for each WRITE with immediate
 * to consume.  0 or -1.
 */
int kv_post_receives(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts);

/*
 * The initiator: posts LAYER's segments that go by QP K in chains of at
 * most --chain WRs, one doorbell each, with ibv_post_send or the extended
 * API (--post ex); each chain waits, reaping, for room in the send queue
 * first.  0 or -1.
 */
int kv_post_layer(struct kv_mover *m, int layer, int k);

/*
 * The decoder pulling: reaps every CQ until the side channel holds a byte,
 * the prefiller's next notice, for the caller to read.  -1 after saying
 * why: the prefiller gone, a failed completion, -t without one, Ctrl-C.
 */
int kv_wait_notice(struct kv_mover *m);

/* Reaps until every chain posted has completed and, on the decoder, every block has come. 0 or -1. */
int kv_wait_all_in(struct kv_mover *m);

/*
 * --windows: binds type 2 window MW on segment SEG's QP to just that
 * segment's blocks, with ACCESS (IBV_WR_BIND_MW, under the window's next
 * rkey), and waits for the bind's completion.  0 with the new rkey in
 * *RKEY, or -1.
 */
int kv_bind_window(struct kv_qps *q, const struct kv_request *req, int seg, struct ibv_mw *mw,
		   int access, int timeout_s, uint32_t *rkey);

/* Invalidates the window whose rkey is RKEY on QP K (IBV_WR_LOCAL_INV), WR_ID its index, and waits for it. 0 or -1. */
int kv_invalidate_window(struct kv_qps *q, int k, uint64_t wr_id, uint32_t rkey, int timeout_s);

/*
 * --windows, after the last request, on the granting side: in push mode
 * the one receive the probe's WRITE with immediate needs before its rkey
 * is even looked at (nothing in pull mode).  0 or -1.
 */
int kv_probe_receive(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts);

/*
 * --windows, after the granting side has taken its windows back: posts one
 * WR of REQ's first segment with that segment's old window rkey, which must
 * fail with a remote access error (moving both QPs to ERR).  0 when it
 * failed so; -1 when it did anything else.
 */
int kv_probe_revoked(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
		     int timeout_s);

#endif
