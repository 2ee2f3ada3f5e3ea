/*
 * onnx_op_sym2.c - shape tensors of rank 2 (SYM values of shape [r, c],
 * entries row-major), for the one place exports make them: torch's F.pad
 * at opset 11 and later (symbolic_opset11.pad) turns its pad list, F.pad's
 * (begin, end) pairs from the last axis, into ONNX's order with
 *
 *   Concat(pads, zeros) -> Reshape [-1, 2] -> Slice axis 0, step -1 (the
 *   pairs reversed) -> Transpose [1, 0] -> Reshape [-1] -> Cast -> Pad
 *
 * Reshape to two constant dimensions, Slice of constant bounds and any
 * step, and Transpose are computed here; Reshape back to one dimension
 * flattens (onnx_op_shape.c). Everything else refuses a rank-2 shape
 * tensor (onnx_ops.c), and onnx_op_as_sym does not take one for a list.
 */
#include "onnx_op.h"

#include <string.h>

/* A new rank-2 SYM o of shape [r, c]. */
static int
sym2_new(struct onnx_imp *im, struct onnx_val *o, int64_t r, int64_t c)
{
	if (onnx_op_new_sym(im, o, (int)(r * c), 2) < 0)
		return -1;
	o->shape[0] = onnx_dim_int(r);
	o->shape[1] = onnx_dim_int(c);
	return 0;
}

int
onnx_op_sym2_reshape(struct onnx_imp *im, const struct onnx_val *x, const struct onnx_val *s, struct onnx_val *o)
{
	int64_t d[2];
	int infer = -1;

	for (int i = 0; i < 2; i++) {
		if (s->e[i].expr != NULL || s->e[i].v < -1)
			return onnx_imp_fail(im, DN_EINVAL, "a shape tensor reshaped to a computed or negative shape");
		d[i] = s->e[i].v == 0 ? (i == 0 ? x->n : 1) : s->e[i].v;
		if (d[i] == -1)
			infer = i;
	}
	if (infer >= 0 && d[1 - infer] > 0 && x->n % d[1 - infer] == 0)
		d[infer] = x->n / d[1 - infer];
	/* each side at most n before the product: a huge shape would overflow it */
	if (d[0] < 1 || d[1] < 1 || d[0] > x->n || d[1] > x->n || d[0] * d[1] != x->n)
		return onnx_imp_fail(im, DN_EINVAL, "a shape tensor of %d entries reshaped to [%lld, %lld]", x->n,
		    (long long)s->e[0].v, (long long)s->e[1].v);
	if (sym2_new(im, o, d[0], d[1]) < 0)
		return -1;
	memcpy(o->e, x->e, sizeof *o->e * (size_t)x->n);
	return 0;
}

/* ONNX's clamping of one slice bound on an axis of `dim` entries (the
 * operator's text): negative counts from the end, then [0, dim] for a
 * positive step, [-1, dim - 1] for a negative one. */
static int64_t
bound(int64_t v, int64_t dim, int64_t step)
{
	if (v < 0)
		v = v < -BIG ? -BIG : v + dim;
	if (step > 0)
		return v < 0 ? 0 : v > dim ? dim : v;
	return v < -1 ? -1 : v > dim - 1 ? dim - 1 : v;
}

int
onnx_op_sym2_slice(struct onnx_imp *im, const struct onnx_val *x, const struct onnx_val *st,
    const struct onnx_val *en, const struct onnx_val *ax, const struct onnx_val *sp, struct onnx_val *o)
{
	int64_t r = x->shape[0].v, c = x->shape[1].v, dim, step, from, to, keep[ONNX_SYM_MAX], nk = 0;
	int axis = 0;

	if (st->n != 1 || st->e[0].expr != NULL || en->e[0].expr != NULL || (ax != NULL && ax->e[0].expr != NULL) ||
	    (sp != NULL && sp->e[0].expr != NULL))
		return onnx_imp_fail(im, DN_EINVAL, "a slice of a 2-d shape tensor needs one constant axis and bounds");
	if (ax != NULL && onnx_op_axis_norm(im, ax->e[0].v, 2, &axis) < 0)
		return -1;
	step = sp != NULL ? sp->e[0].v : 1;
	if (step == 0)
		return onnx_imp_fail(im, DN_EINVAL, "a slice step of 0");
	dim = axis == 0 ? r : c;
	from = bound(st->e[0].v, dim, step);
	to = bound(en->e[0].v, dim, step);
	for (int64_t k = from; (step > 0 ? k < to : k > to) && nk < ONNX_SYM_MAX; k += step)
		keep[nk++] = k;
	if (nk == 0)
		return onnx_imp_fail(im, DN_EINVAL, "an empty slice of a shape tensor");
	if (sym2_new(im, o, axis == 0 ? nk : r, axis == 0 ? c : nk) < 0)
		return -1;
	for (int64_t i = 0; i < (axis == 0 ? nk : r); i++)
		for (int64_t j = 0; j < (axis == 0 ? c : nk); j++)
			o->e[i * (axis == 0 ? c : nk) + j] = axis == 0 ? x->e[keep[i] * c + j] : x->e[i * c + keep[j]];
	return 0;
}

int
onnx_op_sym2_transpose(struct onnx_imp *im, const struct onnx_val *x, struct onnx_val *o)
{
	int64_t r = x->shape[0].v, c = x->shape[1].v;

	if (sym2_new(im, o, c, r) < 0)
		return -1;
	for (int64_t i = 0; i < r; i++)
		for (int64_t j = 0; j < c; j++)
			o->e[j * r + i] = x->e[i * c + j];
	return 0;
}
