/*
 * z3c.h - the expression graph (expr.h) as Z3 terms, and the questions the
 * solver asks Z3 about them.
 *
 *   z3c_init / z3c_free        one Z3 context per struct z3c
 *   z3c_term / z3c_bool        a graph node as a Z3 term, memoized (z3c_compile.c)
 *   z3c_var_in_*, z3c_at_most  domains, budgets as Bools            (z3c_compile.c)
 *   z3c_var_domain             a finite domain: tables for nonlinear terms
 *   z3c_check / _enumerate /
 *   _models_are / _optimize /
 *   _explain                   queries                              (z3c_query.c)
 *
 * Semantics: a compiled term has exactly the value expr_eval gives the node
 * (floor division, ceiling division, modulo with the sign of the divisor,
 * x / 0 = 0, x % 0 = x, real x / 0.0 = 0.0, round half away from zero), with
 * two deliberate differences: Z3 integers are unbounded where expr_eval
 * faults on an int64 overflow, and Z3 reals are exact rationals where
 * expr_eval rounds each operation to a double. Real constants are converted
 * exactly (the double's own rational value). Once variables have declared
 * finite domains (z3c_var_domain), a term translated afterwards has that
 * value wherever they lie in their domains (outside, it is unspecified).
 *
 * Ownership: every Z3_ast this module returns is referenced by the struct
 * z3c and stays valid until z3c_free. Terms a caller builds itself on
 * z->ctx (a Z3_mk_context_rc context) die at the next Z3 call unless they
 * are referenced: hand them to z3c_keep.
 *
 * Errors: Z3 reports errors to a handler that records the first one in the
 * struct z3c (it never exits the process). Functions returning a Z3_ast
 * return NULL on error; z3c_error then moves the recorded error into a
 * dn_error. A query reports an error still recorded when it starts (and any
 * raised during it) as Z3C_ERROR. Each recorded error is reported once.
 *
 * Threads: a struct z3c is used by one thread at a time; only
 * z3c_interrupt may be called from another thread (not concurrently with
 * z3c_free). The error handler finds the struct by its address: do not copy
 * or move it between z3c_init and z3c_free.
 */
#ifndef DN_Z3C_H
#define DN_Z3C_H

#include <stdatomic.h>
#include <stdint.h>

#include <z3.h>

#include "dn_error.h"
#include "expr.h"

/* Declared domains per context (z3c_var_domain), and the largest table. */
#define Z3C_DOMAINS 62
#define Z3C_TABLE_CAP 1024

struct z3c {
	Z3_context ctx;                 /* for building further terms */
	const struct expr_graph *g;     /* borrowed; may grow after z3c_init */
	/* private: use the functions below */
	unsigned timeout_ms, rlimit;    /* per check; 0 = none */
	size_t at_most_node_cap;        /* z3c_set_at_most_caps */
	size_t at_most_total_cap;
	int collapsed;                  /* z3c_at_most made fresh constants */
	int timer_fired;                /* the last check's timer interrupted it (z3c_query.c) */
	Z3_sort int_sort, real_sort, bool_sort;
	Z3_ast *vars;                   /* one constant per graph variable */
	int32_t nvars;
	Z3_ast *terms, *bools;          /* memo: node -> Int/Real term, -> Bool */
	uint8_t *queued;                /* nodes queued by the translation walk */
	int32_t cap;                    /* length of terms, bools, queued */
	expr_id *work;                  /* the translation walk's stack */
	size_t capwork;
	unsigned steps;                 /* translation steps (the deadline is checked every 1024) */
	Z3_ast *tmp;                    /* references held during one step */
	size_t ntmp, captmp;
	Z3_ast *kept;                   /* z3c_keep and domain constraints */
	size_t nkept, capkept;
	Z3_ast *dom_vals;               /* declared domains, back to back */
	int64_t dom_len, dom_cap;
	int32_t dom_var[Z3C_DOMAINS];   /* declared domain d: its variable, */
	int64_t dom_off[Z3C_DOMAINS];   /* its values dom_vals[off, off + n) */
	int64_t dom_n[Z3C_DOMAINS];
	int ndom;
	int32_t *var_dom;               /* variable -> its domain or -1, */
	int32_t nvar_dom;               /* for the first nvar_dom variables */
	uint64_t *deps;                 /* node -> domains it depends on (+ flags) */
	struct dn_error pending;        /* first error not yet reported */
	atomic_int interrupted;         /* set by z3c_interrupt, sticky */
	struct z3c *next_live;          /* error handler's registry */
};

enum z3c_answer {
	Z3C_ERROR = -1,         /* err says why (a Z3 error, bad argument, out of memory) */
	Z3C_SAT = 0,
	Z3C_UNSAT = 1,
	Z3C_UNKNOWN = 2         /* err says why; DN_ETIMEOUT for timeout, rlimit, interrupt */
};

/*
 * Creates the context and one constant per variable of g (Int or Real,
 * named by the variable). timeout_ms and rlimit (0: none) apply to every
 * check a query makes. The rlimit is Z3's resource limit (work, the same
 * on any machine); the timeout is a timer thread of ours that interrupts
 * the check (Z3_interrupt), never Z3's own "timeout" parameter, whose
 * timer deadlocks in some Z3 releases (4.8.10 to 4.8.12, Debian 12's).
 * Returns 0, or -1 with err set (nothing to free).
 */
int z3c_init(struct z3c *z, const struct expr_graph *g, unsigned timeout_ms,
    unsigned rlimit, struct dn_error *err);
void z3c_free(struct z3c *z);

/* Moves the recorded error, if any, into err: returns -1 then, else 0. */
int z3c_error(struct z3c *z, struct dn_error *err);

/* Asks a query running in another thread to stop (it answers Z3C_UNKNOWN
 * with DN_ETIMEOUT); every later query on z stops at once too. */
void z3c_interrupt(struct z3c *z);

/* Node e as an Int or Real term (by its type). Translated once, shared
 * sub-terms too; iterative, so any depth is fine. NULL on error. */
Z3_ast z3c_term(struct z3c *z, expr_id e);
/* Node e as a Bool: e != 0 (comparisons and connectives directly). */
Z3_ast z3c_bool(struct z3c *z, expr_id e);
/* The constant of graph variable var. */
Z3_ast z3c_var(struct z3c *z, int32_t var);
/* Numerals; a real is converted exactly, a non-finite one is an error. */
Z3_ast z3c_int(struct z3c *z, int64_t v);
Z3_ast z3c_real(struct z3c *z, double v);
/* References a caller-built term until z3c_free and returns it (NULL
 * stays NULL: z3c_keep(z, Z3_mk_...(z->ctx, ...)) is safe). */
Z3_ast z3c_keep(struct z3c *z, Z3_ast a);

/*
 * Domains, as Bool constraints. var_in_ints: var is one of values[0..n)
 * (an arithmetic progression becomes a range and a congruence, so a large
 * grid costs nothing); n = 0 is false. var_in_progression: var is
 * start + i * step for some 0 <= i < n (step may be negative or 0).
 * var_in_range_real: lo <= var <= hi, an infinite bound meaning none.
 * Integer values for a Real variable mean the same reals.
 */
Z3_ast z3c_var_in_ints(struct z3c *z, int32_t var, const int64_t *values,
    int64_t n);
Z3_ast z3c_var_in_progression(struct z3c *z, int32_t var, int64_t start,
    int64_t step, int64_t n);
Z3_ast z3c_var_in_range_real(struct z3c *z, int32_t var, double lo, double hi);

/*
 * Declares that var takes only values[0..n) (.i for an Int variable, .r
 * for a Real one) and returns the Bool
 * constraint that says so, which the caller must assert with every term
 * translated from then on: those terms are exact only inside the domains.
 * It is how finite search spaces become easy for Z3: a nonlinear node
 * (a product of two non-constants, a division, modulo or rounding of
 * non-constants) or a node that only combines tables (min, max, ite,
 * comparisons, connectives) whose variables all have domains, together at
 * most Z3C_TABLE_CAP combinations, is translated as a table: nested ites
 * on "var == value" whose leaves are numerals (or true, false), each the
 * node's exact term with the values substituted and simplified by Z3's own
 * rewriter. Z3 then sees linear arithmetic over tables instead of
 * nonlinear integer arithmetic. The values must be distinct. At most
 * Z3C_DOMAINS variables get domains, of at most Z3C_TABLE_CAP values
 * (beyond: the constraint only); declaring a variable twice is an error
 * (DN_EINVAL). NULL on error.
 */
Z3_ast z3c_var_domain(struct z3c *z, int32_t var, const union expr_val *values,
    int64_t n);

/*
 * e <= bound (an Int or Real term) as a Bool, for budgets: equivalent to
 * Z3_mk_le(z3c_term(z, e), bound), but distributed over sums, maxima and
 * products by nonnegative constants into one linear inequality per
 * alternative (max(a, b) + c <= B as a + c <= B and b + c <= B), which Z3
 * decides far faster than nested ites; past the caps below, with fresh
 * constants (equisatisfiable, not equivalent).
 */
Z3_ast z3c_at_most(struct z3c *z, expr_id e, Z3_ast bound);

/*
 * The caps on z3c_at_most's alternatives, per node and in all (z3c_init
 * sets the defaults below). Past either, it collapses a node's children's
 * lists into one fresh constant each, bounded below by their alternatives:
 * the Bool is then equisatisfiable with e <= bound on the graph's
 * variables (each model of it is one of e <= bound, and each of those
 * extends to one of it), not equivalent, which is all an assertion needs;
 * never negate it. Solvers over such a context use Z3's newer arithmetic
 * solver (z3c_query.c). The total's default lies between the largest
 * lists of the unit tests (8,441 alternatives, ResNet's peak), which Z3
 * decides fastest distributed, and TinyLlama with 8 layers under the
 * LoRA/DoRA/QLoRA/QDoRA choice of examples/api/hf-peft-methods-query.json
 * (35,030), on which the distributed form stopped at the resource limit
 * on the tenth check and the collapsed one enumerates all 84 models.
 */
#define Z3C_AT_MOST_NODE_CAP 4096
#define Z3C_AT_MOST_TOTAL_CAP 16384
void z3c_set_at_most_caps(struct z3c *z, size_t node_cap, size_t total_cap);

/*
 * Queries. Each makes a fresh solver over the n Bool assertions. A model is
 * one value per graph variable (g->nvars at the call; Real variables as the
 * nearest double); a variable the assertions leave free reads 0.
 */

/* Is the conjunction satisfiable? On Z3C_SAT fills model (may be NULL). */
enum z3c_answer z3c_check(struct z3c *z, const Z3_ast *assertions, int n,
    union expr_val *model, struct dn_error *err);

/*
 * Every model, by check-and-block on one incremental solver: each model
 * is blocked on the variables it assigns (those the assertions depend on);
 * the others are not enumerated and read 0. cb gets each model (valid
 * during the call) and returns 0 to go on, nonzero to stop. At most limit
 * models (limit <= 0: no limit); the timeout and rlimit apply per check.
 * Returns the number of models passed to cb, or -1 with err set (an error,
 * or an unknown answer: a timeout is DN_ETIMEOUT).
 */
int64_t z3c_enumerate(struct z3c *z, const Z3_ast *assertions, int n,
    int64_t limit, int (*cb)(void *ctx, const union expr_val *model),
    void *ctx, struct dn_error *err);

/*
 * Are the models of the assertions, read on the graph variables
 * vars[0..nv), exactly the np points? Point k gives vars[j] the value
 * points[k * nv + j] (.i for an Int variable, .r for a Real one); a model
 * is outside them when it differs from each on some vars[j]. One
 * incremental solver answers at most np + 1 checks, where z3c_enumerate
 * takes one per model and a growing solver: each point is a model when
 * Z3's model evaluator takes every assertion to true on it, else when a
 * check under the assumptions vars[j] == value is satisfiable; then,
 * with every point blocked by a clause, one check (unsatisfiable: no model
 * is outside them). Returns 0 when they are exactly the models, 1 when not:
 * *bad = k for the first point that is not a model, or *bad = -1 and model
 * (may be NULL; as z3c_check's, one value per graph variable) filled with
 * a model outside the points. -1 with err set on an error or an unknown
 * answer (DN_ETIMEOUT for the timeout or the rlimit, which apply per
 * check). The numerals of the points' values stay referenced by z (as
 * z3c_int's and z3c_real's), one per distinct value.
 */
int z3c_models_are(struct z3c *z, const Z3_ast *assertions, int n,
    const int32_t *vars, int nv, const union expr_val *points, int64_t np,
    int64_t *bad, union expr_val *model, struct dn_error *err);

/*
 * Maximizes (or minimizes) node `objective` over the assertions with
 * Z3_optimize. On Z3C_SAT fills best_model (may be NULL) and *best_value
 * (typed as the objective). An unbounded objective, or a real supremum
 * that is not attained, is Z3C_ERROR with DN_ERANGE.
 */
enum z3c_answer z3c_optimize(struct z3c *z, const Z3_ast *assertions, int n,
    expr_id objective, int maximize, union expr_val *best_model,
    union expr_val *best_value, struct dn_error *err);

/*
 * Why are the assertions and the nl labelled constraints unsatisfiable
 * together? On Z3C_UNSAT, core[0..*ncore) lists (ascending) indexes into
 * labelled of a core that is unsatisfiable with the assertions and minimal:
 * dropping any one of them is satisfiable (or undecided within the limits).
 * *ncore = 0 when the assertions alone are unsatisfiable, and on Z3C_SAT.
 * labels (may be NULL) name the indicator constants, for traces. core must
 * hold nl entries.
 */
enum z3c_answer z3c_explain(struct z3c *z, const Z3_ast *assertions, int n,
    const Z3_ast *labelled, const char *const *labels, int nl, int *core,
    int *ncore, struct dn_error *err);

#endif
