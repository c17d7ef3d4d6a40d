/* moe_datapath.h: step 09's data path (datapath.c): the all-to-all's state, a chain of WRITEs and its signal to each peer, and the waits; its bookkeeping and lines in a2a_report.c. */
#ifndef RDMA_STEPS_MOE_DATAPATH_H
#define RDMA_STEPS_MOE_DATAPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "layout.h"
#include "mesh.h"
#include "moe_shape.h"
#include "progress.h"

/*
 * The signal's immediate: the exchange in bits 31-16 (counted from 0, mod
 * 65536), the phase in 15-8, the sender in 7-0: 0x00010102 is exchange 1,
 * dispatch, from rank 2.  The receiver checks all three.
 */
#define MOE_IMM_EXCHANGES 0x10000u

static inline uint32_t moe_imm(uint32_t seq, enum moe_phase ph, int sender)
{
	return (seq % MOE_IMM_EXCHANGES) << 16 | (uint32_t)ph << 8 | (uint32_t)sender;
}

static inline uint32_t moe_imm_exchange(uint32_t imm)
{
	return imm >> 16;
}

static inline uint32_t moe_imm_phase(uint32_t imm)
{
	return imm >> 8 & 0xff;
}

static inline uint32_t moe_imm_sender(uint32_t imm)
{
	return imm & 0xff;
}

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
	enum progress_rule rule;		/* how the waits give the CPU away, decided once */
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
};

/*
 * Before the first exchange: RECVS receives already posted on every QP
 * (mesh_meet).  Decides, and says, how the waits give the CPU away
 * (progress_rule_for).  In a2a_report.c.
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
 * Waits until every peer's signal of this exchange has come: each peer's
 * word of the phase reads the phase's exchanges so far (fadd: N - 1 words in
 * our own memory), or N - 1 receive completions name it (imm: our CQs).
 * Either way every WRITE before the signal has landed.  Between looks, the
 * runtime's progress loop; -t without a new signal names the first peer
 * whose signal did not come.  0, or -1 after ctl_fail.
 */
int a2a_wait_signal(struct a2a *a);

/* Each peer's completion of our signal (and any WRITE's that failed before it); 0, or -1 after ctl_fail. */
int a2a_wait_sent(struct a2a *a);

/* a2a_report.c: ends the exchange: the next one's early signals become its own. */
void a2a_end(struct a2a *a);

/* a2a_report.c: a signal kept early must be of this exchange's phase; -1 after ctl_fail if not. */
int a2a_check_early(struct a2a *a);

/* a2a_report.c: the phase's name, for the output. */
const char *a2a_phase_name(enum moe_phase ph);

/* a2a_report.c: /proc/self/io's write() count now, when counted (-1 otherwise), and a post's share. */
long a2a_syscw(const struct a2a *a);
void a2a_count_post(struct a2a_stats *st, long before, long after);

/* a2a_report.c: one post to PEER done: its line, and the phase's figures. */
void a2a_posted(const struct a2a *a, int peer, int writes, uint64_t dst, size_t len,
		struct a2a_stats *st);

/* a2a_report.c: the line of PEER's signal taken (SLOT 1: the next exchange's), and of our signal to PEER completed. */
void a2a_show_signal(int peer, uint32_t imm, int slot);
void a2a_show_sent(const struct a2a *a, int peer);

/* a2a_report.c: the line once every peer's signal has come (SIGNALS of them). */
void a2a_show_signals(struct a2a *a, uint64_t signals);

/* a2a_report.c: a wait past -t names SILENT, the first peer whose signal did not come, SIGNALS of N - 1 having come. */
void a2a_name_silent(struct a2a *a, int silent, uint64_t signals);

/* a2a_report.c: the first peer whose signal from us has not completed, or -1. */
int a2a_first_sending(const struct a2a *a);

/* a2a_report.c: a wait ends with RC: what it cost goes to the phase's figures; returns RC. */
int a2a_waited(struct a2a *a, const struct progress *pr, int rc);

#endif
