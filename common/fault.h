/* fault.h: fault injection: RDMA_STEPS_FAIL_AT=POINT makes one named verb fail, to run the failure paths. */
#ifndef RDMA_STEPS_FAULT_H
#define RDMA_STEPS_FAULT_H

#include <stdbool.h>

#define FAULT_ENV "RDMA_STEPS_FAIL_AT"

/* A point, the verb it stands for, and an error that verb can really return. */
struct fault_point {
	const char *point;
	const char *verb;
	int err;
};

/*
 * Each stage declares the points of its own verbs, beside the calls, in a
 * table of its own ended by a zeroed entry (as common/teardown.c does for the
 * release helpers' verbs).  A program lists the tables of the stages it runs
 * in its cli_spec, as it lists their options, and cli_parse hands them to
 * fault_use.  Returns 0, or -1 after naming a point that two entries share:
 * a clash fails every run of that program.
 */
int fault_use(const struct fault_point *const *tables);

/*
 * Checks FAULT_ENV: unset, empty, or one of the points fault_use was given.
 * Returns 0, or -1 after saying which points PROGRAM has.
 */
int fault_check_env(const char *program);

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
