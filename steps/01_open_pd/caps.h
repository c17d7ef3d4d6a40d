/* caps.h: stage 1's test aid: RDMA_STEPS_CAPS makes a run see a device with smaller limits than the one at hand. */
#ifndef RDMA_STEPS_CAPS_H
#define RDMA_STEPS_CAPS_H

#include <infiniband/verbs.h>

#define CAPS_ENV "RDMA_STEPS_CAPS"

/*
 * RDMA_STEPS_CAPS=max_qp_wr=64,max_qp_rd_atom=4 lowers those limits in ATTR
 * and PORT_ATTR, the device's and the port's own as ibv_query_device and
 * ibv_query_port read them, so that every check made against the limits
 * (dev_limits.h) takes the path another NIC (a smaller one, or the peer's) would
 * take, here on rxe.  The names: max_qp_wr, max_sge, max_cqe, max_mw,
 * max_qp_rd_atom, max_qp_init_rd_atom, max_mr_size (64K, 1M, 1G allowed),
 * atomic_cap (none, hca, glob), mem_window_type_2 (0 clears
 * IBV_DEVICE_MEM_WINDOW_TYPE_2A and _2B), and the port's max_msg_sz.  It
 * only lowers: a value above the device's is refused, as is a name it does
 * not know.  Prints each limit it lowered.  0 (unset or empty: nothing
 * changes), or -1 after saying what is wrong and how to write it.
 */
int caps_apply(struct ibv_device_attr *attr, struct ibv_port_attr *port_attr,
	       const char *dev_name);

#endif
