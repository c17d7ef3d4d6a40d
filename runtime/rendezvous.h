/* rendezvous.h: the job runtime: rank 0 gathers every rank's hello, checks them, and answers each rank with its neighbours' QPs. */
#ifndef RDMA_STEPS_RENDEZVOUS_H
#define RDMA_STEPS_RENDEZVOUS_H

#include "control.h"
#include "exchange.h"
#include "launch.h"

#define OPTIONS_TEXT_LEN 192
#define ADDR_TEXT_LEN 64

/*
 * What the rendezvous carries comes in two kinds.  Per rank: what every
 * peer of the rank needs alike (its TCP ring port, and its address, which
 * rank 0 fills in from the connection).  Per pair of ranks: what one rank
 * made for one peer alone, a QP.  The rendezvous is a ring's: a hello
 * holds the rank's QPs to its two neighbours, and rank 0 answers each rank
 * with the next rank's part per rank and the one QP each neighbour made
 * for it.  A program that connects every rank to every rank meets here
 * first (the ranks and the options checked), then hands on one QP per
 * peer through rank 0 (pairs.h), and every rank's TCP port alike.
 */

/* What a rank tells rank 0, and what rank 0 hands back to it. */
struct hello {
	int rank, world;
	char options[OPTIONS_TEXT_LEN];		/* what every rank must be given alike */
	/* Per rank. */
	int tcp_port;				/* its TCP ring listener */
	char addr[ADDR_TEXT_LEN];		/* rank 0: where the rank's connection came from */
	/* Per pair: its QP to the next rank, and its QP from the previous one. */
	struct peer_info to_next, from_prev;
};

struct neighbours {
	/* Per pair: what each neighbour made for this rank. */
	struct peer_info prev_qp;	/* the previous rank's QP to us */
	struct peer_info next_qp;	/* the next rank's QP from us */
	/* Per rank: the next rank's, for the TCP ring. */
	char next_addr[ADDR_TEXT_LEN];
	int next_tcp_port;
};

/* The peer of a connection FD, as text: the address a rank's TCP listener is reached at. */
void peer_address(int fd, char *buf, size_t len);

/*
 * Rank 0 gathers every rank's hello and checks that each rank comes once,
 * within the world size, with the same world size and options; then answers
 * each with its neighbours'.  The other ranks send theirs and wait.  On any
 * failure every rank that came is told, and prints which rank and why.  A
 * rank whose own set-up failed comes with FAILURE, its cause, instead of a
 * hello.  The connections stay open, as C's control channel (control.h).
 */
int rendezvous(struct ring_ctl *c, const struct launch *l, const struct hello *mine,
	       const char *failure, struct neighbours *out);

#endif
