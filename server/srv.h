/*
 * srv.h - the daemon's internal types, shared by the server's files:
 *   srv_main.c      the process: settings, signals
 *   srv_start.c     bringing the server up and down cleanly
 *   srv_config.c    flags and DNNSAT_* environment variables
 *   srv_http.c      libmicrohttpd glue: bodies, limits, auth, dispatch,
 *                   suspend/resume around the worker pool, access log
 *   srv_guard.c     slow, idle and oversized clients: the request
 *                   deadline, the request line's limits
 *   srv_route.c     the route table: method + path -> handler, 404/405
 *   srv_reply.c     responses: JSON, text, files, problem+json errors
 *   srv_pool.c      the bounded pools of workers: solver workers, and the
 *                   database readers (PostgreSQL cache reads, off the HTTP
 *                   threads)
 *   srv_job.c       a queued job's checks and deadline before it runs
 *   srv_metrics.c   counters and histograms in Prometheus text format
 *   srv_registry.c  compiled queries kept in memory by reduction id
 *   srv_dist.c      the distributed count: cutting a long count into jobs in
 *                   PostgreSQL, claiming and counting them on idle workers
 *   api_*.c         one file per group of endpoints (api_models.c: uploaded
 *                   models, and the {"id"} of a query's model)
 * A request's memory (struct srv_request) lives from the first call of the
 * access handler until libmicrohttpd's completion callback frees it.
 */
#ifndef DN_SRV_H
#define DN_SRV_H

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cache.h"
#include "costmodel.h"
#include "dn_error.h"

struct srv_config {
	char host[64];
	int port;
	char *database_url;             /* NULL: in-memory cache */
	int workers;                    /* solver threads */
	int count_threads;              /* threads one count may use (idle workers lent, srv_pool_lend) */
	int http_threads;
	int max_queue;                  /* solver jobs waiting beyond the workers */
	double deadline, max_deadline;  /* seconds */
	double max_compute;             /* seconds one reduction may compute in all */
	size_t max_body;
	size_t max_model_bytes;         /* an ONNX body of POST /v1/models */
	size_t max_buffered;            /* request bodies and answers held at once, all connections */
	double max_space;               /* configurations a listing may walk */
	unsigned max_connections, connection_timeout;
	unsigned max_per_ip;            /* connections from one client address */
	double request_timeout;         /* seconds for a request's head and body */
	int reuse_port;                 /* share the port (SO_REUSEPORT) */
	size_t cache_bytes;
	int registry_size;              /* compiled queries kept in memory */
	double progress_interval;       /* seconds of counting between progress saves */
	double compile_grace;           /* seconds from a request's first byte that building and compiling may use at least */
	size_t max_query_bytes;         /* one compiled query's memory, else 413 (0: none) */
	size_t registry_bytes;          /* all kept compiled queries' memory (0: none) */
	int db_pool;
	int distribute;                 /* cut long counts into jobs in PostgreSQL (srv_dist.c) */
	int distribute_jobs;            /* at least this many jobs per cut count */
	double job_lease;               /* seconds a claimed job stays claimed without renewal */
	double job_keep_finished;       /* seconds a finished job set's record is kept (the sweep) */
	double job_abandoned;           /* seconds untouched before an unfinished set is swept */
	char *token_file;
	char *access_log;               /* "-" stderr, "off", or a file */
};

/* Reads DNNSAT_* variables, then flags (flags win). 0, 1 for --help or
 * --version (printed), -1 with err naming the flag. */
int srv_config_parse(int argc, char **argv, struct srv_config *c, struct dn_error *err);
void srv_config_free(struct srv_config *c);
/* 1 when the server would listen beyond loopback (0.0.0.0, ::, a
 * network address) without a token file: srv_start logs a warning. */
int srv_config_exposed(const struct srv_config *c);

struct srv_pool;
struct srv_registry;
struct srv_metrics;
struct srv_guard;
struct srv_dist;
struct srv_ready;

struct srv {
	struct srv_config cfg;
	struct MHD_Daemon *mhd;
	struct cache *cache;
	struct srv_pool *pool;
	/* the database readers: --db-pool threads that run SRV_R_DB routes
	 * with a PostgreSQL cache (NULL with the in-memory cache) */
	struct srv_pool *readers;
	struct srv_registry *registry;
	struct srv_metrics *metrics;
	struct srv_guard *guard;
	struct srv_dist *dist;          /* --distribute: the job claimers (srv_dist.c), else NULL */
	struct srv_ready *ready;        /* with PostgreSQL: the database prober (srv_ready.c) */
	struct cm_device_catalog catalog;
	json_t *templates;              /* GET /v1/templates body, built at start */
	char **tokens;                  /* bearer tokens, NULL-terminated; NULL: no auth */
	FILE *access_log;
	pthread_mutex_t log_lock;
	atomic_int stopping;
	atomic_int inflight;            /* requests between first call and completion */
	atomic_size_t buffered;         /* bytes of bodies and answers held (--max-buffered) */
	double started;
};

enum srv_route_flags {
	SRV_R_BODY = 1,         /* takes a JSON body */
	SRV_R_POOL = 2,         /* runs on a solver worker */
	SRV_R_PUBLIC = 4,       /* no token needed (health checks) */
	SRV_R_UPLOAD = 8,       /* a JSON body (--max-body) or an ONNX file (--max-model-bytes,
	                         * kept raw in body/body_len, r->json NULL); query parameter
	                         * "dim" may repeat */
	SRV_R_QUERY = 16,       /* the body is a query: a "model": {"id": ...} is replaced by the
	                         * stored model before the handler runs (api_models_resolve) */
	SRV_R_DB = 32,          /* reads the result cache first: with PostgreSQL the handler runs on
	                         * a database reader (the connection suspended), never blocking an
	                         * HTTP thread on a query; when it asks for a solver worker
	                         * (status 0) the request moves on to the solver pool */
};

struct srv_request;
typedef void (*srv_handler)(struct srv_request *r);

/* What a handler says of its answer to a GET (or HEAD), for caches
 * (srv_http.c send_reply); other methods' answers get no such headers. */
enum srv_cache_control {
	SRV_CACHE_UNSAID = 0,   /* no Cache-Control, no ETag */
	SRV_CACHE_IMMUTABLE,    /* a 200 that never changes (a finished reduction, seeded uniform
	                         * samples): ETag (a hash of the body), Cache-Control: max-age=31536000,
	                         * immutable; If-None-Match with that tag: 304 without a body */
	SRV_CACHE_NO_STORE,     /* changes as a count goes on: Cache-Control: no-store */
	SRV_CACHE_REVALIDATE,   /* a 200 that changes only with the server's own files (the
	                         * dashboard, schemas, templates, the device catalog): ETag,
	                         * Cache-Control: no-cache (kept, asked again before each use);
	                         * If-None-Match with that tag: 304 without a body */
};

struct srv_route {
	const char *method;
	const char *pattern;    /* "/v1/reductions/{}/samples"; "/schemas/(star)" matches the rest */
	srv_handler handler;
	int flags;
	const char *name;       /* metrics label */
	const char *params;     /* the query parameters it takes, space-separated
	                         * ("limit offset cursor"); NULL: any (a
	                         * configuration as query parameters, the pages) */
};

/* The route of a method and path: the matching route, NULL with *status
 * 404 (no such path) or 405 (other methods; `allow` lists them). Path
 * parameters ({} and *) are copied into params[0..1]. */
const struct srv_route *srv_route_find(const char *method, const char *path, int *status,
    char *allow, size_t allow_len, char params[2][256]);
int srv_route_count(void);
/* The index of the one route whose pattern matches `path` whatever the
 * method, or -1 (none, or several: the method would decide). */
int srv_route_of_path(const char *path);
const struct srv_route *srv_route_at(int i);

struct srv_request {
	struct srv *srv;
	struct MHD_Connection *conn;
	const struct srv_route *route;
	char method[16];
	char *path;
	char params[2][256];
	char *body;
	size_t body_len, body_cap;      /* body_len bytes are counted in srv.buffered */
	int body_too_large;
	int body_over_budget;           /* --max-buffered was reached: the body was dropped */
	size_t body_limit;              /* bytes the body may have (set from the route and content type) */
	int body_raw;                   /* an SRV_R_UPLOAD body that is not JSON: not parsed */
	json_t *json;                   /* the parsed body, when the route takes one */
	double t_start;
	/* the response, filled by the handler */
	int status;
	char *resp;                     /* owned; freed after sending */
	size_t resp_len;
	const char *content_type;
	struct MHD_Response *stream;    /* a prepared streaming response instead of resp */
	char location[160];
	char allow[64];
	int retry_after;                /* seconds, 0: no header */
	int cache_hit;                  /* -1 none, 0 miss, 1 hit (metrics and X-Cache) */
	int www_authenticate;           /* a 401: say which scheme */
	int authenticated;              /* a valid bearer token came with it */
	int encoded_nul;                /* the raw URI holds %00 */
	int close_connection;           /* answer with Connection: close (the framing cannot be trusted) */
	int cache_control;              /* SRV_CACHE_*: what caches may do with a GET's answer */
	/* dispatch */
	int phase;                      /* 0 headers, 1 body, 2 queued to a worker, 3 answered */
	int suspended;
	int in_worker;                  /* the handler runs on a solver worker (not on a reader) */
	int counted;                    /* in the metrics already */
	/* what a handler's HTTP-thread half found, for its worker half: freed
	 * with handoff_free when the request ends */
	void *handoff;
	void (*handoff_free)(void *handoff);
};

/* Brings the server up from s->cfg (srv_start.c); 0 or -1 with err.
 * srv_stop shuts it down and frees it (also after a failed start). */
int srv_start(struct srv *s, struct dn_error *err);
void srv_stop(struct srv *s);

/* ---- replies (srv_reply.c): each sets r->status and the body ---- */
void srv_reply_json(struct srv_request *r, int status, json_t *body);   /* steals body */
void srv_reply_text(struct srv_request *r, int status, const char *ctype, const char *text, size_t len);
/* A body already malloc'd (the request owns it from here; ctype static). */
void srv_reply_owned(struct srv_request *r, int status, const char *ctype, char *body, size_t len);
/* problem+json: `path` is the JSON path or parameter to blame (may be NULL). */
void srv_reply_problem(struct srv_request *r, int status, const char *slug, const char *title,
    const char *path, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Copies text that came from a client, replacing control characters and
 * bytes that are not UTF-8 with '?': for JSON strings and log lines. */
void srv_text_clean(const char *in, char *out, size_t cap);
/* An error from costmodel/solver: DN_EINVAL/ENOENT/ERANGE -> 422,
 * DN_ETIMEOUT -> 503 with Retry-After, DN_ENOMEM -> 503, else 500. The
 * path is prefixed with `prefix` ("$" for bodies) when it is relative. */
void srv_reply_error(struct srv_request *r, const struct dn_error *err);
/* A query-string parameter, or NULL. */
const char *srv_query_arg(struct srv_request *r, const char *name);
/* The connection's client address as text ("-" when unknown). */
void srv_client_addr(struct MHD_Connection *conn, char *out, size_t cap);

/* ---- the database prober (srv_ready.c) ---- */
/* Starts a thread that pings the database every second and logs each
 * change of its state, so that GET /readyz reads the cache's state without
 * waiting on the database; NULL when out of memory or no thread could
 * start. srv_ready_free stops it (after the ping in flight, which the
 * cache bounds) and takes NULL. */
struct srv_ready *srv_ready_new(struct srv *s);
void srv_ready_free(struct srv_ready *p);

/* ---- the connection guard (srv_guard.c) ---- */
/* What one connection's libmicrohttpd memory (SRV_CONNECTION_MEMORY) must
 * hold: the request line (a parsed query parameter costs about 64 bytes
 * more than its text), the header fields, the answer's head. The limits
 * below keep every request that passes them inside it: 32 KiB + 512 * 64
 * + 16 KiB leaves 48 KiB free. Larger pools are touched in full on
 * every keep-alive request, so they cost resident memory per connection. */
#define SRV_MAX_URI 32768               /* bytes of a request's URI */
#define SRV_MAX_QUERY_PARAMS 512        /* query parameters: use a POST body beyond */
#define SRV_MAX_HEADERS 16384           /* bytes of a request's header fields */
#define SRV_CONNECTION_MEMORY ((size_t)128 << 10)      /* libmicrohttpd's pool per connection */
/* A request the guard answered 408 (libmicrohttpd never sees that
 * answer): what is known of it. */
struct srv_guard_timeout {
	const char *addr;       /* the client's address, "-" unknown */
	const char *method;     /* "-" when the head had not arrived */
	const char *path;       /* "-" when the request line had not arrived (control bytes replaced) */
	int route;              /* the route's index once the head arrived, else -1 */
	double seconds;         /* since the request's start */
};
typedef void (*srv_guard_report)(void *cls, const struct srv_guard_timeout *t);
/* Starts the reaper of requests not sent within request_timeout seconds;
 * `report` (may be NULL) is told of each 408 it writes, from the reaper's
 * thread. NULL when out of memory. srv_guard_free stops it (after
 * libmicrohttpd). */
struct srv_guard *srv_guard_new(double request_timeout, srv_guard_report report, void *cls);
void srv_guard_free(struct srv_guard *g);
/* Connections ended by the request deadline so far; of them, those that
 * were answered 408 (the others were idle keep-alive connections, shut down
 * without an answer). */
unsigned srv_guard_reaped(struct srv_guard *g);
unsigned srv_guard_refused(struct srv_guard *g);
/* MHD_OPTION_NOTIFY_CONNECTION's callback (cls: the guard). */
void srv_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
    enum MHD_ConnectionNotificationCode code);
/* The head of the connection's current request has arrived: its method,
 * path and route index (-1: none), for the report of a 408 while its body
 * is read. */
void srv_guard_head(struct MHD_Connection *conn, const char *method, const char *path, int route);
/* The request's head and body have arrived: its deadline no longer runs. */
void srv_guard_read_done(struct MHD_Connection *conn);
/* The request was answered: the next request's deadline starts now. */
void srv_guard_answered(struct MHD_Connection *conn);
/* Checks a request line's URI against SRV_MAX_URI and
 * SRV_MAX_QUERY_PARAMS: 0, or -1 when it is over (marked SRV_URI_REFUSED:
 * the access handler answers 414). It writes nothing to the socket. What it
 * found stays on the connection for srv_guard_uri_flags. */
int srv_guard_uri(struct srv_guard *g, struct MHD_Connection *conn, const char *uri);
enum {
	SRV_URI_REFUSED = 1,    /* over SRV_MAX_URI or SRV_MAX_QUERY_PARAMS: answer 414 */
	SRV_URI_NUL = 2,        /* the raw URI holds %00 */
	SRV_URI_NUL_PATH = 4,   /* ... in its path (before any '?') */
};
/* What srv_guard_uri found for the connection's current request. */
int srv_guard_uri_flags(struct MHD_Connection *conn);
/* Writes a whole problem+json answer straight to socket fd and shuts it
 * down; 0, or -1 when the answer could not be written at once. */
int srv_guard_refuse(int fd, int status, const char *slug, const char *title, const char *detail);

/* ---- the worker pool (srv_pool.c) ---- */
struct srv_pool *srv_pool_new(int workers, int max_queue);
/* Queues fn(arg) on a worker. 0, or -1 when the queue is full or the pool
 * is stopping (the caller answers 429 / 503). */
int srv_pool_submit(struct srv_pool *p, void (*fn)(void *), void *arg);
/* Called by a job about to hand its answer back (before resuming the
 * connection): its worker counts as free from now on, so the client's
 * next request is not refused for a worker that is only returning. */
void srv_pool_job_done(void);
/* Lends a running job up to `want` extra threads' worth of the pool's
 * idle workers (none waits, none is lent to another job): the number lent,
 * 0 to want, to give back with srv_pool_unlend. A job submitted meanwhile
 * still runs at once: the lender gives its threads back at its next slice. */
int srv_pool_lend(struct srv_pool *p, int want);
void srv_pool_unlend(struct srv_pool *p, int n);
/* The job running on this thread waits on other processes' work (a
 * distributed count it follows): its worker counts as idle, so that a
 * claimer may borrow it (srv_pool_lend), until srv_pool_idle_end. No-ops
 * off a pool's thread. */
void srv_pool_idle_begin(void);
void srv_pool_idle_end(void);
/* Jobs waiting and running, for metrics and 429 decisions. */
void srv_pool_load(struct srv_pool *p, int *waiting, int *running);
/* Stops taking jobs, runs `drop(arg)` for each still queued, waits for the
 * running ones, joins the threads and frees the pool. */
void srv_pool_free(struct srv_pool *p, void (*drop)(void *));

/* ---- a solver job's deadline (srv_job.c) ---- */
/* The request's timeout in seconds (?timeout=, else the body's "timeout",
 * else --deadline; capped by --max-deadline), -1 when malformed. */
double srv_request_timeout_value(struct srv_request *r);
/* The request's absolute deadline (srv_now clock): its first byte plus its
 * timeout (--deadline when malformed: the handler answers that). */
double srv_request_deadline(struct srv_request *r);
/* Before a job's handler runs on a worker: 0 to run it (the thread's
 * dn_deadline is set to the request's, at least --compile-grace seconds
 * from its first byte, stopped by shutdown too), or -1
 * with a 503 reply set when the client has gone or the deadline passed
 * while the job waited. srv_job_end clears the thread's deadline. */
int srv_job_begin(struct srv_request *r);
void srv_job_end(void);

/* ---- metrics (srv_metrics.c) ---- */
struct srv_metrics *srv_metrics_new(void);
void srv_metrics_free(struct srv_metrics *m);
void srv_metrics_request(struct srv_metrics *m, int route, int status, double seconds);
void srv_metrics_cache(struct srv_metrics *m, int hit);
void srv_metrics_solve(struct srv_metrics *m, double seconds, int timed_out);
void srv_metrics_rejected(struct srv_metrics *m);
/* A queued job dropped before it ran: reason "deadline" or "client_gone". */
void srv_metrics_dropped(struct srv_metrics *m, const char *reason);
/* A query refused for its compiled size (--max-query-bytes, --registry-bytes). */
void srv_metrics_too_large(struct srv_metrics *m);
/* The Prometheus text exposition (malloc'd). */
char *srv_metrics_render(struct srv *s, size_t *len);

/* ---- clock and log (srv_log.c) ---- */
/* Seconds on the monotonic clock (deadlines, durations, uptime). */
double srv_now(void);
/* Writes the wall-clock time as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC) into buf. */
void srv_utc_stamp(char *buf, size_t len);
/* Logs one line (UTC timestamp, "dnnsatd: " prefix) to stderr: state
 * changes, errors, the access log. Lines longer than 1 KiB are cut. */
void srv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the HTTP layer (srv_http.c) ---- */
int srv_http_start(struct srv *s, struct dn_error *err);
/* The guard's report of a 408 (srv_guard_report; cls: the server): one
 * access-log line and the request in the metrics, under the route of its
 * head, else the one route its path can name, else "unmatched". */
void srv_http_timed_out(void *cls, const struct srv_guard_timeout *t);
void srv_http_quiesce(struct srv *s);
void srv_http_stop(struct srv *s);

/* ---- handlers (api_*.c) ---- */
void api_dashboard(struct srv_request *r);
void api_web_file(struct srv_request *r);
void api_healthz(struct srv_request *r);
void api_readyz(struct srv_request *r);
void api_metrics(struct srv_request *r);
void api_openapi(struct srv_request *r);
void api_schema_file(struct srv_request *r);
void api_templates(struct srv_request *r);
void api_template_one(struct srv_request *r);
void api_devices(struct srv_request *r);
void api_estimate(struct srv_request *r);
void api_check(struct srv_request *r);
void api_reduction_create(struct srv_request *r);
void api_reduction_get(struct srv_request *r);
void api_reduction_check(struct srv_request *r);
void api_reduction_check_get(struct srv_request *r);
void api_reduction_configurations(struct srv_request *r);
void api_reduction_samples(struct srv_request *r);
void api_reduction_explain(struct srv_request *r);
void api_reduction_max(struct srv_request *r);
void api_reduction_min(struct srv_request *r);
void api_reduction_heatmap(struct srv_request *r);
void api_models_create(struct srv_request *r);
void api_models_get(struct srv_request *r);
/* A query body's "model": {"id": ID} (SRV_R_QUERY routes, on the HTTP
 * thread before the handler): replaced in r->json by the stored model
 * object, so the query (and its canonical form, the reduction id, the
 * stored request) is the one with the model inline. 0 to go on (nothing to
 * resolve, or resolved), -1 with a reply set: 422 naming $.model.id (an
 * unknown or malformed id, one failing its checksum), 503 when the
 * database is down. */
int api_models_resolve(struct srv_request *r);
struct srv_query;
/* The compiled query of reduction r->params[0]: from memory, else (on a
 * worker only) from the cache's stored request. NULL with a reply set, or
 * with r->status 0 when the caller must go to a worker first. */
struct srv_query *api_reduction_query(struct srv_request *r);
/* Builds s->templates at start. 0 or -1. */
int api_templates_load(struct srv *s, struct dn_error *err);

#endif
