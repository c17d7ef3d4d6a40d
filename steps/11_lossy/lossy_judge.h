/* lossy_judge.h: the sender's judgement of its paths: a path taken as cut (its WRITEs silent for LOSSY_SILENT_ROUNDS answers, or RC: its QP failed), a plane when every path on it is, and the end when every path is. */
#ifndef RDMA_STEPS_LOSSY_JUDGE_H
#define RDMA_STEPS_LOSSY_JUDGE_H

#include <stdbool.h>

#include "lossy_datapath.h"

/*
 * RC: path K's WRITE completed with WC's status 12, its retries spent.
 * Unless every other path is cut already, path K is cut for good (said
 * once, its plane judged): its chunks go over the other paths.  Whether
 * it was so taken; if not, the failure is a failure as any other.
 */
bool lossy_cut_failed_path(struct lossy_xfer *x, int k, const struct ibv_wc *wc);

/*
 * At each answer to an ask, each path: WRITEs posted on it since the last
 * answer and not one consumed a receive (the answer comes after the timer,
 * so none is still on its way) is a silent round; one that consumed any
 * ends the run.  LOSSY_SILENT_ROUNDS in a row and the path is taken as cut,
 * said once, and its plane judged.
 */
void lossy_judge_paths(struct lossy_xfer *x);

/* Whether every path is taken as cut. */
bool lossy_every_path_cut(const struct lossy_xfer *x);

#endif
