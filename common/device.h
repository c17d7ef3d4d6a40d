/* device.h: device lookup, GID choice, the names of verbs enums and a port's counters, shared by every step. */
#ifndef RDMA_STEPS_DEVICE_H
#define RDMA_STEPS_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <infiniband/verbs.h>

/* INET6_ADDRSTRLEN: a GID prints like an IPv6 address. */
#define GID_STR_LEN 46

/* No GID: on an InfiniBand link layer the peer is addressed by its LID alone. */
#define GID_NONE (-1)

/*
 * Finds the device called NAME in LIST (the first device when NAME is NULL).
 * When there is none, reports which devices exist and how to pick one.
 */
struct ibv_device *device_lookup(struct ibv_device **list, int count, const char *name);

/* Says that there is no RDMA device and how to get one. */
void device_report_none(void);

/* A comma-separated list of the devices in LIST, for messages. */
void device_names(struct ibv_device **list, int count, char *buf, size_t len);

const char *transport_name(enum ibv_transport_type transport);
const char *link_layer_name(uint8_t link_layer);
const char *qp_state_name(enum ibv_qp_state state);
int mtu_bytes(enum ibv_mtu mtu);

void gid_format(const union ibv_gid *gid, char *buf, size_t len);

/* An all-zero GID (an empty table entry, or a peer that chose none). */
bool gid_is_zero(const union ibv_gid *gid);

/* ::ffff:a.b.c.d, a RoCE v2 GID made from an IPv4 address. */
bool gid_is_ipv4_mapped(const union ibv_gid *gid);
const char *gid_type_name(uint32_t gid_type);

/*
 * Picks the GID index to use on PORT: REQUESTED if it names a GID in use,
 * otherwise (REQUESTED == CLI_GID_AUTO) the best entry in the table:
 * RoCE v2 with an IPv4-mapped address, then other RoCE v2, then RoCE v1 or
 * IB; all-zero entries never.  On an InfiniBand link layer with no explicit
 * request the answer is GID_NONE.  Returns 0 and fills *index and *entry, or
 * -1 after reporting why no GID can be used.
 */
int gid_choose(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *port_attr,
	       int requested, int *index, struct ibv_gid_entry *entry);

/* Prints every GID in use on PORT with its type, marking index CHOSEN. */
int gid_table_print(struct ibv_context *ctx, uint8_t port, const struct ibv_port_attr *port_attr,
		    int chosen);

/* A port's packet and RNR counters (hw_counters in sysfs), shared by every process on it. */
struct dev_counters {
	bool ok;	/* every counter could be read */
	unsigned long long sent_pkts, rcvd_pkts, send_rnr, rcvd_rnr;
	struct timespec at;	/* when they were read */
};

/*
 * Reads CTX's port PORT counters from /sys/class/infiniband/NAME/ports/PORT/
 * hw_counters.  The kernel answers a read from its copy for 10 ms after the
 * last refresh (RDMA_HW_STATS_DEFAULT_LIFESPAN): a reading after BEFORE (the
 * one to subtract from, or NULL) first waits out the rest of 20 ms since it,
 * or a short run would show BEFORE's figures again.  The one way every step
 * reads them.
 */
void dev_counters_read(struct ibv_context *ctx, uint8_t port, const struct dev_counters *before,
		       struct dev_counters *out);

/* What a step says of the counters it read around a phase of its own. */
struct counters_words {
	const char *over;	/* the phase, and who else adds to the counts */
	const char *no_rnr;	/* what no RNR NAK means in it */
	const char *rnr;	/* what one or more mean */
};

/*
 * The two lines every step prints of what crossed CTX's port PORT from
 * BEFORE to AFTER: "device counters" (packets sent and received, over
 * WORDS->over) and "RNR NAKs" (with the step's reading of them); one line
 * saying they could not be read, where either reading failed.
 */
void dev_counters_show(struct ibv_context *ctx, uint8_t port, const struct dev_counters *before,
		       const struct dev_counters *after, const struct counters_words *words);

#endif
