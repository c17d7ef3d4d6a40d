/* tcp_ring.c: stage 7: the same ring over TCP sockets, the same pieces and pipelining, non-blocking both ways. */
#include "tcp_ring.h"
#include "clock.h"
#include "progress.h"
#include "report.h"
#include "sock.h"
#include "wait.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define POLL_SLICE_MS 100

int tcp_ring_listen(struct tcp_ring *t, int rank, int world, void *data, size_t piece_bytes)
{
	*t = (struct tcp_ring){ .listen_fd = -1, .next_fd = -1, .prev_fd = -1, .rank = rank,
				.world = world, .data = data, .stage_len = piece_bytes };
	if (world == 1)
		return 0;
	t->stage = malloc(piece_bytes);
	if (!t->stage) {
		report_error("no memory for the TCP ring's %zu-byte piece", piece_bytes);
		return -1;
	}
	t->listen_fd = sock_listen(0, 1);
	if (t->listen_fd < 0) {
		report_verb_error("listen (TCP ring)", errno);
		return -1;
	}
	show("tcp ring", "listening on TCP port %d for the previous rank", sock_local_port(t->listen_fd));
	return 0;
}

int tcp_ring_port(const struct tcp_ring *t)
{
	return t->listen_fd < 0 ? 0 : sock_local_port(t->listen_fd);
}

int tcp_ring_connect(struct tcp_ring *t, const struct neighbours *nb, struct ring_ctl *ctl,
		     int timeout_s)
{
	struct timespec deadline;
	int gai_err, next = (t->rank + 1) % t->world, prev = (t->rank + t->world - 1) % t->world;

	if (t->world == 1)
		return 0;
	/* The listener's backlog takes our connection before the next rank accepts it: no deadlock. */
	t->next_fd = sock_dial(nb->next_addr, nb->next_tcp_port, timeout_s, &gai_err);
	if (t->next_fd < 0) {
		ctl_fail(ctl, next, "its TCP ring port %s:%d took no connection within %d s",
			 nb->next_addr, nb->next_tcp_port, timeout_s);
		return -1;
	}
	deadline = deadline_in(timeout_s);
	if (wait_fd(t->listen_fd, POLLIN, &deadline, "TCP ring port") != WAIT_READY ||
	    (t->prev_fd = accept(t->listen_fd, NULL, NULL)) < 0) {
		ctl_fail(ctl, prev, "it did not connect to our TCP ring port within %d s", timeout_s);
		return -1;
	}
	if (sock_set_nonblocking(t->next_fd) || sock_set_nonblocking(t->prev_fd)) {
		ctl_fail(ctl, t->rank, "fcntl O_NONBLOCK failed: %s", strerror(errno));
		return -1;
	}
	show("tcp ring", "connected: to rank %d at %s port %d, from rank %d", next, nb->next_addr,
	     nb->next_tcp_port, prev);
	return 0;
}

/* Where a run stands: the piece being sent and how much of it, the piece coming in and how much. */
struct tcp_run {
	int sent, taken;
	size_t sent_off, taken_off;
};

/* Sends what the socket takes of the current piece; 1 when the piece is done, 0 if not, -1 on error. */
static int push(struct tcp_ring *t, const struct piece *pc, struct tcp_run *run)
{
	size_t bytes = pc->elems * ELEM_SIZE;
	ssize_t n = send(t->next_fd, (char *)t->data + pc->first * ELEM_SIZE + run->sent_off,
			 bytes - run->sent_off, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	run->sent_off += (size_t)n;
	if (run->sent_off < bytes)
		return 0;
	run->sent_off = 0;
	run->sent++;
	return 1;
}

/* Reads what has come of the current piece and applies it once whole; as push. */
static int pull(struct tcp_ring *t, const struct ring_layout *l, const struct piece *pc,
		struct tcp_run *run)
{
	size_t bytes = pc->elems * ELEM_SIZE;
	ssize_t n = recv(t->prev_fd, t->stage + run->taken_off, bytes - run->taken_off, MSG_DONTWAIT);

	if (n == 0)
		return -1;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	run->taken_off += (size_t)n;
	if (run->taken_off < bytes)
		return 0;
	apply_piece(l->dt, step_reduces(pc->step, l->world), (char *)t->data + pc->first * ELEM_SIZE,
		    t->stage, pc->elems);
	run->taken_off = 0;
	run->taken++;
	return 1;
}

/* One poll over both sockets and a step of each that is ready; the number of steps, or -1. */
static int move_once(struct tcp_ring *t, const struct ring_layout *l, const struct plan *plan,
		     struct tcp_run *run, struct ring_ctl *ctl)
{
	bool can_send = run->sent < plan->n_send && run->taken >= plan->send[run->sent].needs;
	struct pollfd pfd[2] = {
		{ .fd = can_send ? t->next_fd : -1, .events = POLLOUT },
		{ .fd = run->taken < plan->n_recv ? t->prev_fd : -1, .events = POLLIN },
	};
	int moved = 0, rc;

	if (poll(pfd, 2, POLL_SLICE_MS) < 0 && errno != EINTR)
		return -1;
	if (pfd[0].revents) {
		rc = push(t, &plan->send[run->sent], run);
		if (rc < 0) {
			ctl_fail_neighbour(ctl, (t->rank + 1) % t->world,
					   "its TCP ring connection failed: %s", strerror(errno));
			return -1;
		}
		moved++;
	}
	if (pfd[1].revents) {
		rc = pull(t, l, &plan->recv[run->taken], run);
		if (rc < 0) {
			ctl_fail_neighbour(ctl, (t->rank + t->world - 1) % t->world,
					   "its TCP ring connection closed or failed");
			return -1;
		}
		moved++;
	}
	return moved;
}

int tcp_ring_run(struct tcp_ring *t, const struct ring_layout *l, const struct plan *plan,
		 struct ring_ctl *ctl, int timeout_s)
{
	struct tcp_run run = { 0 };
	struct progress pr;

	/* Each look blocks in poll() for a slice: the runtime's progress loop only looks around. */
	progress_start(&pr, ctl, PROGRESS_BLOCKED, timeout_s);
	while (run.sent < plan->n_send || run.taken < plan->n_recv) {
		int moved = move_once(t, l, plan, &run, ctl), rc;

		if (moved < 0)
			return -1;
		rc = progress_after(&pr, moved > 0);
		if (rc == PROGRESS_STALLED)
			rc = ctl_stall(ctl, (t->rank + t->world - 1) % t->world, "nothing moved for %d s "
				       "on its TCP ring connection to rank %d", timeout_s, t->rank);
		if (rc)
			return -1;
	}
	return 0;
}

void tcp_ring_close(struct tcp_ring *t)
{
	sock_close(t->next_fd);
	sock_close(t->prev_fd);
	sock_close(t->listen_fd);
	free(t->stage);
	*t = (struct tcp_ring){ .listen_fd = -1, .next_fd = -1, .prev_fd = -1 };
}
