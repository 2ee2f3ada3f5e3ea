/*
 * srv_registry.h - compiled queries kept in memory, by reduction id
 * (srv_registry.c). Compiling a query (building the model's expressions,
 * binding the space, preparing the engine) costs milliseconds to seconds;
 * /check and the listing endpoints reuse the compiled query instead.
 *
 * Invariants: an entry is shared by reference count and evicted (least
 * recently used, beyond the registry's size) only when no request holds
 * it. Its `lock` is a read-write lock: ans_check takes it for reading (many
 * at once); anything that moves the engine's box, counts, or adds nodes to
 * the graph takes it for writing.
 */
#ifndef DN_SRV_REGISTRY_H
#define DN_SRV_REGISTRY_H

#include "answer.h"
#include "srv.h"

struct srv_query {
	char id[33];
	int refs;                       /* registry lock */
	int kept;                       /* in the registry (else freed on the last release) */
	pthread_rwlock_t lock;
	json_t *request;                /* the canonical query */
	char *request_text;             /* its canonical text (the cache's request column) */
	uint64_t fp;                    /* cursor fingerprint */
	struct sq_query q;
	struct fs_engine e;
	int counted;                    /* fs_count_all has run (exact or bounds) */
	int dist_tree;                  /* e's tree is the one its distributed count's jobs refer to
	                                 * (srv_dist.c): done jobs are grafted into it */
	double solve_seconds;           /* spent counting so far */
	atomic_int computing;           /* a worker is counting it now */
	json_t *result;                 /* the reduction body once exact, or NULL */
	uint64_t used;                  /* LRU stamp */
	size_t bytes;                   /* srv_query_bytes when last measured (registry lock) */
};

struct srv_registry *srv_registry_new(const struct cm_device_catalog *catalog, int capacity);
void srv_registry_free(struct srv_registry *reg);
/* Memory limits (0: none): a query whose compiled form needs more than
 * max_query_bytes is refused (DN_ETOOBIG: 413); beyond max_bytes in all,
 * the least recently used unreferenced entries are evicted (re-measured
 * when their last reference goes, since counting grows the search tree),
 * and a query that still does not fit is served without being kept. */
void srv_registry_set_bytes(struct srv_registry *reg, size_t max_query_bytes, size_t max_bytes);
/* An estimate of the memory a compiled query holds: its request as JSON
 * and text, the expression graph with the engine's per-node arrays, the
 * space's value tables, the search tree and its undo log. */
size_t srv_query_bytes(const struct srv_query *sq);

/* The canonical form of a query body (a copy without "timeout" and
 * "config") and its id: 32 hex digits hashing the canonical text, the
 * cost model's version and the device catalog's digest
 * (srv_query_id_salt). Returns the canonical object (new reference). */
json_t *srv_query_canonical(const json_t *body, char id[33], char **text);
/* 32 hex digits hashing `text` and then `salt` (two FNV-1a variants, 128
 * bits): query ids (salt: the cost model's version and the catalog's
 * digest, srv_query_id_salt) and the model ids of
 * earlier versions (salt: "dnnsat-model", api_models.c; models are now
 * named by SHA-256, srv_digest.h). Not cryptographic: whoever reads an
 * entry by id compares the stored text with what the id should name. */
void srv_content_hash(const char *text, const char *salt, char id[33]);
/* 1 when `id` is the id of the canonical request text `text` (a stored
 * entry read by id answers that request and no other), else 0. */
int srv_query_id_matches(const char *text, const char *id);
/* Makes query ids hash `catalog_digest` too (the SHA-256 of the device
 * catalog file the service loaded): queries name catalog devices, so an
 * answer changes with the catalog's contents (a context figure, a site's
 * own entries), and a stored answer must not outlive them (a PostgreSQL
 * cache shared across releases or replicas with other catalogs). Called
 * once at startup, before any thread hashes; until then ids hash the cost
 * model's version alone. */
void srv_query_id_salt(const char *catalog_digest);

/* The compiled query of `id`: from memory, else compiled from `request`
 * (the canonical query; NULL: only from memory). NULL with err: a query
 * that does not compile (err names the field), or, without a request, an
 * id not in memory (err code DN_ENOENT, empty path). The caller releases it. */
struct srv_query *srv_registry_get(struct srv_registry *reg, const char *id, const json_t *request,
    struct dn_error *err);
void srv_registry_release(struct srv_registry *reg, struct srv_query *sq);

/*
 * Takes sq->lock for request r, for writing (write != 0) or reading, and
 * never lets the wait pin a thread: on an HTTP thread or a database reader
 * (r->in_worker 0) it only tries, and when the lock is busy (a worker is
 * counting sq) it sets r->status to 0 and returns 1: the caller gives up
 * sq and returns, and the request runs again on a solver worker. On a
 * worker it waits until r's deadline (srv_request_deadline) and no longer:
 * -1 then, with a 503 "busy" reply (Retry-After: 1) set. 0: held; the
 * caller unlocks it.
 */
int srv_query_lock(struct srv_request *r, struct srv_query *sq, int write);

/* A compiled query of one's own, outside the registry (a distributed
 * count's claimer counts its jobs on it): NULL with err as
 * srv_registry_get. srv_query_free frees it. */
struct srv_query *srv_query_compile(const struct cm_device_catalog *catalog, const char *id, const json_t *request,
    struct dn_error *err);
void srv_query_free(struct srv_query *sq);

/*
 * The query of `id` if it is in memory, pinned to the calling thread: the
 * thread keeps its reference until it asks for another id (or ends), so
 * that a trial generator's stream of checks of one reduction takes no lock
 * and writes no line that other threads read. The caller does not release
 * it; it stays valid until the thread's next srv_registry_pinned call. A
 * pinned query is never evicted (it is referenced): at most one per
 * thread. NULL when it is not in memory.
 */
struct srv_query *srv_registry_pinned(struct srv_registry *reg, const char *id);

/* ---- shared by the reduction endpoints (api_reduction.c) ---- */

/* The seconds left of the request's deadline (?timeout= or the body's
 * "timeout", capped by --max-deadline) counted from its first byte, so
 * that time queued for a worker counts; at least 0.001. -1 with a 400/422
 * reply when malformed. */
double api_request_timeout(struct srv_request *r);

/* Brings sq's count forward for up to `seconds` (sq->lock held for
 * writing), in slices that honour shutdown and --max-compute. 0 or -1. */
int api_reduction_count(struct srv *s, struct srv_query *sq, double seconds, struct dn_error *err);

/* A distributed count whose jobs are all done: reduction `id` (canonical
 * request `request_text`) is brought to its final result and stored, as
 * a request that finished it would (idempotent: nothing when it is final
 * already or jobs are left). On the claimer that committed the last job. */
void api_reduction_settle(struct srv *s, const char *id, const char *request_text);

/* A distributed count finished elsewhere (its jobs are gone): takes the
 * final result stored in the cache into sq (sq->result, and the stored
 * tree) (lock held for writing). 1 taken, 0 none stored (a miss, not
 * final, another query's), -1 the cache is down. */
int api_reduction_adopt(struct srv *s, struct srv_query *sq);

/* ---- the distributed count (srv_dist.c), with --distribute ---- */

/* Starts s->cfg.workers claimers: each borrows an idle solver worker
 * (srv_pool_lend), claims a job, counts it on a compiled query of its own,
 * renewing the lease, and commits it. NULL when out of memory. */
struct srv_dist *srv_dist_new(struct srv *s);
/* Stops the claimers (a job being counted is given back) and frees. */
void srv_dist_free(struct srv_dist *d);
/* After a slice left sq's count unfinished (lock held for writing): cuts
 * it into jobs and publishes them with the tree. 1 when sq's count is now
 * distributed (published here, or by another replica first), 0 when it is
 * not (exact, or the database refused: count on here). */
int srv_dist_publish(struct srv *s, struct srv_query *sq);
/* Follows sq's distributed count (lock held for writing) until it is exact
 * or `end` (srv_now seconds) passes: loads the published tree once, grafts
 * every done job's count into it, so that lower/upper are the tree's
 * bounds with the done jobs' counts. 1 when sq's count is distributed (an
 * exact count marks the set finished), 0 when it is not, -1 when the
 * database cannot say (count on here). */
int srv_dist_follow(struct srv *s, struct srv_query *sq, double end);

#endif
