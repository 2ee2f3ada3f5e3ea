/*
 * cache_jobs.h - the distributed count's jobs in PostgreSQL (cache_jobs.c):
 * a count cut into jobs (one per undecided box of its stored tree) that
 * every replica's idle workers claim, count and commit, with PostgreSQL's
 * transactions as the only coordination.
 *
 * Tables (migrations in cache_pg.c): dnnsat_job_sets, one row per cut
 * count (key, its canonical request, njobs, the stored tree the jobs refer
 * to as saved progress, finished_at once its result is final, and then
 * what it keeps of its deleted jobs: counted_at, the last commit;
 * claimers; busy_s, the jobs' time from claim to commit; between_s, the
 * claimers' time between their jobs; jobs_log, a line "job state attempts
 * commits owner" per job, the record that each was committed once);
 * dnnsat_jobs, one row per job (key, job, node: the tree's leaf, path: its
 * box as text, state open/claimed/done, owner and lease_until while
 * claimed, count once done, attempts: claims so far, commits: 1 once done,
 * claimed_at and done_at: the last claim and the commit, PostgreSQL's clock;
 * data: what the final answer needs of the job's box, opaque here).
 *
 * Clean-up: once the final result is stored, cache_jobs_finish deletes the
 * set's jobs and tree (its row stays, finished, as the record that the
 * result is final); cache_jobs_sweep deletes finished sets after a while
 * and unfinished ones nobody has touched for long (abandoned), a bounded
 * number per call.
 *
 * Invariants: a set and all its jobs are published in one transaction, at
 * most one set per key (the primary key decides between two publishers).
 * A job is claimed by one owner at a time (FOR UPDATE SKIP LOCKED), until
 * its lease expires unrenewed; then any owner may claim it again. A commit
 * succeeds only for the owner holding the claim, and only once (state
 * 'claimed' -> 'done'): a count whose lease was lost is dropped, so no job
 * is counted twice or lost. Every call is safe from any thread; the
 * in-memory cache has no jobs (every call fails with -1).
 */
#ifndef DN_CACHE_JOBS_H
#define DN_CACHE_JOBS_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"

/* A claimed job: the reduction's key, the job's number, its box (path) and
 * the canonical request to compile (malloc'd; cache_job_clear frees). */
struct cache_job {
	char key[65];
	int job;
	char *path;
	char *request;
};

/* The jobs done so far of a cut count: njobs in all, node[i], count[i]
 * (decimal text) and data[i] (data_len[i] bytes as committed, NULL none)
 * for the ndone done ones; finished when its result was stored final
 * (then its jobs are gone: ndone 0) (cache_jobs_state_clear frees). */
struct cache_jobs_state {
	int njobs, ndone, finished;
	int32_t *node;
	char **count;
	unsigned char **data;
	size_t *data_len;
};

/* 1 when the cache can hold jobs (PostgreSQL). */
int cache_jobs_supported(const struct cache *c);

/* Publishes the set of `key` in one transaction: the request, the tree
 * (saved progress, tree_len bytes) and n jobs, job i for leaf nodes[i]
 * with box paths[i]. 1 published, 0 a set of this key exists already
 * (nothing written), -1 database down or error (nothing written). */
int cache_jobs_publish(struct cache *c, const char *key, const char *request, const void *tree, size_t tree_len,
    int n, const int32_t *nodes, char *const *paths);

/* Claims one open job, or one whose lease expired, for `owner` for
 * `lease` seconds (attempts + 1). 1 claimed (*out filled), 0 none to
 * claim, -1 down. */
int cache_jobs_claim(struct cache *c, const char *owner, double lease, struct cache_job *out);

/* Extends owner's lease of a claimed job to `lease` seconds from now. 1
 * kept, 0 lost (another owner claimed it, or it is done), -1 down. */
int cache_jobs_renew(struct cache *c, const char *key, int job, const char *owner, double lease);

/* Commits the job's exact count (decimal text) and its data (len bytes,
 * opaque here; NULL: none) if owner still holds it. 1 committed, 0 lost
 * (count and data dropped), -1 down. */
int cache_jobs_commit(struct cache *c, const char *key, int job, const char *owner, const char *count,
    const void *data, size_t len);

/* Gives an unfinished job back: open again at once (retry_s 0: stopped,
 * not failed), or, after a failure, claimable only retry_s seconds from
 * now, doubled for each earlier claim of the job, at most retry_max_s (so
 * a job that fails on every replica is not claimed and failed again in a
 * tight loop; PostgreSQL's clock). 1, 0 not held, -1 down. */
int cache_jobs_release(struct cache *c, const char *key, int job, const char *owner, double retry_s,
    double retry_max_s);

/* The jobs of key not done yet (0 also when there is no set), or -1 down. */
int cache_jobs_left(struct cache *c, const char *key);

/* The set's state: 1 (*out filled), 0 no set of that key, -1 down. */
int cache_jobs_read(struct cache *c, const char *key, struct cache_jobs_state *out);

/* The set's tree (malloc'd, *len bytes): 1, 0 no set, -1 down. */
int cache_jobs_tree(struct cache *c, const char *key, void **tree, size_t *len);

/* After the set's final result is stored: deletes its jobs and empties
 * its tree, and marks it finished with its jobs' summary, in one
 * transaction; the set's row stays (finished) until swept. Idempotent. 0
 * or -1. */
int cache_jobs_finish(struct cache *c, const char *key);

/* Deletes at most max_sets sets (oldest first) with their jobs: finished
 * more than keep_finished seconds ago, or unfinished and untouched for
 * `abandoned` seconds (published before, no job committed since, no lease
 * reaching into that time: a job claimed and given back holds none).
 * The sets deleted, or -1 down. */
int cache_jobs_sweep(struct cache *c, double keep_finished, double abandoned, int max_sets);

void cache_job_clear(struct cache_job *j);
void cache_jobs_state_clear(struct cache_jobs_state *s);

#endif
