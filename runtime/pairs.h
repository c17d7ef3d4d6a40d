/* pairs.h: the job runtime: every rank's QP for every other rank, handed on through rank 0's control channel (a full mesh's rendezvous). */
#ifndef RDMA_STEPS_PAIRS_H
#define RDMA_STEPS_PAIRS_H

#include "control.h"
#include "exchange.h"
#include "rendezvous.h"

/*
 * After the rendezvous, for a program that connects every rank to every
 * rank: MINE[p] is the QP this rank made for rank p (MINE[rank] unused).
 * Each rank sends rank 0 its world - 1 of them, rank 0 hands each one on to
 * the rank it was made for, and THEIRS[p] becomes the QP rank p made for
 * this rank.  The ring's neighbours-only rendezvous is left as it was.  0,
 * or -1 after every rank that can be told was told who failed.
 */
int ctl_exchange_pairs(struct ring_ctl *c, const struct peer_info *mine, struct peer_info *theirs);

/* A rank's TCP listener, as the other ranks reach it. */
struct endpoint {
	char addr[ADDR_TEXT_LEN];
	int port;
};

/*
 * The part per rank, for a mesh of sockets: each rank sends rank 0 the TCP
 * PORT it listens on, and rank 0 hands every rank every other rank's port
 * and the address its control connection came from, into ALL[rank].  Rank
 * 0's own address is HOST, the one this rank reached it at.  0, or -1 after
 * every rank that can be told was told who failed.
 */
int ctl_exchange_ports(struct ring_ctl *c, const char *host, int port, struct endpoint *all);

#endif
