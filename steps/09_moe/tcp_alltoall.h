/* tcp_alltoall.h: step 09's same all-to-all over TCP: a socket per pair of ranks, each block sent and received whole, non-blocking. */
#ifndef RDMA_STEPS_TCP_ALLTOALL_H
#define RDMA_STEPS_TCP_ALLTOALL_H

#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "moe_options.h"
#include "pairs.h"

/* The socket mesh: one connection per peer, N - 1 a rank. */
struct tcp_a2a {
	int listen_fd;
	int fd[MOE_MAX_RANKS];	/* our connection to rank p; -1 for ourselves */
	int rank, world, timeout_s;
	struct ring_ctl *ctl;
	char *base;		/* the buffer the blocks are in: the mesh's, unregistered use */
};

/* One exchange with one peer: OUT_LEN bytes from OUT to it, IN_LEN bytes from it into IN. */
struct tcp_move {
	size_t out, out_len, in, in_len;
	size_t sent, taken;	/* how far each has come */
};

/* What an exchange cost in system calls, for the output: send(), recv(), poll(). */
struct tcp_stats {
	uint64_t sends, recvs, polls, bytes_out, bytes_in;
};

/* Before anything: no socket open, so that tcp_a2a_close can run whatever happened. */
void tcp_a2a_init(struct tcp_a2a *t);

/* Listens on a free port for the higher ranks: before the ports are handed on. 0 or -1. */
int tcp_a2a_listen(struct tcp_a2a *t, struct ring_ctl *ctl, void *base, int timeout_s);

/* The port tcp_a2a_listen took. */
int tcp_a2a_port(const struct tcp_a2a *t);

/*
 * Connects every pair: each rank dials every lower rank at ALL[p] and says
 * who it is, then takes every higher rank's connection from its listener's
 * backlog, so that no rank waits on another's accept.  0, or -1 after ctl_fail.
 */
int tcp_a2a_connect(struct tcp_a2a *t, const struct endpoint *all);

/*
 * MOVES[p] with every peer p at once: what each socket takes, what each has
 * come, until every block is sent and every block expected is here.  The
 * stream is the signal: a block is whole when its last byte is read.  0, or
 * -1 after ctl_fail naming a peer whose connection closed, or that moved
 * nothing for -t.
 */
int tcp_a2a_exchange(struct tcp_a2a *t, struct tcp_move *moves, struct tcp_stats *st);

void tcp_a2a_close(struct tcp_a2a *t);

#endif
