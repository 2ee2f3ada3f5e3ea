/*
 * op_linear.c - linear (on the last dimension, optionally with its weight
 * tied to an embedding), matmul / bmm (batched, leading dimensions equal)
 * and embedding lookups. MACs: rows * in * out for linear, batch * M * K * N
 * for matmul; an embedding is a gather (no MACs). Validity of an embedding:
 * when its int64 input states the range of its ids (an input's "id_range",
 * kept by views), the range fits the table, as PyTorch raises IndexError
 * for an id beyond it (BERT's positions: seq_len <= max_position).
 * A linear may be bitsandbytes' Linear4bit or Linear8bitLt (the
 * workload's "quantize", cm_quant.c): its weight stored in 4 bits and
 * dequantized on every call, or in int8 and multiplied with the input
 * quantized to int8 on every call. A linear or an embedding that LoRA's
 * targets pick is a LoRA composite (op_lora.c).
 */
#include "model_build_priv.h"
#include "op_rules.h"

#include <string.h>

size_t
mb_linear_path_len(const char *path)
{
	static const char part[] = ".base_layer";
	size_t n = strlen(path), k = sizeof part - 1;

	return n > k && strcmp(path + n - k, part) == 0 ? n - k : n;
}

/* Whether path is the output layer's (`output`), or that of the linear
 * that holds its weight (mb_linear_path_len). */
static int
is_output(const char *output, const char *path)
{
	size_t n = strlen(output);

	return mb_linear_path_len(path) == n && strncmp(output, path, n) == 0;
}

/* The embedding whose weight a tied linear shares: the last one built
 * before it, in this copy of the model, with the linear's [out, in] shape;
 * NULL when there is none. */
static struct cm_op *
tied_embedding(struct op_build *ob, expr_id fin, expr_id fout)
{
	struct cm_graph *m = ob->m;

	for (int k = m->nops - 1; k >= 0; k--) {
		struct cm_op *op = &m->ops[k];
		if (op->rule == &op_rule_embedding && op->nparam_tensors > 0 && op->param_rows[0] == fout &&
		    op->param_cols[0] == fin)
			return op;
	}
	return NULL;
}

/* In PyTorch requires_grad belongs to the Parameter, which a tied linear
 * shares with its embedding (GPT-2's lm_head.weight is
 * transformer.wte.weight): the two train or stay frozen together. A tied
 * linear that train picks makes the embedding train even where freeze
 * picks it (its gradient, optimizer state, and what follows it keeping
 * its activations for that gradient: the model is built again); one that
 * nothing picks shares a frozen embedding's state (--freeze wte freezes
 * the Parameter); one that freeze picks while its embedding trains
 * (--freeze lm_head: freezing by named_parameters() finds no lm_head, the
 * weight is listed once as wte's) takes the gradient too, keeping its
 * input for it (the upper of the two readings: freezing the module
 * instead would freeze wte too). */
static void
tied_settle(struct op_build *ob, expr_id fin, expr_id fout)
{
	struct cm_op *emb = tied_embedding(ob, fin, fout);

	const struct cm_finetune *ft = &ob->mb->wl->ft;

	if (emb == NULL || ob->op.frozen == emb->frozen)
		return;
	if (emb->frozen && !cm_ft_match(ft->train, ft->ntrain, "linear", ob->mb->parent_rule, ob->inst_path))
		/* the embedding's freeze froze the Parameter (--freeze wte):
		 * the linear nothing picked shares it */
		ob->op.frozen = 1;
	else if (emb->frozen) {
		/* train picks the linear: built frozen, the embedding's output
		 * needed no gradient, so the model is built again with it
		 * trained (model_build.c) */
		emb->frozen = 0;
		if (ob->mb->tied_train[0] == '\0' && strlen(emb->path) < sizeof ob->mb->tied_train)
			memcpy(ob->mb->tied_train, emb->path, strlen(emb->path) + 1);
	} else
		ob->op.frozen = 0;
}

/* Whether this linear is a Linear4bit or Linear8bitLt (cm_quant.c; asked
 * only of an nn.Linear module: bitsandbytes' replacement swaps modules, so
 * a parameter such as in_proj_weight stays in the compute dtype): the
 * workload quantizes, the weight is the linear's own (not tied: then the builder
 * notes that the model ties weights; not a LoRA adapter), it takes no
 * gradient when training, and it is not the output layer the second build
 * leaves out (mb->quant_skip). Counts it and keeps its path. */
static int
quant_applies(struct op_build *ob, int tied)
{
	struct model_builder *mb = ob->mb;

	if (mb->wl->ft.quant == CM_QUANT_NONE)
		return 0;
	if (tied) {
		mb->quant_tied = 1;
		return 0;
	}
	if (mb->ft_adapter || (mb->wl->training && !ob->op.frozen) ||
	    (mb->quant_skip != NULL && is_output(mb->quant_skip, ob->inst_path)))
		return 0;
	mb->quant_hits++;
	return 1;
}

/* A Linear4bit's costs beyond its GEMM, forward and (when the input needs
 * a gradient) again in backward: the dequantized weight in the compute
 * dtype (a temporary: MatMul4Bit keeps only the packed weight), with
 * double quantization the scales dequantized to fp32 first (two small
 * kernels: dequantize_blockwise, + offset), and where the input is fp32
 * under autocast the casts of the input to the compute dtype and of the
 * result back (their half copies are temporaries too).
 * One row that needs no gradient (a decode step: bitsandbytes'
 * matmul_4bit, autograd/_functions.py, takes F.gemv_4bit when
 * A.numel() == A.shape[-1] and not A.requires_grad, and in_features is a
 * multiple of the 64-value block) has no dequantized weight: gemv_4bit
 * reads the packed weight and the scales (dequantized to fp32 first under
 * double quantization, as above: their fp32 copy is the workspace) and
 * writes the row: one kernel where the GEMM path launches the dequantize
 * and a cuBLAS GEMM (op.gemv_row). Written as a choice over the row count,
 * so one model serves prefill and decode. */
static void
quant4_costs(struct op_build *ob, const struct cm_tensor *x, expr_id rows, expr_id fin, expr_id fout)
{
	struct expr_graph *g = &ob->m->g;
	int cb = ob->m->act_bytes, dq = cm_quant_double(ob->mb->wl->ft.quant);
	int cast = x->dtype == CM_DT_F32 && cb != 4, kernels = 1 + (dq ? 2 : 0) + (cast ? 2 : 0);
	expr_id w = expr_mul(g, fin, fout), blocks = expr_cdiv(g, w, expr_int(g, 64));
	expr_id packed = expr_cdiv(g, w, expr_int(g, 2)), deq = expr_mul(g, w, expr_int(g, cb));
	/* double quantization's fp32 copy of the scales */
	expr_id scales32 = dq ? expr_mul(g, blocks, expr_int(g, 4)) : expr_int(g, 0);
	/* the scales' traffic: read by the kernel that uses them, and under
	 * double quantization read and written by their own two kernels */
	expr_id scale_bytes = expr_mul(g, blocks, expr_int(g, dq ? 1 + 5 + 8 : 4));
	expr_id ws = expr_add(g, deq, scales32);
	/* the dequantize kernel reads the packed weight and writes the weight */
	expr_id bytes = expr_add(g, expr_add(g, packed, deq), scale_bytes);

	if (!ob->mb->wl->training || !x->requires_grad) {
		/* gemv_4bit (an inference workload runs under no_grad, where no
		 * input requires a gradient): instead of the dequantized weight
		 * (written, then read by the GEMM: fwd_bytes counts it at cb bytes
		 * a value), the packed weight read once */
		expr_id one = expr_and(g, expr_eq(g, rows, expr_int(g, 1)),
		    expr_eq(g, expr_mod(g, fin, expr_int(g, 64)), expr_int(g, 0)));
		ws = expr_ite(g, one, scales32, ws);
		bytes = expr_ite(g, one, expr_sub(g, expr_add(g, packed, scale_bytes), deq), bytes);
		ob->op.gemv_row = one;
	}
	if (cast) {
		expr_id in = expr_mul(g, rows, fin), out = expr_mul(g, rows, fout), both = expr_add(g, in, out);
		ws = expr_add(g, ws, expr_mul(g, both, expr_int(g, cb)));
		bytes = expr_add(g, bytes, expr_mul(g, both, expr_int(g, 4 + cb)));
	}
	ob->op.ws_fwd = expr_add(g, ob->op.ws_fwd, ws);
	ob->op.fwd_bytes = expr_add(g, ob->op.fwd_bytes, bytes);
	ob->op.kernels_fwd = (uint8_t)(ob->op.kernels_fwd + kernels);
	if (!x->requires_grad)
		return;
	ob->op.ws_bwd = expr_add(g, ob->op.ws_bwd, ws);
	ob->op.bwd_bytes = expr_add(g, ob->op.bwd_bytes, bytes);
	ob->op.kernels_bwd = (uint8_t)(ob->op.kernels_bwd + kernels);
}

/* A Linear8bitLt's costs beyond its GEMM (bitsandbytes >= 0.45: MatMul8bitLt
 * with has_fp16_weights=False and transformers' llm_int8_threshold 6.0,
 * autograd/_functions.py and backends/cuda/ops.py), for an input x of
 * `rows` rows of `fin` values, in its own dtype:
 *   forward   x cast to fp16 where it is not fp16 (a temporary); the
 *             outlier columns found (|x| >= 6: an fp16 abs and a bool mask,
 *             any, argwhere); x quantized per row to int8 (CA, 1 byte a
 *             value, and an fp32 scale a row); the int8 GEMM into int32,
 *             dequantized to fp16 and cast to x's dtype (the result keeps
 *             x's dtype). The peak of the two phases is the workspace:
 *             (2 cast + 2 abs + 1 mask) bytes a value of x, or CA, the
 *             scales, the int32 product and the fp16 copy where a cast
 *             follows. Counted with no outlier column: where there are
 *             some, their fp16 columns of x (subA, kept for backward) and
 *             an out-of-place addmm of the result come on top (the data
 *             decide; few columns in LLM.int8()'s measurements): the
 *             safe estimate's bound holds one more result
 *   backward  where x needs a gradient: MatMul8bitLt keeps x itself (and
 *             subA); the weight is dequantized to x's dtype (a copy of the
 *             int8 weight times its row scales, an fp32 temporary) for
 *             grad_x = grad @ W; the weight takes no gradient.
 * Kernels: the forward's casts, abs, compare, two any, argwhere, quantize,
 * the mask's index_put and the dequantize; backward's copy and two
 * multiplies. The GEMM is priced at the dtype's rate (int8 tensor cores
 * run it faster on most GPUs: an upper bound). */
static void
int8_costs(struct op_build *ob, const struct cm_tensor *x, expr_id rows, expr_id fin, expr_id fout)
{
	struct expr_graph *g = &ob->m->g;
	enum cm_precision p = ob->mb->wl->precision;
	int fp16 = x->dtype == CM_DT_ACT && (p == CM_PREC_FP16 || p == CM_PREC_MIXED_FP16);
	int bx = x->dtype == CM_DT_F32 ? 4 : ob->m->act_bytes, c = fp16 ? 0 : 1;
	expr_id in = expr_mul(g, rows, fin), out = expr_mul(g, rows, fout), w = expr_mul(g, fin, fout);
	expr_id find = expr_mul(g, in, expr_int(g, 2 * c + 3));
	expr_id mm = expr_add(g, expr_add(g, in, expr_mul(g, rows, expr_int(g, 4))),
	    expr_mul(g, out, expr_int(g, 4 + 2 * c)));

	ob->op.ws_fwd = expr_add(g, ob->op.ws_fwd, expr_max(g, find, mm));
	/* the safe estimate's: where outlier columns come, addmm's result */
	ob->op.ws_bound = expr_add(g, ob->op.ws_fwd, expr_mul(g, out, expr_int(g, bx)));
	ob->op.fwd_bytes = expr_add(g, ob->op.fwd_bytes, expr_add(g,
	    expr_mul(g, in, expr_int(g, c * (bx + 2) + 4 + 3 + 2 + 3)),
	    expr_mul(g, out, expr_int(g, 4 + 4 + 2 + c * (2 + bx)))));
	ob->op.kernels_fwd = (uint8_t)(ob->op.kernels_fwd + 8 + 2 * c);
	if (!x->requires_grad)
		return;
	ob_save_input(ob, 0);
	ob->op.ws_bwd = expr_add(g, ob->op.ws_bwd, expr_add(g, expr_mul(g, w, expr_int(g, bx)),
	    expr_mul(g, fout, expr_int(g, 4))));
	ob->op.bwd_bytes = expr_add(g, ob->op.bwd_bytes, expr_mul(g, w, expr_int(g, 1 + 3 * bx)));
	ob->op.kernels_bwd = (uint8_t)(ob->op.kernels_bwd + 3);
}

/* What a linear keeps of its input for the weight's gradient. F.linear on
 * an input of 3 or more dimensions that is not contiguous (a transposed
 * view: nn.MultiheadAttention's query under batch_first) runs matmul, which
 * folds it into 2-D with reshape, a copy, and keeps the copy, one per call
 * (two linears on one view keep two copies: PyTorch's MmBackward0); else
 * ob_save_gemm_input (the input, or autocast's half copy). */
static void
linear_keep_input(struct op_build *ob)
{
	const struct cm_tensor *x = ob_in(ob, 0);

	if (!x->contiguous && x->rank >= 3 && !(ob_autocast(ob) && x->dtype == CM_DT_F32))
		ob_save_new(ob, ob_bytes(ob, x->elems, (enum cm_dtype)x->dtype));
	else
		ob_save_gemm_input(ob, 0);
}

static int
linear_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id fin, fout, dims[CM_MAX_RANK], rows, macs;
	int bias, tied, module, r, wgrad, quant;

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
	module = ob_bool(ob, "linear_module", 1);
	if (fout < 0 || bias < 0 || tied < 0 || module < 0)
		return -1;
	{
		const char *n[] = { "out_features" };
		ob_require(ob, expr_ge(g, fout, expr_int(g, 1)), "out_features >= 1", 1, n, &fout);
	}
	for (int i = 0; i < r - 1; i++)
		dims[i] = x->dim[i];
	dims[r - 1] = fout;
	if (!tied && ob->mb->ft_force < 0 &&
	    cm_ft_lora_target(ob->mb->wl, module ? "linear" : CM_FT_PARAM_LINEAR, ob->mb->parent_rule, ob->inst_path)) {
		/* a space that picks the target lists builds the model once per
		 * list (model_build.c), so the answer is this copy's */
		struct lora_spec sp = { &op_rule_linear, NULL, json_pack("{s:s,s:b}", "out_features", "__lora_out", "bias",
			bias), json_pack("{s:s,s:b}", "out_features", "__lora_r", "bias", 0),
			json_pack("{s:s,s:b}", "out_features", "__lora_out", "bias", 0), fout, EXPR_NONE, bias, LORA_LINEAR, 0 };
		/* peft adapts a parameter such as in_proj_weight only through
		 * its module (lora.MultiheadAttention), which refuses DoRA */
		if (!module)
			ob_require(ob, expr_not(g, cm_ft_dora_on(g, ob->mb->wl)), "no DoRA on a weight that is no "
			    "nn.Linear module's (nn.MultiheadAttention's in_proj_weight): peft's lora.MultiheadAttention "
			    "raises ValueError (\"does not support DoRA\")", 0, NULL, NULL);
		ob->mb->lora_hits++;
		return op_lora_build(ob, &sp);
	}
	if (tied) {
		ob->tied_weight = 1;
		ob->op.frozen = (uint8_t)(ob->mb->ft_force >= 0 ? ob->mb->ft_force :
		    cm_ft_tied_frozen(ob->mb->wl, ob->inst_path));
		if (ob->mb->wl->training && ob->mb->ft_force < 0)
			tied_settle(ob, fin, fout);
	}
	wgrad = ob_weights_train(ob);
	quant = module && quant_applies(ob, tied);
	/* Linear4bit and MatMul8bitLt return their input's dtype (an fp32
	 * input under autocast gets an fp32 result) */
	if (ob_out_new(ob, r, dims, quant ? (enum cm_dtype)x->dtype : CM_DT_ACT) < 0)
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
	/* backward: grad of the input (x requires grad) and of the weight (not
	 * frozen); only the weight's gradient needs x (addmm keeps mat1 when
	 * mat2 requires grad) */
	ob->op.bwd_macs = expr_mul(g, macs, expr_int(g, (x->requires_grad ? 1 : 0) + (wgrad ? 1 : 0)));
	if (wgrad)
		linear_keep_input(ob);
	op_io_bytes(ob, 1);
	if (tied)
		ob->op.fwd_bytes = expr_add(g, ob->op.fwd_bytes,
		    expr_mul(g, expr_mul(g, fin, fout), expr_int(g, ob->m->act_bytes)));
	ob->op.parallel = expr_mul(g, expr_cdiv(g, rows, expr_int(g, 128)), expr_cdiv(g, fout, expr_int(g, 64)));
	ob->op.kernels_fwd = 1;
	ob->op.lib_calls = 1;   /* cuBLAS (perf_model.c) */
	if (bias)
		ob->op.bias_adds = expr_mul(g, rows, fout);
	ob->op.kernels_bwd = (uint8_t)((x->requires_grad ? 1 : 0) + (wgrad ? 1 + (bias ? 1 : 0) : 0));
	if (quant) {
		ob->op.quant = ob->mb->wl->ft.quant;
		if (ob->op.quant == CM_QUANT_INT8)
			int8_costs(ob, x, rows, fin, fout);
		else
			quant4_costs(ob, x, rows, fin, fout);
	}
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
			/* under autocast the copy is of the fp16/bf16 cast */
			enum cm_dtype cdt = ob_autocast(ob) ? CM_DT_ACT : (enum cm_dtype)t->dtype;
			if (other_needs)
				ob_save_new(ob, ob_bytes(ob, t->elems, cdt));
			else
				ob->op.ws_fwd = expr_add(g, ob->op.ws_fwd, ob_bytes(ob, t->elems, cdt));
			ob->op.kernels_fwd++;
		} else if (other_needs)
			ob_save_gemm_input(ob, i);
	}
	op_io_bytes(ob, 0);
	ob->op.parallel = expr_mul(g, batch, expr_mul(g, expr_cdiv(g, m, expr_int(g, 128)),
	    expr_cdiv(g, n, expr_int(g, 64))));
	ob->op.kernels_bwd = (uint8_t)((a->requires_grad ? 1 : 0) + (b->requires_grad ? 1 : 0));
	ob->op.lib_calls = 1;   /* cuBLAS (perf_model.c) */
	return 0;
}

/* An embedding that LoRA's targets pick, as peft's lora.Embedding
 * computes it (op_lora.c): the frozen base; lora_A, F.embedding of the ids
 * into A.T [num, r] (an embedding of r columns: it keeps the ids for its
 * gradient); lora_B, after_A @ B.T [r, dim] (a linear without bias: it
 * keeps after_A); * scaling, +. No dropout (peft never calls it there). */
static int
embedding_lora(struct op_build *ob)
{
	json_t *num = json_object_get(ob->item, "num_embeddings"), *dim = json_object_get(ob->item, "embedding_dim");
	expr_id fout = ob_int(ob, "embedding_dim", OB_REQUIRED);
	struct lora_spec sp;

	if (fout < 0)
		return -1;
	memset(&sp, 0, sizeof sp);
	sp.rule = &op_rule_embedding;
	sp.rule_b = &op_rule_linear;
	sp.base = json_pack("{s:O,s:O}", "num_embeddings", num, "embedding_dim", dim);
	sp.a = json_pack("{s:O,s:s}", "num_embeddings", num, "embedding_dim", "__lora_r");
	sp.b = json_pack("{s:s,s:b}", "out_features", "__lora_out", "bias", 0);
	sp.fout = fout;
	sp.groups = EXPR_NONE;
	sp.kind = LORA_EMBEDDING;
	sp.no_dropout = 1;
	ob->mb->lora_hits++;
	return op_lora_build(ob, &sp);
}

static int
embedding_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x = ob_in(ob, 0);
	expr_id num, dim, dims[CM_MAX_RANK];

	if (x->dtype != CM_DT_I64)
		return ob_fail(ob, NULL, "an embedding needs an int64 input (token ids)");
	if (ob->mb->ft_force < 0 && json_object_get(ob->item, "num_embeddings") != NULL &&
	    json_object_get(ob->item, "embedding_dim") != NULL &&
	    cm_ft_lora_target(ob->mb->wl, "embedding", ob->mb->parent_rule, ob->inst_path))
		return embedding_lora(ob);
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
	if (ob_out_new(ob, x->rank + 1, dims, ob_autocast_f32(ob)) < 0)  /* rows of the fp32 table under autocast */
		return -1;
	ob_param_2d(ob, expr_mul(g, num, dim), num, dim);
	ob_save_input(ob, 0);   /* the indices, for the sparse weight gradient */
	op_io_bytes(ob, 0);
	ob->op.parallel = ob->m->tensors[ob->out].elems;
	return 0;
}

static const char *const linear_attrs[] = { "out_features", "bias", "tied", "linear_module", NULL };
static const char *const matmul_attrs[] = { "transpose_b", NULL };
static const char *const embedding_attrs[] = { "num_embeddings", "embedding_dim", NULL };

const struct op_rule op_rule_linear = { "linear", linear_attrs, 1, 1, CM_CLASS_GEMM, linear_build };
const struct op_rule op_rule_matmul = { "matmul", matmul_attrs, 2, 2, CM_CLASS_GEMM, matmul_build };
const struct op_rule op_rule_bmm = { "bmm", matmul_attrs, 2, 2, CM_CLASS_GEMM, matmul_build };
const struct op_rule op_rule_embedding = { "embedding", embedding_attrs, 1, 1, CM_CLASS_ELEMENTWISE, embedding_build };
