/* tcp_sync.h: step 10's TCP twin (--way tcp): the same plan's runs, over a socket per trainer and serving pair, each run sent and received in plan order, non-blocking. */
#ifndef RDMA_STEPS_TCP_SYNC_H
#define RDMA_STEPS_TCP_SYNC_H

#include <stdint.h>

#include "control.h"
#include "model.h"
#include "pairs.h"
#include "plan.h"

/* The sockets: one per pair the plan joins, a trainer's to each serving rank. */
struct tcp_sync {
	int listen_fd;			/* a trainer: where the serving ranks dial */
	int fd[SYNC_MAX_RANKS];		/* our connection to rank q, or -1 */
	int rank, world, trainers, timeout_s;
	struct ring_ctl *ctl;
	const struct plan *p;
};

/* What a version cost in system calls, for the output: sendmsg(), recvmsg(), poll(). */
struct tcp_sync_stats {
	uint64_t sends, recvs, polls, bytes_out, bytes_in;
};

/* Before anything: no socket open, so that tcp_sync_close can run whatever happened. */
void tcp_sync_init(struct tcp_sync *t);

/* A trainer listens on a free port for the serving ranks; a serving rank takes none. 0 or -1. */
int tcp_sync_listen(struct tcp_sync *t, struct ring_ctl *ctl, const struct plan *p, int timeout_s);

/* The port tcp_sync_listen took, or 0. */
int tcp_sync_port(const struct tcp_sync *t);

/*
 * Connects every pair the plan joins: each serving rank dials every trainer
 * with runs to it at ALL[k] and says who it is (4 bytes, big-endian); each
 * trainer takes one connection from each serving rank it has runs to, and
 * refuses a rank that is not one.  0, or -1 after ctl_fail.
 */
int tcp_sync_connect(struct tcp_sync *t, const struct endpoint *all);

/*
 * Version V over the sockets.  A trainer: its runs to every serving rank,
 * from its shard at DATA, each stream in plan order.  A serving rank: every
 * trainer's runs to it, read straight to where each run goes in its version
 * buffer V % 2 (DATA, then SLICE bytes a buffer).  The stream is the
 * signal: a pair is whole when its last byte is read.  0, or -1 after
 * ctl_fail naming a peer whose connection closed, or that moved nothing
 * for -t.
 */
int tcp_sync_run(struct tcp_sync *t, uint8_t *data, uint64_t slice, int v,
		 struct tcp_sync_stats *st);

void tcp_sync_close(struct tcp_sync *t);

#endif
