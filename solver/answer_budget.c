/*
 * answer_budget.c - how far one budget of a query that nothing satisfies
 * would have to move for something to fit, every other part of the query
 * kept: ans_budget_move (answer.h), by the engine.
 *
 * The limit is bracketed by existence checks of the engine (ans_exists,
 * answer_core.c, of "the other parts and value <= L"), each exact on
 * the grid as counts are: `bad`, a limit at which nothing fits (the
 * budget's own to start), and `good`, one at which something does. Where
 * the space has no continuous hyperparameter, every configuration found
 * gives its own value of the budget's quantity (a tape of that one node),
 * and good becomes that value: an attained one, so the bisection ends on
 * the smallest value any configuration that keeps the other parts has (to
 * 1e-9 of it for reals, exactly for integers), not on a midpoint. With
 * continuous hyperparameters, whose configurations fit at some value of a
 * grid, it bisects the limit alone to the same width.
 *
 * Before (cost model 1.4.6 and earlier) Z3 bisected this, each step one
 * check under its resource limit: on ResNet-50's latency it decided none
 * within the limit (at_least null after 3 s for a two-configuration
 * space), and with a continuous hyperparameter it held it at its default,
 * so at_least overstated what a narrower network needs.
 */
#include "answer.h"
#include "expr_tape.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The search for one budget: the part, the rest of the query as one
 * boolean node, and a tape of the budget's quantity for witnesses. */
struct move {
	struct sq_query *q;
	struct expr_graph *g;
	expr_id value, rest;    /* rest: EXPR_NONE when the budget is the only part */
	int real, up;           /* up: a most (value <= limit) relaxes upwards */
	double deadline;
	struct expr_tape tape;
	int have_tape;
	union expr_val *config, *scratch;
};

/* Does something keep every other part with the budget's limit at L?
 * 1 yes (*got: the quantity's value in the configuration found, NAN when
 * it cannot be read: continuous hyperparameters), 0 no, 2 undecided (the
 * deadline), -1 error (err). */
static int
fits_at(struct move *m, double L, double *got, struct dn_error *err)
{
	expr_id bound, cmp, root;
	int r, filled;

	*got = NAN;
	if (isinf(L))       /* no limit: the rest alone (value <= value when there is none) */
		root = m->rest != EXPR_NONE ? m->rest : expr_le(m->g, m->value, m->value);
	else {
		bound = m->real ? expr_real(m->g, L) : expr_int(m->g, (int64_t)(m->up ? floor(L) : ceil(L)));
		cmp = m->up ? expr_le(m->g, m->value, bound) : expr_ge(m->g, m->value, bound);
		root = m->rest == EXPR_NONE ? cmp : expr_and(m->g, m->rest, cmp);
	}
	if (root == EXPR_NONE || root < 0 || dn_error_isset(&m->g->err))
		return dn_error_set(err, DN_EINTERNAL, NULL, "could not build the moved budget: %s", m->g->err.message);
	r = ans_exists(m->q, root, m->deadline, m->config, &filled, err);
	if (r == 1 && filled && m->have_tape &&
	    expr_tape_eval(&m->tape, m->g, m->config, m->scratch, NULL) == 0)
		*got = m->real ? m->scratch[m->value].r : (double)m->scratch[m->value].i;
	return r;
}

/* Is the bracket [bad, good] (either order) as narrow as it gets? */
static int
narrow(const struct move *m, double bad, double good)
{
	double gap = fabs(good - bad);

	if (!m->real)
		return gap <= 1;
	return gap <= fmax(fabs(good), fabs(bad)) * 1e-9;
}

/* The rest of the query (every part but i) as one node; the quantity's
 * tape. 0, or -1 with err. */
static int
move_open(struct move *m, struct sq_query *q, int i, double deadline, struct dn_error *err)
{
	uint8_t *need;

	memset(m, 0, sizeof *m);
	m->q = q;
	m->g = (struct expr_graph *)cm_model_graph(q->model);
	m->value = q->parts[i].value;
	m->real = m->g->nodes[m->value].type == EXPR_REAL;
	m->up = !q->parts[i].minimum;
	m->deadline = deadline;
	m->rest = EXPR_NONE;
	for (int x = 0; x < q->nparts; x++)
		if (x != i)
			m->rest = m->rest == EXPR_NONE ? q->parts[x].ok : expr_and(m->g, m->rest, q->parts[x].ok);
	if (dn_error_isset(&m->g->err))
		return dn_error_set(err, DN_EINTERNAL, NULL, "could not build the rest of the query: %s",
		    m->g->err.message);
	need = calloc((size_t)m->g->n + 1, 1);
	m->config = calloc((size_t)q->def->nhps + 1, sizeof *m->config);
	m->scratch = calloc((size_t)m->g->n + 1, sizeof *m->scratch);
	if (need == NULL || m->config == NULL || m->scratch == NULL) {
		free(need);
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	}
	need[m->value] = 1;
	m->have_tape = expr_tape_build_part(m->g, need, NULL, &m->tape) == 0;
	free(need);
	return 0;
}

static void
move_close(struct move *m)
{
	if (m->have_tape)
		expr_tape_free(&m->tape);
	free(m->config);
	free(m->scratch);
}

/* A limit as JSON: an integer for an integer quantity (or a whole limit
 * below 2^53), else a real. */
static json_t *
limit_json(double x, int real)
{
	if (!real && x == floor(x) && fabs(x) < 9.0e15)
		return json_integer((json_int_t)x);
	return json_real(x);
}

int
ans_budget_move(struct sq_query *q, int i, double deadline, json_t *item, struct dn_error *err)
{
	struct move m;
	const char *key = q->parts[i].minimum ? "at_most" : "at_least";
	double bad = q->parts[i].limit, good, got;
	int r;

	if (json_object_set_new(item, "limit", limit_json(bad, 0)) != 0)
		return -1;
	if (move_open(&m, q, i, deadline, err) != 0) {
		move_close(&m);
		return -1;
	}
	/* anything at all with every other part? its value starts `good` */
	r = fits_at(&m, m.up ? INFINITY : -INFINITY, &got, err);
	good = got;
	/* without a value to start from (continuous hyperparameters): doubled
	 * from the limit (a most) or halved (a minimum) until something fits,
	 * 40 times at most */
	for (int steps = 0; r == 1 && isnan(good) && steps < 40; steps++) {
		double t = m.up ? (bad > 0 ? bad * 2 : 1) : bad / 2;
		int at = fits_at(&m, t, &got, err);
		if (at == 1)
			good = isnan(got) ? t : got;
		else if (at == 0)
			bad = t;
		else
			r = at;         /* an error, or the deadline */
	}
	if (r != 1 || isnan(good)) {
		move_close(&m);
		if (r < 0)
			return -1;
		/* nothing keeps the other parts at any limit, or undecided */
		return json_object_set_new(item, key, json_null());
	}
	/* invariant: nothing fits at bad, something at good */
	while (!narrow(&m, bad, good)) {
		double mid = m.real ? bad + (good - bad) / 2 : (m.up ? floor((bad + good) / 2) : ceil((bad + good) / 2));
		if (mid == bad || mid == good)
			break;          /* adjacent */
		r = fits_at(&m, mid, &got, err);
		if (r < 0) {
			move_close(&m);
			return -1;
		}
		if (r == 2)
			break;          /* the deadline: the bracket so far */
		if (r == 1)
			good = isnan(got) ? mid : got;
		else
			bad = mid;
	}
	move_close(&m);
	json_object_set_new(item, key, limit_json(good, m.real));
	return json_object_set_new(item, "nothing_at", limit_json(bad, m.real));
}
