/* session.h: stages 1 to 3 in one call, the starting point of every later step, and their teardown. */
#ifndef RDMA_STEPS_SESSION_H
#define RDMA_STEPS_SESSION_H

#include "cli.h"
#include "cq_qp_rts.h"
#include "open_pd.h"
#include "reg_mr.h"

struct session {
	struct rdma_dev dev;	/* stage 1 */
	struct rdma_buf buf;	/* stage 2 */
	struct rdma_conn conn;	/* stage 3: created, not yet connected */
};

/*
 * Opens the device and PD, registers the buffer, creates the CQ and QP (in
 * INIT), each under its stage heading.  The caller connects the QP.  Returns
 * 0 or -1; either way the caller ends with session_close, which releases
 * whatever the stages before the failed one made.
 */
int session_open(struct session *s, const struct cli_common *opts, const struct reg_mr_opts *mr,
		 const struct conn_opts *conn);

/* Releases stages 3, 2 and 1 in that order; returns how many releases failed. */
int session_close(struct session *s);

#endif
