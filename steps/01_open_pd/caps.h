/* caps.h: stage 1's test aid: RDMA_STEPS_CAPS makes a run see a device with smaller limits than the one at hand. */
#ifndef RDMA_STEPS_CAPS_H
#define RDMA_STEPS_CAPS_H

#include <infiniband/verbs.h>

#define CAPS_ENV "RDMA_STEPS_CAPS"

/*
 * RDMA_STEPS_CAPS=max_qp_wr=64,max_qp_rd_atom=4 lowers those limits in ATTR,
 * the device's own as ibv_query_device read them, so that every check made
 * against the device's limits takes the path another NIC (a smaller one, or
 * the peer's) would take, here on rxe.  It only lowers: a value above the
 * device's is refused, as is a name it does not know.  Prints each limit it
 * lowered.  0 (unset or empty: nothing changes), or -1 after saying what is
 * wrong and how to write it.
 */
int caps_apply(struct ibv_device_attr *attr, const char *dev_name);

#endif
