/*
 * cm_macs.c - the MACs conventions: how the "macs" metric (and "flops",
 * twice it) counts one operator, and the conventions' names.
 *
 *   torchvision  multiply-accumulates of conv, linear, matmul, attention and
 *                recurrent layers, no bias (op->macs, as the rules build it).
 *   nb201        NAS-Bench-201's counter (xautodl get_model_infos): the
 *                same plus one per output element of a biased conv or
 *                linear (op->bias_adds).
 *   fvcore       FlopCountAnalysis's default handles (facebookresearch/
 *                fvcore, fvcore/nn/flop_count.py _DEFAULT_SUPPORTED_OPS with
 *                the formulas of fvcore/nn/jit_handles.py), one "flop" per
 *                MAC:
 *                  aten::_convolution   conv_flop_jit: batch x prod(weight
 *                                       shape) x output (transposed: input)
 *                                       spatial size, no bias = op->macs
 *                  aten::linear, addmm, matmul, mm, bmm, einsum: the product's
 *                                       MACs, no bias = op->macs
 *                  aten::batch_norm     batchnorm_flop_jit: in eval mode 1 per
 *                                       input element, 2 with affine weights;
 *                                       in training mode norm_flop_counter:
 *                                       4 per input element, 5 with affine
 *                  aten::layer_norm, aten::group_norm: norm_flop_counter, 4
 *                                       per input element, 5 with affine
 *                  aten::adaptive_avg_pool2d: elementwise_flop_counter(1, 0),
 *                                       1 per INPUT element
 *                  aten::upsample_nearest2d: elementwise_flop_counter(0, 1),
 *                                       1 per OUTPUT element; and
 *                  aten::upsample_bilinear2d: (0, 4), 4 per output element
 *                                       (op->aux_macs of `upsample`, op_upsample.c;
 *                                       the 1-d, 3-d and bicubic kernels have no
 *                                       handle and count 0)
 *                and nothing for every other aten op: relu and the other
 *                activations, add, mul, softmax, dropout, max/avg pooling
 *                (not adaptive), embedding, aten::lstm/gru, rms_norm (or its
 *                pow/mean/rsqrt/mul decomposition) and
 *                aten::scaled_dot_product_attention (so a fused attention
 *                kernel counts 0; eager attention's matmuls count). Small
 *                products inside an operator that the other conventions
 *                take as elementwise count (op->aux_macs: rotary's
 *                frequency table, torch.matmul in LlamaRotaryEmbedding;
 *                upsample's handles above).
 *                Rules not in the lists above count 0, so that an operator
 *                added later is not counted by accident. SDPA's math
 *                path, built here from matmuls (op->inside_sdpa), counts 0
 *                too: the trace holds one aten::scaled_dot_product_attention
 *                whatever kernel runs inside. Not modelled: fvcore handles
 *                for operators dnnsat has no rule for (instance_norm,
 *                grid_sampler).
 *
 * Invariant: every convention counts conv, linear, matmul and bmm MACs
 * alike; they differ only in what they add.
 */
#include "cm_macs.h"
#include "op_build.h"

#include <string.h>
#include <strings.h>

int
cm_macs_convention_parse(const char *s, enum cm_macs_convention *out)
{
	if (strcasecmp(s, "torchvision") == 0)
		*out = CM_MACS_TORCHVISION;
	else if (strcasecmp(s, "nb201") == 0 || strcasecmp(s, "nas-bench-201") == 0)
		*out = CM_MACS_NB201;
	else if (strcasecmp(s, "fvcore") == 0)
		*out = CM_MACS_FVCORE;
	else
		return -1;
	return 0;
}

const char *
cm_macs_convention_name(enum cm_macs_convention c)
{
	switch (c) {
	case CM_MACS_NB201:  return "nb201";
	case CM_MACS_FVCORE: return "fvcore";
	default:             return "torchvision";
	}
}

/* fvcore's count per element of the operator's first input, for the rules
 * its normalisation and pooling handles cover (see the top); 0 for others. */
static int
fvcore_per_input_elem(const struct cm_op *op, int training)
{
	const char *r = op->rule->name;
	int affine = op->nparam_tensors > 0;

	if (strcmp(r, "batchnorm") == 0)
		return training ? (affine ? 5 : 4) : (affine ? 2 : 1);
	if (strcmp(r, "layernorm") == 0 || strcmp(r, "groupnorm") == 0)
		return affine ? 5 : 4;
	if (strcmp(r, "adaptive_avgpool2d") == 0)
		return 1;
	return 0;
}

/* Whether fvcore counts the rule's MACs (conv_flop_jit, linear_flop_jit,
 * matmul_flop_jit, bmm_flop_jit). */
static int
fvcore_counts_macs(const struct cm_op *op)
{
	static const char *const rules[] = { "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d",
		"linear", "matmul", "bmm", NULL };

	if (op->inside_sdpa)
		return 0;
	for (int i = 0; rules[i]; i++)
		if (strcmp(op->rule->name, rules[i]) == 0)
			return 1;
	return 0;
}

static expr_id
fvcore_op(struct cm_graph *gr, const struct cm_op *op, int training)
{
	struct expr_graph *g = &gr->g;
	int per = fvcore_per_input_elem(op, training);

	if (per > 0 && op->in0 >= 0)
		return expr_mul(g, gr->tensors[op->in0].elems, expr_int(g, per));
	return fvcore_counts_macs(op) ? op->macs : op->aux_macs;
}

expr_id
cm_macs_op(struct cm_graph *gr, const struct cm_op *op, int c, int training)
{
	switch (c) {
	case CM_MACS_NB201:  return expr_add(&gr->g, op->macs, op->bias_adds);
	case CM_MACS_FVCORE: return fvcore_op(gr, op, training);
	default:             return op->macs;
	}
}
