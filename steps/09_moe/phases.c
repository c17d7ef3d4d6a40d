/* phases.c: step 09's three phases on the mesh: layout (the counts, all to all), dispatch (the tokens), combine (the results back). */
#include "phases.h"
#include "clock.h"
#include "report.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* What rank FROM sends rank TO in a phase: SRC in FROM's buffer, LEN bytes, to DST in TO's. */
struct block {
	size_t src;
	uint64_t dst;
	size_t len;
};

typedef struct block block_of(const struct moe_run *r, int from, int to);

/* Over verbs: one block to every rank (our own copied, not posted), then every peer's signal come and ours done. */
static int exchange_rdma(struct moe_run *r, enum moe_phase ph, block_of *block)
{
	struct moe_mesh *m = r->mesh;

	if (a2a_begin(&r->a2a, ph, &r->stats[ph]))
		return -1;
	for (int i = 1; i <= m->world; i++) {
		/* From the next rank on, so that rank 0 is not every rank's first target. */
		int p = (m->rank + i) % m->world;
		struct block b = block(r, m->rank, p);

		if (p == m->rank)
			memcpy((char *)m->buf.addr + b.dst, (char *)m->buf.addr + b.src, b.len);
		else if (a2a_post(&r->a2a, p, b.src, b.dst, b.len, &r->stats[ph]))
			return -1;
	}
	if (a2a_wait_signal(&r->a2a) || a2a_wait_sent(&r->a2a))
		return -1;
	a2a_end(&r->a2a);
	return 0;
}

/* Over TCP: the same blocks, each peer's sent and its block to us read, every socket at once. */
static int exchange_tcp(struct moe_run *r, enum moe_phase ph, block_of *block)
{
	struct moe_mesh *m = r->mesh;
	struct tcp_move moves[MOE_MAX_RANKS] = { 0 };
	struct tcp_stats *st = &r->tcp_stats[ph];

	*st = (struct tcp_stats){ 0 };
	for (int p = 0; p < m->world; p++) {
		struct block out = block(r, m->rank, p), in = block(r, p, m->rank);

		if (p == m->rank)
			memcpy((char *)m->buf.addr + out.dst, (char *)m->buf.addr + out.src, out.len);
		else
			moves[p] = (struct tcp_move){ .out = out.src, .out_len = out.len,
						      .in = in.dst, .in_len = in.len };
		if (p != m->rank)
			r->stats[ph].bytes += out.len;
	}
	if (tcp_a2a_exchange(r->tcp, moves, st))
		return -1;
	show("tcp", "%s: %llu B sent to our %d peers, %llu B came, in %llu send(), %llu recv() and "
	     "%llu poll() calls", a2a_phase_name(ph), (unsigned long long)st->bytes_out,
	     m->world - 1, (unsigned long long)st->bytes_in, (unsigned long long)st->sends,
	     (unsigned long long)st->recvs, (unsigned long long)st->polls);
	return 0;
}

static int exchange(struct moe_run *r, enum moe_phase ph, block_of *block)
{
	double start = now_us();
	int rc = r->transport == TRANSPORT_TCP ? exchange_tcp(r, ph, block) :
		 exchange_rdma(r, ph, block);

	r->us[ph] = now_us() - start;
	return rc;
}

/* Layout: FROM's row of the matrix, to the same row of every peer's. */
static struct block count_row(const struct moe_run *r, int from, int to)
{
	size_t row = r->l->counts + 8 * (size_t)from * r->l->world;

	(void)to;
	return (struct block){ .src = row, .dst = row, .len = 8 * (size_t)r->l->world };
}

/* --plant-count: this rank's count for the next rank becomes N, past the bound, for a test. */
static void plant_if_asked(const struct moe_run *r)
{
	const struct moe_layout *l = r->l;
	int to = layout_plant_target(l);

	if (r->opts->plant_rank != l->rank)
		return;
	layout_matrix(l, r->mesh->buf.addr)[(size_t)l->rank * l->world + to] = (uint64_t)r->opts->plant_count;
	show_now("plant", "rank %d WRITEs %d as its count for rank %d (--plant-count): every rank "
		 "must refuse it", l->rank, r->opts->plant_count, to);
}

int run_layout(struct moe_run *r)
{
	const struct moe_layout *l = r->l;
	char why[160];
	int bad;

	layout_arm_guards(l, r->mesh->buf.addr);
	layout_count_row(l, r->routes, r->mesh->buf.addr);
	plant_if_asked(r);
	if (exchange(r, PHASE_LAYOUT, count_row))
		return -1;
	if (layout_take_counts(l, r->mesh->buf.addr, r->counts, &bad, why, sizeof(why))) {
		ctl_fail(r->ctl, bad, "%s: refused before any offset was taken from it", why);
		return -1;
	}
	layout_show(l, r->counts);
	return 0;
}

/* Dispatch: FROM's records for TO, at the prefix sum of TO's column. */
static struct block tokens_for(const struct moe_run *r, int from, int to)
{
	const struct moe_layout *l = r->l;
	const uint64_t *mx = r->counts;

	return (struct block){
		.src = l->send + layout_send_index(l, mx, from, to) * l->rec,
		.dst = l->recv + layout_recv_index(l, mx, from, to) * l->rec,
		.len = mx[(size_t)from * l->world + to] * l->rec,
	};
}

int run_dispatch(struct moe_run *r)
{
	/* Every result of the last combine is here; the next need our dispatch signal. */
	if (r->fresh)
		memset((char *)r->mesh->buf.addr + r->l->comb_in, 0, r->l->most * r->l->crec);
	r->fresh = false;
	layout_pack(r->l, r->opts, r->counts, r->routes, r->mesh->buf.addr);
	return exchange(r, PHASE_DISPATCH, tokens_for);
}

/* Combine: FROM's results of TO's tokens, back where TO's own prefix sum put them when it sent. */
static struct block results_for(const struct moe_run *r, int from, int to)
{
	const struct moe_layout *l = r->l;
	const uint64_t *mx = r->counts;

	return (struct block){
		.src = l->comb_out + layout_recv_index(l, mx, to, from) * l->crec,
		.dst = l->comb_in + layout_send_index(l, mx, to, from) * l->crec,
		.len = mx[(size_t)to * l->world + from] * l->crec,
	};
}

/* --hold: this rank waits between dispatch and combine, for a test to kill it there. */
static void hold_if_asked(const struct moe_run *r)
{
	struct timespec t = { .tv_sec = r->opts->hold_ms / 1000,
			      .tv_nsec = r->opts->hold_ms % 1000 * 1000000L };

	if (r->opts->hold_rank != r->mesh->rank)
		return;
	show_now("hold", "rank %d waits %d ms before combine (--hold)", r->mesh->rank,
		 r->opts->hold_ms);
	fflush(stdout);
	nanosleep(&t, NULL);
}

int run_combine(struct moe_run *r)
{
	hold_if_asked(r);
	if (experts_run(r->l, r->opts, r->counts, r->mesh->buf.addr)) {
		ctl_fail(r->ctl, r->mesh->rank, "what it received does not match the layout");
		return -1;
	}
	/* Every peer's WRITEs of this dispatch are here; the next need our combine signal. */
	if (r->fresh)
		memset((char *)r->mesh->buf.addr + r->l->recv, 0, r->l->most * r->l->rec);
	return exchange(r, PHASE_COMBINE, results_for);
}
