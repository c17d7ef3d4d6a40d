/* poll_destroy.h: stage 5 of the verbs workflow: poll the CQ (busy or event-driven) over many messages, and measure. */
#ifndef RDMA_STEPS_POLL_DESTROY_H
#define RDMA_STEPS_POLL_DESTROY_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "cq_qp_rts.h"
#include "post_wr.h"
#include "reg_mr.h"

#define DEFAULT_ITERS 1000
#define MAX_ITERS 1000000

struct poll_opts {
	int iters;		/* -n */
	bool rc_pingpong;	/* --peer=rc_pingpong */
	enum ibv_mtu mtu;	/* -m, for --peer=rc_pingpong */
	bool mtu_given;
};

void poll_opts_default(struct poll_opts *opts);

/* Stage 5's part of the command line, -n, --peer and -m, filling a struct poll_opts. */
extern const struct cli_option poll_cli_options[];
int poll_parse_option(int key, const char *arg, void *opts);
#define POLL_STAGE(opts) { poll_cli_options, poll_parse_option, (opts) }

/* Checks that the options make sense together; reports what does not. */
int poll_opts_check(const struct poll_opts *opts, enum wr_op op);

/* How completions are waited for, and what was seen. */
struct poller {
	struct rdma_conn *conn;
	bool events;		/* sleep on the completion channel instead of spinning */
	bool armed;		/* ibv_req_notify_cq is in force */
	bool rc_pingpong;	/* the peer is ibv_rc_pingpong: no barriers, filler payloads */
	long completions;	/* successful completions taken off the CQ */
	long events_seen;	/* completion events read (and acknowledged) */
};

void poller_init(struct poller *p, struct rdma_conn *conn, bool events, bool rc_pingpong);

/* Waits for the next completion (busy polling, or by event) and checks its status. */
int poller_wait(struct poller *p, struct ibv_wc *wc, int timeout_ms);

/* Prints how the completions were taken: counts of completions, events and acks. */
void poller_report(const struct poller *p);

/* One-sided and two-sided transfers, N times; the initiator measures them. */
int run_initiator_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int timeout_s);
int run_target_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		    int iters, int timeout_s);

#endif
