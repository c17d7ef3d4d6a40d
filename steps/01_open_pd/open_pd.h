/* open_pd.h: stage 1 of the verbs workflow: open the device and allocate a protection domain. */
#ifndef RDMA_STEPS_OPEN_PD_H
#define RDMA_STEPS_OPEN_PD_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "cli.h"
#include "fault.h"

struct rdma_dev {
	struct ibv_context *ctx;		/* the open device */
	bool ctx_borrowed;			/* ctx was opened by rdma_cm: not ours to close */
	struct ibv_device_attr attr;		/* its limits */
	uint64_t cap_flags_ex;			/* device_cap_flags_ex: bits past the 32 of attr's */
	struct ibv_odp_caps odp_caps;		/* what it can fault in on demand */
	uint8_t port;				/* the port used */
	struct ibv_port_attr port_attr;		/* state, MTU, LID, link layer */
	int gid_index;				/* GID used for addressing, or GID_NONE */
	struct ibv_gid_entry gid;		/* that GID and its type */
	struct ibv_pd *pd;			/* the protection domain */
};

/*
 * Stage 1: finds the device named in OPTS, opens it, reads its attributes
 * and its port's, chooses the GID and allocates a protection domain.
 * Returns 0, or -1 with nothing left open.
 */
int open_device_pd(const struct cli_common *opts, struct rdma_dev *dev);

/*
 * Stage 1 on a device that rdma_cm opened: CTX is the one it resolved an
 * address to, and PORT its port; reads their attributes, takes GID index
 * GID_IDX (the one the address maps to) and allocates a PD.  The context
 * stays rdma_cm's.
 * Returns 0, or -1 with nothing left allocated.
 */
int adopt_device_pd(struct ibv_context *ctx, uint8_t port, int gid_idx, struct rdma_dev *dev);

/* Frees what open_device_pd created, in reverse order; returns how many releases failed. */
int close_device_pd(struct rdma_dev *dev);

/*
 * Whether DEV is a device of software (rxe, siw): a hardware NIC is a PCI
 * device, with a device link under /sys/class/infiniband/NAME.  A program
 * that waits on it decides from this whether to give its CPU away between
 * looks: a software device's "NIC" is kernel work on the same CPUs.
 */
bool rdma_dev_is_software(const struct rdma_dev *dev);

/* Stage 1's fault points: opening the device and allocating the PD, and freeing both (release_pd, release_context). */
extern const struct fault_point open_pd_faults[];

#endif
