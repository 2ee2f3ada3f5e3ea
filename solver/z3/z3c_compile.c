/*
 * z3c_compile.c - the Z3 context of a struct z3c, its error handler, and the
 * translation of expression nodes and variable domains into Z3 terms.
 *
 * Invariants:
 *  - z->terms[i] and z->bools[i] are NULL or hold one reference each; a
 *    translated node has at least one of them. Comparisons and connectives
 *    are translated as Bools, everything else as Int/Real terms; the other
 *    form is derived on demand (ite(b, 1, 0), t != 0) and memoized too.
 *  - A Z3 term nobody references dies at the next Z3 call (rc context), so
 *    every intermediate term of one node's translation is referenced in
 *    z->tmp until the node is stored, then released (tmp_release).
 *  - Helpers taking Z3 terms return NULL when any argument is NULL, without
 *    calling Z3: one failure (recorded in z->pending) flows to the result.
 *  - Translation is iterative (z->work is an explicit stack) and visits a
 *    node only after its children, which have smaller ids (expr.h).
 *  - z->deps[i] says which declared domains node i depends on (DEP_OPEN:
 *    also a variable without one) and whether its term is simple (a
 *    numeral, a variable or a table); it is set when the node is translated.
 * Finite domains (z3c_var_domain) turn nonlinear nodes into tables, see
 * table_of: the leaves are Z3's own simplification of the node's exact term
 * at each combination of values, so a table means what the term means.
 * Integer division, ceiling division and modulo are expressed with Z3's
 * Euclidean div/mod, which agree with floor division for a positive
 * divisor; a negative divisor negates both operands, a zero divisor gives
 * the total results of expr.h. A constant divisor selects its branch at
 * compile time, so the common case stays linear and free of ite.
 */
#include "z3c.h"
#include "dn_deadline.h"
#include "dn_grow.h"

#include <gmp.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the error handler ---- */

/* Contexts of live struct z3c, so the handler (which is only given the
 * context) finds where to record. Z3 calls it in the thread that made the
 * failing call, which is the thread using that z3c. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct z3c *live;

static void
z3c_on_error(Z3_context c, Z3_error_code code)
{
	struct z3c *z;

	pthread_mutex_lock(&live_lock);
	for (z = live; z != NULL; z = z->next_live)
		if (z->ctx == c) {
			dn_error_set(&z->pending,
			    code == Z3_MEMOUT_FAIL ? DN_ENOMEM : DN_EINTERNAL, NULL,
			    "Z3 error %d: %s", (int)code, Z3_get_error_msg(c, code));
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

static void
live_remove(struct z3c *z)
{
	struct z3c **p;

	pthread_mutex_lock(&live_lock);
	for (p = &live; *p != NULL; p = &(*p)->next_live)
		if (*p == z) {
			*p = z->next_live;
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

/* 1, with the error recorded, once this thread's deadline (the request's:
 * dn_deadline.h) has passed or the service is stopping; else 0. Building
 * Z3's terms is our own work, which neither Z3's resource limit nor its
 * interrupt bounds. */
static int
deadline_passed(struct z3c *z)
{
	return dn_deadline_check(&z->pending, NULL, "compiling the query for Z3") != 0;
}

static Z3_ast
fail_nomem(struct z3c *z)
{
	dn_error_set(&z->pending, DN_ENOMEM, NULL, "out of memory compiling to Z3");
	return NULL;
}

/* Grows *arr (elements of size `size`, capacity *cap) to hold `need`;
 * new elements are zeroed. Returns 0 or -1. */
static int
grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t old = *cap;

	if (dn_grow(arr, cap, need, size) != 0)
		return -1;
	if (*cap > old)
		memset((char *)*arr + old * size, 0, (*cap - old) * size);
	return 0;
}

/* ---- references ---- */

/* References a fresh term until tmp_release; NULL passes through. */
static Z3_ast
tmp(struct z3c *z, Z3_ast a)
{
	if (a == NULL)
		return NULL;
	if (grow((void **)&z->tmp, &z->captmp, z->ntmp + 1, sizeof *z->tmp) != 0)
		return fail_nomem(z);
	Z3_inc_ref(z->ctx, a);
	z->tmp[z->ntmp++] = a;
	return a;
}

static void
tmp_release(struct z3c *z)
{
	while (z->ntmp > 0)
		Z3_dec_ref(z->ctx, z->tmp[--z->ntmp]);
}

Z3_ast
z3c_keep(struct z3c *z, Z3_ast a)
{
	if (a == NULL)
		return NULL;
	if (grow((void **)&z->kept, &z->capkept, z->nkept + 1, sizeof *z->kept) != 0)
		return fail_nomem(z);
	Z3_inc_ref(z->ctx, a);
	z->kept[z->nkept++] = a;
	return a;
}

/* ---- term helpers (fresh terms, referenced in z->tmp) ---- */

typedef Z3_ast (*nary_fn)(Z3_context, unsigned, const Z3_ast[]);
typedef Z3_ast (*binary_fn)(Z3_context, Z3_ast, Z3_ast);
typedef Z3_ast (*unary_fn)(Z3_context, Z3_ast);

static Z3_ast
mk_nary2(struct z3c *z, nary_fn f, Z3_ast a, Z3_ast b)
{
	Z3_ast args[2];

	if (a == NULL || b == NULL)
		return NULL;
	args[0] = a;
	args[1] = b;
	return tmp(z, f(z->ctx, 2, args));
}

static Z3_ast
mk_bin(struct z3c *z, binary_fn f, Z3_ast a, Z3_ast b)
{
	if (a == NULL || b == NULL)
		return NULL;
	return tmp(z, f(z->ctx, a, b));
}

static Z3_ast
mk_un(struct z3c *z, unary_fn f, Z3_ast a)
{
	if (a == NULL)
		return NULL;
	return tmp(z, f(z->ctx, a));
}

static Z3_ast
mk_ite(struct z3c *z, Z3_ast c, Z3_ast a, Z3_ast b)
{
	if (c == NULL || a == NULL || b == NULL)
		return NULL;
	return tmp(z, Z3_mk_ite(z->ctx, c, a, b));
}

static Z3_ast
mk_neg(struct z3c *z, Z3_ast a)
{
	return mk_un(z, Z3_mk_unary_minus, a);
}

static Z3_ast
num_int(struct z3c *z, int64_t v, Z3_sort sort)
{
	return tmp(z, Z3_mk_int64(z->ctx, v, sort));
}

/*
 * The exact value of a double as a Real numeral: GMP's mpq_set_d is exact
 * (a finite double is a dyadic rational), and Z3_mk_numeral parses the
 * "num/den" text without rounding. A NaN or infinity has no Real value and
 * is an error (DN_ERANGE).
 */
static Z3_ast
num_real(struct z3c *z, double v)
{
	char buf[800];  /* a double needs at most 309 + 1 + 324 digits */
	mpq_t q;

	if (!isfinite(v)) {
		dn_error_set(&z->pending, DN_ERANGE, NULL,
		    "a real constant is not finite (%g)", v);
		return NULL;
	}
	mpq_init(q);
	mpq_set_d(q, v);
	if (mpz_sizeinbase(mpq_numref(q), 10) + mpz_sizeinbase(mpq_denref(q), 10) + 3 > sizeof buf) {
		mpq_clear(q);
		dn_error_set(&z->pending, DN_EINTERNAL, NULL, "real constant %g too long", v);
		return NULL;
	}
	mpq_get_str(buf, 10, q);
	mpq_clear(q);
	return tmp(z, Z3_mk_numeral(z->ctx, buf, z->real_sort));
}

static Z3_ast
num_zero(struct z3c *z, enum expr_type t)
{
	return num_int(z, 0, t == EXPR_INT ? z->int_sort : z->real_sort);
}

/* ---- division semantics ---- */

/* The sign of a divisor node known at compile time: -1, 0, 1, or 2 when it
 * is not a constant. */
static int
divisor_sign(const struct expr_graph *g, expr_id d)
{
	const struct expr_node *n = &g->nodes[d];

	if (n->kind != EK_CONST)
		return 2;
	if (n->type == EXPR_INT)
		return n->k.i > 0 ? 1 : n->k.i < 0 ? -1 : 0;
	return n->k.r > 0 ? 1 : n->k.r < 0 ? -1 : 0;
}

/* One of the results by the divisor y's sign (only the ones that sign can
 * select are built, so the others may be NULL when the sign is known). */
static Z3_ast
by_sign(struct z3c *z, Z3_ast y, int sign, Z3_ast pos, Z3_ast neg, Z3_ast zero)
{
	Z3_ast y0;

	switch (sign) {
	case 1: return pos;
	case -1: return neg;
	case 0: return zero;
	default:
		y0 = num_zero(z, EXPR_INT);
		return mk_ite(z, mk_bin(z, Z3_mk_gt, y, y0), pos,
		    mk_ite(z, mk_bin(z, Z3_mk_lt, y, y0), neg, zero));
	}
}

/* floor(x / y): div(x, y) for y > 0, div(-x, -y) for y < 0, 0 for y = 0. */
static Z3_ast
int_div(struct z3c *z, Z3_ast x, Z3_ast y, int sign)
{
	Z3_ast pos = NULL, neg = NULL, zero = NULL;

	if (sign == 1 || sign == 2)
		pos = mk_bin(z, Z3_mk_div, x, y);
	if (sign == -1 || sign == 2)
		neg = mk_bin(z, Z3_mk_div, mk_neg(z, x), mk_neg(z, y));
	if (sign == 0 || sign == 2)
		zero = num_zero(z, EXPR_INT);
	return by_sign(z, y, sign, pos, neg, zero);
}

/* ceil(x / y) = -floor(-x / y): -div(-x, y) for y > 0, -div(x, -y) for
 * y < 0, 0 for y = 0. */
static Z3_ast
int_cdiv(struct z3c *z, Z3_ast x, Z3_ast y, int sign)
{
	Z3_ast pos = NULL, neg = NULL, zero = NULL;

	if (sign == 1 || sign == 2)
		pos = mk_neg(z, mk_bin(z, Z3_mk_div, mk_neg(z, x), y));
	if (sign == -1 || sign == 2)
		neg = mk_neg(z, mk_bin(z, Z3_mk_div, x, mk_neg(z, y)));
	if (sign == 0 || sign == 2)
		zero = num_zero(z, EXPR_INT);
	return by_sign(z, y, sign, pos, neg, zero);
}

/* x - y * floor(x / y), the sign of the divisor: mod(x, y) for y > 0,
 * -mod(-x, -y) for y < 0, x for y = 0. */
static Z3_ast
int_mod(struct z3c *z, Z3_ast x, Z3_ast y, int sign)
{
	Z3_ast pos = NULL, neg = NULL;

	if (sign == 1 || sign == 2)
		pos = mk_bin(z, Z3_mk_mod, x, y);
	if (sign == -1 || sign == 2)
		neg = mk_neg(z, mk_bin(z, Z3_mk_mod, mk_neg(z, x), mk_neg(z, y)));
	return by_sign(z, y, sign, pos, neg, x);
}

/* x / y for reals, 0 when y = 0. */
static Z3_ast
real_div(struct z3c *z, Z3_ast x, Z3_ast y, int sign)
{
	Z3_ast zero;

	if (sign == 1 || sign == -1)
		return mk_bin(z, Z3_mk_div, x, y);
	zero = num_zero(z, EXPR_REAL);
	if (sign == 0)
		return zero;
	return mk_ite(z, mk_bin(z, Z3_mk_eq, y, zero), zero, mk_bin(z, Z3_mk_div, x, y));
}

/* ---- nodes ---- */

static int
node_arity(enum expr_kind k)
{
	switch (k) {
	case EK_CONST: case EK_VAR:
		return 0;
	case EK_NOT: case EK_TOREAL: case EK_FLOOR: case EK_CEIL: case EK_ROUND:
		return 1;
	case EK_ITE:
		return 3;
	default:
		return 2;
	}
}

/* Node i (already translated) as an Int/Real term; derives and memoizes
 * ite(b, 1, 0) for a Bool node. */
static Z3_ast
term_of(struct z3c *z, expr_id i)
{
	Z3_ast t;

	if (z->terms[i] != NULL)
		return z->terms[i];
	if (z->bools[i] == NULL)
		return NULL;
	t = mk_ite(z, z->bools[i], num_int(z, 1, z->int_sort), num_zero(z, EXPR_INT));
	if (t != NULL) {
		Z3_inc_ref(z->ctx, t);
		z->terms[i] = t;
	}
	return t;
}

/* Node i (already translated) as a Bool; derives and memoizes t != 0. */
static Z3_ast
bool_of(struct z3c *z, expr_id i)
{
	Z3_ast b;

	if (z->bools[i] != NULL)
		return z->bools[i];
	if (z->terms[i] == NULL)
		return NULL;
	b = mk_un(z, Z3_mk_not, mk_bin(z, Z3_mk_eq, z->terms[i],
	    num_zero(z, (enum expr_type)z->g->nodes[i].type)));
	if (b != NULL) {
		Z3_inc_ref(z->ctx, b);
		z->bools[i] = b;
	}
	return b;
}

/* Operand i as a term of type t (an INT operand of a REAL operation is
 * converted; the converse never happens in a graph built by expr_graph.c). */
static Z3_ast
operand(struct z3c *z, expr_id i, enum expr_type t)
{
	Z3_ast a = term_of(z, i);

	if (a == NULL || z->g->nodes[i].type == t)
		return a;
	if (t == EXPR_REAL)
		return mk_un(z, Z3_mk_int2real, a);
	dn_error_set(&z->pending, DN_EINTERNAL, expr_origin(z->g, i),
	    "node %d: a real operand where an integer is expected", (int)i);
	return NULL;
}

/* Term t (Int or Real) as a Real: converted when it is an Int. */
static Z3_ast
to_real(struct z3c *z, Z3_ast t)
{
	if (t == NULL || Z3_get_sort_kind(z->ctx, Z3_get_sort(z->ctx, t)) != Z3_INT_SORT)
		return t;
	return mk_un(z, Z3_mk_int2real, t);
}

/* ---- tables over finite domains ---- */

#define DEP_OPEN (UINT64_C(1) << 63)    /* a variable without a domain */
#define DEP_SIMPLE (UINT64_C(1) << 62)  /* a numeral, a variable or a table */
#define DEP_VARS (DEP_SIMPLE - 1)       /* one bit per declared domain */

/* The deps of node i (see the invariants) before any table is made: a
 * variable's domain bit, or the union of the operands' dependencies. */
static uint64_t
node_deps(struct z3c *z, const struct expr_node *n)
{
	uint64_t d;
	int32_t v;

	switch (n->kind) {
	case EK_CONST:
		return DEP_SIMPLE;
	case EK_VAR:
		v = (int32_t)n->k.i;
		if (v < z->nvar_dom && z->var_dom[v] >= 0)
			return DEP_SIMPLE | UINT64_C(1) << z->var_dom[v];
		return DEP_SIMPLE | DEP_OPEN;
	default:
		d = z->deps[n->a];
		if (node_arity((enum expr_kind)n->kind) >= 2)
			d |= z->deps[n->b];
		if (node_arity((enum expr_kind)n->kind) == 3)
			d |= z->deps[n->c];
		return d & ~DEP_SIMPLE;
	}
}

/* The number of combinations of the domains in d, or Z3C_TABLE_CAP + 1
 * when it is larger. */
static int64_t
table_size(const struct z3c *z, uint64_t d)
{
	int64_t size = 1;

	for (int k = 0; k < z->ndom; k++)
		if ((d >> k & 1) && (size *= z->dom_n[k]) > Z3C_TABLE_CAP)
			return Z3C_TABLE_CAP + 1;
	return size;
}

/*
 * Whether node n, with dependencies d, is translated as a table: it depends
 * on declared domains only, at most Z3C_TABLE_CAP combinations of them, and
 * Z3 would otherwise need nonlinear reasoning (a product of non-constants,
 * integer division, modulo or rounding of a non-constant, real division by
 * a non-constant), or it only combines simple operands (min, max, ite,
 * comparisons, connectives: one table is fewer terms and atoms than the
 * operation over tables, and a comparison that holds for every value is
 * simply true). Sums stay linear terms: tabulating them would evaluate the
 * whole graph at every combination.
 */
static int
node_wants_table(const struct z3c *z, const struct expr_node *n, uint64_t d)
{
	int arity = node_arity((enum expr_kind)n->kind);
	uint64_t da = arity >= 1 ? z->deps[n->a] : 0, db = arity >= 2 ? z->deps[n->b] : 0;

	if ((d & DEP_OPEN) || (d & DEP_VARS) == 0 || table_size(z, d) > Z3C_TABLE_CAP)
		return 0;
	switch (n->kind) {
	case EK_MUL:
		return (da & DEP_VARS) && (db & DEP_VARS);
	case EK_DIV:
		return n->type == EXPR_INT || (db & DEP_VARS);
	case EK_CDIV: case EK_MOD: case EK_FLOOR: case EK_CEIL: case EK_ROUND:
		return 1;
	case EK_MIN: case EK_MAX: case EK_EQ: case EK_NE: case EK_LT: case EK_LE:
	case EK_AND: case EK_OR:
		return (da & DEP_SIMPLE) && (db & DEP_SIMPLE);
	case EK_NOT:
		return (da & DEP_SIMPLE) != 0;
	case EK_ITE:
		return (db & DEP_SIMPLE) && (z->deps[n->c] & DEP_SIMPLE);
	default:
		return 0;
	}
}

/*
 * Term t as a table over the domains in d: nested ites on "var == value",
 * one domain per level (the lowest bit first), whose leaves are t with
 * every value substituted, simplified by Z3 to a numeral (or true, false).
 * A value whose leaf equals all the later ones' adds no branch. NULL when a leaf does not simplify to a numeral (e.g. a
 * division by zero, which Z3 leaves unspecified): then t stays as it is.
 * The terms are referenced in z->tmp.
 */
static Z3_ast
table_of(struct z3c *z, Z3_ast t, uint64_t d)
{
	Z3_ast r = NULL, x;
	int dom;

	if (d == 0) {
		Z3_ast s = tmp(z, Z3_simplify(z->ctx, t));

		return s != NULL && (Z3_is_numeral_ast(z->ctx, s) ||
		    Z3_get_bool_value(z->ctx, s) != Z3_L_UNDEF) ? s : NULL;
	}
	dom = __builtin_ctzll(d);
	x = z->vars[z->dom_var[dom]];
	for (int64_t k = z->dom_n[dom] - 1; k >= 0; k--) {
		Z3_ast v = z->dom_vals[z->dom_off[dom] + k], leaf;

		leaf = tmp(z, Z3_simplify(z->ctx, tmp(z, Z3_substitute(z->ctx, t, 1, &x, &v))));
		if (leaf == NULL || (leaf = table_of(z, leaf, d & (d - 1))) == NULL)
			return NULL;
		if (r == NULL || Z3_is_eq_ast(z->ctx, leaf, r))
			r = leaf;
		else
			r = mk_ite(z, mk_bin(z, Z3_mk_eq, x, v), leaf, r);
	}
	return r;
}

/* Translates node i, whose children are translated, and stores it. Returns
 * 0, or -1 with the error recorded in z->pending. */
static int
node_compile(struct z3c *z, expr_id i)
{
	const struct expr_node *n = &z->g->nodes[i];
	enum expr_type t = (enum expr_type)n->type, ct;
	Z3_ast r = NULL, b = NULL, x, y, half;
	uint64_t deps = node_deps(z, n);
	int sign;

	switch (n->kind) {
	case EK_CONST:
		r = t == EXPR_INT ? num_int(z, n->k.i, z->int_sort) : num_real(z, n->k.r);
		break;
	case EK_VAR:
		r = z3c_var(z, (int32_t)n->k.i);
		break;
	case EK_ADD:
		r = mk_nary2(z, Z3_mk_add, operand(z, n->a, t), operand(z, n->b, t));
		break;
	case EK_SUB:
		r = mk_nary2(z, Z3_mk_sub, operand(z, n->a, t), operand(z, n->b, t));
		break;
	case EK_MUL:
		r = mk_nary2(z, Z3_mk_mul, operand(z, n->a, t), operand(z, n->b, t));
		break;
	case EK_DIV:
	case EK_CDIV:
	case EK_MOD:
		x = operand(z, n->a, t);
		y = operand(z, n->b, t);
		sign = divisor_sign(z->g, n->b);
		if (t == EXPR_REAL && n->kind == EK_DIV)
			r = real_div(z, x, y, sign);
		else if (t == EXPR_REAL)
			break;
		else if (n->kind == EK_DIV)
			r = int_div(z, x, y, sign);
		else if (n->kind == EK_CDIV)
			r = int_cdiv(z, x, y, sign);
		else
			r = int_mod(z, x, y, sign);
		break;
	case EK_MIN:
	case EK_MAX:
		x = operand(z, n->a, t);
		y = operand(z, n->b, t);
		if (n->kind == EK_MIN)
			r = mk_ite(z, mk_bin(z, Z3_mk_le, x, y), x, y);
		else
			r = mk_ite(z, mk_bin(z, Z3_mk_le, y, x), x, y);
		break;
	case EK_EQ:
	case EK_NE:
	case EK_LT:
	case EK_LE:
		ct = z->g->nodes[n->a].type == EXPR_REAL || z->g->nodes[n->b].type == EXPR_REAL ?
		    EXPR_REAL : EXPR_INT;
		x = operand(z, n->a, ct);
		y = operand(z, n->b, ct);
		if (n->kind == EK_LT)
			b = mk_bin(z, Z3_mk_lt, x, y);
		else if (n->kind == EK_LE)
			b = mk_bin(z, Z3_mk_le, x, y);
		else
			b = mk_bin(z, Z3_mk_eq, x, y);
		if (n->kind == EK_NE)
			b = mk_un(z, Z3_mk_not, b);
		break;
	case EK_AND:
		b = mk_nary2(z, Z3_mk_and, bool_of(z, n->a), bool_of(z, n->b));
		break;
	case EK_OR:
		b = mk_nary2(z, Z3_mk_or, bool_of(z, n->a), bool_of(z, n->b));
		break;
	case EK_NOT:
		b = mk_un(z, Z3_mk_not, bool_of(z, n->a));
		break;
	case EK_ITE:
		r = mk_ite(z, bool_of(z, n->a), operand(z, n->b, t), operand(z, n->c, t));
		break;
	case EK_TOREAL:
		r = mk_un(z, Z3_mk_int2real, operand(z, n->a, EXPR_INT));
		break;
	case EK_FLOOR:
		r = mk_un(z, Z3_mk_real2int, operand(z, n->a, EXPR_REAL));
		break;
	case EK_CEIL:
		/* ceil(x) = -floor(-x) */
		r = mk_neg(z, mk_un(z, Z3_mk_real2int, mk_neg(z, operand(z, n->a, EXPR_REAL))));
		break;
	case EK_ROUND:
		/* half away from zero: floor(x + 1/2) for x >= 0, -floor(1/2 - x) below */
		x = operand(z, n->a, EXPR_REAL);
		half = num_real(z, 0.5);
		r = mk_ite(z, mk_bin(z, Z3_mk_ge, x, num_zero(z, EXPR_REAL)),
		    mk_un(z, Z3_mk_real2int, mk_nary2(z, Z3_mk_add, x, half)),
		    mk_neg(z, mk_un(z, Z3_mk_real2int, mk_nary2(z, Z3_mk_sub, half, x))));
		break;
	default:
		break;
	}
	if (r == NULL && b == NULL) {
		tmp_release(z);
		return dn_error_set(&z->pending, DN_EINTERNAL, expr_origin(z->g, i),
		    "node %d (kind %d, type %d) cannot be translated to Z3", (int)i,
		    (int)n->kind, (int)n->type);
	}
	if ((r != NULL || b != NULL) && node_wants_table(z, n, deps)) {
		Z3_ast tb = table_of(z, r != NULL ? r : b, deps & DEP_VARS);

		if (tb != NULL) {
			*(r != NULL ? &r : &b) = tb;
			deps |= DEP_SIMPLE;
		}
	}
	z->deps[i] = deps;
	/* a failed helper returns NULL and leaves the Z3 error recorded first */
	if (r != NULL) {
		Z3_inc_ref(z->ctx, r);
		z->terms[i] = r;
	} else {
		Z3_inc_ref(z->ctx, b);
		z->bools[i] = b;
	}
	tmp_release(z);
	return 0;
}

/* Makes the memo hold nodes [0, n). */
static int
memo_grow(struct z3c *z, int32_t n)
{
	size_t cap = (size_t)z->cap, c1 = cap, c2 = cap, c3 = cap;

	if (n <= z->cap)
		return 0;
	if (grow((void **)&z->terms, &c1, (size_t)n, sizeof *z->terms) != 0 ||
	    grow((void **)&z->bools, &c2, (size_t)n, sizeof *z->bools) != 0 ||
	    grow((void **)&z->deps, &c3, (size_t)n, sizeof *z->deps) != 0 ||
	    grow((void **)&z->queued, &cap, (size_t)n, sizeof *z->queued) != 0) {
		/* an array that grew is merely larger than z->cap says */
		fail_nomem(z);
		return -1;
	}
	z->cap = (int32_t)cap;
	return 0;
}

/*
 * Translates root and every untranslated node below it, children first,
 * with an explicit stack: a node is expanded (its untranslated children
 * pushed above it) the first time it reaches the top, and translated the
 * second time, when everything above it is done. A node can be pushed
 * more than once (shared children); the copies find it translated.
 * Returns 0 or -1 (error recorded).
 */
static int
translate(struct z3c *z, expr_id root)
{
	const struct expr_graph *g = z->g;
	size_t sp = 0;
	int rc = 0;

	if (z->terms[root] != NULL || z->bools[root] != NULL)
		return 0;
	if (grow((void **)&z->work, &z->capwork, 1, sizeof *z->work) != 0) {
		fail_nomem(z);
		return -1;
	}
	z->work[sp++] = root;
	while (sp > 0) {
		expr_id e = z->work[sp - 1], kids[3];
		const struct expr_node *n = &g->nodes[e];
		int k, arity;

		/* the request's deadline (dn_deadline.h), every 1024 steps */
		if ((++z->steps & 1023) == 0 && deadline_passed(z)) {
			rc = -1;
			break;
		}

		if (z->terms[e] != NULL || z->bools[e] != NULL) {
			sp--;
			continue;
		}
		if (z->queued[e]) {
			sp--;
			z->queued[e] = 0;
			if ((rc = node_compile(z, e)) != 0)
				break;
			continue;
		}
		if (n->kind >= EK_COUNT) {
			rc = dn_error_set(&z->pending, DN_EINTERNAL, expr_origin(g, e),
			    "node %d has an unknown kind %d", (int)e, (int)n->kind);
			break;
		}
		arity = node_arity((enum expr_kind)n->kind);
		kids[0] = n->a;
		kids[1] = n->b;
		kids[2] = n->c;
		if (grow((void **)&z->work, &z->capwork, sp + (size_t)arity, sizeof *z->work) != 0) {
			rc = -1;
			fail_nomem(z);
			break;
		}
		z->queued[e] = 1;
		for (k = 0; k < arity; k++) {
			if (kids[k] < 0 || kids[k] >= e) {
				rc = dn_error_set(&z->pending, DN_EINTERNAL, expr_origin(g, e),
				    "node %d has a bad operand %d", (int)e, (int)kids[k]);
				break;
			}
			if (z->terms[kids[k]] == NULL && z->bools[kids[k]] == NULL)
				z->work[sp++] = kids[k];
		}
		if (rc != 0)
			break;
	}
	/* after an error, nodes still on the stack may be marked */
	while (sp > 0)
		z->queued[z->work[--sp]] = 0;
	return rc;
}

/* Checks e and translates it; 0 or -1 (error recorded). */
static int
node_prepare(struct z3c *z, expr_id e)
{
	if (e < 0 || e >= z->g->n) {
		dn_error_set(&z->pending, DN_EINVAL, NULL,
		    "no expression node %d (the graph has %d)", (int)e, (int)z->g->n);
		return -1;
	}
	if (memo_grow(z, z->g->n) != 0)
		return -1;
	return translate(z, e);
}

Z3_ast
z3c_term(struct z3c *z, expr_id e)
{
	Z3_ast r;

	if (node_prepare(z, e) != 0)
		return NULL;
	r = term_of(z, e);
	tmp_release(z);
	return r;
}

Z3_ast
z3c_bool(struct z3c *z, expr_id e)
{
	Z3_ast r;

	if (node_prepare(z, e) != 0)
		return NULL;
	r = bool_of(z, e);
	tmp_release(z);
	return r;
}

/* ---- variables and numerals ---- */

Z3_ast
z3c_var(struct z3c *z, int32_t var)
{
	const struct expr_graph *g = z->g;

	if (var < 0 || var >= g->nvars) {
		dn_error_set(&z->pending, DN_EINVAL, NULL,
		    "no variable %d (the graph has %d)", (int)var, (int)g->nvars);
		return NULL;
	}
	if (var >= z->nvars) {
		size_t cap = (size_t)z->nvars;
		Z3_ast *v;

		/* variables declared since the last call: create them all */
		v = realloc(z->vars, sizeof *v * (size_t)g->nvars);
		if (v == NULL)
			return fail_nomem(z);
		z->vars = v;
		for (; cap < (size_t)g->nvars; cap++) {
			const struct expr_var_info *vi = &g->vars[cap];
			Z3_ast c = Z3_mk_const(z->ctx, Z3_mk_string_symbol(z->ctx, vi->name),
			    vi->type == EXPR_INT ? z->int_sort : z->real_sort);

			if (c == NULL)
				return NULL;
			Z3_inc_ref(z->ctx, c);
			z->vars[z->nvars++] = c;
		}
	}
	return z->vars[var];
}

Z3_ast
z3c_int(struct z3c *z, int64_t v)
{
	Z3_ast r = z3c_keep(z, num_int(z, v, z->int_sort));

	tmp_release(z);
	return r;
}

Z3_ast
z3c_real(struct z3c *z, double v)
{
	Z3_ast r = z3c_keep(z, num_real(z, v));

	tmp_release(z);
	return r;
}

/* ---- domains ---- */

/* A numeral of the sort of variable v's constant. */
static Z3_ast
num_like(struct z3c *z, int32_t var, int64_t v)
{
	return num_int(z, v, z->g->vars[var].type == EXPR_INT ? z->int_sort : z->real_sort);
}

/* The AND of parts[0..n): true when n = 0, NULL when a part is NULL. */
static Z3_ast
mk_and_n(struct z3c *z, Z3_ast *parts, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (parts[i] == NULL)
			return NULL;
	if (n == 0)
		return tmp(z, Z3_mk_true(z->ctx));
	return tmp(z, Z3_mk_and(z->ctx, n, parts));
}

Z3_ast
z3c_var_in_progression(struct z3c *z, int32_t var, int64_t start, int64_t step,
    int64_t n)
{
	Z3_ast v = z3c_var(z, var), r, parts[3];
	int64_t last, lo, hi, span;

	if (v == NULL)
		return NULL;
	if (n <= 0)
		return z3c_keep(z, Z3_mk_false(z->ctx));
	if (n == 1 || step == 0) {
		r = z3c_keep(z, mk_bin(z, Z3_mk_eq, v, num_like(z, var, start)));
		tmp_release(z);
		return r;
	}
	if (step == INT64_MIN || __builtin_mul_overflow(step, n - 1, &span) ||
	    __builtin_add_overflow(start, span, &last)) {
		dn_error_set(&z->pending, DN_ERANGE, NULL,
		    "the grid %lld + i * %lld, i < %lld, leaves the 64-bit range",
		    (long long)start, (long long)step, (long long)n);
		return NULL;
	}
	lo = step > 0 ? start : last;
	hi = step > 0 ? last : start;
	step = step > 0 ? step : -step;
	parts[0] = mk_bin(z, Z3_mk_le, num_like(z, var, lo), v);
	parts[1] = mk_bin(z, Z3_mk_le, v, num_like(z, var, hi));
	if (step == 1 && z->g->vars[var].type == EXPR_INT)
		r = mk_and_n(z, parts, 2);
	else if (z->g->vars[var].type == EXPR_INT) {
		/* (v - lo) mod step = 0: a constant divisor keeps it linear */
		parts[2] = mk_bin(z, Z3_mk_eq,
		    mk_bin(z, Z3_mk_mod, mk_nary2(z, Z3_mk_sub, v, num_like(z, var, lo)),
		    num_like(z, var, step)), num_zero(z, EXPR_INT));
		r = mk_and_n(z, parts, 3);
	} else {
		/* a Real variable: (v - lo) / step is an integer */
		parts[2] = mk_un(z, Z3_mk_is_int, mk_bin(z, Z3_mk_div,
		    mk_nary2(z, Z3_mk_sub, v, num_like(z, var, lo)), num_like(z, var, step)));
		r = mk_and_n(z, parts, 3);
	}
	r = z3c_keep(z, r);
	tmp_release(z);
	return r;
}

/* "v equals one of nums[0..n)" (1 <= n <= INT32_MAX; NULL entries are
 * failed numerals) as a Bool kept until z3c_free, or NULL on error.
 * Releases z->tmp. */
static Z3_ast
one_of(struct z3c *z, Z3_ast v, const Z3_ast *nums, int64_t n)
{
	Z3_ast r = NULL, *lits = malloc(sizeof *lits * (size_t)n);

	if (lits == NULL) {
		tmp_release(z);
		return fail_nomem(z);
	}
	for (int64_t i = 0; i < n; i++)
		if ((lits[i] = mk_bin(z, Z3_mk_eq, v, nums[i])) == NULL)
			goto out;
	r = z3c_keep(z, n == 1 ? lits[0] : Z3_mk_or(z->ctx, (unsigned)n, lits));
out:
	tmp_release(z);
	free(lits);
	return r;
}

/* The common difference when values[0..n) is an arithmetic progression with
 * a nonzero step; 0 otherwise. */
static int64_t
progression_step(const int64_t *values, int64_t n)
{
	int64_t step, d;

	if (n < 2 || __builtin_sub_overflow(values[1], values[0], &step) || step == 0)
		return 0;
	for (int64_t i = 2; i < n; i++)
		if (__builtin_sub_overflow(values[i], values[i - 1], &d) || d != step)
			return 0;
	return step;
}

Z3_ast
z3c_var_in_ints(struct z3c *z, int32_t var, const int64_t *values, int64_t n)
{
	Z3_ast v = z3c_var(z, var), r, *nums;
	int64_t step;

	if (v == NULL)
		return NULL;
	if (n <= 0)
		return z3c_keep(z, Z3_mk_false(z->ctx));
	step = progression_step(values, n);
	/* a long grid, or any run of consecutive integers, as a range */
	if (step != 0 && (n >= 16 || ((step == 1 || step == -1) && n >= 3)))
		return z3c_var_in_progression(z, var, values[0], step, n);
	if (n > INT32_MAX) {
		dn_error_set(&z->pending, DN_ERANGE, NULL, "%lld values are too many to list",
		    (long long)n);
		return NULL;
	}
	nums = malloc(sizeof *nums * (size_t)n);
	if (nums == NULL)
		return fail_nomem(z);
	for (int64_t i = 0; i < n; i++)
		nums[i] = num_like(z, var, values[i]);
	r = one_of(z, v, nums, n);
	free(nums);
	return r;
}

Z3_ast
z3c_var_in_range_real(struct z3c *z, int32_t var, double lo, double hi)
{
	Z3_ast v = z3c_var(z, var), r, parts[2];
	unsigned k = 0;

	if (v == NULL)
		return NULL;
	if (isnan(lo) || isnan(hi)) {
		dn_error_set(&z->pending, DN_EINVAL, NULL, "a range bound is NaN");
		return NULL;
	}
	if (z->g->vars[var].type == EXPR_INT)
		v = mk_un(z, Z3_mk_int2real, v);
	if (!isinf(lo))
		parts[k++] = mk_bin(z, Z3_mk_le, num_real(z, lo), v);
	if (!isinf(hi))
		parts[k++] = mk_bin(z, Z3_mk_le, v, num_real(z, hi));
	if (lo == INFINITY || hi == -INFINITY)
		r = tmp(z, Z3_mk_false(z->ctx));
	else
		r = mk_and_n(z, parts, k);
	r = z3c_keep(z, r);
	tmp_release(z);
	return r;
}

/* Makes z->var_dom cover every variable of the graph (new ones: -1). */
static int
var_dom_grow(struct z3c *z)
{
	int32_t n = z->g->nvars, *p;

	if (n <= z->nvar_dom)
		return 0;
	p = realloc(z->var_dom, sizeof *p * (size_t)n);
	if (p == NULL)
		return -1;
	for (int32_t v = z->nvar_dom; v < n; v++)
		p[v] = -1;
	z->var_dom = p;
	z->nvar_dom = n;
	return 0;
}

/* Records nums[0..n) (numerals) as the next domain, of var; they are
 * referenced until z3c_free. Returns 0 or -1 (recorded). */
static int
domain_add(struct z3c *z, int32_t var, const Z3_ast *nums, int64_t n)
{
	size_t cap = (size_t)z->dom_cap;
	int d = z->ndom;

	if (grow((void **)&z->dom_vals, &cap, (size_t)(z->dom_len + n), sizeof *z->dom_vals) != 0) {
		fail_nomem(z);
		return -1;
	}
	z->dom_cap = (int64_t)cap;
	for (int64_t k = 0; k < n; k++) {
		Z3_inc_ref(z->ctx, nums[k]);
		z->dom_vals[z->dom_len + k] = nums[k];
	}
	z->dom_var[d] = var;
	z->dom_off[d] = z->dom_len;
	z->dom_n[d] = n;
	z->dom_len += n;
	z->var_dom[var] = d;
	z->ndom++;
	return 0;
}

Z3_ast
z3c_var_domain(struct z3c *z, int32_t var, const union expr_val *values, int64_t n)
{
	Z3_ast v = z3c_var(z, var), r = NULL, *nums = NULL;
	int64_t *ints = NULL;
	int isint;

	if (v == NULL)
		return NULL;
	if (var_dom_grow(z) != 0)
		return fail_nomem(z);
	if (z->var_dom[var] >= 0) {
		dn_error_set(&z->pending, DN_EINVAL, NULL, "variable %s has a domain already",
		    z->g->vars[var].name);
		return NULL;
	}
	if (n <= 0)
		return z3c_keep(z, Z3_mk_false(z->ctx));
	isint = z->g->vars[var].type == EXPR_INT;
	if (n > INT32_MAX || (nums = malloc(sizeof *nums * (size_t)n)) == NULL ||
	    (isint && (ints = malloc(sizeof *ints * (size_t)n)) == NULL)) {
		free(nums);
		return fail_nomem(z);
	}
	for (int64_t k = 0; k < n; k++) {
		nums[k] = isint ? num_int(z, values[k].i, z->int_sort) : num_real(z, values[k].r);
		if (nums[k] == NULL)
			goto out;
		if (isint)
			ints[k] = values[k].i;
	}
	if (n <= Z3C_TABLE_CAP && z->ndom < Z3C_DOMAINS && domain_add(z, var, nums, n) != 0)
		goto out;
	/* integers as z3c_var_in_ints has them (a long grid as a range) */
	r = isint ? z3c_var_in_ints(z, var, ints, n) : one_of(z, v, nums, n);
out:
	tmp_release(z);
	free(nums);
	free(ints);
	return r;
}

/* ---- upper bounds, distributed ---- */

void
z3c_set_at_most_caps(struct z3c *z, size_t node_cap, size_t total_cap)
{
	z->at_most_node_cap = node_cap;
	z->at_most_total_cap = total_cap;
}

static int
id_cmp(const void *a, const void *b)
{
	expr_id x = *(const expr_id *)a, y = *(const expr_id *)b;

	return (x > y) - (x < y);
}

/* A constant factor k >= 0 when node i is k * x or x * k (k a constant),
 * and the other operand in *other; else 0. */
static int
mul_by_nonneg_const(const struct expr_graph *g, expr_id i, expr_id *other)
{
	const struct expr_node *n = &g->nodes[i];

	for (int side = 0; side < 2; side++) {
		const struct expr_node *k = &g->nodes[side ? n->b : n->a];

		if (k->kind == EK_CONST &&
		    (k->type == EXPR_INT ? k->k.i >= 0 : k->k.r >= 0)) {
			*other = side ? n->a : n->b;
			return 1;
		}
	}
	return 0;
}

/* Whether z3c_at_most distributes over node i (translated): a sum, a max,
 * or a product by a nonnegative constant, unless it is a table already. */
static int
at_most_spreads(const struct z3c *z, expr_id i)
{
	const struct expr_graph *g = z->g;
	expr_id other;
	const struct expr_node *n = &g->nodes[i];

	if (z->deps[i] & DEP_SIMPLE)
		return 0;
	return n->kind == EK_ADD || n->kind == EK_MAX ||
	    (n->kind == EK_MUL && mul_by_nonneg_const(g, i, &other));
}

/* The nodes below e (e included) that z3c_at_most distributes over, in
 * ascending order, into *out (malloc'd); their count, or -1. */
static int32_t
at_most_region(struct z3c *z, expr_id e, expr_id **out)
{
	const struct expr_graph *g = z->g;
	expr_id *region = NULL;
	size_t nr = 0, capr = 0, sp = 0;

	if (grow((void **)&z->work, &z->capwork, 1, sizeof *z->work) != 0)
		goto oom;
	z->work[sp++] = e;
	z->queued[e] = 1;
	while (sp > 0) {
		expr_id i = z->work[--sp], kids[2];

		if (grow((void **)&region, &capr, nr + 1, sizeof *region) != 0 ||
		    grow((void **)&z->work, &z->capwork, sp + 2, sizeof *z->work) != 0)
			goto oom;
		region[nr++] = i;
		kids[0] = g->nodes[i].a;
		kids[1] = g->nodes[i].b;
		for (int k = 0; k < 2; k++)
			if (kids[k] >= 0 && kids[k] < i && !z->queued[kids[k]] &&
			    at_most_spreads(z, kids[k])) {
				z->queued[kids[k]] = 1;
				z->work[sp++] = kids[k];
			}
	}
	for (size_t k = 0; k < nr; k++)
		z->queued[region[k]] = 0;
	qsort(region, nr, sizeof *region, id_cmp);
	*out = region;
	return (int32_t)nr;
oom:
	while (sp > 0)
		z->queued[z->work[--sp]] = 0;
	for (size_t k = 0; k < nr; k++)
		z->queued[region[k]] = 0;
	free(region);
	fail_nomem(z);
	return -1;
}

/* The alternatives of one node: terms whose maximum is the node's value. */
struct alts {
	Z3_ast *t;
	size_t n;
};

/*
 * Replaces list *l (more than one alternative, its own array) by one fresh
 * constant m, bounded below by each alternative (m >= t, appended to
 * *bounds): where l's node sits in the region, e <= bound holds for some m
 * iff it holds with m at the alternatives' maximum (every region node is
 * nondecreasing in its children), so the conjunction is equisatisfiable
 * on the graph's variables. 0 or -1 (recorded).
 */
static int
alts_collapse(struct z3c *z, struct alts *l, Z3_ast **bounds, size_t *nb, size_t *capb)
{
	int real = 0;
	Z3_ast m, *one;

	for (size_t x = 0; x < l->n; x++)
		real |= Z3_get_sort_kind(z->ctx, Z3_get_sort(z->ctx, l->t[x])) == Z3_REAL_SORT;
	m = tmp(z, Z3_mk_fresh_const(z->ctx, "peak", real ? z->real_sort : z->int_sort));
	z->collapsed = 1;
	if (m == NULL || grow((void **)bounds, capb, *nb + l->n, sizeof **bounds) != 0 ||
	    (one = malloc(sizeof *one)) == NULL) {
		fail_nomem(z);
		return -1;
	}
	for (size_t x = 0; x < l->n; x++) {
		if (((*bounds)[(*nb)++] = mk_bin(z, Z3_mk_ge, m, real ? to_real(z, l->t[x]) : l->t[x])) == NULL) {
			free(one);
			return -1;
		}
	}
	free(l->t);
	one[0] = m;
	l->t = one;
	l->n = 1;
	return 0;
}

/*
 * e <= bound, distributed: a sum, a max and a product by a nonnegative
 * constant have a list of alternatives whose maximum is their value
 * (max(a, b): those of a and b; a + b: every sum of one of a and one of b;
 * k * a: k times each of a), and e <= bound holds iff every alternative of
 * e is <= bound. Z3 then sees linear inequalities instead of one ite per
 * max (a peak-memory expression is a max over hundreds of sums: checks get
 * about 100 times faster). Where a node's list would pass
 * z->at_most_node_cap, or the lists z->at_most_total_cap in all, its children's
 * lists are collapsed first (alts_collapse: a fresh constant at least each
 * of them), so the node's own list has one or two alternatives: still
 * linear, and the size stays that of the expression (a large model's peak,
 * a max over tens of thousands of sums, or a space's several models
 * selected by a choice, as ite terms decided nothing within Z3's resource
 * limit). The alternatives are referenced in z->tmp until the result is
 * kept.
 */
Z3_ast
z3c_at_most(struct z3c *z, expr_id e, Z3_ast bound)
{
	const struct expr_graph *g = z->g;
	struct alts *lists = NULL, *root;
	expr_id *region = NULL;
	int32_t nr;
	size_t total = 0;
	Z3_ast r = NULL, *les = NULL, *bounds = NULL;
	size_t nbounds = 0, capbounds = 0;
	int real;

	if (bound == NULL || z3c_term(z, e) == NULL)
		return NULL;
	real = g->nodes[e].type == EXPR_REAL ||
	    Z3_get_sort_kind(z->ctx, Z3_get_sort(z->ctx, bound)) == Z3_REAL_SORT;
	if (real)
		bound = to_real(z, bound);
	if (!at_most_spreads(z, e)) {
		Z3_ast t = term_of(z, e);

		r = z3c_keep(z, mk_bin(z, Z3_mk_le, real ? to_real(z, t) : t, bound));
		tmp_release(z);
		return r;
	}
	if ((nr = at_most_region(z, e, &region)) < 0)
		goto out;       /* the converted bound is in z->tmp */
	lists = calloc((size_t)nr, sizeof *lists);
	if (lists == NULL) {
		fail_nomem(z);
		goto out;
	}
	for (int32_t k = 0; k < nr; k++) {
		expr_id i = region[k], kid[2], other = EXPR_NONE;
		const struct expr_node *n = &g->nodes[i];
		struct alts in[2], one[2];
		int32_t at[2] = { -1, -1 };
		size_t want;
		int nk = 2;

		/* each node may build sums of hundreds of terms: the deadline
		 * is checked at every one (a large model's budget spreads over
		 * tens of thousands) */
		if (deadline_passed(z))
			goto out;

		/* the children's lists: a region node's own, else the term */
		kid[0] = n->a;
		kid[1] = n->b;
		if (n->kind == EK_MUL) {
			mul_by_nonneg_const(g, i, &other);
			kid[0] = other;
			nk = 1;
		}
		for (int c = 0; c < nk; c++) {
			expr_id *found = bsearch(&kid[c], region, (size_t)k, sizeof *region, id_cmp);

			at[c] = found != NULL ? (int32_t)(found - region) : -1;
			if (found != NULL)
				in[c] = lists[at[c]];
			else {
				if (term_of(z, kid[c]) == NULL)
					goto out;
				one[c].t = &z->terms[kid[c]];
				one[c].n = 1;
				in[c] = one[c];
			}
		}
		want = n->kind == EK_MAX ? in[0].n + in[1].n :
		    n->kind == EK_ADD ? in[0].n * in[1].n : in[0].n;
		if (want > z->at_most_node_cap || total + want > z->at_most_total_cap) {
			/* only a region child's list has several (both
			 * children may be the same node: read back after) */
			for (int c = 0; c < nk; c++)
				if (at[c] >= 0 && lists[at[c]].n > 1 &&
				    alts_collapse(z, &lists[at[c]], &bounds, &nbounds, &capbounds) != 0)
					goto out;
			for (int c = 0; c < nk; c++)
				if (at[c] >= 0)
					in[c] = lists[at[c]];
			want = n->kind == EK_MAX ? in[0].n + in[1].n : 1;
		}
		lists[k].t = malloc(sizeof *lists[k].t * want);
		if (lists[k].t == NULL) {
			fail_nomem(z);
			goto out;
		}
		total += want;
		if (n->kind == EK_MAX) {
			memcpy(lists[k].t, in[0].t, sizeof *in[0].t * in[0].n);
			memcpy(lists[k].t + in[0].n, in[1].t, sizeof *in[1].t * in[1].n);
		} else if (n->kind == EK_ADD) {
			for (size_t x = 0; x < in[0].n; x++)
				for (size_t y = 0; y < in[1].n; y++)
					lists[k].t[x * in[1].n + y] = mk_nary2(z, Z3_mk_add,
					    in[0].t[x], in[1].t[y]);
		} else {
			Z3_ast kt = z->terms[n->a == other ? n->b : n->a];

			for (size_t x = 0; x < in[0].n; x++)
				lists[k].t[x] = mk_nary2(z, Z3_mk_mul, kt, in[0].t[x]);
		}
		lists[k].n = want;
		for (size_t x = 0; x < want; x++)
			if (lists[k].t[x] == NULL)
				goto out;
	}
	root = &lists[nr - 1];  /* e has the largest id of its region */
	les = malloc(sizeof *les * (root->n + nbounds));
	if (les == NULL) {
		fail_nomem(z);
		goto out;
	}
	for (size_t x = 0; x < root->n; x++)
		if ((les[x] = mk_bin(z, Z3_mk_le, real ? to_real(z, root->t[x]) : root->t[x], bound)) == NULL)
			goto out;
	if (nbounds > 0)
		memcpy(les + root->n, bounds, sizeof *bounds * nbounds);
	r = z3c_keep(z, root->n + nbounds == 1 ? les[0] : Z3_mk_and(z->ctx, (unsigned)(root->n + nbounds), les));
out:
	if (lists != NULL)
		for (int32_t k = 0; k < nr; k++)
			free(lists[k].t);
	free(lists);
	free(region);
	free(les);
	free(bounds);
	tmp_release(z);
	return r;
}

/* ---- lifecycle ---- */

static Z3_sort
sort_keep(struct z3c *z, Z3_sort s)
{
	if (s != NULL)
		Z3_inc_ref(z->ctx, Z3_sort_to_ast(z->ctx, s));
	return s;
}

int
z3c_init(struct z3c *z, const struct expr_graph *g, unsigned timeout_ms,
    unsigned rlimit, struct dn_error *err)
{
	Z3_config cfg;

	memset(z, 0, sizeof *z);
	atomic_init(&z->interrupted, 0);
	if (g == NULL)
		return dn_error_set(err, DN_EINVAL, NULL, "z3c_init: no expression graph");
	z->g = g;
	z->timeout_ms = timeout_ms;
	z->rlimit = rlimit;
	z3c_set_at_most_caps(z, Z3C_AT_MOST_NODE_CAP, Z3C_AT_MOST_TOTAL_CAP);
	cfg = Z3_mk_config();
	if (cfg == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory creating a Z3 context");
	z->ctx = Z3_mk_context_rc(cfg);
	Z3_del_config(cfg);
	if (z->ctx == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory creating a Z3 context");
	Z3_set_error_handler(z->ctx, z3c_on_error);
	pthread_mutex_lock(&live_lock);
	z->next_live = live;
	live = z;
	pthread_mutex_unlock(&live_lock);
	z->int_sort = sort_keep(z, Z3_mk_int_sort(z->ctx));
	z->real_sort = sort_keep(z, Z3_mk_real_sort(z->ctx));
	z->bool_sort = sort_keep(z, Z3_mk_bool_sort(z->ctx));
	if (g->nvars > 0)
		z3c_var(z, g->nvars - 1);
	if (z->int_sort == NULL || z->real_sort == NULL || z->bool_sort == NULL ||
	    z3c_error(z, err) != 0) {
		dn_error_set(err, DN_EINTERNAL, NULL, "cannot set up a Z3 context");
		z3c_free(z);
		return -1;
	}
	return 0;
}

static void
release_all(struct z3c *z, Z3_ast *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != NULL)
			Z3_dec_ref(z->ctx, a[i]);
}

void
z3c_free(struct z3c *z)
{
	if (z == NULL)
		return;
	if (z->ctx != NULL) {
		tmp_release(z);
		if (z->terms != NULL)
			release_all(z, z->terms, (size_t)z->cap);
		if (z->bools != NULL)
			release_all(z, z->bools, (size_t)z->cap);
		release_all(z, z->vars, (size_t)z->nvars);
		release_all(z, z->kept, z->nkept);
		if (z->dom_vals != NULL)
			release_all(z, z->dom_vals, (size_t)z->dom_len);
		if (z->int_sort != NULL)
			Z3_dec_ref(z->ctx, Z3_sort_to_ast(z->ctx, z->int_sort));
		if (z->real_sort != NULL)
			Z3_dec_ref(z->ctx, Z3_sort_to_ast(z->ctx, z->real_sort));
		if (z->bool_sort != NULL)
			Z3_dec_ref(z->ctx, Z3_sort_to_ast(z->ctx, z->bool_sort));
		Z3_del_context(z->ctx);
		live_remove(z);
	}
	free(z->terms);
	free(z->bools);
	free(z->queued);
	free(z->work);
	free(z->tmp);
	free(z->vars);
	free(z->kept);
	free(z->dom_vals);
	free(z->var_dom);
	free(z->deps);
	memset(z, 0, sizeof *z);
}

int
z3c_error(struct z3c *z, struct dn_error *err)
{
	if (!dn_error_isset(&z->pending))
		return 0;
	dn_error_set(err, z->pending.code, z->pending.path, "%s", z->pending.message);
	dn_error_clear(&z->pending);
	return -1;
}

void
z3c_interrupt(struct z3c *z)
{
	atomic_store(&z->interrupted, 1);
	if (z->ctx != NULL)
		Z3_interrupt(z->ctx);
}
