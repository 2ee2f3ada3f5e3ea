/*
 * test_util.h - helpers shared by the cost-model tests: build a model from
 * JSON text or a template for a default workload and device, evaluate a
 * configuration, read reference CSV files. Header-only (static functions),
 * one copy per test program.
 */
#ifndef DN_TEST_UTIL_H
#define DN_TEST_UTIL_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"

static struct cm_device __attribute__((unused))
test_device(void)
{
	struct cm_device d;

	memset(&d, 0, sizeof d);
	snprintf(d.name, sizeof d.name, "a100-40gb");
	snprintf(d.display_name, sizeof d.display_name, "test A100 40GB");
	d.memory_bytes = 40LL << 30;
	d.mem_bandwidth = 1555e9;
	d.sm_count = 108;
	d.max_threads_per_sm = 2048;
	d.cc_major = 8;         /* compute capability 8.0 */
	d.peak_fp32 = 19.5e12;
	d.peak_tf32 = 156e12;
	d.peak_fp16 = 312e12;
	d.peak_bf16 = 312e12;
	return d;
}

static struct cm_workload __attribute__((unused))
test_workload(int training)
{
	struct cm_workload w;

	memset(&w, 0, sizeof w);
	w.training = training;
	w.optimizer = CM_OPT_ADAM;
	w.precision = CM_PREC_FP32;
	/* the PyTorch references (tests/reference) measure the models' eager
	 * attention; the other kernels are tested in test_workload.c */
	w.attention = CM_ATTN_EAGER;
	w.grad_accum = 1;
	return w;
}

/* A built model with its configuration and scratch space. */
struct tmodel {
	struct cm_model_def *def;
	struct cm_model *m;
	union expr_val *cfg;
	union expr_val *scratch;
	struct cm_result r;
	struct dn_error err;
};

static void __attribute__((unused))
tmodel_free(struct tmodel *t)
{
	cm_model_free(t->m);
	cm_def_unref(t->def);
	free(t->cfg);
	free(t->scratch);
	memset(t, 0, sizeof *t);
}

/* Builds from an already loaded def for device `d`; returns 0 or -1 with
 * t->err set. */
static int __attribute__((unused))
tmodel_build_def_on(struct tmodel *t, const struct cm_workload *wl, const struct cm_device *d)
{
	t->cfg = calloc((size_t)t->def->nhps + 1, sizeof *t->cfg);
	cm_config_defaults(t->def, t->cfg);
	if (cm_model_build(t->def, wl, d, NULL, &t->m, &t->err) != 0)
		return -1;
	t->scratch = calloc((size_t)cm_model_scratch_len(t->m), sizeof *t->scratch);
	return 0;
}

/* The same for the tests' A100 (test_device). */
static int __attribute__((unused))
tmodel_build_def(struct tmodel *t, const struct cm_workload *wl)
{
	struct cm_device d = test_device();

	return tmodel_build_def_on(t, wl, &d);
}

static int __attribute__((unused))
tmodel_from_text(struct tmodel *t, const char *text, const struct cm_workload *wl)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(t, 0, sizeof *t);
	root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		dn_error_set(&t->err, DN_EINVAL, "$", "line %d: %s", jerr.line, jerr.text);
		return -1;
	}
	rc = cm_def_load_json(root, &t->def, &t->err);
	json_decref(root);
	if (rc != 0)
		return -1;
	return tmodel_build_def(t, wl);
}

/* Loads the template that defines `preset` (or the template itself). */
static int __attribute__((unused))
tmodel_from_preset(struct tmodel *t, const char *preset, const struct cm_workload *wl)
{
	memset(t, 0, sizeof *t);
	if (cm_def_load_preset(preset, &t->def, &t->err) != 0)
		return -1;
	if (tmodel_build_def(t, wl) != 0)
		return -1;
	return cm_config_apply_preset(t->def, preset, t->cfg, &t->err);
}

static void __attribute__((unused))
tmodel_set(struct tmodel *t, const char *name, const char *value)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(cm_config_set(t->def, name, value, t->cfg, &err) == 0, "%s=%s: %s", name, value, err.message);
}

static void __attribute__((unused))
tmodel_eval(struct tmodel *t)
{
	memset(&t->err, 0, sizeof t->err);
	ck_assert_msg(cm_model_eval(t->m, t->cfg, t->scratch, &t->r, &t->err) == 0, "eval: %s: %s",
	    t->err.path, t->err.message);
}

/* The tests' pseudo-random numbers: xorshift64 over a state each test
 * program keeps (so every program's sequence is its own and repeatable). */
static __attribute__((unused)) uint64_t
test_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Uniform-ish integer in [lo, hi] (modulo bias is fine for tests). */
static __attribute__((unused)) int64_t
test_rand_in(uint64_t *state, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(test_xorshift(state) % (uint64_t)(hi - lo + 1));
}

/* Runs a suite and returns the process status; nofork keeps printed
 * tables in order (the accuracy tests print their comparisons). */
static int __attribute__((unused))
run_suite(Suite *s, int nofork)
{
	SRunner *r = srunner_create(s);
	int failed;

	/* templates and the device catalog from the source tree, also when a
	 * test program is run by hand from it (make check sets this itself) */
	if (getenv("DNNSAT_DATA_DIR") == NULL) {
		const char *top = getenv("top_srcdir");
		char dir[1024];

		snprintf(dir, sizeof dir, "%s/schemas", top ? top : ".");
		setenv("DNNSAT_DATA_DIR", dir, 0);
	}
	if (nofork)
		srunner_set_fork_status(r, CK_NOFORK);
	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed == 0 ? 0 : 1;
}

/* Whether the Z3 cross-checks run (the tests that compare Z3's answers
 * with the engine's or brute force's): not when DNNSAT_TEST_Z3=0.
 * scripts/test.sh sets it for its sanitized pass and runs the tests that
 * hold cross-checks again in its plain pass, so that the cross-checks run
 * once, on the plain build: Z3 is not instrumented, but ASan's allocator
 * serves its mallocs too, and made them 3-6 times slower (the ResNet
 * optimization of test_z3c 80 s against 14). Our Z3 glue is still checked
 * for memory errors in the sanitized pass (test_z3c's other cases,
 * test_answer_z3, the service's Z3 answers). A skip is said on stdout, once
 * per test process. */
static __attribute__((unused)) int
test_z3_enabled(void)
{
	static int said;
	const char *v = getenv("DNNSAT_TEST_Z3");

	if (v == NULL || strcmp(v, "0") != 0)
		return 1;
	if (!said)
		printf("Z3 cross-checks skipped (DNNSAT_TEST_Z3=0)\n");
	said = 1;
	return 0;
}

/* Path of a file under the source tree. */
static __attribute__((unused)) const char *
src_path(const char *rel)
{
	static char buf[4][1024];
	static int i;
	const char *top = getenv("top_srcdir");

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", top ? top : ".", rel);
	return buf[i];
}

/* The query over the 24-layer transformer example (1.3e30 configurations):
 * its model and space files, an A100 80GB, 40 GiB, mixed bf16 with AdamW. */
static __attribute__((unused)) json_t *
transformer24_request(void)
{
	return json_pack("{s:o,s:o,s:s,s:{s:s},s:{s:s,s:s}}",
	    "model", json_load_file(src_path("examples/models/transformer24.json"), 0, NULL),
	    "space", json_load_file(src_path("examples/spaces/transformer24.json"), 0, NULL),
	    "device", "a100-80gb", "budgets", "memory", "40GiB", "workload", "dtype", "mixed_bf16", "optimizer", "adamw");
}

/* A query on one of the example models and spaces with a memory budget. */
static __attribute__((unused)) json_t *
example_query(const char *name, const char *memory)
{
	char m[256], s[256];

	snprintf(m, sizeof m, "examples/models/%s.json", name);
	snprintf(s, sizeof s, "examples/spaces/%s.json", name);
	return json_pack("{s:o,s:o,s:s,s:{s:s}}", "model", json_load_file(src_path(m), 0, NULL),
	    "space", json_load_file(src_path(s), 0, NULL), "device", "a100-40gb", "budgets", "memory", memory);
}

/* Loads the device catalog of schemas/ into *cat (the test fails if it
 * cannot). */
static void __attribute__((unused))
test_catalog_load(struct cm_device_catalog *cat)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(cm_catalog_load(src_path("schemas/devices.json"), cat, &err) == 0, "%s", err.message);
}

#endif
