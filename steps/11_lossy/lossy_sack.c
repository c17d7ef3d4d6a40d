/* lossy_sack.c: what the asks and SACKs mean to each side's counts: each checked against this side's and taken, the sender's credit on a path, and the receiver's next SACK. */
#include "lossy_sack.h"
#include "clock.h"
#include "lossy_judge.h"
#include "report.h"

/*
 * Whether the receiver's SACK S fits what we know: its round ours, and on
 * each path counts that never fall, nor pass what we posted and the
 * window.  Says what does not.
 */
static bool sack_fits(const struct lossy_xfer *x, const struct sack *s)
{
	if (s->kind == SACK_ANSWER ? !x->asking || s->round != x->round :
				     s->round > x->round || s->round + 1 < x->round) {
		report_error("the receiver's SACK ('%c') is of round %u, but this side is in round %u%s",
			     s->kind, s->round, x->round, s->kind == SACK_ANSWER && !x->asking ?
			     " and asked nothing" : "");
		return false;
	}
	for (int k = 0; k < x->l->n; k++) {
		const struct lossy_path *p = &x->l->path[k];

		if (s->count[k] < p->consumed || s->count[k] > p->posted) {
			report_error("the receiver's SACK says %llu receives were consumed on path %d: "
				     "this side posted %llu WRITEs there, and the last SACK said %llu",
				     (unsigned long long)s->count[k], k, (unsigned long long)p->posted,
				     (unsigned long long)p->consumed);
			return false;
		}
		if (s->receives[k] < p->receives || s->receives[k] - s->count[k] > x->l->window) {
			report_error("the receiver's SACK says %llu receives were posted on path %d: the "
				     "last SACK said %llu, and its window is %u", (unsigned long long)
				     s->receives[k], k, (unsigned long long)p->receives, x->l->window);
			return false;
		}
	}
	return true;
}

int lossy_apply_sack(struct lossy_xfer *x, const struct sack *s)
{
	if (!sack_fits(x, s) || chunk_map_take_sack(x->m, x->bits, s->n_in))
		return -1;
	x->sacks++;
	for (int k = 0; k < x->l->n; k++) {
		struct lossy_path *p = &x->l->path[k];

		if (s->count[k] > p->consumed)
			p->alive_us = now_us();
		p->consumed = s->count[k];
		p->receives = s->receives[k];
		/* Asked after the timer: a WRITE that has consumed no receive by now is lost. */
		if (s->kind == SACK_ANSWER)
			p->lost = p->posted - p->consumed;
	}
	if (s->kind == SACK_ANSWER) {
		lossy_judge_paths(x);
		x->asking = false;
		x->last = *s;
	}
	if (s->kind == SACK_FINAL) {
		x->final = true;
		x->end_us = now_us();
	}
	return 0;
}

uint32_t lossy_credit(const struct lossy_xfer *x, const struct lossy_path *p)
{
	uint64_t taking = p->posted - p->lost;
	uint64_t free = p->receives > taking ? p->receives - taking : 0;
	uint32_t room = x->l->sq_depth - p->in_sq;

	if (p->failed || p->silent >= LOSSY_SILENT_ROUNDS)
		return 0;
	free = free < x->l->window ? free : x->l->window;
	return (uint32_t)free < room ? (uint32_t)free : room;
}

int lossy_apply_ask(struct lossy_xfer *x, const struct sack *a)
{
	if (a->round != x->answered + 1 || x->ask_round) {
		report_error("the sender's ask is of round %u, but %u asks were answered here: the next "
			     "is round %u", a->round, x->answered, x->answered + 1);
		return -1;
	}
	for (int k = 0; k < x->l->n; k++)
		if (a->count[k] < x->l->path[k].consumed) {
			report_error("the sender's ask says it posted %llu WRITEs on path %d, fewer than "
				     "the %llu receives they consumed here", (unsigned long long)a->count[k],
				     k, (unsigned long long)x->l->path[k].consumed);
			return -1;
		}
	x->ask_round = a->round;
	return 0;
}

/* Whether some path has a quarter of the window posted again since our last SACK: the sender's credit is due. */
static bool credit_due(const struct lossy_xfer *x)
{
	uint32_t quarter = x->l->window / 4 ? x->l->window / 4 : 1;

	for (int k = 0; k < x->l->n; k++)
		if (x->l->path[k].receives - x->sacked[k] >= quarter)
			return true;
	return false;
}

char lossy_sack_due(struct lossy_xfer *x, uint32_t *round)
{
	*round = x->round;
	if (x->m->n_in == x->m->n) {
		x->final_sent = true;
		x->end_us = now_us();
		return SACK_FINAL;
	}
	if (x->ask_round) {
		*round = x->ask_round;
		x->ask_round = 0;
		x->answered++;
		x->round = *round + 1;
		return SACK_ANSWER;
	}
	return credit_due(x) ? SACK_CREDIT : 0;
}
