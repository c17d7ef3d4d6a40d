/* clock.h: the one clock every step reads: the monotonic clock, immune to changes of the wall clock. */
#ifndef RDMA_STEPS_CLOCK_H
#define RDMA_STEPS_CLOCK_H

#include <time.h>

/* Microseconds on the monotonic clock.  Inline: a latency loop reads it twice a message. */
static inline double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

/* Starts a stopwatch: the monotonic clock's time now, into START. */
void clock_start(struct timespec *start);

/* Whole milliseconds since START, which clock_start filled. */
long ms_since(const struct timespec *start);

/* The monotonic clock's time TIMEOUT_S seconds from now: a deadline for ms_left. */
struct timespec deadline_in(int timeout_s);

/* The same, MS milliseconds from now. */
struct timespec deadline_in_ms(long ms);

/* Milliseconds left until DEADLINE: zero or less once it has passed. */
int ms_left(const struct timespec *deadline);

#endif
