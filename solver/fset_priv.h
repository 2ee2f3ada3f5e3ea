/*
 * fset_priv.h - internals shared by the engine's files (fset_init.c,
 * fset_bound.c, fset_count.c, fset_nav.c, fset_json.c): saturating 128-bit
 * counts, values of positions, subtree sizes and the incremental bounding
 * of boxes with an undo log.
 */
#ifndef DN_FSET_PRIV_H
#define DN_FSET_PRIV_H

#include "fset.h"

#define FS_COUNT_MAX (~(fs_count)0)

/* saturating arithmetic: FS_COUNT_MAX means "overflowed" */
static inline fs_count
fs_add(fs_count a, fs_count b)
{
	fs_count r = a + b;

	return (r < a || a == FS_COUNT_MAX || b == FS_COUNT_MAX) ? FS_COUNT_MAX : r;
}

static inline fs_count
fs_mul(fs_count a, fs_count b)
{
	if (a == 0 || b == 0)
		return 0;
	if (a == FS_COUNT_MAX || b == FS_COUNT_MAX || a > FS_COUNT_MAX / b)
		return FS_COUNT_MAX;
	return a * b;
}

/* The model value of position p of var v, and the space dim's value index. */
union expr_val fs_value(const struct fs_var *v, int64_t p);
int64_t fs_dim_index(const struct fs_var *v, int64_t p);

/* Prepares fs_from_args's name index and numeric grids (fset_json.c). 0,
 * or -1 when out of memory; fs_free frees them. */
int fs_args_index_build(struct fs_engine *e);
void fs_args_index_free(struct fs_engine *e);

/* Size of var v's subtree with v over positions [lo, hi]. */
fs_count fs_contrib(const struct fs_engine *e, int v, int64_t lo, int64_t hi);

/* Whether var v takes part in configurations of the current box: 1 active,
 * 0 inactive (an enclosing choice is fixed to another option), -1 not yet
 * known (an enclosing choice is not fixed). */
int fs_active(const struct fs_engine *e, int v);

/* The same for continuous var c. */
int fs_cvar_active(const struct fs_engine *e, int c);

/* Size of the current box with vars < d fixed (their positions in e->lo),
 * var d over [e->lo[d], e->hi[d]] and vars > d over their whole range. */
fs_count fs_box_size(const struct fs_engine *e, int d);

/* Bounding: recompute everything for the current box; narrow var v to
 * [lo, hi] (continuous var c to the cell [lo, hi]) re-bounding only what
 * depends on it; marks and rollbacks. */
void fs_bound_reset(struct fs_engine *e);
int fs_narrow(struct fs_engine *e, int v, int64_t lo, int64_t hi);
int fs_narrow_cell(struct fs_engine *e, int c, double lo, double hi);
int64_t fs_mark(const struct fs_engine *e);
void fs_rollback(struct fs_engine *e, int64_t mark);

/* The feasible node's bound in the current box: 0 (none), 1 (all), 2 (some). */
int fs_bound_status(const struct fs_engine *e);

/*
 * Continuous hyperparameters (fset_real.c). fs_real_status: a box whose
 * bound is open (2) searched over cells of the continuous vars: 1 when a
 * cell's bound is [1, 1] (every configuration of the box has a feasible
 * grid value there), 0 when every cell's is [0, 0], 2 undecided (a bounded
 * search: the box is then split). 2 at once without continuous vars.
 * fs_real_exists: the same for a box that is one configuration (the
 * discrete vars that set hyperparameters fixed), to the finest cells,
 * whose ends are evaluated exactly: 1 or 0, and a feasible grid point into
 * r (may be NULL; for one continuous var its largest feasible grid value).
 * fs_real_hull: per continuous var, the
 * finest cells that the bound does not rule out for the box, widening
 * [*lo, *hi] (cell indices; *lo > *hi when empty).
 */
/* The check's tape and tables (fset_check.c): 0, or -1 out of memory. */
int fs_check_build(struct fs_engine *e);
void fs_check_free(struct fs_engine *e);

#define FS_MAX_CVARS 8     /* continuous vars an engine takes (cell corners: 2^n) */
int fs_real_status(struct fs_engine *e);
int fs_real_exists(struct fs_engine *e, double *r);
int fs_real_hull(struct fs_engine *e, int c, int64_t *lo, int64_t *hi);

/* Counts the current box at var d (fset_count.c); stores the search tree
 * under `node` when >= 0. 0 or -1 (out of memory). */
int fs_count_box(struct fs_engine *e, int d, int32_t node, fs_count *count, fs_count *upper);

/* The first steps of fs_count_box on the current box at active var d (or
 * nvars): its size into *size and its status, 0 (no configuration fits),
 * 1 (all do) or 2 (to split); fs_box_exact decides a box whose bound vars
 * are all fixed by one exact evaluation (1 feasible, 0 not). */
int fs_box_decide(struct fs_engine *e, int d, fs_count *size);
int fs_box_exact(struct fs_engine *e);

/* Appends n nodes to the stored tree (parents -1, the rest unset): the
 * first's index, or -1 when they do not fit in e->max_nodes, memory runs
 * out, or e is a worker of a parallel count whose node budget is spent. */
int32_t fs_node_alloc(struct fs_engine *e, int n);

/* Narrows the box to node n's of the tree `nodes` (e's own or another's
 * with the same variables): the ranges on its path from the root, the
 * root's first (recursion as deep as the tree). 0 or -1 (out of memory). */
int fs_enter_path(struct fs_engine *e, const struct fs_node *nodes, int32_t n);

/* A stored leaf counted again (refining an unfinished count) keeps what it
 * knew: c0 and u0, its count and upper bound before, are bounds of the
 * same box as the new ones, so a leaf still undecided and without stored
 * children (the recount met the deadline or the node cap again) takes the
 * larger lower and the smaller upper bound, and is exact (FS_MIXED) when
 * they meet. Without it a recount under a shorter deadline loosened the
 * certified bounds between slices. Other nodes are left as they are. */
void fs_leaf_merge(struct fs_node *x, fs_count c0, fs_count u0);

/*
 * Parallel counting (fset_par.c). fs_par_refine counts every undecided
 * leaf of the stored tree, in the order of configurations, as
 * count_refine's depth-first walk does, on e->threads threads, leaving the
 * same stored tree (uncapped and without a deadline: node for node); the
 * leaves get their counts, the caller sums them up the tree. The box must be the one the count
 * started from. 0 done, -1 out of memory, 1 when it does not apply
 * (e->threads <= 1, a work limit, a worker engine, no undecided leaf) or
 * the tree outgrew e->max_nodes (then nothing changed: the caller counts
 * on this thread). fs_par_take, for fs_node_alloc in a worker engine:
 * takes n nodes from the shared budget, 0, or -1 when it is spent or n < 0
 * (memory ran out) (the worker then stops, and the parallel count falls
 * back to one thread).
 */
int fs_par_refine(struct fs_engine *e);
int fs_par_take(struct fs_engine *e, int n);

/* For fs_count_box in a worker engine (e->par set) that stored a split
 * box's children: fs_par_push before counting them (node, its children
 * block at `first`, fs_split's dv, nch, clo, chi; 0 or -1 out of memory),
 * fs_par_child before child i (1: the children from i on were given to
 * another worker, which counts them; stop), fs_par_pop after the last. A
 * given child's node is marked in e->nodes (nchildren -1) and left out of
 * the box's sums; the graft fills it in. */
int fs_par_push(struct fs_engine *e, int32_t node, int32_t first, int dv, int nch, const int64_t *clo,
    const int64_t *chi);
int fs_par_child(struct fs_engine *e, int i);
void fs_par_pop(struct fs_engine *e);

/* Sums counts up the stored tree (children come after their parents) into
 * the inner nodes and e->lower, e->upper (fset_count.c). */
void fs_count_sum(struct fs_engine *e);

/* Starts a count's tree anew: the root alone, undecided, over the whole
 * grid (fset_count.c). Its index, or -1 out of memory. */
int32_t fs_count_root(struct fs_engine *e);

/* The next var at or after d that takes part in the current box, or nvars. */
int fs_next_active(const struct fs_engine *e, int d);

/* 1 when no var >= d that sets a hyperparameter, or that is a nested
 * choice holding vars that do (its option decides which of them are
 * active: fs_var.nested_sets), is still open in the current box: the
 * bound no longer changes, one exact evaluation decides the whole box
 * (fset_count.c). Until cost model 1.4.17 a nested
 * choice that passes through counted as closed, and its first option's
 * evaluation decided every option. */
int fs_passthrough_only(const struct fs_engine *e, int d);

/*
 * The split rule of the search (every stored tree follows it, and
 * fset_progress.c rebuilds trees from it): the box at active var d < nvars
 * with d over [e->lo[d], e->hi[d]] splits into children that narrow var
 * *dv to [clo[i], chi[i]]: ranges of up to FS_ENUMERATE_UP_TO positions one
 * child per position, larger ones two halves, a single position one child
 * over the next active var's range. Returns the number of children, or 0
 * when d is a single position and no active var follows (the box is one
 * configuration). clo and chi hold FS_ENUMERATE_UP_TO entries.
 */
#define FS_ENUMERATE_UP_TO 4
int fs_split(const struct fs_engine *e, int d, int *dv, int64_t *clo, int64_t *chi);

/* The k-th configuration (0-based, k below fs_box_size(e, d), feasible or
 * not) of the current box at active var d (vars < d single positions, or d
 * = nvars: the box is one configuration), in the engine's order, into pos
 * (-1 for inactive vars). No bounding: e->lo / e->hi may be any arrays
 * (fset_nav.c; the approximate sampler of fset_sample.c decodes leaves). */
void fs_decode_box(struct fs_engine *e, int d, fs_count k, int64_t *pos);

/* Deadline check every few hundred bound calls, and the work limit at every
 * call; sets e->timed_out, which stays until the next operation clears it. */
int fs_past_deadline(struct fs_engine *e);
double fs_now(void);

/*
 * Binary formats' pieces (fset_bytes.c): a growing write buffer (oom set
 * once memory ran out; later writes are ignored), little-endian integers
 * of n <= 16 bytes, unsigned LEB128 varints of at most FS_VARINT_MAX bytes
 * (the shortest encoding only; fs_get_varint: 0, or -1 truncated, overlong
 * or past 128 bits), a reader (fs_get_le reads n bytes the caller checked
 * are there) and the FNV-1a 64 checksum.
 */
#define FS_VARINT_MAX 19        /* ceil(128 / 7): a 128-bit count */
struct fs_wbuf {
	uint8_t *p;
	size_t n, cap;
	int oom;
};
struct fs_rbuf {
	const uint8_t *p;
	size_t n, at;
};
void fs_put_bytes(struct fs_wbuf *w, const void *src, size_t n);
void fs_put_le(struct fs_wbuf *w, fs_count x, int n);
void fs_put_varint(struct fs_wbuf *w, fs_count x);
fs_count fs_get_le(struct fs_rbuf *r, int n);
int fs_get_varint(struct fs_rbuf *r, fs_count *x);
uint64_t fs_fnv1a(const uint8_t *p, size_t n);

#endif
