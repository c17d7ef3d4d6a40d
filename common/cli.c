/* cli.c: the command line every step shares, in the style of ibv_rc_pingpong and perftest. */
#include "cli.h"
#include "fault.h"
#include "report.h"
#include "stop.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTIONS 32

enum { KEY_HELP = 'h' };

static const struct cli_option common_options[] = {
	{ "ib-dev", 'd', "NAME", "RDMA device to use (default: the first one found)", CLI_TEXT_AT(struct cli_common, ib_dev) },
	{ "ib-port", 'i', "N", "port of that device (default: 1)", CLI_INT_AT(struct cli_common, ib_port, 1, 255) },
	{ "gid-idx", 'x', "N", "GID table index (default: chosen, RoCE v2 IPv4-mapped first)", CLI_INT_AT(struct cli_common, gid_idx, 0, 255) },
	{ "port", 'p', "N", "TCP port of the out-of-band exchange (default: 18515)", CLI_INT_AT(struct cli_common, tcp_port, 1, 65535) },
	{ "timeout", 't', "SECONDS", "how long to wait for the peer (default: 30)", CLI_INT_AT(struct cli_common, timeout_s, 1, 3600) },
	{ "pause", CLI_KEY_PAUSE, NULL, "before teardown, wait for Enter or SIGUSR1 (look with 'rdma resource show')", CLI_FLAG_AT(struct cli_common, pause) },
	{ "help", KEY_HELP, NULL, .help = "print this help and exit" },
	{ 0 },
};

/* Whether KEY is an option's letter (-x) as well as its long name. */
static bool has_letter(int key)
{
	return key > 0 && key < CLI_FIRST_LONG_KEY;
}

static bool option_applies(const struct cli_spec *spec, const struct cli_option *opt)
{
	if (opt->key == 'p' || opt->key == 't')
		return spec->connects;
	if (opt->key == CLI_KEY_PAUSE)
		return spec->pauses;
	return true;
}

static void print_option(const struct cli_option *opt)
{
	char left[64];
	int n;

	if (has_letter(opt->key))
		n = snprintf(left, sizeof(left), "  -%c, --%s", opt->key, opt->name);
	else
		n = snprintf(left, sizeof(left), "      --%s", opt->name);
	if (opt->arg_name && n > 0 && (size_t)n < sizeof(left))
		snprintf(left + n, sizeof(left) - n, "=%s", opt->arg_name);
	printf("%-26s %s\n", left, opt->help);
}

static void print_usage(const struct cli_spec *spec)
{
	const struct cli_option *opt;

	if (spec->connects)
		printf("Usage: %s [options]          start the server\n"
		       "       %s [options] HOST     connect to the server on HOST\n",
		       spec->program, spec->program);
	else
		printf("Usage: %s [options]\n", spec->program);
	printf("\n%s\n\nOptions:\n", spec->purpose);
	for (opt = common_options; opt->name; opt++)
		if (option_applies(spec, opt))
			print_option(opt);
	for (const struct cli_stage *st = spec->stages; st && st->options; st++)
		for (opt = st->options; opt->name; opt++)
			print_option(opt);
}

/* Another option already in LONGS with OPT's key or name, or NULL. */
static const struct option *clash(const struct cli_option *opt, const struct option *longs,
				  size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (longs[i].val == opt->key || !strcmp(longs[i].name, opt->name))
			return &longs[i];
	return NULL;
}

static int add_option(const struct cli_option *opt, struct option *longs, size_t *n,
		      char *shorts, size_t *s)
{
	const struct option *other = clash(opt, longs, *n);

	if (other) {
		report_error("options --%s and --%s share %s: each stage declares its keys in a "
			     "block of its own (CLI_STAGE_KEYS in cli.h)", other->name, opt->name,
			     other->val == opt->key ? "a key" : "a name");
		return -1;
	}
	if (*n + 1 >= MAX_OPTIONS) {
		report_error("more than %d options: raise MAX_OPTIONS in cli.c", MAX_OPTIONS - 1);
		return -1;
	}
	longs[(*n)++] = (struct option){
		.name = opt->name,
		.has_arg = opt->arg_name ? required_argument : no_argument,
		.val = opt->key,
	};
	if (has_letter(opt->key)) {
		shorts[(*s)++] = (char)opt->key;
		if (opt->arg_name)
			shorts[(*s)++] = ':';
	}
	return 0;
}

/* Builds the getopt_long tables from the common options and every stage's. */
static int build_tables(const struct cli_spec *spec, struct option *longs, char *shorts)
{
	const struct cli_option *opt;
	size_t n = 0, s = 0;

	for (opt = common_options; opt->name; opt++)
		if (option_applies(spec, opt) && add_option(opt, longs, &n, shorts, &s))
			return -1;
	for (const struct cli_stage *st = spec->stages; st && st->options; st++)
		for (opt = st->options; opt->name; opt++) {
			if (add_option(opt, longs, &n, shorts, &s))
				return -1;
			if (opt->fill == CLI_BY_STAGE && !st->parse) {
				report_error("option --%s fills nothing (CLI_STAGE_PARSES), and its stage "
					     "has no parse function to handle it", opt->name);
				return -1;
			}
		}
	longs[n] = (struct option){ 0 };
	shorts[s] = '\0';
	return 0;
}

/* The option whose key is KEY, and in *CTX what it fills: the common options, or a stage's context. */
static const struct cli_option *option_of(const struct cli_spec *spec, int key,
					  struct cli_common *common, const struct cli_stage **stage,
					  void **ctx)
{
	const struct cli_option *opt;

	*stage = NULL;
	*ctx = common;
	for (opt = common_options; opt->name; opt++)
		if (opt->key == key && option_applies(spec, opt))
			return opt;
	for (const struct cli_stage *st = spec->stages; st && st->options; st++)
		for (opt = st->options; opt->name; opt++)
			if (opt->key == key) {
				*stage = st;
				*ctx = st->ctx;
				return opt;
			}
	return NULL;
}

/* Fills what OPT's entry names in CTX from ARG; 0, or -1 after reporting bad input. */
static int fill_option(const struct cli_option *opt, const char *arg, void *ctx)
{
	void *field = (char *)ctx + opt->at;
	char name[64];
	int i;

	snprintf(name, sizeof(name), "--%s", opt->name);
	switch (opt->fill) {
	case CLI_FLAG:
		*(bool *)field = true;
		return 0;
	case CLI_INT:
		return cli_parse_int(name, arg, (long)opt->lo, (long)opt->hi, field);
	case CLI_SIZE:
		return cli_parse_size(name, arg, (size_t)opt->lo, (size_t)opt->hi, field);
	case CLI_U32:
		return cli_parse_u32(name, arg, field);
	case CLI_NAME:
		i = cli_pick_named(name, opt->noun, arg, opt->names, (size_t)opt->lo, (size_t)opt->hi);
		if (i < 0)
			return -1;
		/* An int, or an enum of int's size (CLI_INT_FIELD): its bytes are the same. */
		memcpy(field, &i, sizeof(i));
		return 0;
	case CLI_TEXT:
		*(const char **)field = arg;
		return 0;
	case CLI_PAIR:
		return cli_parse_pair(name, arg, opt->noun, (int)opt->lo, (int)opt->hi, field,
				      (int *)((char *)ctx + opt->at2));
	case CLI_BY_STAGE:
		break;
	}
	return -1;
}

/* Handles the option whose key is KEY: its entry's fill, or its stage's parse function. */
static int parse_option(const struct cli_spec *spec, int key, const char *arg,
			struct cli_common *common)
{
	const struct cli_stage *stage;
	void *ctx;
	const struct cli_option *opt = option_of(spec, key, common, &stage, &ctx);

	if (opt->fill != CLI_BY_STAGE)
		return fill_option(opt, arg, ctx);
	return stage->parse(key, arg, stage->ctx);
}

static void report_bad_option(const struct cli_spec *spec, int key, const char *word)
{
	const char *what = key == '?' ? "unknown option" : "missing value for option";

	if (strncmp(word, "--", 2) && has_letter(optopt))
		report_error("%s '-%c'; see %s --help", what, optopt, spec->program);
	else
		report_error("%s '%s'; see %s --help", what, word, spec->program);
}

int cli_parse(int argc, char **argv, const struct cli_spec *spec, struct cli_common *common)
{
	struct option longs[MAX_OPTIONS];
	char shorts[2 * MAX_OPTIONS + 2] = ":";
	int key;

	*common = (struct cli_common){
		.ib_port = 1,
		.gid_idx = CLI_GID_AUTO,
		.tcp_port = CLI_DEFAULT_TCP_PORT,
		.timeout_s = CLI_DEFAULT_TIMEOUT_S,
	};
	if (build_tables(spec, longs, shorts + 1)) {
		report_error("%s: its options cannot be read (the line above says why)", spec->program);
		return CLI_BAD_USAGE;
	}
	if (fault_use(spec->faults)) {
		report_error("%s: its fault points cannot be told apart (the line above says why)",
			     spec->program);
		return CLI_BAD_USAGE;
	}
	opterr = 0;
	while ((key = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		if (key == KEY_HELP) {
			print_usage(spec);
			return EXIT_SUCCESS;
		}
		if (key == '?' || key == ':') {
			report_bad_option(spec, key, argv[optind - 1]);
			return CLI_BAD_USAGE;
		}
		if (parse_option(spec, key, optarg, common))
			return CLI_BAD_USAGE;
	}
	if (optind < argc && !spec->connects) {
		report_error("%s takes no HOST argument (it does not connect to a peer), got '%s'",
			     spec->program, argv[optind]);
		return CLI_BAD_USAGE;
	}
	if (optind < argc)
		common->host = argv[optind++];
	if (optind < argc) {
		report_error("unexpected argument '%s': give at most one HOST", argv[optind]);
		return CLI_BAD_USAGE;
	}
	if (fault_check_env(spec->program))
		return CLI_BAD_USAGE;
	/* The program is about to create verbs objects: a signal must unwind them, not skip that. */
	stop_on_signals();
	return CLI_RUN;
}

int cli_pick(const char *arg, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] && !strcmp(arg, names[i]))
			return (int)i;
	return -1;
}

int cli_pick_named(const char *option, const char *noun, const char *arg,
		   const char *const *names, size_t first, size_t n)
{
	char list[256] = "";
	int i = cli_pick(arg, names, n);

	if (i >= (int)first)
		return i;
	for (size_t k = first; k < n; k++) {
		strncat(list, names[k], sizeof(list) - strlen(list) - 1);
		if (k + 1 < n)
			strncat(list, k + 2 < n ? ", " : " or ", sizeof(list) - strlen(list) - 1);
	}
	report_error("%s: unknown %s '%s'; use %s", option, noun, arg, list);
	return -1;
}

/* strtol and strtoull skip leading spaces and take a sign: a number here starts with a digit. */
static bool starts_with_digit(const char *arg)
{
	return isdigit((unsigned char)arg[0]);
}

int cli_parse_int(const char *name, const char *arg, long min, long max, int *out)
{
	char *end;
	long value;

	errno = 0;
	value = strtol(arg, &end, 0);
	if (errno || !starts_with_digit(arg) || *end || value < min || value > max) {
		report_error("%s: '%s' is not a whole number from %ld to %ld", name, arg, min, max);
		return -1;
	}
	*out = (int)value;
	return 0;
}

/*
 * One side of a pair: the decimal number from 0 to MAX at *P, which moves past
 * it; -1 when there is none.  strtol, not sscanf's %d, which wraps a number
 * past int's range (4294967299 became 3) where this refuses it.
 */
static long pair_side(const char **p, long max)
{
	char *end;
	long value;

	if (!starts_with_digit(*p))
		return -1;
	errno = 0;
	value = strtol(*p, &end, 10);
	*p = end;
	return errno || value > max ? -1 : value;
}

int cli_parse_pair(const char *name, const char *arg, const char *form, int max_a, int max_b,
		   int *a, int *b)
{
	const char *p = arg;
	long first = pair_side(&p, max_a), second = -1;

	if (first >= 0 && *p == ':') {
		p++;
		second = pair_side(&p, max_b);
	}
	if (first < 0 || second < 0 || *p) {
		report_error("%s: '%s' is not %s", name, arg, form);
		return -1;
	}
	*a = (int)first;
	*b = (int)second;
	return 0;
}

int cli_parse_u32(const char *name, const char *arg, uint32_t *out)
{
	unsigned long long value;
	char *end;

	errno = 0;
	value = strtoull(arg, &end, 0);
	if (errno || !starts_with_digit(arg) || *end || value > UINT32_MAX) {
		report_error("%s: '%s' is not a number from 0 to 0xffffffff", name, arg);
		return -1;
	}
	*out = (uint32_t)value;
	return 0;
}

int cli_parse_size(const char *name, const char *arg, size_t min, size_t max, size_t *out)
{
	unsigned long long value;
	char *end;
	int shift = 0;

	errno = 0;
	value = strtoull(arg, &end, 0);
	if (end != arg && *end && !end[1]) {
		const char *units = "KMG";
		const char *unit = strchr(units, *end);

		if (unit) {
			shift = 10 * (int)(unit - units + 1);
			end++;
		}
	}
	if (errno || !starts_with_digit(arg) || *end || value > (max >> shift) ||
	    (value << shift) < min) {
		report_error("%s: '%s' is not a size from %zu to %zu bytes (suffixes K, M, G allowed)",
			     name, arg, min, max);
		return -1;
	}
	*out = (size_t)(value << shift);
	return 0;
}
