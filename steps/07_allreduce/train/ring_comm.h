/* ring_comm.h: step 07 as a library: join the job's ring once, sum buffers in place across the ranks, leave (make train's DDP hook calls it through ctypes). */
#ifndef RDMA_STEPS_RING_COMM_H
#define RDMA_STEPS_RING_COMM_H

#include <stddef.h>

struct ring_comm;

/* The library is built with -fvisibility=hidden: these six calls are all it exports. */
#define RING_COMM_API __attribute__((visibility("default")))

/* The element types ring_comm_allreduce sums: step 07's --datatype float and int32. */
enum ring_comm_dtype { RING_COMM_FLOAT32 = 0, RING_COMM_INT32 = 1 };

/*
 * Joins the job as step 07 does: the rank, the world size and rank 0's
 * address from the launcher's variables (torchrun's RANK, WORLD_SIZE and
 * MASTER_ADDR, or Open MPI's, MPICH's, Slurm's), the rendezvous on TCP
 * PORT, the QPs to both neighbours brought to RTS, the slots granted.
 * DEVICE NULL takes the first RDMA device.  STAGING_BYTES is the buffer
 * registered once, that every call copies into and out of; a larger call
 * runs in pieces of that size.  TIMEOUT_S bounds every wait (a neighbour
 * that stops sending, the rendezvous).  VERBOSE prints step 07's teaching
 * lines while joining; either way every error prints.  Installs no signal
 * handler.  Returns the handle, or NULL after ring_comm_error() says why.
 */
RING_COMM_API struct ring_comm *ring_comm_join(const char *device, int port, int timeout_s,
				 size_t staging_bytes, int verbose);

RING_COMM_API int ring_comm_rank(const struct ring_comm *rc);
RING_COMM_API int ring_comm_world(const struct ring_comm *rc);

/*
 * Sums COUNT elements of BUF (DTYPE) across every rank, in place, with
 * step 07's ring.  Every rank must call it with the same COUNT and DTYPE,
 * in the same order.  0, or -1 after ring_comm_error() says which rank
 * failed and why; after a failure every later call fails at once.
 */
RING_COMM_API int ring_comm_allreduce(struct ring_comm *rc, void *buf, size_t count, int dtype);

/* Waits for the last credits, meets every rank, releases everything; returns how many releases failed. */
RING_COMM_API int ring_comm_leave(struct ring_comm *rc);

/* The first error line since the last join, without "error: "; "" when there was none. */
RING_COMM_API const char *ring_comm_error(void);

#endif
