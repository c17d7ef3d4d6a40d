/* credits.c: stage 5: receive credits: the target says how many receives it has posted, and the initiator never sends past them. */
#include "credits.h"
#include "clock.h"
#include "report.h"
#include "sock.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

/* The target sends its count each time it has posted this many more receives, and after its last. */
#define CREDIT_BATCH 16

/*
 * A credit on the side channel, 5 bytes:
 *   offset 0: 'C'
 *   offset 1: the receives the target has posted so far in this run, uint32, big-endian
 */
#define CREDIT_TAG 'C'
#define CREDIT_LEN 5

int credits_first(int iters, const struct rdma_conn *conn)
{
	return iters < (int)conn->recv_depth ? iters : (int)conn->recv_depth;
}

void credits_init(struct credits *c, const struct poller *p, enum wr_op op, bool answers, int iters,
		  int timeout_s)
{
	*c = (struct credits){
		/* ibv_rc_pingpong knows no credits; it only runs SEND ping-pongs, which need none. */
		.on = op_needs_recv(op) && !answers && !p->rc_pingpong,
		.sock = p->conn->sock,
		.iters = iters,
		.timeout_s = timeout_s,
	};
	if (c->on)
		show("credits", "the target posts a queue's worth of receives first (%d here), then "
		     "sends its count over the side channel, and again each time it has posted %d "
		     "more; the initiator never sends past it", credits_first(iters, p->conn),
		     CREDIT_BATCH);
}

/* Reads one credit and checks it: its tag, and a count above the last one and within the run. */
static int read_credit(struct credits *c)
{
	unsigned char msg[CREDIT_LEN];
	uint32_t total;

	if (sock_recv_all(c->sock, msg, sizeof(msg), c->timeout_s))
		return -1;
	if (msg[0] != CREDIT_TAG) {
		report_error("out of step with the peer: expected a credit ('%c') on the side channel, "
			     "got byte 0x%02x", CREDIT_TAG, msg[0]);
		return -1;
	}
	memcpy(&total, msg + 1, sizeof(total));
	total = ntohl(total);
	if (total <= (uint32_t)c->granted || total > (uint32_t)c->iters) {
		report_error("the peer's credit counts %u receives posted: it must be above the %d it "
			     "counted before and at most the run's %d messages", total, c->granted, c->iters);
		return -1;
	}
	c->granted = (int)total;
	c->updates++;
	return 0;
}

int credits_wait_for(struct credits *c, int n)
{
	double start, waited;

	if (!c->on || n < c->granted)
		return 0;
	start = now_us();
	while (n >= c->granted)
		if (read_credit(c))
			return -1;
	waited = now_us() - start;
	if (waited > c->longest_wait_us)
		c->longest_wait_us = waited;
	return 0;
}

/* Sends TOTAL, the receives posted so far in the run. */
static int send_credit(struct credits *c, int total)
{
	unsigned char msg[CREDIT_LEN] = { CREDIT_TAG };
	uint32_t count = htonl((uint32_t)total);

	memcpy(msg + 1, &count, sizeof(count));
	if (sock_send_all(c->sock, msg, sizeof(msg), c->timeout_s))
		return -1;
	c->granted = total;
	c->updates++;
	return 0;
}

int credits_grant_first(struct credits *c, int posted)
{
	return c->on ? send_credit(c, posted) : 0;
}

int credits_grant(struct credits *c, int total)
{
	if (!c->on || (total - c->granted < CREDIT_BATCH && total < c->iters))
		return 0;
	return send_credit(c, total);
}

void credits_report(const struct credits *c, bool initiator)
{
	if (!c->on)
		return;
	if (initiator)
		show("credits", "%d count(s) read from the target, the last %d; the longest wait for one "
		     "%.1f ms", c->updates, c->granted, c->longest_wait_us / 1000);
	else
		show("credits", "%d count(s) sent to the initiator, the last %d: it sent no message "
		     "before its receive was posted", c->updates, c->granted);
}
