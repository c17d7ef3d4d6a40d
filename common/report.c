/* report.c: teaching output and error reports shared by every step. */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define KEY_WIDTH 20

bool show_off;

void show_quiet(bool on)
{
	show_off = on;
}

void show_now(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("%-*s: ", KEY_WIDTH, key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void show_heading(const char *title)
{
	printf("\n== %s ==\n", title);
	fflush(stdout);
}

void report_verb_error(const char *verb, int err)
{
	fflush(stdout);
	fprintf(stderr, "error: %s failed: %s (errno %d)\n", verb, strerror(err), err);
}

void report_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
