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

/* The words of -o and --datatype; a wrong one is an "unknown value". */
static const char *const coll_names[] = { [COLL_ALL_REDUCE] = "all_reduce",
					  [COLL_REDUCE_SCATTER] = "reduce_scatter",
					  [COLL_ALL_GATHER] = "all_gather" };
static const char *const type_names[] = { [DT_FLOAT] = "float", [DT_INT32] = "int32" };

const struct cli_option ring_cli_options[] = {
	{ "op", 'o', "COLL", "all_reduce, reduce_scatter or all_gather (default: all_reduce)", CLI_NAME_AT(struct ring_opts, coll, "value", coll_names, 0) },
	{ "datatype", CLI_KEY_DATATYPE, "TYPE", "float or int32; the reduction is sum (default: float)", CLI_NAME_AT(struct ring_opts, dt, "value", type_names, 0) },
	{ "slots", CLI_KEY_SLOTS, "K", "receive slots per neighbour, credits in flight (default: 8, NCCL_STEPS)", CLI_INT_AT(struct ring_opts, slots, 1, MAX_SLOTS) },
	{ "slot-bytes", CLI_KEY_SLOT_BYTES, "C", "bytes per slot: the largest piece (default: 64K)", CLI_SIZE_AT(struct ring_opts, slot_bytes, ELEM_SIZE, MAX_SLOT_BYTES) },
	{ "slow", CLI_KEY_SLOW, "RANK:MS", "for tests: rank RANK holds each slot MS ms before freeing it", CLI_PAIR_AT(struct ring_opts, slow_rank, 1 << 20, slow_ms, 10000, "RANK:MS (a rank, and 0 to 10000 ms)") },
	{ "schedule", CLI_KEY_SCHEDULE, NULL, "print the schedule and run it on the CPU for --world-size ranks; no device", CLI_FLAG_AT(struct ring_opts, schedule) },
	{ 0 },
};

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
