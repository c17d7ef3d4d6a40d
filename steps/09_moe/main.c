/* main.c: step 09: MoE dispatch and combine over verbs: a variable all-to-all, every rank to every rank, signalled with remote atomics. */
#include "clock.h"
#include "control.h"
#include "cq_qp_rts.h"
#include "device.h"
#include "fault.h"
#include "launch.h"
#include "moe_options.h"
#include "moe_sweep.h"
#include "open_pd.h"
#include "pause.h"
#include "phases.h"
#include "post_wr.h"
#include "reg_mr.h"
#include "report.h"
#include "tcp_alltoall.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static const char purpose[] =
	"Step 09: on top of steps 01-05 and the job runtime (launchers, rendezvous, control),\n"
	"N ranks move a mixture-of-experts layer's tokens as DeepEP does: a seeded gate gives\n"
	"each token its top-k experts (E per rank), each rank learns how many tokens every\n"
	"peer sends it (an all-to-all of counts, WRITEs of each rank's row) and where its own\n"
	"land (prefix sums); dispatch WRITEs each token once to every rank holding one of its\n"
	"experts, straight into that rank's buffer, then signals with a remote FETCH_ADD on\n"
	"the same QP; combine sends each expert's output back the same way, and the home rank\n"
	"checks every token against a CPU reference. One RC QP per peer, N - 1 per rank.\n"
	"\n"
	"Rank and world size as step 07, up to 8 ranks: --rank/--world-size, else torchrun's,\n"
	"Open MPI's, MPICH's or Slurm's variables; rank 0's rendezvous on TCP port -p, at\n"
	"HOST or MASTER_ADDR. Every wait is bounded by -t; a failure ends every rank with one\n"
	"line naming the rank. Kept from the earlier steps: -d, -i, -x, -p, -t and --pause.\n"
	"\n"
	"--signal imm signals with the chain's last WRITE with immediate instead. With -b or\n"
	"--maxbytes (nccl-tests' options, as step 07, with -f, -n, -w and -c), a sweep: a row per\n"
	"size of tokens a rank, T = size / --hidden, as nccl-tests' alltoall table; each row\n"
	"-w and -n dispatch and combine pairs, then one on cleared buffers, every token checked.\n"
	"--transport tcp or both (as step 07): the same exchange over a TCP socket per pair of\n"
	"ranks, checked alike; both prints both tables and RDMA's time over TCP's.";

/* Step 05 counts a message's system calls with strace; here the kernel's own count, around each post. */
static void show_syscalls(const struct a2a *a, const struct a2a_stats *d)
{
	if (d->post_syscalls < 0) {
		show("system calls", "dispatch: not counted (/proc/self/io has no syscw here)");
		return;
	}
	bool naps = a->rule == PROGRESS_NAP;

	show("system calls", "dispatch: %ld write() by its %llu ibv_post_send calls (syscw of "
	     "/proc/self/io, read around each post: rxe's doorbell), none by ibv_poll_cq; %llu "
	     "%s in its waits (ours, %s: a proxy thread or a GPU kernel would spin)",
	     d->post_syscalls, (unsigned long long)d->posts,
	     (unsigned long long)(naps ? d->naps : d->yields),
	     naps ? "nanosleep()" : "sched_yield()", naps ? "since the ranks outnumber "
	     "the CPUs here (the waits line)" : a->rule == PROGRESS_YIELD ?
	     "to let rxe's kernel work run" : "none: a hardware NIC, so it spins");
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
		show("signals", "%d FETCH_ADD%s came in each of our 3 exchanges (layout, dispatch, "
		     "combine): %llu words, one per sender and phase, each read 1; we sent %llu",
		     r->mesh->world - 1, s, (unsigned long long)r->a2a.signals_in,
		     (unsigned long long)sent);
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

/* What the port's counters say over the three phases, by what signals a phase's end. */
static const struct counters_words phases_fadd_words = {
	.over = "over the three phases (per device: every rank on it adds to them)",
	.no_rnr = "no WR of ours consumes a receive",
	.rnr = "no WR of ours consumes a receive (another program on this device sent them)",
};
static const struct counters_words phases_imm_words = {
	.over = "over the three phases (per device: every rank on it adds to them)",
	.no_rnr = "every WRITE with immediate found its receive posted",
	.rnr = "a WRITE with immediate came before its receive (another program on this device, or "
	       "a receive posted too late)",
};

/* Over TCP, a dispatch's system calls: a copy into the kernel and one out of it for every byte. */
static void show_tcp_syscalls(const struct moe_run *r)
{
	const struct tcp_stats *st = &r->tcp_stats[PHASE_DISPATCH];

	show("system calls", "dispatch over TCP: %llu send() and %llu recv() for %llu B out and "
	     "%llu B in, %llu poll(): each byte copied into the kernel by send() and out of it by "
	     "the peer's recv(); over verbs, %llu posts and no copy by the CPU",
	     (unsigned long long)st->sends, (unsigned long long)st->recvs,
	     (unsigned long long)st->bytes_out, (unsigned long long)st->bytes_in,
	     (unsigned long long)st->polls, (unsigned long long)(r->mesh->world - 1));
}

/* One exchange of each phase, every line shown, then the table's two rows; the tokens wrong, or -1. */
static int run_once(struct moe_run *r, uint64_t *wrong)
{
	bool tcp = r->transport == TRANSPORT_TCP;

	r->a2a.count_syscalls = true;
	show_heading(tcp ? "stage 9 over TCP, layout: every rank's row of counts, all to all" :
		     "stage 9, layout: every rank's row of counts, all to all");
	if (run_layout(r))
		return -1;
	show_heading(tcp ? "stage 9 over TCP, dispatch: each token to every rank that holds one of "
		     "its experts" : "stage 9, dispatch: each token to every rank that holds one of "
		     "its experts");
	if (run_dispatch(r))
		return -1;
	show_heading(tcp ? "stage 9 over TCP, combine: the experts' outputs back to each token's "
		     "home rank" : "stage 9, combine: the experts' outputs back to each token's home "
		     "rank");
	if (run_combine(r))
		return -1;
	*wrong = check_tokens(r);
	if (tcp) {
		show_tcp_syscalls(r);
		return 0;
	}
	show_posts(r);
	show_syscalls(&r->a2a, &r->stats[PHASE_DISPATCH]);
	return 0;
}

/* The run, or the sweep, then the table; the port's counters around it over verbs. */
static int run_phases(struct moe_run *r)
{
	bool sweep = r->opts->sizes.sized, rdma = r->transport == TRANSPORT_RDMA;
	struct dev_counters before, after;
	uint64_t wrong;

	dev_counters_read(r->mesh->dev.ctx, r->mesh->dev.port, NULL, &before);
	if (sweep) {
		show_heading(rdma ? "stage 9, the sweep: a row per size, quiet while it runs" :
			     "stage 9 over TCP, the sweep: a row per size, quiet while it runs");
		if (sweep_sizes(r, &wrong))
			return -1;
	} else if (run_once(r, &wrong)) {
		return -1;
	}
	if (rdma) {
		dev_counters_read(r->mesh->dev.ctx, r->mesh->dev.port, &before, &after);
		dev_counters_show(r->mesh->dev.ctx, r->mesh->dev.port, &before, &after,
				  r->opts->signal == SIGNAL_FADD ? &phases_fadd_words : &phases_imm_words);
	}
	if (sweep)
		return wrong ? -1 : 0;
	table_header(r);
	return table_rows(r, wrong, true) || wrong ? -1 : 0;
}

/* Rank 0, with --transport both: RDMA's time over TCP's, row by row, phase by phase. */
static void show_transport_ratio(const struct moe_run *r, const struct moe_times *rdma,
		       const struct moe_times *tcp)
{
	if (r->ctl->rank != 0)
		return;
	for (int i = 0; i < rdma->rows && i < tcp->rows; i++) {
		char key[40];

		snprintf(key, sizeof(key), "rdma/tcp %llu B", (unsigned long long)rdma->bytes[i]);
		show(key, "dispatch %.1f / %.1f us = %.2f; combine %.1f / %.1f us = %.2f",
		     rdma->us[i][PHASE_DISPATCH], tcp->us[i][PHASE_DISPATCH],
		     tcp->us[i][PHASE_DISPATCH] > 0 ? rdma->us[i][PHASE_DISPATCH] /
		     tcp->us[i][PHASE_DISPATCH] : 0, rdma->us[i][PHASE_COMBINE],
		     tcp->us[i][PHASE_COMBINE], tcp->us[i][PHASE_COMBINE] > 0 ?
		     rdma->us[i][PHASE_COMBINE] / tcp->us[i][PHASE_COMBINE] : 0);
	}
}

/*
 * Every table the transports ask for.  Between RDMA's and TCP's, every
 * part past the signal words is cleared, so that TCP's check finds nothing
 * RDMA left: the table's gather had every rank done, no WRITE in flight.
 */
static int run_transports(struct moe_run *r)
{
	struct moe_times rdma = { 0 }, tcp = { 0 };
	enum transport want = r->opts->job.transport;

	if (want != TRANSPORT_TCP) {
		r->transport = TRANSPORT_RDMA;
		r->times = &rdma;
		if (run_phases(r))
			return -1;
	}
	if (want != TRANSPORT_RDMA) {
		memset((char *)r->mesh->buf.addr + r->l->counts, 0, r->l->bytes - r->l->counts);
		memset(r->stats, 0, sizeof(r->stats));
		r->transport = TRANSPORT_TCP;
		r->times = &tcp;
		if (run_phases(r))
			return -1;
	}
	if (want == TRANSPORT_BOTH)
		show_transport_ratio(r, &rdma, &tcp);
	return 0;
}

/* After the run, however it ended: nothing wrote past a part whose offsets came from the counts. */
static int check_guards(const struct moe_layout *l, const struct moe_mesh *m)
{
	if (!m->buf.addr)
		return 0;
	if (layout_check_guards(l, m->buf.addr))
		return -1;
	show("guards", "intact: nothing was written past the send, recv, comb_out or comb_in part "
	     "(%d B of guard words after each)", LAYOUT_GUARD);
	return 0;
}

/* Sets up the mesh, meets the other ranks, runs the three phases; 0 or -1. */
static int run_rank(const struct cli_common *common, const struct moe_opts *opts,
		    const struct launch *l, struct moe_mesh *mesh, struct tcp_a2a *tcp,
		    struct ring_ctl *ctl)
{
	struct endpoint ends[MOE_MAX_RANKS] = { 0 };
	bool tcp_too = opts->job.transport != TRANSPORT_RDMA;
	struct moe_opts most = *opts;
	struct moe_layout layout;
	struct route *routes = calloc((size_t)moe_most_tokens(opts) + 1, sizeof(*routes));
	struct hello mine = { .rank = l->rank, .world = l->world };
	const char *failure = NULL;
	struct moe_run r = { .mesh = mesh, .tcp = tcp, .ctl = ctl, .l = &layout, .opts = opts,
			     .routes = routes };
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
	/* A rank sends each of its tokens to a peer at most once: a dispatch record each. */
	if (!failure && mesh_open(mesh, common, layout.bytes, (size_t)layout.tokens * layout.rec,
				  opts))
		failure = "its set-up failed (see its output)";
	if (mesh->buf.addr)
		layout_arm_guards(&layout, mesh->buf.addr);
	if (!failure && tcp_too && tcp_a2a_listen(tcp, ctl, mesh->buf.addr, common->timeout_s))
		failure = "its set-up failed (see its output)";
	moe_opts_format(opts, mine.options, sizeof(mine.options));
	a2a_init(&r.a2a, mesh, ctl, &layout, opts->signal, recvs, common->timeout_s);
	if (mesh_meet(mesh, ctl, l, &mine, failure, recvs))
		goto free_routes;
	if (tcp_too && (ctl_exchange_ports(ctl, l->host, tcp_a2a_port(tcp), ends) ||
			tcp_a2a_connect(tcp, ends)))
		goto free_routes;
	rc = run_transports(&r);
	if (check_guards(&layout, mesh))
		rc = -1;
	if (!rc && common->pause &&
	    pause_until_told("the exchange is done (see 'rdma resource show')"))
		rc = -1;
free_routes:
	free(routes);
	return rc;
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    post_wr_faults, NULL };

int main(int argc, char **argv)
{
	struct moe_opts opts;
	const struct cli_stage stages[] = { MOE_STAGE(&opts), JOB_STAGE(&opts.job),
					    CQ_QP_PATH_STAGE(&opts.conn), NCCL_STAGE(&opts.sizes), { 0 } };
	const struct cli_spec spec = { .program = "09_moe", .purpose = purpose, .connects = true,
				       .pauses = true, .stages = stages, .faults = faults };
	struct cli_common common;
	struct launch l;
	struct moe_mesh mesh;
	struct tcp_a2a tcp;
	struct ring_ctl ctl;
	int usage, status = EXIT_FAILURE, failures;

	moe_opts_default(&opts);
	usage = cli_parse(argc, argv, &spec, &common);
	if (usage != CLI_RUN)
		return usage;
	if (launch_resolve(&opts.job, &common, &l) || moe_opts_check(&opts, l.world))
		return 2;
	ctl_init(&ctl, &l, common.timeout_s);
	mesh_init(&mesh, &l);
	tcp_a2a_init(&tcp);
	if (run_rank(&common, &opts, &l, &mesh, &tcp, &ctl) == 0)
		status = EXIT_SUCCESS;

	show_heading("teardown: every rank releases what it made, in reverse order");
	tcp_a2a_close(&tcp);
	failures = mesh_close(&mesh);
	ctl_close(&ctl);
	show("teardown", "%s", failures ? "some releases failed (see above)" : "every object released");
	return failures ? EXIT_FAILURE : status;
}
