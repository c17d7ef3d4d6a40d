/* perf_report.h: stage 5: the perftest-style reports: latency percentiles and bandwidth, or a pipeline's bandwidth. */
#ifndef RDMA_STEPS_PERF_REPORT_H
#define RDMA_STEPS_PERF_REPORT_H

#include <stddef.h>

#include "post_wr.h"

/*
 * Prints ITERS messages of SIZE bytes: the latency percentiles of LAT_US
 * (sorted in place) and the bandwidth over TOTAL_US.
 */
void show_perf_report(double *lat_us, int iters, size_t size, double total_us, enum wr_op op);

/* Prints a pipelined run: ITERS work requests, DEPTH in flight, COMPLETIONS taken, bandwidth over TOTAL_US. */
void show_pipeline_report(int iters, size_t size, double total_us, enum wr_op op, int depth,
			  long completions);

#endif
