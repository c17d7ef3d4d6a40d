/* fault.c: fault injection: RDMA_STEPS_FAIL_AT=POINT makes one named verb fail, to run the failure paths. */
#include "fault.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Each point, the verb it stands for, and an error that verb can really return. */
static const struct fault_point {
	const char *point;
	const char *verb;
	int err;
} points[] = {
	{ "open_device", "ibv_open_device", ENOMEM },
	{ "alloc_pd", "ibv_alloc_pd", ENOMEM },
	{ "reg_mr", "ibv_reg_mr", ENOMEM },
	{ "create_comp_channel", "ibv_create_comp_channel", EMFILE },
	{ "create_cq", "ibv_create_cq", ENOMEM },
	{ "create_qp", "ibv_create_qp", ENOMEM },
	{ "modify_qp_init", "ibv_modify_qp (RESET -> INIT)", EINVAL },
	{ "modify_qp_rtr", "ibv_modify_qp (INIT -> RTR)", EINVAL },
	{ "modify_qp_rts", "ibv_modify_qp (RTR -> RTS)", EINVAL },
	{ "cm_create_event_channel", "rdma_create_event_channel", ENODEV },
	{ "cm_create_id", "rdma_create_id", ENOMEM },
	{ "cm_resolve_addr", "rdma_resolve_addr", ENETUNREACH },
	{ "cm_resolve_route", "rdma_resolve_route", ENOMEM },
	{ "cm_bind_addr", "rdma_bind_addr", EADDRINUSE },
	{ "cm_listen", "rdma_listen", ENOMEM },
	{ "cm_create_qp", "rdma_create_qp", ENOMEM },
	{ "cm_private_version", "our private data (sent with version 2)", EPROTO },
	{ "cm_private_length", "our private data (sent with length 32)", EPROTO },
	{ "cm_connect", "rdma_connect", ENOMEM },
	{ "cm_accept", "rdma_accept", EINVAL },
	{ "cm_reject", "rdma_reject", EINVAL },
	{ "post_recv", "ibv_post_recv", ENOMEM },
	{ "post_send", "ibv_post_send", ENOMEM },
	{ "wr_complete", "ibv_wr_complete", ENOMEM },
	{ "alloc_mw", "ibv_alloc_mw", ENOMEM },
	{ "bind_mw", "ibv_post_send (IBV_WR_BIND_MW)", ENOMEM },
	{ "local_inv", "ibv_post_send (IBV_WR_LOCAL_INV)", ENOMEM },
	{ "completion", "a completion (status RETRY_EXC_ERR)", EIO },
	{ "req_notify_cq", "ibv_req_notify_cq", EINVAL },
	{ "get_cq_event", "ibv_get_cq_event", EIO },
	{ "destroy_qp", "ibv_destroy_qp", EBUSY },
	{ "destroy_cq", "ibv_destroy_cq", EBUSY },
	{ "destroy_comp_channel", "ibv_destroy_comp_channel", EBUSY },
	{ "dereg_mr", "ibv_dereg_mr", EBUSY },
	{ "dealloc_pd", "ibv_dealloc_pd", EBUSY },
	{ "close_device", "ibv_close_device", EIO },
	{ "cm_disconnect", "rdma_disconnect", EINVAL },
	{ "cm_destroy_id", "rdma_destroy_id", EBUSY },
};

#define N_POINTS (sizeof(points) / sizeof(points[0]))

static const struct fault_point *find_point(const char *name)
{
	for (size_t i = 0; i < N_POINTS; i++)
		if (!strcmp(points[i].point, name))
			return &points[i];
	return NULL;
}

int fault_check_env(void)
{
	const char *name = getenv(FAULT_ENV);
	char list[1024] = "";

	/* Set but empty, as after RDMA_STEPS_FAIL_AT= on a command line, means no fault. */
	if (!name || !*name || find_point(name))
		return 0;
	for (size_t i = 0; i < N_POINTS; i++) {
		strcat(list, points[i].point);
		strcat(list, i + 1 < N_POINTS ? ", " : "");
	}
	report_error("%s: '%s' is not a fault point; use one of %s (or unset it)", FAULT_ENV,
		     name, list);
	return -1;
}

/* The point asked for, read once: fault_at runs on every post and completion of a data path. */
static const char *wanted_point(void)
{
	static const char *name;
	static bool looked;

	if (!looked) {
		name = getenv(FAULT_ENV);
		looked = true;
	}
	return name;
}

bool fault_none;

bool fault_at_point(const char *point)
{
	const char *name = wanted_point();
	const struct fault_point *fp;

	/* Unset or empty: no point will ever fail, and fault_at need not ask again. */
	if (!name || !*name) {
		fault_none = true;
		return false;
	}
	if (strcmp(name, point))
		return false;
	fp = find_point(point);
	if (!fp)
		return false;
	/* A point fails once: after it, no fault can come. */
	fault_none = true;
	/* A loop that runs quietly after its first round must still say where it failed. */
	show_quiet(false);
	show("fault injected", "%s fails here, as if with %s (%s=%s)", fp->verb, strerror(fp->err),
	     FAULT_ENV, point);
	errno = fp->err;
	return true;
}
