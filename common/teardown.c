/* teardown.c: release helpers for verbs objects; each accepts NULL and reports what it did. */
#include "teardown.h"
#include "report.h"

#include <errno.h>
#include <stdio.h>

int release_pd(struct ibv_pd *pd)
{
	int rc;

	if (!pd)
		return 0;
	rc = ibv_dealloc_pd(pd);
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
	if (ibv_close_device(ctx)) {
		report_verb_error("ibv_close_device", errno);
		return 1;
	}
	show("ibv_close_device", "%s closed", name);
	return 0;
}
