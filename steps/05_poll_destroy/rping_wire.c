/* rping_wire.c: rping's protocol (rdma-core's librdmacm example), spoken in either role over an rdma_cm connection. */
#include "rping_wire.h"
#include "byteorder.h"
#include "completion.h"
#include "post_wr.h"
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const struct foreign_peer rping_peer = {
	.name = "rping",
	.option = "--peer=rping",
	.client = "rping -c",
};

/* rping's letters run from 'A' (65) to 'z' (122), and each ping starts one further on. */
#define RPING_FIRST_CHAR 65
#define RPING_LAST_CHAR 122

void rping_fill(char *buf, size_t size, int ping)
{
	int cc = snprintf(buf, size, "rdma-ping-%d: ", ping);
	unsigned char c = (unsigned char)(RPING_FIRST_CHAR +
					  ping % (RPING_LAST_CHAR - RPING_FIRST_CHAR + 1));

	for (size_t i = (size_t)cc; i < size; i++) {
		buf[i] = (char)c;
		c = c == RPING_LAST_CHAR ? RPING_FIRST_CHAR : c + 1;
	}
	buf[size - 1] = 0;
}

void rping_encode(uint8_t msg[RPING_MSG_LEN], uint64_t addr, uint32_t rkey, uint32_t len)
{
	put_be64(msg, addr);
	put_be32(msg + 8, rkey);
	put_be32(msg + 12, len);
}

void rping_decode(const uint8_t msg[RPING_MSG_LEN], uint64_t *addr, uint32_t *rkey, uint32_t *len)
{
	*addr = get_be64(msg);
	*rkey = get_be32(msg + 8);
	*len = get_be32(msg + 12);
}

int rping_check_size(size_t size)
{
	if (size >= RPING_MIN_SIZE && size <= RPING_MAX_SIZE)
		return 0;
	report_error("--size: rping's buffers are %d to %d bytes (its -S), not %zu: give -s in that "
		     "range, the same as rping's -S (64 by default)", RPING_MIN_SIZE, RPING_MAX_SIZE,
		     size);
	return -1;
}

static int register_region(struct session *s, size_t size, int access, const char *why,
			   struct rdma_buf *buf)
{
	const struct reg_mr_opts opts = { .size = size, .access = access, .access_why = why };

	return register_buffer(&s->dev, &opts, buf);
}

/* The one receive rping keeps posted, into the receive slot: stage 4's receive. */
static int post_rping_recv(struct session *s, struct rping *r)
{
	return post_receive(&s->conn, &r->msgs, RPING_MSG_LEN);
}

int rping_prepare(struct session *s, struct rping *r, bool client)
{
	*r = (struct rping){ 0 };
	show_heading("stage 2, for rping: its message slots");
	if (register_region(s, 2 * RPING_MSG_LEN, IBV_ACCESS_LOCAL_WRITE,
			    "rping's 16-byte messages: a receive slot and a send slot", &r->msgs))
		return -1;
	if (client && register_region(s, s->buf.len, IBV_ACCESS_REMOTE_READ,
				      "the ping rping's server reads: remote_read only", &r->source))
		return -1;
	if (post_rping_recv(s, r))
		return -1;
	show("rping's receive", "one kept posted, as rping keeps one, and posted again after each "
	     "message");
	return 0;
}

/* The send slot, bytes 16 to 31 of the message slots: what each SEND carries. */
static struct rdma_buf send_slot(const struct rping *r)
{
	struct rdma_buf slot = r->msgs;

	slot.addr = (uint8_t *)r->msgs.addr + RPING_MSG_LEN;
	slot.len = RPING_MSG_LEN;
	return slot;
}

/*
 * Posts one signalled work request through stage 4: a SEND of the send slot,
 * or an RDMA READ or WRITE of LEN bytes of the buffer, at the address and
 * rkey the peer's last message gave.
 */
static int post_rping_send(struct session *s, struct rping *r, enum wr_op op,
			   uint64_t remote_addr, uint32_t rkey, uint32_t len)
{
	const struct post_opts opts = { .op = op, .no_inline = true };
	const struct rdma_buf slot = send_slot(r);
	struct prepared_op wr;

	if (op == OP_SEND) {
		prepare_operation(&wr, &s->conn, &slot, RPING_MSG_LEN, &opts);
	} else {
		prepare_operation(&wr, &s->conn, &s->buf, len, &opts);
		prepared_target(&wr, remote_addr, rkey);
	}
	return post_prepared(&s->conn, &wr);
}

/*
 * Takes completions until WANT (a message arrived, or our READ or WRITE
 * completed) has come; a SEND's completion only retires it.  Completions of
 * the two queues may come in either order.
 */
static int await(struct session *s, struct rping *r, bool want_recv)
{
	struct ibv_wc wc;

	while (want_recv ? !r->recv_ready : !r->rdma_done) {
		if (take_good_completion_cm(&s->conn, &s->cm, &wc, POLL_TIMEOUT_MS))
			return -1;
		if (wc.wr_id == WR_ID_RECV) {
			r->recv_ready = true;
			r->recv_len = wc.byte_len;
		} else if (wc.opcode == IBV_WC_RDMA_READ || wc.opcode == IBV_WC_RDMA_WRITE) {
			r->rdma_done = true;
		}
	}
	if (want_recv)
		r->recv_ready = false;
	else
		r->rdma_done = false;
	return 0;
}

/* The next message: exactly 16 bytes, decoded; the receive is posted again at once. */
static int take_message(struct session *s, struct rping *r, uint64_t *addr, uint32_t *rkey,
			uint32_t *len)
{
	if (await(s, r, true))
		return -1;
	if (r->recv_len != RPING_MSG_LEN) {
		report_error("the peer sent a %u-byte message where rping's are exactly %d: is it rping, "
			     "or 05_poll_destroy --peer=rping?", r->recv_len, RPING_MSG_LEN);
		return -1;
	}
	rping_decode(r->msgs.addr, addr, rkey, len);
	return post_rping_recv(s, r);
}

static int send_message(struct session *s, struct rping *r, uint64_t addr, uint32_t rkey,
			uint32_t len)
{
	rping_encode((uint8_t *)r->msgs.addr + RPING_MSG_LEN, addr, rkey, len);
	return post_rping_send(s, r, OP_SEND, 0, 0, RPING_MSG_LEN);
}

/* The bytes rping's client made for PING, in BUF: each one checked, the first wrong one named. */
static int check_ping(const char *buf, size_t len, int ping, char *want)
{
	rping_fill(want, len, ping);
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != want[i]) {
			report_error("ping %d: byte %zu is 0x%02x, where rping's client puts 0x%02x: the "
				     "data did not arrive intact", ping, i, (unsigned char)buf[i],
				     (unsigned char)want[i]);
			return -1;
		}
	}
	return 0;
}

/* One ping as rping's server: READ the client's bytes, check them, go ahead, WRITE them back, go ahead. */
static int serve_ping(struct session *s, struct rping *r, int ping, char *want)
{
	uint64_t addr;
	uint32_t rkey, len;

	if (take_message(s, r, &addr, &rkey, &len))
		return -1;
	show("rping message", "ping %d: read %u bytes at 0x%llx, rkey 0x%x", ping, len,
	     (unsigned long long)addr, rkey);
	if (len != s->buf.len) {
		report_error("rping advertises %u bytes where this side has %zu: give both sides the "
			     "same size (-s here, -S to rping)", len, s->buf.len);
		return -1;
	}
	if (post_rping_send(s, r, OP_READ, addr, rkey, len) || await(s, r, false) ||
	    check_ping(s->buf.addr, len, ping, want) || send_message(s, r, 0, 0, 0))
		return -1;
	show("server ping data", "%s", (char *)s->buf.addr);
	if (take_message(s, r, &addr, &rkey, &len))
		return -1;
	show("rping message", "ping %d: write %u bytes at 0x%llx, rkey 0x%x", ping, len,
	     (unsigned long long)addr, rkey);
	/* rping writes the string back, its NUL included: the whole buffer. */
	if (post_rping_send(s, r, OP_WRITE, addr, rkey, (uint32_t)s->buf.len) ||
	    await(s, r, false))
		return -1;
	return send_message(s, r, 0, 0, 0);
}

/* One ping as rping's client: advertise the source, wait; advertise the sink, wait; compare. */
static int ask_ping(struct session *s, struct rping *r, int ping)
{
	uint64_t addr;
	uint32_t rkey, len, size = (uint32_t)s->buf.len;

	rping_fill(r->source.addr, size, ping);
	memset(s->buf.addr, 0, size);
	if (send_message(s, r, (uintptr_t)r->source.addr, r->source.mr->rkey, size) ||
	    take_message(s, r, &addr, &rkey, &len) ||
	    send_message(s, r, (uintptr_t)s->buf.addr, s->buf.mr->rkey, size) ||
	    take_message(s, r, &addr, &rkey, &len))
		return -1;
	if (memcmp(r->source.addr, s->buf.addr, size)) {
		report_error("ping %d: the bytes rping's server wrote back differ from the ones it "
			     "read: data mismatch", ping);
		return -1;
	}
	show("ping data", "%s", (char *)s->buf.addr);
	return 0;
}

int rping_run(struct session *s, struct rping *r, int iters, bool client)
{
	char want[RPING_MAX_SIZE];
	int rc = 0, ping;

	show_heading(client ? "stages 4 and 5: rping's client: advertise, let the server READ and "
			      "WRITE, compare" :
			      "stages 4 and 5: rping's server: RDMA READ each ping, WRITE it back");
	for (ping = 0; ping < iters && !rc; ping++) {
		show_quiet(ping > 0 && ping + 1 < iters);
		rc = client ? ask_ping(s, r, ping) : serve_ping(s, r, ping, want);
	}
	show_quiet(false);
	if (rc && client && ping == 1 && s->cm.disconnected)
		report_error("rping's server ends the connection when the buffer this side advertises "
			     "is larger than its own: this side has %zu bytes (-s), rping has 64 unless "
			     "given -S; give both the same size", s->buf.len);
	if (rc)
		return -1;
	show("data check", "%d pings of %zu bytes, each %s", iters, s->buf.len,
	     client ? "read by the server, written back and compared here (rping -V's check)"
		    : "read from rping's client and checked byte by byte against what it puts there");
	/* rping's client disconnects after its -C pings: our server waits for that DREQ. */
	return client ? 0 : cm_wait_disconnect(&s->cm);
}

int rping_release(struct rping *r)
{
	return release_buffer(&r->source) + release_buffer(&r->msgs);
}
