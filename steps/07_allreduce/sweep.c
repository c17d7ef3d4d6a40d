/* sweep.c: stage 7: nccl-tests' loop over sizes, its table (size, count, type, redop, root, time, algbw, busbw, #wrong), and our lines after it. */
#include "sweep.h"
#include "clock.h"
#include "report.h"

#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>

static double cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): 2(n-1)/n for all-reduce, (n-1)/n for the halves. */
static double bus_factor(enum collective coll, int n)
{
	double f = (double)(n - 1) / n;

	return coll == COLL_ALL_REDUCE ? 2 * f : f;
}

static int run_once(const struct sweep *s, enum transport transport, const struct ring_layout *l,
		    const struct plan *p)
{
	if (transport == TRANSPORT_TCP)
		return tcp_ring_run(s->tcp, l, p, s->ctl, s->timeout_s);
	return ring_run(s->ring, l, p, s->ctl, s->timeout_s);
}

static int run_times(const struct sweep *s, enum transport transport, const struct ring_layout *l,
		     const struct plan *p, int times)
{
	for (int i = 0; i < times; i++)
		if (run_once(s, transport, l, p))
			return -1;
	return 0;
}

static void print_header(const struct sweep *s, enum transport transport)
{
	printf("#\n# %s over %s: %d ranks, %s, K = %d slots of C = %zu bytes\n#\n",
	       collective_name(s->opts->coll), transport == TRANSPORT_TCP ? "TCP" : "RDMA (verbs)",
	       s->ctl->world, datatype_name(s->opts->dt), s->opts->slots, s->opts->slot_bytes);
	printf("#                                                       out-of-place\n");
	printf("#       size         count      type   redop    root     time   algbw   busbw #wrong\n");
	printf("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       \n");
	fflush(stdout);
}

static void print_row(const struct sweep *s, size_t count, double time_us, uint64_t wrong)
{
	size_t bytes = count * ELEM_SIZE;
	double algbw = time_us > 0 ? (double)bytes / 1e3 / time_us : 0;
	char wrong_text[24] = "N/A";

	if (s->opts->sizes.check)
		snprintf(wrong_text, sizeof(wrong_text), "%llu", (unsigned long long)wrong);
	printf("%12zu  %12zu  %8s  %6s  %6d  %7.1f  %6.3f  %6.3f  %5s\n", bytes, count,
	       datatype_name(s->opts->dt), "sum", -1, time_us, algbw,
	       algbw * bus_factor(s->opts->coll, s->ctl->world), wrong_text);
	fflush(stdout);
}

/* One size: warm-up runs, timed runs, the check run on fresh data, then every rank's figures to rank 0. */
static int run_size(const struct sweep *s, enum transport transport, size_t count,
		    struct sweep_result *out)
{
	struct ring_layout l = { .count = count, .world = s->ctl->world, .coll = s->opts->coll,
				 .dt = s->opts->dt, .piece_elems = s->opts->slot_bytes / ELEM_SIZE };
	void *data = s->ring->data.addr;
	struct rank_result mine = { 0 }, all[MAX_WORLD];
	struct plan p;
	double t0, c0, slowest = 0;
	uint64_t wrong = 0;
	int i = out->n_sizes, rc = -1;

	if (plan_build(&l, s->ctl->rank, &p)) {
		ctl_fail(s->ctl, s->ctl->rank, "no memory for its plan");
		return -1;
	}
	fill_input(&l, s->ctl->rank, data);
	/* Thousands of work requests: their lines would bury the table. */
	show_quiet(true);
	if (run_times(s, transport, &l, &p, s->opts->sizes.warmup))
		goto out_free_plan;
	t0 = now_us();
	c0 = cpu_us();
	if (run_times(s, transport, &l, &p, s->opts->sizes.iters))
		goto out_free_plan;
	mine.time_ns = (uint64_t)((now_us() - t0) * 1e3 / s->opts->sizes.iters);
	out->cpu_us[i] = (cpu_us() - c0) / s->opts->sizes.iters;
	mine.bytes = plan_bytes(&p);
	if (s->opts->sizes.check) {
		fill_input(&l, s->ctl->rank, data);
		if (run_once(s, transport, &l, &p))
			goto out_free_plan;
		mine.wrong = count_wrong(&l, s->ctl->rank, data);
		out->crc32 = result_crc32(data, count * ELEM_SIZE);
	}
	show_quiet(false);
	if (ctl_gather(s->ctl, &mine, all))
		goto out_free_plan;
	/* Rank 0 has every rank's figures; the others know their own. */
	if (s->ctl->rank != 0)
		all[0] = mine;
	for (int r = 0; r < (s->ctl->rank == 0 ? s->ctl->world : 1); r++) {
		if (all[r].time_ns / 1e3 > slowest)
			slowest = all[r].time_ns / 1e3;
		wrong += all[r].wrong;
		out->last[r] = all[r];
	}
	out->wrong += wrong;
	out->bytes[i] = count * ELEM_SIZE;
	out->time_us[i] = slowest;
	out->n_sizes++;
	if (s->ctl->rank == 0)
		print_row(s, count, slowest, wrong);
	rc = 0;
out_free_plan:
	show_quiet(false);
	plan_free(&p);
	return rc;
}

int run_sweep(const struct sweep *s, enum transport transport, struct sweep_result *out)
{
	size_t bytes = s->opts->sizes.minbytes;

	*out = (struct sweep_result){ 0 };
	if (s->ctl->rank == 0)
		print_header(s, transport);
	while (bytes <= s->opts->sizes.maxbytes && out->n_sizes < MAX_SIZES) {
		if (run_size(s, transport, bytes / ELEM_SIZE, out))
			return -1;
		bytes = nccl_next_size(&s->opts->sizes, bytes, ELEM_SIZE);
	}
	return 0;
}

void show_bytes_check(const struct sweep *s, const struct sweep_result *res)
{
	int n = s->ctl->world, last = res->n_sizes - 1;
	size_t bytes = res->bytes[last], count = bytes / ELEM_SIZE;
	double f = bus_factor(s->opts->coll, n);
	uint64_t lo = UINT64_MAX, hi = 0, total = 0;

	if (s->ctl->rank != 0 || last < 0)
		return;
	for (int r = 0; r < n; r++) {
		uint64_t b = res->last[r].bytes;

		lo = b < lo ? b : lo;
		hi = b > hi ? b : hi;
		total += b;
	}
	if (count % (size_t)n == 0)
		show("bytes posted", "each rank %llu B per %s of S = %zu B; %s x S = %.0f B: exact "
		     "(S is %d chunks of %zu whole elements)", (unsigned long long)hi,
		     collective_name(s->opts->coll), bytes,
		     s->opts->coll == COLL_ALL_REDUCE ? "2(N-1)/N" : "(N-1)/N", f * (double)bytes, n,
		     count / (size_t)n);
	else
		show("bytes posted", "%llu to %llu B per rank per %s of S = %zu B, against %s x S = "
		     "%.1f B: %zu elements do not split into %d equal chunks, so %s %zu %s one element "
		     "more; all ranks together posted %llu B = %s x S, exactly",
		     (unsigned long long)lo, (unsigned long long)hi, collective_name(s->opts->coll),
		     bytes, s->opts->coll == COLL_ALL_REDUCE ? "2(N-1)/N" : "(N-1)/N",
		     f * (double)bytes, count, n, count % (size_t)n == 1 ? "chunk" : "chunks 0 to",
		     count % (size_t)n - 1,
		     count % (size_t)n == 1 ? "has" : "have", (unsigned long long)total,
		     s->opts->coll == COLL_ALL_REDUCE ? "2(N-1)" : "(N-1)");
}

void show_result_check(const struct sweep *s, const struct sweep_result *res)
{
	if (!s->opts->sizes.check)
		show("check", "not run (-c 0)");
	else if (s->ctl->rank == 0)
		show("check", "%s: every rank's result checked element by element after a run on "
		     "fresh data: %llu wrong, over %d ranks and %d sizes", res->wrong ? "WRONG" : "right",
		     (unsigned long long)res->wrong, s->ctl->world, res->n_sizes);
	else
		show("check", "%llu elements wrong here (rank 0 prints every rank's total)",
		     (unsigned long long)res->wrong);
	if (s->opts->sizes.check && res->n_sizes > 0)
		show("result crc32", "0x%08x: zlib's CRC-32 of this rank's %zu-byte result at the "
		     "largest size, to match another implementation's to the bit", res->crc32,
		     res->bytes[res->n_sizes - 1]);
}

void show_ratio(const struct sweep_result *rdma, const struct sweep_result *tcp)
{
	for (int i = 0; i < rdma->n_sizes && i < tcp->n_sizes; i++) {
		char key[32];

		snprintf(key, sizeof(key), "rdma/tcp %zu B", rdma->bytes[i]);
		show(key, "time %.1f / %.1f us = %.2f; CPU of this rank per run: rdma %.1f us, "
		     "tcp %.1f us", rdma->time_us[i], tcp->time_us[i],
		     tcp->time_us[i] > 0 ? rdma->time_us[i] / tcp->time_us[i] : 0, rdma->cpu_us[i],
		     tcp->cpu_us[i]);
	}
}
