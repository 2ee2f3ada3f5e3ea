/*
 * test_fset_extreme.c - the largest and smallest feasible values (ans_extreme):
 * huge grids, random, continuous and nested queries against brute force,
 * the check's tables where a node overflows, and the errors a user can
 * make.
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

/* A space with a nested choice whose option holds a numeric parameter,
 * and parameters that pass through with numbers listed out of order (one
 * of them nested): their positions are not sorted by value. */
static json_t *
nested_extreme_query(int i)
{
	static const int batches[] = { 1, 4, 16, 64, 256, 1024 };
	json_t *req = json_pack("{s:o,s:s,s:{s:f}}", "model", json_loads(real_model, 0, NULL), "device", "t4",
	    "budgets", "params", 2e5 * (double)(3 + rnd(6))), *space = json_object();

	json_object_set_new(space, "batch_size", choice(pick(batches, 6, 4)));
	json_object_set_new(space, "mult", choice(json_pack("[f,f,f,f]", 2.0, 0.5, 1.5, 1.0)));
	json_object_set_new(space, "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1,
	    2 + (int)rnd(4)));
	json_object_set_new(space, "lr", choice(json_pack("[f,f,f,f]", 0.5, 0.001, 0.01, 0.1)));
	json_object_set_new(space, "head", choice(json_pack("[{s:s},{s:s,s:o,s:o}]", "_name", "small", "_name", "wide",
	    "mult2", choice(json_pack("[f,f,f]", 0.75, 0.25, 0.5)), "dropout", choice(json_pack("[f,f]", 0.5, 0.1)))));
	if (i % 2)
		json_object_set_new(req, "budgets", json_pack("{s:f,s:s}", "params", 1e6, "memory", "1300MiB"));
	json_object_set_new(req, "space", space);
	return req;
}

/* A query of a two-layer MLP over batch n and width w (the space and the
 * budgets given as JSON members); new reference. */
static json_t *
wide2_query(const char *space_and_budgets)
{
	char text[2048];

	snprintf(text, sizeof text,
	    "{\"model\": {\"dnnsat_model\": 1, \"name\": \"wide2\","
	    "  \"hyperparameters\": {\"n\": {\"type\": \"int\", \"default\": 1, \"min\": 1},"
	    "                       \"w\": {\"type\": \"int\", \"default\": 64, \"min\": 1}},"
	    "  \"inputs\": [{\"shape\": [\"n\", 1024]}],"
	    "  \"layers\": [{\"op\": \"linear\", \"out_features\": \"w\"}, {\"op\": \"relu\"},"
	    "             {\"op\": \"linear\", \"out_features\": 10}]},"
	    " %s}", space_and_budgets);
	return json_loads(text, 0, NULL);
}

/* A huge grid (10^12 batch sizes) per width: the largest batch fits and the
 * next one does not, found in a few searches; the smallest is 1. */
START_TEST(test_extreme_huge_grid)
{
	json_t *req = wide2_query(
	    " \"space\": {\"n\": {\"_type\": \"randint\", \"_value\": [1, 1000000000000]},"
	    "           \"w\": {\"_type\": \"choice\", \"_value\": [4096, 256, 1024]}},"
	    " \"budgets\": {\"memory\": \"8GiB\"}"), *big, *small, *row;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	size_t i;
	double t;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	t = fs_now();
	big = ans_extreme(&e, &q, "n", "w", ANS_LARGEST, 30, &err);
	ck_assert_msg(big != NULL, "%s", err.message);
	small = ans_extreme(&e, &q, "n", "w", ANS_SMALLEST, 30, &err);
	ck_assert_msg(small != NULL, "%s", err.message);
	ck_assert_msg(fs_now() - t < 10, "%.1f s", fs_now() - t);
	ck_assert_int_eq(json_array_size(big), 3);
	json_array_foreach(big, i, row) {
		json_t *n = json_object_get(row, "n"), *w = json_object_get(row, "w");
		int64_t pos[2];
		char cfg[128];
		ck_assert(json_is_integer(n) && json_is_integer(w));
		ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(small, i), "n")), 1);
		ck_assert_int_gt(json_integer_value(n), 1000);
		for (int next = 0; next < 2; next++) {
			json_t *c;
			snprintf(cfg, sizeof cfg, "{\"n\": %lld, \"w\": %lld}", (long long)json_integer_value(n) + next,
			    (long long)json_integer_value(w));
			c = json_loads(cfg, 0, NULL);
			ck_assert_int_eq(fs_from_json(&e, c, pos, &err), 0);
			ck_assert_msg(fs_feasible_at(&e, pos) == !next, "%s", cfg);
			json_decref(c);
		}
	}
	/* wider layers leave room for fewer samples; rows in the order of w's positions */
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(big, 0), "w")), 256);
	ck_assert_int_gt(json_integer_value(json_object_get(json_array_get(big, 0), "n")),
	    json_integer_value(json_object_get(json_array_get(big, 2), "n")));
	json_decref(big);
	json_decref(small);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* One query against brute force (check_extremes); takes req. Returns the
 * number of answers checked. */
static int
extreme_case(json_t *req, int i)
{
	char *dump = json_dumps(req, JSON_COMPACT), what[4096], **bf;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int64_t nbf;
	int answers;

	memset(&err, 0, sizeof err);
	snprintf(what, sizeof what, "extreme case %d: %s", i, dump);
	free(dump);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s: %s", what, err.path, err.message);
	ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s: %s", what, err.message);
	nbf = brute(&e, &bf);
	answers = check_extremes(&e, &q, bf, nbf, what);
	free_list(bf, nbf);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	return answers;
}

/* The random queries of the engine's tests, those with continuous
 * hyperparameters (their discrete parameters), and nested ones. */
START_TEST(test_extreme_against_brute_force)
{
	int answers = 0, n = 72;

	load_catalog();
	for (int i = 0; i < n; i++)
		answers += extreme_case(i < 48 ? random_query(i) : i < 60 ? random_real_query(i) :
		    nested_extreme_query(i), i);
	ck_assert_int_ge(answers, 2000);
	printf("%d queries: %d largest and smallest values agree with brute force\n", n, answers);
	cm_catalog_free(&cat);
}
END_TEST

/* Whether some configuration fits with continuous var c at exactly x (the
 * other continuous vars on their grids), by brute force. */
static int
fits_at(struct fs_engine *e, int c, double x)
{
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	const struct fs_cvar *cv = &e->cvars[c];
	double save_l = cv->L, save_h = cv->H, best;
	int found = 0;

	for (int v = 0; v < e->nvars; v++) {
		int par = e->vars[v].parent;
		pos[v] = (par < 0 || pos[par] == e->vars[v].active_pos) ? 0 : -1;
	}
	/* real_exists samples var c over [L, H]: a range of one value is x alone */
	e->cvars[c].L = e->cvars[c].H = x;
	do {
		if (cv->parent >= 0 && pos[cv->parent] != cv->active_pos)
			continue;
		found = real_exists(e, pos, 0, &best, NULL, NULL);
	} while (!found && fs_increment(e, pos) == 0);
	e->cvars[c].L = save_l;
	e->cvars[c].H = save_h;
	free(pos);
	return found;
}

/* The largest and smallest values of continuous parameters, overall and
 * per batch size, against brute force over their grids (the engine's
 * default resolution); a parameter that passes through answers its range's
 * ends where anything fits; explanations at grid values and between them
 * agree with evaluation at exactly that value. */
START_TEST(test_extreme_continuous)
{
	int answers = 0, explained = 0;

	load_catalog();
	for (int i = 0; i < 9; i++) {
		json_t *req = random_real_query(i);
		char *dump = json_dumps(req, JSON_COMPACT), what[4096];
		struct sq_query q;
		struct fs_engine e;
		struct dn_error err;
		int u, nrows;
		int64_t *pos;
		/* per continuous var (and the passthrough "lr", slot 8): per row
		 * (row nrows: overall) the smallest and largest fitting values */
		double lo[9][64], hi[9][64];

		memset(&err, 0, sizeof err);
		snprintf(what, sizeof what, "continuous extreme case %d: %s", i, dump);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", what, err.message);
		ck_assert_int_eq(fs_init(&e, &q, &err), 0);
		u = fs_var_named(&e, "batch_size");
		ck_assert(u >= 0 && e.vars[u].n < 63);
		nrows = (int)e.vars[u].n;
		for (int c = 0; c <= 8; c++)
			for (int r = 0; r <= nrows; r++)
				lo[c][r] = hi[c][r] = NAN;
		pos = calloc((size_t)e.nvars + 1, sizeof *pos);
		for (int v = 0; v < e.nvars; v++) {
			int par = e.vars[v].parent;
			pos[v] = (par < 0 || pos[par] == e.vars[v].active_pos) ? 0 : -1;
		}
		do {
			double best, hl[8], hh[8];
			for (int c = 0; c < e.ncvars; c++)
				hl[c] = hh[c] = NAN;
			if (!real_exists(&e, pos, 0, &best, hl, hh))
				continue;
			for (int c = 0; c < e.ncvars; c++)
				for (int k = 0; k < 2 && !isnan(hl[c]); k++) {
					int r = k ? nrows : (int)pos[u];
					lo[c][r] = isnan(lo[c][r]) ? hl[c] : fmin(lo[c][r], hl[c]);
					hi[c][r] = isnan(hi[c][r]) ? hh[c] : fmax(hi[c][r], hh[c]);
				}
			lo[8][pos[u]] = lo[8][nrows] = 1e-4;     /* "lr": [1e-4, 1e-1] */
			hi[8][pos[u]] = hi[8][nrows] = 1e-1;
		} while (fs_increment(&e, pos) == 0);
		for (int c = 0; c <= e.ncvars; c++) {
			const char *name = c < e.ncvars ? q.space.dims[e.cvars[c].dim].name : "lr";
			int slot = c < e.ncvars ? c : 8;
			if (c == e.ncvars && i % 3 != 0)
				break;  /* "lr" is in MobileNetV2's queries only */
			for (int goal = ANS_SMALLEST; goal <= ANS_LARGEST; goal++)
				for (int per = 0; per < 2; per++) {
					json_t *rows = ans_extreme(&e, &q, name, per ? "batch_size" : NULL, (enum ans_goal)goal,
					    0, &err);
					ck_assert_msg(rows != NULL, "%s: %s: %s", what, name, err.message);
					ck_assert_int_eq((int)json_array_size(rows), per ? nrows : 1);
					for (int r = 0; r < (per ? nrows : 1); r++) {
						json_t *got = json_object_get(json_array_get(rows, (size_t)r), name);
						double want = (goal == ANS_LARGEST ? hi : lo)[slot][per ? r : nrows];
						ck_assert_msg(isnan(want) ? json_is_null(got) : json_is_number(got) &&
						    json_number_value(got) == want, "%s: %s %s per %s, row %d: %.17g, brute force %.17g",
						    what, goal == ANS_LARGEST ? "largest" : "smallest", name, per ? "batch_size" : "-",
						    r, json_is_number(got) ? json_number_value(got) : NAN, want);
						answers++;
					}
					json_decref(rows);
				}
		}
		/* explanations: the largest value and the grid value above it, and values between */
		for (int c = 0; c < e.ncvars; c++) {
			const struct fs_cvar *cv = &e.cvars[c];
			const char *name = q.space.dims[cv->dim].name;
			double xs[4];
			int nx = 0, top = !isnan(hi[c][nrows]);
			if (top) {
				xs[nx++] = hi[c][nrows];
				if (hi[c][nrows] < cv->H) {
					int64_t g = 0;
					while (fs_cell_value(cv, g, cv->bits) <= hi[c][nrows])
						g++;
					xs[nx++] = fs_cell_value(cv, g, cv->bits);
				}
			}
			xs[nx++] = cv->L + (cv->H - cv->L) * (double)rnd(1000) / 1000.0;
			xs[nx++] = cv->L + (cv->H - cv->L) * (double)rnd(1000) / 1000.0;
			for (int k = 0; k < nx; k++) {
				int want = fits_at(&e, c, xs[k]);
				json_t *val = json_real(xs[k]), *out = ans_explain_value(&e, &q, name, val, 0, &err);
				ck_assert_msg(out != NULL, "%s: explain %s = %g: %s", what, name, xs[k], err.message);
				ck_assert_msg(json_is_true(json_object_get(out, "kept")) == want, "%s: explain %s = %.17g: "
				    "kept %d, brute force %d", what, name, xs[k], !want, want);
				ck_assert_int_eq(json_array_size(json_object_get(out, "because")) > 0, !want);
				if (k == 0 && top)
					ck_assert_msg(want, "%s: the largest value fits", what);
				if (k == 1 && top && hi[c][nrows] < cv->H)
					ck_assert_msg(!want, "%s: the grid value above the largest fits", what);
				json_decref(out);
				json_decref(val);
				explained++;
			}
		}
		free(pos);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
		free(dump);
	}
	ck_assert_int_ge(answers, 100);
	printf("9 queries: %d largest and smallest continuous values and %d explanations agree with brute force\n",
	    answers, explained);
	cm_catalog_free(&cat);
}
END_TEST

/* The check's tables (fset_check.c) where a tabulated node overflows: at
 * those combinations fs_check_fill declines, and the check answers the
 * overflow as the whole tape does; elsewhere it answers normally. */
START_TEST(test_check_overflow_rows)
{
	json_t *req = wide2_query(
	    " \"space\": {\"n\": {\"_type\": \"choice\", \"_value\": [8, 1000000000000000]},"
	    "           \"w\": {\"_type\": \"choice\", \"_value\": [256, 100000000]}},"
	    " \"budgets\": {\"memory\": \"8GiB\"}");
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	union expr_val *scratch, *vals, *cfg;
	int faults = 0;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	for (int k = 0; k < e.ncheck_groups; k++)
		faults += e.check_groups[k].fault != NULL;
	ck_assert_msg(faults > 0, "no table marks an overflow");
	scratch = malloc(sizeof *scratch * (size_t)ans_scratch_len(&e));
	vals = malloc(sizeof *vals * (size_t)e.nnodes_graph);
	cfg = malloc(sizeof *cfg * ((size_t)q.def->nhps + 1));
	for (int n = 0; n < 2; n++)
		for (int w = 0; w < 2; w++) {
			int64_t pos[2];
			json_t *c = json_pack("{s:I,s:I}", "n", n ? (json_int_t)1000000000000000 : 8, "w",
			    w ? (json_int_t)100000000 : 256);
			size_t len;
			char *text;
			int whole;
			pos[fs_var_named(&e, "n")] = n;
			pos[fs_var_named(&e, "w")] = w;
			fs_config_of(&e, pos, cfg);
			whole = expr_tape_eval(&e.tape, e.g, cfg, vals, NULL);
			memset(&err, 0, sizeof err);
			text = ans_check_text(&e, c, scratch, 1, 0, NULL, &len, &err);
			if (whole != 0) {
				ck_assert_msg(text == NULL && strstr(err.message, "overflows 64 bits") != NULL,
				    "n %d w %d: %s", n, w, text ? text : err.message);
				ck_assert_str_eq(err.path, "config");
			} else {
				ck_assert_msg(text != NULL && strstr(text, "\"feasible\":") != NULL, "n %d w %d: %s", n, w,
				    err.message);
				ck_assert_int_eq(fs_check_fill(&e, pos, vals), 0);
			}
			faults += whole != 0;
			free(text);
			json_decref(c);
		}
	ck_assert_int_ge(faults, 2);    /* a marked table, and a configuration that overflows */
	free(scratch);
	free(vals);
	free(cfg);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* What a user can get wrong: each error names its field. */
START_TEST(test_extreme_errors)
{
	static const struct { const char *param, *per, *path, *msg; int code; } cases[] = {
		{ "nope", NULL, "param", "no parameter \"nope\"", DN_ENOENT },
		{ "batch_size", "nope", "per", "no parameter \"nope\"", DN_ENOENT },
		{ "block", NULL, "param", "not numbers (\"basic\"): they have no order", DN_EINVAL },
		{ "noise", NULL, "param", "\"noise\" is normal: its values are unbounded", DN_EINVAL },
		{ "batch_size", "lr", "per", "\"lr\" is continuous (loguniform): one row per value", DN_EINVAL },
		{ "width", "width", "per", "\"width\" is param itself", DN_EINVAL },
		{ "width", "seed", "per", "\"seed\" has 5000 values: at most 4096 rows", DN_ERANGE },
		{ "batch_size", "block", NULL, NULL, 0 },       /* a per without order is fine */
		{ "lr", "block", NULL, NULL, 0 },               /* passing through: the range's ends */
	};
	json_t *req = json_loads(
	    "{\"model\": \"resnet18\", \"device\": \"a100-40gb\", \"budgets\": {\"memory\": \"3GiB\"},"
	    " \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [64, 16, 256]},"
	    "  \"width\": {\"_type\": \"choice\", \"_value\": [32, 64]},"
	    "  \"block\": {\"_type\": \"choice\", \"_value\": [\"basic\", \"bottleneck\"]},"
	    "  \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
	    "  \"noise\": {\"_type\": \"normal\", \"_value\": [0, 1]},"
	    "  \"seed\": {\"_type\": \"randint\", \"_value\": [0, 5000]}}}", 0, NULL);
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int goal = ANS_SMALLEST; goal <= ANS_LARGEST; goal++) {
			json_t *rows;
			memset(&err, 0, sizeof err);
			rows = ans_extreme(&e, &q, cases[i].param, cases[i].per, (enum ans_goal)goal, 10, &err);
			if (cases[i].path == NULL) {
				ck_assert_msg(rows != NULL && json_array_size(rows) == 2, "case %zu: %s", i,
				    err.message);
				for (size_t r = 0; strcmp(cases[i].param, "lr") == 0 && r < 2; r++) {
					json_t *y = json_object_get(json_array_get(rows, r), "lr");
					ck_assert(json_is_null(y) || json_real_value(y) == (goal == ANS_LARGEST ? 0.1 : 0.0001));
				}
				json_decref(rows);
				continue;
			}
			ck_assert_msg(rows == NULL, "case %zu accepted", i);
			ck_assert_int_eq(err.code, cases[i].code);
			ck_assert_str_eq(err.path, cases[i].path);
			ck_assert_msg(strstr(err.message, cases[i].msg) != NULL, "case %zu: \"%s\" lacks \"%s\"", i,
			    err.message, cases[i].msg);
		}
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fset_extreme");
	TCase *t;

	t = tcase_create("extreme");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_extreme_errors);
	tcase_add_test(t, test_extreme_huge_grid);
	tcase_add_test(t, test_extreme_against_brute_force);
	tcase_add_test(t, test_extreme_continuous);
	tcase_add_test(t, test_check_overflow_rows);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
