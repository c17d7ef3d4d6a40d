/* stop.c: Ctrl-C and SIGTERM end a program through its teardown, never around it. */
#include "stop.h"
#include "report.h"

#include <signal.h>
#include <stddef.h>

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

void stop_on_signals(void)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool stop_requested(void)
{
	return stop_signal != 0;
}

const char *stop_signal_name(void)
{
	switch (stop_signal) {
	case 0:
		return NULL;
	case SIGINT:
		return "SIGINT (Ctrl-C)";
	default:
		return "SIGTERM";
	}
}

int report_stopped(void)
{
	static bool reported;

	if (!reported)
		report_error("stopped by %s: releasing what this program created, in reverse order",
			     stop_signal_name());
	reported = true;
	return -1;
}
