/* kv_grant.c: access to one request's blocks granted through memory windows, one per segment, and taken back after. */
#include "kv_grant.h"
#include "fault.h"
#include "kv_datapath.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>

const struct fault_point kv_grant_faults[] = {
	{ "alloc_mw", "ibv_alloc_mw", ENOMEM },
	{ "bind_mw", "ibv_post_send (IBV_WR_BIND_MW)", ENOMEM },
	{ "local_inv", "ibv_post_send (IBV_WR_LOCAL_INV)", ENOMEM },
	{ 0 },
};

/* Binds window I to segment I's blocks on the segment's QP (a type 2 bind is a work request). */
static int bind_one(struct kv_grant *g, struct kv_qps *q, const struct kv_request *req, int i,
		    int access, int timeout_s)
{
	if (kv_bind_window(q, req, i, g->mw[i], access, timeout_s, &g->rkey[i]))
		return -1;
	g->qp[i] = req->seg[i].qp;
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

int kv_grant_revoke(struct kv_grant *g, struct kv_qps *q, int timeout_s)
{
	int failures = 0, invalidated = 0;

	for (int i = 0; i < g->bound; i++) {
		if (kv_invalidate_window(q, g->qp[i], (uint64_t)i, g->rkey[i], timeout_s))
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
