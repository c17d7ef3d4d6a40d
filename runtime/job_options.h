/* job_options.h: the job runtime: its part of the command line: the rank, the world size, the transport, the QPs' ACK timeout. */
#ifndef RDMA_STEPS_JOB_OPTIONS_H
#define RDMA_STEPS_JOB_OPTIONS_H

#include "cli.h"

/*
 * The most ranks one job may hold: the size of the runtime's per-rank
 * tables.  A step may hold fewer (its own limit, job_opts.max_world).
 */
#define JOB_MAX_RANKS 128

/* The runtime's long-only option keys: blocks past every step's (cli.h). */
#define JOB_KEY_BLOCK 100
enum job_key {
	CLI_KEY_RANK = CLI_STAGE_KEYS(JOB_KEY_BLOCK),
	CLI_KEY_WORLD_SIZE,
	CLI_KEY_TRANSPORT,
	CLI_KEY_QP_TIMEOUT,
};

/* Stage 3's ACK timeout, 4.096 us x 2^14, about 67 ms a try; --qp-timeout changes it. */
#define QP_TIMEOUT_DEFAULT 14

enum transport { TRANSPORT_RDMA, TRANSPORT_TCP, TRANSPORT_BOTH };

/* --transport's words: rdma, tcp, both. */
extern const char *const transport_names[3];

/* What every program that launches ranks takes alike. */
struct job_opts {
	int rank, world;	/* --rank, --world-size; -1: from the launcher's variables */
	int max_world;		/* the most ranks the step holds: --world-size's bound */
	enum transport transport;	/* --transport: the verbs, the TCP twin, or both */
	int qp_timeout;		/* --qp-timeout: the QPs' ACK timeout, as NCCL_IB_TIMEOUT */
};

/* No rank given, RDMA only, stage 3's timeout; --world-size up to the step's MOST ranks. */
void job_opts_default(struct job_opts *opts, int most);

extern const struct cli_option job_cli_options[];
int job_parse_option(int key, const char *arg, void *opts);
#define JOB_STAGE(opts) { job_cli_options, job_parse_option, (opts) }

#endif
