/* rendezvous.c: the job runtime: rank 0 gathers every rank's hello, checks them, and answers each rank with its neighbours' QPs. */
#include "rendezvous.h"
#include "clock.h"
#include "report.h"
#include "sock.h"
#include "stop.h"
#include "wait.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void peer_address(int fd, char *buf, size_t len)
{
	struct sockaddr_storage a;
	socklen_t alen = sizeof(a);

	snprintf(buf, len, "?");
	if (getpeername(fd, (struct sockaddr *)&a, &alen))
		return;
	if (a.ss_family == AF_INET6) {
		const struct in6_addr *in6 = &((struct sockaddr_in6 *)&a)->sin6_addr;

		/* An IPv4 client of our dual-stack socket: its plain IPv4 address. */
		if (IN6_IS_ADDR_V4MAPPED(in6))
			inet_ntop(AF_INET, &in6->s6_addr[12], buf, (socklen_t)len);
		else
			inet_ntop(AF_INET6, in6, buf, (socklen_t)len);
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&a)->sin_addr, buf, (socklen_t)len);
	}
}

static void hello_to_msg(const struct hello *h, struct ctl_msg *m)
{
	*m = (struct ctl_msg){ .type = CTL_HELLO, .rank = h->rank, .world = h->world,
			       .port = h->tcp_port, .qp = { h->to_next, h->from_prev } };
	snprintf(m->text, sizeof(m->text), "%s", h->options);
}

/* Whether AT starts an option's name ('-' or "--", then a letter), not a value such as "-1". */
static bool option_name(const char *at)
{
	if (at[0] != '-')
		return false;
	if (at[1] == '-')
		at++;
	return isalpha((unsigned char)at[1]);
}

/* The length of the option that starts AT, its values included (up to the next name), or 0 at the end. */
static size_t option_length(const char *at)
{
	size_t n = 0;

	while (at[n] && !(n && at[n] == ' ' && option_name(&at[n + 1])))
		n++;
	return n;
}

static const char *skip_spaces(const char *at)
{
	while (*at == ' ')
		at++;
	return at;
}

/*
 * The first option in which A (a rank's options) and ZERO (rank 0's)
 * differ, for the line that names the rank: "its --name 2, rank 0's
 * --name 1"; where one side has no option left, "none".
 */
static void first_difference(const char *a, const char *zero, char *out, size_t len)
{
	for (a = skip_spaces(a), zero = skip_spaces(zero);; a = skip_spaces(a), zero = skip_spaces(zero)) {
		int na = (int)option_length(a), nz = (int)option_length(zero);

		if (na != nz || strncmp(a, zero, (size_t)na)) {
			snprintf(out, len, "its %.*s, rank 0's %.*s", na ? na : 4, na ? a : "none",
				 nz ? nz : 4, nz ? zero : "none");
			return;
		}
		if (!na) {
			snprintf(out, len, "none: the same options, spaced otherwise");
			return;
		}
		a += na;
		zero += nz;
	}
}

/*
 * The cause for a rank given OPTIONS other than rank 0's ZERO: both texts
 * and the first option that differs, or, where they do not fit one line,
 * that option alone.
 */
static void name_difference(const char *options, const char *zero, char *why, size_t len)
{
	char field[2 * OPTIONS_TEXT_LEN], both[3 * OPTIONS_TEXT_LEN];
	int n;

	first_difference(options, zero, field, sizeof(field));
	n = snprintf(both, sizeof(both), "it was given other options than rank 0: %s; rank 0: %s; "
		     "the first that differs: %s", options, zero, field);
	if (n >= 0 && (size_t)n < len && (size_t)n < sizeof(both))
		memcpy(why, both, (size_t)n + 1);
	else
		snprintf(why, len, "it was given other options than rank 0; the first that differs: "
			 "%.300s", field);
}

/* Rank 0's checks of one hello against its own and those before it; returns the cause, or NULL. */
static const char *check_hello(const struct hello *h, const struct hello *zero, const bool *came,
			       char *why, size_t len)
{
	/* A negative rank never gets here: ctl_msg.c's decode refused it. */
	if (h->rank >= zero->world)
		snprintf(why, len, "rank %d is past the world size %d (ranks are 0 to %d)", h->rank,
			 zero->world, zero->world - 1);
	else if (h->world != zero->world)
		snprintf(why, len, "it was given world size %d, rank 0 world size %d", h->world,
			 zero->world);
	else if (came[h->rank])
		snprintf(why, len, "two processes claim rank %d (the second from %s)", h->rank, h->addr);
	else if (strcmp(h->options, zero->options))
		name_difference(h->options, zero->options, why, len);
	else
		return NULL;
	return why;
}

struct gathering {
	struct hello hellos[JOB_MAX_RANKS];
	bool came[JOB_MAX_RANKS];
	int accepted[2 * JOB_MAX_RANKS];	/* every connection taken, to tell of a failure */
	int n_accepted;
	int strangers;			/* of those, the ones that sent no message of ours */
	int n_told;			/* of those, the ones already told of the failure and closed */
	int failed;			/* the rank named in the failure, or -1 */
	char why[CTL_TEXT_LEN];
};

/* Takes one connection and its hello, and checks it. */
static void take_hello(struct ring_ctl *c, int lfd, struct gathering *g)
{
	struct ctl_msg m;
	struct hello h;
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		return;
	g->accepted[g->n_accepted++] = fd;
	/* Not one of our ranks (the line above says what was wrong): a rank may still come. */
	if (ctl_msg_recv(fd, &m, c->timeout_s * 1000L)) {
		g->strangers++;
		return;
	}
	if (m.type == CTL_ABORT && g->failed < 0) {
		g->failed = m.failed;
		snprintf(g->why, sizeof(g->why), "%s", m.text);
	}
	if (m.type != CTL_HELLO)
		return;
	h = (struct hello){ .rank = m.rank, .world = m.world, .tcp_port = m.port,
			    .to_next = m.qp[0], .from_prev = m.qp[1] };
	snprintf(h.options, sizeof(h.options), "%.*s", OPTIONS_TEXT_LEN - 1, m.text);
	peer_address(fd, h.addr, sizeof(h.addr));
	if (g->failed < 0 && check_hello(&h, &g->hellos[0], g->came, g->why, sizeof(g->why))) {
		g->failed = h.rank;
		return;
	}
	if (g->failed >= 0)
		return;
	g->hellos[h.rank] = h;
	g->came[h.rank] = true;
	c->fds[h.rank] = fd;
	show("rendezvous", "rank %d came from %s", h.rank, h.addr);
}

static void name_missing(struct ring_ctl *c, struct gathering *g)
{
	for (int r = 1; r < c->world && g->failed < 0; r++)
		if (!g->came[r]) {
			g->failed = r;
			snprintf(g->why, sizeof(g->why), "it never came to the rendezvous within %d s "
				 "(was it started, with rank 0's address and the same -p?)", c->timeout_s);
		}
}

static void neighbours_of(const struct gathering *g, int rank, int world, struct neighbours *n)
{
	int prev = (rank + world - 1) % world, next = (rank + 1) % world;

	*n = (struct neighbours){ .prev_qp = g->hellos[prev].to_next,
				  .next_qp = g->hellos[next].from_prev,
				  .next_tcp_port = g->hellos[next].tcp_port };
	/* Rank 0's address is the one the rank reached it at: it says "" and the rank fills it in. */
	if (next != 0)
		snprintf(n->next_addr, sizeof(n->next_addr), "%s", g->hellos[next].addr);
}

static int answer_all(struct ring_ctl *c, struct gathering *g, struct neighbours *mine)
{
	for (int r = 1; r < c->world; r++) {
		struct neighbours n;
		struct ctl_msg m = { .type = CTL_NEIGHBOURS };

		neighbours_of(g, r, c->world, &n);
		m.qp[0] = n.prev_qp;
		m.qp[1] = n.next_qp;
		m.port = n.next_tcp_port;
		snprintf(m.text, sizeof(m.text), "%s", n.next_addr);
		if (ctl_msg_send(c->fds[r], &m, c->timeout_s)) {
			ctl_fail(c, r, "it closed its connection to rank 0 during the rendezvous");
			return -1;
		}
	}
	neighbours_of(g, 0, c->world, mine);
	show("rendezvous", "all %d ranks came; each was sent its neighbours' QPs", c->world);
	return 0;
}

/* Rank 0, once something failed: tells every connection taken and not yet told, and closes it. */
static void tell_failure(struct ring_ctl *c, struct gathering *g)
{
	struct ctl_msg m = ctl_msg_abort(g->failed, g->why);

	for (; g->n_told < g->n_accepted; g->n_told++) {
		ctl_msg_send(g->accepted[g->n_told], &m, c->timeout_s);
		close(g->accepted[g->n_told]);
	}
}

/* Rank 0, on a failure: prints it and tells the connections still open; no rank goes on. */
static void abort_rendezvous(struct ring_ctl *c, struct gathering *g)
{
	for (int r = 0; r < JOB_MAX_RANKS; r++)
		c->fds[r] = -1;
	ctl_announce(c, g->failed, g->why);
	tell_failure(c, g);
}

static int serve_rendezvous(struct ring_ctl *c, int lfd, const struct hello *mine,
			    const char *failure, struct neighbours *out)
{
	struct timespec deadline = deadline_in_ms(c->timeout_s * 1000L);
	struct gathering *g = calloc(1, sizeof(*g));
	int rc = -1;

	if (!g) {
		report_error("no memory for the rendezvous");
		return -1;
	}
	g->failed = failure ? 0 : -1;
	snprintf(g->why, sizeof(g->why), "%s", failure ? failure : "");
	g->hellos[0] = *mine;
	g->came[0] = true;
	show("rendezvous", "rank 0 listens on TCP port %d for %d more ranks, up to %d s",
	     sock_local_port(lfd), c->world - 1, c->timeout_s);
	/*
	 * After a failure the ranks that came are told at once, and the wait goes
	 * on to the same deadline, so that every rank started within -t learns
	 * whom to blame: a rank still on its way (a Python process importing
	 * ctypes on a loaded machine took over a second) would otherwise find no
	 * listener, and blame rank 0.  A connection that sends no message of ours
	 * takes no rank's place: the wait goes on for the ranks, up to the
	 * connections rank 0 can keep.
	 */
	while (g->n_accepted - g->strangers < c->world - 1 &&
	       g->n_accepted < (int)(sizeof(g->accepted) / sizeof(g->accepted[0])) &&
	       wait_fd(lfd, POLLIN, &deadline, "rendezvous port") == WAIT_READY) {
		take_hello(c, lfd, g);
		if (g->failed >= 0)
			tell_failure(c, g);
	}
	if (stop_requested() && g->failed < 0) {
		g->failed = 0;
		snprintf(g->why, sizeof(g->why), "stopped by %s", stop_signal_name());
	}
	name_missing(c, g);
	if (g->failed >= 0)
		abort_rendezvous(c, g);
	else
		rc = answer_all(c, g, out);
	free(g);
	return rc;
}

/* A rank's side: send the hello to rank 0 and wait for its neighbours, or for the failure. */
static int join_rendezvous(struct ring_ctl *c, const struct launch *l, const struct hello *mine,
			   const char *failure, struct neighbours *out)
{
	struct ctl_msg m;
	int gai_err, rc;

	show("rendezvous", "connecting to rank 0 at %s port %d, for up to %d s", l->host, l->port,
	     c->timeout_s);
	c->fd = sock_dial(l->host, l->port, c->timeout_s, &gai_err);
	if (c->fd < 0) {
		if (gai_err)
			ctl_announce(c, 0, "its address does not resolve");
		else
			ctl_fail(c, 0, "no rendezvous at %s port %d within %d s (%s): is rank 0 running, "
				 "with the same -p?", l->host, l->port, c->timeout_s, strerror(errno));
		return -1;
	}
	if (failure) {
		/* Told instead of a hello, so that rank 0 tells every rank. */
		m = ctl_msg_abort(l->rank, failure);
		ctl_announce(c, l->rank, failure);
	} else {
		hello_to_msg(mine, &m);
	}
	if (ctl_msg_send(c->fd, &m, c->timeout_s) || failure) {
		ctl_announce(c, 0, "it closed the rendezvous connection at once");
		return -1;
	}
	/* Rank 0 waits up to -t for every rank; its answer comes after that at the latest. */
	rc = ctl_msg_recv(c->fd, &m, (c->timeout_s + 2) * 1000L);
	if (rc == 0 && m.type == CTL_ABORT) {
		ctl_announce(c, m.failed, m.text);
		return -1;
	}
	if (rc != 0 || m.type != CTL_NEIGHBOURS) {
		ctl_announce(c, 0, rc == SOCK_TIMEOUT ? "no answer from the rendezvous in time" :
			     rc == SOCK_STOPPED ? "(we were stopped by a signal)" :
			     rc == SOCK_CLOSED ?
			     "it closed the rendezvous connection without an answer (see its output)" :
			     rc < 0 ? "its answer is not a rendezvous message (see the line above)" :
			     "it answered with a message out of turn");
		return -1;
	}
	*out = (struct neighbours){ .prev_qp = m.qp[0], .next_qp = m.qp[1], .next_tcp_port = m.port };
	snprintf(out->next_addr, sizeof(out->next_addr), "%.*s", ADDR_TEXT_LEN - 1,
		 m.text[0] ? m.text : l->host);
	show("rendezvous", "rank 0 sent our neighbours: rank %d before us, rank %d after",
	     (l->rank + l->world - 1) % l->world, (l->rank + 1) % l->world);
	return 0;
}

int rendezvous(struct ring_ctl *c, const struct launch *l, const struct hello *mine,
	       const char *failure, struct neighbours *out)
{
	int lfd, rc;

	/* A ring of one has no neighbour to meet. */
	if (l->world == 1)
		return failure ? -1 : 0;
	if (l->rank != 0)
		return join_rendezvous(c, l, mine, failure, out);
	lfd = sock_listen(l->port, JOB_MAX_RANKS);
	if (lfd < 0 && errno == EADDRINUSE) {
		/* Another rank 0, or another job: joining it as a rank tells which. */
		show("rendezvous", "TCP port %d is taken: joining whoever holds it as rank 0 does", l->port);
		return join_rendezvous(c, &(struct launch){ .rank = 0, .world = l->world,
							      .host = "127.0.0.1", .port = l->port },
				       mine, failure, out);
	}
	if (lfd < 0) {
		ctl_announce(c, 0, "cannot listen on the rendezvous port");
		report_verb_error("listen", errno);
		return -1;
	}
	rc = serve_rendezvous(c, lfd, mine, failure, out);
	close(lfd);
	return rc;
}
