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
#include "query_settings.h"
#include "dn_number.h"
#include "dn_suggest.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
	for (int i = 0; i < q->nwarnings; i++)
		free(q->warnings[i]);
	free(q->warnings);
	cm_model_free(q->model);
	sp_free(&q->space);
	free(q->fixed);
	free(q->bounds);
	free(q->z3_selectors);
	cm_def_unref(q->def);
	memset(q, 0, sizeof *q);
}

int
sq_warn(struct sq_query *q, struct dn_error *err, const char *fmt, ...)
{
	char text[1024], **w;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	w = realloc(q->warnings, sizeof *w * (size_t)(q->nwarnings + 1));
	if (w == NULL)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	q->warnings = w;
	if ((w[q->nwarnings] = strdup(text)) == NULL)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	q->nwarnings++;
	return 0;
}

json_t *
sq_warnings_json(const struct sq_query *q)
{
	json_t *a = json_array();

	for (int i = 0; i < q->nwarnings; i++)
		json_array_append_new(a, json_string(q->warnings[i]));
	return a;
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

/*
 * A unit of a budget. Units match exactly first, then case-insensitively
 * unless `exact` ("M": mega, never milli). `refuse` marks spellings that
 * could mean two things ("m": milli or mega, "b": bits or bytes): they are
 * refused with `hint` rather than guessed.
 */
struct unit {
	const char *name;
	double scale;
	int exact;
	const char *refuse;     /* NULL, or why the spelling is refused */
};

static const struct unit *
unit_find(const char *u, const struct unit *units)
{
	for (const struct unit *x = units; x->name != NULL; x++)
		if (strcmp(u, x->name) == 0)
			return x;
	for (const struct unit *x = units; x->name != NULL; x++)
		if (!x->exact && strcasecmp(u, x->name) == 0)
			return x;
	return NULL;
}

/*
 * A budget value: a string "<number> <unit>", or a bare number (JSON or
 * text) when `unitless` (NULL) allows it (counts); else a bare number is
 * refused, suggesting the number with either of the two units `unitless`
 * names ("GiB", "MB"). `what` names the quantity in messages, `hint` gives
 * examples.
 */
static int
parse_with_units(const json_t *v, const char *path, const char *what, const struct unit *units,
    const char *const *unitless, const char *hint, double *out, struct dn_error *err)
{
	double num;
	const char *unit = "";
	const struct unit *u;

	if (json_is_number(v)) {
		num = json_number_value(v);
	} else if (json_is_string(v)) {
		if (split_unit(json_string_value(v), &num, &unit) != 0)
			return dn_error_set(err, DN_EINVAL, path, "\"%.60s\" is not a %s (e.g. %s)",
			    json_string_value(v), what, hint);
	} else
		return dn_error_set(err, DN_EINVAL, path, "must be a string with a unit (e.g. %s)", hint);
	if (unit[0] == '\0') {
		if (unitless != NULL)
			return dn_error_set(err, DN_EINVAL, path, "%.15g has no unit: did you mean \"%.15g%s\" or "
			    "\"%.15g%s\"? (a %s needs a unit, e.g. %s)", num, num, unitless[0], num, unitless[1], what, hint);
		*out = num;
	} else if ((u = unit_find(unit, units)) == NULL || u->refuse != NULL) {
		if (u != NULL)
			return dn_error_set(err, DN_EINVAL, path, "unit \"%.20s\" in \"%.60s\" is ambiguous: %s",
			    unit, json_string_value(v), u->refuse);
		return dn_error_set(err, DN_EINVAL, path, "unknown unit \"%.20s\" in \"%.60s\" (e.g. %s)",
		    unit, json_string_value(v), hint);
	} else
		*out = num * u->scale;
	if (!(*out >= 0) || !isfinite(*out) || *out > 9.0e18)
		return dn_error_set(err, DN_ERANGE, path, "%g is not a sensible %s (a limit is from 0 to 9e18)", *out,
		    what);
	return 0;
}

int
sq_parse_bytes(const json_t *v, const char *path, double *out, struct dn_error *err)
{
	static const struct unit u[] = {
		{ "B", 1, 1, NULL }, { "bytes", 1, 0, NULL }, { "byte", 1, 0, NULL },
		{ "KB", 1e3, 0, NULL }, { "MB", 1e6, 0, NULL }, { "GB", 1e9, 0, NULL }, { "TB", 1e12, 0, NULL },
		{ "KiB", 1024.0, 0, NULL }, { "MiB", 1048576.0, 0, NULL }, { "GiB", 1073741824.0, 0, NULL },
		{ "TiB", 1099511627776.0, 0, NULL },
		{ "K", 1e3, 0, NULL }, { "M", 1e6, 1, NULL }, { "G", 1e9, 0, NULL }, { "T", 1e12, 0, NULL },
		{ "b", 0, 1, "\"b\" could be bits or bytes: write \"B\" for bytes (or \"GiB\", \"MB\", ...)" },
		{ "m", 0, 1, "\"m\" could be milli or mega: write \"M\" or \"MB\" for megabytes" },
		{ NULL, 0, 0, NULL },
	};

	static const char *const bare[] = { "GiB", "MB" };

	return parse_with_units(v, path, "size in bytes", u, bare, "\"16GiB\", \"500 MB\"", out, err);
}

int
sq_parse_count(const json_t *v, const char *path, double *out, struct dn_error *err)
{
	static const struct unit u[] = {
		{ "K", 1e3, 0, NULL }, { "M", 1e6, 1, NULL }, { "G", 1e9, 0, NULL }, { "B", 1e9, 0, NULL },
		{ "T", 1e12, 0, NULL },
		{ "m", 0, 1, "\"m\" could be milli or mega: write \"M\" for millions" },
		{ NULL, 0, 0, NULL },
	};

	return parse_with_units(v, path, "count", u, NULL, "\"4.1G\", \"25M\", 25000000", out, err);
}

int
sq_parse_seconds(const json_t *v, const char *path, double *out, struct dn_error *err)
{
	static const struct unit u[] = {
		{ "s", 1, 0, NULL }, { "sec", 1, 0, NULL }, { "ms", 1e-3, 0, NULL }, { "us", 1e-6, 0, NULL },
		{ "\xc2\xb5s", 1e-6, 0, NULL }, { "ns", 1e-9, 0, NULL }, { "min", 60, 0, NULL },
		{ "m", 0, 1, "\"m\" could be minutes or milli: write \"min\" or \"ms\"" },
		{ "M", 0, 1, "\"M\" could be minutes or mega: write \"min\" or \"ms\"" },
		{ NULL, 0, 0, NULL },
	};

	static const char *const bare[] = { "ms", "s" };

	/* a bare 5 is 5 seconds in Python but 5 ms on most dashboards: refused */
	return parse_with_units(v, path, "duration", u, bare, "\"10ms\", \"0.5s\"", out, err);
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
	if (json_object_get(m, "id") != NULL)      /* dnnsatd replaces it before parsing (api_models.c) */
		return dn_error_set(err, DN_EINVAL, "$.model.id", "a model id names a model uploaded to the service "
		    "(POST /v1/models); here give the model itself");
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
	const char *key, *implied_by = "";
	json_t *v;
	int implied = -1;       /* the implementation the optimizer's name implies */

	wl->training = 1;
	wl->optimizer = CM_OPT_ADAM;
	wl->precision = CM_PREC_FP32;
	wl->tf32 = 0;
	wl->no_cudnn_tf32 = 0;
	wl->macs_convention = CM_MACS_TORCHVISION;
	wl->attention = CM_ATTN_SDPA;
	wl->grad_accum = 1;
	if (w == NULL)
		return 0;
	if (!json_is_object(w))
		return dn_error_set(err, DN_EINVAL, "$.workload", "must be an object");
	if ((v = json_object_get(w, "pytorch")) != NULL) {
		/* the release's defaults first, whatever the key order: the
		 * fields given explicitly below win */
		int version = json_is_string(v) ? cm_pytorch_parse(json_string_value(v)) : -1;
		if (version < 0)
			return dn_error_set(err, DN_EINVAL, "$.workload.pytorch",
			    "must be a release such as \"2.4\" or \"1.13\" (MAJOR.MINOR)");
		cm_pytorch_apply(version, wl);
	}
	json_object_foreach((json_t *)w, key, v) {
		if (strcmp(key, "pytorch") == 0) {
			/* applied above */
		} else if (strcmp(key, "mode") == 0) {
			const char *s = json_string_value(v);
			if (s == NULL || (strcmp(s, "training") && strcmp(s, "inference")))
				return dn_error_set(err, DN_EINVAL, "$.workload.mode", "must be \"training\" or \"inference\"");
			wl->training = strcmp(s, "training") == 0;
		} else if (strcmp(key, "optimizer") == 0) {
			int rc = json_is_string(v) ? cm_optimizer_parse(json_string_value(v), &wl->optimizer, &implied) : -1;
			if (rc != 0)
				return cm_optimizer_refuse(json_is_string(v) ? json_string_value(v) : "", rc,
				    "$.workload.optimizer", err);
			implied_by = json_string_value(v);
		} else if (strcmp(key, "dtype") == 0) {
			if (!json_is_string(v) || cm_precision_parse(json_string_value(v), &wl->precision) != 0)
				return dn_error_set(err, DN_EINVAL, "$.workload.dtype",
				    "must be fp32, fp16, bf16, mixed_fp16 or mixed_bf16");
		} else if (strcmp(key, "tf32") == 0) {
			if (!json_is_boolean(v))
				return dn_error_set(err, DN_EINVAL, "$.workload.tf32", "must be true or false");
			wl->tf32 = json_is_true(v);
		} else if (strcmp(key, "cudnn_tf32") == 0) {
			if (!json_is_boolean(v))
				return dn_error_set(err, DN_EINVAL, "$.workload.cudnn_tf32", "must be true or false");
			wl->no_cudnn_tf32 = !json_is_true(v);
		} else if (strcmp(key, "macs_convention") == 0) {
			enum cm_macs_convention c;
			if (!json_is_string(v) || cm_macs_convention_parse(json_string_value(v), &c) != 0)
				return dn_error_set(err, DN_EINVAL, "$.workload.macs_convention",
				    "must be \"torchvision\", \"nb201\" or \"fvcore\"");
			wl->macs_convention = (int)c;
		} else if (strcmp(key, "attention") == 0) {
			if (!json_is_string(v) || cm_attention_parse(json_string_value(v), &wl->attention) != 0)
				return dn_error_set(err, DN_EINVAL, "$.workload.attention",
				    "must be sdpa, eager, math, mem_efficient or flash");
		} else if (strcmp(key, "checkpointing") == 0) {
			if (!json_is_boolean(v))
				return dn_error_set(err, DN_EINVAL, "$.workload.checkpointing", "must be true or false");
			wl->checkpointing = json_is_true(v);
		} else if (cm_choice_by_field(key) != NULL) {      /* zero_grad, optimizer_impl, softmax_saves */
			if (cm_choice_from_json(cm_choice_by_field(key), v, wl, err) != 0)
				return -1;
		} else if (strcmp(key, "grad_accum") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65536)
				return dn_error_set(err, DN_EINVAL, "$.workload.grad_accum",
				    "must be an integer from 1 to 65536 (micro-batches per optimizer step)");
			wl->grad_accum = (int)json_integer_value(v);
		} else if (strcmp(key, "freeze") == 0 || strcmp(key, "train") == 0 || strcmp(key, "lora") == 0 ||
		    strcmp(key, "quantize") == 0) {
			if (cm_ft_from_json(&wl->ft, key, v, err) != 0)
				return -1;
		} else
			return dn_error_set(err, DN_EINVAL, "$.workload", "unknown field \"%s\"", key);
	}
	if (cm_optimizer_settle(wl, implied, implied_by, json_object_get(w, "optimizer_impl") != NULL,
	    "$.workload.optimizer_impl", err) != 0)
		return -1;
	return cm_pytorch_check(wl, "$.workload.attention", err);
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

/* A JSON number, or a string holding only a number ("16", " 0.9 "). */
static int
bare_number(const json_t *v)
{
	double x;
	const char *unit;

	if (json_is_number(v))
		return 1;
	return json_is_string(v) && split_unit(json_string_value(v), &x, &unit) == 0 && unit[0] == '\0';
}

/* A memory limit: a size with a unit or a share of the usable memory. */
static int
parse_memory_limit(const json_t *v, const char *path, struct sq_query *q, double *out, struct dn_error *err)
{
	int rc;

	if (json_is_string(v) && strchr(json_string_value(v), '%') != NULL) {
		double pct;
		const char *unit;
		if (split_unit(json_string_value(v), &pct, &unit) != 0 || strcmp(unit, "%") != 0 ||
		    pct <= 0 || pct > 100)
			return dn_error_set(err, DN_EINVAL, path, "a percentage of the device's usable "
			    "memory, more than 0 and at most 100 (e.g. \"90%%\")");
		*out = (double)q->device.usable_memory_bytes * pct / 100.0;
		rc = 0;
	} else if (bare_number(v)) {
		double x = json_is_number(v) ? json_number_value(v) : atof(json_string_value(v));
		if (x > 0 && x <= 1)
			return dn_error_set(err, DN_EINVAL, path, "%.15g has no unit: did you mean "
			    "\"%.15g%%\" of the device's usable memory, or \"%.15gGiB\"?", x, x * 100, x);
		if (x >= 1048576 && x == floor(x))      /* a byte count, more likely than 2e9 GiB */
			return dn_error_set(err, DN_EINVAL, path, "%.15g has no unit: did you mean \"%.15gB\" (bytes)? "
			    "(or a share of the device's usable memory, e.g. \"90%%\")", x, x);
		return dn_error_set(err, DN_EINVAL, path, "%.15g has no unit: did you mean \"%.15gGiB\" "
		    "or \"%.15gGB\"? (or a share of the device's usable memory, e.g. \"90%%\")", x, x, x);
	} else
		rc = sq_parse_bytes(v, path, out, err);
	return rc;
}

/* The memory budget: a limit, or {"limit": L, "estimate": "expected" |
 * "safe"} choosing which estimate of the peak it bounds (the limit may be
 * left out: the device's usable memory). */
static int
parse_memory_budget(const json_t *v, const char *path, struct sq_query *q, struct dn_error *err)
{
	const char *key, *est;
	const json_t *x, *lim;
	char sub[160];

	if (!json_is_object(v))
		return parse_memory_limit(v, path, q, &q->budget[SQ_B_MEMORY], err);
	if (json_object_size(v) == 0)
		return dn_error_set(err, DN_EINVAL, path, "an empty object: give a limit (\"16GiB\", \"90%%\") or "
		    "{\"limit\": \"16GiB\", \"estimate\": \"safe\"}");
	json_object_foreach((json_t *)v, key, x)
		if (strcmp(key, "limit") != 0 && strcmp(key, "estimate") != 0)
			return dn_error_set(err, DN_EINVAL, path, "unknown field \"%.64s\" (a memory budget object "
			    "has \"limit\" and \"estimate\")", key);
	x = json_object_get(v, "estimate");
	if (x != NULL) {
		snprintf(sub, sizeof sub, "%s.estimate", path);
		est = json_string_value(x);
		if (est == NULL || (strcmp(est, "expected") != 0 && strcmp(est, "safe") != 0))
			return dn_error_set(err, DN_EINVAL, sub, "must be \"expected\" (the expected peak) or "
			    "\"safe\" (its upper estimate, for those who cannot afford an out-of-memory error)");
		q->memory_safe = strcmp(est, "safe") == 0;
	}
	lim = json_object_get(v, "limit");
	if (lim == NULL) {
		q->budget[SQ_B_MEMORY] = (double)q->device.usable_memory_bytes;
		q->memory_from_device = 1;
		return 0;
	}
	snprintf(sub, sizeof sub, "%s.limit", path);
	return parse_memory_limit(lim, sub, q, &q->budget[SQ_B_MEMORY], err);
}

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
		if (k < 0) {
			char near[128];
			if (dn_suggest(key, budget_names, SQ_B_COUNT, near, sizeof near) > 0)
				return dn_error_set(err, DN_EINVAL, "$.budgets", "unknown budget \"%.64s\": did you mean "
				    "%s?", key, near);
			return dn_error_set(err, DN_EINVAL, "$.budgets", "unknown budget \"%.64s\" (memory, params, "
			    "weight_bytes, macs, flops, latency, step_time, min_utilization)", key);
		}
		switch (k) {
		case SQ_B_MEMORY:
			rc = parse_memory_budget(v, path, q, err);
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

/* The unit each budget is kept in: bytes, counts, seconds, a ratio. */
static const char *const budget_units[SQ_B_COUNT] = { "B", "", "B", "", "", "s", "s", "ratio" };

void
sq_budget_value_show(enum sq_budget_kind k, double v, int exact, char *buf, size_t len)
{
	if (k == SQ_B_MIN_UTIL)
		snprintf(buf, len, exact ? "%.15g%%" : "%.4g%%", v * 100);
	else if (exact)
		snprintf(buf, len, "%.17g%s%s", v, budget_units[k][0] ? " " : "", budget_units[k]);
	else
		human(v, budget_units[k], buf, len);
}

void
sq_budget_show(const struct sq_query *q, enum sq_budget_kind k, char *buf, size_t len)
{
	sq_budget_value_show(k, q->budget[k], 0, buf, len);
}

json_t *
sq_budgets_json(const struct sq_query *q)
{
	json_t *b = json_object();

	for (int k = 0; k < SQ_B_COUNT; k++) {
		char text[64];
		if (!q->has_budget[k])
			continue;
		sq_budget_show(q, (enum sq_budget_kind)k, text, sizeof text);
		/* bytes, MACs and FLOPs stay exact: a whole limit is an integer */
		json_t *v = q->budget[k] == floor(q->budget[k]) && fabs(q->budget[k]) < 9.0e15 ?
		    json_integer((json_int_t)q->budget[k]) : json_real(q->budget[k]);
		json_object_set_new(b, budget_names[k], json_pack("{s:o,s:s,s:s,s:s}", "value", v,
		    "unit", budget_units[k], "text", text,
		    "source", k == SQ_B_MEMORY && q->memory_from_device ? "device" : "request"));
		if (k == SQ_B_MEMORY)
			json_object_set_new(json_object_get(b, budget_names[k]), "estimate",
			    json_string(q->memory_safe ? "safe" : "expected"));
	}
	return b;
}

/* An expression's error "unknown name 'hiden' ...": the hyperparameters
 * close to it appended ("(did you mean hidden?)"). Returns -1. */
static int
suggest_name(const struct cm_model_def *def, struct dn_error *err)
{
	const char *at = strstr(err->message, "unknown name '"), *end;
	char name[72], near[200];
	size_t n = strlen(err->message);

	if (at == NULL || (end = strchr(at + 14, '\'')) == NULL || end - (at + 14) >= (ptrdiff_t)sizeof name)
		return -1;
	dn_fmt(name, sizeof name, "%.*s", (int)(end - (at + 14)), at + 14);
	if (cm_def_suggest_hp(def, name, near, sizeof near) > 0)
		dn_fmt(err->message + n, sizeof err->message - n, " (did you mean %s?)", near);
	return -1;
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

	all = cm_model_metric(q->model, CM_M_VALID);
	if (add_part(q, "the model's shapes are valid (Refty constraints)", "$.model", all, EXPR_NONE, 0, 0, err))
		return -1;
	for (int k = 0; k < SQ_B_COUNT; k++) {
		expr_id val = cm_model_metric(q->model, k == SQ_B_MEMORY && q->memory_safe ? CM_M_MEM_SAFE : metric[k]), ok;
		char path[64];
		if (!q->has_budget[k])
			continue;
		snprintf(path, sizeof path, "$.budgets.%s", budget_names[k]);
		if (k == SQ_B_MIN_UTIL) {
			ok = expr_ge(g, val, expr_real(g, q->budget[k]));
			sq_budget_show(q, (enum sq_budget_kind)k, lim, sizeof lim);
			snprintf(label, sizeof label, "utilization >= %s", lim);
		} else if (expr_type_of(g, val) == EXPR_INT) {
			ok = expr_le(g, val, expr_int(g, (int64_t)floor(q->budget[k])));
		} else
			ok = expr_le(g, val, expr_real(g, q->budget[k]));
		if (k != SQ_B_MIN_UTIL) {
			sq_budget_show(q, (enum sq_budget_kind)k, lim, sizeof lim);
			snprintf(label, sizeof label, "%s%s <= %s%s%.64s%s", budget_names[k],
			    k == SQ_B_MEMORY && q->memory_safe ? " (safe estimate)" : "", lim,
			    k == SQ_B_MEMORY && q->memory_from_device ? " (" : "",
			    k == SQ_B_MEMORY && q->memory_from_device ? q->device.name : "",
			    k == SQ_B_MEMORY && q->memory_from_device ? "'s usable memory)" : "");
		}
		if (add_part(q, label, path, ok, val, q->budget[k], 1, err) != 0)
			return -1;
		q->parts[q->nparts - 1].minimum = k == SQ_B_MIN_UTIL;
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
				return suggest_name(q->def, err);
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

/* The device's usable memory always applies: no memory budget means that
 * much, a larger one is capped to it with a warning. */
static int
cap_memory(struct sq_query *q, struct dn_error *err)
{
	double usable = (double)q->device.usable_memory_bytes;
	char asked[64];

	if (!q->has_budget[SQ_B_MEMORY]) {
		q->has_budget[SQ_B_MEMORY] = 1;
		q->budget[SQ_B_MEMORY] = usable;
		q->memory_from_device = 1;
		return 0;
	}
	if (q->budget[SQ_B_MEMORY] <= usable)
		return 0;
	sq_budget_show(q, SQ_B_MEMORY, asked, sizeof asked);
	q->budget[SQ_B_MEMORY] = usable;
	q->memory_from_device = 1;
	return sq_warn(q, err, "memory budget %s is more than %.64s's usable %.1f GiB: using %.1f GiB", asked,
	    q->device.name, usable / 1073741824.0, usable / 1073741824.0);
}

/* Binds the parsed space to the model with the query's explicit "bind"
 * map, and warns about the parameters that set nothing. */
static int
bind_space(struct sq_query *q, const json_t *map, struct dn_error *err)
{
	struct sp_bind_pair *pairs = NULL;
	char (*paths)[160] = NULL;
	const char *key;
	json_t *v;
	int n = 0, rc = -1;
	char names[600];

	if (map != NULL && !json_is_object(map))
		return dn_error_set(err, DN_EINVAL, "$.bind", "must be an object: {\"space parameter\": \"model "
		    "hyperparameter\"} (e.g. {\"hidden_size\": \"hidden\"})");
	if (json_object_size(map) > SP_MAX_DIMS)
		return dn_error_set(err, DN_EINVAL, "$.bind", "binds more than %d parameters", SP_MAX_DIMS);
	pairs = calloc(json_object_size(map) + 1, sizeof *pairs);
	paths = calloc(json_object_size(map) + 1, sizeof *paths);
	if (pairs == NULL || paths == NULL) {
		dn_error_set(err, DN_ENOMEM, "$.bind", "out of memory");
		goto out;
	}
	json_object_foreach((json_t *)map, key, v) {
		dn_fmt(paths[n], sizeof paths[n], "$.bind.%.100s", key);
		if (!json_is_string(v)) {
			dn_error_set(err, DN_EINVAL, paths[n], "must be the name of a hyperparameter of the model");
			goto out;
		}
		pairs[n].from = key;
		pairs[n].to = json_string_value(v);
		pairs[n].path = paths[n];
		n++;
	}
	if (sp_bind_map(&q->space, q->def, pairs, n, err) != 0) {
		if (strncmp(err->path, "$.bind", 6) != 0)
			reroot(err, "$.space");
		goto out;
	}
	n = sp_unbound_names(&q->space, q->def, names, sizeof names);
	rc = n == 0 ? 0 : sq_warn(q, err, n == 1 ? "parameter %s sets nothing in model %s (it passes through)" :
	    "parameters %s set nothing in model %s (they pass through)", names, q->def->name);
	n = sp_workload_names(&q->space, q->wl.training, q->settings_noted, names, sizeof names);
	if (rc == 0 && n > 0) {
		char opt[64] = "";
		if (q->wl.training)
			dn_fmt(opt, sizeof opt, " (optimizer %s)", cm_optimizer_label(&q->wl));
		rc = sq_warn(q, err, n == 1 ? "parameter %s is a setting of the workload: every configuration is "
		    "costed as $.workload sets it%s, whatever its value here; one query per value compares them" :
		    "parameters %s are settings of the workload: every configuration is costed as $.workload sets "
		    "them%s, whatever their values here; one query per value compares them", names, opt);
	}
out:
	free(pairs);
	free(paths);
	return rc;
}

/* A hyperparameter in "fixed" that a top-level parameter of the space
 * also sets (by its key or through "bind"): the space's values would win
 * and the fixed value be ignored unsaid, so it is an error at
 * $.fixed.NAME. A nested parameter may share it: the fixed value holds
 * where its option is not chosen. */
static int
fixed_vs_space(const json_t *fixed, const struct sq_query *q, struct dn_error *err)
{
	const char *key;
	json_t *v;

	char path[128];

	json_object_foreach((json_t *)fixed, key, v) {
		int h = cm_def_find_hp(q->def, key);
		for (int k = 0; h >= 0 && k < q->space.ndims; k++)
			if (q->space.dims[k].hp == h && q->space.dims[k].parent < 0) {
				dn_fmt(path, sizeof path, "$.fixed.%.64s", key);
				return dn_error_set(err, DN_EINVAL, path, "the space sets %.64s too (its parameter "
				    "\"%.64s\"), and its values would win: fix it or search it, not both (remove "
				    "one of them)", key, q->space.dims[k].key);
			}
	}
	return 0;
}

/* sq_parse and sq_parse_point: `point` makes the space optional. */
static int
parse_query(const json_t *req, const struct cm_device_catalog *catalog, struct sq_query *q, int point,
    struct dn_error *err)
{
	const char *key, *preset = NULL;
	json_t *v;
	/* a query's fields; the last, "timeout", the front ends take off
	 * before the query is parsed (it is named for "did you mean") */
	static const char *const fields[] = { "model", "space", "device", "workload", "budgets",
	    "constraints", "fixed", "bind", "engine", "timeout" };
	const int nfields = (int)(sizeof fields / sizeof fields[0]);
	const json_t *dev;

	memset(q, 0, sizeof *q);
	q->feasible = EXPR_NONE;
	if (!json_is_object(req))
		return dn_error_set(err, DN_EINVAL, "$", "a query must be a JSON object");
	json_object_foreach((json_t *)req, key, v) {
		int ok = 0;
		for (int k = 0; k < nfields - 1; k++)
			ok |= strcmp(fields[k], key) == 0;
		if (!ok) {
			char near[128];
			if (dn_suggest(key, fields, nfields, near, sizeof near) > 0)
				return dn_error_set(err, DN_EINVAL, "$", "unknown field \"%.64s\": did you mean %s?", key,
				    near);
			return dn_error_set(err, DN_EINVAL, "$", "unknown field \"%.64s\" (model, space, device, "
			    "workload, budgets, constraints, fixed, bind, engine, timeout)", key);
		}
	}
	if ((v = json_object_get(req, "engine")) != NULL) {
		const char *name = json_string_value(v);
		if (name == NULL || (strcmp(name, "bnb") != 0 && strcmp(name, "z3") != 0))
			return dn_error_set(err, DN_EINVAL, "$.engine", "must be \"bnb\" (the branch-and-bound engine, "
			    "the default) or \"z3\" (the engine's count cross-checked by Z3's enumeration)");
		q->engine_z3 = strcmp(name, "z3") == 0;
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
		const struct cm_device *d = NULL;
		if (catalog == NULL)
			return dn_error_set(err, DN_ENOENT, "$.device", "unknown device \"%.64s\" (no catalog)", name);
		if (cm_catalog_resolve(catalog, name, "$.device", &d, err) != 0)
			return -1;
		q->device = *d;
	} else if (cm_device_from_json(dev, "$.device", &q->device, err) != 0)
		return -1;
	if (load_workload(json_object_get(req, "workload"), &q->wl, err) != 0)
		return -1;
	if (sq_space_settings(q, json_object_get(req, "space"), err) != 0)
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
	cm_ft_config_rank(q->def, &q->wl, q->fixed);
	if (json_object_get(req, "fixed") != NULL &&
	    cm_config_from_json(q->def, json_object_get(req, "fixed"), "$.fixed", q->fixed, err) != 0)
		return -1;
	if (json_object_get(req, "space") != NULL) {
		if (sp_parse(json_object_get(req, "space"), &q->space, err) != 0)
			return reroot(err, "$.space");
		if (bind_space(q, json_object_get(req, "bind"), err) != 0 ||
		    fixed_vs_space(json_object_get(req, "fixed"), q, err) != 0)
			return -1;
	} else if (json_object_get(req, "bind") != NULL)
		return dn_error_set(err, DN_EINVAL, "$.bind", "binds parameters of a space: the query has no \"space\"");
	if (q->device.usable_memory_bytes <= 0 || q->device.usable_memory_bytes > q->device.memory_bytes)
		q->device.usable_memory_bytes = q->device.memory_bytes;
	if (parse_budgets(json_object_get(req, "budgets"), q, err) != 0 || cap_memory(q, err) != 0)
		return -1;
	if (space_bounds(q, err) != 0)
		return -1;
	if (cm_model_build(q->def, &q->wl, &q->device, q->bounds, &q->model, err) != 0)
		return -1;
	if (cm_model_checkpointing_warning(q->model) != NULL &&
	    sq_warn(q, err, "%s", cm_model_checkpointing_warning(q->model)) != 0)
		return -1;
	if (q->wl.attn_hp > 0 && !cm_model_has_attention(q->model) &&
	    sq_warn(q, err, "parameter %s picks the attention kernel, and model %s has no attention layer: every "
	    "value costs the same", q->def->hps[q->wl.attn_hp - 1].name, q->def->name) != 0)
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
