/* control.c: the job runtime: the control channel to rank 0: it ends every rank on a failure, naming the rank, and gathers the results. */
#include "control.h"
#include "clock.h"
#include "report.h"
#include "sock.h"
#include "stop.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define NEIGHBOUR_GRACE_MS 500
/* How much later than -t after its notice a rank gives up on rank 0's verdict. */
#define VERDICT_GRACE_MS 1000

void ctl_init(struct ring_ctl *c, const struct launch *l, int timeout_s)
{
	*c = (struct ring_ctl){ .rank = l->rank, .world = l->world, .timeout_s = timeout_s,
				.fd = -1 };
	for (int r = 0; r < JOB_MAX_RANKS; r++)
		c->fds[r] = c->waits_on[r] = -1;
}

void ctl_announce(struct ring_ctl *c, int failed, const char *cause)
{
	if (!c->failed)
		report_error("rank %d: %s", failed, cause);
	c->failed = true;
}

/* Rank 0: tells every rank but SKIP that rank FAILED failed. */
static void broadcast_abort(struct ring_ctl *c, int failed, const char *cause, int skip)
{
	struct ctl_msg m = ctl_msg_abort(failed, cause);

	for (int r = 1; r < c->world; r++)
		if (r != skip && c->fds[r] >= 0)
			ctl_msg_send(c->fds[r], &m, c->timeout_s);
}

void ctl_fail(struct ring_ctl *c, int failed, const char *fmt, ...)
{
	char cause[CTL_TEXT_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	if (c->failed)
		return;
	ctl_announce(c, failed, cause);
	if (c->rank == 0) {
		broadcast_abort(c, failed, cause, -1);
	} else if (c->fd >= 0) {
		struct ctl_msg m = ctl_msg_abort(failed, cause);

		ctl_msg_send(c->fd, &m, c->timeout_s);
	}
}

/*
 * Why a message did not come whole, for the line that names its sender: RC
 * is ctl_msg_recv's, CLOSED the words for a connection that closed.
 */
static const char *why_no_message(int rc, const char *closed)
{
	if (rc == SOCK_CLOSED)
		return closed;
	if (rc == SOCK_TIMEOUT)
		return "it sent part of a message, then nothing for -t seconds";
	return "it sent a message that is not ours (see the line above)";
}

/* Keeps rank R's first stall notice, that it waits on WAITS_ON (CAUSE): rank 0 every rank's, a rank its own. */
static void keep_stall(struct ring_ctl *c, int r, int waits_on, const char *cause)
{
	if (c->waits_on[r] >= 0)
		return;
	if (c->stalls++ == 0)
		clock_start(&c->first_stall);
	c->waits_on[r] = waits_on;
	snprintf(c->stall_cause[r], sizeof(c->stall_cause[r]), "%s", cause);
}

/* Rank 0: a notice from rank R: kept, unless it names no other rank of the world. */
static int keep_notice(struct ring_ctl *c, int r, const struct ctl_msg *m)
{
	if (m->peer < 0 || m->peer >= c->world || m->peer == r) {
		ctl_fail(c, r, "its stall notice names rank %d as the one it waits on (ranks are 0 to %d)",
			 m->peer, c->world - 1);
		return -1;
	}
	keep_stall(c, r, m->peer, m->text);
	return 0;
}

/*
 * Rank 0: follows the waits from rank FROM, rank to rank, to one that waits
 * on none (or round a circle, at most WORLD hops); returns it, BY the rank
 * that waits on it, and the ranks passed in PATH ("1 -> 0 -> 2").
 */
static int follow_waits(const struct ring_ctl *c, int from, int *by, char *path, size_t len)
{
	int r = from, used = snprintf(path, len, "%d", r);

	*by = from;
	for (int hops = 0; c->waits_on[r] >= 0 && hops < c->world; hops++) {
		*by = r;
		r = c->waits_on[r];
		if (used >= 0 && (size_t)used < len)
			used += snprintf(path + used, len - (size_t)used, " -> %d", r);
	}
	return r;
}

/*
 * Rank 0: once every rank but one has sent a stall notice or its result,
 * or -t after the first notice, names the rank the waits lead to, in the
 * words of the rank that waits on it; 0 while there is nothing to decide.
 */
static int judge_stalls(struct ring_ctl *c)
{
	int first = -1, accounted = 0, by, stuck;
	char path[JOB_MAX_RANKS * 6];

	if (c->stalls == 0)
		return 0;
	for (int r = c->world - 1; r >= 0; r--) {
		if (c->waits_on[r] >= 0)
			first = r;
		accounted += c->waits_on[r] >= 0 || (r > 0 && c->have_result[r]);
	}
	if (accounted < c->world - 1 && ms_since(&c->first_stall) < c->timeout_s * 1000L)
		return 0;
	stuck = follow_waits(c, first, &by, path, sizeof(path));
	ctl_fail(c, stuck, "%s (rank 0 followed the waits: %s)", c->stall_cause[by], path);
	return -1;
}

/* Rank 0: what one rank's connection holds now; 0, or -1 once a failure is printed and told. */
static int take_from_rank(struct ring_ctl *c, int r)
{
	struct ctl_msg m;
	int rc = ctl_msg_recv(c->fds[r], &m, c->timeout_s * 1000L);

	if (rc == SOCK_STOPPED) {
		ctl_fail(c, c->rank, "stopped by %s", stop_signal_name());
		return -1;
	}
	if (rc) {
		close(c->fds[r]);
		c->fds[r] = -1;
		ctl_fail(c, r, "%s", why_no_message(rc, "it stopped: its connection to rank 0 closed "
						    "(killed, or it failed: see its output)"));
		return -1;
	}
	if (m.type == CTL_ABORT) {
		ctl_announce(c, m.failed, m.text);
		broadcast_abort(c, m.failed, m.text, r);
		return -1;
	}
	if (m.type == CTL_STALL)
		return keep_notice(c, r, &m);
	if (m.type != CTL_RESULT) {
		ctl_fail(c, r, "it sent rank 0 a message of type '%c' in the middle of the run", m.type);
		return -1;
	}
	c->results[r] = m.result;
	c->have_result[r] = true;
	return 0;
}

/* A rank: what rank 0 sent, if anything; WANT_GO: a CTL_GO is what we wait for. */
static int take_from_zero(struct ring_ctl *c, bool want_go)
{
	struct ctl_msg m;
	int rc = ctl_msg_recv(c->fd, &m, c->timeout_s * 1000L);

	if (rc) {
		ctl_announce(c, 0, rc == SOCK_STOPPED ? "(we were stopped by a signal)" :
			     why_no_message(rc, "its connection closed: it has stopped (killed, or it "
					    "failed: see its output)"));
		return -1;
	}
	if (m.type == CTL_ABORT) {
		ctl_announce(c, m.failed, m.text);
		return -1;
	}
	if (m.type != CTL_GO || !want_go) {
		ctl_announce(c, 0, "it sent a message out of turn");
		return -1;
	}
	return 1;
}

/* Polls the connections to rank 0 (or rank 0's to every rank) for TIMEOUT_MS; -1 on a failure. */
static int poll_ctl(struct ring_ctl *c, int timeout_ms, bool want_go)
{
	struct pollfd pfds[JOB_MAX_RANKS];
	int n = 0, rc;

	if (c->failed)
		return -1;
	if (stop_requested()) {
		ctl_fail(c, c->rank, "stopped by %s", stop_signal_name());
		return -1;
	}
	if (c->rank != 0)
		pfds[n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
	else
		for (int r = 1; r < c->world; r++)
			pfds[n++] = (struct pollfd){ .fd = c->fds[r], .events = POLLIN };
	if (n == 0)
		return 0;
	rc = poll(pfds, (nfds_t)n, timeout_ms);
	if (c->rank != 0)
		return rc > 0 ? take_from_zero(c, want_go) : 0;
	for (int i = 0; i < n && rc > 0; i++)
		if (pfds[i].revents && take_from_rank(c, i + 1))
			return -1;
	return judge_stalls(c);
}

int ctl_check(struct ring_ctl *c)
{
	return poll_ctl(c, 0, false) < 0 ? -1 : 0;
}

/* A rank but 0: sends rank 0 its notice: it waits on WAITS_ON, as CAUSE says. */
static int send_notice(struct ring_ctl *c, int waits_on, const char *cause)
{
	struct ctl_msg m = { .type = CTL_STALL, .rank = c->rank, .peer = waits_on };

	snprintf(m.text, sizeof(m.text), "%s", cause);
	if (ctl_msg_send(c->fd, &m, c->timeout_s) == 0)
		return 0;
	ctl_announce(c, 0, "its connection closed: it has stopped (killed, or it failed: see its output)");
	return -1;
}

int ctl_stall(struct ring_ctl *c, int waits_on, const char *fmt, ...)
{
	char cause[CTL_TEXT_LEN], why[2 * CTL_TEXT_LEN];
	va_list ap;

	if (c->failed)
		return -1;
	if (c->waits_on[c->rank] < 0) {
		va_start(ap, fmt);
		vsnprintf(cause, sizeof(cause), fmt, ap);
		va_end(ap);
		show_now("stall", "rank %d has waited %d s on rank %d, which may itself wait on another: "
			 "%s", c->rank, c->timeout_s, waits_on, c->rank == 0 ? "rank 0 follows the "
			 "ranks' notices to the rank that waits on none" : "it tells rank 0, which "
			 "follows the ranks' notices to the rank that waits on none");
		keep_stall(c, c->rank, waits_on, cause);
		if (c->rank != 0 && send_notice(c, waits_on, cause))
			return -1;
	}
	if (c->rank == 0)
		return judge_stalls(c);
	if (ms_since(&c->first_stall) < c->timeout_s * 1000L + VERDICT_GRACE_MS)
		return 0;
	snprintf(why, sizeof(why), "it gave no verdict within %d s of this rank's stall notice (rank %d "
		 "waits on rank %d: %s)", c->timeout_s + VERDICT_GRACE_MS / 1000, c->rank,
		 c->waits_on[c->rank], c->stall_cause[c->rank]);
	ctl_announce(c, 0, why);
	return -1;
}

/*
 * A neighbour's connection ended, as when it exits: perhaps because another
 * rank failed first and told it.  That verdict reaches this rank on the
 * control channel, sent before the neighbour closed anything, so look there
 * for up to NEIGHBOUR_GRACE_MS before naming the neighbour.
 */
void ctl_fail_neighbour(struct ring_ctl *c, int neighbour, const char *fmt, ...)
{
	struct timespec deadline = deadline_in_ms(NEIGHBOUR_GRACE_MS);
	char cause[CTL_TEXT_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	while (!c->failed && c->world > 1 && ms_left(&deadline) > 0)
		poll_ctl(c, ms_left(&deadline), false);
	ctl_fail(c, neighbour, "%s", cause);
}

static bool all_results(const struct ring_ctl *c)
{
	for (int r = 1; r < c->world; r++)
		if (!c->have_result[r])
			return false;
	return true;
}

static int first_without_result(const struct ring_ctl *c)
{
	for (int r = 1; r < c->world; r++)
		if (!c->have_result[r])
			return r;
	return 0;
}

int ctl_gather(struct ring_ctl *c, const struct rank_result *mine, struct rank_result *all)
{
	struct timespec deadline = deadline_in_ms(c->timeout_s * 1000L);
	struct ctl_msg m = { .type = CTL_RESULT, .result = *mine };
	int rc = 0;

	if (c->world == 1) {
		all[0] = *mine;
		return 0;
	}
	if (c->rank != 0) {
		if (ctl_msg_send(c->fd, &m, c->timeout_s)) {
			ctl_announce(c, 0, "its connection closed: it has stopped");
			return -1;
		}
		while (rc == 0) {
			if (ms_left(&deadline) <= 0 &&
			    ctl_stall(c, 0, "it did not let the ranks go on within %d s", c->timeout_s))
				return -1;
			rc = poll_ctl(c, 100, true);
		}
		return rc > 0 ? 0 : -1;
	}
	while (!all_results(c)) {
		if (ms_left(&deadline) <= 0 &&
		    ctl_stall(c, first_without_result(c), "it sent no result within %d s of rank 0's",
			      c->timeout_s))
			return -1;
		if (poll_ctl(c, 100, false))
			return -1;
	}
	all[0] = *mine;
	m = (struct ctl_msg){ .type = CTL_GO };
	for (int r = 1; r < c->world; r++) {
		all[r] = c->results[r];
		c->have_result[r] = false;
		ctl_msg_send(c->fds[r], &m, c->timeout_s);
	}
	return 0;
}

void ctl_close(struct ring_ctl *c)
{
	sock_close(c->fd);
	c->fd = -1;
	for (int r = 0; r < JOB_MAX_RANKS; r++) {
		sock_close(c->fds[r]);
		c->fds[r] = -1;
	}
}
