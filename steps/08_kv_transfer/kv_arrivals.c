/* kv_arrivals.c: one side's completions reaped from K CQs: chains retired, immediates counted, failures named. */
#include "kv_mover.h"
#include "clock.h"
#include "report.h"
#include "sock.h"
#include "stop.h"

#include <arpa/inet.h>

/* How often a wait looks at the side channel for a peer that is gone. */
#define PEER_CHECK_MS 100

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
		     k, receive ? "a receive" : kv_op_words(m->pull, 1), m->req->number,
		     ibv_wc_status_str(wc->status), wc->status, wc->vendor_err, why);
	return -1;
}

/* The decoder, in push mode: a WRITE with immediate has landed; its immediate names the segment. */
static int take_immediate(struct mover *m, int k, const struct ibv_wc *wc)
{
	uint32_t imm = ntohl(wc->imm_data);
	int request = kv_imm_request(imm), seg = kv_imm_segment(imm);

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
int kv_reap_all(struct mover *m, struct timespec *progress)
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
int kv_wait_for_room(struct mover *m, int k, int n)
{
	struct timespec progress;

	clock_start(&progress);
	while (m->outstanding[k] && m->outstanding[k] + n > KV_SEND_DEPTH)
		if (kv_reap_all(m, &progress))
			return -1;
	return 0;
}

/* The peer closed the side channel: it has stopped, and this side says how far the request got. */
int kv_report_peer_gone(const struct mover *m)
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

/* Waits until every chain has completed and, on the decoder, every block has come. */
int kv_wait_all_in(struct mover *m)
{
	struct timespec progress, peer_check;

	clock_start(&progress);
	clock_start(&peer_check);
	while (m->chains_done < m->n_chains || (m->decoder && m->blocks_in < m->total_blocks)) {
		if (kv_reap_all(m, &progress))
			return -1;
		if (ms_since(&peer_check) > PEER_CHECK_MS) {
			clock_start(&peer_check);
			if (sock_peer_closed(m->fd))
				return kv_report_peer_gone(m);
		}
	}
	return 0;
}
