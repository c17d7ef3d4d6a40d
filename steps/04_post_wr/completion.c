/* completion.c: stage 4's completion handling: wait for a work completion, check it, show it, drain the CQ. */
#include "completion.h"
#include "clock.h"
#include "cm.h"
#include "report.h"
#include "stop.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <time.h>

/* Empty polls between two looks at the clock while busy polling. */
#define CLOCK_EVERY 1024

static const char *wc_opcode_name(enum ibv_wc_opcode opcode)
{
	switch (opcode) {
	case IBV_WC_SEND:
		return "SEND";
	case IBV_WC_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WC_RDMA_READ:
		return "RDMA_READ";
	case IBV_WC_RECV:
		return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return "RECV_RDMA_WITH_IMM";
	case IBV_WC_FETCH_ADD:
		return "FETCH_ADD";
	case IBV_WC_COMP_SWAP:
		return "COMP_SWAP";
	case IBV_WC_ATOMIC_WRITE:
		return "ATOMIC_WRITE";
#ifdef HAVE_IBV_WR_FLUSH
	case IBV_WC_FLUSH:	/* rdma-core 45 and later */
		return "FLUSH";
#endif
	default:
		return "other";
	}
}

void show_completion(const struct ibv_wc *wc)
{
	char imm[40];

	/* Quiet, build no line that nobody sees (and zero no buffer for it: an initialised
	 * imm[] would cost its 40 bytes first); check_good_completion() tests before calling. */
	if (!showing())
		return;
	imm[0] = '\0';
	/* imm_data belongs to receive completions; rxe also sets the flag on the sender's, with 0 in imm_data. */
	if ((wc->wc_flags & IBV_WC_WITH_IMM) && (wc->opcode & IBV_WC_RECV))
		snprintf(imm, sizeof(imm), ", immediate 0x%08x", ntohl(wc->imm_data));
	show("ibv_poll_cq", "completion: opcode %s, status %s, %u bytes%s",
	     wc_opcode_name(wc->opcode), ibv_wc_status_str(wc->status), wc->byte_len, imm);
}

const char *wc_status_cause(enum ibv_wc_status status)
{
	static const char *const causes[] = {
		[IBV_WC_SUCCESS] = "the work request did what it asked",
		[IBV_WC_LOC_LEN_ERR] = "the message is longer than the receive buffer posted for it",
		[IBV_WC_LOC_QP_OP_ERR] = "this QP could not carry the work request out: a malformed "
			"one, or on rxe a message longer than the receive, or a local buffer its lkey "
			"does not cover",
		[IBV_WC_LOC_PROT_ERR] = "a local buffer is not covered by the lkey given, or its MR "
			"belongs to another PD",
		[IBV_WC_WR_FLUSH_ERR] = "the QP was in the error state: this work request never ran",
		[IBV_WC_REM_INV_REQ_ERR] = "the responder refused the request itself: an operation "
			"its QP does not allow, or a SEND longer than its receive",
		[IBV_WC_REM_ACCESS_ERR] = "the responder refused the rkey, the address range or the "
			"MR's rights",
		[IBV_WC_REM_OP_ERR] = "the responder could not carry the operation out: on rxe, a "
			"SEND longer than the receive posted for it",
		[IBV_WC_RETRY_EXC_ERR] = "no ACK came back: every retry (retry_cnt) timed out "
			"(timeout); the peer is gone or unreachable",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "the peer had no receive posted, through every RNR retry "
			"(rnr_retry)",
	};

	return name_of(causes, NAME_COUNT(causes), status, "see ibv_poll_cq(3)");
}

void show_failed_completion(const struct ibv_wc *wc)
{
	/* Only wr_id, status, vendor_err and qp_num are defined in a failed completion: no opcode. */
	show("ibv_poll_cq", "completion of work request %llu (%s): status %s (%d), vendor error 0x%x",
	     (unsigned long long)wc->wr_id, wr_id_name(wc->wr_id), ibv_wc_status_str(wc->status),
	     wc->status, wc->vendor_err);
	show("  which means", "%s", wc_status_cause(wc->status));
}

int wait_completion(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms)
{
	struct timespec start;
	int n;

	/* Busy polling: ibv_poll_cq reads the CQ in our own memory, with no system call.
	 * Reading the clock may make one (it does in the test VM if its clocksource is hpet),
	 * so the timeout is looked at once every CLOCK_EVERY empty polls. */
	clock_start(&start);
	for (unsigned int spins = 1; (n = ibv_poll_cq(conn->cq, 1, wc)) == 0; spins++) {
		if (stop_requested())
			return report_stopped();
		if (spins % CLOCK_EVERY == 0 && ms_since(&start) > timeout_ms)
			return 1;
	}
	if (n < 0) {
		report_error("ibv_poll_cq failed (%d)", n);
		return -1;
	}
	return 0;
}

void report_no_completion(int timeout_ms)
{
	report_error("no completion within %d ms: is the peer running, and did it post what "
		     "this operation needs?", timeout_ms);
}

int take_any_completion(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms)
{
	int rc = wait_completion(conn, wc, timeout_ms);

	if (rc == 1)
		report_no_completion(timeout_ms);
	return rc ? -1 : 0;
}

int report_failed_completion(const struct ibv_wc *wc, enum ibv_wc_status status)
{
	report_error("completion of work request %llu failed: %s (status %d, vendor error 0x%x)",
		     (unsigned long long)wc->wr_id, ibv_wc_status_str(status), status, wc->vendor_err);
	return -1;
}

int take_good_completion(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms)
{
	if (take_any_completion(conn, wc, timeout_ms))
		return -1;
	return check_good_completion(wc);
}

int take_good_completion_watching(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms,
				  int slice_ms, bool (*peer_gone)(void *ctx), void *ctx)
{
	for (int waited = 0; waited < timeout_ms; waited += slice_ms) {
		int rc = wait_completion(conn, wc, slice_ms);

		if (rc <= 0)
			return rc ? -1 : check_good_completion(wc);
		if (peer_gone(ctx))
			return -1;
	}
	report_no_completion(timeout_ms);
	return -1;
}

static bool cm_link_gone(void *cm)
{
	return cm_peer_gone(cm);
}

int take_good_completion_cm(struct rdma_conn *conn, struct cm_link *cm, struct ibv_wc *wc,
			   int timeout_ms)
{
	if (!cm)
		return take_good_completion(conn, wc, timeout_ms);
	return take_good_completion_watching(conn, wc, timeout_ms, CM_CHECK_MS, cm_link_gone, cm);
}

int expect_failed_completion(struct rdma_conn *conn, const char *what)
{
	struct ibv_wc wc;
	struct timespec start;

	clock_start(&start);
	if (take_any_completion(conn, &wc, POLL_TIMEOUT_MS))
		return -1;
	if (wc.status == IBV_WC_SUCCESS) {
		show_completion(&wc);
		report_error("the %s succeeded: memory protection should have refused it", what);
		return -1;
	}
	show_failed_completion(&wc);
	show("  after", "%ld ms from the post to this completion", ms_since(&start));
	return 0;
}

int expect_wr_id(const struct ibv_wc *wc, uint64_t wr_id)
{
	if (wc->wr_id == wr_id)
		return 0;
	report_error("completion of work request %llu (%s) where work request %llu (%s) was expected",
		     (unsigned long long)wc->wr_id, wr_id_name(wc->wr_id), (unsigned long long)wr_id,
		     wr_id_name(wr_id));
	return -1;
}

int check_received_length(const struct ibv_wc *wc, size_t len)
{
	if ((wc->opcode & IBV_WC_RECV) && wc->byte_len != len) {
		report_error("the peer sent %u bytes where this side expects %zu: give both sides "
			     "the same -s", wc->byte_len, len);
		return -1;
	}
	return 0;
}

int drain_completions(struct rdma_conn *conn, bool show_each)
{
	struct ibv_wc wc;
	int n, count = 0;

	while ((n = ibv_poll_cq(conn->cq, 1, &wc)) > 0) {
		if (show_each && wc.status == IBV_WC_SUCCESS)
			show_completion(&wc);
		else if (show_each)
			show_failed_completion(&wc);
		count++;
	}
	if (n < 0) {
		report_error("ibv_poll_cq failed (%d)", n);
		return -1;
	}
	return count;
}

int await_qp_error(struct rdma_conn *conn, enum ibv_qp_state *state)
{
	const struct timespec tick = { .tv_nsec = 1000000 };
	enum ibv_qp_state first;
	struct timespec start;

	clock_start(&start);
	if (query_qp_state(conn, state))
		return -1;
	first = *state;
	while (*state != IBV_QPS_ERR && ms_since(&start) < ERR_STATE_WAIT_MS) {
		nanosleep(&tick, NULL);
		if (query_qp_state(conn, state))
			return -1;
	}
	if (*state == IBV_QPS_ERR && first != IBV_QPS_ERR)
		show("ibv_query_qp", "state %s at first, ERR %ld ms later: the failed completion came "
		     "before the state changed (rxe posts it, and sends its NAK, then moves the QP to "
		     "ERR)", qp_state_name(first), ms_since(&start));
	return 0;
}
