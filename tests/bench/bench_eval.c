/*
 * bench_eval.c - how long evaluating every cost of one configuration takes
 * (the solver evaluates millions). For each case the model is built once,
 * then random configurations are evaluated in a loop: parameters, MACs,
 * FLOPs, validity, training and inference peak memory with the allocator,
 * latency and utilization, all of it, per call of cm_model_eval.
 *
 *   resnet50 (structure of the space fixed, batch/resolution/width free):
 *     what the solver builds for a space over batch size, resolution and
 *     width of ResNet-50;
 *   resnet template, every hyperparameter free within its declared range
 *     (blocks per stage up to 64 each, both block types instantiated);
 *   llama2-7b, architecture fixed, batch size and sequence length free;
 *   llama template, every hyperparameter free (up to 80 layers
 *     instantiated). Both with the workload's default attention (sdpa).
 * Usage: bench_eval [iterations]   (make bench)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "costmodel.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static int64_t
pick(int64_t lo, int64_t hi)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return lo + (int64_t)(rng % (uint64_t)(hi - lo + 1));
}

/* A hyperparameter drawn per configuration: step * [lo, hi]. */
struct knob {
	const char *name;
	int64_t lo, hi, step;
};

static int
run(const char *label, struct cm_model_def *def, const struct expr_ival *bounds,
    const union expr_val *base, const struct knob *knobs, int iters)
{
	struct cm_device dev;
	struct cm_workload wl = { 1, CM_OPT_ADAM, CM_PREC_FP32, 0 };
	struct cm_model *m;
	struct dn_error err;
	union expr_val *cfg, *scratch;
	struct cm_result r;
	double t0, t1, tb0, tb1, sink = 0;

	memset(&err, 0, sizeof err);
	memset(&dev, 0, sizeof dev);
	strcpy(dev.name, "a100-40gb");
	dev.memory_bytes = 40LL << 30;
	dev.mem_bandwidth = 1555e9;
	dev.sm_count = 108;
	dev.peak_fp32 = 19.5e12;
	dev.peak_tf32 = 156e12;
	dev.peak_fp16 = dev.peak_bf16 = 312e12;
	tb0 = now();
	if (cm_model_build(def, &wl, &dev, bounds, &m, &err) != 0) {
		fprintf(stderr, "build: %s: %s\n", err.path, err.message);
		return -1;
	}
	tb1 = now();
	cfg = malloc(sizeof *cfg * (size_t)def->nhps);
	scratch = malloc(sizeof *scratch * (size_t)cm_model_scratch_len(m));
	memcpy(cfg, base, sizeof *cfg * (size_t)def->nhps);
	/* warm up */
	for (int i = 0; i < 100; i++)
		cm_model_eval(m, cfg, scratch, &r, &err);
	t0 = now();
	for (int i = 0; i < iters; i++) {
		for (const struct knob *k = knobs; k->name != NULL; k++)
			cfg[cm_def_find_hp(def, k->name)].i = k->step * pick(k->lo, k->hi);
		if (cm_model_eval(m, cfg, scratch, &r, &err) != 0) {
			fprintf(stderr, "eval: %s\n", err.message);
			return -1;
		}
		sink += (double)r.mem + r.lat_train;
	}
	t1 = now();
	printf("%-58s %8d nodes %6d ops  build %7.1f ms  eval %7.2f us/config\n", label,
	    cm_model_scratch_len(m), cm_model_nops(m), (tb1 - tb0) * 1e3, (t1 - t0) / iters * 1e6);
	if (sink < 0)
		printf("impossible\n");
	free(cfg);
	free(scratch);
	cm_model_free(m);
	return 0;
}

int
main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20000;
	static const struct knob resnet_knobs[] = { { "batch_size", 1, 512, 1 }, { "resolution", 2, 10, 32 },
		{ "width", 1, 6, 16 }, { NULL, 0, 0, 0 } };
	static const struct knob llama_knobs[] = { { "batch_size", 1, 64, 1 }, { "seq_len", 1, 32, 128 },
		{ NULL, 0, 0, 0 } };
	struct cm_model_def *def;
	struct dn_error err;
	union expr_val *base;
	struct expr_ival *bounds;

	memset(&err, 0, sizeof err);
	if (cm_def_load_template("resnet", &def, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	base = calloc((size_t)def->nhps, sizeof *base);
	bounds = calloc((size_t)def->nhps, sizeof *bounds);
	cm_config_defaults(def, base);
	cm_config_apply_preset(def, "resnet50", base, &err);
	for (int i = 0; i < def->nhps; i++)
		bounds[i].lo = bounds[i].hi = base[i];
	bounds[cm_def_find_hp(def, "batch_size")].lo.i = 1;
	bounds[cm_def_find_hp(def, "batch_size")].hi.i = 512;
	bounds[cm_def_find_hp(def, "resolution")].lo.i = 64;
	bounds[cm_def_find_hp(def, "resolution")].hi.i = 320;
	bounds[cm_def_find_hp(def, "width")].lo.i = 16;
	bounds[cm_def_find_hp(def, "width")].hi.i = 96;
	printf("evaluating every cost of one configuration (%d random configurations each)\n", iters);
	if (run("resnet50: batch 1-512, resolution 64-320, width 16-96 free", def, bounds, base,
	    resnet_knobs, iters) != 0)
		return 1;
	if (run("resnet template: every hyperparameter free (up to 64 blocks/stage)", def, NULL, base,
	    resnet_knobs, iters / 10 > 0 ? iters / 10 : 1) != 0)
		return 1;
	free(base);
	free(bounds);
	cm_def_unref(def);
	if (cm_def_load_preset("llama2-7b", &def, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	base = calloc((size_t)def->nhps, sizeof *base);
	cm_config_defaults(def, base);
	cm_config_apply_preset(def, "llama2-7b", base, &err);
	bounds = calloc((size_t)def->nhps, sizeof *bounds);
	for (int i = 0; i < def->nhps; i++)
		bounds[i].lo = bounds[i].hi = base[i];
	bounds[cm_def_find_hp(def, "batch_size")].lo.i = 1;
	bounds[cm_def_find_hp(def, "batch_size")].hi.i = 64;
	bounds[cm_def_find_hp(def, "seq_len")].lo.i = 128;
	bounds[cm_def_find_hp(def, "seq_len")].hi.i = 4096;
	if (run("llama2-7b: batch 1-64, seq_len 128-4096 free", def, bounds, base, llama_knobs,
	    iters / 10 > 0 ? iters / 10 : 1) != 0)
		return 1;
	if (run("llama template: every hyperparameter free (up to 80 layers)", def, NULL, base, llama_knobs,
	    iters / 10 > 0 ? iters / 10 : 1) != 0)
		return 1;
	free(base);
	free(bounds);
	cm_def_unref(def);
	return 0;
}
