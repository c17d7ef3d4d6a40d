/* plan.c: step 10's transfer plan, computed once from both layouts: every run of bytes from a trainer's shard into a serving rank's slice, merged, summed per pair and checked to cover every byte once. */
#include "plan.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct building {
	struct plan *p;
	int dst;
	uint64_t last[SYNC_MAX_RANKS];	/* per source, its last run to DST, + 1 (0: none yet) */
};

static int append(struct building *b, int src, uint64_t src_off, uint64_t dst_off,
		  uint64_t src_len, uint64_t dst_len)
{
	struct plan *p = b->p;
	struct run *last = b->last[src] ? &p->runs[b->last[src] - 1] : NULL;

	p->pieces++;
	/* Contiguous at both ends: one WRITE carries both. */
	if (last && last->src_off + last->src_len == src_off &&
	    last->dst_off + last->dst_len == dst_off) {
		last->src_len += src_len;
		last->dst_len += dst_len;
		return 0;
	}
	if (p->n == p->cap) {
		uint64_t cap = p->cap ? 2 * p->cap : 1024;
		struct run *more = realloc(p->runs, cap * sizeof(*more));

		if (!more) {
			report_error("no memory for the plan's %llu runs", (unsigned long long)cap);
			return -1;
		}
		p->runs = more;
		p->cap = cap;
	}
	p->runs[p->n++] = (struct run){ .src = src, .dst = b->dst, .src_off = src_off,
					.dst_off = dst_off, .src_len = src_len, .dst_len = dst_len };
	b->last[src] = p->n;
	return 0;
}

/* One range of a serving rank's slice, cut where the trainers' shards of its tensor meet. */
static int cut_range(const struct model *m, int t, const struct model_range *g, void *arg)
{
	struct building *b = arg;
	uint64_t c = m->shard[t], end = g->first + g->count;

	for (uint64_t k = g->first / c; k * c < end; k++) {
		uint64_t lo = g->first > k * c ? g->first : k * c;
		uint64_t hi = end < (k + 1) * c ? end : (k + 1) * c;

		if (append(b, (int)k, m->tr_base[t][k] + (lo - k * c) * MODEL_SRC_ELEM,
			   g->dst + (lo - g->first) * m->dst_elem, (hi - lo) * MODEL_SRC_ELEM,
			   (hi - lo) * m->dst_elem))
			return -1;
	}
	return 0;
}

static int by_pair(const void *a, const void *b)
{
	const struct run *x = a, *y = b;

	if (x->src != y->src)
		return x->src - y->src;
	if (x->dst != y->dst)
		return x->dst - y->dst;
	return x->dst_off < y->dst_off ? -1 : x->dst_off > y->dst_off;
}

int plan_build(struct plan *p, const struct model *m, int world)
{
	*p = (struct plan){ .world = world, .trainers = m->trainers, .tp = m->tp };
	for (int d = m->trainers; d < world; d++) {
		struct building b = { .p = p, .dst = d };

		for (int t = 0; t < m->tensors; t++)
			if (model_ranges(m, t, plan_tp_rank(p, d), cut_range, &b))
				return -1;
	}
	qsort(p->runs, p->n, sizeof(*p->runs), by_pair);
	for (uint64_t i = 0; i < p->n; i++) {
		const struct run *r = &p->runs[i];

		if (!p->count[r->src][r->dst]++) {
			p->first[r->src][r->dst] = i;
			p->sources[r->dst]++;
		}
		p->bytes[r->src][r->dst] += r->dst_len;
		p->read[r->src][r->dst] += r->src_len;
	}
	return 0;
}

uint64_t plan_runs_to(const struct plan *p, int src, bool every, int d)
{
	uint64_t n = 0;

	if (!every)
		return p->count[src][d];
	for (int k = 0; k < p->trainers; k++)
		n += p->count[k][d];
	return n;
}

const struct run *plan_run_to(const struct plan *p, int src, bool every, int d, uint64_t i)
{
	int k = src;

	if (every)
		for (k = 0; i >= p->count[k][d]; k++)
			i -= p->count[k][d];
	return &p->runs[p->first[k][d] + i];
}

bool plan_signals(const struct plan *p, int k, int r, bool gather)
{
	if (!gather)
		return p->count[k][r] > 0;
	return r == 0 ? k != 0 : k == 0;
}

int plan_check(const struct plan *p, const struct model *m)
{
	for (int d = p->trainers; d < p->world; d++) {
		uint64_t n = 0, at = 0, want = m->tp_bytes[plan_tp_rank(p, d)];
		struct run *mine = calloc(p->n ? p->n : 1, sizeof(*mine));

		if (!mine) {
			report_error("no memory to check the plan");
			return -1;
		}
		for (uint64_t i = 0; i < p->n; i++)
			if (p->runs[i].dst == d)
				mine[n++] = p->runs[i];
		/* By DST_OFF alone: then each run must start where the last ended. */
		for (uint64_t i = 0; i < n; i++)
			mine[i].src = mine[i].dst = 0;
		qsort(mine, n, sizeof(*mine), by_pair);
		for (uint64_t i = 0; i < n; i++) {
			if (mine[i].dst_off != at) {
				report_error("plan: rank %d's slice %s at byte %llu (the next run starts at "
					     "%llu)", d, mine[i].dst_off > at ? "has a gap" :
					     "is written twice", (unsigned long long)at,
					     (unsigned long long)mine[i].dst_off);
				free(mine);
				return -1;
			}
			at += mine[i].dst_len;
		}
		free(mine);
		if (at != want) {
			report_error("plan: rank %d's runs cover %llu B of its %llu B slice", d,
				     (unsigned long long)at, (unsigned long long)want);
			return -1;
		}
	}
	for (uint64_t i = 0; i < p->n; i++) {
		const struct run *r = &p->runs[i];

		if (r->src_off + r->src_len > m->tr_bytes[r->src]) {
			report_error("plan: a run from rank %d reads past its %llu B shard", r->src,
				     (unsigned long long)m->tr_bytes[r->src]);
			return -1;
		}
		if (r->src_len / MODEL_SRC_ELEM != r->dst_len / m->dst_elem) {
			report_error("plan: a run from rank %d to rank %d reads %llu B and writes %llu B: "
				     "not the same elements", r->src, r->dst,
				     (unsigned long long)r->src_len, (unsigned long long)r->dst_len);
			return -1;
		}
	}
	return 0;
}

void plan_show(const struct plan *p, const struct model *m)
{
	uint64_t out[SYNC_MAX_RANKS] = { 0 }, in[SYNC_MAX_RANKS] = { 0 }, version = 0, read = 0;
	uint64_t reads[SYNC_MAX_RANKS] = { 0 };
	int sender = 0, receiver = p->trainers, slowest = 0, pairs = 0;
	char line[1024];
	size_t at = 0;

	for (int s = 0; s < p->world; s++)
		for (int d = 0; d < p->world; d++) {
			if (!p->count[s][d])
				continue;
			out[s] += p->bytes[s][d];
			in[d] += p->bytes[s][d];
			version += p->bytes[s][d];
			reads[s] += p->read[s][d];
			read += p->read[s][d];
			pairs++;
			if (at < sizeof(line))
				at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%d>%d %llu B "
						       "(%llu runs)", at ? ", " : "", s, d,
						       (unsigned long long)p->bytes[s][d],
						       (unsigned long long)p->count[s][d]);
		}
	for (int r = 0; r < p->world; r++) {
		uint64_t most = out[r] > in[r] ? out[r] : in[r];

		if (out[r] > out[sender])
			sender = r;
		if (in[r] > in[receiver])
			receiver = r;
		if (most > (out[slowest] > in[slowest] ? out[slowest] : in[slowest]))
			slowest = r;
	}
	show("plan", "computed once from both layouts: %llu pieces (a serving range cut where two "
	     "shards meet) merged into %llu runs (contiguous at both ends: one WRITE each%s)",
	     (unsigned long long)p->pieces, (unsigned long long)p->n, m->dtype == DTYPE_FP8 ?
	     ", or one for each staging slot it reaches into, converted to FP8" : "");
	show("plan pairs", "B from rank s to rank d (s>d): %s", line);
	show("plan summary", "%d pairs, %llu runs, %llu B a version (%d replica%s, each the model's "
	     "%llu B and its norms again on each of its %d ranks); busiest sender rank %d %llu B, "
	     "busiest receiver rank %d %llu B; the slowest rank moves %llu B",
	     pairs, (unsigned long long)p->n, (unsigned long long)version,
	     (p->world - p->trainers) / p->tp, (p->world - p->trainers) / p->tp == 1 ? "" : "s",
	     (unsigned long long)model_dst_bytes(m), p->tp,
	     sender, (unsigned long long)out[sender], receiver, (unsigned long long)in[receiver],
	     (unsigned long long)(out[slowest] > in[slowest] ? out[slowest] : in[slowest]));
	if (m->dtype == DTYPE_FP8)
		show("plan sides", "each run read as BF16 from its trainer's shard, 2 B an element, and "
		     "written as FP8 E4M3, 1 B: %llu B read a version (busiest sender rank %d %llu B) "
		     "for the %llu B that land, the bytes above", (unsigned long long)read, sender,
		     (unsigned long long)reads[sender], (unsigned long long)version);
}

void plan_free(struct plan *p)
{
	free(p->runs);
	p->runs = NULL;
}
