/*
 * expr_arith.h - the integer division semantics shared by folding
 * (expr_graph.c), evaluation (expr_eval.c) and bounding (expr_bound.c):
 * floor division, ceiling division and modulo with the sign of the divisor,
 * all total (division by zero gives 0, modulo by zero the dividend).
 * Callers handle INT64_MIN / -1 (an overflow) before calling.
 */
#ifndef DN_EXPR_ARITH_H
#define DN_EXPR_ARITH_H

#include <stdint.h>

int64_t expr_floordiv_i64(int64_t a, int64_t b);
int64_t expr_ceildiv_i64(int64_t a, int64_t b);
int64_t expr_mod_i64(int64_t a, int64_t b);

#endif
