/* alltoall.c: step 09's one-sided all-to-all: a chain of WRITEs into a peer's buffer, then a FETCH_ADD on its signal word; the waits. */
#include "alltoall.h"
#include "clock.h"
#include "completion.h"
#include "fault.h"
#include "report.h"

#include <errno.h>
#include <sched.h>
#include <time.h>

/* rxe reaches its bandwidth at 64 KiB WRITEs (ib_write_bw), as step 07's slots. */
#define WRITE_PIECE ((size_t)64 << 10)
/* Looks at our signal word between two looks at the clock and the control channel. */
#define CLOCK_EVERY 1024

static const char *const phase_names[PHASES] = { "layout", "dispatch", "combine" };

/* The piece size that fits the chain in the send queue, the FETCH_ADD included. */
static size_t piece_for(size_t len)
{
	size_t fit = (len + QUEUE_DEPTH - 2) / (QUEUE_DEPTH - 1);

	return fit > WRITE_PIECE ? fit : WRITE_PIECE;
}

/* Fills WR[0..] with the WRITEs of LEN bytes, each taking the next SGE; returns how many. */
static int chain_writes(struct moe_mesh *m, const struct rdma_conn *c, size_t src, uint64_t dst,
			size_t len, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	size_t piece = piece_for(len);
	int n = 0;

	for (size_t off = 0; off < len; off += piece, n++) {
		size_t bytes = len - off < piece ? len - off : piece;

		sge[n] = (struct ibv_sge){ .addr = (uintptr_t)m->buf.addr + src + off,
					   .length = (uint32_t)bytes, .lkey = m->buf.mr->lkey };
		wr[n] = (struct ibv_send_wr){
			.wr_id = WR_ID_SEND,
			.sg_list = &sge[n],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.next = &wr[n + 1],
			.wr.rdma = { .remote_addr = c->remote.addr + dst + off, .rkey = c->remote.rkey },
		};
	}
	return n;
}

int a2a_post(struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l, int peer,
	     size_t src, uint64_t dst, size_t len, enum moe_phase ph, struct a2a_stats *st)
{
	struct rdma_conn *c = &m->conn[peer];
	struct ibv_send_wr wr[QUEUE_DEPTH], *bad;
	struct ibv_sge sge[QUEUE_DEPTH];
	int n = chain_writes(m, c, src, dst, len, wr, sge), rc;

	/*
	 * The signal, after the data on the same QP.  RC executes one QP's WRs
	 * in order, and the responder places a WRITE's data before it executes
	 * a later atomic: so once the peer's word counts us, our bytes are
	 * there.  No IBV_SEND_FENCE: a fence holds a WR until earlier READs and
	 * atomics complete, for a WR that depends on what they bring back;
	 * nothing here reads.  On two QPs no order holds at all.
	 */
	sge[n] = (struct ibv_sge){ .addr = (uintptr_t)m->buf.addr + l->old + 8 * (size_t)peer,
				   .length = 8, .lkey = m->buf.mr->lkey };
	wr[n] = (struct ibv_send_wr){
		.wr_id = WR_ID_SEND,
		.sg_list = &sge[n],
		.num_sge = 1,
		.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = c->remote.addr + l->sig + 8 * (uint64_t)ph,
			       .compare_add = 1, .rkey = c->remote.rkey },
	};
	rc = fault_at("post_send") ? errno : ibv_post_send(c->qp, wr, &bad);
	if (rc) {
		report_verb_error("ibv_post_send (WRITEs, then FETCH_ADD)", rc);
		ctl_fail(ctl, m->rank, "it could not post its %s to rank %d", phase_names[ph], peer);
		return -1;
	}
	show("ibv_post_send", "%s to rank %d: %d WRITE%s of %zu B in all at its offset %llu, "
	     "unsignalled, then FETCH_ADD +1 on its %s word, signalled: one post", phase_names[ph],
	     peer, n, n == 1 ? "" : "s", len, (unsigned long long)dst, phase_names[ph]);
	st->posts++;
	st->writes += (uint64_t)n;
	st->atomics++;
	st->bytes += len;
	return 0;
}

int a2a_wait_sent(struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l,
		  int timeout_s)
{
	for (int p = 0; p < m->world; p++) {
		struct ibv_wc wc;
		int rc;

		if (p == m->rank)
			continue;
		rc = wait_completion(&m->conn[p], &wc, timeout_s * 1000);
		if (rc < 0) {
			ctl_fail(ctl, m->rank, "it could not poll its CQ to rank %d", p);
			return -1;
		}
		if (rc > 0) {
			ctl_fail(ctl, p, "our FETCH_ADD to it did not complete within %d s", timeout_s);
			return -1;
		}
		/* Stage 4's check: a failed status (or the fault point "completion") is named there. */
		if (check_good_completion(&wc)) {
			ctl_fail_neighbour(ctl, p, "our WRs to it did not complete (see the line above): "
					   "its QP is gone or unreachable");
			return -1;
		}
		show("completion", "rank %d: FETCH_ADD done, the old value of its word was %llu", p,
		     (unsigned long long)*(uint64_t *)((char *)m->buf.addr + l->old + 8 * (size_t)p));
	}
	return 0;
}

static uint64_t signal_read(const struct moe_mesh *m, const struct moe_layout *l, enum moe_phase ph)
{
	return __atomic_load_n((uint64_t *)((char *)m->buf.addr + l->sig + 8 * (size_t)ph),
			       __ATOMIC_ACQUIRE);
}

int a2a_wait_signal(struct moe_mesh *m, struct ring_ctl *ctl, const struct moe_layout *l,
		    enum moe_phase ph, int timeout_s)
{
	uint64_t want = (uint64_t)(m->world - 1), now;
	struct timespec start;
	unsigned spins = 0;

	clock_start(&start);
	/* More ranks than CPUs under emulation: yield, so that rxe and the others run. */
	while ((now = signal_read(m, l, ph)) < want) {
		sched_yield();
		if (++spins % CLOCK_EVERY)
			continue;
		if (ctl_check(ctl))
			return -1;
		if (ms_since(&start) > timeout_s * 1000L) {
			ctl_fail(ctl, m->rank, "only %llu of %llu peers signalled its %s within %d s",
				 (unsigned long long)now, (unsigned long long)want, phase_names[ph],
				 timeout_s);
			return -1;
		}
	}
	show("signal", "our %s word reads %llu = N - 1: every peer's data is here", phase_names[ph],
	     (unsigned long long)now);
	return 0;
}
