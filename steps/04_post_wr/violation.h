/* violation.h: stage 4 broken on purpose (--violate): memory protection at work, seen from both ends of the wire. */
#ifndef RDMA_STEPS_VIOLATION_H
#define RDMA_STEPS_VIOLATION_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "cq_qp_rts.h"
#include "post_wr.h"
#include "reg_mr.h"

/* What --violate breaks.  Both sides are given the same one; each does its part. */
enum violation {
	VIOLATE_NONE,
	VIOLATE_ACCESS,		/* target: its MR (and QP) lack the remote right the operation needs */
	VIOLATE_RKEY,		/* initiator: an rkey the target never handed out */
	VIOLATE_PAST_END,	/* initiator: the remote range ends one byte past the target's MR */
	VIOLATE_OTHER_PD,	/* initiator: the local buffer's MR belongs to a second PD */
	VIOLATE_SHORT_RECV,	/* target: a receive half the size of the SEND */
	VIOLATE_GONE,		/* target: destroys its QP, so that nothing answers */
};

/* Step 04's --violate KIND, filling an enum violation. */
extern const struct cli_option violation_cli_options[];
int violation_parse_option(int key, const char *arg, void *violation);
#define VIOLATION_STAGE(v) { violation_cli_options, violation_parse_option, (v) }

const char *violation_name(enum violation v);

/* Fails, saying which operations it needs, unless violation V can happen to OP. */
int violation_check_op(enum violation v, enum wr_op op);

/* grant_op_access, but the target of VIOLATE_ACCESS is refused the right POST's operation needs. */
void violation_prepare(struct reg_mr_opts *mr, enum violation v, const struct post_opts *post,
		       bool target);

/*
 * Between opening the session and connecting it: the initiator of
 * VIOLATE_GONE gets a retry_cnt of 6, since rxe takes 7 to mean "retry for
 * ever", and stage 3's 7 would never let the failure come.
 */
void violation_set_retry(struct rdma_conn *conn, enum violation v, bool target);

/*
 * The initiator's part: posts OP with the violation V applied, shows the
 * failed completion, the QP's error state and the flush of the next work
 * request.  Returns 0 if the operation failed as it should, -1 otherwise.
 */
int violate_as_initiator(struct rdma_dev *dev, struct rdma_conn *conn, const struct rdma_buf *buf,
			 const struct post_opts *post, enum violation v, int timeout_s);

/*
 * The target's part: fills its buffer with a guard pattern, posts the
 * receive OP needs (short, for VIOLATE_SHORT_RECV), and once the initiator is
 * done shows its completions and its QP's state and proves the buffer
 * unchanged.  Returns 0 if nothing was written, -1 otherwise.
 */
int violate_as_target(struct rdma_conn *conn, const struct rdma_buf *buf,
		      const struct post_opts *post, enum violation v, int timeout_s);

#endif
