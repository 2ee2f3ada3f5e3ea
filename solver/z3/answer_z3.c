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

/* Configurations per Z3 model: Z3 assigns the model's hyperparameters and
 * the positions of the selectors (sq_z3_selects: vars that pass through and
 * are nested or hold nested vars), so each model stands for every position
 * of the other discrete space parameters that pass through (a learning
 * rate listed as a choice at the top level), which the engine counts as
 * configurations. */
static fs_count
configs_per_model(const struct fs_engine *e)
{
	fs_count m = 1;

	for (int v = 0; v < e->nvars; v++)
		if (e->vars[v].hp < 0 && !sq_z3_selects(&e->vars[v]))
			m *= (fs_count)e->vars[v].n;
	return m;
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
	fs_count per = configs_per_model(e);
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
	/* models: hyperparameter assignments; configurations: times the
	 * positions of the parameters that pass through */
	json_object_set_new(j, "configurations_per_model", json_integer(per > 0 && per <= (fs_count)INT64_MAX ?
	    (json_int_t)per : 0));
	json_object_set_new(j, "agrees", complete && exact ? json_boolean(e->lower == (fs_count)c.n * per) :
	    json_null());
	return j;
}

/*
 * Z3 decides the conflict with each continuous hyperparameter bound to the
 * model held at its default (over the reals, with the model's rounding of
 * them, Z3 does not decide within its limit even for MobileNetV2's width
 * multiplier), while the engine's conflict is over their whole ranges: the
 * answer names them. Adds "held": {name: value} to j when there are any.
 * 0, or -1 when out of memory.
 */
static int
held_at_defaults(const struct sq_query *q, const struct fs_engine *e, json_t *j)
{
	json_t *held;

	if (e->ncvars == 0)
		return 0;
	held = json_object();
	if (held == NULL)
		return -1;
	for (int c = 0; c < e->ncvars; c++)
		json_object_set_new(held, q->space.dims[e->cvars[c].dim].name, json_real(q->fixed[e->cvars[c].hp].r));
	return json_object_set_new(j, "held", held);
}

/* Z3's unsat core of q's parts: 1 decided (core, *ncore), 2 Z3 finds a
 * configuration that satisfies every part, 0 undecided within its limits
 * (compiling included), -1 error (err). */
static int
z3_core(struct sq_query *q, const struct fs_engine *e, unsigned rlimit, double seconds, int *core, int *ncore,
    struct dn_error *err)
{
	struct z3c z;
	Z3_ast *as = NULL;
	int na, np = q->nparts, r;
	const char **labels = calloc((size_t)np + 1, sizeof *labels);
	struct dn_error zerr;
	enum z3c_answer a = Z3C_ERROR;

	*ncore = 0;
	if (labels == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	memset(&zerr, 0, sizeof zerr);
	memset(&z, 0, sizeof z);
	/* about one check per part, each a share of the time; compiling the
	 * query by the end of it */
	na = sq_z3_open(q, e, rlimit, seconds / (np + 1), fs_now() + seconds, 0, &z, &as, &zerr);
	if (na >= 0) {
		for (int i = 0; i < np; i++)
			labels[i] = q->parts[i].label;
		a = z3c_explain(&z, as, na - np, as + na - np, labels, np, core, ncore, &zerr);
	}
	if (a == Z3C_ERROR && zerr.code != DN_ETIMEOUT) {
		*err = zerr;
		r = -1;
	} else
		r = a == Z3C_UNSAT ? 1 : a == Z3C_SAT ? 2 : 0;
	if (r != 1)
		*ncore = 0;
	free(as);
	free(labels);
	z3c_free(&z);
	return r;
}

int
ans_z3_conflict_check(struct sq_query *q, const struct fs_engine *e, json_t *conflict, unsigned rlimit,
    double seconds, struct dn_error *err)
{
	double deadline = fs_now() + seconds;
	int *core = calloc((size_t)q->nparts + 1, sizeof *core), ncore = 0, r, v = 2;
	json_t *z = NULL, *paths = json_array();
	const char *note;

	if (core == NULL || paths == NULL)
		goto oom;
	/* Z3 half the time, the engine's verification of its core the rest */
	r = z3_core(q, e, rlimit, seconds / 2, core, &ncore, err);
	if (r < 0)
		goto fail;
	if (r == 1 && e->ncvars == 0) {
		v = ans_core_verify(q, core, ncore, deadline, err);
		if (v < 0)
			goto fail;
	}
	for (int c = 0; c < ncore; c++)
		if (json_array_append_new(paths, json_string(q->parts[core[c]].path)) != 0)
			goto oom;
	if (r == 2)
		note = "Z3 finds a configuration that satisfies every part, where the engine counted none: they "
		    "disagree (please report it)";
	else if (r == 0)
		note = "Z3 did not decide it within its limits";
	else if (e->ncvars > 0)
		note = "Z3's unsat core with the continuous hyperparameters held at their defaults (\"held\"): not "
		    "compared with the engine's, which is over their whole ranges";
	else if (v == 1)
		note = "Z3's unsat core is a minimal conflict by the engine's checks too (it may differ from the "
		    "engine's: a query can have several)";
	else if (v == 0)
		note = "Z3's unsat core is not a minimal conflict by the engine's checks: they disagree (please "
		    "report it)";
	else
		note = "Z3's unsat core, not verified by the engine before the deadline";
	z = json_pack("{s:s,s:b,s:O,s:s}", "method", "unsat core of the query's parts, each check under Z3's "
	    "resource limit", "decided", r == 1, "conflict", paths, "note", note);
	if (z == NULL || held_at_defaults(q, e, z) != 0)
		goto oom;
	json_object_set_new(z, "agrees", r == 2 || v == 0 ? json_false() : v == 1 ? json_true() : json_null());
	if (json_object_set_new(conflict, "z3", z) != 0) {
		z = NULL;       /* taken */
		goto oom;
	}
	json_decref(paths);
	free(core);
	return 0;
oom:
	json_decref(z);
	dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
fail:
	json_decref(paths);
	free(core);
	return -1;
}
