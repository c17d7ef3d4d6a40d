/* control.h: the job runtime: the control channel to rank 0: it ends every rank on a failure, naming the rank, and gathers the results. */
#ifndef RDMA_STEPS_CONTROL_H
#define RDMA_STEPS_CONTROL_H

#include <stdbool.h>
#include <time.h>

#include "ctl_msg.h"
#include "launch.h"

/* The connections to rank 0 (from it, to every rank), opened by the rendezvous. */
struct ring_ctl {
	int rank, world, timeout_s;
	int fd;			/* rank > 0: to rank 0 */
	int fds[JOB_MAX_RANKS];	/* rank 0: from each rank */
	bool failed;		/* an error line naming the failed rank has been printed */
	struct rank_result results[JOB_MAX_RANKS];	/* rank 0: what each rank reported, */
	bool have_result[JOB_MAX_RANKS];		/* possibly before rank 0 itself is done */
	/* Stall notices (ctl_stall): rank 0 keeps every rank's, a rank its own. */
	int waits_on[JOB_MAX_RANKS];		/* the rank it waits on, or -1 */
	char stall_cause[JOB_MAX_RANKS][CTL_TEXT_LEN];	/* how, in its words: "it wrote nothing ..." */
	int stalls;				/* notices kept */
	struct timespec first_stall;		/* when the first was kept */
};

void ctl_init(struct ring_ctl *c, const struct launch *l, int timeout_s);

/* Prints "error: rank FAILED: CAUSE" unless a failure is printed already; tells no other rank. */
void ctl_announce(struct ring_ctl *c, int failed, const char *cause);

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

/*
 * This rank has waited -t on rank WAITS_ON, which may itself wait on
 * another: it does not name it at once.  The first call tells rank 0 (a
 * stall notice; FMT says how, of the rank waited on).  Rank 0 follows the
 * notices from rank to rank, to the one rank that sent none, names it, and
 * tells every rank; it decides once every rank but one has sent a notice
 * (or its result), or -t after the first.  Call again on every look while
 * the wait lasts: 0 while the verdict may still come; -1 once a failure is
 * printed, rank 0's verdict or, -t and a second after this rank's notice,
 * rank 0 named for giving none.
 */
int ctl_stall(struct ring_ctl *c, int waits_on, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Looks, without waiting, for a failure reported by another rank; -1 (printed) if there is one. */
int ctl_check(struct ring_ctl *c);

/* Sends MINE to rank 0 and waits for it to let every rank go on; rank 0 fills ALL[rank]. */
int ctl_gather(struct ring_ctl *c, const struct rank_result *mine, struct rank_result *all);

void ctl_close(struct ring_ctl *c);

#endif
