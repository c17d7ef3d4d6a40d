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

/*
 * Whether the verb at POINT is to fail now: true the first time the program
 * reaches the point FAULT_ENV names.  Then errno holds a plausible error for
 * that verb, and a "fault injected" line says so; the caller goes on as if
 * the verb had failed with it.
 */
bool fault_at(const char *point);

#endif
