/* sync_options.c: step 10's part of the command line: the trainers, the replicas' tensor parallelism, the model's size, the updates, the seed. */
#include "sync_options.h"
#include "report.h"

#include <stdio.h>

#define MAX_DIM 4096
#define MAX_UPDATES 1000
/* --link-rate's bound: 1 TB/s, past any NIC of 2026 (400 Gb/s is 50,000 MB/s). */
#define MAX_LINK_MBS 1000000

const char *const sync_way_names[SYNC_WAYS + 1] = { [WAY_PUSH] = "push", [WAY_GATHER] = "gather",
						     [WAY_TCP] = "tcp", [WAY_ALL] = "all" };

const char *const sync_dtype_names[SYNC_DTYPES] = { [DTYPE_BF16] = "bf16", [DTYPE_FP8] = "fp8" };

void sync_opts_default(struct sync_opts *opts)
{
	/*
	 * Llama-3 8B scaled down (model.c prints the arithmetic): D = 256 of
	 * its 4096, 4 of its 32 layers, about 15 MB in BF16; 2 trainers, each
	 * replica 2 ranks of tensor parallelism, 3 updates.
	 */
	*opts = (struct sync_opts){ .trainers = 2, .tp = 2, .dim = 256, .layers = 4, .updates = 3,
				    .seed = 1, .hold_rank = -1, .plant_rank = -1 };
	job_opts_default(&opts->job, SYNC_MAX_RANKS);
}

const struct cli_option sync_cli_options[] = {
	{ "trainers", CLI_KEY_TRAINERS, "T", "ranks 0 to T - 1 train, fully sharded; the others serve (default: 2)", CLI_INT_AT(struct sync_opts, trainers, 1, SYNC_MAX_RANKS - 1) },
	{ "tp", CLI_KEY_TP, "P", "ranks a serving replica, tensor-parallel; every replica holds the whole model (default: 2)", CLI_INT_AT(struct sync_opts, tp, 1, SYNC_MAX_RANKS - 1) },
	{ "model-dim", CLI_KEY_MODEL_DIM, "D", "Llama-3 8B's hidden size 4096 scaled to D elements, a multiple of 64; every tensor scales with it (default: 256)", CLI_INT_AT(struct sync_opts, dim, 64, MAX_DIM) },
	{ "layers", CLI_KEY_LAYERS, "L", "decoder layers, of Llama-3 8B's 32 (default: 4)", CLI_INT_AT(struct sync_opts, layers, 1, SYNC_MAX_LAYERS) },
	{ "updates", CLI_KEY_UPDATES, "U", "rounds: each a training step's new weights pushed to every replica (default: 3)", CLI_INT_AT(struct sync_opts, updates, 1, MAX_UPDATES) },
	{ "seed", CLI_KEY_SYNC_SEED, "S", "the updates' seed (default: 1)", CLI_U32_AT(struct sync_opts, seed) },
	{ "hold", CLI_KEY_SYNC_HOLD, "RANK:MS", "for tests: rank RANK stops MS ms in round 2, mid-update (a trainer after its first chain)", CLI_PAIR_AT(struct sync_opts, hold_rank, SYNC_MAX_RANKS - 1, hold_ms, 600000, "RANK:MS, a rank and milliseconds") },
	{ "late-replica", CLI_KEY_LATE_REPLICA, NULL, "the last replica joins after round 1: it pulls the version then served by RDMA READ from replica 0, then takes the next updates (needs 2 replicas and 2 updates)", CLI_FLAG_AT(struct sync_opts, late_replica) },
	{ "way", CLI_KEY_WAY, "W", "how the weights travel: push (each trainer WRITEs its runs straight to every replica), gather (to trainer rank 0, which WRITEs the whole model to every replica), tcp (push's runs over a socket per pair) or all three each round, in that order, with a table (default: push)", CLI_NAME_AT(struct sync_opts, way, "way", sync_way_names, 0) },
	{ "link-rate", CLI_KEY_LINK_RATE, "MB/s", "the model's link rate, beside each way's time (default: measured each round on its push)", CLI_INT_AT(struct sync_opts, link_mbs, 1, MAX_LINK_MBS) },
	{ "serve-dtype", CLI_KEY_SERVE_DTYPE, "T", "what every replica holds: bf16, as the trainers, or fp8 (E4M3, OFP8's saturating mode): each trainer converts its runs into registered staging slots on the way, pipelined with its WRITEs (default: bf16)", CLI_NAME_AT(struct sync_opts, serve_dtype, "type", sync_dtype_names, 0) },
	{ "fp8-of", CLI_KEY_FP8_OF, "HEX,...", "print the FP8 E4M3 byte of each BF16 bit pattern, and what the conversion did to it, then exit; no device", CLI_TEXT_AT(struct sync_opts, fp8_of) },
	{ "plant-len", CLI_KEY_PLANT_LEN, "RANK:N", "for tests: rank RANK says its buffer is N B; every trainer must refuse it", CLI_PAIR_AT(struct sync_opts, plant_rank, SYNC_MAX_RANKS - 1, plant_len, 1 << 30, "RANK:N, a rank and a length in bytes") },
	{ 0 },
};

int sync_opts_check(const struct sync_opts *opts, int world)
{
	int serving = world - opts->trainers;

	if (opts->job.transport != TRANSPORT_RDMA) {
		report_error("--transport %s: step 10's TCP twin is a way of its own, beside the two "
			     "over verbs: give --way tcp, or --way all for the three in one run, and leave "
			     "--transport out", transport_names[opts->job.transport]);
		return -1;
	}
	if (world > SYNC_MAX_RANKS) {
		report_error("%d ranks: step 10 keeps a QP per trainer and serving rank, and takes at "
			     "most %d ranks", world, SYNC_MAX_RANKS);
		return -1;
	}
	if (serving < opts->tp) {
		report_error("--trainers %d of %d ranks leaves %d to serve, fewer than one replica of "
			     "--tp %d: lower --trainers or --tp, or raise --world-size", opts->trainers,
			     world, serving, opts->tp);
		return -1;
	}
	if (serving % opts->tp) {
		report_error("the %d serving ranks (%d ranks less --trainers %d) are not whole replicas "
			     "of --tp %d: every replica holds the whole model", serving, world,
			     opts->trainers, opts->tp);
		return -1;
	}
	if (opts->late_replica && (serving < 2 * opts->tp || opts->updates < 2)) {
		report_error("--late-replica with %d replica%s and --updates %d: a late replica pulls "
			     "version 1 from a live one after round 1, then takes round 2: give 2 "
			     "replicas or more (--world-size) and --updates 2 or more",
			     serving / opts->tp, serving / opts->tp == 1 ? "" : "s", opts->updates);
		return -1;
	}
	if (opts->way != WAY_PUSH && (opts->late_replica || opts->hold_rank >= 0)) {
		report_error("--way %s with %s: the late replica and --hold are push's alone so far: "
			     "give --way push, or leave %s out", sync_way_names[opts->way],
			     opts->late_replica ? "--late-replica" : "--hold",
			     opts->late_replica ? "--late-replica" : "--hold");
		return -1;
	}
	/* The TCP twin sends each run straight from the shard: there is no staging to convert in. */
	if (opts->serve_dtype == DTYPE_FP8 && sync_runs_way(opts, WAY_TCP)) {
		report_error("--serve-dtype fp8 with --way %s: the TCP twin sends each run straight from "
			     "the trainer's BF16 shard, and only the WRITEs convert on the way, through "
			     "their staging slots: give --way push or gather, or leave --serve-dtype out",
			     sync_way_names[opts->way]);
		return -1;
	}
	if (opts->dim % 64) {
		report_error("--model-dim %d is not a multiple of 64: Llama-3 8B's shapes scaled by "
			     "D / 4096 (the KV projections D / 4, the vocabulary 501 x D / 16) must "
			     "come out whole and split evenly", opts->dim);
		return -1;
	}
	return 0;
}

void sync_opts_format(const struct sync_opts *opts, char *buf, size_t len)
{
	snprintf(buf, len, "--trainers %d --tp %d --model-dim %d --layers %d --updates %d --seed %u%s%s%s%s%s",
		 opts->trainers, opts->tp, opts->dim, opts->layers, opts->updates, opts->seed,
		 opts->late_replica ? " --late-replica" : "", opts->way ? " --way " : "",
		 opts->way ? sync_way_names[opts->way] : "", opts->serve_dtype ? " --serve-dtype " : "",
		 opts->serve_dtype ? sync_dtype_names[opts->serve_dtype] : "");
}
