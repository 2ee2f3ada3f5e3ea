/*
 * test_cache.c - the result cache (cache/cache.h) on both backends. The
 * semantic cases (get/put/miss, a final entry kept against a non-final one,
 * progress blobs with NUL bytes, exact statistics, concurrent threads) run
 * on the memory backend always and on PostgreSQL when
 * DNNSAT_TEST_DATABASE_URL names a server (tests/unit/test_cache.sh starts a
 * throwaway one). PostgreSQL adds: the schema created on first use, a second
 * cache object seeing the first one's entries, servers migrating at once, an
 * unreachable database answering CACHE_DOWN fast, the distributed count's
 * jobs (cache_jobs.h: published once, claimed by one owner at a time, a
 * lapsed lease taken over, committed once), and - with
 * DNNSAT_TEST_PG_DIR - the database stopping and coming back.
 */
#include <check.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cache_jobs.h"
#include "test_util.h"

enum { BK_MEM, BK_PG };

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *
db_url(void)
{
	const char *url = getenv("DNNSAT_TEST_DATABASE_URL");

	ck_assert_ptr_nonnull(url);
	return url;
}

/* A fresh cache on `backend`: 1 MiB of memory, or a pool of `pool`
 * connections to the test database (which must be up). */
static struct cache *
open_cache(int backend, int pool)
{
	struct dn_error err;
	struct cache *c;
	char detail[256];

	if (backend == BK_MEM) {
		c = cache_mem_new(1 << 20);
		ck_assert_ptr_nonnull(c);
		ck_assert_str_eq(cache_state(c, 1, detail, sizeof detail), "memory");
		return c;
	}
	memset(&err, 0, sizeof err);
	c = cache_pg_new(db_url(), pool, &err);
	ck_assert_msg(c != NULL, "cache_pg_new: %s", err.message);
	ck_assert_msg(strcmp(cache_state(c, 1, detail, sizeof detail), "ok") == 0,
	    "database not ok: %s", detail);
	ck_assert_str_eq(detail, "");
	return c;
}

static struct cache_entry
make_entry(char *request, char *result, int final)
{
	struct cache_entry e;

	memset(&e, 0, sizeof e);
	e.request = request;
	e.result = result;
	e.final = final;
	return e;
}

/* Gets `key`, asserting a hit with these strings and finality. */
static void
expect_hit(struct cache *c, const char *key, const char *request, const char *result, int final)
{
	struct cache_entry out;
	int rc = cache_get(c, key, &out);

	ck_assert_msg(rc == CACHE_HIT, "%s: got %d, want a hit", key, rc);
	ck_assert_str_eq(out.request, request);
	ck_assert_str_eq(out.result, result);
	ck_assert_int_eq(out.final, final);
	cache_entry_clear(&out);
	ck_assert_ptr_null(out.request);
}

static void
expect_miss(struct cache *c, const char *key)
{
	struct cache_entry out;
	int rc = cache_get(c, key, &out);

	ck_assert_msg(rc == CACHE_MISS, "%s: got %d, want a miss", key, rc);
	ck_assert_ptr_null(out.request);
	ck_assert_ptr_null(out.result);
	ck_assert_ptr_null(out.progress);
	ck_assert_uint_eq(out.progress_len, 0);
}

START_TEST(test_get_put_miss)
{
	struct cache *c = open_cache(_i, 2);
	struct cache_entry e = make_entry("{\"q\":1}", "{\"status\":\"exact\",\"feasible\":\"12\"}", 1);
	struct cache_entry out;

	cache_delete(c, "gpm-1");
	cache_delete(c, "gpm-2");
	expect_miss(c, "gpm-1");
	ck_assert_int_eq(cache_put(c, "gpm-1", &e), 0);
	expect_hit(c, "gpm-1", "{\"q\":1}", "{\"status\":\"exact\",\"feasible\":\"12\"}", 1);
	ck_assert_int_eq(cache_get(c, "gpm-1", &out), CACHE_HIT);
	ck_assert_ptr_null(out.progress);
	ck_assert_uint_eq(out.progress_len, 0);
	cache_entry_clear(&out);
	expect_miss(c, "gpm-2");
	expect_miss(c, "gpm-");         /* a prefix is another key */

	/* non-final replaces non-final */
	e = make_entry("r2", "bounds a", 0);
	ck_assert_int_eq(cache_put(c, "gpm-2", &e), 0);
	e.result = "bounds b";
	ck_assert_int_eq(cache_put(c, "gpm-2", &e), 0);
	expect_hit(c, "gpm-2", "r2", "bounds b", 0);
	expect_hit(c, "gpm-1", "{\"q\":1}", "{\"status\":\"exact\",\"feasible\":\"12\"}", 1);

	ck_assert_int_eq(cache_delete(c, "gpm-1"), 0);
	expect_miss(c, "gpm-1");
	ck_assert_int_eq(cache_delete(c, "gpm-1"), 0);  /* absent: still 0 */
	expect_hit(c, "gpm-2", "r2", "bounds b", 0);
	cache_free(c);
}
END_TEST

START_TEST(test_final_kept)
{
	struct cache *c = open_cache(_i, 2);
	struct cache_entry e;
	struct cache_stats s0, s1;

	cache_delete(c, "fin");
	cache_get_stats(c, &s0);
	e = make_entry("req", "bounds 1", 0);
	ck_assert_int_eq(cache_put(c, "fin", &e), 0);
	e = make_entry("req", "exact", 1);
	ck_assert_int_eq(cache_put(c, "fin", &e), 0);
	expect_hit(c, "fin", "req", "exact", 1);
	/* a late non-final put (a slower replica's bounds) is ignored */
	e = make_entry("req", "bounds 2", 0);
	ck_assert_int_eq(cache_put(c, "fin", &e), 0);
	expect_hit(c, "fin", "req", "exact", 1);
	/* final replaces final */
	e = make_entry("req", "exact again", 1);
	ck_assert_int_eq(cache_put(c, "fin", &e), 0);
	expect_hit(c, "fin", "req", "exact again", 1);
	cache_get_stats(c, &s1);
	ck_assert_uint_eq(s1.puts - s0.puts, 3);        /* the ignored one is not counted */
	ck_assert_uint_eq(s1.hits - s0.hits, 3);
	ck_assert_uint_eq(s1.errors, 0);
	cache_delete(c, "fin");
	cache_free(c);
}
END_TEST

START_TEST(test_progress_blob)
{
	struct cache *c = open_cache(_i, 2);
	unsigned char blob[4099];
	struct cache_entry e = make_entry("req", "running", 0), out;

	for (size_t i = 0; i < sizeof blob; i++)
		blob[i] = (unsigned char)(i * 37 % 256);       /* NULs every 256 bytes */
	ck_assert_int_eq(blob[0], 0);
	e.progress = blob;
	e.progress_len = sizeof blob;
	cache_delete(c, "prog");
	ck_assert_int_eq(cache_put(c, "prog", &e), 0);
	memset(blob, 0xff, sizeof blob);                /* the cache kept its own copy */
	ck_assert_int_eq(cache_get(c, "prog", &out), CACHE_HIT);
	ck_assert_uint_eq(out.progress_len, sizeof blob);
	ck_assert_ptr_nonnull(out.progress);
	for (size_t i = 0; i < out.progress_len; i++)
		ck_assert_int_eq(((unsigned char *)out.progress)[i], (int)(i * 37 % 256));
	ck_assert_int_eq(out.final, 0);
	cache_entry_clear(&out);
	/* the read path leaves the blob in the store */
	ck_assert_int_eq(cache_get_result(c, "prog", &out), CACHE_HIT);
	ck_assert_ptr_null(out.progress);
	ck_assert_uint_eq(out.progress_len, 0);
	ck_assert_str_eq(out.request, "req");
	cache_entry_clear(&out);
	ck_assert_int_eq(cache_get(c, "prog", &out), CACHE_HIT);
	ck_assert_uint_eq(out.progress_len, sizeof blob);
	cache_entry_clear(&out);

	/* the final answer carries no progress */
	e = make_entry("req", "done", 1);
	ck_assert_int_eq(cache_put(c, "prog", &e), 0);
	ck_assert_int_eq(cache_get(c, "prog", &out), CACHE_HIT);
	ck_assert_ptr_null(out.progress);
	ck_assert_uint_eq(out.progress_len, 0);
	ck_assert_str_eq(out.result, "done");
	cache_entry_clear(&out);
	cache_delete(c, "prog");
	cache_free(c);
}
END_TEST

/* Exact counters on both; entries and bytes exact on memory, and on
 * PostgreSQL from a fresh object's count (it counts on first use). */
START_TEST(test_stats)
{
	struct cache *c = open_cache(_i, 2), *fresh;
	struct cache_entry e = make_entry("abc", "defgh", 1), out;
	struct cache_stats s0, s1;
	static const char *const keys[3] = { "st-1", "st-22", "st-333" };
	uint64_t want_bytes = 0;

	for (int i = 0; i < 3; i++) {
		cache_delete(c, keys[i]);
		want_bytes += strlen(keys[i]) + 3 + 5;
	}
	fresh = _i == BK_PG ? open_cache(_i, 1) : c;
	cache_get_stats(fresh, &s0);
	if (fresh != c)
		cache_free(fresh);
	cache_get_stats(c, &s1);
	ck_assert_uint_eq(s1.hits, 0);
	ck_assert_uint_eq(s1.misses, 0);
	ck_assert_uint_eq(s1.puts, 0);

	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(cache_put(c, keys[i], &e), 0);
	ck_assert_int_eq(cache_get(c, "st-1", &out), CACHE_HIT);
	cache_entry_clear(&out);
	ck_assert_int_eq(cache_get(c, "st-22", &out), CACHE_HIT);
	cache_entry_clear(&out);
	ck_assert_int_eq(cache_get(c, "st-4444", &out), CACHE_MISS);

	fresh = _i == BK_PG ? open_cache(_i, 1) : c;
	cache_get_stats(fresh, &s1);
	ck_assert_uint_eq(s1.entries, s0.entries + 3);
	ck_assert_uint_eq(s1.bytes, s0.bytes + want_bytes);
	if (fresh != c)
		cache_free(fresh);
	cache_get_stats(c, &s1);
	ck_assert_uint_eq(s1.hits, 2);
	ck_assert_uint_eq(s1.misses, 1);
	ck_assert_uint_eq(s1.puts, 3);
	ck_assert_uint_eq(s1.errors, 0);
	if (_i == BK_MEM) {
		ck_assert_uint_eq(s1.entries, 3);
		ck_assert_uint_eq(s1.bytes, want_bytes);
	}
	for (int i = 0; i < 3; i++)
		cache_delete(c, keys[i]);
	cache_free(c);
}
END_TEST

/* Every entry is 100 bytes (key 5 + request 45 + result 50) under a
 * 1000-byte cap; the comments track the recency order, newest first. */
START_TEST(test_mem_lru)
{
	struct cache *c = cache_mem_new(1000);
	char key[16], req[64], res[64], big[2048], res300[256];
	struct cache_entry e = make_entry(req, res, 1);
	struct cache_stats s;

	memset(req, 'q', 45);
	req[45] = '\0';
	memset(res, 'r', 50);
	res[50] = '\0';
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof key, "key-%d", i);
		ck_assert_int_eq(cache_put(c, key, &e), 0);
	}
	cache_get_stats(c, &s);
	ck_assert_uint_eq(s.entries, 10);
	ck_assert_uint_eq(s.bytes, 1000);
	expect_hit(c, "key-0", req, res, 1);            /* 0 9 8 ... 1 */
	req[44] = '\0';                                 /* "key-10" is one longer */
	ck_assert_int_eq(cache_put(c, "key-10", &e), 0); /* 10 0 9 ... 2; 1 evicted */
	req[44] = 'q';
	cache_get_stats(c, &s);
	ck_assert_uint_eq(s.entries, 10);
	ck_assert_uint_eq(s.bytes, 1000);
	expect_miss(c, "key-1");
	expect_hit(c, "key-0", req, res, 1);            /* 0 10 9 ... 2 */
	expect_hit(c, "key-2", req, res, 1);            /* 2 0 10 9 ... 3 */

	/* larger than the whole cache: not stored, nothing evicted */
	memset(big, 'b', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	e.result = big;
	ck_assert_int_eq(cache_put(c, "huge", &e), 0);
	expect_miss(c, "huge");
	cache_get_stats(c, &s);
	ck_assert_uint_eq(s.entries, 10);

	/* key-0 grows by 200 bytes: the two oldest (3, 4) go */
	memset(res300, 's', 250);
	res300[250] = '\0';
	e.result = res300;
	ck_assert_int_eq(cache_put(c, "key-0", &e), 0);
	cache_get_stats(c, &s);
	ck_assert_uint_eq(s.entries, 8);
	ck_assert_uint_eq(s.bytes, 1000);
	expect_miss(c, "key-3");
	expect_miss(c, "key-4");
	expect_hit(c, "key-5", req, res, 1);
	expect_hit(c, "key-0", req, res300, 1);
	expect_hit(c, "key-10", req + 1, res, 1);
	cache_free(c);
}
END_TEST

/* ---- concurrent threads ---- */

#define CONC_KEYS 64            /* keys below CONC_KEYS/2 may be deleted */

struct conc_arg {
	struct cache *c;
	int id, ops;
	uint64_t gets, hits, misses, down;
	int failures;
	char failure[160];
};

static void
conc_fail(struct conc_arg *a, const char *what, int key)
{
	if (a->failures++ == 0)
		snprintf(a->failure, sizeof a->failure, "thread %d, key %d: %s", a->id, key, what);
}

/* Mixed gets, puts (a third final) and deletes. Every hit must belong to
 * its key, and on a key that is never deleted, once this thread has stored
 * a final entry every later read must be final. */
static void *
conc_run(void *p)
{
	struct conc_arg *a = p;
	uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(a->id + 1);
	char key[32], req[32], res[64], want[40];
	unsigned char blob[16];
	int final_stored[CONC_KEYS] = { 0 };

	for (int n = 0; n < a->ops; n++) {
		int k = (int)(test_xorshift(&rng) % CONC_KEYS);
		int op = (int)(test_xorshift(&rng) % 10);
		struct cache_entry e, out;

		snprintf(key, sizeof key, "conc-%d", k);
		snprintf(req, sizeof req, "req-%d", k);
		if (op < 4) {
			int rc = cache_get(a->c, key, &out);

			a->gets++;
			if (rc == CACHE_HIT) {
				a->hits++;
				snprintf(want, sizeof want, "res-%d-", k);
				if (strcmp(out.request, req) != 0 || strncmp(out.result, want, strlen(want)) != 0)
					conc_fail(a, "entry of another key", k);
				if (out.progress_len != (out.final ? 0 : sizeof blob) ||
				    (out.progress != NULL && ((unsigned char *)out.progress)[3] != (unsigned char)k))
					conc_fail(a, "progress does not match", k);
				if (k >= CONC_KEYS / 2 && final_stored[k] && !out.final)
					conc_fail(a, "a final entry was replaced by a non-final one", k);
			} else if (rc == CACHE_MISS) {
				a->misses++;
				if (k >= CONC_KEYS / 2 && final_stored[k])
					conc_fail(a, "a stored final entry vanished", k);
			} else {
				a->down++;
			}
			cache_entry_clear(&out);
		} else if (op < 9) {
			int final = test_xorshift(&rng) % 3 == 0;

			snprintf(res, sizeof res, "res-%d-%s-t%d-%d", k, final ? "final" : "bounds", a->id, n);
			memset(&e, 0, sizeof e);
			e.request = req;
			e.result = res;
			e.final = final;
			if (!final) {
				memset(blob, 0, sizeof blob);
				blob[3] = (unsigned char)k;
				e.progress = blob;
				e.progress_len = sizeof blob;
			}
			if (cache_put(a->c, key, &e) != 0)
				conc_fail(a, "put failed", k);
			else if (final)
				final_stored[k] = 1;
		} else if (k < CONC_KEYS / 2) {
			if (cache_delete(a->c, key) != 0)
				conc_fail(a, "delete failed", k);
		}
	}
	return NULL;
}

/* Runs 4 threads of `ops` operations each on `c`; checks their reports and
 * that the cache counted exactly the lookups they made. */
static void
conc_check(struct cache *c, int ops)
{
	struct conc_arg args[4];
	pthread_t tids[4];
	struct cache_stats s;
	uint64_t gets = 0, hits = 0;
	char key[32];

	for (int i = 0; i < CONC_KEYS; i++) {
		snprintf(key, sizeof key, "conc-%d", i);
		ck_assert_int_eq(cache_delete(c, key), 0);
	}
	for (int i = 0; i < 4; i++) {
		memset(&args[i], 0, sizeof args[i]);
		args[i].c = c;
		args[i].id = i;
		args[i].ops = ops;
		ck_assert_int_eq(pthread_create(&tids[i], NULL, conc_run, &args[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tids[i], NULL);
		ck_assert_msg(args[i].failures == 0, "%d failures, first: %s", args[i].failures, args[i].failure);
		ck_assert_uint_eq(args[i].down, 0);
		gets += args[i].gets;
		hits += args[i].hits;
	}
	cache_get_stats(c, &s);
	ck_assert_uint_eq(s.hits + s.misses, gets);
	ck_assert_uint_eq(s.hits, hits);
	ck_assert_uint_eq(s.errors, 0);
	ck_assert_uint_gt(hits, 0);
	ck_assert_uint_gt(s.puts, 0);
}

START_TEST(test_mem_concurrent)
{
	struct cache *c = cache_mem_new(16 << 20);
	struct cache_stats s;
	uint64_t entries = 0, bytes = 0;
	char key[32];

	conc_check(c, 10000);
	/* what the statistics say is stored is what lookups find */
	cache_get_stats(c, &s);
	for (int i = 0; i < CONC_KEYS; i++) {
		struct cache_entry out;

		snprintf(key, sizeof key, "conc-%d", i);
		if (cache_get(c, key, &out) == CACHE_HIT) {
			entries++;
			bytes += strlen(key) + strlen(out.request) + strlen(out.result) + out.progress_len;
			if (i >= CONC_KEYS / 2)
				ck_assert_msg(out.final, "%s: not final after 10k operations", key);
		}
		cache_entry_clear(&out);
	}
	ck_assert_uint_eq(s.entries, entries);
	ck_assert_uint_eq(s.bytes, bytes);
	ck_assert_uint_ge(entries, CONC_KEYS / 2);
	cache_free(c);
}
END_TEST

START_TEST(test_pg_concurrent)
{
	struct cache *c = open_cache(BK_PG, 2);  /* fewer connections than threads */

	conc_check(c, 300);
	cache_free(c);
}
END_TEST

/* ---- PostgreSQL only ---- */

/* Runs `sql` on a direct connection; returns the first value of the first
 * row (static buffer, "" when none). */
static const char *
pg_query_value(const char *sql)
{
	static char value[256];
	PGconn *conn = PQconnectdb(db_url());
	PGresult *res;

	ck_assert_msg(PQstatus(conn) == CONNECTION_OK, "%s", PQerrorMessage(conn));
	res = PQexec(conn, sql);
	ck_assert_msg(PQresultStatus(res) == PGRES_TUPLES_OK || PQresultStatus(res) == PGRES_COMMAND_OK,
	    "%s: %s", sql, PQresultErrorMessage(res));
	snprintf(value, sizeof value, "%s",
	    PQntuples(res) > 0 && PQnfields(res) > 0 ? PQgetvalue(res, 0, 0) : "");
	PQclear(res);
	PQfinish(conn);
	return value;
}

START_TEST(test_pg_schema_second_server)
{
	struct cache *a, *b;
	struct cache_entry e = make_entry("{\"shared\":true}", "{\"feasible\":\"7\"}", 1);
	struct cache_stats s;

	pg_query_value("DROP TABLE IF EXISTS dnnsat_results, dnnsat_schema, dnnsat_jobs, dnnsat_job_sets");
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'dnnsat_%'"), "0");
	a = open_cache(BK_PG, 2);
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'dnnsat_%'"), "4");
	ck_assert_str_eq(pg_query_value("SELECT string_agg(version::text, ',') FROM dnnsat_schema"), "8");
	ck_assert_int_eq(cache_put(a, "shared", &e), 0);

	b = open_cache(BK_PG, 2);                       /* a second server */
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM dnnsat_schema"), "1");
	expect_hit(b, "shared", "{\"shared\":true}", "{\"feasible\":\"7\"}", 1);
	expect_hit(b, "shared", "{\"shared\":true}", "{\"feasible\":\"7\"}", 1);
	ck_assert_str_eq(pg_query_value("SELECT updated_at IS NOT NULL FROM dnnsat_results WHERE key = 'shared'"), "t");
	ck_assert_str_eq(pg_query_value("SELECT final FROM dnnsat_results WHERE key = 'shared'"), "t");
	/* what b deletes, a no longer finds */
	ck_assert_int_eq(cache_delete(b, "shared"), 0);
	expect_miss(a, "shared");
	cache_get_stats(b, &s);
	ck_assert_uint_eq(s.hits, 2);
	cache_free(a);
	cache_free(b);
}
END_TEST

/* Keys, values and a blob that would break SQL spliced as text. */
START_TEST(test_pg_values_are_parameters)
{
	struct cache *c = open_cache(BK_PG, 1);
	static char req[] = "x'); DROP TABLE dnnsat_results; --";
	static char res[] = "\"quotes\" 'and' \\backslashes\\ and unicode \xc3\xa9";
	struct cache_entry e = make_entry(req, res, 0);

	cache_delete(c, "k'ey");
	ck_assert_int_eq(cache_put(c, "k'ey", &e), 0);
	expect_hit(c, "k'ey", req, res, 0);
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM dnnsat_results WHERE key = 'k''ey'"), "1");
	cache_delete(c, "k'ey");
	cache_free(c);
}
END_TEST

static void *
migrate_run(void *p)
{
	struct dn_error err;
	struct cache *c;
	char detail[256];
	int *ok = p;

	memset(&err, 0, sizeof err);
	c = cache_pg_new(getenv("DNNSAT_TEST_DATABASE_URL"), 1, &err);
	*ok = c != NULL && strcmp(cache_state(c, 0, detail, sizeof detail), "ok") == 0;
	cache_free(c);
	return NULL;
}

/* Four servers starting on an empty database at the same moment: the
 * advisory lock lets exactly one create the tables, all come up. */
START_TEST(test_pg_concurrent_migration)
{
	pthread_t tids[4];
	int ok[4];

	pg_query_value("DROP TABLE IF EXISTS dnnsat_results, dnnsat_schema, dnnsat_jobs, dnnsat_job_sets");
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&tids[i], NULL, migrate_run, &ok[i]), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(tids[i], NULL);
		ck_assert_msg(ok[i], "server %d did not come up", i);
	}
	ck_assert_str_eq(pg_query_value("SELECT string_agg(version::text, ',') FROM dnnsat_schema"), "8");
}
END_TEST

/* Claims a job for `owner`, expecting job `want` with the set's request. */
static void
expect_claim(struct cache *c, const char *owner, double lease, int want)
{
	struct cache_job j;

	ck_assert_int_eq(cache_jobs_claim(c, owner, lease, &j), 1);
	ck_assert_str_eq(j.key, "jobs-test");
	ck_assert_int_eq(j.job, want);
	ck_assert_str_eq(j.request, "{\"q\":1}");
	cache_job_clear(&j);
}

/* The distributed count's jobs: one set per key, one owner per job at a
 * time, a lapsed lease taken over, a commit (count and data) only by the
 * owner and once; after the final result, the jobs deleted; finished and
 * abandoned sets swept, a bounded number at a time. */
START_TEST(test_pg_jobs)
{
	struct cache *c = open_cache(BK_PG, 2), *m = open_cache(BK_MEM, 1);
	int32_t nodes[3] = { 5, 9, 12 };
	char *paths[3] = { "0:0:3/1:0:0", "0:4:7", "0:8:9/2:1:1" };
	struct cache_jobs_state st;
	struct cache_job j;
	void *tree;
	size_t len;
	int got = 0;

	pg_query_value("DELETE FROM dnnsat_job_sets");
	ck_assert_int_eq(cache_jobs_publish(c, "jobs-test", "{\"q\":1}", "t\0ree", 5, 3, nodes, paths), 1);
	/* a second publisher of the key writes nothing */
	ck_assert_int_eq(cache_jobs_publish(c, "jobs-test", "{\"q\":2}", "x", 1, 2, nodes, paths), 0);
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM dnnsat_jobs"), "3");
	ck_assert_int_eq(cache_jobs_tree(c, "jobs-test", &tree, &len), 1);
	ck_assert(len == 5 && memcmp(tree, "t\0ree", 5) == 0);
	free(tree);
	ck_assert_str_eq(pg_query_value("SELECT path FROM dnnsat_jobs WHERE job = 2"), "0:8:9/2:1:1");

	expect_claim(c, "A", 60, 0);
	expect_claim(c, "B", 60, 1);
	expect_claim(c, "C", 0.5, 2);
	ck_assert_int_eq(cache_jobs_claim(c, "D", 60, &j), 0);          /* all held */
	ck_assert_int_eq(cache_jobs_renew(c, "jobs-test", 0, "B", 60), 0);     /* not B's */
	ck_assert_int_eq(cache_jobs_renew(c, "jobs-test", 0, "A", 60), 1);
	/* C's lease lapses unrenewed: D takes job 2 over (polled: no duration asserted) */
	for (int i = 0; i < 600 && got != 1; i++) {
		got = cache_jobs_claim(c, "D", 60, &j);
		if (got != 1)
			usleep(50 * 1000);
	}
	ck_assert_int_eq(got, 1);
	ck_assert_int_eq(j.job, 2);
	cache_job_clear(&j);
	ck_assert_int_eq(cache_jobs_renew(c, "jobs-test", 2, "C", 60), 0);
	/* C's late count and data are dropped */
	ck_assert_int_eq(cache_jobs_commit(c, "jobs-test", 2, "C", "70", "late", 4), 0);
	ck_assert_int_eq(cache_jobs_commit(c, "jobs-test", 2, "D", "7", "d\0\x01\xff", 4), 1);
	ck_assert_int_eq(cache_jobs_commit(c, "jobs-test", 2, "D", "7", "again", 5), 0);       /* once */
	/* a job given back after a failure waits its backoff: 3600 s after
	 * its first claim (attempts 1) */
	ck_assert_int_eq(cache_jobs_release(c, "jobs-test", 1, "A", 3600, 7200), 0);
	ck_assert_int_eq(cache_jobs_release(c, "jobs-test", 1, "B", 3600, 7200), 1);
	ck_assert_int_eq(cache_jobs_claim(c, "D", 60, &j), 0);
	ck_assert_str_eq(pg_query_value("SELECT state || ':' || (owner IS NULL) || ':' || "
	    "(not_before - now() BETWEEN interval '3500 seconds' AND interval '3600 seconds') "
	    "FROM dnnsat_jobs WHERE key = 'jobs-test' AND job = 1"), "open:true:true");
	/* its time come (moved, not waited for): claimed again; failing again
	 * doubles the wait (attempts 2: 2 x 3000 s), within the cap (5000 s) */
	pg_query_value("UPDATE dnnsat_jobs SET not_before = now() - interval '1 second' WHERE job = 1");
	expect_claim(c, "B", 60, 1);
	ck_assert_int_eq(cache_jobs_release(c, "jobs-test", 1, "B", 3000, 5000), 1);
	ck_assert_str_eq(pg_query_value("SELECT (not_before - now() BETWEEN interval '4900 seconds' "
	    "AND interval '5000 seconds') FROM dnnsat_jobs WHERE job = 1"), "t");
	ck_assert_int_eq(cache_jobs_claim(c, "D", 60, &j), 0);
	pg_query_value("UPDATE dnnsat_jobs SET not_before = now() - interval '1 second' WHERE job = 1");
	expect_claim(c, "B", 60, 1);
	ck_assert_str_eq(pg_query_value("SELECT attempts FROM dnnsat_jobs WHERE job = 1"), "3");
	/* a job given back without failing (the claimer stops) is open at once */
	ck_assert_int_eq(cache_jobs_release(c, "jobs-test", 1, "B", 0, 0), 1);
	ck_assert_str_eq(pg_query_value("SELECT (not_before IS NULL) FROM dnnsat_jobs WHERE job = 1"), "t");
	expect_claim(c, "A", 60, 1);
	ck_assert_int_eq(cache_jobs_left(c, "jobs-test"), 2);
	ck_assert_int_eq(cache_jobs_commit(c, "jobs-test", 0, "A", "3", NULL, 0), 1);     /* no data */
	ck_assert_int_eq(cache_jobs_commit(c, "jobs-test", 1, "A", "4", "", 0), 1);
	ck_assert_int_eq(cache_jobs_left(c, "jobs-test"), 0);
	ck_assert_int_eq(cache_jobs_claim(c, "D", 60, &j), 0);

	ck_assert_int_eq(cache_jobs_read(c, "jobs-test", &st), 1);
	ck_assert_int_eq(st.njobs, 3);
	ck_assert_int_eq(st.ndone, 3);
	ck_assert_int_eq(st.finished, 0);
	ck_assert(st.node[0] == 5 && st.node[1] == 9 && st.node[2] == 12);
	ck_assert(strcmp(st.count[0], "3") == 0 && strcmp(st.count[1], "4") == 0 && strcmp(st.count[2], "7") == 0);
	/* the data as committed, bytes for bytes; none where none was sent */
	ck_assert_ptr_null(st.data[0]);
	ck_assert(st.data[1] != NULL && st.data_len[1] == 0);
	ck_assert(st.data[2] != NULL && st.data_len[2] == 4 && memcmp(st.data[2], "d\0\x01\xff", 4) == 0);
	cache_jobs_state_clear(&st);
	ck_assert_str_eq(pg_query_value("SELECT string_agg(job || ':' || attempts || ':' || commits, ',' ORDER BY job) "
	    "FROM dnnsat_jobs"), "0:1:1,1:4:1,2:2:1");
	/* the final result stored: the jobs and the tree go, the set stays finished */
	ck_assert_int_eq(cache_jobs_finish(c, "jobs-test"), 0);
	ck_assert_int_eq(cache_jobs_finish(c, "jobs-test"), 0);        /* idempotent */
	ck_assert_int_eq(cache_jobs_read(c, "jobs-test", &st), 1);
	ck_assert_int_eq(st.finished, 1);
	ck_assert_int_eq(st.ndone, 0);
	cache_jobs_state_clear(&st);
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM dnnsat_jobs"), "0");
	ck_assert_str_eq(pg_query_value("SELECT octet_length(tree) FROM dnnsat_job_sets WHERE key = 'jobs-test'"), "0");
	/* what the set keeps of its jobs: the claimers that committed (A, D) */
	ck_assert_str_eq(pg_query_value("SELECT claimers || ':' || (counted_at IS NOT NULL) || ':' || (busy_s >= 0) "
	    "FROM dnnsat_job_sets WHERE key = 'jobs-test'"), "2:true:true");
	ck_assert_str_eq(pg_query_value("SELECT jobs_log FROM dnnsat_job_sets WHERE key = 'jobs-test'"),
	    "0 done 1 1 A\n1 done 4 1 A\n2 done 2 1 D");
	ck_assert_int_eq(cache_jobs_read(c, "no-such-set", &st), 0);

	/* the sweep: a finished set after keep_finished; an unfinished one
	 * once untouched for `abandoned` (0 here: now), at most max_sets a call */
	ck_assert_int_eq(cache_jobs_publish(c, "jobs-live", "{\"q\":3}", "t", 1, 3, nodes, paths), 1);
	ck_assert_int_eq(cache_jobs_publish(c, "jobs-idle", "{\"q\":4}", "t", 1, 3, nodes, paths), 1);
	ck_assert_int_eq(cache_jobs_sweep(c, 3600, 3600, 100), 0);       /* all recent */
	ck_assert_int_eq(cache_jobs_sweep(c, 0, 3600, 100), 1);          /* jobs-test, finished */
	ck_assert_int_eq(cache_jobs_read(c, "jobs-test", &st), 0);
	/* a lease into the future keeps jobs-live touched; claims given back
	 * (no lease) do not keep jobs-idle alive */
	pg_query_value("UPDATE dnnsat_job_sets SET created_at = now() - interval '2 hours'");
	pg_query_value("UPDATE dnnsat_jobs SET claimed_at = now(), attempts = 9");
	pg_query_value("UPDATE dnnsat_jobs SET state = 'claimed', owner = 'A', lease_until = now() + interval '1 hour' "
	    "WHERE key = 'jobs-live' AND job = 0");
	ck_assert_int_eq(cache_jobs_sweep(c, 3600, 3600, 100), 1);       /* jobs-idle, abandoned */
	ck_assert_int_eq(cache_jobs_read(c, "jobs-idle", &st), 0);
	ck_assert_int_eq(cache_jobs_read(c, "jobs-live", &st), 1);
	cache_jobs_state_clear(&st);
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM dnnsat_jobs"), "3");
	ck_assert_int_eq(cache_jobs_publish(c, "jobs-idle", "{\"q\":4}", "t", 1, 3, nodes, paths), 1);
	pg_query_value("UPDATE dnnsat_jobs SET lease_until = NULL");
	ck_assert_int_eq(cache_jobs_sweep(c, 0, 0, 1), 1);               /* bounded: one of two */
	ck_assert_int_eq(cache_jobs_sweep(c, 0, 0, 1), 1);
	ck_assert_int_eq(cache_jobs_sweep(c, 0, 0, 1), 0);
	ck_assert_str_eq(pg_query_value("SELECT count(*) FROM dnnsat_jobs"), "0");

	/* the memory cache has no jobs */
	ck_assert_int_eq(cache_jobs_supported(m), 0);
	ck_assert_int_eq(cache_jobs_publish(m, "jobs-test", "{}", "x", 1, 3, nodes, paths), -1);
	ck_assert_int_eq(cache_jobs_claim(m, "A", 60, &j), -1);
	pg_query_value("DELETE FROM dnnsat_job_sets");
	cache_free(m);
	cache_free(c);
}
END_TEST

START_TEST(test_pg_malformed_conninfo)
{
	static const char *const bad[] = {
		"host=127.0.0.1 no_such_option=1",
		"postgresql://[::1",
		"host='unterminated",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct dn_error err;

		memset(&err, 0, sizeof err);
		ck_assert_ptr_null(cache_pg_new(bad[i], 2, &err));
		ck_assert_int_eq(err.code, DN_EINVAL);
		ck_assert_msg(strstr(err.message, "database URL") != NULL, "%s", err.message);
		ck_assert_ptr_null(strchr(err.message, '\n'));
	}
}
END_TEST

/* Redirects stderr into a temporary file until capture_end, which returns
 * what was written (static buffer). */
static int capture_saved = -1;
static FILE *capture_file;

static void
capture_begin(void)
{
	fflush(stderr);
	capture_file = tmpfile();
	ck_assert_ptr_nonnull(capture_file);
	capture_saved = dup(2);
	ck_assert_int_ge(capture_saved, 0);
	ck_assert_int_eq(dup2(fileno(capture_file), 2), 2);
}

static const char *
capture_end(void)
{
	static char text[8192];
	size_t n;

	fflush(stderr);
	dup2(capture_saved, 2);
	close(capture_saved);
	rewind(capture_file);
	n = fread(text, 1, sizeof text - 1, capture_file);
	text[n] = '\0';
	fclose(capture_file);
	fputs(text, stderr);
	return text;
}

static int
count_lines(const char *text, const char *needle)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* Nothing listens on port 1 (URL and keyword forms) nor on a socket
 * directory that does not exist: every call answers down (tests reach only
 * loopback and local sockets, never another address). */
START_TEST(test_pg_unreachable)
{
	static const char *const urls[] = {
		"postgresql://postgres@127.0.0.1:1/postgres",
		"host=127.0.0.1 port=1 user=postgres dbname=postgres",
		"host=/nonexistent/dnnsat-test port=5432 user=postgres dbname=postgres",
	};

	for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
		struct cache_entry e = make_entry("q", "r", 1), out;
		struct cache_stats s;
		struct dn_error err;
		struct cache *c;
		char detail[256];
		const char *log;

		memset(&err, 0, sizeof err);
		capture_begin();
		c = cache_pg_new(urls[i], 2, &err);
		ck_assert_msg(c != NULL, "%s: %s", urls[i], err.message);
		ck_assert_int_eq(cache_get(c, "k", &out), CACHE_DOWN);
		ck_assert_ptr_null(out.request);
		ck_assert_int_eq(cache_put(c, "k", &e), -1);
		ck_assert_int_eq(cache_delete(c, "k"), -1);
		ck_assert_int_eq(cache_get(c, "k", &out), CACHE_DOWN);
		ck_assert_str_eq(cache_state(c, 1, detail, sizeof detail), "down");
		log = capture_end();
		ck_assert_msg(detail[0] != '\0' && strchr(detail, '\n') == NULL, "detail '%s'", detail);
		ck_assert_msg(count_lines(log, "dnnsatd: database down: ") == 1, "log:\n%s", log);
		ck_assert_msg(strstr(detail, "refused") != NULL || strstr(detail, "timeout") != NULL ||
		    strstr(detail, "unreachable") != NULL || strstr(detail, "failed") != NULL, "detail '%s'", detail);
		cache_get_stats(c, &s);
		/* the caller's five, and the write-back thread's retries of the put */
		ck_assert_uint_ge(s.errors, 5);
		ck_assert_uint_eq(s.hits + s.misses + s.puts, 0);
		cache_free(c);
	}
}
END_TEST

/* Runs pg_tmp.sh CMD on the test server's directory. */

/* An entry stored without going through cache_put (no checksum, another
 * key's checksum) is never served: a miss, counted, and deleted. */
START_TEST(test_corrupt_bypass)
{
	struct cache *c = open_cache(_i, 1);
	struct cache_entry e = make_entry("{\"q\":1}", "{\"feasible\":\"3\",\"total\":\"9\"}", 1), out;
	struct cache_stats st;

	cache_delete(c, "raw");
	cache_delete(c, "other");
	ck_assert_int_eq(c->ops->put(c, "raw", &e), 0);            /* no checksum */
	expect_miss(c, "raw");
	cache_get_stats(c, &st);
	ck_assert_uint_eq(st.corrupt, 1);
	ck_assert_int_eq(c->ops->get(c, "raw", 1, &out), CACHE_MISS); /* dropped */
	/* a sealed entry copied under another key */
	ck_assert_int_eq(cache_put(c, "other", &e), 0);
	ck_assert_int_eq(cache_get(c, "other", &out), CACHE_HIT);
	ck_assert_int_eq(c->ops->put(c, "raw", &out), 0);
	cache_entry_clear(&out);
	expect_miss(c, "raw");
	expect_hit(c, "other", "{\"q\":1}", "{\"feasible\":\"3\",\"total\":\"9\"}", 1);
	cache_get_stats(c, &st);
	ck_assert_uint_eq(st.corrupt, 2);
	/* cache_get_salvage: the dropped entry's request (unverified) comes
	 * back for a caller that can check it; an intact entry gives none */
	{
		char *damaged = (char *)"unset";
		ck_assert_int_eq(c->ops->put(c, "raw", &e), 0);
		ck_assert_int_eq(cache_get_salvage(c, "raw", 0, &out, &damaged), CACHE_MISS);
		ck_assert_ptr_null(out.result);
		ck_assert_str_eq(damaged, "{\"q\":1}");
		free(damaged);
		ck_assert_int_eq(cache_get_salvage(c, "raw", 0, &out, &damaged), CACHE_MISS);   /* dropped */
		ck_assert_ptr_null(damaged);
		ck_assert_int_eq(cache_get_salvage(c, "other", 1, &out, &damaged), CACHE_HIT);
		ck_assert_ptr_null(damaged);
		cache_entry_clear(&out);
		cache_get_stats(c, &st);
		ck_assert_uint_eq(st.corrupt, 3);
	}
	cache_delete(c, "other");
	cache_free(c);
}
END_TEST

/* The adversarial edits of a row in PostgreSQL: garbage, a count above the
 * total, another query's request and result, a row from before checksums. */
START_TEST(test_pg_corrupt_rows)
{
	struct cache *c = open_cache(BK_PG, 1);
	struct cache_entry e = make_entry("{\"q\":\"a\"}", "{\"feasible\":\"3\",\"total\":\"9\"}", 1);
	struct cache_entry f = make_entry("{\"q\":\"b\"}", "{\"feasible\":\"5\",\"total\":\"9\"}", 1);
	static const char *const edits[] = {
		"UPDATE dnnsat_results SET result = '{garbage}' WHERE key = 'ka'",
		"UPDATE dnnsat_results SET result = '{}' WHERE key = 'ka'",
		"UPDATE dnnsat_results SET result = '{\"feasible\":\"30\",\"total\":\"9\"}' WHERE key = 'ka'",
		"UPDATE dnnsat_results AS a SET request = b.request, result = b.result, checksum = b.checksum "
		"FROM dnnsat_results AS b WHERE a.key = 'ka' AND b.key = 'kb'",
		"UPDATE dnnsat_results SET checksum = NULL WHERE key = 'ka'",
	};
	struct cache_stats st;
	const char *log;

	ck_assert_int_eq(cache_put(c, "kb", &f), 0);
	for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
		cache_delete(c, "ka");
		ck_assert_int_eq(cache_put(c, "ka", &e), 0);
		expect_hit(c, "ka", "{\"q\":\"a\"}", "{\"feasible\":\"3\",\"total\":\"9\"}", 1);
		pg_query_value(edits[i]);
		capture_begin();
		expect_miss(c, "ka");
		log = capture_end();
		ck_assert_msg(count_lines(log, "fails its checksum") == 1, "edit %zu, log:\n%s", i, log);
		ck_assert_str_eq(pg_query_value("SELECT count(*) FROM dnnsat_results WHERE key = 'ka'"), "0");
		cache_get_stats(c, &st);
		ck_assert_uint_eq(st.corrupt, i + 1);
	}
	expect_hit(c, "kb", "{\"q\":\"b\"}", "{\"feasible\":\"5\",\"total\":\"9\"}", 1);
	cache_delete(c, "kb");
	cache_free(c);
}
END_TEST

/* ---- a backend that is always down: the write-back queue's bounds ---- */

static int
down_get(struct cache *c, const char *key, int with_progress, struct cache_entry *out)
{
	(void)c, (void)key, (void)with_progress, (void)out;
	return CACHE_DOWN;
}

static int
down_put(struct cache *c, const char *key, const struct cache_entry *e)
{
	(void)c, (void)key, (void)e;
	return -1;
}

static int
down_del(struct cache *c, const char *key)
{
	(void)c, (void)key;
	return -1;
}

static const char *
down_state(struct cache *c, int probe, char *detail, size_t len)
{
	(void)c, (void)probe, (void)detail, (void)len;
	return "down";
}

static void
down_stats(struct cache *c, struct cache_stats *s)
{
	(void)c, (void)s;
}

static void
down_destroy(struct cache *c)
{
	free(c);
}

static const struct cache_ops down_ops = { down_get, down_put, down_del, down_state, down_stats, down_destroy };

START_TEST(test_writeback_bounded)
{
	struct cache *c = calloc(1, sizeof *c);
	struct cache_entry e = make_entry("{\"q\":1}", "{\"feasible\":\"1\"}", 1), out;
	struct cache_stats st;
	char key[32];
	const char *log;

	ck_assert_ptr_nonnull(c);
	c->ops = &down_ops;
	ck_assert_int_eq(cache_base_init(c), 0);
	capture_begin();
	for (int i = 0; i <= CACHE_WB_MAX_ENTRIES; i++) {
		snprintf(key, sizeof key, "k%d", i);
		ck_assert_int_eq(cache_put(c, key, &e), -1);
	}
	/* the oldest is dropped by the put that overfills the queue, or, when
	 * the write-back thread held it out of the queue (writing it) at that
	 * moment, by the thread when it finds the queue full on putting it
	 * back: polled until then (the thread may also hold the next one out
	 * for a moment), not timed */
	for (int i = 0; i < 10000; i++) {
		cache_get_stats(c, &st);
		if (st.wb_dropped == 1 && st.wb_pending == CACHE_WB_MAX_ENTRIES)
			break;
		usleep(1000);
	}
	log = capture_end();
	ck_assert_msg(count_lines(log, "write-back queue full") == 1, "log:\n%s", log);
	ck_assert_uint_eq(st.wb_pending, CACHE_WB_MAX_ENTRIES);
	ck_assert_uint_eq(st.wb_dropped, 1);
	ck_assert_int_eq(cache_get(c, "k0", &out), CACHE_DOWN);        /* the oldest went */
	snprintf(key, sizeof key, "k%d", CACHE_WB_MAX_ENTRIES);
	ck_assert_int_eq(cache_get(c, key, &out), CACHE_HIT);          /* served from the queue */
	ck_assert_str_eq(out.result, "{\"feasible\":\"1\"}");
	cache_entry_clear(&out);
	capture_begin();
	cache_free(c);
	log = capture_end();
	ck_assert_msg(count_lines(log, "1024 results not written") == 1, "lost entries must be logged:\n%s", log);
}
END_TEST

static void
pg_server(const char *cmd)
{
	char line[1024];
	const char *script = getenv("PG_TMP_SH");

	snprintf(line, sizeof line, "sh '%s' %s '%s'",
	    script != NULL ? script : src_path("tests/pg/pg_tmp.sh"), cmd, getenv("DNNSAT_TEST_PG_DIR"));
	ck_assert_msg(system(line) == 0, "%s failed", line);
}

/* The database stops under a running cache and comes back: calls answer
 * down quickly meanwhile, the cache reconnects on its own and the data is
 * still there; each state change is logged once. */
START_TEST(test_pg_outage)
{
	struct cache *c = open_cache(BK_PG, 2);
	struct cache_entry e = make_entry("{\"q\":\"outage\"}", "{\"feasible\":\"1\"}", 1), out;
	char detail[256];
	const char *log;
	double t0;
	int rc = CACHE_DOWN;

	ck_assert_int_eq(cache_put(c, "outage", &e), 0);
	expect_hit(c, "outage", "{\"q\":\"outage\"}", "{\"feasible\":\"1\"}", 1);

	capture_begin();
	pg_server("stop-server");
	t0 = now_s();
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(cache_get(c, "outage", &out), CACHE_DOWN);
		ck_assert_int_eq(cache_put(c, "outage2", &e), -1);
	}
	ck_assert_str_eq(cache_state(c, 1, detail, sizeof detail), "down");
	/* the put it refused waits in the write-back queue and is served */
	ck_assert_int_eq(cache_get(c, "outage2", &out), CACHE_HIT);
	cache_entry_clear(&out);
	ck_assert_msg(now_s() - t0 < 3.0, "%.2f s to answer down", now_s() - t0);
	ck_assert_msg(detail[0] != '\0', "no reason given");

	pg_server("start-server");
	t0 = now_s();
	while (now_s() - t0 < 10.0 && (rc = cache_get(c, "outage", &out)) != CACHE_HIT)
		usleep(100 * 1000);
	log = capture_end();
	ck_assert_msg(rc == CACHE_HIT, "still %d 10 s after the database returned", rc);
	ck_assert_str_eq(out.result, "{\"feasible\":\"1\"}");
	ck_assert_int_eq(out.final, 1);
	cache_entry_clear(&out);
	ck_assert_str_eq(cache_state(c, 1, detail, sizeof detail), "ok");
	ck_assert_str_eq(detail, "");
	ck_assert_msg(count_lines(log, "dnnsatd: database down: ") == 1, "log:\n%s", log);
	ck_assert_msg(count_lines(log, "dnnsatd: database back") == 1, "log:\n%s", log);
	/* the timestamp prefix, as the daemon's own lines: 2024-01-02T03:04:05.678Z */
	ck_assert_msg(strlen(log) > 25 && log[4] == '-' && log[10] == 'T' && log[19] == '.' && log[23] == 'Z',
	    "log:\n%s", log);
	/* what was computed during the outage was written back: another
	 * replica finds it */
	t0 = now_s();
	while (now_s() - t0 < 10.0 && strcmp(pg_query_value("SELECT count(*) FROM dnnsat_results WHERE key = "
	    "'outage2'"), "1") != 0)
		usleep(100 * 1000);
	{
		struct cache *other = open_cache(BK_PG, 1);
		struct cache_stats st;
		expect_hit(other, "outage2", "{\"q\":\"outage\"}", "{\"feasible\":\"1\"}", 1);
		cache_free(other);
		cache_get_stats(c, &st);
		ck_assert_uint_eq(st.wb_pending, 0);
		ck_assert_uint_ge(st.wb_written, 1);
	}
	ck_assert_int_eq(cache_put(c, "outage2", &e), 0);
	cache_delete(c, "outage2");
	cache_free(c);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("cache");
	TCase *t = tcase_create("memory");

	tcase_add_loop_test(t, test_get_put_miss, BK_MEM, BK_MEM + 1);
	tcase_add_loop_test(t, test_final_kept, BK_MEM, BK_MEM + 1);
	tcase_add_loop_test(t, test_progress_blob, BK_MEM, BK_MEM + 1);
	tcase_add_loop_test(t, test_stats, BK_MEM, BK_MEM + 1);
	tcase_add_test(t, test_mem_lru);
	tcase_add_test(t, test_mem_concurrent);
	tcase_add_loop_test(t, test_corrupt_bypass, BK_MEM, BK_MEM + 1);
	tcase_add_test(t, test_writeback_bounded);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);

	if (getenv("DNNSAT_TEST_DATABASE_URL") != NULL) {
		t = tcase_create("postgresql");
		tcase_add_loop_test(t, test_get_put_miss, BK_PG, BK_PG + 1);
		tcase_add_loop_test(t, test_final_kept, BK_PG, BK_PG + 1);
		tcase_add_loop_test(t, test_progress_blob, BK_PG, BK_PG + 1);
		tcase_add_loop_test(t, test_stats, BK_PG, BK_PG + 1);
		tcase_add_test(t, test_pg_concurrent);
		tcase_add_loop_test(t, test_corrupt_bypass, BK_PG, BK_PG + 1);
		tcase_add_test(t, test_pg_corrupt_rows);
		tcase_add_test(t, test_pg_schema_second_server);
		tcase_add_test(t, test_pg_values_are_parameters);
		tcase_add_test(t, test_pg_concurrent_migration);
		tcase_add_test(t, test_pg_jobs);
		tcase_add_test(t, test_pg_malformed_conninfo);
		tcase_add_test(t, test_pg_unreachable);
		if (getenv("DNNSAT_TEST_PG_DIR") != NULL)
			tcase_add_test(t, test_pg_outage);      /* last: it restarts the server */
		else
			printf("test_cache: DNNSAT_TEST_PG_DIR unset, the outage case is skipped\n");
		tcase_set_timeout(t, 120);
		suite_add_tcase(s, t);
	} else {
		printf("test_cache: DNNSAT_TEST_DATABASE_URL unset, the PostgreSQL cases are skipped "
		    "(tests/unit/test_cache.sh runs them)\n");
	}
	return run_suite(s, 0);
}
