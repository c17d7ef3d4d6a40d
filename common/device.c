/* device.c: device lookup, GID choice, the names of verbs enums and a port's counters, shared by every step. */
#include "device.h"
#include "cli.h"
#include "clock.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void device_names(struct ibv_device **list, int count, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < count && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
				 ibv_get_device_name(list[i]));
}

void device_report_none(void)
{
	report_error("no RDMA device here. Create a soft-RoCE one as root with "
		     "'modprobe rdma_rxe; rdma link add rxe0 type rxe netdev IFACE', "
		     "or run the steps in the test VM ('make shell')");
}

struct ibv_device *device_lookup(struct ibv_device **list, int count, const char *name)
{
	char names[256];

	if (count == 0) {
		device_report_none();
		return NULL;
	}
	if (!name)
		return list[0];
	for (int i = 0; i < count; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	device_names(list, count, names, sizeof(names));
	report_error("no RDMA device named '%s'; devices present: %s. Pick one with -d NAME",
		     name, names);
	return NULL;
}

const char *transport_name(enum ibv_transport_type transport)
{
	static const char *const names[] = {
		[IBV_TRANSPORT_IB] = "InfiniBand verbs (IB, RoCE)", [IBV_TRANSPORT_IWARP] = "iWARP",
		[IBV_TRANSPORT_USNIC] = "usNIC", [IBV_TRANSPORT_USNIC_UDP] = "usNIC",
		[IBV_TRANSPORT_UNSPECIFIED] = "unspecified",
	};

	return name_of(names, NAME_COUNT(names), transport, "unknown");
}

const char *link_layer_name(uint8_t link_layer)
{
	static const char *const names[] = {
		[IBV_LINK_LAYER_INFINIBAND] = "InfiniBand", [IBV_LINK_LAYER_ETHERNET] = "Ethernet (RoCE)",
	};

	return name_of(names, NAME_COUNT(names), link_layer, "unspecified");
}

const char *qp_state_name(enum ibv_qp_state state)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
		[IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return name_of(names, NAME_COUNT(names), state, "unknown");
}

int mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

void gid_format(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, len))
		snprintf(buf, len, "?");
}

const char *gid_type_name(uint32_t gid_type)
{
	static const char *const names[] = {
		[IBV_GID_TYPE_IB] = "IB", [IBV_GID_TYPE_ROCE_V1] = "RoCE v1",
		[IBV_GID_TYPE_ROCE_V2] = "RoCE v2",
	};

	return name_of(names, NAME_COUNT(names), gid_type, "unknown");
}

bool gid_is_zero(const union ibv_gid *gid)
{
	static const union ibv_gid zero;

	return !memcmp(gid, &zero, sizeof(zero));
}

bool gid_is_ipv4_mapped(const union ibv_gid *gid)
{
	return IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)gid->raw);
}

static bool gid_is_link_local(const union ibv_gid *gid)
{
	return IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)gid->raw);
}

/* How good a GID is for a connection; 0 means unusable.  Higher wins. */
static int gid_score(const struct ibv_gid_entry *e)
{
	if (gid_is_zero(&e->gid))
		return 0;
	if (e->gid_type == IBV_GID_TYPE_ROCE_V2)
		return gid_is_ipv4_mapped(&e->gid) ? 4 : gid_is_link_local(&e->gid) ? 2 : 3;
	return 1;
}

static const char *gid_note(const struct ibv_gid_entry *e)
{
	if (gid_is_ipv4_mapped(&e->gid))
		return "IPv4-mapped";
	if (gid_is_link_local(&e->gid))
		return "link-local";
	return "";
}

/*
 * Reads PORT's GIDs in use into a new array; returns their count, or -1.
 * ibv_query_gid_table returns every valid entry of every port in one call:
 * asking entry by entry costs a system call per slot, and on rxe all but a
 * few of its 1024 slots are empty.
 */
static int gid_table_read(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *pa,
			  struct ibv_gid_entry **out)
{
	struct ibv_device_attr attr;
	struct ibv_gid_entry *entries;
	size_t max;
	ssize_t got;
	int rc, n = 0;

	rc = ibv_query_device(ctx, &attr);
	if (rc) {
		report_verb_error("ibv_query_device", rc);
		return -1;
	}
	max = (size_t)(pa->gid_tbl_len ? pa->gid_tbl_len : 1) * (attr.phys_port_cnt ? attr.phys_port_cnt : 1);
	entries = calloc(max, sizeof(*entries));
	if (!entries) {
		report_verb_error("calloc (GID table)", ENOMEM);
		return -1;
	}
	got = ibv_query_gid_table(ctx, entries, max, 0);
	if (got < 0) {
		report_verb_error("ibv_query_gid_table", (int)-got);
		free(entries);
		return -1;
	}
	for (ssize_t i = 0; i < got; i++)
		if (entries[i].port_num == port && !gid_is_zero(&entries[i].gid))
			entries[n++] = entries[i];
	*out = entries;
	return n;
}

static void gid_report_valid(const char *why, int requested, const struct ibv_gid_entry *e, int n,
			     uint8_t port)
{
	char valid[256] = "none";
	size_t used = 0;

	for (int i = 0; i < n && used < sizeof(valid); i++)
		used += snprintf(valid + used, sizeof(valid) - used, "%s%u", i ? ", " : "",
				 e[i].gid_index);
	report_error("GID index %d %s on port %u; indexes in use: %s. Pick one with -x N",
		     requested, why, port, valid);
}

int gid_choose(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *pa,
	       int requested, int *index, struct ibv_gid_entry *entry)
{
	struct ibv_gid_entry *entries;
	int n, best = -1;

	if (requested == CLI_GID_AUTO && pa->link_layer == IBV_LINK_LAYER_INFINIBAND) {
		*index = GID_NONE;
		memset(entry, 0, sizeof(*entry));
		return 0;
	}
	n = gid_table_read(ctx, port, pa, &entries);
	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (requested != CLI_GID_AUTO) {
			if ((int)entries[i].gid_index == requested)
				best = i;
		} else if (best < 0 || gid_score(&entries[i]) > gid_score(&entries[best]) ||
			   (gid_score(&entries[i]) == gid_score(&entries[best]) &&
			    entries[i].gid_index < entries[best].gid_index)) {
			best = i;
		}
	}
	if (best < 0) {
		if (requested == CLI_GID_AUTO)
			report_error("port %u has no GID in use: give its network interface an IP "
				     "address (RoCE GIDs are made from the interface's addresses)", port);
		else
			gid_report_valid(requested < pa->gid_tbl_len ? "is empty" : "is past the table's end",
					 requested, entries, n, port);
		free(entries);
		return -1;
	}
	*entry = entries[best];
	*index = (int)entries[best].gid_index;
	free(entries);
	return 0;
}

int gid_table_print(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *pa,
		    int chosen)
{
	struct ibv_gid_entry *entries;
	char key[32], addr[GID_STR_LEN];
	int n;

	n = gid_table_read(ctx, port, pa, &entries);
	if (n < 0)
		return -1;
	show("GID table", "port %u: %d of %d entries in use", port, n, pa->gid_tbl_len);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "  gid[%u]", entries[i].gid_index);
		gid_format(&entries[i].gid, addr, sizeof(addr));
		show(key, "%-26s %s%s%s%s", addr, gid_type_name(entries[i].gid_type),
		     *gid_note(&entries[i]) ? ", " : "", gid_note(&entries[i]),
		     (int)entries[i].gid_index == chosen ? "  <- chosen" : "");
	}
	free(entries);
	return 0;
}

static unsigned long long read_counter(const char *dir, const char *name, bool *ok)
{
	char path[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f || fscanf(f, "%llu", &v) != 1)
		*ok = false;
	if (f)
		fclose(f);
	return v;
}

/* Twice the kernel's 10 ms cache of hw_counters (RDMA_HW_STATS_DEFAULT_LIFESPAN), and the most a reading waits for its copy to move. */
#define COUNTER_LIFESPAN_MS 20
#define COUNTER_PATIENCE_MS 200

static void read_counters_now(const char *dir, struct dev_counters *out)
{
	clock_start(&out->at);
	out->ok = true;
	out->sent_pkts = read_counter(dir, "sent_pkts", &out->ok);
	out->rcvd_pkts = read_counter(dir, "rcvd_pkts", &out->ok);
	out->send_rnr = read_counter(dir, "send_rnr_err", &out->ok);
	out->rcvd_rnr = read_counter(dir, "rcvd_rnr_err", &out->ok);
}

static void nap_ms(long ms)
{
	struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L };

	if (ms > 0)
		nanosleep(&t, NULL);
}

void dev_counters_read(struct ibv_context *ctx, uint8_t port, const struct dev_counters *before,
		       struct dev_counters *out)
{
	char dir[192];
	struct timespec first;

	snprintf(dir, sizeof(dir), "/sys/class/infiniband/%s/ports/%u/hw_counters",
		 ibv_get_device_name(ctx->device), port);
	if (!before) {
		read_counters_now(dir, out);
		return;
	}
	nap_ms(COUNTER_LIFESPAN_MS - ms_since(&before->at));
	/*
	 * 20 ms was not always enough: on a loaded machine a reader saw
	 * +0 after 64 blocks moved in 31 ms (make test-kv).  So while the copy
	 * has not moved since BEFORE, read again, up to COUNTER_PATIENCE_MS.  A
	 * run that sent nothing waits that long, and says +0.
	 */
	clock_start(&first);
	do {
		read_counters_now(dir, out);
		if (!out->ok || out->sent_pkts != before->sent_pkts ||
		    out->rcvd_pkts != before->rcvd_pkts)
			return;
		nap_ms(5);
	} while (ms_since(&first) < COUNTER_PATIENCE_MS);
}

void dev_counters_show(struct ibv_context *ctx, uint8_t port, const struct dev_counters *before,
		       const struct dev_counters *after, const struct counters_words *words)
{
	const char *name = ibv_get_device_name(ctx->device);
	bool rnr = after->send_rnr != before->send_rnr || after->rcvd_rnr != before->rcvd_rnr;

	if (!before->ok || !after->ok) {
		show("device counters", "not readable under /sys/class/infiniband/%s/ports/%u/hw_counters",
		     name, port);
		return;
	}
	show("device counters", "%s: sent_pkts +%llu, rcvd_pkts +%llu %s", name,
	     after->sent_pkts - before->sent_pkts, after->rcvd_pkts - before->rcvd_pkts, words->over);
	show("RNR NAKs", "sent +%llu, received +%llu: %s", after->send_rnr - before->send_rnr,
	     after->rcvd_rnr - before->rcvd_rnr, rnr ? words->rnr : words->no_rnr);
}
