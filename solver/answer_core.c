/*
 * answer_core.c - existence checks by the engine, and with them why
 * nothing fits: a minimal set of a query's parts that admits no
 * configuration (ans_core), checked (ans_core_verify), and the answer's
 * "conflict" (ans_conflict, with each budget's move: answer_budget.c).
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
 * Z3's unsat core (answer_z3.c) decides the same question symbolically and
 * is the cross-check on request ("engine": "z3"). It was the answer until
 * 2026-12-05: on ResNet's memory over its example space it decided nothing
 * within its resource limit (after 7 s of building its tables and 4 s of
 * work), and on ResNet-50's latency over two batch sizes it took 3.5 s;
 * these checks take 0.3 s and 0.05 s there, and are exact.
 */
#include "answer.h"

#include <math.h>
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

int
ans_core_verify(struct sq_query *q, const int *core, int ncore, double deadline, struct dn_error *err)
{
	char *keep = calloc((size_t)q->nparts + 1, 1);
	int r;

	if (keep == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	for (int c = 0; c < ncore; c++)
		keep[core[c]] = 1;
	r = parts_fit(q, keep, deadline, err);
	r = r == 0 ? 1 : r == 1 ? 0 : r;        /* together: nothing may fit */
	for (int c = 0; c < ncore && r == 1; c++) {
		int fits;

		keep[core[c]] = 0;
		fits = parts_fit(q, keep, deadline, err);
		keep[core[c]] = 1;
		r = fits == 1 ? 1 : fits == 0 ? 0 : fits;      /* each needed: without it something fits */
	}
	free(keep);
	return r;
}

#define CONFLICT_NOTE "nothing fits while these hold together, and dropping any one of them lets the others " \
	"hold together (other parts may conflict too); a budget's at_least (at_most for a minimum): the limit " \
	"from which something fits with every other part of the query kept, and nothing_at: a limit at which " \
	"nothing does yet"

/* At most this many distinct rules are checked and named. */
#define RULES_MAX 64
#define RULES_NAMED 8

/* ans_failing_rules' question for a conflict: over the whole space,
 * before the deadline. */
struct exists_ctx {
	struct sq_query *q;
	double deadline;
};

static int
exists_by(void *ctx, expr_id root, struct dn_error *err)
{
	const struct exists_ctx *c = ctx;

	return ans_exists(c->q, root, c->deadline, NULL, NULL, err);
}

int
ans_failing_rules(struct sq_query *q, int part, ans_exists_fn exists, void *ctx, json_t *item,
    struct dn_error *err)
{
	int n = cm_model_nrules(q->model), nseen = 0, complete = 1, nfail = 0;
	expr_id seen[RULES_MAX];
	const char *seen_text[RULES_MAX];
	json_t *named[RULES_MAX];       /* seen[k]'s entry in the list, or NULL */
	json_t *list;
	const char *path, *text;

	if (q->parts[part].kind != 0 || q->parts[part].ok != cm_model_metric(q->model, CM_M_VALID))
		return 0;
	list = json_array();
	if (list == NULL || json_object_set_new(item, "rules", list) != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < n; i++) {
		expr_id ok = cm_model_rule(q->model, i, &path, &text);
		int k = 0, r;

		/* a rule is its condition and its text: two rules of one
		 * condition (both constant false on this device) are two rules */
		while (k < nseen && (seen[k] != ok || strcmp(seen_text[k], text) != 0))
			k++;
		if (k < nseen) {        /* the same rule at another place */
			if (named[k] != NULL)
				json_object_set_new(named[k], "places",
				    json_integer(json_integer_value(json_object_get(named[k], "places")) + 1));
			continue;
		}
		if (!complete || nseen == RULES_MAX) {
			complete = 0;   /* past the cap or the deadline: not checked */
			continue;
		}
		seen[nseen] = ok;
		seen_text[nseen] = text;
		named[nseen++] = NULL;
		r = exists(ctx, ok, err);
		if (r < 0)
			return -1;
		if (r == 2)
			complete = 0;   /* the deadline: the rules found so far */
		nfail += r == 0;
		if (r == 0 && json_array_size(list) < RULES_NAMED) {
			named[k] = json_pack("{s:s,s:s,s:i}", "rule", text, "path", path, "places", 1);
			if (json_array_append_new(list, named[k]) != 0)
				return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		}
	}
	if (json_object_set_new(item, "rules_failing", json_integer(nfail)) != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	return json_object_set_new(item, "rules_complete", json_boolean(complete));
}

/* A part's kind as answers name it. */
static const char *
part_kind(int kind)
{
	return kind == 1 ? "budget" : kind == 2 ? "constraint" : "validity";
}

json_t *
ans_conflict(struct sq_query *q, double seconds, struct dn_error *err)
{
	double deadline = fs_now() + seconds;
	int *core = calloc((size_t)q->nparts + 1, sizeof *core), ncore = 0, r;
	json_t *list = json_array(), *j = NULL;

	if (core == NULL || list == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	r = ans_core(q, deadline, core, &ncore, err);
	if (r < 0)
		goto out;
	for (int c = 0; c < ncore; c++) {
		const struct sq_part *p = &q->parts[core[c]];
		json_t *item = json_pack("{s:s,s:s,s:s}", "constraint", p->label, "path", p->path, "kind",
		    part_kind(p->kind));

		if (item == NULL || json_array_append_new(list, item) != 0)
			goto oom;
		/* past the deadline the core stands and the bracket is what was found */
		if (p->kind == 1 && p->value >= 0 && ans_budget_move(q, core[c], deadline, item, err) != 0) {
			if (!dn_error_isset(err))
				goto oom;
			goto out;
		}
		{
			struct exists_ctx ec = { q, deadline };
			if (ans_failing_rules(q, core[c], exists_by, &ec, item, err) != 0)
				goto out;
		}
	}
	j = json_pack("{s:b,s:O,s:s}", "decided", r == 1, "conflict", list, "note",
	    r != 1 ? "the engine's existence checks did not decide it before the deadline" :
	    ncore == 0 ? "the space's values alone admit no configuration" : CONFLICT_NOTE);
	if (j != NULL)
		goto out;
oom:
	dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
out:
	json_decref(list);
	free(core);
	return j;
}
