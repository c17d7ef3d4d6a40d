/* datapath.c: step 10's data path: a trainer's chains of WRITEs into every serving rank's version buffer, selectively signalled, each rank's last chain ending with a FETCH_ADD on its signal word (under --serve-dtype fp8 each chain converted into a staging slot first); a serving rank's wait on those words. */
#include "sync_datapath.h"
#include "completion.h"
#include "fault.h"
#include "fp8.h"
#include "post_wr.h"
#include "report.h"

#include <errno.h>
#include <time.h>

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

/* Our runs to serving rank D: push's own, or under --way gather (rank 0) every trainer's. */
static uint64_t runs_to(const struct sync_push *s, int d)
{
	uint64_t n = 0;

	if (!s->gathered)
		return s->p->count[s->f->rank][d];
	for (int k = 0; k < s->f->trainers; k++)
		n += s->p->count[k][d];
	return n;
}

/* Our I-th run to D, and where in our data its trainer's shard starts (*AT). */
static const struct run *run_to(const struct sync_push *s, int d, uint64_t i, uint64_t *at)
{
	int k = s->f->rank;

	if (s->gathered)
		for (k = 0; i >= s->p->count[k][d]; k++)
			i -= s->p->count[k][d];
	*at = s->gathered ? s->f->stage_off[k] : 0;
	return &s->p->runs[s->p->first[k][d] + i];
}

/* This thread's CPU time, in ns: what converting costs, apart from the time the WRITEs take. */
static uint64_t cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * --serve-dtype fp8: the chain's N pieces, each SGE already aimed at its
 * place in the staging slot, converted there from their BF16 at FROM[i]
 * (an element a byte: the SGE's length in elements), timed.
 */
static void convert_chain(struct sync_push *s, const struct ibv_sge *sge, const uint8_t *const *from,
			  int n)
{
	uint64_t t0 = cpu_ns();

	for (int i = 0; i < n; i++) {
		fp8_convert((const uint16_t *)from[i], (uint8_t *)(uintptr_t)sge[i].addr, sge[i].length);
		s->st.converted += (uint64_t)sge[i].length * MODEL_SRC_ELEM;
	}
	s->st.convert_ns += cpu_ns() - t0;
}

/*
 * One chain to serving rank D: up to SYNC_CHAIN of our runs to it, from
 * s->next[d], each one WRITE from our shard into its version buffer V % 2;
 * only the chain's last WR signalled (selective signalling: one completion
 * says the WRs before it on this QP are done too).  The chain that takes the
 * last run ends with the FETCH_ADD.  One ibv_post_send.  Under
 * --serve-dtype fp8 the chain takes a free staging slot (the caller saw
 * one) and holds at most a slot of FP8: a run that does not fit is cut,
 * the rest of it the next chain's first piece (s->off[d]); every piece is
 * converted into the slot, and WRITEn from there.  0 or -1.
 */
static int post_chain(struct sync_push *s, int d, int v)
{
	struct fleet *f = s->f;
	struct rdma_conn *c = &f->conn[d];
	uint64_t count = runs_to(s, d), at;
	uint64_t from = s->next[d], dst_base = c->remote.addr + FLEET_DATA +
			(uint64_t)(v % 2) * s->m->tp_bytes[plan_tp_rank(s->p, d)], bytes = 0;
	uint64_t room = SYNC_SLOT_BYTES, to = from;
	struct ibv_send_wr wr[SYNC_CHAIN + 1], *bad;
	struct ibv_sge sge[SYNC_CHAIN + 1];
	const uint8_t *src[SYNC_CHAIN];
	int n = 0, rc, slot = s->convert ? s->free_slot[--s->free_slots] : -1;
	uint8_t *stage = slot < 0 ? NULL : (uint8_t *)f->stage.addr + (uint64_t)slot * SYNC_SLOT_BYTES;
	bool first = !from && !s->off[d], last;

	for (; n < SYNC_CHAIN && s->next[d] < count && room; n++) {
		const struct run *r = run_to(s, d, s->next[d], &at);
		uint64_t len = r->dst_len - s->off[d];

		if (stage && len > room)
			len = room;
		/* Where the piece's elements start in our data: BF16, 2 B each, whatever lands. */
		src[n] = (const uint8_t *)f->buf.addr + FLEET_DATA + at + r->src_off +
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
		convert_chain(s, sge, src, n);
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
	if (stage) {
		s->slot_q[d][(s->slot_head[d] + s->in_flight[d]) % SYNC_CHAINS] = slot;
		if (SYNC_SLOTS - s->free_slots > s->slots_peak)
			s->slots_peak = SYNC_SLOTS - s->free_slots;
	}
	s->in_flight[d]++;
	s->st.posts++;
	s->st.writes += (uint64_t)(n - last);
	s->st.atomics += last;
	s->st.signalled++;
	s->st.bytes += bytes;
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
		if (s->convert && d >= s->f->trainers) {
			s->free_slot[s->free_slots++] = s->slot_q[d][s->slot_head[d]];
			s->slot_head[d] = (s->slot_head[d] + 1) % SYNC_CHAINS;
		}
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
	for (int d = f->trainers; d < f->world; d++) {
		s->next[d] = s->off[d] = 0;
		s->slot_wait[d] = false;
	}
	s->slots_peak = 0;
	for (;;) {
		bool moved = false, busy = false;

		/* The serving ranks in turn, from ours on, so that no rank is every trainer's first. */
		for (int i = 0; i < f->world - f->trainers; i++) {
			int d = f->trainers + (f->rank + i) % (f->world - f->trainers);
			uint64_t count = runs_to(s, d);

			/* The late replica joins after round 1: nothing of version 1 goes to it. */
			if (!count || (v == 1 && fleet_late(f, d)))
				continue;
			/* Converting: every slot in flight holds the next chain back, counted once. */
			if (s->next[d] < count && s->in_flight[d] < SYNC_CHAINS && s->convert &&
			    !s->free_slots) {
				s->st.slot_waits += !s->slot_wait[d];
				s->slot_wait[d] = true;
			} else if (s->next[d] < count && s->in_flight[d] < SYNC_CHAINS) {
				s->slot_wait[d] = false;
				if (post_chain(s, d, v))
					return -1;
				moved = true;
				if (!held && s->hold_ms && v == 2) {
					held = true;
					if (sync_hold(s))
						return -1;
				}
			}
			if (s->in_flight[d] && reap(s, d, "WRITEs to it", &moved))
				return -1;
			busy |= s->next[d] < count || s->in_flight[d];
		}
		if (!busy)
			break;
		if (moved) {
			progress_made(&pr);
			continue;
		}
		int rc = progress_idle(&pr);

		if (rc == PROGRESS_STALLED)
			ctl_fail(s->ctl, f->rank, "its WRITEs of version %d did not complete within %d s",
				 v, s->timeout_s);
		if (rc)
			return -1;
	}
	s->st.yields += pr.yields;
	s->st.naps += pr.naps;
	return 0;
}

/* Our signal word for trainer K, as its FETCH_ADDs left it: an acquire load, so the WRITEs before are seen. */
static uint64_t signal_word(const struct sync_push *s, int k)
{
	uint64_t at = s->gathered && k == 0 && s->f->rank != 0 ? FLEET_GATHERED : FLEET_SIGNAL(k);
	const uint64_t *w = (const uint64_t *)((char *)s->f->buf.addr + at);

	return __atomic_load_n(w, __ATOMIC_ACQUIRE);
}

/* Whether trainer K signals to us: its runs (push), or the gather's: rank 0 to a serving rank, the others to rank 0. */
static bool signals_us(const struct sync_push *s, int k)
{
	if (!s->gathered)
		return s->p->count[k][s->f->rank] > 0;
	return s->f->rank == 0 ? k != 0 : k == 0;
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

			if (!signals_us(s, k))
				continue;
			w = signal_word(s, k);
			if (w > want) {
				ctl_fail(s->ctl, k, "its signal word at rank %d reads %llu in round %d: "
					 "more FETCH_ADDs than the %llu versions pushed to it", f->rank,
					 (unsigned long long)w, v, (unsigned long long)want);
				return -1;
			}
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
			ctl_fail(s->ctl, silent, "its FETCH_ADD of version %d did not come to rank %d "
				 "within %d s: alive or not, it did not send it", v, f->rank,
				 s->timeout_s);
		if (rc)
			return -1;
	}
	s->st.yields += pr.yields;
	s->st.naps += pr.naps;
	return 0;
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
		if (moved) {
			progress_made(&pr);
			continue;
		}
		int rc = progress_idle(&pr);

		if (rc == PROGRESS_STALLED)
			ctl_fail(s->ctl, d, "rank %d's %s did not complete within %d s", s->f->rank,
				 what, s->timeout_s);
		if (rc)
			return -1;
	}
	s->st.yields += pr.yields;
	s->st.naps += pr.naps;
	return 0;
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
		s->st.posts++;
		s->st.signalled++;
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
	s->st.posts++;
	s->st.writes++;
	s->st.atomics++;
	s->st.signalled++;
	s->st.bytes += len;
	return drain(s, 0, "shard's WRITE to it");
}
