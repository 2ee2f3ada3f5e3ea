/*
 * fuzz_query.c - libFuzzer target for a whole solver query: any byte string
 * is read as a query (model, NNI space, device, budgets, constraints), then
 * the engine counts it under a 20 ms deadline and lists its first feasible
 * configuration. Every outcome must be an answer or an error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fset.h"
#include "query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cm_device_catalog cat;
static int loaded;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *req;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;

	if (!loaded) {
		char path[1024];
		memset(&err, 0, sizeof err);
		snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
		if (cm_catalog_load(path, &cat, &err) != 0)
			abort();
		loaded = 1;
	}
	req = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (req == NULL)
		return 0;
	memset(&err, 0, sizeof err);
	memset(&e, 0, sizeof e);
	if (sq_parse(req, &cat, &q, &err) == 0 && fs_init(&e, &q, &err) == 0) {
		int64_t *pos = calloc((size_t)e.nvars + 1, sizeof *pos);
		if (fs_count_all(&e, 0.02, &err) == 0 && e.lower == e.upper && e.lower > 0)
			(void)fs_kth(&e, 0, pos, &err);
		(void)fs_next(&e, NULL, pos, &err);
		free(pos);
	} else if (!dn_error_isset(&err))
		abort();        /* a failure must say why */
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	return 0;
}
