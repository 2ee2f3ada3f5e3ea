/*
 * test_sample.c - what an unfinished count answers (solver/fset_sample.c,
 * ans_samples_any, ans_count_estimated): the estimate of the feasible
 * count and its 95% interval against exact counts on spaces small enough
 * to count (the count cut short by a budget of bound calls, never by the
 * clock; the estimate drawn with a fixed number of draws from fixed seeds,
 * so nothing here depends on the machine's speed), and approximate samples:
 * always feasible, reproducible from their seed, spread over the feasible
 * set, on the small spaces and on the 1.3e30-configuration transformer.
 */
#include "test_util.h"

#include <math.h>

#include "answer.h"
#include "fset.h"
#include "query.h"

static struct cm_device_catalog cat;

static void
load_catalog(void)
{
	test_catalog_load(&cat);
}

/* The MLP template over a 23,232-configuration space. */
static json_t *
mlp_query(const char *memory)
{
	return json_pack("{s:s,s:{s:{s:s,s:[i,i,i,i,i,i,i,i,i,i,i]},s:{s:s,s:[i,i,i]},s:{s:s,s:[i,i]},"
	    "s:{s:s,s:[s,s,s]}},s:s,s:{s:s}}", "model", "mlp", "space",
	    "batch_size", "_type", "choice", "_value", 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
	    "hidden", "_type", "quniform", "_value", 64, 4096, 64,
	    "depth", "_type", "randint", "_value", 1, 12,
	    "activation", "_type", "choice", "_value", "relu", "gelu", "tanh",
	    "device", "a100-40gb", "budgets", "memory", memory);
}

static void
parse(json_t *req, struct sq_query *q)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, q, &err) == 0, "%s: %s", err.path, err.message);
}

/* A count of q stopped after `work` bound calls (must be unfinished). */
static void
cut_count(struct fs_engine *e, struct sq_query *q, int64_t work)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(fs_init(e, q, &err) == 0, "%s", err.message);
	e->work_limit = work;
	ck_assert_int_eq(fs_count_all(e, 0, &err), 0);
	e->work_limit = 0;
	ck_assert_msg(e->lower != e->upper, "the count finished within %lld bound calls", (long long)work);
}

/* The exact count of q; the bound calls it took into *calls (may be NULL). */
static fs_count
exact_count(struct sq_query *q, int64_t *calls)
{
	struct fs_engine e;
	struct dn_error err;
	fs_count c;

	memset(&err, 0, sizeof err);
	ck_assert_msg(fs_init(&e, q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	ck_assert(e.lower == e.upper);
	c = e.lower;
	if (calls != NULL)
		*calls = e.bound_calls;
	fs_free(&e);
	return c;
}

#define SEEDS 60

/*
 * On each query, counts exactly, then cuts a count at several budgets of
 * bound calls (shares of what the exact count took) and estimates it from SEEDS seeds with `draws` draws each:
 * the exact count lies in at least 85% of the 95% intervals (binomially,
 * below 85% of 60 happens with probability 1e-3 when the coverage is
 * 95%; the seeds are fixed, so the test cannot flake), and the mean of
 * the estimates is within 4 standard errors of the truth (the standard
 * error of the mean taken from the intervals' average half-width).
 */
static void
check_coverage(json_t *req, const char *what, const double *cuts, int ncuts, int64_t draws)
{
	struct sq_query q;
	fs_count exact;
	int64_t calls, works[8];

	parse(req, &q);
	exact = exact_count(&q, &calls);
	for (int w = 0; w < ncuts; w++) {
		struct fs_engine e;
		double sum = 0, half = 0, truth = (double)exact;
		int covered = 0;
		works[w] = (int64_t)(cuts[w] * (double)calls) > 0 ? (int64_t)(cuts[w] * (double)calls) : 1;
		cut_count(&e, &q, works[w]);
		for (uint64_t seed = 1; seed <= SEEDS; seed++) {
			struct fs_sampler *s;
			const struct fs_estimate *est;
			struct dn_error err;
			memset(&err, 0, sizeof err);
			ck_assert_msg(fs_sampler_build(&e, draws, 0, seed, &s, &err) == 0, "%s", err.message);
			est = fs_sampler_estimate(s);
			ck_assert(!est->exact && est->draws >= draws / 2 && est->leaves > 0);
			ck_assert(est->low <= est->value && est->value <= est->high);
			ck_assert(est->low >= (double)e.lower && est->high <= (double)e.upper * (1 + 1e-12));
			covered += est->low <= truth * (1 + 1e-12) && truth <= est->high * (1 + 1e-12);
			sum += est->value;
			half += (est->high - est->low) / 2;
			fs_sampler_free(s);
		}
		{
			double mean = sum / SEEDS, se = half / SEEDS / 1.96 / sqrt(SEEDS);
			ck_assert_msg(covered >= SEEDS * 85 / 100, "%s (cut at %lld bound calls, bounds %.6g..%.6g): the "
			    "exact count %.6g in %d of %d intervals", what, (long long)works[w], (double)e.lower,
			    (double)e.upper, truth, covered, SEEDS);
			ck_assert_msg(fabs(mean - truth) <= 4 * se + 1e-9 * truth, "%s (cut at %lld): mean estimate %.6g, "
			    "exact %.6g, standard error %.3g", what, (long long)works[w], mean, truth, se);
		}
		if (getenv("TEST_SAMPLE_VERBOSE"))
			printf("%s cut at %lld of %lld: bounds %.6g..%.6g, exact %.6g, mean %.6g, in %d of %d intervals, "
			    "mean half-width %.3g\n", what, (long long)works[w], (long long)calls, (double)e.lower,
			    (double)e.upper, truth, sum / SEEDS, covered, SEEDS, half / SEEDS);
		fs_free(&e);
	}
	sq_free(&q);
	json_decref(req);
}

START_TEST(test_estimate_covers_exact_mlp)
{
	static const double cuts[] = { 0.05, 0.2, 0.5 };

	load_catalog();
	check_coverage(mlp_query("4GiB"), "mlp 4GiB", cuts, 3, 400);
	check_coverage(mlp_query("2GiB"), "mlp 2GiB", cuts, 3, 400);
	cm_catalog_free(&cat);
}
END_TEST

START_TEST(test_estimate_covers_exact_cnn5)
{
	static const double cuts[] = { 0.02, 0.3 };

	load_catalog();
	check_coverage(example_query("cnn5", "16GiB"), "cnn5 16GiB", cuts, 2, 2000);
	check_coverage(example_query("cnn5", "8GiB"), "cnn5 8GiB", cuts, 2, 2000);
	cm_catalog_free(&cat);
}
END_TEST

/* A key of a configuration (its positions) for comparing sets. */
static void
key_of(const struct fs_engine *e, const int64_t *pos, char *buf, size_t len)
{
	size_t n = 0;

	for (int v = 0; v < e->nvars && n + 24 < len; v++)
		n += (size_t)snprintf(buf + n, len - n, "%lld,", (long long)pos[v]);
}

/*
 * Approximate samples on a cut count of the MLP space: each is feasible by
 * exact evaluation, the same seed gives the same ones, another seed other
 * ones, and 4000 of them reach most of the feasible set's configurations
 * that lie in undecided leaves as well as in FULL ones; the JSON answer says
 * "approximate" (and "uniform" once the count is exact).
 */
START_TEST(test_samples_unfinished_mlp)
{
	json_t *req, *a, *b, *c;
	struct sq_query q;
	struct fs_engine e;
	struct fs_sampler *s;
	struct dn_error err;
	int64_t *pos;
	char key[512], *ta, *tb, *tc;
	fs_count exact;
	int64_t distinct = 0, calls;
	char (*seen)[512];

	load_catalog();
	memset(&err, 0, sizeof err);
	req = mlp_query("4GiB");
	parse(req, &q);
	exact = exact_count(&q, &calls);
	cut_count(&e, &q, calls / 5);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	ck_assert_int_eq(fs_sampler_build(&e, 2000, 0, 7, &s, &err), 0);
	seen = calloc(4000, sizeof *seen);
	{
		uint64_t rng = 99;
		for (int i = 0; i < 4000; i++) {
			int dup = 0;
			ck_assert_int_eq(fs_sampler_draw(&e, s, &rng, pos, 0), 0);
			ck_assert_msg(fs_feasible_at(&e, pos), "sample %d is not feasible", i);
			key_of(&e, pos, key, sizeof key);
			for (int64_t k = 0; k < distinct && !dup; k++)
				dup = strcmp(seen[k], key) == 0;
			if (!dup)
				strcpy(seen[distinct++], key);
		}
	}
	/* 4000 draws over the feasible set: most of it is reached */
	ck_assert_msg((double)distinct >= 0.5 * (double)(exact < 4000 ? exact : 4000), "%lld distinct of %.0f",
	    (long long)distinct, (double)exact);
	free(seen);
	free(pos);
	fs_sampler_free(s);

	a = ans_samples_any(&e, 50, 5, 0, &err);
	b = ans_samples_any(&e, 50, 5, 0, &err);
	c = ans_samples_any(&e, 50, 6, 0, &err);
	ck_assert_msg(a != NULL && b != NULL && c != NULL, "%s", err.message);
	ck_assert_str_eq(json_string_value(json_object_get(a, "distribution")), "approximate");
	ck_assert(json_is_true(json_object_get(a, "complete")));
	ck_assert_int_eq(json_array_size(json_object_get(a, "items")), 50);
	ck_assert(json_is_object(json_object_get(a, "estimate")));
	ta = json_dumps(a, JSON_COMPACT);
	tb = json_dumps(b, JSON_COMPACT);
	tc = json_dumps(c, JSON_COMPACT);
	/* strcmp, not ck_assert_str_*: those put both strings in the message,
	 * and a message over Check's limit ends the program ("Message string
	 * too long"), which LeakSanitizer then reported as leaks */
	ck_assert_msg(ta != NULL && tb != NULL && strcmp(ta, tb) == 0, "the same seed gave other samples");
	ck_assert_msg(tc != NULL && strcmp(ta, tc) != 0, "another seed gave the same samples");
	free(ta);
	free(tb);
	free(tc);
	json_decref(a);
	json_decref(b);
	json_decref(c);

	/* exact now: uniform, no estimate */
	ck_assert_int_eq(fs_count_more(&e, 0, &err), 0);
	a = ans_samples_any(&e, 5, 5, 0, &err);
	ck_assert(a != NULL);
	ck_assert_str_eq(json_string_value(json_object_get(a, "distribution")), "uniform");
	ck_assert_ptr_null(json_object_get(a, "estimate"));
	json_decref(a);
	a = ans_count_estimated(&e, 100, 0, 1, &err);
	ck_assert_ptr_null(json_object_get(a, "estimate"));
	json_decref(a);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/*
 * The approximate distribution: on a count cut so that FULL and undecided
 * leaves share the feasible set, the share of samples falling in FULL
 * leaves matches their exact count over the (true) total within a few
 * standard deviations (the undecided leaves are weighted by estimates, so
 * the check allows the estimate's own error on top).
 */
START_TEST(test_samples_weighting)
{
	json_t *req = mlp_query("4GiB");
	struct sq_query q;
	struct fs_engine e;
	struct fs_sampler *s;
	struct dn_error err;
	int64_t *pos, in_full = 0, n = 20000, calls;
	fs_count exact;
	double share, expect;
	uint64_t rng = 3;

	load_catalog();
	memset(&err, 0, sizeof err);
	parse(req, &q);
	exact = exact_count(&q, &calls);
	cut_count(&e, &q, calls / 5);
	ck_assert(e.lower > 0);
	/* the exactly counted part is e.lower: the FULL leaves' configurations */
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	ck_assert_int_eq(fs_sampler_build(&e, 4000, 0, 11, &s, &err), 0);
	for (int64_t i = 0; i < n; i++) {
		int in = 0;
		ck_assert_int_eq(fs_sampler_draw(&e, s, &rng, pos, 0), 0);
		/* which leaf: follow the stored tree by the positions */
		for (int32_t x = 0;;) {
			const struct fs_node *nd = &e.nodes[x];
			int32_t next = -1;
			if (nd->nchildren == 0) {
				in = nd->status == FS_FULL;
				break;
			}
			for (int k = 0; k < nd->nchildren; k++) {
				const struct fs_node *ch = &e.nodes[nd->first_child + k];
				if (pos[ch->var] >= ch->lo && pos[ch->var] <= ch->hi)
					next = nd->first_child + k;
			}
			ck_assert(next >= 0);
			x = next;
		}
		in_full += in;
	}
	share = (double)in_full / (double)n;
	expect = (double)e.lower / (double)exact;
	{
		const struct fs_estimate *est = fs_sampler_estimate(s);
		/* the weights' own error: lower / estimate against lower / exact */
		double lo = (double)e.lower / est->high, hi = (double)e.lower / (est->low > 0 ? est->low : 1);
		double sd = sqrt(expect * (1 - expect) / (double)n);
		ck_assert_msg(share >= (lo < expect ? lo : expect) - 5 * sd && share <= (hi > expect ? hi : expect) + 5 * sd,
		    "share of samples in FULL leaves %.4f, exact share %.4f (estimate's range %.4f..%.4f)", share, expect,
		    lo, hi);
	}
	fs_sampler_free(s);
	free(pos);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/*
 * The 24-layer transformer (1.3e30 configurations) after a count cut at
 * 3000 bound calls: the estimate lies within the certified bounds, its
 * interval is narrower than the bounds, and 200 samples come out, each
 * feasible, none needing the count.
 */
START_TEST(test_samples_transformer)
{
	json_t *req = transformer24_request();
	struct sq_query q;
	struct fs_engine e;
	struct fs_sampler *s;
	struct dn_error err;
	const struct fs_estimate *est;
	int64_t *pos;
	uint64_t rng = 1;

	load_catalog();
	memset(&err, 0, sizeof err);
	parse(req, &q);
	cut_count(&e, &q, 3000);
	ck_assert_int_eq(fs_sampler_build(&e, 3000, 0, 1, &s, &err), 0);
	est = fs_sampler_estimate(s);
	ck_assert(est->value >= (double)e.lower && est->value <= (double)e.upper);
	ck_assert(est->high - est->low < (double)e.upper - (double)e.lower);
	ck_assert(est->hits > 0);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	for (int i = 0; i < 200; i++) {
		ck_assert_int_eq(fs_sampler_draw(&e, s, &rng, pos, 0), 0);
		ck_assert(fs_feasible_at(&e, pos));
	}
	fs_sampler_free(s);
	free(pos);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* Errors: no count yet, a restricted box; an exact count's estimate. */
START_TEST(test_sampler_errors)
{
	json_t *req = mlp_query("4GiB");
	struct sq_query q;
	struct fs_engine e;
	struct fs_sampler *s = NULL;
	struct dn_error err;
	int64_t mark;

	load_catalog();
	memset(&err, 0, sizeof err);
	parse(req, &q);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq(fs_sampler_build(&e, 10, 0, 1, &s, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "count"));
	ck_assert_ptr_null(ans_samples_any(&e, 1, 1, 0, &err));
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	mark = fs_restrict(&e, 0, 0, 0);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_sampler_build(&e, 10, 0, 1, &s, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "grid"));
	fs_unrestrict(&e, mark);
	ck_assert_int_eq(fs_sampler_build(&e, 10, 0, 1, &s, &err), 0);
	ck_assert(fs_sampler_estimate(s)->exact && fs_sampler_estimate(s)->draws == 0);
	ck_assert(fs_sampler_estimate(s)->value == (double)e.lower);
	fs_sampler_free(s);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("sample");
	TCase *t = tcase_create("estimate");

	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_sampler_errors);
	tcase_add_test(t, test_estimate_covers_exact_mlp);
	tcase_add_test(t, test_estimate_covers_exact_cnn5);
	suite_add_tcase(s, t);
	t = tcase_create("samples");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_samples_unfinished_mlp);
	tcase_add_test(t, test_samples_weighting);
	tcase_add_test(t, test_samples_transformer);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 1);
}
