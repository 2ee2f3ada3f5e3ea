/*
 * test_fset_parallel.c - counting on several threads (e->threads,
 * fset_par.c) leaves the stored tree of one thread: on the cnn5, MLP,
 * ResNet-50 and transformer24 spaces, a space with continuous
 * hyperparameters and one whose tree outgrows max_nodes, counts at 2, 3,
 * 4 and 8 threads have the same bounds, node array (every field), saved
 * progress bytes, k-th configurations, first page and seeded samples as at
 * one thread, also when stealing is forced; a count cut by a deadline on 2 threads is a valid tree that
 * fs_count_more finishes to the exact count.
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

/* The README's ResNet-50 walkthrough space at 3 GiB. */
static json_t *
resnet_query(void)
{
	return json_pack("{s:s,s:o,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "model", "resnet50", "space",
	    json_load_file(src_path("examples/spaces/resnet.json"), 0, NULL), "device", "a100-40gb", "workload",
	    "mode", "training", "optimizer", "adam", "dtype", "fp32", "budgets", "memory", "3GiB");
}

/* transformer24_request() with the per-layer choices of layers >= layers
 * left out (the model's defaults): its full space is not countable exactly
 * in a test's time. */
static json_t *
transformer_query(int layers)
{
	json_t *req = transformer24_request(), *space = json_object_get(req, "space");
	char key[32];

	for (int l = layers; l < 24; l++) {
		snprintf(key, sizeof key, "heads%d", l);
		json_object_del(space, key);
		snprintf(key, sizeof key, "ffn%d", l);
		json_object_del(space, key);
	}
	return req;
}

/* Counts q at `threads` (max_nodes 0: the default) within `seconds` (0:
 * exact). */
static void
count_at(struct sq_query *q, struct fs_engine *e, int threads, int32_t max_nodes, double seconds)
{
	struct dn_error err;

	memset(&err, 0, sizeof err);
	ck_assert_msg(fs_init(e, q, &err) == 0, "%s", err.message);
	e->threads = threads;
	if (max_nodes > 0)
		e->max_nodes = max_nodes;
	ck_assert_msg(fs_count_all(e, seconds, &err) == 0, "%s", err.message);
}

/* What an engine answers from its tree: saved progress, the k-th
 * configurations at 8 spread k, the first page of 20 and 20 seeded
 * samples (positions, nvars each). Read once from the one-thread tree and
 * compared with each count of threads (the k-ths of a capped tree search
 * its unstored leaves again, in milliseconds). */
struct answers {
	uint8_t *progress;
	size_t len;
	int nvars, nkth, npage, nsamples;
	int64_t kth[8][16], page[20][16], samples[20][16];
};

static void
answers_of(struct fs_engine *e, struct answers *a)
{
	struct dn_error err;
	int64_t x[17];

	memset(&err, 0, sizeof err);
	memset(a, 0, sizeof *a);
	ck_assert_int_le(e->nvars, 16);
	a->nvars = e->nvars;
	a->progress = save_progress(e, &a->len);
	if (e->lower != e->upper || e->lower == 0)
		return;
	for (int i = 0; i < 8; i++, a->nkth++) {
		fs_count k = (e->lower - 1) / 7 * (fs_count)i;
		ck_assert_int_eq(fs_kth(e, k, x, &err), 0);
		memcpy(a->kth[i], x, sizeof *x * (size_t)e->nvars);
	}
	/* the first page */
	ck_assert_int_eq(fs_next(e, NULL, x, &err), 0);
	for (int i = 0; i < 20; i++) {
		memcpy(a->page[a->npage++], x, sizeof *x * (size_t)e->nvars);
		if (fs_increment(e, x) != 0 || fs_next(e, x, x, &err) != 0)
			break;
	}
	{
		struct fs_sampler *sa;
		uint64_t r = 42;
		ck_assert_int_eq(fs_sampler_build(e, 50, 0, 7, &sa, &err), 0);
		for (int i = 0; i < 20; i++, a->nsamples++) {
			ck_assert_int_eq(fs_sampler_draw(e, sa, &r, x, 0), 0);
			memcpy(a->samples[i], x, sizeof *x * (size_t)e->nvars);
		}
		fs_sampler_free(sa);
	}
}

static void
answers_free(struct answers *a)
{
	free(a->progress);
}

/* b's answers are want's (read from another engine of the same query). */
static void
answers_match(const struct answers *want, struct fs_engine *b, const char *what)
{
	struct answers got;
	size_t row = sizeof got.kth[0];

	answers_of(b, &got);
	ck_assert_msg(want->len == got.len && memcmp(want->progress, got.progress, got.len) == 0,
	    "%s: saved progress differs", what);
	ck_assert_msg(want->nkth == got.nkth && memcmp(want->kth, got.kth, row * (size_t)got.nkth) == 0,
	    "%s: k-th differs", what);
	ck_assert_msg(want->npage == got.npage && memcmp(want->page, got.page, row * (size_t)got.npage) == 0,
	    "%s: page differs", what);
	ck_assert_msg(want->nsamples == got.nsamples &&
	    memcmp(want->samples, got.samples, row * (size_t)got.nsamples) == 0, "%s: sample differs", what);
	answers_free(&got);
}

/* Saved progress, k-th configurations, the first page and seeded samples
 * of b are a's. */
static void
same_answers(struct fs_engine *a, struct fs_engine *b, const char *what)
{
	struct answers want;

	answers_of(a, &want);
	answers_match(&want, b, what);
	answers_free(&want);
}

/* req (taken) counted at 1 thread and at 2, 3, 4, 8: every answer the same.
 * Capped (max_nodes > 0) at 2 and 8 only: past the cap the parallel count
 * stops and one thread counts (fset_par.c), so the thread count decides only
 * how the workers race for the shared node budget before that, which the
 * fewest workers and more workers than this machine's cores both exercise
 * (3 and 4 repeated the same single-threaded count: 4 s of the test's 14
 * on a 2-core machine). */
static void
check_threads(json_t *req, int32_t max_nodes, const char *what)
{
	struct sq_query q;
	struct fs_engine one, many;
	struct dn_error err;
	char c[64], msg[256];

	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", what, err.message);
	struct answers want;

	count_at(&q, &one, 1, max_nodes, 0);
	ck_assert_msg(one.lower == one.upper, "%s: not exact", what);
	answers_of(&one, &want);
	for (int t = 2; t <= 8; t = max_nodes > 0 ? 4 * t : t < 4 ? t + 1 : 2 * t) {
		snprintf(msg, sizeof msg, "%s, %d threads", what, t);
		count_at(&q, &many, t, max_nodes, 0);
		same_tree(&one, &many, msg);
		answers_match(&want, &many, msg);
		fs_free(&many);
	}
	answers_free(&want);
	fs_count_str(one.lower, c, sizeof c);
	printf("%s: %s feasible, %d nodes: the same at 1, %s threads\n", what, c, (int)one.nnodes,
	    max_nodes > 0 ? "2 and 8" : "2, 3, 4 and 8");
	fs_free(&one);
	sq_free(&q);
	json_decref(req);
}

START_TEST(test_parallel_examples)
{
	load_catalog();
	check_threads(example_query("cnn5", "16GiB"), 0, "cnn5, 16 GiB");
	check_threads(json_pack("{s:s,s:o,s:s,s:{s:s}}", "model", "mlp", "space",
	    json_load_file(src_path("examples/spaces/mlp.json"), 0, NULL), "device", "a100-40gb", "budgets", "memory",
	    "2GiB"), 0, "mlp, 2 GiB");
	check_threads(resnet_query(), 0, "ResNet-50 walkthrough, 3 GiB");
	check_threads(transformer_query(2), 0, "transformer24, layers 0-1 free");
	cm_catalog_free(&cat);
}
END_TEST

/* Spaces with continuous hyperparameters, and random small ones. */
START_TEST(test_parallel_random)
{
	char what[64];

	load_catalog();
	/* a continuous width multiplier over a grid large enough for workers */
	check_threads(json_pack("{s:s,s:{s:{s:s,s:[i,i,i,i,i,i,i,i,i,i,i]},s:{s:s,s:[i,i,i]},s:{s:s,s:[f,f]}},"
	    "s:s,s:{s:s}}", "model", "mobilenet_v2", "space",
	    "batch_size", "_type", "choice", "_value", 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
	    "resolution", "_type", "quniform", "_value", 96, 320, 32,
	    "width_mult", "_type", "uniform", "_value", 0.3, 1.4,
	    "device", "t4", "budgets", "memory", "3GiB"), 0, "MobileNetV2, continuous width, 3 GiB");
	for (int i = 0; i < 6; i++) {
		snprintf(what, sizeof what, "real query %d", i);
		check_threads(random_real_query(i), 0, what);
	}
	for (int i = 0; i < 12; i++) {
		snprintf(what, sizeof what, "random query %d", i);
		check_threads(random_query(i), 0, what);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* A count from scratch is one item, the root: its work reaches the other
 * workers only by stealing. Forced gifts (e->par_force_steals: the only
 * busy worker waits for an idle one, so that the first gift, of the root's
 * later children, does not hang on the scheduler) on 4 threads leave the
 * one thread's tree and answers, and steals happened (a forced count
 * makes at least the first; how many more depends on the scheduling). */
static void
check_steals(json_t *req, const char *what)
{
	struct sq_query q;
	struct fs_engine one, many;
	struct dn_error err;
	struct answers want;
	char msg[256];

	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", what, err.message);
	count_at(&q, &one, 1, 0, 0);
	ck_assert_int_eq(one.steals, 0);
	answers_of(&one, &want);
	for (int force = 1; force <= 24; force *= 6) {
		memset(&many, 0, sizeof many);
		ck_assert_msg(fs_init(&many, &q, &err) == 0, "%s", err.message);
		many.threads = 4;
		many.par_force_steals = force;
		ck_assert_msg(fs_count_all(&many, 0, &err) == 0, "%s", err.message);
		snprintf(msg, sizeof msg, "%s, 4 threads, %d forced steals", what, force);
		ck_assert_msg(many.steals >= 1, "%s: no steal", msg);
		same_tree(&one, &many, msg);
		answers_match(&want, &many, msg);
		printf("%s: %lld steals, the one thread's tree\n", msg, (long long)many.steals);
		fs_free(&many);
	}
	answers_free(&want);
	fs_free(&one);
	sq_free(&q);
	json_decref(req);
}

START_TEST(test_parallel_steal)
{
	load_catalog();
	check_steals(example_query("cnn5", "16GiB"), "cnn5, 16 GiB");
	check_steals(resnet_query(), "ResNet-50 walkthrough, 3 GiB");
	check_steals(transformer_query(2), "transformer24, layers 0-1 free");
	cm_catalog_free(&cat);
}
END_TEST

/* A tree capped at max_nodes (the parallel count falls back to one thread)
 * is the one thread's, capped the same way; so is one just under the cap. */
START_TEST(test_parallel_capped)
{
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	json_t *req = example_query("cnn5", "16GiB");
	int32_t full;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	count_at(&q, &e, 1, 0, 0);
	full = e.nnodes;
	fs_free(&e);
	sq_free(&q);
	check_threads(json_incref(req), full / 3, "cnn5, 16 GiB, max_nodes a third of the tree");
	check_threads(json_incref(req), full, "cnn5, 16 GiB, max_nodes the tree exactly");
	check_threads(req, 40, "cnn5, 16 GiB, max_nodes 40");
	cm_catalog_free(&cat);
}
END_TEST

/* Every inner node's count and upper are its children's sums; leaves'
 * counts lie within their upper bounds; the root's are e's bounds. The
 * first node that breaks a rule, or -1. */
static int32_t
invalid_node(const struct fs_engine *e)
{
	if (e->nnodes == 0 || e->nodes[0].parent != -1 || e->lower != e->nodes[0].count ||
	    e->upper != e->nodes[0].upper)
		return 0;
	for (int32_t i = 0; i < e->nnodes; i++) {
		const struct fs_node *x = &e->nodes[i];
		fs_count c = 0, u = 0;
		if (x->count > x->upper)
			return i;
		if ((x->status == FS_FULL || x->status == FS_EMPTY) && (x->nchildren != 0 || x->count != x->upper))
			return i;
		if (x->nchildren == 0)
			continue;
		if (x->first_child <= i || x->first_child + x->nchildren > e->nnodes)
			return i;
		for (int32_t k = 0; k < x->nchildren; k++) {
			if (e->nodes[x->first_child + k].parent != i)
				return i;
			c += e->nodes[x->first_child + k].count;
			u += e->nodes[x->first_child + k].upper;
		}
		if (c != x->count || u != x->upper || x->status != (c == u ? FS_MIXED : FS_UNKNOWN))
			return i;
	}
	return -1;
}

static void
check_valid_tree(const struct fs_engine *e)
{
	int32_t bad = invalid_node(e);

	ck_assert_msg(bad < 0, "node %d breaks the tree's invariants", (int)bad);
}

/* A count on 2 threads cut by a short deadline is a valid tree whose
 * bounds hold the exact count; fs_count_more on 2 threads finishes it.
 * Layers 0-4 free (16.8M configurations, 0.37 s on 2 threads): layers 0-1
 * took 0.12 s until the engine ordered the heads dims first (fset_init.c,
 * leaves_rule_open), 0.007 s since, within the shortest deadline. */
START_TEST(test_parallel_deadline)
{
	struct sq_query q;
	struct fs_engine one, two;
	struct dn_error err;
	json_t *req = transformer_query(5);
	int cut = 0;

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	count_at(&q, &one, 1, 0, 0);
	for (int i = 0; i < 4; i++) {
		count_at(&q, &two, 2, 0, 0.02 * (i + 1));
		check_valid_tree(&two);
		ck_assert(two.lower <= one.lower && one.lower <= two.upper);
		cut += two.timed_out;
		two.threads = 2;
		while (two.lower != two.upper) {
			ck_assert_int_eq(fs_count_more(&two, 0.05, &err), 0);
			check_valid_tree(&two);
			ck_assert(two.lower <= one.lower && one.lower <= two.upper);
		}
		ck_assert_int_eq(fs_count_more(&two, 0, &err), 0);
		ck_assert(two.lower == one.lower && two.upper == one.lower);
		fs_free(&two);
	}
	printf("transformer24, layers 0-4 free: %d of 4 counts on 2 threads cut by a deadline, finished exact\n", cut);
	ck_assert_int_ge(cut, 1);
	fs_free(&one);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* The whole transformer24 space (1.3e30 configurations, never exact) on 1
 * and 2 threads with small node caps and short deadlines, continued in six
 * slices (0.02-0.3 s, a longer before each shorter) as the service does:
 * every slice answers a valid tree within the cap, and the certified
 * bounds never loosen. Both failed before (the six slices too: at cap 64
 * the lower bound fell 17604 -> 9848 after the first short one): on 2
 * threads the graft outgrew the cap ("out of memory while counting", the
 * node budget counted a root for every item, claimed or not), and on any
 * number of threads a leaf that a capped count had partly counted lost
 * its lower bound when a shorter slice counted it again (fs_leaf_merge). */
START_TEST(test_parallel_capped_deadline)
{
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	json_t *req = transformer24_request();
	static const int32_t caps[] = { 64, 500, 2000, 8000, 30000 };
	/* a longer slice before each shorter one: a shorter recount of a leaf
	 * the longer one partly counted is what lost its lower bound */
	static const double slices[] = { 0.3, 0.02, 0.1, 0.05 };

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	for (int threads = 1; threads <= 2; threads++)
		for (size_t c = 0; c < sizeof caps / sizeof *caps; c++) {
			count_at(&q, &e, threads, caps[c], 0.05);
			check_valid_tree(&e);
			ck_assert(e.nnodes <= caps[c]);
			for (int i = 0; i < 6; i++) {
				fs_count lo = e.lower, hi = e.upper;
				e.threads = threads;
				ck_assert_msg(fs_count_more(&e, slices[i % 4], &err) == 0, "%d threads, cap %d: %s",
				    threads, (int)caps[c], err.message);
				check_valid_tree(&e);
				ck_assert(e.nnodes <= caps[c]);
				ck_assert_msg(e.lower >= lo && e.upper <= hi,
				    "%d threads, cap %d, slice %d: [%Lg, %Lg] after [%Lg, %Lg]", threads, (int)caps[c], i,
				    (long double)e.lower, (long double)e.upper, (long double)lo, (long double)hi);
			}
			fs_free(&e);
		}
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

/* An unfinished tree (cut by a work limit on one thread) continued
 * without a deadline on 3 threads is the tree one thread continues to. */
START_TEST(test_parallel_more)
{
	struct sq_query q;
	struct fs_engine a, b;
	struct dn_error err;
	json_t *req = example_query("cnn5", "16GiB");

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s", err.message);
	init_engine(&a, &q);
	init_engine(&b, &q);
	a.work_limit = b.work_limit = 20000;
	ck_assert_int_eq(fs_count_all(&a, 0, &err), 0);
	ck_assert_int_eq(fs_count_all(&b, 0, &err), 0);
	a.work_limit = b.work_limit = 0;
	ck_assert(a.lower != a.upper);
	same_tree(&a, &b, "cut at 20000 bound calls");
	b.threads = 3;
	ck_assert_int_eq(fs_count_more(&a, 0, &err), 0);
	ck_assert_int_eq(fs_count_more(&b, 0, &err), 0);
	same_tree(&a, &b, "continued on 1 and 3 threads");
	same_answers(&a, &b, "continued on 1 and 3 threads");
	fs_free(&a);
	fs_free(&b);
	sq_free(&q);
	json_decref(req);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
parallel_suite(void)
{
	Suite *s = suite_create("fset_parallel");
	TCase *t = tcase_create("parallel");

	tcase_set_timeout(t, 1800);
	tcase_add_test(t, test_parallel_examples);
	tcase_add_test(t, test_parallel_random);
	tcase_add_test(t, test_parallel_steal);
	tcase_add_test(t, test_parallel_capped);
	tcase_add_test(t, test_parallel_deadline);
	tcase_add_test(t, test_parallel_more);
	tcase_add_test(t, test_parallel_capped_deadline);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(parallel_suite(), 0);
}
