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
			}
			if (fs_narrow(e, dv, clo[i], chi[i]) != 0)
				return -1;
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

int
fs_count_all(struct fs_engine *e, double seconds, struct dn_error *err)
{
	int32_t root;
	fs_count c = 0, u = 0;
	int d;

	e->nnodes = 0;
	e->timed_out = 0;
	e->deadline = seconds > 0 ? fs_now() + seconds : 0;
	root = alloc_nodes(e, 1);
	if (root < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	d = next_active(e, 0);
	e->nodes[root].var = d < e->nvars ? d : 0;
	e->nodes[root].lo = d < e->nvars ? e->lo[d] : 0;
	e->nodes[root].hi = d < e->nvars ? e->hi[d] : 0;
	if (fs_count_box(e, 0, root, &c, &u) != 0)
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
