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
 * untouched. NULL with err when nothing fits. New reference. */
json_t *fs_reduced_space(const struct fs_engine *e, const struct fs_projection *p,
    struct dn_error *err);

#endif
