/*
 * cm_report.c - a cost-model result as JSON, the one representation the CLI
 * (--json), the service and the tests share. Field names are stable API
 * (see schemas/ for their schema). Returns a new reference, or NULL when out
 * of memory.
 */
#include "cm_report.h"

#include <math.h>

json_t *
cm_config_to_json(const struct cm_model_def *def, const union expr_val *config)
{
	json_t *o = json_object();

	if (o == NULL)
		return NULL;
	for (int i = 0; i < def->nhps; i++) {
		const struct cm_hparam *h = &def->hps[i];
		json_t *v;
		if (h->type == CM_HP_CATEGORICAL)
			v = (config[i].i >= 0 && config[i].i < h->nvalues) ?
			    json_string(h->values[config[i].i]) : json_null();
		else if (h->type == CM_HP_REAL)
			v = json_real(config[i].r);
		else
			v = json_integer(config[i].i);
		json_object_set_new(o, h->name, v);
	}
	return o;
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
	json_t *o = json_object(), *mem = json_object(), *bd = json_object(), *v = json_array();
	static const char *const phases[] = { "forward", "backward", "optimizer" };

	if (o == NULL || mem == NULL || bd == NULL || v == NULL) {
		json_decref(o); json_decref(mem); json_decref(bd); json_decref(v);
		return NULL;
	}
	json_object_set_new(o, "model", json_string(cm_model_def(m)->name));
	json_object_set_new(o, "hyperparameters", cm_config_to_json(cm_model_def(m), config));
	json_object_set_new(o, "valid", json_boolean(r->valid));
	json_object_set_new(o, "params", json_integer(r->params));
	json_object_set_new(o, "weight_bytes", json_pack("{s:I,s:I,s:I,s:I}",
	    "fp32", (json_int_t)r->weight_bytes_fp32, "fp16", (json_int_t)r->weight_bytes_fp16,
	    "bf16", (json_int_t)r->weight_bytes_fp16, "int8", (json_int_t)r->weight_bytes_int8));
	json_object_set_new(o, "macs", json_integer(r->macs));
	json_object_set_new(o, "flops", json_integer(r->flops));
	json_object_set_new(o, "flops_counting",
	    json_string("MACs of conv, linear, matmul (attention) and recurrent layers; FLOPs = 2 x MACs"));
	json_object_set_new(o, "train_flops_per_step", json_integer(r->train_flops));
	json_object_set_new(o, "activation_bytes_saved", json_integer(r->act_saved_bytes));
	for (int c = 0; c < CM_MEM_NCAT; c++)
		json_object_set_new(bd, cm_mem_cat_name((enum cm_mem_cat)c), json_integer(r->mem_breakdown[c]));
	json_object_set_new(mem, "training_peak_bytes", json_integer(r->mem_train));
	json_object_set_new(mem, "inference_peak_bytes", json_integer(r->mem_infer));
	json_object_set_new(mem, "peak_bytes", json_integer(r->mem));
	json_object_set_new(mem, "peak_phase", json_string(phases[r->peak_phase]));
	json_object_set_new(mem, "breakdown", bd);
	json_object_set_new(o, "memory", mem);
	json_object_set_new(o, "latency", json_pack("{s:o,s:o}",
	    "inference_seconds", number_or_null(r->lat_infer),
	    "training_step_seconds", number_or_null(r->lat_train)));
	json_object_set_new(o, "utilization", number_or_null(r->util));
	for (int i = 0; i < r->nviolations && i < 8; i++) {
		const struct cm_violation *x = &r->violations[i];
		json_t *vals = json_object();
		for (int j = 0; j < x->nvals; j++)
			json_object_set_new(vals, x->names[j], x->real[j] ? json_real(x->vals[j].r) :
			    json_integer(x->vals[j].i));
		json_array_append_new(v, json_pack("{s:s,s:s,s:o}", "path", x->path, "constraint", x->rule,
		    "values", vals));
	}
	json_object_set_new(o, "violations", v);
	json_object_set_new(o, "violation_count", json_integer(r->nviolations));
	if (per_op) {
		json_t *ops = json_array();
		for (int k = 0; k < cm_model_nops(m); k++) {
			struct cm_op_report rep;
			json_t *shape = json_array();
			cm_model_op_report(m, scratch, k, &rep);
			if (!rep.present)
				continue;
			for (int d = 0; d < rep.rank; d++)
				json_array_append_new(shape, json_integer(rep.shape[d]));
			json_array_append_new(ops, json_pack("{s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:o,s:o}",
			    "path", rep.path, "op", rep.op, "shape", shape,
			    "params", (json_int_t)rep.params, "macs", (json_int_t)rep.macs,
			    "output_bytes", (json_int_t)rep.out_bytes, "saved_bytes", (json_int_t)rep.saved_bytes,
			    "forward_seconds", number_or_null(rep.fwd_seconds),
			    "backward_seconds", number_or_null(rep.bwd_seconds)));
		}
		json_object_set_new(o, "operators", ops);
	}
	return o;
}
