/*
 * test_fset_progress.c - a count's saved progress (fs_progress_save,
 * fs_progress_load, fs_count_more): random queries counted in slices
 * across saves agree with brute force, a count cut short by deadlines and
 * continued elsewhere equals the count done at once, and damaged blobs are
 * rejected or count right.
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"
#include "test_reseal.h"

/* Random queries counted in small slices across save and load agree with
 * brute force; so does an exact count saved and loaded. */
START_TEST(test_progress_resume_random)
{
	int resumed = 0;

	load_catalog();
	for (int i = 0; i < 60; i++) {
		json_t *req = random_query(i);
		struct sq_query q;
		struct fs_engine e, f;
		struct dn_error err;
		char **bf, what[4096], *dump = json_dumps(req, JSON_COMPACT);
		int64_t nbf;
		size_t len;
		uint8_t *buf;
		int slices;

		memset(&err, 0, sizeof err);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "case %d: %s", i, err.message);
		snprintf(what, sizeof what, "case %d: %s", i, dump);
		slices = count_in_slices(&q, &e, 1 + (int64_t)rnd(6), what);
		resumed += slices > 1;
		nbf = brute(&e, &bf);
		check_answers(&e, bf, nbf, what);
		/* an exact count saved and loaded answers the same, and needs no more counting */
		buf = save_progress(&e, &len);
		load_progress(&f, &q, buf, len);
		ck_assert(f.lower == e.lower && f.upper == e.upper && !f.timed_out);
		ck_assert_int_eq(fs_count_more(&f, 0, &err), 0);
		ck_assert_int_eq(f.nnodes, e.nnodes);
		check_answers(&f, bf, nbf, what);
		free(buf);
		fs_free(&f);
		free_list(bf, nbf);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
		free(dump);
	}
	ck_assert_int_ge(resumed, 30);
	printf("60 random queries counted across saved progress agree with brute force (%d of them resumed)\n",
	    resumed);
	cm_catalog_free(&cat);
}
END_TEST

/* The query of test_deadline_bounds, larger: ResNet-18 with a deep third stage. */
static json_t *
deep_resnet_query(const char *memory)
{
	json_t *req = random_query(1);

	json_object_set_new(json_object_get(req, "space"), "layers3", json_pack("{s:s,s:[i,i]}", "_type", "randint",
	    "_value", 1, 40));
	json_object_set_new(json_object_get(req, "budgets"), "memory", json_string(memory));
	return req;
}

/* A count cut short by a tiny deadline, saved, loaded elsewhere and
 * continued (more tiny deadlines, then to the end) equals the count done at
 * once, with the same configurations in the same order. */
START_TEST(test_progress_deadline)
{
	json_t *req = deep_resnet_query("3GiB"), *other = deep_resnet_query("4GiB");
	struct sq_query q, q2;
	struct fs_engine e, f;
	struct dn_error err;
	char **bf;
	int64_t nbf;
	size_t len;
	uint8_t *buf;
	fs_count exact;

	load_catalog();
	parse_query(req, &q);
	parse_query(other, &q2);
	exact = exact_count(&q, &bf, &nbf);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq(fs_count_all(&e, 1e-6, &err), 0);
	ck_assert_msg(e.lower < e.upper && e.timed_out, "a 1 us deadline did not interrupt the count");
	for (int round = 0; round < 3 && e.lower != e.upper; round++) {
		fs_count lo = e.lower, hi = e.upper;
		ck_assert(lo <= exact && exact <= hi);
		buf = save_progress(&e, &len);
		fs_free(&e);
		load_progress(&e, &q, buf, len);
		free(buf);
		ck_assert_int_eq(fs_count_more(&e, 1e-6, &err), 0);
		ck_assert(e.lower >= lo && e.upper <= hi && e.lower <= exact && exact <= e.upper);
	}
	/* a blob of another budget is another query */
	buf = save_progress(&e, &len);
	ck_assert_int_eq(fs_init(&f, &q2, &err), 0);
	ck_assert_int_eq(fs_progress_load(&f, buf, len, &err), -1);
	ck_assert_msg(strstr(err.message, "another query") != NULL, "%s", err.message);
	ck_assert_int_eq(f.counted, 0);
	fs_free(&f);
	free(buf);
	ck_assert_int_eq(fs_count_more(&e, 0, &err), 0);
	ck_assert(e.lower == exact && e.upper == exact && !e.timed_out);
	check_answers(&e, bf, nbf, "resumed deep ResNet");
	/* more on an exact count changes nothing */
	{
		int32_t n = e.nnodes;
		ck_assert_int_eq(fs_count_more(&e, 1, &err), 0);
		ck_assert(e.nnodes == n && e.lower == exact);
	}
	fs_free(&e);
	/* nothing to continue before a count */
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	dn_error_clear(&err);
	ck_assert_int_eq(fs_count_more(&e, 1, &err), -1);
	ck_assert_int_eq(fs_progress_save(&e, (void **)&buf, &len, &err), -1);
	fs_free(&e);
	free_list(bf, nbf);
	sq_free(&q);
	sq_free(&q2);
	json_decref(req);
	json_decref(other);
	cm_catalog_free(&cat);
}
END_TEST

/* Loads a damaged blob into t (an engine with a count of its own): either
 * it is rejected and t is unchanged, or it loads and counting it to the end
 * gives the right count. Returns 1 when it loaded. */
static int
load_damaged(struct fs_engine *t, const uint8_t *b, size_t len, fs_count exact, const uint8_t *orig, size_t olen)
{
	struct dn_error err;
	fs_count lo = t->lower, hi = t->upper;
	int32_t n = t->nnodes;

	memset(&err, 0, sizeof err);
	if (fs_progress_load(t, b, len, &err) != 0) {
		ck_assert_msg(dn_error_isset(&err), "a rejection says why");
		ck_assert(t->lower == lo && t->upper == hi && t->nnodes == n && t->counted);
		return 0;
	}
	ck_assert_int_eq(fs_count_more(t, 0, &err), 0);
	ck_assert_msg(t->lower == exact && t->upper == exact, "a damaged blob loaded and gave a wrong count");
	ck_assert_int_eq(fs_progress_load(t, orig, olen, &err), 0);      /* back to the partial count */
	return 1;
}

/* Truncated and damaged blobs are rejected (or, resealed, load only what
 * counts right), never crash, and leave the engine usable. */
START_TEST(test_progress_corrupt)
{
	json_t *req = random_query(3);
	struct sq_query q;
	struct fs_engine e, t;
	struct dn_error err;
	size_t len;
	uint8_t *blob, *b;
	fs_count exact;
	uint64_t seed = 12345;
	int loaded = 0;
	int64_t work;

	load_catalog();
	parse_query(req, &q);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	work = e.bound_calls;
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	exact = e.lower;
	work = e.bound_calls - work;
	ck_assert_int_ge(work, 12);
	fs_free(&e);
	/* a third of the count */
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	count_slice(&e, work / 3, 1);
	ck_assert_msg(e.lower < e.upper, "the slice finished the count");
	blob = save_progress(&e, &len);
	load_progress(&t, &q, blob, len);
	b = malloc(len);
	/* every truncation */
	for (size_t n = 0; n < len; n++) {
		memcpy(b, blob, n);
		ck_assert_int_eq(load_damaged(&t, b, n, exact, blob, len), 0);
	}
	/* random byte changes, as stored (the checksum rejects them) and resealed */
	for (int i = 0; i < 4000; i++) {
		int nflips = 1 + (int)(test_xorshift(&seed) % 3);
		memcpy(b, blob, len);
		for (int k = 0; k < nflips; k++)
			b[test_xorshift(&seed) % len] ^= (uint8_t)(1 + test_xorshift(&seed) % 255);
		if (memcmp(b, blob, len) == 0)
			continue;
		if (i % 2 == 0) {
			ck_assert_int_eq(load_damaged(&t, b, len, exact, blob, len), 0);
		} else {
			test_reseal(b, len);
			if (memcmp(b, blob, len) == 0)
				continue;       /* only the checksum was hit */
			loaded += load_damaged(&t, b, len, exact, blob, len);
		}
	}
	/* a blob of another engine's tree, a blob cut and padded back to length */
	ck_assert_int_eq(fs_progress_load(&t, "DNFP", 4, &err), -1);
	memcpy(b, blob, len);
	memset(b + len / 2, 0, len - len / 2);
	test_reseal(b, len);
	ck_assert_int_eq(load_damaged(&t, b, len, exact, blob, len), 0);
	/* still usable */
	ck_assert_int_eq(fs_count_more(&t, 0, &err), 0);
	ck_assert(t.lower == exact && t.upper == exact);
	printf("progress blob of %zu bytes: every truncation and 4000 damaged copies rejected or exact (%d loaded)\n",
	    len, loaded);
	free(b);
	free(blob);
	fs_free(&t);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fset_progress");
	TCase *t;

	t = tcase_create("progress");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_progress_deadline);
	tcase_add_test(t, test_progress_corrupt);
	tcase_add_test(t, test_progress_resume_random);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
