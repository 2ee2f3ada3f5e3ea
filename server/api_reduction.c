/*
 * api_reduction.c - reductions: POST /v1/reductions solves a query (the
 * count of feasible configurations, the reduction ratio, the reduced NNI
 * space) and GET /v1/reductions/{id} reads it again. Also the lookup every
 * /v1/reductions/{id}/... endpoint starts from (api_reduction_query).
 *
 * The path of a request: the result cache first (by id; a stored final
 * answer is returned as is, on the HTTP thread), then a solver worker
 * (handed what the HTTP thread found: struct create_handoff): the
 * compiled query from the registry, the saved progress of an unfinished
 * count from the cache (so a restart or another replica continues rather
 * than starting over), counting in slices of at most a second up to the
 * request's deadline (so SIGTERM is honoured quickly), and the result back
 * into the cache: final when exact, with the progress blob otherwise.
 *
 * Statuses: 201 solved now, 200 from the cache (or memory), 202 deadline
 * passed first (bounds; poll GET to continue). A stored entry whose
 * canonical request differs from this request's (a hash collision) is
 * never used.
 */
#include "fset_project.h"
#include "srv_registry.h"
#include "answer_z3.h"
#include "cache_jobs.h"
#include "dn_number.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRESS_MAX ((size_t)64 << 20)

/* The seconds left of the request's deadline: ?timeout= or the body's
 * "timeout", capped by --max-deadline, counted from the request's first
 * byte; -1 with a 400/422 reply when malformed. */
double
api_request_timeout(struct srv_request *r)
{
	double t = srv_request_timeout_value(r);

	if (t < 0) {
		if (srv_query_arg(r, "timeout") != NULL)
			srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", "timeout",
			    "timeout must be a number of seconds above 0");
		else
			srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$.timeout",
			    "$.timeout must be a number of seconds above 0");
		return -1;
	}
	/* counted from the request's first byte: time waiting for a worker
	 * (and compiling) is part of it; at least a token slice remains */
	t -= srv_now() - r->t_start;
	return t > 0.001 ? t : 0.001;
}

/* The reduction body of sq in its current state (its lock held). */
static json_t *
reduction_json(struct srv *s, struct srv_query *sq)
{
	int exact = sq->e.lower == sq->e.upper;
	struct dn_error eerr;
	json_t *j;

	/* unfinished: the estimate next to the bounds (fixed draws, 0.2 s at most) */
	memset(&eerr, 0, sizeof eerr);
	j = ans_count_estimated(&sq->e, ANS_ESTIMATE_DRAWS, 0.2, 1, &eerr);
	if (j == NULL)
		j = ans_count(&sq->e);

	json_object_set_new(j, "id", json_string(sq->id));
	json_object_set_new(j, "status", json_string(exact ? "exact" :
	    sq->solve_seconds >= s->cfg.max_compute ? "bounds" : "running"));
	json_object_set_new(j, "seconds", json_real(sq->solve_seconds));
	json_object_set_new(j, "model_version", json_string(CM_VERSION));
	json_object_set_new(j, "reduced_space", json_null());
	if (exact && sq->e.lower > 0) {
		struct fs_projection p;
		struct dn_error err;
		memset(&err, 0, sizeof err);
		if (fs_project(&sq->e, &p, &err) == 0) {
			json_t *rs = fs_reduced_space(&sq->e, &p, &err);
			if (rs != NULL)
				json_object_set_new(j, "reduced_space", rs);
			fs_projection_free(&p);
		}
	}
	return j;
}

/* Stores sq's state in the cache: final when exact; the progress blob
 * (the search tree) either way, so other replicas skip the count. */
static void
store(struct srv *s, struct srv_query *sq, const json_t *result, int final)
{
	struct cache_entry ce;
	char *text = json_dumps(result, JSON_COMPACT | JSON_REAL_PRECISION(15));
	struct dn_error err;

	memset(&ce, 0, sizeof ce);
	memset(&err, 0, sizeof err);
	if (text == NULL)
		return;
	ce.request = sq->request_text;
	ce.result = text;
	ce.final = final;
	if (fs_progress_save(&sq->e, &ce.progress, &ce.progress_len, &err) != 0 || ce.progress_len > PROGRESS_MAX) {
		free(ce.progress);
		ce.progress = NULL;
		ce.progress_len = 0;
	}
	cache_put(s->cache, sq->id, &ce);
	free(ce.progress);
	free(text);
	/* the result is stored: the distributed count's job rows have served */
	if (final && sq->dist_tree && s->dist != NULL)
		cache_jobs_finish(s->cache, sq->id);
}

/* Restores a saved count from a cache entry into a fresh sq (lock held). */
static void
restore(struct srv_query *sq, const struct cache_entry *ce)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	if (sq->counted || ce->progress == NULL)
		return;
	if (fs_progress_load(&sq->e, ce->progress, ce->progress_len, &err) != 0) {
		srv_log("reduction %s: saved progress ignored: %s", sq->id, err.message);
		return;
	}
	sq->counted = 1;
	{
		json_t *res = json_loads(ce->result, 0, NULL);
		json_t *sec = json_object_get(res, "seconds");
		if (json_is_number(sec))
			sq->solve_seconds = json_number_value(sec);
		if (ce->final && sq->e.lower == sq->e.upper && sq->result == NULL)
			sq->result = json_incref(res);
		json_decref(res);
	}
}

/* The result text of the marker that stands for a reduction whose stored
 * entry was damaged with its request (reduction_cache_get): never served. */
#define DAMAGED_MARK "{\"damaged\":\"the stored entry failed its checksum and its request did not hash to its id\"}"

/* 1 when `text` is the canonical request that reduction `id` names: it
 * parses, is canonical (canonicalizing it gives it back) and hashes to the
 * id, as every stored request read by id is checked (stored_request_ok). */
static int
request_names(const char *text, const char *id)
{
	json_t *j = json_loads(text, 0, NULL), *canon = NULL;
	char own[33], *again = NULL;
	int ok = 0;

	if (json_is_object(j) && (canon = srv_query_canonical(j, own, &again)) != NULL)
		ok = strcmp(own, id) == 0 && strcmp(again, text) == 0;
	json_decref(canon);
	json_decref(j);
	free(again);
	return ok;
}

/* The cache's entry for reduction `id` (with its progress blob or
 * without), and what to do when it is damaged (it failed its checksum: the
 * cache dropped it, never served it):
 *  - its request still names the id: stored again as an unfinished count
 *    without progress, and returned so (CACHE_HIT, not final), so that the
 *    caller, every replica and a restarted server compute the answer again
 *    from it: the id stays answerable;
 *  - else (the request damaged, or gone): a marker is stored under the id
 *    (request "", result DAMAGED_MARK, not final), so that every read of
 *    the id, on any replica and after a restart, says why it cannot answer
 *    (404 reduction-damaged) instead of "no such reduction", until the
 *    query is posted again (its answer replaces the marker).
 * A marker reads as CACHE_MISS with *damaged set; *damaged is 0 otherwise. */
static int
reduction_cache_get(struct srv *s, const char *id, int with_progress, struct cache_entry *ce, int *damaged)
{
	struct cache_entry put;
	char *request = NULL;
	int hit = cache_get_salvage(s->cache, id, with_progress, ce, &request);

	*damaged = 0;
	if (hit == CACHE_HIT && !ce->final && (ce->request == NULL || ce->request[0] == '\0')) {
		cache_entry_clear(ce);  /* the marker of an entry damaged earlier */
		*damaged = 1;
		return CACHE_MISS;
	}
	if (request == NULL || hit == CACHE_HIT) {
		free(request);          /* intact, or the write-back queue's copy */
		return hit;
	}
	memset(&put, 0, sizeof put);
	if (request_names(request, id)) {
		srv_log("reduction %s: its stored answer was damaged but its request is intact (it hashes to the "
		    "id): the answer is computed again", id);
		put.request = request;
		put.result = "{}";
		cache_put(s->cache, id, &put);
		cache_entry_clear(ce);
		ce->request = request;
		ce->result = strdup("{}");
		if (ce->result == NULL) {
			cache_entry_clear(ce);
			return CACHE_MISS;
		}
		return CACHE_HIT;
	}
	srv_log("reduction %s: its stored entry was damaged together with its request: it cannot be computed "
	    "again until its query is posted again (marked as damaged)", id);
	free(request);
	put.request = "";
	put.result = DAMAGED_MARK;
	cache_put(s->cache, id, &put);
	*damaged = 1;
	return CACHE_MISS;
}

int
api_reduction_adopt(struct srv *s, struct srv_query *sq)
{
	struct cache_entry ce;
	int damaged, hit = reduction_cache_get(s, sq->id, 1, &ce, &damaged);

	if (hit == CACHE_DOWN)
		return -1;
	if (hit != CACHE_HIT)
		return 0;
	if (!ce.final || !srv_query_id_matches(ce.request, sq->id)) {
		cache_entry_clear(&ce);
		return 0;
	}
	{
		int was = sq->counted;
		sq->counted = 0;        /* restore loads the stored tree over the followed one */
		restore(sq, &ce);
		if (!sq->counted)
			sq->counted = was;      /* none stored, or it did not load: the followed tree stays */
	}
	cache_entry_clear(&ce);
	return sq->result != NULL;
}

/* Counts sq for up to `seconds` in slices (lock held). 0, or -1 with err. */
int
api_reduction_count(struct srv *s, struct srv_query *sq, double seconds, struct dn_error *err)
{
	double t0 = srv_now(), end = t0 + seconds, saved = t0, start = t0;
	int rc = 0;

	if (sq->counted && sq->e.lower == sq->e.upper)
		return 0;
	/* a count cut into jobs (--distribute): the claimers count it, here
	 * their counts are gathered, whatever --max-compute this replica spent
	 * (following costs no solver time); -1 (the database cannot say):
	 * count here */
	if (s->dist != NULL && srv_dist_follow(s, sq, end) == 1)
		goto out;
	if (sq->solve_seconds >= s->cfg.max_compute)
		return 0;
	if (end > t0 + s->cfg.max_compute - sq->solve_seconds)
		end = t0 + s->cfg.max_compute - sq->solve_seconds;
	do {
		double slice = end - srv_now();
		if (slice > 1.0)
			slice = 1.0;
		if (slice < 0.001)
			slice = 0.001;
		{
			/* extra threads only from idle workers, given back after each slice */
			int lent = s->cfg.count_threads > 1 && s->pool != NULL ?
			    srv_pool_lend(s->pool, s->cfg.count_threads - 1) : 0;
			sq->e.threads = 1 + lent;
			/* a count that may be cut into jobs starts depth first only (few, large jobs) */
			rc = sq->counted ? fs_count_more(&sq->e, slice, err) : s->dist != NULL ?
			    fs_jobs_start(&sq->e, slice, err) : fs_count_all(&sq->e, slice, err);
			sq->e.threads = 1;
			if (lent > 0)
				srv_pool_unlend(s->pool, lent);
		}
		sq->counted = 1;
		if (rc == 0 && s->dist != NULL && sq->e.lower != sq->e.upper && srv_dist_publish(s, sq) == 1) {
			/* unfinished after a slice: cut into jobs for every replica */
			srv_dist_follow(s, sq, end);
			break;
		}
		if (rc == 0 && sq->e.lower != sq->e.upper && srv_now() - saved >= s->cfg.progress_interval) {
			/* a long count's progress reaches the cache as it goes, not
			 * only when the request ends: a kill -9 loses at most this */
			double at = srv_now();
			json_t *res;
			sq->solve_seconds += at - t0;
			t0 = at;
			res = reduction_json(s, sq);
			if (res != NULL)
				store(s, sq, res, 0);
			json_decref(res);
			saved = srv_now();
		}
	} while (rc == 0 && sq->e.lower != sq->e.upper && srv_now() < end && !atomic_load(&s->stopping));
out:
	sq->solve_seconds += srv_now() - t0;
	srv_metrics_solve(s->metrics, srv_now() - start, sq->e.lower != sq->e.upper);
	return rc;
}

/* The reduced space of res in the key order of the request's space (the
 * query was compiled with its keys sorted, srv_registry.c); a request
 * without a space object (a GET) leaves it sorted. What is stored is what
 * the request that finished the count saw. */
static void
in_request_order(struct srv_request *r, json_t *res)
{
	json_t *space = json_object_get(r->json, "space"), *rs = json_object_get(res, "reduced_space");

	if (json_is_object(space) && json_is_object(rs))
		json_object_set_new(res, "reduced_space", fs_space_in_order(rs, space));
}

/* What an exact reduction adds, into res: "conflict" when nothing fits
 * (the parts that conflict and how far each budget would have to move:
 * ans_conflict, answer.h); and when the query asks for "engine": "z3"
 * (answer_z3.h), "z3", the cross-check of the count (with a continuous
 * hyperparameter bound to the model, "z3"."range": its exact feasible
 * range over the reals), and Z3's unsat core beside the conflict
 * ("conflict"."z3"). Bounded by Z3's resource limit and `seconds` (what
 * is left of the request's deadline, at least a second; the conflict and
 * the Z3 answers each within it). A failure is reported in the answer
 * ("conflict_error", "z3_error"), never as a failed reply: the engine's
 * count stands without it. Lock held. */
static void
extras(struct srv_query *sq, json_t *res, double seconds)
{
	struct dn_error err;
	json_t *x;

	if (seconds < 1.0)
		seconds = 1.0;
	memset(&err, 0, sizeof err);
	if (sq->q.engine_z3) {
		x = ans_z3_count(&sq->q, &sq->e, ANS_Z3_MAX_MODELS, ANS_Z3_RLIMIT, seconds, &err);
		if (x != NULL && sq->e.ncvars > 0) {
			json_t *range;
			memset(&err, 0, sizeof err);
			range = ans_z3_range(&sq->q, &sq->e, ANS_Z3_RLIMIT, seconds, &err);
			json_object_set_new(x, range ? "range" : "range_error", range ? range : json_string(err.message));
		}
		json_object_set_new(res, x ? "z3" : "z3_error", x ? x : json_string(err.message));
	}
	if (sq->e.lower == 0) {
		memset(&err, 0, sizeof err);
		x = ans_conflict(&sq->q, seconds, &err);
		if (x != NULL && sq->q.engine_z3 && ans_z3_conflict_check(&sq->q, &sq->e, x, ANS_Z3_RLIMIT, seconds,
		    &err) != 0)
			json_object_set_new(res, "z3_error", json_string(err.message));
		json_object_set_new(res, x ? "conflict" : "conflict_error", x ? x : json_string(err.message));
	}
}

/* Runs on a worker: brings sq's count forward for the request's deadline
 * and replies with the reduction. `created` picks 201 over 200. */
static void
solve_and_reply(struct srv_request *r, struct srv_query *sq, const struct cache_entry *ce, double timeout,
    int created)
{
	struct srv *s = r->srv;
	struct dn_error err;
	json_t *res;
	int exact;
	double started = srv_now();

	memset(&err, 0, sizeof err);
	if (srv_query_lock(r, sq, 1) != 0)
		return;                 /* another request counts it past this one's deadline: 503 */
	if (ce != NULL)
		restore(sq, ce);
	if (sq->result != NULL) {
		/* in memory but not in the cache (evicted, or a corrupt row the
		 * cache deleted): stored again, so that the id stays answerable
		 * by every replica and after a restart */
		if (ce == NULL || !ce->final)
			store(s, sq, sq->result, 1);
		r->cache_hit = 1;
		res = json_deep_copy(sq->result);
		pthread_rwlock_unlock(&sq->lock);
		json_object_set_new(res, "cached", json_true());
		r->cache_control = SRV_CACHE_IMMUTABLE;
		srv_reply_json(r, 200, res);
		return;
	}
	r->cache_hit = 0;
	if (api_reduction_count(s, sq, timeout, &err) != 0) {
		pthread_rwlock_unlock(&sq->lock);
		srv_reply_error(r, &err);
		return;
	}
	if (sq->result != NULL) {
		/* a distributed count another replica finished: its stored result */
		res = json_deep_copy(sq->result);
		pthread_rwlock_unlock(&sq->lock);
		in_request_order(r, res);
		json_object_set_new(res, "cached", json_false());
		snprintf(r->location, sizeof r->location, "/v1/reductions/%s", sq->id);
		r->cache_control = SRV_CACHE_IMMUTABLE;
		srv_reply_json(r, created ? 201 : 200, res);
		return;
	}
	exact = sq->e.lower == sq->e.upper;
	res = reduction_json(s, sq);
	in_request_order(r, res);
	if (exact)
		extras(sq, res, timeout - (srv_now() - started));
	if (exact)
		sq->result = json_incref(res);
	store(s, sq, res, exact);
	pthread_rwlock_unlock(&sq->lock);
	json_object_set_new(res, "cached", json_false());
	snprintf(r->location, sizeof r->location, "/v1/reductions/%s", sq->id);
	/* a finished count never changes; bounds do as the count goes on */
	r->cache_control = exact ? SRV_CACHE_IMMUTABLE : SRV_CACHE_NO_STORE;
	if (exact)
		srv_reply_json(r, created ? 201 : 200, res);
	else
		srv_reply_json(r, sq->solve_seconds >= s->cfg.max_compute ? 200 : 202, res);
}

void
api_reduction_settle(struct srv *s, const char *id, const char *request_text)
{
	json_t *req = json_loads(request_text, 0, NULL), *res;
	struct dn_error err;
	struct srv_query *sq;

	memset(&err, 0, sizeof err);
	sq = req != NULL ? srv_registry_get(s->registry, id, req, &err) : NULL;
	json_decref(req);
	if (sq == NULL) {
		srv_log("reduction %s: its last job is done but the query does not compile here: %s", id,
		    req == NULL ? "the stored request is not JSON" : err.message);
		return;
	}
	pthread_rwlock_wrlock(&sq->lock);
	/* one slice's worth: the jobs are done, only their counts are gathered */
	/* (a count that finds the result stored elsewhere takes it: sq->result) */
	if (sq->result == NULL && api_reduction_count(s, sq, 1.0, &err) == 0 && sq->result == NULL &&
	    sq->e.lower == sq->e.upper) {
		res = reduction_json(s, sq);
		extras(sq, res, 1.0);
		sq->result = json_incref(res);
		store(s, sq, res, 1);
		json_decref(res);
		srv_log("reduction %s: the distributed count is final", id);
	}
	pthread_rwlock_unlock(&sq->lock);
	srv_registry_release(s->registry, sq);
}

/* A read by id (GET): the stored request must be the one the id names;
 * an entry that answers another query is never served. */
static int
stored_request_ok(const char *id, struct cache_entry *ce)
{
	if (srv_query_id_matches(ce->request, id))
		return 1;
	srv_log("reduction %s: the cached entry holds another query's request: ignored", id);
	cache_entry_clear(ce);
	return 0;
}

/* A final cache entry for `id` answering `request_text` (NULL: any):
 * replies 200 with the stored text and "cached": true spliced in before
 * its closing brace (no parse: reads of a large reduced space stay cheap).
 * Returns the cache_get result; a malformed stored entry counts as a miss. */
static int
reply_from_cache(struct srv_request *r, const char *id, const char *request_text, struct cache_entry *ce)
{
	int damaged, hit = reduction_cache_get(r->srv, id, 0, ce, &damaged);
	size_t n;
	char *text;

	if (hit != CACHE_HIT)
		return hit;
	if (request_text != NULL && strcmp(ce->request, request_text) != 0) {
		cache_entry_clear(ce);
		return CACHE_MISS;      /* another query with the same hash: never use it */
	}
	if (request_text == NULL && !stored_request_ok(id, ce))
		return CACHE_MISS;
	if (!ce->final)
		return CACHE_HIT;
	n = strlen(ce->result);
	while (n > 0 && (ce->result[n - 1] == ' ' || ce->result[n - 1] == '\n'))
		n--;
	if (n < 2 || ce->result[0] != '{' || ce->result[n - 1] != '}' || (text = malloc(n + 32)) == NULL) {
		cache_entry_clear(ce);
		return CACHE_MISS;
	}
	memcpy(text, ce->result, n - 1);
	memcpy(text + n - 1, ",\"cached\":true}", sizeof ",\"cached\":true}");
	srv_reply_owned(r, 200, "application/json", text, strlen(text));
	r->cache_hit = 1;
	r->cache_control = SRV_CACHE_IMMUTABLE;        /* a final entry: the count is exact */
	snprintf(r->location, sizeof r->location, "/v1/reductions/%s", id);
	return CACHE_HIT;
}

/* What the HTTP thread found for a reduction to create (its canonical
 * form, id, and the result cache's answer: a miss or an unfinished count),
 * handed to the worker that solves it so it does not look again. */
struct create_handoff {
	json_t *canon;
	char *text;
	char id[33];
	int hit;
};

static void
create_handoff_free(void *p)
{
	struct create_handoff *h = p;

	json_decref(h->canon);
	free(h->text);
	free(h);
}

void
api_reduction_create(struct srv_request *r)
{
	struct create_handoff *h = r->handoff;
	struct cache_entry ce;
	struct srv_query *sq;
	struct dn_error err;
	char id[33], *text = NULL;
	json_t *canon;
	double timeout = api_request_timeout(r);
	int hit;

	if (timeout < 0)
		return;
	memset(&ce, 0, sizeof ce);
	memset(&err, 0, sizeof err);
	if (h != NULL && r->in_worker) {
		/* the HTTP thread canonicalized it and missed the cache */
		canon = h->canon;
		text = h->text;
		memcpy(id, h->id, sizeof id);
		hit = h->hit;
		h->canon = NULL;
		h->text = NULL;
	} else {
		canon = srv_query_canonical(r->json, id, &text);
		if (canon == NULL) {
			dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
			srv_reply_error(r, &err);
			return;
		}
		hit = reply_from_cache(r, id, text, &ce);
		if (hit == CACHE_HIT && ce.final)
			goto out;
		if (!r->in_worker) {
			r->status = 0;          /* solve on a worker */
			if (r->handoff == NULL && (h = calloc(1, sizeof *h)) != NULL) {
				h->canon = canon;
				h->text = text;
				memcpy(h->id, id, sizeof id);
				h->hit = hit;
				r->handoff = h;
				r->handoff_free = create_handoff_free;
				canon = NULL;
				text = NULL;
			}
			goto out;
		}
	}
	sq = srv_registry_get(r->srv->registry, id, canon, &err);
	if (sq == NULL) {
		srv_reply_error(r, &err);
		goto out;
	}
	if (hit == CACHE_HIT) {
		/* an unfinished count: fetch its saved progress to continue it */
		int damaged;
		cache_entry_clear(&ce);
		hit = reduction_cache_get(r->srv, id, 1, &ce, &damaged);
		if (hit == CACHE_HIT && strcmp(ce.request, text) != 0)
			hit = CACHE_MISS;
	}
	solve_and_reply(r, sq, hit == CACHE_HIT ? &ce : NULL, timeout, 1);
	srv_registry_release(r->srv->registry, sq);
out:
	cache_entry_clear(&ce);
	json_decref(canon);
	free(text);
}

/* Looks the id up in memory, else (on a worker) in the cache. */
static struct srv_query *
find_query(struct srv_request *r, struct cache_entry *ce)
{
	struct srv *s = r->srv;
	struct dn_error err;
	struct srv_query *sq;
	json_t *req;
	int hit, damaged;

	memset(&err, 0, sizeof err);
	sq = srv_registry_get(s->registry, r->params[0], NULL, &err);
	if (sq != NULL || !r->in_worker) {
		if (sq == NULL)
			r->status = 0;
		return sq;
	}
	hit = reduction_cache_get(s, r->params[0], 1, ce, &damaged);
	if (hit == CACHE_DOWN) {
		srv_reply_problem(r, 503, "database-down", "Database unavailable", NULL,
		    "reduction %s is not in this server's memory and the database is down", r->params[0]);
		return NULL;
	}
	if (hit == CACHE_HIT && !stored_request_ok(r->params[0], ce))
		hit = CACHE_MISS;
	if (hit == CACHE_MISS && damaged) {
		srv_reply_problem(r, 404, "reduction-damaged", "Reduction damaged", NULL, "reduction %.64s was "
		    "stored, but its stored entry failed its checksum together with the request it answers, so it "
		    "is neither served nor computed again: POST its query to /v1/reductions again", r->params[0]);
		return NULL;
	}
	if (hit == CACHE_MISS) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no reduction %.64s (create it with POST "
		    "/v1/reductions)", r->params[0]);
		return NULL;
	}
	req = json_loads(ce->request, 0, NULL);
	dn_error_clear(&err);   /* the lookup above recorded "not in memory" */
	sq = req ? srv_registry_get(s->registry, r->params[0], req, &err) : NULL;
	json_decref(req);
	if (sq == NULL) {
		if (!dn_error_isset(&err))
			dn_error_set(&err, DN_EINTERNAL, NULL, "the stored request of %s cannot be read", r->params[0]);
		srv_reply_error(r, &err);
		return NULL;
	}
	if (srv_query_lock(r, sq, 1) != 0) {
		srv_registry_release(s->registry, sq);
		return NULL;
	}
	restore(sq, ce);
	pthread_rwlock_unlock(&sq->lock);
	return sq;
}

struct srv_query *
api_reduction_query(struct srv_request *r)
{
	struct cache_entry ce;
	struct srv_query *sq;

	memset(&ce, 0, sizeof ce);
	sq = find_query(r, &ce);
	cache_entry_clear(&ce);
	return sq;
}

void
api_reduction_get(struct srv_request *r)
{
	struct cache_entry ce;
	struct srv_query *sq;
	double timeout = api_request_timeout(r);
	int hit;

	if (timeout < 0)
		return;
	memset(&ce, 0, sizeof ce);
	if (strlen(r->params[0]) != 32) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no reduction %.64s", r->params[0]);
		return;
	}
	hit = reply_from_cache(r, r->params[0], NULL, &ce);
	if (hit == CACHE_HIT && ce.final) {
		cache_entry_clear(&ce);
		return;
	}
	cache_entry_clear(&ce);
	sq = find_query(r, &ce);
	cache_entry_clear(&ce);
	if (sq == NULL)
		return;
	if (!r->in_worker) {
		/* in memory: answer here when done, else count on a worker
		 * (also when a worker is counting it now: never wait here) */
		if (srv_query_lock(r, sq, 0) != 0) {
			srv_registry_release(r->srv->registry, sq);
			return;
		}
		if (sq->result != NULL && hit == CACHE_DOWN) {
			json_t *res = json_deep_copy(sq->result);
			json_object_set_new(res, "cached", json_true());
			r->cache_hit = 1;
			r->cache_control = SRV_CACHE_IMMUTABLE;
			srv_reply_json(r, 200, res);
		} else
			r->status = 0;  /* to a worker; a result the cache lost (a miss, or an unfinished
					 * entry: a damaged one's request, stored again) is stored again there */
		pthread_rwlock_unlock(&sq->lock);
		srv_registry_release(r->srv->registry, sq);
		return;
	}
	solve_and_reply(r, sq, NULL, timeout, 0);
	srv_registry_release(r->srv->registry, sq);
}
