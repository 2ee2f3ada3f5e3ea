/*
 * test_fset_random.c - the feasible-set engine against brute force on 240 random
 * small queries (random templates, domains, budgets and user constraints):
 * the count, the k-th configurations, the cursor walk, the projections and
 * the samples' support equal what evaluating every configuration gives; and
 * on all 240 the set of Z3's models of sq_z3_assertions is the brute-force
 * set (z3_check_set: each a model, none other): MLP and GPT-2 queries as drawn,
 * ResNet, NB201 and MobileNetV2 ones on a smaller variant of the template
 * (small_variant: fewer blocks, cells or groups, the same space, budgets
 * and constraints), itself checked against brute force too. Z3 takes
 * about 0.3 s a space there thanks to the finite-domain tables of z3c
 * (z3c_var_domain). DNNSAT_TEST_Z3=0 skips the Z3 part (scripts/test.sh
 * runs it in its plain pass only).
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

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
		z3_cases += test_z3_enabled();
		per_family[fam]++;
		json_decref(small);
		json_decref(req);
	}
	ck_assert_int_ge(cases, 200);
	if (test_z3_enabled())
		ck_assert_int_ge(z3_cases, 200);
	for (int f = 0; f < 5; f++)
		ck_assert_int_ge(per_family[f], 40);
	printf("%d random queries agree with brute force, %d of them also with Z3's set of models "
	    "(the same set of configurations): %s %d, %s %d, %s %d, %s %d, %s %d; Z3 %.1f s of %.1f s\n",
	    cases, z3_cases, families[0], per_family[0], families[1], per_family[1], families[2],
	    per_family[2], families[3], per_family[3], families[4], per_family[4], z3_s, fs_now() - t0);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("fset_random");
	TCase *t;

	t = tcase_create("random");
	/* test_random_against_brute_force: 250 s alone, 380 s on a busy 2-core
	 * machine (Z3's 240 set checks, bounded by work, not time) */
	tcase_set_timeout(t, 1200);
	tcase_add_test(t, test_random_against_brute_force);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
