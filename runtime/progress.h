/* progress.h: the job runtime: one way to wait for the NIC: look, give the CPU away by one rule, and now and then look at the control channel and the clock. */
#ifndef RDMA_STEPS_PROGRESS_H
#define RDMA_STEPS_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "control.h"
#include "open_pd.h"

/* How a waiting rank spends the time between two looks at its CQs or signal words. */
enum progress_rule {
	PROGRESS_SPIN,	/* a hardware NIC, a CPU each: look again at once, no system call */
	PROGRESS_YIELD,	/* a software device (rxe, siw): its "NIC" is kernel work on our CPUs */
	PROGRESS_NAP,	/* more ranks than online CPUs: sleep, 1 us doubling to 1 ms */
	PROGRESS_BLOCKED,	/* the look blocks itself (the TCP twins' poll() on their sockets) */
};

/* One wait's state: from progress_start to the end of the wait. */
struct progress {
	struct ring_ctl *ctl;
	enum progress_rule rule;
	long bound_ms;			/* -t: the longest a wait goes without progress */
	unsigned looks;			/* empty looks since the last look around */
	long nap_ns;			/* the next nap (PROGRESS_NAP) */
	struct timespec since;		/* the last progress: the bound counts from here */
	struct timespec ctl_seen;	/* the last look at the control channel */
	uint64_t yields, naps;		/* what the wait cost, for the output */
};

/* What progress_idle returns once the bound has passed: the caller says what it waits on. */
#define PROGRESS_STALLED 1

/*
 * The rule, decided once: with more ranks on this node than online CPUs
 * (RANKS_HERE; every rank is counted as here when the launcher does not
 * say), a waiting rank naps, for a rank that never gives its CPU away keeps
 * the one it waits on from running; else, on a software device (no PCI
 * device behind DEV: rxe's and siw's work runs in the kernel, on these same
 * CPUs) it yields; else it spins, as NCCL's proxy thread polls its CQs, for
 * a yield or a nap costs microseconds a look on a real NIC.  Prints the
 * "waits" line that says which, and why.
 */
enum progress_rule progress_rule_for(const struct rdma_dev *dev, int ranks_here);

/* A wait begins: its bound is TIMEOUT_S without progress; CTL is looked at now and then. */
void progress_start(struct progress *p, struct ring_ctl *ctl, enum progress_rule rule,
		    int timeout_s);

/* Something moved: the bound starts again, and a nap shrinks back to its first length. */
void progress_made(struct progress *p);

/*
 * After a look that found nothing: gives the CPU away by the rule, then,
 * every 1024 looks (every look when napping or blocked), looks around: at
 * the control channel, at most every 100 ms, and at the clock.  0: look again; -1:
 * another rank's failure, printed (ctl_check); PROGRESS_STALLED: the bound
 * has passed since the last progress, and the caller names what it waits on.
 */
int progress_idle(struct progress *p);

/*
 * After each look of a loop that looks again at once when something moved:
 * MOVED restarts the bound (progress_made) and returns 0; else progress_idle.
 */
int progress_after(struct progress *p, bool moved);

#endif
