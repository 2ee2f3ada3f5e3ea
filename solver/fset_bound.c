/*
 * fset_bound.c - interval bounds of the `feasible` expression over the
 * current box, kept up to date incrementally: narrowing one variable
 * re-bounds only the cone nodes that depend on its hyperparameter (and, when
 * a choice is fixed, on the hyperparameters its nested dims set), logging
 * every overwritten interval so that leaving the box rolls them back.
 *
 * Continuous hyperparameters (struct fs_cvar) take part as intervals: the
 * current cell of each (fs_narrow_cell), logged and rolled back the same way.
 *
 * Invariant: after any sequence of fs_narrow/fs_narrow_cell/fs_rollback,
 * e->iv holds for every cone node exactly what expr_bound would compute for
 * the box.
 */
#include "fset_priv.h"
#include "dn_grow.h"
#include "dn_deadline.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { UNDO_RANGE, UNDO_HP, UNDO_NODE, UNDO_CELL };

struct fs_undo {
	uint8_t kind;
	int32_t index;
	int64_t lo, hi;
	struct expr_ival iv;
};

double
fs_now(void)
{
	return dn_deadline_now();      /* one monotonic clock for every deadline */
}

int
fs_past_deadline(struct fs_engine *e)
{
	if (e->timed_out)
		return 1;
	if (e->work_limit > 0 && e->bound_calls >= e->work_limit)
		return e->timed_out = 1;
	if (e->bound_calls >= e->clock_at && (e->deadline > 0 || e->progress != NULL)) {
		double now = fs_now();
		e->clock_at = e->bound_calls + 8;    /* a bound on a large graph can take milliseconds */
		if (e->deadline > 0 && now > e->deadline)
			e->timed_out = 1;
		if (e->progress != NULL && now >= e->next_progress) {
			e->next_progress = now + 0.25;
			e->progress(e->progress_ctx, e);
		}
	}
	return e->timed_out;
}

int
fs_active(const struct fs_engine *e, int v)
{
	int p = e->vars[v].parent;

	if (p < 0)
		return 1;
	{
		int pa = fs_active(e, p);
		if (pa == 0)
			return 0;
		if (e->lo[p] != e->hi[p])
			return -1;
		if (e->lo[p] != e->vars[v].active_pos)
			return 0;
		return pa;
	}
}

int
fs_cvar_active(const struct fs_engine *e, int c)
{
	int p = e->cvars[c].parent, pa;

	if (p < 0)
		return 1;
	pa = fs_active(e, p);
	if (pa == 0)
		return 0;
	if (e->lo[p] != e->hi[p])
		return -1;
	return e->lo[p] == e->cvars[c].active_pos ? pa : 0;
}

fs_count
fs_box_size(const struct fs_engine *e, int d)
{
	fs_count size = 1;

	for (int v = d; v < e->nvars; v++) {
		int p = e->vars[v].parent;
		/* subtrees rooted below d are inside their parent's contribution */
		if (p >= d)
			continue;
		if (fs_active(e, v) == 0)
			continue;
		size = fs_mul(size, v == d ? fs_contrib(e, v, e->lo[v], e->hi[v]) : e->full[v]);
	}
	return size;
}

static int
push(struct fs_engine *e, const struct fs_undo *u)
{
	if (e->nundo == e->capundo) {
		size_t cap = (size_t)e->capundo;
		if (dn_grow(&e->undo, &cap, cap < 4096 ? 4096 : cap + 1, sizeof *e->undo) != 0 || cap > INT64_MAX)
			return -1;
		e->capundo = (int64_t)cap;
	}
	e->undo[e->nundo++] = *u;
	return 0;
}

/* The interval of hyperparameter h in the current box. */
static struct expr_ival
hp_interval(const struct fs_engine *e, int h)
{
	struct expr_ival iv;
	int any = 0, need_fixed = 1, real = e->q->def->hps[h].type == CM_HP_REAL;

	iv = e->q->bounds[h];           /* hyperparameters the space does not set */
	for (int v = 0; v < e->nvars; v++) {
		int a;
		union expr_val lo, hi;
		if (e->vars[v].hp != h)
			continue;
		a = fs_active(e, v);
		if (a == 0)
			continue;
		if (a == 1)
			need_fixed = 0;
		lo = fs_value(&e->vars[v], e->lo[v]);
		hi = fs_value(&e->vars[v], e->hi[v]);
		if (!any) {
			iv.lo = lo;
			iv.hi = hi;
			any = 1;
		} else if (real) {
			if (lo.r < iv.lo.r) iv.lo = lo;
			if (hi.r > iv.hi.r) iv.hi = hi;
		} else {
			if (lo.i < iv.lo.i) iv.lo = lo;
			if (hi.i > iv.hi.i) iv.hi = hi;
		}
	}
	for (int c = 0; c < e->ncvars; c++) {
		int a;
		if (e->cvars[c].hp != h || (a = fs_cvar_active(e, c)) == 0)
			continue;
		if (a == 1)
			need_fixed = 0;
		if (!any || e->cvars[c].lo < iv.lo.r)
			iv.lo.r = e->cvars[c].lo;
		if (!any || e->cvars[c].hi > iv.hi.r)
			iv.hi.r = e->cvars[c].hi;
		any = 1;
	}
	if (any && need_fixed) {
		union expr_val f = e->q->fixed[h];
		if (real) {
			if (f.r < iv.lo.r) iv.lo = f;
			if (f.r > iv.hi.r) iv.hi = f;
		} else {
			if (f.i < iv.lo.i) iv.lo = f;
			if (f.i > iv.hi.i) iv.hi = f;
		}
	} else if (!any)
		iv.lo = iv.hi = e->q->fixed[h];
	return iv;
}

/* Bounds one cone node: from its exact table when it depends on a single
 * active variable, else by interval arithmetic on its children. */
static void
bound_node(struct fs_engine *e, int32_t i)
{
	int v = e->tab_var[i];

	if (v >= 0 && e->tab[i] != NULL && fs_active(e, v) == 1) {
		const union expr_val *t = e->tab[i];
		struct expr_ival *o = &e->iv[i];
		if (e->g->nodes[i].type == EXPR_REAL) {
			o->lo.r = o->hi.r = t[e->lo[v]].r;
			for (int64_t p = e->lo[v] + 1; p <= e->hi[v]; p++) {
				if (t[p].r < o->lo.r) o->lo.r = t[p].r;
				if (t[p].r > o->hi.r) o->hi.r = t[p].r;
			}
		} else {
			o->lo.i = o->hi.i = t[e->lo[v]].i;
			for (int64_t p = e->lo[v] + 1; p <= e->hi[v]; p++) {
				if (t[p].i < o->lo.i) o->lo.i = t[p].i;
				if (t[p].i > o->hi.i) o->hi.i = t[p].i;
			}
		}
		return;
	}
	expr_bound_node(e->g, i, e->hpiv, e->iv);
}

void
fs_bound_reset(struct fs_engine *e)
{
	for (int h = 0; h < e->q->def->nhps; h++)
		e->hpiv[h] = hp_interval(e, h);
	for (int32_t j = 0; j < e->ncone; j++)
		bound_node(e, e->cone_list[j]);
	e->bound_calls++;
}

/*
 * Re-bounds the nodes of `list` (in topological order) after the intervals
 * of the hyperparameters in `hps` changed. Change propagation: a node is
 * recomputed only when one of its operands changed in this pass (or it
 * reads a changed variable, or has a table), and marks itself changed only
 * when its own bound moved - so narrowing a kernel size re-bounds the few
 * parameter-count nodes it really moves, not every node downstream.
 */
static int
rebound_nodes(struct fs_engine *e, const int32_t *list, int32_t n, const int *hps, int nhps)
{
	const struct expr_node *nodes = e->g->nodes;
	uint32_t pass = ++e->pass;

	if (pass == 0) {                /* wrapped: clear the stamps */
		memset(e->stamp, 0, sizeof *e->stamp * (size_t)e->g->n);
		pass = e->pass = 1;
	}
	for (int32_t j = 0; j < n; j++) {
		struct fs_undo u;
		int32_t i = list[j];
		const struct expr_node *x = &nodes[i];
		int dirty = 0;
		if (x->kind == EK_VAR) {
			for (int k = 0; k < nhps && !dirty; k++)
				dirty = x->k.i == hps[k];
		} else if (e->tab[i] != NULL) {
			dirty = 1;
		} else {
			dirty = (x->a >= 0 && e->stamp[x->a] == pass) || (x->b >= 0 && e->stamp[x->b] == pass) ||
			    (x->c >= 0 && e->stamp[x->c] == pass);
		}
		if (!dirty)
			continue;
		u.kind = UNDO_NODE;
		u.index = i;
		u.iv = e->iv[i];
		bound_node(e, i);
		if (memcmp(&u.iv, &e->iv[i], sizeof u.iv) == 0)
			continue;
		if (push(e, &u) != 0)
			return -1;
		e->stamp[i] = pass;
	}
	return 0;
}

/* Re-bounds every cone node, logging each for rollback (when too many
 * hyperparameters changed at once to track). */
static void
fs_bound_reset_logged(struct fs_engine *e)
{
	for (int32_t j = 0; j < e->ncone; j++) {
		struct fs_undo u;
		int32_t i = e->cone_list[j];
		u.kind = UNDO_NODE;
		u.index = i;
		u.iv = e->iv[i];
		if (push(e, &u) != 0)
			return;
		bound_node(e, i);
	}
}

static int
same_ival(const struct expr_ival *a, const struct expr_ival *b)
{
	return memcmp(a, b, sizeof *a) == 0;
}

/* Hyperparameters whose intervals a narrowing changed (at most 64 tracked). */
struct changes {
	int h[64];
	int n, many;
};

/* Recomputes hyperparameter h's interval in the box, logging a change. */
static int
update_hp(struct fs_engine *e, int h, struct changes *ch)
{
	struct fs_undo u;
	struct expr_ival iv = hp_interval(e, h);

	if (same_ival(&iv, &e->hpiv[h]))
		return 0;
	u.kind = UNDO_HP;
	u.index = h;
	u.iv = e->hpiv[h];
	if (push(e, &u) != 0)
		return -1;
	e->hpiv[h] = iv;
	if (ch->n < 64)
		ch->h[ch->n++] = h;
	else
		ch->many = 1;
	return 0;
}

/* Re-bounds what the changed hyperparameters reach. */
static int
rebound_changes(struct fs_engine *e, const struct changes *ch)
{
	if (ch->many) {
		fs_bound_reset_logged(e);
		return 0;
	}
	if (ch->n == 1)
		return rebound_nodes(e, e->dep[ch->h[0]], e->ndep[ch->h[0]], ch->h, 1);
	if (ch->n > 0)
		return rebound_nodes(e, e->cone_list, e->ncone, ch->h, ch->n);
	return 0;
}

/* Whether engine var a encloses var w (w's parent chain reaches a). */
static int
encloses(const struct fs_engine *e, int a, int parent_of_w)
{
	for (int p = parent_of_w; p >= 0; p = e->vars[p].parent)
		if (p == a)
			return 1;
	return 0;
}

/* Logs what a narrowing overwrites (u) and starts its change set. */
static int
begin_narrow(struct fs_engine *e, const struct fs_undo *u, struct changes *ch)
{
	ch->n = ch->many = 0;
	e->bound_calls++;
	return push(e, u);
}

int
fs_narrow(struct fs_engine *e, int v, int64_t lo, int64_t hi)
{
	struct fs_undo u = { .kind = UNDO_RANGE, .index = v, .lo = e->lo[v], .hi = e->hi[v] };
	struct changes ch;

	if (begin_narrow(e, &u, &ch) != 0)
		return -1;
	e->lo[v] = lo;
	e->hi[v] = hi;
	/* hyperparameters whose interval may change: v's own and its nested dims' */
	for (int w = v; w < e->nvars; w++) {
		int h = e->vars[w].hp;
		if (h < 0 || (w != v && !encloses(e, v, e->vars[w].parent)))
			continue;
		if (update_hp(e, h, &ch) != 0)
			return -1;
	}
	for (int c = 0; c < e->ncvars; c++)
		if (encloses(e, v, e->cvars[c].parent) && update_hp(e, e->cvars[c].hp, &ch) != 0)
			return -1;
	return rebound_changes(e, &ch);
}

int
fs_narrow_cell(struct fs_engine *e, int c, double lo, double hi)
{
	struct fs_undo u = { .kind = UNDO_CELL, .index = c };
	struct changes ch;

	u.iv.lo.r = e->cvars[c].lo;
	u.iv.hi.r = e->cvars[c].hi;
	if (begin_narrow(e, &u, &ch) != 0)
		return -1;
	e->cvars[c].lo = lo;
	e->cvars[c].hi = hi;
	if (update_hp(e, e->cvars[c].hp, &ch) != 0)
		return -1;
	return rebound_changes(e, &ch);
}

int64_t
fs_mark(const struct fs_engine *e)
{
	return e->nundo;
}

void
fs_rollback(struct fs_engine *e, int64_t mark)
{
	while (e->nundo > mark) {
		const struct fs_undo *u = &e->undo[--e->nundo];
		switch (u->kind) {
		case UNDO_RANGE:
			e->lo[u->index] = u->lo;
			e->hi[u->index] = u->hi;
			break;
		case UNDO_HP:
			e->hpiv[u->index] = u->iv;
			break;
		case UNDO_CELL:
			e->cvars[u->index].lo = u->iv.lo.r;
			e->cvars[u->index].hi = u->iv.hi.r;
			break;
		default:
			e->iv[u->index] = u->iv;
			break;
		}
	}
}

int
fs_bound_status(const struct fs_engine *e)
{
	const struct expr_ival *f = &e->iv[e->root];

	if (f->hi.i == 0)
		return 0;
	if (f->lo.i >= 1)
		return 1;
	return 2;
}

int64_t
fs_restrict(struct fs_engine *e, int v, int64_t lo, int64_t hi)
{
	int64_t mark = fs_mark(e);

	if (fs_narrow(e, v, lo, hi) != 0) {
		fs_rollback(e, mark);
		return -1;
	}
	return mark;
}

int64_t
fs_restrict_active(struct fs_engine *e, int v, int64_t lo, int64_t hi)
{
	int64_t first = -1;

	for (int w = v; w >= 0; w = e->vars[w].parent) {
		int64_t a = lo > e->lo[w] ? lo : e->lo[w], b = hi < e->hi[w] ? hi : e->hi[w], m = -2;
		if (a <= b)
			m = fs_restrict(e, w, a, b);
		if (m < 0) {
			fs_unrestrict(e, first);
			return m;
		}
		if (first < 0)
			first = m;
		lo = hi = e->vars[w].active_pos;
	}
	return first;
}

void
fs_unrestrict(struct fs_engine *e, int64_t mark)
{
	if (mark >= 0)
		fs_rollback(e, mark);
}

double
fs_now_plus(double seconds)
{
	return seconds > 0 ? fs_now() + seconds : 0;
}

int64_t
fs_dim_index_of(const struct fs_engine *e, int v, int64_t p)
{
	return fs_dim_index(&e->vars[v], p);
}
