/* transfer.c: one request's KV cache moved, layer by layer, in chains of one-sided WRs striped over K QPs, and counted in. */
#include "transfer.h"
#include "clock.h"
#include "completion.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"
#include "sock.h"
#include "stop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The prefiller's notice on the side channel, in pull mode: layer L is computed. */
#define LAYER_READY 'L'
/* How often a wait looks at the side channel for a peer that is gone. */
#define PEER_CHECK_MS 100

/* One posted chain: its last WR is signalled, and its completion retires them all. */
struct chain {
	int qp, wrs, blocks;
	uint64_t bytes;
	bool has_last;		/* holds the request's last segment */
};

/* One WR of a chain, whichever API posts it: its two ends, its rkey, its immediate. */
struct chain_wr {
	struct ibv_sge sge;	/* here: one SGE, the segment's blocks */
	uint64_t remote;	/* there, in the peer's pool */
	uint32_t rkey;		/* the peer's pool rkey, or with --windows the segment's window's */
	uint32_t imm;		/* push: the request and the segment, 16 bits each */
	bool signalled;		/* the chain's last */
};

/* One side's state while a request moves. */
struct mover {
	struct kv_qps *q;
	const struct kv_request *req;
	const struct kv_opts *opts;
	bool decoder, pull;
	int fd, timeout_s;
	struct kv_result *res;
	struct chain *chains;
	int n_chains, chains_done;
	struct chain_wr *cw;		/* room for one chain of --chain WRs, */
	struct ibv_send_wr *wr;		/* and for its list, posted the classic way */
	int outstanding[KV_MAX_QPS];	/* WRs posted on each QP and not yet retired */
	int *segs;			/* the segments of the chain being built */
	int *deferred;			/* --delay-qp: that QP's segments, posted last */
	int n_deferred;
	int blocks_in, total_blocks;
	double start_us;
	double first_post_us;		/* the initiator: when its first chain went; 0 before */
	int announced;			/* the prefiller, pulled from: layers told ready */
	double compute_end_us;		/* the decoder pulling: when a notice showed the compute over; 0 before */
};

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

static uint32_t imm_of(int request, int seg)
{
	return (uint32_t)request << 16 | (uint32_t)seg;
}

int kv_post_receives(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts)
{
	int per_qp[KV_MAX_QPS] = { 0 }, rc = 0;

	if (opts->mode != KV_PUSH)
		return 0;
	for (int i = 0; i < req->n_seg; i++)
		per_qp[req->seg[i].qp]++;
	/* The first QP's receives are shown; the rest post quietly (and quiet ends on any return). */
	for (int k = 0; k < q->n && !rc; k++) {
		/* A WRITE with immediate puts no bytes in the receive: a 0-byte one takes it. */
		for (int left = per_qp[k]; left > 0 && !rc; left -= QUEUE_DEPTH)
			rc = post_receives(q->conn[k], req->pool->buf, 0,
					   left < QUEUE_DEPTH ? left : QUEUE_DEPTH);
		show_quiet(true);
	}
	show_quiet(false);
	return rc;
}

/* The operation's name, for one WR or for N. */
static const char *op_words(bool pull, int n)
{
	if (pull)
		return n == 1 ? "RDMA READ" : "RDMA READs";
	return n == 1 ? "RDMA WRITE with immediate" : "RDMA WRITEs with immediate";
}

/* A segment's two ends: where it lies here, and in the peer's pool. */
static void segment_sge(const struct mover *m, const struct segment *s, struct ibv_sge *sge,
			uint64_t *remote)
{
	const struct kv_request *r = m->req;
	size_t block = r->pool->block_bytes;

	*sge = (struct ibv_sge){ .addr = (uintptr_t)kv_block_addr(r->pool, r->mine, s->first),
				 .length = (uint32_t)(s->count * block),
				 .lkey = r->pool->buf->mr->lkey };
	*remote = r->peer->pool_addr + (uint64_t)r->peer->table.entry[s->first] * block;
}

/* Says which WR ibv_post_send refused, and why a full send queue is the usual cause. */
static void report_post_failed(const struct mover *m, int k, int rc, const struct ibv_send_wr *wr,
			       const struct ibv_send_wr *bad, int n)
{
	/* An injected fault (RDMA_STEPS_FAIL_AT) leaves bad_wr unset: nothing to point at. */
	if (rc != ENOMEM || !bad) {
		report_verb_error("ibv_post_send", rc);
		return;
	}
	report_error("ibv_post_send failed: %s (errno %d): QP %d refused WR %d of a chain of %d "
		     "(bad_wr), the WRs before it posted: its send queue holds %u WRs (%d asked), and "
		     "%d were in flight: give --chain at most what the queue holds less what is in "
		     "flight, and signal often enough to retire them", strerror(rc), rc, k,
		     (int)(bad - wr), n, m->q->send_cap, KV_SEND_DEPTH, m->outstanding[k]);
}

/* The extended API has no bad_wr: ibv_wr_complete takes the whole batch or none of it. */
static void report_complete_failed(const struct mover *m, int k, int rc, int n)
{
	report_error("ibv_wr_complete failed: %s (errno %d): QP %d refused the whole chain of %d, "
		     "none of it posted (the extended API reports no bad_wr); the usual cause is a "
		     "full send queue: it holds %u WRs (%d asked), and %d were in flight: give --chain "
		     "at most what the queue holds less what is in flight", strerror(rc), rc, k, n,
		     m->q->send_cap, KV_SEND_DEPTH, m->outstanding[k]);
}

/* WR I of the chain of segments SEGS[0..N), counted into chain C. */
static struct chain_wr plan_wr(const struct mover *m, struct chain *c, const int *segs, int i,
			       int n)
{
	const struct segment *s = &m->req->seg[segs[i]];
	struct chain_wr w = {
		.rkey = m->req->seg_rkey ? m->req->seg_rkey[segs[i]] : m->req->peer->rkey,
		.imm = imm_of(m->req->number, segs[i]),
		/* Selective signalling: one completion for the chain, since a QP completes in order. */
		.signalled = i + 1 == n,
	};

	segment_sge(m, s, &w.sge, &w.remote);
	c->blocks += s->count;
	c->bytes += w.sge.length;
	c->has_last |= segs[i] == m->req->n_seg - 1;
	return w;
}

/* The classic post: the chain as a list of WRs linked by next, one ibv_post_send. */
static int post_chain_classic(struct mover *m, int k, int n)
{
	struct ibv_send_wr *wr = m->wr, *bad = NULL;
	int rc;

	for (int i = 0; i < n; i++)
		wr[i] = (struct ibv_send_wr){
			.wr_id = (uint64_t)m->n_chains,
			.next = i + 1 < n ? &wr[i + 1] : NULL,
			.sg_list = &m->cw[i].sge,
			.num_sge = 1,
			.opcode = m->pull ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = m->cw[i].signalled ? IBV_SEND_SIGNALED : 0,
			.imm_data = m->pull ? 0 : htonl(m->cw[i].imm),
			.wr.rdma = { .remote_addr = m->cw[i].remote, .rkey = m->cw[i].rkey },
		};
	rc = fault_at("post_send") ? errno : ibv_post_send(m->q->conn[k]->qp, wr, &bad);
	if (rc) {
		report_post_failed(m, k, rc, wr, bad, n);
		return -1;
	}
	return 0;
}

/* The injected failure of ibv_wr_complete: the batch is dropped, as a refused one is. */
static int abort_batch(struct ibv_qp_ex *qpx)
{
	int err = errno;

	ibv_wr_abort(qpx);
	return err;
}

/*
 * The extended post API (--post ex): each WR is written straight into the
 * send queue, with no list to build; ibv_wr_complete rings the one doorbell.
 * The QP came from ibv_create_qp_ex, asked for this operation.
 */
static int post_chain_ex(struct mover *m, int k, int n)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(m->q->conn[k]->qp);
	int rc;

	ibv_wr_start(qpx);
	for (int i = 0; i < n; i++) {
		const struct chain_wr *w = &m->cw[i];

		qpx->wr_id = (uint64_t)m->n_chains;
		qpx->wr_flags = w->signalled ? IBV_SEND_SIGNALED : 0;
		if (m->pull)
			ibv_wr_rdma_read(qpx, w->rkey, w->remote);
		else
			ibv_wr_rdma_write_imm(qpx, w->rkey, w->remote, htonl(w->imm));
		/*
		 * One SGE, not ibv_wr_set_sge_list: rdma-core 44's rxe adds up the
		 * first SGE's length once per SGE, so a WR of several SGEs moves the
		 * wrong count of bytes or fails with a local protection error.
		 */
		ibv_wr_set_sge(qpx, w->sge.lkey, w->sge.addr, w->sge.length);
	}
	rc = fault_at("wr_complete") ? abort_batch(qpx) : ibv_wr_complete(qpx);
	if (rc) {
		report_complete_failed(m, k, rc, n);
		return -1;
	}
	return 0;
}

/* Posts segments SEGS[0..N) on QP K as one chain: one doorbell, the last WR signalled. */
static int post_chain(struct mover *m, int k, const int *segs, int n)
{
	struct chain *c = &m->chains[m->n_chains];
	bool ex = m->opts->post == KV_POST_EX;

	*c = (struct chain){ .qp = k, .wrs = n };
	for (int i = 0; i < n; i++)
		m->cw[i] = plan_wr(m, c, segs, i, n);
	if (ex ? post_chain_ex(m, k, n) : post_chain_classic(m, k, n))
		return -1;
	show(ex ? "ibv_wr_complete" : "ibv_post_send", "QP %d: a chain of %d %s, one doorbell, the "
	     "last signalled: %llu bytes, first to remote addr 0x%llx, rkey 0x%x", k, n,
	     op_words(m->pull, n), (unsigned long long)c->bytes,
	     (unsigned long long)m->cw[0].remote, m->cw[0].rkey);
	m->outstanding[k] += n;
	m->n_chains++;
	m->res->wrs += n;
	return 0;
}

/*
 * A completion in error: which QP, which request, and the status that says
 * why.  Its opcode is not defined; the side and the mode say what it was: the
 * decoder in push mode posts only receives, every other side only its WRs.
 */
static int completion_failed(const struct mover *m, int k, const struct ibv_wc *wc)
{
	bool receive = m->decoder && !m->pull;
	const char *why = "";

	if (wc->status == IBV_WC_REM_ACCESS_ERR)
		why = ": the peer refused the address or rkey (see its block table)";
	else if (receive && wc->status == IBV_WC_WR_FLUSH_ERR)
		why = ": this QP went to ERR before a WRITE with immediate took it (the prefiller's "
		      "WRITE was refused here, or its QP failed: see its output)";
	report_error("QP %d: %s of request %d completed with status %s (%d), vendor error 0x%x%s",
		     k, receive ? "a receive" : op_words(m->pull, 1), m->req->number,
		     ibv_wc_status_str(wc->status), wc->status, wc->vendor_err, why);
	return -1;
}

/* The decoder, in push mode: a WRITE with immediate has landed; its immediate names the segment. */
static int take_immediate(struct mover *m, int k, const struct ibv_wc *wc)
{
	uint32_t imm = ntohl(wc->imm_data);
	int request = (int)(imm >> 16), seg = (int)(imm & 0xffff);

	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || request != m->req->number || seg >= m->req->n_seg ||
	    m->req->seg[seg].qp != k) {
		report_error("QP %d: a WRITE with immediate 0x%08x that names no segment of request "
			     "%d on this QP: the two sides' plans differ", k, imm, m->req->number);
		return -1;
	}
	m->blocks_in += m->req->seg[seg].count;
	m->res->bytes_per_qp[k] += (uint64_t)m->req->seg[seg].count * m->req->pool->block_bytes;
	if (seg == m->req->n_seg - 1) {
		m->res->blocks_at_last = m->blocks_in;
		m->res->last_qp = k;
	}
	return 0;
}

/* The initiator: a chain's signalled WR has completed, and with it every WR before it on its QP. */
static void retire_chain(struct mover *m, int k, const struct ibv_wc *wc)
{
	struct chain *c = &m->chains[wc->wr_id];

	m->outstanding[k] -= c->wrs;
	m->chains_done++;
	m->res->bytes_per_qp[k] += c->bytes;
	if (!m->pull)
		return;
	/* A READ's completion means its bytes are here: the decoder counts them in. */
	m->blocks_in += c->blocks;
	if (c->has_last) {
		m->res->blocks_at_last = m->blocks_in;
		m->res->last_qp = k;
	}
}

/* Takes what QP K's CQ holds now; the number taken, or -1. */
static int reap(struct mover *m, int k)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(m->q->conn[k]->cq, 16, wc);

	if (n < 0) {
		report_error("ibv_poll_cq failed (%d) on QP %d's CQ", n, k);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return completion_failed(m, k, &wc[i]);
		if (wc[i].opcode & IBV_WC_RECV) {
			if (take_immediate(m, k, &wc[i]))
				return -1;
		} else {
			retire_chain(m, k, &wc[i]);
		}
	}
	return n;
}

/* One look at every CQ, then at the clock and the side channel; -1 on a failure or a stall. */
static int reap_all(struct mover *m, struct timespec *progress)
{
	int got = 0;

	for (int k = 0; k < m->q->n; k++) {
		int n = reap(m, k);

		if (n < 0)
			return -1;
		got += n;
	}
	if (got) {
		clock_start(progress);
		return 0;
	}
	if (stop_requested())
		return report_stopped();
	if (ms_since(progress) > m->timeout_s * 1000L) {
		report_error("request %d: nothing completed for %d s (-t), %d of %d blocks in: is the "
			     "peer alive?", m->req->number, m->timeout_s, m->blocks_in, m->total_blocks);
		return -1;
	}
	return 0;
}

/*
 * Waits, reaping, until QP K can take N more WRs.  A chain longer than the
 * queue asked for goes as it is: the provider may have made the queue larger,
 * and if not, ibv_post_send says so.
 */
static int wait_for_room(struct mover *m, int k, int n)
{
	struct timespec progress;

	clock_start(&progress);
	while (m->outstanding[k] && m->outstanding[k] + n > KV_SEND_DEPTH)
		if (reap_all(m, &progress))
			return -1;
	return 0;
}

/* Posts the segments of LAYER that go by QP K, in chains of at most --chain WRs. */
static int post_layer_on(struct mover *m, int layer, int k)
{
	int *segs = m->segs, n = 0;

	for (int i = 0; i < m->req->n_seg; i++) {
		if (m->req->seg[i].layer != layer || m->req->seg[i].qp != k)
			continue;
		segs[n++] = i;
		if (n == m->opts->chain) {
			if (wait_for_room(m, k, n) || post_chain(m, k, segs, n))
				return -1;
			n = 0;
		}
	}
	if (n && (wait_for_room(m, k, n) || post_chain(m, k, segs, n)))
		return -1;
	return 0;
}

/* The initiator posts one layer on every QP, but the delayed QP's (--delay-qp) wait for the end. */
static int post_layer(struct mover *m, int layer)
{
	for (int k = 0; k < m->q->n; k++) {
		if (k == m->opts->delay_qp) {
			m->deferred[m->n_deferred++] = layer;
			continue;
		}
		if (post_layer_on(m, layer, k))
			return -1;
	}
	return 0;
}

static int post_deferred(struct mover *m)
{
	int rc = 0;

	if (!m->n_deferred)
		return 0;
	show("--delay-qp", "QP %d's %d layer(s) held back %d ms, as a slow path would: the other "
	     "QPs' WRs, the request's last among them, go first", m->opts->delay_qp, m->n_deferred,
	     m->opts->delay_ms);
	usleep((useconds_t)m->opts->delay_ms * 1000);
	for (int i = 0; i < m->n_deferred && !rc; i++) {
		show_quiet(i > 0);
		rc = post_layer_on(m, m->deferred[i], m->opts->delay_qp);
	}
	show_quiet(false);
	return rc;
}

/* The prefiller's compute of one layer: a stand-in sleep, then the layer's bytes written. */
static void compute_layer(struct mover *m, int layer)
{
	if (m->opts->layer_ms)
		usleep((useconds_t)m->opts->layer_ms * 1000);
	kv_fill_layer(m->req->pool, m->req->mine, m->req->number, layer);
}

/* The peer closed the side channel: it has stopped, and this side says how far the request got. */
static int report_peer_gone(const struct mover *m)
{
	if (m->decoder)
		report_error("request %d: the prefiller closed the side channel with %d of %d blocks "
			     "in: it has stopped (killed, or it failed: see its output)", m->req->number,
			     m->blocks_in, m->total_blocks);
	else if (m->pull)
		report_error("request %d: the decoder closed the side channel with %d of %d layers "
			     "announced: it has stopped (killed, or it failed: see its output)",
			     m->req->number, m->announced, m->opts->layers);
	else
		report_error("request %d: the decoder closed the side channel with %d of %d chains "
			     "completed: it has stopped (killed, or it failed: see its output)",
			     m->req->number, m->chains_done, m->n_chains);
	return -1;
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
		if (reap_all(m, &progress))
			return -1;
	}
	/* Readable with nothing to read: the prefiller is gone. */
	if (sock_peer_closed(m->fd))
		return report_peer_gone(m);
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

/* Waits until every chain has completed and, on the decoder, every block has come. */
static int wait_all_in(struct mover *m)
{
	struct timespec progress, peer_check;

	clock_start(&progress);
	clock_start(&peer_check);
	while (m->chains_done < m->n_chains || (m->decoder && m->blocks_in < m->total_blocks)) {
		if (reap_all(m, &progress))
			return -1;
		if (ms_since(&peer_check) > PEER_CHECK_MS) {
			clock_start(&peer_check);
			if (sock_peer_closed(m->fd))
				return report_peer_gone(m);
		}
	}
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
		rc = post_layer(m, l);
		show_quiet(true);
	}
	show_quiet(false);
	if (rc || post_deferred(m))
		return -1;
	return wait_all_in(m);
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
		return report_peer_gone(m);
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
		return wait_all_in(m);
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
	if (post_chain(&m, k, &first, 1))
		return -1;
	/* Stage 4's wait: any completion, whatever its status, or 1 at the timeout. */
	rc = wait_completion(q->conn[k], &wc, timeout_s * 1000);
	if (rc < 0)
		return -1;
	if (rc) {
		report_error("QP %d: no completion within %d s for the %s with a revoked rkey",
			     k, timeout_s, op_words(m.pull, 1));
		return -1;
	}
	if (wc.status != IBV_WC_REM_ACCESS_ERR) {
		report_error("QP %d: the %s with request %d's revoked window rkey 0x%x completed with "
			     "status %s: the access was not taken back", k, op_words(m.pull, 1),
			     req->number, req->seg_rkey[0], ibv_wc_status_str(wc.status));
		return -1;
	}
	show("revoked", "the %s with request %d's window rkey 0x%x, after the peer invalidated it, "
	     "completed with status %s (%d), as it must: a leaked rkey opens nothing once its "
	     "window is invalidated, and the error has moved both QPs to ERR", op_words(m.pull, 1),
	     req->number, req->seg_rkey[0], ibv_wc_status_str(wc.status), wc.status);
	return 0;
}
