/* kv_options.h: step 08's part of the command line: the shape of a request's KV cache, the pools, pull or push, the QPs. */
#ifndef RDMA_STEPS_KV_OPTIONS_H
#define RDMA_STEPS_KV_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "dev_limits.h"

/* Pull: the decoder RDMA READs each block.  Push: the prefiller RDMA WRITEs it, with immediate. */
enum kv_mode { KV_PULL, KV_PUSH };

/* What --violate breaks, for the lesson on access.  Both sides are given it; each does its part. */
enum kv_violation {
	KV_VIOLATE_NONE,
	KV_VIOLATE_RKEY,	/* the initiator: the pool's rkey plus one, which the peer never handed out */
	KV_VIOLATE_REVOKED,	/* --windows: the granting side takes its windows back before the go-ahead */
	KV_VIOLATE_PAST_WINDOW,	/* --windows: the initiator's first WR reaches one block past its window */
};

/* Classic: ibv_post_send with a linked list of WRs.  Ex: the extended API, ibv_wr_start ... ibv_wr_complete. */
enum kv_post { KV_POST_CLASSIC, KV_POST_EX };

/* Step 08's long-only option keys (cli.h's blocks). */
enum kv_key {
	CLI_KEY_MODE = CLI_STAGE_KEYS(8),
	CLI_KEY_LAYERS,
	CLI_KEY_BLOCKS,
	CLI_KEY_BLOCK_BYTES,
	CLI_KEY_REQUESTS,
	CLI_KEY_POOL,
	CLI_KEY_QPS,
	CLI_KEY_RUN,
	CLI_KEY_MERGE,
	CLI_KEY_LAYER_MS,
	CLI_KEY_DELAY_QP,
	CLI_KEY_WINDOWS,
	CLI_KEY_NO_OVERLAP,
	CLI_KEY_CHAIN,
	CLI_KEY_KV_VIOLATE,
	CLI_KEY_POST,
};

/* The options' upper bounds: what a request may hold, and how many requests a run moves. */
#define KV_MAX_LAYERS 255
#define KV_MAX_BLOCKS 4096
#define KV_MAX_REQUESTS 255

#define KV_MAX_QPS 16
/* Each QP's send queue, as asked: chains of at most half of it are in flight, each with its last WR signalled. */
#define KV_SEND_DEPTH 64
#define KV_MAX_CHAIN 1024

struct kv_opts {
	enum kv_mode mode;	/* --mode */
	int layers;		/* --layers: a request's layers */
	int blocks;		/* --blocks: its blocks per layer */
	size_t block_bytes;	/* --block-bytes: one block of one layer, K and V together */
	int requests;		/* --requests: how many requests move, one after the other */
	int pool;		/* --pool: how many requests each side's pool holds */
	int qps;		/* --qps: RC QPs the blocks are striped over */
	int run;		/* --run: blocks a paged allocator hands out side by side */
	int chain;		/* --chain: WRs posted with one doorbell, at most */
	enum kv_post post;	/* --post: the API that posts a chain, this side's own choice */
	bool merge;		/* --merge: adjacent blocks in one WR */
	bool windows;		/* --windows: access granted per request through memory windows */
	int layer_ms;		/* --layer-ms: the prefiller's stand-in compute time per layer */
	bool no_overlap;	/* --no-overlap: every layer computed before any moves */
	int delay_qp, delay_ms;	/* --delay-qp Q:MS: QP Q's posts held back (a slow NIC) */
	enum kv_violation violate;	/* --violate */
};

void kv_opts_default(struct kv_opts *opts);

/* Step 08's options, filling a struct kv_opts. */
extern const struct cli_option kv_cli_options[];
#define KV_STAGE(opts) { kv_cli_options, NULL, (opts) }

/* Fails, naming the options, when they cannot describe a transfer; 0 otherwise. */
int kv_opts_check(const struct kv_opts *opts);

/*
 * What this side asks of DEV, after stage 1 and before anything else is
 * created (main.c's hook for stage 3's session_open), each refusal naming
 * the options to change: the pool pinned as one MR; a block (with --merge,
 * a layer's adjacent blocks) in one message; each QP's queues (CAP, as asked
 * of stage 3) and CQ; READs in flight for a pull (DECODER: this side
 * READs); and the windows of --windows.  0, or -1 after one error line.
 */
int kv_check_limits(const struct rdma_dev *dev, const struct kv_opts *kv,
		    const struct ibv_qp_cap *cap, bool decoder);

const char *kv_mode_name(enum kv_mode mode);

/* Bytes of one request's KV cache, and of one side's pool. */
size_t kv_request_bytes(const struct kv_opts *opts);
size_t kv_pool_bytes(const struct kv_opts *opts);

#endif
