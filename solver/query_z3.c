/*
 * query_z3.c - a query's feasible set as Z3 assertions: the grid of every
 * variable the engine enumerates and the fixed value of every
 * hyperparameter the space does not set, declared first as finite domains
 * (z3c_var_domain: nonlinear cost terms over them become tables), then the
 * shapes' validity, each budget as a linear-split "at most" (z3c_at_most,
 * which Z3 decides far faster than the nested maxima of the peak) and each
 * user constraint. Z3 is the reference semantics the engine is tested
 * against, and answers what enumeration cannot.
 */
#include "query_z3.h"

#include <math.h>
#include <stdlib.h>

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
sq_z3_assertions(struct sq_query *q, const struct fs_engine *e, struct z3c *z, Z3_ast **out,
    struct dn_error *err)
{
	const struct expr_graph *g = cm_model_graph(q->model);
	int n = 0, nhp = q->def->nhps;
	Z3_ast *as = calloc((size_t)(q->nparts + e->nvars + nhp) + 1, sizeof *as);

	if (as == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	for (int v = 0; v < e->nvars; v++) {
		Z3_ast a;
		if (var_assertion(e, &e->vars[v], z, &a) != 0)
			goto fail;
		if (a != NULL)
			as[n++] = a;
	}
	for (int h = 0; h < nhp; h++) {
		Z3_ast a;
		if (hp_vars(e, h) > 0)
			continue;
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
	*out = as;
	return n;
fail:
	free(as);
	if (z3c_error(z, err) == 0)
		dn_error_set(err, DN_EINTERNAL, NULL, "could not compile the query for Z3");
	return -1;
}
