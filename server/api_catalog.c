/*
 * api_catalog.c - what a client can name: GET /v1/templates (every built-in
 * model template with its hyperparameters, defaults and presets),
 * GET /v1/templates/{name} (a template, or the template of a preset),
 * GET /v1/devices (the GPU catalog), and the contract itself:
 * GET /openapi.json and GET /schemas/{file} served from the data directory.
 *
 * Invariants: the template listing is built once at start (s->templates,
 * read-only afterwards); schema files are read per request, only from
 * cm_data_dir(), and only names made of [A-Za-z0-9_.-/] without "..".
 */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *
template_json(const char *name, const struct cm_model_def *def)
{
	json_t *presets = json_object_get(def->root, "presets");

	return json_pack("{s:s,s:s,s:O,s:O}", "name", name, "description", def->description ? def->description : "",
	    "hyperparameters", json_object_get(def->root, "hyperparameters"),
	    "presets", presets ? presets : json_object());
}

int
api_templates_load(struct srv *s, struct dn_error *err)
{
	json_t *all = json_array();

	for (const char *const *t = cm_template_names(); *t; t++) {
		struct cm_model_def *def;
		if (cm_def_load_template(*t, &def, err) != 0) {
			json_decref(all);
			return -1;
		}
		json_array_append_new(all, template_json(*t, def));
		cm_def_unref(def);
	}
	s->templates = json_pack("{s:o}", "templates", all);
	return s->templates ? 0 : dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
}

void
api_templates(struct srv_request *r)
{
	srv_reply_json(r, 200, json_incref(r->srv->templates));
}

void
api_template_one(struct srv_request *r)
{
	json_t *list = json_object_get(r->srv->templates, "templates"), *t;
	size_t i;

	json_array_foreach(list, i, t) {
		json_t *presets = json_object_get(t, "presets");
		if (strcmp(json_string_value(json_object_get(t, "name")), r->params[0]) == 0) {
			srv_reply_json(r, 200, json_incref(t));
			return;
		}
		if (json_object_get(presets, r->params[0]) != NULL) {
			json_t *copy = json_copy(t);
			json_object_set_new(copy, "preset", json_string(r->params[0]));
			srv_reply_json(r, 200, copy);
			return;
		}
	}
	srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no template or preset \"%s\" (see /v1/templates)",
	    r->params[0]);
}

void
api_devices(struct srv_request *r)
{
	char path[1024];
	json_t *j;

	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	j = json_load_file(path, 0, NULL);
	if (j == NULL) {
		srv_reply_problem(r, 500, "internal", "Internal error", NULL, "the device catalog cannot be read");
		return;
	}
	srv_reply_json(r, 200, json_pack("{s:O}", "devices", json_object_get(j, "devices")));
	json_decref(j);
}

/* Sends a file of the data directory; 404 when absent. */
static void
send_data_file(struct srv_request *r, const char *rel, const char *ctype)
{
	char path[1200];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof path, "%s/%s", cm_data_dir(), rel);
	f = fopen(path, "rb");
	if (f == NULL) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such file: %s", rel);
		return;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
	    (buf = malloc((size_t)n + 1)) == NULL) {
		fclose(f);
		srv_reply_problem(r, 500, "internal", "Internal error", NULL, "cannot read %s", rel);
		return;
	}
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		srv_reply_problem(r, 500, "internal", "Internal error", NULL, "cannot read %s", rel);
		return;
	}
	fclose(f);
	srv_reply_text(r, 200, ctype, buf, (size_t)n);
	free(buf);
}

void
api_openapi(struct srv_request *r)
{
	send_data_file(r, "openapi.json", "application/json");
}

void
api_schema_file(struct srv_request *r)
{
	const char *name = r->params[0];

	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		    *p == '-' || *p == '.' || *p == '/')) {
			srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such schema");
			return;
		}
	if (strstr(name, "..") != NULL || name[0] == '/' || strlen(name) < 6 ||
	    strcmp(name + strlen(name) - 5, ".json") != 0) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such schema");
		return;
	}
	send_data_file(r, name, "application/schema+json");
}
