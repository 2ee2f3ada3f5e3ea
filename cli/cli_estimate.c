/*
 * cli_estimate.c - `dnnsat estimate`: every cost of one configuration as a
 * readable table, or as JSON (--json) for scripts. Exit status 0 when the
 * configuration is valid and fits the device's usable memory, 1 when it is invalid
 * or does not fit, 2 on bad input.
 */
#include "answer.h"
#include "cli.h"
#include "cm_report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *
grouped(int64_t v, char *buf, size_t len)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "%lld", (long long)(v < 0 ? -v : v)), j = 0;

	if (v < 0 && len > 1)
		buf[j++] = '-';
	for (int i = 0; i < n && (size_t)j + 2 < len; i++) {
		buf[j++] = tmp[i];
		if ((n - i - 1) % 3 == 0 && i != n - 1)
			buf[j++] = ',';
	}
	buf[j] = '\0';
	return buf;
}

/* Whether violations a and b are the same rule with the same values (the
 * rule of every layer of a stack, at another place). */
static int
same_violation(const struct cm_violation *a, const struct cm_violation *b)
{
	if (strcmp(a->rule, b->rule) != 0 || a->nvals != b->nvals)
		return 0;
	for (int j = 0; j < a->nvals; j++)
		if (a->real[j] != b->real[j] || strcmp(a->names[j], b->names[j]) != 0 ||
		    (a->real[j] ? a->vals[j].r != b->vals[j].r : a->vals[j].i != b->vals[j].i))
			return 0;
	return 1;
}

/* The violations the result holds (the first 8), each rule once at its
 * first place with how many of the others repeat it, then how many more
 * there are. */
static void
print_violations(const struct cm_result *r)
{
	int held = r->nviolations < 8 ? r->nviolations : 8;

	for (int i = 0; i < held; i++) {
		const struct cm_violation *x = &r->violations[i];
		int repeats = 0, k = 0;
		while (k < i && !same_violation(&r->violations[k], x))
			k++;
		if (k < i)
			continue;       /* printed at its first place */
		for (k = i + 1; k < held; k++)
			repeats += same_violation(&r->violations[k], x);
		printf("  violated   %s: %s", x->path, x->rule);
		for (int j = 0; j < x->nvals; j++) {
			if (x->real[j])
				printf("%s%s=%g", j ? ", " : " (", x->names[j], x->vals[j].r);
			else
				printf("%s%s=%lld", j ? ", " : " (", x->names[j], (long long)x->vals[j].i);
		}
		printf("%s", x->nvals > 0 ? ")" : "");
		if (repeats > 0)
			printf(" and %d more place%s", repeats, repeats == 1 ? "" : "s");
		printf("\n");
	}
	if (r->nviolations > held)
		printf("  ... and %d more violations\n", r->nviolations - held);
}

/* What one process can allocate on the device (the default memory budget). */
static int64_t
usable_bytes(const struct cli_query *q)
{
	return q->device.usable_memory_bytes > 0 ? q->device.usable_memory_bytes : q->device.memory_bytes;
}

static void
print_table(const struct cli_query *q, const struct cm_model *m, const union expr_val *scratch,
    const struct cm_result *r)
{
	static const char *const phases[] = { "forward", "backward", "optimizer step" };
	char a[64], b[64], c[64];
	const struct cm_model_def *def = q->def;

	printf("model        %s%s%s\n", def->name, q->preset ? "  preset " : "", q->preset ? q->preset : "");
	printf("device       %s (%s memory)\n", q->device.display_name,
	    cli_human_bytes((double)q->device.memory_bytes, a, sizeof a));
	printf("workload     %s, %s%s%s", q->wl.training ? "training" : "inference",
	    cm_precision_name(q->wl.precision), q->wl.training ? ", " : "",
	    q->wl.training ? cm_optimizer_label(&q->wl) : "");
	/* the kernel choice only where it applies: a model with attention layers */
	if (cm_model_has_attention(m)) {
		printf(", attention %s", cm_attention_name(q->wl.attention));
		if (q->wl.attention == CM_ATTN_SDPA)
			printf(" (%s here)", cm_attention_name(cm_attention_resolve(&q->wl, &q->device)));
	}
	if (q->wl.training && q->wl.grad_accum > 1)
		printf(", %d micro-batches per step", q->wl.grad_accum);
	if (q->wl.training && q->wl.checkpointing)
		printf(", gradient checkpointing%s", cm_model_checkpointing_warning(m) != NULL ?
		    " (no block to apply it to: nothing checkpointed)" : "");
	if (q->wl.training && q->wl.keep_grads)
		printf(", zero_grad to zeros");
	if (q->wl.training && q->wl.optimizer_impl == CM_OPT_IMPL_FOR_LOOP)
		printf(", for-loop optimizer");
	if (q->wl.training && q->wl.optimizer_impl == CM_OPT_IMPL_FUSED)
		printf(", fused optimizer");
	if (q->wl.training && q->wl.softmax_keeps_input)
		printf(", softmax keeps its input");
	if (q->wl.pytorch != 0)
		printf(", PyTorch %d.%d", q->wl.pytorch / 100, q->wl.pytorch % 100);
	if (q->wl.training && q->wl.ft.lora_rank > 0) {
		printf(", %s rank %s", q->wl.ft.use_dora ? "DoRA" : "LoRA", q->wl.ft.rank_expr[0] ? q->wl.ft.rank_expr :
		    grouped(q->wl.ft.lora_rank, a, sizeof a));
		for (int i = 0; i < q->wl.ft.ntargets; i++)
			printf("%s%s", i ? "," : " on ", q->wl.ft.targets[i]);
		if (q->wl.ft.lora_dropout > 0.0)
			printf(" (dropout %g)", q->wl.ft.lora_dropout);
	}
	if (cm_quant_bits(q->wl.ft.quant) == 8)
		printf(", int8 base weights (LLM.int8())");
	else if (q->wl.ft.quant != CM_QUANT_NONE)
		printf(", 4-bit %s base weights", cm_quant_name(q->wl.ft.quant));
	if (q->wl.training && q->wl.ft.nfreeze > 0)
		for (int i = 0; i < q->wl.ft.nfreeze; i++)
			printf("%s%s", i ? "," : ", frozen ", q->wl.ft.freeze[i]);
	if (q->wl.training && q->wl.ft.ntrain > 0)
		for (int i = 0; i < q->wl.ft.ntrain; i++)
			printf("%s%s", i ? "," : ", trained ", q->wl.ft.train[i]);
	printf("\n");
	printf("config      ");
	for (int i = 0; i < def->nhps; i++) {
		const struct cm_hparam *h = &def->hps[i];
		if (h->type == CM_HP_CATEGORICAL)
			printf(" %s=%s", h->name, h->values[q->config[i].i]);
		else if (h->type == CM_HP_REAL)
			printf(" %s=%g", h->name, q->config[i].r);
		else
			printf(" %s=%lld", h->name, (long long)q->config[i].i);
	}
	printf("\n\n");
	printf("valid        %s\n", r->valid ? "yes" : "NO");
	print_violations(r);
	if (q->wl.training && r->trainable_params != r->params)
		printf("parameters   %s, %s trainable\n", grouped(r->params, a, sizeof a),
		    grouped(r->trainable_params, b, sizeof b));
	else
		printf("parameters   %s\n", grouped(r->params, a, sizeof a));
	printf("weights      %s fp32, %s fp16/bf16, %s int8\n",
	    cli_human_bytes((double)r->weight_bytes_fp32, a, sizeof a),
	    cli_human_bytes((double)r->weight_bytes_fp16, b, sizeof b),
	    cli_human_bytes((double)r->weight_bytes_int8, c, sizeof c));
	printf("MACs         %s forward (%.3f G)  [%s]\n", grouped(r->macs, a, sizeof a), (double)r->macs / 1e9,
	    q->wl.macs_convention == CM_MACS_FVCORE ? "fvcore: conv, linear, matmul, norms, adaptive pooling" :
	    q->wl.macs_convention == CM_MACS_NB201 ? "nb201: conv, linear, matmul, recurrent, bias adds" :
	    "conv, linear, matmul, recurrent");
	printf("FLOPs        %s forward (2 x MACs), %s per training step\n",
	    grouped(r->flops, a, sizeof a), grouped(r->train_flops, b, sizeof b));
	printf("activations  %s kept for backward\n", cli_human_bytes((double)r->act_saved_bytes, a, sizeof a));
	printf("\nmemory       %s %s peak (%s), %s %s usable (%s on the card)\n",
	    cli_human_bytes((double)r->mem, a, sizeof a), q->wl.training ? "training" : "inference",
	    phases[r->peak_phase], r->mem <= usable_bytes(q) ? "fits" : "DOES NOT FIT",
	    cli_human_bytes((double)usable_bytes(q), b, sizeof b),
	    cli_human_bytes((double)q->device.memory_bytes, c, sizeof c));
	for (int cat = 0; cat < CM_MEM_NCAT; cat++)
		if (r->mem_breakdown[cat] != 0)
			printf("  %-11s %12s\n", cm_mem_cat_name((enum cm_mem_cat)cat),
			    cli_human_bytes((double)r->mem_breakdown[cat], a, sizeof a));
	if (q->wl.training)
		printf("  (inference peak would be %s)\n", cli_human_bytes((double)r->mem_infer, a, sizeof a));
	printf("  safe estimate %s (upper bound: each term at its own maximum, a forward and a\n"
	    "  backward workspace cached, the CUDA context's upper bound; select it with\n"
	    "  memory=LIMIT:safe)\n",
	    cli_human_bytes((double)r->mem_safe, a, sizeof a));
	printf("\nlatency      %.3f ms inference, %.3f ms per training step\n", r->lat_infer * 1e3, r->lat_train * 1e3);
	printf("utilization  %.0f%% of the SMs busy over a %s step (estimate)\n", r->util * 100.0,
	    q->wl.training ? "training" : "inference");
	if (q->per_op) {
		printf("\n%-52s %-10s %-22s %14s %14s %11s %11s\n", "operator", "op", "output", "params",
		    "MACs", "saved", "fwd ms");
		for (int k = 0; k < cm_model_nops(m); k++) {
			struct cm_op_report rep;
			char shape[64];
			int n = 0;
			cm_model_op_report(m, scratch, k, &rep);
			if (!rep.present)
				continue;
			shape[0] = '\0';
			for (int d = 0; d < rep.rank && n < (int)sizeof shape - 12; d++)
				n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%lld", d ? "x" : "", (long long)rep.shape[d]);
			printf("%-52.52s %-10s %-22s %14s %14s %11s %11.4f\n", rep.path, rep.op, shape,
			    grouped(rep.params, a, sizeof a), grouped(rep.macs, b, sizeof b),
			    cli_human_bytes((double)rep.saved_bytes, c, sizeof c), rep.fwd_seconds * 1e3);
		}
	}
}

/* The answer of POST /v1/estimate (solver/answer_estimate.c) for the
 * configuration the options give: the same body the API takes, with the
 * model as its JSON, the device by name (or --device-file's object) and
 * every hyperparameter's value. */
static json_t *
estimate_json(const struct cli_query *q, struct dn_error *err)
{
	json_t *dev = q->device_json != NULL ? json_incref(q->device_json) : json_string(q->device.name);
	json_t *body, *out;

	body = json_pack("{s:O,s:o,s:{s:s,s:s,s:s,s:b,s:b,s:s,s:i,s:b,s:s},s:o,s:b}", "model", q->def->root, "device", dev,
	    "workload", "mode", q->wl.training ? "training" : "inference",
	    "optimizer", cm_optimizer_label(&q->wl), "dtype", cm_precision_name(q->wl.precision),
	    "tf32", q->wl.tf32, "cudnn_tf32", !q->wl.no_cudnn_tf32, "attention", cm_attention_name(q->wl.attention),
	    "grad_accum", q->wl.grad_accum > 1 ? q->wl.grad_accum : 1, "checkpointing", q->wl.checkpointing, "macs_convention",
	    cm_macs_convention_name((enum cm_macs_convention)q->wl.macs_convention),
	    "config", cm_config_to_json(q->def, q->config), "per_op", q->per_op);
	if (body != NULL && q->budgets != NULL)
		json_object_set(body, "budgets", q->budgets);
	if (body == NULL || cm_choice_to_json(&q->wl, json_object_get(body, "workload")) != 0 ||
	    cm_ft_to_json(&q->wl.ft, json_object_get(body, "workload")) != 0) {
		json_decref(body);
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return NULL;
	}
	out = ans_cost_estimate(body, &q->catalog, err);
	json_decref(body);
	return out;
}

/*
 * The model of q's one configuration: built with each hyperparameter
 * bounded to its value, so that only the repeats it takes are unrolled and
 * the costs fold to constants as they are built (the ResNet template: 412k
 * nodes and about 0.4 s over its declared ranges, a few hundred nodes
 * here), as the service's /v1/estimate builds it. Values are exact either
 * way (folding never changes a value, expr.h). A fold that overflows is
 * built again over the declared ranges, whose evaluation names the
 * overflowing expression and its source as every estimate's does.
 */
static int
build_model(const struct cli_query *q, struct cm_model **m, struct dn_error *err)
{
	int n = q->def->nhps, rc;
	struct expr_ival *bounds = malloc(sizeof *bounds * ((size_t)n + 1));

	if (bounds == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < n; i++)
		bounds[i].lo = bounds[i].hi = q->config[i];
	rc = cm_model_build(q->def, &q->wl, &q->device, bounds, m, err);
	free(bounds);
	if (rc != 0 && err->code == DN_ERANGE) {
		memset(err, 0, sizeof *err);
		rc = cm_model_build(q->def, &q->wl, &q->device, NULL, m, err);
	}
	return rc;
}

/* The warnings of POST /v1/estimate's answer `o` on stderr, as count
 * prints a query's ("memory budget 48 GiB is more than a100-40gb's usable
 * 39.4 GiB: using 39.4 GiB"), but `printed` (the checkpointing warning,
 * printed already). */
static void
print_warnings(const json_t *o, const char *printed)
{
	json_t *w;
	size_t i;

	json_array_foreach(json_object_get(o, "warnings"), i, w)
		if (json_is_string(w) && (printed == NULL || strcmp(json_string_value(w), printed) != 0))
			fprintf(stderr, "dnnsat: warning: %s\n", json_string_value(w));
}

/* Each budget of POST /v1/estimate's answer `o` as "ok   memory 4.08 GiB <=
 * 16 GiB" or "FAIL ..." (cli_print_part), after the table. */
static void
print_budgets(const json_t *o)
{
	json_t *c;
	size_t i;

	printf("\nbudgets\n");
	json_array_foreach(json_object_get(o, "constraints"), i, c) {
		const char *path = json_string_value(json_object_get(c, "path"));
		if (path == NULL || strncmp(path, "$.budgets.", 10) != 0)
			continue;
		printf("  ");
		cli_print_part(c);
	}
}

int
cli_estimate(int argc, char **argv)
{
	struct cli_query q;
	struct dn_error err;
	struct cm_model *m = NULL;
	struct cm_result r;
	union expr_val *scratch = NULL;
	int status = 2;

	memset(&err, 0, sizeof err);
	if (cli_query_parse(argc, argv, &q, &err) != 0) {
		cli_print_error(&err);
		cli_query_free(&q);
		return 2;
	}
	if (build_model(&q, &m, &err) != 0)
		goto out;
	if (cm_model_checkpointing_warning(m) != NULL)
		fprintf(stderr, "dnnsat: warning: %s\n", cm_model_checkpointing_warning(m));
	scratch = malloc(sizeof *scratch * (size_t)cm_model_scratch_len(m));
	if (scratch == NULL) {
		dn_error_set(&err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (cm_model_eval(m, q.config, scratch, &r, &err) != 0)
		goto out;
	if (q.json || q.budgets != NULL) {
		/* POST /v1/estimate's answer: printed, or its budgets after the
		 * table; with budgets its "feasible" is the verdict. Made before
		 * the table, so that a budget it refuses prints no table */
		json_t *o = estimate_json(&q, &err);
		if (o == NULL) {
			status = 2;
			goto out;
		}
		/* the same verdict as the JSON's "feasible": the usable memory, not the card's */
		status = (r.valid && r.mem <= usable_bytes(&q)) ? 0 : 1;
		if (!q.json) {
			print_warnings(o, cm_model_checkpointing_warning(m));
			print_table(&q, m, scratch, &r);
		}
		if (q.json) {
			json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
			fputc('\n', stdout);
		} else
			print_budgets(o);
		if (q.budgets != NULL)
			status = json_is_true(json_object_get(o, "feasible")) ? 0 : 1;
		json_decref(o);
	} else {
		status = (r.valid && r.mem <= usable_bytes(&q)) ? 0 : 1;
		print_table(&q, m, scratch, &r);
	}
out:
	if (dn_error_isset(&err))
		cli_print_error(&err);
	free(scratch);
	cm_model_free(m);
	cli_query_free(&q);
	return status;
}
