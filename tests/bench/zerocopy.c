/* zerocopy.c: TCP's own zero-copy send beside step 05's RDMA: S bytes N times with send() or MSG_ZEROCOPY, the completions read from the error queue, those the kernel marked COPIED counted, every byte checked by the receiver. */
#include "byteorder.h"
#include "cli.h"
#include "clock.h"
#include "report.h"
#include "sock.h"
#include "stop.h"
#include "wait.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/*
 * Before each run the sender sends a header, 20 bytes: 'Z', 'C', the
 * version, the kind ('R': a run follows; 'E': the end), the mode (0 send(),
 * 1 MSG_ZEROCOPY), 3 zero bytes, then the size, the count and the run's
 * number, big-endian 32 bits each.  After a run the receiver answers with 9
 * bytes: 'A' and the bytes it checked, big-endian 64 bits.
 */
#define ZC_HEADER_LEN 20
#define ZC_ANSWER_LEN 9
#define ZC_VERSION 1
#define ZC_MAX_SIZE (16u << 20)
#define ZC_MAX_COUNT 1000000
#define ZC_MAX_REPS 100

enum zc_mode { ZC_PLAIN, ZC_ZEROCOPY, ZC_BOTH };
static const char *const mode_names[] = { "plain", "zerocopy", "both" };

struct zc_opts {
	const char *host;	/* the receiver's address; NULL: be the receiver */
	int port;		/* -p */
	int timeout_s;		/* -t: the longest wait for the peer, for a send and for a notification */
	size_t size;		/* -s: bytes per message */
	int count;		/* -n: messages per run */
	int mode;		/* -m */
	int reps;		/* -r */
};

/* The sender's socket: the notification ids the kernel numbers per socket, over every run. */
struct zc_sender {
	int fd;
	int timeout_s;
	uint64_t issued;	/* MSG_ZEROCOPY calls that moved bytes: each took the next id */
	uint64_t completed;	/* ids the notifications covered */
};

/* What one run did, for its line. */
struct zc_run {
	int number;
	int mode;
	uint64_t calls;		/* send calls that moved bytes */
	uint64_t completed;	/* of this run's ids, those covered by a notification */
	uint64_t notifications;
	uint64_t copied;	/* ids covered by a notification with SO_EE_CODE_ZEROCOPY_COPIED */
	uint64_t copied_notifications;
};

/*
 * The byte at position I of the pattern.  Message M is bytes M to M+S-1 of
 * it, so that each message differs from the one before (one lost, repeated or
 * out of order fails the check) while the sender's buffer never changes: with
 * MSG_ZEROCOPY the kernel may read its pages until the notification.
 */
static inline uint8_t pattern_byte(uint64_t i)
{
	return (uint8_t)((i * 2654435761u) >> 24);
}

/* The pattern for COUNT messages of SIZE bytes, or NULL after reporting. */
static uint8_t *pattern_alloc(size_t size, size_t count)
{
	size_t len = size + count;
	uint8_t *p = malloc(len);

	if (!p) {
		report_error("cannot allocate %zu bytes for the pattern: lower -s or -n", len);
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		p[i] = pattern_byte(i);
	return p;
}

static double ru_ms(const struct timeval *from, const struct timeval *to)
{
	return (to->tv_sec - from->tv_sec) * 1e3 + (to->tv_usec - from->tv_usec) / 1e3;
}

static int cpu_now(struct rusage *ru)
{
	if (getrusage(RUSAGE_SELF, ru)) {
		report_verb_error("getrusage", errno);
		return -1;
	}
	return 0;
}

/* Receives exactly LEN bytes within TIMEOUT_S, or reports what stopped it, naming WHAT. */
static int recv_exact(int fd, void *buf, size_t len, int timeout_s, const char *what)
{
	struct timespec deadline = deadline_in(timeout_s);
	size_t have = 0;
	int rc = sock_recv_quiet(fd, buf, len, &have, &deadline);

	if (rc == SOCK_TIMEOUT)
		report_error("%s: %zu of %zu bytes arrived, then nothing for %d s (raise -t?)", what,
			     have, len, timeout_s);
	else if (rc == SOCK_STOPPED)
		report_stopped();
	else if (rc == SOCK_CLOSED)
		report_error("%s: the peer closed the connection after %zu of %zu bytes (did it fail? "
			     "see its output)", what, have, len);
	return rc ? -1 : 0;
}

/* ---- the receiver ---- */

/* Message M of run RUN arrived in BUF: every byte against the pattern, the first wrong one reported. */
static int check_message(const uint8_t *buf, const uint8_t *pattern, uint32_t size, uint32_t m,
			 uint32_t run)
{
	const uint8_t *want = pattern + m;

	if (!memcmp(buf, want, size))
		return 0;
	for (uint32_t j = 0; j < size; j++)
		if (buf[j] != want[j]) {
			report_error("run %u, message %u, byte %u: 0x%02x arrived where 0x%02x was sent",
				     run, m, j, buf[j], want[j]);
			break;
		}
	return -1;
}

/*
 * Header H, as the sender sent it: every field checked before it is used.
 * Returns 1 at the end, 0 with SIZE, COUNT, MODE and RUN filled, or -1 after
 * reporting.
 */
static int take_header(const uint8_t *h, uint32_t want_run, uint32_t *size, uint32_t *count,
		       int *mode, uint32_t *run)
{
	if (h[0] != 'Z' || h[1] != 'C' || h[2] != ZC_VERSION) {
		report_error("the sender's header starts 0x%02x 0x%02x 0x%02x, not 'ZC' and version "
			     "%d: is the peer this program, of this version?", h[0], h[1], h[2],
			     ZC_VERSION);
		return -1;
	}
	if (h[3] == 'E')
		return 1;
	*size = get_be32(h + 8);
	*count = get_be32(h + 12);
	*run = get_be32(h + 16);
	if (h[3] != 'R' || h[4] > ZC_ZEROCOPY || h[5] || h[6] || h[7]) {
		report_error("the sender's header has kind 0x%02x, mode %u and padding %02x%02x%02x: "
			     "expected kind 'R' or 'E', mode 0 or 1, padding 0", h[3], h[4], h[5], h[6],
			     h[7]);
		return -1;
	}
	if (*size < 1 || *size > ZC_MAX_SIZE || *count < 1 || *count > ZC_MAX_COUNT) {
		report_error("the sender asks for %u messages of %u bytes: this receiver takes 1 to "
			     "%d messages of 1 to %u bytes", *count, *size, ZC_MAX_COUNT, ZC_MAX_SIZE);
		return -1;
	}
	if (*run != want_run) {
		report_error("the sender's header names run %u where run %u comes next", *run,
			     want_run);
		return -1;
	}
	*mode = h[4];
	return 0;
}

/* One run: COUNT messages of SIZE bytes, each checked as it arrives, then the answer. */
static int receive_run(int fd, uint32_t size, uint32_t count, int mode, uint32_t run,
		       int timeout_s, uint64_t *checked)
{
	struct rusage ru0, ru1;
	uint8_t answer[ZC_ANSWER_LEN];
	uint8_t *buf, *pattern;
	char what[64];
	int ret = -1;

	if (cpu_now(&ru0))
		return -1;
	pattern = pattern_alloc(size, count);
	if (!pattern)
		return -1;
	buf = malloc(size);
	if (!buf) {
		report_error("cannot allocate a receive buffer of %u bytes", size);
		goto out_free_pattern;
	}
	for (uint32_t m = 0; m < count; m++) {
		snprintf(what, sizeof(what), "run %u, message %u of %u", run, m, count);
		if (recv_exact(fd, buf, size, timeout_s, what) ||
		    check_message(buf, pattern, size, m, run))
			goto out_free_buf;
	}
	*checked += (uint64_t)size * count;
	answer[0] = 'A';
	put_be64(answer + 1, (uint64_t)size * count);
	if (sock_send_all(fd, answer, sizeof(answer), timeout_s) || cpu_now(&ru1))
		goto out_free_buf;
	snprintf(what, sizeof(what), "run %u %s", run, mode_names[mode]);
	show(what, "%llu bytes (%u x %u) received, every byte as sent; CPU %.1f ms user, "
	     "%.1f ms system", (unsigned long long)size * count, count, size,
	     ru_ms(&ru0.ru_utime, &ru1.ru_utime), ru_ms(&ru0.ru_stime, &ru1.ru_stime));
	ret = 0;

out_free_buf:
	free(buf);
out_free_pattern:
	free(pattern);
	return ret;
}

static int run_receiver(const struct zc_opts *o)
{
	uint8_t h[ZC_HEADER_LEN];
	uint64_t checked = 0;
	uint32_t run = 1, size, count, got_run;
	int fd, mode, rc = 0, ret = -1;

	fd = sock_accept_one(o->port, o->timeout_s);
	if (fd < 0)
		return -1;
	while (rc == 0) {
		if (recv_exact(fd, h, sizeof(h), o->timeout_s, "the sender's next header"))
			goto out_close;
		rc = take_header(h, run, &size, &count, &mode, &got_run);
		if (rc < 0)
			goto out_close;
		if (rc == 0 && receive_run(fd, size, count, mode, run++, o->timeout_s, &checked))
			goto out_close;
	}
	show("receiver", "%u runs, %llu bytes, every one as sent", run - 1,
	     (unsigned long long)checked);
	ret = 0;

out_close:
	close(fd);
	return ret;
}

/* ---- the sender ---- */

/*
 * Reads what the error queue holds now, each notification a range of ids
 * [ee_info, ee_data] (Documentation/networking/msg_zerocopy.rst), into R.
 * With WAIT, waits up to the timeout for one first.  Returns 0, or -1 after
 * reporting.
 */
static int read_notifications(struct zc_sender *s, struct zc_run *r, bool wait)
{
	struct timespec deadline = deadline_in(s->timeout_s);
	char control[128];
	int rc;

	for (;;) {
		struct msghdr msg = { .msg_control = control, .msg_controllen = sizeof(control) };
		struct sock_extended_err *serr = NULL;
		struct cmsghdr *cm;
		uint64_t range, outstanding = s->issued - s->completed;

		if (recvmsg(s->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				report_verb_error("recvmsg (MSG_ERRQUEUE)", errno);
				return -1;
			}
			if (!wait)
				return 0;
			/* The error queue signals POLLERR, asked for or not. */
			rc = wait_fd(s->fd, 0, &deadline, "the error queue");
			if (rc == WAIT_STOPPED)
				return report_stopped();
			if (rc == WAIT_TIMEOUT) {
				report_error("no zero-copy notification within %d s, %llu sends still "
					     "outstanding: the kernel holds their pages until the data "
					     "is acknowledged (is the receiver reading?)", s->timeout_s,
					     (unsigned long long)outstanding);
				return -1;
			}
			if (rc < 0)
				return -1;
			if (sock_peer_closed(s->fd)) {
				report_error("the receiver closed the connection while %llu sends awaited "
					     "their notification", (unsigned long long)outstanding);
				return -1;
			}
			continue;
		}
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
			if ((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
			    (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR))
				serr = (struct sock_extended_err *)CMSG_DATA(cm);
		if (!serr || serr->ee_errno || serr->ee_origin != SO_EE_ORIGIN_ZEROCOPY) {
			report_error("the error queue held %s, not a zero-copy notification",
				     serr ? strerror((int)serr->ee_errno) : "a message without IP_RECVERR");
			return -1;
		}
		range = (uint64_t)(uint32_t)(serr->ee_data - serr->ee_info) + 1;
		if (range > outstanding) {
			report_error("a notification completes ids %u to %u (%llu sends), but only %llu "
				     "were outstanding", serr->ee_info, serr->ee_data,
				     (unsigned long long)range, (unsigned long long)outstanding);
			return -1;
		}
		s->completed += range;
		r->completed += range;
		r->notifications++;
		if (serr->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) {
			r->copied += range;
			r->copied_notifications++;
		}
		wait = false;	/* one came: take the rest without waiting */
	}
}

/* Sends message M (LEN bytes at P) whole, with FLAGS; each call that moved bytes counted in R. */
static int send_message(struct zc_sender *s, struct zc_run *r, const uint8_t *p, size_t len,
			int flags, int m)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(s->fd, p + off, len - off, flags | MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			r->calls++;
			if (flags & MSG_ZEROCOPY)
				s->issued++;
			continue;
		}
		if (n < 0 && errno == EINTR && !stop_requested())
			continue;
		if (n < 0 && errno == EINTR)
			return report_stopped();
		/* Over the socket's optmem limit or the locked-pages limit: completions free both. */
		if (n < 0 && errno == ENOBUFS && (flags & MSG_ZEROCOPY) && s->issued == s->completed) {
			report_error("run %d, message %d: send (MSG_ZEROCOPY) failed with ENOBUFS, no "
				     "send outstanding: one send of %zu bytes is over the socket's optmem "
				     "limit (sysctl net.core.optmem_max) or the locked-pages limit (ulimit "
				     "-l); lower -s or raise the limit", r->number, m, len);
			return -1;
		}
		if (n < 0 && errno == ENOBUFS && (flags & MSG_ZEROCOPY)) {
			if (read_notifications(s, r, true))
				return -1;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			report_error("run %d, message %d: the receiver took %zu of %zu bytes, then "
				     "nothing for %d s (is it reading?)", r->number, m, off, len,
				     s->timeout_s);
			return -1;
		}
		report_error("run %d, message %d: send (%s) failed after %zu of %zu bytes: %s",
			     r->number, m, flags & MSG_ZEROCOPY ? "MSG_ZEROCOPY" : "plain", off,
			     len, n < 0 ? strerror(errno) : "it sent nothing");
		return -1;
	}
	return 0;
}

static void show_run(const struct zc_opts *o, const struct zc_run *r, double us,
		     const struct rusage *ru0, const struct rusage *ru1)
{
	uint64_t bytes = (uint64_t)o->size * (uint64_t)o->count;
	char key[32];

	snprintf(key, sizeof(key), "run %d %s", r->number, mode_names[r->mode]);
	show(key, "%llu bytes (%d x %zu) in %.1f ms: %.2f MB/s; CPU %.1f ms user, %.1f ms "
	     "system; %llu send calls, %llu completed in %llu notifications, %llu COPIED in %llu",
	     (unsigned long long)bytes, o->count, o->size, us / 1e3, bytes / us,
	     ru_ms(&ru0->ru_utime, &ru1->ru_utime), ru_ms(&ru0->ru_stime, &ru1->ru_stime),
	     (unsigned long long)r->calls, (unsigned long long)r->completed,
	     (unsigned long long)r->notifications, (unsigned long long)r->copied,
	     (unsigned long long)r->copied_notifications);
	if (r->mode != ZC_ZEROCOPY)
		return;
	snprintf(key, sizeof(key), "run %d says", r->number);
	if (r->copied == r->completed)
		show(key, "every notification has SO_EE_CODE_ZEROCOPY_COPIED: the kernel copied the "
		     "pages after all (a local socket, or no zero-copy path to this device), so "
		     "MSG_ZEROCOPY saved no copy and added the notifications");
	else if (r->copied == 0)
		show(key, "no notification has SO_EE_CODE_ZEROCOPY_COPIED: the kernel made no deferred "
		     "copy of the pages; a device without scatter-gather still sends each frame "
		     "from a linear copy (ethtool -k: scatter-gather)");
	else
		show(key, "%llu of %llu sends were copied after all (SO_EE_CODE_ZEROCOPY_COPIED); the "
		     "flag counts the kernel's deferred copies, and a device without scatter-gather "
		     "still sends each frame from a linear copy (ethtool -k: scatter-gather)",
		     (unsigned long long)r->copied, (unsigned long long)r->completed);
}

/* One run of o->count messages in MODE: the header, the data, the answer, and every notification. */
static int send_run(struct zc_sender *s, const struct zc_opts *o, const uint8_t *pattern,
		    int mode, int number)
{
	struct zc_run r = { .number = number, .mode = mode };
	int flags = mode == ZC_ZEROCOPY ? MSG_ZEROCOPY : 0;
	uint8_t h[ZC_HEADER_LEN] = { 'Z', 'C', ZC_VERSION, 'R', (uint8_t)mode };
	uint8_t answer[ZC_ANSWER_LEN];
	uint64_t bytes = (uint64_t)o->size * (uint64_t)o->count;
	struct rusage ru0, ru1;
	double t0;

	put_be32(h + 8, (uint32_t)o->size);
	put_be32(h + 12, (uint32_t)o->count);
	put_be32(h + 16, (uint32_t)number);
	if (sock_send_all(s->fd, h, sizeof(h), o->timeout_s) || cpu_now(&ru0))
		return -1;
	t0 = now_us();
	for (int m = 0; m < o->count; m++) {
		if (send_message(s, &r, pattern + m, o->size, flags, m))
			return -1;
		/* Every few sends, without waiting, as the kernel's documentation advises. */
		if (flags && m % 8 == 7 && read_notifications(s, &r, false))
			return -1;
	}
	if (recv_exact(s->fd, answer, sizeof(answer), o->timeout_s, "the receiver's answer"))
		return -1;
	if (answer[0] != 'A' || get_be64(answer + 1) != bytes) {
		report_error("run %d: the receiver answered 0x%02x and %llu bytes checked, not 'A' "
			     "and %llu", number, answer[0], (unsigned long long)get_be64(answer + 1),
			     (unsigned long long)bytes);
		return -1;
	}
	/* A plain run's look at the queue shows that it holds nothing. */
	if (read_notifications(s, &r, false))
		return -1;
	while (s->completed < s->issued)
		if (read_notifications(s, &r, true))
			return -1;
	if (cpu_now(&ru1))
		return -1;
	show_run(o, &r, now_us() - t0, &ru0, &ru1);
	return 0;
}

static int run_sender(const struct zc_opts *o)
{
	struct zc_sender s = { .timeout_s = o->timeout_s };
	struct timeval snd_timeout = { .tv_sec = o->timeout_s };
	uint8_t end[ZC_HEADER_LEN] = { 'Z', 'C', ZC_VERSION, 'E' };
	uint8_t *pattern;
	int one = 1, number = 0, flags, ret = -1;

	pattern = pattern_alloc(o->size, (size_t)o->count);
	if (!pattern)
		return -1;
	s.fd = sock_connect(o->host, o->port, o->timeout_s, NULL);
	if (s.fd < 0)
		goto out_free;
	/* Blocking sends, each whole message in one call, bounded by the timeout. */
	flags = fcntl(s.fd, F_GETFL);
	if (flags < 0 || fcntl(s.fd, F_SETFL, flags & ~O_NONBLOCK)) {
		report_verb_error("fcntl (clearing O_NONBLOCK)", errno);
		goto out_close;
	}
	if (setsockopt(s.fd, SOL_SOCKET, SO_SNDTIMEO, &snd_timeout, sizeof(snd_timeout))) {
		report_verb_error("setsockopt (SO_SNDTIMEO)", errno);
		goto out_close;
	}
	if (o->mode != ZC_PLAIN) {
		if (setsockopt(s.fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
			report_error("setsockopt (SO_ZEROCOPY) failed: %s: this kernel or socket "
				     "offers no MSG_ZEROCOPY (Linux 4.14 and later have it for TCP)",
				     strerror(errno));
			goto out_close;
		}
		show("SO_ZEROCOPY", "set: send() with MSG_ZEROCOPY pins the pages and queues a "
		     "notification on the error queue once the kernel lets them go");
	}
	show("sender", "%d x %zu bytes per run, %s, %d repetition%s", o->count, o->size,
	     mode_names[o->mode], o->reps, o->reps == 1 ? "" : "s");
	for (int rep = 0; rep < o->reps; rep++) {
		/* both: plain first in even repetitions, zero-copy first in odd ones. */
		int first = o->mode == ZC_BOTH ? rep % 2 : o->mode;
		int runs = o->mode == ZC_BOTH ? 2 : 1;

		for (int k = 0; k < runs; k++)
			if (send_run(&s, o, pattern, k ? !first : first, ++number))
				goto out_close;
	}
	if (sock_send_all(s.fd, end, sizeof(end), o->timeout_s))
		goto out_close;
	ret = 0;

out_close:
	close(s.fd);
out_free:
	free(pattern);
	return ret;
}

/* ---- the command line ---- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zerocopy [options]           the receiver: takes one sender, checks every byte\n"
		"       zerocopy [options] HOST      the sender: -n messages of -s bytes a run\n"
		"TCP's own zero-copy send beside step 05's RDMA: send() copies each message into\n"
		"the kernel; MSG_ZEROCOPY lends the kernel the pages, and a notification on the\n"
		"socket's error queue gives them back, with SO_EE_CODE_ZEROCOPY_COPIED where the\n"
		"kernel copied them after all.\n"
		"  -p, --port PORT      TCP port (default %d)\n"
		"  -t, --timeout S      the longest wait for the peer, a send or a notification (default %d)\n"
		"  -s, --size BYTES     bytes a message, 1 to 16M (default 64K)\n"
		"  -n, --count N        messages a run, 1 to %d (default 1000)\n"
		"  -m, --mode MODE      plain, zerocopy or both (default both)\n"
		"  -r, --reps N         repetitions, 1 to %d (default 1); with both, each one run a mode\n"
		"  -h, --help\n", CLI_DEFAULT_TCP_PORT, CLI_DEFAULT_TIMEOUT_S, ZC_MAX_COUNT, ZC_MAX_REPS);
}

/* Returns CLI_RUN, or the status to exit with. */
static int parse(int argc, char **argv, struct zc_opts *o)
{
	static const struct option longs[] = {
		{ "port", required_argument, NULL, 'p' }, { "timeout", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' }, { "count", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' }, { "reps", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "p:t:s:n:m:r:h", longs, NULL)) != -1) {
		switch (c) {
		case 'p':
			bad |= cli_parse_int("-p", optarg, 1, 65535, &o->port);
			break;
		case 't':
			bad |= cli_parse_int("-t", optarg, 1, 3600, &o->timeout_s);
			break;
		case 's':
			bad |= cli_parse_size("-s", optarg, 1, ZC_MAX_SIZE, &o->size);
			break;
		case 'n':
			bad |= cli_parse_int("-n", optarg, 1, ZC_MAX_COUNT, &o->count);
			break;
		case 'm':
			o->mode = cli_pick_named("-m", "mode", optarg, mode_names, 0, 3);
			bad |= o->mode < 0;
			break;
		case 'r':
			bad |= cli_parse_int("-r", optarg, 1, ZC_MAX_REPS, &o->reps);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return CLI_BAD_USAGE;
		}
	}
	if (bad)
		return CLI_BAD_USAGE;
	if (optind + 1 < argc) {
		report_error("one HOST at most, not '%s' and '%s'", argv[optind], argv[optind + 1]);
		return CLI_BAD_USAGE;
	}
	o->host = optind < argc ? argv[optind] : NULL;
	return CLI_RUN;
}

int main(int argc, char **argv)
{
	struct zc_opts o = {
		.port = CLI_DEFAULT_TCP_PORT,
		.timeout_s = CLI_DEFAULT_TIMEOUT_S,
		.size = 64 << 10,
		.count = 1000,
		.mode = ZC_BOTH,
		.reps = 1,
	};
	int rc = parse(argc, argv, &o);

	if (rc != CLI_RUN)
		return rc;
	stop_on_signals();
	rc = o.host ? run_sender(&o) : run_receiver(&o);
	return rc ? EXIT_FAILURE : EXIT_SUCCESS;
}
