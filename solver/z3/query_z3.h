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
 * engine's grid, with nested dims flattened: Z3 sees hyperparameters, not
 * dims). Returns their number, or -1 with err. */
int sq_z3_assertions(struct sq_query *q, const struct fs_engine *e, struct z3c *z, Z3_ast **out,
    struct dn_error *err);

#endif
