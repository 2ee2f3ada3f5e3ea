/*
 * cm_pytorch.c - PyTorch's version as a workload preset (cm_pytorch_*).
 * A user knows which PyTorch a run uses, not which of its defaults decide
 * memory; "pytorch": "1.13" sets those defaults the way that release had
 * them, and any of them given explicitly wins. What changed, and when:
 *
 *   1.7   TF32: on Ampere and newer, cuDNN convolutions and matrix
 *         products in fp32 may use TF32 tensor cores
 *         (torch.backends.cudnn.allow_tf32 and
 *         torch.backends.cuda.matmul.allow_tf32, both on); before it
 *         neither does (tf32 off, cudnn_tf32 off)
 *   1.11  softmax and log_softmax stop keeping their input for the
 *         backward (derivatives.yaml's formulas named `self` up to 1.10;
 *         pytorch/pytorch issue 64000, pull 66018): softmax_saves
 *         output_and_input before it
 *   1.12  matrix products stop taking TF32 by default
 *         (torch.backends.cuda.matmul.allow_tf32 off; cuDNN's stays on:
 *         PyTorch's notes, "TensorFloat-32 (TF32) on Ampere devices"):
 *         tf32 on from 1.7 to 1.11
 *   2.0   Optimizer.zero_grad() and Module.zero_grad() default to
 *         set_to_none=True (zero_grad zeros before it), torch.optim takes
 *         the foreach implementation on CUDA by default (optimizer_impl
 *         for_loop before it), and scaled_dot_product_attention appears:
 *         before it attention is the model's own eager code, and an SDPA
 *         kernel is refused (PyTorch 2.0 release notes)
 *
 * Versions are kept as major * 100 + minor (1.13 -> 113).
 */
#include "costmodel.h"

#include <stdlib.h>

/* the releases above */
enum { TF32_FLAGS = 107, SOFTMAX_OUTPUT_ONLY = 111, MATMUL_TF32_OFF = 112, SET_TO_NONE_FOREACH_SDPA = 200 };

int
cm_pytorch_parse(const char *s)
{
	char *end;
	long major, minor;

	if (s == NULL || *s < '0' || *s > '9')
		return -1;
	major = strtol(s, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return -1;
	{
		const char *m = end + 1;
		minor = strtol(m, &end, 10);
		if (end - m > 2)                /* MAJOR.MINOR: at most two digits */
			return -1;
	}
	if (*end == '.') {                  /* a patch release: 1.10.2 */
		if (end[1] < '0' || end[1] > '9')
			return -1;
		(void)strtol(end + 1, &end, 10);
	}
	if (*end != '\0' || major < 1 || major > 9)     /* minor: two digits at most, above */
		return -1;
	return (int)(major * 100 + minor);
}

void
cm_pytorch_apply(int version, struct cm_workload *wl)
{
	wl->pytorch = version;
	wl->tf32 = version >= TF32_FLAGS && version < MATMUL_TF32_OFF;
	wl->no_cudnn_tf32 = version < TF32_FLAGS;
	wl->softmax_keeps_input = version < SOFTMAX_OUTPUT_ONLY;
	wl->keep_grads = version < SET_TO_NONE_FOREACH_SDPA;
	wl->optimizer_impl = version < SET_TO_NONE_FOREACH_SDPA ? CM_OPT_IMPL_FOR_LOOP : CM_OPT_IMPL_FOREACH;
	wl->attention = version < SET_TO_NONE_FOREACH_SDPA ? CM_ATTN_EAGER : CM_ATTN_SDPA;
}

int
cm_pytorch_check(const struct cm_workload *wl, const char *attention_path, struct dn_error *err)
{
	if (wl->pytorch == 0 || wl->pytorch >= SET_TO_NONE_FOREACH_SDPA || wl->attention == CM_ATTN_EAGER)
		return 0;
	return dn_error_set(err, DN_EINVAL, attention_path,
	    "\"%s\" needs PyTorch 2.0 or later (scaled_dot_product_attention), and the workload's pytorch "
	    "is %d.%d: use eager", cm_attention_name(wl->attention), wl->pytorch / 100, wl->pytorch % 100);
}
