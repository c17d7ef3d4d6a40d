/* lossy_paths.c: the data QPs, UC (or RC to compare), one a path, beside the session's RC QP that carries the control messages; and the control messages' buffer. */
#include "lossy_paths.h"
#include "device.h"
#include "report.h"

#include <string.h>

struct ibv_qp_cap lossy_ctl_caps(void)
{
	/* One ask or SACK in flight each way, and a few receives for the peer's. */
	return (struct ibv_qp_cap){
		.max_send_wr = 2,
		.max_recv_wr = LOSSY_CTL_RECVS,
		.max_send_sge = 1,
		.max_recv_sge = 1,
	};
}

static uint32_t least(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * The receives kept posted on each path: LOSSY_RECV_AHEAD, unless the
 * device holds fewer.  Each path's CQ takes a completion for every receive
 * and for the one send its QP has room for, so max_cqe bounds it (rxe's is
 * 32,767), and so does max_qp_wr.
 */
static uint32_t receive_window(const struct rdma_dev *dev)
{
	uint32_t cqe = dev->attr.max_cqe > 1 ? (uint32_t)dev->attr.max_cqe - 1 : 1;
	uint32_t w = least(least(LOSSY_RECV_AHEAD, cqe), (uint32_t)dev->attr.max_qp_wr);

	show("receive window", "%u receives posted ahead on each path (%d wanted; this device's CQ "
	     "holds at most max_cqe %d completions, its queues max_qp_wr %d WRs): the sender keeps "
	     "at most that many WRITEs with immediate unconsumed", w, LOSSY_RECV_AHEAD,
	     dev->attr.max_cqe, dev->attr.max_qp_wr);
	return w;
}

/* The sender's send queue on each path: LOSSY_SQ_DEPTH, unless its CQ (and one receive's room) or max_qp_wr holds fewer. */
static uint32_t send_queue(const struct rdma_dev *dev)
{
	uint32_t cqe = dev->attr.max_cqe > 1 ? (uint32_t)dev->attr.max_cqe - 1 : 1;

	return least(least(LOSSY_SQ_DEPTH, cqe), (uint32_t)dev->attr.max_qp_wr);
}

/*
 * --qp-timeout and --retry-cnt, where given: between creating a QP and
 * connecting it, as stage 3 allows; a UC QP has neither.
 */
static void set_retries(struct rdma_conn *c, const struct lossy_opts *o)
{
	if (o->qp_timeout)
		c->timeout = (uint8_t)o->qp_timeout;
	if (o->retry_cnt >= 0)
		c->retry_cnt = (uint8_t)o->retry_cnt;
}

int lossy_paths_create(struct lossy_link *l, struct session *s, const struct lossy_opts *o,
		       const struct conn_opts *conn, bool sender)
{
	uint32_t sq = send_queue(&s->dev);
	struct conn_hook hook = {
		.qp_type = o->rc ? IBV_QPT_RC : IBV_QPT_UC,
		.cap = { .max_send_wr = sender ? sq : 1, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
	};
	/* Every path in the session's priority class: a sprayed flow changes its path, not its class. */
	struct conn_opts copts = { .tclass = conn->tclass, .tclass_given = conn->tclass_given,
				   .sl = conn->sl, .sl_given = conn->sl_given, .hook = &hook };

	*l = (struct lossy_link){ .sq_depth = sq };
	for (int k = 0; k < LOSSY_MAX_PATHS; k++)
		l->path[k].conn = (struct rdma_conn){ .sock = -1 };
	if (!sender) {
		l->window = receive_window(&s->dev);
		hook.cap.max_recv_wr = l->window;
	} else {
		l->window = LOSSY_RECV_AHEAD;	/* the most a receiver may offer; its plan says what it does */
	}
	show("paths", "%d data QP%s of type %s, each a flow of its own (rxe gives each QP its own "
	     "UDP source port); the session's RC QP carries the control messages", o->paths,
	     o->paths > 1 ? "s" : "", o->rc ? "RC" : "UC");
	set_retries(&s->conn, o);
	for (l->n = 0; l->n < o->paths; l->n++) {
		if (create_cq_qp(&s->dev, &s->buf, &copts, &l->path[l->n].conn, NULL))
			return -1;
		set_retries(&l->path[l->n].conn, o);
	}
	return 0;
}

int lossy_paths_connect(struct lossy_link *l, struct session *s, bool sender, int timeout_s)
{
	for (int k = 0; k < l->n; k++) {
		struct rdma_conn *c = &l->path[k].conn;

		/* The options were compared with the control QP's message: the others carry the same text. */
		memcpy(c->local.options, s->conn.local.options, sizeof(c->local.options));
		show("path", "%d of %d: exchanging its data QP's address over the same side channel",
		     k + 1, l->n);
		exchange_show_qp("local", &c->local);
		if (exchange_peer_info(s->conn.sock, &c->local, &c->remote, timeout_s, NULL))
			return -1;
		exchange_show_qp("remote", &c->remote);
		if (c->remote.len != s->buf.len) {
			report_error("the peer's exchange for path %d has a bad buffer length (%llu): "
				     "this side's is %zu, and -s must be the same on both sides", k,
				     (unsigned long long)c->remote.len, s->buf.len);
			return -1;
		}
		if (sender && !c->remote.rkey) {
			report_error("the receiver's exchange for path %d has no rkey: its buffer lets "
				     "no WRITE in (was it given -a without remote_write?)", k);
			return -1;
		}
		if (bring_up_qp(&s->dev, c))
			return -1;
	}
	return 0;
}

uint32_t lossy_path_mtu(const struct lossy_link *l)
{
	const struct rdma_conn *c = &l->path[0].conn;

	return (uint32_t)mtu_bytes(c->remote.mtu < c->local.mtu ? c->remote.mtu : c->local.mtu);
}

int lossy_ctl_register(struct lossy_link *l, struct session *s, size_t slot)
{
	struct reg_mr_opts mr = {
		.size = slot * (LOSSY_CTL_RECVS + 1),
		.access = IBV_ACCESS_LOCAL_WRITE,
		.access_why = "the control messages: our NIC writes the peer's asks or SACKs here and "
			      "reads ours; no peer may reach it",
	};

	l->slot = slot;
	return register_buffer(&s->dev, &mr, &l->ctl);
}

int lossy_paths_destroy(struct lossy_link *l)
{
	int failures = release_buffer(&l->ctl);

	for (int k = l->n - 1; k >= 0; k--)
		failures += destroy_cq_qp(&l->path[k].conn);
	l->n = 0;
	return failures;
}
