/* schedule.h: stage 7: the ring's chunks and pieces, what each rank sends and receives at each step, and the sum. */
#ifndef RDMA_STEPS_SCHEDULE_H
#define RDMA_STEPS_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most ranks a ring may have: the immediate value carries the step in 8 bits. */
#define MAX_WORLD 128

enum collective { COLL_ALL_REDUCE, COLL_REDUCE_SCATTER, COLL_ALL_GATHER };
enum datatype { DT_FLOAT, DT_INT32 };

const char *collective_name(enum collective coll);
const char *datatype_name(enum datatype dt);
/* Every datatype here is 4 bytes wide. */
#define ELEM_SIZE 4

/*
 * The buffer of COUNT elements is cut into WORLD chunks, one per rank, of
 * COUNT / WORLD elements each, the first COUNT % WORLD chunks one element
 * more (as Open MPI's ring cuts them).  Chunks may be empty when COUNT <
 * WORLD.  Each chunk travels in pieces of at most PIECE_ELEMS elements,
 * one receive slot each.
 */
struct ring_layout {
	size_t count;
	int world;
	size_t piece_elems;
	enum collective coll;
	enum datatype dt;
};

size_t chunk_first(const struct ring_layout *l, int chunk);
size_t chunk_elems(const struct ring_layout *l, int chunk);

/*
 * The ring's steps are numbered 0 to 2(N-1)-1: reduce-scatter's N-1, then
 * all-gather's N-1.  At step G rank R sends chunk R-G-1 to rank R+1 and
 * receives chunk R-G-2 from rank R-1 (mod N), so that after reduce-scatter
 * rank R holds the whole sum of chunk R, and all-gather starts from there.
 */
int send_chunk(int rank, int world, int step);
int recv_chunk(int rank, int world, int step);
/* The steps COLL runs: [first, end). */
int first_step(enum collective coll, int world);
int end_step(enum collective coll, int world);
/* Whether a piece received at STEP is added in (reduce-scatter) or copied (all-gather). */
bool step_reduces(int step, int world);

/* One message on a link: part of a chunk, at one step. */
struct piece {
	int step;
	int chunk;
	size_t first;	/* its first element in the buffer */
	size_t elems;
	int needs;	/* receives this rank must have taken before it may send this piece */
};

/* What one rank sends to its next and receives from its previous, in the order they travel. */
struct plan {
	struct piece *send, *recv;
	int n_send, n_recv;
};

/* Builds RANK's plan for L; 0, or -1 when memory runs out (reported). */
int plan_build(const struct ring_layout *l, int rank, struct plan *p);
void plan_free(struct plan *p);

/* The bytes RANK posts in one run of L: the sum of its pieces. */
size_t plan_bytes(const struct plan *p);

/* Adds (reduce-scatter) or copies (all-gather) ELEMS elements of SRC into DST. */
void apply_piece(enum datatype dt, bool reduce, void *dst, const void *src, size_t elems);

/*
 * The test data: rank R's element I starts as R+1 + I%13 in its own chunk,
 * or everywhere for the reductions; all-gather's other chunks start as -1.
 * Small whole numbers, so that a float sum is exact.
 */
void fill_input(const struct ring_layout *l, int rank, void *buf);

/* How many of RANK's elements differ from what COLL must leave there. */
size_t count_wrong(const struct ring_layout *l, int rank, const void *buf);

/*
 * zlib's CRC-32 (the IEEE polynomial, reflected) of LEN bytes: a result's
 * digest, the same to the bit as Python's zlib.crc32 of another library's.
 */
uint32_t result_crc32(const void *buf, size_t len);

/*
 * --schedule: prints L's schedule for every rank, runs it on the CPU with
 * WORLD buffers in this process, and checks each rank's against the plain sum.
 * Returns 0 when every element is right.
 */
int run_reference(const struct ring_layout *l);

#endif
