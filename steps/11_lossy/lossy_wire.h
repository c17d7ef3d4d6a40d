/* lossy_wire.h: step 11's messages: the asks and SACKs on the RC control QP, the plan and the end on the side channel, every field the peer sends checked. */
#ifndef RDMA_STEPS_LOSSY_WIRE_H
#define RDMA_STEPS_LOSSY_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chunk_map.h"
#include "lossy_options.h"

/*
 * A control message, SEND on the RC control QP, big-endian:
 *   0  "SACK"
 *   4  kind: 'A' the sender asks what came, 'S' the receiver answers an ask,
 *      'C' the receiver returns credit unasked, 'F' the receiver has every chunk
 *   5  paths K, then 2 bytes of 0
 *   8  round, 12 chunks, 16 chunks in (0 in an ask), then 4 bytes of 0
 *  24  K pairs of counts, 16 bytes a path: the WRITEs posted on it and 0
 *      (an ask), or the receives its WRITEs consumed and the receives posted
 *      on it since the start (a SACK): the sender's credit is their difference
 *  24 + 16K  a SACK only: the bitmap, bit c of 64-bit word c / 64 for chunk c
 */
#define SACK_MAGIC "SACK"
#define SACK_ASK 'A'
#define SACK_ANSWER 'S'
#define SACK_CREDIT 'C'
#define SACK_FINAL 'F'

struct sack {
	char kind;
	uint32_t round;
	uint32_t n_in;			/* chunks in, as the receiver counts them */
	uint64_t count[LOSSY_MAX_PATHS];	/* per path: WRITEs posted (an ask), or receives
						 * they consumed (a SACK) */
	uint64_t receives[LOSSY_MAX_PATHS];	/* per path, a SACK's: receives posted since the
						 * start (0 in an ask) */
};

static inline size_t sack_header_len(int paths)
{
	return 24 + 16 * (size_t)paths;
}

/* The longest control message: a SACK with its bitmap. */
static inline size_t sack_max_len(int paths, uint32_t chunks)
{
	return sack_header_len(paths) + chunk_map_bytes(chunks);
}

/* Writes S (and, unless an ask, M's bitmap) into MSG; returns its length. */
size_t sack_encode(uint8_t *msg, const struct sack *s, int paths, const struct chunk_map *m);

/*
 * Reads the LEN bytes of MSG into S, and a SACK's bitmap into BITS
 * (chunk_map_bytes(chunks) bytes), checking every field: the magic, a kind
 * among WANT ("SCF" or "A"), the paths and the chunks ours, the zeros, the
 * chunks in at most the chunks, the length the kind's.  0, or -1 after
 * naming the field.
 */
int sack_decode(const uint8_t *msg, size_t len, const char *want, int paths, uint32_t chunks,
		struct sack *s, uint64_t *bits);

/*
 * The side channel's plan, from the receiver: the chunks, their bytes, the
 * receives it keeps posted on each path (the sender's window), the paths.
 */
struct lossy_plan {
	uint32_t chunks, chunk_bytes, window, paths;
};

/* The receiver sends its plan; the sender receives it and checks it against its own: 0 or -1. */
int lossy_plan_send(int fd, const struct lossy_plan *p, int timeout_s);
int lossy_plan_recv(int fd, const struct lossy_plan *ours, struct lossy_plan *theirs, int timeout_s);

/* The sender's account at the end: its rounds, its WRITEs posted, the chunks and bytes it sent again. */
struct lossy_end {
	uint32_t rounds;
	uint64_t posts, again, again_bytes;
};

/*
 * The sender sends its account and receives the receiver's verdict (RIGHT:
 * every byte its); the receiver receives the account, checks it against
 * what it knows (CHUNKS, chunk bytes, the rounds it answered) and sends its
 * verdict.  0 or -1.
 */
int lossy_end_send(int fd, const struct lossy_end *e, bool *right, int timeout_s);
int lossy_end_recv(int fd, const struct chunk_map *m, uint32_t answered, struct lossy_end *e,
		   int timeout_s);
int lossy_verdict_send(int fd, bool right, int timeout_s);

#endif
