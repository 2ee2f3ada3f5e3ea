/*
 * fset_jobs.c - a count cut into jobs that other processes count (the
 * service's distributed count, server/srv_dist.c): the undecided leaves of
 * the stored tree, split a level at a time, largest first, until there are
 * enough of them, and listed, largest first; each leaf's box as text (its
 * path from the root); the
 * exact count of such a box in another engine compiled from the same
 * query (fs_jobs_box: projected as it is counted, the data the job
 * commits, fset_jobdata.c); and a job's count grafted back as its leaf's.
 *
 * A count meant for jobs starts depth first only (fs_jobs_start): past its
 * deadline, the boxes left are the siblings along the search's path, few
 * and large, which the split then cuts to the number wanted; the
 * best-first phase of fs_count_all would leave thousands of crumbs, each a
 * job whose claim and commit cost more than its count.
 *
 * Path text: one "var:lo:hi" step per node from the root down to the leaf,
 * joined by '/' (the narrowings fs_enter_path makes), e.g. "0:0:9/0:0:4/3:2:2".
 * Plain text so that an operator can read a job row.
 *
 * Invariants: splitting is fs_count_box's in expand_only mode (fs_split's
 * children), so the tree stays one that fset_progress.c saves and loads.
 * A grafted leaf is childless EMPTY (count 0) or MIXED with count == upper:
 * an exact count whose subtree is not stored, as a tree capped at
 * max_nodes leaves them (fset_nav.c searches such a subtree on demand,
 * fset_sample.c draws in it by rejection). A job's count is the exact count of its box, the
 * number a single process's count finds for that leaf, so the grafted
 * tree's root count is the single-process count.
 */
#include "fset_priv.h"
#include "fset_project.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
fs_jobs_start(struct fs_engine *e, double seconds, struct dn_error *err)
{
	int32_t root = fs_count_root(e);
	fs_count c, u;
	int rc;

	if (root < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	e->deadline = fs_now_plus(seconds);
	e->clock_at = e->bound_calls;
	rc = fs_count_box(e, 0, root, &c, &u);
	e->deadline = 0;
	if (rc != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory while counting");
	e->counted = 1;
	fs_jobs_sum(e);
	return 0;
}

/* Splits undecided leaf n one level (its children decided or undecided
 * leaves). 0, or -1 out of memory. */
static int
expand_leaf(struct fs_engine *e, int32_t n)
{
	int64_t mark = fs_mark(e);
	double deadline = e->deadline;
	fs_count c, u;
	int rc;

	e->deadline = 0;
	e->timed_out = 0;
	e->expand_only = 1;
	rc = fs_enter_path(e, e->nodes, n) != 0 ? -1 : fs_count_box(e, e->nodes[n].var, n, &c, &u);
	e->expand_only = 0;
	e->deadline = deadline;
	fs_rollback(e, mark);
	return rc;
}

static int
is_open_leaf(const struct fs_node *x)
{
	return x->nchildren == 0 && x->status == FS_UNKNOWN;
}

struct job_leaf {
	fs_count upper;
	int32_t node;
};

/* Largest box first, then the order of the tree. */
static int
by_size(const void *a, const void *b)
{
	const struct job_leaf *x = a, *y = b;

	if (x->upper != y->upper)
		return x->upper > y->upper ? -1 : 1;
	return x->node < y->node ? -1 : 1;
}

int
fs_jobs_split(struct fs_engine *e, int want, struct dn_error *err)
{
	uint8_t *stuck;

	if (!e->counted || e->nnodes == 0)
		return dn_error_set(err, DN_EINVAL, NULL, "there is no count to cut into jobs: count first");
	if ((stuck = calloc((size_t)e->max_nodes + 1, 1)) == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory cutting a count into jobs");
	for (;;) {
		int32_t big = -1;
		int open = 0;
		for (int32_t i = 0; i < e->nnodes; i++) {
			if (!is_open_leaf(&e->nodes[i]))
				continue;
			open++;
			if (!stuck[i] && (big < 0 || e->nodes[i].upper > e->nodes[big].upper))
				big = i;
		}
		if (open >= want || big < 0)
			break;
		if (expand_leaf(e, big) != 0) {
			free(stuck);
			fs_jobs_sum(e);
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory cutting a count into jobs");
		}
		/* the cap, or a box that does not split: it stays one job */
		if (is_open_leaf(&e->nodes[big]))
			stuck[big] = 1;
	}
	free(stuck);
	fs_jobs_sum(e);
	return 0;
}

int
fs_jobs_leaves(const struct fs_engine *e, int32_t **leaves, int *n, struct dn_error *err)
{
	struct job_leaf *l = malloc(sizeof *l * ((size_t)e->nnodes + 1));
	int32_t *v = malloc(sizeof *v * ((size_t)e->nnodes + 1));
	int k = 0;

	*leaves = NULL;
	*n = 0;
	if (l == NULL || v == NULL) {
		free(l);
		free(v);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory listing a count's jobs");
	}
	for (int32_t i = 0; i < e->nnodes; i++)
		if (is_open_leaf(&e->nodes[i])) {
			l[k].upper = e->nodes[i].upper;
			l[k++].node = i;
		}
	qsort(l, (size_t)k, sizeof *l, by_size);
	for (int i = 0; i < k; i++)
		v[i] = l[i].node;
	free(l);
	*leaves = v;
	*n = k;
	return 0;
}

char *
fs_jobs_path(const struct fs_engine *e, int32_t node)
{
	size_t cap = 64, len = 0;
	char *s = malloc(cap), step[80];
	int depth = 0;

	if (s == NULL || node < 0 || node >= e->nnodes) {
		free(s);
		return NULL;
	}
	for (int32_t x = node; x >= 0; x = e->nodes[x].parent)
		depth++;
	s[0] = '\0';
	/* root first: the d-th ancestor for d = depth - 1 down to 0 */
	for (int d = depth - 1; d >= 0; d--) {
		int32_t x = node;
		int m;
		for (int i = 0; i < d; i++)
			x = e->nodes[x].parent;
		m = snprintf(step, sizeof step, "%s%d:%lld:%lld", len > 0 ? "/" : "", (int)e->nodes[x].var,
		    (long long)e->nodes[x].lo, (long long)e->nodes[x].hi);
		if (len + (size_t)m + 1 > cap) {
			char *t;
			while (len + (size_t)m + 1 > cap)
				cap *= 2;
			if ((t = realloc(s, cap)) == NULL) {
				free(s);
				return NULL;
			}
			s = t;
		}
		memcpy(s + len, step, (size_t)m + 1);
		len += (size_t)m;
	}
	return s;
}

/* Reads one "var:lo:hi" step at *p (advancing past it and a '/'), checked
 * against the engine's variables. 0, or -1 with err. */
static int
read_step(const struct fs_engine *e, const char **p, int *var, int64_t *lo, int64_t *hi, struct dn_error *err)
{
	long long v, a, b;
	int used = 0;

	if (sscanf(*p, "%lld:%lld:%lld%n", &v, &a, &b, &used) != 3 || used == 0)
		return dn_error_set(err, DN_EINVAL, "path", "\"%.40s\" is not a step var:lo:hi", *p);
	if (v < 0 || v >= e->nvars)
		return dn_error_set(err, DN_EINVAL, "path", "variable %lld is not one of the query's %d", v, e->nvars);
	if (a < 0 || a > b || b >= e->vars[v].n)
		return dn_error_set(err, DN_EINVAL, "path", "positions %lld to %lld are not within variable %lld's "
		    "0 to %lld", a, b, v, (long long)e->vars[v].n - 1);
	*p += used;
	if (**p == '/')
		(*p)++;
	else if (**p != '\0')
		return dn_error_set(err, DN_EINVAL, "path", "unexpected '%c' after a step", **p);
	*var = (int)v;
	*lo = a;
	*hi = b;
	return 0;
}

/* Counts the box of `path`; with bp, projects it as it counts
 * (fs_project_count). As fs_jobs_box. */
static int
job_box(struct fs_engine *e, const char *path, fs_count *count, struct fs_box_proj *bp, struct dn_error *err)
{
	int64_t mark = fs_mark(e), lo = 0, hi = 0;
	const char *p = path;
	int var = -1, rc = 0;
	fs_count c = 0, u = 0;

	if (path == NULL || *path == '\0')
		return dn_error_set(err, DN_EINVAL, "path", "a job's path is empty");
	while (rc == 0 && *p != '\0') {
		rc = read_step(e, &p, &var, &lo, &hi, err);
		if (rc == 0 && fs_narrow(e, var, lo, hi) != 0)
			rc = dn_error_set(err, DN_ENOMEM, NULL, "out of memory entering a job's box");
	}
	if (rc == 0) {
		e->timed_out = 0;
		e->clock_at = e->bound_calls;
		if (bp != NULL)
			rc = fs_project_count(e, var, &c, &u, bp, err);
		else if (fs_count_box(e, var, -1, &c, &u) != 0)
			rc = dn_error_set(err, DN_ENOMEM, NULL, "out of memory counting a job");
	}
	fs_rollback(e, mark);
	if (rc < 0)
		return -1;
	if (rc > 0 || e->timed_out || c != u) {
		if (rc == 0 && bp != NULL)
			fs_box_proj_free(bp);   /* stopped by a callback after the count: no data either */
		return 1;
	}
	*count = c;
	return 0;
}

int
fs_jobs_count(struct fs_engine *e, const char *path, fs_count *count, struct dn_error *err)
{
	return job_box(e, path, count, NULL, err);
}

int
fs_jobs_box(struct fs_engine *e, const char *path, fs_count *count, struct fs_box_proj *bp, struct dn_error *err)
{
	return job_box(e, path, count, bp, err);
}

int
fs_jobs_graft(struct fs_engine *e, int32_t node, fs_count count, struct dn_error *err)
{
	struct fs_node *x;

	if (node < 0 || node >= e->nnodes)
		return dn_error_set(err, DN_EINVAL, "node", "node %d is not in the tree (%d nodes)", (int)node,
		    (int)e->nnodes);
	x = &e->nodes[node];
	if (x->nchildren != 0)
		return dn_error_set(err, DN_EINVAL, "node", "node %d is not a leaf", (int)node);
	if (x->status != FS_UNKNOWN) {
		if (x->count == count && x->upper == count)
			return 0;       /* grafted before: the same count again is no change */
		return dn_error_set(err, DN_EINVAL, "node", "node %d is decided already, with another count", (int)node);
	}
	if (count > x->upper)
		return dn_error_set(err, DN_EINVAL, "count", "a count above node %d's box size", (int)node);
	x->count = x->upper = count;
	x->status = count == 0 ? FS_EMPTY : FS_MIXED;
	return 0;
}

int
fs_jobs_grafted(const struct fs_engine *e, int32_t node)
{
	if (node < 0 || node >= e->nnodes || e->nodes[node].nchildren != 0)
		return -1;
	return e->nodes[node].status != FS_UNKNOWN;
}

void
fs_jobs_sum(struct fs_engine *e)
{
	fs_count_sum(e);
	e->timed_out = e->lower != e->upper;
}
