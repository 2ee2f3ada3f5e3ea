/*
 * fset_project.h - projections of the feasible set (fset_project.c): the
 * values of each variable that occur in a feasible configuration, the
 * reduced NNI space, the largest feasible values.
 */
#ifndef DN_FSET_PROJECT_H
#define DN_FSET_PROJECT_H

#include "fset.h"

struct fs_projection {
	int nvars;
	uint8_t **present;      /* per var and position: in a feasible configuration (NULL: huge grid) */
	uint8_t **possible;     /* ... or in a box a deadline left undecided */
	int64_t *max_certain;   /* per var: largest position certainly feasible, -1 none */
	int64_t *max_possible;
	int ncvars;             /* continuous vars (struct fs_cvar): */
	double *real_lo;        /* the range of their values that may fit, an outer hull at */
	double *real_hi;        /* their resolution (every feasible value is inside); NAN none */
};

/* Needs fs_count_all first. 0 or -1. */
int fs_project(struct fs_engine *e, struct fs_projection *p, struct dn_error *err);
void fs_projection_free(struct fs_projection *p);

/* The reduced space in NNI's format: every parameter keeps only the values
 * that occur in a feasible configuration (a randint stays a randint when the
 * values left are contiguous); parameters the model does not use are
 * untouched. After a deadline the values of undecided boxes are kept too, so
 * no value that fits is ever left out. NULL with err when nothing fits. New
 * reference. */
json_t *fs_reduced_space(const struct fs_engine *e, const struct fs_projection *p,
    struct dn_error *err);

/* Grids with more positions than this keep only their largest present
 * position (a position list of 2M bytes per var and side is the most a
 * projection allocates: the service's memory guard counts on it). */
#define FS_PROJECT_MARKABLE 2000000

/*
 * One box's projection, what a distributed count's job sends along with
 * its count (fset_jobdata.c) so that the final answer need not search its
 * box again: per var, the positions that occur in a feasible configuration
 * of the box as sorted, disjoint, non-adjacent runs runs[v][2i] to
 * runs[v][2i + 1] (none for grids above FS_PROJECT_MARKABLE), the largest
 * such position (-1 none); per continuous var the hull of finest cells
 * (cell_lo > cell_hi: empty). fs_project_count counts the current box at
 * var d as fs_count_box (no tree stored) and marks every box it decides as
 * it goes, as fs_project's walk marks a stored FULL or EMPTY leaf: 0
 * (*count == *upper, bp filled), 1 stopped (a deadline, e->progress: bp
 * empty), -1 with err (out of memory). fs_box_proj_alloc: an empty one (0
 * or -1 out of memory).
 */
struct fs_box_proj {
	int nvars, ncvars;
	int *nruns;
	int64_t **runs;
	int64_t *maxpos;
	int64_t *cell_lo, *cell_hi;
	fs_count count;         /* the box's exact count, which it belongs to */
};
int fs_project_count(struct fs_engine *e, int d, fs_count *count, fs_count *upper, struct fs_box_proj *bp,
    struct dn_error *err);
int fs_box_proj_alloc(struct fs_box_proj *bp, int nvars, int ncvars);
void fs_box_proj_free(struct fs_box_proj *bp);

/* fs_jobs_count that projects the box as it counts it (fs_project_count)
 * into *bp (fset_jobs.c): 0 (bp filled), 1 stopped (as fs_jobs_count), -1
 * with err. */
int fs_jobs_box(struct fs_engine *e, const char *path, fs_count *count, struct fs_box_proj *bp,
    struct dn_error *err);

/* The projection grafted with stored leaf `node`'s job (fset_jobdata.c),
 * or NULL: none, or the leaf is no longer the exact childless leaf of
 * that count. */
const struct fs_box_proj *fs_jobs_proj(const struct fs_engine *e, int32_t node);

#endif
