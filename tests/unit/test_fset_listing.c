/*
 * test_fset_listing.c - listing (fs_walk, the tree walk of fs_kth and fs_next)
 * against brute force and against the plain search (e->nav_plain) in every
 * state of an engine - no count, an unfinished one, exact, a capped tree -
 * on small random queries, choices nested two deep, the README's ResNet-50
 * space (42k nodes) and the 24-layer transformer; the k-th of cnn5's trees
 * cut at max_nodes against its whole tree.
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

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

/* A large graph: the README's ResNet-50 space (42k nodes, 1324 of 9240
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

/* The k-th configuration of a tree cut at max_nodes, searched in the
 * leaves that the cut left unstored (from the nearer end of each, fset_nav.c),
 * is the whole tree's: cnn5 at 16 GiB (197,800,370 of them, a 288k-node
 * tree), cut at 40 nodes, at 1000 and at a third of the tree, at 64 spread
 * k (the first and the last among them) and 64 random ones. */
START_TEST(test_listing_capped_kth)
{
	json_t *req = example_query("cnn5", "16GiB");
	struct sq_query q;
	struct fs_engine full, cut;
	struct dn_error err;
	int64_t want[16], got[16];
	int32_t caps[3];

	load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", err.path, err.message);
	init_engine(&full, &q);
	ck_assert_int_eq(fs_count_all(&full, 0, &err), 0);
	ck_assert(full.lower == full.upper && full.nvars <= 16);
	caps[0] = 40;
	caps[1] = 1000;
	caps[2] = full.nnodes / 3;
	for (int c = 0; c < 3; c++) {
		init_engine(&cut, &q);
		cut.max_nodes = caps[c];
		ck_assert_int_eq(fs_count_all(&cut, 0, &err), 0);
		ck_assert(cut.lower == full.lower && cut.upper == full.upper && cut.nnodes <= caps[c]);
		for (int i = 0; i < 128; i++) {
			fs_count k = i < 64 ? (full.lower - 1) / 63 * (fs_count)i + (i == 63 ? (full.lower - 1) % 63 : 0)
			    : (fs_count)rnd((uint64_t)full.lower);
			ck_assert_int_eq(fs_kth(&full, k, want, &err), 0);
			ck_assert_int_eq(fs_kth(&cut, k, got, &err), 0);
			ck_assert_msg(memcmp(want, got, sizeof *want * (size_t)full.nvars) == 0,
			    "cnn5, tree cut at %d nodes: k-th %llu differs", (int)caps[c], (unsigned long long)k);
		}
		ck_assert_int_eq(fs_kth(&cut, full.lower, got, &err), 1);
		fs_free(&cut);
	}
	fs_free(&full);
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
	json_t *req = transformer24_request();
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
	Suite *s = suite_create("fset_listing");
	TCase *t;

	t = tcase_create("listing");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_listing_nested);
	tcase_add_test(t, test_listing_random);
	tcase_add_test(t, test_listing_large_graph);
	tcase_add_test(t, test_listing_capped_kth);
	tcase_add_test(t, test_listing_transformer);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
