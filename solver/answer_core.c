/*
 * answer_core.c - existence checks by the engine, and with them a minimal
 * set of a query's parts that admits no configuration: ans_exists and
 * ans_core (answer.h).
 *
 * ans_exists decides one boolean node of the query's graph over the whole
 * space (fs_init_root, fs_first_in_box): exact on the grid, as counts are.
 * ans_core drops the query's parts one at a time (deletion: a part whose
 * removal still leaves nothing feasible goes for good), so that what stays
 * conflicts and each of its parts is needed: dropped, the others fit
 * together (the set only shrinks, and dropping parts from a set that fits
 * keeps it fitting). It tries the model's validity first, then the user's
 * constraints, then the budgets, so that the set keeps what a user can
 * move. One check per part.
 *
 * Z3's unsat core (answer_z3.c) decides the same question symbolically;
 * on ResNet's memory over its example space it decides nothing within its
 * resource limit (11 s of work), while these checks take milliseconds:
 * they answer when Z3 cannot.
 */
#include "answer.h"

#include <stdlib.h>
#include <string.h>

int
ans_exists(struct sq_query *q, expr_id root, double deadline, union expr_val *config, int *filled,
    struct dn_error *err)
{
	struct fs_engine e;
	int64_t *pos;
	int r;
	double left = deadline - fs_now();

	if (filled != NULL)
		*filled = 0;
	if (left <= 0)
		return 2;
	if (fs_init_root(&e, q, root, err) != 0) {
		fs_free(&e);
		return -1;
	}
	e.deadline = fs_now_plus(left);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	if (pos == NULL) {
		fs_free(&e);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	r = fs_first_in_box(&e, pos, err);
	if (r == 0 && config != NULL && filled != NULL && e.ncvars == 0) {
		fs_config_of(&e, pos, config);
		*filled = 1;
	}
	if (r == 1 && e.timed_out)
		r = 2;          /* none found before the deadline: undecided */
	else if (r >= 0)
		r = r == 0;     /* fs_first_in_box: 0 found, 1 none */
	free(pos);
	fs_free(&e);
	return r;
}

/* Do the parts with keep[x] set admit a configuration? As ans_exists. */
static int
parts_fit(struct sq_query *q, const char *keep, double deadline, struct dn_error *err)
{
	struct expr_graph *g = (struct expr_graph *)cm_model_graph(q->model);
	expr_id root = EXPR_NONE;

	for (int x = 0; x < q->nparts; x++)
		if (keep[x])
			root = root == EXPR_NONE ? q->parts[x].ok : expr_and(g, root, q->parts[x].ok);
	if (root == EXPR_NONE)  /* no part: the space alone */
		root = expr_le(g, expr_int(g, 0), expr_int(g, 0));
	if (root < 0 || dn_error_isset(&g->err))
		return dn_error_set(err, DN_EINTERNAL, NULL, "could not build the parts' conjunction: %s",
		    g->err.message);
	return ans_exists(q, root, deadline, NULL, NULL, err);
}

/* The order parts are tried in: validity, constraints, budgets. */
static int
drop_rank(int kind)
{
	return kind == 1 ? 2 : kind == 2 ? 1 : 0;
}

int
ans_core(struct sq_query *q, double deadline, int *core, int *ncore, struct dn_error *err)
{
	char *keep = malloc((size_t)q->nparts + 1);
	int r = 1;

	*ncore = 0;
	if (keep == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	memset(keep, 1, (size_t)q->nparts + 1);
	for (int rank = 0; rank < 3 && r == 1; rank++)
		for (int i = 0; i < q->nparts && r == 1; i++) {
			int fits;

			if (drop_rank(q->parts[i].kind) != rank)
				continue;
			keep[i] = 0;
			fits = parts_fit(q, keep, deadline, err);
			if (fits < 0)
				r = -1;
			else if (fits == 2)
				r = 0;          /* the deadline: undecided */
			else if (fits == 1)
				keep[i] = 1;    /* needed: without it the others fit */
		}
	for (int i = 0; r == 1 && i < q->nparts; i++)
		if (keep[i])
			core[(*ncore)++] = i;
	if (r != 1)
		*ncore = 0;
	free(keep);
	return r;
}
