/* weight_comm.c: step 10 as a library: the program's own rendezvous, plan, fleet and data path, behind join, update and leave. */
#include "weight_comm.h"
#include "control.h"
#include "fleet.h"
#include "launch.h"
#include "model.h"
#include "plan.h"
#include "report.h"
#include "sync_datapath.h"
#include "sync_options.h"

#include <stdbool.h>
#include <stdlib.h>

/*
 * One rank's place in the fleet.  The program (main.c) moves seeded values
 * and checks every byte against them; here the trainer's caller fills its
 * shard with real weights, and a serving rank's caller checks what lands
 * (make serve's job: every tensor gathered and compared to the trainer's,
 * bit for bit).  What is kept: the plan computed once, the buffers and
 * rkeys exchanged once, the WRITE chains and the FETCH_ADD per pair, the
 * two version buffers and the two barriers of the flip.
 */
struct weight_comm {
	struct sync_opts opts;
	struct cli_common common;
	struct launch launch;
	struct fleet fleet;
	struct ring_ctl ctl;
	struct model model;
	struct plan plan;
	struct sync_push push;
	struct rank_result all[JOB_MAX_RANKS];
	int version;		/* the last version made whole (0: none yet) */
	bool failed;		/* a call failed: the fleet is in no state to run again */
	bool verbose;
};

int weight_comm_rank(const struct weight_comm *wc) { return wc->launch.rank; }
int weight_comm_world(const struct weight_comm *wc) { return wc->launch.world; }
int weight_comm_trains(const struct weight_comm *wc) { return fleet_trains(&wc->fleet); }
int weight_comm_tensors(const struct weight_comm *wc) { return wc->model.tensors; }

int weight_comm_replica(const struct weight_comm *wc)
{
	return fleet_trains(&wc->fleet) ? -1 : plan_replica(&wc->plan, wc->launch.rank);
}

int weight_comm_tp_rank(const struct weight_comm *wc)
{
	return fleet_trains(&wc->fleet) ? -1 : plan_tp_rank(&wc->plan, wc->launch.rank);
}

const char *weight_comm_error(void)
{
	return report_first_error();
}

int weight_comm_tensor(const struct weight_comm *wc, int i, const char **name, uint64_t *rows,
		       uint64_t *cols, int *split, uint64_t *offset, uint64_t *first, uint64_t *count)
{
	const struct model *m = &wc->model;
	const struct tensor *t;
	int me = wc->launch.rank;

	if (i < 0 || i >= m->tensors)
		return -1;
	t = &m->t[i];
	*name = t->name;
	*rows = t->rows;
	*cols = t->cols;
	*split = t->split == SPLIT_COLUMN ? WEIGHT_COMM_COLUMN :
		 t->split == SPLIT_ROW ? WEIGHT_COMM_ROW : WEIGHT_COMM_NONE;
	if (fleet_trains(&wc->fleet)) {
		model_shard(m, i, me, first, count);
		*offset = m->tr_base[i][me];
		return 0;
	}
	*first = 0;
	*count = t->split == SPLIT_NONE ? t->rows * t->cols : t->rows * t->cols / (uint64_t)m->tp;
	*offset = m->tp_base[i][plan_tp_rank(&wc->plan, me)];
	return 0;
}

void *weight_comm_buffer(const struct weight_comm *wc, uint64_t *bytes)
{
	const struct fleet *f = &wc->fleet;
	uint8_t *data = (uint8_t *)f->buf.addr + FLEET_DATA;

	if (fleet_trains(f)) {
		*bytes = wc->model.tr_bytes[wc->launch.rank];
		return data;
	}
	*bytes = f->slice;
	/* Version V lies in buffer V % 2; before version 1, buffer 0 (all zeros). */
	return data + (uint64_t)(wc->version % 2) * f->slice;
}

/* The model, the plan and its check, the fleet opened and met: step 10's run_rank, without rounds. */
static int set_up(struct weight_comm *wc)
{
	struct hello mine = { .rank = wc->launch.rank, .world = wc->launch.world };
	const char *failure = NULL;

	model_init(&wc->model, &wc->opts);
	model_show(&wc->model, &wc->opts);
	if (plan_build(&wc->plan, &wc->model, wc->launch.world) || plan_check(&wc->plan, &wc->model))
		failure = "its plan failed (see its output)";
	else {
		plan_show(&wc->plan, &wc->model);
		show("plan check", "every byte of every replica's %d slices covered by exactly one run; "
		     "no trainer holds the whole model, nor a serving rank at --tp %d", wc->opts.tp,
		     wc->opts.tp);
	}
	if (!failure && fleet_open(&wc->fleet, &wc->common, &wc->opts, &wc->model, &wc->plan))
		failure = "its set-up failed (see its output)";
	sync_opts_format(&wc->opts, mine.options, sizeof(mine.options));
	if (fleet_meet(&wc->fleet, &wc->ctl, &wc->launch, &mine, failure, &wc->model, &wc->plan,
		       &wc->opts))
		return -1;
	sync_push_init(&wc->push, &wc->fleet, &wc->ctl, &wc->plan, &wc->model, wc->common.timeout_s);
	return 0;
}

/* Releases what join made, in reverse; returns how many releases failed. */
static int release_all(struct weight_comm *wc)
{
	int failures;

	show_heading("teardown: this rank releases what it made, in reverse order");
	failures = fleet_close(&wc->fleet);
	ctl_close(&wc->ctl);
	plan_free(&wc->plan);
	free(wc);
	return failures;
}

struct weight_comm *weight_comm_join(const char *device, int port, int timeout_s, int trainers,
				     int tp, int model_dim, int layers, int verbose)
{
	struct weight_comm *wc = calloc(1, sizeof(*wc));

	report_errors_clear();
	if (!wc) {
		report_error("weight_comm_join: no memory for the handle");
		return NULL;
	}
	show_quiet(!verbose);
	wc->verbose = verbose;
	wc->common = (struct cli_common){ .ib_dev = device, .ib_port = 1, .gid_idx = CLI_GID_AUTO,
					  .tcp_port = port, .timeout_s = timeout_s };
	sync_opts_default(&wc->opts);
	wc->opts.trainers = trainers;
	wc->opts.tp = tp;
	wc->opts.dim = model_dim;
	wc->opts.layers = layers;
	if (timeout_s < 1) {
		report_error("weight_comm_join: a timeout of %d s: give 1 or more", timeout_s);
		goto out_free;
	}
	if (launch_resolve(&wc->opts.job, &wc->common, &wc->launch) ||
	    sync_opts_check(&wc->opts, wc->launch.world) || model_check_tp(model_dim, tp))
		goto out_free;
	ctl_init(&wc->ctl, &wc->launch, timeout_s);
	fleet_init(&wc->fleet, &wc->launch, &wc->opts);
	if (set_up(wc))
		goto out_release;
	show_quiet(false);
	return wc;

out_release:
	release_all(wc);
	show_quiet(false);
	return NULL;
out_free:
	free(wc);
	show_quiet(false);
	return NULL;
}

/* One barrier over every rank of the fleet, through rank 0's control channel. */
static int barrier(struct weight_comm *wc)
{
	struct rank_result mine = { 0 };

	return ctl_gather(&wc->ctl, &mine, wc->all);
}

int weight_comm_update(struct weight_comm *wc)
{
	int v = wc->version + 1, rc;
	uint64_t *word = (uint64_t *)((char *)wc->fleet.buf.addr + FLEET_VERSION);

	if (wc->failed) {
		/* The first error, said again: the fleet stopped there. */
		report_error("%s", report_first_error());
		return -1;
	}
	show_quiet(!wc->verbose);
	wc->push.version = v;
	/* The data: a trainer's chains and FETCH_ADDs; a serving rank's wait for every word. */
	rc = fleet_trains(&wc->fleet) ? sync_push(&wc->push, v) : sync_wait_whole(&wc->push, v);
	/* Barrier 1: every serving rank has version V whole; only then may a replica flip. */
	if (!rc)
		rc = barrier(wc);
	if (!rc && !fleet_trains(&wc->fleet))
		__atomic_store_n(word, (uint64_t)v, __ATOMIC_RELEASE);
	/* Barrier 2: every reader off the old buffer, which version V + 1 will overwrite. */
	if (!rc)
		rc = barrier(wc);
	show_quiet(false);
	if (rc) {
		wc->failed = true;
		return -1;
	}
	wc->version = v;
	return v;
}

int weight_comm_leave(struct weight_comm *wc)
{
	int failed;

	show_quiet(!wc->verbose);
	failed = release_all(wc);
	show_quiet(false);
	return failed;
}
