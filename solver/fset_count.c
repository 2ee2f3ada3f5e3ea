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
 * turns unexplored boxes into UNKNOWN nodes whose size bounds the count.
 */
#include "fset_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ENUMERATE_UP_TO 4

/* Exact feasibility of the current box when every bound var is fixed. */
static int
exact_here(struct fs_engine *e)
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

/* The next var at or after d that takes part in the box, or nvars. */
static int
next_active(const struct fs_engine *e, int d)
{
	while (d < e->nvars && fs_active(e, d) == 0)
		d++;
	return d;
}

/* 1 when no var >= d sets a hyperparameter (the bound no longer changes). */
static int
only_passthrough_left(const struct fs_engine *e, int d)
{
	for (int v = d; v < e->nvars; v++)
		if (e->vars[v].hp >= 0 && fs_active(e, v) != 0 && e->lo[v] != e->hi[v])
			return 0;
	return 1;
}

static int32_t
alloc_nodes(struct fs_engine *e, int n)
{
	if (e->nnodes + n > e->max_nodes)
		return -1;
	if (e->nnodes + n > e->capnodes) {
		int32_t cap = e->capnodes ? e->capnodes : 1024;
		struct fs_node *x;
		while (cap < e->nnodes + n)
			cap *= 2;
		x = realloc(e->nodes, sizeof *x * (size_t)cap);
		if (x == NULL)
			return -1;
		e->nodes = x;
		e->capnodes = cap;
	}
	e->nnodes += n;
	for (int32_t i = e->nnodes - n; i < e->nnodes; i++)
		e->nodes[i].parent = -1;
	return e->nnodes - n;
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

	d = next_active(e, d);
	size = d < e->nvars ? fs_box_size(e, d) : 1;
	st = fs_bound_status(e);
	if (st == 2 && only_passthrough_left(e, d)) {
		st = exact_here(e) ? 1 : 0;
		e->evals++;
	}
	if (node >= 0) {
		e->nodes[node].first_child = -1;
		e->nodes[node].nchildren = 0;
	}
	if (st == 0 || st == 1) {
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
		int64_t lo = e->lo[d], hi = e->hi[d], r = hi - lo + 1;
		int nch, dv;
		int64_t clo[ENUMERATE_UP_TO + 1], chi[ENUMERATE_UP_TO + 1];
		int32_t first = -1;
		fs_count sum = 0, usum = 0;

		if (r == 1) {
			nch = 1;
			dv = next_active(e, d + 1);
			if (dv >= e->nvars) {
				/* all fixed but the bound stayed open (rounding of reals): decide exactly */
				int f = exact_here(e);
				e->evals++;
				*count = *upper = f ? size : 0;
				if (node >= 0) {
					e->nodes[node].status = f ? FS_FULL : FS_EMPTY;
					e->nodes[node].count = e->nodes[node].upper = *count;
				}
				return 0;
			}
			clo[0] = e->lo[dv];     /* the box's range: a caller may have narrowed it */
			chi[0] = e->hi[dv];
		} else if (r <= ENUMERATE_UP_TO) {
			nch = (int)r;
			dv = d;
			for (int i = 0; i < nch; i++)
				clo[i] = chi[i] = lo + i;
		} else {
			int64_t m = lo + (r - 1) / 2;
			nch = 2;
			dv = d;
			clo[0] = lo;
			chi[0] = m;
			clo[1] = m + 1;
			chi[1] = hi;
		}
		if (node >= 0)
			first = alloc_nodes(e, nch);
		for (int i = 0; i < nch; i++) {
			int64_t mark = fs_mark(e);
			fs_count c, u;
			int32_t child = first >= 0 ? first + i : -1;
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
				int cst = fs_bound_status(e);
				fs_count csize = fs_box_size(e, next_active(e, dv) < e->nvars ? next_active(e, dv) : dv);
				if (next_active(e, dv) >= e->nvars)
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

/* Narrows the box to node n's (the ranges on its path from the root). */
static int
enter_node(struct fs_engine *e, int32_t n)
{
	int32_t path[512];
	int len = 0;

	for (int32_t x = n; x >= 0 && len < 512; x = e->nodes[x].parent)
		path[len++] = x;
	for (int i = len - 1; i >= 0; i--) {
		const struct fs_node *x = &e->nodes[path[i]];
		if (fs_narrow(e, x->var, x->lo, x->hi) != 0)
			return -1;
	}
	return 0;
}

/* Max-heap of undecided nodes by their size. */
struct heap {
	int32_t *v;
	int32_t n, cap;
};

static int
heap_push(struct heap *h, const struct fs_engine *e, int32_t node)
{
	int32_t i;

	if (h->n == h->cap) {
		int32_t cap = h->cap ? 2 * h->cap : 1024;
		int32_t *v = realloc(h->v, sizeof *v * (size_t)cap);
		if (v == NULL)
			return -1;
		h->v = v;
		h->cap = cap;
	}
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

/*
 * With a deadline, the largest undecided boxes are split first (a level at
 * a time), so that the certified interval [lower, upper] narrows everywhere
 * before any corner is refined to the end; after a short while (half of a
 * short deadline, about a second of a long one), or once the frontier is
 * large, each remaining box is counted depth first, largest first, until the
 * deadline. Counts are then summed up the tree.
 */
static int
count_best_first(struct fs_engine *e, int32_t root, double t0, double seconds)
{
	struct heap h = { NULL, 0, 0 };
	int rc = 0;

	if (e->nodes[root].status == FS_UNKNOWN && heap_push(&h, e, root) != 0)
		return -1;
	/* breadth first for a short while (a second on a long deadline), then depth first,
	 * which shares the work of every prefix and is several times faster */
	double bfs = seconds / 2 < 0.5 + 0.02 * seconds ? seconds / 2 : 0.5 + 0.02 * seconds;
	e->expand_only = 1;
	while (h.n > 0 && fs_now() < t0 + bfs && h.n < 200000 && e->nnodes < e->max_nodes - 16) {
		int32_t n = heap_pop(&h, e);
		int64_t mark = fs_mark(e);
		fs_count c, u;
		if (enter_node(e, n) != 0 || fs_count_box(e, e->nodes[n].var, n, &c, &u) != 0) {
			rc = -1;
			break;
		}
		fs_rollback(e, mark);
		for (int i = 0; i < e->nodes[n].nchildren; i++) {
			int32_t ch = e->nodes[n].first_child + i;
			if (e->nodes[ch].status == FS_UNKNOWN && heap_push(&h, e, ch) != 0) {
				rc = -1;
				break;
			}
		}
	}
	e->expand_only = 0;
	while (rc == 0 && h.n > 0 && !fs_past_deadline(e)) {
		int32_t n = heap_pop(&h, e);
		int64_t mark = fs_mark(e);
		fs_count c, u;
		if (enter_node(e, n) != 0 || fs_count_box(e, e->nodes[n].var, n, &c, &u) != 0)
			rc = -1;
		fs_rollback(e, mark);
	}
	free(h.v);
	/* children come after their parents: sum bottom-up */
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
	return rc;
}

int
fs_count_all(struct fs_engine *e, double seconds, struct dn_error *err)
{
	int32_t root;
	fs_count c = 0, u = 0;
	int d;
	double t0 = fs_now();

	e->nnodes = 0;
	e->timed_out = 0;
	e->deadline = seconds > 0 ? t0 + seconds : 0;
	root = alloc_nodes(e, 1);
	if (root < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	d = next_active(e, 0);
	e->nodes[root].var = d < e->nvars ? d : 0;
	e->nodes[root].lo = d < e->nvars ? e->lo[d] : 0;
	e->nodes[root].hi = d < e->nvars ? e->hi[d] : 0;
	if (seconds > 0) {
		/* the root alone first, then the frontier, largest boxes first */
		e->expand_only = 1;
		e->nodes[root].status = FS_UNKNOWN;
		e->nodes[root].upper = e->total;
		e->expand_only = 0;
		if (count_best_first(e, root, t0, seconds) != 0)
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory while counting");
		c = e->nodes[root].count;
		u = e->nodes[root].upper;
		if (e->nodes[root].nchildren == 0 && e->nodes[root].status == FS_UNKNOWN) {
			/* nothing was expanded (no time at all) */
			c = 0;
			u = e->total;
		}
	} else if (fs_count_box(e, 0, root, &c, &u) != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory while counting");
	e->lower = c;
	e->upper = u;
	e->counted = 1;
	e->deadline = 0;
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
