/*
 * srv_registry.c - compiled queries by id (see srv_registry.h), and the
 * canonical form and id of a query. A small array with LRU stamps: the
 * registry holds tens of entries, so a linear scan under one mutex costs
 * less than the hashing of the request that precedes it.
 *
 * Compilation runs outside the registry lock; when two requests compile
 * the same id at once, the first to insert wins and the other's copy is
 * freed. An HTTP thread may pin one query (srv_registry_pinned): it holds
 * a reference in thread-local storage, so the per-trial check of that
 * query takes no lock; the reference goes when the thread pins another id
 * or ends.
 */
#include "srv_registry.h"

#include "dn_deadline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct srv_registry {
	pthread_mutex_t lock;
	const struct cm_device_catalog *catalog;
	struct srv_query **items;
	int n, cap;
	uint64_t clock;
	size_t max_query_bytes, max_bytes;      /* 0: no limit */
	size_t bytes;                           /* sum of the kept entries' bytes */
};

struct srv_registry *
srv_registry_new(const struct cm_device_catalog *catalog, int capacity)
{
	struct srv_registry *reg = calloc(1, sizeof *reg);

	if (reg == NULL)
		return NULL;
	reg->items = calloc((size_t)capacity, sizeof *reg->items);
	if (reg->items == NULL) {
		free(reg);
		return NULL;
	}
	pthread_mutex_init(&reg->lock, NULL);
	reg->catalog = catalog;
	reg->cap = capacity;
	return reg;
}

void
srv_registry_set_bytes(struct srv_registry *reg, size_t max_query_bytes, size_t max_bytes)
{
	reg->max_query_bytes = max_query_bytes;
	reg->max_bytes = max_bytes;
}

size_t
srv_query_bytes(const struct srv_query *sq)
{
	const struct expr_graph *g = sq->e.g;
	size_t b = sizeof *sq, per_node;

	/* the request as JSON values (a value's json_t and slot cost about
	 * 16 bytes per byte of its compact text) and as text */
	b += (sq->request_text != NULL ? strlen(sq->request_text) : 0) * 17;
	if (g != NULL) {
		/* the graph (node, hash slot) and the engine's per-node arrays
		 * (interval, stamp, cone, table pointer and var, tape) */
		per_node = sizeof(struct expr_node) + 2 * sizeof(int32_t) + sizeof(struct expr_ival) + sizeof(uint32_t) +
		    1 + sizeof(void *) + sizeof(int32_t) + 2 * sizeof(union expr_val) + 16;
		b += (size_t)g->n * per_node;
	}
	for (int k = 0; k < sq->q.space.ndims; k++)
		b += (size_t)sq->q.space.dims[k].nvalues * sizeof(union expr_val);
	b += (size_t)sq->e.capnodes * sizeof(struct fs_node) + (size_t)sq->e.capundo * 32;
	return b;
}

void
srv_query_free(struct srv_query *sq)
{
	if (sq == NULL)
		return;
	fs_free(&sq->e);
	sq_free(&sq->q);
	json_decref(sq->request);
	json_decref(sq->result);
	free(sq->request_text);
	pthread_rwlock_destroy(&sq->lock);
	free(sq);
}

/* ---- per-thread pins (srv_registry_pinned) ---- */

struct pin {
	struct srv_registry *reg;
	struct srv_query *sq;
};

static pthread_key_t pin_key;
static pthread_once_t pin_once = PTHREAD_ONCE_INIT;

/* At thread exit: the HTTP threads end before their server frees its
 * registry (srv_http_stop, then srv_registry_free). */
static void
pin_drop(void *p)
{
	struct pin *pn = p;

	if (pn->sq != NULL)
		srv_registry_release(pn->reg, pn->sq);
	free(pn);
}

static void
pin_key_init(void)
{
	pthread_key_create(&pin_key, pin_drop);
}

struct srv_query *
srv_registry_pinned(struct srv_registry *reg, const char *id)
{
	struct pin *pn;
	struct srv_query *sq;
	struct dn_error err;

	pthread_once(&pin_once, pin_key_init);
	pn = pthread_getspecific(pin_key);
	if (pn == NULL) {
		if ((pn = calloc(1, sizeof *pn)) == NULL)
			return NULL;
		if (pthread_setspecific(pin_key, pn) != 0) {
			free(pn);
			return NULL;
		}
	}
	if (pn->sq != NULL && pn->reg == reg && strcmp(pn->sq->id, id) == 0)
		return pn->sq;
	if (pn->sq != NULL) {
		srv_registry_release(pn->reg, pn->sq);
		pn->sq = NULL;
	}
	memset(&err, 0, sizeof err);
	sq = srv_registry_get(reg, id, NULL, &err);
	if (sq != NULL) {
		pn->reg = reg;
		pn->sq = sq;
	}
	return sq;
}

void
srv_registry_free(struct srv_registry *reg)
{
	struct pin *pn;

	if (reg == NULL)
		return;
	/* a thread that outlives the registry (the tests' main thread) lets go
	 * of its pin here; every other one has ended */
	pthread_once(&pin_once, pin_key_init);
	pn = pthread_getspecific(pin_key);
	if (pn != NULL && pn->reg == reg && pn->sq != NULL) {
		srv_registry_release(reg, pn->sq);
		pn->sq = NULL;
	}
	for (int i = 0; i < reg->n; i++)
		srv_query_free(reg->items[i]);
	free(reg->items);
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

void
srv_content_hash(const char *text, const char *salt, char id[33])
{
	uint64_t h1 = 1469598103934665603ULL, h2 = 0x84222325cbf29ce4ULL;
	const char *parts[2] = { text, salt };

	for (int k = 0; k < 2; k++)
		for (const unsigned char *p = (const unsigned char *)parts[k]; *p; p++) {
			h1 = (h1 ^ *p) * 1099511628211ULL;
			h2 = (h2 ^ *p) * 0x100000001b3ULL;
			h2 ^= h2 >> 29;
		}
	snprintf(id, 33, "%016llx%016llx", (unsigned long long)h1, (unsigned long long)h2);
}

/* What ids hash besides the text: the cost model's version and, once
 * srv_query_id_salt has run, the catalog's digest. Written once at startup. */
static char id_salt[128] = CM_VERSION;

void
srv_query_id_salt(const char *catalog_digest)
{
	snprintf(id_salt, sizeof id_salt, "%s catalog %s", CM_VERSION, catalog_digest);
}

/* A query's id: its canonical text and the salt above. */
static void
hash_text(const char *text, char id[33])
{
	srv_content_hash(text, id_salt, id);
}

int
srv_query_id_matches(const char *text, const char *id)
{
	char own[33];

	hash_text(text, own);
	return strcmp(own, id) == 0;
}

json_t *
srv_query_canonical(const json_t *body, char id[33], char **text)
{
	json_t *c = json_deep_copy(body);
	char *t;

	if (c == NULL)
		return NULL;
	json_object_del(c, "timeout");
	json_object_del(c, "config");
	t = json_dumps(c, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (t == NULL) {
		json_decref(c);
		return NULL;
	}
	hash_text(t, id);
	if (text != NULL)
		*text = t;
	else
		free(t);
	return c;
}

struct srv_query *
srv_query_compile(const struct cm_device_catalog *catalog, const char *id, const json_t *request,
    struct dn_error *err)
{
	struct srv_query *sq = calloc(1, sizeof *sq);

	if (sq == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	pthread_rwlock_init(&sq->lock, NULL);
	snprintf(sq->id, sizeof sq->id, "%s", id);
	/* compiled from the canonical text, keys sorted, whichever order the
	 * client wrote them in: the engine's variable order (and so cursors
	 * and saved progress) is then the same in every process */
	sq->request_text = json_dumps(request, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
	sq->request = sq->request_text ? json_loads(sq->request_text, 0, NULL) : NULL;
	sq->fp = ans_fingerprint(request);
	if (sq->request == NULL || sq->request_text == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		srv_query_free(sq);
		return NULL;
	}
	/* the request's deadline (dn_deadline.h, set by the worker) stops the
	 * model build inside; between the phases it is checked here */
	if (sq_parse(sq->request, catalog, &sq->q, err) != 0 ||
	    dn_deadline_check(err, "", "compiling the query") != 0 || fs_init(&sq->e, &sq->q, err) != 0 ||
	    dn_deadline_check(err, "", "compiling the query") != 0) {
		srv_query_free(sq);
		return NULL;
	}
	return sq;
}

/* Removes the least recently used unreferenced entry; 0, or -1 when all are held. */
static int
evict_one(struct srv_registry *reg)
{
	int victim = -1;

	for (int i = 0; i < reg->n; i++)
		if (reg->items[i]->refs == 0 && (victim < 0 || reg->items[i]->used < reg->items[victim]->used))
			victim = i;
	if (victim < 0)
		return -1;
	reg->bytes -= reg->items[victim]->bytes;
	srv_query_free(reg->items[victim]);
	reg->items[victim] = reg->items[--reg->n];
	return 0;
}

static struct srv_query *
find_locked(struct srv_registry *reg, const char *id)
{
	for (int i = 0; i < reg->n; i++)
		if (strcmp(reg->items[i]->id, id) == 0) {
			reg->items[i]->refs++;
			reg->items[i]->used = ++reg->clock;
			return reg->items[i];
		}
	return NULL;
}

struct srv_query *
srv_registry_get(struct srv_registry *reg, const char *id, const json_t *request, struct dn_error *err)
{
	struct srv_query *sq, *other;

	pthread_mutex_lock(&reg->lock);
	sq = find_locked(reg, id);
	pthread_mutex_unlock(&reg->lock);
	if (sq != NULL)
		return sq;
	if (request == NULL) {
		dn_error_set(err, DN_ENOENT, "", "no reduction %s in memory", id);
		return NULL;
	}
	sq = srv_query_compile(reg->catalog, id, request, err);
	if (sq == NULL)
		return NULL;
	sq->bytes = srv_query_bytes(sq);
	if (reg->max_query_bytes > 0 && sq->bytes > reg->max_query_bytes) {
		dn_error_set(err, DN_ETOOBIG, "", "the compiled query needs about %zu bytes of memory, more than "
		    "the limit of %zu (--max-query-bytes)", sq->bytes, reg->max_query_bytes);
		srv_query_free(sq);
		return NULL;
	}
	pthread_mutex_lock(&reg->lock);
	other = find_locked(reg, id);
	if (other == NULL) {
		if (reg->n == reg->cap)
			evict_one(reg);
		while (reg->max_bytes > 0 && reg->bytes + sq->bytes > reg->max_bytes && evict_one(reg) == 0)
			;
		sq->refs = 1;
		sq->used = ++reg->clock;
		/* every entry held, or no room left: serve this request, then free it */
		sq->kept = reg->n < reg->cap && (reg->max_bytes == 0 || reg->bytes + sq->bytes <= reg->max_bytes);
		if (sq->kept) {
			reg->items[reg->n++] = sq;
			reg->bytes += sq->bytes;
		}
	}
	pthread_mutex_unlock(&reg->lock);
	if (other != NULL) {
		srv_query_free(sq);
		return other;
	}
	return sq;
}

void
srv_registry_release(struct srv_registry *reg, struct srv_query *sq)
{
	int drop;

	if (sq == NULL)
		return;
	/* a count grows the engine's search tree: account for it (the caller
	 * no longer touches sq, so reading its sizes here is safe when the
	 * last reference goes; others may hold it: then it is a snapshot) */
	pthread_mutex_lock(&reg->lock);
	if (sq->kept && sq->refs == 1) {
		size_t now = srv_query_bytes(sq);
		reg->bytes = reg->bytes - sq->bytes + now;
		sq->bytes = now;
	}
	drop = --sq->refs == 0 && !sq->kept;
	while (!drop && reg->max_bytes > 0 && reg->bytes > reg->max_bytes && evict_one(reg) == 0)
		;
	pthread_mutex_unlock(&reg->lock);
	if (drop)
		srv_query_free(sq);
}

int
srv_query_lock(struct srv_request *r, struct srv_query *sq, int write)
{
	struct timespec until;
	double deadline, whole;
	int rc;

	if (!r->in_worker) {
		rc = write ? pthread_rwlock_trywrlock(&sq->lock) : pthread_rwlock_tryrdlock(&sq->lock);
		if (rc == 0)
			return 0;
		r->status = 0;
		return 1;
	}
	/* srv_now is CLOCK_MONOTONIC (dn_deadline_now): the wait is on it too */
	deadline = srv_request_deadline(r);
	whole = (double)(time_t)deadline;
	until.tv_sec = (time_t)deadline;
	until.tv_nsec = (long)((deadline - whole) * 1e9);
	if (until.tv_nsec < 0 || until.tv_nsec >= 1000000000L)
		until.tv_nsec = 0;
	do
		rc = write ? pthread_rwlock_clockwrlock(&sq->lock, CLOCK_MONOTONIC, &until)
		    : pthread_rwlock_clockrdlock(&sq->lock, CLOCK_MONOTONIC, &until);
	while (rc == EINTR);
	if (rc == 0)
		return 0;
	r->retry_after = 1;
	srv_reply_problem(r, 503, "busy", "Reduction busy", NULL, "reduction %s is being counted by another request "
	    "past this request's deadline (%.3g s): retry (the count goes on)", sq->id, deadline - r->t_start);
	return -1;
}
