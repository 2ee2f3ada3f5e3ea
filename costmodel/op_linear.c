/*
 * op_linear.c - linear (on the last dimension, optionally with its weight
 * tied to an embedding), matmul / bmm (batched, leading dimensions equal)
 * and embedding lookups. MACs: rows * in * out for linear, batch * M * K * N
 * for matmul; an embedding is a gather (no MACs). Validity of an embedding:
 * when its int64 input states the range of its ids (an input's "id_range",
 * kept by views), the range fits the table, as PyTorch raises IndexError
 * for an id beyond it (BERT's positions: seq_len <= max_position).
 */
#include "op_rules.h"

static int
linear_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id fin, fout, dims[CM_MAX_RANK], rows, macs;
	int bias, tied, r;

	if (ob_need_rank(ob, 0, 1, CM_MAX_RANK) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "linear needs a float input (use an embedding for token ids)");
	r = x->rank;
	fin = x->dim[r - 1];
	fout = ob_int(ob, "out_features", OB_REQUIRED);
	bias = ob_bool(ob, "bias", 1);
	tied = ob_bool(ob, "tied", 0);
	if (fout < 0 || bias < 0 || tied < 0)
		return -1;
	{
		const char *n[] = { "out_features" };
		ob_require(ob, expr_ge(g, fout, expr_int(g, 1)), "out_features >= 1", 1, n, &fout);
	}
	for (int i = 0; i < r - 1; i++)
		dims[i] = x->dim[i];
	dims[r - 1] = fout;
	if (ob_out_new(ob, r, dims, CM_DT_ACT) < 0)
		return -1;
	if (!tied)
		ob_param_2d(ob, expr_mul(g, fin, fout), fout, fin);    /* weight [out, in] */
	if (bias)
		ob_param(ob, fout);
	/* rows: the product of the leading dims, not elems / fin (the same value,
	 * but an interval bound divides the widest elems by the narrowest fin: a
	 * flattened conv's rows came out 32 times the batch, and every latency
	 * bound with them) */
	rows = ob_elems(ob, r - 1, x->dim);
	macs = expr_mul(g, rows, expr_mul(g, fin, fout));
	ob->op.macs = macs;
	ob->op.bwd_macs = x->requires_grad ? expr_mul(g, macs, expr_int(g, 2)) : macs;
	ob_save_input(ob, 0);
	op_io_bytes(ob, 1);
	if (tied)
		ob->op.fwd_bytes = expr_add(g, ob->op.fwd_bytes,
		    expr_mul(g, expr_mul(g, fin, fout), expr_int(g, ob->m->act_bytes)));
	ob->op.parallel = expr_mul(g, expr_cdiv(g, rows, expr_int(g, 128)), expr_cdiv(g, fout, expr_int(g, 64)));
	ob->op.kernels_fwd = 1;
	ob->op.lib_calls = 1;   /* cuBLAS (perf_model.c) */
	if (bias)
		ob->op.bias_adds = expr_mul(g, rows, fout);
	ob->op.kernels_bwd = (uint8_t)((x->requires_grad ? 2 : 1) + (bias ? 1 : 0));
	return 0;
}

static int
matmul_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *a, *b;
	expr_id m, k, kb, n, dims[CM_MAX_RANK], batch, macs;
	int tb, ra, rb;

	if (ob_need_rank(ob, 0, 2, CM_MAX_RANK) || ob_need_rank(ob, 1, 2, CM_MAX_RANK))
		return -1;
	tb = ob_bool(ob, "transpose_b", 0);
	if (tb < 0)
		return -1;
	a = ob_in(ob, 0);
	b = ob_in(ob, 1);
	ra = a->rank;
	rb = b->rank;
	if (rb != 2 && rb != ra)
		return ob_fail(ob, NULL, "the second input must have rank 2 or the rank of the first (%d), not %d", ra, rb);
	m = a->dim[ra - 2];
	k = a->dim[ra - 1];
	kb = tb ? b->dim[rb - 1] : b->dim[rb - 2];
	n = tb ? b->dim[rb - 2] : b->dim[rb - 1];
	{
		const char *names[] = { "a columns", "b rows" };
		expr_id vals[] = { k, kb };
		ob_require(ob, expr_eq(g, k, kb), "matmul inner dimensions agree", 2, names, vals);
	}
	batch = expr_int(g, 1);
	for (int i = 0; i < ra - 2; i++) {
		dims[i] = a->dim[i];
		batch = expr_mul(g, batch, a->dim[i]);
		if (rb == ra) {
			const char *names[] = { "a", "b" };
			expr_id vals[] = { a->dim[i], b->dim[i] };
			ob_require(ob, expr_eq(g, a->dim[i], b->dim[i]), "matmul batch dimensions agree", 2, names, vals);
		}
	}
	dims[ra - 2] = m;
	dims[ra - 1] = n;
	if (ob_out_new(ob, ra, dims, CM_DT_ACT) < 0)
		return -1;
	macs = expr_mul(g, batch, expr_mul(g, m, expr_mul(g, k, n)));
	ob->op.macs = macs;
	ob->op.bwd_macs = expr_mul(g, macs, expr_int(g, (a->requires_grad ? 1 : 0) + (b->requires_grad ? 1 : 0)));
	/* torch.matmul folds batch dimensions with reshape: a non-contiguous
	 * (permuted) operand is copied first, and bmm keeps the copy */
	for (int i = 0; i < 2; i++) {
		const struct cm_tensor *t = ob_in(ob, i);
		int other_needs = i == 0 ? b->requires_grad : a->requires_grad;
		if (!t->contiguous && t->rank > 2) {
			if (other_needs)
				ob_save_new(ob, ob_bytes(ob, t->elems, (enum cm_dtype)t->dtype));
			else
				ob->op.ws_fwd = expr_add(g, ob->op.ws_fwd, ob_bytes(ob, t->elems, (enum cm_dtype)t->dtype));
			ob->op.kernels_fwd++;
		} else if (other_needs)
			ob_save_input(ob, i);
	}
	op_io_bytes(ob, 0);
	ob->op.parallel = expr_mul(g, batch, expr_mul(g, expr_cdiv(g, m, expr_int(g, 128)),
	    expr_cdiv(g, n, expr_int(g, 64))));
	ob->op.kernels_bwd = (uint8_t)((a->requires_grad ? 1 : 0) + (b->requires_grad ? 1 : 0));
	ob->op.lib_calls = 1;   /* cuBLAS (perf_model.c) */
	return 0;
}

static int
embedding_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	expr_id num, dim, dims[CM_MAX_RANK];

	if (x->dtype != CM_DT_I64)
		return ob_fail(ob, NULL, "an embedding needs an int64 input (token ids)");
	if (x->rank >= CM_MAX_RANK)
		return ob_fail(ob, NULL, "input has too many dimensions");
	num = ob_int(ob, "num_embeddings", OB_REQUIRED);
	dim = ob_int(ob, "embedding_dim", OB_REQUIRED);
	if (num < 0 || dim < 0)
		return -1;
	{
		const char *n1[] = { "num_embeddings" }, *n2[] = { "embedding_dim" };
		ob_require(ob, expr_ge(g, num, expr_int(g, 1)), "num_embeddings >= 1", 1, n1, &num);
		ob_require(ob, expr_ge(g, dim, expr_int(g, 1)), "embedding_dim >= 1", 1, n2, &dim);
	}
	if (x->id_end != EXPR_NONE) {
		/* PyTorch raises IndexError for an id outside the table: the
		 * input's ids (its id_range, e.g. positions 0 .. seq_len-1) must fit */
		const char *n3[] = { "id_range", "num_embeddings" };
		expr_id v3[] = { x->id_end, num };
		ob_require(ob, expr_le(g, x->id_end, num),
		    "ids within the table (id_range <= num_embeddings)", 2, n3, v3);
	}
	for (int i = 0; i < x->rank; i++)
		dims[i] = x->dim[i];
	dims[x->rank] = dim;
	if (ob_out_new(ob, x->rank + 1, dims, CM_DT_ACT) < 0)
		return -1;
	ob_param_2d(ob, expr_mul(g, num, dim), num, dim);
	ob_save_input(ob, 0);   /* the indices, for the sparse weight gradient */
	op_io_bytes(ob, 0);
	ob->op.parallel = ob->m->tensors[ob->out].elems;
	return 0;
}

static const char *const linear_attrs[] = { "out_features", "bias", "tied", NULL };
static const char *const matmul_attrs[] = { "transpose_b", NULL };
static const char *const embedding_attrs[] = { "num_embeddings", "embedding_dim", NULL };

const struct op_rule op_rule_linear = { "linear", linear_attrs, 1, 1, CM_CLASS_GEMM, linear_build };
const struct op_rule op_rule_matmul = { "matmul", matmul_attrs, 2, 2, CM_CLASS_GEMM, matmul_build };
const struct op_rule op_rule_bmm = { "bmm", matmul_attrs, 2, 2, CM_CLASS_GEMM, matmul_build };
const struct op_rule op_rule_embedding = { "embedding", embedding_attrs, 1, 1, CM_CLASS_ELEMENTWISE, embedding_build };
