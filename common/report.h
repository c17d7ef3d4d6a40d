/* report.h: teaching output and error reports shared by every step. */
#ifndef RDMA_STEPS_REPORT_H
#define RDMA_STEPS_REPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Prints one "key: value" line now, whatever show_quiet() says: show() calls it. */
void show_now(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* show_now() for a function of its own that takes FMT's arguments as a va_list. */
void show_now_va(const char *key, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Set by show_quiet(). */
extern bool show_off;

/*
 * Teaching output is one "key: value" line per fact, with the key padded so
 * that the values line up.  A key is either a verb ("ibv_alloc_pd") or a fact
 * ("active MTU"); tests grep for these lines, so keep them stable.
 *
 * show(KEY, FMT, ...) is a macro, so that a quiet loop tests one flag and
 * neither calls show_now() nor computes its arguments: every post and
 * completion of a data path has a line, shown for the first round only.
 */
#define show(...)                              \
	do {                                   \
		if (!show_off)                 \
			show_now(__VA_ARGS__); \
	} while (0)

/*
 * Turns the "key: value" lines of show() off or on: a loop that repeats a
 * stage thousands of times shows its first round only; headings go quiet
 * with them.  Errors still print.
 */
void show_quiet(bool quiet);

/* One bit of a verbs flag word and its name, for the lines that name the bits set. */
struct flag_name {
	const char *name;
	uint64_t flag;
};

/*
 * Writes the names of FLAGS' bits that NAMES[0..N) lists into BUF (LEN
 * bytes), joined by commas; returns how many bits it named.
 */
int flag_names_format(uint64_t flags, const struct flag_name *names, size_t n, char *buf,
		      size_t len);

/*
 * The name NAMES[VALUE] of an enum's value, from a table of N names indexed by
 * the values (designated initializers); OTHERWISE for a value past the table
 * (a negative one converts to a huge one) or without a name there.
 * NAME_COUNT(NAMES) is N for an array.
 */
static inline const char *name_of(const char *const *names, size_t n, unsigned long long value,
				  const char *otherwise)
{
	return value < n && names[value] ? names[value] : otherwise;
}

#define NAME_COUNT(names) (sizeof(names) / sizeof((names)[0]))

/* Whether show() prints now: a line that costs work to build can skip it when it would not. */
static inline bool showing(void)
{
	return !show_off;
}

/* A section heading: "== title ==". */
void show_heading(const char *title);

/*
 * "error: VERB failed: STRERROR (errno N)" on stderr.  Verbs that return
 * NULL leave the reason in errno; verbs that return an int return it.
 */
void report_verb_error(const char *verb, int err);

/* "error: MESSAGE" on stderr. */
void report_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * The first error line printed since report_errors_clear(), without its
 * "error: " ("" when none): a library returns it to a caller that cannot
 * read our stderr (a step's code built as a library and loaded from Python).
 */
const char *report_first_error(void);
void report_errors_clear(void);

/*
 * The return convention of the functions that do the work, in common/ and in
 * every step: 0 when done; -1 when failed, its error line printed already, so
 * that the caller only unwinds and prints nothing more about it; a positive
 * value for an outcome the caller must tell apart from the others and say in
 * its own words: a deadline passed, a stop signal, a peer that closed its end
 * (wait.h's enum wait_result, sock.h's enum sock_outcome).  A function that
 * returns a count, a descriptor or a verdict says so in its header.
 */

#endif
