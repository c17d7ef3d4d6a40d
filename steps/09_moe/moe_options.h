/* moe_options.h: step 09's part of the command line: the tokens, their size, the experts, the gate's top-k and seed, the signal, the rank. */
#ifndef RDMA_STEPS_MOE_OPTIONS_H
#define RDMA_STEPS_MOE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "cq_qp_rts.h"
#include "job_options.h"
#include "nccl_options.h"

/* One rxe device holds up to 8 ranks in the tests; the range. */
/* Step 09's long-only option keys (cli.h's blocks). */
enum moe_key {
	CLI_KEY_TOKENS = CLI_STAGE_KEYS(9),
	CLI_KEY_HIDDEN,
	CLI_KEY_EXPERTS,
	CLI_KEY_TOPK,
	CLI_KEY_SEED,
	CLI_KEY_HOLD,
	CLI_KEY_SKEW,
	CLI_KEY_SIGNAL,
	CLI_KEY_PLANT_COUNT,
};

#define MOE_MAX_RANKS 8
#define MOE_MAX_TOPK 16

/* How a sender tells a peer that its data is there (--signal). */
enum moe_signal {
	SIGNAL_FADD,	/* a remote FETCH_ADD on the peer's word: no receive, the peer polls memory */
	SIGNAL_IMM,	/* the chain's last WRITE with immediate: a receive consumed, a completion */
};

struct moe_opts {
	int tokens;		/* --tokens: T per rank */
	size_t hidden;		/* --hidden: H bytes per token, a multiple of 4 */
	int experts;		/* --experts: E per rank */
	int topk;		/* --topk: K distinct experts per token */
	uint32_t seed;		/* --seed: the gate's and the tokens' */
	int skew;		/* --skew: percent of experts drawn from rank 0's, the hot rank */
	enum moe_signal signal;	/* --signal: fadd or imm */
	struct job_opts job;	/* --rank, --world-size, --transport, --qp-timeout: the runtime's (JOB_STAGE) */
	struct conn_opts conn;	/* --tclass, --sl: stage 3's, for every QP (CQ_QP_PATH_STAGE) */
	int hold_rank, hold_ms;	/* --hold=RANK:MS: that rank waits MS ms between dispatch and combine */
	int plant_rank, plant_count;	/* --plant-count=RANK:N: that rank's count for the next rank is N */
	struct nccl_opts sizes;	/* the runtime's nccl-tests options: with -b or --maxbytes, a sweep */
};

void moe_opts_default(struct moe_opts *opts);

extern const struct cli_option moe_cli_options[];
#define MOE_STAGE(opts) { moe_cli_options, NULL, (opts) }

/* The tokens per rank of a row of SIZE bytes: SIZE / --hidden. */
int moe_row_tokens(const struct moe_opts *opts, size_t size);

/* The most tokens a rank holds: --tokens, or the largest row's. */
int moe_most_tokens(const struct moe_opts *opts);

/* Checks the options against WORLD ranks; 0, or -1 after saying what does not fit. */
int moe_opts_check(const struct moe_opts *opts, int world);

/* The defaults' arithmetic, from DeepSeek-V3 scaled down, as teaching lines. */
void moe_opts_show(const struct moe_opts *opts, int world);

/* The options every rank must share, as text for the rendezvous to compare. */
void moe_opts_format(const struct moe_opts *opts, char *buf, size_t len);

#endif
