/*
 * test_z3c.c - the Z3 compilation of the expression graph agrees with the
 * evaluator, and the queries with brute force:
 *   - semantics: random trees over two INT and one REAL variable (division,
 *     ceiling division and modulo with negative and zero divisors, floor,
 *     ceil and round of reals, ite), every node's value in a Z3 model equals
 *     expr_eval's, and the solver agrees on the root;
 *   - the same with declared finite domains (z3c_var_domain), under which
 *     nonlinear nodes are tables, and only they;
 *   - enumerate = brute force over small domains; optimize = brute force
 *     (half of the cases with declared domains);
 *   (the random semantics and enumeration draw a quarter of their cases
 *   when DNNSAT_TEST_Z3=0, as in the sanitized pass of scripts/test.sh,
 *   which runs this program again, plain, with all of them: z3_cases)
 *   - explain gives an unsatisfiable, minimal core;
 *   - the resnet template's training memory, as a Z3 term, equals
 *     cm_model_eval, and the largest batch that fits 16 GiB is found (this
 *     Z3 search, 14 s plain and 80 s under ASan's allocator, is one of the
 *     Z3 cross-checks that DNNSAT_TEST_Z3=0 skips: scripts/test.sh runs
 *     them in its plain pass);
 *   - limits (rlimit, our timer thread's timeout, interrupt) answer unknown
 *     with DN_ETIMEOUT; every check is bounded by an rlimit (TEST_RLIMIT);
 *     Z3 errors are reported, never exit().
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "expr.h"
#include "z3c.h"
#include "dn_deadline.h"

/* Every check's work is bounded by Z3's resource limit (work, not time:
 * the same on a fast machine and on a busy one), never by Z3's timeout
 * (its timer deadlocks in Debian 12's Z3 4.8.12). A check that hit it
 * would answer unknown and fail its test: the tests' checks use far less. */
#define TEST_RLIMIT 2000000u
/* ResNet-50's training memory over the batch size (test_resnet_memory):
 * Z3's optimization of that term takes more. Since cost model 1.4.2 (the
 * storages of a stage's blocks no longer live to the stage's end) 2e6 is
 * not enough, and 6e6 is done in about 24 s here. */
#define TEST_RLIMIT_RESNET 6000000u
/* The backstop of the timeout and interrupt tests: a check that ran into
 * it would take seconds of work (x^3 + y^3 = w^3 reaches 10^6 in about a
 * second here), the timer and the interrupt come after 100 and 200 ms. */
#define BACKSTOP_RLIMIT 20000000u

static struct expr_graph G;
static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t
next(void)
{
	return test_xorshift(&rng);
}

static int64_t
rand_in(int64_t lo, int64_t hi)
{
	return test_rand_in(&rng, lo, hi);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A fresh graph with x, y (INT) and r (REAL). */
static void
graph_new(void)
{
	ck_assert_int_eq(expr_graph_init(&G), 0);
	ck_assert_int_eq(expr_graph_add_var(&G, "x", EXPR_INT), 0);
	ck_assert_int_eq(expr_graph_add_var(&G, "y", EXPR_INT), 1);
	ck_assert_int_eq(expr_graph_add_var(&G, "r", EXPR_REAL), 2);
}

static expr_id
as_int(expr_id e)
{
	if (e < 0 || expr_type_of(&G, e) == EXPR_INT)
		return e;
	switch (next() % 3) {
	case 0: return expr_floor(&G, e);
	case 1: return expr_ceil(&G, e);
	default: return expr_round(&G, e);
	}
}

/*
 * A random expression (mirrors random_tree in test_expr.c, with reals):
 * small constants so that zero and negative divisors are common, reals in
 * quarters so that rounding has ties. rdiv = 0 leaves out real division,
 * whose double results are inexact, for the tests that compare whole sets.
 */
static expr_id
random_tree(int depth, int rdiv)
{
	int k = (int)(next() % 24);
	expr_id x, y;

	if (depth == 0 || k < 4) {
		switch (next() % 5) {
		case 0: return expr_var(&G, 0);
		case 1: return expr_var(&G, 1);
		case 2: return expr_var(&G, 2);
		case 3: return expr_int(&G, rand_in(-6, 6));
		default: return expr_real(&G, (double)rand_in(-12, 12) / 4.0);
		}
	}
	x = random_tree(depth - 1, rdiv);
	y = random_tree(depth - 1, rdiv);
	switch (k) {
	case 4: return expr_add(&G, x, y);
	case 5: return expr_sub(&G, x, y);
	case 6: return expr_mul(&G, x, y);
	case 7:
	case 8: return expr_div(&G, as_int(x), as_int(y));
	case 9: return rdiv ? expr_div(&G, expr_to_real(&G, x), y) : expr_mul(&G, x, y);
	case 10: return expr_cdiv(&G, as_int(x), as_int(y));
	case 11:
	case 12: return expr_mod(&G, as_int(x), as_int(y));
	case 13: return expr_min(&G, x, y);
	case 14: return expr_max(&G, x, y);
	case 15: return expr_lt(&G, x, y);
	case 16: return expr_le(&G, x, y);
	case 17: return expr_eq(&G, x, y);
	case 18: return expr_ne(&G, x, y);
	case 19: return next() % 2 ? expr_and(&G, x, y) : expr_or(&G, x, y);
	case 20: return expr_not(&G, x);
	case 21: return expr_ite(&G, random_tree(depth - 1, rdiv), x, y);
	case 22: return as_int(expr_mul(&G, expr_to_real(&G, x), expr_real(&G, 0.5)));
	default: return as_int(expr_add(&G, expr_to_real(&G, x), y));
	}
}

/* A Z3 model assigning vv to the graph's variables (owned by the caller). */
static Z3_model
model_of(struct z3c *z, const union expr_val *vv)
{
	Z3_model m = Z3_mk_model(z->ctx);

	Z3_model_inc_ref(z->ctx, m);
	for (int32_t i = 0; i < z->g->nvars; i++) {
		Z3_ast c = z3c_var(z, i);
		Z3_func_decl d = Z3_get_app_decl(z->ctx, Z3_to_app(z->ctx, c));
		Z3_ast v = z->g->vars[i].type == EXPR_INT ? z3c_int(z, vv[i].i) : z3c_real(z, vv[i].r);

		ck_assert_ptr_nonnull(v);
		Z3_add_const_interp(z->ctx, m, d, v);
	}
	return m;
}

static Z3_ast
eval_in(struct z3c *z, Z3_model m, Z3_ast t)
{
	Z3_ast v = NULL;

	ck_assert(Z3_model_eval(z->ctx, m, t, true, &v));
	return z3c_keep(z, v);
}

/* "var == value" for each variable, into a[0..nvars). */
static void
pin_vars(struct z3c *z, const union expr_val *vv, Z3_ast *a)
{
	for (int32_t i = 0; i < z->g->nvars; i++) {
		Z3_ast v = z->g->vars[i].type == EXPR_INT ? z3c_int(z, vv[i].i) : z3c_real(z, vv[i].r);

		a[i] = z3c_keep(z, Z3_mk_eq(z->ctx, z3c_var(z, i), v));
		ck_assert_ptr_nonnull(a[i]);
	}
}

/* ---- semantics ---- */

/*
 * Random distinct values of x (INT), y (INT) and r (REAL, quarters), four
 * each, declared as their domains with z3c_var_domain (so that nonlinear
 * nodes become tables), into dom[var][0..4).
 */
static void
declare_domains(struct z3c *z, union expr_val dom[3][4])
{
	for (int v = 0; v < 3; v++) {
		for (int k = 0; k < 4; k++) {
			int dup;
			do {
				if (v < 2)
					dom[v][k].i = rand_in(-5, 5);
				else
					dom[v][k].r = (double)rand_in(-12, 12) / 4.0;
				dup = 0;
				for (int j = 0; j < k; j++)
					dup |= v < 2 ? dom[v][j].i == dom[v][k].i : dom[v][j].r == dom[v][k].r;
			} while (dup);
		}
		ck_assert_ptr_nonnull(z3c_var_domain(z, v, dom[v], 4));
	}
}

/*
 * How many random cases a property test draws: all of them with the Z3
 * cross-checks (DNNSAT_TEST_Z3, the plain pass of scripts/test.sh), the
 * first quarter (the same draws) without them, which is the sanitized pass:
 * there the cases check our glue for memory errors, at 5 to 7 times the
 * plain cost under ASan's allocator.
 */
static int
z3_cases(int all)
{
	return test_z3_enabled() ? all : all / 4;
}

/*
 * Every node of random trees, as a Z3 term, has expr_eval's value at
 * random points, and the solver agrees on the root. With `domains`, the
 * variables have declared domains (z3c_var_domain: tables) and the points
 * are drawn from them.
 */
static void
semantics_property(int domains)
{
	int trees = 0, checked = 0, tainted = 0, faults = 0, solver_checks = 0;
	double t0 = now();
	const int ntrials = z3_cases(260);

	for (int trial = 0; trial < ntrials; trial++) {
		struct z3c z;
		struct dn_error err;
		union expr_val *vals, vv[3], dom[3][4];
		Z3_ast *t;
		uint8_t *taint;
		expr_id root;

		memset(&err, 0, sizeof err);
		graph_new();
		root = random_tree(5, 1);
		ck_assert_int_ge(root, 0);
		ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
		if (domains)
			declare_domains(&z, dom);
		t = calloc((size_t)G.n, sizeof *t);
		vals = calloc((size_t)G.n, sizeof *vals);
		taint = calloc((size_t)G.n, 1);
		/* the root first: every node below it is translated by one walk */
		ck_assert_ptr_nonnull(z3c_term(&z, root));
		for (expr_id n = 0; n < G.n; n++) {
			t[n] = z3c_term(&z, n);
			ck_assert_msg(t[n] != NULL, "node %d: %s", n, z.pending.message);
		}
		ck_assert_ptr_eq(z3c_term(&z, root), t[root]);  /* memoized */
		for (int pt = 0; pt < 4; pt++) {
			Z3_model m;

			vv[0].i = rand_in(-5, 5);
			vv[1].i = rand_in(-5, 5);
			vv[2].r = (double)rand_in(-12, 12) / 4.0;
			if (domains)
				for (int v = 0; v < 3; v++)
					vv[v] = dom[v][next() % 4];
			if (expr_eval(&G, vv, vals, NULL) != 0) {
				faults++;       /* an int64 overflow: Z3 is unbounded */
				continue;
			}
			m = model_of(&z, vv);
			for (expr_id n = 0; n < G.n; n++) {
				const struct expr_node *nd = &G.nodes[n];
				Z3_ast v = eval_in(&z, m, t[n]);
				int kid = 0, same;
				char buf[256];

				if (nd->kind != EK_CONST && nd->kind != EK_VAR)
					kid = (nd->a >= 0 && taint[nd->a]) || (nd->b >= 0 && taint[nd->b]) ||
					    (nd->c >= 0 && taint[nd->c]);
				expr_format(&G, n, buf, sizeof buf);
				if (nd->type == EXPR_INT) {
					int64_t zi = 0;

					same = Z3_get_numeral_int64(z.ctx, v, &zi) && zi == vals[n].i;
					ck_assert_msg(same || kid, "node %d %s at x=%" PRId64 " y=%" PRId64
					    " r=%g: Z3 %s, eval %" PRId64, n, buf, vv[0].i, vv[1].i, vv[2].r,
					    Z3_ast_to_string(z.ctx, v), vals[n].i);
				} else {
					same = Z3_is_eq_ast(z.ctx, v, z3c_real(&z, vals[n].r));
					/* a rounded operation on exact operands is within an ulp */
					if (!same && !kid) {
						double zd = Z3_get_numeral_double(z.ctx, v);

						ck_assert_msg(fabs(zd - vals[n].r) <= 1e-15 * fmax(1.0, fabs(zd)),
						    "node %d %s: Z3 %s, eval %.17g", n, buf,
						    Z3_ast_to_string(z.ctx, v), vals[n].r);
					}
				}
				taint[n] = !same;
				if (same)
					checked++;
				else
					tainted++;
			}
			Z3_model_dec_ref(z.ctx, m);
			/* the solver (not only the evaluator) agrees on the root; every
			 * fourth tree, a model read back too (a check costs ~15 ms) */
			if (pt == 0 && !taint[root]) {
				Z3_ast a[4], val;
				union expr_val got[3];

				pin_vars(&z, vv, a);
				val = expr_type_of(&G, root) == EXPR_INT ? z3c_int(&z, vals[root].i) :
				    z3c_real(&z, vals[root].r);
				a[3] = z3c_keep(&z, Z3_mk_eq(z.ctx, t[root], val));
				if (trial % 4 == 0) {
					ck_assert_int_eq(z3c_check(&z, a, 4, got, &err), Z3C_SAT);
					ck_assert(got[0].i == vv[0].i && got[1].i == vv[1].i &&
					    got[2].r == vv[2].r);
					solver_checks++;
				}
				a[3] = z3c_keep(&z, Z3_mk_not(z.ctx, a[3]));
				ck_assert_msg(z3c_check(&z, a, 4, NULL, &err) == Z3C_UNSAT, "%s", err.message);
				solver_checks++;
			}
		}
		trees++;
		free(t);
		free(vals);
		free(taint);
		z3c_free(&z);
		expr_graph_free(&G);
	}
	printf("semantics%s: %d trees, %d node values equal, %d skipped after inexact real "
	    "division, %d overflowing points, %d solver checks, %.2f s\n",
	    domains ? " (declared domains: tables)" : "", trees, checked, tainted, faults,
	    solver_checks, now() - t0);
	ck_assert_int_ge(trees, ntrials * 10 / 13);
	ck_assert_int_gt(checked, 20 * tainted);
}

START_TEST(test_semantics_property)
{
	semantics_property(0);
}
END_TEST

START_TEST(test_semantics_tables)
{
	semantics_property(1);
}
END_TEST

/* Hand-picked corners of the total semantics, checked against expr_eval. */
START_TEST(test_semantics_corners)
{
	static const int64_t xs[] = { -7, -6, -1, 0, 1, 6, 7, INT64_MAX, INT64_MIN + 1 };
	static const int64_t ys[] = { -3, -1, 0, 1, 3, INT64_MAX };
	static const double rs[] = { -2.5, -1.5, -0.5, -0.25, 0.0, 0.5, 1.5, 2.5, 2.4999999999999996,
		0.49999999999999994, -0.49999999999999994, 1e300, -1e-300 };
	struct z3c z;
	struct dn_error err;
	expr_id e[12];
	union expr_val *vals, vv[3];

	memset(&err, 0, sizeof err);
	e[0] = expr_div(&G, expr_var(&G, 0), expr_var(&G, 1));
	e[1] = expr_cdiv(&G, expr_var(&G, 0), expr_var(&G, 1));
	e[2] = expr_mod(&G, expr_var(&G, 0), expr_var(&G, 1));
	e[3] = expr_div(&G, expr_var(&G, 0), expr_int(&G, -3));
	e[4] = expr_cdiv(&G, expr_var(&G, 0), expr_int(&G, -3));
	e[5] = expr_mod(&G, expr_var(&G, 0), expr_int(&G, -3));
	e[6] = expr_mod(&G, expr_var(&G, 0), expr_int(&G, 0));
	e[7] = expr_div(&G, expr_var(&G, 2), expr_to_real(&G, expr_var(&G, 1)));
	e[8] = expr_round(&G, expr_var(&G, 2));
	e[9] = expr_ceil(&G, expr_var(&G, 2));
	e[10] = expr_floor(&G, expr_var(&G, 2));
	e[11] = expr_cdiv(&G, expr_var(&G, 0), expr_int(&G, 0));
	for (int i = 0; i < 12; i++)
		ck_assert_int_ge(e[i], 0);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	vals = calloc((size_t)G.n, sizeof *vals);
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
		for (size_t j = 0; j < sizeof ys / sizeof ys[0]; j++) {
			size_t k = (i * 7 + j) % (sizeof rs / sizeof rs[0]);
			Z3_model m;

			vv[0].i = xs[i];
			vv[1].i = ys[j];
			vv[2].r = rs[k];
			if (expr_eval(&G, vv, vals, NULL) != 0)
				continue;
			m = model_of(&z, vv);
			for (int n = 0; n < 12; n++) {
				Z3_ast v = eval_in(&z, m, z3c_term(&z, e[n]));
				int64_t zi = 0;

				if (expr_type_of(&G, e[n]) == EXPR_INT) {
					ck_assert_msg(Z3_get_numeral_int64(z.ctx, v, &zi) && zi == vals[e[n]].i,
					    "e[%d] x=%" PRId64 " y=%" PRId64 " r=%.17g: Z3 %s, eval %" PRId64,
					    n, xs[i], ys[j], rs[k], Z3_ast_to_string(z.ctx, v), vals[e[n]].i);
				} else if (vv[1].i == 0 || vv[1].i == 1 || vv[1].i == -1) {
					ck_assert(Z3_is_eq_ast(z.ctx, v, z3c_real(&z, vals[e[n]].r)));
				}
			}
			Z3_model_dec_ref(z.ctx, m);
		}
	free(vals);
	/* constants are exact rationals */
	ck_assert_str_eq(Z3_get_numeral_string(z.ctx, z3c_real(&z, 0.1)),
	    "3602879701896397/36028797018963968");
	ck_assert_str_eq(Z3_get_numeral_string(z.ctx, z3c_real(&z, -1e23)),
	    "-99999999999999991611392");
	ck_assert_str_eq(Z3_get_numeral_string(z.ctx, z3c_real(&z, 0x1p-1074)),
	    "1/202402253307310618352495346718917307049556649764142118356901358027430339567995346891960383701437124495187077864316811911389808737385793476867013399940738509921517424276566361364466907742093216341239767678472745068562007483424692698618103355649159556340810056512358769552333414615230502532186327508646006263307707741093494784");
	z3c_free(&z);
}
END_TEST

/* A chain of 10^5 additions translates without deep recursion. (Distinct
 * constants: a chain repeating one shape, x + 3 + 3 + ..., makes Z3's
 * hash-consing quadratic, ~30 s, whatever the translation does.) */
START_TEST(test_deep_chain)
{
	struct z3c z;
	struct dn_error err;
	expr_id e = expr_var(&G, 0);
	union expr_val vv[3], got[3];
	Z3_ast a[4];
	Z3_model m;
	int64_t zi = 0;
	double t0 = now();

	memset(&err, 0, sizeof err);
	for (int i = 0; i < 100000; i++)
		e = expr_add(&G, e, i % 2 ? expr_var(&G, 1) : expr_int(&G, i));
	ck_assert_int_ge(e, 0);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	ck_assert_ptr_nonnull(z3c_term(&z, e));
	vv[0].i = 1;
	vv[1].i = 2;
	vv[2].r = 0;
	m = model_of(&z, vv);
	ck_assert(Z3_get_numeral_int64(z.ctx, eval_in(&z, m, z3c_term(&z, e)), &zi));
	ck_assert_int_eq(zi, 1 + 49999LL * 50000 + 50000 * 2);  /* x + even i + y's */
	Z3_model_dec_ref(z.ctx, m);
	/* and the solver takes it: y is implied by x and the sum */
	pin_vars(&z, vv, a);
	a[1] = z3c_keep(&z, Z3_mk_eq(z.ctx, z3c_term(&z, e), z3c_int(&z, zi)));
	ck_assert_int_eq(z3c_check(&z, a, 2, got, &err), Z3C_SAT);
	ck_assert_int_eq(got[1].i, 2);
	printf("deep chain: %d nodes translated and solved in %.2f s\n", G.n, now() - t0);
	z3c_free(&z);
}
END_TEST

/* Building Z3's terms is our own work, which Z3's limits do not bound:
 * it stops at the thread's deadline (the request's, dn_deadline.h) with
 * DN_ETIMEOUT, in the translation walk and in z3c_at_most's spreading.
 * (A service request whose model built just within its deadline and then
 * fitted nothing spread its memory budget over 48,000 operators for
 * minutes, the deadline long past: tests/unit/test_server's queue test
 * hung on a fast machine.) */
START_TEST(test_deadline_stops_translation)
{
	struct z3c z;
	struct dn_error err;
	expr_id e = expr_var(&G, 0), m;

	memset(&err, 0, sizeof err);
	for (int i = 0; i < 5000; i++)
		e = expr_add(&G, e, expr_int(&G, 7 * i + 3));
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	dn_deadline_set(dn_deadline_now() - 1, NULL);
	ck_assert_ptr_null(z3c_term(&z, e));
	dn_deadline_clear();
	ck_assert_int_ne(z3c_error(&z, &err), 0);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	ck_assert_msg(strstr(err.message, "compiling the query for Z3") != NULL, "%s", err.message);
	z3c_free(&z);
	/* a budget over a maximum of sums, its terms already made */
	m = expr_max(&G, expr_add(&G, expr_var(&G, 0), expr_var(&G, 1)), expr_add(&G, expr_var(&G, 1), expr_int(&G, 5)));
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	ck_assert_ptr_nonnull(z3c_term(&z, m));
	ck_assert_ptr_nonnull(z3c_at_most(&z, m, z3c_int(&z, 10)));
	dn_deadline_set(dn_deadline_now() - 1, NULL);
	ck_assert_ptr_null(z3c_at_most(&z, m, z3c_int(&z, 11)));
	dn_deadline_clear();
	ck_assert_int_ne(z3c_error(&z, &err), 0);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	z3c_free(&z);
}
END_TEST

/* ---- enumerate ---- */

struct pairs {
	int64_t (*p)[2];
	int n, cap;
	double r;
	int bad_r;
};

static int
collect(void *ctx, const union expr_val *model)
{
	struct pairs *ps = ctx;

	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 64;
		ps->p = realloc(ps->p, sizeof *ps->p * (size_t)ps->cap);
	}
	ps->p[ps->n][0] = model[0].i;
	ps->p[ps->n][1] = model[1].i;
	ps->n++;
	if (model[2].r != ps->r)
		ps->bad_r++;
	return 0;
}

static int
pair_cmp(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int
stop_after_two(void *ctx, const union expr_val *model)
{
	(void)model;
	return ++*(int *)ctx >= 2;
}

/* Random small domains: x listed, y a progression, r fixed. */
struct domains {
	int64_t xs[8];
	int nx;
	int64_t y0, ystep, ny;
	double r;
};

static void
domains_random(struct domains *d, int xlo, int xhi, int nx)
{
	static const int64_t steps[] = { 1, 2, 3, -1, -2 };

	d->nx = nx;
	for (int i = 0; i < nx; i++) {
		int dup;

		do {
			d->xs[i] = rand_in(xlo, xhi);
			dup = 0;
			for (int j = 0; j < i; j++)
				dup |= d->xs[j] == d->xs[i];
		} while (dup);
	}
	d->y0 = rand_in(-6, 2);
	d->ystep = steps[next() % 5];
	d->ny = rand_in(3, 6);
	d->r = (double)rand_in(-8, 8) / 4.0;
}

/* The domains as assertions a[0..3): plain constraints, or with `declare`
 * declared domains (z3c_var_domain), which turn nonlinear nodes compiled
 * afterwards into tables. */
static void
domains_assert(struct z3c *z, const struct domains *d, Z3_ast *a, int declare)
{
	union expr_val xs[8], ys[8], r;

	if (!declare) {
		a[0] = z3c_var_in_ints(z, 0, d->xs, d->nx);
		a[1] = z3c_var_in_progression(z, 1, d->y0, d->ystep, d->ny);
		a[2] = z3c_var_in_range_real(z, 2, d->r, d->r);
	} else {
		for (int i = 0; i < d->nx; i++)
			xs[i].i = d->xs[i];
		for (int64_t j = 0; j < d->ny; j++)
			ys[j].i = d->y0 + j * d->ystep;
		r.r = d->r;
		a[0] = z3c_var_domain(z, 0, xs, d->nx);
		a[1] = z3c_var_domain(z, 1, ys, d->ny);
		a[2] = z3c_var_domain(z, 2, &r, 1);
	}
	ck_assert(a[0] != NULL && a[1] != NULL && a[2] != NULL);
}

/* z3c_models_are on the sorted list want of every model (x, y, with r at
 * d->r): yes; without its last model, that model is left; with a point
 * off x's domain added, that point is not a model. */
static void
models_are_want(struct z3c *z, const Z3_ast *a, const struct pairs *want, const struct domains *d)
{
	union expr_val *pts = calloc((size_t)(3 * want->n + 3), sizeof *pts), m[3];
	int32_t vs[3] = { 0, 1, 2 };
	struct dn_error err;
	int64_t bad;
	int n = want->n;

	memset(&err, 0, sizeof err);
	for (int i = 0; i < n; i++) {
		pts[3 * i].i = want->p[i][0];
		pts[3 * i + 1].i = want->p[i][1];
		pts[3 * i + 2].r = d->r;
	}
	ck_assert_msg(z3c_models_are(z, a, 4, vs, 3, pts, n, &bad, m, &err) == 0, "%s", err.message);
	if (n > 0) {
		ck_assert_int_eq(z3c_models_are(z, a, 4, vs, 3, pts, n - 1, &bad, m, &err), 1);
		ck_assert(bad == -1 && m[0].i == want->p[n - 1][0] && m[1].i == want->p[n - 1][1] && m[2].r == d->r);
	}
	pts[3 * n].i = 1000;    /* the domains are within [-8, 8] */
	pts[3 * n + 1].i = d->y0;
	pts[3 * n + 2].r = d->r;
	ck_assert_int_eq(z3c_models_are(z, a, 4, vs, 3, pts, n + 1, &bad, NULL, &err), 1);
	ck_assert_int_eq(bad, n);
	free(pts);
}

START_TEST(test_enumerate_brute_force)
{
	int cases = 0, skipped = 0, total = 0;
	double t0 = now();

	while (cases < z3_cases(100)) {
		struct z3c z;
		struct dn_error err;
		struct domains d;
		struct pairs got = { 0 }, want = { 0 };
		union expr_val *vals, vv[3];
		Z3_ast a[4];
		expr_id c;
		int fault = 0, stopped = 0;
		int64_t n;

		memset(&err, 0, sizeof err);
		graph_new();
		c = random_tree(4, 0);
		domains_random(&d, -8, 8, 5);
		vals = calloc((size_t)G.n, sizeof *vals);
		want.r = got.r = d.r;
		vv[2].r = d.r;
		for (int i = 0; i < d.nx && !fault; i++)
			for (int64_t j = 0; j < d.ny; j++) {
				vv[0].i = d.xs[i];
				vv[1].i = d.y0 + j * d.ystep;
				if (expr_eval(&G, vv, vals, NULL) != 0) {
					fault = 1;
					break;
				}
				if (expr_type_of(&G, c) == EXPR_INT ? vals[c].i != 0 : vals[c].r != 0.0)
					collect(&want, vv);
			}
		free(vals);
		if (fault) {
			skipped++;
			expr_graph_free(&G);
			continue;
		}
		ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
		domains_assert(&z, &d, a, cases % 2);
		a[3] = z3c_bool(&z, c);
		ck_assert_ptr_nonnull(a[3]);
		n = z3c_enumerate(&z, a, 4, 0, collect, &got, &err);
		ck_assert_msg(n >= 0, "%s", err.message);
		ck_assert_int_eq(n, got.n);
		ck_assert_int_eq(got.bad_r, 0);
		if (got.n > 0)
			qsort(got.p, (size_t)got.n, sizeof *got.p, pair_cmp);
		if (want.n > 0)
			qsort(want.p, (size_t)want.n, sizeof *want.p, pair_cmp);
		ck_assert_int_eq(got.n, want.n);
		for (int i = 0; i < got.n; i++)
			ck_assert(got.p[i][0] == want.p[i][0] && got.p[i][1] == want.p[i][1]);
		/* a limit, and a callback that stops */
		got.n = 0;
		ck_assert_int_eq(z3c_enumerate(&z, a, 4, 1, collect, &got, &err), want.n > 0 ? 1 : 0);
		if (want.n >= 3)
			ck_assert_int_eq(z3c_enumerate(&z, a, 4, 0, stop_after_two, &stopped, &err), 2);
		models_are_want(&z, a, &want, &d);
		total += want.n;
		free(got.p);
		free(want.p);
		z3c_free(&z);
		expr_graph_free(&G);
		cases++;
	}
	printf("enumerate: %d cases (%d skipped for overflow), %d models, %.2f s\n", cases,
	    skipped, total, now() - t0);
}
END_TEST

static int
count_only(void *ctx, const union expr_val *model)
{
	(void)model;
	++*(int64_t *)ctx;
	return 0;
}

/* Long grids become ranges; both kinds of variable. */
START_TEST(test_domains)
{
	struct z3c z;
	struct dn_error err;
	int64_t vals[100], n = 0;
	Z3_ast a[2];

	memset(&err, 0, sizeof err);
	graph_new();
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	for (int i = 0; i < 100; i++)
		vals[i] = 1000 - 7 * i;
	a[0] = z3c_var_in_ints(&z, 0, vals, 100);
	ck_assert_ptr_nonnull(a[0]);
	ck_assert_int_eq(z3c_enumerate(&z, a, 1, 0, count_only, &n, &err), 100);
	/* a Real variable on an integer grid, within a real range */
	a[0] = z3c_var_in_progression(&z, 2, -10, 5, 9);  /* -10, -5, ..., 30 */
	a[1] = z3c_var_in_range_real(&z, 2, -6.5, INFINITY);
	n = 0;
	ck_assert_int_eq(z3c_enumerate(&z, a, 2, 0, count_only, &n, &err), 8);
	/* empty domains */
	a[0] = z3c_var_in_ints(&z, 1, vals, 0);
	ck_assert_int_eq(z3c_check(&z, a, 1, NULL, &err), Z3C_UNSAT);
	a[0] = z3c_var_in_range_real(&z, 2, 1.0, 0.5);
	ck_assert_int_eq(z3c_check(&z, a, 1, NULL, &err), Z3C_UNSAT);
	/* a grid beyond 64 bits is refused */
	ck_assert_ptr_null(z3c_var_in_progression(&z, 0, INT64_MAX - 5, 3, 4));
	ck_assert_int_eq(z3c_error(&z, &err), -1);
	ck_assert_int_eq(err.code, DN_ERANGE);
	z3c_free(&z);
	expr_graph_free(&G);
}
END_TEST

/* The top function of term t. */
static Z3_decl_kind
top_kind(struct z3c *z, Z3_ast t)
{
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(Z3_get_ast_kind(z->ctx, t), Z3_APP_AST);
	return Z3_get_decl_kind(z->ctx, Z3_get_app_decl(z->ctx, Z3_to_app(z->ctx, t)));
}

/* Declared domains make nonlinear nodes tables, and only those: a product,
 * a division and a rounding over declared variables are ites of numerals,
 * a sum is not, a product with an undeclared variable neither; a variable
 * declared twice, or a value that is not a number, is an error. */
START_TEST(test_tables)
{
	struct z3c z;
	struct dn_error err;
	union expr_val xs[3] = { { .i = 2 }, { .i = -3 }, { .i = 0 } }, ys[2] = { { .i = 5 }, { .i = 7 } };
	expr_id x = expr_var(&G, 0), y = expr_var(&G, 1), r = expr_var(&G, 2);
	expr_id prod = expr_mul(&G, x, y), quot = expr_div(&G, y, x), sum = expr_add(&G, x, y);
	expr_id open = expr_mul(&G, x, expr_floor(&G, r)), rnd = expr_round(&G, expr_div(&G,
	    expr_to_real(&G, y), expr_real(&G, 4.0)));
	static const int64_t want[3][2] = { { 2, 3 }, { -2, -3 }, { 0, 0 } };
	Z3_ast t;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	ck_assert_ptr_nonnull(z3c_var_domain(&z, 0, xs, 3));
	ck_assert_ptr_nonnull(z3c_var_domain(&z, 1, ys, 2));
	ck_assert_int_eq(top_kind(&z, z3c_term(&z, prod)), Z3_OP_ITE);
	ck_assert_int_eq(top_kind(&z, z3c_term(&z, quot)), Z3_OP_ITE);
	ck_assert_int_eq(top_kind(&z, z3c_term(&z, rnd)), Z3_OP_ITE);
	ck_assert_int_eq(top_kind(&z, z3c_term(&z, sum)), Z3_OP_ADD);
	ck_assert_int_eq(top_kind(&z, z3c_term(&z, open)), Z3_OP_MUL);
	/* the leaves are floor division's values (x = 0: 0, expr.h) */
	t = z3c_term(&z, quot);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++) {
			Z3_ast from[2] = { z3c_var(&z, 0), z3c_var(&z, 1) };
			Z3_ast to[2] = { z3c_int(&z, xs[i].i), z3c_int(&z, ys[j].i) };
			Z3_ast v = z3c_keep(&z, Z3_simplify(z.ctx, Z3_substitute(z.ctx, t, 2, from, to)));
			int64_t got;
			ck_assert(Z3_get_numeral_int64(z.ctx, v, &got));
			ck_assert_int_eq(got, want[i][j]);
		}
	ck_assert_ptr_null(z3c_var_domain(&z, 0, xs, 3));
	ck_assert_int_eq(z3c_error(&z, &err), -1);
	ck_assert_int_eq(err.code, DN_EINVAL);
	/* a real domain with a value that is no number */
	{
		union expr_val bad[2] = { { .r = 0.5 }, { .r = NAN } };
		memset(&err, 0, sizeof err);
		ck_assert_ptr_null(z3c_var_domain(&z, 2, bad, 2));
		ck_assert_int_eq(z3c_error(&z, &err), -1);
		ck_assert_int_eq(err.code, DN_ERANGE);
	}
	z3c_free(&z);
}
END_TEST

/* ---- optimize ---- */

START_TEST(test_optimize_brute_force)
{
	int cases = 0, unsat = 0;
	double t0 = now();

	while (cases < 30) {
		struct z3c z;
		struct dn_error err;
		struct domains d;
		union expr_val *vals, vv[3], best[3], bv;
		Z3_ast a[4];
		expr_id c, obj;
		int maximize = cases % 2 == 0, found = 0, fault = 0;
		int64_t want = 0;
		enum z3c_answer ans;

		memset(&err, 0, sizeof err);
		graph_new();
		c = random_tree(4, 0);
		obj = maximize ? expr_var(&G, 0) :
		    expr_sub(&G, expr_var(&G, 0), expr_mul(&G, expr_int(&G, 2), expr_var(&G, 1)));
		domains_random(&d, -50, 50, 8);
		vals = calloc((size_t)G.n, sizeof *vals);
		vv[2].r = d.r;
		for (int i = 0; i < d.nx && !fault; i++)
			for (int64_t j = 0; j < d.ny; j++) {
				vv[0].i = d.xs[i];
				vv[1].i = d.y0 + j * d.ystep;
				if (expr_eval(&G, vv, vals, NULL) != 0) {
					fault = 1;
					break;
				}
				if (expr_type_of(&G, c) == EXPR_INT ? vals[c].i == 0 : vals[c].r == 0.0)
					continue;
				if (!found || (maximize ? vals[obj].i > want : vals[obj].i < want))
					want = vals[obj].i;
				found = 1;
			}
		if (fault) {
			free(vals);
			expr_graph_free(&G);
			continue;
		}
		ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
		domains_assert(&z, &d, a, cases % 2);
		a[3] = z3c_bool(&z, c);
		ans = z3c_optimize(&z, a, 4, obj, maximize, best, &bv, &err);
		ck_assert_msg(ans == (found ? Z3C_SAT : Z3C_UNSAT), "answer %d: %s", ans, err.message);
		if (found) {
			ck_assert_int_eq(bv.i, want);
			/* the model is feasible and has that value */
			ck_assert_int_eq(expr_eval(&G, best, vals, NULL), 0);
			ck_assert(expr_type_of(&G, c) == EXPR_INT ? vals[c].i != 0 : vals[c].r != 0.0);
			ck_assert_int_eq(vals[obj].i, want);
		} else
			unsat++;
		free(vals);
		z3c_free(&z);
		expr_graph_free(&G);
		cases++;
	}
	printf("optimize: %d cases (%d infeasible), %.2f s\n", cases, unsat, now() - t0);
}
END_TEST

/* An unbounded objective is an error, not a wrong answer. */
START_TEST(test_optimize_unbounded)
{
	struct z3c z;
	struct dn_error err;
	Z3_ast a[1];
	union expr_val bv;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	a[0] = z3c_bool(&z, expr_ge(&G, expr_var(&G, 0), expr_int(&G, 3)));
	ck_assert_int_eq(z3c_optimize(&z, a, 1, expr_var(&G, 0), 1, NULL, &bv, &err), Z3C_ERROR);
	ck_assert_int_eq(err.code, DN_ERANGE);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_optimize(&z, a, 1, expr_var(&G, 0), 0, NULL, &bv, &err), Z3C_SAT);
	ck_assert_int_eq(bv.i, 3);
	z3c_free(&z);
}
END_TEST

/* ---- explain ---- */

START_TEST(test_explain_core)
{
	static const char *const names[] = { "x>=10", "x<=5", "x!=7", "2x==20", "x%3==0", "y<x" };
	struct z3c z;
	struct dn_error err;
	expr_id x = expr_var(&G, 0), y = expr_var(&G, 1);
	expr_id cons[6];
	Z3_ast dom[2], lab[6], probe[8];
	int core[6], ncore = -1;

	memset(&err, 0, sizeof err);
	cons[0] = expr_ge(&G, x, expr_int(&G, 10));
	cons[1] = expr_le(&G, x, expr_int(&G, 5));
	cons[2] = expr_ne(&G, x, expr_int(&G, 7));
	cons[3] = expr_eq(&G, expr_mul(&G, expr_int(&G, 2), x), expr_int(&G, 20));
	cons[4] = expr_eq(&G, expr_mod(&G, x, expr_int(&G, 3)), expr_int(&G, 0));
	cons[5] = expr_lt(&G, y, x);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	dom[0] = z3c_var_in_progression(&z, 0, 0, 1, 101);
	dom[1] = z3c_var_in_progression(&z, 1, 0, 1, 101);
	for (int i = 0; i < 6; i++)
		lab[i] = z3c_bool(&z, cons[i]);
	/* two conflicts: {0, 1} and {3, 4}; whichever core comes back must be
	 * unsatisfiable and minimal */
	ck_assert_int_eq(z3c_explain(&z, dom, 2, lab, names, 6, core, &ncore, &err), Z3C_UNSAT);
	ck_assert_int_ge(ncore, 1);
	ck_assert_int_le(ncore, 2);
	probe[0] = dom[0];
	probe[1] = dom[1];
	for (int i = 0; i < ncore; i++)
		probe[2 + i] = lab[core[i]];
	ck_assert_int_eq(z3c_check(&z, probe, 2 + ncore, NULL, &err), Z3C_UNSAT);
	for (int skip = 0; skip < ncore; skip++) {
		int k = 2;

		for (int i = 0; i < ncore; i++)
			if (i != skip)
				probe[k++] = lab[core[i]];
		ck_assert_int_eq(z3c_check(&z, probe, k, NULL, &err), Z3C_SAT);
	}
	printf("explain: core {");
	for (int i = 0; i < ncore; i++)
		printf(" %s", names[core[i]]);
	printf(" }\n");
	/* without constraint 1: the core is {3, 4} */
	lab[1] = lab[2];
	ck_assert_int_eq(z3c_explain(&z, dom, 2, lab, NULL, 6, core, &ncore, &err), Z3C_UNSAT);
	ck_assert_int_eq(ncore, 2);
	ck_assert_int_eq(core[0], 3);
	ck_assert_int_eq(core[1], 4);
	/* consistent labels: sat, empty core */
	ck_assert_int_eq(z3c_explain(&z, dom, 2, lab, NULL, 3, core, &ncore, &err), Z3C_SAT);
	ck_assert_int_eq(ncore, 0);
	/* assertions unsatisfiable on their own: unsat with an empty core */
	probe[0] = lab[0];
	probe[1] = z3c_bool(&z, expr_le(&G, x, expr_int(&G, 0)));
	ck_assert_int_eq(z3c_explain(&z, probe, 2, lab + 2, NULL, 3, core, &ncore, &err), Z3C_UNSAT);
	ck_assert_int_eq(ncore, 0);
	z3c_free(&z);
}
END_TEST

/* ---- a real cost-model graph ---- */

START_TEST(test_resnet_memory)
{
	struct tmodel t;
	struct cm_workload wl = test_workload(1);
	struct cm_device dev = test_device();
	struct dn_error err;
	union expr_val *zmodel, bv;
	struct expr_ival *bounds;
	const struct expr_graph *g;
	struct z3c z;
	expr_id mem, bvar = EXPR_NONE;
	int ib, want = 0;
	const int64_t budget = 16LL << 30;
	Z3_ast mt, a[2], fits, le;
	Z3_model zm;
	double t0, t1, t2, t3;

	memset(&t, 0, sizeof t);
	memset(&err, 0, sizeof err);
	ck_assert_msg(cm_def_load_template("resnet", &t.def, &t.err) == 0, "%s", t.err.message);
	t.cfg = calloc((size_t)t.def->nhps, sizeof *t.cfg);
	bounds = calloc((size_t)t.def->nhps, sizeof *bounds);
	cm_config_defaults(t.def, t.cfg);
	ck_assert_int_eq(cm_config_apply_preset(t.def, "resnet50", t.cfg, &err), 0);
	for (int i = 0; i < t.def->nhps; i++)
		bounds[i].lo = bounds[i].hi = t.cfg[i];
	ib = cm_def_find_hp(t.def, "batch_size");
	bounds[ib].lo.i = 1;
	bounds[ib].hi.i = 512;
	ck_assert_msg(cm_model_build(t.def, &wl, &dev, bounds, &t.m, &t.err) == 0, "%s", t.err.message);
	t.scratch = calloc((size_t)cm_model_scratch_len(t.m), sizeof *t.scratch);
	g = cm_model_graph(t.m);
	mem = cm_model_metric(t.m, CM_M_MEM_TRAIN);
	for (expr_id i = 0; i < g->n; i++)
		if (g->nodes[i].kind == EK_VAR && g->nodes[i].k.i == ib)
			bvar = i;
	ck_assert_int_ge(bvar, 0);
	/* brute force: the largest batch whose training memory fits */
	for (int b = 1; b <= 512; b++) {
		t.cfg[ib].i = b;
		tmodel_eval(&t);
		if (t.r.mem_train <= budget)
			want = b;
	}
	ck_assert_int_gt(want, 1);
	ck_assert_int_lt(want, 512);
	t0 = now();
	ck_assert_int_eq(z3c_init(&z, g, 0, TEST_RLIMIT_RESNET, &err), 0);
	mt = z3c_term(&z, mem);
	ck_assert_msg(mt != NULL, "%s", z.pending.message);
	fits = z3c_at_most(&z, mem, z3c_int(&z, budget));
	le = z3c_keep(&z, Z3_mk_le(z.ctx, mt, z3c_int(&z, budget)));
	ck_assert(fits != NULL && le != NULL);
	t1 = now();
	/* the term's value is the evaluator's, batch by batch, and the
	 * distributed bound is the plain one */
	zmodel = calloc((size_t)g->nvars, sizeof *zmodel);
	memcpy(zmodel, t.cfg, sizeof *zmodel * (size_t)g->nvars);
	for (int k = 0; k < 10; k++) {
		int64_t b = k == 0 ? 1 : k == 1 ? want : k == 2 ? want + 1 : k == 9 ? 512 :
		    rand_in(2, 511), zi = 0;

		t.cfg[ib].i = zmodel[ib].i = b;
		tmodel_eval(&t);
		zm = model_of(&z, zmodel);
		ck_assert(Z3_get_numeral_int64(z.ctx, eval_in(&z, zm, mt), &zi));
		ck_assert_msg(zi == t.r.mem_train, "batch %" PRId64 ": Z3 %" PRId64 ", eval %" PRId64,
		    b, zi, t.r.mem_train);
		ck_assert(Z3_get_bool_value(z.ctx, eval_in(&z, zm, fits)) == (b <= want ? Z3_L_TRUE : Z3_L_FALSE));
		ck_assert(Z3_get_bool_value(z.ctx, eval_in(&z, zm, le)) == (b <= want ? Z3_L_TRUE : Z3_L_FALSE));
		Z3_model_dec_ref(z.ctx, zm);
	}
	if (!test_z3_enabled()) {
		printf("resnet50 mem_train: %d graph nodes, compiled in %.3f s, the Z3 term equals the evaluator's "
		    "at 10 batches\n", g->n, t1 - t0);
		goto done;
	}
	a[0] = z3c_var_in_progression(&z, ib, 1, 1, 512);
	a[1] = fits;
	t2 = now();
	ck_assert_msg(z3c_optimize(&z, a, 2, bvar, 1, NULL, &bv, &err) == Z3C_SAT, "%s", err.message);
	t3 = now();
	ck_assert_int_eq(bv.i, want);
	printf("resnet50 mem_train: %d graph nodes, compiled in %.3f s; largest batch within 16 GiB: "
	    "%" PRId64 " (brute force %d); z3c_optimize took %.2f s\n", g->n, t1 - t0, bv.i, want,
	    t3 - t2);
	/* the same answer through checks: the best batch fits, one more does not */
	a[0] = z3c_keep(&z, Z3_mk_eq(z.ctx, z3c_var(&z, ib), z3c_int(&z, want)));
	ck_assert_int_eq(z3c_check(&z, a, 2, NULL, &err), Z3C_SAT);
	a[0] = z3c_keep(&z, Z3_mk_eq(z.ctx, z3c_var(&z, ib), z3c_int(&z, want + 1)));
	ck_assert_int_eq(z3c_check(&z, a, 2, NULL, &err), Z3C_UNSAT);
done:
	z3c_free(&z);
	free(zmodel);
	free(bounds);
	tmodel_free(&t);
}
END_TEST

/*
 * z3c_at_most is the plain inequality: random sums, maxima and scaled
 * terms over small domains, proved equivalent by Z3 (no counterexample).
 */
static expr_id
random_peak(int depth)
{
	int k = (int)(next() % 8);
	expr_id x, y;

	if (depth == 0 || k < 2) {
		switch (next() % 4) {
		case 0: return expr_var(&G, 0);
		case 1: return expr_var(&G, 1);
		case 2: return expr_int(&G, rand_in(-9, 9));
		default: return expr_cdiv(&G, expr_var(&G, 0), expr_int(&G, 4));
		}
	}
	x = random_peak(depth - 1);
	y = random_peak(depth - 1);
	switch (k) {
	case 2:
	case 3: return expr_max(&G, x, y);
	case 4:
	case 5: return expr_add(&G, x, y);
	case 6: return expr_mul(&G, expr_int(&G, rand_in(0, 4)), x);
	default: return next() % 2 ? expr_sub(&G, x, y) : expr_min(&G, x, y);
	}
}

START_TEST(test_at_most_equivalent)
{
	double t0 = now();

	for (int trial = 0; trial < 60; trial++) {
		struct z3c z;
		struct dn_error err;
		expr_id e;
		Z3_ast a[3], bound, spread, plain;
		int real = trial % 4 == 3;

		memset(&err, 0, sizeof err);
		graph_new();
		e = random_peak(5);
		if (real)
			e = expr_add(&G, e, expr_var(&G, 2));
		ck_assert_int_ge(e, 0);
		ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
		a[0] = z3c_var_in_progression(&z, 0, -20, 1, 41);
		a[1] = z3c_var_in_progression(&z, 1, -20, 1, 41);
		bound = real ? z3c_real(&z, (double)rand_in(-40, 40) / 4.0) : z3c_int(&z, rand_in(-30, 30));
		/* one Z3 call per statement: an unreferenced term dies at the next */
		spread = z3c_at_most(&z, e, bound);
		plain = z3c_keep(&z, Z3_mk_le(z.ctx, z3c_term(&z, e), bound));
		a[2] = z3c_keep(&z, Z3_mk_not(z.ctx, Z3_mk_eq(z.ctx, spread, plain)));
		ck_assert_ptr_nonnull(a[2]);
		ck_assert_msg(z3c_check(&z, a, 3, NULL, &err) == Z3C_UNSAT, "trial %d: %s", trial,
		    err.message);
		z3c_free(&z);
		expr_graph_free(&G);
	}
	printf("at_most: 60 random peaks proved equal to the plain bound, %.2f s\n", now() - t0);
}
END_TEST

/*
 * Past its caps, z3c_at_most collapses lists into fresh constants: the Bool
 * is then equisatisfiable with the plain bound on the graph's variables.
 * Random peaks (sums of maxima) over small domains with caps low enough
 * that most trials collapse (and, every third, a collapsed max added to itself: both
 * children are one list): the spread form implies the plain bound (no
 * counterexample, whatever the fresh constants), and Z3 enumerates as many
 * models of it as brute force with expr_eval finds, so the two have the
 * same models.
 */
START_TEST(test_at_most_collapsed)
{
	static const union expr_val reals[3] = { { .r = -1.5 }, { .r = 0.0 }, { .r = 2.25 } };
	double t0 = now();
	int64_t models = 0;
	int collapsed = 0;

	for (int trial = 0; trial < 40; trial++) {
		struct z3c z;
		struct dn_error err;
		expr_id e;
		Z3_ast a[4], bound, spread, plain;
		int real = trial % 4 == 3, na = real ? 3 : 2;
		int64_t bi = rand_in(-30, 30), want = 0, got = 0;
		double br = (double)rand_in(-40, 40) / 4.0;
		union expr_val *vals;

		memset(&err, 0, sizeof err);
		graph_new();
		/* a sum of maxima: at least four alternatives, past either cap */
		e = expr_add(&G, expr_max(&G, random_peak(5), random_peak(4)),
		    expr_max(&G, random_peak(4), random_peak(5)));
		if (trial % 3 == 0) {
			expr_id m = expr_max(&G, e, expr_add(&G, expr_var(&G, 0), expr_int(&G, 3)));
			e = expr_add(&G, m, m);
		}
		if (real)
			e = expr_add(&G, e, expr_var(&G, 2));
		ck_assert_int_ge(e, 0);
		ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
		z3c_set_at_most_caps(&z, trial % 2 ? 1 : 3, trial % 2 ? 1 : 6);
		a[0] = z3c_var_in_progression(&z, 0, -4, 1, 9);
		a[1] = z3c_var_in_progression(&z, 1, -4, 1, 9);
		if (real)
			a[2] = z3c_var_domain(&z, 2, reals, 3);
		bound = G.nodes[e].type == EXPR_REAL ? z3c_real(&z, br) : z3c_int(&z, bi);
		spread = z3c_at_most(&z, e, bound);
		ck_assert_ptr_nonnull(spread);
		/* it implies the plain bound */
		plain = z3c_keep(&z, Z3_mk_le(z.ctx, z3c_term(&z, e), bound));
		a[na] = z3c_keep(&z, Z3_mk_and(z.ctx, 2, (Z3_ast[]){ spread, z3c_keep(&z, Z3_mk_not(z.ctx, plain)) }));
		ck_assert_msg(z3c_check(&z, a, na + 1, NULL, &err) == Z3C_UNSAT, "trial %d: %s", trial, err.message);
		/* and has as many models as it */
		vals = calloc((size_t)G.n, sizeof *vals);
		ck_assert_ptr_nonnull(vals);
		for (int x = -4; x <= 4; x++)
			for (int y = -4; y <= 4; y++)
				for (int r = 0; r < (real ? 3 : 1); r++) {
					union expr_val v[3] = { { .i = x }, { .i = y }, reals[r] };

					ck_assert_int_eq(expr_eval(&G, v, vals, NULL), 0);
					want += G.nodes[e].type == EXPR_REAL ? vals[e].r <= br : vals[e].i <= bi;
				}
		free(vals);
		a[na] = spread;
		ck_assert_msg(z3c_enumerate(&z, a, na + 1, 0, count_only, &got, &err) == want,
		    "trial %d: %s", trial, err.message);
		ck_assert_int_eq(got, want);
		collapsed += z.collapsed;
		models += got;
		z3c_free(&z);
		expr_graph_free(&G);
	}
	/* a maximum over one variable's declared domain is a table, a
	 * single alternative: such a trial may have nothing to collapse */
	ck_assert_int_ge(collapsed, 20);
	printf("at_most collapsed: 40 random peaks (%d collapsed), %" PRId64 " models as brute force, %.2f s\n",
	    collapsed, models, now() - t0);
}
END_TEST

/* ---- limits and errors ---- */

/* x^3 + y^3 = w^3 over positive integers: beyond Z3, so it runs to a limit. */
static void
fermat(Z3_ast *a, struct z3c *z)
{
	expr_id v[3], cube[3];

	for (int i = 0; i < 3; i++) {
		v[i] = expr_var(&G, i == 2 ? 3 : i);
		cube[i] = expr_mul(&G, expr_mul(&G, v[i], v[i]), v[i]);
		a[i] = z3c_bool(z, expr_ge(&G, v[i], expr_int(&G, 1)));
	}
	a[3] = z3c_bool(z, expr_eq(&G, expr_add(&G, cube[0], cube[1]), cube[2]));
}

/* Interrupts a query from another thread after 200 ms, and again every
 * 50 ms until it returns: an interrupt that lands before Z3 has started
 * its check (a loaded machine) is not lost then. */
struct interrupter {
	struct z3c *z;
	atomic_int done;
};

static void *
interrupt_later(void *arg)
{
	struct interrupter *it = arg;
	struct timespec first = { 0, 200 * 1000 * 1000 }, again = { 0, 50 * 1000 * 1000 };

	nanosleep(&first, NULL);
	while (!atomic_load(&it->done)) {
		z3c_interrupt(it->z);
		nanosleep(&again, NULL);
	}
	return NULL;
}

/* Time up while the query is asserted (Z3 internalizes the terms there: a
 * large model on a busy machine): an unknown answer with the timeout, as
 * one during the check, never an error (CI, 2026-12-06: test_limits' 100 ms
 * check on a loaded 2-core machine answered -1). 1 ms against 30,000 terms
 * to assert, in a fresh context, ends in one of the two, whichever the
 * machine's speed. */
START_TEST(test_timeout_while_asserting)
{
	struct z3c z;
	struct dn_error err;
	expr_id e = expr_var(&G, 0);
	Z3_ast a[2];
	int core[1], ncore = 0;
	const char *label = "x";

	for (int i = 0; i < 30000; i++)
		e = expr_add(&G, e, i % 2 ? expr_var(&G, 1) : expr_int(&G, i));
	/* a context each: in one already used, the terms are internalized
	 * and the second query can finish within the millisecond (CI,
	 * 2026-12-06: explain answered sat) */
	for (int explain = 0; explain < 2; explain++) {
		memset(&err, 0, sizeof err);
		ck_assert_int_eq(z3c_init(&z, &G, 1, BACKSTOP_RLIMIT, &err), 0);
		ck_assert_ptr_nonnull(a[0] = z3c_keep(&z, Z3_mk_gt(z.ctx, z3c_term(&z, e), z3c_int(&z, 7))));
		a[1] = z3c_keep(&z, Z3_mk_lt(z.ctx, z3c_term(&z, expr_var(&G, 0)), z3c_int(&z, 3)));
		if (explain)
			ck_assert_int_eq(z3c_explain(&z, a, 1, &a[1], &label, 1, core, &ncore, &err), Z3C_UNKNOWN);
		else
			ck_assert_int_eq(z3c_check(&z, a, 1, NULL, &err), Z3C_UNKNOWN);
		ck_assert_int_eq(err.code, DN_ETIMEOUT);
		ck_assert_msg(strstr(err.message, "timeout of 1 ms") != NULL, "%s", err.message);
		z3c_free(&z);
	}
}
END_TEST

START_TEST(test_limits)
{
	struct z3c z;
	struct dn_error err;
	Z3_ast a[4];
	union expr_val bv;
	struct interrupter it;
	pthread_t th;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(expr_graph_add_var(&G, "w", EXPR_INT), 3);
	/* a tiny rlimit */
	ck_assert_int_eq(z3c_init(&z, &G, 0, 2000, &err), 0);
	fermat(a, &z);
	ck_assert_int_eq(z3c_check(&z, a, 4, NULL, &err), Z3C_UNKNOWN);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	printf("rlimit: %s\n", err.message);
	ck_assert_ptr_nonnull(strstr(err.message, "resource"));
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_optimize(&z, a, 4, expr_var(&G, 0), 0, NULL, &bv, &err), Z3C_UNKNOWN);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_enumerate(&z, a, 4, 0, NULL, NULL, &err), -1);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	z3c_free(&z);
	/* a timeout: our timer thread interrupts the check (Z3's own timeout
	 * hangs in Z3 4.8.12 and is not used). The rlimit is a backstop: it
	 * takes seconds of work even on a fast machine, far beyond 100 ms, and
	 * a timer that never fired ends in "resource", not "timeout" */
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_init(&z, &G, 100, BACKSTOP_RLIMIT, &err), 0);
	fermat(a, &z);
	ck_assert_int_eq(z3c_check(&z, a, 4, NULL, &err), Z3C_UNKNOWN);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	printf("timeout: %s\n", err.message);
	ck_assert_ptr_nonnull(strstr(err.message, "timeout of 100 ms"));
	/* every kind of check runs under the timer */
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_optimize(&z, a, 4, expr_var(&G, 0), 0, NULL, &bv, &err), Z3C_UNKNOWN);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	ck_assert_ptr_nonnull(strstr(err.message, "timeout of 100 ms"));
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_enumerate(&z, a, 4, 0, NULL, NULL, &err), -1);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	ck_assert_ptr_nonnull(strstr(err.message, "timeout of 100 ms"));
	/* a check that ends before its timer leaves the context usable */
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_check(&z, a, 3, NULL, &err), Z3C_SAT);
	z3c_free(&z);
	/* an interrupt from another thread (the rlimit is only a backstop) */
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_init(&z, &G, 0, BACKSTOP_RLIMIT, &err), 0);
	fermat(a, &z);
	it.z = &z;
	atomic_init(&it.done, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, interrupt_later, &it), 0);
	ck_assert_int_eq(z3c_check(&z, a, 4, NULL, &err), Z3C_UNKNOWN);
	atomic_store(&it.done, 1);
	pthread_join(th, NULL);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	ck_assert_ptr_nonnull(strstr(err.message, "interrupted"));
	/* interrupted is sticky: later queries stop at once */
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_check(&z, a, 1, NULL, &err), Z3C_UNKNOWN);
	ck_assert_int_eq(err.code, DN_ETIMEOUT);
	z3c_free(&z);
}
END_TEST

START_TEST(test_errors)
{
	struct z3c z;
	struct dn_error err;
	Z3_ast a[2], args[2];

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	/* a bad term built by the caller: recorded, reported by the next query */
	args[0] = z3c_var(&z, 0);
	args[1] = z3c_bool(&z, expr_lt(&G, expr_var(&G, 0), expr_int(&G, 3)));
	ck_assert_ptr_null(z3c_keep(&z, Z3_mk_add(z.ctx, 2, args)));
	a[0] = args[1];
	ck_assert_int_eq(z3c_check(&z, a, 1, NULL, &err), Z3C_ERROR);
	ck_assert_int_eq(err.code, DN_EINTERNAL);
	printf("bad term: %s\n", err.message);
	ck_assert_ptr_nonnull(strstr(err.message, "Sort mismatch"));
	/* reported once: the context is usable again */
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_check(&z, a, 1, NULL, &err), Z3C_SAT);
	/* an Int where a Bool assertion is due */
	a[1] = z3c_var(&z, 0);
	ck_assert_int_eq(z3c_check(&z, a, 2, NULL, &err), Z3C_ERROR);
	printf("int assertion: %s\n", err.message);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_explain(&z, a, 1, a + 1, NULL, 1, (int[1]){ 0 }, (int[1]){ 0 }, &err),
	    Z3C_ERROR);
	/* bad arguments of this module */
	memset(&err, 0, sizeof err);
	ck_assert_ptr_null(z3c_term(&z, G.n + 5));
	ck_assert_ptr_null(z3c_var(&z, 17));
	ck_assert_int_eq(z3c_error(&z, &err), -1);
	ck_assert_int_eq(err.code, DN_EINVAL);
	ck_assert_int_eq(z3c_error(&z, &err), 0);
	memset(&err, 0, sizeof err);
	ck_assert_ptr_null(z3c_real(&z, NAN));
	ck_assert_int_eq(z3c_error(&z, &err), -1);
	ck_assert_int_eq(err.code, DN_ERANGE);
	memset(&err, 0, sizeof err);
	a[0] = NULL;
	ck_assert_int_eq(z3c_check(&z, a, 1, NULL, &err), Z3C_ERROR);
	ck_assert_int_eq(err.code, DN_EINVAL);
	/* an unbounded int model value that does not fit 64 bits */
	memset(&err, 0, sizeof err);
	a[1] = z3c_keep(&z, Z3_mk_numeral(z.ctx, "100000000000000000000000", z.int_sort));
	a[0] = z3c_keep(&z, Z3_mk_eq(z.ctx, z3c_var(&z, 0), a[1]));
	ck_assert_int_eq(z3c_check(&z, a, 1, (union expr_val[3]){ { 0 } }, &err), Z3C_ERROR);
	ck_assert_int_eq(err.code, DN_ERANGE);
	z3c_free(&z);
	z3c_free(&z);   /* harmless twice */
}
END_TEST

/* Variables declared after z3c_init are picked up. */
START_TEST(test_graph_grows)
{
	struct z3c z;
	struct dn_error err;
	Z3_ast a[2];
	union expr_val model[4];
	int32_t w;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(z3c_init(&z, &G, 0, TEST_RLIMIT, &err), 0);
	w = expr_graph_add_var(&G, "w", EXPR_INT);
	a[0] = z3c_bool(&z, expr_eq(&G, expr_mul(&G, expr_var(&G, w), expr_int(&G, 3)), expr_int(&G, 21)));
	a[1] = z3c_bool(&z, expr_lt(&G, expr_var(&G, 2), expr_real(&G, -0.75)));
	ck_assert_int_eq(z3c_check(&z, a, 2, model, &err), Z3C_SAT);
	ck_assert_int_eq(model[w].i, 7);
	ck_assert(model[2].r < -0.75);
	ck_assert_int_eq(model[0].i, 0);        /* free: reads 0 */
	z3c_free(&z);
}
END_TEST

static void
setup(void)
{
	graph_new();
}

static void
teardown(void)
{
	expr_graph_free(&G);
}

int
main(void)
{
	Suite *s = suite_create("z3c");

	/* the slowest tests take about 20 s on a busy 2-core machine (load 10),
	 * more under the sanitizers: every check bounded by work (TEST_RLIMIT),
	 * the Check timeout only catches a hang */
	TCase *t = tcase_create("core");

	tcase_set_timeout(t, 300);
	tcase_add_test(t, test_semantics_property);
	tcase_add_test(t, test_semantics_tables);
	tcase_add_test(t, test_enumerate_brute_force);
	tcase_add_test(t, test_domains);
	tcase_add_test(t, test_optimize_brute_force);
	tcase_add_test(t, test_at_most_equivalent);
	tcase_add_test(t, test_at_most_collapsed);
	tcase_add_test(t, test_resnet_memory);
	suite_add_tcase(s, t);
	t = tcase_create("fixture");
	tcase_set_timeout(t, 300);
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_semantics_corners);
	tcase_add_test(t, test_tables);
	tcase_add_test(t, test_deep_chain);
	tcase_add_test(t, test_deadline_stops_translation);
	tcase_add_test(t, test_optimize_unbounded);
	tcase_add_test(t, test_explain_core);
	tcase_add_test(t, test_limits);
	tcase_add_test(t, test_timeout_while_asserting);
	tcase_add_test(t, test_errors);
	tcase_add_test(t, test_graph_grows);
	suite_add_tcase(s, t);
	return run_suite(s, 0);
}
