/*
 * cache_pg.h - what the PostgreSQL backend (cache_pg.c) shares with the
 * other users of its connections: the distributed count's job tables
 * (cache_jobs.c). Private to the cache library.
 *
 * A connection lent by cache_pg_lend belongs to the calling thread until
 * cache_pg_return; it has every statement of cache_pg.c's list and of
 * cache_jobs_stmts prepared, and runs only those (values always as
 * parameters). A connection returned inside a transaction (a failure
 * half-way) is closed, which rolls the transaction back.
 */
#ifndef DN_CACHE_PG_H
#define DN_CACHE_PG_H

#include <libpq-fe.h>

#include "cache.h"

struct cache_pg_stmt {
	const char *name, *sql;
	int nparams;
};

/* The job tables' statements (cache_jobs.c), prepared on every connection. */
extern const struct cache_pg_stmt cache_jobs_stmts[];
extern const int cache_jobs_nstmts;

/* 1 when c is the PostgreSQL backend. */
int cache_is_pg(const struct cache *c);

/* A pooled connection for this thread, or NULL (database down, pool busy:
 * why says so). */
PGconn *cache_pg_lend(struct cache *c, char *why, size_t len);
/* Gives it back; `broken` (from cache_pg_run) marks the database down. */
void cache_pg_return(struct cache *c, PGconn *conn, int broken, const char *why);
/* Runs prepared statement `name` with text parameters (lens and fmts may
 * be NULL: all text), its result in text, or binary when `binary`. The
 * successful result (the caller PQclears it), or
 * NULL with why and *broken set as cache_pg.c's statements do. */
PGresult *cache_pg_run(PGconn *conn, const char *name, int n, const char *const *vals, const int *lens,
    const int *fmts, int binary, int *broken, char *why, size_t len);

#endif
