/* main.c: step 10: new weights from the trainers to the inference fleet: a plan computed once, WRITEs straight into every replica's buffers, counted by FETCH_ADD, two versions flipped whole. */
#include "clock.h"
#include "compare.h"
#include "control.h"
#include "cq_qp_rts.h"
#include "dev_limits.h"
#include "device.h"
#include "fault.h"
#include "fp8.h"
#include "launch.h"
#include "model.h"
#include "open_pd.h"
#include "pause.h"
#include "pairs.h"
#include "plan.h"
#include "post_wr.h"
#include "reg_mr.h"
#include "report.h"
#include "sync_datapath.h"
#include "sync_options.h"
#include "tcp_sync.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char purpose[] =
	"Step 10: on top of steps 01-05 and the job runtime (launchers, rendezvous, control),\n"
	"new weights go from the trainers to every serving replica as RL post-training moves\n"
	"them: ranks 0 to T - 1 (--trainers) hold Llama-3 8B's tensors (scaled by --model-dim)\n"
	"fully sharded, as FSDP; the others serve in replicas of --tp ranks, tensor-parallel,\n"
	"as Megatron. A plan, computed once from both layouts, lists every run of bytes from a\n"
	"trainer's shard to a serving rank's slice, and is checked to cover every byte once;\n"
	"the serving ranks' buffers are exchanged once. Each of --updates rounds, every trainer\n"
	"WRITEs its runs straight into every replica's spare version buffer, in chains with\n"
	"selective signalling, then a FETCH_ADD on each rank's word for it; a serving rank that\n"
	"finds every word at the new version flips its version word with its replica, and\n"
	"checks its slices byte for byte. No serving rank posts anything, but with\n"
	"--late-replica: the last replica joins after round 1, each of its ranks READs the\n"
	"version then served from its twin in replica 0, not from the trainers, checks it,\n"
	"and takes the next updates with the others.\n"
	"\n"
	"--way gather, tcp or all: the same plan moved otherwise, each round beside push: every\n"
	"trainer WRITEs its shard to trainer rank 0, which WRITEs the whole model into every\n"
	"replica; or push's runs over a TCP socket per pair. Each way lands in a cleared buffer\n"
	"and is checked byte for byte; rank 0 prints a table a round, each way's time beside\n"
	"the model (the slowest rank's bytes over --link-rate, or the rate of the round's push).\n"
	"\n"
	"Rank and world size as step 07: --rank/--world-size, else torchrun's, Open MPI's,\n"
	"MPICH's or Slurm's variables; rank 0's rendezvous on TCP port -p, at HOST or\n"
	"MASTER_ADDR. Every wait is bounded by -t; a failure ends every rank with one line\n"
	"naming the rank. Kept from the earlier steps: -d, -i, -x, -p, -t and --pause.";

struct sync_run {
	const struct sync_opts *opts;
	struct fleet *f;
	struct ring_ctl *ctl;
	const struct model *m;
	const struct plan *p;
	struct sync_push push;
	struct tcp_sync *tcp;	/* --way tcp or all: a socket per pair the plan joins */
	struct sync_compare cmp;	/* rank 0: each way's figures, for the table */
	int serving;		/* the version this serving rank serves (its version word) */
};

static uint64_t *version_word(const struct sync_run *r)
{
	return (uint64_t *)((char *)r->f->buf.addr + FLEET_VERSION);
}

static uint8_t *version_buffer(const struct sync_run *r, int v)
{
	return (uint8_t *)r->f->buf.addr + FLEET_DATA + (uint64_t)(v % 2) * r->f->slice;
}

/* Our slices at version V in its buffer against the plan: the bytes wrong, and a line when any are. */
static uint64_t check_version(const struct sync_run *r, int v, const char *when)
{
	int t;
	uint64_t i, wrong = model_check_slice(r->m, r->opts->seed, plan_tp_rank(r->p, r->f->rank), v,
					      version_buffer(r, v), &t, &i);

	if (wrong)
		show_now("check", "%s: version %d in buffer %d: %llu B wrong, the first %s element "
			 "%llu", when, v, v % 2, (unsigned long long)wrong, r->m->t[t].name,
			 (unsigned long long)i);
	return wrong;
}

static int gather(struct sync_run *r, uint64_t ns, uint64_t wrong, uint64_t bytes,
		  struct rank_result *all)
{
	struct rank_result mine = { .time_ns = ns, .wrong = wrong, .bytes = bytes };

	return ctl_gather(r->ctl, &mine, all);
}

/* A trainer, --way push: its runs straight into every replica. 0 or -1; *SENT its bytes. */
static int train_push(struct sync_run *r, int v, uint64_t *sent)
{
	struct sync_stats before = r->push.st;
	double start = now_us();

	double ms;

	if (sync_push(&r->push, v))
		return -1;
	ms = (now_us() - start) / 1000;
	*sent = r->push.st.bytes - before.bytes;
	show("push", "version %d: %llu B in %llu WRITEs, %llu posts (each a chain, its last WR "
	     "signalled), %llu FETCH_ADDs, %llu completions, in %.1f ms", v,
	     (unsigned long long)*sent, (unsigned long long)(r->push.st.writes - before.writes),
	     (unsigned long long)(r->push.st.posts - before.posts),
	     (unsigned long long)(r->push.st.atomics - before.atomics),
	     (unsigned long long)(r->push.st.signalled - before.signalled), ms);
	sync_show_convert(&r->push, v, &before, ms);
	return 0;
}

/*
 * A trainer, --way gather: every trainer but rank 0 WRITEs its shard whole
 * into rank 0's buffer; rank 0 waits for their words, then WRITEs every
 * trainer's runs, the whole model, into every replica.  0 or -1.
 */
static int train_gather(struct sync_run *r, int v, uint64_t *sent)
{
	struct sync_stats before = r->push.st;
	double start = now_us(), pushed = start;
	int rc;

	if (r->f->rank != 0) {
		if (sync_gather_send(&r->push, v))
			return -1;
		*sent = r->push.st.bytes - before.bytes;
		show("gather", "version %d: our shard, %llu B, one WRITE into rank 0's buffer at its "
		     "byte %llu, then FETCH_ADD +1 on its word for rank %d, in %.1f ms", v,
		     (unsigned long long)*sent, (unsigned long long)(FLEET_DATA +
		     r->f->stage_off[r->f->rank]), r->f->rank, (now_us() - start) / 1000);
		return 0;
	}
	r->push.gathered = true;
	rc = sync_wait_whole(&r->push, v);
	if (!rc) {
		show("gather", "version %d: the words of the %d other trainers read %d: the whole "
		     "model is here, %llu B, in %.1f ms", v, r->f->trainers - 1, v,
		     (unsigned long long)(r->f->stage_off[r->f->trainers - 1] +
		     r->m->tr_bytes[r->f->trainers - 1]), (now_us() - start) / 1000);
		pushed = now_us();
		rc = sync_push(&r->push, v);
	}
	r->push.gathered = false;
	if (rc)
		return -1;
	*sent = r->push.st.bytes - before.bytes;
	show("gather", "version %d: every trainer's runs from here, %llu B in %llu WRITEs, %llu "
	     "posts, %llu FETCH_ADDs (one a serving rank, on its gathered word), in %.1f ms", v,
	     (unsigned long long)*sent, (unsigned long long)(r->push.st.writes - before.writes),
	     (unsigned long long)(r->push.st.posts - before.posts),
	     (unsigned long long)(r->push.st.atomics - before.atomics), (now_us() - start) / 1000);
	sync_show_convert(&r->push, v, &before, (now_us() - pushed) / 1000);
	return 0;
}

/* A trainer, --way tcp: push's runs over its socket to each serving rank. 0 or -1. */
static int train_tcp(struct sync_run *r, int v, uint64_t *sent)
{
	struct tcp_sync_stats st = { 0 };
	double start = now_us();

	if (tcp_sync_run(r->tcp, (uint8_t *)r->f->buf.addr + FLEET_DATA, 0, v, &st))
		return -1;
	*sent = st.bytes_out;
	show("tcp", "version %d: %llu B in %llu sendmsg() calls (at most 64 runs each), %llu "
	     "poll()s, in %.1f ms", v, (unsigned long long)st.bytes_out,
	     (unsigned long long)st.sends, (unsigned long long)st.polls, (now_us() - start) / 1000);
	return 0;
}

/* Every rank, before way W: a barrier, so that every way starts from the same moment. */
static int way_begin(struct sync_run *r, int w, struct rank_result *all)
{
	show_heading(w == WAY_PUSH ? "stage 10, way push: every trainer WRITEs its runs straight "
		     "into every replica" : w == WAY_GATHER ? "stage 10, way gather: the shards to "
		     "trainer rank 0, then rank 0 WRITEs the whole model into every replica" :
		     "stage 10, way tcp: the same plan's runs, over a socket per pair");
	return gather(r, 0, 0, 0, all);
}

/* Every rank, after way W: its time and bytes to rank 0, which notes the way's row. */
static int way_end(struct sync_run *r, int w, int v, uint64_t ns, uint64_t wrong, uint64_t sent,
		   struct rank_result *all)
{
	if (gather(r, ns, wrong, sent, all))
		return -1;
	if (r->ctl->rank == 0)
		compare_note(&r->cmp, w, v, all);
	return 0;
}

/* A trainer's round: the new shard, each way of --way, then the two barriers of the flip. */
static int train_round(struct sync_run *r, int v, struct rank_result *all)
{
	uint64_t first_ns = 0, first_sent = 0;

	/* The update: a training step's new weights, seeded, each element unlike the last version's. */
	model_fill_shard(r->m, r->opts->seed, r->f->rank, v, (uint8_t *)r->f->buf.addr + FLEET_DATA);
	r->push.version = v;
	for (int w = WAY_PUSH; w < SYNC_WAYS; w++) {
		uint64_t sent = 0, ns;
		double start;
		int rc;

		if (!sync_runs_way(r->opts, w))
			continue;
		if (way_begin(r, w, all))
			return -1;
		start = now_us();
		rc = w == WAY_PUSH ? train_push(r, v, &sent) : w == WAY_GATHER ?
		     train_gather(r, v, &sent) : train_tcp(r, v, &sent);
		if (rc)
			return -1;
		ns = (uint64_t)((now_us() - start) * 1000);
		if (!first_ns) {
			first_ns = ns;
			first_sent = sent;
		}
		if (way_end(r, w, v, ns, 0, sent, all))
			return -1;
	}
	if (gather(r, 0, 0, 0, all))
		return -1;
	return gather(r, first_ns, 0, first_sent, all);
}

/* A rank of the late replica in round 1: no WRITE comes to it; it waits out the round's two barriers. */
static int sit_out(struct sync_run *r, struct rank_result *all)
{
	show("late", "replica %d joins after round 1 (--late-replica): no trainer WRITEs version 1 "
	     "to it, and it serves nothing yet", plan_replica(r->p, r->f->rank));
	/* Push's start and end, then the flip's two. */
	for (int b = 0; b < 4; b++)
		if (gather(r, 0, 0, 0, all))
			return -1;
	return 0;
}

/*
 * A rank of the late replica, as round W + 1 begins: the version its source
 * (replica 0's rank of its TP rank) serves, by RDMA READ from the source's
 * buffer, not from the trainers: first the source's version word, a number
 * a peer sends, checked to be W before it picks a buffer; then that buffer,
 * checked byte for byte; then we serve it.  The source's buffer W % 2 stays
 * still until every rank has passed round W + 1's first barrier, which we
 * reach only after this.  0, or -1 after ctl_fail.
 */
static int pull_current(struct sync_run *r, int w)
{
	struct fleet *f = r->f;
	int src = fleet_pull_peer(f, f->rank);
	uint64_t reads = 0, got, wrong, msg = limit_value(&f->dev, LIMIT_MSG_SZ);
	uint64_t max = msg < SYNC_READ_MAX ? msg : SYNC_READ_MAX, at;
	double start = now_us();

	if (sync_pull(&r->push, src, FLEET_VERSION, FLEET_PEER_VERSION, 8, 8, &reads))
		return -1;
	got = __atomic_load_n((uint64_t *)((char *)f->buf.addr + FLEET_PEER_VERSION), __ATOMIC_ACQUIRE);
	if (got != (uint64_t)w) {
		ctl_fail(r->ctl, src, "its version word reads %llu after round %d, not %d: refused "
			 "before its buffer was read", (unsigned long long)got, w, w);
		return -1;
	}
	at = FLEET_DATA + (uint64_t)(w % 2) * f->slice;
	if (sync_pull(&r->push, src, at, at, f->slice, max, &reads))
		return -1;
	wrong = check_version(r, w, "pulled");
	if (wrong) {
		ctl_fail(r->ctl, src, "the version %d rank %d READ from it holds %llu wrong bytes", w,
			 f->rank, (unsigned long long)wrong);
		return -1;
	}
	__atomic_store_n(version_word(r), (uint64_t)w, __ATOMIC_RELEASE);
	r->serving = w;
	show("pull", "version %d from rank %d's buffer %d by RDMA READ, not from the trainers: its "
	     "version word (8 B) read first, then %llu B, in %llu READs of at most %llu B (the "
	     "smaller of %llu and the port's max_msg_sz %llu), at most %d in flight (the agreed "
	     "rd_atomic), in %.1f ms", w, src, w % 2, (unsigned long long)f->slice,
	     (unsigned long long)reads, (unsigned long long)max,
	     (unsigned long long)SYNC_READ_MAX, (unsigned long long)msg,
	     f->conn[src].max_rd_atomic < SYNC_READS ? f->conn[src].max_rd_atomic : SYNC_READS,
	     (now_us() - start) / 1000);
	show("check", "pulled: version %d in buffer %d: all %llu B of our slices right, byte for byte "
	     "as the plan says; we serve it from now", w, w % 2, (unsigned long long)f->slice);
	return 0;
}

/* A serving rank, way W of version V: until every byte of it is in its buffer; 0 or -1. */
static int serve_way(struct sync_run *r, int w, int v, uint64_t *got)
{
	struct tcp_sync_stats st = { 0 };
	int rc;

	*got = r->f->slice;
	if (w == WAY_PUSH) {
		if (r->opts->hold_rank == r->f->rank && v == 2) {
			r->push.hold_ms = r->opts->hold_ms;
			r->push.version = v;
			if (sync_hold(&r->push))
				return -1;
		}
		if (sync_wait_whole(&r->push, v))
			return -1;
		show("signals", "version %d: the words of all %d trainers read %d: every run of it is "
		     "in buffer %d, no receive posted", v, r->p->sources[r->f->rank], v - r->push.missed,
		     v % 2);
		return 0;
	}
	if (w == WAY_GATHER) {
		r->push.gathered = true;
		rc = sync_wait_whole(&r->push, v);
		r->push.gathered = false;
		if (rc)
			return -1;
		show("signals", "version %d by gather: rank 0's gathered word reads %d: every run of "
		     "it is in buffer %d, from rank 0 alone, no receive posted", v, v, v % 2);
		return 0;
	}
	if (tcp_sync_run(r->tcp, (uint8_t *)r->f->buf.addr + FLEET_DATA, r->f->slice, v, &st))
		return -1;
	*got = st.bytes_in;
	show("tcp", "version %d: %llu B from %d trainers in %llu recvmsg() calls, each run read "
	     "straight into buffer %d, %llu poll()s: the last byte of each stream is the signal",
	     v, (unsigned long long)st.bytes_in, r->p->sources[r->f->rank],
	     (unsigned long long)st.recvs, v % 2, (unsigned long long)st.polls);
	return 0;
}

/* A serving rank, each way of --way: the buffer cleared, the way, its check byte for byte. */
static int serve_ways(struct sync_run *r, int v, struct rank_result *all)
{
	for (int w = WAY_PUSH; w < SYNC_WAYS; w++) {
		uint64_t wrong, got, ns;
		double start;

		if (!sync_runs_way(r->opts, w))
			continue;
		/* Version 0's zeros in the buffer being filled: a way that leaves a byte out is seen. */
		memset(version_buffer(r, v), 0, r->f->slice);
		if (way_begin(r, w, all))
			return -1;
		start = now_us();
		if (serve_way(r, w, v, &got))
			return -1;
		ns = (uint64_t)((now_us() - start) * 1000);
		wrong = check_version(r, v, sync_way_names[w]);
		if (wrong)
			return ctl_fail(r->ctl, r->f->rank, "its slices of version %d by --way %s hold "
					"%llu wrong bytes", v, sync_way_names[w],
					(unsigned long long)wrong), -1;
		if (r->opts->way != WAY_PUSH)
			show("check", "version %d by %s: all %llu B of our slices right, byte for byte as "
			     "the plan says, in %.1f ms", v, sync_way_names[w], (unsigned long long)got,
			     ns / 1e6);
		if (way_end(r, w, v, ns, wrong, 0, all))
			return -1;
	}
	return 0;
}

/* A serving rank's round: serve V - 1 while V lands, each way, flip with the replica, read V back. */
static int serve_round(struct sync_run *r, int v, struct rank_result *all)
{
	uint64_t wrong, want = r->f->slice;
	int seen;

	if (fleet_late(r->f, r->f->rank) && v == 1)
		return sit_out(r, all);
	if (fleet_late(r->f, r->f->rank) && v == 2 && pull_current(r, v - 1))
		return -1;
	if (v > 1 && check_version(r, v - 1, "serving while the next lands"))
		return ctl_fail(r->ctl, r->f->rank, "the version it serves was not whole"), -1;
	if (serve_ways(r, v, all))
		return -1;
	/* Every WRITE of version V has landed: none may have touched the buffer we serve. */
	if (v > 1 && check_version(r, v - 1, "after version v landed"))
		return ctl_fail(r->ctl, r->f->rank, "version %d's WRITEs reached the buffer of the "
				"version it serves", v), -1;
	/* Barrier 1: every rank of every replica whole; only then may a replica's ranks flip. */
	if (gather(r, 0, 0, 0, all))
		return -1;
	__atomic_store_n(version_word(r), (uint64_t)v, __ATOMIC_RELEASE);
	r->serving = v;
	/* The reader: whatever version the word says, that buffer, byte for byte. */
	seen = (int)__atomic_load_n(version_word(r), __ATOMIC_ACQUIRE);
	wrong = check_version(r, seen, "after the flip");
	if (wrong) {
		ctl_fail(r->ctl, r->f->rank, "its slices of version %d hold %llu wrong bytes", seen,
			 (unsigned long long)wrong);
		return -1;
	}
	show("check", "round %d: version %d in buffer %d: all %llu B of our slices right, byte for "
	     "byte as the plan says%s", v, seen, seen % 2, (unsigned long long)want,
	     v > 1 ? "; version v - 1 served whole while it landed" : "");
	/* Barrier 2: every reader off the old buffer: the next version may be written there. */
	return gather(r, 0, wrong, want, all);
}

/* Rank 0, after a round's second barrier: the slowest trainer's push and every serving rank's check. */
static void show_round(const struct sync_run *r, int v, const struct rank_result *all)
{
	uint64_t slowest = 0, bytes = 0, wrong = 0;
	bool out = v == 1 && r->f->late_from < r->f->world;
	int replicas = (r->f->world - r->f->trainers) / r->opts->tp - out, ranks = 0;

	if (r->ctl->rank != 0)
		return;
	for (int k = 0; k < r->f->world; k++) {
		if (k < r->f->trainers && all[k].time_ns > slowest)
			slowest = all[k].time_ns;
		if (k >= r->f->trainers) {
			bytes += all[k].bytes;
			wrong += all[k].wrong;
			ranks += all[k].bytes > 0;
		}
	}
	show("round", "%d: version %d whole in %d replica%s%s: %llu B checked on %d serving ranks, "
	     "%llu wrong; the slowest trainer pushed in %.1f ms", v, v, replicas,
	     replicas == 1 ? "" : "s", out ? " (the late replica joins after this round)" : "",
	     (unsigned long long)bytes, ranks, (unsigned long long)wrong, slowest / 1e6);
	compare_show(&r->cmp, v);
}

/* A serving rank whose update failed: what it still serves, checked. */
static void show_still_serving(const struct sync_run *r)
{
	if (fleet_trains(r->f) || r->serving < 1 || !r->f->buf.addr)
		return;
	show_now("versions", "the update after version %d did not finish: we still serve version %d "
		 "from buffer %d, %s", r->serving, r->serving, r->serving % 2,
		 check_version(r, r->serving, "still serving") ? "NOT whole (see above)" :
		 "whole (checked byte for byte)");
}

static int run_rounds(struct sync_run *r)
{
	struct rank_result *all = calloc(JOB_MAX_RANKS, sizeof(*all));
	int rc = 0;

	if (!all) {
		ctl_fail(r->ctl, r->f->rank, "no memory for the rounds' results");
		return -1;
	}
	if (r->opts->hold_rank == r->f->rank && fleet_trains(r->f))
		r->push.hold_ms = r->opts->hold_ms;
	for (int v = 1; v <= r->opts->updates && !rc; v++) {
		show_heading(fleet_trains(r->f) ? "stage 10, round: a new version, pushed to every "
			     "replica" : "stage 10, round: serve, let the new version land, flip");
		rc = fleet_trains(r->f) ? train_round(r, v, all) : serve_round(r, v, all);
		if (!rc)
			show_round(r, v, all);
	}
	if (rc)
		show_still_serving(r);
	free(all);
	return rc;
}

static void show_roles(const struct sync_run *r)
{
	int me = r->f->rank;

	if (fleet_trains(r->f))
		show("role", "rank %d trains: its shard is %llu B of the model's %llu B", me,
		     (unsigned long long)r->m->tr_bytes[me],
		     (unsigned long long)model_src_bytes(r->m));
	else
		show("role", "rank %d serves: replica %d, TP rank %d of %d; its slice is %llu B of the "
		     "model's %llu B, in two version buffers%s", me, plan_replica(r->p, me),
		     plan_tp_rank(r->p, me), r->opts->tp, (unsigned long long)r->f->slice,
		     (unsigned long long)model_dst_bytes(r->m), fleet_late(r->f, me) ?
		     "; it joins after round 1 (--late-replica)" : "");
}

/* The plan and both layouts, set up and met, then the rounds; 0 or -1. */
static int run_rank(const struct cli_common *common, const struct sync_opts *opts,
		    const struct launch *l, struct fleet *f, struct tcp_sync *tcp, struct ring_ctl *ctl)
{
	struct endpoint *ends = NULL;
	bool tcp_too = sync_runs_way(opts, WAY_TCP);
	struct model *m = calloc(1, sizeof(*m));
	struct hello mine = { .rank = l->rank, .world = l->world };
	struct plan p = { 0 };
	const char *failure = NULL;
	struct sync_run r = { .opts = opts, .f = f, .tcp = tcp, .ctl = ctl, .m = m, .p = &p };
	int rc = -1;

	if (!m) {
		report_error("rank %d: no memory for the model's tables", l->rank);
		failure = "its set-up failed (see its output)";
	} else {
		model_init(m, opts);
		model_show(m, opts);
		if (plan_build(&p, m, l->world) || plan_check(&p, m)) {
			failure = "its plan failed (see its output)";
		} else {
			plan_show(&p, m);
			show("plan check", "every byte of every replica's %d slices covered by exactly one "
			     "run; no trainer holds the whole model, nor a serving rank at --tp %d",
			     opts->tp, opts->tp);
		}
	}
	if (!failure && fleet_open(f, common, opts, m, &p))
		failure = "its set-up failed (see its output)";
	if (!failure && tcp_too && (!(ends = calloc(SYNC_MAX_RANKS, sizeof(*ends))) ||
				    tcp_sync_listen(tcp, ctl, &p, common->timeout_s)))
		failure = "its TCP set-up failed (see its output)";
	sync_opts_format(opts, mine.options, sizeof(mine.options));
	if (fleet_meet(f, ctl, l, &mine, failure, m, &p, opts))
		goto free_plan;
	if (tcp_too && (ctl_exchange_ports(ctl, l->host, tcp_sync_port(tcp), ends) ||
			tcp_sync_connect(tcp, ends)))
		goto free_plan;
	compare_init(&r.cmp, opts, m, &p);
	sync_push_init(&r.push, f, ctl, &p, m, common->timeout_s);
	r.push.missed = fleet_late(f, f->rank) ? 1 : 0;
	show_roles(&r);
	rc = run_rounds(&r);
	if (!rc && common->pause && pause_until_told("every update is in (see 'rdma resource show')"))
		rc = -1;
free_plan:
	free(ends);
	plan_free(&p);
	free(m);
	return rc;
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    post_wr_faults, NULL };

int main(int argc, char **argv)
{
	struct sync_opts opts;
	const struct cli_stage stages[] = { SYNC_STAGE(&opts), JOB_STAGE(&opts.job),
					    CQ_QP_PATH_STAGE(&opts.conn), { 0 } };
	const struct cli_spec spec = { .program = "10_weight_sync", .purpose = purpose,
				       .connects = true, .pauses = true, .stages = stages,
				       .faults = faults };
	struct cli_common common;
	struct launch l;
	struct fleet f;
	struct tcp_sync tcp;
	struct ring_ctl ctl;
	int usage, status = EXIT_FAILURE, failures;

	sync_opts_default(&opts);
	usage = cli_parse(argc, argv, &spec, &common);
	if (usage != CLI_RUN)
		return usage;
	if (opts.fp8_of)
		return fp8_show_list(opts.fp8_of);
	if (launch_resolve(&opts.job, &common, &l) || sync_opts_check(&opts, l.world) ||
	    model_check_tp(opts.dim, opts.tp))
		return 2;
	ctl_init(&ctl, &l, common.timeout_s);
	fleet_init(&f, &l, &opts);
	tcp_sync_init(&tcp);
	if (run_rank(&common, &opts, &l, &f, &tcp, &ctl) == 0)
		status = EXIT_SUCCESS;

	show_heading("teardown: every rank releases what it made, in reverse order");
	tcp_sync_close(&tcp);
	failures = fleet_close(&f);
	ctl_close(&ctl);
	show("teardown", "%s", failures ? "some releases failed (see above)" : "every object released");
	return failures ? EXIT_FAILURE : status;
}
