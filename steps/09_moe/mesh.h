/* mesh.h: step 09's verbs objects: one device, one registered buffer, one RC QP (and CQ) per peer, N - 1 a rank. */
#ifndef RDMA_STEPS_MESH_H
#define RDMA_STEPS_MESH_H

#include "control.h"
#include "cq_qp_rts.h"
#include "launch.h"
#include "layout.h"
#include "moe_options.h"
#include "open_pd.h"
#include "reg_mr.h"
#include "rendezvous.h"

struct moe_mesh {
	struct rdma_dev dev;			/* stage 1 */
	struct rdma_buf buf;			/* stage 2: the layout's buffer, registered once */
	struct rdma_conn conn[MOE_MAX_RANKS];	/* stage 3: conn[p], our QP to rank p (not to us) */
	int rank, world;
};

/* Before mesh_open: every connection closed, so that mesh_close can run whatever happened. */
void mesh_init(struct moe_mesh *m, const struct launch *l);

/*
 * Stages 1 to 3, after the device's limits are checked against what this
 * rank asks (TO_ONE_PEER: the most bytes a phase sends one peer, which
 * a2a_post cuts into WRITEs): the device and PD, BYTES registered for local writes and
 * remote WRITEs (and remote atomics, for --signal fadd), and a CQ and an RC
 * QP in INIT per peer, its ACK timeout --qp-timeout's.  0 or -1; either way
 * the caller ends with mesh_close.
 */
int mesh_open(struct moe_mesh *m, const struct cli_common *common, size_t bytes,
	      size_t to_one_peer, const struct moe_opts *opts);

/*
 * Meets the other ranks: the runtime's rendezvous (MINE's options checked, our
 * QPs to the ring's neighbours in it), or FAILURE instead; then every QP
 * through rank 0 (pairs.h), each QP to RTS with RECVS zero-byte receives
 * posted on it, and every rank in RTS, its receives posted, before any
 * WRITE.  0, or -1 after every rank was told.
 */
int mesh_meet(struct moe_mesh *m, struct ring_ctl *ctl, const struct launch *l,
	      struct hello *mine, const char *failure, int recvs);

/* Releases stages 3, 2 and 1; returns how many releases failed. */
int mesh_close(struct moe_mesh *m);

#endif
