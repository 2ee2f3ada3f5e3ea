/*
 * api_models.c - models uploaded to the service: POST /v1/models takes an
 * ONNX file (imported by import/onnx_import.h, the importer of `dnnsat
 * import`) or a JSON model (docs/model-format.md), validates it the way a
 * query's inline model is loaded, and stores it; GET /v1/models/{id} reads
 * it back; api_models_resolve turns a query's "model": {"id": ...} into the
 * stored model.
 *
 * Ids: 64 hex digits, the SHA-256 (srv_digest.h) of the model's canonical
 * text (keys sorted, compact, reals to 17 digits), nothing else hashed:
 * `sha256sum` of that text gives the id. Not truncated: two different
 * models would need a SHA-256 collision to share an id, so an id names one
 * model on every replica and after every restart, and the same model
 * uploaded again (the same ONNX file with the same options, or the "model"
 * that GET returns) gets the same id: 200 with the stored answer instead of
 * 201. Ids of earlier versions (32 hex digits, srv_content_hash salted
 * "dnnsat-model", not cryptographic) are still read: GET and queries serve
 * a model stored under one, checked against that hash; nothing is stored
 * under one any more, and uploading the model again stores it under its
 * SHA-256 id (the old entry stays until evicted or deleted).
 *
 * Storage: the result cache (cache.h), in the reductions' table under keys
 * "model:<id>" (reduction keys are bare hex digits: the namespaces never
 * meet, and no migration is needed). The entry's request is the model's
 * canonical text, its result the metadata POST answers ("id", "name",
 * "source", "hyperparameters", "params", "warnings"), final. cache.c's
 * checksum covers both (a row that fails it is deleted and read as a miss);
 * on top of it every read hashes the stored text again, and a model that
 * does not hash to its id is never served. With the in-memory cache a model
 * is evicted like any entry (least recently used first): its id then
 * answers 404 (GET) or 422 (a query), saying to upload it again.
 *
 * Queries: api_models_resolve runs on the HTTP thread before the handler of
 * every route that takes a query (SRV_R_QUERY) and puts the stored model
 * object in place of {"id"}. The solver never sees ids: the query with an
 * id IS the query with the model inline (the same canonical text, the same
 * reduction id, the same cache entry), and a stored reduction's request is
 * self-contained, so it outlives the model's entry.
 *
 * Time: receiving the body is bounded by --request-timeout (srv_guard.c),
 * its size by --max-model-bytes (ONNX) or --max-body (JSON) (srv_http.c);
 * the import and the validation run on a solver worker under the request's
 * deadline (srv_job.c), which the importer checks every 64 nodes and the
 * model build in its own loops. The import reads the initializers' shapes,
 * not their bytes (only small constants that shapes are computed from), and
 * never opens files: external data is neither needed nor looked for.
 */
#include "answer.h"
#include "onnx_import.h"
#include "srv_digest.h"
#include "srv_registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEGACY_SALT "dnnsat-model"   /* the 32-digit ids before SHA-256 */
#define LEGACY_ID_LEN 32
#define MODEL_ID_LEN 64
#define KEY_LEN 80
#define MODEL_KEY_PREFIX "model:"
#define MAX_DIMS 32             /* dim= renames, as `dnnsat import --dim` */
#define MAX_WARNINGS 64         /* importer warnings kept in the answer */
#define IMPORT_MEMORY ((size_t)256 << 20)       /* the importer's arena */

/* MODEL_ID_LEN for an id (64 lowercase hex digits), LEGACY_ID_LEN for an
 * id of an earlier version (32), else 0. */
static size_t
model_id_len(const char *s)
{
	size_t n = 0;

	for (; s[n] != '\0'; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == MODEL_ID_LEN || n == LEGACY_ID_LEN ? n : 0;
}

static void
model_key(const char *id, char key[KEY_LEN])
{
	snprintf(key, KEY_LEN, MODEL_KEY_PREFIX "%s", id);
}

/* The id the model text `text` has: its SHA-256; with `legacy`, the
 * 32-digit hash earlier versions stored it under. */
static void
model_id(const char *text, int legacy, char id[SRV_SHA256_HEX])
{
	if (legacy)
		srv_content_hash(text, LEGACY_SALT, id);
	else
		srv_sha256_hex(text, strlen(text), id);
}

/* The stored model `id` (id checked by the caller): CACHE_HIT with *ce
 * filled (request: the model's text, result: its metadata), CACHE_MISS, or
 * CACHE_DOWN. An entry whose text does not hash to `id` (or that is not
 * final) is logged, deleted and a miss. */
static int
model_load(struct srv *s, const char *id, struct cache_entry *ce)
{
	char key[KEY_LEN], own[SRV_SHA256_HEX];
	int hit;

	model_key(id, key);
	hit = cache_get_result(s->cache, key, ce);
	if (hit != CACHE_HIT)
		return hit;
	model_id(ce->request, model_id_len(id) == LEGACY_ID_LEN, own);
	if (ce->final && strcmp(own, id) == 0)
		return CACHE_HIT;
	srv_log("model %s: the stored model does not hash to its id: deleted, never served", id);
	cache_entry_clear(ce);
	cache_delete(s->cache, key);
	return CACHE_MISS;
}

/* Why an id is not found, for both 404 and 422. */
static const char *
missing_hint(struct srv *s)
{
	char detail[8];

	if (strcmp(cache_state(s->cache, 0, detail, sizeof detail), "memory") == 0)
		return "it was never uploaded to this server, or its in-memory cache evicted it (models kept in "
		    "memory are lost when space runs out and at restart; run with --database-url to keep them): "
		    "upload it again with POST /v1/models";
	return "it was never uploaded (upload it with POST /v1/models)";
}

int
api_models_resolve(struct srv_request *r)
{
	json_t *m = json_object_get(r->json, "model"), *idv, *model;
	struct cache_entry ce;
	const char *id;
	char clean[80];
	int hit;

	if (!json_is_object(m) || (idv = json_object_get(m, "id")) == NULL)
		return 0;
	if (json_object_size(m) != 1) {
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$.model",
		    "$.model: a model given by \"id\" has no other field");
		return -1;
	}
	id = json_string_value(idv);
	if (id == NULL || model_id_len(id) == 0) {
		srv_reply_problem(r, 422, "invalid-field", "Invalid field", "$.model.id",
		    "$.model.id: must be a model id (64 lowercase hex digits) that POST /v1/models answered");
		return -1;
	}
	memset(&ce, 0, sizeof ce);
	hit = model_load(r->srv, id, &ce);
	if (hit == CACHE_DOWN) {
		srv_reply_problem(r, 503, "database-down", "Database unavailable", "$.model.id",
		    "model %s cannot be read: the database is down", id);
		return -1;
	}
	if (hit == CACHE_MISS) {
		srv_text_clean(id, clean, sizeof clean);
		srv_reply_problem(r, 422, "unknown-name", "Unknown name", "$.model.id", "$.model.id: no model %s: %s",
		    clean, missing_hint(r->srv));
		return -1;
	}
	model = json_loads(ce.request, 0, NULL);
	cache_entry_clear(&ce);
	if (model == NULL) {
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", "$.model.id", "out of memory");
		return -1;
	}
	json_object_set_new(r->json, "model", model);
	return 0;
}

void
api_models_get(struct srv_request *r)
{
	struct cache_entry ce;
	const char *id = r->params[0];
	char *text;
	size_t n, m;
	int hit;

	if (model_id_len(id) == 0) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no model %.80s (model ids are 64 lowercase "
		    "hex digits)", id);
		return;
	}
	memset(&ce, 0, sizeof ce);
	hit = model_load(r->srv, id, &ce);
	if (hit == CACHE_DOWN) {
		srv_reply_problem(r, 503, "database-down", "Database unavailable", NULL,
		    "model %s cannot be read: the database is down", id);
		return;
	}
	if (hit == CACHE_MISS) {
		srv_reply_problem(r, 404, "not-found", "Not found", NULL, "no model %s: %s", id, missing_hint(r->srv));
		return;
	}
	/* the metadata with "model" spliced in before its closing brace: the
	 * stored texts as they are, no parse */
	n = strlen(ce.result);
	m = strlen(ce.request);
	while (n > 0 && ce.result[n - 1] != '}')
		n--;
	if (n < 2 || (text = malloc(n + m + 16)) == NULL) {
		cache_entry_clear(&ce);
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "out of memory");
		return;
	}
	memcpy(text, ce.result, n - 1);
	snprintf(text + n - 1, m + 16, ",\"model\":%s}", ce.request);
	cache_entry_clear(&ce);
	srv_reply_owned(r, 200, "application/json", text, strlen(text));
	r->cache_control = SRV_CACHE_REVALIDATE;        /* a hash of the body: exact */
}

/* ---- POST /v1/models ---- */

struct upload {
	json_t *warnings;
	const char *renames[MAX_DIMS + 1];
	char *owned[MAX_DIMS];
	int nren;
	const char *name;
	int unknown_elementwise;
	const char *bad;                /* the parameter at fault */
	char why[256];
};

static void
upload_warn(void *ctx, const char *msg)
{
	struct upload *u = ctx;

	if (json_array_size(u->warnings) < MAX_WARNINGS)
		json_array_append_new(u->warnings, json_string(msg));
	else if (json_array_size(u->warnings) == MAX_WARNINGS)
		json_array_append_new(u->warnings, json_string("more warnings left out"));
}

/* A hyperparameter name: a letter or _, then letters, digits, _. */
static int
is_name(const char *s)
{
	if (*s == '\0' || (*s >= '0' && *s <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/* One "dim" value, FROM:TO (or FROM=TO, as the CLI's --dim), kept as the
 * importer's "FROM=TO". 0, or -1 with u->why. */
static int
add_dim(struct upload *u, const char *v)
{
	const char *sep = strpbrk(v, ":=");
	char *pair;

	if (sep == NULL || sep == v || !is_name(sep + 1)) {
		snprintf(u->why, sizeof u->why, "dim: \"%.48s\" is not FROM:TO (FROM a symbolic dimension of the ONNX "
		    "graph, TO a hyperparameter name: letters, digits, _)", v);
		return -1;
	}
	if (u->nren == MAX_DIMS) {
		snprintf(u->why, sizeof u->why, "dim: more than %d renames", MAX_DIMS);
		return -1;
	}
	if ((pair = strdup(v)) == NULL) {
		snprintf(u->why, sizeof u->why, "out of memory");
		return -1;
	}
	pair[sep - v] = '=';
	u->owned[u->nren] = pair;
	u->renames[u->nren++] = pair;
	return 0;
}

static enum MHD_Result
upload_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct upload *u = cls;

	(void)kind;
	if (u->bad != NULL || key[0] == '\0')
		return MHD_YES;
	if (value == NULL)
		value = "";
	if (strcmp(key, "dim") == 0) {
		if (add_dim(u, value) != 0)
			u->bad = "dim";
	} else if (strcmp(key, "name") == 0) {
		if (value[0] == '\0' || strlen(value) > 128) {
			u->bad = "name";
			snprintf(u->why, sizeof u->why, "name: the model's name has 1 to 128 characters");
		}
		u->name = value;
	} else if (strcmp(key, "unknown") == 0) {
		if (strcmp(value, "elementwise") == 0)
			u->unknown_elementwise = 1;
		else if (strcmp(value, "error") != 0) {
			u->bad = "unknown";
			snprintf(u->why, sizeof u->why, "unknown: must be error (the default) or elementwise");
		}
	} else if (strcmp(key, "timeout") != 0) {
		u->bad = key;
		snprintf(u->why, sizeof u->why, "unknown query parameter \"%.40s\" (name, dim, unknown, timeout)", key);
	}
	return MHD_YES;
}

static void
upload_free(struct upload *u)
{
	for (int i = 0; i < u->nren; i++)
		free(u->owned[i]);
	json_decref(u->warnings);
}

/* An error of the importer or of the model's validation, as problem+json:
 * what the client must fix is 422 (the importer names the node, the
 * validation the JSON path of the uploaded model), a graph over the
 * importer's limits 413; deadlines and memory as every handler's. */
static void
reply_upload_error(struct srv_request *r, struct dn_error *err, int onnx)
{
	char path[300];

	switch (err->code) {
	case DN_EINVAL:
	case DN_ENOENT:
	case DN_ERANGE:
		if (onnx) {
			srv_reply_problem(r, 422, "invalid-onnx", "ONNX file not imported", NULL, "%s", err->message);
			return;
		}
		/* the validation ran on {"model": body}: "$.model.x" is "$.x" of the upload */
		if (strncmp(err->path, "$.model", 7) == 0)
			snprintf(path, sizeof path, "$%s", err->path + 7);
		else
			snprintf(path, sizeof path, "%s", err->path[0] ? err->path : "$");
		srv_reply_problem(r, 422, "invalid-model", "Invalid model", path, "%s: %s", path, err->message);
		return;
	case DN_ETOOBIG:
		srv_reply_problem(r, 413, "model-too-large", "Model too large", NULL, "%s", err->message);
		return;
	default:
		srv_reply_error(r, err);
	}
}

/* {name: default} of the model's hyperparameters. */
static json_t *
hyperparameter_defaults(const json_t *model)
{
	json_t *out = json_object(), *v;
	const char *key;

	json_object_foreach((json_t *)json_object_get(model, "hyperparameters"), key, v) {
		json_t *d = json_is_object(v) ? json_object_get(v, "default") : NULL;
		json_object_set_new(out, key, d ? json_incref(d) : json_null());
	}
	return out;
}

/* Loads the model as a query's inline model and evaluates it at its
 * defaults (ans_cost_estimate, an inference workload on the catalog's
 * default device): the metadata, or NULL with err naming the path under
 * $.model. */
static json_t *
validate(struct srv_request *r, json_t *model, const char *source, json_t *warnings, struct dn_error *err)
{
	json_t *body = json_pack("{s:O,s:{s:s}}", "model", model, "workload", "mode", "inference");
	json_t *est, *costs, *w, *meta;
	size_t i;

	if (body == NULL) {
		dn_error_set(err, DN_ENOMEM, "", "out of memory");
		return NULL;
	}
	est = ans_cost_estimate(body, &r->srv->catalog, err);
	json_decref(body);
	if (est == NULL)
		return NULL;
	costs = json_object_get(est, "costs");
	json_array_foreach(json_object_get(est, "warnings"), i, w)
		json_array_append(warnings, w);
	if (json_is_false(json_object_get(costs, "valid")))
		json_array_append_new(warnings, json_string("the model's shapes are not valid at its hyperparameters' "
		    "defaults (POST /v1/estimate names the violated constraints)"));
	meta = json_pack("{s:O?,s:s,s:o,s:O?,s:O}", "name", json_object_get(model, "name"), "source", source,
	    "hyperparameters", hyperparameter_defaults(model), "params", json_object_get(costs, "params"),
	    "warnings", warnings);
	json_decref(est);
	if (meta == NULL)
		dn_error_set(err, DN_ENOMEM, "", "out of memory");
	return meta;
}

/* Stores the model and answers: 201 new, 200 when the same model is stored
 * (its stored answer), 409 when another model has the same id. */
static void
store_and_reply(struct srv_request *r, const char *text, json_t *meta)
{
	struct cache_entry ce;
	char id[SRV_SHA256_HEX], key[KEY_LEN];
	int hit;

	model_id(text, 0, id);
	model_key(id, key);
	snprintf(r->location, sizeof r->location, "/v1/models/%s", id);
	memset(&ce, 0, sizeof ce);
	hit = cache_get_result(r->srv->cache, key, &ce);
	if (hit == CACHE_HIT && ce.final && strcmp(ce.request, text) == 0) {
		srv_reply_owned(r, 200, "application/json", ce.result, strlen(ce.result));
		ce.result = NULL;       /* the reply's now */
		cache_entry_clear(&ce);
		return;
	}
	if (hit == CACHE_HIT) {
		cache_entry_clear(&ce);
		srv_log("model %s: another model has this id: not stored", id);
		srv_reply_problem(r, 409, "id-conflict", "Id conflict", NULL, "another model is stored under id %s "
		    "(a SHA-256 collision, or a damaged entry): change the model's name (?name=) and upload it again", id);
		return;
	}
	json_object_set_new(meta, "id", json_string(id));
	ce.request = (char *)text;
	ce.result = json_dumps(meta, JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
	ce.final = 1;
	if (ce.result == NULL) {
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "out of memory");
		return;
	}
	/* down: queued by the write-back queue (cache.c), readable meanwhile */
	(void)cache_put(r->srv->cache, key, &ce);
	/* the stored text: a later upload's 200 answers the same bytes */
	srv_reply_owned(r, 201, "application/json", ce.result, strlen(ce.result));
}

void
api_models_create(struct srv_request *r)
{
	struct onnx_import_opts o;
	struct upload u;
	struct dn_error err;
	json_t *model = NULL, *meta = NULL;
	char *text = NULL;
	int onnx = r->body_raw;

	memset(&u, 0, sizeof u);
	memset(&err, 0, sizeof err);
	u.warnings = json_array();
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, upload_arg, &u);
	if (u.bad == NULL && !onnx && (u.nren > 0 || u.unknown_elementwise)) {
		u.bad = u.nren > 0 ? "dim" : "unknown";
		snprintf(u.why, sizeof u.why, "%s: only for ONNX files (a JSON model names its own hyperparameters)",
		    u.bad);
	}
	if (u.bad != NULL) {
		srv_reply_problem(r, 400, "bad-parameter", "Bad parameter", u.bad, "%s", u.why);
		goto out;
	}
	if (u.warnings == NULL) {
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "out of memory");
		goto out;
	}
	if (onnx) {
		if (r->body_len == 0) {
			srv_reply_problem(r, 400, "empty-body", "Empty body", NULL, "the body is empty: send an ONNX file");
			goto out;
		}
		memset(&o, 0, sizeof o);
		o.name = u.name;
		o.renames = u.renames;
		o.unknown_elementwise = u.unknown_elementwise;
		o.memory_limit = IMPORT_MEMORY;
		o.warn = upload_warn;
		o.warn_ctx = &u;
		model = onnx_import(r->body, r->body_len, &o, &err);
	} else {
		model = json_incref(r->json);
		if (json_object_get(model, "dnnsat_model") == NULL) {
			srv_reply_problem(r, 422, "invalid-model", "Invalid model", "$.dnnsat_model", "$.dnnsat_model: a "
			    "model object starts with \"dnnsat_model\": 1 (docs/model-format.md)");
			goto out;
		}
		if (u.name != NULL)
			json_object_set_new(model, "name", json_string(u.name));
	}
	if (model != NULL)
		meta = validate(r, model, onnx ? "onnx" : "json", u.warnings, &err);
	if (meta == NULL) {
		if (!dn_error_isset(&err))
			dn_error_set(&err, DN_ENOMEM, "", "out of memory");
		reply_upload_error(r, &err, onnx && model == NULL);
		goto out;
	}
	text = json_dumps(model, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(17));
	if (text == NULL) {
		srv_reply_problem(r, 503, "out-of-memory", "Out of memory", NULL, "out of memory");
		goto out;
	}
	store_and_reply(r, text, meta);
out:
	free(text);
	json_decref(meta);
	json_decref(model);
	upload_free(&u);
}
