/*
 * device_catalog.c - the GPU catalog (schemas/devices.json) and inline device
 * descriptions. A device is valid when it has a positive memory size,
 * bandwidth, SM count and FP32 peak; absent tensor-core peaks are 0 (the
 * performance model then falls back to the FP32 units). The usable memory
 * (what nvidia-smi / cudaMemGetInfo report as the total a process sees) is
 * at most the capacity and defaults to it. A name the user types resolves
 * exactly (cm_catalog_find) or fails with the candidates it could mean
 * (cm_catalog_resolve).
 */
#include "costmodel.h"
#include "dn_file.h"
#include "dn_suggest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int
num(const json_t *obj, const char *key, const char *path, double lo, double hi,
    int required, double *out, struct dn_error *err)
{
	const json_t *v = json_object_get(obj, key);

	if (v == NULL) {
		if (required)
			return dn_error_set(err, DN_EINVAL, path, "\"%s\" is required", key);
		*out = 0;
		return 0;
	}
	if (!json_is_number(v))
		return dn_error_set(err, DN_EINVAL, path, "\"%s\" must be a number", key);
	*out = json_number_value(v);
	if (!(*out >= lo && *out <= hi))
		return dn_error_set(err, DN_ERANGE, path, "\"%s\" = %g is outside [%g, %g]", key, *out, lo, hi);
	return 0;
}

int
cm_device_from_json(const json_t *obj, const char *path, struct cm_device *d,
    struct dn_error *err)
{
	const char *name;
	const json_t *peaks, *cc;
	double mem, usable, bw, sms, threads, v, ctx, ctx_up;

	memset(d, 0, sizeof *d);
	if (!json_is_object(obj))
		return dn_error_set(err, DN_EINVAL, path, "a device must be an object");
	name = json_string_value(json_object_get(obj, "name"));
	if (name == NULL || strlen(name) == 0 || strlen(name) >= sizeof d->name)
		return dn_error_set(err, DN_EINVAL, path, "\"name\" must be a string of 1 to %zu characters",
		    sizeof d->name - 1);
	snprintf(d->name, sizeof d->name, "%s", name);
	snprintf(d->display_name, sizeof d->display_name, "%s",
	    json_string_value(json_object_get(obj, "display_name")) ?
	    json_string_value(json_object_get(obj, "display_name")) : name);
	if (num(obj, "memory_bytes", path, 1 << 20, 1.8e13, 1, &mem, err) ||
	    num(obj, "usable_memory_bytes", path, 1 << 20, mem, 0, &usable, err) ||
	    num(obj, "memory_bandwidth_bytes_per_s", path, 1e9, 1e14, 1, &bw, err) ||
	    num(obj, "sm_count", path, 1, 10000, 1, &sms, err) ||
	    num(obj, "max_threads_per_sm", path, 0, 65536, 0, &threads, err))
		return -1;
	if (num(obj, "cuda_context_bytes", path, 0, mem, 0, &ctx, err) ||
	    num(obj, "cuda_context_upper_bytes", path, 0, mem, 0, &ctx_up, err))
		return -1;
	if (ctx_up > 0 && ctx_up < ctx)
		return dn_error_set(err, DN_ERANGE, path, "\"cuda_context_upper_bytes\" = %.0f is less than "
		    "\"cuda_context_bytes\" = %.0f (it is the upper bound)", ctx_up, ctx);
	d->context_bytes = (int64_t)ctx;
	d->context_upper_bytes = (int64_t)ctx_up;
	cc = json_object_get(obj, "compute_capability");
	if (cc != NULL) {
		const char *t = json_string_value(cc);
		char tail;
		if (t == NULL || sscanf(t, "%d.%d%c", &d->cc_major, &d->cc_minor, &tail) != 2 ||
		    d->cc_major < 1 || d->cc_major > 99 || d->cc_minor < 0 || d->cc_minor > 99)
			return dn_error_set(err, DN_EINVAL, path, "\"compute_capability\" must be a string "
			    "MAJOR.MINOR such as \"8.0\"");
	}
	d->memory_bytes = (int64_t)mem;
	d->usable_memory_bytes = usable > 0 ? (int64_t)usable : d->memory_bytes;
	d->mem_bandwidth = bw;
	d->sm_count = (int)sms;
	d->max_threads_per_sm = threads > 0 ? (int)threads : 2048;
	peaks = json_object_get(obj, "peak_flops");
	if (!json_is_object(peaks))
		return dn_error_set(err, DN_EINVAL, path, "\"peak_flops\" must be an object with at least \"fp32\"");
	if (num(peaks, "fp32", path, 1e9, 1e17, 1, &d->peak_fp32, err) ||
	    num(peaks, "tf32", path, 0, 1e17, 0, &d->peak_tf32, err) ||
	    num(peaks, "fp16", path, 0, 1e17, 0, &d->peak_fp16, err) ||
	    num(peaks, "bf16", path, 0, 1e17, 0, &d->peak_bf16, err) ||
	    num(peaks, "int8", path, 0, 1e18, 0, &v, err))
		return -1;
	d->peak_int8 = v;
	if (d->peak_fp16 <= 0)
		d->peak_fp16 = d->peak_fp32;
	return 0;
}

int
cm_catalog_load(const char *path, struct cm_device_catalog *cat, struct dn_error *err)
{
	size_t len;
	char *text;
	int rc;

	memset(cat, 0, sizeof *cat);
	text = dn_file_read(path, 0, "devices", &len, err);
	if (text == NULL)
		return -1;
	rc = cm_catalog_parse(path, text, len, cat, err);
	free(text);
	return rc;
}

int
cm_catalog_parse(const char *path, const char *text, size_t len, struct cm_device_catalog *cat,
    struct dn_error *err)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(cat, 0, sizeof *cat);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		return dn_error_set(err, DN_EINVAL, "devices", "%s: line %d: %s", path, jerr.line, jerr.text);
	rc = cm_catalog_from_json(root, cat, err);
	if (rc != 0 && err != NULL && strncmp(err->message, path, strlen(path)) != 0) {
		char m[sizeof err->message];
		dn_fmt(m, sizeof m, "%s: %s", path, err->message);
		memcpy(err->message, m, sizeof m);
	}
	json_decref(root);
	return rc;
}

int
cm_catalog_from_json(const json_t *root, struct cm_device_catalog *cat, struct dn_error *err)
{
	json_t *devs, *d;
	size_t i, naliases = 0;

	memset(cat, 0, sizeof *cat);
	devs = json_object_get(root, "devices");
	if (!json_is_array(devs))
		return dn_error_set(err, DN_EINVAL, "devices", "\"devices\" must be a list");
	json_array_foreach(devs, i, d)
		naliases += json_array_size(json_object_get(d, "aliases"));
	cat->devices = calloc(json_array_size(devs) + naliases + 1, sizeof *cat->devices);
	if (cat->devices == NULL)
		return dn_error_set(err, DN_ENOMEM, "devices", "out of memory");
	json_array_foreach(devs, i, d) {
		char p[64];
		snprintf(p, sizeof p, "$.devices[%zu]", i);
		if (cm_device_from_json(d, p, &cat->devices[cat->n], err) != 0) {
			cm_catalog_free(cat);
			return -1;
		}
		cat->devices[cat->n].entry = cat->n;
		cat->n++;
	}
	/* aliases: every alias is an entry of its own, a copy under that name */
	json_array_foreach(devs, i, d) {
		size_t j;
		json_t *a;
		json_array_foreach(json_object_get(d, "aliases"), j, a) {
			struct cm_device *all = cat->devices;
			if (!json_is_string(a) || json_string_length(a) >= sizeof all->name)
				continue;
			all[cat->n] = all[i];
			snprintf(all[cat->n].name, sizeof all->name, "%s", json_string_value(a));
			all[cat->n].is_alias = 1;
			cat->n++;
		}
	}
	return 0;
}

void
cm_catalog_free(struct cm_device_catalog *cat)
{
	free(cat->devices);
	memset(cat, 0, sizeof *cat);
}

const struct cm_device *
cm_catalog_find(const struct cm_device_catalog *cat, const char *name)
{
	for (int i = 0; i < cat->n; i++)
		if (strcasecmp(cat->devices[i].name, name) == 0)
			return &cat->devices[i];
	return NULL;
}

/* Whether catalog name `entry` starts with `name` followed by '-'. */
static int
name_extends(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return n > 0 && strncasecmp(entry, name, n) == 0 && entry[n] == '-';
}

int
cm_catalog_resolve(const struct cm_device_catalog *cat, const char *name, const char *path,
    const struct cm_device **out, struct dn_error *err)
{
	const char **cands;
	char list[400], near[200];
	size_t used = 0;
	int nmatch = 0;

	*out = cm_catalog_find(cat, name);
	if (*out != NULL)
		return 0;
	list[0] = '\0';
	for (int i = 0; i < cat->n; i++) {
		const struct cm_device *d = &cat->devices[i];
		int seen = 0;
		if (!name_extends(d->name, name))
			continue;
		/* one line per device, whichever of its names matched */
		for (int j = 0; j < i; j++)
			seen |= cat->devices[j].entry == d->entry && name_extends(cat->devices[j].name, name);
		if (seen)
			continue;
		used += (size_t)dn_fmt(list + used, sizeof list - used, "%s%s (%s)", nmatch ? ", " : "",
		    cat->devices[d->entry].name, cat->devices[d->entry].display_name);
		nmatch++;
	}
	if (nmatch >= 2)
		return dn_error_set(err, DN_EINVAL, path, "device \"%.64s\" is ambiguous: it could be %s",
		    name, list);
	cands = calloc((size_t)cat->n + 1, sizeof *cands);
	if (cands == NULL)
		return dn_error_set(err, DN_ENOMEM, path, "out of memory");
	for (int i = 0; i < cat->n; i++)
		cands[i] = cat->devices[i].name;
	dn_suggest(name, cands, cat->n, near, sizeof near);
	free(cands);
	if (near[0] != '\0')
		return dn_error_set(err, DN_ENOENT, path, "unknown device \"%.64s\" (did you mean %s? "
		    "dnnsat devices lists them)", name, near);
	return dn_error_set(err, DN_ENOENT, path, "unknown device \"%.64s\" (dnnsat devices lists them)", name);
}
