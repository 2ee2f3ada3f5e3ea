/*
 * expr_graph.c - building expression nodes: hash-consing, type promotion and
 * constant folding (see expr.h for the invariants this file maintains).
 *
 * Folding only ever replaces a node by an equivalent one under the total
 * semantics of expr.h; it never changes a value. A fold that overflows int64
 * is a build error (an absurd constant in a model file), recorded in g->err.
 */
#include "expr.h"
#include "dn_grow.h"
#include "expr_arith.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define INITIAL_NODES 256

static uint32_t
node_hash(const struct expr_node *n)
{
	uint64_t h = 1469598103934665603ULL;
	uint64_t parts[5];
	int i;

	parts[0] = ((uint64_t)n->kind << 8) | n->type;
	parts[1] = (uint32_t)n->a;
	parts[2] = (uint32_t)n->b;
	parts[3] = (uint32_t)n->c;
	memcpy(&parts[4], &n->k, sizeof parts[4]);
	for (i = 0; i < 5; i++) {
		h ^= parts[i];
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	return (uint32_t)(h ^ (h >> 32));
}

static int
node_same(const struct expr_node *x, const struct expr_node *y)
{
	return x->kind == y->kind && x->type == y->type && x->a == y->a &&
	    x->b == y->b && x->c == y->c &&
	    memcmp(&x->k, &y->k, sizeof x->k) == 0;
}

static int
oom(struct expr_graph *g)
{
	dn_error_set(&g->err, DN_ENOMEM, NULL, "out of memory building expressions");
	return -1;
}

/* Moves the table to nslots (a power of two above twice the nodes) slots,
 * by the hashes it holds. */
static int
rehash(struct expr_graph *g, uint32_t nslots)
{
	struct expr_slot *slots = malloc(sizeof *slots * nslots);

	if (slots == NULL)
		return oom(g);
	for (uint32_t s = 0; s < nslots; s++)
		slots[s].id = -1;
	for (uint32_t o = 0; o < g->nslots; o++) {
		uint32_t s;

		if (g->slots[o].id == -1)
			continue;
		s = g->slots[o].hash & (nslots - 1);
		while (slots[s].id != -1)
			s = (s + 1) & (nslots - 1);
		slots[s] = g->slots[o];
	}
	free(g->slots);
	g->slots = slots;
	g->nslots = nslots;
	return 0;
}

int
expr_graph_init(struct expr_graph *g)
{
	memset(g, 0, sizeof *g);
	g->nodes = malloc(sizeof *g->nodes * INITIAL_NODES);
	g->origins = calloc(8, sizeof *g->origins);
	if (g->nodes == NULL || g->origins == NULL) {
		free(g->nodes);
		free(g->origins);
		return -1;
	}
	g->cap = INITIAL_NODES;
	g->caporigins = 8;
	g->origins[0] = strdup("");
	g->norigins = 1;
	if (g->origins[0] == NULL || rehash(g, 2 * INITIAL_NODES) != 0) {
		expr_graph_free(g);
		return -1;
	}
	return 0;
}

void
expr_graph_free(struct expr_graph *g)
{
	int32_t i;

	if (g == NULL)
		return;
	for (i = 0; i < g->nvars; i++)
		free(g->vars[i].name);
	for (i = 0; i < g->norigins; i++)
		free(g->origins[i]);
	free(g->vars);
	free(g->origins);
	free(g->nodes);
	free(g->slots);
	memset(g, 0, sizeof *g);
}

int32_t
expr_graph_add_var(struct expr_graph *g, const char *name, enum expr_type type)
{
	if (dn_grow_int(&g->vars, &g->capvars, g->nvars + 1, sizeof *g->vars) != 0)
		return oom(g);
	g->vars[g->nvars].name = strdup(name);
	if (g->vars[g->nvars].name == NULL)
		return oom(g);
	g->vars[g->nvars].type = (uint8_t)type;
	return g->nvars++;
}

int
expr_graph_set_origin(struct expr_graph *g, const char *path)
{
	if (path == NULL || path[0] == '\0') {
		g->cur_origin = 0;
		return 0;
	}
	if (strcmp(g->origins[g->norigins - 1], path) == 0) {
		g->cur_origin = (uint16_t)(g->norigins - 1);
		return 0;
	}
	if (g->norigins == UINT16_MAX) {
		g->cur_origin = 0;   /* out of origin slots: attribute to nothing */
		return 0;
	}
	if (g->norigins == g->caporigins) {
		uint16_t cap = g->caporigins > UINT16_MAX / 2 ? UINT16_MAX : (uint16_t)(2 * g->caporigins);
		char **o = realloc(g->origins, sizeof *o * cap);
		if (o == NULL)
			return oom(g);
		g->origins = o;
		g->caporigins = cap;
	}
	g->origins[g->norigins] = strdup(path);
	if (g->origins[g->norigins] == NULL)
		return oom(g);
	g->cur_origin = g->norigins++;
	return 0;
}

const char *
expr_origin(const struct expr_graph *g, expr_id e)
{
	if (e < 0 || e >= g->n)
		return "";
	return g->origins[g->nodes[e].origin];
}

/* Interns a node: returns the existing id of an identical node, or appends. */
static expr_id
intern(struct expr_graph *g, const struct expr_node *proto)
{
	uint32_t s, h;
	expr_id id;

	if ((uint32_t)g->n * 2 >= g->nslots && rehash(g, g->nslots * 2) != 0)
		return EXPR_NONE;
	h = node_hash(proto);
	s = h & (g->nslots - 1);
	while ((id = g->slots[s].id) != -1) {
		if (g->slots[s].hash == h && node_same(&g->nodes[id], proto))
			return id;
		s = (s + 1) & (g->nslots - 1);
	}
	if (g->n >= EXPR_MAX_NODES) {
		dn_error_set(&g->err, DN_ERANGE, NULL,
		    "the model needs more than %d expression nodes; reduce repeats or the hyperparameters' maxima",
		    EXPR_MAX_NODES);
		return EXPR_NONE;
	}
	if (dn_grow_int(&g->nodes, &g->cap, g->n + 1, sizeof *g->nodes) != 0) {
		oom(g);
		return EXPR_NONE;
	}
	id = g->n++;
	g->nodes[id] = *proto;
	g->nodes[id].origin = g->cur_origin;
	g->slots[s].id = id;
	g->slots[s].hash = h;
	return id;
}

static expr_id
mk(struct expr_graph *g, enum expr_kind kind, enum expr_type type, expr_id a,
    expr_id b, expr_id c)
{
	struct expr_node n;

	memset(&n, 0, sizeof n);
	n.kind = (uint8_t)kind;
	n.type = (uint8_t)type;
	n.a = a;
	n.b = b;
	n.c = c;
	return intern(g, &n);
}

expr_id
expr_int(struct expr_graph *g, int64_t v)
{
	struct expr_node n;

	memset(&n, 0, sizeof n);
	n.kind = EK_CONST;
	n.type = EXPR_INT;
	n.a = n.b = n.c = EXPR_NONE;
	n.k.i = v;
	return intern(g, &n);
}

expr_id
expr_real(struct expr_graph *g, double v)
{
	struct expr_node n;

	if (v == 0.0)
		v = 0.0;        /* one node for +0.0 and -0.0 */
	memset(&n, 0, sizeof n);
	n.kind = EK_CONST;
	n.type = EXPR_REAL;
	n.a = n.b = n.c = EXPR_NONE;
	n.k.r = v;
	return intern(g, &n);
}

expr_id
expr_var(struct expr_graph *g, int32_t index)
{
	struct expr_node n;

	if (index < 0 || index >= g->nvars) {
		dn_error_set(&g->err, DN_EINTERNAL, NULL, "unknown variable %d", (int)index);
		return EXPR_NONE;
	}
	memset(&n, 0, sizeof n);
	n.kind = EK_VAR;
	n.type = g->vars[index].type;
	n.a = n.b = n.c = EXPR_NONE;
	n.k.i = index;
	return intern(g, &n);
}

static int
const_int(const struct expr_graph *g, expr_id e, int64_t *v)
{
	if (g->nodes[e].kind == EK_CONST && g->nodes[e].type == EXPR_INT) {
		*v = g->nodes[e].k.i;
		return 1;
	}
	return 0;
}

static int
const_real(const struct expr_graph *g, expr_id e, double *v)
{
	if (g->nodes[e].kind != EK_CONST)
		return 0;
	*v = g->nodes[e].type == EXPR_REAL ? g->nodes[e].k.r : (double)g->nodes[e].k.i;
	return 1;
}

static expr_id
fold_overflow(struct expr_graph *g, const char *what)
{
	dn_error_set(&g->err, DN_ERANGE, g->origins[g->cur_origin],
	    "%s overflows 64-bit integers", what);
	return EXPR_NONE;
}

/* Promotes an INT operand to REAL when the other operand is REAL. */
static void
promote(struct expr_graph *g, expr_id *a, expr_id *b)
{
	if (g->nodes[*a].type == g->nodes[*b].type)
		return;
	if (g->nodes[*a].type == EXPR_INT)
		*a = expr_to_real(g, *a);
	else
		*b = expr_to_real(g, *b);
}

/* The two operands of an arithmetic node, made one type (promote): 0, or
 * -1 when either is EXPR_NONE, given or made by the promotion. */
static int
operands(struct expr_graph *g, expr_id *a, expr_id *b)
{
	if (*a < 0 || *b < 0)
		return -1;
	promote(g, a, b);
	return *a < 0 || *b < 0 ? -1 : 0;
}

int64_t
expr_floordiv_i64(int64_t a, int64_t b)
{
	int64_t q;

	if (b == 0)
		return 0;
	if (a == INT64_MIN && b == -1)
		return INT64_MIN;       /* callers check this case first */
	q = a / b;
	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

int64_t
expr_ceildiv_i64(int64_t a, int64_t b)
{
	if (b == 0)
		return 0;
	return expr_floordiv_i64(a, b) + (expr_mod_i64(a, b) != 0);
}

int64_t
expr_mod_i64(int64_t a, int64_t b)
{
	int64_t r;

	if (b == 0)
		return a;
	if (b == -1)
		return 0;
	r = a % b;
	if (r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return r;
}

expr_id
expr_add(struct expr_graph *g, expr_id a, expr_id b)
{
	int64_t x, y, r;
	double p, q;

	if (operands(g, &a, &b) != 0)
		return EXPR_NONE;
	if (g->nodes[a].type == EXPR_INT) {
		if (const_int(g, a, &x) && const_int(g, b, &y)) {
			if (__builtin_add_overflow(x, y, &r))
				return fold_overflow(g, "a sum");
			return expr_int(g, r);
		}
		if (const_int(g, a, &x) && x == 0)
			return b;
		if (const_int(g, b, &y) && y == 0)
			return a;
	} else if (const_real(g, a, &p) && const_real(g, b, &q))
		return expr_real(g, p + q);
	if (a > b) {
		expr_id t = a; a = b; b = t;
	}
	return mk(g, EK_ADD, (enum expr_type)g->nodes[a].type, a, b, EXPR_NONE);
}

expr_id
expr_sub(struct expr_graph *g, expr_id a, expr_id b)
{
	int64_t x, y, r;
	double p, q;

	if (operands(g, &a, &b) != 0)
		return EXPR_NONE;
	if (g->nodes[a].type == EXPR_INT) {
		if (const_int(g, a, &x) && const_int(g, b, &y)) {
			if (__builtin_sub_overflow(x, y, &r))
				return fold_overflow(g, "a difference");
			return expr_int(g, r);
		}
		if (const_int(g, b, &y) && y == 0)
			return a;
		if (a == b)
			return expr_int(g, 0);
	} else if (const_real(g, a, &p) && const_real(g, b, &q))
		return expr_real(g, p - q);
	return mk(g, EK_SUB, (enum expr_type)g->nodes[a].type, a, b, EXPR_NONE);
}

expr_id
expr_mul(struct expr_graph *g, expr_id a, expr_id b)
{
	int64_t x, y, r;
	double p, q;

	if (operands(g, &a, &b) != 0)
		return EXPR_NONE;
	if (g->nodes[a].type == EXPR_INT) {
		if (const_int(g, a, &x) && const_int(g, b, &y)) {
			if (__builtin_mul_overflow(x, y, &r))
				return fold_overflow(g, "a product");
			return expr_int(g, r);
		}
		if ((const_int(g, a, &x) && x == 0) || (const_int(g, b, &y) && y == 0))
			return expr_int(g, 0);
		if (const_int(g, a, &x) && x == 1)
			return b;
		if (const_int(g, b, &y) && y == 1)
			return a;
	} else {
		if (const_real(g, a, &p) && const_real(g, b, &q))
			return expr_real(g, p * q);
		if (const_real(g, a, &p) && p == 1.0)
			return b;
		if (const_real(g, b, &q) && q == 1.0)
			return a;
	}
	if (a > b) {
		expr_id t = a; a = b; b = t;
	}
	return mk(g, EK_MUL, (enum expr_type)g->nodes[a].type, a, b, EXPR_NONE);
}

expr_id
expr_div(struct expr_graph *g, expr_id a, expr_id b)
{
	int64_t x, y;
	double p, q;

	if (operands(g, &a, &b) != 0)
		return EXPR_NONE;
	if (g->nodes[a].type == EXPR_INT) {
		if (const_int(g, a, &x) && const_int(g, b, &y)) {
			if (x == INT64_MIN && y == -1)
				return fold_overflow(g, "a quotient");
			return expr_int(g, expr_floordiv_i64(x, y));
		}
		if (const_int(g, b, &y) && y == 1)
			return a;
		if (const_int(g, b, &y) && y == 0)
			return expr_int(g, 0);
	} else {
		if (const_real(g, a, &p) && const_real(g, b, &q))
			return expr_real(g, q == 0.0 ? 0.0 : p / q);
		if (const_real(g, b, &q) && q == 1.0)
			return a;
	}
	return mk(g, EK_DIV, (enum expr_type)g->nodes[a].type, a, b, EXPR_NONE);
}

expr_id
expr_cdiv(struct expr_graph *g, expr_id a, expr_id b)
{
	int64_t x, y;

	if (a < 0 || b < 0)
		return EXPR_NONE;
	if (g->nodes[a].type != EXPR_INT || g->nodes[b].type != EXPR_INT) {
		dn_error_set(&g->err, DN_EINVAL, g->origins[g->cur_origin],
		    "ceil_div takes integers");
		return EXPR_NONE;
	}
	if (const_int(g, a, &x) && const_int(g, b, &y)) {
		if (y == 0)
			return expr_int(g, 0);
		if (x == INT64_MIN && y == -1)
			return fold_overflow(g, "a quotient");
		return expr_int(g, expr_ceildiv_i64(x, y));
	}
	if (const_int(g, b, &y) && y == 1)
		return a;
	return mk(g, EK_CDIV, EXPR_INT, a, b, EXPR_NONE);
}

expr_id
expr_mod(struct expr_graph *g, expr_id a, expr_id b)
{
	int64_t x, y;

	if (a < 0 || b < 0)
		return EXPR_NONE;
	if (g->nodes[a].type != EXPR_INT || g->nodes[b].type != EXPR_INT) {
		dn_error_set(&g->err, DN_EINVAL, g->origins[g->cur_origin],
		    "%% takes integers");
		return EXPR_NONE;
	}
	if (const_int(g, a, &x) && const_int(g, b, &y))
		return expr_int(g, expr_mod_i64(x, y));
	if (const_int(g, b, &y) && (y == 1 || y == -1))
		return expr_int(g, 0);
	return mk(g, EK_MOD, EXPR_INT, a, b, EXPR_NONE);
}

static expr_id
minmax(struct expr_graph *g, enum expr_kind kind, expr_id a, expr_id b)
{
	int64_t x, y;
	double p, q;

	if (operands(g, &a, &b) != 0)
		return EXPR_NONE;
	if (a == b)
		return a;
	if (g->nodes[a].type == EXPR_INT && const_int(g, a, &x) && const_int(g, b, &y))
		return expr_int(g, kind == EK_MIN ? (x < y ? x : y) : (x > y ? x : y));
	if (g->nodes[a].type == EXPR_REAL && const_real(g, a, &p) && const_real(g, b, &q))
		return expr_real(g, kind == EK_MIN ? fmin(p, q) : fmax(p, q));
	if (a > b) {
		expr_id t = a; a = b; b = t;
	}
	return mk(g, kind, (enum expr_type)g->nodes[a].type, a, b, EXPR_NONE);
}

expr_id expr_min(struct expr_graph *g, expr_id a, expr_id b) { return minmax(g, EK_MIN, a, b); }
expr_id expr_max(struct expr_graph *g, expr_id a, expr_id b) { return minmax(g, EK_MAX, a, b); }

static expr_id
compare(struct expr_graph *g, enum expr_kind kind, expr_id a, expr_id b)
{
	double p, q;
	int r;

	if (operands(g, &a, &b) != 0)
		return EXPR_NONE;
	if (g->nodes[a].kind == EK_CONST && g->nodes[b].kind == EK_CONST) {
		if (g->nodes[a].type == EXPR_INT) {
			int64_t x = g->nodes[a].k.i, y = g->nodes[b].k.i;
			r = kind == EK_EQ ? x == y : kind == EK_NE ? x != y :
			    kind == EK_LT ? x < y : x <= y;
		} else {
			const_real(g, a, &p);
			const_real(g, b, &q);
			r = kind == EK_EQ ? p == q : kind == EK_NE ? p != q :
			    kind == EK_LT ? p < q : p <= q;
		}
		return expr_int(g, r);
	}
	if (a == b && g->nodes[a].type == EXPR_INT)
		return expr_int(g, kind == EK_EQ || kind == EK_LE);
	if ((kind == EK_EQ || kind == EK_NE) && a > b) {
		expr_id t = a; a = b; b = t;
	}
	return mk(g, kind, EXPR_INT, a, b, EXPR_NONE);
}

expr_id expr_eq(struct expr_graph *g, expr_id a, expr_id b) { return compare(g, EK_EQ, a, b); }
expr_id expr_ne(struct expr_graph *g, expr_id a, expr_id b) { return compare(g, EK_NE, a, b); }
expr_id expr_lt(struct expr_graph *g, expr_id a, expr_id b) { return compare(g, EK_LT, a, b); }
expr_id expr_le(struct expr_graph *g, expr_id a, expr_id b) { return compare(g, EK_LE, a, b); }
expr_id expr_gt(struct expr_graph *g, expr_id a, expr_id b) { return compare(g, EK_LT, b, a); }
expr_id expr_ge(struct expr_graph *g, expr_id a, expr_id b) { return compare(g, EK_LE, b, a); }

int
expr_is_bool(const struct expr_graph *g, expr_id e)
{
	const struct expr_node *n = &g->nodes[e];

	switch (n->kind) {
	case EK_EQ: case EK_NE: case EK_LT: case EK_LE:
	case EK_AND: case EK_OR: case EK_NOT:
		return 1;
	case EK_CONST:
		return n->type == EXPR_INT && (n->k.i == 0 || n->k.i == 1);
	case EK_ITE:
		return expr_is_bool(g, n->b) && expr_is_bool(g, n->c);
	default:
		return 0;
	}
}

/* Makes a truth value of any node: x != 0 unless already boolean. */
static expr_id
truth(struct expr_graph *g, expr_id a)
{
	if (a < 0)
		return EXPR_NONE;
	if (expr_is_bool(g, a))
		return a;
	return expr_ne(g, a, g->nodes[a].type == EXPR_INT ? expr_int(g, 0) : expr_real(g, 0.0));
}

/* a AND b (kind EK_AND) or a OR b (EK_OR) of two truth values, folded: a
 * constant operand is the answer when it is the absorbing one (false for
 * AND, true for OR), else the other operand is; x op x is x. */
static expr_id
logic(struct expr_graph *g, enum expr_kind kind, expr_id a, expr_id b)
{
	int absorbing = kind == EK_OR;
	int64_t x;

	a = truth(g, a);
	b = truth(g, b);
	if (a < 0 || b < 0)
		return EXPR_NONE;
	if (const_int(g, a, &x))
		return (x != 0) == absorbing ? a : b;
	if (const_int(g, b, &x))
		return (x != 0) == absorbing ? b : a;
	if (a == b)
		return a;
	if (a > b) {
		expr_id t = a; a = b; b = t;
	}
	return mk(g, kind, EXPR_INT, a, b, EXPR_NONE);
}

expr_id
expr_and(struct expr_graph *g, expr_id a, expr_id b)
{
	return logic(g, EK_AND, a, b);
}

expr_id
expr_or(struct expr_graph *g, expr_id a, expr_id b)
{
	return logic(g, EK_OR, a, b);
}

expr_id
expr_not(struct expr_graph *g, expr_id a)
{
	int64_t x;

	a = truth(g, a);
	if (a < 0)
		return EXPR_NONE;
	if (const_int(g, a, &x))
		return expr_int(g, !x);
	if (g->nodes[a].kind == EK_NOT)
		return g->nodes[a].a;
	return mk(g, EK_NOT, EXPR_INT, a, EXPR_NONE, EXPR_NONE);
}

expr_id
expr_ite(struct expr_graph *g, expr_id c, expr_id a, expr_id b)
{
	int64_t x;

	c = truth(g, c);
	if (c < 0 || operands(g, &a, &b) != 0)
		return EXPR_NONE;
	if (const_int(g, c, &x))
		return x ? a : b;
	if (a == b)
		return a;
	return mk(g, EK_ITE, (enum expr_type)g->nodes[a].type, c, a, b);
}

expr_id
expr_to_real(struct expr_graph *g, expr_id a)
{
	if (a < 0)
		return EXPR_NONE;
	if (g->nodes[a].type == EXPR_REAL)
		return a;
	if (g->nodes[a].kind == EK_CONST)
		return expr_real(g, (double)g->nodes[a].k.i);
	return mk(g, EK_TOREAL, EXPR_REAL, a, EXPR_NONE, EXPR_NONE);
}

static expr_id
to_int(struct expr_graph *g, enum expr_kind kind, expr_id a)
{
	double v;

	if (a < 0)
		return EXPR_NONE;
	if (g->nodes[a].type == EXPR_INT)
		return a;
	if (const_real(g, a, &v)) {
		v = kind == EK_FLOOR ? floor(v) : kind == EK_CEIL ? ceil(v) : round(v);
		if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18))
			return fold_overflow(g, "a conversion to integer");
		return expr_int(g, (int64_t)v);
	}
	if (g->nodes[a].kind == EK_TOREAL)
		return g->nodes[a].a;
	return mk(g, kind, EXPR_INT, a, EXPR_NONE, EXPR_NONE);
}

expr_id expr_floor(struct expr_graph *g, expr_id a) { return to_int(g, EK_FLOOR, a); }
expr_id expr_ceil(struct expr_graph *g, expr_id a) { return to_int(g, EK_CEIL, a); }
expr_id expr_round(struct expr_graph *g, expr_id a) { return to_int(g, EK_ROUND, a); }

expr_id
expr_round_up(struct expr_graph *g, expr_id a, int64_t multiple)
{
	expr_id m = expr_int(g, multiple);

	return expr_mul(g, expr_cdiv(g, a, m), m);
}

/* Sums n terms as a balanced tree so evaluation depth stays logarithmic. */
expr_id
expr_sum(struct expr_graph *g, const expr_id *terms, int n)
{
	if (n <= 0)
		return expr_int(g, 0);
	if (n == 1)
		return terms[0];
	return expr_add(g, expr_sum(g, terms, n / 2), expr_sum(g, terms + n / 2, n - n / 2));
}

expr_id
expr_max_n(struct expr_graph *g, const expr_id *terms, int n)
{
	if (n <= 0)
		return expr_int(g, 0);
	if (n == 1)
		return terms[0];
	return expr_max(g, expr_max_n(g, terms, n / 2), expr_max_n(g, terms + n / 2, n - n / 2));
}
