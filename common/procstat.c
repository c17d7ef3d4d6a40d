/* procstat.c: the process's own figures, as the kernel keeps them in /proc/self/status (memory), /proc/self/io (system calls) and /proc/self/smaps (a mapping's flags), and which pages of a range are present (mincore). */
#include "procstat.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

int proc_vma_has_flag(const void *addr, const char *flag)
{
	char line[512], want[8];
	uintptr_t start, end, at = (uintptr_t)addr;
	int inside = 0, found = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), " %.2s", flag);
	while (fgets(line, sizeof(line), f)) {
		/* A mapping's first line is "START-END perms ...", its fields "Name: ..." lines. */
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &start, &end) == 2)
			inside = at >= start && at < end;
		else if (inside && !strncmp(line, "VmFlags:", 8)) {
			found = strstr(line + 8, want) != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}


long resident_pages(void *addr, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (len + page - 1) / page, i;
	unsigned char *vec = malloc(n);
	long present = 0;

	if (!vec)
		return -1;
	if (mincore(addr, len, vec)) {
		free(vec);
		return -1;
	}
	for (i = 0; i < n; i++)
		present += vec[i] & 1;
	free(vec);
	return present;
}
