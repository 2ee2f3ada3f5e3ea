/*
 * op_merge.c - joining tensors: add and mul (with broadcasting: each
 * dimension equal, or 1 on one side) and concat along a dimension (all other
 * dimensions equal). Add and concat keep nothing for backward; mul keeps
 * each input that the other's gradient needs.
 */
#include "op_rules.h"

static int
broadcast(struct op_build *ob, expr_id *dims, int *rank)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *a = ob_in(ob, 0), *b = ob_in(ob, 1);
	int r = a->rank > b->rank ? a->rank : b->rank;
	expr_id one = expr_int(g, 1);

	for (int i = 0; i < r; i++) {
		int ia = i - (r - a->rank), ib = i - (r - b->rank);
		expr_id da = ia >= 0 ? a->dim[ia] : one, db = ib >= 0 ? b->dim[ib] : one;
		const char *n[] = { "left", "right" };
		expr_id v[] = { da, db };
		ob_require(ob, expr_or(g, expr_eq(g, da, db), expr_or(g, expr_eq(g, da, one), expr_eq(g, db, one))),
		    "shapes broadcast (each dimension equal, or 1)", 2, n, v);
		dims[i] = expr_max(g, da, db);
	}
	*rank = r;
	return 0;
}

static int
binary_build(struct op_build *ob, int is_mul)
{
	expr_id dims[CM_MAX_RANK];
	int r;
	const struct cm_tensor *a = ob_in(ob, 0), *b = ob_in(ob, 1);

	if (a->dtype == CM_DT_I64 || b->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs float inputs");
	if (broadcast(ob, dims, &r) != 0)
		return -1;
	if (ob_out_new(ob, r, dims, ob_widest(ob)) < 0)        /* fp16 + fp32 is fp32 */
		return -1;
	if (is_mul) {
		if (b->requires_grad)
			ob_save_input(ob, 0);
		if (a->requires_grad)
			ob_save_input(ob, 1);
	}
	op_elementwise_costs(ob, 1);
	return 0;
}

static int add_build(struct op_build *ob) { return binary_build(ob, 0); }
static int mul_build(struct op_build *ob) { return binary_build(ob, 1); }

static int
concat_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *a = ob_in(ob, 0);
	expr_id de = ob_int(ob, "dim", 1), dims[CM_MAX_RANK];
	int64_t d;

	if (de < 0)
		return -1;
	if (!expr_is_const(g, de))
		return ob_fail(ob, "dim", "must be a constant");
	d = g->nodes[de].k.i;
	if (d < -a->rank || d >= a->rank)
		return ob_fail(ob, "dim", "%lld is out of range for %d dimensions", (long long)d, a->rank);
	if (d < 0)
		d += a->rank;
	for (int k = 0; k < a->rank; k++)
		dims[k] = a->dim[k];
	for (int i = 1; i < ob->nin; i++) {
		const struct cm_tensor *b = ob_in(ob, i);
		if (b->rank != a->rank)
			return ob_fail(ob, NULL, "input %d has %d dimensions, input 0 has %d", i, b->rank, a->rank);
		if (b->dtype != a->dtype)
			return ob_fail(ob, NULL, "inputs have different dtypes");
		for (int k = 0; k < a->rank; k++) {
			if (k == d) {
				dims[k] = expr_add(g, dims[k], b->dim[k]);
				continue;
			}
			{
				const char *n[] = { "input 0", "other input" };
				expr_id v[] = { a->dim[k], b->dim[k] };
				ob_require(ob, expr_eq(g, a->dim[k], b->dim[k]),
				    "concat inputs agree on every other dimension", 2, n, v);
			}
		}
	}
	if (ob_out_new(ob, a->rank, dims, (enum cm_dtype)a->dtype) < 0)
		return -1;
	op_elementwise_costs(ob, 0);
	return 0;
}

static const char *const none_attrs[] = { NULL };
static const char *const concat_attrs[] = { "dim", NULL };

const struct op_rule op_rule_add = { "add", none_attrs, 2, 2, CM_CLASS_ELEMENTWISE, add_build };
const struct op_rule op_rule_mul = { "mul", none_attrs, 2, 2, CM_CLASS_ELEMENTWISE, mul_build };
const struct op_rule op_rule_concat = { "concat", concat_attrs, 1, CM_MAX_IN, CM_CLASS_ELEMENTWISE, concat_build };
