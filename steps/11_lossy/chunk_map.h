/* chunk_map.h: the buffer as chunks of one path MTU each: the bitmap of chunks in, the round's plan of what to send, the test's drops and the byte check. */
#ifndef RDMA_STEPS_CHUNK_MAP_H
#define RDMA_STEPS_CHUNK_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The sender's pattern, and what the receiver's buffer holds before a chunk lands: they differ in every byte. */
#define CHUNK_SEED 0x11
#define CHUNK_POISON_SEED 0x80

struct chunk_map {
	uint32_t n;		/* chunks in the buffer */
	uint32_t bytes;		/* a chunk: the path MTU; the last one may be shorter */
	size_t size;		/* the buffer */
	uint64_t *in;		/* bit c: chunk c is in (receiver), or the receiver said so (sender) */
	uint32_t n_in;		/* bits set */
	/* The sender's round: the chunks to post, in order, and how far it got. */
	uint32_t *plan;
	uint32_t planned, next;
	uint8_t *posts;		/* the sender: how many times each chunk was posted (255 at most) */
	/* The receiver's test drops (--drop-chunks): each chunk's first arrival is taken as lost. */
	const uint32_t *drop;
	int n_drops;
	uint64_t *dropped;	/* bit c: chunk c's first arrival was dropped already */
};

/*
 * SIZE bytes in chunks of BYTES: allocates the bitmaps (and, for a SENDER,
 * the plan and the post counts); 0, or -1 after saying so, with nothing
 * left allocated.
 */
int chunk_map_init(struct chunk_map *m, size_t size, uint32_t bytes, bool sender);
void chunk_map_free(struct chunk_map *m);

/* The bytes of chunk C, and where it starts. */
static inline uint32_t chunk_len(const struct chunk_map *m, uint32_t c)
{
	size_t off = (size_t)c * m->bytes;

	return m->size - off < m->bytes ? (uint32_t)(m->size - off) : m->bytes;
}

static inline size_t chunk_offset(const struct chunk_map *m, uint32_t c)
{
	return (size_t)c * m->bytes;
}

static inline bool chunk_is_in(const struct chunk_map *m, uint32_t c)
{
	return m->in[c / 64] >> (c % 64) & 1;
}

/* Bytes of the bitmap as the SACK carries it: one bit a chunk, rounded up to whole 64-bit words. */
static inline size_t chunk_map_bytes(uint32_t n)
{
	return ((size_t)n + 63) / 64 * 8;
}

/* The receiver: takes the test's drop list (not copied: it must outlive the map). */
void chunk_map_set_drops(struct chunk_map *m, const uint32_t *drop, int n_drops);

/* What an arrival of chunk C did to the receiver's map. */
enum arrival {
	ARRIVAL_NEW,		/* its bit was clear: set now */
	ARRIVAL_AGAIN,		/* its bit was set: a resend of a chunk already in */
	ARRIVAL_DROPPED,	/* --drop-chunks: taken as lost, its bytes poisoned, its bit left clear */
};

/* The receiver: chunk C has arrived at BUF (the whole buffer); marks it, or drops it once for the test. */
enum arrival chunk_arrived(struct chunk_map *m, uint32_t c, uint8_t *buf);

/*
 * The sender: the receiver's bitmap BITS (chunk_map_bytes(m->n) bytes, as a
 * SACK carries it) replaces ours.  It must have no bit past the last chunk
 * and lose no bit it had: a chunk once in stays in.  0, or -1 after naming
 * what was wrong.
 */
int chunk_map_take_sack(struct chunk_map *m, const uint64_t *bits, uint32_t n_in);

/* The sender: the next round's plan, every chunk not in yet, in order; returns how many. */
uint32_t chunk_map_plan_missing(struct chunk_map *m);

/* The sender: the next chunk of the plan, or false when the plan is done. */
static inline bool chunk_map_next(struct chunk_map *m, uint32_t *c)
{
	if (m->next == m->planned)
		return false;
	*c = m->plan[m->next++];
	return true;
}

/* The plan's chunks still to post. */
static inline uint32_t chunk_map_left(const struct chunk_map *m)
{
	return m->planned - m->next;
}

/* The sender: chunk C is posted; returns whether it was posted before (a resend). */
bool chunk_map_posted(struct chunk_map *m, uint32_t c);

/* Up to MAX chunk numbers not in yet, as "3, 17, 40" (", ..." after MAX), into BUF. */
void chunk_map_format_missing(const struct chunk_map *m, int max, char *buf, size_t len);

/* The receiver's check: every byte of the buffer is the sender's pattern; false after naming the first that is not. */
bool chunk_map_check(const struct chunk_map *m, const uint8_t *buf);

#endif
