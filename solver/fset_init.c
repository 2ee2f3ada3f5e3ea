/*
 * fset_init.c - setting up the feasible-set engine for a query (see fset.h):
 * one engine variable per discrete space dim (parents before their nested
 * dims), each with its values sorted by model value; the cone of nodes the
 * `feasible` expression needs; for every hyperparameter the cone nodes that
 * depend on it (re-bounded when its interval changes); the compiled tape for
 * exact evaluation; the sizes of the grid (nested choices sum over their
 * options); and one continuous var per uniform or loguniform dim bound to
 * the model (fset_real.c), with its resolution.
 */
#include "fset_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sortent {
	union expr_val v;
	int64_t idx;
	int real;
};

static int
cmp_sortent(const void *a, const void *b)
{
	const struct sortent *x = a, *y = b;

	if (x->real) {
		if (x->v.r != y->v.r)
			return x->v.r < y->v.r ? -1 : 1;
	} else if (x->v.i != y->v.i)
		return x->v.i < y->v.i ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

#define EXPLICIT_LIMIT 1000000

static int
init_var(struct fs_engine *e, int k, struct fs_var *v, struct dn_error *err)
{
	const struct sp_dim *d = &e->q->space.dims[k];
	const struct cm_model_def *def = e->q->def;

	memset(v, 0, sizeof *v);
	v->dim = k;
	v->hp = d->hp;
	v->n = d->nvalues;
	v->parent = -1;
	v->real = d->hp >= 0 && def->hps[d->hp].type == CM_HP_REAL;
	if (d->values != NULL || d->nvalues <= EXPLICIT_LIMIT) {
		struct sortent *s = malloc(sizeof *s * (size_t)d->nvalues);
		v->vals = malloc(sizeof *v->vals * (size_t)d->nvalues);
		v->dim_index = malloc(sizeof *v->dim_index * (size_t)d->nvalues);
		if (s == NULL || v->vals == NULL || v->dim_index == NULL) {
			/* the caller does not count this var: nothing of it stays */
			free(s);
			free(v->vals);
			free(v->dim_index);
			v->vals = NULL;
			v->dim_index = NULL;
			return dn_error_set(err, DN_ENOMEM, d->path, "out of memory");
		}
		for (int64_t i = 0; i < d->nvalues; i++) {
			s[i].idx = i;
			s[i].real = v->real;
			if (d->hp >= 0)
				s[i].v = sp_value_hp(d, i);
			else
				s[i].v.i = i;   /* passes through: the space's own order */
		}
		qsort(s, (size_t)d->nvalues, sizeof *s, cmp_sortent);
		for (int64_t i = 0; i < d->nvalues; i++) {
			v->vals[i] = s[i].v;
			v->dim_index[i] = s[i].idx;
		}
		free(s);
	} else {
		/* a huge grid (randint over 10^12 values, a fine q-grid): its values
		 * ascend with the dim's own index, computed on demand */
		v->d = d;
		if (d->hp >= 0 && sp_value_hp(d, 0).i == sp_value_hp(d, 1).i && !v->real)
			return dn_error_set(err, DN_EINTERNAL, d->path, "grid values are not distinct");
	}
	return 0;
}

/*
 * Sort key of a top-level dim's unit (smaller first). Dims that set the
 * model come before those that pass through; among them, huge grids (more
 * than 64 values, bisected) go last, categorical hyperparameters first
 * (they choose between operators: while one is open, every cost is bounded
 * by the hull of its alternatives, each operator's time or memory guarded
 * by its choice and summed over all of them, which nothing decides until it
 * is fixed: ResNet-50's block choice made latency counts 70 times slower),
 * and the others by decreasing influence: how much the budgeted quantities
 * change between the dim's smallest and largest value with every other
 * hyperparameter at its default (the largest over the smallest value over
 * the grid). Deciding the most influential variables first leaves boxes
 * whose remaining variables barely matter, which the bounds settle whole.
 */
/*
 * Whether the dim's range alone leaves a shape rule or a user constraint
 * undecided (its interval bound [0, 1] with every other hyperparameter at
 * its default): then no box over more than one of its values settles, so
 * it goes before the dims that only move the budgets. Per-layer attention
 * heads are such dims (the split into heads is a rule of heads x (E /
 * heads), which intervals cannot prove) and, under a fused attention
 * kernel, move memory too little to come first by influence: transformer24
 * on a T4 searched its 24 ffn dims before them, and the lower bound after
 * 3 s fell from 1.6e19 to 1.1e5 when SDPA became the default kernel.
 */
static int
leaves_rule_open(const struct sq_query *q, const struct sp_dim *d)
{
	const struct expr_graph *g = cm_model_graph(q->model);
	struct expr_ival *vars = calloc((size_t)g->nvars + 1, sizeof *vars);
	struct expr_ival *out = malloc(sizeof *out * ((size_t)g->n + 1));
	int open = 0, real;

	if (vars == NULL || out == NULL || d->hp >= g->nvars) {
		free(vars);
		free(out);
		return 0;
	}
	for (int h = 0; h < q->def->nhps && h < g->nvars; h++)
		vars[h].lo = vars[h].hi = q->fixed[h];
	vars[d->hp].lo = vars[d->hp].hi = sp_value_hp(d, 0);
	real = g->vars[d->hp].type == EXPR_REAL;
	for (int64_t i = 1; i < d->nvalues; i++) {
		union expr_val v = sp_value_hp(d, i);
		if (real ? v.r < vars[d->hp].lo.r : v.i < vars[d->hp].lo.i)
			vars[d->hp].lo = v;
		if (real ? v.r > vars[d->hp].hi.r : v.i > vars[d->hp].hi.i)
			vars[d->hp].hi = v;
	}
	expr_bound(g, vars, out);
	for (int part = 0; part < q->nparts && !open; part++)
		open = q->parts[part].kind != 1 && q->parts[part].ok >= 0 && q->parts[part].ok < g->n &&
		    out[q->parts[part].ok].lo.i != out[q->parts[part].ok].hi.i;
	free(vars);
	free(out);
	return open;
}

static double
unit_key(const struct sq_query *q, int k)
{
	const struct sp_dim *d = &q->space.dims[k];
	const struct expr_graph *g = cm_model_graph(q->model);
	union expr_val *cfg, *vals;
	double influence = 0;
	int sets_model = 0;

	for (int c = k; c < q->space.ndims && (c == k || q->space.dims[c].parent >= 0); c++)
		sets_model |= q->space.dims[c].hp >= 0;
	if (!sets_model || !d->discrete)
		return 3e300;
	if (d->nvalues > 64 || d->hp < 0)
		return 2e300 + (double)d->nvalues;
	cfg = malloc(sizeof *cfg * ((size_t)q->def->nhps + 1));
	vals = malloc(sizeof *vals * ((size_t)g->n + 1));
	if (cfg == NULL || vals == NULL) {
		free(cfg);
		free(vals);
		return 1e300;
	}
	for (int part = 0; part < q->nparts; part++) {
		expr_id x = q->parts[part].value;
		double lo = 0, hi = 0;
		int first = 1;
		if (x < 0)
			continue;
		/* every value, not only the ends: an effect can peak inside the range
		 * (cuDNN's Winograd workspace exists for 3x3 kernels only) */
		for (int64_t i = 0; i < d->nvalues; i++) {
			double y;
			memcpy(cfg, q->fixed, sizeof *cfg * (size_t)q->def->nhps);
			cfg[d->hp] = sp_value_hp(d, i);
			if (expr_eval(g, cfg, vals, NULL) != 0)
				continue;
			y = g->nodes[x].type == EXPR_REAL ? vals[x].r : (double)vals[x].i;
			if (first || y < lo) lo = y;
			if (first || y > hi) hi = y;
			first = 0;
		}
		if (!first && lo > 0 && hi > 0)
			influence += log(hi / lo);
	}
	free(cfg);
	free(vals);
	if (q->def->hps[d->hp].type == CM_HP_CATEGORICAL)
		return -1e9 - influence;        /* influences are sums of a few logarithms */
	if (leaves_rule_open(q, d))
		return -1e6 - influence;
	return -influence;
}

union expr_val
fs_value(const struct fs_var *v, int64_t p)
{
	union expr_val x;

	if (v->vals != NULL)
		return v->vals[p];
	if (v->hp >= 0)
		return sp_value_hp(v->d, p);
	x.i = p;        /* passes through: the index itself */
	return x;
}

int64_t
fs_dim_index(const struct fs_var *v, int64_t p)
{
	return v->dim_index != NULL ? v->dim_index[p] : p;
}

/* Size of var v's subtree with v over positions [lo, hi] (children full). */
fs_count
fs_contrib(const struct fs_engine *e, int v, int64_t lo, int64_t hi)
{
	const struct fs_var *x = &e->vars[v];
	fs_count sum = 0;

	if (!x->has_children)
		return (fs_count)(hi - lo + 1);
	for (int64_t p = lo; p <= hi; p++) {
		fs_count prod = 1;
		for (int c = v + 1; c < e->nvars; c++)
			if (e->vars[c].parent == v && e->vars[c].active_pos == p)
				prod = fs_mul(prod, e->full[c]);
		sum = fs_add(sum, prod);
	}
	return sum;
}

static void
compute_cone_and_deps(struct fs_engine *e, int32_t root, uint64_t *bits, int words)
{
	const struct expr_graph *g = e->g;
	int nhp = e->q->def->nhps;

	memset(e->cone, 0, (size_t)g->n);
	e->cone[root] = 1;
	for (int32_t i = root; i >= 0; i--) {
		const struct expr_node *n = &g->nodes[i];
		if (!e->cone[i])
			continue;
		if (n->a >= 0) e->cone[n->a] = 1;
		if (n->b >= 0) e->cone[n->b] = 1;
		if (n->c >= 0) e->cone[n->c] = 1;
	}
	e->ncone = 0;
	for (int32_t i = 0; i <= root; i++) {
		const struct expr_node *n = &g->nodes[i];
		uint64_t *bi = bits + (size_t)i * (size_t)words;
		if (!e->cone[i])
			continue;
		e->cone_list[e->ncone++] = i;
		if (n->kind == EK_VAR) {
			bi[n->k.i / 64] |= 1ULL << (n->k.i % 64);
			continue;
		}
		for (int w = 0; w < words; w++) {
			uint64_t m = 0;
			if (n->a >= 0) m |= bits[(size_t)n->a * (size_t)words + (size_t)w];
			if (n->b >= 0) m |= bits[(size_t)n->b * (size_t)words + (size_t)w];
			if (n->c >= 0) m |= bits[(size_t)n->c * (size_t)words + (size_t)w];
			bi[w] = m;
		}
	}
	/* nodes that depend on exactly one hyperparameter get exact value tables
	 * (see build_tables) */
	for (int32_t j = 0; j < e->ncone; j++) {
		int32_t i = e->cone_list[j];
		int only = -1, count = 0;
		e->tab_var[i] = -1;
		if (g->nodes[i].kind == EK_VAR || g->nodes[i].kind == EK_CONST)
			continue;
		for (int w = 0; w < words && count < 2; w++) {
			uint64_t m = bits[(size_t)i * (size_t)words + (size_t)w];
			while (m && count < 2) {
				only = w * 64 + __builtin_ctzll(m);
				m &= m - 1;
				count++;
			}
		}
		if (count == 1)
			e->tab_var[i] = -2 - only;      /* the hyperparameter, resolved to a var later */
	}
	for (int h = 0; h < nhp; h++) {
		e->ndep[h] = 0;
		for (int32_t j = 0; j < e->ncone; j++) {
			int32_t i = e->cone_list[j];
			if (bits[(size_t)i * (size_t)words + (size_t)h / 64] & (1ULL << (h % 64)))
				e->dep[h][e->ndep[h]++] = i;
		}
	}
}

/*
 * Exact tables for nodes that depend on a single variable with a small
 * grid: interval arithmetic loses exactness when a variable occurs twice
 * (a conv's window 2*(k/2) - (k-1) is constant, its interval is not), so
 * such nodes are bounded by the min and max of their exact values over the
 * box's positions instead. Only variables that alone set their
 * hyperparameter and have at most TABLE_MAX positions qualify.
 */
#define TABLE_MAX 64

static int
build_tables(struct fs_engine *e)
{
	const struct expr_graph *g = e->g;
	int nhp = e->q->def->nhps;
	union expr_val *cfg = malloc(sizeof *cfg * ((size_t)nhp + 1));
	union expr_val *vals = malloc(sizeof *vals * ((size_t)g->n + 1));
	int *var_of_hp = malloc(sizeof *var_of_hp * ((size_t)nhp + 1));

	if (cfg == NULL || vals == NULL || var_of_hp == NULL) {
		free(cfg);
		free(vals);
		free(var_of_hp);
		return -1;
	}
	for (int h = 0; h < nhp; h++)
		var_of_hp[h] = -1;
	for (int v = 0; v < e->nvars; v++) {
		int h = e->vars[v].hp;
		if (h < 0)
			continue;
		var_of_hp[h] = var_of_hp[h] == -1 ? v : -3;    /* -3: set by several dims */
	}
	for (int32_t i = 0; i < g->n; i++) {
		int h, v;
		if (e->tab_var[i] > -2)
			continue;
		h = -2 - e->tab_var[i];
		v = var_of_hp[h];
		e->tab_var[i] = (v >= 0 && e->vars[v].n <= TABLE_MAX) ? v : -1;
	}
	for (int v = 0; v < e->nvars; v++) {
		int any = 0;
		if (e->vars[v].hp < 0 || e->vars[v].n > TABLE_MAX)
			continue;
		for (int32_t i = 0; i < g->n && !any; i++)
			any = e->tab_var[i] == v;
		if (!any)
			continue;
		for (int32_t i = 0; i < g->n; i++)
			if (e->tab_var[i] == v && (e->tab[i] = malloc(sizeof **e->tab * (size_t)e->vars[v].n)) == NULL)
				goto oom;
		for (int64_t p = 0; p < e->vars[v].n; p++) {
			memcpy(cfg, e->q->fixed, sizeof *cfg * (size_t)nhp);
			cfg[e->vars[v].hp] = fs_value(&e->vars[v], p);
			if (expr_eval(g, cfg, vals, NULL) != 0) {
				/* an overflow somewhere in the graph: no table for this var */
				for (int32_t i = 0; i < g->n; i++)
					if (e->tab_var[i] == v) {
						free(e->tab[i]);
						e->tab[i] = NULL;
						e->tab_var[i] = -1;
					}
				break;
			}
			for (int32_t i = 0; i < g->n; i++)
				if (e->tab_var[i] == v)
					e->tab[i][p] = vals[i];
		}
	}
	free(cfg);
	free(vals);
	free(var_of_hp);
	return 0;
oom:
	free(cfg);
	free(vals);
	free(var_of_hp);
	return -1;
}

/* Resolution of continuous vars: 2^-10 of the range for one; coarser per
 * var when there are several (the grids multiply). */
#define REAL_BITS 10
#define REAL_BITS_TOTAL 12

/* The continuous vars (e->ncvars counted by the caller), in space order;
 * their parents are resolved once the discrete vars exist. */
static int
init_cvars(struct fs_engine *e, struct dn_error *err)
{
	const struct sp_space *sp = &e->q->space;
	int n = 0, bits = e->ncvars <= 1 ? REAL_BITS : REAL_BITS_TOTAL / e->ncvars;

	e->cvars = calloc((size_t)e->ncvars + 1, sizeof *e->cvars);
	e->dim_cvar = malloc(sizeof *e->dim_cvar * ((size_t)sp->ndims + 1));
	if (e->cvars == NULL || e->dim_cvar == NULL)
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	for (int k = 0; k < sp->ndims; k++) {
		const struct sp_dim *d = &sp->dims[k];
		struct fs_cvar *c = &e->cvars[n];
		e->dim_cvar[k] = -1;
		if (d->discrete || d->hp < 0)
			continue;
		c->dim = k;
		c->hp = d->hp;
		c->parent = -1;
		c->active_pos = -1;
		c->logscale = d->type == SP_LOGUNIFORM;
		c->bits = bits < 3 ? 3 : bits;
		c->L = c->lo = c->rlo = d->lo;
		c->H = c->hi = c->rhi = d->hi;
		e->dim_cvar[k] = n++;
	}
	return 0;
}

int
fs_dim_parent(const struct fs_engine *e, int dim, int64_t *active_pos)
{
	const struct sp_dim *d = &e->q->space.dims[dim];
	int p = d->parent >= 0 ? e->dim_var[d->parent] : -1;

	*active_pos = -1;
	for (int64_t x = 0; p >= 0 && x < e->vars[p].n; x++)
		if (fs_dim_index(&e->vars[p], x) == d->parent_option)
			*active_pos = x;
	return p;
}

int
fs_init(struct fs_engine *e, struct sq_query *q, struct dn_error *err)
{
	if (fs_init_root(e, q, q->feasible, err) != 0)
		return -1;
	if (fs_check_build(e) != 0)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	return 0;
}

/* Counts the discrete dims (*nd) and the continuous ranges bound to the
 * model (e->ncvars); an unbounded continuous hyperparameter is an error. */
static int
count_dims(struct fs_engine *e, const struct sq_query *q, int *nd, struct dn_error *err)
{
	*nd = 0;
	for (int k = 0; k < q->space.ndims; k++) {
		const struct sp_dim *d = &q->space.dims[k];
		if (!d->discrete && d->hp >= 0 && d->type != SP_UNIFORM && d->type != SP_LOGUNIFORM)
			return dn_error_set(err, DN_EINVAL, d->path,
			    "%s is unbounded: the engine needs a range to search for hyperparameter \"%s\" "
			    "(give it as uniform or loguniform over the values that matter)", sp_type_name(d->type),
			    q->def->hps[d->hp].name);
		if (d->discrete)
			(*nd)++;
		else if (d->hp >= 0)
			e->ncvars++;
	}
	if (e->ncvars > FS_MAX_CVARS)
		return dn_error_set(err, DN_ERANGE, "$.space", "the space has %d continuous ranges bound to the model; "
		    "the engine searches at most %d", e->ncvars, FS_MAX_CVARS);
	return 0;
}

/*
 * Engine order: each top-level dim with its nested dims as one unit
 * (parents before children), units by grid size ascending, dims that
 * pass through last. Large domains come last, where the other variables
 * are fixed and bisection finds each threshold in log steps. Fills
 * e->vars, e->nvars and e->dim_var.
 */
static int
order_vars(struct fs_engine *e, const struct sq_query *q, struct dn_error *err)
{
	int *units = malloc(sizeof *units * ((size_t)q->space.ndims + 1)), nu = 0, rc = 0;
	double *key = calloc((size_t)q->space.ndims + 1, sizeof *key);

	if (units == NULL || key == NULL) {
		free(units);
		free(key);
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	}
	for (int k = 0; k < q->space.ndims; k++) {
		e->dim_var[k] = -1;
		if (q->space.dims[k].parent < 0)
			units[nu++] = k;
	}
	for (int u = 0; u < nu; u++)
		key[units[u]] = unit_key(q, units[u]);
	for (int i = 1; i < nu; i++)    /* insertion sort: stable, few units */
		for (int j = i; j > 0 && key[units[j]] < key[units[j - 1]]; j--) {
			int t = units[j];
			units[j] = units[j - 1];
			units[j - 1] = t;
		}
	for (int u = 0; u < nu && rc == 0; u++) {
		int k = units[u];
		do {
			if (q->space.dims[k].discrete) {
				if ((rc = init_var(e, k, &e->vars[e->nvars], err)) != 0)
					break;
				e->dim_var[k] = e->nvars++;
			}
			k++;
		} while (k < q->space.ndims && q->space.dims[k].parent >= 0);
	}
	free(units);
	free(key);
	return rc != 0 ? -1 : 0;
}

/* Links nested variables to their parents and computes subtree sizes
 * (children before parents) and the whole space's size. */
static int
link_and_size(struct fs_engine *e, const struct sq_query *q, struct dn_error *err)
{
	for (int v = 0; v < e->nvars; v++) {
		const struct sp_dim *d = &q->space.dims[e->vars[v].dim];
		if (d->parent < 0)
			continue;
		if (e->dim_var[d->parent] < 0)
			return dn_error_set(err, DN_EINTERNAL, d->path, "nested dim under a continuous parent");
		e->vars[v].parent = fs_dim_parent(e, e->vars[v].dim, &e->vars[v].active_pos);
		e->vars[e->vars[v].parent].has_children = 1;
	}
	for (int c = 0; c < e->ncvars; c++)
		if (q->space.dims[e->cvars[c].dim].parent >= 0) {
			e->cvars[c].parent = fs_dim_parent(e, e->cvars[c].dim, &e->cvars[c].active_pos);
			if (e->cvars[c].parent >= 0)
				e->vars[e->cvars[c].parent].nested_sets = 1;
		}
	/* nested vars come after their parents: from the last up, a var that
	 * sets the model or holds one that does marks its parent */
	for (int v = e->nvars - 1; v >= 0; v--)
		if (e->vars[v].parent >= 0 && (e->vars[v].hp >= 0 || e->vars[v].nested_sets))
			e->vars[e->vars[v].parent].nested_sets = 1;
	e->total = 1;
	for (int v = e->nvars - 1; v >= 0; v--)
		e->full[v] = fs_contrib(e, v, 0, e->vars[v].n - 1);
	for (int v = 0; v < e->nvars; v++)
		if (e->vars[v].parent < 0)
			e->total = fs_mul(e->total, e->full[v]);
	/* the limit fset.h states, 2^127: the multiplication saturates only at
	 * 2^128 - 1, and a space between the two was taken though the message
	 * and the contract said otherwise */
	if (e->total > (fs_count)1 << 127)
		return dn_error_set(err, DN_ERANGE, "$.space", "the space has more than 1.7e38 configurations (2^127, "
		    "the most the engine counts exactly): search a part of it at a time (fewer values, or one "
		    "option of a choice per space)");
	return 0;
}

/* The bounding structures over the expression graph: each node's cone
 * and dependencies, interval and point scratch, the tabulated nodes, the
 * tape and the argument index. */
static int
build_bounding(struct fs_engine *e, expr_id root, struct dn_error *err)
{
	const struct expr_graph *g = e->g;
	int nhp = e->q->def->nhps, words = (nhp + 63) / 64;
	uint64_t *bits;

	e->cone = malloc((size_t)g->n + 1);
	e->cone_list = malloc(sizeof *e->cone_list * ((size_t)g->n + 1));
	e->iv = calloc((size_t)g->n + 1, sizeof *e->iv);
	e->hpiv = calloc((size_t)nhp + 1, sizeof *e->hpiv);
	e->dep = calloc((size_t)nhp + 1, sizeof *e->dep);
	e->ndep = calloc((size_t)nhp + 1, sizeof *e->ndep);
	e->point = calloc((size_t)g->n + 1, sizeof *e->point);
	e->config = calloc((size_t)nhp + 1, sizeof *e->config);
	e->tab_var = malloc(sizeof *e->tab_var * ((size_t)g->n + 1));
	e->tab = calloc((size_t)g->n + 1, sizeof *e->tab);
	e->stamp = calloc((size_t)g->n + 1, sizeof *e->stamp);
	if (!e->cone || !e->cone_list || !e->iv || !e->hpiv || !e->dep || !e->ndep || !e->point ||
	    !e->config || !e->tab_var || !e->tab || !e->stamp)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	for (int h = 0; h < nhp; h++)
		if ((e->dep[h] = malloc(sizeof *e->dep[h] * ((size_t)g->n + 1))) == NULL)
			return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	for (int32_t i = 0; i < g->n; i++)
		e->tab_var[i] = -1;
	bits = calloc((size_t)g->n * (size_t)words + 1, sizeof *bits);
	if (bits == NULL)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	compute_cone_and_deps(e, root, bits, words);
	free(bits);
	if (build_tables(e) != 0 || expr_tape_build(g, &e->tape) != 0 || fs_args_index_build(e) != 0)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	return 0;
}

int
fs_init_root(struct fs_engine *e, struct sq_query *q, expr_id root, struct dn_error *err)
{
	int nd;

	memset(e, 0, sizeof *e);
	e->q = q;
	e->g = cm_model_graph(q->model);
	e->root = root;
	e->nnodes_graph = e->g->n;
	e->max_nodes = 4 << 20;
	e->threads = 1;
	if (count_dims(e, q, &nd, err) != 0 || init_cvars(e, err) != 0)
		return -1;
	e->vars = calloc((size_t)nd + 1, sizeof *e->vars);
	e->full = calloc((size_t)nd + 1, sizeof *e->full);
	e->lo = calloc((size_t)nd + 1, sizeof *e->lo);
	e->hi = calloc((size_t)nd + 1, sizeof *e->hi);
	e->dim_var = malloc(sizeof *e->dim_var * ((size_t)q->space.ndims + 1));
	if (!e->vars || !e->full || !e->lo || !e->hi || !e->dim_var)
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	if (order_vars(e, q, err) != 0 || link_and_size(e, q, err) != 0 || build_bounding(e, root, err) != 0)
		return -1;
	/* the whole space's box */
	for (int v = 0; v < e->nvars; v++) {
		e->lo[v] = 0;
		e->hi[v] = e->vars[v].n - 1;
	}
	fs_bound_reset(e);
	return 0;
}

void
fs_free(struct fs_engine *e)
{
	if (e == NULL || e->q == NULL)
		return;
	for (int v = 0; v < e->nvars; v++) {
		free(e->vars[v].vals);
		free(e->vars[v].dim_index);
	}
	for (int h = 0; h < e->q->def->nhps && e->dep; h++)
		free(e->dep[h]);
	free(e->vars);
	free(e->full);
	free(e->lo);
	free(e->hi);
	free(e->dim_var);
	free(e->cone);
	free(e->cone_list);
	free(e->iv);
	free(e->hpiv);
	free(e->dep);
	free(e->ndep);
	free(e->point);
	free(e->config);
	fs_jobs_drop(e);
	free(e->nodes);
	free(e->undo);
	for (int32_t i = 0; e->tab != NULL && i < e->nnodes_graph; i++)
		free(e->tab[i]);
	free(e->tab);
	free(e->tab_var);
	free(e->stamp);
	free(e->cvars);
	free(e->dim_cvar);
	expr_tape_free(&e->tape);
	fs_check_free(e);
	fs_args_index_free(e);
	memset(e, 0, sizeof *e);
}
