/*
 * model_def.c - loading a model file or template: checks the top level of the
 * format (docs/model-format.md), reads the hyperparameter table and keeps the
 * JSON for the builder. Layers are checked when the model is built.
 *
 * Invariants: a loaded def has unique hyperparameter names that are valid
 * identifiers, a default inside [min, max] for each, distinct categorical
 * values; the JSON root is held (one reference) until the def is freed.
 */
#include "costmodel.h"
#include "dn_datadir.h"
#include "dn_suggest.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_HPARAMS 256
#define MAX_NAME 64

static const char *const top_keys[] = {
	"dnnsat_model", "name", "description", "hyperparameters", "presets",
	"inputs", "defs", "layers", "rules", "$schema", NULL
};
static const char *const hp_keys[] = {
	"type", "default", "min", "max", "values", "description", NULL
};

static int
key_allowed(const char *key, const char *const *keys)
{
	for (; *keys; keys++)
		if (strcmp(key, *keys) == 0)
			return 1;
	return 0;
}

int
cm_ident(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

static void
free_def(struct cm_model_def *def)
{
	for (int i = 0; i < def->nhps; i++) {
		struct cm_hparam *h = &def->hps[i];
		free(h->name);
		free(h->description);
		for (int j = 0; j < h->nvalues; j++)
			free(h->values[j]);
		free(h->values);
	}
	free(def->hps);
	free(def->name);
	free(def->description);
	json_decref(def->root);
	free(def);
}

void
cm_def_ref(struct cm_model_def *def)
{
	def->refs++;
}

void
cm_def_unref(struct cm_model_def *def)
{
	if (def != NULL && --def->refs == 0)
		free_def(def);
}

int
cm_def_find_hp(const struct cm_model_def *def, const char *name)
{
	for (int i = 0; i < def->nhps; i++)
		if (strcmp(def->hps[i].name, name) == 0)
			return i;
	return -1;
}

int
cm_def_suggest_hp(const struct cm_model_def *def, const char *name, char *buf, size_t len)
{
	const char **names = calloc((size_t)def->nhps + 1, sizeof *names);
	int n;

	buf[0] = '\0';
	if (names == NULL)
		return 0;
	for (int i = 0; i < def->nhps; i++)
		names[i] = def->hps[i].name;
	n = dn_suggest(name, names, def->nhps, buf, len);
	free(names);
	return n;
}

static char *
xstrdup(const char *s)
{
	return strdup(s != NULL ? s : "");
}

static int
read_bound(const json_t *v, const char *path, double *out, struct dn_error *err)
{
	if (!json_is_number(v))
		return dn_error_set(err, DN_EINVAL, path, "must be a number");
	*out = json_number_value(v);
	if (!isfinite(*out) || fabs(*out) > 9.0e18)
		return dn_error_set(err, DN_ERANGE, path, "is out of range");
	return 0;
}

static int
read_hparam(const char *name, const json_t *spec, struct cm_hparam *h,
    struct dn_error *err)
{
	char path[320];
	const char *key;
	json_t *v;
	const char *type;

	dn_fmt(path, sizeof path, "$.hyperparameters.%s", name);
	if (strlen(name) > MAX_NAME || !cm_ident(name, strlen(name)))
		return dn_error_set(err, DN_EINVAL, path,
		    "hyperparameter names are identifiers of at most %d letters, digits and '_'", MAX_NAME);
	if (!json_is_object(spec))
		return dn_error_set(err, DN_EINVAL, path, "must be an object with a \"type\"");
	json_object_foreach((json_t *)spec, key, v) {
		if (!key_allowed(key, hp_keys))
			return dn_error_set(err, DN_EINVAL, path, "unknown field \"%s\"", key);
	}
	h->name = xstrdup(name);
	h->description = xstrdup(json_string_value(json_object_get(spec, "description")));
	if (h->name == NULL || h->description == NULL)
		return dn_error_set(err, DN_ENOMEM, path, "out of memory");
	type = json_string_value(json_object_get(spec, "type"));
	if (type == NULL)
		return dn_error_set(err, DN_EINVAL, path, "\"type\" must be \"int\", \"real\" or \"categorical\"");
	if (strcmp(type, "int") == 0)
		h->type = CM_HP_INT;
	else if (strcmp(type, "real") == 0)
		h->type = CM_HP_REAL;
	else if (strcmp(type, "categorical") == 0)
		h->type = CM_HP_CATEGORICAL;
	else
		return dn_error_set(err, DN_EINVAL, path, "unknown type \"%s\" (int, real or categorical)", type);

	v = json_object_get(spec, "default");
	if (h->type == CM_HP_CATEGORICAL) {
		json_t *vals = json_object_get(spec, "values");
		size_t i;
		json_t *x;
		if (!json_is_array(vals) || json_array_size(vals) == 0 || json_array_size(vals) > 4096)
			return dn_error_set(err, DN_EINVAL, path, "a categorical needs \"values\": a list of 1 to 4096 strings");
		h->values = calloc(json_array_size(vals), sizeof *h->values);
		if (h->values == NULL)
			return dn_error_set(err, DN_ENOMEM, path, "out of memory");
		json_array_foreach(vals, i, x) {
			if (!json_is_string(x) || json_string_length(x) == 0 || json_string_length(x) > 128)
				return dn_error_set(err, DN_EINVAL, path, "values[%zu] must be a non-empty string", i);
			for (int j = 0; j < h->nvalues; j++)
				if (strcmp(h->values[j], json_string_value(x)) == 0)
					return dn_error_set(err, DN_EINVAL, path, "value \"%s\" is listed twice", json_string_value(x));
			h->values[h->nvalues] = xstrdup(json_string_value(x));
			if (h->values[h->nvalues] == NULL)
				return dn_error_set(err, DN_ENOMEM, path, "out of memory");
			h->nvalues++;
		}
		if (!json_is_string(v))
			return dn_error_set(err, DN_EINVAL, path, "\"default\" must be one of the values");
		h->dflt.i = -1;
		for (int j = 0; j < h->nvalues; j++)
			if (strcmp(h->values[j], json_string_value(v)) == 0)
				h->dflt.i = j;
		if (h->dflt.i < 0)
			return dn_error_set(err, DN_EINVAL, path, "default \"%s\" is not one of the values", json_string_value(v));
		return 0;
	}
	if (json_object_get(spec, "values") != NULL)
		return dn_error_set(err, DN_EINVAL, path, "\"values\" is only for categorical hyperparameters");
	if (json_object_get(spec, "min") != NULL) {
		h->has_min = 1;
		if (read_bound(json_object_get(spec, "min"), path, &h->min, err) != 0)
			return -1;
	}
	if (json_object_get(spec, "max") != NULL) {
		h->has_max = 1;
		if (read_bound(json_object_get(spec, "max"), path, &h->max, err) != 0)
			return -1;
	}
	if (h->has_min && h->has_max && h->min > h->max)
		return dn_error_set(err, DN_EINVAL, path, "min %g is greater than max %g", h->min, h->max);
	if (h->type == CM_HP_INT) {
		if (!json_is_integer(v))
			return dn_error_set(err, DN_EINVAL, path, "\"default\" must be an integer");
		h->dflt.i = json_integer_value(v);
		if ((h->has_min && (double)h->dflt.i < h->min) || (h->has_max && (double)h->dflt.i > h->max))
			return dn_error_set(err, DN_EINVAL, path, "default %lld is outside [min, max]", (long long)h->dflt.i);
	} else {
		if (!json_is_number(v))
			return dn_error_set(err, DN_EINVAL, path, "\"default\" must be a number");
		h->dflt.r = json_number_value(v);
		if ((h->has_min && h->dflt.r < h->min) || (h->has_max && h->dflt.r > h->max))
			return dn_error_set(err, DN_EINVAL, path, "default %g is outside [min, max]", h->dflt.r);
	}
	return 0;
}

/* "rules": [{"require": "image_size % patch == 0", "message": "..."}], the
 * model's own validity rules (their expressions are parsed when the model
 * is built, model_build.c). */
static int
check_rules(const json_t *rules, struct dn_error *err)
{
	size_t i;
	const json_t *r;
	char path[64];

	if (!json_is_array(rules))
		return dn_error_set(err, DN_EINVAL, "$.rules", "must be a list of rules "
		    "({\"require\": \"image_size %% patch == 0\", \"message\": \"...\"})");
	if (json_array_size(rules) > 256)
		return dn_error_set(err, DN_ERANGE, "$.rules", "more than 256 rules");
	json_array_foreach(rules, i, r) {
		const char *key;
		json_t *v;
		dn_fmt(path, sizeof path, "$.rules[%zu]", i);
		if (!json_is_object(r))
			return dn_error_set(err, DN_EINVAL, path, "a rule must be an object with \"require\"");
		json_object_foreach((json_t *)r, key, v) {
			if (strcmp(key, "require") != 0 && strcmp(key, "message") != 0 && strcmp(key, "comment") != 0)
				return dn_error_set(err, DN_EINVAL, path, "unknown field \"%s\" (a rule has \"require\" "
				    "and \"message\")", key);
		}
		v = json_object_get(r, "require");
		if (!json_is_string(v) || json_string_length(v) == 0)
			return dn_error_set(err, DN_EINVAL, path, "\"require\" must be a condition over the "
			    "hyperparameters (a string such as \"image_size %% patch == 0\")");
		v = json_object_get(r, "message");
		if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 300))
			return dn_error_set(err, DN_EINVAL, path, "\"message\" must be a non-empty string of at most "
			    "300 characters");
	}
	return 0;
}

int
cm_def_load_json(json_t *root, struct cm_model_def **out, struct dn_error *err)
{
	struct cm_model_def *def;
	const char *key;
	json_t *v, *hps;

	*out = NULL;
	if (!json_is_object(root))
		return dn_error_set(err, DN_EINVAL, "$", "a model must be a JSON object");
	json_object_foreach(root, key, v) {
		if (!key_allowed(key, top_keys))
			return dn_error_set(err, DN_EINVAL, "$", "unknown field \"%s\"", key);
	}
	v = json_object_get(root, "dnnsat_model");
	if (!json_is_integer(v) || json_integer_value(v) != 1)
		return dn_error_set(err, DN_EINVAL, "$.dnnsat_model", "must be 1 (the format version)");
	if (!json_is_array(json_object_get(root, "layers")))
		return dn_error_set(err, DN_EINVAL, "$.layers", "a model needs \"layers\": a list");
	if (!json_is_array(json_object_get(root, "inputs")) || json_array_size(json_object_get(root, "inputs")) == 0)
		return dn_error_set(err, DN_EINVAL, "$.inputs", "a model needs \"inputs\": a non-empty list");
	v = json_object_get(root, "defs");
	if (v != NULL && !json_is_object(v))
		return dn_error_set(err, DN_EINVAL, "$.defs", "must be an object of named blocks");
	v = json_object_get(root, "presets");
	if (v != NULL && !json_is_object(v))
		return dn_error_set(err, DN_EINVAL, "$.presets", "must be an object of named presets");
	v = json_object_get(root, "rules");
	if (v != NULL && check_rules(v, err) != 0)
		return -1;
	hps = json_object_get(root, "hyperparameters");
	if (hps != NULL && !json_is_object(hps))
		return dn_error_set(err, DN_EINVAL, "$.hyperparameters", "must be an object");
	if (json_object_size(hps) > MAX_HPARAMS)
		return dn_error_set(err, DN_ERANGE, "$.hyperparameters", "more than %d hyperparameters", MAX_HPARAMS);

	def = calloc(1, sizeof *def);
	if (def == NULL)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	def->refs = 1;
	def->root = json_incref(root);
	def->name = xstrdup(json_string_value(json_object_get(root, "name")));
	def->description = xstrdup(json_string_value(json_object_get(root, "description")));
	def->hps = calloc(json_object_size(hps) + 1, sizeof *def->hps);
	if (def->name == NULL || def->description == NULL || def->hps == NULL) {
		free_def(def);
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	}
	json_object_foreach(hps, key, v) {
		if (read_hparam(key, v, &def->hps[def->nhps], err) != 0) {
			def->nhps++;
			free_def(def);
			return -1;
		}
		def->nhps++;
	}
	/* presets must name known hyperparameters with acceptable values */
	json_object_foreach(json_object_get(root, "presets"), key, v) {
		union expr_val *vals = calloc((size_t)def->nhps + 1, sizeof *vals);
		char path[320];
		int rc;
		if (vals == NULL) {
			free_def(def);
			return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
		}
		dn_fmt(path, sizeof path, "$.presets.%s", key);
		rc = cm_config_from_json(def, v, path, vals, err);
		free(vals);
		if (rc != 0) {
			free_def(def);
			return -1;
		}
	}
	*out = def;
	return 0;
}

/* The model in root, parsed from path (NULL: jerr says why); takes root. */
static int
def_from_parsed(json_t *root, const json_error_t *jerr, const char *path, struct cm_model_def **out,
    struct dn_error *err)
{
	int rc;

	if (root == NULL)
		return dn_error_set(err, DN_EINVAL, "$", "%s: line %d, column %d: %s", path,
		    jerr->line, jerr->column, jerr->text);
	rc = cm_def_load_json(root, out, err);
	json_decref(root);
	return rc;
}

int
cm_def_load_file(const char *path, struct cm_model_def **out, struct dn_error *err)
{
	json_error_t jerr;

	*out = NULL;
	return def_from_parsed(json_load_file(path, JSON_REJECT_DUPLICATES, &jerr), &jerr, path, out, err);
}

static const char *const template_names[] = {
	"mlp", "vgg", "alexnet", "resnet", "mobilenet_v2", "nb201", "lstm_lm",
	"bert", "gpt", "llama", "vit", "r3d", NULL
};

const char *const *
cm_template_names(void)
{
	return template_names;
}

const char *
cm_data_dir(void)
{
	return dn_data_dir(DN_DATA_SCHEMAS);
}

int
cm_def_load_template(const char *name, struct cm_model_def **out, struct dn_error *err)
{
	char path[1024];

	*out = NULL;
	for (const char *const *t = template_names; *t; t++)
		if (strcmp(*t, name) == 0) {
			json_error_t jerr;
			json_t *root;
			FILE *f;

			dn_fmt(path, sizeof path, "%s/templates/%s.json", cm_data_dir(), name);
			/* a built-in name whose file is missing: an installation
			 * problem, said as one (not as a JSON position) */
			if ((f = fopen(path, "r")) == NULL)
				return dn_error_set(err, DN_EINTERNAL, "template",
				    "template \"%s\": cannot read %s: %s (the data directory; DNNSAT_DATA_DIR sets it)",
				    name, path, strerror(errno));
			root = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
			fclose(f);
			return def_from_parsed(root, &jerr, path, out, err);
		}
	return dn_error_set(err, DN_ENOENT, "template", "unknown template \"%s\"", name);
}

int
cm_def_load_preset(const char *preset, struct cm_model_def **out, struct dn_error *err)
{
	struct dn_error first;

	memset(&first, 0, sizeof first);
	for (const char *const *t = template_names; *t; t++) {
		struct cm_model_def *def;
		struct dn_error e2;
		memset(&e2, 0, sizeof e2);
		if (cm_def_load_template(*t, &def, &e2) != 0) {
			if (!dn_error_isset(&first))
				first = e2;
			continue;
		}
		if (json_object_get(json_object_get(def->root, "presets"), preset) != NULL) {
			*out = def;
			return 0;
		}
		cm_def_unref(def);
	}
	*out = NULL;
	/* a template that did not load may hold it: its error, not "no such preset" */
	if (dn_error_isset(&first)) {
		*err = first;
		return -1;
	}
	return dn_error_set(err, DN_ENOENT, "template", "no template or preset named \"%s\"", preset);
}

int
cm_config_defaults(const struct cm_model_def *def, union expr_val *vals)
{
	for (int i = 0; i < def->nhps; i++)
		vals[i] = def->hps[i].dflt;
	return 0;
}

static int
set_value(const struct cm_hparam *h, const json_t *v, const char *path,
    union expr_val *out, struct dn_error *err)
{
	switch (h->type) {
	case CM_HP_INT:
		if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
		    fabs(json_real_value(v)) < 9.0e15) {
			out->i = (int64_t)json_real_value(v);
		} else if (json_is_integer(v)) {
			out->i = json_integer_value(v);
		} else
			return dn_error_set(err, DN_EINVAL, path, "must be an integer");
		if ((h->has_min && (double)out->i < h->min) || (h->has_max && (double)out->i > h->max))
			return dn_error_set(err, DN_ERANGE, path, "%lld is outside the model's range [%g, %g]",
			    (long long)out->i, h->has_min ? h->min : -INFINITY, h->has_max ? h->max : INFINITY);
		return 0;
	case CM_HP_REAL:
		if (!json_is_number(v))
			return dn_error_set(err, DN_EINVAL, path, "must be a number");
		out->r = json_number_value(v);
		if (!isfinite(out->r) || (h->has_min && out->r < h->min) || (h->has_max && out->r > h->max))
			return dn_error_set(err, DN_ERANGE, path, "%g is outside the model's range [%g, %g]",
			    out->r, h->has_min ? h->min : -INFINITY, h->has_max ? h->max : INFINITY);
		return 0;
	case CM_HP_CATEGORICAL:
		if (json_is_string(v)) {
			for (int j = 0; j < h->nvalues; j++)
				if (strcmp(h->values[j], json_string_value(v)) == 0) {
					out->i = j;
					return 0;
				}
			return dn_error_set(err, DN_EINVAL, path, "\"%.100s\" is not one of the values of %s",
			    json_string_value(v), h->name);
		}
		if (json_is_boolean(v) || json_is_number(v)) {
			/* accept true/false/numbers for categoricals spelled that way */
			char buf[64];
			if (json_is_boolean(v))
				dn_fmt(buf, sizeof buf, "%s", json_is_true(v) ? "true" : "false");
			else if (json_is_integer(v))
				dn_fmt(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
			else
				dn_fmt(buf, sizeof buf, "%g", json_real_value(v));
			for (int j = 0; j < h->nvalues; j++)
				if (strcmp(h->values[j], buf) == 0) {
					out->i = j;
					return 0;
				}
			return dn_error_set(err, DN_EINVAL, path, "%s is not one of the values of %s", buf, h->name);
		}
		return dn_error_set(err, DN_EINVAL, path, "must be one of the values of %s", h->name);
	}
	return -1;
}

int
cm_config_from_json(const struct cm_model_def *def, const json_t *obj,
    const char *path, union expr_val *vals, struct dn_error *err)
{
	const char *key;
	json_t *v;
	char p[400];

	if (!json_is_object(obj))
		return dn_error_set(err, DN_EINVAL, path, "must be an object of hyperparameter values");
	json_object_foreach((json_t *)obj, key, v) {
		int i = cm_def_find_hp(def, key);
		dn_fmt(p, sizeof p, "%s.%s", path, key);
		if (i < 0)
			return dn_error_set(err, DN_ENOENT, p, "model \"%s\" has no hyperparameter \"%s\"", def->name, key);
		if (set_value(&def->hps[i], v, p, &vals[i], err) != 0)
			return -1;
	}
	return 0;
}

int
cm_config_apply_preset(const struct cm_model_def *def, const char *preset,
    union expr_val *vals, struct dn_error *err)
{
	json_t *p = json_object_get(json_object_get(def->root, "presets"), preset);
	char path[320];

	if (p == NULL)
		return dn_error_set(err, DN_ENOENT, "preset", "model \"%s\" has no preset \"%s\"", def->name, preset);
	dn_fmt(path, sizeof path, "$.presets.%s", preset);
	return cm_config_from_json(def, p, path, vals, err);
}

int
cm_config_set(const struct cm_model_def *def, const char *name,
    const char *value, union expr_val *vals, struct dn_error *err)
{
	int i = cm_def_find_hp(def, name);
	json_t *v;
	json_error_t jerr;
	int rc;

	if (i < 0)
		return dn_error_set(err, DN_ENOENT, name, "model \"%s\" has no hyperparameter \"%s\"", def->name, name);
	if (def->hps[i].type == CM_HP_CATEGORICAL)
		v = json_string(value);
	else
		v = json_loads(value, JSON_DECODE_ANY, &jerr);
	if (v == NULL)
		return dn_error_set(err, DN_EINVAL, name, "\"%.100s\" is not a number", value);
	rc = set_value(&def->hps[i], v, name, &vals[i], err);
	json_decref(v);
	return rc;
}
