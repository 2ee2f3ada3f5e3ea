/*
 * answer.h - the solver's answers as JSON, shared by the CLI (cli/cli_*)
 * and the HTTP service (server/api_*): the count, pages with resumable
 * cursors, seeded uniform samples (answer_list.c), and per-configuration
 * checks (answer_check.c), explanations of removed values
 * (answer_explain.c), the largest and smallest feasible values
 * (answer_extreme.c).
 *
 * Invariants: every function returns a new JSON reference or NULL with err
 * set (the path names the request field to blame: "cursor", "offset",
 * "config.batch_size", "param" ...). Functions that take a `struct
 * fs_engine *` change its current box and need exclusive use of it;
 * ans_check only reads the engine and the graph and may run on many threads
 * at once (each with its own scratch).
 */
#ifndef DN_ANSWER_H
#define DN_ANSWER_H

#include <jansson.h>
#include <stdint.h>

#include "fset.h"

/* {"total","exact","feasible_lower","feasible_upper","feasible"(exact only),
 *  "ratio","budgets","warnings"}: counts as decimal strings; the budgets
 *  that applied (sq_budgets_json) and the query's warnings
 *  (sq_warnings_json). */
json_t *ans_count(const struct fs_engine *e);

/* A fingerprint of a query for cursors (FNV-1a of its canonical text). */
uint64_t ans_fingerprint(const json_t *req);

/* Cursor text "c1.<fingerprint hex>.<positions hex, '-' separated>" and
 * back; a cursor of another query is refused. */
char *ans_cursor_make(const struct fs_engine *e, uint64_t fp, const int64_t *pos);
int ans_cursor_parse(const struct fs_engine *e, uint64_t fp, const char *c, int64_t *pos,
    struct dn_error *err);

/* A page: {"items":[NNI samples], "next_cursor": text | null}. Starts at
 * the first configuration, at `cursor`, or at the `offset`-th (decimal
 * text; needs an exact count, fs_count_all first). limit < 0: no limit. */
json_t *ans_page(struct fs_engine *e, uint64_t fp, const char *offset, const char *cursor,
    int64_t limit, struct dn_error *err);

/* Walks every feasible configuration from `pos` (NULL: the first), calling
 * emit(ctx, sample) for each until emit returns non-zero (stop) or `max`
 * were emitted. Returns 0 at the end, 1 stopped, -1 error. On return, pos
 * (if given) holds the next position to resume from. */
int ans_walk(struct fs_engine *e, int64_t *pos, int started, int64_t max,
    int (*emit)(void *ctx, json_t *sample), void *ctx, struct dn_error *err);

/* n seeded uniform samples of the feasible set (with replacement):
 * {"items": [...]}. Needs an exact count. */
json_t *ans_samples(struct fs_engine *e, int64_t n, uint64_t seed, struct dn_error *err);

/* n seeded samples whatever the state of the count (fs_count_all or
 * fs_count_more done): with an exact count ans_samples' answer plus
 * "distribution": "uniform"; otherwise drawn by fs_sampler_draw (fset.h),
 * "distribution": "approximate" and the "estimate" the weights came from.
 * "complete": false when `deadline` (fs_now() seconds, 0 none) passed
 * before n were drawn: the items are those drawn. The sampler's estimate
 * takes ANS_ESTIMATE_DRAWS draws, or what a third of the time left
 * allows. Every item is verified by exact evaluation. Nothing feasible:
 * no items, "complete": true. NULL with err when there is no count. */
#define ANS_ESTIMATE_DRAWS 20000
json_t *ans_samples_any(struct fs_engine *e, int64_t n, uint64_t seed, double deadline, struct dn_error *err);

/* An estimate as JSON: {"feasible","low","high" (numbers), "confidence":
 * 0.95, "exact", "draws", "hits", "strata"}. */
json_t *ans_estimate(const struct fs_estimate *est);

/* ans_count, plus "estimate" (ans_estimate) when the count is unfinished:
 * fs_sampler_build's (draws, seconds, seed as there). */
json_t *ans_count_estimated(struct fs_engine *e, int64_t draws, double seconds, uint64_t seed,
    struct dn_error *err);

/* One configuration (an NNI sample) against every part of the query:
 * {"feasible", "constraints":[{"constraint","path","holds","value","limit"}],
 *  "violated":[...the failing ones...], "costs": {cost-model result}} with
 * costs only when with_costs. `scratch` must hold ans_scratch_len values
 * (the caller's, so threads do not share it). */
int32_t ans_scratch_len(const struct fs_engine *e);
/* The same answer as JSON text (malloc'd, length in *len), with an "id"
 * field first when id is not NULL, and the "constraints" list only with
 * all_parts: the service's hot path (/check answers feasible, violated and
 * costs). */
char *ans_check_text(const struct fs_engine *e, const json_t *config, union expr_val *scratch,
    int with_costs, int all_parts, const char *id, size_t *len, struct dn_error *err);
json_t *ans_check(const struct fs_engine *e, const json_t *config, union expr_val *scratch,
    int with_costs, struct dn_error *err);
/* The same from a query string's name=value pairs, without building JSON
 * (fs_from_args): 0 with *text set as ans_check_text does, -1 with err set,
 * or 1 (nothing written) when the pairs need the JSON form. It reads only
 * what fs_init built and nothing changes afterwards (the space, the check
 * tape and its tables, the model's reading; never the graph's nodes, which
 * an explanation may be adding): callers need no lock on the engine. */
int ans_check_args_text(const struct fs_engine *e, const char *const *names, const char *const *values,
    int n, union expr_val *scratch, int with_costs, int all_parts, const char *id, char **text, size_t *len,
    struct dn_error *err);

/* Parameters (param, per, x, y) are named as sp_dim_lookup takes them: an
 * address ("attention/many_heads/n_head") or an unambiguous short form;
 * unknown is DN_ENOENT, ambiguous DN_EINVAL, at the field. Answers name
 * them by address (the "param", "x", "y" members, the rows' keys). A nested
 * parameter fixed to a value (explain, a heat map's cell, a row of per)
 * counts only configurations in which it takes part.
 *
 * Why no feasible configuration has `param` = `value`:
 * {"param","value","kept", "because":[{"constraint","path"}]} - the parts
 * no configuration with that value satisfies on their own, else the pairs
 * that cannot hold together. A continuous `param` (uniform, loguniform) is
 * decided at exactly `value`, a number in its range. Errors name "param"
 * or "value". Adds nodes to the query's graph. */
json_t *ans_explain_value(struct fs_engine *e, struct sq_query *q, const char *param,
    const json_t *value, double timeout, struct dn_error *err);

/* How far budget part i (q->parts[i], kind 1) of a query that nothing
 * satisfies would have to move for something to fit with every other part
 * kept (answer_budget.c): sets in item "limit" (the part's), "at_least"
 * (a most; "at_most" for a minimum, min_utilization): the smallest
 * (largest) limit at which something fits, exact on the grid as counts
 * are (integers exactly, reals to 1e-9), or JSON null when no limit makes
 * something fit or the deadline (fs_now's clock) passed before one was
 * found; and "nothing_at": the limit nearest it known to leave nothing.
 * Uses engines of its own and adds nodes to the query's graph. 0, or -1
 * with err (out of memory: err may be unset). */
int ans_budget_move(struct sq_query *q, int i, double deadline, json_t *item, struct dn_error *err);
/* Does some configuration of the space satisfy the boolean node `root` of
 * q's graph (answer_core.c)? Exact on the grid, by an engine of its own
 * (fs_init_root, fs_first_in_box). 1 yes, and when `config` and `filled`
 * are given and the space has no continuous hyperparameter, the
 * configuration found in config (q->def->nhps values; *filled = 1); 0 no;
 * 2 undecided (the deadline, fs_now's clock, passed); -1 error (err). */
int ans_exists(struct sq_query *q, expr_id root, double deadline, union expr_val *config, int *filled,
    struct dn_error *err);
/* A minimal set of q's parts that admit no configuration together, any one
 * of them dropped the others do (answer_core.c: one existence check per
 * part, dropping validity first, then user constraints, then budgets):
 * their indices in q->parts order in core (room for q->nparts), their
 * number in *ncore (0: the space's values alone admit nothing). Call it
 * only when the whole query admits nothing. 1 decided, 0 undecided (the
 * deadline passed: *ncore = 0), -1 error (err). Adds nodes to the graph. */
int ans_core(struct sq_query *q, double deadline, int *core, int *ncore, struct dn_error *err);
/* Is core[0..ncore) (indices into q->parts) a minimal conflict by the
 * engine: nothing fits these parts together, and something does without
 * any one of them? 1 yes, 0 no, 2 undecided (the deadline), -1 error. */
int ans_core_verify(struct sq_query *q, const int *core, int ncore, double deadline, struct dn_error *err);
/* Does some configuration (of those the caller narrows to) satisfy the
 * boolean node root? 1 yes, 0 no, 2 undecided (a deadline passed), -1
 * error (err): ans_failing_rules' question, asked of ctx. */
typedef int (*ans_exists_fn)(void *ctx, expr_id root, struct dn_error *err);
/* When part `part` of q is the model's validity (of a conflict, or of a
 * removed value's reasons; any other part: nothing is done): which of the
 * model's shape rules no configuration satisfies on
 * its own, as exists answers it (answer_core.c: one check per distinct
 * rule, its condition's node and its text, the first 64), set on item as
 * "rules": [{"rule", "path" (its first place), "places" (how many share
 * it, among those checked)}] (at most 8), "rules_failing" (how many of the
 * rules checked fail everywhere, named or not) and "rules_complete"
 * (whether every rule was checked: not past the cap or a deadline). An
 * empty list with every rule checked: each holds somewhere, and they
 * conflict only together or with other parts. 0, or -1 with err. */
int ans_failing_rules(struct sq_query *q, int part, ans_exists_fn exists, void *ctx, json_t *item,
    struct dn_error *err);
/* Why nothing fits (answer_core.c), for a query the engine counted nothing
 * in: {"decided": bool, "conflict": [{"constraint", "path", "kind":
 * "budget" | "constraint" | "validity", and for a budget: "limit";
 * "at_least" (a most, value <= limit) or "at_most" (a minimum,
 * min_utilization) and "nothing_at" as ans_budget_move sets them}], "note"}.
 * The list is ans_core's minimal set; "decided": false when the deadline
 * (now + seconds) passed first (then the list is empty). Within seconds,
 * give or take one existence check. NULL with err on an error. */
json_t *ans_conflict(struct sq_query *q, double seconds, struct dn_error *err);

/* The largest (ANS_LARGEST) or the smallest (ANS_SMALLEST) value of the
 * numeric parameter `param` that occurs in a feasible configuration,
 * overall or for each value of the discrete `per` (NULL), in the order of
 * per's positions: [{"per value", "param value" | null (nothing fits)}].
 * Exact (answer_extreme.c; a continuous param bound to the model: exact on
 * its grid). Errors name "param" (unknown, unbounded, or values that are
 * not numbers: no order) or "per" (unknown, continuous, the parameter
 * itself, more than 4096 values); a deadline that passes is DN_ETIMEOUT.
 * Uses an engine of its own: e is only read. */
enum ans_goal { ANS_SMALLEST, ANS_LARGEST };
json_t *ans_extreme(struct fs_engine *e, struct sq_query *q, const char *param, const char *per,
    enum ans_goal goal, double timeout, struct dn_error *err);

/* Feasibility over two parameters: {"x","y","x_values","y_values",
 * "feasible": [[bool per x value] per y value]} - whether some feasible
 * configuration has that pair (the other parameters free). At most 4096
 * cells. Uses an engine of its own: e's count is left as it is. */
json_t *ans_heatmap(struct fs_engine *e, struct sq_query *q, const char *x, const char *y, double timeout,
    struct dn_error *err);

/* POST /v1/estimate and dnnsat estimate --json (answer_estimate.c): body
 * {"model","device","workload","config":{hp: value},"budgets","per_op"}
 * -> {"feasible","constraints","config","costs","budgets","warnings"};
 * NULL with err naming the field ("$.config.batch_size"). */
struct cm_device_catalog;
json_t *ans_cost_estimate(const json_t *body, const struct cm_device_catalog *catalog, struct dn_error *err);

#endif
