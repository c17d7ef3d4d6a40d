/* exchange.c: the out-of-band exchange: what each side must learn about the other before its QP can connect. */
#include "exchange.h"
#include "byteorder.h"
#include "device.h"
#include "report.h"
#include "sock.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define PSN_MASK 0xffffffu
#define QPN_MASK 0xffffffu

/* Multi-byte fields travel in network byte order (big-endian): byteorder.h. */

void exchange_encode(const struct peer_info *info, uint8_t msg[EXCHANGE_MSG_LEN])
{
	memcpy(msg, EXCHANGE_MAGIC, 4);
	msg[4] = EXCHANGE_VERSION;
	msg[5] = (uint8_t)info->mtu;
	put_be16(msg + 6, info->lid);
	put_be32(msg + 8, info->qpn);
	put_be32(msg + 12, info->psn);
	put_be32(msg + 16, info->rkey);
	msg[20] = info->rd_atomic;
	msg[21] = info->rd_accept;
	put_be16(msg + 22, 0);
	put_be64(msg + 24, info->addr);
	put_be64(msg + 32, info->len);
	memcpy(msg + 40, info->gid.raw, 16);
	memset(msg + 56, 0, EXCHANGE_OPTIONS_LEN);
	memcpy(msg + 56, info->options, strnlen(info->options, EXCHANGE_OPTIONS_LEN - 1));
}

void exchange_set_options(struct peer_info *info, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(info->options, sizeof(info->options), fmt, ap);
	va_end(ap);
}

/* Printable ASCII, then NULs to the end: the peer's text is shown, so it must be safe to show. */
static bool options_text_valid(const uint8_t *text)
{
	size_t len = strnlen((const char *)text, EXCHANGE_OPTIONS_LEN);

	if (len == EXCHANGE_OPTIONS_LEN)
		return false;
	for (size_t i = 0; i < EXCHANGE_OPTIONS_LEN; i++)
		if (i < len ? !isprint(text[i]) : text[i] != 0)
			return false;
	return true;
}

static int bad_field(const char *field, unsigned long long value, const char *why)
{
	report_error("the peer's exchange message has a bad %s (%llu): %s", field, value, why);
	return -1;
}

/*
 * The magic and the version, from the first EXCHANGE_START_LEN bytes: a
 * stranger is named at once, without waiting for a whole message it may
 * never send.
 */
static int check_start(const uint8_t msg[EXCHANGE_START_LEN], stranger_namer *name_stranger)
{
	if (memcmp(msg, EXCHANGE_MAGIC, 4)) {
		const char *who = name_stranger ? name_stranger(msg) : NULL;

		report_error("the peer's exchange message does not start with \"%s\": %s",
			     EXCHANGE_MAGIC, who ? who : "is the peer an rdma-steps program of step 03 "
			     "or later, on the same -p port?");
		return -1;
	}
	if (msg[4] != EXCHANGE_VERSION)
		return bad_field("version", msg[4], "this program speaks version 3 only (is the peer "
				 "an older rdma-steps build? rebuild both)");
	return 0;
}

int exchange_decode(const uint8_t msg[EXCHANGE_MSG_LEN], struct peer_info *info)
{
	if (check_start(msg, NULL))
		return -1;
	*info = (struct peer_info){
		.mtu = (enum ibv_mtu)msg[5],
		.lid = get_be16(msg + 6),
		.qpn = get_be32(msg + 8),
		.psn = get_be32(msg + 12),
		.rkey = get_be32(msg + 16),
		.rd_atomic = msg[20],
		.rd_accept = msg[21],
		.addr = get_be64(msg + 24),
		.len = get_be64(msg + 32),
	};
	memcpy(info->gid.raw, msg + 40, 16);
	if (info->mtu < IBV_MTU_256 || info->mtu > IBV_MTU_4096)
		return bad_field("MTU code", info->mtu, "must be 1 (256) to 5 (4096)");
	/* 0 is a device that initiates (or serves) no READ or atomic: it still SENDs and WRITEs. */
	if (info->rd_atomic > EXCHANGE_RD_ATOMIC_MAX)
		return bad_field("rd_atomic offer", info->rd_atomic, "must be 0 to 128");
	if (info->rd_accept > EXCHANGE_RD_ATOMIC_MAX)
		return bad_field("rd_atomic accept", info->rd_accept, "must be 0 to 128");
	/* Version 3 sends zeros here: anything else is not a version 3 message. */
	if (get_be16(msg + 22))
		return bad_field("reserved field", get_be16(msg + 22), "must be 0 in version 3");
	if (info->qpn == 0 || info->qpn > QPN_MASK)
		return bad_field("QPN", info->qpn, "must be 1 to 0xffffff");
	if (info->psn > PSN_MASK)
		return bad_field("PSN", info->psn, "must fit in 24 bits");
	if (info->addr == 0)
		return bad_field("buffer address", info->addr, "must be non-zero");
	if (info->len == 0)
		return bad_field("buffer length", info->len, "must be non-zero");
	if (info->lid == 0 && gid_is_zero(&info->gid))
		return bad_field("address", 0, "neither a LID nor a GID to reach the peer by");
	if (!options_text_valid(msg + 56)) {
		report_error("the peer's exchange message has a bad options text (bytes 56 to %d): "
			     "must be printable ASCII, then NULs to the end", EXCHANGE_MSG_LEN - 1);
		return -1;
	}
	memcpy(info->options, msg + 56, EXCHANGE_OPTIONS_LEN);
	return 0;
}

/* Both sides check; each stops at once, naming both sets, so neither waits on the other. */
static int check_same_options(const struct peer_info *local, const struct peer_info *remote)
{
	if (!strcmp(local->options, remote->options))
		return 0;
	report_error("peer: %s; here: %s: give both sides the same options",
		     remote->options[0] ? remote->options : "(none: a step 03 program)",
		     local->options[0] ? local->options : "(none: a step 03 program)");
	return -1;
}

int exchange_peer_info(int fd, const struct peer_info *local, struct peer_info *remote,
		       int timeout_s, stranger_namer *name_stranger)
{
	uint8_t out[EXCHANGE_MSG_LEN], in[EXCHANGE_MSG_LEN];

	exchange_encode(local, out);
	if (sock_send_all(fd, out, sizeof(out), timeout_s) ||
	    sock_recv_all(fd, in, EXCHANGE_START_LEN, timeout_s) ||
	    check_start(in, name_stranger) ||
	    sock_recv_more(fd, in, EXCHANGE_START_LEN, sizeof(in), timeout_s))
		return -1;
	if (exchange_decode(in, remote))
		return -1;
	return check_same_options(local, remote);
}

void exchange_show_qp(const char *who, const struct peer_info *info)
{
	char key[32], gid[GID_STR_LEN], mtu[16] = "not sent";

	gid_format(&info->gid, gid, sizeof(gid));
	snprintf(key, sizeof(key), "%s QP", who);
	if (info->mtu != MTU_NOT_SENT)
		snprintf(mtu, sizeof(mtu), "%d", mtu_bytes(info->mtu));
	show(key, "QPN 0x%06x, PSN 0x%06x, GID %s, LID 0x%04x, MTU %s", info->qpn, info->psn,
	     gid, info->lid, mtu);
}

void exchange_show(const char *who, const struct peer_info *info)
{
	char key[32];

	exchange_show_qp(who, info);
	snprintf(key, sizeof(key), "%s buffer", who);
	show(key, "addr 0x%llx, length %llu, rkey 0x%x", (unsigned long long)info->addr,
	     (unsigned long long)info->len, info->rkey);
	if (info->options[0]) {
		snprintf(key, sizeof(key), "%s options", who);
		show(key, "%s (must be the same on both sides)", info->options);
	}
}

int exchange_sync(int fd, char tag, int timeout_s)
{
	char got;

	if (sock_send_all(fd, &tag, 1, timeout_s) || sock_recv_all(fd, &got, 1, timeout_s))
		return -1;
	if (got != tag) {
		/* The peer's byte is shown as a character only when it is safe to show. */
		if (isprint((unsigned char)got))
			report_error("out of step with the peer: expected '%c' on the side channel, got '%c'",
				     tag, got);
		else
			report_error("out of step with the peer: expected '%c' on the side channel, got "
				     "byte 0x%02x", tag, (unsigned char)got);
		return -1;
	}
	return 0;
}
