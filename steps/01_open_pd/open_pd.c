/* open_pd.c: stage 1 of the verbs workflow: open the device and allocate a protection domain. */
#include "open_pd.h"
#include "caps.h"
#include "device.h"
#include "fault.h"
#include "report.h"
#include "teardown.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

const struct fault_point open_pd_faults[] = {
	{ "open_device", "ibv_open_device", ENOMEM },
	{ "alloc_pd", "ibv_alloc_pd", ENOMEM },
	{ "dealloc_pd", "ibv_dealloc_pd", EBUSY },
	{ "close_device", "ibv_close_device", EIO },
	{ 0 },
};

static void show_device_list(struct ibv_device **list, int count)
{
	char names[256];

	device_names(list, count, names, sizeof(names));
	show("ibv_get_device_list", "%d device(s): %s", count, count ? names : "none");
}

static void show_gid_choice(const struct rdma_dev *dev)
{
	char addr[GID_STR_LEN];

	if (dev->gid_index == GID_NONE) {
		show("addressing", "InfiniBand link layer: the peer is reached by LID 0x%04x, no GID needed",
		     dev->port_attr.lid);
		return;
	}
	gid_format(&dev->gid.gid, addr, sizeof(addr));
	show("GID index chosen", "%d (%s %s)", dev->gid_index, gid_type_name(dev->gid.gid_type), addr);
}

/*
 * What every way of opening shares: the device's and the port's attributes,
 * the GID (REQUESTED, or chosen), and the protection domain.  DEV->ctx is
 * open; on failure nothing else is left allocated.
 */
static int query_device_alloc_pd(struct rdma_dev *dev, int requested_gid)
{
	const char *name = ibv_get_device_name(dev->ctx->device);
	struct ibv_device_attr_ex attr_ex;
	int rc;

	/* One query for every stage: the classic limits, and what only the extended
	 * query reads (a provider without it answers the classic half, the rest 0). */
	rc = ibv_query_device_ex(dev->ctx, NULL, &attr_ex);
	if (rc) {
		report_verb_error("ibv_query_device_ex", rc);
		return -1;
	}
	dev->attr = attr_ex.orig_attr;
	dev->cap_flags_ex = attr_ex.device_cap_flags_ex;
	dev->odp_caps = attr_ex.odp_caps;
	if (dev->port < 1 || dev->port > dev->attr.phys_port_cnt) {
		report_error("%s has port(s) 1 to %u, not %u. Pick one with -i N", name,
			     dev->attr.phys_port_cnt, dev->port);
		return -1;
	}
	rc = ibv_query_port(dev->ctx, dev->port, &dev->port_attr);
	if (rc) {
		report_verb_error("ibv_query_port", rc);
		return -1;
	}
	/* A test aid: every later check against the limits (dev_limits.h) sees a smaller device. */
	if (caps_apply(&dev->attr, &dev->port_attr, name))
		return -1;
	if (gid_choose(dev->ctx, dev->port, &dev->port_attr, requested_gid, &dev->gid_index,
		       &dev->gid))
		return -1;
	show_gid_choice(dev);

	/* Every MR and QP belongs to one PD; objects of different PDs cannot be used together. */
	dev->pd = fault_at("alloc_pd") ? NULL : ibv_alloc_pd(dev->ctx);
	if (!dev->pd) {
		report_verb_error("ibv_alloc_pd", errno);
		return -1;
	}
	show("ibv_alloc_pd", "protection domain allocated (handle %u)", dev->pd->handle);
	return 0;
}

int open_device_pd(const struct cli_common *opts, struct rdma_dev *dev)
{
	struct ibv_device **list;
	struct ibv_device *device;
	int count;

	*dev = (struct rdma_dev){ .port = (uint8_t)opts->ib_port, .gid_index = GID_NONE };

	list = ibv_get_device_list(&count);
	if (!list) {
		int err = errno;

		report_verb_error("ibv_get_device_list", err);
		if (err == ENOSYS)
			device_report_none();
		return -1;
	}
	show_device_list(list, count);
	device = device_lookup(list, count, opts->ib_dev);
	if (!device)
		goto out_free_list;

	/* Opening the device creates a user context: the kernel maps the NIC's queues for us. */
	dev->ctx = fault_at("open_device") ? NULL : ibv_open_device(device);
	if (!dev->ctx) {
		report_verb_error("ibv_open_device", errno);
		goto out_free_list;
	}
	show("ibv_open_device", "%s opened", ibv_get_device_name(device));
	if (query_device_alloc_pd(dev, opts->gid_idx))
		goto out_close_device;
	ibv_free_device_list(list);
	return 0;

out_close_device:
	release_context(dev->ctx);
	dev->ctx = NULL;
out_free_list:
	ibv_free_device_list(list);
	return -1;
}

int adopt_device_pd(struct ibv_context *ctx, uint8_t port, int gid_idx, struct rdma_dev *dev)
{
	*dev = (struct rdma_dev){ .ctx = ctx, .ctx_borrowed = true, .port = port,
				  .gid_index = GID_NONE };
	show("device", "%s, port %u: the one rdma_cm found for the address (its context is "
	     "rdma_cm's, opened once for every cm_id on it)", ibv_get_device_name(ctx->device), port);
	if (query_device_alloc_pd(dev, gid_idx)) {
		dev->ctx = NULL;
		return -1;
	}
	return 0;
}

int close_device_pd(struct rdma_dev *dev)
{
	int failures = 0;

	failures += release_pd(dev->pd);
	dev->pd = NULL;
	/* A context rdma_cm opened is rdma_cm's: rdma_destroy_id lets go of it. */
	if (!dev->ctx_borrowed)
		failures += release_context(dev->ctx);
	dev->ctx = NULL;
	return failures;
}

bool rdma_dev_is_software(const struct rdma_dev *dev)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device",
		 ibv_get_device_name(dev->ctx->device));
	return access(path, F_OK) != 0;
}
