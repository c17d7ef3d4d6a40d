/* wait.h: the one wait on a file descriptor: bounded by a deadline, ended by Ctrl-C or SIGTERM. */
#ifndef RDMA_STEPS_WAIT_H
#define RDMA_STEPS_WAIT_H

#include <time.h>

/* What wait_fd() found, besides a failure of poll() itself (-1, reported). */
enum wait_result {
	WAIT_READY = 0,		/* FD is ready for what was asked */
	WAIT_TIMEOUT = 1,	/* the deadline passed first */
	WAIT_STOPPED = 2,	/* a stop signal came first: not reported, as callers say it their own way */
};

/*
 * Waits until FD is ready for EVENTS (POLLIN, POLLOUT) or DEADLINE (clock.h)
 * has passed; a deadline already past still looks once, so that what is
 * ready now is taken.  It checks stop_requested() (stop.h) before every
 * slice of at most 100 ms: a signal that lands just before poll() does not
 * interrupt it, and is seen within a slice.  Returns a wait_result, or -1
 * after reporting "poll (WHAT) failed", WHAT naming the descriptor.  Most
 * callers turn WAIT_STOPPED into report_stopped().
 */
int wait_fd(int fd, short events, const struct timespec *deadline, const char *what);

#endif
