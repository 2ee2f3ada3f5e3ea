/*
 * op_rules.h - the operator rules (one file per family: op_conv.c,
 * op_linear.c, op_norm.c, op_activation.c, op_pool.c, op_shape.c,
 * op_merge.c, op_attention.c, op_rotary.c, op_mlp.c, op_param.c, op_rnn.c,
 * op_loss.c, op_pad.c, op_upsample.c, op_reduce.c, op_lora.c, op_dora.c) and the cost helpers
 * they share (private to costmodel/).
 */
#ifndef DN_OP_RULES_H
#define DN_OP_RULES_H

#include "op_build.h"

/* Sets forward/backward memory traffic from the inputs, the output and (when
 * with_params) the weights: backward reads and writes about twice as much. */
void op_io_bytes(struct op_build *ob, int with_params);

/* Attribute `name`'s dimension d of an input of `rank` dimensions, negative
 * ones from the end, into *out: 0, or -1 through ob_fail when out of range. */
int op_norm_dim(struct op_build *ob, const char *name, int64_t d, int rank, int *out);

/* Costs of an elementwise or normalization op over the output's elements:
 * `flops` FLOPs per element, parallel work = elements. */
void op_elementwise_costs(struct op_build *ob, int flops);

extern const struct op_rule op_rule_conv1d, op_rule_conv2d, op_rule_conv3d, op_rule_conv_transpose1d, op_rule_conv_transpose2d,
    op_rule_conv_transpose3d;
extern const struct op_rule op_rule_linear, op_rule_matmul, op_rule_bmm, op_rule_embedding;
extern const struct op_rule op_rule_batchnorm, op_rule_layernorm, op_rule_groupnorm,
    op_rule_rmsnorm;
extern const struct op_rule op_rule_leaky_relu, op_rule_elu, op_rule_softplus, op_rule_mish, op_rule_prelu;
extern const struct op_rule op_rule_relu, op_rule_relu6, op_rule_silu, op_rule_hardswish, op_rule_hardsigmoid,
    op_rule_gelu, op_rule_sigmoid, op_rule_tanh, op_rule_softmax, op_rule_dropout,
    op_rule_scale;
extern const struct op_rule op_rule_maxpool1d, op_rule_maxpool2d, op_rule_avgpool1d,
    op_rule_avgpool2d, op_rule_adaptive_avgpool2d, op_rule_adaptive_maxpool2d, op_rule_maxpool3d,
    op_rule_avgpool3d, op_rule_adaptive_avgpool3d, op_rule_adaptive_maxpool3d;
extern const struct op_rule op_rule_flatten, op_rule_reshape, op_rule_permute,
    op_rule_transpose, op_rule_contiguous, op_rule_identity, op_rule_zero, op_rule_slice;
extern const struct op_rule op_rule_add, op_rule_mul, op_rule_concat;
extern const struct op_rule op_rule_pad, op_rule_upsample;
extern const struct op_rule op_rule_mean, op_rule_sum, op_rule_max, op_rule_norm;
extern const struct op_rule op_rule_attention, op_rule_attention_core, op_rule_rotary, op_rule_swiglu;
extern const struct op_rule op_rule_parameter;
extern const struct op_rule op_rule_lstm, op_rule_gru, op_rule_rnn_state;
extern const struct op_rule op_rule_cross_entropy;
/* A layer with LoRA adapters (op_lora.c), built in place of the rule's
 * own: the base layer's rule (lora_A's too), lora_B's (NULL: the same),
 * their attributes (JSON objects the call takes over, which may name
 * "__lora_r", the rank, "__lora_out", fout, and "__lora_groups", groups: a
 * convolution's, EXPR_NONE otherwise), whether the base has a bias, the
 * base's kind, which decides DoRA's form (op_dora.c: peft's
 * DoraLinearLayer, _DoraConvNdLayer, DoraEmbeddingLayer), and whether
 * lora_dropout runs (not on an embedding: peft's lora.Embedding has the
 * layer and never calls it). Sets ob->out; 0 or -1. */
enum lora_kind { LORA_LINEAR, LORA_CONV, LORA_EMBEDDING };
struct lora_spec {
	const struct op_rule *rule, *rule_b;
	json_t *base, *a, *b;
	expr_id fout, groups;
	int bias;
	enum lora_kind kind;
	int no_dropout;
};
int op_lora_build(struct op_build *ob, struct lora_spec *sp);

/* Not in the registry: DoRA's part of a LoRA-adapted layer and a linear's
 * second F.linear with a dropout (op_lora.c runs them; model files cannot
 * name them). */
extern const struct op_rule op_rule_dora, op_rule_dora_refwd;

#endif
