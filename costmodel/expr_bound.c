/*
 * expr_bound.c - sound interval bounds of every node over boxes of the
 * variables, for the solver's pruning: if each variable lies in its interval,
 * each node's value lies in its computed interval (the converse need not
 * hold: bounds may be loose, never wrong).
 *
 * INT arithmetic saturates at INT64_MIN / INT64_MAX, which stand for
 * "unbounded" on that side. REAL bounds are widened by one ulp per operation
 * so that rounding can never make them unsound.
 */
#include "expr.h"
#include "expr_arith.h"

#include <math.h>

static int64_t
sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (a == INT64_MIN || b == INT64_MIN)
		return (a == INT64_MAX || b == INT64_MAX) ? 0 : INT64_MIN;
	if (a == INT64_MAX || b == INT64_MAX)
		return INT64_MAX;
	if (__builtin_add_overflow(a, b, &r))
		return a > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t
sat_neg(int64_t a)
{
	if (a == INT64_MIN)
		return INT64_MAX;
	if (a == INT64_MAX)
		return INT64_MIN;
	return -a;
}

static int64_t
sat_mul(int64_t a, int64_t b)
{
	int64_t r;

	if (a == 0 || b == 0)
		return 0;
	if (__builtin_mul_overflow(a, b, &r) || a == INT64_MIN || b == INT64_MIN ||
	    a == INT64_MAX || b == INT64_MAX)
		return ((a < 0) != (b < 0)) ? INT64_MIN : INT64_MAX;
	return r;
}

static void
hull4(int64_t a, int64_t b, int64_t c, int64_t d, int64_t *lo, int64_t *hi)
{
	int64_t m = a, M = a;

	if (b < m) m = b;
	if (c < m) m = c;
	if (d < m) m = d;
	if (b > M) M = b;
	if (c > M) M = c;
	if (d > M) M = d;
	*lo = m;
	*hi = M;
}

static double down(double x) { return nextafter(x, -INFINITY); }
static double up(double x) { return nextafter(x, INFINITY); }

static void
rhull4(double a, double b, double c, double d, double *lo, double *hi)
{
	*lo = down(fmin(fmin(a, b), fmin(c, d)));
	*hi = up(fmax(fmax(a, b), fmax(c, d)));
}

/* Floor (or ceiling) division bounds for a in [alo, ahi], b in [blo, bhi]
 * with b of one sign (0 excluded): extremes are at the corners. */
static void
div_corners(int64_t alo, int64_t ahi, int64_t blo, int64_t bhi, int ceil_mode,
    int64_t *lo, int64_t *hi)
{
	int64_t q[4];
	int64_t as[2] = { alo, ahi }, bs[2] = { blo, bhi };
	int k = 0;

	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++) {
			int64_t a = as[i], b = bs[j];
			if (a == INT64_MIN && b == -1)
				q[k++] = INT64_MAX;
			else
				q[k++] = ceil_mode ? expr_ceildiv_i64(a, b) : expr_floordiv_i64(a, b);
		}
	hull4(q[0], q[1], q[2], q[3], lo, hi);
	/* an unbounded dividend keeps the quotient unbounded on that side */
	if (alo == INT64_MIN || ahi == INT64_MAX) {
		if ((alo == INT64_MIN && blo > 0) || (ahi == INT64_MAX && blo < 0))
			*lo = INT64_MIN;
		if ((ahi == INT64_MAX && blo > 0) || (alo == INT64_MIN && blo < 0))
			*hi = INT64_MAX;
	}
}

static void
bound_div(const struct expr_ival *A, const struct expr_ival *B, int ceil_mode,
    struct expr_ival *out)
{
	int64_t alo = A->lo.i, ahi = A->hi.i, blo = B->lo.i, bhi = B->hi.i;
	int64_t lo, hi, l2, h2;
	int have = 0;

	lo = INT64_MAX;
	hi = INT64_MIN;
	if (bhi >= 1) {          /* positive part of the divisor */
		div_corners(alo, ahi, blo > 1 ? blo : 1, bhi, ceil_mode, &l2, &h2);
		lo = l2; hi = h2; have = 1;
	}
	if (blo <= -1) {         /* negative part */
		div_corners(alo, ahi, blo, bhi < -1 ? bhi : -1, ceil_mode, &l2, &h2);
		if (!have || l2 < lo) lo = l2;
		if (!have || h2 > hi) hi = h2;
		have = 1;
	}
	if (blo <= 0 && bhi >= 0) {      /* division by zero gives 0 */
		if (!have || 0 < lo) lo = 0;
		if (!have || 0 > hi) hi = 0;
	}
	out->lo.i = lo;
	out->hi.i = hi;
}

static void
bound_mod(const struct expr_ival *A, const struct expr_ival *B,
    struct expr_ival *out)
{
	int64_t alo = A->lo.i, ahi = A->hi.i, blo = B->lo.i, bhi = B->hi.i;

	if (blo == bhi && blo > 0 && alo != INT64_MIN && ahi != INT64_MAX &&
	    expr_floordiv_i64(alo, blo) == expr_floordiv_i64(ahi, blo)) {
		out->lo.i = expr_mod_i64(alo, blo);
		out->hi.i = expr_mod_i64(ahi, blo);
		return;
	}
	out->lo.i = 0;
	out->hi.i = 0;
	if (bhi > 0)
		out->hi.i = bhi == INT64_MAX ? INT64_MAX : bhi - 1;
	if (blo < 0)
		out->lo.i = blo == INT64_MIN ? INT64_MIN : blo + 1;
	if (blo <= 0 && bhi >= 0) {      /* modulo by zero gives the dividend */
		if (alo < out->lo.i) out->lo.i = alo;
		if (ahi > out->hi.i) out->hi.i = ahi;
	}
	/* a non-negative dividend and positive divisor never exceed the dividend */
	if (alo >= 0 && blo > 0 && ahi < out->hi.i)
		out->hi.i = ahi;
}

static void
bound_cmp(const struct expr_graph *g, const struct expr_node *n,
    const struct expr_ival *A, const struct expr_ival *B, struct expr_ival *out)
{
	int must = 0, cannot = 0;

	if (g->nodes[n->a].type == EXPR_INT) {
		/* exact integer comparisons where doubles could round */
		switch (n->kind) {
		case EK_EQ:
			must = A->lo.i == A->hi.i && B->lo.i == B->hi.i && A->lo.i == B->lo.i;
			cannot = A->hi.i < B->lo.i || B->hi.i < A->lo.i;
			break;
		case EK_NE:
			must = A->hi.i < B->lo.i || B->hi.i < A->lo.i;
			cannot = A->lo.i == A->hi.i && B->lo.i == B->hi.i && A->lo.i == B->lo.i;
			break;
		case EK_LT:
			must = A->hi.i < B->lo.i;
			cannot = A->lo.i >= B->hi.i;
			break;
		default:
			must = A->hi.i <= B->lo.i;
			cannot = A->lo.i > B->hi.i;
			break;
		}
	} else {
		double alo = A->lo.r, ahi = A->hi.r, blo = B->lo.r, bhi = B->hi.r;
		switch (n->kind) {
		case EK_EQ:
			must = alo == ahi && blo == bhi && alo == blo;
			cannot = ahi < blo || bhi < alo;
			break;
		case EK_NE:
			must = ahi < blo || bhi < alo;
			cannot = alo == ahi && blo == bhi && alo == blo;
			break;
		case EK_LT:
			must = ahi < blo;
			cannot = alo >= bhi;
			break;
		default:
			must = ahi <= blo;
			cannot = alo > bhi;
			break;
		}
	}
	out->lo.i = must ? 1 : 0;
	out->hi.i = cannot ? 0 : 1;
}

/* One end of a real interval as an integer, clamped to int64's range on
 * both sides (beyond it exact evaluation faults; converting such a double
 * is undefined); a NaN end gives if_nan. */
static int64_t
end_to_int(double x, int64_t if_nan)
{
	if (isnan(x))
		return if_nan;
	if (x <= -9.2233720368547758e18)
		return INT64_MIN;
	if (x >= 9.2233720368547758e18)
		return INT64_MAX;
	return (int64_t)x;
}

static void
bound_to_int(double lo, double hi, struct expr_ival *out)
{
	out->lo.i = end_to_int(lo, INT64_MIN);
	out->hi.i = end_to_int(hi, INT64_MAX);
}

void
expr_bound_node(const struct expr_graph *g, expr_id i, const struct expr_ival *vars,
    struct expr_ival *o)
{
	const struct expr_node *n = &g->nodes[i];
	const struct expr_ival *A = n->a >= 0 ? &o[n->a] : NULL;
	const struct expr_ival *B = n->b >= 0 ? &o[n->b] : NULL;
	const struct expr_ival *C = n->c >= 0 ? &o[n->c] : NULL;
	int real = n->type == EXPR_REAL;

	switch (n->kind) {
	case EK_CONST:
		o[i].lo = o[i].hi = n->k;
		break;
	case EK_VAR:
		o[i] = vars[n->k.i];
		break;
	case EK_ADD:
		if (real) {
			o[i].lo.r = down(A->lo.r + B->lo.r);
			o[i].hi.r = up(A->hi.r + B->hi.r);
		} else {
			o[i].lo.i = sat_add(A->lo.i, B->lo.i);
			o[i].hi.i = sat_add(A->hi.i, B->hi.i);
		}
		break;
	case EK_SUB:
		if (real) {
			o[i].lo.r = down(A->lo.r - B->hi.r);
			o[i].hi.r = up(A->hi.r - B->lo.r);
		} else {
			o[i].lo.i = sat_add(A->lo.i, sat_neg(B->hi.i));
			o[i].hi.i = sat_add(A->hi.i, sat_neg(B->lo.i));
		}
		break;
	case EK_MUL:
		if (real)
			rhull4(A->lo.r * B->lo.r, A->lo.r * B->hi.r,
			    A->hi.r * B->lo.r, A->hi.r * B->hi.r,
			    &o[i].lo.r, &o[i].hi.r);
		else
			hull4(sat_mul(A->lo.i, B->lo.i), sat_mul(A->lo.i, B->hi.i),
			    sat_mul(A->hi.i, B->lo.i), sat_mul(A->hi.i, B->hi.i),
			    &o[i].lo.i, &o[i].hi.i);
		break;
	case EK_DIV:
		if (real) {
			if (B->lo.r > 0.0 || B->hi.r < 0.0)
				rhull4(A->lo.r / B->lo.r, A->lo.r / B->hi.r,
				    A->hi.r / B->lo.r, A->hi.r / B->hi.r,
				    &o[i].lo.r, &o[i].hi.r);
			else {
				o[i].lo.r = -INFINITY;
				o[i].hi.r = INFINITY;
			}
		} else
			bound_div(A, B, 0, &o[i]);
		break;
	case EK_CDIV:
		bound_div(A, B, 1, &o[i]);
		break;
	case EK_MOD:
		bound_mod(A, B, &o[i]);
		break;
	case EK_MIN:
		if (real) {
			o[i].lo.r = fmin(A->lo.r, B->lo.r);
			o[i].hi.r = fmin(A->hi.r, B->hi.r);
		} else {
			o[i].lo.i = A->lo.i < B->lo.i ? A->lo.i : B->lo.i;
			o[i].hi.i = A->hi.i < B->hi.i ? A->hi.i : B->hi.i;
		}
		break;
	case EK_MAX:
		if (real) {
			o[i].lo.r = fmax(A->lo.r, B->lo.r);
			o[i].hi.r = fmax(A->hi.r, B->hi.r);
		} else {
			o[i].lo.i = A->lo.i > B->lo.i ? A->lo.i : B->lo.i;
			o[i].hi.i = A->hi.i > B->hi.i ? A->hi.i : B->hi.i;
		}
		break;
	case EK_EQ: case EK_NE: case EK_LT: case EK_LE:
		bound_cmp(g, n, A, B, &o[i]);
		break;
	case EK_AND:
		o[i].lo.i = A->lo.i & B->lo.i;
		o[i].hi.i = A->hi.i & B->hi.i;
		break;
	case EK_OR:
		o[i].lo.i = A->lo.i | B->lo.i;
		o[i].hi.i = A->hi.i | B->hi.i;
		break;
	case EK_NOT:
		o[i].lo.i = !A->hi.i;
		o[i].hi.i = !A->lo.i;
		break;
	case EK_ITE:
		if (A->lo.i == 1)
			o[i] = *B;
		else if (A->hi.i == 0)
			o[i] = *C;
		else if (real) {
			o[i].lo.r = fmin(B->lo.r, C->lo.r);
			o[i].hi.r = fmax(B->hi.r, C->hi.r);
		} else {
			o[i].lo.i = B->lo.i < C->lo.i ? B->lo.i : C->lo.i;
			o[i].hi.i = B->hi.i > C->hi.i ? B->hi.i : C->hi.i;
		}
		break;
	case EK_TOREAL:
		o[i].lo.r = A->lo.i == INT64_MIN ? -INFINITY : down((double)A->lo.i);
		o[i].hi.r = A->hi.i == INT64_MAX ? INFINITY : up((double)A->hi.i);
		break;
	case EK_FLOOR:
		bound_to_int(floor(A->lo.r), floor(A->hi.r), &o[i]);
		break;
	case EK_CEIL:
		bound_to_int(ceil(A->lo.r), ceil(A->hi.r), &o[i]);
		break;
	case EK_ROUND:
		bound_to_int(round(A->lo.r), round(A->hi.r), &o[i]);
		break;
	default:
		o[i].lo.i = INT64_MIN;
		o[i].hi.i = INT64_MAX;
		break;
	}
}

void
expr_bound(const struct expr_graph *g, const struct expr_ival *vars,
    struct expr_ival *o)
{
	for (int32_t i = 0; i < g->n; i++)
		expr_bound_node(g, i, vars, o);
}
