/*
 * fuzz_onnx.c - libFuzzer target for the ONNX importer: any byte string is
 * imported as an ONNX model (with unknown operators priced as elementwise,
 * so that more of the translator is reached), under a small memory limit;
 * a model file that comes out must load as a model definition. Every
 * outcome must be a model or an error, never a crash, a leak or undefined
 * behaviour (run under ASan + UBSan, run-fuzz.sh).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel.h"
#include "onnx_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct onnx_import_opts o;
	struct dn_error err;
	struct cm_model_def *def = NULL;
	json_t *doc;

	memset(&o, 0, sizeof o);
	memset(&err, 0, sizeof err);
	o.unknown_elementwise = 1;
	o.memory_limit = (size_t)16 << 20;
	doc = onnx_import(data, size, &o, &err);
	if (doc == NULL) {
		if (!dn_error_isset(&err))
			abort(); /* a failure must say why */
		return 0;
	}
	if (cm_def_load_json(doc, &def, &err) == 0)
		cm_def_unref(def);
	json_decref(doc);
	return 0;
}
