/* kv_pool.c: a paged KV-cache pool: fixed-size blocks in one registered buffer, handed to requests in a seeded, scattered order. */
#include "kv_pool.h"
#include "report.h"

#include <stdlib.h>

/* A small, fixed generator: the same seed gives the same pool layout on every machine. */
static uint32_t next_random(uint32_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 17;
	*state ^= *state << 5;
	return *state;
}

/* Fisher-Yates over N runs. */
static void shuffle(uint32_t *runs, uint32_t n, uint32_t seed)
{
	uint32_t state = seed ? seed : 1;

	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = next_random(&state) % (i + 1), t = runs[i];

		runs[i] = runs[j];
		runs[j] = t;
	}
}

/*
 * A shuffle may still leave run k + 1 right after run k, and then two runs
 * would be adjacent by accident: swap the later one with the next run that
 * does not continue it.
 */
static void break_accidental_runs(uint32_t *runs, uint32_t n)
{
	for (uint32_t i = 0; i + 1 < n; i++) {
		for (uint32_t j = i + 2; runs[i + 1] == runs[i] + 1 && j < n; j++) {
			if (runs[j] != runs[i] + 1) {
				uint32_t t = runs[i + 1];

				runs[i + 1] = runs[j];
				runs[j] = t;
			}
		}
	}
}

int kv_pool_init(struct kv_pool *pool, const struct rdma_buf *buf, const struct kv_opts *opts,
		 uint32_t seed)
{
	uint32_t n_runs, run = (uint32_t)opts->run;

	*pool = (struct kv_pool){ .buf = buf, .block_bytes = opts->block_bytes,
				  .n_blocks = (uint32_t)(buf->len / opts->block_bytes) };
	n_runs = pool->n_blocks / run;
	pool->order = calloc(n_runs, sizeof(*pool->order));
	if (!pool->order) {
		report_error("no memory for the pool's order of %u runs", n_runs);
		return -1;
	}
	for (uint32_t i = 0; i < n_runs; i++)
		pool->order[i] = i;
	shuffle(pool->order, n_runs, seed);
	break_accidental_runs(pool->order, n_runs);
	return 0;
}

void kv_pool_free(struct kv_pool *pool)
{
	free(pool->order);
	pool->order = NULL;
}

int kv_pool_take(struct kv_pool *pool, const struct kv_opts *opts, struct block_table *table)
{
	int n = opts->layers * opts->blocks, run = opts->run;

	*table = (struct block_table){ .layers = opts->layers, .blocks = opts->blocks };
	table->entry = calloc((size_t)n, sizeof(*table->entry));
	if (!table->entry) {
		report_error("no memory for a block table of %d entries", n);
		return -1;
	}
	/* The pool holds --pool requests, and kv_opts_check allows no more: a run is always left. */
	for (int e = 0; e < n; e += run)
		for (int k = 0; k < run; k++)
			table->entry[e + k] = pool->order[pool->next + (uint32_t)(e / run)] *
					      (uint32_t)run + (uint32_t)k;
	pool->next += (uint32_t)(n / run);
	return 0;
}

void kv_table_free(struct block_table *table)
{
	free(table->entry);
	table->entry = NULL;
}

uint8_t *kv_block_addr(const struct kv_pool *pool, const struct block_table *table, int e)
{
	return (uint8_t *)pool->buf->addr + (size_t)table->entry[e] * pool->block_bytes;
}

int kv_table_adjacent(const struct block_table *table)
{
	int n = table->layers * table->blocks, adjacent = 0;

	/* Within a layer only: each layer moves as soon as it is computed. */
	for (int e = 1; e < n; e++)
		adjacent += e % table->blocks && table->entry[e] == table->entry[e - 1] + 1;
	return adjacent;
}

/* The byte at OFFSET of a block: its request, layer, block and offset all change it. */
static uint8_t pattern_byte(int request, int layer, int block, size_t offset)
{
	uint32_t x = (uint32_t)request * 0x9e3779b1u ^ (uint32_t)layer * 0x85ebca6bu ^
		     (uint32_t)block * 0xc2b2ae35u ^ (uint32_t)offset;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	return (uint8_t)(x ^ x >> 12);
}

void kv_fill_layer(const struct kv_pool *pool, const struct block_table *table, int request,
		   int layer)
{
	for (int b = 0; b < table->blocks; b++) {
		uint8_t *p = kv_block_addr(pool, table, layer * table->blocks + b);

		for (size_t i = 0; i < pool->block_bytes; i++)
			p[i] = pattern_byte(request, layer, b, i);
	}
}

int kv_check(const struct kv_pool *pool, const struct block_table *table, int request)
{
	for (int e = 0; e < table->layers * table->blocks; e++) {
		const uint8_t *p = kv_block_addr(pool, table, e);
		int layer = e / table->blocks, block = e % table->blocks;

		for (size_t i = 0; i < pool->block_bytes; i++) {
			uint8_t want = pattern_byte(request, layer, block, i);

			if (p[i] != want) {
				report_error("request %d, layer %d, block %d (pool block %u here), byte "
					     "%zu: 0x%02x, where the prefiller put 0x%02x: the cache did "
					     "not arrive whole", request, layer, block, table->entry[e], i,
					     p[i], want);
				return -1;
			}
		}
	}
	return 0;
}
