/*
 * cache.c - the backend-independent half of cache.h: every public call
 * dispatches through c->ops to the backend that created `c` (cache_mem.c or
 * cache_pg.c), and cache_entry_clear frees what cache_get handed out.
 *
 * Invariants: this file holds no state of its own; a NULL cache behaves as a
 * backend that is down (get CACHE_DOWN, put/delete -1, state "down") so a
 * caller that failed to create one degrades instead of crashing.
 */
#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
get(struct cache *c, const char *key, int with_progress, struct cache_entry *out)
{
	if (out != NULL)
		memset(out, 0, sizeof *out);
	if (c == NULL || key == NULL || out == NULL)
		return CACHE_DOWN;
	return c->ops->get(c, key, with_progress, out);
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
	if (c == NULL || key == NULL || e == NULL)
		return -1;
	return c->ops->put(c, key, e);
}

int
cache_delete(struct cache *c, const char *key)
{
	if (c == NULL || key == NULL)
		return -1;
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
	if (c != NULL)
		c->ops->stats(c, s);
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
	if (c != NULL)
		c->ops->destroy(c);
}
