/* pause.c: hold a program still so that a learner (or a test) can look at the kernel's view of it. */
#define _GNU_SOURCE	/* ppoll */
#include "pause.h"
#include "clock.h"
#include "report.h"
#include "stop.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t told_to_go_on;

static void on_sigusr1(int sig)
{
	(void)sig;
	told_to_go_on = 1;
}

/*
 * Waits for a line on stdin (until EOF), SIGUSR1, a stop signal or the
 * deadline; returns what ended it, or NULL for a stop signal.  The three signals stay blocked except
 * inside ppoll, which unblocks them atomically: a signal that comes between
 * the flag test and the wait still ends the wait.  The monotonic clock is
 * immune to changes of the wall clock.
 */
static const char *wait_for_go(int timeout_s, const sigset_t *wait_mask)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	struct timespec start;
	char line[256];

	clock_start(&start);
	while (!told_to_go_on) {
		if (stop_requested())
			return NULL;
		long left_ms = timeout_s * 1000L - ms_since(&start);
		struct timespec left = { .tv_sec = left_ms / 1000, .tv_nsec = left_ms % 1000 * 1000000 };

		if (left_ms <= 0)
			return "timeout";
		if (ppoll(&pfd, pfd.fd >= 0 ? 1 : 0, &left, wait_mask) > 0) {
			if (read(STDIN_FILENO, line, sizeof(line)) > 0)
				return "Enter";
			pfd.fd = -1;	/* stdin closed: only SIGUSR1 or the timeout remain */
		}
	}
	return "SIGUSR1";
}

int pause_until_told(const char *what)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	struct sigaction old;
	sigset_t wake, old_mask, wait_mask;
	const char *by;

	sigemptyset(&wake);
	sigaddset(&wake, SIGUSR1);
	sigaddset(&wake, SIGINT);
	sigaddset(&wake, SIGTERM);
	sigprocmask(SIG_BLOCK, &wake, &old_mask);
	wait_mask = old_mask;
	sigdelset(&wait_mask, SIGUSR1);
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGTERM);
	sigemptyset(&sa.sa_mask);
	told_to_go_on = 0;
	sigaction(SIGUSR1, &sa, &old);
	show("paused", "pid %d, %s; press Enter or send SIGUSR1 to go on (at most %d s)",
	     (int)getpid(), what, PAUSE_MAX_S);
	by = wait_for_go(PAUSE_MAX_S, &wait_mask);
	sigaction(SIGUSR1, &old, NULL);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	/* Ctrl-C here ends the program as it does anywhere else: through its release lines, with status 1. */
	if (!by)
		return report_stopped();
	show("resumed", "by %s", by);
	return 0;
}
