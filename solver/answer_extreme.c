/*
 * answer_extreme.c - the largest or the smallest value of a parameter that
 * occurs in a feasible configuration, overall or for each value of another
 * parameter (the largest batch size per depth): ans_extreme (answer.h).
 *
 * Exact, in both directions: a value is answered only when the engine found
 * a feasible configuration with it (fs_first_in_box), and every better
 * value was ruled out by a search of the engine that found nothing. The
 * search bisects ranges of positions: a range none of whose values can beat
 * the best found is skipped, a range without a feasible configuration is
 * dropped whole, and each configuration found raises the best at once. On a
 * grid whose values ascend with the positions (every model hyperparameter)
 * that is about two searches per halving, so a huge grid is answered too.
 *
 * Order: values are compared as NNI writes them (sp_value_num), not by
 * position: a parameter that passes through, or a categorical with numeric
 * options, keeps the space's (or the model's) order of positions. A
 * parameter with values that are not numbers (strings, booleans,
 * sub-spaces) has no order and is refused, naming the field.
 *
 * Continuous parameters: one bound to the model (a width multiplier) is
 * searched on its grid (fset_real.c), the positions being the grid's
 * 2^bits + 1 values: a range of positions restricts the var's values
 * (fs_real_restrict), and a configuration found gives its largest grid
 * value in the range (fs_real_witness). The answer is exact on the grid,
 * as counts are. One that passes through (a learning rate) takes its
 * range's end whenever anything fits; normal and lognormal ones have no
 * end and are refused. `per` needs a discrete parameter (one row a value).
 * A nested parameter is searched only where it takes part: its enclosing
 * choices are fixed to the options that activate it.
 *
 * Ownership: the reduction's engine is only read (names, grids); the
 * searches run on an engine of their own, created and freed here, under one
 * deadline for the whole answer.
 */
#include "answer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS 4096           /* values of `per`: one row each */

/* One search for the best value of the parameter (in the engine x->e). */
struct extreme {
	struct fs_engine e;
	int v, c, pt;           /* one of them >= 0: discrete var, continuous var, a
	                         * continuous dim that passes through */
	int64_t n;              /* positions: v's grid, c's grid values, pt's two ends */
	int parent;             /* c, pt: the var of the choice that activates it, or -1 ... */
	int64_t active_pos;     /* ... and the option's position */
	double sign;            /* +1 largest, -1 smallest: the search maximizes sign * value */
	int ascending;          /* the values ascend with the positions */
	int64_t best;           /* position of the best value found, -1 none */
	int64_t *pos;           /* scratch: the configuration found */
	double *w;              /* scratch: its continuous values (fs_real_witness) */
	double timeout;
};

/* The value at position p of var v as NNI writes it (NAN: not a number). */
static double
value_at(const struct fs_engine *e, int v, int64_t p)
{
	return sp_value_num(&e->q->space.dims[e->vars[v].dim], fs_dim_index_of(e, v, p));
}

/* The value at position p of the searched parameter. */
static double
target_value(const struct extreme *x, int64_t p)
{
	if (x->c >= 0)
		return fs_cell_value(&x->e.cvars[x->c], p, x->e.cvars[x->c].bits);
	if (x->pt >= 0)
		return p == 0 ? x->e.q->space.dims[x->pt].lo : x->e.q->space.dims[x->pt].hi;
	return value_at(&x->e, x->v, p);
}

static double
key_at(const struct extreme *x, int64_t p)
{
	return x->sign * target_value(x, p);
}

/* The best key of any position in [lo, hi]. */
static double
key_bound(const struct extreme *x, int64_t lo, int64_t hi)
{
	double b;

	if (x->ascending)
		return x->sign > 0 ? key_at(x, hi) : key_at(x, lo);
	b = key_at(x, lo);
	for (int64_t p = lo + 1; p <= hi; p++)
		b = fmax(b, key_at(x, p));
	return b;
}

/* Whether the configuration pos lies in the engine's current box (every
 * var that takes part within its range). fs_first_in_box's configuration
 * does (test_fset_extreme checks it in random narrowed boxes); this guard keeps a
 * witness from outside the box from ever being reported. */
static int
in_box(const struct fs_engine *e, const int64_t *pos)
{
	for (int w = 0; w < e->nvars; w++)
		if (pos[w] >= 0 && (pos[w] < e->lo[w] || pos[w] > e->hi[w]))
			return 0;
	return 1;
}

/* Narrows the searched parameter to positions [lo, hi] (a continuous one
 * to the values between theirs): fs_restrict_active's marks, and -3 when
 * nothing needed narrowing (a top-level parameter that passes through). */
static int64_t
narrow_target(struct extreme *x, int64_t lo, int64_t hi)
{
	int64_t first = -3, m;

	if (x->v >= 0)
		return fs_restrict_active(&x->e, x->v, lo, hi);
	if (x->parent >= 0 && (first = fs_restrict_active(&x->e, x->parent, x->active_pos, x->active_pos)) < 0)
		return first;
	if (x->c < 0)
		return first;   /* passing through: every value of the range is attainable */
	m = fs_real_restrict(&x->e, x->c, target_value(x, lo), target_value(x, hi));
	if (m < 0) {
		fs_unrestrict(&x->e, first);
		return -1;
	}
	return first >= 0 ? first : m;
}

static void
unrestrict_target(struct extreme *x, int64_t mark)
{
	fs_unrestrict(&x->e, mark);
	if (x->c >= 0)
		fs_real_unrestrict(&x->e, x->c, -1);
}

/* The searched parameter's position in the configuration x->pos found in
 * the box narrowed to [lo, hi]: a continuous one's largest grid value that
 * fits there (a value of the range, so a position in [lo, hi]); one that
 * passes through takes the better end. -1 none. */
static int64_t
found_position(struct extreme *x, int64_t lo, int64_t hi)
{
	double y;

	if (x->v >= 0)
		return x->pos[x->v];
	if (x->pt >= 0)
		return x->sign > 0 ? hi : lo;
	if (fs_real_witness(&x->e, x->pos, x->w) != 1 || isnan(y = x->w[x->c]))
		return -1;
	while (lo < hi) {       /* the last position whose value is at most y (they ascend) */
		int64_t mid = hi - (hi - lo) / 2;
		if (target_value(x, mid) <= y)
			lo = mid;
		else
			hi = mid - 1;
	}
	return target_value(x, lo) == y ? lo : -1;
}

/*
 * Raises x->best to the best position in [lo, hi] (of var x->v, in the
 * current box) that a feasible configuration has. 0, or -1 with err (out
 * of memory, or the deadline passed: the best found so far is not proven).
 */
static int
search(struct extreme *x, int64_t lo, int64_t hi, struct dn_error *err)
{
	int64_t mark, mid, found;
	int r;

	if (x->best >= 0 && key_bound(x, lo, hi) <= key_at(x, x->best))
		return 0;
	mark = narrow_target(x, lo, hi);
	if (mark == -2)
		return 0;
	if (mark == -1)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	r = fs_first_in_box(&x->e, x->pos, err);
	found = lo == hi ? lo : r == 0 && in_box(&x->e, x->pos) ? found_position(x, lo, hi) : -1;
	unrestrict_target(x, mark);
	if (r < 0 || (r == 1 && x->e.timed_out)) {
		if (!dn_error_isset(err) || err->code == DN_ETIMEOUT) {
			dn_error_clear(err);
			dn_error_set(err, DN_ETIMEOUT, NULL, "the %s value did not finish in %g s",
			    x->sign > 0 ? "largest" : "smallest", x->timeout);
		}
		return -1;
	}
	if (r == 1)
		return 0;
	/* a configuration found (not only the existence of one) raises the best at once */
	if (found >= 0 && (x->best < 0 || key_at(x, found) > key_at(x, x->best)))
		x->best = found;
	if (lo == hi)
		return 0;
	mid = lo + (hi - lo) / 2;
	/* the half that may hold better values first: the other is then often skipped */
	if (key_bound(x, mid + 1, hi) >= key_bound(x, lo, mid))
		return search(x, mid + 1, hi, err) != 0 ? -1 : search(x, lo, mid, err);
	return search(x, lo, mid, err) != 0 ? -1 : search(x, mid + 1, hi, err);
}

/*
 * The parameter `name` given as `field` ("param", "per"): its engine var
 * (returned), or -1 with *dim set to a continuous space dim (which `per`
 * refuses); -1 with err naming the field when the space has no such
 * parameter, or (for "param") a continuous one without an end.
 */
static int
named_param(const struct fs_engine *e, const char *name, const char *field, int *dim, struct dn_error *err)
{
	int k = sp_dim_lookup(&e->q->space, name, field, err);
	const struct sp_dim *d;

	*dim = -1;
	if (k < 0)
		return -1;
	if (e->dim_var[k] >= 0)
		return e->dim_var[k];
	d = &e->q->space.dims[k];
	name = d->name;
	if (strcmp(field, "per") == 0)
		return dn_error_set(err, DN_EINVAL, field, "\"%s\" is continuous (%s): one row per value needs "
		    "a discrete parameter", name, sp_type_name(d->type));
	if (d->discrete || (d->type != SP_UNIFORM && d->type != SP_LOGUNIFORM))
		return dn_error_set(err, DN_EINVAL, field, "\"%s\" is %s: its values are unbounded, so it has "
		    "no largest or smallest value", name, sp_type_name(d->type));
	*dim = k;
	return -1;
}

/* Whether var v's values ascend with its positions; -1 with err on "param"
 * when one of them is not a number (it has no order). */
static int
check_order(const struct fs_engine *e, int v, const char *name, struct dn_error *err)
{
	const struct fs_var *fv = &e->vars[v];
	int ascending = 1;

	if (fv->dim_index == NULL)
		return 1;       /* a huge progression: ascending by construction */
	for (int64_t p = 0; p < fv->n; p++) {
		double y = value_at(e, v, p);
		if (isnan(y)) {
			json_t *j = sp_value_json(&e->q->space.dims[fv->dim], fs_dim_index_of(e, v, p));
			char *t = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
			dn_error_set(err, DN_EINVAL, "param", "\"%s\" has values that are not numbers (%.60s): they have "
			    "no order, so no largest or smallest value", name, t ? t : "an option");
			free(t);
			json_decref(j);
			return -1;
		}
		if (p > 0 && y < value_at(e, v, p - 1))
			ascending = 0;
	}
	return ascending;
}

/* Sets up x to search the continuous space dim `dim`: the continuous var
 * bound to it (positions: its grid), or one that passes through (positions
 * 0 and 1: its range's ends, every value between attainable). Where it is
 * nested, x->parent and x->active_pos name the choice that activates it. */
static void
target_continuous(struct extreme *x, int dim)
{
	x->c = x->e.dim_cvar[dim];
	x->pt = x->c < 0 ? dim : -1;
	x->n = x->c >= 0 ? ((int64_t)1 << x->e.cvars[x->c].bits) + 1 : 2;
	x->parent = fs_dim_parent(&x->e, dim, &x->active_pos);
}

/* The best value found, as NNI writes it (null: nothing fits). */
static json_t *
best_json(const struct extreme *x)
{
	if (x->best < 0)
		return json_null();
	if (x->v >= 0)
		return sp_value_json(&x->e.q->space.dims[x->e.vars[x->v].dim], fs_dim_index_of(&x->e, x->v, x->best));
	return json_real(target_value(x, x->best));
}

json_t *
ans_extreme(struct fs_engine *e, struct sq_query *q, const char *param, const char *per, enum ans_goal goal,
    double timeout, struct dn_error *err)
{
	struct extreme x;
	int u = -1, pdim, udim, v = named_param(e, param, "param", &pdim, err), ascending = 1;
	json_t *rows;

	if ((v < 0 && pdim < 0) || (per != NULL && (u = named_param(e, per, "per", &udim, err)) < 0))
		return NULL;
	/* the rows name both by their addresses */
	param = e->q->space.dims[v >= 0 ? e->vars[v].dim : pdim].name;
	if (u >= 0)
		per = e->q->space.dims[e->vars[u].dim].name;
	if (u >= 0 && u == v) {
		dn_error_set(err, DN_EINVAL, "per", "\"%s\" is param itself: per names another parameter (leave it "
		    "out for one value overall)", per);
		return NULL;
	}
	if (u >= 0 && e->vars[u].n > MAX_ROWS) {
		dn_error_set(err, DN_ERANGE, "per", "\"%s\" has %lld values: at most %d rows", per,
		    (long long)e->vars[u].n, MAX_ROWS);
		return NULL;
	}
	if (v >= 0 && (ascending = check_order(e, v, param, err)) < 0)
		return NULL;
	memset(&x, 0, sizeof x);
	if (fs_init_root(&x.e, q, q->feasible, err) != 0) {
		fs_free(&x.e);
		return NULL;
	}
	x.v = v;
	x.c = x.pt = -1;
	if (v >= 0)
		x.n = x.e.vars[v].n;
	else
		target_continuous(&x, pdim);
	x.sign = goal == ANS_LARGEST ? 1 : -1;
	x.ascending = ascending;
	x.timeout = timeout;
	x.e.deadline = fs_now_plus(timeout);
	x.pos = calloc((size_t)x.e.nvars + 1, sizeof *x.pos);
	x.w = calloc((size_t)x.e.ncvars + 1, sizeof *x.w);
	rows = x.pos && x.w ? json_array() : NULL;
	for (int64_t pu = 0; rows != NULL && pu < (u >= 0 ? x.e.vars[u].n : 1); pu++) {
		int64_t mark = u >= 0 ? fs_restrict_active(&x.e, u, pu, pu) : -2;
		json_t *row = json_object();
		int r = mark == -1 ? dn_error_set(err, DN_ENOMEM, NULL, "out of memory") : 0;
		x.best = -1;
		if (r == 0 && (u < 0 || mark >= 0))
			r = search(&x, 0, x.n - 1, err);
		fs_unrestrict(&x.e, mark);
		if (r != 0) {
			json_decref(row);
			json_decref(rows);
			rows = NULL;
			break;
		}
		if (u >= 0)
			json_object_set_new(row, per, sp_value_json(&q->space.dims[x.e.vars[u].dim],
			    fs_dim_index_of(&x.e, u, pu)));
		json_object_set_new(row, param, best_json(&x));
		json_array_append_new(rows, row);
	}
	if (rows == NULL && !dn_error_isset(err))
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	free(x.pos);
	free(x.w);
	fs_free(&x.e);
	return rows;
}
