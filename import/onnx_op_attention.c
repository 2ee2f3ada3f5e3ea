/*
 * onnx_op_attention.c - the attention cores onnx_fuse.c found, translated at
 * their merging Reshape: one attention_core layer on q, k, v [N, L, E] (BERT,
 * GPT-2), or, for nn.MultiheadAttention's sequence-first export, q, k, v
 * [L, N, E] viewed batch-first around it and the result copied back to the
 * layout the node gives; the nodes one by one (their shadow list) when the
 * sizes do not fit attention_core (cross-attention, an uneven head split).
 */
#include "onnx_op.h"

#include <string.h>

/* A core that does not fit attention_core: its nodes' layers as translated
 * one by one, then the merging Reshape itself. */
static int
attention_unfold(struct onnx_imp *im, const struct onnx_attn *a)
{
	size_t k;
	json_t *l;

	json_array_foreach(a->shadow, k, l)
		json_array_append(im->layers, l);
	im->fuse[a->last] = ONNX_FUSE_NONE;
	return onnx_ops_translate(im, a->last);
}

/* d is x, or the reshape wildcards 0 (copy) and -1 (infer) */
static int
dim_is(struct onnx_dim d, struct onnx_dim x)
{
	return onnx_dim_same(d, x) || (d.expr == NULL && (d.v == 0 || d.v == -1));
}

/* The head count the Reshape node r (x [N, L, E] to [N, L, h, d]) splits
 * x into, or 0 when it is not that. */
static int64_t
split_heads(struct onnx_imp *im, int r, const struct onnx_val *x)
{
	struct onnx_val *s = onnx_imp_find(im, im->m->graph.nodes[r].inputs[1]);
	struct onnx_dim e = x->shape[2];
	int64_t h, d;

	if (s == NULL || !onnx_op_sym_of(im, s) || s->n != 4 || s->e[2].expr != NULL || s->e[3].expr != NULL ||
	    !dim_is(s->e[0], x->shape[0]) || !dim_is(s->e[1], x->shape[1]) || e.expr != NULL)
		return 0;
	h = s->e[2].v;
	d = s->e[3].v;
	if (h < 1 || h > e.v || e.v % h != 0 || (d != -1 && d != e.v / h))
		return 0;
	return h;
}

/* One attention_core layer on q, k, v (each [N, L, E]) into o. */
static void
emit_core(struct onnx_imp *im, const struct onnx_attn *a, struct onnx_val *o, struct onnx_val *const in[3],
    int64_t heads)
{
	json_t *l = onnx_op_emit(im, "attention_core", o, in[0], in[1]);

	json_array_append_new(json_object_get(l, "inputs"), json_string(in[2]->ref));
	json_object_set_new(l, "heads", json_integer(heads));
	if (a->causal)
		json_object_set_new(l, "causal", json_true());
	if (a->dropout >= 0 && onnx_op_dropout_p(im, a->dropout) > 0)
		json_object_set_new(l, "dropout", json_real(onnx_op_dropout_p(im, a->dropout)));
	onnx_op_copy_shape(o, in[0]);
	o->permuted = 0;
}

/* The head count the Reshape node r (x [L, N, E] to [L, N*h, d]) splits
 * x into, or 0 when it is not that. */
static int64_t
split_heads3(struct onnx_imp *im, int r, const struct onnx_val *x)
{
	struct onnx_val *s = onnx_imp_find(im, im->m->graph.nodes[r].inputs[1]);
	struct onnx_dim e = x->shape[2], nh;
	int64_t d;

	if (s == NULL || !onnx_op_sym_of(im, s) || s->n != 3 || s->e[2].expr != NULL || e.expr != NULL ||
	    !dim_is(s->e[0], x->shape[0]))
		return 0;
	d = s->e[2].v;
	if (d < 1 || d > e.v || e.v % d != 0 ||
	    onnx_dim_arith(im->ar, ONNX_DIM_MUL, x->shape[1], onnx_dim_int(e.v / d), &nh) < 0 || !dim_is(s->e[1], nh))
		return 0;
	return e.v / d;
}

/* A temporary value of the translation of node i's attention core. */
static struct onnx_val *
attention_tmp(struct onnx_imp *im, const struct onnx_val *o, const char *what)
{
	struct onnx_val *v = onnx_imp_val(im, onnx_arena_printf(im->ar, "%s.%s", o->name, what));

	if (v == NULL || v->name == NULL)
		dn_error_set(im->err, DN_ENOMEM, "", "out of memory");
	return v == NULL || v->name == NULL ? NULL : v;
}

/* x [A, B, E] as the view [B, A, E] (permute 1 0 2) into the value `what`. */
static struct onnx_val *
swap_first(struct onnx_imp *im, const struct onnx_val *o, const char *what, const struct onnx_val *x)
{
	struct onnx_val *v = attention_tmp(im, o, what);

	if (v == NULL)
		return NULL;
	json_object_set_new(onnx_op_emit(im, "permute", v, x, NULL), "dims", json_pack("[iii]", 1, 0, 2));
	onnx_op_copy_shape(v, x);
	v->shape[0] = x->shape[1];
	v->shape[1] = x->shape[0];
	v->permuted = 1;
	return v;
}

/* The seq-first core (nn.MultiheadAttention) of node i: q, k, v [L, N, E]
 * viewed as [N, L, E] (the permutes are views), one attention_core, the
 * result viewed back as [L, N, E] and reshaped as node i does (a copy, as
 * PyTorch's transpose(0, 1).contiguous().view(L * N, E)). */
static int
attention_seqfirst(struct onnx_imp *im, const struct onnx_attn *a, int i, struct onnx_val *o, struct onnx_val *in[3])
{
	static const char *const names[3] = { "q_batch_first", "k_batch_first", "v_batch_first" };
	struct onnx_val *ms = onnx_imp_find(im, im->m->graph.nodes[i].inputs[1]), *bf[3], *core, *back;
	struct onnx_dim ln, shape[3];
	int64_t heads = 0;
	int n;

	for (int k = 0; k < 3; k++) {
		int64_t h = split_heads3(im, a->reshape[k], in[k]);
		if (h == 0 || (k > 0 && h != heads))
			return attention_unfold(im, a);
		heads = h;
	}
	if (ms == NULL || !onnx_op_sym_of(im, ms) || (ms->n != 2 && ms->n != 3) ||
	    onnx_dim_arith(im->ar, ONNX_DIM_MUL, in[0]->shape[0], in[0]->shape[1], &ln) < 0)
		return attention_unfold(im, a);
	n = ms->n;
	if (n == 2 && (!dim_is(ms->e[0], ln) || !dim_is(ms->e[1], in[0]->shape[2])))
		return attention_unfold(im, a);
	if (n == 3 && (!dim_is(ms->e[0], in[0]->shape[0]) || !dim_is(ms->e[1], in[0]->shape[1]) ||
	    !dim_is(ms->e[2], in[0]->shape[2])))
		return attention_unfold(im, a);
	for (int k = 0; k < 3; k++)
		if ((bf[k] = swap_first(im, o, names[k], in[k])) == NULL)
			return -1;
	if ((core = attention_tmp(im, o, "attention")) == NULL)
		return -1;
	emit_core(im, a, core, bf, heads);
	if ((back = swap_first(im, o, "seq_first", core)) == NULL)
		return -1;
	shape[0] = n == 2 ? ln : in[0]->shape[0];
	shape[1] = n == 2 ? in[0]->shape[2] : in[0]->shape[1];
	shape[2] = in[0]->shape[2];
	return onnx_op_reshape_to(im, back, o, shape, n, 0);
}

/* Node i, the Reshape merging the heads of an attention core: one
 * attention_core layer on q, k, v [N, L, E], or the nodes one by one when
 * the sizes do not fit it (cross-attention, an odd head split). */
int
onnx_op_attention(struct onnx_imp *im, int i, struct onnx_val *o)
{
	const struct onnx_attn *a = NULL;
	struct onnx_val *in[3], *ms;
	int64_t heads = 0;

	for (int j = 0; j < im->nattns && a == NULL; j++)
		if (im->attns[j].last == i)
			a = &im->attns[j];
	if (a == NULL)
		return onnx_imp_fail(im, DN_EINVAL, "attention core not recorded");
	in[0] = onnx_imp_find(im, a->q);
	in[1] = onnx_imp_find(im, a->k);
	in[2] = onnx_imp_find(im, a->v);
	for (int k = 0; k < 3; k++) {
		if (in[k] == NULL || in[k]->kind != ONNX_V_DATA || in[k]->rank != 3 || (in[k]->permuted && !a->seqfirst))
			return attention_unfold(im, a);
		for (int d = 0; d < 3; d++)
			if (!onnx_dim_same(in[k]->shape[d], in[0]->shape[d]))
				return attention_unfold(im, a);
	}
	if (a->seqfirst)
		return attention_seqfirst(im, a, i, o, in);
	for (int k = 0; k < 3; k++) {
		int64_t h;
		h = split_heads(im, a->reshape[k], in[k]);
		if (h == 0 || (k > 0 && h != heads))
			return attention_unfold(im, a);
		heads = h;
	}
	ms = onnx_imp_find(im, im->m->graph.nodes[i].inputs[1]);
	if (ms == NULL || !onnx_op_sym_of(im, ms) || ms->n != 3 || !dim_is(ms->e[0], in[0]->shape[0]) ||
	    !dim_is(ms->e[1], in[0]->shape[1]) || !dim_is(ms->e[2], in[0]->shape[2]))
		return attention_unfold(im, a);
	emit_core(im, a, o, in, heads);
	return 0;
}
