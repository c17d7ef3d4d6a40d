/* procstat.c: the process's own figures, as the kernel keeps them in /proc/self/status (memory) and /proc/self/io (system calls). */
#include "procstat.h"

#include <stdio.h>
#include <string.h>

/* The number after "FIELD:" in the file PATH; -1 if absent. */
static long proc_field(const char *path, const char *field)
{
	char line[128];
	size_t n = strlen(field);
	long value = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, n) && line[n] == ':') {
			if (sscanf(line + n + 1, "%ld", &value) != 1)
				value = -1;
			break;
		}
	}
	fclose(f);
	return value;
}

long proc_status_kb(const char *field)
{
	return proc_field("/proc/self/status", field);
}

long proc_io_count(const char *field)
{
	return proc_field("/proc/self/io", field);
}
