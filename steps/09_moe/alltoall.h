/* alltoall.h: step 09's one-sided all-to-all: a chain of WRITEs into a peer's buffer, then a FETCH_ADD on its signal word; the waits. */
#ifndef RDMA_STEPS_ALLTOALL_H
#define RDMA_STEPS_ALLTOALL_H

#include <stddef.h>
#include <stdint.h>

#include "control.h"
#include "layout.h"
#include "mesh.h"

/* What a phase posted, for the output: posts (doorbells, a write() each on rxe), WRs, bytes. */
struct a2a_stats {
	uint64_t posts, writes, atomics, bytes;
};

/*
 * To PEER: LEN bytes from our buffer at SRC into its buffer at DST, in
 * WRITEs of at most 64 KiB (larger when the send queue would not hold them),
 * unsignalled, then a FETCH_ADD of 1 on its signal word of phase PH,
 * signalled: one chain, one ibv_post_send.  LEN 0 posts the FETCH_ADD
 * alone, so that every peer is counted.  0, or -1 after ctl_fail.
 */
int a2a_post(struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l, int peer,
	     size_t src, uint64_t dst, size_t len, enum moe_phase ph, struct a2a_stats *st);

/* Each peer's FETCH_ADD completion (and any WRITE's that failed before it); 0, or -1 after ctl_fail. */
int a2a_wait_sent(struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l,
		  int timeout_s);

/*
 * Waits, up to TIMEOUT_S, until our signal word of phase PH reads N - 1:
 * every peer's FETCH_ADD, and so every WRITE before it, has landed.  Reads
 * our own memory; yields the CPU between looks.  0, or -1 after ctl_fail.
 */
int a2a_wait_signal(struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l,
		    enum moe_phase ph, int timeout_s);

#endif
