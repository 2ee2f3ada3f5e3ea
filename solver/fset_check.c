/*
 * fset_check.c - what the per-trial check evaluates (answer_check.c): the
 * check tape, a partial tape that computes only what a check reads (every
 * part of the query, and what cm_model_read reads), and the tables it
 * starts from (fs_check_fill).
 *
 * Tables: a node whose value depends on a few variables only - a set S of
 * top-level variables, each the sole setter of its hyperparameter, with at
 * most `cap` combinations of their positions (S may be empty: a node of
 * fixed hyperparameters) - is not computed per check but copied from a
 * table with one row per combination: the check tape stops at such nodes.
 * The nodes of one set form a group whose rows are contiguous, so a check
 * copies one row per group (a group's table also holds the nodes of sets
 * within its own, up to half the budget: fewer, longer rows). A group's
 * rows are computed at build time by a partial tape of its nodes, at every
 * combination; a combination at which one of them overflows is marked,
 * and a check there evaluates the whole tape instead (which reports the
 * overflow).
 *
 * Budget: the tables hold at most CHECK_TABLE_VALUES values, and building
 * them takes at most CHECK_BUILD_STEPS tape steps; beyond either, `cap` is
 * lowered (1024, 256, 64, 16, 1 combinations: single variables, whose
 * grids may then have up to TABLE_VARS_MAX positions).
 *
 * Invariants: built once by fs_init (not by fs_init_root: engines that
 * only search never check), immutable afterwards: many threads read them
 * at once. Building costs about as much as the rest of fs_init (cnn5: 1.5
 * ms; the ResNet-50 space: 33 ms).
 */
#include "fset_priv.h"

#include <stdlib.h>
#include <string.h>

#define CHECK_TABLE_VALUES ((int64_t)1 << 17)   /* 1 MiB of tables */
#define CHECK_BUILD_STEPS ((int64_t)1 << 24)
#define TABLE_VARS_MAX 64                       /* positions of a tabulated variable */

/* A node's variable set while building: n = -1 unqualified (a nested or
 * shared hyperparameter, a continuous one, or more than FS_FILL_VARS
 * variables), else its n variables, ascending. */
struct var_set {
	int8_t n;
	int32_t v[FS_FILL_VARS];
};

/* The union of a and b into a (-1 when too large or unqualified). */
static void
set_union(struct var_set *a, const struct var_set *b)
{
	struct var_set r;
	int i = 0, j = 0;

	if (a->n < 0 || b->n < 0) {
		a->n = -1;
		return;
	}
	r.n = 0;
	while (i < a->n || j < b->n) {
		int32_t x = j >= b->n || (i < a->n && a->v[i] <= b->v[j]) ? a->v[i] : b->v[j];
		if (i < a->n && a->v[i] == x)
			i++;
		if (j < b->n && b->v[j] == x)
			j++;
		if (r.n == FS_FILL_VARS) {
			a->n = -1;
			return;
		}
		r.v[r.n++] = x;
	}
	*a = r;
}

/* Whether group g's variables are exactly the set s. */
static int
group_is(const struct fs_fill_group *g, const struct var_set *s)
{
	return g->nv == s->n && memcmp(g->var, s->v, sizeof s->v[0] * (size_t)s->n) == 0;
}

/* Combinations of the set's positions, capped just above cap. */
static int64_t
set_rows(const struct fs_engine *e, const struct var_set *s, int64_t cap)
{
	int64_t rows = 1;

	for (int j = 0; j < s->n && rows <= cap; j++)
		rows *= e->vars[s->v[j]].n;
	return rows;
}

/* Every node's variable set, in node order (operands come first). NULL
 * when out of memory. */
static struct var_set *
node_sets(const struct fs_engine *e)
{
	const struct expr_graph *g = e->g;
	int nhp = e->q->def->nhps;
	int *var_of_hp = malloc(sizeof *var_of_hp * ((size_t)nhp + 1));
	struct var_set *s = calloc((size_t)g->n + 1, sizeof *s);

	if (var_of_hp == NULL || s == NULL) {
		free(var_of_hp);
		free(s);
		return NULL;
	}
	for (int h = 0; h < nhp; h++)
		var_of_hp[h] = -1;      /* -1: fixed, a constant */
	for (int v = 0; v < e->nvars; v++) {
		int h = e->vars[v].hp;
		if (h >= 0)
			var_of_hp[h] = var_of_hp[h] == -1 && e->vars[v].parent < 0 &&
			    e->vars[v].n <= TABLE_VARS_MAX ? v : -2;
	}
	for (int c = 0; c < e->ncvars; c++)
		var_of_hp[e->cvars[c].hp] = -2;
	for (int32_t i = 0; i < g->n; i++) {
		const struct expr_node *n = &g->nodes[i];
		if (n->kind == EK_CONST)
			continue;
		if (n->kind == EK_VAR) {
			int h = (int)n->k.i, v = h >= 0 && h < nhp ? var_of_hp[h] : -2;
			s[i].n = (int8_t)(v == -1 ? 0 : v >= 0 ? 1 : -1);
			s[i].v[0] = v;
			continue;
		}
		if (n->a >= 0)
			set_union(&s[i], &s[n->a]);
		if (n->b >= 0)
			set_union(&s[i], &s[n->b]);
		if (n->c >= 0)
			set_union(&s[i], &s[n->c]);
	}
	free(var_of_hp);
	return s;
}

/* Whether every variable of a is in b (both ascending). */
static int
set_within(const struct fs_fill_group *a, const struct fs_fill_group *b)
{
	int j = 0;

	for (int i = 0; i < a->nv; i++) {
		while (j < b->nv && b->var[j] < a->var[i])
			j++;
		if (j == b->nv || b->var[j] != a->var[i])
			return 0;
	}
	return 1;
}

/* Merges each group into the group of a larger set that holds its
 * variables (the one with the fewest rows), while the tables stay within
 * half the budget: a check then copies fewer, longer rows. target[k] is
 * where group k's nodes go. */
static void
merge_groups(struct fs_fill_group *gr, int32_t ngroups, int32_t *target)
{
	int64_t total = 0;

	for (int32_t k = 0; k < ngroups; k++) {
		target[k] = k;
		total += gr[k].rows * gr[k].count;
	}
	for (int nv = FS_FILL_VARS - 1; nv >= 0; nv--)
		for (int32_t k = 0; k < ngroups; k++) {
			int32_t best = -1;
			int64_t more;
			if (gr[k].nv != nv)
				continue;
			for (int32_t a = 0; a < ngroups; a++)
				if (target[a] == a && gr[a].nv > nv && set_within(&gr[k], &gr[a]) &&
				    (best < 0 || gr[a].rows < gr[best].rows))
					best = a;
			if (best < 0)
				continue;
			more = (gr[best].rows - gr[k].rows) * gr[k].count;
			if (total + more > CHECK_TABLE_VALUES / 2)
				continue;
			total += more;
			target[k] = best;
			gr[best].count += gr[k].count;
			gr[k].count = 0;
		}
}

/* The engine's groups for the fills the tape reads: check_fill, its groups
 * (strides and offsets set) and the table size. -1 out of memory. */
static int
form_groups(struct fs_engine *e, const struct var_set *s, const uint8_t *fill, int64_t *nvalues)
{
	const struct expr_graph *g = e->g;
	int32_t nfill = 0, ngroups = 0, nkept = 0;
	int32_t *group_of, *target;
	struct fs_fill_group *gr;

	*nvalues = 0;
	for (int32_t i = 0; i < g->n; i++)
		nfill += fill[i];
	e->check_fill = malloc(sizeof *e->check_fill * ((size_t)nfill + 1));
	e->check_groups = gr = calloc((size_t)nfill + 1, sizeof *e->check_groups);
	group_of = malloc(sizeof *group_of * ((size_t)g->n + 1));
	target = malloc(sizeof *target * ((size_t)nfill + 1));
	if (e->check_fill == NULL || gr == NULL || group_of == NULL || target == NULL) {
		free(group_of);
		free(target);
		return -1;
	}
	/* the groups, in the order their first node comes */
	for (int32_t i = 0; i < g->n; i++) {
		int32_t k;
		if (!fill[i])
			continue;
		for (k = 0; k < ngroups && !group_is(&gr[k], &s[i]); k++)
			;
		if (k == ngroups) {
			int64_t stride = 1;
			gr[k].nv = s[i].n;
			memcpy(gr[k].var, s[i].v, sizeof gr[k].var);
			for (int j = gr[k].nv - 1; j >= 0; j--) {
				gr[k].stride[j] = stride;
				gr[k].n[j] = e->vars[gr[k].var[j]].n;
				stride *= gr[k].n[j];
			}
			gr[k].rows = stride;
			ngroups++;
		}
		group_of[i] = k;
		gr[k].count++;
	}
	merge_groups(gr, ngroups, target);
	/* nodes by group, each kept group's table after the previous one's */
	for (int32_t k = 0; k < ngroups; k++) {
		if (target[k] != k)
			continue;
		gr[k].first = e->ncheck_fill;
		gr[k].off = *nvalues;
		*nvalues += gr[k].rows * gr[k].count;
		for (int32_t i = 0; i < g->n; i++)
			if (fill[i] && target[group_of[i]] == k)
				e->check_fill[e->ncheck_fill++] = i;
		gr[nkept++] = gr[k];
	}
	e->ncheck_groups = nkept;
	free(group_of);
	free(target);
	return 0;
}

/* The partial tape of nodes ids[0, n) into t: 0, -1 out of memory. */
static int
tape_of(const struct expr_graph *g, const int32_t *ids, int32_t n, struct expr_tape *t)
{
	uint8_t *need = calloc((size_t)g->n + 1, 1);
	int rc;

	memset(t, 0, sizeof *t);
	if (need == NULL)
		return -1;
	for (int32_t j = 0; j < n; j++)
		need[ids[j]] = 1;
	rc = expr_tape_build_part(g, need, NULL, t);
	free(need);
	return rc;
}

/* Fills group gr's table: its nodes at every combination of its
 * variables, by a partial tape of them. vals and cfg are scratch (graph
 * nodes, hyperparameters). -1 out of memory. */
static int
fill_table(struct fs_engine *e, struct fs_fill_group *gr, union expr_val *vals, union expr_val *cfg)
{
	const struct expr_graph *g = e->g;
	const int32_t *ids = e->check_fill + gr->first;
	struct expr_tape t;
	int rc = -1;

	if (tape_of(g, ids, gr->count, &t) != 0)
		goto out;
	memcpy(cfg, e->q->fixed, sizeof *cfg * (size_t)e->q->def->nhps);
	for (int64_t r = 0; r < gr->rows; r++) {
		union expr_val *row = e->check_tab + gr->off + r * gr->count;
		for (int j = 0; j < gr->nv; j++) {
			const struct fs_var *fv = &e->vars[gr->var[j]];
			cfg[fv->hp] = fs_value(fv, r / gr->stride[j] % fv->n);
		}
		if (expr_tape_eval(&t, g, cfg, vals, NULL) != 0) {
			if (gr->fault == NULL && (gr->fault = calloc((size_t)gr->rows, 1)) == NULL)
				goto out;
			gr->fault[r] = 1;
			continue;
		}
		for (int32_t j = 0; j < gr->count; j++)
			row[j] = vals[ids[j]];
	}
	rc = 0;
out:
	expr_tape_free(&t);
	return rc;
}

static void
free_groups(struct fs_engine *e)
{
	for (int k = 0; e->check_groups != NULL && k < e->ncheck_groups; k++)
		free(e->check_groups[k].fault);
	free(e->check_groups);
	free(e->check_fill);
	free(e->check_tab);
	e->check_groups = NULL;
	e->check_fill = NULL;
	e->check_tab = NULL;
	e->ncheck_groups = e->ncheck_fill = 0;
}

/* The tape and groups with tables of at most `cap` rows: 0, 1 over the
 * budget (nothing kept), -1 out of memory. need: the nodes a check reads. */
static int
build_with_cap(struct fs_engine *e, const struct var_set *s, const uint8_t *need, int64_t cap)
{
	const struct expr_graph *g = e->g;
	uint8_t *given = calloc((size_t)g->n + 1, 1), *fill = calloc((size_t)g->n + 1, 1);
	int64_t nvalues = 0, steps = 0;
	int rc = -1;

	if (given == NULL || fill == NULL)
		goto out;
	for (int32_t i = 0; i < g->n; i++)
		given[i] = g->nodes[i].kind != EK_CONST && g->nodes[i].kind != EK_VAR && s[i].n >= 0 &&
		    (cap > 1 ? set_rows(e, &s[i], cap) <= cap : s[i].n <= 1);
	if (expr_tape_build_part(g, need, given, &e->check_tape) != 0)
		goto out;
	expr_tape_mark_reads(&e->check_tape, fill);
	for (int32_t i = 0; i < g->n; i++)
		fill[i] = given[i] && (need[i] || fill[i]);
	if (form_groups(e, s, fill, &nvalues) != 0)
		goto out;
	/* build work: each group's rows times (about) its nodes' cones */
	for (int k = 0; k < e->ncheck_groups; k++)
		steps += e->check_groups[k].rows * (e->check_groups[k].count + 16);
	if (cap > 1 && (nvalues > CHECK_TABLE_VALUES || steps > CHECK_BUILD_STEPS)) {
		expr_tape_free(&e->check_tape);
		memset(&e->check_tape, 0, sizeof e->check_tape);
		free_groups(e);
		rc = 1;
		goto out;
	}
	e->check_tab = malloc(sizeof *e->check_tab * ((size_t)nvalues + 1));
	rc = e->check_tab == NULL ? -1 : 0;
out:
	free(given);
	free(fill);
	return rc;
}

int
fs_check_build(struct fs_engine *e)
{
	static const int64_t caps[] = { 1024, 256, 64, 16, 1 };
	const struct expr_graph *g = e->g;
	uint8_t *need = calloc((size_t)g->n + 1, 1);
	struct var_set *s = node_sets(e);
	union expr_val *vals = malloc(sizeof *vals * ((size_t)g->n + 1));
	union expr_val *cfg = malloc(sizeof *cfg * ((size_t)e->q->def->nhps + 1));
	int rc = -1;

	if (need == NULL || s == NULL || vals == NULL || cfg == NULL)
		goto out;
	for (int i = 0; i < e->q->nparts; i++) {
		if (e->q->parts[i].ok >= 0)
			need[e->q->parts[i].ok] = 1;
		if (e->q->parts[i].value >= 0)
			need[e->q->parts[i].value] = 1;
	}
	cm_model_mark_read(e->q->model, need);
	for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
		if ((rc = build_with_cap(e, s, need, caps[c])) <= 0)
			break;
	if (rc != 0)
		goto out;
	for (int k = 0; k < e->ncheck_groups; k++)
		if (fill_table(e, &e->check_groups[k], vals, cfg) != 0) {
			rc = -1;
			goto out;
		}
	e->check_part_real = calloc((size_t)e->q->nparts + 1, 1);
	if (e->check_part_real == NULL) {
		rc = -1;
		goto out;
	}
	for (int i = 0; i < e->q->nparts; i++)
		e->check_part_real[i] = e->q->parts[i].value >= 0 && g->nodes[e->q->parts[i].value].type == EXPR_REAL;
out:
	free(need);
	free(s);
	free(vals);
	free(cfg);
	return rc;
}

void
fs_check_free(struct fs_engine *e)
{
	expr_tape_free(&e->check_tape);
	free_groups(e);
	free(e->check_part_real);
	e->check_part_real = NULL;
}

int
fs_check_fill(const struct fs_engine *e, const int64_t *pos, union expr_val *vals)
{
	for (int k = 0; k < e->ncheck_groups; k++) {
		const struct fs_fill_group *gr = &e->check_groups[k];
		const int32_t *ids = e->check_fill + gr->first;
		const union expr_val *row;
		int64_t r = 0;
		for (int j = 0; j < gr->nv; j++) {
			int64_t p = pos[gr->var[j]];
			if ((uint64_t)p >= (uint64_t)gr->n[j])
				return -1;
			r += p * gr->stride[j];
		}
		if (gr->fault != NULL && gr->fault[r])
			return -1;      /* a node overflows here: the whole tape says so */
		row = e->check_tab + gr->off + r * gr->count;
		for (int32_t j = 0; j < gr->count; j++)
			vals[ids[j]] = row[j];
	}
	return 0;
}
