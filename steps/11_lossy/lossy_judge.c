/* lossy_judge.c: the sender's judgement of its paths: a path taken as cut (its WRITEs silent for LOSSY_SILENT_ROUNDS answers, or RC: its QP failed), a plane when every path on it is, and the end when every path is. */
#include "lossy_judge.h"

/* Whether path K is taken as cut: its QP failed (RC), or its WRITEs silent for LOSSY_SILENT_ROUNDS answers. */
static bool path_cut(const struct lossy_xfer *x, int k)
{
	const struct lossy_path *p = &x->l->path[k];

	return p->failed || p->silent >= LOSSY_SILENT_ROUNDS;
}

/* After path K is taken as cut: if every path of its plane is, the plane is, said once. */
static void judge_plane(struct lossy_xfer *x, int k)
{
	int plane = x->l->path[k].plane;

	if (x->l->planes == 1 || x->l->plane[plane].cut)
		return;
	for (int j = 0; j < x->l->n; j++)
		if (x->l->path[j].plane == plane && !path_cut(x, j))
			return;
	x->l->plane[plane].cut = true;
	lossy_show_plane_cut(x, plane);
}

bool lossy_cut_failed_path(struct lossy_xfer *x, int k, const struct ibv_wc *wc)
{
	bool other = false;

	for (int j = 0; j < x->l->n; j++)
		other |= j != k && !path_cut(x, j);
	if (!other)
		return false;
	x->l->path[k].failed = true;
	x->failed_new = true;
	lossy_show_path_failed(x, k, wc);
	judge_plane(x, k);
	return true;
}

void lossy_judge_paths(struct lossy_xfer *x)
{
	for (int k = 0; k < x->l->n; k++) {
		struct lossy_path *p = &x->l->path[k];
		uint64_t sent = p->posted - p->answer_posted;

		if (p->failed)
			continue;
		if (p->consumed > p->answer_consumed) {
			p->silent = 0;
		} else if (sent && p->silent < LOSSY_SILENT_ROUNDS && ++p->silent == LOSSY_SILENT_ROUNDS) {
			lossy_show_path_cut(x, k);
			judge_plane(x, k);
		}
		p->answer_posted = p->posted;
		p->answer_consumed = p->consumed;
	}
}

bool lossy_every_path_cut(const struct lossy_xfer *x)
{
	for (int k = 0; k < x->l->n; k++)
		if (!path_cut(x, k))
			return false;
	return true;
}
