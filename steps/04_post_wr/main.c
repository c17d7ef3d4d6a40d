/* main.c: step 04: post one work request (SEND/RECV, RDMA WRITE, WRITE with immediate or READ) and check the bytes. */
#include "cm.h"
#include "completion.h"
#include "cq_qp_rts.h"
#include "dev_limits.h"
#include "exchange.h"
#include "first_touch.h"
#include "open_pd.h"
#include "pattern.h"
#include "pause.h"
#include "post_wr.h"
#include "reg_mr.h"
#include "report.h"
#include "session.h"
#include "violation.h"

#include <stdio.h>
#include <stdlib.h>

#define PATTERN_SEED 0x5a

static const char purpose[] =
	"Step 04: on top of steps 01-03, post one work request from the client (the\n"
	"initiator) to the server (the target) and check the bytes that arrived:\n"
	"SEND/RECV (two-sided), RDMA WRITE and READ (one-sided), WRITE with immediate,\n"
	"the atomics fetch_add and cmp_swap, ATOMIC WRITE, a WRITE then a FLUSH\n"
	"(--cm: connected through rdma_cm); with --odp, a WRITE or READ into memory\n"
	"registered on demand, the first into pages not there yet timed beside a second;\n"
	"or, with --violate, break memory protection and watch the work request fail.";

struct step_opts {
	struct reg_mr_opts mr;
	struct conn_opts conn;
	struct post_opts post;
	enum violation violation;
	bool initiator;			/* HOST given: this side posts the operation */
	bool odp;			/* --odp: the buffer the bytes land in is registered on demand */
};

/* Where the data lands: the server's buffer for send and writes, the client's for read. */
static int check_data(const struct rdma_buf *buf, enum wr_op op)
{
	if (op_is_atomic(op))
		return atomic_check_target(buf, op);
	if (!check_pattern(buf->addr, buf->len, PATTERN_SEED))
		return -1;
	show("data check", "%zu bytes arrived intact", buf->len);
	return 0;
}

/* The target, before the initiator may start: a receive posted if the operation consumes one, the bytes it reads or changes set. */
static int prepare_target(struct rdma_conn *conn, const struct rdma_buf *buf,
			  const struct post_opts *post)
{
	if (op_needs_recv(post->op) && post_receive(conn, buf, buf->len))
		return -1;
	if (post->op == OP_READ)
		fill_pattern(buf->addr, buf->len, PATTERN_SEED);
	if (op_is_atomic(post->op))
		atomic_word_set(buf);
	return 0;
}

/* One completion; through rdma_cm, the peer's DISCONNECTED ends the wait too. */
static int await_completion(struct session *sess, struct ibv_wc *wc)
{
	return take_good_completion_cm(&sess->conn, session_through_cm(sess) ? &sess->cm : NULL, wc,
				       POLL_TIMEOUT_MS);
}

/*
 * The barrier TAG.  Over the side channel both sides send it and wait for
 * the peer's.  Through rdma_cm there is no side channel, and the CM's events
 * stand in: 'P' is ESTABLISHED itself (the target prepared before it
 * accepted), and 'D' is the initiator's DREQ, sent once its completion came.
 */
static int barrier(struct session *sess, char tag, bool target, int timeout_s)
{
	if (!session_through_cm(sess))
		return exchange_sync(sess->conn.sock, tag, timeout_s);
	if (tag == 'D' && target)
		return cm_wait_disconnect(&sess->cm);
	return 0;
}

/* The target: waits for what the operation brings, then checks what arrived. */
static int run_target(struct session *sess, const struct post_opts *post, int timeout_s)
{
	struct rdma_conn *conn = &sess->conn;
	const struct rdma_buf *buf = &sess->buf;
	struct ibv_wc wc;
	int left;

	if (!session_through_cm(sess) && prepare_target(conn, buf, post))
		return -1;
	if (barrier(sess, 'P', true, timeout_s))
		return -1;
	if (op_needs_recv(post->op) &&
	    (await_completion(sess, &wc) || expect_wr_id(&wc, WR_ID_RECV) ||
	     check_received_length(&wc, buf->len)))
		return -1;
	/* The initiator says when its completion arrived: only then is it all in place. */
	if (barrier(sess, 'D', true, timeout_s)) {
		if (op_is_atomic(post->op))
			atomic_show_word(buf);
		return -1;
	}
	left = drain_completions(conn, false);
	if (left < 0)
		return -1;
	if (!op_needs_recv(post->op))
		show("target CQ", "%d completion(s): a one-sided %s does not involve the target's CPU",
		     left, post->op == OP_READ ? "READ" : op_is_atomic(post->op) ? "atomic"
		     : post->op == OP_FLUSH ? "WRITE then FLUSH" : "WRITE");
	return post->op == OP_READ ? 0 : check_data(buf, post->op);
}

/* The initiator: posts the operation and waits for its own completion. */
static int run_initiator(struct session *sess, const struct post_opts *post, int timeout_s)
{
	struct rdma_conn *conn = &sess->conn;
	const struct rdma_buf *buf = &sess->buf;
	struct ibv_wc wc;

	size_t len = op_is_atomic(post->op) ? ATOMIC_LEN : buf->len;

	if (post->op != OP_READ)
		fill_pattern(buf->addr, buf->len, PATTERN_SEED);
	/* Wait until the target has posted its receive. */
	if (barrier(sess, 'P', false, timeout_s))
		return -1;
	if (post_operation(conn, buf, len, post) ||
	    await_completion(sess, &wc) || expect_wr_id(&wc, WR_ID_SEND))
		return -1;
	if (post->op == OP_READ && check_data(buf, post->op))
		return -1;
	if ((post->op == OP_FETCH_ADD || post->op == OP_CMP_SWAP) && atomic_check_fetched(buf))
		return -1;
	if (post->op == OP_FLUSH)
		flush_show_done(conn, len, post);
	return barrier(sess, 'D', false, timeout_s);
}

/*
 * What this run asks of the device, after stage 1 and before anything else
 * is created (session_open calls it through stage 3's hook): the buffer as
 * one message; for an atomic the device's atomic_cap, for a FLUSH its
 * placement type; and for a READ or an atomic one in flight (the initiator)
 * or served (the target).
 */
static int check_limits(const struct rdma_dev *dev, const void *arg)
{
	const struct step_opts *step = arg;
	enum wr_op op = step->post.op;
	char request[32];

	snprintf(request, sizeof(request), "-o %s", op_name(op));
	if (step->odp && odp_check_device(dev, op, step->initiator))
		return -1;
	if (session_check_buffer(dev, step->mr.size) ||
	    (op_is_atomic(op) && check_atomic_support(dev, op, step->mr.size)) ||
	    (op == OP_FLUSH && check_flush_support(dev, &step->post)))
		return -1;
	if (op != OP_READ && op != OP_FETCH_ADD && op != OP_CMP_SWAP)
		return 0;
	return limit_check_reads(dev, step->initiator, request,
				 "use another -o: send, write or write_imm");
}

/* This side's part of stage 4: the transfer, or with --violate its refusal. */
static int run_stage4(struct session *sess, const struct cli_common *opts,
		      const struct step_opts *step)
{
	if (step->odp && opts->host)
		return first_touch_initiator(&sess->conn, &sess->buf, sess->buf.len, &step->post,
					     PATTERN_SEED, opts->timeout_s);
	if (step->odp && step->post.op == OP_WRITE)
		return first_touch_target(&sess->conn, &sess->buf, PATTERN_SEED, opts->timeout_s);
	if (step->violation && opts->host)
		return violate_as_initiator(&sess->dev, &sess->conn, &sess->buf, &step->post,
					    step->violation, opts->timeout_s);
	if (step->violation)
		return violate_as_target(&sess->conn, &sess->buf, &step->post, step->violation,
					 opts->timeout_s);
	if (opts->host)
		return run_initiator(sess, &step->post, opts->timeout_s);
	return run_target(sess, &step->post, opts->timeout_s);
}

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    cm_faults, post_wr_faults, NULL };

int main(int argc, char **argv)
{
	struct step_opts step = { 0 };
	/* Of stage 3's options, --events is left out: step 04 busy-polls its one completion. */
	const struct cli_stage stages[] = { REG_MR_STAGE(&step.mr), REG_MR_ODP_STAGE(&step.mr),
					    CQ_QP_CM_STAGE(&step.conn), CQ_QP_PATH_STAGE(&step.conn),
					    POST_WR_STAGE(&step.post), VIOLATION_STAGE(&step.violation),
					    { 0 } };
	const struct cli_spec spec = { .program = "04_post_wr", .purpose = purpose,
				       .connects = true, .pauses = true, .stages = stages,
				       .faults = faults };
	struct cli_common opts;
	int usage;
	struct conn_hook hook = { .check_limits = check_limits, .limits_arg = &step };
	struct session sess;
	int status = EXIT_FAILURE;

	reg_mr_opts_default(&step.mr);
	post_opts_default(&step.post);
	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;
	if (check_op_built(&step.post))
		return EXIT_FAILURE;
	if (post_opts_check(&step.post) || violation_check_op(step.violation, step.post.op))
		return CLI_BAD_USAGE;
	if (step.mr.odp && odp_opts_check(step.post.op, step.violation, step.conn.cm))
		return CLI_BAD_USAGE;
	if (step.violation && step.conn.cm) {
		report_error("--violate drives both sides through side-channel barriers at each point "
			     "of the failure: drop --cm");
		return CLI_BAD_USAGE;
	}
	if (op_send_ops(step.post.op) && step.conn.cm) {
		report_error("-o %s is posted through the extended API, on a QP from "
			     "ibv_create_qp_ex, and rdma_cm makes its own QP: drop --cm",
			     op_name(step.post.op));
		return CLI_BAD_USAGE;
	}
	violation_prepare(&step.mr, step.violation, &step.post, !opts.host);
	step.initiator = opts.host != NULL;
	/* --odp: on demand only where the bytes land; the other side's buffer stays pinned. */
	step.odp = step.mr.odp;
	step.mr.odp = step.odp && odp_lands_here(step.post.op, step.initiator);
	hook.send_ops_flags = op_send_ops(step.post.op);
	step.conn.hook = &hook;

	if (session_open(&sess, &opts, &step.mr, &step.conn))
		goto out_close_session;
	violation_set_retry(&sess.conn, step.violation, !opts.host);
	exchange_set_options(&sess.conn.local, "-o %s -s %zu%s%s%s%s", op_name(step.post.op),
			     sess.buf.len, step.violation ? " -V " : "",
			     step.violation ? violation_name(step.violation) : "",
			     step.post.placement == PLACE_PERSISTENT ? " persistent" : "",
			     step.odp ? " --odp" : "");
	/* Through rdma_cm no barrier follows ESTABLISHED: the target prepares before it accepts. */
	if (session_through_cm(&sess) && !opts.host && prepare_target(&sess.conn, &sess.buf, &step.post))
		goto out_close_session;
	if (session_connect(&sess, &opts))
		goto out_close_session;
	show_heading("stage 4: post a work request");
	show("operation", "%s, %s", op_name(step.post.op),
	     opts.host ? "we are the initiator" : "we are the target");
	if (run_stage4(&sess, &opts, &step))
		goto out_close_session;
	if (opts.pause && pause_until_told("transfer done (see 'rdma resource show')"))
		goto out_close_session;
	status = EXIT_SUCCESS;

	show_heading("teardown, in reverse order of creation");
out_close_session:
	if (session_close(&sess))
		status = EXIT_FAILURE;
	return status;
}
