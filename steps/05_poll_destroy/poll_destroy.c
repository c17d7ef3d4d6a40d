/* poll_destroy.c: stage 5 of the verbs workflow: poll the CQ (busy or event-driven) over many messages, and measure. */
#include "poll_destroy.h"
#include "exchange.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int poll_parse_option(int key, const char *arg, int *iters)
{
	if (key != 'n')
		return 1;
	return cli_parse_int("--iters", arg, 1, MAX_ITERS, iters);
}

void poller_init(struct poller *p, struct rdma_conn *conn, bool events)
{
	*p = (struct poller){ .conn = conn, .events = events };
}

/* Sleeps until the completion channel reports an event, then acknowledges it. */
static int wait_for_event(struct poller *p, int timeout_ms)
{
	struct pollfd pfd = { .fd = p->conn->channel->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_context;
	int rc;

	do
		rc = poll(&pfd, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
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
		show("completions", "%ld, every one success (busy polling: no events, no system calls)",
		     p->completions);
}

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

/* One message and its completions, as the initiator sees them. */
static int initiator_round(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
			   int i)
{
	struct post_opts round = *post;
	struct ibv_wc wc;

	round.imm = (uint32_t)i;
	if (post->op == OP_SEND && post_receive(p->conn, buf, buf->len))
		return -1;
	if (post->op != OP_READ)
		fill_pattern(buf->addr, buf->len, (uint8_t)i);
	if (post_operation(p->conn, buf, buf->len, &round) || poller_wait(p, &wc, POLL_TIMEOUT_MS))
		return -1;
	/* A ping-pong: the target sends the message back. */
	if (post->op == OP_SEND && poller_wait(p, &wc, POLL_TIMEOUT_MS))
		return -1;
	if (post->op == OP_SEND && !check_pattern(buf->addr, buf->len, (uint8_t)i))
		return -1;
	if (post->op == OP_READ && !check_pattern(buf->addr, buf->len, 0))
		return -1;
	return 0;
}

int run_initiator_loop(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
		       int iters, int timeout_s)
{
	double *lat_us, start, t0;
	int rc = -1;

	lat_us = calloc((size_t)iters, sizeof(*lat_us));
	if (!lat_us) {
		report_verb_error("calloc (latencies)", ENOMEM);
		return -1;
	}
	if (exchange_sync(p->conn->sock, 'P', timeout_s))
		goto out_free;
	start = now_us();
	for (int i = 0; i < iters; i++) {
		t0 = now_us();
		if (initiator_round(p, buf, post, i))
			goto out_free;
		lat_us[i] = (now_us() - t0) / (post->op == OP_SEND ? 2 : 1);
		if (i == 0)
			show("iterations", "the first shown above; %d more run quietly", iters - 1);
		show_quiet(i + 1 < iters);
	}
	show_stats(lat_us, iters, buf->len, now_us() - start, post->op);
	poller_report(p);
	rc = exchange_sync(p->conn->sock, 'D', timeout_s);
out_free:
	show_quiet(false);
	free(lat_us);
	return rc;
}

/* One message as the target sees it: take it, check it, send it back if it was a SEND. */
static int target_round(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
			int i)
{
	struct post_opts pong = *post;
	struct ibv_wc wc;

	if (poller_wait(p, &wc, POLL_TIMEOUT_MS))
		return -1;
	if (post->op == OP_WRITE_IMM && ntohl(wc.imm_data) != (uint32_t)i) {
		report_error("immediate value %u arrived as message %d: out of order", ntohl(wc.imm_data), i);
		return -1;
	}
	/* The next WRITE may already be landing in our buffer: only the last one holds still. */
	if (post->op == OP_WRITE_IMM)
		return post_receive(p->conn, buf, buf->len);
	if (!check_pattern(buf->addr, buf->len, (uint8_t)i))
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

	if (op_needs_recv(post->op) && post_receive(p->conn, buf, buf->len))
		return -1;
	if (post->op == OP_READ)
		fill_pattern(buf->addr, buf->len, 0);
	if (exchange_sync(p->conn->sock, 'P', timeout_s))
		return -1;
	for (int i = 0; op_needs_recv(post->op) && i < iters; i++) {
		if (target_round(p, buf, post, i))
			goto out_loud;
		if (i == 0)
			show("iterations", "the first shown above; %d more run quietly", iters - 1);
		show_quiet(i + 1 < iters);
	}
	show_quiet(false);
	if (exchange_sync(p->conn->sock, 'D', timeout_s))
		goto out_loud;
	if (post->op != OP_READ && post->op != OP_SEND &&
	    !check_pattern(buf->addr, buf->len, (uint8_t)(iters - 1)))
		goto out_loud;
	left = drain_completions(p->conn);
	if (left < 0)
		goto out_loud;
	if (!op_needs_recv(post->op))
		show("target CQ", "%d completion(s) after %d one-sided operations", left, iters);
	show_target_check(post->op, iters, buf->len);
	poller_report(p);
	rc = 0;
out_loud:
	show_quiet(false);
	return rc;
}
