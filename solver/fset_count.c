/*
 * fset_count.c - counting the feasible configurations by branch and bound
 * over boxes (see fset.h). The search goes through the variables in engine
 * order; at variable d the box holds vars < d fixed, var d over a range and
 * the later vars over their whole domains. A box whose bound of `feasible`
 * is [1, 1] is counted whole, [0, 0] is pruned, any other is split: small
 * ranges position by position, larger ones in halves (so monotone costs find
 * their thresholds by bisection, and huge integer ranges cost log steps).
 * Once var d is a single position, the search moves to the next active var.
 *
 * The search tree is kept (up to e->max_nodes nodes) with exact counts, for
 * the k-th configuration, pages and uniform samples (fset_nav.c). A deadline
 * turns unexplored boxes into UNKNOWN leaves whose size bounds the count;
 * fs_count_more refines those leaves later, in this engine or in one that
 * loaded the tree (fset_progress.c).
 *
 * Invariants of the stored tree: node 0 is the root; a node's children are
 * contiguous, come after it, and are exactly what fs_split gives for its
 * box; FULL and EMPTY nodes are leaves; an inner node's count and upper are
 * the sums of its children's after every count (fs_count_sum).
 *
 * With e->threads > 1, the undecided leaves are counted on several threads
 * (fset_par.c) into the same stored tree as here; this file's search is
 * what each thread runs on its part, telling it of every split box so that
 * it can give children not yet started to an idle thread.
 */
#include "fset_priv.h"
#include "dn_grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exact feasibility of the current box when every bound var is fixed. */
int
fs_box_exact(struct fs_engine *e)
{
	int64_t *pos = malloc(sizeof *pos * ((size_t)e->nvars + 1));
	int r;

	if (pos == NULL)
		return 0;
	for (int v = 0; v < e->nvars; v++)
		pos[v] = fs_active(e, v) != 0 ? e->lo[v] : -1;
	r = fs_feasible_at(e, pos);
	free(pos);
	return r;
}

int
fs_next_active(const struct fs_engine *e, int d)
{
	while (d < e->nvars && fs_active(e, d) == 0)
		d++;
	return d;
}

int
fs_passthrough_only(const struct fs_engine *e, int d)
{
	/* a nested choice that passes through still picks which of its
	 * options' vars are active, and so the values of the hyperparameters
	 * they set (or their fixed values where none is active) */
	for (int v = d; v < e->nvars; v++)
		if ((e->vars[v].hp >= 0 || e->vars[v].nested_sets) && fs_active(e, v) != 0 && e->lo[v] != e->hi[v])
			return 0;
	return 1;
}

int
fs_split(const struct fs_engine *e, int d, int *dv, int64_t *clo, int64_t *chi)
{
	int64_t lo = e->lo[d], hi = e->hi[d], r = hi - lo + 1;

	if (r == 1) {
		*dv = fs_next_active(e, d + 1);
		if (*dv >= e->nvars)
			return 0;
		clo[0] = e->lo[*dv];    /* the box's range: a caller may have narrowed it */
		chi[0] = e->hi[*dv];
		return 1;
	}
	*dv = d;
	if (r <= FS_ENUMERATE_UP_TO) {
		for (int i = 0; i < (int)r; i++)
			clo[i] = chi[i] = lo + i;
		return (int)r;
	}
	clo[0] = lo;
	chi[0] = lo + (r - 1) / 2;
	clo[1] = chi[0] + 1;
	chi[1] = hi;
	return 2;
}

int32_t
fs_node_alloc(struct fs_engine *e, int n)
{
	if (e->par != NULL && fs_par_take(e, n) != 0)
		return -1;
	if (e->nnodes + n > e->max_nodes) {
		if (e->par != NULL)
			fs_par_take(e, -1);     /* a worker's tree would be incomplete */
		return -1;
	}
	if (e->nnodes + n > e->capnodes &&
	    dn_grow_int(&e->nodes, &e->capnodes, e->nnodes + n < 1024 ? 1024 : e->nnodes + n, sizeof *e->nodes) != 0) {
		if (e->par != NULL)
			fs_par_take(e, -1);     /* a worker's tree would be incomplete */
		return -1;
	}
	e->nnodes += n;
	for (int32_t i = e->nnodes - n; i < e->nnodes; i++)
		e->nodes[i].parent = -1;
	return e->nnodes - n;
}

int
fs_box_decide(struct fs_engine *e, int d, fs_count *size)
{
	int st;

	*size = d < e->nvars ? fs_box_size(e, d) : 1;
	st = fs_bound_status(e);
	if (st == 2 && fs_passthrough_only(e, d)) {
		st = fs_box_exact(e) ? 1 : 0;
		e->evals++;
	} else if (st == 2)
		st = fs_real_status(e);
	return st;
}

/*
 * Counts the current box at var d (vars < d fixed, var d narrowed to its
 * node range). Writes the result into count and upper and, when `node` >= 0,
 * into that stored node (allocating its children). Returns 0 or -1 (out of
 * memory).
 */
int
fs_count_box(struct fs_engine *e, int d, int32_t node, fs_count *count, fs_count *upper)
{
	fs_count size;
	int st;

	d = fs_next_active(e, d);
	st = fs_box_decide(e, d, &size);

	if (node >= 0) {
		e->nodes[node].first_child = -1;
		e->nodes[node].nchildren = 0;
	}
	if (st == 0 || st == 1) {
		if (e->on_decided != NULL)
			e->on_decided(e->decided_ctx, e, d, st);
		*count = st == 1 ? size : 0;
		*upper = *count;
		if (node >= 0) {
			e->nodes[node].status = st == 1 ? FS_FULL : FS_EMPTY;
			e->nodes[node].count = *count;
			e->nodes[node].upper = *upper;
		}
		return 0;
	}
	if (fs_past_deadline(e)) {
		*count = 0;
		*upper = size;
		if (node >= 0) {
			e->nodes[node].status = FS_UNKNOWN;
			e->nodes[node].count = 0;
			e->nodes[node].upper = size;
		}
		return 0;
	}
	/* split: var d's range, or move on when it is a single position */
	{
		int nch, dv;
		int64_t clo[FS_ENUMERATE_UP_TO], chi[FS_ENUMERATE_UP_TO];
		int32_t first = -1;
		fs_count sum = 0, usum = 0;

		nch = fs_split(e, d, &dv, clo, chi);
		if (nch == 0) {
			/* all fixed but the bound stayed open (rounding of reals): decide exactly */
			int f = fs_box_exact(e);
			e->evals++;
			if (e->on_decided != NULL)
				e->on_decided(e->decided_ctx, e, d, f);
			*count = *upper = f ? size : 0;
			if (node >= 0) {
				e->nodes[node].status = f ? FS_FULL : FS_EMPTY;
				e->nodes[node].count = e->nodes[node].upper = *count;
			}
			return 0;
		}
		if (node >= 0)
			first = fs_node_alloc(e, nch);
		/* a worker of a parallel count may give later children away */
		if (e->par != NULL && first >= 0 && fs_par_push(e, node, first, dv, nch, clo, chi) != 0)
			return -1;
		for (int i = 0; i < nch; i++) {
			int64_t mark;
			fs_count c, u;
			int32_t child = first >= 0 ? first + i : -1;
			if (e->par != NULL && first >= 0 && fs_par_child(e, i))
				break;
			mark = fs_mark(e);
			if (child >= 0) {
				e->nodes[child].var = dv;
				e->nodes[child].lo = clo[i];
				e->nodes[child].hi = chi[i];
				e->nodes[child].parent = node;
			}
			if (fs_narrow(e, dv, clo[i], chi[i]) != 0)
				return -1;
			if (e->expand_only) {
				/* one level only: the child is decided or left for later */
				int cst = fs_bound_status(e) == 2 ? fs_real_status(e) : fs_bound_status(e);
				fs_count csize = fs_box_size(e, fs_next_active(e, dv) < e->nvars ? fs_next_active(e, dv) : dv);
				if (fs_next_active(e, dv) >= e->nvars)
					csize = 1;
				c = cst == 1 ? csize : 0;
				u = cst == 0 ? 0 : csize;
				if (child >= 0) {
					e->nodes[child].status = cst == 1 ? FS_FULL : cst == 0 ? FS_EMPTY : FS_UNKNOWN;
					e->nodes[child].count = c;
					e->nodes[child].upper = u;
					e->nodes[child].first_child = -1;
					e->nodes[child].nchildren = 0;
				}
				fs_rollback(e, mark);
				sum = fs_add(sum, c);
				usum = fs_add(usum, u);
				continue;
			}
			if (fs_count_box(e, dv, child, &c, &u) != 0)
				return -1;
			fs_rollback(e, mark);
			sum = fs_add(sum, c);
			usum = fs_add(usum, u);
		}
		if (e->par != NULL && first >= 0)
			fs_par_pop(e);
		*count = sum;
		*upper = usum;
		if (node >= 0) {
			e->nodes[node].status = sum == usum ? FS_MIXED : FS_UNKNOWN;
			e->nodes[node].count = sum;
			e->nodes[node].upper = usum;
			e->nodes[node].first_child = first;
			e->nodes[node].nchildren = first >= 0 ? nch : 0;
		}
	}
	return 0;
}

int
fs_enter_path(struct fs_engine *e, const struct fs_node *nodes, int32_t n)
{
	if (n < 0)
		return 0;
	if (fs_enter_path(e, nodes, nodes[n].parent) != 0)
		return -1;
	return fs_narrow(e, nodes[n].var, nodes[n].lo, nodes[n].hi);
}

void
fs_leaf_merge(struct fs_node *x, fs_count c0, fs_count u0)
{
	if (x->nchildren != 0 || x->status != FS_UNKNOWN)
		return;
	x->count = x->count > c0 ? x->count : c0;
	x->upper = x->upper < u0 ? x->upper : u0;
	x->status = x->count == x->upper ? FS_MIXED : FS_UNKNOWN;
}

static int
enter_node(struct fs_engine *e, int32_t n)
{
	return fs_enter_path(e, e->nodes, n);
}

/* Continuing a count, best-first refinement splits a box a level at a time
 * only while it holds at least 1/BFS_SHARE of what the count leaves open. */
#define BFS_SHARE 64

/* Max-heap of undecided nodes by their size. */
struct heap {
	int32_t *v;
	int32_t n, cap;
};

static int
heap_push(struct heap *h, const struct fs_engine *e, int32_t node)
{
	int32_t i;

	if (h->n == h->cap && dn_grow_int(&h->v, &h->cap, h->n < 1024 ? 1024 : h->n + 1, sizeof *h->v) != 0)
		return -1;
	i = h->n++;
	while (i > 0 && e->nodes[h->v[(i - 1) / 2]].upper < e->nodes[node].upper) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = node;
	return 0;
}

static int32_t
heap_pop(struct heap *h, const struct fs_engine *e)
{
	int32_t top = h->v[0], last = h->v[--h->n], i = 0;

	for (;;) {
		int32_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && e->nodes[h->v[c + 1]].upper > e->nodes[h->v[c]].upper)
			c++;
		if (e->nodes[h->v[c]].upper <= e->nodes[last].upper)
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n > 0)
		h->v[i] = last;
	return top;
}

/* Empties h and fills it with every undecided leaf of the stored tree;
 * *gap: how much they leave open (upper - lower of the whole count). */
static int
heap_fill(struct heap *h, const struct fs_engine *e, fs_count *gap)
{
	h->n = 0;
	*gap = 0;
	for (int32_t i = 0; i < e->nnodes; i++) {
		const struct fs_node *x = &e->nodes[i];
		if (x->nchildren != 0 || x->status != FS_UNKNOWN)
			continue;
		*gap = fs_add(*gap, x->upper - x->count);
		if (heap_push(h, e, i) != 0)
			return -1;
	}
	return 0;
}

/* Counts stored node n's box (depth first, one level only in expand_only
 * mode), storing its subtree under n. 0 or -1 (out of memory). */
static int
count_node(struct fs_engine *e, int32_t n)
{
	int64_t mark = fs_mark(e);
	fs_count c, u, c0 = e->nodes[n].count, u0 = e->nodes[n].upper;
	int rc = 0;

	if (enter_node(e, n) != 0 || fs_count_box(e, e->nodes[n].var, n, &c, &u) != 0)
		rc = -1;
	fs_leaf_merge(&e->nodes[n], c0, u0);
	fs_rollback(e, mark);
	return rc;
}

void
fs_count_sum(struct fs_engine *e)
{
	for (int32_t i = e->nnodes - 1; i >= 0; i--) {
		struct fs_node *x = &e->nodes[i];
		fs_count c = 0, u = 0;
		if (x->nchildren == 0)
			continue;
		for (int k = 0; k < x->nchildren; k++) {
			c = fs_add(c, e->nodes[x->first_child + k].count);
			u = fs_add(u, e->nodes[x->first_child + k].upper);
		}
		x->count = c;
		x->upper = u;
		x->status = c == u ? FS_MIXED : FS_UNKNOWN;
	}
	e->lower = e->nodes[0].count;
	e->upper = e->nodes[0].upper;
}

/*
 * Counts the undecided leaves under stored node n (the current box is n's)
 * depth first, in the order of configurations, narrowing one node at a
 * time: a leaf costs one narrowing, not its depth, however fragmented the
 * tree. Stops at the deadline. 0 or -1 (out of memory).
 */
static int
refine_walk(struct fs_engine *e, int32_t n)
{
	if (e->nodes[n].nchildren == 0) {
		fs_count c, u, c0 = e->nodes[n].count, u0 = e->nodes[n].upper;
		int rc;
		if (e->nodes[n].status != FS_UNKNOWN)
			return 0;
		rc = fs_count_box(e, e->nodes[n].var, n, &c, &u);
		fs_leaf_merge(&e->nodes[n], c0, u0);
		return rc;
	}
	/* e->nodes moves as subtrees grow: indices only */
	for (int i = 0; i < e->nodes[n].nchildren && !fs_past_deadline(e); i++) {
		int32_t ch = e->nodes[n].first_child + i;
		int64_t mark;
		int rc;
		if (e->nodes[ch].status != FS_UNKNOWN)
			continue;
		mark = fs_mark(e);
		rc = fs_narrow(e, e->nodes[ch].var, e->nodes[ch].lo, e->nodes[ch].hi) != 0 ? -1 : refine_walk(e, ch);
		fs_rollback(e, mark);
		if (rc != 0)
			return rc;
	}
	return 0;
}

/*
 * Refines the undecided leaves of the stored tree for `seconds` from t0
 * (0: until the count is exact). Depth first first, in the order of
 * configurations (refine_walk): it shares the bounds of every prefix and
 * is what an exact count costs without a deadline. Only when half the time
 * is gone and leaves remain does it switch to best-first refinement, so
 * that the certified interval narrows everywhere before the deadline: the
 * largest undecided boxes are split a level at a time for a short while
 * (half of what is left, about a second of a long deadline; when share > 0,
 * only boxes holding 1/share of what is open), then counted depth first,
 * largest first, until the deadline. Leaves the tree summed, e->deadline
 * cleared and e->timed_out set when the count is not exact. 0 or -1 (out
 * of memory).
 */
static int
count_refine(struct fs_engine *e, double t0, double seconds, int share)
{
	struct heap h = { NULL, 0, 0 };
	int rc;

	e->timed_out = 0;
	e->deadline = seconds > 0 ? t0 + seconds / 2 : 0;
	e->clock_at = e->bound_calls;
	rc = fs_par_refine(e);          /* on several threads when e->threads > 1 */
	if (rc == 1) {
		int64_t mark = fs_mark(e);
		rc = enter_node(e, 0) != 0 ? -1 : refine_walk(e, 0);
		fs_rollback(e, mark);
	}
	if (rc == 0 && seconds > 0 && e->timed_out) {
		double now = fs_now(), end = t0 + seconds, left = end - now;
		double bfs_end = now + (left / 2 < 0.5 + 0.02 * left ? left / 2 : 0.5 + 0.02 * left);
		e->timed_out = 0;
		e->deadline = end;
		e->clock_at = e->bound_calls;
		fs_count gap;
		rc = heap_fill(&h, e, &gap);
		/* splitting a level costs a path from the root per box: when
		 * continuing, only for boxes that hold much of what is open, not for
		 * the crumbs a long count leaves (1 s slices would lose a quarter) */
		fs_count big = share > 0 ? gap / share : 0;
		e->expand_only = 1;
		while (rc == 0 && h.n > 0 && fs_now() < bfs_end && h.n < 200000 &&
		    e->nodes[h.v[0]].upper - e->nodes[h.v[0]].count >= big && e->nnodes < e->max_nodes - 16) {
			int32_t n = heap_pop(&h, e);
			rc = count_node(e, n);
			for (int i = 0; rc == 0 && i < e->nodes[n].nchildren; i++) {
				int32_t ch = e->nodes[n].first_child + i;
				if (e->nodes[ch].status == FS_UNKNOWN)
					rc = heap_push(&h, e, ch);
			}
		}
		e->expand_only = 0;
		while (rc == 0 && h.n > 0 && !fs_past_deadline(e))
			rc = count_node(e, heap_pop(&h, e));
	}
	free(h.v);
	fs_count_sum(e);
	e->deadline = 0;
	e->timed_out = e->lower != e->upper;
	return rc;
}

int32_t
fs_count_root(struct fs_engine *e)
{
	int32_t root;
	int d;

	fs_jobs_drop(e);
	e->nnodes = 0;
	e->timed_out = 0;
	e->counted = 0;
	if ((root = fs_node_alloc(e, 1)) < 0)
		return -1;
	d = fs_next_active(e, 0);
	e->nodes[root].var = d < e->nvars ? d : 0;
	e->nodes[root].lo = d < e->nvars ? e->lo[d] : 0;
	e->nodes[root].hi = d < e->nvars ? e->hi[d] : 0;
	e->nodes[root].first_child = -1;
	e->nodes[root].nchildren = 0;
	e->nodes[root].status = FS_UNKNOWN;
	e->nodes[root].count = 0;
	e->nodes[root].upper = e->total;
	return root;
}

int
fs_count_all(struct fs_engine *e, double seconds, struct dn_error *err)
{
	int32_t root;

	if ((root = fs_count_root(e)) < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	if (seconds > 0) {
		/* the root as the one undecided leaf, refined within the deadline */
		if (count_refine(e, fs_now(), seconds, 0) != 0)
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory while counting");
	} else {
		fs_count c, u;
		int rc;
		e->deadline = 0;
		rc = fs_par_refine(e);
		if (rc == 1)
			rc = fs_count_box(e, 0, root, &c, &u);
		if (rc != 0)
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory while counting");
		e->lower = e->nodes[root].count;
		e->upper = e->nodes[root].upper;
	}
	e->counted = 1;
	return 0;
}

int
fs_count_more(struct fs_engine *e, double seconds, struct dn_error *err)
{
	if (!e->counted || e->nnodes == 0)
		return dn_error_set(err, DN_EINVAL, NULL, "there is no count to continue: count or load progress first");
	if (e->lower == e->upper) {
		e->timed_out = 0;
		return 0;
	}
	if (count_refine(e, fs_now(), seconds, BFS_SHARE) != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory while counting");
	return 0;
}

void
fs_count_str(fs_count c, char *buf, size_t len)
{
	char tmp[64];
	int n = 0;

	if (len == 0)
		return;
	if (c == FS_COUNT_MAX) {
		snprintf(buf, len, "overflow");
		return;
	}
	do {
		tmp[n++] = (char)('0' + (int)(c % 10));
		c /= 10;
	} while (c != 0 && n < 60);
	for (int i = 0; i < n && (size_t)i < len - 1; i++)
		buf[i] = tmp[n - 1 - i];
	buf[(size_t)n < len - 1 ? (size_t)n : len - 1] = '\0';
}

int
fs_count_parse(const char *s, fs_count *out)
{
	fs_count v = 0;

	if (s == NULL || *s == '\0')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (FS_COUNT_MAX - 9) / 10)
			return -1;
		v = v * 10 + (fs_count)(*s - '0');
	}
	*out = v;
	return 0;
}
