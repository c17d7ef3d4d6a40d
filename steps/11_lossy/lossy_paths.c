/* lossy_paths.c: the data QPs, UC (or RC to compare), one a path, beside the session's RC QP that carries the control messages; and the control messages' buffer. */
#include "lossy_paths.h"
#include "device.h"
#include "fault.h"
#include "report.h"
#include "teardown.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

struct ibv_qp_cap lossy_ctl_caps(void)
{
	/* One ask or SACK in flight each way, and a few receives for the peer's. */
	return (struct ibv_qp_cap){
		.max_send_wr = 2,
		.max_recv_wr = LOSSY_CTL_RECVS,
		.max_send_sge = 1,
		.max_recv_sge = 1,
	};
}

static uint32_t least(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * The receives kept posted on each path: LOSSY_RECV_AHEAD, unless the
 * device holds fewer.  Each path's CQ takes a completion for every receive
 * and for the one send its QP has room for, so max_cqe bounds it (rxe's is
 * 32,767), and so does max_qp_wr.
 */
static uint32_t receive_window(const struct rdma_dev *dev)
{
	uint32_t cqe = dev->attr.max_cqe > 1 ? (uint32_t)dev->attr.max_cqe - 1 : 1;
	uint32_t w = least(least(LOSSY_RECV_AHEAD, cqe), (uint32_t)dev->attr.max_qp_wr);

	show("receive window", "%u receives posted ahead on each path (%d wanted; this device's CQ "
	     "holds at most max_cqe %d completions, its queues max_qp_wr %d WRs): the sender keeps "
	     "at most that many WRITEs with immediate unconsumed", w, LOSSY_RECV_AHEAD,
	     dev->attr.max_cqe, dev->attr.max_qp_wr);
	return w;
}

/* The sender's send queue on each path: LOSSY_SQ_DEPTH, unless its CQ (and one receive's room) or max_qp_wr holds fewer. */
static uint32_t send_queue(const struct rdma_dev *dev)
{
	uint32_t cqe = dev->attr.max_cqe > 1 ? (uint32_t)dev->attr.max_cqe - 1 : 1;

	return least(least(LOSSY_SQ_DEPTH, cqe), (uint32_t)dev->attr.max_qp_wr);
}

/*
 * --qp-timeout and --retry-cnt, where given: between creating a QP and
 * connecting it, as stage 3 allows; a UC QP has neither.
 */
static void set_retries(struct rdma_conn *c, const struct lossy_opts *o)
{
	if (o->qp_timeout)
		c->timeout = (uint8_t)o->qp_timeout;
	if (o->retry_cnt >= 0)
		c->retry_cnt = (uint8_t)o->retry_cnt;
}

const char *lossy_plane_name(const struct lossy_link *l, int p)
{
	return ibv_get_device_name(l->plane[p].dev->ctx->device);
}

/*
 * Plane P after the first: the device O names, opened with a PD of its own,
 * and the session's buffer registered again with that PD, the same access:
 * an MR belongs to one PD, and a PD to one device, so each plane's QPs need
 * their own lkey (ours) and rkey (the peer's).  The pages are pinned once.
 */
/* Whether NAME is a device here; if not, says so in --plane's words.  Stage 1 opens it. */
static bool plane_device_present(const char *name)
{
	struct ibv_device **list;
	char names[256];
	int count;
	bool found = false;

	list = ibv_get_device_list(&count);
	if (!list)
		return true;	/* stage 1 names the failure */
	for (int i = 0; i < count && !found; i++)
		found = !strcmp(ibv_get_device_name(list[i]), name);
	if (!found) {
		device_names(list, count, names, sizeof(names));
		report_error("--plane %s: no RDMA device of that name; devices present: %s. Give "
			     "--plane the device on that plane's network ('rdma link show' lists "
			     "each with its netdev)", name, names);
	}
	ibv_free_device_list(list);
	return found;
}

/* The points of this stage's own verbs; the rest are stages 1 to 4's. */
const struct fault_point lossy_plane_faults[] = {
	{ "plane_reg_mr", "ibv_reg_mr (the same buffer, for this plane's PD)", ENOMEM },
	{ 0 },
};

static int open_plane(struct lossy_link *l, struct session *s, const struct lossy_opts *o,
		      const struct cli_common *opts, int p)
{
	struct lossy_plane *pl = &l->plane[p];
	struct cli_common popts = *opts;
	char access[96];

	popts.ib_dev = o->plane[p];
	show("plane", "%d: the device %s, on a network of its own: a PD of its own, and the same "
	     "buffer registered again with it", p, o->plane[p]);
	if (!plane_device_present(o->plane[p]) || open_device_pd(&popts, &pl->own_dev))
		return -1;
	pl->own_buf = (struct rdma_buf){ .addr = s->buf.addr, .len = s->buf.len,
					 .access = s->buf.access };
	pl->own_buf.mr = fault_at("plane_reg_mr") ? NULL :
			 ibv_reg_mr(pl->own_dev.pd, s->buf.addr, s->buf.len, s->buf.access);
	if (!pl->own_buf.mr) {
		report_verb_error("ibv_reg_mr (the same buffer, for this plane's PD)", errno);
		goto out_close_device;
	}
	access_flags_format(s->buf.access, access, sizeof(access));
	show("ibv_reg_mr", "plane %d: the same %zu bytes at %p registered with %s's PD, access %s: "
	     "lkey 0x%x, rkey 0x%x (plane 0's MR: lkey 0x%x)", p, s->buf.len, s->buf.addr,
	     o->plane[p], access, pl->own_buf.mr->lkey, pl->own_buf.mr->rkey, s->buf.mr->lkey);
	pl->dev = &pl->own_dev;
	pl->buf = &pl->own_buf;
	return 0;

out_close_device:
	close_device_pd(&pl->own_dev);
	return -1;
}

int lossy_paths_create(struct lossy_link *l, struct session *s, const struct lossy_opts *o,
		       const struct cli_common *opts, const struct conn_opts *conn, bool sender)
{
	uint32_t sq = send_queue(&s->dev);
	struct conn_hook hook = {
		.qp_type = o->rc ? IBV_QPT_RC : IBV_QPT_UC,
		.cap = { .max_send_wr = sender ? sq : 1, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
	};
	/* Every path in the session's priority class: a sprayed flow changes its path, not its class. */
	struct conn_opts copts = { .tclass = conn->tclass, .tclass_given = conn->tclass_given,
				   .sl = conn->sl, .sl_given = conn->sl_given, .hook = &hook };

	*l = (struct lossy_link){ .sq_depth = sq, .planes = 1 };
	for (int k = 0; k < LOSSY_MAX_PATHS; k++)
		l->path[k].conn = (struct rdma_conn){ .sock = -1 };
	l->plane[0] = (struct lossy_plane){ .dev = &s->dev, .buf = &s->buf };
	if (o->planes > 1)
		show("planes", "%d: plane 0 is -d's device %s, with the control QP; the chunks are "
		     "dealt over the paths of every plane", o->planes, lossy_plane_name(l, 0));
	for (; l->planes < o->planes; l->planes++)
		if (open_plane(l, s, o, opts, l->planes))
			return -1;
	if (!sender) {
		l->window = receive_window(&s->dev);
		hook.cap.max_recv_wr = l->window;
	} else {
		l->window = LOSSY_RECV_AHEAD;	/* the most a receiver may offer; its plan says what it does */
	}
	show("paths", "%d data QP%s of type %s, each a flow of its own (rxe gives each QP its own "
	     "UDP source port); the session's RC QP carries the control messages",
	     o->paths * o->planes, o->paths * o->planes > 1 ? "s" : "", o->rc ? "RC" : "UC");
	set_retries(&s->conn, o);
	for (l->n = 0; l->n < o->paths * o->planes; l->n++) {
		struct lossy_path *path = &l->path[l->n];
		const struct lossy_plane *pl = &l->plane[l->n % o->planes];

		path->plane = l->n % o->planes;
		if (create_cq_qp(pl->dev, pl->buf, &copts, &path->conn, NULL))
			return -1;
		set_retries(&path->conn, o);
		if (o->planes > 1)
			show("path", "%d: QP %u on plane %d's device %s", l->n, path->conn.qp->qp_num,
			     path->plane, lossy_plane_name(l, path->plane));
	}
	return 0;
}

/* Whether A and B (network byte order) share the subnet of the interface that holds A; true when no interface does. */
static bool same_subnet(in_addr_t a, in_addr_t b, char *net, size_t len)
{
	struct ifaddrs *ifs, *i;
	bool same = true;

	if (getifaddrs(&ifs))
		return true;
	for (i = ifs; i; i = i->ifa_next) {
		const struct sockaddr_in *addr = (const void *)i->ifa_addr;
		const struct sockaddr_in *mask = (const void *)i->ifa_netmask;
		char text[INET_ADDRSTRLEN];

		if (!addr || !mask || addr->sin_family != AF_INET || addr->sin_addr.s_addr != a)
			continue;
		same = (a & mask->sin_addr.s_addr) == (b & mask->sin_addr.s_addr);
		inet_ntop(AF_INET, &a, text, sizeof(text));
		snprintf(net, len, "%s/%d on %s", text, __builtin_popcount(mask->sin_addr.s_addr),
			 i->ifa_name);
		break;
	}
	freeifaddrs(ifs);
	return same;
}

/*
 * With planes: path K's peer must be on our plane's network.  Its address
 * (an IPv4-mapped GID) is checked against the subnet of the interface that
 * holds our plane's GID: the two sides' --plane lists in different orders
 * would join plane 0 to plane 1, a wire that does not exist.  0 or -1.
 */
static int check_plane_peer(const struct lossy_link *l, int k)
{
	const struct rdma_conn *c = &l->path[k].conn;
	const struct lossy_path *p = &l->path[k];
	char peer[INET_ADDRSTRLEN], net[64] = "";
	in_addr_t a, b;

	if (l->planes == 1 || !gid_is_ipv4_mapped(&c->local.gid) ||
	    !gid_is_ipv4_mapped(&c->remote.gid))
		return 0;
	memcpy(&a, &c->local.gid.raw[12], sizeof(a));
	memcpy(&b, &c->remote.gid.raw[12], sizeof(b));
	if (same_subnet(a, b, net, sizeof(net)))
		return 0;
	inet_ntop(AF_INET, &b, peer, sizeof(peer));
	report_error("path %d: the peer's plane %d is at %s, not on the network of this side's plane "
		     "%d (%s, %s): give both sides their planes in the same order (-d, then each "
		     "--plane)", k, p->plane, peer, p->plane, lossy_plane_name(l, p->plane), net);
	return -1;
}

int lossy_paths_connect(struct lossy_link *l, struct session *s, bool sender, int timeout_s)
{
	for (int k = 0; k < l->n; k++) {
		struct rdma_conn *c = &l->path[k].conn;

		/*
		 * The options were compared with the control QP's message: one plane's paths carry
		 * the same text; with planes, the path and its plane, which the peer's must equal.
		 */
		if (l->planes == 1)
			memcpy(c->local.options, s->conn.local.options, sizeof(c->local.options));
		else
			exchange_set_options(&c->local, "path %d of %d, plane %d of %d", k + 1, l->n,
					     l->path[k].plane, l->planes);
		show("path", "%d of %d: exchanging its data QP's address over the same side channel",
		     k + 1, l->n);
		exchange_show_qp("local", &c->local);
		if (exchange_peer_info(s->conn.sock, &c->local, &c->remote, timeout_s, NULL))
			return -1;
		exchange_show_qp("remote", &c->remote);
		if (c->remote.len != s->buf.len) {
			report_error("the peer's exchange for path %d has a bad buffer length (%llu): "
				     "this side's is %zu, and -s must be the same on both sides", k,
				     (unsigned long long)c->remote.len, s->buf.len);
			return -1;
		}
		if (sender && !c->remote.rkey) {
			report_error("the receiver's exchange for path %d has no rkey: its buffer lets "
				     "no WRITE in (was it given -a without remote_write?)", k);
			return -1;
		}
		if (check_plane_peer(l, k) || bring_up_qp(l->plane[l->path[k].plane].dev, c))
			return -1;
	}
	return 0;
}

uint32_t lossy_path_mtu(const struct lossy_link *l)
{
	enum ibv_mtu mtu = IBV_MTU_4096;

	for (int k = 0; k < l->n; k++) {
		const struct rdma_conn *c = &l->path[k].conn;

		mtu = c->local.mtu < mtu ? c->local.mtu : mtu;
		mtu = c->remote.mtu < mtu ? c->remote.mtu : mtu;
	}
	return (uint32_t)mtu_bytes(mtu);
}

int lossy_ctl_register(struct lossy_link *l, struct session *s, size_t slot)
{
	struct reg_mr_opts mr = {
		.size = slot * (LOSSY_CTL_RECVS + 1),
		.access = IBV_ACCESS_LOCAL_WRITE,
		.access_why = "the control messages: our NIC writes the peer's asks or SACKs here and "
			      "reads ours; no peer may reach it",
	};

	l->slot = slot;
	return register_buffer(&s->dev, &mr, &l->ctl);
}

int lossy_paths_destroy(struct lossy_link *l)
{
	int failures = release_buffer(&l->ctl);

	for (int k = l->n - 1; k >= 0; k--)
		failures += destroy_cq_qp(&l->path[k].conn);
	l->n = 0;
	/* Each later plane: its MR of the session's buffer (the pages stay the session's), its PD and device. */
	for (int p = l->planes - 1; p >= 1; p--) {
		failures += release_mr(l->plane[p].own_buf.mr, "its pages still pinned by plane 0's MR");
		failures += close_device_pd(&l->plane[p].own_dev);
	}
	l->planes = 0;
	return failures;
}
