/* poll_options.c: stage 5's part of the command line: -n, --depth, --peer, -m and --recover. */
#include "poll_options.h"
#include "device.h"
#include "report.h"

#include <string.h>

void poll_opts_default(struct poll_opts *opts)
{
	*opts = (struct poll_opts){ .iters = DEFAULT_ITERS, .depth = 1, .mtu = IBV_MTU_1024 };
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
	{ "iters", 'n', "N", "number of messages (default: 1000)", CLI_INT_AT(struct poll_opts, iters, 1, MAX_ITERS) },
	{ "depth", 'D', "N", "work requests in flight, 1 to 64 and at most the device's queue "
	  "(default: 1, one at a time, each timed); above 1 a completion is asked for on every "
	  "N/2th, for bandwidth", CLI_INT_AT(struct poll_opts, depth, 1, QUEUE_DEPTH) },
	{ "peer", CLI_KEY_PEER, "PEER", "rc_pingpong: speak ibv_rc_pingpong's exchange, to run against it; rping: connect through rdma_cm and speak rping's protocol (-n pings of -s bytes; without -s, 64, rping's default)", CLI_STAGE_PARSES },
	{ "mtu", 'm', "BYTES", "with --peer=rc_pingpong: path MTU, 256 to 4096 (default: 1024, as it)", CLI_STAGE_PARSES },
	{ "recover", 'R', NULL, "first break the QP with a bad RDMA WRITE, then bring it back from "
	  "ERR to RTS (both sides)", CLI_FLAG_AT(struct poll_opts, recover) },
	{ 0 },
};

/* -m and --peer; cli_parse fills the others, as their entries say. */
int poll_parse_option(int key, const char *arg, void *ctx)
{
	struct poll_opts *opts = ctx;

	if (key == 'm') {
		opts->mtu_given = true;
		return parse_mtu(arg, &opts->mtu);
	}
	/* --peer */
	opts->rc_pingpong = !strcmp(arg, "rc_pingpong");
	opts->rping = !strcmp(arg, "rping");
	if (!opts->rc_pingpong && !opts->rping) {
		report_error("--peer: '%s' is not a peer this program can speak to; the choices "
			     "are rc_pingpong and rping (leave --peer out to talk to rdma-steps)", arg);
		return -1;
	}
	return 0;
}

/* rping has one protocol: SEND, RDMA READ and RDMA WRITE, one ping at a time, busy-polled here. */
static int check_rping(const struct poll_opts *opts, enum wr_op op, bool events)
{
	const char *bad = op != OP_SEND ? "-o" : opts->depth > 1 ? "--depth" :
			  opts->mtu_given ? "--mtu" : opts->recover ? "--recover" :
			  events ? "--events" : NULL;

	if (!bad)
		return 0;
	report_error("%s does not go with --peer=rping: rping's protocol is its own (a SEND, an "
		     "RDMA READ and an RDMA WRITE per ping, one ping at a time), and rdma_cm drives "
		     "its QP: give -n, -s, -t and -p only", bad);
	return -1;
}

int poll_opts_check(const struct poll_opts *opts, enum wr_op op, bool events)
{
	if (opts->rping)
		return check_rping(opts, op, events);
	if (!op_is_basic(op)) {
		report_error("--op: step 05 loops send, write, write_imm or read; the atomics and "
			     "flush are step 04's");
		return -1;
	}
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
	if (opts->rc_pingpong && opts->depth > 1) {
		report_error("--depth goes with an rdma-steps peer: ibv_rc_pingpong answers each "
			     "message before the next, one at a time");
		return -1;
	}
	if (opts->rc_pingpong && opts->recover) {
		report_error("--recover needs an rdma-steps peer: ibv_rc_pingpong cannot exchange "
			     "addresses a second time");
		return -1;
	}
	return 0;
}
