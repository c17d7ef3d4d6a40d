/* kv_pool.h: a paged KV-cache pool: fixed-size blocks in one registered buffer, handed to requests in a seeded, scattered order. */
#ifndef RDMA_STEPS_KV_POOL_H
#define RDMA_STEPS_KV_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "kv_options.h"
#include "reg_mr.h"

/*
 * A request's block table: for each layer l and block b, the index of the
 * pool block that holds it, at entry l * blocks + b.  What vLLM keeps per
 * request (its block table maps token positions to physical blocks).
 */
struct block_table {
	int layers, blocks;
	uint32_t *entry;
};

/* One side's pool: the stage 2 buffer, cut into blocks, and the order its blocks are handed out. */
struct kv_pool {
	const struct rdma_buf *buf;	/* registered once, as one MR */
	size_t block_bytes;
	uint32_t n_blocks;
	uint32_t *order;		/* a seeded permutation of runs of blocks */
	uint32_t next;			/* how many of ORDER are handed out */
};

/*
 * Lays the pool over BUF and draws its order from SEED: runs of OPTS->run
 * blocks, shuffled, with no two runs handed out one after the other that sit
 * side by side in the pool.  Returns 0, or -1 (no memory, reported).
 */
int kv_pool_init(struct kv_pool *pool, const struct rdma_buf *buf, const struct kv_opts *opts,
		 uint32_t seed);
void kv_pool_free(struct kv_pool *pool);

/* Hands the next request's blocks out into TABLE (allocated here; kv_table_free). 0 or -1. */
int kv_pool_take(struct kv_pool *pool, const struct kv_opts *opts, struct block_table *table);
void kv_table_free(struct block_table *table);

/* The address of entry E of TABLE in POOL. */
uint8_t *kv_block_addr(const struct kv_pool *pool, const struct block_table *table, int e);

/* How many of TABLE's entries sit right after the one before them in the same layer: blocks a WR could merge. */
int kv_table_adjacent(const struct block_table *table);

/* The prefiller's bytes: every block of LAYER of REQUEST, named in each byte by layer, block and offset. */
void kv_fill_layer(const struct kv_pool *pool, const struct block_table *table, int request,
		   int layer);

/*
 * The decoder's check: every byte of every block at its own addresses is
 * the prefiller's pattern; 0, or -1 naming the first wrong byte.
 */
int kv_check(const struct kv_pool *pool, const struct block_table *table, int request);

#endif
