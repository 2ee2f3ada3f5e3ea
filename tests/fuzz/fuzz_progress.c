/*
 * fuzz_progress.c - libFuzzer target for a count's saved progress, which
 * the service reads back from a database: any byte string is loaded
 * (fs_progress_load) into an engine for a fixed query with a nested choice
 * and a bisected range. The input's last 8 bytes are replaced by its
 * checksum first, so that mutations reach the structural checks instead of
 * stopping at the checksum. A blob that loads is counted on (a bounded
 * slice of work), then navigated. Every outcome must be an answer or an
 * error that says why, and a rejected blob must leave the engine as it was.
 *
 * Seeds (tests/fuzz/corpus/progress): FUZZ_WRITE_SEEDS=DIR makes the target
 * write the progress of this query after a few slices of work, and exact,
 * into DIR before fuzzing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fset.h"
#include "query.h"
#include "../unit/test_reseal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cm_device_catalog cat;
static struct sq_query q;

static const char query_json[] =
    "{\"model\": \"mlp\", \"device\": \"t4\", \"budgets\": {\"params\": 2000000, \"memory\": \"1300MiB\"},"
    " \"space\": {\"batch_size\": {\"_type\": \"randint\", \"_value\": [1, 3000]},"
    "  \"hidden\": {\"_type\": \"quniform\", \"_value\": [64, 1088, 64]},"
    "  \"activation\": {\"_type\": \"choice\", \"_value\": ["
    "    {\"_name\": \"relu\", \"depth\": {\"_type\": \"randint\", \"_value\": [1, 4]}},"
    "    {\"_name\": \"gelu\", \"depth\": {\"_type\": \"randint\", \"_value\": [2, 7]}},"
    "    {\"_name\": \"tanh\"}]}}}";

static void
write_seeds(const char *dir)
{
	static const int64_t slices[] = { 5, 40, 200, 0 };
	struct fs_engine e;
	struct dn_error err;

	for (size_t i = 0; i < sizeof slices / sizeof slices[0]; i++) {
		char path[1024];
		void *buf;
		size_t len;
		FILE *f;
		memset(&err, 0, sizeof err);
		if (fs_init(&e, &q, &err) != 0)
			abort();
		e.work_limit = slices[i] ? e.bound_calls + slices[i] : 0;
		if (fs_count_all(&e, 0, &err) != 0 || fs_progress_save(&e, &buf, &len, &err) != 0)
			abort();
		snprintf(path, sizeof path, "%s/seed%02zu.bin", dir, i);
		if ((f = fopen(path, "wb")) == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
			abort();
		free(buf);
		fs_free(&e);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct dn_error err;
	char path[1024];
	json_t *req;

	(void)argc;
	(void)argv;
	memset(&err, 0, sizeof err);
	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	req = json_loads(query_json, 0, NULL);
	if (cm_catalog_load(path, &cat, &err) != 0 || req == NULL || sq_parse(req, &cat, &q, &err) != 0)
		abort();
	json_decref(req);
	if (getenv("FUZZ_WRITE_SEEDS") != NULL)
		write_seeds(getenv("FUZZ_WRITE_SEEDS"));
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fs_engine e;
	struct dn_error err;
	uint8_t *b = malloc(size + 1);
	int64_t *pos;

	memset(&err, 0, sizeof err);
	if (b == NULL || fs_init(&e, &q, &err) != 0)
		abort();
	memcpy(b, data, size);
	test_reseal(b, size);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	if (fs_progress_load(&e, b, size, &err) != 0) {
		if (!dn_error_isset(&err) || e.counted || e.nnodes != 0)
			abort();        /* a rejection says why and changes nothing */
	} else {
		if (e.lower > e.upper || e.upper > e.total)
			abort();
		e.work_limit = e.bound_calls + 2000;
		if (fs_count_more(&e, 0, &err) != 0)
			abort();
		e.work_limit = 0;
		if (e.lower == e.upper && e.lower > 0) {
			(void)fs_kth(&e, 0, pos, &err);
			(void)fs_kth(&e, e.lower - 1, pos, &err);
		}
		(void)fs_next(&e, NULL, pos, &err);
	}
	free(pos);
	free(b);
	fs_free(&e);
	return 0;
}
