/* sync_stage.c: step 10's staging slots under --serve-dtype fp8: a free slot for each chain, its pieces converted into it (timed), the slot kept until the chain's signalled completion, and how deep the slots went. */
#include "sync_datapath.h"
#include "fp8.h"

#include <time.h>

void sync_stage_begin(struct sync_push *s)
{
	for (int d = s->f->trainers; d < s->f->world; d++)
		s->slot_wait[d] = false;
	s->slots_peak = 0;
}

bool sync_stage_ready(struct sync_push *s, int d)
{
	if (!s->convert || s->free_slots) {
		s->slot_wait[d] = false;
		return true;
	}
	/* Every slot in flight: D's next chain waits, counted once however long. */
	s->st.slot_waits += !s->slot_wait[d];
	s->slot_wait[d] = true;
	return false;
}

int sync_stage_take(struct sync_push *s)
{
	return s->convert ? s->free_slot[--s->free_slots] : -1;
}

/* This thread's CPU time, in ns: what converting costs, apart from the time the WRITEs take. */
static uint64_t cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void sync_stage_convert(struct sync_push *s, const struct ibv_sge *sge, const uint8_t *const *from,
			int n)
{
	uint64_t t0 = cpu_ns();

	for (int i = 0; i < n; i++) {
		fp8_convert((const uint16_t *)from[i], (uint8_t *)(uintptr_t)sge[i].addr, sge[i].length);
		s->st.converted += (uint64_t)sge[i].length * MODEL_SRC_ELEM;
	}
	s->st.convert_ns += cpu_ns() - t0;
}

void sync_stage_keep(struct sync_push *s, int d, int slot)
{
	if (slot < 0)
		return;
	s->slot_q[d][(s->slot_head[d] + s->in_flight[d]) % SYNC_CHAINS] = slot;
	if (SYNC_SLOTS - s->free_slots > s->slots_peak)
		s->slots_peak = SYNC_SLOTS - s->free_slots;
}

void sync_stage_free(struct sync_push *s, int d)
{
	/* A gather's shard to rank 0 went from our data, through no slot. */
	if (!s->convert || d < s->f->trainers)
		return;
	s->free_slot[s->free_slots++] = s->slot_q[d][s->slot_head[d]];
	s->slot_head[d] = (s->slot_head[d] + 1) % SYNC_CHAINS;
}
