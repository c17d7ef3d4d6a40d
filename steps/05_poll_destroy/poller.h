/* poller.h: stage 5: wait for completions, by busy polling or on the completion channel, and take each by its wr_id. */
#ifndef RDMA_STEPS_POLLER_H
#define RDMA_STEPS_POLLER_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "cq_qp_rts.h"
#include "fault.h"

/* How completions are waited for, and what was seen. */
struct poller {
	struct rdma_conn *conn;
	bool events;		/* sleep on the completion channel instead of spinning */
	bool armed;		/* ibv_req_notify_cq is in force */
	bool rc_pingpong;	/* the peer is ibv_rc_pingpong: no barriers, filler payloads */
	long completions;	/* successful completions taken off the CQ */
	long events_seen;	/* completion events read (and acknowledged) */
	long quiet_first_sleep;	/* the completion whose wait first slept, if in the quiet loop; else 0 */
	struct ibv_wc kept;	/* a completion that came before the one waited for */
	bool has_kept;
};

void poller_init(struct poller *p, struct rdma_conn *conn, bool events, bool rc_pingpong);

/*
 * Waits for the completion of the work request tagged WR_ID (WR_ID_RECV or
 * WR_ID_SEND) and checks its status.  A completion of the other kind that
 * arrives first is kept for the next call that asks for it; any other
 * completion is an error.
 */
int poller_wait_for(struct poller *p, uint64_t wr_id, struct ibv_wc *wc);

/* Our barrier over the side channel (exchange_sync); none with ibv_rc_pingpong, which knows none. */
int poller_sync(const struct poller *p, char tag, int timeout_s);

/* Prints how the completions were taken: counts of completions, events and acks. */
void poller_report(const struct poller *p);

/* Stage 5's fault points: waiting for completions through the completion channel (--events). */
extern const struct fault_point poller_faults[];

#endif
