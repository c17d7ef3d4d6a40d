/* wait.c: the one wait on a file descriptor: bounded by a deadline, ended by Ctrl-C or SIGTERM. */
#include "wait.h"
#include "clock.h"
#include "report.h"
#include "stop.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>

/* The longest a stop signal can go unseen, when it lands just before poll(). */
#define WAIT_SLICE_MS 100

int wait_fd(int fd, short events, const struct timespec *deadline, const char *what)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	char verb[64];
	int left, rc, err;

	for (;;) {
		if (stop_requested())
			return WAIT_STOPPED;
		left = ms_left(deadline);
		left = left < 0 ? 0 : left;
		rc = poll(&pfd, 1, left < WAIT_SLICE_MS ? left : WAIT_SLICE_MS);
		if (rc > 0)
			return WAIT_READY;
		if (rc < 0 && errno != EINTR) {
			err = errno;
			snprintf(verb, sizeof(verb), "poll (%s)", what);
			report_verb_error(verb, err);
			return -1;
		}
		if (rc == 0 && left == 0)
			return WAIT_TIMEOUT;
	}
}
