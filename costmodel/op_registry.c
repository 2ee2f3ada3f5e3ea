/*
 * op_registry.c - the table of operator rules, looked up by the name used in
 * model files ("op": "conv2d"). Adding an operator: write its rule in an
 * op_*.c file, declare it in op_rules.h, list it here and in
 * docs/model-format.md and schemas/model.schema.json.
 */
#include "op_rules.h"

#include <string.h>

static const struct op_rule *const rules[] = {
	&op_rule_conv1d, &op_rule_conv2d, &op_rule_conv3d, &op_rule_conv_transpose1d, &op_rule_conv_transpose2d,
	&op_rule_conv_transpose3d,
	&op_rule_linear, &op_rule_matmul, &op_rule_bmm, &op_rule_embedding,
	&op_rule_batchnorm, &op_rule_layernorm, &op_rule_groupnorm, &op_rule_rmsnorm,
	&op_rule_relu, &op_rule_relu6, &op_rule_silu, &op_rule_hardswish, &op_rule_hardsigmoid,
	&op_rule_leaky_relu, &op_rule_elu, &op_rule_softplus, &op_rule_mish, &op_rule_prelu,
	&op_rule_gelu, &op_rule_sigmoid, &op_rule_tanh, &op_rule_softmax,
	&op_rule_dropout, &op_rule_scale,
	&op_rule_maxpool1d, &op_rule_maxpool2d, &op_rule_avgpool1d, &op_rule_avgpool2d,
	&op_rule_adaptive_avgpool2d, &op_rule_adaptive_maxpool2d, &op_rule_maxpool3d, &op_rule_avgpool3d,
	&op_rule_adaptive_avgpool3d, &op_rule_adaptive_maxpool3d,
	&op_rule_flatten, &op_rule_reshape, &op_rule_permute, &op_rule_transpose,
	&op_rule_contiguous, &op_rule_identity, &op_rule_zero, &op_rule_slice, &op_rule_pad,
	&op_rule_upsample, &op_rule_mean, &op_rule_sum, &op_rule_max, &op_rule_norm,
	&op_rule_add, &op_rule_mul, &op_rule_concat, &op_rule_parameter,
	&op_rule_attention, &op_rule_attention_core, &op_rule_rotary, &op_rule_swiglu, &op_rule_lstm, &op_rule_gru,
	&op_rule_rnn_state,
	&op_rule_cross_entropy,
};

#define NRULES (sizeof rules / sizeof rules[0])

const struct op_rule *
op_rule_find(const char *name)
{
	for (size_t i = 0; i < NRULES; i++)
		if (strcmp(rules[i]->name, name) == 0)
			return rules[i];
	return NULL;
}

int
op_rule_count(void)
{
	return (int)NRULES;
}

const char *
op_rule_name(int i)
{
	return i >= 0 && (size_t)i < NRULES ? rules[i]->name : NULL;
}
