/*
 * cli_batch.c - `dnnsat prune`: batch pruning from scripts. For every
 * input space (files, or directories of *.json) and every device, it
 * counts the feasible configurations, writes the reduced NNI space and,
 * when asked, the feasible configurations, then prints a summary:
 *
 *   dnnsat prune SPACE.json|QUERY.json|DIR... --device D[,D...] [--device D]...
 *       [--preset P | --template T | --model F] [--budget NAME=VALUE]...
 *       [--constraint EXPR]... [--set NAME=VALUE]... [--optimizer O]
 *       [--dtype T] [--inference] [--timeout S] [--out DIR]
 *       [--configs jsonl|csv] [--limit N] [--summary table|csv|json]
 *       [--server URL [--token T]]
 *
 * Each (space, device) item is answered by the solver in this process
 * (solver/answer.h, as `dnnsat count` and `dnnsat reduce`) or, with
 * --server, by a dnnsatd (POST /v1/reductions, GET while 202, pages of
 * configurations with cursors; docs/api.md); both give the same answers
 * and write the same files. Inputs, devices and options are all checked
 * before the first item is solved.
 *
 * Exit status: 0 every count exact, 3 some count only got bounds (its
 * deadline passed), 2 bad input (the message names the file, option or
 * field), 4 the server could not be reached or failed.
 */
#include "answer.h"
#include "cli.h"
#include "cli_batch.h"
#include "dn_number.h"
#include "cli_http.h"
#include "cli_progress.h"
#include "fset.h"
#include "fset_project.h"
#include "query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SLICE_S 2.0             /* the longest single wait on the server, so the bar moves */
#define PAGE_MAX 1000           /* configurations per page from the server */
#define PAGE_WAIT_S 60.0        /* the wait for one page (the server caps it at its --max-deadline) */

struct batch_run {
	/* options */
	struct batch_inputs in;
	json_t *overrides;          /* the query fields of the command line */
	json_t *devices;            /* names given with --device, in order */
	const char *out_dir, *server, *token;
	enum batch_format configs, summary;
	int64_t limit;
	double timeout;             /* per item, unless its query file has its own */
	int threads;                /* counting threads offline (--threads; default: the processors) */
	/* state */
	struct cm_device_catalog catalog;
	struct cli_http http;
	struct cli_progress prog;
	json_t *rows;
	int bounds;                 /* some count got bounds only */
};

/* One (input, device) item being answered. */
struct batch_item {
	const struct batch_input *in;
	json_t *req;                /* its query */
	char device[96];
	char label[256];            /* "resnet @ t4" */
	char reduced_name[512], configs_name[512];      /* file names under --out */
	double timeout;
	json_t *count;              /* total, exact, feasible_lower, feasible_upper, ratio, feasible */
	json_t *reduced;            /* the reduced space, or NULL */
	struct batch_configs cfg;
	int cfg_open;
};

/* Exit status of an error: the server's failures apart from bad input. */
static int
error_status(const struct dn_error *err)
{
	return err->code == DN_EINTERNAL ? 4 : 2;
}

static int
parse_format(const char *opt, const char *v, int configs, enum batch_format *out, struct dn_error *err)
{
	if (configs && strcmp(v, "jsonl") == 0)
		*out = BATCH_JSONL;
	else if (strcmp(v, "csv") == 0)
		*out = BATCH_CSV;
	else if (!configs && strcmp(v, "table") == 0)
		*out = BATCH_TABLE;
	else if (!configs && strcmp(v, "json") == 0)
		*out = BATCH_JSON;
	else
		return dn_error_set(err, DN_EINVAL, opt, "\"%s\" is not one of %s", v,
		    configs ? "jsonl, csv" : "table, csv, json");
	return 0;
}

static int
add_devices(struct batch_run *r, const char *list, struct dn_error *err)
{
	char *copy = strdup(list), *save = NULL;

	if (copy == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	for (char *d = strtok_r(copy, ",", &save); d != NULL; d = strtok_r(NULL, ",", &save)) {
		size_t i;
		json_t *have;
		int dup = 0;
		json_array_foreach(r->devices, i, have)
			dup |= strcmp(json_string_value(have), d) == 0;
		if (!dup)
			json_array_append_new(r->devices, json_string(d));
	}
	free(copy);
	if (json_array_size(r->devices) == 0)
		return dn_error_set(err, DN_EINVAL, "--device", "names no device");
	return 0;
}

/* The options of prune besides the query's (cli_req_option). */
static int
parse_batch_option(struct batch_run *r, const char *a, const char *v, struct dn_error *err)
{
	static const char *const known[] = { "--device", "--space", "--out", "--configs", "--summary", "--limit",
		"--timeout", "--threads", "--server", "--token" };
	size_t k;
	char *end;

	for (k = 0; k < sizeof known / sizeof known[0] && strcmp(a, known[k]) != 0; k++)
		;
	if (k == sizeof known / sizeof known[0])
		return cli_unknown_option("prune", a, err);
	if (v == NULL)
		return dn_error_set(err, DN_EINVAL, a, "needs a value");
	if (strcmp(a, "--device") == 0)
		return add_devices(r, v, err);
	if (strcmp(a, "--space") == 0)
		return batch_inputs_add(&r->in, v, err);
	if (strcmp(a, "--out") == 0)
		r->out_dir = v;
	else if (strcmp(a, "--configs") == 0)
		return parse_format(a, v, 1, &r->configs, err);
	else if (strcmp(a, "--summary") == 0)
		return parse_format(a, v, 0, &r->summary, err);
	else if (strcmp(a, "--limit") == 0) {
		long long x = strtoll(v, &end, 10);
		if (*v == '\0' || *end != '\0' || x < 0)
			return dn_error_set(err, DN_EINVAL, a, "must be a count, 0 or more");
		r->limit = x;
	} else if (strcmp(a, "--timeout") == 0) {
		return cli_parse_timeout(a, v, &r->timeout, err);
	} else if (strcmp(a, "--threads") == 0)
		return cli_parse_threads(a, v, &r->threads, err);
	else if (strcmp(a, "--server") == 0)
		r->server = v;
	else
		r->token = v;
	return 0;
}

static int
parse_prune_args(int argc, char **argv, struct batch_run *r, struct dn_error *err)
{
	struct cli_req req;
	int rc = 0;

	cli_req_init(&req);
	for (int i = 1; i < argc && rc == 0; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int used;
		if (a[0] != '-') {
			/* NAME=VALUE fixes a hyperparameter (as --set) unless a file has that name */
			if (strchr(a, '=') != NULL && access(a, F_OK) != 0)
				rc = cli_req_option(&req, "--set", a, err) < 0 ? -1 : 0;
			else
				rc = batch_inputs_add(&r->in, a, err);
			continue;
		}
		if (strcmp(a, "--json") == 0) {
			r->summary = BATCH_JSON;
			continue;
		}
		used = strcmp(a, "--device") == 0 || strcmp(a, "--space") == 0 ? 0 : cli_req_option(&req, a, v, err);
		if (used < 0)
			rc = -1;
		else if (used > 0)
			i += used - 1;
		else {
			rc = parse_batch_option(r, a, v, err);
			i++;
		}
	}
	r->overrides = cli_req_finish(&req);
	if (rc != 0)
		return rc;
	if (r->in.n == 0)
		return dn_error_set(err, DN_EINVAL, "prune", "name the spaces to prune: files or directories "
		    "(see dnnsat prune --help)");
	if (r->configs != BATCH_NONE && r->out_dir == NULL)
		return dn_error_set(err, DN_EINVAL, "--configs", "needs --out DIR to write the files in");
	if (r->token == NULL)
		r->token = getenv("DNNSAT_TOKEN");
	return 0;
}

/* --out: the directory, created when missing (one level). */
static int
prepare_out_dir(const char *dir, struct dn_error *err)
{
	struct stat st;

	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode))
			return dn_error_set(err, DN_EINVAL, "--out", "%s is not a directory", dir);
		if (access(dir, W_OK) != 0)
			return dn_error_set(err, DN_EINVAL, "--out", "cannot write in %s: %s", dir, strerror(errno));
		return 0;
	}
	if (mkdir(dir, 0777) != 0)
		return dn_error_set(err, DN_EINVAL, "--out", "cannot create %s: %s", dir, strerror(errno));
	return 0;
}

/* ---- devices, checked before any solving ---- */

/* The devices this run may use, into r->catalog: the local catalog, or
 * the server's (GET /v1/devices, which also proves the server is there and
 * takes the token). 0 or -1. */
static int
known_devices(struct batch_run *r, struct dn_error *err)
{
	json_t *ans = NULL;

	if (r->server == NULL) {
		char path[1024];
		dn_fmt(path, sizeof path, "%s/devices.json", cm_data_dir());
		return cm_catalog_load(path, &r->catalog, err);
	}
	if (cli_http_open(&r->http, r->server, r->token, err) == 0) {
		int status = cli_http_json(&r->http, "/v1/devices", NULL, 10, &ans, err);
		if (status >= 0 && status != 200)
			cli_http_problem(&r->http, status, ans, err);
		else if (status == 200 && cm_catalog_from_json(ans, &r->catalog, err) != 0)
			dn_fmt(err->path, sizeof err->path, "%s/v1/devices", r->server);
		json_decref(ans);
	}
	return dn_error_isset(err) ? -1 : 0;
}

/* Before any solving: every input has a model, every device is known. */
static int
check_inputs(struct batch_run *r, struct dn_error *err)
{
	const struct cm_device *dev;
	json_t *d;
	size_t i;
	int rc = 0;

	if (known_devices(r, err) != 0)
		return -1;
	json_array_foreach(r->devices, i, d)
		if (rc == 0)
			rc = cm_catalog_resolve(&r->catalog, json_string_value(d), "--device", &dev, err);
	for (int k = 0; k < r->in.n && rc == 0 && json_object_get(r->overrides, "model") == NULL; k++)
		if (json_object_get(r->in.v[k].query, "model") == NULL)
			rc = dn_error_set(err, DN_EINVAL, r->in.v[k].file, "no model: give --preset, --template or --model, "
			    "or a \"model\" in a query file");
	for (int k = 0; k < r->in.n && rc == 0 && json_array_size(r->devices) == 0; k++) {
		const json_t *own = json_object_get(r->in.v[k].query, "device");
		char where[600];
		dn_fmt(where, sizeof where, "%s: $.device", r->in.v[k].file);
		if (json_is_string(own))
			rc = cm_catalog_resolve(&r->catalog, json_string_value(own), where, &dev, err);
	}
	return rc;
}

/* ---- one item ---- */

/* The count fields of an answer (ans_count's, or the service's reduction)
 * in one order, so both ways give the same summary. */
static json_t *
count_fields(const json_t *answer)
{
	static const char *const keys[] = { "total", "exact", "feasible", "feasible_lower", "feasible_upper", "ratio" };
	json_t *c = json_object();

	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		json_t *v = json_object_get(answer, keys[i]);
		if (v != NULL)
			json_object_set(c, keys[i], v);
	}
	return c;
}

/* The answer's warnings (a memory budget capped to the device, parameters
 * that set nothing) on stderr, after the item's file and device. */
static void
print_item_warnings(struct batch_run *r, const struct batch_item *it, const json_t *answer)
{
	size_t i;
	json_t *w;

	json_array_foreach(json_object_get(answer, "warnings"), i, w) {
		cli_progress_clear(&r->prog);
		fprintf(stderr, "dnnsat: %s (%s): warning: %s\n", it->in->file, it->device, json_string_value(w));
	}
}

static int
item_exact(const struct batch_item *it)
{
	return json_is_true(json_object_get(it->count, "exact"));
}

/* A file of the item under --out, into buf. */
static void
out_path(const struct batch_run *r, const char *name, char *buf, size_t len)
{
	dn_fmt(buf, len, "%s/%s", r->out_dir, name);
}

static int
item_configs_open(struct batch_run *r, struct batch_item *it, struct dn_error *err)
{
	char path[4096];

	out_path(r, it->configs_name, path, sizeof path);
	it->cfg_open = 1;
	return batch_configs_open(&it->cfg, path, r->configs == BATCH_CSV, json_object_get(it->req, "space"), err);
}

/* Writes one configuration and moves the bar now and then. */
struct emit_ctx {
	struct batch_configs *cfg;
	struct cli_progress *prog;
};

static int
emit_config(void *ctx, json_t *sample)
{
	struct emit_ctx *x = ctx;

	if ((x->cfg->rows & 1023) == 0)
		cli_progress_tick(x->prog);
	return batch_configs_put(x->cfg, sample);
}

/* Gives up the configurations' file after a write error: removes it,
 * with err saying why. Returns -1. */
static int
configs_failed(struct batch_configs *c, struct dn_error *err)
{
	batch_configs_close(c, 0, err);
	return -1;
}

static void
on_engine_progress(void *ctx, const struct fs_engine *e)
{
	(void)e;
	cli_progress_tick(ctx);
}

/* The query as dnnsatd compiles it (srv_registry.c): its text with the
 * keys sorted, read back, so that the engine's variables, and with them
 * the order of configurations, are those of the server. NULL when out of
 * memory. */
static json_t *
query_canonical(const json_t *req)
{
	char *text = json_dumps(req, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
	json_t *c = text ? json_loads(text, 0, NULL) : NULL;

	free(text);
	return c;
}

/* The solver in this process, on the canonical query: count, reduced
 * space (only to write it), configurations. */
static int
item_solve_here(struct batch_run *r, struct batch_item *it, struct dn_error *err)
{
	struct sq_query q;
	struct fs_engine e;
	json_t *canonical = query_canonical(it->req);
	int rc = -1;

	memset(&q, 0, sizeof q);
	memset(&e, 0, sizeof e);
	if (canonical == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (sq_parse(canonical, &r->catalog, &q, err) != 0 || fs_init(&e, &q, err) != 0)
		goto out;
	e.threads = r->threads;
	e.progress = on_engine_progress;
	e.progress_ctx = &r->prog;
	e.next_progress = fs_now() + 0.25;
	if (fs_count_all(&e, it->timeout, err) != 0)
		goto out;
	{
		json_t *c = ans_count(&e);
		it->count = count_fields(c);
		print_item_warnings(r, it, c);
		json_decref(c);
	}
	if (e.lower == e.upper && e.lower > 0 && r->out_dir != NULL) {
		struct fs_projection p;
		if (fs_project(&e, &p, err) != 0)
			goto out;
		it->reduced = fs_reduced_space(&e, &p, err);
		fs_projection_free(&p);
		if (it->reduced == NULL)
			goto out;
	}
	if (r->configs != BATCH_NONE && e.lower == e.upper) {
		struct emit_ctx x = { &it->cfg, &r->prog };
		if (item_configs_open(r, it, err) != 0 || ans_walk(&e, NULL, 0, r->limit, emit_config, &x, err) < 0)
			goto out;
		if (it->cfg.failed) {
			configs_failed(&it->cfg, err);
			goto out;
		}
	}
	rc = 0;
out:
	fs_free(&e);
	sq_free(&q);
	json_decref(canonical);
	return rc;
}

/* One request to the server, waiting out 429s (Retry-After) while the
 * item's time lasts. The answer's status, or -1 with err (an error answer
 * included). */
static int
server_call(struct batch_run *r, const char *path, const json_t *body, double wait, double end, json_t **ans,
    struct dn_error *err)
{
	for (;;) {
		int status = cli_http_json(&r->http, path, body, wait, ans, err);
		double pause = r->http.retry_after > 0 ? r->http.retry_after : 1;
		if (status < 0)
			return -1;
		if (status < 400)
			return status;
		if (status != 429 || fs_now() + pause > end) {
			cli_http_problem(&r->http, status, *ans, err);
			json_decref(*ans);
			*ans = NULL;
			return -1;
		}
		json_decref(*ans);
		*ans = NULL;
		cli_progress_tick(&r->prog);
		usleep((useconds_t)(pause * 1e6));
	}
}

/* The pages of the reduction's feasible configurations into the file.
 * The count is exact by now, so the walk ends: each page gets its own
 * wait rather than what is left of the item's deadline (as offline). */
static int
server_configs(struct batch_run *r, struct batch_item *it, const char *id, struct dn_error *err)
{
	int64_t left = r->limit;
	char *cursor = NULL;
	int rc = 0;

	if (item_configs_open(r, it, err) != 0)
		return -1;
	while (rc == 0 && left != 0) {
		char path[1024];
		json_t *ans = NULL, *item;
		const char *next;
		size_t i;
		int64_t n = left < 0 || left > PAGE_MAX ? PAGE_MAX : left;
		dn_fmt(path, sizeof path, "/v1/reductions/%s/configurations?limit=%" PRId64 "&timeout=%g%s%s", id, n,
		    PAGE_WAIT_S, cursor ? "&cursor=" : "", cursor ? cursor : "");
		if (server_call(r, path, NULL, PAGE_WAIT_S, fs_now() + PAGE_WAIT_S, &ans, err) < 0) {
			rc = -1;
			break;
		}
		json_array_foreach(json_object_get(ans, "items"), i, item) {
			if (batch_configs_put(&it->cfg, json_incref(item)) != 0)
				break;
		}
		cli_progress_tick(&r->prog);
		if (left > 0)
			left -= (int64_t)json_array_size(json_object_get(ans, "items"));
		next = json_string_value(json_object_get(ans, "next_cursor"));
		free(cursor);
		cursor = next ? cli_http_escape(&r->http, next) : NULL;
		json_decref(ans);
		if (it->cfg.failed) {
			rc = configs_failed(&it->cfg, err);
			break;
		}
		if (cursor == NULL)
			break;
	}
	free(cursor);
	return rc;
}

/* The server: POST the query, GET it again while it is still counting
 * (202) and the item's time lasts, then page the configurations. */
static int
item_solve_server(struct batch_run *r, struct batch_item *it, struct dn_error *err)
{
	double end = fs_now() + it->timeout, wait = it->timeout < SLICE_S ? it->timeout : SLICE_S;
	json_t *body = json_copy(it->req), *ans = NULL;
	char id[80] = "", path[160];
	int status, rc = -1;

	if (body == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	json_object_set_new(body, "timeout", json_real(wait));
	status = server_call(r, "/v1/reductions", body, wait, end, &ans, err);
	json_decref(body);
	while (status == 202) {
		const char *s = json_string_value(json_object_get(ans, "id"));
		wait = end - fs_now();
		if (s == NULL || wait <= 0.001)
			break;
		if (wait > SLICE_S)
			wait = SLICE_S;
		dn_fmt(id, sizeof id, "%s", s);
		dn_fmt(path, sizeof path, "/v1/reductions/%s?timeout=%.3f", id, wait);
		json_decref(ans);
		ans = NULL;
		cli_progress_tick(&r->prog);
		status = server_call(r, path, NULL, wait, end + SLICE_S, &ans, err);
	}
	if (status < 0)
		goto out;
	if (!json_is_string(json_object_get(ans, "id")) || !json_is_string(json_object_get(ans, "total"))) {
		dn_error_set(err, DN_EINTERNAL, "--server", "%s answered %d without a reduction", r->server, status);
		goto out;
	}
	dn_fmt(id, sizeof id, "%s", json_string_value(json_object_get(ans, "id")));
	it->count = count_fields(ans);
	print_item_warnings(r, it, ans);
	if (json_is_object(json_object_get(ans, "reduced_space")) && item_exact(it))
		it->reduced = json_incref(json_object_get(ans, "reduced_space"));
	if (r->configs != BATCH_NONE && item_exact(it) && server_configs(r, it, id, err) != 0)
		goto out;
	rc = 0;
out:
	json_decref(ans);
	return rc;
}

static void
note(struct batch_run *r, const struct batch_item *it, const char *what)
{
	cli_progress_clear(&r->prog);
	fprintf(stderr, "dnnsat: %s: %s\n", it->label, what);
}

/* Writes the item's files (removing those of an earlier run that this
 * answer does not back) and adds its summary row. */
static int
item_finish(struct batch_run *r, struct batch_item *it, double seconds, struct dn_error *err)
{
	char path[4096];
	json_t *row;
	int exact = item_exact(it), configs = 0;
	int64_t written = it->cfg.rows;
	const char *upper = json_string_value(json_object_get(it->count, "feasible_upper"));

	if (r->out_dir != NULL) {
		out_path(r, it->reduced_name, path, sizeof path);
		if (it->reduced != NULL) {
			json_t *ordered = fs_space_in_order(it->reduced, json_object_get(it->req, "space"));
			int rc = ordered ? batch_write_json(path, ordered, err) : dn_error_set(err, DN_ENOMEM, NULL,
			    "out of memory");
			json_decref(ordered);
			if (rc != 0)
				return -1;
		} else
			unlink(path);
		if (it->cfg_open) {
			it->cfg_open = 0;
			if (batch_configs_close(&it->cfg, 1, err) != 0)
				return -1;
			configs = 1;
		} else if (r->configs != BATCH_NONE) {
			out_path(r, it->configs_name, path, sizeof path);
			unlink(path);
		}
	}
	if (!exact) {
		char msg[256];
		dn_fmt(msg, sizeof msg, "the deadline (%g s) passed before the count was exact: bounds only%s", it->timeout,
		    r->out_dir ? ", no reduced space or configurations written" : "");
		note(r, it, msg);
		r->bounds = 1;
	} else if (upper != NULL && strcmp(upper, "0") == 0)
		note(r, it, "no configuration fits");
	row = json_pack("{s:s,s:s,s:s}", "space", it->in->name, "file", it->in->file, "device", it->device);
	json_object_update(row, it->count);
	json_object_set_new(row, "seconds", json_real(seconds));
	json_object_set_new(row, "reduced_space", it->reduced && r->out_dir ? json_string(it->reduced_name) : json_null());
	json_object_set_new(row, "configs", configs ? json_string(it->configs_name) : json_null());
	json_object_set_new(row, "configs_written", json_integer(configs ? (json_int_t)written : 0));
	json_array_append_new(r->rows, row);
	return 0;
}

static void
item_clear(struct batch_item *it)
{
	struct dn_error ignored;

	memset(&ignored, 0, sizeof ignored);
	if (it->cfg_open)
		batch_configs_close(&it->cfg, 0, &ignored);
	json_decref(it->req);
	json_decref(it->count);
	json_decref(it->reduced);
	memset(it, 0, sizeof *it);
}

/* Prints err for an item: its file and device first. */
static void
print_item_error(struct batch_run *r, const struct batch_item *it, const struct dn_error *err)
{
	cli_progress_clear(&r->prog);
	fprintf(stderr, "dnnsat: %s (%s): %s%s%s\n", it->in->file, it->device, err->path, err->path[0] ? ": " : "",
	    err->message);
}

/* Answers one item; -1 with err, printed. */
static int
run_item(struct batch_run *r, const struct batch_input *in, const char *device, struct dn_error *err)
{
	struct batch_item it;
	double t0 = fs_now();
	int rc = -1;

	memset(&it, 0, sizeof it);
	it.in = in;
	if (device != NULL)
		dn_fmt(it.device, sizeof it.device, "%s", device);
	else
		batch_device_label(in->query, it.device, sizeof it.device);
	it.req = batch_item_query(in, r->overrides, device, err);
	if (it.req != NULL) {
		batch_device_label(it.req, it.device, sizeof it.device);
		dn_fmt(it.label, sizeof it.label, "%s @ %s", in->name, it.device);
		dn_fmt(it.reduced_name, sizeof it.reduced_name, "%s.%s.search_space.json", in->name, it.device);
		dn_fmt(it.configs_name, sizeof it.configs_name, "%s.%s.configs.%s", in->name, it.device,
		    r->configs == BATCH_CSV ? "csv" : "jsonl");
		it.timeout = in->timeout > 0 ? in->timeout : r->timeout;
		cli_progress_item(&r->prog, it.label);
		rc = r->server ? item_solve_server(r, &it, err) : item_solve_here(r, &it, err);
		if (rc == 0)
			rc = item_finish(r, &it, fs_now() - t0, err);
	}
	if (rc != 0)
		print_item_error(r, &it, err);
	item_clear(&it);
	return rc;
}

int
cli_prune(int argc, char **argv)
{
	struct batch_run r;
	struct dn_error err;
	int status = 0, ndev;

	memset(&r, 0, sizeof r);
	memset(&err, 0, sizeof err);
	r.devices = json_array();
	r.rows = json_array();
	r.limit = -1;
	r.timeout = 60;
	r.threads = fs_par_cores();
	if (parse_prune_args(argc, argv, &r, &err) != 0 || check_inputs(&r, &err) != 0 ||
	    (r.out_dir != NULL && prepare_out_dir(r.out_dir, &err) != 0)) {
		cli_print_error(&err);
		status = error_status(&err);
		goto out;
	}
	ndev = (int)json_array_size(r.devices);
	cli_progress_start(&r.prog, r.in.n * (ndev > 0 ? ndev : 1));
	for (int i = 0; i < r.in.n && status == 0; i++)
		for (int d = 0; d < (ndev > 0 ? ndev : 1) && status == 0; d++) {
			const char *device = ndev > 0 ? json_string_value(json_array_get(r.devices, (size_t)d)) : NULL;
			if (run_item(&r, &r.in.v[i], device, &err) != 0)
				status = error_status(&err);
			cli_progress_step(&r.prog);
		}
	cli_progress_clear(&r.prog);
	if (json_array_size(r.rows) > 0)
		batch_summary_print(stdout, r.rows, r.summary);
	if (status == 0 && r.bounds)
		status = 3;
out:
	cli_http_close(&r.http);
	cm_catalog_free(&r.catalog);
	batch_inputs_free(&r.in);
	json_decref(r.overrides);
	json_decref(r.devices);
	json_decref(r.rows);
	return status;
}
