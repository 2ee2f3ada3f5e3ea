/*
 * op_norm.c - batchnorm (over dim 1), layernorm and rmsnorm (over the last
 * dim) and groupnorm. Learnable affine parameters count as parameters;
 * batchnorm's running statistics are buffers. Autograd keeps the input plus
 * the fp32 per-channel (or per-row) mean and inverse deviation for backward.
 *
 * rmsnorm (Zhang and Sennrich 2019; LLaMA's LlamaRMSNorm, torch.nn.RMSNorm)
 * is x * rsqrt(mean(x^2) + eps) * weight: a weight of E values and no bias.
 * Its "kernel" attribute says what autograd keeps (rmsnorm_build has the
 * source of each saved tensor): "fused" (the default; aten _fused_rms_norm)
 * keeps the input and one fp32 rstd per row; "eager" (Hugging Face's
 * LlamaRMSNorm in Python, the llama template's choice) also keeps x^2 and
 * the normalized product, and an fp32 copy of x below fp32. `eps` (layernorm, rmsnorm) is accepted for fidelity
 * to the source model and costs nothing.
 */
#include "op_rules.h"

#include <math.h>
#include <string.h>

/* the optional eps: a number in (0, 1), no effect on costs */
static int
norm_eps(struct op_build *ob)
{
	if (!ob_has(ob, "eps"))
		return 0;
	return isnan(ob_number(ob, "eps", 1e-5, 1e-30, 1.0)) ? -1 : 0;
}

static int
batchnorm_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	int affine;
	expr_id c;

	if (ob_need_rank(ob, 0, 2, 5) != 0)
		return -1;
	x = ob_in(ob, 0);
	affine = ob_bool(ob, "affine", 1);
	if (affine < 0)
		return -1;
	c = x->dim[1];
	if (ob_out_new(ob, x->rank, x->dim, ob_widest(ob)) < 0)   /* batch_norm: its input's type under autocast */
		return -1;
	if (affine) {
		ob_param(ob, c);
		ob_param(ob, c);
	}
	ob_buffer(ob, expr_mul(g, c, expr_int(g, 2)));
	{
		/* training normalizes over N and the spatial dims: at least 2 values */
		const char *n[] = { "values per channel" };
		expr_id per = expr_div(g, x->elems, c);
		ob_require(ob, expr_ge(g, per, expr_int(g, 2)),
		    "batchnorm needs more than 1 value per channel in training", 1, n, &per);
	}
	ob_save_input(ob, 0);
	ob_save_new(ob, expr_mul(g, c, expr_int(g, 8)));       /* save_mean, save_invstd */
	op_elementwise_costs(ob, 5);
	ob->op.lib_calls = 1;   /* F.batch_norm on CUDA calls cuDNN (perf_model.c) */
	return 0;
}

/*
 * Normalization over the last dim, E values per row: layernorm and rmsnorm
 * differ only in what follows. `affine_params` weights of E values (2 for
 * layernorm's weight and bias, 1 for rmsnorm's weight), `stat_bytes` fp32
 * bytes per row kept for backward (layernorm: mean and rstd; rmsnorm:
 * rstd; 0: none) and `flops` per element; the input is kept unless
 * `keep_input` is 0.
 */
static int
lastdim_norm_build(struct op_build *ob, int affine_params, int stat_bytes, int flops, int keep_input)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	int affine;
	expr_id e, rows;

	if (ob_need_rank(ob, 0, 1, CM_MAX_RANK) != 0 || norm_eps(ob) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	affine = ob_bool(ob, "affine", 1);
	if (affine < 0)
		return -1;
	e = x->dim[x->rank - 1];
	rows = ob_elems(ob, x->rank - 1, x->dim);
	/* layer_norm runs in fp32 under autocast; an RMSNorm (eager: fp32 weight
	 * times the cast-back normalized input; fused: its input's type) in
	 * its input's type promoted by the fp32 weight */
	if (ob_out_new(ob, x->rank, x->dim, ob_autocast_f32(ob)) < 0)
		return -1;
	for (int i = 0; affine && i < affine_params; i++)
		ob_param(ob, e);
	if (keep_input)
		ob_save_input(ob, 0);
	if (stat_bytes > 0)
		ob_save_new(ob, expr_mul(g, rows, expr_int(g, stat_bytes)));
	op_elementwise_costs(ob, flops);
	return 0;
}

static int
layernorm_build(struct op_build *ob)
{
	/* weight and bias; mean and rstd per row */
	return lastdim_norm_build(ob, 2, 8, 8, 1);
}

/*
 * Hugging Face's eager LlamaRMSNorm (modeling_llama.py):
 *   h = x.to(float32); v = h.pow(2).mean(-1, keepdim=True)
 *   h = h * torch.rsqrt(v + eps); return weight * h.to(input_dtype)
 * Autograd keeps: h (PowBackward0's self and MulBackward0's self: x itself
 * when x is fp32, else a new fp32 copy, E * 4 bytes per row), rsqrt's result
 * (RsqrtBackward0's result, MulBackward0's other: 4 bytes per row) and
 * h.to(input_dtype) (MulBackward0's other of weight * h, for the weight's
 * gradient only: E elements of the input's dtype per row). h.pow(2) (fp32, E * 4 bytes per row) is kept by
 * torch 1.13's MeanBackward1, whose formula reads self.numel() so that the
 * generated node saves the whole input (the reference's
 * saved_bytes_by_holder_ops "Mean"; torch 2's mean_backward takes
 * self.sym_numel() and may keep only sizes: not measured here, so the
 * larger, measured figure is modelled). The eps add keeps nothing. All of
 * these but the last serve x's gradient only: with an input that needs
 * none (a frozen embedding's output under a trainable norm), autograd makes
 * no node for the pow, mean, rsqrt and x * rsqrt, and only weight * h keeps
 * h. Measured on torch 1.13 (tests/reference/gen_torch_reference_llm.py).
 */
static int
rmsnorm_eager_build(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);
	int x_fp32 = cm_dtype_bytes(ob->m, (enum cm_dtype)x->dtype) == 4, xg = x->requires_grad;

	/* x and rstd; below fp32 the fp32 copy is kept in x's place (x itself
	 * is not saved by these ops) */
	if (lastdim_norm_build(ob, 1, xg ? 4 : 0, 4, x_fp32 && xg) != 0)
		return -1;
	if (!x_fp32 && xg)
		ob_save_new(ob, ob_bytes(ob, x->elems, CM_DT_F32));
	if (xg)
		ob_save_new(ob, ob_bytes(ob, x->elems, CM_DT_F32));   /* h.pow(2) */
	/* weight * h keeps h only for the weight's gradient (MulBackward0
	 * saves other when self requires grad): not with a frozen weight */
	if (ob_weights_train(ob))
		ob_save_new(ob, ob_bytes(ob, x->elems, (enum cm_dtype)x->dtype));
	/* pow, mean, add, rsqrt, mul, mul (and a cast below fp32): six
	 * elementwise or reduction kernels instead of one */
	ob->op.kernels_fwd = 6;
	ob->op.kernels_bwd = 6;
	return 0;
}

static int
rmsnorm_build(struct op_build *ob)
{
	const char *kernel = json_string_value(json_object_get(ob->item, "kernel"));

	if (ob_has(ob, "kernel") && (kernel == NULL || (strcmp(kernel, "fused") != 0 && strcmp(kernel, "eager") != 0)))
		return ob_fail(ob, "kernel", "must be \"fused\" or \"eager\"");
	if (kernel != NULL && strcmp(kernel, "eager") == 0)
		return rmsnorm_eager_build(ob);
	/* weight only; rstd per row; square, sum, scale by rstd, scale by
	 * weight (rsqrt once per row) */
	return lastdim_norm_build(ob, 1, 4, 4, 1);
}

static int
groupnorm_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	int affine;
	expr_id c, groups;

	if (ob_need_rank(ob, 0, 2, 5) != 0)
		return -1;
	x = ob_in(ob, 0);
	affine = ob_bool(ob, "affine", 1);
	groups = ob_int(ob, "groups", OB_REQUIRED);
	if (affine < 0 || groups < 0)
		return -1;
	c = x->dim[1];
	{
		const char *n[] = { "channels", "groups" };
		expr_id v[] = { c, groups };
		ob_require(ob, expr_ge(g, groups, expr_int(g, 1)), "groups >= 1", 1, n + 1, &groups);
		ob_require(ob, expr_eq(g, expr_mod(g, c, groups), expr_int(g, 0)),
		    "groups divides the channels", 2, n, v);
	}
	if (ob_out_new(ob, x->rank, x->dim, ob_autocast_f32(ob)) < 0)     /* group_norm: fp32 under autocast */
		return -1;
	if (affine) {
		ob_param(ob, c);
		ob_param(ob, c);
	}
	ob_save_input(ob, 0);
	ob_save_new(ob, expr_mul(g, expr_mul(g, x->dim[0], groups), expr_int(g, 8)));
	op_elementwise_costs(ob, 8);
	return 0;
}

static const char *const bn_attrs[] = { "affine", NULL };
static const char *const gn_attrs[] = { "affine", "groups", NULL };
static const char *const ln_attrs[] = { "affine", "eps", NULL };
static const char *const rms_attrs[] = { "affine", "eps", "kernel", NULL };

const struct op_rule op_rule_batchnorm = { "batchnorm", bn_attrs, 1, 1, CM_CLASS_REDUCTION, batchnorm_build };
const struct op_rule op_rule_layernorm = { "layernorm", ln_attrs, 1, 1, CM_CLASS_REDUCTION, layernorm_build };
const struct op_rule op_rule_groupnorm = { "groupnorm", gn_attrs, 1, 1, CM_CLASS_REDUCTION, groupnorm_build };
const struct op_rule op_rule_rmsnorm = { "rmsnorm", rms_attrs, 1, 1, CM_CLASS_REDUCTION, rmsnorm_build };
