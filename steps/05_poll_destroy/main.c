/* main.c: step 05: run many messages, wait for completions by busy polling or by events, report latency and bandwidth. */
#include "cm.h"
#include "cq_qp_rts.h"
#include "dev_limits.h"
#include "exchange.h"
#include "open_pd.h"
#include "pause.h"
#include "pingpong.h"
#include "pipeline.h"
#include "poll_options.h"
#include "poller.h"
#include "post_wr.h"
#include "rc_pingpong_wire.h"
#include "recovery.h"
#include "reg_mr.h"
#include "report.h"
#include "rping_wire.h"
#include "session.h"

#include <stdio.h>
#include <stdlib.h>

static const char purpose[] =
	"Step 05: on top of steps 01-04, move -n messages of -s bytes, wait for each\n"
	"completion by busy polling or (with --events) on a completion channel, report\n"
	"latency and bandwidth, then destroy everything in reverse order of creation.\n"
	"With write_imm the immediate value carries the message number.\n"
	"With --depth N it keeps N in flight and reports bandwidth, as ib_write_bw does.\n"
	"With --peer=rc_pingpong it runs against rdma-core's ibv_rc_pingpong, either role;\n"
	"with --peer=rping against rping, connected through rdma_cm.\n"
	"With --recover it first breaks the QP on purpose and brings it back to RTS.";

struct step_opts {
	struct reg_mr_opts mr;
	struct conn_opts conn;
	struct post_opts post;
	struct poll_opts poll;
	bool client;			/* HOST given */
};

/*
 * What this run asks of the device, after stage 1 and before anything else
 * is created (session_open calls it through stage 3's hook): the buffer as
 * one message; for READs one in flight (the initiator, or rping's server)
 * or served; and with --depth N, N send WRs in flight, each with its
 * completion to come on the CQ beside as many receives'.
 */
static int check_limits(const struct rdma_dev *dev, const void *arg)
{
	const struct step_opts *step = arg;
	int depth = step->poll.depth;

	if (session_check_buffer(dev, step->mr.size))
		return -1;
	if (step->poll.rping && limit_check_reads(dev, !step->client, "--peer=rping",
						  "this device cannot run rping's protocol"))
		return -1;
	if (step->post.op == OP_READ && limit_check_reads(dev, step->client, "-o read",
							  "use another -o: send, write or write_imm"))
		return -1;
	if (depth <= 1)
		return 0;
	return limit_check_option(dev, LIMIT_QP_WR, "--depth", depth, 1, 0, "send WRs a QP") ||
	       limit_check_option(dev, LIMIT_CQE, "--depth", depth, 2, 0, "CQ entries (a "
				  "completion for each of its send WRs and as many receives)") ? -1 : 0;
}

/* One message at a time, each timed; or --depth of them in flight, for bandwidth. */
static int run_initiator(struct poller *p, const struct rdma_buf *buf, const struct post_opts *post,
			 const struct poll_opts *poll, int timeout_s)
{
	if (poll->depth > 1)
		return run_pipelined_loop(p, buf, post, poll->iters, poll->depth, timeout_s);
	return run_initiator_loop(p, buf, post, poll->iters, timeout_s);
}

/* Our own protocol, or ibv_rc_pingpong's: the exchange over the side channel, then the loop. */
static int run_over_side_channel(struct session *sess, const struct cli_common *opts,
				 const struct step_opts *step)
{
	struct poller poller;
	char depth_opt[16] = "";

	if (step->poll.depth > 1)
		snprintf(depth_opt, sizeof(depth_opt), " -D %d", step->poll.depth);
	exchange_set_options(&sess->conn.local, "-o %s -s %zu -n %d%s%s", op_name(step->post.op),
			     sess->buf.len, step->poll.iters, depth_opt, step->poll.recover ? " -R" : "");
	if (step->poll.rc_pingpong ? connect_qp_rc_pingpong(&sess->dev, opts, step->poll.mtu, &sess->conn)
				   : connect_qp(&sess->dev, opts, &sess->conn))
		return -1;
	if (step->poll.recover && run_recovery_drill(sess, opts))
		return -1;
	show_heading("stages 4 and 5: post work requests, poll for their completions");
	show("operation", "%d x %s of %zu bytes, %s, %s", step->poll.iters, op_name(step->post.op),
	     sess->buf.len, opts->host ? "we are the initiator" : "we are the target",
	     step->conn.events ? "event-driven (completion channel)" : "busy polling");
	poller_init(&poller, &sess->conn, step->conn.events, step->poll.rc_pingpong);
	return opts->host ? run_initiator(&poller, &sess->buf, &step->post, &step->poll, opts->timeout_s)
			  : run_target_loop(&poller, &sess->buf, &step->post, step->poll.iters,
					    step->poll.depth > 1, opts->timeout_s);
}

/* rping's protocol: its receive posted before the handshake, then its pings. */
static int run_rping(struct session *sess, struct rping *r, const struct cli_common *opts,
		     int iters)
{
	bool client = opts->host != NULL;

	if (rping_prepare(sess, r, client) || session_connect(sess, opts))
		return -1;
	return rping_run(sess, r, iters, client);
}

/* Least privilege for rping's roles: its server's buffer is local, its client's is written by the server. */
static void grant_rping_access(struct reg_mr_opts *mr, bool client)
{
	if (client)
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			     "rping's sink: its server RDMA WRITEs each ping back here");
	else
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE,
			     "rping's server: its RDMA READ lands here and its RDMA WRITE leaves from "
			     "here; no peer may reach this buffer");
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    cm_faults, post_wr_faults, poller_faults, NULL };

int main(int argc, char **argv)
{
	struct step_opts step = { 0 };
	const struct cli_stage stages[] = {
		REG_MR_STAGE(&step.mr), CQ_QP_STAGE(&step.conn), CQ_QP_PATH_STAGE(&step.conn),
		POST_WR_OP_STAGE(&step.post), POLL_STAGE(&step.poll), { 0 }
	};
	const struct cli_spec spec = { .program = "05_poll_destroy", .purpose = purpose,
				       .connects = true, .pauses = true, .stages = stages,
				       .faults = faults };
	struct cli_common opts;
	int usage;
	struct conn_hook hook;
	struct session sess;
	struct rping rping = { 0 };
	int status = EXIT_FAILURE, failures;

	reg_mr_opts_default(&step.mr);
	post_opts_default(&step.post);
	poll_opts_default(&step.poll);
	step.mr.size = 0;	/* no -s: 4096, or rping's own default against rping */
	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;
	if (poll_opts_check(&step.poll, step.post.op, step.conn.events))
		return CLI_BAD_USAGE;
	if (!step.mr.size)
		step.mr.size = step.poll.rping ? RPING_DEFAULT_SIZE : REG_MR_DEFAULT_SIZE;
	if (step.poll.rping && rping_check_size(step.mr.size))
		return CLI_BAD_USAGE;
	/* Stage 3's hook: rping's protocol under --peer=rping; else ibv_rc_pingpong named if it comes. */
	step.client = opts.host != NULL;
	hook = (struct conn_hook){ .foreign = step.poll.rping ? &rping_peer : NULL,
				   .name_stranger = rc_pingpong_line_named,
				   .check_limits = check_limits, .limits_arg = &step };
	step.conn.hook = &hook;
	if (step.poll.rping)
		grant_rping_access(&step.mr, opts.host != NULL);
	else if (opts.host && step.post.op == OP_SEND && step.poll.depth <= 1)
		/* Step 04's SEND initiator only reads its buffer; in a ping-pong the reply lands in it. */
		reg_mr_grant(&step.mr, IBV_ACCESS_LOCAL_WRITE,
			     "the initiator of a SEND ping-pong: our NIC reads each ping from here and "
			     "writes the target's reply here; no peer may reach this buffer");
	else
		grant_op_access(&step.mr, &step.post, !opts.host);

	if (session_open(&sess, &opts, &step.mr, &step.conn))
		goto out_close_session;
	if (step.poll.rping ? run_rping(&sess, &rping, &opts, step.poll.iters)
			    : run_over_side_channel(&sess, &opts, &step))
		goto out_close_session;
	if (opts.pause && pause_until_told("transfers done (see 'rdma resource show')"))
		goto out_close_session;
	status = EXIT_SUCCESS;

	show_heading("stage 5: destroy everything, in reverse order of creation");
out_close_session:
	failures = rping_release(&rping) + session_close(&sess);
	show("teardown", "%s", failures ? "some releases failed (see above)" : "every object released");
	return failures ? EXIT_FAILURE : status;
}
