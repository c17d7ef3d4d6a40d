/* compare.c: step 10's three ways side by side (--way all): each way's bytes from the plan, the model (the slowest rank's bytes over the link rate), and a table a round. */
#include "compare.h"

#include <stdio.h>

void compare_init(struct sync_compare *c, const struct sync_opts *opts, const struct model *m,
		  const struct plan *p)
{
	uint64_t out[SYNC_MAX_RANKS] = { 0 }, in[SYNC_MAX_RANKS] = { 0 }, most = 0, gathered = 0;
	int busiest = p->trainers;

	*c = (struct sync_compare){ .opts = opts, .world = p->world, .trainers = p->trainers,
				    .rate_way = opts->link_mbs ? -1 : 0 };
	c->rate = opts->link_mbs * 1e6;
	for (int s = 0; s < p->world; s++)
		for (int d = 0; d < p->world; d++) {
			out[s] += p->bytes[s][d];
			in[d] += p->bytes[s][d];
			c->version += p->bytes[s][d];
		}
	for (int r = 0; r < p->world; r++) {
		most = out[r] > most ? out[r] : most;
		most = in[r] > most ? in[r] : most;
		if (in[r] > in[busiest])
			busiest = r;
	}
	/* Push and TCP move the plan's runs: each rank sends and receives its own at once. */
	for (int w = WAY_PUSH; w < SYNC_WAYS; w++)
		c->way[w] = (struct way_figures){ .slowest = most, .in = in[busiest],
						  .in_rank = busiest };
	/*
	 * The gather, in two phases one after the other on rank 0: every
	 * other trainer's shard in, then every replica's every byte out.
	 */
	for (int k = 1; k < p->trainers; k++)
		gathered += m->tr_bytes[k];
	c->way[WAY_GATHER].slowest = gathered + c->version;
	if (gathered > in[busiest]) {
		c->way[WAY_GATHER].in = gathered;
		c->way[WAY_GATHER].in_rank = 0;
	}
}

void compare_note(struct sync_compare *c, int w, int v, const struct rank_result *all)
{
	struct way_figures *f = &c->way[w];

	f->ran = true;
	f->time_ns = f->sent = f->wrong = 0;
	f->sender = 0;
	for (int r = 0; r < c->world; r++) {
		if (all[r].time_ns > f->time_ns)
			f->time_ns = all[r].time_ns;
		if (all[r].bytes > f->sent) {
			f->sent = all[r].bytes;
			f->sender = r;
		}
		f->wrong += all[r].wrong;
	}
	/*
	 * No rate given: each round's first way (push, when it runs) sets it,
	 * its slowest rank's bytes over its time.  Not round 1's for the whole
	 * run: under emulation round 1 pays for QEMU translating rxe's code the
	 * first time (several times a later round's push), and the machine's
	 * load moves from round to round; the ways of one round share both.
	 */
	if (v != c->round) {
		c->round = v;
		if (!c->opts->link_mbs && f->time_ns) {
			c->rate = (double)f->slowest / ((double)f->time_ns / 1e9);
			c->rate_way = w;
		}
	}
}

void compare_show(const struct sync_compare *c, int v)
{
	const struct way_figures *push = &c->way[WAY_PUSH];
	char rate[96];

	if (c->rate_way < 0)
		snprintf(rate, sizeof(rate), "%.1f MB/s, given (--link-rate)", c->rate / 1e6);
	else
		snprintf(rate, sizeof(rate), "%.1f MB/s, measured on this round's %s", c->rate / 1e6,
			 sync_way_names[c->rate_way]);
	printf("#\n# weight sync, round %d (version %d): %d trainers, %d serving ranks, %llu B a "
	       "version; model: the slowest rank's bytes over %s\n#\n", v, v, c->trainers,
	       c->world - c->trainers, (unsigned long long)c->version, rate);
	printf("#     way       time      model   time/   busiest sender    busiest receiver    "
	       "slowest    time/  #wrong\n");
	printf("#               (ms)       (ms)   model   rank         (B)   rank         (B)    "
	       "rank (B)    push         \n");
	for (int w = WAY_PUSH; w < SYNC_WAYS; w++) {
		const struct way_figures *f = &c->way[w];
		double model_ms = c->rate > 0 ? (double)f->slowest / c->rate * 1e3 : 0;
		double ms = (double)f->time_ns / 1e6;
		char ratio[16] = "    n/a";

		if (!f->ran)
			continue;
		if (push->ran && push->time_ns)
			snprintf(ratio, sizeof(ratio), "%7.2f", (double)f->time_ns / (double)push->time_ns);
		printf("  %8s %10.2f %10.2f %7.2f %6d %11llu %6d %11llu %11llu %s %7llu\n",
		       sync_way_names[w], ms, model_ms, model_ms > 0 ? ms / model_ms : 0, f->sender,
		       (unsigned long long)f->sent, f->in_rank, (unsigned long long)f->in,
		       (unsigned long long)f->slowest, ratio, (unsigned long long)f->wrong);
	}
	fflush(stdout);
}
