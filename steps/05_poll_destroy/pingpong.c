/* pingpong.c: stage 5: the loops of both roles, N messages each, the initiator timing every one. */
#include "pingpong.h"
#include "clock.h"
#include "completion.h"
#include "credits.h"
#include "exchange.h"
#include "pattern.h"
#include "perf_report.h"
#include "procstat.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/*
 * In a SEND ping-pong the reply already proves that our SEND arrived, so its
 * completion tells nothing new, and each one costs a CQE that the NIC writes
 * and that we poll for.  A SEND asks for one only on every SIGNAL_EVERYth
 * message, starting with the first (the one shown), and on the last.  The
 * send queue frees an unsignalled WR's slot only when a later signalled one
 * completes, so the interval is at most the send queue's entries: SIGNAL_EVERY,
 * or the queue on a device that gave stage 3 fewer (round_wrs.every).
 */
#define SIGNAL_EVERY 32

/* RSS is read after this many messages, when the loop has reached its steady state, and at the end. */
#define RSS_FIRST 1000

/* The resident set after message RSS_FIRST, compared at the end with the last one's. */
static void note_rss(long *first, int done)
{
	if (done == RSS_FIRST)
		*first = proc_status_kb("VmRSS");
}

/* After the first round, which showed every post and completion: say so, and keep the rest quiet. */
static void quiet_after_first(int iters)
{
	show("iterations", "the first shown above; %d more run quietly", iters - 1);
	show_quiet(iters > 1);
}

/* A loop that allocates nothing per message keeps its resident set flat. */
static void show_rss(long first, int iters)
{
	if (iters >= 2 * RSS_FIRST)
		show("memory", "VmRSS %ld kB after message %d, %ld kB after message %d", first,
		     RSS_FIRST, proc_status_kb("VmRSS"), iters);
}

/*
 * A large malloc maps pages that arrive only when first written: a page fault
 * inside the timed loop would be timed too, and RSS would grow with it.
 */
static void touch_pages(void *p, size_t len)
{
	volatile char *c = p;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (size_t off = 0; off < len; off += page)
		c[off] = 0;
}

/* Whether the SEND of message I (of ITERS) asks for a completion, one in EVERY. */
static bool send_signalled(int i, int iters, int every)
{
	return i % every == 0 || i == iters - 1;
}

/*
 * The two work requests a round posts, built once before the loop: the
 * operation (on the target, the SEND that replies), and the receive that
 * takes a SEND.  A round changes only the immediate value and whether the
 * operation asks for a completion.
 */
struct round_wrs {
	enum wr_op run_op;	/* what the run measures (-o), whichever side posts it */
	struct prepared_op op;
	struct prepared_recv recv;
	int every;		/* a SEND asks for a completion once in this many */
};

/* Builds W for this side: the run's operation, or with REPLY the target's answering SEND; and the receive. */
static void prepare_round_wrs(struct round_wrs *w, const struct poller *p, const struct rdma_buf *buf,
			      const struct post_opts *post, bool reply)
{
	struct post_opts pong = *post;

	pong.op = reply ? OP_SEND : post->op;
	w->run_op = post->op;
	w->every = (int)p->conn->send_depth < SIGNAL_EVERY ? (int)p->conn->send_depth : SIGNAL_EVERY;
	prepare_operation(&w->op, p->conn, buf, buf->len, &pong);
	prepare_receive(&w->recv, buf, buf->len);
}

/* One message and its completions, as the initiator sees them; *US is the time from post to reply, or to completion. */
static int initiator_round(struct poller *p, struct credits *credits, const struct rdma_buf *buf,
			   struct round_wrs *w, int i, int iters, double *us)
{
	enum wr_op op = w->run_op;
	bool signalled = op != OP_SEND || send_signalled(i, iters, w->every);
	struct ibv_wc wc;
	double t0;

	prepared_imm(&w->op, (uint32_t)i);
	prepared_signal(&w->op, signalled);
	if ((op == OP_SEND && post_prepared_receive(p->conn, &w->recv)) || credits_wait_for(credits, i))
		return -1;
	/* Before a READ, spoil the bytes a previous round fetched: the check must see this round's. */
	fill_pattern(buf->addr, buf->len, op == OP_READ ? READ_POISON_SEED : (uint8_t)i);
	t0 = now_us();
	if (post_prepared(p->conn, &w->op))
		return -1;
	/* A ping-pong ends when the target's reply arrives; a one-sided operation, at its completion. */
	if (poller_wait_for(p, op == OP_SEND ? WR_ID_RECV : WR_ID_SEND, &wc) ||
	    check_received_length(&wc, buf->len))
		return -1;
	*us = now_us() - t0;
	/* Our SEND's own completion, if it asked for one; the reply may have overtaken it. */
	if (op == OP_SEND && signalled && poller_wait_for(p, WR_ID_SEND, &wc))
		return -1;
	if (op == OP_SEND && !check_pattern(buf->addr, buf->len, (uint8_t)i))
		return -1;
	if (op == OP_READ && !check_pattern(buf->addr, buf->len, 0))
		return -1;
	return 0;
}

int run_initiator_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int timeout_s)
{
	double *lat_us, start, us, trips = post->op == OP_SEND ? 2 : 1;
	struct credits credits;
	struct round_wrs wrs;
	long rss_first = -1;
	int rc = -1;

	lat_us = malloc((size_t)iters * sizeof(*lat_us));
	if (!lat_us) {
		report_verb_error("malloc (latencies)", ENOMEM);
		return -1;
	}
	touch_pages(lat_us, (size_t)iters * sizeof(*lat_us));
	credits_init(&credits, p, post->op, post->op == OP_SEND, iters, timeout_s);
	prepare_round_wrs(&wrs, p, buf, post, false);
	if (poller_sync(p, 'P', timeout_s))
		goto out_free;
	start = now_us();
	for (int i = 0; i < iters; i++) {
		if (initiator_round(p, &credits, buf, &wrs, i, iters, &us))
			goto out_free;
		/* A SEND's time is a round trip: its latency is half of it. */
		lat_us[i] = us / trips;
		if (i == 0)
			quiet_after_first(iters);
		note_rss(&rss_first, i + 1);
	}
	show_quiet(false);
	show_rss(rss_first, iters);
	show_perf_report(lat_us, iters, buf->len, now_us() - start, post->op);
	credits_report(&credits, true);
	poller_report(p);
	rc = poller_sync(p, 'D', timeout_s);
out_free:
	show_quiet(false);
	free(lat_us);
	return rc;
}

/*
 * How many receives the target keeps posted.  A SEND ping-pong needs one: the
 * initiator waits for the reply, and the target posts the next receive before
 * it replies.  WRITE with immediate, and any pipelined run, does not wait, so
 * the next message can come before the target has taken the last one: with no
 * receive posted, it would be refused with an RNR NAK and retried after
 * min_rnr_timer, a delay that no completion reports.  A queue's worth of
 * receives gives the target room to fall behind, and credits (credits.c) keep
 * the initiator from sending past them when it falls further.
 */
static int receives_ahead(bool answers, int iters, const struct rdma_conn *conn)
{
	return answers ? 1 : credits_first(iters, conn);
}

/* One message as the target sees it: take it, check it, send it back if it was a SEND. */
static int target_round(struct poller *p, struct credits *credits, const struct rdma_buf *buf,
			struct round_wrs *w, int i, int iters, bool answers)
{
	struct ibv_wc wc;
	bool signalled;

	if (poller_wait_for(p, WR_ID_RECV, &wc) || check_received_length(&wc, buf->len))
		return -1;
	if (w->run_op == OP_WRITE_IMM && ntohl(wc.imm_data) != (uint32_t)i) {
		report_error("immediate value %u arrived as message %d: out of order", ntohl(wc.imm_data), i);
		return -1;
	}
	/* The next WRITE may already be landing in our buffer: only the last one holds still.
	 * Replace the receive just used, while messages remain to take one, and count it. */
	if (!answers) {
		int ahead = receives_ahead(false, iters, p->conn);

		if (i + ahead >= iters)
			return 0;
		return post_prepared_receive(p->conn, &w->recv) ||
			       credits_grant(credits, ahead + i + 1) ? -1 : 0;
	}
	/* ibv_rc_pingpong sends filler, not our pattern: only the length can be checked. */
	if (!p->rc_pingpong && !check_pattern(buf->addr, buf->len, (uint8_t)i))
		return -1;
	/* Post the next receive before answering, so the next message always finds one. */
	signalled = send_signalled(i, iters, w->every);
	prepared_signal(&w->op, signalled);
	if (post_prepared_receive(p->conn, &w->recv) || post_prepared(p->conn, &w->op))
		return -1;
	/* The reply's completion, if it asked for one; the initiator's next message may overtake it, and is kept. */
	return signalled ? poller_wait_for(p, WR_ID_SEND, &wc) : 0;
}

static void show_target_check(enum wr_op op, int iters, size_t len, bool answers)
{
	switch (op) {
	case OP_SEND:
		if (!answers) {
			show("data check", "%d messages of %zu bytes arrived; the last one's bytes are "
			     "intact", iters, len);
			break;
		}
		show("data check", "%d messages of %zu bytes, every one arrived intact", iters, len);
		break;
	case OP_WRITE_IMM:
		show("data check", "immediate values 0 to %d arrived in order; the last message's "
		     "%zu bytes are intact", iters - 1, len);
		break;
	case OP_WRITE:
		show("data check", "the last of %d writes left %zu intact bytes", iters, len);
		break;
	case OP_READ:
		show("data check", "nothing arrives here: the peer read our %zu bytes %d times", len,
		     iters);
		break;
	default:	/* the atomics, which poll_opts_check refuses */
		break;
	}
}

int run_target_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		    int iters, bool pipelined, int timeout_s)
{
	bool answers = post->op == OP_SEND && !pipelined, takes = op_needs_recv(post->op);
	struct credits credits;
	struct round_wrs wrs;
	long rss_first = -1;
	int rc = -1, left;

	if (takes && post_receives(p->conn, buf, buf->len, receives_ahead(answers, iters, p->conn)))
		return -1;
	if (post->op == OP_READ)
		fill_pattern(buf->addr, buf->len, 0);
	credits_init(&credits, p, post->op, answers, iters, timeout_s);
	prepare_round_wrs(&wrs, p, buf, post, true);
	/* After the barrier, the first thing the initiator reads: how many receives are up. */
	if (poller_sync(p, 'P', timeout_s) ||
	    credits_grant_first(&credits, receives_ahead(answers, iters, p->conn)))
		return -1;
	for (int i = 0; takes && i < iters; i++) {
		if (target_round(p, &credits, buf, &wrs, i, iters, answers))
			goto out_unquiet;
		if (i == 0)
			quiet_after_first(iters);
		note_rss(&rss_first, i + 1);
	}
	show_quiet(false);
	if (takes)
		show_rss(rss_first, iters);
	if (poller_sync(p, 'D', timeout_s))
		goto out_unquiet;
	if (post->op != OP_READ && !answers &&
	    !check_pattern(buf->addr, buf->len, (uint8_t)(iters - 1)))
		goto out_unquiet;
	left = drain_completions(p->conn, false);
	if (left < 0)
		goto out_unquiet;
	if (!takes)
		show("target CQ", "%d completion(s) after %d one-sided operations", left, iters);
	if (p->rc_pingpong)
		show("data check", "%d messages of %zu bytes each; ibv_rc_pingpong's payload is filler, "
		     "so only the length was checked", iters, buf->len);
	else
		show_target_check(post->op, iters, buf->len, answers);
	credits_report(&credits, false);
	poller_report(p);
	rc = 0;
out_unquiet:
	show_quiet(false);
	return rc;
}
