/* kv_qps.c: K RC QPs between the two sides, on one device, one PD and one MR, connected over one side channel. */
#include "kv_qps.h"
#include "report.h"

#include <string.h>

int kv_qps_create(struct kv_qps *q, struct session *s, const struct conn_opts *copts, int n)
{
	*q = (struct kv_qps){ .conn[0] = &s->conn };
	for (int k = 0; k < KV_MAX_QPS; k++)
		q->extra[k] = (struct rdma_conn){ .sock = -1 };
	for (q->n = 1; q->n < n; q->n++) {
		struct rdma_conn *c = &q->extra[q->n];

		if (create_cq_qp(&s->dev, &s->buf, copts, c, NULL) ||
		    conn_offer_rd_atomic(&s->dev, c, s->conn.rd_atomic))
			return -1;
		q->conn[q->n] = c;
	}
	return 0;
}

int kv_qps_connect(struct kv_qps *q, struct session *s, int timeout_s)
{
	for (int k = 1; k < q->n; k++) {
		struct rdma_conn *c = q->conn[k];

		/* The options were compared with QP 0's message: the others carry the same text. */
		memcpy(c->local.options, s->conn.local.options, sizeof(c->local.options));
		show("QP", "%d of %d: exchanging its address over the same side channel", k + 1, q->n);
		if (exchange_peer_info(s->conn.sock, &c->local, &c->remote, timeout_s, NULL))
			return -1;
		exchange_show_qp("remote", &c->remote);
		if (bring_up_qp(&s->dev, c))
			return -1;
	}
	return 0;
}

int kv_qps_show_caps(struct kv_qps *q, const struct ibv_qp_cap *asked)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int rc = ibv_query_qp(q->conn[0]->qp, &attr, IBV_QP_CAP, &init);

	if (rc) {
		report_verb_error("ibv_query_qp", rc);
		return -1;
	}
	q->send_cap = attr.cap.max_send_wr;
	show("ibv_query_qp", "QP 0's queues as the provider made them: send %u WRs (asked %u), "
	     "receive %u (asked %u); the program counts on what it asked", attr.cap.max_send_wr,
	     asked->max_send_wr, attr.cap.max_recv_wr, asked->max_recv_wr);
	return 0;
}

int kv_qps_destroy(struct kv_qps *q)
{
	int failures = 0;

	/* The last made first; QP 0 goes with the session. */
	for (int k = q->n - 1; k >= 1; k--)
		failures += destroy_cq_qp(q->conn[k]);
	q->n = 1;
	return failures;
}
