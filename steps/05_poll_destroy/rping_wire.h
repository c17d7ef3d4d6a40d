/* rping_wire.h: rping's protocol (rdma-core's librdmacm example), spoken in either role over an rdma_cm connection. */
#ifndef RDMA_STEPS_RPING_WIRE_H
#define RDMA_STEPS_RPING_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session.h"

/*
 * Every rping message is 16 bytes, big-endian: the address of a buffer (8),
 * its rkey (4) and its length (4).  Per ping the client advertises a buffer
 * to read; the server RDMA READs it and sends a go-ahead; the client
 * advertises a buffer to write; the server RDMA WRITEs the bytes back and
 * sends a second go-ahead.  Each side keeps one receive posted and posts it
 * again after each message.  The go-ahead's bytes mean nothing (rping's
 * are zeros).
 */
#define RPING_MSG_LEN 16

/* rping's sizes (-S): room for "rdma-ping-%d: " with the largest count, up to 64 KiB less one;
 * 64 when rping is given no -S, which is what this side takes when it is given no -s. */
#define RPING_MIN_SIZE 26
#define RPING_MAX_SIZE 65535
#define RPING_DEFAULT_SIZE 64

/* rping, as stage 3's rdma_cm code names it: a peer with its own protocol and no private data of ours. */
extern const struct foreign_peer rping_peer;

/* What ping number PING holds in rping's client: "rdma-ping-PING: " then letters, a NUL last. */
void rping_fill(char *buf, size_t size, int ping);

/* The message "address, rkey, length" into MSG, and back. */
void rping_encode(uint8_t msg[RPING_MSG_LEN], uint64_t addr, uint32_t rkey, uint32_t len);
void rping_decode(const uint8_t msg[RPING_MSG_LEN], uint64_t *addr, uint32_t *rkey, uint32_t *len);

/* Fails, naming why, unless -s is a size rping can use. */
int rping_check_size(size_t size);

/* What one side of rping needs beside the session's buffer (the server's sink and source, the client's sink). */
struct rping {
	struct rdma_buf msgs;		/* the receive slot (bytes 0-15) and the send slot (16-31) */
	struct rdma_buf source;		/* the client's: the bytes the server reads */
	bool recv_ready;		/* a message arrived and is not yet taken */
	uint32_t recv_len;
	bool rdma_done;			/* our READ or WRITE completed */
};

/*
 * Before the connection: registers the message slots (and, for the client,
 * the buffer rping's server reads) and posts the one receive, which must be
 * there before the peer's first message.  Returns 0 or -1; rping_release
 * frees what it made either way.
 */
int rping_prepare(struct session *s, struct rping *r, bool client);

/*
 * Once connected: ITERS pings in rping's protocol, every byte checked, as the
 * server (for "rping -c -V -C ITERS") or the client (for "rping -s -V").  The
 * server then waits for the client's DISCONNECTED.  Returns 0 or -1.
 */
int rping_run(struct session *s, struct rping *r, int iters, bool client);

/* Deregisters and frees what rping_prepare made; returns how many releases failed. */
int rping_release(struct rping *r);

#endif
