/*
 * op_attention.c - multi-head self-attention on [N, L, E], built from the
 * same operator rules a hand-written model would use, in the order PyTorch
 * eager code runs them (Hugging Face BertSelfAttention for "separate"
 * projections, GPT2Attention for a "fused" qkv projection):
 *
 *   q, k, v = linear(x) x3, or one linear to 3E split by views
 *   heads:   reshape [N, L, h, d] + permute -> [N, h, L, d] (views)
 *   scores = matmul(q, k^T), scaled by 1/sqrt(d), plus the mask
 *            (an additive mask, or a causal where())
 *   probs  = dropout(softmax(scores)); ctx = matmul(probs, v)
 *   ctx:     permute back, contiguous copy, reshape [N, L, E], output linear
 *
 * The sizes reach the sub-operators through names bound in a private scope
 * (__attn_*), so each sub-operator is the ordinary rule with its ordinary
 * costs and validity. Validity here: heads >= 1 and heads divides E.
 */
#include "model_build_priv.h"
#include "op_rules.h"

#include <math.h>
#include <string.h>

static int
sub(struct op_build *ob, const char *rule, const char *suffix, json_t *attrs, int a, int b)
{
	int in[2] = { a, b };
	int r;

	if (attrs == NULL)
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	r = ob_sub(ob, rule, suffix, attrs, b >= 0 ? 2 : 1, in);
	json_decref(attrs);
	return r;
}

/* [N, L, E] (or a slice of [N, L, 3E]) -> [N, h, L, d] or, transposed, [N, h, d, L] */
static int
split_heads(struct op_build *ob, const char *name, int t, int transposed)
{
	char s1[64], s2[64];
	int r;

	dn_fmt(s1, sizeof s1, "%s_heads", name);
	dn_fmt(s2, sizeof s2, "%s_permute", name);
	r = sub(ob, "reshape", s1, json_pack("{s:[ssss]}", "shape", "__attn_n", "__attn_l",
	    "__attn_h", "__attn_d"), t, -1);
	if (r < 0)
		return -1;
	return sub(ob, "permute", s2, transposed ? json_pack("{s:[iiii]}", "dims", 0, 2, 3, 1) :
	    json_pack("{s:[iiii]}", "dims", 0, 2, 1, 3), r, -1);
}

static int
attention_body(struct op_build *ob, int fused, int bias, int causal, double p)
{
	int x = ob->in[0], q, k, v, s, ctx;

	if (fused) {
		/* GPT-2: c_attn to 3E; q, k, v are views into it, copied by matmul */
		int qkv = sub(ob, "linear", "c_attn", json_pack("{s:s,s:b}", "out_features", "3 * __attn_e",
		    "bias", bias), x, -1);
		if (qkv < 0)
			return -1;
		/* q, k, v: views of thirds of the fused output (qkv.split(E, dim=2)) */
		q = sub(ob, "slice", "q_split", json_pack("{s:i,s:i,s:s}", "dim", 2, "start", 0,
		    "length", "__attn_e"), qkv, -1);
		k = sub(ob, "slice", "k_split", json_pack("{s:i,s:s,s:s}", "dim", 2, "start", "__attn_e",
		    "length", "__attn_e"), qkv, -1);
		v = sub(ob, "slice", "v_split", json_pack("{s:i,s:s,s:s}", "dim", 2, "start", "2 * __attn_e",
		    "length", "__attn_e"), qkv, -1);
		if (q < 0 || k < 0 || v < 0)
			return -1;
		q = split_heads(ob, "q", q, 0);
	} else {
		q = sub(ob, "linear", "query", json_pack("{s:s,s:b}", "out_features", "__attn_e", "bias", bias), x, -1);
		k = sub(ob, "linear", "key", json_pack("{s:s,s:b}", "out_features", "__attn_e", "bias", bias), x, -1);
		v = sub(ob, "linear", "value", json_pack("{s:s,s:b}", "out_features", "__attn_e", "bias", bias), x, -1);
		if (q < 0 || k < 0 || v < 0)
			return -1;
		q = split_heads(ob, "q", q, 0);
	}
	if (q < 0)
		return -1;
	k = split_heads(ob, "k", k, 1);
	v = split_heads(ob, "v", v, 0);
	if (k < 0 || v < 0)
		return -1;
	s = sub(ob, "matmul", "scores", json_object(), q, k);
	if (s < 0)
		return -1;
	s = sub(ob, "scale", "scale", json_pack("{s:f}", "factor", 1.0), s, -1);
	if (s < 0)
		return -1;
	/* BERT adds the extended attention mask; GPT-2 applies a causal where() */
	s = sub(ob, "scale", causal ? "causal_mask" : "mask", json_pack("{s:f}", "factor", 1.0), s, -1);
	if (s < 0)
		return -1;
	s = sub(ob, "softmax", "softmax", json_pack("{s:i}", "dim", -1), s, -1);
	if (s < 0)
		return -1;
	if (p > 0.0) {
		s = sub(ob, "dropout", "attn_dropout", json_pack("{s:f}", "p", p), s, -1);
		if (s < 0)
			return -1;
	}
	ctx = sub(ob, "matmul", "context", json_object(), s, v);
	if (ctx < 0)
		return -1;
	ctx = sub(ob, "permute", "merge_permute", json_pack("{s:[iiii]}", "dims", 0, 2, 1, 3), ctx, -1);
	if (ctx < 0)
		return -1;
	ctx = sub(ob, "contiguous", "merge_contiguous", json_object(), ctx, -1);
	if (ctx < 0)
		return -1;
	ctx = sub(ob, "reshape", "merge_heads", json_pack("{s:[sss]}", "shape", "__attn_n", "__attn_l",
	    "__attn_e"), ctx, -1);
	if (ctx < 0)
		return -1;
	ctx = sub(ob, "linear", fused ? "c_proj" : "output", json_pack("{s:s,s:b}", "out_features",
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
	struct model_builder *mb = ob->mb;
	const struct cm_tensor *x;
	struct scope sc, *saved = mb->scope;
	expr_id heads, e, binds[5];
	static const char *const names[5] = { "__attn_n", "__attn_l", "__attn_e", "__attn_h", "__attn_d" };
	int bias, causal, fused = 0, rc;
	double p;
	const char *qkv;

	if (ob_need_rank(ob, 0, 3, 3) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	e = x->dim[2];
	heads = ob_int(ob, "heads", OB_REQUIRED);
	bias = ob_bool(ob, "bias", 1);
	causal = ob_bool(ob, "causal", 0);
	p = ob_number(ob, "dropout", 0.0, 0.0, 1.0);
	qkv = json_string_value(json_object_get(ob->item, "qkv"));
	if (heads < 0 || bias < 0 || causal < 0 || isnan(p))
		return -1;
	if (qkv != NULL && strcmp(qkv, "fused") == 0)
		fused = 1;
	else if (qkv != NULL && strcmp(qkv, "separate") != 0)
		return ob_fail(ob, "qkv", "must be \"separate\" or \"fused\"");
	{
		const char *n[] = { "embedding", "heads" };
		expr_id vals[] = { e, heads };
		ob_require(ob, expr_ge(g, heads, expr_int(g, 1)), "heads >= 1", 1, n + 1, &heads);
		ob_require(ob, expr_eq(g, expr_mod(g, e, heads), expr_int(g, 0)),
		    "heads divides the embedding size", 2, n, vals);
	}
	binds[0] = x->dim[0];
	binds[1] = x->dim[1];
	binds[2] = e;
	binds[3] = heads;
	binds[4] = expr_div(g, e, expr_max(g, heads, expr_int(g, 1)));
	memset(&sc, 0, sizeof sc);
	sc.parent = saved;
	sc.binds = malloc(sizeof *sc.binds * 5);
	if (sc.binds == NULL)
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	for (int i = 0; i < 5; i++) {
		sc.binds[i].name = names[i];
		sc.binds[i].value = binds[i];
	}
	sc.nbinds = sc.capbinds = 5;
	mb->scope = &sc;
	rc = attention_body(ob, fused, bias, causal, p);
	mb->scope = saved;
	free(sc.binds);
	return rc;
}

static const char *const attn_attrs[] = { "heads", "bias", "causal", "dropout", "qkv", NULL };

const struct op_rule op_rule_attention = { "attention", attn_attrs, 1, 1, CM_CLASS_GEMM, attention_build };
