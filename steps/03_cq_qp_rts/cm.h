/* cm.h: the connection through the RDMA connection manager (--cm): address, route, the CM's handshake and its private data. */
#ifndef RDMA_STEPS_CM_H
#define RDMA_STEPS_CM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "cli.h"
#include "exchange.h"
#include "fault.h"

/*
 * The private data of our REQ and REP, version 1, 40 bytes, multi-byte fields
 * big-endian:
 *    0  4  magic "RDCM"
 *    4  1  version (1)
 *    5  1  length of this message (40): the CM pads what it delivers to 56
 *          bytes (REQ) or 196 (REP), so the length travels inside
 *    6  2  reserved, 0
 *    8  4  rkey of the buffer (0: no peer may reach it)
 *   12  4  reserved, 0
 *   16  8  buffer address
 *   24  8  buffer length
 *   32  8  digest of the options both sides must share (64-bit FNV-1a of
 *          their text, "-o send -s 4096"; of "" in step 03)
 * The QPN, PSN, GID, LID and MTU that exchange.c sends travel in the CM's own
 * fields of the REQ and REP.
 */
#define CM_PRIVATE_MAGIC "RDCM"
#define CM_PRIVATE_VERSION 1
#define CM_PRIVATE_LEN 40

/*
 * The private data of our REJ: magic, version, length (8 + the text with its
 * NUL), the reason below, a reserved 0, then the text from byte 8 (a REJ
 * carries 148 bytes of private data through rdma_cm): the
 * server's options for CM_REJECT_OPTIONS, else a sentence naming the fault.
 */
#define CM_REJECT_TEXT_LEN 140
enum cm_reject_reason {
	CM_REJECT_PRIVATE_DATA = 1,	/* the client's private data is not what version 1 says */
	CM_REJECT_OPTIONS = 2,		/* the client was given other options than the server */
};

/*
 * A peer that speaks its own protocol over rdma_cm, with no private data of
 * ours, named for the messages that tell a user which side to restart.
 */
struct foreign_peer {
	const char *name;		/* its program, as users know it */
	const char *option;		/* what makes this program speak to it */
	const char *client;		/* its own client's command line */
};

struct cm_link {
	struct rdma_event_channel *events;	/* where rdma_cm's events arrive (a file descriptor) */
	struct rdma_cm_id *listen_id;		/* the server's: bound to the port, listening */
	struct rdma_cm_id *id;			/* the connection's: the client's, or the server's
						 * from CONNECT_REQUEST */
	const struct foreign_peer *foreign;	/* NULL: an rdma-steps --cm program */
	int timeout_s;				/* -t: every wait for the CM is bounded by it */
	int tos;				/* --tclass, or CM_TOS_DEFAULT */
	bool established;			/* ESTABLISHED came */
	bool disconnected;			/* DISCONNECTED came */
	uint8_t request[56];			/* server: the client's private data, checked after stage 3 */
	uint8_t request_len;
};

/* No --tclass: the cm_id keeps the device's default ToS (configfs' default_roce_tos). */
#define CM_TOS_DEFAULT (-1)

/*
 * Stage 0 under --cm, before any verbs object: opens the event channel and a
 * cm_id, gives it TOS (0 to 255, or CM_TOS_DEFAULT), then the client resolves
 * OPTS->host (address, then route) and the server listens on port
 * OPTS->tcp_port and waits for a CONNECT_REQUEST.  Either way cm->id->verbs
 * is then the device, which must be the one -d names; -i and -x must match
 * the port and GID the address gives.  Fills *GID_IDX with that GID's index.
 * Returns 0 or -1; cm_close releases it.
 */
int cm_find_device(struct cm_link *cm, const struct cli_common *opts,
		   const struct foreign_peer *foreign, int tos, int *gid_idx);

/* rdma_create_qp: rdma_cm creates the QP on cm->id with INIT and moves it to INIT itself; NULL on failure. */
struct ibv_qp *cm_create_qp(struct cm_link *cm, struct ibv_pd *pd, struct ibv_qp_init_attr *init);

/*
 * Connects (client: rdma_connect; server: checks the client's private data,
 * then rdma_accept or rdma_reject) and waits for ESTABLISHED, carrying LOCAL's
 * buffer and options digest in the private data and filling REMOTE with the
 * peer's, and LOCAL's PSN with the one the kernel drew (QPNs, PSNs, GID and
 * MTU read back from the QP).  Shows what rdma_cm chose.  With a foreign peer
 * no private data travels.  RETRY_CNT is the client's retry count, RD_ATOMIC
 * the READs and atomics in flight each way.  Returns 0 or -1.
 */
int cm_connect(struct cm_link *cm, struct ibv_qp *qp, struct peer_info *local,
	       struct peer_info *remote, uint8_t retry_cnt, uint8_t rd_atomic);

/* Waits, up to -t, for the peer to disconnect (its DREQ): the barrier at the end of a run. 0 or -1. */
int cm_wait_disconnect(struct cm_link *cm);

/* How long a wait for a completion runs between two looks at cm_peer_gone. */
#define CM_CHECK_MS 100

/*
 * Whether the peer has disconnected, looked at without waiting: a wait for a
 * completion calls it between slices, since a posted receive never says that
 * its peer has gone.  Reports it when so.
 */
bool cm_peer_gone(struct cm_link *cm);

/*
 * Ends the connection (rdma_disconnect: a DREQ, or the DREP that answers the
 * peer's) and waits for DISCONNECTED, then destroys the cm_ids and the event
 * channel.  Releasing the QP comes before: QP must be NULL or destroyed.
 * Returns how many releases failed.
 */
int cm_disconnect(struct cm_link *cm);
int cm_close(struct cm_link *cm);

/* The 40-byte private data of LOCAL, and its decoding, each field checked by name (0, or -1 after naming it). */
void cm_private_encode(const struct peer_info *local, uint8_t msg[CM_PRIVATE_LEN]);
int cm_private_decode(const uint8_t *msg, size_t len, struct peer_info *remote, char *why,
		      size_t why_len);

/* The digest of an options text that travels in place of the text. */
uint64_t cm_options_digest(const char *options);

/* Stage 3's fault points over rdma_cm (--cm): its calls, and our private data broken on purpose. */
extern const struct fault_point cm_faults[];

#endif
