/*
 * op_activation.c - pointwise activations, softmax, dropout and scaling.
 * What autograd keeps follows PyTorch's derivative formulas: relu, sigmoid,
 * tanh and softmax keep their result (softmax its input too when the
 * workload says PyTorch <= 1.10 did: ob_save_softmax_input); gelu, silu,
 * hardswish, hardsigmoid, softplus and mish their input (an in-place one
 * keeps a copy of the original input); leaky_relu and elu their input, or
 * in place their result (leaky_relu_ and elu_ differentiate through the
 * result); prelu its input (and its learnable slopes, parameters); relu6
 * (hardtanh) its input, in place a copy of it;
 * dropout a bool mask.
 */
#include "op_rules.h"

#include <math.h>
#include <string.h>

enum keeps { KEEP_RESULT, KEEP_INPUT, KEEP_NOTHING };

static int
pointwise(struct op_build *ob, enum keeps keep, int inplace_allowed, int flops)
{
	const struct cm_tensor *x = ob_in(ob, 0);
	int inplace = inplace_allowed ? ob_bool(ob, "inplace", 0) : 0;

	if (inplace < 0)
		return -1;
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	if (inplace) {
		if (ob_out_inplace(ob, 0) < 0)
			return -1;
		if (keep == KEEP_INPUT)         /* the original is overwritten: autograd keeps a copy */
			ob_save_new(ob, ob_bytes(ob, x->elems, (enum cm_dtype)x->dtype));
		else if (keep == KEEP_RESULT)
			ob_save_output(ob);
	} else {
		if (ob_out_new(ob, x->rank, x->dim, (enum cm_dtype)x->dtype) < 0)
			return -1;
		if (keep == KEEP_RESULT)
			ob_save_output(ob);
		else if (keep == KEEP_INPUT)
			ob_save_input(ob, 0);
	}
	op_elementwise_costs(ob, flops);
	return 0;
}

static int relu_build(struct op_build *ob) { return pointwise(ob, KEEP_RESULT, 1, 1); }
static int sigmoid_build(struct op_build *ob) { return pointwise(ob, KEEP_RESULT, 0, 4); }
static int tanh_build(struct op_build *ob) { return pointwise(ob, KEEP_RESULT, 0, 4); }
static int silu_build(struct op_build *ob) { return pointwise(ob, KEEP_INPUT, 1, 5); }
static int hardswish_build(struct op_build *ob) { return pointwise(ob, KEEP_INPUT, 1, 4); }
/* MobileNetV3's squeeze-excitation gate: hardsigmoid_backward(grad, self) */
static int hardsigmoid_build(struct op_build *ob) { return pointwise(ob, KEEP_INPUT, 1, 3); }

/* An activation with one number attribute in [lo, hi] (a slope, alpha,
 * beta): checked, then costed as keep says; in place (where allowed) it
 * keeps its result instead of its input when result_in_place. */
static int
scalar_act(struct op_build *ob, const char *attr, double dflt, double lo, double hi, int inplace_allowed,
    int result_in_place, int flops)
{
	int inplace = inplace_allowed ? ob_bool(ob, "inplace", 0) : 0;
	double v = attr != NULL ? ob_number(ob, attr, dflt, lo, hi) : 0;

	if (inplace < 0 || isnan(v))
		return -1;
	return pointwise(ob, inplace && result_in_place ? KEEP_RESULT : KEEP_INPUT, inplace_allowed, flops);
}

/* leaky_relu_backward(grad, self | result, ...) */
static int
leaky_relu_build(struct op_build *ob)
{
	return scalar_act(ob, "negative_slope", 0.01, -1e6, 1e6, 1, 1, 2);
}

/* elu_backward(grad, alpha, scale, input_scale, is_result, self | result) */
static int
elu_build(struct op_build *ob)
{
	return scalar_act(ob, "alpha", 1.0, -1e6, 1e6, 1, 1, 5);
}

/* softplus_backward(grad, self, beta, threshold) */
static int
softplus_build(struct op_build *ob)
{
	double t = ob_number(ob, "threshold", 20.0, -1e6, 1e6);

	if (isnan(t))
		return -1;
	return scalar_act(ob, "beta", 1.0, 1e-12, 1e6, 0, 0, 6);
}

/* mish_backward(grad, self): x * tanh(softplus(x)) */
static int mish_build(struct op_build *ob) { return scalar_act(ob, NULL, 0, 0, 0, 1, 0, 9); }

/* nn.PReLU: a learnable slope per channel (dim 1) or one for all;
 * _prelu_kernel_backward(grad, self, weight) keeps the input */
static int
prelu_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	expr_id n = ob_int(ob, "num_parameters", 1);

	if (n < 0 || pointwise(ob, KEEP_INPUT, 0, 2) != 0)
		return -1;
	{
		const char *nm[] = { "num_parameters" };
		expr_id ch = x->rank >= 2 ? x->dim[1] : expr_int(g, 1);
		ob_require(ob, expr_or(g, expr_eq(g, n, expr_int(g, 1)), expr_eq(g, n, ch)),
		    "num_parameters is 1 or the input's channels (dim 1), as nn.PReLU checks", 1, nm, &n);
	}
	ob_param(ob, n);
	return 0;
}

/*
 * gelu: "none" (erf) and "tanh" are one fused kernel keeping the input;
 * "tanh_python" is Hugging Face's NewGELUActivation, 0.5 * x * (1 + tanh(
 * sqrt(2/pi) * (x + 0.044715 * x^3))) in eager ops, which keeps x (pow),
 * tanh's result, 0.5 * x and 1 + tanh (the final mul) for backward; under
 * autocast all but 0.5 * x are fp32.
 */
static int
gelu_build(struct op_build *ob)
{
	const char *approx = json_string_value(json_object_get(ob->item, "approximate"));
	const struct cm_tensor *x = ob_in(ob, 0);
	enum cm_dtype wide;

	if (ob_has(ob, "approximate") && approx == NULL)
		return ob_fail(ob, "approximate", "must be \"none\", \"tanh\" or \"tanh_python\"");
	if (approx == NULL || strcmp(approx, "none") == 0 || strcmp(approx, "tanh") == 0)
		return pointwise(ob, KEEP_INPUT, 0, 8);
	if (strcmp(approx, "tanh_python") != 0)
		return ob_fail(ob, "approximate", "must be \"none\", \"tanh\" or \"tanh_python\"");
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	/* under autocast pow is on the fp32 list: x is cast to fp32 and pow
	 * keeps that copy; x + 0.044715 * x^3 promotes to fp32, so tanh's
	 * result, 1 + tanh and the product (the output) are fp32; only 0.5 * x
	 * keeps x's dtype (measured: GPT-2 under bf16 autocast on an H200,
	 * tests/reference/h200_transformer_train_peak.csv). Without autocast
	 * every one is in x's dtype and pow keeps x itself. */
	wide = ob_autocast(ob) ? CM_DT_F32 : (enum cm_dtype)x->dtype;
	if (ob_out_new(ob, x->rank, x->dim, wide) < 0)
		return -1;
	if (wide != x->dtype)
		ob_save_new(ob, ob_bytes(ob, x->elems, wide));                  /* pow's fp32 copy of x */
	else
		ob_save_input(ob, 0);                                           /* x, for pow */
	ob_save_new(ob, ob_bytes(ob, x->elems, wide));                          /* tanh's result */
	ob_save_new(ob, ob_bytes(ob, x->elems, (enum cm_dtype)x->dtype));       /* 0.5 * x */
	ob_save_new(ob, ob_bytes(ob, x->elems, wide));                          /* 1 + tanh */
	op_elementwise_costs(ob, 8);
	/* nine elementwise kernels, each reading and writing the tensor */
	ob->op.kernels_fwd = 9;
	ob->op.kernels_bwd = 9;
	ob->op.fwd_bytes = expr_mul(&ob->m->g, ob->op.fwd_bytes, expr_int(&ob->m->g, 5));
	ob->op.bwd_bytes = expr_mul(&ob->m->g, ob->op.bwd_bytes, expr_int(&ob->m->g, 5));
	return 0;
}

static int
relu6_build(struct op_build *ob)
{
	int inplace = ob_bool(ob, "inplace", 0);

	if (inplace < 0)
		return -1;
	(void)inplace;
	/* hardtanh's derivative reads its input: in place, autograd keeps a copy */
	return pointwise(ob, KEEP_INPUT, 1, 2);
}

static int
softmax_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	expr_id dim = ob_int(ob, "dim", -1);

	if (dim < 0)
		return -1;
	if (!expr_is_const(g, dim))
		return ob_fail(ob, "dim", "must be a constant");
	{
		int64_t d = g->nodes[dim].k.i;
		if (d < -x->rank || d >= x->rank)
			return ob_fail(ob, "dim", "%lld is out of range for %d dimensions", (long long)d, x->rank);
	}
	if (ob_autocast(ob)) {
		/* autocast runs softmax in fp32: its result, kept for backward, is fp32 */
		if (x->dtype == CM_DT_I64)
			return ob_fail(ob, NULL, "needs a float input");
		if (ob_out_new(ob, x->rank, x->dim, CM_DT_F32) < 0)
			return -1;
		ob_save_output(ob);
		op_elementwise_costs(ob, 5);
	} else if (pointwise(ob, KEEP_RESULT, 0, 5) < 0)
		return -1;
	ob_save_softmax_input(ob, 0);
	return 0;
}

static int
dropout_build(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);
	double p = ob_number(ob, "p", 0.5, 0.0, 1.0);

	if (isnan(p))
		return -1;
	if (p == 0.0 || !ob_training(ob)) {
		/* PyTorch returns the input itself: no kernel, no memory */
		if (ob_out_view(ob, 0, x->rank, x->dim, x->contiguous) < 0)
			return -1;
		ob->op.kernels_fwd = ob->op.kernels_bwd = 0;
		return 0;
	}
	if (ob_out_new(ob, x->rank, x->dim, (enum cm_dtype)x->dtype) < 0)
		return -1;
	ob_save_new(ob, ob_bytes(ob, x->elems, CM_DT_BOOL));   /* the keep mask */
	op_elementwise_costs(ob, 2);
	ob->op.fwd_bytes = expr_add(&ob->m->g, ob->op.fwd_bytes, x->elems);
	return 0;
}

static int
scale_build(struct op_build *ob)
{
	double f = ob_number(ob, "factor", NAN, -1e30, 1e30);

	if (isnan(f))
		return ob_has(ob, "factor") ? -1 : ob_fail(ob, NULL, "\"factor\" is required");
	return pointwise(ob, KEEP_NOTHING, 0, 1);
}

static const char *const inplace_attrs[] = { "inplace", NULL };
static const char *const no_attrs[] = { NULL };
static const char *const gelu_attrs[] = { "approximate", NULL };
static const char *const softmax_attrs[] = { "dim", NULL };
static const char *const dropout_attrs[] = { "p", NULL };
static const char *const scale_attrs[] = { "factor", NULL };

const struct op_rule op_rule_relu = { "relu", inplace_attrs, 1, 1, CM_CLASS_ELEMENTWISE, relu_build };
const struct op_rule op_rule_relu6 = { "relu6", inplace_attrs, 1, 1, CM_CLASS_ELEMENTWISE, relu6_build };
const struct op_rule op_rule_silu = { "silu", inplace_attrs, 1, 1, CM_CLASS_ELEMENTWISE, silu_build };
const struct op_rule op_rule_hardswish = { "hardswish", inplace_attrs, 1, 1, CM_CLASS_ELEMENTWISE, hardswish_build };
const struct op_rule op_rule_hardsigmoid = { "hardsigmoid", inplace_attrs, 1, 1, CM_CLASS_ELEMENTWISE,
	hardsigmoid_build };
static const char *const leaky_attrs[] = { "inplace", "negative_slope", NULL };
static const char *const elu_attrs[] = { "inplace", "alpha", NULL };
static const char *const softplus_attrs[] = { "beta", "threshold", NULL };
static const char *const prelu_attrs[] = { "num_parameters", NULL };
const struct op_rule op_rule_leaky_relu = { "leaky_relu", leaky_attrs, 1, 1, CM_CLASS_ELEMENTWISE, leaky_relu_build };
const struct op_rule op_rule_elu = { "elu", elu_attrs, 1, 1, CM_CLASS_ELEMENTWISE, elu_build };
const struct op_rule op_rule_softplus = { "softplus", softplus_attrs, 1, 1, CM_CLASS_ELEMENTWISE, softplus_build };
const struct op_rule op_rule_mish = { "mish", inplace_attrs, 1, 1, CM_CLASS_ELEMENTWISE, mish_build };
const struct op_rule op_rule_prelu = { "prelu", prelu_attrs, 1, 1, CM_CLASS_ELEMENTWISE, prelu_build };
const struct op_rule op_rule_gelu = { "gelu", gelu_attrs, 1, 1, CM_CLASS_ELEMENTWISE, gelu_build };
const struct op_rule op_rule_sigmoid = { "sigmoid", no_attrs, 1, 1, CM_CLASS_ELEMENTWISE, sigmoid_build };
const struct op_rule op_rule_tanh = { "tanh", no_attrs, 1, 1, CM_CLASS_ELEMENTWISE, tanh_build };
const struct op_rule op_rule_softmax = { "softmax", softmax_attrs, 1, 1, CM_CLASS_REDUCTION, softmax_build };
const struct op_rule op_rule_dropout = { "dropout", dropout_attrs, 1, 1, CM_CLASS_ELEMENTWISE, dropout_build };
const struct op_rule op_rule_scale = { "scale", scale_attrs, 1, 1, CM_CLASS_ELEMENTWISE, scale_build };
