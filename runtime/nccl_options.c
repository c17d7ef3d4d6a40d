/* nccl_options.c: the job runtime: nccl-tests' options, one table for every program that prints its table: the sizes, the runs, the check. */
#include "nccl_options.h"
#include "report.h"

#include <stdio.h>

/* Registered once, for the largest size: as much as the biggest MR step 02 allows. */
#define MAX_BYTES ((size_t)1 << 32)

void nccl_opts_default(struct nccl_opts *opts)
{
	*opts = (struct nccl_opts){ .minbytes = 1 << 20, .maxbytes = 1 << 20, .stepfactor = 2,
				    .iters = 20, .warmup = 5, .check = 1 };
}

const struct cli_option nccl_cli_options[] = {
	{ "minbytes", 'b', "BYTES", "smallest size (default: 1M)", CLI_STAGE_PARSES },
	{ "maxbytes", CLI_KEY_MAXBYTES, "BYTES", "largest size, registered once (default: 1M; nccl-tests' -e)", CLI_STAGE_PARSES },
	{ "stepfactor", 'f', "N", "multiply the size by N each row (default: 2)", CLI_INT_AT(struct nccl_opts, stepfactor, 2, 1024) },
	{ "iters", 'n', "N", "timed runs per size (default: 20)", CLI_INT_AT(struct nccl_opts, iters, 1, 1000000) },
	{ "warmup_iters", 'w', "N", "untimed runs before them (default: 5)", CLI_INT_AT(struct nccl_opts, warmup, 0, 1000000) },
	{ "check", 'c', "0|1", "one more run on fresh data, every element checked (default: 1)", CLI_INT_AT(struct nccl_opts, check, 0, 1) },
	{ 0 },
};

/* -b and --maxbytes, which say the run is sized; cli_parse fills the others, as their entries say. */
int nccl_parse_option(int key, const char *arg, void *ctx)
{
	struct nccl_opts *opts = ctx;

	opts->sized = true;
	if (key == 'b')
		return cli_parse_size("--minbytes", arg, 0, MAX_BYTES, &opts->minbytes);
	return cli_parse_size("--maxbytes", arg, 0, MAX_BYTES, &opts->maxbytes);
}

int nccl_opts_check(const struct nccl_opts *opts)
{
	if (opts->minbytes > opts->maxbytes) {
		report_error("--minbytes %zu is more than --maxbytes %zu", opts->minbytes, opts->maxbytes);
		return -1;
	}
	return 0;
}

size_t nccl_next_size(const struct nccl_opts *opts, size_t bytes, size_t step)
{
	/* From 0, the next size is one step: 0 times anything stays 0. */
	return bytes ? bytes * (size_t)opts->stepfactor : step;
}

void nccl_opts_format(const struct nccl_opts *opts, char *buf, size_t len)
{
	snprintf(buf, len, "-b %zu --maxbytes %zu -f %d -n %d -w %d -c %d", opts->minbytes,
		 opts->maxbytes, opts->stepfactor, opts->iters, opts->warmup, opts->check);
}
