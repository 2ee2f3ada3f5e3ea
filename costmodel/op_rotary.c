/*
 * op_rotary.c - rotary position embeddings (RoPE, Su et al. 2021) as Hugging
 * Face's apply_rotary_pos_emb computes them in eager mode, on one tensor
 * x = [..., L, d] (q or k after the heads split, [N, heads, L, d]):
 *
 *   rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2], dim=-1)
 *   out = x * cos + rotate_half(x) * sin
 *
 * Five kernels: mul, neg (on half of x), cat, mul, add. cos and sin
 * ([1, L, d] each in the activation dtype: LlamaRotaryEmbedding computes them
 * from position_ids of shape [1, L], without gradient) are what autograd
 * keeps: each mul saves its constant operand because x requires grad, and
 * nothing of x itself. No parameters.
 *
 * MACs: none in the torchvision and nb201 conventions; the frequency table
 * (an outer product of d/2 inverse frequencies and L positions, by matmul)
 * is aux_macs, charged once per model and shape like the tables, which
 * fvcore's matmul handle counts (tests/cli/test_fvcore.py).
 *
 * Modelling choices (where this is not exact):
 * - HF computes cos and sin once per forward pass (LlamaModel) and every
 *   layer saves the same two tensors: they are charged once per model and
 *   shape, to the saved set of the first operator whose "tables" attribute
 *   is true (attention sets it on q's rotary, not k's). The first layer's
 *   backward is the last to run, so its saved set spans every layer's, as
 *   the shared tensors do. Later layers of the same L and d keep nothing
 *   more (a model with more than 8 table shapes charges the rest per
 *   operator: an overestimate). The first layer's guard carries the
 *   charge: a model whose first rotary layer is absent while a later one
 *   exists would be undercounted, which the templates' repeat (copy i
 *   exists when depth >= i) never builds.
 * - Transients: at the second mul, x * cos, cat and their product are live
 *   (3 x's worth) before the output exists; with the output, x * cos and the
 *   second product (2 x's worth) are. Workspace: 2 x's worth beyond the
 *   output. Backward: grad * cos and grad * sin, then the halves of the
 *   second added (negated) into the first: the same two temporaries.
 * - Traffic: per element, mul reads 1 writes 1, neg 0.5 + 0.5, cat 1 + 1,
 *   mul 1 + 1, add 2 + 1: 10 x's worth (cos and sin reads are O(L d)).
 *   FLOPs: 3.5 per element (mul, neg on half, mul, add).
 * Validity: the last dimension is even (rotate_half splits it in halves).
 */
#include "op_rules.h"

/* 1 when `id` is not in `set` yet, recording it; else 0. A full set (more
 * than 8 table shapes) answers 1: each operator is then charged again. */
static int
rotary_first(struct cm_shape_set *set, expr_id id)
{
	for (int i = 0; i < set->n; i++)
		if (set->id[i] == id)
			return 0;
	if (set->n < (int)(sizeof set->id / sizeof set->id[0]))
		set->id[set->n++] = id;
	return 1;
}

static int
rotary_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id l, d, xb, tables;
	int hold;

	if (ob_need_rank(ob, 0, 2, CM_MAX_RANK) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs a float input");
	hold = ob_bool(ob, "tables", 1);
	if (hold < 0)
		return -1;
	l = x->dim[x->rank - 2];
	d = x->dim[x->rank - 1];
	{
		const char *n[] = { "head_dim" };
		ob_require(ob, expr_eq(g, expr_mod(g, d, expr_int(g, 2)), expr_int(g, 0)),
		    "rotary needs an even head_dim (rotate_half)", 1, n, &d);
	}
	if (ob_out_new(ob, x->rank, x->dim, CM_DT_ACT) < 0)
		return -1;
	tables = ob_bytes(ob, expr_mul(g, expr_mul(g, l, d), expr_int(g, 2)), CM_DT_ACT);
	if (hold && x->requires_grad && rotary_first(&ob->m->rotary_saved, tables))
		ob_save_new(ob, tables);        /* cos and sin */
	op_elementwise_costs(ob, 0);
	/* the tables' frequencies: inv_freq [1, d/2, 1] @ position_ids [1, 1, L],
	 * once per forward (LlamaRotaryEmbedding) */
	if (hold && rotary_first(&ob->m->rotary_made, tables))
		ob->op.aux_macs = expr_div(g, expr_mul(g, l, d), expr_int(g, 2));
	ob->op.flops_other = expr_div(g, expr_mul(g, x->elems, expr_int(g, 7)), expr_int(g, 2));
	xb = ob_bytes(ob, x->elems, CM_DT_ACT);
	ob->op.fwd_bytes = expr_add(g, expr_mul(g, xb, expr_int(g, 10)), tables);
	ob->op.bwd_bytes = ob->op.fwd_bytes;
	ob->op.ws_fwd = expr_mul(g, xb, expr_int(g, 2));
	ob->op.ws_bwd = expr_mul(g, xb, expr_int(g, 2));
	ob->op.kernels_fwd = 5;
	ob->op.kernels_bwd = 5;
	return 0;
}

static const char *const rotary_attrs[] = { "tables", NULL };

const struct op_rule op_rule_rotary = { "rotary", rotary_attrs, 1, 1, CM_CLASS_ELEMENTWISE, rotary_build };
