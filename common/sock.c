/* sock.c: the TCP side channel used for the out-of-band exchange, every wait bounded by a timeout. */
#include "sock.h"
#include "clock.h"
#include "report.h"
#include "stop.h"
#include "wait.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CONNECT_RETRY_MS 100

/* wait_fd on the side channel, a stop signal reported: WAIT_READY, WAIT_TIMEOUT, or -1 (reported). */
static int wait_ready(int fd, short events, const struct timespec *deadline)
{
	int rc = wait_fd(fd, events, deadline, "side channel");

	return rc == WAIT_STOPPED ? report_stopped() : rc;
}

/* Closes FD after a failed call, keeping that call's errno for the caller; returns -1. */
static int close_keeping_errno(int fd)
{
	int err = errno;

	close(fd);
	errno = err;
	return -1;
}

/* A socket bound to every address of FAMILY on PORT, listening; -1 with errno set. */
static int listen_family(int family, int port, int backlog)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port),
				    .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd, on = 1, off = 0;

	fd = socket(family, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	/* One IPv6 socket takes IPv4 clients too, as ::ffff:a.b.c.d. */
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
	if (family == AF_INET6 ? bind(fd, (struct sockaddr *)&in6, sizeof(in6))
			       : bind(fd, (struct sockaddr *)&in4, sizeof(in4)))
		goto out_close;
	if (listen(fd, backlog))
		goto out_close;
	return fd;

out_close:
	return close_keeping_errno(fd);
}

/* IPv6 and IPv4 together where the host has IPv6, IPv4 alone where it is turned off. */
int sock_listen(int port, int backlog)
{
	int fd = listen_family(AF_INET6, port, backlog);

	if (fd < 0 && errno == EAFNOSUPPORT)
		fd = listen_family(AF_INET, port, backlog);
	return fd;
}

int sock_local_port(int fd)
{
	struct sockaddr_storage addr;
	socklen_t len = sizeof(addr);

	if (getsockname(fd, (struct sockaddr *)&addr, &len))
		return -1;
	return ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
						: ((struct sockaddr_in *)&addr)->sin_port);
}

int sock_set_nonblocking(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static int listen_on(int port)
{
	int fd = sock_listen(port, 1);

	if (fd < 0)
		report_error("cannot listen on TCP port %d: %s. Pick another with -p N", port,
			     strerror(errno));
	return fd;
}

/* Names the client: whoever reached the port first is the peer, as nothing here authenticates it. */
static void show_client(const struct sockaddr_storage *peer)
{
	char addr[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (peer->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)peer;

		inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
		port = ntohs(in6->sin6_port);
	} else if (peer->ss_family == AF_INET) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)peer;

		inet_ntop(AF_INET, &in4->sin_addr, addr, sizeof(addr));
		port = ntohs(in4->sin_port);
	}
	show("accepted", "the first client to connect, from %s port %u (the side channel has no "
	     "authentication)", addr, port);
}

/*
 * The side channel carries small messages that each wait for an answer, and
 * a TCP data path a buffer right after a one-byte barrier.  With Nagle's
 * algorithm a segment waits for the ACK of the one before, which the peer may
 * delay by up to 40 ms: measured, a 4 KiB transfer took 42 ms instead of 1.
 */
static void set_nodelay(int fd)
{
	int on = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

int sock_accept_one(int port, int timeout_s)
{
	struct timespec deadline = deadline_in(timeout_s);
	struct sockaddr_storage peer;
	socklen_t peer_len = sizeof(peer);
	int lfd, fd = -1, rc;

	lfd = listen_on(port);
	if (lfd < 0)
		return -1;
	show("listening", "TCP port %d, waiting up to %d s for the client", port, timeout_s);
	rc = wait_ready(lfd, POLLIN, &deadline);
	if (rc == WAIT_TIMEOUT)
		report_error("no client connected to TCP port %d within %d s. Start the client "
			     "with this host's address, or raise the wait with -t SECONDS",
			     port, timeout_s);
	else if (rc == WAIT_READY && (fd = accept(lfd, (struct sockaddr *)&peer, &peer_len)) < 0)
		report_verb_error("accept", errno);
	else if (rc == WAIT_READY) {
		set_nodelay(fd);
		show_client(&peer);
	}
	close(lfd);
	return fd;
}

/* One connection attempt; returns the socket, or -1 with errno set. */
static int try_connect(const struct addrinfo *ai, const struct timespec *deadline)
{
	int fd, err = 0;
	socklen_t len = sizeof(err);

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)
		goto out_close;
	if (wait_fd(fd, POLLOUT, deadline, "side channel") != WAIT_READY) {
		errno = stop_requested() ? EINTR : ETIMEDOUT;
		goto out_close;
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	if (err) {
		errno = err;
		goto out_close;
	}
	set_nodelay(fd);
	return fd;

out_close:
	return close_keeping_errno(fd);
}

int sock_dial(const char *host, int port, int timeout_s, int *gai_err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct timespec deadline = deadline_in(timeout_s);
	struct addrinfo *res;
	char service[8];
	int fd = -1, err = ETIMEDOUT;

	snprintf(service, sizeof(service), "%d", port);
	*gai_err = getaddrinfo(host, service, &hints, &res);
	if (*gai_err) {
		errno = EINVAL;
		return -1;
	}
	while (fd < 0 && ms_left(&deadline) > 0 && !stop_requested()) {
		for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = try_connect(ai, &deadline);
			err = errno;
		}
		if (fd < 0)
			usleep(CONNECT_RETRY_MS * 1000);
	}
	freeaddrinfo(res);
	if (fd < 0)
		errno = stop_requested() ? EINTR : err;
	return fd;
}

int sock_connect(const char *host, int port, int timeout_s, const char *also)
{
	int fd, gai_err;

	show("connecting", "to %s port %d, retrying for up to %d s until the server listens",
	     host, port, timeout_s);
	fd = sock_dial(host, port, timeout_s, &gai_err);
	if (fd < 0 && gai_err) {
		report_error("cannot resolve host '%s': %s", host, gai_strerror(gai_err));
		return -1;
	}
	if (fd < 0 && stop_requested())
		return report_stopped();
	if (fd < 0) {
		report_error("could not connect to %s port %d within %d s: %s. Is the server "
			     "running (start it first, without a HOST argument), and where this host "
			     "reaches it? Each 'make shell' is a VM with a network of its own, so a "
			     "server in another one is out of reach, even at the same address: run "
			     "both sides in one VM. A server takes one "
			     "client and then stops listening, so it refuses a second one%s%s",
			     host, port, timeout_s, strerror(errno), also ? "; and " : "",
			     also ? also : "");
		return -1;
	}
	return fd;
}

/*
 * After a send or recv that moved nothing (N, with errno): SOCK_CLOSED for a
 * peer gone, -1 after naming VERB's error, else waits for EVENTS: 0 (ready:
 * try again) or the wait's outcome.  Each transfer tries first and waits only
 * when the socket would block: a message that fits goes out even after a
 * stop signal (a rank tells rank 0 of its own stop that way), and a healthy
 * exchange makes no poll() call.
 */
static int wait_to_retry(int fd, ssize_t n, short events, const struct timespec *deadline,
			 const char *verb)
{
	if (n == 0 || errno == EPIPE || errno == ECONNRESET)
		return SOCK_CLOSED;
	if (errno != EINTR && errno != EAGAIN) {
		report_verb_error(verb, errno);
		return -1;
	}
	return wait_fd(fd, events, deadline, "side channel");
}

int sock_send_quiet(int fd, const void *buf, size_t len, const struct timespec *deadline)
{
	const char *p = buf;
	size_t done = 0;
	int rc = 0;

	while (done < len && rc == 0) {
		ssize_t n = send(fd, p + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0)
			done += (size_t)n;
		else
			rc = wait_to_retry(fd, n, POLLOUT, deadline, "send (side channel)");
	}
	return rc;
}

int sock_recv_quiet(int fd, void *buf, size_t len, size_t *have, const struct timespec *deadline)
{
	char *p = buf;
	int rc = 0;

	while (*have < len && rc == 0) {
		ssize_t n = recv(fd, p + *have, len - *have, MSG_DONTWAIT);

		if (n > 0)
			*have += (size_t)n;
		else
			rc = wait_to_retry(fd, n, POLLIN, deadline, "recv (side channel)");
	}
	return rc;
}

int sock_send_all(int fd, const void *buf, size_t len, int timeout_s)
{
	struct timespec deadline = deadline_in(timeout_s);
	int rc = sock_send_quiet(fd, buf, len, &deadline);

	if (rc == SOCK_TIMEOUT)
		report_error("the peer did not take our message within %d s", timeout_s);
	else if (rc == SOCK_STOPPED)
		report_stopped();
	else if (rc == SOCK_CLOSED) /* EPIPE or ECONNRESET: the same peer gone as a recv's EOF */
		report_error("the peer closed the side channel early (did it fail? see its output)");
	return rc ? -1 : 0;
}

int sock_recv_more(int fd, void *buf, size_t have, size_t len, int timeout_s)
{
	struct timespec deadline = deadline_in(timeout_s);
	int rc = sock_recv_quiet(fd, buf, len, &have, &deadline);

	if (rc == SOCK_TIMEOUT && have == 0)
		report_error("the peer sent nothing for %d s on the side channel", timeout_s);
	else if (rc == SOCK_TIMEOUT)
		report_error("the peer sent only %zu bytes of its message, then nothing for %d s: "
			     "is it speaking the same exchange format?", have, timeout_s);
	else if (rc == SOCK_STOPPED)
		report_stopped();
	else if (rc == SOCK_CLOSED)
		report_error("the peer closed the side channel early (did it fail? see its output)");
	return rc ? -1 : 0;
}

int sock_recv_all(int fd, void *buf, size_t len, int timeout_s)
{
	return sock_recv_more(fd, buf, 0, len, timeout_s);
}

bool sock_peer_closed(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

void sock_close(int fd)
{
	if (fd >= 0)
		close(fd);
}
