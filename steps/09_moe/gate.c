/* gate.c: step 09's workload on the CPU: the seeded gate (each token's top-k experts and weights), the tokens, the reference result. */
#include "gate.h"

/* Keeps --skew's draws apart from the shuffle's. */
#define SKEW_SALT 0x5ce3b1a7d00dfeedULL

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

/* The position of one of rank 0's experts (ids below HOT) among IDS[I..N), chosen by Z; -1 if none is left. */
static int pick_hot(const uint32_t *ids, int i, int n, uint32_t hot, uint64_t z)
{
	int left = 0;

	for (int p = i; p < n; p++)
		left += ids[p] < hot;
	if (!left)
		return -1;
	left = (int)(z % (uint64_t)left);
	for (int p = i; p < n; p++)
		if (ids[p] < hot && left-- == 0)
			return p;
	return -1;
}

/*
 * K distinct experts of N: the first K of a partial Fisher-Yates shuffle.
 * With --skew, each pick is one of rank 0's E experts with that chance (its
 * own draws, so that --skew 0 is the uniform gate, pick for pick).
 */
static void pick_experts(uint64_t k, int n, int topk, const struct moe_opts *opts,
			 struct route *r)
{
	uint32_t ids[MOE_MAX_RANKS * 256];

	for (int i = 0; i < n; i++)
		ids[i] = (uint32_t)i;
	for (int i = 0; i < topk; i++) {
		int j = i + (int)(mix(k + (uint64_t)i) % (uint64_t)(n - i));
		uint32_t t;

		if (opts->skew && (int)(mix(k ^ SKEW_SALT ^ (uint64_t)i) % 100) < opts->skew) {
			int hot = pick_hot(ids, i, n, (uint32_t)opts->experts,
					   mix(~k ^ SKEW_SALT ^ (uint64_t)i));

			if (hot >= 0)
				j = hot;
		}
		t = ids[i];

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
		pick_experts(mix(key(opts->seed, rank, t)), world * opts->experts, opts->topk, opts, r);
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
