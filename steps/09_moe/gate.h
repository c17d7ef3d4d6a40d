/* gate.h: step 09's workload on the CPU: the seeded gate (each token's top-k experts and weights), the tokens, the reference result. */
#ifndef RDMA_STEPS_GATE_H
#define RDMA_STEPS_GATE_H

#include <stdint.h>

#include "moe_options.h"

/* One token's routing: K distinct global experts (rank x E + local) and integer weights. */
struct route {
	uint32_t expert[MOE_MAX_TOPK];
	uint32_t weight[MOE_MAX_TOPK];
	uint32_t ranks;		/* bit d: rank d holds at least one of its experts */
};

/*
 * The gate of rank RANK: for each of its T tokens, K distinct experts drawn
 * from WORLD x E with the seed, and weights 1 to 4.  A real gate's softmax
 * weights sum to 1; small integers keep the check exact.  ROUTES holds T.
 */
void gate_route(const struct moe_opts *opts, int rank, int world, struct route *routes);

/* Word J of token TOKEN of rank RANK: the payload, from the seed alone, so any rank can rebuild it. */
uint32_t token_word(uint32_t seed, int rank, int token, uint32_t j);

/* The stand-in expert: expert E's output for input word X is X x (E + 1). */
static inline uint32_t expert_apply(uint32_t expert, uint32_t x)
{
	return x * (expert + 1);
}

/* Word J of what the home rank should hold after combine: the weighted sum over every expert, mod 2^32. */
uint32_t reference_word(const struct route *r, int topk, uint32_t x);

#endif
