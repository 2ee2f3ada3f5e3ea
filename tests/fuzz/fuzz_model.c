/*
 * fuzz_model.c - libFuzzer target for the model parser and builder: any byte
 * string is loaded as a model, built for a training workload and evaluated
 * at its defaults. Every outcome must be a value or an error, never a crash,
 * a leak or undefined behaviour (run under ASan + UBSan, run-fuzz.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t jerr;
	json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	struct cm_model_def *def = NULL;
	struct cm_model *m = NULL;
	struct dn_error err;
	struct cm_device dev;
	struct cm_workload wl = { 1, CM_OPT_ADAM, CM_PREC_FP32, 0 };

	if (root == NULL)
		return 0;
	memset(&err, 0, sizeof err);
	memset(&dev, 0, sizeof dev);
	strcpy(dev.name, "fuzz");
	dev.memory_bytes = 1LL << 34;
	dev.mem_bandwidth = 1e12;
	dev.sm_count = 80;
	dev.peak_fp32 = dev.peak_fp16 = 1e13;
	if (cm_def_load_json(root, &def, &err) == 0 &&
	    cm_model_build(def, &wl, &dev, NULL, &m, &err) == 0) {
		union expr_val *cfg = calloc((size_t)def->nhps + 1, sizeof *cfg);
		union expr_val *scratch = calloc((size_t)cm_model_scratch_len(m) + 1, sizeof *scratch);
		struct cm_result r;
		if (cfg != NULL && scratch != NULL) {
			cm_config_defaults(def, cfg);
			(void)cm_model_eval(m, cfg, scratch, &r, &err);
		}
		free(cfg);
		free(scratch);
	}
	cm_model_free(m);
	cm_def_unref(def);
	json_decref(root);
	return 0;
}
