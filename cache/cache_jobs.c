/*
 * cache_jobs.c - the distributed count's job tables (cache_jobs.h) on the
 * PostgreSQL backend's connections (cache_pg.h): publishing a cut count in
 * one transaction, claiming with FOR UPDATE SKIP LOCKED and a lease,
 * renewing, committing once, reading the progress of a set.
 *
 * Every statement is prepared (cache_jobs_stmts, on every connection of the
 * pool); values are parameters, the job list of a set two array parameters
 * (int[] nodes, text[] paths, unnested WITH ORDINALITY: job i is element
 * i + 1). Leases are PostgreSQL's clock (now() + seconds), so the
 * replicas' clocks need not agree. A done job's data is a bytea parameter
 * (binary) and comes back in text (hex), unescaped by libpq.
 */
#include "cache_jobs.h"
#include "cache_pg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { J_BEGIN, J_COMMIT, J_SET, J_ADD, J_CLAIM, J_RENEW, J_DONE, J_RELEASE, J_LEFT, J_HEAD, J_READ, J_TREE,
	J_FINISH, J_SWEEP, J_NSTMTS };

const struct cache_pg_stmt cache_jobs_stmts[J_NSTMTS] = {
	[J_BEGIN] = { "dnnsat_jobs_begin", "BEGIN", 0 },
	[J_COMMIT] = { "dnnsat_jobs_commit_tx", "COMMIT", 0 },
	[J_SET] = { "dnnsat_jobs_set",
	    "INSERT INTO dnnsat_job_sets (key, request, njobs, tree) VALUES ($1, $2, $3::int, $4) "
	    "ON CONFLICT (key) DO NOTHING", 4 },
	[J_ADD] = { "dnnsat_jobs_add",
	    "INSERT INTO dnnsat_jobs (key, job, node, path) "
	    "SELECT $1, (t.ord - 1)::int, t.node, t.path "
	    "FROM unnest($2::int[], $3::text[]) WITH ORDINALITY AS t(node, path, ord)", 3 },
	/* the oldest set's first job that is open (and past its backoff, if
	 * it was given back after a failure) or whose lease expired; rows
	 * another claimer holds locked are skipped, not waited for */
	[J_CLAIM] = { "dnnsat_jobs_claim",
	    "UPDATE dnnsat_jobs j SET state = 'claimed', owner = $1, "
	    "lease_until = now() + $2::float8 * interval '1 second', attempts = j.attempts + 1, claimed_at = now() "
	    "FROM dnnsat_job_sets s WHERE s.key = j.key AND (j.key, j.job) = ("
	    "SELECT key, job FROM dnnsat_jobs WHERE (state = 'open' AND (not_before IS NULL OR not_before <= now())) "
	    "OR (state = 'claimed' AND lease_until < now()) "
	    "ORDER BY key, job LIMIT 1 FOR UPDATE SKIP LOCKED) "
	    "RETURNING j.key, j.job, j.path, s.request", 2 },
	[J_RENEW] = { "dnnsat_jobs_renew",
	    "UPDATE dnnsat_jobs SET lease_until = now() + $4::float8 * interval '1 second' "
	    "WHERE key = $1 AND job = $2::int AND owner = $3 AND state = 'claimed'", 4 },
	[J_DONE] = { "dnnsat_jobs_done",
	    "UPDATE dnnsat_jobs SET state = 'done', count = $4, data = $5, commits = commits + 1, done_at = now() "
	    "WHERE key = $1 AND job = $2::int AND owner = $3 AND state = 'claimed'", 5 },
	/* open again: at once ($4 = 0), or after $4 seconds doubled for each
	 * earlier claim of the job (attempts counts this one), at most $5 */
	[J_RELEASE] = { "dnnsat_jobs_release",
	    "UPDATE dnnsat_jobs SET state = 'open', owner = NULL, lease_until = NULL, "
	    "not_before = CASE WHEN $4::float8 > 0 THEN now() + least($4::float8 * power(2::float8, "
	    "least(greatest(attempts - 1, 0), 60)), $5::float8) * interval '1 second' END "
	    "WHERE key = $1 AND job = $2::int AND owner = $3 AND state = 'claimed'", 5 },
	[J_LEFT] = { "dnnsat_jobs_left",
	    "SELECT count(*) FROM dnnsat_jobs WHERE key = $1 AND state <> 'done'", 1 },
	[J_HEAD] = { "dnnsat_jobs_head",
	    "SELECT njobs, finished_at IS NOT NULL FROM dnnsat_job_sets WHERE key = $1", 1 },
	[J_READ] = { "dnnsat_jobs_read",
	    "SELECT node, count, data FROM dnnsat_jobs WHERE key = $1 AND state = 'done' ORDER BY job", 1 },
	[J_TREE] = { "dnnsat_jobs_tree", "SELECT tree FROM dnnsat_job_sets WHERE key = $1", 1 },
	/* one statement, so one transaction: the jobs and the tree go, the
	 * set's row stays as the record that the result is final */
	[J_FINISH] = { "dnnsat_jobs_finish",
	    "WITH gone AS (DELETE FROM dnnsat_jobs WHERE key = $1 "
	    "RETURNING job, state, attempts, commits, owner, claimed_at, done_at), "
	    "per AS (SELECT max(done_at) AS last, extract(epoch FROM sum(done_at - claimed_at)) AS busy, "
	    "extract(epoch FROM max(done_at) - min(claimed_at) - sum(done_at - claimed_at)) AS idle "
	    "FROM gone WHERE owner IS NOT NULL GROUP BY owner) "
	    "UPDATE dnnsat_job_sets SET finished_at = coalesce(finished_at, now()), tree = ''::bytea, "
	    "counted_at = coalesce((SELECT max(last) FROM per), counted_at), "
	    "claimers = coalesce((SELECT nullif(count(*), 0) FROM per), claimers), "
	    "busy_s = coalesce((SELECT sum(busy) FROM per), busy_s), "
	    "between_s = coalesce((SELECT sum(idle) FROM per), between_s), "
	    "jobs_log = coalesce((SELECT string_agg(job || ' ' || state || ' ' || attempts || ' ' || commits || ' ' || "
	    "coalesce(owner, '-'), E'\\n' ORDER BY job) FROM gone), jobs_log) WHERE key = $1", 1 },
	/* at most $3 sets: finished before $1 seconds ago, or unfinished and
	 * untouched for $2 seconds: published before, and no job committed or
	 * leased (a claim or its renewal) since (a job claimed and given back
	 * has no lease: claimers that keep failing do not keep a set alive);
	 * their jobs go with them (ON DELETE CASCADE) */
	[J_SWEEP] = { "dnnsat_jobs_sweep",
	    "DELETE FROM dnnsat_job_sets WHERE key IN (SELECT s.key FROM dnnsat_job_sets s WHERE "
	    "(s.finished_at IS NOT NULL AND s.finished_at < now() - $1::float8 * interval '1 second') OR "
	    "(s.finished_at IS NULL AND greatest(s.created_at, (SELECT max(greatest(j.lease_until, j.done_at)) "
	    "FROM dnnsat_jobs j WHERE j.key = s.key)) < now() - $2::float8 * interval '1 second') "
	    "ORDER BY s.created_at LIMIT $3::int)", 3 },
};
const int cache_jobs_nstmts = J_NSTMTS;

int
cache_jobs_supported(const struct cache *c)
{
	return cache_is_pg(c);
}

/* A lent connection and what its statements report (cache_pg_run). */
struct jobs_conn {
	PGconn *conn;
	int broken;
	char why[256];
};

/* Lends k a pooled connection: 0, or -1 (not PostgreSQL, or down). */
static int
jobs_lend(struct cache *c, struct jobs_conn *k)
{
	k->broken = 0;
	k->why[0] = '\0';
	return cache_is_pg(c) && (k->conn = cache_pg_lend(c, k->why, sizeof k->why)) != NULL ? 0 : -1;
}

/* PQclears `prev` (the step before; NULL for none), then runs statement
 * stmt on k's connection, its result as text or, when `binary`, binary: the
 * result (PQclear it), or NULL with k->why and k->broken set. */
static PGresult *
jobs_run(struct jobs_conn *k, PGresult *prev, int stmt, const char *const *vals, const int *lens,
    const int *fmts, int binary)
{
	PQclear(prev);
	return cache_pg_run(k->conn, cache_jobs_stmts[stmt].name, cache_jobs_stmts[stmt].nparams, vals, lens, fmts,
	    binary, &k->broken, k->why, sizeof k->why);
}

/* Runs one statement on a pooled connection: the result (PQclear it), or
 * NULL (down, or the statement failed: logged). */
static PGresult *
jobs_call(struct cache *c, int stmt, const char *const *vals, const int *lens, const int *fmts, int binary)
{
	struct jobs_conn k;
	PGresult *res;

	if (jobs_lend(c, &k) != 0)
		return NULL;
	res = jobs_run(&k, NULL, stmt, vals, lens, fmts, binary);
	if (res == NULL && !k.broken)
		cache_log("jobs: %s failed: %s", cache_jobs_stmts[stmt].name, k.why);
	cache_pg_return(c, k.conn, k.broken, k.why);
	return res;
}

/* The rows an UPDATE changed: 1 or 0, -1 when it failed. */
static int
jobs_update(struct cache *c, int stmt, const char *const *vals)
{
	PGresult *res = jobs_call(c, stmt, vals, NULL, NULL, 0);
	int n;

	if (res == NULL)
		return -1;
	n = atoi(PQcmdTuples(res)) > 0;
	PQclear(res);
	return n;
}

/* An UPDATE of one job that `owner` holds (J_RENEW, J_DONE: key, job,
 * owner and `extra`): as jobs_update. */
static int
jobs_update_job(struct cache *c, int stmt, const char *key, int job, const char *owner, const char *extra)
{
	char j[16];
	const char *vals[4] = { key, j, owner, extra };

	snprintf(j, sizeof j, "%d", job);
	return jobs_update(c, stmt, vals);
}

/* The array literals of a set's jobs: "{n0,n1,...}" and "{"p0","p1",...}"
 * (paths hold digits, ':' and '/' only: nothing to escape). 0 or -1. */
static int
jobs_arrays(int n, const int32_t *nodes, char *const *paths, char **anodes, char **apaths)
{
	size_t ln = 2, lp = 2, at;

	for (int i = 0; i < n; i++) {
		if (strspn(paths[i], "0123456789:/") != strlen(paths[i]))
			return -1;
		ln += 12;
		lp += strlen(paths[i]) + 3;
	}
	*anodes = malloc(ln + 1);
	*apaths = malloc(lp + 1);
	if (*anodes == NULL || *apaths == NULL)
		return -1;
	at = 0;
	(*anodes)[at++] = '{';
	for (int i = 0; i < n; i++)
		at += (size_t)snprintf(*anodes + at, ln + 1 - at, "%s%d", i > 0 ? "," : "", (int)nodes[i]);
	snprintf(*anodes + at, ln + 1 - at, "}");
	at = 0;
	(*apaths)[at++] = '{';
	for (int i = 0; i < n; i++)
		at += (size_t)snprintf(*apaths + at, lp + 1 - at, "%s\"%s\"", i > 0 ? "," : "", paths[i]);
	snprintf(*apaths + at, lp + 1 - at, "}");
	return 0;
}

int
cache_jobs_publish(struct cache *c, const char *key, const char *request, const void *tree, size_t tree_len,
    int n, const int32_t *nodes, char *const *paths)
{
	char njobs[16], *anodes = NULL, *apaths = NULL;
	const char *set[4] = { key, request, njobs, tree }, *add[3] = { key, NULL, NULL };
	int lens[4] = { 0, 0, 0, (int)tree_len }, fmts[4] = { 0, 0, 0, 1 }, rc = -1;
	struct jobs_conn k;
	PGresult *res;

	if (!cache_is_pg(c) || n <= 0 || tree_len > 0x3fffffff ||
	    jobs_arrays(n, nodes, paths, &anodes, &apaths) != 0 || jobs_lend(c, &k) != 0) {
		free(anodes);
		free(apaths);
		return -1;
	}
	add[1] = anodes;
	add[2] = apaths;
	snprintf(njobs, sizeof njobs, "%d", n);
	if ((res = jobs_run(&k, NULL, J_BEGIN, NULL, NULL, NULL, 0)) != NULL)
		res = jobs_run(&k, res, J_SET, set, lens, fmts, 0);
	if (res != NULL && atoi(PQcmdTuples(res)) == 0) {
		rc = 0;         /* another publisher's set: leaving the transaction closes it (rolled back) */
	} else if (res != NULL && (res = jobs_run(&k, res, J_ADD, add, NULL, NULL, 0)) != NULL) {
		res = jobs_run(&k, res, J_COMMIT, NULL, NULL, NULL, 0);
		rc = res != NULL ? 1 : -1;
	}
	if (rc < 0 && !k.broken)
		cache_log("jobs: publishing %d jobs of %s failed: %s", n, key, k.why);
	PQclear(res);
	cache_pg_return(c, k.conn, k.broken, k.why);
	free(anodes);
	free(apaths);
	return rc;
}

/* A copy of row 0's column col, NUL-terminated; NULL out of memory. */
static char *
jobs_value(const PGresult *res, int col)
{
	return strdup(PQgetvalue(res, 0, col));
}

int
cache_jobs_claim(struct cache *c, const char *owner, double lease, struct cache_job *out)
{
	char secs[32];
	const char *vals[2] = { owner, secs };
	PGresult *res;
	int rc = 0;

	memset(out, 0, sizeof *out);
	snprintf(secs, sizeof secs, "%.3f", lease);
	if ((res = jobs_call(c, J_CLAIM, vals, NULL, NULL, 0)) == NULL)
		return -1;
	if (PQntuples(res) == 1) {
		snprintf(out->key, sizeof out->key, "%s", PQgetvalue(res, 0, 0));
		out->job = atoi(PQgetvalue(res, 0, 1));
		out->path = jobs_value(res, 2);
		out->request = jobs_value(res, 3);
		rc = out->path != NULL && out->request != NULL ? 1 : -1;
		if (rc < 0) {
			/* out of memory: give it back rather than hold it to its lease */
			cache_jobs_release(c, out->key, out->job, owner, 0, 0);
			cache_job_clear(out);
		}
	}
	PQclear(res);
	return rc;
}

int
cache_jobs_renew(struct cache *c, const char *key, int job, const char *owner, double lease)
{
	char secs[32];

	snprintf(secs, sizeof secs, "%.3f", lease);
	return jobs_update_job(c, J_RENEW, key, job, owner, secs);
}

int
cache_jobs_commit(struct cache *c, const char *key, int job, const char *owner, const char *count, const void *data,
    size_t len)
{
	char j[16];
	const char *vals[5] = { key, j, owner, count, data };
	int lens[5] = { 0, 0, 0, 0, (int)len }, fmts[5] = { 0, 0, 0, 0, 1 }, n;
	PGresult *res;

	if (len > 0x3fffffff)
		return -1;
	snprintf(j, sizeof j, "%d", job);
	/* data NULL: SQL NULL (a job without data: the final answer searches its box) */
	if ((res = jobs_call(c, J_DONE, vals, lens, fmts, 0)) == NULL)
		return -1;
	n = atoi(PQcmdTuples(res)) > 0;
	PQclear(res);
	return n;
}

int
cache_jobs_release(struct cache *c, const char *key, int job, const char *owner, double retry_s, double retry_max_s)
{
	char j[16], r[32], rmax[32];
	const char *vals[5] = { key, j, owner, r, rmax };

	snprintf(j, sizeof j, "%d", job);
	snprintf(r, sizeof r, "%.6f", retry_s > 0 ? retry_s : 0);
	snprintf(rmax, sizeof rmax, "%.6f", retry_max_s > retry_s ? retry_max_s : retry_s > 0 ? retry_s : 0);
	return jobs_update(c, J_RELEASE, vals);
}

int
cache_jobs_left(struct cache *c, const char *key)
{
	const char *vals[1] = { key };
	PGresult *res = jobs_call(c, J_LEFT, vals, NULL, NULL, 0);
	int n;

	if (res == NULL)
		return -1;
	n = PQntuples(res) == 1 ? atoi(PQgetvalue(res, 0, 0)) : -1;
	PQclear(res);
	return n;
}

int
cache_jobs_read(struct cache *c, const char *key, struct cache_jobs_state *out)
{
	const char *vals[1] = { key };
	PGresult *res;
	int n;

	memset(out, 0, sizeof *out);
	if ((res = jobs_call(c, J_HEAD, vals, NULL, NULL, 0)) == NULL)
		return -1;
	if (PQntuples(res) != 1) {
		PQclear(res);
		return 0;
	}
	out->njobs = atoi(PQgetvalue(res, 0, 0));
	out->finished = PQgetvalue(res, 0, 1)[0] == 't';
	PQclear(res);
	if ((res = jobs_call(c, J_READ, vals, NULL, NULL, 0)) == NULL)
		return -1;
	n = PQntuples(res);
	out->node = calloc((size_t)n + 1, sizeof *out->node);
	out->count = calloc((size_t)n + 1, sizeof *out->count);
	out->data = calloc((size_t)n + 1, sizeof *out->data);
	out->data_len = calloc((size_t)n + 1, sizeof *out->data_len);
	if (out->node == NULL || out->count == NULL || out->data == NULL || out->data_len == NULL) {
		PQclear(res);
		cache_jobs_state_clear(out);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		out->node[i] = (int32_t)atoi(PQgetvalue(res, i, 0));
		out->count[i] = strdup(PQgetvalue(res, i, 1));
		/* bytea in text: unescaped (NULL: none; out of memory: none either,
		 * the final answer then searches that box) */
		if (!PQgetisnull(res, i, 2))
			out->data[i] = PQunescapeBytea((const unsigned char *)PQgetvalue(res, i, 2), &out->data_len[i]);
		if (out->count[i] == NULL) {
			PQclear(res);
			cache_jobs_state_clear(out);
			return -1;
		}
		out->ndone++;
	}
	PQclear(res);
	return 1;
}

int
cache_jobs_tree(struct cache *c, const char *key, void **tree, size_t *len)
{
	const char *vals[1] = { key };
	int rc = 0;
	PGresult *res;

	*tree = NULL;
	*len = 0;
	/* the blob as binary: its bytes as stored */
	if ((res = jobs_call(c, J_TREE, vals, NULL, NULL, 1)) == NULL)
		return -1;
	if (PQntuples(res) == 1) {
		size_t n = (size_t)PQgetlength(res, 0, 0);
		void *b = malloc(n + 1);
		rc = -1;
		if (b != NULL) {
			memcpy(b, PQgetvalue(res, 0, 0), n);
			*tree = b;
			*len = n;
			rc = 1;
		}
	}
	PQclear(res);
	return rc;
}

int
cache_jobs_finish(struct cache *c, const char *key)
{
	const char *vals[1] = { key };

	return jobs_update(c, J_FINISH, vals) < 0 ? -1 : 0;
}

int
cache_jobs_sweep(struct cache *c, double keep_finished, double abandoned, int max_sets)
{
	char a[32], b[32], n[16];
	const char *vals[3] = { a, b, n };
	PGresult *res;
	int gone;

	snprintf(a, sizeof a, "%.3f", keep_finished);
	snprintf(b, sizeof b, "%.3f", abandoned);
	snprintf(n, sizeof n, "%d", max_sets);
	if ((res = jobs_call(c, J_SWEEP, vals, NULL, NULL, 0)) == NULL)
		return -1;
	gone = atoi(PQcmdTuples(res));
	PQclear(res);
	return gone;
}

void
cache_job_clear(struct cache_job *j)
{
	free(j->path);
	free(j->request);
	memset(j, 0, sizeof *j);
}

void
cache_jobs_state_clear(struct cache_jobs_state *s)
{
	for (int i = 0; s->count != NULL && i < s->ndone; i++)
		free(s->count[i]);
	for (int i = 0; s->data != NULL && i <= s->ndone; i++)
		PQfreemem(s->data[i]);
	free(s->data);
	free(s->data_len);
	free(s->count);
	free(s->node);
	memset(s, 0, sizeof *s);
}
