/* fleet.h: step 10's verbs objects: one device, one registered buffer (the words, then a trainer's shard or a serving rank's two versions), one RC QP per trainer and serving pair. */
#ifndef RDMA_STEPS_FLEET_H
#define RDMA_STEPS_FLEET_H

#include <stdbool.h>

#include "control.h"
#include "cq_qp_rts.h"
#include "launch.h"
#include "open_pd.h"
#include "plan.h"
#include "reg_mr.h"
#include "rendezvous.h"
#include "sync_options.h"

/*
 * The buffer's words, then its data.  A serving rank: one signal word per
 * trainer (its FETCH_ADDs count its versions), the version word it serves
 * (and, on a late rank, its source's, as its READ brought it), then version
 * buffer 0 and version buffer 1, each its whole slice.  A
 * trainer: the old values its FETCH_ADDs bring back, one per serving rank,
 * then its shard.  Trainer rank 0 under --way gather: one signal word per
 * trainer too (its WRITE of its shard, counted), and after its own shard
 * every other trainer's, in rank order: the whole model, as the trainers
 * keep it (stage_off).
 */
#define FLEET_SIGNAL(k) (8 * (uint64_t)(k))
#define FLEET_VERSION ((uint64_t)8 * SYNC_MAX_RANKS)
#define FLEET_PEER_VERSION (FLEET_VERSION + 8)	/* a late rank: its source's word, as READ */
#define FLEET_GATHERED (FLEET_VERSION + 16)	/* --way gather: rank 0's FETCH_ADDs, its versions */
#define FLEET_OLD(d) (FLEET_VERSION + 64 + 8 * (uint64_t)(d))
#define FLEET_DATA ((uint64_t)512)

struct fleet {
	struct rdma_dev dev;			/* stage 1 */
	struct rdma_buf buf;			/* stage 2: words and data, registered once */
	struct rdma_buf stage;			/* a trainer under --serve-dtype fp8: the staging
						 * slots, registered once (sync_datapath.h) */
	struct rdma_conn conn[SYNC_MAX_RANKS];	/* stage 3: conn[p], our QP to rank p, where
						 * the plan pairs us (a trainer and a serving rank) */
	bool paired[SYNC_MAX_RANKS];
	int rank, world, trainers, tp;
	int late_from;				/* --late-replica: its first rank; else world */
	uint64_t slice;				/* a serving rank: one version's bytes */
	bool gathers;				/* --way gather or all: trainers to rank 0 */
	uint64_t stage_off[SYNC_MAX_RANKS];	/* trainer k's shard in rank 0's, from FLEET_DATA */
};

static inline bool fleet_trains(const struct fleet *f) { return f->rank < f->trainers; }

/* Whether we convert on the way (--serve-dtype fp8): a trainer that WRITEs runs, by push or as the gather's rank 0. */
static inline bool fleet_converts(const struct fleet *f, const struct sync_opts *opts)
{
	return fleet_trains(f) && opts->serve_dtype == DTYPE_FP8 &&
	       (sync_runs_way(opts, WAY_PUSH) || f->rank == 0);
}
static inline bool fleet_late(const struct fleet *f, int r) { return r >= f->late_from; }

/*
 * A trainer that WRITEs: where trainer K's shard lies in our buffer: our
 * own at FLEET_DATA; with GATHERED, on rank 0, every trainer's at its
 * stage_off after that.
 */
static inline const uint8_t *fleet_shard(const struct fleet *f, int k, bool gathered)
{
	return (const uint8_t *)f->buf.addr + FLEET_DATA + (gathered ? f->stage_off[k] : 0);
}

/*
 * A rank that waits: its signal word for trainer K, FLEET_SIGNAL(k); with
 * GATHERED (--way gather), on a serving rank, rank 0's gathered word instead.
 */
static inline const uint64_t *fleet_signal_word(const struct fleet *f, int k, bool gathered)
{
	uint64_t at = gathered && k == 0 && f->rank != 0 ? FLEET_GATHERED : FLEET_SIGNAL(k);

	return (const uint64_t *)((const char *)f->buf.addr + at);
}

/*
 * The other end of rank R's pull (--late-replica): for a rank of the late
 * replica, the rank of replica 0 with its TP rank, which it READs from; for
 * that rank, the late one; -1 for every other rank.
 */
static inline int fleet_pull_peer(const struct fleet *f, int r)
{
	if (f->late_from >= f->world || r < f->trainers)
		return -1;
	if (fleet_late(f, r))
		return f->trainers + (r - f->late_from);
	return r < f->trainers + f->tp ? f->late_from + (r - f->trainers) : -1;
}

/* Before fleet_open: every connection closed, so that fleet_close can run whatever happened. */
void fleet_init(struct fleet *f, const struct launch *l, const struct sync_opts *opts);

/* Bytes of rank R's buffer, words included, as the plan lays it out (and the gather, at rank 0). */
uint64_t fleet_bytes(const struct fleet *f, const struct model *m, const struct plan *p, int r);

/* Whether our QP to rank Q is one of --way gather's: between rank 0 and another trainer. */
static inline bool fleet_gather_pair(const struct fleet *f, int q)
{
	return f->gathers && fleet_trains(f) && q < f->trainers && q != f->rank &&
	       (f->rank == 0 || q == 0);
}

/*
 * Stages 1 to 3: the device and PD, the buffer (a serving rank's open to
 * remote WRITEs and atomics, and to READs where a late rank pulls from it;
 * a trainer's to nobody), and a CQ and an RC QP in INIT to every rank of
 * the other side, and between a late rank and the rank it pulls from.  0
 * or -1; either way the caller ends with fleet_close.
 */
int fleet_open(struct fleet *f, const struct cli_common *common, const struct sync_opts *opts,
	       const struct model *m, const struct plan *p);

/*
 * Meets the other ranks: the rendezvous (MINE's options checked), or
 * FAILURE instead; every QP through rank 0, each peer's buffer that this
 * rank will WRITE or READ checked against the plan before anything is
 * taken from it (its length exactly what the plan lays out, its address
 * not wrapping), each QP to RTS, every rank in RTS before the first WRITE.
 * 0, or -1 after every rank was told.
 */
int fleet_meet(struct fleet *f, struct ring_ctl *ctl, const struct launch *l, struct hello *mine,
	       const char *failure, const struct model *m, const struct plan *p,
	       const struct sync_opts *opts);

/* Releases stages 3, 2 and 1; returns how many releases failed. */
int fleet_close(struct fleet *f);

#endif
