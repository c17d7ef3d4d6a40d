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

static const char *op_name(const struct kv_opts *opts)
{
	return opts->mode == KV_PULL ? "RDMA READ" : "RDMA WRITE with immediate";
}

int kv_reach_past_window(const struct kv_request *req, struct remote_table *peer,
			 const struct kv_opts *opts)
{
	uint32_t *first = &peer->table.entry[req->seg[0].first];
	uint32_t past = *first + (uint32_t)req->seg[0].count;

	/* Both sides' pools are of one shape (the shape message): as many blocks as this one. */
	if (past >= req->pool->n_blocks) {
		report_error("--violate past_window: request %d's first window ends at the peer's "
			     "last pool block (%u), so the block past it is outside the pool's MR; "
			     "give a larger --pool", req->number, past - 1);
		return -1;
	}
	show("--violate", "request %d: the first %s moves one block on in the peer's pool: its "
	     "window ends at pool block %u, and the WR now ends at block %u, past the window's "
	     "end, inside the peer's pool MR", req->number, op_name(opts), past - 1, past);
	(*first)++;
	return 0;
}

int kv_past_window_passed(const struct kv_request *req, const struct kv_opts *opts)
{
	report_error("request %d: the %s that reached one block past the end of its window "
		     "completed successfully: this device checked the window's rkey, QP and access "
		     "but not its bounds, so the window did not confine it", req->number,
		     op_name(opts));
	return -1;
}

void kv_request_free(struct kv_request *req)
{
	free(req->seg);
	req->seg = NULL;
}
