/*
 * test_fset_engine.c - parsing queries (errors naming their field, units, the
 * memory cap, binding the space to the model), the safe memory estimate's
 * feasible set inside the expected one's, and the engine on nested choices,
 * huge grids and deadlines.
 * Shared set-up: test_fset_util.h.
 */
#include "test_fset_util.h"

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
	/* a key in the chosen option that is not its parameter (the other
	 * option's, or a typo) is refused with its path: it was dropped, and
	 * the trial got the verdict of a configuration it is not */
	{
		static const char *const bad[][2] = {
			{ "{\"batch_size\": 16, \"op\": {\"_name\": \"pool\", \"kernel\": 3}}", "$.configuration.op.kernel" },
			{ "{\"batch_size\": 16, \"op\": {\"_name\": \"conv\", \"kernel\": 3, \"width\": 16, \"wdith\": 64}}",
			  "$.configuration.op.wdith" },
		};
		int64_t *back = calloc((size_t)e.nvars + 1, sizeof *back);
		for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
			json_t *j = json_loads(bad[b][0], 0, NULL);
			memset(&err, 0, sizeof err);
			ck_assert_int_ne(fs_from_json(&e, j, back, &err), 0);
			ck_assert_str_eq(err.path, bad[b][1]);
			ck_assert_ptr_nonnull(strstr(err.message, "has no parameter"));
			json_decref(j);
		}
		free(back);
	}
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
		{ S_BS " \"constraints\": [\"batch_sise > 3\"]}", "$.constraints[0]",
		  "unknown name 'batch_sise' (not a hyperparameter, argument or index) at offset 0 (near \"batch_sise > 3\") "
		  "(did you mean batch_size?)" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"workload\": {\"optimizer\": \"lamb\"}}", "$.workload.optimizer", "unknown optimizer \"lamb\" (sgd, sgd_momentum" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"workload\": {\"attention\": \"flash3\"}}", "$.workload.attention", "must be sdpa" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"workload\": {\"grad_accum\": 0}}", "$.workload.grad_accum", "must be an integer from 1" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"fixed\": {\"nope\": 1}}", "$.fixed.nope", "no hyperparameter" },
		{ "{\"model\": \"resnet50\", \"space\": {\"lr\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}}",
		  NULL, "sets no hyperparameter" },
		{ "{\"model\": \"resnet50\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"surprise\": 1}", "$", "unknown field" },
		/* fine-tuning: each field named */
		{ S_BS " \"workload\": {\"lora\": {\"rank\": 0, \"targets\": [\"linear\"]}}}", "$.workload.lora.rank",
		  "must be an integer from 1" },
		{ S_BS " \"workload\": {\"lora\": {\"rank\": 8}}}", "$.workload.lora.targets", "is required" },
		{ S_BS " \"workload\": {\"lora\": {\"rank\": 8, \"targets\": [\"attn.q\"]}}}",
		  "$.workload.lora.targets[0]", "unknown selector \"attn.q\"" },
		{ S_BS " \"workload\": {\"lora\": {\"rank\": \"r + 1\", \"targets\": [\"linear\"]}}}",
		  "$.workload.lora.rank", "unknown name" },
		{ S_BS " \"workload\": {\"lora\": {\"rank\": 8, \"targets\": [\"linear\"], \"dropout\": 1}}}",
		  "$.workload.lora.dropout", "must be a number from 0 to below 1" },
		{ S_BS " \"workload\": {\"lora\": {\"rank\": 8, \"targets\": [\"linear\"], \"dropout\": \"0.1\"}}}",
		  "$.workload.lora.dropout", "must be a number" },
		{ S_BS " \"workload\": {\"quantize\": \"int4\"}}", "$.workload.quantize", "must be nf4, nf4-dq, fp4, fp4-dq (bitsandbytes" },
		{ S_BS " \"workload\": {\"freeze\": \"embedding\"}}", "$.workload.freeze", "non-empty list" },
		{ S_BS " \"workload\": {\"train\": [\"\"]}}", "$.workload.train[0]", "an empty selector" },
		/* bare numbers and ambiguous units in budgets */
		{ S_BS " \"budgets\": {\"memory\": 3}}", "$.budgets.memory", "3 has no unit: did you mean \"3GiB\"" },
		{ S_BS " \"budgets\": {\"memory\": \"16\"}}", "$.budgets.memory", "16 has no unit" },
		{ S_BS " \"budgets\": {\"memory\": 2108271104}}", "$.budgets.memory",
		  "2108271104 has no unit: did you mean \"2108271104B\" (bytes)?" },
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
		/* a fixed hyperparameter that the space searches too (its values won unsaid) */
		{ S_BS " \"fixed\": {\"batch_size\": 512}}", "$.fixed.batch_size",
		  "the space sets batch_size too (its parameter \"batch_size\"), and its values would win" },
		{ "{\"model\": \"resnet50\", \"space\": {\"bs\": {\"_type\": \"choice\", \"_value\": [8]}},"
		  " \"bind\": {\"bs\": \"batch_size\"}, \"fixed\": {\"batch_size\": 512}}", "$.fixed.batch_size",
		  "the space sets batch_size too (its parameter \"bs\")" },
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
	const double t4 = 14912.0 * 1048576.0;   /* torch total_memory on a T4 */
	struct sq_query q;
	json_t *b;

	load_catalog();
	parse_ok(S_BS " \"device\": \"t4\", \"budgets\": {\"memory\": \"200GiB\"}}", &q);
	ck_assert(q.budget[SQ_B_MEMORY] == t4);
	ck_assert_int_eq(q.nwarnings, 1);
	ck_assert_str_eq(q.warnings[0], "memory budget 200 GiB is more than t4's usable 14.6 GiB: using 14.6 GiB");
	b = sq_budgets_json(&q);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "memory"), "source")), "device");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(b, "memory"), "text")), "14.56 GiB");
	json_decref(b);
	for (int i = 0; i < q.nparts; i++)
		if (q.parts[i].kind == 1)
			ck_assert_str_eq(q.parts[i].label, "memory <= 14.56 GiB (t4's usable memory)");
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

	/* a misspelt hyperparameter: the warning (the API's "warnings" too) names the closest */
	parse_ok("{\"model\": \"bert-base\", \"space\": {\"batch_size\": {\"_type\": \"choice\", \"_value\": [8, 16]},"
	    " \"hiden\": {\"_type\": \"choice\", \"_value\": [256, 512]}, \"layres\": {\"_type\": \"choice\", \"_value\": [2]}}}", &q);
	ck_assert_int_eq(q.nwarnings, 1);
	ck_assert_str_eq(q.warnings[0], "parameters hiden (did you mean hidden?), layres (did you mean layers?) "
	    "set nothing in model bert (they pass through)");
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

/* Feasible configurations of resnet50's example space on an A100 40GB under
 * a memory budget bounding the expected or the safe estimate. */
static int64_t
count_memory(const char *space, const char *preset, json_t *memory)
{
	struct sq_query q;
	struct fs_engine e;
	struct dn_error err;
	json_t *req = json_pack("{s:s,s:o,s:s,s:{s:o}}", "model", preset,
	    "space", json_load_file(src_path(space), 0, NULL), "device", "a100-40gb", "budgets", "memory", memory);
	int64_t n;

	if (cat.n == 0)
		load_catalog();
	memset(&err, 0, sizeof err);
	ck_assert_msg(sq_parse(req, &cat, &q, &err) == 0, "%s: %s", err.path, err.message);
	ck_assert_msg(fs_init(&e, &q, &err) == 0, "%s", err.message);
	ck_assert_int_eq(fs_count_all(&e, 0, &err), 0);
	ck_assert(e.lower == e.upper && !e.timed_out);
	n = (int64_t)e.lower;
	fs_free(&e);
	sq_free(&q);
	json_decref(req);
	return n;
}

/* The safe estimate is an upper estimate, so its feasible set is a subset:
 * the count can only shrink; printed, what it gives up. The estimate's
 * value ("safe") and unknown values or fields are checked as parsed. */
START_TEST(test_safe_memory_gives_up)
{
	static const char *const limits[] = { "8GiB", "16GiB", "24GiB" };
	static const char *const cases[][2] = {
		{ "examples/spaces/resnet.json", "resnet50" },
		{ "examples/spaces/mobilenet-width.json", "mobilenet_v2" },
	};

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
		for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
			int64_t exp = count_memory(cases[c][0], cases[c][1], json_string(limits[i]));
			int64_t same = count_memory(cases[c][0], cases[c][1],
			    json_pack("{s:s,s:s}", "limit", limits[i], "estimate", "expected"));
			int64_t safe = count_memory(cases[c][0], cases[c][1],
			    json_pack("{s:s,s:s}", "limit", limits[i], "estimate", "safe"));
			printf("%-38s %-12s memory <= %-5s feasible: expected %6lld, safe %6lld (gives up %lld, %.1f%%)\n",
			    cases[c][0], cases[c][1], limits[i], (long long)exp, (long long)safe, (long long)(exp - safe),
			    exp > 0 ? 100.0 * (double)(exp - safe) / (double)exp : 0.0);
			ck_assert_int_eq(same, exp);
			ck_assert_int_le(safe, exp);
			if (c == 0 && i == 1)   /* the safe estimate is above the expected one here */
				ck_assert_int_lt(safe, exp);
		}
	{
		static const char *const bad[][2] = {
			{ "{\"limit\": \"16GiB\", \"estimate\": \"sure\"}", "$.budgets.memory.estimate" },
			{ "{\"limit\": \"16GiB\", \"estimat\": \"safe\"}", "$.budgets.memory" },
			{ "{\"limit\": 16, \"estimate\": \"safe\"}", "$.budgets.memory.limit" },
			{ "{\"estimate\": 1}", "$.budgets.memory.estimate" },
			{ "{}", "$.budgets.memory" },
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			struct sq_query q;
			struct dn_error err;
			json_t *req = json_pack("{s:s,s:o,s:s,s:{s:o}}", "model", "resnet50", "space",
			    json_load_file(src_path("examples/spaces/resnet.json"), 0, NULL), "device", "a100-40gb",
			    "budgets", "memory", json_loads(bad[i][0], 0, NULL));
			memset(&err, 0, sizeof err);
			ck_assert_int_ne(sq_parse(req, &cat, &q, &err), 0);
			ck_assert_msg(strcmp(err.path, bad[i][1]) == 0, "%s: path %s, want %s (%s)", bad[i][0], err.path,
			    bad[i][1], err.message);
			sq_free(&q);
			json_decref(req);
		}
	}
}
END_TEST


static Suite *
suite(void)
{
	Suite *s = suite_create("fset_engine");
	TCase *t;

	t = tcase_create("query");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_query_errors);
	tcase_add_test(t, test_query_units);
	tcase_add_test(t, test_query_memory_cap);
	tcase_add_test(t, test_query_bind);
	suite_add_tcase(s, t);
	t = tcase_create("safe_memory");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_safe_memory_gives_up);
	suite_add_tcase(s, t);
	t = tcase_create("engine");
	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_nested_choice_space);
	tcase_add_test(t, test_huge_grid_and_deadline);
	tcase_add_test(t, test_deadline_bounds);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 0);
}
