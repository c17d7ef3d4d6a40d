/* compare.h: step 10's three ways side by side (--way all): each way's bytes from the plan, the model (the slowest rank's bytes over the link rate), and a table a round. */
#ifndef RDMA_STEPS_COMPARE_H
#define RDMA_STEPS_COMPARE_H

#include <stdbool.h>
#include <stdint.h>

#include "ctl_msg.h"
#include "model.h"
#include "plan.h"
#include "sync_options.h"

/* One way, as the plan lays it out and as one round ran it (rank 0's). */
struct way_figures {
	/* From the plan, before anything runs. */
	uint64_t slowest;	/* the slowest rank's bytes: the model's numerator */
	uint64_t in;		/* the busiest receiver's bytes */
	int in_rank;
	/* This round. */
	bool ran;
	uint64_t time_ns;	/* the slowest rank's time, from the way's start barrier */
	uint64_t sent;		/* the busiest sender's bytes, as its data path counted them */
	int sender;
	uint64_t wrong;		/* bytes wrong in every serving rank's check of it */
};

struct sync_compare {
	const struct sync_opts *opts;
	int world, trainers;
	uint64_t version;	/* the bytes of one version, every replica */
	struct way_figures way[SYNC_WAYS];
	double rate;		/* B/s: --link-rate, or measured on this round's first way */
	int rate_way;		/* the way this round's rate was measured on; -1: given */
	int round;		/* the round noted last */
};

/* Each way's bytes from the plan and the model: before the first round. */
void compare_init(struct sync_compare *c, const struct sync_opts *opts, const struct model *m,
		  const struct plan *p);

/* Rank 0, after way W's last barrier of round V: every rank's ALL, its time and bytes. */
void compare_note(struct sync_compare *c, int w, int v, const struct rank_result *all);

/* Rank 0, after round V: the table, one row a way, in nccl-tests' shape. */
void compare_show(const struct sync_compare *c, int v);

#endif
