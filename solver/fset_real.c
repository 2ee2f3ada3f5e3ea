/*
 * fset_real.c - continuous hyperparameters (struct fs_cvar in fset.h): a
 * uniform or loguniform dim bound to a REAL model hyperparameter (a width
 * multiplier) is not enumerated; a configuration of the discrete variables
 * is feasible when SOME value of it fits, which this file decides.
 *
 * Cells: the range [L, H] (for loguniform its logarithm) is bisected; the
 * cell (k, j) is the j-th of 2^k equal parts, and the finest cells, at
 * k = bits, are the resolution. Every cell boundary is computed from (j, k)
 * alone (fs_cell_value), so a cell and its halves share their ends exactly
 * and every grid value is the same number in every cell that holds it.
 *
 * The semantics are exact on a grid: a configuration is feasible when the
 * cost model admits it at some grid value, the 2^bits + 1 ends of the
 * finest cells (low and high included; for several continuous vars, some
 * point of the product of their grids). Interval bounds decide cells whole:
 * a cell whose bound is [1, 1] holds feasible grid values (its ends) for
 * every configuration of the box, one whose bound is [0, 0] holds no
 * feasible value at all (on the grid or between it); a finest cell still
 * open has its ends evaluated. A value feasible only between grid values (a
 * sliver narrower than a cell) does not make its configuration count, but
 * it is never ruled out of the reduced range: that comes from the cells
 * the bound leaves open (fs_real_hull), which hold every feasible real
 * value.
 *
 * Restricted ranges (fs_real_restrict): a search may take a var's values
 * from [rlo, rhi] only (the largest value that fits, answer_extreme.c; a
 * value to explain, rlo == rhi). Every cell is clipped to the range: a
 * cell outside it is skipped, and the clipped ends stand for the cell's
 * ends (corners, witnesses), so the range's ends count as grid values. An
 * unrestricted var ([L, H]) clips nothing.
 *
 * Ownership: searches narrow cells with fs_narrow_cell under a mark and
 * roll back before returning; between searches every cell is the whole
 * range (or the restricted range). Errors: out of memory in the undo log makes a box search
 * undecided (2), and a single configuration infeasible (as fs_feasible_at
 * has always answered on allocation failure).
 */
#include "fset_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Cells a box search may bound before the box is split instead. */
#define BOX_CELLS_PER_BIT 1

double
fs_cell_value(const struct fs_cvar *c, int64_t j, int k)
{
	double t;

	if (j <= 0)
		return c->L;
	if (j >= ((int64_t)1 << k))
		return c->H;
	t = ldexp((double)j, -k);
	if (c->logscale)
		return exp(log(c->L) + t * (log(c->H) - log(c->L)));
	return c->L + t * (c->H - c->L);
}

/* Cell (k, j) of var c clipped to its restricted range, into [*a, *b]: 0
 * when they do not meet. */
static int
clip_cell(const struct fs_cvar *cv, int64_t j, int k, double *a, double *b)
{
	*a = fmax(fs_cell_value(cv, j, k), cv->rlo);
	*b = fmin(fs_cell_value(cv, j + 1, k), cv->rhi);
	return *a <= *b;
}

int64_t
fs_real_restrict(struct fs_engine *e, int c, double lo, double hi)
{
	struct fs_cvar *cv = &e->cvars[c];
	int64_t mark = fs_mark(e);

	if (fs_narrow_cell(e, c, lo, hi) != 0) {
		fs_rollback(e, mark);
		return -1;
	}
	cv->rlo = lo;
	cv->rhi = hi;
	return mark;
}

void
fs_real_unrestrict(struct fs_engine *e, int c, int64_t mark)
{
	if (mark >= 0)
		fs_rollback(e, mark);
	e->cvars[c].rlo = e->cvars[c].L;
	e->cvars[c].rhi = e->cvars[c].H;
}

/* A search over the cells of the continuous vars in the current box. */
struct search {
	struct fs_engine *e;
	int *k;                 /* per continuous var: the current cell's depth ... */
	int64_t *j;             /* ... and index */
	int *act;               /* activity in the box (0: not searched) */
	int64_t *pos;           /* scratch: the box's configuration */
	int point;              /* the box is one configuration: grid values are evaluated */
	int64_t budget;         /* cells a box search may still bound */
	double *r;              /* the witness, or NULL */
};

/* The witness of the current cell: its (clipped) upper end in every var. */
static void
cell_witness(const struct search *s)
{
	for (int c = 0; c < s->e->ncvars && s->r != NULL; c++) {
		const struct fs_cvar *cv = &s->e->cvars[c];
		s->r[c] = s->act[c] ? fmin(fs_cell_value(cv, s->j[c] + 1, s->k[c]), cv->rhi) : NAN;
	}
}

/* Exact evaluation at the corners of the current (finest) cell, clipped to
 * the restricted ranges, the upper ends first: 1 (the witness kept) or 0. */
static int
eval_corners(struct search *s)
{
	struct fs_engine *e = s->e;
	int vars[FS_MAX_CVARS], n = 0;

	for (int v = 0; v < e->nvars; v++)
		s->pos[v] = fs_active(e, v) != 0 ? e->lo[v] : -1;
	fs_config_of(e, s->pos, e->config);
	for (int c = 0; c < e->ncvars; c++)
		if (s->act[c])
			vars[n++] = c;
	for (int mask = (1 << n) - 1; mask >= 0; mask--) {
		for (int i = 0; i < n; i++) {
			const struct fs_cvar *cv = &e->cvars[vars[i]];
			double a, b;
			clip_cell(cv, s->j[vars[i]], s->k[vars[i]], &a, &b);
			e->config[cv->hp].r = (mask >> i) & 1 ? b : a;
		}
		e->evals++;
		if (expr_tape_eval(&e->tape, e->g, e->config, e->point, NULL) == 0 && e->point[e->root].i != 0) {
			for (int c = 0; c < e->ncvars && s->r != NULL; c++)
				s->r[c] = s->act[c] ? e->config[e->cvars[c].hp].r : NAN;
			return 1;
		}
	}
	return 0;
}

/* The continuous var to bisect next: the coarsest searched one, -1 when
 * all are at their finest cells. */
static int
next_split(const struct search *s)
{
	int best = -1;

	for (int c = 0; c < s->e->ncvars; c++)
		if (s->act[c] && s->k[c] < s->e->cvars[c].bits && (best < 0 || s->k[c] < s->k[best]))
			best = c;
	return best;
}

/* 1 a witness cell, 0 none, 2 undecided (box searches), -1 out of memory.
 * Looking for a witness, the upper half first: for one continuous var the
 * witness is its largest feasible grid value (a width multiplier: the
 * widest model that fits). Otherwise the lower half first: costs mostly
 * grow with a multiplier, so the lower cells decide boxes sooner. */
static int
search_cell(struct search *s)
{
	struct fs_engine *e = s->e;
	int st = fs_bound_status(e), c, undecided = 0;

	if (st == 0)
		return 0;
	if (st == 1) {
		cell_witness(s);
		return 1;
	}
	c = next_split(s);
	if (c < 0)
		return s->point ? eval_corners(s) : 2;
	if (!s->point && s->budget <= 0)
		return 2;
	for (int i = 0; i < 2; i++) {
		const struct fs_cvar *cv = &e->cvars[c];
		int half = s->r != NULL ? 1 - i : i;
		int64_t mark = fs_mark(e), j = 2 * s->j[c] + half;
		int k = s->k[c] + 1, r;
		double a, b;
		if (!clip_cell(cv, j, k, &a, &b))
			continue;       /* outside the restricted range */
		s->budget--;
		if (fs_narrow_cell(e, c, a, b) != 0) {
			fs_rollback(e, mark);
			return -1;
		}
		s->k[c] = k;
		s->j[c] = j;
		r = search_cell(s);
		s->k[c] = k - 1;
		s->j[c] = j >> 1;
		fs_rollback(e, mark);
		if (r == 1 || r < 0)
			return r;
		undecided |= r == 2;
	}
	return undecided ? 2 : 0;
}

/* Runs a search from the whole ranges; -1 out of memory, 3 no var searched. */
static int
search_box(struct fs_engine *e, int point, double *r)
{
	size_t n = (size_t)e->ncvars + 1;
	struct search s;
	int any = 0, rc;

	memset(&s, 0, sizeof s);
	s.e = e;
	s.k = calloc(n, sizeof *s.k);
	s.j = calloc(n, sizeof *s.j);
	s.act = calloc(n, sizeof *s.act);
	s.pos = calloc((size_t)e->nvars + 1, sizeof *s.pos);
	if (s.k == NULL || s.j == NULL || s.act == NULL || s.pos == NULL) {
		rc = -1;
		goto out;
	}
	s.point = point;
	s.r = r;
	for (int c = 0; c < e->ncvars; c++) {
		s.act[c] = fs_cvar_active(e, c) != 0;
		any |= s.act[c];
		if (r != NULL)
			r[c] = NAN;
		s.budget += BOX_CELLS_PER_BIT * e->cvars[c].bits;
	}
	if (!any && !point)
		rc = 3;
	else if (point && r == NULL && fs_bound_status(e) == 2 && eval_corners(&s) == 1)
		rc = 1;         /* a quick answer: the range's ends are grid values */
	else
		rc = search_cell(&s);
out:
	free(s.k);
	free(s.j);
	free(s.act);
	free(s.pos);
	return rc;
}

int
fs_real_status(struct fs_engine *e)
{
	int r;

	if (e->ncvars == 0)
		return 2;
	r = search_box(e, 0, NULL);
	return r == 0 || r == 1 ? r : 2;
}

int
fs_real_exists(struct fs_engine *e, double *r)
{
	return search_box(e, 1, r) == 1;
}

int
fs_real_witness(struct fs_engine *e, const int64_t *pos, double *r)
{
	int64_t mark = fs_mark(e);
	int found = 0;

	for (int c = 0; c < e->ncvars && r != NULL; c++)
		r[c] = NAN;
	for (int v = 0; v < e->nvars; v++)
		if (pos[v] >= 0 && (e->lo[v] != pos[v] || e->hi[v] != pos[v]) && fs_narrow(e, v, pos[v], pos[v]) != 0)
			goto out;
	found = fs_real_exists(e, r);
out:
	fs_rollback(e, mark);
	return found;
}

/*
 * The extreme finest cell of var c inside cell (k, j) that the bound leaves
 * open, in direction dir (0 leftmost, 1 rightmost), among indices beyond
 * `limit` (< limit leftwards, > limit rightwards); -1 none, -2 out of memory.
 */
static int64_t
extreme_cell(struct fs_engine *e, int c, int k, int64_t j, int dir, int64_t limit)
{
	const struct fs_cvar *cv = &e->cvars[c];
	int shift = cv->bits - k;
	int64_t first = j << shift, last = ((j + 1) << shift) - 1;
	int st;

	if (dir == 0 ? first >= limit : last <= limit)
		return -1;
	st = fs_bound_status(e);
	if (st == 0)
		return -1;
	if (st == 1 || shift == 0)
		return dir == 0 ? first : last;
	for (int i = 0; i < 2; i++) {
		int64_t half = 2 * j + (dir == 0 ? i : 1 - i), mark = fs_mark(e), x;
		if (fs_narrow_cell(e, c, fs_cell_value(cv, half, k + 1), fs_cell_value(cv, half + 1, k + 1)) != 0) {
			fs_rollback(e, mark);
			return -2;
		}
		x = extreme_cell(e, c, k + 1, half, dir, limit);
		fs_rollback(e, mark);
		if (x != -1)
			return x;
	}
	return -1;
}

int
fs_real_hull(struct fs_engine *e, int c, int64_t *lo, int64_t *hi)
{
	int64_t n = (int64_t)1 << e->cvars[c].bits, a, b;
	int nonempty = *lo <= *hi;

	if (fs_cvar_active(e, c) == 0)
		return 0;
	a = extreme_cell(e, c, 0, 0, 0, nonempty ? *lo : n);
	if (a == -2)
		return -1;
	if (a >= 0) {
		*lo = a;
		if (!nonempty)
			*hi = a;
		nonempty = 1;
	}
	if (!nonempty)
		return 0;       /* the bound rules out every cell */
	b = extreme_cell(e, c, 0, 0, 1, *hi);
	if (b == -2)
		return -1;
	if (b >= 0)
		*hi = b;
	return 0;
}

int
fs_real_none_in(struct fs_engine *e, int c, double lo, double hi)
{
	int64_t m = fs_real_restrict(e, c, lo, hi);
	int st;

	if (m < 0)
		return 0;
	st = fs_real_status(e);
	fs_real_unrestrict(e, c, m);
	return st == 0;
}
