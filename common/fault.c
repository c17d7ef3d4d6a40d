/* fault.c: fault injection: RDMA_STEPS_FAIL_AT=POINT makes one named verb fail, to run the failure paths. */
#include "fault.h"
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tables of the program's stages, as fault_use was given them: NULL-ended. */
static const struct fault_point *const *tables;

static const struct fault_point *find_point(const char *name)
{
	for (const struct fault_point *const *t = tables; t && *t; t++)
		for (const struct fault_point *fp = *t; fp->point; fp++)
			if (!strcmp(fp->point, name))
				return fp;
	return NULL;
}

int fault_use(const struct fault_point *const *list)
{
	tables = list;
	for (const struct fault_point *const *t = tables; t && *t; t++)
		for (const struct fault_point *fp = *t; fp->point; fp++) {
			const struct fault_point *first = find_point(fp->point);

			if (first == fp)
				continue;
			report_error("fault point %s is declared twice, for %s and for %s: each stage "
				     "declares the points of its own verbs only (fault_use in fault.h)",
				     fp->point, first->verb, fp->verb);
			tables = NULL;
			return -1;
		}
	return 0;
}

int fault_check_env(const char *program)
{
	const char *name = getenv(FAULT_ENV);
	char list[1024] = "none";
	size_t len = 0;
	int n;

	/* Set but empty, as after RDMA_STEPS_FAIL_AT= on a command line, means no fault. */
	if (!name || !*name || find_point(name))
		return 0;
	for (const struct fault_point *const *t = tables; t && *t; t++)
		for (const struct fault_point *fp = *t; fp->point; fp++) {
			n = snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "",
				     fp->point);
			if (n > 0 && (size_t)n < sizeof(list) - len)
				len += n;
		}
	report_error("%s: '%s' is not a fault point of %s; use one of %s (or unset it)", FAULT_ENV,
		     name, program, list);
	return -1;
}

/* The point asked for, read once: fault_at runs on every post and completion of a data path. */
static const char *wanted_point(void)
{
	static const char *name;
	static bool looked;

	if (!looked) {
		name = getenv(FAULT_ENV);
		looked = true;
	}
	return name;
}

bool fault_none;

bool fault_at_point(const char *point)
{
	const char *name = wanted_point();
	const struct fault_point *fp;

	/* Unset or empty: no point will ever fail, and fault_at need not ask again. */
	if (!name || !*name) {
		fault_none = true;
		return false;
	}
	if (strcmp(name, point))
		return false;
	fp = find_point(point);
	if (!fp)
		return false;
	/* A point fails once: after it, no fault can come. */
	fault_none = true;
	/* A loop that runs quietly after its first round must still say where it failed. */
	show_quiet(false);
	show("fault injected", "%s fails here, as if with %s (%s=%s)", fp->verb, strerror(fp->err),
	     FAULT_ENV, point);
	errno = fp->err;
	return true;
}
