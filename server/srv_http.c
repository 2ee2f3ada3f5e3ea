/*
 * srv_http.c - libmicrohttpd glue: one struct srv_request per request,
 * created on the first call of the access handler (the request line was
 * checked before: srv_guard, from the URI callback) and freed in the
 * completion callback. Order of checks on the headers: the framing
 * (conflicting Content-Length, or one with Transfer-Encoding: 400 and the
 * connection closed), %00 in the URI (400), route (404/405), token (401),
 * header size (431), a query parameter given twice (400), content type
 * (415), declared length (413); the body is copied into our own buffer
 * with our own cap (413 once exceeded; the rest is read and dropped), parsed with duplicate keys
 * rejected (400 with line and column), except an upload's ONNX file
 * (SRV_R_UPLOAD: its own cap, --max-model-bytes, kept raw), and counted
 * with every connection's bodies and large answers against --max-buffered
 * (503 with Retry-After beyond it: 1024 connections may not each hold a
 * 64 MiB upload); a query's model
 * id is resolved (SRV_R_QUERY, api_models.c). Then the handler runs inline on the
 * HTTP thread (cheap routes), on a database reader (SRV_R_DB routes with a
 * PostgreSQL cache: a query's round trip would hold every other connection
 * of the HTTP thread behind it) or on a solver worker: the connection is
 * suspended, the job queued (429 when the queue is full, 503 while
 * stopping), and resumed when the worker has filled the response. A
 * reader's handler that asks for a solver worker (status 0) passes the
 * still-suspended request on to the solver pool.
 *
 * Invariants: a response is queued exactly once, on the last call; the
 * request is never freed while a worker holds it (a suspended connection
 * does not complete); every request answered gets one access-log line (no
 * body) and is counted once under its route, the guard's 408s too
 * (srv_http_timed_out), and refusals before routing (414, %00, framing)
 * under the route of their path.
 */
#include "srv.h"
#include "dn_grow.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Constant-time comparison of a presented token with each configured one. */
static int
token_ok(const struct srv *s, struct MHD_Connection *conn)
{
	const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	int ok = 0;

	if (s->tokens == NULL)
		return 1;
	if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
		return 0;
	h += 7;
	for (char **t = s->tokens; *t != NULL; t++) {
		size_t n = strlen(*t), m = strlen(h);
		unsigned char diff = (unsigned char)(n != m);
		for (size_t i = 0; i < n; i++)
			diff |= (unsigned char)((*t)[i] ^ (i < m ? h[i] : 0));
		ok |= diff == 0;
	}
	return ok;
}

/* 1 when the Content-Type `ct` is the media type `type` (parameters such
 * as "; charset=utf-8" allowed). */
static int
is_type(const char *ct, const char *type)
{
	size_t n = strlen(type);

	if (ct == NULL)
		return 0;
	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, type, n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* Records a finished request in the metrics, once. */
static void
count_request(struct srv_request *r)
{
	struct srv *s = r->srv;

	if (r->counted || r->status == 0)
		return;
	r->counted = 1;
	srv_metrics_request(s->metrics, r->route ? (int)(r->route - srv_route_at(0)) : -1, r->status,
	    srv_now() - r->t_start);
	if (r->cache_hit >= 0)
		srv_metrics_cache(s->metrics, r->cache_hit);
}

/* --max-buffered: bytes of request bodies and of answers above
 * SRV_ANSWER_UNCOUNTED held by all connections at once. 0 when n more fit
 * (counted), -1 when they do not (nothing counted). */
#define SRV_ANSWER_UNCOUNTED (64 * 1024)

static int
buffer_take(struct srv *s, size_t n)
{
	size_t was = atomic_fetch_add(&s->buffered, n);

	if (was + n > s->cfg.max_buffered) {
		atomic_fetch_sub(&s->buffered, n);
		return -1;
	}
	return 0;
}

static void
buffer_give(struct srv *s, size_t n)
{
	if (n > 0)
		atomic_fetch_sub(&s->buffered, n);
}

/* An answer counted in srv.buffered until libmicrohttpd is done with it
 * (a slow reader holds it as long as it reads). */
struct held_answer {
	struct srv *srv;
	char *body;
	size_t len;
};

static void
held_answer_free(void *cls)
{
	struct held_answer *h = cls;

	buffer_give(h->srv, h->len);
	free(h->body);
	free(h);
}

/* r's answer as a response: an answer above SRV_ANSWER_UNCOUNTED is
 * counted in --max-buffered, and replaced by a 503 when it does not fit. */
static struct MHD_Response *
answer_response(struct srv_request *r)
{
	struct MHD_Response *resp;
	struct held_answer *h = NULL;

	if (r->resp_len > SRV_ANSWER_UNCOUNTED) {
		if (buffer_take(r->srv, r->resp_len) != 0) {
			size_t len = r->resp_len;
			r->retry_after = 2;
			r->cache_hit = -1;
			srv_reply_problem(r, 503, "server-busy", "Server busy", NULL, "an answer of %zu bytes does not fit "
			    "the server's buffers, which the answers and bodies of all connections fill (--max-buffered "
			    "%zu bytes): retry", len, r->srv->cfg.max_buffered);
		} else if ((h = malloc(sizeof *h)) == NULL) {
			buffer_give(r->srv, r->resp_len);
		} else {
			h->srv = r->srv;
			h->body = r->resp;
			h->len = r->resp_len;
		}
	}
	if (h != NULL) {
		resp = MHD_create_response_from_buffer_with_free_callback_cls(r->resp_len, r->resp, held_answer_free,
		    h);
		if (resp == NULL) {
			buffer_give(r->srv, h->len);
			free(h);
			return NULL;
		}
	} else {
		resp = MHD_create_response_from_buffer(r->resp_len, r->resp, MHD_RESPMEM_MUST_FREE);
		if (resp == NULL)
			return NULL;
	}
	r->resp = NULL;         /* libmicrohttpd frees it */
	return resp;
}

/* The strong entity tag of a body: 32 hex digits, quoted, of two FNV-1a
 * variants over its bytes (srv_content_hash's, which stops at a NUL:
 * bodies are bytes with a length). */
static void
entity_tag(const char *body, size_t len, char tag[40])
{
	uint64_t h1 = 1469598103934665603ULL, h2 = 0x84222325cbf29ce4ULL;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)body[i];
		h1 = (h1 ^ c) * 1099511628211ULL;
		h2 = (h2 ^ c) * 0x100000001b3ULL;
		h2 ^= h2 >> 29;
	}
	snprintf(tag, 40, "\"%016llx%016llx\"", (unsigned long long)h1, (unsigned long long)h2);
}

/* RFC 9110 section 13.1.2: whether If-None-Match lists `tag` (weak
 * comparison: a W/ prefix is ignored) or is "*". */
static int
none_match_hit(const char *list, const char *tag)
{
	size_t n = strlen(tag);

	for (const char *p = list; *p != '\0';) {
		size_t len;
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return 1;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		len = strcspn(p, ",");
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == n && strncmp(p, tag, n) == 0)
			return 1;
		p += strcspn(p, ",");
	}
	return 0;
}

/* A GET's answer the handler marked immutable or to revalidate: its ETag
 * into tag (else tag is ""), and a 304 without a body when If-None-Match
 * names it. */
static void
conditional(struct srv_request *r, char tag[40])
{
	const char *inm;

	tag[0] = '\0';
	if (r->cache_control == SRV_CACHE_UNSAID || (strcmp(r->method, "GET") != 0 && strcmp(r->method, "HEAD") != 0)) {
		r->cache_control = SRV_CACHE_UNSAID;
		return;
	}
	if (r->cache_control != SRV_CACHE_IMMUTABLE && r->cache_control != SRV_CACHE_REVALIDATE)
		return;
	if (r->status != 200 || r->stream != NULL) {
		r->cache_control = SRV_CACHE_UNSAID;    /* an error in its place: nothing said */
		return;
	}
	entity_tag(r->resp != NULL ? r->resp : "", r->resp_len, tag);
	inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
	if (inm == NULL || !none_match_hit(inm, tag))
		return;
	/* RFC 9110 section 15.4.5: the validator and cache headers a 200
	 * would have had, no body and no representation metadata */
	free(r->resp);
	r->resp = NULL;
	r->resp_len = 0;
	r->status = 304;
	r->content_type = NULL;
	r->location[0] = '\0';
}

static ssize_t
no_content(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls, (void)pos, (void)buf, (void)max;
	return MHD_CONTENT_READER_END_OF_STREAM;
}

/* A 304 without a body, and without the "Content-Length: 0" that
 * libmicrohttpd 0.9.75 adds to every response of known size (RFC 9110
 * section 8.6: a 304 may only carry the length of the 200 it stands for):
 * of unknown size, HTTP/1.0-style (no chunks; the connection closes after
 * it, which is how such a response ends). */
static struct MHD_Response *
not_modified_response(void)
{
	struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64, no_content, NULL, NULL);

	if (resp != NULL)
		MHD_set_response_options(resp, MHD_RF_HTTP_VERSION_1_0_ONLY, MHD_RO_END);
	return resp;
}

/* Queues r's response on its connection. */
static enum MHD_Result
send_reply(struct srv_request *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char num[32], tag[40];
	int streamed = 0;

	conditional(r, tag);
	if (r->stream != NULL) {
		resp = r->stream;
		r->stream = NULL;
		streamed = 1;
	} else if (r->status == 304) {
		if ((resp = not_modified_response()) == NULL)
			return MHD_NO;
	} else if ((resp = answer_response(r)) == NULL)
		return MHD_NO;
	if (r->content_type != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->content_type);
	if (r->location[0] != '\0')
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->location);
	if (r->allow[0] != '\0')
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
	if (r->retry_after > 0) {
		snprintf(num, sizeof num, "%d", r->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, num);
	}
	if (r->cache_hit >= 0)
		MHD_add_response_header(resp, "X-Cache", r->cache_hit ? "hit" : "miss");
	if (r->www_authenticate)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"dnnsat\"");
	if (r->close_connection)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	if (tag[0] != '\0')
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, tag);
	if (r->cache_control == SRV_CACHE_IMMUTABLE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "max-age=31536000, immutable");
	else if (r->cache_control == SRV_CACHE_NO_STORE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	else if (r->cache_control == SRV_CACHE_REVALIDATE)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	r->phase = 3;
	srv_guard_read_done(r->conn);
	/* counted before the client can read the answer (a stream, when it ends):
	 * a client that reads /metrics next sees this request in it */
	if (!streamed)
		count_request(r);
	return ret;
}

static void refuse_job(struct srv_request *r);

/* 503 while the server stops, with Retry-After. */
static void
reply_stopping(struct srv_request *r)
{
	r->retry_after = 5;
	srv_reply_problem(r, 503, "shutting-down", "Shutting down", NULL, "the server is stopping");
}

/* A job's end: its worker counts as free, the connection resumes to send
 * the answer. */
static void
job_answered(struct srv_request *r)
{
	r->phase = 2;
	srv_pool_job_done();
	MHD_resume_connection(r->conn);
}

/* Runs on a solver worker: the handler, then the connection resumes. */
static void
run_job(void *arg)
{
	struct srv_request *r = arg;

	if (atomic_load(&r->srv->stopping)) {
		reply_stopping(r);
	} else if (srv_job_begin(r) == 0) {     /* else dropped: deadline passed, client gone */
		r->in_worker = 1;
		r->route->handler(r);
		srv_job_end();
		if (r->status == 0)
			srv_reply_problem(r, 500, "internal", "Internal error", NULL, "the handler gave no answer");
	}
	job_answered(r);
}

/* A queued job the pool dropped at shutdown. */
void srv_http_drop_job(void *arg);
void
srv_http_drop_job(void *arg)
{
	struct srv_request *r = arg;

	reply_stopping(r);
	r->phase = 2;
	MHD_resume_connection(r->conn);
}

/* Runs on a database reader: the handler as the HTTP thread would run it;
 * when it asks for a solver worker the request goes on to the solver pool
 * (still suspended), else the connection resumes with the answer. */
static void
run_read(void *arg)
{
	struct srv_request *r = arg;

	if (atomic_load(&r->srv->stopping)) {
		reply_stopping(r);
	} else {
		r->route->handler(r);
		if (r->status == 0) {
			srv_pool_job_done();
			if (srv_pool_submit(r->srv->pool, run_job, r) == 0)
				return;         /* run_job resumes it */
			refuse_job(r);
		}
	}
	job_answered(r);
}

/* The answer to a job no pool took: 503 while stopping, else 429. */
static void
refuse_job(struct srv_request *r)
{
	if (atomic_load(&r->srv->stopping)) {
		reply_stopping(r);
	} else {
		srv_metrics_rejected(r->srv->metrics);
		r->retry_after = 1;
		srv_reply_problem(r, 429, "too-many-requests", "Too many solver requests", NULL,
		    "every solver worker is busy and %d requests are waiting: retry later", r->srv->cfg.max_queue);
	}
}

/* Hands r to `pool` to run `fn`; answers 429/503 itself when it cannot. */
static enum MHD_Result
dispatch_to(struct srv_request *r, struct srv_pool *pool, void (*fn)(void *))
{
	MHD_suspend_connection(r->conn);
	r->suspended = 1;
	if (srv_pool_submit(pool, fn, r) == 0)
		return MHD_YES;
	MHD_resume_connection(r->conn);
	r->suspended = 0;
	refuse_job(r);
	return send_reply(r);
}

static enum MHD_Result
dispatch_to_pool(struct srv_request *r)
{
	return dispatch_to(r, r->srv->pool, run_job);
}

/* Checks a body route's headers; 0 to go on, or an error reply is set. */
static int
check_headers(struct srv_request *r)
{
	struct srv *s = r->srv;
	const char *len;

	const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);

	if (!(r->route->flags & (SRV_R_BODY | SRV_R_UPLOAD)))
		return 0;
	r->body_limit = s->cfg.max_body;
	if ((r->route->flags & SRV_R_UPLOAD) && (is_type(ct, "application/octet-stream") ||
	    is_type(ct, "application/onnx"))) {
		r->body_raw = 1;
		r->body_limit = s->cfg.max_model_bytes;
	} else if (!is_type(ct, "application/json")) {
		srv_reply_problem(r, 415, "unsupported-media-type", "Unsupported media type", NULL,
		    (r->route->flags & SRV_R_UPLOAD) ? "the body must be an ONNX file (application/octet-stream or "
		    "application/onnx) or a JSON model (application/json)" : "the body must be application/json");
		return -1;
	}
	len = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (len != NULL && strtod(len, NULL) > (double)r->body_limit) {
		srv_reply_problem(r, 413, "body-too-large", "Body too large", NULL,
		    "the body has %s bytes; the limit is %zu (%s)", len, r->body_limit,
		    r->body_raw ? "--max-model-bytes" : "--max-body");
		return -1;
	}
	return 0;
}

static int
append_body(struct srv_request *r, const char *data, size_t n)
{
	if (r->body_too_large || r->body_over_budget)
		return 0;       /* the rest is read and dropped; the reply says why */
	if (r->body_len + n > r->body_limit) {
		r->body_too_large = 1;
		return 0;
	}
	if (buffer_take(r->srv, n) != 0) {
		/* every connection's bodies together are at --max-buffered:
		 * drop this one's (a 503 at its end), keep reading */
		r->body_over_budget = 1;
		buffer_give(r->srv, r->body_len);
		free(r->body);
		r->body = NULL;
		r->body_len = r->body_cap = 0;
		return 0;
	}
	if (dn_grow(&r->body, &r->body_cap, r->body_len + n + 1, 1) != 0) {
		buffer_give(r->srv, n);
		return -1;
	}
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return 0;
}

/* Parses the body of a body route; 0, or -1 with a 400/413 reply set. */
static int
parse_body(struct srv_request *r)
{
	json_error_t jerr;

	if (r->body_too_large) {
		srv_reply_problem(r, 413, "body-too-large", "Body too large", NULL, "the body is larger than %zu bytes "
		    "(%s)", r->body_limit, r->body_raw ? "--max-model-bytes" : "--max-body");
		return -1;
	}
	if (r->body_over_budget) {
		r->retry_after = 2;
		srv_reply_problem(r, 503, "server-busy", "Server busy", NULL, "the bodies and answers of all "
		    "connections fill the server's buffers (--max-buffered %zu bytes): retry", r->srv->cfg.max_buffered);
		return -1;
	}
	if (r->body_raw)
		return 0;               /* an ONNX file: its handler reads it */
	if (r->body_len == 0) {
		srv_reply_problem(r, 400, "malformed-json", "Malformed JSON", "$", "the body is empty: send a JSON object");
		return -1;
	}
	r->json = json_loadb(r->body, r->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (r->json == NULL) {
		srv_reply_problem(r, 400, "malformed-json", "Malformed JSON", "$", "line %d, column %d: %s", jerr.line,
		    jerr.column, jerr.text);
		return -1;
	}
	if (!json_is_object(r->json)) {
		srv_reply_problem(r, 400, "wrong-type", "Wrong type", "$", "the body must be a JSON object");
		return -1;
	}
	return 0;
}

/* A new request, at the access handler's first call. NULL when out of
 * memory. */
static struct srv_request *
request_new(struct srv *s, struct MHD_Connection *conn)
{
	struct srv_request *r = calloc(1, sizeof *r);

	if (r == NULL)
		return NULL;
	atomic_fetch_add(&s->inflight, 1);
	r->srv = s;
	r->conn = conn;
	r->t_start = srv_now();
	r->cache_hit = -1;
	return r;
}

/* MHD_OPTION_URI_LOG_CALLBACK: the raw request line's URI, before
 * libmicrohttpd decodes it or parses its query string. srv_guard checks
 * and notes it on the connection; nothing is allocated here (libmicrohttpd
 * does not complete a request it refuses itself after this call, so a
 * request made here could leak). */
static void *
uri_early(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct srv *s = cls;

	(void)srv_guard_uri(s->guard, conn, uri);
	return NULL;
}

/* Qsort order of query-parameter names. */
static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

struct names {
	const char **v;
	size_t n, cap;
};

static enum MHD_Result
collect_name(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct names *ns = cls;

	(void)kind;
	(void)value;
	if (key[0] == '\0')
		return MHD_YES;         /* "a=1&&b=2": an empty piece, not a parameter */
	if (ns->n == ns->cap)
		return MHD_NO;
	ns->v[ns->n++] = key;
	return MHD_YES;
}

/* Whether `name` is one of the route's query parameters (a space-separated
 * list; a route without one takes any). */
static int
known_param(const struct srv_route *route, const char *name)
{
	size_t len = strlen(name);

	if (route->params == NULL)
		return 1;
	for (const char *p = route->params; *p; p += strcspn(p, " "), p += *p == ' ') {
		if (strncmp(p, name, len) == 0 && (p[len] == ' ' || p[len] == '\0'))
			return 1;
	}
	return 0;
}

/* A query parameter the endpoint does not take (a typo such as ?limt=5
 * would be dropped unsaid), or one given twice (which one wins would be a
 * guess): 400 naming it. 0 to go on, or -1 with the reply set. */
static int
check_query_names(struct srv_request *r)
{
	const char *stack[64];
	struct names ns = { stack, 0, 64 };
	int n = MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, NULL, NULL), rc = 0;

	if (n < 1 || (n < 2 && r->route->params == NULL))
		return 0;
	if ((size_t)n > ns.cap && (ns.v = malloc(sizeof *ns.v * (size_t)n)) == NULL) {
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "out of memory");
		return -1;
	}
	if ((size_t)n > ns.cap)
		ns.cap = (size_t)n;
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, collect_name, &ns);
	for (size_t i = 0; i < ns.n && rc == 0; i++)
		if (!known_param(r->route, ns.v[i])) {
			srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", ns.v[i],
			    "unknown query parameter \"%.64s\" (this endpoint takes: %s)", ns.v[i], r->route->params);
			rc = -1;
		}
	qsort(ns.v, ns.n, sizeof *ns.v, name_cmp);
	for (size_t i = 1; i < ns.n && rc == 0; i++)
		if (strcmp(ns.v[i - 1], ns.v[i]) == 0 &&
		    !((r->route->flags & SRV_R_UPLOAD) && strcmp(ns.v[i], "dim") == 0)) {
			srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", ns.v[i],
			    "the query parameter \"%.64s\" is given more than once", ns.v[i]);
			rc = -1;
		}
	if (ns.v != stack)
		free(ns.v);
	return rc;
}

static enum MHD_Result
add_header_size(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	*(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4;
	return MHD_YES;
}

/* Header fields beyond SRV_MAX_HEADERS bytes: 431 naming the limit (a
 * head beyond libmicrohttpd's connection memory never gets here: it
 * answers that itself). 0 to go on, or -1 with the reply set. */
static int
check_head_size(struct srv_request *r)
{
	size_t n = 0;

	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_header_size, &n);
	if (n <= SRV_MAX_HEADERS)
		return 0;
	srv_reply_problem(r, 431, "headers-too-large", "Request header fields too large", NULL,
	    "the header fields have %zu bytes; the limit is %d", n, SRV_MAX_HEADERS);
	return -1;
}

/* What the framing headers of a request say (check_framing). */
struct framing {
	int lengths;                    /* Content-Length fields */
	int differ;                     /* two of them with different values */
	int chunked;                    /* a Transfer-Encoding field */
	const char *first;
};

static enum MHD_Result
framing_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct framing *f = cls;

	(void)kind;
	if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
		f->chunked = 1;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
		return MHD_YES;
	if (value == NULL)
		value = "";
	if (f->lengths++ == 0)
		f->first = value;
	else if (strcmp(f->first, value) != 0)
		f->differ = 1;
	return MHD_YES;
}

/* RFC 9112 section 6.3: Content-Length fields with different values make
 * the body's end unknowable (libmicrohttpd 0.9.75 takes the first and
 * reads the rest as the next request: a smuggled request), and with
 * Transfer-Encoding too the two may disagree (section 6.1: the server may
 * refuse it and must close). 400 naming the field, and the connection is
 * closed after the answer. Repeated fields with one value are one length
 * (RFC 9110 section 8.6). 0 to go on, or -1 with the reply set. */
static int
check_framing(struct srv_request *r)
{
	struct framing f = { 0, 0, 0, NULL };

	MHD_get_connection_values(r->conn, MHD_HEADER_KIND, framing_field, &f);
	if (f.differ) {
		r->close_connection = 1;
		srv_reply_problem(r, 400, "bad-framing", "Bad message framing", MHD_HTTP_HEADER_CONTENT_LENGTH,
		    "the request has %d Content-Length header fields with different values: where its body ends "
		    "is unknown (RFC 9112 section 6.3); send one", f.lengths);
		return -1;
	}
	if (f.lengths > 0 && f.chunked) {
		r->close_connection = 1;
		srv_reply_problem(r, 400, "bad-framing", "Bad message framing", MHD_HTTP_HEADER_CONTENT_LENGTH,
		    "the request has both Content-Length and Transfer-Encoding header fields: where its body ends "
		    "is ambiguous (RFC 9112 section 6.1); send one of them");
		return -1;
	}
	return 0;
}

/* The route a request refused before routing is counted under (a 414's
 * query string is gone, its path is not): the one its method and path
 * name, or NULL. */
static const struct srv_route *
route_label_of(struct srv_request *r, const char *method, const char *url)
{
	char allow[sizeof r->allow];
	int status;

	return srv_route_find(method, url, &status, allow, sizeof allow, r->params);
}

/* The first call for a request: route, token, query string and headers.
 * MHD_YES to read the body, else what send_reply gives. */
static enum MHD_Result
request_head(struct srv *s, struct srv_request *r, const char *url, const char *method)
{
	char allow[sizeof r->allow];
	int status;

	snprintf(r->method, sizeof r->method, "%s", method);
	r->path = strdup(url);
	if (r->path == NULL)
		return MHD_NO;
	r->route = srv_route_find(method, url, &status, allow, sizeof allow, r->params);
	/* the refusals before the route's own checks are counted and logged
	 * under the route all the same (metrics: not "unmatched") */
	if (check_framing(r) != 0)
		return send_reply(r);   /* before anything else: the next request's start is unknown */
	if (r->encoded_nul) {
		/* libmicrohttpd decodes %00 and the path would end there: a %00 in
		 * the path leaves no route it names */
		if (srv_guard_uri_flags(r->conn) & SRV_URI_NUL_PATH)
			r->route = NULL;
		srv_reply_problem(r, 400, "bad-path", "Bad path", NULL,
		    "the URI holds an encoded NUL byte (%%00), which no path or parameter may contain");
		return send_reply(r);
	}
	if (r->route == NULL) {
		if (status == 405) {
			snprintf(r->allow, sizeof r->allow, "%s", allow);
			srv_reply_problem(r, 405, "method-not-allowed", "Method not allowed", NULL,
			    "%s is not allowed on %s (allowed: %s)", method, url, r->allow);
		} else
			srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such resource: %s", url);
		return send_reply(r);
	}
	r->authenticated = s->tokens != NULL && token_ok(s, r->conn);
	if (!(r->route->flags & SRV_R_PUBLIC) && s->tokens != NULL && !r->authenticated) {
		srv_reply_problem(r, 401, "unauthorized", "Unauthorized", NULL,
		    "send Authorization: Bearer <token>");
		r->www_authenticate = 1;
		return send_reply(r);
	}
	if (check_head_size(r) != 0 || check_query_names(r) != 0 || check_headers(r) != 0)
		return send_reply(r);
	r->phase = 1;
	/* a 408 while the body is read is reported with these (srv_guard) */
	srv_guard_head(r->conn, r->method, r->path, (int)(r->route - srv_route_at(0)));
	return MHD_YES;
}

static enum MHD_Result
access_handler(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	struct srv *s = cls;
	struct srv_request *r = *con_cls;

	(void)version;
	if (r == NULL) {
		int uri = srv_guard_uri_flags(conn);
		if ((r = request_new(s, conn)) == NULL)
			return MHD_NO;
		*con_cls = r;
		r->encoded_nul = (uri & SRV_URI_NUL) != 0;
		if (uri & SRV_URI_REFUSED) {
			snprintf(r->method, sizeof r->method, "%s", method);
			r->path = strdup(url);
			r->route = route_label_of(r, method, url);
			if (check_framing(r) != 0)
				return send_reply(r);
			srv_reply_problem(r, 414, "uri-too-long", "URI too long", NULL,
			    "the URI is longer than %d bytes or has more than %d query parameters (the limits are "
			    "%d bytes and %d parameters): send a configuration to check in a POST body instead "
			    "(POST /v1/reductions/{id}/check)", SRV_MAX_URI, SRV_MAX_QUERY_PARAMS, SRV_MAX_URI,
			    SRV_MAX_QUERY_PARAMS);
			return send_reply(r);
		}
		return request_head(s, r, url, method);
	}
	if (r->phase == 1 && *upload_size > 0) {
		if (append_body(r, upload_data, *upload_size) != 0)
			return MHD_NO;
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->phase == 2)
		return send_reply(r);           /* a worker answered */
	if (r->phase != 1)
		return MHD_YES;
	srv_guard_read_done(conn);              /* the head and body are in */
	if ((r->route->flags & (SRV_R_BODY | SRV_R_UPLOAD)) && parse_body(r) != 0)
		return send_reply(r);
	if ((r->route->flags & SRV_R_QUERY) && api_models_resolve(r) != 0)
		return send_reply(r);
	if (atomic_load(&s->stopping) && (r->route->flags & SRV_R_POOL)) {
		srv_reply_problem(r, 503, "shutting-down", "Shutting down", NULL, "the server is stopping");
		return send_reply(r);
	}
	if (r->route->flags & SRV_R_POOL)
		return dispatch_to_pool(r);
	if ((r->route->flags & SRV_R_DB) && s->readers != NULL)
		return dispatch_to(r, s->readers, run_read);
	r->route->handler(r);
	if (r->status == 0)                     /* the handler asked for a worker */
		return dispatch_to_pool(r);
	return send_reply(r);
}

void
srv_client_addr(struct MHD_Connection *conn, char *out, size_t cap)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	snprintf(out, cap, "-");
	if (ci == NULL || ci->client_addr == NULL)
		return;
	if (ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr, out,
		    (socklen_t)cap);
	else if (ci->client_addr->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)ci->client_addr)->sin6_addr, out,
		    (socklen_t)cap);
}

/* One access-log line: time, client, "METHOD PATH", status, duration. */
static void
access_line(struct srv *s, const char *addr, const char *method, const char *raw_path, int status, double seconds,
    int cache_hit)
{
	char stamp[64], path[512];

	if (s->access_log == NULL)
		return;
	srv_utc_stamp(stamp, sizeof stamp);
	srv_text_clean(raw_path, path, sizeof path);    /* no forged lines, no raw bytes */
	pthread_mutex_lock(&s->log_lock);
	fprintf(s->access_log, "%s %s \"%s %s\" %d %.3fms%s\n", stamp, addr, method, path, status, seconds * 1e3,
	    cache_hit == 1 ? " cache=hit" : "");
	pthread_mutex_unlock(&s->log_lock);
}

static void
access_log(struct srv_request *r)
{
	char addr[64];

	if (r->srv->access_log == NULL)
		return;
	srv_client_addr(r->conn, addr, sizeof addr);
	access_line(r->srv, addr, r->method, r->path ? r->path : "-", r->status, srv_now() - r->t_start,
	    r->cache_hit);
}

void
srv_http_timed_out(void *cls, const struct srv_guard_timeout *t)
{
	struct srv *s = cls;
	int route = t->route >= 0 ? t->route : strcmp(t->path, "-") != 0 ? srv_route_of_path(t->path) : -1;

	srv_metrics_request(s->metrics, route, 408, t->seconds);
	access_line(s, t->addr, t->method, t->path, 408, t->seconds, -1);
}

static void
request_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct srv *s = cls;
	struct srv_request *r = *con_cls;

	(void)toe;
	srv_guard_answered(conn);               /* a next request's deadline starts */
	if (r == NULL)
		return;
	if (r->status != 0) {
		count_request(r);
		access_log(r);
	}
	if (r->stream != NULL)
		MHD_destroy_response(r->stream);
	if (r->handoff_free != NULL)
		r->handoff_free(r->handoff);
	json_decref(r->json);
	buffer_give(s, r->body_len);
	free(r->body);
	free(r->resp);
	free(r->path);
	free(r);
	*con_cls = NULL;
	atomic_fetch_sub(&s->inflight, 1);
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof line, fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	srv_log("libmicrohttpd: %s", line);
}

int
srv_http_start(struct srv *s, struct dn_error *err)
{
	struct sockaddr_in a4;
	struct sockaddr_in6 a6;
	struct sockaddr *addr;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
	    MHD_USE_ERROR_LOG | MHD_USE_TURBO;

	memset(&a4, 0, sizeof a4);
	memset(&a6, 0, sizeof a6);
	if (inet_pton(AF_INET, s->cfg.host, &a4.sin_addr) == 1) {
		a4.sin_family = AF_INET;
		a4.sin_port = htons((uint16_t)s->cfg.port);
		addr = (struct sockaddr *)&a4;
	} else if (inet_pton(AF_INET6, s->cfg.host, &a6.sin6_addr) == 1) {
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons((uint16_t)s->cfg.port);
		addr = (struct sockaddr *)&a6;
		flags |= MHD_USE_IPv6;
	} else
		return dn_error_set(err, DN_EINVAL, "--listen", "\"%s\" is not an IPv4 or IPv6 address", s->cfg.host);
	{
		struct MHD_OptionItem opts[] = {
			{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL },
			{ MHD_OPTION_SOCK_ADDR, 0, addr },
			{ MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->cfg.max_connections, NULL },
			{ MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)s->cfg.max_per_ip, NULL },
			{ MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->cfg.connection_timeout, NULL },
			/* room for the longest request line srv_guard lets through and
			 * its parsed parameters; mapped lazily, so idle connections cost
			 * little of it */
			{ MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)SRV_CONNECTION_MEMORY, NULL },
			{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)request_completed, s },
			{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)srv_guard_notify, s->guard },
			{ MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_early, s },
			{ MHD_OPTION_END, 0, NULL },   /* the thread pool, when more than one */
			{ MHD_OPTION_END, 0, NULL },   /* the port's reuse, when asked */
			{ MHD_OPTION_END, 0, NULL },
		};
		size_t n = sizeof opts / sizeof opts[0] - 3;
		/* only what applies: a pool size of 0 or 1 draws a warning from
		 * libmicrohttpd ("Zero size ... is ignored") */
		if (s->cfg.http_threads > 1)
			opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_THREAD_POOL_SIZE, s->cfg.http_threads, NULL };
		/* the port is shared only when asked: libmicrohttpd's default
		 * (SO_REUSEADDR) lets a restart bind, not a second server */
		if (s->cfg.reuse_port)
			opts[n++] = (struct MHD_OptionItem){ MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL };
		/* the port argument is not used to bind (the address is) but names
		 * the port in libmicrohttpd's messages ("Failed to bind to port 0") */
		s->mhd = MHD_start_daemon(flags, (uint16_t)s->cfg.port, NULL, NULL, access_handler, s, MHD_OPTION_ARRAY,
		    opts, MHD_OPTION_END);
	}
	if (s->mhd == NULL)
		return dn_error_set(err, DN_EINVAL, "--listen", "cannot listen on %s:%d (in use, or not an address "
		    "of this machine)", s->cfg.host, s->cfg.port);
	if (s->cfg.port == 0) {
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
		if (di != NULL)
			s->cfg.port = di->port;
	}
	return 0;
}

void
srv_http_quiesce(struct srv *s)
{
	if (s->mhd != NULL)
		MHD_quiesce_daemon(s->mhd);
}

void
srv_http_stop(struct srv *s)
{
	if (s->mhd != NULL)
		MHD_stop_daemon(s->mhd);
	s->mhd = NULL;
}
