/* perf_report.h: stage 5: the perftest-style report of latency percentiles and bandwidth. */
#ifndef RDMA_STEPS_PERF_REPORT_H
#define RDMA_STEPS_PERF_REPORT_H

#include <stddef.h>

#include "post_wr.h"

/* Microseconds on the monotonic clock. */
double now_us(void);

/*
 * Prints ITERS messages of SIZE bytes: the latency percentiles of LAT_US
 * (sorted in place) and the bandwidth over TOTAL_US.
 */
void show_perf_report(double *lat_us, int iters, size_t size, double total_us, enum wr_op op);

#endif
