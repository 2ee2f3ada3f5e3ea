/*
 * fset_sample.c - what an unfinished count still answers (see fset.h): an
 * unbiased estimate of the feasible count with a 95% confidence interval,
 * and feasible configurations drawn without the exact count.
 *
 * Both read the leaves of the stored count tree and never bound: a leaf's
 * box is rebuilt in arrays of the sampler's own (the grid narrowed by the
 * ranges on the leaf's path; its vars before the leaf's var are single
 * positions, as the split rule leaves them) installed as e->lo / e->hi
 * only while a configuration of it is decoded (fs_decode_box), so the
 * engine's box and bounds are untouched and every exact evaluation
 * (fs_feasible_at) sees the engine as it was. A uniform configuration of
 * a box is its k-th for k uniform below the box's size.
 *
 * Leaves: FULL (exact count, decoded uniformly), EMPTY (skipped), counted
 * but not stored (a tree capped at max_nodes: exact count, configurations
 * by rejection), undecided (estimated, configurations by rejection).
 * Strata of the estimate: an undecided leaf whose proportional share of
 * the draws is at least FS_STRATUM_MIN is its own stratum, the rest are
 * one pooled stratum (its draws pick a leaf in proportion to its size).
 * Draws go in passes, one per stratum that still wants one (strata sorted
 * by planned draws, largest first), so a deadline cuts every stratum
 * evenly; every stratum gets FS_STRATUM_MIN draws whatever the deadline.
 */
#include "fset_priv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { LEAF_FULL, LEAF_COUNTED, LEAF_OPEN };

/* rejection draws in a leaf before another leaf is picked */
#define LEAF_TRIES 256
/* draws without a deadline before fs_sampler_draw gives up */
#define DRAW_CAP 10000000

struct stratum {
	int32_t leaf;           /* sampler leaf index, or -1 for the pooled leaves */
	int64_t planned, done, hits;
	double size;
};

struct fs_sampler {
	int32_t nleaf;
	int32_t *node;          /* per leaf: the stored node */
	uint8_t *kind;
	fs_count *csize;        /* FULL, COUNTED: the exact count; OPEN: the box size */
	double *cum;            /* cumulative sampling weights */
	double total;
	int32_t *pool;          /* pooled open leaves and their cumulative sizes */
	double *pool_cum;
	int32_t npool;
	int64_t *lo, *hi;       /* a leaf's box */
	uint32_t *stamp, gen;   /* per var: set by the path in generation gen */
	struct fs_estimate est;
};

uint64_t
fs_rand64(uint64_t *s)
{
	return sp_splitmix(s);
}

fs_count
fs_rand_below(uint64_t *s, fs_count n)
{
	fs_count limit = ~(fs_count)0 - (~(fs_count)0 % n), x;

	do {
		x = ((fs_count)fs_rand64(s) << 64) | fs_rand64(s);
	} while (x >= limit);
	return x % n;
}

/* Uniform in [0, 1). */
static double
rand_unit(uint64_t *s)
{
	return (double)(fs_rand64(s) >> 11) * 0x1.0p-53;
}

/* The first index i < n with cum[i] > u (cum nondecreasing), n - 1 at most. */
static int32_t
find_cum(const double *cum, int32_t n, double u)
{
	int32_t a = 0, b = n - 1;

	while (a < b) {
		int32_t m = a + (b - a) / 2;
		if (cum[m] > u)
			b = m;
		else
			a = m + 1;
	}
	return a;
}

/* A uniform configuration (feasible or not) of leaf i's box into pos. */
static void
leaf_decode(struct fs_engine *e, struct fs_sampler *s, int32_t i, uint64_t *rng, int64_t *pos)
{
	int64_t *elo = e->lo, *ehi = e->hi;
	const struct fs_node *x;
	int d;

	memcpy(s->lo, elo, sizeof *s->lo * (size_t)e->nvars);
	memcpy(s->hi, ehi, sizeof *s->hi * (size_t)e->nvars);
	if (++s->gen == 0) {
		memset(s->stamp, 0, sizeof *s->stamp * (size_t)e->nvars);
		s->gen = 1;
	}
	/* the deepest narrowing of each var on the path wins */
	for (int32_t n = s->node[i]; n >= 0; n = e->nodes[n].parent) {
		x = &e->nodes[n];
		if (s->stamp[x->var] == s->gen)
			continue;
		s->stamp[x->var] = s->gen;
		s->lo[x->var] = x->lo;
		s->hi[x->var] = x->hi;
	}
	e->lo = s->lo;
	e->hi = s->hi;
	d = fs_next_active(e, e->nodes[s->node[i]].var);
	{
		fs_count size = d < e->nvars ? fs_box_size(e, d) : 1;
		fs_decode_box(e, d, size > 1 ? fs_rand_below(rng, size) : 0, pos);
	}
	e->lo = elo;
	e->hi = ehi;
}

/* One uniform draw in leaf i, evaluated exactly: 1 feasible, 0 not. */
static int
leaf_draw(struct fs_engine *e, struct fs_sampler *s, int32_t i, uint64_t *rng, int64_t *pos)
{
	leaf_decode(e, s, i, rng, pos);
	e->evals++;
	return fs_feasible_at(e, pos) != 0;
}

/* One draw of a stratum (a pooled one picks its leaf by size). */
static int
stratum_draw(struct fs_engine *e, struct fs_sampler *s, const struct stratum *t, uint64_t *rng, int64_t *pos)
{
	int32_t i = t->leaf;

	if (i < 0)
		i = s->pool[find_cum(s->pool_cum, s->npool, rand_unit(rng) * s->pool_cum[s->npool - 1])];
	return leaf_draw(e, s, i, rng, pos);
}

static int
by_planned(const void *a, const void *b)
{
	const struct stratum *x = a, *y = b;

	return x->planned < y->planned ? 1 : x->planned > y->planned ? -1 : (x->leaf > y->leaf) - (x->leaf < y->leaf);
}

/* Draws for `seconds` spread over the open leaves: how many fit, at the
 * rate measured on a first few (at least 256, at most 50 million). */
static int64_t
draws_for(struct fs_engine *e, struct fs_sampler *s, double seconds, uint64_t *rng, int64_t *pos,
    const struct stratum *all)
{
	double t0 = fs_now(), per;
	int n = 64;

	for (int k = 0; k < n; k++)
		(void)stratum_draw(e, s, all, rng, pos);
	per = (fs_now() - t0) / n;
	if (!(per > 0))
		return 50000000;
	per = 0.8 * (seconds - (fs_now() - t0)) / per;
	return per < 256 ? 256 : per > 5e7 ? 50000000 : (int64_t)per;
}

/*
 * The estimate (fset.h): strata planned from `draws` (or the time), drawn
 * in passes until planned or the deadline, then summed. Open leaves'
 * sampling weights (size x their stratum's fraction) into weight. 0 or -1
 * (out of memory).
 */
static int
estimate(struct fs_engine *e, struct fs_sampler *s, int64_t draws, double seconds, uint64_t seed, double *weight)
{
	struct stratum *st = NULL, all = { -1, 0, 0, 0, 0 };
	int32_t nst = 0, nopen = 0;
	double S = 0, R = 0, var = 0, sum = 0, deadline = 0;
	int64_t *pos = malloc(sizeof *pos * ((size_t)e->nvars + 1));
	int32_t *stratum_of = NULL;
	uint64_t rng = seed;

	for (int32_t i = 0; i < s->nleaf; i++)
		if (s->kind[i] == LEAF_OPEN) {
			S += (double)s->csize[i];
			nopen++;
		}
	s->est.leaves = nopen;
	if (pos == NULL)
		return -1;
	if (nopen == 0) {
		free(pos);
		return 0;
	}
	st = calloc((size_t)nopen + 1, sizeof *st);
	stratum_of = malloc(sizeof *stratum_of * (size_t)s->nleaf);
	s->pool = malloc(sizeof *s->pool * (size_t)nopen);
	s->pool_cum = malloc(sizeof *s->pool_cum * (size_t)nopen);
	if (st == NULL || stratum_of == NULL || s->pool == NULL || s->pool_cum == NULL) {
		free(st);
		free(stratum_of);
		free(pos);
		return -1;
	}
	/* every open leaf pooled first: the calibration draws from all of them */
	for (int32_t i = 0; i < s->nleaf; i++)
		if (s->kind[i] == LEAF_OPEN) {
			s->pool[s->npool] = i;
			R += (double)s->csize[i];
			s->pool_cum[s->npool++] = R;
		}
	if (seconds > 0)
		deadline = fs_now() + seconds;
	if (draws <= 0)
		draws = draws_for(e, s, seconds > 0 ? seconds : 0.1, &rng, pos, &all);
	/* strata: leaves with FS_STRATUM_MIN draws of their own, the rest pooled */
	s->npool = 0;
	R = 0;
	for (int32_t i = 0; i < s->nleaf; i++) {
		double lam;
		stratum_of[i] = -1;
		if (s->kind[i] != LEAF_OPEN)
			continue;
		lam = (double)draws * (double)s->csize[i] / S;
		if (lam >= FS_STRATUM_MIN) {
			st[nst].leaf = i;
			st[nst].planned = (int64_t)lam;
			st[nst].size = (double)s->csize[i];
			nst++;
		} else {
			s->pool[s->npool] = i;
			R += (double)s->csize[i];
			s->pool_cum[s->npool++] = R;
		}
	}
	if (s->npool > 0) {
		double lam = (double)draws * R / S;
		st[nst].leaf = -1;
		st[nst].planned = lam < FS_STRATUM_MIN ? FS_STRATUM_MIN : (int64_t)(lam + 0.5);
		st[nst].size = R;
		nst++;
	}
	qsort(st, (size_t)nst, sizeof *st, by_planned);
	/* passes: one draw per stratum still short of its plan */
	{
		int32_t live = nst;
		int64_t since = 0;
		for (int64_t pass = 0; live > 0; pass++) {
			while (live > 0 && st[live - 1].planned <= pass)
				live--;
			for (int32_t k = 0; k < live; k++) {
				st[k].hits += stratum_draw(e, s, &st[k], &rng, pos);
				st[k].done++;
			}
			since += live;
			if (pass + 1 >= FS_STRATUM_MIN && deadline > 0 && since >= 256) {
				since = 0;
				if (fs_now() > deadline)
					break;
			}
		}
	}
	for (int32_t k = 0; k < nst; k++) {
		double p = (double)st[k].hits / (double)st[k].done;
		double q = ((double)st[k].hits + 0.5) / ((double)st[k].done + 1);
		sum += st[k].size * p;
		var += st[k].size * st[k].size * q * (1 - q) / (double)st[k].done;
		s->est.draws += st[k].done;
		s->est.hits += st[k].hits;
		if (st[k].leaf >= 0)
			stratum_of[st[k].leaf] = k;
		else
			all = st[k];
	}
	s->est.strata = nst;
	for (int32_t i = 0; i < s->nleaf; i++) {
		if (s->kind[i] != LEAF_OPEN)
			continue;
		if (stratum_of[i] >= 0)
			weight[i] = (double)s->csize[i] * (double)st[stratum_of[i]].hits / (double)st[stratum_of[i]].done;
		else
			weight[i] = all.done > 0 ? (double)s->csize[i] * (double)all.hits / (double)all.done : 0;
	}
	{
		double lower = (double)e->lower, upper = (double)e->upper, sd = sqrt(var);
		s->est.value = lower + sum;
		if (s->est.value > upper)
			s->est.value = upper;
		s->est.low = s->est.value - 1.96 * sd < lower ? lower : s->est.value - 1.96 * sd;
		s->est.high = s->est.value + 1.96 * sd > upper ? upper : s->est.value + 1.96 * sd;
	}
	free(st);
	free(stratum_of);
	free(pos);
	return 0;
}

/* 1 when the engine's box is the grid (nothing fs_restrict'ed). */
static int
whole_grid(const struct fs_engine *e)
{
	for (int v = 0; v < e->nvars; v++)
		if (e->lo[v] != 0 || e->hi[v] != e->vars[v].n - 1)
			return 0;
	return 1;
}

void
fs_sampler_free(struct fs_sampler *s)
{
	if (s == NULL)
		return;
	free(s->node);
	free(s->kind);
	free(s->csize);
	free(s->cum);
	free(s->pool);
	free(s->pool_cum);
	free(s->lo);
	free(s->stamp);
	free(s);
}

const struct fs_estimate *
fs_sampler_estimate(const struct fs_sampler *s)
{
	return &s->est;
}

int
fs_sampler_build(struct fs_engine *e, int64_t draws, double seconds, uint64_t seed, struct fs_sampler **out,
    struct dn_error *err)
{
	struct fs_sampler *s;
	size_t nv = (size_t)e->nvars + 1;
	int32_t nleaf = 0;

	*out = NULL;
	if (!e->counted || e->nnodes == 0)
		return dn_error_set(err, DN_EINVAL, NULL, "sampling needs a count first (exact or not)");
	if (!whole_grid(e))
		return dn_error_set(err, DN_EINVAL, NULL, "sampling needs the whole grid (no restricted box)");
	for (int32_t n = 0; n < e->nnodes; n++)
		nleaf += e->nodes[n].nchildren == 0 && e->nodes[n].status != FS_EMPTY;
	s = calloc(1, sizeof *s);
	if (s == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	s->node = malloc(sizeof *s->node * ((size_t)nleaf + 1));
	s->kind = malloc((size_t)nleaf + 1);
	s->csize = malloc(sizeof *s->csize * ((size_t)nleaf + 1));
	s->cum = calloc((size_t)nleaf + 1, sizeof *s->cum);
	s->lo = malloc(sizeof *s->lo * 2 * nv);
	s->stamp = calloc(nv, sizeof *s->stamp);
	if (!s->node || !s->kind || !s->csize || !s->cum || !s->lo || !s->stamp) {
		fs_sampler_free(s);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	s->hi = s->lo + nv;
	for (int32_t n = 0; n < e->nnodes; n++) {
		const struct fs_node *x = &e->nodes[n];
		if (x->nchildren != 0 || x->status == FS_EMPTY)
			continue;
		s->node[s->nleaf] = n;
		s->kind[s->nleaf] = x->status == FS_FULL ? LEAF_FULL : x->status == FS_MIXED ? LEAF_COUNTED : LEAF_OPEN;
		s->csize[s->nleaf] = s->kind[s->nleaf] == LEAF_OPEN ? x->upper : x->count;
		s->nleaf++;
	}
	s->est.exact = e->lower == e->upper;
	s->est.value = s->est.low = s->est.high = (double)e->lower;
	/* the weights: exact counts, estimates for the open leaves (in cum first) */
	if (estimate(e, s, draws, seconds, seed, s->cum) != 0) {
		fs_sampler_free(s);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	for (int32_t i = 0; i < s->nleaf; i++) {
		double w = s->kind[i] == LEAF_OPEN ? s->cum[i] : (double)s->csize[i];
		s->total += w;
		s->cum[i] = s->total;
	}
	*out = s;
	return 0;
}

int
fs_sampler_draw(struct fs_engine *e, struct fs_sampler *s, uint64_t *rng, int64_t *pos, double deadline)
{
	int64_t tries = 0;

	if (!(s->total > 0) || s->nleaf == 0)
		return 1;
	for (;;) {
		int32_t i = find_cum(s->cum, s->nleaf, rand_unit(rng) * s->total);
		for (int t = 0; t < (s->kind[i] == LEAF_FULL ? 1 : LEAF_TRIES); t++) {
			if (leaf_draw(e, s, i, rng, pos))
				return 0;
			if (++tries % 64 == 0 && ((deadline > 0 && fs_now() > deadline) || tries >= DRAW_CAP))
				return 1;
		}
	}
}
