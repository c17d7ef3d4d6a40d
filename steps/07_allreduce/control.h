/* control.h: stage 7: the control channel to rank 0: it ends every rank on a failure, naming the rank, and gathers the results. */
#ifndef RDMA_STEPS_CONTROL_H
#define RDMA_STEPS_CONTROL_H

#include <stdbool.h>

#include "ctl_msg.h"
#include "launch.h"

/* The connections to rank 0 (from it, to every rank), opened by the rendezvous. */
struct ring_ctl {
	int rank, world, timeout_s;
	int fd;			/* rank > 0: to rank 0 */
	int fds[MAX_WORLD];	/* rank 0: from each rank */
	bool failed;		/* an error line naming the failed rank has been printed */
	struct rank_result results[MAX_WORLD];	/* rank 0: what each rank reported, */
	bool have_result[MAX_WORLD];		/* possibly before rank 0 itself is done */
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

/* Looks, without waiting, for a failure reported by another rank; -1 (printed) if there is one. */
int ctl_check(struct ring_ctl *c);

/* Sends MINE to rank 0 and waits for it to let every rank go on; rank 0 fills ALL[rank]. */
int ctl_gather(struct ring_ctl *c, const struct rank_result *mine, struct rank_result *all);

void ctl_close(struct ring_ctl *c);

#endif
