/*
 * z3c_query.c - the questions asked of Z3 about compiled constraints:
 * satisfiable?, every solution, are the solutions exactly these points?,
 * the best solution, and a minimal conflict.
 *
 * Invariants:
 *  - Every query makes its own solver (or optimizer) with the context's
 *    timeout and rlimit (per check) and releases it before returning, so a
 *    query leaves nothing behind in the context (but the numerals of
 *    z3c_models_are's points, kept like z3c_int's: one per distinct value).
 *  - Every Z3 object a query creates is referenced while in use and
 *    released on every path (rc context, see z3c_compile.c).
 *  - A query reports an error recorded before it starts, or raised during
 *    it, as Z3C_ERROR. An error raised because a check was stopped (Z3
 *    sometimes reports a cancel as an exception) is an unknown answer, as if
 *    the check had returned it.
 *  - Unknown answers carry Z3's reason in err: DN_ETIMEOUT for a timeout,
 *    the rlimit, or z3c_interrupt; DN_ENOMEM for Z3's memory limit;
 *    DN_EINTERNAL when Z3 gave up (an incomplete theory).
 *  - The timeout is never Z3's "timeout" parameter (its scoped_timer
 *    deadlocks in Z3 4.8.10 to 4.8.12: Z3Prover/z3 #5371, #5990): every
 *    check with a timeout runs under a timer thread of ours (struct
 *    watchdog) that calls Z3_interrupt once the time is up, and again every
 *    10 ms until the check returns (an interrupt that lands before Z3 has
 *    entered the check is lost). The rlimit is Z3's, counted in work.
 */
#include "z3c.h"
#include "dn_grow.h"

#include <errno.h>
#include <gmp.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- answers ---- */

static int
reason_is_limit(const char *why)
{
	return strstr(why, "timeout") != NULL || strstr(why, "cancel") != NULL ||
	    strstr(why, "resource") != NULL || strstr(why, "rlimit") != NULL ||
	    strstr(why, "interrupt") != NULL;
}

/* Records why Z3 answered unknown and returns Z3C_UNKNOWN. */
static enum z3c_answer
answer_unknown(struct z3c *z, const char *why, struct dn_error *err)
{
	if (atomic_load(&z->interrupted))
		dn_error_set(err, DN_ETIMEOUT, NULL, "Z3 was interrupted (%s)", why);
	else if (z->timer_fired)
		dn_error_set(err, DN_ETIMEOUT, NULL,
		    "Z3 stopped before an answer: timeout of %u ms (%s)", z->timeout_ms, why);
	else if (reason_is_limit(why))
		dn_error_set(err, DN_ETIMEOUT, NULL,
		    "Z3 stopped before an answer: %s (timeout %u ms, rlimit %u)", why,
		    z->timeout_ms, z->rlimit);
	else if (strstr(why, "memory") != NULL)
		dn_error_set(err, DN_ENOMEM, NULL, "Z3 ran out of memory: %s", why);
	else
		dn_error_set(err, DN_EINTERNAL, NULL, "Z3 could not decide: %s", why);
	return Z3C_UNKNOWN;
}

/* The answer of a finished check (of solver s or optimizer o). */
static enum z3c_answer
answer_of(struct z3c *z, Z3_lbool r, Z3_solver s, Z3_optimize o,
    struct dn_error *err)
{
	char why[256];
	Z3_string reason;

	if (dn_error_isset(&z->pending)) {
		if (!reason_is_limit(z->pending.message) && !atomic_load(&z->interrupted) &&
		    !z->timer_fired) {
			z3c_error(z, err);
			return Z3C_ERROR;
		}
		dn_fmt(why, sizeof why, "%s", z->pending.message);
		dn_error_clear(&z->pending);
		return answer_unknown(z, why, err);
	}
	if (r == Z3_L_TRUE)
		return Z3C_SAT;
	if (r == Z3_L_FALSE)
		return Z3C_UNSAT;
	reason = s != NULL ? Z3_solver_get_reason_unknown(z->ctx, s) :
	    Z3_optimize_get_reason_unknown(z->ctx, o);
	dn_fmt(why, sizeof why, "%s", reason != NULL ? reason : "no reason given");
	return answer_unknown(z, why, err);
}

/* Reports the error recorded for a Z3 call that returned NULL (or names
 * `what` if Z3 recorded none) and returns Z3C_ERROR. */
static enum z3c_answer
query_fail(struct z3c *z, struct dn_error *err, const char *what)
{
	if (z3c_error(z, err) == 0)
		dn_error_set(err, DN_EINTERNAL, NULL, "Z3 failed %s", what);
	return Z3C_ERROR;
}

/* Checks the arguments common to all queries, and reports an error
 * recorded before the query. Returns 0 or -1 (err set). */
static int
query_start(struct z3c *z, const Z3_ast *assertions, int n, struct dn_error *err)
{
	if (z3c_error(z, err) != 0)
		return -1;
	if (n < 0 || (n > 0 && assertions == NULL))
		return dn_error_set(err, DN_EINVAL, NULL, "bad list of %d assertions", n);
	for (int i = 0; i < n; i++)
		if (assertions[i] == NULL)
			return dn_error_set(err, DN_EINVAL, NULL,
			    "assertion %d is NULL (a failed translation?)", i);
	return 0;
}

/* ---- solvers ---- */

/* The context's rlimit as Z3 parameters (referenced), or NULL if none;
 * for a solver (not an optimizer), also the arithmetic solver of the
 * collapsed form (z3c_at_most's fresh constants): Z3's newer one (6),
 * which decides it where the global one (2, query_z3.c) did not. */
static Z3_params
params_new(struct z3c *z, int solver)
{
	Z3_params p;
	int arith = solver && z->collapsed;

	if (z->rlimit == 0 && !arith)
		return NULL;    /* the timeout is ours (struct watchdog), never Z3's */
	p = Z3_mk_params(z->ctx);
	if (p == NULL)
		return NULL;
	Z3_params_inc_ref(z->ctx, p);
	if (z->rlimit > 0)
		Z3_params_set_uint(z->ctx, p, Z3_mk_string_symbol(z->ctx, "rlimit"), z->rlimit);
	if (arith)
		Z3_params_set_uint(z->ctx, p, Z3_mk_string_symbol(z->ctx, "arith.solver"), 6);
	return p;
}

/* ---- the timeout: a timer thread of ours ---- */

struct watchdog {
	struct z3c *z;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct timespec at;     /* CLOCK_MONOTONIC: the next interrupt */
	int done, fired, running;
};

static void
ts_add_ms(struct timespec *t, unsigned ms)
{
	t->tv_sec += (time_t)(ms / 1000);
	t->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static void *
watchdog_run(void *arg)
{
	struct watchdog *w = arg;

	pthread_mutex_lock(&w->mu);
	while (!w->done) {
		if (pthread_cond_timedwait(&w->cv, &w->mu, &w->at) == ETIMEDOUT && !w->done) {
			w->fired = 1;
			Z3_interrupt(w->z->ctx);
			ts_add_ms(&w->at, 10);
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Starts the timer of one check (nothing without a timeout). 0, or -1
 * with err set when the thread cannot be made. */
static int
watchdog_start(struct z3c *z, struct watchdog *w, struct dn_error *err)
{
	pthread_condattr_t ca;
	int ok;

	memset(w, 0, sizeof *w);
	w->z = z;
	z->timer_fired = 0;
	if (z->timeout_ms == 0)
		return 0;
	if (pthread_condattr_init(&ca) != 0)
		return dn_error_set(err, DN_ENOMEM, NULL, "cannot start Z3's timer");
	ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
	    pthread_cond_init(&w->cv, &ca) == 0;
	pthread_condattr_destroy(&ca);
	if (!ok)
		return dn_error_set(err, DN_ENOMEM, NULL, "cannot start Z3's timer");
	if (pthread_mutex_init(&w->mu, NULL) != 0) {
		pthread_cond_destroy(&w->cv);
		return dn_error_set(err, DN_ENOMEM, NULL, "cannot start Z3's timer");
	}
	clock_gettime(CLOCK_MONOTONIC, &w->at);
	ts_add_ms(&w->at, z->timeout_ms);
	if (pthread_create(&w->th, NULL, watchdog_run, w) != 0) {
		pthread_mutex_destroy(&w->mu);
		pthread_cond_destroy(&w->cv);
		return dn_error_set(err, DN_ENOMEM, NULL, "cannot start Z3's timer (a thread)");
	}
	w->running = 1;
	return 0;
}

/* Stops the timer once the check has returned; z->timer_fired says
 * whether it interrupted the check. */
static void
watchdog_stop(struct watchdog *w)
{
	if (!w->running)
		return;
	pthread_mutex_lock(&w->mu);
	w->done = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
	w->z->timer_fired = w->fired;
	w->running = 0;
}

/* A referenced solver with the limits and the assertions; NULL with err
 * set on error. */
static Z3_solver
solver_new(struct z3c *z, const Z3_ast *assertions, int n, struct dn_error *err)
{
	Z3_solver s = Z3_mk_solver(z->ctx);
	struct watchdog w;
	Z3_params p;

	if (s == NULL) {
		query_fail(z, err, "creating a solver");
		return NULL;
	}
	Z3_solver_inc_ref(z->ctx, s);
	if ((p = params_new(z, 1)) != NULL) {
		Z3_solver_set_params(z->ctx, s, p);
		Z3_params_dec_ref(z->ctx, p);
	}
	/* asserting may internalize the terms, which on a large model took
	 * longer than the checks (a worker seen in Z3_solver_assert far past
	 * its deadline): under the same timer, so that Z3 is interrupted
	 * wherever it looks at its limit, and a late assert is an error */
	if (watchdog_start(z, &w, err) != 0) {
		Z3_solver_dec_ref(z->ctx, s);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		Z3_solver_assert(z->ctx, s, assertions[i]);
	watchdog_stop(&w);
	if (z->timer_fired) {
		/* stopped: whatever Z3 raised for it is the timeout (callers
		 * answer unknown, see new_failed) */
		dn_error_clear(&z->pending);
		dn_error_set(err, DN_ETIMEOUT, NULL, "Z3 stopped before an answer: timeout of %u ms "
		    "(while the query was asserted)", z->timeout_ms);
		Z3_solver_dec_ref(z->ctx, s);
		return NULL;
	}
	if (z3c_error(z, err) != 0) {
		Z3_solver_dec_ref(z->ctx, s);
		return NULL;
	}
	return s;
}

/* What a query answers when solver_new failed: a timeout while asserting
 * is an unknown answer, as one during the check (the invariant above);
 * anything else an error. */
static enum z3c_answer
new_failed(const struct dn_error *err)
{
	return err->code == DN_ETIMEOUT ? Z3C_UNKNOWN : Z3C_ERROR;
}

/* The answer of solver s's check (with assumptions when n > 0) under the
 * timer. */
static enum z3c_answer
solver_answer(struct z3c *z, Z3_solver s, unsigned n, const Z3_ast *assumptions,
    struct dn_error *err)
{
	struct watchdog w;
	Z3_lbool r;

	if (watchdog_start(z, &w, err) != 0)
		return Z3C_ERROR;
	r = n > 0 ? Z3_solver_check_assumptions(z->ctx, s, n, assumptions) : Z3_solver_check(z->ctx, s);
	watchdog_stop(&w);
	return answer_of(z, r, s, NULL, err);
}

/* ---- models ---- */

/* The double nearest to the rational text `s` ("p" or "p/q"). */
static double
rational_to_double(const char *s)
{
	mpq_t q, t, d1, d2;
	double d, e;

	mpq_init(q);
	if (mpq_set_str(q, s, 10) != 0) {
		mpq_clear(q);
		return strtod(s, NULL);
	}
	mpq_canonicalize(q);
	d = mpq_get_d(q);       /* truncated toward zero */
	mpq_inits(t, d1, d2, NULL);
	mpq_set_d(t, d);
	if (!mpq_equal(t, q) && isfinite(d)) {
		e = nextafter(d, mpq_sgn(q) > 0 ? INFINITY : -INFINITY);
		if (isfinite(e)) {
			mpq_sub(d1, q, t);
			mpq_abs(d1, d1);
			mpq_set_d(t, e);
			mpq_sub(d2, t, q);
			mpq_abs(d2, d2);
			if (mpq_cmp(d2, d1) < 0)
				d = e;
		}
	}
	mpq_clears(q, t, d1, d2, NULL);
	return d;
}

/* Reads numeral v as a value of type t. Returns 0 or -1 (err set). */
static int
value_read(struct z3c *z, Z3_ast v, enum expr_type t, union expr_val *out,
    struct dn_error *err)
{
	if (t == EXPR_INT) {
		if (Z3_is_numeral_ast(z->ctx, v) && Z3_get_numeral_int64(z->ctx, v, &out->i))
			return 0;
		return dn_error_set(err, DN_ERANGE, NULL,
		    "Z3's value %s is not a 64-bit integer", Z3_ast_to_string(z->ctx, v));
	}
	if (Z3_is_numeral_ast(z->ctx, v)) {
		out->r = rational_to_double(Z3_get_numeral_string(z->ctx, v));
		return 0;
	}
	if (Z3_is_algebraic_number(z->ctx, v)) {
		out->r = Z3_get_numeral_double(z->ctx, v);
		return 0;
	}
	return dn_error_set(err, DN_EINTERNAL, NULL, "Z3's value %s is not a number",
	    Z3_ast_to_string(z->ctx, v));
}

/* The value of term a of type t in model m (completed). 0 or -1. */
static int
model_value(struct z3c *z, Z3_model m, Z3_ast a, enum expr_type t,
    union expr_val *out, struct dn_error *err)
{
	Z3_ast v = NULL;
	int rc;

	if (!Z3_model_eval(z->ctx, m, a, true, &v) || v == NULL) {
		query_fail(z, err, "evaluating a term in a model");
		return -1;
	}
	Z3_inc_ref(z->ctx, v);
	rc = value_read(z, v, t, out, err);
	Z3_dec_ref(z->ctx, v);
	return rc;
}

/* The values of the first nv graph variables in model m (completed: a
 * variable m leaves free reads 0). 0 or -1 (err set). */
static int
model_read(struct z3c *z, Z3_model m, union expr_val *out, int32_t nv,
    struct dn_error *err)
{
	const struct expr_graph *g = z->g;

	if (nv > 0 && z3c_var(z, nv - 1) == NULL) {
		query_fail(z, err, "declaring the variables");
		return -1;
	}
	for (int32_t i = 0; i < nv; i++)
		if (model_value(z, m, z->vars[i], (enum expr_type)g->vars[i].type, &out[i], err) != 0)
			return -1;
	return 0;
}

/* ---- queries ---- */

enum z3c_answer
z3c_check(struct z3c *z, const Z3_ast *assertions, int n,
    union expr_val *model, struct dn_error *err)
{
	enum z3c_answer ans;
	Z3_solver s;

	if (query_start(z, assertions, n, err) != 0)
		return Z3C_ERROR;
	if (atomic_load(&z->interrupted))
		return answer_unknown(z, "interrupted", err);
	if ((s = solver_new(z, assertions, n, err)) == NULL)
		return new_failed(err);
	ans = solver_answer(z, s, 0, NULL, err);
	if (ans == Z3C_SAT && model != NULL) {
		Z3_model m = Z3_solver_get_model(z->ctx, s);

		if (m == NULL)
			ans = query_fail(z, err, "giving a model");
		else {
			Z3_model_inc_ref(z->ctx, m);
			if (model_read(z, m, model, z->g->nvars, err) != 0)
				ans = Z3C_ERROR;
			Z3_model_dec_ref(z->ctx, m);
		}
	}
	Z3_solver_dec_ref(z->ctx, s);
	return ans;
}

/*
 * The clause that excludes model m: some variable that m assigns differs.
 * Returns it referenced, or NULL when m assigns no variable (then m is the
 * only model) or on error (recorded).
 */
static Z3_ast
block_clause(struct z3c *z, Z3_model m, int32_t nv, Z3_ast *lits)
{
	Z3_ast clause;
	unsigned k = 0;

	for (int32_t i = 0; i < nv; i++) {
		Z3_func_decl d = Z3_get_app_decl(z->ctx, Z3_to_app(z->ctx, z->vars[i]));
		Z3_ast v = d != NULL ? Z3_model_get_const_interp(z->ctx, m, d) : NULL;
		Z3_ast eq;

		if (v == NULL)
			continue;
		Z3_inc_ref(z->ctx, v);
		eq = Z3_mk_eq(z->ctx, z->vars[i], v);
		if (eq != NULL) {
			Z3_inc_ref(z->ctx, eq);
			lits[k] = Z3_mk_not(z->ctx, eq);
			if (lits[k] != NULL)
				Z3_inc_ref(z->ctx, lits[k++]);
			Z3_dec_ref(z->ctx, eq);
		}
		Z3_dec_ref(z->ctx, v);
	}
	clause = k > 0 && !dn_error_isset(&z->pending) ? Z3_mk_or(z->ctx, k, lits) : NULL;
	if (clause != NULL)
		Z3_inc_ref(z->ctx, clause);
	while (k > 0)
		Z3_dec_ref(z->ctx, lits[--k]);
	return clause;
}

int64_t
z3c_enumerate(struct z3c *z, const Z3_ast *assertions, int n, int64_t limit,
    int (*cb)(void *ctx, const union expr_val *model), void *ctx,
    struct dn_error *err)
{
	union expr_val *vals = NULL;
	Z3_ast *lits = NULL;
	Z3_solver s;
	int64_t count = 0;
	int32_t nv = z->g->nvars;       /* fixed for the whole enumeration */
	int stop = 0;

	if (query_start(z, assertions, n, err) != 0)
		return -1;
	if (nv > 0 && z3c_var(z, nv - 1) == NULL) {
		query_fail(z, err, "declaring the variables");
		return -1;
	}
	if ((s = solver_new(z, assertions, n, err)) == NULL)
		return -1;
	vals = calloc((size_t)nv + 1, sizeof *vals);
	lits = calloc((size_t)nv + 1, sizeof *lits);
	if (vals == NULL || lits == NULL) {
		count = dn_error_set(err, DN_ENOMEM, NULL, "out of memory enumerating models");
		goto out;
	}
	for (;;) {
		enum z3c_answer ans;
		Z3_model m;
		Z3_ast clause;

		if (atomic_load(&z->interrupted)) {
			answer_unknown(z, "interrupted", err);
			count = -1;
			break;
		}
		ans = solver_answer(z, s, 0, NULL, err);
		if (ans == Z3C_UNSAT)
			break;
		if (ans != Z3C_SAT) {
			count = -1;
			break;
		}
		if ((m = Z3_solver_get_model(z->ctx, s)) == NULL) {
			query_fail(z, err, "giving a model");
			count = -1;
			break;
		}
		Z3_model_inc_ref(z->ctx, m);
		/* the clause first: completing the model assigns every variable */
		clause = block_clause(z, m, nv, lits);
		if (z3c_error(z, err) != 0 || model_read(z, m, vals, nv, err) != 0) {
			if (clause != NULL)
				Z3_dec_ref(z->ctx, clause);
			Z3_model_dec_ref(z->ctx, m);
			count = -1;
			break;
		}
		Z3_model_dec_ref(z->ctx, m);
		count++;
		if (cb != NULL && cb(ctx, vals) != 0)
			stop = 1;
		if (clause == NULL)
			break;  /* no variable: this was the only model */
		if (stop || count == limit) {
			Z3_dec_ref(z->ctx, clause);
			break;
		}
		Z3_solver_assert(z->ctx, s, clause);
		Z3_dec_ref(z->ctx, clause);
		if (z3c_error(z, err) != 0) {
			count = -1;
			break;
		}
	}
out:
	Z3_solver_dec_ref(z->ctx, s);
	free(vals);
	free(lits);
	return count;
}

/* ---- whether the models are exactly a list ---- */

/* The equalities "variable == value" of a query, one per distinct pair,
 * each referenced until the query ends (the numerals are z's: z3c_int,
 * z3c_real). */
struct eq_entry {
	int32_t var;
	union expr_val val;
	Z3_ast eq;
};

struct eq_cache {
	struct eq_entry *e;
	size_t n, cap;
};

/* The equality var == v (Int or Real by the variable's type), made once
 * per distinct pair; NULL on error (recorded). */
static Z3_ast
eq_of(struct z3c *z, struct eq_cache *c, int32_t var, union expr_val v)
{
	int real = z->g->vars[var].type == EXPR_REAL;
	Z3_ast num, eq;

	for (size_t k = 0; k < c->n; k++)
		if (c->e[k].var == var && (real ? c->e[k].val.r == v.r : c->e[k].val.i == v.i))
			return c->e[k].eq;
	if (dn_grow(&c->e, &c->cap, c->n + 1, sizeof *c->e) != 0) {
		dn_error_set(&z->pending, DN_ENOMEM, NULL, "out of memory comparing models");
		return NULL;
	}
	num = real ? z3c_real(z, v.r) : z3c_int(z, v.i);
	if (num == NULL || (eq = Z3_mk_eq(z->ctx, z->vars[var], num)) == NULL)
		return NULL;
	Z3_inc_ref(z->ctx, eq);
	c->e[c->n++] = (struct eq_entry){ .var = var, .val = v, .eq = eq };
	return eq;
}

static void
eq_cache_free(struct z3c *z, struct eq_cache *c)
{
	for (size_t k = 0; k < c->n; k++)
		Z3_dec_ref(z->ctx, c->e[k].eq);
	free(c->e);
}

/* Point pt's equalities into lits[0..nv). 0, or -1 on error (recorded). */
static int
point_eqs(struct z3c *z, struct eq_cache *c, const int32_t *vars, int nv,
    const union expr_val *pt, Z3_ast *lits)
{
	for (int j = 0; j < nv; j++)
		if ((lits[j] = eq_of(z, c, vars[j], pt[j])) == NULL)
			return -1;
	return 0;
}

/* Asserts on s that the model is not point pt: some variable differs (an
 * empty point blocks everything). 0, or -1 on error (recorded). */
static int
block_point(struct z3c *z, Z3_solver s, struct eq_cache *c, const int32_t *vars,
    int nv, const union expr_val *pt, Z3_ast *lits)
{
	Z3_ast clause;
	int made = 0, rc = -1;

	if (point_eqs(z, c, vars, nv, pt, lits) != 0)
		return -1;
	for (; made < nv; made++) {
		if ((lits[made] = Z3_mk_not(z->ctx, lits[made])) == NULL)
			goto out;
		Z3_inc_ref(z->ctx, lits[made]);
	}
	clause = nv > 0 ? Z3_mk_or(z->ctx, (unsigned)nv, lits) : Z3_mk_false(z->ctx);
	if (clause == NULL)
		goto out;
	Z3_inc_ref(z->ctx, clause);
	Z3_solver_assert(z->ctx, s, clause);
	Z3_dec_ref(z->ctx, clause);
	rc = dn_error_isset(&z->pending) ? -1 : 0;
out:
	while (made > 0)
		Z3_dec_ref(z->ctx, lits[--made]);
	return rc;
}

/* Is point pt a model of the assertions by evaluation? Z3's model
 * evaluator, on the model that gives vars[j] the value pt[j] (and, by
 * completion, anything else Z3's default), takes each assertion to true:
 * that total interpretation satisfies them, so the point is a model (a
 * ground rewrite, no search). 1 when every assertion evaluates to true,
 * 0 otherwise (false, or a term that did not reduce: only a check can
 * tell, as it may pick other values of what the point leaves free), -1 on
 * error (recorded). */
static int
point_evaluates_true(struct z3c *z, const Z3_ast *assertions, int n, const int32_t *vars, int nv,
    const union expr_val *pt)
{
	Z3_model m = Z3_mk_model(z->ctx);
	int rc = 1;

	if (m == NULL)
		return -1;
	Z3_model_inc_ref(z->ctx, m);
	for (int j = 0; j < nv && rc == 1; j++) {
		int real = z->g->vars[vars[j]].type == EXPR_REAL;
		Z3_ast num = real ? z3c_real(z, pt[j].r) : z3c_int(z, pt[j].i);
		Z3_func_decl d;

		if (num == NULL || (d = Z3_get_app_decl(z->ctx, Z3_to_app(z->ctx, z->vars[vars[j]]))) == NULL) {
			rc = -1;
			break;
		}
		Z3_add_const_interp(z->ctx, m, d, num);
	}
	for (int i = 0; i < n && rc == 1; i++) {
		Z3_ast v = NULL;

		if (!Z3_model_eval(z->ctx, m, assertions[i], true, &v) || v == NULL) {
			rc = dn_error_isset(&z->pending) ? -1 : 0;
			break;
		}
		Z3_inc_ref(z->ctx, v);
		if (Z3_get_bool_value(z->ctx, v) != Z3_L_TRUE)
			rc = 0;
		Z3_dec_ref(z->ctx, v);
	}
	Z3_model_dec_ref(z->ctx, m);
	if (rc == 1 && dn_error_isset(&z->pending))
		rc = -1;
	return rc;
}

int
z3c_models_are(struct z3c *z, const Z3_ast *assertions, int n,
    const int32_t *vars, int nv, const union expr_val *points, int64_t np,
    int64_t *bad, union expr_val *model, struct dn_error *err)
{
	struct eq_cache c = { 0 };
	Z3_ast *lits = NULL;
	Z3_solver s;
	enum z3c_answer ans;
	int rc = -1;

	*bad = -1;
	if (query_start(z, assertions, n, err) != 0)
		return -1;
	if (nv < 0 || np < 0 || (nv > 0 && vars == NULL) || (nv > 0 && np > 0 && points == NULL))
		return dn_error_set(err, DN_EINVAL, NULL, "bad list of %lld points on %d variables",
		    (long long)np, nv);
	for (int j = 0; j < nv; j++)
		if (vars[j] < 0 || vars[j] >= z->g->nvars)
			return dn_error_set(err, DN_EINVAL, NULL, "no variable %d (the graph has %d)",
			    (int)vars[j], (int)z->g->nvars);
	/* declares them all */
	if (z->g->nvars > 0 && z3c_var(z, z->g->nvars - 1) == NULL) {
		query_fail(z, err, "declaring the variables");
		return -1;
	}
	if ((s = solver_new(z, assertions, n, err)) == NULL)
		return -1;
	if ((lits = calloc((size_t)nv + 1, sizeof *lits)) == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory comparing models");
		goto out;
	}
	/* every point is a model: by evaluation, else by a check */
	for (int64_t k = 0; k < np; k++) {
		int ev;

		if (atomic_load(&z->interrupted)) {
			answer_unknown(z, "interrupted", err);
			goto out;
		}
		if ((ev = point_evaluates_true(z, assertions, n, vars, nv, points + k * nv)) < 0) {
			query_fail(z, err, "evaluating a point");
			goto out;
		}
		if (ev == 1)
			continue;
		if (point_eqs(z, &c, vars, nv, points + k * nv, lits) != 0) {
			query_fail(z, err, "building a point's equalities");
			goto out;
		}
		ans = solver_answer(z, s, (unsigned)nv, lits, err);
		if (ans == Z3C_UNSAT) {
			*bad = k;
			rc = 1;
			goto out;
		}
		if (ans != Z3C_SAT)
			goto out;
	}
	/* and nothing else is */
	for (int64_t k = 0; k < np; k++)
		if (block_point(z, s, &c, vars, nv, points + k * nv, lits) != 0) {
			query_fail(z, err, "blocking a point");
			goto out;
		}
	if (atomic_load(&z->interrupted)) {
		answer_unknown(z, "interrupted", err);
		goto out;
	}
	ans = solver_answer(z, s, 0, NULL, err);
	if (ans == Z3C_UNSAT)
		rc = 0;
	else if (ans == Z3C_SAT && model == NULL)
		rc = 1;
	else if (ans == Z3C_SAT) {
		Z3_model m = Z3_solver_get_model(z->ctx, s);

		if (m == NULL)
			query_fail(z, err, "giving a model");
		else {
			Z3_model_inc_ref(z->ctx, m);
			rc = model_read(z, m, model, z->g->nvars, err) == 0 ? 1 : -1;
			Z3_model_dec_ref(z->ctx, m);
		}
	}
out:
	eq_cache_free(z, &c);
	Z3_solver_dec_ref(z->ctx, s);
	free(lits);
	return rc;
}

enum z3c_answer
z3c_optimize(struct z3c *z, const Z3_ast *assertions, int n, expr_id objective,
    int maximize, union expr_val *best_model, union expr_val *best_value,
    struct dn_error *err)
{
	enum z3c_answer ans = Z3C_ERROR;
	enum expr_type t;
	Z3_optimize o;
	Z3_params p;
	Z3_ast obj, bound;
	Z3_model m;
	unsigned idx;

	if (query_start(z, assertions, n, err) != 0)
		return Z3C_ERROR;
	if ((obj = z3c_term(z, objective)) == NULL)
		return query_fail(z, err, "compiling the objective");
	t = expr_type_of(z->g, objective);
	if (atomic_load(&z->interrupted))
		return answer_unknown(z, "interrupted", err);
	if ((o = Z3_mk_optimize(z->ctx)) == NULL)
		return query_fail(z, err, "creating an optimizer");
	Z3_optimize_inc_ref(z->ctx, o);
	if ((p = params_new(z, 0)) != NULL) {
		Z3_optimize_set_params(z->ctx, o, p);
		Z3_params_dec_ref(z->ctx, p);
	}
	for (int i = 0; i < n; i++)
		Z3_optimize_assert(z->ctx, o, assertions[i]);
	idx = maximize ? Z3_optimize_maximize(z->ctx, o, obj) : Z3_optimize_minimize(z->ctx, o, obj);
	if (z3c_error(z, err) != 0)
		goto out;
	{
		struct watchdog w;
		Z3_lbool r;

		if (watchdog_start(z, &w, err) != 0) {
			ans = Z3C_ERROR;
			goto out;
		}
		r = Z3_optimize_check(z->ctx, o, 0, NULL);
		watchdog_stop(&w);
		ans = answer_of(z, r, NULL, o, err);
	}
	if (ans != Z3C_SAT)
		goto out;
	/* a finite optimum is a numeral; oo or a bound +- epsilon is not */
	bound = maximize ? Z3_optimize_get_upper(z->ctx, o, idx) : Z3_optimize_get_lower(z->ctx, o, idx);
	if (bound == NULL) {
		ans = query_fail(z, err, "giving the optimum");
		goto out;
	}
	Z3_inc_ref(z->ctx, bound);
	if (!Z3_is_numeral_ast(z->ctx, bound)) {
		dn_error_set(err, DN_ERANGE, expr_origin(z->g, objective),
		    "the objective has no %s: its bound is %s", maximize ? "maximum" : "minimum",
		    Z3_ast_to_string(z->ctx, bound));
		ans = Z3C_ERROR;
	}
	Z3_dec_ref(z->ctx, bound);
	if (ans != Z3C_SAT)
		goto out;
	if ((m = Z3_optimize_get_model(z->ctx, o)) == NULL) {
		ans = query_fail(z, err, "giving a model");
		goto out;
	}
	Z3_model_inc_ref(z->ctx, m);
	if ((best_model != NULL && model_read(z, m, best_model, z->g->nvars, err) != 0) ||
	    (best_value != NULL && model_value(z, m, obj, t, best_value, err) != 0))
		ans = Z3C_ERROR;
	Z3_model_dec_ref(z->ctx, m);
out:
	Z3_optimize_dec_ref(z->ctx, o);
	return ans;
}

/* Marks in `in` the indicators of s's unsat core. 0 or -1 (recorded). */
static int
core_read(struct z3c *z, Z3_solver s, const Z3_ast *ind, int nl, uint8_t *in)
{
	Z3_ast_vector core = Z3_solver_get_unsat_core(z->ctx, s);
	unsigned size;

	if (core == NULL)
		return -1;
	Z3_ast_vector_inc_ref(z->ctx, core);
	memset(in, 0, (size_t)nl);
	size = Z3_ast_vector_size(z->ctx, core);
	for (unsigned k = 0; k < size; k++) {
		Z3_ast a = Z3_ast_vector_get(z->ctx, core, k);

		for (int j = 0; j < nl; j++)
			if (a != NULL && Z3_is_eq_ast(z->ctx, a, ind[j]))
				in[j] = 1;
	}
	Z3_ast_vector_dec_ref(z->ctx, core);
	return 0;
}

/* The indicators marked in `in`, except `skip` (-1: none), into out. */
static unsigned
core_select(const Z3_ast *ind, const uint8_t *in, int nl, int skip, Z3_ast *out)
{
	unsigned k = 0;

	for (int j = 0; j < nl; j++)
		if (in[j] && j != skip)
			out[k++] = ind[j];
	return k;
}

enum z3c_answer
z3c_explain(struct z3c *z, const Z3_ast *assertions, int n,
    const Z3_ast *labelled, const char *const *labels, int nl, int *core,
    int *ncore, struct dn_error *err)
{
	enum z3c_answer ans = Z3C_ERROR;
	Z3_ast *ind = NULL, *sel = NULL;
	uint8_t *in = NULL, *trial = NULL;
	Z3_solver s;
	int made = 0;

	*ncore = 0;
	if (query_start(z, assertions, n, err) != 0)
		return Z3C_ERROR;
	if (nl < 0 || (nl > 0 && (labelled == NULL || core == NULL))) {
		dn_error_set(err, DN_EINVAL, NULL, "bad list of %d labelled constraints", nl);
		return Z3C_ERROR;
	}
	for (int j = 0; j < nl; j++)
		if (labelled[j] == NULL) {
			dn_error_set(err, DN_EINVAL, NULL, "labelled constraint %d is NULL", j);
			return Z3C_ERROR;
		}
	if (atomic_load(&z->interrupted))
		return answer_unknown(z, "interrupted", err);
	if ((s = solver_new(z, assertions, n, err)) == NULL)
		return new_failed(err);
	ind = calloc((size_t)nl + 1, sizeof *ind);
	sel = calloc((size_t)nl + 1, sizeof *sel);
	in = calloc((size_t)nl + 1, 1);
	trial = calloc((size_t)nl + 1, 1);
	if (ind == NULL || sel == NULL || in == NULL || trial == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory explaining a conflict");
		goto out;
	}
	/* indicator_j => labelled_j; assuming indicator_j switches it on */
	for (made = 0; made < nl; made++) {
		Z3_ast imp;

		ind[made] = Z3_mk_fresh_const(z->ctx,
		    labels != NULL && labels[made] != NULL ? labels[made] : "label", z->bool_sort);
		if (ind[made] == NULL)
			break;
		Z3_inc_ref(z->ctx, ind[made]);
		if ((imp = Z3_mk_implies(z->ctx, ind[made], labelled[made])) == NULL) {
			made++;
			break;
		}
		Z3_inc_ref(z->ctx, imp);
		Z3_solver_assert(z->ctx, s, imp);
		Z3_dec_ref(z->ctx, imp);
	}
	if (z3c_error(z, err) != 0)
		goto out;
	ans = solver_answer(z, s, (unsigned)nl, ind, err);
	if (ans != Z3C_UNSAT)
		goto out;
	if (core_read(z, s, ind, nl, in) != 0) {
		ans = query_fail(z, err, "reading the unsat core");
		goto out;
	}
	/* deletion: drop each member whose removal keeps the core unsat; the
	 * core of that check (a subset) replaces the current one */
	for (int j = 0; j < nl; j++) {
		enum z3c_answer a;
		struct dn_error e2;
		unsigned k;

		if (!in[j])
			continue;
		k = core_select(ind, in, nl, j, sel);
		memset(&e2, 0, sizeof e2);
		a = atomic_load(&z->interrupted) ? Z3C_UNKNOWN :
		    solver_answer(z, s, k, sel, &e2);
		if (a == Z3C_ERROR) {
			dn_error_set(err, e2.code, e2.path, "%s", e2.message);
			ans = Z3C_ERROR;
			goto out;
		}
		if (a == Z3C_UNSAT) {
			if (core_read(z, s, ind, nl, trial) != 0) {
				ans = query_fail(z, err, "reading the unsat core");
				goto out;
			}
			memcpy(in, trial, (size_t)nl);
			in[j] = 0;
		}
		/* sat: j is needed; unknown: keep j, the core stays unsat */
	}
	for (int j = 0; j < nl; j++)
		if (in[j])
			core[(*ncore)++] = j;
out:
	for (int j = 0; j < made; j++)
		Z3_dec_ref(z->ctx, ind[j]);
	Z3_solver_dec_ref(z->ctx, s);
	free(ind);
	free(sel);
	free(in);
	free(trial);
	return ans;
}
