/* layout.h: step 09's layout: the one registered buffer's parts, the records, the counts matrix and its prefix sums. */
#ifndef RDMA_STEPS_LAYOUT_H
#define RDMA_STEPS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "gate.h"
#include "moe_options.h"

/* The three phases, each with a signal word per sender (layout_sig_word). */
enum moe_phase { PHASE_LAYOUT, PHASE_DISPATCH, PHASE_COMBINE, PHASES };

/*
 * One buffer, registered once, every part at an 8-byte multiple: the signal
 * words (PHASES x N: sender S adds to word (phase, S), so that a word behind
 * names its sender), where our FETCH_ADDs' old values land (one word per
 * peer), the counts matrix (row s: how many tokens rank s sends each rank),
 * our tokens packed by destination rank, the tokens received (block s from
 * rank s, at the prefix sum of the column), the experts' results in the same
 * order, and the results that come back, in the order we sent.  Each part
 * whose offsets come from the counts (send, recv, comb_out, comb_in) holds
 * MOST records and is followed by LAYOUT_GUARD bytes of guard words, which
 * nothing writes: layout_check_guards finds out if anything did.
 */
#define LAYOUT_GUARD 64
#define LAYOUT_GUARD_WORD 0x4755415244574f52ULL	/* "GUARDWOR" */

struct moe_layout {
	int rank, world, tokens, topk;
	size_t most;		/* records each part holds: every token to every rank */
	size_t hidden;
	size_t rec;		/* a dispatch record: token, K, K (expert, weight), H bytes */
	size_t rec_head;	/* where its H bytes start */
	size_t crec;		/* a combine record: token, 0, H bytes */
	size_t sig, old, counts, send, recv, comb_out, comb_in;
	size_t bytes;
};

void layout_init(struct moe_layout *l, const struct moe_opts *opts, int rank, int world);

/* A sweep's row of TOKENS a rank in MOST's buffer: MOST's parts, at MOST's offsets, fewer tokens. */
void layout_row(struct moe_layout *row, const struct moe_layout *most, int tokens);

/*
 * Copies the counts matrix, every row of which a peer WROTE into BASE, into
 * COUNTS, this rank's own, and checks the copy before any offset or length
 * is taken from it (a peer may WRITE again; the copy stays as checked).  A
 * rank holds T tokens and sends each at most once to each rank, to at most
 * K ranks (top-K), so a count past T, or a row past T x min(K, N), is no
 * count of this layout: DeepEP bounds each source rank likewise
 * (num_max_dispatch_tokens_per_rank).  Within those bounds every block lies
 * inside its part.  0; or -1, *BAD the rank whose row is wrong and WHY what
 * it says, for the caller to name.
 */
int layout_take_counts(const struct moe_layout *l, const void *base, uint64_t *counts, int *bad,
		       char *why, size_t len);

/* Fills the guard words after each part the counts index. */
void layout_arm_guards(const struct moe_layout *l, void *base);

/* 0 if every guard word is as armed; else -1, after saying which part was overrun. */
int layout_check_guards(const struct moe_layout *l, const void *base);

/* Where SENDER's signal word of phase PH sits in a rank's buffer: the same offset in every rank's. */
static inline size_t layout_sig_word(const struct moe_layout *l, enum moe_phase ph, int sender)
{
	return l->sig + 8 * ((size_t)ph * (size_t)l->world + (size_t)sender);
}

/* The counts matrix in BASE (the registered buffer). */
static inline uint64_t *layout_matrix(const struct moe_layout *l, void *base)
{
	return (uint64_t *)((char *)base + l->counts);
}

/* Dispatch record I of the part at OFF, and its payload words; combine record I's. */
static inline uint32_t *layout_rec(const struct moe_layout *l, void *base, size_t off, uint64_t i)
{
	return (uint32_t *)((char *)base + off + i * l->rec);
}

static inline uint32_t *layout_rec_words(const struct moe_layout *l, uint32_t *rec)
{
	return (uint32_t *)((char *)rec + l->rec_head);
}

static inline uint32_t *layout_crec(const struct moe_layout *l, void *base, size_t off, uint64_t i)
{
	return (uint32_t *)((char *)base + off + i * l->crec);
}

/* Our row of the matrix, from the gate: one copy of a token per rank that holds any of its experts. */
void layout_count_row(const struct moe_layout *l, const struct route *routes, void *base);

/* The rank whose row of the matrix RANK writes a bad count into, for --plant-count: the next one. */
static inline int layout_plant_target(const struct moe_layout *l)
{
	return (l->rank + 1) % l->world;
}

/* Where rank H's block for rank D starts among H's sent records: the prefix sum of row H. */
uint64_t layout_send_index(const struct moe_layout *l, const uint64_t *m, int h, int d);

/* Where rank S's block starts among rank D's received records: the prefix sum of column D. */
uint64_t layout_recv_index(const struct moe_layout *l, const uint64_t *m, int s, int d);

/* Writes our tokens as dispatch records, block by block in rank order (COUNTS: the checked matrix). */
void layout_pack(const struct moe_layout *l, const struct moe_opts *opts, const uint64_t *counts,
		 const struct route *routes, void *base);

/* Shows the matrix's column and row of this rank and their prefix sums. */
void layout_show(const struct moe_layout *l, const uint64_t *m);

#endif
