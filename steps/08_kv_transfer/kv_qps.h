/* kv_qps.h: K RC QPs between the two sides, on one device, one PD and one MR, connected over one side channel. */
#ifndef RDMA_STEPS_KV_QPS_H
#define RDMA_STEPS_KV_QPS_H

#include "kv_options.h"
#include "session.h"

struct kv_qps {
	int n;
	uint32_t send_cap;			/* QP 0's send queue as the provider made it */
	struct rdma_conn *conn[KV_MAX_QPS];	/* conn[0] is the session's; the rest are extra[] */
	struct rdma_conn extra[KV_MAX_QPS];
};

/*
 * Creates QPs 1 to N-1 beside the session's QP 0, each with its own CQ, as
 * stage 3 creates any QP (COPTS, the same hook); they take QP 0's
 * rd_atomic.  Returns 0 or -1; kv_qps_destroy releases what was made.
 */
int kv_qps_create(struct kv_qps *q, struct session *s, const struct conn_opts *copts, int n);

/*
 * After connect_qp has brought QP 0 up over the side channel: exchanges the
 * other QPs' addresses over that same channel, one after another, and brings
 * each to RTS.  0 or -1.
 */
int kv_qps_connect(struct kv_qps *q, struct session *s, int timeout_s);

/*
 * Reads QP 0's queues back from the provider (ibv_query_qp): it may give
 * more than was asked (rxe rounds a send queue up), and a step that posts
 * chains must know what it has.  0 or -1.
 */
int kv_qps_show_caps(struct kv_qps *q, const struct ibv_qp_cap *asked);

/* Destroys QPs 1 to N-1 and their CQs (QP 0 is the session's); returns how many releases failed. */
int kv_qps_destroy(struct kv_qps *q);

#endif
