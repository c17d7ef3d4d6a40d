/* poll_destroy.c: stage 5 of the verbs workflow: poll the CQ (busy or event-driven) over many messages, and measure. */
#include "poll_destroy.h"
#include "device.h"
#include "exchange.h"
#include "report.h"
#include "stop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void poll_opts_default(struct poll_opts *opts)
{
	*opts = (struct poll_opts){ .iters = DEFAULT_ITERS, .mtu = IBV_MTU_1024 };
}

static int parse_mtu(const char *arg, enum ibv_mtu *mtu)
{
	int bytes;

	if (cli_parse_int("--mtu", arg, 256, 4096, &bytes))
		return -1;
	for (enum ibv_mtu m = IBV_MTU_256; m <= IBV_MTU_4096; m++) {
		if (mtu_bytes(m) == bytes) {
			*mtu = m;
			return 0;
		}
	}
	report_error("--mtu: %d is not an RDMA MTU; use 256, 512, 1024, 2048 or 4096", bytes);
	return -1;
}

const struct cli_option poll_cli_options[] = {
	{ "iters", 'n', "N", "number of messages (default: 1000)" },
	{ "peer", CLI_KEY_PEER, "rc_pingpong", "speak ibv_rc_pingpong's exchange, to run against it" },
	{ "mtu", 'm', "BYTES", "with --peer=rc_pingpong: path MTU, 256 to 4096 (default: 1024, as it)" },
	{ 0 },
};

int poll_parse_option(int key, const char *arg, void *ctx)
{
	struct poll_opts *opts = ctx;

	switch (key) {
	case 'n':
		return cli_parse_int("--iters", arg, 1, MAX_ITERS, &opts->iters);
	case 'm':
		opts->mtu_given = true;
		return parse_mtu(arg, &opts->mtu);
	default:	/* --peer */
		if (strcmp(arg, "rc_pingpong")) {
			report_error("--peer: '%s' is not a peer this program can speak to; the one "
				     "choice is rc_pingpong (leave --peer out to talk to rdma-steps)", arg);
			return -1;
		}
		opts->rc_pingpong = true;
		return 0;
	}
}

int poll_opts_check(const struct poll_opts *opts, enum wr_op op)
{
	if (opts->mtu_given && !opts->rc_pingpong) {
		report_error("--mtu goes with --peer=rc_pingpong only: between rdma-steps programs "
			     "the exchange carries each port's MTU");
		return -1;
	}
	if (opts->rc_pingpong && op != OP_SEND) {
		report_error("--peer=rc_pingpong speaks SEND/RECV only: ibv_rc_pingpong sends no "
			     "address or rkey, so it never does one-sided operations");
		return -1;
	}
	return 0;
}

void poller_init(struct poller *p, struct rdma_conn *conn, bool events, bool rc_pingpong)
{
	*p = (struct poller){ .conn = conn, .events = events, .rc_pingpong = rc_pingpong };
}

/* Our barriers over the side channel; ibv_rc_pingpong knows none, so there are none then. */
static int sync_with_peer(const struct poller *p, char tag, int timeout_s)
{
	return p->rc_pingpong ? 0 : exchange_sync(p->conn->sock, tag, timeout_s);
}

/* Sleeps until the completion channel reports an event, then acknowledges it. */
static int wait_for_event(struct poller *p, int timeout_ms)
{
	struct pollfd pfd = { .fd = p->conn->channel->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_context;
	int rc;

	do {
		if (stop_requested())
			return report_stopped();
		rc = poll(&pfd, 1, timeout_ms);
	} while (rc < 0 && errno == EINTR);
	if (rc <= 0) {
		report_error("no completion event within %d ms: is the peer running?", timeout_ms);
		return -1;
	}
	if (ibv_get_cq_event(p->conn->channel, &cq, &cq_context)) {
		report_verb_error("ibv_get_cq_event", errno);
		return -1;
	}
	/* Every event must be acknowledged, or ibv_destroy_cq waits for ever. */
	ibv_ack_cq_events(cq, 1);
	p->events_seen++;
	p->armed = false;
	show("ibv_get_cq_event", "the CQ reported a completion; acknowledged with ibv_ack_cq_events");
	return 0;
}

/* Asks for one event at the next completion: arming is one-shot and must be renewed. */
static int arm(struct poller *p)
{
	int rc = ibv_req_notify_cq(p->conn->cq, 0);

	if (rc) {
		report_verb_error("ibv_req_notify_cq", rc);
		return -1;
	}
	p->armed = true;
	show("ibv_req_notify_cq", "CQ armed: the next completion will wake us");
	return 0;
}

int poller_wait(struct poller *p, struct ibv_wc *wc, int timeout_ms)
{
	int n;

	if (!p->events) {
		if (poll_completion(p->conn, wc, timeout_ms))
			return -1;
		p->completions++;
		return 0;
	}
	/* Poll first, arm, then poll again before sleeping: a completion that landed between
	 * our last poll and the arming would otherwise never raise an event. */
	for (;;) {
		n = ibv_poll_cq(p->conn->cq, 1, wc);
		if (n < 0) {
			report_error("ibv_poll_cq failed (%d)", n);
			return -1;
		}
		if (n > 0)
			break;
		if (!p->armed) {
			if (arm(p))
				return -1;
			continue;
		}
		if (wait_for_event(p, timeout_ms))
			return -1;
	}
	if (check_completion(wc))
		return -1;
	p->completions++;
	return 0;
}

void poller_report(const struct poller *p)
{
	if (p->events)
		show("completions", "%ld, every one success; %ld completion events, each acknowledged",
		     p->completions, p->events_seen);
	else
		show("completions", "%ld, every one success (busy polling: no events; ibv_poll_cq makes no system call)",
		     p->completions);
}

/* Differs from the target's seed 0 in every byte. */
#define READ_POISON_SEED 0x80

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The perftest-style report: latency percentiles and bandwidth. */
static void show_stats(double *lat_us, int iters, size_t size, double total_us, enum wr_op op)
{
	double sum = 0;
	int p99 = (iters * 99 + 99) / 100 - 1;

	qsort(lat_us, (size_t)iters, sizeof(*lat_us), compare_double);
	for (int i = 0; i < iters; i++)
		sum += lat_us[i];
	show("results", "%d x %s of %zu bytes", iters, op_name(op), size);
	show("latency (us)", "min %.2f, median %.2f, average %.2f, p99 %.2f%s", lat_us[0],
	     lat_us[iters / 2], sum / iters, lat_us[p99],
	     op == OP_SEND ? " (half the round trip)" : " (post to completion)");
	show("bandwidth", "%.2f MB/s, %.0f messages/s", (double)size * iters / total_us,
	     iters / (total_us / 1e6));
}

/* One message and its completions, as the initiator sees them; *US is the time from post to the last completion. */
static int initiator_round(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
			   int i, double *us)
{
	struct post_opts round = *post;
	struct ibv_wc wc;
	double t0;

	round.imm = (uint32_t)i;
	if (post->op == OP_SEND && post_receive(p->conn, buf, buf->len))
		return -1;
	/* Before a READ, spoil the bytes a previous round fetched: the check must see this round's. */
	fill_pattern(buf->addr, buf->len, post->op == OP_READ ? READ_POISON_SEED : (uint8_t)i);
	t0 = now_us();
	if (post_operation(p->conn, buf, buf->len, &round) || poller_wait(p, &wc, POLL_TIMEOUT_MS) ||
	    check_received_length(&wc, buf->len))
		return -1;
	/* A ping-pong: the target sends the message back. */
	if (post->op == OP_SEND &&
	    (poller_wait(p, &wc, POLL_TIMEOUT_MS) || check_received_length(&wc, buf->len)))
		return -1;
	*us = now_us() - t0;
	if (post->op == OP_SEND && !check_pattern(buf->addr, buf->len, (uint8_t)i))
		return -1;
	if (post->op == OP_READ && !check_pattern(buf->addr, buf->len, 0))
		return -1;
	return 0;
}

int run_initiator_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int timeout_s)
{
	double *lat_us, start, us;
	int rc = -1;

	lat_us = calloc((size_t)iters, sizeof(*lat_us));
	if (!lat_us) {
		report_verb_error("calloc (latencies)", ENOMEM);
		return -1;
	}
	if (sync_with_peer(p, 'P', timeout_s))
		goto out_free;
	start = now_us();
	for (int i = 0; i < iters; i++) {
		if (initiator_round(p, buf, post, i, &us))
			goto out_free;
		lat_us[i] = us / (post->op == OP_SEND ? 2 : 1);
		if (i == 0)
			show("iterations", "the first shown above; %d more run quietly", iters - 1);
		show_quiet(i + 1 < iters);
	}
	show_stats(lat_us, iters, buf->len, now_us() - start, post->op);
	poller_report(p);
	rc = sync_with_peer(p, 'D', timeout_s);
out_free:
	show_quiet(false);
	free(lat_us);
	return rc;
}

/*
 * How many receives the target keeps posted.  A SEND ping-pong needs one: the
 * initiator waits for the reply, and the target posts the next receive before
 * it replies.  WRITE with immediate does not wait, so the next WRITE can come
 * before the target has taken the last one: with no receive posted, it would
 * be refused with an RNR NAK and retried after min_rnr_timer, a delay that no
 * completion reports.  A queue's worth of receives keeps that from happening.
 */
static int receives_ahead(enum wr_op op, int iters)
{
	if (op != OP_WRITE_IMM)
		return 1;
	return iters < QUEUE_DEPTH ? iters : QUEUE_DEPTH;
}

/* One message as the target sees it: take it, check it, send it back if it was a SEND. */
static int target_round(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
			int i, int iters)
{
	struct post_opts pong = *post;
	struct ibv_wc wc;

	if (poller_wait(p, &wc, POLL_TIMEOUT_MS) || check_received_length(&wc, buf->len))
		return -1;
	if (post->op == OP_WRITE_IMM && ntohl(wc.imm_data) != (uint32_t)i) {
		report_error("immediate value %u arrived as message %d: out of order", ntohl(wc.imm_data), i);
		return -1;
	}
	/* The next WRITE may already be landing in our buffer: only the last one holds still.
	 * Replace the receive just used, while messages remain to take one. */
	if (post->op == OP_WRITE_IMM)
		return i + QUEUE_DEPTH < iters ? post_receive(p->conn, buf, buf->len) : 0;
	/* ibv_rc_pingpong sends filler, not our pattern: only the length can be checked. */
	if (!p->rc_pingpong && !check_pattern(buf->addr, buf->len, (uint8_t)i))
		return -1;
	/* Post the next receive before answering, so the next message always finds one. */
	pong.op = OP_SEND;
	if (post_receive(p->conn, buf, buf->len) || post_operation(p->conn, buf, buf->len, &pong))
		return -1;
	return poller_wait(p, &wc, POLL_TIMEOUT_MS);
}

static void show_target_check(enum wr_op op, int iters, size_t len)
{
	switch (op) {
	case OP_SEND:
		show("data check", "%d messages of %zu bytes, every one arrived intact", iters, len);
		break;
	case OP_WRITE_IMM:
		show("data check", "immediate values 0 to %d arrived in order; the last message's "
		     "%zu bytes are intact", iters - 1, len);
		break;
	case OP_WRITE:
		show("data check", "the last of %d writes left %zu intact bytes", iters, len);
		break;
	case OP_READ:
		show("data check", "nothing arrives here: the peer read our %zu bytes %d times", len,
		     iters);
		break;
	}
}

int run_target_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		    int iters, int timeout_s)
{
	int rc = -1, left;

	if (op_needs_recv(post->op) &&
	    post_receives(p->conn, buf, buf->len, receives_ahead(post->op, iters)))
		return -1;
	if (post->op == OP_READ)
		fill_pattern(buf->addr, buf->len, 0);
	if (sync_with_peer(p, 'P', timeout_s))
		return -1;
	for (int i = 0; op_needs_recv(post->op) && i < iters; i++) {
		if (target_round(p, buf, post, i, iters))
			goto out_loud;
		if (i == 0)
			show("iterations", "the first shown above; %d more run quietly", iters - 1);
		show_quiet(i + 1 < iters);
	}
	show_quiet(false);
	if (sync_with_peer(p, 'D', timeout_s))
		goto out_loud;
	if (post->op != OP_READ && post->op != OP_SEND &&
	    !check_pattern(buf->addr, buf->len, (uint8_t)(iters - 1)))
		goto out_loud;
	left = drain_completions(p->conn);
	if (left < 0)
		goto out_loud;
	if (!op_needs_recv(post->op))
		show("target CQ", "%d completion(s) after %d one-sided operations", left, iters);
	if (p->rc_pingpong)
		show("data check", "%d messages of %zu bytes each; ibv_rc_pingpong's payload is filler, "
		     "so only the length was checked", iters, buf->len);
	else
		show_target_check(post->op, iters, buf->len);
	poller_report(p);
	rc = 0;
out_loud:
	show_quiet(false);
	return rc;
}
