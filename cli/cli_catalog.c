/*
 * cli_catalog.c - `dnnsat templates` and `dnnsat devices`: what can be named
 * on the command line, with the hyperparameters and their defaults.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* The one option of templates and devices: 1 for --json, 0 without it,
 * -1 (printed) for anything else. */
static int
catalog_args(int argc, char **argv)
{
	struct dn_error err;
	int json = 0;

	memset(&err, 0, sizeof err);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else {
			if (argv[i][0] == '-')
				cli_unknown_option(argv[0], argv[i], &err);
			else
				dn_error_set(&err, DN_EINVAL, argv[i], "unexpected argument (see dnnsat %s --help)", argv[0]);
			cli_print_error(&err);
			return -1;
		}
	}
	return json;
}

int
cli_templates(int argc, char **argv)
{
	int json = catalog_args(argc, argv);
	json_t *all;

	if (json < 0)
		return 2;
	all = json_array();

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

static void
print_devices_json(const struct cm_device_catalog *cat)
{
	printf("[\n");
	for (int i = 0, first = 1; i < cat->n; i++) {
		const struct cm_device *d = &cat->devices[i];
		if (d->is_alias)
			continue;
		/* usable_memory_bytes: the table's USABLE, the memory budgets' cap */
		printf("%s  {\"name\": \"%s\", \"display_name\": \"%s\", \"memory_bytes\": %lld, "
		    "\"usable_memory_bytes\": %lld, \"memory_bandwidth_bytes_per_s\": %.0f, \"sm_count\": %d, "
		    "\"peak_fp32\": %.0f, \"peak_fp16\": %.0f}", first ? "" : ",\n", d->name, d->display_name,
		    (long long)d->memory_bytes, (long long)(d->usable_memory_bytes > 0 ? d->usable_memory_bytes :
		    d->memory_bytes), d->mem_bandwidth, d->sm_count, d->peak_fp32, d->peak_fp16);
		first = 0;
	}
	printf("\n]\n");
}

/* One row per device under a header, each column as wide as its widest
 * cell (names and GPU names vary: "titan-x-maxwell", "NVIDIA GeForce GTX
 * TITAN X (Maxwell)"); numbers right-aligned, units in the header. */
static void
print_devices_table(const struct cm_device_catalog *cat)
{
	int wname = (int)strlen("NAME"), wgpu = (int)strlen("GPU");

	for (int i = 0; i < cat->n; i++)
		if (!cat->devices[i].is_alias) {
			int a = (int)strlen(cat->devices[i].name), b = (int)strlen(cat->devices[i].display_name);
			wname = a > wname ? a : wname;
			wgpu = b > wgpu ? b : wgpu;
		}
	/* USABLE: what one process can allocate, the memory budgets' cap
	 * (cudaMemGetInfo's total: below MEMORY by ECC and the driver) */
	printf("%-*s  %-*s  %10s  %10s  %9s  %4s  %13s  %13s\n", wname, "NAME", wgpu, "GPU", "MEMORY", "USABLE",
	    "BANDWIDTH", "SMS", "FP32", "FP16");
	for (int i = 0; i < cat->n; i++) {
		const struct cm_device *d = &cat->devices[i];
		if (d->is_alias)
			continue;
		printf("%-*s  %-*s  %6.1f GiB  %6.2f GiB  %4.0f GB/s  %4d  %5.1f TFLOP/s  %5.1f TFLOP/s\n", wname, d->name,
		    wgpu, d->display_name, (double)d->memory_bytes / (1 << 30), (double)d->usable_memory_bytes / (1 << 30),
		    d->mem_bandwidth / 1e9, d->sm_count, d->peak_fp32 / 1e12, d->peak_fp16 / 1e12);
	}
}

int
cli_devices(int argc, char **argv)
{
	struct cm_device_catalog cat;
	struct dn_error err;
	char path[1024];
	int json = catalog_args(argc, argv);

	if (json < 0)
		return 2;
	memset(&err, 0, sizeof err);
	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	if (cm_catalog_load(path, &cat, &err) != 0) {
		cli_print_error(&err);
		return 2;
	}
	if (json)
		print_devices_json(&cat);
	else
		print_devices_table(&cat);

	cm_catalog_free(&cat);
	return 0;
}
