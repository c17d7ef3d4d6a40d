/* layout.c: step 09's layout: the one registered buffer's parts, the records, the counts matrix and its prefix sums. */
#include "layout.h"
#include "report.h"

#include <stdio.h>
#include <string.h>

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

void layout_init(struct moe_layout *l, const struct moe_opts *opts, int rank, int world)
{
	size_t most = (size_t)opts->tokens * (size_t)world;	/* records, each way, at most */

	*l = (struct moe_layout){ .rank = rank, .world = world, .tokens = opts->tokens,
				  .topk = opts->topk, .most = most, .hidden = opts->hidden };
	l->rec_head = round8(8 + 8 * (size_t)opts->topk);
	l->rec = l->rec_head + round8(opts->hidden);
	l->crec = 8 + round8(opts->hidden);
	l->sig = 0;
	l->old = l->sig + 8 * PHASES * (size_t)world;
	l->counts = l->old + 8 * (size_t)world;
	l->send = l->counts + 8 * (size_t)world * (size_t)world;
	l->recv = l->send + most * l->rec + LAYOUT_GUARD;
	l->comb_out = l->recv + most * l->rec + LAYOUT_GUARD;
	l->comb_in = l->comb_out + most * l->crec + LAYOUT_GUARD;
	l->bytes = l->comb_in + most * l->crec + LAYOUT_GUARD;
}

void layout_row(struct moe_layout *row, const struct moe_layout *most, int tokens)
{
	*row = *most;
	row->tokens = tokens;
}

int layout_take_counts(const struct moe_layout *l, const void *base, uint64_t *counts, int *bad,
		       char *why, size_t len)
{
	int fan = l->topk < l->world ? l->topk : l->world;	/* the most ranks a token goes to */
	uint64_t row_most = (uint64_t)l->tokens * (uint64_t)fan;

	memcpy(counts, (const char *)base + l->counts, 8 * (size_t)l->world * (size_t)l->world);
	for (int s = 0; s < l->world; s++) {
		const uint64_t *row = counts + (size_t)s * (size_t)l->world;
		uint64_t sum = 0;

		for (int d = 0; d < l->world; d++) {
			if (row[d] > (uint64_t)l->tokens) {
				*bad = s;
				snprintf(why, len, "its counts row says %llu tokens for rank %d, more than "
					 "the %d a rank holds (a token goes once to a rank at most)",
					 (unsigned long long)row[d], d, l->tokens);
				return -1;
			}
			sum += row[d];
		}
		if (sum > row_most) {
			*bad = s;
			snprintf(why, len, "its counts row sums to %llu copies, more than %d tokens x "
				 "%d ranks (top-%d of %d ranks)", (unsigned long long)sum, l->tokens, fan,
				 l->topk, l->world);
			return -1;
		}
	}
	return 0;
}

/* The offsets of the guards: after send, recv, comb_out and comb_in. */
static void guard_offsets(const struct moe_layout *l, size_t at[4])
{
	at[0] = l->recv - LAYOUT_GUARD;
	at[1] = l->comb_out - LAYOUT_GUARD;
	at[2] = l->comb_in - LAYOUT_GUARD;
	at[3] = l->bytes - LAYOUT_GUARD;
}

void layout_arm_guards(const struct moe_layout *l, void *base)
{
	size_t at[4];

	guard_offsets(l, at);
	for (int g = 0; g < 4; g++)
		for (size_t i = 0; i < LAYOUT_GUARD; i += 8)
			*(uint64_t *)((char *)base + at[g] + i) = LAYOUT_GUARD_WORD;
}

int layout_check_guards(const struct moe_layout *l, const void *base)
{
	static const char *const part[4] = { "send", "recv", "comb_out", "comb_in" };
	size_t at[4];

	guard_offsets(l, at);
	for (int g = 0; g < 4; g++)
		for (size_t i = 0; i < LAYOUT_GUARD; i += 8)
			if (*(const uint64_t *)((const char *)base + at[g] + i) != LAYOUT_GUARD_WORD) {
				report_error("rank %d: the guard word %zu B past the %s part was "
					     "overwritten: something wrote past it", l->rank, i, part[g]);
				return -1;
			}
	return 0;
}

void layout_count_row(const struct moe_layout *l, const struct route *routes, void *base)
{
	uint64_t *row = layout_matrix(l, base) + (size_t)l->rank * l->world;

	for (int d = 0; d < l->world; d++)
		row[d] = 0;
	for (int t = 0; t < l->tokens; t++)
		for (int d = 0; d < l->world; d++)
			row[d] += routes[t].ranks >> d & 1;
}

uint64_t layout_send_index(const struct moe_layout *l, const uint64_t *m, int h, int d)
{
	uint64_t sum = 0;

	for (int i = 0; i < d; i++)
		sum += m[(size_t)h * l->world + i];
	return sum;
}

uint64_t layout_recv_index(const struct moe_layout *l, const uint64_t *m, int s, int d)
{
	uint64_t sum = 0;

	for (int i = 0; i < s; i++)
		sum += m[(size_t)i * l->world + d];
	return sum;
}

/* One dispatch record: token, K, the K (expert, weight) pairs, then the payload. */
static void pack_record(const struct moe_layout *l, const struct moe_opts *opts,
			const struct route *r, int t, uint32_t *rec)
{
	uint32_t *words = layout_rec_words(l, rec);

	rec[0] = (uint32_t)t;
	rec[1] = (uint32_t)l->topk;
	for (int i = 0; i < l->topk; i++) {
		rec[2 + 2 * i] = r->expert[i];
		rec[3 + 2 * i] = r->weight[i];
	}
	for (uint32_t j = 0; j < l->hidden / 4; j++)
		words[j] = token_word(opts->seed, l->rank, t, j);
}

void layout_pack(const struct moe_layout *l, const struct moe_opts *opts, const uint64_t *m,
		 const struct route *routes, void *base)
{
	for (int d = 0; d < l->world; d++) {
		uint64_t at = layout_send_index(l, m, l->rank, d);

		for (int t = 0; t < l->tokens; t++)
			if (routes[t].ranks >> d & 1)
				pack_record(l, opts, &routes[t], t, layout_rec(l, base, l->send, at++));
	}
}

void layout_show(const struct moe_layout *l, const uint64_t *m)
{
	char in[256] = "", out[256] = "";
	size_t ni = 0, no = 0;

	for (int p = 0; p < l->world; p++) {
		ni += (size_t)snprintf(in + ni, sizeof(in) - ni, "%s%llu from %d at %llu",
				       p ? ", " : "", (unsigned long long)m[(size_t)p * l->world + l->rank],
				       p, (unsigned long long)layout_recv_index(l, m, p, l->rank));
		no += (size_t)snprintf(out + no, sizeof(out) - no, "%s%llu to %d at its %llu",
				       p ? ", " : "", (unsigned long long)m[(size_t)l->rank * l->world + p],
				       p, (unsigned long long)layout_recv_index(l, m, l->rank, p));
		if (ni >= sizeof(in) || no >= sizeof(out))
			break;
	}
	show("layout in", "records %s (our column's prefix sums)", in);
	show("layout out", "records %s (its column's prefix sums)", out);
}
