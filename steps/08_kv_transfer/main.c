/* main.c: step 08: a KV cache moved from a prefill node to a decode node, one-sided, in paged blocks over K QPs. */
#include "cq_qp_rts.h"
#include "exchange.h"
#include "kv_datapath.h"
#include "kv_grant.h"
#include "kv_options.h"
#include "kv_plan.h"
#include "kv_pool.h"
#include "kv_qps.h"
#include "kv_wire.h"
#include "open_pd.h"
#include "pause.h"
#include "post_wr.h"
#include "reg_mr.h"
#include "report.h"
#include "session.h"
#include "transfer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Each side draws its pool's order from its own seed, so a block sits at another index on each. */
#define PREFILL_SEED 0x08a11ce5u
#define DECODE_SEED 0x0bdecade
/* How many of a block table's entries its line shows. */
#define TABLE_SHOWN 32

/* --post ex's fault point: the doorbell of a chain written with the extended API. */
static const struct fault_point post_ex_faults[] = {
	{ "wr_complete", "ibv_wr_complete", ENOMEM },
	{ 0 },
};

static const char purpose[] =
	"Step 08: on top of steps 01-05, move a request's KV cache from the prefill node (the\n"
	"server: no HOST) to the decode node (the client), block by block, as disaggregated\n"
	"inference does.  Each side registers its paged pool once; the block tables cross the\n"
	"side channel; the blocks move by RDMA READ (--mode pull, the decoder pulls) or RDMA\n"
	"WRITE with immediate (--mode push, the prefiller pushes), in chains of WRs striped\n"
	"over --qps QPs, layer by layer; the decoder counts them in and checks every byte.\n"
	"Give both sides the same options.";

struct step_opts {
	struct kv_opts kv;
	struct reg_mr_opts mr;		/* the pool: stage 2's one buffer */
	struct conn_opts conn;
};

/* The pool is the stage 2 buffer: its size from the shape, its access from the role and mode. */
static void plan_pool(struct step_opts *step, bool decoder)
{
	bool pull = step->kv.mode == KV_PULL;
	/* With --windows the side the peer reaches binds windows to its pool, which the MR must allow. */
	int bind = step->kv.windows && decoder != pull ? IBV_ACCESS_MW_BIND : 0;

	step->mr.size = kv_pool_bytes(&step->kv);
	if (decoder)
		reg_mr_grant(&step->mr, IBV_ACCESS_LOCAL_WRITE | (pull ? 0 : IBV_ACCESS_REMOTE_WRITE) | bind,
			     pull ? "the decoder's pool: its own READs land here (local_write), and no "
				    "peer may reach it" :
				    "the decoder's pool: the prefiller WRITEs into it (remote_write "
				    "needs local_write)");
	else
		reg_mr_grant(&step->mr, (pull ? IBV_ACCESS_REMOTE_READ : 0) | bind,
			     pull ? "the prefiller's pool: the decoder READs it (remote_read), and "
				    "nothing writes it through the NIC" :
				    "the prefiller's pool: its own WRITEs leave from here, and no peer "
				    "may reach it");
}

/* Shows the model's arithmetic behind the shape: what one request's KV cache is. */
static void show_shape(const struct kv_opts *kv)
{
	show("KV cache", "%d layers x %d blocks x %zu bytes = %zu bytes a request (Llama 3.1 8B: "
	     "2 x 8 KV heads x 128 dims x 2 bytes = 4096 bytes a token a layer, 16 tokens a block)",
	     kv->layers, kv->blocks, kv->block_bytes, kv_request_bytes(kv));
	show("pool", "%d requests' worth of blocks, %zu bytes, registered once as one MR: one "
	     "registration, one rkey and few NIC translation entries, however many blocks move",
	     kv->pool, kv_pool_bytes(kv));
}

/* What check_limits reads: the options, this side's role, and the queues asked of stage 3. */
struct kv_plan {
	const struct kv_opts *kv;
	const struct ibv_qp_cap *cap;
	bool decoder;
};

/* Stage 3's hook calls it after stage 1, before anything else is created (kv_check_limits). */
static int check_limits(const struct rdma_dev *dev, const void *arg)
{
	const struct kv_plan *plan = arg;

	return kv_check_limits(dev, plan->kv, plan->cap, plan->decoder);
}

/*
 * In pull mode the decoder keeps many READs in flight: it offers as many as
 * this device lets both ends, as a power of two (rxe rounds the value up to
 * one, and 255 would become 256, which the 8-bit field cannot hold); the
 * peer's accept, in stage 3's exchange, may lower what is agreed.
 */
static int raise_rd_atomic(struct session *s, const struct kv_opts *kv)
{
	int most = s->dev.attr.max_qp_init_rd_atom < s->dev.attr.max_qp_rd_atom ?
		   s->dev.attr.max_qp_init_rd_atom : s->dev.attr.max_qp_rd_atom, n = 1;

	/* check_limits saw to it that a puller's device initiates one READ at least. */
	if (kv->mode != KV_PULL || most < 1)
		return 0;
	while (n * 2 <= most && n * 2 <= 128)
		n *= 2;
	if (conn_offer_rd_atomic(&s->dev, &s->conn, n))
		return -1;
	show("rd_atomic", "%d RDMA READs in flight on each QP, as the device allows (max_qp_init_rd_atom "
	     "%d as initiator, max_qp_rd_atom %d as responder); stage 3 keeps 1", s->conn.rd_atomic,
	     s->dev.attr.max_qp_init_rd_atom, s->dev.attr.max_qp_rd_atom);
	return 0;
}

/*
 * --windows: stage 3 would send the pool's rkey in its exchange; the peer
 * gets windows instead, so every QP's exchange carries none.  (The MR keeps
 * its remote access: stage 3 gives each QP the access of the buffer.)
 */
static void withhold_pool_rkey(struct kv_qps *q)
{
	for (int k = 0; k < q->n; k++)
		q->conn[k]->local.rkey = 0;
	show("rkey", "withheld: the exchange carries none, and each request's windows stand in "
	     "for the pool's rkey");
}

/*
 * With a compute time per layer: how long the last byte came after the
 * prefiller's compute ended.  With the overlap that is about one layer's
 * transfer; with --no-overlap, every layer's.
 */
/*
 * How long the last byte came after the compute ended.  Pulling, the decoder
 * sees the end in the prefiller's notices.  Pushed to, it cannot, and counts
 * the compute from the go-ahead.
 */
static void show_overlap(const struct kv_opts *kv, const struct kv_result *res)
{
	double compute = (double)kv->layers * kv->layer_ms;
	bool seen = res->after_compute_ms >= 0;

	show("overlap", "%s: %d layers x %d ms of compute = %.0f ms; the last byte came %.1f ms "
	     "after %s, where %s", kv->no_overlap ? "off (--no-overlap)" : "on", kv->layers,
	     kv->layer_ms, compute, seen ? res->after_compute_ms : res->ms - compute,
	     seen ? "it (as the prefiller's notices showed it)" : "it (counted from the go-ahead)", kv->no_overlap ?
	     "every layer's transfer is predicted (with the overlap: the last layer's alone)" :
	     "the last layer's transfer alone is predicted (without the overlap: every layer's)");
}

/* Says what one request's move measured, on this side. */
static void show_result(const struct kv_opts *kv, const struct kv_request *req,
			const struct kv_result *res, int qps, bool decoder)
{
	char per_qp[24 * KV_MAX_QPS] = "", *p = per_qp;
	bool passive = decoder != (kv->mode == KV_PULL);

	if (passive && !decoder) {
		show("request", "%d: %d layers computed and announced on the side channel in %.1f ms: "
		     "the decoder READ the %d blocks, and this side posted no WR", req->number,
		     kv->layers, res->ms, kv->layers * kv->blocks);
		return;
	}
	for (int k = 0; k < qps; k++)
		p += snprintf(p, sizeof(per_qp) - (size_t)(p - per_qp), "%s%llu", k ? " " : "",
			      (unsigned long long)res->counted.bytes_per_qp[k]);
	show("request", "%d: %d blocks in %d WRs (%d adjacent pairs merged), %zu bytes in %.1f ms, "
	     "%.3f GB/s", req->number, kv->layers * kv->blocks, req->n_seg,
	     kv->layers * kv->blocks - req->n_seg, kv_request_bytes(kv), res->ms,
	     res->ms > 0 ? (double)kv_request_bytes(kv) / res->ms / 1e6 : 0.0);
	show("bytes per QP", "%s", per_qp);
	/* The transfer alone: a bandwidth to set beside ib_read_bw's and ib_write_bw's. */
	if (res->posted_ms > 0)
		show("posted to done", "request %d: %.1f ms from this side's first post to its last "
		     "completion, %.1f MB/s (10^6 bytes a second)", req->number, res->posted_ms,
		     (double)kv_request_bytes(kv) / res->posted_ms / 1e3);
	if (!decoder)
		return;
	show("last-message rule", "the request's last block came (QP %d) with %d of %d blocks in%s",
	     res->counted.last_qp, res->counted.blocks_at_last, kv->layers * kv->blocks,
	     res->counted.blocks_at_last < kv->layers * kv->blocks ?
	     ": a decoder that took it as the end would have read an incomplete cache" : "");
	show("counting", "request %d handed over at %d of %d blocks: nothing orders one QP against "
	     "another, so the decoder counts", req->number, res->counted.blocks,
	     kv->layers * kv->blocks);
	if (kv->layer_ms)
		show_overlap(kv, res);
}

/* This side's block table: the pool blocks that hold the request, layer by layer. */
static void show_table(const struct block_table *t, int number)
{
	int n = t->layers * t->blocks, shown = n < TABLE_SHOWN ? n : TABLE_SHOWN;
	char list[8 * TABLE_SHOWN] = "", *p = list;

	for (int e = 0; e < shown; e++)
		p += snprintf(p, sizeof(list) - (size_t)(p - list), "%s%u", e ? " " : "", t->entry[e]);
	show("block table", "request %d: %d blocks, %d next to the one before in a layer; pool "
	     "blocks %s%s", number, n, kv_table_adjacent(t), list, n > shown ? " ..." : "");
}

/* The side the peer reaches grants this request's segments through windows; the other takes the rkeys. */
static int grant_request(struct session *s, struct kv_qps *q, struct kv_request *req,
			 const struct kv_opts *kv, bool granting, struct kv_grant *grant,
			 uint32_t **seg_rkey, int timeout_s)
{
	int access = kv->mode == KV_PULL ? IBV_ACCESS_REMOTE_READ :
		     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;

	if (granting)
		return kv_grant_bind(grant, q, req, access, timeout_s) ||
		       kv_grant_send(s->conn.sock, grant->rkey, grant->n, req->number, timeout_s) ? -1 : 0;
	*seg_rkey = calloc((size_t)req->n_seg, sizeof(**seg_rkey));
	if (!*seg_rkey) {
		report_error("no memory for %d window rkeys", req->n_seg);
		return -1;
	}
	if (kv_grant_recv(s->conn.sock, *seg_rkey, req->n_seg, req->number, timeout_s))
		return -1;
	req->seg_rkey = *seg_rkey;
	show("windows", "request %d: %d windows granted by the peer, one per segment, the first rkey "
	     "0x%x; the peer's pool rkey was never sent", req->number, req->n_seg, req->seg_rkey[0]);
	return 0;
}

/*
 * The lesson of --windows, after the last request: the granting side has
 * invalidated its windows; the other side tries one more WR with an old
 * rkey, which must fail, and both QPs end in ERR.
 */
static int show_revoked(struct session *s, struct kv_qps *q, const struct kv_request *req,
			const struct kv_opts *kv, bool granting, int timeout_s)
{
	enum ibv_qp_state state;
	int k = req->seg[0].qp;

	/* A WRITE with immediate needs a receive before its rkey is even looked at. */
	if (granting && kv_probe_receive(q, req, kv))
		return -1;
	if (exchange_sync(s->conn.sock, 'R', timeout_s) ||
	    (!granting && kv_probe_revoked(q, req, kv, timeout_s)) ||
	    exchange_sync(s->conn.sock, 'X', timeout_s))
		return -1;
	if (!granting)
		return 0;
	if (query_qp_state(q->conn[k], &state))
		return -1;
	show("revoked", "QP %d is in %s: the peer's %s with a revoked rkey was refused here", k,
	     qp_state_name(state), kv->mode == KV_PULL ? "RDMA READ" : "RDMA WRITE");
	return 0;
}

/*
 * --violate: the initiator's rkey is one the peer never handed out (rkey),
 * or the granting side takes its windows back before the go-ahead
 * (revoked).  Either way the first WR that names the peer's memory completes
 * with a remote access error, and both QPs go to ERR.  past_window: the
 * initiator's first WR reaches one block past its window (kv_plan.c).
 */
static int break_access(struct kv_qps *q, const struct kv_request *req, struct remote_table *peer,
			struct kv_grant *grant, const struct kv_opts *kv, bool initiator,
			bool granting, int timeout_s)
{
	if (kv->violate == KV_VIOLATE_RKEY && initiator) {
		show("--violate", "request %d: using rkey 0x%x, the peer's pool rkey 0x%x plus one, "
		     "which the peer never handed out", req->number, peer->rkey + 1, peer->rkey);
		peer->rkey++;
	}
	if (kv->violate == KV_VIOLATE_PAST_WINDOW && initiator)
		return kv_reach_past_window(req, peer, kv);
	if (kv->violate == KV_VIOLATE_REVOKED && granting) {
		show("--violate", "request %d: this side takes its %d windows back before the "
		     "go-ahead: the rkeys it granted name nothing now", req->number, req->n_seg);
		return kv_grant_revoke(grant, q, timeout_s);
	}
	return 0;
}

/* What the port's counters say while the requests moved, by which side's WRs land. */
static const struct counters_words pull_words = {
	.over = "while the requests moved (every process on this port adds to them)",
	.no_rnr = "no WR of ours consumes a receive (the decoder READs)",
	.rnr = "no WR of ours consumes a receive (another program on this port sent them)",
};
static const struct counters_words push_words = {
	.over = "while the requests moved (every process on this port adds to them)",
	.no_rnr = "every WRITE with immediate found its receive posted",
	.rnr = "a WRITE with immediate came before its receive (another program on this port, or a "
	       "receive posted too late)",
};

/* One request: tables out and in, its plan, the grant, the move, the check, and a barrier. */
static int move_request(struct session *s, struct kv_qps *q, struct kv_pool *pool,
			const struct kv_opts *kv, bool decoder, int number, int timeout_s)
{
	struct block_table mine;
	struct remote_table peer = { 0 };
	struct kv_request req = { .number = number, .pool = pool, .mine = &mine, .peer = &peer };
	struct kv_grant grant = { 0 };
	uint32_t *seg_rkey = NULL;
	bool initiator = decoder == (kv->mode == KV_PULL), granting = kv->windows && !initiator;
	struct kv_result res;
	int rc = -1;

	if (kv_pool_take(pool, kv, &mine))
		return -1;
	show_table(&mine, number);
	/* The pool's own rkey leaves this side only when no window stands in for it. */
	if (kv_exchange_tables(s->conn.sock, number, &mine, (uintptr_t)s->buf.addr,
			       access_is_remote(s->buf.access) && !kv->windows ? s->buf.mr->rkey : 0,
			       pool->n_blocks, &peer, timeout_s))
		goto out_free_table;
	if (kv_request_plan(&req, kv, q->n))
		goto out_free_peer;
	if (kv->windows && grant_request(s, q, &req, kv, granting, &grant, &seg_rkey, timeout_s))
		goto out_revoke;
	if (kv->violate && break_access(q, &req, &peer, &grant, kv, initiator, granting, timeout_s))
		goto out_revoke;
	/* The receives for the WRITEs with immediate go up before the go-ahead. */
	if ((decoder && kv_post_receives(q, &req, kv)) ||
	    exchange_sync(s->conn.sock, 'G', timeout_s) ||
	    kv_move(q, &req, kv, decoder, s->conn.sock, timeout_s, &res) ||
	    (kv->violate == KV_VIOLATE_PAST_WINDOW && initiator && kv_past_window_passed(&req, kv)) ||
	    exchange_sync(s->conn.sock, 'D', timeout_s))
		goto out_revoke;
	show_result(kv, &req, &res, q->n, decoder);
	if (decoder && kv_check(pool, &mine, number))
		goto out_revoke;
	rc = 0;
out_revoke:
	/* Windows go before anything else: a QP must not be destroyed with a window bound to it. */
	if (kv_grant_revoke(&grant, q, timeout_s))
		rc = -1;
	if (!rc && kv->windows && number == kv->requests - 1)
		rc = show_revoked(s, q, &req, kv, granting, timeout_s);
	free(seg_rkey);
	kv_request_free(&req);
out_free_peer:
	kv_table_free(&peer.table);
out_free_table:
	kv_table_free(&mine);
	return rc;
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    post_wr_faults, kv_grant_faults, post_ex_faults, NULL };

int main(int argc, char **argv)
{
	struct step_opts step = { 0 };
	const struct cli_stage stages[] = { KV_STAGE(&step.kv), CQ_QP_PATH_STAGE(&step.conn), { 0 } };
	const struct cli_spec spec = { .program = "08_kv_transfer", .purpose = purpose,
				       .connects = true, .pauses = true, .stages = stages,
				       .faults = faults };
	struct cli_common opts;
	struct conn_hook hook;
	struct kv_plan plan;
	struct session sess;
	struct kv_qps qps = { .n = 1 };
	struct kv_pool pool = { 0 };
	struct dev_counters before, after;
	bool decoder;
	int usage, status = EXIT_FAILURE, failures = 0;

	kv_opts_default(&step.kv);
	reg_mr_opts_default(&step.mr);
	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;
	if (kv_opts_check(&step.kv))
		return CLI_BAD_USAGE;
	decoder = opts.host != NULL;
	plan_pool(&step, decoder);
	hook = (struct conn_hook){ .cap = kv_queue_caps(&step.kv, decoder),
				   .send_ops_flags = kv_send_ops(&step.kv),
				   .check_limits = check_limits, .limits_arg = &plan };
	plan = (struct kv_plan){ .kv = &step.kv, .cap = &hook.cap, .decoder = decoder };
	step.conn.hook = &hook;

	show("role", "%s, %s mode", decoder ? "decoder (the client): its pool receives the cache" :
	     "prefiller (the server): its pool holds the cache it computes", kv_mode_name(step.kv.mode));
	show_shape(&step.kv);
	if (session_open(&sess, &opts, &step.mr, &step.conn))
		goto out_close_session;
	if (raise_rd_atomic(&sess, &step.kv))
		goto out_close_session;
	exchange_set_options(&sess.conn.local, "--mode %s --qps %d", kv_mode_name(step.kv.mode),
			     step.kv.qps);
	if (kv_qps_create(&qps, &sess, &step.conn, step.kv.qps) ||
	    kv_qps_show_caps(&qps, &hook.cap))
		goto out_destroy_qps;
	if (step.kv.windows)
		withhold_pool_rkey(&qps);
	if (connect_qp(&sess.dev, &opts, &sess.conn) ||
	    kv_exchange_shape(sess.conn.sock, &step.kv, opts.timeout_s) ||
	    kv_qps_connect(&qps, &sess, opts.timeout_s))
		goto out_destroy_qps;
	if (kv_pool_init(&pool, &sess.buf, &step.kv, decoder ? DECODE_SEED : PREFILL_SEED))
		goto out_destroy_qps;

	show_heading("stage 8: move each request's KV cache, layer by layer");
	dev_counters_read(sess.dev.ctx, sess.dev.port, NULL, &before);
	for (int r = 0; r < step.kv.requests; r++)
		if (move_request(&sess, &qps, &pool, &step.kv, decoder, r, opts.timeout_s))
			goto out_free_pool;
	dev_counters_read(sess.dev.ctx, sess.dev.port, &before, &after);
	dev_counters_show(sess.dev.ctx, sess.dev.port, &before, &after,
			  step.kv.mode == KV_PULL ? &pull_words : &push_words);
	if (decoder)
		show("check", "right: %d requests, every byte of every block at this side's own block "
		     "addresses is the prefiller's, layer by layer", step.kv.requests);
	if (opts.pause && pause_until_told("transfers done (see 'rdma resource show')"))
		goto out_free_pool;
	status = EXIT_SUCCESS;

	show_heading("teardown, in reverse order of creation");
out_free_pool:
	kv_pool_free(&pool);
out_destroy_qps:
	failures += kv_qps_destroy(&qps);
out_close_session:
	failures += session_close(&sess);
	show("teardown", "%s", failures ? "some releases failed (see above)" : "every object released");
	return failures ? EXIT_FAILURE : status;
}
