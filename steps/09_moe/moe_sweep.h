/* moe_sweep.h: step 09's table, as nccl-tests' alltoall prints it, and its sweep of sizes (nccl-tests' -b, --maxbytes, -f, -n, -w, -c: the runtime's nccl_options). */
#ifndef RDMA_STEPS_MOE_SWEEP_H
#define RDMA_STEPS_MOE_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include "phases.h"

/* Rank 0: the table's header, once before its rows. */
void table_header(const struct moe_run *r);

/*
 * Every rank's time, bytes and tokens wrong of both phases to rank 0, which
 * prints their rows; with PER_RANK, each rank's records received too.  0 or -1.
 */
int table_rows(struct moe_run *r, uint64_t wrong, bool per_rank);

/* The home rank's check of every token against the CPU reference; the number of tokens wrong. */
uint64_t check_tokens(const struct moe_run *r);

/*
 * A row per size, from -b to --maxbytes times -f: T = size / --hidden
 * tokens a rank, the gate drawn for them, a layout, -w untimed and -n timed
 * dispatch and combine pairs, then (-c 1) one pair on cleared buffers, every
 * token checked.  WRONG gets the tokens wrong over every row.  0 or -1.
 */
int sweep_sizes(struct moe_run *r, uint64_t *wrong);

#endif
