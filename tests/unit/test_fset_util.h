/*
 * test_fset_util.h - what the feasible-set engine's test programs
 * (test_fset_*.c, one per theme so that `make -j check` spreads them)
 * share: the device catalog, the random queries of every template
 * (random_query, small_variant, random_real_query), a query parsed and
 * counted exactly (parse_query, exact_count), brute force over a
 * query's grid (brute) and the engine's answers checked against it
 * (check_answers, check_tape_agrees, check_first_in_box, check_extremes),
 * Z3's set of models against it (z3_check_set: each configuration a model
 * by Z3's evaluator or a check, then none left once they are all blocked, on one
 * solver, without enumerating; skipped when DNNSAT_TEST_Z3=0:
 * test_z3_enabled), and counting in slices across saved
 * progress. Header-only (static functions, static state): each program has
 * its own copy, and its own pseudo-random sequence starting from the same
 * seed, as when these tests were one program (Check forks each test).
 */
#ifndef DN_TEST_FSET_UTIL_H
#define DN_TEST_FSET_UTIL_H

#include "test_util.h"

#include <math.h>

#include "answer.h"
#include "cm_report.h"
#include "fset.h"
#include "fset_priv.h"
#include "fset_project.h"
#include "query.h"
#include "query_z3.h"

static struct cm_device_catalog cat;

static __attribute__((unused)) void
load_catalog(void)
{
	test_catalog_load(&cat);
}

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static __attribute__((unused)) uint64_t
rnd(uint64_t n)
{
	uint64_t x = test_xorshift(&rng);

	return n ? x % n : 0;
}

/* A random subset (2..max distinct, sorted by pick order) of a value list. */
static __attribute__((unused)) json_t *
pick(const int *vals, int n, int max)
{
	json_t *a = json_array();
	int want = 2 + (int)rnd((uint64_t)(max - 1)), used[64] = { 0 };

	for (int i = 0; i < want && i < n; i++) {
		int j = (int)rnd((uint64_t)n);
		if (used[j])
			continue;
		used[j] = 1;
		json_array_append_new(a, json_integer(vals[j]));
	}
	if (json_array_size(a) == 0)
		json_array_append_new(a, json_integer(vals[0]));
	return a;
}

static __attribute__((unused)) json_t *
choice(json_t *vals)
{
	return json_pack("{s:s,s:o}", "_type", "choice", "_value", vals);
}

/* A random query over one of several templates. */
static __attribute__((unused)) json_t *
random_query(int i)
{
	static const int batches[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
	static const int widths[] = { 16, 24, 32, 48, 64, 96 };
	json_t *space = json_object(), *q;
	const char *model;
	const char *mem[] = { "2GiB", "3GiB", "4GiB", "6GiB", "8GiB", "12GiB", "16GiB" };

	switch (i % 6 == 5 ? 0 : i % 6) {
	case 0:
		model = "mlp";
		json_object_set_new(space, "batch_size", choice(pick(batches, 11, 4)));
		json_object_set_new(space, "hidden", json_pack("{s:s,s:[i,i,i]}", "_type", "quniform", "_value",
		    64, 64 + 256 * (int)(1 + rnd(8)), 256));
		json_object_set_new(space, "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value",
		    1, 2 + (int)rnd(6)));
		json_object_set_new(space, "activation", choice(json_pack("[s,s,s]", "relu", "gelu", "tanh")));
		break;
	case 1:
		model = "resnet18";
		json_object_set_new(space, "batch_size", choice(pick(batches, 11, 4)));
		json_object_set_new(space, "width", choice(pick(widths, 6, 3)));
		json_object_set_new(space, "layers2", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1, 2 + (int)rnd(3)));
		json_object_set_new(space, "block", choice(json_pack("[s,s]", "basic", "bottleneck")));
		json_object_set_new(space, "lr", json_pack("{s:s,s:[f,f]}", "_type", "loguniform", "_value", 1e-4, 1e-1));
		break;
	case 2:
		model = "nb201";
		json_object_set_new(space, "edge0", choice(json_pack("[s,s,s]", "none", "nor_conv_3x3", "avg_pool_3x3")));
		json_object_set_new(space, "edge3", choice(json_pack("[s,s]", "skip_connect", "nor_conv_1x1")));
		json_object_set_new(space, "C", choice(pick(widths, 6, 3)));
		json_object_set_new(space, "batch_size", choice(pick(batches, 11, 4)));
		break;
	case 3:
		model = "mobilenet_v2";
		json_object_set_new(space, "width_mult", choice(json_pack("[f,f,f]", 0.5, 0.75, 1.0)));
		json_object_set_new(space, "resolution", json_pack("{s:s,s:[i,i,i]}", "_type", "quniform", "_value",
		    96, 96 + 32 * (int)(1 + rnd(5)), 32));
		json_object_set_new(space, "batch_size", choice(pick(batches, 11, 4)));
		break;
	default:
		model = "gpt2";
		json_object_set_new(space, "n_layer", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1, 2 + (int)rnd(4)));
		json_object_set_new(space, "n_embd", choice(json_pack("[i,i,i]", 256, 384, 512)));
		json_object_set_new(space, "n_head", choice(json_pack("[i,i,i]", 4, 6, 8)));
		json_object_set_new(space, "seq_len", choice(json_pack("[i,i]", 128, 256)));
		json_object_set_new(space, "batch_size", choice(pick(batches, 11, 3)));
		break;
	}
	q = json_pack("{s:s,s:o,s:s}", "model", model, "space", space, "device", "a100-40gb");
	{
		json_t *b = json_pack("{s:s}", "memory", mem[rnd(7)]);
		if (rnd(3) == 0)
			json_object_set_new(b, "params", json_real(1e5 * (double)(1 + rnd(300))));
		if (rnd(4) == 0)
			json_object_set_new(b, "macs", json_real(1e9 * (double)(1 + rnd(200))));
		json_object_set_new(q, "budgets", b);
	}
	if (i % 6 == 4)
		json_object_set_new(q, "constraints", json_pack("[s]", "n_embd % n_head == 0"));
	else if ((i % 6 == 0 || i % 6 == 5) && rnd(2))
		json_object_set_new(q, "constraints", json_pack("[s]", "hidden * depth <= 1500"));
	if (rnd(3) == 0)
		json_object_set_new(q, "workload", json_pack("{s:s,s:s}", "optimizer", rnd(2) ? "sgd" : "adamw",
		    "dtype", rnd(2) ? "fp32" : "mixed_fp16"));
	return q;
}

static __attribute__((unused)) char *
key_of(const struct fs_engine *e, const int64_t *pos)
{
	char *s = malloc((size_t)e->nvars * 24 + 2), *p = s;

	for (int v = 0; v < e->nvars; v++)
		p += sprintf(p, "%lld,", (long long)pos[v]);
	*p = '\0';
	return s;
}

/*
 * The same question over a smaller graph, for the templates whose graphs
 * are too large for Z3 to enumerate a few hundred spaces within the test's
 * time (tens of thousands of nodes: each Z3 check costs tens of ms there):
 * ResNet with one block in stages 1, 3 and 4, NB201 with one cell per
 * stage, MobileNetV2 cut after its first 1 to 3 groups of inverted
 * residuals (stem and head kept). The space, budgets and constraints stay.
 * NULL for the other templates, whose queries Z3 checks as they are.
 */
static __attribute__((unused)) json_t *
small_variant(const json_t *req, int i)
{
	const char *model = json_string_value(json_object_get(req, "model"));
	json_t *q;

	if (model == NULL || (strcmp(model, "resnet18") && strcmp(model, "nb201") &&
	    strcmp(model, "mobilenet_v2")))
		return NULL;
	q = json_deep_copy(req);
	if (strcmp(model, "resnet18") == 0) {
		json_object_set_new(q, "model", json_string("resnet"));
		json_object_set_new(q, "fixed", json_pack("{s:i,s:i,s:i}", "layers1", 1, "layers3", 1,
		    "layers4", 1));
	} else if (strcmp(model, "nb201") == 0) {
		json_object_set_new(q, "fixed", json_pack("{s:i}", "cells_per_stage", 1));
	} else {
		json_error_t je;
		json_t *m = json_load_file(src_path("schemas/templates/mobilenet_v2.json"), 0, &je);
		json_t *layers = json_object_get(m, "layers");
		size_t groups = 0, last;

		ck_assert_msg(m != NULL, "%s", je.text);
		/* the groups are the layers that "use" one; keep the first 1..3 */
		for (size_t k = 0; k < json_array_size(layers); k++)
			groups += json_object_get(json_array_get(layers, k), "use") != NULL;
		ck_assert_int_eq(groups, 7);
		last = 3 + 1 + (size_t)(i / 6 % 3);     /* stem: layers 0..2 */
		for (size_t k = 3 + groups - 1; k >= last; k--)
			json_array_remove(layers, k);
		json_object_set_new(q, "model", m);
	}
	return q;
}

/* Z3's model (one value per hyperparameter) as an engine key (key_of): the
 * position of every engine variable (each bound to a hyperparameter; -1 for
 * a nested one whose option the model does not choose). *outside counts
 * the variables whose value is not on the engine's grid. */
static __attribute__((unused)) char *
z3_model_key(const struct fs_engine *e, const union expr_val *model, int *outside)
{
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	char *key;

	*outside = 0;
	for (int v = 0; v < e->nvars; v++) {
		const struct fs_var *x = &e->vars[v];
		int64_t p = 0;
		if (x->parent >= 0 && pos[x->parent] != x->active_pos) {
			pos[v] = -1;    /* its option is not chosen (parents come first) */
			continue;
		}
		while (p < x->n && (x->real ? x->vals[p].r != model[x->hp].r : x->vals[p].i != model[x->hp].i))
			p++;
		*outside += p == x->n;
		pos[v] = p;
	}
	key = key_of(e, pos);
	free(pos);
	return key;
}

/*
 * The set of Z3's models of the query's assertions (sq_z3_assertions) is
 * the brute-force list bf of nbf feasible configurations (keys of key_of),
 * one model per configuration, proved without enumerating (z3c_models_are,
 * one solver): each configuration's values (fs_config_of: every
 * hyperparameter, the fixed ones and those of options not chosen too) are a
 * model (by Z3's model evaluator, else a check under assumptions); with all of them blocked, the
 * assertions are unsatisfiable. A model that is left names its key (or says
 * it lies outside the grid) in the failure. Every engine variable must be
 * bound to a hyperparameter with an explicit grid (true of the random
 * queries).
 */
static __attribute__((unused)) void
z3_check_set(struct sq_query *q, struct fs_engine *e, char **bf, int64_t nbf, const char *what)
{
	const struct expr_graph *g = cm_model_graph(q->model);
	int nh = q->def->nhps, na, r, outside = 0, listed = 0;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos), bad = -1;
	int32_t *vars = calloc((size_t)nh + 1, sizeof *vars);
	union expr_val *points = calloc((size_t)(nbf * nh) + 1, sizeof *points);
	union expr_val *model = calloc((size_t)nh + 1, sizeof *model);
	struct z3c z;
	struct dn_error err;
	Z3_ast *as = NULL;
	char *key = NULL;

	memset(&err, 0, sizeof err);
	for (int v = 0; v < e->nvars; v++)
		ck_assert_msg(e->vars[v].hp >= 0 && e->vars[v].vals != NULL, "%s: var %d", what, v);
	/* the graph's variables are the hyperparameters, in def order */
	ck_assert_int_eq(g->nvars, nh);
	for (int h = 0; h < nh; h++)
		vars[h] = h;
	for (int64_t k = 0; k < nbf; k++) {
		const char *s = bf[k];
		for (int v = 0; v < e->nvars; v++, s++)
			pos[v] = strtoll(s, (char **)&s, 10);
		fs_config_of(e, pos, points + k * nh);
	}
	Z3_global_param_set("smt.arith.solver", "2");
	/* bounded by work (Z3's rlimit, per check), not by time: no check
	 * here comes near it */
	ck_assert_msg(z3c_init(&z, g, 0, 50000000u, &err) == 0, "%s", err.message);
	na = sq_z3_assertions(q, e, &z, &as, &err);
	ck_assert_msg(na > 0, "%s", err.message);
	r = z3c_models_are(&z, as, na, vars, nh, points, nbf, &bad, model, &err);
	ck_assert_msg(r >= 0, "%s: z3: %s", what, err.message);
	ck_assert_msg(r == 0 || bad < 0, "%s: brute force's configuration %s is not a model of Z3's assertions",
	    what, bf[bad < 0 ? 0 : bad]);
	if (r == 1) {
		key = z3_model_key(e, model, &outside);
		for (int64_t k = 0; k < nbf && !listed; k++)
			listed = strcmp(bf[k], key) == 0;
	}
	ck_assert_msg(r == 0, "%s: Z3 has a model outside brute force's %lld configurations: %s%s", what,
	    (long long)nbf, key, outside ? " (a value outside the grid)" : listed ?
	    " (listed, but with other values of the hyperparameters it leaves unset)" : "");
	free(key);
	free(pos);
	free(vars);
	free(points);
	free(model);
	free(as);
	z3c_free(&z);
}

/* Brute force: every configuration of the grid, in engine order. */
static __attribute__((unused)) int64_t
brute(struct fs_engine *e, char ***feasible)
{
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos), n = 0, cap = 64;
	char **list = malloc(sizeof *list * (size_t)cap);

	/* the first configuration: every active var at its first position,
	 * nested vars of options not chosen at -1 */
	for (int v = 0; v < e->nvars; v++) {
		int p = e->vars[v].parent;
		pos[v] = (p < 0 || pos[p] == e->vars[v].active_pos) ? 0 : -1;
	}
	do {
		if (fs_feasible_at(e, pos)) {
			if (n == cap) {
				cap *= 2;
				list = realloc(list, sizeof *list * (size_t)cap);
			}
			list[n++] = key_of(e, pos);
		}
	} while (fs_increment(e, pos) == 0);
	free(pos);
	*feasible = list;
	return n;
}

/*
 * Everything a counted engine answers, against the brute-force list bf of
 * its nbf feasible configurations: the exact count, the k-th configuration
 * for every k, the cursor walk from the start, and which positions occur in
 * a feasible configuration (projections). `what` names the case in failures.
 */
static __attribute__((unused)) void
check_answers(struct fs_engine *e, char **bf, int64_t nbf, const char *what)
{
	struct dn_error err;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);

	memset(&err, 0, sizeof err);
	ck_assert_msg(e->lower == e->upper && (int64_t)e->lower == nbf, "%s: engine %lld, brute force %lld",
	    what, (long long)e->lower, (long long)nbf);
	/* k-th == the brute-force order, every k */
	for (int64_t k = 0; k < nbf; k++) {
		char *s;
		ck_assert_int_eq(fs_kth(e, (fs_count)k, pos, &err), 0);
		s = key_of(e, pos);
		ck_assert_msg(strcmp(s, bf[k]) == 0, "%s: k-th %lld is %s, brute force %s", what, (long long)k, s, bf[k]);
		free(s);
	}
	ck_assert_int_eq(fs_kth(e, (fs_count)nbf, pos, &err), 1);
	/* the cursor walk visits the same list */
	{
		int64_t k = 0;
		int r = fs_next(e, NULL, pos, &err);
		while (r == 0) {
			char *s = key_of(e, pos);
			ck_assert_msg(k < nbf && strcmp(s, bf[k]) == 0, "%s: walk %lld: %s", what, (long long)k, s);
			free(s);
			k++;
			if (fs_increment(e, pos) != 0)
				break;
			r = fs_next(e, pos, pos, &err);
		}
		ck_assert_int_eq(k, nbf);
	}
	/* projections: a position is present iff some feasible configuration has it */
	{
		struct fs_projection p;
		ck_assert_int_eq(fs_project(e, &p, &err), 0);
		for (int v = 0; v < e->nvars; v++)
			for (int64_t x = 0; x < e->vars[v].n; x++) {
				int want = 0;
				for (int64_t k = 0; k < nbf && !want; k++) {
					/* parse the v-th field */
					const char *s = bf[k];
					for (int f = 0; f < v; f++)
						s = strchr(s, ',') + 1;
					want = atoll(s) == x;
				}
				ck_assert_msg(p.present[v][x] == want, "%s: var %d position %lld present %d, want %d",
				    what, v, (long long)x, p.present[v][x], want);
			}
		fs_projection_free(&p);
	}
	free(pos);
}

/* The stored trees of a and b are the same node for node (one assertion:
 * Check's cost a call). */
static __attribute__((unused)) void
same_tree(const struct fs_engine *a, const struct fs_engine *b, const char *what)
{
	int32_t bad = -1;

	ck_assert_msg(a->lower == b->lower && a->upper == b->upper, "%s: bounds differ", what);
	ck_assert_msg(a->nnodes == b->nnodes, "%s: %d nodes against %d", what, (int)a->nnodes, (int)b->nnodes);
	for (int32_t i = 0; i < a->nnodes && bad < 0; i++) {
		const struct fs_node *x = &a->nodes[i], *y = &b->nodes[i];
		if (!(x->count == y->count && x->upper == y->upper && x->lo == y->lo && x->hi == y->hi &&
		    x->var == y->var && x->parent == y->parent && x->first_child == y->first_child &&
		    x->nchildren == y->nchildren && x->status == y->status))
			bad = i;
	}
	ck_assert_msg(bad < 0, "%s: node %d differs", what, (int)bad);
}

static __attribute__((unused)) void
free_list(char **list, int64_t n)
{
	for (int64_t k = 0; k < n; k++)
		free(list[k]);
	free(list);
}

/* The model's whole reading of a configuration's values, as text. */
static __attribute__((unused)) char *
result_text(const struct fs_engine *e, const union expr_val *vals)
{
	struct cm_result r;
	struct jt w;
	char *text, tail[64];

	cm_model_read(e->q->model, vals, &r);
	jt_init(&w, 256);
	cm_result_write(&w, e->q->model, NULL, &r, 1);
	snprintf(tail, sizeof tail, " peak %d %d", (int)r.peak_phase, r.peak_op);
	jt_raw(&w, tail, strlen(tail));
	text = jt_take(&w, NULL);
	ck_assert_ptr_nonnull(text);
	return text;
}

/*
 * The per-trial check's partial tape (tabulated nodes copied in, then
 * e->check_tape) against the whole graph's tape, at random configurations
 * (valid shapes or not): every part of the query and the whole cost-model
 * reading agree; the slots it does not compute start as garbage.
 */
static __attribute__((unused)) void
check_tape_agrees(struct fs_engine *e, const char *what)
{
	int32_t n = e->nnodes_graph;
	union expr_val *ref = malloc(sizeof *ref * (size_t)n), *got = malloc(sizeof *got * (size_t)n);
	union expr_val *cfg = malloc(sizeof *cfg * ((size_t)e->q->def->nhps + 1));
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	static uint64_t own = 0x9E3779B97F4A7C15ULL;     /* the queries' draws stay as they were */

	for (int t = 0; t < 25; t++) {
		char *a, *b;
		for (int v = 0; v < e->nvars; v++) {
			int p = e->vars[v].parent;
			pos[v] = (p < 0 || pos[p] == e->vars[v].active_pos) ? (int64_t)(test_xorshift(&own) % (uint64_t)e->vars[v].n) : -1;
		}
		fs_config_of(e, pos, cfg);
		if (expr_tape_eval(&e->tape, e->g, cfg, ref, NULL) != 0)
			continue;       /* an overflow somewhere: the check may skip what it does not read */
		memset(got, 0x5a, sizeof *got * (size_t)n);
		ck_assert_int_eq(fs_check_fill(e, pos, got), 0);
		ck_assert_msg(expr_tape_eval(&e->check_tape, e->g, cfg, got, NULL) == 0, "%s: check tape overflows", what);
		for (int i = 0; i < e->q->nparts; i++) {
			const struct sq_part *p = &e->q->parts[i];
			ck_assert_msg(got[p->ok].i == ref[p->ok].i, "%s: part %s", what, p->label);
			ck_assert_msg(p->value < 0 || memcmp(&got[p->value], &ref[p->value], sizeof ref[0]) == 0,
			    "%s: value of %s", what, p->label);
		}
		a = result_text(e, ref);
		b = result_text(e, got);
		ck_assert_msg(strcmp(a, b) == 0, "%s: the check reads\n%s\nthe whole graph\n%s", what, b, a);
		free(a);
		free(b);
	}
	free(ref);
	free(got);
	free(cfg);
	free(pos);
}

/*
 * fs_first_in_box in boxes narrowed at random (every var to a random
 * sub-range): the configuration it finds lies in the box and is feasible,
 * and it finds none exactly when brute force has none in the box.
 */
static __attribute__((unused)) void
check_first_in_box(struct fs_engine *e, char **bf, int64_t nbf, const char *what)
{
	static uint64_t own = 0xD1B54A32D192ED03ULL;
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos), *lo = calloc((size_t)e->nvars + 1, 8);
	int64_t *hi = calloc((size_t)e->nvars + 1, 8), *cand = calloc((size_t)e->nvars + 1, 8);
	struct dn_error err;

	memset(&err, 0, sizeof err);
	for (int t = 0; t < 6; t++) {
		int64_t mark = -1, inside = 0;
		int r;
		for (int v = 0; v < e->nvars; v++) {
			int64_t n = e->vars[v].n, a = (int64_t)(test_xorshift(&own) % (uint64_t)n);
			int64_t b = a + (int64_t)(test_xorshift(&own) % (uint64_t)(n - a));
			lo[v] = a;
			hi[v] = b;
			if (mark < 0)
				mark = fs_restrict(e, v, a, b);
			else
				fs_restrict(e, v, a, b);
		}
		r = fs_first_in_box(e, pos, &err);
		ck_assert_msg(r == 0 || r == 1, "%s: fs_first_in_box: %s", what, err.message);
		/* brute force: a feasible configuration whose active vars are in range */
		for (int64_t k = 0; k < nbf && !inside; k++) {
			const char *q = bf[k];
			int in = 1;
			for (int v = 0; v < e->nvars; v++) {
				cand[v] = atoll(q);
				q = strchr(q, ',') + 1;
				if (cand[v] >= 0 && (cand[v] < lo[v] || cand[v] > hi[v]))
					in = 0;
			}
			inside = in;
		}
		ck_assert_msg(r == (inside ? 0 : 1), "%s: first in box %d, brute force %s", what, r,
		    inside ? "has one" : "has none");
		if (r == 0) {
			for (int v = 0; v < e->nvars; v++)
				ck_assert_msg(pos[v] < 0 || (pos[v] >= lo[v] && pos[v] <= hi[v]),
				    "%s: var %d at %lld outside [%lld, %lld]", what, v, (long long)pos[v],
				    (long long)lo[v], (long long)hi[v]);
			fs_unrestrict(e, mark);
			ck_assert_msg(fs_feasible_at(e, pos), "%s: the configuration found is not feasible", what);
		} else
			fs_unrestrict(e, mark);
	}
	free(pos);
	free(lo);
	free(hi);
	free(cand);
}

/*
 * One random query: the engine's answers against brute force, and with
 * z3 set, Z3's set of models against brute force too. Adds the time Z3
 * took to *z3_s.
 */
static __attribute__((unused)) void
check_random_query(json_t *req, int i, int z3, double *z3_s)
{
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	char **bf, what[4096];
	int64_t nbf;
	char *dump = json_dumps(req, JSON_COMPACT);

	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "case %d: %s: %s\n%s", i, err.path, err.message, dump);
	ck_assert_msg(fs_init(&e, &q, &err) == 0, "case %d: %s", i, err.message);
	nbf = brute(&e, &bf);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	snprintf(what, sizeof what, "case %d: %s", i, dump);
	check_answers(&e, bf, nbf, what);
	check_tape_agrees(&e, what);
	check_first_in_box(&e, bf, nbf, what);
	if (z3 && test_z3_enabled()) {
		double t0 = fs_now();
		z3_check_set(&q, &e, bf, nbf, what);
		*z3_s += fs_now() - t0;
		if (getenv("Z3_TIMES"))
			fprintf(stderr, "case %d: %lld models in %.2f s\n", i, (long long)nbf, fs_now() - t0);
	}
	free_list(bf, nbf);
	free(dump);
	fs_free(&e);
	sq_free(&q);
}

/* A model with one choice ("op": conv with op_kernel and op_width, or
 * pool) on a T4 within 2500 MiB: a query's text up to its "space". */
#define NESTED_QUERY_HEAD \
	"{\"device\": \"t4\", \"budgets\": {\"memory\": \"2500MiB\"}," \
	" \"model\": {\"dnnsat_model\": 1, \"name\": \"nested\"," \
	"  \"hyperparameters\": {\"batch_size\": {\"type\": \"int\", \"default\": 8, \"min\": 1}," \
	"   \"op\": {\"type\": \"categorical\", \"values\": [\"conv\", \"pool\"], \"default\": \"pool\"}," \
	"   \"op_kernel\": {\"type\": \"int\", \"default\": 3, \"min\": 1, \"max\": 15}," \
	"   \"op_width\": {\"type\": \"int\", \"default\": 64, \"min\": 1}}," \
	"  \"inputs\": [{\"shape\": [\"batch_size\", 3, 128, 128]}]," \
	"  \"layers\": [{\"op\": \"conv2d\", \"out_channels\": 32, \"kernel\": 3, \"padding\": 1}," \
	"   {\"choice\": \"op\", \"options\": {" \
	"     \"conv\": [{\"op\": \"conv2d\", \"out_channels\": \"op_width\", \"kernel\": \"op_kernel\", \"padding\": \"op_kernel / 2\"}]," \
	"     \"pool\": [{\"op\": \"maxpool2d\", \"kernel\": 2}]}}," \
	"   {\"op\": \"adaptive_avgpool2d\"}, {\"op\": \"flatten\"}, {\"op\": \"linear\", \"out_features\": 10}]},"

/* ---- one query's set-up: parsed, counted exactly, brute force ---- */

/* Parses req into q (load_catalog first). */
static __attribute__((unused)) void
parse_query(json_t *req, struct sq_query *q)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, q, &err) == 0, "%s", err.message);
}

/* q's exact count (fs_count_all to the end, in an engine of its own) and
 * its feasible configurations by brute force (*bf, *nbf: free_list them),
 * checked to agree. */
static __attribute__((unused)) fs_count
exact_count(struct sq_query *q, char ***bf, int64_t *nbf)
{
	struct fs_engine e;
	struct dn_error err;
	fs_count exact;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_init(&e, q, &err), 0);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	exact = e.lower;
	*nbf = brute(&e, bf);
	ck_assert_int_eq((int64_t)exact, *nbf);
	fs_free(&e);
	return exact;
}

/* ---- saved progress: fs_progress_save, fs_progress_load, fs_count_more ---- */

/* The saved progress of e (the test frees it). */
static __attribute__((unused)) uint8_t *
save_progress(const struct fs_engine *e, size_t *len)
{
	struct dn_error err;
	void *buf;

	memset(&err, 0, sizeof err);
	ck_assert_msg(fs_progress_save(e, &buf, len, &err) == 0, "save: %s", err.message);
	ck_assert(buf != NULL && *len > 0);
	return buf;
}

/* The resolution the tests give continuous vars (0: the engine's default):
 * a coarse grid keeps brute force over it fast. */
static int real_bits;

static __attribute__((unused)) void
init_engine(struct fs_engine *e, struct sq_query *q)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(fs_init(e, q, &err) == 0, "%s", err.message);
	for (int c = 0; c < e->ncvars && real_bits > 0; c++)
		e->cvars[c].bits = real_bits;
}

/* A fresh engine for q holding the saved progress buf. */
static __attribute__((unused)) void
load_progress(struct fs_engine *e, struct sq_query *q, const uint8_t *buf, size_t len)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	init_engine(e, q);
	ck_assert_msg(fs_progress_load(e, buf, len, &err) == 0, "load: %s", err.message);
}

/* Up to `work` more bound calls of counting (fs_count_all the first time). */
static __attribute__((unused)) void
count_slice(struct fs_engine *e, int64_t work, int first)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	e->work_limit = e->bound_calls + work;
	ck_assert_msg((first ? fs_count_all(e, 0, &err) : fs_count_more(e, 0, &err)) == 0, "%s", err.message);
	e->work_limit = 0;
	ck_assert(e->lower <= e->upper && e->upper <= e->total);
}

/*
 * Counts q in slices of `work` bound calls, each slice in a new engine
 * loaded from the progress the one before saved, until the count is exact;
 * checks that bounds only tighten and that a loaded tree saves back to the
 * same bytes. A slice that makes no progress (entering the largest leaf
 * took all its work) doubles the work. Leaves the exact engine in e;
 * returns the number of slices.
 */
static __attribute__((unused)) int
count_in_slices(struct sq_query *q, struct fs_engine *e, int64_t work, const char *what)
{
	struct dn_error err;
	int slices = 1;

	memset(&err, 0, sizeof err);
	init_engine(e, q);
	count_slice(e, work, 1);
	while (e->lower != e->upper) {
		fs_count lo = e->lower, hi = e->upper;
		size_t len, len2;
		uint8_t *buf = save_progress(e, &len), *again;
		fs_free(e);
		load_progress(e, q, buf, len);
		ck_assert_msg(e->lower == lo && e->upper == hi && e->timed_out, "%s: bounds changed by a reload", what);
		again = save_progress(e, &len2);
		ck_assert_msg(len2 == len && memcmp(again, buf, len) == 0, "%s: a reloaded tree saves differently", what);
		free(again);
		free(buf);
		{
			int32_t n = e->nnodes;
			count_slice(e, work, 0);
			if (e->nnodes == n && e->lower == lo && e->upper == hi)
				work *= 2;
		}
		ck_assert_msg(e->lower >= lo && e->upper <= hi, "%s: bounds widened", what);
		ck_assert_msg(++slices < 100000 && work < 1000000, "%s: no progress", what);
	}
	ck_assert_int_eq(e->timed_out, 0);
	return slices;
}

/* ---- continuous hyperparameters bound to the model ---- */

/* A model with two real multipliers, the second inside a wide head. */
static const char real_model[] =
    "{\"dnnsat_model\": 1, \"name\": \"cmlp\","
    " \"hyperparameters\": {\"batch_size\": {\"type\": \"int\", \"default\": 32, \"min\": 1},"
    "  \"mult\": {\"type\": \"real\", \"default\": 1.0, \"min\": 0.05, \"max\": 8.0},"
    "  \"mult2\": {\"type\": \"real\", \"default\": 1.0, \"min\": 0.05, \"max\": 8.0},"
    "  \"depth\": {\"type\": \"int\", \"default\": 2, \"min\": 1, \"max\": 6},"
    "  \"head\": {\"type\": \"categorical\", \"values\": [\"small\", \"wide\"], \"default\": \"small\"}},"
    " \"inputs\": [{\"shape\": [\"batch_size\", 512]}],"
    " \"layers\": [{\"op\": \"linear\", \"out_features\": \"round(512 * mult)\"}, {\"op\": \"relu\"},"
    "  {\"repeat\": \"depth\", \"body\": [{\"op\": \"linear\", \"out_features\": \"round(512 * mult)\"}, {\"op\": \"relu\"}]},"
    "  {\"choice\": \"head\", \"options\": {\"small\": [{\"op\": \"linear\", \"out_features\": 10}],"
    "   \"wide\": [{\"op\": \"linear\", \"out_features\": \"round(2048 * mult2)\"}, {\"op\": \"relu\"},"
    "              {\"op\": \"linear\", \"out_features\": 10}]}}]}";

static __attribute__((unused)) json_t *
range(const char *type, double lo, double hi)
{
	return json_pack("{s:s,s:[f,f]}", "_type", type, "_value", lo, hi);
}

/* A random query with continuous hyperparameters: MobileNetV2's width
 * multiplier; the model above with one multiplier; the same with the
 * second one nested in the "wide" option of a choice. */
static __attribute__((unused)) json_t *
random_real_query(int i)
{
	static const int batches[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
	json_t *space = json_object(), *q, *b;
	const char *type = rnd(3) == 0 ? "loguniform" : "uniform";

	if (i % 3 == 0) {
		static const char *mem[] = { "1200MiB", "1500MiB", "2GiB", "3GiB", "5GiB" };
		json_object_set_new(space, "batch_size", choice(pick(batches, 11, 3)));
		json_object_set_new(space, "resolution", json_pack("{s:s,s:[i,i,i]}", "_type", "quniform", "_value",
		    96, 96 + 32 * (int)(1 + rnd(2)), 32));
		json_object_set_new(space, "width_mult", range(type, 0.1 + 0.2 * (double)rnd(5),
		    1.0 + 0.25 * (double)rnd(8)));
		json_object_set_new(space, "lr", range("loguniform", 1e-4, 1e-1));
		q = json_pack("{s:s,s:o,s:s}", "model", "mobilenet_v2", "space", space, "device", "t4");
		b = json_pack("{s:s}", "memory", mem[rnd(5)]);
	} else {
		json_object_set_new(space, "batch_size", choice(pick(batches, 11, 4)));
		json_object_set_new(space, "mult", range(type, 0.75 + 0.25 * (double)rnd(3), 2.0 + 0.5 * (double)rnd(5)));
		json_object_set_new(space, "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1,
		    2 + (int)rnd(4)));
		if (i % 3 == 1)
			json_object_set_new(space, "head", choice(json_pack("[s,s]", "small", "wide")));
		else
			json_object_set_new(space, "head", choice(json_pack("[{s:s},{s:s,s:o}]", "_name", "small",
			    "_name", "wide", "mult2", range("uniform", 0.1, 0.5 + 0.5 * (double)rnd(4)))));
		q = json_pack("{s:o,s:o,s:s}", "model", json_loads(real_model, 0, NULL), "space", space,
		    "device", "t4");
		b = json_pack("{s:f}", "params", 2e5 * (double)(3 + rnd(6)));
		if (rnd(3) == 0)
			json_object_set_new(b, "memory", json_string("1300MiB"));
	}
	json_object_set_new(q, "budgets", b);
	return q;
}

/* Value t in [0, 1] of continuous var c's range (its logarithm when
 * loguniform): the cells' formula, written again. */
static __attribute__((unused)) double
real_at(const struct fs_cvar *c, double t)
{
	if (t <= 0)
		return c->L;
	if (t >= 1)
		return c->H;
	return c->logscale ? exp(log(c->L) + t * (log(c->H) - log(c->L))) : c->L + t * (c->H - c->L);
}

/* Brute force over continuous vars: for configuration pos, every point of
 * the product of their samples (sample i of var c: t = i / 2^bits, the
 * grid, or i / 2^(bits+1) when dense). Returns whether one fits; the
 * largest fitting value of var 0 into *best, and widens the hull
 * [hlo, hhi] of fitting values per var. */
static __attribute__((unused)) int
real_exists(struct fs_engine *e, const int64_t *pos, int dense, double *best, double *hlo, double *hhi)
{
	const struct expr_graph *g = e->g;
	union expr_val *cfg = calloc((size_t)e->q->def->nhps + 1, sizeof *cfg);
	union expr_val *vals = calloc((size_t)g->n + 1, sizeof *vals);
	int64_t idx[8] = { 0 }, count[8];
	int act[8], found = 0, nc = e->ncvars;

	ck_assert_int_le(nc, 8);
	for (int c = 0; c < nc; c++) {
		const struct fs_cvar *cv = &e->cvars[c];
		act[c] = cv->parent < 0 || pos[cv->parent] == cv->active_pos;
		count[c] = act[c] ? ((int64_t)1 << (cv->bits + dense)) + 1 : 1;
	}
	*best = NAN;
	fs_config_of(e, pos, cfg);
	for (;;) {
		int c;
		for (c = 0; c < nc; c++) {
			const struct fs_cvar *cv = &e->cvars[c];
			double t = ldexp((double)idx[c], -(cv->bits + dense));
			if (act[c])
				cfg[cv->hp].r = real_at(cv, t);
		}
		if (expr_eval(g, cfg, vals, NULL) == 0 && vals[e->root].i != 0) {
			found = 1;
			for (c = 0; c < nc; c++) {
				double r = cfg[e->cvars[c].hp].r;
				if (!act[c])
					continue;
				if (c == 0 && (isnan(*best) || r > *best))
					*best = r;
				if (hlo != NULL && (isnan(hlo[c]) || r < hlo[c]))
					hlo[c] = r;
				if (hhi != NULL && (isnan(hhi[c]) || r > hhi[c]))
					hhi[c] = r;
			}
		}
		for (c = 0; c < nc && ++idx[c] == count[c]; c++)
			idx[c] = 0;
		if (c == nc)
			break;
	}
	free(cfg);
	free(vals);
	return found;
}

/* ---- the largest and smallest feasible values (ans_extreme) ---- */

/* Whether every value of var v is a number (a parameter with an order). */
static __attribute__((unused)) int
numeric_var(const struct fs_engine *e, int v)
{
	const struct sp_dim *d = &e->q->space.dims[e->vars[v].dim];

	for (int64_t p = 0; p < e->vars[v].n; p++)
		if (isnan(sp_value_num(d, fs_dim_index_of(e, v, p))))
			return 0;
	return 1;
}

/*
 * ans_extreme against brute force for parameter var v, per var u (-1:
 * overall) and goal: each row holds the best value of v over the feasible
 * configurations bf (keys of key_of) in which it takes part with u at that
 * row's position, or null when there is none. Parameters without an order,
 * and per = param, are refused with the field named. Returns 1 when an
 * answer was checked, 0 for a refusal.
 */
static __attribute__((unused)) int
check_extreme(struct fs_engine *e, struct sq_query *q, char **bf, int64_t nbf, int v, int u, int goal,
    const char *what)
{
	const struct sp_dim *d = &q->space.dims[e->vars[v].dim];
	const char *name = d->name, *per = u >= 0 ? q->space.dims[e->vars[u].dim].name : NULL;
	int64_t nrows = u >= 0 ? e->vars[u].n : 1, *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	double *want = malloc(sizeof *want * (size_t)nrows), sign = goal == ANS_LARGEST ? 1 : -1;
	struct dn_error err;
	json_t *rows;
	char how[512];

	memset(&err, 0, sizeof err);
	snprintf(how, sizeof how, "%s: %s %s per %s", what, goal == ANS_LARGEST ? "largest" : "smallest", name,
	    per ? per : "-");
	rows = ans_extreme(e, q, name, per, (enum ans_goal)goal, 0, &err);
	if (u == v || !numeric_var(e, v)) {
		ck_assert_msg(rows == NULL && err.code == DN_EINVAL, "%s: accepted", how);
		ck_assert_str_eq(err.path, u == v ? "per" : "param");
		ck_assert_msg(strstr(err.message, u == v ? "is param itself" : "no order") != NULL, "%s: %s", how,
		    err.message);
		free(want);
		free(pos);
		return 0;
	}
	ck_assert_msg(rows != NULL, "%s: %s", how, err.message);
	for (int64_t r = 0; r < nrows; r++)
		want[r] = NAN;
	for (int64_t k = 0; k < nbf; k++) {
		const char *s = bf[k];
		int64_t r;
		double y;
		for (int w = 0; w < e->nvars; w++, s++)
			pos[w] = strtoll(s, (char **)&s, 10);
		r = u >= 0 ? pos[u] : 0;
		if (pos[v] < 0 || r < 0)
			continue;       /* v or per takes no part in this configuration */
		y = sp_value_num(d, fs_dim_index_of(e, v, pos[v]));
		if (isnan(want[r]) || sign * y > sign * want[r])
			want[r] = y;
	}
	ck_assert_int_eq((int64_t)json_array_size(rows), nrows);
	for (int64_t r = 0; r < nrows; r++) {
		json_t *row = json_array_get(rows, (size_t)r), *got = json_object_get(row, name), *pv;
		if (u >= 0) {
			pv = sp_value_json(&q->space.dims[e->vars[u].dim], fs_dim_index_of(e, u, r));
			ck_assert_msg(json_equal(json_object_get(row, per), pv), "%s: row %lld", how, (long long)r);
			json_decref(pv);
		}
		ck_assert_msg(isnan(want[r]) ? json_is_null(got) : json_is_number(got) &&
		    json_number_value(got) == want[r], "%s, row %lld: %g, brute force %g", how, (long long)r,
		    json_is_number(got) ? json_number_value(got) : NAN, want[r]);
	}
	json_decref(rows);
	free(want);
	free(pos);
	return 1;
}

/* check_extreme for every parameter, per every other one (and itself, and
 * none), both goals. Returns the number of answers checked. */
static __attribute__((unused)) int
check_extremes(struct fs_engine *e, struct sq_query *q, char **bf, int64_t nbf, const char *what)
{
	int checked = 0;

	for (int v = 0; v < e->nvars; v++)
		for (int u = -1; u < e->nvars; u++) {
			checked += check_extreme(e, q, bf, nbf, v, u, ANS_SMALLEST, what);
			checked += check_extreme(e, q, bf, nbf, v, u, ANS_LARGEST, what);
		}
	return checked;
}

#endif
