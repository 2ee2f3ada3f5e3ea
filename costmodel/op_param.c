/*
 * op_param.c - "parameter": a learned tensor of a given shape joined to the
 * input, as ViT's class token and position embedding (torchvision
 * VisionTransformer: class_token [1, 1, E] expanded over the batch and
 * concatenated before the patches; pos_embedding [1, L + 1, E] added).
 *
 *   combine "add"      x + p, p broadcast onto x (each of p's dims equal to
 *                      x's or 1; p's rank at most x's): output shaped as x
 *   combine "prepend"  cat([p.expand(...), x], dim): p has x's rank, each
 *   combine "append"   dim other than `dim` equal to x's or 1 (expanded,
 *                      a view); output x's shape with dim grown by p's
 *
 * The tensor counts as parameters (so gradients and optimizer state follow
 * from the workload), as a 2-d weight for Adafactor when it has two or more
 * dims (op_build.h ob_param_2d). Autograd keeps nothing: add and cat need
 * no saved tensors. Costs: one elementwise kernel (1 FLOP per output
 * element for add, a copy for concatenation).
 */
#include "op_rules.h"

#include <string.h>

static int
param_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	const char *how = json_string_value(json_object_get(ob->item, "combine"));
	expr_id p[CM_MAX_RANK], dims[CM_MAX_RANK], elems, one = expr_int(g, 1);
	int pr, cat = 0, d = 0;

	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	if (how == NULL && ob_has(ob, "combine"))
		return ob_fail(ob, "combine", "must be \"add\", \"prepend\" or \"append\"");
	if (how != NULL && strcmp(how, "add") != 0) {
		if (strcmp(how, "prepend") != 0 && strcmp(how, "append") != 0)
			return ob_fail(ob, "combine", "must be \"add\", \"prepend\" or \"append\"");
		cat = 1;
	}
	pr = ob_dims(ob, "shape", p);
	if (pr < 0)
		return -1;
	if (pr > x->rank || (cat && pr != x->rank))
		return ob_fail(ob, "shape", "has %d dimensions; the input has %d", pr, x->rank);
	if (cat) {
		expr_id de = ob_int(ob, "dim", 1);
		if (de < 0)
			return -1;
		if (!expr_is_const(g, de))
			return ob_fail(ob, "dim", "must be a constant");
		d = (int)g->nodes[de].k.i;
		if (d < -x->rank || d >= x->rank)
			return ob_fail(ob, "dim", "%d is out of range for %d dimensions", d, x->rank);
		if (d < 0)
			d += x->rank;
	} else if (ob_has(ob, "dim"))
		return ob_fail(ob, "dim", "is only for \"prepend\" and \"append\"");
	for (int i = 0; i < x->rank; i++) {
		int ip = i - (x->rank - pr);
		dims[i] = x->dim[i];
		if (ip < 0)
			continue;
		if (cat && i == d) {
			dims[i] = expr_add(g, x->dim[i], p[ip]);
			continue;
		}
		{
			const char *n[] = { "input", "parameter" };
			expr_id v[] = { x->dim[i], p[ip] };
			ob_require(ob, expr_or(g, expr_eq(g, p[ip], x->dim[i]), expr_eq(g, p[ip], one)),
			    "the parameter's dimensions match the input's or are 1", 2, n, v);
		}
	}
	if (ob_out_new(ob, x->rank, dims, ob_autocast_f32(ob)) < 0)       /* with an fp32 parameter: fp32 under autocast */
		return -1;
	elems = ob_elems(ob, pr, p);
	if (pr >= 2) {
		expr_id lead = ob_elems(ob, pr - 2, p);
		ob_param_2d(ob, elems, expr_mul(g, lead, p[pr - 2]), expr_mul(g, lead, p[pr - 1]));
	} else
		ob_param(ob, elems);
	op_elementwise_costs(ob, cat ? 0 : 1);
	return 0;
}

static const char *const param_attrs[] = { "shape", "combine", "dim", NULL };

const struct op_rule op_rule_parameter = { "parameter", param_attrs, 1, 1, CM_CLASS_ELEMENTWISE, param_build };
