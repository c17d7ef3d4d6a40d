/* sync_options.h: step 10's part of the command line: the trainers, the replicas' tensor parallelism, the model's size, the updates, the seed. */
#ifndef RDMA_STEPS_SYNC_OPTIONS_H
#define RDMA_STEPS_SYNC_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "cq_qp_rts.h"
#include "job_options.h"

/* Step 10's long-only option keys (cli.h's blocks). */
enum sync_key {
	CLI_KEY_TRAINERS = CLI_STAGE_KEYS(10),
	CLI_KEY_TP,
	CLI_KEY_MODEL_DIM,
	CLI_KEY_LAYERS,
	CLI_KEY_UPDATES,
	CLI_KEY_SYNC_SEED,
	CLI_KEY_SYNC_HOLD,
	CLI_KEY_PLANT_LEN,
	CLI_KEY_LATE_REPLICA,
	CLI_KEY_WAY,
	CLI_KEY_LINK_RATE,
	CLI_KEY_SERVE_DTYPE,
	CLI_KEY_FP8_OF,
};

/* --way: how the new weights travel (SYNC_WAYS: all three in one run, each round). */
enum sync_way { WAY_PUSH, WAY_GATHER, WAY_TCP, SYNC_WAYS };
#define WAY_ALL SYNC_WAYS

/* --way's words, push, gather, tcp, then all. */
extern const char *const sync_way_names[SYNC_WAYS + 1];

/* --serve-dtype: what every replica holds; the trainers keep BF16 whatever it is. */
enum sync_dtype { DTYPE_BF16, DTYPE_FP8, SYNC_DTYPES };
extern const char *const sync_dtype_names[SYNC_DTYPES];

/* One rxe device holds the tests' ranks; every rank keeps a word per trainer and a QP per peer. */
#define SYNC_MAX_RANKS 16
/* --layers: at most Llama-3 8B's (model.h's MODEL_LAYERS_FULL, which checks it is the same). */
#define SYNC_MAX_LAYERS 32

struct sync_opts {
	int trainers;		/* --trainers: T ranks train (ranks 0 .. T - 1), the others serve */
	int tp;			/* --tp: P ranks a replica, tensor-parallel */
	int dim;		/* --model-dim: D, Llama-3 8B's 4096 scaled down */
	int layers;		/* --layers: decoder layers, of its 32 */
	int updates;		/* --updates: U rounds, a new version each */
	uint32_t seed;		/* --seed: the updates' */
	struct job_opts job;	/* --rank, --world-size, --transport, --qp-timeout (JOB_STAGE) */
	struct conn_opts conn;	/* --tclass, --sl: stage 3's, for every QP (CQ_QP_PATH_STAGE) */
	int hold_rank, hold_ms;	/* --hold=RANK:MS: that rank stops MS ms in round 2, mid-update */
	int plant_rank, plant_len;	/* --plant-len=RANK:N: that rank says its buffer is N B */
	bool late_replica;	/* --late-replica: the last replica joins after round 1 */
	int way;		/* --way: WAY_PUSH, WAY_GATHER, WAY_TCP or WAY_ALL */
	int link_mbs;		/* --link-rate: the model's rate in MB/s; 0: measured in round 1 */
	int serve_dtype;	/* --serve-dtype: DTYPE_BF16, or DTYPE_FP8, converted on the way */
	const char *fp8_of;	/* --fp8-of: BF16 bit patterns to show as E4M3, then exit */
};

/* Whether --way runs way W this run. */
static inline bool sync_runs_way(const struct sync_opts *opts, int w)
{
	return opts->way == WAY_ALL || opts->way == w;
}

void sync_opts_default(struct sync_opts *opts);

extern const struct cli_option sync_cli_options[];
#define SYNC_STAGE(opts) { sync_cli_options, NULL, (opts) }

/* Checks the options against WORLD ranks; 0, or -1 after saying what does not fit. */
int sync_opts_check(const struct sync_opts *opts, int world);

/* The options every rank must share, as text for the rendezvous to compare. */
void sync_opts_format(const struct sync_opts *opts, char *buf, size_t len);

#endif
