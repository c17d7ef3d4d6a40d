/* rendezvous.c: stage 7: the launcher's rank and world size, rank 0's rendezvous, and the control channel that ends every rank on a failure. */
#include "rendezvous.h"
#include "clock.h"
#include "report.h"
#include "sock.h"
#include "stop.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/*
 * One message format, versioned and checked field by field as step 03's:
 * magic, version, type, rank, world size, port, failed rank, three counts,
 * a text, and two of step 03's exchange messages.
 */
#define CTL_MAGIC "RDAR"
#define CTL_VERSION 1
#define CTL_TEXT_LEN 448
#define CTL_MSG_LEN (48 + CTL_TEXT_LEN + 2 * EXCHANGE_MSG_LEN)
#define NEIGHBOUR_GRACE_MS 500

enum ctl_type {
	CTL_HELLO = 'H',	/* a rank to rank 0: who it is, its options and its two QPs */
	CTL_NEIGHBOURS = 'N',	/* rank 0 to a rank: its neighbours' QPs and TCP address */
	CTL_ABORT = 'A',	/* either way: rank FAILED failed, TEXT says why */
	CTL_RESULT = 'R',	/* a rank to rank 0: one size done, its time, wrong elements and bytes */
	CTL_GO = 'G',		/* rank 0 to every rank: every rank is done, go on */
};

struct ctl_msg {
	enum ctl_type type;
	int rank, world, port, failed;
	struct rank_result result;
	char text[CTL_TEXT_LEN];
	struct peer_info qp[2];
};

/* The launchers whose variables give a rank and a world size, innermost first. */
static const struct launcher {
	const char *name, *rank_var, *size_var;
} launchers[] = {
	{ "torchrun", "RANK", "WORLD_SIZE" },
	{ "Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
	{ "MPICH", "PMI_RANK", "PMI_SIZE" },
	{ "Slurm", "SLURM_PROCID", "SLURM_NTASKS" },
};

static void put_be32(uint8_t *p, uint32_t v) { v = htobe32(v); memcpy(p, &v, 4); }
static void put_be64(uint8_t *p, uint64_t v) { v = htobe64(v); memcpy(p, &v, 8); }
static uint32_t get_be32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return be32toh(v); }
static uint64_t get_be64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return be64toh(v); }

static int env_int(const struct launcher *ln, const char *var, long max, int *out)
{
	const char *text = getenv(var);
	char what[64];

	snprintf(what, sizeof(what), "%s (%s)", var, ln->name);
	return cli_parse_int(what, text, 0, max, out);
}

int launch_resolve(const struct ring_opts *opts, const struct cli_common *common, struct launch *l)
{
	*l = (struct launch){ .rank = opts->rank, .world = opts->world, .source = "command line",
			      .port = common->tcp_port };
	if ((opts->rank < 0) != (opts->world < 0)) {
		report_error("give --rank and --world-size together, or neither (then a launcher's "
			     "variables give them)");
		return -1;
	}
	for (size_t i = 0; l->rank < 0 && i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const struct launcher *ln = &launchers[i];

		if (!getenv(ln->rank_var) || !getenv(ln->size_var))
			continue;
		if (env_int(ln, ln->rank_var, 1 << 20, &l->rank) ||
		    env_int(ln, ln->size_var, MAX_WORLD, &l->world))
			return -1;
		if (l->world < 1) {
			report_error("%s (%s) is 0: a job has at least one rank", ln->size_var, ln->name);
			return -1;
		}
		l->source = ln->name;
		show("launcher", "%s: rank %d of %d, from %s and %s", ln->name, l->rank, l->world,
		     ln->rank_var, ln->size_var);
	}
	if (l->rank < 0) {
		report_error("no rank: give --rank R --world-size N, or run under torchrun, mpirun or "
			     "srun, whose variables (RANK and WORLD_SIZE, OMPI_COMM_WORLD_RANK, "
			     "PMI_RANK, SLURM_PROCID) say it");
		return -1;
	}
	if (!strcmp(l->source, "command line"))
		show("launcher", "none: rank %d of %d, from --rank and --world-size", l->rank, l->world);
	l->host = common->host ? common->host : getenv("MASTER_ADDR");
	if (l->rank > 0 && l->world > 1 && !l->host) {
		report_error("rank %d: no address for rank 0's rendezvous: give it as HOST or set "
			     "MASTER_ADDR (torchrun sets it; with mpirun add -x MASTER_ADDR=HOST)", l->rank);
		return -1;
	}
	if (l->world > 1)
		show("rendezvous", "rank 0 at %s, TCP port %d (-p; torchrun's own store holds "
		     "MASTER_PORT)", l->rank == 0 ? "this process" : l->host, l->port);
	return 0;
}

static void encode(const struct ctl_msg *m, uint8_t out[CTL_MSG_LEN])
{
	memset(out, 0, CTL_MSG_LEN);
	memcpy(out, CTL_MAGIC, 4);
	out[4] = CTL_VERSION;
	out[5] = (uint8_t)m->type;
	put_be32(out + 8, (uint32_t)m->rank);
	put_be32(out + 12, (uint32_t)m->world);
	put_be32(out + 16, (uint32_t)m->port);
	put_be32(out + 20, (uint32_t)m->failed);
	put_be64(out + 24, m->result.time_ns);
	put_be64(out + 32, m->result.wrong);
	put_be64(out + 40, m->result.bytes);
	memcpy(out + 48, m->text, strnlen(m->text, CTL_TEXT_LEN - 1));
	if (m->type == CTL_HELLO || m->type == CTL_NEIGHBOURS) {
		exchange_encode(&m->qp[0], out + 48 + CTL_TEXT_LEN);
		exchange_encode(&m->qp[1], out + 48 + CTL_TEXT_LEN + EXCHANGE_MSG_LEN);
	}
}

static bool known_type(uint8_t t)
{
	return t == CTL_HELLO || t == CTL_NEIGHBOURS || t == CTL_ABORT || t == CTL_RESULT || t == CTL_GO;
}

/* Checks and decodes a message; returns 0, or -1 after saying which field is bad. */
static int decode(const uint8_t in[CTL_MSG_LEN], struct ctl_msg *m)
{
	if (memcmp(in, CTL_MAGIC, 4) || in[4] != CTL_VERSION || !known_type(in[5]) || in[6] || in[7] ||
	    in[48 + CTL_TEXT_LEN - 1]) {
		report_error("a rendezvous message with a bad %s: is every rank this program, of this "
			     "version, on the same -p?", memcmp(in, CTL_MAGIC, 4) ? "magic" :
			     in[4] != CTL_VERSION ? "version" : !known_type(in[5]) ? "type" : "padding or text");
		return -1;
	}
	*m = (struct ctl_msg){
		.type = (enum ctl_type)in[5],
		.rank = (int)get_be32(in + 8), .world = (int)get_be32(in + 12),
		.port = (int)get_be32(in + 16), .failed = (int)get_be32(in + 20),
		.result = { get_be64(in + 24), get_be64(in + 32), get_be64(in + 40) },
	};
	memcpy(m->text, in + 48, CTL_TEXT_LEN);
	if ((m->type == CTL_HELLO || m->type == CTL_NEIGHBOURS) &&
	    (exchange_decode(in + 48 + CTL_TEXT_LEN, &m->qp[0]) ||
	     exchange_decode(in + 48 + CTL_TEXT_LEN + EXCHANGE_MSG_LEN, &m->qp[1])))
		return -1;
	return 0;
}

/* Waits for FD to be readable; 1, 0 at the deadline, -1 on a stop signal (not reported). */
static int wait_readable(int fd, const struct timespec *deadline)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	long left;

	for (;;) {
		if (stop_requested())
			return -1;
		left = ms_left(deadline);
		if (left <= 0)
			return 0;
		if (poll(&pfd, 1, left > 100 ? 100 : (int)left) > 0)
			return 1;
	}
}

/* Writes a whole message; quietly: a failure here is a rank gone, said elsewhere. */
static int send_msg(int fd, const struct ctl_msg *m)
{
	uint8_t out[CTL_MSG_LEN];
	size_t done = 0;

	encode(m, out);
	while (done < sizeof(out)) {
		ssize_t n = send(fd, out + done, sizeof(out) - done, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* Reads one message within TIMEOUT_MS: 0, 1 at the timeout, -1 when the peer closed or sent garbage. */
static int recv_msg(int fd, struct ctl_msg *m, long timeout_ms)
{
	struct timespec deadline = deadline_in_ms(timeout_ms);
	uint8_t in[CTL_MSG_LEN];
	size_t have = 0;

	while (have < sizeof(in)) {
		int rc = wait_readable(fd, &deadline);
		ssize_t n;

		if (rc <= 0)
			return rc == 0 ? 1 : -1;
		n = recv(fd, in + have, sizeof(in) - have, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		have += (size_t)n;
	}
	return decode(in, m);
}

void ctl_init(struct ring_ctl *c, const struct launch *l, int timeout_s)
{
	*c = (struct ring_ctl){ .rank = l->rank, .world = l->world, .timeout_s = timeout_s,
				.host = l->host, .fd = -1 };
	for (int r = 0; r < MAX_WORLD; r++)
		c->fds[r] = -1;
}

static void announce(struct ring_ctl *c, int failed, const char *cause)
{
	if (!c->failed)
		report_error("rank %d: %s", failed, cause);
	c->failed = true;
}

/* Rank 0: tells every rank but SKIP that rank FAILED failed. */
static void broadcast_abort(struct ring_ctl *c, int failed, const char *cause, int skip)
{
	struct ctl_msg m = { .type = CTL_ABORT, .failed = failed };

	snprintf(m.text, sizeof(m.text), "%s", cause);
	for (int r = 1; r < c->world; r++)
		if (r != skip && c->fds[r] >= 0)
			send_msg(c->fds[r], &m);
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
	announce(c, failed, cause);
	if (c->rank == 0) {
		broadcast_abort(c, failed, cause, -1);
	} else if (c->fd >= 0) {
		struct ctl_msg m = { .type = CTL_ABORT, .failed = failed };

		snprintf(m.text, sizeof(m.text), "%s", cause);
		send_msg(c->fd, &m);
	}
}

/* The peer of a connection, as text, for messages and for the TCP ring's address. */
static void peer_address(int fd, char *buf, size_t len)
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

/* Rank 0's checks of one hello against its own and those before it; returns the cause, or NULL. */
static const char *check_hello(const struct hello *h, const struct hello *zero, const bool *came,
			       char *why, size_t len)
{
	if (h->rank >= zero->world)
		snprintf(why, len, "rank %d is past the world size %d (ranks are 0 to %d)", h->rank,
			 zero->world, zero->world - 1);
	else if (h->world != zero->world)
		snprintf(why, len, "it was given world size %d, rank 0 world size %d", h->world,
			 zero->world);
	else if (came[h->rank])
		snprintf(why, len, "two processes claim rank %d (the second from %s)", h->rank, h->addr);
	else if (strcmp(h->options, zero->options))
		snprintf(why, len, "it was given other options than rank 0: %s; rank 0: %s",
			 h->options, zero->options);
	else
		return NULL;
	return why;
}

struct gathering {
	struct hello hellos[MAX_WORLD];
	bool came[MAX_WORLD];
	int accepted[2 * MAX_WORLD];	/* every connection taken, to tell of a failure */
	int n_accepted;
	int failed;			/* the rank named in the failure, or -1 */
	char why[CTL_TEXT_LEN];
};

/* Takes one connection and its hello, and checks it; a failure shortens the wait to a second. */
static void take_hello(struct ring_ctl *c, int lfd, struct gathering *g, struct timespec *deadline)
{
	struct ctl_msg m;
	struct hello h;
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		return;
	g->accepted[g->n_accepted++] = fd;
	if (recv_msg(fd, &m, c->timeout_s * 1000L))
		return;
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
		/* Ranks still on their way are told too, if they come within a second. */
		if (ms_left(deadline) > 1000)
			*deadline = deadline_in_ms(1000);
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
		if (send_msg(c->fds[r], &m)) {
			ctl_fail(c, r, "it closed its connection to rank 0 during the rendezvous");
			return -1;
		}
	}
	neighbours_of(g, 0, c->world, mine);
	show("rendezvous", "all %d ranks came; each was sent its neighbours' QPs", c->world);
	return 0;
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
	while (g->n_accepted < c->world - 1 && wait_readable(lfd, &deadline) > 0)
		take_hello(c, lfd, g, &deadline);
	if (stop_requested() && g->failed < 0) {
		g->failed = 0;
		snprintf(g->why, sizeof(g->why), "stopped by %s", stop_signal_name());
	}
	name_missing(c, g);
	if (g->failed >= 0) {
		for (int r = 0; r < MAX_WORLD; r++)
			c->fds[r] = -1;
		announce(c, g->failed, g->why);
		for (int i = 0; i < g->n_accepted; i++) {
			struct ctl_msg m = { .type = CTL_ABORT, .failed = g->failed };

			snprintf(m.text, sizeof(m.text), "%s", g->why);
			send_msg(g->accepted[i], &m);
			close(g->accepted[i]);
		}
	} else {
		rc = answer_all(c, g, out);
	}
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
			announce(c, 0, "its address does not resolve");
		else
			ctl_fail(c, 0, "no rendezvous at %s port %d within %d s (%s): is rank 0 running, "
				 "with the same -p?", l->host, l->port, c->timeout_s, strerror(errno));
		return -1;
	}
	if (failure) {
		/* Told instead of a hello, so that rank 0 tells every rank. */
		m = (struct ctl_msg){ .type = CTL_ABORT, .failed = l->rank };
		snprintf(m.text, sizeof(m.text), "%s", failure);
		announce(c, l->rank, failure);
	} else {
		hello_to_msg(mine, &m);
	}
	if (send_msg(c->fd, &m) || failure) {
		announce(c, 0, "it closed the rendezvous connection at once");
		return -1;
	}
	/* Rank 0 waits up to -t for every rank; its answer comes after that at the latest. */
	rc = recv_msg(c->fd, &m, (c->timeout_s + 2) * 1000L);
	if (rc == 0 && m.type == CTL_ABORT) {
		announce(c, m.failed, m.text);
		return -1;
	}
	if (rc != 0 || m.type != CTL_NEIGHBOURS) {
		announce(c, 0, rc == 1 ? "no answer from the rendezvous in time" :
			 stop_requested() ? "(we were stopped by a signal)" :
			 "it closed the rendezvous connection without an answer (see its output)");
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
	lfd = sock_listen(l->port, MAX_WORLD);
	if (lfd < 0 && errno == EADDRINUSE) {
		/* Another rank 0, or another job: joining it as a rank tells which. */
		show("rendezvous", "TCP port %d is taken: joining whoever holds it as rank 0 does", l->port);
		return join_rendezvous(c, &(struct launch){ .rank = 0, .world = l->world,
							      .host = "127.0.0.1", .port = l->port },
				       mine, failure, out);
	}
	if (lfd < 0) {
		announce(c, 0, "cannot listen on the rendezvous port");
		report_verb_error("listen", errno);
		return -1;
	}
	rc = serve_rendezvous(c, lfd, mine, failure, out);
	close(lfd);
	return rc;
}

/* Rank 0: what one rank's connection holds now; 0, or -1 once a failure is printed and told. */
static int take_from_rank(struct ring_ctl *c, int r)
{
	struct ctl_msg m;

	if (recv_msg(c->fds[r], &m, c->timeout_s * 1000L)) {
		close(c->fds[r]);
		c->fds[r] = -1;
		ctl_fail(c, r, "it stopped: its connection to rank 0 closed (killed, or it failed: "
			 "see its output)");
		return -1;
	}
	if (m.type == CTL_ABORT) {
		announce(c, m.failed, m.text);
		broadcast_abort(c, m.failed, m.text, r);
		return -1;
	}
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

	if (recv_msg(c->fd, &m, c->timeout_s * 1000L)) {
		announce(c, 0, stop_requested() ? "(we were stopped by a signal)" :
			 "its connection closed: it has stopped (killed, or it failed: see its output)");
		return -1;
	}
	if (m.type == CTL_ABORT) {
		announce(c, m.failed, m.text);
		return -1;
	}
	if (m.type != CTL_GO || !want_go) {
		announce(c, 0, "it sent a message out of turn");
		return -1;
	}
	return 1;
}

/* Polls the connections to rank 0 (or rank 0's to every rank) for TIMEOUT_MS; -1 on a failure. */
static int poll_ctl(struct ring_ctl *c, int timeout_ms, bool want_go)
{
	struct pollfd pfds[MAX_WORLD];
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
	if (rc <= 0)
		return 0;
	if (c->rank != 0)
		return take_from_zero(c, want_go);
	for (int i = 0; i < n; i++)
		if (pfds[i].revents && take_from_rank(c, i + 1))
			return -1;
	return 0;
}

int ctl_check(struct ring_ctl *c)
{
	return poll_ctl(c, 0, false) < 0 ? -1 : 0;
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
		if (send_msg(c->fd, &m)) {
			announce(c, 0, "its connection closed: it has stopped");
			return -1;
		}
		while (rc == 0 && ms_left(&deadline) > 0)
			rc = poll_ctl(c, 100, true);
		if (rc == 0)
			ctl_fail(c, 0, "it did not let the ranks go on within %d s", c->timeout_s);
		return rc > 0 ? 0 : -1;
	}
	while (!all_results(c) && ms_left(&deadline) > 0)
		if (poll_ctl(c, 100, false))
			return -1;
	if (!all_results(c)) {
		ctl_fail(c, first_without_result(c), "it sent no result within %d s of rank 0's",
			 c->timeout_s);
		return -1;
	}
	all[0] = *mine;
	m = (struct ctl_msg){ .type = CTL_GO };
	for (int r = 1; r < c->world; r++) {
		all[r] = c->results[r];
		c->have_result[r] = false;
		send_msg(c->fds[r], &m);
	}
	return 0;
}

void ctl_close(struct ring_ctl *c)
{
	sock_close(c->fd);
	c->fd = -1;
	for (int r = 0; r < MAX_WORLD; r++) {
		sock_close(c->fds[r]);
		c->fds[r] = -1;
	}
}
