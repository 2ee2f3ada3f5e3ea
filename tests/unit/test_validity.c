/*
 * test_validity.c - the cost model's validity against PyTorch's own verdict.
 *
 * tests/reference/validity/validity_torch.jsonl holds configurations of every
 * built-in template and every example model, each run once in PyTorch by
 * tests/reference/validity/gen_validity.py (valid: built and ran a forward
 * pass; invalid: raised, with the exception kept). Every one must get the
 * same verdict here, and a valid one the same output shape; the lines marked
 * beyond_range (a resolution below the declared minimum, which a request may
 * not use) are set directly, to check the validity expression itself there. Also: the
 * position-table rule is reported by name for the published presets
 * (bert-base beyond 512 tokens, gpt2 beyond 1024).
 */
#include "test_util.h"

#define MAX_MISMATCH_SHOWN 12

/* One model file's build, kept while consecutive fixture lines use it. */
struct vmodel {
	char file[256];
	struct tmodel t;
};

static void
vmodel_load(struct vmodel *vm, const char *file, const struct cm_workload *wl)
{
	if (strcmp(vm->file, file) == 0)
		return;
	if (vm->t.def != NULL)
		tmodel_free(&vm->t);
	memset(&vm->t, 0, sizeof vm->t);
	snprintf(vm->file, sizeof vm->file, "%s", file);
	ck_assert_msg(cm_def_load_file(src_path(file), &vm->t.def, &vm->t.err) == 0, "%s: %s", file,
	    vm->t.err.message);
	ck_assert_msg(tmodel_build_def(&vm->t, wl) == 0, "%s: %s: %s", file, vm->t.err.path, vm->t.err.message);
}

/* Sets a configuration without the declared min/max (which refuse it as a
 * request): the validity expression is compared beyond the declared ranges. */
static void
config_set_raw(const struct cm_model_def *def, const json_t *obj, union expr_val *vals)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		int i = cm_def_find_hp(def, key);
		const struct cm_hparam *h;
		ck_assert_msg(i >= 0, "no hyperparameter %s", key);
		h = &def->hps[i];
		if (h->type == CM_HP_INT)
			vals[i].i = json_integer_value(v);
		else if (h->type == CM_HP_REAL)
			vals[i].r = json_number_value(v);
		else {
			int found = 0;
			for (int j = 0; j < h->nvalues; j++)
				if (strcmp(h->values[j], json_string_value(v)) == 0) {
					vals[i].i = j;
					found = 1;
				}
			ck_assert_msg(found, "%s: no value %s", key, json_string_value(v));
		}
	}
}

/* Compares one fixture line; returns 1 when dnnsat agrees with PyTorch, else
 * 0 after describing the disagreement in `why`. */
static int
check_line(struct vmodel *vm, const json_t *rec, char *why, size_t len)
{
	const json_t *shape = json_object_get(rec, "shape");
	int want_valid = json_is_true(json_object_get(rec, "valid"));
	struct tmodel *t = &vm->t;
	int64_t got[6];
	int rank;

	cm_config_defaults(t->def, t->cfg);
	memset(&t->err, 0, sizeof t->err);
	if (json_is_true(json_object_get(rec, "beyond_range")))
		config_set_raw(t->def, json_object_get(rec, "config"), t->cfg);
	else
		ck_assert_msg(cm_config_from_json(t->def, json_object_get(rec, "config"), "$.config", t->cfg,
		    &t->err) == 0, "%s: %s", t->err.path, t->err.message);
	if (cm_model_eval(t->m, t->cfg, t->scratch, &t->r, &t->err) != 0) {
		snprintf(why, len, "evaluation failed (%.200s: %.300s)", t->err.path, t->err.message);
		return 0;
	}
	if (t->r.valid != want_valid) {
		if (want_valid)
			snprintf(why, len, "dnnsat: invalid (%s: %s), PyTorch: valid",
			    t->r.violations[0].path, t->r.violations[0].rule);
		else
			snprintf(why, len, "dnnsat: valid, PyTorch: %s",
			    json_string_value(json_object_get(rec, "error")));
		return 0;
	}
	if (!want_valid)
		return 1;
	rank = cm_model_output_shape(t->m, t->scratch, got);
	if ((size_t)rank != json_array_size(shape)) {
		snprintf(why, len, "output rank %d, PyTorch %zu", rank, json_array_size(shape));
		return 0;
	}
	for (int i = 0; i < rank; i++)
		if (got[i] != json_integer_value(json_array_get(shape, (size_t)i))) {
			snprintf(why, len, "output dim %d is %lld, PyTorch %lld", i, (long long)got[i],
			    (long long)json_integer_value(json_array_get(shape, (size_t)i)));
			return 0;
		}
	return 1;
}

START_TEST(test_matches_torch)
{
	FILE *f = fopen(src_path("tests/reference/validity/validity_torch.jsonl"), "r");
	struct cm_workload wl = test_workload(1);
	struct vmodel vm;
	char line[8192], why[600];
	int n = 0, ninvalid = 0, nbeyond = 0, nbad = 0;

	ck_assert_msg(f != NULL, "validity_torch.jsonl is missing");
	memset(&vm, 0, sizeof vm);
	while (fgets(line, sizeof line, f) != NULL) {
		json_error_t jerr;
		json_t *rec = json_loads(line, 0, &jerr);
		ck_assert_msg(rec != NULL, "line %d: %s", n + 1, jerr.text);
		vmodel_load(&vm, json_string_value(json_object_get(rec, "file")), &wl);
		n++;
		ninvalid += !json_is_true(json_object_get(rec, "valid"));
		nbeyond += json_is_true(json_object_get(rec, "beyond_range"));
		if (!check_line(&vm, rec, why, sizeof why)) {
			if (nbad < MAX_MISMATCH_SHOWN) {
				char *cfg = json_dumps(json_object_get(rec, "config"), JSON_COMPACT | JSON_SORT_KEYS);
				fprintf(stderr, "line %d: %s %s: %s\n", n, json_string_value(json_object_get(rec, "model")),
				    cfg, why);
				free(cfg);
			}
			nbad++;
		}
		json_decref(rec);
	}
	fclose(f);
	if (vm.t.def != NULL)
		tmodel_free(&vm.t);
	fprintf(stderr, "validity vs PyTorch: %d configurations (%d beyond the declared ranges), %d invalid, "
	    "%d disagreements\n", n, nbeyond, ninvalid, nbad);
	ck_assert_int_ge(n, 2000);
	ck_assert_int_eq(nbad, 0);
}
END_TEST

/* The published transformers just beyond their position tables. */
START_TEST(test_position_tables)
{
	static const struct { const char *preset, *seq_len, *table; int64_t rows; } cases[] = {
		{ "bert-base", "513", "$.layers[2].position_embeddings", 512 },
		{ "bert-base", "5000", "$.layers[2].position_embeddings", 512 },
		{ "gpt2", "1025", "$.layers[1].wpe", 1024 },
		{ "gpt2", "2048", "$.layers[1].wpe", 1024 },
	};
	struct cm_workload wl = test_workload(0);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct tmodel t;
		int found = 0;
		ck_assert_msg(tmodel_from_preset(&t, cases[i].preset, &wl) == 0, "%s", t.err.message);
		tmodel_set(&t, "batch_size", "1");
		tmodel_set(&t, "seq_len", cases[i].seq_len);
		tmodel_eval(&t);
		ck_assert_msg(!t.r.valid, "%s seq_len=%s is valid", cases[i].preset, cases[i].seq_len);
		for (int v = 0; v < t.r.nviolations && v < 8; v++) {
			const struct cm_violation *x = &t.r.violations[v];
			if (strcmp(x->path, cases[i].table) != 0 || strstr(x->rule, "id_range <= num_embeddings") == NULL)
				continue;
			ck_assert_int_eq(x->nvals, 2);
			ck_assert_str_eq(x->names[0], "id_range");
			ck_assert_int_eq(x->vals[0].i, atoll(cases[i].seq_len));
			ck_assert_str_eq(x->names[1], "num_embeddings");
			ck_assert_int_eq(x->vals[1].i, cases[i].rows);
			found = 1;
		}
		ck_assert_msg(found, "%s seq_len=%s: no position-table violation", cases[i].preset, cases[i].seq_len);
		/* at the table's size it is valid again */
		tmodel_set(&t, "seq_len", cases[i].rows == 512 ? "512" : "1024");
		tmodel_eval(&t);
		ck_assert_msg(t.r.valid, "%s at its table size is invalid", cases[i].preset);
		tmodel_free(&t);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("validity");
	TCase *t = tcase_create("torch");

	tcase_set_timeout(t, 300);
	tcase_add_test(t, test_matches_torch);
	tcase_add_test(t, test_position_tables);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
