/*
 * test_stats.h - order statistics shared by the test and benchmark
 * programs: the comparison qsort needs for doubles and the median.
 * Header-only (static functions), one copy per program.
 */
#ifndef DN_TEST_STATS_H
#define DN_TEST_STATS_H

#include <stdlib.h>

/* qsort's comparison of two doubles, ascending (no NaN expected). */
static int __attribute__((unused))
stats_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of x[0..n) (n >= 1); sorts x in place. */
static double __attribute__((unused))
stats_median(double *x, int n)
{
	qsort(x, (size_t)n, sizeof *x, stats_cmp_double);
	return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

#endif
