/*
 * test_fset_jobs.c - a count cut into jobs (fset_jobs.c, the service's
 * distributed count): an unfinished count split into jobs, each job's box
 * counted from its path text in another engine, the counts grafted back,
 * gives the single-process count and the same configurations (brute force),
 * from a tree of fs_count_all or of fs_jobs_start;
 * malformed paths and wrong grafts are refused; a job stopped by its
 * progress callback (a lost lease) says so instead of a count. Jobs that
 * send their data along (fs_jobs_run, fs_jobs_graft_data): the assembled
 * tree's reduced space, projection, k-th configuration and pages are the
 * one-process count's, without searching the jobs' boxes again; malformed
 * data is refused and changes nothing.
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"
#include "test_reseal.h"
#include "fset_project.h"

/* An MLP whose width runs over 64 values and whose budget and constraint
 * cut across the grid: a count that a 1 us deadline leaves unfinished,
 * with enough undecided boxes to cut into jobs, and 19k configurations for
 * brute force (7,293 feasible). (It had 127 widths, 14,454 feasible: each
 * k-th inside a grafted job's box recounts that box, so the checks of
 * every k cost 7x as much for the same paths through the code.) */
static json_t *
jobs_query(void)
{
	return json_pack("{s:s,s:{s:{s:s,s:[i,i,i,i,i,i,i,i,i,i,i]},s:{s:s,s:[i,i,i]},s:{s:s,s:[i,i]},"
	    "s:{s:s,s:[s,s,s]}},s:s,s:{s:s},s:[s]}", "model", "mlp", "space",
	    "batch_size", "_type", "choice", "_value", 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024,
	    "hidden", "_type", "quniform", "_value", 64, 4096, 64,
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
		ck_assert_int_eq(fs_jobs_grafted(&e, leaves[i]), 0);
		ck_assert_int_eq(fs_jobs_graft(&e, leaves[i], c, &err), 0);
		ck_assert_int_eq(fs_jobs_grafted(&e, leaves[i]), 1);
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
	/* node for node e's tree, whose every answer was checked above: the
	 * answers are the tree's (and the query's); a few read through g */
	same_tree(&e, &g, "grafted jobs, saved and loaded");
	for (int i = 0; i < 8; i++) {
		int64_t pos[16], k = (nbf - 1) / 7 * i;
		char *s;
		ck_assert_int_le(g.nvars, 16);
		ck_assert_int_eq(fs_kth(&g, (fs_count)k, pos, &err), 0);
		s = key_of(&g, pos);
		ck_assert_str_eq(s, bf[k]);
		free(s);
	}
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


/* The reduced space of e as text (the service's final answer), and its
 * projection's per-var positions into *p. */
static char *
reduced_text(struct fs_engine *e, struct fs_projection *p)
{
	struct dn_error err;
	json_t *rs;
	char *t;

	memset(&err, 0, sizeof err);
	ck_assert_msg(fs_project(e, p, &err) == 0, "%s", err.message);
	rs = fs_reduced_space(e, p, &err);
	ck_assert_msg(rs != NULL, "%s", err.message);
	t = json_dumps(rs, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(rs);
	return t;
}

static void
same_projection(const struct fs_engine *e, const struct fs_projection *a, const struct fs_projection *b)
{
	for (int v = 0; v < e->nvars; v++) {
		ck_assert_int_eq(a->max_certain[v], b->max_certain[v]);
		ck_assert_int_eq(a->max_possible[v], b->max_possible[v]);
		for (int64_t i = 0; a->present[v] != NULL && i < e->vars[v].n; i++) {
			ck_assert_int_eq(a->present[v][i], b->present[v][i]);
			ck_assert_int_eq(a->possible[v][i], b->possible[v][i]);
		}
	}
}

/* Cuts q's count into 24 jobs (as the service publishes them) into e:
 * the leaves and their number. */
static void
cut_jobs(struct sq_query *q, struct fs_engine *e, int32_t **leaves, int *n)
{
	struct dn_error err;
	size_t len;
	void *buf;

	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_init(e, q, &err), 0);
	ck_assert_int_eq(fs_jobs_start(e, 1e-6, &err), 0);
	ck_assert_int_eq(fs_jobs_split(e, 24, &err), 0);
	ck_assert_int_eq(fs_progress_save(e, &buf, &len, &err), 0);
	fs_free(e);
	ck_assert_int_eq(fs_init(e, q, &err), 0);
	ck_assert_int_eq(fs_progress_load(e, buf, len, &err), 0);
	free(buf);
	ck_assert_int_eq(fs_jobs_leaves(e, leaves, n, &err), 0);
	ck_assert_int_ge(*n, 24);
}

START_TEST(test_jobs_data_answers)
{
	json_t *req = jobs_query();
	struct sq_query q;
	struct fs_engine e, f, g;
	struct fs_projection p1, pd, pc;
	struct dn_error err;
	char **bf, *one, *data_rs, *count_rs;
	int64_t nbf, calls_data, calls_counts;
	int32_t *leaves;
	int n;
	fs_count exact;

	jobs_engine(&q, &e, req);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	exact = e.lower;
	nbf = brute(&e, &bf);
	one = reduced_text(&e, &p1);
	fs_free(&e);

	/* e: counts with their data; g: the same tree (a deadline cut it),
	 * the same counts alone */
	cut_jobs(&q, &e, &leaves, &n);
	{
		void *buf;
		size_t len;
		ck_assert_int_eq(fs_progress_save(&e, &buf, &len, &err), 0);
		ck_assert_int_eq(fs_init(&g, &q, &err), 0);
		ck_assert_int_eq(fs_progress_load(&g, buf, len, &err), 0);
		free(buf);
	}
	ck_assert_int_eq(fs_init(&f, &q, &err), 0);
	for (int i = 0; i < n; i++) {
		char *path = fs_jobs_path(&e, leaves[i]);
		fs_count c = 0, c2 = 0;
		void *data;
		size_t len;
		ck_assert_msg(fs_jobs_run(&f, path, &c, &data, &len, &err) == 0, "job %d: %s", i, err.message);
		ck_assert_int_eq(fs_jobs_count(&f, path, &c2, &err), 0);
		ck_assert(c == c2);
		ck_assert_msg(fs_jobs_graft_data(&e, leaves[i], c, data, len, &err) == 0, "job %d: %s", i, err.message);
		ck_assert_int_eq(fs_jobs_graft(&g, leaves[i], c, &err), 0);
		free(data);
		free(path);
	}
	fs_jobs_sum(&e);
	fs_jobs_sum(&g);
	ck_assert(e.lower == exact && e.upper == exact && g.lower == exact);
	calls_data = e.bound_calls;
	data_rs = reduced_text(&e, &pd);
	calls_data = e.bound_calls - calls_data;
	calls_counts = g.bound_calls;
	count_rs = reduced_text(&g, &pc);
	calls_counts = g.bound_calls - calls_counts;
	/* the one-process answer, without searching the jobs' boxes again */
	ck_assert_str_eq(data_rs, one);
	ck_assert_str_eq(count_rs, one);
	same_projection(&e, &p1, &pd);
	same_projection(&e, &p1, &pc);
	ck_assert_msg(calls_data < calls_counts, "projecting with the jobs' data took %lld bound calls, without %lld",
	    (long long)calls_data, (long long)calls_counts);
	check_answers(&e, bf, nbf, "jobs grafted with their data");
	printf("%d jobs with their data: the reduced space in %lld bound calls (%lld recounting the boxes)\n", n,
	    (long long)calls_data, (long long)calls_counts);
	fs_projection_free(&p1);
	fs_projection_free(&pd);
	fs_projection_free(&pc);
	free(one);
	free(data_rs);
	free(count_rs);
	free_list(bf, nbf);
	fs_free(&g);
	jobs_done(&q, &e, &f, leaves, req);
}
END_TEST

/* Data for the leaf: the header, var 0 with one run at position `at`
 * (the others none), sealed. */
static size_t
forged_data(const struct fs_engine *e, fs_count count, int64_t at, uint8_t *b)
{
	size_t n = 0;

	memcpy(b, "DNJD", 4);
	b[4] = 1;
	b[5] = b[6] = b[7] = 0;
	for (int i = 0; i < 4; i++) {
		b[8 + i] = (uint8_t)((uint32_t)e->nvars >> (8 * i));
		b[12 + i] = (uint8_t)((uint32_t)e->ncvars >> (8 * i));
	}
	for (int i = 0; i < 16; i++)
		b[16 + i] = (uint8_t)(count >> (8 * i));
	n = 32;
	b[n++] = 1;                     /* var 0: one run of one position */
	b[n++] = (uint8_t)at;
	b[n++] = 0;
	for (int v = 1; v < e->nvars; v++)
		b[n++] = 0;
	n += 8;
	test_reseal(b, n);
	return n;
}

START_TEST(test_jobs_data_refused)
{
	json_t *req = jobs_query();
	struct sq_query q;
	struct fs_engine e, f;
	struct dn_error err;
	int32_t *leaves, leaf = -1;
	int n;
	fs_count c = 0;
	uint8_t *d, *x, forged[256];
	size_t len, flen;
	void *data;
	char *path;
	int64_t out = -1, in = -1;

	jobs_engine(&q, &e, req);
	fs_free(&e);
	cut_jobs(&q, &e, &leaves, &n);
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(fs_init(&f, &q, &err), 0);
	/* a job whose box narrows var 0 (batch size): positions outside it exist */
	for (int i = 0; i < n && leaf < 0; i++)
		for (int32_t y = leaves[i]; y >= 0 && leaf < 0; y = e.nodes[y].parent)
			if (e.nodes[y].var == 0 && e.nodes[y].hi < e.vars[0].n - 1) {
				leaf = leaves[i];
				in = e.nodes[y].lo;
				out = e.nodes[y].hi + 1;
			}
	ck_assert_int_ge(leaf, 0);
	path = fs_jobs_path(&e, leaf);
	ck_assert_int_eq(fs_jobs_run(&f, path, &c, &data, &len, &err), 0);
	d = data;
	x = malloc(len + 1);
	/* each malformed copy is refused with "data", and grafts nothing */
	for (int k = 0; k < 6; k++) {
		size_t xl = len;
		memcpy(x, d, len);
		switch (k) {
		case 0: xl = len - 1; break;                    /* truncated */
		case 1: x[len / 2] ^= 0x40; break;              /* a flipped bit: the checksum */
		case 2: x[4] = 2; test_reseal(x, xl); break;    /* another version */
		case 3: x[8] ^= 1; test_reseal(x, xl); break;   /* another query's variables */
		case 4: x[16] ^= 1; test_reseal(x, xl); break;  /* another count */
		case 5: x[len - 8] = 0; xl = len + 1; test_reseal(x, xl); break;     /* a trailing byte */
		}
		ck_assert_msg(fs_jobs_graft_data(&e, leaf, c, x, xl, &err) == -1, "malformed copy %d accepted", k);
		ck_assert_str_eq(err.path, "data");
		dn_error_clear(&err);
		ck_assert(e.nodes[leaf].status == FS_UNKNOWN);
		ck_assert_int_eq(fs_jobs_grafted(&e, leaf), 0);
		ck_assert_ptr_null(fs_jobs_proj(&e, leaf));
	}
	ck_assert_int_eq(fs_jobs_grafted(&e, 0), -1);          /* the root: not a leaf */
	ck_assert_int_eq(fs_jobs_grafted(&e, e.nnodes), -1);
	ck_assert_int_eq(fs_jobs_graft_data(&e, leaf, c + 1, d, len, &err), -1);       /* not this count */
	dn_error_clear(&err);
	ck_assert_int_eq(fs_jobs_graft_data(&e, 0, c, d, len, &err), -1);              /* the root: not a leaf */
	dn_error_clear(&err);
	/* a position outside the job's box is refused; one inside is taken */
	flen = forged_data(&e, c, out, forged);
	ck_assert_int_eq(fs_jobs_graft_data(&e, leaf, c, forged, flen, &err), -1);
	ck_assert_str_eq(err.path, "data");
	dn_error_clear(&err);
	flen = forged_data(&e, c, in, forged);
	ck_assert_msg(fs_jobs_graft_data(&e, leaf, c, forged, flen, &err) == 0, "%s", err.message);
	ck_assert_ptr_nonnull(fs_jobs_proj(&e, leaf));
	/* the genuine data replaces it */
	ck_assert_int_eq(fs_jobs_graft_data(&e, leaf, c, d, len, &err), 0);
	ck_assert_ptr_nonnull(fs_jobs_proj(&e, leaf));
	free(x);
	free(data);
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
	tcase_add_test(t, test_jobs_data_answers);
	tcase_add_test(t, test_jobs_data_refused);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
