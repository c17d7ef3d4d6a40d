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
	{ "rank", CLI_KEY_RANK, "R", "this process's rank (default: the launcher's variables)" },
	{ "world-size", CLI_KEY_WORLD_SIZE, "N", "how many ranks (default: the launcher's variables)" },
	{ "transport", CLI_KEY_TRANSPORT, "T", "rdma, tcp or both, side by side (default: rdma)" },
	{ "qp-timeout", CLI_KEY_QP_TIMEOUT, "T", "the QPs' ACK timeout, 4.096 us x 2^T a try, 1 to 31, as NCCL_IB_TIMEOUT (default: 14, stage 3's; NCCL's is 20)" },
	{ 0 },
};

int job_parse_option(int key, const char *arg, void *ctx)
{
	struct job_opts *opts = ctx;
	int v;

	switch (key) {
	case CLI_KEY_RANK:
		/* Past the world size is the rendezvous's to say, naming the rank. */
		return cli_parse_int("--rank", arg, 0, 1 << 20, &opts->rank);
	case CLI_KEY_WORLD_SIZE:
		return cli_parse_int("--world-size", arg, 1, opts->max_world, &opts->world);
	case CLI_KEY_TRANSPORT:
		v = cli_pick_named("--transport", "transport", arg, transport_names, 0, 3);
		if (v >= 0)
			opts->transport = (enum transport)v;
		return v < 0 ? -1 : 0;
	}
	/* --qp-timeout */
	return cli_parse_int("--qp-timeout", arg, 1, 31, &opts->qp_timeout);
}
