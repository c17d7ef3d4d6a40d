/* ring_options.h: stage 7's part of the command line: the collective, the ring's slots, the rank (nccl-tests' sizes and counts: nccl_options.h). */
#ifndef RDMA_STEPS_RING_OPTIONS_H
#define RDMA_STEPS_RING_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "nccl_options.h"
#include "schedule.h"

/*
 * K and C: each rank gives its previous rank K receive slots of C bytes.
 * NCCL gives each connection NCCL_STEPS = 8 slots of NCCL_BUFFSIZE / 8 =
 * 512 KiB; we keep its 8 and take 64 KiB, the message size at which rxe
 * reaches its bandwidth (ib_write_bw), so that 1 MiB over 4 ranks still
 * makes several pieces per chunk to pipeline.
 */
#define DEFAULT_SLOTS 8
#define MAX_SLOTS 64		/* K data receives and K credit SENDs fit QUEUE_DEPTH's queues */
#define DEFAULT_SLOT_BYTES (64 * 1024)
/* Stage 3's ACK timeout, 4.096 us x 2^14, about 67 ms a try; --qp-timeout changes it. */
#define QP_TIMEOUT_DEFAULT 14
/* --qp-timeout's row, one definition for every step whose QPs take it (07 and 09). */
#define QP_TIMEOUT_CLI_OPTION { "qp-timeout", CLI_KEY_QP_TIMEOUT, "T", "the QPs' ACK timeout, 4.096 us x 2^T a try, 1 to 31, as NCCL_IB_TIMEOUT (default: 14, stage 3's; NCCL's is 20)" }

enum transport { TRANSPORT_RDMA, TRANSPORT_TCP, TRANSPORT_BOTH };

/* --transport's words, as both steps that take it name them: rdma, tcp, both. */
extern const char *const transport_names[3];

struct ring_opts {
	enum collective coll;	/* -o */
	enum datatype dt;	/* --datatype */
	struct nccl_opts sizes;	/* -b, --maxbytes, -f, -n, -w, -c: nccl-tests' table (NCCL_STAGE) */
	int rank, world;	/* --rank, --world-size; -1: from the launcher's variables */
	int slots;		/* --slots: K */
	size_t slot_bytes;	/* --slot-bytes: C */
	enum transport transport;	/* --transport */
	int slow_rank, slow_ms;	/* --slow=RANK:MS: that rank holds each slot MS ms */
	int qp_timeout;		/* --qp-timeout: the QPs' ACK timeout, as NCCL_IB_TIMEOUT */
	bool schedule;		/* --schedule: print and check the plan on the CPU, no device */
};

void ring_opts_default(struct ring_opts *opts);

extern const struct cli_option ring_cli_options[];
int ring_parse_option(int key, const char *arg, void *opts);
#define RING_STAGE(opts) { ring_cli_options, ring_parse_option, (opts) }

/* --qp-timeout's value into *OUT: 1 to 31; 0, or -1 after saying what is wrong. */
int qp_timeout_parse(const char *arg, int *out);

/* Checks the options together; reports what does not fit. */
int ring_opts_check(const struct ring_opts *opts);

/* The options every rank must share, as text for the rendezvous to compare. */
void ring_opts_format(const struct ring_opts *opts, char *buf, size_t len);

#endif
