/* phases.c: step 09's three phases on the mesh: layout (the counts, all to all), dispatch (the tokens), combine (the results back). */
#include "phases.h"
#include "clock.h"
#include "report.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* One block to every rank (our own copied, not posted), then every peer's signal come and ours done. */
struct block {
	size_t src;
	uint64_t dst;
	size_t len;
};

typedef struct block block_of(const struct moe_run *r, int peer);

static int exchange(struct moe_run *r, enum moe_phase ph, block_of *block)
{
	struct moe_mesh *m = r->mesh;
	double start = now_us();

	if (a2a_begin(&r->a2a, ph, &r->stats[ph]))
		return -1;
	for (int i = 1; i <= m->world; i++) {
		/* From the next rank on, so that rank 0 is not every rank's first target. */
		int p = (m->rank + i) % m->world;
		struct block b = block(r, p);

		if (p == m->rank)
			memcpy((char *)m->buf.addr + b.dst, (char *)m->buf.addr + b.src, b.len);
		else if (a2a_post(&r->a2a, p, b.src, b.dst, b.len, &r->stats[ph]))
			return -1;
	}
	if (a2a_wait_signal(&r->a2a) || a2a_wait_sent(&r->a2a))
		return -1;
	a2a_end(&r->a2a);
	r->us[ph] = now_us() - start;
	return 0;
}

/* Layout: our row of the matrix, to the same row of every peer's. */
static struct block count_row(const struct moe_run *r, int peer)
{
	size_t row = r->l->counts + 8 * (size_t)r->l->rank * r->l->world;

	(void)peer;
	return (struct block){ .src = row, .dst = row, .len = 8 * (size_t)r->l->world };
}

int run_layout(struct moe_run *r)
{
	const struct moe_layout *l = r->l;

	layout_count_row(l, r->routes, r->mesh->buf.addr);
	if (exchange(r, PHASE_LAYOUT, count_row))
		return -1;
	layout_show(l, layout_matrix(l, r->mesh->buf.addr));
	return 0;
}

/* Dispatch: our records for PEER, at the prefix sum of its column. */
static struct block tokens_for(const struct moe_run *r, int peer)
{
	const struct moe_layout *l = r->l;
	const uint64_t *mx = layout_matrix(l, r->mesh->buf.addr);

	return (struct block){
		.src = l->send + layout_send_index(l, mx, l->rank, peer) * l->rec,
		.dst = l->recv + layout_recv_index(l, mx, l->rank, peer) * l->rec,
		.len = mx[(size_t)l->rank * l->world + peer] * l->rec,
	};
}

int run_dispatch(struct moe_run *r)
{
	/* Every result of the last combine is here; the next need our dispatch signal. */
	if (r->fresh)
		memset((char *)r->mesh->buf.addr + r->l->comb_in, 0, r->l->bytes - r->l->comb_in);
	r->fresh = false;
	layout_pack(r->l, r->opts, r->routes, r->mesh->buf.addr);
	return exchange(r, PHASE_DISPATCH, tokens_for);
}

/* Combine: the results of PEER's tokens, back where PEER's own prefix sum put them when it sent. */
static struct block results_for(const struct moe_run *r, int peer)
{
	const struct moe_layout *l = r->l;
	const uint64_t *mx = layout_matrix(l, r->mesh->buf.addr);

	return (struct block){
		.src = l->comb_out + layout_recv_index(l, mx, peer, l->rank) * l->crec,
		.dst = l->comb_in + layout_send_index(l, mx, peer, l->rank) * l->crec,
		.len = mx[(size_t)peer * l->world + l->rank] * l->crec,
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
	if (experts_run(r->l, r->opts, r->mesh->buf.addr)) {
		ctl_fail(r->ctl, r->mesh->rank, "what it received does not match the layout");
		return -1;
	}
	/* Every peer's WRITEs of this dispatch are here; the next need our combine signal. */
	if (r->fresh)
		memset((char *)r->mesh->buf.addr + r->l->recv, 0, r->l->comb_out - r->l->recv);
	return exchange(r, PHASE_COMBINE, results_for);
}
