/*
 * api_catalog.c - what a client can name: GET /v1/templates (every built-in
 * model template with its hyperparameters, defaults and presets),
 * GET /v1/templates/{name} (a template, or the template of a preset),
 * GET /v1/devices (the GPU catalog), and the contract itself:
 * GET /openapi.json and GET /schemas/{file} served from the data directory;
 * and the dashboard: GET / and GET /ui/{file} from the web directory.
 *
 * Invariants: the template listing is built once at start (s->templates,
 * read-only afterwards); schema files are read per request, only from
 * cm_data_dir(), and only names made of [A-Za-z0-9_.-/] without "..".
 * Every 200 here changes only with the server's files: an ETag and
 * Cache-Control: no-cache (SRV_CACHE_REVALIDATE), so that a browser or a
 * client keeps it and gets a 304 while it is the same.
 */
#include "srv.h"
#include "dn_datadir.h"
#include "dn_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* {"name", "description", "hyperparameters": [{"name", "type", "default",
 * ...}], "presets": [{"name", "hyperparameters": {hp: value}}]}: the
 * model file's objects keyed by name become lists in declaration order. */
static json_t *
template_json(const char *name, const struct cm_model_def *def)
{
	json_t *hps = json_array(), *presets = json_array(), *v;
	const char *key;

	json_object_foreach(json_object_get(def->root, "hyperparameters"), key, v) {
		json_t *h = json_copy(v);
		json_object_set_new(h, "name", json_string(key));
		json_array_append_new(hps, h);
	}
	json_object_foreach(json_object_get(def->root, "presets"), key, v)
		json_array_append_new(presets, json_pack("{s:s,s:O}", "name", key, "hyperparameters", v));
	return json_pack("{s:s,s:s,s:o,s:o}", "name", name, "description", def->description ? def->description : "",
	    "hyperparameters", hps, "presets", presets);
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
	r->cache_control = SRV_CACHE_REVALIDATE;
}

void
api_template_one(struct srv_request *r)
{
	json_t *list = json_object_get(r->srv->templates, "templates"), *t;
	size_t i;

	json_array_foreach(list, i, t) {
		json_t *p;
		size_t k;
		if (strcmp(json_string_value(json_object_get(t, "name")), r->params[0]) == 0) {
			srv_reply_json(r, 200, json_incref(t));
			r->cache_control = SRV_CACHE_REVALIDATE;
			return;
		}
		json_array_foreach(json_object_get(t, "presets"), k, p)
			if (strcmp(json_string_value(json_object_get(p, "name")), r->params[0]) == 0) {
				json_t *copy = json_copy(t);
				json_object_set_new(copy, "preset", json_string(r->params[0]));
				srv_reply_json(r, 200, copy);
				r->cache_control = SRV_CACHE_REVALIDATE;
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
	r->cache_control = SRV_CACHE_REVALIDATE;
	json_decref(j);
}

/* The dashboard's files: $DNNSAT_WEB_DIR, else the build tree's or the
 * installed web/ (dn_data_dir). */
static const char *
web_dir(void)
{
	return dn_data_dir(DN_DATA_WEB);
}

/* Sends a file of directory `dir`; 404 when absent. */
static void
send_file(struct srv_request *r, const char *dir, const char *rel, const char *ctype)
{
	struct dn_error err;
	char path[1200], *buf;
	size_t n;

	memset(&err, 0, sizeof err);
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	buf = dn_file_read(path, 0, NULL, &n, &err);
	if (buf == NULL && err.code == DN_ENOENT)
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such file: %s", rel);
	else if (buf == NULL)
		srv_reply_problem(r, 500, "internal", "Internal error", NULL, "cannot read %s", rel);
	else {
		srv_reply_owned(r, 200, ctype, buf, n);
		r->cache_control = SRV_CACHE_REVALIDATE;
	}
}

static void
send_data_file(struct srv_request *r, const char *rel, const char *ctype)
{
	send_file(r, cm_data_dir(), rel, ctype);
}

/* 1 when a client-given relative path may be served: [A-Za-z0-9_.-/]
 * only, no "..", not absolute. */
static int
safe_name(const char *name)
{
	if (name[0] == '/' || name[0] == '\0' || strstr(name, "..") != NULL)
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_' ||
		    *p == '-' || *p == '.' || *p == '/'))
			return 0;
	return 1;
}

void
api_dashboard(struct srv_request *r)
{
	send_file(r, web_dir(), "index.html", "text/html; charset=utf-8");
}

void
api_web_file(struct srv_request *r)
{
	static const struct { const char *ext, *type; } types[] = {
		{ ".html", "text/html; charset=utf-8" }, { ".js", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" }, { ".svg", "image/svg+xml" }, { ".png", "image/png" },
		{ ".json", "application/json" }, { ".ico", "image/x-icon" }, { ".webmanifest", "application/manifest+json" } };
	const char *name = r->params[0], *dot = strrchr(name, '.');

	if (!safe_name(name) || dot == NULL) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such file");
		return;
	}
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (strcmp(dot, types[i].ext) == 0) {
			send_file(r, web_dir(), name, types[i].type);
			return;
		}
	srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such file");
}

/* The contract lives at /schemas/openapi.json, where its relative $refs
 * (api/query.schema.json, ...) resolve to files this server serves; the
 * conventional /openapi.json redirects there. */
void
api_openapi(struct srv_request *r)
{
	static const char body[] = "{\"location\":\"/schemas/openapi.json\"}";

	snprintf(r->location, sizeof r->location, "/schemas/openapi.json");
	srv_reply_text(r, 308, "application/json", body, sizeof body - 1);
}

void
api_schema_file(struct srv_request *r)
{
	const char *name = r->params[0];

	if (!safe_name(name) || strlen(name) < 6 || strcmp(name + strlen(name) - 5, ".json") != 0) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no such schema");
		return;
	}
	send_data_file(r, name, strcmp(name, "openapi.json") == 0 ? "application/json" : "application/schema+json");
}
