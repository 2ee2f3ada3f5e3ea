/*
 * expr_tape.h - the expression graph compiled for fast repeated evaluation
 * (expr_tape.c): same results as expr_eval, several times faster.
 */
#ifndef DN_EXPR_TAPE_H
#define DN_EXPR_TAPE_H

#include "expr.h"

struct expr_run {
	uint8_t op;
	int32_t start, count;
};

struct expr_tape {
	int32_t n;                      /* graph nodes covered */
	struct expr_run *runs;
	int32_t nruns;
	int32_t *dst, *a, *b, *c;       /* per entry: node id and operand ids (c: the shift of a
	                                 * division by a power of two) */
	int32_t *const_ids, nconsts;
	int32_t *var_ids, nvars;
};

/* Compiles g (its current nodes). 0, or -1 when out of memory. */
int expr_tape_build(const struct expr_graph *g, struct expr_tape *t);
void expr_tape_free(struct expr_tape *t);

/* As expr_eval(g, vars, vals, fault), through the tape. */
int expr_tape_eval(const struct expr_tape *t, const struct expr_graph *g,
    const union expr_val *vars, union expr_val *vals, expr_id *fault);

#endif
