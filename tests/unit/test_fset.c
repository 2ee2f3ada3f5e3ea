/*
 * test_fset.c - the feasible-set engine against brute force: on 240 random
 * small queries (random templates, domains, budgets and user constraints)
 * the count, the k-th configurations, the cursor walk, the projections and
 * the samples' support equal what evaluating every configuration gives; and
 * on all 240 the set of configurations that Z3 enumerates (every model of
 * sq_z3_assertions) is the brute-force set: MLP and GPT-2 queries as drawn,
 * ResNet, NB201 and MobileNetV2 ones on a smaller variant of the template
 * (small_variant: fewer blocks, cells or groups, the same space, budgets
 * and constraints), itself checked against brute force too. Z3 takes
 * about 0.3 s a space there thanks to the finite-domain tables of z3c
 * (z3c_var_domain). Plus queries with nested choices, huge grids and
 * deadlines. Listing (fs_walk, the tree walk of fs_kth and fs_next) against
 * brute force and against the plain search (e->nav_plain) in every state of
 * an engine - no count, an unfinished one, exact, a capped tree - on small
 * random queries, choices nested two deep, the README's ResNet-50 space
 * (42k nodes) and the 24-layer transformer. Random nested spaces whose
 * options' children share keys (the "names" case): every answer by
 * parameter address against brute force, and Z3's enumeration.
 */
#include "test_util.h"
#include "test_reseal.h"

#include <math.h>

#include "answer.h"
#include "cm_report.h"
#include "fset.h"
#include "fset_priv.h"
#include "fset_project.h"
#include "query.h"
#include "query_z3.h"

static struct cm_device_catalog cat;

static void
load_catalog(void)
{
	test_catalog_load(&cat);
}

static uint64_t rng = 0x2545F4914F6CDD1DULL;

static uint64_t
rnd(uint64_t n)
{
	uint64_t x = test_xorshift(&rng);

	return n ? x % n : 0;
}

/* A random subset (2..max distinct, sorted by pick order) of a value list. */
static json_t *
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

static json_t *
choice(json_t *vals)
{
	return json_pack("{s:s,s:o}", "_type", "choice", "_value", vals);
}

/* A random query over one of several templates. */
static json_t *
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

static char *
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
static json_t *
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

/* Z3's models as engine keys (key_of), collected by z3c_enumerate. */
struct z3_models {
	const struct fs_engine *e;
	int64_t *pos;
	char **keys;
	int64_t n, cap;
	int outside;            /* models with a value outside the engine's grid */
};

/* A model's position on every engine variable (each bound to a hyperparameter;
 * -1 for a nested one whose option the model does not choose). */
static int
z3_model_cb(void *ctx, const union expr_val *model)
{
	struct z3_models *zm = ctx;
	const struct fs_engine *e = zm->e;

	for (int v = 0; v < e->nvars; v++) {
		const struct fs_var *x = &e->vars[v];
		int64_t p = 0;
		if (x->parent >= 0 && zm->pos[x->parent] != x->active_pos) {
			zm->pos[v] = -1;        /* its option is not chosen (parents come first) */
			continue;
		}
		while (p < x->n && (x->real ? x->vals[p].r != model[x->hp].r : x->vals[p].i != model[x->hp].i))
			p++;
		zm->outside += p == x->n;
		zm->pos[v] = p;
	}
	if (zm->n == zm->cap) {
		zm->cap = zm->cap ? 2 * zm->cap : 64;
		zm->keys = realloc(zm->keys, sizeof *zm->keys * (size_t)zm->cap);
	}
	zm->keys[zm->n++] = key_of(e, zm->pos);
	return 0;
}

static int
cmp_key(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Z3's own enumeration of every model of the query's assertions equals the
 * brute-force list bf of nbf feasible configurations, as a set of
 * configurations (not only in number). Every engine variable must be bound
 * to a hyperparameter with an explicit grid (true of the random queries).
 */
static void
z3_check_set(struct sq_query *q, struct fs_engine *e, char **bf, int64_t nbf, const char *what)
{
	struct z3c z;
	struct dn_error err;
	struct z3_models zm;
	Z3_ast *as = NULL;
	char **want;
	int64_t nz;
	int na;

	memset(&err, 0, sizeof err);
	memset(&zm, 0, sizeof zm);
	for (int v = 0; v < e->nvars; v++)
		ck_assert_msg(e->vars[v].hp >= 0 && e->vars[v].vals != NULL, "%s: var %d", what, v);
	zm.e = e;
	zm.pos = calloc((size_t)e->nvars + 1, sizeof *zm.pos);
	Z3_global_param_set("smt.arith.solver", "2");
	/* bounded by work (Z3's rlimit, per check), not by time: no enumeration
	 * here comes near it */
	ck_assert_msg(z3c_init(&z, cm_model_graph(q->model), 0, 50000000u, &err) == 0, "%s", err.message);
	na = sq_z3_assertions(q, e, &z, &as, &err);
	ck_assert_msg(na > 0, "%s", err.message);
	nz = z3c_enumerate(&z, as, na, 0, z3_model_cb, &zm, &err);
	ck_assert_msg(nz >= 0, "%s: z3: %s", what, err.message);
	ck_assert_msg(nz == nbf && zm.outside == 0, "%s: Z3 enumerates %lld models (%d outside the grid), "
	    "brute force %lld", what, (long long)nz, zm.outside, (long long)nbf);
	want = malloc(sizeof *want * (size_t)(nbf + 1));
	for (int64_t k = 0; k < nbf; k++)
		want[k] = bf[k];
	if (nz > 0) {
		qsort(want, (size_t)nbf, sizeof *want, cmp_key);
		qsort(zm.keys, (size_t)nz, sizeof *zm.keys, cmp_key);
	}
	for (int64_t k = 0; k < nz; k++)
		ck_assert_msg(strcmp(zm.keys[k], want[k]) == 0, "%s: Z3's %lld-th model is %s, brute force's %s",
		    what, (long long)k, zm.keys[k], want[k]);
	for (int64_t k = 0; k < nz; k++)
		free(zm.keys[k]);
	free(zm.keys);
	free(zm.pos);
	free(want);
	free(as);
	z3c_free(&z);
}

/* Brute force: every configuration of the grid, in engine order. */
static int64_t
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
static void
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

static void
free_list(char **list, int64_t n)
{
	for (int64_t k = 0; k < n; k++)
		free(list[k]);
	free(list);
}

/* The model's whole reading of a configuration's values, as text. */
static char *
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
static void
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
static void
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
 * z3 set, Z3's enumeration against brute force too. Adds the time Z3
 * took to *z3_s.
 */
static void
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
	if (z3) {
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

START_TEST(test_random_against_brute_force)
{
	static const char *const families[] = { "mlp", "resnet", "nb201", "mobilenet_v2", "gpt2" };
	int cases = 0, z3_cases = 0, per_family[5] = { 0 };
	double z3_s = 0, t0 = fs_now();

	load_catalog();
	for (int i = 0; i < 240; i++) {
		json_t *req = random_query(i), *small = small_variant(req, i);
		int fam = i % 6 == 5 ? 0 : i % 6;

		/* the query as drawn; Z3 too when its graph is small (MLP, GPT-2) */
		check_random_query(req, i, small == NULL, &z3_s);
		cases++;
		/* the large templates: Z3 on a smaller variant (and brute force too) */
		if (small != NULL) {
			check_random_query(small, i, 1, &z3_s);
			cases++;
		}
		z3_cases++;
		per_family[fam]++;
		json_decref(small);
		json_decref(req);
	}
	ck_assert_int_ge(cases, 200);
	ck_assert_int_ge(z3_cases, 200);
	for (int f = 0; f < 5; f++)
		ck_assert_int_ge(per_family[f], 40);
	printf("%d random queries agree with brute force, %d of them also with Z3's enumeration "
	    "(the same set of configurations): %s %d, %s %d, %s %d, %s %d, %s %d; Z3 %.1f s of %.1f s\n",
	    cases, z3_cases, families[0], per_family[0], families[1], per_family[1], families[2],
	    per_family[2], families[3], per_family[3], families[4], per_family[4], z3_s, fs_now() - t0);
	cm_catalog_free(&cat);
}
END_TEST

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The `which` quantile of budget part `kind`'s value (seconds) over every
 * configuration of req's space, with that budget set to `loose` so that
 * it is a part of the query; halfway to the next larger value. */
static double
part_quantile(json_t *req, const char *kind, double which)
{
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int64_t *pos, n = 0, cap = 256;
	double *vals = malloc(sizeof *vals * (size_t)cap), r;
	expr_id val = EXPR_NONE;

	memset(&err, 0, sizeof err);
	json_object_set_new(json_object_get(req, "budgets"), kind, json_string("1000s"));
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", err.path, err.message);
	ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s", err.message);
	for (int i = 0; i < q.nparts; i++)
		if (q.parts[i].kind == 1 && strstr(q.parts[i].label, kind) != NULL)
			val = q.parts[i].value;
	ck_assert_int_ge(val, 0);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	for (int v = 0; v < e.nvars; v++) {
		int p = e.vars[v].parent;
		pos[v] = (p < 0 || pos[p] == e.vars[v].active_pos) ? 0 : -1;
	}
	do {
		fs_config_of(&e, pos, e.config);
		if (expr_tape_eval(&e.tape, e.g, e.config, e.point, NULL) != 0)
			continue;
		if (n == cap) {
			cap *= 2;
			vals = realloc(vals, sizeof *vals * (size_t)cap);
		}
		vals[n++] = e.point[val].r;
	} while (fs_increment(&e, pos) == 0);
	ck_assert_int_gt(n, 0);
	qsort(vals, (size_t)n, sizeof *vals, cmp_double);
	/* halfway to the next larger value: no configuration sits on the
	 * budget, where Z3's exact rationals and the evaluator's doubles may
	 * round a sum to different sides */
	{
		int64_t k = (int64_t)(which * (double)(n - 1)), j = k;
		while (j < n && vals[j] == vals[k])
			j++;
		r = j < n ? (vals[k] + vals[j]) / 2 : vals[k] * 1.5;
	}
	free(vals);
	free(pos);
	fs_free(&e);
	sq_free(&q);
	return r;
}

/* The value of node `val` (REAL) at the configuration pos. */
static double
value_at(struct fs_engine *e, const int64_t *pos, expr_id val)
{
	fs_config_of(e, pos, e->config);
	ck_assert_int_eq(expr_tape_eval(&e->tape, e->g, e->config, e->point, NULL), 0);
	return e->point[val].r;
}

/*
 * cnn5's latency grows with every hyperparameter of its space, and so must
 * its bound over a box: exactly the latencies of the box's smallest and
 * largest corners. The linear layer's rows were elems / in_features
 * (batch * c5 * 7 * 7 over c5 * 7 * 7), whose interval bound is up to 32
 * times the batch: the upper bound of the latency was up to twice the
 * true one, and the search could not decide boxes (10x slower than a
 * memory budget).
 */
START_TEST(test_latency_bound_exact_on_cnn5)
{
	json_t *req;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int64_t pos[64];
	expr_id val = EXPR_NONE;
	int boxes = 0;

	load_catalog();
	memset(&err, 0, sizeof err);
	req = json_pack("{s:o,s:o,s:s,s:{s:s}}", "model", json_load_file(src_path("examples/models/cnn5.json"), 0, NULL),
	    "space", json_load_file(src_path("examples/spaces/cnn5.json"), 0, NULL), "device", "a100-40gb",
	    "budgets", "latency", "50ms");
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s", err.message);
	ck_assert_int_le(e.nvars, 64);
	for (int i = 0; i < q.nparts; i++)
		if (q.parts[i].kind == 1 && strstr(q.parts[i].label, "latency") != NULL)
			val = q.parts[i].value;
	ck_assert_int_ge(val, 0);
	for (int depth = 0; depth <= e.nvars; depth++)
		for (int it = 0; it < 20; it++) {
			int64_t mark = fs_mark(&e);
			double lo, hi;
			for (int v = 0; v < depth; v++) {
				pos[v] = (int64_t)rnd((uint64_t)e.vars[v].n);
				ck_assert_int_eq(fs_narrow(&e, v, pos[v], pos[v]), 0);
			}
			for (int v = depth; v < e.nvars; v++)
				pos[v] = 0;
			lo = value_at(&e, pos, val);
			for (int v = depth; v < e.nvars; v++)
				pos[v] = e.vars[v].n - 1;
			hi = value_at(&e, pos, val);
			/* a few ulps per operation, nothing more */
			ck_assert_msg(e.iv[val].lo.r <= lo && e.iv[val].lo.r >= lo * (1 - 1e-9) &&
			    e.iv[val].hi.r >= hi && e.iv[val].hi.r <= hi * (1 + 1e-9),
			    "depth %d: latency bound [%.9g, %.9g], corners %.9g and %.9g", depth,
			    e.iv[val].lo.r, e.iv[val].hi.r, lo, hi);
			fs_rollback(&e, mark);
			boxes++;
		}
	printf("cnn5: the latency bound is the corners' latencies on %d boxes\n", boxes);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/*
 * The README's ResNet-50 walkthrough space with a latency budget is decided
 * in little work (bound calls, not seconds): its categorical block choice
 * comes first in the engine's order. Last in it, every box left the choice
 * open and summed both alternatives' operators: more than 15,000 bound
 * calls (28 s), against 1,184 now.
 */
START_TEST(test_resnet_latency_in_little_work)
{
	json_t *req;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;

	load_catalog();
	memset(&err, 0, sizeof err);
	req = json_pack("{s:s,s:o,s:s,s:{s:s}}", "model", "resnet50",
	    "space", json_load_file(src_path("examples/spaces/resnet.json"), 0, NULL), "device", "a100-40gb",
	    "budgets", "latency", "300ms");
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s", err.message);
	e.work_limit = 3000;
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	ck_assert_msg(e.lower == e.upper && !e.timed_out, "not decided in %lld bound calls",
	    (long long)e.work_limit);
	ck_assert_int_eq((int64_t)e.lower, 7323);
	printf("ResNet-50 walkthrough, latency <= 300 ms: %lld bound calls\n", (long long)e.bound_calls);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* The cases of test_random_latency_against_brute_force that Z3 enumerates
 * too: about 1 s each (all 60 agree, in 480 s: too long for the suite;
 * real sums of maxima are slow for Z3). */
static int
z3_latency_case(int i)
{
	static const int some[] = { 4, 5, 18, 24, 29, 34, 35, 36, 41, 58 };

	for (size_t k = 0; k < sizeof some / sizeof some[0]; k++)
		if (some[k] == i)
			return 1;
	return 0;
}

/*
 * Latency and step-time budgets (sums over operators of max(compute,
 * memory, launch) times, a different shape of cost than memory): random
 * queries of every family with such a budget at a quantile of its values
 * over the space (so that the budget splits the space), engine against
 * brute force, and Z3 on some (z3_latency_case).
 */
START_TEST(test_random_latency_against_brute_force)
{
	int cases = 0, mixed = 0;
	double z3_s = 0, t0 = fs_now();

	load_catalog();
	for (int i = 0; i < 60; i++) {
		json_t *req = random_query(i), *small = small_variant(req, i);
		const char *kind = i % 2 ? "latency" : "step_time";
		json_t *q = small != NULL ? small : req;
		double limit = part_quantile(q, kind, 0.1 + 0.8 * (double)rnd(1000) / 1000.0);
		char text[64];

		snprintf(text, sizeof text, "%.17gs", limit);
		json_object_set_new(json_object_get(q, "budgets"), kind, json_string(text));
		{
			struct sq_query sq;
			struct fs_engine e;
			struct dn_error err;

			memset(&err, 0, sizeof err);
			ck_assert_int_eq(sq_parse(q, &cat, &sq, &err), 0);
			ck_assert_int_eq(fs_init(&e, &sq, &err), 0);
			ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
			mixed += e.lower > 0 && e.lower < e.total;
			fs_free(&e);
			sq_free(&sq);
		}
		check_random_query(q, i, z3_latency_case(i), &z3_s);
		cases++;
		json_decref(small);
		json_decref(req);
	}
	ck_assert_int_ge(mixed, 30);
	printf("%d random queries with a latency or step-time budget agree with brute force, 10 with Z3 "
	    "(%d split by it); Z3 %.1f s of %.1f s\n", cases, mixed, z3_s, fs_now() - t0);
	cm_catalog_free(&cat);
}
END_TEST

/* ---- allocation failures: the test binary links with --wrap=malloc,
 * --wrap=calloc, --wrap=realloc and --wrap=free (Makefile.am), so that the
 * engine's allocations can be made to fail and those still live counted
 * (calls from the shared libraries, jansson and Check, go to libc
 * directly and are neither failed nor counted) ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

static long fail_countdown = -1;        /* the allocation that fails: 0 the next, -1 none */
static long live_allocs;                /* allocations made minus frees, while counting */
static int counting;                    /* off around Check's own calls (its buffers) */

static int
alloc_fails(void)
{
	return fail_countdown >= 0 && fail_countdown-- == 0;
}

void *
__wrap_malloc(size_t n)
{
	void *p = alloc_fails() ? NULL : __real_malloc(n);

	live_allocs += counting && p != NULL;
	return p;
}

void *
__wrap_calloc(size_t n, size_t size)
{
	void *p = alloc_fails() ? NULL : __real_calloc(n, size);

	live_allocs += counting && p != NULL;
	return p;
}

void *
__wrap_realloc(void *q, size_t n)
{
	void *p = alloc_fails() ? NULL : __real_realloc(q, n);

	live_allocs += counting && q == NULL && p != NULL;
	return p;
}

void
__wrap_free(void *p)
{
	live_allocs -= counting && p != NULL;
	__real_free(p);
}

/* fs_init with its k-th allocation failing, for every k until it succeeds:
 * every failure is an out-of-memory error, and fs_free leaves nothing
 * allocated (the key of the variable order leaked when a variable's
 * init_var failed, and so did that variable's grids) */
START_TEST(test_init_allocation_failures)
{
	json_t *req = random_query(0);
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int k, rc = -1, hit = 1, failed = 0;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	for (k = 0; k < 100000 && hit; k++) {
		memset(&err, 0, sizeof err);
		live_allocs = 0;
		counting = 1;
		fail_countdown = k;
		rc = fs_init(&e, &q, &err);
		hit = fail_countdown < 0;       /* the k-th allocation happened (and failed) */
		failed += rc != 0;
		fail_countdown = -1;
		fs_free(&e);
		counting = 0;
		ck_assert_msg(rc == 0 || err.code == DN_ENOMEM, "allocation %d: %s", k, err.message);
		ck_assert_msg(live_allocs == 0, "allocation %d failed: %ld blocks left allocated (%s)",
		    k, live_allocs, err.message);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_gt(failed, 5);
	printf("fs_init: each of its %d allocations failed in turn (%d made it fail), freed cleanly\n",
	    k - 1, failed);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

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

/* An NNI nested choice: {"op": {"_name": "conv", "kernel": ...} | {"_name": "pool"}}. */
START_TEST(test_nested_choice_space)
{
	json_t *req = json_loads(
	    NESTED_QUERY_HEAD
	    " \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [16, 64, 256, 1024]},"
	    "  \"op\": {\"_type\": \"choice\", \"_value\": ["
	    "    {\"_name\": \"conv\", \"kernel\": {\"_type\": \"choice\", \"_value\": [1, 3, 5, 7]},"
	    "                        \"width\": {\"_type\": \"choice\", \"_value\": [16, 64, 256]}},"
	    "    {\"_name\": \"pool\"}]}}}", 0, NULL);
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	char **bf;
	int64_t nbf, *pos;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(req != NULL, "test JSON");
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", err.path, err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq((int64_t)e.total, 4 * (4 * 3 + 1));
	nbf = brute(&e, &bf);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	ck_assert_int_eq((int64_t)e.lower, nbf);
	ck_assert_int_gt(nbf, 0);
	ck_assert_int_lt(nbf, 52);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	for (int64_t k = 0; k < nbf; k++) {
		char *s;
		ck_assert_int_eq(fs_kth(&e, (fs_count)k, pos, &err), 0);
		s = key_of(&e, pos);
		ck_assert_msg(strcmp(s, bf[k]) == 0, "k-th %lld is %s, brute force %s", (long long)k, s, bf[k]);
		free(s);
		/* NNI's sample format, and back */
		{
			json_t *j = fs_to_json(&e, pos), *op = json_object_get(j, "op");
			int64_t *back = calloc((size_t)e.nvars + 1, sizeof *back);
			ck_assert(json_is_object(op) && json_object_get(op, "_name") != NULL);
			ck_assert_int_eq(fs_from_json(&e, j, back, &err), 0);
			ck_assert(memcmp(back, pos, sizeof *pos * (size_t)e.nvars) == 0);
			free(back);
			json_decref(j);
		}
	}
	free(pos);
	for (int64_t k = 0; k < nbf; k++)
		free(bf[k]);
	free(bf);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

START_TEST(test_huge_grid_and_deadline)
{
	/* batch sizes 1 .. 10^12: bisection decides it in a few dozen boxes */
	json_t *req = json_loads(
	    "{\"model\": {\"dnnsat_model\": 1, \"name\": \"wide\","
	    "  \"hyperparameters\": {\"n\": {\"type\": \"int\", \"default\": 1, \"min\": 1}},"
	    "  \"inputs\": [{\"shape\": [\"n\", 1024]}],"
	    "  \"layers\": [{\"op\": \"linear\", \"out_features\": 1024}, {\"op\": \"relu\"},"
	    "             {\"op\": \"linear\", \"out_features\": 10}]},"
	    " \"space\": {\"n\": {\"_type\": \"randint\", \"_value\": [1, 1000000000000]}},"
	    " \"budgets\": {\"memory\": \"16GiB\"}}", 0, NULL);
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int64_t pos[1];
	char lo[64];

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	ck_assert(e.lower == e.upper);
	fs_count_str(e.lower, lo, sizeof lo);
	ck_assert_int_gt((int64_t)e.lower, 100000);
	ck_assert_int_lt((int64_t)e.lower, 10000000);
	ck_assert_int_lt(e.bound_calls, 300);
	{
		/* with a deadline, best-first refinement reaches the same exact count */
		fs_count exact = e.lower;
		ck_assert_int_eq(fs_count_all(&e, 10, &err), 0);
		ck_assert(e.lower == exact && e.upper == exact);
	}
	/* the last feasible batch fits, the next one does not */
	ck_assert_int_eq(fs_kth(&e, e.lower - 1, pos, &err), 0);
	ck_assert(fs_feasible_at(&e, pos));
	pos[0]++;
	ck_assert(!fs_feasible_at(&e, pos));
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* A deadline gives certified bounds that contain the exact count and
 * tighten with more time. */
START_TEST(test_deadline_bounds)
{
	json_t *req = random_query(1);
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	fs_count exact, lo1, hi1;

	load_catalog();
	memset(&err, 0, sizeof err);
	json_object_set_new(json_object_get(req, "space"), "layers3", json_pack("{s:s,s:[i,i]}", "_type", "randint",
	    "_value", 1, 40));
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	exact = e.lower;
	ck_assert_int_eq(fs_count_all(&e, 1e-4, &err), 0);
	lo1 = e.lower;
	hi1 = e.upper;
	ck_assert(lo1 <= exact && exact <= hi1);
	ck_assert_int_eq(fs_count_all(&e, 30, &err), 0);
	ck_assert(e.lower == exact && e.upper == exact);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* ---- saved progress: fs_progress_save, fs_progress_load, fs_count_more ---- */

/* The saved progress of e (the test frees it). */
static uint8_t *
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

static void
init_engine(struct fs_engine *e, struct sq_query *q)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(fs_init(e, q, &err) == 0, "%s", err.message);
	for (int c = 0; c < e->ncvars && real_bits > 0; c++)
		e->cvars[c].bits = real_bits;
}

/* A fresh engine for q holding the saved progress buf. */
static void
load_progress(struct fs_engine *e, struct sq_query *q, const uint8_t *buf, size_t len)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	init_engine(e, q);
	ck_assert_msg(fs_progress_load(e, buf, len, &err) == 0, "load: %s", err.message);
}

/* Up to `work` more bound calls of counting (fs_count_all the first time). */
static void
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
static int
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

/* Random queries counted in small slices across save and load agree with
 * brute force; so does an exact count saved and loaded. */
START_TEST(test_progress_resume_random)
{
	int resumed = 0;

	load_catalog();
	for (int i = 0; i < 60; i++) {
		json_t *req = random_query(i);
		struct sq_query q;
		struct fs_engine e, f;
		struct dn_error err;
		char **bf, what[4096], *dump = json_dumps(req, JSON_COMPACT);
		int64_t nbf;
		size_t len;
		uint8_t *buf;
		int slices;

		memset(&err, 0, sizeof err);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "case %d: %s", i, err.message);
		snprintf(what, sizeof what, "case %d: %s", i, dump);
		slices = count_in_slices(&q, &e, 1 + (int64_t)rnd(6), what);
		resumed += slices > 1;
		nbf = brute(&e, &bf);
		check_answers(&e, bf, nbf, what);
		/* an exact count saved and loaded answers the same, and needs no more counting */
		buf = save_progress(&e, &len);
		load_progress(&f, &q, buf, len);
		ck_assert(f.lower == e.lower && f.upper == e.upper && !f.timed_out);
		ck_assert_int_eq(fs_count_more(&f, 0, &err), 0);
		ck_assert_int_eq(f.nnodes, e.nnodes);
		check_answers(&f, bf, nbf, what);
		free(buf);
		fs_free(&f);
		free_list(bf, nbf);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
		free(dump);
	}
	ck_assert_int_ge(resumed, 30);
	printf("60 random queries counted across saved progress agree with brute force (%d of them resumed)\n",
	    resumed);
	cm_catalog_free(&cat);
}
END_TEST

/* The query of test_deadline_bounds, larger: ResNet-18 with a deep third stage. */
static json_t *
deep_resnet_query(const char *memory)
{
	json_t *req = random_query(1);

	json_object_set_new(json_object_get(req, "space"), "layers3", json_pack("{s:s,s:[i,i]}", "_type", "randint",
	    "_value", 1, 40));
	json_object_set_new(json_object_get(req, "budgets"), "memory", json_string(memory));
	return req;
}

/* A count cut short by a tiny deadline, saved, loaded elsewhere and
 * continued (more tiny deadlines, then to the end) equals the count done at
 * once, with the same configurations in the same order. */
START_TEST(test_progress_deadline)
{
	json_t *req = deep_resnet_query("3GiB"), *other = deep_resnet_query("4GiB");
	struct sq_query q, q2;
	struct fs_engine e, f;
	struct dn_error err;
	char **bf;
	int64_t nbf;
	size_t len;
	uint8_t *buf;
	fs_count exact;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_msg(sq_parse(other, &cat, &q2, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	exact = e.lower;
	nbf = brute(&e, &bf);
	ck_assert_int_eq((int64_t)exact, nbf);
	fs_free(&e);

	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq(fs_count_all(&e, 1e-6, &err), 0);
	ck_assert_msg(e.lower < e.upper && e.timed_out, "a 1 us deadline did not interrupt the count");
	for (int round = 0; round < 3 && e.lower != e.upper; round++) {
		fs_count lo = e.lower, hi = e.upper;
		ck_assert(lo <= exact && exact <= hi);
		buf = save_progress(&e, &len);
		fs_free(&e);
		load_progress(&e, &q, buf, len);
		free(buf);
		ck_assert_int_eq(fs_count_more(&e, 1e-6, &err), 0);
		ck_assert(e.lower >= lo && e.upper <= hi && e.lower <= exact && exact <= e.upper);
	}
	/* a blob of another budget is another query */
	buf = save_progress(&e, &len);
	ck_assert_int_eq(fs_init(&f, &q2, &err), 0);
	ck_assert_int_eq(fs_progress_load(&f, buf, len, &err), -1);
	ck_assert_msg(strstr(err.message, "another query") != NULL, "%s", err.message);
	ck_assert_int_eq(f.counted, 0);
	fs_free(&f);
	free(buf);
	ck_assert_int_eq(fs_count_more(&e, 0, &err), 0);
	ck_assert(e.lower == exact && e.upper == exact && !e.timed_out);
	check_answers(&e, bf, nbf, "resumed deep ResNet");
	/* more on an exact count changes nothing */
	{
		int32_t n = e.nnodes;
		ck_assert_int_eq(fs_count_more(&e, 1, &err), 0);
		ck_assert(e.nnodes == n && e.lower == exact);
	}
	fs_free(&e);
	/* nothing to continue before a count */
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	dn_error_clear(&err);
	ck_assert_int_eq(fs_count_more(&e, 1, &err), -1);
	ck_assert_int_eq(fs_progress_save(&e, (void **)&buf, &len, &err), -1);
	fs_free(&e);
	free_list(bf, nbf);
	sq_free(&q);
	sq_free(&q2);
	json_decref(req);
	json_decref(other);
	cm_catalog_free(&cat);
}
END_TEST

/* Loads a damaged blob into t (an engine with a count of its own): either
 * it is rejected and t is unchanged, or it loads and counting it to the end
 * gives the right count. Returns 1 when it loaded. */
static int
load_damaged(struct fs_engine *t, const uint8_t *b, size_t len, fs_count exact, const uint8_t *orig, size_t olen)
{
	struct dn_error err;
	fs_count lo = t->lower, hi = t->upper;
	int32_t n = t->nnodes;

	memset(&err, 0, sizeof err);
	if (fs_progress_load(t, b, len, &err) != 0) {
		ck_assert_msg(dn_error_isset(&err), "a rejection says why");
		ck_assert(t->lower == lo && t->upper == hi && t->nnodes == n && t->counted);
		return 0;
	}
	ck_assert_int_eq(fs_count_more(t, 0, &err), 0);
	ck_assert_msg(t->lower == exact && t->upper == exact, "a damaged blob loaded and gave a wrong count");
	ck_assert_int_eq(fs_progress_load(t, orig, olen, &err), 0);      /* back to the partial count */
	return 1;
}

/* Truncated and damaged blobs are rejected (or, resealed, load only what
 * counts right), never crash, and leave the engine usable. */
START_TEST(test_progress_corrupt)
{
	json_t *req = random_query(3);
	struct sq_query q;
	struct fs_engine e, t;
	struct dn_error err;
	size_t len;
	uint8_t *blob, *b;
	fs_count exact;
	uint64_t seed = 12345;
	int loaded = 0;
	int64_t work;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	work = e.bound_calls;
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	exact = e.lower;
	work = e.bound_calls - work;
	ck_assert_int_ge(work, 12);
	fs_free(&e);
	/* a third of the count */
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	count_slice(&e, work / 3, 1);
	ck_assert_msg(e.lower < e.upper, "the slice finished the count");
	blob = save_progress(&e, &len);
	load_progress(&t, &q, blob, len);
	b = malloc(len);
	/* every truncation */
	for (size_t n = 0; n < len; n++) {
		memcpy(b, blob, n);
		ck_assert_int_eq(load_damaged(&t, b, n, exact, blob, len), 0);
	}
	/* random byte changes, as stored (the checksum rejects them) and resealed */
	for (int i = 0; i < 4000; i++) {
		int nflips = 1 + (int)(test_xorshift(&seed) % 3);
		memcpy(b, blob, len);
		for (int k = 0; k < nflips; k++)
			b[test_xorshift(&seed) % len] ^= (uint8_t)(1 + test_xorshift(&seed) % 255);
		if (memcmp(b, blob, len) == 0)
			continue;
		if (i % 2 == 0) {
			ck_assert_int_eq(load_damaged(&t, b, len, exact, blob, len), 0);
		} else {
			test_reseal(b, len);
			if (memcmp(b, blob, len) == 0)
				continue;       /* only the checksum was hit */
			loaded += load_damaged(&t, b, len, exact, blob, len);
		}
	}
	/* a blob of another engine's tree, a blob cut and padded back to length */
	ck_assert_int_eq(fs_progress_load(&t, "DNFP", 4, &err), -1);
	memcpy(b, blob, len);
	memset(b + len / 2, 0, len - len / 2);
	test_reseal(b, len);
	ck_assert_int_eq(load_damaged(&t, b, len, exact, blob, len), 0);
	/* still usable */
	ck_assert_int_eq(fs_count_more(&t, 0, &err), 0);
	ck_assert(t.lower == exact && t.upper == exact);
	printf("progress blob of %zu bytes: every truncation and 4000 damaged copies rejected or exact (%d loaded)\n",
	    len, loaded);
	free(b);
	free(blob);
	fs_free(&t);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

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

static json_t *
range(const char *type, double lo, double hi)
{
	return json_pack("{s:s,s:[f,f]}", "_type", type, "_value", lo, hi);
}

/* A random query with continuous hyperparameters: MobileNetV2's width
 * multiplier; the model above with one multiplier; the same with the
 * second one nested in the "wide" option of a choice. */
static json_t *
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
static double
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
static int
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

/* Continuous hyperparameters against brute force: the count and every
 * answer exact on the engine's grid, witnesses that fit (the largest grid
 * value for one), the reduced range holding every value that fits on a
 * grid twice as fine (conservative), and the same count across saved
 * progress. */
START_TEST(test_real_against_brute_force)
{
	int cases = 0, offgrid = 0, narrowed = 0;

	load_catalog();
	for (int i = 0; i < 36; i++) {
		json_t *req = random_real_query(i);
		char *dump = json_dumps(req, JSON_COMPACT), what[4096], **bf;
		struct sq_query q;
		struct fs_engine e, f;
		struct dn_error err;
		struct fs_projection p;
		int64_t nbf = 0, cap = 64, ndense = 0, *pos;
		double hlo[8], hhi[8];

		memset(&err, 0, sizeof err);
		snprintf(what, sizeof what, "real case %d: %s", i, dump);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s: %s", what, err.path, err.message);
		real_bits = i % 3 == 2 ? 4 : i < 3 ? 0 : 6;     /* two vars: 4 bits each; two cases at the default */
		init_engine(&e, &q);
		ck_assert_msg(e.ncvars == (i % 3 == 2 ? 2 : 1), "%s: %d continuous vars", what, e.ncvars);
		for (int c = 0; c < e.ncvars; c++)
			hlo[c] = hhi[c] = NAN;
		/* brute force on the grid and on a grid twice as fine */
		pos = calloc((size_t)e.nvars + 1, sizeof *pos);
		bf = malloc(sizeof *bf * (size_t)cap);
		for (int v = 0; v < e.nvars; v++) {
			int par = e.vars[v].parent;
			pos[v] = (par < 0 || pos[par] == e.vars[v].active_pos) ? 0 : -1;
		}
		do {
			double best, dbest, w[8];
			int on_grid = real_exists(&e, pos, 0, &best, NULL, NULL);
			int fine = real_exists(&e, pos, 1, &dbest, hlo, hhi);
			ck_assert_msg(fs_feasible_at(&e, pos) == on_grid, "%s: fs_feasible_at", what);
			ck_assert_int_eq(fs_real_witness(&e, pos, w), on_grid);
			if (on_grid) {
				if (e.ncvars == 1)
					ck_assert_msg(w[0] == best, "%s: witness %.17g, largest grid value %.17g", what, w[0], best);
				if (nbf == cap)
					bf = realloc(bf, sizeof *bf * (size_t)(cap *= 2));
				bf[nbf++] = key_of(&e, pos);
			}
			ck_assert_msg(fine || !on_grid, "%s: the fine grid holds the grid", what);
			ndense += fine;
		} while (fs_increment(&e, pos) == 0);
		offgrid += ndense > nbf;
		ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
		if (getenv("REAL_VERBOSE"))
			fprintf(stderr, "case %d: %lld of %lld fit (%lld on the fine grid), %lld bound calls, %lld evaluations\n",
			    i, (long long)nbf, (long long)e.total, (long long)ndense, (long long)e.bound_calls,
			    (long long)e.evals);
		check_answers(&e, bf, nbf, what);
		/* the reduced range holds every value that fits */
		ck_assert_int_eq(fs_project(&e, &p, &err), 0);
		ck_assert_int_eq(p.ncvars, e.ncvars);
		for (int c = 0; c < e.ncvars; c++) {
			if (isnan(hlo[c]))
				continue;
			ck_assert_msg(p.real_lo[c] <= hlo[c] && hhi[c] <= p.real_hi[c], "%s: var %d fits over [%g, %g], "
			    "reduced to [%g, %g]", what, c, hlo[c], hhi[c], p.real_lo[c], p.real_hi[c]);
			narrowed += p.real_lo[c] > e.cvars[c].L || p.real_hi[c] < e.cvars[c].H;
		}
		if (nbf > 0) {
			json_t *r = fs_reduced_space(&e, &p, &err), *lr;
			ck_assert_msg(r != NULL, "%s: %s", what, err.message);
			lr = json_object_get(r, "lr");
			ck_assert(lr == NULL || json_equal(lr, json_object_get(json_object_get(req, "space"), "lr")));
			json_decref(r);
		}
		fs_projection_free(&p);
		/* and counted in slices across saved progress */
		count_in_slices(&q, &f, 1 + (int64_t)rnd(40), what);
		ck_assert_msg((int64_t)f.lower == nbf, "%s: resumed count %lld, brute force %lld", what,
		    (long long)f.lower, (long long)nbf);
		fs_free(&f);
		free_list(bf, nbf);
		free(pos);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
		free(dump);
		cases++;
	}
	real_bits = 0;
	printf("%d queries with continuous hyperparameters agree with brute force on their grids "
	    "(%d have configurations that fit only off the grid; %d reduced ranges narrowed)\n", cases, offgrid, narrowed);
	cm_catalog_free(&cat);
}
END_TEST

/* ---- the largest and smallest feasible values (ans_extreme) ---- */

/* Whether every value of var v is a number (a parameter with an order). */
static int
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
static int
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
static int
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

/* A space with a nested choice whose option holds a numeric parameter,
 * and parameters that pass through with numbers listed out of order (one
 * of them nested): their positions are not sorted by value. */
static json_t *
nested_extreme_query(int i)
{
	static const int batches[] = { 1, 4, 16, 64, 256, 1024 };
	json_t *req = json_pack("{s:o,s:s,s:{s:f}}", "model", json_loads(real_model, 0, NULL), "device", "t4",
	    "budgets", "params", 2e5 * (double)(3 + rnd(6))), *space = json_object();

	json_object_set_new(space, "batch_size", choice(pick(batches, 6, 4)));
	json_object_set_new(space, "mult", choice(json_pack("[f,f,f,f]", 2.0, 0.5, 1.5, 1.0)));
	json_object_set_new(space, "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1,
	    2 + (int)rnd(4)));
	json_object_set_new(space, "lr", choice(json_pack("[f,f,f,f]", 0.5, 0.001, 0.01, 0.1)));
	json_object_set_new(space, "head", choice(json_pack("[{s:s},{s:s,s:o,s:o}]", "_name", "small", "_name", "wide",
	    "mult2", choice(json_pack("[f,f,f]", 0.75, 0.25, 0.5)), "dropout", choice(json_pack("[f,f]", 0.5, 0.1)))));
	if (i % 2)
		json_object_set_new(req, "budgets", json_pack("{s:f,s:s}", "params", 1e6, "memory", "1300MiB"));
	json_object_set_new(req, "space", space);
	return req;
}

/* A query of a two-layer MLP over batch n and width w (the space and the
 * budgets given as JSON members); new reference. */
static json_t *
wide2_query(const char *space_and_budgets)
{
	char text[2048];

	snprintf(text, sizeof text,
	    "{\"model\": {\"dnnsat_model\": 1, \"name\": \"wide2\","
	    "  \"hyperparameters\": {\"n\": {\"type\": \"int\", \"default\": 1, \"min\": 1},"
	    "                       \"w\": {\"type\": \"int\", \"default\": 64, \"min\": 1}},"
	    "  \"inputs\": [{\"shape\": [\"n\", 1024]}],"
	    "  \"layers\": [{\"op\": \"linear\", \"out_features\": \"w\"}, {\"op\": \"relu\"},"
	    "             {\"op\": \"linear\", \"out_features\": 10}]},"
	    " %s}", space_and_budgets);
	return json_loads(text, 0, NULL);
}

/* A huge grid (10^12 batch sizes) per width: the largest batch fits and the
 * next one does not, found in a few searches; the smallest is 1. */
START_TEST(test_extreme_huge_grid)
{
	json_t *req = wide2_query(
	    " \"space\": {\"n\": {\"_type\": \"randint\", \"_value\": [1, 1000000000000]},"
	    "           \"w\": {\"_type\": \"choice\", \"_value\": [4096, 256, 1024]}},"
	    " \"budgets\": {\"memory\": \"8GiB\"}"), *big, *small, *row;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	size_t i;
	double t;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	t = fs_now();
	big = ans_extreme(&e, &q, "n", "w", ANS_LARGEST, 30, &err);
	ck_assert_msg(big != NULL, "%s", err.message);
	small = ans_extreme(&e, &q, "n", "w", ANS_SMALLEST, 30, &err);
	ck_assert_msg(small != NULL, "%s", err.message);
	ck_assert_msg(fs_now() - t < 10, "%.1f s", fs_now() - t);
	ck_assert_int_eq(json_array_size(big), 3);
	json_array_foreach(big, i, row) {
		json_t *n = json_object_get(row, "n"), *w = json_object_get(row, "w");
		int64_t pos[2];
		char cfg[128];
		ck_assert(json_is_integer(n) && json_is_integer(w));
		ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(small, i), "n")), 1);
		ck_assert_int_gt(json_integer_value(n), 1000);
		for (int next = 0; next < 2; next++) {
			json_t *c;
			snprintf(cfg, sizeof cfg, "{\"n\": %lld, \"w\": %lld}", (long long)json_integer_value(n) + next,
			    (long long)json_integer_value(w));
			c = json_loads(cfg, 0, NULL);
			ck_assert_int_eq(fs_from_json(&e, c, pos, &err), 0);
			ck_assert_msg(fs_feasible_at(&e, pos) == !next, "%s", cfg);
			json_decref(c);
		}
	}
	/* wider layers leave room for fewer samples; rows in the order of w's positions */
	ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(big, 0), "w")), 256);
	ck_assert_int_gt(json_integer_value(json_object_get(json_array_get(big, 0), "n")),
	    json_integer_value(json_object_get(json_array_get(big, 2), "n")));
	json_decref(big);
	json_decref(small);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* One query against brute force (check_extremes); takes req. Returns the
 * number of answers checked. */
static int
extreme_case(json_t *req, int i)
{
	char *dump = json_dumps(req, JSON_COMPACT), what[4096], **bf;
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int64_t nbf;
	int answers;

	memset(&err, 0, sizeof err);
	snprintf(what, sizeof what, "extreme case %d: %s", i, dump);
	free(dump);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s: %s", what, err.path, err.message);
	ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s: %s", what, err.message);
	nbf = brute(&e, &bf);
	answers = check_extremes(&e, &q, bf, nbf, what);
	free_list(bf, nbf);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	return answers;
}

/* The random queries of the engine's tests, those with continuous
 * hyperparameters (their discrete parameters), and nested ones. */
START_TEST(test_extreme_against_brute_force)
{
	int answers = 0, n = 72;

	load_catalog();
	for (int i = 0; i < n; i++)
		answers += extreme_case(i < 48 ? random_query(i) : i < 60 ? random_real_query(i) :
		    nested_extreme_query(i), i);
	ck_assert_int_ge(answers, 2000);
	printf("%d queries: %d largest and smallest values agree with brute force\n", n, answers);
	cm_catalog_free(&cat);
}
END_TEST

/* ---- nested spaces whose options' children share names ---- */

/* A random MLP query whose nested choices give several parameters the same
 * key (and the same short form "parent/key"): "activation" (and, in the
 * second shape, "dropout" inside it, two deep) with an option per value of
 * the categorical hyperparameter, each holding its own "hidden", "depth"
 * or "dropout". Every parameter is bound to a hyperparameter with an
 * explicit grid, so that Z3 enumerates the same set. */
static json_t *
random_nested_query(int i)
{
	static const int batches[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
	static const int hiddens[] = { 64, 128, 320, 576, 1024, 1600 };
	static const int depths[] = { 1, 2, 3, 4, 5 };
	const char *mem[] = { "2GiB", "3GiB", "4GiB", "6GiB", "8GiB" };
	json_t *space = json_object(), *q, *relu, *gelu, *tanh_opt;

	json_object_set_new(space, "batch_size", choice(pick(batches, 11, 3)));
	relu = json_pack("{s:s,s:o}", "_name", "relu", "hidden", choice(pick(hiddens, 6, 3)));
	gelu = json_pack("{s:s,s:o}", "_name", "gelu", "hidden", json_pack("{s:s,s:[i,i,i]}", "_type", "quniform",
	    "_value", 64, 64 + 256 * (int)(1 + rnd(4)), 256));
	tanh_opt = json_pack("{s:s}", "_name", "tanh");
	switch (i % 3) {
	case 0:         /* one deep: hidden and depth in two options each */
		json_object_set_new(relu, "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1,
		    2 + (int)rnd(4)));
		json_object_set_new(gelu, "depth", choice(pick(depths, 5, 3)));
		json_object_set_new(space, "activation", choice(json_pack("[o,o,o]", relu, gelu, tanh_opt)));
		break;
	case 1:         /* two deep: dropout's options in two activations, depth under three of them */
		json_object_set_new(relu, "dropout", choice(json_pack("[{s:s,s:o},{s:s,s:o}]",
		    "_name", "none", "depth", json_pack("{s:s,s:[i,i]}", "_type", "randint", "_value", 1, 2 + (int)rnd(4)),
		    "_name", "0.5", "depth", choice(pick(depths, 5, 3)))));
		json_object_set_new(gelu, "dropout", choice(json_pack("[{s:s,s:o},{s:s}]",
		    "_name", "0.1", "depth", choice(pick(depths, 5, 2)), "_name", "none")));
		json_object_set_new(space, "activation", choice(json_pack("[o,o,o]", relu, gelu, tanh_opt)));
		break;
	default:        /* two deep the other way round, a top-level depth beside nested ones */
		json_object_set_new(tanh_opt, "hidden", choice(pick(hiddens, 6, 2)));
		json_object_set_new(space, "dropout", choice(json_pack("[{s:s,s:o},{s:s,s:o}]",
		    "_name", "0.1", "activation", choice(json_pack("[o,o]", relu, gelu)),
		    "_name", "none", "activation", choice(json_pack("[o]", tanh_opt)))));
		json_object_set_new(space, "depth", choice(pick(depths, 5, 3)));
		break;
	}
	q = json_pack("{s:s,s:o,s:s,s:{s:s}}", "model", "mlp", "space", space, "device", "a100-40gb",
	    "budgets", "memory", mem[rnd(5)]);
	if (rnd(2))
		json_object_set_new(q, "constraints", json_pack("[s]", "hidden * depth <= 1500"));
	return q;
}

/* The feasible configurations of bf (keys of key_of) as position vectors
 * (nbf rows of e->nvars). */
static int64_t *
bf_positions(const struct fs_engine *e, char **bf, int64_t nbf)
{
	int64_t *all = malloc(sizeof *all * (size_t)(nbf * e->nvars + 1));

	for (int64_t k = 0; k < nbf; k++) {
		const char *s = bf[k];
		for (int w = 0; w < e->nvars; w++, s++)
			all[k * e->nvars + w] = strtoll(s, (char **)&s, 10);
	}
	return all;
}

/*
 * ans_explain_value on every value of every parameter, by its address:
 * kept exactly when some feasible configuration has it (the parameter
 * taking part), the answer naming the address. By the short form: the
 * same answer when only one parameter has it, an error listing the
 * addresses when several do.
 */
static void
check_explain_values(struct fs_engine *e, struct sq_query *q, const int64_t *all, int64_t nbf, const char *what)
{
	struct dn_error err;

	for (int v = 0; v < e->nvars; v++) {
		const struct sp_dim *d = &q->space.dims[e->vars[v].dim];
		int shared = 0;
		for (int k = 0; k < q->space.ndims; k++)
			shared += strcmp(q->space.dims[k].short_name, d->short_name) == 0;
		for (int64_t p = 0; p < e->vars[v].n; p++) {
			json_t *val = sp_value_json(d, fs_dim_index_of(e, v, p)), *out;
			int want = 0;
			for (int64_t k = 0; k < nbf && !want; k++)
				want = all[k * e->nvars + v] == p;
			memset(&err, 0, sizeof err);
			out = ans_explain_value(e, q, d->name, val, 0, &err);
			ck_assert_msg(out != NULL, "%s: explain %s: %s", what, d->name, err.message);
			ck_assert_msg(json_is_true(json_object_get(out, "kept")) == want, "%s: explain %s = position %lld: "
			    "kept %d, brute force %d", what, d->name, (long long)p, !want, want);
			ck_assert_str_eq(json_string_value(json_object_get(out, "param")), d->name);
			json_decref(out);
			memset(&err, 0, sizeof err);
			out = ans_explain_value(e, q, d->short_name, val, 0, &err);
			if (shared == 1) {
				ck_assert_msg(out != NULL, "%s: explain %s: %s", what, d->short_name, err.message);
				ck_assert_int_eq(json_is_true(json_object_get(out, "kept")), want);
				ck_assert_str_eq(json_string_value(json_object_get(out, "param")), d->name);
			} else {
				ck_assert_msg(out == NULL && err.code == DN_EINVAL && strcmp(err.path, "param") == 0 &&
				    strstr(err.message, "is ambiguous: ") != NULL && strstr(err.message, d->name) != NULL,
				    "%s: explain %s: %s", what, d->short_name, err.message);
			}
			json_decref(out);
			json_decref(val);
		}
	}
}

/* ans_heatmap on every pair of parameters: a cell is true exactly when some
 * feasible configuration has both values (both taking part). */
static void
check_heatmaps(struct fs_engine *e, struct sq_query *q, const int64_t *all, int64_t nbf, const char *what)
{
	struct dn_error err;

	for (int x = 0; x < e->nvars; x++)
		for (int y = 0; y < e->nvars; y++) {
			const char *xn = q->space.dims[e->vars[x].dim].name, *yn = q->space.dims[e->vars[y].dim].name;
			json_t *out, *rows;
			if (x == y)
				continue;
			memset(&err, 0, sizeof err);
			out = ans_heatmap(e, q, xn, yn, 0, &err);
			ck_assert_msg(out != NULL, "%s: heat map %s x %s: %s", what, xn, yn, err.message);
			ck_assert_str_eq(json_string_value(json_object_get(out, "x")), xn);
			ck_assert_str_eq(json_string_value(json_object_get(out, "y")), yn);
			rows = json_object_get(out, "feasible");
			for (int64_t py = 0; py < e->vars[y].n; py++)
				for (int64_t px = 0; px < e->vars[x].n; px++) {
					int want = 0;
					for (int64_t k = 0; k < nbf && !want; k++)
						want = all[k * e->nvars + x] == px && all[k * e->nvars + y] == py;
					ck_assert_msg(json_is_true(json_array_get(json_array_get(rows, (size_t)py), (size_t)px)) ==
					    want, "%s: heat map %s x %s at (%lld, %lld): brute force %d", what, xn, yn,
					    (long long)px, (long long)py, want);
				}
			json_decref(out);
		}
}

/*
 * The reduced space against brute force: parsed again, each of its
 * parameters is found in the query's space by its address and keeps
 * exactly the values some feasible configuration gives it; a parameter
 * with no such value is gone (its option removed).
 */
static void
check_reduced_addresses(struct fs_engine *e, struct sq_query *q, const int64_t *all, int64_t nbf,
    const char *what)
{
	struct fs_projection p;
	struct sp_space r;
	struct dn_error err;
	json_t *red;
	int seen = 0;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_project(e, &p, &err), 0);
	red = fs_reduced_space(e, &p, &err);
	fs_projection_free(&p);
	if (nbf == 0) {
		ck_assert_ptr_null(red);
		return;
	}
	ck_assert_msg(red != NULL, "%s: %s", what, err.message);
	ck_assert_msg(sp_parse(red, &r, &err) == 0, "%s: the reduced space: %s: %s", what, err.path, err.message);
	for (int v = 0; v < e->nvars; v++) {
		const struct sp_dim *d = &q->space.dims[e->vars[v].dim];
		int k = sp_dim_named(&r, d->name), nwant = 0;
		for (int64_t pv = 0; pv < e->vars[v].n; pv++) {
			json_t *val = sp_value_json(d, fs_dim_index_of(e, v, pv));
			int want = 0, got = 0;
			for (int64_t c = 0; c < nbf && !want; c++)
				want = all[c * e->nvars + v] == pv;
			for (int64_t i = 0; k >= 0 && i < r.dims[k].nvalues && !got; i++) {
				json_t *rv = sp_value_json(&r.dims[k], i);
				got = json_equal(rv, val) || (json_is_number(rv) && json_is_number(val) &&
				    json_number_value(rv) == json_number_value(val));
				json_decref(rv);
			}
			ck_assert_msg(got == want, "%s: the reduced %s %s position %lld, brute force %s", what, d->name,
			    got ? "keeps" : "lacks", (long long)pv, want ? "has it" : "has not");
			nwant += want;
			json_decref(val);
		}
		ck_assert_msg((k >= 0) == (nwant > 0), "%s: %s %s the reduced space", what, d->name,
		    k >= 0 ? "is still in" : "is missing from");
		if (k >= 0) {
			ck_assert_int_eq(r.dims[k].nvalues, nwant);
			seen++;
		}
	}
	ck_assert_int_eq(seen, r.ndims);
	sp_free(&r);
	json_decref(red);
}

/*
 * Nested spaces whose options' children share keys, one and two choices
 * deep: the count, k-th, walk, projections and Z3's enumeration
 * (check_random_query), the largest and smallest values per value of every
 * other parameter (by address), explanations of every value, heat maps
 * and the reduced space, all against brute force.
 */
START_TEST(test_nested_names_against_brute_force)
{
	int answers = 0, n = 36, nested = 0;
	double z3_s = 0;

	load_catalog();
	for (int i = 0; i < n; i++) {
		json_t *req = random_nested_query(i);
		char *dump = json_dumps(req, JSON_COMPACT), what[4096], **bf;
		struct sq_query q;
		struct fs_engine e;
		struct dn_error err;
		int64_t nbf, *all;

		check_random_query(req, i, 1, &z3_s);
		memset(&err, 0, sizeof err);
		snprintf(what, sizeof what, "nested case %d: %s", i, dump);
		free(dump);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s: %s", what, err.path, err.message);
		ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s: %s", what, err.message);
		for (int k = 0; k < q.space.ndims; k++)
			nested += q.space.dims[k].depth >= 2;
		nbf = brute(&e, &bf);
		all = bf_positions(&e, bf, nbf);
		answers += check_extremes(&e, &q, bf, nbf, what);
		check_explain_values(&e, &q, all, nbf, what);
		check_heatmaps(&e, &q, all, nbf, what);
		ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
		check_reduced_addresses(&e, &q, all, nbf, what);
		free(all);
		free_list(bf, nbf);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
	}
	ck_assert_int_gt(nested, 0);
	printf("%d nested queries with shared names agree with brute force and Z3 (%d largest and smallest values)\n",
	    n, answers);
	cm_catalog_free(&cat);
}
END_TEST

/* Whether some configuration fits with continuous var c at exactly x (the
 * other continuous vars on their grids), by brute force. */
static int
fits_at(struct fs_engine *e, int c, double x)
{
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos);
	const struct fs_cvar *cv = &e->cvars[c];
	double save_l = cv->L, save_h = cv->H, best;
	int found = 0;

	for (int v = 0; v < e->nvars; v++) {
		int par = e->vars[v].parent;
		pos[v] = (par < 0 || pos[par] == e->vars[v].active_pos) ? 0 : -1;
	}
	/* real_exists samples var c over [L, H]: a range of one value is x alone */
	e->cvars[c].L = e->cvars[c].H = x;
	do {
		if (cv->parent >= 0 && pos[cv->parent] != cv->active_pos)
			continue;
		found = real_exists(e, pos, 0, &best, NULL, NULL);
	} while (!found && fs_increment(e, pos) == 0);
	e->cvars[c].L = save_l;
	e->cvars[c].H = save_h;
	free(pos);
	return found;
}

/* The largest and smallest values of continuous parameters, overall and
 * per batch size, against brute force over their grids (the engine's
 * default resolution); a parameter that passes through answers its range's
 * ends where anything fits; explanations at grid values and between them
 * agree with evaluation at exactly that value. */
START_TEST(test_extreme_continuous)
{
	int answers = 0, explained = 0;

	load_catalog();
	for (int i = 0; i < 9; i++) {
		json_t *req = random_real_query(i);
		char *dump = json_dumps(req, JSON_COMPACT), what[4096];
		struct sq_query q;
		struct fs_engine e;
		struct dn_error err;
		int u, nrows;
		int64_t *pos;
		/* per continuous var (and the passthrough "lr", slot 8): per row
		 * (row nrows: overall) the smallest and largest fitting values */
		double lo[9][64], hi[9][64];

		memset(&err, 0, sizeof err);
		snprintf(what, sizeof what, "continuous extreme case %d: %s", i, dump);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", what, err.message);
		ck_assert_int_eq(fs_init(&e, &q, &err), 0);
		u = fs_var_named(&e, "batch_size");
		ck_assert(u >= 0 && e.vars[u].n < 63);
		nrows = (int)e.vars[u].n;
		for (int c = 0; c <= 8; c++)
			for (int r = 0; r <= nrows; r++)
				lo[c][r] = hi[c][r] = NAN;
		pos = calloc((size_t)e.nvars + 1, sizeof *pos);
		for (int v = 0; v < e.nvars; v++) {
			int par = e.vars[v].parent;
			pos[v] = (par < 0 || pos[par] == e.vars[v].active_pos) ? 0 : -1;
		}
		do {
			double best, hl[8], hh[8];
			for (int c = 0; c < e.ncvars; c++)
				hl[c] = hh[c] = NAN;
			if (!real_exists(&e, pos, 0, &best, hl, hh))
				continue;
			for (int c = 0; c < e.ncvars; c++)
				for (int k = 0; k < 2 && !isnan(hl[c]); k++) {
					int r = k ? nrows : (int)pos[u];
					lo[c][r] = isnan(lo[c][r]) ? hl[c] : fmin(lo[c][r], hl[c]);
					hi[c][r] = isnan(hi[c][r]) ? hh[c] : fmax(hi[c][r], hh[c]);
				}
			lo[8][pos[u]] = lo[8][nrows] = 1e-4;     /* "lr": [1e-4, 1e-1] */
			hi[8][pos[u]] = hi[8][nrows] = 1e-1;
		} while (fs_increment(&e, pos) == 0);
		for (int c = 0; c <= e.ncvars; c++) {
			const char *name = c < e.ncvars ? q.space.dims[e.cvars[c].dim].name : "lr";
			int slot = c < e.ncvars ? c : 8;
			if (c == e.ncvars && i % 3 != 0)
				break;  /* "lr" is in MobileNetV2's queries only */
			for (int goal = ANS_SMALLEST; goal <= ANS_LARGEST; goal++)
				for (int per = 0; per < 2; per++) {
					json_t *rows = ans_extreme(&e, &q, name, per ? "batch_size" : NULL, (enum ans_goal)goal,
					    0, &err);
					ck_assert_msg(rows != NULL, "%s: %s: %s", what, name, err.message);
					ck_assert_int_eq((int)json_array_size(rows), per ? nrows : 1);
					for (int r = 0; r < (per ? nrows : 1); r++) {
						json_t *got = json_object_get(json_array_get(rows, (size_t)r), name);
						double want = (goal == ANS_LARGEST ? hi : lo)[slot][per ? r : nrows];
						ck_assert_msg(isnan(want) ? json_is_null(got) : json_is_number(got) &&
						    json_number_value(got) == want, "%s: %s %s per %s, row %d: %.17g, brute force %.17g",
						    what, goal == ANS_LARGEST ? "largest" : "smallest", name, per ? "batch_size" : "-",
						    r, json_is_number(got) ? json_number_value(got) : NAN, want);
						answers++;
					}
					json_decref(rows);
				}
		}
		/* explanations: the largest value and the grid value above it, and values between */
		for (int c = 0; c < e.ncvars; c++) {
			const struct fs_cvar *cv = &e.cvars[c];
			const char *name = q.space.dims[cv->dim].name;
			double xs[4];
			int nx = 0, top = !isnan(hi[c][nrows]);
			if (top) {
				xs[nx++] = hi[c][nrows];
				if (hi[c][nrows] < cv->H) {
					int64_t g = 0;
					while (fs_cell_value(cv, g, cv->bits) <= hi[c][nrows])
						g++;
					xs[nx++] = fs_cell_value(cv, g, cv->bits);
				}
			}
			xs[nx++] = cv->L + (cv->H - cv->L) * (double)rnd(1000) / 1000.0;
			xs[nx++] = cv->L + (cv->H - cv->L) * (double)rnd(1000) / 1000.0;
			for (int k = 0; k < nx; k++) {
				int want = fits_at(&e, c, xs[k]);
				json_t *val = json_real(xs[k]), *out = ans_explain_value(&e, &q, name, val, 0, &err);
				ck_assert_msg(out != NULL, "%s: explain %s = %g: %s", what, name, xs[k], err.message);
				ck_assert_msg(json_is_true(json_object_get(out, "kept")) == want, "%s: explain %s = %.17g: "
				    "kept %d, brute force %d", what, name, xs[k], !want, want);
				ck_assert_int_eq(json_array_size(json_object_get(out, "because")) > 0, !want);
				if (k == 0 && top)
					ck_assert_msg(want, "%s: the largest value fits", what);
				if (k == 1 && top && hi[c][nrows] < cv->H)
					ck_assert_msg(!want, "%s: the grid value above the largest fits", what);
				json_decref(out);
				json_decref(val);
				explained++;
			}
		}
		free(pos);
		fs_free(&e);
		sq_free(&q);
		json_decref(req);
		free(dump);
	}
	ck_assert_int_ge(answers, 100);
	printf("9 queries: %d largest and smallest continuous values and %d explanations agree with brute force\n",
	    answers, explained);
	cm_catalog_free(&cat);
}
END_TEST

/* The check's tables (fset_check.c) where a tabulated node overflows: at
 * those combinations fs_check_fill declines, and the check answers the
 * overflow as the whole tape does; elsewhere it answers normally. */
START_TEST(test_check_overflow_rows)
{
	json_t *req = wide2_query(
	    " \"space\": {\"n\": {\"_type\": \"choice\", \"_value\": [8, 1000000000000000]},"
	    "           \"w\": {\"_type\": \"choice\", \"_value\": [256, 100000000]}},"
	    " \"budgets\": {\"memory\": \"8GiB\"}");
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	union expr_val *scratch, *vals, *cfg;
	int faults = 0;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	for (int k = 0; k < e.ncheck_groups; k++)
		faults += e.check_groups[k].fault != NULL;
	ck_assert_msg(faults > 0, "no table marks an overflow");
	scratch = malloc(sizeof *scratch * (size_t)ans_scratch_len(&e));
	vals = malloc(sizeof *vals * (size_t)e.nnodes_graph);
	cfg = malloc(sizeof *cfg * ((size_t)q.def->nhps + 1));
	for (int n = 0; n < 2; n++)
		for (int w = 0; w < 2; w++) {
			int64_t pos[2];
			json_t *c = json_pack("{s:I,s:I}", "n", n ? (json_int_t)1000000000000000 : 8, "w",
			    w ? (json_int_t)100000000 : 256);
			size_t len;
			char *text;
			int whole;
			pos[fs_var_named(&e, "n")] = n;
			pos[fs_var_named(&e, "w")] = w;
			fs_config_of(&e, pos, cfg);
			whole = expr_tape_eval(&e.tape, e.g, cfg, vals, NULL);
			memset(&err, 0, sizeof err);
			text = ans_check_text(&e, c, scratch, 1, 0, NULL, &len, &err);
			if (whole != 0) {
				ck_assert_msg(text == NULL && strstr(err.message, "overflows 64 bits") != NULL,
				    "n %d w %d: %s", n, w, text ? text : err.message);
				ck_assert_str_eq(err.path, "config");
			} else {
				ck_assert_msg(text != NULL && strstr(text, "\"feasible\":") != NULL, "n %d w %d: %s", n, w,
				    err.message);
				ck_assert_int_eq(fs_check_fill(&e, pos, vals), 0);
			}
			faults += whole != 0;
			free(text);
			json_decref(c);
		}
	ck_assert_int_ge(faults, 2);    /* a marked table, and a configuration that overflows */
	free(scratch);
	free(vals);
	free(cfg);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* What a user can get wrong: each error names its field. */
START_TEST(test_extreme_errors)
{
	static const struct { const char *param, *per, *path, *msg; int code; } cases[] = {
		{ "nope", NULL, "param", "no parameter \"nope\"", DN_ENOENT },
		{ "batch_size", "nope", "per", "no parameter \"nope\"", DN_ENOENT },
		{ "block", NULL, "param", "not numbers (\"basic\"): they have no order", DN_EINVAL },
		{ "noise", NULL, "param", "\"noise\" is normal: its values are unbounded", DN_EINVAL },
		{ "batch_size", "lr", "per", "\"lr\" is continuous (loguniform): one row per value", DN_EINVAL },
		{ "width", "width", "per", "\"width\" is param itself", DN_EINVAL },
		{ "width", "seed", "per", "\"seed\" has 5000 values: at most 4096 rows", DN_ERANGE },
		{ "batch_size", "block", NULL, NULL, 0 },       /* a per without order is fine */
		{ "lr", "block", NULL, NULL, 0 },               /* passing through: the range's ends */
	};
	json_t *req = json_loads(
	    "{\"model\": \"resnet18\", \"device\": \"a100-40gb\", \"budgets\": {\"memory\": \"3GiB\"},"
	    " \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [64, 16, 256]},"
	    "  \"width\": {\"_type\": \"choice\", \"_value\": [32, 64]},"
	    "  \"block\": {\"_type\": \"choice\", \"_value\": [\"basic\", \"bottleneck\"]},"
	    "  \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
	    "  \"noise\": {\"_type\": \"normal\", \"_value\": [0, 1]},"
	    "  \"seed\": {\"_type\": \"randint\", \"_value\": [0, 5000]}}}", 0, NULL);
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		for (int goal = ANS_SMALLEST; goal <= ANS_LARGEST; goal++) {
			json_t *rows;
			memset(&err, 0, sizeof err);
			rows = ans_extreme(&e, &q, cases[i].param, cases[i].per, (enum ans_goal)goal, 10, &err);
			if (cases[i].path == NULL) {
				ck_assert_msg(rows != NULL && json_array_size(rows) == 2, "case %zu: %s", i,
				    err.message);
				for (size_t r = 0; strcmp(cases[i].param, "lr") == 0 && r < 2; r++) {
					json_t *y = json_object_get(json_array_get(rows, r), "lr");
					ck_assert(json_is_null(y) || json_real_value(y) == (goal == ANS_LARGEST ? 0.1 : 0.0001));
				}
				json_decref(rows);
				continue;
			}
			ck_assert_msg(rows == NULL, "case %zu accepted", i);
			ck_assert_int_eq(err.code, cases[i].code);
			ck_assert_str_eq(err.path, cases[i].path);
			ck_assert_msg(strstr(err.message, cases[i].msg) != NULL, "case %zu: \"%s\" lacks \"%s\"", i,
			    err.message, cases[i].msg);
		}
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

#define S_BS "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"

START_TEST(test_query_errors)
{
	static const struct { const char *json, *path, *msg; } cases[] = {
		{ "[]", "$", "must be a JSON object" },
		{ "{\"space\": {}}", "$.model", "needs a model" },
		{ "{\"model\": \"resnet50\"}", "$.space", "needs an NNI search space" },
		{ "{\"model\": \"nope\", \"space\": {}}", "$.model", "no template or preset" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"device\": \"tpu\"}", "$.device", "unknown device" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"budgets\": {\"memory\": \"16 GB of RAM\"}}", "$.budgets.memory", "unknown unit" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"budgets\": {\"watts\": 300}}", "$.budgets", "unknown budget" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"budgets\": {\"latency\": \"fast\"}}", "$.budgets.latency", "not a duration" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"constraints\": [\"batch_size % \"]}", "$.constraints[0]", "unexpected end" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"constraints\": [\"depth > 3\"]}", "$.constraints[0]", "unknown name 'depth'" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"workload\": {\"optimizer\": \"lion\"}}", "$.workload.optimizer", "must be sgd" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"fixed\": {\"nope\": 1}}", "$.fixed.nope", "no hyperparameter" },
		{ "{\"model\": \"resnet50\", \"space\": {\"lr\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}}",
		  NULL, "sets no hyperparameter" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"surprise\": 1}", "$", "unknown field" },
		/* bare numbers and ambiguous units in budgets */
		{ S_BS " \"budgets\": {\"memory\": 3}}", "$.budgets.memory", "3 has no unit: did you mean \"3GiB\"" },
		{ S_BS " \"budgets\": {\"memory\": \"16\"}}", "$.budgets.memory", "16 has no unit" },
		{ S_BS " \"budgets\": {\"memory\": \"0.9\"}}", "$.budgets.memory", "did you mean \"90%\"" },
		{ S_BS " \"budgets\": {\"memory\": \"16b\"}}", "$.budgets.memory", "bits or bytes" },
		{ S_BS " \"budgets\": {\"weight_bytes\": 200}}", "$.budgets.weight_bytes", "200 has no unit" },
		{ S_BS " \"budgets\": {\"latency\": 5}}", "$.budgets.latency", "did you mean \"5ms\" or \"5s\"" },
		{ S_BS " \"budgets\": {\"step_time\": \"2m\"}}", "$.budgets.step_time", "minutes or milli" },
		{ S_BS " \"budgets\": {\"params\": \"25m\"}}", "$.budgets.params", "milli or mega" },
		/* devices: ambiguous and unknown names */
		{ S_BS " \"device\": \"a100\"}", "$.device", "ambiguous: it could be a100-40gb" },
		{ S_BS " \"device\": \"rtx-4900\"}", "$.device", "did you mean rtx-4090" },
		/* explicit binding */
		{ S_BS " \"bind\": {\"batch_size\": \"batchsize\"}}", "$.bind.batch_size",
		  "model resnet has no hyperparameter \"batchsize\" (did you mean batch_size" },
		{ S_BS " \"bind\": {\"batch\": \"batch_size\"}}", "$.bind.batch",
		  "no parameter \"batch\" (did you mean batch_size" },
		{ S_BS " \"bind\": {\"batch_size\": 3}}", "$.bind.batch_size", "must be the name of a hyperparameter" },
		{ S_BS " \"bind\": [\"batch_size\"]}", "$.bind", "must be an object" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]},"
		  " \"bs\": {\"_type\": \"choice\", \"_value\": [16]}}, \"bind\": {\"bs\": \"batch_size\"}}",
		  "$.space.bs", "already sets" },
	};

	load_catalog();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *req = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		struct sq_query q;
		struct dn_error err;
		memset(&err, 0, sizeof err);
		ck_assert_msg(req != NULL, "bad test json %zu", i);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) != 0, "case %zu accepted", i);
		if (cases[i].path != NULL)
			ck_assert_msg(strcmp(err.path, cases[i].path) == 0, "case %zu: path %s, want %s (%s)", i,
			    err.path, cases[i].path, err.message);
		ck_assert_msg(strstr(err.message, cases[i].msg) != NULL, "case %zu: \"%s\" lacks \"%s\"", i,
		    err.message, cases[i].msg);
		sq_free(&q);
		json_decref(req);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* sq_parse of one query that must parse; the caller frees q. */
static void
parse_ok(const char *json, struct sq_query *q)
{
	json_t *req = json_loads(json, 0, NULL);
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(req != NULL, "bad test json %s", json);
	ck_assert_msg(sq_parse(req, &cat, q, &err) == 0, "%s: %s: %s", json, err.path, err.message);
	json_decref(req);
}

/* Units: case-insensitive where nothing is ambiguous; the answer says which
 * unit was understood. */
START_TEST(test_query_units)
{
	static const struct { const char *budget; int k; double want; const char *text; } cases[] = {
		{ "\"memory\": \"16GB\"", SQ_B_MEMORY, 16e9, "14.9 GiB" },
		{ "\"memory\": \"16gb\"", SQ_B_MEMORY, 16e9, "14.9 GiB" },
		{ "\"memory\": \"16 gib\"", SQ_B_MEMORY, 17179869184.0, "16 GiB" },
		{ "\"memory\": \"500 mb\"", SQ_B_MEMORY, 5e8, "476.8 MiB" },
		{ "\"memory\": \"512M\"", SQ_B_MEMORY, 512e6, "488.3 MiB" },
		{ "\"latency\": \"10MS\"", SQ_B_LATENCY, 0.01, "10 ms" },
		{ "\"step_time\": \"0.5 s\"", SQ_B_STEP_TIME, 0.5, "500 ms" },
		{ "\"step_time\": \"2 min\"", SQ_B_STEP_TIME, 120, "120 s" },
		{ "\"params\": 25000000", SQ_B_PARAMS, 25e6, "25M" },
		{ "\"params\": \"25M\"", SQ_B_PARAMS, 25e6, "25M" },
		{ "\"macs\": \"4.1g\"", SQ_B_MACS, 4.1e9, "4.1G" },
	};

	load_catalog();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char json[512];
		struct sq_query q;
		json_t *b, *one;
		snprintf(json, sizeof json, S_BS " \"budgets\": {%s}}", cases[i].budget);
		parse_ok(json, &q);
		ck_assert_msg(q.has_budget[cases[i].k], "case %zu", i);
		ck_assert_msg(fabs(q.budget[cases[i].k] - cases[i].want) <= 1e-9 * cases[i].want, "case %zu: %g", i,
		    q.budget[cases[i].k]);
		b = sq_budgets_json(&q);
		one = json_object_get(b, sq_budget_name((enum sq_budget_kind)cases[i].k));
		ck_assert_msg(one != NULL, "case %zu: no budget echoed", i);
		ck_assert_msg(strcmp(json_string_value(json_object_get(one, "text")), cases[i].text) == 0,
		    "case %zu: text %s", i, json_string_value(json_object_get(one, "text")));
		ck_assert(json_number_value(json_object_get(one, "value")) == q.budget[cases[i].k]);   /* an integer when whole */
		ck_assert_str_eq(json_string_value(json_object_get(one, "source")), "request");
		json_decref(b);
		sq_free(&q);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* The device's usable memory always applies: a larger budget is capped with
 * a warning, none at all is the usable memory, a percentage is of it. */
START_TEST(test_query_memory_cap)
{
	const double t4 = 15360.0 * 1048576.0;
	struct sq_query q;
	json_t *b;

	load_catalog();
	parse_ok(S_BS " \"device\": \"t4\", \"budgets\": {\"memory\": \"200GiB\"}}", &q);
	ck_assert(q.budget[SQ_B_MEMORY] == t4);
	ck_assert_int_eq(q.nwarnings, 1);
	ck_assert_str_eq(q.warnings[0], "memory budget 200 GiB is more than t4's usable 15.0 GiB: using 15.0 GiB");
	b = sq_budgets_json(&q);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "memory"), "source")), "device");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "memory"), "text")), "15 GiB");
	json_decref(b);
	for (int i = 0; i < q.nparts; i++)
		if (q.parts[i].kind == 1)
			ck_assert_str_eq(q.parts[i].label, "memory <= 15 GiB (t4's usable memory)");
	sq_free(&q);

	parse_ok(S_BS " \"device\": \"t4\"}", &q);
	ck_assert(q.budget[SQ_B_MEMORY] == t4 && q.memory_from_device && q.nwarnings == 0);
	sq_free(&q);
	parse_ok(S_BS " \"device\": \"t4\", \"budgets\": {\"memory\": \"50%\"}}", &q);
	ck_assert(q.budget[SQ_B_MEMORY] == t4 / 2 && !q.memory_from_device && q.nwarnings == 0);
	sq_free(&q);
	parse_ok(S_BS " \"device\": \"t4\", \"budgets\": {\"memory\": \"8GiB\"}}", &q);
	ck_assert(q.budget[SQ_B_MEMORY] == 8589934592.0 && !q.memory_from_device && q.nwarnings == 0);
	sq_free(&q);
	/* an inline device without usable_memory_bytes: its capacity */
	parse_ok(S_BS " \"device\": {\"name\": \"x\", \"memory_bytes\": 4294967296, \"memory_bandwidth_bytes_per_s\": 1e12,"
	    " \"sm_count\": 10, \"peak_flops\": {\"fp32\": 1e13}}, \"budgets\": {\"memory\": \"5GiB\"}}", &q);
	ck_assert(q.budget[SQ_B_MEMORY] == 4294967296.0 && q.nwarnings == 1);
	ck_assert(strstr(q.warnings[0], "more than x's usable 4.0 GiB") != NULL);
	sq_free(&q);
	cm_catalog_free(&cat);
}
END_TEST

/* Parameters that set nothing are named; training knobs are not; an
 * explicit map binds other names, nested addresses included. */
START_TEST(test_query_bind)
{
	struct sq_query q;
	int hidden;

	load_catalog();
	parse_ok("{\"model\": \"bert-base\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8, 16]},"
	    " \"block\": {\"_type\": \"choice\", \"_value\": [\"basic\", \"bottleneck\"]},"
	    " \"width\": {\"_type\": \"choice\", \"_value\": [32, 64]},"
	    " \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
	    " \"weight_decay\": {\"_type\": \"uniform\", \"_value\": [0, 0.1]}}}", &q);
	ck_assert_int_eq(q.nwarnings, 1);
	ck_assert_str_eq(q.warnings[0], "parameters block, width set nothing in model bert (they pass through)");
	sq_free(&q);

	parse_ok("{\"model\": \"bert-base\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8, 16]},"
	    " \"hidden_size\": {\"_type\": \"choice\", \"_value\": [256, 512]}}}", &q);
	ck_assert_int_eq(q.nwarnings, 1);
	ck_assert_str_eq(q.warnings[0], "parameter hidden_size sets nothing in model bert (it passes through)");
	sq_free(&q);

	parse_ok("{\"model\": \"bert-base\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8, 16]},"
	    " \"hidden_size\": {\"_type\": \"choice\", \"_value\": [256, 512]}}, \"bind\": {\"hidden_size\": \"hidden\"}}", &q);
	hidden = cm_def_find_hp(q.def, "hidden");
	ck_assert_int_eq(q.nwarnings, 0);
	ck_assert_int_eq(q.space.dims[sp_dim_named(&q.space, "hidden_size")].hp, hidden);
	ck_assert(q.bounds[hidden].lo.i == 256 && q.bounds[hidden].hi.i == 512);
	sq_free(&q);

	/* nested: "choice/key" and "choice/option/key" */
	for (int form = 0; form < 2; form++) {
		char json[1024];
		int d;
		snprintf(json, sizeof json, "{\"model\": \"bert-base\", \"space\": {\"batch_size\": {\"_type\": \"choice\","
		    " \"_value\": [8]}, \"size\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"small\", \"hs\":"
		    " {\"_type\": \"choice\", \"_value\": [128, 256]}}, {\"_name\": \"big\", \"hs\": {\"_type\": \"choice\","
		    " \"_value\": [768]}}]}}, \"bind\": {\"%s\": \"hidden\"}}", form ? "size/small/hs" : "size/hs");
		parse_ok(json, &q);
		hidden = cm_def_find_hp(q.def, "hidden");
		for (d = 0; d < q.space.ndims; d++)
			if (strcmp(q.space.dims[d].key, "hs") == 0)
				ck_assert_int_eq(q.space.dims[d].hp, form && q.space.dims[q.space.dims[d].parent].nvalues > 0 &&
				    q.space.dims[d].parent_option == 1 ? -1 : hidden);
		ck_assert_int_eq(q.nwarnings, form);     /* big/hs sets nothing with the option form */
		sq_free(&q);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* ---- listing: fs_walk and the tree walk against brute force and the plain path ---- */

/* The position vector of a brute-force key ("p0,p1,...,"). */
static void
pos_of_key(const struct fs_engine *e, const char *key, int64_t *pos)
{
	for (int v = 0; v < e->nvars; v++) {
		char *end;
		pos[v] = strtoll(key, &end, 10);
		key = end + 1;
	}
}

/* The listing order: lexicographic in engine order, over the vars that a
 * shared prefix makes active (a's; b's inactive values do not count). */
static int
order_cmp(const struct fs_engine *e, const int64_t *a, const int64_t *b)
{
	for (int v = 0; v < e->nvars; v++) {
		if (!fs_var_active(e, a, v))
			continue;
		if (a[v] != b[v])
			return a[v] < b[v] ? -1 : 1;
	}
	return 0;
}

/* fs_walk's callback in the tests: each configuration against the
 * brute-force list from index `at` on; stops after `stop` (0: never). */
struct seen {
	const struct fs_engine *e;
	char **bf;
	int64_t nbf, at, n, stop;
	const char *what;
};

static int
seen_cb(void *ctx, const int64_t *pos)
{
	struct seen *s = ctx;
	char *k = key_of(s->e, pos);

	ck_assert_msg(s->at < s->nbf && strcmp(k, s->bf[s->at]) == 0, "%s: walk item %lld is %s, brute force %s",
	    s->what, (long long)s->at, k, s->at < s->nbf ? s->bf[s->at] : "(the end)");
	free(k);
	s->at++;
	s->n++;
	return s->stop > 0 && s->n >= s->stop;
}

/* JSON text of an answer (for comparing the two paths), freed by the caller. */
static char *
answer_text(json_t *j)
{
	char *t = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

	json_decref(j);
	return t ? t : strdup("(null)");
}

/*
 * Every way of listing e (whatever its count: none, unfinished, exact, a
 * tree cut short) against the brute-force list bf: the whole walk, a walk
 * stopped early, walks and fs_next from random points of the grid (their
 * inactive vars holding anything), the k-th for every k when the count is
 * exact (for 20 when the tree is capped); and against the plain path (e->nav_plain) when `plain` > 0:
 * fs_next from `plain` random points, pages with cursors (their cursor
 * text too), pages by offset and samples.
 */
static void
check_listing(struct fs_engine *e, char **bf, int64_t nbf, int nfrom, int plain, const char *what)
{
	struct dn_error err;
	int64_t *from = calloc((size_t)e->nvars + 1, sizeof *from);
	int64_t *pos = calloc((size_t)e->nvars + 1, sizeof *pos), *p2 = calloc((size_t)e->nvars + 1, sizeof *p2);
	int exact = e->counted && e->lower == e->upper;

	memset(&err, 0, sizeof err);
	{
		struct seen s = { e, bf, nbf, 0, 0, 0, what };
		ck_assert_msg(fs_walk(e, NULL, seen_cb, &s, &err) == 0, "%s: walk: %s", what, err.message);
		ck_assert_msg(s.n == nbf, "%s: the walk lists %lld, brute force %lld", what, (long long)s.n,
		    (long long)nbf);
	}
	if (nbf > 0) {
		struct seen s = { e, bf, nbf, 0, 0, 1 + (int64_t)rnd((uint64_t)nbf), what };
		int64_t want = s.stop;
		ck_assert_int_eq(fs_walk(e, NULL, seen_cb, &s, &err), 1);
		ck_assert_int_eq(s.n, want);
	}
	for (int i = 0; i < nfrom; i++) {
		int64_t j = 0;
		int r;
		/* a random grid point, or a feasible configuration itself */
		if (nbf > 0 && i % 3 == 0)
			pos_of_key(e, bf[rnd((uint64_t)nbf)], from);
		else
			for (int v = 0; v < e->nvars; v++)
				from[v] = (int64_t)rnd((uint64_t)e->vars[v].n);
		if (i % 2 == 1)         /* inactive vars: anything */
			for (int v = 0; v < e->nvars; v++)
				if (!fs_var_active(e, from, v))
					from[v] = i % 4 == 1 ? -1 : (int64_t)rnd((uint64_t)e->vars[v].n);
		while (j < nbf) {
			pos_of_key(e, bf[j], pos);
			if (order_cmp(e, from, pos) <= 0)
				break;
			j++;
		}
		{
			struct seen s = { e, bf, nbf, j, 0, 5, what };
			r = fs_walk(e, from, seen_cb, &s, &err);
			ck_assert_msg(r >= 0 && s.n == (nbf - j < 5 ? nbf - j : 5), "%s: walk from a point: %d, %lld items",
			    what, r, (long long)s.n);
		}
		memcpy(pos, from, sizeof *pos * (size_t)e->nvars);
		r = fs_next(e, pos, pos, &err);
		ck_assert_int_eq(r, j < nbf ? 0 : 1);
		if (r == 0) {
			char *k = key_of(e, pos);
			ck_assert_msg(strcmp(k, bf[j]) == 0, "%s: fs_next from a point: %s, brute force %s", what, k, bf[j]);
			free(k);
		}
		if (i < plain) {
			e->nav_plain = 1;
			ck_assert_int_eq(fs_next(e, from, p2, &err), r);
			e->nav_plain = 0;
			ck_assert(r != 0 || memcmp(p2, pos, sizeof *pos * (size_t)e->nvars) == 0);
		}
	}
	/* every k; past a capped tree each k-th recounts subtrees: some */
	for (int64_t i = 0; exact && i < nbf && (e->nnodes > 8 || i < 20); i++) {
		int64_t k = e->nnodes > 8 ? i : (int64_t)rnd((uint64_t)nbf);
		char *s;
		ck_assert_int_eq(fs_kth(e, (fs_count)k, pos, &err), 0);
		s = key_of(e, pos);
		ck_assert_msg(strcmp(s, bf[k]) == 0, "%s: k-th %lld is %s, brute force %s", what, (long long)k, s, bf[k]);
		free(s);
	}
	if (plain > 0) {
		/* pages from the first on, each from the fast path's cursor; by offset; samples */
		char *cursor = NULL;
		int64_t limit = 1 + (int64_t)rnd(40);
		for (int page = 0; page < 4; page++) {
			json_t *fast, *old;
			char *a, *b;
			fast = ans_page(e, 7, NULL, cursor, limit, &err);
			e->nav_plain = 1;
			old = ans_page(e, 7, NULL, cursor, limit, &err);
			e->nav_plain = 0;
			free(cursor);
			cursor = fast && json_is_string(json_object_get(fast, "next_cursor")) ?
			    strdup(json_string_value(json_object_get(fast, "next_cursor"))) : NULL;
			a = answer_text(fast);
			b = answer_text(old);
			ck_assert_msg(strcmp(a, b) == 0, "%s: page %d: %s, plain %s", what, page, a, b);
			free(a);
			free(b);
			if (cursor == NULL)
				break;
		}
		free(cursor);
		if (exact && nbf > 0) {
			char off[32], *a, *b;
			snprintf(off, sizeof off, "%lld", (long long)rnd((uint64_t)nbf));
			a = answer_text(ans_page(e, 7, off, NULL, limit, &err));
			e->nav_plain = 1;
			b = answer_text(ans_page(e, 7, off, NULL, limit, &err));
			e->nav_plain = 0;
			ck_assert_msg(strcmp(a, b) == 0, "%s: page at %s: %s, plain %s", what, off, a, b);
			free(a);
			free(b);
			a = answer_text(ans_samples(e, 3 * plain, 11 + (uint64_t)nbf, &err));
			e->nav_plain = 1;
			b = answer_text(ans_samples(e, 3 * plain, 11 + (uint64_t)nbf, &err));
			e->nav_plain = 0;
			ck_assert_msg(strcmp(a, b) == 0, "%s: samples %s, plain %s", what, a, b);
			free(a);
			free(b);
		}
	}
	free(from);
	free(pos);
	free(p2);
}

/*
 * check_listing on one query in every state of its engine: before any
 * count (the search under bounds), after a count cut short by work (an
 * unfinished tree: undecided leaves searched), after the exact count, and
 * after an exact count whose stored tree was capped at a few nodes
 * (subtrees recounted on demand).
 */
static void
check_listing_states(struct sq_query *q, int nfrom, int plain, int64_t work, const char *what)
{
	struct fs_engine e;
	struct dn_error err;
	char **bf, w[4200];
	int64_t nbf;

	memset(&err, 0, sizeof err);
	init_engine(&e, q);
	nbf = brute(&e, &bf);
	snprintf(w, sizeof w, "%s (no count)", what);
	check_listing(&e, bf, nbf, nfrom, plain, w);
	fs_free(&e);

	init_engine(&e, q);
	count_slice(&e, work, 1);
	snprintf(w, sizeof w, "%s (a count cut after %lld bound calls: %s)", what, (long long)work,
	    e.lower == e.upper ? "exact" : "unfinished");
	check_listing(&e, bf, nbf, nfrom, plain, w);
	ck_assert_int_eq(fs_count_more(&e, 0, &err), 0);
	snprintf(w, sizeof w, "%s (exact count)", what);
	check_listing(&e, bf, nbf, nfrom, plain, w);
	fs_free(&e);

	init_engine(&e, q);
	e.max_nodes = 5;
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	snprintf(w, sizeof w, "%s (exact count, tree capped at %d nodes)", what, e.nnodes);
	check_listing(&e, bf, nbf, nfrom, plain, w);
	fs_free(&e);
	free_list(bf, nbf);
}

/* Small random queries: the tree walk and fs_walk list what brute force
 * lists, and answer as the plain path does. */
START_TEST(test_listing_random)
{
	load_catalog();
	for (int i = 0; i < 60; i++) {
		json_t *req = random_query(1000 + i);
		struct sq_query q;
		struct dn_error err;
		char *dump = json_dumps(req, JSON_COMPACT), what[4096];

		memset(&err, 0, sizeof err);
		ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "case %d: %s", i, err.message);
		snprintf(what, sizeof what, "listing case %d: %s", i, dump);
		check_listing_states(&q, 40, 10, 1 + (int64_t)rnd(20), what);
		sq_free(&q);
		json_decref(req);
		free(dump);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* Choices nested two deep, dims that pass through (act, slope, size, pad,
 * opt, mom set no hyperparameter): inactive vars, one evaluation for a
 * box of pass-through dims, and cursors' text the same on both paths. */
START_TEST(test_listing_nested)
{
	json_t *req = json_loads(
	    NESTED_QUERY_HEAD
	    " \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [16, 64, 256, 1024]},"
	    "  \"op\": {\"_type\": \"choice\", \"_value\": ["
	    "    {\"_name\": \"conv\", \"kernel\": {\"_type\": \"choice\", \"_value\": [1, 3, 5, 7]},"
	    "     \"act\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"relu\"},"
	    "       {\"_name\": \"prelu\", \"slope\": {\"_type\": \"choice\", \"_value\": [0.1, 0.2, 0.3]}}]},"
	    "     \"width\": {\"_type\": \"choice\", \"_value\": [16, 64, 256]}},"
	    "    {\"_name\": \"pool\", \"size\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"small\"},"
	    "       {\"_name\": \"big\", \"pad\": {\"_type\": \"choice\", \"_value\": [0, 1]}}]}}]},"
	    "  \"opt\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"sgd\","
	    "     \"mom\": {\"_type\": \"choice\", \"_value\": [0, 0.9]}}, {\"_name\": \"adam\"}]}}}", 0, NULL);
	struct sq_query q;
	struct dn_error err;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(req != NULL, "test JSON");
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", err.path, err.message);
	for (int i = 0; i < 4; i++)
		check_listing_states(&q, 200, 60, 1 + 3 * i, "nested choices");
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* A large graph: the README's ResNet-50 space (42k nodes, 1379 of 9240
 * configurations fit in 3 GiB), in every state, against brute force; the
 * plain path (milliseconds a configuration here) on a few points, pages
 * and samples. */
START_TEST(test_listing_large_graph)
{
	json_t *space = json_load_file(src_path("examples/spaces/resnet.json"), 0, NULL), *req;
	struct sq_query q;
	struct dn_error err;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(space != NULL, "examples/spaces/resnet.json");
	req = json_pack("{s:s,s:o,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "model", "resnet50", "space", space, "device",
	    "a100-40gb", "workload", "mode", "training", "optimizer", "adam", "dtype", "fp32", "budgets", "memory",
	    "3GiB");
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", err.path, err.message);
	ck_assert_int_gt(cm_model_graph(q.model)->n, 40000);
	check_listing_states(&q, 30, 2, 40, "resnet50 3GiB");
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* The 24-layer transformer with per-layer choices (1.3e30 configurations,
 * no brute force): on an unfinished count, the walk and fs_next from
 * random points equal the plain path's. */
START_TEST(test_listing_transformer)
{
	json_t *req = json_pack("{s:o,s:o,s:s,s:{s:s},s:{s:s,s:s}}",
	    "model", json_load_file(src_path("examples/models/transformer24.json"), 0, NULL),
	    "space", json_load_file(src_path("examples/spaces/transformer24.json"), 0, NULL),
	    "device", "a100-80gb", "budgets", "memory", "40GiB", "workload", "dtype", "mixed_bf16", "optimizer", "adamw");
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	int64_t *pos, *p2, *from, n = 0;
	int r;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", err.path, err.message);
	init_engine(&e, &q);
	count_slice(&e, 3000, 1);
	ck_assert(e.lower != e.upper);
	pos = calloc((size_t)e.nvars + 1, sizeof *pos);
	p2 = calloc((size_t)e.nvars + 1, sizeof *p2);
	from = calloc((size_t)e.nvars + 1, sizeof *from);
	/* the first 150 by the plain path, then the same from fs_walk */
	{
		char **list = malloc(sizeof *list * 150);
		struct seen s = { &e, list, 0, 0, 0, 150, "transformer24" };
		e.nav_plain = 1;
		r = fs_next(&e, NULL, pos, &err);
		while (r == 0 && n < 150) {
			list[n++] = key_of(&e, pos);
			if (fs_increment(&e, pos) != 0)
				break;
			r = fs_next(&e, pos, pos, &err);
		}
		e.nav_plain = 0;
		s.nbf = n;
		ck_assert_int_eq(n, 150);
		ck_assert_int_eq(fs_walk(&e, NULL, seen_cb, &s, &err), 1);
		ck_assert_int_eq(s.n, 150);
		free_list(list, n);
	}
	for (int i = 0; i < 12; i++) {
		int r2;
		for (int v = 0; v < e.nvars; v++)
			from[v] = (int64_t)rnd((uint64_t)e.vars[v].n);
		r = fs_next(&e, from, pos, &err);
		e.nav_plain = 1;
		r2 = fs_next(&e, from, p2, &err);
		e.nav_plain = 0;
		ck_assert_int_eq(r, r2);
		ck_assert(r != 0 || memcmp(pos, p2, sizeof *pos * (size_t)e.nvars) == 0);
	}
	free(pos);
	free(p2);
	free(from);
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fset");
	TCase *t = tcase_create("engine");

	/* test_random_against_brute_force: 250 s alone, 380 s on a busy 2-core
	 * machine (Z3's 240 enumerations, bounded by work, not time) */
	tcase_set_timeout(t, 1200);
	tcase_add_test(t, test_query_errors);
	tcase_add_test(t, test_query_units);
	tcase_add_test(t, test_query_memory_cap);
	tcase_add_test(t, test_query_bind);
	tcase_add_test(t, test_nested_choice_space);
	tcase_add_test(t, test_huge_grid_and_deadline);
	tcase_add_test(t, test_deadline_bounds);
	tcase_add_test(t, test_random_against_brute_force);
	suite_add_tcase(s, t);
	t = tcase_create("alloc");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_init_allocation_failures);
	suite_add_tcase(s, t);
	t = tcase_create("latency");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_latency_bound_exact_on_cnn5);
	tcase_add_test(t, test_resnet_latency_in_little_work);
	tcase_add_test(t, test_random_latency_against_brute_force);
	suite_add_tcase(s, t);
	t = tcase_create("progress");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_progress_deadline);
	tcase_add_test(t, test_progress_corrupt);
	tcase_add_test(t, test_progress_resume_random);
	suite_add_tcase(s, t);
	t = tcase_create("real");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_real_against_brute_force);
	suite_add_tcase(s, t);
	t = tcase_create("extreme");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_extreme_errors);
	tcase_add_test(t, test_extreme_huge_grid);
	tcase_add_test(t, test_extreme_against_brute_force);
	tcase_add_test(t, test_extreme_continuous);
	tcase_add_test(t, test_check_overflow_rows);
	suite_add_tcase(s, t);
	t = tcase_create("names");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_nested_names_against_brute_force);
	suite_add_tcase(s, t);
	t = tcase_create("listing");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_listing_nested);
	tcase_add_test(t, test_listing_random);
	tcase_add_test(t, test_listing_large_graph);
	tcase_add_test(t, test_listing_transformer);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
