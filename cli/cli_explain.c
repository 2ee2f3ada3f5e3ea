/*
 * cli_explain.c - `dnnsat explain`, `dnnsat max` and `dnnsat min`, printing
 * the answers of solver/answer.h:
 *   explain --config '{"batch_size": 512, ...}'   every part of the query
 *       (validity, each budget, each user constraint) checked on one
 *       configuration, with the computed value against the limit;
 *   explain --param NAME --value V   why no feasible configuration has
 *       NAME = V: the parts that no configuration with it can satisfy on
 *       their own (under the model's validity, its shape rules that
 *       fail), else the pairs that cannot hold together;
 *   max --param NAME [--per OTHER]   the largest feasible value of NAME,
 *       overall or for each value of OTHER (the largest batch per depth);
 *   min --param NAME [--per OTHER]   the smallest one, likewise.
 * max and min exit 1 when no row has a value (nothing is feasible), 0 when
 * one has, as count does.
 */
#include "answer.h"
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *
parse_value(const char *text)
{
	json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);

	return v != NULL ? v : json_string(text);
}

static void
print_json(const json_t *j)
{
	json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	fputc('\n', stdout);
}

/* cli_fail() for an error of an option's value: its path, the option's name
 * without the dashes, gets them back; an error without a path (the
 * deadline) is printed as it is. */
static int
fail_option(struct dn_error *err)
{
	if (err->path[0] != '\0' && err->path[0] != '$') {
		char p[256];
		dn_fmt(p, sizeof p, "--%s", err->path);
		memcpy(err->path, p, sizeof err->path);
	}
	return cli_fail(err);
}

/* The shape rules an explained configuration breaks (the "violated" items
 * from the model's report), each rule once at its first place with how
 * many of the others repeat it (the rule of every layer of a stack); the
 * answer holds the first 8. */
static void
print_shape_violations(const json_t *violated)
{
	size_t i, k;
	const json_t *c, *d;
	int shapes = 0;

	json_array_foreach(violated, i, c) {
		const char *rule = json_string_value(json_object_get(c, "constraint"));
		int repeats = 0, before = 0;
		if (json_object_get(c, "source") == NULL || rule == NULL)
			continue;
		shapes++;
		json_array_foreach(violated, k, d) {
			const char *other = json_string_value(json_object_get(d, "constraint"));
			if (k == i || json_object_get(d, "source") == NULL || other == NULL || strcmp(other, rule) != 0)
				continue;
			if (k < i)
				before = 1;
			else
				repeats++;
		}
		if (before)
			continue;       /* printed at its first place */
		printf("     %s: %s", json_string_value(json_object_get(c, "path")), rule);
		if (repeats > 0)
			printf(" (and %d more place%s)", repeats, repeats == 1 ? "" : "s");
		printf("\n");
	}
	if (shapes >= 8)        /* the model reports its first 8 (answer_check.c) */
		printf("     (the first 8 violations: `dnnsat estimate` counts them all)\n");
}

static int
explain_config(struct fs_engine *e, const char *text, int json_out)
{
	json_error_t jerr;
	json_t *cfg, *out, *c;
	union expr_val *scratch;
	struct dn_error err;
	size_t i;
	int ok;

	memset(&err, 0, sizeof err);
	if (strcmp(text, "-") == 0) {   /* --config -: the configuration on standard input */
		if (cli_load_json_file(text, "--config", &cfg, &err) != 0)
			return cli_fail(&err);
	} else if ((cfg = json_loads(text, JSON_DECODE_ANY, &jerr)) == NULL) {
		/* a configuration is JSON: say where it is not */
		dn_error_set(&err, DN_EINVAL, "--config", "not JSON: %s (column %d)", jerr.text, jerr.column);
		return cli_fail(&err);
	}
	scratch = calloc((size_t)ans_scratch_len(e), sizeof *scratch);
	out = scratch ? ans_check(e, cfg, scratch, 0, &err) : NULL;
	json_decref(cfg);
	free(scratch);
	if (out == NULL) {
		if (!dn_error_isset(&err))
			dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
		return fail_option(&err);
	}
	ok = json_is_true(json_object_get(out, "feasible"));
	if (json_out) {
		print_json(out);        /* "violated" too, as POST /v1/check answers */
	} else {
		json_array_foreach(json_object_get(out, "constraints"), i, c)
			cli_print_part(c);
		print_shape_violations(json_object_get(out, "violated"));
		printf("%s\n", ok ? "feasible" : "infeasible");
	}
	json_decref(out);
	return ok ? 0 : 1;
}

static int
explain_value(struct fs_engine *e, struct sq_query *q, const char *param, const char *text,
    double timeout, int json_out)
{
	struct dn_error err;
	json_t *val = parse_value(text), *out, *r;
	size_t i;
	int kept;

	memset(&err, 0, sizeof err);
	out = ans_explain_value(e, q, param, val, timeout, &err);
	json_decref(val);
	if (out == NULL)
		return fail_option(&err);
	kept = json_is_true(json_object_get(out, "kept"));
	param = sp_dim_address(&q->space, param);
	if (json_out)
		print_json(out);
	else if (kept)
		printf("%s = %s is kept: some configuration with it fits\n", param, text);
	else {
		json_t *because = json_object_get(out, "because");
		int pairs = json_array_size(because) > 0 &&
		    strstr(json_string_value(json_object_get(json_array_get(because, 0), "constraint")), " AND ") != NULL;
		printf("%s = %s is removed: no configuration with it satisfies %s\n", param, text,
		    pairs ? "these together:" : "these on their own:");
		json_array_foreach(because, i, r) {
			printf("  %s  [%s]\n", json_string_value(json_object_get(r, "constraint")),
			    json_string_value(json_object_get(r, "path")));
			cli_print_rules(r);
		}
		if (json_array_size(because) == 0)
			printf("  (three or more parts together: see explain --config on a configuration)\n");
	}
	json_decref(out);
	return kept ? 0 : 1;
}

/* max and min: the rows of ans_extreme, as JSON or one line each. */
static int
print_extreme(struct fs_engine *e, struct sq_query *q, const char *param, const char *per, enum ans_goal goal,
    double timeout, int json_out)
{
	const char *which = goal == ANS_LARGEST ? "largest" : "smallest";
	struct dn_error err;
	json_t *rows, *row;
	size_t i;
	int fits = 0;

	memset(&err, 0, sizeof err);
	rows = ans_extreme(e, q, param, per, goal, timeout, &err);
	if (rows == NULL)
		return fail_option(&err);
	param = sp_dim_address(&q->space, param);
	if (per != NULL)
		per = sp_dim_address(&q->space, per);
	json_array_foreach(rows, i, row)
		fits |= !json_is_null(json_object_get(row, param));
	if (json_out)
		print_json(rows);
	else
		json_array_foreach(rows, i, row) {
			json_t *best = json_object_get(row, param);
			char *a = json_dumps(best, JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
			if (per != NULL) {
				char *b = json_dumps(json_object_get(row, per),
				    JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
				printf("%s = %s: %s %s = %s\n", per, b, which, param, json_is_null(best) ? "none fits" : a);
				free(b);
			} else
				printf("%s %s = %s\n", which, param, json_is_null(best) ? "none fits" : a);
			free(a);
		}
	json_decref(rows);
	return fits ? 0 : 1;    /* 1: nothing feasible, as count says it (SOLVER_EXIT) */
}

int
cli_solve_more(const char *cmd, struct fs_engine *e, struct sq_query *q, double timeout,
    const char *config, const char *param, const char *value, const char *per, int json_out)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	if (strcmp(cmd, "explain") == 0) {
		if (config != NULL)
			return explain_config(e, config, json_out);
		if (param != NULL && value != NULL)
			return explain_value(e, q, param, value, timeout, json_out);
		dn_error_set(&err, DN_EINVAL, "explain", "give --config JSON, or --param NAME --value V");
	} else if (strcmp(cmd, "max") == 0 || strcmp(cmd, "min") == 0) {
		if (param != NULL)
			return print_extreme(e, q, param, per, strcmp(cmd, "max") == 0 ? ANS_LARGEST : ANS_SMALLEST,
			    timeout, json_out);
		dn_error_set(&err, DN_EINVAL, cmd, "give --param NAME (and --per NAME)");
	} else
		dn_error_set(&err, DN_EINVAL, cmd, "unknown command");
	return cli_fail(&err);
}
