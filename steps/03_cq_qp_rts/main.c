/* main.c: step 03: create a CQ and an RC QP, exchange addresses with the peer, and drive the QP to RTS. */
#include "cm.h"
#include "cq_qp_rts.h"
#include "exchange.h"
#include "open_pd.h"
#include "pause.h"
#include "reg_mr.h"
#include "report.h"
#include "session.h"

#include <stdlib.h>

static const char purpose[] =
	"Step 03: on top of steps 01-02, create a completion queue and an RC queue pair,\n"
	"exchange QPN, PSN, GID, LID, MTU, address and rkey over TCP, and drive the\n"
	"QP from RESET to INIT, RTR and RTS; or, with --cm, let the RDMA connection\n"
	"manager (rdma_cm) find the device from the address and do all of that.";

struct step_opts {
	struct reg_mr_opts mr;
	struct conn_opts conn;
};

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, reg_mr_faults, cq_qp_faults,
						    cm_faults, NULL };

int main(int argc, char **argv)
{
	struct step_opts step = { 0 };
	const struct cli_stage stages[] = { REG_MR_STAGE(&step.mr), CQ_QP_STAGE(&step.conn),
					    CQ_QP_CM_STAGE(&step.conn), CQ_QP_PATH_STAGE(&step.conn),
					    { 0 } };
	const struct cli_spec spec = { .program = "03_cq_qp_rts", .purpose = purpose,
				       .connects = true, .pauses = true, .stages = stages,
				       .faults = faults };
	struct cli_common opts;
	int usage;
	struct session sess;
	struct rdma_conn *conn = &sess.conn;
	int status = EXIT_FAILURE;

	reg_mr_opts_default(&step.mr);
	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;
	reg_mr_grant(&step.mr, IBV_ACCESS_LOCAL_WRITE,
		     "step 03 moves no data, so no peer may reach this buffer, and it gets no rkey");

	if (session_open(&sess, &opts, &step.mr, &step.conn))
		goto out_close_session;
	if (session_connect(&sess, &opts))
		goto out_close_session;
	/* Neither side tears down before both have reached RTS: through rdma_cm, ESTABLISHED says so on each side. */
	if (!session_through_cm(&sess) && exchange_sync(conn->sock, 'R', opts.timeout_s))
		goto out_close_session;
	show("connected", "QP 0x%06x is in RTS, connected to QP 0x%06x", conn->local.qpn,
	     conn->remote.qpn);
	if (opts.pause && pause_until_told("QP in RTS (see 'rdma resource show qp')"))
		goto out_close_session;
	/* Through rdma_cm the client ends the connection (DREQ), and the server waits for it. */
	if (session_through_cm(&sess) && !opts.host && cm_wait_disconnect(&sess.cm))
		goto out_close_session;
	status = EXIT_SUCCESS;

	show_heading("teardown, in reverse order of creation");
out_close_session:
	if (session_close(&sess))
		status = EXIT_FAILURE;
	return status;
}
