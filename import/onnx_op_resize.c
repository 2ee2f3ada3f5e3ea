/*
 * onnx_op_resize.c - Resize (opset 10 and later) and the older Upsample
 * (opsets 7-9) as the model format's `upsample` layer (nn.Upsample /
 * F.interpolate, costmodel/op_upsample.c).
 *
 * Inputs: Upsample takes its scales as an attribute (opset 7-8) or input 1
 * (opset 9), Resize as input 1 (opset 10) or X, roi, scales, sizes (opset
 * 11 and later, one of scales and sizes given, the other empty or omitted),
 * with the `axes` attribute of opset 18. Scales must be known when
 * importing: an initializer, a Constant, or what torch writes for
 * nn.Upsample (a Concat of Constants, through Cast / Unsqueeze); sizes may
 * be shape arithmetic (F.interpolate(size=...) over a symbolic size), and
 * become expressions. A float32 scale is written as the shortest decimal
 * that reads back as the same float32 (1.3, not 1.2999999523), the value
 * of the PyTorch code that was exported, so that floor(in * scale) is
 * PyTorch's output size.
 *
 * Modes: nearest (any rank 3 to 5), linear (3-d linear, 4-d bilinear, 5-d
 * trilinear), cubic (4-d bicubic). coordinate_transformation_mode
 * "align_corners" on an interpolating mode sets the layer's align_corners
 * (no cost either way); nearest_mode, cubic_coeff_a, exclude_outside and
 * extrapolation_value change values, not costs. Refused, with the node, the
 * attribute and why: tf_crop_and_resize and a non-empty roi (a crop, not
 * an upsampling), antialias (another kernel), keep_aspect_ratio_policy
 * other than stretch, a scale or size that changes the batch or channel
 * axis, scales not known when importing, ranks other than 3 to 5.
 */
#include "onnx_op.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESIZE_MAX 16

static const char *
str_attr(struct onnx_imp *im, const char *name, const char *dflt)
{
	const struct onnx_attr *a = onnx_node_attr(NODE(im), name);
	return a != NULL && a->s != NULL ? a->s : dflt;
}

int
onnx_op_resize(struct onnx_imp *im, int upsample, struct onnx_val *x, struct onnx_val *o)
{
	const int64_t opset = im->m->opset;
	const char *mode = str_attr(im, "mode", "nearest"), *ctm = str_attr(im, "coordinate_transformation_mode",
	    opset >= 11 && !upsample ? "half_pixel" : "asymmetric"), *lmode;
	struct onnx_val *sv = NULL, *zv = NULL;
	double sc[RESIZE_MAX], roi[2 * RESIZE_MAX];
	int64_t axes[RESIZE_MAX];
	int naxes, nsc = -1, use_sizes = 0;
	struct onnx_dim out[ONNX_MAX_RANK];
	json_t *l, *list;

	if (x->rank < 3 || x->rank > 5)
		return onnx_imp_fail(im, DN_EINVAL, "resizing a rank-%d tensor: only 1-d, 2-d and 3-d upsampling of "
		    "[N, C, ...] (ranks 3 to 5, nn.Upsample) is supported", x->rank);
	/* the mode, as PyTorch names it for this rank */
	if (strcmp(mode, "nearest") == 0)
		lmode = "nearest";
	else if (strcmp(mode, "linear") == 0 || strcmp(mode, "bilinear") == 0)
		lmode = x->rank == 3 ? "linear" : x->rank == 4 ? "bilinear" : "trilinear";
	else if (strcmp(mode, "cubic") == 0 && x->rank == 4)
		lmode = "bicubic";
	else
		return onnx_imp_fail(im, DN_EINVAL, "attribute mode '%.40s' on a rank-%d input is not supported (nearest, "
		    "linear, or cubic on 4-d)", mode, x->rank);
	if (strcmp(ctm, "tf_crop_and_resize") == 0)
		return onnx_imp_fail(im, DN_EINVAL, "attribute coordinate_transformation_mode 'tf_crop_and_resize' is not "
		    "supported (a crop by roi, not an upsampling)");
	if (onnx_op_attr_i(im, "antialias", 0) != 0)
		return onnx_imp_fail(im, DN_EINVAL, "attribute antialias=1 is not supported (an antialiasing filter, "
		    "another kernel than nn.Upsample's)");
	if (strcmp(str_attr(im, "keep_aspect_ratio_policy", "stretch"), "stretch") != 0)
		return onnx_imp_fail(im, DN_EINVAL, "attribute keep_aspect_ratio_policy '%.40s' is not supported (only "
		    "stretch)", str_attr(im, "keep_aspect_ratio_policy", ""));
	naxes = onnx_op_attr_ints(im, "axes", axes, RESIZE_MAX);
	if (naxes <= 0) {
		naxes = x->rank;
		for (int k = 0; k < x->rank; k++)
			axes[k] = k;
	} else {
		for (int k = 0; k < naxes; k++) {
			int a = 0;
			if (onnx_op_axis_norm(im, axes[k], x->rank, &a) < 0)
				return -1;
			axes[k] = a;
		}
	}
	/* the scales or the sizes */
	if (upsample && opset < 9) {
		const struct onnx_attr *a = onnx_node_attr(NODE(im), "scales");
		if (a == NULL || a->nfloats > RESIZE_MAX)
			return onnx_imp_fail(im, DN_EINVAL, "attribute scales is missing");
		nsc = a->nfloats;
		for (int k = 0; k < nsc; k++)
			sc[k] = a->floats[k];
	} else {
		int si = upsample || opset < 11 ? 1 : 2;
		sv = onnx_op_in(im, si);
		zv = opset >= 11 && !upsample ? onnx_op_in(im, 3) : NULL;
		if (opset >= 11 && !upsample) {
			struct onnx_val *rv = onnx_op_in(im, 1);
			int nroi = rv != NULL ? onnx_op_values(im, rv, roi, 2 * RESIZE_MAX) : 0;
			if (nroi != 0)
				return onnx_imp_fail(im, DN_EINVAL, "input roi '%s' is %s: a region of interest is only read by "
				    "tf_crop_and_resize, which is not supported", rv->name,
				    nroi < 0 ? "not known when importing" : "not empty");
		}
		if (sv != NULL) {
			nsc = onnx_op_values(im, sv, sc, RESIZE_MAX);
			if (nsc < 0)
				return onnx_imp_fail(im, DN_EINVAL, "input scales '%s' is not known when importing (an "
				    "initializer, a Constant, or a Concat of them is needed)", sv->name);
		}
		if (nsc <= 0) {
			if (zv == NULL || !onnx_op_sym_of(im, zv))
				return onnx_imp_fail(im, DN_EINVAL, "%s", zv == NULL ?
				    "neither input scales nor input sizes is given" :
				    "input sizes is not known when importing (a constant or shape arithmetic is needed)");
			if (zv->n != naxes)
				return onnx_imp_fail(im, DN_EINVAL, "input sizes '%s' has %d entries, not %d", zv->name, zv->n,
				    naxes);
			use_sizes = 1;
		} else if (zv != NULL && !(onnx_op_sym_of(im, zv) && zv->n == 0)) {
			return onnx_imp_fail(im, DN_EINVAL, "both inputs scales and sizes are given (one of them must be "
			    "empty)");
		}
	}
	if (!use_sizes && nsc != naxes)
		return onnx_imp_fail(im, DN_EINVAL, "scales has %d entries, not %d", nsc, naxes);
	/* every axis's output; only spatial axes may change */
	for (int k = 0; k < x->rank; k++)
		out[k] = x->shape[k];
	for (int j = 0; j < naxes; j++) {
		int k = (int)axes[j];
		if (use_sizes)
			out[k] = zv->e[j];
		else if (!(sc[j] > 0 && sc[j] <= 1e6))
			return onnx_imp_fail(im, DN_EINVAL, "scale %g of axis %d is not above 0", sc[j], k);
		else if (k < 2 && sc[j] != 1)
			return onnx_imp_fail(im, DN_EINVAL, "scale %g on axis %d (%s): only the spatial axes may be resized "
			    "(nn.Upsample)", sc[j], k, k == 0 ? "batch" : "channels");
		else if (k >= 2) {
			sc[j] = onnx_dim_float32_decimal(sc[j]);
			if (onnx_dim_scaled(im->ar, x->shape[k], sc[j], &out[k]) < 0)
				return onnx_imp_fail(im, DN_EINVAL, "the resized size of axis %d overflows", k);
		}
		if (k < 2 && !onnx_dim_same(out[k], x->shape[k]))
			return onnx_imp_fail(im, DN_EINVAL, "input sizes resizes axis %d (%s) from %s to %s: only the spatial "
			    "axes may be resized (nn.Upsample)", k, k == 0 ? "batch" : "channels",
			    onnx_op_txt(im, x->shape[k]), onnx_op_txt(im, out[k]));
	}
	if (x->kind != ONNX_V_DATA) {
		o->kind = ONNX_V_DERIVED;
		onnx_op_copy_shape(o, x);
		memcpy(o->shape, out, sizeof out[0] * (size_t)x->rank);
		return 0;
	}
	l = onnx_op_emit(im, "upsample", o, x, NULL);
	json_object_set_new(l, "mode", json_string(lmode));
	list = json_array();
	for (int k = 2; k < x->rank; k++) {
		if (use_sizes) {
			json_array_append_new(list, onnx_op_dimj(im, out[k]));
		} else {
			double s = 1;
			for (int j = 0; j < naxes; j++)
				if (axes[j] == k)
					s = sc[j];
			json_array_append_new(list, s == floor(s) ? json_integer((json_int_t)s) : json_real(s));
		}
	}
	json_object_set_new(l, use_sizes ? "size" : "scale_factor", list);
	if (strcmp(lmode, "nearest") != 0 && strcmp(ctm, "align_corners") == 0)
		json_object_set_new(l, "align_corners", json_true());
	onnx_op_copy_shape(o, x);
	memcpy(o->shape, out, sizeof out[0] * (size_t)x->rank);
	return 0;
}
