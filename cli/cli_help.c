/*
 * cli_help.c - what dnnsat can be asked, as data: the table of commands
 * (name, the function that runs it, a one-line summary, its usage text and
 * every option it takes). From it come `dnnsat --help`, `dnnsat COMMAND
 * --help` and `dnnsat help COMMAND`, and the "did you mean" of unknown
 * commands and options (common/dn_suggest.c), so that a command's help, its
 * parser's suggestions and the top-level list cannot disagree: an option a
 * parser accepts is in its command's list here. man/dnnsat.1 describes the
 * same (tests/cli/test_cli.sh checks that every option of each `dnnsat
 * COMMAND --help` is named there).
 */
#include "cli.h"
#include "dn_suggest.h"

#include <stdio.h>
#include <string.h>

/* The options of every solver command (cli_req_option and cli_solve.c). */
#define SOLVER_OPTIONS "--preset", "--template", "--model", "--space", "--device", "--budget", "--set", \
	"--constraint", "--optimizer", "--dtype", "--convention", "--attention", "--grad-accum", "--checkpointing", \
	"--zero-grad", "--optimizer-impl", "--softmax-saves", "--pytorch", "--freeze", "--train", "--lora-rank", "--lora-targets", "--lora-dropout", "--use-dora", "--quantize", "--inference", "--bind", "--timeout", "--threads", "--json", "--help"

static const char *const estimate_options[] = { "--template", "--model", "--preset", "--set", "--device",
	"--device-file", "--optimizer", "--dtype", "--convention", "--attention", "--grad-accum", "--checkpointing", "--zero-grad", "--optimizer-impl", "--softmax-saves", "--pytorch", "--tf32", "--no-cudnn-tf32", "--inference",
	"--freeze", "--train", "--lora-rank", "--lora-targets", "--lora-dropout", "--use-dora", "--quantize", "--per-op", "--json", "--help", NULL };
/* cli_solve.c takes all of these for each solver command; the usage of each
 * names those that change its answer */
static const char *const solver_options[] = { SOLVER_OPTIONS, "--offset", "--limit", "--cursor", "--n",
	"--seed", "--config", "--param", "--value", "--per", "--engine", NULL };
static const char *const prune_options[] = { "--preset", "--template", "--model", "--space", "--device",
	"--budget", "--set", "--constraint", "--optimizer", "--dtype", "--convention", "--attention", "--grad-accum", "--checkpointing",
	"--zero-grad", "--optimizer-impl", "--softmax-saves", "--pytorch", "--freeze", "--train", "--lora-rank", "--lora-targets", "--lora-dropout", "--use-dora", "--quantize", "--inference", "--bind", "--timeout", "--threads", "--json", "--out", "--configs", "--limit", "--summary", "--server", "--token", "--help", NULL };
static const char *const catalog_options[] = { "--json", "--help", NULL };
static const char *const import_options[] = { "--name", "--dim", "--unknown", "--out", "--help", NULL };

#define FT_HELP \
	"  --freeze SELECTORS    fine-tuning: freeze these weights (comma list: all, an operator type\n" \
	"                        such as embedding or linear, attention.q|k|v|qkv|out, a path prefix $.layers[3])\n" \
	"  --train SELECTORS     keep these trainable despite --freeze or LoRA (peft's modules_to_save)\n" \
	"  --lora-rank R         LoRA adapters of rank R (an integer or an expression over hyperparameters);\n" \
	"                        every base weight frozen\n" \
	"  --lora-targets SELECTORS   the linears that get adapters (e.g. attention.q,attention.v), and\n" \
	"                        convolutions and embeddings named by kind (conv2d, embedding), module\n" \
	"                        name (embed_tokens, wte, ...) or path\n" \
	"  --lora-dropout P      peft's lora_dropout (default 0): a dropped copy of each adapter's input\n" \
	"  --use-dora            DoRA (peft's use_dora): a trainable magnitude per output row, the\n" \
	"                        weight's norm every step, each adapted layer's result and adapter output kept\n" \
	"                        (linears, convolutions, embeddings)\n" \
	"  --quantize nf4|nf4-dq|fp4|fp4-dq|int8   bitsandbytes' 4-bit (QLoRA) or 8-bit (LLM.int8()) base\n" \
	"                        weights: every linear but the output layer, frozen ones when training;\n" \
	"                        -dq: double quantization\n"
#define MODEL_HELP \
	"  --preset NAME | --template NAME | --model FILE   the model (a preset alone finds its template)\n"
#define QUERY_HELP \
	"  [QUERY.json]          a query file (solver/query.h): its fields, then the options below\n" \
	MODEL_HELP \
	"  --space FILE          the NNI search space (search_space.json)\n" \
	"  --device NAME         the GPU (dnnsat devices; default a100-40gb)\n" \
	"  --budget NAME=VALUE   memory=16GiB|90%, params=25M, weight_bytes=1GiB, macs=4G, flops=8G,\n" \
	"                        latency=10ms, step_time=0.5s, min_utilization=0.5 (repeatable; memory,\n" \
	"                        latency and step_time need a unit; memory is capped to the usable memory;\n" \
	"                        macs and flops count the forward pass of the whole batch, batch_size\n" \
	"                        samples, not one: flops = 2 x macs; resnet50 at batch_size=32: 130.9G MACs)\n" \
	"  --constraint EXPR     e.g. 'hidden % heads == 0' (repeatable)\n" \
	"  NAME=VALUE | --set NAME=VALUE   fix a hyperparameter (repeatable)\n" \
	"  --bind PARAMETER=HYPERPARAMETER  the space's PARAMETER sets the model's HYPERPARAMETER\n" \
	"  --optimizer sgd|sgd_momentum|adam|adamw|adagrad|rmsprop|adam_8bit|adafactor|lion   default adam\n" \
	"                        (or Hugging Face's optim: adamw_torch, adamw_torch_fused, paged_adamw_8bit, ...)\n" \
	"  --dtype fp32|fp16|bf16|mixed_fp16|mixed_bf16   default fp32\n" \
	"  --convention torchvision|nb201|fvcore   how MACs count, and so the macs and flops budgets\n" \
	"                        (nb201 adds biases, fvcore norms; default torchvision)\n" \
	"  --attention sdpa|eager|math|mem_efficient|flash   attention kernel (default sdpa: flash on\n" \
	"                        compute capability >= 8.0 in fp16/bf16, else mem_efficient)\n" \
	"  --grad-accum N        micro-batches per optimizer step (batch_size is one micro-batch)\n" \
	"  --checkpointing       gradient checkpointing of every block (a top-level repeat's iteration,\n" \
	"                        a residual block; a warning where the model has none)\n" \
	"  --zero-grad set_to_none|zeros   zeros: gradients stay allocated across steps (zero_grad(set_to_none=False),\n" \
	"                        PyTorch < 2.0's default; default set_to_none)\n" \
	"  --optimizer-impl foreach|for_loop|fused   for_loop: the optimizer steps one weight at a time (PyTorch < 2.0,\n" \
	"                        transformers.AdamW); fused: fused=True, in place (Adam, AdamW, SGD); default foreach\n" \
	"  --softmax-saves output|output_and_input   output_and_input: autograd keeps softmax's input too\n" \
	"                        (PyTorch <= 1.10; default output, PyTorch >= 1.11)\n" \
	"  --pytorch MAJOR.MINOR   the PyTorch release: its defaults for the three options above and\n" \
	"                        attention (eager before 2.0); options given explicitly win\n" \
	FT_HELP \
	"  --inference           an inference workload (default: training)\n" \
	"  --timeout SECONDS     the deadline (default 60)\n" \
	"  --threads N           counting threads (default: the processors; 1: one thread); the answer\n" \
	"                        is the same at any number\n" \
	"  --json                the answer as JSON\n"
#define SOLVER_EXIT \
	"exit status: 0 answered, 1 nothing feasible, 2 bad input, 3 deadline passed (certified bounds)\n"

static const struct cli_cmd commands[] = {
	{ "estimate", cli_estimate, "every cost of one configuration (parameters, MACs, memory, latency, utilization)",
	  "usage: dnnsat estimate [PRESET] [NAME=VALUE...] [options]\n"
	  MODEL_HELP
	  "  NAME=VALUE | --set NAME=VALUE   a hyperparameter (repeatable; dnnsat templates lists them)\n"
	  "  --device NAME | --device-file FILE   the GPU (dnnsat devices; default a100-40gb)\n"
	  "  --optimizer sgd|sgd_momentum|adam|adamw|adagrad|rmsprop|adam_8bit|adafactor|lion   default adam\n"
	  "                        (or Hugging Face's optim: adamw_torch, adamw_torch_fused, paged_adamw_8bit, ...)\n"
	  "  --dtype fp32|fp16|bf16|mixed_fp16|mixed_bf16   default fp32\n"
	  "  --attention sdpa|eager|math|mem_efficient|flash   attention kernel (default sdpa: flash on\n"
	  "                        compute capability >= 8.0 in fp16/bf16, else mem_efficient)\n"
	  "  --grad-accum N        micro-batches per optimizer step (batch_size is one micro-batch)\n"
	  "  --checkpointing       gradient checkpointing of every block (a top-level repeat's iteration,\n"
	  "                        a residual block; a warning where the model has none)\n"
	  "  --zero-grad set_to_none|zeros   zeros: gradients stay allocated across steps (zero_grad(set_to_none=False),\n"
	  "                        PyTorch < 2.0's default; default set_to_none)\n"
	  "  --optimizer-impl foreach|for_loop|fused   for_loop: the optimizer steps one weight at a time (PyTorch < 2.0,\n"
	  "                        transformers.AdamW); fused: fused=True, in place (Adam, AdamW, SGD); default foreach\n"
	  "  --softmax-saves output|output_and_input   output_and_input: autograd keeps softmax's input too\n"
	  "                        (PyTorch <= 1.10; default output, PyTorch >= 1.11)\n"
	  "  --pytorch MAJOR.MINOR   the PyTorch release: its defaults for the three options above and\n"
	  "                        attention (eager before 2.0); options given explicitly win\n"
	  FT_HELP
	  "  --tf32                TF32 tensor cores for fp32 matrix products (PyTorch 1.7-1.11's default)\n"
	  "  --no-cudnn-tf32       fp32 convolutions on the FP32 units (default: cuDNN takes TF32 tensor\n"
	  "                        cores on Ampere and newer, torch.backends.cudnn.allow_tf32)\n"
	  "  --convention torchvision|nb201|fvcore   how MACs count (nb201 adds biases, fvcore norms;\n"
	  "                        default torchvision)\n"
	  "  --inference           an inference workload (default: training)\n"
	  "  --per-op              one row per operator\n"
	  "  --json                the answer as JSON (the costs of POST /v1/estimate)\n"
	  "exit status: 0 valid and fits, 1 invalid or does not fit the device's usable memory, 2 bad input\n",
	  estimate_options },
	{ "count", cli_solve, "how many configurations of an NNI space fit the budgets (exact, or certified bounds)",
	  "usage: dnnsat count [QUERY.json] [options]\n" QUERY_HELP
	  "  --engine bnb|z3       z3: Z3 also enumerates the feasible configurations (blocking clauses,\n"
	  "                        at most 20000) as a cross-check of the count (default bnb: the engine alone)\n"
	  "past the deadline: certified bounds and an estimate (the last fifth of the deadline, 1 s at most)\n"
	  "nothing feasible: Z3 names the budgets and constraints that conflict and the limit from which\n"
	  "  something fits for each budget among them\n"
	  SOLVER_EXIT, solver_options },
	{ "list", cli_solve, "the feasible configurations as JSON lines (--offset K, --limit N, --cursor C)",
	  "usage: dnnsat list [QUERY.json] [options]\n" QUERY_HELP
	  "  --offset K            start at the K-th feasible configuration (0 first; needs the exact count)\n"
	  "  --limit N             at most N configurations; the next page's cursor on stderr\n"
	  "  --cursor C            continue where the page that printed C ended\n"
	  SOLVER_EXIT, solver_options },
	{ "sample", cli_solve, "uniform samples of the feasible configurations (--n N --seed S)",
	  "usage: dnnsat sample [QUERY.json] [options]\n" QUERY_HELP
	  "  --n N                 how many samples (default 10)\n"
	  "  --seed S              the random seed, an integer from 0 to 18446744073709551615 (2^64 - 1;\n"
	  "                        default 1): the same seed, the same samples\n"
	  "when the count does not finish in half the --timeout, approximate samples drawn without it\n"
	  "exit status: 0 N samples, 1 nothing feasible, 2 bad input, 3 fewer than N (those drawn printed)\n",
	  solver_options },
	{ "reduce", cli_solve, "the reduced NNI search space (values that occur in a feasible configuration)",
	  "usage: dnnsat reduce [QUERY.json] [options]\n" QUERY_HELP
	  "prints the reduced search space (NNI format, the keys in the space's order)\n"
	  SOLVER_EXIT, solver_options },
	{ "explain", cli_solve, "why a configuration (--config JSON) or a value (--param P --value V) does not fit",
	  "usage: dnnsat explain [QUERY.json] [options] (--config JSON | --param NAME --value V)\n" QUERY_HELP
	  "  --config JSON         check one configuration against every budget and constraint\n"
	  "  --param NAME --value V   why no feasible configuration has NAME = V\n"
	  "exit status: 0 feasible (kept), 1 infeasible (removed), 2 bad input\n", solver_options },
	{ "max", cli_solve, "the largest feasible value of --param P (for each value of --per Q)",
	  "usage: dnnsat max [QUERY.json] [options] --param NAME [--per NAME]\n" QUERY_HELP
	  "  --param NAME          the parameter to maximize\n"
	  "  --per NAME            one answer for each value of this parameter\n"
	  SOLVER_EXIT, solver_options },
	{ "min", cli_solve, "the smallest feasible value of --param P (for each value of --per Q)",
	  "usage: dnnsat min [QUERY.json] [options] --param NAME [--per NAME]\n" QUERY_HELP
	  "  --param NAME          the parameter to minimize\n"
	  "  --per NAME            one answer for each value of this parameter\n"
	  SOLVER_EXIT, solver_options },
	{ "prune", cli_prune, "many spaces (files, directories) x devices at once: reduced spaces, configurations\n"
	  "              (JSON lines, CSV) and a summary table; offline or --server URL",
	  "usage: dnnsat prune SPACE.json|QUERY.json|DIR... --device D[,D...] [options]\n"
	  "  inputs      NNI search spaces, query files (their own \"model\", \"device\", budgets, \"timeout\";\n"
	  "              \"space\" and \"model\" may name JSON files), or directories (every *.json)\n"
	  "  --device D  one or several devices (comma-separated, repeatable); default the query's, else a100-40gb\n"
	  "  --preset P | --template T | --model F   the model of every input without its own\n"
	  "  --budget NAME=VALUE  --constraint EXPR  --set NAME=VALUE (or NAME=VALUE)  --bind P=H\n"
	  "  --optimizer O  --dtype T  --convention C  --attention A  --grad-accum N  --checkpointing  --inference\n"
	  "  --freeze SEL  --train SEL  --lora-rank R  --lora-targets SEL  --lora-dropout P  --use-dora  --quantize MODE\n"
	  "                       fine-tuning (as for estimate)\n"
	  "  --timeout S          seconds per item (default 60; a query file's \"timeout\" wins for its items);\n"
	  "                       past it, certified bounds\n"
	  "  --threads N          counting threads offline (default: the processors; the same answers)\n"
	  "  --out DIR            write SPACE.DEVICE.search_space.json (the reduced space) per item\n"
	  "  --configs jsonl|csv  also SPACE.DEVICE.configs.jsonl|csv: the feasible configurations\n"
	  "  --limit N            at most N configurations per item (default: all)\n"
	  "  --summary table|csv|json   the summary on stdout (default table; --json: json)\n"
	  "  --server URL         ask a dnnsatd instead of solving here; --token T or DNNSAT_TOKEN\n"
	  "exit status: 0 done, 2 bad input, 3 some count only got bounds (deadline), 4 server failure\n",
	  prune_options },
	{ "import", cli_import, "an ONNX model as a model file, its symbolic dimensions as hyperparameters",
	  "usage: dnnsat import MODEL.onnx [options] > model.json\n"
	  "  --name NAME           the model's name (default: the ONNX graph's)\n"
	  "  --dim FROM=TO         name the hyperparameter of symbolic dimension FROM (dim_param) TO\n"
	  "                        (repeatable), e.g. --dim batch=batch_size\n"
	  "  --unknown error|elementwise   an operator the importer does not know: an error naming the\n"
	  "                        node (default), or priced as elementwise with a warning per type\n"
	  "  --out FILE            write the model file to FILE instead of stdout\n"
	  "exit status: 0 imported, 2 bad input (the error names the node, its operator and position)\n",
	  import_options },
	{ "templates", cli_templates, "the built-in model templates, their hyperparameters and presets",
	  "usage: dnnsat templates [--json]\n", catalog_options },
	{ "devices", cli_devices, "the GPU catalog",
	  "usage: dnnsat devices [--json]\n"
	  "  the columns: name (for --device), GPU, memory, usable memory (what one process can allocate: the\n"
	  "  cap of every memory budget), memory bandwidth, SMs, peak dense FLOP/s\n",
	  catalog_options },
};
#define NCOMMANDS ((int)(sizeof commands / sizeof commands[0]))

const struct cli_cmd *
cli_cmd_find(const char *name)
{
	for (int i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

int
cli_unknown_command(const char *name, struct dn_error *err)
{
	static const char *const top_options[] = { "--help", "--version", NULL };
	const char *names[NCOMMANDS + 1];
	char near[128];

	if (name[0] == '-') {   /* dnnsat --verison: an option of dnnsat itself */
		if (dn_suggest(name, top_options, 2, near, sizeof near) > 0)
			return dn_error_set(err, DN_EINVAL, name, "unknown option (did you mean %s? see dnnsat --help)", near);
		return dn_error_set(err, DN_EINVAL, name, "unknown option (see dnnsat --help)");
	}
	for (int i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	names[NCOMMANDS] = "help";
	if (dn_suggest(name, names, NCOMMANDS + 1, near, sizeof near) > 0)
		return dn_error_set(err, DN_EINVAL, NULL, "unknown command \"%s\" (did you mean %s? see dnnsat --help)",
		    name, near);
	return dn_error_set(err, DN_EINVAL, NULL, "unknown command \"%s\" (see dnnsat --help)", name);
}

int
cli_unknown_option(const char *cmd, const char *opt, struct dn_error *err)
{
	const struct cli_cmd *c = cli_cmd_find(cmd);
	char near[128] = "";
	int n = 0;

	if (c != NULL) {
		while (c->options[n] != NULL)
			n++;
		dn_suggest(opt, c->options, n, near, sizeof near);
	}
	if (near[0] != '\0')
		return dn_error_set(err, DN_EINVAL, opt, "unknown option (did you mean %s? see dnnsat %s --help)",
		    near, cmd);
	return dn_error_set(err, DN_EINVAL, opt, "unknown option (see dnnsat %s --help)", cmd);
}

void
cli_usage(FILE *f)
{
	fprintf(f, "usage: dnnsat COMMAND [options]     dnnsat COMMAND --help, dnnsat help COMMAND: its options\n"
	    "       dnnsat --version (also after a command: dnnsat count --version)\n\ncommands:\n");
	for (int i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
	    "\n"
	    "estimate options:\n"
	    "  --template NAME | --model FILE | --preset NAME   the model (a preset alone finds its template)\n"
	    "  NAME=VALUE or --set NAME=VALUE                   a hyperparameter (repeatable)\n"
	    "  --device NAME | --device-file FILE               default a100-40gb\n"
	    "  --optimizer sgd|sgd_momentum|adam|adamw|adagrad|rmsprop|adam_8bit|adafactor|lion   default adam\n"
	    "  --dtype fp32|fp16|bf16|mixed_fp16|mixed_bf16     default fp32\n"
	    "  --convention torchvision|nb201|fvcore            how MACs count (default torchvision)\n"
	    "  --attention sdpa|eager|math|mem_efficient|flash  default sdpa  --grad-accum N  --checkpointing\n"
	    "  --zero-grad set_to_none|zeros  --optimizer-impl foreach|for_loop|fused   PyTorch < 2.0's: zeros, for_loop\n"
	    "  --softmax-saves output|output_and_input          PyTorch <= 1.10's: output_and_input\n"
	    "  --pytorch MAJOR.MINOR                            that release's defaults of the four above\n"
	    "  --freeze SEL  --train SEL  --lora-rank R  --lora-targets SEL  --lora-dropout P  --use-dora   fine-tuning\n"
	    "  --quantize nf4|nf4-dq|fp4|fp4-dq|int8            4- or 8-bit base weights (bitsandbytes)\n"
	    "  --budget memory=16GiB[:safe]|latency=10ms|...   budgets as in count (exit status 1 when one fails)\n"
	    "  --tf32  --no-cudnn-tf32  --inference  --per-op  --json\n"
	    "\n"
	    "solver options (count, list, sample, reduce, explain, max, min):\n"
	    "  [QUERY.json] --space SPACE.json --preset P | --template T | --model F --device D\n"
	    "  --budget memory=16GiB|90%%[:safe]|params=25M|macs=4G|flops=8G|latency=10ms|step_time=0.5s|min_utilization=0.5\n"
	    "           (memory, latency and step_time need a unit; memory is capped to the device's usable memory;\n"
	    "           macs and flops count the forward pass of the whole batch, batch_size samples, not one;\n"
	    "           memory=16GiB:safe bounds the safe (upper) estimate of the peak instead of the expected one)\n"
	    "  --constraint 'hidden %% heads == 0'  NAME=VALUE or --set NAME=VALUE  --bind PARAMETER=HYPERPARAMETER\n"
	    "  --optimizer O  --dtype T  --convention C  --attention A  --grad-accum N  --checkpointing  --inference\n"
	    "  --zero-grad Z  --optimizer-impl I  --softmax-saves S  --pytorch V  --freeze SEL  --train SEL\n"
	    "  --lora-rank R  --lora-targets SEL  --lora-dropout P  --use-dora  --quantize MODE\n"
	    "           (as for estimate)  --timeout SECONDS  --json\n"
	    "  count: --engine bnb|z3   list: --offset K --limit N --cursor C   sample: --n N --seed S\n"
	    "  explain: --config JSON | --param P --value V   max, min: --param P [--per Q]\n"
	    "\n"
	    "prune options: SPACE.json|QUERY.json|DIR... --device D[,D...] --out DIR [--configs jsonl|csv]\n"
	    "  [--limit N] [--summary table|csv|json] [--server URL] [--token T] and the solver options\n"
	    "\n"
	    "example: dnnsat estimate --preset resnet50 batch_size=64 --device v100-16gb\n"
	    "         dnnsat count --preset resnet50 --space examples/spaces/resnet.json --budget memory=16GiB\n"
	    "         dnnsat prune examples/spaces --preset resnet50 --device t4,a100-40gb --out pruned/\n"
	    "exit status: 0 fits, 1 invalid or does not fit, 2 bad input, 3 deadline passed (bounds only, and\n"
	    "             an estimate for count; sample: fewer than N samples, those drawn printed),\n"
	    "             4 the server (prune --server) could not be reached or failed\n"
	    "environment: DNNSAT_DATA_DIR (the device catalog and templates), DNNSAT_TOKEN (prune --server)\n");
}

int
cli_help(const char *name, FILE *f, struct dn_error *err)
{
	const struct cli_cmd *c = cli_cmd_find(name);

	if (c == NULL)
		return cli_unknown_command(name, err);
	fputs(c->usage, f);
	return 0;
}
