/* rc_pingpong_wire.c: the out-of-band exchange of rdma-core's ibv_rc_pingpong, a second codec beside our own. */
#include "rc_pingpong_wire.h"
#include "device.h"
#include "report.h"
#include "sock.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void rc_pingpong_encode(const struct peer_info *info, char msg[RC_PINGPONG_MSG_LEN])
{
	int n = snprintf(msg, RC_PINGPONG_MSG_LEN, "%04x:%06x:%06x:", info->lid, info->qpn, info->psn);

	for (int i = 0; i < 16; i++)
		n += snprintf(msg + n, RC_PINGPONG_MSG_LEN - (size_t)n, "%02x", info->gid.raw[i]);
}

/* Whether MSG[FROM..FROM+LEN) are hex digits. */
static int all_hex(const char *msg, int from, int len)
{
	for (int i = from; i < from + len; i++)
		if (!isxdigit((unsigned char)msg[i]))
			return 0;
	return 1;
}

void rc_pingpong_printable(const char msg[RC_PINGPONG_MSG_LEN], char shown[RC_PINGPONG_MSG_LEN])
{
	int i;

	for (i = 0; i < RC_PINGPONG_MSG_LEN - 1 && msg[i]; i++)
		shown[i] = isprint((unsigned char)msg[i]) ? msg[i] : '?';
	shown[i] = '\0';
}

int rc_pingpong_decode(const char msg[RC_PINGPONG_MSG_LEN], struct peer_info *info)
{
	unsigned lid, qpn, psn, byte;
	char shown[RC_PINGPONG_MSG_LEN];

	if (msg[RC_PINGPONG_MSG_LEN - 1] != '\0' || msg[4] != ':' || msg[11] != ':' ||
	    msg[18] != ':' || !all_hex(msg, 0, 4) || !all_hex(msg, 5, 6) || !all_hex(msg, 12, 6) ||
	    !all_hex(msg, 19, 32) || sscanf(msg, "%4x:%6x:%6x:", &lid, &qpn, &psn) != 3) {
		rc_pingpong_printable(msg, shown);
		report_error("the peer's line is not in ibv_rc_pingpong's format LLLL:QQQQQQ:PPPPPP:"
			     "<32 hex digits of GID> (hex, NUL-terminated, 52 bytes); got \"%s\"%s", shown,
			     memcmp(msg, EXCHANGE_MAGIC, 4) ? "" :
			     ": that is our own exchange; start this side without --peer=rc_pingpong");
		return -1;
	}
	*info = (struct peer_info){ .lid = (uint16_t)lid, .qpn = qpn, .psn = psn, .mtu = MTU_NOT_SENT,
				    .rd_atomic = RD_NOT_SENT, .rd_accept = RD_NOT_SENT };
	for (int i = 0; i < 16; i++) {
		sscanf(msg + 19 + 2 * i, "%2x", &byte);
		info->gid.raw[i] = (uint8_t)byte;
	}
	if (qpn == 0) {
		report_error("the peer's line gives QPN 0, which no RC QP has");
		return -1;
	}
	if (lid == 0 && gid_is_zero(&info->gid)) {
		report_error("the peer's line gives LID 0 and an all-zero GID, nothing to reach it "
			     "by: run ibv_rc_pingpong with -g INDEX (its GID index, as 'ibv_devinfo -v' "
			     "lists them)");
		return -1;
	}
	return 0;
}

const char *rc_pingpong_line_named(const uint8_t start[EXCHANGE_START_LEN])
{
	for (int i = 0; i < 11; i++)
		if (i == 4 ? start[i] != ':' : !isxdigit(start[i]))
			return NULL;
	if (start[11] != ':')
		return NULL;
	return "it is ibv_rc_pingpong's line (LLLL:QQQQQQ:...): start 05_poll_destroy with "
	       "--peer=rc_pingpong to speak to it";
}

/* The peer's bytes are not trusted to end in a NUL or to be printable. */
static void show_line(const char *key, const char msg[RC_PINGPONG_MSG_LEN])
{
	char shown[RC_PINGPONG_MSG_LEN];

	rc_pingpong_printable(msg, shown);
	show(key, "\"%s\"", shown);
}

static int server_exchange(struct rdma_dev *dev, struct rdma_conn *conn, int timeout_s)
{
	char out[RC_PINGPONG_MSG_LEN], in[RC_PINGPONG_MSG_LEN], done[sizeof(RC_PINGPONG_DONE)];

	if (sock_recv_all(conn->sock, in, sizeof(in), timeout_s))
		return -1;
	show_line("received line", in);
	if (rc_pingpong_decode(in, &conn->remote))
		return -1;
	exchange_show_qp("remote", &conn->remote);
	/* ibv_rc_pingpong's server is ready to receive before it answers; so are we. */
	if (bring_up_qp(dev, conn))
		return -1;
	rc_pingpong_encode(&conn->local, out);
	show_line("sent line", out);
	if (sock_send_all(conn->sock, out, sizeof(out), timeout_s) ||
	    sock_recv_all(conn->sock, done, sizeof(done), timeout_s))
		return -1;
	if (memcmp(done, RC_PINGPONG_DONE, sizeof(done))) {
		report_error("the peer did not end the exchange with \"done\"");
		return -1;
	}
	return 0;
}

static int client_exchange(struct rdma_dev *dev, struct rdma_conn *conn, int timeout_s)
{
	char out[RC_PINGPONG_MSG_LEN], in[RC_PINGPONG_MSG_LEN];

	rc_pingpong_encode(&conn->local, out);
	show_line("sent line", out);
	if (sock_send_all(conn->sock, out, sizeof(out), timeout_s) ||
	    sock_recv_all(conn->sock, in, sizeof(in), timeout_s))
		return -1;
	show_line("received line", in);
	if (rc_pingpong_decode(in, &conn->remote) ||
	    sock_send_all(conn->sock, RC_PINGPONG_DONE, sizeof(RC_PINGPONG_DONE), timeout_s))
		return -1;
	exchange_show_qp("remote", &conn->remote);
	return bring_up_qp(dev, conn);
}

int connect_qp_rc_pingpong(struct rdma_dev *dev, const struct cli_common *opts,
			   enum ibv_mtu path_mtu, struct rdma_conn *conn)
{
	show("role", "%s, speaking ibv_rc_pingpong's exchange", opts->host ? "client" : "server");
	conn->sock = opts->host ? sock_connect(opts->host, opts->tcp_port, opts->timeout_s, NULL)
				  : sock_accept_one(opts->tcp_port, opts->timeout_s);
	if (conn->sock < 0)
		return -1;
	/* The line carries no MTU: both sides must be given the same -m. */
	conn->local.mtu = path_mtu;
	show("path MTU", "%d, from -m: ibv_rc_pingpong does not send its MTU, so give both "
	     "sides the same -m", mtu_bytes(path_mtu));
	exchange_show_qp("local", &conn->local);
	return opts->host ? client_exchange(dev, conn, opts->timeout_s)
			    : server_exchange(dev, conn, opts->timeout_s);
}
