/* main.c: step 06: move a buffer from the server's GPU memory to the client's along TCP, RDMA and GPUDirect RDMA, counting copies. */
#include "cq_qp_rts.h"
#include "dev_limits.h"
#include "exchange.h"
#include "gdr.h"
#include "gpu_mem.h"
#include "open_pd.h"
#include "post_wr.h"
#include "reg_mr.h"
#include "report.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_SIZE ((size_t)1 << 20)

struct step_opts {
	struct reg_mr_opts mr;
	struct conn_opts conn;
	unsigned paths;
	bool emulated;		/* the GPU buffer is host memory: a second MR pins it */
};

/*
 * What the run asks of the device and of the memlock limit, after stage 1:
 * -s bytes in one message, and the pages it pins: the staging buffer's, and
 * with an emulated GPU the GPU buffer's too, a second MR of host memory.  Real
 * GPU memory is pinned by the GPU's driver, not counted against
 * RLIMIT_MEMLOCK.
 */
static int check_limits(const struct rdma_dev *dev, const void *arg)
{
	const struct step_opts *step = arg;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), size = step->mr.size;
	uint64_t pinned = (size + page - 1) / page * page * (step->emulated ? 2 : 1);
	char request[96];

	snprintf(request, sizeof(request), "-s %zu (%s)", size, step->emulated ?
		 "the staging buffer and the emulated GPU buffer, each its own MR" :
		 "the staging buffer");
	return limit_check_option(dev, LIMIT_MSG_SZ, "-s", (long long)size, 1, 0,
				  "bytes in one message") ||
	       limit_check_pin(dev, pinned, size, request, "give a smaller -s") ? -1 : 0;
}

static const char purpose[] =
	"Step 06: on top of steps 01-05, move -s bytes (1M unless given) from the server's GPU\n"
	"memory to the client's along three paths and count the extra copies each side makes:\n"
	"  tcp   GPU -> host buffer -> kernel -> wire -> kernel -> host buffer -> GPU (2 per side)\n"
	"  rdma  GPU -> registered host buffer -> NIC -> NIC -> host buffer -> GPU (1 per side)\n"
	"  gdr   GPU memory registered with the NIC: it reads and writes it directly (0)\n"
	"Without a CUDA GPU and driver, a separate host buffer emulates GPU memory.\n"
	"\n"
	"To confirm GPUDirect RDMA on a real system:\n"
	"  DMA-BUF (recommended): Linux 5.12+, the open GPU kernel modules, CUDA 11.7+\n"
	"  lsmod | grep nvidia_peermem     the legacy way: the peer-memory module (MLNX_OFED/DOCA)\n"
	"  nvidia-smi topo -m              GPU and NIC under one PCIe switch (PIX or PXB) is best\n"
	"  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET  which transport NCCL chose (GDRDMA when in use)\n"
	"  NCCL_IB_DISABLE=1               forces NCCL's socket fallback, for comparison\n"
	"  NCCL_NET_GDR_LEVEL=PIX|PXB|PHB|SYS  how far apart GPU and NIC may be for NCCL to use GDR\n"
	"  PCIe ACS on the switches redirects peer-to-peer traffic through the root complex:\n"
	"  slow, or hangs (see NCCL's troubleshooting guide).";

/* Runs each chosen path and prints this side's line for it. */
static int run_paths(struct gdr_side *side, unsigned paths)
{
	struct path_result res;

	for (int p = 0; p < N_PATHS; p++) {
		if (!(paths & (1u << p)))
			continue;
		if (run_path(side, (enum data_path)p, &res))
			return -1;
		show_path_result(side, (enum data_path)p, &res);
	}
	return 0;
}

static void show_how_to_confirm(const struct gdr_side *side)
{
	const struct gpu_mr *gmr = side->gpu_mr;

	if (side->gpu->emulated)
		show("GPUDirect RDMA", "not shown here: GPU memory is emulated (%s)", side->gpu->why);
	else if (!gmr->buf.mr)
		show("GPUDirect RDMA", "not available: %s. See --help for what to check", gmr->why_not);
	else if (!side->gdr_used)
		show("GPUDirect RDMA", "not used: this side registered its GPU memory (%s), but the gdr "
		     "path did not run directly (not chosen with --path, or the peer could not register)",
		     gmr->how);
	else
		show("GPUDirect RDMA", "in use (%s); confirm with: NCCL_DEBUG=INFO "
		     "NCCL_DEBUG_SUBSYS=INIT,NET, nvidia-smi topo -m", gmr->how);
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    post_wr_faults, NULL };

int main(int argc, char **argv)
{
	struct step_opts step = { .paths = ALL_PATHS };
	const struct cli_stage stages[] = { REG_MR_STAGE(&step.mr), CQ_QP_PATH_STAGE(&step.conn),
					    GDR_STAGE(&step.paths), { 0 } };
	const struct cli_spec spec = { .program = "06_gdr", .purpose = purpose,
				       .connects = true, .stages = stages, .faults = faults };
	struct cli_common opts;
	int usage;
	struct session sess;
	struct gpu gpu;
	struct gpu_mr gmr = { .dmabuf_fd = -1 };
	struct conn_hook hook = { .check_limits = check_limits, .limits_arg = &step };
	struct gdr_side side;
	void *gpu_buf;
	int status = EXIT_FAILURE, failures = 0;

	reg_mr_opts_default(&step.mr);
	step.mr.size = DEFAULT_SIZE;
	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;
	reg_mr_grant(&step.mr, IBV_ACCESS_LOCAL_WRITE, "every path sends, or receives, by SEND or "
		     "send(): no peer may reach the staging buffer directly");

	show_heading("GPU memory");
	gpu_open(&gpu);
	show("GPU memory", "%s (%s)", gpu.emulated ? "emulated by a separate host buffer" : "real",
	     gpu.why);
	gpu_buf = gpu_alloc(&gpu, step.mr.size);
	if (!gpu_buf)
		return EXIT_FAILURE;
	step.emulated = gpu.emulated;
	step.conn.hook = &hook;

	if (session_open(&sess, &opts, &step.mr, &step.conn))
		goto out_close_session;
	show("staging buffer", "the stage 2 buffer is the host staging buffer of the tcp and rdma paths");
	exchange_set_options(&sess.conn.local, "-P %s -s %zu", paths_name(step.paths), sess.buf.len);
	if (connect_qp(&sess.dev, &opts, &sess.conn))
		goto out_close_session;
	show_heading("stage 6: register GPU memory with the NIC");
	register_gpu_memory(&sess.dev, &gpu, gpu_buf, step.mr.size, &gmr);

	show_heading("the three data paths of Figure 1");
	side = (struct gdr_side){ .conn = &sess.conn, .gpu = &gpu, .gpu_buf = gpu_buf,
				  .staging = &sess.buf, .gpu_mr = &gmr, .sender = !opts.host,
				  .timeout_s = opts.timeout_s };
	show("role", "%s", side.sender ? "sender (the server's GPU holds the gradient)"
				       : "receiver (into the client's GPU)");
	if (run_paths(&side, step.paths))
		goto out_release_gpu_mr;
	show_how_to_confirm(&side);
	status = EXIT_SUCCESS;

	show_heading("teardown: the QP first, then in reverse order of creation");
out_release_gpu_mr:
	/* A receive still posted on the QP may point into the GPU memory: destroy the QP first. */
	failures += destroy_cq_qp(&sess.conn);
	failures += release_gpu_memory(&gmr);
out_close_session:
	failures += session_close(&sess);
	gpu_free(&gpu, gpu_buf);
	return failures ? EXIT_FAILURE : status;
}
