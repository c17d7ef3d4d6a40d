/* pause.h: hold a program still so that a learner (or a test) can look at the kernel's view of it. */
#ifndef RDMA_STEPS_PAUSE_H
#define RDMA_STEPS_PAUSE_H

#define PAUSE_MAX_S 600

/*
 * Prints "paused: pid N, WHAT; press Enter or send SIGUSR1 to go on" and
 * waits for a line on stdin, SIGUSR1, or at most PAUSE_MAX_S seconds; then
 * prints "resumed: by ..." and returns 0.  Ctrl-C or SIGTERM ends the pause
 * as it ends any other wait (see stop.h): no "resumed" line, the "stopped by"
 * error instead, and -1, so that the program releases what it created and
 * exits with 1, as a Ctrl-C anywhere else makes it do.
 */
int pause_until_told(const char *what);

#endif
