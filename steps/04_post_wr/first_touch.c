/* first_touch.c: stage 4 with --odp: the first WRITE or READ into pages registered on demand and not there yet, timed beside a second into the same pages. */
#include "first_touch.h"
#include "clock.h"
#include "completion.h"
#include "exchange.h"
#include "pattern.h"
#include "procstat.h"
#include "report.h"

#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

bool odp_lands_here(enum wr_op op, bool initiator)
{
	return op == OP_READ ? initiator : !initiator;
}

int odp_opts_check(enum wr_op op, bool violation, bool cm)
{
	if (op != OP_WRITE && op != OP_READ) {
		report_error("--odp times the first WRITE or READ into pages registered on demand: "
			     "use -o write or -o read");
		return -1;
	}
	if (violation) {
		report_error("--odp times two operations that succeed, and --violate makes one fail: "
			     "give one of them");
		return -1;
	}
	if (cm) {
		report_error("--odp stops between its two operations at side-channel barriers, and "
			     "--cm has no side channel: drop --cm");
		return -1;
	}
	return 0;
}

int odp_check_device(const struct rdma_dev *dev, enum wr_op op, bool initiator)
{
	uint32_t need = op == OP_READ ? IBV_ODP_SUPPORT_READ : IBV_ODP_SUPPORT_WRITE;
	const char *name = op == OP_READ ? "READ" : "WRITE";
	bool here = odp_lands_here(op, initiator);

	/* The side that registers on demand has stage 2 check odp_caps; this side, pinned, asks too. */
	if (!here && check_odp_support(dev))
		return -1;
	if (!(dev->odp_caps.general_caps & IBV_ODP_SUPPORT))
		return 0;
	if (!(dev->odp_caps.per_transport_caps.rc_odp_caps & need)) {
		report_error("--odp: %s pages on demand, but its rc_odp_caps have no %s: an RC QP of "
			     "it cannot %s into memory registered on demand; use the other -o, or drop "
			     "--odp", ibv_get_device_name(dev->ctx->device),
			     op == OP_READ ? "IBV_ODP_SUPPORT_READ" : "IBV_ODP_SUPPORT_WRITE", name);
		return -1;
	}
	if (here)
		show("odp", "our buffer, the %s's, is registered on demand and never touched: the "
		     "%s's bytes land here, in pages that do not exist until the NIC's first access "
		     "faults them in", initiator ? "initiator" : "target", name);
	else
		show("odp", "the %s's buffer is registered on demand, where the %s's bytes land; ours "
		     "holds the bytes to %s, which the CPU writes first, so its pages are there "
		     "anyway: it is registered pinned, as without --odp", initiator ? "target" :
		     "initiator", name, op == OP_READ ? "be read" : "send");
	return 0;
}

/* Posts the operation and takes its completion: microseconds from the post to it, or -1. */
static double timed_operation(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len,
			      const struct post_opts *post)
{
	struct ibv_wc wc;
	double t0 = now_us();

	if (post_operation(conn, buf, len, post) ||
	    take_good_completion(conn, &wc, POLL_TIMEOUT_MS) || expect_wr_id(&wc, WR_ID_SEND))
		return -1;
	return now_us() - t0;
}

/*
 * The kernel's view of the fresh buffer, before and after the first
 * operation: the process's VmRSS, and how many of the buffer's pages are present.
 */
struct residency {
	long rss_kb;
	long present;
};

static void residency_take(struct residency *r, const struct rdma_buf *buf)
{
	r->rss_kb = proc_status_kb("VmRSS");
	r->present = resident_pages(buf->addr, buf->len);
}

static void residency_show(const char *name, const struct rdma_buf *buf,
			   const struct residency *before, const struct residency *after)
{
	long page = sysconf(_SC_PAGESIZE);

	show("VmRSS", "%ld kB before the first %s, %ld kB after: %ld kB faulted in by the NIC's "
	     "first access to this buffer's %zu kB", before->rss_kb, name, after->rss_kb,
	     after->rss_kb - before->rss_kb, buf->len / 1024);
	show("present pages", "%ld of the buffer's %zu pages before the first %s, %ld after "
	     "(mincore)", before->present, (buf->len + (size_t)page - 1) / (size_t)page, name,
	     after->present);
}

/* Both times side by side, their ratio, and what the first cost each page beyond the second. */
static void show_times(const char *name, size_t len, double first_us, double second_us)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t pages = (len + (size_t)page - 1) / (size_t)page;
	char first[16], second[16];

	snprintf(first, sizeof(first), "first %s", name);
	snprintf(second, sizeof(second), "second %s", name);
	show(first, "%zu bytes into pages not mapped yet: %.0f us from the post to its completion",
	     len, first_us);
	show(second, "the same %zu bytes into the same pages, mapped now: %.0f us", len, second_us);
	show("first touch", "the first %s took %.2f times as long as the second, %+.1f us for each "
	     "of its %zu pages: the faults of the first access, and one run's noise", name,
	     first_us / (second_us > 1 ? second_us : 1), (first_us - second_us) / pages, pages);
}

/* How one page of a buffer that failed its check was filled. */
struct landing {
	size_t from;	/* the offset in the page whose pattern byte its first byte holds; SIZE_MAX: none */
	size_t run;	/* the bytes from the page's start that follow the pattern from there */
	size_t zeros;	/* the bytes after those that are 0 */
};

/*
 * Where the first bytes of the PAGE_LEN bytes at PAGE_OFF of BUF belong: the
 * offset in the page whose pattern they follow for longest, if 16 bytes or
 * more (the pattern repeats in short stretches, never over a 256-byte block).
 */
static void page_landing(const uint8_t *buf, size_t page_off, size_t page_len, uint8_t seed,
			 struct landing *l)
{
	const uint8_t *p = buf + page_off;
	size_t o, i;

	*l = (struct landing){ .from = SIZE_MAX };
	for (o = 0; o < page_len; o++) {
		for (i = 0; o + i < page_len && p[i] == pattern_byte_at(page_off + o + i, seed); i++)
			;
		if (i >= 16 && i > l->run) {
			l->from = o;
			l->run = i;
		}
	}
	for (i = l->run; i < page_len; i++)
		l->zeros += !p[i];
}

/*
 * Whether the LEN bytes of BUF hold SEED's pattern, said with WHEN; if not,
 * how many do, and where each page's bytes went: how many pages hold their
 * own bytes, and how the first page that does not was filled, with how many
 * pages were filled the same way.
 */
static bool check_landed(const struct rdma_buf *buf, size_t len, uint8_t seed, const char *when)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = (len + page - 1) / page;
	size_t changed = count_pattern_changes(buf->addr, 0, len, seed);
	size_t whole = 0, alike = 0, first = SIZE_MAX, off, n;
	struct landing l, odd = { 0 };

	if (!changed) {
		show("data check", "%zu bytes arrived intact%s", len, when);
		return true;
	}
	show("data check", "%zu of %zu bytes hold the pattern%s", len - changed, len, when);
	for (off = 0; off < len; off += page) {
		n = len - off < page ? len - off : page;
		page_landing(buf->addr, off, n, seed, &l);
		if (l.from == 0 && l.run == n) {
			whole++;
		} else if (first == SIZE_MAX) {
			first = off / page;
			odd = l;
			alike = 1;
		} else if (l.from == odd.from && l.run == odd.run && l.zeros == odd.zeros) {
			alike++;
		}
	}
	if (odd.from == SIZE_MAX)
		show("landing", "%zu of the %zu pages hold their own bytes; page %zu, and %zu more "
		     "alike, holds none of the pattern at its start, and %zu bytes of 0", whole, pages,
		     first, alike - 1, odd.zeros);
	else
		show("landing", "%zu of the %zu pages hold their own bytes; page %zu, and %zu more "
		     "alike, holds at its start the %zu bytes that belong at its offset %zu, and "
		     "after them %zu bytes of 0", whole, pages, first, alike - 1, odd.run, odd.from,
		     odd.zeros);
	return false;
}

/* After both operations: fails, saying so, unless both checks found the bytes whole. */
static int report_landed(const char *name, bool first_whole, bool second_whole)
{
	if (first_whole && second_whole)
		return 0;
	report_error("data check: the %s's bytes did not arrive whole%s (the landing lines above "
		     "say where they went)", name, first_whole ? " the second time" :
		     second_whole ? " the first time" : "");
	return -1;
}

int first_touch_initiator(struct rdma_conn *conn, const struct rdma_buf *buf, size_t len,
			  const struct post_opts *post, uint8_t seed, int timeout_s)
{
	const char *name = post->op == OP_READ ? "READ" : "WRITE";
	bool first_whole = true, second_whole = true;
	struct residency before, after;
	double first_us, second_us;

	if (post->op == OP_WRITE)
		fill_pattern(buf->addr, len, seed);
	if (exchange_sync(conn->sock, 'P', timeout_s))
		return -1;
	/* A READ lands in our fresh pages: we look before and after; a WRITE's target looks at its own. */
	if (post->op == OP_READ)
		residency_take(&before, buf);
	first_us = timed_operation(conn, buf, len, post);
	if (first_us < 0)
		return -1;
	if (post->op == OP_READ) {
		residency_take(&after, buf);
		residency_show(name, buf, &before, &after);
		first_whole = check_landed(buf, len, seed, " after the first READ");
		/* Cleared, so that the second READ must bring every byte again. */
		memset(buf->addr, 0, len);
	} else {
		/* '1': the first WRITE is done, the target looks; '2': it has looked. */
		if (exchange_sync(conn->sock, '1', timeout_s) ||
		    exchange_sync(conn->sock, '2', timeout_s))
			return -1;
		fill_pattern(buf->addr, len, (uint8_t)(seed + 1));
	}
	second_us = timed_operation(conn, buf, len, post);
	if (second_us < 0)
		return -1;
	if (post->op == OP_READ)
		second_whole = check_landed(buf, len, seed, ", the second READ's");
	show_times(name, len, first_us, second_us);
	if (exchange_sync(conn->sock, 'D', timeout_s))
		return -1;
	return report_landed(name, first_whole, second_whole);
}

int first_touch_target(struct rdma_conn *conn, const struct rdma_buf *buf, uint8_t seed,
		       int timeout_s)
{
	struct residency before, after;
	bool first_whole, second_whole;
	int left;

	residency_take(&before, buf);
	if (exchange_sync(conn->sock, 'P', timeout_s) || exchange_sync(conn->sock, '1', timeout_s))
		return -1;
	residency_take(&after, buf);
	residency_show("WRITE", buf, &before, &after);
	first_whole = check_landed(buf, buf->len, seed, " after the first WRITE");
	if (exchange_sync(conn->sock, '2', timeout_s) || exchange_sync(conn->sock, 'D', timeout_s))
		return -1;
	left = drain_completions(conn, false);
	if (left < 0)
		return -1;
	show("target CQ", "%d completion(s): a one-sided WRITE does not involve the target's CPU",
	     left);
	/* The second WRITE brought the next pattern: its bytes, not the first's left over. */
	second_whole = check_landed(buf, buf->len, (uint8_t)(seed + 1), ", the second WRITE's");
	return report_landed("WRITE", first_whole, second_whole);
}
