/*
 * answer_z3.c - Z3's answers in the product (see answer_z3.h): the
 * enumeration cross-check of a count and the conflict of a query that
 * nothing satisfies. Both start from sq_z3_open (query_z3.c): the
 * grid of every variable as finite domains, then one assertion per part of
 * the query in q->parts order (validity, budgets, user constraints), which
 * is what lets the conflict label each part for an unsat core.
 */
#include "answer_z3.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "query_z3.h"
#include "z3c.h"

struct counter {
	int64_t n;
	double deadline;
	int late;
};

static int
count_model(void *ctx, const union expr_val *model)
{
	struct counter *c = ctx;

	(void)model;
	c->n++;
	if (fs_now() >= c->deadline) {
		c->late = 1;
		return 1;
	}
	return 0;
}

json_t *
ans_z3_count(struct sq_query *q, const struct fs_engine *e, int64_t max_models, unsigned rlimit, double seconds,
    struct dn_error *err)
{
	struct z3c z;
	struct counter c = { 0, fs_now() + seconds, 0 };
	struct dn_error zerr;
	Z3_ast *as = NULL;
	const char *stopped = NULL;
	int complete, exact = e->lower == e->upper, na;
	int64_t got;
	json_t *j;
	char eng[64];

	memset(&zerr, 0, sizeof zerr);
	if (e->ncvars > 0) {
		/* the engine counts a configuration when it fits at one of 1025
		 * values of a continuous parameter: a disjunction Z3 cannot
		 * enumerate without enumerating the values too (ans_z3_range
		 * answers for such parameters) */
		stopped = "continuous parameter";
		goto answer;
	}
	na = sq_z3_open(q, e, rlimit, seconds, c.deadline, 0, &z, &as, err);
	if (na < 0 && err->code == DN_ETIMEOUT) {
		memset(err, 0, sizeof *err);
		stopped = "deadline";   /* compiling the query took the time */
		goto answer;
	}
	if (na < 0)
		return NULL;
	got = z3c_enumerate(&z, as, na, max_models + 1, count_model, &c, &zerr);
	free(as);
	z3c_free(&z);
	if (got < 0 && zerr.code != DN_ETIMEOUT) {
		*err = zerr;
		return NULL;
	}
	if (c.late || (got < 0 && fs_now() >= c.deadline))
		stopped = "deadline";
	else if (got < 0)
		stopped = "resource limit";
	else if (c.n > max_models)
		stopped = "model limit";
	if (c.n > max_models)
		c.n = max_models;
answer:
	complete = stopped == NULL;
	fs_count_str(e->lower, eng, sizeof eng);
	j = json_pack("{s:s,s:s,s:I,s:b,s:s?,s:I,s:I}", "engine", "z3",
	    "method", "incremental enumeration with blocking clauses (DnnSAT), each check under Z3's resource limit",
	    "models", (json_int_t)c.n, "complete", complete, "stopped", stopped, "rlimit", (json_int_t)rlimit,
	    "max_models", (json_int_t)max_models);
	if (j == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	if (stopped == NULL)
		json_object_set_new(j, "stopped", json_null());
	json_object_set_new(j, "engine_feasible", exact ? json_string(eng) : json_null());
	json_object_set_new(j, "agrees", complete && exact ? json_boolean(e->lower == (fs_count)c.n) : json_null());
	return j;
}

#define CONFLICT_NOTE "nothing fits while these hold together, and dropping any one of them lets the others " \
	"hold together (other parts may conflict too); a budget's at_least (at_most for a minimum): the limit " \
	"from which something fits with every other part of the query kept, and nothing_at: a limit at which " \
	"nothing does yet"

static const char *
kind_name(int kind)
{
	return kind == 1 ? "budget" : kind == 2 ? "constraint" : "validity";
}

/*
 * Z3 decides the conflict with each continuous hyperparameter bound to the
 * model held at its default (over the reals, with the model's rounding of
 * them, Z3 does not decide within its limit even for MobileNetV2's width
 * multiplier), while the engine found nothing over their whole ranges: the
 * answer says so. Adds "held": {name: value} and a sentence to "note" when
 * there are any. 0, or -1 when out of memory.
 */
static int
held_at_defaults(const struct sq_query *q, const struct fs_engine *e, json_t *j)
{
	json_t *held;
	char note[1024];

	if (e->ncvars == 0)
		return 0;
	held = json_object();
	if (held == NULL)
		return -1;
	for (int c = 0; c < e->ncvars; c++)
		json_object_set_new(held, q->space.dims[e->cvars[c].dim].name, json_real(q->fixed[e->cvars[c].hp].r));
	snprintf(note, sizeof note, "%s. Z3 found the conflict with the continuous hyperparameters held at their "
	    "defaults (\"held\"); the budgets' at_least and at_most are the engine's, over their whole ranges",
	    json_string_value(json_object_get(j, "note")));
	json_object_set_new(j, "note", json_string(note));
	return json_object_set_new(j, "held", held);
}

json_t *
ans_z3_conflict(struct sq_query *q, const struct fs_engine *e, unsigned rlimit, double seconds,
    struct dn_error *err)
{
	struct z3c z;
	Z3_ast *as = NULL;
	int na, nb, np = q->nparts, ncore = 0;
	int *core = calloc((size_t)np + 1, sizeof *core);
	const char **labels = calloc((size_t)np + 1, sizeof *labels);
	struct dn_error zerr;
	enum z3c_answer a;
	json_t *j = NULL, *list;
	const char *note, *by = "z3";    /* who decided the conflict; NULL: nobody */
	double deadline = fs_now() + seconds;

	if (core == NULL || labels == NULL) {
		free(core);
		free(labels);
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	/* Z3 gets half the time: compiling the query by then, and the core's
	 * checks (about one per part) a share of it each; the engine's core
	 * (when Z3 does not decide) and the budgets' moves have the rest */
	memset(&zerr, 0, sizeof zerr);
	memset(&z, 0, sizeof z);
	na = sq_z3_open(q, e, rlimit, seconds / (2.0 * (np + 1)), fs_now() + seconds / 2, 0, &z, &as, &zerr);
	if (na < 0 && zerr.code != DN_ETIMEOUT) {
		*err = zerr;
		free(core);
		free(labels);
		return NULL;
	}
	a = Z3C_ERROR;          /* compiling took Z3's time: undecided */
	if (na >= 0) {
		nb = na - np;
		for (int i = 0; i < np; i++)
			labels[i] = q->parts[i].label;
		a = z3c_explain(&z, as, nb, as + nb, labels, np, core, &ncore, &zerr);
	}
	list = json_array();
	if (a == Z3C_ERROR && zerr.code != DN_ETIMEOUT) {
		*err = zerr;
		goto out;
	}
	if (a != Z3C_UNSAT && a != Z3C_SAT) {
		/* undecided within Z3's limits: the engine's existence checks,
		 * one per part (answer_core.c), in what is left of the time */
		int r = ans_core(q, deadline, core, &ncore, err);
		if (r < 0)
			goto out;
		by = r == 1 ? "engine" : NULL;
	}
	if (a == Z3C_SAT)
		note = "Z3 finds a configuration that satisfies every part: the engine and Z3 disagree (report it)";
	else if (by == NULL)
		note = "neither Z3 within its limits nor the engine's existence checks before the deadline "
		    "decided it";
	else if (ncore == 0)
		note = "the space's values alone admit no configuration";
	else if (strcmp(by, "z3") == 0)
		note = CONFLICT_NOTE;
	else
		note = CONFLICT_NOTE " (Z3 could not decide it within its limits: found by the engine's "
		    "existence checks, one per part)";
	for (int c = 0; a != Z3C_SAT && by != NULL && c < ncore; c++) {
		const struct sq_part *p = &q->parts[core[c]];
		json_t *item = json_pack("{s:s,s:s,s:s}", "constraint", p->label, "path", p->path, "kind",
		    kind_name(p->kind));
		if (item == NULL)
			goto oom;
		if (p->kind == 1 && p->value >= 0) {
			/* the engine's, exact on the grid (answer_budget.c); past the
			 * deadline the core stands and the bracket is what was found */
			struct dn_error merr;
			memset(&merr, 0, sizeof merr);
			if (ans_budget_move(q, core[c], deadline, item, &merr) != 0) {
				json_decref(item);
				if (merr.code != 0) {
					*err = merr;
					goto out;
				}
				goto oom;
			}
		}
		json_array_append_new(list, item);
	}
	j = json_pack("{s:b,s:o,s:s,s:s?}", "decided", by != NULL, "conflict", list, "note", note, "found_by", by);
	list = NULL;
	if (j == NULL || (strcmp(by != NULL ? by : "", "z3") == 0 && held_at_defaults(q, e, j) != 0))
		goto oom;
	goto out;
oom:
	json_decref(j);
	j = NULL;
	dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
out:
	json_decref(list);
	free(as);
	free(core);
	free(labels);
	z3c_free(&z);
	return j;
}
