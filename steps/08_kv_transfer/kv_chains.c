/* kv_chains.c: a request's WRs, built one per segment and posted in chains, one doorbell each, with ibv_post_send or the extended API. */
#include "kv_mover.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <unistd.h>

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
int kv_post_chain(struct mover *m, int k, const int *segs, int n)
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
	m->res->wrs += n;
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
			if (kv_wait_for_room(m, k, n) || kv_post_chain(m, k, segs, n))
				return -1;
			n = 0;
		}
	}
	if (n && (kv_wait_for_room(m, k, n) || kv_post_chain(m, k, segs, n)))
		return -1;
	return 0;
}

/* The initiator posts one layer on every QP, but the delayed QP's (--delay-qp) wait for the end. */
int kv_post_layer(struct mover *m, int layer)
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

int kv_post_deferred(struct mover *m)
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
