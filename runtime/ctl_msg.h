/* ctl_msg.h: the job runtime: the one message of the rendezvous and the control channel, on the wire, sent and received whole. */
#ifndef RDMA_STEPS_CTL_MSG_H
#define RDMA_STEPS_CTL_MSG_H

#include <stdint.h>

#include "exchange.h"

#define CTL_TEXT_LEN 448

enum ctl_type {
	CTL_HELLO = 'H',	/* a rank to rank 0: who it is, its options and its two QPs */
	CTL_NEIGHBOURS = 'N',	/* rank 0 to a rank: its neighbours' QPs and TCP address */
	CTL_ABORT = 'A',	/* either way: rank FAILED failed, TEXT says why */
	CTL_RESULT = 'R',	/* a rank to rank 0: one size done, its time, wrong elements and bytes */
	CTL_GO = 'G',		/* rank 0 to every rank: every rank is done, go on */
	CTL_PAIR = 'P',		/* through rank 0: the QP rank RANK made for rank PEER alone */
	CTL_PORT = 'T',		/* through rank 0: rank RANK's TCP listener, PORT at TEXT */
	CTL_STALL = 'S',	/* a rank to rank 0: rank RANK has waited -t on rank PEER, TEXT says how */
};

/* What each rank reports at the end of one size: gathered by rank 0, then every rank goes on. */
struct rank_result {
	uint64_t time_ns;	/* its time per run */
	uint64_t wrong;		/* elements wrong in its check */
	uint64_t bytes;		/* bytes it posted per run */
};

struct ctl_msg {
	enum ctl_type type;
	int rank, world, port, failed;
	int peer;		/* CTL_PAIR: the rank qp[0] was made for; CTL_STALL: the rank waited on */
	struct rank_result result;
	char text[CTL_TEXT_LEN];
	struct peer_info qp[2];
};

/* An abort: rank FAILED failed, CAUSE says why. */
struct ctl_msg ctl_msg_abort(int failed, const char *cause);

/*
 * Sends M whole within TIMEOUT_S, quietly: a peer that is gone is a rank
 * gone, said elsewhere.  Returns 0, a sock_outcome (sock.h), or -1 after a
 * failure of the system calls themselves.
 */
int ctl_msg_send(int fd, const struct ctl_msg *m, int timeout_s);

/*
 * Receives one message within TIMEOUT_MS.  Returns 0; SOCK_TIMEOUT,
 * SOCK_STOPPED or SOCK_CLOSED, nothing said, for the caller to name the rank;
 * or -1 after saying what is wrong with the message (garbage is no closed peer).
 */
int ctl_msg_recv(int fd, struct ctl_msg *m, long timeout_ms);

#endif
