/*
 * fset_par.c - counting the undecided leaves of the stored search tree on
 * several threads (e->threads > 1), leaving the tree one thread leaves.
 *
 * Items. The work items are the undecided leaves of the stored tree, in the
 * order of configurations (a count from scratch: the root alone); nothing
 * is bounded before the workers start. An earlier version expanded the
 * leaves breadth first on the coordinating thread into 32 boxes per thread
 * first: on ResNet-50 (a bound of a fraction of a millisecond on the 42k-node
 * graph, 751 boxes in all) that serial split was a third of the count.
 *
 * Count. Each worker thread owns a clone of the engine: the immutable parts
 * (query, graph, tapes, tables, check structures, the stored tree, which no
 * one writes while workers run) are shared, the mutable ones (the box
 * lo/hi, intervals iv/hpiv, stamps, undo trail, scratch point/config, the
 * continuous vars' cells, its node array and statistics) are its own. It
 * claims an item, enters its box from the shared base box (par_cursor: back
 * to the path it shares with its last box, then down) and counts it with
 * fs_count_box into its own node array.
 *
 * Stealing. fs_count_box tells a worker's engine of every box it splits
 * (fs_par_push, fs_par_child, fs_par_pop): the worker keeps the stack of
 * those frames, each with its children not yet started. While a worker
 * waits for work (`hungry`: the waiting workers less the items given and
 * not yet claimed), a busy worker, at the start of its next child, gives
 * away the later half of the pending children of its shallowest frame that
 * has any (the largest boxes it has left): each becomes an item whose path
 * is the worker's item's path and the frames' current children, and the
 * given node in the giver's array is marked (nchildren -1, first_child the
 * item's index). The giver skips them; the taker counts each into its own
 * array, from a root that stands for the giver's node. Only the owner reads
 * or writes its frames and nodes, so giving needs the lock of the item
 * list alone, and a giver pays a test of one atomic at every child. A
 * taker's box is entered anew (ResNet-50 on 2 threads: 1-2.5% more bound
 * calls than one thread). e->par_force_steals (tests) makes the only busy
 * worker wait for an idle one to give to, so that stealing is exercised
 * whatever the scheduler does.
 *
 * Graft. Once the workers are done, the leaves' subtrees are appended to
 * e->nodes in the order of the leaves, each subtree's children blocks in
 * depth-first order, following a given node into its taker's tree, with
 * every inner node's count and upper summed from its children (a giver's
 * sums lack what it gave): exactly where one thread's depth-first count
 * allocates them, so the stored tree is the same node for node (indices
 * and contents), and with it the k-th configuration, pages, cursors,
 * samples and saved progress. Statistics (bound_calls, evals) differ: an
 * entered path is bounded again.
 *
 * The cap. One thread stores children blocks greedily up to e->max_nodes
 * and counts the rest without storing them. Rather than replay that rule
 * across threads, the workers share one budget, what e->max_nodes leaves
 * after the tree (an item's root stands for a node already counted: the
 * stored leaf, or the giver's node): when it is spent (or a worker runs
 * out of memory), every worker stops, nothing is grafted, and the caller
 * counts on one thread; so a count whose tree outgrows max_nodes costs the
 * time parallel counting took to fill it, and then the single-threaded
 * count.
 *
 * Deadlines. The workers take the engine's deadline; past it, their boxes
 * become undecided leaves as on one thread, a worker past it gives nothing
 * and claims no more leaves, leaves left unclaimed stay as they were, and
 * e->timed_out is set: a valid tree whose bounds are correct, not the one
 * thread's (whose timing differs anyway). Given items are always counted
 * (a worker past the deadline makes each an undecided leaf after one bound). With
 * a work limit (deterministic slices), counting stays on one thread. The
 * progress callback runs on the coordinating thread only, about every
 * 0.25 s, with e->bound_calls including the items done.
 */
#include "fset_priv.h"
#include "dn_grow.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One narrowing of a path from the base box. */
struct par_step {
	int64_t lo, hi;
	int32_t var;
};

/* A work item: a stored leaf of the coordinating engine (leaf >= 0, its
 * path read from the stored tree) or a box a worker gave (leaf -1, path
 * its own). */
struct par_item {
	struct par_step *path;
	int32_t len, leaf;
	fs_count c0, u0;        /* the leaf's count and upper before (fs_leaf_merge) */
	int32_t worker, root;   /* where its subtree was counted; worker -1: never claimed */
};

/* A box fs_count_box split in a worker: its children block in the
 * worker's array, the child being counted, and the end of what the worker
 * still counts itself (children from `end` were given away). */
struct par_frame {
	int64_t clo[FS_ENUMERATE_UP_TO], chi[FS_ENUMERATE_UP_TO];
	int32_t node, first, dv, cur, end;
};

/* The path a thread's box is narrowed to, with the mark before each step. */
struct par_cursor {
	struct par_step *step;
	int64_t *mark;
	int n, capstep, capmark;
};

struct par_worker {
	struct fs_par *p;
	struct fs_engine e;
	struct par_cursor cur;
	const struct par_step *path;    /* the item being counted: its path */
	int32_t len;
	struct par_step *scratch;       /* a stored leaf's path */
	int capscratch;
	struct par_frame *fr;           /* the frames of the item being counted */
	int nfr, capfr;
	double cpu;                     /* its thread's CPU seconds */
	pthread_t thread;
	int rc;
};

struct fs_par {
	struct fs_engine *e;            /* the coordinating engine */
	struct par_item **items;        /* the leaves (the first nleaves), then given boxes */
	int nitems, capitems, nleaves;
	int32_t next_leaf, next_given;  /* the next of each to claim */
	int idle, busy, exited, started; /* workers waiting, counting, gone; under mu */
	atomic_int force;               /* gifts still to force (e->par_force_steals) */
	atomic_int hungry;              /* idle less the given items waiting: written under mu */
	atomic_llong budget;            /* nodes the workers may still store */
	atomic_int capped;              /* a worker's tree is incomplete: fall back */
	atomic_llong calls, evals;      /* the workers' statistics, per item done */
	int64_t steals;                 /* boxes given (under mu) */
	struct par_worker *w;
	int nw;
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* the coordinator's: a worker exited */
	pthread_cond_t work;            /* the workers': an item, an idle worker, the end */
	int running;
};

int
fs_par_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

int
fs_par_take(struct fs_engine *e, int n)
{
	struct fs_par *p = e->par;

	if (n >= 0 && atomic_fetch_sub(&p->budget, (long long)n) >= n)
		return 0;
	atomic_store(&p->budget, -1);
	atomic_store(&p->capped, 1);
	e->timed_out = 1;       /* the worker's own: its count winds down at once */
	pthread_mutex_lock(&p->mu);
	pthread_cond_broadcast(&p->work);       /* waiting workers leave */
	pthread_mutex_unlock(&p->mu);
	return -1;
}

static struct par_worker *
worker_of(struct fs_engine *e)
{
	return (struct par_worker *)(void *)((char *)e - offsetof(struct par_worker, e));
}

/* ---- entering boxes ---- */

/* Narrows e's box to the one `path` leads to from the box before cur's
 * first step: back to the last step the two paths share, then down. 0 or
 * -1 (out of memory). */
static int
cursor_enter(struct fs_engine *e, struct par_cursor *cur, const struct par_step *path, int len)
{
	int k = 0;

	if (dn_grow_int(&cur->step, &cur->capstep, len, sizeof *cur->step) != 0 ||
	    dn_grow_int(&cur->mark, &cur->capmark, len, sizeof *cur->mark) != 0)
		return -1;
	while (k < cur->n && k < len && cur->step[k].var == path[k].var && cur->step[k].lo == path[k].lo &&
	    cur->step[k].hi == path[k].hi)
		k++;
	if (k < cur->n) {
		fs_rollback(e, cur->mark[k]);
		cur->n = k;
	}
	for (; k < len; k++) {
		cur->mark[k] = fs_mark(e);
		cur->step[k] = path[k];
		cur->n = k + 1;
		if (fs_narrow(e, path[k].var, path[k].lo, path[k].hi) != 0)
			return -1;
	}
	return 0;
}

/* Back to the box before cur's first step. */
static void
cursor_leave(struct fs_engine *e, struct par_cursor *cur)
{
	if (cur->n > 0)
		fs_rollback(e, cur->mark[0]);
	cur->n = 0;
}

/* Stored leaf n's path from the root (the root's step first) into the
 * worker's scratch. 0 or -1. */
static int
leaf_path(struct par_worker *pw, const struct fs_node *nodes, int32_t n)
{
	int32_t len = 0, k;

	for (int32_t x = n; x >= 0; x = nodes[x].parent)
		len++;
	if (dn_grow_int(&pw->scratch, &pw->capscratch, len, sizeof *pw->scratch) != 0)
		return -1;
	k = len;
	for (int32_t x = n; x >= 0; x = nodes[x].parent) {
		k--;
		pw->scratch[k].var = nodes[x].var;
		pw->scratch[k].lo = nodes[x].lo;
		pw->scratch[k].hi = nodes[x].hi;
	}
	pw->path = pw->scratch;
	pw->len = len;
	return 0;
}

/* ---- the frames and giving (a worker's own thread) ---- */

int
fs_par_push(struct fs_engine *e, int32_t node, int32_t first, int dv, int nch, const int64_t *clo,
    const int64_t *chi)
{
	struct par_worker *pw = worker_of(e);
	struct par_frame *f;

	if (dn_grow_int(&pw->fr, &pw->capfr, pw->nfr + 1, sizeof *pw->fr) != 0)
		return -1;
	f = &pw->fr[pw->nfr++];
	f->node = node;
	f->first = first;
	f->dv = dv;
	f->cur = 0;
	f->end = nch;
	memcpy(f->clo, clo, sizeof *clo * (size_t)nch);
	memcpy(f->chi, chi, sizeof *chi * (size_t)nch);
	return 0;
}

void
fs_par_pop(struct fs_engine *e)
{
	worker_of(e)->nfr--;
}

/* Appends it to p's items (under mu). 0 or -1. */
static int
item_add(struct fs_par *p, struct par_item *it)
{
	if (dn_grow_int(&p->items, &p->capitems, p->nitems + 1, sizeof *p->items) != 0)
		return -1;
	p->items[p->nitems++] = it;
	return 0;
}

/* hungry from the counts (under mu). */
static void
set_hungry(struct fs_par *p)
{
	atomic_store_explicit(&p->hungry, p->idle - (p->nitems - p->next_given), memory_order_relaxed);
}

/* Gives child j of frame k of pw (under mu): a new item, the giver's node
 * marked. 0 or -1. */
static int
give_child(struct par_worker *pw, int k, int j)
{
	struct fs_par *p = pw->p;
	const struct par_frame *f = &pw->fr[k];
	struct par_item *it = calloc(1, sizeof *it);
	struct fs_node *x = &pw->e.nodes[f->first + j];
	int32_t len = pw->len + k + 1;

	if (it == NULL || (it->path = malloc(sizeof *it->path * (size_t)len)) == NULL || item_add(p, it) != 0) {
		if (it != NULL)
			free(it->path);
		free(it);
		return -1;
	}
	memcpy(it->path, pw->path, sizeof *it->path * (size_t)pw->len);
	for (int i = 0; i < k; i++) {
		it->path[pw->len + i].var = pw->fr[i].dv;
		it->path[pw->len + i].lo = pw->fr[i].clo[pw->fr[i].cur];
		it->path[pw->len + i].hi = pw->fr[i].chi[pw->fr[i].cur];
	}
	it->path[len - 1].var = f->dv;
	it->path[len - 1].lo = f->clo[j];
	it->path[len - 1].hi = f->chi[j];
	it->len = len;
	it->leaf = -1;
	it->worker = it->root = -1;
	x->var = f->dv;
	x->lo = f->clo[j];
	x->hi = f->chi[j];
	x->parent = f->node;
	x->status = FS_UNKNOWN;
	x->count = x->upper = 0;
	x->nchildren = -1;                      /* given: first_child is the item */
	x->first_child = p->nitems - 1;
	p->steals++;
	return 0;
}

/* pw's shallowest frame with children not started (not given), or -1. */
static int
pending_frame(const struct par_worker *pw)
{
	for (int k = 0; k < pw->nfr; k++)
		if (pw->fr[k].end - pw->fr[k].cur > 1)
			return k;
	return -1;
}

/* Gives the later half of the pending children of pw's shallowest frame
 * that has any, the last first, while workers wait for them (under mu). */
static void
give(struct par_worker *pw)
{
	struct fs_par *p = pw->p;

	while (atomic_load_explicit(&p->hungry, memory_order_relaxed) > 0) {
		int k = pending_frame(pw), n;
		if (k < 0)
			return;
		for (n = (pw->fr[k].end - pw->fr[k].cur) / 2; n > 0; n--) {
			if (give_child(pw, k, pw->fr[k].end - 1) != 0)
				return;         /* out of memory: the worker keeps the rest */
			pw->fr[k].end--;
			set_hungry(p);
		}
		pthread_cond_broadcast(&p->work);
	}
}

int
fs_par_child(struct fs_engine *e, int i)
{
	struct par_worker *pw = worker_of(e);
	struct fs_par *p = pw->p;
	struct par_frame *f = &pw->fr[pw->nfr - 1];
	int64_t steals;

	if (i >= f->end)
		return 1;
	f->cur = i;
	if (e->timed_out || atomic_load_explicit(&p->capped, memory_order_relaxed))
		return 0;
	if (atomic_load_explicit(&p->force, memory_order_relaxed) > 0 ||
	    atomic_load_explicit(&p->hungry, memory_order_relaxed) > 0) {
		pthread_mutex_lock(&p->mu);
		/* a test's forced gift: the one busy worker waits for a taker */
		while (p->force > 0 && p->busy == 1 && p->exited < p->started - 1 && pending_frame(pw) >= 0 &&
		    atomic_load_explicit(&p->hungry, memory_order_relaxed) <= 0 && !atomic_load(&p->capped))
			pthread_cond_wait(&p->work, &p->mu);
		steals = p->steals;
		give(pw);
		if (p->force > 0 && p->steals > steals)
			p->force--;
		pthread_mutex_unlock(&p->mu);
	}
	return 0;
}

/* ---- the workers ---- */

static void *
dup_array(const void *src, size_t n, size_t size)
{
	void *d = malloc(n * size + 1);

	if (d != NULL && n > 0)
		memcpy(d, src, n * size);
	return d;
}

static void
clone_free(struct fs_engine *w)
{
	free(w->lo);
	free(w->hi);
	free(w->iv);
	free(w->hpiv);
	free(w->stamp);
	free(w->point);
	free(w->config);
	free(w->cvars);
	free(w->nodes);
	free(w->undo);
	memset(w, 0, sizeof *w);
}

/* A worker's engine: e's immutable parts shared, its mutable ones copied
 * (e in the base box). 0 or -1 (out of memory). */
static int
clone_engine(struct fs_engine *w, const struct fs_engine *e, struct fs_par *p)
{
	size_t nv = (size_t)e->nvars + 1, ng = (size_t)e->nnodes_graph + 1, nh = (size_t)e->q->def->nhps + 1;

	*w = *e;
	w->lo = dup_array(e->lo, nv, sizeof *e->lo);
	w->hi = dup_array(e->hi, nv, sizeof *e->hi);
	w->iv = dup_array(e->iv, ng, sizeof *e->iv);
	w->hpiv = dup_array(e->hpiv, nh, sizeof *e->hpiv);
	w->stamp = dup_array(e->stamp, ng, sizeof *e->stamp);
	w->point = dup_array(e->point, ng, sizeof *e->point);
	w->config = dup_array(e->config, nh, sizeof *e->config);
	w->cvars = dup_array(e->cvars, (size_t)e->ncvars + 1, sizeof *e->cvars);
	w->nodes = NULL;
	w->job_proj = NULL;     /* the caller's: a worker grafts no job data */
	w->njob_proj = 0;
	w->on_decided = NULL;   /* a job's projection is counted on one thread */
	w->decided_ctx = NULL;
	w->nnodes = w->capnodes = 0;
	w->undo = NULL;
	w->nundo = w->capundo = 0;
	w->bound_calls = w->evals = w->steals = 0;
	w->clock_at = 0;
	w->work_limit = 0;
	w->progress = NULL;
	w->timed_out = 0;
	w->threads = 1;
	w->expand_only = 0;
	w->par = p;
	if (!w->lo || !w->hi || !w->iv || !w->hpiv || !w->stamp || !w->point || !w->config || !w->cvars) {
		clone_free(w);
		return -1;
	}
	return 0;
}

/* An item's root in the worker's node array. It stands for a node the
 * graft already has (a stored leaf, or a giver's node counted in the
 * budget), so it takes nothing from the shared budget; its subtree does. */
static int32_t
root_alloc(struct fs_engine *w)
{
	struct fs_par *p = w->par;
	int32_t root;

	w->par = NULL;
	root = fs_node_alloc(w, 1);
	w->par = p;
	return root;
}

/* Counts item it into the worker's node array. 0 or -1 (out of memory). */
static int
count_item(struct par_worker *pw, struct par_item *it)
{
	struct fs_engine *w = &pw->e;
	const struct par_step *last;
	int32_t root;
	fs_count c, u;
	int rc;

	if (it->leaf >= 0) {
		if (leaf_path(pw, pw->p->e->nodes, it->leaf) != 0)
			return -1;
	} else {
		pw->path = it->path;
		pw->len = it->len;
	}
	if (cursor_enter(w, &pw->cur, pw->path, pw->len) != 0 || (root = root_alloc(w)) < 0)
		return -1;
	last = &pw->path[pw->len - 1];
	w->nodes[root].var = last->var;
	w->nodes[root].lo = last->lo;
	w->nodes[root].hi = last->hi;
	pw->nfr = 0;
	rc = fs_count_box(w, last->var, root, &c, &u);
	it->worker = (int32_t)(pw - pw->p->w);
	it->root = root;
	return rc;
}

/* The next item for pw, or NULL when there is none left to it: a given box
 * first (those must be counted), then a leaf, else it waits while another
 * worker counts (and may give). */
static struct par_item *
claim(struct par_worker *pw, int done_one)
{
	struct fs_par *p = pw->p;
	struct par_item *it = NULL;

	pthread_mutex_lock(&p->mu);
	if (done_one)
		p->busy--;
	for (;;) {
		if (pw->rc != 0 || atomic_load(&p->capped))
			break;
		if (p->next_given < p->nitems) {
			it = p->items[p->next_given++];
			break;
		}
		if (pw->e.timed_out)
			break;
		if (p->next_leaf < p->nleaves) {
			it = p->items[p->next_leaf++];
			break;
		}
		if (p->busy == 0)
			break;          /* no one left to give */
		p->idle++;
		set_hungry(p);
		pthread_cond_broadcast(&p->work);
		pthread_cond_wait(&p->work, &p->mu);
		p->idle--;
	}
	if (it != NULL)
		p->busy++;
	else
		p->exited++;
	set_hungry(p);
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	return it;
}

static double
thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *
worker_main(void *arg)
{
	struct par_worker *pw = arg;
	struct fs_par *p = pw->p;
	struct par_item *it;
	int64_t calls = 0, evals = 0;

	for (int done = 0; (it = claim(pw, done)) != NULL; done = 1) {
		pw->rc = count_item(pw, it);
		atomic_fetch_add(&p->calls, (long long)(pw->e.bound_calls - calls));
		atomic_fetch_add(&p->evals, (long long)(pw->e.evals - evals));
		calls = pw->e.bound_calls;
		evals = pw->e.evals;
	}
	cursor_leave(&pw->e, &pw->cur);
	pw->cpu = thread_cpu();
	pthread_mutex_lock(&p->mu);
	p->running--;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Waits for the workers, calling e->progress about every 0.25 s. */
static void
wait_workers(struct fs_par *p, int64_t calls0)
{
	struct fs_engine *e = p->e;

	pthread_mutex_lock(&p->mu);
	while (p->running > 0) {
		struct timespec ts;
		if (e->progress == NULL) {
			pthread_cond_wait(&p->cv, &p->mu);
			continue;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&p->cv, &p->mu, &ts) == ETIMEDOUT) {
			double now = fs_now();
			e->bound_calls = calls0 + atomic_load(&p->calls);
			if (now >= e->next_progress) {
				e->next_progress = now + 0.25;
				pthread_mutex_unlock(&p->mu);
				e->progress(e->progress_ctx, e);
				pthread_mutex_lock(&p->mu);
			}
		}
	}
	pthread_mutex_unlock(&p->mu);
}

/* Starts e->threads workers, waits for them. 0, or -1 when none could
 * start or one ran out of memory. */
static int
run_workers(struct fs_par *p)
{
	struct fs_engine *e = p->e;
	int want = e->threads, rc = 0;
	int64_t calls0 = e->bound_calls;

	p->w = calloc((size_t)want + 1, sizeof *p->w);
	if (p->w == NULL)
		return -1;
	for (p->nw = 0; p->nw < want; p->nw++) {
		p->w[p->nw].p = p;
		if (clone_engine(&p->w[p->nw].e, e, p) != 0)
			break;
	}
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < p->nw; i++)
		if (pthread_create(&p->w[i].thread, NULL, worker_main, &p->w[i]) == 0)
			p->running++;
		else
			p->w[i].rc = 1;         /* not started */
	p->started = p->running;
	pthread_mutex_unlock(&p->mu);
	wait_workers(p, calls0);
	for (int i = 0; i < p->nw; i++) {
		if (p->w[i].rc == 1) {
			p->w[i].rc = 0;
			continue;
		}
		pthread_join(p->w[i].thread, NULL);
		rc |= p->w[i].rc;
		if (p->w[i].e.timed_out && !atomic_load(&p->capped))
			e->timed_out = 1;       /* the deadline passed in a worker */
	}
	e->bound_calls = calls0 + atomic_load(&p->calls);
	e->evals += atomic_load(&p->evals);
	e->steals += p->steals;
	for (int32_t i = p->nleaves; i < p->nitems && !atomic_load(&p->capped); i++)
		if (p->items[i]->worker < 0)
			rc = -1;                /* a given box not counted: only a worker's error leaves one */
	if (p->running != 0 || p->started == 0)
		rc = -1;
	return rc != 0 ? -1 : 0;
}

/* ---- the graft (coordinating thread) ---- */

/* Copies worker w's tree node s (its children first, depth first, a given
 * node from its taker's tree) into node dst of e, inner nodes summed. 0 or
 * -1 (out of memory). */
static int
graft(struct fs_par *p, const struct fs_engine *w, int32_t dst, int32_t s)
{
	struct fs_engine *e = p->e;
	const struct fs_node *x = &w->nodes[s];
	struct fs_node *d;
	fs_count c = 0, u = 0;
	int32_t first = -1;

	if (x->nchildren < 0) {
		const struct par_item *it = p->items[x->first_child];
		return graft(p, &p->w[it->worker].e, dst, it->root);
	}
	if (x->nchildren > 0 && (first = fs_node_alloc(e, x->nchildren)) < 0)
		return -1;
	for (int32_t i = 0; i < x->nchildren; i++) {
		const struct fs_node *k = &w->nodes[x->first_child + i];
		e->nodes[first + i].var = k->var;
		e->nodes[first + i].lo = k->lo;
		e->nodes[first + i].hi = k->hi;
		e->nodes[first + i].parent = dst;
		if (graft(p, w, first + i, x->first_child + i) != 0)
			return -1;
		c = fs_add(c, e->nodes[first + i].count);
		u = fs_add(u, e->nodes[first + i].upper);
	}
	d = &e->nodes[dst];
	d->first_child = first;
	d->nchildren = x->nchildren;
	d->status = x->nchildren > 0 ? (c == u ? FS_MIXED : FS_UNKNOWN) : x->status;
	d->count = x->nchildren > 0 ? c : x->count;
	d->upper = x->nchildren > 0 ? u : x->upper;
	return 0;
}

/* ---- the whole ---- */

/* The undecided leaves under stored node n, in the order of configurations
 * (as count_refine's walk meets them), as items. 0 or -1. */
static int
collect_leaves(struct fs_par *p, int32_t n)
{
	const struct fs_node *x = &p->e->nodes[n];

	if (x->nchildren == 0) {
		struct par_item *it;
		if (x->status != FS_UNKNOWN)
			return 0;
		if ((it = calloc(1, sizeof *it)) == NULL)
			return -1;
		if (item_add(p, it) != 0) {
			free(it);
			return -1;
		}
		it->leaf = n;
		it->c0 = x->count;      /* what a capped count found in it: kept (fs_leaf_merge) */
		it->u0 = x->upper;
		it->worker = it->root = -1;
		p->nleaves++;
		return 0;
	}
	for (int32_t i = 0; i < x->nchildren; i++)
		if (p->e->nodes[x->first_child + i].status == FS_UNKNOWN &&
		    collect_leaves(p, x->first_child + i) != 0)
			return -1;
	return 0;
}

static void
par_free(struct fs_par *p)
{
	for (int i = 0; p->w != NULL && i < p->nw; i++) {
		clone_free(&p->w[i].e);
		free(p->w[i].cur.step);
		free(p->w[i].cur.mark);
		free(p->w[i].scratch);
		free(p->w[i].fr);
	}
	for (int32_t i = 0; i < p->nitems; i++) {
		free(p->items[i]->path);
		free(p->items[i]);
	}
	free(p->w);
	free(p->items);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->work);
}

int
fs_par_refine(struct fs_engine *e)
{
	struct fs_par p;
	double cpu0 = thread_cpu(), busiest = 0;
	long long left;
	int rc;

	if (e->threads <= 1 || e->work_limit > 0 || e->par != NULL || e->expand_only || e->nnodes == 0)
		return 1;
	memset(&p, 0, sizeof p);
	p.e = e;
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	pthread_cond_init(&p.work, NULL);
	atomic_store(&p.force, e->par_force_steals);
	rc = collect_leaves(&p, 0) != 0 ? -1 : 0;
	p.next_given = p.nleaves;
	if (rc == 0 && p.nleaves == 0)
		rc = 1;
	/* the budget: what max_nodes leaves after the tree (the items' roots
	 * take none: root_alloc). It once added one node per item for their
	 * roots, which items a deadline left unclaimed never used: the graft
	 * then outgrew max_nodes and a timed count failed "out of memory while
	 * counting" */
	left = (long long)e->max_nodes - e->nnodes;
	atomic_store(&p.budget, left);
	if (rc == 0 && left < 0)
		rc = 1;
	if (rc == 0)
		rc = run_workers(&p);
	if (rc == 0 && atomic_load(&p.capped))
		rc = 1;
	for (int32_t i = 0; rc == 0 && i < p.nleaves; i++) {
		const struct par_item *it = p.items[i];
		if (it->worker < 0)
			continue;       /* left unclaimed by a deadline: as it was */
		rc = graft(&p, &p.w[it->worker].e, it->leaf, it->root);
		fs_leaf_merge(&e->nodes[it->leaf], it->c0, it->u0);     /* as refine_walk does */
	}
	for (int i = 0; p.w != NULL && i < p.nw; i++)
		busiest = p.w[i].cpu > busiest ? p.w[i].cpu : busiest;
	e->cpu_span += thread_cpu() - cpu0 + busiest;
	par_free(&p);
	return rc;
}
