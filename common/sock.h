/* sock.h: the TCP side channel used for the out-of-band exchange, every wait bounded by a timeout. */
#ifndef RDMA_STEPS_SOCK_H
#define RDMA_STEPS_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "wait.h"

/* Server: listens on PORT and accepts one client within TIMEOUT_S; returns the socket or -1. */
int sock_accept_one(int port, int timeout_s);

/*
 * Client: connects to HOST:PORT, retrying while the server is not up yet, for
 * up to TIMEOUT_S.  When it cannot, the error says why a server may not be
 * there, and ALSO (NULL: nothing) after that: what else keeps the caller's
 * server off TCP.
 */
int sock_connect(const char *host, int port, int timeout_s, const char *also);

/* Listens on PORT (0: any free port) for up to BACKLOG waiting clients: the socket, or -1 with errno set; reports nothing. */
int sock_listen(int port, int backlog);

/* The TCP port socket FD is bound to, or -1. */
int sock_local_port(int fd);

/* Makes FD's reads and writes return at once (O_NONBLOCK); 0, or -1 with errno set. */
int sock_set_nonblocking(int fd);

/*
 * sock_connect without its lines: the socket, or -1 with errno set (ETIMEDOUT
 * when nothing listened in time) or *GAI_ERR set when HOST does not resolve.
 */
int sock_dial(const char *host, int port, int timeout_s, int *gai_err);

/*
 * What a whole-message transfer found besides 0 (done) and -1 (a failure of
 * poll, send or recv themselves, reported): report.h's convention.
 */
enum sock_outcome {
	SOCK_TIMEOUT = WAIT_TIMEOUT,	/* the deadline passed before the whole message moved */
	SOCK_STOPPED = WAIT_STOPPED,	/* a stop signal came while waiting */
	SOCK_CLOSED,			/* the peer closed or reset its end (errno: EPIPE or ECONNRESET when sending) */
};

/*
 * Sends LEN bytes, or receives until *HAVE (the bytes already in BUF) reaches
 * LEN, by DEADLINE; returns 0, a sock_outcome, or -1.  They print nothing but
 * a failure of the system calls: for a caller that says what a timeout or a
 * closed peer means itself, as the job runtime's control channel names the rank.
 */
int sock_send_quiet(int fd, const void *buf, size_t len, const struct timespec *deadline);
int sock_recv_quiet(int fd, void *buf, size_t len, size_t *have, const struct timespec *deadline);

/* The same within TIMEOUT_S, each outcome reported; returns 0, or -1 after reporting. */
int sock_send_all(int fd, const void *buf, size_t len, int timeout_s);
int sock_recv_all(int fd, void *buf, size_t len, int timeout_s);

/* Receives the rest of a LEN-byte message whose first HAVE bytes are in BUF already. */
int sock_recv_more(int fd, void *buf, size_t have, size_t len, int timeout_s);

/* Whether the peer has closed its end of FD (or reset it), looked at without waiting or reading. */
bool sock_peer_closed(int fd);

/* Closes FD if it is open. */
void sock_close(int fd);

#endif
