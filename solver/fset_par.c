/*
 * fset_par.c - counting the undecided leaves of the stored search tree on
 * several threads (e->threads > 1), leaving the tree one thread leaves.
 *
 * Split. The coordinating thread (the caller's) expands the leaves breadth
 * first into a separate "top" tree, deciding each box exactly as
 * fs_count_box does (fs_box_decide, fs_split, fs_box_exact), until at least
 * PAR_ITEMS_PER_THREAD boxes per thread are pending or none is (a small
 * tree is then counted whole). The pending boxes are the work items.
 *
 * Count. Each worker thread owns a clone of the engine: the immutable parts
 * (query, graph, tapes, tables, check structures, the stored tree, which no
 * one writes while workers run) are shared, the mutable ones (the box
 * lo/hi, intervals iv/hpiv, stamps, undo trail, scratch point/config, the
 * continuous vars' cells, its node array and statistics) are its own. It
 * claims items through one atomic index, the largest boxes first, enters
 * the item's box from the shared base box and counts it with fs_count_box
 * into its own node array. Work stealing is this fine initial split with
 * dynamic claiming, rather than splitting a running subtree further: a
 * subtree's node layout must be the depth-first one (below), which a
 * subtree split mid-count would have to stitch back. Items are claimed in
 * the order of configurations, not largest first: a thread's consecutive
 * items are then near each other in the tree and it enters each from the
 * last one's box (par_cursor: back to the shared prefix, then down),
 * which on a heavy graph (ResNet-50's 42k nodes, a bound of milliseconds)
 * is what keeps the split's overhead below the work; box sizes, the only
 * measure of an item known in advance, say little of its work anyway
 * (most of a large box is often decided at once).
 *
 * Graft. Once the workers are done, the leaves' subtrees are appended to
 * e->nodes in the order of the leaves, each subtree's children blocks in
 * depth-first order (top nodes and the workers' trees read through one
 * recursion): exactly where one thread's depth-first count allocates them,
 * so the stored tree is the same node for node (indices and contents), and
 * with it the k-th configuration, pages, cursors, samples and saved
 * progress. Statistics (bound_calls, evals) differ: the expansion bounds
 * boxes twice.
 *
 * The cap. One thread stores children blocks greedily up to e->max_nodes
 * and counts the rest without storing them. Rather than replay that rule
 * across threads, the workers share one budget, what e->max_nodes leaves
 * after the tree and the top: when it is spent (or a worker runs out of
 * memory), every worker stops, nothing is grafted, and the caller counts
 * on one thread; so a count whose tree outgrows max_nodes costs the time
 * parallel counting took to fill it, and then the single-threaded count.
 *
 * Deadlines. The workers take the engine's deadline; past it, their boxes
 * become undecided leaves as on one thread, unclaimed items stay undecided
 * with their box size as upper bound, and e->timed_out is set: a valid
 * tree whose bounds are correct, not the one thread's (whose timing
 * differs anyway). With a work limit (deterministic slices), counting stays
 * on one thread. The progress callback runs on the coordinating thread only,
 * about every 0.25 s, with e->bound_calls including the items done.
 */
#include "fset_priv.h"
#include "dn_grow.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAR_ITEMS_PER_THREAD 32
#define PAR_TOP_MAX (1 << 20)   /* top nodes below the roots: the expansion stops there */

/* A box of the split: a leaf of the stored tree (parent -1, `leaf` its
 * node) or a child in fs_split's order; decided (FULL, EMPTY), expanded
 * (n children at first), or pending (a work item, or not yet reached). */
struct par_top {
	fs_count count, upper;  /* decided: the count; pending: upper = the box size */
	int64_t lo, hi;
	int32_t var, parent, leaf, first, n, item;
	uint8_t status;
};

struct par_item {
	int32_t top;
	int32_t worker, root;   /* where its subtree was counted; worker -1: never claimed */
};

/* The top path a thread's box is narrowed to, with the mark before each
 * step. */
struct par_cursor {
	int32_t *top, *chain;
	int64_t *mark;
	int n, cap;
};

struct par_worker {
	struct fs_par *p;
	struct fs_engine e;
	struct par_cursor cur;
	double cpu;                     /* its thread's CPU seconds */
	pthread_t thread;
	int rc;
};

struct fs_par {
	struct fs_engine *e;            /* the coordinating engine */
	struct par_top *top;
	int32_t ntop, captop, nroots;
	struct par_item *items;
	int32_t nitems;
	atomic_int next;                /* the next item to claim */
	atomic_llong budget;            /* nodes the workers may still store */
	atomic_int capped;              /* a worker's tree is incomplete: fall back */
	atomic_llong calls, evals;      /* the workers' statistics, per item done */
	struct par_worker *w;
	int nw;
	pthread_mutex_t mu;
	pthread_cond_t cv;
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
	return -1;
}

/* ---- the split (coordinating thread) ---- */

static int32_t
top_add(struct fs_par *p, int n)
{
	if (p->ntop + n > p->captop && dn_grow_int(&p->top, &p->captop, p->ntop + n, sizeof *p->top) != 0)
		return -1;
	memset(p->top + p->ntop, 0, sizeof *p->top * (size_t)n);
	p->ntop += n;
	return p->ntop - n;
}

/* Narrows e's box to top node t's from the box cur holds: back to the
 * deepest top node the two paths share, then down t's path (a stored
 * leaf's whole path from the root for a top root). Consecutive boxes in
 * the order of configurations share most of their paths, so entering one
 * costs a narrowing or two, not its depth. 0 or -1 (out of memory). */
static int
cursor_enter(struct fs_engine *e, const struct fs_par *p, struct par_cursor *cur, int32_t t)
{
	int len = 0, k = 0;

	for (int32_t x = t; x >= 0; x = p->top[x].parent)
		len++;
	if (len > cur->cap) {
		int32_t *a = realloc(cur->top, sizeof *a * (size_t)len), *c;
		int64_t *m;
		if (a == NULL)
			return -1;
		cur->top = a;
		if ((c = realloc(cur->chain, sizeof *c * (size_t)len)) == NULL)
			return -1;
		cur->chain = c;
		if ((m = realloc(cur->mark, sizeof *m * (size_t)len)) == NULL)
			return -1;
		cur->mark = m;
		cur->cap = len;
	}
	k = len;
	for (int32_t x = t; x >= 0; x = p->top[x].parent)
		cur->chain[--k] = x;
	while (k < cur->n && k < len && cur->top[k] == cur->chain[k])
		k++;
	if (k < cur->n) {
		fs_rollback(e, cur->mark[k]);
		cur->n = k;
	}
	for (; k < len; k++) {
		const struct par_top *x = &p->top[cur->chain[k]];
		cur->mark[k] = fs_mark(e);
		cur->top[k] = cur->chain[k];
		cur->n = k + 1;
		if (x->parent < 0 ? fs_enter_path(e, p->e->nodes, x->leaf) : fs_narrow(e, x->var, x->lo, x->hi))
			return -1;
	}
	return 0;
}

/* Back to the box before cur's first node. */
static void
cursor_leave(struct fs_engine *e, struct par_cursor *cur)
{
	if (cur->n > 0)
		fs_rollback(e, cur->mark[0]);
	cur->n = 0;
}

static void
cursor_free(struct par_cursor *cur)
{
	free(cur->top);
	free(cur->chain);
	free(cur->mark);
	memset(cur, 0, sizeof *cur);
}

/* Expands pending top node t (its box entered) as fs_count_box would: a
 * decided leaf, an undecided one past the deadline (left pending), or
 * children (pending, with their box sizes). 0, 1 past the deadline or the
 * top full (t stays pending), -1 out of memory. */
static int
expand(struct fs_par *p, int32_t t)
{
	struct fs_engine *e = p->e;
	int64_t clo[FS_ENUMERATE_UP_TO], chi[FS_ENUMERATE_UP_TO];
	int d = fs_next_active(e, p->top[t].var), nch, dv, st;
	fs_count size;
	int32_t first;

	st = fs_box_decide(e, d, &size);
	if (st == 2 && fs_past_deadline(e))
		return 1;
	nch = st == 2 ? fs_split(e, d, &dv, clo, chi) : 0;
	if (st == 2 && nch == 0) {
		st = fs_box_exact(e) ? 1 : 0;
		e->evals++;
	}
	if (st != 2) {
		p->top[t].status = st == 1 ? FS_FULL : FS_EMPTY;
		p->top[t].count = p->top[t].upper = st == 1 ? size : 0;
		return 0;
	}
	if (p->ntop - p->nroots + nch > PAR_TOP_MAX)
		return 1;
	if ((first = top_add(p, nch)) < 0)
		return -1;
	p->top[t].first = first;
	p->top[t].n = nch;
	for (int i = 0; i < nch; i++) {
		struct par_top *c = &p->top[first + i];
		int64_t lo = e->lo[dv], hi = e->hi[dv];
		int cd;
		c->var = dv;
		c->lo = clo[i];
		c->hi = chi[i];
		c->parent = t;
		c->leaf = -1;
		c->item = -1;
		c->status = FS_UNKNOWN;
		/* the child's size: its range set without bounding (sizes need none) */
		e->lo[dv] = clo[i];
		e->hi[dv] = chi[i];
		cd = fs_next_active(e, dv);
		c->upper = cd < e->nvars ? fs_box_size(e, cd) : 1;
		e->lo[dv] = lo;
		e->hi[dv] = hi;
	}
	return 0;
}

/* Numbers the pending top nodes under t as items, in the order of
 * configurations (depth first). */
static void
number_items(struct fs_par *p, int32_t t, const uint8_t *pending)
{
	if (pending[t]) {
		p->items[p->nitems].top = t;
		p->items[p->nitems].worker = p->items[p->nitems].root = -1;
		p->top[t].item = p->nitems++;
		return;
	}
	for (int32_t i = 0; i < p->top[t].n; i++)
		number_items(p, p->top[t].first + i, pending);
}

/* Breadth first from the roots until enough boxes are pending; those become
 * the items. 0 or -1 (out of memory). */
static int
split(struct fs_par *p)
{
	struct fs_engine *e = p->e;
	int32_t *queue = malloc(sizeof *queue * ((size_t)p->nroots + PAR_TOP_MAX + 1)), head = 0, tail = 0;
	struct par_cursor cur = { NULL, NULL, NULL, 0, 0 };
	uint8_t *pending;
	int rc = 0, want = PAR_ITEMS_PER_THREAD * e->threads;

	if (queue == NULL)
		return -1;
	for (int32_t r = 0; r < p->nroots; r++)
		queue[tail++] = r;
	while (rc == 0 && head < tail && tail - head < want) {
		int32_t t = queue[head];
		rc = cursor_enter(e, p, &cur, t) != 0 ? -1 : expand(p, t);
		if (rc != 0)
			break;
		head++;
		for (int i = 0; i < p->top[t].n; i++)
			queue[tail++] = p->top[t].first + i;
	}
	cursor_leave(e, &cur);
	cursor_free(&cur);
	if (rc == 1)
		rc = 0;         /* past the deadline, or the top is full: what is pending is the work */
	p->items = malloc(sizeof *p->items * ((size_t)(tail - head) + 1));
	pending = calloc((size_t)p->ntop + 1, 1);
	if (rc != 0 || p->items == NULL || pending == NULL) {
		free(queue);
		free(pending);
		return -1;
	}
	for (int32_t i = head; i < tail; i++)
		pending[queue[i]] = 1;
	for (int32_t r = 0; r < p->nroots; r++)
		number_items(p, r, pending);
	free(queue);
	free(pending);
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
	w->nnodes = w->capnodes = 0;
	w->undo = NULL;
	w->nundo = w->capundo = 0;
	w->bound_calls = w->evals = 0;
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
 * graft already has (a stored leaf, or a top node counted in the budget),
 * so it takes nothing from the shared budget; its subtree does. */
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
	const struct par_top *x = &pw->p->top[it->top];
	int32_t root;
	fs_count c, u;
	int rc = 0;

	if (cursor_enter(w, pw->p, &pw->cur, it->top) != 0)
		rc = -1;
	else if ((root = root_alloc(w)) >= 0) {
		w->nodes[root].var = x->var;
		w->nodes[root].lo = x->lo;
		w->nodes[root].hi = x->hi;
		rc = fs_count_box(w, x->var, root, &c, &u);
		it->worker = (int32_t)(pw - pw->p->w);
		it->root = root;
	}
	return rc;
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
	int64_t calls = 0, evals = 0;

	while (pw->rc == 0 && !pw->e.timed_out && !atomic_load(&p->capped)) {
		int k = atomic_fetch_add(&p->next, 1);
		if (k >= p->nitems)
			break;
		pw->rc = count_item(pw, &p->items[k]);
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

/* Starts up to e->threads workers, waits for them. 0, or -1 when none
 * could start or one ran out of memory. */
static int
run_workers(struct fs_par *p)
{
	struct fs_engine *e = p->e;
	int want = e->threads < p->nitems ? e->threads : p->nitems, rc = 0;
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
	if (p->running != 0 || p->nw == 0)
		rc = -1;
	return rc != 0 ? -1 : 0;
}

/* ---- the graft (coordinating thread) ---- */

/* Writes a node's results, and its children block allocated at `first`. */
static void
set_node(struct fs_engine *e, int32_t dst, uint8_t status, fs_count c, fs_count u, int32_t first, int32_t n)
{
	struct fs_node *x = &e->nodes[dst];

	x->status = status;
	x->count = c;
	x->upper = u;
	x->first_child = n > 0 ? first : -1;
	x->nchildren = n;
}

/* Copies worker tree node s of w (its children first, depth first) into
 * node dst of e. 0 or -1 (out of memory). */
static int
graft_local(struct fs_engine *e, const struct fs_engine *w, int32_t dst, int32_t s)
{
	const struct fs_node *x = &w->nodes[s];
	int32_t first = -1;

	if (x->nchildren > 0 && (first = fs_node_alloc(e, x->nchildren)) < 0)
		return -1;
	set_node(e, dst, x->status, x->count, x->upper, first, x->nchildren);
	for (int32_t i = 0; i < x->nchildren; i++) {
		const struct fs_node *c = &w->nodes[x->first_child + i];
		e->nodes[first + i].var = c->var;
		e->nodes[first + i].lo = c->lo;
		e->nodes[first + i].hi = c->hi;
		e->nodes[first + i].parent = dst;
		if (graft_local(e, w, first + i, x->first_child + i) != 0)
			return -1;
	}
	return 0;
}

/* The same for top node t: a worker's subtree, a leaf, or its children. */
static int
graft_top(struct fs_par *p, int32_t dst, int32_t t)
{
	struct fs_engine *e = p->e;
	const struct par_top *x = &p->top[t];
	fs_count c = 0, u = 0;
	int32_t first = -1;

	if (x->item >= 0 && p->items[x->item].worker >= 0) {
		if (graft_local(e, &p->w[p->items[x->item].worker].e, dst, p->items[x->item].root) != 0)
			return -1;
		if (x->parent < 0)
			fs_leaf_merge(&e->nodes[dst], x->count, x->upper);      /* as refine_walk does */
		return 0;
	}
	if (x->n == 0) {
		set_node(e, dst, x->status, x->count, x->upper, -1, 0);
		return 0;
	}
	if ((first = fs_node_alloc(e, x->n)) < 0)
		return -1;
	for (int32_t i = 0; i < x->n; i++) {
		const struct par_top *k = &p->top[x->first + i];
		e->nodes[first + i].var = k->var;
		e->nodes[first + i].lo = k->lo;
		e->nodes[first + i].hi = k->hi;
		e->nodes[first + i].parent = dst;
		if (graft_top(p, first + i, x->first + i) != 0)
			return -1;
		c = fs_add(c, e->nodes[first + i].count);
		u = fs_add(u, e->nodes[first + i].upper);
	}
	set_node(e, dst, c == u ? FS_MIXED : FS_UNKNOWN, c, u, first, x->n);
	return 0;
}

/* ---- the whole ---- */

/* The undecided leaves under stored node n, in the order of configurations
 * (as count_refine's walk meets them), as top roots. 0 or -1. */
static int
collect_leaves(struct fs_par *p, int32_t n)
{
	const struct fs_node *x = &p->e->nodes[n];

	if (x->nchildren == 0) {
		int32_t t;
		if (x->status != FS_UNKNOWN)
			return 0;
		if ((t = top_add(p, 1)) < 0)
			return -1;
		p->top[t].var = x->var;
		p->top[t].lo = x->lo;
		p->top[t].hi = x->hi;
		p->top[t].parent = -1;
		p->top[t].leaf = n;
		p->top[t].item = -1;
		p->top[t].count = x->count;     /* what a capped count found in it: kept (fs_leaf_merge) */
		p->top[t].upper = x->upper;
		p->top[t].status = FS_UNKNOWN;
		p->nroots++;
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
		cursor_free(&p->w[i].cur);
	}
	free(p->w);
	free(p->top);
	free(p->items);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
}

int
fs_par_refine(struct fs_engine *e)
{
	struct fs_par p;
	double cpu0 = thread_cpu(), busiest = 0;
	int rc;

	if (e->threads <= 1 || e->work_limit > 0 || e->par != NULL || e->expand_only || e->nnodes == 0)
		return 1;
	memset(&p, 0, sizeof p);
	p.e = e;
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	rc = collect_leaves(&p, 0) != 0 || split(&p) != 0 ? -1 : 0;
	if (rc == 0 && p.nroots == 0)
		rc = 1;
	if (rc == 0) {
		/* the budget: what max_nodes leaves after the tree and the top's
		 * non-root nodes (the items' roots take none: root_alloc). It once
		 * added one node per item for their roots, which items a deadline
		 * left unclaimed never used: the graft then outgrew max_nodes and a
		 * timed count failed "out of memory while counting" */
		long long left = (long long)e->max_nodes - e->nnodes - (p.ntop - p.nroots);
		atomic_store(&p.budget, left);
		if (left < 0)
			rc = 1;
	}
	if (rc == 0 && p.nitems > 0)
		rc = run_workers(&p);
	if (rc == 0 && atomic_load(&p.capped))
		rc = 1;
	for (int32_t r = 0; rc == 0 && r < p.nroots; r++)
		rc = graft_top(&p, p.top[r].leaf, r);
	for (int i = 0; p.w != NULL && i < p.nw; i++)
		busiest = p.w[i].cpu > busiest ? p.w[i].cpu : busiest;
	e->cpu_span += thread_cpu() - cpu0 + busiest;
	par_free(&p);
	return rc;
}
