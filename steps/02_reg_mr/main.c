/* main.c: step 02: register a page-aligned buffer with the NIC and show what pinning costs. */
#include "open_pd.h"
#include "pause.h"
#include "reg_mr.h"
#include "report.h"

#include <stdlib.h>

static const char purpose[] =
	"Step 02: on top of step 01, register a page-aligned buffer (ibv_reg_mr):\n"
	"pin its pages, get its lkey and rkey, and show VmPin and RLIMIT_MEMLOCK;\n"
	"with --odp register on demand, pinning nothing; with --fork see what a child may touch.";

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, NULL };

int main(int argc, char **argv)
{
	struct reg_mr_opts mr_opts;
	const struct cli_stage stages[] = { REG_MR_STAGE(&mr_opts), REG_MR_PAGING_STAGE(&mr_opts),
					    { 0 } };
	const struct cli_spec spec = { .program = "02_reg_mr", .purpose = purpose,
				       .pauses = true, .stages = stages, .faults = faults };
	struct cli_common opts;
	int usage;
	struct rdma_dev dev;
	struct rdma_buf buf;
	int status = EXIT_FAILURE;

	reg_mr_opts_default(&mr_opts);
	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;

	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(&opts, &dev))
		return EXIT_FAILURE;
	show_heading("stage 2: register memory");
	if (register_buffer(&dev, &mr_opts, &buf))
		goto out_close_device;
	if (mr_opts.fork && fork_and_touch(&buf))
		goto out_release_buffer;
	if (opts.pause && pause_until_told("MR registered (see 'rdma resource show mr')"))
		goto out_release_buffer;
	status = EXIT_SUCCESS;

	show_heading("teardown, in reverse order of creation");
out_release_buffer:
	if (release_buffer(&buf))
		status = EXIT_FAILURE;
out_close_device:
	if (close_device_pd(&dev))
		status = EXIT_FAILURE;
	return status;
}
