/* transfer.c: one request's KV cache moved: layer by layer, computed, announced or waited for, posted and counted in by the data path (datapath.c), and timed. */
#include "transfer.h"
#include "clock.h"
#include "report.h"
#include "sock.h"
#include "stop.h"

#include <unistd.h>

/* The prefiller's notice on the side channel, in pull mode: layer L is computed. */
#define LAYER_READY 'L'

/* One side's move of one request: its data path, what it waits for, and its clock. */
struct move {
	struct kv_mover *dp;		/* the data path: the posts, the completions, the counts */
	const struct kv_request *req;
	const struct kv_opts *opts;
	int qps;
	bool decoder, pull;
	int fd, timeout_s;
	int deferred[KV_MAX_LAYERS];	/* --delay-qp: the layers whose posts on that QP wait */
	int n_deferred;
	int announced;			/* the prefiller, pulled from: layers told ready */
	double start_us;
	double first_post_us;		/* the initiator: when its first chain went; 0 before */
	double compute_end_us;		/* the decoder pulling: when a notice showed the compute over; 0 before */
};

/* The prefiller's compute of one layer: a stand-in sleep, then the layer's bytes written. */
static void compute_layer(struct move *mv, int layer)
{
	if (mv->opts->layer_ms)
		usleep((useconds_t)mv->opts->layer_ms * 1000);
	kv_fill_layer(mv->req->pool, mv->req->mine, mv->req->number, layer);
}

/* The decoder, in pull mode: reaps while it waits for the prefiller's notice that LAYER is ready. */
static int wait_layer_ready(struct move *mv, int layer)
{
	char tag;

	if (kv_wait_notice(mv->dp) || sock_recv_all(mv->fd, &tag, 1, mv->timeout_s))
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
	if (layer == (mv->opts->no_overlap ? 0 : mv->opts->layers - 1))
		mv->compute_end_us = now_us();
	return 0;
}

/* --no-overlap: the prefiller computes every layer before the first moves. */
static void compute_all_first(struct move *mv)
{
	for (int l = 0; l < mv->opts->layers; l++)
		compute_layer(mv, l);
}

/* The initiator posts one layer on every QP, but the delayed QP's (--delay-qp) wait for the end. */
static int post_layer(struct move *mv, int layer)
{
	for (int k = 0; k < mv->qps; k++) {
		if (k == mv->opts->delay_qp) {
			mv->deferred[mv->n_deferred++] = layer;
			continue;
		}
		if (kv_post_layer(mv->dp, layer, k))
			return -1;
	}
	return 0;
}

/* --delay-qp: after the wait, the held-back QP's layers. */
static int post_deferred(struct move *mv)
{
	int rc = 0;

	if (!mv->n_deferred)
		return 0;
	show("--delay-qp", "QP %d's %d layer(s) held back %d ms, as a slow path would: the other "
	     "QPs' WRs, the request's last among them, go first", mv->opts->delay_qp, mv->n_deferred,
	     mv->opts->delay_ms);
	usleep((useconds_t)mv->opts->delay_ms * 1000);
	for (int i = 0; i < mv->n_deferred && !rc; i++) {
		show_quiet(i > 0);
		rc = kv_post_layer(mv->dp, mv->deferred[i], mv->opts->delay_qp);
	}
	show_quiet(false);
	return rc;
}

/* The initiator's side: each layer as it is ready, then the held-back QP, then every completion. */
static int initiate(struct move *mv)
{
	int rc = 0;

	if (!mv->pull && mv->opts->no_overlap)
		compute_all_first(mv);
	/* The first layer's posts are shown, the rest quietly; quiet ends however the loop does. */
	for (int l = 0; l < mv->opts->layers && !rc; l++) {
		if (mv->pull && wait_layer_ready(mv, l)) {
			rc = -1;
			break;
		}
		if (!mv->pull && !mv->opts->no_overlap)
			compute_layer(mv, l);
		if (!mv->first_post_us)
			mv->first_post_us = now_us();
		rc = post_layer(mv, l);
		show_quiet(true);
	}
	show_quiet(false);
	if (rc || post_deferred(mv))
		return -1;
	return kv_wait_all_in(mv->dp);
}

/*
 * The prefiller, in pull mode: tells the decoder that LAYER is ready.  A
 * decoder that has stopped may have closed the channel with notices unread,
 * which resets it: that is the peer gone, not a failure of the channel.
 */
static int announce_layer(struct move *mv, int layer)
{
	struct timespec deadline = deadline_in(mv->timeout_s);
	char tag = LAYER_READY;
	int rc = sock_peer_closed(mv->fd) ? SOCK_CLOSED : sock_send_quiet(mv->fd, &tag, 1, &deadline);

	if (rc == 0)
		mv->announced++;
	if (rc == SOCK_CLOSED)
		report_error("request %d: the decoder closed the side channel with %d of %d layers "
			     "announced: it has stopped (killed, or it failed: see its output)",
			     mv->req->number, mv->announced, mv->opts->layers);
	else if (rc == SOCK_TIMEOUT)
		report_error("the decoder did not take layer %d's notice within %d s", layer,
			     mv->timeout_s);
	else if (rc == SOCK_STOPPED)
		report_stopped();
	return rc ? -1 : 0;
}

/* The passive side: the prefiller in pull mode computes and tells; the decoder in push mode counts. */
static int stand_by(struct move *mv)
{
	if (mv->decoder)
		return kv_wait_all_in(mv->dp);
	if (mv->opts->no_overlap)
		compute_all_first(mv);
	for (int l = 0; l < mv->opts->layers; l++) {
		if (!mv->opts->no_overlap)
			compute_layer(mv, l);
		if (announce_layer(mv, l))
			return -1;
	}
	return 0;
}

int kv_move(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
	    bool decoder, int fd, int timeout_s, struct kv_result *res)
{
	struct move mv = { .req = req, .opts = opts, .qps = q->n, .decoder = decoder,
			   .pull = opts->mode == KV_PULL, .fd = fd, .timeout_s = timeout_s };
	bool initiator = decoder == mv.pull;
	int rc;

	*res = (struct kv_result){ 0 };
	mv.dp = kv_mover_open(q, req, opts, decoder, fd, timeout_s, &res->counted);
	if (!mv.dp)
		return -1;
	mv.start_us = now_us();
	rc = initiator ? initiate(&mv) : stand_by(&mv);
	res->ms = (now_us() - mv.start_us) / 1000.0;
	if (mv.first_post_us)
		res->posted_ms = (now_us() - mv.first_post_us) / 1000.0;
	res->after_compute_ms = mv.compute_end_us ? (now_us() - mv.compute_end_us) / 1000.0 : -1;
	kv_mover_close(mv.dp);
	return rc;
}
