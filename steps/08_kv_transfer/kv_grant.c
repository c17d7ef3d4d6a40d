/* kv_grant.c: access to one request's blocks granted through memory windows, one per segment, and taken back after. */
#include "kv_grant.h"
#include "completion.h"
#include "fault.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>

const struct fault_point kv_grant_faults[] = {
	{ "alloc_mw", "ibv_alloc_mw", ENOMEM },
	{ "bind_mw", "ibv_post_send (IBV_WR_BIND_MW)", ENOMEM },
	{ "local_inv", "ibv_post_send (IBV_WR_LOCAL_INV)", ENOMEM },
	{ 0 },
};


/* Waits (stage 4's wait) for one completion on QP K's CQ, a bind or an invalidation this side posted; 0 or -1. */
static int wait_local_op(struct kv_qps *q, int k, const char *what, int timeout_s)
{
	struct ibv_wc wc;
	int rc = wait_completion(q->conn[k], &wc, timeout_s * 1000);

	if (rc < 0)
		return -1;
	if (rc) {
		report_error("QP %d: no completion for %s within %d s (-t)", k, what, timeout_s);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		report_error("QP %d: %s completed with status %s (%d)", k, what,
			     ibv_wc_status_str(wc.status), wc.status);
		return -1;
	}
	return 0;
}

/* Binds window I on its QP to segment I's blocks (a type 2 bind is a work request). */
static int bind_one(struct kv_grant *g, struct kv_qps *q, const struct kv_request *req, int i,
		    int access, int timeout_s)
{
	const struct segment *s = &req->seg[i];
	uint32_t rkey = ibv_inc_rkey(g->mw[i]->rkey);
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)i,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = {
			.mw = g->mw[i],
			/* A type 2 window gets a new key at each bind: the old one's 8-bit tag, plus one. */
			.rkey = rkey,
			.bind_info = {
				.mr = req->pool->buf->mr,
				.addr = (uintptr_t)kv_block_addr(req->pool, req->mine, s->first),
				.length = (uint64_t)s->count * req->pool->block_bytes,
				.mw_access_flags = (unsigned int)access,
			},
		},
	}, *bad;
	int rc = fault_at("bind_mw") ? errno : ibv_post_send(q->conn[s->qp]->qp, &wr, &bad);

	if (rc) {
		report_verb_error("ibv_post_send (IBV_WR_BIND_MW)", rc);
		return -1;
	}
	if (wait_local_op(q, s->qp, "a window's bind", timeout_s))
		return -1;
	/* rdma-core 44's rxe provider leaves the key as it was: the next bind compares against it. */
	g->mw[i]->rkey = rkey;
	g->rkey[i] = rkey;
	g->qp[i] = s->qp;
	g->bound++;
	return 0;
}

int kv_grant_bind(struct kv_grant *g, struct kv_qps *q, const struct kv_request *req, int access,
		  int timeout_s)
{
	int rc = 0;

	*g = (struct kv_grant){ 0 };
	g->mw = calloc((size_t)req->n_seg, sizeof(*g->mw));
	g->rkey = calloc((size_t)req->n_seg, sizeof(*g->rkey));
	g->qp = calloc((size_t)req->n_seg, sizeof(*g->qp));
	if (!g->mw || !g->rkey || !g->qp) {
		report_error("no memory for %d memory windows", req->n_seg);
		return -1;
	}
	/* The first window's bind is shown, the rest quietly; quiet ends however the loop does. */
	for (; g->n < req->n_seg && !rc; g->n++) {
		g->mw[g->n] = fault_at("alloc_mw") ? NULL :
			      ibv_alloc_mw(q->conn[0]->qp->pd, IBV_MW_TYPE_2);
		if (!g->mw[g->n]) {
			report_verb_error("ibv_alloc_mw", errno);
			rc = -1;
			break;
		}
		/* A window allocated counts (g->n moves on) whether or not its bind worked. */
		rc = bind_one(g, q, req, g->n, access, timeout_s);
		show_quiet(true);
	}
	show_quiet(false);
	if (rc)
		return -1;
	show("ibv_alloc_mw", "request %d: %d type 2 windows, one per segment, each bound (IBV_WR_BIND_MW) "
	     "on its segment's QP to just its blocks; the first has rkey 0x%x, on QP %d", req->number,
	     g->n, g->rkey[0], g->qp[0]);
	return 0;
}

/* Invalidates window I on the QP it was bound on; 0 or -1. */
static int invalidate_one(struct kv_grant *g, struct kv_qps *q, int i, int timeout_s)
{
	struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = g->rkey[i] }, *bad;
	int rc = fault_at("local_inv") ? errno : ibv_post_send(q->conn[g->qp[i]]->qp, &wr, &bad);

	if (rc) {
		report_verb_error("ibv_post_send (IBV_WR_LOCAL_INV)", rc);
		return -1;
	}
	return wait_local_op(q, g->qp[i], "a window's invalidation", timeout_s);
}

int kv_grant_revoke(struct kv_grant *g, struct kv_qps *q, int timeout_s)
{
	int failures = 0, invalidated = 0;

	for (int i = 0; i < g->bound; i++) {
		if (invalidate_one(g, q, i, timeout_s))
			failures++;
		else
			invalidated++;
	}
	for (int i = 0; i < g->n; i++)
		if (g->mw[i] && ibv_dealloc_mw(g->mw[i])) {
			report_verb_error("ibv_dealloc_mw", errno);
			failures++;
		}
	if (g->bound)
		show("IBV_WR_LOCAL_INV", "%d of %d windows invalidated, then freed (ibv_dealloc_mw): "
		     "their rkeys open nothing now", invalidated, g->bound);
	free(g->qp);
	free(g->rkey);
	free(g->mw);
	*g = (struct kv_grant){ 0 };
	return failures;
}
