/* datapath.c: step 08's data path: a request's RDMA READs (pull) or WRITEs with immediate (push), one per segment, posted in chains on K QPs; the receives for push; the completions reaped and the blocks counted in; the windows bound and invalidated. */
#include "kv_datapath.h"
#include "kv_report.h"
#include "clock.h"
#include "completion.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"
#include "sock.h"
#include "stop.h"
#include "wait.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

/* Completions taken in one ibv_poll_cq call. */
#define POLL_BATCH 16
/* A wait that takes no completion for this long looks at the side channel for a peer gone. */
#define PEER_CHECK_MS 100
/* The wait for the prefiller's notice: how long each look at the side channel may sleep in poll(). */
#define NOTICE_SLICE_MS 1

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
	uint32_t imm;		/* push: the request and the segment (kv_imm) */
	bool signalled;		/* the chain's last */
};

/* One side's data path while one request moves: what it posted, what has come back, what is in flight. */
struct kv_mover {
	struct kv_qps *q;
	const struct kv_request *req;
	const struct kv_opts *opts;
	bool decoder, pull;
	int fd, timeout_s;
	struct kv_counts *counts;
	struct chain *chains;		/* one per chain posted: at most one per segment */
	int n_chains, chains_done;
	struct chain_wr *cw;		/* room for one chain of --chain WRs, */
	struct ibv_send_wr *wr;		/* and for its list, posted the classic way */
	int *segs;			/* the segments of the chain being built */
	int outstanding[KV_MAX_QPS];	/* WRs posted on each QP and not yet retired */
	int total_blocks;
};

struct kv_mover *kv_mover_open(struct kv_qps *q, const struct kv_request *req,
			       const struct kv_opts *opts, bool decoder, int fd, int timeout_s,
			       struct kv_counts *counts)
{
	struct kv_mover *m = calloc(1, sizeof(*m));

	*counts = (struct kv_counts){ .last_qp = -1 };
	if (m) {
		*m = (struct kv_mover){ .q = q, .req = req, .opts = opts, .decoder = decoder,
					.pull = opts->mode == KV_PULL, .fd = fd, .timeout_s = timeout_s,
					.counts = counts, .total_blocks = opts->layers * opts->blocks };
		m->chains = calloc((size_t)req->n_seg, sizeof(*m->chains));
		m->cw = calloc((size_t)opts->chain, sizeof(*m->cw));
		m->wr = calloc((size_t)opts->chain, sizeof(*m->wr));
		m->segs = calloc((size_t)opts->chain, sizeof(*m->segs));
	}
	if (!m || !m->chains || !m->cw || !m->wr || !m->segs) {
		report_error("no memory for request %d's %d chains", req->number, req->n_seg);
		kv_mover_close(m);
		return NULL;
	}
	return m;
}

void kv_mover_close(struct kv_mover *m)
{
	if (!m)
		return;
	free(m->segs);
	free(m->wr);
	free(m->cw);
	free(m->chains);
	free(m);
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

/* A segment's two ends: where it lies here, and in the peer's pool. */
static void segment_sge(const struct kv_mover *m, const struct segment *s, struct ibv_sge *sge,
			uint64_t *remote)
{
	const struct kv_request *r = m->req;
	size_t block = r->pool->block_bytes;

	*sge = (struct ibv_sge){ .addr = (uintptr_t)kv_block_addr(r->pool, r->mine, s->first),
				 .length = (uint32_t)(s->count * block),
				 .lkey = r->pool->buf->mr->lkey };
	*remote = r->peer->pool_addr + (uint64_t)r->peer->table.entry[s->first] * block;
}

/* WR I of the chain of segments SEGS[0..N), counted into chain C. */
static struct chain_wr plan_wr(const struct kv_mover *m, struct chain *c, const int *segs, int i,
			       int n)
{
	const struct segment *s = &m->req->seg[segs[i]];
	struct chain_wr w = {
		.rkey = m->req->seg_rkey ? m->req->seg_rkey[segs[i]] : m->req->peer->rkey,
		.imm = kv_imm(m->req->number, segs[i]),
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
static int post_chain_classic(struct kv_mover *m, int k, int n)
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
		kv_report_post_failed(k, rc, bad ? (int)(bad - wr) : -1, n, m->q->send_cap,
				      m->outstanding[k]);
		return -1;
	}
	return 0;
}

/*
 * The extended post API (--post ex): each WR is written straight into the
 * send queue, with no list to build; ibv_wr_complete rings the one doorbell.
 * The QP came from ibv_create_qp_ex, asked for this operation.
 */
static int post_chain_ex(struct kv_mover *m, int k, int n)
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
		/* No bad_wr here: ibv_wr_complete takes the whole batch or none of it. */
		kv_report_complete_failed(k, rc, n, m->q->send_cap, m->outstanding[k]);
		return -1;
	}
	return 0;
}

/* Posts segments SEGS[0..N) on QP K as one chain: one doorbell, the last WR signalled. 0 or -1. */
static int post_chain(struct kv_mover *m, int k, const int *segs, int n)
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
	     kv_op_words(m->pull, n), (unsigned long long)c->bytes,
	     (unsigned long long)m->cw[0].remote, m->cw[0].rkey);
	m->outstanding[k] += n;
	m->n_chains++;
	m->counts->wrs += n;
	return 0;
}

/* The decoder, in push mode: a WRITE with immediate has landed; its immediate names the segment. */
static int take_immediate(struct kv_mover *m, int k, const struct ibv_wc *wc)
{
	uint32_t imm = ntohl(wc->imm_data);
	int request = kv_imm_request(imm), seg = kv_imm_segment(imm);

	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || request != m->req->number || seg >= m->req->n_seg ||
	    m->req->seg[seg].qp != k) {
		report_error("QP %d: a WRITE with immediate 0x%08x that names no segment of request "
			     "%d on this QP: the two sides' plans differ", k, imm, m->req->number);
		return -1;
	}
	m->counts->blocks += m->req->seg[seg].count;
	m->counts->bytes_per_qp[k] += (uint64_t)m->req->seg[seg].count * m->req->pool->block_bytes;
	if (seg == m->req->n_seg - 1) {
		m->counts->blocks_at_last = m->counts->blocks;
		m->counts->last_qp = k;
	}
	return 0;
}

/* The initiator: a chain's signalled WR has completed, and with it every WR before it on its QP. */
static void retire_chain(struct kv_mover *m, int k, const struct ibv_wc *wc)
{
	struct chain *c = &m->chains[wc->wr_id];

	m->outstanding[k] -= c->wrs;
	m->chains_done++;
	m->counts->bytes_per_qp[k] += c->bytes;
	if (!m->pull)
		return;
	/* A READ's completion means its bytes are here: the decoder counts them in. */
	m->counts->blocks += c->blocks;
	if (c->has_last) {
		m->counts->blocks_at_last = m->counts->blocks;
		m->counts->last_qp = k;
	}
}

/* Takes what QP K's CQ holds now; the number taken, or -1. */
static int reap(struct kv_mover *m, int k)
{
	struct ibv_wc wc[POLL_BATCH];
	int n = ibv_poll_cq(m->q->conn[k]->cq, POLL_BATCH, wc);

	if (n < 0) {
		report_error("ibv_poll_cq failed (%d) on QP %d's CQ", n, k);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		/* In error, its opcode is undefined: the side and the mode say what it was. */
		if (wc[i].status != IBV_WC_SUCCESS)
			return kv_report_completion_failed(k, &wc[i], m->decoder && !m->pull, m->pull,
							   m->req->number);
		if (wc[i].opcode & IBV_WC_RECV) {
			if (take_immediate(m, k, &wc[i]))
				return -1;
		} else {
			retire_chain(m, k, &wc[i]);
		}
	}
	return n;
}

/* One look at every QP's CQ: the completions taken, or -1. */
static int reap_all(struct kv_mover *m)
{
	int got = 0;

	for (int k = 0; k < m->q->n; k++) {
		int n = reap(m, k);

		if (n < 0)
			return -1;
		got += n;
	}
	return got;
}

/* The peer closed the side channel: it has stopped, and this side says how far the request got. */
static int peer_gone(const struct kv_mover *m)
{
	return kv_report_peer_gone(m->decoder, m->req->number, m->counts->blocks, m->total_blocks,
				   m->chains_done, m->n_chains);
}

/* What a wait waits for. */
enum until {
	UNTIL_ROOM,	/* QP k's send queue can take n more WRs */
	UNTIL_NOTICE,	/* the side channel holds a byte: the prefiller's notice, or its close */
	UNTIL_ALL_IN,	/* every chain completed and, on the decoder, every block in */
};

/* Whether the wait for WHAT is over: 1, 0, or -1 after saying why. */
static int reached(const struct kv_mover *m, enum until what, int k, int n)
{
	struct timespec slice;
	int rc;

	switch (what) {
	case UNTIL_ROOM:
		/*
		 * A chain longer than the queue asked for goes as it is: the provider
		 * may have made the queue larger, and if not, ibv_post_send says so.
		 */
		return !m->outstanding[k] || m->outstanding[k] + n <= KV_SEND_DEPTH;
	case UNTIL_NOTICE:
		slice = deadline_in_ms(NOTICE_SLICE_MS);
		rc = wait_fd(m->fd, POLLIN, &slice, "side channel");
		if (rc == WAIT_STOPPED)
			return report_stopped();
		return rc < 0 ? -1 : rc == WAIT_READY;
	case UNTIL_ALL_IN:
		return m->chains_done >= m->n_chains &&
		       (!m->decoder || m->counts->blocks >= m->total_blocks);
	}
	return 0;
}

/*
 * The one wait of the data path: until WHAT, look at every CQ; after a look
 * that took nothing, look at Ctrl-C and at the clock: -t without a
 * completion is a stall, and every PEER_CHECK_MS without one the side
 * channel is looked at, which a peer that has stopped closes.  One clock
 * read a look, as a busy poll should.  0 or -1, said.
 *
 * Not the job runtime's progress loop (runtime/progress.c), which steps 07
 * and 09 wait in: that loop looks around at a launched job's control
 * channel (ctl_check on rank 0's connections) and gives the CPU away by a
 * rule decided from the ranks on the node.  Step 08 is no job: a prefiller
 * and a decoder started by hand as server and client, as steps 03 to 06
 * are, with no launcher, rendezvous or control channel, and no ranks to
 * count.  Its one peer is watched on the TCP side channel, which also
 * carries the pull's layer notices that this wait must take between looks
 * at the CQs.  And naming the runtime in the Makefile would link its
 * launchers, rendezvous, control channel and pair exchange into a program
 * that calls none of them.
 */
static int wait_until(struct kv_mover *m, enum until what, int k, int n)
{
	struct timespec progress;
	long quiet, peer_check = PEER_CHECK_MS;
	int rc;

	clock_start(&progress);
	while (!(rc = reached(m, what, k, n))) {
		rc = reap_all(m);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			clock_start(&progress);
			peer_check = PEER_CHECK_MS;
			continue;
		}
		if (stop_requested())
			return report_stopped();
		quiet = ms_since(&progress);
		if (quiet > m->timeout_s * 1000L)
			return kv_report_stalled(m->req->number, m->timeout_s, m->counts->blocks,
						 m->total_blocks);
		if (quiet > peer_check) {
			peer_check = quiet + PEER_CHECK_MS;
			if (sock_peer_closed(m->fd))
				return peer_gone(m);
		}
	}
	return rc < 0 ? -1 : 0;
}

int kv_post_layer(struct kv_mover *m, int layer, int k)
{
	int *segs = m->segs, n = 0;

	for (int i = 0; i < m->req->n_seg; i++) {
		if (m->req->seg[i].layer != layer || m->req->seg[i].qp != k)
			continue;
		segs[n++] = i;
		if (n == m->opts->chain) {
			if (wait_until(m, UNTIL_ROOM, k, n) || post_chain(m, k, segs, n))
				return -1;
			n = 0;
		}
	}
	if (n && (wait_until(m, UNTIL_ROOM, k, n) || post_chain(m, k, segs, n)))
		return -1;
	return 0;
}

int kv_wait_notice(struct kv_mover *m)
{
	if (wait_until(m, UNTIL_NOTICE, 0, 0))
		return -1;
	/* Readable with nothing to read: the prefiller is gone. */
	if (sock_peer_closed(m->fd))
		return peer_gone(m);
	return 0;
}

int kv_wait_all_in(struct kv_mover *m)
{
	return wait_until(m, UNTIL_ALL_IN, 0, 0);
}

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

int kv_bind_window(struct kv_qps *q, const struct kv_request *req, int seg, struct ibv_mw *mw,
		   int access, int timeout_s, uint32_t *rkey)
{
	const struct segment *s = &req->seg[seg];
	uint32_t next = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr = {
		.wr_id = (uint64_t)seg,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_mw = {
			.mw = mw,
			/* A type 2 window gets a new key at each bind: the old one's 8-bit tag, plus one. */
			.rkey = next,
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
	mw->rkey = next;
	*rkey = next;
	return 0;
}

int kv_invalidate_window(struct kv_qps *q, int k, uint64_t wr_id, uint32_t rkey, int timeout_s)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED, .invalidate_rkey = rkey }, *bad;
	int rc = fault_at("local_inv") ? errno : ibv_post_send(q->conn[k]->qp, &wr, &bad);

	if (rc) {
		report_verb_error("ibv_post_send (IBV_WR_LOCAL_INV)", rc);
		return -1;
	}
	return wait_local_op(q, k, "a window's invalidation", timeout_s);
}

int kv_probe_receive(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts)
{
	if (opts->mode != KV_PUSH)
		return 0;
	return post_receives(q->conn[req->seg[0].qp], req->pool->buf, 0, 1);
}

int kv_probe_revoked(struct kv_qps *q, const struct kv_request *req, const struct kv_opts *opts,
		     int timeout_s)
{
	struct kv_counts counts = { .last_qp = -1 };
	struct chain chain;
	struct chain_wr cw;
	struct ibv_send_wr wr;
	struct kv_mover m = { .q = q, .req = req, .opts = opts, .pull = opts->mode == KV_PULL,
			      .fd = -1, .timeout_s = timeout_s, .counts = &counts,
			      .chains = &chain, .cw = &cw, .wr = &wr };
	int first = 0, k = req->seg[0].qp, rc;
	struct ibv_wc wc;

	if (post_chain(&m, k, &first, 1))
		return -1;
	/* Stage 4's wait: any completion, whatever its status, or 1 at the timeout. */
	rc = wait_completion(q->conn[k], &wc, timeout_s * 1000);
	if (rc < 0)
		return -1;
	if (rc)
		return kv_report_probe_silent(k, timeout_s, m.pull);
	if (wc.status != IBV_WC_REM_ACCESS_ERR)
		return kv_report_probe_passed(k, m.pull, req->number, req->seg_rkey[0], wc.status);
	kv_show_probe_refused(m.pull, req->number, req->seg_rkey[0], wc.status);
	return 0;
}
