/*
 * op_lora.c - a layer with LoRA adapters, as peft's lora.Linear,
 * lora.Conv1d/2d/3d and lora.Embedding (tuners/lora/layer.py) compute it
 * with one adapter:
 *
 *   result = base_layer(x)                     frozen: a linear keeps nothing
 *                                              for its weight (x's gradient
 *                                              needs W only); a convolution
 *                                              keeps its input all the same
 *   result = result + lora_B(lora_A(lora_dropout(x))) * scaling
 *     lora_dropout  nn.Identity for p = 0; else nn.Dropout(p), one per
 *             adapted layer: a dropped copy of x and, when x needs a
 *             gradient, its bool keep mask (CUDA's native_dropout)
 *     lora_A  trainable, keeps its input (x, or the dropped copy):
 *             Linear(in, r, bias=False), or for a convolution the base's
 *             kind Conv(in, r, kernel, stride, padding, bias=False) (no
 *             dilation and no groups: peft passes neither)
 *     lora_B  trainable, keeps the r-wide A(x): Linear(r, out, bias=False),
 *             or a 1x1 Conv(r, out, groups=the base's, bias=False), where
 *             peft refuses a rank its groups do not divide
 *     an embedding: lora_A F.embedding(ids, A.T) (A [r, num]: keeps the
 *             ids), lora_B after_A @ B.T (B [dim, r]: keeps after_A), no
 *             dropout (peft's lora.Embedding never calls it)
 *     * scaling (alpha / r, a Python float: keeps nothing), + (keeps nothing)
 * Extra forward MACs: a linear's (in + out) * r a row; a convolution's
 * lora_A's in * r * kernel a position of its output and lora_B's r / groups
 * * out. The adapters' weights are trainable parameters but not the
 * model's "params" (op.adapter).
 *
 * With DoRA (use_dora; a space's choice of it: both, each under its
 * condition, and a select) op_dora.c's part takes the place of the scale
 * and the add, in the base's form (peft's DoraLinearLayer,
 * _DoraConvNdLayer, DoraEmbeddingLayer), given the base weight's elements
 * ("__lora_weight": the base operator's first parameter tensor). With a
 * dropout, DoRA runs the base product again on the dropped input: a
 * linear's op_dora.c "dora_base", a convolution's its own rule, frozen and
 * without the bias.
 */
#include "model_build_priv.h"
#include "op_rules.h"

#include <string.h>

/* Runs one part of a LoRA composite: `force` 1 a frozen base, 0 a
 * trainable adapter. Returns its output tensor or -1. */
static int
lora_part(struct op_build *ob, const struct op_rule *rule, const char *suffix, json_t *attrs, int nin,
    const int *in, int force, int adapter)
{
	struct model_builder *mb = ob->mb;
	int r;

	if (attrs == NULL)
		return dn_error_set(ob->err, DN_ENOMEM, ob->file_path, "out of memory");
	mb->ft_force = force;
	mb->ft_adapter = adapter;
	r = ob_sub_rule(ob, rule, suffix, attrs, nin, in);
	mb->ft_force = -1;
	mb->ft_adapter = 0;
	json_decref(attrs);
	return r;
}

/* Where lora_dropout runs: a space's p > 0 (its costs do not depend on
 * how much more), or the workload's p > 0 as a constant. */
static expr_id
dropout_runs(struct op_build *ob)
{
	const struct cm_finetune *ft = &ob->mb->wl->ft;
	struct expr_graph *g = &ob->m->g;

	if (ft->dropout_hp > 0)
		return expr_gt(g, expr_var(g, ft->dropout_hp - 1), expr_real(g, 0.0));
	return expr_int(g, ft->lora_dropout > 0.0);
}

/* DoRA's part where it runs (op_dora.c), and with a dropout its second
 * product of the base weight where that runs too (`again`: a
 * convolution's attributes without the bias, taken over), under the
 * composite's guard: the result, or -1. */
static int
dora_part(struct op_build *ob, const struct lora_spec *sp, json_t *again, expr_id dora, int base, int b, int x,
    int bq)
{
	struct expr_graph *g = &ob->m->g;
	expr_id guard = ob->guard, drop = dropout_runs(ob);
	int in[3] = { base, b, x }, d;

	ob->guard = expr_and(g, guard, dora);
	d = lora_part(ob, &op_rule_dora, "lora_magnitude_vector", json_pack("{s:s,s:i,s:i,s:i,s:s}", "rank", "__lora_r",
	    "quant", bq, "bias", sp->bias, "kind", (int)sp->kind, "weight", "__lora_weight"), 3, in, 0, 1);
	ob->guard = expr_and(g, ob->guard, drop);
	if (sp->no_dropout || expr_is_int_const(g, drop, 0) || d < 0)
		json_decref(again);
	else if (sp->kind == LORA_CONV) {
		ob->mb->ft_shared = 1;
		if (lora_part(ob, sp->rule, "dora_base_result", again, 1, &x, 1, 0) < 0)
			d = -1;
		ob->mb->ft_shared = 0;
	} else {
		json_decref(again);
		if (lora_part(ob, &op_rule_dora_refwd, "dora_base_result", json_pack("{s:s,s:i}", "out_features",
		    "__lora_out", "quant", bq), 1, &x, 1, 0) < 0)
			d = -1;
	}
	ob->guard = guard;
	return d;
}

/* The adapters' input: x through lora_dropout where it runs. */
static int
lora_input(struct op_build *ob, int x)
{
	struct model_builder *mb = ob->mb;

	if (mb->wl->ft.dropout_hp > 0) {
		/* the space picks p (dropout_runs) */
		mb->ft_force = 0;
		x = ob_sub_rule_if(ob, dropout_runs(ob), &op_rule_dropout, "lora_dropout", json_pack("{s:f}", "p", 0.5), x);
		mb->ft_force = -1;
	} else if (mb->wl->ft.lora_dropout > 0.0)
		x = lora_part(ob, &op_rule_dropout, "lora_dropout", json_pack("{s:f}", "p", mb->wl->ft.lora_dropout), 1,
		    &x, 0, 0);
	return x;
}

int
op_lora_build(struct op_build *ob, struct lora_spec *sp)
{
	struct model_builder *mb = ob->mb;
	struct scope sc, *saved = mb->scope;
	struct expr_graph *g = &ob->m->g;
	struct scope_bind binds[4] = { { "__lora_r", mb->lora_rank }, { "__lora_out", sp->fout },
		{ "__lora_groups", sp->groups != EXPR_NONE ? sp->groups : expr_int(g, 1) },
		{ "__lora_weight", EXPR_NONE } };
	expr_id guard = ob->guard, dora = cm_ft_dora_on(g, mb->wl);
	int x = ob->in[0], base, a = -1, b = -1, d = -1, bq;
	/* a convolution's second product under DoRA with a dropout: the
	 * base's attributes without the bias */
	json_t *again = sp->kind == LORA_CONV && !expr_is_int_const(g, dora, 0) ? json_deep_copy(sp->base) : NULL;

	if (again != NULL && json_object_set_new(again, "bias", json_false()) != 0) {
		json_decref(again);
		again = NULL;
	}
	memset(&sc, 0, sizeof sc);
	sc.parent = saved;
	sc.binds = binds;
	sc.nbinds = sc.capbinds = 4;
	mb->scope = &sc;
	base = lora_part(ob, sp->rule, "base_layer", sp->base, 1, &x, 1, 0);
	bq = base >= 0 ? ob->m->ops[ob->m->nops - 1].quant != CM_QUANT_NONE : 0;
	/* the base weight's elements: its operator's first parameter tensor */
	if (base >= 0)
		binds[3].value = ob->m->ops[ob->m->nops - 1].param_elems[0];
	if (base >= 0 && !sp->no_dropout)
		x = lora_input(ob, x);
	if (base >= 0 && x >= 0)
		a = lora_part(ob, sp->rule, "lora_A", sp->a, 1, &x, 0, 1);
	else
		json_decref(sp->a);
	if (a >= 0)
		b = lora_part(ob, sp->rule_b != NULL ? sp->rule_b : sp->rule, "lora_B", sp->b, 1, &a, 0, 1);
	else
		json_decref(sp->b);
	if (b >= 0 && !expr_is_int_const(g, dora, 0))
		d = dora_part(ob, sp, again, dora, base, b, x, bq);
	else
		json_decref(again);
	mb->scope = saved;
	if (b < 0 || (d < 0 && !expr_is_int_const(g, dora, 0)))
		return -1;
	if (expr_is_true(g, dora)) {
		ob->out = d;
		return 0;
	}
	/* LoRA's where DoRA does not run */
	ob->guard = expr_and(g, guard, expr_not(g, dora));
	b = lora_part(ob, &op_rule_scale, "lora_scale", json_pack("{s:f}", "factor", 1.0), 1, &b, 0, 0);
	if (b >= 0) {
		int in[2] = { base, b };
		b = lora_part(ob, &op_rule_add, "lora_add", json_object(), 2, in, 0, 0);
	}
	ob->guard = guard;
	if (b < 0)
		return -1;
	if (d >= 0) {
		int alts[2] = { d, b };
		expr_id conds[2] = { dora, expr_not(g, dora) };
		b = mb_make_select(mb, ob->inst_path, 2, alts, conds);
		if (b < 0)
			return -1;
	}
	ob->out = b;
	return 0;
}
