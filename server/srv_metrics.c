/*
 * srv_metrics.c - the service's counters and histograms, rendered in the
 * Prometheus text format (version 0.0.4) at GET /metrics: requests by route
 * and status, request latency by route, cache hits and misses, solver time
 * and timeouts, rejected (429) requests, the solver queue, the database.
 *
 * Invariants: every update is a relaxed atomic add (no lock on the request
 * path); a scrape reads each value once, so counters never go backwards but
 * a scrape is not a consistent snapshot across series.
 */
#include "srv.h"
#include "dn_grow.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* every status the service answers (a request timed out by the guard:
 * 408, reported by it with its route: srv_http_timed_out) */
static const int status_codes[] = { 200, 201, 202, 304, 308, 400, 401, 404, 405, 408, 409, 413, 414, 415, 422, 429, 431,
	500, 503 };
#define NSTATUS ((int)(sizeof status_codes / sizeof status_codes[0]) + 1)     /* + other */
static const double buckets[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30 };
#define NBUCKETS ((int)(sizeof buckets / sizeof buckets[0]))

struct histogram {
	atomic_uint_fast64_t le[NBUCKETS + 1];  /* per bucket (not cumulative); last: +Inf */
	atomic_uint_fast64_t count;
	atomic_uint_fast64_t sum_ns;
};

struct route_stats {
	atomic_uint_fast64_t by_status[NSTATUS];
	struct histogram latency;
};

struct srv_metrics {
	int nroutes;                            /* + 1: unmatched paths */
	struct route_stats *routes;
	atomic_uint_fast64_t cache_hits, cache_misses, rejected, timeouts;
	atomic_uint_fast64_t dropped_deadline, dropped_client, too_large;
	struct histogram solve;
};

struct srv_metrics *
srv_metrics_new(void)
{
	struct srv_metrics *m = calloc(1, sizeof *m);

	if (m == NULL)
		return NULL;
	m->nroutes = srv_route_count() + 1;
	m->routes = calloc((size_t)m->nroutes, sizeof *m->routes);
	if (m->routes == NULL) {
		free(m);
		return NULL;
	}
	return m;
}

void
srv_metrics_free(struct srv_metrics *m)
{
	if (m == NULL)
		return;
	free(m->routes);
	free(m);
}

static void
histogram_add(struct histogram *h, double seconds)
{
	int b = 0;

	while (b < NBUCKETS && seconds > buckets[b])
		b++;
	atomic_fetch_add_explicit(&h->le[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_ns, (uint64_t)(seconds * 1e9), memory_order_relaxed);
}

void
srv_metrics_request(struct srv_metrics *m, int route, int status, double seconds)
{
	int s = NSTATUS - 1;
	struct route_stats *rs;

	if (route < 0 || route >= m->nroutes)
		route = m->nroutes - 1;
	rs = &m->routes[route];
	for (int i = 0; i < NSTATUS - 1; i++)
		if (status_codes[i] == status)
			s = i;
	atomic_fetch_add_explicit(&rs->by_status[s], 1, memory_order_relaxed);
	histogram_add(&rs->latency, seconds);
}

void
srv_metrics_cache(struct srv_metrics *m, int hit)
{
	atomic_fetch_add_explicit(hit ? &m->cache_hits : &m->cache_misses, 1, memory_order_relaxed);
}

void
srv_metrics_solve(struct srv_metrics *m, double seconds, int timed_out)
{
	histogram_add(&m->solve, seconds);
	if (timed_out)
		atomic_fetch_add_explicit(&m->timeouts, 1, memory_order_relaxed);
}

void
srv_metrics_rejected(struct srv_metrics *m)
{
	atomic_fetch_add_explicit(&m->rejected, 1, memory_order_relaxed);
}

void
srv_metrics_dropped(struct srv_metrics *m, const char *reason)
{
	atomic_fetch_add_explicit(strcmp(reason, "deadline") == 0 ? &m->dropped_deadline : &m->dropped_client, 1,
	    memory_order_relaxed);
}

void
srv_metrics_too_large(struct srv_metrics *m)
{
	atomic_fetch_add_explicit(&m->too_large, 1, memory_order_relaxed);
}

/* A growing text buffer; on allocation failure it stops growing and the
 * render returns NULL. */
struct out {
	char *buf;
	size_t len, cap;
	int failed;
};

static void
out_printf(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		if (n < 0 || dn_grow(&o->buf, &o->cap, o->len + (size_t)n + 256, 1) != 0) {
			o->failed = 1;
			return;
		}
	}
}

static uint64_t
load(atomic_uint_fast64_t *x)
{
	return atomic_load_explicit(x, memory_order_relaxed);
}

static void
histogram_print(struct out *o, const char *name, const char *labels, struct histogram *h)
{
	uint64_t cum = 0;

	for (int b = 0; b <= NBUCKETS; b++) {
		cum += load(&h->le[b]);
		if (b < NBUCKETS)
			out_printf(o, "%s_bucket{%s%sle=\"%g\"} %llu\n", name, labels, labels[0] ? "," : "", buckets[b],
			    (unsigned long long)cum);
		else
			out_printf(o, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels, labels[0] ? "," : "",
			    (unsigned long long)cum);
	}
	out_printf(o, "%s_sum%s%s%s %.6f\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
	    (double)load(&h->sum_ns) / 1e9);
	out_printf(o, "%s_count%s%s%s %llu\n", name, labels[0] ? "{" : "", labels, labels[0] ? "}" : "",
	    (unsigned long long)load(&h->count));
}

/* One series without labels, with its HELP and TYPE lines. */
static void
scalar_print(struct out *o, const char *name, const char *type, const char *help, unsigned long long v)
{
	out_printf(o, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, v);
}

static const char *
route_label(struct srv_metrics *m, int i)
{
	return i < m->nroutes - 1 ? srv_route_at(i)->name : "unmatched";
}

char *
srv_metrics_render(struct srv *s, size_t *len)
{
	struct srv_metrics *m = s->metrics;
	struct out o = { NULL, 0, 0, 0 };
	struct cache_stats cs;
	int waiting = 0, running = 0;
	char detail[256];
	const char *state;

	out_printf(&o, "# HELP dnnsat_build_info The running version and cost model.\n"
	    "# TYPE dnnsat_build_info gauge\ndnnsat_build_info{version=\"%s\",cost_model=\"%s\"} 1\n",
	    PACKAGE_VERSION, CM_VERSION);
	out_printf(&o, "# HELP dnnsat_uptime_seconds Seconds since the server started.\n"
	    "# TYPE dnnsat_uptime_seconds gauge\ndnnsat_uptime_seconds %.3f\n", srv_now() - s->started);
	out_printf(&o, "# HELP dnnsat_http_requests_total HTTP requests answered, by route and status.\n"
	    "# TYPE dnnsat_http_requests_total counter\n");
	for (int i = 0; i < m->nroutes; i++)
		for (int k = 0; k < NSTATUS; k++) {
			uint64_t v = load(&m->routes[i].by_status[k]);
			if (v == 0)
				continue;
			if (k < NSTATUS - 1)
				out_printf(&o, "dnnsat_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
				    route_label(m, i), status_codes[k], (unsigned long long)v);
			else
				out_printf(&o, "dnnsat_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
				    route_label(m, i), (unsigned long long)v);
		}
	out_printf(&o, "# HELP dnnsat_http_request_duration_seconds Time from the request's first byte "
	    "to its response being queued, by route.\n# TYPE dnnsat_http_request_duration_seconds histogram\n");
	for (int i = 0; i < m->nroutes; i++) {
		char labels[96];
		if (load(&m->routes[i].latency.count) == 0)
			continue;
		snprintf(labels, sizeof labels, "route=\"%s\"", route_label(m, i));
		histogram_print(&o, "dnnsat_http_request_duration_seconds", labels, &m->routes[i].latency);
	}
	scalar_print(&o, "dnnsat_cache_hits_total", "counter", "Requests answered from the result cache.",
	    load(&m->cache_hits));
	scalar_print(&o, "dnnsat_cache_misses_total", "counter", "Requests the result cache could not answer.",
	    load(&m->cache_misses));
	cache_get_stats(s->cache, &cs);
	scalar_print(&o, "dnnsat_cache_backend_errors_total", "counter",
	    "Cache operations that failed (database down).", cs.errors);
	scalar_print(&o, "dnnsat_cache_entries", "gauge",
	    "Entries in the result cache (PostgreSQL: counted at most every 5 s).", cs.entries);
	scalar_print(&o, "dnnsat_buffered_bytes", "gauge", "Bytes of request bodies and large answers held by all "
	    "connections (bounded by --max-buffered).", (unsigned long long)atomic_load(&s->buffered));
	state = cache_state(s->cache, 0, detail, sizeof detail);
	if (strcmp(state, "memory") != 0)
		scalar_print(&o, "dnnsat_database_up", "gauge", "1 when PostgreSQL answers.", strcmp(state, "ok") == 0);
	out_printf(&o, "# HELP dnnsat_solver_seconds Time spent solving per request.\n"
	    "# TYPE dnnsat_solver_seconds histogram\n");
	histogram_print(&o, "dnnsat_solver_seconds", "", &m->solve);
	scalar_print(&o, "dnnsat_solver_timeouts_total", "counter", "Solver runs stopped by a deadline.",
	    load(&m->timeouts));
	scalar_print(&o, "dnnsat_rejected_total", "counter", "Requests refused because the solver queue was full.",
	    load(&m->rejected));
	out_printf(&o, "# HELP dnnsat_jobs_dropped_total Queued solver jobs dropped before they ran: their "
	    "deadline passed in the queue, or their client had gone.\n# TYPE dnnsat_jobs_dropped_total counter\n"
	    "dnnsat_jobs_dropped_total{reason=\"deadline\"} %llu\ndnnsat_jobs_dropped_total{reason=\"client_gone\"} %llu\n",
	    (unsigned long long)load(&m->dropped_deadline), (unsigned long long)load(&m->dropped_client));
	scalar_print(&o, "dnnsat_query_too_large_total", "counter",
	    "Queries refused because their compiled form exceeds --max-query-bytes or --registry-bytes.",
	    load(&m->too_large));
	scalar_print(&o, "dnnsat_cache_corrupt_total", "counter",
	    "Cached results that failed their checksum or answered another request: dropped and recomputed.",
	    cs.corrupt);
	scalar_print(&o, "dnnsat_cache_writeback_pending", "gauge",
	    "Results computed while the database was down, waiting to be written back.", cs.wb_pending);
	scalar_print(&o, "dnnsat_cache_writeback_written_total", "counter",
	    "Results written back to the database after an outage.", cs.wb_written);
	scalar_print(&o, "dnnsat_cache_writeback_dropped_total", "counter",
	    "Results dropped from the full write-back queue (oldest first).", cs.wb_dropped);
	scalar_print(&o, "dnnsat_request_timeouts_total", "counter", "Connections closed with a 408 because their "
	    "request was not sent within --request-timeout.", (unsigned long long)srv_guard_reaped(s->guard));
	if (s->pool != NULL)
		srv_pool_load(s->pool, &waiting, &running);
	out_printf(&o, "# HELP dnnsat_solver_jobs Solver jobs waiting and running.\n"
	    "# TYPE dnnsat_solver_jobs gauge\ndnnsat_solver_jobs{state=\"waiting\"} %d\n"
	    "dnnsat_solver_jobs{state=\"running\"} %d\n", waiting, running);
	if (o.failed) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}
