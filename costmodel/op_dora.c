/*
 * op_dora.c - DoRA (peft's LoraConfig(use_dora=True)): the part of an
 * adapted layer that DoRA runs instead of LoRA's "+ lora_B(...) * scaling".
 * On a linear, as peft's DoraLinearLayer.forward computes it (tuners/lora/dora.py,
 * called by variants.DoraLinearVariant.forward), read from its source:
 *
 *   lora_weight = lora_B(lora_A(eye(in))).T    two small GEMMs on an [in, in]
 *                                              identity; used only detached
 *   weight = dequantize(base).to(x.dtype)      a copy where the weight is
 *                                              quantized or of another dtype
 *   weight_norm = ||weight + s * lora_weight|| per output row, detached
 *   mag_norm_scale = (magnitude / weight_norm).view(1, -1)
 *   lora_result = lora_B(lora_A(x))            (op_linear.c builds these)
 *   base_result = result (less the bias) where lora_dropout is the identity,
 *                 else F.linear(dropped x, weight) again
 *   result + (mag_norm_scale - 1) * base_result
 *          + mag_norm_scale * lora_result * s
 *
 * Inputs: the base layer's result [..., out], lora_B's output [..., out]
 * and the adapters' input x [..., in] (the dropped copy with a dropout).
 * The output is the adapted linear's result (its dtype: see below).
 *
 * Weights: the magnitude, [out], trainable, fp32 (peft's
 * autocast_adapter_dtype upcasts every adapter); an adapter, so not in the
 * model's params.
 * Kept for backward (the two products need each other's operand):
 * base_result and lora_result, one [rows, out] each, and three [out]
 * vectors (weight_norm for the division, mag_norm_scale, and
 * mag_norm_scale - 1 where base_result needs a gradient). With a dropout,
 * base_result is the second F.linear's output (the same size) and, where x
 * needs a gradient, that F.linear keeps its weight: a new tensor where the
 * weight was dequantized or cast (autocast casts a frozen weight on every
 * call), the parameter itself otherwise.
 * Temporaries of the forward: the identity (fp32, and under autocast its
 * half copy, which lora_A keeps), lora_A's [in, r] and
 * lora_weight (fp32, and its copy in x's dtype), alive until the forward
 * returns (lora_weight's graph holds them), beside either the norm's two
 * [out, in] operands or the products' three fp32 [rows, out] results
 * (mag_norm_scale is fp32, so the products are too).
 * Work: forward (in * in * r + in * r * out) MACs for lora_weight and, with
 * a dropout, rows * in * out for the second F.linear (and as much again in
 * backward where x needs a gradient); about three FLOPs per weight element
 * for the norm and six per output element for the products.
 *
 * On a convolution (peft's _DoraConvNdLayer, variants._DoraConvNdVariant):
 *
 *   lora_weight = mm(lora_B.weight.view(-1, r), lora_A.weight.view(r, -1))
 *                 reshaped as the weight W (W's elements, in the product's
 *                 dtype: half under autocast, else the fp32 adapters')
 *   weight_norm = ||W + s * lora_weight|| over all but the output channel
 *   mag_norm_scale = magnitude / weight_norm   ([1, out, 1, 1])
 *   base_result = result (less the bias) without a dropout, else the
 *                 convolution again on the dropped x, without the bias
 *                 (op_lora.c builds it with the base's own rule)
 *   result + (mag_norm_scale - 1) * base_result
 *          + mag_norm_scale * lora_B(lora_A(x)) * s
 *
 * No identity, no weight copy (W is used as it is); lora_weight lives to
 * the end of the forward beside the norm's operands (s * lora_weight, and
 * the fp32 sum) or the products. Kept: as a linear's. Work: W * r MACs for
 * lora_weight.
 *
 * On an embedding (peft's DoraEmbeddingLayer, variants.DoraEmbeddingVariant;
 * no dropout):
 *
 *   lora_weight = (A.T @ B.T).T                 [dim, num], W's elements
 *   weight_norm = ||W.T + s * lora_weight|| per row   ([dim])
 *   mag_norm_scale = magnitude / weight_norm
 *   dora_result = mag_norm_scale * (F.embedding(x, A.T) @ B.T) * s
 *   mag_norm_scale * result + dora_result
 *
 * Kept: the base result (for the magnitude's gradient of the first
 * product), lora_B's output, weight_norm and mag_norm_scale (two [dim]
 * vectors). Work: W * r MACs for lora_weight.
 *
 * Every form's output is cast back to the base result's dtype (peft's
 * result.to(torch_result_dtype)); the products are fp32 temporaries. Not
 * modelled: a quantized linear's under autocast (QDoRA) stays fp32, the
 * dtype of result_dora (peft's bnb.py Linear4bit and Linear8bitLt cast back
 * only where autocast is off, requires_conversion; the promotion unsloth's
 * PR 6526 works around before FlashAttention). A space's use_dora selects
 * between DoRA's output and LoRA's, which must then have one dtype; on
 * Hugging Face's decoders the quantized linears' inputs are fp32 already
 * (from fp32 norms), but for the attention output projection, whose wider
 * output the residual add reads and keeps nothing of.
 */

#include "model_build_priv.h"
#include "op_rules.h"

/* The parts every form shares: the output (the base result's shape, in
 * `dt`), the magnitude (`fout` elements, trainable fp32), what the
 * products keep (the base result, lora_B's output and `vectors` fp32
 * [fout] vectors), their fp32 temporaries (three [rows, out] results: the
 * returned phase, in *prod) and their work, with the norm's over the
 * weight's `w` elements. `out`: the base result's elements. 0 or -1. */
static int
dora_common(struct op_build *ob, const struct cm_tensor *base, enum cm_dtype dt, expr_id fout, expr_id out, expr_id w,
    int vectors, expr_id *prod)
{
	struct expr_graph *g = &ob->m->g;
	int cb = ob->m->act_bytes;

	if (ob_out_new(ob, base->rank, base->dim, dt) < 0)
		return -1;
	ob_param(ob, fout);
	ob_save_input(ob, 0);
	ob_save_input(ob, 1);
	ob_save_new(ob, expr_mul(g, fout, expr_int(g, 4 * vectors)));
	*prod = expr_mul(g, out, expr_int(g, 3 * 4));
	ob->op.ws_bwd = *prod;
	ob->op.flops_other = expr_add(g, expr_mul(g, w, expr_int(g, 3)), expr_mul(g, out, expr_int(g, 6)));
	ob->op.bwd_bytes = expr_mul(g, out, expr_int(g, 40 + 3 * cb));
	ob->op.parallel = out;
	ob->op.kernels_bwd = 8;
	return 0;
}

/* A convolution's or an embedding's DoRA: lora_weight made from the
 * adapters' weights (w elements, `r` the rank), the norm of the weight plus
 * it, and the products. */
static int
dora_weights_build(struct op_build *ob, int conv)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *base = ob_in(ob, 0);
	expr_id r = ob_int(ob, "rank", OB_REQUIRED), w = ob_int(ob, "weight", OB_REQUIRED), bias = ob_int(ob, "bias", 0);
	expr_id fout = base->dim[conv ? 1 : base->rank - 1], out = ob_elems(ob, base->rank, base->dim), prod, lw;
	int cb = ob->m->act_bytes, autocast = ob_autocast(ob), bl = autocast ? cb : 4;

	if (r < 0 || w < 0 || bias < 0)
		return -1;
	if (!expr_is_const(g, bias))
		return ob_fail(ob, "bias", "must be a constant");
	/* kept: weight_norm and mag_norm_scale, and on a convolution
	 * mag_norm_scale - 1 where the base result needs a gradient */
	if (dora_common(ob, base, (enum cm_dtype)base->dtype, fout, out, w, 2 + (conv && base->requires_grad ? 1 : 0),
	    &prod) != 0)
		return -1;
	/* lora_weight (half under autocast, else the fp32 adapters'), then
	 * s * lora_weight and the fp32 sum with the weight, or the products */
	lw = expr_mul(g, w, expr_int(g, bl));
	ob->op.ws_fwd = expr_add(g, lw, expr_max(g, expr_mul(g, w, expr_int(g, bl + 4)), prod));
	ob->op.macs = expr_mul(g, w, r);
	ob->op.fwd_bytes = expr_add(g, expr_mul(g, w, expr_int(g, 3 * bl + 12)), expr_mul(g, out, expr_int(g, 3 * cb + 36)));
	/* the product, scale, add, norm, div; conv: sub, two products, the
	 * scale, two adds, a bias's subtraction; embedding: three products,
	 * the scale, the add */
	ob->op.kernels_fwd = (uint8_t)(conv ? 11 + (g->nodes[bias].k.i ? 1 : 0) : 10);
	ob->op.lib_calls = 1;
	return 0;
}

static int
dora_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *base = ob_in(ob, 0), *x = ob_in(ob, 2);
	expr_id fin = x->dim[x->rank - 1], fout = base->dim[base->rank - 1];
	expr_id r = ob_int(ob, "rank", OB_REQUIRED), quant = ob_int(ob, "quant", 0), bias = ob_int(ob, "bias", 0);
	expr_id kind = ob_int(ob, "kind", LORA_LINEAR);
	expr_id rows, w, out, zero = expr_int(g, 0), four = expr_int(g, 4);
	expr_id eye, lw, wcopy, norm_phase, prod_phase;
	int cb = ob->m->act_bytes, bx, q, autocast = ob_autocast(ob);

	if (kind < 0 || !expr_is_const(g, kind))
		return kind < 0 ? -1 : ob_fail(ob, "kind", "must be a constant");
	if (g->nodes[kind].k.i != LORA_LINEAR)
		return dora_weights_build(ob, g->nodes[kind].k.i == LORA_CONV);
	if (r < 0 || quant < 0 || bias < 0)
		return -1;
	if (!expr_is_const(g, quant) || !expr_is_const(g, bias))
		return ob_fail(ob, NULL, "quant and bias must be constants");
	q = g->nodes[quant].k.i != 0;
	bx = x->dtype == CM_DT_F32 ? 4 : cb;      /* read before the output may move the tensors */
	rows = ob_elems(ob, base->rank - 1, base->dim);
	w = expr_mul(g, fin, fout);
	out = expr_mul(g, rows, fout);
	/* kept for backward: weight_norm, mag_norm_scale and, where the base
	 * result needs a gradient, mag_norm_scale - 1 */
	if (dora_common(ob, base, (enum cm_dtype)base->dtype, fout, out, w, 2 + (base->requires_grad ? 1 : 0),
	    &prod_phase) != 0)
		return -1;
	/* the weight as the forward holds it: dequantized (in the compute
	 * dtype), or cast to x's dtype (autocast's fp32 weights, a half x) */
	wcopy = q ? expr_mul(g, w, expr_int(g, cb + (bx != cb ? bx : 0))) :
	    autocast && bx != 4 ? expr_mul(g, w, expr_int(g, cb)) : zero;
	/* temporaries */
	eye = expr_add(g, expr_mul(g, expr_mul(g, fin, fin), expr_int(g, 4 + (autocast ? cb : 0))),
	    expr_mul(g, expr_mul(g, fin, r), four));
	lw = expr_mul(g, w, expr_int(g, bx));
	norm_phase = expr_mul(g, w, expr_int(g, 2 * bx));
	ob->op.ws_fwd = expr_add(g, eye, expr_max(g, expr_mul(g, w, expr_int(g, 4 + (bx != 4 ? bx : 0))),
	    expr_add(g, expr_add(g, lw, wcopy), expr_max(g, norm_phase, prod_phase))));
	/* work */
	ob->op.macs = expr_add(g, expr_mul(g, expr_mul(g, fin, fin), r), expr_mul(g, expr_mul(g, fin, r), fout));
	ob->op.fwd_bytes = expr_add(g, expr_add(g, expr_mul(g, expr_mul(g, fin, fin), expr_int(g, 8)),
	    expr_mul(g, w, expr_int(g, 8 + 7 * bx))), expr_add(g, wcopy,
	    expr_mul(g, out, expr_int(g, 3 * cb + 36))));
	/* eye, two GEMMs, the .T copy, the weight's copy, scale, add, norm,
	 * div, sub, three products, two adds and the cast back; the bias's
	 * subtraction; a dequantize's kernel(s) */
	ob->op.kernels_fwd = (uint8_t)(15 + (g->nodes[bias].k.i ? 1 : 0) + (q ? 3 : 0));
	ob->op.lib_calls = 2;
	return 0;
}

/* With a dropout, DoRA's second F.linear (its own operator, under the
 * condition that the dropout runs): the dropped x [..., in] times the base
 * weight [out, in], which keeps that weight where x needs a gradient (a
 * new tensor where it was dequantized, or under autocast cast). Its result
 * stands in for base_result, which dora_build keeps as the first result
 * (the same size): here it is read by nothing. */
static int
refwd_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	expr_id fin = x->dim[x->rank - 1], fout = ob_int(ob, "out_features", OB_REQUIRED);
	expr_id quant = ob_int(ob, "quant", 0), dims[CM_MAX_RANK], rows;
	int cb = ob->m->act_bytes;

	if (fout < 0 || quant < 0)
		return -1;
	if (!expr_is_const(g, quant))
		return ob_fail(ob, "quant", "must be a constant");
	for (int i = 0; i < x->rank - 1; i++)
		dims[i] = x->dim[i];
	dims[x->rank - 1] = fout;
	if (ob_out_new(ob, x->rank, dims, CM_DT_ACT) < 0)
		return -1;
	rows = ob_elems(ob, x->rank - 1, x->dim);
	ob->op.macs = expr_mul(g, rows, expr_mul(g, fin, fout));
	op_io_bytes(ob, 0);
	ob->op.fwd_bytes = expr_add(g, ob->op.fwd_bytes, expr_mul(g, expr_mul(g, fin, fout), expr_int(g, cb)));
	ob->op.parallel = expr_mul(g, expr_cdiv(g, rows, expr_int(g, 128)), expr_cdiv(g, fout, expr_int(g, 64)));
	ob->op.kernels_fwd = 1;
	ob->op.lib_calls = 1;
	if (!x->requires_grad)
		return 0;
	ob->op.bwd_macs = ob->op.macs;
	ob->op.kernels_bwd = 1;
	if (g->nodes[quant].k.i != 0 || ob_autocast(ob))
		ob_save_new(ob, expr_mul(g, expr_mul(g, fin, fout), expr_int(g, cb)));
	return 0;
}

static const char *const dora_attrs[] = { "rank", "quant", "bias", "kind", "weight", NULL };
static const char *const refwd_attrs[] = { "out_features", "quant", NULL };

const struct op_rule op_rule_dora = { "dora", dora_attrs, 3, 3, CM_CLASS_ELEMENTWISE, dora_build };
const struct op_rule op_rule_dora_refwd = { "dora_base", refwd_attrs, 1, 1, CM_CLASS_GEMM, refwd_build };
