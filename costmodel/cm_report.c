/*
 * cm_report.c - a cost-model result as JSON, the one representation the CLI
 * (--json), the service and the tests share. Field names are stable API
 * (see schemas/ for their schema). The layout is written once, as text
 * (cm_result_write, the service's hot path); the jansson form is that text
 * parsed, plus the per-operator list. Returns a new reference, or NULL when
 * out of memory.
 */
#include "cm_report.h"

#include <math.h>

void
cm_config_write(struct jt *w, const struct cm_model_def *def, const union expr_val *config)
{
	jt_lit(w, "{");
	for (int i = 0; i < def->nhps; i++) {
		const struct cm_hparam *h = &def->hps[i];
		if (i > 0)
			jt_lit(w, ",");
		jt_key(w, h->name);
		if (h->type == CM_HP_CATEGORICAL) {
			if (config[i].i >= 0 && config[i].i < h->nvalues)
				jt_str(w, h->values[config[i].i]);
			else
				jt_lit(w, "null");
		} else if (h->type == CM_HP_REAL)
			jt_real(w, config[i].r);
		else
			jt_int(w, config[i].i);
	}
	jt_lit(w, "}");
}

/* The "flops_counting" note of convention `c` (cm_macs.c), as a JSON member */
static const char *
counting_note(int c)
{
	switch (c) {
	case CM_MACS_NB201:
		return ",\"flops_counting\":\"MACs of conv, linear, matmul (attention) and recurrent layers, plus "
		    "one per bias addition of a conv or linear (NAS-Bench-201's counter); FLOPs = 2 x MACs\"";
	case CM_MACS_FVCORE:
		return ",\"flops_counting\":\"fvcore FlopCountAnalysis's count (conv, linear, matmul, batch, "
		    "layer and group norms, adaptive average pooling; no SDPA kernel); FLOPs = 2 x MACs\"";
	default:
		return ",\"flops_counting\":\"MACs of conv, linear, matmul (attention) and recurrent layers; "
		    "FLOPs = 2 x MACs\"";
	}
}

/* Parses what a writer produced; NULL when out of memory. */
static json_t *
parse_written(struct jt *w)
{
	char *text = jt_take(w, NULL);
	json_t *j = text ? json_loads(text, 0, NULL) : NULL;

	free(text);
	return j;
}

json_t *
cm_config_to_json(const struct cm_model_def *def, const union expr_val *config)
{
	struct jt w;

	jt_init(&w, 256);
	cm_config_write(&w, def, config);
	return parse_written(&w);
}

/* `lit` is the separator and the quoted key, written as is: "," "\"k\":" */
static void
key_int(struct jt *w, const char *lit, int64_t v)
{
	jt_lit(w, lit);
	jt_int(w, v);
}

void
cm_result_write(struct jt *w, const struct cm_model *m, const union expr_val *config,
    const struct cm_result *r, int notes)
{
	static const char *const phases[] = { "forward", "backward", "optimizer" };

	jt_lit(w, "{\"model\":");
	jt_str(w, cm_model_def(m)->name);
	if (config != NULL) {
		jt_lit(w, ",\"hyperparameters\":");
		cm_config_write(w, cm_model_def(m), config);
	}
	jt_lit(w, ",\"valid\":");
	jt_bool(w, r->valid);
	key_int(w, ",\"params\":", r->params);
	key_int(w, ",\"trainable_params\":", r->trainable_params);
	key_int(w, ",\"weight_bytes\":{\"fp32\":", r->weight_bytes_fp32);
	key_int(w, ",\"fp16\":", r->weight_bytes_fp16);
	key_int(w, ",\"bf16\":", r->weight_bytes_fp16);
	key_int(w, ",\"int8\":", r->weight_bytes_int8);
	key_int(w, "},\"macs\":", r->macs);
	key_int(w, ",\"flops\":", r->flops);
	if (notes)
		jt_lit(w, counting_note(cm_model_workload(m)->macs_convention));
	key_int(w, ",\"train_flops_per_step\":", r->train_flops);
	key_int(w, ",\"activation_bytes_saved\":", r->act_saved_bytes);
	key_int(w, ",\"memory\":{\"training_peak_bytes\":", r->mem_train);
	key_int(w, ",\"inference_peak_bytes\":", r->mem_infer);
	key_int(w, ",\"peak_bytes\":", r->mem);
	key_int(w, ",\"safe_peak_bytes\":", r->mem_safe);
	jt_lit(w, ",\"peak_phase\":");
	jt_str(w, phases[r->peak_phase]);
	/* the categories of cm_mem_cat_name, in its order (test_costmodel compares) */
	key_int(w, ",\"breakdown\":{\"weights\":", r->mem_breakdown[CM_MEM_WEIGHTS]);
	key_int(w, ",\"gradients\":", r->mem_breakdown[CM_MEM_GRADIENTS]);
	key_int(w, ",\"optimizer\":", r->mem_breakdown[CM_MEM_OPTIMIZER]);
	key_int(w, ",\"inputs\":", r->mem_breakdown[CM_MEM_INPUTS]);
	key_int(w, ",\"activations\":", r->mem_breakdown[CM_MEM_ACTIVATIONS]);
	key_int(w, ",\"temporaries\":", r->mem_breakdown[CM_MEM_TEMPORARIES]);
	key_int(w, ",\"workspace\":", r->mem_breakdown[CM_MEM_WORKSPACE]);
	key_int(w, ",\"allocator\":", r->mem_breakdown[CM_MEM_ALLOCATOR]);
	key_int(w, ",\"context\":", r->mem_breakdown[CM_MEM_CONTEXT]);
	jt_lit(w, "}},\"latency\":{\"inference_seconds\":");
	jt_real(w, r->lat_infer);
	jt_lit(w, ",\"training_step_seconds\":");
	jt_real(w, r->lat_train);
	jt_lit(w, "},\"utilization\":");
	jt_real(w, r->util);
	jt_lit(w, ",\"violations\":[");
	for (int i = 0; i < r->nviolations && i < 8; i++) {
		const struct cm_violation *x = &r->violations[i];
		jt_lit(w, i ? ",{\"path\":" : "{\"path\":");
		jt_str(w, x->path);
		jt_lit(w, ",\"constraint\":");
		jt_str(w, x->rule);
		jt_lit(w, ",\"values\":{");
		for (int j = 0; j < x->nvals; j++) {
			if (j > 0)
				jt_lit(w, ",");
			jt_key(w, x->names[j]);
			if (x->real[j])
				jt_real(w, x->vals[j].r);
			else
				jt_int(w, x->vals[j].i);
		}
		jt_lit(w, "}}");
	}
	key_int(w, "],\"violation_count\":", r->nviolations);
	jt_lit(w, "}");
}

static json_t *
number_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

json_t *
cm_result_to_json(const struct cm_model *m, const union expr_val *config,
    const union expr_val *scratch, const struct cm_result *r, int per_op)
{
	struct jt w;
	json_t *o;

	jt_init(&w, 2048);
	cm_result_write(&w, m, config, r, 1);
	o = parse_written(&w);
	if (o == NULL)
		return NULL;
	if (per_op) {
		json_t *ops = json_array();
		for (int k = 0; k < cm_model_nops(m); k++) {
			struct cm_op_report rep;
			json_t *shape;
			cm_model_op_report(m, scratch, k, &rep);
			if (!rep.present)
				continue;
			shape = json_array();
			for (int d = 0; d < rep.rank; d++)
				json_array_append_new(shape, json_integer(rep.shape[d]));
			json_array_append_new(ops, json_pack("{s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:o,s:o,s:{s:I,s:I,s:I,s:i,s:i}}",
			    "path", rep.path, "op", rep.op, "shape", shape,
			    "params", (json_int_t)rep.params, "macs", (json_int_t)rep.macs,
			    "output_bytes", (json_int_t)rep.out_bytes, "saved_bytes", (json_int_t)rep.saved_bytes,
			    "forward_seconds", number_or_null(rep.fwd_seconds),
			    "backward_seconds", number_or_null(rep.bwd_seconds),
			    "latency_inputs", "forward_bytes", (json_int_t)rep.fwd_bytes,
			    "flops_other", (json_int_t)rep.flops_other, "kernel_area", (json_int_t)rep.kernel_area,
			    "kernels", rep.kernels_fwd, "library_calls", rep.lib_calls));
		}
		json_object_set_new(o, "operators", ops);
	}
	return o;
}
