/* sync_datapath.h: step 10's data path (datapath.c): a trainer's push of one version, in chains of WRITEs with selective signalling and a FETCH_ADD per serving rank, and a serving rank's wait for its signal words; its staging slots in sync_stage.c, its bookkeeping and lines in sync_report.c. */
#ifndef RDMA_STEPS_SYNC_DATAPATH_H
#define RDMA_STEPS_SYNC_DATAPATH_H

#include <stdint.h>

#include "control.h"
#include "fleet.h"
#include "plan.h"
#include "progress.h"
#include "sync_shape.h"

/* What a push or a wait did, for the output. */
struct sync_stats {
	uint64_t posts, writes, signalled, atomics, bytes;
	uint64_t yields, naps;
	/* --serve-dtype fp8: what the conversion cost. */
	uint64_t converted;	/* bytes of BF16 read from our data and converted */
	uint64_t convert_ns;	/* this thread's CPU time in fp8_convert */
	uint64_t slot_waits;	/* chains that found every slot in flight, and waited */
};

struct sync_push {
	struct fleet *f;
	struct ring_ctl *ctl;
	const struct plan *p;
	const struct model *m;
	int timeout_s;
	enum progress_rule rule;	/* how the waits give the CPU away, decided once */
	int version;			/* the version under way, from 1 */
	uint64_t next[SYNC_MAX_RANKS];	/* per serving rank: our next run to it, from 0 */
	int in_flight[SYNC_MAX_RANKS];	/* per serving rank: our chains not yet completed */
	int hold_ms;			/* --hold: stop this long after the first chain */
	/*
	 * --serve-dtype fp8, a trainer: the staging slots (the fleet's stage
	 * MR).  Per serving rank, the bytes of run next[d] already WRITEn (a
	 * run longer than a slot's room is cut), the slots of its chains in
	 * flight, oldest first (RC completes a QP's WRs in order), and whether
	 * its next chain is waiting for a slot; the free slots, a stack, and
	 * how deep the pipeline went this version.
	 */
	bool convert;
	uint64_t off[SYNC_MAX_RANKS];
	int slot_q[SYNC_MAX_RANKS][SYNC_CHAINS], slot_head[SYNC_MAX_RANKS];
	bool slot_wait[SYNC_MAX_RANKS];
	int free_slot[SYNC_SLOTS], free_slots;
	int slots_peak;			/* this version's most slots in flight at once */
	int missed;			/* a serving rank: versions never pushed to it (a late rank: 1) */
	/*
	 * --way gather.  A trainer: whether it is rank 0's turn, WRITEing
	 * every trainer's runs from the whole model it gathered.  A rank
	 * that waits: whether it waits for the gather's words (rank 0: each
	 * other trainer's; a serving rank: rank 0's gathered word), not push's.
	 */
	bool gathered;
	struct sync_stats st;
};

/* Before the first round: decides, and says, how the waits give the CPU away. */
void sync_push_init(struct sync_push *s, struct fleet *f, struct ring_ctl *ctl,
		    const struct plan *p, const struct model *m, int timeout_s);

/*
 * A trainer, version V: every run of ours to every serving rank (but the
 * late replica's in round 1), WRITEn from
 * our shard into the rank's version buffer V % 2, in chains, the serving
 * ranks taken in turn; after a rank's last run, on the same QP, a FETCH_ADD
 * +1 on its signal word for us.  Under --serve-dtype fp8 each chain is
 * converted into a free staging slot first and WRITEn from there.  Returns
 * once every chain has completed: 0, or -1 after ctl_fail.
 */
int sync_push(struct sync_push *s, int v);

/*
 * --way gather, a trainer but rank 0, version V: its whole shard, one WRITE
 * into rank 0's buffer after the shards of the trainers before it, then a
 * FETCH_ADD +1 on rank 0's word for it, on the same QP.  Returns once both
 * completed: 0, or -1 after ctl_fail.
 */
int sync_gather_send(struct sync_push *s, int v);

/*
 * A serving rank, version V: waits until the signal word of every trainer
 * with runs to us reads V, less the versions never pushed to us (an
 * acquire load each); a word past that is refused,
 * naming its trainer.  With s->gathered, the gather's words instead: on
 * rank 0, every other trainer's (its shard is in); on a serving rank, the
 * one rank 0 FETCH_ADDs after its WRITEs of the whole model.  Between looks, the runtime's progress loop; -t
 * without a new signal names the first silent trainer.  0, or -1 after
 * ctl_fail.
 */
int sync_wait_whole(struct sync_push *s, int v);

/*
 * A late rank: LEN bytes at FROM in rank SRC's buffer into ours at TO, by
 * RDMA READ, each at most MAX bytes, in chains of at most the agreed
 * rd_atomic READs (what our QP keeps in flight and SRC's serves), only a
 * chain's last READ signalled, the next chain posted once it completed.
 * Adds the READs to *READS.  0, or -1 after ctl_fail.
 */
int sync_pull(struct sync_push *s, int src, uint64_t from, uint64_t to, uint64_t len, uint64_t max,
	      uint64_t *reads);

/*
 * sync_stage.c: --serve-dtype fp8's staging slots.  A version begins with
 * no chain waiting for one; whether D's next chain may go (not converting,
 * or a slot free; one that finds none is counted once); the free slot it
 * takes (-1 when not converting); its N pieces converted into the slot,
 * each SGE already aimed at its place there, from their BF16 at FROM[i]
 * (an element a byte: the SGE's length in elements), timed; the slot kept
 * behind D's chains in flight once posted, how deep the slots went
 * counted; and at each completion of D's, its oldest slot free again.
 */
void sync_stage_begin(struct sync_push *s);
bool sync_stage_ready(struct sync_push *s, int d);
int sync_stage_take(struct sync_push *s);
void sync_stage_convert(struct sync_push *s, const struct ibv_sge *sge, const uint8_t *const *from,
			int n);
void sync_stage_keep(struct sync_push *s, int d, int slot);
void sync_stage_free(struct sync_push *s, int d);

/* sync_report.c: a chain posted: one post, its one signalled WR, its WRITES, ATOMICS and BYTES. */
void sync_count_chain(struct sync_stats *st, uint64_t writes, uint64_t atomics, uint64_t bytes);

/* sync_report.c: a wait ends with RC: its sched_yield() and nanosleep() calls go to the figures; returns RC. */
int sync_waited(struct sync_push *s, const struct progress *pr, int rc);

/*
 * sync_report.c: a wait past -t names who stalled it: this rank, whose
 * WRITEs of version V did not complete (push); rank D, to which WHAT did
 * not complete (a drain); trainer SILENT, whose FETCH_ADD of version V did
 * not come.  And a signal word W past the WANT versions pushed, refused
 * naming its trainer K: returns -1.
 */
void sync_push_stalled(const struct sync_push *s, int v);
void sync_drain_stalled(const struct sync_push *s, int d, const char *what);
void sync_name_silent(const struct sync_push *s, int silent, int v);
int sync_word_past(const struct sync_push *s, int k, uint64_t w, uint64_t want, int v);

/* datapath.c's lines: in sync_report.c. */
void sync_show_chain(const struct sync_push *s, int d, uint64_t from, uint64_t to, int writes,
		     uint64_t bytes, bool first, bool last, int slot);
/* --serve-dtype fp8: version V's conversion, from BEFORE's counts on, against the push's PUSH_MS. */
void sync_show_convert(const struct sync_push *s, int v, const struct sync_stats *before,
		       double push_ms);
void sync_show_reads(const struct sync_push *s, int src, uint64_t from, int reads, uint64_t bytes,
		     int depth);
/* --hold: 0, or -1 once another rank's failure, seen while holding, is printed. */
int sync_hold(const struct sync_push *s);
/* --hold on a trainer: sync_hold once (*HELD), in round V 2; else 0. */
int sync_hold_once(const struct sync_push *s, int v, bool *held);

#endif
