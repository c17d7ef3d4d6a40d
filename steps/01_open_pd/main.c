/* main.c: step 01: open an RDMA device, show what it offers, allocate a protection domain, free it all. */
#include "device.h"
#include "open_pd.h"
#include "pause.h"
#include "report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <endian.h>

/* The fault points of the stages this program runs: RDMA_STEPS_FAIL_AT names one of them. */
static const struct fault_point *const faults[] = { open_pd_faults, NULL };

static const struct cli_spec spec = {
	.program = "01_open_pd",
	.purpose = "Step 01: open an RDMA device, show its attributes, port and GID table,\n"
		   "allocate a protection domain (PD), then free everything in reverse order.",
	.pauses = true,
	.faults = faults,
};

static void show_node_guid(__be64 guid_be)
{
	uint64_t guid = be64toh(guid_be);

	show("node GUID", "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48) & 0xffff,
	     (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
	     (unsigned)guid & 0xffff);
}

static void show_device(const struct rdma_dev *dev)
{
	const struct ibv_port_attr *pa = &dev->port_attr;

	show_heading("device");
	show("device", "%s", ibv_get_device_name(dev->ctx->device));
	show_node_guid(dev->attr.node_guid);
	show("transport", "%s", transport_name(dev->ctx->device->transport_type));
	show("link layer", "%s", link_layer_name(pa->link_layer));
	show("port", "%u of %u", dev->port, dev->attr.phys_port_cnt);
	show("port state", "%s", ibv_port_state_str(pa->state));
	show("active MTU", "%d", mtu_bytes(pa->active_mtu));
	show("max MTU", "%d", mtu_bytes(pa->max_mtu));
	show("LID", "0x%04x%s", pa->lid,
	     pa->link_layer == IBV_LINK_LAYER_ETHERNET ? " (unused on RoCE: GIDs address ports)" : "");
	show("max QPs", "%d", dev->attr.max_qp);
	show("max CQEs", "%d", dev->attr.max_cqe);
	show("max MRs", "%d", dev->attr.max_mr);
	show("max MR size", "%" PRIu64 " bytes", dev->attr.max_mr_size);
}

int main(int argc, char **argv)
{
	struct cli_common opts;
	int usage;
	struct rdma_dev dev;
	int failures;

	usage = cli_parse(argc, argv, &spec, &opts);
	if (usage != CLI_RUN)
		return usage;

	show_heading("stage 1: open the device, allocate a PD");
	if (open_device_pd(&opts, &dev))
		return EXIT_FAILURE;
	show_device(&dev);
	show_heading("GID table");
	failures = gid_table_print(dev.ctx, dev.port, &dev.port_attr, dev.gid_index) ? 1 : 0;
	if (opts.pause && pause_until_told("the PD is allocated (see 'rdma resource show')"))
		failures++;

	show_heading("teardown, in reverse order of creation");
	failures += close_device_pd(&dev);
	return failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
