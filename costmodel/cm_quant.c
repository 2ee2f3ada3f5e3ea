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
