/* sweep.h: stage 7: nccl-tests' loop over sizes, its table (size, count, type, redop, root, time, algbw, busbw, #wrong), and our lines after it. */
#ifndef RDMA_STEPS_SWEEP_H
#define RDMA_STEPS_SWEEP_H

#include "control.h"
#include "ring.h"
#include "ring_options.h"
#include "tcp_ring.h"

#define MAX_SIZES 40

/* What one transport's sweep measured, for the lines after the table and the RDMA/TCP ratio. */
struct sweep_result {
	int n_sizes;
	size_t bytes[MAX_SIZES];
	double time_us[MAX_SIZES];	/* the slowest rank's time per run */
	double cpu_us[MAX_SIZES];	/* this rank's CPU time (user + system) per run */
	uint64_t wrong;			/* elements wrong, every rank and size together */
	uint32_t crc32;			/* this rank's result at the largest size (if checked) */
	struct rank_result last[MAX_WORLD];	/* each rank's figures at the largest size */
};

struct sweep {
	struct rdma_ring *ring;
	struct tcp_ring *tcp;
	struct ring_ctl *ctl;
	const struct ring_opts *opts;
	int timeout_s;
};

/* Runs every size over TRANSPORT (rdma or tcp) and prints the table on rank 0; 0 or -1. */
int run_sweep(const struct sweep *s, enum transport transport, struct sweep_result *out);

/* Rank 0: the bytes each rank posted at the largest size, against 2(N-1)/N x S (or (N-1)/N for a half). */
void show_bytes_check(const struct sweep *s, const struct sweep_result *res);

/* Every rank: whether every rank's result was right, as rank 0 gathered it. */
void show_result_check(const struct sweep *s, const struct sweep_result *res);

/* Rank 0: RDMA's time over TCP's at each size, and each side's CPU time. */
void show_ratio(const struct sweep_result *rdma, const struct sweep_result *tcp);

#endif
