/* moe_sweep.c: step 09's table, as nccl-tests' alltoall prints it, and its sweep of sizes (nccl-tests' -b, --maxbytes, -f, -n, -w, -c: the runtime's nccl_options). */
#include "moe_sweep.h"
#include "experts.h"
#include "report.h"

#include <stdio.h>

/* Every pair's "s>d BYTES, ": 56 of them at 8 ranks, a size of up to 12 digits each. */
#define MOE_PAIRS_TEXT (MOE_MAX_RANKS * (MOE_MAX_RANKS - 1) * 24)

/* The row of one phase, as nccl-tests' alltoall prints it: size is what each rank sends; its time, in us. */
static double print_row(const char *phase, const struct rank_result *all, int world, bool checked,
			uint64_t *size)
{
	uint64_t bytes = 0, time_ns = 0, wrong = 0;
	char wrong_text[24] = "N/A";
	double algbw;

	for (int r = 0; r < world; r++) {
		bytes = all[r].bytes > bytes ? all[r].bytes : bytes;
		time_ns = all[r].time_ns > time_ns ? all[r].time_ns : time_ns;
		wrong += all[r].wrong;
	}
	if (checked)
		snprintf(wrong_text, sizeof(wrong_text), "%llu", (unsigned long long)wrong);
	algbw = time_ns ? (double)bytes / (double)time_ns : 0;
	printf("%12llu  %12llu  %8s  %8s  %9.1f  %6.3f  %6.3f  %5s\n", (unsigned long long)bytes,
	       (unsigned long long)bytes / 4, "uint32", phase, (double)time_ns / 1e3, algbw,
	       algbw * (world - 1) / world, wrong_text);
	fflush(stdout);
	*size = bytes;
	return (double)time_ns / 1e3;
}

void table_header(const struct moe_run *r)
{
	const struct moe_opts *o = r->opts;
	char tokens[48];

	if (r->ctl->rank != 0)
		return;
	if (o->sizes.sized)
		snprintf(tokens, sizeof(tokens), "%d to %d tokens", moe_row_tokens(o, o->sizes.minbytes),
			 moe_most_tokens(o));
	else
		snprintf(tokens, sizeof(tokens), "%d tokens", o->tokens);
	printf("#\n# MoE all-to-all over %s: %d ranks, %s of %zu B a rank, top-%d of %d "
	       "experts\n#\n", r->transport == TRANSPORT_TCP ? "TCP" : "RDMA (verbs)",
	       r->ctl->world, tokens, o->hidden, o->topk, r->ctl->world * o->experts);
	printf("#       size         count      type     phase       time   algbw   busbw #wrong\n");
	printf("#        (B)    (elements)                           (us)  (GB/s)  (GB/s)       \n");
	fflush(stdout);
}

/*
 * Rank 0 holds every row of counts: what each rank received in dispatch from
 * its peers, beside the time its dispatch took.  A skewed gate's incast shows
 * here: the hot rank receives the most, on every peer's link at once.
 */
static void show_per_rank(const struct moe_run *r, const struct rank_result *dispatch)
{
	const uint64_t *m = r->counts;
	int world = r->ctl->world;

	for (int d = 0; d < world; d++) {
		uint64_t in = 0;

		for (int s = 0; s < world; s++)
			in += s == d ? 0 : m[(size_t)s * (size_t)world + (size_t)d];
		show("per rank", "rank %d: dispatch received %llu records, %llu B, from its peers; its "
		     "dispatch took %.1f us", d, (unsigned long long)in,
		     (unsigned long long)(in * r->l->rec), (double)dispatch[d].time_ns / 1e3);
	}
}

/* "s>d BYTES, ..." for every pair: what rank s sends rank d in a phase, from the counts matrix. */
static void format_pairs(const struct moe_run *r, enum moe_phase ph, char *buf, size_t len)
{
	const uint64_t *m = r->counts;
	int world = r->ctl->world;
	size_t n = 0;

	buf[0] = '\0';
	for (int s = 0; s < world; s++)
		for (int d = 0; d < world && n < len; d++) {
			/* Combine sends back what dispatch brought: d's tokens at s, as results. */
			uint64_t bytes = ph == PHASE_DISPATCH ? m[(size_t)s * (size_t)world + (size_t)d] * r->l->rec :
					 m[(size_t)d * (size_t)world + (size_t)s] * r->l->crec;

			if (s != d)
				n += (size_t)snprintf(buf + n, len - n, "%s%d>%d %llu", n ? ", " : "", s,
						      d, (unsigned long long)bytes);
		}
}

/*
 * Rank 0, after a row: the bytes of every pair in both phases, the figures a
 * model of the all-to-all needs (make bench-nodes reads them): a pair moves
 * its own bytes at its own link's pace, and the phase ends with its slowest.
 */
static void show_pairs(uint64_t size, const char *dispatch, const char *combine)
{
	char key[40];

	snprintf(key, sizeof(key), "pairs %llu B", (unsigned long long)size);
	show(key, "B from rank s to rank d (s>d), dispatch: %s; combine: %s", dispatch, combine);
}

int table_rows(struct moe_run *r, uint64_t wrong, bool per_rank)
{
	static const char *const names[] = { [PHASE_DISPATCH] = "dispatch", [PHASE_COMBINE] = "combine" };
	struct rank_result all[2][JOB_MAX_RANKS];
	bool checked = !r->opts->sizes.sized || r->opts->sizes.check;
	struct moe_times *t = r->times;
	int row = t && t->rows < MOE_MAX_ROWS ? t->rows++ : -1;
	double us;
	uint64_t size, dispatched = 0;
	char dispatch[MOE_PAIRS_TEXT] = "", combine[MOE_PAIRS_TEXT] = "";

	/* Read before the gathers: once they let the ranks go on, a peer's next row WRITEs its counts here. */
	if (r->ctl->rank == 0) {
		format_pairs(r, PHASE_DISPATCH, dispatch, sizeof(dispatch));
		format_pairs(r, PHASE_COMBINE, combine, sizeof(combine));
	}
	for (int ph = PHASE_DISPATCH; ph <= PHASE_COMBINE; ph++) {
		struct rank_result mine = { .time_ns = (uint64_t)(r->us[ph] * 1e3),
					    .wrong = ph == PHASE_COMBINE ? wrong : 0,
					    .bytes = r->stats[ph].bytes };

		if (ctl_gather(r->ctl, &mine, all[ph - PHASE_DISPATCH]))
			return -1;
	}
	if (r->ctl->rank != 0)
		return 0;
	for (int ph = PHASE_DISPATCH; ph <= PHASE_COMBINE; ph++) {
		us = print_row(names[ph], all[ph - PHASE_DISPATCH], r->ctl->world, checked, &size);
		if (row >= 0)
			t->us[row][ph] = us;
		if (ph == PHASE_DISPATCH)
			dispatched = size;
		if (row >= 0 && ph == PHASE_DISPATCH)
			t->bytes[row] = size;
	}
	show_pairs(dispatched, dispatch, combine);
	if (per_rank)
		show_per_rank(r, all[0]);
	return 0;
}

uint64_t check_tokens(const struct moe_run *r)
{
	struct combine_check c;

	combine_check(r->l, r->opts, r->counts, r->routes, r->mesh->buf.addr, &c);
	if (c.wrong == 0)
		show("check", "right: all %d of our tokens, every word the weighted sum of its %d "
		     "experts' outputs (CPU reference)", r->opts->tokens, r->opts->topk);
	else
		report_error("rank %d: %llu of %d tokens wrong after combine; the first, token %d: word "
			     "%u is 0x%08x, the CPU reference 0x%08x", r->ctl->rank,
			     (unsigned long long)c.wrong, r->opts->tokens, c.first, c.word, c.got, c.want);
	return c.wrong;
}

/* TIMES dispatch and combine pairs, the time of each phase summed into US; FRESH: the pair after them is checked. */
static int run_pairs(struct moe_run *r, int times, double *us, bool fresh)
{
	for (int i = 0; i < times; i++) {
		/* The row's bytes are one pair's: the last. */
		for (int ph = PHASE_DISPATCH; ph <= PHASE_COMBINE; ph++)
			r->stats[ph] = (struct a2a_stats){ 0 };
		if (run_dispatch(r))
			return -1;
		us[PHASE_DISPATCH] += r->us[PHASE_DISPATCH];
		r->fresh = fresh && i == times - 1;
		if (run_combine(r))
			return -1;
		us[PHASE_COMBINE] += r->us[PHASE_COMBINE];
	}
	return 0;
}

/* Warm-up, timed pairs, the checked pair; the row's mean times in r->us and one pair's bytes in r->stats. */
static int run_row_pairs(struct moe_run *r, uint64_t *wrong)
{
	const struct nccl_opts *n = &r->opts->sizes;
	double unused[PHASES] = { 0 }, us[PHASES] = { 0 };

	if (run_pairs(r, n->warmup, unused, false) || run_pairs(r, n->iters, us, n->check))
		return -1;
	/* The checked pair, on buffers the last timed pair cleared (phases.h): its bytes make the row's size. */
	if (n->check && run_pairs(r, 1, unused, false))
		return -1;
	r->us[PHASE_DISPATCH] = us[PHASE_DISPATCH] / n->iters;
	r->us[PHASE_COMBINE] = us[PHASE_COMBINE] / n->iters;
	*wrong = 0;
	return 0;
}

/* One row: T tokens a rank, quiet while the pairs run, checked and printed. */
static int run_row(struct moe_run *r, const struct moe_opts *all, int tokens, uint64_t *wrong)
{
	const struct moe_layout *most = r->l;
	struct moe_opts row = *all;
	struct moe_layout l;
	int rc;

	/* Fewer tokens in the same buffer, at the same offsets: its guards stay where they were. */
	row.tokens = tokens;
	layout_row(&l, most, tokens);
	gate_route(&row, r->mesh->rank, r->mesh->world, r->routes);
	r->opts = &row;
	r->l = &l;
	/* Hundreds of work requests a row: their lines would bury the table. */
	show_quiet(true);
	rc = run_layout(r) || run_row_pairs(r, wrong) ? -1 : 0;
	show_quiet(false);
	if (!rc && row.sizes.check)
		*wrong = check_tokens(r);
	if (!rc)
		rc = table_rows(r, *wrong, false);
	r->opts = all;
	r->l = most;
	return rc;
}

int sweep_sizes(struct moe_run *r, uint64_t *wrong)
{
	const struct moe_opts *all = r->opts;
	size_t bytes = all->sizes.minbytes;

	*wrong = 0;
	table_header(r);
	for (; bytes <= all->sizes.maxbytes; bytes = nccl_next_size(&all->sizes, bytes, all->hidden)) {
		uint64_t row_wrong;

		if (run_row(r, all, moe_row_tokens(all, bytes), &row_wrong))
			return -1;
		*wrong += row_wrong;
	}
	return 0;
}
