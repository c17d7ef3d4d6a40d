/* cq_qp_rts.c: stage 3 of the verbs workflow: create the CQ and QP, exchange addresses, drive the QP to RTS. */
#include "cq_qp_rts.h"
#include "cm.h"
#include "dev_limits.h"
#include "device.h"
#include "fault.h"
#include "report.h"
#include "sock.h"
#include "teardown.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

const struct fault_point cq_qp_faults[] = {
	{ "create_comp_channel", "ibv_create_comp_channel", EMFILE },
	{ "create_cq", "ibv_create_cq", ENOMEM },
	{ "create_qp", "ibv_create_qp", ENOMEM },
	{ "modify_qp_init", "ibv_modify_qp (RESET -> INIT)", EINVAL },
	{ "modify_qp_rtr", "ibv_modify_qp (INIT -> RTR)", EINVAL },
	{ "modify_qp_rts", "ibv_modify_qp (RTR -> RTS)", EINVAL },
	{ "destroy_qp", "ibv_destroy_qp", EBUSY },
	{ "destroy_cq", "ibv_destroy_cq", EBUSY },
	{ "destroy_comp_channel", "ibv_destroy_comp_channel", EBUSY },
	{ 0 },
};

/* Retransmission timeout: 4.096 us * 2^14, about 67 ms per try. */
#define QP_TIMEOUT 14
#define QP_RETRY_CNT 7
/* 7 means "retry forever" when the peer has no receive posted yet. */
#define QP_RNR_RETRY 7
#define QP_MIN_RNR_TIMER 12
#define QP_RD_ATOMIC 1
/* As perftest: 1 would keep a GRH inside one subnet, so no router could pass it on. */
#define QP_HOP_LIMIT 255

const struct cli_option cq_qp_cli_options[] = {
	{ "events", 'e', NULL, "create a completion channel: sleep for completions instead of busy polling", CLI_FLAG_AT(struct conn_opts, events) },
	{ 0 },
};

/* The address vector's priority: what a switch reads to queue our packets (DSCP on RoCE). */
const struct cli_option cq_qp_path_cli_options[] = {
	{ "tclass", CLI_KEY_TCLASS, "N", "the traffic class our packets carry, 0 to 255: on RoCE the "
	  "IP header's DSCP << 2 | ECN, as NCCL_IB_TC (106: DSCP 26, ECN 2); each side sets its "
	  "own (default: 0; with --cm, the device's cma_roce_tos)", CLI_STAGE_PARSES },
	{ "sl", CLI_KEY_SL, "N", "the service level, 0 to 15, as NCCL_IB_SL: what InfiniBand "
	  "switches map to a virtual lane, and a RoCE NIC uses as its Ethernet priority (not with "
	  "--cm, where the kernel derives it from the traffic class; default: 0)", CLI_STAGE_PARSES },
	{ 0 },
};

const struct cli_option cq_qp_cm_cli_options[] = {
	{ "cm", CLI_KEY_CM, NULL, "connect through the RDMA connection manager (rdma_cm), not the "
	  "TCP side channel: HOST is an address of an RDMA device's interface, -p rdma_cm's port", CLI_FLAG_AT(struct conn_opts, cm) },
	{ 0 },
};

/* --tclass and --sl; cli_parse fills the others, as their entries say. */
int cq_qp_parse_option(int key, const char *arg, void *ctx)
{
	struct conn_opts *opts = ctx;
	int n;

	if (key == CLI_KEY_TCLASS) {
		/* One byte of the GRH, copied into the IPv4 ToS (IPv6 traffic class) on RoCE v2. */
		if (cli_parse_int("--tclass", arg, 0, 255, &n))
			return -1;
		opts->tclass = (uint8_t)n;
		opts->tclass_given = true;
		return 0;
	}
	/* --sl: four bits of the LRH on InfiniBand. */
	if (cli_parse_int("--sl", arg, 0, 15, &n))
		return -1;
	opts->sl = (uint8_t)n;
	opts->sl_given = true;
	return 0;
}

/*
 * A starting PSN no one can guess or repeat: a packet still in flight from an
 * earlier connection on the same QPN must not fit the new one's sequence.
 * (Seeding lrand48 with the pid and the time gave two runs a second apart the
 * same PSN.)
 */
static uint32_t random_psn(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		r = (uint32_t)getpid() * (uint32_t)time(NULL);
	return r & 0xffffff;
}

static int move_to_init(struct rdma_dev *dev, const struct rdma_buf *buf, struct rdma_conn *conn)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = dev->port,
		.qp_access_flags = buf->access & ~IBV_ACCESS_LOCAL_WRITE,
	};
	char access[96];
	int rc;

	rc = fault_at("modify_qp_init") ? errno :
	     ibv_modify_qp(conn->qp, &attr,
			   IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc) {
		report_verb_error("ibv_modify_qp (RESET -> INIT)", rc);
		return -1;
	}
	access_flags_format(attr.qp_access_flags, access, sizeof(access));
	show("ibv_modify_qp", "RESET -> INIT: port %u, pkey index 0, remote access %s "
	     "(what the peer's one-sided operations may do here)", dev->port, access);
	return 0;
}

/* The operations a QP of the extended post API may be built with, as IBV_QP_EX_WITH_* names them. */
static const struct flag_name send_op_names[] = {
	{ "RDMA_WRITE", IBV_QP_EX_WITH_RDMA_WRITE },
	{ "RDMA_WRITE_WITH_IMM", IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM },
	{ "SEND", IBV_QP_EX_WITH_SEND },
	{ "SEND_WITH_IMM", IBV_QP_EX_WITH_SEND_WITH_IMM },
	{ "RDMA_READ", IBV_QP_EX_WITH_RDMA_READ },
	{ "ATOMIC_CMP_AND_SWP", IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP },
	{ "ATOMIC_FETCH_AND_ADD", IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD },
	{ "LOCAL_INV", IBV_QP_EX_WITH_LOCAL_INV },
	{ "BIND_MW", IBV_QP_EX_WITH_BIND_MW },
	{ "SEND_WITH_INV", IBV_QP_EX_WITH_SEND_WITH_INV },
	{ "ATOMIC_WRITE", IBV_QP_EX_WITH_ATOMIC_WRITE },
#ifdef HAVE_IBV_WR_FLUSH
	{ "FLUSH", IBV_QP_EX_WITH_FLUSH },	/* rdma-core 45 and later */
#endif
};

/* "; send ops A,B" for the QP's line, or "" for a QP of ibv_create_qp. */
static void send_ops_format(uint64_t ops, char *buf, size_t len)
{
	char names[160];

	buf[0] = '\0';
	if (flag_names_format(ops, send_op_names, sizeof(send_op_names) / sizeof(send_op_names[0]),
			      names, sizeof(names)))
		snprintf(buf, len, "; send ops %s", names);
}

/*
 * ibv_create_qp_ex, for a later step that asks for send ops: its QP also
 * takes the extended post API (ibv_wr_*) for those operations.
 */
static struct ibv_qp *create_qp_with_send_ops(struct rdma_dev *dev, struct ibv_qp_init_attr *init,
					      uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex ex = {
		.send_cq = init->send_cq,
		.recv_cq = init->recv_cq,
		.cap = init->cap,
		.qp_type = init->qp_type,
		.sq_sig_all = init->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = dev->pd,
		.send_ops_flags = send_ops,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(dev->ctx, &ex);

	/* The queues the provider made, written back as ibv_create_qp writes them. */
	init->cap = ex.cap;
	return qp;
}

/* "RC" or "UC", for the QP's lines. */
static const char *qp_type_name(enum ibv_qp_type type)
{
	return type == IBV_QPT_UC ? "UC" : "RC";
}

/* ibv_create_qp (or ibv_create_qp_ex), then RESET -> INIT by hand; on failure no QP is left. */
static int create_qp_in_init(struct rdma_dev *dev, const struct rdma_buf *buf,
			     struct ibv_qp_init_attr *init, uint64_t send_ops, struct rdma_conn *conn)
{
	const char *verb = send_ops ? "ibv_create_qp_ex" : "ibv_create_qp";
	struct ibv_qp_cap asked = init->cap;
	char ops[192];

	conn->qp = fault_at("create_qp") ? NULL :
		   send_ops ? create_qp_with_send_ops(dev, init, send_ops) : ibv_create_qp(dev->pd, init);
	if (!conn->qp) {
		report_verb_error(verb, errno);
		return -1;
	}
	conn->max_inline = init->cap.max_inline_data;
	send_ops_format(send_ops, ops, sizeof(ops));
	show(verb, "%s QP 0x%06x in RESET: send queue %u WRs, receive queue %u WRs, "
	     "inline up to %u bytes%s", qp_type_name(conn->qp_type), conn->qp->qp_num,
	     init->cap.max_send_wr,
	     init->cap.max_recv_wr, init->cap.max_inline_data, ops);
	/*
	 * A provider may make a queue larger than asked and write back what it
	 * made: mlx5 rounds each queue up to a power of two, and rxe on Linux 7.3
	 * writes back 31 for 16 (6.1's rxe rounds up too, but writes back what
	 * was asked).  We post only what we asked for, so the CQ sized from the
	 * request still holds every completion.
	 */
	if (init->cap.max_send_wr > asked.max_send_wr || init->cap.max_recv_wr > asked.max_recv_wr)
		show("queues", "we asked for %u and %u WRs: the provider rounded up, and we post no "
		     "more than we asked", asked.max_send_wr, asked.max_recv_wr);
	if (move_to_init(dev, buf, conn)) {
		release_qp(conn->qp);
		conn->qp = NULL;
		return -1;
	}
	return 0;
}

/* rdma_create_qp: the QP belongs to the cm_id, and rdma_cm takes it to INIT, RTR and RTS. */
static int create_qp_through_cm(struct rdma_dev *dev, struct ibv_qp_init_attr *init,
				struct rdma_conn *conn, struct cm_link *cm)
{
	conn->qp = cm_create_qp(cm, dev->pd, init);
	if (!conn->qp)
		return -1;
	conn->max_inline = init->cap.max_inline_data;
	show("rdma_create_qp", "RC QP 0x%06x, already in INIT (rdma_cm moved it, on port %u): send "
	     "queue %u WRs, receive queue %u WRs, inline up to %u bytes", conn->qp->qp_num,
	     dev->port, init->cap.max_send_wr, init->cap.max_recv_wr, init->cap.max_inline_data);
	return 0;
}

static uint32_t smaller(uint64_t a, uint64_t b)
{
	return (uint32_t)(a < b ? a : b);
}

/*
 * The QP's queues.  A later step's hook gives its own: the step's request,
 * which it has checked against the device naming its options, and which is
 * never shrunk.  Otherwise stage 3's: QUEUE_DEPTH WRs each way, or fewer on
 * a device that holds fewer (max_qp_wr), or whose CQ, taking both queues'
 * completions, could not hold them (max_cqe).  Sized to the device rather
 * than refused: no option sets them, and every step that counts on its
 * queues reads what it got (send_depth, recv_depth), not QUEUE_DEPTH.
 */
static struct ibv_qp_cap qp_capacities(const struct rdma_dev *dev, const struct conn_hook *hook)
{
	uint32_t depth = smaller(smaller(QUEUE_DEPTH, limit_value(dev, LIMIT_QP_WR)),
				 limit_value(dev, LIMIT_CQE) / 2);

	if (hook && hook->cap.max_send_wr)
		return hook->cap;
	return (struct ibv_qp_cap){
		.max_send_wr = depth,
		.max_recv_wr = depth,
		.max_send_sge = 1,
		.max_recv_sge = 1,
		.max_inline_data = INLINE_WANTED,
	};
}

uint32_t cq_qp_send_depth(const struct rdma_dev *dev, const struct conn_opts *opts)
{
	return qp_capacities(dev, opts->hook).max_send_wr;
}

int cq_qp_check_limits(const struct rdma_dev *dev, const struct conn_opts *opts)
{
	struct ibv_qp_cap cap = qp_capacities(dev, opts->hook);
	bool own = !opts->hook || !opts->hook->cap.max_send_wr;
	/* Stage 3's own queues fit the device: only their floor, one WR and one SGE, can fail. */
	uint64_t send = cap.max_send_wr ? cap.max_send_wr : 1;
	uint64_t recv = cap.max_recv_wr ? cap.max_recv_wr : 1;
	uint32_t sge = cap.max_send_sge > cap.max_recv_sge ? cap.max_send_sge : cap.max_recv_sge;
	const char *who = own ? "stage 3" : "this step's QP",
		   *fix = own ? "every QP here needs a WR each way, a CQ of two entries and an SGE a "
				"WR: this device cannot run it" :
				"ask for less with the step's options";

	return limit_check(dev, LIMIT_QP_WR, send, "send WRs a QP", who, fix) ||
	       limit_check(dev, LIMIT_QP_WR, recv, "receive WRs a QP", who, fix) ||
	       limit_check(dev, LIMIT_CQE, send + recv, "CQ entries a QP (a completion for every "
			   "WR of both queues)", who, fix) ||
	       limit_check(dev, LIMIT_SGE, sge, sge == 1 ? "SGE a WR" : "SGEs a WR", who, fix) ?
	       -1 : 0;
}

/* Says so when stage 3's queues are smaller than QUEUE_DEPTH: the device holds fewer. */
static void show_clamped(const struct rdma_dev *dev, const struct ibv_qp_cap *cap,
			 const struct conn_hook *hook)
{
	bool by_wr = limit_value(dev, LIMIT_QP_WR) == cap->max_send_wr;

	if ((hook && hook->cap.max_send_wr) || cap->max_send_wr == QUEUE_DEPTH)
		return;
	show("queues", "%u WRs each way, not stage 3's %d: %s allows %llu (%s)", cap->max_send_wr,
	     QUEUE_DEPTH, ibv_get_device_name(dev->ctx->device),
	     (unsigned long long)limit_value(dev, by_wr ? LIMIT_QP_WR : LIMIT_CQE),
	     by_wr ? "max_qp_wr" : "max_cqe, for both queues' completions");
}

int create_cq_qp(struct rdma_dev *dev, const struct rdma_buf *buf, const struct conn_opts *opts,
		 struct rdma_conn *conn, struct cm_link *cm)
{
	const struct conn_hook *hook = opts->hook;
	struct ibv_qp_init_attr init = {
		.qp_type = hook && hook->qp_type ? hook->qp_type : IBV_QPT_RC,
		/* Each send WR says whether it wants a completion (IBV_SEND_SIGNALED): a pipeline asks for few. */
		.sq_sig_all = 0,
		.cap = qp_capacities(dev, hook),
	};

	*conn = (struct rdma_conn){
		.sock = -1,
		.timeout = QP_TIMEOUT,
		.retry_cnt = QP_RETRY_CNT,
		/* Stage 3's 1, or none on a device that initiates none (a step that READs checks). */
		.rd_atomic = (uint8_t)smaller(QP_RD_ATOMIC, limit_value(dev, LIMIT_QP_INIT_RD_ATOM)),
		.traffic_class = opts->tclass,
		.sl = opts->sl,
		.name_stranger = hook ? hook->name_stranger : NULL,
		.qp_type = init.qp_type,
		.send_depth = init.cap.max_send_wr,
		.recv_depth = init.cap.max_recv_wr,
	};
	if (cq_qp_check_limits(dev, opts))
		return -1;
	show_clamped(dev, &init.cap, hook);
	if (opts->events) {
		/* A file descriptor the kernel makes readable when a completion arrives on an armed CQ. */
		conn->channel = fault_at("create_comp_channel") ? NULL :
				ibv_create_comp_channel(dev->ctx);
		if (!conn->channel) {
			report_verb_error("ibv_create_comp_channel", errno);
			return -1;
		}
		show("ibv_create_comp_channel", "fd %d: lets us sleep until a completion arrives",
		     conn->channel->fd);
	}
	/* One CQ serves both queues, so it must hold a completion for every WR in either. */
	conn->cq = fault_at("create_cq") ? NULL :
		   ibv_create_cq(dev->ctx, (int)(init.cap.max_send_wr + init.cap.max_recv_wr), NULL,
				 conn->channel, 0);
	if (!conn->cq) {
		report_verb_error("ibv_create_cq", errno);
		goto out_destroy_channel;
	}
	show("ibv_create_cq", "completion queue with %d entries%s", conn->cq->cqe,
	     conn->channel ? ", tied to the completion channel" : "");

	init.send_cq = conn->cq;
	init.recv_cq = conn->cq;
	if (cm ? create_qp_through_cm(dev, &init, conn, cm) :
	    create_qp_in_init(dev, buf, &init, hook ? hook->send_ops_flags : 0, conn))
		goto out_destroy_cq;

	conn->local = (struct peer_info){
		.qpn = conn->qp->qp_num,
		.psn = random_psn(),
		.lid = dev->port_attr.lid,
		.mtu = dev->port_attr.active_mtu,
		.gid = dev->gid.gid,
		.addr = (uintptr_t)buf->addr,
		.len = buf->len,
		/* An rkey is a capability: send one only when the MR lets a peer in. */
		.rkey = access_is_remote(buf->access) ? buf->mr->rkey : 0,
		.rd_atomic = conn->rd_atomic,
		/* What the device can serve of the peer's, up to what the exchange can say. */
		.rd_accept = (uint8_t)(dev->attr.max_qp_rd_atom < EXCHANGE_RD_ATOMIC_MAX ?
				       dev->attr.max_qp_rd_atom : EXCHANGE_RD_ATOMIC_MAX),
	};
	return 0;

out_destroy_cq:
	release_cq(conn->cq);
	conn->cq = NULL;
out_destroy_channel:
	release_comp_channel(conn->channel);
	conn->channel = NULL;
	return -1;
}

/* The path MTU both ports can carry: the smaller of the two active MTUs. */
static enum ibv_mtu path_mtu(const struct rdma_conn *conn)
{
	if (conn->remote.mtu == MTU_NOT_SENT || conn->local.mtu < conn->remote.mtu)
		return conn->local.mtu;
	return conn->remote.mtu;
}

/* The causes of an RTR refused with EINVAL that can be read from the two GIDs. */
static void explain_rtr_einval(const struct rdma_dev *dev, const struct rdma_conn *conn)
{
	const union ibv_gid *ours = &dev->gid.gid, *theirs = &conn->remote.gid;
	char our_gid[GID_STR_LEN], peer_gid[GID_STR_LEN];

	gid_format(ours, our_gid, sizeof(our_gid));
	gid_format(theirs, peer_gid, sizeof(peer_gid));
	if (gid_is_zero(theirs))
		report_error("the peer's GID is all zeros, so no route leads to it: the peer chose no "
			     "GID (ibv_rc_pingpong does this without -g: run it with -g INDEX)");
	else if (gid_is_ipv4_mapped(ours) != gid_is_ipv4_mapped(theirs))
		report_error("our GID %s (index %d) and the peer's GID %s are of different kinds, "
			     "one IPv4-mapped and one not, so no route joins them: give both sides "
			     "GIDs of the same kind with -x (or leave -x out on both)",
			     our_gid, dev->gid_index, peer_gid);
}

static int move_to_rtr(struct rdma_dev *dev, struct rdma_conn *conn)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = path_mtu(conn),
		.dest_qp_num = conn->remote.qpn,
		.rq_psn = conn->remote.psn,
		.max_dest_rd_atomic = conn->max_dest_rd_atomic,
		.min_rnr_timer = QP_MIN_RNR_TIMER,
		.ah_attr = {
			.dlid = conn->remote.lid,
			.sl = conn->sl,
			.port_num = dev->port,
		},
	};
	char gid[GID_STR_LEN], route[192], mtu_why[64] = "ours: the peer sent none";
	/* UC answers nothing: no READs or atomics to serve, no RNR NAK to send. */
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		   (conn->qp_type == IBV_QPT_UC ? 0 : IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	int rc;

	if (dev->gid_index != GID_NONE) {
		/* RoCE has no LIDs: every packet carries a global route header to the peer's GID. */
		attr.ah_attr.is_global = 1;
		attr.ah_attr.grh = (struct ibv_global_route){
			.dgid = conn->remote.gid,
			.sgid_index = (uint8_t)dev->gid_index,
			.hop_limit = QP_HOP_LIMIT,
			/* Ours alone: the peer's packets carry the class its own QP gives them. */
			.traffic_class = conn->traffic_class,
		};
		gid_format(&conn->remote.gid, gid, sizeof(gid));
		snprintf(route, sizeof(route), "GRH to GID %s from our GID index %d, hop limit %d, "
			 "traffic class %d (DSCP %d, ECN %d), SL %d", gid, dev->gid_index, QP_HOP_LIMIT,
			 conn->traffic_class, conn->traffic_class >> 2, conn->traffic_class & 3, conn->sl);
	} else {
		snprintf(route, sizeof(route), "to LID 0x%04x, no GRH, SL %d", conn->remote.lid,
			 conn->sl);
	}
	rc = fault_at("modify_qp_rtr") ? errno : ibv_modify_qp(conn->qp, &attr, mask);
	if (rc) {
		report_verb_error("ibv_modify_qp (INIT -> RTR)", rc);
		if (rc == EINVAL && dev->gid_index != GID_NONE)
			explain_rtr_einval(dev, conn);
		return -1;
	}
	if (conn->remote.mtu != MTU_NOT_SENT)
		snprintf(mtu_why, sizeof(mtu_why), "the smaller of ours %d and the peer's %d",
			 mtu_bytes(conn->local.mtu), mtu_bytes(conn->remote.mtu));
	if (conn->qp_type == IBV_QPT_UC) {
		show("ibv_modify_qp", "INIT -> RTR (UC): path MTU %d (%s), dest QPN 0x%06x, receive "
		     "PSN 0x%06x, %s; no READs or atomics to serve, no RNR NAK to send",
		     mtu_bytes(attr.path_mtu), mtu_why, attr.dest_qp_num, attr.rq_psn, route);
		return 0;
	}
	show("ibv_modify_qp", "INIT -> RTR: path MTU %d (%s), "
	     "dest QPN 0x%06x, receive PSN 0x%06x, %s, max_dest_rd_atomic %d, min_rnr_timer %d",
	     mtu_bytes(attr.path_mtu), mtu_why,
	     attr.dest_qp_num, attr.rq_psn, route, attr.max_dest_rd_atomic, QP_MIN_RNR_TIMER);
	return 0;
}

static int move_to_rts(struct rdma_conn *conn)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = conn->local.psn,
		.timeout = conn->timeout,
		.retry_cnt = conn->retry_cnt,
		.rnr_retry = QP_RNR_RETRY,
		.max_rd_atomic = conn->max_rd_atomic,
	};
	bool uc = conn->qp_type == IBV_QPT_UC;
	int rc;

	/* UC waits for no ACK: no timeout, no retries, no READs in flight. */
	rc = fault_at("modify_qp_rts") ? errno :
	     ibv_modify_qp(conn->qp, &attr, uc ? IBV_QP_STATE | IBV_QP_SQ_PSN :
			   IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc) {
		report_verb_error("ibv_modify_qp (RTR -> RTS)", rc);
		return -1;
	}
	if (uc) {
		show("ibv_modify_qp", "RTR -> RTS (UC): send PSN 0x%06x; no ACK timeout and no "
		     "retries: a packet lost is lost, and the sender is never told", attr.sq_psn);
		return 0;
	}
	show("ibv_modify_qp", "RTR -> RTS: send PSN 0x%06x, timeout %d (4.096 us * 2^%d = about "
	     "%.0f ms per try), retry_cnt %d, rnr_retry %d (7: retry for ever while the peer has no "
	     "receive posted), max_rd_atomic %d", attr.sq_psn, attr.timeout, attr.timeout,
	     4.096e-3 * (double)(1u << attr.timeout), attr.retry_cnt, QP_RNR_RETRY, attr.max_rd_atomic);
	return 0;
}

int query_qp_state(struct rdma_conn *conn, enum ibv_qp_state *state)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int rc;

	rc = ibv_query_qp(conn->qp, &attr, IBV_QP_STATE, &init);
	if (rc) {
		report_verb_error("ibv_query_qp", rc);
		return -1;
	}
	*state = attr.qp_state;
	return 0;
}

/* Reads the QP's state back from the provider: what the QP really is, not what we asked. */
static int show_qp_state(struct rdma_conn *conn)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	char tclass[32] = "";
	int rc;

	rc = ibv_query_qp(conn->qp, &attr, IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_AV, &init);
	if (rc) {
		report_verb_error("ibv_query_qp", rc);
		return -1;
	}
	if (attr.ah_attr.is_global)
		snprintf(tclass, sizeof(tclass), ", traffic class %u", attr.ah_attr.grh.traffic_class);
	show("ibv_query_qp", "state %s, path MTU %d, dest QPN 0x%06x, SL %u%s",
	     qp_state_name(attr.qp_state), mtu_bytes(attr.path_mtu), attr.dest_qp_num,
	     attr.ah_attr.sl, tclass);
	/* A provider may keep less of the address vector than it was given, and says nothing. */
	if (attr.ah_attr.sl != conn->sl)
		show("ibv_query_qp", "the QP holds SL %u, not the %u we gave%s", attr.ah_attr.sl,
		     conn->sl, attr.ah_attr.sl ? "" : ": this provider keeps no service level (rxe: "
		     "its address vector has no field for it, and no VLAN tag of its packets could "
		     "carry it)");
	if (attr.ah_attr.is_global && attr.ah_attr.grh.traffic_class != conn->traffic_class)
		show("ibv_query_qp", "the QP holds traffic class %u, not the %u we gave",
		     attr.ah_attr.grh.traffic_class, conn->traffic_class);
	return 0;
}

int connect_qp(struct rdma_dev *dev, const struct cli_common *opts, struct rdma_conn *conn)
{
	show("role", "%s", opts->host ? "client" : "server");
	conn->sock = opts->host ? sock_connect(opts->host, opts->tcp_port, opts->timeout_s,
					       "one started with --cm listens through rdma_cm, not "
					       "on TCP (give both sides --cm, or neither)")
				  : sock_accept_one(opts->tcp_port, opts->timeout_s);
	if (conn->sock < 0)
		return -1;
	show("side channel", "TCP connected: exchanging QPN, PSN, GID, LID, MTU, address, rkey "
	     "and the options both sides must share");
	exchange_show("local", &conn->local);
	if (exchange_peer_info(conn->sock, &conn->local, &conn->remote, opts->timeout_s,
			       conn->name_stranger))
		return -1;
	exchange_show("remote", &conn->remote);
	return bring_up_qp(dev, conn);
}

int conn_offer_rd_atomic(const struct rdma_dev *dev, struct rdma_conn *conn, int n)
{
	int most = dev->attr.max_qp_init_rd_atom < EXCHANGE_RD_ATOMIC_MAX ?
		   dev->attr.max_qp_init_rd_atom : EXCHANGE_RD_ATOMIC_MAX;

	if (n < 1 || n > most) {
		report_error("%d RDMA READs and atomics in flight is more than this device initiates "
			     "(max_qp_init_rd_atom %d; the exchange says up to %d)", n,
			     dev->attr.max_qp_init_rd_atom, EXCHANGE_RD_ATOMIC_MAX);
		return -1;
	}
	conn->rd_atomic = conn->local.rd_atomic = (uint8_t)n;
	return 0;
}

static uint8_t least(uint8_t a, uint8_t b)
{
	return a < b ? a : b;
}

/*
 * The responder must serve as many READs and atomics as the requester keeps
 * in flight, or the requester's extra ones fail with a remote invalid request
 * error: each side offers and accepts in the exchange, and both take the
 * least.  A peer that sent neither (ibv_rc_pingpong) gets stage 3's 1.
 */
static void agree_rd_atomic(struct rdma_conn *conn)
{
	const struct peer_info *me = &conn->local, *peer = &conn->remote;

	if (peer->rd_atomic == RD_NOT_SENT && peer->rd_accept == RD_NOT_SENT) {
		conn->max_rd_atomic = conn->max_dest_rd_atomic = conn->rd_atomic;
		return;
	}
	conn->max_rd_atomic = least(me->rd_atomic, peer->rd_accept);
	conn->max_dest_rd_atomic = least(me->rd_accept, peer->rd_atomic);
	show("rd_atomic", "agreed with the peer: %d of ours in flight (we offer %d, it serves up to "
	     "%d), %d of its served (it offers %d, we serve up to %d)", conn->max_rd_atomic,
	     me->rd_atomic, peer->rd_accept, conn->max_dest_rd_atomic, peer->rd_atomic,
	     me->rd_accept);
}

int bring_up_qp(struct rdma_dev *dev, struct rdma_conn *conn)
{
	/* UC has no READs or atomics: nothing to agree. */
	if (conn->qp_type != IBV_QPT_UC)
		agree_rd_atomic(conn);
	if (move_to_rtr(dev, conn) || move_to_rts(conn))
		return -1;
	return show_qp_state(conn);
}

int reset_qp(struct rdma_dev *dev, const struct rdma_buf *buf, struct rdma_conn *conn)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	int rc;

	/* From any state a QP may go to RESET: the one way out of ERR. */
	rc = ibv_modify_qp(conn->qp, &attr, IBV_QP_STATE);
	if (rc) {
		report_verb_error("ibv_modify_qp (ERR -> RESET)", rc);
		return -1;
	}
	show("ibv_modify_qp", "ERR -> RESET: the QP forgets its peer, its PSNs and every work "
	     "request still queued");
	if (move_to_init(dev, buf, conn))
		return -1;
	/* The old PSNs may still be in flight: start from a fresh one, which the peer must learn. */
	conn->local.psn = random_psn();
	return 0;
}

int destroy_cq_qp(struct rdma_conn *conn)
{
	int failures = 0;

	failures += release_qp(conn->qp);
	conn->qp = NULL;
	failures += release_cq(conn->cq);
	conn->cq = NULL;
	failures += release_comp_channel(conn->channel);
	conn->channel = NULL;
	sock_close(conn->sock);
	conn->sock = -1;
	return failures;
}
