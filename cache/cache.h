/*
 * cache.h - the result cache behind the service: an in-memory store
 * (cache_mem.c, the default) or PostgreSQL through libpq (cache_pg.c), one
 * interface, with checksums (cache.c) and a write-back queue for outages
 * (cache_wb.c) in front of both. Keys are the reduction ids (hex hashes of the canonical request
 * and the cost model's version); a value is the result JSON text, the
 * canonical request it answers, whether it is final, and an optional opaque
 * progress blob (the solver's saved search tree) for computations that a
 * restart or another replica should continue.
 *
 * Invariants: every function is safe to call from any thread at once. A
 * backend that is unavailable never blocks a caller for longer than about
 * its connect timeout and never returns a wrong entry: cache_get returns
 * CACHE_DOWN and the caller computes the answer itself. Entries are only
 * replaced by entries for the same key; a final entry is never replaced by
 * a non-final one.
 */
#ifndef DN_CACHE_H
#define DN_CACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "dn_error.h"

enum cache_result { CACHE_DOWN = -1, CACHE_MISS = 0, CACHE_HIT = 1 };

#define CACHE_CHECKSUM_LEN 16
/* The write-back queue of puts made while the backend was down (cache.c). */
#define CACHE_WB_MAX_ENTRIES 1024
#define CACHE_WB_MAX_BYTES ((size_t)64 << 20)

struct cache_entry {
	char *request;          /* canonical request JSON (NUL-terminated) */
	char *result;           /* result JSON (NUL-terminated) */
	int final;              /* 1: the complete answer; 0: bounds while computing */
	void *progress;         /* opaque saved state, or NULL */
	size_t progress_len;
	/* set by cache_put and checked by cache_get (cache.c): the backends only
	 * store it; "" when a row has none (treated as corrupt) */
	char checksum[CACHE_CHECKSUM_LEN + 1];
};

struct cache_stats {
	uint64_t hits, misses, puts, errors;
	uint64_t entries, bytes;        /* what is stored now (memory: exact; pg: from the last count, may be 0) */
	uint64_t corrupt;               /* entries that failed their checksum (dropped, counted as misses) */
	uint64_t wb_pending, wb_written, wb_dropped;    /* the write-back queue (cache.c) */
};

struct cache;

/* An in-memory cache holding at most max_bytes of entries (least recently
 * used evicted first). NULL only when out of memory. */
struct cache *cache_mem_new(size_t max_bytes);

/* A PostgreSQL cache: `conninfo` is a libpq connection string or URL. Opens
 * up to `pool` connections on demand, creates and migrates its tables
 * (table dnnsat_results, schema version in dnnsat_schema), uses prepared
 * statements only. When the database cannot be reached at start, it still
 * returns the cache (calls answer CACHE_DOWN and it reconnects later,
 * at most once a second); NULL with err only for a malformed conninfo. */
struct cache *cache_pg_new(const char *conninfo, int pool, struct dn_error *err);

/* Looks `key` up. CACHE_HIT fills *out (free with cache_entry_clear);
 * CACHE_MISS and CACHE_DOWN leave it zeroed. An entry failing its checksum
 * is deleted and counted (stats.corrupt): a miss. An entry waiting in the
 * write-back queue is a hit while the backend cannot answer for it. cache_get_result leaves the
 * progress blob out (the read path: a reduction's saved search tree can be
 * megabytes that a reader does not need). */
int cache_get(struct cache *c, const char *key, struct cache_entry *out);
int cache_get_result(struct cache *c, const char *key, struct cache_entry *out);
/* cache_get (with_progress 1) or cache_get_result (0); when the entry
 * failed its checksum (dropped: a miss, unless the write-back queue holds
 * the key), *damaged gets the request text it held (malloc'd, "" when it
 * held none; the caller frees it), else NULL. That text is NOT verified: only a caller that can
 * check it against the key (a reduction id is the hash of its request) may
 * use it, to compute the entry again. */
int cache_get_salvage(struct cache *c, const char *key, int with_progress, struct cache_entry *out, char **damaged);

/* Stores an entry (copies everything) with its checksum. Ignores a
 * non-final entry when a final one is stored. 0, or -1 when the backend is
 * down: then the entry is queued and written back when it returns. */
int cache_put(struct cache *c, const char *key, const struct cache_entry *e);

/* Removes one key (tests, admin). 0, or -1 when down. */
int cache_delete(struct cache *c, const char *key);

/* "memory", or for PostgreSQL "ok" / "down"; `detail` gets a one-line
 * reason (the last libpq error) when down. Checks the connection when
 * `probe` is set (readyz). */
const char *cache_state(struct cache *c, int probe, char *detail, size_t len);

void cache_get_stats(struct cache *c, struct cache_stats *s);
/* One line on stderr with a UTC timestamp prefix, as the daemon's own log:
 * the backends' state changes, corrupt entries, the write-back queue. */
void cache_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cache_entry_clear(struct cache_entry *e);
void cache_free(struct cache *c);

/* The backends' common header: cache.c dispatches through it. */
struct cache_ops {
	int (*get)(struct cache *c, const char *key, int with_progress, struct cache_entry *out);
	int (*put)(struct cache *c, const char *key, const struct cache_entry *e);
	int (*del)(struct cache *c, const char *key);
	const char *(*state)(struct cache *c, int probe, char *detail, size_t len);
	void (*stats)(struct cache *c, struct cache_stats *s);
	void (*destroy)(struct cache *c);
};

struct cache_wb;

struct cache {
	const struct cache_ops *ops;
	struct cache_wb *wb;            /* the write-back queue (cache_wb.c) */
	atomic_uint_fast64_t corrupt;   /* entries that failed their checksum (cache.c) */
};

/* Called by a backend's constructor once ops is set: 0, or -1 (out of
 * memory: the backend frees itself and fails). */
int cache_base_init(struct cache *c);

/* ---- the write-back queue (cache_wb.c), used by cache.c ---- */
struct cache_wb *cache_wb_new(void);
/* Queues a copy of a put the backend refused while down (replacing the
 * key's older entry; dropping the oldest when full). */
void cache_wb_queue(struct cache *c, const char *key, const struct cache_entry *e);
/* The queued copy of `key` (CACHE_HIT, *out filled), else CACHE_MISS. */
int cache_wb_get(struct cache *c, const char *key, int with_progress, struct cache_entry *out);
void cache_wb_forget(struct cache *c, const char *key);
void cache_wb_stats(struct cache *c, struct cache_stats *s);
/* Stops the writer, tries what is left once, logs what is lost, frees. */
void cache_wb_free(struct cache *c);

#endif
