/* lossy_sack.h: what the asks and SACKs mean to each side's counts: each checked against this side's and taken, the sender's credit on a path, and the receiver's next SACK. */
#ifndef RDMA_STEPS_LOSSY_SACK_H
#define RDMA_STEPS_LOSSY_SACK_H

#include <stdint.h>

#include "lossy_datapath.h"
#include "lossy_paths.h"
#include "lossy_wire.h"

/*
 * The sender: the receiver's SACK S, decoded (its bitmap in X->bits): its
 * round and its counts on each path checked against ours, then the bitmap
 * and the counts taken; an answer to our ask judges the paths
 * (lossy_judge_paths) and ends the ask, the final SACK the transfer.  0, or
 * -1 after saying what did not fit.
 */
int lossy_apply_sack(struct lossy_xfer *x, const struct sack *s);

/*
 * The receives path P's receiver has posted that no WRITE of ours will
 * take: all it has posted since the start (as its last SACK said), less
 * every WRITE we posted but those known lost, which took none.  Never more
 * than the window, nor than the send queue's room; none on a path taken as
 * cut (lossy_judge_paths), whose chunks go over the other paths.
 */
uint32_t lossy_credit(const struct lossy_xfer *x, const struct lossy_path *p);

/*
 * The receiver: the sender's ask A, decoded: its round the next, its counts
 * no fewer than the receives consumed; it is then the ask to answer
 * (X->ask_round).  0, or -1 after saying what did not fit.
 */
int lossy_apply_ask(struct lossy_xfer *x, const struct sack *a);

/*
 * The receiver, with no SACK of its own in flight: the kind of SACK due,
 * and its round in *ROUND.  SACK_FINAL once every chunk is in (the
 * transfer's end); else SACK_ANSWER to an ask (taken as answered, the next
 * round begun); else SACK_CREDIT when some path has a quarter of the window
 * posted again since our last SACK; else 0, none.
 */
char lossy_sack_due(struct lossy_xfer *x, uint32_t *round);

#endif
