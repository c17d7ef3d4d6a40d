/* report.h: teaching output and error reports shared by every step. */
#ifndef RDMA_STEPS_REPORT_H
#define RDMA_STEPS_REPORT_H

#include <stdbool.h>

/*
 * Teaching output is one "key: value" line per fact, with the key padded so
 * that the values line up.  A key is either a verb ("ibv_alloc_pd") or a fact
 * ("active MTU"); tests grep for these lines, so keep them stable.
 */
void show(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * Turns the "key: value" lines of show() off or on: a loop that repeats a
 * stage thousands of times shows its first round only.  Errors still print.
 */
void show_quiet(bool quiet);

/* Whether show() prints now: a line that costs work to build can skip it when it would not. */
bool showing(void);

/* A section heading: "== title ==". */
void show_heading(const char *title);

/*
 * "error: VERB failed: STRERROR (errno N)" on stderr.  Verbs that return
 * NULL leave the reason in errno; verbs that return an int return it.
 */
void report_verb_error(const char *verb, int err);

/* "error: MESSAGE" on stderr. */
void report_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#endif
