/* ring.c: stage 7: the ring on verbs: one RC QP to the next rank and one from the previous, K slots of C bytes, credits, WRITE with immediate. */
#include "ring.h"
#include "clock.h"
#include "fault.h"
#include "completion.h"
#include "post_wr.h"
#include "report.h"
#include "teardown.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Completions taken in one ibv_poll_cq call. */
#define POLL_BATCH 16
/* Empty polls between two looks at the clock, and how often the control channel is looked at. */
#define CLOCK_EVERY 1024
#define CTL_EVERY_MS 100

/*
 * The immediate value of a WRITE names what it carries: the ring step in
 * bits 31-24, the slot in 23-16, and the message's number on this link
 * (mod 65536) in 15-0.  The receiver checks all three.
 */
static uint32_t imm_encode(int step, int slot, uint32_t seq)
{
	return (uint32_t)step << 24 | (uint32_t)slot << 16 | (seq & 0xffff);
}

int ring_open(struct rdma_ring *r, const struct cli_common *common, const struct ring_opts *opts,
	      const struct launch *l, size_t bytes)
{
	struct reg_mr_opts data_mr = { .size = bytes }, slots_mr = { .size = (size_t)opts->slots * opts->slot_bytes };
	struct conn_opts conn = { 0 };

	*r = (struct rdma_ring){ .rank = l->rank, .world = l->world, .k = opts->slots,
				 .c = opts->slot_bytes, .to_next.sock = -1, .from_prev.sock = -1,
				 .slow_ms = opts->slow_rank == l->rank ? opts->slow_ms : 0 };
	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(common, &r->dev))
		return -1;
	show_heading("stage 2: register the user buffer, once, and the receive slots");
	reg_mr_grant(&data_mr, IBV_ACCESS_LOCAL_WRITE,
		     "the user buffer: our NIC reads it for each WRITE and the CPU sums into it; no "
		     "peer may reach it");
	reg_mr_grant(&slots_mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		     "K slots of C bytes: the previous rank WRITEs pieces here, one per credit");
	if (register_buffer(&r->dev, &data_mr, &r->data) ||
	    register_buffer(&r->dev, &slots_mr, &r->slots))
		return -1;
	if (r->world == 1)
		return 0;
	show_heading("stage 3: a QP to the next rank and a QP from the previous one");
	if (create_cq_qp(&r->dev, &r->data, &conn, &r->to_next, NULL) ||
	    create_cq_qp(&r->dev, &r->slots, &conn, &r->from_prev, NULL))
		return -1;
	r->to_next.timeout = r->from_prev.timeout = (uint8_t)opts->job.qp_timeout;
	/* Each WRITE with immediate takes a receive (carrying no bytes), each credit SEND too. */
	if (post_receives(&r->from_prev, &r->slots, 0, r->k) ||
	    post_receives(&r->to_next, &r->data, 0, r->k))
		return -1;
	return 0;
}

int ring_connect(struct rdma_ring *r, const struct neighbours *nb)
{
	if (r->world == 1)
		return 0;
	r->to_next.remote = nb->next_qp;
	r->from_prev.remote = nb->prev_qp;
	exchange_show("next rank's", &nb->next_qp);
	exchange_show("prev rank's", &nb->prev_qp);
	return bring_up_qp(&r->dev, &r->to_next) || bring_up_qp(&r->dev, &r->from_prev) ? -1 : 0;
}

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

int ring_meet(struct rdma_ring *r, struct ring_ctl *ctl, const struct launch *l,
	      struct hello *mine, const char *failure, struct neighbours *nb)
{
	struct rank_result none = { 0 }, all[MAX_WORLD];

	mine->to_next = r->to_next.local;
	mine->from_prev = r->from_prev.local;
	show_heading("rendezvous: every rank's two QPs, through rank 0");
	if (rendezvous(ctl, l, mine, failure, nb) || failure)
		return -1;
	if (ring_connect(r, nb)) {
		ctl_fail(ctl, l->rank, "its QPs did not reach RTS (see its output)");
		return -1;
	}
	/* Every QP is in RTS before the first credit goes out. */
	return ctl_gather(ctl, &none, all) || ring_grant_slots(r, ctl) ? -1 : 0;
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
		.imm_data = htonl(imm_encode(pc->step, slot, r->sent_msgs)),
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
	     imm_encode(pc->step, slot, r->sent_msgs), bytes, pc->chunk, slot,
	     (unsigned long long)wr.wr.rdma.remote_addr);
	r->credit_head = (r->credit_head + 1) % r->k;
	r->credit_count--;
	r->writes_in_flight++;
	r->sent_msgs++;
	return 0;
}

static int prev_of(const struct rdma_ring *r)
{
	return (r->rank + r->world - 1) % r->world;
}

static int next_of(const struct rdma_ring *r)
{
	return (r->rank + 1) % r->world;
}

/* A failed completion on a QP names the rank at its other end, unless another rank failed first. */
static int completion_failed(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc,
			     bool to_next)
{
	static const char *const what[2][2] = {
		{ "a receive for its WRITEs", "our credit SEND to it" },
		{ "a receive for its credits", "our RDMA WRITE to it" },
	};

	ctl_fail_neighbour(ctl, to_next ? next_of(r) : prev_of(r), "%s completed with status %s "
			   "(%d): its QP is gone or unreachable", what[to_next][wc->wr_id == WR_ID_SEND],
			   ibv_wc_status_str(wc->status), wc->status);
	return -1;
}

/* The next rank freed a slot: keep its credit, and post the receive for the next credit. */
static int take_credit(struct rdma_ring *r, struct ring_ctl *ctl, const struct ibv_wc *wc)
{
	uint32_t slot = ntohl(wc->imm_data);

	if (slot >= (uint32_t)r->k || r->credit_count == r->k) {
		ctl_fail(ctl, next_of(r), "it sent a credit for slot %u, which it had not been "
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
	int step = (int)(imm >> 24);
	size_t bytes = want->elems * ELEM_SIZE;

	*slot = (int)(imm >> 16 & 0xff);
	if (step != want->step || (imm & 0xffff) != (r->taken_msgs & 0xffff) || wc->byte_len != bytes) {
		ctl_fail(ctl, prev_of(r), "its WRITE with immediate 0x%08x (%u bytes) is not message %u "
			 "of step %d (%zu bytes): were both given the same options?", imm, wc->byte_len,
			 r->taken_msgs & 0xffff, want->step, bytes);
		return -1;
	}
	if (*slot >= r->k || !r->granted[*slot]) {
		ctl_fail(ctl, prev_of(r), "it wrote into slot %d, which this rank had not freed", *slot);
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
		ctl_fail(ctl, prev_of(r), "it wrote more pieces than it had credits for");
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
static int report_stall(struct rdma_ring *r, struct ring_ctl *ctl, const struct plan *plan,
			int sent, int taken, int timeout_s)
{
	if (sent < plan->n_send && r->credit_count == 0)
		return ctl_stall(ctl, next_of(r), "it returned no credit for %d s to rank %d, which has "
				 "written every slot it was given", timeout_s, r->rank);
	return ctl_stall(ctl, prev_of(r), "it wrote nothing for %d s to rank %d, which has taken %d "
			 "of its %d pieces", timeout_s, r->rank, taken, plan->n_recv);
}

/* Between empty polls: a look at the control channel and at the stall bound, now and then. */
static int idle(struct rdma_ring *r, struct ring_ctl *ctl, const struct plan *plan, int sent,
		int taken, int timeout_s, const struct timespec *progress, struct timespec *ctl_seen)
{
	if (ms_since(ctl_seen) >= CTL_EVERY_MS) {
		clock_start(ctl_seen);
		if (ctl_check(ctl))
			return -1;
	}
	if (ms_since(progress) >= timeout_s * 1000L)
		return report_stall(r, ctl, plan, sent, taken, timeout_s);
	return 0;
}

int ring_run(struct rdma_ring *r, const struct ring_layout *l, const struct plan *plan,
	     struct ring_ctl *ctl, int timeout_s)
{
	struct timespec progress, ctl_seen;
	struct ibv_wc early[MAX_SLOTS];
	int sent = 0, taken = 0, n;
	unsigned spins = 0;

	clock_start(&progress);
	ctl_seen = progress;
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
		if (n < 0)
			return -1;
		if (n > 0) {
			clock_start(&progress);
			continue;
		}
		/* rxe's "NIC" is kernel work on these same CPUs, and ranks may outnumber them. */
		sched_yield();
		if (++spins % CLOCK_EVERY == 0 &&
		    idle(r, ctl, plan, sent, taken, timeout_s, &progress, &ctl_seen))
			return -1;
	}
	return 0;
}

int ring_finish(struct rdma_ring *r, struct ring_ctl *ctl, int timeout_s)
{
	struct plan none = { 0 };
	struct ring_layout l = { .world = r->world };
	struct timespec progress, ctl_seen;
	int taken = 0;
	unsigned spins = 0;

	clock_start(&progress);
	ctl_seen = progress;
	while (r->credit_sends_in_flight > 0) {
		int n = poll_both(r, ctl, &l, &none, &taken);

		if (n < 0)
			return -1;
		if (n == 0 && ++spins % CLOCK_EVERY == 0 &&
		    idle(r, ctl, &none, 0, 0, timeout_s, &progress, &ctl_seen))
			return -1;
	}
	return 0;
}

int ring_leave(struct rdma_ring *r, struct ring_ctl *ctl, int timeout_s)
{
	struct rank_result none = { 0 }, all[MAX_WORLD];
	bool quiet = !showing();
	int rc;

	/* The last credits' completions, quietly, as every run's. */
	show_quiet(true);
	rc = ring_finish(r, ctl, timeout_s);
	show_quiet(quiet);
	return rc || ctl_gather(ctl, &none, all) ? -1 : 0;
}

int ring_close(struct rdma_ring *r)
{
	int failures = destroy_cq_qp(&r->from_prev);

	failures += destroy_cq_qp(&r->to_next);
	failures += release_buffer(&r->slots);
	failures += release_buffer(&r->data);
	failures += close_device_pd(&r->dev);
	return failures;
}
