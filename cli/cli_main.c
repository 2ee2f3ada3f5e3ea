/*
 * cli_main.c - `dnnsat`, the command-line front end: dispatches to one
 * subcommand per file (cli_estimate.c, cli_catalog.c). Later subcommands
 * (serve) plug in here; the solver's commands live in cli_solve.c and
 * cli_explain.c, batch pruning (prune) in cli_batch.c.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: dnnsat COMMAND [options]\n"
	    "\n"
	    "commands:\n"
	    "  estimate    every cost of one configuration (parameters, MACs, memory, latency, utilization)\n"
	    "  count       how many configurations of an NNI space fit the budgets (exact, or certified bounds)\n"
	    "  list        the feasible configurations as JSON lines (--offset K, --limit N, --cursor C)\n"
	    "  sample      uniform samples of the feasible configurations (--n N --seed S); when the count\n"
	    "              does not finish in half the --timeout, approximate ones drawn without it\n"
	    "  reduce      the reduced NNI search space (values that occur in a feasible configuration)\n"
	    "  explain     why a configuration (--config JSON) or a value (--param P --value V) does not fit\n"
	    "  max         the largest feasible value of --param P (for each value of --per Q)\n"
	    "  min         the smallest feasible value of --param P (for each value of --per Q)\n"
	    "  prune       many spaces (files, directories) x devices at once: reduced spaces, configurations\n"
	    "              (JSON lines, CSV) and a summary table; offline or --server URL (dnnsat prune --help)\n"
	    "  templates   the built-in model templates, their hyperparameters and presets\n"
	    "  devices     the GPU catalog\n"
	    "\n"
	    "estimate options:\n"
	    "  --template NAME | --model FILE | --preset NAME   the model (a preset alone finds its template)\n"
	    "  NAME=VALUE or --set NAME=VALUE                   a hyperparameter (repeatable)\n"
	    "  --device NAME | --device-file FILE               default a100-40gb\n"
	    "  --optimizer sgd|sgd_momentum|adam|adamw|adagrad|rmsprop   default adam\n"
	    "  --dtype fp32|fp16|bf16|mixed_fp16|mixed_bf16     default fp32\n"
	    "  --tf32  --inference  --per-op  --json\n"
	    "\n"
	    "solver options (count, list, sample, reduce, explain, max, min):\n"
	    "  [QUERY.json] --space SPACE.json --preset P | --template T | --model F --device D\n"
	    "  --budget memory=16GiB|90%%|params=25M|macs=4G|flops=8G|latency=10ms|step_time=0.5s|min_utilization=0.5\n"
	    "           (memory, latency and step_time need a unit; memory is capped to the device's usable memory)\n"
	    "  --constraint 'hidden %% heads == 0'  --set NAME=VALUE  --bind PARAMETER=HYPERPARAMETER\n"
	    "  --timeout SECONDS  --json\n"
	    "\n"
	    "prune options: SPACE.json|QUERY.json|DIR... --device D[,D...] --out DIR [--configs jsonl|csv]\n"
	    "  [--limit N] [--summary table|csv|json] [--server URL] [--token T] and the solver options\n"
	    "\n"
	    "example: dnnsat estimate --preset resnet50 batch_size=64 --device v100-16gb\n"
	    "         dnnsat count --preset resnet50 --space examples/spaces/resnet.json --budget memory=16GiB\n"
	    "         dnnsat prune examples/spaces --preset resnet50 --device t4,a100-40gb --out pruned/\n"
	    "exit status: 0 fits, 1 invalid or does not fit, 2 bad input, 3 deadline passed (bounds only, and\n"
	    "             an estimate for count; sample: fewer than N samples, those drawn printed),\n"
	    "             4 the server (prune --server) could not be reached or failed\n");
}

int
main(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("dnnsat %s (cost model %s)\n", PACKAGE_VERSION, CM_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "estimate") == 0)
		return cli_estimate(argc - 1, argv + 1);
	if (strcmp(argv[1], "count") == 0 || strcmp(argv[1], "list") == 0 || strcmp(argv[1], "sample") == 0 ||
	    strcmp(argv[1], "reduce") == 0 || strcmp(argv[1], "explain") == 0 || strcmp(argv[1], "max") == 0 ||
	    strcmp(argv[1], "min") == 0)
		return cli_solve(argc - 1, argv + 1);
	if (strcmp(argv[1], "prune") == 0)
		return cli_prune(argc - 1, argv + 1);
	if (strcmp(argv[1], "templates") == 0)
		return cli_templates(argc - 1, argv + 1);
	if (strcmp(argv[1], "devices") == 0)
		return cli_devices(argc - 1, argv + 1);
	fprintf(stderr, "dnnsat: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
