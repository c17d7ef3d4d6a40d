/* post_wr.c: stage 4 of the verbs workflow: post work requests (SEND/RECV, RDMA WRITE, WRITE with immediate, READ). */
#include "post_wr.h"
#include "dev_limits.h"
#include "fault.h"
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct fault_point post_wr_faults[] = {
	{ "post_recv", "ibv_post_recv", ENOMEM },
	{ "post_send", "ibv_post_send", ENOMEM },
	{ "completion", "a completion (status RETRY_EXC_ERR)", EIO },
	{ 0 },
};

static const char *const op_names[] = {
	[OP_SEND] = "send",	  [OP_WRITE] = "write",	       [OP_WRITE_IMM] = "write_imm",
	[OP_READ] = "read",	  [OP_FETCH_ADD] = "fetch_add", [OP_CMP_SWAP] = "cmp_swap",
	[OP_ATOMIC_WRITE] = "atomic_write", [OP_FLUSH] = "flush",
};

static const char *const placement_names[] = {
	[PLACE_GLOBAL] = "global",
	[PLACE_PERSISTENT] = "persistent",
};

void post_opts_default(struct post_opts *opts)
{
	*opts = (struct post_opts){ .op = OP_SEND, .imm = DEFAULT_IMM };
}

const struct cli_option post_wr_cli_options[] = {
	{ "op", 'o', "OP", "send, write, write_imm, read, fetch_add, cmp_swap, atomic_write or "
			   "flush (default: send)", CLI_NAME_AT(struct post_opts, op, "operation", op_names, 0) },
	{ "imm", CLI_KEY_IMM, "VALUE", "the immediate value of write_imm (default: 0x1234abcd)", CLI_U32_AT(struct post_opts, imm) },
	{ "placement", CLI_KEY_PLACEMENT, "TYPE", "what the FLUSH of -o flush asks of the bytes "
						  "WRITE placed: global (visible to every reader "
						  "there, the default) or persistent", CLI_NAME_AT(struct post_opts, placement, "placement type", placement_names, 0) },
	{ 0 },
};

const struct cli_option post_wr_op_cli_options[] = {
	{ "op", 'o', "OP", "send, write, write_imm or read (default: send)", CLI_NAME_AT(struct post_opts, op, "operation", op_names, 0) },
	{ 0 },
};

const char *op_name(enum wr_op op)
{
	return op_names[op];
}

/*
 * The target of -o flush: the WRITE before the FLUSH needs remote_write, the
 * FLUSH itself the right of its placement type.  The initiator's NIC only
 * reads its buffer for the WRITE, which needs no right.
 */
static void grant_flush_access(struct reg_mr_opts *mr, enum flush_placement placement, bool target)
{
#ifdef HAVE_IBV_WR_FLUSH
	int flush = placement == PLACE_PERSISTENT ? IBV_ACCESS_FLUSH_PERSISTENT : IBV_ACCESS_FLUSH_GLOBAL;

	if (target)
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | flush,
			     placement == PLACE_PERSISTENT
			     ? "the target of a WRITE and a FLUSH to persistence: the peer writes "
			       "here, then asks that the bytes be made persistent"
			     : "the target of a WRITE and a FLUSH to global visibility: the peer "
			       "writes here, then asks that the bytes be visible to every reader");
	else
		reg_mr_grant(mr, 0, "the initiator of a WRITE and a FLUSH: our NIC only reads this "
			     "buffer, which needs no right; no peer may reach it");
#else
	/* Never reached: check_op_built refuses -o flush first in such a build. */
	(void)placement;
	(void)target;
	reg_mr_grant(mr, 0, "-o flush is not built here");
#endif
}

void grant_op_access(struct reg_mr_opts *mr, const struct post_opts *opts, bool target)
{
	enum wr_op op = opts->op;

	if (op == OP_FLUSH)
		grant_flush_access(mr, opts->placement, target);
	else if (op == OP_ATOMIC_WRITE)
		reg_mr_grant(mr, target ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : 0,
			     target ? "the target of ATOMIC WRITE: the peer's NIC writes 8 bytes here, "
				      "a write as far as rights go"
				    : "the initiator of ATOMIC WRITE: its 8 bytes travel in the work "
				      "request itself, and no peer may reach this buffer");
	else if (target && (op == OP_WRITE || op == OP_WRITE_IMM))
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
			     "the target of RDMA WRITE: the peer writes into this buffer");
	else if (target && op_is_atomic(op))
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
			     "the target of an atomic: the peer's NIC reads and rewrites 8 bytes here "
			     "(remote_atomic needs local_write too)");
	else if (target && op == OP_READ)
		reg_mr_grant(mr, IBV_ACCESS_REMOTE_READ,
			     "the target of RDMA READ: the peer reads this buffer, and nothing writes it");
	else if (op == OP_READ || op_is_atomic(op))
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE,
			     op == OP_READ ? "the initiator of RDMA READ: our NIC writes the fetched "
					     "bytes here; no peer may reach this buffer"
					   : "the initiator of an atomic: our NIC writes the old value "
					     "here; no peer may reach this buffer");
	else if (target)
		reg_mr_grant(mr, IBV_ACCESS_LOCAL_WRITE,
			     "the target of SEND: our NIC writes the received message here; no peer "
			     "may reach this buffer");
	else
		/* The NIC reading local memory, to send it, needs no right at all. */
		reg_mr_grant(mr, 0, op == OP_SEND ? "the initiator of SEND: our NIC only reads this "
			     "buffer, which needs no right; no peer may reach it"
			     : "the initiator of RDMA WRITE: our NIC only reads this buffer, which "
			     "needs no right; no peer may reach it");
}

bool op_is_atomic(enum wr_op op)
{
	return op == OP_FETCH_ADD || op == OP_CMP_SWAP || op == OP_ATOMIC_WRITE;
}

bool op_is_basic(enum wr_op op)
{
	return op == OP_SEND || op == OP_WRITE || op == OP_WRITE_IMM || op == OP_READ;
}

uint64_t op_send_ops(enum wr_op op)
{
#ifdef HAVE_IBV_WR_FLUSH
	if (op == OP_FLUSH)
		return IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_FLUSH;
#endif
	return op == OP_ATOMIC_WRITE ? IBV_QP_EX_WITH_ATOMIC_WRITE : 0;
}

int check_op_built(const struct post_opts *opts)
{
#ifndef HAVE_IBV_WR_FLUSH
	if (opts->op == OP_FLUSH) {
		report_error("-o flush posts ibv_wr_flush, which the verbs.h this program was built "
			     "against lacks: FLUSH (IBV_WR_FLUSH, IBV_ACCESS_FLUSH_GLOBAL) came in "
			     "rdma-core 45, and Debian 12 has 44; rebuild where rdma-core is 45 or "
			     "later, such as Debian 13 (rdma-core 56), or use another -o");
		return -1;
	}
#else
	(void)opts;
#endif
	return 0;
}

int post_opts_check(const struct post_opts *opts)
{
	if (opts->placement != PLACE_GLOBAL && opts->op != OP_FLUSH) {
		report_error("--placement goes with -o flush only: it is the FLUSH's placement type");
		return -1;
	}
	return 0;
}

/*
 * FLUSH is no atomic either: the device says it can, for each placement type,
 * in bits 38 and 39 of device_cap_flags_ex, which stage 1 read.
 */
int check_flush_support(const struct rdma_dev *dev, const struct post_opts *opts)
{
	const char *name = ibv_get_device_name(dev->ctx->device);
	bool persistent = opts->placement == PLACE_PERSISTENT;
	uint64_t bit = persistent ? DEVICE_CAP_FLUSH_PERSISTENT : DEVICE_CAP_FLUSH_GLOBAL;
	const char *flag = persistent ? "bit 39 (IB_DEVICE_FLUSH_PERSISTENT)"
			   : "bit 38 (IB_DEVICE_FLUSH_GLOBAL)";
	uint64_t flags = dev->cap_flags_ex;

	if (flags & bit) {
		show("device_cap_flags_ex", "0x%" PRIx64 ": %s set, %s does FLUSH to %s",
		     flags, flag, name,
		     persistent ? "persistence" : "global visibility");
		return 0;
	}
	report_error("-o flush --placement %s asks for FLUSH, but %s does not do it: %s of "
		     "device_cap_flags_ex 0x%" PRIx64 " is 0; rxe has it in Linux 6.12 and 7.3, not "
		     "in 6.1: boot the VM with RDMA_VM_KERNEL=trixie-backports, or use another -o",
		     placement_names[opts->placement], name, flag, flags);
	return -1;
}

/*
 * ATOMIC WRITE is no atomic of atomic_cap's: the device says it can in bit 40
 * of device_cap_flags_ex, which stage 1 read (only ibv_query_device_ex has it).
 */
static int check_atomic_write(const struct rdma_dev *dev)
{
	const char *name = ibv_get_device_name(dev->ctx->device);
	const char *unchecked = getenv(UNCHECKED_ENV);
	uint64_t flags = dev->cap_flags_ex;

	if (flags & DEVICE_CAP_ATOMIC_WRITE) {
		show("device_cap_flags_ex", "0x%" PRIx64 ": bit 40 (IB_DEVICE_ATOMIC_WRITE) set, %s "
		     "does ATOMIC WRITE", flags, name);
		return 0;
	}
	if (unchecked && !strcmp(unchecked, "atomic_write")) {
		show(UNCHECKED_ENV, "a test aid: bit 40 (IB_DEVICE_ATOMIC_WRITE) of %s's "
		     "device_cap_flags_ex 0x%" PRIx64 " is 0, and this run posts ATOMIC WRITE all the "
		     "same, to show what the device does with it", name, flags);
		return 0;
	}
	report_error("-o atomic_write asks for ATOMIC WRITE, but %s does not do it: bit 40 "
		     "(IB_DEVICE_ATOMIC_WRITE) of device_cap_flags_ex 0x%" PRIx64 " is 0; rxe has it "
		     "in Linux 6.12 and 7.3, not in 6.1: boot the VM with "
		     "RDMA_VM_KERNEL=trixie-backports, or use another -o", name,
		     flags);
	return -1;
}

int check_atomic_support(const struct rdma_dev *dev, enum wr_op op, size_t len)
{
	char request[32];

	snprintf(request, sizeof(request), "-o %s", op_name(op));
	if (op == OP_ATOMIC_WRITE ? check_atomic_write(dev)
	    : limit_check_atomics(dev, request, "use another -o: send, write, write_imm or read"))
		return -1;
	if (len < ATOMIC_LEN) {
		report_error("--size: an atomic works on %d bytes, more than the %zu registered: give "
			     "-s %d or more", ATOMIC_LEN, len, ATOMIC_LEN);
		return -1;
	}
	return 0;
}

bool op_needs_recv(enum wr_op op)
{
	return op == OP_SEND || op == OP_WRITE_IMM;
}

/* Says what the chain WRS of N receives, each one buffer, asked for. */
static void show_receives_posted(const struct ibv_recv_wr *wrs, int n)
{
	const struct ibv_sge *sge = wrs->sg_list;

	if (n == 1)
		show("ibv_post_recv", "receive posted: up to %u bytes into %p (lkey 0x%x)", sge->length,
		     (void *)(uintptr_t)sge->addr, sge->lkey);
	else
		show("ibv_post_recv", "%d receives posted in one call, a chain of work requests: each "
		     "up to %u bytes into %p (lkey 0x%x)", n, sge->length, (void *)(uintptr_t)sge->addr,
		     sge->lkey);
}

/* Posts the chain WRS, N receives linked by next, in one ibv_post_recv call. */
static int post_receive_chain(struct rdma_conn *conn, struct ibv_recv_wr *wrs, int n)
{
	struct ibv_recv_wr *bad;
	/* A receive must be waiting before the peer's SEND arrives, or the sender gets an RNR NAK. */
	int rc = fault_at("post_recv") ? errno : ibv_post_recv(conn->qp, wrs, &bad);

	if (rc) {
		report_verb_error("ibv_post_recv", rc);
		return -1;
	}
	if (showing())
		show_receives_posted(wrs, n);
	return 0;
}

int post_receives(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len, int n)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf->addr,
		.length = (uint32_t)len,
		.lkey = buf->mr->lkey,
	};
	struct ibv_recv_wr wrs[QUEUE_DEPTH];

	/* A chain: each WR's next points at the one after it, and one call posts them all. */
	for (int k = 0; k < n; k++)
		wrs[k] = (struct ibv_recv_wr){
			.wr_id = WR_ID_RECV,
			.next = k + 1 < n ? &wrs[k + 1] : NULL,
			.sg_list = &sge,
			.num_sge = 1,
		};
	return post_receive_chain(conn, wrs, n);
}

void prepare_receive(struct prepared_recv *r, const struct rdma_buf *buf, size_t len)
{
	*r = (struct prepared_recv){
		.sge = { .addr = (uintptr_t)buf->addr, .length = (uint32_t)len, .lkey = buf->mr->lkey },
		.wr = { .wr_id = WR_ID_RECV, .num_sge = 1 },
	};
	r->wr.sg_list = &r->sge;
}

int post_prepared_receive(struct rdma_conn *conn, struct prepared_recv *r)
{
	return post_receive_chain(conn, &r->wr, 1);
}

int post_receive(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len)
{
	struct prepared_recv r;

	prepare_receive(&r, buf, len);
	return post_prepared_receive(conn, &r);
}

static const enum ibv_wr_opcode wr_opcodes[] = {
	[OP_SEND] = IBV_WR_SEND,
	[OP_WRITE] = IBV_WR_RDMA_WRITE,
	[OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[OP_READ] = IBV_WR_RDMA_READ,
	[OP_FETCH_ADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
	[OP_CMP_SWAP] = IBV_WR_ATOMIC_CMP_AND_SWP,
	[OP_ATOMIC_WRITE] = IBV_WR_ATOMIC_WRITE,	/* posted by post_atomic_write, not in a WR */
	[OP_FLUSH] = IBV_WR_RDMA_WRITE,	/* post_write_flush posts the WRITE and the FLUSH after it */
};

/* An atomic names the peer's word by address and rkey, and carries its operands. */
static void set_atomic(struct ibv_send_wr *wr, const struct rdma_conn *conn, enum wr_op op)
{
	wr->wr.atomic.remote_addr = conn->remote.addr;
	wr->wr.atomic.rkey = conn->remote.rkey;
	wr->wr.atomic.compare_add = op == OP_FETCH_ADD ? ATOMIC_ADD : ATOMIC_BEFORE;
	wr->wr.atomic.swap = ATOMIC_SWAP;
}

static void show_atomic_posted(const struct rdma_conn *conn, enum wr_op op)
{
	if (op == OP_FETCH_ADD)
		show("ibv_post_send", "ATOMIC fetch_add posted: add 0x%llx to the 8 bytes at remote "
		     "addr 0x%llx, rkey 0x%x; their old value comes back here", ATOMIC_ADD,
		     (unsigned long long)conn->remote.addr, conn->remote.rkey);
	else
		show("ibv_post_send", "ATOMIC cmp_swap posted: if the 8 bytes at remote addr 0x%llx, "
		     "rkey 0x%x hold 0x%llx, make them 0x%llx; their old value comes back here",
		     (unsigned long long)conn->remote.addr, conn->remote.rkey, ATOMIC_BEFORE,
		     ATOMIC_SWAP);
}

void prepare_operation(struct prepared_op *op, const struct rdma_conn *conn,
		       const struct rdma_buf *buf, size_t len, const struct post_opts *opts)
{
	bool inline_data = (opts->op == OP_SEND || opts->op == OP_WRITE || opts->op == OP_WRITE_IMM) &&
			   !opts->no_inline && len <= conn->max_inline;

	*op = (struct prepared_op){
		.sge = { .addr = (uintptr_t)buf->addr, .length = (uint32_t)len, .lkey = buf->mr->lkey },
		.wr = {
			.wr_id = WR_ID_SEND,
			.num_sge = 1,
			.opcode = wr_opcodes[opts->op],
			.send_flags = opts->unsignaled ? 0 : IBV_SEND_SIGNALED,
		},
		.op = opts->op,
	};
	op->wr.sg_list = &op->sge;
	if (op_is_atomic(opts->op)) {
		set_atomic(&op->wr, conn, opts->op);
	} else if (opts->op != OP_SEND) {
		/* One-sided: the peer's address and rkey, learned in the exchange, name the target. */
		op->wr.wr.rdma.remote_addr = conn->remote.addr;
		op->wr.wr.rdma.rkey = conn->remote.rkey;
	}
	if (opts->op == OP_WRITE_IMM)
		op->wr.imm_data = htonl(opts->imm);
	/* Inline: the CPU copies small payloads into the WR itself, so the NIC need not read them. */
	if (inline_data)
		op->wr.send_flags |= IBV_SEND_INLINE;
}

/* Says what the operation OP, just posted, asked the NIC to do. */
static void show_posted(const struct rdma_conn *conn, const struct prepared_op *op)
{
	const char *inlined = op->wr.send_flags & IBV_SEND_INLINE ? ", inline" : "";

	if (op_is_atomic(op->op))
		show_atomic_posted(conn, op->op);
	else if (op->op == OP_SEND)
		show("ibv_post_send", "SEND of %u bytes posted%s: the peer's posted receive takes it",
		     op->sge.length, inlined);
	else
		show("ibv_post_send", "RDMA %s of %u bytes posted%s: remote addr 0x%llx, rkey 0x%x%s",
		     op->op == OP_READ ? "READ" : "WRITE", op->sge.length, inlined,
		     (unsigned long long)op->wr.wr.rdma.remote_addr, op->wr.wr.rdma.rkey,
		     op->op == OP_WRITE_IMM ? ", with immediate value" : "");
}

int post_prepared(struct rdma_conn *conn, struct prepared_op *op)
{
	struct ibv_send_wr *bad;
	int rc = fault_at("post_send") ? errno : ibv_post_send(conn->qp, &op->wr, &bad);

	if (rc) {
		report_verb_error("ibv_post_send", rc);
		return -1;
	}
	if (showing())
		show_posted(conn, op);
	return 0;
}

int abort_batch(struct ibv_qp_ex *qpx)
{
	int err = errno;

	ibv_wr_abort(qpx);
	return err;
}

/*
 * ATOMIC WRITE: the peer's 8 aligned bytes get ATOMIC_WRITE_VALUE in one
 * write, placed only after every WRITE posted before it on this QP: a flag
 * that a reader polling it never sees half-written or ahead of its data.
 * struct ibv_send_wr has no field for its value, so it goes through the
 * extended API, on a QP created for it (op_send_ops); the 8 bytes travel in
 * the work request, not from a registered buffer.
 */
static int post_atomic_write(struct rdma_conn *conn, const struct post_opts *opts)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(conn->qp);
	uint64_t value = ATOMIC_WRITE_VALUE;
	int rc;

	ibv_wr_start(qpx);
	qpx->wr_id = WR_ID_SEND;
	qpx->wr_flags = opts->unsignaled ? 0 : IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, conn->remote.rkey, conn->remote.addr, &value);
	rc = fault_at("post_send") ? abort_batch(qpx) : ibv_wr_complete(qpx);
	if (rc) {
		report_verb_error("ibv_wr_complete", rc);
		return -1;
	}
	show("ibv_wr_complete", "ATOMIC WRITE posted: 0x%llx into the 8 bytes at remote addr 0x%llx, "
	     "rkey 0x%x, in one write after every WRITE before it; nothing comes back",
	     ATOMIC_WRITE_VALUE, (unsigned long long)conn->remote.addr, conn->remote.rkey);
	return 0;
}

#ifdef HAVE_IBV_WR_FLUSH
/*
 * A WRITE of LEN bytes of BUF to the peer's buffer, then a FLUSH of the same
 * range, in one batch of the extended API: the WRITE places the bytes, the
 * FLUSH asks the peer's NIC to make them globally visible or persistent, and
 * its completion says it has.  Only the FLUSH asks for a completion: the
 * responder runs the QP's requests in order, so the FLUSH's acknowledgement
 * also covers the WRITE before it (a failed WRITE completes all the same).
 */
static int post_write_flush(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len,
			    const struct post_opts *opts)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(conn->qp);
	uint8_t type = opts->placement == PLACE_PERSISTENT ? IBV_FLUSH_PERSISTENT : IBV_FLUSH_GLOBAL;
	int rc;

	ibv_wr_start(qpx);
	qpx->wr_id = WR_ID_SEND;
	qpx->wr_flags = 0;
	ibv_wr_rdma_write(qpx, conn->remote.rkey, conn->remote.addr);
	ibv_wr_set_sge(qpx, buf->mr->lkey, (uintptr_t)buf->addr, (uint32_t)len);
	qpx->wr_flags = opts->unsignaled ? 0 : IBV_SEND_SIGNALED;
	/* IBV_FLUSH_RANGE: these LEN bytes; IBV_FLUSH_MR would flush the whole MR the rkey names. */
	ibv_wr_flush(qpx, conn->remote.rkey, conn->remote.addr, len, type, IBV_FLUSH_RANGE);
	rc = fault_at("post_send") ? abort_batch(qpx) : ibv_wr_complete(qpx);
	if (rc) {
		report_verb_error("ibv_wr_complete", rc);
		return -1;
	}
	show("ibv_wr_complete", "RDMA WRITE of %zu bytes and FLUSH posted in one batch: remote addr "
	     "0x%llx, rkey 0x%x, placement type %s, range of the same %zu bytes; only the FLUSH is "
	     "signalled", len, (unsigned long long)conn->remote.addr, conn->remote.rkey,
	     placement_names[opts->placement], len);
	return 0;
}
#endif

int post_operation(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len,
		   const struct post_opts *opts)
{
	struct prepared_op op;

	if (opts->op == OP_ATOMIC_WRITE)
		return post_atomic_write(conn, opts);
#ifdef HAVE_IBV_WR_FLUSH
	if (opts->op == OP_FLUSH)
		return post_write_flush(conn, buf, len, opts);
#endif
	prepare_operation(&op, conn, buf, len, opts);
	return post_prepared(conn, &op);
}

const char *wr_id_name(uint64_t wr_id)
{
	static const char *const names[] = {
		[WR_ID_RECV] = "receive",
		[WR_ID_SEND] = "send-queue operation",
		[WR_ID_SEND_AFTER_ERR] = "send-queue operation posted after the error",
		[WR_ID_RECV_AFTER_ERR] = "receive posted after the error",
	};

	return name_of(names, NAME_COUNT(names), wr_id, "unknown");
}

void atomic_word_set(const struct rdma_buf *buf)
{
	uint64_t before = ATOMIC_BEFORE;

	memcpy(buf->addr, &before, sizeof(before));
}

int atomic_check_target(const struct rdma_buf *buf, enum wr_op op)
{
	uint64_t now, want = op == OP_FETCH_ADD ? ATOMIC_BEFORE + ATOMIC_ADD
			     : op == OP_ATOMIC_WRITE ? ATOMIC_WRITE_VALUE : ATOMIC_SWAP;

	memcpy(&now, buf->addr, sizeof(now));
	if (now != want) {
		report_error("atomic check: the word at %p holds 0x%llx, where %s should have left "
			     "0x%llx", buf->addr, (unsigned long long)now, op_name(op),
			     (unsigned long long)want);
		return -1;
	}
	show("atomic check", "the 8 bytes at %p went from 0x%llx to 0x%llx: %s, and no CPU here "
	     "took part", buf->addr, ATOMIC_BEFORE, (unsigned long long)now,
	     op == OP_ATOMIC_WRITE ? "the peer's NIC wrote all 8 in one store"
	     : "the peer's NIC read, changed and wrote them as one step");
	return 0;
}

void atomic_show_word(const struct rdma_buf *buf)
{
	uint64_t now;

	memcpy(&now, buf->addr, sizeof(now));
	show("target word", "the 8 bytes at %p hold 0x%llx%s", buf->addr, (unsigned long long)now,
	     now == ATOMIC_BEFORE ? ", as before the run: nothing reached them" : "");
}

int atomic_check_fetched(const struct rdma_buf *buf)
{
	uint64_t got;

	memcpy(&got, buf->addr, sizeof(got));
	if (got != ATOMIC_BEFORE) {
		report_error("atomic check: the old value came back as 0x%llx, not 0x%llx",
			     (unsigned long long)got, ATOMIC_BEFORE);
		return -1;
	}
	show("atomic check", "the old value 0x%llx came back into our buffer", ATOMIC_BEFORE);
	return 0;
}

void flush_show_done(const struct rdma_conn *conn, size_t len, const struct post_opts *opts)
{
	show("flush", "done: the %zu bytes at remote addr 0x%llx that the WRITE placed are %s, as "
	     "the FLUSH's completion promises; no byte came back", len,
	     (unsigned long long)conn->remote.addr,
	     opts->placement == PLACE_PERSISTENT ? "persistent in the target's memory"
	     : "visible to every reader of the target's memory");
}
