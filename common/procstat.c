/* procstat.c: the process's own memory figures, as the kernel keeps them in /proc/self/status. */
#include "procstat.h"

#include <stdio.h>
#include <string.h>

long proc_status_kb(const char *field)
{
	char line[128];
	size_t n = strlen(field);
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, n) && line[n] == ':') {
			if (sscanf(line + n + 1, "%ld", &kb) != 1)
				kb = -1;
			break;
		}
	}
	fclose(f);
	return kb;
}
