/* teardown.c: release helpers for verbs objects; each accepts NULL and reports what it did. */
#include "teardown.h"
#include "fault.h"
#include "report.h"

#include <errno.h>
#include <stdio.h>

int release_qp(struct ibv_qp *qp)
{
	uint32_t qpn;
	int rc;

	if (!qp)
		return 0;
	qpn = qp->qp_num;
	rc = fault_at("destroy_qp") ? errno : ibv_destroy_qp(qp);
	if (rc) {
		report_verb_error("ibv_destroy_qp", rc);
		return 1;
	}
	show("ibv_destroy_qp", "QP 0x%06x destroyed", qpn);
	return 0;
}

int release_cq(struct ibv_cq *cq)
{
	int rc;

	if (!cq)
		return 0;
	rc = fault_at("destroy_cq") ? errno : ibv_destroy_cq(cq);
	if (rc) {
		report_verb_error("ibv_destroy_cq", rc);
		return 1;
	}
	show("ibv_destroy_cq", "completion queue destroyed");
	return 0;
}

int release_comp_channel(struct ibv_comp_channel *channel)
{
	int rc;

	if (!channel)
		return 0;
	rc = fault_at("destroy_comp_channel") ? errno : ibv_destroy_comp_channel(channel);
	if (rc) {
		report_verb_error("ibv_destroy_comp_channel", rc);
		return 1;
	}
	show("ibv_destroy_comp_channel", "completion channel destroyed");
	return 0;
}

int release_mr(struct ibv_mr *mr, const char *pages)
{
	uint32_t lkey;
	int rc;

	if (!mr)
		return 0;
	/* The lkey names every MR; the rkey is 0 where no remote access was granted. */
	lkey = mr->lkey;
	rc = fault_at("dereg_mr") ? errno : ibv_dereg_mr(mr);
	if (rc) {
		report_verb_error("ibv_dereg_mr", rc);
		return 1;
	}
	show("ibv_dereg_mr", "memory region (lkey 0x%x) deregistered, %s", lkey,
	     pages ? pages : "its pages unpinned");
	return 0;
}

int release_pd(struct ibv_pd *pd)
{
	int rc;

	if (!pd)
		return 0;
	rc = fault_at("dealloc_pd") ? errno : ibv_dealloc_pd(pd);
	if (rc) {
		report_verb_error("ibv_dealloc_pd", rc);
		return 1;
	}
	show("ibv_dealloc_pd", "protection domain freed");
	return 0;
}

int release_context(struct ibv_context *ctx)
{
	char name[IBV_SYSFS_NAME_MAX];

	if (!ctx)
		return 0;
	snprintf(name, sizeof(name), "%s", ibv_get_device_name(ctx->device));
	/* Unlike most verbs, ibv_close_device returns -1 and sets errno. */
	if (fault_at("close_device") || ibv_close_device(ctx)) {
		report_verb_error("ibv_close_device", errno);
		return 1;
	}
	show("ibv_close_device", "%s closed", name);
	return 0;
}
