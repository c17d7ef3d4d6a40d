/* cli.h: the command line every step shares, in the style of ibv_rc_pingpong and perftest. */
#ifndef RDMA_STEPS_CLI_H
#define RDMA_STEPS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fault.h"

#define CLI_DEFAULT_TCP_PORT 18515
#define CLI_DEFAULT_TIMEOUT_S 30
#define CLI_GID_AUTO (-1)

/* Options common to every step. */
struct cli_common {
	const char *ib_dev;	/* -d: device name; NULL picks the first device */
	int ib_port;		/* -i: port number on that device, from 1 */
	int gid_idx;		/* -x: GID table index, or CLI_GID_AUTO */
	int tcp_port;		/* -p: TCP port of the out-of-band exchange */
	int timeout_s;		/* -t: how long to wait for the peer */
	bool pause;		/* --pause: stop before teardown until told to go on */
	const char *host;	/* the server's address (client); NULL means "be the server" */
};

/*
 * Long-only option keys, above any letter.  Each stage declares its own, in
 * its own header, from a block of its own: CLI_STAGE_KEYS(N) for step N's
 * stage, block 0 for the options here; the job runtime names its blocks past
 * every step's.  cli_parse refuses a program two of whose options share a key
 * or a name, so a clash fails every run of that program, --help included.
 */
#define CLI_FIRST_LONG_KEY 256
#define CLI_KEYS_PER_STAGE 64
#define CLI_STAGE_KEYS(block) (CLI_FIRST_LONG_KEY + CLI_KEYS_PER_STAGE * (block))

enum cli_common_key {
	CLI_KEY_PAUSE = CLI_STAGE_KEYS(0),	/* --pause (every step that pauses) */
};

/*
 * What cli_parse itself fills for an option, in the field of the stage's
 * context its entry names, reporting bad input with the option's --name.
 */
enum cli_fill {
	CLI_BY_STAGE,	/* nothing: the stage's parse function handles the option */
	CLI_FLAG,	/* a bool, set to true */
	CLI_INT,	/* an int in [lo, hi] (cli_parse_int) */
	CLI_SIZE,	/* a size_t in [lo, hi], with K, M or G (cli_parse_size) */
	CLI_U32,	/* a uint32_t (cli_parse_u32) */
	CLI_NAME,	/* an int or enum: the index of the word among names[lo] to names[hi - 1] (cli_pick_named) */
	CLI_TEXT,	/* a const char *: the argument as given */
	CLI_PAIR,	/* two ints, A:B, A in [0, lo] and B in [0, hi] (cli_parse_pair) */
};

/*
 * An option a stage adds.  key is its short letter, or a cli_long_key for
 * long-only options.  Each entry ends with what the option fills, in one of
 * the macros below: cli_parse fills it, or the stage's parse function does.
 */
struct cli_option {
	const char *name;
	int key;
	const char *arg_name;	/* NULL: the option takes no argument */
	const char *help;
	enum cli_fill fill;
	size_t at;		/* the field's offset in the stage's context */
	size_t at2;		/* CLI_PAIR: B's offset */
	long long lo, hi;	/* CLI_INT, CLI_SIZE: the bounds; CLI_NAME: the words allowed;
				   CLI_PAIR: the largest A and B */
	const char *const *names;	/* CLI_NAME: the words */
	const char *noun;	/* CLI_NAME: what a word is called, in "unknown NOUN 'x'";
				   CLI_PAIR: the form wanted, in "'x' is not FORM" */
};

/* FIELD's offset in TYPE; compiles only if FIELD's type is CTYPE. */
#define CLI_FIELD(type, field, ctype) _Generic(((type *)0)->field, ctype: offsetof(type, field))
/* FIELD's offset in TYPE; compiles only if FIELD is an int or an enum of int's size. */
#define CLI_INT_FIELD(type, field) \
	(offsetof(type, field) + 0 * sizeof(char[sizeof(((type *)0)->field) == sizeof(int) ? 1 : -1]))

/*
 * The end of an option's entry: what it fills in a TYPE, the stage's context,
 * and how; or CLI_STAGE_PARSES, for an option the stage's parse handles.
 */
#define CLI_STAGE_PARSES .fill = CLI_BY_STAGE
#define CLI_FLAG_AT(type, field) .fill = CLI_FLAG, .at = CLI_FIELD(type, field, bool)
#define CLI_INT_AT(type, field, min, max) \
	.fill = CLI_INT, .at = CLI_FIELD(type, field, int), .lo = (min), .hi = (max)
#define CLI_SIZE_AT(type, field, min, max) \
	.fill = CLI_SIZE, .at = CLI_FIELD(type, field, size_t), .lo = (min), .hi = (max)
#define CLI_U32_AT(type, field) .fill = CLI_U32, .at = CLI_FIELD(type, field, uint32_t)
/* One of WORDS, an array, from WORDS[FIRST] on (a word that is NULL is none to give). */
#define CLI_NAME_AT(type, field, what, words, first) \
	.fill = CLI_NAME, .at = CLI_INT_FIELD(type, field), .names = (words), .noun = (what), \
	.lo = (first), .hi = sizeof(words) / sizeof((words)[0])
#define CLI_TEXT_AT(type, field) .fill = CLI_TEXT, .at = CLI_FIELD(type, field, const char *)
/* A:B, into FIELD_A (0 to MAX_A) and FIELD_B (0 to MAX_B); FORM says what is wanted. */
#define CLI_PAIR_AT(type, field_a, max_a, field_b, max_b, form) \
	.fill = CLI_PAIR, .at = CLI_FIELD(type, field_a, int), .at2 = CLI_FIELD(type, field_b, int), \
	.lo = (max_a), .hi = (max_b), .noun = (form)

/* One stage's part of the command line: its options, and the parser that fills CTX with them. */
struct cli_stage {
	const struct cli_option *options;	/* ended by a zeroed entry */
	/*
	 * Handles one of these options whose entry fills nothing (CLI_BY_STAGE);
	 * returns 0, or -1 after reporting bad input.  NULL when there is none.
	 */
	int (*parse)(int key, const char *arg, void *ctx);
	void *ctx;
};

struct cli_spec {
	const char *program;
	const char *purpose;		/* one line for --help */
	bool connects;			/* has server and client roles (takes [HOST], -p and -t) */
	bool pauses;			/* takes --pause */
	const struct cli_stage *stages;	/* the stages the step stacks, ended by a zeroed entry */
	/* The fault points of the stages the program runs, one table each, ended by NULL. */
	const struct fault_point *const *faults;
};

/* What cli_parse returns when the program should run; anything else is its exit status. */
#define CLI_RUN (-1)
/* The exit status after bad usage, as getopt-based tools use. */
#define CLI_BAD_USAGE 2

/*
 * Fills COMMON and each stage's context from the command line.  Returns
 * CLI_RUN, or the status to exit with: 0 after --help, 2 after bad usage
 * (reported).
 */
int cli_parse(int argc, char **argv, const struct cli_spec *spec, struct cli_common *common);

/*
 * Parses ARG as a whole number in [min, max] for option NAME; on bad input
 * reports which option, what was given and what is allowed, and returns -1.
 */
int cli_parse_int(const char *name, const char *arg, long min, long max, int *out);

/*
 * Parses ARG as "A:B", two whole numbers, A from 0 to MAX_A and B from 0 to
 * MAX_B, for option NAME; on bad input reports "NAME: 'ARG' is not FORM"
 * (FORM says what A and B are) and returns -1.
 */
int cli_parse_pair(const char *name, const char *arg, const char *form, int max_a, int max_b,
		   int *a, int *b);

/* Parses ARG as an unsigned 32-bit number (decimal, or hex with 0x). */
int cli_parse_u32(const char *name, const char *arg, uint32_t *out);

/* The index of ARG among the N words of NAMES, or -1 if it is none of them. */
int cli_pick(const char *arg, const char *const *names, size_t n);

/*
 * The index of ARG among words FIRST to N-1 of NAMES; otherwise reports
 * "OPTION: unknown NOUN 'ARG'; use a, b or c", listing those words, and
 * returns -1.
 */
int cli_pick_named(const char *option, const char *noun, const char *arg,
		   const char *const *names, size_t first, size_t n);

/* Parses a byte count such as 4096, 64K, 1M or 1G (powers of 1024) in [min, max]. */
int cli_parse_size(const char *name, const char *arg, size_t min, size_t max, size_t *out);

#endif
