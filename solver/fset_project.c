/*
 * fset_project.c - what the counted search tree says about single
 * hyperparameters: the values that occur in at least one feasible
 * configuration (the reduced search space, written back in NNI's format),
 * and the largest feasible value of a hyperparameter, alone or for each
 * value of another one.
 *
 * Every stored FULL box contributes its ranges; boxes beyond the stored tree
 * are searched again, except a distributed count's job boxes whose job
 * sent its box's projection along (fs_project_count, grafted by
 * fset_jobdata.c: merged as they are, the same marks a walk of the box
 * makes); UNKNOWN boxes (a deadline) make values "possible"
 * rather than certain, and the answer says so.
 */
#include "dn_grow.h"
#include "fset_priv.h"
#include "fset_project.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Ranges of positions present for each var, as difference arrays; per
 * continuous var the hull of the finest cells left open (fset_real.c). */
struct marks {
	int32_t **diff[2];      /* [0] certain, [1] possible; per var n + 1 entries */
	int64_t *maxpos[2];
	int64_t *cell_lo, *cell_hi;
};

/* Widens the continuous vars' hulls by the current box's open cells. */
static int
hull_box(struct fs_engine *e, struct marks *m)
{
	for (int c = 0; c < e->ncvars; c++)
		if (fs_real_hull(e, c, &m->cell_lo[c], &m->cell_hi[c]) != 0)
			return -1;
	return 0;
}

/* Whether var c can take part in the box at var d with var d over [lo, hi]. */
static int
present_in_box(const struct fs_engine *e, int c, int d)
{
	int v = c;

	for (int a = e->vars[v].parent; a >= 0; v = a, a = e->vars[a].parent) {
		int64_t want = e->vars[v].active_pos;
		if (a < d) {
			if (e->lo[a] != e->hi[a] || e->lo[a] != want)
				return 0;
		} else if (a == d) {
			if (want < e->lo[d] || want > e->hi[d])
				return 0;
		}
	}
	return 1;
}

static void
mark_box(struct fs_engine *e, struct marks *m, int d, int which)
{
	for (int v = 0; v < e->nvars; v++) {
		int64_t lo, hi;
		if (!present_in_box(e, v, d))
			continue;
		if (v < d) {
			lo = hi = e->lo[v];
		} else if (v == d) {
			lo = e->lo[v];
			hi = e->hi[v];
		} else {
			lo = 0;
			hi = e->vars[v].n - 1;
		}
		if (m->diff[which][v] != NULL) {
			m->diff[which][v][lo]++;
			m->diff[which][v][hi + 1]--;
		}
		if (hi > m->maxpos[which][v])
			m->maxpos[which][v] = hi;
	}
}

static int walk(struct fs_engine *e, struct marks *m, int d, int32_t node);

/* A job's projection of its box (fs_box_proj) into m, as walking its
 * subtree would have marked it. 0. */
static int
merge_box(const struct fs_engine *e, struct marks *m, const struct fs_box_proj *bp)
{
	for (int v = 0; v < e->nvars; v++) {
		for (int r = 0; m->diff[0][v] != NULL && r < bp->nruns[v]; r++) {
			m->diff[0][v][bp->runs[v][2 * r]]++;
			m->diff[0][v][bp->runs[v][2 * r + 1] + 1]--;
		}
		if (bp->maxpos[v] > m->maxpos[0][v])
			m->maxpos[0][v] = bp->maxpos[v];
	}
	for (int c = 0; c < e->ncvars; c++) {
		if (bp->cell_lo[c] > bp->cell_hi[c])
			continue;
		if (m->cell_lo[c] > m->cell_hi[c] || bp->cell_lo[c] < m->cell_lo[c])
			m->cell_lo[c] = bp->cell_lo[c];
		if (bp->cell_hi[c] > m->cell_hi[c])
			m->cell_hi[c] = bp->cell_hi[c];
	}
	return 0;
}

/* Marks the current box (every bound var fixed) when it is feasible. */
static int
mark_if_feasible(struct fs_engine *e, struct marks *m, int d)
{
	int64_t *pos = malloc(sizeof *pos * ((size_t)e->nvars + 1));

	if (pos == NULL)
		return -1;
	for (int v = 0; v < e->nvars; v++)
		pos[v] = fs_active(e, v) != 0 ? e->lo[v] : -1;
	if (fs_feasible_at(e, pos))
		mark_box(e, m, d, 0);
	free(pos);
	/* a configuration off the grid may still fit between its values */
	return hull_box(e, m);
}

/* Searches a box beyond the stored tree, marking its feasible sub-boxes. */
static int
walk_dynamic(struct fs_engine *e, struct marks *m, int d)
{
	int st;
	int64_t lo, hi, r;

	while (d < e->nvars && fs_active(e, d) == 0)
		d++;
	st = fs_bound_status(e);
	if (st == 2 && d < e->nvars)
		st = fs_real_status(e);
	if (st == 0)
		return 0;
	if (st == 1) {
		mark_box(e, m, d, 0);
		return hull_box(e, m);
	}
	if (d >= e->nvars)
		return mark_if_feasible(e, m, d);
	lo = e->lo[d];
	hi = e->hi[d];
	r = hi - lo + 1;
	if (r == 1) {
		int dv = d + 1;
		while (dv < e->nvars && fs_active(e, dv) == 0)
			dv++;
		if (dv >= e->nvars)
			return mark_if_feasible(e, m, e->nvars);
		return walk_dynamic(e, m, dv);
	}
	for (int half = 0; half < 2; half++) {
		int64_t mark = fs_mark(e), a, b;
		int rc;
		if (r <= 4) {
			for (int64_t p = lo; p <= hi && half == 0; p++) {
				int64_t mk = fs_mark(e);
				if (fs_narrow(e, d, p, p) != 0)
					return -1;
				rc = walk_dynamic(e, m, d);
				fs_rollback(e, mk);
				if (rc != 0)
					return rc;
			}
			return 0;
		}
		a = half == 0 ? lo : lo + (r - 1) / 2 + 1;
		b = half == 0 ? lo + (r - 1) / 2 : hi;
		if (fs_narrow(e, d, a, b) != 0)
			return -1;
		rc = walk_dynamic(e, m, d);
		fs_rollback(e, mark);
		if (rc != 0)
			return rc;
	}
	return 0;
}

static int
walk(struct fs_engine *e, struct marks *m, int d, int32_t node)
{
	const struct fs_node *n = &e->nodes[node];

	while (d < e->nvars && fs_active(e, d) == 0)
		d++;
	switch (n->status) {
	case FS_EMPTY:
		/* no grid value fits, but one between them may (continuous vars) */
		return hull_box(e, m);
	case FS_FULL:
		mark_box(e, m, d, 0);
		return hull_box(e, m);
	default:
		break;
	}
	if (n->nchildren == 0) {
		const struct fs_box_proj *bp = fs_jobs_proj(e, node);
		if (bp != NULL)
			return merge_box(e, m, bp);
		if (n->status == FS_UNKNOWN && n->count == 0) {
			mark_box(e, m, d, 1);
			return hull_box(e, m);
		}
		return walk_dynamic(e, m, d);
	}
	for (int i = 0; i < e->nodes[node].nchildren; i++) {
		int32_t c = e->nodes[node].first_child + i;
		int64_t mark = fs_mark(e);
		int rc;
		if (fs_narrow(e, e->nodes[c].var, e->nodes[c].lo, e->nodes[c].hi) != 0)
			return -1;
		rc = walk(e, m, e->nodes[c].var, c);
		fs_rollback(e, mark);
		if (rc != 0)
			return rc;
	}
	return 0;
}

void
fs_projection_free(struct fs_projection *p)
{
	if (p->present != NULL)
		for (int v = 0; v < p->nvars; v++) {
			free(p->present[v]);
			free(p->possible[v]);
		}
	free(p->present);
	free(p->possible);
	free(p->max_certain);
	free(p->max_possible);
	free(p->real_lo);
	free(p->real_hi);
	memset(p, 0, sizeof *p);
}

/* Frees what marks_new allocated. */
static void
marks_free(const struct fs_engine *e, struct marks *m)
{
	for (int w = 0; w < 2; w++) {
		for (int v = 0; m->diff[w] != NULL && v < e->nvars; v++)
			free(m->diff[w][v]);
		free(m->diff[w]);
		free(m->maxpos[w]);
	}
	free(m->cell_lo);
	free(m->cell_hi);
	memset(m, 0, sizeof *m);
}

/* Empty marks for e's vars (huge grids keep only their largest position).
 * 0, or -1 out of memory (nothing left allocated). */
static int
marks_new(const struct fs_engine *e, struct marks *m)
{
	memset(m, 0, sizeof *m);
	for (int w = 0; w < 2; w++) {
		m->diff[w] = calloc((size_t)e->nvars + 1, sizeof *m->diff[w]);
		m->maxpos[w] = calloc((size_t)e->nvars + 1, sizeof *m->maxpos[w]);
	}
	m->cell_lo = calloc((size_t)e->ncvars + 1, sizeof *m->cell_lo);
	m->cell_hi = calloc((size_t)e->ncvars + 1, sizeof *m->cell_hi);
	if (!m->diff[0] || !m->diff[1] || !m->maxpos[0] || !m->maxpos[1] || !m->cell_lo || !m->cell_hi)
		goto oom;
	for (int c = 0; c < e->ncvars; c++) {
		m->cell_lo[c] = 1;      /* empty */
		m->cell_hi[c] = 0;
	}
	for (int v = 0; v < e->nvars; v++) {
		m->maxpos[0][v] = m->maxpos[1][v] = -1;
		if (e->vars[v].n > FS_PROJECT_MARKABLE)
			continue;
		for (int w = 0; w < 2; w++)
			if ((m->diff[w][v] = calloc((size_t)e->vars[v].n + 1, sizeof(int32_t))) == NULL)
				goto oom;
	}
	return 0;
oom:
	marks_free(e, m);
	return -1;
}

/* Walks the stored tree from its root into m. 0 or -1 out of memory. */
static int
marks_of_tree(struct fs_engine *e, struct marks *m)
{
	int64_t mark = fs_mark(e);
	int rc = -1;

	if (e->nvars == 0)
		rc = walk(e, m, 0, 0);          /* continuous vars only: the root decides */
	else if (fs_narrow(e, e->nodes[0].var, e->nodes[0].lo, e->nodes[0].hi) == 0)
		rc = walk(e, m, e->nodes[0].var, 0);
	fs_rollback(e, mark);
	return rc;
}

int
fs_project(struct fs_engine *e, struct fs_projection *p, struct dn_error *err)
{
	struct marks m;

	memset(p, 0, sizeof *p);
	if (!e->counted)
		return dn_error_set(err, DN_EINVAL, NULL, "projection needs a count first");
	if (marks_new(e, &m) != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory projecting the feasible set");
	p->nvars = e->nvars;
	p->present = calloc((size_t)e->nvars + 1, sizeof *p->present);
	p->possible = calloc((size_t)e->nvars + 1, sizeof *p->possible);
	p->max_certain = calloc((size_t)e->nvars + 1, sizeof *p->max_certain);
	p->max_possible = calloc((size_t)e->nvars + 1, sizeof *p->max_possible);
	p->ncvars = e->ncvars;
	p->real_lo = calloc((size_t)e->ncvars + 1, sizeof *p->real_lo);
	p->real_hi = calloc((size_t)e->ncvars + 1, sizeof *p->real_hi);
	if (!p->present || !p->possible || !p->max_certain || !p->max_possible || !p->real_lo || !p->real_hi)
		goto oom;
	for (int v = 0; v < e->nvars; v++) {
		if (m.diff[0][v] == NULL)
			continue;
		p->present[v] = calloc((size_t)e->vars[v].n + 1, 1);
		p->possible[v] = calloc((size_t)e->vars[v].n + 1, 1);
		if (p->present[v] == NULL || p->possible[v] == NULL)
			goto oom;
	}
	if (marks_of_tree(e, &m) != 0)
		goto oom;
	for (int c = 0; c < e->ncvars; c++) {
		const struct fs_cvar *cv = &e->cvars[c];
		p->real_lo[c] = m.cell_lo[c] <= m.cell_hi[c] ? fs_cell_value(cv, m.cell_lo[c], cv->bits) : NAN;
		p->real_hi[c] = m.cell_lo[c] <= m.cell_hi[c] ? fs_cell_value(cv, m.cell_hi[c] + 1, cv->bits) : NAN;
	}
	for (int v = 0; v < e->nvars; v++) {
		int64_t run[2] = { 0, 0 };
		p->max_certain[v] = m.maxpos[0][v];
		p->max_possible[v] = m.maxpos[1][v] > m.maxpos[0][v] ? m.maxpos[1][v] : m.maxpos[0][v];
		if (m.diff[0][v] == NULL)
			continue;
		for (int64_t i = 0; i < e->vars[v].n; i++) {
			run[0] += m.diff[0][v][i];
			run[1] += m.diff[1][v][i];
			p->present[v][i] = run[0] > 0;
			p->possible[v][i] = run[0] > 0 || run[1] > 0;
		}
	}
	marks_free(e, &m);
	return 0;
oom:
	marks_free(e, &m);
	fs_projection_free(p);
	return dn_error_set(err, DN_ENOMEM, NULL, "out of memory projecting the feasible set");
}

/* ---- one box's projection (a distributed count's job) ---- */

void
fs_box_proj_free(struct fs_box_proj *bp)
{
	if (bp == NULL)
		return;
	for (int v = 0; bp->runs != NULL && v < bp->nvars; v++)
		free(bp->runs[v]);
	free(bp->runs);
	free(bp->nruns);
	free(bp->maxpos);
	free(bp->cell_lo);
	free(bp->cell_hi);
	memset(bp, 0, sizeof *bp);
}

int
fs_box_proj_alloc(struct fs_box_proj *bp, int nvars, int ncvars)
{
	memset(bp, 0, sizeof *bp);
	bp->nvars = nvars;
	bp->ncvars = ncvars;
	bp->runs = calloc((size_t)nvars + 1, sizeof *bp->runs);
	bp->nruns = calloc((size_t)nvars + 1, sizeof *bp->nruns);
	bp->maxpos = calloc((size_t)nvars + 1, sizeof *bp->maxpos);
	bp->cell_lo = calloc((size_t)ncvars + 1, sizeof *bp->cell_lo);
	bp->cell_hi = calloc((size_t)ncvars + 1, sizeof *bp->cell_hi);
	if (!bp->runs || !bp->nruns || !bp->maxpos || !bp->cell_lo || !bp->cell_hi) {
		fs_box_proj_free(bp);
		return -1;
	}
	for (int v = 0; v < nvars; v++)
		bp->maxpos[v] = -1;
	for (int c = 0; c < ncvars; c++) {
		bp->cell_lo[c] = 1;     /* empty */
		bp->cell_hi[c] = 0;
	}
	return 0;
}

/* Var v's present positions in m as runs into bp. 0 or -1 out of memory. */
static int
runs_of(const struct fs_engine *e, const struct marks *m, int v, struct fs_box_proj *bp)
{
	int64_t run = 0, n = 0;
	size_t cap = 0;

	bp->maxpos[v] = m->maxpos[0][v];
	if (m->diff[0][v] == NULL)
		return 0;
	for (int64_t i = 0; i < e->vars[v].n; i++) {
		int was = run > 0;
		run += m->diff[0][v][i];
		if (run > 0 && !was) {
			if (dn_grow(&bp->runs[v], &cap, (size_t)n + 2, sizeof *bp->runs[v]) != 0)
				return -1;
			bp->runs[v][n] = i;
			bp->runs[v][n + 1] = i;
			n += 2;
		} else if (run > 0) {
			bp->runs[v][n - 1] = i;
		}
	}
	bp->nruns[v] = (int)(n / 2);
	return 0;
}

/* fs_count_box's callback while a job counts: a decided box's marks, as
 * walk marks a FULL or EMPTY leaf (the box is the current one). */
struct decided {
	struct marks m;
	int oom;
};

static void
on_decided(void *ctx, struct fs_engine *e, int d, int full)
{
	struct decided *x = ctx;

	if (full)
		mark_box(e, &x->m, d, 0);
	if (hull_box(e, &x->m) != 0)
		x->oom = 1;
}

int
fs_project_count(struct fs_engine *e, int d, fs_count *count, fs_count *upper, struct fs_box_proj *bp,
    struct dn_error *err)
{
	struct decided x;
	int rc;

	memset(&x, 0, sizeof x);
	if (marks_new(e, &x.m) != 0 || fs_box_proj_alloc(bp, e->nvars, e->ncvars) != 0) {
		marks_free(e, &x.m);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory projecting a job's box");
	}
	e->on_decided = on_decided;
	e->decided_ctx = &x;
	rc = fs_count_box(e, d, -1, count, upper);
	e->on_decided = NULL;
	e->decided_ctx = NULL;
	if (rc == 0 && x.oom)
		rc = -1;
	if (rc == 0 && (e->timed_out || *count != *upper))
		rc = 1;         /* stopped: no exact projection */
	for (int v = 0; rc == 0 && v < e->nvars; v++)
		rc = runs_of(e, &x.m, v, bp);
	for (int c = 0; rc == 0 && c < e->ncvars; c++) {
		bp->cell_lo[c] = x.m.cell_lo[c];
		bp->cell_hi[c] = x.m.cell_hi[c];
	}
	marks_free(e, &x.m);
	if (rc != 0)
		fs_box_proj_free(bp);
	if (rc < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory counting a job");
	return rc;
}

/* ---- the reduced NNI space ---- */

static int
dim_present(const struct fs_engine *e, const struct fs_projection *p, int v, int64_t dim_index)
{
	const struct fs_var *x = &e->vars[v];

	/* the values that may fit: in a feasible configuration, or, while a
	 * deadline left boxes undecided, in one of them (an exact count has
	 * none: then the two are the same) */
	if (p->possible[v] == NULL)
		return 1;
	for (int64_t q = 0; q < x->n; q++)
		if (fs_dim_index(x, q) == dim_index)
			return p->possible[v][q];
	return 0;
}

static json_t *reduce_dim(const struct fs_engine *e, const struct fs_projection *p, int k);

/* A nested option object with its own dims reduced; NULL when one of them
 * has no feasible value left. */
static json_t *
reduce_option(const struct fs_engine *e, const struct fs_projection *p, int k, int64_t i)
{
	const struct sp_dim *d = &e->q->space.dims[k];
	json_t *o = json_object();

	json_object_set(o, "_name", json_object_get(d->values[i], "_name"));
	for (int c = k + 1; c < e->q->space.ndims; c++) {
		const struct sp_dim *cd = &e->q->space.dims[c];
		json_t *r;
		if (cd->parent != k || cd->parent_option != i)
			continue;
		r = reduce_dim(e, p, c);
		if (r == NULL) {
			json_decref(o);
			return NULL;
		}
		json_object_set_new(o, cd->key, r);
	}
	return o;
}

/* x rounded to 12 significant digits, down (dir < 0) or up: a bound that
 * survives printing at 15 digits and never moves inwards. */
static double
round_outwards(double x, int dir)
{
	double scale, y;

	if (x == 0 || !isfinite(x))
		return x;
	scale = pow(10, 11 - floor(log10(fabs(x))));
	y = (dir < 0 ? floor(x * scale) : ceil(x * scale)) / scale;
	return dir < 0 ? (y <= x ? y : nextafter(x, -INFINITY)) : (y >= x ? y : nextafter(x, INFINITY));
}

/* A continuous dim's feasible range: its spec narrowed to the hull of the
 * cells left open (never dropping a feasible value), NULL when none is. */
static json_t *
reduce_continuous(const struct fs_engine *e, const struct fs_projection *p, int k, json_t *spec)
{
	const struct sp_dim *d = &e->q->space.dims[k];
	int c = e->dim_cvar[k];
	double a, b;

	if (isnan(p->real_lo[c]))
		return NULL;
	a = round_outwards(p->real_lo[c], -1);
	b = round_outwards(p->real_hi[c], 1);
	if (a <= d->lo && b >= d->hi)
		return json_incref(spec);
	a = a < d->lo ? d->lo : a;
	b = b > d->hi ? d->hi : b;
	return json_pack("{s:s,s:[f,f]}", "_type", sp_type_name(d->type), "_value", a, b);
}

static json_t *
reduce_dim(const struct fs_engine *e, const struct fs_projection *p, int k)
{
	const struct sp_dim *d = &e->q->space.dims[k];
	int v = e->dim_var[k];
	json_t *spec = json_object_get(e->q->space.root, d->key);
	json_t *vals;
	int64_t first = -1, last = -1, count = 0;
	int contiguous = 1;

	if (d->parent >= 0) {
		/* a nested dim: its spec lives in the parent's option object */
		const struct sp_dim *pd = &e->q->space.dims[d->parent];
		spec = json_object_get(pd->values[d->parent_option], d->key);
	}
	if (v < 0 && d->hp >= 0 && e->dim_cvar[k] >= 0)
		return reduce_continuous(e, p, k, spec);
	if (v < 0 || d->hp < 0)
		return json_incref(spec);       /* continuous or passes through: untouched */
	vals = json_array();
	for (int64_t i = 0; i < d->nvalues; i++) {
		json_t *x;
		if (!dim_present(e, p, v, i))
			continue;
		if (d->nested) {
			x = reduce_option(e, p, k, i);
			if (x == NULL)
				continue;
		} else
			x = sp_value_json(d, i);
		if (last >= 0 && i != last + 1)
			contiguous = 0;
		if (first < 0)
			first = i;
		last = i;
		count++;
		json_array_append_new(vals, x);
	}
	if (count == 0) {
		json_decref(vals);
		return NULL;
	}
	if (count == d->nvalues && d->type != SP_CHOICE) {
		json_decref(vals);
		return json_incref(spec);
	}
	if (d->type == SP_RANDINT && contiguous) {
		json_decref(vals);
		return json_pack("{s:s,s:[I,I]}", "_type", "randint", "_value",
		    (json_int_t)(d->start + (double)first), (json_int_t)(d->start + (double)last + 1));
	}
	return json_pack("{s:s,s:o}", "_type", "choice", "_value", vals);
}

json_t *
fs_reduced_space(const struct fs_engine *e, const struct fs_projection *p, struct dn_error *err)
{
	json_t *out = json_object();

	for (int k = 0; k < e->q->space.ndims; k++) {
		const struct sp_dim *d = &e->q->space.dims[k];
		json_t *r;
		if (d->parent >= 0)
			continue;
		r = reduce_dim(e, p, k);
		if (r == NULL) {
			json_decref(out);
			dn_error_set(err, DN_ENOENT, d->path, "no feasible configuration: no value of \"%s\" fits", d->name);
			return NULL;
		}
		json_object_set_new(out, d->key, r);
	}
	return out;
}
