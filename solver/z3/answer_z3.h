/*
 * answer_z3.h - Z3 in the running product: where it adds what the
 * branch-and-bound engine cannot (answer_z3.c).
 *
 *   ans_z3_count     the DnnSAT paper's method, incremental enumeration
 *                    of satisfying configurations with blocking clauses,
 *                    as a cross-check of the engine's count on request
 *                    (a query's "engine": "z3", `dnnsat count --engine z3`)
 *   ans_z3_conflict_check  when nothing fits and the query asks for it:
 *                    Z3's minimal unsat core of the query's parts beside
 *                    the engine's conflict (ans_conflict, answer_core.c),
 *                    checked by the engine
 *   ans_z3_range     the exact feasible range of each continuous
 *                    hyperparameter bound to the model, over the reals
 *                    (answer_z3_range.c)
 *
 * Bounds: Z3 runs only under its resource limit (rlimit, per check: work,
 * the same on every machine) and an interrupt of our own at `seconds`
 * (z3c's timer thread), never Z3's own wall-clock timeout, which deadlocks
 * in Debian 12's libz3 4.8.12. An answer cut short says so ("complete":
 * false, "stopped": why) rather than failing.
 *
 * Threads: each call makes and frees its own Z3 context; the engine is
 * only read. Errors: NULL with err (out of memory, a Z3 error).
 */
#ifndef DN_ANSWER_Z3_H
#define DN_ANSWER_Z3_H

#include <jansson.h>
#include <stdint.h>

#include "fset.h"
#include "query.h"

/* Default limits: Z3's resource limit per check, and the most models an
 * enumeration collects (Z3 finds each in milliseconds at best: the engine
 * counts what is beyond). */
#define ANS_Z3_RLIMIT 20000000u
#define ANS_Z3_MAX_MODELS 20000
/* The width of the brackets of ans_z3_range, relative to the range. */
#define ANS_Z3_RANGE_PRECISION 1e-9

/* {"engine": "z3", "method", "models": n, "complete": bool, "stopped":
 *  null | "model limit" | "resource limit" | "deadline" | "continuous
 *  parameter" (a continuous hyperparameter bound to the model: not
 *  enumerated, "models": 0; see ans_z3_range), "rlimit",
 *  "max_models", "engine_feasible": "N" (when the engine's count is exact),
 *  "agrees": bool | null (null when either is not complete)}. */
json_t *ans_z3_count(struct sq_query *q, const struct fs_engine *e, int64_t max_models, unsigned rlimit,
    double seconds, struct dn_error *err);

/* Z3's cross-check of the engine's conflict (ans_conflict, answer.h) when
 *  a query asks for "engine": "z3": adds to `conflict` "z3": {"method",
 *  "decided", "conflict": [the paths of Z3's minimal unsat core of the
 *  query's parts], "agrees": true (the engine's checks find Z3's core a
 *  minimal conflict too: ans_core_verify; it may differ from the engine's,
 *  a query can have several) | false (they disagree: Z3 finds a
 *  configuration, or its core is not a minimal conflict) | null (not
 *  decided, or not comparable), "note", and "held": {name: value} when
 *  continuous hyperparameters bound to the model were held at their
 *  defaults, over whose reals Z3 does not decide}. Z3 gets half of
 *  `seconds` (compiling the query included; each check a share of it and at
 *  most `rlimit` of work), the engine's verification the rest. Call it
 *  only when the engine counted nothing. 0, or -1 with err. */
int ans_z3_conflict_check(struct sq_query *q, const struct fs_engine *e, json_t *conflict, unsigned rlimit,
    double seconds, struct dn_error *err);

/*
 * The exact feasible range of every continuous hyperparameter bound to the
 * model (struct fs_cvar) over the reals, not on the engine's grid
 * (answer_z3_range.c): {"method", "precision", "rlimit", "continuous":
 * [{"name", "low", "high" (the space's range), "feasible": true | false
 * (the interval bounds rule out every value) | null (not decided), "min",
 * "max": values that fit (null when not found; a parameter nested under a
 * choice: over the configurations in which it takes part),
 * "min_bracket": [a, b] holding the infimum of the values that fit, with
 * b = "min" (fits) and nothing fitting at or below a (a == b: attained),
 * "min_beyond": what proved that ("z3", "interval bounds", "the range's
 * end", null: not proven), "min_z3": true when Z3 confirmed on exact
 * rationals that "min" fits and a does not, "max_bracket" / "max_beyond" /
 * "max_z3" likewise for the supremum, "exact": true when both brackets are within ANS_Z3_RANGE_
 * PRECISION * (high - low), their ends confirmed by Z3 on exact rationals,
 * and nothing beyond them proven, "grid_hull": the engine's hull at its
 * grid resolution (null when the count is not exact), which holds both
 * brackets, "stopped": null or why it is not exact ("resource limit",
 * "deadline", "Z3 could not decide (non-linear arithmetic)", ...),
 * "z3_checks"}]}. A value fits when some configuration of the discrete
 * parameters satisfies every part of the query at it. Each Z3 check under
 * `rlimit`; everything within `seconds`. The engine must be counted
 * (fs_count_all); it is projected (fs_project) for the grid hull. NULL
 * with err on out of memory.
 */
json_t *ans_z3_range(struct sq_query *q, struct fs_engine *e, unsigned rlimit, double seconds,
    struct dn_error *err);

#endif
