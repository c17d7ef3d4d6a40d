/* poll_options.h: stage 5's part of the command line: -n, --depth, --peer, -m and --recover. */
#ifndef RDMA_STEPS_POLL_OPTIONS_H
#define RDMA_STEPS_POLL_OPTIONS_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "cli.h"
#include "post_wr.h"

/* Stage 5's long-only option keys (cli.h's blocks). */
enum poll_key {
	CLI_KEY_PEER = CLI_STAGE_KEYS(5),	/* --peer */
};

#define DEFAULT_ITERS 1000
#define MAX_ITERS 1000000

struct poll_opts {
	int iters;		/* -n */
	int depth;		/* --depth: work requests in flight; 1 is the timed ping-pong */
	bool rc_pingpong;	/* --peer=rc_pingpong */
	bool rping;		/* --peer=rping */
	enum ibv_mtu mtu;	/* -m, for --peer=rc_pingpong */
	bool mtu_given;
	bool recover;		/* --recover: the recovery drill before the loop */
};

void poll_opts_default(struct poll_opts *opts);

/* Stage 5's options, filling a struct poll_opts. */
extern const struct cli_option poll_cli_options[];
int poll_parse_option(int key, const char *arg, void *opts);
#define POLL_STAGE(opts) { poll_cli_options, poll_parse_option, (opts) }

/* Checks that the options make sense together; reports what does not. */
int poll_opts_check(const struct poll_opts *opts, enum wr_op op, bool events);

#endif
