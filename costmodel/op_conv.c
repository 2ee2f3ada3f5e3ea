/*
 * op_conv.c - conv1d and conv2d as PyTorch runs them: shapes with stride,
 * padding (including "same"), dilation and groups (depthwise when groups =
 * in channels), Refty-style validity, parameters, MACs and what autograd
 * keeps for backward (the input, for the weight gradient).
 *
 * MACs follow torchvision / fvcore: N * Cout * Hout * Wout * (Cin / groups)
 * * kh * kw; the bias add is not a MAC.
 *
 * conv_transpose1d and conv_transpose2d (nn.ConvTranspose*d, the gradient of
 * a convolution run forwards) share the rule: weight [Cin, Cout / groups, kh,
 * kw]; out = (in - 1) * stride - 2 * padding + dilation * (k - 1) +
 * output_padding + 1 (the formula in PyTorch's ConvTranspose2d docs);
 * output_padding < stride or < dilation (torch's "output padding must be
 * smaller than either stride or dilation"); MACs = every input element times
 * (Cout / groups) * kh * kw (fvcore's and thop's count: each input pixel
 * scatters one kernel per output channel of its group); autograd saves the
 * input (convolution_backward needs it for the weight gradient), as for conv.
 * "same" padding and depthwise are not accepted for the transposed ones.
 */
#include "op_rules.h"

#include <string.h>

static int
conv_build(struct op_build *ob, int spatial, int tr)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id cin, cout, groups, k[2], s[2], p[2], d[2], op[2], outdim[CM_MAX_RANK];
	expr_id one = expr_int(g, 1), zero = expr_int(g, 0), macs, cin_g, ksz;
	int depthwise, bias, same = 0;
	const json_t *pad = json_object_get(ob->item, "padding");

	if (ob_need_rank(ob, 0, spatial + 2, spatial + 2) != 0)
		return -1;
	x = ob_in(ob, 0);
	cin = x->dim[1];
	depthwise = ob_bool(ob, "depthwise", 0);
	bias = ob_bool(ob, "bias", 1);
	if (depthwise < 0 || bias < 0)
		return -1;
	if (tr && (depthwise || json_is_string(pad)))
		return ob_fail(ob, depthwise ? "depthwise" : "padding", "not accepted by a transposed convolution");
	if (depthwise) {
		if (ob_has(ob, "groups"))
			return ob_fail(ob, "groups", "give either \"groups\" or \"depthwise\", not both");
		groups = cin;
		cout = ob_has(ob, "out_channels") ? ob_int(ob, "out_channels", OB_REQUIRED) : cin;
	} else {
		groups = ob_int(ob, "groups", 1);
		cout = ob_int(ob, "out_channels", OB_REQUIRED);
	}
	if (cout < 0 || groups < 0)
		return -1;
	if (spatial == 2) {
		if (ob_pair(ob, "kernel", OB_REQUIRED, k) || ob_pair(ob, "stride", 1, s) ||
		    ob_pair(ob, "dilation", 1, d) || ob_pair(ob, "output_padding", 0, op))
			return -1;
	} else {
		k[0] = k[1] = ob_int(ob, "kernel", OB_REQUIRED);
		s[0] = s[1] = ob_int(ob, "stride", 1);
		d[0] = d[1] = ob_int(ob, "dilation", 1);
		op[0] = op[1] = ob_int(ob, "output_padding", 0);
		if (k[0] < 0 || s[0] < 0 || d[0] < 0 || op[0] < 0)
			return -1;
	}
	if (json_is_string(pad) && strcmp(json_string_value(pad), "same") == 0) {
		same = 1;
		p[0] = p[1] = zero;
	} else if (spatial == 2) {
		if (ob_pair(ob, "padding", 0, p))
			return -1;
	} else {
		p[0] = p[1] = ob_int(ob, "padding", 0);
		if (p[0] < 0)
			return -1;
	}

	{
		const char *n1[] = { "out_channels" }, *n2[] = { "groups" };
		const char *n3[] = { "in_channels", "groups" }, *n4[] = { "out_channels", "groups" };
		expr_id v3[] = { cin, groups }, v4[] = { cout, groups };
		ob_require(ob, expr_ge(g, cout, one), "out_channels >= 1", 1, n1, &cout);
		ob_require(ob, expr_ge(g, groups, one), "groups >= 1", 1, n2, &groups);
		ob_require(ob, expr_eq(g, expr_mod(g, cin, groups), zero),
		    "groups divides in_channels", 2, n3, v3);
		ob_require(ob, expr_eq(g, expr_mod(g, cout, groups), zero),
		    "groups divides out_channels", 2, n4, v4);
	}
	for (int i = 0; i < spatial; i++) {
		int a = spatial == 2 ? i : 0;   /* attribute index */
		expr_id in = x->dim[2 + i], o;
		const char *nk[] = { "kernel" }, *ns[] = { "stride" }, *nd[] = { "dilation" }, *np[] = { "padding" };
		ob_require(ob, expr_ge(g, k[a], one), "kernel >= 1", 1, nk, &k[a]);
		ob_require(ob, expr_ge(g, s[a], one), "stride >= 1", 1, ns, &s[a]);
		ob_require(ob, expr_ge(g, d[a], one), "dilation >= 1", 1, nd, &d[a]);
		ob_require(ob, expr_ge(g, p[a], zero), "padding >= 0", 1, np, &p[a]);
		if (tr) {
			/* (in - 1) s - 2p + d(k - 1) + output_padding + 1 */
			const char *n6[] = { "output_padding", "stride", "dilation" };
			expr_id v6[] = { op[a], s[a], d[a] };
			ob_require(ob, expr_ge(g, op[a], zero), "output_padding >= 0", 1, n6, &op[a]);
			ob_require(ob, expr_or(g, expr_lt(g, op[a], s[a]), expr_lt(g, op[a], d[a])),
			    "output_padding smaller than stride or dilation", 3, n6, v6);
			o = expr_add(g, expr_sub(g, expr_mul(g, expr_sub(g, in, one), s[a]), expr_mul(g, expr_int(g, 2), p[a])),
			    expr_add(g, expr_mul(g, d[a], expr_sub(g, k[a], one)), expr_add(g, op[a], one)));
		} else if (same) {
			const char *n5[] = { "stride" };
			ob_require(ob, expr_eq(g, s[a], one), "padding \"same\" needs stride 1", 1, n5, &s[a]);
			o = in;
		} else {
			/* floor((in + (2p - d(k-1) - 1)) / s) + 1: the window terms are
			 * grouped into one sub-expression so that the solver's bounds see
			 * it as a function of the kernel alone ("same" padding gives a
			 * constant, not an interval that grows with the kernel) */
			expr_id win = expr_sub(g, expr_sub(g, expr_mul(g, expr_int(g, 2), p[a]),
			    expr_mul(g, d[a], expr_sub(g, k[a], one))), one);
			expr_id num = expr_add(g, in, win);
			o = expr_add(g, expr_div(g, num, s[a]), one);
		}
		{
			const char *names[] = { "input size", "kernel", "padding", "output size" };
			expr_id vals[] = { in, k[a], p[a], o };
			ob_require(ob, expr_ge(g, o, one), tr ? (i == 0 && spatial == 2 ? "output height >= 1 (padding larger than the output)" :
			    i == 1 ? "output width >= 1 (padding larger than the output)" :
			    "output length >= 1 (padding larger than the output)") :
			    i == 0 && spatial == 2 ? "output height >= 1 (kernel larger than the padded input)" :
			    i == 1 ? "output width >= 1 (kernel larger than the padded input)" :
			    "output length >= 1 (kernel larger than the padded input)", 4, names, vals);
		}
		outdim[2 + i] = o;
	}
	outdim[0] = x->dim[0];
	outdim[1] = cout;
	if (ob_out_new(ob, spatial + 2, outdim, CM_DT_ACT) < 0)
		return -1;

	/* the per-group fan: Cin / groups inputs per output (conv), Cout / groups
	 * outputs per input (transposed) */
	cin_g = tr ? expr_div(g, cout, groups) : expr_div(g, cin, groups);
	ksz = spatial == 2 ? expr_mul(g, k[0], k[1]) : k[0];
	{
		/* weight [cout, cin_g, kh, kw] (conv2d) or [cout, cin_g, k], and
		 * [cin, cout_g, ...] transposed: Adafactor's rows fold all but the
		 * last dim, its cols all but the second to last */
		expr_id lead = tr ? cin : cout;
		expr_id oc = expr_mul(g, lead, cin_g);
		expr_id rows = spatial == 2 ? expr_mul(g, oc, k[0]) : oc;
		expr_id cols = spatial == 2 ? expr_mul(g, oc, k[1]) : expr_mul(g, lead, k[0]);
		ob_param_2d(ob, expr_mul(g, oc, ksz), rows, cols);
	}
	if (bias)
		ob_param(ob, cout);
	macs = expr_mul(g, tr ? x->elems : ob->m->tensors[ob->out].elems, expr_mul(g, cin_g, ksz));
	ob->op.macs = macs;
	/* backward: the weight's gradient unless it is frozen, the input's when
	 * the input needs one. ConvolutionBackward0 keeps the input whichever
	 * it computes (one convolution_backward formula for both) */
	ob->op.bwd_macs = expr_mul(g, macs, expr_int(g, (x->requires_grad ? 1 : 0) + (ob_weights_train(ob) ? 1 : 0)));
	ob_save_input(ob, 0);
	op_io_bytes(ob, 1);
	/* implicit GEMM: M = N*Ho*Wo rows, Cout columns, in 128 x 64 tiles */
	ob->op.parallel = expr_mul(g, expr_cdiv(g, expr_div(g, ob->m->tensors[ob->out].elems, cout),
	    expr_int(g, 128)), expr_cdiv(g, cout, expr_int(g, 64)));
	/*
	 * cuDNN workspace. For dense (groups = 1) 3x3 stride-1 convolutions the
	 * fastest algorithms are Winograd-style: F(4x4, 3x3) keeps transformed
	 * input and output tiles of 6x6 per 4x4 outputs, 36/16 = 2.25 times the
	 * input and the output. Other shapes run implicit GEMM, whose workspace
	 * is negligible. Backward data and filter use the same transforms.
	 */
	if (spatial == 2 && !tr) {
		expr_id dense3 = expr_and(g, expr_and(g, expr_eq(g, k[0], expr_int(g, 3)), expr_eq(g, k[1], expr_int(g, 3))),
		    expr_and(g, expr_and(g, expr_eq(g, s[0], one), expr_eq(g, s[1], one)), expr_eq(g, groups, one)));
		expr_id io = expr_add(g, ob_bytes(ob, x->elems, CM_DT_ACT),
		    ob_bytes(ob, ob->m->tensors[ob->out].elems, CM_DT_ACT));
		expr_id ws = expr_div(g, expr_mul(g, io, expr_int(g, 9)), expr_int(g, 4));
		ob->op.ws_fwd = expr_mul(g, dense3, ws);
		ob->op.ws_bwd = ob->op.ws_fwd;
	}
	ob->op.kernels_fwd = (uint8_t)(bias ? 2 : 1);
	ob->op.lib_calls = 1;   /* cuDNN (perf_model.c) */
	if (bias)
		ob->op.bias_adds = ob->m->tensors[ob->out].elems;
	ob->op.kernel_area = ksz;
	ob->op.tap_macs = expr_mul(g, tr ? x->elems : ob->m->tensors[ob->out].elems, cin_g);
	ob->op.kernels_bwd = (uint8_t)((x->requires_grad ? 1 : 0) + (ob_weights_train(ob) ? 1 + (bias ? 1 : 0) : 0));
	return 0;
}

static int conv1d_build(struct op_build *ob) { return conv_build(ob, 1, 0); }
static int conv2d_build(struct op_build *ob) { return conv_build(ob, 2, 0); }
static int conv_transpose1d_build(struct op_build *ob) { return conv_build(ob, 1, 1); }
static int conv_transpose2d_build(struct op_build *ob) { return conv_build(ob, 2, 1); }

static const char *const conv_attrs[] = {
	"out_channels", "kernel", "stride", "padding", "dilation", "groups", "bias",
	"depthwise", NULL
};

const struct op_rule op_rule_conv1d = { "conv1d", conv_attrs, 1, 1, CM_CLASS_CONV, conv1d_build };
const struct op_rule op_rule_conv2d = { "conv2d", conv_attrs, 1, 1, CM_CLASS_CONV, conv2d_build };

static const char *const conv_transpose_attrs[] = {
	"out_channels", "kernel", "stride", "padding", "output_padding", "dilation", "groups", "bias", NULL
};

const struct op_rule op_rule_conv_transpose1d = { "conv_transpose1d", conv_transpose_attrs, 1, 1, CM_CLASS_CONV,
	conv_transpose1d_build };
const struct op_rule op_rule_conv_transpose2d = { "conv_transpose2d", conv_transpose_attrs, 1, 1, CM_CLASS_CONV,
	conv_transpose2d_build };
