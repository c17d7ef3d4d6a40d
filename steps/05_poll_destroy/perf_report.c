/* perf_report.c: stage 5: the perftest-style reports: latency percentiles and bandwidth, or a pipeline's bandwidth. */
#include "perf_report.h"
#include "report.h"

#include <stdlib.h>

static void show_bandwidth(size_t size, int iters, double total_us)
{
	show("bandwidth", "%.2f MB/s, %.0f messages/s", (double)size * iters / total_us,
	     iters / (total_us / 1e6));
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
	show_bandwidth(size, iters, total_us);
}

void show_pipeline_report(int iters, size_t size, double total_us, enum wr_op op, int depth,
			  long completions)
{
	show("results", "%d x %s of %zu bytes, up to %d in flight", iters, op_name(op), size, depth);
	show("signalling", "%ld completions for %d work requests: each signalled one also retired "
	     "the unsignalled ones before it", completions, iters);
	show_bandwidth(size, iters, total_us);
}
