/*
 * onnx_ops.c - one ONNX node at a time into the model file: dispatches on
 * the op type to onnx_op_shape.c, onnx_op_layer.c, onnx_op_pad.c and
 * onnx_op_resize.c, lets through what is
 * the identity to the cost model (Identity, Cast), prices the elementwise
 * operators of one activation as `scale`, and refuses an unknown operator
 * with its node and position (or, with --unknown elementwise, prices it as
 * elementwise with one warning per op type). Values that do not depend on
 * the graph's inputs are tracked, never emitted.
 */
#include "onnx_op.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Operators that are the identity on what the cost model sees. */
static const char *const passthrough[] = { "Identity", "Cast", "CastLike", "Contiguous", NULL };
/* Operators that take a rank-2 shape tensor (onnx_op_sym2.c). */
static const char *const sym2_ops[] = { "Reshape", "Slice", "Transpose", "Identity", "Cast", "CastLike", NULL };
/* Activations without attributes the model format needs, and its names
 * for them (HardSigmoid: torch's slope 1/6, Keras' 0.2, one kernel either
 * way). */
static const struct {
	const char *onnx, *op;
} activations[] = {
	{ "Relu", "relu" }, { "Sigmoid", "sigmoid" }, { "Tanh", "tanh" }, { "Gelu", "gelu" },
	{ "HardSwish", "hardswish" }, { "HardSigmoid", "hardsigmoid" }, { "Softplus", "softplus" }, { "Mish", "mish" },
};
/* Elementwise operators of one activation, priced as `scale`. */
static const char *const elementwise[] = { "Sqrt", "Erf", "Exp", "Log", "Neg", "Reciprocal", "Abs", "Floor",
	"Ceil", "Round", "Clip", "Not", "IsNaN", "Sign", NULL };

static int
in_list(const char *const *l, const char *s)
{
	for (; *l != NULL; l++)
		if (strcmp(*l, s) == 0)
			return 1;
	return 0;
}

static int
unknown(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);
	json_t *l;
	int k;

	if (!im->opts->unknown_elementwise || x == NULL || x->kind != ONNX_V_DATA || n->noutputs != 1)
		return onnx_imp_fail(im, DN_ENOENT,
		    "unknown operator '%s%s%s' (node %d of %d; inputs: %s%s); `dnnsat import --unknown elementwise` "
		    "prices it as elementwise", n->domain, n->domain[0] ? "." : "", op, im->node, im->m->graph.nnodes,
		    n->ninputs > 0 ? n->inputs[0] : "none", n->ninputs > 1 ? ", ..." : "");
	for (k = 0; k < im->nwarned; k++)
		if (strcmp(im->warned[k], op) == 0)
			break;
	if (k == im->nwarned && im->nwarned < 64) {
		dn_fmt(im->warned[im->nwarned++], sizeof im->warned[0], "%s", op);
		onnx_imp_warn(im, "operator '%s' (first at node %d '%s') is priced as elementwise; its output is assumed "
		    "to have its input's shape", op, im->node, n->name);
	}
	l = onnx_op_emit(im, "scale", o, x, NULL);
	json_object_set_new(l, "factor", json_real(1.0));
	onnx_op_copy_shape(o, x);
	return 0;
}

int
onnx_ops_translate(struct onnx_imp *im, int i)
{
	const struct onnx_node *n = &im->m->graph.nodes[i];
	const char *op = n->op_type;
	struct onnx_val *x = onnx_op_in(im, 0), *o;

	if (im->fuse[i] == ONNX_FUSE_SKIP)
		return 0;
	if (im->fuse[i] == ONNX_FUSE_SHADOW) {
		/* a node of an attention core: translated into the core's own list */
		struct onnx_attn *a = &im->attns[im->fuse_affine[i]];
		json_t *layers = im->layers;
		int rc;
		if (a->shadow == NULL && (a->shadow = json_array()) == NULL)
			return onnx_imp_fail(im, DN_ENOMEM, "out of memory");
		im->layers = a->shadow;
		im->fuse[i] = ONNX_FUSE_NONE;
		rc = onnx_ops_translate(im, i);
		im->fuse[i] = ONNX_FUSE_SHADOW;
		im->layers = layers;
		return rc;
	}
	if (n->noutputs < 1)
		return onnx_imp_fail(im, DN_EINVAL, "no output");
	o = onnx_op_out(im, 0);
	if (im->fuse[i] != ONNX_FUSE_NONE)
		return onnx_op_fused(im, i, o);
	if (n->domain[0] != '\0' && strcmp(n->domain, "ai.onnx") != 0)
		return unknown(im, op, x, o);
	for (int k = 0; k < n->ninputs; k++) {
		const struct onnx_val *v = onnx_op_in(im, k);
		if (v != NULL && v->kind == ONNX_V_SYM && v->rank > 1 && !in_list(sym2_ops, op))
			return onnx_imp_fail(im, DN_EINVAL, "input '%s' is a 2-d shape tensor, which only Reshape, Slice and "
			    "Transpose take (as in torch's F.pad export)", v->name);
	}
	if (strcmp(op, "Constant") == 0)
		return onnx_op_constant(im, o);
	if (strcmp(op, "Range") == 0)
		return onnx_op_range(im, o);
	if (strcmp(op, "Concat") == 0)
		return onnx_op_concat(im, o);
	if (strcmp(op, "Where") == 0)
		return onnx_op_where(im, o);
	if (x == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "input 0 '%s' is not defined before the node",
		    n->ninputs > 0 ? n->inputs[0] : "");
	if (strcmp(op, "LSTM") == 0 || strcmp(op, "GRU") == 0)    /* X may be a Transpose skipped (onnx_fuse.c) */
		return onnx_op_rnn(im, op[0] == 'G', x, o);
	if (x->kind == ONNX_V_NONE)
		return onnx_imp_fail(im, DN_EINVAL, "input '%s' is not produced by any earlier node", x->name);
	if (strcmp(op, "Shape") == 0)
		return onnx_op_shape(im, x, o);
	if (strcmp(op, "Size") == 0) {
		if (onnx_op_new_sym(im, o, 1, 0) < 0)
			return -1;
		o->e[0] = onnx_dim_int(1);
		for (int k = 0; k < x->rank; k++)
			if (onnx_dim_arith(im->ar, ONNX_DIM_MUL, o->e[0], x->shape[k], &o->e[0]) < 0)
				return -1;
		return 0;
	}
	if (strcmp(op, "ConstantOfShape") == 0)
		return onnx_op_constant_of_shape(im, x, o);
	if (x->kind == ONNX_V_DERIVED && x->scale > 0 && strcmp(op, "Cast") == 0) {
		/* scaled sizes cast to an integer type: truncated, the floor of
		 * a positive value; to a float type they stay what they are */
		int64_t to = onnx_op_attr_i(im, "to", ONNX_FLOAT);
		if (to != ONNX_FLOAT && to != ONNX_DOUBLE && to != ONNX_FLOAT16 && to != ONNX_BFLOAT16)
			return onnx_op_sym_floor(im, x, o);
	}
	if ((x->kind == ONNX_V_SYM || (x->kind == ONNX_V_DERIVED && x->scale > 0)) && strcmp(op, "Floor") == 0)
		return onnx_op_sym_floor(im, x, o);
	if (in_list(passthrough, op)) {
		onnx_op_alias(o, x);
		return 0;
	}
	if (strcmp(op, "Gather") == 0)
		return onnx_op_gather(im, x, o);
	if (strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Squeeze") == 0)
		return onnx_op_unsqueeze(im, op[0] == 'S', x, o);
	if (strcmp(op, "Slice") == 0)
		return onnx_op_slice(im, x, o);
	if (strcmp(op, "Expand") == 0)
		return onnx_op_expand(im, x, o);
	if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0 || strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0 ||
	    strcmp(op, "Equal") == 0 || strcmp(op, "Mod") == 0 || strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0)
		return onnx_op_binary(im, op, o);
	if (strcmp(op, "Transpose") == 0 && x->rnn_bf && onnx_op_rnn_input_transpose(im, i)) {
		/* torch's swap back to batch first after an LSTM or GRU: the layer's result */
		onnx_op_alias(o, x);
		o->rnn_bf = 0;
		return 0;
	}
	if (strcmp(op, "Transpose") == 0)
		return onnx_op_transpose(im, x, o);

	if (strcmp(op, "Reshape") == 0)
		return onnx_op_reshape(im, x, o);
	if (strcmp(op, "Pad") == 0)
		return onnx_op_pad(im, x, o);
	if (strcmp(op, "Resize") == 0 || strcmp(op, "Upsample") == 0)
		return onnx_op_resize(im, op[0] == 'U', x, o);
	if (x->kind != ONNX_V_DATA) {
		/* anything else on tensors that do not depend on the inputs */
		o->kind = ONNX_V_DERIVED;
		onnx_op_copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "Clip") == 0) {
		/* ReLU6 (MobileNet) and ReLU exported as Clip(x, 0, 6) / Clip(x, 0) */
		double lo = -1, hi = -1;
		const struct onnx_attr *amin = onnx_node_attr(NODE(im), "min"), *amax = onnx_node_attr(NODE(im), "max");
		if (amin != NULL)
			lo = amin->f;
		else if (!onnx_op_scalar(onnx_op_in(im, 1), &lo))
			lo = -1;
		if (amax != NULL)
			hi = amax->f;
		else if (onnx_op_in(im, 2) == NULL)
			hi = INFINITY;
		else if (!onnx_op_scalar(onnx_op_in(im, 2), &hi))
			hi = -1;
		if (lo == 0 && (hi == 6 || isinf(hi)))
			return onnx_op_simple(im, hi == 6 ? "relu6" : "relu", x, o);
	}
	if (strcmp(op, "Dropout") == 0) {
		json_object_set_new(onnx_op_emit(im, "dropout", o, x, NULL), "p", json_real(onnx_op_dropout_p(im, i)));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "Conv") == 0)
		return onnx_op_conv(im, x, o);
	if (strcmp(op, "ConvTranspose") == 0)
		return onnx_op_conv_transpose(im, x, o);
	if (strcmp(op, "Gemm") == 0)
		return onnx_op_gemm(im, x, o);
	if (strcmp(op, "MatMul") == 0)
		return onnx_op_matmul(im, x, o);
	for (size_t k = 0; k < sizeof activations / sizeof activations[0]; k++)
		if (strcmp(op, activations[k].onnx) == 0)
			return onnx_op_simple(im, activations[k].op, x, o);
	if (strcmp(op, "LeakyRelu") == 0 || strcmp(op, "Elu") == 0) {
		const struct onnx_attr *a = onnx_node_attr(NODE(im), "alpha");
		double alpha = a != NULL ? a->f : op[0] == 'L' ? 0.01 : 1.0;
		json_object_set_new(onnx_op_emit(im, op[0] == 'L' ? "leaky_relu" : "elu", o, x, NULL),
		    op[0] == 'L' ? "negative_slope" : "alpha", json_real(alpha));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "PRelu") == 0)
		return onnx_op_prelu(im, x, o);
	if (strcmp(op, "InstanceNormalization") == 0)
		return onnx_op_instance_norm(im, x, o);
	if (strcmp(op, "DepthToSpace") == 0)
		return onnx_op_depth_to_space(im, x, o);
	if (strcmp(op, "Softmax") == 0 || strcmp(op, "LogSoftmax") == 0) {
		int axis = 0;
		if (onnx_op_axis_norm(im, onnx_op_attr_i(im, "axis", im->m->opset >= 13 ? -1 : 1), x->rank, &axis) < 0)
			return -1;
		if (im->m->opset < 13 && axis != x->rank - 1)
			return onnx_imp_fail(im, DN_EINVAL, "softmax before opset 13 on an axis other than the last");
		json_object_set_new(onnx_op_emit(im, "softmax", o, x, NULL), "dim", json_integer(axis - x->rank));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "BatchNormalization") == 0) {
		if (x->rank < 2)
			return onnx_imp_fail(im, DN_EINVAL, "batch norm on rank %d", x->rank);
		return onnx_op_simple(im, "batchnorm", x, o);
	}
	if (strcmp(op, "LayerNormalization") == 0) {
		int axis = 0;
		if (onnx_op_axis_norm(im, onnx_op_attr_i(im, "axis", -1), x->rank, &axis) < 0)
			return -1;
		if (axis != x->rank - 1)
			return onnx_imp_fail(im, DN_EINVAL, "layer norm over more than the last axis is not supported");
		json_object_set_new(onnx_op_emit(im, "layernorm", o, x, NULL), "affine", json_boolean(onnx_op_in(im, 1) != NULL));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	if (strcmp(op, "MaxPool") == 0)
		return onnx_op_pool(im, "maxpool", x, o);
	if (strcmp(op, "AveragePool") == 0)
		return onnx_op_pool(im, "avgpool", x, o);
	if (strcmp(op, "GlobalAveragePool") == 0 || strcmp(op, "GlobalMaxPool") == 0)
		return onnx_op_global_pool(im, op[6] == 'A', x, o);
	if (strcmp(op, "Flatten") == 0) {
		int axis = 0;
		struct onnx_dim s[2] = { onnx_dim_int(1), onnx_dim_int(1) };
		if (onnx_op_axis_norm(im, onnx_op_attr_i(im, "axis", 1), x->rank + 1, &axis) < 0)
			return -1;
		for (int k = 0; k < x->rank; k++)
			if (onnx_dim_arith(im->ar, ONNX_DIM_MUL, s[k >= axis], x->shape[k], &s[k >= axis]) < 0)
				return -1;
		if (axis == 1) {
			json_object_set_new(onnx_op_emit(im, "flatten", o, x, NULL), "start_dim", json_integer(1));
			o->rank = 2;
			o->shape[0] = s[0];
			o->shape[1] = s[1];
			return 0;
		}
		return onnx_op_reshape_to(im, x, o, s, 2, 1);
	}
	if (strcmp(op, "Split") == 0)
		return onnx_op_split(im, x);
	if (strcmp(op, "ReduceMean") == 0 || strcmp(op, "ReduceSum") == 0 || strcmp(op, "ReduceMax") == 0 ||
	    strcmp(op, "ReduceL2") == 0)
		return onnx_op_reduce(im, op[6] == 'S' ? "sum" : op[6] == 'L' ? "norm" : op[7] == 'e' ? "mean" : "max", x, o);
	if (strcmp(op, "Pow") == 0) {
		double e;
		if (onnx_op_scalar(onnx_op_in(im, 1), &e) && e == 2.0) {
			onnx_op_emit(im, "mul", o, x, x);
			onnx_op_copy_shape(o, x);
			return 0;
		}
		json_object_set_new(onnx_op_emit(im, "scale", o, x, NULL), "factor", json_real(1.0));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	if (in_list(elementwise, op)) {
		json_object_set_new(onnx_op_emit(im, "scale", o, x, NULL), "factor", json_real(1.0));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	return unknown(im, op, x, o);
}
