/* tcp_ring.h: stage 7: the same ring over TCP sockets, the same pieces and pipelining, non-blocking both ways. */
#ifndef RDMA_STEPS_TCP_RING_H
#define RDMA_STEPS_TCP_RING_H

#include <stddef.h>

#include "control.h"
#include "rendezvous.h"
#include "schedule.h"

struct tcp_ring {
	int listen_fd;		/* where the previous rank connects */
	int next_fd, prev_fd;
	int rank, world;
	char *stage;		/* one piece's bytes, as they come in */
	size_t stage_len;
	void *data;		/* the user buffer (the RDMA ring's, unregistered use) */
};

/* Listens on a free port for the previous rank: before the rendezvous, which passes the port on. */
int tcp_ring_listen(struct tcp_ring *t, int rank, int world, void *data, size_t piece_bytes);

/* The port tcp_ring_listen took, or 0 when it took none. */
int tcp_ring_port(const struct tcp_ring *t);

/* Connects to the next rank and takes the previous rank's connection, within TIMEOUT_S. */
int tcp_ring_connect(struct tcp_ring *t, const struct neighbours *nb, struct ring_ctl *ctl,
		     int timeout_s);

/* Runs PLAN once over the sockets; 0, or -1 after ctl_fail. */
int tcp_ring_run(struct tcp_ring *t, const struct ring_layout *l, const struct plan *plan,
		 struct ring_ctl *ctl, int timeout_s);

void tcp_ring_close(struct tcp_ring *t);

#endif
