/*
 * cli_import.c - `dnnsat import MODEL.onnx [--name NAME] [--dim FROM=TO]...
 * [--unknown error|elementwise] [--out FILE]`: an ONNX graph as a model file
 * (import/onnx_import.h) on stdout or in FILE, its symbolic dimensions as
 * hyperparameters. Warnings go to stderr. Exit 0, or 2 with the error.
 */
#include "cli.h"
#include "onnx_import.h"

#include <stdio.h>
#include <string.h>

#define MAX_RENAMES 32

static void
warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "dnnsat: import: warning: %s\n", msg);
}

static int
valid_rename(const char *s)
{
	const char *eq = strchr(s, '=');
	if (eq == NULL || eq == s || eq[1] == '\0')
		return 0;
	for (const char *p = eq + 1; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || (p > eq + 1 && *p >= '0' && *p <= '9')))
			return 0;
	return 1;
}

int
cli_import(int argc, char **argv)
{
	struct onnx_import_opts o;
	const char *renames[MAX_RENAMES + 1] = { NULL };
	const char *file = NULL, *outfile = NULL;
	struct dn_error err;
	int nren = 0, rc = 0;
	json_t *doc;

	memset(&o, 0, sizeof o);
	memset(&err, 0, sizeof err);
	o.warn = warn;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int takes = strcmp(a, "--name") == 0 || strcmp(a, "--dim") == 0 || strcmp(a, "--unknown") == 0 ||
		    strcmp(a, "--out") == 0;
		if (takes && v == NULL) {
			dn_error_set(&err, DN_EINVAL, a, "needs a value");
			goto fail;
		}
		if (strcmp(a, "--name") == 0) {
			o.name = v;
		} else if (strcmp(a, "--out") == 0) {
			outfile = v;
		} else if (strcmp(a, "--dim") == 0) {
			if (!valid_rename(v)) {
				dn_error_set(&err, DN_EINVAL, a, "'%s' is not DIM_PARAM=NAME (NAME a hyperparameter name: letters, digits, _)", v);
				goto fail;
			}
			if (nren == MAX_RENAMES) {
				dn_error_set(&err, DN_EINVAL, a, "more than %d renames", MAX_RENAMES);
				goto fail;
			}
			renames[nren++] = v;
		} else if (strcmp(a, "--unknown") == 0) {
			if (strcmp(v, "elementwise") == 0) {
				o.unknown_elementwise = 1;
			} else if (strcmp(v, "error") != 0) {
				dn_error_set(&err, DN_EINVAL, a, "'%s' is neither error nor elementwise", v);
				goto fail;
			}
		} else if (a[0] == '-' && a[1] != '\0') {
			cli_unknown_option("import", a, &err);
			goto fail;
		} else if (file == NULL) {
			file = a;
			continue;
		} else {
			dn_error_set(&err, DN_EINVAL, a, "a second model file (one ONNX file per import)");
			goto fail;
		}
		i++;
	}
	if (file == NULL) {
		dn_error_set(&err, DN_EINVAL, "", "no ONNX file (usage: dnnsat import MODEL.onnx [options])");
		goto fail;
	}
	o.renames = renames;
	doc = onnx_import_file(file, &o, &err);
	if (doc == NULL)
		goto fail;
	if (outfile != NULL)
		rc = json_dump_file(doc, outfile, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	else
		rc = json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER) || fputc('\n', stdout) == EOF;
	json_decref(doc);
	if (rc != 0) {
		dn_error_set(&err, DN_EINVAL, "--out", "cannot write '%s'", outfile ? outfile : "stdout");
		goto fail;
	}
	return 0;
fail:
	cli_print_error(&err);
	return 2;
}

int
cli_load_model_file(const char *file, json_t **out, struct dn_error *err)
{
	size_t len = strlen(file);
	struct onnx_import_opts o;

	if (len < 5 || strcmp(file + len - 5, ".onnx") != 0)
		return cli_load_json_file(file, "--model", out, err);
	memset(&o, 0, sizeof o);
	o.warn = warn;
	*out = onnx_import_file(file, &o, err);
	if (*out == NULL) {
		char msg[sizeof err->message];
		dn_fmt(msg, sizeof msg, "%s", err->message);
		dn_error_clear(err);
		return dn_error_set(err, DN_EINVAL, "--model", "%s: %s", file, msg);
	}
	return 0;
}
