/* main.c: step 09: MoE dispatch and combine over verbs: a variable all-to-all, every rank to every rank, signalled with remote atomics. */
#include "clock.h"
#include "control.h"
#include "device.h"
#include "fault.h"
#include "launch.h"
#include "moe_options.h"
#include "moe_sweep.h"
#include "pause.h"
#include "phases.h"
#include "report.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Twice the kernel's 10 ms cache of the device counters (RDMA_HW_STATS_DEFAULT_LIFESPAN). */
#define COUNTER_LIFESPAN_MS 20

static const char purpose[] =
	"Step 09: on top of steps 01-05 and step 07's rendezvous and launchers (not its ring),\n"
	"N ranks move a mixture-of-experts layer's tokens as DeepEP does: a seeded gate gives\n"
	"each token its top-k experts (E per rank), each rank learns how many tokens every\n"
	"peer sends it (an all-to-all of counts, WRITEs of each rank's row) and where its own\n"
	"land (prefix sums); dispatch WRITEs each token once to every rank holding one of its\n"
	"experts, straight into that rank's buffer, then signals with a remote FETCH_ADD on\n"
	"the same QP; combine sends each expert's output back the same way, and the home rank\n"
	"checks every token against a CPU reference. One RC QP per peer, N - 1 per rank.\n"
	"\n"
	"Rank and world size as step 07: --rank/--world-size, else torchrun's, Open MPI's,\n"
	"MPICH's or Slurm's variables; rank 0's rendezvous on TCP port -p, at HOST or\n"
	"MASTER_ADDR. Every wait is bounded by -t; a failure ends every rank with one line\n"
	"naming the rank. Kept from the earlier steps: -d, -i, -x, -p, -t and --pause.\n"
	"\n"
	"--signal imm signals with the chain's last WRITE with immediate instead. With -b or\n"
	"--maxbytes (step 07's nccl-tests options, with -f, -n, -w and -c), a sweep: a row per\n"
	"size of tokens a rank, T = size / --hidden, as nccl-tests' alltoall table; each row\n"
	"-w and -n dispatch and combine pairs, then one on cleared buffers, every token checked.";

/* Step 05 counts a message's system calls with strace; here the kernel's own count, around each post. */
static void show_syscalls(const struct a2a_stats *d)
{
	if (d->post_syscalls < 0) {
		show("system calls", "dispatch: not counted (/proc/self/io has no syscw here)");
		return;
	}
	show("system calls", "dispatch: %ld write() by its %llu ibv_post_send calls (syscw of "
	     "/proc/self/io, read around each post: rxe's doorbell), none by ibv_poll_cq; %llu "
	     "sched_yield() in its waits (ours, since ranks outnumber the CPUs here: a proxy thread "
	     "or a GPU kernel would spin)", d->post_syscalls, (unsigned long long)d->posts,
	     (unsigned long long)d->yields);
}

static void show_posts(const struct moe_run *r)
{
	const struct a2a_stats *d = &r->stats[PHASE_DISPATCH];
	const char *s = d->posts == 1 ? "" : "s";	/* N - 1 posts, signals alike */
	uint64_t sent = 0;

	for (int ph = 0; ph < PHASES; ph++)
		sent += r->stats[ph].atomics + r->stats[ph].imms;
	if (r->opts->signal == SIGNAL_FADD) {
		show("posts", "dispatch: %llu ibv_post_send call%s (one per peer; on rxe each is one "
		     "write() system call), %llu WRITEs and %llu FETCH_ADD%s, %llu B",
		     (unsigned long long)d->posts, s, (unsigned long long)d->writes,
		     (unsigned long long)d->atomics, s, (unsigned long long)d->bytes);
		show("signals", "%d FETCH_ADD%s came to each of our 3 words (layout, dispatch, "
		     "combine); we sent %llu", r->mesh->world - 1, s, (unsigned long long)sent);
		return;
	}
	show("posts", "dispatch: %llu ibv_post_send call%s (one per peer; on rxe each is one write() "
	     "system call), %llu WRITEs, the last to each peer with immediate, %llu B; %llu "
	     "ibv_post_recv calls (%d receives a QP were posted before the go-ahead)",
	     (unsigned long long)d->posts, s, (unsigned long long)d->writes,
	     (unsigned long long)d->bytes, (unsigned long long)d->recv_posts, A2A_RECV_BATCH);
	show("signals", "%d WRITE%s with immediate came in each of our 3 exchanges (layout, dispatch, "
	     "combine): %llu receive completions, each naming its sender, phase and exchange; we "
	     "sent %llu", r->mesh->world - 1, s, (unsigned long long)r->a2a.signals_in,
	     (unsigned long long)sent);
}

/* The port's packets and RNR NAKs over the three phases (per device: every rank on it adds). */
static void show_counters(const struct moe_run *r, const struct dev_counters *a,
			  const struct dev_counters *b)
{
	const char *name = ibv_get_device_name(r->mesh->dev.ctx->device);
	bool rnr = b->send_rnr != a->send_rnr || b->rcvd_rnr != a->rcvd_rnr;

	if (!a->ok || !b->ok) {
		show("device counters", "not readable under /sys/class/infiniband/%s/ports/%u/hw_counters",
		     name, r->mesh->dev.port);
		return;
	}
	show("device counters", "%s: sent_pkts +%llu, rcvd_pkts +%llu over the three phases (per "
	     "device: every rank on it adds to them)", name, b->sent_pkts - a->sent_pkts,
	     b->rcvd_pkts - a->rcvd_pkts);
	show("RNR NAKs", "sent +%llu, received +%llu: %s", b->send_rnr - a->send_rnr,
	     b->rcvd_rnr - a->rcvd_rnr, r->opts->signal == SIGNAL_FADD ? "no WR of ours consumes a "
	     "receive" : rnr ? "a WRITE with immediate came before its receive (another program on "
	     "this device, or a receive posted too late)" : "every WRITE with immediate found its "
	     "receive posted");
}

/*
 * The port's counters after the phases.  The kernel answers a read of
 * hw_counters from its copy for 10 ms after the last refresh
 * (RDMA_HW_STATS_DEFAULT_LIFESPAN): a run shorter than that would read
 * BEFORE's figures again, so it waits the rest out first.
 */
static void read_counters_after(const struct moe_run *r, const struct timespec *since,
				struct dev_counters *out)
{
	long left = COUNTER_LIFESPAN_MS - ms_since(since);
	struct timespec t = { .tv_nsec = left * 1000000L };

	if (left > 0)
		nanosleep(&t, NULL);
	dev_counters_read(ibv_get_device_name(r->mesh->dev.ctx->device), r->mesh->dev.port, out);
}

/* One exchange of each phase, every line shown, then the table's two rows; the tokens wrong, or -1. */
static int run_once(struct moe_run *r, uint64_t *wrong)
{
	r->a2a.count_syscalls = true;
	show_heading("stage 9, layout: every rank's row of counts, all to all");
	if (run_layout(r))
		return -1;
	show_heading("stage 9, dispatch: each token to every rank that holds one of its experts");
	if (run_dispatch(r))
		return -1;
	show_heading("stage 9, combine: the experts' outputs back to each token's home rank");
	if (run_combine(r))
		return -1;
	*wrong = check_tokens(r);
	show_posts(r);
	show_syscalls(&r->stats[PHASE_DISPATCH]);
	return 0;
}

static int run_phases(struct moe_run *r)
{
	bool sweep = r->opts->sizes.sized;
	struct dev_counters before, after;
	struct timespec start;
	uint64_t wrong;

	dev_counters_read(ibv_get_device_name(r->mesh->dev.ctx->device), r->mesh->dev.port, &before);
	clock_start(&start);
	if (sweep) {
		show_heading("stage 9, the sweep: a row per size, quiet while it runs");
		if (sweep_sizes(r, &wrong))
			return -1;
	} else if (run_once(r, &wrong)) {
		return -1;
	}
	read_counters_after(r, &start, &after);
	show_counters(r, &before, &after);
	if (sweep)
		return wrong ? -1 : 0;
	table_header(r);
	return table_rows(r, wrong, true) || wrong ? -1 : 0;
}

/* Sets up the mesh, meets the other ranks, runs the three phases; 0 or -1. */
static int run_rank(const struct cli_common *common, const struct moe_opts *opts,
		    const struct launch *l, struct moe_mesh *mesh, struct ring_ctl *ctl)
{
	struct moe_opts most = *opts;
	struct moe_layout layout;
	struct route *routes = calloc((size_t)moe_most_tokens(opts) + 1, sizeof(*routes));
	struct hello mine = { .rank = l->rank, .world = l->world };
	const char *failure = NULL;
	struct moe_run r = { .mesh = mesh, .ctl = ctl, .l = &layout, .opts = opts, .routes = routes };
	int recvs = opts->signal == SIGNAL_IMM ? A2A_RECV_BATCH : 0, rc = -1;

	/* The buffer holds the largest row's layout; a sweep's rows lay theirs out in it. */
	most.tokens = moe_most_tokens(opts);
	layout_init(&layout, &most, l->rank, l->world);
	moe_opts_show(opts, l->world);
	if (!routes) {
		report_error("rank %d: no memory for %d tokens' routes", l->rank, opts->tokens);
		failure = "its set-up failed (see its output)";
	} else {
		gate_route(&most, l->rank, l->world, routes);
	}
	if (!failure && mesh_open(mesh, common, layout.bytes, opts->signal))
		failure = "its set-up failed (see its output)";
	moe_opts_format(opts, mine.options, sizeof(mine.options));
	a2a_init(&r.a2a, mesh, ctl, &layout, opts->signal, recvs, common->timeout_s);
	if (mesh_meet(mesh, ctl, l, &mine, failure, recvs) || run_phases(&r))
		goto free_routes;
	if (common->pause)
		pause_until_told("the exchange is done (see 'rdma resource show')");
	rc = 0;
free_routes:
	free(routes);
	return rc;
}

int main(int argc, char **argv)
{
	struct moe_opts opts;
	const struct cli_stage stages[] = { MOE_STAGE(&opts), NCCL_STAGE(&opts.sizes), { 0 } };
	const struct cli_spec spec = { .program = "09_moe", .purpose = purpose, .connects = true,
				       .pauses = true, .stages = stages };
	struct cli_common common;
	struct launch l;
	struct moe_mesh mesh;
	struct ring_ctl ctl;
	int usage, status = EXIT_FAILURE, failures;

	moe_opts_default(&opts);
	usage = cli_parse(argc, argv, &spec, &common);
	if (usage != CLI_RUN)
		return usage;
	if (launch_resolve(opts.rank, opts.world, &common, &l) || moe_opts_check(&opts, l.world))
		return 2;
	ctl_init(&ctl, &l, common.timeout_s);
	mesh_init(&mesh, &l);
	if (run_rank(&common, &opts, &l, &mesh, &ctl) == 0)
		status = EXIT_SUCCESS;

	show_heading("teardown: every rank releases what it made, in reverse order");
	failures = mesh_close(&mesh);
	ctl_close(&ctl);
	show("teardown", "%s", failures ? "some releases failed (see above)" : "every object released");
	return failures ? EXIT_FAILURE : status;
}
