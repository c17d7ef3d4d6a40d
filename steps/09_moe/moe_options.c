/* moe_options.c: step 09's part of the command line: the tokens, their size, the experts, the gate's top-k and seed, the signal, the rank. */
#include "moe_options.h"
#include "report.h"

#include <stdio.h>

#define MAX_TOKENS 4096
#define MAX_HIDDEN ((size_t)64 << 10)

void moe_opts_default(struct moe_opts *opts)
{
	/*
	 * DeepSeek-V3, scaled down (moe_opts_show prints the arithmetic): a
	 * hidden size of 7168 dispatched in FP8, one byte an element, as DeepEP
	 * dispatches; 8 routed experts per rank, as 256 experts over 32 GPUs;
	 * top-8; 128 tokens per rank, a decoding batch.
	 */
	*opts = (struct moe_opts){ .tokens = 128, .hidden = 7168, .experts = 8, .topk = 8,
				   .seed = 1, .hold_rank = -1, .plant_rank = -1 };
	job_opts_default(&opts->job, MOE_MAX_RANKS);
	nccl_opts_default(&opts->sizes);
}

int moe_row_tokens(const struct moe_opts *opts, size_t size)
{
	return (int)(size / opts->hidden);
}

int moe_most_tokens(const struct moe_opts *opts)
{
	return opts->sizes.sized ? moe_row_tokens(opts, opts->sizes.maxbytes) : opts->tokens;
}

static const char *const signal_names[] = { [SIGNAL_FADD] = "fadd", [SIGNAL_IMM] = "imm" };

const struct cli_option moe_cli_options[] = {
	{ "tokens", CLI_KEY_TOKENS, "T", "tokens per rank (default: 128)", CLI_INT_AT(struct moe_opts, tokens, 0, MAX_TOKENS) },
	{ "hidden", CLI_KEY_HIDDEN, "BYTES", "bytes per token, a multiple of 4 (default: 7168, DeepSeek-V3's hidden size in FP8)", CLI_SIZE_AT(struct moe_opts, hidden, 4, MAX_HIDDEN) },
	{ "experts", CLI_KEY_EXPERTS, "E", "experts per rank (default: 8, DeepSeek-V3's 256 over 32 ranks)", CLI_INT_AT(struct moe_opts, experts, 1, 256) },
	{ "topk", CLI_KEY_TOPK, "K", "distinct experts per token (default: 8, DeepSeek-V3's)", CLI_INT_AT(struct moe_opts, topk, 1, MOE_MAX_TOPK) },
	{ "seed", CLI_KEY_SEED, "S", "the gate's and the tokens' seed (default: 1)", CLI_U32_AT(struct moe_opts, seed) },
	{ "skew", CLI_KEY_SKEW, "PERCENT", "each of a token's experts is one of rank 0's with this chance, while any is left; else any (default: 0, a uniform gate)", CLI_INT_AT(struct moe_opts, skew, 0, 100) },
	{ "signal", CLI_KEY_SIGNAL, "KIND", "fadd: a remote FETCH_ADD on the peer's word for the sender (one per sender), which it polls; imm: the last WRITE with immediate, a receive completion (default: fadd)", CLI_NAME_AT(struct moe_opts, signal, "signal", signal_names, 0) },
	{ "hold", CLI_KEY_HOLD, "RANK:MS", "for tests: rank RANK waits MS ms between dispatch and combine", CLI_PAIR_AT(struct moe_opts, hold_rank, MOE_MAX_RANKS - 1, hold_ms, 600000, "RANK:MS, a rank and milliseconds") },
	{ "plant-count", CLI_KEY_PLANT_COUNT, "RANK:N", "for tests: rank RANK WRITEs N as its count for the next rank; every rank must refuse a count past its bound", CLI_PAIR_AT(struct moe_opts, plant_rank, MOE_MAX_RANKS - 1, plant_count, 1 << 30, "RANK:N, a rank and a count") },
	{ 0 },
};

int moe_opts_check(const struct moe_opts *opts, int world)
{
	if (opts->hidden % 4) {
		report_error("--hidden %zu is not a multiple of 4: a token is carried as 32-bit words, "
			     "so that the check is exact", opts->hidden);
		return -1;
	}
	if (opts->sizes.sized && nccl_opts_check(&opts->sizes))
		return -1;
	if (opts->sizes.sized && opts->sizes.maxbytes / opts->hidden > MAX_TOKENS) {
		report_error("--maxbytes %zu is %zu tokens of %zu B (--hidden) a rank, more than %d",
			     opts->sizes.maxbytes, opts->sizes.maxbytes / opts->hidden, opts->hidden,
			     MAX_TOKENS);
		return -1;
	}
	if (world > MOE_MAX_RANKS) {
		report_error("%d ranks: step 09 connects every pair, and takes at most %d ranks",
			     world, MOE_MAX_RANKS);
		return -1;
	}
	if (opts->topk > world * opts->experts) {
		report_error("--topk %d is more than the %d experts of %d ranks x %d (--experts): a "
			     "token's top-k experts are distinct; lower --topk or raise --experts",
			     opts->topk, world * opts->experts, world, opts->experts);
		return -1;
	}
	return 0;
}

void moe_opts_show(const struct moe_opts *opts, int world)
{
	show("model", "DeepSeek-V3: hidden 7168, 256 routed experts, top-8; bf16 is 7168 x 2 = "
	     "14336 B a token, DeepEP dispatches FP8: 7168 x 1 = 7168 B (combine returns bf16)");
	show("workload", "%d ranks x %d tokens of %zu B (%zu 32-bit words), %d experts a rank (%d "
	     "in all), top-%d, seed %u", world, opts->tokens, opts->hidden, opts->hidden / 4,
	     opts->experts, world * opts->experts, opts->topk, opts->seed);
	if (opts->signal == SIGNAL_FADD)
		show("signal kind", "fadd (the default): each chain to a peer ends with a FETCH_ADD +1 "
		     "on the peer's word of the phase for the sender (a word per sender); no receive "
		     "is posted, the peer polls its N - 1 words");
	else
		show("signal kind", "imm: each chain to a peer ends with a WRITE with immediate naming "
		     "the exchange, the phase and the sender; every rank posts its receives before the "
		     "go-ahead and polls its CQs for N - 1 receive completions");
	if (opts->sizes.sized)
		show("sweep", "-b %zu to --maxbytes %zu B of tokens a rank, x %d a row: %d to %d tokens "
		     "of %zu B (--tokens unused); each row a layout, %d warm-up and %d timed dispatch "
		     "and combine pairs%s", opts->sizes.minbytes, opts->sizes.maxbytes,
		     opts->sizes.stepfactor, moe_row_tokens(opts, opts->sizes.minbytes),
		     moe_most_tokens(opts), opts->hidden, opts->sizes.warmup, opts->sizes.iters,
		     opts->sizes.check ? ", then one on cleared buffers, every token checked" : "");
	if (opts->skew)
		show("--skew", "%d%%: each of a token's experts is one of rank 0's with that chance: "
		     "rank 0 is the hot rank, and its inbound links the incast", opts->skew);
}

void moe_opts_format(const struct moe_opts *opts, char *buf, size_t len)
{
	int n = snprintf(buf, len, "--tokens %d --hidden %zu --experts %d --topk %d --seed %u",
			 opts->tokens, opts->hidden, opts->experts, opts->topk, opts->seed);

	/* Named only when given, so that a uniform gate's text stays what it was. */
	if (opts->skew && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " --skew %d", opts->skew);
	if (opts->signal != SIGNAL_FADD && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " --signal %s", signal_names[opts->signal]);
	if (opts->job.transport != TRANSPORT_RDMA && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " --transport %s",
			      transport_names[opts->job.transport]);
	if (opts->sizes.sized && n > 0 && (size_t)n + 1 < len) {
		buf[n++] = ' ';
		nccl_opts_format(&opts->sizes, buf + n, len - (size_t)n);
	}
}
