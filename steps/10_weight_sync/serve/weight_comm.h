/* weight_comm.h: step 10 as a library: join the fleet once (the plan, the buffers registered and exchanged), then one call a version: a trainer pushes its shard, a serving rank waits for the version whole and flips to it (make serve's job calls it through ctypes). */
#ifndef RDMA_STEPS_WEIGHT_COMM_H
#define RDMA_STEPS_WEIGHT_COMM_H

#include <stdint.h>

struct weight_comm;

/* The library is built with -fvisibility=hidden: these calls are all it exports. */
#define WEIGHT_COMM_API __attribute__((visibility("default")))

/*
 * Joins the fleet as step 10 does: the rank, the world size and rank 0's
 * address from the launcher's variables (torchrun's RANK, WORLD_SIZE and
 * MASTER_ADDR, or Open MPI's, MPICH's, Slurm's), the rendezvous on TCP PORT
 * (every rank's options checked against rank 0's there), the model of
 * MODEL_DIM and LAYERS, the plan from the trainers' layout (TRAINERS ranks,
 * fully sharded) to the replicas' (TP ranks each, tensor-parallel), every
 * buffer registered once and every serving rank's address and rkey
 * exchanged once.  The weights travel in BF16, as they lie: no conversion.
 * DEVICE NULL takes the first RDMA device.  TIMEOUT_S bounds every wait.
 * VERBOSE prints step 10's teaching lines while joining; either way every
 * error prints.  Returns the handle, or NULL after weight_comm_error() says why.
 */
WEIGHT_COMM_API struct weight_comm *weight_comm_join(const char *device, int port, int timeout_s,
						     int trainers, int tp, int model_dim, int layers,
						     int verbose);

WEIGHT_COMM_API int weight_comm_rank(const struct weight_comm *wc);
WEIGHT_COMM_API int weight_comm_world(const struct weight_comm *wc);

/* Whether this rank trains (1) or serves (0); a serving rank's replica and its TP rank in it. */
WEIGHT_COMM_API int weight_comm_trains(const struct weight_comm *wc);
WEIGHT_COMM_API int weight_comm_replica(const struct weight_comm *wc);
WEIGHT_COMM_API int weight_comm_tp_rank(const struct weight_comm *wc);

/* The model's tensors, in the order the plan lays them out. */
WEIGHT_COMM_API int weight_comm_tensors(const struct weight_comm *wc);

/* How a replica splits a tensor over its ranks (step 10's model.h, enum model_split). */
enum weight_comm_split { WEIGHT_COMM_COLUMN = 0, WEIGHT_COMM_ROW = 1, WEIGHT_COMM_NONE = 2 };

/*
 * Tensor I: its NAME (as PyTorch names a Llama's parameters), its shape
 * [ROWS, COLS] and SPLIT; and where this rank keeps its part, at byte
 * OFFSET of weight_comm_buffer()'s memory.  A trainer's part is the flat
 * elements [FIRST, FIRST + COUNT) of the tensor (its FSDP shard); a serving
 * rank's is its TP slice, FIRST 0 and COUNT its elements: [ROWS / TP, COLS]
 * for a column split, [ROWS, COLS / TP] for a row split, the whole tensor
 * when replicated, row-major.  Every element 2 bytes, BF16.  0, or -1 for
 * an I out of range.
 */
WEIGHT_COMM_API int weight_comm_tensor(const struct weight_comm *wc, int i, const char **name,
				       uint64_t *rows, uint64_t *cols, int *split, uint64_t *offset,
				       uint64_t *first, uint64_t *count);

/*
 * This rank's weights, *BYTES long: a trainer's shard, which it fills
 * before each weight_comm_update; a serving rank's version buffer of the
 * version it serves (after an update, the new one: the pointer changes).
 */
WEIGHT_COMM_API void *weight_comm_buffer(const struct weight_comm *wc, uint64_t *bytes);

/*
 * Every rank, once a version, in step: the next version (1, 2, ...).  A
 * trainer WRITEs its shard's runs into every replica's spare buffer, then
 * a FETCH_ADD on each rank's word for it; a serving rank waits until every
 * word says the version is in, then, after every serving rank has it
 * whole, flips its version word to it.  Returns the version, or -1 after
 * weight_comm_error() says which rank failed and why; after a failure
 * every later call fails at once.
 */
WEIGHT_COMM_API int weight_comm_update(struct weight_comm *wc);

/* Releases everything; returns how many releases failed. */
WEIGHT_COMM_API int weight_comm_leave(struct weight_comm *wc);

/* The first error line since the last join, without "error: "; "" when there was none. */
WEIGHT_COMM_API const char *weight_comm_error(void);

#endif
