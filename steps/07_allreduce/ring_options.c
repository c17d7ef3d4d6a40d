/* ring_options.c: stage 7's part of the command line: the collective, the datatype, the ring's slots (the rank and the transport: job_options.c; the sizes: nccl_options.c). */
#include "ring_options.h"
#include "report.h"

#include <stdio.h>
#include <string.h>

#define MAX_SLOT_BYTES ((size_t)16 << 20)

void ring_opts_default(struct ring_opts *opts)
{
	*opts = (struct ring_opts){
		.coll = COLL_ALL_REDUCE, .dt = DT_FLOAT,
		.slots = DEFAULT_SLOTS, .slot_bytes = DEFAULT_SLOT_BYTES, .slow_rank = -1,
	};
	job_opts_default(&opts->job, MAX_WORLD);
	nccl_opts_default(&opts->sizes);
}

const struct cli_option ring_cli_options[] = {
	{ "op", 'o', "COLL", "all_reduce, reduce_scatter or all_gather (default: all_reduce)" },
	{ "datatype", CLI_KEY_DATATYPE, "TYPE", "float or int32; the reduction is sum (default: float)" },
	{ "slots", CLI_KEY_SLOTS, "K", "receive slots per neighbour, credits in flight (default: 8, NCCL_STEPS)" },
	{ "slot-bytes", CLI_KEY_SLOT_BYTES, "C", "bytes per slot: the largest piece (default: 64K)" },
	{ "slow", CLI_KEY_SLOW, "RANK:MS", "for tests: rank RANK holds each slot MS ms before freeing it" },
	{ "schedule", CLI_KEY_SCHEDULE, NULL, "print the schedule and run it on the CPU for --world-size ranks; no device" },
	{ 0 },
};

/* One of the N words of NAMES into *OUT; else an error naming CHOICES. */
static int parse_pick(const char *name, const char *arg, const char *const *names, size_t n,
		      const char *choices, int *out)
{
	int i = cli_pick(arg, names, n);

	if (i < 0) {
		report_error("%s: unknown value '%s'; use %s", name, arg, choices);
		return -1;
	}
	*out = i;
	return 0;
}

int ring_parse_option(int key, const char *arg, void *ctx)
{
	static const char *const colls[] = { "all_reduce", "reduce_scatter", "all_gather" };
	static const char *const types[] = { "float", "int32" };
	struct ring_opts *opts = ctx;
	int v;

	switch (key) {
	case 'o':
		if (parse_pick("--op", arg, colls, 3, "all_reduce, reduce_scatter or all_gather", &v))
			return -1;
		opts->coll = (enum collective)v;
		return 0;
	case CLI_KEY_DATATYPE:
		if (parse_pick("--datatype", arg, types, 2, "float or int32", &v))
			return -1;
		opts->dt = (enum datatype)v;
		return 0;
	case CLI_KEY_SLOTS:
		return cli_parse_int("--slots", arg, 1, MAX_SLOTS, &opts->slots);
	case CLI_KEY_SLOT_BYTES:
		return cli_parse_size("--slot-bytes", arg, ELEM_SIZE, MAX_SLOT_BYTES, &opts->slot_bytes);
	case CLI_KEY_SLOW:
		return cli_parse_pair("--slow", arg, "RANK:MS (a rank, and 0 to 10000 ms)", 1 << 20,
				      10000, &opts->slow_rank, &opts->slow_ms);
	}
	/* --schedule */
	opts->schedule = true;
	return 0;
}

int ring_opts_check(const struct ring_opts *opts)
{
	if (nccl_opts_check(&opts->sizes))
		return -1;
	if (opts->slot_bytes % ELEM_SIZE) {
		report_error("--slot-bytes: %zu is not a whole number of %d-byte elements",
			     opts->slot_bytes, ELEM_SIZE);
		return -1;
	}
	return 0;
}

void ring_opts_format(const struct ring_opts *opts, char *buf, size_t len)
{
	char sizes[96];

	nccl_opts_format(&opts->sizes, sizes, sizeof(sizes));
	snprintf(buf, len, "-o %s --datatype %s %s --slots %d --slot-bytes %zu --transport %s",
		 collective_name(opts->coll), datatype_name(opts->dt), sizes, opts->slots,
		 opts->slot_bytes, transport_names[opts->job.transport]);
}
