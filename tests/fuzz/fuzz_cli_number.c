/* fuzz_cli_number.c: libFuzzer harness for the option-number parsers of common/cli.c, the A:B pairs' too. */
#include "cli.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longer than any number the parsers accept, so that long inputs still reach their overflow checks. */
#define ARG_MAX_LEN 128

/* The ranges the steps give (ports, --timeout, --iters, --mtu), and int's widest. */
static const long int_ranges[][2] = {
	{ 0, 255 }, { 1, 65535 }, { 1, 3600 }, { 1, 1000000 }, { 256, 4096 }, { 0, INT_MAX },
};

/* --size's range, a range that needs a suffix, and the widest. */
static const size_t size_ranges[][2] = {
	{ 1, (size_t)1 << 34 }, { 4096, 4096 }, { (size_t)1 << 20, (size_t)1 << 30 }, { 0, SIZE_MAX },
};

/* A parser returns 0 or -1, and what it accepts is IN_RANGE. */
static void check_result(int rc, bool in_range)
{
	if ((rc != 0 && rc != -1) || !in_range)
		abort();
}

static void check_int(const char *arg)
{
	int value;

	for (size_t i = 0; i < sizeof(int_ranges) / sizeof(int_ranges[0]); i++) {
		long min = int_ranges[i][0], max = int_ranges[i][1];
		int rc = cli_parse_int("--fuzz", arg, min, max, &value);

		check_result(rc, rc || (value >= min && value <= max));
	}
}

/* An accepted number, printed in decimal, parses back to itself. */
static void check_u32(const char *arg)
{
	uint32_t value, again;
	char text[16];
	int rc = cli_parse_u32("--fuzz", arg, &value);

	if (rc != 0 && rc != -1)
		abort();
	if (rc)
		return;
	snprintf(text, sizeof(text), "%u", value);
	if (cli_parse_u32("--fuzz", text, &again) || again != value)
		abort();
}

static void check_size(const char *arg)
{
	size_t value;

	for (size_t i = 0; i < sizeof(size_ranges) / sizeof(size_ranges[0]); i++) {
		size_t min = size_ranges[i][0], max = size_ranges[i][1];
		int rc = cli_parse_size("--fuzz", arg, min, max, &value);

		check_result(rc, rc || (value >= min && value <= max));
	}
}

/* The largest A and B of the steps' pairs (--slow, --delay-qp, --hold, --plant-count), and int's widest. */
static const int pair_ranges[][2] = {
	{ 1 << 20, 10000 }, { 15, 10000 }, { 255, 600000 }, { 255, 1 << 30 }, { INT_MAX, INT_MAX },
};

/* An accepted A:B is in range, and each side is the number its text says: none wrapped. */
static void check_pair(const char *arg)
{
	for (size_t i = 0; i < sizeof(pair_ranges) / sizeof(pair_ranges[0]); i++) {
		int a, b;
		int rc = cli_parse_pair("--fuzz", arg, "A:B", pair_ranges[i][0], pair_ranges[i][1], &a, &b);
		const char *colon = strchr(arg, ':');

		if (rc != 0 && rc != -1)
			abort();
		if (rc)
			continue;
		if (!colon || a < 0 || a > pair_ranges[i][0] || b < 0 || b > pair_ranges[i][1] ||
		    strtoull(arg, NULL, 10) != (unsigned long long)a ||
		    strtoull(colon + 1, NULL, 10) != (unsigned long long)b)
			abort();
	}
}

/* The input, cut at ARG_MAX_LEN bytes and NUL-terminated, is the option's argument. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char arg[ARG_MAX_LEN + 1];
	size_t len = size < ARG_MAX_LEN ? size : ARG_MAX_LEN;

	memcpy(arg, data, len);
	arg[len] = '\0';
	check_int(arg);
	check_u32(arg);
	check_size(arg);
	check_pair(arg);
	return 0;
}
