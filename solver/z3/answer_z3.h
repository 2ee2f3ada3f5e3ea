/*
 * answer_z3.h - Z3 in the running product: where it adds what the
 * branch-and-bound engine cannot (answer_z3.c).
 *
 *   ans_z3_count     the DnnSAT paper's method, incremental enumeration
 *                    of satisfying configurations with blocking clauses,
 *                    as a cross-check of the engine's count on request
 *                    (a query's "engine": "z3", `dnnsat count --engine z3`)
 *   ans_z3_conflict  when nothing fits: a smallest set of budgets and
 *                    constraints that conflict (a minimal unsat core; the
 *                    engine's, answer_core.c, where Z3 does not decide it), and
 *                    for each budget in it how far it would have to move
 *                    for something to fit (the engine's, exact on the
 *                    grid: ans_budget_move, answer_budget.c)
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

/* {"decided": bool, "conflict": [{"constraint", "path", "kind": "budget" |
 *  "constraint" | "validity", and for a budget: "limit"; "at_least" (a most,
 *  value <= limit) or "at_most" (a minimum, min_utilization): the limit
 *  from which something fits with every other part of the query kept, by
 *  the engine over the whole space (ans_budget_move: exact on the grid),
 *  null when no limit makes something fit or the deadline passed first;
 *  when not null, "nothing_at": the limit nearest it at which nothing fits
 *  (adjacent for integers, within 1e-9 for reals, unless the deadline cut
 *  the search short)}], "note", "found_by": "z3" | "engine" (when decided)}.
 *  The conflict is a minimal unsat core: its parts admit no configuration
 *  together, any one of them dropped the rest do (other parts of the query
 *  may conflict as well). Z3 gets half of `seconds`, compiling the query
 *  included; when it does not decide the core, the engine's existence
 *  checks do (ans_core, answer_core.c: "found_by": "engine"). "decided":
 *  false when neither did (then "conflict" is empty). Z3 decides the core with the
 *  continuous hyperparameters bound to the model held at their defaults,
 *  named in "held": {name: value} (the note says so); the budgets' limits
 *  are the engine's, over their whole ranges.
 *  Each check gets a share of
 *  `seconds` (our timer) and at most `rlimit` of work. Call it only when
 *  the engine counted nothing. */
json_t *ans_z3_conflict(struct sq_query *q, const struct fs_engine *e, unsigned rlimit, double seconds,
    struct dn_error *err);

/*
 * The exact feasible range of every continuous hyperparameter bound to the
 * model (struct fs_cvar) over the reals, not on the engine's grid
 * (answer_z3_range.c): {"method", "precision", "rlimit", "continuous":
 * [{"name", "low", "high" (the space's range), "feasible": true | false
 * (the interval bounds rule out every value) | null (not decided,
 * or nested under a choice: not computed), "min", "max": values that fit (null when not found),
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
