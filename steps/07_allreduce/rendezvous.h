/* rendezvous.h: stage 7: the launcher's rank and world size, rank 0's rendezvous, and the control channel that ends every rank on a failure. */
#ifndef RDMA_STEPS_RENDEZVOUS_H
#define RDMA_STEPS_RENDEZVOUS_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "exchange.h"
#include "ring_options.h"

#define OPTIONS_TEXT_LEN 192
#define ADDR_TEXT_LEN 64

/* Where this process sits in the job, and who told it. */
struct launch {
	int rank, world;
	const char *source;	/* "command line", "torchrun", "Open MPI", "MPICH" or "Slurm" */
	const char *host;	/* rank 0's address (NULL on rank 0) */
	int port;		/* the rendezvous port */
};

/*
 * The rank and world size: --rank and --world-size, else the first
 * launcher whose variables are set, innermost first: torchrun's RANK and
 * WORLD_SIZE, Open MPI's OMPI_COMM_WORLD_RANK and _SIZE, MPICH's PMI_RANK
 * and PMI_SIZE, Slurm's SLURM_PROCID and SLURM_NTASKS (an srun that starts
 * torchrun or mpirun sets Slurm's per task, theirs per process).  Rank 0's
 * address: HOST, else MASTER_ADDR.  Returns 0, or -1 after saying what is missing.
 */
int launch_resolve(const struct ring_opts *opts, const struct cli_common *common, struct launch *l);

/* What a rank tells rank 0, and what rank 0 hands back to it. */
struct hello {
	int rank, world;
	int tcp_port;				/* its TCP ring listener */
	char options[OPTIONS_TEXT_LEN];		/* what every rank must be given alike */
	struct peer_info to_next, from_prev;	/* its two QPs */
	char addr[ADDR_TEXT_LEN];		/* rank 0: where the rank's connection came from */
};

struct neighbours {
	struct peer_info prev_qp;	/* the previous rank's QP to us */
	struct peer_info next_qp;	/* the next rank's QP from us */
	char next_addr[ADDR_TEXT_LEN];	/* the next rank's host, for the TCP ring */
	int next_tcp_port;
};

/* What each rank reports at the end of one size: gathered by rank 0, then every rank goes on. */
struct rank_result {
	uint64_t time_ns;	/* its time per run */
	uint64_t wrong;		/* elements wrong in its check */
	uint64_t bytes;		/* bytes it posted per run */
};

/* The connections to rank 0 (from it, to every rank), kept open for the whole run. */
struct ring_ctl {
	int rank, world, timeout_s;
	const char *host;
	int fd;			/* rank > 0: to rank 0 */
	int fds[MAX_WORLD];	/* rank 0: from each rank */
	bool failed;		/* an error line naming the failed rank has been printed */
	struct rank_result results[MAX_WORLD];	/* rank 0: what each rank reported, */
	bool have_result[MAX_WORLD];		/* possibly before rank 0 itself is done */
};

void ctl_init(struct ring_ctl *c, const struct launch *l, int timeout_s);

/*
 * Rank 0 gathers every rank's hello and checks that each rank comes once,
 * within the world size, with the same world size and options; then answers
 * each with its neighbours'.  The other ranks send theirs and wait.  On any
 * failure every rank that came is told, and prints which rank and why.  A
 * rank whose own set-up failed comes with FAILURE, its cause, instead of a hello.
 */
int rendezvous(struct ring_ctl *c, const struct launch *l, const struct hello *mine,
	       const char *failure, struct neighbours *out);

/*
 * This rank has found a failure of rank FAILED (itself or a neighbour):
 * prints "error: rank FAILED: CAUSE" and has rank 0 tell every rank.
 */
void ctl_fail(struct ring_ctl *c, int failed, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * As ctl_fail, for a neighbour whose connection ended: first waits up to
 * half a second for another rank's verdict, which would explain why.
 */
void ctl_fail_neighbour(struct ring_ctl *c, int neighbour, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Looks, without waiting, for a failure reported by another rank; -1 (printed) if there is one. */
int ctl_check(struct ring_ctl *c);

/* Sends MINE to rank 0 and waits for it to let every rank go on; rank 0 fills ALL[rank]. */
int ctl_gather(struct ring_ctl *c, const struct rank_result *mine, struct rank_result *all);

void ctl_close(struct ring_ctl *c);

#endif
