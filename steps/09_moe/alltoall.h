/* alltoall.h: step 09's one-sided all-to-all: a chain of WRITEs into a peer's buffer, then its signal (a FETCH_ADD, or the last WRITE's immediate); the waits. */
#ifndef RDMA_STEPS_ALLTOALL_H
#define RDMA_STEPS_ALLTOALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "layout.h"
#include "mesh.h"

/*
 * --signal imm: zero-byte receives posted on each QP before the go-ahead,
 * and topped up to as many before an exchange that finds fewer than
 * A2A_RECV_LOW left: a peer can be at most one exchange ahead of us, so at
 * most two of its signals (this exchange's and the next's) come before our
 * next look.
 */
#define A2A_RECV_BATCH 16
#define A2A_RECV_LOW 2

/*
 * What a phase posted, for the output: posts (doorbells, a write() each on
 * rxe), WRs, bytes; the write() system calls the posts made, when counted;
 * the sched_yield() calls of the waits.
 */
struct a2a_stats {
	uint64_t posts, recv_posts, writes, atomics, imms, bytes;
	long post_syscalls;	/* -1: not counted (no /proc/self/io, or not asked) */
	uint64_t yields, naps;	/* sched_yield(), or nanosleep() when the ranks outnumber the CPUs */
};

/* The all-to-all's state across exchanges: the mesh, the signal kind, the receives, the signals come. */
struct a2a {
	struct moe_mesh *m;
	struct ring_ctl *ctl;
	const struct moe_layout *l;
	enum moe_signal signal;
	int timeout_s;
	uint32_t seq;				/* the exchange under way, counted from 0 */
	enum moe_phase ph;			/* its phase */
	uint32_t rounds[PHASES];		/* exchanges of each phase so far, this one included:
						 * fadd's word of each sender adds 1 each time */
	uint8_t came[2][MOE_MAX_RANKS];		/* imm: phase + 1 of each peer's signal of exchange
						 * seq, and of seq + 1 (early); 0: none yet */
	int recv_left[MOE_MAX_RANKS];		/* imm: receives posted on our QP to each peer, not taken */
	bool sending[MOE_MAX_RANKS];		/* our signalled WR to each peer, not yet completed */
	uint64_t signals_in;			/* signals come: taken off our CQs (imm), or
						 * seen on the senders' words (fadd) */
	struct a2a_stats *st;			/* the phase under way's */
	bool count_syscalls;			/* read /proc/self/io around each post: the one
						 * exchange of each phase, not a sweep's timed ones */
	bool crowded;				/* more ranks than online CPUs: the waits sleep */
};

/*
 * Before the first exchange: RECVS receives already posted on every QP
 * (mesh_meet).  Says how the waits will give the CPU away: by yielding, or,
 * when the ranks outnumber the online CPUs, by sleeping.
 */
void a2a_init(struct a2a *a, struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l,
	      enum moe_signal signal, int recvs, int timeout_s);

/* Starts exchange a->seq of phase PH: checks the early signals, tops up the receives. 0 or -1. */
int a2a_begin(struct a2a *a, enum moe_phase ph, struct a2a_stats *st);

/*
 * To PEER: LEN bytes from our buffer at SRC into its buffer at DST, in
 * WRITEs of at most 64 KiB (larger when the send queue would not hold them),
 * unsignalled, then the signal, signalled: a FETCH_ADD of 1 on its word of
 * the phase for us, or the last WRITE with immediate.  One chain, one
 * ibv_post_send.  LEN 0 posts the signal alone (a zero-byte WRITE with
 * immediate), so that every peer is counted.  0, or -1 after ctl_fail.
 */
int a2a_post(struct a2a *a, int peer, size_t src, uint64_t dst, size_t len,
	     struct a2a_stats *st);

/*
 * Waits, up to -t, until every peer's signal of this exchange has come:
 * each peer's word of the phase reads the phase's exchanges so far (fadd:
 * N - 1 words in our own memory), or N - 1 receive completions name it
 * (imm: our CQs).  Either way every WRITE before the signal has landed.
 * Yields the CPU between looks, or sleeps, 1 us doubling to 1 ms, when the
 * ranks outnumber the CPUs.  0, or -1 after ctl_fail (past -t, naming the
 * first peer whose signal did not come).
 */
int a2a_wait_signal(struct a2a *a);

/* Each peer's completion of our signal (and any WRITE's that failed before it); 0, or -1 after ctl_fail. */
int a2a_wait_sent(struct a2a *a);

/* Ends the exchange: the next one's early signals become its own. */
void a2a_end(struct a2a *a);

/* The phase's name, for the output. */
const char *a2a_phase_name(enum moe_phase ph);

#endif
