/*
 * cache_wb.c - the write-back queue of cache.h: a put that the backend
 * refused because it is down is kept here (at most CACHE_WB_MAX_ENTRIES
 * entries and CACHE_WB_MAX_BYTES; beyond them the oldest is dropped, logged
 * and counted) and written by a background thread, started with the first
 * queued entry, once the backend answers again (it retries every second).
 * Reads the backend cannot answer are served from the queue meanwhile.
 *
 * Invariants: one entry per key (a newer put replaces it; a non-final one
 * never replaces a final one); an entry being written is detached, and put
 * back in front only when no newer one was queued meanwhile; at cache_free
 * what is left gets one last try and the rest is logged as lost.
 */
#include "cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct wb_item {
	char *key;
	struct cache_entry e;
	size_t bytes;
	struct wb_item *next;
};

struct cache_wb {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct wb_item *head, *tail;            /* oldest first */
	size_t n, bytes;
	uint64_t written, dropped;
	int thread_started, stopping;
	pthread_t thread;
};

struct cache_wb *
cache_wb_new(void)
{
	struct cache_wb *g = calloc(1, sizeof *g);

	if (g == NULL)
		return NULL;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->wake, NULL);
	return g;
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
wb_find(struct cache_wb *g, const char *key, struct wb_item **prev)
{
	*prev = NULL;
	for (struct wb_item *it = g->head; it != NULL; *prev = it, it = it->next)
		if (strcmp(it->key, key) == 0)
			return it;
	return NULL;
}

static void
wb_unlink(struct cache_wb *g, struct wb_item *it, struct wb_item *prev)
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
	struct cache_wb *g = c->wb;

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
			} else if (g->n + 1 > CACHE_WB_MAX_ENTRIES || g->bytes + it->bytes > CACHE_WB_MAX_BYTES) {
				/* the queue filled while it was out: it is the oldest, so it goes */
				g->dropped++;
				cache_log("cache write-back queue full (%d entries, %zu bytes): dropped the oldest, %s",
				    CACHE_WB_MAX_ENTRIES, (size_t)CACHE_WB_MAX_BYTES, it->key);
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

void
cache_wb_queue(struct cache *c, const char *key, const struct cache_entry *e)
{
	struct cache_wb *g = c->wb;
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

int
cache_wb_get(struct cache *c, const char *key, int with_progress, struct cache_entry *out)
{
	struct cache_wb *g = c->wb;
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

void
cache_wb_forget(struct cache *c, const char *key)
{
	struct wb_item *it, *prev;

	pthread_mutex_lock(&c->wb->lock);
	if ((it = wb_find(c->wb, key, &prev)) != NULL) {
		wb_unlink(c->wb, it, prev);
		wb_item_free(it);
	}
	pthread_mutex_unlock(&c->wb->lock);
}

void
cache_wb_stats(struct cache *c, struct cache_stats *s)
{
	pthread_mutex_lock(&c->wb->lock);
	s->wb_pending = c->wb->n;
	s->wb_written = c->wb->written;
	s->wb_dropped = c->wb->dropped;
	pthread_mutex_unlock(&c->wb->lock);
}

void
cache_wb_free(struct cache *c)
{
	struct cache_wb *g = c->wb;
	size_t lost = 0;
	int down = 0;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->stopping = 1;
	pthread_cond_broadcast(&g->wake);
	pthread_mutex_unlock(&g->lock);
	if (g->thread_started)
		pthread_join(g->thread, NULL);
	/* a last try for what is still queued (stopping at the first failure),
	 * then it is lost: logged */
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
	pthread_cond_destroy(&g->wake);
	pthread_mutex_destroy(&g->lock);
	free(g);
	c->wb = NULL;
}
