/* post_wr.h: stage 4 of the verbs workflow: post work requests (SEND/RECV, RDMA WRITE, WRITE with immediate, READ). */
#ifndef RDMA_STEPS_POST_WR_H
#define RDMA_STEPS_POST_WR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include "cq_qp_rts.h"
#include "fault.h"
#include "reg_mr.h"

/* Stage 4's long-only option keys (cli.h's blocks). */
enum post_wr_key {
	CLI_KEY_IMM = CLI_STAGE_KEYS(4),	/* --imm */
	CLI_KEY_PLACEMENT,			/* --placement */
};

#define DEFAULT_IMM 0x1234abcd

enum wr_op {
	OP_SEND, OP_WRITE, OP_WRITE_IMM, OP_READ,	/* the ones every later step loops */
	OP_FETCH_ADD, OP_CMP_SWAP, OP_ATOMIC_WRITE, OP_FLUSH,
};

/*
 * -o flush's placement type, what its completion promises of the bytes it
 * names: IBV_FLUSH_GLOBAL (visible to every reader of the target's memory) or
 * IBV_FLUSH_PERSISTENT (in memory that keeps them through a power loss).
 */
enum flush_placement { PLACE_GLOBAL, PLACE_PERSISTENT };

/* The atomics' operands: the target's word starts at ATOMIC_BEFORE. */
#define ATOMIC_LEN 8
#define ATOMIC_BEFORE 0x1000ULL
#define ATOMIC_ADD 0x24ULL	/* fetch_add: 0x1000 + 0x24 = 0x1024 */
#define ATOMIC_SWAP 0xcafeULL	/* cmp_swap: 0x1000 becomes 0xcafe */
#define ATOMIC_WRITE_VALUE 0x1122334455667788ULL	/* atomic_write: all 8 bytes placed at once */

/*
 * The device's bit for ATOMIC WRITE in device_cap_flags_ex, which rdma-core 44
 * has no name for: the kernel's IB_DEVICE_ATOMIC_WRITE (include/rdma/ib_verbs.h),
 * IB_UVERBS_DEVICE_ATOMIC_WRITE = 1ULL << 40 (include/uapi/rdma/ib_user_verbs.h).
 */
#define DEVICE_CAP_ATOMIC_WRITE (1ULL << 40)

/*
 * The device's bits for FLUSH, which rdma-core names nowhere in verbs.h (56
 * neither): the kernel's IB_DEVICE_FLUSH_GLOBAL and IB_DEVICE_FLUSH_PERSISTENT,
 * IB_UVERBS_DEVICE_FLUSH_GLOBAL = 1ULL << 38 and _PERSISTENT = 1ULL << 39
 * (include/uapi/rdma/ib_user_verbs.h, Linux 6.2 and later).
 */
#define DEVICE_CAP_FLUSH_GLOBAL (1ULL << 38)
#define DEVICE_CAP_FLUSH_PERSISTENT (1ULL << 39)

/*
 * A test aid: RDMA_STEPS_UNCHECKED=atomic_write skips the capability check of
 * -o atomic_write, so that a run shows what a device without it does with the
 * post.  RDMA_STEPS_CAPS cannot do it: that aid only lowers what a device offers.
 */
#define UNCHECKED_ENV "RDMA_STEPS_UNCHECKED"

struct post_opts {
	enum wr_op op;
	uint32_t imm;
	bool no_inline;	/* the CPU must not read the payload (GPU memory): never inline */
	bool unsignaled;	/* no completion for this WR: a later signalled one retires it */
	enum flush_placement placement;	/* -o flush: --placement */
};

void post_opts_default(struct post_opts *opts);

/*
 * Stage 4's part of the command line, -o and --imm, filling a struct
 * post_opts; POST_WR_OP_STAGE takes -o alone, for a step that numbers its
 * messages with the immediate value itself.  cli_parse fills every one, as
 * its entry says: the stage has no parse function.
 */
extern const struct cli_option post_wr_cli_options[];
extern const struct cli_option post_wr_op_cli_options[];
#define POST_WR_STAGE(opts) { post_wr_cli_options, NULL, (opts) }
#define POST_WR_OP_STAGE(opts) { post_wr_op_cli_options, NULL, (opts) }

const char *op_name(enum wr_op op);

/*
 * Least privilege for OP on this side (the target, or the initiator): a
 * WRITE target gets remote_write, a READ target remote_read, an atomic's
 * target remote_atomic, a buffer the NIC writes into (a SEND's target, a
 * READ's or an atomic's initiator) local_write, and one it only reads (a
 * SEND's or a WRITE's initiator) no right at all.  -a overrides it.
 */
void grant_op_access(struct reg_mr_opts *mr, const struct post_opts *opts, bool target);

/* Whether OP is an atomic (fetch_add, cmp_swap, atomic_write), which works on one aligned 8-byte word. */
bool op_is_atomic(enum wr_op op);

/* Whether OP is send, write, write_imm or read: the operations later steps loop; the rest are step 04's. */
bool op_is_basic(enum wr_op op);

/*
 * Fails, saying why, if this build cannot post OPTS's operation at all: -o
 * flush where the verbs.h it was built against (rdma-core 44 or older) has no
 * ibv_wr_flush.  Before anything is created.
 */
int check_op_built(const struct post_opts *opts);

/* Fails, saying why, if OPTS's options do not go together (--placement without -o flush). */
int post_opts_check(const struct post_opts *opts);

/*
 * Fails, saying why, unless DEV can FLUSH to OPTS's placement type (bit 38 or
 * 39 of device_cap_flags_ex); before anything is created.
 */
int check_flush_support(const struct rdma_dev *dev, const struct post_opts *opts);

/*
 * Fails, saying why, unless DEV can do atomics (its atomic_cap) and a buffer
 * of LEN bytes holds the word OP works on; before anything is created.
 */
int check_atomic_support(const struct rdma_dev *dev, enum wr_op op, size_t len);

/*
 * The QP's send ops OP needs from ibv_create_qp_ex (stage 3's hook): ATOMIC
 * WRITE and FLUSH have no field in struct ibv_send_wr and are posted through
 * the extended API only (FLUSH after a WRITE of the bytes it makes durable);
 * 0 for the others, which ibv_post_send takes.
 */
uint64_t op_send_ops(enum wr_op op);

/* Whether OP consumes a receive on the target (SEND and WRITE with immediate do). */
bool op_needs_recv(enum wr_op op);

/*
 * The wr_id of each kind of work request, which its completion carries back:
 * a failed completion has no opcode, so its wr_id alone says which WR it was.
 */
#define WR_ID_RECV 1	/* a receive */
#define WR_ID_SEND 2	/* the operation on the send queue: SEND, WRITE or READ */
#define WR_ID_SEND_AFTER_ERR 3	/* --violate: the same operation, posted again on the QP in ERR */
#define WR_ID_RECV_AFTER_ERR 4	/* --violate: a receive posted on the QP in ERR */

/* What a wr_id of ours tags: "receive", "send-queue operation", ..., or "unknown". */
const char *wr_id_name(uint64_t wr_id);

/* Posts one receive of LEN bytes into BUF: the landing place for a SEND, or the slot a WRITE_IMM's notice uses. */
int post_receive(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len);

/* Posts N receives like post_receive's (N at most QUEUE_DEPTH) in one ibv_post_recv call. */
int post_receives(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len, int n);

/*
 * Posts OP on LEN bytes of BUF (to the peer's buffer, for the one-sided
 * operations); an atomic works on the peer's first 8 bytes and brings their
 * old value back into BUF's first 8.  It prepares a WR and posts it once.
 */
int post_operation(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len,
		   const struct post_opts *opts);

/*
 * A work request built once and posted many times.  A loop that posts the
 * same operation on the same buffer for every message, as perftest's and
 * NCCL's do, changes only what differs between messages (whether it asks for
 * a completion, the immediate value) and hands the same WR to every post:
 * filling a 128-byte WR and its SGE afresh for every message costs about a
 * third of what the provider then does to post it.  The WR points at the SGE
 * beside it, so a prepared WR stays where it was prepared: never copy one.
 */
struct prepared_op {
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	enum wr_op op;
};

struct prepared_recv {
	struct ibv_sge sge;
	struct ibv_recv_wr wr;
};

/* Builds the WR that post_operation would post for these arguments, into OP. */
void prepare_operation(struct prepared_op *op, const struct rdma_conn *conn,
		       const struct rdma_buf *buf, size_t len, const struct post_opts *opts);

/* Posts OP's WR, as it stands, on CONN's send queue. */
int post_prepared(struct rdma_conn *conn, struct prepared_op *op);

/* Whether the next post of OP asks for a completion. */
static inline void prepared_signal(struct prepared_op *op, bool signalled)
{
	if (signalled)
		op->wr.send_flags |= IBV_SEND_SIGNALED;
	else
		op->wr.send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
}

/* The immediate value the next post of OP carries (WRITE with immediate). */
static inline void prepared_imm(struct prepared_op *op, uint32_t imm)
{
	op->wr.imm_data = htonl(imm);
}

/*
 * Where the next post of OP, one-sided, lands: the peer's REMOTE_ADDR and
 * RKEY, for a protocol whose messages name a new buffer each time (the
 * exchange's address and rkey are the default).
 */
static inline void prepared_target(struct prepared_op *op, uint64_t remote_addr, uint32_t rkey)
{
	op->wr.wr.rdma.remote_addr = remote_addr;
	op->wr.wr.rdma.rkey = rkey;
}

/*
 * The injected failure of ibv_wr_complete (a fault point in place of the
 * doorbell): drops the batch begun on QPX, as a refused one is, and returns
 * the errno fault_at() set.  Any later step's extended post may use it too.
 */
int abort_batch(struct ibv_qp_ex *qpx);

/* Builds the receive that post_receive would post for BUF and LEN, into R. */
void prepare_receive(struct prepared_recv *r, const struct rdma_buf *buf, size_t len);

/* Posts R's receive, as it stands, on CONN's receive queue. */
int post_prepared_receive(struct rdma_conn *conn, struct prepared_recv *r);

/* The target's word before an atomic: ATOMIC_BEFORE, in BUF's first 8 bytes. */
void atomic_word_set(const struct rdma_buf *buf);

/* Fails, naming both values, unless OP left the target's word as it should. */
int atomic_check_target(const struct rdma_buf *buf, enum wr_op op);

/* Says what the target's word holds now, after a run that failed. */
void atomic_show_word(const struct rdma_buf *buf);

/* Fails unless the atomic brought ATOMIC_BEFORE back into the initiator's first 8 bytes. */
int atomic_check_fetched(const struct rdma_buf *buf);

/* Says what the FLUSH's successful completion WC means for the LEN bytes it named at the peer. */
void flush_show_done(const struct rdma_conn *conn, size_t len, const struct post_opts *opts);

/* Stage 4's fault points: posting, and a completion (completion.h) that comes back failed. */
extern const struct fault_point post_wr_faults[];

#endif
