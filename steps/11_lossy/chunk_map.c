/* chunk_map.c: the buffer as chunks of one path MTU each: the bitmap of chunks in, the round's plan of what to send, the test's drops and the byte check. */
#include "chunk_map.h"
#include "pattern.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int chunk_map_init(struct chunk_map *m, size_t size, uint32_t bytes, bool sender)
{
	uint64_t n = (size + bytes - 1) / bytes;

	*m = (struct chunk_map){ .n = (uint32_t)n, .bytes = bytes, .size = size };
	m->in = calloc(1, chunk_map_bytes(m->n));
	m->dropped = calloc(1, chunk_map_bytes(m->n));
	if (sender) {
		m->plan = calloc(m->n, sizeof(*m->plan));
		m->posts = calloc(m->n, sizeof(*m->posts));
	}
	if (!m->in || !m->dropped || (sender && (!m->plan || !m->posts))) {
		report_error("no memory for the bitmaps of %u chunks", m->n);
		chunk_map_free(m);
		return -1;
	}
	return 0;
}

void chunk_map_free(struct chunk_map *m)
{
	free(m->in);
	free(m->dropped);
	free(m->plan);
	free(m->posts);
	*m = (struct chunk_map){ 0 };
}

void chunk_map_set_drops(struct chunk_map *m, const uint32_t *drop, int n_drops)
{
	m->drop = drop;
	m->n_drops = n_drops;
}

static bool to_drop(const struct chunk_map *m, uint32_t c)
{
	if (m->dropped[c / 64] >> (c % 64) & 1)
		return false;
	for (int i = 0; i < m->n_drops; i++)
		if (m->drop[i] == c)
			return true;
	return false;
}

enum arrival chunk_arrived(struct chunk_map *m, uint32_t c, uint8_t *buf)
{
	uint64_t bit = (uint64_t)1 << (c % 64);

	if (m->in[c / 64] & bit)
		return ARRIVAL_AGAIN;
	if (to_drop(m, c)) {
		uint8_t *p = buf + chunk_offset(m, c);

		/*
		 * As if the packet never came: every byte it placed is turned
		 * into another, so that only a resend passes the check; the bit
		 * stays clear.
		 */
		m->dropped[c / 64] |= bit;
		for (uint32_t i = 0; i < chunk_len(m, c); i++)
			p[i] ^= 0xff;
		return ARRIVAL_DROPPED;
	}
	m->in[c / 64] |= bit;
	m->n_in++;
	return ARRIVAL_NEW;
}

int chunk_map_take_sack(struct chunk_map *m, const uint64_t *bits, uint32_t n_in)
{
	size_t words = chunk_map_bytes(m->n) / 8;
	uint32_t count = 0;

	for (size_t w = 0; w < words; w++) {
		uint64_t v = bits[w], lost = m->in[w] & ~v;

		if (lost) {
			report_error("the receiver's SACK clears chunk %zu, which an earlier SACK said was "
				     "in: a chunk once in stays in", w * 64 + (size_t)__builtin_ctzll(lost));
			return -1;
		}
		count += (uint32_t)__builtin_popcountll(v);
	}
	/* The last word's bits past the last chunk must be clear. */
	if (m->n % 64 && bits[words - 1] >> (m->n % 64)) {
		report_error("the receiver's SACK has bits past the last chunk, %u: there are %u chunks",
			     m->n - 1, m->n);
		return -1;
	}
	if (count != n_in) {
		report_error("the receiver's SACK says %u chunks are in, but its bitmap holds %u", n_in,
			     count);
		return -1;
	}
	memcpy(m->in, bits, words * 8);
	m->n_in = n_in;
	return 0;
}

uint32_t chunk_map_plan_missing(struct chunk_map *m)
{
	m->planned = m->next = 0;
	for (uint32_t c = 0; c < m->n; c++)
		if (!chunk_is_in(m, c))
			m->plan[m->planned++] = c;
	return m->planned;
}

bool chunk_map_posted(struct chunk_map *m, uint32_t c)
{
	bool again = m->posts[c] > 0;

	if (m->posts[c] < UINT8_MAX)
		m->posts[c]++;
	return again;
}

void chunk_map_format_missing(const struct chunk_map *m, int max, char *buf, size_t len)
{
	size_t used = 0;
	int shown = 0;

	buf[0] = '\0';
	for (uint32_t c = 0; c < m->n && used < len; c++) {
		if (chunk_is_in(m, c))
			continue;
		if (shown == max) {
			snprintf(buf + used, len - used, ", ...");
			return;
		}
		used += (size_t)snprintf(buf + used, len - used, "%s%u", shown ? ", " : "", c);
		shown++;
	}
}

bool chunk_map_check(const struct chunk_map *m, const uint8_t *buf)
{
	return check_pattern(buf, m->size, CHUNK_SEED);
}
