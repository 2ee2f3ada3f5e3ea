/*
 * cli_solve.c - the solver's offline commands, for batch pruning from
 * scripts: count, list, sample, reduce, explain, max, min. A query comes from a
 * JSON file (see solver/query.h for its fields) and/or options that fill it:
 *
 *   dnnsat count  [QUERY.json|-] [--preset P | --template T | --model F]
 *                 [--space SPACE.json] [--device D] [--budget NAME=VALUE]...
 *                 [--constraint EXPR]... [--optimizer O] [--dtype T] [--convention C]
 *                 [--inference] [--set NAME=VALUE]... [--timeout S] [--json]
 *                 [--engine bnb|z3]
 *   dnnsat list   ... [--offset K | --cursor C] [--limit N]     (JSON lines)
 *   dnnsat sample ... [--n N] [--seed S (0 to 2^64 - 1)]        (JSON lines)
 *                 (the count gets half the deadline; when it does not
 *                 finish, samples are drawn without it: approximate)
 *   dnnsat reduce ...                                           (NNI JSON)
 *   dnnsat explain ... (--config JSON | --param NAME --value V)
 *   dnnsat max    ... --param NAME [--per NAME]
 *   dnnsat min    ... --param NAME [--per NAME]
 *
 * Exit status: 0 answered, 1 nothing feasible (or the configuration is
 * infeasible, for explain), 2 bad input, 3 deadline passed (bounds only;
 * for sample: fewer than N samples, those drawn printed).
 */
#include "answer.h"
#include "answer_z3.h"
#include "cli.h"
#include "dn_number.h"
#include "fset.h"
#include "fset_project.h"
#include "query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct solve_opts {
	json_t *req;            /* the query being assembled */
	double timeout;
	int timeout_given;              /* --timeout was given (a query file's "timeout" yields to it) */
	int threads;                    /* counting threads (--threads; default: the processors) */
	int json;
	const char *offset, *cursor, *config, *param, *value, *per;
	int64_t limit, n;
	uint64_t seed;
};

/* A positional argument: NAME=VALUE fixes a hyperparameter (as --set,
 * unless a file has that name), anything else is the query file whose
 * fields go into the query (*file: the one read already, if any). */
static int
positional(const char *a, struct cli_req *r, const char **file, struct dn_error *err)
{
	json_t *q, *x;
	const char *key;

	if (strchr(a, '=') != NULL && access(a, F_OK) != 0)
		return cli_req_option(r, "--set", a, err) < 0 ? -1 : 0;
	if (*file != NULL)      /* one query: a second file's fields would overwrite the first's */
		return dn_error_set(err, DN_EINVAL, a, "a second query file (the query is %s; "
		    "options and NAME=VALUE add to it)", *file);
	*file = a;
	if (cli_load_json_file(a, "query", &q, err) != 0)
		return -1;
	if (!json_is_object(q)) {
		json_decref(q);
		return dn_error_set(err, DN_EINVAL, a, "a query file holds a JSON object");
	}
	json_object_foreach(q, key, x)
		json_object_set(r->req, key, x);
	json_decref(q);
	return 0;
}

/* The options of the solver commands besides the query's: v is the value. */
static int
solve_option(const char *a, const char *v, struct solve_opts *o, struct dn_error *err)
{
	char *end;

	if (strcmp(a, "--timeout") == 0) {
		if (cli_parse_timeout(a, v, &o->timeout, err) != 0)
			return -1;
		o->timeout_given = 1;
	} else if (strcmp(a, "--threads") == 0) {
		if (cli_parse_threads(a, v, &o->threads, err) != 0)
			return -1;
	} else if (strcmp(a, "--limit") == 0 || strcmp(a, "--n") == 0) {
		long long x = strtoll(v, &end, 10);
		if (*v == '\0' || *end || x < 1 || x > 100000000)
			return dn_error_set(err, DN_EINVAL, a, "must be a count from 1 to 100000000");
		*(a[2] == 'l' ? &o->limit : &o->n) = x;
	} else if (strcmp(a, "--seed") == 0) {
		/* digits only: strtoull would take "-1" (wrapped), " 7", "0x10"
		 * and "abc" (0) and stop at "1.5" (1) without a word */
		unsigned long long x;
		errno = 0;
		x = strtoull(v, &end, 10);
		if (*v < '0' || *v > '9' || *end != '\0' || errno == ERANGE)
			return dn_error_set(err, DN_EINVAL, a, "\"%s\" is not an integer from 0 to %" PRIu64, v,
			    UINT64_MAX);
		o->seed = (uint64_t)x;
	} else if (strcmp(a, "--offset") == 0)
		o->offset = v;
	else if (strcmp(a, "--cursor") == 0)
		o->cursor = v;
	else if (strcmp(a, "--config") == 0)
		o->config = v;
	else if (strcmp(a, "--param") == 0)
		o->param = v;
	else if (strcmp(a, "--value") == 0)
		o->value = v;
	else
		o->per = v;
	return 0;
}

/* Reads argv into o->req: the query options through r (cli_common.c),
 * positional arguments (positional), the rest here. */
static int
parse_args(int argc, char **argv, struct solve_opts *o, struct cli_req *r, struct dn_error *err)
{
	static const char *const valued[] = { "--timeout", "--threads", "--offset", "--limit", "--n", "--seed", "--cursor",
		"--config", "--param", "--value", "--per" };
	/* the commands that read each of them (any other would drop it unsaid) */
	static const char *const used_by[] = { "count, list, sample, reduce, explain, max, min",
		"count, list, sample, reduce, explain, max, min", "list", "list", "sample", "sample", "list", "explain",
		"explain, max and min", "explain", "max and min" };
	const char *file = NULL;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		size_t k;
		int used;
		if (a[0] != '-' || strcmp(a, "-") == 0) {      /* "-": the query on standard input */
			if (positional(a, r, &file, err) != 0)
				return -1;
			continue;
		}
		used = cli_req_option(r, a, v, err);
		if (used < 0)
			return -1;
		if (used > 0) {
			i += used - 1;
			continue;
		}
		if (strcmp(a, "--json") == 0) {
			o->json = 1;
			continue;
		}
		if (strcmp(a, "--engine") == 0) {         /* the query's "engine" (checked by sq_parse) */
			if (v == NULL)
				return dn_error_set(err, DN_EINVAL, a, "needs a value: bnb or z3");
			json_object_set_new(r->req, "engine", json_string(v));
			i++;
			continue;
		}
		for (k = 0; k < sizeof valued / sizeof valued[0] && strcmp(a, valued[k]) != 0; k++)
			;
		if (k == sizeof valued / sizeof valued[0])
			return cli_unknown_option(argv[0], a, err);
		if (!strstr(used_by[k], argv[0]))
			return dn_error_set(err, DN_EINVAL, a, "not an option of %s (%s take%s it)", argv[0], used_by[k],
			    strchr(used_by[k], ' ') ? "" : "s");  /* the names do not contain one another */
		if (v == NULL)
			return dn_error_set(err, DN_EINVAL, a, "needs a value");
		if (solve_option(a, v, o, err) != 0)
			return -1;
		i++;
	}
	/* both start a page: the offset would win and the cursor go unread */
	if (o->offset != NULL && o->cursor != NULL)
		return dn_error_set(err, DN_EINVAL, "--cursor", "give --cursor or --offset, not both (--cursor %.32s%s "
		    "and --offset %.32s)", o->cursor, strlen(o->cursor) > 32 ? "..." : "", o->offset);
	return 0;
}

static int
parse_opts(int argc, char **argv, struct solve_opts *o, struct dn_error *err)
{
	struct cli_req r;
	int rc;

	memset(o, 0, sizeof *o);
	o->timeout = 60;
	o->threads = fs_par_cores();
	o->limit = -1;
	o->n = 10;
	o->seed = 1;
	cli_req_init(&r);
	rc = parse_args(argc, argv, o, &r, err);
	o->req = cli_req_finish(&r);
	/* a query file written for the service may carry its deadline: it
	 * is the CLI's too, unless --timeout said otherwise */
	if (rc == 0 && o->req != NULL && json_object_get(o->req, "timeout") != NULL) {
		const json_t *t = json_object_get(o->req, "timeout");
		if (!json_is_number(t) || !(json_number_value(t) > 0 && json_number_value(t) <= CLI_MAX_TIMEOUT))
			return dn_error_set(err, DN_EINVAL, "$.timeout", "must be a number of seconds, more than 0 and at "
			    "most %d (a day)", CLI_MAX_TIMEOUT);
		if (!o->timeout_given)
			o->timeout = json_number_value(t);
		json_object_del(o->req, "timeout");
	}
	return rc;
}

static int
open_query(struct solve_opts *o, struct sq_query *q, struct cm_device_catalog *cat, struct dn_error *err)
{
	char path[1024];

	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	if (cm_catalog_load(path, cat, err) != 0)
		return -1;
	return sq_parse(o->req, cat, q, err);
}

static int
print_config(void *ctx, json_t *sample)
{
	if (ctx != NULL)
		++*(int64_t *)ctx;
	json_dumpf(sample, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15));
	fputc('\n', stdout);
	json_decref(sample);
	return 0;
}

/* A progress line on a terminal for runs longer than a second. */
struct progress {
	double start;
	int shown;
};

static void
show_progress(void *ctx, const struct fs_engine *e)
{
	struct progress *p = ctx;
	double t = fs_now() - p->start;

	if (t < 1.0)
		return;
	fprintf(stderr, "\r%s: %.1f s, %" PRId64 " boxes decided%s", e->counted ? "searching" : "counting", t,
	    e->bound_calls, e->deadline > 0 ? " (deadline set)" : "");
	p->shown = 1;
}

static void
end_progress(struct progress *p)
{
	if (p->shown)
		fprintf(stderr, "\r\033[K");
}

/* How continuous hyperparameters bound to the model are counted: a
 * configuration counts when it fits at one value of each one's grid. */
static void
print_real_grids(const struct fs_engine *e, json_t *j)
{
	json_t *a = json_array();

	for (int c = 0; c < e->ncvars; c++) {
		const struct fs_cvar *cv = &e->cvars[c];
		const char *name = e->q->space.dims[cv->dim].name;
		long long n = (1LL << cv->bits) + 1;
		if (j != NULL)
			json_array_append_new(a, json_pack("{s:s,s:f,s:f,s:I,s:s}", "name", name, "low", cv->L,
			    "high", cv->H, "grid", (json_int_t)n, "spacing", cv->logscale ? "geometric" : "even"));
		else
			printf("%s is continuous: a configuration counts when it fits at one of %lld %s spaced values "
			    "from %.15g to %.15g\n", name, n, cv->logscale ? "geometrically" : "evenly", cv->L, cv->H);
	}
	if (j != NULL && e->ncvars > 0)
		json_object_set(j, "continuous", a);
	json_decref(a);
}

/* Seconds of the deadline left at this point, counted from t0; at least
 * one. */
static double
seconds_left(const struct solve_opts *o, double t0)
{
	double left = o->timeout - (fs_now() - t0);

	return left > 1.0 ? left : 1.0;
}

/* What a count adds: with --engine z3 Z3's enumeration as a cross-check
 * (*zc, answer_z3.h); when nothing fits, the conflicting parts and how far
 * each budget would have to move (*cf, ans_conflict), with --engine z3
 * Z3's unsat core beside them. Either may stay NULL. Each gets
 * what is left of the deadline counted from t0 (a second at least, as the
 * server gives). 0, or -1 with err. */
static int
z3_answers(struct fs_engine *e, struct solve_opts *o, double t0, json_t **zc, json_t **cf, struct dn_error *err)
{
	json_t *range;

	*zc = *cf = NULL;
	if (e->q->engine_z3 &&
	    (*zc = ans_z3_count(e->q, e, ANS_Z3_MAX_MODELS, ANS_Z3_RLIMIT, seconds_left(o, t0), err)) == NULL)
		return -1;
	if (*zc != NULL && e->ncvars > 0) {
		if ((range = ans_z3_range(e->q, e, ANS_Z3_RLIMIT, seconds_left(o, t0), err)) == NULL) {
			json_decref(*zc);
			*zc = NULL;
			return -1;
		}
		json_object_set_new(*zc, "range", range);
	}
	if (e->lower == e->upper && e->lower == 0 &&
	    ((*cf = ans_conflict(e->q, seconds_left(o, t0), err)) == NULL ||
	    (e->q->engine_z3 && ans_z3_conflict_check(e->q, e, *cf, ANS_Z3_RLIMIT, seconds_left(o, t0), err) != 0))) {
		json_decref(*zc);
		json_decref(*cf);
		*zc = *cf = NULL;
		return -1;
	}
	return 0;
}

/* One line per continuous hyperparameter of ans_z3_range's answer: its
 * feasible range over the reals next to the grid's hull. */
static void
print_z3_range(const json_t *range)
{
	size_t i;
	json_t *it;

	json_array_foreach(json_object_get(range, "continuous"), i, it) {
		const char *name = json_string_value(json_object_get(it, "name"));
		json_t *mn = json_object_get(it, "min_bracket"), *mx = json_object_get(it, "max_bracket");
		json_t *hull = json_object_get(it, "grid_hull"), *stopped = json_object_get(it, "stopped");
		int exact = json_is_true(json_object_get(it, "exact"));

		if (json_is_false(json_object_get(it, "feasible"))) {
			printf("z3 range %s: no value fits (interval bounds)\n", name);
			continue;
		}
		printf("z3 range %s:", name);
		if (json_is_array(mn))
			printf(" infimum in [%.15g, %.15g]", json_number_value(json_array_get(mn, 0)),
			    json_number_value(json_array_get(mn, 1)));
		if (json_is_array(mx))
			printf("%s supremum in [%.15g, %.15g]", json_is_array(mn) ? "," : "",
			    json_number_value(json_array_get(mx, 0)), json_number_value(json_array_get(mx, 1)));
		printf(", %s", exact ? "exact" : "not exact");
		if (json_is_string(stopped))
			printf(" (%s)", json_string_value(stopped));
		if (json_is_array(hull))
			printf("; grid hull [%.15g, %.15g]", json_number_value(json_array_get(hull, 0)),
			    json_number_value(json_array_get(hull, 1)));
		printf("\n");
	}
}

/* Z3's unsat core beside the engine's conflict (--engine z3), one line:
 * its parts' paths and whether the engine agrees. */
static void
print_z3_core(const json_t *z)
{
	size_t i;
	json_t *path;
	const char *name;
	json_t *v;

	if (z == NULL)
		return;
	if (!json_is_true(json_object_get(z, "decided"))) {
		printf("z3       no core: %s\n", json_string_value(json_object_get(z, "note")));
		return;
	}
	printf("z3       core:");
	json_array_foreach(json_object_get(z, "conflict"), i, path)
		printf(" %s", json_string_value(path));
	if (json_object_size(json_object_get(z, "held")) > 0) {
		printf(" (at");
		json_object_foreach(json_object_get(z, "held"), name, v)
			printf(" %s=%.6g", name, json_number_value(v));
		printf(")");
	}
	printf("\n         %s\n", json_string_value(json_object_get(z, "note")));
}

/* A conflict's limit of budget `budget` as the budget itself is printed
 * (four digits: "memory <= 1.963 GiB (something fits from 1.963 GiB)"
 * read as a contradiction when it was 1.96), with every digit when the
 * two texts would be the same ("from 2108271104 B"). */
static const char *
limit_text(const struct sq_query *q, const char *budget, double v, char *buf, size_t len)
{
	char own[64];

	for (int k = 0; k < SQ_B_COUNT; k++)
		if (strcmp(budget, sq_budget_name((enum sq_budget_kind)k)) == 0) {
			sq_budget_value_show((enum sq_budget_kind)k, v, 0, buf, len);
			sq_budget_show(q, (enum sq_budget_kind)k, own, sizeof own);
			if (strcmp(buf, own) == 0)
				sq_budget_value_show((enum sq_budget_kind)k, v, 1, buf, len);
			return buf;
		}
	return cli_human_budget(budget, v, buf, len);
}

/* The text of z3_answers' results, after the count. */
static void
print_z3(const struct sq_query *q, const json_t *zc, const json_t *cf)
{
	size_t i;
	json_t *item;

	if (zc != NULL && json_is_string(json_object_get(zc, "stopped")) &&
	    strcmp(json_string_value(json_object_get(zc, "stopped")), "continuous parameter") == 0)
		printf("z3       no enumeration: the engine counts on the grid of a continuous parameter\n");
	else if (zc != NULL) {
		int complete = json_is_true(json_object_get(zc, "complete"));
		json_t *agrees = json_object_get(zc, "agrees");
		json_int_t per = json_integer_value(json_object_get(zc, "configurations_per_model"));
		json_int_t models = json_integer_value(json_object_get(zc, "models"));
		char how[96] = ", complete";
		const char *stopped = json_string_value(json_object_get(zc, "stopped"));
		if (!complete)
			snprintf(how, sizeof how, " (stopped: %s)", stopped != NULL ? stopped : "?");
		if (per > 1)
			printf("z3       %" JSON_INTEGER_FORMAT " models (the hyperparameters and nested options) by "
			    "enumeration with blocking clauses%s, each %" JSON_INTEGER_FORMAT " configurations (the "
			    "top-level parameters that pass through): %.0f\n", models, how, per,
			    (double)models * (double)per);
		else
			printf("z3       %" JSON_INTEGER_FORMAT " configurations by enumeration with blocking clauses%s\n",
			    models, how);
		printf("         %s\n", json_is_true(agrees) ? "agrees with the engine's count" :
		    json_is_false(agrees) ? "DISAGREES with the engine's count (please report it)" :
		    "no comparison: one of the counts is not complete");
	}
	if (zc != NULL)
		print_z3_range(json_object_get(zc, "range"));
	if (cf == NULL)
		return;
	if (!json_is_true(json_object_get(cf, "decided")) || json_array_size(json_object_get(cf, "conflict")) == 0)
		printf("nothing fits: %s\n", json_string_value(json_object_get(cf, "note")));
	else
		printf("nothing fits: these conflict (without any one of them the others fit together):\n");
	json_array_foreach(json_object_get(cf, "conflict"), i, item) {
		json_t *least = json_object_get(item, "at_least"), *most = json_object_get(item, "at_most");
		const char *path = json_string_value(json_object_get(item, "path"));
		/* the limits in the budget's unit ("$.budgets.latency": seconds) */
		const char *budget = path != NULL && strncmp(path, "$.budgets.", 10) == 0 ? path + 10 : "";
		char h[64];
		printf("  %s", json_string_value(json_object_get(item, "constraint")));
		if (json_is_number(least))
			printf("  (something fits from %s)", limit_text(q, budget, json_number_value(least), h, sizeof h));
		else if (json_is_number(most))
			printf("  (something fits up to %s)", limit_text(q, budget, json_number_value(most), h, sizeof h));
		else if (json_object_get(item, "limit") != NULL)
			printf("  (no value of it alone makes something fit, or the deadline passed first)");
		printf("\n");
		cli_print_rules(item);
	}
	print_z3_core(json_object_get(cf, "z3"));
}

static int
cmd_count(struct fs_engine *e, struct solve_opts *o)
{
	char total[64], lo[64], hi[64];
	double t0 = fs_now(), dt;
	struct dn_error err;

	double spare = o->timeout / 5 < 1.0 ? o->timeout / 5 : 1.0;
	json_t *j, *zc = NULL, *cf = NULL;

	memset(&err, 0, sizeof err);
	/* the last fifth of the deadline (a second at most) for the estimate */
	if (fs_count_all(e, o->timeout - spare, &err) != 0)
		return cli_fail(&err);
	j = ans_count_estimated(e, 0, spare, o->seed, &err);
	if (j == NULL)
		return cli_fail(&err);
	dt = fs_now() - t0;
	if (z3_answers(e, o, t0, &zc, &cf, &err) != 0) {
		json_decref(j);
		return cli_fail(&err);
	}
	fs_count_str(e->total, total, sizeof total);
	fs_count_str(e->lower, lo, sizeof lo);
	fs_count_str(e->upper, hi, sizeof hi);
	if (o->json) {
		json_object_set_new(j, "seconds", json_real(dt));
		json_object_set_new(j, "boxes", json_integer((json_int_t)e->bound_calls));
		if (zc != NULL)
			json_object_set(j, "z3", zc);
		if (cf != NULL)
			json_object_set(j, "conflict", cf);
		print_real_grids(e, j);
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	} else if (e->lower == e->upper)
		printf("feasible %s of %s configurations (%.4g%%), exact, %.3f s\n", lo, total,
		    e->total ? 100.0 * (double)e->lower / (double)e->total : 0.0, dt);
	else {
		json_t *est = json_object_get(j, "estimate");
		printf("feasible between %s and %s of %s configurations (deadline of %g s passed)\n", lo, hi, total,
		    o->timeout);
		printf("estimate %.4g, 95%% interval %.4g to %.4g (%" JSON_INTEGER_FORMAT " draws)\n",
		    json_number_value(json_object_get(est, "feasible")), json_number_value(json_object_get(est, "low")),
		    json_number_value(json_object_get(est, "high")), json_integer_value(json_object_get(est, "draws")));
	}
	json_decref(j);
	if (!o->json) {
		cli_print_budgets(stdout, e->q);
		print_real_grids(e, NULL);
	}
	if (!o->json)
		print_z3(e->q, zc, cf);
	json_decref(zc);
	json_decref(cf);
	if (e->lower != e->upper)
		return 3;
	return e->lower > 0 ? 0 : 1;
}

static int
cmd_list(struct fs_engine *e, struct solve_opts *o)
{
	struct dn_error err;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	uint64_t fp = ans_fingerprint(o->req);
	int64_t printed = 0;
	int started = 0, r;

	memset(&err, 0, sizeof err);
	if (o->offset != NULL) {
		fs_count k;
		char total[64];
		if (fs_count_parse(o->offset, &k) != 0) {
			dn_error_set(&err, DN_EINVAL, "--offset", "must be a non-negative integer");
			free(pos);
			return cli_fail(&err);
		}
		if (fs_count_all(e, o->timeout, &err) != 0 || e->lower != e->upper) {
			if (!dn_error_isset(&err))
				dn_error_set(&err, DN_ETIMEOUT, "--offset", "the count did not finish in %g s: "
				    "use --cursor to page instead", o->timeout);
			free(pos);
			return cli_fail(&err);
		}
		r = fs_kth(e, k, pos, &err);
		if (r != 0) {
			free(pos);
			if (r < 0)
				return cli_fail(&err);
			/* past the end: an empty page, as the API answers it */
			fs_count_str(e->lower, total, sizeof total);
			fprintf(stderr, "dnnsat: no configuration at --offset %s: %s fit\n", o->offset, total);
			return e->lower > 0 ? 0 : 1;
		}
		started = 1;
	} else if (o->cursor != NULL) {
		if (ans_cursor_parse(e, fp, o->cursor, pos, &err) != 0) {
			memcpy(err.path, "--cursor", sizeof "--cursor");
			free(pos);
			return cli_fail(&err);
		}
		started = 1;
	}
	r = ans_walk(e, pos, started, o->limit, print_config, &printed, &err);
	if (r < 0) {
		free(pos);
		return cli_fail(&err);
	}
	if (r == 1) {
		char *c = ans_cursor_make(e, fp, pos);
		fflush(stdout);         /* the page whole before the cursor, where both go to one file */
		fprintf(stderr, "next cursor: %s\n", c ? c : "(out of memory)");
		free(c);
	}
	free(pos);
	return printed > 0 ? 0 : 1;
}

static int
cmd_sample(struct fs_engine *e, struct solve_opts *o)
{
	struct dn_error err;
	json_t *out, *j;
	size_t i;

	double end = fs_now() + o->timeout;
	int complete;

	memset(&err, 0, sizeof err);
	/* half the deadline for the count; samples without it when it does not finish */
	if (fs_count_all(e, o->timeout / 2, &err) != 0)
		return cli_fail(&err);
	if (e->lower == 0 && e->upper == 0) {
		fprintf(stderr, "dnnsat: no feasible configuration to sample\n");
		return 1;
	}
	out = ans_samples_any(e, o->n, o->seed, end, &err);
	if (out == NULL)
		return cli_fail(&err);
	json_array_foreach(json_object_get(out, "items"), i, j)
		print_config(NULL, json_incref(j));
	complete = json_is_true(json_object_get(out, "complete"));
	fflush(stdout);                 /* the samples whole before the notes */
	if (e->lower != e->upper)
		fprintf(stderr, "dnnsat: the count did not finish in %g s: approximate samples (uniform within each "
		    "region of the count, regions weighted by estimated counts)\n", o->timeout / 2);
	if (!complete)
		fprintf(stderr, "dnnsat: the deadline of %g s passed after %zu of %" PRId64 " samples\n", o->timeout,
		    json_array_size(json_object_get(out, "items")), o->n);
	json_decref(out);
	return complete ? 0 : 3;
}

static int
cmd_reduce(struct fs_engine *e, struct solve_opts *o)
{
	struct dn_error err;
	struct fs_projection p;
	json_t *r;

	memset(&err, 0, sizeof err);
	/* half the deadline for the count: the projection walks what it stored */
	if (fs_count_all(e, o->timeout / 2, &err) != 0 || fs_project(e, &p, &err) != 0)
		return cli_fail(&err);
	r = fs_reduced_space(e, &p, &err);     /* undecided values kept: a drop-in loses nothing that fits */
	fs_projection_free(&p);
	if (r == NULL) {
		cli_print_error(&err);
		return 1;
	}
	json_dumpf(r, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	fputc('\n', stdout);
	fflush(stdout);         /* the space whole before the note, where both go to one file */
	json_decref(r);
	if (e->lower != e->upper) {
		fprintf(stderr, "dnnsat: the count did not finish in %g s: values in undecided regions were kept (every value "
		    "that fits is in the space; some configurations of it may not fit)\n", o->timeout / 2);
		return 3;
	}
	return 0;
}

int
cli_solve(int argc, char **argv)
{
	struct solve_opts o;
	struct sq_query q;
	struct cm_device_catalog cat;
	struct fs_engine e;
	struct dn_error err;
	int status;
	const char *cmd = argv[0];

	memset(&err, 0, sizeof err);
	memset(&q, 0, sizeof q);
	memset(&cat, 0, sizeof cat);
	memset(&e, 0, sizeof e);
	if (parse_opts(argc, argv, &o, &err) != 0 || open_query(&o, &q, &cat, &err) != 0 ||
	    fs_init(&e, &q, &err) != 0) {
		cli_suggest_query(&err, o.req);
		status = cli_fail(&err);
		goto out;
	}
	cli_print_warnings(&q, NULL);
	e.threads = o.threads;
	{
		static struct progress prog;
		prog.start = fs_now();
		prog.shown = 0;
		if (isatty(2)) {
			e.progress = show_progress;
			e.progress_ctx = &prog;
			e.next_progress = prog.start + 1.0;
		}
	}
	if (strcmp(cmd, "count") == 0)
		status = cmd_count(&e, &o);
	else if (strcmp(cmd, "list") == 0)
		status = cmd_list(&e, &o);
	else if (strcmp(cmd, "sample") == 0)
		status = cmd_sample(&e, &o);
	else if (strcmp(cmd, "reduce") == 0)
		status = cmd_reduce(&e, &o);
	else
		status = cli_solve_more(cmd, &e, &q, o.timeout, o.config, o.param, o.value, o.per, o.json);
out:
	if (e.progress_ctx != NULL)
		end_progress(e.progress_ctx);
	fs_free(&e);
	sq_free(&q);
	cm_catalog_free(&cat);
	json_decref(o.req);
	return status;
}
