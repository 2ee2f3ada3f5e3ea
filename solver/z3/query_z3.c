/*
 * query_z3.c - a query's feasible set as Z3 assertions: the grid of every
 * variable the engine enumerates and the fixed value of every
 * hyperparameter the space does not set, declared first as finite domains
 * (z3c_var_domain: nonlinear cost terms over them become tables), then the
 * shapes' validity, each budget as a linear-split "at most" (z3c_at_most,
 * which Z3 decides far faster than the nested maxima of the peak) and each
 * user constraint. Z3 is the reference semantics the engine is tested
 * against, and answers what enumeration cannot.
 *
 * Nested dims: a hyperparameter set only by nested vars takes the grid of
 * the var that is active (each enclosing choice at the option that
 * activates it), and its fixed value when none is, as the engine's
 * fs_config_of has it; its domain is the union of those values.
 *
 * Vars that pass through (they set no hyperparameter) and are nested or
 * hold nested vars (sq_z3_selects: NNI's {"_name": ...} options of an
 * "arch" or "method" choice, a learning rate inside one of them) are graph
 * variables of their own, selectors, declared once per query
 * (sq_query.z3_selectors): the var's position where it takes part, 0
 * where it does not. Z3 then conditions what such a choice holds on its
 * option, and each model is one configuration of them, so that Z3's models
 * times the positions of the top-level vars that pass through are the
 * engine's configurations.
 */
#include "query_z3.h"
#include "dn_deadline.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "space.h"

/* The number of engine variables bound to hyperparameter hp. */
static int
hp_vars(const struct fs_engine *e, int hp)
{
	int n = 0;

	for (int v = 0; v < e->nvars; v++)
		n += e->vars[v].hp == hp;
	return n;
}

/* The grid of engine variable x as a constraint in *a, declared as a
 * finite domain when x is its hyperparameter's only variable (also for a
 * REAL one: width multipliers). A grid computed on demand (huge), or a
 * REAL one shared by several variables, gives *a = NULL. 0 or -1. */
static int
var_assertion(const struct fs_engine *e, const struct fs_var *x, struct z3c *z, Z3_ast *a)
{
	int64_t *ints;

	*a = NULL;
	if (x->hp < 0 || x->vals == NULL)
		return 0;
	if (hp_vars(e, x->hp) == 1)
		*a = z3c_var_domain(z, x->hp, x->vals, x->n);
	else if (!x->real) {
		if ((ints = malloc(sizeof *ints * (size_t)x->n)) == NULL)
			return -1;
		for (int64_t p = 0; p < x->n; p++)
			ints[p] = x->vals[p].i;
		*a = z3c_var_in_ints(z, x->hp, ints, x->n);
		free(ints);
	} else
		return 0;
	return *a == NULL ? -1 : 0;
}

int
sq_z3_selects(const struct fs_var *x)
{
	return x->hp < 0 && (x->parent >= 0 || x->has_children);
}

/* Declares q's selectors (struct sq_query.z3_selectors) for the vars of e
 * that sq_z3_selects and have none yet, as Int graph variables named after
 * their dims. 0 or -1 (out of memory). */
static int
declare_selectors(struct sq_query *q, const struct fs_engine *e)
{
	struct expr_graph *g = (struct expr_graph *)cm_model_graph(q->model);
	char name[512];

	if (q->z3_selectors == NULL) {
		if ((q->z3_selectors = malloc(sizeof *q->z3_selectors * ((size_t)q->space.ndims + 1))) == NULL)
			return -1;
		for (int d = 0; d < q->space.ndims; d++)
			q->z3_selectors[d] = -1;
	}
	for (int v = 0; v < e->nvars; v++) {
		const struct fs_var *x = &e->vars[v];
		if (!sq_z3_selects(x) || q->z3_selectors[x->dim] >= 0)
			continue;
		snprintf(name, sizeof name, "%s (position)", q->space.dims[x->dim].name);
		if ((q->z3_selectors[x->dim] = expr_graph_add_var(g, name, EXPR_INT)) < 0)
			return -1;
	}
	return 0;
}

/* Whether something under engine var `parent` at position `active_pos`
 * takes part, as a Bool in *act (see var_active); parent < 0: top level,
 * *act = NULL. 0 or -1. */
static int
chain_active(const struct sq_query *q, const struct fs_engine *e, int parent, int64_t active_pos, struct z3c *z,
    Z3_ast *act)
{
	Z3_ast parts[SP_MAX_DEPTH + 1];
	unsigned k = 0;

	*act = NULL;
	for (; parent >= 0 && k < SP_MAX_DEPTH + 1; active_pos = e->vars[parent].active_pos,
	    parent = e->vars[parent].parent) {
		const struct fs_var *p = &e->vars[parent];
		int64_t opt = active_pos;
		int32_t var = p->hp;
		if (sq_z3_selects(p))
			var = q->z3_selectors[p->dim];
		else if (p->hp < 0 || p->vals == NULL || p->real)
			return 0;
		else
			opt = p->vals[active_pos].i;
		if ((parts[k++] = z3c_var_in_ints(z, var, &opt, 1)) == NULL)
			return -1;
	}
	if (k > 0 && (*act = z3c_keep(z, Z3_mk_and(z->ctx, k, parts))) == NULL)
		return -1;
	return 0;
}

/* Whether engine var v takes part, as a Bool in *act: each enclosing
 * choice at the option that activates it. *act = NULL: a top-level var, or
 * one under a choice Z3 cannot see (a hyperparameter's without a grid).
 * 0 or -1. */
static int
var_active(const struct sq_query *q, const struct fs_engine *e, int v, struct z3c *z, Z3_ast *act)
{
	return chain_active(q, e, e->vars[v].parent, e->vars[v].active_pos, z, act);
}

/* `in` where `act` holds (act NULL: always), `otherwise` where it does
 * not: a var or continuous var that takes part only where its enclosing
 * choices pick it. Appends to as[*n]. 0 or -1. */
static int
where_active(struct z3c *z, Z3_ast act, Z3_ast in, Z3_ast otherwise, Z3_ast *as, int *n)
{
	if (act == NULL) {
		as[(*n)++] = in;
		return 0;
	}
	if (otherwise == NULL || (as[(*n)++] = z3c_keep(z, Z3_mk_implies(z->ctx, act, in))) == NULL ||
	    (as[(*n)++] = z3c_keep(z, Z3_mk_or(z->ctx, 2, (Z3_ast[]){ act, otherwise }))) == NULL)
		return -1;
	return 0;
}

/* Selector var v (sq_z3_selects): one of its positions where it takes
 * part, 0 where it does not. Appends to as[*n]. 0 or -1. */
static int
selector(const struct sq_query *q, const struct fs_engine *e, int v, struct z3c *z, Z3_ast *as, int *n)
{
	int32_t var = q->z3_selectors[e->vars[v].dim];
	Z3_ast in = z3c_var_in_progression(z, var, 0, 1, e->vars[v].n), act;

	if (in == NULL || var_active(q, e, v, z, &act) != 0)
		return -1;
	return where_active(z, act, in, act != NULL ? z3c_var_in_ints(z, var, &(int64_t){ 0 }, 1) : NULL, as, n);
}

/* hp is one of x's grid values, as a Bool (no domain declared). */
static Z3_ast
in_grid(const struct fs_var *x, struct z3c *z)
{
	Z3_ast *eqs, r;
	int64_t *ints;

	if (!x->real) {
		if ((ints = malloc(sizeof *ints * ((size_t)x->n + 1))) == NULL)
			return NULL;
		for (int64_t p = 0; p < x->n; p++)
			ints[p] = x->vals[p].i;
		r = z3c_var_in_ints(z, x->hp, ints, x->n);
		free(ints);
		return r;
	}
	if ((eqs = malloc(sizeof *eqs * ((size_t)x->n + 1))) == NULL)
		return NULL;
	for (int64_t p = 0; p < x->n; p++)
		if ((eqs[p] = z3c_keep(z, Z3_mk_eq(z->ctx, z3c_var(z, x->hp), z3c_real(z, x->vals[p].r)))) == NULL) {
			free(eqs);
			return NULL;
		}
	r = z3c_keep(z, Z3_mk_or(z->ctx, (unsigned)x->n, eqs));
	free(eqs);
	return r;
}

static int
val_cmp(const void *a, const void *b, void *real)
{
	const union expr_val *x = a, *y = b;

	if (*(int *)real)
		return (x->r > y->r) - (x->r < y->r);
	return (x->i > y->i) - (x->i < y->i);
}

/*
 * Hyperparameter h, set only by nested vars that Z3 can condition (their
 * nv vars in vs, the Bool of each taking part in acts): its domain (the
 * vars' grids and its fixed value), each var's grid where it takes part,
 * and the fixed value where none does. Appends to as[*n]. 0 or -1.
 */
static int
nested_hp(const struct sq_query *q, const struct fs_engine *e, int h, const int *vs, const Z3_ast *acts, int nv,
    struct z3c *z, Z3_ast *as, int *n)
{
	int real = e->vars[vs[0]].real;
	int64_t nvals = 1, k = 0;
	union expr_val *vals;
	Z3_ast none, fixed;

	for (int i = 0; i < nv; i++)
		nvals += e->vars[vs[i]].n;
	if ((vals = malloc(sizeof *vals * (size_t)nvals)) == NULL)
		return -1;
	vals[k++] = q->fixed[h];
	for (int i = 0; i < nv; i++)
		for (int64_t p = 0; p < e->vars[vs[i]].n; p++)
			vals[k++] = e->vars[vs[i]].vals[p];
	qsort_r(vals, (size_t)nvals, sizeof *vals, val_cmp, &real);
	k = 0;
	for (int64_t i = 0; i < nvals; i++)
		if (k == 0 || val_cmp(&vals[k - 1], &vals[i], &real) != 0)
			vals[k++] = vals[i];
	as[(*n)++] = z3c_var_domain(z, h, vals, k);
	free(vals);
	if (as[*n - 1] == NULL)
		return -1;
	for (int i = 0; i < nv; i++) {
		Z3_ast g = in_grid(&e->vars[vs[i]], z);
		if (g == NULL || (as[(*n)++] = z3c_keep(z, Z3_mk_implies(z->ctx, acts[i], g))) == NULL)
			return -1;
	}
	fixed = in_grid(&(struct fs_var){ .hp = h, .n = 1, .vals = &((union expr_val *)q->fixed)[h], .real = real }, z);
	none = fixed ? z3c_keep(z, Z3_mk_not(z->ctx, z3c_keep(z, Z3_mk_or(z->ctx, (unsigned)nv, acts)))) : NULL;
	if (none == NULL || (as[(*n)++] = z3c_keep(z, Z3_mk_implies(z->ctx, none, fixed))) == NULL)
		return -1;
	return 0;
}

/* The continuous var (struct fs_cvar) bound to hyperparameter h, or -1. */
static int
cvar_of_hp(const struct fs_engine *e, int h)
{
	for (int c = 0; c < e->ncvars; c++)
		if (e->cvars[c].hp == h)
			return c;
	return -1;
}

int
sq_z3_cvar_active(const struct sq_query *q, const struct fs_engine *e, int c, struct z3c *z, Z3_ast *act)
{
	return chain_active(q, e, e->cvars[c].parent, e->cvars[c].active_pos, z, act);
}

/*
 * Continuous var c as a free real: within its range where it takes part,
 * its fixed value where it does not. Appends to as[*n]. 0 or -1.
 */
static int
free_real(const struct sq_query *q, const struct fs_engine *e, int c, struct z3c *z, Z3_ast *as, int *n)
{
	const struct fs_cvar *cv = &e->cvars[c];
	Z3_ast act, in = z3c_var_in_range_real(z, cv->hp, cv->L, cv->H), fixed;

	if (in == NULL || sq_z3_cvar_active(q, e, c, z, &act) != 0)
		return -1;
	fixed = act != NULL ? z3c_var_in_range_real(z, cv->hp, q->fixed[cv->hp].r, q->fixed[cv->hp].r) : NULL;
	return where_active(z, act, in, fixed, as, n);
}

static int
assertions(struct sq_query *q, const struct fs_engine *e, int reals, struct z3c *z, Z3_ast **out,
    struct dn_error *err)
{
	const struct expr_graph *g = cm_model_graph(q->model);
	int n = 0, nhp = q->def->nhps;
	Z3_ast *as = calloc((size_t)(q->nparts + 4 * e->nvars + 2 * nhp) + 1, sizeof *as);
	Z3_ast *acts = calloc((size_t)e->nvars + 1, sizeof *acts);
	int *vs = calloc((size_t)e->nvars + 1, sizeof *vs);

	if (as == NULL || acts == NULL || vs == NULL || declare_selectors(q, e) != 0) {
		free(as);
		free(acts);
		free(vs);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	for (int h = 0; h < nhp; h++) {
		int nv = 0, conditioned = 1;
		/* its vars: all nested, all with Z3-visible choices and grids? */
		for (int v = 0; v < e->nvars; v++) {
			if (e->vars[v].hp != h)
				continue;
			if (var_active(q, e, v, z, &acts[nv]) != 0)
				goto fail;
			conditioned &= acts[nv] != NULL && e->vars[v].vals != NULL;
			vs[nv++] = v;
		}
		if (nv > 0 && conditioned) {
			if (nested_hp(q, e, h, vs, acts, nv, z, as, &n) != 0)
				goto fail;
			continue;
		}
		for (int i = 0; i < nv; i++) {
			Z3_ast a;
			if (var_assertion(e, &e->vars[vs[i]], z, &a) != 0)
				goto fail;
			if (a != NULL)
				as[n++] = a;
		}
	}
	for (int v = 0; v < e->nvars; v++)
		if (sq_z3_selects(&e->vars[v]) && selector(q, e, v, z, as, &n) != 0)
			goto fail;
	for (int h = 0; h < nhp; h++) {
		Z3_ast a;
		int c = cvar_of_hp(e, h);
		if (hp_vars(e, h) > 0)
			continue;
		if (reals && c >= 0) {
			if (free_real(q, e, c, z, as, &n) != 0)
				goto fail;
			continue;
		}
		a = z3c_var_domain(z, h, &q->fixed[h], 1);
		if (a == NULL)
			goto fail;
		as[n++] = a;
	}
	for (int i = 0; i < q->nparts; i++) {
		const struct sq_part *p = &q->parts[i];
		Z3_ast a;
		if (p->kind == 1 && p->value >= 0 && p->limit >= 0 && strcmp(p->path, "$.budgets.min_utilization") != 0)
			a = z3c_at_most(z, p->value, g->nodes[p->value].type == EXPR_REAL ?
			    z3c_real(z, p->limit) : z3c_int(z, (int64_t)floor(p->limit)));
		else
			a = z3c_bool(z, p->ok);
		if (a == NULL)
			goto fail;
		as[n++] = a;
	}
	free(acts);
	free(vs);
	*out = as;
	return n;
fail:
	free(as);
	free(acts);
	free(vs);
	if (z3c_error(z, err) == 0)
		dn_error_set(err, DN_EINTERNAL, NULL, "could not compile the query for Z3");
	return -1;
}

int
sq_z3_assertions(struct sq_query *q, const struct fs_engine *e, struct z3c *z, Z3_ast **out,
    struct dn_error *err)
{
	return assertions(q, e, 0, z, out, err);
}

int
sq_z3_assertions_real(struct sq_query *q, const struct fs_engine *e, struct z3c *z, Z3_ast **out,
    struct dn_error *err)
{
	return assertions(q, e, 1, z, out, err);
}

static pthread_once_t z3_params_once = PTHREAD_ONCE_INIT;

/* Z3's arithmetic solver 2 (the one its own developers recommend for
 * linear integer problems with tables) decides these queries fastest; a
 * global parameter, set once before the first context. */
static void
z3_params(void)
{
	Z3_global_param_set("smt.arith.solver", "2");
}

int
sq_z3_open(struct sq_query *q, const struct fs_engine *e, unsigned rlimit, double seconds, double compile_by,
    int reals, struct z3c *z, Z3_ast **as, struct dn_error *err)
{
	return sq_z3_open_at(q, e, rlimit, seconds, compile_by, reals, -1, 0.0, z, as, err);
}

int
sq_z3_open_at(struct sq_query *q, const struct fs_engine *e, unsigned rlimit, double seconds, double compile_by,
    int reals, int c, double value, struct z3c *z, Z3_ast **as, struct dn_error *err)
{
	unsigned ms = seconds <= 0 ? 1u : seconds > 3600.0 ? 3600000u : (unsigned)(seconds * 1000.0);
	union expr_val v = { .r = value };
	double before;
	int n;

	pthread_once(&z3_params_once, z3_params);
	if (z3c_init(z, cm_model_graph(q->model), ms, rlimit, err) != 0)
		return -1;
	/* declared first, so that the terms over it become tables */
	if (c >= 0 && z3c_var_domain(z, e->cvars[c].hp, &v, 1) == NULL) {
		if (z3c_error(z, err) == 0)
			dn_error_set(err, DN_EINTERNAL, NULL, "could not fix a continuous value for Z3");
		z3c_free(z);
		return -1;
	}
	before = dn_deadline_narrow(compile_by);
	n = assertions(q, e, reals, z, as, err);
	dn_deadline_restore(before);
	if (n < 0)
		z3c_free(z);
	return n;
}
