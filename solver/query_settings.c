/*
 * query_settings.c - the workload settings a search space searches, each
 * configuration costed with its own (see query_settings.h): one taker per
 * setting checks the parameter's form and values and, where they are what
 * the setting takes, adds the hyperparameter (def_add_hp) and points the
 * workload at it. A taker answers 1 (taken), 0 (not in a form it takes:
 * the parameter stays a setting of the workload, with the warning) or -1.
 */
#include "query_settings.h"
#include "dn_suggest.h"

#include <string.h>

/* Makes root (a changed copy of the model's JSON, taken) q's model. 0, or
 * -1 with err. */
static int
def_reload(struct sq_query *q, json_t *root, struct dn_error *err)
{
	struct cm_model_def *def;
	int rc = cm_def_load_json(root, &def, err);

	json_decref(root);
	if (rc != 0)
		return -1;
	cm_def_unref(q->def);
	q->def = def;
	return 0;
}

/* Gives q's model one more hyperparameter, name with spec (a copy of the
 * model's JSON: templates are shared). 0, or -1 with err. */
static int
def_add_hp(struct sq_query *q, const char *name, json_t *spec, struct dn_error *err)
{
	json_t *root = json_deep_copy(q->def->root), *hps;

	hps = root != NULL ? json_object_get(root, "hyperparameters") : NULL;
	if (root != NULL && hps == NULL && json_object_set_new(root, "hyperparameters", hps = json_object()) != 0)
		hps = NULL;
	if (spec == NULL || hps == NULL || json_object_set(hps, name, spec) != 0) {
		json_decref(spec);
		json_decref(root);
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	}
	json_decref(spec);
	return def_reload(q, root, err);
}

/* Sets the default of q's model's hyperparameter `name` to v (a new
 * reference, taken). 0, or -1 with err. */
static int
def_set_default(struct sq_query *q, const char *name, json_t *v, struct dn_error *err)
{
	json_t *root = json_deep_copy(q->def->root);
	json_t *hp = json_object_get(json_object_get(root, "hyperparameters"), name);

	if (v == NULL || hp == NULL || json_object_set_new(hp, "default", v) != 0) {
		if (hp == NULL)
			json_decref(v);
		json_decref(root);
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	}
	return def_reload(q, root, err);
}

/* A categorical hyperparameter `key` of the values `vals` (strings),
 * described as `what` "as the search space picks it". Its index + 1 (the
 * workload's *_hp), or -1 with err. */
static int
add_categorical(struct sq_query *q, const char *key, const json_t *vals, const char *what, struct dn_error *err)
{
	char text[160];

	dn_fmt(text, sizeof text, "%s, as the search space picks it (each configuration costed with its own)", what);
	if (def_add_hp(q, key, json_pack("{s:s,s:O,s:O,s:s}", "type", "categorical", "values", vals, "default",
	    json_array_get(vals, 0), "description", text), err) != 0)
		return -1;
	return 1 + cm_def_find_hp(q->def, key);
}

/* The room takers have to say why a parameter is not costed per
 * configuration (the warning's reason). */
#define WHY_LEN 400

/* Whether `type` is choice and vals at most `max` distinct strings of
 * `what` (else why says which rule fails). */
static int
distinct_names(const char *type, const json_t *vals, size_t max, const char *what, char *why)
{
	size_t n = json_array_size(vals);

	if (strcmp(type, "choice") != 0 || n > max) {
		dn_fmt(why, WHY_LEN, "a search of %s is a choice of at most %zu names", what, max);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(vals, i));
		if (s == NULL) {
			dn_fmt(why, WHY_LEN, "its value %zu is not the name of %s", i, what);
			return 0;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(s, json_string_value(json_array_get(vals, k))) == 0) {
				dn_fmt(why, WHY_LEN, "\"%.64s\" is listed twice", s);
				return 0;
			}
	}
	return 1;
}

/* The optimizer (NNI's examples: "optimizer": a choice of "Adam", "SGD",
 * ...): each value a name dnnsat models (cm_optimizer_choice: its
 * optimizer, step and states, costed by mem_plan.c under a guard on it). */
static int
take_optimizer(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	struct cm_opt_choice ch[CM_MAX_OPT_CHOICES];
	size_t n = json_array_size(vals);
	int hp;

	if (!distinct_names(type, vals, CM_MAX_OPT_CHOICES, "optimizers", why))
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(vals, i));
		if (cm_optimizer_choice(s, &q->wl, &ch[i]) != 0) {
			struct dn_error e;
			enum cm_optimizer o;
			int impl;
			memset(&e, 0, sizeof e);
			cm_optimizer_refuse(s, cm_optimizer_parse(s, &o, &impl), "", &e);
			dn_fmt(why, WHY_LEN, "%s", e.message);
			return 0;
		}
	}
	if ((hp = add_categorical(q, key, vals, "the optimizer", err)) < 0)
		return -1;
	q->wl.opt_hp = hp;
	q->wl.nopt_choices = (int)n;
	memcpy(q->wl.opt_choices, ch, n * sizeof *ch);
	return 1;
}

/* Whether the values are integers from 1 to 65536: a choice of them, or
 * a randint from 1 (NNI's upper bound exclusive). */
static int
counts_1_65536(const char *type, const json_t *vals)
{
	if (strcmp(type, "choice") == 0) {
		for (size_t i = 0; i < json_array_size(vals); i++) {
			const json_t *v = json_array_get(vals, i);
			if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65536)
				return 0;
		}
		return 1;
	}
	return strcmp(type, "randint") == 0 && json_array_size(vals) == 2 &&
	    json_is_number(json_array_get(vals, 0)) && json_number_value(json_array_get(vals, 0)) >= 1 &&
	    json_number_value(json_array_get(vals, 1)) <= 65537;
}

/* An int hyperparameter `key` from 1 to 65536 (default dflt), described
 * as `what`. Its index + 1, or -1 with err. */
static int
add_count(struct sq_query *q, const char *key, int dflt, const char *what, struct dn_error *err)
{
	if (def_add_hp(q, key, json_pack("{s:s,s:i,s:i,s:i,s:s}", "type", "int", "min", 1, "max", 65536,
	    "default", dflt, "description", what), err) != 0)
		return -1;
	return 1 + cm_def_find_hp(q->def, key);
}

/* Gradient accumulation: an int hyperparameter. */
static int
take_accum(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	int hp;

	if (!counts_1_65536(type, vals)) {
		dn_fmt(why, WHY_LEN, "its values must be integers from 1 to 65536 (a choice, or a randint from 1)");
		return 0;
	}
	if ((hp = add_count(q, key, 1, "micro-batches per optimizer step, as the search space picks them", err)) < 0)
		return -1;
	q->wl.accum_hp = hp;
	return 1;
}

/* LoRA's rank (peft's LoraConfig.r), where the workload has LoRA of a
 * fixed rank: the model's int hyperparameter of that name (the templates'
 * lora_r, there for this) or a new one; the workload's rank becomes its
 * name (rank_expr), as `--lora-rank lora_r` makes it. */
static int
take_lora_rank(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	struct cm_finetune *ft = &q->wl.ft;
	int h = cm_def_find_hp(q->def, key);

	/* a model's own "r" or "lora_rank" is the model's: only lora_r, the
	 * templates' hyperparameter for it, is taken as the rank */
	if (ft->lora_rank == 0 || strlen(key) >= sizeof ft->rank_expr ||
	    (h >= 0 && (q->def->hps[h].type != CM_HP_INT || strcmp(key, "lora_r") != 0)))
		return 0;
	if (ft->rank_expr[0] != '\0') {
		dn_fmt(why, WHY_LEN, "the workload's LoRA rank is the expression \"%s\" already", ft->rank_expr);
		return 0;
	}
	if (!counts_1_65536(type, vals)) {
		dn_fmt(why, WHY_LEN, "a LoRA rank is an integer from 1 to 65536 (a choice, or a randint from 1)");
		return 0;
	}
	if (h < 0 && add_count(q, key, ft->lora_rank, "LoRA rank, as the search space picks it", err) < 0)
		return -1;
	dn_fmt(ft->rank_expr, sizeof ft->rank_expr, "%s", key);
	return 1;
}

/* peft's lora_dropout, where the workload has LoRA: a real
 * hyperparameter. Its costs depend only on whether it is above 0
 * (op_linear.c): a choice of numbers from 0 to below 1, or a quniform
 * within them (a grid that may hold 0), costs each configuration with
 * its own (wl->ft.dropout_hp); a uniform or loguniform within them
 * draws 0 with probability 0, so every configuration has the dropout
 * (the workload's lora_dropout set to its upper end), never the cheaper
 * p = 0 that only its lowest end would give. */
static int
take_lora_dropout(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	int ok = q->wl.ft.lora_rank > 0, grid = strcmp(type, "choice") == 0 || strcmp(type, "quniform") == 0;
	double hi = json_number_value(json_array_get(vals, 1));

	if (ok && strcmp(type, "choice") == 0) {
		for (size_t i = 0; i < json_array_size(vals); i++) {
			const json_t *v = json_array_get(vals, i);
			ok = ok && json_is_number(v) && json_number_value(v) >= 0.0 && json_number_value(v) < 1.0;
		}
	} else
		ok = ok && (strcmp(type, "uniform") == 0 || strcmp(type, "quniform") == 0 ||
		    strcmp(type, "loguniform") == 0) && json_array_size(vals) >= 2 &&
		    json_is_number(json_array_get(vals, 0)) && json_is_number(json_array_get(vals, 1)) &&
		    json_number_value(json_array_get(vals, 0)) >= 0.0 && hi > 0.0 && hi < 1.0;
	if (!ok) {
		if (q->wl.ft.lora_rank > 0)
			dn_fmt(why, WHY_LEN, "peft's lora_dropout is a number from 0 to below 1 (a choice, a quniform, "
			    "a uniform or a loguniform)");
		return 0;
	}
	if (def_add_hp(q, key, json_pack("{s:s,s:f,s:f,s:f,s:s}", "type", "real", "min", 0.0, "max", 1.0, "default",
	    q->wl.ft.lora_dropout, "description", "peft's lora_dropout, as the search space picks it"), err) != 0)
		return -1;
	if (grid)
		q->wl.ft.dropout_hp = 1 + cm_def_find_hp(q->def, key);
	else
		q->wl.ft.lora_dropout = hi;
	return 1;
}

/* The attention kernel: a choice of "eager", "sdpa", "flash_attention_2"
 * (Hugging Face's names) or dnnsat's "math", "mem_efficient", "flash";
 * each value's kernel resolved per device by the model builder, which
 * builds each attention layer's kernel once per kernel under the guard of
 * its values (ob_attention_alts). A kernel the device cannot run makes its
 * configurations invalid, the rule named; one the workload's PyTorch has
 * not is an error at its value. */
static int
take_attention(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	enum cm_attention ch[CM_MAX_ATTN_CHOICES];
	size_t n = json_array_size(vals);
	int hp;

	if (!distinct_names(type, vals, CM_MAX_ATTN_CHOICES, "attention kernels", why))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (cm_attention_parse(json_string_value(json_array_get(vals, i)), &ch[i]) != 0) {
			static const char *const kernels[] = { "eager", "sdpa", "flash_attention_2", "math", "mem_efficient",
				"flash" };
			char near[96] = "";
			dn_suggest(json_string_value(json_array_get(vals, i)), kernels, 6, near, sizeof near);
			dn_fmt(why, WHY_LEN, "\"%.64s\" is not an attention kernel (eager, sdpa, flash_attention_2, math, "
			    "mem_efficient, flash)%s%s%s", json_string_value(json_array_get(vals, i)),
			    near[0] ? "; did you mean " : "", near, near[0] ? "?" : "");
			return 0;
		}
	/* each checked as the workload's would be */
	for (size_t i = 0; i < n; i++) {
		struct cm_workload wj = q->wl;
		char path[128];
		wj.attention = ch[i];
		dn_fmt(path, sizeof path, "$.space.%s._value[%zu]", key, i);
		if (cm_pytorch_check(&wj, path, err) != 0)
			return -1;
	}
	if ((hp = add_categorical(q, key, vals, "the attention kernel", err)) < 0)
		return -1;
	q->wl.attn_hp = hp;
	q->wl.nattn_choices = (int)n;
	for (size_t i = 0; i < n; i++)
		q->wl.attn_choices[i] = (uint8_t)ch[i];
	return 1;
}

/* LoRA's target modules (peft's target_modules), where the workload has
 * LoRA: a choice of strings, each a comma list of selectors (Optuna's
 * suggest_categorical takes no lists: "q_proj,v_proj" against
 * "all-linear"), distinct, at most CM_FT_MAX_TGT_CHOICES; a categorical
 * of them. op_linear.c gives a linear adapters where a list that picks it
 * is chosen; a list that picks no linear makes its configurations
 * invalid. */
static int
take_lora_targets(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	struct cm_finetune *ft = &q->wl.ft;
	size_t n = json_array_size(vals);
	int hp;

	if (ft->lora_rank == 0)
		return 0;
	if (!distinct_names(type, vals, CM_FT_MAX_TGT_CHOICES, "LoRA target lists (comma-separated strings)", why))
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct dn_error e;
		memset(&e, 0, sizeof e);
		ft->ntgt[i] = 0;
		if (cm_ft_add_selectors(ft->tgt_choices[i], &ft->ntgt[i], json_string_value(json_array_get(vals, i)),
		    "", &e) != 0) {
			dn_fmt(why, WHY_LEN, "%s", e.message);
			return 0;
		}
	}
	if ((hp = add_categorical(q, key, vals, "LoRA's target modules", err)) < 0)
		return -1;
	ft->targets_hp = hp;
	ft->ntgt_choices = (int)n;
	return 1;
}

static int note(struct sq_query *q, const char *key, const char *why, struct dn_error *err);

/* A choice of true and false (Optuna's suggest_categorical(name, [True,
 * False]), NNI's choice of true and false; 0 and 1 too), at most one of
 * each: the values' names as the space spells them ("true", "1", ...)
 * into *names (a new array), *on the index of the true one (-1: none).
 * 1, 0 when vals are not such a choice, -1 out of memory. */
static int
bool_choice(const char *type, const json_t *vals, int *on, json_t **names)
{
	size_t n = json_array_size(vals);
	int off = -1, bad = 0;

	*on = -1;
	*names = NULL;
	if (strcmp(type, "choice") != 0 || n > 2)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(vals, i);
		int truth = json_is_boolean(v) ? json_is_true(v) :
		    json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1) ?
		    (int)json_integer_value(v) : -1;
		int *slot = truth == 1 ? on : &off;
		bad |= truth < 0 || *slot >= 0;         /* not a boolean, or twice the same */
		*slot = (int)i;
	}
	if (bad)
		return 0;
	*names = json_array();
	for (size_t i = 0; *names != NULL && i < n; i++) {
		const json_t *v = json_array_get(vals, i);
		const char *text = json_is_boolean(v) ? (json_is_true(v) ? "true" : "false") :
		    json_integer_value(v) ? "1" : "0";
		if (json_array_append_new(*names, json_string(text)) != 0) {
			json_decref(*names);
			*names = NULL;
		}
	}
	return *names != NULL ? 1 : -1;
}

/* A setting that is on or off (`what`): a categorical of the values as
 * the space spells them (bool_choice); *hp its index + 1, *on the index of
 * the true value. A taker's answer. */
static int
take_bool(struct sq_query *q, const char *key, const char *type, const json_t *vals, const char *what, char *why,
    struct dn_error *err, int *hp, int *on)
{
	json_t *names;
	int h, o, rc = bool_choice(type, vals, &o, &names);

	if (rc == 0) {
		dn_fmt(why, WHY_LEN, "its values must be a choice of true and false (or 1 and 0)");
		return 0;
	}
	if (rc < 0)
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	h = add_categorical(q, key, names, what, err);
	json_decref(names);
	if (h < 0)
		return -1;
	*hp = h;
	*on = o;
	return 1;
}

/* Gradient checkpointing (take_bool): wl->ckpt_on is the index of the
 * true value. */
static int
take_ckpt(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	return take_bool(q, key, type, vals, "gradient checkpointing", why, err, &q->wl.ckpt_hp, &q->wl.ckpt_on);
}

/* The precision as a name (Lightning's precision, the workload's dtype,
 * Accelerate's mixed_precision: cm_precision_parse_as, as the key says):
 * a choice of distinct names (Lightning's integers 16, 32 too), at most
 * CM_MAX_PREC_CHOICES; a categorical of them (the integers as strings).
 * The model is built once per precision (model_build.c). */
static int
take_precision_name(struct sq_query *q, const char *key, enum cm_prec_names conv, const char *type,
    const json_t *vals, char *why, struct dn_error *err)
{
	enum cm_precision ch[CM_MAX_PREC_CHOICES];
	size_t n = json_array_size(vals);
	json_t *names;
	int hp;

	if (strcmp(type, "choice") != 0 || n > CM_MAX_PREC_CHOICES) {
		dn_fmt(why, WHY_LEN, "a search of the precision is a choice of at most %d names", CM_MAX_PREC_CHOICES);
		return 0;
	}
	if ((names = json_array()) == NULL)
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(vals, i);
		char text[32];
		if (json_is_integer(v) && conv == CM_PREC_NAMES_LIGHTNING)
			dn_fmt(text, sizeof text, "%lld", (long long)json_integer_value(v));
		else if (json_is_string(v) && strlen(json_string_value(v)) < sizeof text)
			dn_fmt(text, sizeof text, "%s", json_string_value(v));
		else {
			dn_fmt(why, WHY_LEN, "its value %zu is not the name of a precision", i);
			json_decref(names);
			return 0;
		}
		if (cm_precision_parse_as(conv, text, &ch[i], why, WHY_LEN) != 0) {
			json_decref(names);
			return 0;
		}
		for (size_t k = 0; k < i; k++)
			if (strcmp(text, json_string_value(json_array_get(names, k))) == 0) {
				dn_fmt(why, WHY_LEN, "\"%s\" is listed twice", text);
				json_decref(names);
				return 0;
			}
		if (json_array_append_new(names, json_string(text)) != 0) {
			json_decref(names);
			return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
		}
	}
	hp = add_categorical(q, key, names, "the precision", err);
	json_decref(names);
	if (hp < 0)
		return -1;
	q->wl.prec_hp = hp;
	q->wl.nprec_choices = (int)n;
	for (size_t i = 0; i < n; i++)
		q->wl.prec_choices[i] = (uint8_t)ch[i];
	return 1;
}

/* Hugging Face's TrainingArguments flags fp16 and bf16, one or both
 * searched (bool_choice each): cm_precision_alts makes each
 * configuration's precision of them, the flag not searched as the
 * workload's precision says. A flag in another form is warned about and
 * left to the workload. 1 when either is taken, 0, or -1. */
static int
take_hf_flags(struct sq_query *q, const json_t *fp16, const json_t *bf16, struct dn_error *err)
{
	const json_t *p[2] = { fp16, bf16 };
	static const char *const keys[2] = { "fp16", "bf16" };
	int taken = 0;

	for (int f = 0; f < 2; f++) {
		const json_t *vals = json_object_get(p[f], "_value");
		const char *type = json_string_value(json_object_get(p[f], "_type"));
		char what[64];
		json_t *names;
		int on, hp, rc;
		if (p[f] == NULL)
			continue;
		rc = bool_choice(type, vals, &on, &names);
		if (rc < 0)
			return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
		if (rc == 0) {
			if (note(q, keys[f], "its values must be a choice of true and false (or 1 and 0)", err) != 0)
				return -1;
			continue;
		}
		dn_fmt(what, sizeof what, "Hugging Face's %s flag (autocast %s)", keys[f], keys[f]);
		hp = add_categorical(q, keys[f], names, what, err);
		json_decref(names);
		if (hp < 0)
			return -1;
		if (f == 0) {
			q->wl.fp16_hp = hp;
			q->wl.fp16_on = on;
		} else {
			q->wl.bf16_hp = hp;
			q->wl.bf16_on = on;
		}
		taken = 1;
	}
	return taken;
}

/* The quantization by name (quantize: Lightning's BitsandbytesPrecision
 * modes, and "none"): a choice of distinct names, at most
 * CM_QUANT_MAX_CHOICES; a categorical of them. */
static int
take_quant_name(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	struct cm_quant_search *qs = &q->wl.ft.qs;
	uint8_t ch[CM_QUANT_MAX_CHOICES];
	size_t n = json_array_size(vals);
	int hp;

	if (!distinct_names(type, vals, CM_QUANT_MAX_CHOICES, "quantization modes", why))
		return 0;
	for (size_t i = 0; i < n; i++) {
		const char *v = json_string_value(json_array_get(vals, i));
		int rc = strcmp(v, "none") == 0 ? (ch[i] = CM_QUANT_NONE, 0) : cm_quant_parse(v, &ch[i]);
		if (rc == -2) {
			dn_fmt(why, WHY_LEN, "%s", CM_QUANT_UNMODELLED);
			return 0;
		}
		if (rc != 0) {
			dn_fmt(why, WHY_LEN, "\"%.64s\" is not a quantization (none, nf4, nf4-dq, fp4, fp4-dq, int8)", v);
			return 0;
		}
	}
	if ((hp = add_categorical(q, key, vals, "the base weights' quantization", err)) < 0)
		return -1;
	qs->hp = hp;
	qs->nchoices = (int)n;
	memcpy(qs->choices, ch, n);
	return 1;
}

/* One of Hugging Face's BitsAndBytesConfig fields a space searches: the
 * flags (bool_choice) or bnb_4bit_quant_type (a choice of "nf4" and
 * "fp4"). 1 taken, 0 (why says why), -1. */
static int
take_bnb_field(struct sq_query *q, int f, const char *key, const json_t *p, char *why, struct dn_error *err)
{
	struct cm_quant_search *qs = &q->wl.ft.qs;
	const json_t *vals = json_object_get(p, "_value");
	const char *type = json_string_value(json_object_get(p, "_type"));
	json_t *names = NULL;
	int on = -1, hp, rc;

	if (f == 2) {
		if (!distinct_names(type, vals, 2, "4-bit types (nf4, fp4)", why))
			return 0;
		for (size_t i = 0; i < json_array_size(vals); i++) {
			const char *v = json_string_value(json_array_get(vals, i));
			if (strcmp(v, "nf4") != 0 && strcmp(v, "fp4") != 0) {
				dn_fmt(why, WHY_LEN, "\"%.64s\" is not a 4-bit type (nf4, fp4)", v);
				return 0;
			}
		}
		if ((hp = add_categorical(q, key, vals, "bitsandbytes' 4-bit type", err)) < 0)
			return -1;
		qs->type_hp = hp;
		for (size_t i = 0; i < json_array_size(vals); i++)
			if (strcmp(json_string_value(json_array_get(vals, i)), "nf4") == 0)
				qs->type_nf4 |= (uint8_t)(1u << i);
		return 1;
	}
	rc = bool_choice(type, vals, &on, &names);
	if (rc < 0)
		return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
	if (rc == 0) {
		dn_fmt(why, WHY_LEN, "its values must be a choice of true and false (or 1 and 0)");
		return 0;
	}
	hp = add_categorical(q, key, names, "a BitsAndBytesConfig flag", err);
	json_decref(names);
	if (hp < 0)
		return -1;
	if (f == 0) {
		qs->l4_hp = hp;
		qs->l4_on = on;
	} else if (f == 1) {
		qs->l8_hp = hp;
		qs->l8_on = on;
	} else {
		qs->dq_hp = hp;
		qs->dq_on = on;
	}
	return 1;
}

/* The base weights' quantization: by name (quantize) or by Hugging Face's
 * BitsAndBytesConfig fields, any of them (cm_quant_alts). A training
 * workload quantizes only frozen linears, so without LoRA or freeze it is
 * left to the workload with a warning; so are the 4-bit fields where no
 * configuration has 4-bit weights. quantize beside a field is an error. */
static int
take_quant(struct sq_query *q, const json_t *space, struct dn_error *err)
{
	static const char *const keys[] = { "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type",
		"bnb_4bit_use_double_quant", "quantize" };
	const struct cm_finetune *ft = &q->wl.ft;
	const json_t *p[5];
	int taken = -1, any = 0;

	for (int k = 0; k < 5; k++) {
		p[k] = json_object_get(space, keys[k]);
		if (json_string_value(json_object_get(p[k], "_type")) == NULL ||
		    json_array_size(json_object_get(p[k], "_value")) == 0 || cm_def_find_hp(q->def, keys[k]) >= 0)
			p[k] = NULL;
		any |= p[k] != NULL;
	}
	if (!any)
		return 0;
	if (q->wl.training && ft->lora_rank == 0 && ft->nfreeze == 0) {
		for (int k = 0; k < 5; k++)
			if (p[k] != NULL && note(q, keys[k], "quantized weights take no gradient, and the workload trains "
			    "every linear (give LoRA or freeze)", err) != 0)
				return -1;
		return 0;
	}
	if (p[4] != NULL) {
		char why[WHY_LEN] = "";
		int rc = take_quant_name(q, keys[4], json_string_value(json_object_get(p[4], "_type")),
		    json_object_get(p[4], "_value"), why, err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			taken = 4;
		else if (note(q, keys[4], why, err) != 0)
			return -1;
	}
	for (int k = 0; taken != 4 && k < 4; k++) {
		char why[WHY_LEN] = "";
		int rc;
		if (p[k] == NULL)
			continue;
		if (k >= 2 && q->wl.ft.qs.l4_hp == 0 && cm_quant_bits(ft->quant) != 4)
			dn_fmt(why, WHY_LEN, "it applies to 4-bit weights, which neither the workload nor the space "
			    "(load_in_4bit) has");
		else if ((rc = take_bnb_field(q, k, keys[k], p[k], why, err)) < 0)
			return -1;
		else if (rc > 0) {
			if (taken < 0)
				taken = k;
			continue;
		}
		if (note(q, keys[k], why, err) != 0)
			return -1;
	}
	for (int k = 0; taken == 4 && k < 4; k++)
		if (p[k] != NULL) {
			char path[64];
			dn_fmt(path, sizeof path, "$.space.%s", keys[k]);
			return dn_error_set(err, DN_EINVAL, path, "sets what \"quantize\" already sets (two names of one "
			    "setting): give one");
		}
	return 0;
}

/* The precision, in any of its names (the first the space has is taken;
 * fp16 and bf16 together are one): another of them is an error. */
static int
take_precision(struct sq_query *q, const json_t *space, struct dn_error *err)
{
	static const struct { const char *key; int conv; } names[] = {
		{ "precision", CM_PREC_NAMES_LIGHTNING }, { "dtype", CM_PREC_NAMES_WORKLOAD },
		{ "mixed_precision", CM_PREC_NAMES_ACCELERATE }, { "fp16", -1 }, { "bf16", -1 },
	};
	const json_t *p[5];
	int taken = -1;

	for (int k = 0; k < 5; k++) {
		const json_t *vals;
		p[k] = json_object_get(space, names[k].key);
		vals = json_object_get(p[k], "_value");
		/* a hyperparameter of the model is the model's */
		if (json_string_value(json_object_get(p[k], "_type")) == NULL || json_array_size(vals) == 0 ||
		    cm_def_find_hp(q->def, names[k].key) >= 0)
			p[k] = NULL;
	}
	for (int k = 0; k < 3 && taken < 0; k++) {
		char why[WHY_LEN] = "";
		int rc;
		if (p[k] == NULL)
			continue;
		rc = take_precision_name(q, names[k].key, (enum cm_prec_names)names[k].conv,
		    json_string_value(json_object_get(p[k], "_type")), json_object_get(p[k], "_value"), why, err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			taken = k;
		else if (note(q, names[k].key, why, err) != 0)
			return -1;
	}
	if (taken < 0 && (p[3] != NULL || p[4] != NULL)) {
		int rc = take_hf_flags(q, p[3], p[4], err);
		if (rc < 0)
			return -1;
		if (rc > 0)
			taken = p[3] != NULL ? 3 : 4;
	}
	for (int k = 0; taken >= 0 && k < 5; k++) {
		char path[64];
		if (k == taken || p[k] == NULL || (taken >= 3 && k >= 3))
			continue;
		dn_fmt(path, sizeof path, "$.space.%s", names[k].key);
		return dn_error_set(err, DN_EINVAL, path, "sets what \"%s\" already sets (two names of one setting): "
		    "give one", names[taken].key);
	}
	return 0;
}

/* Whether an optimizer the workload or the space's choice of it runs is
 * one of o1, o2 (torch.optim's own states: not bitsandbytes' or fused
 * 32-bit ones). */
static int
runs_optimizer(const struct sq_query *q, enum cm_optimizer o1, enum cm_optimizer o2)
{
	if (q->wl.opt_hp == 0)
		return (q->wl.optimizer == o1 || q->wl.optimizer == o2) &&
		    q->wl.optimizer_states == CM_OPT_STATES_NATIVE;
	for (int i = 0; i < q->wl.nopt_choices; i++)
		if ((q->wl.opt_choices[i].optimizer == o1 || q->wl.opt_choices[i].optimizer == o2) &&
		    q->wl.opt_choices[i].states == CM_OPT_STATES_NATIVE)
			return 1;
	return 0;
}

/* torch.optim's momentum (SGD, RMSprop): a momentum_buffer per weight
 * where it is not 0. A choice of numbers >= 0 or a quniform from 0 (a grid
 * that may hold 0) is a real hyperparameter, each configuration with its
 * own (wl->momentum_hp); a uniform or loguniform draws 0 with probability
 * 0, so every configuration keeps the buffer (wl->momentum_all). With no
 * SGD or RMSprop to run it stays a training knob (lr and the like). */
static int
take_momentum(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	double lo = json_number_value(json_array_get(vals, 0)), hi = json_number_value(json_array_get(vals, 1));
	int ok = 1, any = 0;

	if (!runs_optimizer(q, CM_OPT_SGD, CM_OPT_RMSPROP))
		return 0;
	if (strcmp(type, "choice") == 0) {
		for (size_t i = 0; i < json_array_size(vals); i++) {
			const json_t *v = json_array_get(vals, i);
			ok = ok && json_is_number(v) && json_number_value(v) >= 0.0;
			any |= json_is_number(v) && json_number_value(v) != 0.0;
			hi = i == 0 || json_number_value(v) > hi ? json_number_value(v) : hi;
		}
	} else
		ok = (strcmp(type, "uniform") == 0 || strcmp(type, "quniform") == 0 || strcmp(type, "loguniform") == 0) &&
		    json_array_size(vals) >= 2 && json_is_number(json_array_get(vals, 0)) &&
		    json_is_number(json_array_get(vals, 1)) && lo >= 0.0 && hi >= lo;
	if (!ok) {
		dn_fmt(why, WHY_LEN, "torch.optim's momentum is a number >= 0 (a choice, a quniform, a uniform or a "
		    "loguniform)");
		return 0;
	}
	if (strcmp(type, "choice") == 0 && !any)
		return 1;       /* 0 only: no buffer */
	if (strcmp(type, "choice") != 0 && strcmp(type, "quniform") != 0) {
		q->wl.momentum_all = hi > 0.0;
		return 1;
	}
	if (def_add_hp(q, key, json_pack("{s:s,s:f,s:f,s:f,s:s}", "type", "real", "min", 0.0, "max",
	    hi > 1.0 ? hi : 1.0, "default", 0.0, "description", "torch.optim's momentum, as the search space picks it"),
	    err) != 0)
		return -1;
	q->wl.momentum_hp = 1 + cm_def_find_hp(q->def, key);
	return 1;
}

/* A flag of torch.optim's that keeps one more state copy where true:
 * Adam's and AdamW's amsgrad (max_exp_avg_sq), RMSprop's centered
 * (grad_avg), where the optimizer that has it runs (take_bool). */
static int
take_opt_flag(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err, enum cm_optimizer o1, enum cm_optimizer o2, const char *what, int *hp, int *on)
{
	if (!runs_optimizer(q, o1, o2)) {
		dn_fmt(why, WHY_LEN, "%s, and the workload runs none (nor does the space's optimizer choice)", what);
		return 0;
	}
	return take_bool(q, key, type, vals, key, why, err, hp, on);
}

static int
take_amsgrad(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	return take_opt_flag(q, key, type, vals, why, err, CM_OPT_ADAM, CM_OPT_ADAMW,
	    "amsgrad is torch.optim.Adam's and AdamW's", &q->wl.amsgrad_hp, &q->wl.amsgrad_on);
}

static int
take_centered(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	return take_opt_flag(q, key, type, vals, why, err, CM_OPT_RMSPROP, CM_OPT_RMSPROP,
	    "centered is torch.optim.RMSprop's", &q->wl.centered_hp, &q->wl.centered_on);
}

/* peft's use_dora (take_bool), where the workload has LoRA: each adapted
 * linear runs DoRA's part (op_dora.c) where it is true. */
static int
take_dora(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	if (q->wl.ft.lora_rank == 0) {
		dn_fmt(why, WHY_LEN, "DoRA is a form of LoRA, and the workload has no LoRA ($.workload.lora)");
		return 0;
	}
	return take_bool(q, key, type, vals, "DoRA (peft's use_dora)", why, err, &q->wl.ft.dora_hp, &q->wl.ft.dora_on);
}

/* The names of a setting in a space: dnnsat's, then Hugging Face's,
 * Lightning's and peft's (settings[] and nested[] share them). */
static const char *const names_accum[] = { "grad_accum", "gradient_accumulation_steps", "accumulate_grad_batches",
	NULL };
static const char *const names_ckpt[] = { "checkpointing", "gradient_checkpointing", NULL };
static const char *const names_attention[] = { "attention", "attn_implementation", NULL };
static const char *const names_lora_r[] = { "lora_r", "lora_rank", "r", NULL };
static const char *const names_lora_dropout[] = { "lora_dropout", NULL };
static const char *const names_targets[] = { "target_modules", "lora_target_modules", "lora_targets", NULL };
static const char *const names_dora[] = { "use_dora", NULL };
static const char *const names_momentum[] = { "momentum", NULL };

/* The settings, each with its space keys (the first the space has is
 * taken) and whether only training has it. */
static const struct setting {
	const char *const *keys;
	int training;
	int model_hp;           /* a hyperparameter of the model of that name is taken too */
	int (*take)(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
	    struct dn_error *err);
} settings[] = {
	{ (const char *const[]){ "optimizer", "optim", NULL }, 1, 0, take_optimizer },
	/* after the optimizer: they apply to the ones it runs */
	{ names_momentum, 1, 0, take_momentum },
	{ (const char *const[]){ "amsgrad", NULL }, 1, 0, take_amsgrad },
	{ (const char *const[]){ "centered", NULL }, 1, 0, take_centered },
	{ names_accum, 1, 0, take_accum },
	{ names_ckpt, 1, 0, take_ckpt },
	{ names_attention, 0, 0, take_attention },
	{ names_lora_r, 1, 1, take_lora_rank },
	{ names_lora_dropout, 1, 0, take_lora_dropout },
	{ names_targets, 1, 0, take_lora_targets },
	{ names_dora, 1, 0, take_dora },
};

/* LoRA's rank searched in a training workload without LoRA, where the
 * model has a hyperparameter of its name (the templates' lora_r): bound,
 * it would change nothing unsaid (other names get the query parser's
 * "sets nothing" warning). */
static int
lora_unused(struct sq_query *q, const json_t *space, struct dn_error *err)
{
	const char *const *keys = names_lora_r;

	if (!q->wl.training || q->wl.ft.lora_rank > 0)
		return 0;
	for (int k = 0; keys[k] != NULL; k++)
		if (json_object_get(space, keys[k]) != NULL && cm_def_find_hp(q->def, keys[k]) >= 0 &&
		    sq_warn(q, err, "parameter %s is LoRA's, and the workload has no LoRA ($.workload.lora): it "
		    "changes nothing", keys[k]) != 0)
			return -1;
	return 0;
}

/* Setting st taken from its key k: another of its names in the space is
 * an error (it would pass by, or be costed twice). 0 or -1. */
static int
one_name(const struct sq_query *q, const json_t *space, const struct setting *st, int k, struct dn_error *err)
{
	for (int o = 0; st->keys[o] != NULL; o++) {
		char path[96];
		if (o == k || json_object_get(space, st->keys[o]) == NULL ||
		    (!st->model_hp && cm_def_find_hp(q->def, st->keys[o]) >= 0))
			continue;
		dn_fmt(path, sizeof path, "$.space.%s", st->keys[o]);
		return dn_error_set(err, DN_EINVAL, path, "sets what \"%s\" already sets (two names of one setting): "
		    "give one", st->keys[k]);
	}
	return 0;
}

/* A setting's parameter not in a form it takes: warned with the reason,
 * and noted so that the query parser's general warning leaves it out. */
static int
note(struct sq_query *q, const char *key, const char *why, struct dn_error *err)
{
	int n = 0;

	while (n < 7 && q->settings_noted[n] != NULL)
		n++;
	if (n == 7)
		return 0;       /* the general warning names the rest */
	q->settings_noted[n] = key;
	q->settings_noted[n + 1] = NULL;
	return sq_warn(q, err, "parameter %s is not costed per configuration, so every configuration is costed as "
	    "$.workload sets it: %s", key, why);
}

/* The names of a nested choice's options (NNI: each value an object with
 * its "_name" and its own parameters), as a new array, or NULL when vals
 * are not all such objects. */
static json_t *
option_names(const json_t *vals)
{
	json_t *names = json_array();
	size_t i;
	const json_t *v;

	json_array_foreach(vals, i, v) {
		const json_t *n = json_object_get(v, "_name");
		if (names == NULL || !json_is_string(n) || json_array_append(names, (json_t *)n) != 0) {
			json_decref(names);
			return NULL;
		}
	}
	return names;
}

/* Whether the space's parameter p (a choice, or a range of reals or
 * integers) can take a value other than 0. */
static int
can_be_nonzero(const json_t *p)
{
	const char *type = json_string_value(json_object_get(p, "_type"));
	const json_t *vals = json_object_get(p, "_value"), *v;
	size_t i;

	if (type == NULL || !json_is_array(vals))
		return 0;
	if (strcmp(type, "choice") != 0)
		return json_array_size(vals) >= 2 && (json_number_value(json_array_get(vals, 0)) != 0.0 ||
		    json_number_value(json_array_get(vals, 1)) != 0.0);
	json_array_foreach(vals, i, v)
		if (!json_is_number(v) || json_number_value(v) != 0.0)
			return 1;
	return 0;
}

/* torch.optim.SGD keeps a momentum buffer per parameter when its momentum
 * is not 0 (a top-level "momentum", or a choice of them in the options:
 * take_momentum): an option of a nested optimizer choice, NNI's {"_name":
 * "sgd", "momentum": ...}, whose momentum is a range that can be other
 * than 0 (a uniform: 0 is drawn with probability 0) is costed with the
 * buffer. */
static void
sgd_momentum(struct sq_query *q, const json_t *space)
{
	if (q->wl.opt_hp == 0)
		return;
	for (int i = 0; i < q->wl.nopt_choices; i++) {
		const json_t *opt = json_array_get(json_object_get(json_object_get(space,
		    q->def->hps[q->wl.opt_hp - 1].name), "_value"), (size_t)i);
		const json_t *m = json_is_object(opt) ? json_object_get(opt, "momentum") : NULL;
		if (q->wl.opt_choices[i].optimizer == CM_OPT_SGD && m != NULL && can_be_nonzero(m))
			q->wl.opt_choices[i].optimizer = CM_OPT_SGD_MOMENTUM;
	}
}

/* The depth to which nested choices are searched for settings (the space
 * parser refuses deeper ones), and the most values a nested setting may
 * gather (every taker takes far fewer; bounds the work of merging them,
 * which runs before the space parser's limits). */
#define NESTED_MAX_DEPTH 16
#define NESTED_MAX_VALUES 256

/* Appends v to arr unless an equal value is there. 0, or -1 out of
 * memory. */
static int
append_distinct(json_t *arr, const json_t *v)
{
	size_t m;
	const json_t *w;

	json_array_foreach(arr, m, w)
		if (json_equal((json_t *)v, (json_t *)w))
			return 0;
	return json_array_append(arr, (json_t *)v);
}

/* Adds to *acc (a JSON array, made on first use) the values of every
 * parameter `key` inside an option of a nested choice of `params` (an
 * object of parameters), at any depth; *n counts them, *bad those that are
 * not a choice. */
static int
nested_values(const json_t *params, const char *key, int depth, json_t **acc, int *n, int *bad)
{
	const char *k;
	const json_t *p;

	if (depth > NESTED_MAX_DEPTH)
		return 0;
	json_object_foreach((json_t *)params, k, p) {
		const json_t *vals = json_object_get(p, "_value"), *opt;
		const char *type = json_string_value(json_object_get(p, "_type"));
		size_t i;
		json_t *names;
		if (type == NULL || strcmp(type, "choice") != 0 || (names = option_names(vals)) == NULL)
			continue;
		json_decref(names);
		json_array_foreach(vals, i, opt) {
			const json_t *own = json_object_get(opt, key), *v;
			const json_t *own_vals = json_object_get(own, "_value");
			const char *own_type = json_string_value(json_object_get(own, "_type"));
			size_t j;
			if (nested_values(opt, key, depth + 1, acc, n, bad) != 0)
				return -1;
			if (own == NULL)
				continue;
			(*n)++;
			if (!json_is_array(own_vals) || json_array_size(own_vals) == 0 || own_type == NULL ||
			    strcmp(own_type, "choice") != 0 || json_array_size(own_vals) > NESTED_MAX_VALUES ||
			    json_array_size(*acc) + json_array_size(own_vals) > NESTED_MAX_VALUES) {
				(*bad)++;
				continue;
			}
			if (*acc == NULL && (*acc = json_array()) == NULL)
				return -1;
			json_array_foreach(own_vals, j, v)
				if (append_distinct(*acc, v) != 0)
					return -1;
		}
	}
	return 0;
}

/* The workload's own value of each setting nested options may set, as a
 * space would spell it (the value an option that does not set it runs
 * with): a new reference, or NULL where it has none that a space names. */
static json_t *
wl_checkpointing(const struct sq_query *q)
{
	return json_boolean(q->wl.checkpointing != 0);
}

static json_t *
wl_use_dora(const struct sq_query *q)
{
	return json_boolean(q->wl.ft.use_dora != 0);
}

static json_t *
wl_attention(const struct sq_query *q)
{
	return json_string(cm_attention_name(q->wl.attention));
}

static json_t *
wl_grad_accum(const struct sq_query *q)
{
	return json_integer(q->wl.grad_accum > 1 ? q->wl.grad_accum : 1);
}

static json_t *
wl_lora_r(const struct sq_query *q)
{
	return q->wl.ft.rank_expr[0] == '\0' ? json_integer(q->wl.ft.lora_rank) : NULL;
}

static json_t *
wl_lora_dropout(const struct sq_query *q)
{
	return json_real(q->wl.ft.lora_dropout);
}

static json_t *
wl_quantize(const struct sq_query *q)
{
	return json_string(q->wl.ft.quant == CM_QUANT_NONE ? "none" : cm_quant_name(q->wl.ft.quant));
}

static json_t *
wl_dtype(const struct sq_query *q)
{
	return json_string(cm_precision_name(q->wl.precision));
}

static json_t *
wl_momentum(const struct sq_query *q)
{
	(void)q;
	return json_real(0.0);  /* torch.optim's default (sgd_momentum keeps its buffer whatever it is) */
}

static json_t *
wl_target_modules(const struct sq_query *q)
{
	const struct cm_finetune *ft = &q->wl.ft;
	char list[CM_FT_MAX_SEL * CM_FT_SEL_LEN] = "";
	size_t used = 0;

	for (int i = 0; i < ft->ntargets; i++)
		used += (size_t)dn_fmt(list + used, sizeof list - used, "%s%s", i ? "," : "", ft->targets[i]);
	return ft->ntargets > 0 ? json_string(list) : NULL;
}

/* Whether the workload already searches the precision (precision, or the
 * fp16 / bf16 flags, at the top level) or the quantization
 * (BitsAndBytesConfig's fields too), names that share their
 * hyperparameters with dtype's and quantize's. */
static int
top_dtype(const struct sq_query *q)
{
	return q->wl.prec_hp > 0 || q->wl.fp16_hp > 0 || q->wl.bf16_hp > 0;
}

static int
top_quantize(const struct sq_query *q)
{
	return q->wl.ft.qs.hp > 0 || q->wl.ft.qs.l4_hp > 0 || q->wl.ft.qs.l8_hp > 0;
}

static int take_quant_nested(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err);
static int take_dtype_nested(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err);

/* The settings a nested option may set (NNI: {"_name": "qlora", "quantize":
 * {"_type": "choice", "_value": ["nf4"]}}), each under its names: the
 * setting is taken as at the top level (its taker) over the values every
 * option gives and the workload's own, which is the hyperparameter's
 * default, so that a configuration whose options do not set it runs with
 * the workload's; the nested parameters bind to it by their key
 * (space_bind.c). Only where the top level does not name it, and only
 * choices. */
static const struct nested_setting {
	const char *const *keys;        /* settings[]'s names, but LoRA's rank: not peft's bare "r"
	                                 * inside an option */
	int training;
	int (*take_fn)(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
	    struct dn_error *err);
	json_t *(*value)(const struct sq_query *q);     /* the workload's own value */
	int (*at_top)(const struct sq_query *q);        /* whether the top level searches it (the names
	                                                 * that share its hyperparameters), or NULL:
	                                                 * where the space has one of keys */
} nested[] = {
	{ names_ckpt, 1, take_ckpt, wl_checkpointing, NULL },
	{ names_attention, 0, take_attention, wl_attention, NULL },
	{ names_accum, 1, take_accum, wl_grad_accum, NULL },
	{ (const char *const[]){ "lora_r", "lora_rank", NULL }, 1, take_lora_rank, wl_lora_r, NULL },
	{ names_lora_dropout, 1, take_lora_dropout, wl_lora_dropout, NULL },
	{ names_targets, 1, take_lora_targets, wl_target_modules, NULL },
	{ names_dora, 1, take_dora, wl_use_dora, NULL },
	{ (const char *const[]){ "quantize", NULL }, 0, take_quant_nested, wl_quantize, top_quantize },
	{ (const char *const[]){ "dtype", NULL }, 0, take_dtype_nested, wl_dtype, top_dtype },
	/* an SGD or RMSprop option's momentum: its buffer where it is not 0 */
	{ names_momentum, 1, take_momentum, wl_momentum, NULL },
};

/* quantize nested: as take_quant's by name, where a training workload has
 * LoRA or frozen weights (else it stays the workload's, with the warning). */
static int
take_quant_nested(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	if (q->wl.training && q->wl.ft.lora_rank == 0 && q->wl.ft.nfreeze == 0)
		return 0;
	return take_quant_name(q, key, type, vals, why, err);
}

/* dtype nested: the workload's precision names. */
static int
take_dtype_nested(struct sq_query *q, const char *key, const char *type, const json_t *vals, char *why,
    struct dn_error *err)
{
	return take_precision_name(q, key, CM_PREC_NAMES_WORKLOAD, type, vals, why, err);
}

/* Whether the workload already searches what nested setting ns sets (a
 * top-level parameter of one of its names took it, or one of the names
 * that share its hyperparameters: ns->at_top). */
static int
taken_at_top(const struct sq_query *q, const json_t *space, const struct nested_setting *ns)
{
	if (ns->at_top != NULL)
		return ns->at_top(q);
	for (int k = 0; ns->keys[k] != NULL; k++)
		if (json_object_get(space, ns->keys[k]) != NULL)
			return 1;
	return 0;
}

/* The settings nested options set (nested[]). 0, or -1 with err. */
static int
nested_settings(struct sq_query *q, const json_t *space, struct dn_error *err)
{
	for (size_t s = 0; s < sizeof nested / sizeof nested[0]; s++) {
		const struct nested_setting *ns = &nested[s];
		if ((ns->training && !q->wl.training) || taken_at_top(q, space, ns))
			continue;
		for (int k = 0; ns->keys[k] != NULL; k++) {
			const char *key = ns->keys[k];
			json_t *acc = NULL, *mine, *merged;
			char why[WHY_LEN] = "";
			int n = 0, bad = 0, rc, h;
			size_t i;
			const json_t *v;
			if (cm_def_find_hp(q->def, key) >= 0 && strcmp(key, "lora_r") != 0)
				continue;       /* a hyperparameter of the model is the model's */
			if (nested_values(space, key, 0, &acc, &n, &bad) != 0) {
				json_decref(acc);
				return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
			}
			if (n == 0 || bad > 0 || (mine = ns->value(q)) == NULL) {
				json_decref(acc);
				continue;
			}
			/* the workload's value first: the hyperparameter's default */
			merged = json_array();
			if (merged == NULL || json_array_append_new(merged, mine) != 0) {
				json_decref(merged);
				json_decref(acc);
				return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
			}
			json_array_foreach(acc, i, v)
				if (append_distinct(merged, v) != 0) {
					json_decref(merged);
					json_decref(acc);
					return dn_error_set(err, DN_ENOMEM, "$.space", "out of memory");
				}
			json_decref(acc);
			rc = ns->take_fn(q, key, "choice", merged, why, err);
			/* an int or real hyperparameter (accumulation, the rank, the
			 * dropout) starts at the workload's value too */
			h = rc > 0 ? cm_def_find_hp(q->def, key) : -1;
			if (h >= 0 && q->def->hps[h].type != CM_HP_CATEGORICAL &&
			    def_set_default(q, key, json_incref(json_array_get(merged, 0)), err) != 0)
				rc = -1;
			json_decref(merged);
			if (rc < 0)
				return -1;
			if (rc > 0)
				break;          /* its other names stay the workload's, warned */
		}
	}
	return 0;
}

int
sq_space_settings(struct sq_query *q, const json_t *space, struct dn_error *err)
{
	if (take_precision(q, space, err) != 0 || take_quant(q, space, err) != 0)
		return -1;
	for (size_t s = 0; s < sizeof settings / sizeof settings[0]; s++) {
		if (settings[s].training && !q->wl.training)
			continue;
		for (int k = 0; settings[s].keys[k] != NULL; k++) {
			const char *key = settings[s].keys[k];
			const json_t *p = json_object_get(space, key), *vals = json_object_get(p, "_value");
			const char *type = json_string_value(json_object_get(p, "_type"));
			char why[WHY_LEN] = "";
			json_t *names;
			int rc;
			/* a hyperparameter of the model is the model's */
			if (type == NULL || json_array_size(vals) == 0 ||
			    (!settings[s].model_hp && cm_def_find_hp(q->def, key) >= 0))
				continue;
			/* a nested choice picks its options by their names */
			names = strcmp(type, "choice") == 0 ? option_names(vals) : NULL;
			rc = settings[s].take(q, key, type, names != NULL ? names : vals, why, err);
			json_decref(names);
			if (rc < 0)
				return -1;
			if (rc > 0) {
				if (one_name(q, space, &settings[s], k, err) != 0)
					return -1;
				break;
			}
			if (why[0] != '\0' && note(q, key, why, err) != 0)
				return -1;
		}
	}
	if (nested_settings(q, space, err) != 0)
		return -1;
	if (q->wl.training && q->wl.momentum_hp == 0)
		sgd_momentum(q, space);
	return lora_unused(q, space, err);
}
