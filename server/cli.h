/*
 * cli.h - the dnnsat command line: one file per subcommand (cli_*.c), the
 * shared option handling in cli_common.c. Every subcommand returns the
 * process exit status: 0 success, 1 a negative answer (an infeasible
 * configuration), 2 bad input (with a message on stderr naming the field).
 */
#ifndef DN_CLI_H
#define DN_CLI_H

#include "costmodel.h"

/* What estimate-like subcommands share: the model, its configuration, the
 * device and the workload, read from the options. */
struct cli_query {
	struct cm_model_def *def;
	union expr_val *config;
	struct cm_device_catalog catalog;
	struct cm_device device;
	struct cm_workload wl;
	const char *preset;
	int json;
	int per_op;
};

/* Parses the common options (see cli_usage) from argv; leaves unknown ones
 * to the caller through `extra` (returns their count). 0 or -1 with err. */
int cli_query_parse(int argc, char **argv, struct cli_query *q, struct dn_error *err);
void cli_query_free(struct cli_query *q);
void cli_print_error(const struct dn_error *err);

int cli_estimate(int argc, char **argv);
int cli_solve(int argc, char **argv);

struct fs_engine;
struct sq_query;
/* explain and max (cli_explain.c), on an engine cli_solve prepared */
int cli_solve_more(const char *cmd, struct fs_engine *e, struct sq_query *q, double timeout,
    const char *config, const char *param, const char *value, const char *per, int json_out);
int cli_templates(int argc, char **argv);
int cli_devices(int argc, char **argv);

#endif
