/* tcp_sync.c: step 10's TCP twin (--way tcp): the same plan's runs, over a socket per trainer and serving pair, each run sent and received in plan order, non-blocking. */
#include "tcp_sync.h"
#include "clock.h"
#include "progress.h"
#include "report.h"
#include "sock.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define POLL_SLICE_MS 100
/* The runs one sendmsg or recvmsg takes at most, as an iovec each. */
#define TCP_SYNC_IOV 64

void tcp_sync_init(struct tcp_sync *t)
{
	*t = (struct tcp_sync){ .listen_fd = -1 };
	for (int q = 0; q < SYNC_MAX_RANKS; q++)
		t->fd[q] = -1;
}

/* Whether the plan joins us and rank Q: runs from one of us to the other. */
static bool joined(const struct tcp_sync *t, int q)
{
	int k = t->rank < t->trainers ? t->rank : q, d = t->rank < t->trainers ? q : t->rank;

	return q != t->rank && (k < t->trainers) != (d < t->trainers) && t->p->count[k][d] > 0;
}

int tcp_sync_listen(struct tcp_sync *t, struct ring_ctl *ctl, const struct plan *p, int timeout_s)
{
	int peers = 0;

	t->rank = ctl->rank;
	t->world = ctl->world;
	t->trainers = p->trainers;
	t->timeout_s = timeout_s;
	t->ctl = ctl;
	t->p = p;
	if (t->rank >= t->trainers)
		return 0;
	for (int q = 0; q < t->world; q++)
		peers += joined(t, q);
	t->listen_fd = sock_listen(0, peers ? peers : 1);
	if (t->listen_fd < 0) {
		report_verb_error("listen (TCP weight sync)", errno);
		return -1;
	}
	show("tcp pairs", "listening on TCP port %d for the %d serving ranks we have runs to",
	     tcp_sync_port(t), peers);
	return 0;
}

int tcp_sync_port(const struct tcp_sync *t)
{
	return t->listen_fd < 0 ? 0 : sock_local_port(t->listen_fd);
}

/* A serving rank: to each trainer with runs to us, a connection, and our rank as its first 4 bytes. */
static int dial_trainers(struct tcp_sync *t, const struct endpoint *all)
{
	for (int k = 0; k < t->trainers; k++) {
		if (!joined(t, k))
			continue;
		t->fd[k] = mesh_dial(t->ctl, k, &all[k], t->timeout_s);
		if (t->fd[k] < 0)
			return -1;
	}
	return 0;
}

/* The first serving rank we have runs to and no connection from, to name; -1 if none. */
static int first_unconnected(const struct tcp_sync *t)
{
	for (int q = t->trainers; q < t->world; q++)
		if (joined(t, q) && t->fd[q] < 0)
			return q;
	return -1;
}

/* A trainer: from each serving rank we have runs to, its connection, which says who it is: a number checked. */
static int accept_serving(struct tcp_sync *t)
{
	struct timespec deadline = deadline_in(t->timeout_s);

	while (first_unconnected(t) >= 0) {
		int32_t who = -1;
		int fd = mesh_accept(t->listen_fd, &deadline, "TCP weight sync port", &who);

		if (fd >= 0 && (who < t->trainers || who >= t->world || !joined(t, who) ||
				t->fd[who] >= 0)) {
			sock_close(fd);
			fd = -1;
		}
		if (fd < 0) {
			ctl_fail(t->ctl, first_unconnected(t), "it did not connect to our TCP weight "
				 "sync port within %d s, saying a serving rank we have runs to",
				 t->timeout_s);
			return -1;
		}
		t->fd[who] = fd;
	}
	return 0;
}

int tcp_sync_connect(struct tcp_sync *t, const struct endpoint *all)
{
	int n = 0;

	if (t->rank < t->trainers ? accept_serving(t) : dial_trainers(t, all))
		return -1;
	for (int q = 0; q < t->world; q++) {
		if (t->fd[q] < 0)
			continue;
		n++;
		if (sock_set_nonblocking(t->fd[q])) {
			ctl_fail(t->ctl, t->rank, "fcntl O_NONBLOCK failed: %s", strerror(errno));
			return -1;
		}
	}
	show("tcp pairs", "connected: %d sockets here, one per pair the plan joins (a trainer and a "
	     "serving rank): the serving ranks dialled the trainers", n);
	return 0;
}

/* How far one pair's stream has come: run I of its runs, OFF bytes into it. */
struct cursor {
	uint64_t first, count;	/* the pair's runs in the plan */
	uint64_t i, off;
};

/*
 * Up to TCP_SYNC_IOV iovecs from C on: each run's place at BASE (its source
 * or destination offset).  Its two lengths are one here: --serve-dtype fp8,
 * whose runs are shorter where they land, is refused with --way tcp.
 */
static int fill_iov(const struct tcp_sync *t, const struct cursor *c, uint8_t *base, bool out,
		    struct iovec *iov)
{
	int n = 0;

	for (uint64_t i = c->i; i < c->count && n < TCP_SYNC_IOV; i++, n++) {
		const struct run *r = &t->p->runs[c->first + i];
		uint64_t skip = i == c->i ? c->off : 0;

		iov[n] = (struct iovec){ .iov_base = base + (out ? r->src_off : r->dst_off) + skip,
					 .iov_len = r->dst_len - skip };
	}
	return n;
}

/* Moves C on by N bytes. */
static void advance(const struct tcp_sync *t, struct cursor *c, uint64_t n)
{
	while (n) {
		uint64_t left = t->p->runs[c->first + c->i].dst_len - c->off, step = n < left ? n : left;

		c->off += step;
		n -= step;
		if (c->off == t->p->runs[c->first + c->i].dst_len) {
			c->i++;
			c->off = 0;
		}
	}
}

/* One sendmsg or recvmsg on the socket to Q; 0 (EAGAIN is no failure), or -1 (a closed peer too). */
static int step_pair(struct tcp_sync *t, int q, struct cursor *c, uint8_t *base, bool out,
		     struct tcp_sync_stats *st)
{
	struct iovec iov[TCP_SYNC_IOV];
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = (size_t)fill_iov(t, c, base, out, iov) };
	ssize_t n;

	if (out) {
		n = sendmsg(t->fd[q], &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		st->sends++;
	} else {
		n = recvmsg(t->fd[q], &msg, MSG_DONTWAIT);
		st->recvs++;
		if (n == 0)
			return -1;
	}
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	advance(t, c, (uint64_t)n);
	if (out)
		st->bytes_out += (uint64_t)n;
	else
		st->bytes_in += (uint64_t)n;
	return 0;
}

int tcp_sync_run(struct tcp_sync *t, uint8_t *data, uint64_t slice, int v,
		 struct tcp_sync_stats *st)
{
	bool out = t->rank < t->trainers;
	uint8_t *base = out ? data : data + (uint64_t)(v % 2) * slice;
	struct cursor c[SYNC_MAX_RANKS] = { 0 };
	struct progress pr;

	for (int q = 0; q < t->world; q++)
		if (t->fd[q] >= 0) {
			int k = out ? t->rank : q, d = out ? q : t->rank;

			c[q] = (struct cursor){ .first = t->p->first[k][d], .count = t->p->count[k][d] };
		}
	/* Each look blocks in poll() for a slice: the runtime's progress loop only looks around. */
	progress_start(&pr, t->ctl, PROGRESS_BLOCKED, t->timeout_s);
	for (;;) {
		struct pollfd pfd[SYNC_MAX_RANKS];
		int left = -1, ready = 0;

		for (int q = 0; q < t->world; q++) {
			bool busy = t->fd[q] >= 0 && c[q].i < c[q].count;

			pfd[q] = (struct pollfd){ .fd = busy ? t->fd[q] : -1,
						  .events = out ? POLLOUT : POLLIN };
			if (busy && left < 0)
				left = q;
		}
		if (left < 0)
			return 0;
		st->polls++;
		if (poll(pfd, (nfds_t)t->world, POLL_SLICE_MS) < 0 && errno != EINTR) {
			ctl_fail(t->ctl, t->rank, "poll on its TCP weight sync sockets failed: %s",
				 strerror(errno));
			return -1;
		}
		for (int q = 0; q < t->world; q++) {
			if (!pfd[q].revents)
				continue;
			ready++;
			if (step_pair(t, q, &c[q], base, out, st)) {
				ctl_fail_neighbour(t->ctl, q, "its TCP connection closed or failed "
						   "during version %d", v);
				return -1;
			}
		}
		int rc = progress_after(&pr, ready > 0);

		if (rc == PROGRESS_STALLED)
			ctl_fail(t->ctl, left, "nothing moved on its TCP connection for %d s in version "
				 "%d: run %llu of %llu", t->timeout_s, v,
				 (unsigned long long)c[left].i, (unsigned long long)c[left].count);
		if (rc)
			return -1;
	}
}

void tcp_sync_close(struct tcp_sync *t)
{
	for (int q = 0; q < SYNC_MAX_RANKS; q++)
		sock_close(t->fd[q]);
	sock_close(t->listen_fd);
	tcp_sync_init(t);
}
