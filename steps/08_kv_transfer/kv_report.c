/* kv_report.c: the lines of step 08's data path (datapath.c) that explain: a post or a completion refused and why, the peer gone, a stall, and what the WR with a revoked rkey did. */
#include "kv_report.h"
#include "kv_options.h"
#include "report.h"

#include <errno.h>
#include <string.h>

const char *kv_op_words(bool pull, int n)
{
	if (pull)
		return n == 1 ? "RDMA READ" : "RDMA READs";
	return n == 1 ? "RDMA WRITE with immediate" : "RDMA WRITEs with immediate";
}

void kv_report_post_failed(int k, int rc, int bad_wr, int n, unsigned int send_cap, int in_flight)
{
	/* An injected fault (RDMA_STEPS_FAIL_AT) leaves bad_wr unset: nothing to point at. */
	if (rc != ENOMEM || bad_wr < 0) {
		report_verb_error("ibv_post_send", rc);
		return;
	}
	report_error("ibv_post_send failed: %s (errno %d): QP %d refused WR %d of a chain of %d "
		     "(bad_wr), the WRs before it posted: its send queue holds %u WRs (%d asked), and "
		     "%d were in flight: give --chain at most what the queue holds less what is in "
		     "flight, and signal often enough to retire them", strerror(rc), rc, k,
		     bad_wr, n, send_cap, KV_SEND_DEPTH, in_flight);
}

void kv_report_complete_failed(int k, int rc, int n, unsigned int send_cap, int in_flight)
{
	report_error("ibv_wr_complete failed: %s (errno %d): QP %d refused the whole chain of %d, "
		     "none of it posted (the extended API reports no bad_wr); the usual cause is a "
		     "full send queue: it holds %u WRs (%d asked), and %d were in flight: give --chain "
		     "at most what the queue holds less what is in flight", strerror(rc), rc, k, n,
		     send_cap, KV_SEND_DEPTH, in_flight);
}

int kv_report_completion_failed(int k, const struct ibv_wc *wc, bool receive, bool pull,
				int request)
{
	const char *why = "";

	if (wc->status == IBV_WC_REM_ACCESS_ERR)
		why = ": the peer refused the address or rkey (see its block table)";
	else if (receive && wc->status == IBV_WC_WR_FLUSH_ERR)
		why = ": this QP went to ERR before a WRITE with immediate took it (the prefiller's "
		      "WRITE was refused here, or its QP failed: see its output)";
	report_error("QP %d: %s of request %d completed with status %s (%d), vendor error 0x%x%s",
		     k, receive ? "a receive" : kv_op_words(pull, 1), request,
		     ibv_wc_status_str(wc->status), wc->status, wc->vendor_err, why);
	return -1;
}

int kv_report_peer_gone(bool decoder, int request, int blocks, int total_blocks, int chains_done,
			int n_chains)
{
	if (decoder)
		report_error("request %d: the prefiller closed the side channel with %d of %d blocks "
			     "in: it has stopped (killed, or it failed: see its output)", request,
			     blocks, total_blocks);
	else
		report_error("request %d: the decoder closed the side channel with %d of %d chains "
			     "completed: it has stopped (killed, or it failed: see its output)",
			     request, chains_done, n_chains);
	return -1;
}

int kv_report_stalled(int request, int timeout_s, int blocks, int total_blocks)
{
	report_error("request %d: nothing completed for %d s (-t), %d of %d blocks in: is the peer "
		     "alive?", request, timeout_s, blocks, total_blocks);
	return -1;
}

int kv_report_probe_silent(int k, int timeout_s, bool pull)
{
	report_error("QP %d: no completion within %d s for the %s with a revoked rkey", k, timeout_s,
		     kv_op_words(pull, 1));
	return -1;
}

int kv_report_probe_passed(int k, bool pull, int request, uint32_t rkey,
			   enum ibv_wc_status status)
{
	report_error("QP %d: the %s with request %d's revoked window rkey 0x%x completed with "
		     "status %s: the access was not taken back", k, kv_op_words(pull, 1), request,
		     rkey, ibv_wc_status_str(status));
	return -1;
}

void kv_show_probe_refused(bool pull, int request, uint32_t rkey, enum ibv_wc_status status)
{
	show("revoked", "the %s with request %d's window rkey 0x%x, after the peer invalidated it, "
	     "completed with status %s (%d), as it must: a leaked rkey opens nothing once its "
	     "window is invalidated, and the error has moved both QPs to ERR", kv_op_words(pull, 1),
	     request, rkey, ibv_wc_status_str(status), status);
}
