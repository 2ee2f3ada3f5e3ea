/*
 * srv_guard.c - what keeps slow, idle and oversized clients from taking the
 * service down, where libmicrohttpd 0.9.75 has no setting for it:
 *
 *  - The request deadline (--request-timeout): a client has that long to
 *    send a request's head and body, counted from the connection's start
 *    or from its previous answer, and not reset by each byte (the idle
 *    timeout, --connection-timeout, is). Every connection is tracked from
 *    libmicrohttpd's connection notifications; a reaper thread looks once
 *    per tick and ends the late ones: a 408 problem+json is written
 *    straight to the socket (nothing else is being written while a request
 *    is read) and the socket is shut down, which libmicrohttpd sees as the
 *    client leaving and cleans up as usual. libmicrohttpd never learns of
 *    that answer, so the guard reports it (srv_guard_new's callback: the
 *    access log and the metrics) with what it knows of the request: the
 *    client's address, and its method, path and route once its head has
 *    arrived (srv_guard_head), else the path of its request line
 *    (srv_guard_uri), else nothing. A keep-alive connection whose
 *    next request line has not arrived is only shut down: a 408 there could
 *    be read as the answer to the request the client sends next.
 *  - The request line (MHD_OPTION_URI_LOG_CALLBACK, called before
 *    libmicrohttpd parses the query string into its per-connection memory):
 *    a query string of more than SRV_MAX_QUERY_PARAMS parameters or a URI
 *    longer than SRV_MAX_URI is marked on the connection, and the access
 *    handler answers it 414 problem+json through libmicrohttpd. Nothing is
 *    written to the socket here: writing and shutting it down from this
 *    callback crashed libmicrohttpd 0.9.75 (a NULL read in its connection
 *    thread, 1 run in 4 of test_server under ASan). The refused query
 *    string is emptied in place before libmicrohttpd parses it (see
 *    srv_guard_uri), so thousands of pieces cannot exhaust the
 *    connection's memory.
 *
 * Invariants: a tracked socket is only written to or shut down under the
 * guard's lock, and libmicrohttpd's "closed" notification (which comes
 * before it closes the socket) takes the same lock, so the reaper never
 * touches a descriptor that was closed or reused. Each connection is
 * refused at most once. What a 408's report says of the request (path,
 * method, route) is written and read under the same lock, and reported
 * before the 408 is written, so a client that reads /metrics after its 408
 * finds it counted.
 */
#include "srv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

struct guard_conn {
	struct guard_conn *prev, *next;
	int fd;
	_Atomic double since;           /* start of the request being read */
	atomic_int reading;             /* 1 while a request is being read */
	atomic_int served;              /* an earlier request was answered */
	atomic_int line_seen;           /* the current request line has arrived */
	int refused;
	int uri_flags;                  /* SRV_URI_*: the current request line */
	struct srv_guard *g;
	/* what is known of the request being read, for the report of a 408
	 * (guard lock): the client, the request line's path, the head's
	 * method and route */
	char addr[64];
	char path[256];                 /* "" until the request line arrives */
	char method[16];                /* "" until the head arrives */
	int route;                      /* -1 until the head arrives */
};

struct srv_guard {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t reaper;
	int started, stop;
	double timeout;
	struct guard_conn head;         /* circular list of live connections */
	atomic_uint reaped;
	atomic_uint refused408;         /* of them, those given a 408 */
	srv_guard_report report;        /* told of each 408 (guard lock held) */
	void *report_cls;
};

int
srv_guard_refuse(int fd, int status, const char *slug, const char *title, const char *detail)
{
	char type[128], head[256], *body;
	const char *reason = status == 408 ? "Request Timeout" : status == 414 ? "URI Too Long" :
	    status == 431 ? "Request Header Fields Too Large" : "Bad Request";
	json_t *j;
	int n, ok = -1;

	snprintf(type, sizeof type, "https://dnnsat.dev/problems/%s", slug);
	j = json_pack("{s:s,s:s,s:i,s:s}", "type", type, "title", title, "status", status, "detail", detail);
	body = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (body != NULL) {
		n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nContent-Type: application/problem+json\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, reason, strlen(body));
		/* a fresh socket's send buffer takes this at once; when it does not,
		 * the client only sees the connection close */
		if (send(fd, head, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) == n &&
		    send(fd, body, strlen(body), MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t)strlen(body))
			ok = 0;
		free(body);
	}
	shutdown(fd, SHUT_RDWR);
	return ok;
}

static void *
reaper_main(void *arg)
{
	struct srv_guard *g = arg;
	double tick = g->timeout / 4 < 1 ? g->timeout / 4 : 1;

	pthread_mutex_lock(&g->lock);
	while (!g->stop) {
		struct timespec ts;
		double now = srv_now();
		unsigned n = 0;
		char detail[160];

		snprintf(detail, sizeof detail, "the request was not sent within %g s (--request-timeout)", g->timeout);
		for (struct guard_conn *c = g->head.next; c != &g->head; c = c->next) {
			if (c->refused || !atomic_load(&c->reading) || now - atomic_load(&c->since) <= g->timeout)
				continue;
			c->refused = 1;
			if (atomic_load(&c->served) && !atomic_load(&c->line_seen))
				shutdown(c->fd, SHUT_RDWR);     /* an idle keep-alive connection: no answer
								 * a client could take for its next request's */
			else {
				struct srv_guard_timeout t = { c->addr, c->method[0] ? c->method : "-",
					c->path[0] ? c->path : "-", c->route, now - atomic_load(&c->since) };
				/* reported first: a client that reads /metrics after the 408
				 * finds it there */
				if (g->report != NULL)
					g->report(g->report_cls, &t);
				(void)srv_guard_refuse(c->fd, 408, "request-timeout", "Request timeout", detail);
				atomic_fetch_add(&g->refused408, 1);
			}
			n++;
		}
		if (n > 0) {
			atomic_fetch_add(&g->reaped, n);
			srv_log("closed %u connections that did not send their request within %g s", n, g->timeout);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)tick;
		ts.tv_nsec += (long)((tick - floor(tick)) * 1e9);
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!g->stop)
			pthread_cond_timedwait(&g->wake, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

struct srv_guard *
srv_guard_new(double request_timeout, srv_guard_report report, void *cls)
{
	struct srv_guard *g = calloc(1, sizeof *g);

	if (g == NULL)
		return NULL;
	g->report = report;
	g->report_cls = cls;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->wake, NULL);
	g->timeout = request_timeout;
	g->head.next = g->head.prev = &g->head;
	if (pthread_create(&g->reaper, NULL, reaper_main, g) != 0) {
		srv_guard_free(g);
		return NULL;
	}
	g->started = 1;
	return g;
}

void
srv_guard_free(struct srv_guard *g)
{
	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->stop = 1;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
	if (g->started)
		pthread_join(g->reaper, NULL);
	/* libmicrohttpd has closed every connection by now (each notified) */
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

unsigned
srv_guard_reaped(struct srv_guard *g)
{
	return g != NULL ? atomic_load(&g->reaped) : 0;
}

unsigned
srv_guard_refused(struct srv_guard *g)
{
	return g != NULL ? atomic_load(&g->refused408) : 0;
}

void
srv_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode code)
{
	struct srv_guard *g = cls;
	struct guard_conn *c = *socket_context;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (ci == NULL || (c = calloc(1, sizeof *c)) == NULL)
			return;         /* untracked: only the idle timeout applies */
		c->fd = ci->connect_fd;
		c->g = g;
		c->route = -1;
		srv_client_addr(conn, c->addr, sizeof c->addr);
		atomic_store(&c->since, srv_now());
		atomic_store(&c->reading, 1);
		pthread_mutex_lock(&g->lock);
		c->next = g->head.next;
		c->prev = &g->head;
		g->head.next->prev = c;
		g->head.next = c;
		pthread_mutex_unlock(&g->lock);
		*socket_context = c;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && c != NULL) {
		pthread_mutex_lock(&g->lock);
		c->prev->next = c->next;
		c->next->prev = c->prev;
		pthread_mutex_unlock(&g->lock);
		free(c);
		*socket_context = NULL;
	}
}

static struct guard_conn *
conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

void
srv_guard_read_done(struct MHD_Connection *conn)
{
	struct guard_conn *c = conn_of(conn);

	if (c != NULL)
		atomic_store(&c->reading, 0);
}

void
srv_guard_head(struct MHD_Connection *conn, const char *method, const char *path, int route)
{
	struct guard_conn *c = conn_of(conn);

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->g->lock);
	snprintf(c->method, sizeof c->method, "%s", method);
	srv_text_clean(path, c->path, sizeof c->path);
	c->route = route;
	pthread_mutex_unlock(&c->g->lock);
}

void
srv_guard_answered(struct MHD_Connection *conn)
{
	struct guard_conn *c = conn_of(conn);

	if (c != NULL) {
		pthread_mutex_lock(&c->g->lock);
		c->path[0] = c->method[0] = '\0';
		c->route = -1;
		pthread_mutex_unlock(&c->g->lock);
		atomic_store(&c->line_seen, 0);
		atomic_store(&c->served, 1);
		atomic_store(&c->since, srv_now());
		atomic_store(&c->reading, 1);
	}
}

int
srv_guard_uri(struct srv_guard *g, struct MHD_Connection *conn, const char *uri)
{
	const char *q = strchr(uri, '?');
	size_t len = strlen(uri), params = 0;
	struct guard_conn *c = conn_of(conn);

	(void)g;
	if (c != NULL) {
		const char *nul = strstr(uri, "%00");
		char path[sizeof c->path];
		size_t n = strcspn(uri, "?");
		c->uri_flags = nul == NULL ? 0 : SRV_URI_NUL | (nul < uri + n ? SRV_URI_NUL_PATH : 0);
		/* the path as sent (a 408 before the head arrives reports it) */
		snprintf(path, sizeof path, "%.*s", (int)(n < sizeof path ? n : sizeof path - 1), uri);
		pthread_mutex_lock(&c->g->lock);
		srv_text_clean(path, c->path, sizeof c->path);
		pthread_mutex_unlock(&c->g->lock);
		atomic_store(&c->line_seen, 1);
	}
	if (q != NULL)
		for (params = 1, q++; *q != '\0'; q++)
			params += *q == '&';
	if (len <= SRV_MAX_URI && params <= SRV_MAX_QUERY_PARAMS)
		return 0;
	if (c != NULL)
		c->uri_flags |= SRV_URI_REFUSED;
	/*
	 * libmicrohttpd parses the query string into the connection's memory
	 * pool right after this callback returns; thousands of pieces (even
	 * bare '&') exhaust the pool, after which it neither answers nor
	 * closes. The request is refused whatever its parameters say, so the
	 * query string is emptied before that parse: `uri` points into
	 * libmicrohttpd's own writable read buffer (0.9.75 passes it as the
	 * char * it then cuts at '?' itself), and a NUL right after the '?'
	 * leaves it nothing to parse. The access handler answers the 414.
	 */
	{
		char *query = strchr((char *)(uintptr_t)uri, '?');
		if (query != NULL)
			query[1] = '\0';
	}
	return -1;
}

int
srv_guard_uri_flags(struct MHD_Connection *conn)
{
	const struct guard_conn *c = conn_of(conn);

	return c != NULL ? c->uri_flags : 0;
}
