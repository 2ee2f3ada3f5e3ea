/*
 * test_expr.c - the expression graph: folding and sharing, the total integer
 * semantics, overflow faults, the soundness of interval bounds (a property
 * test over random expressions and boxes), the expression language and its
 * error messages, and printing.
 */
#include <check.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "expr.h"
#include "expr_tape.h"

static struct expr_graph G;

static void
setup(void)
{
	ck_assert_int_eq(expr_graph_init(&G), 0);
	ck_assert_int_eq(expr_graph_add_var(&G, "a", EXPR_INT), 0);
	ck_assert_int_eq(expr_graph_add_var(&G, "b", EXPR_INT), 1);
	ck_assert_int_eq(expr_graph_add_var(&G, "w", EXPR_REAL), 2);
	ck_assert_int_eq(expr_graph_add_var(&G, "kind", EXPR_INT), 3);
}

static void
teardown(void)
{
	expr_graph_free(&G);
}

static int64_t
eval_i(expr_id e, int64_t a, int64_t b, double w)
{
	union expr_val vars[4], *vals = malloc(sizeof *vals * (size_t)G.n);
	expr_id fault;
	int64_t r;

	vars[0].i = a;
	vars[1].i = b;
	vars[2].r = w;
	vars[3].i = 0;
	ck_assert_int_eq(expr_eval(&G, vars, vals, &fault), 0);
	r = vals[e].i;
	free(vals);
	return r;
}

START_TEST(test_fold_and_share)
{
	expr_id a = expr_var(&G, 0), b = expr_var(&G, 1);
	expr_id x = expr_add(&G, a, b), y = expr_add(&G, b, a);

	ck_assert_int_eq(x, y);                         /* commutative ops are canonical */
	ck_assert_int_eq(expr_add(&G, a, expr_int(&G, 0)), a);
	ck_assert_int_eq(expr_mul(&G, a, expr_int(&G, 1)), a);
	ck_assert(expr_is_const(&G, expr_mul(&G, a, expr_int(&G, 0))));
	ck_assert_int_eq(G.nodes[expr_add(&G, expr_int(&G, 2), expr_int(&G, 40))].k.i, 42);
	ck_assert_int_eq(expr_ite(&G, expr_int(&G, 1), a, b), a);
	ck_assert_int_eq(expr_ite(&G, expr_lt(&G, a, b), x, x), x);
	ck_assert_int_eq(expr_sub(&G, x, x), expr_int(&G, 0));
	/* a constant overflow is a build error, never a wrapped value */
	ck_assert_int_eq(expr_mul(&G, expr_int(&G, INT64_MAX), expr_int(&G, 2)), EXPR_NONE);
	ck_assert(dn_error_isset(&G.err));
	ck_assert_ptr_nonnull(strstr(G.err.message, "overflow"));
}
END_TEST

START_TEST(test_integer_semantics)
{
	expr_id a = expr_var(&G, 0), b = expr_var(&G, 1);
	expr_id q = expr_div(&G, a, b), c = expr_cdiv(&G, a, b), m = expr_mod(&G, a, b);
	static const int64_t cases[][5] = {
		/* a, b, floor, ceil, mod (sign of divisor) */
		{ 7, 2, 3, 4, 1 }, { -7, 2, -4, -3, 1 }, { 7, -2, -4, -3, -1 },
		{ -7, -2, 3, 4, -1 }, { 6, 3, 2, 2, 0 }, { 0, 5, 0, 0, 0 },
		{ 5, 0, 0, 0, 5 },      /* total: x / 0 = 0, x % 0 = x */
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ck_assert_int_eq(eval_i(q, cases[i][0], cases[i][1], 0), cases[i][2]);
		ck_assert_int_eq(eval_i(c, cases[i][0], cases[i][1], 0), cases[i][3]);
		ck_assert_int_eq(eval_i(m, cases[i][0], cases[i][1], 0), cases[i][4]);
	}
}
END_TEST

START_TEST(test_overflow_fault)
{
	expr_id a = expr_var(&G, 0), b = expr_var(&G, 1);
	expr_id p = expr_mul(&G, a, b);
	union expr_val vars[4] = { { .i = INT64_MAX / 2 }, { .i = 3 }, { .r = 0 }, { .i = 0 } };
	union expr_val *vals = malloc(sizeof *vals * (size_t)G.n);
	expr_id fault = EXPR_NONE;

	ck_assert_int_eq(expr_eval(&G, vars, vals, &fault), -1);
	ck_assert_int_eq(fault, p);
	{
		struct expr_tape tape;
		fault = EXPR_NONE;
		ck_assert_int_eq(expr_tape_build(&G, &tape), 0);
		ck_assert_int_eq(expr_tape_eval(&tape, &G, vars, vals, &fault), -1);
		ck_assert_int_eq(fault, p);
		expr_tape_free(&tape);
	}
	vars[1].i = 2;
	ck_assert_int_eq(expr_eval(&G, vars, vals, &fault), 0);
	ck_assert_int_eq(vals[p].i, (INT64_MAX / 2) * 2);
	free(vals);
}
END_TEST

/* ---- interval soundness: random trees, random boxes, random points ---- */

static uint64_t rng = 88172645463325252ULL;

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

static expr_id
random_tree(int depth)
{
	int k = (int)(next() % 16);

	if (depth == 0 || k < 3) {
		switch (next() % 3) {
		case 0: return expr_var(&G, 0);
		case 1: return expr_var(&G, 1);
		default: return expr_int(&G, rand_in(-20, 20));
		}
	}
	{
		expr_id x = random_tree(depth - 1), y = random_tree(depth - 1);
		switch (k) {
		case 3: return expr_add(&G, x, y);
		case 4: return expr_sub(&G, x, y);
		case 5: return expr_mul(&G, x, y);
		/* divisors: sub-trees, or powers of two (the tape shifts for those) */
		case 6: return expr_div(&G, x, next() % 2 ? y : expr_int(&G, (int64_t)1 << rand_in(0, 40)));
		case 7: return expr_cdiv(&G, x, next() % 2 ? y : expr_int(&G, (int64_t)1 << rand_in(0, 40)));
		case 8: return expr_mod(&G, x, y);
		case 9: return expr_min(&G, x, y);
		case 10: return expr_max(&G, x, y);
		case 11: return expr_lt(&G, x, y);
		case 12: return expr_eq(&G, x, y);
		case 13: return expr_ite(&G, expr_le(&G, x, y), x, y);
		case 14: return expr_floor(&G, expr_div(&G, expr_to_real(&G, x), expr_real(&G, 2.5)));
		default: return expr_and(&G, expr_ne(&G, x, y), expr_lt(&G, y, x));
		}
	}
}

/* floor, ceil and round of a real interval entirely beyond int64's range
 * (a whole interval below INT64_MIN, or above INT64_MAX) bound to the
 * range's nearest end instead of converting an unrepresentable double
 * (undefined behaviour; found by fuzz_expr under UBSan). */
START_TEST(test_bound_real_beyond_int64)
{
	static const double ends[][2] = { { -3e244, -1e244 }, { 1e244, 3e244 }, { -1e30, 1e30 } };
	expr_id x = expr_var(&G, 2), f[3];
	struct expr_ival vars[4], *out;

	f[0] = expr_floor(&G, x);
	f[1] = expr_ceil(&G, x);
	f[2] = expr_round(&G, x);
	out = malloc(sizeof *out * (size_t)G.n);
	for (int k = 0; k < 3; k++) {
		memset(vars, 0, sizeof vars);
		vars[2].lo.r = ends[k][0];
		vars[2].hi.r = ends[k][1];
		expr_bound(&G, vars, out);
		for (int j = 0; j < 3; j++) {
			ck_assert(out[f[j]].lo.i == (k == 1 ? INT64_MAX : INT64_MIN));
			ck_assert(out[f[j]].hi.i == (k == 0 ? INT64_MIN : INT64_MAX));
		}
	}
	free(out);
}
END_TEST

START_TEST(test_bound_soundness)
{
	for (int trial = 0; trial < 400; trial++) {
		expr_id e;

		teardown();     /* a fresh graph per trial keeps each check small */
		setup();
		e = random_tree(5);
		struct expr_ival vars[4], *out;
		union expr_val vv[4], *vals;

		ck_assert_int_ge(e, 0);
		vars[0].lo.i = rand_in(-50, 50);
		vars[0].hi.i = vars[0].lo.i + rand_in(0, 30);
		vars[1].lo.i = rand_in(-50, 50);
		vars[1].hi.i = vars[1].lo.i + rand_in(0, 30);
		vars[2].lo.r = vars[2].hi.r = 1.0;
		vars[3].lo.i = vars[3].hi.i = 0;
		out = malloc(sizeof *out * (size_t)G.n);
		vals = malloc(sizeof *vals * (size_t)G.n);
		expr_bound(&G, vars, out);
		{
			/* the compiled tape agrees with the reference evaluator on every node */
			struct expr_tape tape;
			union expr_val *tv = malloc(sizeof *tv * (size_t)G.n), ref[4];
			ck_assert_int_eq(expr_tape_build(&G, &tape), 0);
			ref[0].i = vars[0].lo.i;
			ref[1].i = vars[1].hi.i;
			ref[2].r = 1.0;
			ref[3].i = 0;
			ck_assert_int_eq(expr_tape_eval(&tape, &G, ref, tv, NULL), 0);
			ck_assert_int_eq(expr_eval(&G, ref, vals, NULL), 0);
			for (expr_id n = 0; n < G.n; n++)
				ck_assert_msg(memcmp(&tv[n], &vals[n], sizeof tv[n]) == 0, "tape differs at node %d", n);
			expr_tape_free(&tape);
			free(tv);
		}
		for (int pt = 0; pt < 50; pt++) {
			vv[0].i = rand_in(vars[0].lo.i, vars[0].hi.i);
			vv[1].i = rand_in(vars[1].lo.i, vars[1].hi.i);
			vv[2].r = 1.0;
			vv[3].i = 0;
			ck_assert_int_eq(expr_eval(&G, vv, vals, NULL), 0);
			for (expr_id n = 0; n < G.n; n++) {
				if (G.nodes[n].type == EXPR_INT) {
					ck_assert_msg(vals[n].i >= out[n].lo.i && vals[n].i <= out[n].hi.i,
					    "node %d value %lld outside [%lld, %lld]", n, (long long)vals[n].i,
					    (long long)out[n].lo.i, (long long)out[n].hi.i);
				} else {
					ck_assert(vals[n].r >= out[n].lo.r && vals[n].r <= out[n].hi.r);
				}
			}
		}
		free(out);
		free(vals);
	}
}
END_TEST

/* ---- partial tapes: needed nodes only, given nodes, folded chains ---- */

/* A random graph with the shapes partial tapes fold: balanced sums and
 * maxima (expr_sum, expr_max_n), left-deep running sums, round-ups, chains
 * of real additions, min and and. Returns its roots in roots[]. */
static int
random_folds(expr_id *roots)
{
	expr_id terms[12], rterms[12], run = expr_int(&G, 0);
	int n = (int)rand_in(2, 12), nr = 0;

	for (int i = 0; i < n; i++) {
		terms[i] = random_tree(3);
		rterms[i] = expr_mul(&G, expr_to_real(&G, terms[i]), expr_var(&G, 2));
		run = expr_add(&G, run, expr_round_up(&G, terms[i], (int64_t)1 << rand_in(0, 12)));
		if (next() % 3 == 0)
			roots[nr++] = run;      /* a running sum read along the way */
	}
	roots[nr++] = run;
	{
		/* the allocator's rounding (mem_plan.c's alloc_size), real quotients
		 * of converted integers by a variable (zero included) and constants */
		expr_id x = terms[n - 1], w = expr_var(&G, 2);
		roots[nr++] = expr_ite(&G, expr_le(&G, x, expr_int(&G, rand_in(-10, 40))),
		    expr_round_up(&G, x, 4), expr_round_up(&G, x, 64));
		roots[nr++] = expr_add(&G, expr_div(&G, expr_to_real(&G, terms[0]), w),
		    expr_div(&G, expr_to_real(&G, x), expr_real(&G, 0.75)));
		roots[nr++] = expr_div(&G, expr_to_real(&G, x), expr_real(&G, 0.0));
	}
	roots[nr++] = expr_sum(&G, terms, n);
	roots[nr++] = expr_max_n(&G, terms, n);
	{
		expr_id r = rterms[0], m = terms[0], a = expr_lt(&G, terms[0], expr_int(&G, 5));
		for (int i = 1; i < n; i++) {
			r = expr_add(&G, r, rterms[i]);
			m = expr_min(&G, terms[i], m);
			a = expr_and(&G, expr_lt(&G, terms[i], expr_int(&G, 5)), a);
		}
		roots[nr++] = r;
		roots[nr++] = expr_max(&G, r, expr_sum(&G, rterms, n));
		roots[nr++] = m;
		roots[nr++] = a;
	}
	return nr;
}

/* Evaluates a partial tape into got (garbage first, given nodes copied from
 * the reference ref) and compares every needed node with ref. */
static void
check_part_tape(const struct expr_tape *part, const union expr_val *vars, const union expr_val *ref,
    union expr_val *got, const uint8_t *need, const uint8_t *given, int trial)
{
	memset(got, 0x5a, sizeof *got * (size_t)G.n);   /* unread slots hold garbage */
	for (expr_id i = 0; i < G.n; i++)
		if (given[i])
			got[i] = ref[i];
	ck_assert_int_eq(expr_tape_eval(part, &G, vars, got, NULL), 0);
	for (expr_id i = 0; i < G.n; i++)
		if (need[i])
			ck_assert_msg(memcmp(&got[i], &ref[i], sizeof got[i]) == 0,
			    "trial %d (%s operands): partial tape differs at needed node %d", trial,
			    part->d16 ? "16-bit" : "32-bit", i);
}

START_TEST(test_tape_partial)
{
	int folded_runs = 0;

	for (int trial = 0; trial < 300; trial++) {
		expr_id roots[40];
		int nroots;
		union expr_val vars[4], *ref, *got;
		uint8_t *need, *given;
		struct expr_tape full, part;

		teardown();
		setup();
		nroots = random_folds(roots);
		ck_assert(!dn_error_isset(&G.err));
		ref = malloc(sizeof *ref * (size_t)G.n);
		got = malloc(sizeof *got * (size_t)G.n);
		need = calloc((size_t)G.n, 1);
		given = calloc((size_t)G.n, 1);
		for (int i = 0; i < nroots; i++)
			need[roots[i]] = 1;
		for (expr_id i = 0; i < G.n; i++) {
			if (G.nodes[i].kind == EK_CONST || G.nodes[i].kind == EK_VAR)
				continue;
			if (next() % 8 == 0)
				need[i] = 1;
			else if (next() % 10 == 0)
				given[i] = 1;
		}
		ck_assert_int_eq(expr_tape_build(&G, &full), 0);
		ck_assert_int_eq(expr_tape_build_part(&G, need, given, &part), 0);
		folded_runs += part.nxs > 0;
		for (int pt = 0; pt < 20; pt++) {
			vars[0].i = rand_in(-30, 30);
			vars[1].i = rand_in(-30, 30);
			vars[2].r = (double)rand_in(-8, 8) / 4.0;
			vars[3].i = 0;
			if (expr_eval(&G, vars, ref, NULL) != 0)
				continue;
			check_part_tape(&part, vars, ref, got, need, given, trial);
			{
				/* the 32-bit operand arrays (large graphs) give the same */
				int16_t *d16 = part.d16;
				ck_assert_ptr_nonnull(d16);
				part.d16 = NULL;
				check_part_tape(&part, vars, ref, got, need, given, trial);
				part.d16 = d16;
			}
		}
		{
			/* what it reads: constants, variables, given nodes and its own entries */
			uint8_t *reads = calloc((size_t)G.n, 1);
			expr_tape_mark_reads(&part, reads);
			for (expr_id i = 0; i < G.n; i++)
				if (given[i] && !need[i] && reads[i])
					ck_assert(G.nodes[i].kind != EK_CONST);
			free(reads);
		}
		expr_tape_free(&full);
		expr_tape_free(&part);
		free(ref);
		free(got);
		free(need);
		free(given);
	}
	ck_assert_int_gt(folded_runs, 250);     /* the folds were exercised */
}
END_TEST

/* Real min and max through both tapes, bit for bit as expr_eval's fmin and
 * fmax: NaN on either side, zeros of both signs, in both operand orders. */
START_TEST(test_tape_min_max_nan_zero)
{
	static const double vals[] = { NAN, -NAN, -0.0, 0.0, 1.0, -1.0, INFINITY, -INFINITY };
	int n = (int)(sizeof vals / sizeof vals[0]);

	for (int k = 0; k < n; k++) {
		expr_id w = expr_var(&G, 2), c = expr_real(&G, vals[k]);
		expr_id nodes[4] = { expr_max(&G, w, c), expr_max(&G, c, w), expr_min(&G, w, c), expr_min(&G, c, w) };
		uint8_t *need = calloc((size_t)G.n, 1);
		struct expr_tape full, part;
		for (int i = 0; i < 4; i++)
			if (nodes[i] >= 0)
				need[nodes[i]] = 1;
		ck_assert_int_eq(expr_tape_build(&G, &full), 0);
		ck_assert_int_eq(expr_tape_build_part(&G, need, NULL, &part), 0);
		for (int j = 0; j < n; j++) {
			union expr_val vars[4] = { { .i = 0 }, { .i = 0 }, { .r = vals[j] }, { .i = 0 } };
			union expr_val *ref = malloc(sizeof *ref * (size_t)G.n), *a = malloc(sizeof *a * (size_t)G.n);
			union expr_val *b = malloc(sizeof *b * (size_t)G.n);
			ck_assert_int_eq(expr_eval(&G, vars, ref, NULL), 0);
			ck_assert_int_eq(expr_tape_eval(&full, &G, vars, a, NULL), 0);
			ck_assert_int_eq(expr_tape_eval(&part, &G, vars, b, NULL), 0);
			for (int i = 0; i < 4; i++) {
				if (nodes[i] < 0)
					continue;
				ck_assert_msg(memcmp(&a[nodes[i]], &ref[nodes[i]], sizeof *a) == 0 &&
				    memcmp(&b[nodes[i]], &ref[nodes[i]], sizeof *b) == 0,
				    "%s of %g and %g: tape %g / %g, expr_eval %g", i < 2 ? "max" : "min",
				    i % 2 ? vals[k] : vals[j], i % 2 ? vals[j] : vals[k], a[nodes[i]].r, b[nodes[i]].r,
				    ref[nodes[i]].r);
			}
			free(ref);
			free(a);
			free(b);
		}
		expr_tape_free(&full);
		expr_tape_free(&part);
		free(need);
	}
}
END_TEST

START_TEST(test_tape_partial_fault)
{
	/* a folded sum overflows as the chain it replaces does, at any term */
	expr_id a = expr_var(&G, 0), b = expr_var(&G, 1);
	expr_id s = expr_add(&G, expr_add(&G, expr_add(&G, a, b), expr_mul(&G, a, b)), b);
	expr_id r = expr_round_up(&G, a, 1024);
	uint8_t *need = calloc((size_t)G.n, 1);
	union expr_val vars[4] = { { .i = INT64_MAX - 5 }, { .i = 1 }, { .r = 0 }, { .i = 0 } };
	union expr_val *v = malloc(sizeof *v * (size_t)G.n);
	struct expr_tape part;

	need[s] = 1;
	need[r] = 0;
	ck_assert_int_eq(expr_tape_build_part(&G, need, NULL, &part), 0);
	ck_assert_int_gt(part.nxs, 0);
	ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), -1);         /* a * b + (a + b) */
	vars[0].i = 3;
	vars[1].i = INT64_MAX - 3;
	ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), -1);         /* a + b */
	vars[1].i = 10;
	ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), 0);
	ck_assert_int_eq(v[s].i, 3 + 10 + 30 + 10);
	expr_tape_free(&part);
	/* a round-up at the top of the range overflows as ceil-divide-then-multiply does */
	memset(need, 0, (size_t)G.n);
	need[r] = 1;
	ck_assert_int_eq(expr_tape_build_part(&G, need, NULL, &part), 0);
	vars[0].i = INT64_MAX - 5;
	ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), -1);
	vars[0].i = -1500;
	ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), 0);
	ck_assert_int_eq(v[r].i, -1024);
	vars[0].i = 1025;
	ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), 0);
	ck_assert_int_eq(v[r].i, 2048);
	expr_tape_free(&part);
	/* the allocator's rounding as one step: below the limit the small
	 * rounding, above it the large, and an overflow of either is a fault */
	{
		expr_id al = expr_ite(&G, expr_le(&G, a, expr_int(&G, 1000)), expr_round_up(&G, a, 512),
		    expr_round_up(&G, a, (int64_t)1 << 21));
		need = realloc(need, (size_t)G.n);
		v = realloc(v, sizeof *v * (size_t)G.n);
		memset(need, 0, (size_t)G.n);
		need[al] = 1;
		ck_assert_int_eq(expr_tape_build_part(&G, need, NULL, &part), 0);
		ck_assert_int_eq(part.nruns, 1);        /* one fused step */
		vars[0].i = 600;
		ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), 0);
		ck_assert_int_eq(v[al].i, 1024);
		vars[0].i = 1001;
		ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), 0);
		ck_assert_int_eq(v[al].i, (int64_t)1 << 21);
		vars[0].i = INT64_MAX - 100;
		ck_assert_int_eq(expr_tape_eval(&part, &G, vars, v, NULL), -1);
		expr_tape_free(&part);
	}
	free(need);
	free(v);
}
END_TEST

/* ---- the expression language ---- */

static const char *const kinds[] = { "basic", "bottleneck" };

static int
resolve(void *ctx, const char *name, size_t len, struct expr_name_info *out)
{
	static const char *const names[] = { "a", "b", "w", "kind" };

	(void)ctx;
	for (int i = 0; i < 4; i++)
		if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0) {
			out->id = expr_var(&G, i);
			if (i == 3) {
				out->enum_values = kinds;
				out->n_enum = 2;
			}
			return 0;
		}
	return -1;
}

static int ndiv;

static void
on_div(void *ctx, expr_id d)
{
	(void)ctx;
	(void)d;
	ndiv++;
}

static expr_id
parse(const char *text, struct dn_error *err)
{
	struct expr_parse_opts o = { resolve, on_div, NULL };

	memset(err, 0, sizeof *err);
	return expr_parse(&G, text, &o, "$.x", err);
}

START_TEST(test_parse_values)
{
	struct dn_error err;
	static const struct { const char *text; int64_t a, b; int64_t want; } cases[] = {
		{ "a * 2 + b", 3, 4, 10 },
		{ "a + b * 2", 3, 4, 11 },
		{ "(a + b) * 2", 3, 4, 14 },
		{ "a / b", -7, 2, -4 },
		{ "a // b", 7, 2, 3 },
		{ "a % b", -7, 2, 1 },
		{ "-a + 1", 5, 0, -4 },
		{ "a > b ? a : b", 3, 9, 9 },
		{ "a == 3 && b != 4 || !0", 3, 4, 1 },
		{ "min(a, b) + max(a, b)", 3, 9, 12 },
		{ "ceil_div(a, b)", 7, 2, 4 },
		{ "floor(a * 0.5)", 7, 0, 3 },
		{ "ceil(a * 0.5)", 7, 0, 4 },
		{ "round(2.5)", 0, 0, 3 },
		{ "make_divisible(32 * 0.75, 8)", 0, 0, 24 },
		{ "make_divisible(16 * 0.35, 8)", 0, 0, 8 },
		{ "make_divisible(96 * 1.4, 8)", 0, 0, 136 },
		{ "make_divisible(1280 * max(1.0, 1.4), 8)", 0, 0, 1792 },
		{ "kind == 'basic' ? 1 : 4", 0, 0, 1 },
		{ "kind != 'basic'", 0, 0, 0 },
		{ "true + false", 0, 0, 1 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		expr_id e = parse(cases[i].text, &err);
		ck_assert_msg(e >= 0, "%s: %s", cases[i].text, err.message);
		ck_assert_msg(eval_i(e, cases[i].a, cases[i].b, 1.0) == cases[i].want,
		    "%s gave %lld, want %lld", cases[i].text,
		    (long long)eval_i(e, cases[i].a, cases[i].b, 1.0), (long long)cases[i].want);
	}
	ndiv = 0;
	ck_assert_int_ge(parse("a / (b - 2)", &err), 0);
	ck_assert_int_eq(ndiv, 1);      /* non-constant divisors are reported */
}
END_TEST

START_TEST(test_parse_errors)
{
	struct dn_error err;
	static const struct { const char *text; const char *msg; } cases[] = {
		{ "a +", "unexpected end" },
		{ "a * (b", "expected ')'" },
		{ "nope + 1", "unknown name 'nope'" },
		{ "a / 0", "division by zero" },
		{ "a % 0", "division by zero" },
		{ "kind == 'huge'", "not one of the categorical's values" },
		{ "a == 'x'", "string can only be compared" },
		/* a categorical's values are strings: 1 is not "bottleneck" */
		{ "kind == 1", "categorical hyperparameter can only be compared" },
		{ "0 != kind", "categorical hyperparameter can only be compared" },
		{ "kind > 0", "categorical hyperparameter can only be compared" },
		{ "'x'", "string can only be compared" },
		{ "foo(1)", "unknown function" },
		{ "min(1)", "takes 2 arguments" },
		{ "99999999999999999999", "does not fit 64 bits" },
		{ "9223372036854775807 * 2", "overflow" },
		{ "a $ b", "unexpected" },
		{ "1 2", "unexpected text" },
		{ "w % 2", "takes integers" },
		/* a string argument stops the call (found by fuzz_expr: the function
		 * read the failed argument's node before) */
		{ "ceil_div(a, ceil_div(a, ' ? 3 ) 3'))", "string can only be compared" },
		{ "min('x', 1)", "string can only be compared" },
		{ "make_divisible(a, 'x')", "string can only be compared" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		dn_error_clear(&G.err);
		ck_assert_msg(parse(cases[i].text, &err) == EXPR_NONE, "%s parsed", cases[i].text);
		ck_assert_msg(strstr(err.message, cases[i].msg) != NULL, "%s: message \"%s\" lacks \"%s\"",
		    cases[i].text, err.message, cases[i].msg);
		ck_assert_str_eq(err.path, "$.x");
	}
	{
		/* hostile nesting is refused, not a stack overflow */
		char deep[3000];
		memset(deep, '(', 1400);
		strcpy(deep + 1400, "1");
		memset(deep + 1401, ')', 1400);
		deep[2801] = '\0';
		ck_assert_int_eq(parse(deep, &err), EXPR_NONE);
		ck_assert_ptr_nonnull(strstr(err.message, "nested too deeply"));
	}
}
END_TEST

START_TEST(test_format_roundtrip)
{
	struct dn_error err;
	const char *texts[] = { "(a + 2 * b) / (b - 1) % 7", "a > b ? min(a, b) : ceil_div(a, 3)",
	    "!(a == b) && a <= 3", "floor(w * 1.5) + a" };
	char buf[256];

	for (size_t i = 0; i < 4; i++) {
		expr_id e = parse(texts[i], &err), f;
		ck_assert_int_ge(e, 0);
		expr_format(&G, e, buf, sizeof buf);
		f = parse(buf, &err);
		ck_assert_msg(f >= 0, "reparse of \"%s\": %s", buf, err.message);
		for (int a = -3; a <= 3; a++)
			for (int b = -3; b <= 3; b++)
				ck_assert_int_eq(eval_i(e, a, b, 2.0), eval_i(f, a, b, 2.0));
	}
}
END_TEST

/* A graph that shares its nodes, printed into a small buffer: the text as
 * a tree is 2^60 long, and the walk printed all of it (estimate of
 * resnet18 at batch 65536, resolution 4096, width 512 hung in its overflow
 * message, "a value overflows 64 bits (in ...)"). The walk stops when the
 * buffer is full, and the cut text ends in "...". */
START_TEST(test_format_shared_graph)
{
	expr_id a = expr_var(&G, 0), b = expr_var(&G, 1), e = a;
	char buf[200];
	size_t n;

	for (int i = 0; i < 60; i++)
		e = expr_add(&G, expr_mul(&G, e, b), e);
	ck_assert_int_ge(e, 0);
	n = expr_format(&G, e, buf, sizeof buf);
	ck_assert_uint_ge(n, sizeof buf);
	ck_assert_uint_eq(strlen(buf), sizeof buf - 1);
	ck_assert_str_eq(buf + sizeof buf - 4, "...");
	/* a text that fits is whole, its length returned */
	n = expr_format(&G, expr_add(&G, a, b), buf, sizeof buf);
	ck_assert_str_eq(buf, "(a + b)");
	ck_assert_uint_eq(n, 7);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("expr");
	TCase *t = tcase_create("core");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_fold_and_share);
	tcase_add_test(t, test_integer_semantics);
	tcase_add_test(t, test_overflow_fault);
	tcase_add_test(t, test_bound_soundness);
	tcase_add_test(t, test_bound_real_beyond_int64);
	tcase_add_test(t, test_tape_partial);
	tcase_add_test(t, test_tape_partial_fault);
	tcase_add_test(t, test_tape_min_max_nan_zero);
	tcase_add_test(t, test_parse_values);
	tcase_add_test(t, test_parse_errors);
	tcase_add_test(t, test_format_roundtrip);
	tcase_add_test(t, test_format_shared_graph);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
