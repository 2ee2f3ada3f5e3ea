/*
 * answer_z3_range.c - the exact feasible range of each continuous
 * hyperparameter bound to the model (a width multiplier) over the reals,
 * not on the engine's grid of 1025 values: the infimum and the supremum of
 * the values v at which some configuration of the discrete parameters
 * fits (see answer_z3.h).
 *
 * Why not Z3 alone: the costs reach the parameter w through rounding
 * (channels = make_divisible(c * w, 8)) and products of such terms, so
 * with w a free real the arithmetic is non-linear, and Z3 4.8.12 answers
 * unknown within its resource limit even on an interval one grid cell wide
 * (MobileNetV2: 2e7 and 2e8 both run out). Its optimizer is no better
 * there. With w fixed to one value, declared as a one-value domain before
 * anything is compiled, every cost term over it becomes a table and Z3
 * decides the question in about a second, on exact rationals.
 *
 * Method, per end (the supremum; the infimum is the mirror image):
 *  1. The engine's grid hull end h (fs_project: the interval bounds rule
 *     out every value beyond it) and a value g that fits (the grid value
 *     one cell inside h, or a configuration's largest grid value).
 *  2. Bisection between got = g (fits) and none = h (nothing fits there)
 *     on the engine's exact evaluation at single values (fs_real_restrict
 *     to [t, t], fs_first_in_box), to ANS_Z3_RANGE_PRECISION * (H - L).
 *  3. Z3 confirms both ends on exact rationals: something fits at got,
 *     nothing at none (the engine evaluates in doubles).
 *  4. Nothing beyond none: Z3 over the reals on [none, H] when it decides
 *     within its limit, else the engine's interval bounds on [none, h]
 *     (fs_real_none_in) and the hull beyond h.
 * The answer is exact when every step was decided; otherwise it says
 * which one was not ("stopped") and keeps what was proven. When the
 * range's own end fits, it is the answer (attained).
 *
 * Ownership: the reduction's engine is read, and projected for the hull;
 * the point questions run on an engine of their own (fs_init_root), and
 * every Z3 question on a context of its own, freed before the next.
 */
#include "answer_z3.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fset_project.h"
#include "query_z3.h"
#include "space.h"
#include "z3c.h"

/* The range of continuous var c: the engine (x, a search engine of its
 * own, points and interval bounds) and Z3 (exact rationals). */
struct rq {
	struct sq_query *q;
	const struct fs_engine *e;      /* the reduction's: names, ranges */
	struct fs_engine x;
	int64_t *pos;
	double *w;
	unsigned rlimit;
	double deadline;
	int c;
	const char *stopped;    /* why the answer is not exact, NULL while it may be */
	int checks;             /* Z3 checks */
};

/* Z3: does some configuration fit with c's value in [lo, hi] (lo == hi: at
 * exactly that value, a one-value domain, which Z3 decides; an interval
 * is non-linear)? A fresh context per question: a domain is declared
 * before the terms are compiled. Sets *why on an unknown answer. */
static enum z3c_answer
z3_fits_in(struct rq *r, double lo, double hi, const char **why)
{
	const struct fs_cvar *cv = &r->e->cvars[r->c];
	struct z3c z;
	struct dn_error err;
	Z3_ast *as = NULL, *room;
	double left = r->deadline - fs_now();
	enum z3c_answer a = Z3C_ERROR;
	int na;

	memset(&err, 0, sizeof err);
	*why = NULL;
	if (left <= 0) {
		*why = "deadline";
		return Z3C_UNKNOWN;
	}
	na = sq_z3_open_at(r->q, r->e, r->rlimit, left, r->deadline, 1, lo == hi ? r->c : -1, lo, &z, &as, &err);
	if (na < 0) {
		if (err.code == DN_ETIMEOUT) {
			*why = "deadline";      /* compiling the query took the time left */
			return Z3C_UNKNOWN;
		}
		*why = err.code == DN_ENOMEM ? "out of memory" : "Z3 error";
		return Z3C_ERROR;
	}
	if ((room = realloc(as, sizeof *as * ((size_t)na + 2))) != NULL) {
		Z3_ast act = NULL;
		int n = na;
		as = room;
		if ((as[n] = z3c_var_in_range_real(&z, cv->hp, lo, hi)) != NULL &&
		    sq_z3_cvar_active(r->q, r->e, r->c, &z, &act) == 0) {
			n++;
			if (act != NULL)
				as[n++] = act;  /* nested: a configuration in which c takes part */
			a = z3c_check(&z, as, n, NULL, &err);
		}
		r->checks++;
	}
	free(as);
	z3c_free(&z);
	if (a == Z3C_UNKNOWN)
		*why = fs_now() >= r->deadline ? "deadline" : err.code == DN_ETIMEOUT ? "resource limit" :
		    "Z3 could not decide (non-linear arithmetic)";
	else if (a == Z3C_ERROR)
		*why = "Z3 error";
	return a;
}

/* Records why the answer is not exact: the first reason stands. */
static void
stop(struct rq *r, const char *why)
{
	if (r->stopped == NULL)
		r->stopped = why;
}

/* The engine: does some configuration fit at exactly t (its evaluation in
 * doubles)? 1, 0, -1 error or deadline (r->stopped set). */
static int
engine_fits(struct rq *r, double t)
{
	struct dn_error err;
	int64_t m = fs_real_restrict(&r->x, r->c, t, t);
	int found;

	memset(&err, 0, sizeof err);
	if (m < 0) {
		stop(r, "out of memory");
		return -1;
	}
	found = fs_first_in_box(&r->x, r->pos, &err);
	fs_real_unrestrict(&r->x, r->c, m);
	if (found < 0 || r->x.timed_out) {
		stop(r, r->x.timed_out ? "deadline" : "out of memory");
		return -1;
	}
	return found == 0;
}

/* A value at which something fits, the engine's: `start` when it fits,
 * else the largest grid value of the first configuration that fits (either
 * end's bisection needs one value that fits, any). NAN when nothing fits on
 * the grid, or on an error (r->stopped set). */
static double
first_fit(struct rq *r, double start)
{
	struct dn_error err;
	int f = isnan(start) ? 0 : engine_fits(r, start);

	memset(&err, 0, sizeof err);
	if (f != 0)
		return f > 0 ? start : NAN;
	if (fs_first_in_box(&r->x, r->pos, &err) != 0 || fs_real_witness(&r->x, r->pos, r->w) != 1)
		return NAN;
	return r->w[r->c];
}

/* The grid value one finest cell inside x (a cell end) towards the range,
 * dir 1 below, dir -1 above; NAN when x is NAN. */
static double
cell_inside(const struct fs_cvar *cv, double x, int dir)
{
	double t;
	int64_t j;

	if (isnan(x))
		return NAN;
	t = cv->logscale ? (log(x) - log(cv->L)) / (log(cv->H) - log(cv->L)) : (x - cv->L) / (cv->H - cv->L);
	j = (int64_t)llround(ldexp(t, cv->bits));
	return fs_cell_value(cv, dir > 0 ? j - 1 : j + 1, cv->bits);
}

/* [a, b] as a JSON array, in ascending order. */
static json_t *
pair(double a, double b)
{
	return a <= b ? json_pack("[f,f]", a, b) : json_pack("[f,f]", b, a);
}

/* Sets item[<end><suffix>] (end "max" or "min") to v (stolen). */
static void
set_end(json_t *item, int dir, const char *suffix, json_t *v)
{
	char key[32];

	snprintf(key, sizeof key, "%s%s", dir > 0 ? "max" : "min", suffix);
	json_object_set_new(item, key, v);
}

/*
 * One end of c's range: dir 1 the supremum, -1 the infimum; hull: the
 * engine's grid hull at that end (NAN none). Sets into item "max" (or
 * "min"): a value that fits (null when none was found), "max_bracket":
 * [it, a value at and beyond which nothing fits] (equal when the end is
 * attained), "max_z3": whether Z3 confirmed both on exact rationals, and
 * "max_beyond": what proved that nothing fits beyond ("z3", "interval
 * bounds", "the range's end"; null: not proven). Returns 1 when all of it
 * was decided and proven, 0 otherwise (r->stopped says why).
 */
static int
range_end(struct rq *r, int dir, double hull, json_t *item)
{
	const struct fs_cvar *cv = &r->e->cvars[r->c];
	const char *why = NULL, *beyond = NULL;
	double end = dir > 0 ? cv->H : cv->L, eps = ANS_Z3_RANGE_PRECISION * (cv->H - cv->L);
	double got, none = isnan(hull) ? end : hull;
	int f, confirmed = 0;

	/* got fits, nothing fits at none (or none == got: attained) */
	if ((f = engine_fits(r, none)) < 0) {
		set_end(item, dir, "", json_null());
		return 0;
	}
	got = f ? none : first_fit(r, cell_inside(cv, hull, dir));
	if (isnan(got)) {
		stop(r, "no value fits on the engine's grid");
		set_end(item, dir, "", json_null());
		return 0;
	}
	f = 0;
	while (fabs(none - got) > eps) {
		double mid = got + (none - got) / 2;
		if (mid == got || mid == none)
			break;          /* adjacent doubles */
		if ((f = engine_fits(r, mid)) < 0)
			break;
		*(f ? &got : &none) = mid;
	}
	/* Z3 confirms both on exact rationals (the engine evaluates in doubles) */
	if (f >= 0) {
		confirmed = z3_fits_in(r, got, got, &why) == Z3C_SAT &&
		    (none == got || z3_fits_in(r, none, none, &why) == Z3C_UNSAT);
		if (!confirmed)
			stop(r, why != NULL ? why : "Z3 and the engine's floating-point evaluation disagree at the bracket");
	}
	/* nothing beyond none: Z3 over the reals if it decides, else the
	 * engine's interval bounds up to the hull, and the hull beyond */
	why = NULL;
	if (none == got && none == end)
		beyond = "the range's end";
	else if (confirmed && z3_fits_in(r, fmin(none, end), fmax(none, end), &why) == Z3C_UNSAT)
		beyond = "z3";
	else if (!isnan(hull) && (none == hull || fs_real_none_in(&r->x, r->c, fmin(none, hull), fmax(none, hull))))
		beyond = "interval bounds";
	else
		stop(r, why != NULL ? why : "nothing beyond the bracket could be proven");
	set_end(item, dir, "", json_real(got));
	set_end(item, dir, "_bracket", pair(got, none));
	set_end(item, dir, "_z3", json_boolean(confirmed));
	set_end(item, dir, "_beyond", beyond ? json_string(beyond) : json_null());
	return f >= 0 && confirmed && beyond != NULL;
}

/* One continuous var's item. NULL when out of memory. */
static json_t *
cvar_item(struct rq *r, const struct fs_projection *p)
{
	const struct fs_cvar *cv = &r->e->cvars[r->c];
	double hlo = p != NULL ? p->real_lo[r->c] : NAN, hhi = p != NULL ? p->real_hi[r->c] : NAN;
	json_t *item = json_pack("{s:s,s:f,s:f}", "name", r->q->space.dims[cv->dim].name, "low", cv->L, "high", cv->H);
	int exact = 0;
	int64_t mark = -3;

	if (item == NULL)
		return NULL;
	r->stopped = NULL;
	r->checks = 0;
	/* nested: only the configurations in which c takes part (its
	 * enclosing choices at the options that hold it) */
	if (cv->parent >= 0 && (mark = fs_restrict_active(&r->x, cv->parent, cv->active_pos, cv->active_pos)) < 0)
		r->stopped = mark == -1 ? "out of memory" : "no configuration in which it takes part";
	else if (p != NULL && isnan(hlo)) {
		/* the interval bounds rule out every cell: nothing fits */
		json_object_set_new(item, "feasible", json_false());
		exact = 1;
	} else {
		exact = range_end(r, -1, hlo, item);
		exact = range_end(r, 1, hhi, item) && exact;
		/* a value that fits was found (else: not decided, null) */
		if (json_is_number(json_object_get(item, "min")) || json_is_number(json_object_get(item, "max")))
			json_object_set_new(item, "feasible", json_true());
	}
	if (mark >= 0)
		fs_unrestrict(&r->x, mark);
	if (json_object_get(item, "feasible") == NULL)
		json_object_set_new(item, "feasible", json_null());
	json_object_set_new(item, "exact", json_boolean(exact));
	json_object_set_new(item, "grid_hull", isnan(hlo) ? json_null() : pair(hlo, hhi));
	json_object_set_new(item, "stopped", r->stopped ? json_string(r->stopped) : json_null());
	json_object_set_new(item, "z3_checks", json_integer(r->checks));
	return item;
}

json_t *
ans_z3_range(struct sq_query *q, struct fs_engine *e, unsigned rlimit, double seconds, struct dn_error *err)
{
	struct fs_projection p;
	struct rq r;
	int projected;
	json_t *list = NULL, *j = NULL;

	memset(&p, 0, sizeof p);
	memset(&r, 0, sizeof r);
	projected = e->lower == e->upper && fs_project(e, &p, err) == 0;
	if (!projected && dn_error_isset(err))
		return NULL;
	r.q = q;
	r.e = e;
	r.rlimit = rlimit;
	r.deadline = fs_now() + seconds;
	r.pos = calloc((size_t)e->nvars + 1, sizeof *r.pos);
	r.w = calloc((size_t)e->ncvars + 1, sizeof *r.w);
	if (r.pos == NULL || r.w == NULL || (list = json_array()) == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (fs_init_root(&r.x, q, q->feasible, err) != 0)
		goto out;
	r.x.deadline = r.deadline;
	for (r.c = 0; r.c < e->ncvars; r.c++) {
		json_t *item = cvar_item(&r, projected ? &p : NULL);
		if (item == NULL || json_array_append_new(list, item) != 0) {
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
			goto out;
		}
	}
	j = json_pack("{s:s,s:f,s:I,s:O}", "method", "bisection on the engine's exact evaluation, both ends confirmed by "
	    "Z3 on exact rationals, nothing beyond proven by Z3 over the reals or the engine's interval bounds",
	    "precision", ANS_Z3_RANGE_PRECISION, "rlimit", (json_int_t)rlimit, "continuous", list);
	if (j == NULL)
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
out:
	fs_free(&r.x);
	json_decref(list);
	free(r.pos);
	free(r.w);
	fs_projection_free(&p);
	return j;
}
