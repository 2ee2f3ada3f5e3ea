/*
 * cli_batch_input.c - the inputs of `dnnsat prune`: files and directories
 * of NNI search spaces or query files, read and checked before any solving
 * starts, and the query of each (input, device) item.
 *
 * A file is a query file when one of its members is a field of a query
 * (model, space, device, workload, budgets, constraints, fixed, timeout)
 * that is not itself an NNI parameter ({"_type": ...}); otherwise it is a
 * bare NNI space. In a query file, "space" and "model" may name JSON files
 * ("../spaces/resnet.json"), read relative to the query file, and
 * "timeout" is that file's deadline (the service's field; the solver's
 * query does not take it).
 */
#include "cli.h"
#include "dn_grow.h"
#include "cli_batch.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const query_keys[] = { "model", "space", "device", "workload", "budgets", "constraints",
	"fixed", "timeout" };

static int
has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Is this object a query file (else a bare NNI space)? */
static int
is_query(const json_t *j)
{
	for (size_t i = 0; i < sizeof query_keys / sizeof query_keys[0]; i++) {
		const json_t *v = json_object_get(j, query_keys[i]);
		if (v != NULL && !(json_is_object(v) && json_object_get(v, "_type") != NULL))
			return 1;
	}
	return 0;
}

/* Replaces query[key], when it is a string naming a .json file, by that
 * file's content, read relative to the query file's directory `dir`. */
static int
load_relative(json_t *query, const char *key, const char *file, const char *dir, struct dn_error *err)
{
	const json_t *v = json_object_get(query, key);
	char path[4096], what[4200];
	json_t *j;

	if (!json_is_string(v) || !has_suffix(json_string_value(v), ".json"))
		return 0;
	if (json_string_value(v)[0] == '/')
		dn_fmt(path, sizeof path, "%s", json_string_value(v));
	else
		dn_fmt(path, sizeof path, "%s/%s", dir, json_string_value(v));
	dn_fmt(what, sizeof what, "%s: $.%s", file, key);
	if (access(path, R_OK) != 0)
		return dn_error_set(err, DN_EINVAL, what, "cannot read \"%s\": %s", path, strerror(errno));
	if (cli_load_json_file(path, what, &j, err) != 0)
		return -1;
	json_object_set_new(query, key, j);
	return 0;
}

/* Reads one input file into in (the caller adds it to the list). */
static int
input_read(struct batch_input *in, const char *file, struct dn_error *err)
{
	json_t *j, *t;
	char *copy, *dir;
	const char *base;
	int rc = 0;

	memset(in, 0, sizeof *in);
	if (cli_load_json_file(file, NULL, &j, err) != 0)
		return -1;
	if (!json_is_object(j)) {
		json_decref(j);
		return dn_error_set(err, DN_EINVAL, file, "holds no JSON object (an NNI search space or a query)");
	}
	if (!is_query(j)) {
		in->query = json_pack("{s:o}", "space", j);
	} else {
		in->query = j;
		copy = strdup(file);
		dir = copy ? dirname(copy) : ".";
		rc = load_relative(j, "space", file, dir, err);
		if (rc == 0)
			rc = load_relative(j, "model", file, dir, err);
		free(copy);
		t = json_object_get(j, "timeout");
		if (rc == 0 && t != NULL) {
			if (!json_is_number(t) || !(json_number_value(t) > 0 && json_number_value(t) <= CLI_MAX_TIMEOUT))
				rc = dn_error_set(err, DN_EINVAL, file, "$.timeout: must be seconds, more than 0 and at "
				    "most %d (a day)", CLI_MAX_TIMEOUT);
			else
				in->timeout = json_number_value(t);
			json_object_del(j, "timeout");
		}
		if (rc == 0 && !json_is_object(json_object_get(j, "space")))
			rc = dn_error_set(err, DN_EINVAL, file, "$.space: a query file needs a space (an NNI search "
			    "space, or the name of its file)");
	}
	base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
	in->file = strdup(file);
	in->name = strndup(base, has_suffix(base, ".json") ? strlen(base) - 5 : strlen(base));
	if (rc == 0 && (in->query == NULL || in->file == NULL || in->name == NULL))
		rc = dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	return rc;
}

static void
input_free(struct batch_input *in)
{
	free(in->file);
	free(in->name);
	json_decref(in->query);
	memset(in, 0, sizeof *in);
}

static int
inputs_add_file(struct batch_inputs *in, const char *file, struct dn_error *err)
{
	struct batch_input one;

	if (input_read(&one, file, err) != 0) {
		input_free(&one);
		return -1;
	}
	for (int i = 0; i < in->n; i++)
		if (strcmp(in->v[i].name, one.name) == 0) {
			if (strcmp(in->v[i].file, one.file) == 0)
				dn_error_set(err, DN_EINVAL, file, "is given twice");
			else
				dn_error_set(err, DN_EINVAL, file, "has the base name of %s: their outputs (%s.DEVICE.*) "
				    "would collide; rename one", in->v[i].file, one.name);
			input_free(&one);
			return -1;
		}
	if (dn_grow_int(&in->v, &in->cap, in->n + 1, sizeof *in->v) != 0) {
		input_free(&one);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	in->v[in->n++] = one;
	return 0;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.json of a directory, in name order (hidden files skipped). */
static int
inputs_add_dir(struct batch_inputs *in, const char *path, struct dn_error *err)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0, bad = 0;
	struct dn_error first_bad, *first = &first_bad;

	if (d == NULL)
		return dn_error_set(err, DN_EINVAL, path, "cannot read the directory: %s", strerror(errno));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !has_suffix(de->d_name, ".json"))
			continue;
		if (dn_grow(&names, &cap, n + 1, sizeof *names) != 0) {
			rc = dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
			break;
		}
		if (asprintf(&names[n], "%s%s%s", path, has_suffix(path, "/") ? "" : "/", de->d_name) < 0) {
			rc = dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
			break;
		}
		n++;
	}
	closedir(d);
	if (rc == 0 && n == 0)
		rc = dn_error_set(err, DN_EINVAL, path, "the directory holds no .json file");
	if (n > 0)
		qsort(names, n, sizeof *names, by_name);
	/* every file is read, and every bad one named, before stopping */
	for (size_t i = 0; i < n; i++) {
		struct dn_error one;
		memset(&one, 0, sizeof one);
		if (rc == 0 && inputs_add_file(in, names[i], &one) != 0) {
			cli_print_error(&one);
			bad++;
			if (bad == 1)
				*first = one;
		}
		free(names[i]);
	}
	free(names);
	if (rc == 0 && bad == 1)
		return dn_error_set(err, first->code, first->path, "%s", first->message);
	if (rc == 0 && bad > 1)
		rc = dn_error_set(err, DN_EINVAL, path, "%d of its %zu .json files are not valid inputs (each named "
		    "above)", bad, n);
	return rc;
}

int
batch_inputs_add(struct batch_inputs *in, const char *path, struct dn_error *err)
{
	struct stat st;

	if (stat(path, &st) != 0 && errno == ENOENT)
		return dn_error_set(err, DN_EINVAL, path, "no such file or directory");
	if (stat(path, &st) != 0)
		return dn_error_set(err, DN_EINVAL, path, "cannot read it: %s", strerror(errno));
	if (S_ISDIR(st.st_mode))
		return inputs_add_dir(in, path, err);
	return inputs_add_file(in, path, err);
}

void
batch_inputs_free(struct batch_inputs *in)
{
	for (int i = 0; i < in->n; i++)
		input_free(&in->v[i]);
	free(in->v);
	memset(in, 0, sizeof *in);
}

json_t *
batch_item_query(const struct batch_input *in, const json_t *overrides, const char *device, struct dn_error *err)
{
	json_t *q = json_deep_copy(in->query), *v, *mine;
	const char *key;

	if (q == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	json_object_foreach((json_t *)overrides, key, v) {
		mine = json_object_get(q, key);
		if (json_is_object(mine) && json_is_object(v) && strcmp(key, "model") != 0 && strcmp(key, "space") != 0 &&
		    strcmp(key, "device") != 0)
			json_object_update(mine, v);
		else if (json_is_array(mine) && json_is_array(v))
			json_array_extend(mine, v);
		else
			json_object_set(q, key, v);
	}
	if (device != NULL)
		json_object_set_new(q, "device", json_string(device));
	else if (json_object_get(q, "device") == NULL)
		json_object_set_new(q, "device", json_string("a100-40gb"));
	if (json_object_get(q, "model") == NULL) {
		json_decref(q);
		dn_error_set(err, DN_EINVAL, NULL, "no model: give --preset, --template or --model, or a \"model\" "
		    "in a query file");
		return NULL;
	}
	return q;
}

void
batch_device_label(const json_t *query, char *buf, size_t len)
{
	const json_t *d = json_object_get(query, "device");
	const char *name = json_is_string(d) ? json_string_value(d) : json_string_value(json_object_get(d, "name"));

	if (d == NULL)
		name = "a100-40gb";     /* sq_parse's default */
	dn_fmt(buf, len, "%s", name != NULL && name[0] != '\0' ? name : "device");
	for (char *p = buf; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		    *p == '_' || (*p == '.' && p != buf)))
			*p = '_';
}
