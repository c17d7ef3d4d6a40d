/* lossy_datapath.h: step 11's data path (datapath.c): the chunks as WRITEs with immediate, the receives kept posted ahead, the asks and SACKs, the rounds and their timer; its lines in lossy_report.c. */
#ifndef RDMA_STEPS_LOSSY_DATAPATH_H
#define RDMA_STEPS_LOSSY_DATAPATH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "chunk_map.h"
#include "lossy_options.h"
#include "lossy_paths.h"
#include "lossy_wire.h"
#include "session.h"

/* One transfer's state, on either side. */
/* Empty looks in a row before a wait starts to nap. */
#define LOSSY_SPIN_LOOKS 1024

struct lossy_xfer {
	struct session *s;		/* the control QP (s->conn), the buffer, the side channel */
	struct lossy_link *l;		/* the data QPs and the control buffer */
	struct chunk_map *m;
	const struct lossy_opts *o;
	int timeout_s;			/* -t: the longest anything may take without progress */
	uint32_t round;			/* the round under way, from 1 */
	struct timespec moved;		/* the last progress: -t counts from here */
	unsigned idle;			/* empty looks in a row */
	bool spin;			/* a hardware NIC: no system call between looks */
	long nap_ns;			/* the last nap of this wait, 0 when none yet */
	double start_us, end_us;	/* the transfer, from the go-ahead to the last chunk in */
	/* The sender's. */
	uint64_t posts, again, again_bytes;	/* WRITEs posted; chunks and bytes sent again */
	uint32_t round_posts;		/* WRITEs posted this round */
	bool asking;			/* our ask is out, its answer not yet here */
	bool final;			/* the receiver has every chunk */
	bool failed_new;		/* RC: a path's QP failed since the last answer */
	bool shown_post;		/* this round's first post has its line */
	uint64_t *bits;			/* a SACK's bitmap, as it came */
	struct sack last;		/* the last answer to our ask */
	uint32_t sacks;			/* SACKs taken, of every kind */
	/* The receiver's. */
	uint32_t answered;		/* asks answered */
	uint32_t ask_round;		/* an ask to answer: its round; 0 when none */
	bool sack_busy;			/* our SACK's SEND has not completed */
	bool final_sent;
	uint64_t sacked[LOSSY_MAX_PATHS];	/* receives posted on each path at our last SACK */
	uint64_t arrivals, duplicates, dropped;
};

/*
 * The receiver, before the go-ahead: the window's receives on every path,
 * and LOSSY_CTL_RECVS on the control QP; the sender: the control receives
 * alone.  0 or -1.
 */
int lossy_post_first_receives(struct lossy_xfer *x, bool sender);

/*
 * The sender's whole transfer.  Each round posts its plan (every chunk the
 * first time, then those the last answer lacked) as chains of WRITEs with
 * immediate, dealt over the paths while the receiver has receives posted
 * for them.  Over UC it then waits for every WRITE to leave, and the timer
 * (--rto-ms), and asks the receiver what came; the answer's holes are the
 * next round.  Over RC it waits for the receiver's final SACK, for the
 * transport resends what is lost.  Ends when the receiver has every chunk.
 * 0, or -1 after saying why.
 */
int lossy_send(struct lossy_xfer *x);

/*
 * The receiver's whole transfer: takes each WRITE with immediate (its chunk
 * number checked), keeps the receives posted, answers each ask with its
 * bitmap, returns credit as receives are consumed, and sends the final SACK
 * once every chunk is in.  0, or -1 after saying why.
 */
int lossy_receive(struct lossy_xfer *x);

/* lossy_report.c: the lines of the data path, and its figures at the end. */
void lossy_show_post(struct lossy_xfer *x, int k, uint32_t first, int n);
void lossy_show_round_posted(const struct lossy_xfer *x, double ms);
void lossy_show_answer(const struct lossy_xfer *x, const struct sack *s, uint32_t missing);
void lossy_show_stall(const struct lossy_xfer *x);
void lossy_show_receives(const struct lossy_xfer *x, int k, int n);
void lossy_show_arrival(const struct lossy_xfer *x, uint32_t c, enum arrival a);
void lossy_show_sack_sent(const struct lossy_xfer *x, char kind, uint32_t round);
/* The peer closed the side channel, or nothing moved for -t: says which, and how far the transfer got; -1. */
int lossy_report_peer_gone(const struct lossy_xfer *x, bool sender);
int lossy_report_stalled(const struct lossy_xfer *x, bool sender);
/* A path silent for LOSSY_SILENT_ROUNDS answers: taken as cut, its chunks dealt over the others. */
void lossy_show_path_cut(const struct lossy_xfer *x, int k);
/* RC: path K's WRITE completed with WC's status (12: its retries spent): cut for good. */
void lossy_show_path_failed(const struct lossy_xfer *x, int k, const struct ibv_wc *wc);
/* Every path of plane P taken as cut: how long it had been silent, and when. */
void lossy_show_plane_cut(const struct lossy_xfer *x, int p);
/* With planes, at the end: what each plane carried. */
void lossy_show_planes(const struct lossy_xfer *x, bool sender);
/* Every path taken as cut while the control QP's answers still came: the sender's end; -1. */
int lossy_report_every_path_silent(const struct lossy_xfer *x);

#endif
