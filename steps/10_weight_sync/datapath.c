/* datapath.c: step 10's data path: a trainer's chains of WRITEs into every serving rank's version buffer, selectively signalled, each rank's last chain ending with a FETCH_ADD on its signal word (under --serve-dtype fp8 each chain converted into a staging slot first); a serving rank's wait on those words. */
#include "sync_datapath.h"
#include "completion.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"

#include <errno.h>

/*
 * The FETCH_ADD after our last run to D, on the same QP: RC executes one
 * QP's requests in order, and the responder places a WRITE's data before it
 * executes a later atomic, so once D's word for us reads V, every byte we
 * WRITE for version V is in D's memory.  No IBV_SEND_FENCE: a fence waits
 * for earlier READs and atomics, and nothing here reads.  Its old value
 * lands in our word FLEET_OLD(D).
 */
static void signal_fadd(const struct sync_push *s, const struct rdma_conn *c, int d,
			struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	*sge = (struct ibv_sge){ .addr = (uintptr_t)s->f->buf.addr + FLEET_OLD(d), .length = 8,
				 .lkey = s->f->buf.mr->lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = WR_ID_SEND,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = c->remote.addr + (s->gathered ? FLEET_GATHERED :
								 FLEET_SIGNAL(s->f->rank)),
			       .compare_add = 1, .rkey = c->remote.rkey },
	};
}

/*
 * One chain to serving rank D: up to SYNC_CHAIN of our runs to it (the
 * plan's: push's own, or under --way gather on rank 0 every trainer's), from
 * s->next[d], each one WRITE from our shard into its version buffer V % 2;
 * only the chain's last WR signalled (selective signalling: one completion
 * says the WRs before it on this QP are done too).  The chain that takes the
 * last run ends with the FETCH_ADD.  One ibv_post_send.  Under
 * --serve-dtype fp8 the chain takes a free staging slot (the caller saw
 * one; sync_stage.c keeps them) and holds at most a slot of FP8: a run that
 * does not fit is cut, the rest of it the next chain's first piece
 * (s->off[d]); every piece is converted into the slot, and WRITEn from
 * there.  0 or -1.
 */
static int post_chain(struct sync_push *s, int d, int v)
{
	struct fleet *f = s->f;
	struct rdma_conn *c = &f->conn[d];
	uint64_t count = plan_runs_to(s->p, f->rank, s->gathered, d);
	uint64_t from = s->next[d], dst_base = c->remote.addr + FLEET_DATA +
			(uint64_t)(v % 2) * s->m->tp_bytes[plan_tp_rank(s->p, d)], bytes = 0;
	uint64_t room = SYNC_SLOT_BYTES, to = from;
	struct ibv_send_wr wr[SYNC_CHAIN + 1], *bad;
	struct ibv_sge sge[SYNC_CHAIN + 1];
	const uint8_t *src[SYNC_CHAIN];
	int n = 0, rc, slot = sync_stage_take(s);
	uint8_t *stage = slot < 0 ? NULL : (uint8_t *)f->stage.addr + (uint64_t)slot * SYNC_SLOT_BYTES;
	bool first = !from && !s->off[d], last;

	for (; n < SYNC_CHAIN && s->next[d] < count && room; n++) {
		const struct run *r = plan_run_to(s->p, f->rank, s->gathered, d, s->next[d]);
		uint64_t len = r->dst_len - s->off[d];

		if (stage && len > room)
			len = room;
		/* Where the piece's elements start in its trainer's shard: BF16, 2 B each, whatever lands. */
		src[n] = fleet_shard(f, r->src, s->gathered) + r->src_off +
			 s->off[d] / s->m->dst_elem * MODEL_SRC_ELEM;
		sge[n] = stage ? (struct ibv_sge){ .addr = (uintptr_t)stage + SYNC_SLOT_BYTES - room,
						   .length = (uint32_t)len, .lkey = f->stage.mr->lkey } :
				 (struct ibv_sge){ .addr = (uintptr_t)src[n], .length = (uint32_t)len,
						   .lkey = f->buf.mr->lkey };
		wr[n] = (struct ibv_send_wr){
			.wr_id = WR_ID_SEND,
			.sg_list = &sge[n],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.next = &wr[n + 1],
			.wr.rdma = { .remote_addr = dst_base + r->dst_off + s->off[d],
				     .rkey = c->remote.rkey },
		};
		bytes += len;
		if (stage)
			room -= len;
		to = s->next[d];
		s->off[d] += len;
		if (s->off[d] == r->dst_len) {
			s->next[d]++;
			s->off[d] = 0;
		}
	}
	/* Every piece into the slot before the post: the NIC reads it from there. */
	if (stage)
		sync_stage_convert(s, sge, src, n);
	last = s->next[d] == count;
	if (last) {
		signal_fadd(s, c, d, &wr[n], &sge[n]);
		n++;
	} else {
		wr[n - 1].send_flags = IBV_SEND_SIGNALED;
	}
	wr[n - 1].next = NULL;
	rc = fault_at("post_send") ? errno : ibv_post_send(c->qp, wr, &bad);
	if (rc) {
		report_verb_error(last ? "ibv_post_send (WRITEs, then FETCH_ADD)" :
				  "ibv_post_send (a chain of WRITEs)", rc);
		ctl_fail(s->ctl, f->rank, "it could not post its version %d to rank %d", v, d);
		return -1;
	}
	/* The slot is the chain's until its signalled completion: the oldest of D's in flight then. */
	sync_stage_keep(s, d, slot);
	s->in_flight[d]++;
	sync_count_chain(&s->st, n - last, last, bytes);
	sync_show_chain(s, d, from, to, n - last, bytes, first, last, slot);
	return 0;
}

/*
 * Takes what our CQ to D holds now: each completion is one chain done, and
 * every WR before it; WHAT names the WRs in the error.  0 or -1.
 */
static int reap(struct sync_push *s, int d, const char *what, bool *moved)
{
	struct ibv_wc wc[SYNC_CHAINS];
	int n = ibv_poll_cq(s->f->conn[d].cq, SYNC_CHAINS, wc);

	if (n < 0) {
		ctl_fail(s->ctl, s->f->rank, "it could not poll its CQ to rank %d", d);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		/* Stage 4's check: a failed status (or the fault point "completion") is named there. */
		if (check_good_completion(&wc[i])) {
			ctl_fail_neighbour(s->ctl, d, "our %s did not complete (see the line above): "
					   "its QP is gone or unreachable", what);
			return -1;
		}
		/* Converting: the chain's slot, the oldest of D's, is free again. */
		sync_stage_free(s, d);
		s->in_flight[d]--;
		*moved = true;
	}
	return 0;
}

int sync_push(struct sync_push *s, int v)
{
	struct fleet *f = s->f;
	struct progress pr;
	bool held = false;

	progress_start(&pr, s->ctl, s->rule, s->timeout_s);
	for (int d = f->trainers; d < f->world; d++)
		s->next[d] = s->off[d] = 0;
	sync_stage_begin(s);
	for (;;) {
		bool moved = false, busy = false;

		/* The serving ranks in turn, from ours on, so that no rank is every trainer's first. */
		for (int i = 0; i < f->world - f->trainers; i++) {
			int d = f->trainers + (f->rank + i) % (f->world - f->trainers);
			uint64_t count = plan_runs_to(s->p, f->rank, s->gathered, d);

			/* The late replica joins after round 1: nothing of version 1 goes to it. */
			if (!count || (v == 1 && fleet_late(f, d)))
				continue;
			/* Converting, a chain needs a free slot too: every slot in flight holds it back. */
			if (s->next[d] < count && s->in_flight[d] < SYNC_CHAINS && sync_stage_ready(s, d)) {
				if (post_chain(s, d, v))
					return -1;
				moved = true;
				/* --hold (tests): once, in round 2, after the first chain. */
				if (sync_hold_once(s, v, &held))
					return -1;
			}
			if (s->in_flight[d] && reap(s, d, "WRITEs to it", &moved))
				return -1;
			busy |= s->next[d] < count || s->in_flight[d];
		}
		if (!busy)
			break;
		int rc = progress_after(&pr, moved);

		if (rc == PROGRESS_STALLED)
			sync_push_stalled(s, v);
		if (rc)
			return -1;
	}
	return sync_waited(s, &pr, 0);
}

int sync_wait_whole(struct sync_push *s, int v)
{
	struct fleet *f = s->f;
	struct progress pr;
	int came = 0, before = 0;
	uint64_t want = (uint64_t)(v - s->missed);

	progress_start(&pr, s->ctl, s->rule, s->timeout_s);
	for (;;) {
		int silent = -1;

		came = 0;
		for (int k = 0; k < f->trainers; k++) {
			uint64_t w;

			if (!plan_signals(s->p, k, f->rank, s->gathered))
				continue;
			/* Our word for K, as its FETCH_ADDs left it: an acquire load, so the WRITEs before are seen. */
			w = __atomic_load_n(fleet_signal_word(f, k, s->gathered), __ATOMIC_ACQUIRE);
			if (w > want)
				return sync_word_past(s, k, w, want, v);
			if (w == want)
				came++;
			else if (silent < 0)
				silent = k;
		}
		if (silent < 0)
			break;
		if (came > before) {
			before = came;
			progress_made(&pr);
		}
		int rc = progress_idle(&pr);

		if (rc == PROGRESS_STALLED)
			sync_name_silent(s, silent, v);
		if (rc)
			return -1;
	}
	return sync_waited(s, &pr, 0);
}

/* Until every chain posted to D has completed, within the progress loop's bound; WHAT names them. 0 or -1. */
static int drain(struct sync_push *s, int d, const char *what)
{
	struct progress pr;

	progress_start(&pr, s->ctl, s->rule, s->timeout_s);
	while (s->in_flight[d]) {
		bool moved = false;

		if (reap(s, d, what, &moved))
			return -1;
		int rc = progress_after(&pr, moved);

		if (rc == PROGRESS_STALLED)
			sync_drain_stalled(s, d, what);
		if (rc)
			return -1;
	}
	return sync_waited(s, &pr, 0);
}

int sync_pull(struct sync_push *s, int src, uint64_t from, uint64_t to, uint64_t len, uint64_t max,
	      uint64_t *reads)
{
	struct fleet *f = s->f;
	struct rdma_conn *c = &f->conn[src];
	/* The agreed rd_atomic: at most that many READs of ours in flight on this QP. */
	int depth = c->max_rd_atomic < SYNC_READS ? c->max_rd_atomic : SYNC_READS;
	uint64_t done = 0;

	while (done < len) {
		struct ibv_send_wr wr[SYNC_READS], *bad;
		struct ibv_sge sge[SYNC_READS];
		uint64_t first = done;
		int n = 0, rc;

		for (; n < depth && done < len; n++) {
			uint64_t part = len - done < max ? len - done : max;

			sge[n] = (struct ibv_sge){ .addr = (uintptr_t)f->buf.addr + to + done,
						   .length = (uint32_t)part, .lkey = f->buf.mr->lkey };
			wr[n] = (struct ibv_send_wr){
				.wr_id = WR_ID_SEND,
				.sg_list = &sge[n],
				.num_sge = 1,
				.opcode = IBV_WR_RDMA_READ,
				.next = &wr[n + 1],
				.wr.rdma = { .remote_addr = c->remote.addr + from + done,
					     .rkey = c->remote.rkey },
			};
			done += part;
		}
		wr[n - 1].next = NULL;
		wr[n - 1].send_flags = IBV_SEND_SIGNALED;
		rc = fault_at("post_send") ? errno : ibv_post_send(c->qp, wr, &bad);
		if (rc) {
			report_verb_error("ibv_post_send (a chain of READs)", rc);
			ctl_fail(s->ctl, f->rank, "it could not post its READs from rank %d", src);
			return -1;
		}
		s->in_flight[src]++;
		sync_count_chain(&s->st, 0, 0, 0);	/* its READs: *READS */
		*reads += (uint64_t)n;
		sync_show_reads(s, src, from + first, n, done - first, depth);
		if (drain(s, src, "READs from it"))
			return -1;
	}
	return 0;
}

int sync_gather_send(struct sync_push *s, int v)
{
	struct fleet *f = s->f;
	struct rdma_conn *c = &f->conn[0];
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2];
	uint64_t len = s->m->tr_bytes[f->rank];
	int rc;

	/* Our shard whole, one WRITE, unsignalled; then the FETCH_ADD on rank 0's word for us. */
	sge[0] = (struct ibv_sge){ .addr = (uintptr_t)f->buf.addr + FLEET_DATA, .length = (uint32_t)len,
				   .lkey = f->buf.mr->lkey };
	wr[0] = (struct ibv_send_wr){
		.wr_id = WR_ID_SEND,
		.sg_list = &sge[0],
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.next = &wr[1],
		.wr.rdma = { .remote_addr = c->remote.addr + FLEET_DATA + f->stage_off[f->rank],
			     .rkey = c->remote.rkey },
	};
	signal_fadd(s, c, 0, &wr[1], &sge[1]);
	rc = fault_at("post_send") ? errno : ibv_post_send(c->qp, wr, &bad);
	if (rc) {
		report_verb_error("ibv_post_send (our shard to rank 0, then FETCH_ADD)", rc);
		ctl_fail(s->ctl, f->rank, "it could not post its version %d to rank 0", v);
		return -1;
	}
	s->in_flight[0]++;
	sync_count_chain(&s->st, 1, 1, len);
	return drain(s, 0, "shard's WRITE to it");
}
