/*
 * test_fset_alloc.c - fs_init with each of its allocations failing in turn: an
 * out-of-memory error every time, and nothing left allocated. The program
 * links with --wrap=malloc,calloc,realloc,free (Makefile.am).
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

/* ---- allocation failures: the test binary links with --wrap=malloc,
 * --wrap=calloc, --wrap=realloc and --wrap=free (Makefile.am), so that the
 * engine's allocations can be made to fail and those still live counted
 * (calls from the shared libraries, jansson and Check, go to libc
 * directly and are neither failed nor counted) ---- */

void *__real_malloc(size_t n);

void *__real_calloc(size_t n, size_t size);

void *__real_realloc(void *p, size_t n);

void __real_free(void *p);

void *__wrap_malloc(size_t n);

void *__wrap_calloc(size_t n, size_t size);

void *__wrap_realloc(void *p, size_t n);

void __wrap_free(void *p);

static long fail_countdown = -1;        /* the allocation that fails: 0 the next, -1 none */
static long live_allocs;                /* allocations made minus frees, while counting */
static int counting;                    /* off around Check's own calls (its buffers) */

static int
alloc_fails(void)
{
	return fail_countdown >= 0 && fail_countdown-- == 0;
}

void *
__wrap_malloc(size_t n)
{
	void *p = alloc_fails() ? NULL : __real_malloc(n);

	live_allocs += counting && p != NULL;
	return p;
}

void *
__wrap_calloc(size_t n, size_t size)
{
	void *p = alloc_fails() ? NULL : __real_calloc(n, size);

	live_allocs += counting && p != NULL;
	return p;
}

void *
__wrap_realloc(void *q, size_t n)
{
	void *p = alloc_fails() ? NULL : __real_realloc(q, n);

	live_allocs += counting && q == NULL && p != NULL;
	return p;
}

void
__wrap_free(void *p)
{
	live_allocs -= counting && p != NULL;
	__real_free(p);
}

/* fs_init with its k-th allocation failing, for every k until it succeeds:
 * every failure is an out-of-memory error, and fs_free leaves nothing
 * allocated (the key of the variable order leaked when a variable's
 * init_var failed, and so did that variable's grids) */
START_TEST(test_init_allocation_failures)
{
	json_t *req = random_query(0);
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int k, rc = -1, hit = 1, failed = 0;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	for (k = 0; k < 100000 && hit; k++) {
		memset(&err, 0, sizeof err);
		live_allocs = 0;
		counting = 1;
		fail_countdown = k;
		rc = fs_init(&e, &q, &err);
		hit = fail_countdown < 0;       /* the k-th allocation happened (and failed) */
		failed += rc != 0;
		fail_countdown = -1;
		fs_free(&e);
		counting = 0;
		ck_assert_msg(rc == 0 || err.code == DN_ENOMEM, "allocation %d: %s", k, err.message);
		ck_assert_msg(live_allocs == 0, "allocation %d failed: %ld blocks left allocated (%s)",
		    k, live_allocs, err.message);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_gt(failed, 5);
	printf("fs_init: each of its %d allocations failed in turn (%d made it fail), freed cleanly\n",
	    k - 1, failed);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fset_alloc");
	TCase *t;

	t = tcase_create("alloc");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_init_allocation_failures);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
