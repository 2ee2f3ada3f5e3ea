/*
 * test_fset_jobs.c - a count cut into jobs (fset_jobs.c, the service's
 * distributed count): an unfinished count split into jobs, each job's box
 * counted from its path text in another engine, the counts grafted back,
 * gives the single-process count and the same configurations (brute force),
 * from a tree of fs_count_all or of fs_jobs_start;
 * malformed paths and wrong grafts are refused; a job stopped by its
 * progress callback (a lost lease) says so instead of a count.
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

/* An MLP whose width runs over 127 values and whose budget and
 * constraint cut across the grid: a count that a 1 us deadline leaves
 * unfinished, with enough undecided boxes to cut into jobs, and 33k
 * configurations for brute force. */
static json_t *
jobs_query(void)
{
	return json_pack("{s:s,s:{s:{s:s,s:[i,i,i,i,i,i,i,i,i,i,i]},s:{s:s,s:[i,i,i]},s:{s:s,s:[i,i]},"
	    "s:{s:s,s:[s,s,s]}},s:s,s:{s:s},s:[s]}", "model", "mlp", "space",
	    "batch_size", "_type", "choice", "_value", 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
	    "hidden", "_type", "quniform", "_value", 64, 4096, 32,
	    "depth", "_type", "randint", "_value", 1, 9,
	    "activation", "_type", "choice", "_value", "relu", "gelu", "tanh",
	    "device", "a100-40gb", "budgets", "memory", "4GiB", "constraints", "hidden * depth <= 6000");
}

/* Parses jobs_query into q and prepares e for it (the catalog loaded). */
static void
jobs_engine(struct sq_query *q, struct fs_engine *e, json_t *req)
{
	struct dn_error err;

	load_catalog();
	parse_query(req, q);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_init(e, q, &err), 0);
}

/* Frees what jobs_engine and a test made. */
static void
jobs_done(struct sq_query *q, struct fs_engine *e, struct fs_engine *f, int32_t *leaves, json_t *req)
{
	free(leaves);
	fs_free(f);
	fs_free(e);
	sq_free(q);
	json_decref(req);
	cm_catalog_free(&cat);
}

START_TEST(test_jobs_sum_is_the_count)
{
	json_t *req = jobs_query();
	struct sq_query q;
	struct fs_engine e, f, g;
	struct dn_error err;
	char **bf;
	int64_t nbf;
	int32_t *leaves;
	int n;
	fs_count exact;
	size_t len;
	void *buf;

	jobs_engine(&q, &e, req);
	exact = exact_count(&q, &bf, &nbf);
	memset(&err, 0, sizeof err);
	/* _i 0: a count's tree as fs_count_all leaves it (best first at the
	 * end: many small boxes); 1: as the service starts a count for jobs
	 * (depth first only: few large boxes, split to the number wanted) */
	ck_assert_int_eq(_i == 0 ? fs_count_all(&e, 1e-6, &err) : fs_jobs_start(&e, 1e-6, &err), 0);
	ck_assert_msg(e.lower < e.upper, "a 1 us deadline did not interrupt the count");
	ck_assert_int_eq(fs_jobs_split(&e, 24, &err), 0);
	ck_assert(e.lower <= exact && exact <= e.upper);
	/* as the service publishes it: the tree saved, and the jobs listed
	 * from the tree loaded back (every replica's numbering) */
	ck_assert_int_eq(fs_progress_save(&e, &buf, &len, &err), 0);
	fs_free(&e);
	ck_assert_int_eq(fs_init(&e, &q, &err), 0);
	ck_assert_int_eq(fs_progress_load(&e, buf, len, &err), 0);
	free(buf);
	ck_assert_int_eq(fs_jobs_leaves(&e, &leaves, &n, &err), 0);
	ck_assert_msg(n >= 24, "only %d jobs (%d nodes)", n, e.nnodes);
	for (int i = 1; i < n; i++)
		ck_assert(e.nodes[leaves[i - 1]].upper >= e.nodes[leaves[i]].upper);
	ck_assert_int_eq(fs_init(&f, &q, &err), 0);
	for (int i = 0; i < n; i++) {
		char *path = fs_jobs_path(&e, leaves[i]);
		fs_count c = 0;
		ck_assert_ptr_nonnull(path);
		ck_assert_msg(fs_jobs_count(&f, path, &c, &err) == 0, "job %d (%s): %s", i, path, err.message);
		ck_assert(c <= e.nodes[leaves[i]].upper);
		ck_assert_int_eq(fs_jobs_graft(&e, leaves[i], c, &err), 0);
		/* the same count twice is no change; another is refused */
		ck_assert_int_eq(fs_jobs_graft(&e, leaves[i], c, &err), 0);
		ck_assert_int_eq(fs_jobs_graft(&e, leaves[i], c + 1, &err), -1);
		dn_error_clear(&err);
		free(path);
	}
	fs_jobs_sum(&e);
	ck_assert_msg(e.lower == exact && e.upper == exact && !e.timed_out, "grafted %llu..%llu, the count is %llu",
	    (unsigned long long)e.lower, (unsigned long long)e.upper, (unsigned long long)exact);
	/* the k-th configuration, pages and cursors through the grafted leaves */
	check_answers(&e, bf, nbf, "grafted jobs");
	/* the grafted tree saved and loaded elsewhere answers the same */
	ck_assert_int_eq(fs_progress_save(&e, &buf, &len, &err), 0);
	ck_assert_int_eq(fs_init(&g, &q, &err), 0);
	ck_assert_int_eq(fs_progress_load(&g, buf, len, &err), 0);
	free(buf);
	ck_assert(g.lower == exact && g.upper == exact);
	check_answers(&g, bf, nbf, "grafted jobs, saved and loaded");
	fs_free(&g);
	printf("%s: %d jobs counted apart and grafted: %llu, the single-process count\n",
	    _i == 0 ? "fs_count_all" : "fs_jobs_start", n, (unsigned long long)exact);
	free_list(bf, nbf);
	jobs_done(&q, &e, &f, leaves, req);
}
END_TEST

static void
stop_now(void *ctx, const struct fs_engine *e)
{
	(void)e;
	((struct fs_engine *)ctx)->timed_out = 1;       /* as a lost lease does */
}

START_TEST(test_jobs_refused)
{
	json_t *req = jobs_query();
	struct sq_query q;
	struct fs_engine e, f;
	struct dn_error err;
	int32_t *leaves;
	int n;
	fs_count c;
	char *path;

	jobs_engine(&q, &e, req);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_jobs_split(&e, 4, &err), -1);   /* no count yet */
	dn_error_clear(&err);
	ck_assert_int_eq(fs_count_all(&e, 1e-6, &err), 0);
	ck_assert_int_eq(fs_jobs_split(&e, 4, &err), 0);
	ck_assert_int_eq(fs_jobs_leaves(&e, &leaves, &n, &err), 0);
	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(fs_init(&f, &q, &err), 0);
	static const char *const bad[] = { "", "x", "0:1", "999:0:0", "0:5:2", "0:0:99999", "0:0:0;1:0:0" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_msg(fs_jobs_count(&f, bad[i], &c, &err) == -1, "path \"%s\" accepted", bad[i]);
		ck_assert_str_eq(err.path, "path");
		dn_error_clear(&err);
	}
	ck_assert_int_eq(fs_jobs_graft(&e, 0, 0, &err), -1);     /* the root: not a leaf */
	dn_error_clear(&err);
	ck_assert_int_eq(fs_jobs_graft(&e, e.nnodes, 0, &err), -1);
	dn_error_clear(&err);
	ck_assert_int_eq(fs_jobs_graft(&e, leaves[0], e.nodes[leaves[0]].upper + 1, &err), -1);
	dn_error_clear(&err);
	/* a job stopped by its progress callback gives no count */
	path = fs_jobs_path(&e, leaves[0]);
	f.progress = stop_now;
	f.progress_ctx = &f;
	f.next_progress = 0;
	ck_assert_int_eq(fs_jobs_count(&f, path, &c, &err), 1);
	f.progress = NULL;
	f.timed_out = 0;
	ck_assert_int_eq(fs_jobs_count(&f, path, &c, &err), 0);
	free(path);
	jobs_done(&q, &e, &f, leaves, req);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fset_jobs");
	TCase *t;

	t = tcase_create("jobs");
	tcase_set_timeout(t, 600);
	tcase_add_loop_test(t, test_jobs_sum_is_the_count, 0, 2);
	tcase_add_test(t, test_jobs_refused);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
