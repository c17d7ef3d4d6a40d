/* clock.c: the one clock every step reads: the monotonic clock, immune to changes of the wall clock. */
#include "clock.h"

void clock_start(struct timespec *start)
{
	clock_gettime(CLOCK_MONOTONIC, start);
}

long ms_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

struct timespec deadline_in(int timeout_s)
{
	return deadline_in_ms(timeout_s * 1000L);
}

struct timespec deadline_in_ms(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

int ms_left(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int)((deadline->tv_sec - now.tv_sec) * 1000 +
		     (deadline->tv_nsec - now.tv_nsec) / 1000000);
}
