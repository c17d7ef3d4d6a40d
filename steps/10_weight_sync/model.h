/* model.h: step 10's model: Llama-3 8B's named tensors scaled by --model-dim, the trainers' fully sharded layout and the replicas' tensor-parallel one, and what every element holds at each version. */
#ifndef RDMA_STEPS_MODEL_H
#define RDMA_STEPS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "sync_options.h"

/* Llama-3 8B (its config.json, book/sources.md): what --model-dim and --layers scale. */
#define MODEL_DIM_FULL 4096
#define MODEL_LAYERS_FULL 32
_Static_assert(MODEL_LAYERS_FULL == SYNC_MAX_LAYERS, "--layers takes at most the model's layers");
/* The trainers keep every element in BF16, 2 bytes (--serve-dtype: what the replicas hold). */
#define MODEL_SRC_ELEM 2

/* How a serving replica splits a tensor over its P ranks, as Megatron-LM does. */
enum model_split {
	SPLIT_COLUMN,	/* dim 0 (the output rows of a [out, in] weight): each rank whole rows */
	SPLIT_ROW,	/* dim 1 (the input columns): each rank a run of every row */
	SPLIT_NONE,	/* replicated: every rank the whole tensor */
};

struct tensor {
	char name[64];
	uint64_t rows, cols;	/* [out, in], row-major, as PyTorch keeps a Linear's weight */
	enum model_split split;
};

#define MODEL_MAX_TENSORS (3 + 9 * MODEL_LAYERS_FULL)

struct model {
	struct tensor t[MODEL_MAX_TENSORS];
	int tensors;
	int trainers, tp;
	int dtype;				/* --serve-dtype: DTYPE_BF16 or DTYPE_FP8 */
	uint64_t dst_elem;			/* a serving rank's bytes an element: 2, or 1 in FP8 */
	uint64_t elems;				/* the whole model's elements */
	uint64_t shard[MODEL_MAX_TENSORS];	/* elements of a tensor per trainer: ceil(n / T) */
	/* Byte offsets: tensor i's shard in trainer k's buffer, its slice in TP rank r's. */
	uint64_t tr_base[MODEL_MAX_TENSORS][SYNC_MAX_RANKS];
	uint64_t tp_base[MODEL_MAX_TENSORS][SYNC_MAX_RANKS];
	uint64_t tr_bytes[SYNC_MAX_RANKS];	/* trainer k's whole shard */
	uint64_t tp_bytes[SYNC_MAX_RANKS];	/* TP rank r's whole slice: one version's buffer */
};

/* The named tensors of OPTS's model and both layouts. */
void model_init(struct model *m, const struct sync_opts *opts);

/* The whole model's bytes as the trainers keep it (BF16), and as a replica holds it. */
static inline uint64_t model_src_bytes(const struct model *m) { return m->elems * MODEL_SRC_ELEM; }
static inline uint64_t model_dst_bytes(const struct model *m) { return m->elems * m->dst_elem; }

/* Refuses a --tp that does not divide every split dimension of D's model; 0 or -1, said. */
int model_check_tp(int dim, int tp);

/* The arithmetic, the layouts and their bytes, as teaching lines. */
void model_show(const struct model *m, const struct sync_opts *opts);

/* Element I (flat, row-major) of tensor T at version V (0: never written), as a BF16 bit pattern. */
uint16_t model_value(uint32_t seed, int v, int t, uint64_t i);

/* A range of a tensor's flat elements that TP rank R holds, at byte DST of its slice. */
struct model_range {
	uint64_t first, count;	/* elements */
	uint64_t dst;		/* bytes, in the slice */
};

/*
 * Calls EACH for every range of tensor T that TP rank R holds, in the order
 * they lie in its slice: one range for a column split or a replicated tensor,
 * one per row for a row split.
 */
typedef int model_range_fn(const struct model *m, int t, const struct model_range *r, void *arg);
int model_ranges(const struct model *m, int t, int r, model_range_fn *each, void *arg);

/* Trainer K's shard of tensor T: flat elements [*first, *first + *count). */
void model_shard(const struct model *m, int t, int k, uint64_t *first, uint64_t *count);

/* Fills trainer K's buffer BUF with its shard of every tensor at version V. */
void model_fill_shard(const struct model *m, uint32_t seed, int k, int v, uint8_t *buf);

/*
 * Checks TP rank R's slice BUF against version V, byte for byte: each
 * element the BF16 value, or under --serve-dtype fp8 its E4M3 conversion
 * (fp8_from_bf16); the bytes wrong; *FIRST_T and *FIRST_I name the first
 * wrong element (tensor, flat index).
 */
uint64_t model_check_slice(const struct model *m, uint32_t seed, int r, int v, const uint8_t *buf,
			   int *first_t, uint64_t *first_i);

#endif
