/* sync_report.c: step 10's data path, its bookkeeping and its lines: the waits' rule, a chain posted and counted, what a wait cost, whom a wait that ran out names, a hold for the tests. */
#include "sync_datapath.h"
#include "report.h"

#include <stdio.h>
#include <time.h>

void sync_push_init(struct sync_push *s, struct fleet *f, struct ring_ctl *ctl,
		    const struct plan *p, const struct model *m, int timeout_s)
{
	*s = (struct sync_push){ .f = f, .ctl = ctl, .p = p, .m = m, .timeout_s = timeout_s,
				 .rule = progress_rule_for(&f->dev, f->world),
				 .convert = f->stage.mr != NULL };
	if (s->convert)
		for (s->free_slots = 0; s->free_slots < SYNC_SLOTS; s->free_slots++)
			s->free_slot[s->free_slots] = SYNC_SLOTS - 1 - s->free_slots;
}

/* The first and the last chain to each serving rank are shown; the ones between are counted. */
void sync_show_chain(const struct sync_push *s, int d, uint64_t from, uint64_t to, int writes,
		     uint64_t bytes, bool first, bool last, int slot)
{
	char staged[96] = "";

	if (!first && !last)
		return;
	if (slot >= 0)
		snprintf(staged, sizeof(staged), ", converted to FP8 in staging slot %d and WRITEn "
			 "from there,", slot);
	if (last && s->gathered)
		show("ibv_post_send", "version %d to rank %d, gathered: runs %llu to %llu, %d WRITE%s "
		     "of %llu B into its buffer %d%s unsignalled, then FETCH_ADD +1 on its gathered "
		     "word, signalled: its last chain", s->version, d, (unsigned long long)from,
		     (unsigned long long)to, writes, writes == 1 ? "" : "s", (unsigned long long)bytes,
		     s->version % 2, slot >= 0 ? staged : ",");
	else if (last)
		show("ibv_post_send", "version %d to rank %d: runs %llu to %llu, %d WRITE%s of %llu B "
		     "into its buffer %d%s unsignalled, then FETCH_ADD +1 on its word for rank %d, "
		     "signalled: its last chain", s->version, d, (unsigned long long)from,
		     (unsigned long long)to, writes, writes == 1 ? "" : "s", (unsigned long long)bytes,
		     s->version % 2, slot >= 0 ? staged : ",", s->f->rank);
	else if (slot >= 0)
		show("ibv_post_send", "version %d to rank %d%s: runs 0 to %llu, %d WRITE%s of %llu B "
		     "into its buffer %d%s the last signalled: its first chain (at most %d slots in "
		     "flight, over all our QPs)", s->version, d, s->gathered ? ", gathered" : "",
		     (unsigned long long)to, writes, writes == 1 ? "" : "s", (unsigned long long)bytes,
		     s->version % 2, staged, SYNC_SLOTS);
	else
		show("ibv_post_send", "version %d to rank %d%s: runs 0 to %llu, %d WRITEs of %llu B into "
		     "its buffer %d, the last signalled: its first chain (at most %d in flight a QP)",
		     s->version, d, s->gathered ? ", gathered" : "", (unsigned long long)to, writes,
		     (unsigned long long)bytes, s->version % 2, SYNC_CHAINS);
}

void sync_show_convert(const struct sync_push *s, int v, const struct sync_stats *before,
		       double push_ms)
{
	double ms = (double)(s->st.convert_ns - before->convert_ns) / 1e6;
	uint64_t read = s->st.converted - before->converted;

	if (!s->convert)
		return;
	show("convert", "version %d: %llu B of BF16 to %llu B of FP8 E4M3, in %llu chains through %d "
	     "staging slots of %llu B: %.2f ms of CPU converting, %.1f%% of the push's %.1f ms; at "
	     "most %d slot%s in flight at once, %llu chains waited for a free one", v,
	     (unsigned long long)read, (unsigned long long)(read / MODEL_SRC_ELEM),
	     (unsigned long long)(s->st.posts - before->posts), SYNC_SLOTS,
	     (unsigned long long)SYNC_SLOT_BYTES, ms, push_ms > 0 ? 100 * ms / push_ms : 0, push_ms,
	     s->slots_peak, s->slots_peak == 1 ? "" : "s",
	     (unsigned long long)(s->st.slot_waits - before->slot_waits));
}

void sync_count_chain(struct sync_stats *st, uint64_t writes, uint64_t atomics, uint64_t bytes)
{
	st->posts++;
	st->writes += writes;
	st->atomics += atomics;
	st->signalled++;
	st->bytes += bytes;
}

int sync_waited(struct sync_push *s, const struct progress *pr, int rc)
{
	s->st.yields += pr->yields;
	s->st.naps += pr->naps;
	return rc;
}

void sync_push_stalled(const struct sync_push *s, int v)
{
	ctl_fail(s->ctl, s->f->rank, "its WRITEs of version %d did not complete within %d s", v,
		 s->timeout_s);
}

void sync_drain_stalled(const struct sync_push *s, int d, const char *what)
{
	ctl_fail(s->ctl, d, "rank %d's %s did not complete within %d s", s->f->rank, what,
		 s->timeout_s);
}

int sync_word_past(const struct sync_push *s, int k, uint64_t w, uint64_t want, int v)
{
	ctl_fail(s->ctl, k, "its signal word at rank %d reads %llu in round %d: more FETCH_ADDs "
		 "than the %llu versions pushed to it", s->f->rank, (unsigned long long)w, v,
		 (unsigned long long)want);
	return -1;
}

void sync_name_silent(const struct sync_push *s, int silent, int v)
{
	ctl_fail(s->ctl, silent, "its FETCH_ADD of version %d did not come to rank %d within %d s: "
		 "alive or not, it did not send it", v, s->f->rank, s->timeout_s);
}

/* A late rank's chain of READs, each shown: a pull of one slice is a few. */
void sync_show_reads(const struct sync_push *s, int src, uint64_t from, int reads, uint64_t bytes,
		     int depth)
{
	(void)s;
	show("ibv_post_send", "pull from rank %d: %d READ%s, %llu B in all, from its byte %llu, the "
	     "last signalled (at most %d in flight: the rd_atomic agreed with it)", src, reads,
	     reads == 1 ? "" : "s", (unsigned long long)bytes, (unsigned long long)from, depth);
}

int sync_hold_once(const struct sync_push *s, int v, bool *held)
{
	if (*held || !s->hold_ms || v != 2)
		return 0;
	*held = true;
	return sync_hold(s);
}

/* --hold: stops, looking at the control channel every 100 ms, so that a rank that fails meanwhile ends us too. */
int sync_hold(const struct sync_push *s)
{
	struct timespec t = { .tv_nsec = 100 * 1000000L };

	show_now("hold", "rank %d stops %d ms in round %d, mid-update (--hold), looking at the control "
		 "channel every 100 ms", s->f->rank, s->hold_ms, s->version);
	fflush(stdout);
	for (int ms = 0; ms < s->hold_ms; ms += 100) {
		if (ctl_check(s->ctl))
			return -1;
		nanosleep(&t, NULL);
	}
	return 0;
}
