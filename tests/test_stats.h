/*
 * test_stats.h - order statistics shared by the test and benchmark
 * programs: the comparison qsort needs for doubles, the median and Kendall's
 * rank correlation. Header-only (static functions), one copy per program.
 */
#ifndef DN_TEST_STATS_H
#define DN_TEST_STATS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* One (x, y) observation, for stats_kendall's sort by x then y. */
struct stats_pair {
	double x, y;
};

static int __attribute__((unused))
stats_cmp_pair(const void *a, const void *b)
{
	const struct stats_pair *p = a, *q = b;

	return p->x != q->x ? (p->x > q->x) - (p->x < q->x) : (p->y > q->y) - (p->y < q->y);
}

/* Sorts y[0..n) ascending with tmp[0..n) as scratch and returns the number
 * of pairs i < j with y[i] > y[j] in the input order (merge sort). */
static double __attribute__((unused))
stats_inversions(double *y, double *tmp, int n)
{
	double inv = 0;
	int h = n / 2, i = 0, j = h, k = 0;

	if (n < 2)
		return 0;
	inv = stats_inversions(y, tmp, h) + stats_inversions(y + h, tmp, n - h);
	while (i < h && j < n) {
		if (y[j] < y[i]) {
			inv += h - i;	/* y[j] is below every y[i..h) */
			tmp[k++] = y[j++];
		} else {
			tmp[k++] = y[i++];
		}
	}
	while (i < h)
		tmp[k++] = y[i++];
	while (j < n)
		tmp[k++] = y[j++];
	memcpy(y, tmp, (size_t)n * sizeof *y);
	return inv;
}

/* Pairs within runs of equal values of v[0..n) (sorted): sum of t(t-1)/2. */
static double __attribute__((unused))
stats_tied_pairs(const double *v, int n)
{
	double tied = 0;

	for (int i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j] == v[i]; j++)
			;
		tied += 0.5 * (double)(j - i) * (double)(j - i - 1);
	}
	return tied;
}

/*
 * Kendall's tau-b of x[0..n) and y[0..n) (n >= 2, no NaN; ties in either
 * variable), in O(n log n) by Knight's method (W. R. Knight, "A computer
 * method for calculating Kendall's tau with ungrouped data", JASA 61, 1966):
 * sorted by x then y, the discordant pairs are the inversions of y. With n0
 * pairs, n1 tied in x, n2 tied in y, n3 tied in both and S discordant:
 * tau_b = (n0 - n1 - n2 + n3 - 2S) / sqrt((n0 - n1)(n0 - n2)). The counts
 * are exact integers in doubles (n up to 2^26). Returns NaN when out of
 * memory or when either variable is constant.
 */
static double __attribute__((unused))
stats_kendall(const double *x, const double *y, int n)
{
	struct stats_pair *p = malloc((size_t)n * sizeof *p);
	double *ys = malloc((size_t)n * sizeof *ys), *tmp = malloc((size_t)n * sizeof *tmp);
	double n0 = 0.5 * (double)n * (double)(n - 1), n1 = 0, n2, n3 = 0, s, tau = NAN;

	if (p != NULL && ys != NULL && tmp != NULL) {
		for (int i = 0; i < n; i++) {
			p[i].x = x[i];
			p[i].y = y[i];
		}
		qsort(p, (size_t)n, sizeof *p, stats_cmp_pair);
		for (int i = 0, j; i < n; i = j) {
			int same_y = 1;	/* run start of equal (x, y) within the x run */
			for (j = i + 1; j < n && p[j].x == p[i].x; j++) {
				if (p[j].y == p[j - 1].y) {
					n3 += same_y;
					same_y++;
				} else {
					same_y = 1;
				}
			}
			n1 += 0.5 * (double)(j - i) * (double)(j - i - 1);
		}
		for (int i = 0; i < n; i++)
			ys[i] = p[i].y;
		s = stats_inversions(ys, tmp, n);
		n2 = stats_tied_pairs(ys, n);
		if (n0 > n1 && n0 > n2)
			tau = (n0 - n1 - n2 + n3 - 2 * s) / sqrt((n0 - n1) * (n0 - n2));
	}
	free(p);
	free(ys);
	free(tmp);
	return tau;
}

#endif
