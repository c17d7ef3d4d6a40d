/* perf_report.c: stage 5: the perftest-style report of latency percentiles and bandwidth. */
#include "perf_report.h"
#include "report.h"

#include <stdlib.h>
#include <time.h>

double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void show_perf_report(double *lat_us, int iters, size_t size, double total_us, enum wr_op op)
{
	double sum = 0;
	int p99 = (iters * 99 + 99) / 100 - 1;

	qsort(lat_us, (size_t)iters, sizeof(*lat_us), compare_double);
	for (int i = 0; i < iters; i++)
		sum += lat_us[i];
	show("results", "%d x %s of %zu bytes", iters, op_name(op), size);
	show("latency (us)", "min %.2f, median %.2f, average %.2f, p99 %.2f%s", lat_us[0],
	     lat_us[iters / 2], sum / iters, lat_us[p99],
	     op == OP_SEND ? " (half the round trip)" : " (post to completion)");
	show("bandwidth", "%.2f MB/s, %.0f messages/s", (double)size * iters / total_us,
	     iters / (total_us / 1e6));
}
