/* pairs.h: the job runtime: every rank's QP for every other rank, handed on through rank 0's control channel (a full mesh's rendezvous). */
#ifndef RDMA_STEPS_PAIRS_H
#define RDMA_STEPS_PAIRS_H

#include <stdint.h>
#include <time.h>

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

/*
 * One socket of such a mesh: the rank that dials sends its RANK as the
 * connection's first 4 bytes (big-endian), and the rank that listens reads
 * them to know who came.  mesh_dial: the socket connected to PEER's
 * endpoint E, or -1 after every rank that can be told was told PEER's port
 * took no connection.
 * mesh_accept: one connection on LISTEN_FD by DEADLINE (WHAT names the port
 * in a wait's words) and the rank it says in *WHO, unchecked: only the
 * caller knows which ranks may come; the socket, or -1, telling no one: the
 * caller names the rank it still lacks.
 */
int mesh_dial(struct ring_ctl *c, int peer, const struct endpoint *e, int timeout_s);
int mesh_accept(int listen_fd, const struct timespec *deadline, const char *what, int32_t *who);

#endif
