/*
 * cache.c - the backend-independent half of cache.h: every public call
 * dispatches through c->ops to the backend that created `c` (cache_mem.c or
 * cache_pg.c), and cache_entry_clear frees what cache_get handed out. Two
 * guards sit in front of every backend (state in c->guard):
 *
 *   - a checksum over the key, the final flag, the stored request and the
 *     result, computed here on every put and checked on every get: an
 *     entry that fails it (edited in the database, copied from another
 *     key, written by a version without checksums) is logged, counted
 *     (corrupt), deleted and answered as a miss, so the caller recomputes;
 *   - a write-back queue: a put that fails because the backend is down is
 *     kept (at most CACHE_WB_MAX_ENTRIES entries and CACHE_WB_MAX_BYTES;
 *     beyond them the oldest is dropped, logged and counted) and written by
 *     a background thread once the backend answers again, so an id handed
 *     out during an outage stays answerable. A get that the backend cannot
 *     answer is served from the queue meanwhile.
 *
 * Invariants: a NULL cache behaves as a backend that is down (get
 * CACHE_DOWN, put/delete -1, state "down") so a caller that failed to
 * create one degrades instead of crashing; the queue holds one entry per key
 * (a newer put replaces it, a non-final one never replaces a final one).
 */
#include "cache.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct wb_item {
	char *key;
	struct cache_entry e;
	size_t bytes;
	struct wb_item *next;
};

struct cache_guard {
	atomic_uint_fast64_t corrupt;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct wb_item *head, *tail;            /* oldest first */
	size_t n, bytes;
	uint64_t written, dropped;
	int thread_started, stopping;
	pthread_t thread;
};

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
	c->guard = calloc(1, sizeof *c->guard);
	if (c->guard == NULL)
		return -1;
	pthread_mutex_init(&c->guard->lock, NULL);
	pthread_cond_init(&c->guard->wake, NULL);
	return 0;
}

static void
wb_item_free(struct wb_item *it)
{
	free(it->key);
	cache_entry_clear(&it->e);
	free(it);
}

static int
copy_entry(struct cache_entry *dst, const struct cache_entry *src)
{
	memset(dst, 0, sizeof *dst);
	dst->request = strdup(src->request ? src->request : "");
	dst->result = strdup(src->result ? src->result : "");
	dst->final = src->final;
	memcpy(dst->checksum, src->checksum, sizeof dst->checksum);
	if (src->progress != NULL && src->progress_len > 0 && src->progress_len <= CACHE_WB_MAX_BYTES / 4 &&
	    (dst->progress = malloc(src->progress_len)) != NULL) {
		memcpy(dst->progress, src->progress, src->progress_len);
		dst->progress_len = src->progress_len;
	}
	if (dst->request == NULL || dst->result == NULL) {
		cache_entry_clear(dst);
		return -1;
	}
	return 0;
}

/* The queued item of `key` (lock held), or NULL; *prev its predecessor. */
static struct wb_item *
wb_find(struct cache_guard *g, const char *key, struct wb_item **prev)
{
	*prev = NULL;
	for (struct wb_item *it = g->head; it != NULL; *prev = it, it = it->next)
		if (strcmp(it->key, key) == 0)
			return it;
	return NULL;
}

static void
wb_unlink(struct cache_guard *g, struct wb_item *it, struct wb_item *prev)
{
	if (prev != NULL)
		prev->next = it->next;
	else
		g->head = it->next;
	if (g->tail == it)
		g->tail = prev;
	g->n--;
	g->bytes -= it->bytes;
}

/* Writes queued entries, oldest first, until one fails; runs until stopped. */
static void *
wb_main(void *arg)
{
	struct cache *c = arg;
	struct cache_guard *g = c->guard;

	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		struct wb_item *it = g->head;
		struct timespec ts;
		int rc;
		if (it == NULL) {
			pthread_cond_wait(&g->wake, &g->lock);
			continue;
		}
		/* detached while written: a newer put of the key queues anew */
		wb_unlink(g, it, NULL);
		pthread_mutex_unlock(&g->lock);
		rc = c->ops->put(c, it->key, &it->e);
		pthread_mutex_lock(&g->lock);
		if (rc == 0) {
			g->written++;
			wb_item_free(it);
			continue;
		}
		/* still down: back to the front, unless a newer put queued the key */
		{
			struct wb_item *prev, *newer = wb_find(g, it->key, &prev);
			if (newer != NULL) {
				wb_item_free(it);
			} else {
				it->next = g->head;
				g->head = it;
				if (g->tail == NULL)
					g->tail = it;
				g->n++;
				g->bytes += it->bytes;
			}
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		if (!g->stopping)
			pthread_cond_timedwait(&g->wake, &g->lock, &ts);
	}
	pthread_mutex_unlock(&g->lock);
	return NULL;
}

/* Queues a put the backend refused (down). */
static void
wb_queue(struct cache *c, const char *key, const struct cache_entry *e)
{
	struct cache_guard *g = c->guard;
	struct wb_item *it = calloc(1, sizeof *it), *old, *prev;

	if (it == NULL || (it->key = strdup(key)) == NULL || copy_entry(&it->e, e) != 0) {
		if (it != NULL)
			free(it->key);
		free(it);
		return;
	}
	it->bytes = strlen(key) + strlen(it->e.request) + strlen(it->e.result) + it->e.progress_len + sizeof *it;
	pthread_mutex_lock(&g->lock);
	old = wb_find(g, key, &prev);
	if (old != NULL && old->e.final && !it->e.final) {
		pthread_mutex_unlock(&g->lock);
		wb_item_free(it);
		return;
	}
	if (old != NULL) {
		wb_unlink(g, old, prev);
		wb_item_free(old);
	}
	while (g->head != NULL && (g->n + 1 > CACHE_WB_MAX_ENTRIES || g->bytes + it->bytes > CACHE_WB_MAX_BYTES)) {
		struct wb_item *drop = g->head;
		wb_unlink(g, drop, NULL);
		g->dropped++;
		cache_log("cache write-back queue full (%d entries, %zu bytes): dropped the oldest, %s", CACHE_WB_MAX_ENTRIES,
		    (size_t)CACHE_WB_MAX_BYTES, drop->key);
		wb_item_free(drop);
	}
	if (g->tail != NULL)
		g->tail->next = it;
	else
		g->head = it;
	g->tail = it;
	g->n++;
	g->bytes += it->bytes;
	if (!g->thread_started && !g->stopping && pthread_create(&g->thread, NULL, wb_main, c) == 0)
		g->thread_started = 1;
	pthread_cond_signal(&g->wake);
	pthread_mutex_unlock(&g->lock);
}

/* The queued copy of `key` into *out (CACHE_HIT), else CACHE_MISS. */
static int
wb_get(struct cache *c, const char *key, int with_progress, struct cache_entry *out)
{
	struct cache_guard *g = c->guard;
	struct wb_item *prev, *it;
	int rc = CACHE_MISS;

	pthread_mutex_lock(&g->lock);
	it = wb_find(g, key, &prev);
	if (it != NULL && copy_entry(out, &it->e) == 0) {
		if (!with_progress) {
			free(out->progress);
			out->progress = NULL;
			out->progress_len = 0;
		}
		rc = CACHE_HIT;
	}
	pthread_mutex_unlock(&g->lock);
	return rc;
}

static int
get(struct cache *c, const char *key, int with_progress, struct cache_entry *out)
{
	char sum[CACHE_CHECKSUM_LEN + 1];
	int rc;

	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (c == NULL || key == NULL || out == NULL)
		return CACHE_DOWN;
	rc = c->ops->get(c, key, with_progress, out);
	if (rc == CACHE_HIT) {
		entry_checksum(key, out, sum);
		if (strcmp(sum, out->checksum) != 0) {
			atomic_fetch_add(&c->guard->corrupt, 1);
			cache_log("cache entry %.64s fails its checksum (%s): dropped, it is computed again",
			    key, out->checksum[0] ? "altered" : "none stored");
			cache_entry_clear(out);
			c->ops->del(c, key);
			rc = CACHE_MISS;
		}
	}
	if (rc != CACHE_HIT && wb_get(c, key, with_progress, out) == CACHE_HIT)
		rc = CACHE_HIT;
	return rc;
}

int
cache_get(struct cache *c, const char *key, struct cache_entry *out)
{
	return get(c, key, 1, out);
}

int
cache_get_result(struct cache *c, const char *key, struct cache_entry *out)
{
	return get(c, key, 0, out);
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
		wb_queue(c, key, &sealed);
	return -1;
}

int
cache_delete(struct cache *c, const char *key)
{
	struct wb_item *it, *prev;

	if (c == NULL || key == NULL)
		return -1;
	pthread_mutex_lock(&c->guard->lock);
	if ((it = wb_find(c->guard, key, &prev)) != NULL) {
		wb_unlink(c->guard, it, prev);
		wb_item_free(it);
	}
	pthread_mutex_unlock(&c->guard->lock);
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
	s->corrupt = atomic_load(&c->guard->corrupt);
	pthread_mutex_lock(&c->guard->lock);
	s->wb_pending = c->guard->n;
	s->wb_written = c->guard->written;
	s->wb_dropped = c->guard->dropped;
	pthread_mutex_unlock(&c->guard->lock);
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
	struct cache_guard *g;

	if (c == NULL)
		return;
	g = c->guard;
	pthread_mutex_lock(&g->lock);
	g->stopping = 1;
	pthread_cond_broadcast(&g->wake);
	pthread_mutex_unlock(&g->lock);
	if (g->thread_started)
		pthread_join(g->thread, NULL);
	/* a last try for what is still queued (stopping at the first failure),
	 * then it is lost: logged */
	{
		size_t lost = 0;
		int down = 0;
		while (g->head != NULL) {
			struct wb_item *it = g->head;
			wb_unlink(g, it, NULL);
			if (down || c->ops->put(c, it->key, &it->e) != 0) {
				down = 1;
				lost++;
			}
			wb_item_free(it);
		}
		if (lost > 0)
			cache_log("cache write-back: %zu results not written (the database is still down at shutdown)", lost);
	}
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
	c->ops->destroy(c);
}
