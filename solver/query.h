/*
 * query.h - a solver query: a model, an NNI search space bound to it, a
 * device, a workload, budgets and user constraints, compiled into ONE
 * boolean expression `feasible` over the model's hyperparameters (validity
 * of the shapes AND every budget AND every user constraint), plus the same
 * parts labelled one by one for explanations.
 *
 * Invariants: the model is built with the space's domains as bounds, so
 * hyperparameters the space does not set are constants; every labelled part
 * is a node of the same graph as `feasible`.
 */
#ifndef DN_QUERY_H
#define DN_QUERY_H

#include <jansson.h>

#include "costmodel.h"
#include "space.h"

enum sq_budget_kind {
	SQ_B_MEMORY, SQ_B_PARAMS, SQ_B_WEIGHT_BYTES, SQ_B_MACS, SQ_B_FLOPS,
	SQ_B_LATENCY, SQ_B_STEP_TIME, SQ_B_MIN_UTIL, SQ_B_COUNT
};

struct sq_part {
	char *label;            /* "budget memory <= 16 GiB", "constraint hidden % heads == 0", "valid: $.layers[3] ..." */
	char *path;             /* the JSON path of the request field it comes from */
	expr_id ok;             /* boolean node */
	expr_id value;          /* the constrained quantity (for explanations), or EXPR_NONE */
	double limit;           /* the budget's limit, when a budget */
	int kind;               /* 0 validity, 1 budget, 2 user constraint */
	int minimum;            /* a budget the value must reach (min_utilization: value >= limit);
	                         * every other budget is a most (value <= limit) */
};

struct sq_query {
	struct cm_model_def *def;
	struct sp_space space;
	struct cm_device device;
	struct cm_workload wl;
	union expr_val *fixed;          /* values of hyperparameters the space does not set */
	struct expr_ival *bounds;       /* per hyperparameter: the space's hull, or the fixed value */
	int has_budget[SQ_B_COUNT];
	double budget[SQ_B_COUNT];
	int memory_from_device;         /* the memory budget is the device's usable memory
	                                 * (none was given, or the one given was more) */
	int memory_safe;                /* the memory budget bounds the safe (upper)
	                                 * estimate, CM_M_MEM_SAFE, not the expected peak */
	char **warnings;                /* things the user should know, one sentence each */
	int nwarnings;
	struct cm_model *model;
	expr_id feasible;
	struct sq_part *parts;
	int nparts;
	int engine_z3;                  /* "engine": "z3": Z3's enumeration cross-checks the count */
	/* space parameters named as workload settings that the query parser
	 * could not cost per configuration and warned about with the reason
	 * (query_settings.c; static strings, NULL-terminated) */
	const char *settings_noted[8];
	/* per space dim: the graph variable Z3 enumerates for the position of
	 * a var that passes through and is nested or holds nested vars
	 * (query_z3.c, sq_z3_selects), -1 for none; NULL until Z3 first
	 * compiles the query (the graph keeps the variables from then on) */
	int32_t *z3_selectors;
};

/*
 * Reads a query from JSON (schema: schemas/api/query.schema.json):
 *   {"model": "resnet50" | {"template": T, "preset": P} | {model object},
 *    "space": {NNI search space}, "device": "a100-40gb" | {device object},
 *    "workload": {"mode": "training"|"inference", "optimizer": "adam", "dtype": "fp32", "tf32": false},
 *    "budgets": {"memory": "16GiB" | bytes | "90%" | {"limit": "16GiB", "estimate": "safe"},
 *                "params": 1e8, "weight_bytes": "200MB",
 *                "macs": "4G", "flops": 8e9, "latency": "10ms", "step_time": "0.5s",
 *                "min_utilization": 0.6},
 *    "constraints": ["hidden % heads == 0", ...],
 *    "fixed": {"num_classes": 100},
 *    "bind": {"hidden_size": "hidden", "layer0/kernel": "kernel_size"},
 *    "engine": "bnb" | "z3"}  (z3: the engine's count cross-checked by Z3's
 *    enumeration, answer_z3.h; the count itself is always the engine's)
 * Budgets of bytes and seconds need a unit (a bare 16 is refused with a
 * hint); counts may be bare. The device's usable memory always applies: a
 * memory budget above it is capped with a warning, none at all means the
 * usable memory; "90%" is a share of the usable memory; "estimate": "safe"
 * bounds the upper estimate of the peak instead of the expected one
 * (default "expected"). Parameters of the
 * space that set nothing in the model (sp_unbound_names) are named in a
 * warning. Errors name the JSON path. `catalog` resolves device names
 * (cm_catalog_resolve: ambiguous and unknown names are errors). Returns 0 or
 * -1; sq_free always.
 */
int sq_parse(const json_t *req, const struct cm_device_catalog *catalog,
    struct sq_query *q, struct dn_error *err);
void sq_free(struct sq_query *q);

/* As sq_parse, with the space optional: a query about the one
 * configuration its "fixed" values give (the /v1/estimate call). */
int sq_parse_point(const json_t *req, const struct cm_device_catalog *catalog,
    struct sq_query *q, struct dn_error *err);

/* Unit parsing: "16GiB", "500 MB", 1e9 (bytes); "4.1G", "300M" (counts);
 * "10ms", "2s", "150us" (seconds). 0 or -1 with err naming `path`. */
int sq_parse_bytes(const json_t *v, const char *path, double *out, struct dn_error *err);
int sq_parse_count(const json_t *v, const char *path, double *out, struct dn_error *err);
int sq_parse_seconds(const json_t *v, const char *path, double *out, struct dn_error *err);

const char *sq_budget_name(enum sq_budget_kind k);

/* A budget's limit as people read it: "16 GiB", "10 ms", "4.1G", "60%". */
void sq_budget_show(const struct sq_query *q, enum sq_budget_kind k, char *buf, size_t len);
/* Any value v of budget k (in its base unit: bytes, seconds, a count, a
 * fraction) as sq_budget_show prints a limit, four digits; with `exact`
 * every digit, in the base unit ("2108271104 B"), for a value that reads
 * as the limit does at four digits. */
void sq_budget_value_show(enum sq_budget_kind k, double v, int exact, char *buf, size_t len);

/* Every budget that applies, normalised, for answers:
 * {"memory": {"value": 16106127360, "unit": "B", "text": "15 GiB",
 *  "source": "device"}, "latency": {"value": 0.01, "unit": "s", "text":
 * "10 ms", "source": "request"}}: unit "B", "s", "" (counts) or "ratio";
 * source "device" when the device's usable memory is the limit. */
json_t *sq_budgets_json(const struct sq_query *q);
/* q's warnings as a JSON array of strings (empty when none). */
json_t *sq_warnings_json(const struct sq_query *q);

#endif
