/* first_touch.h: stage 4 with --odp: the first WRITE or READ into pages registered on demand and not there yet, timed beside a second into the same pages. */
#ifndef RDMA_STEPS_FIRST_TOUCH_H
#define RDMA_STEPS_FIRST_TOUCH_H

#include <stdbool.h>
#include <stdint.h>

#include "cq_qp_rts.h"
#include "open_pd.h"
#include "post_wr.h"
#include "reg_mr.h"

/*
 * Which buffer --odp registers on demand: the one the operation's bytes
 * land in, the target's for a WRITE and the initiator's for a READ, which
 * nothing has touched, so that its pages do not exist until the NIC's
 * first access faults them in.  The other side's buffer holds the bytes to
 * be sent, which the CPU writes first: its pages are there anyway, and it
 * is registered pinned, as without --odp.
 */
bool odp_lands_here(enum wr_op op, bool initiator);

/*
 * Fails, saying why, if --odp cannot go with OP or the other options
 * (--violate, --cm): it times a WRITE or a READ, two of them, with
 * side-channel barriers between them.  Before anything is created.
 */
int odp_opts_check(enum wr_op op, bool violation, bool cm);

/*
 * --odp, after stage 1 (stage 3's check_limits hook): the device pages on
 * demand (odp_caps, checked here on the pinned side and by stage 2 on the
 * other) and its rc_odp_caps name OP; then says which buffer is registered
 * on demand and why.  0 or -1.
 */
int odp_check_device(const struct rdma_dev *dev, enum wr_op op, bool initiator);

/*
 * The initiator's part: the WRITE (or READ) posted twice on LEN bytes of
 * BUF, each timed from the post to its completion, the first into pages
 * the NIC has not mapped yet, the second into the same pages; both times,
 * their ratio and what the first cost each page.  A READ's initiator, whose
 * buffer is the fresh one, also shows VmRSS and the buffer's present pages
 * before and after the first, and checks the bytes after each READ (SEED is
 * the target's pattern).  A WRITE sends SEED's pattern, then SEED + 1's.
 */
int first_touch_initiator(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len,
			  const struct post_opts *post, uint8_t seed, int timeout_s);

/*
 * A WRITE's target: VmRSS and the buffer's present pages before the first
 * WRITE and after it, the first WRITE's bytes (SEED's pattern) checked, then
 * the second's (SEED + 1's).  0 or -1.
 */
int first_touch_target(struct rdma_conn *conn, const struct rdma_buf *buf, uint8_t seed,
		       int timeout_s);

#endif
