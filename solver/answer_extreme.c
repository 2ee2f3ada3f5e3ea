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
 * sub-spaces) has no order and is refused, naming the field; so is a
 * continuous range (on its grid, fset_real.c, the engine answers "some
 * value fits", not which ones: its reduced range is in the reduced space).
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

/* One search for the best value of var v (in the engine x->e). */
struct extreme {
	struct fs_engine e;
	int v;
	double sign;            /* +1 largest, -1 smallest: the search maximizes sign * value */
	int ascending;          /* the values ascend with the positions */
	int64_t best;           /* position of the best value found, -1 none */
	int64_t *pos;           /* scratch: the configuration found */
	double timeout;
};

/* The value at position p of var v as NNI writes it (NAN: not a number). */
static double
value_at(const struct fs_engine *e, int v, int64_t p)
{
	return sp_value_num(&e->q->space.dims[e->vars[v].dim], fs_dim_index_of(e, v, p));
}

static double
key_at(const struct extreme *x, int64_t p)
{
	return x->sign * value_at(&x->e, x->v, p);
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

/*
 * Narrows var v to [lo, hi] and its enclosing choices to the options that
 * activate it, so that only configurations in which v takes part remain.
 * Returns the mark to give fs_unrestrict, -2 when the box holds no such
 * configuration (an enclosing choice is already fixed to another option;
 * nothing narrowed), -1 out of memory (nothing narrowed).
 */
static int64_t
narrow_active(struct fs_engine *e, int v, int64_t lo, int64_t hi)
{
	int64_t first = -1;

	for (int w = v; w >= 0; w = e->vars[w].parent) {
		int64_t a = lo > e->lo[w] ? lo : e->lo[w], b = hi < e->hi[w] ? hi : e->hi[w], m = -2;
		if (a <= b)
			m = fs_restrict(e, w, a, b);
		if (m < 0) {
			fs_unrestrict(e, first);
			return m;
		}
		if (first < 0)
			first = m;
		lo = hi = e->vars[w].active_pos;
	}
	return first;
}

/* Whether the configuration pos lies in the engine's current box (every
 * var that takes part within its range). fs_first_in_box's configuration
 * does (test_fset checks it in random narrowed boxes); this guard keeps a
 * witness from outside the box from ever being reported. */
static int
in_box(const struct fs_engine *e, const int64_t *pos)
{
	for (int w = 0; w < e->nvars; w++)
		if (pos[w] >= 0 && (pos[w] < e->lo[w] || pos[w] > e->hi[w]))
			return 0;
	return 1;
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
	mark = narrow_active(&x->e, x->v, lo, hi);
	if (mark == -2)
		return 0;
	if (mark < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	r = fs_first_in_box(&x->e, x->pos, err);
	found = lo == hi ? lo : r == 0 && x->pos[x->v] >= 0 && in_box(&x->e, x->pos) ? x->pos[x->v] : -1;
	fs_unrestrict(&x->e, mark);
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
 * The engine var of the space parameter `name` given as `field` ("param",
 * "per"); -1 with err naming the field when the space has no such discrete
 * parameter (a continuous one is said to be continuous).
 */
static int
named_var(const struct fs_engine *e, const char *name, const char *field, struct dn_error *err)
{
	const struct sp_space *sp = &e->q->space;
	int v = fs_var_named(e, name);

	if (v >= 0)
		return v;
	for (int k = 0; k < sp->ndims; k++)
		if (strcmp(sp->dims[k].name, name) == 0)
			return dn_error_set(err, DN_EINVAL, field, "\"%s\" is continuous (%s): %s", name,
			    sp_type_name(sp->dims[k].type), strcmp(field, "per") == 0 ?
			    "one row per value needs a discrete parameter" :
			    "the largest and smallest values are answered for discrete parameters "
			    "(the reduced space gives the range of a continuous one that may fit)");
	return dn_error_set(err, DN_ENOENT, field, "the space has no discrete parameter \"%s\"", name);
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

json_t *
ans_extreme(struct fs_engine *e, struct sq_query *q, const char *param, const char *per, enum ans_goal goal,
    double timeout, struct dn_error *err)
{
	struct extreme x;
	int u = -1, v = named_var(e, param, "param", err), ascending;
	json_t *rows;

	if (v < 0 || (per != NULL && (u = named_var(e, per, "per", err)) < 0))
		return NULL;
	if (u == v) {
		dn_error_set(err, DN_EINVAL, "per", "\"%s\" is param itself: per names another parameter (leave it "
		    "out for one value overall)", per);
		return NULL;
	}
	if (u >= 0 && e->vars[u].n > MAX_ROWS) {
		dn_error_set(err, DN_ERANGE, "per", "\"%s\" has %lld values: at most %d rows", per,
		    (long long)e->vars[u].n, MAX_ROWS);
		return NULL;
	}
	ascending = check_order(e, v, param, err);
	if (ascending < 0)
		return NULL;
	memset(&x, 0, sizeof x);
	if (fs_init(&x.e, q, err) != 0) {
		fs_free(&x.e);
		return NULL;
	}
	x.v = v;
	x.sign = goal == ANS_LARGEST ? 1 : -1;
	x.ascending = ascending;
	x.timeout = timeout;
	x.e.deadline = fs_now_plus(timeout);
	x.pos = calloc((size_t)x.e.nvars + 1, sizeof *x.pos);
	rows = x.pos ? json_array() : NULL;
	for (int64_t pu = 0; rows != NULL && pu < (u >= 0 ? x.e.vars[u].n : 1); pu++) {
		const struct sp_dim *d = &q->space.dims[x.e.vars[v].dim];
		int64_t mark = u >= 0 ? narrow_active(&x.e, u, pu, pu) : -2;
		json_t *row = json_object();
		int r = mark == -1 ? dn_error_set(err, DN_ENOMEM, NULL, "out of memory") : 0;
		x.best = -1;
		if (r == 0 && (u < 0 || mark >= 0))
			r = search(&x, 0, x.e.vars[v].n - 1, err);
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
		json_object_set_new(row, param, x.best >= 0 ? sp_value_json(d, fs_dim_index_of(&x.e, v, x.best)) :
		    json_null());
		json_array_append_new(rows, row);
	}
	if (rows == NULL && !dn_error_isset(err))
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	free(x.pos);
	fs_free(&x.e);
	return rows;
}
