/*
 * onnx_op_reduce.c - ONNX reductions of an activation as model-format
 * layers: GlobalAveragePool and GlobalMaxPool (adaptive pooling to 1),
 * ReduceMean over every spatial axis (the same global average pool), and
 * ReduceMean, ReduceSum, ReduceMax and ReduceL2 over any other axes
 * (mean, sum, max, norm: costmodel/op_reduce.c).
 */
#include "onnx_op.h"

#include <string.h>

/* GlobalAveragePool and GlobalMaxPool (avg 1 or 0) of x [N, C, spatial...]
 * into o [N, C, 1...]: adaptive_avgpool2d / adaptive_maxpool2d over 2
 * spatial axes, adaptive_avgpool3d / adaptive_maxpool3d over 3 (torch's
 * AdaptiveAvgPool3d(1) and AdaptiveMaxPool3d(1) export so). */
int
onnx_op_global_pool(struct onnx_imp *im, int avg, struct onnx_val *x, struct onnx_val *o)
{
	char name[32];
	json_t *l;

	if (x->rank != 4 && x->rank != 5)
		return onnx_imp_fail(im, DN_EINVAL, "global pooling over %d spatial axes: only 2 and 3 are supported",
		    x->rank - 2);
	dn_fmt(name, sizeof name, "%s%dd", avg ? "adaptive_avgpool" : "adaptive_maxpool", x->rank - 2);
	l = onnx_op_emit(im, name, o, x, NULL);
	json_object_set_new(l, "output_size", json_integer(1));
	onnx_op_copy_shape(o, x);
	for (int k = 2; k < x->rank; k++)
		o->shape[k] = onnx_dim_int(1);
	return 0;
}

/* ReduceMean (how "mean"), ReduceSum ("sum") or ReduceMax ("max") of
 * activation x over constant axes (every axis when none are given, but
 * ReduceSum's noop_with_empty_axes). ReduceMean over every spatial axis of a 4-d or
 * 5-d x (axes 2.. in any order, negative or not) is a global average
 * pool, reshaped to [N, C] without keepdims; any other is the model
 * format's mean or sum (op_reduce.c: a text classifier's x.mean(1)). */
int
onnx_op_reduce(struct onnx_imp *im, const char *how, struct onnx_val *x, struct onnx_val *o)
{
	int sum = strcmp(how, "sum") == 0;
	int64_t axes[ONNX_MAX_RANK];
	int n = onnx_op_axes_of(im, axes, ONNX_MAX_RANK), seen = 0, keep = onnx_op_attr_i(im, "keepdims", 1) != 0, r = 0;
	json_t *l, *dims;

	if (n == -2)
		return -1;
	if (n < 0 && sum && onnx_op_attr_i(im, "noop_with_empty_axes", 0) != 0) {
		onnx_op_alias(o, x);
		return 0;
	}
	if (n < 0)
		for (n = 0; n < x->rank; n++)
			axes[n] = n;
	for (int i = 0; i < n; i++) {
		int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
		if (a < 0 || a >= x->rank || (seen & (1 << a)))
			return onnx_imp_fail(im, DN_EINVAL, "axis %lld is out of range or repeated for %d dimensions",
			    (long long)axes[i], x->rank);
		seen |= 1 << a;
	}
	if (strcmp(how, "mean") == 0 && (x->rank == 4 || x->rank == 5) && seen == ((1 << x->rank) - 4)) {
		if (onnx_op_global_pool(im, 1, x, o) < 0)
			return -1;
		if (!keep) {
			struct onnx_val p = *o;
			return onnx_op_reshape_to(im, &p, o, x->shape, 2, 1);
		}
		return 0;
	}
	l = onnx_op_emit(im, how, o, x, NULL);
	dims = json_array();
	for (int a = 0; a < x->rank; a++)
		if (seen & (1 << a))
			json_array_append_new(dims, json_integer(a));
	json_object_set_new(l, "dim", dims);
	if (keep)
		json_object_set_new(l, "keepdim", json_true());
	onnx_op_copy_shape(o, x);
	for (int a = 0; a < x->rank; a++)
		if (!(seen & (1 << a)))
			o->shape[r++] = x->shape[a];
		else if (keep)
			o->shape[r++] = onnx_dim_int(1);
	o->rank = r;
	return 0;
}
