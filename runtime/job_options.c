/* job_options.c: the job runtime: its part of the command line: the rank, the world size, the transport, the QPs' ACK timeout. */
#include "job_options.h"

const char *const transport_names[3] = { [TRANSPORT_RDMA] = "rdma", [TRANSPORT_TCP] = "tcp",
					 [TRANSPORT_BOTH] = "both" };

void job_opts_default(struct job_opts *opts, int most)
{
	*opts = (struct job_opts){ .rank = -1, .world = -1, .max_world = most,
				   .transport = TRANSPORT_RDMA, .qp_timeout = QP_TIMEOUT_DEFAULT };
}

const struct cli_option job_cli_options[] = {
	/* Past the world size is the rendezvous's to say, naming the rank. */
	{ "rank", CLI_KEY_RANK, "R", "this process's rank (default: the launcher's variables)", CLI_INT_AT(struct job_opts, rank, 0, 1 << 20) },
	{ "world-size", CLI_KEY_WORLD_SIZE, "N", "how many ranks (default: the launcher's variables)", CLI_STAGE_PARSES },
	{ "transport", CLI_KEY_TRANSPORT, "T", "rdma, tcp or both, side by side (default: rdma)", CLI_NAME_AT(struct job_opts, transport, "transport", transport_names, 0) },
	{ "qp-timeout", CLI_KEY_QP_TIMEOUT, "T", "the QPs' ACK timeout, 4.096 us x 2^T a try, 1 to 31, as NCCL_IB_TIMEOUT (default: 14, stage 3's; NCCL's is 20)", CLI_INT_AT(struct job_opts, qp_timeout, 1, 31) },
	{ 0 },
};

/* --world-size, whose bound is the step's; cli_parse fills the others, as their entries say. */
int job_parse_option(int key, const char *arg, void *ctx)
{
	struct job_opts *opts = ctx;

	(void)key;
	return cli_parse_int("--world-size", arg, 1, opts->max_world, &opts->world);
}
