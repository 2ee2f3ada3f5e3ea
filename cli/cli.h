/*
 * cli.h - the dnnsat command line: one file per subcommand (cli_*.c), the
 * shared option handling in cli_common.c. Every subcommand returns the
 * process exit status: 0 success, 1 a negative answer (an infeasible
 * configuration), 2 bad input (with a message on stderr naming the field).
 */
#ifndef DN_CLI_H
#define DN_CLI_H

#include <stdio.h>

#include "costmodel.h"

/* What estimate-like subcommands share: the model, its configuration, the
 * device and the workload, read from the options. */
struct cli_query {
	struct cm_model_def *def;
	union expr_val *config;
	struct cm_device_catalog catalog;
	struct cm_device device;
	json_t *device_json;    /* --device-file's object, else NULL */
	struct cm_workload wl;
	const char *preset;
	int json;
	int per_op;
	json_t *budgets;        /* --budget NAME=LIMIT (estimate): the API's "budgets", or NULL */
	json_t *given;          /* the budgets given, as cli_req's (below), or NULL */
};

/* Parses the common options (see cli_usage) from argv; leaves unknown ones
 * to the caller through `extra` (returns their count). 0 or -1 with err. */
int cli_query_parse(int argc, char **argv, struct cli_query *q, struct dn_error *err);
void cli_query_free(struct cli_query *q);
void cli_print_error(const struct dn_error *err);
/* cli_print_error, then the solver commands' exit status for it: 3 when the
 * --timeout passed, else 2 (bad input). */
int cli_fail(const struct dn_error *err);
/* --budget NAME=VALUE (memory=LIMIT[:safe|:expected]) into a query's
 * "budgets" object, the query parser checking names and values. Each
 * quantity once: given (an object, "the NAME budget" -> the option as
 * typed) records it, and a second budget of the same NAME is refused with
 * both as typed. 0 or -1 with err. */
int cli_budget_option(json_t *budgets, json_t *given, const char *opt, const char *v, struct dn_error *err);
/* One part of a check on stdout: "FAIL memory 8.90 GiB > 3 GiB" for a budget
 * (its value in its unit, the limit as the query states it), "ok   hidden %
 * heads == 0 (value 0)" for a constraint with a value. */
void cli_print_part(const json_t *c);
/* Under the model's validity in a conflict or a removed value's reasons,
 * its "rules" (ans_failing_rules) on stdout, indented four spaces: "no
 * configuration satisfies: RULE (PATH and N more places)", how many more
 * fail, and whether every rule was checked; nothing when item has none. */
void cli_print_rules(const json_t *item);
struct sq_query;
/* A query's warnings on stderr, "dnnsat: [prefix: ]warning: ...". */
void cli_print_warnings(const struct sq_query *q, const char *prefix);
/* "budgets: memory <= 16 GiB, latency <= 10 ms" (each budget as the
 * query understood it), one line on f; nothing when no budget applies. */
void cli_print_budgets(FILE *f, const struct sq_query *q);

/* The options that build a solver query (solver/query.h) as JSON, shared
 * by count ... max, min (cli_solve.c) and prune (cli_batch.c): --preset,
 * --template, --model FILE, --space FILE, --device, --budget NAME=VALUE,
 * --set NAME=VALUE, --constraint, --optimizer, --dtype, --convention, --inference,
 * --bind PARAMETER=HYPERPARAMETER. The repeatable ones collect in their own
 * objects until cli_req_finish. */
struct cli_req {
	json_t *req, *budgets, *constraints, *fixed, *workload, *bind;
	json_t *given;          /* what may be given once ("model", "the memory budget") ->
	                         * the option as typed, for the error of a second */
};
void cli_req_init(struct cli_req *r);
/* Takes option `a` with its value `v` (NULL when argv ends): returns the
 * argv entries used (1 or 2), 0 when `a` is not a query option, -1 with
 * err (a missing value, an unreadable file, or a second value of what is
 * given once: the model, --space, a --budget of the same quantity, a --bind
 * of the same parameter; the error names both). --constraint, --set and
 * the lists (--freeze, --train, --lora-targets) are repeatable. */
int cli_req_option(struct cli_req *r, const char *a, const char *v, struct dn_error *err);
/* The query with the collected budgets, constraints, fixed values and
 * workload merged in: a new reference the caller owns; r is emptied. */
json_t *cli_req_finish(struct cli_req *r);
/* Releases everything r holds (also after cli_req_finish). */
void cli_req_free(struct cli_req *r);
/* A JSON file, with JSON_REJECT_DUPLICATES; errors name `what` and give
 * the file, line and column. "-" is standard input (once: a second "-" is
 * an error naming what read it). 0 or -1. */
int cli_load_json_file(const char *file, const char *what, json_t **out, struct dn_error *err);
/* --threads N (count, list, sample, reduce, explain, max, min, prune): the
 * counting threads, 1 to 1024, into *out. 0 or -1 with err naming opt. */
int cli_parse_threads(const char *opt, const char *v, int *out, struct dn_error *err);

/* --timeout SECONDS (the solver commands, prune): more than 0, at most
 * CLI_MAX_TIMEOUT (a day), into *out. 0 or -1 with err naming opt. */
#define CLI_MAX_TIMEOUT 86400
int cli_parse_timeout(const char *opt, const char *v, double *out, struct dn_error *err);

/* Numbers for text answers (cli_units.c), written into buf and returned:
 * 4.19 GiB (binary units; bytes below 1 KiB exact), 120.7M (SI, four
 * digits), 605.9 ms (us, ms or s), and a budget's value in its own unit
 * (budget: "memory", "latency", "params", "min_utilization", ...). */
const char *cli_human_bytes(double b, char *buf, size_t len);
const char *cli_human_count(double n, char *buf, size_t len);
const char *cli_human_seconds(double s, char *buf, size_t len);
const char *cli_human_budget(const char *budget, double v, char *buf, size_t len);

int cli_estimate(int argc, char **argv);
int cli_solve(int argc, char **argv);

struct fs_engine;
struct sq_query;
/* explain, max and min (cli_explain.c), on an engine cli_solve prepared */
int cli_solve_more(const char *cmd, struct fs_engine *e, struct sq_query *q, double timeout,
    const char *config, const char *param, const char *value, const char *per, int json_out);
int cli_templates(int argc, char **argv);
/* dnnsat import (cli_import.c) */
int cli_import(int argc, char **argv);
/* A --model file: an ONNX model (FILE.onnx, imported with its defaults,
 * warnings on stderr) or a model file (JSON). 0 with *out a new reference,
 * or -1 with err naming --model. */
int cli_load_model_file(const char *file, json_t **out, struct dn_error *err);
/* prune: many spaces and devices at once, offline or through a server (cli_batch.c) */
int cli_prune(int argc, char **argv);
int cli_devices(int argc, char **argv);

/* The commands (cli_help.c): each one's function, its line in dnnsat
 * --help, its usage (dnnsat COMMAND --help) and every option its parser
 * takes (NULL-terminated), the candidates of "did you mean". */
struct cli_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
	const char *usage;
	const char *const *options;
};
/* The command named `name`, or NULL. */
const struct cli_cmd *cli_cmd_find(const char *name);
/* dnnsat --help on f. */
void cli_usage(FILE *f);
/* The usage of command `name` on f: 0, or -1 with err (unknown command,
 * with the closest names). */
int cli_help(const char *name, FILE *f, struct dn_error *err);
/* Sets err for an unknown command or option of command `cmd`, with the
 * closest names that exist ("did you mean --device?"); returns -1. */
int cli_unknown_command(const char *name, struct dn_error *err);
int cli_unknown_option(const char *cmd, const char *opt, struct dn_error *err);

/* "did you mean" added to an error the libraries set without one
 * (cli_suggest.c); nothing changes when err is about something else.
 * An unknown template or preset `name`: */
void cli_suggest_model(struct dn_error *err, const char *name);
/* An unknown hyperparameter `name` of def: */
void cli_suggest_hparam(struct dn_error *err, const struct cm_model_def *def, const char *name);
/* An error of sq_parse on the query req ($.model..., $.fixed.NAME): */
void cli_suggest_query(struct dn_error *err, const json_t *req);

#endif
