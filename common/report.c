/* report.c: teaching output and error reports shared by every step. */
#include "report.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define KEY_WIDTH 20

bool show_off;
static char first_error[1024];	/* longer than any error line here */

void show_quiet(bool on)
{
	show_off = on;
}

int flag_names_format(uint64_t flags, const struct flag_name *names, size_t n, char *buf,
		      size_t len)
{
	size_t used = 0;
	int named = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < len; i++)
		if (flags & names[i].flag) {
			used += (size_t)snprintf(buf + used, len - used, "%s%s", named ? "," : "",
						 names[i].name);
			named++;
		}
	return named;
}

void show_now(const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	show_now_va(key, fmt, ap);
	va_end(ap);
}

void show_now_va(const char *key, const char *fmt, va_list ap)
{
	printf("%-*s: ", KEY_WIDTH, key);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

void show_heading(const char *title)
{
	if (show_off)
		return;
	printf("\n== %s ==\n", title);
	fflush(stdout);
}

const char *report_first_error(void)
{
	return first_error;
}

void report_errors_clear(void)
{
	first_error[0] = '\0';
}

/* Prints "error: TEXT" on stderr, and keeps TEXT if it is the first since the last clear. */
static void print_error(const char *text)
{
	fflush(stdout);
	fprintf(stderr, "error: %s\n", text);
	if (!first_error[0])
		snprintf(first_error, sizeof(first_error), "%s", text);
}

void report_verb_error(const char *verb, int err)
{
	char text[sizeof(first_error)];

	snprintf(text, sizeof(text), "%s failed: %s (errno %d)", verb, strerror(err), err);
	print_error(text);
}

void report_error(const char *fmt, ...)
{
	char text[sizeof(first_error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	print_error(text);
}
