/*
 * test_fset_real.c - continuous hyperparameters bound to the model: random
 * queries over real multipliers against brute force on a dense grid
 * (configurations that fit only off the grid, reduced ranges).
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

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

static Suite *
suite(void)
{
	Suite *s = suite_create("fset_real");
	TCase *t;

	t = tcase_create("real");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_real_against_brute_force);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
