/*
 * fset_progress.c - a count's progress as bytes (fs_progress_save) and back
 * (fs_progress_load), so that a long count continues after a restart or on
 * another process instead of starting over (fs_count_more).
 *
 * The blob (version 1; every integer little-endian, "varint" = unsigned
 * LEB128 of at most 19 bytes, the shortest encoding only):
 *
 *   offset  size
 *   0       4    magic "DNFP"
 *   4       2    version (1)
 *   6       2    flags (0)
 *   8       4    nvars: engine variables
 *   12      4    nodes of the expression graph
 *   16      8    fingerprint (see below)
 *   24      16   total configurations (128 bits)
 *   40      16   feasible lower bound
 *   56      16   feasible upper bound
 *   72      4    nnodes: tree nodes that follow
 *   76      ...  per variable, its number of positions (varint)
 *           ...  the tree in pre-order, one record per node: a tag byte
 *                (0 EMPTY, 1 FULL, 2 MIXED, 3 UNKNOWN leaf; 4 a split
 *                node), then for a MIXED leaf its count, for an UNKNOWN
 *                leaf its count and upper bound (varints)
 *   len-8   8    FNV-1a 64 of every byte before it
 *
 * Only what a node cannot derive is stored: its variable and range follow
 * from its parent's box by the split rule (fs_split), a FULL leaf counts
 * its box, an EMPTY one nothing, a split node the sums of its children. So
 * a tree read back is the one saved, node for node, and costs one byte a
 * decided node. The version changes whenever the split rule or the variable
 * order does.
 *
 * The fingerprint is a 64-bit hash of everything the tree depends on: the
 * expression graph (model, workload, device, budgets and user constraints
 * are all nodes of it) and the decided root, the fixed hyperparameters,
 * per engine variable its dim, hyperparameter, nesting, values in engine
 * order and range in the box, and the continuous vars (ranges and
 * resolutions) when there are any. A blob of another query, model or
 * cost-model version does not load.
 *
 * A blob is untrusted input (it comes back from a database): the loader
 * checks the checksum, the header against this engine, every record against
 * the box the split rule gives it (a split only where the rule splits, a
 * FULL leaf's count is its box's size, counts of MIXED and UNKNOWN leaves
 * within it), the node count against the bytes and e->max_nodes, that
 * nothing trails, and that the stored lower, upper and total are the tree's
 * own. It builds the new tree aside and installs it only when all of that
 * holds: a rejected blob leaves the engine as it was. The checksum catches
 * corruption, not forgery: a blob written with a valid checksum may claim
 * wrong decisions (within the structure above); sign blobs where the store
 * is not trusted.
 */
#include "fset_priv.h"
#include "dn_grow.h"

#include <stdlib.h>
#include <string.h>

#define PROGRESS_MAGIC "DNFP"
#define PROGRESS_VERSION 1
#define PROGRESS_HEADER 76

enum { TAG_EMPTY = FS_EMPTY, TAG_FULL = FS_FULL, TAG_MIXED = FS_MIXED, TAG_UNKNOWN = FS_UNKNOWN, TAG_SPLIT = 4 };

/* ---- the fingerprint ---- */

static uint64_t
fp_mix(uint64_t h, uint64_t w)
{
	uint64_t z = h ^ (w + 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static uint64_t
fp_val(uint64_t h, union expr_val v)
{
	uint64_t w;

	memcpy(&w, &v, sizeof w);
	return fp_mix(h, w);
}

static uint64_t
progress_fingerprint(const struct fs_engine *e)
{
	const struct expr_graph *g = e->g;
	uint64_t h = fp_mix(0, PROGRESS_VERSION);

	h = fp_mix(h, (uint64_t)e->root);
	h = fp_mix(h, (uint64_t)e->nnodes_graph);
	for (int32_t i = 0; i < e->nnodes_graph; i++) {
		const struct expr_node *x = &g->nodes[i];
		h = fp_mix(h, (uint64_t)x->kind | (uint64_t)x->type << 8);
		h = fp_mix(h, (uint64_t)(uint32_t)x->a | (uint64_t)(uint32_t)x->b << 32);
		h = fp_mix(h, (uint64_t)(uint32_t)x->c);
		h = fp_val(h, x->k);
	}
	for (int k = 0; k < e->q->def->nhps; k++) {
		h = fp_val(h, e->q->fixed[k]);
		h = fp_val(h, e->q->bounds[k].lo);
		h = fp_val(h, e->q->bounds[k].hi);
	}
	h = fp_mix(h, (uint64_t)e->nvars);
	for (int v = 0; v < e->nvars; v++) {
		const struct fs_var *x = &e->vars[v];
		h = fp_mix(h, (uint64_t)(uint32_t)x->dim | (uint64_t)(uint32_t)x->hp << 32);
		h = fp_mix(h, (uint64_t)(uint32_t)x->parent | (uint64_t)x->real << 32 | (uint64_t)x->has_children << 33);
		h = fp_mix(h, (uint64_t)x->active_pos);
		h = fp_mix(h, (uint64_t)x->n);
		h = fp_mix(h, (uint64_t)e->lo[v]);
		h = fp_mix(h, (uint64_t)e->hi[v]);
		if (x->vals != NULL) {
			for (int64_t p = 0; p < x->n; p++) {
				h = fp_val(h, x->vals[p]);
				h = fp_mix(h, (uint64_t)fs_dim_index(x, p));
			}
		} else {
			h = fp_val(h, fs_value(x, 0));
			h = fp_val(h, fs_value(x, x->n - 1));
		}
	}
	for (int c = 0; c < e->ncvars; c++) {
		const struct fs_cvar *x = &e->cvars[c];
		union expr_val l, u;
		l.r = x->L;
		u.r = x->H;
		h = fp_mix(h, (uint64_t)(uint32_t)x->dim | (uint64_t)(uint32_t)x->hp << 32);
		h = fp_mix(h, (uint64_t)(uint32_t)x->parent | (uint64_t)x->logscale << 32 | (uint64_t)x->bits << 40);
		h = fp_mix(h, (uint64_t)x->active_pos);
		h = fp_val(fp_val(h, l), u);
	}
	return h;
}

/* ---- writing ---- */

int
fs_progress_save(const struct fs_engine *e, void **buf, size_t *len, struct dn_error *err)
{
	struct fs_wbuf w = { NULL, 0, 0, 0 };
	int32_t *stack = NULL, top = 0, written = 0;

	*buf = NULL;
	*len = 0;
	if (!e->counted || e->nnodes == 0)
		return dn_error_set(err, DN_EINVAL, NULL, "there is no count to save: count first");
	fs_put_bytes(&w, PROGRESS_MAGIC, 4);
	fs_put_le(&w, PROGRESS_VERSION, 2);
	fs_put_le(&w, 0, 2);
	fs_put_le(&w, (fs_count)(uint32_t)e->nvars, 4);
	fs_put_le(&w, (fs_count)(uint32_t)e->nnodes_graph, 4);
	fs_put_le(&w, progress_fingerprint(e), 8);
	fs_put_le(&w, e->total, 16);
	fs_put_le(&w, e->lower, 16);
	fs_put_le(&w, e->upper, 16);
	fs_put_le(&w, (fs_count)(uint32_t)e->nnodes, 4);
	for (int v = 0; v < e->nvars; v++)
		fs_put_varint(&w, (fs_count)e->vars[v].n);
	/* pre-order: a stack of nodes still to write, the next one on top */
	stack = malloc(sizeof *stack * ((size_t)e->nnodes + 1));
	if (stack == NULL) {
		free(w.p);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory saving the count's progress");
	}
	stack[top++] = 0;
	while (top > 0 && !w.oom) {
		const struct fs_node *x = &e->nodes[stack[--top]];
		uint8_t tag = x->nchildren > 0 ? TAG_SPLIT : x->status;
		fs_put_bytes(&w, &tag, 1);
		if (tag == TAG_MIXED || tag == TAG_UNKNOWN)
			fs_put_varint(&w, x->count);
		if (tag == TAG_UNKNOWN)
			fs_put_varint(&w, x->upper);
		for (int i = x->nchildren - 1; i >= 0; i--)
			stack[top++] = x->first_child + i;
		written++;
	}
	free(stack);
	if (!w.oom && written != e->nnodes) {
		free(w.p);
		return dn_error_set(err, DN_EINTERNAL, NULL, "the search tree has %d nodes, %d reachable",
		    (int)e->nnodes, (int)written);
	}
	if (!w.oom)
		fs_put_le(&w, fs_fnv1a(w.p, w.n), 8);
	if (w.oom) {
		free(w.p);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory saving the count's progress");
	}
	*buf = w.p;
	*len = w.n;
	return 0;
}

/* ---- reading ---- */

/* A split node whose children are being read: they narrow var dv. */
struct frame {
	int32_t node;
	int dv, nch, next;
	int64_t clo[FS_ENUMERATE_UP_TO], chi[FS_ENUMERATE_UP_TO];
	int64_t lo, hi;         /* var dv's range in the node's own box */
};

struct loader {
	struct fs_engine *e;
	struct fs_rbuf r;
	struct fs_node *nodes;
	int32_t nnodes, want;
	struct frame *stack;
	int32_t depth, capdepth;
	struct dn_error *err;
};

static int
bad(struct loader *l, const char *what)
{
	return dn_error_set(l->err, DN_EINVAL, NULL, "the saved progress is corrupt: %s (byte %zu)", what, l->r.at);
}

/*
 * Reads node n's record in the current box (e->lo, e->hi narrowed by its
 * ancestors): a leaf's counts, or a split's children, which it allocates and
 * pushes as a frame. 0 or -1 with l->err.
 */
static int
read_node(struct loader *l, int32_t n)
{
	struct fs_engine *e = l->e;
	struct fs_node *x = &l->nodes[n];
	int d = fs_next_active(e, x->var);
	fs_count size = d < e->nvars ? fs_box_size(e, d) : 1, a = 0, b = 0;
	uint8_t tag;

	if (l->r.at >= l->r.n)
		return bad(l, "the tree ends early");
	tag = l->r.p[l->r.at++];
	x->first_child = -1;
	x->nchildren = 0;
	switch (tag) {
	case TAG_EMPTY:
	case TAG_FULL:
		a = b = tag == TAG_FULL ? size : 0;
		break;
	case TAG_MIXED:
		if (fs_get_varint(&l->r, &a) != 0)
			return bad(l, "a count is malformed");
		if (a > size)
			return bad(l, "a count exceeds its box");
		b = a;
		break;
	case TAG_UNKNOWN:
		if (fs_get_varint(&l->r, &a) != 0 || fs_get_varint(&l->r, &b) != 0)
			return bad(l, "a bound is malformed");
		if (a > b || b > size)
			return bad(l, "bounds exceed their box");
		break;
	case TAG_SPLIT: {
		struct frame *f;
		if (d >= e->nvars)
			return bad(l, "a configuration is split");
		if (dn_grow_int(&l->stack, &l->capdepth, l->depth + 1, sizeof *l->stack) != 0)
			return dn_error_set(l->err, DN_ENOMEM, NULL, "out of memory loading the count's progress");
		f = &l->stack[l->depth];
		f->nch = fs_split(e, d, &f->dv, f->clo, f->chi);
		if (f->nch == 0)
			return bad(l, "a configuration is split");
		if (f->nch > l->want - l->nnodes)
			return bad(l, "more nodes than the header says");
		f->node = n;
		f->next = 0;
		f->lo = e->lo[f->dv];
		f->hi = e->hi[f->dv];
		x->first_child = l->nnodes;
		x->nchildren = f->nch;
		for (int i = 0; i < f->nch; i++) {
			struct fs_node *c = &l->nodes[l->nnodes++];
			memset(c, 0, sizeof *c);
			c->var = f->dv;
			c->lo = f->clo[i];
			c->hi = f->chi[i];
			c->parent = n;
		}
		l->depth++;
		return 0;
	}
	default:
		return bad(l, "unknown node tag");
	}
	x->status = tag;
	x->count = a;
	x->upper = b;
	return 0;
}

/* Reads the whole tree in pre-order, narrowing e->lo and e->hi directly
 * (no bounds: only the split rule and box sizes are needed; the caller
 * restores the box). 0 or -1. */
static int
read_tree(struct loader *l)
{
	struct fs_engine *e = l->e;
	int d = fs_next_active(e, 0);
	struct fs_node *root = &l->nodes[l->nnodes++];

	memset(root, 0, sizeof *root);
	root->var = d < e->nvars ? d : 0;
	root->lo = d < e->nvars ? e->lo[d] : 0;
	root->hi = d < e->nvars ? e->hi[d] : 0;
	root->parent = -1;
	if (read_node(l, 0) != 0)
		return -1;
	while (l->depth > 0) {
		struct frame *f = &l->stack[l->depth - 1];
		int32_t c;
		if (f->next == f->nch) {
			e->lo[f->dv] = f->lo;
			e->hi[f->dv] = f->hi;
			l->depth--;
			continue;
		}
		c = l->nodes[f->node].first_child + f->next++;
		e->lo[f->dv] = l->nodes[c].lo;
		e->hi[f->dv] = l->nodes[c].hi;
		if (read_node(l, c) != 0)       /* may move the stack: f is not used after */
			return -1;
	}
	return 0;
}

int
fs_progress_load(struct fs_engine *e, const void *buf, size_t len, struct dn_error *err)
{
	struct loader l;
	fs_count total, lower, upper;
	int64_t *lo = NULL, *hi = NULL;
	int rc = -1;

	memset(&l, 0, sizeof l);
	l.e = e;
	l.r.p = buf;
	l.r.n = len;
	l.err = err;
	if (buf == NULL || len < PROGRESS_HEADER + 8 || memcmp(buf, PROGRESS_MAGIC, 4) != 0)
		return dn_error_set(err, DN_EINVAL, NULL, "not a count's saved progress");
	l.r.at = 4;
	if (fs_get_le(&l.r, 2) != PROGRESS_VERSION || fs_get_le(&l.r, 2) != 0)
		return dn_error_set(err, DN_EINVAL, NULL, "the saved progress is of another version of the engine");
	if (fs_fnv1a(l.r.p, len - 8) != (uint64_t)fs_get_le(&(struct fs_rbuf){ l.r.p, len, len - 8 }, 8))
		return dn_error_set(err, DN_EINVAL, NULL, "the saved progress is corrupt: its checksum does not match");
	l.r.n = len - 8;        /* the records end before the checksum */
	{
		uint32_t nvars = (uint32_t)fs_get_le(&l.r, 4), ngraph = (uint32_t)fs_get_le(&l.r, 4);
		uint64_t fp = (uint64_t)fs_get_le(&l.r, 8);
		if (nvars != (uint32_t)e->nvars || ngraph != (uint32_t)e->nnodes_graph)
			return dn_error_set(err, DN_EINVAL, NULL, "the saved progress is of another query: %u variables "
			    "and %u expression nodes, this one has %d and %d", nvars, ngraph, e->nvars, (int)e->nnodes_graph);
		total = fs_get_le(&l.r, 16);
		lower = fs_get_le(&l.r, 16);
		upper = fs_get_le(&l.r, 16);
		l.want = (int32_t)(uint32_t)fs_get_le(&l.r, 4);
		for (int v = 0; v < e->nvars; v++) {
			fs_count n;
			if (fs_get_varint(&l.r, &n) != 0)
				return bad(&l, "a variable's size is malformed");
			if (n != (fs_count)e->vars[v].n)
				return dn_error_set(err, DN_EINVAL, NULL, "the saved progress is of another query: variable "
				    "%d has another number of values", v);
		}
		if (fp != progress_fingerprint(e))
			return dn_error_set(err, DN_EINVAL, NULL, "the saved progress is of another query "
			    "(space, budgets, constraints or cost model differ)");
		if (total != e->total || lower > upper || upper > total)
			return bad(&l, "inconsistent totals");
		if (l.want <= 0 || l.want > e->max_nodes || (size_t)l.want > l.r.n - l.r.at)
			return bad(&l, "impossible node count");
	}
	l.nodes = malloc(sizeof *l.nodes * (size_t)l.want);
	lo = malloc(sizeof *lo * ((size_t)e->nvars + 1));
	hi = malloc(sizeof *hi * ((size_t)e->nvars + 1));
	if (l.nodes == NULL || lo == NULL || hi == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory loading the count's progress");
		goto out;
	}
	memcpy(lo, e->lo, sizeof *lo * (size_t)e->nvars);
	memcpy(hi, e->hi, sizeof *hi * (size_t)e->nvars);
	rc = read_tree(&l);
	memcpy(e->lo, lo, sizeof *lo * (size_t)e->nvars);
	memcpy(e->hi, hi, sizeof *hi * (size_t)e->nvars);
	if (rc != 0)
		goto out;
	rc = -1;
	if (l.nnodes != l.want) {
		bad(&l, "fewer nodes than the header says");
		goto out;
	}
	if (l.r.at != l.r.n) {
		bad(&l, "bytes after the tree");
		goto out;
	}
	/* the inner nodes' sums, then the root's against the header */
	for (int32_t i = l.nnodes - 1; i >= 0; i--) {
		struct fs_node *x = &l.nodes[i];
		if (x->nchildren == 0)
			continue;
		x->count = x->upper = 0;
		for (int k = 0; k < x->nchildren; k++) {
			x->count = fs_add(x->count, l.nodes[x->first_child + k].count);
			x->upper = fs_add(x->upper, l.nodes[x->first_child + k].upper);
		}
		x->status = x->count == x->upper ? FS_MIXED : FS_UNKNOWN;
	}
	if (l.nodes[0].count != lower || l.nodes[0].upper != upper) {
		bad(&l, "the tree's counts are not the header's");
		goto out;
	}
	fs_jobs_drop(e);
	free(e->nodes);
	e->nodes = l.nodes;
	l.nodes = NULL;
	e->nnodes = e->capnodes = l.nnodes;
	e->lower = lower;
	e->upper = upper;
	e->counted = 1;
	e->deadline = 0;
	e->timed_out = lower != upper;
	rc = 0;
out:
	free(l.nodes);
	free(l.stack);
	free(lo);
	free(hi);
	return rc;
}
