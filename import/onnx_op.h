/*
 * onnx_op.h - what the translations of ONNX operators share (private to
 * import/): onnx_op_util.c reads a node's inputs and attributes, does the
 * shape arithmetic on values (SYM entries, broadcasting, reshape targets)
 * and appends layers; onnx_op_shape.c translates the shape and tensor
 * plumbing (Shape, Gather, Concat, Slice, Reshape, ...), onnx_op_layer.c the
 * operators that compute (Conv, Gemm/MatMul, pooling, normalisation,
 * elementwise), onnx_op_pad.c padding, onnx_op_resize.c Resize and Upsample,
 * onnx_ops.c dispatches by op type. Every onnx_op_* that
 * returns int returns 0, or -1 with im->err set; NODE(im) is the node being
 * translated.
 */
#ifndef DN_ONNX_OP_H
#define DN_ONNX_OP_H

#include "onnx_import_priv.h"

#define NODE(im) (&(im)->m->graph.nodes[(im)->node])
#define BIG ((int64_t)1 << 62) /* an "until the end" index (INT64_MAX in exports) */

struct onnx_val * onnx_op_in(struct onnx_imp *im, int k);
struct onnx_val * onnx_op_out(struct onnx_imp *im, int k);
int64_t onnx_op_attr_i(struct onnx_imp *im, const char *name, int64_t def);
int onnx_op_attr_ints(struct onnx_imp *im, const char *name, int64_t *v, int max);
int onnx_op_as_sym(struct onnx_imp *im, struct onnx_val *v);
int onnx_op_sym_of(struct onnx_imp *im, struct onnx_val *v);
int onnx_op_scalar(const struct onnx_val *v, double *x);
/* The values of v as doubles, following torch's constant plumbing back
 * through producers not translated yet: a tensor from the file, a shape
 * tensor of integers, a Constant node (value, value_float(s), value_int(s)),
 * Concat, Cast, Identity, (Un)Squeeze, Reshape. Their count (at most max),
 * or -1 when they are not known when importing. */
int onnx_op_values(struct onnx_imp *im, const struct onnx_val *v, double *out, int max);
int onnx_op_new_sym(struct onnx_imp *im, struct onnx_val *o, int n, int rank);
/* Mul or Div (op) of shape entries (a SYM, or sizes already scaled) by a
 * float scalar constant above 0: o the scaled sizes, DERIVED with the
 * entries and their scale times (or over) it (onnx_val.scale). 1 done, 0
 * not such a pair (a float over sizes, a scale not above 0: the caller's
 * unknown values). onnx_op_shape.c */
int onnx_op_sym_scale(const char *op, struct onnx_val *a, struct onnx_val *b, struct onnx_val *o);
/* Floor of shape entries (or a Cast of them to an integer type): scaled
 * sizes (DERIVED, scale above 0) become the SYM floor(e[i] * scale), a SYM
 * stays as it is. 0 or -1. */
int onnx_op_sym_floor(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
void onnx_op_copy_shape(struct onnx_val *o, const struct onnx_val *a);
int onnx_op_broadcast(struct onnx_val *o, const struct onnx_val *a, const struct onnx_val *b);
const char * onnx_op_txt(struct onnx_imp *im, struct onnx_dim d);
json_t * onnx_op_dimj(struct onnx_imp *im, struct onnx_dim d);
json_t * onnx_op_emit(struct onnx_imp *im, const char *op, struct onnx_val *o, const struct onnx_val *a, const struct onnx_val *b);
struct onnx_val * onnx_op_param_as_data(struct onnx_imp *im, const struct onnx_val *c, const struct onnx_val *shape);
int onnx_op_axis_norm(struct onnx_imp *im, int64_t axis, int rank, int *out_axis);
void onnx_op_alias(struct onnx_val *o, const struct onnx_val *x);
int onnx_op_reshape_shape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *s, int n, int allowzero, int layer);
int onnx_op_reshape_to(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *s, int n, int allowzero);
int onnx_op_slice_axis(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, int axis, struct onnx_dim start, struct onnx_dim end, const char *name);
/* Squeeze/Unsqueeze/ReduceMean axes (attribute or input 1) into axes: their
 * count, -1 when absent, -2 (with im->err) when not constant. */
int onnx_op_axes_of(struct onnx_imp *im, int64_t *axes, int max);
int onnx_op_shape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_sym_binary(struct onnx_imp *im, const char *op, struct onnx_val *a, struct onnx_val *b, struct onnx_val *o);
int onnx_op_reshape(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_unsqueeze(struct onnx_imp *im, int squeeze, struct onnx_val *x, struct onnx_val *o);
int onnx_op_transpose(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_slice(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_gather(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_concat(struct onnx_imp *im, struct onnx_val *o);
int onnx_op_split(struct onnx_imp *im, struct onnx_val *x);
int onnx_op_constant(struct onnx_imp *im, struct onnx_val *o);
int onnx_op_constant_of_shape(struct onnx_imp *im, struct onnx_val *s, struct onnx_val *o);
int onnx_op_expand(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_range(struct onnx_imp *im, struct onnx_val *o);
int onnx_op_where(struct onnx_imp *im, struct onnx_val *o);
int onnx_op_conv(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_pool(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o);
int onnx_op_linear(struct onnx_imp *im, struct onnx_val *x, const struct onnx_val *w, int trans, int has_bias, struct onnx_val *o);
int onnx_op_matmul(struct onnx_imp *im, struct onnx_val *a, struct onnx_val *o);
int onnx_op_gemm(struct onnx_imp *im, struct onnx_val *a, struct onnx_val *o);
int onnx_op_binary(struct onnx_imp *im, const char *op, struct onnx_val *o);
int onnx_op_simple(struct onnx_imp *im, const char *op, struct onnx_val *x, struct onnx_val *o);
int onnx_op_reduce(struct onnx_imp *im, const char *how, struct onnx_val *x, struct onnx_val *o);
int onnx_op_prelu(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_instance_norm(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_depth_to_space(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
int onnx_op_global_pool(struct onnx_imp *im, int avg, struct onnx_val *x, struct onnx_val *o);
int onnx_op_fused(struct onnx_imp *im, int i, struct onnx_val *o);
double onnx_op_dropout_p(struct onnx_imp *im, int i);
int onnx_op_attention(struct onnx_imp *im, int i, struct onnx_val *o);
int onnx_op_conv_transpose(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);
/* A `pad` layer (onnx_op_pad.c): x padded by b[k] at the start and e[k] at
 * the end of each of its axes (x->rank entries each) into o, which becomes
 * DATA of the padded shape. */
int onnx_op_pad_axes(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o, const struct onnx_dim *b,
    const struct onnx_dim *e);
/* Rank-2 shape tensors (onnx_op_sym2.c): x reshaped to the two entries
 * of s, sliced by constant bounds on one axis, transposed. */
int onnx_op_sym2_reshape(struct onnx_imp *im, const struct onnx_val *x, const struct onnx_val *s, struct onnx_val *o);
int onnx_op_sym2_slice(struct onnx_imp *im, const struct onnx_val *x, const struct onnx_val *st,
    const struct onnx_val *en, const struct onnx_val *ax, const struct onnx_val *sp, struct onnx_val *o);
int onnx_op_sym2_transpose(struct onnx_imp *im, const struct onnx_val *x, struct onnx_val *o);
/* Resize, and Upsample when `upsample` (onnx_op_resize.c): an `upsample` layer. */
int onnx_op_resize(struct onnx_imp *im, int upsample, struct onnx_val *x, struct onnx_val *o);
/* LSTM, and GRU when `gru` (onnx_op_rnn.c): an `lstm` or `gru` layer, torch's
 * stacked layers as one. */
int onnx_op_rnn(struct onnx_imp *im, int gru, struct onnx_val *x, struct onnx_val *o);
/* The Pad operator (constant mode). */
int onnx_op_pad(struct onnx_imp *im, struct onnx_val *x, struct onnx_val *o);

#endif
