/*
 * cli_common.c - options every model-evaluating subcommand takes:
 *   --template NAME | --model FILE | --preset NAME   (one model; a preset
 *                                   alone finds its template)
 *   --set NAME=VALUE, or NAME=VALUE  (hyperparameters, repeatable)
 *   --device NAME | --device-file FILE
 *   --optimizer sgd|sgd_momentum|adam|adamw|adagrad|rmsprop
 *   --dtype fp32|fp16|bf16|mixed_fp16|mixed_bf16   --tf32   --inference
 *   --json   --per-op
 * and the options that build a solver query as JSON (solver/query.h) for
 * count ... max, min and prune: cli_req_*.
 * Errors name the option; nothing here exits the process.
 */
#include "cli.h"
#include "query.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void
cli_print_error(const struct dn_error *err)
{
	if (err->path[0] != '\0')
		fprintf(stderr, "dnnsat: %s: %s\n", err->path, err->message);
	else
		fprintf(stderr, "dnnsat: %s\n", err->message);
}

void
cli_print_warnings(const struct sq_query *q, const char *prefix)
{
	for (int i = 0; i < q->nwarnings; i++)
		fprintf(stderr, "dnnsat: %s%swarning: %s\n", prefix ? prefix : "", prefix ? ": " : "", q->warnings[i]);
}

void
cli_print_budgets(FILE *f, const struct sq_query *q)
{
	int n = 0;

	for (int i = 0; i < q->nparts; i++)
		if (q->parts[i].kind == 1)
			fprintf(f, "%s%s", n++ ? ", " : "budgets: ", q->parts[i].label);
	if (n > 0)
		fputc('\n', f);
}

void
cli_query_free(struct cli_query *q)
{
	cm_def_unref(q->def);
	free(q->config);
	cm_catalog_free(&q->catalog);
	memset(q, 0, sizeof *q);
}

static const char *
need_arg(int argc, char **argv, int *i, struct dn_error *err)
{
	if (*i + 1 >= argc) {
		dn_error_set(err, DN_EINVAL, argv[*i], "needs a value");
		return NULL;
	}
	return argv[++*i];
}

int
cli_query_parse(int argc, char **argv, struct cli_query *q, struct dn_error *err)
{
	const char *tmpl = NULL, *file = NULL, *device = "a100-40gb", *device_file = NULL;
	const char **sets = calloc((size_t)argc + 1, sizeof *sets);
	int nsets = 0, rc = -1;
	char path[1024];

	memset(q, 0, sizeof *q);
	q->wl.training = 1;
	q->wl.optimizer = CM_OPT_ADAM;
	q->wl.precision = CM_PREC_FP32;
	if (sets == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (strcmp(a, "--template") == 0) {
			if ((tmpl = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
		} else if (strcmp(a, "--model") == 0) {
			if ((file = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
		} else if (strcmp(a, "--preset") == 0) {
			if ((q->preset = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
		} else if (strcmp(a, "--set") == 0) {
			if ((v = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
			sets[nsets++] = v;
		} else if (strcmp(a, "--device") == 0) {
			if ((device = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
		} else if (strcmp(a, "--device-file") == 0) {
			if ((device_file = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
		} else if (strcmp(a, "--optimizer") == 0) {
			if ((v = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
			if (cm_optimizer_parse(v, &q->wl.optimizer) != 0) {
				dn_error_set(err, DN_EINVAL, "--optimizer",
				    "unknown optimizer \"%s\" (sgd, sgd_momentum, adam, adamw, adagrad, rmsprop)", v);
				goto out;
			}
		} else if (strcmp(a, "--dtype") == 0) {
			if ((v = need_arg(argc, argv, &i, err)) == NULL)
				goto out;
			if (cm_precision_parse(v, &q->wl.precision) != 0) {
				dn_error_set(err, DN_EINVAL, "--dtype",
				    "unknown dtype \"%s\" (fp32, fp16, bf16, mixed_fp16, mixed_bf16)", v);
				goto out;
			}
		} else if (strcmp(a, "--tf32") == 0) {
			q->wl.tf32 = 1;
		} else if (strcmp(a, "--inference") == 0) {
			q->wl.training = 0;
		} else if (strcmp(a, "--json") == 0) {
			q->json = 1;
		} else if (strcmp(a, "--per-op") == 0) {
			q->per_op = 1;
		} else if (a[0] != '-' && strchr(a, '=') != NULL) {
			sets[nsets++] = a;
		} else if (a[0] != '-' && tmpl == NULL && file == NULL && q->preset == NULL) {
			q->preset = a;  /* `dnnsat estimate resnet50` */
		} else {
			dn_error_set(err, DN_EINVAL, a, "unknown option (see dnnsat --help)");
			goto out;
		}
	}
	if ((tmpl != NULL) + (file != NULL) > 1) {
		dn_error_set(err, DN_EINVAL, "--template", "give one of --template and --model");
		goto out;
	}
	if (file != NULL) {
		if (cm_def_load_file(file, &q->def, err) != 0)
			goto out;
	} else if (tmpl != NULL) {
		if (cm_def_load_template(tmpl, &q->def, err) != 0 &&
		    !(dn_error_clear(err), cm_def_load_preset(tmpl, &q->def, err) == 0 && (q->preset = tmpl)))
			goto out;
	} else if (q->preset != NULL) {
		if (cm_def_load_template(q->preset, &q->def, err) == 0)
			q->preset = NULL;
		else {
			dn_error_clear(err);
			if (cm_def_load_preset(q->preset, &q->def, err) != 0)
				goto out;
		}
	} else {
		dn_error_set(err, DN_EINVAL, "--template", "name a model: --template NAME, --model FILE or --preset NAME");
		goto out;
	}
	q->config = calloc((size_t)q->def->nhps + 1, sizeof *q->config);
	if (q->config == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	cm_config_defaults(q->def, q->config);
	if (q->preset != NULL && cm_config_apply_preset(q->def, q->preset, q->config, err) != 0)
		goto out;
	for (int i = 0; i < nsets; i++) {
		char name[128];
		const char *eq = strchr(sets[i], '=');
		if (eq == NULL || eq == sets[i] || (size_t)(eq - sets[i]) >= sizeof name) {
			dn_error_set(err, DN_EINVAL, "--set", "\"%s\" is not NAME=VALUE", sets[i]);
			goto out;
		}
		memcpy(name, sets[i], (size_t)(eq - sets[i]));
		name[eq - sets[i]] = '\0';
		if (cm_config_set(q->def, name, eq + 1, q->config, err) != 0)
			goto out;
	}
	if (device_file != NULL) {
		json_error_t jerr;
		json_t *d = json_load_file(device_file, JSON_REJECT_DUPLICATES, &jerr);
		if (d == NULL) {
			dn_error_set(err, DN_EINVAL, "--device-file", "%s: line %d: %s", device_file, jerr.line, jerr.text);
			goto out;
		}
		rc = cm_device_from_json(d, "--device-file", &q->device, err);
		json_decref(d);
		if (rc != 0) {
			rc = -1;
			goto out;
		}
	} else {
		const struct cm_device *d;
		snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
		if (cm_catalog_load(path, &q->catalog, err) != 0)
			goto out;
		if (cm_catalog_resolve(&q->catalog, device, "--device", &d, err) != 0)
			goto out;
		q->device = *d;
	}
	rc = 0;
out:
	free(sets);
	return rc;
}

/* ---- the options that build a solver query (count ... max, min, prune) ---- */

int
cli_load_json_file(const char *file, const char *what, json_t **out, struct dn_error *err)
{
	json_error_t jerr;
	struct stat st;
	FILE *f;
	int fd;

	*out = NULL;
	/* opened without blocking and checked before reading: a FIFO named
	 * x.json would otherwise wait for a writer forever */
	fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return dn_error_set(err, DN_EINVAL, what, "%s: cannot open it: %s", file, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int dir = S_ISDIR(st.st_mode);
		close(fd);
		return dn_error_set(err, DN_EINVAL, what, "%s: %s", file, dir ? "is a directory, not a JSON file" :
		    "is not a regular file (a FIFO, socket or device): refused, reading it could block forever");
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 || (f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return dn_error_set(err, DN_EINVAL, what, "%s: cannot read it: %s", file, strerror(errno));
	}
	*out = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	fclose(f);
	if (*out == NULL)
		return dn_error_set(err, DN_EINVAL, what, "%s: line %d, column %d: %s", file, jerr.line,
		    jerr.column, jerr.text);
	return 0;
}

void
cli_req_init(struct cli_req *r)
{
	r->req = json_object();
	r->budgets = json_object();
	r->constraints = json_array();
	r->fixed = json_object();
	r->workload = json_object();
	r->bind = json_object();
}

/* NAME=VALUE of --budget and --set into obj: the value as JSON when it
 * reads as JSON (1e9, true), else as a string ("16GiB", "90%"). */
static int
req_set_pair(json_t *obj, const char *opt, const char *v, struct dn_error *err)
{
	const char *eq = strchr(v, '=');
	char name[128];
	json_t *val;

	if (eq == NULL || eq == v || (size_t)(eq - v) >= sizeof name)
		return dn_error_set(err, DN_EINVAL, opt, "\"%s\" is not NAME=VALUE", v);
	memcpy(name, v, (size_t)(eq - v));
	name[eq - v] = '\0';
	val = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
	if (val == NULL)
		val = json_string(eq + 1);
	json_object_set_new(obj, name, val);
	return 0;
}

int
cli_req_option(struct cli_req *r, const char *a, const char *v, struct dn_error *err)
{
	static const char *const with_value[] = { "--preset", "--template", "--model", "--space", "--device",
		"--budget", "--set", "--constraint", "--optimizer", "--dtype", "--bind" };
	json_t *j;
	size_t i;

	if (strcmp(a, "--inference") == 0) {
		json_object_set_new(r->workload, "mode", json_string("inference"));
		return 1;
	}
	for (i = 0; i < sizeof with_value / sizeof with_value[0] && strcmp(a, with_value[i]) != 0; i++)
		;
	if (i == sizeof with_value / sizeof with_value[0])
		return 0;
	if (v == NULL)
		return dn_error_set(err, DN_EINVAL, a, "needs a value");
	if (strcmp(a, "--preset") == 0 || strcmp(a, "--template") == 0) {
		json_object_set_new(r->req, "model", json_pack("{s:s}", a + 2, v));
	} else if (strcmp(a, "--model") == 0 || strcmp(a, "--space") == 0) {
		if (cli_load_json_file(v, a, &j, err) != 0)
			return -1;
		json_object_set_new(r->req, a + 2, j);
	} else if (strcmp(a, "--device") == 0) {
		json_object_set_new(r->req, "device", json_string(v));
	} else if (strcmp(a, "--budget") == 0 || strcmp(a, "--set") == 0) {
		if (req_set_pair(a[2] == 'b' ? r->budgets : r->fixed, a, v, err) != 0)
			return -1;
	} else if (strcmp(a, "--bind") == 0) {
		const char *eq = strchr(v, '=');
		char name[256];
		if (eq == NULL || eq == v || eq[1] == '\0' || (size_t)(eq - v) >= sizeof name)
			return dn_error_set(err, DN_EINVAL, a, "\"%s\" is not PARAMETER=HYPERPARAMETER (e.g. hidden_size=hidden)", v);
		memcpy(name, v, (size_t)(eq - v));
		name[eq - v] = '\0';
		json_object_set_new(r->bind, name, json_string(eq + 1));
	} else if (strcmp(a, "--constraint") == 0) {
		json_array_append_new(r->constraints, json_string(v));
	} else
		json_object_set_new(r->workload, a + 2, json_string(v));
	return 2;
}

json_t *
cli_req_finish(struct cli_req *r)
{
	json_t *req = r->req;

	r->req = NULL;
	if (json_object_size(r->budgets) > 0)
		json_object_set(req, "budgets", r->budgets);
	if (json_array_size(r->constraints) > 0)
		json_object_set(req, "constraints", r->constraints);
	if (json_object_size(r->fixed) > 0)
		json_object_set(req, "fixed", r->fixed);
	if (json_object_size(r->workload) > 0)
		json_object_set(req, "workload", r->workload);
	if (json_object_size(r->bind) > 0)
		json_object_set(req, "bind", r->bind);
	cli_req_free(r);
	return req;
}

void
cli_req_free(struct cli_req *r)
{
	json_decref(r->req);
	json_decref(r->budgets);
	json_decref(r->constraints);
	json_decref(r->fixed);
	json_decref(r->workload);
	json_decref(r->bind);
	memset(r, 0, sizeof *r);
}
