/* session.h: stages 1 to 3 in one call, the starting point of every later step, and their teardown. */
#ifndef RDMA_STEPS_SESSION_H
#define RDMA_STEPS_SESSION_H

#include "cli.h"
#include "cm.h"
#include "cq_qp_rts.h"
#include "open_pd.h"
#include "reg_mr.h"

struct session {
	struct rdma_dev dev;	/* stage 1 */
	struct rdma_buf buf;	/* stage 2 */
	struct rdma_conn conn;	/* stage 3: created, not yet connected */
	struct cm_link cm;	/* --cm: rdma_cm's channel and ids; before stage 1, since
				 * the address gives the device */
};

/*
 * Opens the device and PD, checks what the run asks against the device's
 * limits (the hook's check_limits, or session_check_buffer; then stage 3's
 * queues), registers the buffer, creates the CQ and QP (in INIT), each under
 * its stage heading.  With --cm, rdma_cm first resolves
 * the address (client) or takes a client's request (server), and the stages
 * are built on the device that gives.  The caller connects the QP.  Returns
 * 0 or -1; either way the caller ends with session_close, which releases
 * whatever the stages before the failed one made.
 */
int session_open(struct session *s, const struct cli_common *opts, const struct reg_mr_opts *mr,
		 const struct conn_opts *conn);

/*
 * The buffer of a step that moves it whole as one message of -s bytes,
 * checked against DEV: one message (the port's max_msg_sz), one MR
 * (max_mr_size), and the pages the process may pin (RLIMIT_MEMLOCK, unless
 * CAP_IPC_LOCK).  session_open makes this check itself unless the step's
 * hook brings its own; 0, or -1 after naming the limit and -s.
 */
int session_check_buffer(const struct rdma_dev *dev, size_t size);

/*
 * Connects the QP to the peer: over the side channel (connect_qp), or with
 * --cm through rdma_cm's handshake.  Returns 0 or -1.
 */
int session_connect(struct session *s, const struct cli_common *opts);

/*
 * Whether the session runs through rdma_cm (--cm): then there is no side
 * channel, and rdma_cm's events stand in for its barriers.
 */
bool session_through_cm(const struct session *s);

/*
 * Ends the connection (under --cm: rdma_disconnect, and the wait for
 * DISCONNECTED), then releases stages 3, 2 and 1 in that order, then
 * rdma_cm's ids and channel; returns how many releases failed.
 */
int session_close(struct session *s);

#endif
