/*
 * fset_jobdata.c - a distributed count's job data: the projection of a
 * job's box (fs_project_count) as bytes that the job commits with its count,
 * and back, checked, into the stored tree of the replica that assembles
 * the final answer (fs_jobs_graft_data), where fs_project merges it
 * instead of searching the box again.
 *
 * The bytes (version 1; integers little-endian, varints as fset_bytes.c):
 *
 *   offset  size
 *   0       4    magic "DNJD"
 *   4       2    version (1)
 *   6       2    flags (0)
 *   8       4    nvars: engine variables
 *   12      4    ncvars: continuous variables
 *   16      16   the job's exact count (128 bits)
 *   32      ...  per variable: its number of runs (varint), then per run
 *                its start (the first run: the position; later ones: the
 *                gap after the previous run's end + 2, so runs are sorted,
 *                disjoint and not adjacent by construction) and its length
 *                - 1 (varints); a grid above FS_PROJECT_MARKABLE has no
 *                runs but its largest present position + 1 (varint, 0 none)
 *           ...  per continuous variable: 0 (no cell), or 1 then the first
 *                cell and the last - the first (varints)
 *   len-8   8    FNV-1a 64 of every byte before it
 *
 * A var's largest present position is its last run's end (none: -1).
 *
 * Data is untrusted (it comes back from a database): the loader checks the
 * checksum, version, this engine's variable counts, that the count is the
 * committed one, that every run and position lies inside the leaf's box
 * (the ranges on its path from the root) and every cell inside its var's
 * grid, and that nothing trails; it grafts only then (a refused payload
 * changes nothing). As with fset_progress.c the checksum catches
 * corruption, not forgery.
 *
 * Invariants: e->job_proj[n] belongs to stored node n while n is the
 * childless exact leaf of that count (fs_jobs_proj checks it at every
 * use); a new tree drops them all (fs_jobs_drop).
 */
#include "fset_priv.h"
#include "fset_project.h"

#include <stdlib.h>
#include <string.h>

#define JOBDATA_MAGIC "DNJD"
#define JOBDATA_VERSION 1
#define JOBDATA_HEADER 32

static int
save_proj(const struct fs_engine *e, const struct fs_box_proj *bp, void **buf, size_t *len)
{
	struct fs_wbuf w = { NULL, 0, 0, 0 };

	fs_put_bytes(&w, JOBDATA_MAGIC, 4);
	fs_put_le(&w, JOBDATA_VERSION, 2);
	fs_put_le(&w, 0, 2);
	fs_put_le(&w, (fs_count)(uint32_t)e->nvars, 4);
	fs_put_le(&w, (fs_count)(uint32_t)e->ncvars, 4);
	fs_put_le(&w, bp->count, 16);
	for (int v = 0; v < e->nvars; v++) {
		fs_put_varint(&w, (fs_count)bp->nruns[v]);
		for (int r = 0; r < bp->nruns[v]; r++) {
			int64_t a = bp->runs[v][2 * r], b = bp->runs[v][2 * r + 1];
			fs_put_varint(&w, (fs_count)(r == 0 ? a : a - (bp->runs[v][2 * r - 1] + 2)));
			fs_put_varint(&w, (fs_count)(b - a));
		}
		if (e->vars[v].n > FS_PROJECT_MARKABLE)
			fs_put_varint(&w, (fs_count)(bp->maxpos[v] + 1));
	}
	for (int c = 0; c < e->ncvars; c++) {
		uint8_t some = bp->cell_lo[c] <= bp->cell_hi[c];
		fs_put_bytes(&w, &some, 1);
		if (some) {
			fs_put_varint(&w, (fs_count)bp->cell_lo[c]);
			fs_put_varint(&w, (fs_count)(bp->cell_hi[c] - bp->cell_lo[c]));
		}
	}
	if (!w.oom)
		fs_put_le(&w, fs_fnv1a(w.p, w.n), 8);
	if (w.oom) {
		free(w.p);
		return -1;
	}
	*buf = w.p;
	*len = w.n;
	return 0;
}

int
fs_jobs_run(struct fs_engine *e, const char *path, fs_count *count, void **data, size_t *len,
    struct dn_error *err)
{
	struct fs_box_proj bp;
	int rc;

	*data = NULL;
	*len = 0;
	/* fs_jobs_box (fset_jobs.c) counts with the box's tree stored and
	 * projects it while the box is entered */
	rc = fs_jobs_box(e, path, count, &bp, err);
	if (rc != 0)
		return rc;
	bp.count = *count;
	rc = save_proj(e, &bp, data, len);
	fs_box_proj_free(&bp);
	if (rc != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory writing a job's data");
	return 0;
}

/* ---- reading ---- */

static int
bad(struct dn_error *err, const char *what)
{
	return dn_error_set(err, DN_EINVAL, "data", "a job's data is malformed: %s", what);
}

/* Leaf node's box: per var the range its path narrows it to, else the
 * whole grid. */
static void
leaf_box(const struct fs_engine *e, int32_t node, int64_t *lo, int64_t *hi, uint8_t *set)
{
	memset(set, 0, (size_t)e->nvars + 1);
	for (int32_t x = node; x >= 0; x = e->nodes[x].parent) {
		int v = e->nodes[x].var;
		if (e->nvars > 0 && !set[v]) {
			set[v] = 1;
			lo[v] = e->nodes[x].lo;
			hi[v] = e->nodes[x].hi;
		}
	}
	for (int v = 0; v < e->nvars; v++)
		if (!set[v]) {
			lo[v] = 0;
			hi[v] = e->vars[v].n - 1;
		}
}

/* A varint that must be at most `max`, as int64. 0 or -1. */
static int
get_small(struct fs_rbuf *r, int64_t max, int64_t *x)
{
	fs_count v;

	if (fs_get_varint(r, &v) != 0 || max < 0 || v > (fs_count)max)
		return -1;
	*x = (int64_t)v;
	return 0;
}

/* Var v's runs and largest position into bp, inside [lo, hi]. 0 or -1. */
static int
read_var(const struct fs_engine *e, struct fs_rbuf *r, int v, int64_t lo, int64_t hi, struct fs_box_proj *bp,
    struct dn_error *err)
{
	int64_t n, end = -2;

	/* a run takes two bytes at least: no allocation beyond the data's size */
	if (get_small(r, hi - lo + 1, &n) != 0 || (size_t)n > (r->n - r->at) / 2)
		return bad(err, "a variable's number of runs");
	if (n > 0 && e->vars[v].n > FS_PROJECT_MARKABLE)
		return bad(err, "runs of a variable too large to mark");
	if (n > 0 && (bp->runs[v] = malloc(sizeof *bp->runs[v] * (size_t)(2 * n))) == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory reading a job's data");
	for (int64_t i = 0; i < n; i++) {
		int64_t from = i == 0 ? 0 : end + 2, gap, span, a;
		if (get_small(r, hi - from, &gap) != 0 || (a = from + gap) < lo || get_small(r, hi - a, &span) != 0)
			return bad(err, "a run is outside the job's box");
		bp->runs[v][2 * i] = a;
		bp->runs[v][2 * i + 1] = end = a + span;
	}
	bp->nruns[v] = (int)n;
	bp->maxpos[v] = n > 0 ? end : -1;
	if (e->vars[v].n > FS_PROJECT_MARKABLE) {
		int64_t m;
		if (get_small(r, hi + 1, &m) != 0 || (m > 0 && m - 1 < lo))
			return bad(err, "a largest position is outside the job's box");
		bp->maxpos[v] = m - 1;
	}
	return 0;
}

/* Reads data for leaf node's count into bp. 0 or -1 with err. */
static int
load_proj(const struct fs_engine *e, int32_t node, fs_count count, const uint8_t *p, size_t len,
    struct fs_box_proj *bp, struct dn_error *err)
{
	struct fs_rbuf r = { p, len, 0 };
	int64_t *lo = NULL, *hi = NULL;
	uint8_t *set = NULL;
	int rc = -1;

	if (p == NULL || len < JOBDATA_HEADER + 8 || memcmp(p, JOBDATA_MAGIC, 4) != 0)
		return bad(err, "not a job's data");
	r.at = 4;
	if (fs_get_le(&r, 2) != JOBDATA_VERSION || fs_get_le(&r, 2) != 0)
		return bad(err, "another version of the engine wrote it");
	if (fs_fnv1a(p, len - 8) != (uint64_t)fs_get_le(&(struct fs_rbuf){ p, len, len - 8 }, 8))
		return bad(err, "its checksum does not match");
	r.n = len - 8;
	if (fs_get_le(&r, 4) != (fs_count)(uint32_t)e->nvars || fs_get_le(&r, 4) != (fs_count)(uint32_t)e->ncvars)
		return bad(err, "another query's variables");
	if (fs_get_le(&r, 16) != count)
		return bad(err, "another count than the job's");
	if (fs_box_proj_alloc(bp, e->nvars, e->ncvars) != 0 ||
	    (lo = malloc(sizeof *lo * ((size_t)e->nvars + 1))) == NULL ||
	    (hi = malloc(sizeof *hi * ((size_t)e->nvars + 1))) == NULL || (set = malloc((size_t)e->nvars + 1)) == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory reading a job's data");
		goto out;
	}
	bp->count = count;
	leaf_box(e, node, lo, hi, set);
	for (int v = 0; v < e->nvars; v++)
		if (read_var(e, &r, v, lo[v], hi[v], bp, err) != 0)
			goto out;
	for (int c = 0; c < e->ncvars; c++) {
		int64_t cells = (int64_t)1 << e->cvars[c].bits, a, b;
		if (r.at >= r.n || r.p[r.at] > 1) {
			bad(err, "a continuous variable's cells");
			goto out;
		}
		if (r.p[r.at++] == 0)
			continue;
		if (get_small(&r, cells - 1, &a) != 0 || get_small(&r, cells - 1 - a, &b) != 0) {
			bad(err, "a continuous variable's cells are off its grid");
			goto out;
		}
		bp->cell_lo[c] = a;
		bp->cell_hi[c] = a + b;
	}
	if (r.at != r.n) {
		bad(err, "bytes after the data");
		goto out;
	}
	rc = 0;
out:
	free(lo);
	free(hi);
	free(set);
	if (rc != 0)
		fs_box_proj_free(bp);
	return rc;
}

int
fs_jobs_graft_data(struct fs_engine *e, int32_t node, fs_count count, const void *data, size_t len,
    struct dn_error *err)
{
	struct fs_box_proj bp, *keep;

	if (node < 0 || node >= e->nnodes || e->nodes[node].nchildren != 0)
		return dn_error_set(err, DN_EINVAL, "node", "node %d is not a leaf of the tree (%d nodes)", (int)node,
		    (int)e->nnodes);
	if (load_proj(e, node, count, data, len, &bp, err) != 0)
		return -1;
	if (e->njob_proj < e->nnodes) {
		struct fs_box_proj **t = realloc(e->job_proj, sizeof *t * (size_t)e->nnodes);
		if (t == NULL) {
			fs_box_proj_free(&bp);
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory grafting a job's data");
		}
		memset(t + e->njob_proj, 0, sizeof *t * (size_t)(e->nnodes - e->njob_proj));
		e->job_proj = t;
		e->njob_proj = e->nnodes;
	}
	if ((keep = malloc(sizeof *keep)) == NULL) {
		fs_box_proj_free(&bp);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory grafting a job's data");
	}
	if (fs_jobs_graft(e, node, count, err) != 0) {
		fs_box_proj_free(&bp);
		free(keep);
		return -1;
	}
	*keep = bp;
	if (e->job_proj[node] != NULL) {
		fs_box_proj_free(e->job_proj[node]);
		free(e->job_proj[node]);
	}
	e->job_proj[node] = keep;
	return 0;
}

const struct fs_box_proj *
fs_jobs_proj(const struct fs_engine *e, int32_t node)
{
	const struct fs_box_proj *bp;
	const struct fs_node *x;

	if (node < 0 || node >= e->njob_proj || node >= e->nnodes || (bp = e->job_proj[node]) == NULL)
		return NULL;
	x = &e->nodes[node];
	if (x->nchildren != 0 || x->count != bp->count || x->upper != bp->count)
		return NULL;
	return bp;
}

void
fs_jobs_drop(struct fs_engine *e)
{
	for (int32_t i = 0; i < e->njob_proj; i++)
		if (e->job_proj[i] != NULL) {
			fs_box_proj_free(e->job_proj[i]);
			free(e->job_proj[i]);
		}
	free(e->job_proj);
	e->job_proj = NULL;
	e->njob_proj = 0;
}
