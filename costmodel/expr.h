/*
 * expr.h - the expression graph: every shape, cost and validity condition of
 * a model is a node here, built once over the hyperparameters and then
 *   evaluated  for one configuration          (expr_eval.c),
 *   bounded    over intervals of the variables (expr_bound.c),
 *   compiled   to Z3 terms by the solver       (solver/z3/z3c_*.c),
 * so that each formula has exactly one definition.
 *
 * Invariants:
 *  - Nodes are hash-consed: building the same (kind, type, operands, value)
 *    twice returns the same id, so shared sub-terms are stored and evaluated
 *    once.
 *  - Children always have smaller ids than their parents: evaluating the
 *    nodes in id order is a valid topological order.
 *  - Every node is of type EXPR_INT (exact int64) or EXPR_REAL (double).
 *    Booleans are INT nodes whose value is 0 or 1 (comparisons, AND, OR, NOT).
 *  - Operations are total: integer division and modulo by zero give 0 and
 *    the dividend respectively (callers that care add a "divisor != 0"
 *    validity constraint, see expr_parse.c); real division by 0.0 gives 0.0.
 *    The only evaluation fault is an int64 overflow (or a real that does not
 *    fit an int64 when converted).
 *  - Any builder given EXPR_NONE returns EXPR_NONE, and a builder that fails
 *    (constant folding overflow, out of memory) records the first error in
 *    the graph and returns EXPR_NONE: callers check once, at the end.
 */
#ifndef DN_EXPR_H
#define DN_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "dn_error.h"

typedef int32_t expr_id;
#define EXPR_NONE ((expr_id)-1)
/* A graph larger than this is refused: a model that needs it is absurd. */
#define EXPR_MAX_NODES (1 << 24)

enum expr_type { EXPR_INT = 0, EXPR_REAL = 1 };

enum expr_kind {
	EK_CONST, EK_VAR,
	EK_ADD, EK_SUB, EK_MUL,
	EK_DIV,   /* INT: floor division; REAL: true division */
	EK_CDIV,  /* INT only: ceiling division */
	EK_MOD,   /* INT only: a - b * floor(a / b) (sign of the divisor) */
	EK_MIN, EK_MAX,
	EK_EQ, EK_NE, EK_LT, EK_LE,     /* INT 0/1 results, operands any type */
	EK_AND, EK_OR, EK_NOT,          /* on 0/1 operands */
	EK_ITE,                         /* a ? b : c */
	EK_TOREAL,                      /* INT -> REAL */
	EK_FLOOR, EK_CEIL, EK_ROUND,    /* REAL -> INT (round: ties away from 0) */
	EK_COUNT
};

union expr_val {
	int64_t i;
	double r;
};

struct expr_node {
	uint8_t kind;
	uint8_t type;
	uint16_t origin;        /* index into the graph's origin table */
	expr_id a, b, c;
	union expr_val k;       /* EK_CONST value, or variable index for EK_VAR */
};

struct expr_var_info {
	char *name;
	uint8_t type;
};

/* A hash-cons slot: a node id with its hash, so that a probe compares
 * hashes before it loads a node (the nodes are scattered over megabytes of
 * a large model's graph) and a resize never hashes a node again. */
struct expr_slot {
	int32_t id;
	uint32_t hash;
};

struct expr_graph {
	struct expr_node *nodes;
	int32_t n, cap;
	struct expr_slot *slots; /* hash-cons table (open addressing), id -1 = empty */
	uint32_t nslots;
	struct expr_var_info *vars;
	int32_t nvars, capvars;
	char **origins;         /* origin 0 is "" */
	uint16_t norigins, caporigins;
	uint16_t cur_origin;
	struct dn_error err;    /* first builder failure */
};

/* An interval [lo, hi] of a node's values; for INT nodes the .i members. */
struct expr_ival {
	union expr_val lo, hi;
};

/* Lifecycle. expr_graph_init returns 0, or -1 when out of memory. */
int expr_graph_init(struct expr_graph *g);
void expr_graph_free(struct expr_graph *g);

/* Declares a variable; returns its index (>= 0) or -1 on error. */
int32_t expr_graph_add_var(struct expr_graph *g, const char *name,
    enum expr_type type);

/* Sets the origin (a JSON path, copied) that nodes created from now on are
 * attributed to, for error messages. Returns 0 or -1 (out of memory). */
int expr_graph_set_origin(struct expr_graph *g, const char *path);
const char *expr_origin(const struct expr_graph *g, expr_id e);

static inline enum expr_type
expr_type_of(const struct expr_graph *g, expr_id e)
{
	return (enum expr_type)g->nodes[e].type;
}

static inline int
expr_is_const(const struct expr_graph *g, expr_id e)
{
	return e >= 0 && g->nodes[e].kind == EK_CONST;
}

/* Whether e is the integer constant v (a node the builders folded to it:
 * a condition known false or true, an element count known zero). */
static inline int
expr_is_int_const(const struct expr_graph *g, expr_id e, int64_t v)
{
	return expr_is_const(g, e) && g->nodes[e].type == EXPR_INT && g->nodes[e].k.i == v;
}

/* Whether e is a condition known true (an integer constant other than 0). */
static inline int
expr_is_true(const struct expr_graph *g, expr_id e)
{
	return expr_is_const(g, e) && g->nodes[e].type == EXPR_INT && g->nodes[e].k.i != 0;
}

/* Builders (expr_graph.c). Mixed INT/REAL arithmetic promotes to REAL. */
expr_id expr_int(struct expr_graph *g, int64_t v);
expr_id expr_real(struct expr_graph *g, double v);
expr_id expr_var(struct expr_graph *g, int32_t index);
expr_id expr_add(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_sub(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_mul(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_div(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_cdiv(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_mod(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_min(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_max(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_eq(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_ne(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_lt(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_le(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_gt(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_ge(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_and(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_or(struct expr_graph *g, expr_id a, expr_id b);
expr_id expr_not(struct expr_graph *g, expr_id a);
expr_id expr_ite(struct expr_graph *g, expr_id c, expr_id a, expr_id b);
expr_id expr_to_real(struct expr_graph *g, expr_id a);
expr_id expr_floor(struct expr_graph *g, expr_id a);
expr_id expr_ceil(struct expr_graph *g, expr_id a);
expr_id expr_round(struct expr_graph *g, expr_id a);

/* Conveniences built from the above. */
expr_id expr_round_up(struct expr_graph *g, expr_id a, int64_t multiple);
expr_id expr_sum(struct expr_graph *g, const expr_id *terms, int n);
expr_id expr_max_n(struct expr_graph *g, const expr_id *terms, int n);

/* True when e is a boolean node (value always 0 or 1). */
int expr_is_bool(const struct expr_graph *g, expr_id e);

/*
 * Evaluates every node in id order. `vars` holds one value per variable
 * (INT variables in .i, REAL in .r); `vals` receives g->n values. Returns 0,
 * or -1 on an int64 overflow, with *fault (if not NULL) the failing node.
 */
int expr_eval(const struct expr_graph *g, const union expr_val *vars,
    union expr_val *vals, expr_id *fault);

/* Evaluates the nodes [0, upto) only; same contract as expr_eval. */
int expr_eval_prefix(const struct expr_graph *g, const union expr_val *vars,
    union expr_val *vals, int32_t upto, expr_id *fault);

/*
 * Sound interval bounds of every node, given an interval per variable: for
 * any assignment inside the variable intervals, every node's value lies
 * inside its bound. INT bounds saturate at INT64_MIN / INT64_MAX, which then
 * mean "unbounded" on that side.
 */
void expr_bound(const struct expr_graph *g, const struct expr_ival *vars,
    struct expr_ival *out);

/* Bounds node i alone from its children's bounds already in `out` (the
 * solver re-bounds only the nodes that depend on a changed variable). */
void expr_bound_node(const struct expr_graph *g, expr_id i,
    const struct expr_ival *vars, struct expr_ival *out);

/* Writes e as an infix expression over variable names into buf (always
 * terminated; cut to len with "..." at its end). Returns the length
 * written when it fits, else len or more: the walk stops once the buffer
 * is full (time bounded by len, not by the text of the shared graph,
 * which can be exponentially long). */
size_t expr_format(const struct expr_graph *g, expr_id e, char *buf,
    size_t len);

/*
 * The expression language of model files (see docs/model-format.md).
 * The resolver maps a name to a node; for a categorical variable it also
 * gives the value names so that `block == 'basic'` compares with its index.
 */
struct expr_name_info {
	expr_id id;
	const char *const *enum_values;
	int n_enum;
};

typedef int (*expr_resolve_fn)(void *ctx, const char *name, size_t len,
    struct expr_name_info *out);
typedef void (*expr_divisor_fn)(void *ctx, expr_id divisor);

struct expr_parse_opts {
	expr_resolve_fn resolve;   /* returns 0 when found, -1 when unknown */
	expr_divisor_fn on_divisor; /* told of each non-constant divisor; may be NULL */
	void *ctx;
};

/* Parses `text` into g. On error returns EXPR_NONE and fills err with
 * `path` and a message that quotes the offending part of the text. */
expr_id expr_parse(struct expr_graph *g, const char *text,
    const struct expr_parse_opts *opts, const char *path,
    struct dn_error *err);

#endif
