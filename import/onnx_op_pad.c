/*
 * onnx_op_pad.c - padding as the model format's `pad` layer (F.pad): the
 * ONNX Pad operator, and the uneven padding of Conv and pools
 * (onnx_op_layer.c) that cuDNN cannot do inside the convolution.
 *
 * ONNX lists pads as [x1_begin, x2_begin, ..., x1_end, x2_end], first axis
 * first; F.pad (the model format) lists (begin, end) pairs, last axis
 * first, and only as far as the first padded axis. Pad takes its pads as
 * the attribute `pads` before opset 11 (`paddings` in opset 1) and as
 * input 1 from opset 11, with an optional `axes` input from opset 18; only
 * `mode` "constant" is translated (the fill value changes no cost), and the
 * pads must be known when importing: an initializer, a Constant, or shape
 * arithmetic over the symbolic dimensions (then the layer's pads are
 * expressions). Negative pads (a crop) are refused.
 */
#include "onnx_op.h"

#include <string.h>

/* o's shape: x's, each axis k grown by b[k] + e[k]. */
static int
padded_shape(struct onnx_imp *im, const struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *b,
    const struct onnx_dim *e)
{
	onnx_op_copy_shape(o, x);
	for (int k = 0; k < x->rank; k++)
		if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, x->shape[k], b[k], &o->shape[k]) < 0 ||
		    onnx_dim_arith(im->ar, ONNX_DIM_ADD, o->shape[k], e[k], &o->shape[k]) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "padded size of axis %d overflows", k);
	return 0;
}

int
onnx_op_pad_axes(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *b,
    const struct onnx_dim *e)
{
	json_t *l, *list = json_array();
	int first = x->rank;

	if (list == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	for (int k = 0; k < x->rank; k++)
		if (b[k].expr != NULL || b[k].v != 0 || e[k].expr != NULL || e[k].v != 0) {
			first = k;
			break;
		}
	if (first == x->rank)
		first = x->rank - 1;    /* nothing padded: F.pad still copies */
	for (int k = x->rank - 1; k >= first; k--) {
		json_array_append_new(list, onnx_op_dimj(im, b[k]));
		json_array_append_new(list, onnx_op_dimj(im, e[k]));
	}
	l = onnx_op_emit(im, "pad", o, x, NULL);
	json_object_set_new(l, "padding", list);
	return padded_shape(im, x, o, b, e);
}

/* The node's pads as 2 * rank dimensions (begin of each axis, then end),
 * from the attribute or inputs 1 (pads) and 3 (axes). */
static int
pad_list(struct onnx_imp *im, const struct onnx_val *x, struct onnx_dim *b, struct onnx_dim *e)
{
	struct onnx_val *pv = onnx_op_in(im, 1), *av = onnx_op_in(im, 3);
	int64_t v[2 * ONNX_MAX_RANK], axes[ONNX_MAX_RANK];
	int n, naxes = x->rank;

	for (int k = 0; k < x->rank; k++)
		axes[k] = k;
	if (im->m->opset < 11) {
		n = onnx_op_attr_ints(im, im->m->opset < 2 ? "paddings" : "pads", v, 2 * ONNX_MAX_RANK);
		if (n != 2 * x->rank)
			return onnx_imp_fail(im, DN_EINVAL, "the attribute pads must have %d entries (input rank %d)",
			    2 * x->rank, x->rank);
		for (int k = 0; k < x->rank; k++) {
			b[k] = onnx_dim_int(v[k]);
			e[k] = onnx_dim_int(v[x->rank + k]);
		}
		return 0;
	}
	if (av != NULL) {
		if (!onnx_op_sym_of(im, av) || av->n > x->rank)
			return onnx_imp_fail(im, DN_EINVAL, "the axes input '%s' must be a constant list of at most %d axes",
			    av->name, x->rank);
		naxes = av->n;
		for (int k = 0; k < naxes; k++) {
			int a = 0;
			if (av->e[k].expr != NULL || onnx_op_axis_norm(im, av->e[k].v, x->rank, &a) < 0)
				return onnx_imp_fail(im, DN_EINVAL, "axis %d of the axes input is not a constant axis", k);
			axes[k] = a;
		}
	}
	if (pv == NULL || !onnx_op_sym_of(im, pv))
		return onnx_imp_fail(im, DN_EINVAL, "the pads input '%s' is not known when importing (an initializer, a "
		    "Constant or shape arithmetic is needed)", pv != NULL ? pv->name : "");
	if (pv->n != 2 * naxes)
		return onnx_imp_fail(im, DN_EINVAL, "the pads input '%s' has %d entries, not %d", pv->name, pv->n, 2 * naxes);
	for (int k = 0; k < x->rank; k++)
		b[k] = e[k] = onnx_dim_int(0);
	for (int k = 0; k < naxes; k++) {
		b[axes[k]] = pv->e[k];
		e[axes[k]] = pv->e[naxes + k];
	}
	return 0;
}

int
onnx_op_pad(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	const struct onnx_attr *mode = onnx_node_attr(NODE(im), "mode");
	struct onnx_dim b[ONNX_MAX_RANK], e[ONNX_MAX_RANK];

	if (mode != NULL && mode->s != NULL && strcmp(mode->s, "constant") != 0)
		return onnx_imp_fail(im, DN_EINVAL, "mode '%.40s' is not supported (only constant padding)", mode->s);
	if (x->rank < 1)
		return onnx_imp_fail(im, DN_EINVAL, "padding a scalar");
	if (pad_list(im, x, b, e) < 0)
		return -1;
	for (int k = 0; k < x->rank; k++)
		if ((b[k].expr == NULL && b[k].v < 0) || (e[k].expr == NULL && e[k].v < 0))
			return onnx_imp_fail(im, DN_EINVAL, "negative pads (%s, %s) on axis %d (a crop) are not supported",
			    onnx_op_txt(im, b[k]), onnx_op_txt(im, e[k]), k);
	if (x->kind != ONNX_V_DATA) {
		/* a tensor that does not depend on the inputs: its shape only */
		o->kind = ONNX_V_DERIVED;
		return padded_shape(im, x, o, b, e);
	}
	return onnx_op_pad_axes(im, x, o, b, e);
}
