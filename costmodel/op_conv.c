/*
 * op_conv.c - conv1d, conv2d and conv3d as PyTorch runs them: shapes with stride,
 * padding (including "same"), dilation and groups (depthwise when groups =
 * in channels), Refty-style validity, parameters, MACs and what autograd
 * keeps for backward (the input, for the weight gradient).
 *
 * MACs follow torchvision / fvcore: N * Cout * Hout * Wout * (Cin / groups)
 * * kh * kw (times Dout * kd for conv3d); the bias add is not a MAC.
 *
 * cuDNN's workspace is sized from measurements of 2-D convolutions
 * (conv_workspace); 3-D ones (video models) are unmeasured: no expected
 * workspace, and the safe estimate's bound of the 2-D ones (their input
 * plus output plus 64 MiB). Their time takes the 2-D convolutions'
 * efficiencies by kernel volume (perf_model.c).
 *
 * conv_transpose1d, conv_transpose2d and conv_transpose3d (nn.ConvTranspose*d,
 * the gradient of a convolution run forwards) share the rule: weight [Cin,
 * Cout / groups, (kd,) kh, kw]; out = (in - 1) * stride - 2 * padding + dilation * (k - 1) +
 * output_padding + 1 (the formula in PyTorch's ConvTranspose2d docs);
 * output_padding < stride or < dilation (torch's "output padding must be
 * smaller than either stride or dilation"); MACs = every input element times
 * (Cout / groups) * kh * kw (fvcore's and thop's count: each input pixel
 * scatters one kernel per output channel of its group); autograd saves the
 * input (convolution_backward needs it for the weight gradient), as for conv.
 * "same" padding and depthwise are not accepted for the transposed ones.
 *
 * A conv1d, conv2d or conv3d that LoRA's targets pick is a LoRA composite
 * (op_lora.c; peft adapts no transposed convolution).
 */
#include "model_build_priv.h"
#include "op_rules.h"

#include <string.h>

/* A convolution's attributes as read (conv_read) and its kernel sizes. */
struct conv_args {
	int spatial, tr;        /* 1 to 3 spatial dims; transposed */
	int bias, same;         /* a bias; padding "same" */
	expr_id cin, cout, groups;
	expr_id k[3], s[3], p[3], d[3], op[3];  /* kernel, stride, padding, dilation, output_padding */
};

/* Reads the attributes of a conv on x into *a, with the channel rules. */
static int
conv_read(struct op_build *ob, const struct cm_tensor *x, struct conv_args *a)
{
	struct expr_graph *g = &ob->m->g;
	expr_id one = expr_int(g, 1), zero = expr_int(g, 0);
	const json_t *pad = json_object_get(ob->item, "padding");
	int depthwise;

	a->cin = x->dim[1];
	depthwise = ob_bool(ob, "depthwise", 0);
	a->bias = ob_bool(ob, "bias", 1);
	a->same = 0;
	if (depthwise < 0 || a->bias < 0)
		return -1;
	if (a->tr && (depthwise || json_is_string(pad)))
		return ob_fail(ob, depthwise ? "depthwise" : "padding", "not accepted by a transposed convolution");
	if (depthwise) {
		if (ob_has(ob, "groups"))
			return ob_fail(ob, "groups", "give either \"groups\" or \"depthwise\", not both");
		a->groups = a->cin;
		a->cout = ob_has(ob, "out_channels") ? ob_int(ob, "out_channels", OB_REQUIRED) : a->cin;
	} else {
		a->groups = ob_int(ob, "groups", 1);
		a->cout = ob_int(ob, "out_channels", OB_REQUIRED);
	}
	if (a->cout < 0 || a->groups < 0)
		return -1;
	if (a->spatial >= 2) {
		if (ob_tuple(ob, "kernel", OB_REQUIRED, a->spatial, a->k) || ob_tuple(ob, "stride", 1, a->spatial, a->s) ||
		    ob_tuple(ob, "dilation", 1, a->spatial, a->d) || ob_tuple(ob, "output_padding", 0, a->spatial, a->op))
			return -1;
	} else {
		a->k[0] = a->k[1] = ob_int(ob, "kernel", OB_REQUIRED);
		a->s[0] = a->s[1] = ob_int(ob, "stride", 1);
		a->d[0] = a->d[1] = ob_int(ob, "dilation", 1);
		a->op[0] = a->op[1] = ob_int(ob, "output_padding", 0);
		if (a->k[0] < 0 || a->s[0] < 0 || a->d[0] < 0 || a->op[0] < 0)
			return -1;
	}
	if (json_is_string(pad) && strcmp(json_string_value(pad), "same") == 0) {
		a->same = 1;
		a->p[0] = a->p[1] = a->p[2] = zero;
	} else if (a->spatial >= 2) {
		if (ob_tuple(ob, "padding", 0, a->spatial, a->p))
			return -1;
	} else {
		a->p[0] = a->p[1] = ob_int(ob, "padding", 0);
		if (a->p[0] < 0)
			return -1;
	}
	{
		const char *n1[] = { "out_channels" }, *n2[] = { "groups" };
		const char *n3[] = { "in_channels", "groups" }, *n4[] = { "out_channels", "groups" };
		expr_id v3[] = { a->cin, a->groups }, v4[] = { a->cout, a->groups };
		ob_require(ob, expr_ge(g, a->cout, one), "out_channels >= 1", 1, n1, &a->cout);
		ob_require(ob, expr_ge(g, a->groups, one), "groups >= 1", 1, n2, &a->groups);
		ob_require(ob, expr_eq(g, expr_mod(g, a->cin, a->groups), zero),
		    "groups divides in_channels", 2, n3, v3);
		ob_require(ob, expr_eq(g, expr_mod(g, a->cout, a->groups), zero),
		    "groups divides out_channels", 2, n4, v4);
	}
	return 0;
}

/* Output size of spatial dim i (input size `in`), with its rules. */
static expr_id
conv_out_size(struct op_build *ob, const struct conv_args *a, int i, expr_id in)
{
	struct expr_graph *g = &ob->m->g;
	expr_id one = expr_int(g, 1), zero = expr_int(g, 0), o;
	int j = a->spatial >= 2 ? i : 0;   /* attribute index */
	const char *nk[] = { "kernel" }, *ns[] = { "stride" }, *nd[] = { "dilation" }, *np[] = { "padding" };
	/* the dimension's name: length (1-d), height and width, depth first (3-d) */
	static const char *const axes[3][3] = { { "length" }, { "height", "width" }, { "depth", "height", "width" } };
	const char *axis = axes[a->spatial - 1][i];
	char what[96];

	ob_require(ob, expr_ge(g, a->k[j], one), "kernel >= 1", 1, nk, &a->k[j]);
	ob_require(ob, expr_ge(g, a->s[j], one), "stride >= 1", 1, ns, &a->s[j]);
	ob_require(ob, expr_ge(g, a->d[j], one), "dilation >= 1", 1, nd, &a->d[j]);
	ob_require(ob, expr_ge(g, a->p[j], zero), "padding >= 0", 1, np, &a->p[j]);
	if (a->tr) {
		/* (in - 1) s - 2p + d(k - 1) + output_padding + 1 */
		const char *n6[] = { "output_padding", "stride", "dilation" };
		expr_id v6[] = { a->op[j], a->s[j], a->d[j] };
		ob_require(ob, expr_ge(g, a->op[j], zero), "output_padding >= 0", 1, n6, &a->op[j]);
		ob_require(ob, expr_or(g, expr_lt(g, a->op[j], a->s[j]), expr_lt(g, a->op[j], a->d[j])),
		    "output_padding smaller than stride or dilation", 3, n6, v6);
		o = expr_add(g, expr_sub(g, expr_mul(g, expr_sub(g, in, one), a->s[j]), expr_mul(g, expr_int(g, 2), a->p[j])),
		    expr_add(g, expr_mul(g, a->d[j], expr_sub(g, a->k[j], one)), expr_add(g, a->op[j], one)));
	} else if (a->same) {
		const char *n5[] = { "stride" };
		ob_require(ob, expr_eq(g, a->s[j], one), "padding \"same\" needs stride 1", 1, n5, &a->s[j]);
		o = in;
	} else {
		/* floor((in + (2p - d(k-1) - 1)) / s) + 1: the window terms are
		 * grouped into one sub-expression so that the solver's bounds see
		 * it as a function of the kernel alone ("same" padding gives a
		 * constant, not an interval that grows with the kernel) */
		expr_id win = expr_sub(g, expr_sub(g, expr_mul(g, expr_int(g, 2), a->p[j]),
		    expr_mul(g, a->d[j], expr_sub(g, a->k[j], one))), one);
		o = expr_add(g, expr_div(g, expr_add(g, in, win), a->s[j]), one);
	}
	dn_fmt(what, sizeof what, "output %s >= 1 (%s)", axis, a->tr ? "padding larger than the output" :
	    "kernel larger than the padded input");
	{
		const char *names[] = { "input size", "kernel", "padding", "output size" };
		expr_id vals[] = { in, a->k[j], a->p[j], o };
		ob_require(ob, expr_ge(g, o, one), what, 4, names, vals);
	}
	return o;
}

/*
 * cuDNN workspace of a (non-transposed) conv2d. For dense (groups = 1) 3x3
 * stride-1 convolutions the fastest algorithms are Winograd-style: F(4x4,
 * 3x3) keeps transformed input and output tiles of 6x6 per 4x4 outputs,
 * 36/16 = 2.25 times the input and the output. Other dense convolutions
 * with a kernel above 1x1 or a stride above 1 (the 7x7/2 stem, strided 3x3
 * and 1x1 shortcuts, 5x5, 1x7) ask about their input plus output: cuDNN
 * 9.19 on an H200 did in 36 of the 39 such probes in backward (1.00-1.49
 * times, 1.00-1.14 from 64 MiB of input plus output; none for Xception's
 * 3x3/2 stem and, at batch 128, its 64 -> 128 1x1/2) and in 33 of 39 in
 * forward (0.59-2.25 times; none for some strided 1x1 at 56x56 and up):
 * tests/reference/h200_conv_workspace.csv, every distinct convolution of
 * resnet18, resnet50 and Xception alone at batch 32 and 128. Until cost
 * model 1.4.8 they were taken for implicit GEMM with no workspace.
 * Depthwise convolutions asked none, and stride-1 1x1 ones none from 28x28
 * up (they stay at none). Backward data and filter use the same
 * transforms.
 *
 * The safe estimate's bound (ws_bound): cuDNN 9.19 on an H200 asked for
 * about the input plus the output of nearly every convolution that is not
 * depthwise, whatever its kernel and stride (the 7x7/2 stem, strided 1x1
 * shortcuts, 1x1 at 14x14), and at most that plus 50.1 MiB on every one of
 * the 136 measured (tests/reference/h200_conv_workspace.csv: each distinct
 * convolution of resnet18, resnet50, vgg16 and Xception alone, forward and
 * backward; the largest excess, 728 -> 1024 1x1 at 14x14, batch 32, in
 * backward); depthwise ones asked none. So the bound is the input plus the
 * output plus 64 MiB (that excess rounded up) for every convolution with
 * fewer groups than input channels, where the expected rule says less.
 */
#define CONV_WS_EXCESS_BYTES (64LL << 20)
static expr_id
conv_ws_bound(struct op_build *ob, const struct conv_args *a, expr_id io)
{
	struct expr_graph *g = &ob->m->g;

	return expr_mul(g, expr_lt(g, a->groups, a->cin), expr_add(g, io, expr_int(g, CONV_WS_EXCESS_BYTES)));
}

/* input plus output bytes of a convolution */
static expr_id
conv_io_bytes(struct op_build *ob, const struct cm_tensor *x)
{
	return expr_add(&ob->m->g, ob_bytes(ob, x->elems, CM_DT_ACT),
	    ob_bytes(ob, ob->m->tensors[ob->out].elems, CM_DT_ACT));
}

static void
conv_workspace(struct op_build *ob, const struct conv_args *a, const struct cm_tensor *x)
{
	struct expr_graph *g = &ob->m->g;
	expr_id one = expr_int(g, 1);
	expr_id dense3 = expr_and(g, expr_and(g, expr_eq(g, a->k[0], expr_int(g, 3)), expr_eq(g, a->k[1], expr_int(g, 3))),
	    expr_and(g, expr_and(g, expr_eq(g, a->s[0], one), expr_eq(g, a->s[1], one)), expr_eq(g, a->groups, one)));
	expr_id io = conv_io_bytes(ob, x);
	expr_id ws = expr_div(g, expr_mul(g, io, expr_int(g, 9)), expr_int(g, 4));

	expr_id big = expr_or(g, expr_or(g, expr_gt(g, a->k[0], one), expr_gt(g, a->k[1], one)),
	    expr_or(g, expr_gt(g, a->s[0], one), expr_gt(g, a->s[1], one)));
	expr_id other = expr_mul(g, expr_mul(g, expr_eq(g, a->groups, one), big), expr_sub(g, one, dense3));
	ob->op.ws_fwd = expr_add(g, expr_mul(g, dense3, ws), expr_mul(g, other, io));
	ob->op.ws_bwd = ob->op.ws_fwd;
	ob->op.ws_bound = conv_ws_bound(ob, a, io);
}

/* A convolution that LoRA's targets pick (op_lora.c): the base with its
 * own attributes; lora_A Conv(in, r, kernel, stride, padding, bias=False)
 * and lora_B Conv(r, out, 1, groups, bias=False), as peft's _ConvNd
 * makes them. */
static int
conv_lora(struct op_build *ob)
{
	static const char *const keys[] = { "out_channels", "kernel", "stride", "padding", "dilation", "groups", "bias",
		"depthwise", NULL };
	const struct cm_tensor *x = ob_in(ob, 0);
	int depthwise = ob_bool(ob, "depthwise", 0), bias = ob_bool(ob, "bias", 1);
	expr_id cout = depthwise && !ob_has(ob, "out_channels") ? x->dim[1] : ob_int(ob, "out_channels", OB_REQUIRED);
	expr_id groups = depthwise ? x->dim[1] : ob_int(ob, "groups", 1);
	struct lora_spec sp;

	if (depthwise < 0 || bias < 0 || cout < 0 || groups < 0)
		return -1;
	memset(&sp, 0, sizeof sp);
	sp.rule = ob->op.rule;
	sp.base = json_object();
	sp.a = json_pack("{s:s,s:b}", "out_channels", "__lora_r", "bias", 0);
	sp.b = json_pack("{s:s,s:i,s:i,s:i,s:s,s:b}", "out_channels", "__lora_out", "kernel", 1, "stride", 1, "padding", 0,
	    "groups", "__lora_groups", "bias", 0);
	for (int k = 0; keys[k] != NULL; k++) {
		json_t *v = json_object_get(ob->item, keys[k]);
		if (v == NULL)
			continue;
		if (sp.base != NULL && json_object_set(sp.base, keys[k], v) != 0) {
			json_decref(sp.base);
			sp.base = NULL;
		}
		/* lora_A: the kernel, the stride and the padding (peft passes
		 * neither dilation nor groups) */
		if (k >= 1 && k <= 3 && sp.a != NULL && json_object_set(sp.a, keys[k], v) != 0) {
			json_decref(sp.a);
			sp.a = NULL;
		}
	}
	sp.fout = cout;
	sp.groups = groups;
	sp.bias = bias;
	sp.kind = LORA_CONV;
	ob->mb->lora_hits++;
	return op_lora_build(ob, &sp);
}

static int
conv_build(struct op_build *ob, int spatial, int tr)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	struct conv_args a;
	expr_id outdim[CM_MAX_RANK], macs, cin_g, ksz, out_elems;

	if (ob_need_rank(ob, 0, spatial + 2, spatial + 2) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (!tr && ob->mb->ft_force < 0 &&
	    cm_ft_lora_target(ob->mb->wl, ob->op.rule->name, ob->mb->parent_rule, ob->inst_path))
		return conv_lora(ob);
	memset(&a, 0, sizeof a);
	a.spatial = spatial;
	a.tr = tr;
	if (conv_read(ob, x, &a) != 0)
		return -1;
	for (int i = 0; i < spatial; i++)
		outdim[2 + i] = conv_out_size(ob, &a, i, x->dim[2 + i]);
	outdim[0] = x->dim[0];
	outdim[1] = a.cout;
	if (ob_out_new(ob, spatial + 2, outdim, CM_DT_ACT) < 0)
		return -1;
	out_elems = ob->m->tensors[ob->out].elems;

	/* the per-group fan: Cin / groups inputs per output (conv), Cout / groups
	 * outputs per input (transposed) */
	cin_g = tr ? expr_div(g, a.cout, a.groups) : expr_div(g, a.cin, a.groups);
	ksz = a.k[0];
	for (int i = 1; i < spatial; i++)
		ksz = expr_mul(g, ksz, a.k[i]);
	{
		/* weight [cout, cin_g, kd, kh, kw] (conv3d), [cout, cin_g, kh,
		 * kw] (conv2d) or [cout, cin_g, k], and [cin, cout_g, ...]
		 * transposed: Adafactor's rows fold all but the last dim, its cols
		 * all but the second to last */
		expr_id lead = tr ? a.cin : a.cout;
		expr_id oc = expr_mul(g, lead, cin_g), rows = oc, cols;
		for (int i = 0; i < spatial - 1; i++)
			rows = expr_mul(g, rows, a.k[i]);
		if (spatial == 1)
			cols = expr_mul(g, lead, a.k[0]);
		else {
			cols = expr_mul(g, oc, a.k[spatial - 1]);
			for (int i = 0; i < spatial - 2; i++)
				cols = expr_mul(g, cols, a.k[i]);
		}
		ob_param_2d(ob, expr_mul(g, oc, ksz), rows, cols);
	}
	if (a.bias)
		ob_param(ob, a.cout);
	macs = expr_mul(g, tr ? x->elems : out_elems, expr_mul(g, cin_g, ksz));
	ob->op.macs = macs;
	/* backward: the weight's gradient unless it is frozen, the input's when
	 * the input needs one. ConvolutionBackward0 keeps the input whichever
	 * it computes (one convolution_backward formula for both) */
	ob->op.bwd_passes = (uint8_t)((x->requires_grad ? 1 : 0) + (ob_weights_train(ob) ? 1 : 0));
	ob->op.bwd_macs = expr_mul(g, macs, expr_int(g, ob->op.bwd_passes));
	ob_save_gemm_input(ob, 0);
	op_io_bytes(ob, 1);
	/* implicit GEMM: M = N*Ho*Wo rows, Cout columns, in 128 x 64 tiles */
	ob->op.parallel = expr_mul(g, expr_cdiv(g, expr_div(g, out_elems, a.cout),
	    expr_int(g, 128)), expr_cdiv(g, a.cout, expr_int(g, 64)));
	if (spatial == 2 && !tr)
		conv_workspace(ob, &a, x);
	else if (spatial == 3)
		/* unmeasured: the 2-D convolutions' bound for the safe estimate */
		ob->op.ws_bound = conv_ws_bound(ob, &a, conv_io_bytes(ob, x));
	ob->op.kernels_fwd = (uint8_t)(a.bias ? 2 : 1);
	ob->op.lib_calls = 1;   /* cuDNN (perf_model.c) */
	if (a.bias)
		ob->op.bias_adds = out_elems;
	ob->op.kernel_area = ksz;
	{
		/* the implicit GEMM's outputs in whole 128 x 64 tiles (as
		 * parallel counts them): rows N * spatial (the input's when
		 * transposed), columns Cout (Cin transposed); a product of
		 * rounded-up dimensions, so it grows with each of them
		 * (perf_model.c's conv_seconds) */
		const struct cm_tensor *r = tr ? x : &ob->m->tensors[ob->out];
		expr_id rows = r->dim[0];
		for (int i = 0; i < spatial; i++)
			rows = expr_mul(g, rows, r->dim[2 + i]);
		ob->op.tile_out = expr_mul(g, expr_mul(g, expr_cdiv(g, rows, expr_int(g, 128)), expr_int(g, 128)),
		    expr_mul(g, expr_cdiv(g, tr ? a.cin : a.cout, expr_int(g, 64)), expr_int(g, 64)));
		ob->op.tile_tap_macs = expr_mul(g, ob->op.tile_out, cin_g);
	}
	ob->op.kernels_bwd = (uint8_t)((x->requires_grad ? 1 : 0) + (ob_weights_train(ob) ? 1 + (a.bias ? 1 : 0) : 0));
	return 0;
}

static int conv1d_build(struct op_build *ob) { return conv_build(ob, 1, 0); }
static int conv2d_build(struct op_build *ob) { return conv_build(ob, 2, 0); }
static int conv3d_build(struct op_build *ob) { return conv_build(ob, 3, 0); }
static int conv_transpose1d_build(struct op_build *ob) { return conv_build(ob, 1, 1); }
static int conv_transpose2d_build(struct op_build *ob) { return conv_build(ob, 2, 1); }
static int conv_transpose3d_build(struct op_build *ob) { return conv_build(ob, 3, 1); }

static const char *const conv_attrs[] = {
	"out_channels", "kernel", "stride", "padding", "dilation", "groups", "bias",
	"depthwise", NULL
};

const struct op_rule op_rule_conv1d = { "conv1d", conv_attrs, 1, 1, CM_CLASS_CONV, conv1d_build };
const struct op_rule op_rule_conv2d = { "conv2d", conv_attrs, 1, 1, CM_CLASS_CONV, conv2d_build };
const struct op_rule op_rule_conv3d = { "conv3d", conv_attrs, 1, 1, CM_CLASS_CONV, conv3d_build };

static const char *const conv_transpose_attrs[] = {
	"out_channels", "kernel", "stride", "padding", "output_padding", "dilation", "groups", "bias", NULL
};

const struct op_rule op_rule_conv_transpose1d = { "conv_transpose1d", conv_transpose_attrs, 1, 1, CM_CLASS_CONV,
	conv_transpose1d_build };
const struct op_rule op_rule_conv_transpose2d = { "conv_transpose2d", conv_transpose_attrs, 1, 1, CM_CLASS_CONV,
	conv_transpose2d_build };
const struct op_rule op_rule_conv_transpose3d = { "conv_transpose3d", conv_transpose_attrs, 1, 1, CM_CLASS_CONV,
	conv_transpose3d_build };
