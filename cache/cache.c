/*
 * cache.c - the backend-independent half of cache.h: every public call
 * dispatches through c->ops to the backend that created `c` (cache_mem.c or
 * cache_pg.c), and cache_entry_clear frees what cache_get handed out. Two
 * guards sit in front of every backend:
 *
 *   - a checksum over the key, the final flag, the stored request and the
 *     result, computed here on every put and checked on every get: an
 *     entry that fails it (edited in the database, copied from another
 *     key, written by a version without checksums) is logged, counted
 *     (corrupt), deleted and answered as a miss, so the caller recomputes
 *     (cache_get_salvage also hands back the request text the entry held,
 *     unverified: a caller that can tell it is the one the key names, as
 *     a reduction id names the hash of its request, computes it again);
 *   - the write-back queue (cache_wb.c): a put refused while the backend is
 *     down is written when it returns; a get it cannot answer is served
 *     from the queue meanwhile.
 *
 * Invariants: a NULL cache behaves as a backend that is down (get
 * CACHE_DOWN, put/delete -1, state "down") so a caller that failed to
 * create one degrades instead of crashing.
 */
#include "cache.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void
cache_log(const char *fmt, ...)
{
	char stamp[64], line[512];
	struct timespec ts;
	struct tm tm;
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
	    tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(ts.tv_nsec / 1000000) % 1000);
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* the same line format as the daemon's own log (srv_log) */
	fprintf(stderr, "%s dnnsatd: %s\n", stamp, line);
}

/* FNV-1a (64 bits) over each part with its length, so that moving bytes
 * from one part to the next changes the sum. */
static void
entry_checksum(const char *key, const struct cache_entry *e, char out[CACHE_CHECKSUM_LEN + 1])
{
	const char *parts[4] = { key, e->final ? "final" : "partial", e->request ? e->request : "",
		e->result ? e->result : "" };
	uint64_t h = 1469598103934665603ULL;

	for (int k = 0; k < 4; k++) {
		size_t n = strlen(parts[k]);
		for (int b = 0; b < 8; b++)
			h = (h ^ ((n >> (8 * b)) & 0xff)) * 1099511628211ULL;
		for (size_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)parts[k][i]) * 1099511628211ULL;
	}
	snprintf(out, CACHE_CHECKSUM_LEN + 1, "%016llx", (unsigned long long)h);
}

int
cache_base_init(struct cache *c)
{
	atomic_init(&c->corrupt, 0);
	c->wb = cache_wb_new();
	return c->wb != NULL ? 0 : -1;
}


/* `damaged` (may be NULL) gets the request text of an entry that failed
 * its checksum (cache_get_salvage). */
static int
get(struct cache *c, const char *key, int with_progress, struct cache_entry *out, char **damaged)
{
	char sum[CACHE_CHECKSUM_LEN + 1];
	int rc;

	if (damaged != NULL)
		*damaged = NULL;
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (c == NULL || key == NULL || out == NULL)
		return CACHE_DOWN;
	rc = c->ops->get(c, key, with_progress, out);
	if (rc == CACHE_HIT) {
		entry_checksum(key, out, sum);
		if (strcmp(sum, out->checksum) != 0) {
			atomic_fetch_add(&c->corrupt, 1);
			cache_log("cache entry %.64s fails its checksum (%s): dropped, never served", key,
			    out->checksum[0] ? "altered" : "none stored");
			if (damaged != NULL) {
				/* unverified: the caller checks it */
				*damaged = out->request != NULL ? out->request : strdup("");
				out->request = NULL;
			}
			cache_entry_clear(out);
			c->ops->del(c, key);
			rc = CACHE_MISS;
		}
	}
	if (rc != CACHE_HIT && cache_wb_get(c, key, with_progress, out) == CACHE_HIT)
		rc = CACHE_HIT;
	return rc;
}

int
cache_get(struct cache *c, const char *key, struct cache_entry *out)
{
	return get(c, key, 1, out, NULL);
}

int
cache_get_result(struct cache *c, const char *key, struct cache_entry *out)
{
	return get(c, key, 0, out, NULL);
}

int
cache_get_salvage(struct cache *c, const char *key, int with_progress, struct cache_entry *out, char **damaged)
{
	return get(c, key, with_progress, out, damaged);
}

int
cache_put(struct cache *c, const char *key, const struct cache_entry *e)
{
	struct cache_entry sealed;

	if (c == NULL || key == NULL || e == NULL)
		return -1;
	sealed = *e;
	entry_checksum(key, e, sealed.checksum);
	if (c->ops->put(c, key, &sealed) == 0)
		return 0;
	/* only an outage is waited out: an entry the backend refuses for
	 * itself (out of memory, beyond bytea's limit) would never go */
	if (strcmp(c->ops->state(c, 0, NULL, 0), "down") == 0)
		cache_wb_queue(c, key, &sealed);
	return -1;
}

int
cache_delete(struct cache *c, const char *key)
{
	if (c == NULL || key == NULL)
		return -1;
	cache_wb_forget(c, key);
	return c->ops->del(c, key);
}

/* `detail` is always terminated (empty when there is nothing to say). */
const char *
cache_state(struct cache *c, int probe, char *detail, size_t len)
{
	if (detail != NULL && len > 0)
		detail[0] = '\0';
	if (c == NULL) {
		if (detail != NULL && len > 0)
			snprintf(detail, len, "no cache");
		return "down";
	}
	return c->ops->state(c, probe, detail, len);
}

void
cache_get_stats(struct cache *c, struct cache_stats *s)
{
	if (s == NULL)
		return;
	memset(s, 0, sizeof *s);
	if (c == NULL)
		return;
	c->ops->stats(c, s);
	s->corrupt = atomic_load(&c->corrupt);
	cache_wb_stats(c, s);
}

void
cache_entry_clear(struct cache_entry *e)
{
	if (e == NULL)
		return;
	free(e->request);
	free(e->result);
	free(e->progress);
	memset(e, 0, sizeof *e);
}

void
cache_free(struct cache *c)
{
	if (c == NULL)
		return;
	cache_wb_free(c);
	c->ops->destroy(c);
}
