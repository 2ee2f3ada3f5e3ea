/*
 * fset_nav.c - moving through the feasible set in its deterministic order
 * (lexicographic over engine variables, positions ascending): exact
 * evaluation of one configuration, the k-th feasible configuration from the
 * counted search tree (a subtree past the stored tree is searched on
 * demand, up to the configuration only), the first feasible configuration
 * at or after a given one (how a cursor resumes, with no count and no
 * state), walks that list every feasible configuration from one on, and
 * grid increments.
 *
 * Two ways through the set. The search under bounds (kth_find, first_ge,
 * walk_search) narrows the engine's box and re-bounds at every step. The
 * tree walk (kth_tree, walk_tree) follows a stored count tree without
 * bounding at all: its FULL and EMPTY leaves are certified, so only
 * undecided leaves (an unfinished count, a tree cut at e->max_nodes) are
 * searched under bounds, entered by narrowing the engine down their path.
 * The tree walk keeps its box in arrays of its own (struct tbox) installed
 * as e->lo / e->hi, while the engine's arrays hold the box that e->iv
 * describes (the grid, or a prefix of the walk's path entered for an
 * undecided leaf), which contains the walk's; the engine's arrays are back
 * in place for every callback and every search under bounds, so callers
 * and callbacks always see an engine whose bounds match its box.
 *
 * Configurations handed out have -1 for every var they leave inactive,
 * whatever `from` held there: a cursor's text depends on the configuration
 * only.
 */
#include "fset_priv.h"

#include <stdlib.h>
#include <string.h>

int
fs_var_active(const struct fs_engine *e, const int64_t *pos, int v)
{
	for (int p = e->vars[v].parent; p >= 0; v = p, p = e->vars[p].parent)
		if (pos[p] != e->vars[v].active_pos)
			return 0;
	return 1;
}

/* -1 for every var that pos leaves inactive (parents come before their
 * nested vars, so one pass in engine order settles them). */
static void
canonical(const struct fs_engine *e, int64_t *pos)
{
	for (int v = 0; v < e->nvars; v++)
		if (!fs_var_active(e, pos, v))
			pos[v] = -1;
}

void
fs_config_of(struct fs_engine *e, const int64_t *pos, union expr_val *config)
{
	const struct cm_model_def *def = e->q->def;

	memcpy(config, e->q->fixed, sizeof *config * (size_t)def->nhps);
	for (int v = 0; v < e->nvars; v++)
		if (e->vars[v].hp >= 0 && pos[v] >= 0 && fs_var_active(e, pos, v))
			config[e->vars[v].hp] = fs_value(&e->vars[v], pos[v]);
}

int
fs_feasible_at(struct fs_engine *e, const int64_t *pos)
{
	if (e->ncvars > 0)
		return fs_real_witness(e, pos, NULL);
	fs_config_of(e, pos, e->config);
	if (expr_tape_eval(&e->tape, e->g, e->config, e->point, NULL) != 0)
		return 0;       /* a value overflows 64 bits: not a configuration anyone can run */
	return e->point[e->root].i != 0;
}

/* The next configuration after pos of a box at var d whose var d ends at
 * position hi and whose later vars range over their whole grids (vars < d
 * left alone): the last var that can move moves, the ones after it restart
 * (-1 where inactive). 0, or 1 past the box's last. */
static int
box_next(const struct fs_engine *e, int d, int64_t hi, int64_t *pos)
{
	for (int v = e->nvars - 1; v >= d; v--) {
		if (!fs_var_active(e, pos, v) || pos[v] >= (v == d ? hi : e->vars[v].n - 1))
			continue;
		pos[v]++;
		for (int w = v + 1; w < e->nvars; w++)
			pos[w] = fs_var_active(e, pos, w) ? 0 : -1;
		return 0;
	}
	return 1;
}

int
fs_increment(const struct fs_engine *e, int64_t *pos)
{
	return e->nvars == 0 ? 1 : box_next(e, 0, e->vars[0].n - 1, pos);
}

/* Positions of the suffix subtree rooted at var v over [lo, hi] for the
 * k-th configuration (0-based) in order. */
static void
decode_subtree(struct fs_engine *e, int v, int64_t lo, int64_t hi, fs_count k, int64_t *pos);

/* Mixed radix over the root subtrees of vars >= d (the box at var d). */
static void
decode_suffix(struct fs_engine *e, int d, fs_count k, int64_t *pos)
{
	int roots[4096], nroots = 0;
	fs_count sizes[4096];

	for (int v = d; v < e->nvars; v++) {
		int p = e->vars[v].parent;
		if (p >= d)
			continue;       /* decoded with its parent */
		if (!fs_var_active(e, pos, v)) {
			pos[v] = -1;
			continue;
		}
		if (nroots < 4096) {
			roots[nroots] = v;
			sizes[nroots] = v == d ? fs_contrib(e, v, e->lo[v], e->hi[v]) : e->full[v];
			nroots++;
		}
	}
	for (int i = nroots - 1; i >= 0; i--) {
		fs_count digit = sizes[i] ? k % sizes[i] : 0;
		k = sizes[i] ? k / sizes[i] : 0;
		sizes[i] = digit;       /* reuse as the digit */
	}
	for (int i = 0; i < nroots; i++) {
		int v = roots[i];
		decode_subtree(e, v, v == d ? e->lo[v] : 0, v == d ? e->hi[v] : e->vars[v].n - 1, sizes[i], pos);
	}
}

static void
decode_subtree(struct fs_engine *e, int v, int64_t lo, int64_t hi, fs_count k, int64_t *pos)
{
	if (!e->vars[v].has_children) {
		pos[v] = lo + (int64_t)k;
		return;
	}
	for (int64_t p = lo; p <= hi; p++) {
		fs_count block = fs_contrib(e, v, p, p);
		if (k >= block) {
			k -= block;
			continue;
		}
		pos[v] = p;
		/* children active at p: a mixed radix, the first most significant */
		{
			int ch[1024], n = 0;
			fs_count digits[1024];
			for (int c = v + 1; c < e->nvars; c++) {
				if (e->vars[c].parent != v)
					continue;
				if (e->vars[c].active_pos != p) {
					pos[c] = -1;
					/* and its descendants */
					for (int g = c + 1; g < e->nvars; g++) {
						int a = e->vars[g].parent;
						while (a >= 0 && a != c)
							a = e->vars[a].parent;
						if (a == c)
							pos[g] = -1;
					}
					continue;
				}
				if (n < 1024)
					ch[n++] = c;
			}
			for (int i = n - 1; i >= 0; i--) {
				fs_count s = e->full[ch[i]];
				digits[i] = s ? k % s : 0;
				k = s ? k / s : 0;
			}
			for (int i = 0; i < n; i++)
				decode_subtree(e, ch[i], 0, e->vars[ch[i]].n - 1, digits[i], pos);
		}
		return;
	}
}

/* Fixes the position vector's prefix < d from the current box. */
static void
prefix_of_box(const struct fs_engine *e, int d, int64_t *pos)
{
	for (int v = 0; v < d; v++)
		pos[v] = fs_active(e, v) != 0 ? e->lo[v] : -1;
}

/*
 * The k-th feasible configuration of the current box at var d, counted
 * from its end when `back` is set, found in one search that counts as
 * fs_count_box does (the same decisions and splits, no deadline) and stops
 * there: each child before it is counted once, by this search, and none
 * after it is searched. 0 found (into pos), 1 when the box holds k or
 * fewer (its exact count into *count), -1 out of memory.
 */
static int
kth_find(struct fs_engine *e, int d, fs_count k, int back, int64_t *pos, fs_count *count)
{
	fs_count size;
	int st;

	d = fs_next_active(e, d);
	st = fs_box_decide(e, d, &size);
	if (st == 2) {
		int64_t clo[FS_ENUMERATE_UP_TO], chi[FS_ENUMERATE_UP_TO];
		int dv, nch = fs_split(e, d, &dv, clo, chi);
		fs_count seen = 0;
		if (nch == 0) {
			/* all fixed but the bound stayed open (rounding of reals) */
			st = fs_box_exact(e) ? 1 : 0;
			e->evals++;
		}
		for (int j = 0; j < nch; j++) {
			int i = back ? nch - 1 - j : j;
			int64_t mark = fs_mark(e);
			fs_count c;
			int r;
			if (fs_narrow(e, dv, clo[i], chi[i]) != 0)
				return -1;
			r = kth_find(e, dv, k, back, pos, &c);
			fs_rollback(e, mark);
			if (r != 1)
				return r;
			k -= c;
			seen = fs_add(seen, c);
		}
		if (nch > 0) {
			*count = seen;
			return 1;
		}
	}
	*count = st == 1 ? size : 0;
	if (k >= *count)
		return 1;
	prefix_of_box(e, d, pos);
	if (d < e->nvars)
		decode_suffix(e, d, back ? size - 1 - k : k, pos);
	return 0;
}

/*
 * The k-th feasible configuration inside stored node `node`'s box (the
 * current box, at var d), down the stored children by their counts; a leaf
 * whose subtree is not stored (a tree cut at e->max_nodes, a grafted job)
 * is searched by kth_find, from its nearer end (a read costs about a count
 * of the part of the leaf before or after the k-th, whichever is smaller).
 * 0 found, 1 not (k too large), -1 error.
 */
static int
kth_box(struct fs_engine *e, int d, int32_t node, fs_count k, int64_t *pos)
{
	const struct fs_node *x = &e->nodes[node];
	fs_count c;

	d = fs_next_active(e, d);
	if (x->status == FS_EMPTY || k >= x->count)
		return 1;
	if (x->status == FS_FULL) {
		prefix_of_box(e, d, pos);
		decode_suffix(e, d, k, pos);
		return 0;
	}
	if (x->nchildren == 0) {
		/* the count is exact (fs_kth's condition), so is every leaf's */
		int back = k >= x->count / 2;
		return kth_find(e, d, back ? x->count - 1 - k : k, back, pos, &c);
	}
	for (int i = 0; i < x->nchildren; i++) {
		int32_t ci = x->first_child + i;
		const struct fs_node *cn = &e->nodes[ci];
		if (k >= cn->count) {
			k -= cn->count;
			continue;
		}
		{
			int64_t mark = fs_mark(e);
			int r;
			if (fs_narrow(e, cn->var, cn->lo, cn->hi) != 0)
				return -1;
			r = kth_box(e, cn->var, ci, k, pos);
			fs_rollback(e, mark);
			return r;
		}
	}
	return 1;
}

void
fs_decode_box(struct fs_engine *e, int d, fs_count k, int64_t *pos)
{
	prefix_of_box(e, d, pos);
	if (d < e->nvars)
		decode_suffix(e, d, k, pos);
	canonical(e, pos);
}

/* 1 when the box is the whole grid (nothing fs_restrict'ed). */
static int
grid_box(const struct fs_engine *e)
{
	for (int v = 0; v < e->nvars; v++)
		if (e->lo[v] != 0 || e->hi[v] != e->vars[v].n - 1)
			return 0;
	return 1;
}

/* 1 when the stored tree may be walked: a count (exact or not) whose root
 * is the grid's, and the box is the grid. */
static int
tree_usable(const struct fs_engine *e)
{
	const struct fs_node *r;

	if (e->nav_plain || !e->counted || e->nnodes == 0 || e->nvars == 0 || !grid_box(e))
		return 0;
	r = &e->nodes[0];
	return r->var >= 0 && r->var < e->nvars && r->lo == 0 && r->hi == e->vars[r->var].n - 1;
}

/*
 * The box of a tree walk: arrays of its own (copies of the grid at first)
 * that always hold the walk's current box, and the engine's, which hold
 * the box the bounds describe: the grid, or a box the walk entered under
 * bounds, which contains the walk's. `installed`: the walk's arrays are
 * e->lo / e->hi; else the engine's are (while a callback runs, and for a
 * search under bounds once they equal the walk's). tbox_open mallocs (0,
 * or -1 out of memory: nothing installed); tbox_close puts the engine's
 * arrays back and frees.
 */
struct tbox {
	int64_t *elo, *ehi;     /* the engine's arrays */
	int64_t *lo, *hi;       /* the walk's */
	int installed;
};

static int
tbox_open(struct fs_engine *e, struct tbox *t)
{
	size_t n = (size_t)e->nvars + 1;

	t->elo = e->lo;
	t->ehi = e->hi;
	t->lo = malloc(sizeof *t->lo * 2 * n);
	t->installed = 0;
	if (t->lo == NULL)
		return -1;
	t->hi = t->lo + n;
	memcpy(t->lo, e->lo, sizeof *t->lo * n);
	memcpy(t->hi, e->hi, sizeof *t->hi * n);
	e->lo = t->lo;
	e->hi = t->hi;
	t->installed = 1;
	return 0;
}

static void
tbox_close(struct fs_engine *e, struct tbox *t)
{
	e->lo = t->elo;
	e->hi = t->ehi;
	t->installed = 0;
	free(t->lo);
}

/* Installs the walk's arrays (walk = 1) or the engine's (0): the engine's
 * while a callback runs, so that box and bounds agree. */
static void
tbox_swap(struct fs_engine *e, struct tbox *t, int walk)
{
	e->lo = walk ? t->lo : t->elo;
	e->hi = walk ? t->hi : t->ehi;
	t->installed = walk;
}

/*
 * Enters the walk's current box under bounds: the engine's arrays back in
 * place (the box the bounds describe, which holds the walk's) and narrowed
 * to the walk's ranges where they differ, var by var in engine order (the
 * bounds of a box do not depend on the order of its narrowings).
 * tbox_unbounds rolls back to `mark` (taken before) and reinstalls the
 * walk's arrays, whatever tbox_bounds managed. 0 or -1 (out of memory).
 */
static int
tbox_bounds(struct fs_engine *e, struct tbox *t)
{
	tbox_swap(e, t, 0);
	for (int v = 0; v < e->nvars; v++)
		if ((t->lo[v] != t->elo[v] || t->hi[v] != t->ehi[v]) && fs_narrow(e, v, t->lo[v], t->hi[v]) != 0)
			return -1;
	return 0;
}

static void
tbox_unbounds(struct fs_engine *e, struct tbox *t, int64_t mark)
{
	fs_rollback(e, mark);
	tbox_swap(e, t, 1);
}

/*
 * The k-th feasible configuration of stored node n's box (the walk's
 * arrays hold it), down the stored tree by its counts without bounding; a
 * node past the stored tree is counted again under bounds (kth_box). Same
 * answers as kth_box from the root. 0 found, 1 not (k too large), -1 out
 * of memory.
 */
static int
kth_tree(struct fs_engine *e, struct tbox *t, int32_t n, fs_count k, int64_t *pos)
{
	const struct fs_node *x = &e->nodes[n];

	if (x->status == FS_EMPTY || k >= x->count)
		return 1;
	if (x->status == FS_FULL) {
		int d = fs_next_active(e, x->var);
		prefix_of_box(e, d, pos);
		decode_suffix(e, d, k, pos);
		return 0;
	}
	if (x->nchildren == 0) {
		int64_t mark = fs_mark(e);
		int r = tbox_bounds(e, t) != 0 ? -1 : kth_box(e, x->var, n, k, pos);
		tbox_unbounds(e, t, mark);
		return r;
	}
	for (int i = 0; i < x->nchildren; i++) {
		int32_t c = x->first_child + i;
		const struct fs_node *cn = &e->nodes[c];
		int64_t lo, hi;
		int r;
		if (k >= cn->count) {
			k -= cn->count;
			continue;
		}
		lo = t->lo[cn->var];
		hi = t->hi[cn->var];
		t->lo[cn->var] = cn->lo;
		t->hi[cn->var] = cn->hi;
		r = kth_tree(e, t, c, k, pos);
		t->lo[cn->var] = lo;
		t->hi[cn->var] = hi;
		return r;
	}
	return 1;
}

int
fs_kth(struct fs_engine *e, fs_count k, int64_t *pos, struct dn_error *err)
{
	int r;

	if (!e->counted || e->lower != e->upper)
		return dn_error_set(err, DN_EINVAL, NULL, "the k-th configuration needs an exact count first");
	if (k >= e->lower)
		return 1;
	if (e->nvars == 0)
		return fs_feasible_at(e, pos) ? 0 : 1;
	if (tree_usable(e)) {
		struct tbox t;
		if (tbox_open(e, &t) != 0)
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		r = kth_tree(e, &t, 0, k, pos);
		tbox_close(e, &t);
	} else {
		int64_t mark = fs_mark(e);
		r = kth_box(e, e->nodes[0].var, 0, k, pos);
		fs_rollback(e, mark);
	}
	if (r < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	if (r == 0)
		canonical(e, pos);
	return r;
}

/* The first configuration of the current box from var d on (vars before
 * d as pos has them): each var that takes part at the low end of its range
 * as the caller narrowed it (fs_restrict), the others -1. When the bounds
 * decide the box feasible as a whole, it is a feasible configuration of the
 * box. */
static void
first_of_box(const struct fs_engine *e, int d, int64_t *pos)
{
	for (int v = d; v < e->nvars; v++)
		pos[v] = fs_var_active(e, pos, v) ? e->lo[v] : -1;
}

/*
 * First feasible configuration >= from (lexicographic) in the box at var d
 * with vars < d fixed equal to from's prefix when `tight`. 0 found (pos
 * filled), 1 none, -1 error.
 */
static int first_ge(struct fs_engine *e, int d, const int64_t *from, int tight, int64_t *pos);

static int
scan(struct fs_engine *e, int d, int64_t a, int64_t b, const int64_t *from, int tight, int64_t *pos)
{
	int64_t mark = fs_mark(e);
	int st, r;

	if (fs_narrow(e, d, a, b) != 0)
		return -1;
	st = fs_bound_status(e);
	if (st == 2)
		st = fs_real_status(e);
	if (st == 0) {
		fs_rollback(e, mark);
		return 1;
	}
	if (st == 1 && !tight) {
		prefix_of_box(e, d, pos);
		first_of_box(e, d, pos);
		fs_rollback(e, mark);
		return 0;
	}
	if (st == 1 && tight) {
		/* the whole box is feasible and contains `from` itself */
		memcpy(pos, from, sizeof *pos * (size_t)e->nvars);
		fs_rollback(e, mark);
		return 0;
	}
	if (a == b) {
		r = first_ge(e, d + 1, from, tight && a == from[d], pos);
		fs_rollback(e, mark);
		return r;
	}
	fs_rollback(e, mark);
	if (b - a + 1 <= 4) {
		for (int64_t p = a; p <= b; p++) {
			r = scan(e, d, p, p, from, tight && p == a, pos);
			if (r != 1)
				return r;
		}
		return 1;
	}
	{
		int64_t m = a + (b - a) / 2;
		r = scan(e, d, a, m, from, tight, pos);
		if (r != 1)
			return r;
		return scan(e, d, m + 1, b, from, 0, pos);
	}
}

static int
first_ge(struct fs_engine *e, int d, const int64_t *from, int tight, int64_t *pos)
{
	while (d < e->nvars && fs_active(e, d) == 0)
		d++;
	if (d >= e->nvars) {
		prefix_of_box(e, e->nvars, pos);
		return fs_feasible_at(e, pos) ? 0 : 1;
	}
	if (fs_past_deadline(e))
		return -2;
	/* within the current box (callers may have narrowed some vars) */
	{
		int64_t a = e->lo[d], b = e->hi[d];
		if (tight && from[d] > a)
			a = from[d];
		else if (tight && from[d] < a)
			tight = 0;      /* the box starts after `from` on this var */
		if (a > b)
			return 1;
		return scan(e, d, a, b, from, tight && a == from[d], pos);
	}
}

/* ---- walks: every feasible configuration from one on ---- */

struct walk {
	struct fs_engine *e;
	const int64_t *from;    /* where the walk starts (a copy), or NULL */
	int64_t *pos;           /* the configuration handed to cb */
	int (*cb)(void *ctx, const int64_t *pos);
	void *ctx;
	struct tbox *t;         /* the tree walk's box, or NULL */
};

/* Hands w->pos to the callback with the engine's own box arrays in place.
 * 1 when it stops the walk, else 0. */
static int
emit(struct walk *w)
{
	int r, walk = w->t != NULL && w->t->installed;

	if (walk)
		tbox_swap(w->e, w->t, 0);
	r = w->cb(w->ctx, w->pos);
	if (walk)
		tbox_swap(w->e, w->t, 1);
	return r != 0;
}

/*
 * Emits every configuration of a box whose bound is [1, 1] - vars < d
 * fixed, var d over [e->lo[d], e->hi[d]], later vars over their grids -
 * from its first on, or from w->from on when `tight` (from lies in the
 * box), by grid increments: no evaluation. 0 when the box is done, 1 when
 * the callback stopped the walk.
 */
static int
walk_full(struct walk *w, int d, int tight)
{
	struct fs_engine *e = w->e;
	int64_t *pos = w->pos, hi;

	if (d >= e->nvars) {
		prefix_of_box(e, e->nvars, pos);
		return emit(w);
	}
	hi = e->hi[d];
	prefix_of_box(e, d, pos);
	for (int v = d; v < e->nvars; v++)
		pos[v] = !fs_var_active(e, pos, v) ? -1 : tight ? w->from[v] : v == d ? e->lo[d] : 0;
	do {
		if (emit(w))
			return 1;
	} while (box_next(e, d, hi, pos) == 0);
	return 0;
}

/*
 * The search under bounds, as first_ge and scan but going on after each
 * configuration found: the current box at var d (vars < d fixed, equal to
 * from's when `tight`), var d over [a, b] (walk_scan) or its box range
 * (walk_search). A box whose bound is [1, 1] is listed by walk_full, [0,
 * 0] skipped, others split as scan splits them. 0 when the box is done, 1
 * stopped by the callback, -1 out of memory, -2 deadline.
 */
static int walk_search(struct walk *w, int d, int tight);

static int
walk_scan(struct walk *w, int d, int64_t a, int64_t b, int tight)
{
	struct fs_engine *e = w->e;
	int64_t mark = fs_mark(e);
	int st, r;

	if (fs_narrow(e, d, a, b) != 0) {
		fs_rollback(e, mark);
		return -1;
	}
	st = fs_bound_status(e);
	if (st == 2 && fs_passthrough_only(e, d)) {
		/* what is left sets no hyperparameter: one evaluation decides */
		prefix_of_box(e, e->nvars, w->pos);
		st = fs_feasible_at(e, w->pos) ? 1 : 0;
		e->evals++;
	} else if (st == 2)
		st = fs_real_status(e);
	if (st == 0 || st == 1) {
		r = st == 1 ? walk_full(w, d, tight) : 0;
		fs_rollback(e, mark);
		return r;
	}
	if (a == b) {
		r = walk_search(w, d + 1, tight);
		fs_rollback(e, mark);
		return r;
	}
	fs_rollback(e, mark);
	if (b - a + 1 <= 4) {
		for (int64_t p = a; p <= b; p++) {
			r = walk_scan(w, d, p, p, tight && p == a);
			if (r != 0)
				return r;
		}
		return 0;
	}
	{
		int64_t m = a + (b - a) / 2;
		r = walk_scan(w, d, a, m, tight);
		if (r != 0)
			return r;
		return walk_scan(w, d, m + 1, b, 0);
	}
}

static int
walk_search(struct walk *w, int d, int tight)
{
	struct fs_engine *e = w->e;
	int64_t a, b;

	while (d < e->nvars && fs_active(e, d) == 0)
		d++;
	if (d >= e->nvars) {
		prefix_of_box(e, e->nvars, w->pos);
		return fs_feasible_at(e, w->pos) ? emit(w) : 0;
	}
	if (fs_past_deadline(e))
		return -2;
	a = e->lo[d];
	b = e->hi[d];
	if (tight && w->from[d] > a)
		a = w->from[d];
	else if (tight && w->from[d] < a)
		tight = 0;      /* the box starts after `from` on this var */
	if (a > b)
		return 0;
	return walk_scan(w, d, a, b, tight && a == w->from[d]);
}

/* Whether stored node n's box is undecided: an unfinished count's leaf, a
 * leaf of a capped tree. */
static int
undecided_leaf(const struct fs_node *x)
{
	return x->nchildren == 0 && (x->status == FS_UNKNOWN || x->status == FS_MIXED);
}

/* A node on the tree walk's path; `mark` >= 0 once the engine's box has
 * been narrowed to it (entered: fs_rollback(mark) leaves it). The entered
 * frames are always a prefix of the path from the root. */
struct frame {
	const struct fs_node *x;
	int64_t mark;
	struct frame *up;
};

/*
 * Enters the bounds down to frame f: the frames above it not entered yet,
 * top down, one narrowing each, with the engine's arrays installed (and
 * left installed). They stay entered until their frames end
 * (frame_leave), so the next undecided leaf nearby narrows only what
 * differs. 0 or -1 (out of memory).
 */
static int
frame_enter(struct fs_engine *e, struct tbox *t, struct frame *f)
{
	if (f == NULL || f->mark >= 0) {
		tbox_swap(e, t, 0);
		return 0;
	}
	if (frame_enter(e, t, f->up) != 0)
		return -1;
	f->mark = fs_mark(e);
	if (e->lo[f->x->var] == f->x->lo && e->hi[f->x->var] == f->x->hi)
		return 0;
	return fs_narrow(e, f->x->var, f->x->lo, f->x->hi);
}

static void
frame_leave(struct fs_engine *e, struct tbox *t, struct frame *f)
{
	int walk = t->installed;

	if (f->mark < 0)
		return;
	tbox_swap(e, t, 0);
	fs_rollback(e, f->mark);
	tbox_swap(e, t, walk);
}

/*
 * The walk down stored node n, whose box the walk's arrays hold (`tight`:
 * from lies in it), installed. EMPTY leaves are skipped and FULL ones
 * listed without bounding; an undecided leaf is searched under bounds
 * (walk_search), entering them down its path first (frame_enter). Children
 * come in the order of configurations, and those before `from` are skipped
 * by their ranges. Returns as walk_search.
 */
static int
walk_tree(struct walk *w, int32_t n, int tight, struct frame *up)
{
	struct fs_engine *e = w->e;
	struct tbox *t = w->t;
	struct frame f = { &e->nodes[n], -1, up };
	int r = 0;

	if (f.x->status == FS_EMPTY)
		return 0;
	if (f.x->status == FS_FULL)
		return walk_full(w, fs_next_active(e, f.x->var), tight);
	if (undecided_leaf(f.x)) {
		r = frame_enter(e, t, &f) != 0 ? -1 : walk_search(w, f.x->var, tight);
		if (f.mark >= 0)
			fs_rollback(e, f.mark);
		tbox_swap(e, t, 1);
		return r;
	}
	for (int i = 0; i < f.x->nchildren && r == 0; i++) {
		int32_t c = f.x->first_child + i;
		const struct fs_node *cn = &e->nodes[c];
		int64_t lo, hi;
		int ctight = 0;
		if (tight) {
			int64_t p = w->from[cn->var];
			if (p > cn->hi)
				continue;       /* the whole child comes before `from` */
			ctight = p >= cn->lo;
		}
		lo = t->lo[cn->var];
		hi = t->hi[cn->var];
		t->lo[cn->var] = cn->lo;
		t->hi[cn->var] = cn->hi;
		r = walk_tree(w, c, ctight, &f);
		t->lo[cn->var] = lo;
		t->hi[cn->var] = hi;
	}
	frame_leave(e, t, &f);
	return r;
}

/* -1 with err when a var that `from` makes active is off its grid. */
static int
check_from(const struct fs_engine *e, const int64_t *from, struct dn_error *err)
{
	for (int v = 0; v < e->nvars && from != NULL; v++)
		if (fs_var_active(e, from, v) && (from[v] < 0 || from[v] >= e->vars[v].n))
			return dn_error_set(err, DN_EINVAL, NULL, "the cursor does not fit this query");
	return 0;
}

/* fs_walk as it was: fs_next and fs_increment in a loop (the plain path,
 * and boxes other than the grid). */
static int
walk_plain(struct fs_engine *e, const int64_t *from, int (*cb)(void *ctx, const int64_t *pos), void *ctx,
    struct dn_error *err)
{
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	int r;

	if (pos == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	r = fs_next(e, from, pos, err);
	while (r == 0) {
		if (cb(ctx, pos) != 0) {
			free(pos);
			return 1;
		}
		if (fs_increment(e, pos) != 0)
			break;
		r = fs_next(e, pos, pos, err);
	}
	free(pos);
	return r < 0 ? -1 : 0;
}

int
fs_walk(struct fs_engine *e, const int64_t *from, int (*cb)(void *ctx, const int64_t *pos), void *ctx,
    struct dn_error *err)
{
	struct walk w = { e, NULL, NULL, cb, ctx, NULL };
	struct tbox t;
	size_t n = (size_t)e->nvars + 1;
	int64_t *buf;
	int r;

	e->timed_out = 0;
	if (check_from(e, from, err) != 0)
		return -1;
	if (e->nvars == 0) {
		int64_t none = 0;
		if (from != NULL || !fs_feasible_at(e, &none))
			return 0;
		return cb(ctx, &none) != 0;
	}
	if (e->nav_plain || !grid_box(e))
		return walk_plain(e, from, cb, ctx, err);
	buf = malloc(sizeof *buf * 2 * n);
	if (buf == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	w.pos = buf;
	if (from != NULL) {
		memcpy(buf + n, from, sizeof *buf * (size_t)e->nvars);
		w.from = buf + n;
	}
	if (tree_usable(e)) {
		if (tbox_open(e, &t) != 0)
			r = -1;
		else {
			w.t = &t;
			r = walk_tree(&w, 0, from != NULL, NULL);
			tbox_close(e, &t);
		}
	} else {
		int64_t mark = fs_mark(e);
		r = walk_search(&w, 0, from != NULL);
		fs_rollback(e, mark);
	}
	free(buf);
	if (r == -2) {
		e->timed_out = 0;
		return dn_error_set(err, DN_ETIMEOUT, NULL, "no feasible configuration found before the deadline");
	}
	if (r < 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	return r;
}

/* fs_walk's callback for fs_next: the first configuration, and stop. */
struct first {
	int64_t *pos;
	int nvars;
};

static int
take_first(void *ctx, const int64_t *pos)
{
	struct first *f = ctx;

	memcpy(f->pos, pos, sizeof *pos * (size_t)f->nvars);
	return 1;
}

int
fs_next(struct fs_engine *e, const int64_t *from, int64_t *pos, struct dn_error *err)
{
	int64_t mark = fs_mark(e);
	int r;

	e->timed_out = 0;       /* a count's deadline that passed is not this search's */
	if (e->nvars == 0) {
		if (from != NULL)
			return 1;
		return fs_feasible_at(e, pos) ? 0 : 1;
	}
	if (check_from(e, from, err) != 0)
		return -1;
	if (tree_usable(e)) {
		struct first f = { pos, e->nvars };
		r = fs_walk(e, from, take_first, &f, err);
		return r < 0 ? -1 : r == 1 ? 0 : 1;
	}
	r = first_ge(e, 0, from, from != NULL, pos);
	fs_rollback(e, mark);
	if (r == -2) {
		e->timed_out = 0;
		return dn_error_set(err, DN_ETIMEOUT, NULL, "no feasible configuration found before the deadline");
	}
	if (r == 0)
		canonical(e, pos);
	return r;
}

int
fs_first_in_box(struct fs_engine *e, int64_t *pos, struct dn_error *err)
{
	int r;

	e->timed_out = 0;
	if (e->nvars == 0)
		return fs_feasible_at(e, pos) ? 0 : 1;
	r = first_ge(e, 0, NULL, 0, pos);
	if (r == -2) {
		e->timed_out = 0;
		return dn_error_set(err, DN_ETIMEOUT, NULL, "the search did not finish before the deadline");
	}
	return r;
}
