/* ctl_msg.c: the job runtime: the one message of the rendezvous and the control channel, on the wire, sent and received whole. */
#include "ctl_msg.h"
#include "byteorder.h"
#include "clock.h"
#include "job_options.h"
#include "report.h"
#include "sock.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/*
 * One message format, versioned and checked field by field as step 03's:
 * magic, version, type, rank, world size, port, failed rank, three counts,
 * a text, two of step 03's exchange messages, and the peer of a pair or of a
 * stall (version 2 added it, 4 bytes and 4 reserved).  Multi-byte fields
 * travel in network byte order (byteorder.h).
 */
#define CTL_MAGIC "RDAR"
#define CTL_VERSION 2
#define CTL_QPS_AT (48 + CTL_TEXT_LEN)
#define CTL_PEER_AT (CTL_QPS_AT + 2 * EXCHANGE_MSG_LEN)
#define CTL_MSG_LEN (CTL_PEER_AT + 8)

/* The messages that carry QPs: the hello and its answer both, a pair its first. */
static int qps_carried(enum ctl_type t)
{
	return t == CTL_HELLO || t == CTL_NEIGHBOURS ? 2 : t == CTL_PAIR ? 1 : 0;
}

static void encode(const struct ctl_msg *m, uint8_t out[CTL_MSG_LEN])
{
	memset(out, 0, CTL_MSG_LEN);
	memcpy(out, CTL_MAGIC, 4);
	out[4] = CTL_VERSION;
	out[5] = (uint8_t)m->type;
	put_be32(out + 8, (uint32_t)m->rank);
	put_be32(out + 12, (uint32_t)m->world);
	put_be32(out + 16, (uint32_t)m->port);
	put_be32(out + 20, (uint32_t)m->failed);
	put_be64(out + 24, m->result.time_ns);
	put_be64(out + 32, m->result.wrong);
	put_be64(out + 40, m->result.bytes);
	memcpy(out + 48, m->text, strnlen(m->text, CTL_TEXT_LEN - 1));
	for (int i = 0; i < qps_carried(m->type); i++)
		exchange_encode(&m->qp[i], out + CTL_QPS_AT + i * EXCHANGE_MSG_LEN);
	put_be32(out + CTL_PEER_AT, (uint32_t)m->peer);
}

static bool known_type(uint8_t t)
{
	return t == CTL_HELLO || t == CTL_NEIGHBOURS || t == CTL_ABORT || t == CTL_RESULT ||
	       t == CTL_GO || t == CTL_PAIR || t == CTL_PORT || t == CTL_STALL;
}

/*
 * The name of the first number that no job can hold, or NULL: every rank a
 * message names is checked here, before any rank uses it as an index (rank 0
 * then checks a hello's against the job's own world size).  A world size or
 * a failed rank or peer not set travels as 0 or -1.
 */
static const char *bad_number(const struct ctl_msg *m)
{
	if (m->rank < 0 || m->rank >= JOB_MAX_RANKS)
		return "rank";
	if (m->world < 0 || m->world > JOB_MAX_RANKS)
		return "world size";
	if (m->failed < -1 || m->failed >= JOB_MAX_RANKS)
		return "failed rank";
	if (m->peer < -1 || m->peer >= JOB_MAX_RANKS)
		return "peer rank";
	return NULL;
}

/* Checks and decodes a message; returns 0, or -1 after saying which field is bad. */
static int decode(const uint8_t in[CTL_MSG_LEN], struct ctl_msg *m)
{
	const char *bad;

	if (memcmp(in, CTL_MAGIC, 4) || in[4] != CTL_VERSION || !known_type(in[5]) || in[6] || in[7] ||
	    in[48 + CTL_TEXT_LEN - 1]) {
		report_error("a rendezvous message with a bad %s: is every rank this program, of this "
			     "version, on the same -p?", memcmp(in, CTL_MAGIC, 4) ? "magic" :
			     in[4] != CTL_VERSION ? "version" : !known_type(in[5]) ? "type" : "padding or text");
		return -1;
	}
	*m = (struct ctl_msg){
		.type = (enum ctl_type)in[5],
		.rank = (int)get_be32(in + 8), .world = (int)get_be32(in + 12),
		.port = (int)get_be32(in + 16), .failed = (int)get_be32(in + 20),
		.result = { get_be64(in + 24), get_be64(in + 32), get_be64(in + 40) },
		.peer = (int)get_be32(in + CTL_PEER_AT),
	};
	bad = bad_number(m);
	if (bad) {
		report_error("a rendezvous message with a bad %s (rank %d, world size %d, failed rank %d, "
			     "peer %d): a job holds ranks 0 to %d", bad, m->rank, m->world, m->failed,
			     m->peer, JOB_MAX_RANKS - 1);
		return -1;
	}
	memcpy(m->text, in + 48, CTL_TEXT_LEN);
	for (int i = 0; i < qps_carried(m->type); i++)
		if (exchange_decode(in + CTL_QPS_AT + i * EXCHANGE_MSG_LEN, &m->qp[i]))
			return -1;
	return 0;
}

struct ctl_msg ctl_msg_abort(int failed, const char *cause)
{
	struct ctl_msg m = { .type = CTL_ABORT, .failed = failed };

	snprintf(m.text, sizeof(m.text), "%s", cause);
	return m;
}

int ctl_msg_send(int fd, const struct ctl_msg *m, int timeout_s)
{
	struct timespec deadline = deadline_in(timeout_s);
	uint8_t out[CTL_MSG_LEN];

	encode(m, out);
	return sock_send_quiet(fd, out, sizeof(out), &deadline);
}

int ctl_msg_recv(int fd, struct ctl_msg *m, long timeout_ms)
{
	struct timespec deadline = deadline_in_ms(timeout_ms);
	uint8_t in[CTL_MSG_LEN];
	size_t have = 0;
	int rc = sock_recv_quiet(fd, in, sizeof(in), &have, &deadline);

	return rc ? rc : decode(in, m);
}
