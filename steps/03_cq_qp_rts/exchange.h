/* exchange.h: the out-of-band exchange: what each side must learn about the other before its QP can connect. */
#ifndef RDMA_STEPS_EXCHANGE_H
#define RDMA_STEPS_EXCHANGE_H

#include <stdint.h>
#include <infiniband/verbs.h>

/* Room for the options text, its NUL included. */
#define EXCHANGE_OPTIONS_LEN 40

/* Everything the peer needs to reach our QP and our buffer, and what both sides agreed to do. */
struct peer_info {
	uint32_t qpn;		/* queue pair number (24 bits) */
	uint32_t psn;		/* first packet sequence number (24 bits) */
	uint16_t lid;		/* InfiniBand local identifier (0 on RoCE) */
	enum ibv_mtu mtu;	/* the port's active MTU; MTU_NOT_SENT for a peer that sends none */
	union ibv_gid gid;	/* RoCE (and routed IB) address */
	uint64_t addr;		/* buffer address, for RDMA READ and WRITE */
	uint64_t len;		/* buffer length */
	uint32_t rkey;		/* the key that lets the peer touch that buffer */
	/*
	 * RDMA READs and atomics in flight: the most this side will have
	 * outstanding towards the peer (its initiator depth), and the most of
	 * the peer's it can serve at once (its responder resources).  Each
	 * side's max_rd_atomic is the least of its own offer and the peer's
	 * accept, and its max_dest_rd_atomic the least of its accept and the
	 * peer's offer: both ends agree (cq_qp_rts.c's agree_rd_atomic).  0: none
	 * (a device that initiates or serves no READ still SENDs and WRITEs);
	 * RD_NOT_SENT in both: a peer that sends none (ibv_rc_pingpong's), taken
	 * as stage 3's 1 each way.
	 */
	uint8_t rd_atomic, rd_accept;
	char options[EXCHANGE_OPTIONS_LEN];	/* what both sides must be given alike, as
						 * command-line text ("-o send -s 4096"); "" in step 03 */
	uint64_t options_digest;	/* --cm: the peer's options, as a digest (cm.h) */
};

/* The peer's MTU when its exchange carries none (ibv_rc_pingpong's): the path MTU is then ours. */
#define MTU_NOT_SENT ((enum ibv_mtu)0)
/* rd_atomic and rd_accept of a peer that sends neither: past any the exchange carries. */
#define RD_NOT_SENT 0xff

/*
 * Message version 3: magic, version, MTU, LID, QPN, PSN, rkey, the READs and
 * atomics offered and accepted (version 2 had 4 reserved bytes there),
 * address, length, GID, options.
 */
#define EXCHANGE_MAGIC "RDST"
#define EXCHANGE_VERSION 3
/* The most READs and atomics in flight either side may offer or accept: rxe rounds up to a power of two, and the QP's field is 8 bits. */
#define EXCHANGE_RD_ATOMIC_MAX 128
#define EXCHANGE_MSG_LEN (56 + EXCHANGE_OPTIONS_LEN)
/* Enough to tell our magic and version, or a stranger's first words, apart. */
#define EXCHANGE_START_LEN 12

/*
 * A later step's guess at who sent a message that is not ours, from its first
 * EXCHANGE_START_LEN bytes: the sentence to print after the error, or NULL.
 */
typedef const char *stranger_namer(const uint8_t start[EXCHANGE_START_LEN]);

void exchange_encode(const struct peer_info *info, uint8_t msg[EXCHANGE_MSG_LEN]);

/* Decodes and validates every field; returns 0, or -1 after naming the bad field. */
int exchange_decode(const uint8_t msg[EXCHANGE_MSG_LEN], struct peer_info *info);

/* Sets the options text that the peer's must equal, printf-style; it must fit in EXCHANGE_OPTIONS_LEN. */
void exchange_set_options(struct peer_info *info, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Sends LOCAL over the side channel FD and receives the peer's into REMOTE.
 * Fails, naming both, when the peer was given other options than this side;
 * a message that is not ours is named by NAME_STRANGER, when given.
 */
int exchange_peer_info(int fd, const struct peer_info *local, struct peer_info *remote,
		       int timeout_s, stranger_namer *name_stranger);

/* Prints INFO as "WHO QP" and "WHO buffer" lines; exchange_show_qp prints the first only. */
void exchange_show(const char *who, const struct peer_info *info);
void exchange_show_qp(const char *who, const struct peer_info *info);

/* Both sides send TAG and wait for the peer's: a barrier over the side channel. */
int exchange_sync(int fd, char tag, int timeout_s);

#endif
