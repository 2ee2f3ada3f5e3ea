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
/* partial tapes (expr_tape_build_part) only: a round-up, ceil(x / 2^c) *
 * 2^c in one step, and folds of single-use chains (a: offset of the
 * leaves in xs, b: their count) */
#define TAPE_RUP (2 * EK_COUNT + 2)
/* the caching allocator's rounding, a ? b : c with a = x <= L and b, c
 * round-ups of x (alloc_size in mem_plan.c): a = x, b = L's node, c = the
 * two shifts (low byte: below L) */
#define TAPE_ALLOC (2 * EK_COUNT + 3)
/* real division and product with an integer first operand converted
 * (TOREAL folded in), and division by a nonzero constant (no zero test) */
#define TAPE_DIV_IR (2 * EK_COUNT + 4)
#define TAPE_MUL_IR (2 * EK_COUNT + 5)
#define TAPE_DIVK_R (2 * EK_COUNT + 6)
#define TAPE_DIVK_IR (2 * EK_COUNT + 7)
/* the folds: from TAPE_NADD_I on */
#define TAPE_NADD_I (2 * EK_COUNT + 8)
#define TAPE_NADD_R (2 * EK_COUNT + 9)
#define TAPE_NMUL_I (2 * EK_COUNT + 10)
#define TAPE_NMUL_R (2 * EK_COUNT + 11)
#define TAPE_NMIN_I (2 * EK_COUNT + 12)
#define TAPE_NMIN_R (2 * EK_COUNT + 13)
#define TAPE_NMAX_I (2 * EK_COUNT + 14)
#define TAPE_NMAX_R (2 * EK_COUNT + 15)
#define TAPE_NAND (2 * EK_COUNT + 16)
#define TAPE_NOR (2 * EK_COUNT + 17)
#define TAPE_NOPS (2 * EK_COUNT + 18)

/* Is op one of the fused steps whose operands the plan records itself? */
static int
is_fused_op(int op)
{
	return op >= TAPE_RUP && op <= TAPE_DIVK_IR;
}

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
	free(t->xs);
	free(t->d16);
	free(t->a16);
	free(t->b16);
	free(t->c16);
	free(t->xs16);
	free(t->const_ids);
	free(t->const_vals);
	free(t->var_ids);
	free(t->var_hps);
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

/* fmax and fmin as glibc computes them, bit for bit (of equal values the
 * first, so fmax(-0, +0) is -0; a NaN loses to a number; of two NaNs the
 * second), without the call and without a branch: b > a ? b : a is
 * MAXSD with the first operand kept when equal or unordered, then a NaN
 * first operand gives way to the second. test_expr checks every pair of
 * NaN, signed zeros, infinities and numbers against expr_eval's fmax. */
static inline double
max_real(double a, double b)
{
	double m = b > a ? b : a;

	return a != a ? b : m;
}

static inline double
min_real(double a, double b)
{
	double m = b < a ? b : a;

	return a != a ? b : m;
}

/* Is node i computed by the tape (not a constant or a variable)? */
static int
is_op(const struct expr_graph *g, int32_t i)
{
	return i >= 0 && g->nodes[i].kind != EK_CONST && g->nodes[i].kind != EK_VAR;
}

/* The n-ary form of a foldable operation, or -1. An entry of that form
 * folds a tree of single-use nodes of the operation into one pass over
 * their leaves (a: offset in xs, b: count), without storing the inner
 * results. */
static int
nary_op(int op)
{
	switch (op) {
	case OP(EK_ADD, EXPR_INT): return TAPE_NADD_I;
	case OP(EK_ADD, EXPR_REAL): return TAPE_NADD_R;
	case OP(EK_MUL, EXPR_INT): return TAPE_NMUL_I;
	case OP(EK_MUL, EXPR_REAL): return TAPE_NMUL_R;
	case OP(EK_MIN, EXPR_INT): return TAPE_NMIN_I;
	case OP(EK_MIN, EXPR_REAL): return TAPE_NMIN_R;
	case OP(EK_MAX, EXPR_INT): return TAPE_NMAX_I;
	case OP(EK_MAX, EXPR_REAL): return TAPE_NMAX_R;
	case OP(EK_AND, EXPR_INT): return TAPE_NAND;
	case OP(EK_OR, EXPR_INT): return TAPE_NOR;
	default: return -1;
	}
}

/* How a chain of op may fold, keeping expr_eval's results exactly:
 *   FOLD_ANY    every single-use operand of the same operation: integer
 *               min, max, and, or (no overflow; any order gives the same)
 *   FOLD_ONE    one of the two operands, its leaves first: additions and
 *               products, integer or floating point, are commutative
 *               exactly (overflow included), so x + (p + q) is p, q, x
 *               added left to right, as (p + q) + x; never both operands,
 *               which would reassociate
 *   FOLD_LEFT   the first operand only: floating-point min and max, whose
 *               NaN and signed-zero rules make the operands' order count */
enum { FOLD_LEFT, FOLD_ONE, FOLD_ANY };

static int
fold_mode(int op)
{
	switch (op) {
	case OP(EK_MIN, EXPR_INT): case OP(EK_MAX, EXPR_INT): case OP(EK_AND, EXPR_INT): case OP(EK_OR, EXPR_INT):
		return FOLD_ANY;
	case OP(EK_MIN, EXPR_REAL): case OP(EK_MAX, EXPR_REAL):
		return FOLD_LEFT;
	default:
		return FOLD_ONE;
	}
}

/* node roles in a partial tape */
enum { ROLE_NONE, ROLE_ENTRY, ROLE_FOLDED };

struct tape_plan {
	uint8_t *role;
	int32_t *nuse;          /* operand slots of computed nodes that read the node */
	int32_t *user;          /* a computed node that reads it (the only one when nuse is 1) */
	int16_t *op;            /* the entry's operation */
	int32_t *fa, *fb, *fc;  /* a fused step's operands (is_fused_op) */
	int32_t *off, *cnt;     /* an n-ary entry's leaves in xs */
	int32_t *xs;
	int32_t nxs;
};

/* May computed node i fold into its only reader u (nobody else reads it)? */
static int
may_fold_into(const struct tape_plan *p, const uint8_t *need, int32_t i, int32_t u)
{
	return i >= 0 && p->role[i] == ROLE_ENTRY && !need[i] && p->nuse[i] == 1 && p->user[i] == u;
}

/* ... into a chain of u's own operation? */
static int
may_fold(const struct tape_plan *p, const uint8_t *need, int32_t i, int32_t u)
{
	return may_fold_into(p, need, i, u) && p->op[i] == p->op[u];
}

/* Leaves of entry u appended to p->xs (operands left to right, folded nodes
 * replaced by their own operands): an explicit stack, as chains of running
 * sums are thousands deep. */
static void
plan_leaves(const struct expr_graph *g, struct tape_plan *p, int32_t u, int32_t *stack)
{
	int32_t sp = 0;

	p->off[u] = p->nxs;
	stack[sp++] = u;
	while (sp > 0) {
		int32_t x = stack[--sp], a, b;
		if (x != u && p->role[x] != ROLE_FOLDED) {
			p->xs[p->nxs++] = x;
			continue;
		}
		/* the folded operand's leaves first (FOLD_ONE folded the second) */
		a = g->nodes[x].a;
		b = g->nodes[x].b;
		if (p->role[b] == ROLE_FOLDED && p->role[a] != ROLE_FOLDED) {
			stack[sp++] = a;
			stack[sp++] = b;
		} else {
			stack[sp++] = b;
			stack[sp++] = a;
		}
	}
	p->cnt[u] = p->nxs - p->off[u];
}

/* The operands of entry u that are other entries' results (up to 3, or the
 * n-ary leaves), for the schedule. Returns how many, in *list. */
static int32_t
entry_inputs(const struct expr_graph *g, const struct tape_plan *p, int32_t u, int32_t three[3],
    const int32_t **list)
{
	const struct expr_node *x = &g->nodes[u];

	if (p->op[u] >= TAPE_NADD_I) {
		*list = p->xs + p->off[u];
		return p->cnt[u];
	}
	if (is_fused_op(p->op[u])) {
		three[0] = p->fa[u];
		three[1] = p->op[u] == TAPE_RUP ? -1 : p->fb[u];
		*list = three;
		return 2;
	}
	three[0] = x->a;
	three[1] = x->b;
	three[2] = x->c;
	*list = three;
	return 3;
}

/*
 * Which nodes a partial tape computes, and how: need marks the nodes the
 * caller reads (NULL: every node; nothing is folded then), given the ones
 * it writes itself before each evaluation (NULL: none). Computed: every
 * operation node that is needed or read by a computed node, except given
 * ones. Folded: a computed node nobody else reads that is not needed,
 * whose only reader is a node of the same foldable operation (see
 * fold_mode), or a ceiling division by 2^k whose only reader
 * multiplies it by 2^k (a round-up, TAPE_RUP). -1 when out of memory.
 */
static int
plan_nodes(const struct expr_graph *g, const uint8_t *need, const uint8_t *given, struct tape_plan *p)
{
	int32_t n = g->n, *stack;

	p->role = calloc((size_t)n + 1, 1);
	p->nuse = calloc((size_t)n + 1, sizeof *p->nuse);
	p->user = malloc(sizeof *p->user * ((size_t)n + 1));
	p->op = malloc(sizeof *p->op * ((size_t)n + 1));
	p->fa = malloc(sizeof *p->fa * ((size_t)n + 1));
	p->fb = malloc(sizeof *p->fb * ((size_t)n + 1));
	p->fc = malloc(sizeof *p->fc * ((size_t)n + 1));
	p->off = calloc((size_t)n + 1, sizeof *p->off);
	p->cnt = calloc((size_t)n + 1, sizeof *p->cnt);
	p->xs = malloc(sizeof *p->xs * (2 * (size_t)n + 2));
	stack = malloc(sizeof *stack * (2 * (size_t)n + 2));
	p->nxs = 0;
	if (!p->role || !p->nuse || !p->user || !p->op || !p->fa || !p->fb || !p->fc || !p->off || !p->cnt ||
	    !p->xs || !stack) {
		free(stack);
		return -1;
	}
	/* operands have smaller ids: one pass from the top finds every reader first */
	for (int32_t i = n - 1; i >= 0; i--) {
		const struct expr_node *x = &g->nodes[i];
		if (!is_op(g, i) || (given != NULL && given[i]))
			continue;
		if (need != NULL && !need[i] && p->nuse[i] == 0)
			continue;
		p->role[i] = ROLE_ENTRY;
		p->op[i] = (int16_t)tape_op(g, i);
		const int32_t ops[3] = { x->a, x->b, x->c };
		for (int k = 0; k < 3; k++)
			if (ops[k] >= 0) {
				p->nuse[ops[k]]++;
				p->user[ops[k]] = i;
			}
	}
	if (need != NULL) {
		/* round-ups first: their products are entries, never folded into a chain */
		for (int32_t i = 0; i < n; i++) {
			int32_t u = p->user[i], other;
			if (p->role[i] != ROLE_ENTRY || need[i] || p->nuse[i] != 1 || p->op[i] != TAPE_CSHR ||
			    p->role[u] != ROLE_ENTRY || p->op[u] != OP(EK_MUL, EXPR_INT))
				continue;
			other = g->nodes[u].a == i ? g->nodes[u].b : g->nodes[u].a;
			if (g->nodes[u].a == g->nodes[u].b || pow2_shift(g, other) != pow2_shift(g, g->nodes[i].b))
				continue;
			p->role[i] = ROLE_FOLDED;
			p->op[u] = TAPE_RUP;
			p->fa[u] = g->nodes[i].a;
			p->fc[u] = pow2_shift(g, g->nodes[i].b);
		}
		/* the allocator's rounding: x <= L ? round-up : round-up, of one x */
		for (int32_t u = 0; u < n; u++) {
			const struct expr_node *y = &g->nodes[u];
			int32_t l = y->a;
			if (p->role[u] != ROLE_ENTRY || p->op[u] != OP(EK_ITE, EXPR_INT) || !may_fold_into(p, need, l, u) ||
			    p->op[l] != OP(EK_LE, EXPR_INT) || !expr_is_const(g, g->nodes[l].b) ||
			    !may_fold_into(p, need, y->b, u) || !may_fold_into(p, need, y->c, u) || y->b == y->c ||
			    p->op[y->b] != TAPE_RUP || p->op[y->c] != TAPE_RUP ||
			    p->fa[y->b] != g->nodes[l].a || p->fa[y->c] != g->nodes[l].a)
				continue;
			p->role[l] = p->role[y->b] = p->role[y->c] = ROLE_FOLDED;
			p->op[u] = TAPE_ALLOC;
			p->fa[u] = g->nodes[l].a;
			p->fb[u] = g->nodes[l].b;
			p->fc[u] = p->fc[y->b] | (p->fc[y->c] << 8);
		}
		for (int32_t u = 0; u < n; u++) {
			const struct expr_node *y = &g->nodes[u];
			int mode, fa, fb;
			if (p->role[u] != ROLE_ENTRY || nary_op(p->op[u]) < 0)
				continue;
			mode = fold_mode(p->op[u]);
			fa = may_fold(p, need, y->a, u);
			fb = y->b != y->a && may_fold(p, need, y->b, u);
			if (fa)
				p->role[y->a] = ROLE_FOLDED;
			if (fb && (mode == FOLD_ANY || (mode == FOLD_ONE && !fa)))
				p->role[y->b] = ROLE_FOLDED;
		}
		/* entries with folded operands become n-ary */
		for (int32_t u = 0; u < n; u++) {
			const struct expr_node *y = &g->nodes[u];
			if (p->role[u] != ROLE_ENTRY || nary_op(p->op[u]) < 0)
				continue;
			if (p->role[y->a] != ROLE_FOLDED && p->role[y->b] != ROLE_FOLDED)
				continue;
			plan_leaves(g, p, u, stack);
			p->op[u] = (int16_t)nary_op(p->op[u]);
		}
		/* real products and quotients: an integer operand's conversion folded
		 * in (a product's operands commute exactly), a nonzero constant
		 * divisor without the zero test */
		for (int32_t u = 0; u < n; u++) {
			const struct expr_node *y = &g->nodes[u];
			int div = p->op[u] == OP(EK_DIV, EXPR_REAL), conv;
			int32_t a = y->a, b = y->b;
			if (p->role[u] != ROLE_ENTRY || (!div && p->op[u] != OP(EK_MUL, EXPR_REAL)))
				continue;
			if (!div && !(may_fold_into(p, need, a, u) && p->op[a] == OP(EK_TOREAL, EXPR_REAL))) {
				a = y->b;
				b = y->a;
			}
			conv = may_fold_into(p, need, a, u) && p->op[a] == OP(EK_TOREAL, EXPR_REAL) && a != b;
			if (conv)
				p->role[a] = ROLE_FOLDED;
			p->fa[u] = conv ? g->nodes[a].a : a;
			p->fb[u] = b;
			if (div && expr_is_const(g, b) && g->nodes[b].k.r != 0.0)
				p->op[u] = conv ? TAPE_DIVK_IR : TAPE_DIVK_R;
			else if (conv)
				p->op[u] = div ? TAPE_DIV_IR : TAPE_MUL_IR;
		}
	}
	free(stack);
	return 0;
}

static void
plan_free(struct tape_plan *p)
{
	free(p->role);
	free(p->nuse);
	free(p->user);
	free(p->op);
	free(p->fa);
	free(p->fb);
	free(p->fc);
	free(p->off);
	free(p->cnt);
	free(p->xs);
}

/* Which waiting operation a schedule emits next (see schedule). */
enum { SCHED_MOST, SCHED_FEWEST, SCHED_FIRST_OP, SCHED_OLDEST, SCHED_ORDERS };

/*
 * One schedule of the plan's entries into t's runs, emitting ready entries
 * one operation at a time: of the operations with ready entries, the one
 * with the most (SCHED_MOST), the fewest (SCHED_FEWEST: the others gather
 * more meanwhile), the lowest operation code (SCHED_FIRST_OP), or the one
 * whose first ready entry comes first in the graph (SCHED_OLDEST). An
 * emitted run takes its operation's ready entries and those they make
 * ready, so a chain of one operation is one run. indeg (in-degrees over
 * entries) is consumed; next is scratch. Returns the number of runs; with
 * emit 0 only counts them, touching neither t nor the graph's nodes (the
 * trials of every order: loading each node's operands in a scattered order
 * was most of a trial's time on a 400k-node graph).
 */
static int32_t
schedule(const struct expr_graph *g, const struct tape_plan *p, int32_t *indeg, const int32_t *ustart,
    const int32_t *users, int32_t *next, int order, int emit, struct expr_tape *t)
{
	int32_t head[TAPE_NOPS], tail[TAPE_NOPS], waiting[TAPE_NOPS], m = 0, nruns = 0;

	for (int o = 0; o < TAPE_NOPS; o++) {
		head[o] = tail[o] = -1;
		waiting[o] = 0;
	}
#define PUSH(i) do { \
		int o_ = p->op[i]; \
		next[i] = -1; \
		if (tail[o_] < 0) head[o_] = (i); else next[tail[o_]] = (i); \
		tail[o_] = (i); \
		waiting[o_]++; \
	} while (0)
	for (int32_t i = 0; i < g->n; i++)
		if (p->role[i] == ROLE_ENTRY && indeg[i] == 0)
			PUSH(i);
	for (;;) {
		int best = -1;
		for (int o = 0; o < TAPE_NOPS; o++) {
			if (waiting[o] == 0)
				continue;
			if (best < 0 ||
			    (order == SCHED_MOST && waiting[o] > waiting[best]) ||
			    (order == SCHED_FEWEST && waiting[o] < waiting[best]) ||
			    (order == SCHED_OLDEST && head[o] < head[best]))
				best = o;       /* SCHED_FIRST_OP: the first one found */
		}
		if (best < 0)
			break;
		if (emit) {
			t->runs[nruns].op = (uint8_t)best;
			t->runs[nruns].start = m;
		}
		while (head[best] >= 0) {
			int32_t i = head[best];
			head[best] = next[i];
			if (head[best] < 0)
				tail[best] = -1;
			waiting[best]--;
			if (emit) {
				const struct expr_node *x = &g->nodes[i];
				t->dst[m] = i;
				if (best >= TAPE_NADD_I) {
					t->a[m] = p->off[i];
					t->b[m] = p->cnt[i];
					t->c[m] = -1;
				} else if (is_fused_op(best)) {
					t->a[m] = p->fa[i];
					t->b[m] = best == TAPE_RUP ? -1 : p->fb[i];
					t->c[m] = best == TAPE_RUP || best == TAPE_ALLOC ? p->fc[i] : -1;
				} else {
					t->a[m] = x->a;
					t->b[m] = x->b;
					t->c[m] = best == TAPE_SHR || best == TAPE_CSHR ? pow2_shift(g, x->b) : x->c;
				}
			}
			m++;
			for (int32_t u = ustart[i]; u < ustart[i + 1]; u++)
				if (--indeg[users[u]] == 0)
					PUSH(users[u]);
		}
		if (emit)
			t->runs[nruns].count = m - t->runs[nruns].start;
		nruns++;
	}
#undef PUSH
	if (emit)
		t->nruns = nruns;
	return nruns;
}

/*
 * The schedule: a topological order cut into as few runs as it can (each
 * run costs a dispatch and a mispredicted loop exit, as much as evaluating
 * a few nodes). Which greedy order makes fewest runs depends on the graph
 * (on the cnn5 model: 273 runs emitting the operation with the most ready
 * nodes, 67 emitting the one whose first ready node is oldest; on its
 * check tape 174 and 138 with other orders), so every order of schedule()
 * is tried and the best kept: building stays linear in the graph.
 */
int
expr_tape_build_part(const struct expr_graph *g, const uint8_t *need, const uint8_t *given,
    struct expr_tape *t)
{
	int32_t n = g->n, *indeg = NULL, *ustart = NULL, *users = NULL, *next = NULL, m = 0;
	int32_t three[3];
	const int32_t *in;
	struct tape_plan p;
	int rc = -1;

	memset(t, 0, sizeof *t);
	memset(&p, 0, sizeof p);
	if (plan_nodes(g, need, given, &p) != 0)
		goto out;
	indeg = calloc((size_t)n + 1, sizeof *indeg);
	ustart = calloc((size_t)n + 2, sizeof *ustart);
	users = malloc(sizeof *users * (3 * (size_t)n + (size_t)p.nxs + 1));
	next = malloc(sizeof *next * ((size_t)n + 1));
	t->dst = malloc(sizeof *t->dst * ((size_t)n + 1));
	t->a = malloc(sizeof *t->a * ((size_t)n + 1));
	t->b = malloc(sizeof *t->b * ((size_t)n + 1));
	t->c = malloc(sizeof *t->c * ((size_t)n + 1));
	t->xs = malloc(sizeof *t->xs * ((size_t)p.nxs + 1));
	t->const_ids = malloc(sizeof *t->const_ids * ((size_t)n + 1));
	t->const_vals = malloc(sizeof *t->const_vals * ((size_t)n + 1));
	t->var_ids = malloc(sizeof *t->var_ids * ((size_t)n + 1));
	t->var_hps = malloc(sizeof *t->var_hps * ((size_t)n + 1));
	t->runs = malloc(sizeof *t->runs * ((size_t)n + 1));
	if (!indeg || !ustart || !users || !next || !t->dst || !t->a || !t->b || !t->c || !t->xs ||
	    !t->const_ids || !t->const_vals || !t->var_ids || !t->var_hps || !t->runs)
		goto out;
	/* readers of each entry (CSR), and how many operands each entry still waits for */
	for (int32_t i = 0; i < n; i++) {
		if (p.role[i] != ROLE_ENTRY)
			continue;
		for (int32_t k = 0, nin = entry_inputs(g, &p, i, three, &in); k < nin; k++)
			if (in[k] >= 0 && p.role[in[k]] == ROLE_ENTRY) {
				indeg[i]++;
				ustart[in[k] + 1]++;
			}
	}
	for (int32_t i = 0; i < n; i++)
		ustart[i + 1] += ustart[i];
	for (int32_t i = 0, *fill = next; i < n; i++)
		fill[i] = ustart[i];
	for (int32_t i = 0; i < n; i++) {
		if (p.role[i] != ROLE_ENTRY)
			continue;
		for (int32_t k = 0, nin = entry_inputs(g, &p, i, three, &in); k < nin; k++)
			if (in[k] >= 0 && p.role[in[k]] == ROLE_ENTRY)
				users[next[in[k]]++] = i;
	}
	memcpy(t->xs, p.xs, sizeof *t->xs * (size_t)p.nxs);
	t->nxs = p.nxs;
	{
		/* the order with the fewest runs of SCHED_ORDERS (each try starts
		 * from the same in-degrees) */
		int best_order = 0, best_runs = INT32_MAX;
		int32_t *indeg0 = malloc(sizeof *indeg0 * ((size_t)n + 1));
		if (indeg0 == NULL)
			goto out;
		memcpy(indeg0, indeg, sizeof *indeg * (size_t)n);
		for (int order = 0; order < SCHED_ORDERS; order++) {
			memcpy(indeg, indeg0, sizeof *indeg * (size_t)n);
			int32_t nr = schedule(g, &p, indeg, ustart, users, next, order, 0, t);
			if (nr < best_runs) {
				best_runs = nr;
				best_order = order;
			}
		}
		memcpy(indeg, indeg0, sizeof *indeg * (size_t)n);
		schedule(g, &p, indeg, ustart, users, next, best_order, 1, t);
		free(indeg0);
		m = 0;
		for (int32_t r = 0; r < t->nruns; r++)
			m += t->runs[r].count;
	}
	/* the constants and variables it reads (all of them for a whole tape),
	 * with their values and hyperparameters: evaluation copies them from
	 * these dense lists without touching the graph */
	{
		uint8_t *reads = calloc((size_t)n + 1, 1);
		if (reads == NULL)
			goto out;
		expr_tape_mark_reads(t, reads);
		for (int32_t i = 0; i < n; i++) {
			const struct expr_node *x = &g->nodes[i];
			if (need != NULL && !need[i] && !reads[i])
				continue;
			if (x->kind == EK_CONST) {
				t->const_ids[t->nconsts] = i;
				t->const_vals[t->nconsts++] = x->k;
			} else if (x->kind == EK_VAR) {
				t->var_ids[t->nvars] = i;
				t->var_hps[t->nvars++] = (int32_t)x->k.i;
			}
		}
		free(reads);
	}
	t->n = n;
	/* a small tape also as 16-bit operands: half the cache per evaluation */
	if (n <= INT16_MAX && p.nxs <= INT16_MAX) {
		t->d16 = malloc(sizeof *t->d16 * ((size_t)m + 1));
		t->a16 = malloc(sizeof *t->a16 * ((size_t)m + 1));
		t->b16 = malloc(sizeof *t->b16 * ((size_t)m + 1));
		t->c16 = malloc(sizeof *t->c16 * ((size_t)m + 1));
		t->xs16 = malloc(sizeof *t->xs16 * ((size_t)p.nxs + 1));
		if (!t->d16 || !t->a16 || !t->b16 || !t->c16 || !t->xs16)
			goto out;
		for (int32_t j = 0; j < m; j++) {
			t->d16[j] = (int16_t)t->dst[j];
			t->a16[j] = (int16_t)t->a[j];
			t->b16[j] = (int16_t)t->b[j];
			t->c16[j] = (int16_t)t->c[j];
		}
		for (int32_t j = 0; j < p.nxs; j++)
			t->xs16[j] = (int16_t)t->xs[j];
	}
	rc = 0;
out:
	plan_free(&p);
	free(indeg);
	free(ustart);
	free(users);
	free(next);
	if (rc != 0)
		expr_tape_free(t);
	return rc;
}

int
expr_tape_build(const struct expr_graph *g, struct expr_tape *t)
{
	return expr_tape_build_part(g, NULL, NULL, t);
}

void
expr_tape_mark_reads(const struct expr_tape *t, uint8_t *mark)
{
	for (int32_t r = 0; r < t->nruns; r++) {
		int op = t->runs[r].op;
		for (int32_t j = t->runs[r].start; j < t->runs[r].start + t->runs[r].count; j++) {
			if (op >= TAPE_NADD_I) {
				for (int32_t k = 0; k < t->b[j]; k++)
					mark[t->xs[t->a[j] + k]] = 1;
				continue;
			}
			mark[t->a[j]] = 1;
			if (op == TAPE_SHR || op == TAPE_CSHR || op == TAPE_RUP)
				continue;
			if (is_fused_op(op)) {
				mark[t->b[j]] = 1;
				continue;
			}
			if (t->b[j] >= 0)
				mark[t->b[j]] = 1;
			if (t->c[j] >= 0 && (op == OP(EK_ITE, EXPR_INT) || op == OP(EK_ITE, EXPR_REAL)))
				mark[t->c[j]] = 1;
		}
	}
}

/* ceil(x / 2^k) * 2^k into *out (wrapped on overflow, as the product's
 * __builtin_mul_overflow leaves it); 1 when the product overflows. */
static inline int
rup_checked(int64_t x, int k, int64_t *out)
{
	int64_t q = (x >> k) + ((x & (((int64_t)1 << k) - 1)) != 0);

	*out = (int64_t)((uint64_t)q << k);
	return q > (INT64_MAX >> k) || q < (INT64_MIN >> k);
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

#define TAPE_IDX int32_t
#define TAPE_RUN_FN tape_run32
#include "expr_tape_run.h"
#undef TAPE_IDX
#undef TAPE_RUN_FN
#define TAPE_IDX int16_t
#define TAPE_RUN_FN tape_run16
#include "expr_tape_run.h"
#undef TAPE_IDX
#undef TAPE_RUN_FN

int
expr_tape_eval(const struct expr_tape *t, const struct expr_graph *g,
    const union expr_val *vars, union expr_val *v, expr_id *fault)
{
	int of;

	for (int32_t i = 0; i < t->nconsts; i++)
		v[t->const_ids[i]] = t->const_vals[i];
	for (int32_t i = 0; i < t->nvars; i++)
		v[t->var_ids[i]] = vars[t->var_hps[i]];
	of = t->d16 != NULL ? tape_run16(t, t->d16, t->a16, t->b16, t->c16, t->xs16, v) :
	    tape_run32(t, t->dst, t->a, t->b, t->c, t->xs, v);
	if (of) {
		/* which node: only when asked (the check does not ask, and does not
		 * read the graph, which an explanation may be extending) */
		if (fault != NULL)
			*fault = locate_fault(g, vars, v);
		return -1;
	}
	return 0;
}
