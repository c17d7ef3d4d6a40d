/* pause.h: hold a program still so that a learner (or a test) can look at the kernel's view of it. */
#ifndef RDMA_STEPS_PAUSE_H
#define RDMA_STEPS_PAUSE_H

#define PAUSE_MAX_S 600

/*
 * Prints "paused: pid N, WHAT; press Enter or send SIGUSR1 to go on" and
 * waits for a line on stdin, SIGUSR1, or at most PAUSE_MAX_S seconds.  Ctrl-C
 * or SIGTERM ends the pause too, and the program then stops (see stop.h).
 */
void pause_until_told(const char *what);

#endif
