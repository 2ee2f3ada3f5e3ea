/*
 * cli_main.c - `dnnsat`, the command-line front end: finds the command in
 * the table of cli_help.c and runs it; answers --help, -h and --version
 * (and `help COMMAND`, or COMMAND --help or --version anywhere in its
 * arguments, as git does) before any command parses its options, so every
 * command has a help of its own.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static int
is_help(const char *a)
{
	return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

static int
version(void)
{
	printf("dnnsat %s (cost model %s)\n", PACKAGE_VERSION, CM_VERSION);
	return 0;
}

int
main(int argc, char **argv)
{
	const struct cli_cmd *cmd;
	struct dn_error err;

	memset(&err, 0, sizeof err);
	if (argc < 2 || is_help(argv[1])) {
		cli_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return version();
	if (strcmp(argv[1], "help") == 0) {
		if (argc < 3) {
			cli_usage(stdout);
			return 0;
		}
		if (cli_help(argv[2], stdout, &err) == 0)
			return 0;
		cli_print_error(&err);
		return 2;
	}
	cmd = cli_cmd_find(argv[1]);
	if (cmd == NULL) {
		cli_unknown_command(argv[1], &err);
		cli_print_error(&err);
		return 2;
	}
	for (int i = 2; i < argc; i++)
		if (is_help(argv[i])) {
			fputs(cmd->usage, stdout);
			return 0;
		}
	for (int i = 2; i < argc; i++)
		if (strcmp(argv[i], "--version") == 0)
			return version();
	return cmd->run(argc - 1, argv + 1);
}
