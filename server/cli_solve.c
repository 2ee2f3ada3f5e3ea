/*
 * cli_solve.c - the solver's offline commands, for batch pruning from
 * scripts: count, list, sample, reduce, explain, max. A query comes from a
 * JSON file (see solver/query.h for its fields) and/or options that fill it:
 *
 *   dnnsat count  [QUERY.json] [--preset P | --template T | --model F]
 *                 [--space SPACE.json] [--device D] [--budget NAME=VALUE]...
 *                 [--constraint EXPR]... [--optimizer O] [--dtype T]
 *                 [--inference] [--set NAME=VALUE]... [--timeout S] [--json]
 *   dnnsat list   ... [--offset K] [--limit N] [--cursor C]     (JSON lines)
 *   dnnsat sample ... [--n N] [--seed S]                        (JSON lines)
 *   dnnsat reduce ...                                           (NNI JSON)
 *   dnnsat explain ... (--config JSON | --param NAME --value V)
 *   dnnsat max    ... --param NAME [--per NAME]
 *
 * Exit status: 0 answered, 1 nothing feasible (or the configuration is
 * infeasible, for explain), 2 bad input, 3 deadline passed (bounds only).
 */
#include "cli.h"
#include "fset.h"
#include "fset_project.h"
#include "query.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct solve_opts {
	json_t *req;            /* the query being assembled */
	double timeout;
	int json;
	const char *offset, *cursor, *config, *param, *value, *per;
	int64_t limit, n;
	uint64_t seed;
};

static int
fail(struct dn_error *err)
{
	cli_print_error(err);
	return 2;
}

static int
load_json_file(const char *file, const char *what, json_t **out, struct dn_error *err)
{
	json_error_t jerr;

	*out = json_load_file(file, JSON_REJECT_DUPLICATES, &jerr);
	if (*out == NULL)
		return dn_error_set(err, DN_EINVAL, what, "%s: line %d, column %d: %s", file, jerr.line,
		    jerr.column, jerr.text);
	return 0;
}

static int
parse_opts(int argc, char **argv, struct solve_opts *o, struct dn_error *err)
{
	json_t *budgets = json_object(), *constraints = json_array(), *fixed = json_object();
	json_t *workload = json_object();

	memset(o, 0, sizeof *o);
	o->timeout = 60;
	o->limit = -1;
	o->n = 10;
	o->seed = 1;
	o->req = json_object();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = 1;
		if (a[0] != '-') {
			json_t *q;
			const char *key;
			json_t *x;
			takes = 0;
			if (load_json_file(a, "query", &q, err) != 0)
				return -1;
			if (!json_is_object(q)) {
				json_decref(q);
				return dn_error_set(err, DN_EINVAL, a, "a query file holds a JSON object");
			}
			json_object_foreach(q, key, x)
				json_object_set(o->req, key, x);
			json_decref(q);
			continue;
		}
		if (v == NULL && strcmp(a, "--json") && strcmp(a, "--inference"))
			return dn_error_set(err, DN_EINVAL, a, "needs a value");
		if (strcmp(a, "--preset") == 0 || strcmp(a, "--template") == 0) {
			json_object_set_new(o->req, "model", json_pack("{s:s}", a[2] == 'p' ? "preset" : "template", v));
		} else if (strcmp(a, "--model") == 0) {
			json_t *m;
			if (load_json_file(v, "--model", &m, err) != 0)
				return -1;
			json_object_set_new(o->req, "model", m);
		} else if (strcmp(a, "--space") == 0) {
			json_t *s;
			if (load_json_file(v, "--space", &s, err) != 0)
				return -1;
			json_object_set_new(o->req, "space", s);
		} else if (strcmp(a, "--device") == 0) {
			json_object_set_new(o->req, "device", json_string(v));
		} else if (strcmp(a, "--budget") == 0 || strcmp(a, "--set") == 0) {
			const char *eq = strchr(v, '=');
			char name[128];
			json_t *val;
			if (eq == NULL || eq == v || (size_t)(eq - v) >= sizeof name)
				return dn_error_set(err, DN_EINVAL, a, "\"%s\" is not NAME=VALUE", v);
			memcpy(name, v, (size_t)(eq - v));
			name[eq - v] = '\0';
			val = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
			if (val == NULL)
				val = json_string(eq + 1);
			json_object_set_new(a[2] == 'b' ? budgets : fixed, name, val);
		} else if (strcmp(a, "--constraint") == 0) {
			json_array_append_new(constraints, json_string(v));
		} else if (strcmp(a, "--optimizer") == 0 || strcmp(a, "--dtype") == 0) {
			json_object_set_new(workload, a + 2, json_string(v));
		} else if (strcmp(a, "--inference") == 0) {
			json_object_set_new(workload, "mode", json_string("inference"));
			takes = 0;
		} else if (strcmp(a, "--json") == 0) {
			o->json = 1;
			takes = 0;
		} else if (strcmp(a, "--timeout") == 0) {
			o->timeout = atof(v);
			if (!(o->timeout > 0 && o->timeout <= 86400))
				return dn_error_set(err, DN_EINVAL, a, "must be seconds, more than 0");
		} else if (strcmp(a, "--offset") == 0) {
			o->offset = v;
		} else if (strcmp(a, "--limit") == 0 || strcmp(a, "--n") == 0) {
			char *end;
			long long x = strtoll(v, &end, 10);
			if (*end || x < 0 || x > 100000000)
				return dn_error_set(err, DN_EINVAL, a, "must be a count from 0 to 100000000");
			if (a[2] == 'l')
				o->limit = x;
			else
				o->n = x;
		} else if (strcmp(a, "--seed") == 0) {
			o->seed = strtoull(v, NULL, 10);
		} else if (strcmp(a, "--cursor") == 0) {
			o->cursor = v;
		} else if (strcmp(a, "--config") == 0) {
			o->config = v;
		} else if (strcmp(a, "--param") == 0) {
			o->param = v;
		} else if (strcmp(a, "--value") == 0) {
			o->value = v;
		} else if (strcmp(a, "--per") == 0) {
			o->per = v;
		} else
			return dn_error_set(err, DN_EINVAL, a, "unknown option (see dnnsat --help)");
		i += takes;
	}
	if (json_object_size(budgets) > 0)
		json_object_set(o->req, "budgets", budgets);
	if (json_array_size(constraints) > 0)
		json_object_set(o->req, "constraints", constraints);
	if (json_object_size(fixed) > 0)
		json_object_set(o->req, "fixed", fixed);
	if (json_object_size(workload) > 0)
		json_object_set(o->req, "workload", workload);
	json_decref(budgets);
	json_decref(constraints);
	json_decref(fixed);
	json_decref(workload);
	return 0;
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

/* Cursor: "c1.<fingerprint>.<positions in hex, '-' separated>". */
static uint64_t
fingerprint(const json_t *req)
{
	char *s = json_dumps(req, JSON_SORT_KEYS | JSON_COMPACT);
	uint64_t h = 1469598103934665603ULL;

	for (const char *p = s; p && *p; p++) {
		h ^= (unsigned char)*p;
		h *= 1099511628211ULL;
	}
	free(s);
	return h;
}

static void
print_cursor(const struct fs_engine *e, const json_t *req, const int64_t *pos)
{
	fprintf(stderr, "next cursor: c1.%016" PRIx64 ".", fingerprint(req));
	for (int v = 0; v < e->nvars; v++)
		fprintf(stderr, "%s%" PRIx64, v ? "-" : "", (uint64_t)(pos[v] < 0 ? 0 : pos[v]));
	fputc('\n', stderr);
}

static int
parse_cursor(const struct fs_engine *e, const json_t *req, const char *c, int64_t *pos, struct dn_error *err)
{
	char fp[32];
	const char *p;

	snprintf(fp, sizeof fp, "c1.%016" PRIx64 ".", fingerprint(req));
	if (strncmp(c, fp, strlen(fp)) != 0)
		return dn_error_set(err, DN_EINVAL, "--cursor", "this cursor belongs to another query");
	p = c + strlen(fp);
	for (int v = 0; v < e->nvars; v++) {
		char *end;
		unsigned long long x = strtoull(p, &end, 16);
		if (end == p || (v + 1 < e->nvars && *end != '-') || (v + 1 == e->nvars && *end != '\0'))
			return dn_error_set(err, DN_EINVAL, "--cursor", "malformed cursor");
		pos[v] = (int64_t)x;
		p = end + 1;
	}
	return 0;
}

static void
print_config(struct fs_engine *e, const int64_t *pos)
{
	json_t *j = fs_to_json(e, pos);

	json_dumpf(j, stdout, JSON_COMPACT | JSON_REAL_PRECISION(15));
	fputc('\n', stdout);
	json_decref(j);
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

static int
cmd_count(struct fs_engine *e, struct solve_opts *o)
{
	char total[64], lo[64], hi[64];
	double t0 = fs_now(), dt;
	struct dn_error err;

	memset(&err, 0, sizeof err);
	if (fs_count_all(e, o->timeout, &err) != 0)
		return fail(&err);
	dt = fs_now() - t0;
	fs_count_str(e->total, total, sizeof total);
	fs_count_str(e->lower, lo, sizeof lo);
	fs_count_str(e->upper, hi, sizeof hi);
	if (o->json) {
		json_t *j = json_pack("{s:s,s:b,s:s,s:s,s:f,s:f,s:I}", "total", total, "exact", e->lower == e->upper,
		    "feasible_lower", lo, "feasible_upper", hi,
		    "ratio", e->total ? (double)e->lower / (double)e->total : 0.0, "seconds", dt,
		    "boxes", (json_int_t)e->bound_calls);
		if (e->lower == e->upper)
			json_object_set_new(j, "feasible", json_string(lo));
		json_dumpf(j, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(j);
	} else if (e->lower == e->upper)
		printf("feasible %s of %s configurations (%.4g%%), exact, %.3f s\n", lo, total,
		    e->total ? 100.0 * (double)e->lower / (double)e->total : 0.0, dt);
	else
		printf("feasible between %s and %s of %s configurations (deadline of %g s passed)\n", lo, hi, total,
		    o->timeout);
	if (e->lower != e->upper)
		return 3;
	return e->lower > 0 ? 0 : 1;
}

static int
cmd_list(struct fs_engine *e, struct solve_opts *o)
{
	struct dn_error err;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	int64_t printed = 0;
	int r;

	memset(&err, 0, sizeof err);
	if (o->offset != NULL) {
		fs_count k;
		if (fs_count_parse(o->offset, &k) != 0) {
			dn_error_set(&err, DN_EINVAL, "--offset", "must be a non-negative integer");
			free(pos);
			return fail(&err);
		}
		if (fs_count_all(e, o->timeout, &err) != 0 || e->lower != e->upper) {
			if (!dn_error_isset(&err))
				dn_error_set(&err, DN_ETIMEOUT, "--offset", "the count did not finish in %g s: "
				    "use --cursor to page instead", o->timeout);
			free(pos);
			return fail(&err);
		}
		r = fs_kth(e, k, pos, &err);
	} else if (o->cursor != NULL) {
		int64_t *from = calloc((size_t)e->nvars + 1, sizeof *from);
		if (parse_cursor(e, o->req, o->cursor, from, &err) != 0) {
			free(from);
			free(pos);
			return fail(&err);
		}
		r = fs_next(e, from, pos, &err);
		free(from);
	} else
		r = fs_next(e, NULL, pos, &err);
	while (r == 0 && (o->limit < 0 || printed < o->limit)) {
		print_config(e, pos);
		printed++;
		if (fs_increment(e, pos) != 0) {
			r = 1;
			break;
		}
		r = fs_next(e, pos, pos, &err);
	}
	if (r < 0) {
		free(pos);
		return fail(&err);
	}
	if (r == 0)
		print_cursor(e, o->req, pos);
	free(pos);
	return printed > 0 ? 0 : 1;
}

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n) without modulo bias. */
static fs_count
uniform_below(uint64_t *s, fs_count n)
{
	fs_count limit = ~(fs_count)0 - (~(fs_count)0 % n), x;

	do {
		x = ((fs_count)splitmix(s) << 64) | splitmix(s);
	} while (x >= limit);
	return x % n;
}

static int
cmd_sample(struct fs_engine *e, struct solve_opts *o)
{
	struct dn_error err;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	uint64_t s = o->seed;

	memset(&err, 0, sizeof err);
	if (fs_count_all(e, o->timeout, &err) != 0 || e->lower != e->upper) {
		if (!dn_error_isset(&err))
			dn_error_set(&err, DN_ETIMEOUT, "--timeout", "exact uniform sampling needs the count, "
			    "which did not finish in %g s", o->timeout);
		free(pos);
		return fail(&err);
	}
	if (e->lower == 0) {
		free(pos);
		fprintf(stderr, "dnnsat: no feasible configuration to sample\n");
		return 1;
	}
	for (int64_t i = 0; i < o->n; i++) {
		fs_count k = uniform_below(&s, e->lower);
		if (fs_kth(e, k, pos, &err) != 0) {
			free(pos);
			return fail(&err);
		}
		print_config(e, pos);
	}
	free(pos);
	return 0;
}

static int
cmd_reduce(struct fs_engine *e, struct solve_opts *o)
{
	struct dn_error err;
	struct fs_projection p;
	json_t *r;

	memset(&err, 0, sizeof err);
	if (fs_count_all(e, o->timeout, &err) != 0 || fs_project(e, &p, &err) != 0)
		return fail(&err);
	r = fs_reduced_space(e, &p, &err);
	fs_projection_free(&p);
	if (r == NULL) {
		cli_print_error(&err);
		return 1;
	}
	json_dumpf(r, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
	fputc('\n', stdout);
	json_decref(r);
	if (e->lower != e->upper) {
		fprintf(stderr, "dnnsat: the deadline passed: values in undecided regions were kept out\n");
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
		status = fail(&err);
		goto out;
	}
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
