/* plan.h: step 10's transfer plan, computed once from both layouts: every run of bytes from a trainer's shard into a serving rank's slice, merged, summed per pair and checked to cover every byte once. */
#ifndef RDMA_STEPS_PLAN_H
#define RDMA_STEPS_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

/*
 * Elements from SRC's shard at SRC_OFF, SRC_LEN bytes of BF16, to DST's
 * slice at DST_OFF, DST_LEN bytes (offsets from their data's start): the
 * same length, or half of it under --serve-dtype fp8, one byte an element.
 */
struct run {
	int src, dst;
	uint64_t src_off, dst_off, src_len, dst_len;
};

struct plan {
	struct run *runs;		/* sorted by source, then destination, then DST_OFF */
	uint64_t n, cap;
	uint64_t pieces;		/* before merging: one per (range, shard) overlap */
	int world, trainers, tp;
	/* Per ordered pair: its runs are runs[first[s][d] .. first[s][d] + count[s][d]). */
	uint64_t first[SYNC_MAX_RANKS][SYNC_MAX_RANKS], count[SYNC_MAX_RANKS][SYNC_MAX_RANKS];
	uint64_t bytes[SYNC_MAX_RANKS][SYNC_MAX_RANKS];	/* what lands: the runs' DST_LEN */
	uint64_t read[SYNC_MAX_RANKS][SYNC_MAX_RANKS];	/* what the source reads: their SRC_LEN */
	int sources[SYNC_MAX_RANKS];	/* trainers with runs to each serving rank */
};

/* Serving rank D's replica and its rank in it. */
static inline int plan_replica(const struct plan *p, int d) { return (d - p->trainers) / p->tp; }
static inline int plan_tp_rank(const struct plan *p, int d) { return (d - p->trainers) % p->tp; }

/*
 * The runs to serving rank D that trainer SRC WRITEs: its own, or with
 * EVERY (--way gather: rank 0, which holds every shard) every trainer's,
 * trainer by trainer.  How many, and the I-th of them.
 */
uint64_t plan_runs_to(const struct plan *p, int src, bool every, int d);
const struct run *plan_run_to(const struct plan *p, int src, bool every, int d, uint64_t i);

/*
 * Whether trainer K signals rank R with a FETCH_ADD: when it has runs to R;
 * or with GATHER (--way gather), rank 0 to a serving rank and every other
 * trainer to rank 0, its shard's WRITE done.
 */
bool plan_signals(const struct plan *p, int k, int r, bool gather);

/* Every run of M over WORLD ranks, merged; 0, or -1 after saying what failed. */
int plan_build(struct plan *p, const struct model *m, int world);

/*
 * Every byte of every serving rank's slice covered by exactly one run,
 * every run inside its trainer's shard, and the same elements at both of
 * its ends; 0, or -1 after naming the first gap, overlap, overrun or
 * mismatch.
 */
int plan_check(const struct plan *p, const struct model *m);

/* The summary: bytes per ordered pair, the busiest sender and receiver, the slowest rank's bytes. */
void plan_show(const struct plan *p, const struct model *m);

void plan_free(struct plan *p);

#endif
