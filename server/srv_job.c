/*
 * srv_job.c - the checks a solver job passes before its handler runs on a
 * worker, and the deadline the handler then works under. A job waits in
 * the pool's queue while every worker is busy; that wait counts against
 * the request's deadline ("timeout", from the request's first byte), so:
 *   - a job whose client has gone (closed or reset its connection while
 *     the job waited) is dropped without running;
 *   - a job whose deadline passed while it waited is answered 503
 *     (problem "deadline", Retry-After) without running;
 *   - otherwise the worker thread's deadline (dn_deadline.h) is set to the
 *     request's (but at least --compile-grace seconds from its first
 *     byte), with the server's stop flag, so parsing, model building and
 *     compiling stop at it or at SIGTERM; counting stops at the request's
 *     own deadline (api_request_timeout).
 * Both drops are counted in dnnsat_jobs_dropped_total{reason}.
 */
#include "srv.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "dn_deadline.h"
#include "dn_number.h"

double
srv_request_timeout_value(struct srv_request *r)
{
	const char *q = srv_query_arg(r, "timeout");
	const json_t *b = r->json ? json_object_get(r->json, "timeout") : NULL;
	double t = r->srv->cfg.deadline;

	if (q != NULL) {
		if (dn_decimal_all(q, &t) != 0 || !(t > 0))
			return -1;
	} else if (b != NULL) {
		if (!json_is_number(b) || !(json_number_value(b) > 0))
			return -1;
		t = json_number_value(b);
	}
	return t < r->srv->cfg.max_deadline ? t : r->srv->cfg.max_deadline;
}

double
srv_request_deadline(struct srv_request *r)
{
	double t = srv_request_timeout_value(r);

	if (t < 0)
		t = r->srv->cfg.deadline < r->srv->cfg.max_deadline ? r->srv->cfg.deadline : r->srv->cfg.max_deadline;
	return r->t_start + t;
}

/* 1 when the client closed or reset the connection (a peek that reads
 * end-of-file or fails for good), 0 when it is still there. */
static int
client_gone(struct srv_request *r)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	char c;
	ssize_t n;

	if (ci == NULL || ci->connect_fd < 0)
		return 0;
	n = recv(ci->connect_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == 0)
		return 1;
	if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
		return 1;
	return 0;
}

int
srv_job_begin(struct srv_request *r)
{
	struct srv *s = r->srv;
	double deadline = srv_request_deadline(r), now = srv_now();

	if (client_gone(r)) {
		srv_metrics_dropped(s->metrics, "client_gone");
		srv_log("%s %s: dropped before it ran: the client closed the connection after %.1f s", r->method,
		    r->path, now - r->t_start);
		srv_reply_problem(r, 503, "client-gone", "Client gone", NULL, "the client closed the connection");
		return -1;
	}
	if (now >= deadline) {
		srv_metrics_dropped(s->metrics, "deadline");
		r->retry_after = 5;
		srv_reply_problem(r, 503, "deadline", "Solver deadline passed", NULL,
		    "the request's deadline (%.3g s) passed while it waited %.1f s for a solver worker; retry later",
		    deadline - r->t_start, now - r->t_start);
		return -1;
	}
	/* building and compiling may use at least --compile-grace seconds from
	 * the first byte: a large legitimate model compiles once (and is kept)
	 * even for clients that poll with short timeouts; counting then gets
	 * what is left of the real deadline (api_request_timeout) */
	if (deadline < r->t_start + s->cfg.compile_grace)
		deadline = r->t_start + s->cfg.compile_grace;
	dn_deadline_set(deadline, &s->stopping);
	return 0;
}

void
srv_job_end(void)
{
	dn_deadline_clear();
}
