/* session.c: stages 1 to 3 in one call, the starting point of every later step, and their teardown. */
#include "session.h"
#include "report.h"

int session_open(struct session *s, const struct cli_common *opts, const struct reg_mr_opts *mr,
		 const struct conn_opts *conn)
{
	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(opts, &s->dev))
		return -1;
	show_heading("stage 2: register memory");
	if (register_buffer(&s->dev, mr, &s->buf))
		goto out_close_device;
	show_heading("stage 3: create the CQ and QP, connect them to the peer");
	if (create_cq_qp(&s->dev, &s->buf, conn, &s->conn))
		goto out_release_buffer;
	return 0;

out_release_buffer:
	release_buffer(&s->buf);
out_close_device:
	close_device_pd(&s->dev);
	return -1;
}

int session_close(struct session *s)
{
	int failures = destroy_cq_qp(&s->conn);

	failures += release_buffer(&s->buf);
	failures += close_device_pd(&s->dev);
	return failures;
}
