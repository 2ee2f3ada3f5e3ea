/*
 * test_common.c - the shared helpers of common/ that have no other home:
 * dn_grow's growth, its overflow checks and its failure contract (the
 * array and capacity unchanged).
 */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dn_grow.h"
#include "test_util.h"

START_TEST(test_grow_keeps_contents)
{
	int *v = NULL;
	size_t cap = 0;

	for (size_t i = 0; i < 1000; i++) {
		ck_assert_int_eq(dn_grow(&v, &cap, i + 1, sizeof *v), 0);
		ck_assert(cap >= i + 1);
		v[i] = (int)i * 7;
	}
	for (size_t i = 0; i < 1000; i++)
		ck_assert_int_eq(v[i], (int)i * 7);
	ck_assert(cap < 2048);          /* doubling from 8, not one by one or beyond */
	free(v);
}
END_TEST

START_TEST(test_grow_overflow_refused)
{
	char *p = malloc(16);
	size_t cap = 16;
	int icap = 16;
	double *d;

	ck_assert_ptr_nonnull(p);
	/* need * elem beyond SIZE_MAX: refused, nothing changed */
	ck_assert_int_eq(dn_grow(&p, &cap, SIZE_MAX / 4 + 1, 8), -1);
	ck_assert_uint_eq(cap, 16);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(dn_grow(&p, &cap, SIZE_MAX, 2), -1);
	ck_assert_uint_eq(cap, 16);
	free(p);
	d = NULL;
	icap = 0;
	ck_assert_int_eq(dn_grow_int(&d, &icap, -1, sizeof *d), -1);
	ck_assert_int_eq(dn_grow_int(&d, &icap, 5, sizeof *d), 0);
	ck_assert_int_ge(icap, 5);
	ck_assert_int_eq(dn_grow_int(&d, &icap, 3, sizeof *d), 0);   /* enough already */
	ck_assert_int_ge(icap, 5);
	free(d);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("common");
	TCase *t = tcase_create("grow");

	tcase_add_test(t, test_grow_keeps_contents);
	tcase_add_test(t, test_grow_overflow_refused);
	suite_add_tcase(s, t);
	return run_suite(s, 0);
}
