/* ring_comm.c: step 07 as a library: the program's own rendezvous, control channel and ring, behind join, all-reduce and leave. */
#include "ring_comm.h"
#include "control.h"
#include "launch.h"
#include "rendezvous.h"
#include "report.h"
#include "ring.h"
#include "ring_options.h"
#include "schedule.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/*
 * Step 07 registers its buffer once, as NCCL registers its own.  A training
 * framework hands a different buffer each time (DDP's buckets are rebuilt
 * after the first iteration, and freed and allocated again), so every call
 * copies into one registered staging buffer and back: two memcpy of the
 * bucket, instead of an ibv_reg_mr per call (it pins pages, in the kernel)
 * or a cache keyed by address that a freed and reused address would fool.
 */
struct ring_comm {
	struct ring_opts opts;
	struct cli_common common;
	struct launch launch;
	struct rdma_ring ring;
	struct ring_ctl ctl;
	bool failed;		/* a call failed: the ring is in no state to run again */
	bool verbose;
};

int ring_comm_rank(const struct ring_comm *rc)
{
	return rc->launch.rank;
}

int ring_comm_world(const struct ring_comm *rc)
{
	return rc->launch.world;
}

const char *ring_comm_error(void)
{
	return report_first_error();
}

/* The rendezvous, the QPs to RTS and the credits out, as step 07 meets; no TCP ring. */
static int meet_ranks(struct ring_comm *rc, const char *failure)
{
	struct hello mine = { .rank = rc->launch.rank, .world = rc->launch.world };
	struct neighbours nb;

	ring_opts_format(&rc->opts, mine.options, sizeof(mine.options));
	return ring_meet(&rc->ring, &rc->ctl, &rc->launch, &mine, failure, &nb) ||
	       ring_grant_slots(&rc->ring, &rc->ctl) ? -1 : 0;
}

/* Releases what join made, in reverse; returns how many releases failed. */
static int release_all(struct ring_comm *rc)
{
	int failures;

	show_heading("teardown: this rank releases what it made, in reverse order");
	failures = ring_close(&rc->ring);
	ctl_close(&rc->ctl);
	free(rc);
	return failures;
}

struct ring_comm *ring_comm_join(const char *device, int port, int timeout_s,
				 size_t staging_bytes, int verbose)
{
	struct ring_comm *rc = calloc(1, sizeof(*rc));
	const char *failure = NULL;

	report_errors_clear();
	if (!rc) {
		report_error("ring_comm_join: no memory for the handle");
		return NULL;
	}
	show_quiet(!verbose);
	rc->verbose = verbose;
	rc->common = (struct cli_common){ .ib_dev = device, .ib_port = 1, .gid_idx = CLI_GID_AUTO,
					  .tcp_port = port, .timeout_s = timeout_s };
	rc->ring = (struct rdma_ring){ .to_next.sock = -1, .from_prev.sock = -1 };
	ring_opts_default(&rc->opts);
	/* The staging size is compared at the rendezvous: every rank must bring the same. */
	rc->opts.sizes.minbytes = rc->opts.sizes.maxbytes = staging_bytes;
	if (staging_bytes < rc->opts.slot_bytes || staging_bytes % ELEM_SIZE) {
		report_error("ring_comm_join: a staging buffer of %zu bytes: give at least one slot "
			     "(%zu bytes), in whole 4-byte elements", staging_bytes, rc->opts.slot_bytes);
		goto out_free;
	}
	if (timeout_s < 1) {
		report_error("ring_comm_join: a timeout of %d s: give 1 or more", timeout_s);
		goto out_free;
	}
	if (launch_resolve(&rc->opts.job, &rc->common, &rc->launch))
		goto out_free;
	ctl_init(&rc->ctl, &rc->launch, timeout_s);
	if (ring_open(&rc->ring, &rc->common, &rc->opts, &rc->launch, staging_bytes))
		failure = "its set-up failed (see its output)";
	if (meet_ranks(rc, failure))
		goto out_release;
	show_quiet(false);
	return rc;

out_release:
	release_all(rc);
	show_quiet(false);
	return NULL;
out_free:
	free(rc);
	show_quiet(false);
	return NULL;
}

/* One run of the ring over the staging buffer's first COUNT elements. */
static int run_staged(struct ring_comm *rc, size_t count, enum datatype dt)
{
	struct ring_layout l = { .count = count, .world = rc->launch.world, .coll = COLL_ALL_REDUCE,
				 .dt = dt, .piece_elems = rc->opts.slot_bytes / ELEM_SIZE };
	struct plan p;
	int status;

	if (plan_build(&l, rc->launch.rank, &p)) {
		ctl_fail(&rc->ctl, rc->launch.rank, "no memory for its plan");
		return -1;
	}
	status = ring_run(&rc->ring, &l, &p, &rc->ctl, rc->common.timeout_s);
	plan_free(&p);
	return status;
}

int ring_comm_allreduce(struct ring_comm *rc, void *buf, size_t count, int dtype)
{
	size_t per_run = rc->opts.sizes.maxbytes / ELEM_SIZE;
	char *bytes = buf;

	if (rc->failed) {
		/* The first error, said again: the ring stopped there. */
		report_error("%s", report_first_error());
		return -1;
	}
	if (dtype != RING_COMM_FLOAT32 && dtype != RING_COMM_INT32) {
		report_error("ring_comm_allreduce: dtype %d: give RING_COMM_FLOAT32 (0) or "
			     "RING_COMM_INT32 (1)", dtype);
		return -1;
	}
	if (rc->launch.world == 1)
		return 0;
	show_quiet(true);
	for (size_t done = 0; done < count; done += per_run) {
		size_t n = count - done < per_run ? count - done : per_run;

		memcpy(rc->ring.data.addr, bytes + done * ELEM_SIZE, n * ELEM_SIZE);
		if (run_staged(rc, n, dtype == RING_COMM_INT32 ? DT_INT32 : DT_FLOAT)) {
			rc->failed = true;
			break;
		}
		memcpy(bytes + done * ELEM_SIZE, rc->ring.data.addr, n * ELEM_SIZE);
	}
	show_quiet(false);
	return rc->failed ? -1 : 0;
}

int ring_comm_leave(struct ring_comm *rc)
{
	int failed = 0;

	show_quiet(!rc->verbose);
	/* After a failure the other ranks are gone or going: release, meet no one. */
	if (!rc->failed)
		failed = ring_finish(&rc->ring, &rc->ctl, rc->common.timeout_s) ||
			 ring_leave(&rc->ctl) ? 1 : 0;
	failed += release_all(rc);
	show_quiet(false);
	return failed;
}
