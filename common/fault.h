/* fault.h: fault injection: RDMA_STEPS_FAIL_AT=POINT makes one named verb fail, to run the failure paths. */
#ifndef RDMA_STEPS_FAULT_H
#define RDMA_STEPS_FAULT_H

#include <stdbool.h>

#define FAULT_ENV "RDMA_STEPS_FAIL_AT"

/*
 * Checks FAULT_ENV: unset, empty, or one of the points fault_at knows.  Returns 0,
 * or -1 after saying which points there are.
 */
int fault_check_env(void);

/* True once no fault can come: FAULT_ENV names none, or its point has already failed once. */
extern bool fault_none;

/* fault_at's work when a fault may still come: FAULT_ENV read once, POINT compared with it. */
bool fault_at_point(const char *point);

/*
 * Whether the verb at POINT is to fail now: true the first time the program
 * reaches the point FAULT_ENV names.  Then errno holds a plausible error for
 * that verb, and a "fault injected" line says so; the caller goes on as if
 * the verb had failed with it.  Inline, because a data path asks on every
 * post and completion: in a run with no fault, one test of fault_none.
 */
static inline bool fault_at(const char *point)
{
	return !fault_none && fault_at_point(point);
}

#endif
