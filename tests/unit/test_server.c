/*
 * test_server.c - the service's modules, one test case each: the route
 * table (404/405 and parameters), settings from flags and environment, the
 * canonical query id, the worker pool (every job run or dropped exactly
 * once, the queue bound), the JSON text writer, the registry (sharing,
 * eviction), a /check read from query-string pairs against the JSON form,
 * the metrics exposition, and the whole server in this process
 * (srv_start on a free port, real HTTP over a socket, srv_stop) for the
 * statuses of docs/api.md, and uploaded models (POST /v1/models, GET, and
 * queries by {"id"}).
 */
#include "test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "json_text.h"
#include "srv.h"
#include "srv_digest.h"
#include "srv_registry.h"

/* A path that route pattern p matches: "{}" as a segment, "*" as a file. */
static void
route_example(const char *p, char *out, size_t cap)
{
	size_t n = 0;

	for (; *p != '\0' && n + 16 < cap; p++) {
		if (p[0] == '{' && p[1] == '}') {
			memcpy(out + n, "seg0", 4);
			n += 4;
			p++;
		} else if (p[0] == '*') {
			memcpy(out + n, "a/b.json", 8);
			n += 8;
		} else
			out[n++] = *p;
	}
	out[n] = '\0';
}

START_TEST(test_routes)
{
	char allow[64], params[2][256];
	const struct srv_route *r;
	int status;

	r = srv_route_find("GET", "/healthz", &status, allow, sizeof allow, params);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->name, "healthz");
	r = srv_route_find("HEAD", "/v1/devices", &status, allow, sizeof allow, params);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->name, "devices");
	r = srv_route_find("GET", "/v1/reductions/0123abcd/samples", &status, allow, sizeof allow, params);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(r->name, "reductions_samples");
	ck_assert_str_eq(params[0], "0123abcd");
	r = srv_route_find("POST", "/v1/reductions/xyz/explain", &status, allow, sizeof allow, params);
	ck_assert_ptr_nonnull(r);
	ck_assert(r->flags & SRV_R_BODY);
	r = srv_route_find("GET", "/schemas/api/query.schema.json", &status, allow, sizeof allow, params);
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(params[0], "api/query.schema.json");
	/* 404: no such path; an empty id segment is no match */
	ck_assert_ptr_null(srv_route_find("GET", "/v2/devices", &status, allow, sizeof allow, params));
	ck_assert_int_eq(status, 404);
	ck_assert_ptr_null(srv_route_find("GET", "/v1/reductions//samples", &status, allow, sizeof allow, params));
	ck_assert_int_eq(status, 404);
	ck_assert_ptr_null(srv_route_find("GET", "/v1/devices/", &status, allow, sizeof allow, params));
	ck_assert_int_eq(status, 404);
	/* 405 with the methods that exist */
	ck_assert_ptr_null(srv_route_find("DELETE", "/v1/reductions", &status, allow, sizeof allow, params));
	ck_assert_int_eq(status, 405);
	ck_assert_str_eq(allow, "POST");
	ck_assert_ptr_null(srv_route_find("PUT", "/v1/reductions/ab/explain", &status, allow, sizeof allow, params));
	ck_assert_int_eq(status, 405);
	ck_assert_str_eq(allow, "GET, POST");
	/* a 300-character segment is not a parameter */
	{
		char path[400];
		memset(path, 'a', sizeof path);
		memcpy(path, "/v1/reductions/", 15);
		path[sizeof path - 1] = '\0';
		ck_assert_ptr_null(srv_route_find("GET", path, &status, allow, sizeof allow, params));
		ck_assert_int_eq(status, 404);
	}
	/* patterns of one method are disjoint, so the route a thread matched
	 * last (tried first) never hides another: each route's own path finds
	 * it after every other route was matched */
	for (int i = 0; i < srv_route_count(); i++) {
		char pi[300];
		const struct srv_route *ri = srv_route_at(i);
		route_example(ri->pattern, pi, sizeof pi);
		for (int j = 0; j < srv_route_count(); j++) {
			char pj[300];
			const struct srv_route *rj = srv_route_at(j);
			route_example(rj->pattern, pj, sizeof pj);
			ck_assert_ptr_eq(srv_route_find(rj->method, pj, &status, allow, sizeof allow, params), rj);
			r = srv_route_find(ri->method, pi, &status, allow, sizeof allow, params);
			ck_assert_msg(r == ri, "%s %s after %s %s: %s", ri->method, pi, rj->method, pj, r ? r->name : "none");
		}
	}
	/* every route has a metrics name and a handler */
	for (int i = 0; i < srv_route_count(); i++) {
		ck_assert_ptr_nonnull(srv_route_at(i)->handler);
		ck_assert(strlen(srv_route_at(i)->name) > 0);
	}
}
END_TEST

START_TEST(test_config)
{
	struct srv_config c;
	struct dn_error err;
	char *ok[] = { "dnnsatd", "--listen", "0.0.0.0:9000", "--workers=3", "--deadline", "2.5s", "--max-body",
		"2MiB", "--database-url", "postgresql://x@127.0.0.1/db", NULL };
	char *bad_port[] = { "dnnsatd", "--listen", "127.0.0.1:70000", NULL };
	char *bad_workers[] = { "dnnsatd", "--workers", "0", NULL };
	char *unknown[] = { "dnnsatd", "--frobnicate", "1", NULL };
	char *missing[] = { "dnnsatd", "--workers", NULL };
	char *help[] = { "dnnsatd", "--help", NULL };
	char *v6[] = { "dnnsatd", "--listen", "[::1]:8081", NULL };

	memset(&err, 0, sizeof err);
	unsetenv("DNNSAT_WORKERS");
	ck_assert_int_eq(srv_config_parse(10, ok, &c, &err), 0);
	ck_assert_str_eq(c.host, "0.0.0.0");
	ck_assert_int_eq(c.port, 9000);
	ck_assert_uint_eq(c.max_model_bytes, (size_t)64 << 20);        /* the default */
	ck_assert_int_eq(c.workers, 3);
	ck_assert(c.deadline == 2.5);
	ck_assert_uint_eq(c.max_body, 2u << 20);
	ck_assert_str_eq(c.database_url, "postgresql://x@127.0.0.1/db");
	srv_config_free(&c);
	/* the environment, and flags over it */
	setenv("DNNSAT_WORKERS", "5", 1);
	setenv("DNNSAT_MAX_QUEUE", "7", 1);
	ck_assert_int_eq(srv_config_parse(1, ok, &c, &err), 0);
	ck_assert_int_eq(c.workers, 5);
	ck_assert_int_eq(c.max_queue, 7);
	srv_config_free(&c);
	ck_assert_int_eq(srv_config_parse(10, ok, &c, &err), 0);
	ck_assert_int_eq(c.workers, 3);
	srv_config_free(&c);
	setenv("DNNSAT_WORKERS", "many", 1);
	ck_assert_int_eq(srv_config_parse(1, ok, &c, &err), -1);
	ck_assert_str_eq(err.path, "DNNSAT_WORKERS");
	srv_config_free(&c);
	unsetenv("DNNSAT_WORKERS");
	unsetenv("DNNSAT_MAX_QUEUE");
	/* errors name the flag */
	dn_error_clear(&err);
	ck_assert_int_eq(srv_config_parse(3, bad_port, &c, &err), -1);
	ck_assert_str_eq(err.path, "--listen");
	srv_config_free(&c);
	dn_error_clear(&err);
	ck_assert_int_eq(srv_config_parse(3, bad_workers, &c, &err), -1);
	ck_assert_str_eq(err.path, "--workers");
	ck_assert_ptr_nonnull(strstr(err.message, "from 1 to 256"));
	srv_config_free(&c);
	dn_error_clear(&err);
	ck_assert_int_eq(srv_config_parse(3, unknown, &c, &err), -1);
	ck_assert_str_eq(err.path, "--frobnicate");
	srv_config_free(&c);
	dn_error_clear(&err);
	ck_assert_int_eq(srv_config_parse(2, missing, &c, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "needs a value"));
	srv_config_free(&c);
	ck_assert_int_eq(srv_config_parse(2, help, &c, &err), 1);
	srv_config_free(&c);
	dn_error_clear(&err);
	ck_assert_int_eq(srv_config_parse(3, v6, &c, &err), 0);
	ck_assert_str_eq(c.host, "::1");
	ck_assert_int_eq(c.port, 8081);
	ck_assert_int_eq(c.distribute, 0);                 /* off by default */
	ck_assert(c.job_lease == 30 && c.distribute_jobs == 64);
	ck_assert(c.job_keep_finished == 3600 && c.job_abandoned == 86400);
	srv_config_free(&c);
	{
		/* the distributed count: its switch, the lease, and PostgreSQL required */
		char *dist[] = { "dnnsatd", "--distribute", "--job-lease", "3", "--distribute-jobs=12", "--database-url",
			"postgresql://x@127.0.0.1/db", NULL };
		char *nodb[] = { "dnnsatd", "--distribute", NULL };
		char *lease[] = { "dnnsatd", "--job-lease", "0.1", NULL };
		char *sweep[] = { "dnnsatd", "--job-keep-finished=600", "--job-abandoned", "7200", NULL };
		char *sweep_bad[] = { "dnnsatd", "--job-abandoned", "10", NULL };
		ck_assert_int_eq(srv_config_parse(7, dist, &c, &err), 0);
		ck_assert(c.distribute == 1 && c.job_lease == 3 && c.distribute_jobs == 12 && c.reuse_port == 0);
		srv_config_free(&c);
		dn_error_clear(&err);
		ck_assert_int_eq(srv_config_parse(2, nodb, &c, &err), -1);
		ck_assert_str_eq(err.path, "--distribute");
		ck_assert_ptr_nonnull(strstr(err.message, "needs --database-url"));
		srv_config_free(&c);
		dn_error_clear(&err);
		ck_assert_int_eq(srv_config_parse(3, lease, &c, &err), -1);
		ck_assert_str_eq(err.path, "--job-lease");
		srv_config_free(&c);
		dn_error_clear(&err);
		/* the sweep's ages */
		ck_assert_int_eq(srv_config_parse(4, sweep, &c, &err), 0);
		ck_assert(c.job_keep_finished == 600 && c.job_abandoned == 7200);
		srv_config_free(&c);
		ck_assert_int_eq(srv_config_parse(3, sweep_bad, &c, &err), -1);
		ck_assert_str_eq(err.path, "--job-abandoned");
		srv_config_free(&c);
		dn_error_clear(&err);
	}
	{
		/* the limits against slow and greedy clients; decimal numbers only */
		char *limits[] = { "dnnsatd", "--max-connections-per-ip", "16", "--request-timeout", "2.5s",
			"--reuse-port", "--max-connections=64", NULL };
		char *greedy[] = { "dnnsatd", "--max-connections", "64", "--max-connections-per-ip", "64", NULL };
		char *hex[] = { "dnnsatd", "--max-body", "0x10KiB", NULL };
		char *inf[] = { "dnnsatd", "--deadline", "inf", NULL };
		ck_assert_int_eq(srv_config_parse(7, limits, &c, &err), 0);
		ck_assert_uint_eq(c.max_per_ip, 16);
		ck_assert(c.request_timeout == 2.5);
		ck_assert_int_eq(c.reuse_port, 1);
		ck_assert_uint_eq(c.max_connections, 64);
		srv_config_free(&c);
		ck_assert_int_eq(srv_config_parse(1, limits, &c, &err), 0);
		ck_assert_int_eq(c.reuse_port, 0);             /* default: the port is not shared */
		ck_assert(c.request_timeout == 30);
		ck_assert_uint_lt(c.max_per_ip, c.max_connections);
		srv_config_free(&c);
		setenv("DNNSAT_REQUEST_TIMEOUT", "4", 1);
		setenv("DNNSAT_REUSE_PORT", "yes", 1);
		ck_assert_int_eq(srv_config_parse(1, limits, &c, &err), 0);
		ck_assert(c.request_timeout == 4);
		ck_assert_int_eq(c.reuse_port, 1);
		srv_config_free(&c);
		unsetenv("DNNSAT_REQUEST_TIMEOUT");
		unsetenv("DNNSAT_REUSE_PORT");
		dn_error_clear(&err);
		ck_assert_int_eq(srv_config_parse(5, greedy, &c, &err), -1);
		ck_assert_str_eq(err.path, "--max-connections-per-ip");
		srv_config_free(&c);
		dn_error_clear(&err);
		ck_assert_int_eq(srv_config_parse(3, hex, &c, &err), -1);
		ck_assert_str_eq(err.path, "--max-body");
		srv_config_free(&c);
		dn_error_clear(&err);
		ck_assert_int_eq(srv_config_parse(3, inf, &c, &err), -1);
		ck_assert_str_eq(err.path, "--deadline");
		srv_config_free(&c);
	}
	{
		/* beyond loopback without tokens: the start logs a warning */
		char *any[] = { "dnnsatd", "--listen", "0.0.0.0:0", NULL };
		char *any6[] = { "dnnsatd", "--listen", "[::]:0", NULL };
		char *local[] = { "dnnsatd", "--listen", "127.0.0.2:0", NULL };
		char *guarded[] = { "dnnsatd", "--listen", ":8080", "--token-file", "/etc/dnnsat/tokens", NULL };
		ck_assert_int_eq(srv_config_parse(3, any, &c, &err), 0);
		ck_assert_int_eq(srv_config_exposed(&c), 1);
		srv_config_free(&c);
		ck_assert_int_eq(srv_config_parse(3, any6, &c, &err), 0);
		ck_assert_int_eq(srv_config_exposed(&c), 1);
		srv_config_free(&c);
		ck_assert_int_eq(srv_config_parse(3, local, &c, &err), 0);
		ck_assert_int_eq(srv_config_exposed(&c), 0);
		srv_config_free(&c);
		ck_assert_int_eq(srv_config_parse(5, guarded, &c, &err), 0);
		ck_assert_int_eq(srv_config_exposed(&c), 0);
		srv_config_free(&c);
	}
}
END_TEST

START_TEST(test_canonical_id)
{
	json_t *a = json_loads("{\"model\":\"mlp\",\"space\":{\"hidden\":{\"_type\":\"choice\",\"_value\":[64,128]}},"
	    "\"budgets\":{\"memory\":\"1GiB\",\"params\":1e6}}", 0, NULL);
	json_t *b = json_loads("{\"budgets\":{\"params\":1e6,\"memory\":\"1GiB\"},\"timeout\":3,"
	    "\"space\":{\"hidden\":{\"_value\":[64,128],\"_type\":\"choice\"}},\"model\":\"mlp\",\"config\":{}}", 0, NULL);
	json_t *c = json_loads("{\"model\":\"mlp\",\"space\":{\"hidden\":{\"_type\":\"choice\",\"_value\":[64,128]}},"
	    "\"budgets\":{\"memory\":\"2GiB\",\"params\":1e6}}", 0, NULL);
	char ia[33], ib[33], ic[33], *text = NULL;
	json_t *ca, *cb, *cc;

	ca = srv_query_canonical(a, ia, &text);
	cb = srv_query_canonical(b, ib, NULL);
	cc = srv_query_canonical(c, ic, NULL);
	ck_assert_int_eq((int)strlen(ia), 32);
	ck_assert_str_eq(ia, ib);               /* key order, timeout and config do not matter */
	ck_assert_str_ne(ia, ic);               /* the budget does */
	ck_assert_ptr_null(json_object_get(cb, "timeout"));
	ck_assert_ptr_null(json_object_get(cb, "config"));
	ck_assert_ptr_nonnull(json_object_get(b, "timeout"));   /* the body itself is untouched */
	ck_assert_ptr_nonnull(strstr(text, "\"budgets\":{\"memory\":\"1GiB\""));
	for (int i = 0; i < 32; i++)
		ck_assert(strchr("0123456789abcdef", ia[i]) != NULL);
	ck_assert(srv_query_id_matches(text, ia));
	{
		/* the device catalog's digest: another catalog, another id (a
		 * stored answer never outlives the catalog it was computed with) */
		char i1[33], i2[33];
		json_t *c1, *c2;
		srv_query_id_salt("1111");
		c1 = srv_query_canonical(a, i1, NULL);
		srv_query_id_salt("2222");
		c2 = srv_query_canonical(a, i2, NULL);
		ck_assert_str_ne(i1, ia);
		ck_assert_str_ne(i1, i2);
		ck_assert(srv_query_id_matches(text, i2));
		ck_assert(!srv_query_id_matches(text, i1));
		ck_assert(!srv_query_id_matches(text, ia));
		json_decref(c1);
		json_decref(c2);
	}
	free(text);
	json_decref(ca);
	json_decref(cb);
	json_decref(cc);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}
END_TEST

static atomic_int ran, dropped;

static void
job_count(void *arg)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	(void)arg;
	nanosleep(&ts, NULL);
	atomic_fetch_add(&ran, 1);
}

static void
job_drop(void *arg)
{
	(void)arg;
	atomic_fetch_add(&dropped, 1);
}

START_TEST(test_pool)
{
	struct srv_pool *p = srv_pool_new(2, 4);
	int accepted = 0, waiting, running;

	ck_assert_ptr_nonnull(p);
	atomic_store(&ran, 0);
	atomic_store(&dropped, 0);
	/* 2 workers + 4 waiting: a burst of 50 is mostly refused, never lost */
	for (int i = 0; i < 50; i++)
		accepted += srv_pool_submit(p, job_count, NULL) == 0;
	ck_assert_int_ge(accepted, 6);
	ck_assert_int_lt(accepted, 50);
	srv_pool_load(p, &waiting, &running);
	ck_assert_int_le(waiting, 6);
	ck_assert_int_le(running, 2);
	srv_pool_free(p, job_drop);
	ck_assert_int_eq(atomic_load(&ran) + atomic_load(&dropped), accepted);
	/* all accepted jobs run when there is time */
	p = srv_pool_new(3, 1000);
	atomic_store(&ran, 0);
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(srv_pool_submit(p, job_count, NULL), 0);
	for (int i = 0; i < 2000 && atomic_load(&ran) < 200; i++) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	ck_assert_int_eq(atomic_load(&ran), 200);
	srv_pool_free(p, job_drop);
}
END_TEST

static uint64_t
pow10_i(int k)
{
	uint64_t p = 1;

	while (k-- > 0)
		p *= 10;
	return p;
}

START_TEST(test_json_text)
{
	struct jt w;
	char *text;
	json_t *j;
	json_error_t jerr;
	size_t len;

	jt_init(&w, 1);
	jt_lit(&w, "{");
	jt_key(&w, "s");
	jt_str(&w, "q\"b\\n\n\t\001\xc3\xa9");
	jt_lit(&w, ",\"min\":");
	jt_int(&w, INT64_MIN);
	jt_lit(&w, ",\"max\":");
	jt_int(&w, INT64_MAX);
	jt_lit(&w, ",\"zero\":");
	jt_int(&w, 0);
	jt_lit(&w, ",\"r\":[");
	jt_real(&w, 0.1);
	jt_lit(&w, ",");
	jt_real(&w, 6442450944.0);
	jt_lit(&w, ",");
	jt_real(&w, -2.5e-7);
	jt_lit(&w, ",");
	jt_real(&w, 1e300);
	jt_lit(&w, ",");
	jt_real(&w, 0.0 / 0.0);
	jt_lit(&w, "],\"b\":");
	jt_bool(&w, 1);
	jt_lit(&w, "}");
	text = jt_take(&w, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, strlen(text));
	j = json_loads(text, 0, &jerr);
	ck_assert_msg(j != NULL, "%s: %s", text, jerr.text);
	ck_assert_str_eq(json_string_value(json_object_get(j, "s")), "q\"b\\n\n\t\001\xc3\xa9");
	ck_assert(json_integer_value(json_object_get(j, "min")) == INT64_MIN);
	ck_assert(json_integer_value(json_object_get(j, "max")) == INT64_MAX);
	ck_assert(json_is_real(json_array_get(json_object_get(j, "r"), 1)));    /* 6442450944.0 stays a real */
	ck_assert(json_real_value(json_array_get(json_object_get(j, "r"), 0)) == 0.1);
	ck_assert(json_real_value(json_array_get(json_object_get(j, "r"), 1)) == 6442450944.0);
	ck_assert(json_real_value(json_array_get(json_object_get(j, "r"), 2)) == -2.5e-7);
	ck_assert(json_is_null(json_array_get(json_object_get(j, "r"), 4)));
	ck_assert(json_is_true(json_object_get(j, "b")));
	json_decref(j);
	free(text);
	/* integers of every length and sign, into a buffer with and without room: as printf */
	{
		uint64_t st = 0x5DEECE66DULL;
		for (int i = 0; i < 20000; i++) {
			int64_t v = (int64_t)(test_xorshift(&st) >> (test_xorshift(&st) % 64));
			char ref[32];
			if (i % 3 == 0)
				v = -v;
			if (i < 40)     /* the edges: 10^k - 1, 10^k */
				v = i < 19 ? (int64_t)pow10_i(i) - 1 : i < 38 ? (int64_t)pow10_i(i - 19) : i == 38 ? INT64_MIN : INT64_MAX;
			jt_init(&w, (size_t)(i % 24));
			jt_lit(&w, "x");
			jt_int(&w, v);
			text = jt_take(&w, NULL);
			ck_assert_ptr_nonnull(text);
			snprintf(ref, sizeof ref, "x%" PRId64, v);
			ck_assert_str_eq(text, ref);
			free(text);
		}
	}
	/* reals over 46 decades: within one unit of the 15th digit of %.15g */
	{
		uint64_t st = 88172645463325252ULL;
		for (int i = 0; i < 100000; i++) {
			double e = (double)(test_xorshift(&st) % 4600) / 100.0 - 23.0, v = pow(10, e), got;
			char ref[64];
			if (test_xorshift(&st) & 1)
				v = -v;
			jt_init(&w, 8);
			jt_real(&w, v);
			text = jt_take(&w, NULL);
			ck_assert_ptr_nonnull(text);
			got = strtod(text, NULL);
			snprintf(ref, sizeof ref, "%.15g", v);
			ck_assert_msg(fabs(got - strtod(ref, NULL)) <= 1.2e-14 * fabs(v), "%s vs %s", text, ref);
			ck_assert_msg(strpbrk(text, ".e") != NULL, "%s is not a real", text);
			free(text);
		}
	}
}
END_TEST

static struct cm_device_catalog cat;

static void
load_catalog(void)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(cm_catalog_load(src_path("schemas/devices.json"), &cat, &err) == 0, "%s", err.message);
}

static json_t *
mlp_query(int hidden_max)
{
	return json_pack("{s:s,s:{s:{s:s,s:[i,i,i]},s:{s:s,s:[i,i]}},s:{s:s}}", "model", "mlp", "space", "hidden",
	    "_type", "choice", "_value", 64, 128, hidden_max, "depth", "_type", "randint", "_value", 1, 4,
	    "budgets", "memory", "2GiB");
}

/* A /check from text pairs answers exactly what the JSON form answers, or
 * defers to it (1); the plain forms clients send never defer. */
static void
args_agree(struct fs_engine *e, union expr_val *scratch, const char **names, const char **values, int n,
    int must_read)
{
	json_t *config = json_object();
	struct dn_error err1, err2;
	char *text = NULL, *want;
	size_t len = 0, wlen = 0;
	int rc;

	for (int k = 0; k < n; k++)
		json_object_set_new(config, names[k], fs_text_value(values[k]));
	memset(&err1, 0, sizeof err1);
	memset(&err2, 0, sizeof err2);
	rc = ans_check_args_text(e, names, values, n, scratch, 1, 0, "id", &text, &len, &err1);
	want = ans_check_text(e, config, scratch, 1, 0, "id", &wlen, &err2);
	ck_assert_int_ge(rc, 0);
	if (must_read)
		ck_assert_int_eq(rc, 0);
	if (rc == 0) {
		ck_assert_msg(want != NULL, "text pairs read, the JSON form refused: %s", err2.message);
		ck_assert_str_eq(text, want);
		ck_assert_uint_eq(len, wlen);
	}
	free(text);
	free(want);
	json_decref(config);
}

START_TEST(test_check_args)
{
	static const char *spaces[] = {
		"{\"batch_size\": {\"_type\": \"choice\", \"_value\": [16, 32, 64]},"
		" \"hidden\": {\"_type\": \"quniform\", \"_value\": [64, 512, 64]},"
		" \"depth\": {\"_type\": \"randint\", \"_value\": [1, 5]},"
		" \"activation\": {\"_type\": \"choice\", \"_value\": [\"relu\", \"gelu\", \"tanh\"]},"
		" \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]}}",
		/* nested choices: always the JSON form */
		"{\"block\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"a\", \"depth\": {\"_type\": \"randint\","
		" \"_value\": [1, 3]}}, {\"_name\": \"b\"}]}, \"hidden\": {\"_type\": \"choice\", \"_value\": [64, 128]}}",
	};
	static const char *odd[] = { "064", " 64", "64.0", "6.4e1", "+64", "", "abc", "65", "64 ", "0x40", "1e999" };
	uint64_t rng = 7;
	int64_t ti;
	double td;

	/* numbers from text are decimal: no hexadecimal, inf, nan, spaces, or
	 * values beyond double's range turned into 0 or infinity */
	ck_assert_int_eq(fs_text_number("0x20", &ti, &td), 0);
	ck_assert_int_eq(fs_text_number("inf", &ti, &td), 0);
	ck_assert_int_eq(fs_text_number("nan", &ti, &td), 0);
	ck_assert_int_eq(fs_text_number("1e-400", &ti, &td), 0);
	ck_assert_int_eq(fs_text_number("1e400", &ti, &td), 0);
	ck_assert_int_eq(fs_text_number(" 5", &ti, &td), 0);
	ck_assert_int_eq(fs_text_number("99999999999999999999", &ti, &td), 2);  /* not clamped to INT64_MAX */
	ck_assert(td == 1e20);
	ck_assert_int_eq(fs_text_number("-12", &ti, &td), 1);
	ck_assert_int_eq(ti, -12);
	ck_assert_int_eq(fs_text_number("2.5e-3", &ti, &td), 2);
	ck_assert(td == 2.5e-3);

	load_catalog();
	for (int si = 0; si < 2; si++) {
		json_t *req = json_pack("{s:s,s:o,s:s,s:{s:s}}", "model", "mlp", "space", json_loads(spaces[si], 0, NULL),
		    "device", "a100-40gb", "budgets", "memory", "2GiB");
		struct sq_query q;
		struct fs_engine e;
		struct dn_error err;
		union expr_val *scratch;

		memset(&err, 0, sizeof err);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
		ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s", err.message);
		scratch = calloc((size_t)ans_scratch_len(&e), sizeof *scratch);
		for (int trial = 0; trial < 300; trial++) {
			char vals[5][32];
			const char *names[8] = { "batch_size", "hidden", "depth", "activation", "lr" };
			const char *values[8] = { vals[0], vals[1], vals[2], vals[3], vals[4] };
			int n = 5;
			snprintf(vals[0], sizeof vals[0], "%d", 16 << test_xorshift(&rng) % 3);
			snprintf(vals[1], sizeof vals[1], "%d", 64 * (int)(1 + test_xorshift(&rng) % 8));
			snprintf(vals[2], sizeof vals[2], "%d", (int)(1 + test_xorshift(&rng) % 4));
			snprintf(vals[3], sizeof vals[3], "%s", (const char *[]){ "relu", "gelu", "tanh" }[test_xorshift(&rng) % 3]);
			snprintf(vals[4], sizeof vals[4], "%.6f", 0.001 * (double)(1 + test_xorshift(&rng) % 50));
			if (si == 1) {
				names[0] = "hidden";
				values[0] = test_xorshift(&rng) % 2 ? "64" : "128";
				names[1] = "block";
				values[1] = "b";
				n = 2;
				args_agree(&e, scratch, names, values, n, 0);
				continue;
			}
			/* in the space's order, shuffled: the plain forms are read */
			args_agree(&e, scratch, names, values, n, 1);
			for (int k = n - 1; k > 0; k--) {
				int j = (int)(test_xorshift(&rng) % (uint64_t)(k + 1));
				const char *tn = names[k], *tv = values[k];
				names[k] = names[j];
				values[k] = values[j];
				names[j] = tn;
				values[j] = tv;
			}
			args_agree(&e, scratch, names, values, n, 1);
			/* an odd value, a missing, repeated or unknown name: read alike or deferred */
			switch (trial % 4) {
			case 0:
				values[test_xorshift(&rng) % (uint64_t)n] = odd[test_xorshift(&rng) % (sizeof odd / sizeof odd[0])];
				break;
			case 1:
				n--;
				break;
			case 2:
				names[n] = names[0];
				values[n++] = values[0];
				break;
			default:
				names[n] = "width";
				values[n++] = "3";
				break;
			}
			args_agree(&e, scratch, names, values, n, 0);
		}
		free(scratch);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
	}
	cm_catalog_free(&cat);
}
END_TEST

START_TEST(test_registry)
{
	struct srv_registry *reg;
	struct srv_query *a, *b, *held;
	struct dn_error err;
	char ids[4][33];
	json_t *q[4];

	load_catalog();
	memset(&err, 0, sizeof err);
	reg = srv_registry_new(&cat, 2);
	for (int i = 0; i < 4; i++) {
		json_t *raw = mlp_query(256 << i);
		q[i] = srv_query_canonical(raw, ids[i], NULL);
		json_decref(raw);
	}
	/* not in memory and no request: ENOENT */
	ck_assert_ptr_null(srv_registry_get(reg, ids[0], NULL, &err));
	ck_assert_int_eq(err.code, DN_ENOENT);
	dn_error_clear(&err);
	a = srv_registry_get(reg, ids[0], q[0], &err);
	ck_assert_msg(a != NULL, "%s", err.message);
	b = srv_registry_get(reg, ids[0], NULL, &err);
	ck_assert_ptr_eq(a, b);                 /* shared */
	srv_registry_release(reg, b);
	held = a;                               /* keep ids[0] referenced */
	/* two more fill and overflow a registry of 2: the held entry survives */
	for (int i = 1; i < 4; i++) {
		struct srv_query *x = srv_registry_get(reg, ids[i], q[i], &err);
		ck_assert_msg(x != NULL, "%s", err.message);
		srv_registry_release(reg, x);
	}
	b = srv_registry_get(reg, ids[0], NULL, &err);
	ck_assert_ptr_eq(b, held);
	srv_registry_release(reg, b);
	ck_assert_ptr_null(srv_registry_get(reg, ids[1], NULL, &err));    /* evicted (least recent) */
	b = srv_registry_get(reg, ids[3], NULL, &err);
	ck_assert_ptr_nonnull(b);
	srv_registry_release(reg, b);
	srv_registry_release(reg, held);
	/* a query that does not compile names its field */
	{
		json_t *bad = json_pack("{s:s,s:{s:{s:s,s:[i]}},s:s}", "model", "mlp", "space", "hidden", "_type",
		    "choice", "_value", 64, "device", "no-such-gpu");
		char id[33];
		json_t *cb = srv_query_canonical(bad, id, NULL);
		dn_error_clear(&err);
		ck_assert_ptr_null(srv_registry_get(reg, id, cb, &err));
		ck_assert_str_eq(err.path, "$.device");
		json_decref(cb);
		json_decref(bad);
	}
	for (int i = 0; i < 4; i++)
		json_decref(q[i]);
	srv_registry_free(reg);
	cm_catalog_free(&cat);
}
END_TEST


/* Item 5: compiled queries are accounted in bytes. A registry of room for
 * one mlp query evicts the other on the second compile, although its entry
 * count (8) would keep both; a query beyond the per-query cap is refused
 * with DN_ETOOBIG naming the flag. */
START_TEST(test_registry_bytes)
{
	struct srv_registry *reg;
	struct srv_query *a, *b;
	struct dn_error err;
	json_t *qa = mlp_query(512), *qb = mlp_query(1024), *ca, *cb;
	char ida[33], idb[33];
	size_t one;

	load_catalog();
	memset(&err, 0, sizeof err);
	ca = srv_query_canonical(qa, ida, NULL);
	cb = srv_query_canonical(qb, idb, NULL);
	reg = srv_registry_new(&cat, 8);
	a = srv_registry_get(reg, ida, ca, &err);
	ck_assert_msg(a != NULL, "%s", err.message);
	one = srv_query_bytes(a);
	ck_assert_uint_gt(one, 1000);
	srv_registry_release(reg, a);
	srv_registry_set_bytes(reg, 0, one + one / 2);
	b = srv_registry_get(reg, idb, cb, &err);
	ck_assert_msg(b != NULL, "%s", err.message);
	srv_registry_release(reg, b);
	ck_assert_ptr_null(srv_registry_get(reg, ida, NULL, &err));       /* evicted for room */
	b = srv_registry_get(reg, idb, NULL, &err);
	ck_assert_ptr_nonnull(b);
	srv_registry_release(reg, b);
	/* the per-query cap */
	srv_registry_set_bytes(reg, one / 2, 0);
	dn_error_clear(&err);
	ck_assert_ptr_null(srv_registry_get(reg, ida, ca, &err));
	ck_assert_int_eq(err.code, DN_ETOOBIG);
	ck_assert_msg(strstr(err.message, "--max-query-bytes") != NULL, "%s", err.message);
	srv_registry_free(reg);
	json_decref(ca);
	json_decref(cb);
	json_decref(qa);
	json_decref(qb);
	cm_catalog_free(&cat);
}
END_TEST

/* ---- the whole server in this process ---- */

static struct srv server;

/* Starts srv on a free port (or `listen`) with the test's settings and
 * `extra` flags (NULL-terminated, may be NULL); 0, or -1 with err. */
static int
server_start_on(struct srv *srv, const char *listen, const char *token_file, const char *const *extra,
    struct dn_error *err)
{
	char *argv[48] = { "test", "--listen", (char *)listen, "--access-log", "off", "--workers", "2",
		"--http-threads", "2", "--max-body", "4096", "--deadline", "5" };
	int argc = 13;

	if (token_file != NULL) {
		argv[argc++] = "--token-file";
		argv[argc++] = (char *)token_file;
	}
	for (int i = 0; extra != NULL && extra[i] != NULL && argc < 47; i++)
		argv[argc++] = (char *)extra[i];
	memset(srv, 0, sizeof *srv);
	memset(err, 0, sizeof *err);
	setenv("DNNSAT_DATA_DIR", src_path("schemas"), 1);
	setenv("DNNSAT_WEB_DIR", src_path("web"), 1);
	ck_assert_int_eq(srv_config_parse(argc, argv, &srv->cfg, err), 0);
	return srv_start(srv, err);
}

static void
server_start_with(const char *token_file, const char *const *extra)
{
	struct dn_error err;

	ck_assert_msg(server_start_on(&server, "127.0.0.1:0", token_file, extra, &err) == 0, "%s %s", err.path,
	    err.message);
	ck_assert_int_gt(server.cfg.port, 0);
}

static void
server_start(const char *token_file)
{
	server_start_with(token_file, NULL);
}

/* A socket connected to the server. */
static int
connect_server(void)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)server.cfg.port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
	return fd;
}

/* One request with a body of `len` bytes (any bytes) on a fresh
 * connection; returns the status, the response in buf (headers and body). */
static int
http_bytes(const char *method, const char *path, const char *ctype, const void *body, size_t len,
    const char *extra, char *buf, size_t cap)
{
	struct timeval tv = { 30, 0 };
	char head[1024];
	size_t got = 0;
	int fd = connect_server(), n;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s%s%s%s"
	    "Content-Length: %zu\r\n\r\n", method, path, ctype ? "Content-Type: " : "", ctype ? ctype : "",
	    ctype ? "\r\n" : "", extra ? extra : "", len);
	ck_assert_int_eq(send(fd, head, (size_t)n, MSG_NOSIGNAL), n);
	if (len > 0)
		(void)send(fd, body, len, MSG_NOSIGNAL);
	for (;;) {
		ssize_t k = recv(fd, buf + got, cap - 1 - got, 0);
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == cap - 1)
			break;
	}
	close(fd);
	buf[got] = '\0';
	ck_assert_msg(strncmp(buf, "HTTP/1.1 ", 9) == 0, "no response to %s %s", method, path);
	return atoi(buf + 9);
}

/* http_bytes with a text body (or none). */
static int
http(const char *method, const char *path, const char *ctype, const char *body, const char *extra, char *buf,
    size_t cap)
{
	return http_bytes(method, path, ctype, body, body ? strlen(body) : 0, extra, buf, cap);
}

static const char *
body_of(const char *resp)
{
	const char *b = strstr(resp, "\r\n\r\n");

	return b ? b + 4 : "";
}

/* POSTs query q (stolen) as a reduction, expects `status`, gives its
 * id, and returns the answer (the caller's). */
static json_t *
post_reduction_answer(json_t *q, int status, char id[33])
{
	static char buf[1 << 16];
	char *text = json_dumps(q, JSON_COMPACT);
	json_t *j;

	json_decref(q);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", text, NULL, buf, sizeof buf), status);
	free(text);
	j = json_loads(body_of(buf), 0, NULL);
	ck_assert_ptr_nonnull(j);
	snprintf(id, 33, "%s", json_string_value(json_object_get(j, "id")));
	return j;
}

/* post_reduction_answer without the answer. */
static void
post_reduction(json_t *q, int status, char id[33])
{
	json_decref(post_reduction_answer(q, status, id));
}

START_TEST(test_server_statuses)
{
	static char buf[1 << 20];
	char big[6000], path[128], *q;
	json_t *j, *raw;
	char id[33];

	server_start(NULL);
	ck_assert_int_eq(http("GET", "/healthz", NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"ok\""));
	ck_assert_int_eq(http("GET", "/readyz", NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"memory\""));
	ck_assert_int_eq(http("GET", "/nowhere", NULL, NULL, NULL, buf, sizeof buf), 404);
	ck_assert_ptr_nonnull(strstr(buf, "application/problem+json"));
	ck_assert_int_eq(http("DELETE", "/v1/devices", NULL, NULL, NULL, buf, sizeof buf), 405);
	ck_assert_ptr_nonnull(strstr(buf, "Allow: GET"));
	ck_assert_int_eq(http("GET", "/openapi.json", NULL, NULL, NULL, buf, sizeof buf), 308);
	ck_assert_ptr_nonnull(strstr(buf, "Location: /schemas/openapi.json"));
	ck_assert_int_eq(http("GET", "/schemas/../Makefile.json", NULL, NULL, NULL, buf, sizeof buf), 404);
	ck_assert_int_eq(http("GET", "/v1/templates/resnet50", NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"preset\":\"resnet50\""));
	ck_assert_int_eq(http("GET", "/v1/templates/nope", NULL, NULL, NULL, buf, sizeof buf), 404);
	/* bodies: 415, 400 (malformed, wrong type, line and column), 413, 422 with the path */
	ck_assert_int_eq(http("POST", "/v1/estimate", "text/plain", "{}", NULL, buf, sizeof buf), 415);
	ck_assert_int_eq(http("POST", "/v1/estimate", "application/json", "{\"model\":", NULL, buf, sizeof buf), 400);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "line 1, column"));
	ck_assert_int_eq(http("POST", "/v1/estimate", "application/json", "[1]", NULL, buf, sizeof buf), 400);
	ck_assert_int_eq(http("POST", "/v1/estimate", "application/json", "{\"a\":1,\"a\":2}", NULL, buf, sizeof buf),
	    400);
	memset(big, ' ', sizeof big);
	big[0] = '{';
	big[sizeof big - 2] = '}';
	big[sizeof big - 1] = '\0';
	ck_assert_int_eq(http("POST", "/v1/estimate", "application/json", big, NULL, buf, sizeof buf), 413);
	ck_assert_int_eq(http("POST", "/v1/estimate", "application/json",
	    "{\"model\":\"resnet50\",\"config\":{\"batch_size\":\"x\"}}", NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.batch_size\""));
	ck_assert_int_eq(http("POST", "/v1/estimate", "application/json",
	    "{\"model\":\"resnet50\",\"device\":\"a100-40gb\",\"config\":{\"batch_size\":32}}", NULL, buf, sizeof buf),
	    200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"training_peak_bytes\""));
	/* a reduction: 201, then 200 from the cache, then its pages and checks */
	raw = mlp_query(512);
	q = json_dumps(raw, JSON_COMPACT);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", q, NULL, buf, sizeof buf), 201);
	ck_assert_ptr_nonnull(strstr(buf, "X-Cache: miss"));
	j = json_loads(body_of(buf), 0, NULL);
	ck_assert_ptr_nonnull(j);
	snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "id")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "total")), "9");
	ck_assert(json_is_true(json_object_get(j, "exact")));
	json_decref(j);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", q, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(buf, "X-Cache: hit"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"cached\":true"));
	snprintf(path, sizeof path, "/v1/reductions/%s", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?limit=2", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"next_cursor\":\"c1."));
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?limit=abc", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?cursor=c1.bad", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	/* the stream takes no page's parameters (they were ignored: all of it) */
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?format=jsonl&offset=3", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"offset\""));
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?format=jsonl&limit=5", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?format=jsonl&cursor=garbage", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	snprintf(path, sizeof path, "/v1/reductions/%s/check", id);
	ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":64,\"depth\":2}}", NULL, buf,
	    sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"feasible\":true"));
	ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":65,\"depth\":2}}", NULL, buf,
	    sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.hidden\""));
	ck_assert_int_eq(http("POST", path, "application/json", "{}", NULL, buf, sizeof buf), 422);
	/* the same check with the configuration in the query string */
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"feasible\":true"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"costs\":{"));
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.depth\""));
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2&width=3", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	snprintf(path, sizeof path, "/v1/reductions/%s/check", id);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config\""));
	snprintf(path, sizeof path, "/v1/reductions/%s/heatmap?x=hidden&y=depth", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"x_values\":[64,128,512]"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"feasible\":[["));
	snprintf(path, sizeof path, "/v1/reductions/%s/heatmap?x=hidden&y=nope", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	snprintf(path, sizeof path, "/v1/reductions/%s/heatmap?x=hidden", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	ck_assert_int_eq(http("GET", "/", NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(buf, "text/html"));
	ck_assert_int_eq(http("GET", "/ui/nothing-here.js", NULL, NULL, NULL, buf, sizeof buf), 404);
	ck_assert_int_eq(http("GET", "/v1/reductions/00000000000000000000000000000000", NULL, NULL, NULL, buf,
	    sizeof buf), 404);
	ck_assert_int_eq(http("GET", "/metrics", NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "dnnsat_http_requests_total{route=\"reductions_create\",code=\"201\"} 1"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "dnnsat_cache_hits_total "));
	free(q);
	json_decref(raw);
	srv_stop(&server);
}
END_TEST


/* A reduction of a model whose layers are three nested constant repeats
 * (n1 x n2 x n3 copies of six linear layers), with the request's timeout. */
static char *
nested_query(int n1, int n2, int n3, double timeout)
{
	json_t *lin = json_pack("{s:s,s:i}", "op", "linear", "out_features", 64), *body = json_array(), *q;
	char *text;

	for (int i = 0; i < 6; i++)
		json_array_append(body, lin);
	json_decref(lin);
	body = json_pack("[{s:i,s:o}]", "repeat", n3, "body", body);
	body = json_pack("[{s:i,s:o}]", "repeat", n2, "body", body);
	body = json_pack("[{s:i,s:o}]", "repeat", n1, "body", body);
	q = json_pack("{s:{s:i,s:s,s:{s:{s:s,s:i,s:i,s:i}},s:[{s:s,s:[s,i],s:s}],s:o},"
	    "s:{s:{s:s,s:[i,i]}},s:{s:s},s:f}",
	    "model", "dnnsat_model", 1, "name", "nested", "hyperparameters", "batch_size", "type", "int", "default", 8,
	    "min", 1, "max", 64, "inputs", "name", "x", "shape", "batch_size", 64, "dtype", "float", "layers", body,
	    "space", "batch_size", "_type", "choice", "_value", 8, 16, "budgets", "memory", "2GiB", "timeout", timeout);
	ck_assert_ptr_nonnull(q);
	text = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	return text;
}

/* Item 1 of the adversarial run: nested repeats multiply (27,000 copies
 * are refused at once, naming the limit), and a model that builds for
 * longer than the request's deadline is cut by it (503 deadline with
 * Retry-After) instead of pinning a worker. --compile-grace 0 holds the
 * build to the request's own deadline (the default lets a build use 5 s). */
START_TEST(test_server_build_bounded)
{
	static char buf[1 << 16];
	char *q;
	static const char *const extra[] = { "--compile-grace", "0", NULL };

	server_start_with(NULL, extra);
	q = nested_query(30, 30, 30, 2);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", q, NULL, buf, sizeof buf), 422);
	ck_assert_msg(strstr(body_of(buf), "CM_MAX_UNROLLED") != NULL, "%s", buf);
	ck_assert_msg(strstr(body_of(buf), "\"path\":\"$.layers[0].body[0].body[0].repeat\"") != NULL, "%s", buf);
	free(q);
	/* 8,000 copies of six layers: within the limits, far beyond 0.3 s of building */
	q = nested_query(20, 20, 20, 0.3);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", q, NULL, buf, sizeof buf), 503);
	ck_assert_msg(strstr(body_of(buf), "deadline") != NULL, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "Retry-After: "));
	free(q);
	/* the workers are free again */
	{
		json_t *m = mlp_query(512);
		q = json_dumps(m, JSON_COMPACT);
		json_decref(m);
	}
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", q, NULL, buf, sizeof buf), 201);
	free(q);
	srv_stop(&server);
}
END_TEST

/* A reduction whose count stopped for good at --max-compute (status
 * "bounds"): an offset or a stream needs the exact count, which will never
 * come, so the answer is 409 without Retry-After. It was 503 "retry (the
 * count goes on)" with Retry-After: 5, at once and forever: a client that
 * honours Retry-After looped. Cursor pages are still served. */
START_TEST(test_server_bounds_409)
{
	static char buf[1 << 16];
	static const char *const extra[] = { "--max-compute", "1", NULL };
	static const char query[] = "{\"model\":\"resnet50\",\"space\":{\"batch_size\":{\"_type\":\"randint\","
	    "\"_value\":[1,4097]},\"block\":{\"_type\":\"choice\",\"_value\":[\"basic\",\"bottleneck\"]},"
	    "\"layers3\":{\"_type\":\"randint\",\"_value\":[2,40]},\"width\":{\"_type\":\"randint\",\"_value\":[8,129]},"
	    "\"resolution\":{\"_type\":\"quniform\",\"_value\":[32,512,1]}},\"device\":\"a100-40gb\","
	    "\"budgets\":{\"memory\":\"6GiB\",\"latency\":\"30ms\"},\"timeout\":30}";
	char path[256], id[33];
	json_t *j;

	server_start_with(NULL, extra);
	j = post_reduction_answer(json_loads(query, 0, NULL), 200, id);
	ck_assert_str_eq(json_string_value(json_object_get(j, "status")), "bounds");
	json_decref(j);
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?offset=0", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 409);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "count-stopped"));
	ck_assert_ptr_null(strstr(buf, "Retry-After"));
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?format=jsonl", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 409);
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?limit=3", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	srv_stop(&server);
}
END_TEST

/* Samples of a reduction where nothing fits: 200 with no items, complete
 * (as a page of nothing is), not the 422 invalid-field without a path it
 * was: no field of the request is wrong. */
START_TEST(test_server_samples_none)
{
	static char buf[1 << 16];
	json_t *raw = mlp_query(512), *j;
	char path[256], id[33];

	json_object_set_new(json_object_get(raw, "budgets"), "memory", json_string("1KiB"));
	server_start(NULL);
	j = post_reduction_answer(raw, 201, id);
	ck_assert_str_eq(json_string_value(json_object_get(j, "feasible")), "0");
	json_decref(j);
	snprintf(path, sizeof path, "/v1/reductions/%s/samples?n=3", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	j = json_loads(body_of(buf), 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "items")), 0);
	ck_assert(json_is_true(json_object_get(j, "complete")));
	json_decref(j);
	srv_stop(&server);
}
END_TEST

/* Replaces the cache's entry under `id` behind the checksum's back (as an
 * edit in the database would): its result, and its request when `request`
 * is not NULL; the stored checksum stays, so the entry fails it. */
static void
damage_entry(const char *id, const char *result, const char *request)
{
	struct cache_entry ce;

	ck_assert_int_eq(cache_get(server.cache, id, &ce), CACHE_HIT);
	free(ce.result);
	ce.result = strdup(result);
	if (request != NULL) {
		free(ce.request);
		ce.request = strdup(request);
	}
	ck_assert_int_eq(server.cache->ops->put(server.cache, id, &ce), 0);
	cache_entry_clear(&ce);
}

/* 1 when reduction `id` is compiled in the server's memory. */
static int
in_memory(const char *id)
{
	struct dn_error err;
	struct srv_query *sq;

	memset(&err, 0, sizeof err);
	sq = srv_registry_get(server.registry, id, NULL, &err);
	if (sq == NULL)
		return 0;
	srv_registry_release(server.registry, sq);
	return 1;
}

/* A reduction whose stored entry fails its checksum while no compiled
 * query of it is in memory (another replica, a restart: here a registry of
 * one, the other query compiled after it). Until 2026-12-06 the cache
 * dropped the entry, logged that it would be "computed again", and GET
 * answered 404 "no reduction": the id, once handed out, was lost. Now an
 * entry whose request still hashes to the id is computed again from it
 * (never served from the damaged result) and stored again; one whose
 * request is damaged too answers 404 reduction-damaged saying to post the
 * query again, on every read, until it is posted again. */
START_TEST(test_server_damaged_reduction)
{
	static const char *const extra[] = { "--registry-size", "1", NULL };
	static char buf[1 << 16];
	struct cache_entry ce;
	struct cache_stats st;
	char id1[33], id2[33], path[128], feasible[64];
	json_t *j;

	server_start_with(NULL, extra);
	j = post_reduction_answer(mlp_query(256), 201, id1);
	snprintf(feasible, sizeof feasible, "%s", json_string_value(json_object_get(j, "feasible")));
	json_decref(j);
	post_reduction(mlp_query(512), 201, id2);
	ck_assert(!in_memory(id1));
	/* the answer damaged, the request intact: computed again, stored again */
	damage_entry(id1, "{\"feasible\":\"1\",\"total\":\"2\",\"status\":\"exact\"}", NULL);
	snprintf(path, sizeof path, "/v1/reductions/%s", id1);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	j = json_loads(body_of(buf), 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "feasible")), feasible);
	ck_assert_str_eq(json_string_value(json_object_get(j, "id")), id1);
	ck_assert(json_is_false(json_object_get(j, "cached")));
	json_decref(j);
	ck_assert_int_eq(cache_get(server.cache, id1, &ce), CACHE_HIT);
	ck_assert_int_eq(ce.final, 1);
	ck_assert_ptr_null(strstr(ce.result, "\"feasible\":\"1\""));
	cache_entry_clear(&ce);
	cache_get_stats(server.cache, &st);
	ck_assert_uint_eq(st.corrupt, 1);
	/* and the endpoints under the id (a solver worker's lookup) the same way */
	post_reduction(mlp_query(1024), 201, id2);
	ck_assert(!in_memory(id1));
	damage_entry(id1, "{}", NULL);
	snprintf(path, sizeof path, "/v1/reductions/%s/samples?n=2&seed=7", id1);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	/* the request damaged too: nothing to compute from, and said so, every time */
	post_reduction(mlp_query(2048), 201, id2);
	ck_assert(!in_memory(id1));
	damage_entry(id1, "{}", "{\"model\":\"mlp\"}");
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof path, i < 2 ? "/v1/reductions/%s" : "/v1/reductions/%s/samples?n=2", id1);
		ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 404);
		ck_assert_ptr_nonnull(strstr(buf, "Content-Type: application/problem+json"));
		j = json_loads(body_of(buf), 0, NULL);
		ck_assert_ptr_nonnull(j);
		ck_assert_str_eq(json_string_value(json_object_get(j, "type")),
		    "https://dnnsat.dev/problems/reduction-damaged");
		ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(j, "detail")), "POST"));
		json_decref(j);
	}
	cache_get_stats(server.cache, &st);
	ck_assert_uint_eq(st.corrupt, 3);
	/* posted again: answered and stored again */
	post_reduction(mlp_query(256), 201, id2);
	ck_assert_str_eq(id2, id1);
	snprintf(path, sizeof path, "/v1/reductions/%s", id1);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), feasible));
	srv_stop(&server);
}
END_TEST

/* The bytes held by all connections: the dnnsat_buffered_bytes gauge. */
static long long
buffered_bytes(void)
{
	static char buf[1 << 16];
	const char *p;

	ck_assert_int_eq(http("GET", "/metrics", NULL, NULL, NULL, buf, sizeof buf), 200);
	p = strstr(body_of(buf), "\ndnnsat_buffered_bytes ");
	ck_assert_ptr_nonnull(p);
	return atoll(p + strlen("\ndnnsat_buffered_bytes "));
}

/* --max-buffered bounds what the bodies and large answers of all
 * connections hold at once: a client holding an upload of 900 KB open
 * leaves no room under 1 MiB for a second one (503 with Retry-After), nor
 * for an answer above 64 KiB; when it goes, both are served. Before, each
 * connection could hold --max-model-bytes (64 MiB): 100 held uploads took
 * the server to 6.6 GB. */
START_TEST(test_server_buffered_bounded)
{
	static char buf[1 << 16];
	static const char *const extra[] = { "--max-model-bytes", "1048576", "--max-buffered", "1048576", NULL };
	const size_t big = 900000;
	char *body = malloc(big), head[256], path[256], id[33];
	int fd, n, tries = 0;

	ck_assert_ptr_nonnull(body);
	memset(body, 'x', big);
	{
		/* a budget below the largest body allowed: refused at start */
		char *argv[] = { "t", "--max-buffered", "2MiB" };
		struct srv_config c;
		struct dn_error err;
		memset(&err, 0, sizeof err);
		ck_assert_int_ne(srv_config_parse(3, argv, &c, &err), 0);
		ck_assert_str_eq(err.path, "--max-buffered");
		srv_config_free(&c);
	}
	server_start_with(NULL, extra);
	/* a reduction with a large answer: samples of 10000 (about 250 KB) */
	post_reduction(mlp_query(512), 201, id);
	snprintf(path, sizeof path, "/v1/reductions/%s/samples?n=10000&seed=1", id);
	/* one upload held open, all but its last byte sent */
	fd = connect_server();
	n = snprintf(head, sizeof head, "POST /v1/models HTTP/1.1\r\nHost: t\r\nContent-Type: application/onnx\r\n"
	    "Content-Length: %zu\r\n\r\n", big);
	ck_assert_int_eq(send(fd, head, (size_t)n, MSG_NOSIGNAL), n);
	ck_assert_int_eq(send(fd, body, big - 1, MSG_NOSIGNAL), (ssize_t)(big - 1));
	while (buffered_bytes() < (long long)(big - 1)) {
		ck_assert_int_lt(++tries, 6000);        /* a minute at most */
		usleep(10000);
	}
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/onnx", body, big, NULL, buf, sizeof buf), 503);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "--max-buffered"));
	ck_assert_ptr_nonnull(strstr(buf, "Retry-After: "));
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 503);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "server-busy"));
	/* the held upload goes: room again */
	close(fd);
	tries = 0;
	while (buffered_bytes() > 0) {
		ck_assert_int_lt(++tries, 6000);
		usleep(10000);
	}
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	/* its answer is counted until libmicrohttpd frees it, which may come
	 * after the client has read it all: the upload below would not fit
	 * beside it (a 503 seen once on a busy machine) */
	tries = 0;
	while (buffered_bytes() > 0) {
		ck_assert_int_lt(++tries, 6000);
		usleep(10000);
	}
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/onnx", body, big, NULL, buf, sizeof buf), 422);
	ck_assert_int_eq(buffered_bytes(), 0);
	free(body);
	srv_stop(&server);
}
END_TEST

static void *
post_in_thread(void *arg)
{
	static char buf[1 << 16];
	void **a = arg;
	int *status = a[0];

	*status = http("POST", "/v1/reductions", "application/json", a[1], NULL, buf, sizeof buf);
	return NULL;
}

/* Sends a request and closes the connection without reading the answer. */
static void
post_and_leave(const char *body)
{
	char head[512];
	int fd = connect_server(), n;

	n = snprintf(head, sizeof head, "POST /v1/reductions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n", strlen(body));
	ck_assert_int_eq(send(fd, head, (size_t)n, MSG_NOSIGNAL), n);
	ck_assert_int_eq(send(fd, body, strlen(body), MSG_NOSIGNAL), (ssize_t)strlen(body));
	usleep(200 * 1000);             /* read and queued by the server */
	close(fd);
}

/* The 24-layer transformer's example query (1.3e30 configurations: no
 * machine counts it within a test's deadlines) within 40 GiB on the
 * a100-40gb. New reference. */
static json_t *
t24_query(void)
{
	json_error_t jerr;
	json_t *q = json_object();

	json_object_set_new(q, "model", json_load_file(src_path("examples/models/transformer24.json"), 0, &jerr));
	json_object_set_new(q, "space", json_load_file(src_path("examples/spaces/transformer24.json"), 0, &jerr));
	json_object_set_new(q, "device", json_string("a100-40gb"));
	json_object_set_new(q, "budgets", json_pack("{s:s}", "memory", "40GiB"));
	ck_assert_ptr_nonnull(json_object_get(q, "model"));
	ck_assert_ptr_nonnull(json_object_get(q, "space"));
	return q;
}

/* Item 2: with one worker busy on a heavy job, a queued job whose deadline
 * passes while it waits is answered 503 without running, and one whose
 * client left is dropped; both counted. The heavy job is a count that no
 * machine finishes (before: the build of 8,000 nested copies, which a fast
 * machine finished within its 3 s, then answered). */
START_TEST(test_server_queue_deadline)
{
	static const char *const extra[] = { "--workers", "1", "--compile-grace", "0", "--max-body", "1048576",
		NULL };
	static char buf[1 << 16];
	void *args[2];
	int status = 0;
	pthread_t th;
	char *heavy, *gone, *late;
	json_t *q;

	server_start_with(NULL, extra);
	/* holds the worker until its deadline, counting (202) or, on a
	 * machine too slow to compile it in 3 s, building (503) */
	q = t24_query();
	json_object_set_new(q, "timeout", json_real(3));
	heavy = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	q = mlp_query(1024);
	gone = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	q = mlp_query(2048);
	json_object_set_new(q, "timeout", json_real(1));
	late = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	args[0] = &status;
	args[1] = heavy;
	ck_assert_int_eq(pthread_create(&th, NULL, post_in_thread, args), 0);
	usleep(500 * 1000);
	post_and_leave(gone);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", late, NULL, buf, sizeof buf), 503);
	ck_assert_msg(strstr(body_of(buf), "waited") != NULL, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "Retry-After: "));
	pthread_join(th, NULL);
	ck_assert_msg(status == 202 || status == 503, "the heavy job answered %d", status);
	ck_assert_int_eq(http("GET", "/metrics", NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_msg(strstr(body_of(buf), "dnnsat_jobs_dropped_total{reason=\"deadline\"} 1\n") != NULL, "%s", buf);
	ck_assert_msg(strstr(body_of(buf), "dnnsat_jobs_dropped_total{reason=\"client_gone\"} 1\n") != NULL, "%s", buf);
	free(heavy);
	free(gone);
	free(late);
	srv_stop(&server);
}
END_TEST

/* Item 6: a long count's progress reaches the cache while it counts
 * (--progress-interval 0: after every slice), before its request ends. */
START_TEST(test_server_progress_saved)
{
	static const char *const extra[] = { "--workers", "1", "--progress-interval", "0", "--max-body", "1048576",
		NULL };
	void *args[2];
	int status = 0;
	pthread_t th;
	json_t *q = t24_query(), *canon;
	struct cache_entry ce;
	char id[33], *text, *body;

	server_start_with(NULL, extra);
	/* after the start: ids hash the catalog the server loaded */
	canon = srv_query_canonical(q, id, &text);
	json_object_set_new(q, "timeout", json_real(6));
	body = json_dumps(q, JSON_COMPACT);
	args[0] = &status;
	args[1] = body;
	ck_assert_int_eq(pthread_create(&th, NULL, post_in_thread, args), 0);
	sleep(4);                       /* compiled, and counting for seconds: not yet answered */
	memset(&ce, 0, sizeof ce);
	ck_assert_int_eq(cache_get(server.cache, id, &ce), CACHE_HIT);
	ck_assert_int_eq(ce.final, 0);
	ck_assert_ptr_nonnull(ce.progress);
	ck_assert_str_eq(ce.request, text);
	cache_entry_clear(&ce);
	pthread_join(th, NULL);
	ck_assert_int_eq(status, 202);
	srv_stop(&server);
	json_decref(canon);
	json_decref(q);
	free(text);
	free(body);
}
END_TEST


/* A worker counting a reduction holds its lock for writing until its
 * deadline. Every other request of that reduction may wait for the lock
 * only on a solver worker and only until its own deadline (503 "busy",
 * Retry-After: 1): never on an HTTP thread, which serves every other
 * connection too (a /check on the HTTP thread blocked on the lock; with
 * both HTTP threads so blocked, /healthz went unanswered), and never past
 * its deadline (a poll with ?timeout=2 waited 10 s behind a heat map's
 * count, and an upload queued behind it got 503). The test holds the lock
 * as a counting worker would. */
START_TEST(test_server_busy_reduction)
{
	static const char *const extra[] = { "--max-body", "1048576", NULL };
	static char buf[1 << 16];
	char path[160], exact_id[33], open_id[33];
	struct srv_query *exact, *open;
	struct dn_error err;
	json_t *q;

	server_start_with(NULL, extra);
	post_reduction(mlp_query(512), 201, exact_id);
	/* a count that does not finish in 0.3 s: 202, its count unfinished */
	q = t24_query();
	json_object_set_new(q, "timeout", json_real(0.3));
	post_reduction(q, 202, open_id);

	memset(&err, 0, sizeof err);
	exact = srv_registry_get(server.registry, exact_id, NULL, &err);
	open = srv_registry_get(server.registry, open_id, NULL, &err);
	ck_assert_ptr_nonnull(exact);
	ck_assert_ptr_nonnull(open);
	pthread_rwlock_wrlock(&exact->lock);
	pthread_rwlock_wrlock(&open->lock);
	/* two checks of the JSON form, which reads the engine under the lock
	 * (one per HTTP thread before the fix), then the probes */
	snprintf(path, sizeof path, "/v1/reductions/%s/check", exact_id);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":64,\"depth\":2},"
		    "\"timeout\":0.5}", NULL, buf, sizeof buf), 503);
		ck_assert_msg(strstr(body_of(buf), "\"type\":\"https://dnnsat.dev/problems/busy\"") != NULL, "%s", buf);
		ck_assert_ptr_nonnull(strstr(buf, "Retry-After: 1\r\n"));
	}
	ck_assert_int_eq(http("GET", "/healthz", NULL, NULL, NULL, buf, sizeof buf), 200);
	/* the per-trial form reads only what compiling built: no lock, answered */
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2", exact_id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?limit=2&timeout=0.5", exact_id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 503);
	ck_assert_ptr_nonnull(strstr(body_of(buf), exact_id));
	snprintf(path, sizeof path, "/v1/reductions/%s?timeout=0.5", open_id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 503);
	ck_assert_msg(strstr(body_of(buf), "counted by another request") != NULL, "%s", buf);
	pthread_rwlock_unlock(&open->lock);
	pthread_rwlock_unlock(&exact->lock);
	/* the count given up: the same requests are answered */
	snprintf(path, sizeof path, "/v1/reductions/%s/check", exact_id);
	ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":64,\"depth\":2},"
	    "\"timeout\":0.5}", NULL, buf, sizeof buf), 200);
	snprintf(path, sizeof path, "/v1/reductions/%s/configurations?limit=2&timeout=0.5", exact_id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	snprintf(path, sizeof path, "/v1/reductions/%s?timeout=0.5", open_id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 202);
	srv_registry_release(server.registry, open);
	srv_registry_release(server.registry, exact);
	srv_stop(&server);
}
END_TEST

/* Item 5 over HTTP: a 100,000-value pass-through choice (megabytes once
 * compiled) beyond --max-query-bytes is answered 413 naming the flag. */
START_TEST(test_server_query_bytes)
{
	static const char *const extra[] = { "--max-body", "4MiB", "--max-query-bytes", "4MiB", NULL };
	static char buf[1 << 16];
	json_t *q = mlp_query(512), *vals = json_array();
	char *text;

	for (int i = 0; i < 100000; i++)
		json_array_append_new(vals, json_integer(i));
	json_object_set_new(json_object_get(q, "space"), "seed", json_pack("{s:s,s:o}", "_type", "choice", "_value", vals));
	text = json_dumps(q, JSON_COMPACT);
	server_start_with(NULL, extra);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", text, NULL, buf, sizeof buf), 413);
	ck_assert_msg(strstr(body_of(buf), "--max-query-bytes") != NULL, "%s", buf);
	ck_assert_int_eq(http("GET", "/metrics", NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_msg(strstr(body_of(buf), "dnnsat_query_too_large_total 1\n") != NULL, "%s", buf);
	srv_stop(&server);
	free(text);
	json_decref(q);
}
END_TEST

START_TEST(test_server_tokens)
{
	static char buf[1 << 16];
	char file[] = "/tmp/dnnsat-test-tokens-XXXXXX";
	int fd = mkstemp(file);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "# tokens\nsecret-token-0123456789\n", 33), 33);
	close(fd);
	server_start(file);
	ck_assert_int_eq(http("GET", "/v1/devices", NULL, NULL, NULL, buf, sizeof buf), 401);
	ck_assert_ptr_nonnull(strstr(buf, "WWW-Authenticate: Bearer"));
	ck_assert_int_eq(http("GET", "/v1/devices", NULL, NULL, "Authorization: Bearer wrong-token-0123456789\r\n", buf,
	    sizeof buf), 401);
	ck_assert_int_eq(http("GET", "/v1/devices", NULL, NULL, "Authorization: Bearer secret-token-0123456789\r\n",
	    buf, sizeof buf), 200);
	ck_assert_int_eq(http("GET", "/healthz", NULL, NULL, NULL, buf, sizeof buf), 200);     /* public */
	srv_stop(&server);
	unlink(file);
	{
		/* tokens that could never match what a client sends: the file is
		 * refused, naming the line */
		static const struct { const char *text; size_t len; const char *want; } bad[] = {
			{ "# padded\n  secret-token-0123456789  \n", 0, "line 2" },
			{ "secret-token-0123456789\t\n", 0, "line 1" },
			{ "ok-token-0123456789abc\n\x9c\x01\xff\x10zz\xe2\x80\xa8garbage-bytes-here\n", 0, "line 2" },
			{ "secret token 0123456789\n", 0, "line 1" },
			{ "nul\0inside-a-token-0123456789\n", 31, "byte 4 is 0x00" },
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			struct srv other;
			struct dn_error err;
			size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
			fd = mkstemp(strcpy(file, "/tmp/dnnsat-test-tokens-XXXXXX"));
			ck_assert_int_ge(fd, 0);
			ck_assert_int_eq(write(fd, bad[i].text, len), (ssize_t)len);
			close(fd);
			ck_assert_int_eq(server_start_on(&other, "127.0.0.1:0", file, NULL, &err), -1);
			ck_assert_str_eq(err.path, "--token-file");
			ck_assert_msg(strstr(err.message, bad[i].want) != NULL, "file %zu: %s", i, err.message);
			srv_stop(&other);
			unlink(file);
		}
	}
}
END_TEST

/* ---- hostile clients: raw sockets from a chosen loopback address ---- */

/* A socket from src (any address of 127/8) connected to the test server;
 * -1 when the connection is refused. */
static int
connect_from(const char *src, int timeout_s)
{
	struct sockaddr_in a, b;
	struct timeval tv = { timeout_s, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(&b, 0, sizeof b);
	b.sin_family = AF_INET;
	inet_pton(AF_INET, src, &b.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&b, sizeof b), 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)server.cfg.port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends len bytes of data from src and reads the answer into buf until
 * the server closes (or timeout_s passes without a byte); the status, or
 * 0 when no answer came. */
static int
raw_from(const char *src, const char *data, size_t len, char *buf, size_t cap, int timeout_s)
{
	int fd = connect_from(src, timeout_s);
	size_t got = 0, sent = 0;

	buf[0] = '\0';
	if (fd < 0)
		return 0;
	while (sent < len) {
		ssize_t k = send(fd, data + sent, len - sent, MSG_NOSIGNAL);
		if (k <= 0)
			break;  /* the server may answer before reading it all */
		sent += (size_t)k;
	}
	for (;;) {
		ssize_t k = recv(fd, buf + got, cap - 1 - got, 0);
		if (k <= 0)
			break;
		got += (size_t)k;
		if (got == cap - 1)
			break;
	}
	close(fd);
	buf[got] = '\0';
	return strncmp(buf, "HTTP/1.1 ", 9) == 0 ? atoi(buf + 9) : 0;
}

/* GET path (any length) from src; the status, 0 when none came. */
static int
get_from(const char *src, const char *path, char *buf, size_t cap)
{
	size_t n = strlen(path) + 64;
	char *req = malloc(n);
	int status;

	ck_assert_ptr_nonnull(req);
	n = (size_t)snprintf(req, n, "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", path);
	status = raw_from(src, req, n, buf, cap, 40);
	free(req);
	return status;
}

static void
msleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Waits (at most limit_s) until every socket of fds is closed by the
 * server; the number that got a 408 problem+json first. */
static int
await_closed(int *fds, int n, int limit_s)
{
	int open_left = n, n408 = 0;
	char buf[1024];

	for (int round = 0; round < limit_s * 10 && open_left > 0; round++) {
		open_left = 0;
		for (int i = 0; i < n; i++) {
			ssize_t k;
			if (fds[i] < 0)
				continue;
			k = recv(fds[i], buf, sizeof buf - 1, MSG_DONTWAIT);
			if (k > 0) {
				buf[k] = '\0';
				n408 += strncmp(buf, "HTTP/1.1 408", 12) == 0 && strstr(buf, "application/problem+json") != NULL;
			}
			if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || k > 0) {
				close(fds[i]);
				fds[i] = -1;
			} else
				open_left++;
		}
		if (open_left > 0)
			msleep(100);
	}
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	ck_assert_msg(open_left == 0, "%d sockets still open after %d s", open_left, limit_s);
	return n408;
}

#define ATTACK 150

/* Slow and idle sockets from one address (127.0.0.1) against a server of
 * 48 connections, 8 per address, a 1 s request deadline: /healthz from
 * another address (127.0.0.2) answers throughout, and every attacking
 * socket is closed (the slow ones with a 408) without the attacker
 * closing it. Before, one client could take every connection, and a byte
 * every few seconds kept a request alive forever. */
START_TEST(test_server_slow_clients)
{
	static const char *const extra[] = { "--max-connections", "48", "--max-connections-per-ip", "8",
		"--request-timeout", "1", "--connection-timeout", "60", NULL };
	static const char probe[] = "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
	int fds[ATTACK];
	static char buf[1 << 18];

	server_start_with(NULL, extra);
	/* slow: a head begun, then one byte at a time */
	for (int i = 0; i < ATTACK; i++) {
		fds[i] = connect_from("127.0.0.1", 5);
		if (fds[i] >= 0)
			(void)send(fds[i], "GET /healthz HTTP/1.1\r\nHo", 25, MSG_NOSIGNAL);
	}
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < ATTACK; i++)
			if (fds[i] >= 0)
				(void)send(fds[i], "s", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		ck_assert_int_eq(raw_from("127.0.0.2", probe, sizeof probe - 1, buf, sizeof buf, 10), 200);
		msleep(300);
	}
	ck_assert_int_ge(await_closed(fds, ATTACK, 20), 1);
	/* idle: connected, nothing sent */
	for (int i = 0; i < ATTACK; i++)
		fds[i] = connect_from("127.0.0.1", 5);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(raw_from("127.0.0.2", probe, sizeof probe - 1, buf, sizeof buf, 10), 200);
		msleep(200);
	}
	ck_assert_int_ge(await_closed(fds, ATTACK, 20), 1);
	ck_assert_uint_ge(srv_guard_reaped(server.guard), 2);
	ck_assert_int_eq(get_from("127.0.0.2", "/metrics", buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "dnnsat_request_timeouts_total "));
	ck_assert_ptr_null(strstr(body_of(buf), "dnnsat_request_timeouts_total 0\n"));
	/* the 408s among them are requests answered too (until 2026-12-05 no
	 * 408 was counted there, nor 409, 414 or 431) */
	ck_assert_uint_ge(srv_guard_refused(server.guard), 1);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "dnnsat_http_requests_total{route=\"healthz\",code=\"408\"} "));
	{
		/* an idle keep-alive connection is closed without a 408, which the
		 * client could read as the answer to its next request */
		static const char keep[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
		int fd = connect_from("127.0.0.3", 20);
		size_t got = 0;
		ssize_t k;
		ck_assert_int_ge(fd, 0);
		buf[0] = '\0';
		ck_assert_int_eq(send(fd, keep, sizeof keep - 1, MSG_NOSIGNAL), (ssize_t)(sizeof keep - 1));
		while (strstr(buf, "{\"status\":\"ok\"}") == NULL && (k = recv(fd, buf + got, 4000 - got, 0)) > 0) {
			got += (size_t)k;
			buf[got] = '\0';
		}
		ck_assert_ptr_nonnull(strstr(buf, "{\"status\":\"ok\"}"));
		ck_assert_int_eq(recv(fd, buf, 4000, 0), 0);   /* closed after the deadline, nothing written */
		close(fd);
	}
	/* the attacking address is served again once its sockets are gone */
	ck_assert_int_eq(raw_from("127.0.0.1", probe, sizeof probe - 1, buf, sizeof buf, 10), 200);
	srv_stop(&server);
}
END_TEST

/* 1 when the file at `path` holds `text`. */
static int
file_has(const char *path, const char *text)
{
	static char all[1 << 16];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (f == NULL)
		return 0;
	n = fread(all, 1, sizeof all - 1, f);
	fclose(f);
	all[n] = '\0';
	return strstr(all, text) != NULL;
}

/* The value of one series of the metrics text in buf, -1 when absent. */
static long long
series_value(const char *buf, const char *series)
{
	const char *p = strstr(body_of(buf), series);

	return p != NULL ? atoll(p + strlen(series)) : -1;
}

/* Every answered request is in the access log and in the metrics under its
 * real route. Until 2026-12-06 the guard's 408s (written straight to the
 * socket) had no access-log line and were counted on route "unmatched",
 * and so were a 414, a %00 in the query string and a framing 400 of
 * /metrics, all refused before routing. Now a 408 is logged and counted
 * with the method, path and route of its head once that arrived, else the
 * path of its request line (the route that path alone names), else "- -"
 * on "unmatched". */
START_TEST(test_server_every_answer_logged)
{
	static char buf[1 << 16];
	static const char *const reqs[] = {
		"GET /metr",                                    /* no request line */
		"GET /metrics HTTP/1.1\r\nHo",                  /* a line, no head */
		"POST /v1/check HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{",
	};
	char logpath[] = "/tmp/dnnsat-test-access.XXXXXX", *big;
	const char *extra[] = { "--request-timeout", "1", "--access-log", logpath, NULL };
	int fd = mkstemp(logpath), n, tries;
	size_t len;

	ck_assert_int_ge(fd, 0);
	close(fd);
	server_start_with(NULL, extra);
	for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
		ck_assert_int_eq(raw_from("127.0.0.1", reqs[i], strlen(reqs[i]), buf, sizeof buf, 60), 408);
		ck_assert_ptr_nonnull(strstr(buf, "application/problem+json"));
	}
	/* refused before routing, counted under /metrics all the same */
	big = malloc(8192);
	ck_assert_ptr_nonnull(big);
	len = (size_t)snprintf(big, 8192, "GET /metrics?");
	memset(big + len, '&', 700);
	len += 700;
	len += (size_t)snprintf(big + len, 8192 - len, " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	ck_assert_int_eq(raw_from("127.0.0.1", big, len, buf, sizeof buf, 30), 414);
	free(big);
	ck_assert_int_eq(get_from("127.0.0.1", "/metrics?x=%00", buf, sizeof buf), 400);
	ck_assert_int_eq(get_from("127.0.0.1", "/metr%00ics", buf, sizeof buf), 400);     /* names no route */
	n = snprintf(buf, sizeof buf, "GET /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n"
	    "Content-Length: 2\r\n\r\n");
	{
		char req[256];
		memcpy(req, buf, (size_t)n + 1);
		ck_assert_int_eq(raw_from("127.0.0.1", req, (size_t)n, buf, sizeof buf, 30), 400);
	}
	ck_assert_int_eq(get_from("127.0.0.1", "/metrics", buf, sizeof buf), 200);
	ck_assert_int_eq(series_value(buf, "dnnsat_http_requests_total{route=\"unmatched\",code=\"408\"} "), 1);
	ck_assert_int_eq(series_value(buf, "dnnsat_http_requests_total{route=\"metrics\",code=\"408\"} "), 1);
	ck_assert_int_eq(series_value(buf, "dnnsat_http_requests_total{route=\"check\",code=\"408\"} "), 1);
	ck_assert_int_eq(series_value(buf, "dnnsat_http_requests_total{route=\"metrics\",code=\"414\"} "), 1);
	ck_assert_int_eq(series_value(buf, "dnnsat_http_requests_total{route=\"metrics\",code=\"400\"} "), 2);
	ck_assert_int_eq(series_value(buf, "dnnsat_http_requests_total{route=\"unmatched\",code=\"400\"} "), 1);
	/* the access log has a line for each (written before the answer: the
	 * last, /metrics's own, may still be on its way) */
	for (tries = 0; !file_has(logpath, "\"GET /metrics\" 200 "); tries++) {
		ck_assert_int_lt(tries, 3000);
		usleep(10000);
	}
	ck_assert(file_has(logpath, " 127.0.0.1 \"- -\" 408 "));
	ck_assert(file_has(logpath, " 127.0.0.1 \"- /metrics\" 408 "));
	ck_assert(file_has(logpath, " 127.0.0.1 \"POST /v1/check\" 408 "));
	ck_assert(file_has(logpath, " 127.0.0.1 \"GET /metrics\" 414 "));
	srv_stop(&server);
	unlink(logpath);
}
END_TEST

static void member(const char *resp, const char *key, char *out, size_t cap);

/* The value of header `name` (with its ": ") in a response, copied into
 * out ("" when absent). */
static void
header_value(const char *resp, const char *name, char *out, size_t cap)
{
	const char *p = strcasestr(resp, name), *end = strstr(resp, "\r\n\r\n");

	out[0] = '\0';
	if (p == NULL || (end != NULL && p > end))
		return;
	p += strlen(name);
	snprintf(out, cap, "%.*s", (int)strcspn(p, "\r\n"), p);
}

/* A finished reduction's answer and seeded uniform samples never change:
 * ETag and Cache-Control: max-age=31536000, immutable; If-None-Match with
 * the tag (also weak, also "*") is a 304 without a body or a
 * Content-Length (libmicrohttpd 0.9.75 would send "Content-Length: 0",
 * which RFC 9110 section 8.6 forbids on a 304). A count still running, or
 * samples drawn from it, change: Cache-Control: no-store, no ETag. Other
 * methods' answers say nothing. */
START_TEST(test_server_caching)
{
	static const char *const extra[] = { "--max-body", "1048576", NULL };
	static char buf[1 << 16];
	char id[33], open_id[33], path[160], tag[64], again[64], inm[128], cc[64];
	json_t *q;

	server_start_with(NULL, extra);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json",
	    "{\"model\":\"mlp\",\"space\":{\"hidden\":{\"_type\":\"choice\",\"_value\":[64,128]}},"
	    "\"budgets\":{\"memory\":\"2GiB\"}}", NULL, buf, sizeof buf), 201);
	ck_assert_ptr_null(strcasestr(buf, "\r\nETag:"));
	ck_assert_ptr_null(strcasestr(buf, "\r\nCache-Control:"));
	member(buf, "id", id, sizeof id);
	snprintf(path, sizeof path, "/v1/reductions/%s", id);
	for (int k = 0; k < 2; k++) {
		/* the reduction, then seeded samples */
		ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
		header_value(buf, "\r\nETag: ", tag, sizeof tag);
		ck_assert_uint_eq(strlen(tag), 34);
		ck_assert_int_eq(tag[0], '"');
		header_value(buf, "\r\nCache-Control: ", cc, sizeof cc);
		ck_assert_str_eq(cc, "max-age=31536000, immutable");
		ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
		header_value(buf, "\r\nETag: ", again, sizeof again);
		ck_assert_str_eq(again, tag);
		for (int form = 0; form < 3; form++) {
			snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", form == 0 ? tag : form == 2 ? "*" : "");
			if (form == 1)
				snprintf(inm, sizeof inm, "If-None-Match: \"other\", W/%s\r\n", tag);
			ck_assert_int_eq(http("GET", path, NULL, NULL, inm, buf, sizeof buf), 304);
			ck_assert_str_eq(body_of(buf), "");
			ck_assert_ptr_null(strcasestr(buf, "\r\nContent-Length:"));
			ck_assert_ptr_null(strcasestr(buf, "\r\nContent-Type:"));
			header_value(buf, "\r\nETag: ", again, sizeof again);
			ck_assert_str_eq(again, tag);
			header_value(buf, "\r\nCache-Control: ", cc, sizeof cc);
			ck_assert_str_eq(cc, "max-age=31536000, immutable");
		}
		ck_assert_int_eq(http("GET", path, NULL, NULL, "If-None-Match: \"other\"\r\n", buf, sizeof buf), 200);
		ck_assert_ptr_nonnull(strstr(body_of(buf), k == 0 ? id : "\"distribution\":\"uniform\""));
		snprintf(path, sizeof path, "/v1/reductions/%s/samples?n=3&seed=5", id);
	}
	/* samples without a seed: not said to be immutable */
	snprintf(path, sizeof path, "/v1/reductions/%s/samples?n=3", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_null(strcasestr(buf, "\r\nETag:"));
	/* a count still running: no-store, and If-None-Match changes nothing */
	q = t24_query();
	json_object_set_new(q, "timeout", json_real(0.3));
	post_reduction(q, 202, open_id);
	snprintf(path, sizeof path, "/v1/reductions/%s?timeout=0.3", open_id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, "If-None-Match: *\r\n", buf, sizeof buf), 202);
	header_value(buf, "\r\nCache-Control: ", cc, sizeof cc);
	ck_assert_str_eq(cc, "no-store");
	ck_assert_ptr_null(strcasestr(buf, "\r\nETag:"));
	snprintf(path, sizeof path, "/v1/reductions/%s/samples?n=2&seed=1&timeout=1&count_timeout=0", open_id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"distribution\":\"approximate\""));
	header_value(buf, "\r\nCache-Control: ", cc, sizeof cc);
	ck_assert_str_eq(cc, "no-store");
	srv_stop(&server);
}
END_TEST

/* What changes only with the server's files (the dashboard, schemas,
 * templates, the device catalog) carries an ETag and Cache-Control:
 * no-cache; If-None-Match with the tag is a 304 without a body, another
 * tag the 200. An error in its place says nothing. Before, none of them
 * said anything: every dashboard load fetched every file again. */
START_TEST(test_server_caching_revalidate)
{
	static const char *const paths[] = { "/", "/ui/app.js", "/schemas/openapi.json", "/v1/templates",
		"/v1/templates/resnet50", "/v1/devices" };
	static char buf[1 << 20];
	char tag[64], again[64], inm[128], cc[64];

	server_start_with(NULL, NULL);
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		ck_assert_int_eq(http("GET", paths[i], NULL, NULL, NULL, buf, sizeof buf), 200);
		header_value(buf, "\r\nETag: ", tag, sizeof tag);
		ck_assert_msg(strlen(tag) == 34 && tag[0] == '"', "%s: ETag '%s'", paths[i], tag);
		header_value(buf, "\r\nCache-Control: ", cc, sizeof cc);
		ck_assert_str_eq(cc, "no-cache");
		snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", tag);
		ck_assert_int_eq(http("GET", paths[i], NULL, NULL, inm, buf, sizeof buf), 304);
		ck_assert_str_eq(body_of(buf), "");
		header_value(buf, "\r\nETag: ", again, sizeof again);
		ck_assert_str_eq(again, tag);
		header_value(buf, "\r\nCache-Control: ", cc, sizeof cc);
		ck_assert_str_eq(cc, "no-cache");
		ck_assert_int_eq(http("GET", paths[i], NULL, NULL, "If-None-Match: \"other\"\r\n", buf, sizeof buf), 200);
		ck_assert_str_ne(body_of(buf), "");
	}
	/* an error in its place: nothing said */
	ck_assert_int_eq(http("GET", "/v1/templates/nosuch", NULL, NULL, "If-None-Match: *\r\n", buf, sizeof buf), 404);
	ck_assert_ptr_null(strcasestr(buf, "\r\nETag:"));
	ck_assert_ptr_null(strcasestr(buf, "\r\nCache-Control:"));
	srv_stop(&server);
}
END_TEST

/* The number of answers (status lines) in a response stream. */
static int
count_answers(const char *buf)
{
	int n = 0;

	for (const char *p = buf; (p = strstr(p, "HTTP/1.1 ")) != NULL; p += 9)
		n++;
	return n;
}

/* RFC 9112 section 6.3: two Content-Length fields that differ leave the
 * body's end unknown. libmicrohttpd 0.9.75 took the first and read what
 * followed as the next request on the connection, answering it too (a
 * smuggled request: here a /healthz hidden in a POST's body). Now: 400
 * problem+json naming the field, Connection: close, nothing more answered.
 * The same with Content-Length next to Transfer-Encoding (section 6.1);
 * a field repeated with one value is one length. */
START_TEST(test_server_framing)
{
	static char buf[1 << 16];
	static const char smuggled[] = "GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";
	static const char body[] = "{\"model\":\"mlp\"}";
	char req[1024];
	int n;

	server_start(NULL);
	for (int order = 0; order < 2; order++) {
		n = snprintf(req, sizeof req, "POST /v1/check HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\ncontent-length: %zu\r\n\r\n%s%s", order ? (size_t)3 : strlen(body),
		    order ? strlen(body) : (size_t)3, body, smuggled);
		ck_assert_int_eq(raw_from("127.0.0.1", req, (size_t)n, buf, sizeof buf, 30), 400);
		ck_assert_ptr_nonnull(strstr(buf, "Content-Type: application/problem+json"));
		ck_assert_ptr_nonnull(strcasestr(buf, "\r\nConnection: close\r\n"));
		ck_assert_ptr_nonnull(strstr(body_of(buf), "\"type\":\"https://dnnsat.dev/problems/bad-framing\""));
		ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"Content-Length\""));
		ck_assert_int_eq(count_answers(buf), 1);        /* raw_from read until the close */
	}
	/* and on a route that takes no body, before its 404 */
	n = snprintf(req, sizeof req, "GET /nowhere HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n"
	    "Content-Length: %zu\r\n\r\n%s", strlen(smuggled), smuggled);
	ck_assert_int_eq(raw_from("127.0.0.1", req, (size_t)n, buf, sizeof buf, 30), 400);
	ck_assert_int_eq(count_answers(buf), 1);
	/* Content-Length with Transfer-Encoding */
	n = snprintf(req, sizeof req, "POST /v1/check HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
	    "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n%s\r\n0\r\n\r\n%s", strlen(body), body,
	    smuggled);
	ck_assert_int_eq(raw_from("127.0.0.1", req, (size_t)n, buf, sizeof buf, 30), 400);
	ck_assert_ptr_nonnull(strcasestr(buf, "\r\nConnection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "Transfer-Encoding"));
	ck_assert_int_eq(count_answers(buf), 1);
	/* one value twice: one length; the next request on the connection is answered */
	n = snprintf(req, sizeof req, "POST /v1/check HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nContent-Length: %zu\r\n\r\n%sGET /healthz HTTP/1.1\r\nHost: t\r\n"
	    "Connection: close\r\n\r\n", strlen(body), strlen(body), body);
	ck_assert_int_eq(raw_from("127.0.0.1", req, (size_t)n, buf, sizeof buf, 30), 422);
	ck_assert_int_eq(count_answers(buf), 2);
	ck_assert_ptr_nonnull(strstr(buf, "{\"status\":\"ok\"}"));
	/* a Content-Length that is not a number: libmicrohttpd answers 400 itself
	 * (an HTML page it does not let the application replace: docs/operations.md) */
	n = snprintf(req, sizeof req, "POST /v1/check HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
	    "Content-Length: abc\r\n\r\n%s", body);
	ck_assert_int_eq(raw_from("127.0.0.1", req, (size_t)n, buf, sizeof buf, 30), 400);
	srv_stop(&server);
}
END_TEST

/* Query strings, paths, headers and values an attacker sends: every one
 * gets a problem+json answer naming what is wrong. */
START_TEST(test_server_hostile_requests)
{
	static char buf[1 << 16];
	static const char lr_query[] = "{\"model\":\"mlp\",\"space\":{\"hidden\":{\"_type\":\"choice\",\"_value\":[64,128]},"
	    "\"depth\":{\"_type\":\"randint\",\"_value\":[1,4]},\"lr\":{\"_type\":\"loguniform\",\"_value\":[0.0001,0.1]}},"
	    "\"budgets\":{\"memory\":\"2GiB\"}}";
	char path[256], id[33], *big;
	size_t cap = 200000, n;
	json_t *j;

	server_start(NULL);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", lr_query, NULL, buf, sizeof buf), 201);
	j = json_loads(body_of(buf), 0, NULL);
	ck_assert_ptr_nonnull(j);
	snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "id")));
	json_decref(j);
	big = malloc(cap);
	ck_assert_ptr_nonnull(big);

	/* 200 query parameters: answered (422, unknown names), not dropped after 30 s */
	n = (size_t)snprintf(big, cap, "/v1/reductions/%s/check?hidden=64&depth=2", id);
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(big + n, cap - n, "&p%d=1", i);
	ck_assert_int_eq(get_from("127.0.0.1", big, buf, sizeof buf), 422);
	/* the most parameters and bytes allowed, with 15 KB of header fields: answered */
	n = (size_t)snprintf(big, cap, "/v1/reductions/%s/check?hidden=64", id);
	for (int i = 0; i < SRV_MAX_QUERY_PARAMS - 1; i++)
		n += (size_t)snprintf(big + n, cap - n, "&param_%03d=%050d", i, i);
	ck_assert_uint_le(n, SRV_MAX_URI);
	{
		char *req = malloc(cap);
		size_t m;
		ck_assert_ptr_nonnull(req);
		m = (size_t)snprintf(req, cap, "GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\nX-Pad: ", big);
		memset(req + m, 'z', 15000);
		m += 15000;
		m += (size_t)snprintf(req + m, cap - m, "\r\n\r\n");
		ck_assert_int_eq(raw_from("127.0.0.1", req, m, buf, sizeof buf, 40), 422);
		ck_assert_ptr_nonnull(strstr(body_of(buf), "no parameter"));
		free(req);
	}
	/* more parameters: 414 naming the limit and the POST form */
	n = (size_t)snprintf(big, cap, "/v1/reductions/%s/check?", id);
	for (int i = 0; i < 600; i++)
		n += (size_t)snprintf(big + n, cap - n, "%sp%d=1", i ? "&" : "", i);
	ck_assert_int_eq(get_from("127.0.0.1", big, buf, sizeof buf), 414);
	ck_assert_ptr_nonnull(strstr(buf, "application/problem+json"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "512 parameters"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "POST /v1/reductions/{id}/check"));
	/* 5,000 bare '&' (and 3,000 tiny parameters): refused at once with the
	 * same 414, not left to exhaust libmicrohttpd's connection memory and
	 * hang until the request deadline */
	n = (size_t)snprintf(big, cap, "/v1/reductions/%s/check?hidden=64", id);
	memset(big + n, '&', 5000);
	big[n + 5000] = '\0';
	ck_assert_int_eq(get_from("127.0.0.1", big, buf, sizeof buf), 414);
	ck_assert_ptr_nonnull(strstr(buf, "application/problem+json"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "512 parameters"));
	n = (size_t)snprintf(big, cap, "/v1/reductions/%s/check?", id);
	for (int i = 0; i < 3000; i++)
		n += (size_t)snprintf(big + n, cap - n, "%sq=", i ? "&" : "");
	ck_assert_int_eq(get_from("127.0.0.1", big, buf, sizeof buf), 414);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "POST /v1/reductions/{id}/check"));
	/* a longer URI: 414 */
	n = (size_t)snprintf(big, cap, "/v1/reductions/%s/check?x=", id);
	memset(big + n, 'y', 40000);
	big[n + 40000] = '\0';
	ck_assert_int_eq(get_from("127.0.0.1", big, buf, sizeof buf), 414);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "32768 bytes"));
	/* header fields beyond 16 KiB: 431 as problem+json */
	n = (size_t)snprintf(big, cap, "GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
	for (int i = 0; i < 8; i++) {
		n += (size_t)snprintf(big + n, cap - n, "X-Pad-%d: ", i);
		memset(big + n, 'z', 4000);
		n += 4000;
		n += (size_t)snprintf(big + n, cap - n, "\r\n");
	}
	n += (size_t)snprintf(big + n, cap - n, "\r\n");
	ck_assert_int_eq(raw_from("127.0.0.1", big, n, buf, sizeof buf, 40), 431);
	ck_assert_ptr_nonnull(strstr(buf, "application/problem+json"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "the limit is 16384"));
	free(big);

	/* an encoded NUL does not cut the path short */
	ck_assert_int_eq(http("GET", "/healthz%00.html", NULL, NULL, NULL, buf, sizeof buf), 400);
	ck_assert_ptr_nonnull(strstr(buf, "application/problem+json"));
	ck_assert_int_eq(http("GET", "/v1/templates/resnet50%00junk", NULL, NULL, NULL, buf, sizeof buf), 400);
	/* a parameter given twice: which one counts would be a guess */
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&hidden=128&depth=2", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"hidden\""));
	/* numbers are decimal: 0x40 is not 64 */
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=0x40&depth=2", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	snprintf(path, sizeof path, "/v1/reductions/%s?timeout=0x5", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 400);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json",
	    "{\"model\":\"mlp\",\"space\":{\"depth\":{\"_type\":\"randint\",\"_value\":[1,4]}},\"budgets\":{\"memory\":\"0x1GiB\"}}",
	    NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.budgets.memory\""));
	/* a continuous parameter that passes through: in its range, a number */
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2&lr=0.01", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2&lr=5.0", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.lr\""));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "loguniform [0.0001, 0.1]"));
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2&lr=1e-400", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2&lr=x", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.lr\""));
	/* a name without "=": MHD hands it over with no value (NULL, not "").
	 * The text path read lr's NULL as a number and the server died of
	 * SIGSEGV on that one request (dn_decimal); a discrete one was read as
	 * null, which no query string can say. 422 naming it, and on. */
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth=2&lr", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.lr\""));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "has no value"));
	snprintf(path, sizeof path, "/v1/reductions/%s/check?hidden=64&depth&lr=0.01", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.depth\""));
	ck_assert_int_eq(http("GET", "/healthz", NULL, NULL, NULL, buf, sizeof buf), 200);
	snprintf(path, sizeof path, "/v1/reductions/%s/check", id);
	ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":64,\"depth\":2,\"lr\":5.0}}",
	    NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.config.lr\""));
	ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":64,\"depth\":2,\"lr\":\"x\"}}",
	    NULL, buf, sizeof buf), 422);
	ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":64,\"depth\":2,\"lr\":0.001}}",
	    NULL, buf, sizeof buf), 200);
	/* a field beside config is refused, not ignored */
	ck_assert_int_eq(http("POST", path, "application/json", "{\"config\":{\"hidden\":64,\"depth\":2},"
	    "\"budgets\":{\"memory\":\"1GiB\"}}", NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.budgets\""));
	srv_stop(&server);
}
END_TEST

/* A JSON-lines stream the server stops (SIGTERM sets srv.stopping) ends
 * without the chunked encoding's last chunk, so that a client sees a cut
 * transfer (curl: exit 18). It ended with "0\r\n\r\n", a complete
 * 200 of 877,329 of 804,000,000 lines: a rolling restart handed out part
 * of the feasible set as all of it. 6,000,000 configurations here (two
 * integers the model does not read), far more than are sent before the
 * flag is set. */
START_TEST(test_server_stream_cut_by_stop)
{
	static const char query[] = "{\"model\":\"mlp\",\"space\":{\"hidden\":{\"_type\":\"choice\",\"_value\":[64,128]},"
	    "\"depth\":{\"_type\":\"randint\",\"_value\":[1,4]},\"p0\":{\"_type\":\"randint\",\"_value\":[0,1000]},"
	    "\"p1\":{\"_type\":\"randint\",\"_value\":[0,1000]}},\"budgets\":{\"memory\":\"2GiB\"}}";
	static char buf[1 << 16];
	char req[256], tail[16], id[33];
	size_t got = 0, n;
	int fd, lines = 0;
	json_t *j;

	server_start(NULL);
	j = post_reduction_answer(json_loads(query, 0, NULL), 201, id);
	ck_assert_str_eq(json_string_value(json_object_get(j, "feasible")), "6000000");
	json_decref(j);
	n = (size_t)snprintf(req, sizeof req,
	    "GET /v1/reductions/%s/configurations?format=jsonl HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", id);
	fd = connect_from("127.0.0.1", 40);
	ck_assert_int_eq(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
	/* some lines, then the stop */
	while (lines < 1000) {
		ssize_t k = recv(fd, buf, sizeof buf, 0);
		ck_assert_int_gt(k, 0);
		for (ssize_t i = 0; i < k; i++)
			lines += buf[i] == '\n';
	}
	atomic_store(&server.stopping, 1);
	memset(tail, 0, sizeof tail);
	for (;;) {
		ssize_t k = recv(fd, buf, sizeof buf, 0);
		if (k <= 0)
			break;
		got += (size_t)k;
		if (k >= 5)
			memcpy(tail, buf + k - 5, 5);
		else {
			memmove(tail, tail + k, (size_t)(5 - k));
			memcpy(tail + 5 - k, buf, (size_t)k);
		}
	}
	close(fd);
	ck_assert_msg(strcmp(tail, "0\r\n\r\n") != 0, "the stopped stream ended as a complete one (%zu more bytes)",
	    got);
	ck_assert_uint_lt(got, (size_t)100 << 20);      /* it stopped, not ran to the end */
	atomic_store(&server.stopping, 0);
	srv_stop(&server);
}
END_TEST

/* A second server on a port in use fails at start (it shared the port,
 * and the kernel split the connections between the two). */
START_TEST(test_server_port_taken)
{
	struct srv second;
	struct dn_error err;
	char listen[64], buf[4096];

	server_start(NULL);
	snprintf(listen, sizeof listen, "127.0.0.1:%d", server.cfg.port);
	ck_assert_int_eq(server_start_on(&second, listen, NULL, NULL, &err), -1);
	ck_assert_str_eq(err.path, "--listen");
	ck_assert_ptr_nonnull(strstr(err.message, "in use"));
	srv_stop(&second);
	ck_assert_int_eq(http("GET", "/healthz", NULL, NULL, NULL, buf, sizeof buf), 200);
	srv_stop(&server);
}
END_TEST

/* strdup failures injected: the test binary links with --wrap=strdup
 * (Makefile.am); a copy of fail_strdup_of fails, every other is libc's */
char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);
static const char *fail_strdup_of;

char *
__wrap_strdup(const char *s)
{
	if (fail_strdup_of != NULL && strcmp(s, fail_strdup_of) == 0)
		return NULL;
	return __real_strdup(s);
}

/* A token that cannot be copied fails the start: the server never runs
 * with part of its tokens (it started with the first token only, and
 * answered 401 to the second). */
START_TEST(test_server_tokens_out_of_memory)
{
	char file[] = "/tmp/dnnsat-test-tokens-XXXXXX";
	const char *text = "first-token-0123456789\nsecond-token-0123456789\n";
	char *argv[] = { "test", "--listen", "127.0.0.1:0", "--access-log", "off", "--token-file", file };
	struct dn_error err;
	int fd = mkstemp(file);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	memset(&server, 0, sizeof server);
	memset(&err, 0, sizeof err);
	setenv("DNNSAT_DATA_DIR", src_path("schemas"), 1);
	ck_assert_int_eq(srv_config_parse(7, argv, &server.cfg, &err), 0);
	fail_strdup_of = "second-token-0123456789";
	ck_assert_int_eq(srv_start(&server, &err), -1);
	fail_strdup_of = NULL;
	ck_assert_int_eq(err.code, DN_ENOMEM);
	ck_assert_str_eq(err.path, "--token-file");
	ck_assert_ptr_nonnull(strstr(err.message, "out of memory reading"));
	srv_stop(&server);
	unlink(file);
}
END_TEST

/* The whole file at src_path(rel) (malloc'd), its length in *len. */
static char *
slurp(const char *rel, size_t *len)
{
	FILE *f = fopen(src_path(rel), "rb");
	char *data;
	long n;

	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	data = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(data);
	ck_assert_uint_eq(fread(data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return data;
}

/* The string member `key` of the JSON body of resp, copied into out. */
static void
member(const char *resp, const char *key, char *out, size_t cap)
{
	json_t *j = json_loads(body_of(resp), 0, NULL);

	ck_assert_msg(json_string_value(json_object_get(j, key)) != NULL, "no %s in %s", key, resp);
	snprintf(out, cap, "%s", json_string_value(json_object_get(j, key)));
	json_decref(j);
}

/* srv_sha256_hex against FIPS 180-4's test vectors (and sha256sum's answer
 * for the empty input), and a one-byte change that changes every id. */
START_TEST(test_sha256)
{
	static const char million_a_head[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
	char hex[SRV_SHA256_HEX], other[SRV_SHA256_HEX];
	char *a = malloc(1000000);

	srv_sha256_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	srv_sha256_hex("", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	srv_sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	ck_assert_ptr_nonnull(a);
	memset(a, 'a', 1000000);
	srv_sha256_hex(a, 1000000, hex);
	ck_assert_str_eq(hex, million_a_head);
	a[500000] = 'b';
	srv_sha256_hex(a, 1000000, other);
	ck_assert_str_ne(hex, other);
	free(a);
	srv_sha256_hex("{\"dnnsat_model\":1,\"name\":\"a\"}", 30, hex);
	srv_sha256_hex("{\"dnnsat_model\":1,\"name\":\"b\"}", 30, other);
	ck_assert_str_ne(hex, other);
	ck_assert_int_eq((int)strlen(hex), 64);
}
END_TEST

/* POST /v1/models (api_models.c): an ONNX upload is 201 and then 200 with
 * the same id, GET returns the model, a reduction by {"id"} is the
 * reduction with the model inline (the same reduction id), and the refused
 * bodies are problem+json naming what is wrong. */
START_TEST(test_server_models)
{
	static char buf[1 << 20];
	static const char *const extra[] = { "--max-model-bytes", "100000", NULL };
	char id[SRV_SHA256_HEX], again[SRV_SHA256_HEX], rid[33], path[160], q[1024], own[SRV_SHA256_HEX];
	char legacy[33], key[80];
	size_t len, blen;
	char *onnx = slurp("tests/data/onnx/tiny_cnn.onnx", &len), *big = slurp("tests/data/onnx/bert_tiny.onnx", &blen);
	json_t *j, *model;
	char *inline_q, *text;
	struct cache_entry ce;

	server_start_with(NULL, extra);
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/octet-stream", onnx, len, NULL, buf, sizeof buf),
	    201);
	ck_assert_ptr_nonnull(strstr(buf, "Location: /v1/models/"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"params\":5466"));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"hyperparameters\":{\"batch\":1}"));
	member(buf, "id", id, sizeof id);
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/onnx", onnx, len, NULL, buf, sizeof buf), 200);
	member(buf, "id", again, sizeof again);
	ck_assert_str_eq(id, again);
	/* dim repeats; the renamed model is another model */
	ck_assert_int_eq(http_bytes("POST", "/v1/models?dim=batch:bs&name=t&dim=x=y", "application/onnx", onnx, len,
	    NULL, buf, sizeof buf), 201);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"hyperparameters\":{\"bs\":1}"));
	member(buf, "id", again, sizeof again);
	ck_assert_str_ne(id, again);
	/* GET, and the same reduction by id and inline */
	snprintf(path, sizeof path, "/v1/models/%s", id);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	j = json_loads(body_of(buf), 0, NULL);
	model = json_incref(json_object_get(j, "model"));
	ck_assert_int_eq(json_integer_value(json_object_get(model, "dnnsat_model")), 1);
	json_decref(j);
	/* the id is the SHA-256 of the model's canonical text, all 64 digits */
	text = json_dumps(model, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
	srv_sha256_hex(text, strlen(text), own);
	ck_assert_str_eq(id, own);
	/* a model stored by an earlier version under its 32-digit id is served */
	srv_content_hash(text, "dnnsat-model", legacy);
	snprintf(key, sizeof key, "model:%s", legacy);
	memset(&ce, 0, sizeof ce);
	ce.request = text;
	ce.result = "{\"name\":\"old\"}";
	ce.final = 1;
	ck_assert_int_eq(cache_put(server.cache, key, &ce), 0);
	snprintf(path, sizeof path, "/v1/models/%s", legacy);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 200);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"name\":\"old\""));
	/* and one whose text does not hash to it is not (deleted) */
	legacy[0] = legacy[0] == '0' ? '1' : '0';
	snprintf(key, sizeof key, "model:%s", legacy);
	ck_assert_int_eq(cache_put(server.cache, key, &ce), 0);
	snprintf(path, sizeof path, "/v1/models/%s", legacy);
	ck_assert_int_eq(http("GET", path, NULL, NULL, NULL, buf, sizeof buf), 404);
	free(text);
	snprintf(q, sizeof q, "{\"model\":{\"id\":\"%s\"},\"device\":\"t4\",\"budgets\":{\"memory\":\"2GiB\"},"
	    "\"space\":{\"batch\":{\"_type\":\"choice\",\"_value\":[1,64,4096]}}}", id);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", q, NULL, buf, sizeof buf), 201);
	member(buf, "id", rid, sizeof rid);
	j = json_loads(q, 0, NULL);
	json_object_set_new(j, "model", model);
	inline_q = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", inline_q, NULL, buf, sizeof buf), 200);
	member(buf, "id", again, sizeof again);
	ck_assert_str_eq(rid, again);
	/* the JSON of GET's model is the same model */
	j = json_loads(inline_q, 0, NULL);
	free(inline_q);
	inline_q = json_dumps(json_object_get(j, "model"), JSON_COMPACT);
	json_decref(j);
	ck_assert_int_eq(http("POST", "/v1/models", "application/json", inline_q, NULL, buf, sizeof buf), 200);
	member(buf, "id", again, sizeof again);
	ck_assert_str_eq(id, again);
	free(inline_q);
	/* ids that name nothing */
	ck_assert_int_eq(http("POST", "/v1/reductions", "application/json", "{\"model\":{\"id\":\""
	    "0123456789abcdef0123456789abcdef\"},\"space\":{}}", NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.model.id\""));
	ck_assert_ptr_nonnull(strstr(body_of(buf), "evicted"));
	ck_assert_int_eq(http("POST", "/v1/estimate", "application/json", "{\"model\":{\"id\":7}}", NULL, buf,
	    sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.model.id\""));
	ck_assert_int_eq(http("GET", "/v1/models/0123456789abcdef0123456789abcdef", NULL, NULL, NULL, buf, sizeof buf),
	    404);
	ck_assert_ptr_nonnull(strstr(buf, "application/problem+json"));
	/* refused bodies */
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/onnx", onnx, len / 2, NULL, buf, sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "invalid-onnx"));
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/onnx", "\xff\xff\xff\xff", 4, NULL, buf,
	    sizeof buf), 422);
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/onnx", onnx, 0, NULL, buf, sizeof buf), 400);
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "text/plain", onnx, len, NULL, buf, sizeof buf), 415);
	ck_assert_int_eq(http_bytes("POST", "/v1/models", "application/onnx", big, blen, NULL, buf, sizeof buf), 413);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "--max-model-bytes"));
	ck_assert_int_eq(http_bytes("POST", "/v1/models?dim=nothing", "application/onnx", onnx, len, NULL, buf,
	    sizeof buf), 400);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"dim\""));
	ck_assert_int_eq(http("POST", "/v1/models", "application/json", "{\"dnnsat_model\":1}", NULL, buf,
	    sizeof buf), 422);
	ck_assert_ptr_nonnull(strstr(body_of(buf), "\"path\":\"$.layers\""));
	free(onnx);
	free(big);
	srv_stop(&server);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("server");
	TCase *t = tcase_create("modules");

	tcase_set_timeout(t, 300);
	tcase_add_test(t, test_routes);
	tcase_add_test(t, test_config);
	tcase_add_test(t, test_canonical_id);
	tcase_add_test(t, test_pool);
	tcase_add_test(t, test_json_text);
	tcase_add_test(t, test_registry);
	tcase_add_test(t, test_registry_bytes);
	tcase_add_test(t, test_check_args);
	tcase_add_test(t, test_server_statuses);
	tcase_add_test(t, test_server_tokens);
	tcase_add_test(t, test_server_build_bounded);
	tcase_add_test(t, test_server_queue_deadline);
	tcase_add_test(t, test_server_progress_saved);
	tcase_add_test(t, test_server_busy_reduction);
	tcase_add_test(t, test_server_query_bytes);
	tcase_add_test(t, test_server_tokens_out_of_memory);
	tcase_add_test(t, test_server_slow_clients);
	tcase_add_test(t, test_server_hostile_requests);
	tcase_add_test(t, test_server_framing);
	tcase_add_test(t, test_server_every_answer_logged);
	tcase_add_test(t, test_server_caching);
	tcase_add_test(t, test_server_caching_revalidate);
	tcase_add_test(t, test_server_stream_cut_by_stop);
	tcase_add_test(t, test_server_bounds_409);
	tcase_add_test(t, test_server_samples_none);
	tcase_add_test(t, test_server_damaged_reduction);
	tcase_add_test(t, test_server_buffered_bounded);
	tcase_add_test(t, test_server_port_taken);
	tcase_add_test(t, test_sha256);
	tcase_add_test(t, test_server_models);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return run_suite(suite(), 0);
}
