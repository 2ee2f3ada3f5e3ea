/*
 * cache_pg.c - the PostgreSQL cache backend (libpq): a pool of connections,
 * the schema and its migrations, and the statements that read and write
 * table dnnsat_results.
 *
 * The pool: at most `pool_max` connections, opened on demand; an idle one is
 * handed out first, else a new one is opened, else the caller waits (at most
 * CACHE_PG_WAIT_MS) for one to come back. Waiters are served first come,
 * first served (cache_waitq.c): a connection given back goes straight to
 * the longest waiting caller, and while anyone waits a newcomer queues
 * behind them instead of taking what comes free; a connection that is
 * closed instead hands its slot on, so the waiter opens a new one. The
 * idle ones are a stack (the most recently used first: its backend is
 * warm). A connection that fails (the
 * server closed it, a statement timed out, it is in an unexpected
 * transaction state) is closed with PQfinish and never returned to the pool.
 *
 * Health: UP or DOWN (UNKNOWN before the first connect). A failed connect or
 * a broken connection makes it DOWN, remembers the reason for cache_state,
 * drops every idle connection (after a restart they are all dead) and logs
 * "database down" once; while DOWN, one caller at a time tries to connect and
 * at most once per CACHE_PG_RETRY_MS, every other caller gets CACHE_DOWN at
 * once. Any success makes it UP again and logs "database back" once.
 *
 * Statements: every connection prepares the statements of cache_pg_stmts
 * and of cache_jobs_stmts (the distributed count's, cache_jobs.c, which
 * borrows connections through cache_pg.h) and runs only those (values always as parameters, progress as a binary bytea
 * parameter). The schema is created and migrated once per cache object and
 * again after every outage (the database may have been recreated), inside a
 * transaction holding an advisory lock so that servers starting together
 * migrate one after the other. Migration runs its fixed DDL through
 * PQexecParams-style sends with no values spliced in.
 *
 * Every libpq call that waits does so through cache_pg_collect, which polls
 * the socket with a deadline: a caller is never held longer than the connect
 * timeout (CACHE_PG_CONNECT_TIMEOUT, unless the conninfo sets one) or
 * CACHE_PG_QUERY_MS for a statement.
 *
 * Locking: `lock` guards the pool, the health fields and the statistics;
 * libpq calls on a connection run outside it (a lent connection belongs to
 * one thread).
 */
#include "cache_pg.h"
#include "cache_waitq.h"

#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CACHE_PG_CONNECT_TIMEOUT "2"    /* seconds, when the user gave none */
#define CACHE_PG_RETRY_MS 1000          /* between connect attempts while down */
#define CACHE_PG_QUERY_MS 5000          /* one statement, sending included */
#define CACHE_PG_WAIT_MS 5000           /* waiting for a pooled connection */
#define CACHE_PG_COUNT_MS 5000          /* between two counts for the stats */
#define CACHE_PG_LOCK_KEY "7236843093066280306" /* advisory lock: "dnnsatmr" in ASCII */

enum cache_pg_health { CACHE_PG_UNKNOWN, CACHE_PG_UP, CACHE_PG_DOWN };

struct cache_pg {
	struct cache base;
	const char *keywords[4];        /* for PQconnectdbParams, NULL-ended */
	const char *values[4];
	char *conninfo;                 /* owned; values[] points into it */
	int pool_max;

	pthread_mutex_t lock;
	struct cache_waitq waiters;     /* callers waiting for a connection, oldest first */
	PGconn **idle;                  /* pool_max slots, nidle used */
	int nidle;
	int nopen;                      /* idle + lent + being opened */
	enum cache_pg_health health;
	int connecting;                 /* a connect attempt while DOWN is running */
	int schema_ready;               /* migrated since the last outage */
	long long retry_at;             /* monotonic ms before which DOWN fails fast */
	char reason[256];               /* why DOWN, one line */
	uint64_t hits, misses, puts, errors;
	uint64_t entries, bytes;        /* from the last count */
	long long counted_at;           /* monotonic ms of that count, 0 never */
};

/* The statements each connection prepares. */
enum { CACHE_PG_GET, CACHE_PG_GET_RESULT, CACHE_PG_PUT, CACHE_PG_DEL, CACHE_PG_PING, CACHE_PG_COUNT, CACHE_PG_NSTMTS };

static const struct cache_pg_stmt cache_pg_stmts[CACHE_PG_NSTMTS] = {
	[CACHE_PG_GET] = { "dnnsat_get",
	    "SELECT request, result, final, progress, checksum FROM dnnsat_results WHERE key = $1", 1 },
	/* the read path: no progress blob, and a plain SELECT (no write per
	 * read, so a hot key is not a hot row lock, and replicas can serve it) */
	[CACHE_PG_GET_RESULT] = { "dnnsat_get_result",
	    "SELECT request, result, final, checksum FROM dnnsat_results WHERE key = $1", 1 },
	[CACHE_PG_PUT] = { "dnnsat_put",
	    "INSERT INTO dnnsat_results (key, request, result, final, progress, checksum, updated_at) "
	    "VALUES ($1, $2, $3, $4, $5, $6, now()) "
	    "ON CONFLICT (key) DO UPDATE SET request = EXCLUDED.request, "
	    "result = EXCLUDED.result, final = EXCLUDED.final, "
	    "progress = EXCLUDED.progress, checksum = EXCLUDED.checksum, updated_at = now() "
	    "WHERE NOT dnnsat_results.final OR EXCLUDED.final", 6 },
	[CACHE_PG_DEL] = { "dnnsat_delete",
	    "DELETE FROM dnnsat_results WHERE key = $1", 1 },
	[CACHE_PG_PING] = { "dnnsat_ping", "SELECT 1", 0 },
	[CACHE_PG_COUNT] = { "dnnsat_count",
	    "SELECT count(*), coalesce(sum(octet_length(key) + octet_length(request) + "
	    "octet_length(result) + coalesce(octet_length(progress), 0)), 0) "
	    "FROM dnnsat_results", 0 },
};

/* The schema's versions in order: migration i brings it to version i + 1.
 * Append only; never edit one that has shipped. */
static const char *const cache_pg_migrations[] = {
	"CREATE TABLE IF NOT EXISTS dnnsat_results ("
	"key text PRIMARY KEY, request text NOT NULL, result text NOT NULL, "
	"final boolean NOT NULL, progress bytea, "
	"created_at timestamptz DEFAULT now(), updated_at timestamptz)",
	/* 2: a checksum over key, final, request and result (cache.c); rows
	 * from before it have none and are recomputed when read */
	"ALTER TABLE dnnsat_results ADD COLUMN IF NOT EXISTS checksum text",
	/* 3-5: the distributed count (cache_jobs.c): a count cut into jobs,
	 * the stored tree and request they refer to, one row per job */
	"CREATE TABLE IF NOT EXISTS dnnsat_job_sets ("
	"key text PRIMARY KEY, request text NOT NULL, njobs int NOT NULL, tree bytea NOT NULL, "
	"created_at timestamptz NOT NULL DEFAULT now(), finished_at timestamptz)",
	"CREATE TABLE IF NOT EXISTS dnnsat_jobs ("
	"key text NOT NULL REFERENCES dnnsat_job_sets (key) ON DELETE CASCADE, job int NOT NULL, "
	"node int NOT NULL, path text NOT NULL, "
	"state text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'claimed', 'done')), "
	"owner text, lease_until timestamptz, count text, attempts int NOT NULL DEFAULT 0, "
	"commits int NOT NULL DEFAULT 0, claimed_at timestamptz, done_at timestamptz, PRIMARY KEY (key, job))",
	"CREATE INDEX IF NOT EXISTS dnnsat_jobs_todo ON dnnsat_jobs (key, job) WHERE state <> 'done'",
	/* 6: a done job's data, what the final answer needs of its box besides
	 * the count (solver/fset_jobdata.c) */
	"ALTER TABLE dnnsat_jobs ADD COLUMN IF NOT EXISTS data bytea",
	/* 7: what a finished set keeps of its deleted jobs (cache_jobs_finish):
	 * the last commit, the claimers, their jobs' time (claim to commit),
	 * their time between jobs (seconds), and a line per job */
	"ALTER TABLE dnnsat_job_sets ADD COLUMN IF NOT EXISTS counted_at timestamptz, "
	"ADD COLUMN IF NOT EXISTS claimers int, ADD COLUMN IF NOT EXISTS busy_s float8, "
	"ADD COLUMN IF NOT EXISTS between_s float8, ADD COLUMN IF NOT EXISTS jobs_log text",
	/* 8: a job given back after a failure is not claimed again before
	 * not_before (cache_jobs_release's backoff) */
	"ALTER TABLE dnnsat_jobs ADD COLUMN IF NOT EXISTS not_before timestamptz",
};

#define CACHE_PG_NMIGRATIONS ((int)(sizeof cache_pg_migrations / sizeof cache_pg_migrations[0]))

static long long
cache_pg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* Copies a libpq message (often several lines ending in '\n') into `dst`
 * as one line: runs of whitespace become one space, ends trimmed. */
static void
cache_pg_set_reason(char *dst, size_t len, const char *msg)
{
	size_t n = 0;
	int space = 0;

	if (len == 0)
		return;
	for (const char *s = msg != NULL ? msg : ""; *s != '\0' && n + 1 < len; s++) {
		if (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') {
			space = n > 0;
			continue;
		}
		if (space && n + 2 < len)
			dst[n++] = ' ';
		space = 0;
		dst[n++] = *s;
	}
	dst[n] = '\0';
	if (n == 0)
		snprintf(dst, len, "unknown database error");
}

/* Waits until PQgetResult will not block: flushes what is left to send and
 * reads what arrives. 0 when ready, -1 on timeout (why says so) or a broken
 * connection. */
static int
cache_pg_await(PGconn *conn, long long deadline, char *why, size_t len)
{
	for (;;) {
		struct pollfd pfd;
		int flushed = PQflush(conn);
		long long left;

		if (flushed < 0)
			return -1;
		if (flushed == 0 && !PQisBusy(conn))
			return 0;
		left = deadline - cache_pg_now_ms();
		if (left <= 0) {
			snprintf(why, len, "no answer from the database within %d ms", CACHE_PG_QUERY_MS);
			return -1;
		}
		pfd.fd = PQsocket(conn);
		pfd.events = POLLIN | (flushed == 1 ? POLLOUT : 0);
		pfd.revents = 0;
		if (pfd.fd < 0)
			return -1;
		if (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)
			return -1;
		if ((pfd.revents & (POLLIN | POLLERR | POLLHUP)) && !PQconsumeInput(conn))
			return -1;
	}
}

/* Collects the answer to what the caller just sent (`sent`: the PQsend*
 * call's return). Returns the successful result, which the caller owns and
 * PQclears, or NULL with `why` set to a one-line reason and *broken set
 * when the connection is unusable (closed, timed out, lost mid-answer);
 * every result received here is cleared. */
static PGresult *
cache_pg_collect(PGconn *conn, int sent, int *broken, char *why, size_t len)
{
	long long deadline = cache_pg_now_ms() + CACHE_PG_QUERY_MS;
	PGresult *first = NULL, *r;
	ExecStatusType st;

	why[0] = '\0';
	*broken = 0;
	if (!sent) {
		cache_pg_set_reason(why, len, PQerrorMessage(conn));
		*broken = PQstatus(conn) != CONNECTION_OK;
		return NULL;
	}
	for (;;) {
		if (cache_pg_await(conn, deadline, why, len) != 0) {
			if (why[0] == '\0')
				cache_pg_set_reason(why, len, PQerrorMessage(conn));
			PQclear(first);
			*broken = 1;
			return NULL;
		}
		r = PQgetResult(conn);
		if (r == NULL)
			break;
		if (first == NULL)
			first = r;
		else
			PQclear(r);
	}
	st = first != NULL ? PQresultStatus(first) : PGRES_FATAL_ERROR;
	if (PQstatus(conn) != CONNECTION_OK)
		*broken = 1;
	if (!*broken && (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK))
		return first;
	cache_pg_set_reason(why, len, first != NULL && PQresultErrorMessage(first)[0] != '\0' ?
	    PQresultErrorMessage(first) : PQerrorMessage(conn));
	PQclear(first);
	return NULL;
}

/* Runs fixed SQL with text parameters during migration; 0 or -1 (why).
 * With `out`, hands the result to the caller (who PQclears it). */
static int
cache_pg_run_sql(PGconn *conn, const char *sql, int n, const char *const *vals,
    PGresult **out, char *why, size_t len)
{
	int broken;
	PGresult *res = cache_pg_collect(conn,
	    PQsendQueryParams(conn, sql, n, NULL, vals, NULL, NULL, 0), &broken, why, len);

	if (res == NULL)
		return -1;
	if (out != NULL)
		*out = res;
	else
		PQclear(res);
	return 0;
}

/* Brings the schema to the newest version in one transaction under the
 * advisory lock. On failure the caller closes the connection, which rolls
 * the transaction back. 0 or -1 (why). */
static int
cache_pg_migrate(PGconn *conn, char *why, size_t len)
{
	const char *lock_key[1] = { CACHE_PG_LOCK_KEY };
	PGresult *res = NULL;
	char version[16];
	const char *vparam[1] = { version };
	int have;

	/* client_min_messages: no "already exists, skipping" notices on stderr */
	if (cache_pg_run_sql(conn, "BEGIN", 0, NULL, NULL, why, len) != 0 ||
	    cache_pg_run_sql(conn, "SET LOCAL client_min_messages TO warning", 0, NULL,
		NULL, why, len) != 0 ||
	    cache_pg_run_sql(conn, "SELECT pg_advisory_xact_lock($1::bigint)", 1, lock_key,
		NULL, why, len) != 0 ||
	    cache_pg_run_sql(conn, "CREATE TABLE IF NOT EXISTS dnnsat_schema (version int NOT NULL)",
		0, NULL, NULL, why, len) != 0 ||
	    cache_pg_run_sql(conn, "SELECT coalesce(max(version), 0) FROM dnnsat_schema",
		0, NULL, &res, why, len) != 0)
		return -1;
	have = PQntuples(res) == 1 ? atoi(PQgetvalue(res, 0, 0)) : 0;
	PQclear(res);
	for (int v = have; v < CACHE_PG_NMIGRATIONS; v++)
		if (cache_pg_run_sql(conn, cache_pg_migrations[v], 0, NULL, NULL, why, len) != 0)
			return -1;
	if (have < CACHE_PG_NMIGRATIONS) {
		snprintf(version, sizeof version, "%d", CACHE_PG_NMIGRATIONS);
		if (cache_pg_run_sql(conn, "DELETE FROM dnnsat_schema", 0, NULL, NULL, why, len) != 0 ||
		    cache_pg_run_sql(conn, "INSERT INTO dnnsat_schema (version) VALUES ($1::int)",
			1, vparam, NULL, why, len) != 0)
			return -1;
	}
	return cache_pg_run_sql(conn, "COMMIT", 0, NULL, NULL, why, len);
}

/* Opens one connection, migrates the schema when asked, prepares every
 * statement. The connection, or NULL (why) with nothing left open. */
static PGconn *
cache_pg_connect(struct cache_pg *p, int migrate, char *why, size_t len)
{
	PGconn *conn = PQconnectdbParams(p->keywords, p->values, 1);
	int broken;

	if (conn == NULL) {
		snprintf(why, len, "out of memory opening a database connection");
		return NULL;
	}
	if (PQstatus(conn) != CONNECTION_OK) {
		cache_pg_set_reason(why, len, PQerrorMessage(conn));
		PQfinish(conn);
		return NULL;
	}
	if (PQsetnonblocking(conn, 1) != 0) {
		cache_pg_set_reason(why, len, PQerrorMessage(conn));
		PQfinish(conn);
		return NULL;
	}
	if (migrate && cache_pg_migrate(conn, why, len) != 0) {
		PQfinish(conn);
		return NULL;
	}
	for (int i = 0; i < CACHE_PG_NSTMTS + cache_jobs_nstmts; i++) {
		const struct cache_pg_stmt *st = i < CACHE_PG_NSTMTS ? &cache_pg_stmts[i] :
		    &cache_jobs_stmts[i - CACHE_PG_NSTMTS];
		PGresult *res = cache_pg_collect(conn,
		    PQsendPrepare(conn, st->name, st->sql, st->nparams, NULL), &broken, why, len);

		if (res == NULL) {
			PQfinish(conn);
			return NULL;
		}
		PQclear(res);
	}
	return conn;
}

/* With the lock held: records an outage (reason, log line on the first
 * failure only) and closes every idle connection. */
static void
cache_pg_mark_down(struct cache_pg *p, const char *why)
{
	snprintf(p->reason, sizeof p->reason, "%s", why);
	if (p->health != CACHE_PG_DOWN)
		cache_log("database down: %s", p->reason);
	p->health = CACHE_PG_DOWN;
	p->schema_ready = 0;
	while (p->nidle > 0) {
		PQfinish(p->idle[--p->nidle]);
		p->nopen--;
	}
	cache_waitq_wake_all(&p->waiters);
}

/* With the lock held: records a success. */
static void
cache_pg_mark_up(struct cache_pg *p)
{
	if (p->health == CACHE_PG_DOWN)
		cache_log("database back");
	p->health = CACHE_PG_UP;
	p->reason[0] = '\0';
}

/* With the lock held and a slot counted in nopen for it: opens a
 * connection (the lock released meanwhile; migrating first when the schema
 * is not known to be ready). The connection, or NULL with the slot given
 * up, the outage recorded and `why` set. */
static PGconn *
cache_pg_open(struct cache_pg *p, char *why, size_t len)
{
	int down = p->health == CACHE_PG_DOWN, migrate = !p->schema_ready;
	PGconn *conn;

	if (down && (p->connecting || cache_pg_now_ms() < p->retry_at)) {
		snprintf(why, len, "%s", p->reason);
		p->nopen--;
		return NULL;
	}
	p->connecting |= down;
	pthread_mutex_unlock(&p->lock);
	conn = cache_pg_connect(p, migrate, why, len);
	pthread_mutex_lock(&p->lock);
	if (down)
		p->connecting = 0;
	if (conn == NULL) {
		p->nopen--;
		p->retry_at = cache_pg_now_ms() + CACHE_PG_RETRY_MS;
		cache_pg_mark_down(p, why);
		return NULL;
	}
	if (migrate)
		p->schema_ready = 1;
	cache_pg_mark_up(p);
	return conn;
}

/* What cache_pg_release hands a waiter when it closes a connection: the
 * slot, for the waiter to open a new one. */
static char cache_pg_slot;

/* Hands out a connection for one thread's exclusive use: an idle one, a new
 * one, or (first come, first served) one given back within
 * CACHE_PG_WAIT_MS. NULL when the database is down or nothing came free
 * (why says which); the caller gives a connection back with
 * cache_pg_release. */
static PGconn *
cache_pg_acquire(struct cache_pg *p, char *why, size_t len)
{
	long long deadline = cache_pg_now_ms() + CACHE_PG_WAIT_MS;
	PGconn *conn = NULL;
	void *got;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		int queue = cache_waitq_len(&p->waiters) > 0;     /* others were first */

		if (!queue && p->nidle > 0) {
			conn = p->idle[--p->nidle];
			break;
		}
		if (!queue && p->nopen < p->pool_max) {
			p->nopen++;
			conn = cache_pg_open(p, why, len);
			break;
		}
		if (p->health == CACHE_PG_DOWN) {
			snprintf(why, len, "%s", p->reason);
			break;
		}
		if (cache_pg_now_ms() >= deadline) {
			snprintf(why, len, "all %d database connections busy for %d ms",
			    p->pool_max, CACHE_PG_WAIT_MS);
			break;
		}
		got = cache_waitq_wait(&p->waiters, &p->lock, deadline);
		if (got == &cache_pg_slot) {
			conn = cache_pg_open(p, why, len);
			break;
		}
		if (got != NULL) {
			conn = got;
			break;
		}
	}
	if (conn == NULL)
		p->errors++;
	pthread_mutex_unlock(&p->lock);
	return conn;
}

/* Gives a connection back. `broken` (the statement said so, or the session
 * is left inside a transaction) closes it and, for a broken connection,
 * marks the database down with `why`. */
static void
cache_pg_release(struct cache_pg *p, PGconn *conn, int broken, const char *why)
{
	int reusable = !broken && PQstatus(conn) == CONNECTION_OK &&
	    PQtransactionStatus(conn) == PQTRANS_IDLE;

	pthread_mutex_lock(&p->lock);
	if (broken) {
		p->nopen--;
		cache_pg_mark_down(p, why);     /* every waiter fails fast */
	} else if (reusable) {
		if (!cache_waitq_hand(&p->waiters, conn))
			p->idle[p->nidle++] = conn;
		conn = NULL;
	} else if (!cache_waitq_hand(&p->waiters, &cache_pg_slot)) {
		p->nopen--;
	}
	pthread_mutex_unlock(&p->lock);
	PQfinish(conn);
}

/* Runs one prepared statement on a pooled connection. The successful result
 * (the caller PQclears it), or NULL when the database is down, the
 * connection broke or the statement failed: then `errors` is counted and,
 * for a broken connection, the outage recorded. */
static PGresult *
cache_pg_call(struct cache_pg *p, int stmt, const char *const *vals,
    const int *lens, const int *fmts, int binary_result)
{
	char why[256];
	int broken;
	PGconn *conn = cache_pg_acquire(p, why, sizeof why);
	PGresult *res;

	if (conn == NULL)
		return NULL;
	res = cache_pg_collect(conn, PQsendQueryPrepared(conn, cache_pg_stmts[stmt].name,
	    cache_pg_stmts[stmt].nparams, vals, lens, fmts, binary_result), &broken, why, sizeof why);
	cache_pg_release(p, conn, broken, why);
	pthread_mutex_lock(&p->lock);
	if (res == NULL) {
		p->errors++;
		if (!broken)    /* the server answered: it is up, the statement failed */
			snprintf(p->reason, sizeof p->reason, "%s", why);
	} else {
		cache_pg_mark_up(p);
	}
	pthread_mutex_unlock(&p->lock);
	return res;
}

/* Reads a binary-format column into a fresh NUL-terminated buffer. */
static char *
cache_pg_copy_value(const PGresult *res, int col, size_t *len)
{
	size_t n = (size_t)PQgetlength(res, 0, col);
	char *s = malloc(n + 1);

	if (s != NULL) {
		memcpy(s, PQgetvalue(res, 0, col), n);
		s[n] = '\0';
	}
	if (len != NULL)
		*len = n;
	return s;
}

static int
cache_pg_get(struct cache *c, const char *key, int with_progress, struct cache_entry *out)
{
	struct cache_pg *p = (struct cache_pg *)c;
	const char *vals[1] = { key };
	PGresult *res = cache_pg_call(p, with_progress ? CACHE_PG_GET : CACHE_PG_GET_RESULT, vals, NULL, NULL, 1);
	int rc;

	if (res == NULL)
		return CACHE_DOWN;
	if (PQntuples(res) == 0) {
		rc = CACHE_MISS;
	} else {
		out->request = cache_pg_copy_value(res, 0, NULL);
		out->result = cache_pg_copy_value(res, 1, NULL);
		out->final = PQgetlength(res, 0, 2) == 1 && PQgetvalue(res, 0, 2)[0] != 0;
		int blob = with_progress && !PQgetisnull(res, 0, 3) && PQgetlength(res, 0, 3) > 0;
		if (blob)
			out->progress = cache_pg_copy_value(res, 3, &out->progress_len);
		{
			int col = with_progress ? 4 : 3;
			if (!PQgetisnull(res, 0, col))
				snprintf(out->checksum, sizeof out->checksum, "%s", PQgetvalue(res, 0, col));
		}
		if (out->request == NULL || out->result == NULL || (blob && out->progress == NULL)) {
			cache_entry_clear(out);
			rc = CACHE_DOWN;        /* out of memory: compute it instead */
		} else {
			rc = CACHE_HIT;
		}
	}
	PQclear(res);
	pthread_mutex_lock(&p->lock);
	if (rc == CACHE_HIT)
		p->hits++;
	else if (rc == CACHE_MISS)
		p->misses++;
	else
		p->errors++;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static int
cache_pg_put(struct cache *c, const char *key, const struct cache_entry *e)
{
	struct cache_pg *p = (struct cache_pg *)c;
	int has_progress = e->progress != NULL && e->progress_len > 0;
	const char *vals[6] = { key, e->request != NULL ? e->request : "",
	    e->result != NULL ? e->result : "", e->final ? "t" : "f",
	    has_progress ? e->progress : NULL, e->checksum };
	int lens[6] = { 0, 0, 0, 0, has_progress ? (int)e->progress_len : 0, 0 };
	int fmts[6] = { 0, 0, 0, 0, 1, 0 };
	PGresult *res;
	int stored;

	if (has_progress && e->progress_len > 0x3fffffff) {   /* bytea's limit is 1 GB */
		pthread_mutex_lock(&p->lock);
		p->errors++;
		pthread_mutex_unlock(&p->lock);
		return -1;
	}
	res = cache_pg_call(p, CACHE_PG_PUT, vals, lens, fmts, 0);
	if (res == NULL)
		return -1;
	stored = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	if (stored) {
		pthread_mutex_lock(&p->lock);
		p->puts++;
		pthread_mutex_unlock(&p->lock);
	}
	return 0;
}

static int
cache_pg_delete(struct cache *c, const char *key)
{
	struct cache_pg *p = (struct cache_pg *)c;
	const char *vals[1] = { key };
	PGresult *res = cache_pg_call(p, CACHE_PG_DEL, vals, NULL, NULL, 0);

	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

/* "ok" or "down" as last seen; with `probe`, after a SELECT 1 through the
 * pool (which answers at once while a reconnect is not yet due). */
static const char *
cache_pg_state(struct cache *c, int probe, char *detail, size_t len)
{
	struct cache_pg *p = (struct cache_pg *)c;
	const char *state;

	if (probe) {
		PGresult *res = cache_pg_call(p, CACHE_PG_PING, NULL, NULL, NULL, 0);

		PQclear(res);
	}
	pthread_mutex_lock(&p->lock);
	state = p->health == CACHE_PG_DOWN ? "down" : "ok";
	if (detail != NULL && len > 0)
		snprintf(detail, len, "%s", p->reason);
	pthread_mutex_unlock(&p->lock);
	return state;
}

/* The counters, and the table's size from a count at most CACHE_PG_COUNT_MS
 * old (recounted here while the database is up; 0 before the first). */
static void
cache_pg_stats(struct cache *c, struct cache_stats *s)
{
	struct cache_pg *p = (struct cache_pg *)c;
	int recount;

	pthread_mutex_lock(&p->lock);
	recount = p->health == CACHE_PG_UP &&
	    (p->counted_at == 0 || cache_pg_now_ms() - p->counted_at >= CACHE_PG_COUNT_MS);
	pthread_mutex_unlock(&p->lock);
	if (recount) {
		PGresult *res = cache_pg_call(p, CACHE_PG_COUNT, NULL, NULL, NULL, 0);

		if (res != NULL && PQntuples(res) == 1) {
			uint64_t entries = strtoull(PQgetvalue(res, 0, 0), NULL, 10);
			uint64_t bytes = strtoull(PQgetvalue(res, 0, 1), NULL, 10);

			pthread_mutex_lock(&p->lock);
			p->entries = entries;
			p->bytes = bytes;
			p->counted_at = cache_pg_now_ms();
			pthread_mutex_unlock(&p->lock);
		}
		PQclear(res);
	}
	pthread_mutex_lock(&p->lock);
	s->hits = p->hits;
	s->misses = p->misses;
	s->puts = p->puts;
	s->errors = p->errors;
	s->entries = p->entries;
	s->bytes = p->bytes;
	pthread_mutex_unlock(&p->lock);
}

/* Closes the idle connections and frees everything; no connection may be
 * lent out (no call in flight on any thread). */
static void
cache_pg_destroy(struct cache *c)
{
	struct cache_pg *p = (struct cache_pg *)c;

	while (p->nidle > 0)
		PQfinish(p->idle[--p->nidle]);
	pthread_mutex_destroy(&p->lock);
	free(p->idle);
	free(p->conninfo);
	free(p);
}

/* ---- for cache_jobs.c (cache_pg.h) ---- */

PGconn *
cache_pg_lend(struct cache *c, char *why, size_t len)
{
	return cache_pg_acquire((struct cache_pg *)c, why, len);
}

void
cache_pg_return(struct cache *c, PGconn *conn, int broken, const char *why)
{
	struct cache_pg *p = (struct cache_pg *)c;

	cache_pg_release(p, conn, broken, why);
	if (!broken) {
		pthread_mutex_lock(&p->lock);
		cache_pg_mark_up(p);
		pthread_mutex_unlock(&p->lock);
	}
}

PGresult *
cache_pg_run(PGconn *conn, const char *name, int n, const char *const *vals, const int *lens, const int *fmts,
    int binary, int *broken, char *why, size_t len)
{
	return cache_pg_collect(conn, PQsendQueryPrepared(conn, name, n, vals, lens, fmts, binary), broken, why, len);
}

static const struct cache_ops cache_pg_ops = {
	.get = cache_pg_get,
	.put = cache_pg_put,
	.del = cache_pg_delete,
	.state = cache_pg_state,
	.stats = cache_pg_stats,
	.destroy = cache_pg_destroy,
};

/* Checks that libpq can parse `conninfo`; reports whether it sets
 * connect_timeout. 0, or -1 with err. */
static int
cache_pg_parse_conninfo(const char *conninfo, int *has_timeout, struct dn_error *err)
{
	char *msg = NULL;
	PQconninfoOption *opts = PQconninfoParse(conninfo, &msg);

	if (opts == NULL) {
		char line[256];

		cache_pg_set_reason(line, sizeof line, msg != NULL ? msg : "out of memory");
		PQfreemem(msg);
		return dn_error_set(err, msg != NULL ? DN_EINVAL : DN_ENOMEM, "",
		    "database URL: %s", line);
	}
	*has_timeout = 0;
	for (PQconninfoOption *o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "connect_timeout") == 0 && o->val != NULL && o->val[0] != '\0')
			*has_timeout = 1;
	PQconninfoFree(opts);
	return 0;
}

/* Builds the keyword list so that what the user wrote wins: our defaults
 * (application_name, connect_timeout) come first and the user's string,
 * expanded from "dbname" by PQconnectdbParams, overrides them. */
static void
cache_pg_set_keywords(struct cache_pg *p, int has_timeout)
{
	int n = 0;

	p->keywords[n] = "application_name";
	p->values[n++] = "dnnsat";
	if (!has_timeout && getenv("PGCONNECT_TIMEOUT") == NULL) {
		p->keywords[n] = "connect_timeout";
		p->values[n++] = CACHE_PG_CONNECT_TIMEOUT;
	}
	p->keywords[n] = "dbname";
	p->values[n++] = p->conninfo;
	p->keywords[n] = NULL;
	p->values[n] = NULL;
}

int
cache_is_pg(const struct cache *c)
{
	return c != NULL && c->ops == &cache_pg_ops;
}

struct cache *
cache_pg_new(const char *conninfo, int pool, struct dn_error *err)
{
	struct cache_pg *p;
	int has_timeout = 0;
	char why[256];
	PGconn *conn;

	if (conninfo == NULL) {
		dn_error_set(err, DN_EINVAL, "", "database URL: missing");
		return NULL;
	}
	if (cache_pg_parse_conninfo(conninfo, &has_timeout, err) != 0)
		return NULL;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		goto nomem;
	p->base.ops = &cache_pg_ops;
	p->pool_max = pool > 0 ? pool : 1;
	p->conninfo = strdup(conninfo);
	p->idle = calloc((size_t)p->pool_max, sizeof *p->idle);
	if (p->conninfo == NULL || p->idle == NULL || cache_base_init(&p->base) != 0) {
		free(p->base.wb);
		free(p->conninfo);
		free(p->idle);
		free(p);
		goto nomem;
	}
	cache_pg_set_keywords(p, has_timeout);
	pthread_mutex_init(&p->lock, NULL);
	cache_waitq_init(&p->waiters);

	/* connect (and migrate) now, so a misconfiguration shows at start;
	 * a failure only leaves the cache down */
	conn = cache_pg_acquire(p, why, sizeof why);
	if (conn != NULL)
		cache_pg_release(p, conn, 0, "");
	else
		p->errors = 0;  /* the start is no caller's failed request */
	return &p->base;
nomem:
	dn_error_set(err, DN_ENOMEM, "", "out of memory");
	return NULL;
}
