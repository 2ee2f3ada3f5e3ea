/*
 * onnx_dim.h - one dimension or shape-tensor entry of an imported graph:
 * an exact integer, or an expression in the model format's language over
 * the hyperparameters that ONNX's symbolic dimensions became ("batch",
 * "(seq) * 4"). Arithmetic folds integers and the identities x*1, x+0, x/1,
 * so that the imported file stays readable. Strings live in the import's
 * arena.
 */
#ifndef DN_ONNX_DIM_H
#define DN_ONNX_DIM_H

#include <stdint.h>

#include "onnx_arena.h"

struct onnx_dim {
	const char *expr;   /* NULL: the integer v */
	int64_t v;
};

enum onnx_dim_op { ONNX_DIM_ADD, ONNX_DIM_SUB, ONNX_DIM_MUL, ONNX_DIM_DIV, ONNX_DIM_MOD, ONNX_DIM_MAX,
	ONNX_DIM_CDIV };

/* An integer dimension. */
struct onnx_dim onnx_dim_int(int64_t v);
/* A dimension given by an expression (a hyperparameter's name). */
struct onnx_dim onnx_dim_sym(const char *expr);
/* a OP b. Division is floor division (the model format's `/` on integers;
 * ONNX truncates, the same on the non-negative sizes it is used for);
 * ONNX_DIM_MAX and ONNX_DIM_CDIV (ceiling division) are the model format's
 * functions max(a, b) and ceil_div(a, b).
 * 0, or -1: out of memory, an integer overflow or a division by zero. */
int onnx_dim_arith(struct onnx_arena *ar, enum onnx_dim_op op, struct onnx_dim a, struct onnx_dim b,
    struct onnx_dim *out);
/* floor(in * s) for a scale s > 0: exact integer arithmetic when s * 2^k
 * is an integer for a k up to 10 (in * p / 2^k, as the cost model's
 * upsample computes it), else the integer or "floor((in) * s)". 0, or -1:
 * out of memory or an integer overflow. */
int onnx_dim_scaled(struct onnx_arena *ar, struct onnx_dim in, double s, struct onnx_dim *out);
/* The shortest decimal that reads back as the float32 f (1.3, not
 * 1.2999999523): the value a float32 constant of an exported graph had in
 * the PyTorch code, so that floor(in * scale) is PyTorch's size. */
double onnx_dim_float32_decimal(double f);
/* 1 when a and b are the same integer or the same expression text. */
int onnx_dim_same(struct onnx_dim a, struct onnx_dim b);
/* The dimension as JSON-ready text ("64" or "batch * 4") into the arena;
 * NULL when out of memory. */
const char *onnx_dim_text(struct onnx_arena *ar, struct onnx_dim d);

#endif
