/*
 * op_mlp.c - gated feed-forward blocks. "swiglu" is LLaMA's MLP (Shazeer
 * 2020, "GLU Variants Improve Transformer"; Hugging Face LlamaMLP):
 *
 *   down_proj(silu(gate_proj(x)) * up_proj(x))
 *
 * built from the ordinary rules in the order Python evaluates it: gate_proj
 * (linear to `intermediate`), silu, up_proj (linear to `intermediate`), mul,
 * down_proj (linear back to `out_features`, default the input's width).
 * What autograd keeps is what those rules keep: x (once: both projections
 * read the same storage), the gate's output (silu), silu's output and up's
 * output (mul), and the product (down_proj). `bias` defaults to false
 * (LlamaConfig.mlp_bias = False). Parameters: 3 * E * I without bias.
 */
#include "op_rules.h"

#include <string.h>

struct mlp_args {
	int bias;
};

static int
swiglu_body(struct op_build *ob, void *arg)
{
	const struct mlp_args *a = arg;
	int x = ob->in[0], gate, up, h;

	gate = ob_sub_take(ob, "linear", "gate_proj", json_pack("{s:s,s:b}", "out_features", "__mlp_i",
	    "bias", a->bias), x, -1);
	if (gate >= 0)
		gate = ob_sub_take(ob, "silu", "act_fn", json_object(), gate, -1);
	if (gate < 0)
		return -1;
	up = ob_sub_take(ob, "linear", "up_proj", json_pack("{s:s,s:b}", "out_features", "__mlp_i",
	    "bias", a->bias), x, -1);
	if (up < 0)
		return -1;
	h = ob_sub_take(ob, "mul", "gated", json_object(), gate, up);
	if (h < 0)
		return -1;
	h = ob_sub_take(ob, "linear", "down_proj", json_pack("{s:s,s:b}", "out_features", "__mlp_o",
	    "bias", a->bias), h, -1);
	if (h < 0)
		return -1;
	ob->out = h;
	return 0;
}

static int
swiglu_build(struct op_build *ob)
{
	static const char *const names[2] = { "__mlp_i", "__mlp_o" };
	const struct cm_tensor *x;
	expr_id vals[2];
	struct mlp_args a;

	if (ob_need_rank(ob, 0, 1, CM_MAX_RANK) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	memset(&a, 0, sizeof a);
	vals[0] = ob_int(ob, "intermediate", OB_REQUIRED);
	vals[1] = ob_has(ob, "out_features") ? ob_int(ob, "out_features", OB_REQUIRED) : x->dim[x->rank - 1];
	a.bias = ob_bool(ob, "bias", 0);
	if (vals[0] < 0 || vals[1] < 0 || a.bias < 0)
		return -1;
	return ob_with_binds(ob, 2, names, vals, swiglu_body, &a);
}

static const char *const swiglu_attrs[] = { "intermediate", "out_features", "bias", NULL };

const struct op_rule op_rule_swiglu = { "swiglu", swiglu_attrs, 1, 1, CM_CLASS_GEMM, swiglu_build };
