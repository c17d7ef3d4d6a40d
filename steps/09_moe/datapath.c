/* datapath.c: step 09's data path: each exchange's chain of WRITEs into a peer's buffer, its signal (a FETCH_ADD, or the last WRITE's immediate), and the completions and signals waited for. */
#include "moe_datapath.h"
#include "completion.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>

/*
 * Starts exchange a->seq of phase PH.  With --signal imm, every peer's
 * signal consumes one of our receives: top them up to A2A_RECV_BATCH on a
 * QP that has fewer than A2A_RECV_LOW left, before the peer can send.
 */
int a2a_begin(struct a2a *a, enum moe_phase ph, struct a2a_stats *st)
{
	struct moe_mesh *m = a->m;

	a->ph = ph;
	a->st = st;
	a->rounds[ph]++;
	if (a->signal != SIGNAL_IMM)
		return 0;
	if (a2a_check_early(a))
		return -1;
	for (int p = 0; p < m->world; p++) {
		int more = A2A_RECV_BATCH - a->recv_left[p];

		if (p == m->rank || a->recv_left[p] >= A2A_RECV_LOW)
			continue;
		if (post_receives(&m->conn[p], &m->buf, 0, more)) {
			ctl_fail(a->ctl, m->rank, "it could not post its receives for rank %d", p);
			return -1;
		}
		a->recv_left[p] += more;
		st->recv_posts++;
	}
	return 0;
}

/* Fills WR[0..] with the WRITEs of LEN bytes, each taking the next SGE; returns how many. */
static int chain_writes(struct moe_mesh *m, const struct rdma_conn *c, size_t src, uint64_t dst,
			size_t len, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	size_t piece = piece_for(len, c->send_depth);
	int n = 0;

	for (size_t off = 0; off < len; off += piece, n++) {
		size_t bytes = len - off < piece ? len - off : piece;

		sge[n] = (struct ibv_sge){ .addr = (uintptr_t)m->buf.addr + src + off,
					   .length = (uint32_t)bytes, .lkey = m->buf.mr->lkey };
		wr[n] = (struct ibv_send_wr){
			.wr_id = WR_ID_SEND,
			.sg_list = &sge[n],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.next = &wr[n + 1],
			.wr.rdma = { .remote_addr = c->remote.addr + dst + off, .rkey = c->remote.rkey },
		};
	}
	return n;
}

/*
 * The signal, after the data on the same QP, on the peer's word of the phase
 * kept for us.  RC executes one QP's WRs in order, and the responder places a
 * WRITE's data before it executes a later atomic: so once that word counts
 * this exchange, our bytes are there.  No IBV_SEND_FENCE: a fence holds a WR
 * until earlier READs and atomics complete, for a WR that depends on what
 * they bring back; nothing here reads.  On two QPs no order holds at all.
 * WR N; returns N + 1.
 */
static int signal_fadd(const struct a2a *a, const struct rdma_conn *c, int peer, int n,
		       struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	sge[n] = (struct ibv_sge){ .addr = (uintptr_t)a->m->buf.addr + a->l->old + 8 * (size_t)peer,
				   .length = 8, .lkey = a->m->buf.mr->lkey };
	wr[n] = (struct ibv_send_wr){
		.wr_id = WR_ID_SEND,
		.sg_list = &sge[n],
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = c->remote.addr +
					      layout_sig_word(a->l, a->ph, a->m->rank),
			       .compare_add = 1, .rkey = c->remote.rkey },
	};
	return n + 1;
}

/*
 * The signal as the last WRITE's immediate: the peer's receive completes
 * only once that WRITE's data is placed, and RC placed every WRITE before it
 * on this QP first.  With no data, a zero-byte WRITE with immediate (no SGE)
 * carries it alone.  Returns the chain's length.
 */
static int signal_imm(const struct a2a *a, const struct rdma_conn *c, uint64_t dst, int n,
		      struct ibv_send_wr *wr)
{
	if (n == 0)
		wr[n++] = (struct ibv_send_wr){
			.wr_id = WR_ID_SEND,
			.wr.rdma = { .remote_addr = c->remote.addr + dst, .rkey = c->remote.rkey },
		};
	wr[n - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[n - 1].imm_data = htonl(moe_imm(a->seq, a->ph, a->m->rank));
	wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	return n;
}

int a2a_post(struct a2a *a, int peer, size_t src, uint64_t dst, size_t len,
	     struct a2a_stats *st)
{
	struct rdma_conn *c = &a->m->conn[peer];
	struct ibv_send_wr wr[QUEUE_DEPTH], *bad;
	struct ibv_sge sge[QUEUE_DEPTH];
	int writes = chain_writes(a->m, c, src, dst, len, wr, sge), n, rc;
	long syscw;

	if (a->signal == SIGNAL_FADD)
		n = signal_fadd(a, c, peer, writes, wr, sge);
	else
		n = writes = signal_imm(a, c, dst, writes, wr);
	wr[n - 1].next = NULL;
	syscw = a2a_syscw(a);
	rc = fault_at("post_send") ? errno : ibv_post_send(c->qp, wr, &bad);
	a2a_count_post(st, syscw, a2a_syscw(a));
	if (rc) {
		report_verb_error(a->signal == SIGNAL_FADD ? "ibv_post_send (WRITEs, then FETCH_ADD)" :
				  "ibv_post_send (WRITEs, the last with immediate)", rc);
		ctl_fail(a->ctl, a->m->rank, "it could not post its %s to rank %d", a2a_phase_name(a->ph),
			 peer);
		return -1;
	}
	a->sending[peer] = true;
	a2a_posted(a, peer, writes, dst, len, st);
	return 0;
}

/* A receive completion: PEER's WRITE with immediate, which must name PEER, a phase and this exchange or the next. */
static int take_signal(struct a2a *a, int peer, const struct ibv_wc *wc)
{
	uint32_t imm = ntohl(wc->imm_data), from = moe_imm_sender(imm), ph = moe_imm_phase(imm);
	uint32_t seq = moe_imm_exchange(imm), ours = a->seq % MOE_IMM_EXCHANGES;
	int slot = seq == ours ? 0 : seq == (ours + 1) % MOE_IMM_EXCHANGES ? 1 : -1;

	if (!(wc->wc_flags & IBV_WC_WITH_IMM) || from != (uint32_t)peer || ph >= PHASES || slot < 0 ||
	    (slot == 0 && ph != a->ph) || a->came[slot][peer]) {
		ctl_fail(a->ctl, peer, "its WRITE with immediate 0x%08x (exchange %u, phase %u, rank "
			 "%u) is no signal we wait for: we are at exchange %u, the %s", imm, seq, ph,
			 from, a->seq, a2a_phase_name(a->ph));
		return -1;
	}
	a->came[slot][peer] = (uint8_t)(ph + 1);
	a->recv_left[peer]--;
	a->signals_in++;
	a2a_show_signal(peer, imm, slot);
	return 0;
}

/* Takes what our CQ to PEER holds now: our signal's completion, and (imm) the peer's signals. 0 or -1. */
static int reap_peer(struct a2a *a, int peer)
{
	struct ibv_wc wc[4];
	int n = ibv_poll_cq(a->m->conn[peer].cq, 4, wc);

	if (n < 0) {
		ctl_fail(a->ctl, a->m->rank, "it could not poll its CQ to rank %d", peer);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		/* Stage 4's check: a failed status (or the fault point "completion") is named there. */
		if (check_good_completion(&wc[i])) {
			ctl_fail_neighbour(a->ctl, peer, "our WRs to it did not complete (see the line "
					   "above): its QP is gone or unreachable");
			return -1;
		}
		if (!(wc[i].opcode & IBV_WC_RECV)) {
			/* Our signal to PEER is done, and every WRITE before it. */
			a->sending[peer] = false;
			a2a_show_sent(a, peer);
		} else if (take_signal(a, peer, &wc[i])) {
			return -1;
		}
	}
	return 0;
}

static int reap_all(struct a2a *a)
{
	for (int p = 0; p < a->m->world; p++)
		if (p != a->m->rank && reap_peer(a, p))
			return -1;
	return 0;
}

/* Whether PEER's signal of this exchange has come: its word of the phase (fadd), or a receive completion (imm). */
static bool signalled(const struct a2a *a, int peer)
{
	const uint64_t *word;

	if (a->signal == SIGNAL_IMM)
		return a->came[0][peer] != 0;
	/* PEER's word of the phase grows by 1 each exchange of that phase: an acquire load, so that the data before it is seen. */
	word = (const uint64_t *)((char *)a->m->buf.addr + layout_sig_word(a->l, a->ph, peer));
	return __atomic_load_n(word, __ATOMIC_ACQUIRE) >= a->rounds[a->ph];
}

/* How many peers have signalled this exchange, and the first that has not (-1: none). */
static uint64_t signals_now(const struct a2a *a, int *silent)
{
	uint64_t n = 0;

	*silent = -1;
	for (int p = 0; p < a->m->world; p++) {
		if (p == a->m->rank)
			continue;
		if (signalled(a, p))
			n++;
		else if (*silent < 0)
			*silent = p;
	}
	return n;
}

int a2a_wait_signal(struct a2a *a)
{
	uint64_t want = (uint64_t)(a->m->world - 1), now, before = 0;
	struct progress pr;
	int rc, silent;

	progress_start(&pr, a->ctl, a->rule, a->timeout_s);
	while ((now = signals_now(a, &silent)) < want) {
		if (a->signal == SIGNAL_IMM && reap_all(a))
			return a2a_waited(a, &pr, -1);
		if (now > before) {
			before = now;
			progress_made(&pr);
		}
		rc = progress_idle(&pr);
		/* Past -t: look once more, for the last signal may have come since. */
		if (rc == PROGRESS_STALLED && (now = signals_now(a, &silent)) == want)
			continue;
		if (rc == PROGRESS_STALLED)
			a2a_name_silent(a, silent, now);
		if (rc)
			return a2a_waited(a, &pr, -1);
	}
	a2a_show_signals(a, now);
	return a2a_waited(a, &pr, 0);
}

int a2a_wait_sent(struct a2a *a)
{
	struct progress pr;
	int p, rc;

	progress_start(&pr, a->ctl, a->rule, a->timeout_s);
	while ((p = a2a_first_sending(a)) >= 0) {
		if (reap_all(a))
			return a2a_waited(a, &pr, -1);
		if (a2a_first_sending(a) < 0)
			break;
		rc = progress_idle(&pr);
		if (rc == PROGRESS_STALLED)
			ctl_fail(a->ctl, p, "our %s to it did not complete within %d s", a->signal ==
				 SIGNAL_FADD ? "FETCH_ADD" : "WRITE with immediate", a->timeout_s);
		if (rc)
			return a2a_waited(a, &pr, -1);
	}
	return a2a_waited(a, &pr, 0);
}
