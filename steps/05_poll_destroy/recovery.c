/* recovery.c: stage 5's recovery drill: a QP broken on purpose, then brought back from ERR to RTS. */
#include "recovery.h"
#include "exchange.h"
#include "completion.h"
#include "post_wr.h"
#include "report.h"

#include <errno.h>
#include <poll.h>

/* How long to listen on the device's asynchronous event channel. */
#define ASYNC_WAIT_MS 200

/* The initiator: one byte written with the peer's rkey plus one, which the peer must refuse. */
static int break_qp(struct rdma_conn *conn, const struct rdma_buf *buf)
{
	const struct post_opts write = { .op = OP_WRITE };
	struct rdma_conn bent = *conn;

	bent.remote.rkey = conn->remote.rkey + 1;
	if (post_operation(&bent, buf, 1, &write))
		return -1;
	return expect_failed_completion(conn, "RDMA WRITE with a wrong rkey");
}

/* Shows, and takes off the CQ, whatever completions the error left there. */
static int drain_after_error(struct rdma_conn *conn)
{
	int count = drain_completions(conn, true);

	if (count < 0)
		return -1;
	show("CQ drained", "%d completion(s) left by the error", count);
	return 0;
}

static int expect_qp_error(struct rdma_conn *conn)
{
	enum ibv_qp_state state;

	if (await_qp_error(conn, &state))
		return -1;
	if (state != IBV_QPS_ERR) {
		report_error("the QP is in %s after the failed WRITE, not in ERR", qp_state_name(state));
		return -1;
	}
	show("ibv_query_qp", "state ERR: it takes no more work until it is reset");
	return 0;
}

/* Reads the device's asynchronous events for ASYNC_WAIT_MS, acknowledging each. */
static int show_async_events(struct ibv_context *ctx)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int n, count = 0;

	/* The async fd blocks; poll() bounds the wait, so that none arriving is an answer too. */
	while ((n = poll(&pfd, 1, ASYNC_WAIT_MS)) > 0) {
		if (ibv_get_async_event(ctx, &ev)) {
			report_verb_error("ibv_get_async_event", errno);
			return -1;
		}
		show("ibv_get_async_event", "%s", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
		count++;
	}
	if (n < 0) {
		report_verb_error("poll (the async event fd)", errno);
		return -1;
	}
	if (!count)
		show("ibv_get_async_event", "no event within %d ms: this provider reports the error in "
		     "the completion and the QP's state alone", ASYNC_WAIT_MS);
	return 0;
}

/* ERR -> RESET -> INIT, a second exchange (same QPN, new PSN), then RTR and RTS. */
static int bring_back(struct session *s, const struct cli_common *opts)
{
	if (reset_qp(&s->dev, &s->buf, &s->conn))
		return -1;
	show("side channel", "exchanging again: the same QPN, a new PSN");
	exchange_show("local", &s->conn.local);
	if (exchange_peer_info(s->conn.sock, &s->conn.local, &s->conn.remote, opts->timeout_s,
			       s->conn.name_stranger))
		return -1;
	exchange_show("remote", &s->conn.remote);
	return bring_up_qp(&s->dev, &s->conn);
}

int run_recovery_drill(struct session *s, const struct cli_common *opts)
{
	show_heading("recovery drill: break the QP, then bring it back to RTS");
	/* A target not yet in RTS would take the bad WRITE in RTR and then fail its own RTS. */
	if (exchange_sync(s->conn.sock, 'B', opts->timeout_s))
		return -1;
	if (opts->host && break_qp(&s->conn, &s->buf))
		return -1;
	/* The target looks only once the initiator has its failed completion. */
	if (exchange_sync(s->conn.sock, 'E', opts->timeout_s))
		return -1;
	if (drain_after_error(&s->conn) || expect_qp_error(&s->conn) ||
	    show_async_events(s->dev.ctx))
		return -1;
	return bring_back(s, opts);
}
