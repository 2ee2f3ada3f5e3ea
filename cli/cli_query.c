/*
 * cli_query.c - the options of `dnnsat estimate` into a struct cli_query:
 *   --template NAME | --model FILE | --preset NAME   (one model; a preset
 *                                   alone finds its template)
 *   --set NAME=VALUE, or NAME=VALUE  (hyperparameters, repeatable)
 *   --device NAME | --device-file FILE
 *   --optimizer sgd|sgd_momentum|adam|adamw|adagrad|rmsprop|adam_8bit|adafactor|lion
 *               (and Hugging Face's optim names: cm_optimizer.c)
 *   --dtype fp32|fp16|bf16|mixed_fp16|mixed_bf16   --tf32   --no-cudnn-tf32   --inference
 *   --attention sdpa|eager|math|mem_efficient|flash   --grad-accum N   --checkpointing
 *   --freeze SELECTORS   --train SELECTORS   --lora-rank R   --lora-targets SELECTORS
 *   --lora-dropout P   --use-dora   --quantize MODE
 *   --zero-grad set_to_none|zeros   --optimizer-impl foreach|for_loop|fused
 *   --softmax-saves output|output_and_input   --pytorch MAJOR.MINOR
 *                                   (costmodel/cm_choice.c, as the query parser reads them)
 *   --json   --per-op
 * In steps: the arguments (query_option), the model (query_model), its
 * configuration (query_config), the device (query_device). Errors name the
 * option, with the closest names for unknown ones (cli_suggest.c).
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The arguments as read, before anything is loaded. */
struct query_args {
	const char *tmpl, *file, *device, *device_file;
	const char **sets;      /* NAME=VALUE texts, in order */
	int nsets;
	const char *optimizer;  /* --optimizer's text, or NULL */
	int implied;            /* the implementation it implies, or -1 */
	int impl_given;         /* --optimizer-impl was given */
};

void
cli_query_free(struct cli_query *q)
{
	cm_def_unref(q->def);
	free(q->config);
	cm_catalog_free(&q->catalog);
	json_decref(q->device_json);
	json_decref(q->budgets);
	json_decref(q->given);
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

/* Options that take a value and only record it: where it goes. */
static const char **
value_slot(const char *a, struct cli_query *q, struct query_args *s)
{
	if (strcmp(a, "--template") == 0)
		return &s->tmpl;
	if (strcmp(a, "--model") == 0)
		return &s->file;
	if (strcmp(a, "--preset") == 0)
		return &q->preset;
	if (strcmp(a, "--device") == 0)
		return &s->device;
	if (strcmp(a, "--device-file") == 0)
		return &s->device_file;
	if (strcmp(a, "--set") == 0)
		return &s->sets[s->nsets++];
	return NULL;
}

/* argv[*i] (and its value): 0, or -1 with err. */
static int
query_option(int argc, char **argv, int *i, struct cli_query *q, struct query_args *s, struct dn_error *err)
{
	const char *a = argv[*i], *v, *first, **slot = value_slot(a, q, s);

	if (slot != NULL) {
		first = *slot;
		if ((*slot = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		/* given once (--set repeats): the last one won unsaid */
		if (first != NULL && strcmp(a, "--set") != 0)
			return dn_error_set(err, DN_EINVAL, a, "given twice (%s and %s): give one", first, *slot);
		return 0;
	}
	if (strcmp(a, "--optimizer") == 0) {
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		int rc = cm_optimizer_parse(v, &q->wl.optimizer, &s->implied);
		if (rc != 0)
			return cm_optimizer_refuse(v, rc, "--optimizer", err);
		s->optimizer = v;
	} else if (strcmp(a, "--attention") == 0) {
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		if (cm_attention_parse(v, &q->wl.attention) != 0)
			return dn_error_set(err, DN_EINVAL, "--attention",
			    "unknown attention kernel \"%s\" (sdpa, eager, math, mem_efficient, flash)", v);
	} else if (strcmp(a, "--grad-accum") == 0) {
		char *end;
		long n;
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		n = strtol(v, &end, 10);
		if (*v == '\0' || *end != '\0' || n < 1 || n > 65536)
			return dn_error_set(err, DN_EINVAL, "--grad-accum",
			    "\"%s\" is not an integer from 1 to 65536 (micro-batches per optimizer step)", v);
		q->wl.grad_accum = (int)n;
	} else if (strcmp(a, "--dtype") == 0) {
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		if (cm_precision_parse(v, &q->wl.precision) != 0)
			return dn_error_set(err, DN_EINVAL, "--dtype",
			    "unknown dtype \"%s\" (fp32, fp16, bf16, mixed_fp16, mixed_bf16)", v);
	} else if (strcmp(a, "--checkpointing") == 0) {
		q->wl.checkpointing = 1;
	} else if (strcmp(a, "--use-dora") == 0) {
		q->wl.ft.use_dora = 1;
	} else if (strcmp(a, "--pytorch") == 0) {
		if (need_arg(argc, argv, i, err) == NULL)    /* applied before the options */
			return -1;
	} else if (cm_choice_by_option(a) != NULL) {       /* --zero-grad, --optimizer-impl, --softmax-saves */
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		s->impl_given |= strcmp(a, "--optimizer-impl") == 0;
		return cm_choice_from_option(cm_choice_by_option(a), v, &q->wl, err);
	} else if (strcmp(a, "--freeze") == 0 || strcmp(a, "--train") == 0 || strcmp(a, "--lora-targets") == 0) {
		struct cm_finetune *ft = &q->wl.ft;
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		if (a[2] == 'f')
			return cm_ft_add_selectors(ft->freeze, &ft->nfreeze, v, a, err);
		if (a[2] == 't')
			return cm_ft_add_selectors(ft->train, &ft->ntrain, v, a, err);
		return cm_ft_add_selectors(ft->targets, &ft->ntargets, v, a, err);
	} else if (strcmp(a, "--lora-rank") == 0) {
		char *end;
		long n;
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		n = strtol(v, &end, 10);
		if (*v != '\0' && *end == '\0' && n >= 1 && n <= 65536) {
			q->wl.ft.lora_rank = (int)n;
			q->wl.ft.rank_expr[0] = '\0';
		} else if (*v != '\0' && *end != '\0' && strlen(v) < sizeof q->wl.ft.rank_expr && (*v < '0' || *v > '9')) {
			/* ("-1" is a whole integer, out of range: below, not an
			 * expression whose rule fails for every configuration) */
			q->wl.ft.lora_rank = 1;   /* an expression over the hyperparameters */
			snprintf(q->wl.ft.rank_expr, sizeof q->wl.ft.rank_expr, "%s", v);
		} else
			return dn_error_set(err, DN_EINVAL, "--lora-rank", "\"%s\" is not an integer from 1 to 65536 "
			    "(or an expression over the hyperparameters)", v);
	} else if (strcmp(a, "--quantize") == 0) {
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		int rc = cm_quant_parse(v, &q->wl.ft.quant);
		if (rc == -2)
			return dn_error_set(err, DN_EINVAL, "--quantize", CM_QUANT_UNMODELLED "; int8 "
			    "(has_fp16_weights=False: frozen int8 base weights, as load_in_8bit) is");
		if (rc != 0)
			return dn_error_set(err, DN_EINVAL, "--quantize", "unknown mode \"%s\" (nf4, nf4-dq, fp4, fp4-dq: "
			    "bitsandbytes' 4-bit base weights, -dq: double quantization; int8: LLM.int8())", v);
	} else if (strcmp(a, "--lora-dropout") == 0) {
		char *end;
		double p;
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		p = strtod(v, &end);
		return cm_ft_set_dropout(&q->wl.ft, *v != '\0' && *end == '\0' ? p : -1.0, "--lora-dropout", err);
	} else if (strcmp(a, "--budget") == 0) {
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		if ((q->budgets == NULL && (q->budgets = json_object()) == NULL) ||
		    (q->given == NULL && (q->given = json_object()) == NULL))
			return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		return cli_budget_option(q->budgets, q->given, "--budget", v, err);
	} else if (strcmp(a, "--tf32") == 0) {
		q->wl.tf32 = 1;
	} else if (strcmp(a, "--no-cudnn-tf32") == 0) {
		q->wl.no_cudnn_tf32 = 1;
	} else if (strcmp(a, "--convention") == 0) {
		enum cm_macs_convention c;
		if ((v = need_arg(argc, argv, i, err)) == NULL)
			return -1;
		if (cm_macs_convention_parse(v, &c) != 0)
			return dn_error_set(err, DN_EINVAL, "--convention",
			    "unknown MACs convention \"%s\" (torchvision, nb201, fvcore)", v);
		q->wl.macs_convention = (int)c;
	} else if (strcmp(a, "--inference") == 0) {
		q->wl.training = 0;
	} else if (strcmp(a, "--json") == 0) {
		q->json = 1;
	} else if (strcmp(a, "--per-op") == 0) {
		q->per_op = 1;
	} else if (a[0] != '-' && strchr(a, '=') != NULL) {
		s->sets[s->nsets++] = a;
	} else if (a[0] != '-' && s->tmpl == NULL && s->file == NULL && q->preset == NULL) {
		q->preset = a;  /* `dnnsat estimate resnet50` */
	} else if (a[0] != '-') {
		return dn_error_set(err, DN_EINVAL, a, "unexpected argument: the model is already named "
		    "(hyperparameters are NAME=VALUE)");
	} else
		return cli_unknown_option("estimate", a, err);
	return 0;
}

/* The model: a file, a template (or a preset given as --template), or a
 * preset (or a template given as --preset). */
static int
query_model(struct cli_query *q, const struct query_args *s, struct dn_error *err)
{
	const char *name = s->tmpl != NULL ? s->tmpl : q->preset;
	json_t *root;
	int rc;

	if (s->tmpl != NULL && s->file != NULL)
		return dn_error_set(err, DN_EINVAL, "--template", "give one of --template and --model");
	if (s->file != NULL) {
		if (cli_load_model_file(s->file, &root, err) != 0)
			return -1;
		rc = cm_def_load_json(root, &q->def, err);
		json_decref(root);
		return rc;
	}
	if (name == NULL)
		return dn_error_set(err, DN_EINVAL, "--template", "name a model: --template NAME, --model FILE or "
		    "--preset NAME");
	if (cm_def_load_template(name, &q->def, err) == 0) {
		if (s->tmpl == NULL)
			q->preset = NULL;
		return 0;
	}
	dn_error_clear(err);
	if (cm_def_load_preset(name, &q->def, err) != 0) {
		cli_suggest_model(err, name);
		return -1;
	}
	q->preset = name;
	return 0;
}

/* Defaults, then the preset, then each NAME=VALUE in order. */
static int
query_config(struct cli_query *q, const struct query_args *s, struct dn_error *err)
{
	q->config = calloc((size_t)q->def->nhps + 1, sizeof *q->config);
	if (q->config == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	cm_config_defaults(q->def, q->config);
	if (q->preset != NULL && cm_config_apply_preset(q->def, q->preset, q->config, err) != 0)
		return -1;
	cm_ft_config_rank(q->def, &q->wl, q->config);
	for (int i = 0; i < s->nsets; i++) {
		char name[128];
		const char *eq = strchr(s->sets[i], '=');
		if (eq == NULL || eq == s->sets[i] || (size_t)(eq - s->sets[i]) >= sizeof name)
			return dn_error_set(err, DN_EINVAL, "--set", "\"%s\" is not NAME=VALUE", s->sets[i]);
		memcpy(name, s->sets[i], (size_t)(eq - s->sets[i]));
		name[eq - s->sets[i]] = '\0';
		if (cm_config_set(q->def, name, eq + 1, q->config, err) != 0) {
			cli_suggest_hparam(err, q->def, name);
			return -1;
		}
	}
	return 0;
}

static int
query_device(struct cli_query *q, const struct query_args *s, struct dn_error *err)
{
	const struct cm_device *d;
	char path[1024];
	json_t *j;
	int rc;

	if (s->device_file != NULL) {
		if (cli_load_json_file(s->device_file, "--device-file", &j, err) != 0)
			return -1;
		q->device_json = j;
		rc = cm_device_from_json(j, "--device-file", &q->device, err);
		return rc != 0 ? -1 : 0;
	}
	snprintf(path, sizeof path, "%s/devices.json", cm_data_dir());
	if (cm_catalog_load(path, &q->catalog, err) != 0 ||
	    cm_catalog_resolve(&q->catalog, s->device != NULL ? s->device : "a100-40gb", "--device", &d, err) != 0)
		return -1;
	q->device = *d;
	return 0;
}

int
cli_query_parse(int argc, char **argv, struct cli_query *q, struct dn_error *err)
{
	struct query_args s = { .device = NULL, .implied = -1 };       /* device NULL: a100-40gb */
	int rc = -1;

	memset(q, 0, sizeof *q);
	q->wl.training = 1;
	q->wl.optimizer = CM_OPT_ADAM;
	q->wl.precision = CM_PREC_FP32;
	q->wl.attention = CM_ATTN_SDPA;
	q->wl.grad_accum = 1;
	s.sets = calloc((size_t)argc + 1, sizeof *s.sets);
	if (s.sets == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	/* --pytorch sets the release's defaults before any option, wherever
	 * it stands: the options given explicitly win (cm_pytorch.c) */
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--pytorch") == 0) {
			int version = cm_pytorch_parse(argv[i + 1]);
			if (version < 0) {
				dn_error_set(err, DN_EINVAL, "--pytorch",
				    "\"%s\" is not a release such as 2.4 or 1.13 (MAJOR.MINOR)", argv[i + 1]);
				goto out;
			}
			cm_pytorch_apply(version, &q->wl);
		}
	for (int i = 1; i < argc; i++)
		if (query_option(argc, argv, &i, q, &s, err) != 0)
			goto out;
	if (cm_ft_check(&q->wl.ft, err) != 0 || cm_pytorch_check(&q->wl, "--attention", err) != 0 ||
	    cm_optimizer_settle(&q->wl, s.implied, s.optimizer != NULL ? s.optimizer : "", s.impl_given,
	    "--optimizer-impl", err) != 0)
		goto out;
	if (query_model(q, &s, err) == 0 && query_config(q, &s, err) == 0 && query_device(q, &s, err) == 0)
		rc = 0;
out:
	free(s.sets);
	return rc;
}
