/* schedule.c: stage 7: the ring's chunks and pieces, what each rank sends and receives at each step, and the sum. */
#include "schedule.h"
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *collective_name(enum collective coll)
{
	static const char *const names[] = {
		[COLL_ALL_REDUCE] = "all_reduce", [COLL_REDUCE_SCATTER] = "reduce_scatter",
		[COLL_ALL_GATHER] = "all_gather",
	};

	return names[coll];
}

const char *datatype_name(enum datatype dt)
{
	return dt == DT_FLOAT ? "float" : "int32";
}

size_t chunk_elems(const struct ring_layout *l, int chunk)
{
	return l->count / (size_t)l->world + ((size_t)chunk < l->count % (size_t)l->world);
}

size_t chunk_first(const struct ring_layout *l, int chunk)
{
	size_t extra = l->count % (size_t)l->world, c = (size_t)chunk;

	return c * (l->count / (size_t)l->world) + (c < extra ? c : extra);
}

static int ring_mod(int v, int world)
{
	return ((v % world) + world) % world;
}

int send_chunk(int rank, int world, int step)
{
	return ring_mod(rank - step - 1, world);
}

int recv_chunk(int rank, int world, int step)
{
	return ring_mod(rank - step - 2, world);
}

int first_step(enum collective coll, int world)
{
	return coll == COLL_ALL_GATHER ? world - 1 : 0;
}

int end_step(enum collective coll, int world)
{
	return coll == COLL_REDUCE_SCATTER ? world - 1 : 2 * (world - 1);
}

bool step_reduces(int step, int world)
{
	return step < world - 1;
}

static size_t pieces_of(const struct ring_layout *l, int chunk)
{
	return (chunk_elems(l, chunk) + l->piece_elems - 1) / l->piece_elems;
}

/* Appends CHUNK's pieces at STEP to LIST; NEEDS_FROM: the receive index the first depends on, or -1. */
static int add_pieces(const struct ring_layout *l, int step, int chunk, int needs_from,
		      struct piece *list, int n)
{
	size_t first = chunk_first(l, chunk), left = chunk_elems(l, chunk);

	for (int k = 0; left; k++) {
		size_t elems = left < l->piece_elems ? left : l->piece_elems;

		list[n++] = (struct piece){
			.step = step, .chunk = chunk, .first = first, .elems = elems,
			.needs = needs_from < 0 ? 0 : needs_from + k + 1,
		};
		first += elems;
		left -= elems;
	}
	return n;
}

int plan_build(const struct ring_layout *l, int rank, struct plan *p)
{
	int first = first_step(l->coll, l->world), end = end_step(l->coll, l->world);
	size_t most = 0;
	int recv_start[2 * MAX_WORLD];

	*p = (struct plan){ 0 };
	for (int g = first; g < end; g++)
		most += pieces_of(l, send_chunk(rank, l->world, g)) + pieces_of(l, recv_chunk(rank, l->world, g));
	p->send = calloc(most + 1, sizeof(*p->send));
	p->recv = calloc(most + 1, sizeof(*p->recv));
	if (!p->send || !p->recv) {
		report_error("no memory for the ring's plan of %zu pieces", most);
		plan_free(p);
		return -1;
	}
	for (int g = first; g < end; g++) {
		recv_start[g] = p->n_recv;
		p->n_recv = add_pieces(l, g, recv_chunk(rank, l->world, g), -1, p->recv, p->n_recv);
	}
	/* A piece forwarded at step G is the one received at step G-1: the same chunk, piece by piece. */
	for (int g = first; g < end; g++)
		p->n_send = add_pieces(l, g, send_chunk(rank, l->world, g),
				       g == first ? -1 : recv_start[g - 1], p->send, p->n_send);
	return 0;
}

void plan_free(struct plan *p)
{
	free(p->send);
	free(p->recv);
	*p = (struct plan){ 0 };
}

size_t plan_bytes(const struct plan *p)
{
	size_t bytes = 0;

	for (int i = 0; i < p->n_send; i++)
		bytes += p->send[i].elems * ELEM_SIZE;
	return bytes;
}

void apply_piece(enum datatype dt, bool reduce, void *dst, const void *src, size_t elems)
{
	if (!reduce) {
		memcpy(dst, src, elems * ELEM_SIZE);
	} else if (dt == DT_FLOAT) {
		float *d = dst;
		const float *s = src;

		for (size_t i = 0; i < elems; i++)
			d[i] += s[i];
	} else {
		int32_t *d = dst;
		const int32_t *s = src;

		for (size_t i = 0; i < elems; i++)
			d[i] += s[i];
	}
}

static int32_t input_value(int rank, size_t i)
{
	return rank + 1 + (int32_t)(i % 13);
}

static void store(enum datatype dt, void *buf, size_t i, int32_t v)
{
	if (dt == DT_FLOAT)
		((float *)buf)[i] = (float)v;
	else
		((int32_t *)buf)[i] = v;
}

static bool holds(enum datatype dt, const void *buf, size_t i, int32_t v)
{
	return dt == DT_FLOAT ? ((const float *)buf)[i] == (float)v : ((const int32_t *)buf)[i] == v;
}

static int chunk_of(const struct ring_layout *l, size_t i)
{
	int c = 0;

	while (c + 1 < l->world && chunk_first(l, c + 1) <= i)
		c++;
	return c;
}

void fill_input(const struct ring_layout *l, int rank, void *buf)
{
	for (size_t i = 0; i < l->count; i++) {
		bool own = l->coll != COLL_ALL_GATHER || chunk_of(l, i) == rank;

		store(l->dt, buf, i, own ? input_value(rank, i) : -1);
	}
}

/* What element I of RANK's buffer must hold after COLL, or false where it is not defined. */
static bool expected(const struct ring_layout *l, int rank, size_t i, int32_t *v)
{
	int c = chunk_of(l, i);

	if (l->coll == COLL_ALL_GATHER) {
		*v = input_value(c, i);
		return true;
	}
	if (l->coll == COLL_REDUCE_SCATTER && c != rank)
		return false;
	*v = 0;
	for (int r = 0; r < l->world; r++)
		*v += input_value(r, i);
	return true;
}

size_t count_wrong(const struct ring_layout *l, int rank, const void *buf)
{
	size_t wrong = 0;
	int32_t want;

	for (size_t i = 0; i < l->count; i++)
		if (expected(l, rank, i, &want) && !holds(l->dt, buf, i, want))
			wrong++;
	return wrong;
}

uint32_t result_crc32(const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint32_t crc = 0xffffffff;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (int bit = 0; bit < 8; bit++)
			crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
	}
	return ~crc;
}

static void print_schedule(const struct ring_layout *l, const struct plan *plans)
{
	int end = end_step(l->coll, l->world);

	for (int g = first_step(l->coll, l->world); g < end; g++)
		for (int r = 0; r < l->world; r++) {
			int c = send_chunk(r, l->world, g);
			char key[40];

			snprintf(key, sizeof(key), "step %d rank %d", g, r);
			show(key, "sends chunk %d (elements %zu to %zu, %zu pieces) to rank %d, which %s",
			     c, chunk_first(l, c), chunk_first(l, c) + chunk_elems(l, c), pieces_of(l, c),
			     (r + 1) % l->world, step_reduces(g, l->world) ? "adds it in" : "copies it");
		}
	for (int r = 0; r < l->world; r++) {
		char key[32];

		snprintf(key, sizeof(key), "rank %d", r);
		show(key, "posts %zu bytes in %d pieces, takes %d", plan_bytes(&plans[r]),
		     plans[r].n_send, plans[r].n_recv);
	}
}

/* Moves every rank's pieces of step G to its next rank, as the wire would: all sent, then all applied. */
static void simulate_step(const struct ring_layout *l, const struct plan *plans, int *sent,
			  int *taken, char **bufs, char *wire, int g)
{
	for (int r = 0; r < l->world; r++) {
		int nx = (r + 1) % l->world, at = taken[nx];

		for (; sent[r] < plans[r].n_send && plans[r].send[sent[r]].step == g; sent[r]++, at++) {
			const struct piece *ps = &plans[r].send[sent[r]], *pr = &plans[nx].recv[at];

			memcpy(wire + pr->first * ELEM_SIZE, bufs[r] + ps->first * ELEM_SIZE,
			       ps->elems * ELEM_SIZE);
		}
	}
	for (int r = 0; r < l->world; r++)
		for (; taken[r] < plans[r].n_recv && plans[r].recv[taken[r]].step == g; taken[r]++) {
			const struct piece *pr = &plans[r].recv[taken[r]];
			char *w = wire + pr->first * ELEM_SIZE;

			apply_piece(l->dt, step_reduces(g, l->world), bufs[r] + pr->first * ELEM_SIZE, w,
				    pr->elems);
		}
}

int run_reference(const struct ring_layout *l)
{
	struct plan plans[MAX_WORLD] = { 0 };
	char *bufs[MAX_WORLD] = { 0 }, *wire;
	int sent[MAX_WORLD] = { 0 }, taken[MAX_WORLD] = { 0 }, rc = -1;
	size_t bytes = l->count * ELEM_SIZE + 1, wrong = 0;

	wire = malloc(bytes);
	for (int r = 0; r < l->world; r++) {
		bufs[r] = malloc(bytes);
		if (!wire || !bufs[r]) {
			report_error("no memory for %d buffers of %zu bytes", l->world, bytes);
			goto out_free_buffers;
		}
		if (plan_build(l, r, &plans[r]))
			goto out_free_buffers;
		fill_input(l, r, bufs[r]);
	}
	print_schedule(l, plans);
	for (int g = first_step(l->coll, l->world); g < end_step(l->coll, l->world); g++)
		simulate_step(l, plans, sent, taken, bufs, wire, g);
	for (int r = 0; r < l->world; r++)
		wrong += count_wrong(l, r, bufs[r]);
	show("reference check", "%s of %zu %s elements on %d ranks, pieces of %zu: %zu wrong %s",
	     collective_name(l->coll), l->count, datatype_name(l->dt), l->world, l->piece_elems,
	     wrong, wrong ? "(see above)" : "(every rank equals the plain CPU sum)");
	rc = wrong ? -1 : 0;
out_free_buffers:
	for (int r = 0; r < l->world; r++) {
		plan_free(&plans[r]);
		free(bufs[r]);
	}
	free(wire);
	return rc;
}
