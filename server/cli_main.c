/*
 * cli_main.c - `dnnsat`, the command-line front end: dispatches to one
 * subcommand per file (cli_estimate.c, cli_catalog.c). Later subcommands
 * (count, list, sample, reduce, explain, max, serve) plug in here.
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
	    "example: dnnsat estimate --preset resnet50 batch_size=64 --device v100-16gb\n"
	    "exit status: 0 fits, 1 invalid or does not fit, 2 bad input\n");
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
	if (strcmp(argv[1], "templates") == 0)
		return cli_templates(argc - 1, argv + 1);
	if (strcmp(argv[1], "devices") == 0)
		return cli_devices(argc - 1, argv + 1);
	fprintf(stderr, "dnnsat: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
