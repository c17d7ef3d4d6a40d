/* main.c: step 03: create a CQ and an RC QP, exchange addresses with the peer, and drive the QP to RTS. */
#include "cq_qp_rts.h"
#include "exchange.h"
#include "open_pd.h"
#include "pause.h"
#include "reg_mr.h"
#include "report.h"

#include <stdlib.h>

struct step_opts {
	struct reg_mr_opts mr;
	struct conn_opts conn;
};

static const struct cli_option options[] = {
	REG_MR_CLI_OPTIONS,
	CQ_QP_CLI_OPTIONS,
	{ 0 },
};

static int parse_option(int key, const char *arg, void *ctx)
{
	struct step_opts *o = ctx;
	int rc = reg_mr_parse_option(key, arg, &o->mr);

	return rc <= 0 ? rc : cq_qp_parse_option(key, &o->conn);
}

int main(int argc, char **argv)
{
	struct step_opts step = { 0 };
	struct cli_spec spec = {
		.program = "03_cq_qp_rts",
		.purpose = "Step 03: on top of steps 01-02, create a completion queue and an RC queue pair,\n"
			   "exchange QPN, PSN, GID, LID, MTU, address and rkey over TCP, and drive the\n"
			   "QP from RESET to INIT, RTR and RTS.",
		.connects = true,
		.pauses = true,
		.options = options,
		.parse_option = parse_option,
		.ctx = &step,
	};
	struct cli_common opts;
	enum cli_outcome outcome;
	struct rdma_dev dev;
	struct rdma_buf buf;
	struct rdma_conn conn;
	int status = EXIT_FAILURE;

	reg_mr_opts_default(&step.mr);
	outcome = cli_parse(argc, argv, &spec, &opts);
	if (outcome != CLI_RUN)
		return cli_exit_status(outcome);

	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(&opts, &dev))
		return EXIT_FAILURE;
	show_heading("stage 2: register memory");
	if (register_buffer(&dev, &step.mr, &buf))
		goto out_close_device;
	show_heading("stage 3: create the CQ and QP, connect them to the peer");
	if (create_cq_qp(&dev, &buf, &step.conn, &conn))
		goto out_release_buffer;
	if (connect_qp(&dev, &opts, &conn))
		goto out_destroy_cq_qp;
	/* Neither side tears down before both have reached RTS. */
	if (exchange_sync(conn.sock, 'R', opts.timeout_s))
		goto out_destroy_cq_qp;
	show("connected", "QP 0x%06x is in RTS, connected to QP 0x%06x", conn.local.qpn,
	     conn.remote.qpn);
	if (opts.pause)
		pause_until_told("QP in RTS (see 'rdma resource show qp')");
	status = EXIT_SUCCESS;

	show_heading("teardown, in reverse order of creation");
out_destroy_cq_qp:
	if (destroy_cq_qp(&conn))
		status = EXIT_FAILURE;
out_release_buffer:
	if (release_buffer(&buf))
		status = EXIT_FAILURE;
out_close_device:
	if (close_device_pd(&dev))
		status = EXIT_FAILURE;
	return status;
}
