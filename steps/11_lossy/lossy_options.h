/* lossy_options.h: stage 11's part of the command line: the QP type, the paths, the resend timer and the test's dropped chunks. */
#ifndef RDMA_STEPS_LOSSY_OPTIONS_H
#define RDMA_STEPS_LOSSY_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* Stage 11's long-only option keys (cli.h's blocks). */
enum lossy_key {
	CLI_KEY_QP_TYPE = CLI_STAGE_KEYS(11),	/* --qp-type */
	CLI_KEY_PATHS,				/* --paths */
	CLI_KEY_RTO,				/* --rto-ms */
	CLI_KEY_DROP,				/* --drop-chunks */
	CLI_KEY_LOSSY_QP_TIMEOUT,		/* --qp-timeout */
	CLI_KEY_LOSSY_RETRY_CNT,		/* --retry-cnt */
	CLI_KEY_PLANE,				/* --plane */
};

/* The buffer when -s is not given: 1 MiB, 1,024 chunks of a 1,024-byte path MTU. */
#define LOSSY_DEFAULT_SIZE ((size_t)1 << 20)
/* QPs a transfer may deal its chunks over, on every plane together. */
#define LOSSY_MAX_PATHS 8
/* Planes: -d's device, and one device for each --plane. */
#define LOSSY_MAX_PLANES 4
/*
 * The resend timer: how long the sender waits after its last WRITE of a
 * round has left before it asks the receiver what came.  Two VMs measure
 * about 20 ms a round trip under emulation, one VM well under 1 ms: 50 ms
 * is above both, so a chunk still on its way is not taken for lost.
 */
#define LOSSY_DEFAULT_RTO_MS 50
#define LOSSY_MAX_RTO_MS 60000
/* Chunks --drop-chunks may name. */
#define LOSSY_MAX_DROPS 64

struct lossy_opts {
	bool rc;			/* --qp-type rc: the same transfer over RC QPs */
	int paths;			/* --paths: data QPs on each plane, each its own flow */
	int planes;			/* 1, and one more for each --plane */
	const char *plane[LOSSY_MAX_PLANES];	/* each plane's device; [0] is -d's, set by the check */
	int rto_ms;			/* --rto-ms: the resend timer */
	int qp_timeout;			/* --qp-timeout: every RC QP's ACK timeout; 0: stage 3's */
	int retry_cnt;			/* --retry-cnt: every RC QP's retries; -1: stage 3's */
	int n_drops;			/* --drop-chunks: how many chunks it names, */
	uint32_t drop[LOSSY_MAX_DROPS];	/* and which, in the order given */
};

extern const struct cli_option lossy_cli_options[];
int lossy_parse_option(int key, const char *arg, void *opts);
#define LOSSY_STAGE(opts) { lossy_cli_options, lossy_parse_option, (opts) }

void lossy_opts_default(struct lossy_opts *opts);

/*
 * What the options allow together: --drop-chunks is UC's alone; --plane
 * needs -d (DEV, plane 0's device) and a device of its own, and the paths
 * of every plane fit LOSSY_MAX_PATHS.  0, or -1 after saying why.
 */
int lossy_opts_check(struct lossy_opts *opts, const char *dev);

/* Once the chunk count is known: every chunk --drop-chunks names must be one of them.  0 or -1. */
int lossy_check_drops(const struct lossy_opts *opts, uint32_t chunks);

/* "uc" or "rc". */
const char *lossy_qp_type_name(const struct lossy_opts *opts);

#endif
