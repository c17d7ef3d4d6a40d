/* teardown.h: release helpers for verbs objects; each accepts NULL and reports what it did. */
#ifndef RDMA_STEPS_TEARDOWN_H
#define RDMA_STEPS_TEARDOWN_H

#include <infiniband/verbs.h>

/*
 * Each returns 0 when the object is gone (or was NULL) and 1 when the verb
 * failed, so that a close function can add the failures up and go on
 * releasing the rest instead of stopping at the first one.  Each verb is a
 * fault point named after it (destroy_qp ... close_device), declared with
 * the points of the stage that creates the object.
 */
int release_qp(struct ibv_qp *qp);
int release_cq(struct ibv_cq *cq);
int release_comp_channel(struct ibv_comp_channel *channel);
/*
 * PAGES says what deregistering did to the memory, in the book's words; NULL for
 * the usual case, an MR that alone pinned its pages ("its pages unpinned").
 */
int release_mr(struct ibv_mr *mr, const char *pages);
int release_pd(struct ibv_pd *pd);
int release_context(struct ibv_context *ctx);

#endif
