/* datapath.c: step 07's data path: each piece WRITTEN with immediate into the next rank's slot, each slot's credit SENT back, and the completions that move the ring on. */
#include "ring.h"
#include "completion.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Completions taken in one ibv_poll_cq call. */
#define POLL_BATCH 16

/* A zero-byte SEND whose immediate value names the slot just freed. */
static int post_credit(struct rdma_ring *r, int slot)
{
	struct ibv_send_wr wr = {
		.wr_id = WR_ID_SEND,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl((uint32_t)slot),
	}, *bad;
	int rc = fault_at("post_send") ? errno : ibv_post_send(r->from_prev.qp, &wr, &bad);

	if (rc) {
		report_verb_error("ibv_post_send (credit)", rc);
		return -1;
	}
	r->granted[slot] = true;
	r->credit_sends_in_flight++;
	show("ibv_post_send", "credit for slot %d: a SEND with immediate %d and no bytes, to the "
	     "previous rank", slot, slot);
	return 0;
}

int ring_grant_slots(struct rdma_ring *r, struct ring_ctl *ctl)
{
	for (int s = 0; s < r->k && r->world > 1; s++)
		if (post_credit(r, s)) {
			ctl_fail(ctl, r->rank, "it could not send a credit (ibv_post_send failed)");
			return -1;
		}
	return 0;
}

/* Writes PIECE into the next rank's slot named by the oldest credit. */
static int post_piece(struct rdma_ring *r, const struct piece *pc)
{
	int slot = r->credits[r->credit_head];
	size_t off = pc->first * ELEM_SIZE, bytes = pc->elems * ELEM_SIZE;
	struct ibv_sge sge = {
		.addr = (uintptr_t)r->data.addr + off,
		.length = (uint32_t)bytes,
		.lkey = r->data.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WR_ID_SEND,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(ring_imm(pc->step, slot, r->sent_msgs)),
		.wr.rdma = {
			.remote_addr = r->to_next.remote.addr + (uint64_t)slot * r->c,
			.rkey = r->to_next.remote.rkey,
		},
	}, *bad;
	int rc = fault_at("post_send") ? errno : ibv_post_send(r->to_next.qp, &wr, &bad);

	if (rc) {
		report_verb_error("ibv_post_send (RDMA WRITE with immediate)", rc);
		return -1;
	}
	show("ibv_post_send", "step %d: RDMA WRITE with immediate 0x%08x of %zu bytes of chunk %d "
	     "into the next rank's slot %d (remote addr 0x%llx)", pc->step,
	     ring_imm(pc->step, slot, r->sent_msgs), bytes, pc->chunk, slot,
	     (unsigned long long)wr.wr.rdma.remote_addr);
	r->credit_head = (r->credit_head + 1) % r->k;
	r->credit_count--;
	r->writes_in_flight++;
	r->sent_msgs++;
	return 0;
}

/* A failed completion on a QP names the rank at its other end, unless another rank failed first. */
static int completion_failed(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc,
			     bool to_next)
{
	static const char *const what[2][2] = {
		{ "a receive for its WRITEs", "our credit SEND to it" },
		{ "a receive for its credits", "our RDMA WRITE to it" },
	};

	ctl_fail_neighbour(ctl, to_next ? ring_next(r) : ring_prev(r), "%s completed with status %s "
			   "(%d): its QP is gone or unreachable", what[to_next][wc->wr_id == WR_ID_SEND],
			   ibv_wc_status_str(wc->status), wc->status);
	return -1;
}

/* The next rank freed a slot: keep its credit, and post the receive for the next credit. */
static int take_credit(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc)
{
	uint32_t slot = ntohl(wc->imm_data);

	if (slot >= (uint32_t)r->k || r->credit_count == r->k) {
		ctl_fail(ctl, ring_next(r), "it sent a credit for slot %u, which it had not been "
			 "written (K is %d, %d credits held)", slot, r->k, r->credit_count);
		return -1;
	}
	r->credits[(r->credit_head + r->credit_count) % r->k] = (int)slot;
	r->credit_count++;
	if (post_receives(&r->to_next, &r->data, 0, 1)) {
		ctl_fail(ctl, r->rank, "it could not post a receive for credits");
		return -1;
	}
	return 0;
}

static int on_next_completion(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc)
{
	if (check_good_completion(wc))
		return completion_failed(r, ctl, wc, true);
	if (wc->opcode == IBV_WC_RECV)
		return take_credit(r, ctl, wc);
	r->writes_in_flight--;
	return 0;
}

/* Checks that a WRITE's immediate value and length are those of the piece we expect next. */
static int check_notice(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc,
			const struct piece *want, int *slot)
{
	uint32_t imm = ntohl(wc->imm_data);
	int step = ring_imm_step(imm);
	size_t bytes = want->elems * ELEM_SIZE;

	*slot = ring_imm_slot(imm);
	if (step != want->step || ring_imm_seq(imm) != ring_imm_seq(r->taken_msgs) ||
	    wc->byte_len != bytes) {
		ctl_fail(ctl, ring_prev(r), "its WRITE with immediate 0x%08x (%u bytes) is not message %u "
			 "of step %d (%zu bytes): were both given the same options?", imm, wc->byte_len,
			 r->taken_msgs & 0xffff, want->step, bytes);
		return -1;
	}
	if (*slot >= r->k || !r->granted[*slot]) {
		ctl_fail(ctl, ring_prev(r), "it wrote into slot %d, which this rank had not freed", *slot);
		return -1;
	}
	return 0;
}

/* A piece has landed in a slot: sum it in or copy it, then repost the receive, then free the slot. */
static int take_piece(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc,
		      const struct ring_layout *l, const struct piece *want)
{
	int slot;

	if (check_notice(r, ctl, wc, want, &slot))
		return -1;
	r->granted[slot] = false;
	if (r->slow_ms)
		usleep((useconds_t)r->slow_ms * 1000);
	apply_piece(l->dt, step_reduces(want->step, l->world),
		    (char *)r->data.addr + want->first * ELEM_SIZE,
		    (char *)r->slots.addr + (size_t)slot * r->c, want->elems);
	r->taken_msgs++;
	/* The receive first, the credit after: a slot is granted only once a receive waits for it. */
	if (post_receives(&r->from_prev, &r->slots, 0, 1) || post_credit(r, slot)) {
		ctl_fail(ctl, r->rank, "it could not free slot %d (see the verb's error above)", slot);
		return -1;
	}
	return 0;
}

static int on_prev_completion(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc,
			      const struct ring_layout *l, const struct plan *plan, int *taken)
{
	if (check_good_completion(wc))
		return completion_failed(r, ctl, wc, false);
	if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
		r->credit_sends_in_flight--;
		return 0;
	}
	if (*taken < plan->n_recv)
		return take_piece(r, ctl, wc, l, &plan->recv[(*taken)++]);
	/* No barrier between runs: the previous rank may have started the next one already. */
	if (r->n_early == r->k) {
		ctl_fail(ctl, ring_prev(r), "it wrote more pieces than it had credits for");
		return -1;
	}
	r->early[r->n_early++] = *wc;
	return 0;
}

/* Takes what both CQs hold; returns how many completions, or -1. */
static int poll_both(struct rdma_ring *r, struct ring_ctl *ctl, const struct ring_layout *l,
		     const struct plan *plan, int *taken)
{
	struct ibv_wc wc[POLL_BATCH];
	int n_next = ibv_poll_cq(r->to_next.cq, POLL_BATCH, wc), n_prev;

	if (n_next < 0) {
		ctl_fail(ctl, r->rank, "ibv_poll_cq failed (%d)", n_next);
		return -1;
	}
	for (int i = 0; i < n_next; i++)
		if (on_next_completion(r, ctl, &wc[i]))
			return -1;
	n_prev = ibv_poll_cq(r->from_prev.cq, POLL_BATCH, wc);
	if (n_prev < 0) {
		ctl_fail(ctl, r->rank, "ibv_poll_cq failed (%d)", n_prev);
		return -1;
	}
	for (int i = 0; i < n_prev; i++)
		if (on_prev_completion(r, ctl, &wc[i], l, plan, taken))
			return -1;
	return n_next + n_prev;
}

/* Nothing moved for TIMEOUT_S: tells rank 0 which neighbour this rank waits on (ctl_stall). */
static int stalled(struct rdma_ring *r, struct ring_ctl *ctl, const struct plan *plan, int sent,
		   int taken, int timeout_s)
{
	if (sent < plan->n_send && r->credit_count == 0)
		return ctl_stall(ctl, ring_next(r), "it returned no credit for %d s to rank %d, which has "
				 "written every slot it was given", timeout_s, r->rank);
	return ctl_stall(ctl, ring_prev(r), "it wrote nothing for %d s to rank %d, which has taken %d "
			 "of its %d pieces", timeout_s, r->rank, taken, plan->n_recv);
}

/*
 * After a poll that took N completions: any restarts -t's bound; none gives
 * the CPU away by the runtime's rule, and -t without progress tells rank 0
 * whom this rank waits on.  0 or -1.
 */
static int after_poll(struct rdma_ring *r, struct ring_ctl *ctl, struct progress *pr, int n,
		      const struct plan *plan, int sent, int taken, int timeout_s)
{
	int rc = progress_after(pr, n > 0);

	if (rc == PROGRESS_STALLED)
		rc = stalled(r, ctl, plan, sent, taken, timeout_s);
	return rc ? -1 : 0;
}

int ring_run(struct rdma_ring *r, const struct ring_layout *l, const struct plan *plan,
	     struct ring_ctl *ctl, int timeout_s)
{
	struct ibv_wc early[MAX_SLOTS];
	struct progress pr;
	int sent = 0, taken = 0, n;

	progress_start(&pr, ctl, r->rule, timeout_s);
	/* What came early is taken first, in order; what is early even for this run stays kept. */
	n = r->n_early;
	memcpy(early, r->early, sizeof(early));
	r->n_early = 0;
	for (int i = 0; i < n; i++)
		if (on_prev_completion(r, ctl, &early[i], l, plan, &taken))
			return -1;
	while (sent < plan->n_send || taken < plan->n_recv || r->writes_in_flight) {
		/* A piece goes as soon as a slot is free and, after the first step, its chunk's piece has come in. */
		for (; sent < plan->n_send && r->credit_count && taken >= plan->send[sent].needs; sent++)
			if (post_piece(r, &plan->send[sent])) {
				ctl_fail(ctl, r->rank, "it could not post an RDMA WRITE (see the verb's "
					 "error above)");
				return -1;
			}
		n = poll_both(r, ctl, l, plan, &taken);
		if (n < 0 || after_poll(r, ctl, &pr, n, plan, sent, taken, timeout_s))
			return -1;
	}
	return 0;
}

/* The SENDs of our last credits acknowledged; 0 or -1. */
static int finish_credits(struct rdma_ring *r, struct ring_ctl *ctl, int timeout_s)
{
	struct plan none = { 0 };
	struct ring_layout l = { .world = r->world };
	struct progress pr;
	int taken = 0, n;

	progress_start(&pr, ctl, r->rule, timeout_s);
	while (r->credit_sends_in_flight > 0) {
		n = poll_both(r, ctl, &l, &none, &taken);
		if (n < 0 || after_poll(r, ctl, &pr, n, &none, 0, 0, timeout_s))
			return -1;
	}
	return 0;
}

int ring_finish(struct rdma_ring *r, struct ring_ctl *ctl, int timeout_s)
{
	bool quiet = !showing();
	int rc;

	/* The last credits' completions, quietly, as every run's. */
	show_quiet(true);
	rc = finish_credits(r, ctl, timeout_s);
	show_quiet(quiet);
	return rc;
}
