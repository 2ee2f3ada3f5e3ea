/*
 * op_common.c - helpers shared by the operator rules: memory traffic of an
 * operator, the costs of elementwise work, and a dimension attribute's
 * check (see op_rules.h).
 */
#include "op_rules.h"

int
op_norm_dim(struct op_build *ob, const char *name, int64_t d, int rank, int *out)
{
	if (d < -rank || d >= rank)
		return ob_fail(ob, name, "dimension %lld is out of range for %d dimensions", (long long)d, rank);
	*out = (int)(d < 0 ? d + rank : d);
	return 0;
}

void
op_io_bytes(struct op_build *ob, int with_params)
{
	struct expr_graph *g = &ob->m->g;
	expr_id b = expr_int(g, 0);

	for (int i = 0; i < ob->nin; i++) {
		const struct cm_tensor *t = ob_in(ob, i);
		b = expr_add(g, b, ob_bytes(ob, t->elems, (enum cm_dtype)t->dtype));
	}
	if (ob->out >= 0) {
		const struct cm_tensor *o = &ob->m->tensors[ob->out];
		b = expr_add(g, b, ob_bytes(ob, o->elems, (enum cm_dtype)o->dtype));
	}
	if (with_params)
		b = expr_add(g, b, expr_mul(g, ob->op.params, expr_int(g, ob->m->act_bytes)));
	ob->op.fwd_bytes = b;
	ob->op.bwd_bytes = expr_mul(g, b, expr_int(g, 2));
}

void
op_elementwise_costs(struct op_build *ob, int flops)
{
	struct expr_graph *g = &ob->m->g;
	expr_id n = ob->m->tensors[ob->out].elems;

	ob->op.flops_other = expr_mul(g, n, expr_int(g, flops));
	ob->op.parallel = n;
	op_io_bytes(ob, 0);
}
