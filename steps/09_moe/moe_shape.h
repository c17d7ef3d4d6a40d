/* moe_shape.h: what step 09's data path keeps on a QP (the receives ahead, the pieces a chain of WRITEs is cut into): the sizes mesh.c makes the verbs objects for and checks against the device, and datapath.c keeps to. */
#ifndef RDMA_STEPS_MOE_SHAPE_H
#define RDMA_STEPS_MOE_SHAPE_H

#include <stddef.h>
#include <stdint.h>

/*
 * --signal imm: zero-byte receives posted on each QP before the go-ahead,
 * and topped up to as many before an exchange that finds fewer than
 * A2A_RECV_LOW left: a peer can be at most one exchange ahead of us, so at
 * most two of its signals (this exchange's and the next's) come before our
 * next look.
 */
#define A2A_RECV_BATCH 16
#define A2A_RECV_LOW 2

/* rxe reaches its bandwidth at 64 KiB WRITEs (ib_write_bw), as step 07's slots. */
#define WRITE_PIECE ((size_t)64 << 10)

/* The piece size that fits the chain and its signal in a send queue of DEPTH (2 or more: mesh.c). */
static inline size_t piece_for(size_t len, uint32_t depth)
{
	size_t fit = (len + depth - 2) / (depth - 1);

	return fit > WRITE_PIECE ? fit : WRITE_PIECE;
}

/* The longest WRITE a2a_post makes of LEN bytes on a send queue of DEPTH WRs (2 or more). */
static inline size_t a2a_longest_write(size_t len, uint32_t depth)
{
	size_t piece = piece_for(len, depth);

	return len < piece ? len : piece;
}

#endif
