/* kv_options.c: step 08's part of the command line: the shape of a request's KV cache, the pools, pull or push, the QPs. */
#include "kv_options.h"
#include "report.h"

#include <stdint.h>
#include <stdio.h>

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

static const char *const mode_names[] = { [KV_PULL] = "pull", [KV_PUSH] = "push" };
static const char *const post_names[] = { [KV_POST_CLASSIC] = "classic", [KV_POST_EX] = "ex" };
/* "none" is the default, not a kind to ask for. */
static const char *const violation_names[] = {
	[KV_VIOLATE_RKEY] = "rkey", [KV_VIOLATE_REVOKED] = "revoked",
	[KV_VIOLATE_PAST_WINDOW] = "past_window",
};

const struct cli_option kv_cli_options[] = {
	{ "mode", CLI_KEY_MODE, "MODE", "pull (the decoder READs each block) or push (the prefiller WRITEs it, with immediate) (default: pull)", CLI_NAME_AT(struct kv_opts, mode, "mode", mode_names, 0) },
	{ "layers", CLI_KEY_LAYERS, "N", "layers of a request (default: 4)", CLI_INT_AT(struct kv_opts, layers, 1, KV_MAX_LAYERS) },
	{ "blocks", CLI_KEY_BLOCKS, "N", "blocks of a request per layer, 16 tokens each (default: 4)", CLI_INT_AT(struct kv_opts, blocks, 1, KV_MAX_BLOCKS) },
	{ "block-bytes", CLI_KEY_BLOCK_BYTES, "BYTES", "one block of one layer, K and V together (default: 64K, Llama 3.1 8B's)", CLI_SIZE_AT(struct kv_opts, block_bytes, 64, MAX_BLOCK_BYTES) },
	{ "requests", CLI_KEY_REQUESTS, "N", "requests moved, one after the other (default: 2)", CLI_INT_AT(struct kv_opts, requests, 1, KV_MAX_REQUESTS) },
	{ "pool", CLI_KEY_POOL, "N", "requests each side's pool holds (default: 4)", CLI_INT_AT(struct kv_opts, pool, 1, 255) },
	{ "qps", CLI_KEY_QPS, "K", "RC QPs the blocks are striped over (default: 1)", CLI_INT_AT(struct kv_opts, qps, 1, KV_MAX_QPS) },
	{ "run", CLI_KEY_RUN, "N", "blocks the allocator hands out side by side, on both sides (default: 1: none adjacent)", CLI_INT_AT(struct kv_opts, run, 1, 4096) },
	{ "chain", CLI_KEY_CHAIN, "N", "WRs posted with one doorbell, at most (default: 32, half the send queue of 64)", CLI_INT_AT(struct kv_opts, chain, 1, KV_MAX_CHAIN) },
	{ "post", CLI_KEY_POST, "API", "classic (ibv_post_send, a linked list of WRs) or ex (the extended API: ibv_wr_start ... ibv_wr_complete); this side's own choice, not compared with the peer's: the wire is the same (default: classic)", CLI_NAME_AT(struct kv_opts, post, "API", post_names, 0) },
	{ "merge", CLI_KEY_MERGE, NULL, "move blocks adjacent on both sides in one WR", CLI_FLAG_AT(struct kv_opts, merge) },
	{ "layer-ms", CLI_KEY_LAYER_MS, "MS", "the prefiller's stand-in compute time per layer (default: 0)", CLI_INT_AT(struct kv_opts, layer_ms, 0, 10000) },
	{ "delay-qp", CLI_KEY_DELAY_QP, "Q:MS", "for the lesson on ordering: QP Q's posts wait MS ms", CLI_PAIR_AT(struct kv_opts, delay_qp, KV_MAX_QPS - 1, delay_ms, 10000, "Q:MS (a QP from 0, and 0 to 10000 ms)") },
	{ "no-overlap", CLI_KEY_NO_OVERLAP, NULL, "compute every layer before any moves, to compare with the overlap", CLI_FLAG_AT(struct kv_opts, no_overlap) },
	{ "windows", CLI_KEY_WINDOWS, NULL, "grant the peer each request's blocks through memory windows, not the pool's rkey, and take them back after", CLI_FLAG_AT(struct kv_opts, windows) },
	{ "violate", CLI_KEY_KV_VIOLATE, "KIND", "for the lesson on access: rkey (the initiator uses an rkey the peer never handed out) revoked (with --windows: the peer's windows are taken back before the go-ahead) or past_window (with --windows: the initiator's first WR reaches one block past the end of its window, inside the peer's pool)", CLI_NAME_AT(struct kv_opts, violate, "kind", violation_names, KV_VIOLATE_RKEY) },
	{ 0 },
};

const char *kv_mode_name(enum kv_mode mode)
{
	return mode_names[mode];
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
	if (opts->violate == KV_VIOLATE_PAST_WINDOW && !opts->windows) {
		report_error("--violate past_window reaches past a memory window's end: give "
			     "--windows too");
		return -1;
	}
	if (opts->violate == KV_VIOLATE_RKEY && opts->windows) {
		report_error("--violate rkey breaks the pool's rkey, which --windows never sends: "
			     "give --violate revoked with --windows");
		return -1;
	}
	return 0;
}

/*
 * The fewest --qps that bring a QP's share of BLOCKS, BASE entries besides,
 * within the device's LIMIT; 0 when none of 1 to KV_MAX_QPS does.
 */
static int qps_that_fit(const struct rdma_dev *dev, enum dev_limit limit, uint64_t base,
			int blocks)
{
	uint64_t allowed = limit_value(dev, limit);

	for (int q = 1; q <= KV_MAX_QPS && q <= blocks; q++)
		if (base + (uint64_t)((blocks + q - 1) / q) <= allowed)
			return q;
	return 0;
}

/* A QP's receives, or its CQ's entries, against LIMIT: refused naming --qps, --layers, --blocks. */
static int check_per_qp(const struct rdma_dev *dev, enum dev_limit limit, uint64_t asked,
			uint64_t base, const struct kv_opts *kv, const char *what)
{
	int blocks = kv->layers * kv->blocks, q = qps_that_fit(dev, limit, base, blocks);
	char request[96], fix[64];

	snprintf(request, sizeof(request), "--layers %d --blocks %d --qps %d", kv->layers,
		 kv->blocks, kv->qps);
	if (q)
		snprintf(fix, sizeof(fix), "use --qps %d or more", q);
	else
		snprintf(fix, sizeof(fix), "give fewer --layers or --blocks");
	return limit_check(dev, limit, asked, what, request, fix);
}

int kv_check_limits(const struct rdma_dev *dev, const struct kv_opts *kv,
		    const struct ibv_qp_cap *cap, bool decoder)
{
	uint64_t pool = kv_pool_bytes(kv), blocks = (uint64_t)kv->layers * (uint64_t)kv->blocks;
	bool pull = kv->mode == KV_PULL, granting = kv->windows && decoder != pull;
	char shape[128], windows[96];

	snprintf(shape, sizeof(shape), "--pool %d --layers %d --blocks %d --block-bytes %zu",
		 kv->pool, kv->layers, kv->blocks, kv->block_bytes);
	snprintf(windows, sizeof(windows), "--windows --layers %d --blocks %d", kv->layers, kv->blocks);
	if (limit_check_pin(dev, pool, pool, shape,
			    "give fewer --pool, --layers, --blocks or --block-bytes") ||
	    limit_check_option(dev, LIMIT_MSG_SZ, "--block-bytes", (long long)kv->block_bytes,
			       kv->merge ? (uint64_t)kv->blocks : 1, 0, kv->merge ?
			       "bytes in one message (with --merge, a layer's --blocks adjacent blocks)" :
			       "bytes in one message (a block)") ||
	    limit_check(dev, LIMIT_QP_WR, cap->max_send_wr, "send WRs a QP (its chains in flight)",
			"step 08", "this device cannot run it") ||
	    check_per_qp(dev, LIMIT_QP_WR, cap->max_recv_wr, 0, kv, "receive WRs a QP (one for "
			 "each WRITE with immediate its blocks bring)") ||
	    check_per_qp(dev, LIMIT_CQE, (uint64_t)cap->max_send_wr + cap->max_recv_wr,
			 cap->max_send_wr, kv, "CQ entries a QP (its send WRs' and its receives')"))
		return -1;
	/* A pull READs: the decoder keeps them in flight, and the prefiller serves them. */
	if (pull && limit_check_reads(dev, decoder, "--mode pull", "use --mode push"))
		return -1;
	/* The granting side binds a window to each segment of a request: at most every block. */
	return granting ? limit_check_windows(dev, blocks, "--windows", windows, "leave --windows "
					      "out, or give fewer --layers or --blocks") : 0;
}
