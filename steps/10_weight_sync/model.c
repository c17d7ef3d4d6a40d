/* model.c: step 10's model: Llama-3 8B's named tensors scaled by --model-dim, the trainers' fully sharded layout and the replicas' tensor-parallel one, and what every element holds at each version. */
#include "model.h"
#include "fp8.h"
#include "report.h"

#include <stdio.h>
#include <string.h>

/*
 * Llama-3 8B's config.json: hidden_size 4096, intermediate_size 14336 (3.5 x),
 * 32 attention heads and 8 KV heads of 128 (the K and V projections 1024
 * rows, D / 4), vocab_size 128256 (501 x 4096 / 16), 32 layers, untied
 * embeddings.  Scaled by D / 4096, every dimension stays whole for D a
 * multiple of 64.
 */
static uint64_t kv_rows(uint64_t d) { return d / 4; }
static uint64_t ffn_rows(uint64_t d) { return d * 7 / 2; }
static uint64_t vocab_rows(uint64_t d) { return d * 501 / 16; }

static void add(struct model *m, const char *name, uint64_t rows, uint64_t cols,
		enum model_split split)
{
	struct tensor *t = &m->t[m->tensors++];

	snprintf(t->name, sizeof(t->name), "%s", name);
	t->rows = rows;
	t->cols = cols;
	t->split = split;
}

/* Elements of tensor T that TP rank R holds (the same for every R). */
static uint64_t slice_elems(const struct model *m, const struct tensor *t)
{
	return t->split == SPLIT_NONE ? t->rows * t->cols : t->rows * t->cols / (uint64_t)m->tp;
}

void model_init(struct model *m, const struct sync_opts *opts)
{
	uint64_t d = (uint64_t)opts->dim;

	memset(m, 0, sizeof(*m));
	m->trainers = opts->trainers;
	m->tp = opts->tp;
	m->dtype = opts->serve_dtype;
	m->dst_elem = opts->serve_dtype == DTYPE_FP8 ? 1 : MODEL_SRC_ELEM;
	/* Megatron's choice: a column split before a row split, so that a pair needs one all-reduce. */
	add(m, "embed_tokens", vocab_rows(d), d, SPLIT_COLUMN);
	for (int l = 0; l < opts->layers; l++) {
		char n[64];
#define LAYER(part, rows, cols, split) \
		snprintf(n, sizeof(n), "layers.%d.%s", l, part), add(m, n, rows, cols, split)
		LAYER("input_layernorm", 1, d, SPLIT_NONE);
		LAYER("self_attn.q_proj", d, d, SPLIT_COLUMN);
		LAYER("self_attn.k_proj", kv_rows(d), d, SPLIT_COLUMN);
		LAYER("self_attn.v_proj", kv_rows(d), d, SPLIT_COLUMN);
		LAYER("self_attn.o_proj", d, d, SPLIT_ROW);
		LAYER("post_attention_layernorm", 1, d, SPLIT_NONE);
		LAYER("mlp.gate_proj", ffn_rows(d), d, SPLIT_COLUMN);
		LAYER("mlp.up_proj", ffn_rows(d), d, SPLIT_COLUMN);
		LAYER("mlp.down_proj", d, ffn_rows(d), SPLIT_ROW);
#undef LAYER
	}
	add(m, "norm", 1, d, SPLIT_NONE);
	add(m, "lm_head", vocab_rows(d), d, SPLIT_COLUMN);
	for (int i = 0; i < m->tensors; i++) {
		uint64_t n = m->t[i].rows * m->t[i].cols;

		m->elems += n;
		m->shard[i] = (n + (uint64_t)m->trainers - 1) / (uint64_t)m->trainers;
		for (int k = 0; k < m->trainers; k++) {
			uint64_t first, count;

			model_shard(m, i, k, &first, &count);
			m->tr_base[i][k] = m->tr_bytes[k];
			m->tr_bytes[k] += count * MODEL_SRC_ELEM;
		}
		for (int r = 0; r < m->tp; r++) {
			m->tp_base[i][r] = m->tp_bytes[r];
			m->tp_bytes[r] += slice_elems(m, &m->t[i]) * m->dst_elem;
		}
	}
}

int model_check_tp(int dim, int tp)
{
	const struct { const char *what; uint64_t n; } dims[] = {
		{ "q_proj's rows and o_proj's columns (hidden_size, scaled)", (uint64_t)dim },
		{ "k_proj's and v_proj's rows (8 KV heads of 128, scaled)", kv_rows((uint64_t)dim) },
		{ "gate_proj's and up_proj's rows, down_proj's columns (intermediate_size, scaled)",
		  ffn_rows((uint64_t)dim) },
		{ "embed_tokens' and lm_head's rows (vocab_size, scaled)", vocab_rows((uint64_t)dim) },
	};

	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		if (dims[i].n % (uint64_t)tp) {
			report_error("--tp %d does not divide %llu, %s at --model-dim %d: a split gives "
				     "each rank the same share; pick a --tp that divides it",
				     tp, (unsigned long long)dims[i].n, dims[i].what, dim);
			return -1;
		}
	return 0;
}

void model_shard(const struct model *m, int t, int k, uint64_t *first, uint64_t *count)
{
	uint64_t n = m->t[t].rows * m->t[t].cols, c = m->shard[t], start = (uint64_t)k * c;

	*first = start < n ? start : n;
	*count = start < n ? (n - start < c ? n - start : c) : 0;
}

int model_ranges(const struct model *m, int t, int r, model_range_fn *each, void *arg)
{
	const struct tensor *x = &m->t[t];
	uint64_t dst = m->tp_base[t][r], p = (uint64_t)m->tp;
	struct model_range g;

	switch (x->split) {
	case SPLIT_NONE:
		g = (struct model_range){ .first = 0, .count = x->rows * x->cols, .dst = dst };
		return each(m, t, &g, arg);
	case SPLIT_COLUMN:
		g = (struct model_range){ .first = (uint64_t)r * (x->rows / p) * x->cols,
					  .count = x->rows / p * x->cols, .dst = dst };
		return each(m, t, &g, arg);
	case SPLIT_ROW:
		for (uint64_t row = 0; row < x->rows; row++) {
			g = (struct model_range){ .first = row * x->cols + (uint64_t)r * (x->cols / p),
						  .count = x->cols / p,
						  .dst = dst + row * (x->cols / p) * m->dst_elem };
			if (each(m, t, &g, arg))
				return -1;
		}
		return 0;
	}
	return -1;
}

/* splitmix64's finaliser: every (seed, version, tensor, element) its own bits. */
uint16_t model_value(uint32_t seed, int v, int t, uint64_t i)
{
	uint64_t x = ((uint64_t)seed << 32 | (uint64_t)(uint32_t)v << 12 | (uint64_t)t) *
		     0x9e3779b97f4a7c15ull ^ i;

	if (v == 0)
		return 0;
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (uint16_t)(x >> 48);
}

void model_fill_shard(const struct model *m, uint32_t seed, int k, int v, uint8_t *buf)
{
	for (int t = 0; t < m->tensors; t++) {
		uint64_t first, count;
		uint16_t *e = (uint16_t *)(buf + m->tr_base[t][k]);

		model_shard(m, t, k, &first, &count);
		for (uint64_t j = 0; j < count; j++)
			e[j] = model_value(seed, v, t, first + j);
	}
}

struct slice_check {
	uint32_t seed;
	int v;
	const uint8_t *buf;
	uint64_t wrong;
	int first_t;
	uint64_t first_i;
};

/* Element J of range G as it must be: the BF16 value, or its E4M3 byte under --serve-dtype fp8. */
static bool element_right(const struct model *m, const struct slice_check *c, int t,
			  const struct model_range *g, uint64_t j)
{
	uint16_t want = model_value(c->seed, c->v, t, g->first + j);

	if (m->dtype == DTYPE_FP8)
		return c->buf[g->dst + j] == fp8_from_bf16(want, NULL);
	return ((const uint16_t *)(c->buf + g->dst))[j] == want;
}

static int check_range(const struct model *m, int t, const struct model_range *g, void *arg)
{
	struct slice_check *c = arg;

	for (uint64_t j = 0; j < g->count; j++) {
		if (element_right(m, c, t, g, j))
			continue;
		if (!c->wrong) {
			c->first_t = t;
			c->first_i = g->first + j;
		}
		c->wrong += m->dst_elem;
	}
	return 0;
}

uint64_t model_check_slice(const struct model *m, uint32_t seed, int r, int v, const uint8_t *buf,
			   int *first_t, uint64_t *first_i)
{
	struct slice_check c = { .seed = seed, .v = v, .buf = buf, .first_t = -1 };

	for (int t = 0; t < m->tensors; t++)
		model_ranges(m, t, r, check_range, &c);
	*first_t = c.first_t;
	*first_i = c.first_i;
	return c.wrong;
}

static const char *const split_names[] = { [SPLIT_COLUMN] = "column", [SPLIT_ROW] = "row",
					   [SPLIT_NONE] = "replicated" };

void model_show(const struct model *m, const struct sync_opts *opts)
{
	uint64_t d = (uint64_t)opts->dim, bytes = model_src_bytes(m);

	show("model", "Llama-3 8B's shapes (config.json: hidden 4096, intermediate 14336, 8 KV heads "
	     "of 128, vocabulary 128256, 32 layers) scaled by D / 4096 = %llu / 4096: hidden %llu, "
	     "intermediate 3.5 x D = %llu, K and V D / 4 = %llu, vocabulary 501 x D / 16 = %llu; "
	     "%d of 32 layers", (unsigned long long)d, (unsigned long long)d,
	     (unsigned long long)ffn_rows(d), (unsigned long long)kv_rows(d),
	     (unsigned long long)vocab_rows(d), opts->layers);
	show("model size", "%d tensors, %llu elements = 13 x D^2 x %d layers + 2 x %llu x D + "
	     "(2 x %d + 1) x D, BF16: %llu B (the full model: 8,030,261,248 elements, 16.06 GB)",
	     m->tensors, (unsigned long long)m->elems, opts->layers,
	     (unsigned long long)vocab_rows(d), opts->layers, (unsigned long long)bytes);
	if (m->dtype == DTYPE_FP8)
		show("serve dtype", "FP8 E4M3 (--serve-dtype fp8): every replica holds each weight in 1 B, "
		     "%llu B the model, as the OCP 8-bit floating point spec (OFP8) defines it; the "
		     "trainers keep BF16, %llu B, and convert each run on the way: round to nearest even, "
		     "a value past 448 (or an infinity) saturated to +-448, one of at most 2^-10 to a "
		     "zero of its sign, NaN kept NaN", (unsigned long long)model_dst_bytes(m),
		     (unsigned long long)bytes);
	show("trainer layout", "fully sharded, as FSDP: every tensor flattened and split evenly over "
	     "the %d trainers, ceil(n / %d) elements each; trainer 0 holds %llu B, 1 / %d of the "
	     "model (DDP would keep all %llu B on every trainer)", m->trainers, m->trainers,
	     (unsigned long long)m->tr_bytes[0], m->trainers, (unsigned long long)bytes);
	show("serving layout", "tensor-parallel over --tp %d, as Megatron: q, k, v, gate, up, "
	     "embed_tokens and lm_head split by %s (each rank whole output rows: a column-parallel "
	     "matmul needs no input from its peers), o and down by %s (each rank a run of every row: "
	     "it takes the column split's output as it lies, and one all-reduce sums the pair), the "
	     "norms %s (a vector of D, needed whole by every rank); TP rank 0 holds %llu B, every "
	     "replica a whole copy", m->tp, split_names[SPLIT_COLUMN], split_names[SPLIT_ROW],
	     split_names[SPLIT_NONE], (unsigned long long)m->tp_bytes[0]);
}
