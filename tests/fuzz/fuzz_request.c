/*
 * fuzz_request.c - libFuzzer target for the service's request handling:
 * the real server (srv_start: libmicrohttpd, routes, body limits, JSON
 * parsing, every handler, the in-memory cache, the solver pool) runs in
 * this process on a loopback port, and each input is sent to it as one
 * HTTP request over a socket:
 *   first line   "METHOD PATH[?QUERY]"   (the request line)
 *   the rest     the body (sent with Content-Type: application/json)
 * Every request must get a well-formed HTTP response with a status the API
 * documents; crashes, leaks and undefined behaviour in server threads are
 * caught by the sanitizers. Deadlines are tiny so solver work stays short.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "srv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct srv server;
static int started;

static void
start_server(void)
{
	struct dn_error err;
	char *argv[] = { "fuzz", "--listen", "127.0.0.1:0", "--deadline", "0.05", "--max-deadline", "0.2",
		"--max-compute", "1", "--access-log", "off", "--workers", "2", "--http-threads", "2",
		"--max-body", "65536", "--max-space", "1000", NULL };

	memset(&err, 0, sizeof err);
	if (srv_config_parse(17, argv, &server.cfg, &err) != 0 || srv_start(&server, &err) != 0) {
		fprintf(stderr, "fuzz_request: cannot start the server: %s %s\n", err.path, err.message);
		abort();
	}
	started = 1;
}

/* Sends one request and reads the whole response; returns the status or -1. */
static int
exchange(const char *head, size_t head_len, const uint8_t *body, size_t body_len)
{
	struct sockaddr_in a;
	struct timeval tv = { 5, 0 };
	char buf[65536];
	size_t got = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0), status = -1;

	if (fd < 0)
		abort();
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)server.cfg.port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	for (int tries = 0; connect(fd, (struct sockaddr *)&a, sizeof a) != 0; tries++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		if (tries == 200) {
			fprintf(stderr, "fuzz_request: the server no longer accepts connections\n");
			abort();
		}
		nanosleep(&ts, NULL);
	}
	if (send(fd, head, head_len, MSG_NOSIGNAL) < 0 ||
	    (body_len > 0 && send(fd, body, body_len, MSG_NOSIGNAL) < 0)) {
		close(fd);
		return -1;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		ssize_t n = recv(fd, buf + got, sizeof buf - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof buf - 1)
			got = 32;       /* keep the status line, drop the rest of a long body */
	}
	{
		/* reset rather than linger: tens of thousands of connections must
		 * not exhaust the ports in TIME_WAIT */
		struct linger lg = { 1, 0 };
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	}
	close(fd);
	buf[got] = '\0';
	if (got >= 12 && strncmp(buf, "HTTP/1.1 ", 9) == 0)
		status = atoi(buf + 9);
	return status;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int allowed[] = { 200, 201, 202, 400, 401, 404, 405, 413, 415, 422, 429, 503 };
	const uint8_t *nl = memchr(data, '\n', size);
	char line[2048], head[4096];
	size_t ll, body_len;
	int n, status, ok = 0;

	if (!started)
		start_server();
	if (nl == NULL)
		return 0;
	ll = (size_t)(nl - data);
	if (ll == 0 || ll >= sizeof line)
		return 0;
	memcpy(line, data, ll);
	line[ll] = '\0';
	for (size_t i = 0; i < ll; i++)
		if (line[i] == '\r' || line[i] == '\0')
			return 0;       /* one request line only */
	body_len = size - ll - 1;
	n = snprintf(head, sizeof head, "%s HTTP/1.1\r\nHost: fuzz\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", line, body_len);
	if (n <= 0 || (size_t)n >= sizeof head)
		return 0;
	status = exchange(head, (size_t)n, nl + 1, body_len);
	if (status < 0)
		return 0;       /* libmicrohttpd refused the request line itself */
	for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
		ok |= allowed[i] == status;
	if (!ok && status != 500) {
		/* libmicrohttpd answers malformed request lines itself (400, 414, 431, 505) */
		if (status == 414 || status == 431 || status == 505 || status == 501)
			return 0;
		fprintf(stderr, "fuzz_request: undocumented status %d for \"%s\"\n", status, line);
		abort();
	}
	if (status == 500) {
		fprintf(stderr, "fuzz_request: internal error for \"%s\"\n", line);
		abort();
	}
	return 0;
}
