/*
 * expr_eval.c - evaluating the whole expression graph for one configuration.
 *
 * This is the hot path of the product: the solver evaluates millions of
 * configurations, so it is one linear pass over the node array (children
 * precede parents, see expr.h) with a switch on (kind, type) and no
 * allocation. Semantics are those of expr.h; the only fault is an int64
 * overflow, reported with the node that overflowed.
 */
#include "expr.h"
#include "expr_arith.h"

#include <math.h>

#define OP(kind, type) (((kind) << 1) | (type))

static int
real_to_int(double v, int64_t *out)
{
	if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18))
		return -1;
	*out = (int64_t)v;
	return 0;
}

int
expr_eval_prefix(const struct expr_graph *g, const union expr_val *vars,
    union expr_val *v, int32_t upto, expr_id *fault)
{
	const struct expr_node *nodes = g->nodes;
	int32_t i;

	if (upto > g->n)
		upto = g->n;
	for (i = 0; i < upto; i++) {
		const struct expr_node *n = &nodes[i];
		int64_t x, y;

		switch (OP(n->kind, n->type)) {
		case OP(EK_CONST, EXPR_INT):
		case OP(EK_CONST, EXPR_REAL):
			v[i] = n->k;
			break;
		case OP(EK_VAR, EXPR_INT):
		case OP(EK_VAR, EXPR_REAL):
			v[i] = vars[n->k.i];
			break;
		case OP(EK_ADD, EXPR_INT):
			if (__builtin_add_overflow(v[n->a].i, v[n->b].i, &v[i].i))
				goto overflow;
			break;
		case OP(EK_ADD, EXPR_REAL):
			v[i].r = v[n->a].r + v[n->b].r;
			break;
		case OP(EK_SUB, EXPR_INT):
			if (__builtin_sub_overflow(v[n->a].i, v[n->b].i, &v[i].i))
				goto overflow;
			break;
		case OP(EK_SUB, EXPR_REAL):
			v[i].r = v[n->a].r - v[n->b].r;
			break;
		case OP(EK_MUL, EXPR_INT):
			if (__builtin_mul_overflow(v[n->a].i, v[n->b].i, &v[i].i))
				goto overflow;
			break;
		case OP(EK_MUL, EXPR_REAL):
			v[i].r = v[n->a].r * v[n->b].r;
			break;
		case OP(EK_DIV, EXPR_INT):
			x = v[n->a].i;
			y = v[n->b].i;
			if (y > 0 && x >= 0)
				v[i].i = x / y;         /* the common case */
			else if (x == INT64_MIN && y == -1)
				goto overflow;
			else
				v[i].i = expr_floordiv_i64(x, y);
			break;
		case OP(EK_DIV, EXPR_REAL):
			v[i].r = v[n->b].r == 0.0 ? 0.0 : v[n->a].r / v[n->b].r;
			break;
		case OP(EK_CDIV, EXPR_INT):
			x = v[n->a].i;
			y = v[n->b].i;
			if (y > 0 && x >= 0)
				v[i].i = x / y + (x % y != 0);
			else if (x == INT64_MIN && y == -1)
				goto overflow;
			else
				v[i].i = expr_ceildiv_i64(x, y);
			break;
		case OP(EK_MOD, EXPR_INT):
			v[i].i = expr_mod_i64(v[n->a].i, v[n->b].i);
			break;
		case OP(EK_MIN, EXPR_INT):
			x = v[n->a].i;
			y = v[n->b].i;
			v[i].i = x < y ? x : y;
			break;
		case OP(EK_MIN, EXPR_REAL):
			v[i].r = fmin(v[n->a].r, v[n->b].r);
			break;
		case OP(EK_MAX, EXPR_INT):
			x = v[n->a].i;
			y = v[n->b].i;
			v[i].i = x > y ? x : y;
			break;
		case OP(EK_MAX, EXPR_REAL):
			v[i].r = fmax(v[n->a].r, v[n->b].r);
			break;
		case OP(EK_EQ, EXPR_INT):
			if (nodes[n->a].type == EXPR_INT)
				v[i].i = v[n->a].i == v[n->b].i;
			else
				v[i].i = v[n->a].r == v[n->b].r;
			break;
		case OP(EK_NE, EXPR_INT):
			if (nodes[n->a].type == EXPR_INT)
				v[i].i = v[n->a].i != v[n->b].i;
			else
				v[i].i = v[n->a].r != v[n->b].r;
			break;
		case OP(EK_LT, EXPR_INT):
			if (nodes[n->a].type == EXPR_INT)
				v[i].i = v[n->a].i < v[n->b].i;
			else
				v[i].i = v[n->a].r < v[n->b].r;
			break;
		case OP(EK_LE, EXPR_INT):
			if (nodes[n->a].type == EXPR_INT)
				v[i].i = v[n->a].i <= v[n->b].i;
			else
				v[i].i = v[n->a].r <= v[n->b].r;
			break;
		case OP(EK_AND, EXPR_INT):
			v[i].i = v[n->a].i & v[n->b].i;
			break;
		case OP(EK_OR, EXPR_INT):
			v[i].i = v[n->a].i | v[n->b].i;
			break;
		case OP(EK_NOT, EXPR_INT):
			v[i].i = !v[n->a].i;
			break;
		case OP(EK_ITE, EXPR_INT):
		case OP(EK_ITE, EXPR_REAL):
			v[i] = v[n->a].i ? v[n->b] : v[n->c];
			break;
		case OP(EK_TOREAL, EXPR_REAL):
			v[i].r = (double)v[n->a].i;
			break;
		case OP(EK_FLOOR, EXPR_INT):
			if (real_to_int(floor(v[n->a].r), &v[i].i) != 0)
				goto overflow;
			break;
		case OP(EK_CEIL, EXPR_INT):
			if (real_to_int(ceil(v[n->a].r), &v[i].i) != 0)
				goto overflow;
			break;
		case OP(EK_ROUND, EXPR_INT):
			if (real_to_int(round(v[n->a].r), &v[i].i) != 0)
				goto overflow;
			break;
		default:
			goto overflow;  /* unreachable for graphs built by expr_graph.c */
		}
	}
	return 0;
overflow:
	if (fault != NULL)
		*fault = i;
	return -1;
}

int
expr_eval(const struct expr_graph *g, const union expr_val *vars,
    union expr_val *vals, expr_id *fault)
{
	return expr_eval_prefix(g, vars, vals, g->n, fault);
}
