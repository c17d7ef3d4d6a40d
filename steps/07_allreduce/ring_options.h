/* ring_options.h: stage 7's part of the command line: the collective, the datatype, the ring's slots (the rank and the transport: job_options.h; the sizes: nccl_options.h). */
#ifndef RDMA_STEPS_RING_OPTIONS_H
#define RDMA_STEPS_RING_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"
#include "cq_qp_rts.h"
#include "job_options.h"
#include "nccl_options.h"
#include "schedule.h"

/* Stage 7's long-only option keys (cli.h's blocks). */
enum ring_key {
	CLI_KEY_DATATYPE = CLI_STAGE_KEYS(7),
	CLI_KEY_SLOTS,
	CLI_KEY_SLOT_BYTES,
	CLI_KEY_SLOW,
	CLI_KEY_SCHEDULE,
};

/*
 * K and C: each rank gives its previous rank K receive slots of C bytes.
 * NCCL gives each connection NCCL_STEPS = 8 slots of NCCL_BUFFSIZE / 8 =
 * 512 KiB; we keep its 8 and take 64 KiB, the message size at which rxe
 * reaches its bandwidth (ib_write_bw), so that 1 MiB over 4 ranks still
 * makes several pieces per chunk to pipeline.
 */
#define DEFAULT_SLOTS 8
#define MAX_SLOTS 64		/* K data receives and K credit SENDs fit QUEUE_DEPTH's queues,
				 * where the device holds them (ring.c checks --slots against
				 * max_qp_wr and max_cqe) */
#define DEFAULT_SLOT_BYTES (64 * 1024)
struct ring_opts {
	enum collective coll;	/* -o */
	enum datatype dt;	/* --datatype */
	struct nccl_opts sizes;	/* -b, --maxbytes, -f, -n, -w, -c: nccl-tests' table (NCCL_STAGE) */
	struct job_opts job;	/* --rank, --world-size, --transport, --qp-timeout: the runtime's (JOB_STAGE) */
	struct conn_opts conn;	/* --tclass, --sl: stage 3's, for both QPs (CQ_QP_PATH_STAGE) */
	int slots;		/* --slots: K */
	size_t slot_bytes;	/* --slot-bytes: C */
	int slow_rank, slow_ms;	/* --slow=RANK:MS: that rank holds each slot MS ms */
	bool schedule;		/* --schedule: print and check the plan on the CPU, no device */
};

void ring_opts_default(struct ring_opts *opts);

extern const struct cli_option ring_cli_options[];
#define RING_STAGE(opts) { ring_cli_options, NULL, (opts) }

/* Checks the options together; reports what does not fit. */
int ring_opts_check(const struct ring_opts *opts);

/* The options every rank must share, as text for the rendezvous to compare. */
void ring_opts_format(const struct ring_opts *opts, char *buf, size_t len);

#endif
