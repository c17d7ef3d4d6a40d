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
 * order, and the results that come back, in the order we sent.
 */
struct moe_layout {
	int rank, world, tokens, topk;
	size_t hidden;
	size_t rec;		/* a dispatch record: token, K, K (expert, weight), H bytes */
	size_t rec_head;	/* where its H bytes start */
	size_t crec;		/* a combine record: token, 0, H bytes */
	size_t sig, old, counts, send, recv, comb_out, comb_in;
	size_t bytes;
};

void layout_init(struct moe_layout *l, const struct moe_opts *opts, int rank, int world);

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

/* Where rank H's block for rank D starts among H's sent records: the prefix sum of row H. */
uint64_t layout_send_index(const struct moe_layout *l, const uint64_t *m, int h, int d);

/* Where rank S's block starts among rank D's received records: the prefix sum of column D. */
uint64_t layout_recv_index(const struct moe_layout *l, const uint64_t *m, int s, int d);

/* Writes our tokens as dispatch records, block by block in rank order, tokens in order. */
void layout_pack(const struct moe_layout *l, const struct moe_opts *opts,
		 const struct route *routes, void *base);

/* Shows the matrix's column and row of this rank and their prefix sums. */
void layout_show(const struct moe_layout *l, const uint64_t *m);

#endif
