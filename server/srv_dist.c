/*
 * srv_dist.c - the distributed count (--distribute, PostgreSQL only). A
 * count still unfinished after its first slice is cut into jobs, one per
 * undecided box of its stored tree (fset_jobs.c: split until there are
 * --distribute-jobs), published in one transaction with that tree
 * (cache_jobs.h). Every replica runs --workers claimers: a claimer borrows
 * an idle solver worker (srv_pool_lend), claims a job (FOR UPDATE SKIP
 * LOCKED, a lease of --job-lease seconds), counts the job's box exactly on
 * a compiled query of its own (kept while its jobs are of one reduction),
 * renews the lease from the engine's progress callback every third of it,
 * and commits the count with the job's data (its box's projection,
 * fset_jobdata.c); a lost lease stops the count and a late commit
 * changes nothing, so a job is counted once. Whoever answers the
 * reduction (srv_dist_follow, from api_reduction_count) loads the
 * published tree once and grafts the done jobs' exact counts and data into
 * it: its bounds are the tree's with those counts in place, and once every
 * job is done the count is exact, the single-process count (each job's
 * count is the single-process count of its leaf), and the reduced space
 * merges the jobs' projections instead of searching their boxes (data
 * that does not check out is refused: that box is searched). The claimer
 * that commits the last job settles the reduction (api_reduction_settle),
 * so the final result is stored even when no client asks; a client that
 * asks does the same, idempotently. Storing the final result deletes the
 * set's jobs (cache_jobs_finish); a follower that finds its set finished
 * takes the stored result (api_reduction_adopt). The first claimer sweeps
 * finished and abandoned sets (cache_jobs_sweep).
 *
 * No consensus of our own: the job rows' states and PostgreSQL's
 * transactions are the coordination. A replica killed mid-job loses its
 * lease when it is not renewed, and any claimer takes the job again.
 *
 * Invariants: a claimer holds a borrowed worker only while it claims and
 * counts a job; it gives a job it cannot finish back (shutdown, an error)
 * rather than hold it to its lease's end. A query's tree is the published
 * one (sq->dist_tree) before any count is grafted into it.
 */
#include "srv_registry.h"
#include "cache_jobs.h"
#include "fset_project.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DIST_POLL_S 0.25        /* an idle claimer asks for a job, a follower for the done ones, 4 times a second */
/* Clean-up of the job tables (cache_jobs_sweep; docs/operations.md): the
 * first claimer of every replica sweeps once a minute, at most 100 sets a
 * time (bounded statements on a table that other replicas lock rows of).
 * A finished set's row (no jobs, no tree left) is kept --job-keep-finished
 * (an hour), the record that followers read to fetch the final result
 * from the cache; an unfinished set none of whose jobs was committed or
 * held under a lease for --job-abandoned (a day) is abandoned (every
 * replica stopped, or its request no longer compiles, so that its jobs are
 * only claimed and given back): its jobs go, and the next request counts
 * anew (srv_config.c states the defaults' reasons). */
#define DIST_SWEEP_S 60.0
#define DIST_SWEEP_MAX 100
/* A job given back after a failure (its request does not compile here,
 * or counting it failed: out of memory) waits 1 s before any replica may
 * claim it again, doubled for each earlier claim, at most 5 minutes: a job
 * that fails everywhere costs a claim every 5 minutes, not a tight loop of
 * claims and logged failures on every claimer, until its set is swept. */
#define DIST_RETRY_S 1.0
#define DIST_RETRY_MAX_S 300.0

struct claimer {
	struct srv_dist *d;
	pthread_t thread;
	int started;
	char owner[160];                /* host:pid:start:claimer, unique among replicas and restarts */
	struct srv_query *sq;           /* its own compiled query, of its last job's reduction */
	const struct cache_job *job;    /* the job being counted */
	double renewed;                 /* srv_now of the last renewal */
	int lost;                       /* the lease was lost: stop, commit nothing */
};

struct srv_dist {
	struct srv *s;
	struct claimer *c;
	int n;
	atomic_int stop;
};

/* Sleeps `seconds` in short steps, returning early once stopping. */
static void
dist_nap(struct srv *s, const atomic_int *stop, double seconds)
{
	for (double t = 0; t < seconds && !atomic_load(&s->stopping) && (stop == NULL || !atomic_load(stop));
	    t += 0.05) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* The engine's progress callback while a job is counted: renews the lease
 * every third of it; stops the count when it was lost or at shutdown. */
static void
on_progress(void *ctx, const struct fs_engine *e)
{
	struct claimer *c = ctx;
	struct srv *s = c->d->s;
	struct fs_engine *w = &c->sq->e;
	double now = srv_now();

	(void)e;
	if (atomic_load(&s->stopping) || atomic_load(&c->d->stop))
		w->timed_out = 1;
	else if (now - c->renewed >= s->cfg.job_lease / 3) {
		/* -1 (the database is down): count on; the commit says whether it still counts */
		if (cache_jobs_renew(s->cache, c->job->key, c->job->job, c->owner, s->cfg.job_lease) == 0) {
			c->lost = 1;
			w->timed_out = 1;
		}
		c->renewed = now;
	}
}

/* The claimer's compiled query of the job's reduction. 0, or -1 logged. */
static int
claimer_query(struct claimer *c, const struct cache_job *j)
{
	struct dn_error err;
	json_t *req;

	if (c->sq != NULL && strcmp(c->sq->id, j->key) == 0)
		return 0;
	srv_query_free(c->sq);
	c->sq = NULL;
	memset(&err, 0, sizeof err);
	req = json_loads(j->request, 0, NULL);
	if (req != NULL)
		c->sq = srv_query_compile(&c->d->s->catalog, j->key, req, &err);
	json_decref(req);
	if (c->sq == NULL) {
		srv_log("job %d of %s: the stored request does not compile: %s", j->job, j->key,
		    req == NULL ? "not JSON" : err.message);
		return -1;
	}
	return 0;
}

/* Counts a claimed job and commits it with its data (fset_jobdata.c);
 * settles the reduction after its last job. */
static void
run_job(struct claimer *c, const struct cache_job *j)
{
	struct srv *s = c->d->s;
	struct dn_error err;
	fs_count count = 0;
	char text[64];
	double t0 = srv_now();
	void *data = NULL;
	size_t len = 0;
	int rc;

	memset(&err, 0, sizeof err);
	if (claimer_query(c, j) != 0) {
		cache_jobs_release(s->cache, j->key, j->job, c->owner, DIST_RETRY_S, DIST_RETRY_MAX_S);
		return;
	}
	c->job = j;
	c->lost = 0;
	c->renewed = t0;
	c->sq->e.deadline = 0;
	c->sq->e.progress = on_progress;
	c->sq->e.progress_ctx = c;
	c->sq->e.next_progress = 0;
	rc = fs_jobs_run(&c->sq->e, j->path, &count, &data, &len, &err);
	c->sq->e.progress = NULL;
	c->sq->e.timed_out = 0;
	c->job = NULL;
	if (rc == 0 && !c->lost) {
		fs_count_str(count, text, sizeof text);
		rc = cache_jobs_commit(s->cache, j->key, j->job, c->owner, text, data, len);
		free(data);
		if (rc == 1 && cache_jobs_left(s->cache, j->key) == 0)
			api_reduction_settle(s, j->key, j->request);
		else if (rc == 0)
			srv_log("job %d of %s: the lease was lost before the commit: its count (%s) is dropped", j->job,
			    j->key, text);
		return;
	}
	free(data);
	if (c->lost) {
		srv_log("job %d of %s: the lease was lost (another replica has it): stopped after %.1f s", j->job,
		    j->key, srv_now() - t0);
		return;
	}
	/* failed: given back to be retried later; stopped (this replica shuts
	 * down): given back open at once, for another replica */
	if (rc < 0)
		srv_log("job %d of %s: %s (given back; retried after a backoff)", j->job, j->key, err.message);
	cache_jobs_release(s->cache, j->key, j->job, c->owner, rc < 0 ? DIST_RETRY_S : 0, DIST_RETRY_MAX_S);
}

static void *
claimer_main(void *arg)
{
	struct claimer *c = arg;
	struct srv_dist *d = c->d;
	struct srv *s = d->s;

	double swept = 0;

	while (!atomic_load(&s->stopping) && !atomic_load(&d->stop)) {
		struct cache_job j;
		int got = 0;
		if (c == &d->c[0] && srv_now() - swept >= DIST_SWEEP_S) {
			int gone = cache_jobs_sweep(s->cache, s->cfg.job_keep_finished, s->cfg.job_abandoned,
			    DIST_SWEEP_MAX);
			if (gone > 0)
				srv_log("distributed counts: %d finished or abandoned job sets deleted", gone);
			swept = srv_now();
		}
		if (srv_pool_lend(s->pool, 1) == 1) {
			got = cache_jobs_claim(s->cache, c->owner, s->cfg.job_lease, &j);
			if (got == 1) {
				run_job(c, &j);
				cache_job_clear(&j);
			}
			srv_pool_unlend(s->pool, 1);
		}
		if (got != 1)
			dist_nap(s, &d->stop, DIST_POLL_S);
	}
	srv_query_free(c->sq);
	c->sq = NULL;
	return NULL;
}

struct srv_dist *
srv_dist_new(struct srv *s)
{
	struct srv_dist *d = calloc(1, sizeof *d);
	char host[64];

	if (d == NULL || (d->c = calloc((size_t)s->cfg.workers, sizeof *d->c)) == NULL) {
		free(d);
		return NULL;
	}
	d->s = s;
	if (gethostname(host, sizeof host) != 0)
		snprintf(host, sizeof host, "?");
	host[sizeof host - 1] = '\0';
	for (d->n = 0; d->n < s->cfg.workers; d->n++) {
		struct claimer *c = &d->c[d->n];
		c->d = d;
		snprintf(c->owner, sizeof c->owner, "%s:%ld:%ld:%d", host, (long)getpid(), (long)time(NULL), d->n);
		if (pthread_create(&c->thread, NULL, claimer_main, c) != 0)
			break;
		c->started = 1;
	}
	srv_log("distributed counts: %d claimers, jobs leased for %g s", d->n, s->cfg.job_lease);
	return d;
}

void
srv_dist_free(struct srv_dist *d)
{
	if (d == NULL)
		return;
	atomic_store(&d->stop, 1);
	for (int i = 0; i < d->n; i++)
		if (d->c[i].started)
			pthread_join(d->c[i].thread, NULL);
	free(d->c);
	free(d);
}

/* Cuts sq's count into jobs: split, saved (*tree), and loaded back so
 * that sq's node numbers are those every replica loads; the leaves and
 * their paths. 0, or -1 with err (n 0: nothing to cut, the count exact). */
static int
cut(struct srv *s, struct srv_query *sq, void **tree, size_t *len, int32_t **leaves, char ***paths, int *n,
    struct dn_error *err)
{
	if (fs_jobs_split(&sq->e, s->cfg.distribute_jobs, err) != 0 || fs_progress_save(&sq->e, tree, len, err) != 0 ||
	    fs_progress_load(&sq->e, *tree, *len, err) != 0 || fs_jobs_leaves(&sq->e, leaves, n, err) != 0)
		return -1;
	if (*n == 0)
		return 0;
	if ((*paths = calloc((size_t)*n, sizeof **paths)) == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory cutting a count into jobs");
	for (int i = 0; i < *n; i++)
		if (((*paths)[i] = fs_jobs_path(&sq->e, (*leaves)[i])) == NULL)
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory cutting a count into jobs");
	return 0;
}

int
srv_dist_publish(struct srv *s, struct srv_query *sq)
{
	struct dn_error err;
	int32_t *leaves = NULL;
	char **paths = NULL;
	void *tree = NULL;
	size_t len = 0;
	int n = 0, rc = -1;

	if (s->dist == NULL || sq->dist_tree || sq->e.lower == sq->e.upper)
		return 0;
	memset(&err, 0, sizeof err);
	if (cut(s, sq, &tree, &len, &leaves, &paths, &n, &err) != 0)
		srv_log("reduction %s: not distributed: %s", sq->id, err.message);
	else if (n > 0)
		rc = cache_jobs_publish(s->cache, sq->id, sq->request_text, tree, len, n, leaves, paths);
	if (rc == 1) {
		sq->dist_tree = 1;
		srv_log("reduction %s: cut into %d jobs (bounds %.6g to %.6g)", sq->id, n, (double)sq->e.lower,
		    (double)sq->e.upper);
	} else if (rc < 0 && n > 0)
		srv_log("reduction %s: not distributed: its jobs could not be published", sq->id);
	for (int i = 0; paths != NULL && i < n; i++)
		free(paths[i]);
	free(paths);
	free(tree);
	free(leaves);
	return rc >= 0;         /* 0: another replica's set, which the caller follows */
}

/* Loads the published tree into sq (once). 0 or -1 logged. */
static int
load_tree(struct srv *s, struct srv_query *sq)
{
	struct dn_error err;
	void *tree = NULL;
	size_t len = 0;
	int rc;

	if (sq->dist_tree)
		return 0;
	memset(&err, 0, sizeof err);
	if (cache_jobs_tree(s->cache, sq->id, &tree, &len) != 1)
		return -1;
	rc = fs_progress_load(&sq->e, tree, len, &err);
	free(tree);
	if (rc != 0) {
		srv_log("reduction %s: the distributed count's tree is ignored: %s", sq->id, err.message);
		return -1;
	}
	sq->counted = 1;
	sq->dist_tree = 1;
	return 0;
}

/* Grafts the done jobs of st into sq's tree, each with its data when it
 * came with data that holds (else its count alone: the final answer then
 * searches that box), and sums it. */
static void
graft_done(struct srv_query *sq, const struct cache_jobs_state *st)
{
	struct dn_error err;

	for (int i = 0; i < st->ndone; i++) {
		fs_count c;
		memset(&err, 0, sizeof err);
		if (fs_count_parse(st->count[i], &c) != 0) {
			srv_log("reduction %s: a done job's count \"%.40s\" is not a count: ignored", sq->id, st->count[i]);
			continue;
		}
		/* grafted at an earlier poll: with its data, or its count alone
		 * when the data was refused (checked, logged and refused once,
		 * not again at every poll) */
		if (fs_jobs_grafted(&sq->e, st->node[i]) == 1)
			continue;
		if (st->data[i] != NULL &&
		    fs_jobs_graft_data(&sq->e, st->node[i], c, st->data[i], st->data_len[i], &err) == 0)
			continue;
		if (st->data[i] != NULL)
			srv_log("reduction %s: a done job's data is refused (its box is searched again): %s", sq->id,
			    err.message);
		memset(&err, 0, sizeof err);
		if (fs_jobs_graft(&sq->e, st->node[i], c, &err) != 0)
			srv_log("reduction %s: a done job's count does not fit the tree: %s", sq->id, err.message);
	}
	fs_jobs_sum(&sq->e);
}

int
srv_dist_follow(struct srv *s, struct srv_query *sq, double end)
{
	struct cache_jobs_state st;
	int r;

	if (s->dist == NULL)
		return 0;
	if ((r = cache_jobs_read(s->cache, sq->id, &st)) != 1)
		return r;
	if (st.finished) {
		/* the final result is stored and the jobs are gone: take it */
		cache_jobs_state_clear(&st);
		return api_reduction_adopt(s, sq) == 1 ? 1 : -1;
	}
	if (load_tree(s, sq) != 0) {
		cache_jobs_state_clear(&st);
		return -1;
	}
	srv_pool_idle_begin();  /* this worker waits on the claimers: one of them may take its place */
	for (;;) {
		int finished = st.finished;
		graft_done(sq, &st);
		cache_jobs_state_clear(&st);
		if (sq->e.lower == sq->e.upper)
			break;
		if (finished) {
			r = api_reduction_adopt(s, sq);
			if (r != 1)
				srv_log("reduction %s: finished elsewhere but its final result is not in the cache", sq->id);
			break;
		}
		if (srv_now() >= end || atomic_load(&s->stopping))
			break;
		dist_nap(s, NULL, end - srv_now() < DIST_POLL_S ? end - srv_now() : DIST_POLL_S);
		if (cache_jobs_read(s->cache, sq->id, &st) != 1)
			break;
	}
	srv_pool_idle_end();
	return 1;
}
