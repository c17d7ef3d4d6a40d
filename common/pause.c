/* pause.c: hold a program still so that a learner (or a test) can look at the kernel's view of it. */
#include "pause.h"
#include "report.h"

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

/* Waits for a line on stdin (until EOF), SIGUSR1 or the deadline; returns what ended it. */
static const char *wait_for_go(int timeout_s)
{
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	time_t deadline = time(NULL) + timeout_s;
	char line[256];

	while (!told_to_go_on) {
		int left_ms = (int)(deadline - time(NULL)) * 1000;

		if (left_ms <= 0)
			return "timeout";
		if (poll(&pfd, pfd.fd >= 0 ? 1 : 0, left_ms) > 0) {
			if (read(STDIN_FILENO, line, sizeof(line)) > 0)
				return "Enter";
			pfd.fd = -1;	/* stdin closed: only SIGUSR1 or the timeout remain */
		}
	}
	return "SIGUSR1";
}

void pause_until_told(const char *what)
{
	struct sigaction sa = { .sa_handler = on_sigusr1 };
	struct sigaction old;

	sigemptyset(&sa.sa_mask);
	told_to_go_on = 0;
	sigaction(SIGUSR1, &sa, &old);
	show("paused", "pid %d, %s; press Enter or send SIGUSR1 to go on (at most %d s)",
	     (int)getpid(), what, PAUSE_MAX_S);
	show("resumed", "by %s", wait_for_go(PAUSE_MAX_S));
	sigaction(SIGUSR1, &old, NULL);
}
