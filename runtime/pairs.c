/* pairs.c: the job runtime: every rank's QP for every other rank, handed on through rank 0's control channel (a full mesh's rendezvous). */
#include "pairs.h"
#include "byteorder.h"
#include "report.h"
#include "sock.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

/* One message from FD, from rank FROM (any rank, when FROM is -1), while WHAT is handed on; 0 or -1 once said. */
static int take_msg(struct ring_ctl *c, int fd, int from, const char *what, struct ctl_msg *m)
{
	int who = c->rank == 0 ? from : 0;
	int rc = ctl_msg_recv(fd, m, c->timeout_s * 1000L);

	if (rc) {
		ctl_fail(c, who, "%s while %s were handed on%s", rc == SOCK_CLOSED ?
			 "its connection to rank 0 closed" : rc == SOCK_TIMEOUT ?
			 "it sent nothing within -t seconds" : "it sent a message that is not ours",
			 what, rc == SOCK_CLOSED ? " (killed, or it failed: see its output)" :
			 rc == SOCK_TIMEOUT ? "" : " (see the line above)");
		return -1;
	}
	if (m->type == CTL_ABORT) {
		/* Rank 0 tells every rank; a rank only says what rank 0 told it. */
		if (c->rank == 0)
			ctl_fail(c, m->failed, "%s", m->text);
		else
			ctl_announce(c, m->failed, m->text);
		return -1;
	}
	return 0;
}

/* One pair from FD: the QP rank FROM (any, when -1) made for one peer; 0 or -1 once said. */
static int take_pair(struct ring_ctl *c, int fd, int from, struct ctl_msg *m)
{
	if (take_msg(c, fd, from, "the QPs", m))
		return -1;
	/* Both ranks index tables of WORLD entries: each is checked, whoever sent it. */
	if (m->type != CTL_PAIR || m->peer < 0 || m->peer >= c->world || m->rank < 0 ||
	    m->rank >= c->world || (from >= 0 && m->rank != from) || m->rank == m->peer) {
		ctl_fail(c, c->rank == 0 ? from : 0, "it sent a message out of turn while the QPs "
			 "were handed on");
		return -1;
	}
	return 0;
}

static int send_msg(struct ring_ctl *c, int fd, int to, const char *what, const struct ctl_msg *m)
{
	if (ctl_msg_send(fd, m, c->timeout_s) == 0)
		return 0;
	ctl_fail(c, to, "its connection to rank 0 closed while %s were handed on", what);
	return -1;
}

static int send_pair(struct ring_ctl *c, int fd, int to, const struct ctl_msg *m)
{
	return send_msg(c, fd, to, "the QPs", m);
}

/* Rank 0: every rank's world - 1 QPs in, each handed on to the rank it was made for. */
static int route_pairs(struct ring_ctl *c, const struct peer_info *mine, struct peer_info *theirs)
{
	int n = c->world;
	struct ctl_msg *table = calloc((size_t)n * n, sizeof(*table));
	int rc = -1;

	if (!table) {
		report_error("no memory to hand on %d x %d QPs", n, n);
		return -1;
	}
	for (int p = 1; p < n; p++)
		table[p] = (struct ctl_msg){ .type = CTL_PAIR, .rank = 0, .world = n, .peer = p,
					     .qp[0] = mine[p] };
	for (int r = 1; r < n; r++)
		for (int i = 0; i < n - 1; i++) {
			struct ctl_msg m;

			if (take_pair(c, c->fds[r], r, &m))
				goto free_table;
			table[(size_t)r * n + m.peer] = m;
		}
	for (int to = 1; to < n; to++)
		for (int from = 0; from < n; from++)
			if (from != to && send_pair(c, c->fds[to], to, &table[(size_t)from * n + to]))
				goto free_table;
	for (int from = 1; from < n; from++)
		theirs[from] = table[(size_t)from * n].qp[0];
	rc = 0;
free_table:
	free(table);
	return rc;
}

/* A rank: its QPs out to rank 0, then the world - 1 made for it back. */
static int trade_pairs(struct ring_ctl *c, const struct peer_info *mine, struct peer_info *theirs)
{
	for (int p = 0; p < c->world; p++) {
		struct ctl_msg m = { .type = CTL_PAIR, .rank = c->rank, .world = c->world, .peer = p,
				     .qp[0] = mine[p] };

		if (p != c->rank && send_pair(c, c->fd, 0, &m))
			return -1;
	}
	for (int i = 0; i < c->world - 1; i++) {
		struct ctl_msg m;

		if (take_pair(c, c->fd, -1, &m))
			return -1;
		if (m.peer != c->rank) {
			ctl_fail(c, 0, "it handed us the QP rank %d made for rank %d", m.rank, m.peer);
			return -1;
		}
		theirs[m.rank] = m.qp[0];
	}
	return 0;
}

int ctl_exchange_pairs(struct ring_ctl *c, const struct peer_info *mine, struct peer_info *theirs)
{
	if (c->world == 1)
		return 0;
	return c->rank == 0 ? route_pairs(c, mine, theirs) : trade_pairs(c, mine, theirs);
}

/* One rank's port from FD: from rank FROM (any, when -1); 0 or -1 once said. */
static int take_port(struct ring_ctl *c, int fd, int from, struct ctl_msg *m)
{
	if (take_msg(c, fd, from, "the TCP ports", m))
		return -1;
	if (m->type != CTL_PORT || m->rank < 0 || m->rank >= c->world || m->rank == c->rank ||
	    (from >= 0 && m->rank != from)) {
		ctl_fail(c, c->rank == 0 ? from : 0, "it sent a message out of turn while the TCP "
			 "ports were handed on");
		return -1;
	}
	return 0;
}

/* Rank 0: every rank's port in, with the address its connection came from; every other rank's out to each. */
static int route_ports(struct ring_ctl *c, int port, struct endpoint *all)
{
	all[0].port = port;
	for (int r = 1; r < c->world; r++) {
		struct ctl_msg m;

		if (take_port(c, c->fds[r], r, &m))
			return -1;
		all[r].port = m.port;
		peer_address(c->fds[r], all[r].addr, sizeof(all[r].addr));
	}
	for (int to = 1; to < c->world; to++)
		for (int r = 0; r < c->world; r++) {
			struct ctl_msg m = { .type = CTL_PORT, .rank = r, .world = c->world,
					     .port = all[r].port };

			/* Rank 0's address is the one the rank reached it at: "" here. */
			if (r != 0)
				snprintf(m.text, sizeof(m.text), "%s", all[r].addr);
			if (r != to && send_msg(c, c->fds[to], to, "the TCP ports", &m))
				return -1;
		}
	return 0;
}

/* A rank: its port out to rank 0, then the world - 1 others back. */
static int trade_ports(struct ring_ctl *c, const char *host, int port, struct endpoint *all)
{
	struct ctl_msg mine = { .type = CTL_PORT, .rank = c->rank, .world = c->world, .port = port };

	all[c->rank].port = port;
	if (send_msg(c, c->fd, 0, "the TCP ports", &mine))
		return -1;
	for (int i = 0; i < c->world - 1; i++) {
		struct ctl_msg m;

		if (take_port(c, c->fd, -1, &m))
			return -1;
		all[m.rank].port = m.port;
		snprintf(all[m.rank].addr, sizeof(all[m.rank].addr), "%.*s", ADDR_TEXT_LEN - 1,
			 m.rank == 0 ? host : m.text);
	}
	return 0;
}

int ctl_exchange_ports(struct ring_ctl *c, const char *host, int port, struct endpoint *all)
{
	if (c->world == 1)
		return 0;
	return c->rank == 0 ? route_ports(c, port, all) : trade_ports(c, host, port, all);
}

int mesh_dial(struct ring_ctl *c, int peer, const struct endpoint *e, int timeout_s)
{
	uint8_t me[4];
	int gai_err, fd;

	put_be32(me, (uint32_t)c->rank);
	fd = sock_dial(e->addr, e->port, timeout_s, &gai_err);
	if (fd >= 0 && send(fd, me, sizeof(me), MSG_NOSIGNAL) != sizeof(me)) {
		sock_close(fd);
		fd = -1;
	}
	if (fd < 0)
		ctl_fail(c, peer, "its TCP port %s:%d took no connection within %d s", e->addr,
			 e->port, timeout_s);
	return fd;
}

int mesh_accept(int listen_fd, const struct timespec *deadline, const char *what, int32_t *who)
{
	uint8_t hello[4];
	int fd = -1;

	if (wait_fd(listen_fd, POLLIN, deadline, what) == WAIT_READY)
		fd = accept(listen_fd, NULL, NULL);
	if (fd >= 0 && (wait_fd(fd, POLLIN, deadline, what) != WAIT_READY ||
			recv(fd, hello, sizeof(hello), MSG_WAITALL) != sizeof(hello))) {
		sock_close(fd);
		fd = -1;
	}
	if (fd >= 0)
		*who = (int32_t)get_be32(hello);
	return fd;
}
