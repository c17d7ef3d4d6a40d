/* fuzz_moe_counts.c: libFuzzer harness for layout_take_counts, step 09's check of the counts matrix its peers WRITE. */
#include "layout.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Whether [AT, AT + LEN) lies inside the part [START, START + SIZE). */
static int inside(uint64_t at, uint64_t len, uint64_t start, uint64_t size)
{
	return at >= start && len <= size && at - start <= size - len;
}

/*
 * What layout.h promises of a matrix it accepted: every block that
 * phases.c's tokens_for and results_for take from it, every record that
 * experts_run and the combine check walk, lies inside its part.
 */
static void check_blocks(const struct moe_layout *l, const uint64_t *m)
{
	uint64_t rec_part = l->most * l->rec, crec_part = l->most * l->crec;

	for (int from = 0; from < l->world; from++)
		for (int to = 0; to < l->world; to++) {
			uint64_t n = m[(size_t)from * l->world + to];

			if (!inside(l->send + layout_send_index(l, m, from, to) * l->rec, n * l->rec,
				    l->send, rec_part) ||
			    !inside(l->recv + layout_recv_index(l, m, from, to) * l->rec, n * l->rec,
				    l->recv, rec_part) ||
			    !inside(l->comb_out + layout_recv_index(l, m, from, to) * l->crec,
				    n * l->crec, l->comb_out, crec_part) ||
			    !inside(l->comb_in + layout_send_index(l, m, from, to) * l->crec,
				    n * l->crec, l->comb_in, crec_part))
				abort();
		}
	for (int r = 0; r < l->world; r++)
		if (layout_recv_index(l, m, l->world, r) > l->most ||
		    layout_send_index(l, m, r, l->world) > l->most)
			abort();
}

/* Bytes 0 to 2: the ranks (1 to 8), the tokens a rank (0 to 63), top-K (1 to 16); then the matrix. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moe_opts opts;
	struct moe_layout l;
	uint64_t counts[MOE_MAX_RANKS * MOE_MAX_RANKS];
	char why[160];
	size_t matrix;
	void *base;
	int world, bad = -1;

	if (size < 3)
		return 0;
	moe_opts_default(&opts);
	world = 1 + data[0] % MOE_MAX_RANKS;
	opts.tokens = data[1] % 64;
	opts.topk = 1 + data[2] % MOE_MAX_TOPK;
	opts.hidden = 64;
	layout_init(&l, &opts, 0, world);
	base = calloc(1, l.bytes);
	if (!base)
		return 0;
	matrix = 8 * (size_t)world * (size_t)world;
	memcpy((char *)base + l.counts, data + 3, size - 3 < matrix ? size - 3 : matrix);
	if (layout_take_counts(&l, base, counts, &bad, why, sizeof(why)) == 0) {
		if (memcmp(counts, (char *)base + l.counts, matrix))
			abort();
		check_blocks(&l, counts);
	} else if (bad < 0 || bad >= world || !why[0]) {
		abort();
	}
	free(base);
	return 0;
}
