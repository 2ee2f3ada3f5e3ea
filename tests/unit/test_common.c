/*
 * test_common.c - the shared helpers of common/ that have no other home:
 * dn_grow's growth, its overflow checks and its failure contract (the
 * array and capacity unchanged); dn_file_read's whole-file read and its
 * errors.
 */
#include <check.h>
#include <stdio.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dn_file.h"
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

/* The bytes as the file holds them, NUL-terminated; each failure with
 * its code and the path named. */
START_TEST(test_file_read)
{
	char tmp[] = "/tmp/dn_file_XXXXXX", tmp2[] = "/tmp/dn_file_XXXXXX", *text;
	struct dn_error err;
	size_t len = 99;
	FILE *f;
	int fd = mkstemp(tmp);

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq((int)fwrite("{\"a\":\0\n1}", 1, 9, f), 9);
	fclose(f);
	memset(&err, 0, sizeof err);
	text = dn_file_read(tmp, 0, "what", &len, &err);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, 9);
	ck_assert_int_eq(memcmp(text, "{\"a\":\0\n1}", 10), 0);    /* the NUL inside kept, one after */
	free(text);
	/* bounded: 9 bytes fit a bound of 9, not one of 8 */
	text = dn_file_read(tmp, 9, "what", NULL, &err);
	ck_assert_ptr_nonnull(text);
	free(text);
	ck_assert_ptr_null(dn_file_read(tmp, 8, "what", &len, &err));
	ck_assert_int_eq(err.code, DN_ETOOBIG);
	ck_assert_str_eq(err.path, "what");
	ck_assert_ptr_nonnull(strstr(err.message, tmp));
	ck_assert_int_eq(unlink(tmp), 0);
	memset(&err, 0, sizeof err);
	ck_assert_ptr_null(dn_file_read(tmp, 0, "what", &len, &err));
	ck_assert_int_eq(err.code, DN_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.message, "No such file"));
	memset(&err, 0, sizeof err);
	ck_assert_ptr_null(dn_file_read("/tmp", 0, "what", &len, &err));
	ck_assert_int_eq(err.code, DN_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.message, "not a regular file"));
	/* an empty file: an empty string */
	fd = mkstemp(tmp2);
	ck_assert_int_ge(fd, 0);
	close(fd);
	text = dn_file_read(tmp2, 0, "what", &len, &err);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(text, "");
	free(text);
	unlink(tmp2);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("common");
	TCase *t = tcase_create("grow");

	tcase_add_test(t, test_grow_keeps_contents);
	tcase_add_test(t, test_grow_overflow_refused);
	tcase_add_test(t, test_file_read);
	suite_add_tcase(s, t);
	return run_suite(s, 0);
}
