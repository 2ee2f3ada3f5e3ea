/*
 * test_latency.c - the latency model against measurements: every one of the
 * 15,625 NAS-Bench-201 cells (CIFAR-10 network) measured by HELP on a GTX
 * 1080 Ti and a Titan Xp at batch 1, 32 and 256
 * (tests/reference/help_nb201_latency_pascal.csv, a copy of
 * ../shared/reference-data's from HayeonLee/HELP, MIT; $DNNSAT_SHARED
 * points at another reference-data/ folder).
 *
 * Per GPU and batch it prints Kendall tau of the predicted latency against
 * the measured one, FLOPs' tau for comparison, the median absolute and the
 * median signed percentage error, and fails when
 *  - the median absolute error exceeds 20% (both GPUs; the Titan Xp is held
 *    out of the fit, bench/latency/fit_latency.py),
 *  - tau at batch 256 is below 0.93,
 *  - tau at batch 1 and 32 is below 0.90 (the target is 0.93, but no model
 *    of which operations a cell has reaches it on both GPUs: the measured
 *    columns' own medians per operation-count group rank at 0.89-0.93, and
 *    what the counts leave is not shared between the two GPUs, so not the
 *    cell's structure; bench/latency/ceiling_latency.py, docs/latency.md.
 *    The model is at that ceiling: 0.902-0.934),
 *  - the latency ranks cells worse than FLOPs do.
 * and ResNet-50's FP32 inference on a V100 and a T4 against NVIDIA's
 * published latency (test_resnet50_fp32_published), and its FP32 training
 * step on the V100 16 GB and 32 GB against NVIDIA's published throughput
 * (test_resnet50_fp32_training_published). Recurrent layers:
 * test_rnn_seq_len (an LSTM's latency grows with its sequence) and
 * test_rnn_deepbench (one LSTM or GRU layer's forward against DeepBench's
 * measured FP32 times, tests/reference/deepbench_rnn.csv).
 */
#include "test_util.h"
#include "../test_stats.h"
#include "expr_tape.h"

#include <math.h>

#define NCELLS 15625

static const char *const ops[] = { "none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3" };

/* Kendall tau-b (ties in either variable) by all pairs: the oracle that
 * test_kendall_knight holds stats_kendall's O(n log n) count to. */
static double
kendall_pairs(const double *x, const double *y, int n)
{
	double conc = 0, disc = 0, tx = 0, ty = 0;

	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double a = x[i] - x[j], b = y[i] - y[j];
			if (a == 0 && b == 0)
				continue;
			if (a == 0)
				tx++;
			else if (b == 0)
				ty++;
			else if ((a > 0) == (b > 0))
				conc++;
			else
				disc++;
		}
	return (conc - disc) / sqrt((conc + disc + tx) * (conc + disc + ty));
}

static FILE *
open_help(void)
{
	const char *rel = "reference-data/help_nb201_latency_pascal.csv";
	const char *env = getenv("DNNSAT_SHARED");
	char p[1024];

	if (env != NULL && env[0] != '\0') {
		snprintf(p, sizeof p, "%s/%s", env, rel);
		return fopen(p, "r");
	}
	/* a copy of the shared file (HayeonLee/HELP, MIT) travels with the tests */
	return fopen(src_path("tests/reference/help_nb201_latency_pascal.csv"), "r");
}

/* cells[i][e]: the operation index of edge e of cell i; meas[c][i] ms. */
static int
load_help(int (*cells)[6], double *meas[6])
{
	FILE *f = open_help();
	char line[512];
	int n = 0;

	if (f == NULL)
		return -1;
	ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
	{
		static const char hdr[] = "index,arch_str,1080ti_1,1080ti_32,1080ti_256,titanxp_1,titanxp_32,titanxp_256";
		ck_assert_msg(strncmp(line, hdr, sizeof hdr - 1) == 0, "unexpected header %s", line);
	}
	while (n < NCELLS && fgets(line, sizeof line, f)) {
		char *p = strchr(line, ','), *q;
		int e = 0;
		ck_assert_ptr_nonnull(p);
		for (p++; *p && *p != ',' && e < 6; p++) {
			if (*p != '|' || p[1] == '+' || p[1] == ',')
				continue;
			for (int o = 0; o < 5; o++)
				if (strncmp(p + 1, ops[o], strlen(ops[o])) == 0 && p[1 + strlen(ops[o])] == '~')
					cells[n][e] = o;
			e++;
		}
		ck_assert_int_eq(e, 6);
		q = strchr(p, ',');
		ck_assert_ptr_nonnull(q);
		for (int c = 0; c < 6; c++) {
			meas[c][n] = strtod(q + 1, &q);
			ck_assert(meas[c][n] > 0);
		}
		n++;
	}
	fclose(f);
	return n;
}

START_TEST(test_nb201_latency_help)
{
	static const char *const devs[] = { "gtx-1080-ti", "titan-xp" };
	static const int batches[] = { 1, 32, 256 };
	static int cells[NCELLS][6];
	double *meas[6], *pred = malloc(NCELLS * sizeof *pred), *flops = malloc(NCELLS * sizeof *flops);
	double *err = malloc(NCELLS * sizeof *err), *aerr = malloc(NCELLS * sizeof *aerr);
	struct cm_device_catalog cat;
	struct dn_error e;
	int n;

	for (int c = 0; c < 6; c++)
		meas[c] = malloc(NCELLS * sizeof *meas[c]);
	n = load_help(cells, meas);
	ck_assert_msg(n >= 0, "help_nb201_latency_pascal.csv not found (tests/reference or $DNNSAT_SHARED)");
	ck_assert_int_eq(n, NCELLS);
	memset(&e, 0, sizeof e);
	ck_assert_msg(cm_catalog_load(src_path("schemas/devices.json"), &cat, &e) == 0, "%s", e.message);
	printf("%-12s %5s %7s %9s %7s %8s  (MdAPE and median signed error in %%)\n",
	    "gpu", "batch", "tau", "tau_flops", "MdAPE", "signed");
	for (int d = 0; d < 2; d++)
		for (int b = 0; b < 3; b++) {
			const struct cm_device *dev = cm_catalog_find(&cat, devs[d]);
			struct cm_workload wl = test_workload(0);
			struct tmodel t;
			int hp[6], col = d * 3 + b;
			char bs[16];
			double tau, tau_f, mdape, msigned;
			struct expr_tape tape;
			expr_id lat_node, macs_node;
			uint8_t *need;

			ck_assert_ptr_nonnull(dev);
			memset(&t, 0, sizeof t);
			ck_assert(cm_def_load_template("nb201", &t.def, &t.err) == 0);
			t.cfg = calloc((size_t)t.def->nhps + 1, sizeof *t.cfg);
			cm_config_defaults(t.def, t.cfg);
			ck_assert_msg(cm_model_build(t.def, &wl, dev, NULL, &t.m, &t.err) == 0, "%s", t.err.message);
			t.scratch = calloc((size_t)cm_model_scratch_len(t.m), sizeof *t.scratch);
			snprintf(bs, sizeof bs, "%d", batches[b]);
			tmodel_set(&t, "batch_size", bs);
			for (int k = 0; k < 6; k++) {
				char name[8];
				snprintf(name, sizeof name, "edge%d", k);
				hp[k] = cm_def_find_hp(t.def, name);
				ck_assert_int_ge(hp[k], 0);
			}
			/* a tape of what the loop reads, the latency and the MACs,
			 * not every cost (expr_tape_build_part: the same values) */
			lat_node = cm_model_metric(t.m, CM_M_LAT_INFER);
			macs_node = cm_model_metric(t.m, CM_M_MACS);
			need = calloc((size_t)cm_model_graph(t.m)->n, 1);
			need[lat_node] = need[macs_node] = 1;
			ck_assert_int_eq(expr_tape_build_part(cm_model_graph(t.m), need, NULL, &tape), 0);
			free(need);
			for (int i = 0; i < n; i++) {
				for (int k = 0; k < 6; k++)
					t.cfg[hp[k]].i = cells[i][k];
				ck_assert_int_eq(expr_tape_eval(&tape, cm_model_graph(t.m), t.cfg, t.scratch, NULL), 0);
				if (i % 1000 == 0) {	/* the partial tape reads as the whole model does */
					tmodel_eval(&t);
					ck_assert(t.scratch[lat_node].r == t.r.lat_infer && t.scratch[macs_node].i == t.r.macs);
				}
				/* to 0.1 us: cells with the same operations differ only by
				 * the order of float additions, which must not rank them */
				pred[i] = round(t.scratch[lat_node].r * 1e7) / 1e4;
				flops[i] = (double)t.scratch[macs_node].i;
				err[i] = 100.0 * (pred[i] - meas[col][i]) / meas[col][i];
				aerr[i] = fabs(err[i]);
			}
			tau = stats_kendall(pred, meas[col], n);
			tau_f = stats_kendall(flops, meas[col], n);
			mdape = stats_median(aerr, n);
			msigned = stats_median(err, n);
			printf("%-12s %5d %7.4f %9.4f %7.1f %+8.1f%s\n", devs[d], batches[b], tau, tau_f, mdape, msigned,
			    d == 0 ? "  (fitted)" : "  (held out)");
			ck_assert_msg(mdape <= 20.0, "%s batch %d: MdAPE %.1f%% > 20%%", devs[d], batches[b], mdape);
			ck_assert_msg(tau >= (batches[b] == 256 ? 0.93 : 0.90), "%s batch %d: Kendall tau %.4f",
			    devs[d], batches[b], tau);
			ck_assert_msg(tau > tau_f, "%s batch %d: latency tau %.4f <= FLOPs' %.4f", devs[d], batches[b],
			    tau, tau_f);
			expr_tape_free(&tape);
			tmodel_free(&t);
		}
	cm_catalog_free(&cat);
	for (int c = 0; c < 6; c++)
		free(meas[c]);
	free(pred); free(flops); free(err); free(aerr);
}
END_TEST

/* stats_kendall (Knight's merge-sort count) equals the all-pairs tau-b to
 * the bit, with ties in x, in y and in both, and at the sizes where the
 * recursion's halves are uneven. */
START_TEST(test_kendall_knight)
{
	static const int sizes[] = { 2, 3, 7, 64, 1001, 2500 };
	double *x = malloc(2500 * sizeof *x), *y = malloc(2500 * sizeof *y);
	unsigned seed = 12345;

	for (int s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); s++)
		for (int range = 2; range <= 4096; range *= 8) {
			int n = sizes[s];
			for (int i = 0; i < n; i++) {
				seed = seed * 1103515245u + 12345u;
				x[i] = (double)((seed >> 8) % (unsigned)range);
				seed = seed * 1103515245u + 12345u;
				/* y follows x in part, so that tau is far from 0 */
				y[i] = (i % 3 ? x[i] : 0) + (double)((seed >> 8) % (unsigned)range);
			}
			x[0] = 0;
			x[n - 1] = (double)range;	/* never constant */
			y[0] = 0;
			y[n - 1] = 3.0 * range;
			ck_assert_msg(stats_kendall(x, y, n) == kendall_pairs(x, y, n), "n %d range %d: %.17g != %.17g",
			    n, range, stats_kendall(x, y, n), kendall_pairs(x, y, n));
		}
	free(x);
	free(y);
}
END_TEST

/* Under the nb201 convention MACs equal NAS-Bench-201's published FLOPs
 * (../shared/benchmarks/nb201_merged_15625.csv, c10_flops_M) to the digits
 * shown; the default (torchvision) convention is num_classes below them. */
START_TEST(test_nb201_convention)
{
	static const struct { int edges[6]; const char *mflops; } cells[] = {
		{ { 0, 0, 0, 0, 0, 0 }, "7.78305" },            /* all none */
		{ { 4, 2, 1, 2, 1, 1 }, "15.64737" },           /* index 0 */
		{ { 3, 3, 4, 1, 3, 1 }, "113.95137" },          /* index 1 */
	};
	for (int conv = 0; conv < 2; conv++) {
		struct cm_workload wl = test_workload(0);
		struct tmodel t;
		int hp[6];

		wl.macs_convention = conv ? CM_MACS_NB201 : CM_MACS_TORCHVISION;
		memset(&t, 0, sizeof t);
		ck_assert(cm_def_load_template("nb201", &t.def, &t.err) == 0);
		ck_assert(tmodel_build_def(&t, &wl) == 0);
		tmodel_set(&t, "batch_size", "1");
		for (int k = 0; k < 6; k++) {
			char name[8];
			snprintf(name, sizeof name, "edge%d", k);
			hp[k] = cm_def_find_hp(t.def, name);
		}
		for (size_t i = 0; i < sizeof cells / sizeof cells[0]; i++) {
			char ours[32];
			for (int k = 0; k < 6; k++)
				t.cfg[hp[k]].i = cells[i].edges[k];
			tmodel_eval(&t);
			snprintf(ours, sizeof ours, "%.5f", (double)(t.r.macs + (conv ? 0 : 10)) / 1e6);
			ck_assert_msg(strcmp(ours, cells[i].mflops) == 0, "convention %d cell %zu: %s M, NB201 %s M",
			    conv, i, ours, cells[i].mflops);
		}
		tmodel_free(&t);
	}
}
END_TEST

/* ResNet-50 (the preset) in `precision` on catalog device `dev` at
 * `batch`: inference latency, or the training step with SGD momentum, in
 * ms. */
static double
resnet50_ms(const struct cm_device_catalog *cat, const char *dev, int training, const char *batch,
    enum cm_precision precision)
{
	const struct cm_device *d = cm_catalog_find(cat, dev);
	struct cm_workload wl = test_workload(training);
	struct tmodel t;
	double ms;

	ck_assert_ptr_nonnull(d);
	wl.precision = precision;
	if (training)
		wl.optimizer = CM_OPT_SGD_MOMENTUM;
	memset(&t, 0, sizeof t);
	ck_assert_msg(cm_def_load_preset("resnet50", &t.def, &t.err) == 0, "%s", t.err.message);
	ck_assert_msg(tmodel_build_def_on(&t, &wl, d) == 0, "%s", t.err.message);
	ck_assert_msg(cm_config_apply_preset(t.def, "resnet50", t.cfg, &t.err) == 0, "%s", t.err.message);
	tmodel_set(&t, "batch_size", batch);
	tmodel_eval(&t);
	ms = (training ? t.r.lat_train : t.r.lat_infer) * 1e3;
	tmodel_free(&t);
	return ms;
}

static double
resnet50_fp32_ms(const struct cm_device_catalog *cat, const char *dev, int training, const char *batch)
{
	return resnet50_ms(cat, dev, training, batch, CM_PREC_FP32);
}

static void
load_catalog(struct cm_device_catalog *cat)
{
	struct dn_error e;

	memset(&e, 0, sizeof e);
	ck_assert_msg(cm_catalog_load(src_path("schemas/devices.json"), cat, &e) == 0, "%s", e.message);
}

/*
 * ResNet-50 in FP32 on GPUs without TF32, against NVIDIA's published
 * inference latency: NVIDIA DeepLearningExamples, PyTorch/Classification/
 * ConvNets/resnet50v1.5/README.md (commit 729963dd, pytorch-21.03 NGC
 * container, eager PyTorch, NCHW, cudnn.benchmark on, DALI input), "FP32
 * Inference Latency", batch 128, Latency Avg: V100 16GB (DGX-1) 109.26 ms,
 * T4 309.26 ms. Until cost model 1.4.9 a 1x1 convolution ran at 9% of the
 * FP32 peak whatever its channels (fitted on NAS-Bench-201's 16-64):
 * 493 ms and 999 ms (+352%, +223%). The band, -30% .. +35%, holds what the
 * model gives up (the V100 runs BN, ReLU and adds at the 1080 Ti's fitted
 * memory efficiency: +29%; the T4 sustains less than its 8.1 TFLOP/s boost
 * peak: +2%).
 */
START_TEST(test_resnet50_fp32_published)
{
	static const struct { const char *dev; double ms; } pub[] = {
		{ "v100-16gb", 109.26 },
		{ "t4", 309.26 },
	};
	struct cm_device_catalog cat;

	load_catalog(&cat);
	for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++) {
		double ms = resnet50_fp32_ms(&cat, pub[i].dev, 0, "128"), rel = ms / pub[i].ms - 1.0;

		printf("resnet50 fp32 %-10s batch 128 inference: %.1f ms, published %.2f ms (%+.1f%%)\n",
		    pub[i].dev, ms, pub[i].ms, 100.0 * rel);
		ck_assert_msg(rel > -0.30 && rel < 0.35, "%s: %.1f ms against the published %.2f ms (%+.1f%%)",
		    pub[i].dev, ms, pub[i].ms, 100.0 * rel);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* ResNet-50 v1.5 FP32 training on a V100 against NVIDIA's published
 * throughput (DeepLearningExamples resnet50v1.5 README, pytorch-21.03, 1 GPU,
 * batch 112, SGD with momentum: 367 img/s on the 16 GB DGX-1, 356 on the
 * 32 GB DGX-1; one step = 112 / throughput). Cost model 1.4.9 predicts
 * +42.1 % and +37.8 %. The band holds today's figures: it catches a change
 * that moves them further off, not the known gap (docs/latency.md,
 * "Convolution backward by architecture": DeepBench's measured backward over
 * forward is the same on Pascal, Volta and Turing, so no per-architecture
 * PF_CONV_BWD_SLOW closes it). */
START_TEST(test_resnet50_fp32_training_published)
{
	static const struct { const char *dev; double img_s; } pub[] = {
		{ "v100-16gb", 367.0 },
		{ "v100-32gb", 356.0 },
	};
	struct cm_device_catalog cat;

	load_catalog(&cat);
	for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++) {
		double ms = resnet50_fp32_ms(&cat, pub[i].dev, 1, "112"), ref = 112.0 / pub[i].img_s * 1e3;
		double rel = ms / ref - 1.0;

		printf("resnet50 fp32 %-10s batch 112 training step (SGD momentum): %.1f ms, published %.1f ms (%+.1f%%)\n",
		    pub[i].dev, ms, ref, 100.0 * rel);
		ck_assert_msg(rel > -0.30 && rel < 0.50, "%s: %.1f ms against the published %.1f ms (%+.1f%%)",
		    pub[i].dev, ms, ref, 100.0 * rel);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* Mixed precision (autocast fp16) before Volta: PyTorch accumulates half
 * convolutions and GEMMs in FP32, so a GTX 1080 Ti or Titan Xp (half rate
 * 1/64 of FP32) runs them at the FP32 rate, and a ResNet-50 training step
 * is about as long as in FP32 (shorter by the halved elementwise bytes);
 * with tensor cores (V100) it is several times shorter. Until cost model
 * 1.4.10 the half peak was taken as it is: 40x the FP32 step on the 1080 Ti
 * (7.8 s against 192 ms at batch 32). */
START_TEST(test_half_before_volta)
{
	static const struct { const char *dev; double lo, hi; } cases[] = {
		{ "gtx-1080-ti", 0.6, 1.05 }, { "titan-xp", 0.6, 1.05 }, { "p100-pcie-16gb", 0.6, 1.05 },
		{ "v100-16gb", 0.1, 0.5 },
	};
	struct cm_device_catalog cat;

	load_catalog(&cat);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		double fp32 = resnet50_ms(&cat, cases[i].dev, 1, "32", CM_PREC_FP32);
		double half = resnet50_ms(&cat, cases[i].dev, 1, "32", CM_PREC_MIXED_FP16);

		printf("resnet50 %-15s batch 32 training step: fp32 %.1f ms, mixed fp16 %.1f ms (x%.2f)\n",
		    cases[i].dev, fp32, half, half / fp32);
		ck_assert_msg(half > cases[i].lo * fp32 && half < cases[i].hi * fp32,
		    "%s: mixed fp16 %.1f ms against fp32 %.1f ms", cases[i].dev, half, fp32);
	}
	cm_catalog_free(&cat);
}
END_TEST

/* The lstm_lm template (PyTorch's word_language_model, 2 x 650 LSTM) on a
 * V100, FP32 inference at batch 20: cuDNN runs the timesteps one after
 * another, so 50 tokens take many times one token's latency. Until cost
 * model 1.4.10 an LSTM was 255 host launches (8.5 ms) whatever its
 * sequence: both lengths gave the same latency. */
START_TEST(test_rnn_seq_len)
{
	struct cm_device_catalog cat;
	struct cm_workload wl = test_workload(0);
	struct tmodel t;
	double ms[2];
	const char *seq[2] = { "1", "50" };

	load_catalog(&cat);
	memset(&t, 0, sizeof t);
	ck_assert_msg(cm_def_load_template("lstm_lm", &t.def, &t.err) == 0, "%s", t.err.message);
	ck_assert_msg(tmodel_build_def_on(&t, &wl, cm_catalog_find(&cat, "v100-16gb")) == 0, "%s", t.err.message);
	for (int i = 0; i < 2; i++) {
		tmodel_set(&t, "seq_len", seq[i]);
		tmodel_eval(&t);
		ms[i] = t.r.lat_infer * 1e3;
	}
	printf("lstm_lm v100-16gb batch 20 inference: seq_len 1 %.3f ms, seq_len 50 %.3f ms (x%.1f)\n",
	    ms[0], ms[1], ms[1] / ms[0]);
	ck_assert_msg(ms[1] > 10.0 * ms[0] && ms[1] < 50.0 * ms[0],
	    "seq_len 50 takes %.3f ms against seq_len 1's %.3f ms", ms[1], ms[0]);
	tmodel_free(&t);
	cm_catalog_free(&cat);
}
END_TEST

/* One unidirectional LSTM or GRU layer on one input feature (so its input
 * projection is negligible, as DeepBench's CUDNN_SKIP_INPUT leaves it out)
 * against DeepBench's measured FP32 times on the GTX 1080 Ti and P100 (the
 * fit of the class before Volta), the Titan Xp (held out) and the V100 (the
 * fit of the class from Volta on): per device Kendall tau, the median signed
 * and the median absolute percentage error of the inference latency against
 * the forward time, and of the training step (Adam's few kernels
 * included) against forward + backward data + backward weights. Today:
 * forward -13 .. +10% signed, MdAPE 13-20%, tau 0.86-0.97; training -15 ..
 * +8%, MdAPE 10-33% (Pascal's backward-data times run 1-2.6x its forward by
 * batch, cuDNN's choice, which no smooth formula follows). Until cost model
 * 1.4.10 a layer was 8.5 ms of host launches unless its MACs at 0.40 of the
 * peak took longer: forward MdAPE 41-43% on Pascal, +82.5% on the V100; with
 * one set of constants for both classes Pascal was 16-30% low and the V100
 * 42% high. */
START_TEST(test_rnn_deepbench)
{
	static const char *const model =
	    "{\"dnnsat_model\": 1, \"name\": \"rnn1\", \"hyperparameters\": {"
	    "\"n\": {\"type\": \"int\", \"default\": 1, \"min\": 1, \"max\": 4096},"
	    "\"t\": {\"type\": \"int\", \"default\": 1, \"min\": 1, \"max\": 4096},"
	    "\"h\": {\"type\": \"int\", \"default\": 1, \"min\": 1, \"max\": 8192}},"
	    "\"inputs\": [{\"name\": \"x\", \"shape\": [\"n\", \"t\", 1], \"dtype\": \"float\"}],"
	    "\"layers\": [{\"op\": \"%s\", \"hidden_size\": \"h\"}]}";
	static const char *const devs[] = { "gtx-1080-ti", "p100-pcie-16gb", "v100-16gb", "titan-xp" };
	static const char *const cells[] = { "lstm", "gru" };
	struct cm_device_catalog cat;
	struct cm_workload wl = test_workload(0), wt = test_workload(1);
	FILE *f = fopen(src_path("tests/reference/deepbench_rnn.csv"), "r");
	char line[512], text[1024];

	ck_assert_msg(f != NULL, "tests/reference/deepbench_rnn.csv not found");
	load_catalog(&cat);
	for (size_t d = 0; d < sizeof devs / sizeof devs[0]; d++) {
		double err[128], aerr[128], pred[128], meas[128], terr[128], taerr[128];
		int n = 0;

		for (size_t c = 0; c < 2; c++) {
			struct tmodel t, tt;
			json_error_t jerr;
			json_t *root;

			memset(&t, 0, sizeof t);
			memset(&tt, 0, sizeof tt);
			snprintf(text, sizeof text, model, cells[c]);
			root = json_loads(text, 0, &jerr);
			ck_assert_msg(root != NULL, "%s", jerr.text);
			ck_assert_msg(cm_def_load_json(root, &t.def, &t.err) == 0, "%s", t.err.message);
			ck_assert_msg(cm_def_load_json(root, &tt.def, &tt.err) == 0, "%s", tt.err.message);
			json_decref(root);
			ck_assert_msg(tmodel_build_def_on(&t, &wl, cm_catalog_find(&cat, devs[d])) == 0, "%s", t.err.message);
			ck_assert_msg(tmodel_build_def_on(&tt, &wt, cm_catalog_find(&cat, devs[d])) == 0, "%s", tt.err.message);
			rewind(f);
			while (fgets(line, sizeof line, f)) {
				char dev[64], cell[16], hs[16], ns[16], ts[16];
				double fwd, bwd_in, bwd_w;

				/* device,sheet,cell,gates,app,hidden,batch,timesteps,fwd_ms,
				 * bwd_inputs_ms,bwd_params_ms (every LSTM and GRU row has all three) */
				if (sscanf(line, "%63[^,],%*[^,],%15[^,],%*[^,],%*[^,],%15[^,],%15[^,],%15[^,],%lf,%lf,%lf",
				    dev, cell, hs, ns, ts, &fwd, &bwd_in, &bwd_w) != 8 || strcmp(dev, devs[d]) != 0 ||
				    strcmp(cell, cells[c]) != 0)
					continue;
				tmodel_set(&t, "h", hs);
				tmodel_set(&t, "n", ns);
				tmodel_set(&t, "t", ts);
				tmodel_eval(&t);
				tmodel_set(&tt, "h", hs);
				tmodel_set(&tt, "n", ns);
				tmodel_set(&tt, "t", ts);
				tmodel_eval(&tt);
				/* a training step: forward, both backward passes (and the
				 * optimizer's few weight-sized kernels) */
				terr[n] = 100.0 * (tt.r.lat_train * 1e3 / (fwd + bwd_in + bwd_w) - 1.0);
				taerr[n] = fabs(terr[n]);
				ck_assert_int_lt(n, 128);
				pred[n] = t.r.lat_infer * 1e3;
				meas[n] = fwd;
				err[n] = 100.0 * (pred[n] / fwd - 1.0);
				aerr[n] = fabs(err[n]);
				n++;
			}
			tmodel_free(&t);
			tmodel_free(&tt);
		}
		ck_assert_int_ge(n, 40);
		double tau = stats_kendall(pred, meas, n);
		double med = stats_median(err, n), mdape = stats_median(aerr, n);
		double tmed = stats_median(terr, n), tmdape = stats_median(taerr, n);
		printf("deepbench rnn %-15s %3d LSTM/GRU layers  forward: Kendall tau %.3f, median signed %+.1f%%, "
		    "MdAPE %.1f%%; training step: median signed %+.1f%%, MdAPE %.1f%%\n", devs[d], n, tau, med, mdape,
		    tmed, tmdape);
		ck_assert_msg(tau >= 0.85 && med > -25.0 && med < 25.0 && mdape < 25.0,
		    "%s: Kendall tau %.3f, median signed %+.1f%%, MdAPE %.1f%%", devs[d], tau, med, mdape);
		ck_assert_msg(tmed > -30.0 && tmed < 30.0 && tmdape < 35.0,
		    "%s: training step median signed %+.1f%%, MdAPE %.1f%%", devs[d], tmed, tmdape);
	}
	fclose(f);
	cm_catalog_free(&cat);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("latency");
	TCase *t = tcase_create("help");

	tcase_set_timeout(t, 600);
	tcase_add_test(t, test_kendall_knight);
	tcase_add_test(t, test_nb201_convention);
	tcase_add_test(t, test_nb201_latency_help);
	tcase_add_test(t, test_resnet50_fp32_published);
	tcase_add_test(t, test_resnet50_fp32_training_published);
	tcase_add_test(t, test_half_before_volta);
	tcase_add_test(t, test_rnn_seq_len);
	tcase_add_test(t, test_rnn_deepbench);
	suite_add_tcase(s, t);
	return s;
}

int
main(void)
{
	return run_suite(suite(), 1);
}
