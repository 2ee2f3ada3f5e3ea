/*
 * expr_tape.c - a compiled form of the expression graph for fast repeated
 * evaluation (the solver's inner loop). Nodes are grouped into runs of the
 * same operation whose operands are all computed earlier: nodes are sorted
 * by depth in the graph (all children of a node are shallower), then by
 * operation. Evaluating a run is one tight loop with no dispatch per node,
 * and overflow checks accumulate a flag per run instead of branching.
 *
 * Invariants: the tape covers nodes [0, n) of the graph it was built from;
 * results land at the nodes' own ids, so callers read values exactly as
 * after expr_eval. Semantics are identical to expr_eval.c (the tests compare
 * both on every node).
 */
#include "expr_tape.h"
#include "expr_arith.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OP(kind, type) (((kind) << 1) | (type))

void
expr_tape_free(struct expr_tape *t)
{
	if (t == NULL)
		return;
	free(t->runs);
	free(t->dst);
	free(t->a);
	free(t->b);
	free(t->c);
	free(t->const_ids);
	free(t->var_ids);
	memset(t, 0, sizeof *t);
}

int
expr_tape_build(const struct expr_graph *g, struct expr_tape *t)
{
	int32_t n = g->n, *level = NULL, *order = NULL, *count = NULL, maxlevel = 0, m = 0;
	int rc = -1;

	memset(t, 0, sizeof *t);
	level = malloc(sizeof *level * ((size_t)n + 1));
	order = malloc(sizeof *order * ((size_t)n + 1));
	t->dst = malloc(sizeof *t->dst * ((size_t)n + 1));
	t->a = malloc(sizeof *t->a * ((size_t)n + 1));
	t->b = malloc(sizeof *t->b * ((size_t)n + 1));
	t->c = malloc(sizeof *t->c * ((size_t)n + 1));
	t->const_ids = malloc(sizeof *t->const_ids * ((size_t)n + 1));
	t->var_ids = malloc(sizeof *t->var_ids * ((size_t)n + 1));
	t->runs = malloc(sizeof *t->runs * ((size_t)n + 1));
	if (!level || !order || !t->dst || !t->a || !t->b || !t->c || !t->const_ids || !t->var_ids || !t->runs)
		goto out;
	for (int32_t i = 0; i < n; i++) {
		const struct expr_node *x = &g->nodes[i];
		int32_t l = 0;
		if (x->kind == EK_CONST) {
			t->const_ids[t->nconsts++] = i;
			level[i] = 0;
			continue;
		}
		if (x->kind == EK_VAR) {
			t->var_ids[t->nvars++] = i;
			level[i] = 0;
			continue;
		}
		if (x->a >= 0 && level[x->a] > l) l = level[x->a];
		if (x->b >= 0 && level[x->b] > l) l = level[x->b];
		if (x->c >= 0 && level[x->c] > l) l = level[x->c];
		level[i] = l + 1;
		if (level[i] > maxlevel)
			maxlevel = level[i];
	}
	/* counting sort by (level, op) */
	count = calloc(((size_t)maxlevel + 2) * 2 * EK_COUNT + 1, sizeof *count);
	if (count == NULL)
		goto out;
	for (int32_t i = 0; i < n; i++)
		if (level[i] > 0)
			count[(size_t)level[i] * 2 * EK_COUNT + (size_t)OP(g->nodes[i].kind, g->nodes[i].type) + 1]++;
	for (size_t k = 1; k < ((size_t)maxlevel + 2) * 2 * EK_COUNT + 1; k++)
		count[k] += count[k - 1];
	for (int32_t i = 0; i < n; i++)
		if (level[i] > 0)
			order[count[(size_t)level[i] * 2 * EK_COUNT + (size_t)OP(g->nodes[i].kind, g->nodes[i].type)]++] = i;
	for (int32_t i = 0; i < n; i++)
		if (level[i] > 0)
			m++;
	for (int32_t j = 0; j < m; j++) {
		const struct expr_node *x = &g->nodes[order[j]];
		uint8_t op = (uint8_t)OP(x->kind, x->type);
		t->dst[j] = order[j];
		t->a[j] = x->a;
		t->b[j] = x->b;
		t->c[j] = x->c;
		if (t->nruns > 0 && t->runs[t->nruns - 1].op == op &&
		    level[order[j]] == level[order[t->runs[t->nruns - 1].start]])
			t->runs[t->nruns - 1].count++;
		else {
			t->runs[t->nruns].op = op;
			t->runs[t->nruns].start = j;
			t->runs[t->nruns].count = 1;
			t->nruns++;
		}
	}
	t->n = n;
	rc = 0;
out:
	free(level);
	free(order);
	free(count);
	if (rc != 0)
		expr_tape_free(t);
	return rc;
}

static int
r2i(double v, int64_t *out)
{
	if (!(v >= -9.2233720368547758e18 && v < 9.2233720368547758e18))
		return 1;
	*out = (int64_t)v;
	return 0;
}

/* Finds the first node (in id order) whose evaluation overflows, by
 * re-running the reference evaluator: only on the error path. */
static expr_id
locate_fault(const struct expr_graph *g, const union expr_val *vars, union expr_val *v)
{
	expr_id fault = EXPR_NONE;

	(void)expr_eval(g, vars, v, &fault);
	return fault;
}

int
expr_tape_eval(const struct expr_tape *t, const struct expr_graph *g,
    const union expr_val *vars, union expr_val *v, expr_id *fault)
{
	const struct expr_node *nodes = g->nodes;
	const int32_t *D = t->dst, *A = t->a, *B = t->b, *C = t->c;
	int of = 0;

	for (int32_t i = 0; i < t->nconsts; i++)
		v[t->const_ids[i]] = nodes[t->const_ids[i]].k;
	for (int32_t i = 0; i < t->nvars; i++)
		v[t->var_ids[i]] = vars[nodes[t->var_ids[i]].k.i];
	for (int32_t r = 0; r < t->nruns; r++) {
		int32_t s = t->runs[r].start, e = s + t->runs[r].count, j;
		switch (t->runs[r].op) {
		case OP(EK_ADD, EXPR_INT):
			for (j = s; j < e; j++)
				of |= __builtin_add_overflow(v[A[j]].i, v[B[j]].i, &v[D[j]].i);
			break;
		case OP(EK_ADD, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[A[j]].r + v[B[j]].r;
			break;
		case OP(EK_SUB, EXPR_INT):
			for (j = s; j < e; j++)
				of |= __builtin_sub_overflow(v[A[j]].i, v[B[j]].i, &v[D[j]].i);
			break;
		case OP(EK_SUB, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[A[j]].r - v[B[j]].r;
			break;
		case OP(EK_MUL, EXPR_INT):
			for (j = s; j < e; j++)
				of |= __builtin_mul_overflow(v[A[j]].i, v[B[j]].i, &v[D[j]].i);
			break;
		case OP(EK_MUL, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[A[j]].r * v[B[j]].r;
			break;
		case OP(EK_DIV, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				if (y > 0 && x >= 0)
					v[D[j]].i = x / y;
				else if (x == INT64_MIN && y == -1)
					of = 1;
				else
					v[D[j]].i = expr_floordiv_i64(x, y);
			}
			break;
		case OP(EK_DIV, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = v[B[j]].r == 0.0 ? 0.0 : v[A[j]].r / v[B[j]].r;
			break;
		case OP(EK_CDIV, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				if (y > 0 && x >= 0)
					v[D[j]].i = x / y + (x % y != 0);
				else if (x == INT64_MIN && y == -1)
					of = 1;
				else
					v[D[j]].i = expr_ceildiv_i64(x, y);
			}
			break;
		case OP(EK_MOD, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = expr_mod_i64(v[A[j]].i, v[B[j]].i);
			break;
		case OP(EK_MIN, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				v[D[j]].i = x < y ? x : y;
			}
			break;
		case OP(EK_MIN, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = fmin(v[A[j]].r, v[B[j]].r);
			break;
		case OP(EK_MAX, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				v[D[j]].i = x > y ? x : y;
			}
			break;
		case OP(EK_MAX, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = fmax(v[A[j]].r, v[B[j]].r);
			break;
		case OP(EK_EQ, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = nodes[A[j]].type == EXPR_INT ? v[A[j]].i == v[B[j]].i : v[A[j]].r == v[B[j]].r;
			break;
		case OP(EK_NE, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = nodes[A[j]].type == EXPR_INT ? v[A[j]].i != v[B[j]].i : v[A[j]].r != v[B[j]].r;
			break;
		case OP(EK_LT, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = nodes[A[j]].type == EXPR_INT ? v[A[j]].i < v[B[j]].i : v[A[j]].r < v[B[j]].r;
			break;
		case OP(EK_LE, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = nodes[A[j]].type == EXPR_INT ? v[A[j]].i <= v[B[j]].i : v[A[j]].r <= v[B[j]].r;
			break;
		case OP(EK_AND, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i & v[B[j]].i;
			break;
		case OP(EK_OR, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i | v[B[j]].i;
			break;
		case OP(EK_NOT, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = !v[A[j]].i;
			break;
		case OP(EK_ITE, EXPR_INT):
		case OP(EK_ITE, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]] = v[A[j]].i ? v[B[j]] : v[C[j]];
			break;
		case OP(EK_TOREAL, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = (double)v[A[j]].i;
			break;
		case OP(EK_FLOOR, EXPR_INT):
			for (j = s; j < e; j++)
				of |= r2i(floor(v[A[j]].r), &v[D[j]].i);
			break;
		case OP(EK_CEIL, EXPR_INT):
			for (j = s; j < e; j++)
				of |= r2i(ceil(v[A[j]].r), &v[D[j]].i);
			break;
		case OP(EK_ROUND, EXPR_INT):
			for (j = s; j < e; j++)
				of |= r2i(round(v[A[j]].r), &v[D[j]].i);
			break;
		default:
			of = 1;
			break;
		}
		if (of)
			break;
	}
	if (of) {
		expr_id f = locate_fault(g, vars, v);
		if (fault != NULL)
			*fault = f;
		return -1;
	}
	return 0;
}
