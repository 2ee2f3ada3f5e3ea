/*
 * cli_catalog.c - `dnnsat templates` and `dnnsat devices`: what can be named
 * on the command line, with the hyperparameters and their defaults.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int
cli_templates(int argc, char **argv)
{
	int json = argc > 1 && strcmp(argv[1], "--json") == 0;
	json_t *all = json_array();

	for (const char *const *t = cm_template_names(); *t; t++) {
		struct cm_model_def *def;
		struct dn_error err;
		const char *key;
		json_t *v;
		memset(&err, 0, sizeof err);
		if (cm_def_load_template(*t, &def, &err) != 0) {
			cli_print_error(&err);
			json_decref(all);
			return 2;
		}
		if (json) {
			json_array_append_new(all, json_pack("{s:s,s:s,s:O,s:O}", "name", *t,
			    "description", def->description,
			    "hyperparameters", json_object_get(def->root, "hyperparameters"),
			    "presets", json_object_get(def->root, "presets") ? json_object_get(def->root, "presets") : json_object()));
		} else {
			printf("%-14s %s\n", *t, def->description);
			printf("  hyperparameters:");
			for (int i = 0; i < def->nhps; i++)
				printf(" %s", def->hps[i].name);
			printf("\n");
			if (json_object_size(json_object_get(def->root, "presets")) > 0) {
				printf("  presets:");
				json_object_foreach(json_object_get(def->root, "presets"), key, v)
					printf(" %s", key);
				printf("\n");
			}
		}
		cm_def_unref(def);
	}
	if (json) {
		json_dumpf(all, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
	}
	json_decref(all);
	return 0;
}

int
cli_devices(int argc, char **argv)
{
	struct cm_device_catalog cat;
	struct dn_error err;
	char path[1024];
	int json = argc > 1 && strcmp(argv[1], "--json") == 0;

	memset(&err, 0, sizeof err);
	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	if (cm_catalog_load(path, &cat, &err) != 0) {
		cli_print_error(&err);
		return 2;
	}
	if (json)
		printf("[\n");
	for (int i = 0, first = 1; i < cat.n; i++) {
		const struct cm_device *d = &cat.devices[i];
		if (d->is_alias)
			continue;
		if (json) {
			printf("%s  {\"name\": \"%s\", \"display_name\": \"%s\", \"memory_bytes\": %lld, "
			    "\"memory_bandwidth_bytes_per_s\": %.0f, \"sm_count\": %d, \"peak_fp32\": %.0f, "
			    "\"peak_fp16\": %.0f}", first ? "" : ",\n", d->name, d->display_name,
			    (long long)d->memory_bytes, d->mem_bandwidth, d->sm_count, d->peak_fp32, d->peak_fp16);
			first = 0;
		} else
			printf("%-16s %-32s %6.1f GiB %7.0f GB/s %4d SMs %7.1f TFLOP/s fp32 %7.1f fp16\n",
			    d->name, d->display_name, (double)d->memory_bytes / (1 << 30), d->mem_bandwidth / 1e9,
			    d->sm_count, d->peak_fp32 / 1e12, d->peak_fp16 / 1e12);
	}
	if (json)
		printf("\n]\n");
	cm_catalog_free(&cat);
	return 0;
}
