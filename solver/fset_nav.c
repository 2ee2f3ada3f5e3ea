/*
 * fset_nav.c - moving through the feasible set in its deterministic order
 * (lexicographic over engine variables, positions ascending): exact
 * evaluation of one configuration, the k-th feasible configuration from the
 * counted search tree (subtrees past the stored tree are recounted on
 * demand), the first feasible configuration at or after a given one (how a
 * cursor resumes, with no count and no state), and grid increments.
 */
#include "fset_priv.h"

#include <stdlib.h>
#include <string.h>

/* Activity of var v in a position vector. */
static int
pos_active(const struct fs_engine *e, const int64_t *pos, int v)
{
	for (int p = e->vars[v].parent; p >= 0; v = p, p = e->vars[p].parent)
		if (pos[p] != e->vars[v].active_pos)
			return 0;
	return 1;
}

void
fs_config_of(struct fs_engine *e, const int64_t *pos, union expr_val *config)
{
	const struct cm_model_def *def = e->q->def;

	memcpy(config, e->q->fixed, sizeof *config * (size_t)def->nhps);
	for (int v = 0; v < e->nvars; v++)
		if (e->vars[v].hp >= 0 && pos[v] >= 0 && pos_active(e, pos, v))
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

int
fs_increment(const struct fs_engine *e, int64_t *pos)
{
	for (int v = e->nvars - 1; v >= 0; v--) {
		if (!pos_active(e, pos, v) || pos[v] >= e->vars[v].n - 1)
			continue;
		pos[v]++;
		for (int w = v + 1; w < e->nvars; w++)
			pos[w] = pos_active(e, pos, w) ? 0 : -1;
		return 0;
	}
	return 1;
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
		if (!pos_active(e, pos, v)) {
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
 * The k-th feasible configuration inside the current box at var d, using
 * stored node `node` when >= 0, else recounting children. 0 found, 1 not
 * (k too large), -1 error.
 */
static int
kth_box(struct fs_engine *e, int d, int32_t node, fs_count k, int64_t *pos)
{
	int st;

	while (d < e->nvars && fs_active(e, d) == 0)
		d++;
	if (node >= 0 && e->nodes[node].status == FS_EMPTY)
		return 1;
	if (node >= 0 && e->nodes[node].status == FS_FULL) {
		if (k >= e->nodes[node].count)
			return 1;
		prefix_of_box(e, d, pos);
		decode_suffix(e, d, k, pos);
		return 0;
	}
	if (node < 0) {
		st = fs_bound_status(e);
		if (st == 2 && d < e->nvars)
			st = fs_real_status(e);
		if (st == 0)
			return 1;
		if (st == 1 || d >= e->nvars) {
			fs_count size = d < e->nvars ? fs_box_size(e, d) : 1;
			if (st != 1) {
				int64_t *p = pos;
				prefix_of_box(e, e->nvars, p);
				if (!fs_feasible_at(e, p))
					return 1;
			}
			if (k >= size)
				return 1;
			prefix_of_box(e, d, pos);
			if (d < e->nvars)
				decode_suffix(e, d, k, pos);
			return 0;
		}
	}
	/* children: stored, or the same split as fs_count_box */
	if (node >= 0 && e->nodes[node].nchildren > 0) {
		for (int i = 0; i < e->nodes[node].nchildren; i++) {
			int32_t c = e->nodes[node].first_child + i;
			const struct fs_node *cn = &e->nodes[c];
			if (k >= cn->count) {
				k -= cn->count;
				continue;
			}
			{
				int64_t mark = fs_mark(e);
				int r;
				if (fs_narrow(e, cn->var, cn->lo, cn->hi) != 0)
					return -1;
				r = kth_box(e, cn->var, c, k, pos);
				fs_rollback(e, mark);
				return r;
			}
		}
		return 1;
	}
	{
		int64_t clo[FS_ENUMERATE_UP_TO], chi[FS_ENUMERATE_UP_TO];
		int dv, nch = fs_split(e, d, &dv, clo, chi);
		if (nch == 0) {
			prefix_of_box(e, e->nvars, pos);
			return (k == 0 && fs_feasible_at(e, pos)) ? 0 : 1;
		}
		for (int i = 0; i < nch; i++) {
			int64_t mark = fs_mark(e);
			fs_count c, u;
			if (fs_narrow(e, dv, clo[i], chi[i]) != 0)
				return -1;
			if (fs_count_box(e, dv, -1, &c, &u) != 0)
				return -1;
			if (k < c) {
				int res = kth_box(e, dv, -1, k, pos);
				fs_rollback(e, mark);
				return res;
			}
			k -= c;
			fs_rollback(e, mark);
		}
		return 1;
	}
}

int
fs_kth(struct fs_engine *e, fs_count k, int64_t *pos, struct dn_error *err)
{
	int r;
	int64_t mark = fs_mark(e);

	if (!e->counted || e->lower != e->upper)
		return dn_error_set(err, DN_EINVAL, NULL, "the k-th configuration needs an exact count first");
	if (k >= e->lower)
		return 1;
	if (e->nvars == 0)
		return fs_feasible_at(e, pos) ? 0 : 1;
	r = kth_box(e, e->nodes[0].var, 0, k, pos);
	fs_rollback(e, mark);
	return r;
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
		decode_suffix(e, d, 0, pos);
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
	if (from != NULL)
		for (int v = 0; v < e->nvars; v++)
			if (pos_active(e, from, v) && (from[v] < 0 || from[v] >= e->vars[v].n))
				return dn_error_set(err, DN_EINVAL, NULL, "the cursor does not fit this query");
	r = first_ge(e, 0, from, from != NULL, pos);
	fs_rollback(e, mark);
	if (r == -2) {
		e->timed_out = 0;
		return dn_error_set(err, DN_ETIMEOUT, NULL, "no feasible configuration found before the deadline");
	}
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
