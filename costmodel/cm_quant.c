/*
 * cm_quant.c - bitsandbytes' quantized base weights as a workload setting
 * (cm_quant_*, enum cm_quant in costmodel.h).
 *
 * What Hugging Face's BitsAndBytesConfig(load_in_4bit=True, ...) makes of
 * a model, from bitsandbytes' (0.45 and later) functional.py
 * (quantize_4bit, dequantize_4bit) and nn/modules.py (Linear4bit), and
 * transformers' replace_with_bnb_linear / get_keys_to_not_convert:
 *
 *   which linears  every nn.Linear but the output layer: the modules of
 *                  tied weights when the model ties any (GPT-2's lm_head
 *                  is the embedding's weight: not a linear of its own
 *                  here), else the output embedding or the last module
 *                  with parameters (LLaMA's lm_head, BertModel's pooler)
 *   storage        the weight of n values packed two a byte, (n + 1) / 2
 *                  uint8; a QuantState with an fp32 scale (absmax) per
 *                  block of 64 values and the 16-value code of the type
 *                  (a tensor of its own per layer); with double
 *                  quantization (bnb_4bit_use_double_quant) the scales,
 *                  less their mean (an fp32 scalar), are themselves
 *                  quantized blockwise to uint8, one fp32 scale per 256
 *                  (the 256-value dynamic code they use is one tensor
 *                  shared by every layer); the bias stays as it was
 *   each call      Linear4bit casts its input to the compute dtype and
 *                  the result back to the input's dtype; MatMul4Bit
 *                  dequantizes the whole weight to the compute dtype (a
 *                  temporary; with double quantization the scales first,
 *                  to an fp32 temporary) and runs F.linear; for backward
 *                  it keeps only the packed weight (nothing of the input:
 *                  the weight takes no gradient) and dequantizes it again
 *                  for the input's gradient
 *
 * The compute dtype here is the workload's (fp16 or bf16 under mixed
 * precision, fp32 otherwise, bitsandbytes' default).
 *
 * With load_in_8bit=True (LLM.int8(), mode "int8": Linear8bitLt with
 * has_fp16_weights=False, llm_int8_threshold 6.0), the same linears:
 *
 *   storage        Int8Params: the weight as int8 (CB, a byte a value) and
 *                  an fp32 scale per output row (SCB)
 *   each call      MatMul8bitLt (autograd/_functions.py, backends/cuda/
 *                  ops.py): the input quantized per row to int8 (its
 *                  outlier columns, |x| >= 6, multiplied apart in fp16),
 *                  the int8 GEMM dequantized to the input's dtype; for
 *                  backward it keeps the input (where it needs a
 *                  gradient) and dequantizes the weight again
 *
 * The model builder (op_linear.c) marks the quantized linears, mem_plan.c
 * sizes their storage. Mode names are Lightning's BitsandbytesPrecision
 * modes.
 */
#include "costmodel.h"

#include <string.h>

static const char *const names[] = { "", "nf4", "nf4-dq", "fp4", "fp4-dq", "int8" };

int
cm_quant_parse(const char *name, uint8_t *q)
{
	for (int i = 1; i < (int)(sizeof names / sizeof names[0]); i++)
		if (strcmp(name, names[i]) == 0) {
			*q = (uint8_t)i;
			return 0;
		}
	/* Lightning's sixth mode: Linear8bitLt keeps the trainable weight and
	 * its int8 copy (state.CB, re-quantized whenever the weight has no
	 * gradient yet), saves the input's column-wise int8 copy for the
	 * weight's int8 gradient; Lightning's wrapper replaces the weight's
	 * data by the int8 copy at load. Told apart from a typo. */
	return strcmp(name, "int8-training") == 0 ? -2 : -1;
}

const char *
cm_quant_name(int q)
{
	return q > 0 && q < (int)(sizeof names / sizeof names[0]) ? names[q] : "";
}

int
cm_quant_double(int q)
{
	return q == CM_QUANT_NF4_DQ || q == CM_QUANT_FP4_DQ;
}

int
cm_quant_bits(int q)
{
	return q == CM_QUANT_NONE ? 0 : q == CM_QUANT_INT8 ? 8 : 4;
}

int
cm_quant_searched(const struct cm_finetune *ft)
{
	const struct cm_quant_search *qs = &ft->qs;

	return qs->hp > 0 || qs->l4_hp > 0 || qs->l8_hp > 0 || qs->dq_hp > 0 || qs->type_hp > 0;
}

int
cm_quant_alts(struct expr_graph *g, const struct cm_finetune *ft, int *quants, expr_id *conds,
    expr_id *conflict)
{
	const struct cm_quant_search *qs = &ft->qs;
	int n = 0, q = ft->quant;

	*conflict = expr_int(g, 0);
	if (qs->hp > 0) {
		expr_id v = expr_var(g, qs->hp - 1);
		for (int j = 0; j < qs->nchoices && j < CM_QUANT_MAX_CHOICES; j++)
			cm_alt_add(g, qs->choices[j], expr_eq(g, v, expr_int(g, j)), &n, quants, conds);
		return n;
	}
	if (cm_quant_searched(ft)) {
		/* BitsAndBytesConfig: load_in_4bit picks Linear4bit of
		 * bnb_4bit_quant_type (default "fp4") with or without
		 * bnb_4bit_use_double_quant (default False); load_in_8bit
		 * Linear8bitLt; both is refused ("load_in_4bit and load_in_8bit
		 * are both True, but only one can be used at the same time") */
		expr_id l4 = cm_flag_on(g, qs->l4_hp, qs->l4_on, cm_quant_bits(q) == 4);
		expr_id l8 = cm_flag_on(g, qs->l8_hp, qs->l8_on, q == CM_QUANT_INT8);
		expr_id dq = cm_flag_on(g, qs->dq_hp, qs->dq_on, cm_quant_double(q));
		expr_id nf4 = expr_int(g, q == CM_QUANT_NF4 || q == CM_QUANT_NF4_DQ), four;
		if (qs->type_hp > 0) {
			nf4 = expr_int(g, 0);
			for (int j = 0; j < 8; j++)
				if (qs->type_nf4 & (1u << j))
					nf4 = expr_or(g, nf4, expr_eq(g, expr_var(g, qs->type_hp - 1), expr_int(g, j)));
		}
		four = expr_and(g, l4, expr_not(g, l8));
		cm_alt_add(g, CM_QUANT_NONE, expr_and(g, expr_not(g, l4), expr_not(g, l8)), &n, quants, conds);
		cm_alt_add(g, CM_QUANT_NF4, expr_and(g, four, expr_and(g, nf4, expr_not(g, dq))), &n, quants, conds);
		cm_alt_add(g, CM_QUANT_NF4_DQ, expr_and(g, four, expr_and(g, nf4, dq)), &n, quants, conds);
		cm_alt_add(g, CM_QUANT_FP4, expr_and(g, four, expr_and(g, expr_not(g, nf4), expr_not(g, dq))), &n, quants,
		    conds);
		cm_alt_add(g, CM_QUANT_FP4_DQ, expr_and(g, four, expr_and(g, expr_not(g, nf4), dq)), &n, quants, conds);
		cm_alt_add(g, CM_QUANT_INT8, expr_and(g, l8, expr_not(g, l4)), &n, quants, conds);
		*conflict = expr_and(g, l4, l8);
		return n;
	}
	quants[0] = q;
	conds[0] = expr_int(g, 1);
	return 1;
}
