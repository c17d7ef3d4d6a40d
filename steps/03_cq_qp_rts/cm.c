/* cm.c: the connection through the RDMA connection manager (--cm): address, route, the CM's handshake and its private data. */
#include "cm.h"
#include "byteorder.h"
#include "clock.h"
#include "device.h"
#include "fault.h"
#include "reg_mr.h"
#include "report.h"
#include "stop.h"
#include "wait.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const struct fault_point cm_faults[] = {
	{ "cm_create_event_channel", "rdma_create_event_channel", ENODEV },
	{ "cm_create_id", "rdma_create_id", ENOMEM },
	{ "cm_resolve_addr", "rdma_resolve_addr", ENETUNREACH },
	{ "cm_resolve_route", "rdma_resolve_route", ENOMEM },
	{ "cm_bind_addr", "rdma_bind_addr", EADDRINUSE },
	{ "cm_listen", "rdma_listen", ENOMEM },
	{ "cm_create_qp", "rdma_create_qp", ENOMEM },
	{ "cm_private_version", "our private data (sent with version 2)", EPROTO },
	{ "cm_private_length", "our private data (sent with length 32)", EPROTO },
	{ "cm_connect", "rdma_connect", ENOMEM },
	{ "cm_accept", "rdma_accept", EINVAL },
	{ "cm_reject", "rdma_reject", EINVAL },
	{ "cm_disconnect", "rdma_disconnect", EINVAL },
	{ "cm_destroy_id", "rdma_destroy_id", EBUSY },
	{ 0 },
};

/* The REJ reasons (IBTA CM chapter, table "REJ reason codes") that a connection here meets. */
#define REJ_INVALID_SERVICE_ID 8
#define REJ_CONSUMER_DEFINED 28

/* rdma_cm's device file: it exists once the rdma_ucm module is loaded. */
#define RDMA_CM_DEVICE "/dev/infiniband/rdma_cm"

/* What one event said, copied before rdma_ack_cm_event frees it. */
struct cm_event {
	enum rdma_cm_event_type type;
	int status;
	struct rdma_cm_id *id;
	struct rdma_conn_param param;
	uint8_t private_data[196];
	uint8_t private_len;
};

/* One FNV-1a step per byte: a mismatch of any byte changes the digest. */
uint64_t cm_options_digest(const char *options)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *c = options; *c; c++)
		h = (h ^ (uint8_t)*c) * 0x100000001b3ULL;
	return h;
}

void cm_private_encode(const struct peer_info *local, uint8_t msg[CM_PRIVATE_LEN])
{
	memset(msg, 0, CM_PRIVATE_LEN);
	memcpy(msg, CM_PRIVATE_MAGIC, 4);
	msg[4] = fault_at("cm_private_version") ? CM_PRIVATE_VERSION + 1 : CM_PRIVATE_VERSION;
	msg[5] = fault_at("cm_private_length") ? CM_PRIVATE_LEN - 8 : CM_PRIVATE_LEN;
	put_be32(msg + 8, local->rkey);
	put_be64(msg + 16, local->addr);
	put_be64(msg + 24, local->len);
	put_be64(msg + 32, cm_options_digest(local->options));
}

static int bad_private(char *why, size_t why_len, const char *field, unsigned long long value,
		       const char *rule)
{
	snprintf(why, why_len, "bad %s (%llu): %s", field, value, rule);
	return -1;
}

int cm_private_decode(const uint8_t *msg, size_t len, struct peer_info *remote, char *why,
		      size_t why_len)
{
	if (len < 6 || memcmp(msg, CM_PRIVATE_MAGIC, 4)) {
		snprintf(why, why_len, "no rdma-steps private data (it does not start with \"%s\"): "
			 "is the peer an rdma-steps program run with --cm?", CM_PRIVATE_MAGIC);
		return -1;
	}
	if (msg[4] != CM_PRIVATE_VERSION)
		return bad_private(why, why_len, "version", msg[4], "this program speaks version 1 only");
	if (msg[5] != CM_PRIVATE_LEN || len < CM_PRIVATE_LEN)
		return bad_private(why, why_len, "length", msg[5],
				   "version 1 private data is 40 bytes");
	if (get_be16(msg + 6) || get_be32(msg + 12))
		return bad_private(why, why_len, "reserved field", get_be16(msg + 6) | get_be32(msg + 12),
				   "bytes 6-7 and 12-15 must be 0 in version 1");
	remote->rkey = get_be32(msg + 8);
	remote->addr = get_be64(msg + 16);
	remote->len = get_be64(msg + 24);
	remote->options_digest = get_be64(msg + 32);
	if (remote->addr == 0)
		return bad_private(why, why_len, "buffer address", 0, "must be non-zero");
	if (remote->len == 0)
		return bad_private(why, why_len, "buffer length", 0, "must be non-zero");
	return 0;
}

static const char *event_meaning(enum rdma_cm_event_type type, bool server)
{
	switch (type) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		return "the address is reachable through an RDMA device: rdma_cm found the device, "
		       "the port and our GID from the IP route, and the next hop's MAC";
	case RDMA_CM_EVENT_ADDR_ERROR:
		return "no RDMA device reaches the address";
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		return "the path to the peer is known (RoCE: from the IP route; InfiniBand: a path "
		       "record from the subnet administrator)";
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return "no path to the peer";
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return "a client's REQ arrived, with its QPN, PSN and private data: a new cm_id for "
		       "this one connection, on the device the REQ came in by";
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return "the connection failed after the REQ";
	case RDMA_CM_EVENT_UNREACHABLE:
		return "the peer's CM did not answer: our REQ (or REP) timed out after its retries";
	case RDMA_CM_EVENT_REJECTED:
		return "the peer's CM answered with a REJ";
	case RDMA_CM_EVENT_ESTABLISHED:
		return server ? "the client's RTU arrived: both QPs are in RTS"
			      : "the server's REP arrived, rdma_cm moved our QP to RTR and RTS and sent "
				"the RTU";
	case RDMA_CM_EVENT_DISCONNECTED:
		return "the connection is over: a DREQ came, or the DREP that answers ours (or it "
		       "timed out); rdma_cm moved the QP to ERR";
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return "the RDMA device is going away";
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return "the QP has left the CM's time-wait";
	default:
		return "not used here";
	}
}

/* Why rdma_cm itself could not be opened: most often rdma_ucm is not loaded. */
static void report_no_rdma_cm(int err)
{
	if (access(RDMA_CM_DEVICE, F_OK))
		report_error("rdma_create_event_channel failed: %s (errno %d): there is no %s, so the "
			     "kernel module rdma_ucm, rdma_cm's door for programs, is not loaded: load "
			     "it as root with 'modprobe rdma_ucm' (or run without --cm)",
			     strerror(err), err, RDMA_CM_DEVICE);
	else
		report_verb_error("rdma_create_event_channel", err);
}

/*
 * Waits until DEADLINE for the channel's next event and copies it into EV.
 * Returns 0, 1 when the deadline passed first, -1 on an error (reported).
 */
static int next_event(struct cm_link *cm, const struct timespec *deadline, struct cm_event *ev)
{
	struct rdma_cm_event *event;
	int rc = wait_fd(cm->events->fd, POLLIN, deadline, "rdma_cm event channel");

	if (rc == WAIT_STOPPED)
		return report_stopped();
	if (rc)
		return rc;
	if (rdma_get_cm_event(cm->events, &event)) {
		report_verb_error("rdma_get_cm_event", errno);
		return -1;
	}
	*ev = (struct cm_event){ .type = event->event, .status = event->status, .id = event->id };
	if (event->event != RDMA_CM_EVENT_ADDR_RESOLVED && event->event != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		ev->param = event->param.conn;
		ev->private_len = event->param.conn.private_data_len;
		if (event->param.conn.private_data)
			memcpy(ev->private_data, event->param.conn.private_data, ev->private_len);
		ev->param.private_data = ev->private_data;
	}
	rdma_ack_cm_event(event);
	if (ev->status)
		show("rdma_cm event", "%s (status %d): %s", rdma_event_str(ev->type), ev->status,
		     event_meaning(ev->type, cm->listen_id != NULL));
	else
		show("rdma_cm event", "%s: %s", rdma_event_str(ev->type),
		     event_meaning(ev->type, cm->listen_id != NULL));
	return 0;
}

/* The server's REJ text, when the REJ is ours: the client then names what the server refused. */
static void report_our_reject(const struct cm_event *ev, const char *options)
{
	const uint8_t *p = ev->private_data;
	char text[CM_REJECT_TEXT_LEN + 1] = "";

	if (ev->private_len >= 8 && p[5] >= 9 && p[5] <= ev->private_len && p[5] <= 8 + CM_REJECT_TEXT_LEN)
		for (int i = 0; i < p[5] - 9; i++)
			text[i] = isprint(p[8 + i]) ? (char)p[8 + i] : '?';
	if (p[6] == CM_REJECT_OPTIONS)
		report_error("peer: %s; here: %s: give both sides the same options",
			     text[0] ? text : "(none: a step 03 program)",
			     options[0] ? options : "(none: a step 03 program)");
	else
		report_error("the server rejected the connection (REJ reason 28, its program's own): %s",
			     text);
}

/* A REJECTED event, by whose REJ it is: no listener, our own server's, or another program's. */
static void report_rejected(const struct cm_link *cm, const struct cm_event *ev,
			    const char *options)
{
	const uint8_t *p = ev->private_data;
	uint16_t port = ntohs(rdma_get_dst_port(cm->id));

	if (ev->status == REJ_INVALID_SERVICE_ID)
		report_error("nothing listens through rdma_cm on port %u there (REJECTED, reason 8: "
			     "invalid service ID): start the server with --cm first, on the same -p; "
			     "a server without --cm listens on a TCP port, which rdma_cm never reaches",
			     port);
	else if (ev->status == REJ_CONSUMER_DEFINED && ev->private_len >= 8 &&
		 !memcmp(p, CM_PRIVATE_MAGIC, 4))
		report_our_reject(ev, options);
	else
		report_error("the server rejected the connection (REJECTED, reason %d%s)%s", ev->status,
			     ev->status == REJ_CONSUMER_DEFINED ? ": its program's own" : "",
			     cm->foreign ? "" : ": is it an rdma-steps --cm server?");
}

/* An event that ends the wait for WANT with a failure: says what happened and what to do. */
static void report_unwanted(const struct cm_link *cm, const struct cm_event *ev,
			    const char *options)
{
	switch (ev->type) {
	case RDMA_CM_EVENT_REJECTED:
		report_rejected(cm, ev, options);
		return;
	case RDMA_CM_EVENT_UNREACHABLE:
		report_error("the peer's CM did not answer (UNREACHABLE, status %d): is the address "
			     "a host with an RDMA device, and does a --cm server run there?", ev->status);
		return;
	case RDMA_CM_EVENT_ADDR_ERROR:
		report_error("no RDMA device reaches that address (ADDR_ERROR: %s): the route to it "
			     "leaves through an interface no RDMA device sits on (127.0.0.1 is lo's): "
			     "give the address of an interface that has one ('rdma link show' names "
			     "it; 198.18.0.1 in the test VM)", strerror(-ev->status));
		return;
	case RDMA_CM_EVENT_DISCONNECTED:
		report_error("the peer disconnected before the connection was up: see its output");
		return;
	default:
		report_error("rdma_cm reported %s (status %d) while connecting", rdma_event_str(ev->type),
			     ev->status);
	}
}

/* Waits up to -t for the event WANT into EV; any other event ends the wait as a failure. */
static int wait_for_event(struct cm_link *cm, enum rdma_cm_event_type want, struct cm_event *ev,
			  const char *options, const char *late, const char *hint)
{
	struct timespec deadline = deadline_in(cm->timeout_s);
	int rc;

	for (;;) {
		rc = next_event(cm, &deadline, ev);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			report_error("%s within %d s%s%s", late, cm->timeout_s, hint ? ": " : "",
				     hint ? hint : "");
			return -1;
		}
		if (ev->type == want)
			return 0;
		if (ev->type == RDMA_CM_EVENT_DISCONNECTED)
			cm->disconnected = true;
		if (ev->type != RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			report_unwanted(cm, ev, options);
			return -1;
		}
	}
}

static int open_channel_id(struct cm_link *cm)
{
	cm->events = fault_at("cm_create_event_channel") ? NULL : rdma_create_event_channel();
	if (!cm->events) {
		report_no_rdma_cm(errno);
		return -1;
	}
	show("rdma_create_event_channel", "fd %d: rdma_cm's events for this program arrive here",
	     cm->events->fd);
	if (fault_at("cm_create_id") || rdma_create_id(cm->events, &cm->id, NULL, RDMA_PS_TCP)) {
		report_verb_error("rdma_create_id", errno);
		return -1;
	}
	show("rdma_create_id", "a cm_id in the RDMA_PS_TCP port space: reliable connected, ports "
	     "numbered like TCP's but apart from them");
	return 0;
}

/*
 * A loopback address resolves (rdma_cm binds it to the first active device),
 * but no route leaves lo through an RDMA device: the route fails, ENODEV.
 */
static void report_no_route(const char *host, int err)
{
	if (err == ENODEV)
		report_error("rdma_resolve_route to %s failed: %s (errno %d): no RDMA device sits on "
			     "the interface that reaches it (127.0.0.1 is lo's, and lo has none): give "
			     "the address of an interface that has one ('rdma link show' names it; "
			     "198.18.0.1 in the test VM)", host, strerror(err), err);
	else
		report_error("rdma_resolve_route to %s failed: %s (errno %d)", host, strerror(err), err);
}

/* The client: HOST's address, then the route to it, each step an event. */
static int resolve_host(struct cm_link *cm, const struct cli_common *opts)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char port[8];
	struct cm_event ev;
	int rc;

	snprintf(port, sizeof(port), "%d", opts->tcp_port);
	rc = getaddrinfo(opts->host, port, &hints, &res);
	if (rc) {
		report_error("cannot resolve '%s': %s", opts->host, gai_strerror(rc));
		return -1;
	}
	/* Bounded by -t; rdma_cm reports ADDR_ERROR at that point at the latest. */
	rc = fault_at("cm_resolve_addr") ? -1 :
	     rdma_resolve_addr(cm->id, NULL, res->ai_addr, opts->timeout_s * 1000);
	freeaddrinfo(res);
	if (rc) {
		report_error("rdma_resolve_addr %s failed: %s (errno %d): no route leads there from "
			     "any interface with an RDMA device: check the address ('ip route get %s')",
			     opts->host, strerror(errno), errno, opts->host);
		return -1;
	}
	show("rdma_resolve_addr", "%s port %d: which device, port and GID reach it?", opts->host,
	     opts->tcp_port);
	if (wait_for_event(cm, RDMA_CM_EVENT_ADDR_RESOLVED, &ev, "", "no address resolution", NULL))
		return -1;
	if (fault_at("cm_resolve_route") || rdma_resolve_route(cm->id, opts->timeout_s * 1000)) {
		report_no_route(opts->host, errno);
		return -1;
	}
	show("rdma_resolve_route", "the path to %s", opts->host);
	return wait_for_event(cm, RDMA_CM_EVENT_ROUTE_RESOLVED, &ev, "", "no route resolution", NULL);
}

/* The server: bound to every address on -p, listening, until one client's CONNECT_REQUEST. */
static int await_request(struct cm_link *cm, const struct cli_common *opts)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opts->tcp_port),
				   .sin_addr.s_addr = htonl(INADDR_ANY) };
	char late[96];
	struct cm_event ev;

	cm->listen_id = cm->id;
	cm->id = NULL;
	if (fault_at("cm_bind_addr") || rdma_bind_addr(cm->listen_id, (struct sockaddr *)&any)) {
		report_error("rdma_bind_addr to port %d failed: %s (errno %d)%s", opts->tcp_port,
			     strerror(errno), errno,
			     errno == EADDRINUSE ? ": another program listens there. Pick another "
						   "port with -p N" : "");
		return -1;
	}
	if (fault_at("cm_listen") || rdma_listen(cm->listen_id, 1)) {
		report_verb_error("rdma_listen", errno);
		return -1;
	}
	show("listening", "through rdma_cm on port %d of every address (RDMA_PS_TCP), for one "
	     "client", opts->tcp_port);
	snprintf(late, sizeof(late), "no client connected to rdma_cm port %d", opts->tcp_port);
	if (wait_for_event(cm, RDMA_CM_EVENT_CONNECT_REQUEST, &ev, "", late, NULL))
		return -1;
	cm->id = ev.id;
	cm->request_len = ev.private_len < sizeof(cm->request) ? ev.private_len : sizeof(cm->request);
	memcpy(cm->request, ev.private_data, cm->request_len);
	return 0;
}

/* The index of the GID rdma_cm took as ours, in the port's table; -1 if it is in none. */
static int gid_index_of(struct ibv_context *ctx, uint8_t port, const union ibv_gid *gid)
{
	struct ibv_port_attr attr;
	union ibv_gid entry;

	if (ibv_query_port(ctx, port, &attr))
		return -1;
	for (int i = 0; i < attr.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, port, i, &entry) && !memcmp(&entry, gid, sizeof(entry)))
			return i;
	return -1;
}

/* -d, -i and -x choose nothing under --cm: each must agree with what the address gave. */
static int check_choice(const struct cm_link *cm, const struct cli_common *opts, int gid_idx)
{
	const char *name = ibv_get_device_name(cm->id->verbs->device);
	const char *where = cm->listen_id ? "the client's request came in by" : "the address is reached by";

	if (opts->ib_dev && strcmp(opts->ib_dev, name)) {
		report_error("-d %s: under --cm the device comes from the address, and %s %s: drop "
			     "-d, or give an address of %s", opts->ib_dev, where, name, opts->ib_dev);
		return -1;
	}
	if (opts->ib_port != cm->id->port_num && opts->ib_port != 1) {
		report_error("-i %d: under --cm the port comes from the address, and %s port %u of %s: "
			     "drop -i", opts->ib_port, where, cm->id->port_num, name);
		return -1;
	}
	if (opts->gid_idx != CLI_GID_AUTO && opts->gid_idx != gid_idx) {
		report_error("-x %d: under --cm the GID comes from the address, which is GID index %d "
			     "of %s: drop -x", opts->gid_idx, gid_idx, name);
		return -1;
	}
	return 0;
}

/*
 * --tclass under rdma_cm: the cm_id's ToS, in place of the device's default
 * (configfs' default_roce_tos).  The kernel puts it in the route it resolves
 * (RoCE: the GRH's traffic class, and the SL it derives from it), so it is
 * set before the route: on the client's id before rdma_resolve_route, on the
 * server's before it listens.
 */
static int set_tos(struct rdma_cm_id *id, int tos)
{
	uint8_t value = (uint8_t)tos;

	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &value, sizeof(value))) {
		report_verb_error("rdma_set_option (RDMA_OPTION_ID_TOS)", errno);
		return -1;
	}
	show("rdma_set_option", "RDMA_OPTION_ID_TOS %d (DSCP %d, ECN %d): the traffic class of "
	     "this cm_id's route, in place of the device's default (cma_roce_tos)", tos, tos >> 2,
	     tos & 3);
	return 0;
}

int cm_find_device(struct cm_link *cm, const struct cli_common *opts,
		   const struct foreign_peer *foreign, int tos, int *gid_idx)
{
	char gid[GID_STR_LEN];

	*cm = (struct cm_link){ .foreign = foreign, .timeout_s = opts->timeout_s, .tos = tos };
	show("role", "%s, connecting through rdma_cm", opts->host ? "client" : "server");
	if (open_channel_id(cm))
		return -1;
	if (tos != CM_TOS_DEFAULT && set_tos(cm->id, tos))
		return -1;
	if (opts->host ? resolve_host(cm, opts) : await_request(cm, opts))
		return -1;
	*gid_idx = gid_index_of(cm->id->verbs, cm->id->port_num, &cm->id->route.addr.addr.ibaddr.sgid);
	gid_format(&cm->id->route.addr.addr.ibaddr.sgid, gid, sizeof(gid));
	show("rdma_cm found", "device %s, port %u, our GID %s (index %d)",
	     ibv_get_device_name(cm->id->verbs->device), cm->id->port_num, gid, *gid_idx);
	if (*gid_idx < 0) {
		report_error("rdma_cm's GID %s is in no entry of the port's GID table", gid);
		return -1;
	}
	return check_choice(cm, opts, *gid_idx);
}

struct ibv_qp *cm_create_qp(struct cm_link *cm, struct ibv_pd *pd, struct ibv_qp_init_attr *init)
{
	if (fault_at("cm_create_qp") || rdma_create_qp(cm->id, pd, init)) {
		report_verb_error("rdma_create_qp", errno);
		return NULL;
	}
	return cm->id->qp;
}

/*
 * The traffic class rdma_cm gave the QP, against --tclass: the server's QP
 * takes the class of the client's REQ (Linux 6.1 builds the passive side's
 * address vector from the path the REQ carries), not its own cm_id's ToS.
 */
static void show_tclass_choice(const struct cm_link *cm, unsigned int tclass)
{
	if (cm->tos == CM_TOS_DEFAULT || tclass == (unsigned int)cm->tos)
		return;
	show("rdma_cm chose", "traffic class %u, not our --tclass %d: %s", tclass, cm->tos,
	     cm->listen_id ? "the server's QP answers in the class of the client's REQ, so the "
			     "client's --tclass decides both directions"
			   : "the route rdma_cm resolved carries another");
}

/* The peer left after the connection was up: its own output says why. */
static void report_peer_gone(void)
{
	report_error("the peer disconnected during the run (DISCONNECTED): it has stopped or "
		     "failed, and no completion will come; see its output");
}

/*
 * The starting PSNs as rdma_cm's CM keeps them for this connection, which librdmacm gives the
 * QP at RTR and RTS: the REQ's Starting PSN (the client's receive PSN, the server's send PSN)
 * and rdma_cm's own draw for the other.  Not the QP's counters: the peer may send as soon as
 * it is in RTS and move our receive PSN on before we look.  The CM answers only while the
 * connection is being made or up: a DREQ that came first (the peer failed and left) moves it
 * on, and the read fails with EINVAL; the DISCONNECTED that follows then names the failure.
 */
static int cm_starting_psns(struct cm_link *cm, struct peer_info *local, struct peer_info *remote)
{
	struct ibv_qp_attr rtr = { .qp_state = IBV_QPS_RTR }, rts = { .qp_state = IBV_QPS_RTS };
	struct cm_event ev;
	int mask;

	if (!rdma_init_qp_attr(cm->id, &rtr, &mask) && !rdma_init_qp_attr(cm->id, &rts, &mask)) {
		remote->psn = rtr.rq_psn;
		local->psn = rts.sq_psn;
		return 0;
	}
	if (errno != EINVAL || !cm->established) {
		report_verb_error("rdma_init_qp_attr", errno);
		return -1;
	}
	/* The CM left the connected state: wait (up to -t) for the event that says why. */
	if (!wait_for_event(cm, RDMA_CM_EVENT_DISCONNECTED, &ev, "",
			    "rdma_init_qp_attr refused (the CM has left the connected state) and no "
			    "DISCONNECTED came", NULL)) {
		cm->disconnected = true;
		report_peer_gone();
	}
	return -1;
}

/* What rdma_cm chose that step 03 chooses by hand, read back from the QP; the starting PSNs
 * from the CM (cm_starting_psns, into LOCAL and REMOTE before). */
static int show_choices(const struct cm_link *cm, struct ibv_qp *qp, struct peer_info *local,
			struct peer_info *remote)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr init;
	char dgid[GID_STR_LEN], access[96];
	int rc;

	rc = ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS, &init);
	if (rc) {
		report_verb_error("ibv_query_qp", rc);
		return -1;
	}
	a.sq_psn = local->psn;
	a.rq_psn = remote->psn;
	remote->qpn = a.dest_qp_num;
	remote->gid = a.ah_attr.grh.dgid;
	remote->lid = a.ah_attr.dlid;
	remote->mtu = a.path_mtu;
	gid_format(&a.ah_attr.grh.dgid, dgid, sizeof(dgid));
	access_flags_format(a.qp_access_flags, access, sizeof(access));
	show("ibv_query_qp", "state %s, path MTU %d, dest QPN 0x%06x", qp_state_name(a.qp_state),
	     mtu_bytes(a.path_mtu), a.dest_qp_num);
	show("rdma_cm chose", "GRH to GID %s from our GID index %u, hop limit %u, traffic class %u "
	     "(DSCP %u, ECN %u), SL %u; path MTU %d", dgid, a.ah_attr.grh.sgid_index,
	     a.ah_attr.grh.hop_limit, a.ah_attr.grh.traffic_class, a.ah_attr.grh.traffic_class >> 2,
	     a.ah_attr.grh.traffic_class & 3, a.ah_attr.sl, mtu_bytes(a.path_mtu));
	show_tclass_choice(cm, a.ah_attr.grh.traffic_class);
	show("rdma_cm chose", "remote access %s on the QP (the MR still decides what a peer may "
	     "reach)", access);
	show("rdma_cm chose", "send PSN 0x%06x, receive PSN 0x%06x (both drawn by the kernel)",
	     a.sq_psn, a.rq_psn);
	show("rdma_cm chose", "timeout %u (4.096 us * 2^%u), retry_cnt %u, rnr_retry %u, "
	     "min_rnr_timer %u", a.timeout, a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer);
	show("rdma_cm chose", "responder resources %u (max_dest_rd_atomic: the peer's READs and "
	     "atomics we serve at once), initiator depth %u (max_rd_atomic)", a.max_dest_rd_atomic,
	     a.max_rd_atomic);
	return 0;
}

/* The server's answer to a request it refuses: a REJ whose private data says why. */
static void reject(struct cm_link *cm, enum cm_reject_reason reason, const char *text)
{
	uint8_t msg[8 + CM_REJECT_TEXT_LEN] = { 0 };
	size_t n = strnlen(text, CM_REJECT_TEXT_LEN - 1);

	memcpy(msg, CM_PRIVATE_MAGIC, 4);
	msg[4] = CM_PRIVATE_VERSION;
	msg[5] = (uint8_t)(8 + n + 1);
	msg[6] = (uint8_t)reason;
	memcpy(msg + 8, text, n);
	if (fault_at("cm_reject") || rdma_reject(cm->id, msg, msg[5])) {
		report_verb_error("rdma_reject", errno);
		return;
	}
	show("rdma_reject", "REJ sent, reason 28 (consumer defined), its private data naming why");
}

/* The server's checks of the client's private data, after stage 3: on a failure, a REJ says why. */
static int check_request(struct cm_link *cm, const struct peer_info *local, struct peer_info *remote)
{
	char why[256];	/* the REJ carries its first CM_REJECT_TEXT_LEN - 1 bytes */

	if (cm_private_decode(cm->request, cm->request_len, remote, why, sizeof(why))) {
		report_error("the client's private data: %s; rejected, with the reason in the REJ", why);
		reject(cm, CM_REJECT_PRIVATE_DATA, why);
		return -1;
	}
	if (remote->options_digest != cm_options_digest(local->options)) {
		report_error("the client was given other options than ours (%s): its digest 0x%016llx, "
			     "ours 0x%016llx; rejected, with ours in the REJ: give both sides the same "
			     "options", local->options[0] ? local->options : "none: a step 03 program",
			     (unsigned long long)remote->options_digest,
			     (unsigned long long)cm_options_digest(local->options));
		reject(cm, CM_REJECT_OPTIONS, local->options);
		return -1;
	}
	return 0;
}

/* A server for a foreign peer refuses a client that sent our private data: it is one of ours. */
static void refuse_ours(struct cm_link *cm)
{
	const struct foreign_peer *f = cm->foreign;
	char why[CM_REJECT_TEXT_LEN];

	report_error("the client sent rdma-steps private data: it is an rdma-steps --cm program, "
		     "not %s: start this side without %s", f->name, f->option);
	snprintf(why, sizeof(why), "this server speaks %s's protocol (%s): run the client with "
		 "%s, or %s", f->name, f->option, f->option, f->client);
	reject(cm, CM_REJECT_PRIVATE_DATA, why);
}

/* The server: checks the request, then rdma_accept (REP); or refuses it with a REJ. */
static int accept_request(struct cm_link *cm, struct peer_info *local,
			  struct peer_info *remote, struct rdma_conn_param *param)
{
	if (!cm->foreign && check_request(cm, local, remote))
		return -1;
	if (cm->foreign && cm->request_len >= 4 && !memcmp(cm->request, CM_PRIVATE_MAGIC, 4)) {
		refuse_ours(cm);
		return -1;
	}
	/* Read before rdma_accept: from the REP on, the client may finish, fail and send its DREQ
	 * before we ask, and the CM then answers no more. */
	if (cm_starting_psns(cm, local, remote))
		return -1;
	if (fault_at("cm_accept") || rdma_accept(cm->id, param)) {
		report_verb_error("rdma_accept", errno);
		return -1;
	}
	show("rdma_accept", "rdma_cm moved the QP to RTR and RTS, then sent the REP with %u bytes "
	     "of private data", param->private_data_len);
	return 0;
}

int cm_connect(struct cm_link *cm, struct ibv_qp *qp, struct peer_info *local,
	       struct peer_info *remote, uint8_t retry_cnt, uint8_t rd_atomic)
{
	uint8_t msg[CM_PRIVATE_LEN];
	struct rdma_conn_param param = {
		/* A foreign peer sends none and reads none. */
		.private_data = cm->foreign ? NULL : msg,
		.private_data_len = cm->foreign ? 0 : sizeof(msg),
		/* RDMA READs or atomics in flight each way, as over the side channel. */
		.responder_resources = rd_atomic,
		.initiator_depth = rd_atomic,
		.retry_count = retry_cnt,
		.rnr_retry_count = 7,
	};
	struct cm_event ev;
	char why[256];	/* the REJ carries its first CM_REJECT_TEXT_LEN - 1 bytes */

	cm_private_encode(local, msg);
	if (cm->listen_id) {
		/* The server reads rdma_cm's choices back at once: its QP is in RTS since
		 * rdma_accept, its starting PSNs read from the CM just before it. */
		if (accept_request(cm, local, remote, &param) || show_choices(cm, qp, local, remote))
			return -1;
	} else {
		if (fault_at("cm_connect") || rdma_connect(cm->id, &param)) {
			report_verb_error("rdma_connect", errno);
			return -1;
		}
		show("rdma_connect", "REQ sent: our QPN and PSN in the CM's own fields, %u bytes of "
		     "private data", param.private_data_len);
	}
	if (wait_for_event(cm, RDMA_CM_EVENT_ESTABLISHED, &ev, local->options,
			   cm->listen_id ? "the client did not finish the handshake (no RTU)"
					 : "no answer to our REQ",
			   cm->listen_id ? NULL
					 : "no CM there answered, and the kernel's CM would go on "
					   "resending it for about a minute (-t bounds the wait): is "
					   "the address a host with an RDMA device, running a --cm "
					   "server?"))
		return -1;
	cm->established = true;
	if (!cm->foreign && !cm->listen_id &&
	    cm_private_decode(ev.private_data, ev.private_len, remote, why, sizeof(why))) {
		report_error("the server's private data: %s", why);
		return -1;
	}
	if (!cm->listen_id &&
	    (cm_starting_psns(cm, local, remote) || show_choices(cm, qp, local, remote)))
		return -1;
	exchange_show("local", local);
	exchange_show("remote", remote);
	return 0;
}

bool cm_peer_gone(struct cm_link *cm)
{
	struct timespec now = deadline_in_ms(0);
	struct cm_event ev;

	/* A deadline of now: an event already queued is taken, none is waited for. */
	if (next_event(cm, &now, &ev) || ev.type != RDMA_CM_EVENT_DISCONNECTED)
		return false;
	cm->disconnected = true;
	report_peer_gone();
	return true;
}

int cm_wait_disconnect(struct cm_link *cm)
{
	struct cm_event ev;

	if (wait_for_event(cm, RDMA_CM_EVENT_DISCONNECTED, &ev, "",
			   "the peer did not disconnect at the end of its run", NULL))
		return -1;
	cm->disconnected = true;
	return 0;
}

int cm_disconnect(struct cm_link *cm)
{
	struct cm_event ev;
	bool answer = cm->disconnected;

	if (!cm->established)
		return 0;
	cm->established = false;
	if (fault_at("cm_disconnect") || rdma_disconnect(cm->id)) {
		report_verb_error("rdma_disconnect", errno);
		return 1;
	}
	show("rdma_disconnect", answer ? "DREP sent, answering the peer's DREQ; the QP is in ERR"
				       : "DREQ sent; the QP is in ERR");
	if (answer)
		return 0;
	return wait_for_event(cm, RDMA_CM_EVENT_DISCONNECTED, &ev, "",
			      "no DISCONNECTED after our DREQ", NULL) ? 1 : 0;
}

static int destroy_id(struct rdma_cm_id *id, const char *what)
{
	if (!id)
		return 0;
	/* The QP was ours to destroy, and is gone: the cm_id must not point at it. */
	id->qp = NULL;
	if (fault_at("cm_destroy_id") || rdma_destroy_id(id)) {
		report_verb_error("rdma_destroy_id", errno);
		return 1;
	}
	show("rdma_destroy_id", "%s destroyed", what);
	return 0;
}

int cm_close(struct cm_link *cm)
{
	int failures = destroy_id(cm->id, cm->listen_id ? "the connection's cm_id" : "the cm_id");

	cm->id = NULL;
	failures += destroy_id(cm->listen_id, "the listening cm_id");
	cm->listen_id = NULL;
	if (cm->events) {
		rdma_destroy_event_channel(cm->events);
		show("rdma_destroy_event_channel", "event channel closed");
	}
	cm->events = NULL;
	return failures;
}
