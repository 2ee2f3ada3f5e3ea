/*
 * onnx_op_layer.c - ONNX operators that compute, as model-format layers:
 * Conv (conv1d/2d/3d) and pooling (max and average, 1-d to 3-d), their
 * asymmetric or SAME_* padding as a `pad` layer before them (onnx_op_pad.c),
 * ConvTranspose (conv_transpose1d/2d/3d; any pads, auto_pad, output_shape),
 * Gemm and MatMul by an initializer (linear,
 * a following bias Add folded in, a head tied to an embedding recognised),
 * MatMul of two activations, elementwise arithmetic (add, mul, or scale by a
 * constant), PRelu and InstanceNormalization (a groupnorm), and the
 * operators onnx_fuse.c folded (layernorm, gelu, silu, hardswish, mish,
 * groupnorm; attention_core in onnx_op_attention.c); reductions are in
 * onnx_op_reduce.c.
 */
#include "onnx_op.h"
#include "costmodel.h"     /* cm_ident: the model format's module names */

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int
conv_out(struct onnx_imp *im, struct onnx_dim h, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode,
    struct onnx_dim *o)
{
	struct onnx_dim t;
	int64_t span = d * (k - 1) + 1;

	if (s == 1)     /* one addition: keeps the expression short */
		return onnx_dim_arith(im->ar, ONNX_DIM_ADD, h, onnx_dim_int(2 * p - span + 1), o) < 0 ?
		    onnx_imp_fail(im, DN_EINVAL, "output size overflows") : 0;
	if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, h, onnx_dim_int(2 * p - span + (ceil_mode ? s - 1 : 0)), &t) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_DIV, t, onnx_dim_int(s), &t) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_ADD, t, onnx_dim_int(1), o) < 0)
		return onnx_imp_fail(im, DN_EINVAL, "output size overflows");
	return 0;
}

/* kernel, stride, padding and dilation of Conv, ConvTranspose and pools:
 * spatial dims nsp (1 to WIN_MAX: torch's 1-d, 2-d and 3-d layers), pads pb
 * (start) and pe (end) as written; p is what the model format's symmetric
 * `padding` gets (window_input for Conv and pools, conv_transpose works its
 * own out). Axes past nsp hold the neutral 1 (k, s, d) and 0 (pads). */
#define WIN_MAX 3
enum { AUTO_PAD_NOTSET, AUTO_PAD_VALID, AUTO_PAD_SAME_UPPER, AUTO_PAD_SAME_LOWER };
struct window {
	int nsp;
	int auto_pad;
	int64_t k[WIN_MAX], s[WIN_MAX], p[WIN_MAX], d[WIN_MAX];
	int64_t pb[WIN_MAX], pe[WIN_MAX];       /* pads at the start and the end of each axis */
};

static int
window(struct onnx_imp *im, const struct onnx_val *x, const struct onnx_val *w, struct window *win)
{
	int64_t v[2 * WIN_MAX];
	int n;
	const struct onnx_attr *ap = onnx_node_attr(NODE(im), "auto_pad");

	win->nsp = x->rank - 2;
	if (win->nsp < 1 || win->nsp > WIN_MAX)
		return onnx_imp_fail(im, DN_EINVAL, "only 1-d, 2-d and 3-d windows are supported (input rank %d)", x->rank);
	win->auto_pad = AUTO_PAD_NOTSET;
	if (ap != NULL && ap->s != NULL && strcmp(ap->s, "NOTSET") != 0) {
		if (strcmp(ap->s, "VALID") == 0)
			win->auto_pad = AUTO_PAD_VALID;
		else if (strcmp(ap->s, "SAME_UPPER") == 0)
			win->auto_pad = AUTO_PAD_SAME_UPPER;
		else if (strcmp(ap->s, "SAME_LOWER") == 0)
			win->auto_pad = AUTO_PAD_SAME_LOWER;
		else
			return onnx_imp_fail(im, DN_EINVAL, "auto_pad %.40s is not supported (NOTSET, VALID, SAME_UPPER, "
			    "SAME_LOWER)", ap->s);
	}
	for (int i = 0; i < WIN_MAX; i++)
		win->k[i] = win->s[i] = win->d[i] = 1, win->p[i] = win->pb[i] = win->pe[i] = 0;
	n = onnx_op_attr_ints(im, "kernel_shape", v, WIN_MAX);
	if (n == win->nsp)
		memcpy(win->k, v, sizeof(int64_t) * (size_t)n);
	else if (n == -1 && w != NULL && w->rank == x->rank)
		for (int i = 0; i < win->nsp; i++)
			win->k[i] = w->t->dims[2 + i];
	else
		return onnx_imp_fail(im, DN_EINVAL, "kernel_shape missing or of the wrong length");
	/* present attributes of the wrong length are malformed, not defaults */
	if ((n = onnx_op_attr_ints(im, "strides", v, WIN_MAX)) == win->nsp)
		memcpy(win->s, v, sizeof(int64_t) * (size_t)n);
	else if (n != -1)
		return onnx_imp_fail(im, DN_EINVAL, "strides has the wrong number of entries (%d spatial axes)", win->nsp);
	if ((n = onnx_op_attr_ints(im, "dilations", v, WIN_MAX)) == win->nsp)
		memcpy(win->d, v, sizeof(int64_t) * (size_t)n);
	else if (n != -1)
		return onnx_imp_fail(im, DN_EINVAL, "dilations has the wrong number of entries (%d spatial axes)", win->nsp);
	if ((n = onnx_op_attr_ints(im, "pads", v, 2 * WIN_MAX)) != -1 && n != 2 * win->nsp)
		return onnx_imp_fail(im, DN_EINVAL, "pads has the wrong number of entries (%d spatial axes)", win->nsp);
	if (n == 2 * win->nsp) {
		for (int i = 0; i < win->nsp; i++) {
			win->pb[i] = v[i];
			win->pe[i] = v[i + win->nsp];
			win->p[i] = v[i];
		}
	}
	for (int i = 0; i < win->nsp; i++)
		if (win->k[i] < 1 || win->k[i] > 4096 || win->s[i] < 1 || win->s[i] > 4096 || win->d[i] < 1 ||
		    win->d[i] > 4096 || win->pb[i] < 0 || win->pb[i] > 4096 || win->pe[i] < 0 || win->pe[i] > 4096)
			return onnx_imp_fail(im, DN_EINVAL, "kernel, stride, dilation or pads out of range");
	return 0;
}

/* A window attribute as the model format writes it: one value when every
 * spatial axis has it (kernel 3 for 3 x 3 x 3), else one per axis
 * ([3, 7, 7]). */
static json_t *
tuple(int nsp, const int64_t *v)
{
	json_t *a;
	int same = 1;

	for (int i = 1; i < nsp; i++)
		same &= v[i] == v[0];
	if (same)
		return json_integer(v[0]);
	a = json_array();
	for (int i = 0; i < nsp; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

/* Whether any of the nsp entries of v differs from `neutral`. */
static int
any_not(int nsp, const int64_t *v, int64_t neutral)
{
	for (int i = 0; i < nsp; i++)
		if (v[i] != neutral)
			return 1;
	return 0;
}

/* The model format's name of the nsp-d form of `op` ("conv" -> "conv3d"). */
static const char *
nd_name(char *buf, size_t size, const char *op, int nsp)
{
	dn_fmt(buf, size, "%s%dd", op, nsp);
	return buf;
}

/* The pads of spatial axis i at its start (*b) and end (*e): the
 * attribute's, none for VALID, and for SAME_* ONNX's total
 * max((ceil(in / s) - 1) * s + span - in, 0), span = d (k - 1) + 1, its odd
 * unit at the end (SAME_UPPER) or the start (SAME_LOWER). Over a symbolic
 * size it is written span - 1 - (in - 1) % s (ceil(in / s) s - in = s - 1 -
 * (in - 1) % s), where `in` occurs once: the solver's interval bounds of
 * the pads are then [span - s, span - 1], not as wide as in's range (with
 * ceil_div(in, s) * s - in a count over 256 x 512 x 512 sizes of
 * keras_fcn.onnx stayed inexact after 60 s; it is exact in 32 s now). At
 * stride 1 the total is span - 1 whatever the size; the max is left out
 * when span >= s, where the total cannot be negative. */
static int
window_pads(struct onnx_imp *im, const struct onnx_val *x, const struct window *w, int i, struct onnx_dim *b,
    struct onnx_dim *e)
{
	struct onnx_dim in = x->shape[2 + i], t, half;
	int64_t span = w->d[i] * (w->k[i] - 1) + 1, s = w->s[i];

	if (w->auto_pad == AUTO_PAD_NOTSET || w->auto_pad == AUTO_PAD_VALID) {
		*b = onnx_dim_int(w->auto_pad == AUTO_PAD_VALID ? 0 : w->pb[i]);
		*e = onnx_dim_int(w->auto_pad == AUTO_PAD_VALID ? 0 : w->pe[i]);
		return 0;
	}
	if (s == 1)
		t = onnx_dim_int(span - 1);
	else if (onnx_dim_arith(im->ar, ONNX_DIM_SUB, in, onnx_dim_int(1), &t) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_MOD, t, onnx_dim_int(s), &t) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_SUB, onnx_dim_int(span - 1), t, &t) < 0 ||
	    (span < s && onnx_dim_arith(im->ar, ONNX_DIM_MAX, t, onnx_dim_int(0), &t) < 0))
		return onnx_imp_fail(im, DN_EINVAL, "padding of spatial axis %d overflows", i);
	if (t.expr == NULL && t.v < 0)
		t = onnx_dim_int(0);
	if (onnx_dim_arith(im->ar, ONNX_DIM_DIV, t, onnx_dim_int(2), &half) < 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_CDIV, t, onnx_dim_int(2), w->auto_pad == AUTO_PAD_SAME_UPPER ? e : b) < 0)
		return onnx_imp_fail(im, DN_EINVAL, "padding of spatial axis %d overflows", i);
	*(w->auto_pad == AUTO_PAD_SAME_UPPER ? b : e) = half;
	return 0;
}

/* The input a Conv or pool reads: x itself, with the pads in win->p, when
 * every axis is padded evenly by a constant; else a `pad` layer of x into
 * o.padded (the F.pad a PyTorch model needs: cuDNN pads evenly only), and
 * the window pads nothing. */
static int
window_input(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, struct window *w, struct onnx_val **in)
{
	struct onnx_dim b[ONNX_MAX_RANK], e[ONNX_MAX_RANK];
	int even = 1;

	for (int k = 0; k < x->rank; k++)
		b[k] = e[k] = onnx_dim_int(0);
	for (int i = 0; i < w->nsp; i++) {
		if (window_pads(im, x, w, i, &b[2 + i], &e[2 + i]) < 0)
			return -1;
		if (b[2 + i].expr != NULL || !onnx_dim_same(b[2 + i], e[2 + i]))
			even = 0;
	}
	*in = x;
	if (even) {
		for (int i = 0; i < w->nsp; i++)
			w->p[i] = b[2 + i].v;
		return 0;
	}
	for (int i = 0; i < w->nsp; i++)
		w->p[i] = 0;
	*in = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.padded", o->name));
	if (*in == NULL || (*in)->name == NULL)
		return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	return onnx_op_pad_axes(im, x, *in, b, e);
}

/* o's shape: the window over `in` (x, or x padded by window_input). With
 * auto_pad SAME_* it is ONNX's ceil(x / s), which the padded formula equals
 * (window_pads): written so, the sizes of a stack of SAME layers over a
 * symbolic input stay short expressions instead of growing with each
 * layer's pads. */
static int
window_shape(struct onnx_imp *im, const struct onnx_val *in, const struct onnx_val *x, const struct window *w,
    int ceil_mode, struct onnx_val *o)
{
	onnx_op_copy_shape(o, in);
	for (int i = 0; i < w->nsp; i++) {
		struct onnx_dim *d = &o->shape[2 + i];
		if (w->auto_pad == AUTO_PAD_SAME_UPPER || w->auto_pad == AUTO_PAD_SAME_LOWER) {
			if (onnx_dim_arith(im->ar, ONNX_DIM_CDIV, x->shape[2 + i], onnx_dim_int(w->s[i]), d) < 0)
				return onnx_imp_fail(im, DN_EINVAL, "output size overflows");
		} else if (conv_out(im, in->shape[2 + i], w->k[i], w->s[i], w->p[i], w->d[i], ceil_mode, d) < 0) {
			return -1;
		}
	}
	return 0;
}

int
onnx_op_conv(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *w = onnx_op_in(im, 1), *in;
	struct window win;
	int64_t groups = onnx_op_attr_i(im, "group", 1);
	char name[32];
	json_t *l;

	if (w == NULL || w->kind != ONNX_V_CONST || w->rank != x->rank)
		return onnx_imp_fail(im, DN_EINVAL, "the weight must be an initializer of rank %d", x->rank);
	if (window(im, x, w, &win) < 0)
		return -1;
	if (groups < 1 || w->t->dims[0] % groups != 0)
		return onnx_imp_fail(im, DN_EINVAL, "group %lld does not divide %lld output channels", (long long)groups,
		    (long long)w->t->dims[0]);
	if (window_input(im, x, o, &win, &in) < 0)
		return -1;
	l = onnx_op_emit(im, nd_name(name, sizeof name, "conv", win.nsp), o, in, NULL);
	json_object_set_new(l, "out_channels", json_integer(w->t->dims[0]));
	json_object_set_new(l, "kernel", tuple(win.nsp, win.k));
	if (any_not(win.nsp, win.s, 1))
		json_object_set_new(l, "stride", tuple(win.nsp, win.s));
	if (any_not(win.nsp, win.p, 0))
		json_object_set_new(l, "padding", tuple(win.nsp, win.p));
	if (any_not(win.nsp, win.d, 1))
		json_object_set_new(l, "dilation", tuple(win.nsp, win.d));
	if (groups != 1)
		json_object_set_new(l, "groups", json_integer(groups));
	json_object_set_new(l, "bias", json_boolean(onnx_op_in(im, 2) != NULL));
	if (window_shape(im, in, x, &win, 0, o) < 0)
		return -1;
	o->shape[1] = onnx_dim_int(w->t->dims[0]);
	return 0;
}

/* y with one row cut off the end of each spatial axis that `extra` marks,
 * into o (y is o when none is: nothing to do); one slice an axis, the last
 * into o, the others into o.cropped<axis>. */
static int
crop_rows(struct onnx_imp *im, struct onnx_val *y, struct onnx_val *o, const int64_t *extra, int nsp)
{
	struct onnx_val *cur = y;
	int last = -1;

	for (int i = 0; i < nsp; i++)
		if (extra[i] != 0)
			last = i;
	for (int i = 0; i < nsp; i++) {
		struct onnx_val *to = o;
		struct onnx_dim end;
		if (extra[i] == 0)
			continue;
		if (i != last) {
			to = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.cropped%d", o->name, i));
			if (to == NULL || to->name == NULL)
				return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
		}
		if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, cur->shape[2 + i], onnx_dim_int(-1), &end) < 0 ||
		    onnx_op_slice_axis(im, cur, to, 2 + i, onnx_dim_int(0), end, to->name) < 0)
			return -1;
		cur = to;
	}
	return 0;
}

/* The padding ConvTranspose trims from each spatial axis of its full
 * output, by ONNX's formulas: out = s (in - 1) + output_padding + d (k - 1)
 * + 1 - total, total = pads' start + end; with auto_pad SAME_* out = in * s
 * (output_padding inside the total, as the operator's docs write it;
 * python3-onnx 1.12's shape inference adds output_padding on top); with
 * output_shape, out is given (total_padding in the operator's docs).
 * Where the padding is split does not change any cost. */
static int
transpose_total(struct onnx_imp *im, const struct onnx_val *x, const struct window *win, const int64_t *op,
    int64_t total[WIN_MAX])
{
	int64_t os[WIN_MAX + 2];
	int n = onnx_op_attr_ints(im, "output_shape", os, WIN_MAX + 2);

	if (n == -2 || (n >= 0 && n != win->nsp && n != win->nsp + 2))
		return onnx_imp_fail(im, DN_EINVAL, "output_shape has the wrong number of entries (%d spatial axes)",
		    win->nsp);
	for (int i = 0; i < win->nsp; i++) {
		int64_t span = win->d[i] * (win->k[i] - 1) + 1;
		struct onnx_dim in = x->shape[2 + i];
		if (n > 0) {
			int64_t want = os[n - win->nsp + i];
			if (in.expr != NULL)
				return onnx_imp_fail(im, DN_EINVAL, "output_shape with the symbolic input size '%.60s' on "
				    "spatial axis %d is not supported (export with pads and output_padding)", in.expr, i);
			if (want < 1 || want > ((int64_t)1 << 40) || in.v > ((int64_t)1 << 40))
				return onnx_imp_fail(im, DN_EINVAL, "output_shape %lld on spatial axis %d is out of range",
				    (long long)want, i);
			total[i] = win->s[i] * (in.v - 1) + op[i] + span - want;
		} else if (win->auto_pad == AUTO_PAD_SAME_UPPER || win->auto_pad == AUTO_PAD_SAME_LOWER) {
			/* never negative (pads are not), so out is in * s only when
			 * the kernel spans at least the stride */
			total[i] = op[i] + span - win->s[i] > 0 ? op[i] + span - win->s[i] : 0;
		} else if (win->auto_pad == AUTO_PAD_VALID) {
			total[i] = 0;
		} else {
			total[i] = win->pb[i] + win->pe[i];
		}
	}
	return 0;
}

/* ConvTranspose (opset 1-22 share the attributes): weight [C, M / group,
 * k...] so M = dims[1] * group. The model format pads evenly: the net trim
 * (total padding less output_padding) becomes padding p and output_padding
 * 2p - trim (0 or 1; PyTorch wants it below the stride or the dilation),
 * or, at stride and dilation 1 with an odd trim, padding trim / 2 and a
 * slice of the one row left over. MACs (input elements x out_channels /
 * groups x kernel area) do not depend on the padding. */
int
onnx_op_conv_transpose(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *w = onnx_op_in(im, 1), *y = o;
	struct window win;
	int64_t groups = onnx_op_attr_i(im, "group", 1), op[WIN_MAX] = { 0 }, cout, total[WIN_MAX] = { 0 };
	int64_t p[WIN_MAX] = { 0 }, opp[WIN_MAX] = { 0 }, extra[WIN_MAX] = { 0 };
	char name[32];
	int n;
	json_t *l;

	if (w == NULL || w->kind != ONNX_V_CONST || w->rank != x->rank)
		return onnx_imp_fail(im, DN_EINVAL, "the weight must be an initializer of rank %d", x->rank);
	if (window(im, x, w, &win) < 0)
		return -1;
	if (groups < 1 || groups > 65536 || w->t->dims[0] % groups != 0)
		return onnx_imp_fail(im, DN_EINVAL, "group %lld does not divide %lld input channels", (long long)groups,
		    (long long)w->t->dims[0]);
	if (x->shape[1].expr == NULL && x->shape[1].v != w->t->dims[0])
		return onnx_imp_fail(im, DN_EINVAL, "the weight's %lld input channels do not match the input's %lld",
		    (long long)w->t->dims[0], (long long)x->shape[1].v);
	n = onnx_op_attr_ints(im, "output_padding", op, WIN_MAX);
	if (n != -1 && n != win.nsp)
		return onnx_imp_fail(im, DN_EINVAL, "output_padding has the wrong number of entries (%d spatial axes)",
		    win.nsp);
	for (int i = 0; i < win.nsp; i++)
		if (op[i] < 0 || (op[i] >= win.s[i] && op[i] >= win.d[i]))
			return onnx_imp_fail(im, DN_EINVAL, "output_padding %lld on spatial axis %d is not smaller than "
			    "the stride %lld or the dilation %lld", (long long)op[i], i, (long long)win.s[i], (long long)win.d[i]);
	if (transpose_total(im, x, &win, op, total) < 0)
		return -1;
	for (int i = 0; i < win.nsp; i++) {
		int64_t trim = total[i] - op[i];
		if (trim >= 0) {
			p[i] = (trim + 1) / 2;
			opp[i] = 2 * p[i] - trim;
			if (opp[i] == 1 && win.s[i] == 1 && win.d[i] == 1) {
				p[i] = trim / 2;
				opp[i] = 0;
				extra[i] = 1;
			}
		} else if ((opp[i] = -trim) >= win.s[i] && opp[i] >= win.d[i]) {
			return onnx_imp_fail(im, DN_EINVAL, "the output is %lld larger than the full transposed convolution on "
			    "spatial axis %d (output_shape or negative pads): more than output_padding below the stride %lld "
			    "or the dilation %lld can add", (long long)opp[i], i, (long long)win.s[i], (long long)win.d[i]);
		}
	}
	cout = w->t->dims[1] * groups;
	if (w->t->dims[1] < 1 || cout > ((int64_t)1 << 31))
		return onnx_imp_fail(im, DN_EINVAL, "%lld output channels per group", (long long)w->t->dims[1]);
	if (any_not(win.nsp, extra, 0)) {
		y = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.uncropped", o->name));
		if (y == NULL || y->name == NULL)
			return dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	}
	l = onnx_op_emit(im, nd_name(name, sizeof name, "conv_transpose", win.nsp), y, x, NULL);
	json_object_set_new(l, "out_channels", json_integer(cout));
	json_object_set_new(l, "kernel", tuple(win.nsp, win.k));
	if (any_not(win.nsp, win.s, 1))
		json_object_set_new(l, "stride", tuple(win.nsp, win.s));
	if (any_not(win.nsp, p, 0))
		json_object_set_new(l, "padding", tuple(win.nsp, p));
	if (any_not(win.nsp, opp, 0))
		json_object_set_new(l, "output_padding", tuple(win.nsp, opp));
	if (any_not(win.nsp, win.d, 1))
		json_object_set_new(l, "dilation", tuple(win.nsp, win.d));
	if (groups != 1)
		json_object_set_new(l, "groups", json_integer(groups));
	json_object_set_new(l, "bias", json_boolean(onnx_op_in(im, 2) != NULL));
	onnx_op_copy_shape(y, x);
	y->shape[1] = onnx_dim_int(cout);
	for (int i = 0; i < win.nsp; i++) {
		struct onnx_dim t;
		int64_t add = win.d[i] * (win.k[i] - 1) + opp[i] + 1 - 2 * p[i];
		if (onnx_dim_arith(im->ar, ONNX_DIM_ADD, x->shape[2 + i], onnx_dim_int(-1), &t) < 0 ||
		    onnx_dim_arith(im->ar, ONNX_DIM_MUL, t, onnx_dim_int(win.s[i]), &t) < 0 ||
		    onnx_dim_arith(im->ar, ONNX_DIM_ADD, t, onnx_dim_int(add), &y->shape[2 + i]) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "output size overflows");
		if (y->shape[2 + i].expr == NULL && y->shape[2 + i].v - extra[i] < 1)
			return onnx_imp_fail(im, DN_EINVAL, "output size %lld on spatial axis %d (pads larger than the output)",
			    (long long)(y->shape[2 + i].v - extra[i]), i);
	}
	return crop_rows(im, y, o, extra, win.nsp);
}

int
onnx_op_pool(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o)
{
	struct window win;
	struct onnx_val *in;
	int ceil_mode = (int)onnx_op_attr_i(im, "ceil_mode", 0);
	char name[32];
	json_t *l;

	if (window(im, x, NULL, &win) < 0)
		return -1;
	if (any_not(win.nsp, win.d, 1))
		return onnx_imp_fail(im, DN_EINVAL, "dilated pooling is not supported");
	if (window_input(im, x, o, &win, &in) < 0)
		return -1;
	l = onnx_op_emit(im, nd_name(name, sizeof name, op, win.nsp), o, in, NULL);
	json_object_set_new(l, "kernel", tuple(win.nsp, win.k));
	json_object_set_new(l, "stride", tuple(win.nsp, win.s));
	if (any_not(win.nsp, win.p, 0))
		json_object_set_new(l, "padding", tuple(win.nsp, win.p));
	if (ceil_mode)
		json_object_set_new(l, "ceil_mode", json_true());
	if (op[0] == 'a')
		json_object_set_new(l, "count_include_pad", json_boolean(onnx_op_attr_i(im, "count_include_pad", 0) != 0));
	return window_shape(im, in, x, &win, ceil_mode, o);
}

/* 1 when W (as stored: [in, out] when trans == 0, [out, in] when 1) holds
 * the same numbers as an embedding table [out, in] read earlier: a head tied
 * to the embedding (GPT-2's lm_head), whose weight PyTorch counts once. */
static int
tied(struct onnx_imp *im, const struct onnx_tensor *w, int trans)
{
	for (int e = 0; e < im->nembeddings; e++) {
		const struct onnx_tensor *t = im->embeddings[e];
		int64_t rows = t->dims[0], cols = t->dims[1];
		int same = 1;
		if (t == w)
			return 1;
		if (w->rank != 2 || w->dtype != ONNX_FLOAT || t->dtype != ONNX_FLOAT || w->raw == NULL || t->raw == NULL ||
		    (trans ? (w->dims[0] != rows || w->dims[1] != cols) : (w->dims[0] != cols || w->dims[1] != rows)))
			continue;
		for (int64_t r = 0; r < rows && same; r++)
			for (int64_t c = 0; c < cols && same; c++) {
				int64_t ti = r * cols + c, wi = trans ? ti : c * rows + r;
				if ((size_t)(ti + 1) * 4 > t->raw_len || (size_t)(wi + 1) * 4 > w->raw_len ||
				    memcmp(t->raw + ti * 4, w->raw + wi * 4, 4) != 0)
					same = 0;
			}
		if (same)
			return 1;
	}
	return 0;
}

/* The module name of the node being translated, from the scope PyTorch's
 * exporter writes into node names since 1.13 ("/h.0/mlp/c_fc/MatMul": the
 * component before the operator's own, after its last '.'), into buf; 0
 * when the name has none of the shape of one (letters, digits and '_', not
 * starting with a digit: "mlp.0"'s "0" is not). */
static int
node_module(const struct onnx_node *n, char *buf, size_t len)
{
	const char *name = n->name != NULL ? n->name : "", *end = strrchr(name, '/'), *b;
	size_t k;

	if (end == NULL || end == name)
		return 0;
	for (b = end; b > name && b[-1] != '/' && b[-1] != '.'; b--)
		;
	k = (size_t)(end - b);
	if (k >= len || !cm_ident(b, k))
		return 0;
	memcpy(buf, b, k);
	buf[k] = '\0';
	return 1;
}

/* Whether initializer name is a PyTorch state_dict key (components of
 * letters, digits and '_' joined by '.') of a parameter that is not a
 * module's "weight": nn.Linear's (and Hugging Face Conv1D's) weight is
 * always "<module>.weight", so "<module>.in_proj_weight"
 * (nn.MultiheadAttention's fused in-projection; q_proj_weight and the like
 * where kdim differs) is a plain parameter of a larger module, multiplied
 * by F.linear. A name with none of that shape ("onnx::MatMul_123", a
 * constant the exporter folded) says nothing: a module, as before. */
static int
param_not_module(const char *name)
{
	const char *last = name != NULL ? strrchr(name, '.') : NULL;

	if (last == NULL || last == name || strcmp(last + 1, "weight") == 0)
		return 0;
	for (const char *c = name; *c != '\0'; c++)
		if (!(isalnum((unsigned char)*c) || *c == '_' || (*c == '.' && c[1] != '.' && c[1] != '\0')))
			return 0;
	return 1;
}

/* MatMul or Gemm by an initializer: a linear layer, named by its module
 * (node_module: peft's target_modules and the fine-tuning selectors pick
 * it by that name), marked "linear_module": false where its weight is a
 * plain parameter (param_not_module: peft's all-linear and bitsandbytes
 * leave it out); a following Add of a bias initializer (the only reader
 * of the product) is folded into it. */
static int
linear_emit(struct onnx_imp *im, struct onnx_val *x, int64_t inf, int64_t outf, int is_tied, const char *wname,
    int has_bias, struct onnx_val *o)
{
	struct onnx_val *fin = o;
	json_t *l;
	char module[32];

	if (x->rank < 1)
		return onnx_imp_fail(im, DN_EINVAL, "a linear layer on a scalar");
	if (x->shape[x->rank - 1].expr == NULL && x->shape[x->rank - 1].v != inf)
		return onnx_imp_fail(im, DN_EINVAL, "the weight's %lld inputs do not match the last dimension %lld",
		    (long long)inf, (long long)x->shape[x->rank - 1].v);
	if (!has_bias && o->nconsumers == 1) {
		int k = o->consumers[0];
		const struct onnx_node *a = &im->m->graph.nodes[k];
		if (strcmp(a->op_type, "Add") == 0 && a->ninputs == 2 && im->fuse[k] == ONNX_FUSE_NONE) {
			struct onnx_val *b = onnx_imp_find(im, strcmp(a->inputs[0], o->name) == 0 ? a->inputs[1] : a->inputs[0]);
			/* the bias, or (cross-attention) a slice of one */
			if (b != NULL && ((b->kind == ONNX_V_CONST && b->param && b->rank == 1 && b->t->dims[0] == outf) ||
			    (b->kind == ONNX_V_DERIVED && b->rank == 1 && b->shape[0].expr == NULL && b->shape[0].v == outf &&
			    onnx_imp_param_source(im, b->name) != NULL))) {
				im->fuse[k] = ONNX_FUSE_SKIP;
				fin = onnx_imp_find(im, a->outputs[0]);
				has_bias = 1;
			}
		}
	}
	l = onnx_op_emit(im, "linear", fin, x, NULL);
	json_object_set_new(l, "out_features", json_integer(outf));
	json_object_set_new(l, "bias", json_boolean(has_bias));
	if (is_tied)
		json_object_set_new(l, "tied", json_true());
	if (param_not_module(wname))
		json_object_set_new(l, "linear_module", json_false());
	if (node_module(NODE(im), module, sizeof module))
		json_object_set_new(l, "module", json_string(module));
	onnx_op_copy_shape(fin, x);
	fin->shape[x->rank - 1] = onnx_dim_int(outf);
	return 0;
}

int
onnx_op_linear(struct onnx_imp *im, struct onnx_val *x, const struct onnx_val *w, int trans, int has_bias,
    struct onnx_val *o)
{
	return linear_emit(im, x, trans ? w->t->dims[1] : w->t->dims[0], trans ? w->t->dims[0] : w->t->dims[1],
	    tied(im, w->t, trans), w->param ? w->t->name : NULL, has_bias, o);
}

int
onnx_op_matmul(struct onnx_imp *im, struct onnx_val *a, struct onnx_val *o)
{
	struct onnx_val *b = onnx_op_in(im, 1);
	struct onnx_val ta, tb;

	if (b != NULL && b->kind == ONNX_V_CONST && b->rank == 2)
		return onnx_op_linear(im, a, b, b->transposed, 0, o);
	if (b != NULL && b->kind == ONNX_V_DERIVED && b->rank == 2 && b->shape[0].expr == NULL && b->shape[1].expr == NULL &&
	    !b->dyn) {
		/* a part of a weight: nn.MultiheadAttention's cross-attention
		 * multiplies by slices of its in_proj_weight (w_q, w_kv), transposed */
		struct onnx_val *src = onnx_imp_param_source(im, NODE(im)->inputs[1]);
		if (src != NULL)
			return linear_emit(im, a, b->shape[0].v, b->shape[1].v, 0, src->t->name, 0, o);
	}
	if (b == NULL || b->kind != ONNX_V_DATA || a->rank < 2 || b->rank < 2)
		return onnx_imp_fail(im, DN_EINVAL, "a product of two activations of rank >= 2 (or by a 2-d initializer) expected");
	onnx_op_emit(im, "matmul", o, a, b);
	ta = *a;
	tb = *b;
	ta.rank -= 2;
	tb.rank -= 2;
	if (onnx_op_broadcast(o, &ta, &tb) < 0)
		return onnx_imp_fail(im, DN_EINVAL, "batch dimensions do not broadcast");
	o->shape[o->rank++] = a->shape[a->rank - 2];
	o->shape[o->rank++] = b->shape[b->rank - 1];
	return 0;
}

int
onnx_op_gemm(struct onnx_imp *im, struct onnx_val *a, struct onnx_val *o)
{
	struct onnx_val *b = onnx_op_in(im, 1), *c = onnx_op_in(im, 2);

	if (onnx_op_attr_i(im, "transA", 0) != 0 || a->rank != 2)
		return onnx_imp_fail(im, DN_EINVAL, "only Gemm of a 2-d activation, not transposed, is supported");
	if (b == NULL || b->kind != ONNX_V_CONST || b->rank != 2)
		return onnx_imp_fail(im, DN_EINVAL, "the weight B must be a 2-d initializer");
	return onnx_op_linear(im, a, b, (onnx_op_attr_i(im, "transB", 0) != 0) != (b->transposed != 0), c != NULL, o);
}

/* Elementwise arithmetic: on shapes, on constants, or on activations. */
int
onnx_op_binary(struct onnx_imp *im, const char *op, struct onnx_val *o)
{
	struct onnx_val *a = onnx_op_in(im, 0), *b = onnx_op_in(im, 1), *x, *c;
	double f = 1.0;
	json_t *l;

	if (a == NULL || b == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "two inputs expected");
	if (onnx_op_sym_scale(op, a, b, o))
		return 0;       /* a size times a float: F.interpolate's recomputed size */
	if (a->kind != ONNX_V_DATA && b->kind != ONNX_V_DATA && a->kind != ONNX_V_DERIVED && b->kind != ONNX_V_DERIVED &&
	    onnx_op_sym_of(im, a) && onnx_op_sym_of(im, b))
		return onnx_op_sym_binary(im, op, a, b, o);
	if (a->kind == ONNX_V_DATA && b->kind == ONNX_V_DATA) {
		int mul = strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0;
		onnx_op_emit(im, mul ? "mul" : "add", o, a, b);
		if (onnx_op_broadcast(o, a, b) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		return 0;
	}
	if (a->kind != ONNX_V_DATA && b->kind != ONNX_V_DATA) {
		struct onnx_val sa = *a, sb = *b;
		if (sa.kind == ONNX_V_SYM)
			sa.rank = a->rank, sa.shape[0] = onnx_dim_int(a->n);
		if (sb.kind == ONNX_V_SYM)
			sb.rank = b->rank, sb.shape[0] = onnx_dim_int(b->n);
		o->kind = ONNX_V_DERIVED;
		if (onnx_op_broadcast(o, &sa, &sb) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		return 0;
	}
	x = a->kind == ONNX_V_DATA ? a : b;
	c = x == a ? b : a;
	if (c->kind == ONNX_V_CONST && c->param && !c->transposed && onnx_tensor_numel(c->t) > 1) {
		struct onnx_val *p = onnx_op_param_as_data(im, c, c);
		int mul = strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0;
		if (p == NULL)
			return -1;
		onnx_op_emit(im, mul ? "mul" : "add", o, x == a ? x : p, x == a ? p : x);
		if (onnx_op_broadcast(o, x, p) < 0)
			return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
		return 0;
	}
	if (onnx_op_scalar(c, &f)) {
		if (strcmp(op, "Div") == 0 && x == a)
			f = f != 0 ? 1.0 / f : 1.0;
		else if (strcmp(op, "Mul") != 0)
			f = 1.0;
	} else {
		f = 1.0;
		if (c->kind == ONNX_V_CONST && c->param && onnx_tensor_numel(c->t) > 1)
			onnx_imp_warn(im, "node %d '%s' (%s): initializer '%s' (%lld values) is an operand of arithmetic "
			    "that the model format has no parameter for; its values are not counted", im->node,
			    NODE(im)->name, op, c->name, (long long)onnx_tensor_numel(c->t));
	}
	if (onnx_op_broadcast(o, x, c) < 0)
		return onnx_imp_fail(im, DN_EINVAL, "shapes do not broadcast");
	if (o->rank != x->rank)
		return onnx_imp_fail(im, DN_EINVAL, "a constant operand widens the activation (not supported)");
	for (int i = 0; i < o->rank; i++)
		if (!onnx_dim_same(o->shape[i], x->shape[i]))
			return onnx_imp_fail(im, DN_EINVAL, "a constant operand widens the activation (not supported)");
	l = onnx_op_emit(im, "scale", o, x, NULL);
	json_object_set_new(l, "factor", json_real(isfinite(f) ? f : 1.0));
	return 0;
}

int
onnx_op_simple(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o)
{
	onnx_op_emit(im, op, o, x, NULL);
	onnx_op_copy_shape(o, x);
	return 0;
}

/* InstanceNormalization of x [N, C, ...] (nn.InstanceNorm1d/2d/3d; not
 * torch's GroupNorm chain, which onnx_fuse.c folds): a group norm of C
 * groups, the statistics per sample and channel (PyTorch runs it as a
 * batch norm over the view [1, N C, ...]: the input and two values per
 * sample and channel kept), affine where the scale and the shift are
 * initializers (affine=True). */
int
onnx_op_instance_norm(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	const struct onnx_node *n = NODE(im);
	struct onnx_val *s = n->ninputs > 1 ? onnx_imp_find(im, n->inputs[1]) : NULL;
	json_t *l;

	if (x->rank < 3 || x->shape[1].expr != NULL)
		return onnx_imp_fail(im, DN_EINVAL, "instance normalization needs [N, C, ...] with a known C");
	l = onnx_op_emit(im, "groupnorm", o, x, NULL);
	json_object_set_new(l, "groups", json_integer(x->shape[1].v));
	json_object_set_new(l, "affine", json_boolean(s != NULL && s->kind == ONNX_V_CONST && s->param));
	onnx_op_copy_shape(o, x);
	return 0;
}

/* PRelu(x, slope) with a learnable slope (an initializer of one value, or
 * of one per channel of dim 1: torch's [C, 1, 1] for nn.PReLU(C), which
 * the exporter may reach through Unsqueeze or Reshape nodes). */
int
onnx_op_prelu(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o)
{
	struct onnx_val *s = onnx_imp_param_source(im, NODE(im)->ninputs > 1 ? NODE(im)->inputs[1] : "");
	int64_t n = 1;

	if (s == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "the slope must be an initializer (nn.PReLU's weight)");
	for (int d = 0; d < s->t->rank; d++)
		n *= s->t->dims[d];
	json_object_set_new(onnx_op_emit(im, "prelu", o, x, NULL), "num_parameters", json_integer(n));
	onnx_op_copy_shape(o, x);
	return 0;
}

int
onnx_op_fused(struct onnx_imp *im, int i, struct onnx_val *o)
{
	struct onnx_val *x = im->fuse_x[i] != NULL ? onnx_imp_find(im, im->fuse_x[i]) : NULL;
	json_t *l;

	if (im->fuse[i] == ONNX_FUSE_ATTENTION)
		return onnx_op_attention(im, i, o);
	if (x == NULL || x->kind != ONNX_V_DATA)
		return onnx_imp_fail(im, DN_EINVAL, "a fused operator's input is not an activation");
	if (im->fuse[i] == ONNX_FUSE_GELU)
		return onnx_op_simple(im, "gelu", x, o);
	if (im->fuse[i] == ONNX_FUSE_HARDSWISH)
		return onnx_op_simple(im, "hardswish", x, o);
	if (im->fuse[i] == ONNX_FUSE_SILU)
		return onnx_op_simple(im, "silu", x, o);
	if (im->fuse[i] == ONNX_FUSE_MISH)
		return onnx_op_simple(im, "mish", x, o);
	if (im->fuse[i] == ONNX_FUSE_GROUPNORM) {
		l = onnx_op_emit(im, "groupnorm", o, x, NULL);
		json_object_set_new(l, "groups", json_integer(im->fuse_groups[i]));
		json_object_set_new(l, "affine", json_boolean(im->fuse_affine[i]));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	if (im->fuse[i] == ONNX_FUSE_GELU_TANH) {
		json_object_set_new(onnx_op_emit(im, "gelu", o, x, NULL), "approximate", json_string("tanh_python"));
		onnx_op_copy_shape(o, x);
		return 0;
	}
	l = onnx_op_emit(im, "layernorm", o, x, NULL);
	json_object_set_new(l, "affine", json_boolean(im->fuse_affine[i]));
	onnx_op_copy_shape(o, x);
	return 0;
}
