/* kv_options.c: step 08's part of the command line: the shape of a request's KV cache, the pools, pull or push, the QPs. */
#include "kv_options.h"
#include "report.h"

#include <stdio.h>

/* The largest pool an ordinary user's memlock limit of 8 MiB holds, beside the rest. */
#define MAX_POOL_BYTES ((size_t)6 << 20)
#define MAX_BLOCK_BYTES ((size_t)1 << 20)

void kv_opts_default(struct kv_opts *opts)
{
	/*
	 * Llama 3.1 8B, scaled down: 8 KV heads of 128 dimensions in bf16 make
	 * 2 x 8 x 128 x 2 = 4096 bytes per token per layer, K and V together, and
	 * a block of 16 tokens holds 64 KiB of one layer.  4 of its 32 layers,
	 * 4 blocks each (64 tokens), make a request of 1 MiB; a pool of 4 of
	 * them, 4 MiB, stays within an ordinary user's 8 MiB memlock limit.
	 */
	*opts = (struct kv_opts){
		.mode = KV_PULL, .layers = 4, .blocks = 4, .block_bytes = 64 << 10,
		.requests = 2, .pool = 4, .qps = 1, .run = 1, .chain = KV_SEND_DEPTH / 2,
		.delay_qp = -1,
	};
}

const struct cli_option kv_cli_options[] = {
	{ "mode", CLI_KEY_MODE, "MODE", "pull (the decoder READs each block) or push (the prefiller WRITEs it, with immediate) (default: pull)" },
	{ "layers", CLI_KEY_LAYERS, "N", "layers of a request (default: 4)" },
	{ "blocks", CLI_KEY_BLOCKS, "N", "blocks of a request per layer, 16 tokens each (default: 4)" },
	{ "block-bytes", CLI_KEY_BLOCK_BYTES, "BYTES", "one block of one layer, K and V together (default: 64K, Llama 3.1 8B's)" },
	{ "requests", CLI_KEY_REQUESTS, "N", "requests moved, one after the other (default: 2)" },
	{ "pool", CLI_KEY_POOL, "N", "requests each side's pool holds (default: 4)" },
	{ "qps", CLI_KEY_QPS, "K", "RC QPs the blocks are striped over (default: 1)" },
	{ "run", CLI_KEY_RUN, "N", "blocks the allocator hands out side by side, on both sides (default: 1: none adjacent)" },
	{ "chain", CLI_KEY_CHAIN, "N", "WRs posted with one doorbell, at most (default: 32, half the send queue of 64)" },
	{ "post", CLI_KEY_POST, "API", "classic (ibv_post_send, a linked list of WRs) or ex (the extended API: ibv_wr_start ... ibv_wr_complete); this side's own choice, not compared with the peer's: the wire is the same (default: classic)" },
	{ "merge", CLI_KEY_MERGE, NULL, "move blocks adjacent on both sides in one WR" },
	{ "layer-ms", CLI_KEY_LAYER_MS, "MS", "the prefiller's stand-in compute time per layer (default: 0)" },
	{ "delay-qp", CLI_KEY_DELAY_QP, "Q:MS", "for the lesson on ordering: QP Q's posts wait MS ms" },
	{ "no-overlap", CLI_KEY_NO_OVERLAP, NULL, "compute every layer before any moves, to compare with the overlap" },
	{ "windows", CLI_KEY_WINDOWS, NULL, "grant the peer each request's blocks through memory windows, not the pool's rkey, and take them back after" },
	{ "violate", CLI_KEY_KV_VIOLATE, "KIND", "for the lesson on access: rkey (the initiator uses an rkey the peer never handed out) or revoked (with --windows: the peer's windows are taken back before the go-ahead)" },
	{ 0 },
};

const char *kv_mode_name(enum kv_mode mode)
{
	return mode == KV_PULL ? "pull" : "push";
}

int kv_parse_option(int key, const char *arg, void *ctx)
{
	static const char *const modes[] = { "pull", "push" };
	static const char *const violations[] = { "rkey", "revoked" };
	static const char *const posts[] = { "classic", "ex" };
	struct kv_opts *opts = ctx;
	int mode, kind, post;

	switch (key) {
	case CLI_KEY_MODE:
		mode = cli_pick_named("--mode", "mode", arg, modes, 0, 2);
		if (mode < 0)
			return -1;
		opts->mode = (enum kv_mode)mode;
		return 0;
	case CLI_KEY_POST:
		post = cli_pick_named("--post", "API", arg, posts, 0, 2);
		if (post < 0)
			return -1;
		opts->post = (enum kv_post)post;
		return 0;
	case CLI_KEY_LAYERS:
		return cli_parse_int("--layers", arg, 1, KV_MAX_LAYERS, &opts->layers);
	case CLI_KEY_BLOCKS:
		return cli_parse_int("--blocks", arg, 1, KV_MAX_BLOCKS, &opts->blocks);
	case CLI_KEY_BLOCK_BYTES:
		return cli_parse_size("--block-bytes", arg, 64, MAX_BLOCK_BYTES, &opts->block_bytes);
	case CLI_KEY_REQUESTS:
		return cli_parse_int("--requests", arg, 1, KV_MAX_REQUESTS, &opts->requests);
	case CLI_KEY_POOL:
		return cli_parse_int("--pool", arg, 1, 255, &opts->pool);
	case CLI_KEY_QPS:
		return cli_parse_int("--qps", arg, 1, KV_MAX_QPS, &opts->qps);
	case CLI_KEY_RUN:
		return cli_parse_int("--run", arg, 1, 4096, &opts->run);
	case CLI_KEY_CHAIN:
		return cli_parse_int("--chain", arg, 1, KV_MAX_CHAIN, &opts->chain);
	case CLI_KEY_MERGE:
		opts->merge = true;
		return 0;
	case CLI_KEY_WINDOWS:
		opts->windows = true;
		return 0;
	case CLI_KEY_NO_OVERLAP:
		opts->no_overlap = true;
		return 0;
	case CLI_KEY_KV_VIOLATE:
		kind = cli_pick_named("--violate", "kind", arg, violations, 0, 2);
		if (kind < 0)
			return -1;
		opts->violate = (enum kv_violation)(kind + 1);
		return 0;
	case CLI_KEY_LAYER_MS:
		return cli_parse_int("--layer-ms", arg, 0, 10000, &opts->layer_ms);
	}
	return cli_parse_pair("--delay-qp", arg, "Q:MS (a QP from 0, and 0 to 10000 ms)",
			      KV_MAX_QPS - 1, 10000, &opts->delay_qp, &opts->delay_ms);
}

size_t kv_request_bytes(const struct kv_opts *opts)
{
	return (size_t)opts->layers * (size_t)opts->blocks * opts->block_bytes;
}

size_t kv_pool_bytes(const struct kv_opts *opts)
{
	return (size_t)opts->pool * kv_request_bytes(opts);
}

int kv_opts_check(const struct kv_opts *opts)
{
	int per_request = opts->layers * opts->blocks;

	if (opts->qps > per_request) {
		report_error("--qps %d is more than the %d blocks of a request (--layers %d x --blocks "
			     "%d): some QPs would carry nothing; give at most %d", opts->qps,
			     per_request, opts->layers, opts->blocks, per_request);
		return -1;
	}
	if (opts->blocks % opts->run) {
		report_error("--run %d does not divide --blocks %d: the allocator hands out whole "
			     "runs of a layer's blocks", opts->run, opts->blocks);
		return -1;
	}
	if (kv_pool_bytes(opts) > MAX_POOL_BYTES) {
		report_error("a pool of --pool %d requests of %zu bytes is %zu bytes, more than %zu "
			     "(an ordinary user may pin 8 MiB): give fewer --pool, --layers, --blocks "
			     "or --block-bytes", opts->pool, kv_request_bytes(opts), kv_pool_bytes(opts),
			     MAX_POOL_BYTES);
		return -1;
	}
	if (opts->requests > opts->pool) {
		report_error("--requests %d is more than the pool holds (--pool %d): a paged pool "
			     "gives a request blocks no earlier request holds", opts->requests, opts->pool);
		return -1;
	}
	if (opts->delay_qp >= opts->qps) {
		report_error("--delay-qp %d: there are only %d QPs (0 to %d)", opts->delay_qp,
			     opts->qps, opts->qps - 1);
		return -1;
	}
	if (opts->violate == KV_VIOLATE_REVOKED && !opts->windows) {
		report_error("--violate revoked takes back memory windows: give --windows too");
		return -1;
	}
	if (opts->violate == KV_VIOLATE_RKEY && opts->windows) {
		report_error("--violate rkey breaks the pool's rkey, which --windows never sends: "
			     "give --violate revoked with --windows");
		return -1;
	}
	return 0;
}
