/* session.c: stages 1 to 3 in one call, the starting point of every later step, and their teardown. */
#include "session.h"
#include "dev_limits.h"
#include "report.h"

#include <stdint.h>
#include <stdio.h>

int session_check_buffer(const struct rdma_dev *dev, size_t size)
{
	char request[48];

	snprintf(request, sizeof(request), "-s %zu", size);
	return limit_check_option(dev, LIMIT_MSG_SZ, "-s", (long long)size, 1, 0,
				  "bytes in one message") ||
	       limit_check_pin(dev, size, size, request, "give a smaller -s") ? -1 : 0;
}

/*
 * What the run asks of the device, after stage 1 has read its limits and
 * before anything else is created: the step's own requests (or -s), then
 * stage 3's queues.
 */
static int check_limits(const struct rdma_dev *dev, const struct reg_mr_opts *mr,
			const struct conn_opts *conn)
{
	const struct conn_hook *hook = conn->hook;

	if (hook && hook->check_limits ? hook->check_limits(dev, hook->limits_arg) :
	    session_check_buffer(dev, mr->size))
		return -1;
	return cq_qp_check_limits(dev, conn);
}

/*
 * rdma_cm has no option for the service level: on RoCE the kernel derives it
 * from the ToS (--tclass) through the interface's priority map, so --sl would
 * be dropped in silence.  Refused before anything is created.
 */
static int check_sl_through_cm(const struct conn_opts *conn)
{
	if (!conn->sl_given)
		return 0;
	if (conn->cm)
		report_error("--sl %d: rdma_cm has no option for the service level (on RoCE the "
			     "kernel derives it from the traffic class), and --cm connects through "
			     "it: give --tclass instead, or drop --cm", conn->sl);
	else
		report_error("--sl %d: rdma_cm has no option for the service level (on RoCE the "
			     "kernel derives it from the traffic class), and %s connects through it: "
			     "give --tclass instead", conn->sl, conn->hook->foreign->name);
	return -1;
}

/* Stages 1 to 3 under --cm: the device is the one the address leads to, not -d's. */
static int open_through_cm(struct session *s, const struct cli_common *opts,
			   const struct reg_mr_opts *mr, const struct conn_opts *conn)
{
	int gid_idx;

	if (check_sl_through_cm(conn))
		return -1;
	show_heading("stage 1: find the device through rdma_cm, allocate a PD");
	if (cm_find_device(&s->cm, opts, conn->hook ? conn->hook->foreign : NULL,
			   conn->tclass_given ? conn->tclass : CM_TOS_DEFAULT, &gid_idx) ||
	    adopt_device_pd(s->cm.id->verbs, s->cm.id->port_num, gid_idx, &s->dev) ||
	    check_limits(&s->dev, mr, conn))
		return -1;
	show_heading("stage 2: register memory");
	if (register_buffer(&s->dev, mr, &s->buf))
		return -1;
	show_heading("stage 3: create the CQ and QP, connect them through rdma_cm");
	return create_cq_qp(&s->dev, &s->buf, conn, &s->conn, &s->cm);
}

int session_open(struct session *s, const struct cli_common *opts, const struct reg_mr_opts *mr,
		 const struct conn_opts *conn)
{
	*s = (struct session){ .conn.sock = -1 };
	/* A foreign peer speaks only through rdma_cm. */
	if (conn->cm || (conn->hook && conn->hook->foreign))
		return open_through_cm(s, opts, mr, conn);
	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(opts, &s->dev) || check_limits(&s->dev, mr, conn))
		return -1;
	show_heading("stage 2: register memory");
	if (register_buffer(&s->dev, mr, &s->buf))
		return -1;
	show_heading("stage 3: create the CQ and QP, connect them to the peer");
	return create_cq_qp(&s->dev, &s->buf, conn, &s->conn, NULL);
}

bool session_through_cm(const struct session *s)
{
	return s->cm.events != NULL;
}

int session_connect(struct session *s, const struct cli_common *opts)
{
	if (!session_through_cm(s))
		return connect_qp(&s->dev, opts, &s->conn);
	return cm_connect(&s->cm, s->conn.qp, &s->conn.local, &s->conn.remote, s->conn.retry_cnt,
			  s->conn.rd_atomic);
}

int session_close(struct session *s)
{
	int failures = cm_disconnect(&s->cm);

	failures += destroy_cq_qp(&s->conn);
	failures += release_buffer(&s->buf);
	failures += close_device_pd(&s->dev);
	failures += cm_close(&s->cm);
	return failures;
}
