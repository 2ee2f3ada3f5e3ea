/*
 * onnx_dim.c - integer-or-expression dimensions (see onnx_dim.h). An
 * expression operand that is not a bare name or number is parenthesised,
 * so the text always parses as the arithmetic that built it; max and
 * ceil_div are written as the model format's functions. A dimension times
 * a real scale, floored (an upsampling's size), stays integer arithmetic
 * where the scale is dyadic (2, 1.5, 0.75).
 */
#include "onnx_dim.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct onnx_dim
onnx_dim_int(int64_t v)
{
	struct onnx_dim d = { NULL, v };
	return d;
}

struct onnx_dim
onnx_dim_sym(const char *expr)
{
	struct onnx_dim d = { expr, 0 };
	return d;
}

/* 1 for a name, a number or one function call ("max(a, b)"): text that
 * binds tighter than any operator. */
static int
is_atom(const char *s)
{
	const char *p = s;
	int depth = 0;

	while (isalnum((unsigned char)*p) || *p == '_')
		p++;
	if (*p == '\0')
		return 1;
	if (p == s || *p != '(')
		return 0;
	for (; *p; p++) {
		depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
		if (depth == 0)
			return p[1] == '\0';
	}
	return 0;
}

static const char *
operand(struct onnx_arena *ar, struct onnx_dim d)
{
	if (d.expr == NULL)
		return d.v < 0 ? onnx_arena_printf(ar, "(%lld)", (long long)d.v) :
		    onnx_arena_printf(ar, "%lld", (long long)d.v);
	return is_atom(d.expr) ? d.expr : onnx_arena_printf(ar, "(%s)", d.expr);
}

static int
int_arith(enum onnx_dim_op op, int64_t a, int64_t b, int64_t *out)
{
	switch (op) {
	case ONNX_DIM_ADD: return __builtin_add_overflow(a, b, out) ? -1 : 0;
	case ONNX_DIM_SUB: return __builtin_sub_overflow(a, b, out) ? -1 : 0;
	case ONNX_DIM_MUL: return __builtin_mul_overflow(a, b, out) ? -1 : 0;
	case ONNX_DIM_MAX: *out = a > b ? a : b; return 0;
	case ONNX_DIM_CDIV:
		/* ceil(a / b) = -floor(-a / b) */
		if (a == INT64_MIN || int_arith(ONNX_DIM_DIV, -a, b, out) < 0)
			return -1;
		*out = -*out;
		return 0;
	case ONNX_DIM_DIV:
	case ONNX_DIM_MOD:
		if (b == 0 || (a == INT64_MIN && b == -1))
			return -1;
		if (op == ONNX_DIM_DIV) {
			int64_t q = a / b;
			*out = (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
		} else {
			int64_t r = a % b;
			*out = (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
		}
		return 0;
	}
	return -1;
}

int
onnx_dim_arith(struct onnx_arena *ar, enum onnx_dim_op op, struct onnx_dim a, struct onnx_dim b,
    struct onnx_dim *out)
{
	static const char *const sym[] = { "+", "-", "*", "/", "%", "max", "ceil_div" };
	const char *x, *y;

	if (a.expr == NULL && b.expr == NULL) {
		out->expr = NULL;
		return int_arith(op, a.v, b.v, &out->v);
	}
	if (b.expr == NULL && ((op == ONNX_DIM_ADD || op == ONNX_DIM_SUB) && b.v == 0)) {
		*out = a;
		return 0;
	}
	if (b.expr == NULL && (op == ONNX_DIM_MUL || op == ONNX_DIM_DIV || op == ONNX_DIM_CDIV) && b.v == 1) {
		*out = a;
		return 0;
	}
	if (a.expr == NULL && ((op == ONNX_DIM_ADD && a.v == 0) || (op == ONNX_DIM_MUL && a.v == 1))) {
		*out = b;
		return 0;
	}
	if (b.expr == NULL && b.v == 0 && (op == ONNX_DIM_DIV || op == ONNX_DIM_MOD || op == ONNX_DIM_CDIV))
		return -1;
	if ((op == ONNX_DIM_SUB && onnx_dim_same(a, b))) {
		*out = onnx_dim_int(0);
		return 0;
	}
	if (op == ONNX_DIM_MAX && onnx_dim_same(a, b)) {
		*out = a;
		return 0;
	}
	if ((op == ONNX_DIM_DIV || op == ONNX_DIM_CDIV) && onnx_dim_same(a, b)) {
		*out = onnx_dim_int(1);
		return 0;
	}
	x = operand(ar, a);
	y = operand(ar, b);
	if (x == NULL || y == NULL)
		return -1;
	if (op == ONNX_DIM_MAX || op == ONNX_DIM_CDIV)
		out->expr = onnx_arena_printf(ar, "%s(%s, %s)", sym[op], x, y);
	else
		out->expr = onnx_arena_printf(ar, "%s %s %s", x, sym[op], y);
	out->v = 0;
	return out->expr == NULL ? -1 : 0;
}

int
onnx_dim_same(struct onnx_dim a, struct onnx_dim b)
{
	if (a.expr == NULL || b.expr == NULL)
		return a.expr == NULL && b.expr == NULL && a.v == b.v;
	return strcmp(a.expr, b.expr) == 0;
}

const char *
onnx_dim_text(struct onnx_arena *ar, struct onnx_dim d)
{
	if (d.expr != NULL)
		return d.expr;
	return onnx_arena_printf(ar, "%lld", (long long)d.v);
}

double
onnx_dim_float32_decimal(double f)
{
	char buf[40];

	for (int digits = 1; digits <= 9; digits++) {
		double d;
		snprintf(buf, sizeof buf, "%.*g", digits, f);
		d = strtod(buf, NULL);
		if ((float)d == (float)f)
			return d;
	}
	return f;
}

int
onnx_dim_scaled(struct onnx_arena *ar, struct onnx_dim in, double s, struct onnx_dim *out)
{
	for (int64_t q = 1; q <= 1024; q *= 2) {
		double p = s * (double)q;
		if (p == floor(p) && p < 1e15) {
			if (onnx_dim_arith(ar, ONNX_DIM_MUL, in, onnx_dim_int((int64_t)p), out) < 0 ||
			    onnx_dim_arith(ar, ONNX_DIM_DIV, *out, onnx_dim_int(q), out) < 0)
				return -1;
			return 0;
		}
	}
	if (in.expr == NULL) {
		double v = floor((double)in.v * s);
		if (!(v >= -9e18 && v <= 9e18))
			return -1;
		*out = onnx_dim_int((int64_t)v);
		return 0;
	}
	*out = onnx_dim_sym(onnx_arena_printf(ar, "floor((%s) * %.17g)", in.expr, s));
	return out->expr != NULL ? 0 : -1;
}
