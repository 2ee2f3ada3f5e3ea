/*
 * expr_tape.c - a compiled form of the expression graph for fast repeated
 * evaluation (the solver's inner loop and every /check). Nodes are grouped
 * into runs of the same operation whose operands are computed earlier (or
 * earlier in the same run): a topological order chosen to make few runs
 * (see expr_tape_build). Evaluating a run is one tight loop with no
 * dispatch per node, and overflow checks accumulate a flag per run instead
 * of branching.
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
/* the tape's own operations, after the graph's: integer floor and ceiling
 * division by a constant power of two, as shifts (c holds the shift) */
#define TAPE_SHR (2 * EK_COUNT)
#define TAPE_CSHR (2 * EK_COUNT + 1)
#define TAPE_NOPS (2 * EK_COUNT + 2)

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

/* k when node b is the integer constant 2^k, else -1. */
static int
pow2_shift(const struct expr_graph *g, int32_t b)
{
	int64_t k;

	if (b < 0 || g->nodes[b].kind != EK_CONST || g->nodes[b].type != EXPR_INT)
		return -1;
	k = g->nodes[b].k.i;
	return k > 0 && (k & (k - 1)) == 0 ? __builtin_ctzll((unsigned long long)k) : -1;
}

/* The tape's operation of node i: its kind and result type, except that
 * a comparison is typed by its operands (the result is always a boolean)
 * and an integer division by a power of two is a shift (TAPE_SHR). */
static int
tape_op(const struct expr_graph *g, int32_t i)
{
	const struct expr_node *x = &g->nodes[i];

	switch (x->kind) {
	case EK_DIV:
	case EK_CDIV:
		if (x->type == EXPR_INT && pow2_shift(g, x->b) >= 0)
			return x->kind == EK_DIV ? TAPE_SHR : TAPE_CSHR;
		return OP(x->kind, x->type);
	case EK_EQ:
	case EK_NE:
	case EK_LT:
	case EK_LE:
		return OP(x->kind, g->nodes[x->a].type);
	default:
		return OP(x->kind, x->type);
	}
}

/* fmax and fmin as glibc computes them (NaN loses; of equal values the
 * second), without the call. */
static inline double
max_real(double a, double b)
{
	return a > b || isnan(b) ? a : b;
}

static inline double
min_real(double a, double b)
{
	return a < b || isnan(b) ? a : b;
}

/* Is node i computed by the tape (not a constant or a variable)? */
static int
is_op(const struct expr_graph *g, int32_t i)
{
	return i >= 0 && g->nodes[i].kind != EK_CONST && g->nodes[i].kind != EK_VAR;
}

/*
 * The schedule: a topological order cut into as few runs as it can. Ready
 * nodes (every operand computed) wait in one FIFO per operation; the
 * operation with the most waiting nodes is emitted next, and nodes of the
 * same operation that its own nodes make ready join the same run (a run
 * is evaluated in order, so a chain of additions is one run). Sorting by
 * depth instead gives about three times as many runs: each run costs a
 * dispatch, as much as evaluating a few nodes.
 */
int
expr_tape_build(const struct expr_graph *g, struct expr_tape *t)
{
	int32_t n = g->n, *indeg = NULL, *ustart = NULL, *users = NULL, *next = NULL, m = 0;
	int32_t head[TAPE_NOPS], tail[TAPE_NOPS], waiting[TAPE_NOPS];
	int rc = -1;

	memset(t, 0, sizeof *t);
	indeg = calloc((size_t)n + 1, sizeof *indeg);
	ustart = calloc((size_t)n + 2, sizeof *ustart);
	users = malloc(sizeof *users * (3 * (size_t)n + 1));
	next = malloc(sizeof *next * ((size_t)n + 1));
	t->dst = malloc(sizeof *t->dst * ((size_t)n + 1));
	t->a = malloc(sizeof *t->a * ((size_t)n + 1));
	t->b = malloc(sizeof *t->b * ((size_t)n + 1));
	t->c = malloc(sizeof *t->c * ((size_t)n + 1));
	t->const_ids = malloc(sizeof *t->const_ids * ((size_t)n + 1));
	t->var_ids = malloc(sizeof *t->var_ids * ((size_t)n + 1));
	t->runs = malloc(sizeof *t->runs * ((size_t)n + 1));
	if (!indeg || !ustart || !users || !next || !t->dst || !t->a || !t->b || !t->c || !t->const_ids ||
	    !t->var_ids || !t->runs)
		goto out;
	/* users of each node (CSR), and how many operands each op still waits for */
	for (int32_t i = 0; i < n; i++) {
		const struct expr_node *x = &g->nodes[i];
		if (x->kind == EK_CONST) {
			t->const_ids[t->nconsts++] = i;
			continue;
		}
		if (x->kind == EK_VAR) {
			t->var_ids[t->nvars++] = i;
			continue;
		}
		const int32_t ops[3] = { x->a, x->b, x->c };
		for (int k = 0; k < 3; k++)
			if (is_op(g, ops[k])) {
				indeg[i]++;
				ustart[ops[k] + 1]++;
			}
	}
	for (int32_t i = 0; i < n; i++)
		ustart[i + 1] += ustart[i];
	for (int32_t i = 0, *fill = next; i < n; i++)
		fill[i] = ustart[i];
	for (int32_t i = 0; i < n; i++) {
		const struct expr_node *x = &g->nodes[i];
		const int32_t ops[3] = { x->a, x->b, x->c };
		if (!is_op(g, i))
			continue;
		for (int k = 0; k < 3; k++)
			if (is_op(g, ops[k]))
				users[next[ops[k]]++] = i;
	}
	for (int o = 0; o < TAPE_NOPS; o++) {
		head[o] = tail[o] = -1;
		waiting[o] = 0;
	}
#define PUSH(i) do { \
		int o_ = tape_op(g, i); \
		next[i] = -1; \
		if (tail[o_] < 0) head[o_] = (i); else next[tail[o_]] = (i); \
		tail[o_] = (i); \
		waiting[o_]++; \
	} while (0)
	for (int32_t i = 0; i < n; i++)
		if (is_op(g, i) && indeg[i] == 0)
			PUSH(i);
	for (;;) {
		int best = -1;
		for (int o = 0; o < TAPE_NOPS; o++)
			if (waiting[o] > 0 && (best < 0 || waiting[o] > waiting[best]))
				best = o;
		if (best < 0)
			break;
		t->runs[t->nruns].op = (uint8_t)best;
		t->runs[t->nruns].start = m;
		while (head[best] >= 0) {
			int32_t i = head[best];
			const struct expr_node *x = &g->nodes[i];
			head[best] = next[i];
			if (head[best] < 0)
				tail[best] = -1;
			waiting[best]--;
			t->dst[m] = i;
			t->a[m] = x->a;
			t->b[m] = x->b;
			t->c[m] = best == TAPE_SHR || best == TAPE_CSHR ? pow2_shift(g, x->b) : x->c;
			m++;
			for (int32_t u = ustart[i]; u < ustart[i + 1]; u++)
				if (--indeg[users[u]] == 0)
					PUSH(users[u]);
		}
		t->runs[t->nruns].count = m - t->runs[t->nruns].start;
		t->nruns++;
	}
#undef PUSH
	t->n = n;
	rc = 0;
out:
	free(indeg);
	free(ustart);
	free(users);
	free(next);
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
		case TAPE_SHR:          /* floor division by 2^C: an arithmetic shift */
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i >> C[j];
			break;
		case TAPE_CSHR:         /* ceiling: the floor, plus one for a remainder */
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i;
				v[D[j]].i = (x >> C[j]) + ((x & (((int64_t)1 << C[j]) - 1)) != 0);
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
				v[D[j]].r = min_real(v[A[j]].r, v[B[j]].r);
			break;
		case OP(EK_MAX, EXPR_INT):
			for (j = s; j < e; j++) {
				int64_t x = v[A[j]].i, y = v[B[j]].i;
				v[D[j]].i = x > y ? x : y;
			}
			break;
		case OP(EK_MAX, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].r = max_real(v[A[j]].r, v[B[j]].r);
			break;
		case OP(EK_EQ, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i == v[B[j]].i;
			break;
		case OP(EK_EQ, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r == v[B[j]].r;
			break;
		case OP(EK_NE, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i != v[B[j]].i;
			break;
		case OP(EK_NE, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r != v[B[j]].r;
			break;
		case OP(EK_LT, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i < v[B[j]].i;
			break;
		case OP(EK_LT, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r < v[B[j]].r;
			break;
		case OP(EK_LE, EXPR_INT):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].i <= v[B[j]].i;
			break;
		case OP(EK_LE, EXPR_REAL):
			for (j = s; j < e; j++)
				v[D[j]].i = v[A[j]].r <= v[B[j]].r;
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
