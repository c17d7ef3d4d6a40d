/* sync_shape.h: what step 10's data path keeps in flight (a chain's WRITEs, the chains a QP holds, a late rank's READs, the FP8 staging slots): the sizes fleet.c makes the verbs objects for and checks against the device, and datapath.c keeps to. */
#ifndef RDMA_STEPS_SYNC_SHAPE_H
#define RDMA_STEPS_SYNC_SHAPE_H

#include <stdint.h>

/*
 * A chain: at most SYNC_CHAIN WRITEs in one ibv_post_send, only its last WR
 * signalled; at most SYNC_CHAINS chains in flight on a QP, so that the send
 * queue (QUEUE_DEPTH) holds them and the last chain's FETCH_ADD.
 */
#define SYNC_CHAIN 16
#define SYNC_CHAINS 3
/*
 * A late rank's pull: the READs it offers to keep in flight (stage 3 agrees
 * the number with its source's max_qp_rd_atom), each at most SYNC_READ_MAX
 * bytes or the port's max_msg_sz, whichever is smaller.
 */
#define SYNC_READS 4
#define SYNC_READ_MAX ((uint64_t)256 * 1024)

/*
 * --serve-dtype fp8: a trainer converts each chain's runs into one staging
 * slot of SYNC_SLOT_BYTES (E4M3, a byte an element), cutting a run where a
 * slot ends, and WRITEs the chain from there.  SYNC_SLOTS slots, one MR
 * registered once at start, bound the chains in flight over all of the
 * trainer's QPs: while the WRITEs of some are on the wire, the next chain
 * is converted into a free one.  A slot is free again when its chain's
 * signalled completion comes.
 */
#define SYNC_SLOTS 4
#define SYNC_SLOT_BYTES ((uint64_t)64 * 1024)

#endif
