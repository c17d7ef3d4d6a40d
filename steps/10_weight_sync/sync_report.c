/* sync_report.c: step 10's data path, its lines: the waits' rule, a chain posted, a hold for the tests. */
#include "sync_datapath.h"
#include "report.h"

#include <stdio.h>
#include <time.h>

void sync_push_init(struct sync_push *s, struct fleet *f, struct ring_ctl *ctl,
		    const struct plan *p, const struct model *m, int timeout_s)
{
	*s = (struct sync_push){ .f = f, .ctl = ctl, .p = p, .m = m, .timeout_s = timeout_s,
				 .rule = progress_rule_for(&f->dev, f->world) };
}

/* The first and the last chain to each serving rank are shown; the ones between are counted. */
void sync_show_chain(const struct sync_push *s, int d, uint64_t from, int writes, uint64_t bytes,
		     bool last)
{
	if (from && !last)
		return;
	if (last)
		show("ibv_post_send", "version %d to rank %d: runs %llu to %llu, %d WRITE%s of %llu B "
		     "into its buffer %d, unsignalled, then FETCH_ADD +1 on its word for rank %d, "
		     "signalled: its last chain", s->version, d, (unsigned long long)from,
		     (unsigned long long)(from + (uint64_t)writes - 1), writes, writes == 1 ? "" : "s",
		     (unsigned long long)bytes, s->version % 2, s->f->rank);
	else
		show("ibv_post_send", "version %d to rank %d: runs 0 to %d, %d WRITEs of %llu B into "
		     "its buffer %d, the last signalled: its first chain (at most %d in flight a QP)",
		     s->version, d, writes - 1, writes, (unsigned long long)bytes, s->version % 2,
		     SYNC_CHAINS);
}

void sync_hold(const struct sync_push *s)
{
	struct timespec t = { .tv_sec = s->hold_ms / 1000, .tv_nsec = s->hold_ms % 1000 * 1000000L };

	show_now("hold", "rank %d stops %d ms in round %d, mid-update (--hold)", s->f->rank,
		 s->hold_ms, s->version);
	fflush(stdout);
	nanosleep(&t, NULL);
}
