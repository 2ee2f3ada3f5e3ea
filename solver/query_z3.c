/*
 * query_z3.c - a query's feasible set as Z3 assertions: the shapes' validity,
 * each budget as a linear-split "at most" (z3c_at_most, which Z3 decides far
 * faster than the nested maxima of the peak), each user constraint, the
 * grid of every variable the engine enumerates and the fixed value of every
 * hyperparameter the space does not set. Z3 is the reference semantics the
 * engine is tested against, and answers what enumeration cannot.
 */
#include "query_z3.h"

#include <math.h>
#include <stdlib.h>

int
sq_z3_assertions(struct sq_query *q, const struct fs_engine *e, struct z3c *z, Z3_ast **out,
    struct dn_error *err)
{
	const struct expr_graph *g = cm_model_graph(q->model);
	int n = 0, nhp = q->def->nhps;
	Z3_ast *as = calloc((size_t)(q->nparts + e->nvars + nhp) + 1, sizeof *as);

	if (as == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
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
	for (int v = 0; v < e->nvars; v++) {
		const struct fs_var *x = &e->vars[v];
		int64_t *vals;
		Z3_ast a;
		if (x->hp < 0 || x->real || x->vals == NULL)
			continue;
		vals = malloc(sizeof *vals * (size_t)x->n);
		if (vals == NULL)
			goto fail;
		for (int64_t p = 0; p < x->n; p++)
			vals[p] = x->vals[p].i;
		a = z3c_var_in_ints(z, x->hp, vals, x->n);
		free(vals);
		if (a == NULL)
			goto fail;
		as[n++] = a;
	}
	for (int h = 0; h < nhp; h++) {
		int set = 0;
		Z3_ast a;
		for (int v = 0; v < e->nvars; v++)
			set |= e->vars[v].hp == h;
		if (set)
			continue;
		if (q->def->hps[h].type == CM_HP_REAL)
			a = z3c_var_in_range_real(z, h, q->fixed[h].r, q->fixed[h].r);
		else
			a = z3c_var_in_ints(z, h, &q->fixed[h].i, 1);
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
