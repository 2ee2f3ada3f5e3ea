/*
 * cli_batch.h - `dnnsat prune`, batch pruning from scripts: what its three
 * files share.
 *   cli_batch.c        options, the loop over (space, device) items, the
 *                      two ways to answer one (the solver in process, or a
 *                      dnnsatd through cli_http.c), the exit status;
 *   cli_batch_input.c  the inputs: NNI spaces and query files, given one by
 *                      one or as directories, and the query of each item;
 *   cli_batch_out.c    the outputs: reduced spaces, configuration lists
 *                      (JSON lines or CSV) and the summary table.
 * Every function that can fail returns 0 or -1 with a dn_error whose path
 * names the file or the option to blame.
 */
#ifndef DN_CLI_BATCH_H
#define DN_CLI_BATCH_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "dn_error.h"

/* One input file: a bare NNI space, or a query file (the fields of
 * solver/query.h, with "space" and "model" allowed as paths of JSON files
 * relative to the query file, and a "timeout" of its own). */
struct batch_input {
	char *file;             /* as given, or directory/name */
	char *name;             /* its base name without ".json": the outputs' prefix */
	json_t *query;          /* {"space": ..., and the query file's other fields} */
	double timeout;         /* the file's "timeout" in seconds, or 0 */
};

struct batch_inputs {
	struct batch_input *v;
	int n, cap;
};

/* Adds a file, or every *.json of a directory (sorted by name). Errors
 * name the file: unreadable, not JSON, not an object, a query file
 * without a space, a space or model file it names that cannot be read,
 * two inputs with the same base name (their outputs would collide). */
int batch_inputs_add(struct batch_inputs *in, const char *path, struct dn_error *err);
void batch_inputs_free(struct batch_inputs *in);

/* The query of one item: the input's query, then the command line's
 * fields over it (budgets, fixed values and the workload merged name by
 * name, constraints appended, the others replaced), then the device (NULL:
 * the query's own, else a100-40gb). New reference, or NULL with err
 * (no model anywhere). */
json_t *batch_item_query(const struct batch_input *in, const json_t *overrides, const char *device,
    struct dn_error *err);

/* The device's name of a query (its "device" string, or an inline
 * device's "name"), made safe for a file name, into buf. */
void batch_device_label(const json_t *query, char *buf, size_t len);

/* ---- outputs ---- */

enum batch_format { BATCH_NONE, BATCH_JSONL, BATCH_CSV, BATCH_TABLE, BATCH_JSON };

/* A file of feasible configurations being written: JSON lines (one NNI
 * sample a line, as `dnnsat list` prints them), or CSV with a header of the
 * space's discrete parameters (a nested choice as NAME/_name, its
 * parameters as NAME/CHILD; an inactive one is left empty). It is written
 * to PATH.tmp and renamed over PATH by batch_configs_close. */
struct batch_configs {
	FILE *f;
	char *path, *tmp;
	int csv;
	const json_t *space;    /* the space in the user's order (borrowed) */
	int ncols;
	int *parent;            /* per column: the column of its enclosing choice, or -1 */
	char **option;          /* per column under a choice: the _name of its option */
	int *nested;            /* per column: a choice of sub-spaces (its cell is the _name) */
	char **key;             /* per column: the key in its JSON object */
	const json_t **cell;    /* per column: scratch for one row */
	int64_t rows;
	int failed;             /* a write failed (errno in write_errno) */
	int write_errno;
};

/* Opens PATH.tmp and writes the CSV header (csv: from `space`, an NNI
 * space, which must outlive c: JSON lines are written with their keys in
 * its order). 0 or -1 with err. */
int batch_configs_open(struct batch_configs *c, const char *path, int csv, const json_t *space,
    struct dn_error *err);
/* Writes one configuration and releases it (an emit callback of
 * ans_walk): 0, or 1 to stop after a write error. */
int batch_configs_put(void *ctx, json_t *sample);
/* Closes the file: renames it over PATH when keep and nothing failed,
 * else removes it. 0 or -1 with err (a write error). Safe to call twice. */
int batch_configs_close(struct batch_configs *c, int keep, struct dn_error *err);

/* The solver answers on the canonical query (keys sorted, as dnnsatd
 * compiles it, so both ways enumerate in one order); fs_space_in_order and
 * fs_config_in_order (solver/fset.h) give the answers back the user's
 * order. */

/* Writes JSON (reduced spaces: indented, as `dnnsat reduce` prints them)
 * to PATH through PATH.tmp and a rename. 0 or -1 with err. */
int batch_write_json(const char *path, const json_t *j, struct dn_error *err);

/* The summary rows, one JSON object per item: {"space", "file", "device",
 * "total", "exact", "feasible" (exact only), "feasible_lower",
 * "feasible_upper", "ratio", "seconds", "reduced_space" (a file name under
 * --out, or null), "configs" (likewise), "configs_written"}; printed to
 * `f` as an aligned table, CSV or JSON. */
void batch_summary_print(FILE *f, const json_t *rows, enum batch_format format);

#endif
