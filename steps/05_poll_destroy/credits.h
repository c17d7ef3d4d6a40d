/* credits.h: stage 5: receive credits: the target says how many receives it has posted, and the initiator never sends past them. */
#ifndef RDMA_STEPS_CREDITS_H
#define RDMA_STEPS_CREDITS_H

#include <stdbool.h>

#include "poller.h"
#include "post_wr.h"

/*
 * A message that uses up a receive, sent by an initiator that does not wait
 * for an answer (WRITE with immediate, or any pipelined run), may arrive
 * before the target's program has replaced the receive it used: the target's
 * NIC then answers with an RNR NAK.  So the target counts the receives it
 * posts and sends the count over the side channel, and the initiator sends
 * message N only once the count is above N.
 */
struct credits {
	bool on;	/* this run needs them */
	int sock;	/* the side channel they travel on */
	int granted;	/* receives the target has posted so far, as far as the initiator knows */
	int iters;	/* the run's messages: the last count the target sends */
	int timeout_s;
	int updates;	/* counts sent (target) or read (initiator) */
	double longest_wait_us;	/* initiator: the longest it waited for a count */
};

/*
 * Receives the target posts before the run: a queue's worth (CONN's
 * receive queue, which stage 3 sized to the device), or one per message if
 * fewer.  The initiator never assumes it: the target sends it first.
 */
int credits_first(int iters, const struct rdma_conn *conn);

/* Sets C up for a run of ITERS messages of OP; ANSWERS: the target answers each SEND, so none are needed. */
void credits_init(struct credits *c, const struct poller *p, enum wr_op op, bool answers, int iters,
		  int timeout_s);

/* Initiator: returns once message N (from 0) has a receive posted for it at the target. */
int credits_wait_for(struct credits *c, int n);

/*
 * Target: after posting the POSTED receives of credits_first, and after the
 * barrier that starts the run, sends that count: the initiator's first.
 */
int credits_grant_first(struct credits *c, int posted);

/* Target: after posting receive number TOTAL (from 1) of the run, tells the initiator, every so often. */
int credits_grant(struct credits *c, int total);

/* Prints what the credits did, once the run is over. */
void credits_report(const struct credits *c, bool initiator);

#endif
