/*
 * bench_threads.c - the scaling curve of counting on several threads
 * (e->threads, solver/fset_par.c; issue 18): the exact count of the cnn5
 * space (16 GiB), the README's ResNet-50 walkthrough space (3 GiB) and
 * the 24-layer transformer's space with the per-layer choices of its first
 * six layers free (the full space is not countable exactly; three layers
 * took 3.8 s until the engine ordered the heads dims first on 2026-12-05,
 * 0.03 s since), at 1, 2, 4,
 * 8 and 16 threads up to --max-threads (default: the processors online).
 * Rounds alternate the order of the thread counts (up, then down) so that
 * a machine's drift hits every count alike; the table gives each count's
 * median seconds and its speedup over one thread, and the median CPU
 * seconds of its longest thread (e->cpu_span: collecting the leaves and
 * the graft plus the busiest worker; one thread: its CPU time) with that
 * speedup, which is what the wall time gives on idle cores and what a
 * busy, shared machine's wall clock cannot show, and the median number of
 * boxes idle workers stole (e->steals). It checks that every count gave
 * the one thread's count and stored tree size.
 *
 * Usage: bench_threads [--max-threads N] [--rounds R]   (make bench-threads)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fset.h"
#include "../test_stats.h"
#include "query.h"

static struct cm_device_catalog cat;

static json_t *
load(const char *rel)
{
	const char *top = getenv("top_srcdir") ? getenv("top_srcdir") : ".";
	char path[1024];
	json_error_t jerr;
	json_t *j;

	snprintf(path, sizeof path, "%s/%s", top, rel);
	if ((j = json_load_file(path, 0, &jerr)) == NULL) {
		fprintf(stderr, "%s: %s\n", path, jerr.text);
		exit(1);
	}
	return j;
}

/* The three spaces (i = 0, 1, 2): a new reference. */
static json_t *
space_query(int i)
{
	json_t *req, *space;
	char key[32];

	if (i == 0)
		return json_pack("{s:o,s:o,s:s,s:{s:s}}", "model", load("examples/models/cnn5.json"), "space",
		    load("examples/spaces/cnn5.json"), "device", "a100-40gb", "budgets", "memory", "16GiB");
	if (i == 1)
		return json_pack("{s:s,s:o,s:s,s:{s:s,s:s,s:s},s:{s:s}}", "model", "resnet50", "space",
		    load("examples/spaces/resnet.json"), "device", "a100-40gb", "workload", "mode", "training",
		    "optimizer", "adam", "dtype", "fp32", "budgets", "memory", "3GiB");
	space = load("examples/spaces/transformer24.json");
	for (int l = 6; l < 24; l++) {
		snprintf(key, sizeof key, "heads%d", l);
		json_object_del(space, key);
		snprintf(key, sizeof key, "ffn%d", l);
		json_object_del(space, key);
	}
	req = json_pack("{s:o,s:o,s:s,s:{s:s},s:{s:s,s:s}}", "model", load("examples/models/transformer24.json"),
	    "space", space, "device", "a100-80gb", "budgets", "memory", "40GiB", "workload", "dtype", "mixed_bf16",
	    "optimizer", "adamw");
	return req;
}

static const char *const names[] = { "cnn5, 16 GiB (3.3e8 configurations)",
	"ResNet-50 walkthrough, 3 GiB (42k-node graph)", "transformer24, layers 0-5 free, 40 GiB (2.7e8)" };

static double
thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One exact count of q at `threads`: its seconds; count, nodes, the CPU
 * seconds of its longest thread (e->cpu_span; one thread: its CPU) and the
 * boxes stolen out. */
static double
count_once(struct sq_query *q, int threads, fs_count *count, int32_t *nodes, double *span, double *steals)
{
	struct fs_engine e;
	struct dn_error err;
	double t0, c0;

	memset(&err, 0, sizeof err);
	if (fs_init(&e, q, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		exit(1);
	}
	e.threads = threads;
	c0 = thread_cpu();
	t0 = fs_now();
	if (fs_count_all(&e, 0, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		exit(1);
	}
	t0 = fs_now() - t0;
	*span = threads > 1 ? e.cpu_span : thread_cpu() - c0;
	*count = e.lower;
	*nodes = e.nnodes;
	*steals = (double)e.steals;
	fs_free(&e);
	return t0;
}

int
main(int argc, char **argv)
{
	int max = fs_par_cores(), rounds = 3, tl[8], nt = 0, bad = 0;
	char path[1024];
	struct dn_error err;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--max-threads") == 0)
			max = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rounds") == 0)
			rounds = atoi(argv[++i]);
	}
	if (max < 1 || rounds < 1 || rounds > 99) {
		fprintf(stderr, "usage: bench_threads [--max-threads N] [--rounds R]\n");
		return 2;
	}
	for (int t = 1; t <= 16 && t <= max; t *= 2)
		tl[nt++] = t;
	memset(&err, 0, sizeof err);
	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	if (cm_catalog_load(path, &cat, &err) != 0) {
		fprintf(stderr, "%s\n", err.message);
		return 1;
	}
	printf("== exact counts on 1..%d threads, %d rounds alternating the order, medians (%d processors)\n", max,
	    rounds, fs_par_cores());
	for (int c = 0; c < 3; c++) {
		json_t *req = space_query(c);
		struct sq_query q;
		double sec[8][99], span[8][99], steals[8][99], one = 0, one_span = 0;
		fs_count c1 = 0;
		int32_t n1 = 0;

		memset(&err, 0, sizeof err);
		if (sq_parse(req, &cat, &q, &err) != 0) {
			fprintf(stderr, "%s: %s\n", names[c], err.message);
			return 1;
		}
		for (int r = 0; r < rounds; r++)
			for (int k = 0; k < nt; k++) {
				int i = r % 2 == 0 ? k : nt - 1 - k;
				fs_count cnt;
				int32_t nodes;
				sec[i][r] = count_once(&q, tl[i], &cnt, &nodes, &span[i][r], &steals[i][r]);
				if (r == 0 && i == 0) {
					c1 = cnt;
					n1 = nodes;
				}
				if (i != 0 || r != 0)
					bad |= cnt != c1 || nodes != n1;
			}
		printf("\n%s\n%8s %10s %8s %12s %8s %7s\n", names[c], "threads", "seconds", "speedup", "span CPU s",
		    "speedup", "steals");
		for (int i = 0; i < nt; i++) {
			double m = stats_median(sec[i], rounds), ms = stats_median(span[i], rounds);
			if (i == 0) {
				one = m;
				one_span = ms;
			}
			printf("%8d %10.3f %7.2fx %12.3f %7.2fx %7.0f\n", tl[i], m, one / m, ms, one_span / ms,
			    stats_median(steals[i], rounds));
		}
		sq_free(&q);
		json_decref(req);
	}
	printf("\n%s\n", bad ? "MISMATCH: a count differed from one thread's" : "every count the same as one thread's");
	cm_catalog_free(&cat);
	return bad;
}
