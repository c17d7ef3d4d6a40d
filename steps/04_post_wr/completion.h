/* completion.h: stage 4's completion handling: wait for a work completion, check it, show it, drain the CQ. */
#ifndef RDMA_STEPS_COMPLETION_H
#define RDMA_STEPS_COMPLETION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "cq_qp_rts.h"
#include "fault.h"
#include "post_wr.h"
#include "report.h"

/* How long a wait for one completion lasts before it counts as lost. */
#define POLL_TIMEOUT_MS 10000

/*
 * The waits, each built on the one before it: they differ in what they
 * leave to the caller.
 *
 * wait_completion busy-polls the CQ until one completion arrives, whatever
 * its status: 0 then, 1 when TIMEOUT_MS passes first (the caller decides
 * what that means), -1 on an error (reported).
 */
int wait_completion(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms);

/* As wait_completion, but a timeout is an error too, reported with what to check: 0 or -1. */
int take_any_completion(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms);

/* As take_any_completion, and a completion whose status is not success fails too. */
int take_good_completion(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms);

/*
 * As take_good_completion, but in slices of SLICE_MS: between two,
 * PEER_GONE(CTX) says whether the peer has gone (and reports how), which
 * ends the wait, since a posted receive never says that its peer has gone.
 */
int take_good_completion_watching(struct rdma_conn *conn, struct ibv_wc *wc, int timeout_ms,
				  int slice_ms, bool (*peer_gone)(void *ctx), void *ctx);

struct cm_link;

/*
 * As take_good_completion; with CM (--cm), watching for the peer's
 * DISCONNECTED between slices of CM_CHECK_MS.
 */
int take_good_completion_cm(struct rdma_conn *conn, struct cm_link *cm, struct ibv_wc *wc,
			    int timeout_ms);

/*
 * Takes the next completion, which must have failed: shows its status, what
 * that means and how long it took.  A success fails, naming WHAT, since
 * memory protection should have refused it.
 */
int expect_failed_completion(struct rdma_conn *conn, const char *what);

/* Reports that TIMEOUT_MS passed with no completion, and what to check. */
void report_no_completion(int timeout_ms);

/* Fails, naming both, unless WC is the completion of the work request tagged WR_ID. */
int expect_wr_id(const struct ibv_wc *wc, uint64_t wr_id);

/*
 * A receive completion must carry exactly LEN bytes, what this side expects;
 * fails, naming both sizes, otherwise.  Other completions pass.
 */
int check_received_length(const struct ibv_wc *wc, size_t len);

/* Reports what a successful completion says: opcode, status, bytes, immediate value. */
void show_completion(const struct ibv_wc *wc);

/* Reports that the completion WC failed with STATUS, naming its work request; returns -1. */
int report_failed_completion(const struct ibv_wc *wc, enum ibv_wc_status status);

/*
 * Fails, naming the status, unless WC succeeded; then shows it.  Inline,
 * because every completion of a data path passes here: in a quiet loop with
 * no fault to inject, it tests the status and two flags, and calls nothing.
 */
static inline int check_good_completion(const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		return report_failed_completion(wc, wc->status);
	if (fault_at("completion"))
		return report_failed_completion(wc, IBV_WC_RETRY_EXC_ERR);
	if (showing())
		show_completion(wc);
	return 0;
}

/* Shows a failed completion: which work request, its status and what that means. */
void show_failed_completion(const struct ibv_wc *wc);

/* What a completion status means: its cause, in a phrase. */
const char *wc_status_cause(enum ibv_wc_status status);

/*
 * Takes every completion the CQ holds right now off it, showing each when
 * SHOW_EACH (a failed one with its cause); returns how many, or -1.
 */
int drain_completions(struct rdma_conn *conn, bool show_each);

/* How long a QP may take to show ERR after the error that failed it. */
#define ERR_STATE_WAIT_MS 500

/*
 * The QP's state after an error, into STATE: asked again every millisecond,
 * for up to ERR_STATE_WAIT_MS, while it is not ERR.  A provider may post the
 * failed completion, and send its NAK, before it moves the QP to ERR (rxe
 * does), so one query right after the completion can still find RTS; says so
 * when the first query found another state.  0, or -1 when the query fails.
 */
int await_qp_error(struct rdma_conn *conn, enum ibv_qp_state *state);

#endif
