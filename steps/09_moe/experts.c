/* experts.c: step 09's stand-in experts on the tokens received, and the home rank's check of what combine brought back. */
#include "experts.h"
#include "report.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Record I: checked against the layout, then its partial result. */
static int run_record(const struct moe_layout *l, const struct moe_opts *opts, void *base,
		      uint64_t i)
{
	const uint32_t *rec = layout_rec(l, base, l->recv, i);
	const uint32_t *x = layout_rec_words(l, (uint32_t *)rec);
	uint32_t *out = layout_crec(l, base, l->comb_out, i);
	uint32_t lo = (uint32_t)(l->rank * opts->experts), hi = lo + (uint32_t)opts->experts;
	bool ours = false;

	if (rec[0] >= (uint32_t)l->tokens || rec[1] != (uint32_t)l->topk) {
		report_error("rank %d: received record %llu holds token %u with %u experts: not a "
			     "record of this layout", l->rank, (unsigned long long)i, rec[0], rec[1]);
		return -1;
	}
	out[0] = rec[0];
	out[1] = 0;
	memset(out + 2, 0, l->hidden);
	for (int k = 0; k < l->topk; k++) {
		uint32_t e = rec[2 + 2 * k], w = rec[3 + 2 * k];

		if (e < lo || e >= hi)
			continue;
		ours = true;
		for (uint32_t j = 0; j < l->hidden / 4; j++)
			out[2 + j] += w * expert_apply(e, x[j]);
	}
	if (!ours) {
		report_error("rank %d: received token %u holds none of our experts %u to %u", l->rank,
			     rec[0], lo, hi - 1);
		return -1;
	}
	return 0;
}

int experts_run(const struct moe_layout *l, const struct moe_opts *opts, const uint64_t *m,
		void *base)
{
	uint64_t n = layout_recv_index(l, m, l->world, l->rank);

	for (uint64_t i = 0; i < n; i++)
		if (run_record(l, opts, base, i))
			return -1;
	return 0;
}

/* Adds every combine record that came back into SUM (T tokens of H/4 words), counting them per token. */
static void sum_results(const struct moe_layout *l, const uint64_t *m, void *base, uint32_t *sum,
			uint32_t *came)
{
	uint64_t n = layout_send_index(l, m, l->rank, l->world);
	size_t words = l->hidden / 4;

	for (uint64_t i = 0; i < n; i++) {
		const uint32_t *rec = layout_crec(l, base, l->comb_in, i);

		if (rec[0] >= (uint32_t)l->tokens)
			continue;
		came[rec[0]]++;
		for (size_t j = 0; j < words; j++)
			sum[rec[0] * words + j] += rec[2 + j];
	}
}

static int popcount(uint32_t v)
{
	return __builtin_popcount(v);
}

void combine_check(const struct moe_layout *l, const struct moe_opts *opts, const uint64_t *counts,
		   const struct route *routes, void *base, struct combine_check *out)
{
	size_t words = l->hidden / 4;
	uint32_t *sum = calloc((size_t)l->tokens * words + 1, sizeof(*sum));
	uint32_t *came = calloc((size_t)l->tokens + 1, sizeof(*came));

	*out = (struct combine_check){ .first = -1 };
	if (!sum || !came) {
		out->wrong = (uint64_t)l->tokens;
		report_error("rank %d: no memory for the check", l->rank);
		goto free_sums;
	}
	sum_results(l, counts, base, sum, came);
	for (int t = 0; t < l->tokens; t++) {
		bool bad = came[t] != (uint32_t)popcount(routes[t].ranks);

		for (uint32_t j = 0; j < words; j++) {
			uint32_t want = reference_word(&routes[t], opts->topk,
						       token_word(opts->seed, l->rank, t, j));

			if (!bad && sum[t * words + j] == want)
				continue;
			if (out->first < 0) {
				out->first = t;
				out->got = sum[t * words + j];
				out->want = want;
				out->word = j;
			}
			bad = true;
			break;
		}
		out->wrong += bad;
	}
free_sums:
	free(came);
	free(sum);
}
