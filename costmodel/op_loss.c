/*
 * op_loss.c - cross-entropy on logits [N, C], [N, L, C] or [N, C, H, W]: log_softmax then
 * the negative log-likelihood, as F.cross_entropy runs it. Autograd keeps the
 * log-probabilities (fp32 under mixed precision: autocast runs log_softmax
 * in fp32), and with softmax_saves output_and_input (PyTorch <= 1.10) the
 * logits too (ob_save_softmax_input). The output is a scalar. Backward holds
 * one more logits-sized fp32 tensor: the log-probabilities' gradient.
 */
#include "op_rules.h"

static int
cross_entropy_build(struct op_build *ob)
{
	struct expr_graph *g = &ob->m->g;
	const struct cm_tensor *x;
	expr_id one = expr_int(g, 1);

	if (ob_need_rank(ob, 0, 2, 5) != 0)
		return -1;
	x = ob_in(ob, 0);
	if (x->dtype == CM_DT_I64)
		return ob_fail(ob, NULL, "needs float logits");
	if (ob_out_new(ob, 1, &one, CM_DT_F32) < 0)
		return -1;
	ob_save_new(ob, ob_bytes(ob, x->elems, CM_DT_F32));
	ob_save_softmax_input(ob, 0);      /* PyTorch <= 1.10's log_softmax kept the logits too */
	/* backward: nll_loss_backward writes the gradient of the log-probabilities
	 * into a new zeroed fp32 tensor of their size, which log_softmax_backward
	 * reads while writing the logits' gradient: beside the kept
	 * log-probabilities and the result, one more logits-sized fp32 tensor
	 * (measured: GPT-2's 50257-way loss on an H200,
	 * tests/reference/h200_transformer_train_peak.csv) */
	ob->op.ws_bwd = ob_bytes(ob, x->elems, CM_DT_F32);
	ob->op.flops_other = expr_mul(g, x->elems, expr_int(g, 5));
	ob->op.parallel = x->elems;
	ob->op.fwd_bytes = expr_add(g, ob_bytes(ob, x->elems, (enum cm_dtype)x->dtype),
	    ob_bytes(ob, x->elems, CM_DT_F32));
	ob->op.bwd_bytes = expr_mul(g, ob->op.fwd_bytes, expr_int(g, 2));
	ob->op.kernels_fwd = 2;
	ob->op.kernels_bwd = 2;
	return 0;
}

static const char *const ce_attrs[] = { NULL };

const struct op_rule op_rule_cross_entropy = { "cross_entropy", ce_attrs, 1, 1, CM_CLASS_REDUCTION, cross_entropy_build };
