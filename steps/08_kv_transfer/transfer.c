/* transfer.c: one request's KV cache moved: the plan, then layer by layer, computed, posted (kv_chains.c) and counted in (kv_arrivals.c). */
#include "transfer.h"
#include "kv_mover.h"
#include "clock.h"
#include "completion.h"
#include "report.h"
#include "sock.h"
#include "stop.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

/* The prefiller's notice on the side channel, in pull mode: layer L is computed. */
#define LAYER_READY 'L'

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

/* The prefiller's compute of one layer: a stand-in sleep, then the layer's bytes written. */
static void compute_layer(struct mover *m, int layer)
{
	if (m->opts->layer_ms)
		usleep((useconds_t)m->opts->layer_ms * 1000);
	kv_fill_layer(m->req->pool, m->req->mine, m->req->number, layer);
}

/* The decoder, in pull mode: reaps while it waits for the prefiller's notice that LAYER is ready. */
static int wait_layer_ready(struct mover *m, int layer)
{
	struct timespec progress;
	struct pollfd pfd = { .fd = m->fd, .events = POLLIN };
	char tag;

	clock_start(&progress);
	for (;;) {
		int rc = poll(&pfd, 1, 1);

		if (rc < 0 && errno != EINTR) {
			report_verb_error("poll (side channel)", errno);
			return -1;
		}
		if (rc > 0)
			break;
		if (kv_reap_all(m, &progress))
			return -1;
	}
	/* Readable with nothing to read: the prefiller is gone. */
	if (sock_peer_closed(m->fd))
		return kv_report_peer_gone(m);
	if (sock_recv_all(m->fd, &tag, 1, m->timeout_s))
		return -1;
	if (tag != LAYER_READY) {
		report_error("out of step with the prefiller: expected its notice for layer %d, got "
			     "byte 0x%02x", layer, (unsigned char)tag);
		return -1;
	}
	/*
	 * The end of the compute, on this side's own clock: the last layer's
	 * notice, or with --no-overlap the first, which comes once every layer
	 * is computed (the later ones come with it, while this side posts).
	 */
	if (layer == (m->opts->no_overlap ? 0 : m->opts->layers - 1))
		m->compute_end_us = now_us();
	return 0;
}

/* --no-overlap: the prefiller computes every layer before the first moves. */
static void compute_all_first(struct mover *m)
{
	for (int l = 0; l < m->opts->layers; l++)
		compute_layer(m, l);
}

/* The initiator's side: each layer as it is ready, then the held-back QP, then every completion. */
static int initiate(struct mover *m)
{
	int rc = 0;

	if (!m->pull && m->opts->no_overlap)
		compute_all_first(m);
	/* The first layer's posts are shown, the rest quietly; quiet ends however the loop does. */
	for (int l = 0; l < m->opts->layers && !rc; l++) {
		if (m->pull && wait_layer_ready(m, l)) {
			rc = -1;
			break;
		}
		if (!m->pull && !m->opts->no_overlap)
			compute_layer(m, l);
		if (!m->first_post_us)
			m->first_post_us = now_us();
		rc = kv_post_layer(m, l);
		show_quiet(true);
	}
	show_quiet(false);
	if (rc || kv_post_deferred(m))
		return -1;
	return kv_wait_all_in(m);
}

/*
 * The prefiller, in pull mode: tells the decoder that LAYER is ready.  A
 * decoder that has stopped may have closed the channel with notices unread,
 * which resets it: that is the peer gone, not a failure of the channel.
 */
static int announce_layer(struct mover *m, int layer)
{
	struct timespec deadline = deadline_in(m->timeout_s);
	char tag = LAYER_READY;
	int rc = sock_peer_closed(m->fd) ? SOCK_CLOSED : sock_send_quiet(m->fd, &tag, 1, &deadline);

	if (rc == 0)
		m->announced++;
	if (rc == SOCK_CLOSED)
		return kv_report_peer_gone(m);
	if (rc == SOCK_TIMEOUT)
		report_error("the decoder did not take layer %d's notice within %d s", layer,
			     m->timeout_s);
	else if (rc == SOCK_STOPPED)
		report_stopped();
	return rc ? -1 : 0;
}

/* The passive side: the prefiller in pull mode computes and tells; the decoder in push mode counts. */
static int stand_by(struct mover *m)
{
	if (m->decoder)
		return kv_wait_all_in(m);
	if (m->opts->no_overlap)
		compute_all_first(m);
	for (int l = 0; l < m->opts->layers; l++) {
		if (!m->opts->no_overlap)
			compute_layer(m, l);
		if (announce_layer(m, l))
			return -1;
	}
	return 0;
}

int kv_move(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
	    bool decoder, int fd, int timeout_s, struct kv_result *res)
{
	struct mover m = {
		.q = q, .req = req, .opts = opts, .decoder = decoder,
		.pull = opts->mode == KV_PULL, .fd = fd, .timeout_s = timeout_s, .res = res,
		.total_blocks = opts->layers * opts->blocks,
	};
	bool initiator = decoder == m.pull;
	int rc = -1;

	*res = (struct kv_result){ .last_qp = -1 };
	m.chains = calloc((size_t)req->n_seg, sizeof(*m.chains));
	m.deferred = calloc((size_t)opts->layers, sizeof(*m.deferred));
	m.cw = calloc((size_t)opts->chain, sizeof(*m.cw));
	m.wr = calloc((size_t)opts->chain, sizeof(*m.wr));
	m.segs = calloc((size_t)opts->chain, sizeof(*m.segs));
	if (!m.chains || !m.deferred || !m.cw || !m.wr || !m.segs) {
		report_error("no memory for request %d's %d chains", req->number, req->n_seg);
		goto out_free;
	}
	m.start_us = now_us();
	rc = initiator ? initiate(&m) : stand_by(&m);
	res->ms = (now_us() - m.start_us) / 1000.0;
	if (m.first_post_us)
		res->posted_ms = (now_us() - m.first_post_us) / 1000.0;
	res->after_compute_ms = m.compute_end_us ? (now_us() - m.compute_end_us) / 1000.0 : -1;
	res->blocks = m.blocks_in;
	for (int k = 0; k < q->n; k++)
		res->bytes += res->bytes_per_qp[k];
out_free:
	free(m.segs);
	free(m.wr);
	free(m.cw);
	free(m.deferred);
	free(m.chains);
	return rc;
}

int kv_probe_revoked(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
		     int timeout_s)
{
	struct kv_result res;
	struct mover m = { .q = q, .req = req, .opts = opts, .pull = opts->mode == KV_PULL,
			   .timeout_s = timeout_s, .res = &res };
	struct chain chain;
	int first = 0, k = req->seg[0].qp, rc;
	struct chain_wr cw;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	m.chains = &chain;
	m.cw = &cw;
	m.wr = &wr;
	if (kv_post_chain(&m, k, &first, 1))
		return -1;
	/* Stage 4's wait: any completion, whatever its status, or 1 at the timeout. */
	rc = wait_completion(q->conn[k], &wc, timeout_s * 1000);
	if (rc < 0)
		return -1;
	if (rc) {
		report_error("QP %d: no completion within %d s for the %s with a revoked rkey",
			     k, timeout_s, kv_op_words(m.pull, 1));
		return -1;
	}
	if (wc.status != IBV_WC_REM_ACCESS_ERR) {
		report_error("QP %d: the %s with request %d's revoked window rkey 0x%x completed with "
			     "status %s: the access was not taken back", k, kv_op_words(m.pull, 1),
			     req->number, req->seg_rkey[0], ibv_wc_status_str(wc.status));
		return -1;
	}
	show("revoked", "the %s with request %d's window rkey 0x%x, after the peer invalidated it, "
	     "completed with status %s (%d), as it must: a leaked rkey opens nothing once its "
	     "window is invalidated, and the error has moved both QPs to ERR", kv_op_words(m.pull, 1),
	     req->number, req->seg_rkey[0], ibv_wc_status_str(wc.status), wc.status);
	return 0;
}
