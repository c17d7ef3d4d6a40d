/* stop.h: Ctrl-C and SIGTERM end a program through its teardown, never around it. */
#ifndef RDMA_STEPS_STOP_H
#define RDMA_STEPS_STOP_H

#include <stdbool.h>

/*
 * From here on, SIGINT and SIGTERM only set a flag and interrupt the wait in
 * progress (no SA_RESTART): every wait checks stop_requested() and fails, so
 * the program unwinds its goto ladder and prints its release lines.
 */
void stop_on_signals(void);

bool stop_requested(void);

/* The signal that asked to stop, as "SIGINT (Ctrl-C)" or "SIGTERM"; NULL when none has. */
const char *stop_signal_name(void);

/* Reports, once, which signal stopped the program; returns -1 for the caller to return. */
int report_stopped(void);

#endif
