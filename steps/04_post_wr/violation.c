/* violation.c: stage 4 broken on purpose (--violate): memory protection at work, seen from both ends of the wire. */
#include "violation.h"
#include "completion.h"
#include "pattern.h"
#include "report.h"
#include "teardown.h"

#include <errno.h>
#include <string.h>

/* What the initiator sends, and what the target's buffer holds: different, so any write shows. */
#define SENT_SEED 0x5a
#define GUARD_SEED 0xa5
/* rxe, as rnr_retry, takes a retry_cnt of 7 to mean "for ever": it would never give up. */
#define GONE_RETRY_CNT 6
/* A work request on a QP in ERR completes (flushed) at once; this is only a bound. */
#define FLUSH_TIMEOUT_MS 500

static const char *const violation_names[] = {
	[VIOLATE_NONE] = "none",	   [VIOLATE_ACCESS] = "access",
	[VIOLATE_RKEY] = "rkey",	   [VIOLATE_PAST_END] = "past_end",
	[VIOLATE_OTHER_PD] = "other_pd", [VIOLATE_SHORT_RECV] = "short_recv",
	[VIOLATE_GONE] = "gone",
};

#define N_VIOLATIONS (sizeof(violation_names) / sizeof(violation_names[0]))

static const char *const violation_plans[] = {
	[VIOLATE_ACCESS] = "the target registers its buffer without the remote right the operation "
			   "needs, so its QP lacks it too",
	[VIOLATE_RKEY] = "the initiator uses the target's rkey plus one, a key the target never "
			 "handed out",
	[VIOLATE_PAST_END] = "the initiator aims one byte into the target's buffer, so the last "
			     "byte falls one past its end",
	[VIOLATE_OTHER_PD] = "the initiator's local buffer is registered a second time, with a "
			     "second PD, and its work request uses that lkey",
	[VIOLATE_SHORT_RECV] = "the target posts a receive half the size of the SEND",
	[VIOLATE_GONE] = "the target destroys its QP once the addresses are exchanged, as a "
			 "crashed peer would",
};

/* The initiator's work request after the error: the same operation, and how it differs from the broken one. */
static const char *const violation_retries[] = {
	[VIOLATE_ACCESS] = "as before (the target's rights were the fault)",
	[VIOLATE_RKEY] = "this time with the rkey the target sent",
	[VIOLATE_PAST_END] = "this time at the target's own address",
	[VIOLATE_OTHER_PD] = "this time from the MR in the QP's own PD",
	[VIOLATE_SHORT_RECV] = "as before (the target's receive was the fault)",
	[VIOLATE_GONE] = "as before (the target's QP is what is missing)",
};

const struct cli_option violation_cli_options[] = {
	{ "violate", 'V', "KIND", "break memory protection on purpose, the same KIND on "
	  "both sides: access, rkey, past_end, other_pd, short_recv or gone", CLI_STAGE_PARSES },
	{ 0 },
};

int violation_parse_option(int key, const char *arg, void *ctx)
{
	enum violation *v = ctx;
	int i;

	(void)key;
	/* "none" is the default, not a kind to ask for. */
	i = cli_pick_named("--violate", "kind", arg, violation_names, VIOLATE_NONE + 1, N_VIOLATIONS);
	if (i < 0)
		return -1;
	*v = (enum violation)i;
	return 0;
}

const char *violation_name(enum violation v)
{
	return violation_names[v];
}

int violation_check_op(enum violation v, enum wr_op op)
{
	bool one_sided = op != OP_SEND;

	if (v == VIOLATE_NONE)
		return 0;
	if (!op_is_basic(op)) {
		report_error("--violate works with -o send, write, write_imm or read, not with the "
			     "atomics or flush");
		return -1;
	}
	if ((v == VIOLATE_ACCESS || v == VIOLATE_RKEY || v == VIOLATE_PAST_END) && !one_sided) {
		report_error("--violate %s needs a one-sided operation (-o write, write_imm or read): "
			     "a SEND names no remote address or rkey", violation_name(v));
		return -1;
	}
	if (v == VIOLATE_SHORT_RECV && op != OP_SEND) {
		report_error("--violate short_recv needs -o send: only a SEND's bytes land in the "
			     "receive buffer");
		return -1;
	}
	return 0;
}

void violation_set_retry(struct rdma_conn *conn, enum violation v, bool target)
{
	if (v == VIOLATE_GONE && !target)
		conn->retry_cnt = GONE_RETRY_CNT;
}

void violation_prepare(struct reg_mr_opts *mr, enum violation v, const struct post_opts *post,
		       bool target)
{
	if (v != VIOLATE_ACCESS || !target) {
		grant_op_access(mr, post, target);
		return;
	}
	if (post->op == OP_READ)
		reg_mr_grant(mr, 0, "--violate access: the target of RDMA READ, refused remote_read");
	else
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE,
			     "--violate access: the target of RDMA WRITE, refused remote_write");
}

/* Shows the QP's state, and what the error state means for the work requests after it. */
static int show_qp_after_error(struct rdma_conn *conn, enum ibv_qp_state *state)
{
	if (await_qp_error(conn, state))
		return -1;
	if (*state == IBV_QPS_ERR)
		show("ibv_query_qp", "state ERR: an error moved the QP to the error state; every "
		     "work request still queued, or posted from now on, completes as flushed");
	else
		show("ibv_query_qp", "state %s: the error never reached this QP",
		     qp_state_name(*state));
	return 0;
}

/*
 * On a QP in ERR: the same operation again, unbroken, tagged with a wr_id of
 * its own; it must come back flushed, having done nothing.
 */
static int post_again_after_error(struct rdma_conn *conn, const struct rdma_buf *buf,
				  const struct post_opts *post, enum violation v)
{
	struct prepared_op op;
	struct ibv_wc wc;

	show("posting again", "work request %d (%s): the same %s, %s; on a QP in ERR it must "
	     "complete as flushed, having done nothing", WR_ID_SEND_AFTER_ERR,
	     wr_id_name(WR_ID_SEND_AFTER_ERR), op_name(post->op), violation_retries[v]);
	prepare_operation(&op, conn, buf, buf->len, post);
	op.wr.wr_id = WR_ID_SEND_AFTER_ERR;
	if (post_prepared(conn, &op) || take_any_completion(conn, &wc, FLUSH_TIMEOUT_MS))
		return -1;
	show_failed_completion(&wc);
	if (expect_wr_id(&wc, WR_ID_SEND_AFTER_ERR))
		return -1;
	if (wc.status != IBV_WC_WR_FLUSH_ERR) {
		report_error("a work request posted on a QP in ERR completed with status %s, not as "
			     "flushed", ibv_wc_status_str(wc.status));
		return -1;
	}
	return 0;
}

/*
 * On a QP in ERR: a receive posted now, tagged with a wr_id of its own, should
 * come back flushed; rxe on Linux 6.1 never returns it.
 */
static int post_recv_after_error(struct rdma_conn *conn, const struct rdma_buf *buf)
{
	struct prepared_recv r;
	struct ibv_wc wc;
	int rc;

	prepare_receive(&r, buf, buf->len);
	r.wr.wr_id = WR_ID_RECV_AFTER_ERR;
	if (post_prepared_receive(conn, &r))
		return -1;
	rc = wait_completion(conn, &wc, FLUSH_TIMEOUT_MS);

	if (rc == 1) {
		show("ibv_poll_cq", "no completion within %d ms: this provider does not flush a "
		     "receive posted after the error, as the spec says it should; ibv_destroy_qp "
		     "discards it", FLUSH_TIMEOUT_MS);
		return 0;
	}
	if (rc)
		return -1;
	show_failed_completion(&wc);
	return 0;
}

/* Posts OP from a second registration of BUF, under a PD of its own; releases both after. */
static int post_from_other_pd(struct rdma_dev *dev, struct rdma_conn *conn,
			      const struct rdma_buf *buf, const struct post_opts *post)
{
	struct rdma_buf other = *buf;
	struct ibv_pd *pd;
	int rc = -1;

	pd = ibv_alloc_pd(dev->ctx);
	if (!pd) {
		report_verb_error("ibv_alloc_pd (a second PD)", errno);
		return -1;
	}
	other.mr = ibv_reg_mr(pd, buf->addr, buf->len, buf->access);
	if (!other.mr) {
		report_verb_error("ibv_reg_mr (the same buffer, in the second PD)", errno);
	} else {
		show("second PD", "the same %zu bytes registered again in a second PD: lkey 0x%x, "
		     "where the QP's PD knows lkey 0x%x", buf->len, other.mr->lkey, buf->mr->lkey);
		rc = post_operation(conn, &other, buf->len, post);
	}
	/* The NIC checks the lkey when it reads the buffer, after the post: wait, then release. */
	if (rc == 0)
		rc = expect_failed_completion(conn, op_name(post->op));
	if (release_mr(other.mr, "its pages still pinned by the buffer's own MR"))
		rc = -1;
	if (release_pd(pd))
		rc = -1;
	return rc;
}

/* Posts OP with the initiator's half of violation V applied. */
static int post_violating(struct rdma_dev *dev, struct rdma_conn *conn, const struct rdma_buf *buf,
			  const struct post_opts *post, enum violation v)
{
	struct rdma_conn bent = *conn;
	struct post_opts no_inline = *post;

	switch (v) {
	case VIOLATE_RKEY:
		bent.remote.rkey = conn->remote.rkey + 1;
		break;
	case VIOLATE_PAST_END:
		bent.remote.addr = conn->remote.addr + 1;
		break;
	case VIOLATE_OTHER_PD:
		/* Inline data is copied by the CPU at post time, and its lkey never checked. */
		no_inline.no_inline = true;
		return post_from_other_pd(dev, conn, buf, &no_inline);
	default:
		break;
	}
	if (post_operation(&bent, buf, buf->len, post))
		return -1;
	return expect_failed_completion(conn, op_name(post->op));
}

int violate_as_initiator(struct rdma_dev *dev, struct rdma_conn *conn, const struct rdma_buf *buf,
			 const struct post_opts *post, enum violation v, int timeout_s)
{
	enum ibv_qp_state state;

	show("violation", "%s: %s", violation_name(v), violation_plans[v]);
	/* A READ's bytes land here: the guard pattern shows whether any did. */
	fill_pattern(buf->addr, buf->len, post->op == OP_READ ? GUARD_SEED : SENT_SEED);
	if (exchange_sync(conn->sock, 'P', timeout_s))
		return -1;
	if (post_violating(dev, conn, buf, post, v) || show_qp_after_error(conn, &state))
		return -1;
	if (state == IBV_QPS_ERR && post_again_after_error(conn, buf, post, v))
		return -1;
	if (post->op == OP_READ) {
		if (!check_pattern(buf->addr, buf->len, GUARD_SEED))
			return -1;
		show("data check", "%zu bytes unchanged: no byte of the refused READ arrived", buf->len);
	}
	return exchange_sync(conn->sock, 'D', timeout_s);
}

/*
 * After a failed receive its buffer holds anything (rxe had written the
 * SEND's first bytes when it found the SEND too long), but nothing past the
 * end of the receive may change.
 */
static int check_past_receive(const struct rdma_buf *buf, size_t recv_len)
{
	size_t inside = count_pattern_changes(buf->addr, 0, recv_len, GUARD_SEED);
	size_t past = count_pattern_changes(buf->addr, recv_len, buf->len, GUARD_SEED);

	show("data check", "%zu of the receive's %zu bytes were overwritten: after a failed receive, "
	     "its buffer's content is undefined", inside, recv_len);
	if (past) {
		report_error("data check: %zu bytes past the end of the receive were overwritten", past);
		return -1;
	}
	show("data check", "the %zu bytes past the end of the receive are unchanged: the NIC "
	     "writes only inside a posted buffer", buf->len - recv_len);
	return 0;
}

/* The target of VIOLATE_GONE: its QP is destroyed before the initiator posts. */
static int vanish_as_target(struct rdma_conn *conn, const struct rdma_buf *buf, int timeout_s)
{
	int failed = release_qp(conn->qp);

	conn->qp = NULL;
	if (failed)
		return -1;
	show("gone", "our QP no longer exists: the initiator's packets reach no QP, and no ACK "
	     "or NAK answers them");
	if (exchange_sync(conn->sock, 'P', timeout_s) || exchange_sync(conn->sock, 'D', timeout_s))
		return -1;
	if (!check_pattern(buf->addr, buf->len, GUARD_SEED))
		return -1;
	show("data check", "%zu bytes unchanged", buf->len);
	return 0;
}

int violate_as_target(struct rdma_conn *conn, const struct rdma_buf *buf,
		      const struct post_opts *post, enum violation v, int timeout_s)
{
	size_t recv_len = v == VIOLATE_SHORT_RECV ? buf->len / 2 : buf->len;
	enum ibv_qp_state state;
	int n;

	show("violation", "%s: %s", violation_name(v), violation_plans[v]);
	fill_pattern(buf->addr, buf->len, GUARD_SEED);
	show("guard", "%zu bytes filled with a pattern of our own: if it is intact at the end, "
	     "the peer wrote nothing", buf->len);
	if (v == VIOLATE_GONE)
		return vanish_as_target(conn, buf, timeout_s);
	if (op_needs_recv(post->op) && post_receive(conn, buf, recv_len))
		return -1;
	if (exchange_sync(conn->sock, 'P', timeout_s) || exchange_sync(conn->sock, 'D', timeout_s))
		return -1;
	n = drain_completions(conn, true);
	if (n < 0 || show_qp_after_error(conn, &state))
		return -1;
	show("target CQ", "%d completion(s)", n);
	if (state == IBV_QPS_ERR && post_recv_after_error(conn, buf))
		return -1;
	if (v == VIOLATE_SHORT_RECV)
		return check_past_receive(buf, recv_len);
	if (!check_pattern(buf->addr, buf->len, GUARD_SEED))
		return -1;
	show("data check", "%zu bytes unchanged: the refused %s wrote nothing here", buf->len,
	     op_name(post->op));
	return 0;
}
