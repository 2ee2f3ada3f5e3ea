/*
 * query_z3.h - a query's feasible set as Z3 assertions (query_z3.c).
 */
#ifndef DN_QUERY_Z3_H
#define DN_QUERY_Z3_H

#include <string.h>

#include "fset.h"
#include "query.h"
#include "z3c.h"

/* Fills *out (malloc'd, the caller frees) with the assertions whose models
 * are exactly the feasible configurations the engine counts (over the
 * engine's grid, with nested dims flattened: Z3 sees hyperparameters and
 * the positions of the vars that sq_z3_selects, not dims; each model one
 * configuration times the positions of the other vars that pass
 * through). Returns their number, or -1 with err. */
int sq_z3_assertions(struct sq_query *q, const struct fs_engine *e, struct z3c *z, Z3_ast **out,
    struct dn_error *err);

/* The same with every continuous hyperparameter bound to the model (struct
 * fs_cvar) a free real within its range [L, H] where it takes part (its
 * fixed value where it does not) instead of its fixed value: the models are
 * the configurations that fit at some real value, on the grid or between
 * it (ans_z3_range). */
int sq_z3_assertions_real(struct sq_query *q, const struct fs_engine *e, struct z3c *z, Z3_ast **out,
    struct dn_error *err);

/* Whether engine var x is a selector for Z3: it passes through (sets no
 * hyperparameter) and is nested or holds nested vars, so that its position
 * is a variable of Z3's models of its own (query_z3.c); the positions of
 * the other vars that pass through multiply Z3's models. */
int sq_z3_selects(const struct fs_var *x);

/* Whether continuous var c takes part, as a Bool in *act: each enclosing
 * choice at the option that holds it; *act = NULL at the top level (or
 * under a choice Z3 cannot see). 0 or -1. */
int sq_z3_cvar_active(const struct sq_query *q, const struct fs_engine *e, int c, struct z3c *z, Z3_ast *act);

/* Opens a context for q's graph (z3c_init: every check under `seconds`,
 * our timer, and Z3's rlimit) and compiles the query into *as
 * (sq_z3_assertions, or sq_z3_assertions_real when reals) by `compile_by`
 * (fs_now's clock; this thread's deadline, dn_deadline.h, narrowed to it
 * meanwhile: a large model's tables take seconds to build, ResNet's 7):
 * returns their number (the last q->nparts are the parts), or -1 with err
 * (DN_ETIMEOUT past compile_by; nothing to free). The caller frees *as and
 * z3c_free's z. */
int sq_z3_open(struct sq_query *q, const struct fs_engine *e, unsigned rlimit, double seconds, double compile_by,
    int reals, struct z3c *z, Z3_ast **as, struct dn_error *err);

/* sq_z3_open with reals and continuous var c (>= 0) fixed to exactly
 * `value`, declared as a one-value domain before anything is compiled: the
 * cost terms over it become tables, linear arithmetic that Z3 decides
 * (free, the same terms are non-linear). Its domain constraint is
 * z3c_var_domain's, kept by z; the assertions already imply w in [L, H]
 * only, so the caller adds w = value (z3c_var_in_range_real). */
int sq_z3_open_at(struct sq_query *q, const struct fs_engine *e, unsigned rlimit, double seconds, double compile_by,
    int reals, int c, double value, struct z3c *z, Z3_ast **as, struct dn_error *err);

#endif
