/*
 * cli_suggest.c - "did you mean" for the names a user types that the cost
 * model and the query parser refuse without suggesting anything: templates
 * and presets ("bert_base" -> bert-base) and hyperparameters ("hiden" ->
 * hidden). The error stays the one the library set (its path and words);
 * the closest names (common/dn_suggest.c) are added at its end. Devices,
 * space parameters and bindings are suggested where they are resolved
 * (costmodel/device_catalog.c, solver/space_bind.c), commands and options
 * in cli_help.c.
 */
#include "cli.h"
#include "dn_suggest.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Templates and presets: at most this many names are compared (the
 * built-in templates hold fewer than 100 presets together). */
#define MAX_MODEL_NAMES 512

static void
append(struct dn_error *err, const char *near, const char *where)
{
	size_t n = strlen(err->message);

	if (near[0] == '\0' || strstr(err->message, "did you mean") != NULL)
		return;
	dn_fmt(err->message + n, sizeof err->message - n, " (did you mean %s?%s%s)", near, where ? " " : "",
	    where ? where : "");
}

/* A name that extends a known one ("gpt2-small", "resnet50_v1" for gpt2,
 * resnet50): the longest candidate of 3 or more characters that the name
 * starts with, else "". */
static void
longest_prefix(const char *name, const char *const *cands, int n, char *buf, size_t len)
{
	size_t best = 0;

	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		size_t k = strlen(cands[i]);
		if (k >= 3 && k > best && strncasecmp(name, cands[i], k) == 0) {
			best = k;
			dn_fmt(buf, len, "%s", cands[i]);
		}
	}
}

void
cli_suggest_model(struct dn_error *err, const char *name)
{
	const char *names[MAX_MODEL_NAMES];
	char *owned[MAX_MODEL_NAMES];
	char near[256];
	int n = 0, nowned = 0;

	if (name == NULL || err->code != DN_ENOENT)
		return;
	for (const char *const *t = cm_template_names(); *t && n < MAX_MODEL_NAMES; t++) {
		struct cm_model_def *def;
		struct dn_error e2;
		const char *key;
		json_t *v;
		names[n++] = *t;
		memset(&e2, 0, sizeof e2);
		if (cm_def_load_template(*t, &def, &e2) != 0)
			continue;
		json_object_foreach(json_object_get(def->root, "presets"), key, v)
			if (n < MAX_MODEL_NAMES && (owned[nowned] = strdup(key)) != NULL)
				names[n++] = owned[nowned++];
		cm_def_unref(def);
	}
	if (dn_suggest(name, names, n, near, sizeof near) == 0)
		longest_prefix(name, names, n, near, sizeof near);
	append(err, near, "dnnsat templates lists them");
	for (int i = 0; i < nowned; i++)
		free(owned[i]);
}

void
cli_suggest_hparam(struct dn_error *err, const struct cm_model_def *def, const char *name)
{
	char near[256];

	if (def == NULL || err->code != DN_ENOENT || cm_def_find_hp(def, name) >= 0)
		return;
	cm_def_suggest_hp(def, name, near, sizeof near);
	append(err, near, NULL);
}

void
cli_suggest_query(struct dn_error *err, const json_t *req)
{
	json_t *model = json_object_get(req, "model");
	const char *preset = json_string_value(json_object_get(model, "preset"));
	const char *tmpl = json_string_value(json_object_get(model, "template"));
	struct cm_model_def *def = NULL;
	struct dn_error e2;

	if (err->code != DN_ENOENT)
		return;
	if (strncmp(err->path, "$.model", 7) == 0) {
		cli_suggest_model(err, json_is_string(model) ? json_string_value(model) : preset ? preset : tmpl);
		return;
	}
	if (strncmp(err->path, "$.fixed.", 8) != 0)
		return;
	memset(&e2, 0, sizeof e2);
	if (tmpl != NULL && cm_def_load_template(tmpl, &def, &e2) != 0)
		def = NULL;
	else if (tmpl == NULL && preset != NULL && cm_def_load_preset(preset, &def, &e2) != 0)
		def = NULL;
	cli_suggest_hparam(err, def, err->path + 8);
	cm_def_unref(def);
}
