/*
 * query_parse.c - reading a solver query from JSON and compiling it into the
 * `feasible` expression (see query.h): resolve the model and device, parse
 * and bind the space, build the model with the space's domains as bounds,
 * then AND together validity, the budgets and the user constraints.
 *
 * Every error names the request field ("$.budgets.memory",
 * "$.constraints[2]", "$.space.batch_size._value") and the problem.
 */
#include "query.h"
#include "dn_number.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Re-roots an error path of a nested document ("$.layers[3]" of the model
 * object) under its field in the query ("$.model.layers[3]"). */
static int
reroot(struct dn_error *err, const char *field)
{
	char p[256];

	if (err != NULL && err->path[0] == '$' && strncmp(err->path, field, strlen(field)) != 0) {
		dn_fmt(p, sizeof p, "%s%s", field, err->path + 1);
		memcpy(err->path, p, sizeof err->path);
	} else if (err != NULL && err->path[0] != '$' && err->path[0] != '\0') {
		dn_fmt(p, sizeof p, "%s.%s", field, err->path);
		memcpy(err->path, p, sizeof err->path);
	}
	return -1;
}

static const char *const budget_names[SQ_B_COUNT] = {
	"memory", "params", "weight_bytes", "macs", "flops", "latency", "step_time",
	"min_utilization",
};

const char *
sq_budget_name(enum sq_budget_kind k)
{
	return (unsigned)k < SQ_B_COUNT ? budget_names[k] : "?";
}

void
sq_free(struct sq_query *q)
{
	for (int i = 0; i < q->nparts; i++) {
		free(q->parts[i].label);
		free(q->parts[i].path);
	}
	free(q->parts);
	cm_model_free(q->model);
	sp_free(&q->space);
	free(q->fixed);
	free(q->bounds);
	cm_def_unref(q->def);
	memset(q, 0, sizeof *q);
}

/* ---- units ---- */

/* Splits "16 GiB" into 16 and "GiB". -1 when the number is missing. */
static int
split_unit(const char *s, double *num, const char **unit)
{
	const char *end;

	while (isspace((unsigned char)*s))
		s++;
	if (dn_decimal(s, num, &end) != 0)
		return -1;      /* decimal only: "0x10GiB", "inf GiB" are not sizes */
	while (isspace((unsigned char)*end))
		end++;
	*unit = end;
	return 0;
}

static int
unit_scale(const char *unit, const char *const *names, const double *scales, int n, double *out)
{
	for (int i = 0; i < n; i++)
		if (strcmp(unit, names[i]) == 0) {
			*out = scales[i];
			return 0;
		}
	return -1;
}

static int
parse_with_units(const json_t *v, const char *path, const char *what,
    const char *const *names, const double *scales, int n, const char *hint,
    double *out, struct dn_error *err)
{
	double num, scale;
	const char *unit;

	if (json_is_number(v)) {
		*out = json_number_value(v);
	} else if (json_is_string(v)) {
		if (split_unit(json_string_value(v), &num, &unit) != 0)
			return dn_error_set(err, DN_EINVAL, path, "\"%.60s\" is not a %s (e.g. %s)",
			    json_string_value(v), what, hint);
		if (unit_scale(unit, names, scales, n, &scale) != 0)
			return dn_error_set(err, DN_EINVAL, path, "unknown unit \"%.20s\" in \"%.60s\" (e.g. %s)",
			    unit, json_string_value(v), hint);
		*out = num * scale;
	} else
		return dn_error_set(err, DN_EINVAL, path, "must be a number or a string with a unit (e.g. %s)", hint);
	if (!(*out >= 0) || !isfinite(*out) || *out > 9.0e18)
		return dn_error_set(err, DN_ERANGE, path, "%g is not a sensible %s", *out, what);
	return 0;
}

int
sq_parse_bytes(const json_t *v, const char *path, double *out, struct dn_error *err)
{
	static const char *const n[] = { "", "B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "k", "K", "M", "G", "T" };
	static const double s[] = { 1, 1, 1e3, 1e6, 1e9, 1e12, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0,
	    1e3, 1e3, 1e6, 1e9, 1e12 };

	return parse_with_units(v, path, "size in bytes", n, s, 15, "\"16GiB\", \"500 MB\", 17179869184", out, err);
}

int
sq_parse_count(const json_t *v, const char *path, double *out, struct dn_error *err)
{
	static const char *const n[] = { "", "K", "k", "M", "G", "B", "T" };
	static const double s[] = { 1, 1e3, 1e3, 1e6, 1e9, 1e9, 1e12 };

	return parse_with_units(v, path, "count", n, s, 7, "\"4.1G\", \"25M\", 25000000", out, err);
}

int
sq_parse_seconds(const json_t *v, const char *path, double *out, struct dn_error *err)
{
	static const char *const n[] = { "", "s", "ms", "us", "ns", "min" };
	static const double s[] = { 1, 1, 1e-3, 1e-6, 1e-9, 60 };

	return parse_with_units(v, path, "duration", n, s, 6, "\"10ms\", \"0.5s\", 0.01", out, err);
}

/* ---- parts ---- */

static int
add_part(struct sq_query *q, const char *label, const char *path, expr_id ok, expr_id value,
    double limit, int kind, struct dn_error *err)
{
	struct sq_part *p = realloc(q->parts, sizeof *p * (size_t)(q->nparts + 1));

	if (p == NULL)
		return dn_error_set(err, DN_ENOMEM, path, "out of memory");
	q->parts = p;
	p = &q->parts[q->nparts];
	memset(p, 0, sizeof *p);
	p->label = strdup(label);
	p->path = strdup(path);
	p->ok = ok;
	p->value = value;
	p->limit = limit;
	p->kind = kind;
	if (p->label == NULL || p->path == NULL) {
		free(p->label);
		free(p->path);
		return dn_error_set(err, DN_ENOMEM, path, "out of memory");
	}
	q->nparts++;
	return 0;
}

/* ---- model, device, workload ---- */

static int
load_model(const json_t *m, struct sq_query *q, const char **preset, struct dn_error *err)
{
	*preset = NULL;
	if (json_is_string(m)) {
		const char *name = json_string_value(m);
		if (cm_def_load_template(name, &q->def, err) == 0)
			return 0;
		dn_error_clear(err);
		if (cm_def_load_preset(name, &q->def, err) != 0) {
			dn_error_clear(err);
			return dn_error_set(err, DN_ENOENT, "$.model", "no template or preset named \"%.64s\"", name);
		}
		*preset = name;
		return 0;
	}
	if (!json_is_object(m))
		return dn_error_set(err, DN_EINVAL, "$.model", "must be a template or preset name, "
		    "{\"template\": ..., \"preset\": ...} or a model object");
	if (json_object_get(m, "dnnsat_model") != NULL)
		return cm_def_load_json((json_t *)m, &q->def, err) != 0 ? reroot(err, "$.model") : 0;
	{
		const char *t = json_string_value(json_object_get(m, "template"));
		const char *p = json_string_value(json_object_get(m, "preset"));
		const char *key;
		json_t *v;
		json_object_foreach((json_t *)m, key, v) {
			if (strcmp(key, "template") && strcmp(key, "preset"))
				return dn_error_set(err, DN_EINVAL, "$.model", "unknown field \"%s\" "
				    "(a model object needs \"dnnsat_model\": 1)", key);
		}
		if (t != NULL) {
			if (cm_def_load_template(t, &q->def, err) != 0) {
				if (err->code == DN_ENOENT)
					dn_error_clear(err);
				return dn_error_set(err, DN_ENOENT, "$.model.template", "unknown template \"%.64s\"", t);
			}
		} else if (p != NULL) {
			if (cm_def_load_preset(p, &q->def, err) != 0) {
				dn_error_clear(err);
				return dn_error_set(err, DN_ENOENT, "$.model.preset", "no template has a preset \"%.64s\"", p);
			}
		} else
			return dn_error_set(err, DN_EINVAL, "$.model", "give \"template\" or \"preset\"");
		*preset = p;
	}
	return 0;
}

static int
load_workload(const json_t *w, struct cm_workload *wl, struct dn_error *err)
{
	const char *key;
	json_t *v;

	wl->training = 1;
	wl->optimizer = CM_OPT_ADAM;
	wl->precision = CM_PREC_FP32;
	wl->tf32 = 0;
	if (w == NULL)
		return 0;
	if (!json_is_object(w))
		return dn_error_set(err, DN_EINVAL, "$.workload", "must be an object");
	json_object_foreach((json_t *)w, key, v) {
		if (strcmp(key, "mode") == 0) {
			const char *s = json_string_value(v);
			if (s == NULL || (strcmp(s, "training") && strcmp(s, "inference")))
				return dn_error_set(err, DN_EINVAL, "$.workload.mode", "must be \"training\" or \"inference\"");
			wl->training = strcmp(s, "training") == 0;
		} else if (strcmp(key, "optimizer") == 0) {
			if (!json_is_string(v) || cm_optimizer_parse(json_string_value(v), &wl->optimizer) != 0)
				return dn_error_set(err, DN_EINVAL, "$.workload.optimizer",
				    "must be sgd, sgd_momentum, adam, adamw, adagrad or rmsprop");
		} else if (strcmp(key, "dtype") == 0) {
			if (!json_is_string(v) || cm_precision_parse(json_string_value(v), &wl->precision) != 0)
				return dn_error_set(err, DN_EINVAL, "$.workload.dtype",
				    "must be fp32, fp16, bf16, mixed_fp16 or mixed_bf16");
		} else if (strcmp(key, "tf32") == 0) {
			if (!json_is_boolean(v))
				return dn_error_set(err, DN_EINVAL, "$.workload.tf32", "must be true or false");
			wl->tf32 = json_is_true(v);
		} else
			return dn_error_set(err, DN_EINVAL, "$.workload", "unknown field \"%s\"", key);
	}
	return 0;
}

/* ---- bounds from the space ---- */

static void
hull_add(struct expr_ival *b, int real, union expr_val v, int *first)
{
	if (*first) {
		b->lo = b->hi = v;
		*first = 0;
		return;
	}
	if (real) {
		if (v.r < b->lo.r) b->lo.r = v.r;
		if (v.r > b->hi.r) b->hi.r = v.r;
	} else {
		if (v.i < b->lo.i) b->lo.i = v.i;
		if (v.i > b->hi.i) b->hi.i = v.i;
	}
}

static int
space_bounds(struct sq_query *q, struct dn_error *err)
{
	const struct cm_model_def *def = q->def;
	int *first = calloc((size_t)def->nhps + 1, sizeof *first);

	if (first == NULL)
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	for (int i = 0; i < def->nhps; i++) {
		q->bounds[i].lo = q->bounds[i].hi = q->fixed[i];
		first[i] = 1;
	}
	for (int k = 0; k < q->space.ndims; k++) {
		const struct sp_dim *d = &q->space.dims[k];
		int real;
		if (d->hp < 0)
			continue;
		real = def->hps[d->hp].type == CM_HP_REAL;
		if (!d->discrete) {
			union expr_val lo, hi;
			lo.r = d->lo;
			hi.r = d->hi;
			hull_add(&q->bounds[d->hp], 1, lo, &first[d->hp]);
			hull_add(&q->bounds[d->hp], 1, hi, &first[d->hp]);
		} else if (d->nvalues <= 1000000) {
			for (int64_t i = 0; i < d->nvalues; i++)
				hull_add(&q->bounds[d->hp], real, sp_value_hp(d, i), &first[d->hp]);
		} else {
			hull_add(&q->bounds[d->hp], real, sp_value_hp(d, 0), &first[d->hp]);
			hull_add(&q->bounds[d->hp], real, sp_value_hp(d, d->nvalues - 1), &first[d->hp]);
		}
		/* an inactive nested dim leaves the hyperparameter at its fixed value */
		if (d->parent >= 0)
			hull_add(&q->bounds[d->hp], real, q->fixed[d->hp], &first[d->hp]);
	}
	free(first);
	return 0;
}

/* ---- budgets and constraints ---- */

static int
parse_budgets(const json_t *b, struct sq_query *q, struct dn_error *err)
{
	const char *key;
	json_t *v;
	char path[128];

	if (b == NULL)
		return 0;
	if (!json_is_object(b))
		return dn_error_set(err, DN_EINVAL, "$.budgets", "must be an object");
	json_object_foreach((json_t *)b, key, v) {
		int k = -1, rc;
		for (int i = 0; i < SQ_B_COUNT; i++)
			if (strcmp(key, budget_names[i]) == 0)
				k = i;
		snprintf(path, sizeof path, "$.budgets.%.64s", key);
		if (k < 0)
			return dn_error_set(err, DN_EINVAL, "$.budgets", "unknown budget \"%.64s\" (memory, params, "
			    "weight_bytes, macs, flops, latency, step_time, min_utilization)", key);
		switch (k) {
		case SQ_B_MEMORY:
			if (json_is_string(v) && strchr(json_string_value(v), '%') != NULL) {
				double pct;
				const char *unit;
				if (split_unit(json_string_value(v), &pct, &unit) != 0 || strcmp(unit, "%") != 0 ||
				    pct <= 0 || pct > 100)
					return dn_error_set(err, DN_EINVAL, path, "a percentage of the device's memory, "
					    "0 to 100 (e.g. \"90%%\")");
				q->budget[k] = (double)q->device.memory_bytes * pct / 100.0;
				rc = 0;
			} else
				rc = sq_parse_bytes(v, path, &q->budget[k], err);
			break;
		case SQ_B_WEIGHT_BYTES:
			rc = sq_parse_bytes(v, path, &q->budget[k], err);
			break;
		case SQ_B_PARAMS: case SQ_B_MACS: case SQ_B_FLOPS:
			rc = sq_parse_count(v, path, &q->budget[k], err);
			break;
		case SQ_B_LATENCY: case SQ_B_STEP_TIME:
			rc = sq_parse_seconds(v, path, &q->budget[k], err);
			break;
		default:
			if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1)
				return dn_error_set(err, DN_EINVAL, path, "must be a fraction from 0 to 1");
			q->budget[k] = json_number_value(v);
			rc = 0;
			break;
		}
		if (rc != 0)
			return -1;
		q->has_budget[k] = 1;
	}
	return 0;
}

static int
resolve_hp(void *ctx, const char *name, size_t len, struct expr_name_info *out)
{
	struct sq_query *q = ctx;
	const struct expr_graph *g = cm_model_graph(q->model);

	for (int i = 0; i < q->def->nhps; i++) {
		const struct cm_hparam *h = &q->def->hps[i];
		if (strlen(h->name) != len || strncmp(h->name, name, len) != 0)
			continue;
		/* constraints are built on the model's graph: find the variable node */
		out->id = expr_var((struct expr_graph *)g, i);
		if (h->type == CM_HP_CATEGORICAL) {
			out->enum_values = (const char *const *)h->values;
			out->n_enum = h->nvalues;
		}
		return 0;
	}
	return -1;
}

static const char *
human(double v, const char *unit, char *buf, size_t len)
{
	static const char *const si[] = { "", "K", "M", "G", "T", "P" };
	int i = 0;

	if (strcmp(unit, "B") == 0) {
		static const char *const bi[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
		while (v >= 1024 && i < 5) {
			v /= 1024;
			i++;
		}
		snprintf(buf, len, "%.4g %s", v, bi[i]);
		return buf;
	}
	if (strcmp(unit, "s") == 0) {
		if (v < 1e-3)
			snprintf(buf, len, "%.4g us", v * 1e6);
		else if (v < 1)
			snprintf(buf, len, "%.4g ms", v * 1e3);
		else
			snprintf(buf, len, "%.4g s", v);
		return buf;
	}
	while (v >= 1000 && i < 5) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, "%.4g%s", v, si[i]);
	return buf;
}

static int
build_feasible(struct sq_query *q, const json_t *constraints, struct dn_error *err)
{
	struct expr_graph *g = (struct expr_graph *)cm_model_graph(q->model);
	expr_id all;
	char label[600], lim[64];
	static const enum cm_metric metric[SQ_B_COUNT] = {
		CM_M_MEM, CM_M_PARAMS, CM_M_WEIGHT_BYTES, CM_M_MACS, CM_M_FLOPS,
		CM_M_LAT_INFER, CM_M_LAT_TRAIN, CM_M_UTIL,
	};
	static const char *const units[SQ_B_COUNT] = { "B", "", "B", "", "", "s", "s", "" };

	all = cm_model_metric(q->model, CM_M_VALID);
	if (add_part(q, "the model's shapes are valid (Refty constraints)", "$.model", all, EXPR_NONE, 0, 0, err))
		return -1;
	for (int k = 0; k < SQ_B_COUNT; k++) {
		expr_id val = cm_model_metric(q->model, metric[k]), ok;
		char path[64];
		if (!q->has_budget[k])
			continue;
		snprintf(path, sizeof path, "$.budgets.%s", budget_names[k]);
		if (k == SQ_B_MIN_UTIL) {
			ok = expr_ge(g, val, expr_real(g, q->budget[k]));
			snprintf(label, sizeof label, "utilization >= %.0f%%", q->budget[k] * 100);
		} else if (expr_type_of(g, val) == EXPR_INT) {
			ok = expr_le(g, val, expr_int(g, (int64_t)floor(q->budget[k])));
			snprintf(label, sizeof label, "%s <= %s", budget_names[k], human(q->budget[k], units[k], lim, sizeof lim));
		} else {
			ok = expr_le(g, val, expr_real(g, q->budget[k]));
			snprintf(label, sizeof label, "%s <= %s", budget_names[k], human(q->budget[k], units[k], lim, sizeof lim));
		}
		if (add_part(q, label, path, ok, val, q->budget[k], 1, err) != 0)
			return -1;
		all = expr_and(g, all, ok);
	}
	if (constraints != NULL) {
		size_t i;
		json_t *c;
		if (!json_is_array(constraints) || json_array_size(constraints) > 256)
			return dn_error_set(err, DN_EINVAL, "$.constraints", "must be a list of at most 256 expressions");
		json_array_foreach(constraints, i, c) {
			struct expr_parse_opts opts = { resolve_hp, NULL, q };
			char path[64];
			expr_id e;
			snprintf(path, sizeof path, "$.constraints[%zu]", i);
			if (!json_is_string(c))
				return dn_error_set(err, DN_EINVAL, path, "must be an expression string (e.g. \"hidden %% heads == 0\")");
			e = expr_parse(g, json_string_value(c), &opts, path, err);
			if (e < 0)
				return -1;
			if (!expr_is_bool(g, e))
				e = expr_ne(g, e, expr_type_of(g, e) == EXPR_INT ? expr_int(g, 0) : expr_real(g, 0.0));
			snprintf(label, sizeof label, "%.500s", json_string_value(c));
			if (add_part(q, label, path, e, EXPR_NONE, 0, 2, err) != 0)
				return -1;
			all = expr_and(g, all, e);
		}
	}
	if (all < 0 || dn_error_isset(&g->err))
		return dn_error_set(err, DN_EINTERNAL, "$", "could not build the constraints: %s", g->err.message);
	q->feasible = all;
	return 0;
}

/* sq_parse and sq_parse_point: `point` makes the space optional. */
static int
parse_query(const json_t *req, const struct cm_device_catalog *catalog, struct sq_query *q, int point,
    struct dn_error *err)
{
	const char *key, *preset = NULL;
	json_t *v;
	static const char *const keys[] = { "model", "space", "device", "workload", "budgets",
	    "constraints", "fixed", NULL };
	const json_t *dev;

	memset(q, 0, sizeof *q);
	q->feasible = EXPR_NONE;
	if (!json_is_object(req))
		return dn_error_set(err, DN_EINVAL, "$", "a query must be a JSON object");
	json_object_foreach((json_t *)req, key, v) {
		int ok = 0;
		for (const char *const *k = keys; *k; k++)
			ok |= strcmp(*k, key) == 0;
		if (!ok)
			return dn_error_set(err, DN_EINVAL, "$", "unknown field \"%.64s\" (model, space, device, "
			    "workload, budgets, constraints, fixed)", key);
	}
	if (json_object_get(req, "model") == NULL)
		return dn_error_set(err, DN_EINVAL, "$.model", "a query needs a model");
	if (json_object_get(req, "space") == NULL && !point)
		return dn_error_set(err, DN_EINVAL, "$.space", "a query needs an NNI search space");
	if (load_model(json_object_get(req, "model"), q, &preset, err) != 0)
		return -1;
	dev = json_object_get(req, "device");
	if (dev == NULL || json_is_string(dev)) {
		const char *name = dev ? json_string_value(dev) : "a100-40gb";
		const struct cm_device *d = catalog ? cm_catalog_find(catalog, name) : NULL;
		if (d == NULL)
			return dn_error_set(err, DN_ENOENT, "$.device", "unknown device \"%.64s\"", name);
		q->device = *d;
	} else if (cm_device_from_json(dev, "$.device", &q->device, err) != 0)
		return -1;
	if (load_workload(json_object_get(req, "workload"), &q->wl, err) != 0)
		return -1;
	q->fixed = calloc((size_t)q->def->nhps + 1, sizeof *q->fixed);
	q->bounds = calloc((size_t)q->def->nhps + 1, sizeof *q->bounds);
	if (q->fixed == NULL || q->bounds == NULL)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	cm_config_defaults(q->def, q->fixed);
	if (preset != NULL && cm_config_apply_preset(q->def, preset, q->fixed, err) != 0)
	{
		if (err != NULL)
			dn_fmt(err->path, sizeof err->path, "%s",
			    json_is_object(json_object_get(req, "model")) ? "$.model.preset" : "$.model");
		return -1;
	}
	if (json_object_get(req, "fixed") != NULL &&
	    cm_config_from_json(q->def, json_object_get(req, "fixed"), "$.fixed", q->fixed, err) != 0)
		return -1;
	if (json_object_get(req, "space") != NULL) {
		if (sp_parse(json_object_get(req, "space"), &q->space, err) != 0 || sp_bind(&q->space, q->def, err) != 0)
			return reroot(err, "$.space");
	}
	if (parse_budgets(json_object_get(req, "budgets"), q, err) != 0)
		return -1;
	if (!q->has_budget[SQ_B_MEMORY]) {
		q->has_budget[SQ_B_MEMORY] = 1;
		q->budget[SQ_B_MEMORY] = (double)q->device.memory_bytes;
	}
	if (space_bounds(q, err) != 0)
		return -1;
	if (cm_model_build(q->def, &q->wl, &q->device, q->bounds, &q->model, err) != 0)
		return -1;
	return build_feasible(q, json_object_get(req, "constraints"), err);
}

int
sq_parse(const json_t *req, const struct cm_device_catalog *catalog, struct sq_query *q,
    struct dn_error *err)
{
	return parse_query(req, catalog, q, 0, err);
}

int
sq_parse_point(const json_t *req, const struct cm_device_catalog *catalog, struct sq_query *q,
    struct dn_error *err)
{
	return parse_query(req, catalog, q, 1, err);
}
