/*
 * op_reduce.c - reductions of a tensor over some of its dimensions: mean,
 * sum, max and the L2 norm. The mean and the sum (torch.mean(x, dim,
 * keepdim), torch.sum; ONNX ReduceMean and ReduceSum): a text
 * classifier's mean over the tokens, x.mean(1) on
 * [N, L, E]. The output drops the reduced dimensions (or keeps them as 1
 * with keepdim). Autograd keeps nothing for backward: mean's and sum's
 * derivatives (PyTorch's derivatives.yaml: mean_backward, sum_backward)
 * need only the input's sizes, and the input's gradient is the output's
 * expanded back (a new tensor of the input's size, which the memory plan
 * counts as every operator's input gradient). One kernel each way; its
 * traffic reads the input and writes the output (forward), the reverse
 * in backward.
 *
 * norm (the L2 norm: torch.linalg.vector_norm, x.norm(dim=...), ONNX
 * ReduceL2, F.normalize's denominator) keeps its input and its result
 * (norm_backward(grad, self, p, result)).
 *
 * max (torch.max(x, dim).values, ONNX ReduceMax) keeps the int64 indices
 * of the maxima, one per output element (max.dim's backward scatters the
 * gradient to them: value_selecting_reduction_backward); over a list of
 * dimensions it is torch.amax, which keeps its input and its result
 * (amax_backward compares them).
 */
#include "op_rules.h"

/* The dimensions "dim" names (an integer or a list of distinct integers,
 * negative ones from the end) into reduce[]; their count, or -1 through
 * ob_fail. */
static int
reduce_dims(struct op_build *ob, int rank, int *reduce)
{
	const json_t *dl = json_object_get(ob->item, "dim");
	const json_t *v;
	size_t i, n;

	if (dl == NULL)
		return ob_fail(ob, "dim", "is required: the dimension or the list of dimensions to reduce");
	n = json_is_array(dl) ? json_array_size(dl) : 1;
	if (!json_is_integer(dl) && (!json_is_array(dl) || n == 0))
		return ob_fail(ob, "dim", "must be an integer or a non-empty list of integers");
	for (i = 0; i < n; i++) {
		int d;
		v = json_is_array(dl) ? json_array_get(dl, i) : dl;
		if (!json_is_integer(v))
			return ob_fail(ob, "dim", "must be an integer or a non-empty list of integers");
		if (op_norm_dim(ob, "dim", json_integer_value(v), rank, &d) != 0)
			return -1;
		if (reduce[d]++)
			return ob_fail(ob, "dim", "dimension %lld is listed twice", (long long)d);
	}
	return (int)n;
}

enum reduce_kind { REDUCE_MEAN_SUM, REDUCE_MAX, REDUCE_NORM };

/* mean and sum, max, norm. */
static int
reduce_any(struct op_build *ob, enum reduce_kind kind)
{
	const struct cm_tensor *x = ob_in(ob, 0);
	struct expr_graph *g = &ob->m->g;
	int reduce[CM_MAX_RANK] = { 0 }, keep = ob_bool(ob, "keepdim", 0), r = 0, n;
	expr_id dims[CM_MAX_RANK];

	if (keep < 0 || (n = reduce_dims(ob, x->rank, reduce)) < 0)
		return -1;
	for (int d = 0; d < x->rank; d++)
		if (!reduce[d])
			dims[r++] = x->dim[d];
		else if (keep)
			dims[r++] = expr_int(g, 1);
	if (ob_out_new(ob, r, dims, (enum cm_dtype)x->dtype) < 0)
		return -1;
	if (kind == REDUCE_MAX && n == 1)
		ob_save_new(ob, ob_bytes(ob, ob->m->tensors[ob->out].elems, CM_DT_I64));
	else if (kind != REDUCE_MEAN_SUM) {
		ob_save_input(ob, 0);
		ob_save_output(ob);
	}
	/* one add (compare) per input element; the work spreads over the input */
	op_elementwise_costs(ob, 0);
	ob->op.flops_other = x->elems;
	ob->op.parallel = x->elems;
	return 0;
}

static int reduce_build(struct op_build *ob) { return reduce_any(ob, REDUCE_MEAN_SUM); }
static int max_build(struct op_build *ob) { return reduce_any(ob, REDUCE_MAX); }
static int norm_build(struct op_build *ob) { return reduce_any(ob, REDUCE_NORM); }

static const char *const reduce_attrs[] = { "dim", "keepdim", NULL };

const struct op_rule op_rule_mean = { "mean", reduce_attrs, 1, 1, CM_CLASS_REDUCTION, reduce_build };
const struct op_rule op_rule_sum = { "sum", reduce_attrs, 1, 1, CM_CLASS_REDUCTION, reduce_build };
const struct op_rule op_rule_max = { "max", reduce_attrs, 1, 1, CM_CLASS_REDUCTION, max_build };
const struct op_rule op_rule_norm = { "norm", reduce_attrs, 1, 1, CM_CLASS_REDUCTION, norm_build };
