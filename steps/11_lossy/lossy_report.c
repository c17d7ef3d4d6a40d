/* lossy_report.c: the lines of step 11's data path: what each round posted, what each SACK said, the test's drops, and the failures that end a transfer. */
#include "lossy_datapath.h"
#include "clock.h"
#include "report.h"

#include <stdio.h>
#include <time.h>

/* How many chunk numbers a line names before it says "...". */
#define SHOWN_CHUNKS 16

void lossy_show_post(struct lossy_xfer *x, int k, uint32_t first, int n)
{
	x->shown_post = true;
	show_now("ibv_post_send", "round %u, path %d: a chain of %d WRITE%s with immediate from chunk "
		 "%u on, each one chunk of at most %u bytes to the same offset of the receiver's "
		 "buffer, its number the immediate; one doorbell, the last signalled", x->round, k, n,
		 n > 1 ? "s" : "", first, x->m->bytes);
}

void lossy_show_round_posted(const struct lossy_xfer *x, double ms)
{
	char cut[32] = "";
	int n = 0;

	for (int k = 0; k < x->l->n; k++)
		n += x->l->path[k].failed || x->l->path[k].silent >= LOSSY_SILENT_ROUNDS;
	if (n)
		snprintf(cut, sizeof(cut), ", %d of them cut,", n);
	show_now("round", "%u: %u WRITEs posted over %d %s path%s%s in %.1f ms, every one completed "
		 "here: %s", x->round, x->round_posts, x->l->n, x->o->rc ? "RC" : "UC",
		 x->l->n > 1 ? "s" : "", cut, ms, x->o->rc ? "RC's completion comes with the "
		 "receiver's ACK" : "UC's completion says a packet left this NIC, not that it arrived");
}

void lossy_show_answer(const struct lossy_xfer *x, const struct sack *s, uint32_t missing)
{
	char list[12 * SHOWN_CHUNKS];

	chunk_map_format_missing(x->m, SHOWN_CHUNKS, list, sizeof(list));
	char when[48];

	if (x->o->rc)
		snprintf(when, sizeof(when), "once a path failed");
	else
		snprintf(when, sizeof(when), "after the %d ms timer", x->o->rto_ms);
	show_now("SACK", "round %u asked %s and answered: %u of %u chunks in; %u missing (%s): round "
		 "%u sends only them again", s->round, when, s->n_in, x->m->n, missing, list,
		 s->round + 1);
}

void lossy_show_stall(const struct lossy_xfer *x)
{
	show_now("round", "%u: nothing could be posted for %d ms, every path's window full: WRITEs "
		 "lost hold receives that only an answer frees; asking what came before posting "
		 "the rest", x->round, x->o->rto_ms);
}

void lossy_show_receives(const struct lossy_xfer *x, int k, int n)
{
	(void)x;
	show_now("ibv_post_recv", "path %d: %d receives posted ahead, with no buffer: a WRITE with "
		 "immediate places its bytes through the rkey, and takes a receive only for its "
		 "completion", k, n);
}

void lossy_show_arrival(const struct lossy_xfer *x, uint32_t c, enum arrival a)
{
	if (a == ARRIVAL_DROPPED)
		show_now("drop test", "chunk %u came and is taken as lost (--drop-chunks): its bit stays "
			 "clear and its bytes are overwritten, as if the packet had never come", c);
	else if (a == ARRIVAL_AGAIN && x->duplicates == 1)
		show_now("duplicate", "chunk %u came again, already in: its bytes are the same, its bit "
			 "was set (a resend the timer made too early; later ones are counted)", c);
	else if (x->arrivals == 1)
		show_now("first chunk", "chunk %u: a receive completed as RECV_RDMA_WITH_IMM, immediate "
			 "%u, %u bytes placed by the WRITE", c, c, chunk_len(x->m, c));
}

void lossy_show_sack_sent(const struct lossy_xfer *x, char kind, uint32_t round)
{
	char list[12 * SHOWN_CHUNKS];

	if (kind == SACK_FINAL) {
		show_now("SACK", "every chunk in (%u of %u) in round %u: the final SACK", x->m->n_in,
			 x->m->n, round);
	} else if (kind == SACK_ANSWER) {
		chunk_map_format_missing(x->m, SHOWN_CHUNKS, list, sizeof(list));
		show_now("SACK", "answering round %u: %u of %u chunks in, %u missing (%s); no "
			 "completion failed and nothing said a packet was lost: UC drops in silence",
			 round, x->m->n_in, x->m->n, x->m->n - x->m->n_in, list);
	}
}

/* The sender knows the chunks in from the receiver's SACKs alone: say which. */
static const char *as_told(const struct lossy_xfer *x, bool sender)
{
	if (!sender)
		return "";
	return x->sacks ? " (as its last SACK said)" : " (it had sent no SACK yet)";
}

int lossy_report_peer_gone(const struct lossy_xfer *x, bool sender)
{
	report_error("round %u: the %s closed the side channel with %u of %u chunks in%s: it has "
		     "stopped (killed, or it failed: see its output)", x->round,
		     sender ? "receiver" : "sender", x->m->n_in, x->m->n, as_told(x, sender));
	return -1;
}

int lossy_report_stalled(const struct lossy_xfer *x, bool sender)
{
	report_error("round %u: nothing came from the %s for %d s (-t), with %u of %u chunks in%s: "
		     "is it stopped?", x->round, sender ? "receiver" : "sender", x->timeout_s,
		     x->m->n_in, x->m->n, as_told(x, sender));
	return -1;
}

void lossy_show_path_cut(const struct lossy_xfer *x, int k)
{
	const struct lossy_path *p = &x->l->path[k];

	show_now("path cut", "round %u: path %d silent for %d answers in a row: no WRITE posted on "
		 "it in those rounds consumed a receive at the receiver (%llu posted on it in all, "
		 "its last sign of life %.0f ms ago), while the answers came over the control QP: no "
		 "more chunks go to it%s", x->round, k, LOSSY_SILENT_ROUNDS,
		 (unsigned long long)p->posted, (now_us() - p->alive_us) / 1000,
		 x->l->n > 1 ? "; the other paths take its chunks" : "");
}

void lossy_show_path_failed(const struct lossy_xfer *x, int k, const struct ibv_wc *wc)
{
	const struct lossy_path *p = &x->l->path[k];

	show_now("path cut", "round %u: a WRITE on path %d completed with %s (status %d, vendor "
		 "error 0x%x), its last ACK %.0f ms ago: its QP is in the error state and every WR "
		 "behind it completes flushed; no more chunks go to it, and what it lost goes over "
		 "the other paths", x->round, k, ibv_wc_status_str(wc->status), wc->status,
		 wc->vendor_err, (now_us() - p->alive_us) / 1000);
}

void lossy_show_plane_cut(const struct lossy_xfer *x, int p)
{
	double last = 0, now = now_us();
	struct timespec clock;

	for (int k = 0; k < x->l->n; k++)
		if (x->l->path[k].plane == p && x->l->path[k].alive_us > last)
			last = x->l->path[k].alive_us;
	clock_gettime(CLOCK_REALTIME, &clock);
	show_now("plane cut", "plane %d (%s): every path on it cut, %.0f ms after its last sign of "
		 "life (%.0f ms into the transfer, at %lld.%03ld s on the clock): the other plane%s "
		 "carr%s the rest", p, lossy_plane_name(x->l, p), (now - last) / 1000,
		 (now - x->start_us) / 1000, (long long)clock.tv_sec, clock.tv_nsec / 1000000,
		 x->l->planes > 2 ? "s" : "", x->l->planes > 2 ? "y" : "ies");
}

void lossy_show_planes(const struct lossy_xfer *x, bool sender)
{
	for (int p = 0; sender && p < x->l->planes; p++) {
		uint64_t posted = 0, consumed = 0;

		for (int k = 0; k < x->l->n; k++)
			if (x->l->path[k].plane == p) {
				posted += x->l->path[k].posted;
				consumed += x->l->path[k].consumed;
			}
		show("plane", "%d (%s): %llu WRITEs posted on its paths, %llu of them consumed a receive "
		     "at the receiver%s", p, lossy_plane_name(x->l, p), (unsigned long long)posted,
		     (unsigned long long)consumed, x->l->plane[p].cut ? "; cut" : "");
	}
	for (int p = 0; !sender && p < x->l->planes; p++) {
		uint64_t consumed = 0;

		for (int k = 0; k < x->l->n; k++)
			if (x->l->path[k].plane == p)
				consumed += x->l->path[k].consumed;
		show("plane", "%d (%s): %llu WRITEs with immediate taken on its paths", p,
		     lossy_plane_name(x->l, p), (unsigned long long)consumed);
	}
}

int lossy_report_every_path_silent(const struct lossy_xfer *x)
{
	report_error("round %u: every path silent: for %d answers in a row none of the WRITEs posted "
		     "on the %d data QP%s consumed a receive at the receiver (%u of %u chunks in), while "
		     "the asks and SACKs went through on the control QP: the data paths are cut",
		     x->round, LOSSY_SILENT_ROUNDS, x->l->n, x->l->n > 1 ? "s" : "", x->m->n_in, x->m->n);
	return -1;
}
