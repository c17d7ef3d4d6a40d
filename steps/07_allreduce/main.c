/* main.c: step 07: a ring all-reduce over verbs, N ranks launched like a training job, measured as nccl-tests measures it. */
#include "control.h"
#include "cq_qp_rts.h"
#include "fault.h"
#include "launch.h"
#include "open_pd.h"
#include "pause.h"
#include "post_wr.h"
#include "reg_mr.h"
#include "rendezvous.h"
#include "report.h"
#include "ring.h"
#include "ring_options.h"
#include "schedule.h"
#include "sweep.h"
#include "tcp_ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define FAIL_RANK_ENV "RDMA_STEPS_FAIL_RANK"

static const char purpose[] =
	"Step 07: on top of steps 01-05 (not 06), N ranks sum a buffer with a ring all-reduce,\n"
	"a reduce-scatter then an all-gather of N-1 steps each, as NCCL does between nodes.\n"
	"Each rank has one RC QP to the next rank and one from the previous; the user buffer\n"
	"is registered once; the previous rank RDMA WRITEs pieces with immediate into K\n"
	"slots of C bytes here, one per credit; each credit travels back as a zero-byte SEND\n"
	"with immediate, posted only after the receive for that slot.\n"
	"\n"
	"Rank and world size: --rank/--world-size, else torchrun's RANK/WORLD_SIZE, else\n"
	"Open MPI's OMPI_COMM_WORLD_RANK/_SIZE, else MPICH's PMI_RANK/PMI_SIZE, else Slurm's\n"
	"SLURM_PROCID/SLURM_NTASKS: the innermost launcher wins (srun running torchrun:\n"
	"torchrun's). Rank 0 runs the rendezvous on TCP port -p (default 18515; not\n"
	"MASTER_PORT, where torchrun's own store listens); the others find it at HOST, else\n"
	"MASTER_ADDR. N = 1 moves nothing; zero elements run and move nothing.\n"
	"A failure anywhere ends every rank within about 2 x -t with one line naming the rank.\n"
	"RDMA_STEPS_FAIL_AT fails a verb on rank " FAIL_RANK_ENV " only, when that is set.\n"
	"\n"
	"As nccl-tests: -b, --maxbytes, -f, -n, -w, -c, --datatype, and its out-of-place table;\n"
	"unlike it: -e is event mode's letter in these steps, so --maxbytes has none; -o names\n"
	"the collective (nccl-tests: the reduction op; ours is always sum); -d, -i, -p, -t keep\n"
	"the steps' meanings; one process per rank, host memory, no -g; in-place buffer.\n"
	"Kept from the earlier steps: -d, -i, -x, -p, -t and --pause; not -s (the sizes are\n"
	"nccl-tests'), -a, -e (busy polling only, as NCCL's proxy thread).";

/* RDMA_STEPS_FAIL_AT reaches every rank a launcher starts; RDMA_STEPS_FAIL_RANK keeps it to one. */
static void keep_fault_to_rank(int rank)
{
	const char *only = getenv(FAIL_RANK_ENV);

	if (only && *only && atoi(only) != rank && getenv(FAULT_ENV)) {
		unsetenv(FAULT_ENV);
		show("fault points", "%s is for rank %s only (%s)", FAULT_ENV, only, FAIL_RANK_ENV);
	}
}

/* --schedule: the plan of every size, run on the CPU for --world-size ranks. */
static int run_schedules(const struct ring_opts *opts)
{
	int failed = 0;

	if (opts->job.world < 1) {
		report_error("--schedule needs --world-size N");
		return 2;
	}
	for (size_t bytes = opts->sizes.minbytes; bytes <= opts->sizes.maxbytes;
	     bytes = nccl_next_size(&opts->sizes, bytes, ELEM_SIZE)) {
		struct ring_layout l = { .count = bytes / ELEM_SIZE, .world = opts->job.world,
					 .piece_elems = opts->slot_bytes / ELEM_SIZE,
					 .coll = opts->coll, .dt = opts->dt };

		failed |= run_reference(&l) != 0;
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* What the port's counters say over the RDMA sweep. */
static const struct counters_words sweep_words = {
	.over = "over the RDMA sweep (per device: every rank on this node adds to them)",
	.no_rnr = "no WRITE found its receive missing, so no slot was written before it was free",
	.rnr = "a WRITE came before its receive (another program on this device, or a credit bug)",
};

static int run_transports(const struct sweep *s, const struct ring_opts *opts)
{
	struct sweep_result rdma = { 0 }, tcp = { 0 };
	struct dev_counters before, after;

	if (opts->job.transport != TRANSPORT_TCP) {
		dev_counters_read(s->ring->dev.ctx, s->ring->dev.port, NULL, &before);
		if (run_sweep(s, TRANSPORT_RDMA, &rdma))
			return -1;
		dev_counters_read(s->ring->dev.ctx, s->ring->dev.port, &before, &after);
		show_bytes_check(s, &rdma);
		dev_counters_show(s->ring->dev.ctx, s->ring->dev.port, &before, &after, &sweep_words);
		show_result_check(s, &rdma);
	}
	if (opts->job.transport != TRANSPORT_RDMA) {
		if (run_sweep(s, TRANSPORT_TCP, &tcp))
			return -1;
		show_result_check(s, &tcp);
	}
	if (opts->job.transport == TRANSPORT_BOTH && s->ctl->rank == 0)
		show_ratio(&rdma, &tcp);
	return rdma.wrong || tcp.wrong ? -1 : 0;
}

/* Sets up both rings, meets the other ranks, runs every size; 0 or -1. */
static int run_rank(const struct cli_common *common, const struct ring_opts *opts,
		    const struct launch *l, struct rdma_ring *ring, struct tcp_ring *tcp,
		    struct ring_ctl *ctl)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const char *failure = NULL;
	struct hello mine = { .rank = l->rank, .world = l->world };
	struct neighbours nb;
	struct sweep s = { .ring = ring, .tcp = tcp, .ctl = ctl, .opts = opts,
			   .timeout_s = common->timeout_s };

	if (ring_open(ring, common, opts, l, opts->sizes.maxbytes > page ? opts->sizes.maxbytes : page) ||
	    (opts->job.transport != TRANSPORT_RDMA &&
	     tcp_ring_listen(tcp, l->rank, l->world, ring->data.addr, opts->slot_bytes)))
		failure = "its set-up failed (see its output)";
	mine.tcp_port = tcp_ring_port(tcp);
	ring_opts_format(opts, mine.options, sizeof(mine.options));
	if (ring_meet(ring, ctl, l, &mine, failure, &nb) || ring_grant_slots(ring, ctl) ||
	    (opts->job.transport != TRANSPORT_RDMA && tcp_ring_connect(tcp, &nb, ctl, common->timeout_s)))
		return -1;
	show_heading("stage 7: the collective, every size");
	if (run_transports(&s, opts) || ring_finish(ring, ctl, common->timeout_s) || ring_leave(ctl))
		return -1;
	if (common->pause && pause_until_told("the collective is done (see 'rdma resource show')"))
		return -1;
	return 0;
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    post_wr_faults, NULL };

int main(int argc, char **argv)
{
	struct ring_opts opts;
	const struct cli_stage stages[] = { RING_STAGE(&opts), JOB_STAGE(&opts.job),
					    CQ_QP_PATH_STAGE(&opts.conn), NCCL_STAGE(&opts.sizes), { 0 } };
	const struct cli_spec spec = { .program = "07_allreduce", .purpose = purpose,
				       .connects = true, .pauses = true, .stages = stages,
				       .faults = faults };
	struct cli_common common;
	struct launch l;
	struct rdma_ring ring = { .to_next.sock = -1, .from_prev.sock = -1 };
	struct tcp_ring tcp = { .listen_fd = -1, .next_fd = -1, .prev_fd = -1 };
	struct ring_ctl ctl;
	int usage, status = EXIT_FAILURE, failures;

	ring_opts_default(&opts);
	usage = cli_parse(argc, argv, &spec, &common);
	if (usage != CLI_RUN)
		return usage;
	if (ring_opts_check(&opts))
		return 2;
	if (opts.schedule)
		return run_schedules(&opts);
	if (launch_resolve(&opts.job, &common, &l))
		return 2;
	keep_fault_to_rank(l.rank);
	ctl_init(&ctl, &l, common.timeout_s);
	if (run_rank(&common, &opts, &l, &ring, &tcp, &ctl) == 0)
		status = EXIT_SUCCESS;

	show_heading("teardown: every rank releases what it made, in reverse order");
	tcp_ring_close(&tcp);
	failures = ring_close(&ring);
	ctl_close(&ctl);
	show("teardown", "%s", failures ? "some releases failed (see above)" : "every object released");
	return failures ? EXIT_FAILURE : status;
}
