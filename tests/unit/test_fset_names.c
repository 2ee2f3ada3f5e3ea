/*
 * test_fset_names.c - random nested spaces whose options' children share keys:
 * every answer by parameter address (extremes, explanations, heatmaps,
 * reduced addresses) against brute force, and Z3's set of models (unless
 * DNNSAT_TEST_Z3=0).
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

/* ---- nested spaces whose options' children share names ---- */

/* A random MLP query whose nested choices give several parameters the same
 * key (and the same short form "parent/key"): "activation" (and, in the
 * second shape, "dropout" inside it, two deep) with an option per value of
 * the categorical hyperparameter, each holding its own "hidden", "depth"
 * or "dropout". Every parameter is bound to a hyperparameter with an
 * explicit grid, so that Z3's set of models is the same set. */
static json_t *
random_nested_query(int i)
{
	static const int batches[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
	static const int hiddens[] = { 64, 128, 320, 576, 1024, 1600 };
	static const int depths[] = { 1, 2, 3, 4, 5 };
	const char *mem[] = { "2GiB", "3GiB", "4GiB", "6GiB", "8GiB" };
	json_t *space = json_object(), *q, *relu, *gelu, *tanh_opt;

	json_object_set_new(space, "batch_size", choice(pick(batches, 11, 3)));
	relu = json_pack("{s:s,s:o}", "_name", "relu", "hidden", choice(pick(hiddens, 6, 3)));
	gelu = json_pack("{s:s,s:o}", "_name", "gelu", "hidden", json_pack("{s:s,s:[i,i,i]}", "_type", "quniform",
	    "_value", 64, 64 + 256 * (int)(1 + rnd(4)), 256));
	tanh_opt = json_pack("{s:s}", "_name", "tanh");
	switch (i % 3) {
	case 0:         /* one deep: hidden and depth in two options each */
		json_object_set_new(relu, "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1,
		    2 + (int)rnd(4)));
		json_object_set_new(gelu, "depth", choice(pick(depths, 5, 3)));
		json_object_set_new(space, "activation", choice(json_pack("[o,o,o]", relu, gelu, tanh_opt)));
		break;
	case 1:         /* two deep: dropout's options in two activations, depth under three of them */
		json_object_set_new(relu, "dropout", choice(json_pack("[{s:s,s:o},{s:s,s:o}]",
		    "_name", "none", "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1, 2 + (int)rnd(4)),
		    "_name", "0.5", "depth", choice(pick(depths, 5, 3)))));
		json_object_set_new(gelu, "dropout", choice(json_pack("[{s:s,s:o},{s:s}]",
		    "_name", "0.1", "depth", choice(pick(depths, 5, 2)), "_name", "none")));
		json_object_set_new(space, "activation", choice(json_pack("[o,o,o]", relu, gelu, tanh_opt)));
		break;
	default:        /* two deep the other way round, a top-level depth beside nested ones */
		json_object_set_new(tanh_opt, "hidden", choice(pick(hiddens, 6, 2)));
		json_object_set_new(space, "dropout", choice(json_pack("[{s:s,s:o},{s:s,s:o}]",
		    "_name", "0.1", "activation", choice(json_pack("[o,o]", relu, gelu)),
		    "_name", "none", "activation", choice(json_pack("[o]", tanh_opt)))));
		json_object_set_new(space, "depth", choice(pick(depths, 5, 3)));
		break;
	}
	q = json_pack("{s:s,s:o,s:s,s:{s:s}}", "model", "mlp", "space", space, "device", "a100-40gb",
	    "budgets", "memory", mem[rnd(5)]);
	if (rnd(2))
		json_object_set_new(q, "constraints", json_pack("[s]", "hidden * depth <= 1500"));
	return q;
}

/* The feasible configurations of bf (keys of key_of) as position vectors
 * (nbf rows of e->nvars). */
static int64_t *
bf_positions(const struct fs_engine *e, char **bf, int64_t nbf)
{
	int64_t *all = malloc(sizeof *all * (size_t)(nbf * e->nvars + 1));

	for (int64_t k = 0; k < nbf; k++) {
		const char *s = bf[k];
		for (int w = 0; w < e->nvars; w++, s++)
			all[k * e->nvars + w] = strtoll(s, (char **)&s, 10);
	}
	return all;
}

/*
 * ans_explain_value on every value of every parameter, by its address:
 * kept exactly when some feasible configuration has it (the parameter
 * taking part), the answer naming the address. By the short form: the
 * same answer when only one parameter has it, an error listing the
 * addresses when several do.
 */
static void
check_explain_values(struct fs_engine *e, struct sq_query *q, const int64_t *all, int64_t nbf, const char *what)
{
	struct dn_error err;

	for (int v = 0; v < e->nvars; v++) {
		const struct sp_dim *d = &q->space.dims[e->vars[v].dim];
		int shared = 0;
		for (int k = 0; k < q->space.ndims; k++)
			shared += strcmp(q->space.dims[k].short_name, d->short_name) == 0;
		for (int64_t p = 0; p < e->vars[v].n; p++) {
			json_t *val = sp_value_json(d, fs_dim_index_of(e, v, p)), *out;
			int want = 0;
			for (int64_t k = 0; k < nbf && !want; k++)
				want = all[k * e->nvars + v] == p;
			memset(&err, 0, sizeof err);
			out = ans_explain_value(e, q, d->name, val, 0, &err);
			ck_assert_msg(out != NULL, "%s: explain %s: %s", what, d->name, err.message);
			ck_assert_msg(json_is_true(json_object_get(out, "kept")) == want, "%s: explain %s = position %lld: "
			    "kept %d, brute force %d", what, d->name, (long long)p, !want, want);
			ck_assert_str_eq(json_string_value(json_object_get(out, "param")), d->name);
			json_decref(out);
			memset(&err, 0, sizeof err);
			out = ans_explain_value(e, q, d->short_name, val, 0, &err);
			if (shared == 1) {
				ck_assert_msg(out != NULL, "%s: explain %s: %s", what, d->short_name, err.message);
				ck_assert_int_eq(json_is_true(json_object_get(out, "kept")), want);
				ck_assert_str_eq(json_string_value(json_object_get(out, "param")), d->name);
			} else {
				ck_assert_msg(out == NULL && err.code == DN_EINVAL && strcmp(err.path, "param") == 0 &&
				    strstr(err.message, "is ambiguous: ") != NULL && strstr(err.message, d->name) != NULL,
				    "%s: explain %s: %s", what, d->short_name, err.message);
			}
			json_decref(out);
			json_decref(val);
		}
	}
}

/* ans_heatmap on every pair of parameters: a cell is true exactly when some
 * feasible configuration has both values (both taking part). */
static void
check_heatmaps(struct fs_engine *e, struct sq_query *q, const int64_t *all, int64_t nbf, const char *what)
{
	struct dn_error err;

	for (int x = 0; x < e->nvars; x++)
		for (int y = 0; y < e->nvars; y++) {
			const char *xn = q->space.dims[e->vars[x].dim].name, *yn = q->space.dims[e->vars[y].dim].name;
			json_t *out, *rows;
			if (x == y)
				continue;
			memset(&err, 0, sizeof err);
			out = ans_heatmap(e, q, xn, yn, 0, &err);
			ck_assert_msg(out != NULL, "%s: heat map %s x %s: %s", what, xn, yn, err.message);
			ck_assert_str_eq(json_string_value(json_object_get(out, "x")), xn);
			ck_assert_str_eq(json_string_value(json_object_get(out, "y")), yn);
			rows = json_object_get(out, "feasible");
			for (int64_t py = 0; py < e->vars[y].n; py++)
				for (int64_t px = 0; px < e->vars[x].n; px++) {
					int want = 0;
					for (int64_t k = 0; k < nbf && !want; k++)
						want = all[k * e->nvars + x] == px && all[k * e->nvars + y] == py;
					ck_assert_msg(json_is_true(json_array_get(json_array_get(rows, (size_t)py), (size_t)px)) ==
					    want, "%s: heat map %s x %s at (%lld, %lld): brute force %d", what, xn, yn,
					    (long long)px, (long long)py, want);
				}
			json_decref(out);
		}
}

/*
 * The reduced space against brute force: parsed again, each of its
 * parameters is found in the query's space by its address and keeps
 * exactly the values some feasible configuration gives it; a parameter
 * with no such value is gone (its option removed).
 */
static void
check_reduced_addresses(struct fs_engine *e, struct sq_query *q, const int64_t *all, int64_t nbf,
    const char *what)
{
	struct fs_projection p;
	struct sp_space r;
	struct dn_error err;
	json_t *red;
	int seen = 0;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_project(e, &p, &err), 0);
	red = fs_reduced_space(e, &p, &err);
	fs_projection_free(&p);
	if (nbf == 0) {
		ck_assert_ptr_null(red);
		return;
	}
	ck_assert_msg(red != NULL, "%s: %s", what, err.message);
	ck_assert_msg(sp_parse(red, &r, &err) == 0, "%s: the reduced space: %s: %s", what, err.path, err.message);
	for (int v = 0; v < e->nvars; v++) {
		const struct sp_dim *d = &q->space.dims[e->vars[v].dim];
		int k = sp_dim_named(&r, d->name), nwant = 0;
		for (int64_t pv = 0; pv < e->vars[v].n; pv++) {
			json_t *val = sp_value_json(d, fs_dim_index_of(e, v, pv));
			int want = 0, got = 0;
			for (int64_t c = 0; c < nbf && !want; c++)
				want = all[c * e->nvars + v] == pv;
			for (int64_t i = 0; k >= 0 && i < r.dims[k].nvalues && !got; i++) {
				json_t *rv = sp_value_json(&r.dims[k], i);
				got = json_equal(rv, val) || (json_is_number(rv) && json_is_number(val) &&
				    json_number_value(rv) == json_number_value(val));
				json_decref(rv);
			}
			ck_assert_msg(got == want, "%s: the reduced %s %s position %lld, brute force %s", what, d->name,
			    got ? "keeps" : "lacks", (long long)pv, want ? "has it" : "has not");
			nwant += want;
			json_decref(val);
		}
		ck_assert_msg((k >= 0) == (nwant > 0), "%s: %s %s the reduced space", what, d->name,
		    k >= 0 ? "is still in" : "is missing from");
		if (k >= 0) {
			ck_assert_int_eq(r.dims[k].nvalues, nwant);
			seen++;
		}
	}
	ck_assert_int_eq(seen, r.ndims);
	sp_free(&r);
	json_decref(red);
}

/*
 * Nested spaces whose options' children share keys, one and two choices
 * deep: the count, k-th, walk, projections and Z3's set of models
 * (check_random_query), the largest and smallest values per value of every
 * other parameter (by address), explanations of every value, heat maps
 * and the reduced space, all against brute force.
 */
START_TEST(test_nested_names_against_brute_force)
{
	int answers = 0, n = 36, nested = 0;
	double z3_s = 0;

	load_catalog();
	for (int i = 0; i < n; i++) {
		json_t *req = random_nested_query(i);
		char *dump = json_dumps(req, JSON_COMPACT), what[4096], **bf;
		struct sq_query q;
		struct fs_engine e;
		struct dn_error err;
		int64_t nbf, *all;

		check_random_query(req, i, 1, &z3_s);
		memset(&err, 0, sizeof err);
		snprintf(what, sizeof what, "nested case %d: %s", i, dump);
		free(dump);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s: %s", what, err.path, err.message);
		ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s: %s", what, err.message);
		for (int k = 0; k < q.space.ndims; k++)
			nested += q.space.dims[k].depth >= 2;
		nbf = brute(&e, &bf);
		all = bf_positions(&e, bf, nbf);
		answers += check_extremes(&e, &q, bf, nbf, what);
		check_explain_values(&e, &q, all, nbf, what);
		check_heatmaps(&e, &q, all, nbf, what);
		ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
		check_reduced_addresses(&e, &q, all, nbf, what);
		free(all);
		free_list(bf, nbf);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
	}
	ck_assert_int_gt(nested, 0);
	printf("%d nested queries with shared names agree with brute force%s (%d largest and smallest values)\n",
	    n, test_z3_enabled() ? " and Z3" : "", answers);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fset_names");
	TCase *t;

	t = tcase_create("names");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_nested_names_against_brute_force);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
