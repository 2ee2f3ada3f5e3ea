/*
 * op_attention.c - multi-head self-attention on [N, L, E], built from the
 * same operator rules a hand-written model would use, in the order PyTorch
 * eager code runs them (Hugging Face BertSelfAttention for "separate"
 * projections, GPT2Attention for a "fused" qkv projection; "in_proj" is
 * torchvision's nn.MultiheadAttention, costed as "fused", whose fused
 * in-projection is a parameter of the attention (in_proj_weight), not a
 * module: its sub-operators are named in_proj and out_proj, in_proj a
 * linear with "linear_module": false, which LoRA's linear selectors and
 * bitsandbytes' quantization leave out, cm_finetune.c, op_linear.c):
 *
 *   q, k, v = linear(x) x3, or one linear to 3E split by views
 *   heads:   reshape [N, L, h, d] + permute -> [N, h, L, d] (views)
 *   scores = matmul(q, k^T), scaled by 1/sqrt(d), plus the mask
 *            (an additive mask, or a causal where())
 *   probs  = dropout(softmax(scores)); ctx = matmul(probs, v)
 *   ctx:     permute back, contiguous copy, reshape [N, L, E], output linear
 *
 * That is the "eager" kernel. The workload's attention kernel (cm_workload.c
 * resolves "sdpa" per device and dtype) changes the middle part:
 *   math           SDPA's math path (aten _scaled_dot_product_attention_math):
 *                  q and k each scaled by sqrt(1/sqrt(d)) (new tensors that
 *                  the product keeps), the mask added in place, softmax,
 *                  dropout, matmul with v: the same seq^2 tensors as eager
 *   flash,         one fused kernel (sdpa_fused below) that keeps for
 *   mem_efficient  backward Q, K, V (views of the projections, so their
 *                  storages), its output O and an fp32 log-sum-exp per
 *                  query row (the memory-efficient kernel pads the rows to
 *                  a multiple of 32), plus the dropout RNG's seed and offset
 *                  (two int64); no seq^2 tensor. O comes out laid out as
 *                  [N, L, h, d], so merging the heads is a view.
 *
 * LLaMA-style attention (Hugging Face LlamaAttention) adds two options:
 *   rotary         rotary position embeddings on q and k after the heads
 *                  split (the "rotary" rule, op_rotary.c), before the kernel
 *   kv_heads       grouped-query attention: k and v projected to
 *                  kv_heads * d only, then repeated to `heads` heads by a
 *                  copy (repeat_kv, run only where kv_heads < heads); HF
 *                  repeats before every kernel (sdpa_attention_forward does
 *                  unless torch's enable_gqa path is taken, not modelled)
 * With either, k and v are split into contiguous [N, h, L, d] before the
 * scores, which then use matmul(q, k, transpose_b) (no copy of k).
 *
 * The sizes reach the sub-operators through names bound in a private scope
 * (__attn_*), so each sub-operator is the ordinary rule with its ordinary
 * costs and validity. Validity here: heads >= 1 and heads divides E,
 * kv_heads >= 1 and kv_heads divides heads (LlamaAttention's
 * num_key_value_groups = heads // kv_heads must be whole); for
 * flash, compute capability >= 8.0, an fp16/bf16 dtype and head dim <= 256;
 * for mem_efficient, compute capability >= 5.0 (sdp_utils.cpp).
 */
#include "model_build_priv.h"
#include "op_rules.h"

#include <math.h>
#include <string.h>

/* [N, L, heads * d] (or a slice of the fused projection) -> [N, heads, L, d]
 * or, transposed, [N, heads, d, L]; `heads` names the bound head count
 * (__attn_h for queries, __attn_kv for keys and values) */
static int
split_heads(struct op_build *ob, const char *name, int t, const char *heads, int transposed)
{
	char s1[64], s2[64];
	int r;

	dn_fmt(s1, sizeof s1, "%s_heads", name);
	dn_fmt(s2, sizeof s2, "%s_permute", name);
	r = ob_sub_take(ob, "reshape", s1, json_pack("{s:[ssss]}", "shape", "__attn_n", "__attn_l",
	    heads, "__attn_d"), t, -1);
	if (r < 0)
		return -1;
	return ob_sub_take(ob, "permute", s2, transposed ? json_pack("{s:[iiii]}", "dims", 0, 2, 3, 1) :
	    json_pack("{s:[iiii]}", "dims", 0, 2, 1, 3), r, -1);
}

/* ob_sub_take of one of the math path's operators, marked as a step inside
 * SDPA (cm_op.inside_sdpa) when `math`; the rules used here add one
 * operator each, the last one */
static int
core_sub(struct op_build *ob, int math, const char *rule, const char *suffix, json_t *attrs, int a, int b)
{
	int r = ob_sub_take(ob, rule, suffix, attrs, a, b);

	if (r >= 0 && math && ob->m->nops > 0 && ob->m->ops[ob->m->nops - 1].out == r)
		ob->m->ops[ob->m->nops - 1].inside_sdpa = 1;
	return r;
}

/* scores, softmax, dropout and the product with v; the math kernel scales q
 * and k instead of the scores and adds the mask in place. k and v come as
 * projections [N, L, E] (split here, k as a transposed view, as BERT and
 * GPT-2 do), or when `headed` already as contiguous [N, h, L, d] (rotated
 * and repeated: LLaMA's matmul(q, k.transpose(2, 3)) folds to bmm without a
 * copy, transpose_b here). Returns the merged context [N, L, E] or -1. */
static int
attention_eager(struct op_build *ob, int math, int q, int k, int v, int headed, int causal, double p)
{
	int s, ctx;

	if (!headed) {
		k = split_heads(ob, "k", k, "__attn_h", 1);
		v = split_heads(ob, "v", v, "__attn_h", 0);
		if (k < 0 || v < 0)
			return -1;
	}
	if (math) {
		q = core_sub(ob, math, "scale", "q_scale", json_pack("{s:f}", "factor", 1.0), q, -1);
		if (q < 0)
			return -1;
		k = core_sub(ob, math, "scale", "k_scale", json_pack("{s:f}", "factor", 1.0), k, -1);
		if (k < 0)
			return -1;
	}
	s = core_sub(ob, math, "matmul", "scores", headed ? json_pack("{s:b}", "transpose_b", 1) : json_object(), q, k);
	if (s < 0)
		return -1;
	if (!math) {
		s = ob_sub_take(ob, "scale", "scale", json_pack("{s:f}", "factor", 1.0), s, -1);
		if (s < 0)
			return -1;
		/* BERT adds the extended attention mask; GPT-2 applies a causal where() */
		s = ob_sub_take(ob, "scale", causal ? "causal_mask" : "mask", json_pack("{s:f}", "factor", 1.0), s, -1);
		if (s < 0)
			return -1;
	}
	s = core_sub(ob, math, "softmax", "softmax", json_pack("{s:i}", "dim", -1), s, -1);
	if (s < 0)
		return -1;
	if (p > 0.0) {
		s = core_sub(ob, math, "dropout", "attn_dropout", json_pack("{s:f}", "p", p), s, -1);
		if (s < 0)
			return -1;
	}
	ctx = core_sub(ob, math, "matmul", "context", json_object(), s, v);
	if (ctx < 0)
		return -1;
	ctx = ob_sub_take(ob, "permute", "merge_permute", json_pack("{s:[iiii]}", "dims", 0, 2, 1, 3), ctx, -1);
	if (ctx < 0)
		return -1;
	ctx = ob_sub_take(ob, "contiguous", "merge_contiguous", json_object(), ctx, -1);
	if (ctx < 0)
		return -1;
	return ob_sub_take(ob, "reshape", "merge_heads", json_pack("{s:[sss]}", "shape", "__attn_n", "__attn_l",
	    "__attn_e"), ctx, -1);
}

/* ---- the fused kernels (flash, memory-efficient) ---- */

/* FlashAttention-2's and the cutlass kernel's row tile: the forward
 * launches one block per 128 query rows per (batch, head) (flash_fwd
 * kernel traits kBlockM = 128 for the head dims BERT and GPT-2 use) */
#define FUSED_ROWS_PER_BLOCK 128
/* The memory-efficient kernel pads its log-sum-exp rows to a multiple of
 * 32 (mem_eff_attention kernel_forward.h, kAlignLSE) */
#define MEM_EFF_LSE_ALIGN 32

static int
sdpa_fused_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *q = ob_in(ob, 0);
	expr_id n = q->dim[0], h = q->dim[1], l = q->dim[2], d = q->dim[3], dims[4];
	expr_id rows, pairs, macs, lse, qkvo;
	int flash = ob_bool(ob, "flash", 0), causal = ob_bool(ob, "causal", 0);
	double p = ob_number(ob, "dropout", 0.0, 0.0, 1.0);

	if (flash < 0 || causal < 0 || isnan(p))
		return -1;
	if (flash) {
		const char *nc[] = { "compute capability x10" }, *nd[] = { "head_dim" };
		expr_id cc = expr_int(g, ob_device_cc(ob));
		ob_require(ob, expr_ge(g, cc, expr_int(g, 80)),
		    "flash attention needs compute capability >= 8.0 (Ampere or newer)", 1, nc, &cc);
		if (ob->m->act_bytes != 2)
			ob_require(ob, expr_int(g, 0), "flash attention needs fp16 or bf16 (dtype is fp32)",
			    0, NULL, NULL);
		ob_require(ob, expr_le(g, d, expr_int(g, 256)), "flash attention needs head_dim <= 256",
		    1, nd, &d);
	} else {
		const char *nc[] = { "compute capability x10" };
		expr_id cc = expr_int(g, ob_device_cc(ob));
		ob_require(ob, expr_ge(g, cc, expr_int(g, 50)),
		    "memory-efficient attention needs compute capability >= 5.0", 1, nc, &cc);
	}
	dims[0] = n;
	dims[1] = l;
	dims[2] = h;
	dims[3] = d;
	if (ob_out_new(ob, 4, dims, CM_DT_ACT) < 0)
		return -1;
	rows = expr_mul(g, expr_mul(g, n, h), flash ? l :
	    expr_mul(g, expr_cdiv(g, l, expr_int(g, MEM_EFF_LSE_ALIGN)), expr_int(g, MEM_EFF_LSE_ALIGN)));
	lse = expr_mul(g, rows, expr_int(g, 4));
	ob_save_gemm_input(ob, 0);
	ob_save_gemm_input(ob, 1);
	ob_save_gemm_input(ob, 2);
	ob_save_output(ob);
	ob_save_new(ob, lse);
	if (p > 0.0 && ob_training(ob))
		ob_save_new(ob, expr_int(g, 16));       /* philox seed and offset */
	/* score pairs computed: all L*L, or L(L+1)/2 under a causal mask (the
	 * kernels skip tiles above the diagonal) */
	pairs = causal ? expr_div(g, expr_mul(g, l, expr_add(g, l, expr_int(g, 1))), expr_int(g, 2)) :
	    expr_mul(g, l, l);
	/* forward: S = QK^T and O = PV; backward recomputes S, then dV = P^T dO,
	 * dP = dO V^T, dQ = dS K, dK = dS^T Q: five products of the same size */
	macs = expr_mul(g, expr_mul(g, expr_mul(g, n, h), pairs), expr_mul(g, d, expr_int(g, 2)));
	ob->op.macs = macs;
	ob->op.bwd_macs = expr_div(g, expr_mul(g, macs, expr_int(g, 5)), expr_int(g, 2));
	/* softmax on the fly: scale, max, exp, sum, rescale per score */
	ob->op.flops_other = expr_mul(g, expr_mul(g, expr_mul(g, n, h), pairs), expr_int(g, 5));
	/* traffic: Q, K, V read and O written once (forward); backward reads
	 * them with dO and writes dQ, dK, dV, through an fp32 dQ accumulator */
	qkvo = expr_mul(g, ob_bytes(ob, q->elems, CM_DT_ACT), expr_int(g, 4));
	ob->op.fwd_bytes = expr_add(g, qkvo, lse);
	ob->op.bwd_bytes = expr_add(g, expr_mul(g, qkvo, expr_int(g, 2)),
	    expr_add(g, expr_mul(g, q->elems, expr_int(g, 8)), lse));
	/* backward workspace: the fp32 dQ accumulator [N, L, h, d] and the
	 * fp32 rowsum(dO * O) per row (flash_api.cpp mha_bwd dq_accum and
	 * softmax_d; the cutlass kernel's gQ accumulation and delta) */
	ob->op.ws_bwd = expr_add(g, expr_mul(g, q->elems, expr_int(g, 4)), lse);
	ob->op.parallel = expr_mul(g, expr_mul(g, n, h), expr_cdiv(g, l, expr_int(g, FUSED_ROWS_PER_BLOCK)));
	ob->op.kernels_fwd = 1;
	ob->op.kernels_bwd = flash ? 3 : 2;     /* flash: dot(dO, O), the main kernel, dQ conversion */
	return 0;
}

static const char *const fused_attrs[] = { "flash", "causal", "dropout", NULL };
static const struct op_rule sdpa_fused_rule = { "sdpa_fused", fused_attrs, 3, 3, CM_CLASS_GEMM,
	sdpa_fused_build };

/* Grouped-query attention: Hugging Face's repeat_kv, x[:, :, None].expand(N,
 * kv, h / kv, L, d).reshape(N, h, L, d), one copy of [N, kv, L, d] into
 * [N, h, L, d] that keeps nothing for backward (its gradient is a sum over
 * the copies). Run only where kv < h: with kv == h repeat_kv returns its
 * input (ob_sub_rule_if). */
static int
repeat_kv_build(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);
	expr_id heads = ob_int(ob, "heads", OB_REQUIRED), dims[4];

	if (heads < 0)
		return -1;
	dims[0] = x->dim[0];
	dims[1] = heads;
	dims[2] = x->dim[2];
	dims[3] = x->dim[3];
	if (ob_out_new(ob, 4, dims, (enum cm_dtype)x->dtype) < 0)
		return -1;
	op_elementwise_costs(ob, 0);
	return 0;
}

static const char *const repeat_kv_attrs[] = { "heads", NULL };
static const struct op_rule repeat_kv_rule = { "repeat_kv", repeat_kv_attrs, 1, 1, CM_CLASS_ELEMENTWISE,
	repeat_kv_build };

struct attn_args {
	int fused, mha, bias, causal, rotary;
	double p;
	expr_id gqa;            /* kv_heads < heads (an expression), or EXPR_NONE */
};

/* k or v of [N, L, kv * d] to [N, h, L, d]: heads split, rotated (k with
 * rotary: q's rotary holds the cos/sin tables, k's reads the same ones) and
 * repeated to h heads under GQA */
static int
kv_heads(struct op_build *ob, const struct attn_args *a, const char *name, int t, int rotate)
{
	char sfx[32];

	t = split_heads(ob, name, t, "__attn_kv", 0);
	if (t >= 0 && rotate) {
		dn_fmt(sfx, sizeof sfx, "%s_rotary", name);
		t = ob_sub_take(ob, "rotary", sfx, json_pack("{s:b}", "tables", 0), t, -1);
	}
	if (t >= 0 && a->gqa != EXPR_NONE) {
		dn_fmt(sfx, sizeof sfx, "%s_repeat", name);
		t = ob_sub_rule_if(ob, a->gqa, &repeat_kv_rule, sfx, json_pack("{s:s}", "heads", "__attn_h"), t);
	}
	return t;
}

/* The kernel between the heads of q and the merged context: k and v
 * [N, L, E] (k and v [N, L, kv * d] under GQA) split into heads (rotated,
 * repeated) where the kernel needs them, scored, masked, softmax,
 * dropout, times v, heads merged back. */
struct heads_args {
	const struct attn_args *a;
	int q, k, v;
};

static int
attention_kernel(struct op_build *ob, enum cm_attention kernel, void *arg)
{
	const struct heads_args *h = arg;
	const struct attn_args *a = h->a;
	int fused_kernel = kernel == CM_ATTN_FLASH || kernel == CM_ATTN_MEM_EFFICIENT;
	/* k and v split into heads before the kernel: always for the fused
	 * kernels; for eager and math when rotated or repeated */
	int headed = fused_kernel || a->rotary || a->gqa != EXPR_NONE;
	int q = h->q, k = h->k, v = h->v, ctx;

	if (headed) {
		k = kv_heads(ob, a, "k", k, a->rotary);
		v = kv_heads(ob, a, "v", v, 0);
		if (k < 0 || v < 0)
			return -1;
	}
	if (fused_kernel) {
		int in[3];
		json_t *attrs = json_pack("{s:b,s:b,s:f}", "flash", kernel == CM_ATTN_FLASH,
		    "causal", a->causal, "dropout", ob_training(ob) ? a->p : 0.0);
		if (attrs == NULL)
			return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
		in[0] = q;
		in[1] = k;
		in[2] = v;
		ctx = ob_sub_rule(ob, &sdpa_fused_rule, kernel == CM_ATTN_FLASH ? "flash" : "mem_efficient",
		    attrs, 3, in);
		json_decref(attrs);
		if (ctx < 0)
			return -1;
		/* [N, L, h, d] already: merging the heads is a view */
		return ob_sub_take(ob, "reshape", "merge_heads", json_pack("{s:[sss]}", "shape", "__attn_n",
		    "__attn_l", "__attn_e"), ctx, -1);
	}
	return attention_eager(ob, kernel == CM_ATTN_MATH, q, k, v, headed, a->causal, a->p);
}

/* The heads and the kernel, between the projections and the output
 * projection: q split into heads (rotated), then the kernel the workload
 * runs, or each kernel a space picks (ob_attention_alts). Returns the
 * context [N, L, E] or -1. */
static int
attention_heads(struct op_build *ob, const struct attn_args *a, int q, int k, int v)
{
	struct heads_args h = { a, -1, k, v };

	ob->m->nattention++;    /* the layers the workload's kernel choice applies to */
	q = split_heads(ob, "q", q, "__attn_h", 0);
	if (q >= 0 && a->rotary)
		q = ob_sub_take(ob, "rotary", "q_rotary", json_pack("{s:b}", "tables", 1), q, -1);
	if (q < 0)
		return -1;
	h.q = q;
	return ob_attention_alts(ob, attention_kernel, &h);
}

static int
attention_body(struct op_build *ob, void *arg)
{
	const struct attn_args *a = arg;
	int x = ob->in[0], q, k, v, ctx, bias = a->bias;

	if (a->fused) {
		/* GPT-2: c_attn to E + 2 kv d; q, k, v are views into it, copied
		 * by matmul; nn.MultiheadAttention's in_proj_weight is no
		 * nn.Linear module (cm_finetune.c, bitsandbytes) */
		int qkv = ob_sub_take(ob, "linear", a->mha ? "in_proj" : "c_attn", json_pack("{s:s,s:b,s:b}", "out_features",
		    "__attn_e + 2 * __attn_ekv", "bias", bias, "linear_module", !a->mha), x, -1);
		if (qkv < 0)
			return -1;
		/* q, k, v: views of the fused output (qkv.split(..., dim=2)) */
		q = ob_sub_take(ob, "slice", "q_split", json_pack("{s:i,s:i,s:s}", "dim", 2, "start", 0,
		    "length", "__attn_e"), qkv, -1);
		k = ob_sub_take(ob, "slice", "k_split", json_pack("{s:i,s:s,s:s}", "dim", 2, "start", "__attn_e",
		    "length", "__attn_ekv"), qkv, -1);
		v = ob_sub_take(ob, "slice", "v_split", json_pack("{s:i,s:s,s:s}", "dim", 2, "start",
		    "__attn_e + __attn_ekv", "length", "__attn_ekv"), qkv, -1);
	} else {
		q = ob_sub_take(ob, "linear", "query", json_pack("{s:s,s:b}", "out_features", "__attn_e",
		    "bias", bias), x, -1);
		k = ob_sub_take(ob, "linear", "key", json_pack("{s:s,s:b}", "out_features", "__attn_ekv",
		    "bias", bias), x, -1);
		v = ob_sub_take(ob, "linear", "value", json_pack("{s:s,s:b}", "out_features", "__attn_ekv",
		    "bias", bias), x, -1);
	}
	if (q < 0 || k < 0 || v < 0)
		return -1;
	ctx = attention_heads(ob, a, q, k, v);
	if (ctx < 0)
		return -1;
	ctx = ob_sub_take(ob, "linear", a->mha ? "out_proj" : a->fused ? "c_proj" : "output", json_pack("{s:s,s:b}", "out_features",
	    "__attn_e", "bias", bias), ctx, -1);
	if (ctx < 0)
		return -1;
	ob->out = ctx;
	return 0;
}

static int
attention_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id heads, kv, e, d, binds[7];
	static const char *const names[7] = { "__attn_n", "__attn_l", "__attn_e", "__attn_h", "__attn_d",
		"__attn_kv", "__attn_ekv" };
	struct attn_args a;
	const char *qkv;

	if (ob_need_rank(ob, 0, 3, 3) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	memset(&a, 0, sizeof a);
	e = x->dim[2];
	heads = ob_int(ob, "heads", OB_REQUIRED);
	kv = ob_has(ob, "kv_heads") ? ob_int(ob, "kv_heads", OB_REQUIRED) : heads;
	a.bias = ob_bool(ob, "bias", 1);
	a.causal = ob_bool(ob, "causal", 0);
	a.rotary = ob_bool(ob, "rotary", 0);
	a.p = ob_number(ob, "dropout", 0.0, 0.0, 1.0);
	qkv = json_string_value(json_object_get(ob->item, "qkv"));
	if (heads < 0 || kv < 0 || a.bias < 0 || a.causal < 0 || a.rotary < 0 || isnan(a.p))
		return -1;
	if (qkv != NULL && (strcmp(qkv, "fused") == 0 || strcmp(qkv, "in_proj") == 0)) {
		a.fused = 1;
		a.mha = strcmp(qkv, "in_proj") == 0;
	} else if (qkv != NULL && strcmp(qkv, "separate") != 0)
		return ob_fail(ob, "qkv", "must be \"separate\", \"fused\" or \"in_proj\"");
	{
		const char *n[] = { "embedding", "heads", "kv_heads" };
		expr_id vals[] = { e, heads, kv };
		ob_require(ob, expr_ge(g, heads, expr_int(g, 1)), "heads >= 1", 1, n + 1, &heads);
		ob_require(ob, expr_eq(g, expr_mod(g, e, heads), expr_int(g, 0)),
		    "heads divides the embedding size", 2, n, vals);
		if (kv != heads) {
			ob_require(ob, expr_ge(g, kv, expr_int(g, 1)), "kv_heads >= 1", 1, n + 2, &kv);
			ob_require(ob, expr_eq(g, expr_mod(g, heads, expr_max(g, kv, expr_int(g, 1))), expr_int(g, 0)),
			    "kv_heads divides heads", 2, n + 1, vals + 1);
			a.gqa = expr_lt(g, kv, heads);
		} else
			a.gqa = EXPR_NONE;
	}
	d = expr_div(g, e, expr_max(g, heads, expr_int(g, 1)));
	binds[0] = x->dim[0];
	binds[1] = x->dim[1];
	binds[2] = e;
	binds[3] = heads;
	binds[4] = d;
	binds[5] = kv;
	binds[6] = kv == heads ? e : expr_mul(g, kv, d);
	return ob_with_binds(ob, 7, names, binds, attention_body, &a);
}

static const char *const attn_attrs[] = { "heads", "kv_heads", "bias", "causal", "dropout", "qkv", "rotary",
	NULL };

const struct op_rule op_rule_attention = { "attention", attn_attrs, 1, 1, CM_CLASS_GEMM, attention_build };

/*
 * attention_core: the part of `attention` between the projections and the
 * output projection, for imported graphs whose projections are layers of
 * their own (import/onnx_fuse.c finds it): inputs q, k, v [N, L, E] (self-
 * attention: the three of one shape), split into `heads`, scored, masked
 * (`causal`), softmax, `dropout`, times v, heads merged back to [N, L, E].
 * Each attention kernel runs as in `attention` (attention_heads), so an
 * import and the template it matches price the same for every kernel.
 */
static int
attention_core_body(struct op_build *ob, void *arg)
{
	int ctx = attention_heads(ob, arg, ob->in[0], ob->in[1], ob->in[2]);

	if (ctx < 0)
		return -1;
	ob->out = ctx;
	return 0;
}

static int
attention_core_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *q;
	struct attn_args a;
	expr_id heads, e, d, binds[7];
	static const char *const names[7] = { "__attn_n", "__attn_l", "__attn_e", "__attn_h", "__attn_d",
		"__attn_kv", "__attn_ekv" };

	for (int i = 0; i < 3; i++)
		if (ob_need_rank(ob, i, 3, 3) != 0)
			return -1;
	q = ob_in(ob, 0);
	for (int i = 0; i < 3; i++) {
		const struct cm_tensor *t = ob_in(ob, i);
		if (t->dtype == CM_DT_I64)
			return ob_fail(ob, NULL, "needs float inputs");
		for (int j = 0; i > 0 && j < 3; j++) {
			const char *n[] = { "q size", "k/v size" };
			expr_id vals[] = { q->dim[j], t->dim[j] };
			ob_require(ob, expr_eq(g, q->dim[j], t->dim[j]),
			    "q, k and v have one shape (self-attention)", 2, n, vals);
		}
	}
	memset(&a, 0, sizeof a);
	a.gqa = EXPR_NONE;
	heads = ob_int(ob, "heads", OB_REQUIRED);
	a.causal = ob_bool(ob, "causal", 0);
	a.p = ob_number(ob, "dropout", 0.0, 0.0, 1.0);
	if (heads < 0 || a.causal < 0 || isnan(a.p))
		return -1;
	e = q->dim[2];
	{
		const char *n[] = { "embedding", "heads" };
		expr_id vals[] = { e, heads };
		ob_require(ob, expr_ge(g, heads, expr_int(g, 1)), "heads >= 1", 1, n + 1, &heads);
		ob_require(ob, expr_eq(g, expr_mod(g, e, heads), expr_int(g, 0)),
		    "heads divides the embedding size", 2, n, vals);
	}
	d = expr_div(g, e, expr_max(g, heads, expr_int(g, 1)));
	binds[0] = q->dim[0];
	binds[1] = q->dim[1];
	binds[2] = e;
	binds[3] = heads;
	binds[4] = d;
	binds[5] = heads;
	binds[6] = e;
	return ob_with_binds(ob, 7, names, binds, attention_core_body, &a);
}

static const char *const core_attrs[] = { "heads", "causal", "dropout", NULL };

const struct op_rule op_rule_attention_core = { "attention_core", core_attrs, 3, 3, CM_CLASS_GEMM,
	attention_core_build };
