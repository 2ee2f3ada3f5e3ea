/*
 * cm_workload.c - the workload choices that depend on the device: which
 * attention kernel a layer runs (cm_attention_*) and the device's compute
 * capability that decides it (cm_device_cc).
 *
 * PyTorch's scaled_dot_product_attention tries its kernels in the order
 * flash, memory-efficient, math and takes the first whose checks pass
 * (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, select_sdp_backend,
 * PyTorch 2.2 and later, the FlashAttention-2 kernels):
 *   flash          compute capability 8.0 .. 9.x, fp16 or bf16 inputs, head
 *                  dimension <= 256, no arbitrary attention mask (a causal
 *                  mask is an is_causal flag)
 *   mem_efficient  compute capability >= 5.0, fp32, fp16, or bf16 on 8.0+,
 *                  arbitrary masks allowed
 * Hugging Face models built with attn_implementation="sdpa" (the default
 * since transformers 4.36 when torch >= 2.1.1) pass no mask when the batch
 * has no padding (BERT: _prepare_4d_attention_mask_for_sdpa drops an
 * all-ones mask; GPT-2: is_causal=True), so on an Ampere or newer GPU in
 * fp16/bf16 (or autocast, whose attention inputs are fp16/bf16) the flash
 * kernel runs; elsewhere the memory-efficient one. A head dimension above
 * 256 is not considered here (no catalogued template has one).
 */
#include "costmodel.h"

#include <string.h>
#include <strings.h>

int
cm_attention_parse(const char *s, enum cm_attention *out)
{
	static const struct { const char *name; enum cm_attention a; } t[] = {
		{ "sdpa", CM_ATTN_SDPA }, { "eager", CM_ATTN_EAGER }, { "math", CM_ATTN_MATH },
		{ "mem_efficient", CM_ATTN_MEM_EFFICIENT }, { "efficient", CM_ATTN_MEM_EFFICIENT },
		{ "flash", CM_ATTN_FLASH }, { "flash_attention_2", CM_ATTN_FLASH },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
		if (strcasecmp(s, t[i].name) == 0) {
			*out = t[i].a;
			return 0;
		}
	return -1;
}

const char *
cm_attention_name(enum cm_attention a)
{
	switch (a) {
	case CM_ATTN_SDPA: return "sdpa";
	case CM_ATTN_EAGER: return "eager";
	case CM_ATTN_MATH: return "math";
	case CM_ATTN_MEM_EFFICIENT: return "mem_efficient";
	case CM_ATTN_FLASH: return "flash";
	}
	return "?";
}

int
cm_device_cc(const struct cm_device *dev)
{
	if (dev->cc_major > 0)
		return dev->cc_major * 10 + dev->cc_minor;
	/* bf16 arithmetic arrived with sm80 (Ampere); the catalog lists 0 for
	 * every older chip */
	return dev->peak_bf16 > 0 ? 80 : 70;
}

enum cm_attention
cm_attention_resolve(const struct cm_workload *wl, const struct cm_device *dev)
{
	int half = wl->precision != CM_PREC_FP32;

	if (wl->attention != CM_ATTN_SDPA)
		return wl->attention;
	return (half && cm_device_cc(dev) >= 80) ? CM_ATTN_FLASH : CM_ATTN_MEM_EFFICIENT;
}
