/* tcp_alltoall.c: step 09's same all-to-all over TCP: a socket per pair of ranks, each block sent and received whole, non-blocking. */
#include "tcp_alltoall.h"
#include "clock.h"
#include "progress.h"
#include "report.h"
#include "sock.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define POLL_SLICE_MS 100

void tcp_a2a_init(struct tcp_a2a *t)
{
	*t = (struct tcp_a2a){ .listen_fd = -1 };
	for (int p = 0; p < MOE_MAX_RANKS; p++)
		t->fd[p] = -1;
}

int tcp_a2a_listen(struct tcp_a2a *t, struct ring_ctl *ctl, void *base, int timeout_s)
{
	t->rank = ctl->rank;
	t->world = ctl->world;
	t->timeout_s = timeout_s;
	t->ctl = ctl;
	t->base = base;
	if (t->world == 1)
		return 0;
	t->listen_fd = sock_listen(0, t->world);
	if (t->listen_fd < 0) {
		report_verb_error("listen (TCP all-to-all)", errno);
		return -1;
	}
	show("tcp mesh", "listening on TCP port %d for the %d higher ranks", tcp_a2a_port(t),
	     t->world - 1 - t->rank);
	return 0;
}

int tcp_a2a_port(const struct tcp_a2a *t)
{
	return t->listen_fd < 0 ? 0 : sock_local_port(t->listen_fd);
}

/* To each lower rank: a connection, and our rank as its first 4 bytes (big-endian). */
static int dial_lower(struct tcp_a2a *t, const struct endpoint *all)
{
	for (int p = 0; p < t->rank; p++) {
		t->fd[p] = mesh_dial(t->ctl, p, &all[p], t->timeout_s);
		if (t->fd[p] < 0)
			return -1;
	}
	return 0;
}

/* The first higher rank not yet connected, to name; -1 if none. */
static int first_unconnected(const struct tcp_a2a *t)
{
	for (int p = t->rank + 1; p < t->world; p++)
		if (t->fd[p] < 0)
			return p;
	return -1;
}

/* From each higher rank: its connection, which says who it is. */
static int accept_higher(struct tcp_a2a *t)
{
	struct timespec deadline = deadline_in(t->timeout_s);

	for (int i = t->rank + 1; i < t->world; i++) {
		int32_t who = -1;
		int fd = mesh_accept(t->listen_fd, &deadline, "TCP mesh port", &who);

		if (fd >= 0 && (who <= t->rank || who >= t->world || t->fd[who] >= 0)) {
			sock_close(fd);
			fd = -1;
		}
		if (fd < 0) {
			ctl_fail(t->ctl, first_unconnected(t), "it did not connect to our TCP mesh "
				 "port within %d s", t->timeout_s);
			return -1;
		}
		t->fd[who] = fd;
	}
	return 0;
}

int tcp_a2a_connect(struct tcp_a2a *t, const struct endpoint *all)
{
	if (t->world == 1)
		return 0;
	if (dial_lower(t, all) || accept_higher(t))
		return -1;
	for (int p = 0; p < t->world; p++)
		if (p != t->rank && sock_set_nonblocking(t->fd[p])) {
			ctl_fail(t->ctl, t->rank, "fcntl O_NONBLOCK failed: %s", strerror(errno));
			return -1;
		}
	show("tcp mesh", "connected: %d sockets here, %d in the job, one per pair: we dialled the "
	     "%d lower ranks, the %d higher ones dialled us", t->world - 1,
	     t->world * (t->world - 1) / 2, t->rank, t->world - 1 - t->rank);
	return 0;
}

static bool move_done(const struct tcp_move *mv)
{
	return mv->sent == mv->out_len && mv->taken == mv->in_len;
}

/* Sends what the socket to P takes; 0, or -1 on a failure (EAGAIN is none). */
static int push(struct tcp_a2a *t, int p, struct tcp_move *mv, struct tcp_stats *st)
{
	ssize_t n = send(t->fd[p], t->base + mv->out + mv->sent, mv->out_len - mv->sent,
			 MSG_NOSIGNAL | MSG_DONTWAIT);

	st->sends++;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	mv->sent += (size_t)n;
	st->bytes_out += (uint64_t)n;
	return 0;
}

/* Reads what has come from P, straight where the block goes; as push, and -1 on a closed peer. */
static int pull(struct tcp_a2a *t, int p, struct tcp_move *mv, struct tcp_stats *st)
{
	ssize_t n = recv(t->fd[p], t->base + mv->in + mv->taken, mv->in_len - mv->taken,
			 MSG_DONTWAIT);

	st->recvs++;
	if (n == 0)
		return -1;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	mv->taken += (size_t)n;
	st->bytes_in += (uint64_t)n;
	return 0;
}

/* One poll over every peer with something left, and a step of each ready one; the peers ready, or -1. */
static int move_once(struct tcp_a2a *t, struct tcp_move *moves, struct tcp_stats *st)
{
	struct pollfd pfd[MOE_MAX_RANKS];
	int ready = 0;

	for (int p = 0; p < t->world; p++) {
		struct tcp_move *mv = &moves[p];

		pfd[p] = (struct pollfd){ .fd = p == t->rank || move_done(mv) ? -1 : t->fd[p],
					  .events = (short)((mv->sent < mv->out_len ? POLLOUT : 0) |
							    (mv->taken < mv->in_len ? POLLIN : 0)) };
	}
	st->polls++;
	if (poll(pfd, (nfds_t)t->world, POLL_SLICE_MS) < 0 && errno != EINTR)
		return -1;
	for (int p = 0; p < t->world; p++) {
		if (!pfd[p].revents)
			continue;
		ready++;
		if (((pfd[p].revents & POLLOUT) && push(t, p, &moves[p], st)) ||
		    ((pfd[p].revents & (POLLIN | POLLHUP | POLLERR)) && pull(t, p, &moves[p], st))) {
			ctl_fail_neighbour(t->ctl, p, "its TCP connection closed or failed in the "
					   "all-to-all");
			return -1;
		}
	}
	return ready;
}

/* The first peer whose block has not all come (else not all gone), to name; -1 if none. */
static int first_waiting(const struct tcp_a2a *t, const struct tcp_move *moves)
{
	for (int p = 0; p < t->world; p++)
		if (p != t->rank && moves[p].taken < moves[p].in_len)
			return p;
	for (int p = 0; p < t->world; p++)
		if (p != t->rank && moves[p].sent < moves[p].out_len)
			return p;
	return -1;
}

int tcp_a2a_exchange(struct tcp_a2a *t, struct tcp_move *moves, struct tcp_stats *st)
{
	struct progress pr;
	int p;

	/* Each look blocks in poll() for a slice: the runtime's progress loop only looks around. */
	progress_start(&pr, t->ctl, PROGRESS_BLOCKED, t->timeout_s);
	while ((p = first_waiting(t, moves)) >= 0) {
		int ready = move_once(t, moves, st), rc;

		if (ready < 0)
			return -1;
		rc = progress_after(&pr, ready > 0);
		if (rc == PROGRESS_STALLED)
			ctl_fail(t->ctl, p, "nothing moved on its TCP connection for %d s: %zu of %zu "
				 "B came from it", t->timeout_s, moves[p].taken, moves[p].in_len);
		if (rc)
			return -1;
	}
	return 0;
}

void tcp_a2a_close(struct tcp_a2a *t)
{
	for (int p = 0; p < MOE_MAX_RANKS; p++)
		sock_close(t->fd[p]);
	sock_close(t->listen_fd);
	tcp_a2a_init(t);
}
