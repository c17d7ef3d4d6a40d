/* datapath.c: step 11's data path: each chunk one WRITE with immediate (its number), the receives kept posted ahead, the asks and SACKs on the control QP, and the rounds with their timer. */
#include "lossy_datapath.h"
#include "clock.h"
#include "completion.h"
#include "fault.h"
#include "lossy_judge.h"
#include "lossy_sack.h"
#include "report.h"
#include "sock.h"
#include "stop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <time.h>

/* Completions taken in one ibv_poll_cq call. */
#define POLL_BATCH 32
/* The most receives posted in one ibv_post_recv call. */
#define RECV_BATCH 64
/* The wr_id of our control SEND: the slot after the receive slots. */
#define CTL_SEND_ID LOSSY_CTL_RECVS
/* Empty looks between two looks at the side channel and the clock. */
#define LOOK_EVERY 256
/* A wait's longest nap. */
#define NAP_MAX_NS 1000000L

/* ---- Both sides ---- */

static void moved(struct lossy_xfer *x)
{
	clock_start(&x->moved);
	x->idle = 0;
	x->nap_ns = 0;
}

/*
 * A look that found nothing.  rxe's "NIC" is kernel work on these same
 * CPUs, so a waiting side gives its CPU away: a yield (on a hardware NIC,
 * X->spin, none: a system call costs microseconds a look there), and after
 * LOSSY_SPIN_LOOKS empty looks in a row (the timer, an answer not yet asked for)
 * a nap, 1 us doubling to 1 ms, so that a long wait leaves the CPUs to others.
 * Every LOOK_EVERY looks it also looks at the side channel (a peer that has
 * stopped closes it) and at -t.
 */
static int idle_look(struct lossy_xfer *x, bool sender)
{
	if (++x->idle < LOSSY_SPIN_LOOKS) {
		if (!x->spin)
			sched_yield();
	} else {
		x->nap_ns = x->nap_ns ? x->nap_ns * 2 : 1000;
		x->nap_ns = x->nap_ns < NAP_MAX_NS ? x->nap_ns : NAP_MAX_NS;
		nanosleep(&(struct timespec){ .tv_nsec = x->nap_ns }, NULL);
	}
	if (x->idle % LOOK_EVERY)
		return 0;
	if (stop_requested())
		return report_stopped();
	if (sock_peer_closed(x->s->conn.sock))
		return lossy_report_peer_gone(x, sender);
	if (ms_since(&x->moved) >= x->timeout_s * 1000L)
		return lossy_report_stalled(x, sender);
	return 0;
}

/*
 * Every completion passes here.  A failed one, when the peer has closed the
 * side channel, is the peer gone, said once; otherwise stage 4 names its
 * status (or the fault point "completion" fails it).
 */
static int check_completion(struct lossy_xfer *x, const struct ibv_wc *wc, bool sender)
{
	if (wc->status != IBV_WC_SUCCESS && sock_peer_closed(x->s->conn.sock))
		return lossy_report_peer_gone(x, sender);
	return check_good_completion(wc);
}

/* One receive on the control QP, into slot SLOT of the control buffer: the peer's next ask or SACK. */
static int post_ctl_receive(struct lossy_xfer *x, int slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)x->l->ctl.addr + (size_t)slot * x->l->slot,
		.length = (uint32_t)x->l->slot,
		.lkey = x->l->ctl.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = fault_at("post_recv") ? errno : ibv_post_recv(x->s->conn.qp, &wr, &bad);

	if (rc) {
		report_verb_error("ibv_post_recv (control)", rc);
		return -1;
	}
	return 0;
}

/* Our ask or SACK S, a SEND on the control QP from the send slot; RC brings it, or fails it with a status. */
static int post_ctl_send(struct lossy_xfer *x, const struct sack *s)
{
	uint8_t *msg = (uint8_t *)x->l->ctl.addr + LOSSY_CTL_RECVS * x->l->slot;
	struct ibv_sge sge = {
		.addr = (uintptr_t)msg,
		.length = (uint32_t)sack_encode(msg, s, x->l->n, x->m),
		.lkey = x->l->ctl.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = CTL_SEND_ID,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int rc = fault_at("post_send") ? errno : ibv_post_send(x->s->conn.qp, &wr, &bad);

	if (rc) {
		report_verb_error(s->kind == SACK_ASK ? "ibv_post_send (ask)" : "ibv_post_send (SACK)", rc);
		return -1;
	}
	return 0;
}

static int take_sack(struct lossy_xfer *x, const struct ibv_wc *wc);
static int take_ask(struct lossy_xfer *x, const struct ibv_wc *wc);

/*
 * What the control QP's CQ holds: our SEND done, or the peer's message in a
 * receive slot, which is taken (a SACK by the sender, an ask by the
 * receiver) and posted again.  Returns how many, or -1.
 */
static int take_ctl(struct lossy_xfer *x, bool sender)
{
	struct ibv_wc wc[LOSSY_CTL_RECVS + 1];
	int n = ibv_poll_cq(x->s->conn.cq, LOSSY_CTL_RECVS + 1, wc);

	if (n < 0) {
		report_error("ibv_poll_cq on the control QP's CQ failed (%d)", n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (check_completion(x, &wc[i], sender))
			return -1;
		if (wc[i].wr_id == CTL_SEND_ID) {
			x->sack_busy = false;
			continue;
		}
		if ((sender ? take_sack(x, &wc[i]) : take_ask(x, &wc[i])) ||
		    post_ctl_receive(x, (int)wc[i].wr_id))
			return -1;
	}
	return n;
}

/* ---- The sender ---- */

/*
 * Path K: the plan's next N chunks, each one WRITE with immediate of its
 * bytes to the same place in the receiver's buffer, its number the
 * immediate; one chain, one doorbell, the last signalled: its completion
 * retires the chain, and its wr_id says how many WRs that is.
 */
static int post_chunks(struct lossy_xfer *x, int k, uint32_t n)
{
	struct lossy_path *p = &x->l->path[k];
	const struct rdma_conn *c = &p->conn;
	struct ibv_send_wr wr[LOSSY_POST_BATCH], *bad;
	struct ibv_sge sge[LOSSY_POST_BATCH];
	uint32_t i, chunk, first = 0;
	int rc;

	for (i = 0; i < n && chunk_map_next(x->m, &chunk); i++) {
		size_t off = chunk_offset(x->m, chunk);
		uint32_t len = chunk_len(x->m, chunk);

		if (i == 0)
			first = chunk;
		/* The lkey of this path's plane: an MR is good on its own PD's device only. */
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)x->s->buf.addr + off, .length = len,
					   .lkey = x->l->plane[p->plane].buf->mr->lkey };
		wr[i] = (struct ibv_send_wr){
			.sg_list = &sge[i],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
			.imm_data = htonl(chunk),
			.wr.rdma = { .remote_addr = c->remote.addr + off, .rkey = c->remote.rkey },
			.next = &wr[i + 1],
		};
		if (chunk_map_posted(x->m, chunk)) {
			x->again++;
			x->again_bytes += len;
		}
	}
	wr[i - 1].next = NULL;
	wr[i - 1].send_flags = IBV_SEND_SIGNALED;
	wr[i - 1].wr_id = i;
	rc = fault_at("post_send") ? errno : ibv_post_send(c->qp, wr, &bad);
	if (rc) {
		report_verb_error("ibv_post_send (WRITEs with immediate)", rc);
		return -1;
	}
	p->posted += i;
	p->in_sq += i;
	x->posts += i;
	x->round_posts += i;
	if (!x->shown_post)
		lossy_show_post(x, k, first, (int)i);
	return 0;
}

/* Takes up to POLL_BATCH completions from path K's CQ into WC; returns how many, or -1 after saying so. */
static int poll_path(struct lossy_xfer *x, int k, struct ibv_wc *wc)
{
	int n = ibv_poll_cq(x->l->path[k].conn.cq, POLL_BATCH, wc);

	if (n < 0)
		report_error("ibv_poll_cq on path %d's CQ failed (%d)", k, n);
	return n;
}

/*
 * RC: a failed completion on path K that another path can make up for.
 * Status 12 (its retries spent: nothing came back on this path for
 * retry_cnt + 1 timeouts) moves the QP to the error state, and every WR
 * behind it completes flushed (status 5): the path is cut for good, and the
 * chunks it lost go over the other paths in the next round.  Whether WC was
 * so taken (lossy_cut_failed_path); a peer gone, or the last path, is a
 * failure as any other.
 */
static bool path_failed(struct lossy_xfer *x, int k, const struct ibv_wc *wc)
{
	if (!x->o->rc || sock_peer_closed(x->s->conn.sock))
		return false;
	if (x->l->path[k].failed)
		return wc->status == IBV_WC_WR_FLUSH_ERR || wc->status == IBV_WC_RETRY_EXC_ERR;
	return wc->status == IBV_WC_RETRY_EXC_ERR && lossy_cut_failed_path(x, k, wc);
}

/* Takes the completions of our chains on every path, each retiring its chain's WRs; returns how many, or -1. */
static int reap_sends(struct lossy_xfer *x)
{
	int taken = 0;

	for (int k = 0; k < x->l->n; k++) {
		struct lossy_path *p = &x->l->path[k];
		struct ibv_wc wc[POLL_BATCH];
		int n = poll_path(x, k, wc);

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++) {
			bool failed = wc[i].status != IBV_WC_SUCCESS && path_failed(x, k, &wc[i]);

			if (!failed && check_completion(x, &wc[i], true))
				return -1;
			p->in_sq -= (uint32_t)wc[i].wr_id;
			/* RC: the receiver's ACK came back on this path. */
			if (!failed && x->o->rc)
				p->alive_us = now_us();
		}
		taken += n;
	}
	return taken;
}

/*
 * The receiver's SACK in a control slot: every field checked, then its
 * round and counts against ours, and the bitmap and the counts taken.
 */
static int take_sack(struct lossy_xfer *x, const struct ibv_wc *wc)
{
	const uint8_t *msg = (const uint8_t *)x->l->ctl.addr + wc->wr_id * x->l->slot;
	struct sack s;

	if (sack_decode(msg, wc->byte_len, "SCF", x->l->n, x->m->n, &s, x->bits))
		return -1;
	return lossy_apply_sack(x, &s);
}

/*
 * Posts the round's plan, chain by chain, dealt over the paths while each
 * has credit and room in its send queue.  Ends when the plan is posted, the
 * receiver has everything, or (UC) nothing could be posted for the timer's
 * length: WRITEs lost hold the window's credit until an answer frees it.
 */
static int post_round(struct lossy_xfer *x)
{
	struct timespec last_post;

	clock_start(&last_post);
	while (!x->final && chunk_map_left(x->m)) {
		bool posted = false;
		int taken, ctl;

		for (int k = 0; k < x->l->n && chunk_map_left(x->m); k++) {
			uint32_t n = lossy_credit(x, &x->l->path[k]);

			n = n < LOSSY_POST_BATCH ? n : LOSSY_POST_BATCH;
			if (n && post_chunks(x, k, n))
				return -1;
			posted |= n > 0;
		}
		taken = reap_sends(x);
		ctl = taken < 0 ? -1 : take_ctl(x, true);
		if (ctl < 0)
			return -1;
		if (posted || taken || ctl) {
			moved(x);
			if (posted)
				clock_start(&last_post);
			continue;
		}
		if (!x->o->rc && ms_since(&last_post) >= x->o->rto_ms) {
			lossy_show_stall(x);
			return 0;
		}
		if (idle_look(x, true))
			return -1;
	}
	return 0;
}

/* Until every WR posted has completed (UC: left this NIC; RC: acknowledged), taking SACKs meanwhile. */
static int wait_sent(struct lossy_xfer *x)
{
	for (;;) {
		bool pending = false;
		int taken, ctl;

		/* A failed path's WRs all complete, flushed; none is waited for. */
		for (int k = 0; k < x->l->n; k++)
			pending |= !x->l->path[k].failed && x->l->path[k].in_sq > 0;
		if (!pending)
			return 0;
		taken = reap_sends(x);
		ctl = taken < 0 ? -1 : take_ctl(x, true);
		if (ctl < 0)
			return -1;
		if (taken || ctl)
			moved(x);
		else if (idle_look(x, true))
			return -1;
	}
}

/* Takes SACKs until the timer's length (MS > 0), our answer (ANSWER), or else the final SACK. */
static int wait_ctl(struct lossy_xfer *x, int ms, bool answer)
{
	struct timespec since;

	clock_start(&since);
	while (!x->final && (ms ? ms_since(&since) < ms : !answer || x->asking)) {
		int ctl = take_ctl(x, true);

		if (ctl < 0)
			return -1;
		if (ctl)
			moved(x);
		else if (idle_look(x, true))
			return -1;
	}
	return 0;
}

/* The ask: how many WRITEs we posted on each path, so far; the receiver answers with its bitmap. */
static int ask(struct lossy_xfer *x)
{
	struct sack a = { .kind = SACK_ASK, .round = x->round };

	for (int k = 0; k < x->l->n; k++)
		a.count[k] = x->l->path[k].posted;
	if (post_ctl_send(x, &a))
		return -1;
	x->asking = true;
	return wait_ctl(x, 0, true);
}

int lossy_send(struct lossy_xfer *x)
{
	int rc = -1;

	x->round = 1;
	chunk_map_plan_missing(x->m);
	x->start_us = now_us();
	for (int k = 0; k < x->l->n; k++)
		x->l->path[k].alive_us = x->start_us;
	moved(x);
	/* Thousands of posts and completions: this loop's lines are its own, not each verb's. */
	show_quiet(true);
	for (;;) {
		double round_start = now_us();
		uint32_t missing;

		x->round_posts = 0;
		x->shown_post = false;
		if (post_round(x) || wait_sent(x))
			goto out;
		lossy_show_round_posted(x, (now_us() - round_start) / 1000);
		/*
		 * RC: the transport resends; the receiver's final SACK ends it, unless a path
		 * failed: then the ask, and its answer's holes go over the paths left.
		 */
		if (x->o->rc && !x->failed_new) {
			if (wait_ctl(x, 0, false))
				goto out;
			break;
		}
		x->failed_new = false;
		/* UC: the timer, then the ask; the answer's holes are the next round. */
		if ((!x->o->rc && wait_ctl(x, x->o->rto_ms, false)) || (!x->final && ask(x)))
			goto out;
		if (x->final)
			break;
		if (lossy_every_path_cut(x)) {
			lossy_report_every_path_silent(x);
			goto out;
		}
		missing = chunk_map_plan_missing(x->m);
		lossy_show_answer(x, &x->last, missing);
		x->round++;
	}
	rc = wait_sent(x);
out:
	show_quiet(false);
	return rc;
}

/* ---- The receiver ---- */

/*
 * N receives on path K, no buffer: a WRITE with immediate places its bytes
 * through the rkey, and takes a receive only for its completion.
 */
static int post_path_receives(struct lossy_xfer *x, int k, int n)
{
	struct lossy_path *p = &x->l->path[k];
	struct ibv_recv_wr wr[RECV_BATCH], *bad;
	int rc;

	for (int i = 0; i < n; i++)
		wr[i] = (struct ibv_recv_wr){ .wr_id = (uint64_t)k,
					      .next = i + 1 < n ? &wr[i + 1] : NULL };
	rc = fault_at("post_recv") ? errno : ibv_post_recv(p->conn.qp, wr, &bad);
	if (rc) {
		report_verb_error("ibv_post_recv", rc);
		return -1;
	}
	p->recv_left += (uint32_t)n;
	p->receives += (uint64_t)n;
	return 0;
}

int lossy_post_first_receives(struct lossy_xfer *x, bool sender)
{
	for (int slot = 0; slot < LOSSY_CTL_RECVS; slot++)
		if (post_ctl_receive(x, slot))
			return -1;
	for (int k = 0; !sender && k < x->l->n; k++) {
		for (uint32_t n = 0; n < x->l->window; n += RECV_BATCH)
			if (post_path_receives(x, k, x->l->window - n < RECV_BATCH ?
					  (int)(x->l->window - n) : RECV_BATCH))
				return -1;
		/* The sender counts these from the plan: no credit is due for them. */
		x->sacked[k] = x->l->path[k].receives;
		lossy_show_receives(x, k, (int)x->l->window);
	}
	return 0;
}

/* A receive completion on path K: a WRITE with immediate, whose chunk number and length are checked before use. */
static int take_arrival(struct lossy_xfer *x, int k, const struct ibv_wc *wc)
{
	struct lossy_path *p = &x->l->path[k];
	uint32_t c = ntohl(wc->imm_data);
	enum arrival a;

	if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IBV_WC_WITH_IMM)) {
		report_error("path %d: a receive completed with opcode %d, not a WRITE with immediate: "
			     "is the peer this step's program?", k, wc->opcode);
		return -1;
	}
	if (c >= x->m->n) {
		report_error("path %d: the sender's immediate value %u names no chunk: there are %u, "
			     "0 to %u", k, c, x->m->n, x->m->n - 1);
		return -1;
	}
	if (wc->byte_len != chunk_len(x->m, c)) {
		report_error("path %d: chunk %u's WRITE carried %u bytes, but the chunk has %u", k, c,
			     wc->byte_len, chunk_len(x->m, c));
		return -1;
	}
	a = chunk_arrived(x->m, c, x->s->buf.addr);
	x->arrivals++;
	x->duplicates += a == ARRIVAL_AGAIN;
	x->dropped += a == ARRIVAL_DROPPED;
	p->consumed++;
	p->recv_left--;
	lossy_show_arrival(x, c, a);
	return 0;
}

/*
 * Takes the chunks every path's CQ holds, and tops its receives up to the
 * window, in chains of a quarter window (RECV_BATCH at most); returns how
 * many chunks, or -1.
 */
static int reap_arrivals(struct lossy_xfer *x)
{
	uint32_t batch = x->l->window / 4 ? x->l->window / 4 : 1;
	int taken = 0;

	for (int k = 0; k < x->l->n; k++) {
		struct lossy_path *p = &x->l->path[k];
		struct ibv_wc wc[POLL_BATCH];
		int n = poll_path(x, k, wc);

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++)
			if (check_completion(x, &wc[i], false) || take_arrival(x, k, &wc[i]))
				return -1;
		batch = batch < RECV_BATCH ? batch : RECV_BATCH;
		while (x->l->window - p->recv_left >= batch)
			if (post_path_receives(x, k, (int)batch))
				return -1;
		taken += n;
	}
	return taken;
}

/* The sender's ask in a control slot: every field checked, then its round and counts against ours. */
static int take_ask(struct lossy_xfer *x, const struct ibv_wc *wc)
{
	const uint8_t *msg = (const uint8_t *)x->l->ctl.addr + wc->wr_id * x->l->slot;
	struct sack s;

	if (sack_decode(msg, wc->byte_len, "A", x->l->n, x->m->n, &s, NULL))
		return -1;
	return lossy_apply_ask(x, &s);
}

/* Our SACK of kind KIND: the bitmap, and the receives consumed on each path. */
static int send_sack(struct lossy_xfer *x, char kind, uint32_t round)
{
	struct sack s = { .kind = kind, .round = round, .n_in = x->m->n_in };

	for (int k = 0; k < x->l->n; k++) {
		s.count[k] = x->l->path[k].consumed;
		s.receives[k] = x->sacked[k] = x->l->path[k].receives;
	}
	if (post_ctl_send(x, &s))
		return -1;
	x->sack_busy = true;
	lossy_show_sack_sent(x, kind, round);
	return 1;
}

/*
 * With no SACK of ours in flight, the one due (lossy_sack_due): the final
 * SACK once every chunk is in; else the answer to an ask, after taking
 * every chunk the CQs hold; else credit, when due.  Returns 1 when one was
 * sent, 0, or -1.
 */
static int next_sack(struct lossy_xfer *x)
{
	uint32_t round;
	char kind;
	int n = 0;

	if (x->ask_round)
		while ((n = reap_arrivals(x)) > 0)
			;
	if (x->ask_round && n < 0)
		return -1;
	kind = lossy_sack_due(x, &round);
	return kind ? send_sack(x, kind, round) : 0;
}

int lossy_receive(struct lossy_xfer *x)
{
	int rc = -1;

	x->round = 1;
	x->start_us = now_us();
	moved(x);
	show_quiet(true);
	while (!x->final_sent || x->sack_busy) {
		int taken = reap_arrivals(x), ctl = 0, sent = 0;

		if (taken < 0 || (ctl = take_ctl(x, false)) < 0 ||
		    (!x->sack_busy && !x->final_sent && (sent = next_sack(x)) < 0))
			goto out;
		if (taken || ctl || sent)
			moved(x);
		else if (idle_look(x, false))
			goto out;
	}
	rc = 0;
out:
	show_quiet(false);
	return rc;
}
