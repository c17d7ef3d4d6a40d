/* phases.h: step 09's three phases on the mesh: layout (the counts, all to all), dispatch (the tokens), combine (the results back). */
#ifndef RDMA_STEPS_PHASES_H
#define RDMA_STEPS_PHASES_H

#include <stdbool.h>
#include <stdint.h>

#include "moe_datapath.h"
#include "control.h"
#include "experts.h"
#include "gate.h"
#include "layout.h"
#include "mesh.h"
#include "tcp_alltoall.h"

/* Rank 0's table, kept for the RDMA/TCP ratio: each row's size and its phases' times. */
#define MOE_MAX_ROWS 40
struct moe_times {
	int rows;
	uint64_t bytes[MOE_MAX_ROWS];
	double us[MOE_MAX_ROWS][PHASES];
};

/* One run's context: the mesh, the control channel, the layout, the options, our routes. */
struct moe_run {
	struct moe_mesh *mesh;
	struct tcp_a2a *tcp;
	enum transport transport;	/* this run's: TRANSPORT_RDMA or TRANSPORT_TCP */
	struct ring_ctl *ctl;
	const struct moe_layout *l;
	const struct moe_opts *opts;
	struct route *routes;
	uint64_t counts[MOE_MAX_RANKS * MOE_MAX_RANKS];	/* the matrix as checked: every offset's source */
	bool fresh;		/* the next pair lands in cleared buffers, for the check */
	struct a2a a2a;
	struct a2a_stats stats[PHASES];
	struct tcp_stats tcp_stats[PHASES];
	double us[PHASES];	/* from the first post to every peer's signal come and ours done */
	struct moe_times *times;	/* rank 0: the rows printed, when kept */
};

/*
 * Our row of counts WRITTEN into every peer's matrix, theirs into ours; then
 * the matrix copied into r->counts and checked (layout_take_counts), so that
 * every prefix sum is known and no count can take us past a part.  0 or -1.
 */
int run_layout(struct moe_run *r);

/*
 * Each token once to each rank that holds one of its experts, at the prefix
 * sums.  With r->fresh, first clears where the results come back: we have
 * taken every result of the last combine, and no peer can WRITE the next
 * before our signal of this dispatch.  0 or -1.
 */
int run_dispatch(struct moe_run *r);

/*
 * Our experts on what came, and each result WRITTEN back to its token's home
 * rank.  With r->fresh, first clears where the next dispatch lands: every
 * peer's WRITE of this one is here, and none can WRITE the next before our
 * signal of this combine.  0 or -1.
 */
int run_combine(struct moe_run *r);

#endif
