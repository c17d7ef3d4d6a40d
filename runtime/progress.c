/* progress.c: the job runtime: one way to wait for the NIC: look, give the CPU away by one rule, and now and then look at the control channel and the clock. */
#include "progress.h"
#include "clock.h"
#include "report.h"

#include <sched.h>
#include <stdio.h>
#include <unistd.h>

/* Empty looks between two looks around; the control channel's most frequent look. */
#define LOOK_EVERY 1024
#define CTL_EVERY_MS 100
/* A nap's first length and its longest: each empty look doubles it. */
#define NAP_FIRST_NS 1000L
#define NAP_MOST_NS 1000000L


enum progress_rule progress_rule_for(const struct rdma_dev *dev, int ranks_here)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus > 0 && ranks_here > cpus) {
		show("waits", "%d ranks on %ld online CPUs (every rank counted as on this node): the "
		     "ranks outnumber the CPUs, so a waiting rank sleeps between looks (nanosleep, 1 us "
		     "doubling to 1 ms) instead of yielding, which would hand the CPU to another "
		     "waiting rank and leave rxe's kernel work behind them", ranks_here, cpus);
		return PROGRESS_NAP;
	}
	if (rdma_dev_is_software(dev)) {
		show("waits", "%d ranks on %ld online CPUs: a waiting rank yields between looks "
		     "(sched_yield), as a proxy thread on a core of its own would spin", ranks_here,
		     cpus);
		return PROGRESS_YIELD;
	}
	show("waits", "%d ranks on %ld online CPUs, a hardware NIC: a waiting rank spins between "
	     "looks, no system call, as NCCL's proxy thread polls its CQs", ranks_here, cpus);
	return PROGRESS_SPIN;
}

void progress_start(struct progress *p, struct ring_ctl *ctl, enum progress_rule rule,
		    int timeout_s)
{
	*p = (struct progress){ .ctl = ctl, .rule = rule, .bound_ms = timeout_s * 1000L,
				.nap_ns = NAP_FIRST_NS };
	clock_start(&p->since);
	p->ctl_seen = p->since;
}

void progress_made(struct progress *p)
{
	clock_start(&p->since);
	p->nap_ns = NAP_FIRST_NS;
}

/* Between two looks, by the rule. */
static void give_cpu(struct progress *p)
{
	struct timespec t = { .tv_nsec = p->nap_ns };

	switch (p->rule) {
	case PROGRESS_SPIN:
	case PROGRESS_BLOCKED:
		return;
	case PROGRESS_YIELD:
		sched_yield();
		p->yields++;
		return;
	case PROGRESS_NAP:
		nanosleep(&t, NULL);
		p->naps++;
		p->nap_ns = p->nap_ns * 2 > NAP_MOST_NS ? NAP_MOST_NS : p->nap_ns * 2;
		return;
	}
}

int progress_idle(struct progress *p)
{
	give_cpu(p);
	/* A nap or a blocking look has taken its time already: look around after each. */
	if (p->rule != PROGRESS_NAP && p->rule != PROGRESS_BLOCKED && ++p->looks < LOOK_EVERY)
		return 0;
	p->looks = 0;
	if (ms_since(&p->ctl_seen) >= CTL_EVERY_MS) {
		clock_start(&p->ctl_seen);
		if (ctl_check(p->ctl))
			return -1;
	}
	return ms_since(&p->since) > p->bound_ms ? PROGRESS_STALLED : 0;
}

int progress_after(struct progress *p, bool moved)
{
	if (!moved)
		return progress_idle(p);
	progress_made(p);
	return 0;
}
