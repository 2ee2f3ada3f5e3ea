/*
 * cache_mem.c - the in-memory cache backend: a chained hash table keyed by
 * the key string, threaded on one doubly linked list in recency order (head:
 * most recently used), evicting from the tail when the stored bytes pass
 * max_bytes.
 *
 * Invariants, all under `lock` (one mutex: a hit reorders the list, so even
 * reads write):
 *   - every node is in exactly one bucket chain and on the recency list;
 *   - `bytes` is the sum over nodes of strlen(key) + strlen(request) +
 *     strlen(result) + progress_len, and never exceeds max_bytes after a
 *     call returns; `count` is the number of nodes;
 *   - a final entry is never replaced by a non-final one;
 *   - the statistics are exact: hits + misses is the number of lookups,
 *     puts the number of entries written (an ignored non-final put and an
 *     entry larger than the whole cache are not counted), errors the
 *     allocation failures.
 * The cache owns every node and every string in it; cache_get hands out
 * copies, so a caller never holds a pointer into the table.
 */
#include "cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct mem_node {
	char *key;
	struct cache_entry e;           /* owned copies */
	size_t bytes;                   /* this node's share of cache_mem.bytes */
	uint64_t hash;
	struct mem_node *chain;         /* next in the bucket */
	struct mem_node *newer, *older; /* recency list */
};

struct cache_mem {
	struct cache base;
	pthread_mutex_t lock;
	struct mem_node **buckets;
	size_t nbuckets;                /* a power of two */
	size_t count, bytes, max_bytes;
	struct mem_node *newest, *oldest;
	uint64_t hits, misses, puts, errors;
};

#define CACHE_MEM_MIN_BUCKETS 64

/* FNV-1a, 64 bits: keys are hex hashes already, any spread will do. */
static uint64_t
cache_mem_hash_key(const char *key)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return h;
}

static size_t
cache_mem_entry_bytes(const char *key, const struct cache_entry *e)
{
	return strlen(key) + strlen(e->request) + strlen(e->result) + e->progress_len;
}

/* Deep copy of `src` into `dst` (NULL strings become ""); 0, or -1 with
 * nothing allocated when memory runs out. */
static int
cache_mem_copy_entry(struct cache_entry *dst, const struct cache_entry *src, int with_progress)
{
	memset(dst, 0, sizeof *dst);
	dst->request = strdup(src->request != NULL ? src->request : "");
	dst->result = strdup(src->result != NULL ? src->result : "");
	dst->final = src->final != 0;
	memcpy(dst->checksum, src->checksum, sizeof dst->checksum);
	if (with_progress && src->progress != NULL && src->progress_len > 0) {
		dst->progress = malloc(src->progress_len);
		if (dst->progress != NULL) {
			memcpy(dst->progress, src->progress, src->progress_len);
			dst->progress_len = src->progress_len;
		}
	}
	if (dst->request == NULL || dst->result == NULL ||
	    (with_progress && src->progress != NULL && src->progress_len > 0 && dst->progress == NULL)) {
		cache_entry_clear(dst);
		return -1;
	}
	return 0;
}

static struct mem_node **
cache_mem_find_slot(struct cache_mem *m, const char *key, uint64_t hash)
{
	struct mem_node **slot = &m->buckets[hash & (m->nbuckets - 1)];

	while (*slot != NULL && ((*slot)->hash != hash || strcmp((*slot)->key, key) != 0))
		slot = &(*slot)->chain;
	return slot;
}

static void
cache_mem_list_unlink(struct cache_mem *m, struct mem_node *n)
{
	if (n->newer != NULL)
		n->newer->older = n->older;
	else
		m->newest = n->older;
	if (n->older != NULL)
		n->older->newer = n->newer;
	else
		m->oldest = n->newer;
	n->newer = n->older = NULL;
}

static void
cache_mem_list_push(struct cache_mem *m, struct mem_node *n)
{
	n->newer = NULL;
	n->older = m->newest;
	if (m->newest != NULL)
		m->newest->newer = n;
	m->newest = n;
	if (m->oldest == NULL)
		m->oldest = n;
}

static void
cache_mem_node_free(struct mem_node *n)
{
	free(n->key);
	cache_entry_clear(&n->e);
	free(n);
}

/* Unlinks the node at *slot from both structures and frees it. */
static void
cache_mem_remove_at(struct cache_mem *m, struct mem_node **slot)
{
	struct mem_node *n = *slot;

	*slot = n->chain;
	cache_mem_list_unlink(m, n);
	m->count--;
	m->bytes -= n->bytes;
	cache_mem_node_free(n);
}

/* Doubles the bucket array once the load passes 1; on allocation failure
 * keeps the old array (longer chains, still correct). */
static void
cache_mem_grow(struct cache_mem *m)
{
	size_t n = m->nbuckets * 2;
	struct mem_node **b;

	if (m->count <= m->nbuckets || n < m->nbuckets)
		return;
	b = calloc(n, sizeof *b);
	if (b == NULL)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct mem_node *node = m->buckets[i], *next;

		for (; node != NULL; node = next) {
			next = node->chain;
			node->chain = b[node->hash & (n - 1)];
			b[node->hash & (n - 1)] = node;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
}

/* Evicts least recently used nodes until the byte bound holds again. */
static void
cache_mem_evict(struct cache_mem *m)
{
	while (m->bytes > m->max_bytes && m->oldest != NULL) {
		struct mem_node *victim = m->oldest;

		cache_mem_remove_at(m, cache_mem_find_slot(m, victim->key, victim->hash));
	}
}

static int
cache_mem_get(struct cache *c, const char *key, int with_progress, struct cache_entry *out)
{
	struct cache_mem *m = (struct cache_mem *)c;
	uint64_t hash = cache_mem_hash_key(key);
	struct mem_node *n;
	int rc;

	pthread_mutex_lock(&m->lock);
	n = *cache_mem_find_slot(m, key, hash);
	if (n == NULL) {
		m->misses++;
		rc = CACHE_MISS;
	} else if (cache_mem_copy_entry(out, &n->e, with_progress) != 0) {
		/* out of memory: as a backend that is down, the caller
		 * computes the answer itself */
		m->errors++;
		rc = CACHE_DOWN;
	} else {
		cache_mem_list_unlink(m, n);
		cache_mem_list_push(m, n);
		m->hits++;
		rc = CACHE_HIT;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

/* The copies are made before taking the lock, so the lock only guards
 * pointer updates; a put that loses to a final entry frees them again. */
static int
cache_mem_put(struct cache *c, const char *key, const struct cache_entry *e)
{
	struct cache_mem *m = (struct cache_mem *)c;
	uint64_t hash = cache_mem_hash_key(key);
	struct mem_node *fresh, **slot;

	fresh = calloc(1, sizeof *fresh);
	if (fresh == NULL || (fresh->key = strdup(key)) == NULL ||
	    cache_mem_copy_entry(&fresh->e, e, 1) != 0) {
		if (fresh != NULL)
			free(fresh->key);
		free(fresh);
		pthread_mutex_lock(&m->lock);
		m->errors++;
		pthread_mutex_unlock(&m->lock);
		return -1;
	}
	fresh->hash = hash;
	fresh->bytes = cache_mem_entry_bytes(key, &fresh->e);

	pthread_mutex_lock(&m->lock);
	slot = cache_mem_find_slot(m, key, hash);
	if (*slot != NULL && (*slot)->e.final && !fresh->e.final) {
		pthread_mutex_unlock(&m->lock);
		cache_mem_node_free(fresh);
		return 0;
	}
	if (*slot != NULL)
		cache_mem_remove_at(m, slot);
	if (fresh->bytes > m->max_bytes) {
		/* could never fit: the old entry for the key is gone (it was not
		 * final, or this one is final too), nothing takes its place */
		pthread_mutex_unlock(&m->lock);
		cache_mem_node_free(fresh);
		return 0;
	}
	slot = &m->buckets[hash & (m->nbuckets - 1)];
	fresh->chain = *slot;
	*slot = fresh;
	cache_mem_list_push(m, fresh);
	m->count++;
	m->bytes += fresh->bytes;
	m->puts++;
	cache_mem_evict(m);
	cache_mem_grow(m);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static int
cache_mem_delete(struct cache *c, const char *key)
{
	struct cache_mem *m = (struct cache_mem *)c;
	uint64_t hash = cache_mem_hash_key(key);
	struct mem_node **slot;

	pthread_mutex_lock(&m->lock);
	slot = cache_mem_find_slot(m, key, hash);
	if (*slot != NULL)
		cache_mem_remove_at(m, slot);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

static const char *
cache_mem_state(struct cache *c, int probe, char *detail, size_t len)
{
	(void)c;
	(void)probe;
	(void)detail;
	(void)len;
	return "memory";
}

static void
cache_mem_stats(struct cache *c, struct cache_stats *s)
{
	struct cache_mem *m = (struct cache_mem *)c;

	pthread_mutex_lock(&m->lock);
	s->hits = m->hits;
	s->misses = m->misses;
	s->puts = m->puts;
	s->errors = m->errors;
	s->entries = m->count;
	s->bytes = m->bytes;
	pthread_mutex_unlock(&m->lock);
}

/* Frees every node; no other thread may use the cache any more. */
static void
cache_mem_destroy(struct cache *c)
{
	struct cache_mem *m = (struct cache_mem *)c;
	struct mem_node *n, *next;

	for (n = m->newest; n != NULL; n = next) {
		next = n->older;
		cache_mem_node_free(n);
	}
	free(m->buckets);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static const struct cache_ops cache_mem_ops = {
	.get = cache_mem_get,
	.put = cache_mem_put,
	.del = cache_mem_delete,
	.state = cache_mem_state,
	.stats = cache_mem_stats,
	.destroy = cache_mem_destroy,
};

struct cache *
cache_mem_new(size_t max_bytes)
{
	struct cache_mem *m = calloc(1, sizeof *m);

	if (m == NULL)
		return NULL;
	m->base.ops = &cache_mem_ops;
	m->max_bytes = max_bytes;
	m->nbuckets = CACHE_MEM_MIN_BUCKETS;
	m->buckets = calloc(m->nbuckets, sizeof *m->buckets);
	if (m->buckets == NULL || cache_base_init(&m->base) != 0 || pthread_mutex_init(&m->lock, NULL) != 0) {
		free(m->base.wb);
		free(m->buckets);
		free(m);
		return NULL;
	}
	return &m->base;
}
