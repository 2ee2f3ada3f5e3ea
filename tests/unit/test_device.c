/*
 * test_device.c - the device catalog (schemas/devices.json): every device the
 * issue names is present with sane figures, aliases resolve, and inline
 * device descriptions report the field they get wrong.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

static const char *
catalog_path(void)
{
	return src_path("schemas/devices.json");
}

START_TEST(test_catalog)
{
	struct cm_device_catalog cat;
	struct dn_error err;
	static const char *const want[] = {
		"t4", "l4", "a10", "v100-16gb", "v100-32gb", "a100-40gb", "a100-80gb",
		"h100-sxm-80gb", "h200-141gb", "rtx-3090", "rtx-4090",
	};

	memset(&err, 0, sizeof err);
	ck_assert_msg(cm_catalog_load(catalog_path(), &cat, &err) == 0, "%s", err.message);
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct cm_device *d = cm_catalog_find(&cat, want[i]);
		ck_assert_msg(d != NULL, "no device %s", want[i]);
		ck_assert_int_ge(d->memory_bytes, 8LL << 30);
		ck_assert(d->mem_bandwidth >= 2e11 && d->mem_bandwidth <= 1e13);
		ck_assert(d->sm_count >= 20 && d->sm_count <= 200);
		ck_assert(d->peak_fp32 >= 5e12 && d->peak_fp32 <= 1e14);
		ck_assert(d->peak_fp16 >= d->peak_fp32);
	}
	/* aliases and case */
	ck_assert_ptr_nonnull(cm_catalog_find(&cat, "A100"));
	ck_assert_str_eq(cm_catalog_find(&cat, "a100")->display_name, cm_catalog_find(&cat, "a100-40gb")->display_name);
	ck_assert_ptr_null(cm_catalog_find(&cat, "tpu-v4"));
	/* the datasheet figures the performance model relies on */
	ck_assert_int_eq(cm_catalog_find(&cat, "a100-40gb")->sm_count, 108);
	ck_assert(cm_catalog_find(&cat, "v100-16gb")->peak_bf16 == 0);
	cm_catalog_free(&cat);
}
END_TEST

START_TEST(test_inline_device_errors)
{
	static const struct { const char *json, *msg; } cases[] = {
		{ "[]", "must be an object" },
		{ "{\"memory_bytes\": 1e10}", "\"name\"" },
		{ "{\"name\": \"x\", \"memory_bytes\": 1e10, \"memory_bandwidth_bytes_per_s\": 1e12, \"sm_count\": 10}", "\"peak_flops\"" },
		{ "{\"name\": \"x\", \"memory_bytes\": -5, \"memory_bandwidth_bytes_per_s\": 1e12, \"sm_count\": 10, \"peak_flops\": {\"fp32\": 1e13}}", "\"memory_bytes\"" },
		{ "{\"name\": \"x\", \"memory_bytes\": 1e10, \"memory_bandwidth_bytes_per_s\": \"fast\", \"sm_count\": 10, \"peak_flops\": {\"fp32\": 1e13}}", "must be a number" },
		{ "{\"name\": \"x\", \"memory_bytes\": 1e10, \"memory_bandwidth_bytes_per_s\": 1e12, \"sm_count\": 0, \"peak_flops\": {\"fp32\": 1e13}}", "\"sm_count\"" },
		{ "{\"name\": \"x\", \"memory_bytes\": 1e30, \"memory_bandwidth_bytes_per_s\": 1e12, \"sm_count\": 10, \"peak_flops\": {\"fp32\": 1e13}}", "outside" },
	};
	struct cm_device d;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct dn_error err;
		json_t *j = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		memset(&err, 0, sizeof err);
		ck_assert_ptr_nonnull(j);
		ck_assert_int_ne(cm_device_from_json(j, "$.device", &d, &err), 0);
		ck_assert_str_eq(err.path, "$.device");
		ck_assert_msg(strstr(err.message, cases[i].msg) != NULL, "%s: \"%s\" lacks \"%s\"", cases[i].json,
		    err.message, cases[i].msg);
		json_decref(j);
	}
	{
		struct dn_error err;
		json_t *j = json_loads("{\"name\": \"my-gpu\", \"memory_bytes\": 25769803776, "
		    "\"memory_bandwidth_bytes_per_s\": 9e11, \"sm_count\": 82, \"peak_flops\": {\"fp32\": 3.5e13}}", 0, NULL);
		memset(&err, 0, sizeof err);
		ck_assert_int_eq(cm_device_from_json(j, "$.device", &d, &err), 0);
		ck_assert_str_eq(d.name, "my-gpu");
		ck_assert(d.peak_fp16 == d.peak_fp32);   /* no tensor cores declared: FP32 units */
		json_decref(j);
	}
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("device");
	TCase *t = tcase_create("catalog");

	tcase_add_test(t, test_catalog);
	tcase_add_test(t, test_inline_device_errors);
	suite_add_tcase(s, t);
	return run_suite(s, 0);
}
