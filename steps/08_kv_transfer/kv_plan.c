/* kv_plan.c: a request's plan: its block tables cut into segments, one WR each, dealt to the K QPs in turn; and the queues the plan asks of stage 3. */
#include "kv_plan.h"
#include "report.h"

#include <stdlib.h>

struct ibv_qp_cap kv_queue_caps(const struct kv_opts *opts, bool decoder)
{
	int per_qp = (opts->layers * opts->blocks + opts->qps - 1) / opts->qps;

	return (struct ibv_qp_cap){
		.max_send_wr = KV_SEND_DEPTH,
		/* Push: one receive for each WRITE with immediate the QP brings, all posted first. */
		.max_recv_wr = decoder && opts->mode == KV_PUSH ? (uint32_t)per_qp : 1,
		.max_send_sge = 1,
		.max_recv_sge = 1,
	};
}

uint64_t kv_send_ops(const struct kv_opts *opts)
{
	if (opts->post != KV_POST_EX)
		return 0;
	return opts->mode == KV_PULL ? IBV_QP_EX_WITH_RDMA_READ : IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
}

/* Whether entry E of T sits right after entry E - 1 in the pool. */
static bool continues(const struct block_table *t, int e)
{
	return t->entry[e] == t->entry[e - 1] + 1;
}

int kv_request_plan(struct kv_request *req, const struct kv_opts *opts, int qps)
{
	int n = opts->layers * opts->blocks;

	req->n_seg = 0;
	req->seg = calloc((size_t)n, sizeof(*req->seg));
	if (!req->seg) {
		report_error("no memory for a plan of %d segments", n);
		return -1;
	}
	for (int e = 0; e < n; e++) {
		/* A block joins the WR before it only if it follows it on both sides, in one layer. */
		if (opts->merge && e % opts->blocks && continues(req->mine, e) &&
		    continues(&req->peer->table, e)) {
			req->seg[req->n_seg - 1].count++;
			continue;
		}
		req->seg[req->n_seg] = (struct segment){ .first = e, .count = 1, .layer = e / opts->blocks,
							  .qp = req->n_seg % qps };
		req->n_seg++;
	}
	return 0;
}

void kv_request_free(struct kv_request *req)
{
	free(req->seg);
	req->seg = NULL;
}
