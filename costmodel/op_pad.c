/*
 * op_pad.c - pad: constant padding as PyTorch's F.pad / nn.ZeroPad2d run
 * it (aten::constant_pad_nd). `padding` lists (begin, end) pairs in F.pad's
 * order, the last dimension first: [left, right] pads the last dimension,
 * [left, right, top, bottom] the last two. Each padded dimension becomes
 * in + begin + end.
 *
 * What torch 1.13 does (aten/src/ATen/native/PadNd.cpp, constant_pad_nd):
 * a new output tensor, filled with the value, and the input copied into
 * its interior (two kernels, no arithmetic); the fill value changes no
 * cost. Backward (ConstantPadNdBackward0) keeps nothing but the pad sizes:
 * the input's gradient is the interior of the output's, cloned (one copy
 * kernel). Checked on Debian's torch 1.13 with torch.autograd.profiler
 * around F.pad(x, (0, 1, 0, 1)) and its backward: empty, fill_, copy_;
 * then narrow, clone; the node's only saved attribute is _saved_pad.
 * So the rule saves nothing; a convolution that follows saves the
 * padded tensor as its input, which is why an asymmetric padding costs
 * memory that a symmetric one (inside cuDNN's convolution) does not.
 * Negative padding (a crop in F.pad) is not accepted: padding >= 0 is a
 * validity rule, so an expression that comes out negative is an invalid
 * configuration.
 */
#include "op_rules.h"

#include <string.h>

static int
pad_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	expr_id pads[2 * CM_MAX_RANK], dims[CM_MAX_RANK], zero = expr_int(g, 0);
	char names[2][40];
	int n = ob_int_list(ob, "padding", 2, 2 * CM_MAX_RANK, pads);

	if (n < 0)
		return -1;
	if (n % 2 != 0 || n / 2 > x->rank)
		return ob_fail(ob, "padding", "must list (begin, end) pairs for at most the input's %d dimensions, "
		    "the last dimension first (F.pad's order); %d entries given", x->rank, n);
	memcpy(dims, x->dim, sizeof dims);
	for (int i = 0; i < n / 2; i++) {
		int d = x->rank - 1 - i;
		const char *nm[2] = { names[0], names[1] };
		expr_id v[2] = { pads[2 * i], pads[2 * i + 1] };
		dn_fmt(names[0], sizeof names[0], "padding[%d]", 2 * i);
		dn_fmt(names[1], sizeof names[1], "padding[%d]", 2 * i + 1);
		ob_require(ob, expr_and(g, expr_ge(g, v[0], zero), expr_ge(g, v[1], zero)), "padding >= 0", 2, nm, v);
		dims[d] = expr_add(g, x->dim[d], expr_add(g, v[0], v[1]));
	}
	if (ob_out_new(ob, x->rank, dims, (enum cm_dtype)x->dtype) < 0)
		return -1;
	op_elementwise_costs(ob, 0);
	ob->op.kernels_fwd = 2;     /* fill, then copy the interior */
	ob->op.kernels_bwd = 1;     /* the gradient's interior, cloned */
	return 0;
}

static const char *const pad_attrs[] = { "padding", NULL };

const struct op_rule op_rule_pad = { "pad", pad_attrs, 1, 1, CM_CLASS_ELEMENTWISE, pad_build };
