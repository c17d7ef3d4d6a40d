/* gate.c: step 09's workload on the CPU: the seeded gate (each token's top-k experts and weights), the tokens, the reference result. */
#include "gate.h"

/* SplitMix64: one well-mixed 64-bit value from any 64-bit input. */
static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t key(uint32_t seed, int rank, int token)
{
	return (uint64_t)seed << 32 ^ (uint64_t)rank << 24 ^ (uint64_t)token;
}

/* K distinct experts of N: the first K of a partial Fisher-Yates shuffle. */
static void pick_experts(uint64_t k, int n, int topk, struct route *r)
{
	uint32_t ids[MOE_MAX_RANKS * 256];

	for (int i = 0; i < n; i++)
		ids[i] = (uint32_t)i;
	for (int i = 0; i < topk; i++) {
		int j = i + (int)(mix(k + (uint64_t)i) % (uint64_t)(n - i));
		uint32_t t = ids[i];

		ids[i] = ids[j];
		ids[j] = t;
		r->expert[i] = ids[i];
		r->weight[i] = 1 + (uint32_t)(mix(~k - (uint64_t)i) % 4);
	}
}

void gate_route(const struct moe_opts *opts, int rank, int world, struct route *routes)
{
	for (int t = 0; t < opts->tokens; t++) {
		struct route *r = &routes[t];

		*r = (struct route){ 0 };
		pick_experts(mix(key(opts->seed, rank, t)), world * opts->experts, opts->topk, r);
		for (int i = 0; i < opts->topk; i++)
			r->ranks |= 1u << (r->expert[i] / (uint32_t)opts->experts);
	}
}

uint32_t token_word(uint32_t seed, int rank, int token, uint32_t j)
{
	return (uint32_t)mix(key(seed, rank, token) * 0x100000001b3ULL + j);
}

uint32_t reference_word(const struct route *r, int topk, uint32_t x)
{
	uint32_t sum = 0;

	for (int i = 0; i < topk; i++)
		sum += r->weight[i] * expert_apply(r->expert[i], x);
	return sum;
}
