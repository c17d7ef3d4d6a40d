/* teardown.c: release helpers for verbs objects; each accepts NULL and reports what it did. */
#include "teardown.h"
#include "fault.h"
#include "report.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

/*
 * What every release says once its verb has returned RC (0 or an errno):
 * the verb's error, or what it freed (FMT, as for show).  0 or 1.
 */
static int released(const char *verb, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int released(const char *verb, int rc, const char *fmt, ...)
{
	va_list ap;

	if (rc) {
		report_verb_error(verb, rc);
		return 1;
	}
	if (showing()) {
		va_start(ap, fmt);
		show_now_va(verb, fmt, ap);
		va_end(ap);
	}
	return 0;
}

int release_qp(struct ibv_qp *qp)
{
	uint32_t qpn;

	if (!qp)
		return 0;
	qpn = qp->qp_num;
	return released("ibv_destroy_qp", fault_at("destroy_qp") ? errno : ibv_destroy_qp(qp),
			"QP 0x%06x destroyed", qpn);
}

int release_cq(struct ibv_cq *cq)
{
	if (!cq)
		return 0;
	return released("ibv_destroy_cq", fault_at("destroy_cq") ? errno : ibv_destroy_cq(cq),
			"completion queue destroyed");
}

int release_comp_channel(struct ibv_comp_channel *channel)
{
	if (!channel)
		return 0;
	return released("ibv_destroy_comp_channel",
			fault_at("destroy_comp_channel") ? errno : ibv_destroy_comp_channel(channel),
			"completion channel destroyed");
}

int release_mr(struct ibv_mr *mr, const char *pages)
{
	uint32_t lkey;

	if (!mr)
		return 0;
	/* The lkey names every MR; the rkey is 0 where no remote access was granted. */
	lkey = mr->lkey;
	return released("ibv_dereg_mr", fault_at("dereg_mr") ? errno : ibv_dereg_mr(mr),
			"memory region (lkey 0x%x) deregistered, %s", lkey,
			pages ? pages : "its pages unpinned");
}

int release_pd(struct ibv_pd *pd)
{
	if (!pd)
		return 0;
	return released("ibv_dealloc_pd", fault_at("dealloc_pd") ? errno : ibv_dealloc_pd(pd),
			"protection domain freed");
}

int release_context(struct ibv_context *ctx)
{
	char name[IBV_SYSFS_NAME_MAX];
	int rc;

	if (!ctx)
		return 0;
	snprintf(name, sizeof(name), "%s", ibv_get_device_name(ctx->device));
	/* Unlike most verbs, ibv_close_device returns -1 and sets errno. */
	rc = fault_at("close_device") || ibv_close_device(ctx) ? errno : 0;
	return released("ibv_close_device", rc, "%s closed", name);
}
