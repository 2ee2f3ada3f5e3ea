/*
 * fset_json.c - configurations as NNI writes them: {"batch_size": 64,
 * "layer0": {"_name": "Conv", "kernel_size": 3}}, from and to the engine's
 * position vectors. Every active parameter is written, so that a
 * configuration is a complete NNI parameter set: a continuous dim that
 * passes through (the engine never enumerates it) with a drawn value (a
 * sample's) or else its representative value (sp_value_typical); one bound
 * to the model with a value on its grid at which the configuration fits
 * (the largest, fs_real_witness). Both are ignored when read back (a bound
 * one is checked by fs_real_values_from_json).
 */
#include "fset_priv.h"
#include "dn_number.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dim k's value in configuration pos (r: the continuous vars' witness
 * values; drawn: values of the continuous dims that pass through, by dim,
 * or NULL), or NULL when it has none (inactive). */
static json_t *
dim_json(struct fs_engine *e, int k, const int64_t *pos, const double *r, const double *drawn)
{
	const struct sp_dim *d = &e->q->space.dims[k];
	int v = e->dim_var[k];
	int64_t i;

	if (v < 0 && e->dim_cvar[k] >= 0 && r != NULL && !isnan(r[e->dim_cvar[k]]))
		return json_real(r[e->dim_cvar[k]]);
	if (v < 0 && !d->discrete && d->hp < 0)
		return json_real(drawn != NULL ? drawn[k] : sp_value_typical(d));
	if (v < 0 || pos[v] < 0)
		return NULL;
	i = fs_dim_index(&e->vars[v], pos[v]);
	if (d->nested) {
		json_t *o = json_object();
		json_object_set_new(o, "_name", sp_value_json(d, i));
		for (int c = k + 1; c < e->q->space.ndims; c++) {
			const struct sp_dim *cd = &e->q->space.dims[c];
			json_t *cv;
			if (cd->parent != k || cd->parent_option != i)
				continue;
			cv = dim_json(e, c, pos, r, drawn);
			if (cv != NULL)
				json_object_set_new(o, cd->key, cv);
		}
		return o;
	}
	return sp_value_json(d, i);
}

json_t *
fs_to_json(struct fs_engine *e, const int64_t *pos)
{
	return fs_to_json_drawn(e, pos, NULL);
}

json_t *
fs_to_json_drawn(struct fs_engine *e, const int64_t *pos, const double *drawn)
{
	json_t *o = json_object();
	double *r = NULL;

	/* continuous hyperparameters: feasible grid values (the largest, for one) */
	if (e->ncvars > 0 && (r = malloc(sizeof *r * (size_t)e->ncvars)) != NULL)
		(void)fs_real_witness(e, pos, r);
	for (int k = 0; k < e->q->space.ndims; k++) {
		const struct sp_dim *d = &e->q->space.dims[k];
		json_t *v;
		if (d->parent >= 0)
			continue;
		v = dim_json(e, k, pos, r, drawn);
		if (v != NULL)
			json_object_set_new(o, d->key, v);
	}
	free(r);
	return o;
}

/*
 * Whether a number given for dim d is the grid value `got`: equal, or for a
 * q-grid within q * 1e-9 of it, so that a value written with 15 significant
 * digits (1.4 for 28 * 0.05 = 1.4000000000000001) reads back as itself.
 * Grid values lie at least q apart, so no other value is that close.
 */
static int
grid_equal(const struct sp_dim *d, double got, double want)
{
	return got == want ||
	    ((d->type == SP_QUNIFORM || d->type == SP_QLOGUNIFORM) && fabs(got - want) <= d->q * 1e-9);
}

/* Position of the dim value equal to `j` (JSON equality, numbers by value). */
int64_t
fs_position_of(struct fs_engine *e, int v, const json_t *j)
{
	const struct fs_var *x = &e->vars[v];
	const struct sp_dim *d = &e->q->space.dims[x->dim];

	if (d->values == NULL && !json_is_number(j))
		return -1;
	/* the common cases without building candidate values: a number on a
	 * numeric grid, a string among a choice's strings (same equality as the
	 * general loop below: numeric value, or the same text) */
	if (x->vals != NULL && !d->nested && json_is_number(j)) {
		double want = json_number_value(j);
		for (int64_t p = 0; p < x->n; p++)
			if (grid_equal(d, sp_value_num(d, fs_dim_index(x, p)), want))
				return p;
		return -1;
	}
	if (x->vals != NULL && !d->nested && json_is_string(j) && d->type == SP_CHOICE) {
		for (int64_t p = 0; p < x->n; p++) {
			const json_t *c = d->values[fs_dim_index(x, p)];
			if (json_is_string(c) && strcmp(json_string_value(c), json_string_value(j)) == 0)
				return p;
		}
		return -1;
	}
	for (int64_t p = 0; p < x->n && p < 100000000; p++) {
		int64_t i = fs_dim_index(x, p);
		json_t *cand;
		int eq;
		if (x->vals == NULL && json_is_number(j)) {
			/* a huge ascending grid: binary search on the dim's values */
			double want = json_number_value(j);
			int64_t a = 0, b = x->n - 1;
			while (a <= b) {
				int64_t mid = a + (b - a) / 2;
				double got = sp_value_num(d, mid);
				if (got < want - 1e-9 * (fabs(want) + 1))
					a = mid + 1;
				else if (got > want + 1e-9 * (fabs(want) + 1))
					b = mid - 1;
				else
					return mid;
			}
			return -1;
		}
		if (d->nested) {
			const json_t *name = json_is_object(j) ? json_object_get(j, "_name") : j;
			eq = name != NULL && json_equal((json_t *)json_object_get(d->values[i], "_name"), (json_t *)name);
		} else {
			cand = sp_value_json(d, i);
			eq = json_equal(cand, (json_t *)j) ||
			    (json_is_number(cand) && json_is_number(j) &&
			    json_number_value(cand) == json_number_value(j));
			json_decref(cand);
		}
		if (eq)
			return p;
	}
	return -1;
}

/* A continuous parameter's value in a configuration: not enumerated, but
 * still a finite number in the range of its distribution (an lr of 5.0
 * for a loguniform [1e-4, 0.1] is refused, not silently passed through). */
static int
continuous_ok(const struct sp_dim *d, const json_t *j, const char *path, struct dn_error *err)
{
	double x;

	if (!json_is_number(j))
		return dn_error_set(err, DN_EINVAL, path, "must be a number (\"%s\" is %s [%g, %g])", d->name,
		    sp_type_name(d->type), d->lo, d->hi);
	x = json_number_value(j);
	/* lognormal is above 0; qlognormal rounds to multiples of q, so 0 is
	 * one of its values (NNI: round(exp(normal) / q) * q) */
	if (!isfinite(x) || x < d->lo || x > d->hi || (d->type == SP_LOGNORMAL && !(x > 0)))
		return dn_error_set(err, DN_ERANGE, path, "%g is outside the range of \"%s\": %s [%g, %g]%s", x,
		    d->name, sp_type_name(d->type), d->lo, d->hi, d->type == SP_LOGNORMAL ? ", above 0" : "");
	return 0;
}

/* A key of option i's object (the chosen option of nested dim k) that
 * is neither "_name" nor one of the option's parameters: -1 with err (a
 * trial's parameters that are not in the space get no verdict about
 * another configuration). */
static int
unknown_in_option(const struct fs_engine *e, int k, int64_t i, const json_t *j, const char *path,
    struct dn_error *err)
{
	const char *key;
	json_t *val;

	json_object_foreach((json_t *)j, key, val) {
		int found = strcmp(key, "_name") == 0;
		for (int c = k + 1; c < e->q->space.ndims && !found; c++) {
			const struct sp_dim *cd = &e->q->space.dims[c];
			found = cd->parent == k && cd->parent_option == i && strcmp(cd->key, key) == 0;
		}
		if (!found) {
			char kp[512];
			snprintf(kp, sizeof kp, "%s.%.64s", path, key);
			return dn_error_set(err, DN_ENOENT, kp, "option \"%.64s\" of \"%s\" has no parameter \"%.64s\"",
			    json_string_value(json_object_get(e->q->space.dims[k].values[i], "_name")),
			    e->q->space.dims[k].name, key);
		}
	}
	return 0;
}

static int
dim_from_json(struct fs_engine *e, int k, const json_t *j, const char *path, int64_t *pos,
    struct dn_error *err)
{
	const struct sp_dim *d = &e->q->space.dims[k];
	int v = e->dim_var[k];
	int64_t p, i;

	if (v < 0)
		return 0;       /* continuous: not part of the position vector */
	p = fs_position_of(e, v, j);
	if (p < 0) {
		char *s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
		dn_error_set(err, DN_EINVAL, path, "%.80s is not a value of the space's \"%s\"", s ? s : "?", d->name);
		free(s);
		return -1;
	}
	pos[v] = p;
	i = fs_dim_index(&e->vars[v], p);
	if (d->nested) {
		for (int c = k + 1; c < e->q->space.ndims; c++) {
			const struct sp_dim *cd = &e->q->space.dims[c];
			const json_t *cj;
			char cp[512];
			if (cd->parent != k || cd->parent_option != i)
				continue;
			snprintf(cp, sizeof cp, "%s.%s", path, cd->key);
			cj = json_is_object(j) ? json_object_get(j, cd->key) : NULL;
			if (!cd->discrete) {
				if (cj != NULL && continuous_ok(cd, cj, cp, err) != 0)
					return -1;
				continue;
			}
			if (cj == NULL)
				return dn_error_set(err, DN_EINVAL, cp, "missing (option \"%s\" needs it)",
				    json_string_value(json_object_get(d->values[i], "_name")));
			if (dim_from_json(e, c, cj, cp, pos, err) != 0)
				return -1;
		}
		if (json_is_object(j) && unknown_in_option(e, k, i, j, path, err) != 0)
			return -1;
	}
	return 0;
}

int
fs_from_json(struct fs_engine *e, const json_t *obj, int64_t *pos, struct dn_error *err)
{
	const char *key;
	json_t *val;
	int named = 0;

	if (!json_is_object(obj))
		return dn_error_set(err, DN_EINVAL, "$.configuration", "must be an object of parameter values");
	for (int v = 0; v < e->nvars; v++)
		pos[v] = -1;
	/* unknown names: only looked for when the object has more keys than
	 * the space's top-level parameters it names (the rare, failing case) */
	for (int k = 0; k < e->q->space.ndims; k++)
		if (e->q->space.dims[k].parent < 0 && json_object_get(obj, e->q->space.dims[k].key) != NULL)
			named++;
	if ((size_t)named != json_object_size(obj))
		json_object_foreach((json_t *)obj, key, val) {
			int found = 0;
			for (int k = 0; k < e->q->space.ndims && !found; k++)
				found = e->q->space.dims[k].parent < 0 && strcmp(e->q->space.dims[k].key, key) == 0;
			if (!found)
				return dn_error_set(err, DN_ENOENT, "$.configuration", "the space has no parameter \"%.64s\"",
				    key);
		}
	for (int k = 0; k < e->q->space.ndims; k++) {
		const struct sp_dim *d = &e->q->space.dims[k];
		const json_t *j;
		char path[512];
		size_t n;
		if (d->parent >= 0)
			continue;
		j = json_object_get(obj, d->key);
		if (!d->discrete && j == NULL)
			continue;       /* a continuous parameter may be left out */
		/* a memcpy, not snprintf: this runs for every dim of every /check */
		n = strlen(d->key);
		if (n > sizeof path - 17)
			n = sizeof path - 17;
		memcpy(path, "$.configuration.", 16);
		memcpy(path + 16, d->key, n);
		path[16 + n] = '\0';
		if (!d->discrete) {
			if (continuous_ok(d, j, path, err) != 0)
				return -1;
			continue;
		}
		if (j == NULL)
			return dn_error_set(err, DN_EINVAL, path, "missing");
		if (dim_from_json(e, k, j, path, pos, err) != 0)
			return -1;
	}
	return 0;
}

int
fs_text_number(const char *text, int64_t *i, double *d)
{
	char *end;
	long long x;

	if (text == NULL || text[0] == '\0' || text[0] == '+')
		return 0;
	/* plain digits (what clients send), as strtoll reads them */
	{
		int64_t y = 0;
		int k = 0;
		while (k < 18 && text[k] >= '0' && text[k] <= '9')
			y = y * 10 + (text[k++] - '0');
		if (text[k] == '\0') {
			*i = y;
			return 1;
		}
	}
	/* decimal only: no hexadecimal, inf, nan, spaces or out-of-range values */
	if (dn_decimal_all(text, d) != 0)
		return 0;
	errno = 0;
	x = strtoll(text, &end, 10);
	if (*end == '\0' && errno == 0) {
		*i = x;
		return 1;
	}
	return 2;
}

json_t *
fs_text_value(const char *text)
{
	int64_t i;
	double d;

	if (text == NULL)
		return json_null();
	switch (fs_text_number(text, &i, &d)) {
	case 1:
		return json_integer(i);
	case 2:
		return json_real(d);
	default:
		break;
	}
	if (text[0] == '{' || text[0] == '[') {
		json_t *j = json_loads(text, JSON_DECODE_ANY, NULL);
		if (j != NULL)
			return j;
	}
	return json_string(text);
}

/* FNV-1a of a name: the index of top-level dims by name. */
static uint32_t
name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s != '\0')
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

int
fs_args_index_build(struct fs_engine *e)
{
	const struct sp_space *s = &e->q->space;
	uint32_t size = 8;

	while (size < 2 * (uint32_t)s->ndims + 2)
		size *= 2;
	int nkeys = 0;

	e->arg_slot = malloc(sizeof *e->arg_slot * size);
	e->arg_keys = calloc((size_t)s->ndims + 1, sizeof *e->arg_keys);
	e->var_num = calloc((size_t)e->nvars + 1, sizeof *e->var_num);
	if (e->arg_slot == NULL || e->arg_keys == NULL || e->var_num == NULL)
		return -1;
	e->arg_mask = size - 1;
	e->arg_plain = 1;
	for (uint32_t i = 0; i < size; i++)
		e->arg_slot[i] = -1;
	for (int k = 0; k < s->ndims; k++) {
		struct fs_arg_key *ak = &e->arg_keys[nkeys];
		uint32_t h;
		if (s->dims[k].parent >= 0) {
			e->arg_plain = 0;       /* nested choices: the JSON reading */
			continue;
		}
		ak->hash = name_hash(s->dims[k].key);
		ak->key = s->dims[k].key;
		ak->var = s->dims[k].discrete ? e->dim_var[k] : -1;
		ak->dim = k;
		if (s->dims[k].discrete) {
			e->arg_required++;
			if (e->dim_var[k] < 0)
				e->arg_plain = 0;
		}
		for (h = ak->hash & e->arg_mask; e->arg_slot[h] >= 0; h = (h + 1) & e->arg_mask)
			;
		e->arg_slot[h] = nkeys++;
	}
	/* explicit grids of numbers: their values as the text's number compares */
	for (int v = 0; v < e->nvars; v++) {
		const struct fs_var *x = &e->vars[v];
		const struct sp_dim *d = &s->dims[x->dim];
		if (x->vals == NULL || d->nested)
			continue;
		if ((e->var_num[v] = malloc(sizeof *e->var_num[v] * ((size_t)x->n + 1))) == NULL)
			return -1;
		for (int64_t p = 0; p < x->n; p++)
			e->var_num[v][p] = sp_value_num(d, fs_dim_index(x, p));
	}
	return 0;
}

void
fs_args_index_free(struct fs_engine *e)
{
	for (int v = 0; e->var_num != NULL && v < e->nvars; v++)
		free(e->var_num[v]);
	free(e->var_num);
	free(e->arg_slot);
	free(e->arg_keys);
	e->var_num = NULL;
	e->arg_slot = NULL;
	e->arg_keys = NULL;
}

/* The top-level space parameter named name, or NULL. */
json_t *
fs_arg_value(const struct fs_engine *e, const char *name, const char *text)
{
	int k = name != NULL && text != NULL ? sp_dim_named(&e->q->space, name) : -1;
	const struct sp_dim *d = k >= 0 ? &e->q->space.dims[k] : NULL;
	json_t *lit;
	int listed = 0, as_text = 0;

	if (d == NULL || d->parent >= 0 || d->type != SP_CHOICE || d->nested)
		return fs_text_value(text);
	lit = strcmp(text, "true") == 0 ? json_true() : strcmp(text, "false") == 0 ? json_false() :
	    strcmp(text, "null") == 0 ? json_null() : NULL;
	if (lit == NULL)
		return fs_text_value(text);
	for (int64_t i = 0; i < d->nvalues; i++) {
		listed |= json_equal(d->values[i], lit);
		as_text |= json_is_string(d->values[i]) && strcmp(json_string_value(d->values[i]), text) == 0;
	}
	if (listed && !as_text)
		return lit;
	json_decref(lit);
	return fs_text_value(text);
}

static const struct fs_arg_key *
arg_named(const struct fs_engine *e, const char *name)
{
	uint32_t h = name_hash(name);

	for (uint32_t i = h & e->arg_mask; e->arg_slot[i] >= 0; i = (i + 1) & e->arg_mask) {
		const struct fs_arg_key *ak = &e->arg_keys[e->arg_slot[i]];
		if (ak->hash == h && strcmp(ak->key, name) == 0)
			return ak;
	}
	return NULL;
}

/* Position of a value given as text on var v's grid, by the same equality
 * as fs_position_of's common cases (a number on a numeric grid, a string
 * among a choice's strings); -1 when not found or not such a case. */
static int64_t
position_of_text(const struct fs_engine *e, int v, const char *text)
{
	const struct fs_var *x = &e->vars[v];
	const struct sp_dim *d = &e->q->space.dims[x->dim];
	const double *num = e->var_num[v];
	int64_t i;
	double want;
	int kind;

	if (num == NULL)
		return -1;
	kind = fs_text_number(text, &i, &want);
	if (kind == 1)
		want = (double)i;
	if (kind != 0) {
		for (int64_t p = 0; p < x->n; p++)
			if (grid_equal(d, num[p], want))
				return p;
		return -1;
	}
	if (text == NULL || text[0] == '{' || text[0] == '[' || d->type != SP_CHOICE)
		return -1;
	for (int64_t p = 0; p < x->n; p++) {
		const json_t *c = d->values[fs_dim_index(x, p)];
		if (json_is_string(c) && strcmp(json_string_value(c), text) == 0)
			return p;
	}
	return -1;
}

int
fs_from_args(const struct fs_engine *e, const char *const *names, const char *const *values, int n,
    int64_t *pos)
{
	int given = 0;

	if (e->ncvars > 0 || !e->arg_plain)
		return 1;
	for (int v = 0; v < e->nvars; v++)
		pos[v] = -1;
	for (int a = 0; a < n; a++) {
		const struct fs_arg_key *ak = arg_named(e, names[a]);
		if (ak == NULL || values[a] == NULL)
			return 1;
		if (ak->var < 0) {
			/* passes through: a plain number in its range, else the JSON
			 * form says what is wrong */
			const struct sp_dim *d = &e->q->space.dims[ak->dim];
			double x;
			if (dn_decimal_all(values[a], &x) != 0 || x < d->lo || x > d->hi ||
			    ((d->type == SP_LOGNORMAL || d->type == SP_QLOGNORMAL) && !(x > 0)))
				return 1;
			continue;
		}
		if (pos[ak->var] >= 0)
			return 1;
		pos[ak->var] = position_of_text(e, ak->var, values[a]);
		if (pos[ak->var] < 0)
			return 1;
		given++;
	}
	/* every top-level discrete parameter given (each once, so counting does) */
	return given == e->arg_required ? 0 : 1;
}

/* Whether a choice lists null or a boolean: values no text stands for. */
static int
lists_non_text(const struct sp_dim *d)
{
	for (int64_t i = 0; d->type == SP_CHOICE && !d->nested && i < d->nvalues; i++)
		if (json_is_null(d->values[i]) || json_is_boolean(d->values[i]))
			return 1;
	return 0;
}

int
fs_args_readable(struct fs_engine *e, const char *const *names, const char *const *values, int n,
    struct dn_error *err)
{
	for (int a = 0; a < n; a++) {
		int k = sp_dim_named(&e->q->space, names[a]);
		json_t *j;
		int64_t p;
		char path[512];
		if (k < 0 || e->q->space.dims[k].parent >= 0 || e->dim_var[k] < 0 ||
		    !lists_non_text(&e->q->space.dims[k]))
			continue;
		j = fs_arg_value(e, names[a], values[a]);
		p = j != NULL ? fs_position_of(e, e->dim_var[k], j) : 0;
		json_decref(j);
		if (p >= 0)
			continue;
		snprintf(path, sizeof path, "$.config.%s", names[a]);
		return dn_error_set(err, DN_EINVAL, path,
		    "\"%.80s\" is not a value of the space's \"%s\"; a query string carries text (numbers and "
		    "JSON objects and lists are read as such, true, false and null where the choice lists them and "
		    "not the same text as a string, anything else as a string): POST the configuration as JSON "
		    "({\"config\": {...}})", values[a] != NULL ? values[a] : "", names[a]);
	}
	return 0;
}

/* The JSON value of space dim k in a configuration object (nested dims
 * inside their option's object), or NULL. */
static const json_t *
dim_value_in(const struct fs_engine *e, int k, const json_t *obj)
{
	const struct sp_dim *d = &e->q->space.dims[k];
	const json_t *outer = d->parent < 0 ? obj : dim_value_in(e, d->parent, obj);

	return json_is_object(outer) ? json_object_get(outer, d->key) : NULL;
}

int
fs_real_values_from_json(const struct fs_engine *e, const json_t *obj, const int64_t *pos,
    union expr_val *config, struct dn_error *err)
{
	for (int c = 0; c < e->ncvars; c++) {
		const struct fs_cvar *cv = &e->cvars[c];
		const struct sp_dim *d = &e->q->space.dims[cv->dim];
		const json_t *j;
		if (cv->parent >= 0 && pos[cv->parent] != cv->active_pos)
			continue;       /* its option is not chosen */
		j = dim_value_in(e, cv->dim, obj);
		if (!json_is_number(j))
			return dn_error_set(err, DN_EINVAL, "$.configuration", "\"%s\" needs a number (a value from "
			    "%.15g to %.15g)", d->name, cv->L, cv->H);
		if (json_number_value(j) < cv->L || json_number_value(j) > cv->H)
			return dn_error_set(err, DN_EINVAL, "$.configuration", "%.15g is outside the range of \"%s\" "
			    "(%.15g to %.15g)", json_number_value(j), d->name, cv->L, cv->H);
		config[cv->hp].r = json_number_value(j);
	}
	return 0;
}

int
fs_var_named(const struct fs_engine *e, const char *name)
{
	int k = sp_dim_named(&e->q->space, name);

	return k < 0 ? -1 : e->dim_var[k];
}

/* ---- the user's order (fs_space_in_order, fs_config_in_order) ---- */

/* The option of an NNI choice parameter whose "_name" is `name`, or NULL. */
static const json_t *
find_option(const json_t *param, const char *name)
{
	size_t i;
	const json_t *opt;

	if (name == NULL)
		return NULL;
	json_array_foreach(json_object_get(param, "_value"), i, opt) {
		const char *n = json_string_value(json_object_get(opt, "_name"));
		if (n != NULL && strcmp(n, name) == 0)
			return opt;
	}
	return NULL;
}

json_t *
fs_space_in_order(const json_t *reduced, const json_t *space)
{
	json_t *out, *v;
	const char *key;

	if (!json_is_object(reduced) || !json_is_object(space))
		return json_incref((json_t *)reduced);
	out = json_object();
	json_object_foreach((json_t *)space, key, v) {
		json_t *mine = json_object_get(reduced, key);
		if (mine == NULL)
			continue;
		if (json_is_object(mine)) {
			json_object_set_new(out, key, fs_space_in_order(mine, v));
		} else if (strcmp(key, "_value") == 0 && json_is_array(mine)) {
			json_t *list = json_array(), *opt;
			size_t i;
			json_array_foreach(mine, i, opt) {
				const json_t *like = find_option(space, json_string_value(json_object_get(opt, "_name")));
				json_array_append_new(list, like ? fs_space_in_order(opt, like) : json_incref(opt));
			}
			json_object_set_new(out, key, list);
		} else
			json_object_set(out, key, mine);
	}
	json_object_foreach((json_t *)reduced, key, v)
		if (json_object_get(out, key) == NULL)
			json_object_set(out, key, v);
	return out;
}

json_t *
fs_config_in_order(const json_t *config, const json_t *space)
{
	json_t *out, *v;
	const char *key;

	if (!json_is_object(config) || !json_is_object(space))
		return json_incref((json_t *)config);
	out = json_object();
	json_object_foreach((json_t *)space, key, v) {
		json_t *mine = json_object_get(config, key);
		const json_t *like;
		if (mine == NULL)
			continue;
		like = json_is_object(mine) ? find_option(v, json_string_value(json_object_get(mine, "_name"))) : NULL;
		json_object_set_new(out, key, like ? fs_config_in_order(mine, like) : json_incref(mine));
	}
	json_object_foreach((json_t *)config, key, v)
		if (json_object_get(out, key) == NULL)
			json_object_set(out, key, v);
	return out;
}
