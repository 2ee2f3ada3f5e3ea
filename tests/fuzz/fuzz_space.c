/*
 * fuzz_space.c - libFuzzer target for NNI search spaces: any byte string is
 * loaded as JSON, parsed as a space, counted, bound to a built-in template
 * (loaded once, chosen by the input's length so that every template's
 * hyperparameters are reached) and every discrete dim's first and last
 * values are read back. Every outcome must be a value or an error, never a
 * crash, a leak or undefined behaviour (run under ASan + UBSan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "space.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const templates[] = { "resnet", "nb201", "mobilenet_v2", "vgg", "mlp" };
#define NTEMPLATES (sizeof templates / sizeof templates[0])

static struct cm_model_def *defs[NTEMPLATES];

static void
load_templates(void)
{
	static int loaded;
	struct dn_error err;

	if (loaded)
		return;
	loaded = 1;
	for (size_t i = 0; i < NTEMPLATES; i++) {
		memset(&err, 0, sizeof err);
		if (cm_def_load_template(templates[i], &defs[i], &err) != 0)
			abort();        /* the data directory is wrong: nothing to fuzz */
	}
}

static void
read_values(const struct sp_dim *d)
{
	int64_t idx[3] = { 0, d->nvalues / 2, d->nvalues - 1 };

	for (int k = 0; k < 3; k++) {
		json_t *v = sp_value_json(d, idx[k]);
		volatile union expr_val x = sp_value_hp(d, idx[k]);
		volatile double n = sp_value_num(d, idx[k]);
		(void)x;
		(void)n;
		if (d->discrete && v == NULL)
			abort();        /* every value of a discrete grid is writable */
		json_decref(v);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	struct sp_space sp;
	struct dn_error err;
	char *count;

	load_templates();
	if (root == NULL)
		return 0;
	memset(&err, 0, sizeof err);
	if (sp_parse(root, &sp, &err) == 0) {
		count = sp_count_total(&sp);
		if (count == NULL || count[0] < '0' || count[0] > '9')
			abort();
		free(count);
		for (int i = 0; i < sp.ndims; i++)
			read_values(&sp.dims[i]);
		memset(&err, 0, sizeof err);
		if (sp_bind(&sp, defs[size % NTEMPLATES], &err) == 0) {
			for (int i = 0; i < sp.ndims; i++)
				read_values(&sp.dims[i]);
		} else if (err.code == DN_OK) {
			abort();        /* a failure must say why */
		}
	} else if (err.code == DN_OK || err.path[0] != '$') {
		abort();                /* parse errors name a JSON path */
	}
	sp_free(&sp);
	json_decref(root);
	return 0;
}
