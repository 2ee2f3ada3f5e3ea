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
	int32_t *xs, nxs;               /* operand lists of the folds of a partial tape */
	int16_t *d16, *a16, *b16, *c16, *xs16;  /* the same, when every id fits in 16 bits
	                                         * (evaluation takes these), else NULL */
	int32_t *const_ids, nconsts;    /* constants it writes first, and their values */
	union expr_val *const_vals;
	int32_t *var_ids, nvars;        /* variables it copies in, and their hyperparameters */
	int32_t *var_hps;
};

/* Compiles g (its current nodes). 0, or -1 when out of memory. */
int expr_tape_build(const struct expr_graph *g, struct expr_tape *t);

/*
 * A partial tape, for a caller that reads some nodes and knows others:
 * need marks the nodes whose values it reads after each evaluation (NULL:
 * all), given (NULL: none) the operation nodes whose values it writes into
 * vals itself before each evaluation (from tables, say). The tape computes
 * only what the needed nodes depend on, stops at given nodes, and folds
 * single-use chains nobody reads (sums, maxima, round-ups) into one step
 * each without storing the inner results: after expr_tape_eval, needed
 * nodes hold expr_eval's values and other slots are unspecified. It faults
 * when a node it computes overflows (not for nodes it skips). 0, or -1
 * when out of memory.
 */
int expr_tape_build_part(const struct expr_graph *g, const uint8_t *need, const uint8_t *given,
    struct expr_tape *t);

/* Sets mark[i] for every node whose value the tape reads: the operands its
 * entries take from constants, variables, given nodes and each other. */
void expr_tape_mark_reads(const struct expr_tape *t, uint8_t *mark);
void expr_tape_free(struct expr_tape *t);

/* As expr_eval(g, vars, vals, fault), through the tape. */
int expr_tape_eval(const struct expr_tape *t, const struct expr_graph *g,
    const union expr_val *vars, union expr_val *vals, expr_id *fault);

#endif
