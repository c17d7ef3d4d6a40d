/* kv_grant.h: access to one request's blocks granted through memory windows, one per segment, and taken back after. */
#ifndef RDMA_STEPS_KV_GRANT_H
#define RDMA_STEPS_KV_GRANT_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "fault.h"
#include "kv_plan.h"
#include "kv_qps.h"

/*
 * The side the peer reads (pull) or writes (push) gives it, instead of its
 * pool's rkey, one type 2 memory window per segment: bound to just that
 * segment's blocks, with just the access the mode needs, on the QP that
 * segment travels by (a type 2 window answers on that QP alone).
 */
struct kv_grant {
	int n;
	struct ibv_mw **mw;
	uint32_t *rkey;		/* each window's rkey, in segment order: what the peer is sent */
	int *qp;		/* the QP each window is bound on */
	int bound;		/* how many are bound now (and must be invalidated) */
};

/*
 * Allocates a type 2 window per segment of REQ (ibv_alloc_mw) and binds each
 * on its QP with IBV_WR_BIND_MW, giving ACCESS, waiting for each bind's
 * completion (the data path's kv_bind_window).  0, or -1 with what was made
 * left for kv_grant_revoke.
 */
int kv_grant_bind(struct kv_grant *g, struct kv_qps *q, const struct kv_request *req, int access,
		  int timeout_s);

/*
 * Takes the access back: invalidates each bound window on its QP
 * (IBV_WR_LOCAL_INV, the data path's kv_invalidate_window) and waits for
 * it, then frees every window (ibv_dealloc_mw).  A window must be invalidated before its QP is
 * destroyed.  Returns how many of these steps failed.
 */
int kv_grant_revoke(struct kv_grant *g, struct kv_qps *q, int timeout_s);

/* The windows' fault points (--windows): allocating, binding and invalidating them. */
extern const struct fault_point kv_grant_faults[];

#endif
