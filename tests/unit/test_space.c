/*
 * test_space.c - NNI search spaces (solver/space_*.c):
 *  - every _type parses to its exact grid (the q-types follow NNI's
 *    clip(round(x / q) * q, low, high), ends included or not as NNI's
 *    rounding reaches them), and sample values are written as NNI does;
 *  - counts are exact: nested choices sum over their options, 10^30 and
 *    larger spaces are counted digit for digit, randint [0, 10^12) costs
 *    no memory;
 *  - binding to the built-in templates (resnet, nb201's edge0..edge5,
 *    mobilenet_v2's real width_mult, vgg's boolean batch_norm), name
 *    resolution of nested dims ("C_P" before "P");
 *  - choice values of any JSON type (NNI's [0.3, "cat", 1, null], lists,
 *    BatchTuner's plain objects) pass through; nested only when every
 *    option carries "_name";
 *  - continuous values (space_draw.c): the representative value of each
 *    type, seeded draws in range, on q's grid, reproducible per seed and
 *    name, with the right median, mean and spread over 10,000 draws;
 *  - tests/data/bad_spaces.json: every malformed space and every binding
 *    error, each with its JSON path and a fragment of its message.
 */
#include "test_util.h"
#include "../test_stats.h"

#include <math.h>

#include "space.h"

/* Parses JSON text as a space; the space keeps its own reference. */
static int
parse_text(const char *text, struct sp_space *sp, struct dn_error *err)
{
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	int rc;

	ck_assert_msg(root != NULL, "bad test JSON: %s: %s", jerr.text, text);
	memset(err, 0, sizeof *err);
	rc = sp_parse(root, sp, err);
	json_decref(root);
	return rc;
}

static void
parse_ok(const char *text, struct sp_space *sp)
{
	struct dn_error err;

	ck_assert_msg(parse_text(text, sp, &err) == 0, "%s: %s: %s", text, err.path, err.message);
}

/* The grid of a dim as NNI would write its values: "2,5,10". */
static char *
grid_text(const struct sp_dim *d)
{
	static char buf[4096];
	size_t n = 0;

	buf[0] = '\0';
	for (int64_t i = 0; i < d->nvalues && n < sizeof buf - 64; i++) {
		json_t *v = sp_value_json(d, i);
		char *s;
		ck_assert_ptr_nonnull(v);
		s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? "," : "", s);
		free(s);
		json_decref(v);
	}
	return buf;
}

static void
check_count(const struct sp_space *sp, const char *want)
{
	char *got = sp_count_total(sp);

	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

/* Parses a one-parameter space and checks its grid and count. */
static void
check_grid(const char *spec, const char *want_grid, int want_integer)
{
	char text[512], n[32];
	struct sp_space sp;

	snprintf(text, sizeof text, "{\"x\": %s}", spec);
	parse_ok(text, &sp);
	ck_assert_int_eq(sp.ndims, 1);
	ck_assert_msg(sp.dims[0].discrete, "%s: not discrete", spec);
	ck_assert_msg(strcmp(grid_text(&sp.dims[0]), want_grid) == 0, "%s: grid %s, want %s", spec,
	    grid_text(&sp.dims[0]), want_grid);
	ck_assert_msg(sp.dims[0].integer == want_integer, "%s: integer %d", spec, sp.dims[0].integer);
	snprintf(n, sizeof n, "%lld", (long long)sp.dims[0].nvalues);
	check_count(&sp, n);
	sp_free(&sp);
}

static void
check_continuous(const char *spec, enum sp_type t)
{
	char text[512];
	struct sp_space sp;

	snprintf(text, sizeof text, "{\"x\": %s}", spec);
	parse_ok(text, &sp);
	ck_assert_int_eq(sp.dims[0].type, t);
	ck_assert_int_eq(sp.dims[0].discrete, 0);
	ck_assert_ptr_null(sp_value_json(&sp.dims[0], 0));
	check_count(&sp, "1");
	sp_free(&sp);
}

START_TEST(test_choice)
{
	struct sp_space sp;
	const struct sp_dim *d;

	check_grid("{\"_type\": \"choice\", \"_value\": [16, 32, 64]}", "16,32,64", 1);
	check_grid("{\"_type\": \"choice\", \"_value\": [2.0, 4]}", "2.0,4", 1);
	check_grid("{\"_type\": \"choice\", \"_value\": [0.5, 1, \"a\", true, false]}", "0.5,1,\"a\",true,false", 0);
	check_grid("{\"_type\": \"choice\", \"_value\": [\"relu\"]}", "\"relu\"", 0);
	/* the string "1" and the number 1 are distinct values */
	check_grid("{\"_type\": \"choice\", \"_value\": [\"1\", 1]}", "\"1\",1", 0);

	parse_ok("{\"dropout_rate\": {\"_type\": \"uniform\", \"_value\": [0.1, 0.5]},"
	    " \"conv_size\": {\"_type\": \"choice\", \"_value\": [2, 3, 5, 7]},"
	    " \"learning rate\": {\"_type\": \"choice\", \"_value\": [0.1, 0.01]}}", &sp);
	ck_assert_int_eq(sp.ndims, 3);
	d = &sp.dims[1];
	ck_assert_str_eq(d->name, "conv_size");
	ck_assert_str_eq(d->path, "$.conv_size");
	ck_assert_int_eq(d->parent, -1);
	ck_assert_int_eq(d->hp, -1);
	ck_assert_int_eq(d->nvalues, 4);
	ck_assert(sp_value_num(d, 3) == 7);
	ck_assert(isnan(sp_value_num(d, 4)));
	ck_assert_ptr_null(sp_value_json(d, 4));
	ck_assert_ptr_null(sp_value_json(d, -1));
	/* an unbound choice gives its option index */
	ck_assert_int_eq(sp_value_hp(d, 2).i, 2);
	ck_assert_str_eq(sp.dims[2].path, "$[\"learning rate\"]");
	check_count(&sp, "8");
	sp_free(&sp);
	sp_free(&sp);   /* twice is harmless */
}
END_TEST

START_TEST(test_randint)
{
	struct sp_space sp;
	const struct sp_dim *d;

	check_grid("{\"_type\": \"randint\", \"_value\": [3, 7]}", "3,4,5,6", 1);
	check_grid("{\"_type\": \"randint\", \"_value\": [-5, -2]}", "-5,-4,-3", 1);
	check_grid("{\"_type\": \"randint\", \"_value\": [0, 1]}", "0", 1);
	check_grid("{\"_type\": \"randint\", \"_value\": [1.0, 3]}", "1,2", 1);

	/* [0, 10^12): O(1) memory, exact values at both ends */
	parse_ok("{\"seed\": {\"_type\": \"randint\", \"_value\": [0, 1000000000000]}}", &sp);
	d = &sp.dims[0];
	ck_assert_int_eq(d->nvalues, 1000000000000LL);
	ck_assert_ptr_null(d->values);
	ck_assert_int_eq(sp_value_hp(d, 999999999999LL).i, 999999999999LL);
	ck_assert(sp_value_num(d, 123456789012LL) == 123456789012.0);
	{
		json_t *v = sp_value_json(d, 999999999999LL);
		ck_assert(json_is_integer(v));
		ck_assert_int_eq(json_integer_value(v), 999999999999LL);
		json_decref(v);
	}
	check_count(&sp, "1000000000000");
	sp_free(&sp);

	/* values beyond 2^53 stay exact */
	parse_ok("{\"seed\": {\"_type\": \"randint\", \"_value\": [9007199254740993, 9007199254741000]}}", &sp);
	ck_assert_int_eq(sp_value_hp(&sp.dims[0], 0).i, 9007199254740993LL);
	ck_assert_int_eq(sp.dims[0].nvalues, 7);
	sp_free(&sp);
}
END_TEST

START_TEST(test_qgrids)
{
	struct sp_space sp;
	const struct sp_dim *d;

	/* clip(round(x / q) * q, low, high) over x in [low, high] */
	check_grid("{\"_type\": \"quniform\", \"_value\": [2, 10, 5]}", "2,5,10", 1);
	/* round(4 / 5) = 1: 4 itself is never drawn */
	check_grid("{\"_type\": \"quniform\", \"_value\": [4, 10, 5]}", "5,10", 1);
	check_grid("{\"_type\": \"quniform\", \"_value\": [1, 10, 2]}", "1,2,4,6,8,10", 1);
	check_grid("{\"_type\": \"quniform\", \"_value\": [0, 100, 25]}", "0,25,50,75,100", 1);
	check_grid("{\"_type\": \"quniform\", \"_value\": [32, 128, 32]}", "32,64,96,128", 1);
	/* no multiple inside: both ends are clipped values */
	check_grid("{\"_type\": \"quniform\", \"_value\": [2, 3, 5]}", "2,3", 1);
	check_grid("{\"_type\": \"quniform\", \"_value\": [6, 9, 5]}", "6,9", 1);
	check_grid("{\"_type\": \"quniform\", \"_value\": [4, 4.5, 5]}", "4.5", 0);
	check_grid("{\"_type\": \"quniform\", \"_value\": [3, 3, 1]}", "3", 1);
	/* ties round half to even, as Python's round() */
	check_grid("{\"_type\": \"quniform\", \"_value\": [2.5, 10, 5]}", "2.5,5.0,10.0", 0);
	check_grid("{\"_type\": \"quniform\", \"_value\": [7.5, 10, 5]}", "10", 1);
	check_grid("{\"_type\": \"quniform\", \"_value\": [0, 1, 0.25]}", "0.0,0.25,0.5,0.75,1.0", 0);
	check_grid("{\"_type\": \"quniform\", \"_value\": [-10, 10, 10]}", "-10,0,10", 1);
	check_grid("{\"_type\": \"quniform\", \"_value\": [0.5, 2, 1]}", "0.5,1.0,2.0", 0);
	check_grid("{\"_type\": \"qloguniform\", \"_value\": [1, 100, 10]}",
	    "1,10,20,30,40,50,60,70,80,90,100", 1);
	check_grid("{\"_type\": \"qloguniform\", \"_value\": [16, 256, 16]}",
	    "16,32,48,64,80,96,112,128,144,160,176,192,208,224,240,256", 1);

	/* multiples within 1e-9 of an end are that end: 0.3 .. 1.0 by 0.1 */
	parse_ok("{\"x\": {\"_type\": \"quniform\", \"_value\": [0.3, 1.0, 0.1]}}", &sp);
	d = &sp.dims[0];
	ck_assert_int_eq(d->nvalues, 8);
	ck_assert(sp_value_num(d, 0) == 0.3);
	ck_assert(fabs(sp_value_num(d, 1) - 0.4) < 1e-12);
	ck_assert(sp_value_num(d, 7) == 1.0);
	ck_assert_int_eq(d->integer, 0);
	sp_free(&sp);

	/* a huge q-grid stays a progression: [0, 10^12] by 1 */
	parse_ok("{\"x\": {\"_type\": \"quniform\", \"_value\": [0, 1000000000000, 1]}}", &sp);
	d = &sp.dims[0];
	ck_assert_int_eq(d->nvalues, 1000000000001LL);
	ck_assert_int_eq(sp_value_hp(d, 1000000000000LL).i, 1000000000000LL);
	ck_assert_int_eq(sp_value_hp(d, 77).i, 77);
	check_count(&sp, "1000000000001");
	sp_free(&sp);
}
END_TEST

START_TEST(test_continuous)
{
	struct sp_space sp;

	check_continuous("{\"_type\": \"uniform\", \"_value\": [0.1, 0.5]}", SP_UNIFORM);
	check_continuous("{\"_type\": \"uniform\", \"_value\": [1, 1]}", SP_UNIFORM);
	check_continuous("{\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]}", SP_LOGUNIFORM);
	check_continuous("{\"_type\": \"normal\", \"_value\": [0, 1]}", SP_NORMAL);
	check_continuous("{\"_type\": \"lognormal\", \"_value\": [0, 1]}", SP_LOGNORMAL);
	/* unbounded multiples of q: not enumerable */
	check_continuous("{\"_type\": \"qnormal\", \"_value\": [0, 1, 0.5]}", SP_QNORMAL);
	check_continuous("{\"_type\": \"qlognormal\", \"_value\": [1, 2, 1]}", SP_QLOGNORMAL);

	parse_ok("{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
	    " \"m\": {\"_type\": \"normal\", \"_value\": [0.9, 0.05]},"
	    " \"n\": {\"_type\": \"lognormal\", \"_value\": [1, 2]}}", &sp);
	ck_assert(sp.dims[0].lo == 0.0001 && sp.dims[0].hi == 0.1);
	ck_assert(sp.dims[1].mu == 0.9 && sp.dims[1].sigma == 0.05);
	ck_assert(isinf(sp.dims[1].lo) && sp.dims[1].lo < 0 && isinf(sp.dims[1].hi));
	ck_assert(sp.dims[2].lo == 0 && isinf(sp.dims[2].hi));
	ck_assert_str_eq(sp_type_name(sp.dims[2].type), "lognormal");
	check_count(&sp, "1");
	sp_free(&sp);
}
END_TEST

/* NNI's own tests' mixed choice, lists, plain objects (BatchTuner): any
 * JSON value is a plain value, kept as given, counted, found again. */
START_TEST(test_choice_any_json)
{
	struct sp_space sp;

	check_grid("{\"_type\": \"choice\", \"_value\": [0.5, \"cat\", 1, null]}", "0.5,\"cat\",1,null", 0);
	check_grid("{\"_type\": \"choice\", \"_value\": [[1, 2], [3], []]}", "[1,2],[3],[]", 0);
	/* [1] and [1.0] differ as json_equal says; so do objects of other keys */
	check_grid("{\"_type\": \"choice\", \"_value\": [[1], [1.0], {\"a\": 1}, {\"a\": 1, \"b\": 2}]}",
	    "[1],[1.0],{\"a\":1},{\"a\":1,\"b\":2}", 0);
	parse_ok("{\"combine_params\": {\"_type\": \"choice\", \"_value\": ["
	    "{\"optimizer\": \"Adam\", \"learning_rate\": 0.001},"
	    "{\"optimizer\": \"SGD\", \"learning_rate\": 0.01}]},"
	    " \"x\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"a\"}, {\"_name\": \"b\"}]}}", &sp);
	ck_assert_int_eq(sp.ndims, 2);
	ck_assert(!sp.dims[0].nested && !sp.dims[0].integer);
	ck_assert(isnan(sp_value_num(&sp.dims[0], 1)));
	ck_assert(sp.dims[1].nested);
	check_count(&sp, "4");
	{
		json_t *v = sp_value_json(&sp.dims[0], 1);
		ck_assert_str_eq(json_string_value(json_object_get(v, "optimizer")), "SGD");
		json_decref(v);
	}
	sp_free(&sp);
}
END_TEST

/* Draws of n values of the single dim of `spec` with `seed`; returns the
 * dim's copy in *d (the space is freed: only numbers are read). */
static double *
draws(const char *spec, uint64_t seed, int n, struct sp_dim *d)
{
	char text[256];
	struct sp_space sp;
	double *x = malloc(sizeof *x * (size_t)n);
	uint64_t st;

	snprintf(text, sizeof text, "{\"p\": %s}", spec);
	parse_ok(text, &sp);
	*d = sp.dims[0];
	st = sp_draw_stream(seed, sp.dims[0].name);
	for (int i = 0; i < n; i++)
		x[i] = sp_value_draw(&sp.dims[0], &st);
	sp_free(&sp);
	d->name = d->key = d->path = NULL;
	d->values = NULL;
	d->hp_vals = NULL;
	return x;
}

START_TEST(test_draw)
{
	enum { N = 10000 };
	struct sp_dim d;
	double *x, *y, sum = 0, sq = 0;
	uint64_t a, b;

	/* uniform: in range, median near the middle, reproducible */
	x = draws("{\"_type\": \"uniform\", \"_value\": [0.5, 0.9]}", 42, N, &d);
	y = draws("{\"_type\": \"uniform\", \"_value\": [0.5, 0.9]}", 42, N, &d);
	ck_assert(memcmp(x, y, sizeof *x * N) == 0);
	for (int i = 0; i < N; i++)
		ck_assert(x[i] >= 0.5 && x[i] <= 0.9);
	ck_assert_double_eq_tol(stats_median(x, N), 0.7, 0.01);
	ck_assert(sp_value_typical(&d) == 0.7);
	free(y);
	/* another seed: another stream */
	y = draws("{\"_type\": \"uniform\", \"_value\": [0.5, 0.9]}", 43, N, &d);
	ck_assert(memcmp(x, y, sizeof *x * N) != 0);
	free(x);
	free(y);
	/* loguniform: median near the geometric mean sqrt(1e-4 * 1e-1) */
	x = draws("{\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]}", 7, N, &d);
	for (int i = 0; i < N; i++)
		ck_assert(x[i] >= 0.0001 && x[i] <= 0.1);
	ck_assert_double_eq_tol(log10(stats_median(x, N)), log10(sqrt(0.0001 * 0.1)), 0.05);
	ck_assert_double_eq_tol(sp_value_typical(&d), sqrt(0.0001 * 0.1), 1e-15);
	free(x);
	/* quniform: every value clip(round(x / q) * q, low, high) */
	x = draws("{\"_type\": \"quniform\", \"_value\": [2, 10, 5]}", 7, N, &d);
	{
		int seen[3] = { 0, 0, 0 };
		for (int i = 0; i < N; i++) {
			ck_assert_msg(x[i] == 2 || x[i] == 5 || x[i] == 10, "quniform drew %g", x[i]);
			seen[x[i] == 2 ? 0 : x[i] == 5 ? 1 : 2]++;
		}
		/* x in [2, 10]: 2 on [2, 2.5), 5 on [2.5, 7.5], 10 on (7.5, 10] */
		ck_assert_int_gt(seen[1], seen[0] * 6);
		ck_assert_int_gt(seen[2], seen[0] * 2);
	}
	ck_assert(sp_value_typical(&d) == 5);
	free(x);
	x = draws("{\"_type\": \"qloguniform\", \"_value\": [1, 1000, 10]}", 7, N, &d);
	for (int i = 0; i < N; i++)
		ck_assert(x[i] == 1 || x[i] == 1000 || (fmod(x[i], 10) == 0 && x[i] >= 0 && x[i] <= 1000));
	free(x);
	/* normal: mean mu, standard deviation sigma */
	x = draws("{\"_type\": \"normal\", \"_value\": [0.9, 0.05]}", 1, N, &d);
	for (int i = 0; i < N; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	ck_assert_double_eq_tol(sum / N, 0.9, 0.003);
	ck_assert_double_eq_tol(sqrt(sq / N - (sum / N) * (sum / N)), 0.05, 0.003);
	ck_assert(sp_value_typical(&d) == 0.9);
	free(x);
	/* lognormal: positive, median exp(mu) */
	x = draws("{\"_type\": \"lognormal\", \"_value\": [1, 0.5]}", 1, N, &d);
	for (int i = 0; i < N; i++)
		ck_assert(x[i] > 0);
	ck_assert_double_eq_tol(stats_median(x, N), exp(1), 0.05);
	ck_assert(sp_value_typical(&d) == exp(1));
	free(x);
	/* q-normals: multiples of q */
	x = draws("{\"_type\": \"qnormal\", \"_value\": [64, 16, 8]}", 1, N, &d);
	for (int i = 0; i < N; i++)
		ck_assert_msg(fmod(x[i], 8) == 0, "qnormal drew %g", x[i]);
	ck_assert(sp_value_typical(&d) == 64);
	free(x);
	x = draws("{\"_type\": \"qlognormal\", \"_value\": [3, 1, 2]}", 1, N, &d);
	for (int i = 0; i < N; i++)
		ck_assert_msg(fmod(x[i], 2) == 0 && x[i] >= 0, "qlognormal drew %g", x[i]);
	ck_assert(sp_value_typical(&d) == 20);      /* round(e^3 / 2) * 2 */
	free(x);
	/* streams: by seed and by name */
	a = sp_draw_stream(1, "lr");
	b = sp_draw_stream(1, "momentum");
	ck_assert(a != b && a == sp_draw_stream(1, "lr") && a != sp_draw_stream(2, "lr"));
}
END_TEST

/* NNI's mnist-nested-search-space example, plus a two-parameter option. */
static const char *nested_space =
    "{\"layer0\": {\"_type\": \"choice\", \"_value\": ["
    "  {\"_name\": \"Empty\"},"
    "  {\"_name\": \"Conv\", \"kernel_size\": {\"_type\": \"choice\", \"_value\": [1, 2, 3, 5]}},"
    "  {\"_name\": \"Max_pool\", \"pooling_size\": {\"_type\": \"choice\", \"_value\": [2, 3, 5]}},"
    "  {\"_name\": \"Avg_pool\", \"pooling_size\": {\"_type\": \"choice\", \"_value\": [2, 3, 5]}}]},"
    " \"layer1\": {\"_type\": \"choice\", \"_value\": ["
    "  {\"_name\": \"Empty\"},"
    "  {\"_name\": \"Conv\", \"kernel_size\": {\"_type\": \"choice\", \"_value\": [1, 2, 3, 5]},"
    "   \"stride\": {\"_type\": \"randint\", \"_value\": [1, 4]},"
    "   \"dropout\": {\"_type\": \"uniform\", \"_value\": [0, 0.5]}},"
    "  {\"_name\": \"Deep\", \"inner\": {\"_type\": \"choice\", \"_value\": ["
    "     {\"_name\": \"a\", \"k\": {\"_type\": \"quniform\", \"_value\": [2, 10, 5]}},"
    "     {\"_name\": \"b\"}]}}]},"
    " \"learning_rate\": {\"_type\": \"uniform\", \"_value\": [0.0001, 0.1]}}";

START_TEST(test_nested)
{
	struct sp_space sp;
	const struct sp_dim *d;
	json_t *v;

	parse_ok(nested_space, &sp);
	/* layer0 + its 3, layer1 + its 3 + inner + k, learning_rate */
	ck_assert_int_eq(sp.ndims, 11);
	d = &sp.dims[0];
	ck_assert_int_eq(d->nested, 1);
	ck_assert_int_eq(d->nvalues, 4);
	ck_assert_int_eq(d->integer, 0);
	ck_assert_str_eq(grid_text(d), "\"Empty\",\"Conv\",\"Max_pool\",\"Avg_pool\"");
	d = &sp.dims[1];
	ck_assert_str_eq(d->name, "layer0/Conv/kernel_size");
	ck_assert_str_eq(d->short_name, "layer0/kernel_size");
	ck_assert_str_eq(d->key, "kernel_size");
	ck_assert_str_eq(d->path, "$.layer0._value[1].kernel_size");
	ck_assert_int_eq(d->parent, 0);
	ck_assert_int_eq(d->parent_option, 1);
	ck_assert_int_eq(d->depth, 1);
	/* two options' children of one key: distinct addresses, one short form */
	ck_assert_str_eq(sp.dims[2].name, "layer0/Max_pool/pooling_size");
	ck_assert_int_eq(sp.dims[2].parent_option, 2);
	ck_assert_str_eq(sp.dims[3].name, "layer0/Avg_pool/pooling_size");
	ck_assert_str_eq(sp.dims[3].short_name, "layer0/pooling_size");
	ck_assert_int_eq(sp.dims[3].parent_option, 3);
	ck_assert_str_eq(sp.dims[4].name, "layer1");
	ck_assert_str_eq(sp.dims[8].name, "layer1/Deep/inner");
	ck_assert_int_eq(sp.dims[8].parent_option, 2);
	d = &sp.dims[9];
	ck_assert_str_eq(d->name, "layer1/Deep/inner/a/k");
	ck_assert_str_eq(d->short_name, "layer1/inner/k");
	ck_assert_str_eq(d->path, "$.layer1._value[2].inner._value[0].k");
	ck_assert_int_eq(d->parent, 8);
	ck_assert_int_eq(d->depth, 2);
	ck_assert_str_eq(sp.dims[10].name, "learning_rate");
	ck_assert_int_eq(sp.dims[10].parent, -1);
	v = sp_value_json(&sp.dims[4], 1);
	ck_assert_str_eq(json_string_value(v), "Conv");
	json_decref(v);
	/*
	 * layer0: Empty 1 + Conv 4 + Max_pool 3 + Avg_pool 3 = 11
	 * layer1: Empty 1 + Conv 4 * 3 (stride) * 1 (dropout) + Deep (a: 3 + b: 1) = 17
	 */
	check_count(&sp, "187");
	sp_free(&sp);

	/* the example of docs/search-space.md */
	parse_ok("{\"batch_size\": {\"_type\": \"choice\", \"_value\": [16, 32, 64]},"
	    " \"width\": {\"_type\": \"quniform\", \"_value\": [16, 128, 16]},"
	    " \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
	    " \"layer0\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"Empty\"},"
	    "  {\"_name\": \"Conv\", \"kernel_size\": {\"_type\": \"choice\", \"_value\": [1, 3, 5]}},"
	    "  {\"_name\": \"Pool\", \"pooling_size\": {\"_type\": \"choice\", \"_value\": [2, 3]}}]}}", &sp);
	check_count(&sp, "144");
	sp_free(&sp);
}
END_TEST

/* The error of looking `name` up in sp: "" when found (at dim want). */
static void
check_lookup(const struct sp_space *sp, const char *name, int want, const char *msg)
{
	struct dn_error err;
	int k;

	memset(&err, 0, sizeof err);
	k = sp_dim_lookup(sp, name, "param", &err);
	ck_assert_msg(k == want, "%s: dim %d, want %d (%s)", name, k, want, err.message);
	ck_assert_int_eq(sp_dim_named(sp, name), want);
	if (want >= 0) {
		ck_assert(!dn_error_isset(&err));
		ck_assert_str_eq(sp_dim_address(sp, name), sp->dims[k].name);
		return;
	}
	ck_assert_str_eq(err.path, "param");
	ck_assert_msg(strstr(err.message, msg) != NULL, "%s: \"%s\" lacks \"%s\"", name, err.message, msg);
	ck_assert_str_eq(sp_dim_address(sp, name), name);
}

/* Addresses: unique, looked up by address or an unambiguous short form. */
START_TEST(test_addresses)
{
	struct sp_space sp;
	struct dn_error err;

	parse_ok(nested_space, &sp);
	for (int i = 0; i < sp.ndims; i++) {
		check_lookup(&sp, sp.dims[i].name, i, NULL);
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(sp.dims[i].name, sp.dims[j].name);
	}
	/* short forms: unique ones resolve, shared ones list every candidate */
	check_lookup(&sp, "layer0/kernel_size", 1, NULL);
	check_lookup(&sp, "layer1/inner/k", 9, NULL);
	check_lookup(&sp, "layer1/inner", 8, NULL);
	check_lookup(&sp, "layer0/pooling_size", -1,
	    "layer0/pooling_size is ambiguous: layer0/Max_pool/pooling_size or layer0/Avg_pool/pooling_size");
	check_lookup(&sp, "layer1/kernel_size", 5, NULL);
	/* half-canonical or unknown: not found */
	check_lookup(&sp, "layer1/Deep/inner/k", -1, "the space has no parameter \"layer1/Deep/inner/k\"");
	check_lookup(&sp, "kernel_size", -1, "no parameter");
	check_lookup(&sp, "layer0/Conv", -1, "no parameter");
	sp_free(&sp);

	/* three candidates, the task's example at depth 2 */
	parse_ok("{\"a\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"x\", \"n\": {\"_type\": \"choice\", \"_value\": [1]}},"
	    "  {\"_name\": \"y\", \"n\": {\"_type\": \"choice\", \"_value\": [2]}},"
	    "  {\"_name\": \"z\", \"n\": {\"_type\": \"randint\", \"_value\": [3, 5]}}]}}", &sp);
	check_lookup(&sp, "a/n", -1, "a/n is ambiguous: a/x/n, a/y/n or a/z/n");
	check_lookup(&sp, "a/z/n", 3, NULL);
	sp_free(&sp);

	/* a "/" in a key: a top-level "a/x/b" beside "b" in option "x" of "a" */
	ck_assert_int_eq(parse_text("{\"a\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"x\", \"b\": {\"_type\": \"choice\", \"_value\": [1]}}]},"
	    " \"a/x/b\": {\"_type\": \"choice\", \"_value\": [2]}}", &sp, &err), -1);
	ck_assert_int_eq(err.code, DN_EINVAL);
	ck_assert_str_eq(err.path, "$[\"a/x/b\"]");
	ck_assert_msg(strstr(err.message, "\"a/x/b\" is also the address of $.a._value[0].b") != NULL, "%s",
	    err.message);
	sp_free(&sp);
	/* the same through an option's "_name" holding a "/" */
	ck_assert_int_eq(parse_text("{\"a\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"x/b\", \"c\": {\"_type\": \"choice\", \"_value\": [1]}},"
	    "  {\"_name\": \"x\", \"b/c\": {\"_type\": \"choice\", \"_value\": [2]}}]}}", &sp, &err), -1);
	ck_assert_str_eq(err.path, "$.a._value[1][\"b/c\"]");
	ck_assert_msg(strstr(err.message, "\"a/x/b/c\" is also the address of $.a._value[0].c") != NULL, "%s",
	    err.message);
	sp_free(&sp);
	/* keys with "/" that do not collide stay valid and resolve by address */
	parse_ok("{\"a/x\": {\"_type\": \"choice\", \"_value\": [1, 2]},"
	    " \"a\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"x\"},"
	    "  {\"_name\": \"y\", \"x\": {\"_type\": \"choice\", \"_value\": [3]}}]}}", &sp);
	check_lookup(&sp, "a/x", 0, NULL);
	check_lookup(&sp, "a/y/x", 2, NULL);
	sp_free(&sp);
}
END_TEST

START_TEST(test_count_huge)
{
	char text[8192];
	size_t n = 0;
	struct sp_space sp;

	/* 30 parameters of 10 values: 10^30 */
	n += (size_t)snprintf(text + n, sizeof text - n, "{");
	for (int i = 0; i < 30; i++)
		n += (size_t)snprintf(text + n, sizeof text - n,
		    "%s\"p%d\": {\"_type\": \"choice\", \"_value\": [0,1,2,3,4,5,6,7,8,9]}", i ? ", " : "", i);
	snprintf(text + n, sizeof text - n, "}");
	parse_ok(text, &sp);
	check_count(&sp, "1000000000000000000000000000000");
	sp_free(&sp);

	/* 7 * (10^12)^3 = 7 * 10^36, plus a nested choice of 2 * 10^12 + 1 */
	parse_ok("{\"a\": {\"_type\": \"randint\", \"_value\": [0, 1000000000000]},"
	    " \"b\": {\"_type\": \"randint\", \"_value\": [-500000000000, 500000000000]},"
	    " \"c\": {\"_type\": \"quniform\", \"_value\": [1, 1000000000000, 1]},"
	    " \"d\": {\"_type\": \"randint\", \"_value\": [0, 7]},"
	    " \"e\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"x\","
	    "   \"f\": {\"_type\": \"randint\", \"_value\": [0, 1000000000000]},"
	    "   \"g\": {\"_type\": \"choice\", \"_value\": [1, 2]}}, {\"_name\": \"y\"}]}}", &sp);
	check_count(&sp, "14000000000007000000000000000000000000000000000000");
	sp_free(&sp);

	/* 2^63 - 1 values in one dim: the largest randint */
	parse_ok("{\"a\": {\"_type\": \"randint\", \"_value\": [0, 9223372036854775807]},"
	    " \"b\": {\"_type\": \"randint\", \"_value\": [0, 9223372036854775807]}}", &sp);
	check_count(&sp, "85070591730234615847396907784232501249");
	sp_free(&sp);
}
END_TEST

START_TEST(test_limits)
{
	json_t *root = json_object(), *vals = json_array(), *deep;
	struct sp_space sp;
	struct dn_error err;
	char key[32];

	/* exactly SP_MAX_DIMS parameters, and SP_MAX_VALUES values, are fine */
	for (int i = 0; i < SP_MAX_DIMS - 1; i++) {
		snprintf(key, sizeof key, "p%d", i);
		json_object_set_new(root, key, json_pack("{s:s, s:[i]}", "_type", "choice", "_value", 1));
	}
	for (int i = 0; i < SP_MAX_VALUES - (SP_MAX_DIMS - 1); i++)
		json_array_append_new(vals, json_integer(i));
	json_object_set_new(root, "big", json_pack("{s:s, s:o}", "_type", "choice", "_value", vals));
	memset(&err, 0, sizeof err);
	ck_assert_msg(sp_parse(root, &sp, &err) == 0, "%s: %s", err.path, err.message);
	ck_assert_int_eq(sp.ndims, SP_MAX_DIMS);
	check_count(&sp, "995905");
	sp_free(&sp);
	json_decref(root);

	/* SP_MAX_DEPTH nested choices are fine */
	deep = json_pack("{s:{s:s, s:[i]}}", "x", "_type", "choice", "_value", 1);
	for (int i = 0; i < SP_MAX_DEPTH; i++) {
		json_t *opt = json_deep_copy(deep);
		json_object_set_new(opt, "_name", json_string("n"));
		json_decref(deep);
		deep = json_pack("{s:{s:s, s:[o]}}", "c", "_type", "choice", "_value", opt);
	}
	memset(&err, 0, sizeof err);
	ck_assert_msg(sp_parse(deep, &sp, &err) == 0, "%s: %s", err.path, err.message);
	ck_assert_int_eq(sp.ndims, SP_MAX_DEPTH + 1);
	ck_assert_int_eq(sp.dims[SP_MAX_DEPTH].depth, SP_MAX_DEPTH);
	check_count(&sp, "1");
	sp_free(&sp);
	json_decref(deep);
}
END_TEST

/* Builds a space of `dims` choices p0, p1 ... of `values` integers each. */
static json_t *
generate_space(const json_t *g)
{
	int dims = (int)json_integer_value(json_object_get(g, "dims"));
	int values = (int)json_integer_value(json_object_get(g, "values"));
	json_t *root = json_object();
	char key[32];

	for (int i = 0; i < dims; i++) {
		json_t *vals = json_array();
		for (int j = 0; j < values; j++)
			json_array_append_new(vals, json_integer(j));
		snprintf(key, sizeof key, "p%d", i);
		json_object_set_new(root, key, json_pack("{s:s, s:o}", "_type", "choice", "_value", vals));
	}
	return root;
}

START_TEST(test_bad_spaces)
{
	json_error_t jerr;
	json_t *cases = json_load_file(src_path("tests/data/bad_spaces.json"), JSON_REJECT_DUPLICATES, &jerr);
	size_t i;
	json_t *c;

	ck_assert_msg(cases != NULL, "bad_spaces.json: line %d: %s", jerr.line, jerr.text);
	ck_assert_int_ge(json_array_size(cases), 25);
	json_array_foreach(cases, i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *want_path = json_string_value(json_object_get(c, "path"));
		const char *want_msg = json_string_value(json_object_get(c, "message"));
		const char *want_code = json_string_value(json_object_get(c, "code"));
		const char *tmpl = json_string_value(json_object_get(c, "template"));
		json_t *space;
		struct sp_space sp;
		struct dn_error err;
		int rc;

		ck_assert_msg(name != NULL && want_path != NULL && want_msg != NULL, "case %zu is incomplete", i);
		if (json_object_get(c, "generate") != NULL)
			space = generate_space(json_object_get(c, "generate"));
		else
			space = json_incref(json_object_get(c, "space"));
		memset(&err, 0, sizeof err);
		rc = sp_parse(space, &sp, &err);
		if (tmpl != NULL) {
			struct cm_model_def *def;
			ck_assert_msg(rc == 0, "%s: parse failed: %s: %s", name, err.path, err.message);
			ck_assert_msg(cm_def_load_template(tmpl, &def, &err) == 0, "%s: %s", tmpl, err.message);
			rc = sp_bind(&sp, def, &err);
			for (int d = 0; d < sp.ndims; d++) {
				ck_assert_msg(sp.dims[d].hp == -1, "%s: dim %d stays bound", name, d);
				ck_assert_ptr_null(sp.dims[d].hp_vals);
			}
			cm_def_unref(def);
		}
		ck_assert_msg(rc != 0, "%s: accepted", name);
		ck_assert_msg(strcmp(err.path, want_path) == 0, "%s: path \"%s\", want \"%s\" (%s)", name,
		    err.path, want_path, err.message);
		ck_assert_msg(strstr(err.message, want_msg) != NULL, "%s: message \"%s\" lacks \"%s\"", name,
		    err.message, want_msg);
		if (want_code != NULL)
			ck_assert_msg(strcmp(dn_error_code_name(err.code), want_code) == 0, "%s: code %s, want %s",
			    name, dn_error_code_name(err.code), want_code);
		sp_free(&sp);
		json_decref(space);
	}
	json_decref(cases);
}
END_TEST

static struct cm_model_def *
load_template(const char *name)
{
	struct cm_model_def *def;
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(cm_def_load_template(name, &def, &err) == 0, "%s: %s", name, err.message);
	return def;
}

static void
bind_ok(struct sp_space *sp, const struct cm_model_def *def)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(sp_bind(sp, def, &err) == 0, "%s: %s: %s", def->name, err.path, err.message);
}

START_TEST(test_bind_resnet)
{
	struct cm_model_def *def = load_template("resnet");
	struct sp_space sp;
	const struct sp_dim *d;

	parse_ok("{\"batch_size\": {\"_type\": \"choice\", \"_value\": [16, 32.0, 64]},"
	    " \"block\": {\"_type\": \"choice\", \"_value\": [\"bottleneck\", \"basic\"]},"
	    " \"width\": {\"_type\": \"quniform\", \"_value\": [32, 128, 32]},"
	    " \"layers1\": {\"_type\": \"randint\", \"_value\": [1, 4]},"
	    " \"resolution\": {\"_type\": \"qloguniform\", \"_value\": [32, 512, 32]},"
	    " \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
	    " \"optimizer\": {\"_type\": \"choice\", \"_value\": [\"sgd\", \"adam\"]}}", &sp);
	bind_ok(&sp, def);
	d = &sp.dims[0];
	ck_assert_int_eq(d->hp, cm_def_find_hp(def, "batch_size"));
	ck_assert_int_eq(d->hp_type, CM_HP_INT);
	ck_assert_int_eq(sp_value_hp(d, 0).i, 16);
	ck_assert_int_eq(sp_value_hp(d, 1).i, 32);
	ck_assert_int_eq(sp_value_hp(d, 2).i, 64);
	d = &sp.dims[1];
	ck_assert_int_eq(d->hp, cm_def_find_hp(def, "block"));
	ck_assert_int_eq(sp_value_hp(d, 0).i, 1);      /* "bottleneck" is the hp's second value */
	ck_assert_int_eq(sp_value_hp(d, 1).i, 0);
	d = &sp.dims[2];
	ck_assert_int_eq(d->hp, cm_def_find_hp(def, "width"));
	ck_assert_int_eq(sp_value_hp(d, 3).i, 128);
	ck_assert_int_eq(sp_value_hp(&sp.dims[3], 2).i, 3);
	ck_assert_int_eq(sp.dims[4].nvalues, 16);
	ck_assert_int_eq(sp_value_hp(&sp.dims[4], 15).i, 512);
	ck_assert_int_eq(sp.dims[5].hp, -1);
	ck_assert_int_eq(sp.dims[6].hp, -1);
	check_count(&sp, "2304");
	/* the names training scripts use bind to the template's */
	{
		struct sp_space hs;
		struct cm_model_def *vit = load_template("vit");
		parse_ok("{\"per_device_train_batch_size\": {\"_type\": \"choice\", \"_value\": [8, 16]},"
		    " \"img_size\": {\"_type\": \"choice\", \"_value\": [224, 384]}}", &hs);
		bind_ok(&hs, def);
		ck_assert_int_eq(hs.dims[0].hp, cm_def_find_hp(def, "batch_size"));
		ck_assert_int_eq(hs.dims[1].hp, cm_def_find_hp(def, "resolution"));
		bind_ok(&hs, vit);
		ck_assert_int_eq(hs.dims[1].hp, cm_def_find_hp(vit, "image_size"));
		sp_free(&hs);
		cm_def_unref(vit);
	}
	/* lr passes through unsaid; optimizer is named as a setting of the
	 * workload (it changes the costs, which take the workload's) */
	{
		char names[256];
		ck_assert_int_eq(sp_unbound_names(&sp, def, names, sizeof names), 0);
		ck_assert_int_eq(sp_workload_names(&sp, 1, NULL, names, sizeof names), 1);
		ck_assert_str_eq(names, "optimizer");
		/* in inference the optimizer costs nothing: not named */
		ck_assert_int_eq(sp_workload_names(&sp, 0, NULL, names, sizeof names), 0);
	}

	/* binding again (to another model) starts afresh */
	{
		struct cm_model_def *mb = load_template("mobilenet_v2");
		bind_ok(&sp, mb);
		ck_assert_int_eq(sp.dims[0].hp, cm_def_find_hp(mb, "batch_size"));
		ck_assert_int_eq(sp.dims[1].hp, -1);
		ck_assert_ptr_null(sp.dims[1].hp_vals);
		ck_assert_int_eq(sp.dims[2].hp, -1);
		cm_def_unref(mb);
	}
	sp_free(&sp);
	cm_def_unref(def);
}
END_TEST

START_TEST(test_bind_nb201)
{
	struct cm_model_def *def = load_template("nb201");
	static const char *ops =
	    "[\"none\", \"skip_connect\", \"nor_conv_1x1\", \"nor_conv_3x3\", \"avg_pool_3x3\"]";
	char text[2048];
	size_t n = 0;
	struct sp_space sp;

	n += (size_t)snprintf(text + n, sizeof text - n, "{");
	for (int e = 0; e < 6; e++)
		n += (size_t)snprintf(text + n, sizeof text - n, "%s\"edge%d\": {\"_type\": \"choice\", \"_value\": %s}",
		    e ? ", " : "", e, ops);
	snprintf(text + n, sizeof text - n, "}");
	parse_ok(text, &sp);
	bind_ok(&sp, def);
	for (int e = 0; e < 6; e++) {
		char hp[16];
		snprintf(hp, sizeof hp, "edge%d", e);
		ck_assert_int_eq(sp.dims[e].hp, cm_def_find_hp(def, hp));
		ck_assert_int_eq(sp.dims[e].hp_type, CM_HP_CATEGORICAL);
		for (int i = 0; i < 5; i++)
			ck_assert_int_eq(sp_value_hp(&sp.dims[e], i).i, i);
	}
	check_count(&sp, "15625");
	sp_free(&sp);

	/* nested: "net/C" binds "C" (no "net_C"); options exclude each other */
	parse_ok("{\"net\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"small\", \"C\": {\"_type\": \"choice\", \"_value\": [8, 16]}},"
	    "  {\"_name\": \"big\", \"C\": {\"_type\": \"choice\", \"_value\": [32, 64]},"
	    "   \"cells_per_stage\": {\"_type\": \"randint\", \"_value\": [1, 6]},"
	    "   \"edge3\": {\"_type\": \"choice\", \"_value\": [\"skip_connect\", \"none\"]}}]},"
	    " \"batch_size\": {\"_type\": \"choice\", \"_value\": [64, 256]}}", &sp);
	bind_ok(&sp, def);
	ck_assert_int_eq(sp.dims[0].hp, -1);
	ck_assert_str_eq(sp.dims[1].name, "net/small/C");
	ck_assert_int_eq(sp.dims[1].hp, cm_def_find_hp(def, "C"));
	ck_assert_int_eq(sp.dims[2].hp, cm_def_find_hp(def, "C"));
	ck_assert_int_eq(sp.dims[3].hp, cm_def_find_hp(def, "cells_per_stage"));
	ck_assert_int_eq(sp_value_hp(&sp.dims[4], 0).i, 1);
	ck_assert_int_eq(sp_value_hp(&sp.dims[4], 1).i, 0);
	check_count(&sp, "44");         /* (2 + 2 * 5 * 2) * 2 */
	sp_free(&sp);
	cm_def_unref(def);
}
END_TEST

START_TEST(test_bind_mobilenet)
{
	struct cm_model_def *def = load_template("mobilenet_v2");
	struct sp_space sp;
	int wm = cm_def_find_hp(def, "width_mult");

	parse_ok("{\"width_mult\": {\"_type\": \"choice\", \"_value\": [0.5, 0.75, 1, 1.4]},"
	    " \"resolution\": {\"_type\": \"choice\", \"_value\": [160, 192, 224]}}", &sp);
	bind_ok(&sp, def);
	ck_assert_int_eq(sp.dims[0].hp, wm);
	ck_assert_int_eq(sp.dims[0].hp_type, CM_HP_REAL);
	ck_assert(sp_value_hp(&sp.dims[0], 1).r == 0.75);
	ck_assert(sp_value_hp(&sp.dims[0], 2).r == 1.0);
	sp_free(&sp);

	/* a real hyperparameter takes grids of any step and continuous ranges */
	parse_ok("{\"width_mult\": {\"_type\": \"quniform\", \"_value\": [0.5, 1.5, 0.25]}}", &sp);
	bind_ok(&sp, def);
	ck_assert_int_eq(sp.dims[0].nvalues, 5);
	ck_assert(sp_value_hp(&sp.dims[0], 1).r == 0.75);
	ck_assert(sp_value_hp(&sp.dims[0], 4).r == 1.5);
	sp_free(&sp);
	parse_ok("{\"width_mult\": {\"_type\": \"randint\", \"_value\": [1, 4]}}", &sp);
	bind_ok(&sp, def);
	ck_assert(sp_value_hp(&sp.dims[0], 2).r == 3.0);
	sp_free(&sp);
	parse_ok("{\"width_mult\": {\"_type\": \"uniform\", \"_value\": [0.35, 1.4]},"
	    " \"t\": {\"_type\": \"quniform\", \"_value\": [2, 8, 2]}}", &sp);
	bind_ok(&sp, def);
	ck_assert_int_eq(sp.dims[0].hp, wm);
	ck_assert_int_eq(sp.dims[0].discrete, 0);
	ck_assert_int_eq(sp_value_hp(&sp.dims[1], 3).i, 8);
	check_count(&sp, "4");
	sp_free(&sp);
	parse_ok("{\"width_mult\": {\"_type\": \"loguniform\", \"_value\": [0.1, 4]}}", &sp);
	bind_ok(&sp, def);
	sp_free(&sp);
	cm_def_unref(def);
}
END_TEST

START_TEST(test_bind_categorical_spellings)
{
	struct cm_model_def *vgg = load_template("vgg"), *mlp = load_template("mlp");
	struct sp_space sp;

	/* booleans set a categorical spelled "true" / "false" */
	parse_ok("{\"batch_norm\": {\"_type\": \"choice\", \"_value\": [true, false]}}", &sp);
	bind_ok(&sp, vgg);
	ck_assert_int_eq(sp_value_hp(&sp.dims[0], 0).i, 1);
	ck_assert_int_eq(sp_value_hp(&sp.dims[0], 1).i, 0);
	sp_free(&sp);
	/* numbers set a categorical spelled as numbers; a sub-space's _name a categorical */
	parse_ok("{\"dropout\": {\"_type\": \"choice\", \"_value\": [0.5, \"none\", 0.1]},"
	    " \"activation\": {\"_type\": \"choice\", \"_value\": ["
	    "   {\"_name\": \"gelu\"},"
	    "   {\"_name\": \"relu\", \"hidden\": {\"_type\": \"choice\", \"_value\": [128, 256]}}]}}",
	    &sp);
	bind_ok(&sp, mlp);
	ck_assert_int_eq(sp_value_hp(&sp.dims[0], 0).i, 2);
	ck_assert_int_eq(sp_value_hp(&sp.dims[0], 1).i, 0);
	ck_assert_int_eq(sp_value_hp(&sp.dims[0], 2).i, 1);
	ck_assert_int_eq(sp.dims[1].hp, cm_def_find_hp(mlp, "activation"));
	ck_assert_int_eq(sp_value_hp(&sp.dims[1], 0).i, 1);
	ck_assert_int_eq(sp.dims[2].hp, cm_def_find_hp(mlp, "hidden"));
	ck_assert_int_eq(sp_value_hp(&sp.dims[2], 1).i, 256);
	check_count(&sp, "9");
	sp_free(&sp);
	cm_def_unref(vgg);
	cm_def_unref(mlp);
}
END_TEST

START_TEST(test_bind_names)
{
	static const char *model =
	    "{\"dnnsat_model\": 1, \"name\": \"t\", \"hyperparameters\": {"
	    " \"kernel\": {\"type\": \"int\", \"default\": 3, \"min\": 1, \"max\": 7},"
	    " \"conv_kernel\": {\"type\": \"int\", \"default\": 3, \"min\": 1, \"max\": 7},"
	    " \"a_b_k\": {\"type\": \"int\", \"default\": 1, \"min\": 1, \"max\": 9},"
	    " \"b_q\": {\"type\": \"int\", \"default\": 1, \"min\": 1, \"max\": 9}},"
	    " \"inputs\": [{\"name\": \"x\", \"shape\": [1, 3, 8, 8]}], \"layers\": []}";
	json_t *root = json_loads(model, 0, NULL);
	struct cm_model_def *def;
	struct dn_error err;
	struct sp_space sp;

	memset(&err, 0, sizeof err);
	ck_assert_msg(cm_def_load_json(root, &def, &err) == 0, "%s", err.message);
	json_decref(root);
	/* "conv/kernel" -> conv_kernel before kernel; "pool/kernel" -> kernel;
	 * "a/b/k" -> a_b_k; "a/b/q" -> b_q; two kernels in exclusive options */
	parse_ok("{\"conv\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"x\", \"kernel\": {\"_type\": \"choice\", \"_value\": [3, 5]}}]},"
	    " \"pool\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"max\", \"kernel\": {\"_type\": \"choice\", \"_value\": [2, 3]}},"
	    "  {\"_name\": \"avg\", \"kernel\": {\"_type\": \"randint\", \"_value\": [2, 4]}}]},"
	    " \"a\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"n\","
	    "  \"b\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"m\", \"k\": {\"_type\": \"choice\", \"_value\": [1]},"
	    "   \"q\": {\"_type\": \"choice\", \"_value\": [2]}}]}}]}}", &sp);
	bind_ok(&sp, def);
	ck_assert_int_eq(sp.dims[1].hp, cm_def_find_hp(def, "conv_kernel"));
	ck_assert_int_eq(sp.dims[3].hp, cm_def_find_hp(def, "kernel"));
	ck_assert_int_eq(sp.dims[4].hp, cm_def_find_hp(def, "kernel"));
	ck_assert_str_eq(sp.dims[7].name, "a/n/b/m/k");
	ck_assert_int_eq(sp.dims[7].hp, cm_def_find_hp(def, "a_b_k"));
	ck_assert_int_eq(sp.dims[8].hp, cm_def_find_hp(def, "b_q"));
	sp_free(&sp);

	/* a nested dim and a top-level dim that set the same hyperparameter */
	parse_ok("{\"kernel\": {\"_type\": \"choice\", \"_value\": [3]},"
	    " \"pool\": {\"_type\": \"choice\", \"_value\": ["
	    "  {\"_name\": \"max\", \"kernel\": {\"_type\": \"choice\", \"_value\": [2, 3]}}]}}", &sp);
	ck_assert_int_ne(sp_bind(&sp, def, &err), 0);
	ck_assert_str_eq(err.path, "$.pool._value[0].kernel");
	ck_assert_ptr_nonnull(strstr(err.message, "already sets"));
	sp_free(&sp);
	cm_def_unref(def);
}
END_TEST

/*
 * A configuration made of bound values is one the model evaluates: every
 * corner of a resnet space (first or last value of each bound dim).
 */
START_TEST(test_bind_eval)
{
	struct cm_workload wl = test_workload(1);
	struct tmodel t;
	struct sp_space sp;
	int64_t prev_params = 0;

	memset(&t, 0, sizeof t);
	ck_assert_msg(cm_def_load_template("resnet", &t.def, &t.err) == 0, "%s", t.err.message);
	ck_assert_msg(tmodel_build_def(&t, &wl) == 0, "%s: %s", t.err.path, t.err.message);
	parse_ok("{\"batch_size\": {\"_type\": \"choice\", \"_value\": [8, 32]},"
	    " \"width\": {\"_type\": \"quniform\", \"_value\": [16, 64, 16]},"
	    " \"layers1\": {\"_type\": \"randint\", \"_value\": [1, 65]},"
	    " \"block\": {\"_type\": \"choice\", \"_value\": [\"basic\", \"bottleneck\"]},"
	    " \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.001, 0.1]}}", &sp);
	bind_ok(&sp, t.def);
	ck_assert_int_eq(sp_value_hp(&sp.dims[2], 63).i, 64);
	for (int corner = 0; corner < 16; corner++) {
		for (int d = 0; d < 4; d++) {
			const struct sp_dim *dim = &sp.dims[d];
			t.cfg[dim->hp] = sp_value_hp(dim, (corner >> d) & 1 ? dim->nvalues - 1 : 0);
		}
		tmodel_eval(&t);
		ck_assert_msg(t.r.valid, "corner %d is invalid", corner);
		ck_assert_int_gt(t.r.params, 0);
		/* corner 2 (widest, shallow, basic) has more weights than corner 0 */
		if (corner == 0)
			prev_params = t.r.params;
		if (corner == 2)
			ck_assert_int_gt(t.r.params, prev_params);
	}
	sp_free(&sp);
	tmodel_free(&t);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("space");
	TCase *t = tcase_create("core");

	tcase_set_timeout(t, 120);
	tcase_add_test(t, test_choice);
	tcase_add_test(t, test_randint);
	tcase_add_test(t, test_qgrids);
	tcase_add_test(t, test_continuous);
	tcase_add_test(t, test_choice_any_json);
	tcase_add_test(t, test_draw);
	tcase_add_test(t, test_nested);
	tcase_add_test(t, test_addresses);
	tcase_add_test(t, test_count_huge);
	tcase_add_test(t, test_limits);
	tcase_add_test(t, test_bad_spaces);
	tcase_add_test(t, test_bind_resnet);
	tcase_add_test(t, test_bind_nb201);
	tcase_add_test(t, test_bind_mobilenet);
	tcase_add_test(t, test_bind_categorical_spellings);
	tcase_add_test(t, test_bind_names);
	tcase_add_test(t, test_bind_eval);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
