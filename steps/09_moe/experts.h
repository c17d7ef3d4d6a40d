/* experts.h: step 09's stand-in experts on the tokens received, and the home rank's check of what combine brought back. */
#ifndef RDMA_STEPS_EXPERTS_H
#define RDMA_STEPS_EXPERTS_H

#include <stdint.h>

#include "gate.h"
#include "layout.h"

/*
 * For each record received, the weighted sum of our experts' outputs among
 * its top-k (expert_apply), into the combine record of the same index: one
 * result per token per rank, as DeepEP's combine returns one per rank.
 * COUNTS is the checked matrix.  Returns -1 after naming the record if a
 * record is not what the layout said.
 */
int experts_run(const struct moe_layout *l, const struct moe_opts *opts, const uint64_t *counts,
		void *base);

/* What the check found: tokens wrong, and the first. */
struct combine_check {
	uint64_t wrong;
	int first;		/* the first wrong token, or -1 */
	uint32_t got, want;	/* its first wrong word */
	uint32_t word;
};

/*
 * The home rank: sums each token's results from every rank that held its
 * experts, and checks every word of every token against reference_word
 * (COUNTS: the checked matrix).
 */
void combine_check(const struct moe_layout *l, const struct moe_opts *opts, const uint64_t *counts,
		   const struct route *routes, void *base, struct combine_check *out);

#endif
