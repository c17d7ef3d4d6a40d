/* poller.c: stage 5: wait for completions, by busy polling or on the completion channel, and take each by its wr_id. */
#include "poller.h"
#include "clock.h"
#include "completion.h"
#include "exchange.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"
#include "sock.h"
#include "stop.h"
#include "wait.h"

#include <errno.h>
#include <poll.h>
#include <time.h>

const struct fault_point poller_faults[] = {
	{ "req_notify_cq", "ibv_req_notify_cq", EINVAL },
	{ "get_cq_event", "ibv_get_cq_event", EIO },
	{ 0 },
};

void poller_init(struct poller *p, struct rdma_conn *conn, bool events, bool rc_pingpong)
{
	*p = (struct poller){ .conn = conn, .events = events, .rc_pingpong = rc_pingpong };
}

/*
 * A wait that lasts longer than this looks at the side channel between slices
 * of it.  Nothing in RDMA tells a receiver that its peer has gone: its posted
 * receive simply stays empty.  But a peer that has exited has closed its end
 * of the TCP connection.  Waits that end sooner, as in any healthy run, make
 * no extra system call.
 */
#define PEER_CHECK_MS 100

/* Whether the peer has gone; ibv_rc_pingpong closes its end after the exchange, so with it nothing can be told. */
static bool peer_gone(const struct poller *p)
{
	if (p->rc_pingpong || !sock_peer_closed(p->conn->sock))
		return false;
	report_error("the peer closed the side channel during the run: it has stopped, and no "
		     "completion will come");
	return true;
}

static bool poller_peer_gone(void *p)
{
	return peer_gone(p);
}

/* Busy-polls for the next completion, in slices of PEER_CHECK_MS, and checks its status. */
static int spin_for_completion(struct poller *p, struct ibv_wc *wc, int timeout_ms)
{
	return take_good_completion_watching(p->conn, wc, timeout_ms, PEER_CHECK_MS,
					     poller_peer_gone, p);
}

/* Sleeps on the completion channel, in slices of PEER_CHECK_MS, until it has an event to read. */
static int sleep_for_event(struct poller *p, int timeout_ms)
{
	int rc;

	for (int waited = 0; waited < timeout_ms; waited += PEER_CHECK_MS) {
		struct timespec slice = deadline_in_ms(PEER_CHECK_MS);

		rc = wait_fd(p->conn->channel->fd, POLLIN, &slice, "completion channel");
		if (rc == WAIT_READY)
			return 0;
		if (rc == WAIT_STOPPED)
			return report_stopped();
		if (rc < 0 || peer_gone(p))
			return -1;
	}
	report_error("no completion event within %d ms: is the peer running?", timeout_ms);
	return -1;
}

/*
 * Sleeps until the completion channel reports an event, then acknowledges it.
 * This and arm() stay out of line (noinline changes nothing they do), so that a
 * profiler can name the event wait: make bench counts its instructions apart
 * from each message's work.
 */
__attribute__((noinline))
static int wait_for_event(struct poller *p, int timeout_ms)
{
	struct ibv_cq *cq;
	void *cq_context;

	if (sleep_for_event(p, timeout_ms))
		return -1;
	if (fault_at("get_cq_event") || ibv_get_cq_event(p->conn->channel, &cq, &cq_context)) {
		report_verb_error("ibv_get_cq_event", errno);
		return -1;
	}
	/* Every event must be acknowledged, or ibv_destroy_cq waits for ever. */
	ibv_ack_cq_events(cq, 1);
	p->events_seen++;
	p->armed = false;
	show("ibv_get_cq_event", "the CQ reported a completion; acknowledged with ibv_ack_cq_events");
	/* A first sleep in the quiet loop is shown after it (poller_report), which prints nothing. */
	if (p->events_seen == 1 && !showing())
		p->quiet_first_sleep = p->completions + 1;
	return 0;
}

/* Asks for one event at the next completion: arming is one-shot and must be renewed. */
__attribute__((noinline))
static int arm(struct poller *p)
{
	int rc = fault_at("req_notify_cq") ? errno : ibv_req_notify_cq(p->conn->cq, 0);

	if (rc) {
		report_verb_error("ibv_req_notify_cq", rc);
		return -1;
	}
	p->armed = true;
	show("ibv_req_notify_cq", "CQ armed: the next completion will wake us");
	return 0;
}

/*
 * One look at the CQ, which takes a completion if one is there.  Every poll of
 * the event mode is a look, kept out of line like the wait's functions: make
 * bench tells a first look from a wait's by who called it, and from their call
 * counts solves what a look costs when it finds a completion and when it finds
 * none, so that whether a wait slept never moves the work.
 */
__attribute__((noinline))
static int look_at_cq(struct poller *p, struct ibv_wc *wc)
{
	return ibv_poll_cq(p->conn->cq, 1, wc);
}

/*
 * The CQ was empty at our first look: arm it unless it is armed, poll again,
 * and sleep only if it is still empty; until a poll finds a completion.  It
 * stays out of line like arm() and wait_for_event(): all that a wait does
 * after the first look is here, so that make bench can count it apart.
 */
__attribute__((noinline))
static int poll_after_waiting(struct poller *p, struct ibv_wc *wc, int timeout_ms)
{
	int n;

	for (;;) {
		if (!p->armed) {
			if (arm(p))
				return -1;
		} else if (wait_for_event(p, timeout_ms)) {
			return -1;
		}
		n = look_at_cq(p, wc);
		if (n > 0)
			return 0;
		if (n < 0) {
			report_error("ibv_poll_cq failed (%d)", n);
			return -1;
		}
	}
}

/* Waits for the next completion, whatever it is, and checks its status. */
static int wait_next(struct poller *p, struct ibv_wc *wc, int timeout_ms)
{
	int n;

	if (!p->events) {
		if (spin_for_completion(p, wc, timeout_ms))
			return -1;
		p->completions++;
		return 0;
	}
	/* Poll first; only an empty CQ is waited for, and poll_after_waiting() arms it and
	 * polls again before sleeping: a completion that landed between our last poll and
	 * the arming would otherwise never raise an event. */
	n = look_at_cq(p, wc);
	if (n < 0) {
		report_error("ibv_poll_cq failed (%d)", n);
		return -1;
	}
	if (n == 0 && poll_after_waiting(p, wc, timeout_ms))
		return -1;
	if (check_good_completion(wc))
		return -1;
	p->completions++;
	return 0;
}

static bool is_ours(uint64_t wr_id)
{
	return wr_id == WR_ID_RECV || wr_id == WR_ID_SEND;
}

int poller_wait_for(struct poller *p, uint64_t wr_id, struct ibv_wc *wc)
{
	if (p->has_kept && p->kept.wr_id == wr_id) {
		*wc = p->kept;
		p->has_kept = false;
		return 0;
	}
	for (;;) {
		if (wait_next(p, wc, POLL_TIMEOUT_MS))
			return -1;
		if (wc->wr_id == wr_id)
			return 0;
		/* The completions a CQ returns match no order between the two queues: a
		 * reply's receive may overtake our own SEND's completion.  Keep it. */
		if (!is_ours(wc->wr_id) || p->has_kept) {
			report_error("completion of work request %llu (%s) while waiting for work request "
				     "%llu (%s): more completions than work requests posted",
				     (unsigned long long)wc->wr_id, wr_id_name(wc->wr_id),
				     (unsigned long long)wr_id, wr_id_name(wr_id));
			return -1;
		}
		p->kept = *wc;
		p->has_kept = true;
	}
}

int poller_sync(const struct poller *p, char tag, int timeout_s)
{
	return p->rc_pingpong ? 0 : exchange_sync(p->conn->sock, tag, timeout_s);
}

/*
 * A side whose shown round found its completions at a poll, before or just
 * after arming, slept first in the quiet loop: its arming and waking are shown
 * here, naming the completion it slept for.
 */
static void show_quiet_first_sleep(const struct poller *p)
{
	if (!p->quiet_first_sleep)
		return;
	show("ibv_req_notify_cq", "CQ armed, then slept: the first wait that slept came in the quiet loop, "
	     "for completion %ld (the shown round's were on the CQ when polled)", p->quiet_first_sleep);
	show("ibv_get_cq_event", "the CQ reported a completion; acknowledged with ibv_ack_cq_events");
}

void poller_report(const struct poller *p)
{
	show_quiet_first_sleep(p);
	if (p->events)
		show("completions", "%ld, every one success; %ld completion events, each acknowledged",
		     p->completions, p->events_seen);
	else
		show("completions", "%ld, every one success (busy polling: no events; ibv_poll_cq makes no system call)",
		     p->completions);
}
