/*
 * space_bind.c - binding the dims of a parsed space to the hyperparameters
 * of a model: which hyperparameter each parameter sets (by name), whether
 * its values fit the hyperparameter's type and range, and the model value
 * (union expr_val) of each listed option.
 *
 * Invariants: a dim is bound (hp >= 0) only once every check passed for the
 * whole space; on any error the space is left with no dim bound and no
 * hp_vals. Names the model does not know pass through (hp = -1): a learning
 * rate is not a cost-model hyperparameter. Every value a bound dim can take
 * is inside the hyperparameter's [min, max], so a configuration built from
 * the space is one the model accepts. Rules: docs/search-space.md.
 *
 * An explicit map (sp_bind_map, a query's "bind") sets the hyperparameter
 * of the dims it addresses before the rule by name; addresses use the dims'
 * keys and their enclosing choices' keys and option names, never d->name.
 * sp_unbound_names lists what set nothing, for the caller's warning.
 */
#include "space.h"

#include "dn_suggest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void
bind_clear(struct sp_space *sp)
{
	for (int i = 0; i < sp->ndims; i++) {
		free(sp->dims[i].hp_vals);
		sp->dims[i].hp_vals = NULL;
		sp->dims[i].hp = -1;
	}
}

/*
 * The names training scripts give the hyperparameters the templates call
 * batch_size, seq_len and resolution/image_size (Hugging Face's
 * TrainingArguments and example scripts: per_device_train_batch_size,
 * max_seq_length, block_size; timm's img_size): a top-level parameter
 * whose key the model does not have sets the member of its group the
 * model has. */
static const char *const synonyms[][7] = {
	{ "batch_size", "per_device_train_batch_size", "train_batch_size", NULL },
	{ "seq_len", "max_seq_length", "max_seq_len", "max_length", "seq_length", "block_size", NULL },
	{ "resolution", "image_size", "img_size", "input_size", NULL },
};

/* The hyperparameter of def that a synonym of key names, or -1. */
static int
find_synonym(const struct cm_model_def *def, const char *key)
{
	for (size_t g = 0; g < sizeof synonyms / sizeof synonyms[0]; g++) {
		int in = 0;
		for (int k = 0; synonyms[g][k] != NULL; k++)
			in |= strcasecmp(synonyms[g][k], key) == 0;
		for (int k = 0; in && synonyms[g][k] != NULL; k++) {
			int h = cm_def_find_hp(def, synonyms[g][k]);
			if (h >= 0)
				return h;
		}
	}
	return -1;
}

/*
 * The hyperparameter a dim sets: a top-level dim by its key (or a synonym
 * of it, above); a nested dim
 * "C/P" by "C_P" (for deeper nesting, all the enclosing choices' keys joined
 * by '_', then the nearest choice's key and P), else by "P". -1 if none.
 */
static int
bind_find(const struct sp_space *sp, const struct sp_dim *d,
    const struct cm_model_def *def)
{
	char buf[1024];
	int h, len, p;

	if (d->parent < 0)
		return (h = cm_def_find_hp(def, d->key)) >= 0 ? h : find_synonym(def, d->key);
	/* every enclosing choice's key, outermost first */
	len = dn_fmt(buf, sizeof buf, "%s", d->key);
	for (p = d->parent; p >= 0; p = sp->dims[p].parent) {
		char tmp[1024];
		dn_fmt(tmp, sizeof tmp, "%s_%s", sp->dims[p].key, buf);
		len = dn_fmt(buf, sizeof buf, "%s", tmp);
	}
	if (len < (int)sizeof buf - 1 && (h = cm_def_find_hp(def, buf)) >= 0)
		return h;
	if (sp->dims[d->parent].parent >= 0) {
		dn_fmt(buf, sizeof buf, "%s_%s", sp->dims[d->parent].key, d->key);
		if ((h = cm_def_find_hp(def, buf)) >= 0)
			return h;
	}
	return cm_def_find_hp(def, d->key);
}

/* "[1, 65536]", "[0.1, +inf)" ... for messages. */
static void
range_show(const struct cm_hparam *h, char *buf, size_t len)
{
	char lo[40], hi[40];

	if (h->has_min)
		dn_fmt(lo, sizeof lo, "[%.15g", h->min);
	else
		dn_fmt(lo, sizeof lo, "(-inf");
	if (h->has_max)
		dn_fmt(hi, sizeof hi, "%.15g]", h->max);
	else
		dn_fmt(hi, sizeof hi, "+inf)");
	dn_fmt(buf, len, "%s, %s", lo, hi);
}

static int
in_range(const struct cm_hparam *h, double x)
{
	return (!h->has_min || x >= h->min) && (!h->has_max || x <= h->max);
}

/* Error: value `shown` at `path` is outside the hyperparameter's range. */
static int
range_error(const struct cm_hparam *h, const char *path, const char *shown,
    struct dn_error *err)
{
	char r[96];

	range_show(h, r, sizeof r);
	return dn_error_set(err, DN_ERANGE, path,
	    "%s is outside the range %s of hyperparameter %s", shown, r, h->name);
}

/* "basic, bottleneck" (truncated for long lists). */
static void
values_show(const struct cm_hparam *h, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int j = 0; j < h->nvalues && n < len; j++)
		n += (size_t)dn_fmt(buf + n, len - n, "%s\"%s\"", j ? ", " : "", h->values[j]);
}

/*
 * The text a choice value stands for when it sets a categorical: a string
 * itself, a sub-space its "_name", a boolean "true"/"false", a number as
 * cm_config_set would spell it. NULL for null, lists and objects (they set
 * no hyperparameter) and when the text does not fit `buf`.
 */
static const char *
cat_text(const struct sp_dim *d, int64_t i, char *buf, size_t len)
{
	const json_t *v = d->nested ? json_object_get(d->values[i], "_name") : d->values[i];

	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_boolean(v))
		return json_is_true(v) ? "true" : "false";
	if (json_is_integer(v))
		dn_fmt(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		dn_fmt(buf, len, "%g", json_real_value(v));
	else
		return NULL;
	return buf;
}

/* What a listed value that is not a number, string or boolean is, for
 * messages: "a null", "a list", "an object". */
static const char *
kind_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
		return "a null";
	case JSON_ARRAY:
		return "a list";
	case JSON_OBJECT:
		return "an object";
	default:
		return "a value";
	}
}

static int
bind_categorical(struct sp_dim *d, const struct cm_hparam *h, struct dn_error *err)
{
	char p[512], buf[64], vals[400];

	if (d->type != SP_CHOICE) {
		values_show(h, vals, sizeof vals);
		dn_fmt(p, sizeof p, "%s._type", d->path);
		return dn_error_set(err, DN_EINVAL, p,
		    "%s cannot set categorical hyperparameter %s: list its values with choice (%s)",
		    sp_type_name(d->type), h->name, vals);
	}
	for (int64_t i = 0; i < d->nvalues; i++) {
		const char *t = cat_text(d, i, buf, sizeof buf);
		int j;
		if (t == NULL) {
			dn_fmt(p, sizeof p, "%s._value[%lld]", d->path, (long long)i);
			return dn_error_set(err, DN_EINVAL, p,
			    "%s cannot set categorical hyperparameter %s (its values: strings, numbers or booleans)",
			    kind_of(d->values[i]), h->name);
		}
		for (j = 0; j < h->nvalues; j++)
			if (strcmp(h->values[j], t) == 0)
				break;
		if (j == h->nvalues) {
			values_show(h, vals, sizeof vals);
			dn_fmt(p, sizeof p, d->nested ? "%s._value[%lld]._name" : "%s._value[%lld]",
			    d->path, (long long)i);
			return dn_error_set(err, DN_EINVAL, p,
			    "\"%.80s\" is not a value of hyperparameter %s (its values: %s)", t, h->name, vals);
		}
		d->hp_vals[i].i = j;
	}
	return 0;
}

/* A listed choice value for an int or real hyperparameter. */
static int
bind_listed_number(struct sp_dim *d, int64_t i, const struct cm_hparam *h,
    struct dn_error *err)
{
	const json_t *v = d->nested ? NULL : d->values[i];
	char p[512], shown[64];
	double x;

	dn_fmt(p, sizeof p, d->nested ? "%s._value[%lld]._name" : "%s._value[%lld]",
	    d->path, (long long)i);
	if (!d->nested && !json_is_number(v) && !json_is_string(v) && !json_is_boolean(v))
		return dn_error_set(err, DN_EINVAL, p, "%s cannot set %s hyperparameter %s (it takes numbers)",
		    kind_of(v), h->type == CM_HP_INT ? "int" : "real", h->name);
	if (!json_is_number(v))
		return dn_error_set(err, DN_EINVAL, p,
		    "%s hyperparameter %s takes numbers, not %s", h->type == CM_HP_INT ? "int" : "real",
		    h->name, d->nested ? "sub-space names" : json_is_string(v) ? "strings" : "booleans");
	x = json_number_value(v);
	if (h->type == CM_HP_INT) {
		if (json_is_integer(v))
			d->hp_vals[i].i = json_integer_value(v);
		else if (trunc(x) == x && fabs(x) <= 9007199254740992.0)
			d->hp_vals[i].i = (int64_t)x;
		else
			return dn_error_set(err, DN_EINVAL, p,
			    "%.15g is not an integer: int hyperparameter %s takes integers", x, h->name);
		dn_fmt(shown, sizeof shown, "%lld", (long long)d->hp_vals[i].i);
		if (!in_range(h, (double)d->hp_vals[i].i))
			return range_error(h, p, shown, err);
		return 0;
	}
	d->hp_vals[i].r = x;
	dn_fmt(shown, sizeof shown, "%.15g", x);
	if (!in_range(h, x))
		return range_error(h, p, shown, err);
	return 0;
}

/* The first value of a q-grid that is not an integer, for messages. */
static double
first_fraction(const struct sp_dim *d)
{
	int64_t probe[4] = { 0, d->head, d->head + 1, d->nvalues - 1 };

	for (int k = 0; k < 4; k++) {
		double x;
		if (probe[k] >= d->nvalues)
			continue;
		x = sp_value_num(d, probe[k]);
		if (trunc(x) != x)
			return x;
	}
	return sp_value_num(d, 0);
}

/* A progression grid (randint, q-grids): its ends are its extremes. */
static int
bind_progression(struct sp_dim *d, const struct cm_hparam *h, struct dn_error *err)
{
	double first = sp_value_num(d, 0), last = sp_value_num(d, d->nvalues - 1);
	char p[512], shown[64];

	if (h->type == CM_HP_INT && !d->integer) {
		dn_fmt(p, sizeof p, "%s._value", d->path);
		return dn_error_set(err, DN_EINVAL, p,
		    "%s grid value %.15g is not an integer: int hyperparameter %s takes integers "
		    "(use an integral q and integral ends)", sp_type_name(d->type), first_fraction(d), h->name);
	}
	if (!in_range(h, first)) {
		dn_fmt(p, sizeof p, "%s._value[0]", d->path);
		dn_fmt(shown, sizeof shown, "%s's smallest value %.15g", sp_type_name(d->type), first);
		return range_error(h, p, shown, err);
	}
	if (!in_range(h, last)) {
		dn_fmt(p, sizeof p, "%s._value[1]", d->path);
		dn_fmt(shown, sizeof shown, "%s's largest value %.15g", sp_type_name(d->type), last);
		return range_error(h, p, shown, err);
	}
	return 0;
}

/* A continuous range for a real hyperparameter. */
static int
bind_continuous(struct sp_dim *d, const struct cm_hparam *h, struct dn_error *err)
{
	char p[512], r[96];

	if (h->type == CM_HP_INT) {
		dn_fmt(p, sizeof p, "%s._type", d->path);
		return dn_error_set(err, DN_EINVAL, p,
		    "%s is continuous: int hyperparameter %s needs a discrete grid "
		    "(choice, randint, quniform or qloguniform)", sp_type_name(d->type), h->name);
	}
	if (d->type == SP_NORMAL || d->type == SP_LOGNORMAL) {
		/* unbounded: only an unbounded hyperparameter accepts it */
		if (h->has_max || (h->has_min && (d->type == SP_NORMAL || h->min > 0))) {
			range_show(h, r, sizeof r);
			dn_fmt(p, sizeof p, "%s._type", d->path);
			return dn_error_set(err, DN_ERANGE, p,
			    "%s(%g, %g) is unbounded but hyperparameter %s is limited to %s: use uniform or quniform",
			    sp_type_name(d->type), d->mu, d->sigma, h->name, r);
		}
		return 0;
	}
	if (!in_range(h, d->lo)) {
		char shown[64];
		dn_fmt(p, sizeof p, "%s._value[0]", d->path);
		dn_fmt(shown, sizeof shown, "%s low %.15g", sp_type_name(d->type), d->lo);
		return range_error(h, p, shown, err);
	}
	if (!in_range(h, d->hi)) {
		char shown[64];
		dn_fmt(p, sizeof p, "%s._value[1]", d->path);
		dn_fmt(shown, sizeof shown, "%s high %.15g", sp_type_name(d->type), d->hi);
		return range_error(h, p, shown, err);
	}
	return 0;
}

/* Checks one dim against hyperparameter h and fills hp_vals for choices. */
static int
bind_dim(struct sp_dim *d, const struct cm_hparam *h, struct dn_error *err)
{
	char p[512];

	if (d->type == SP_QNORMAL || d->type == SP_QLOGNORMAL) {
		dn_fmt(p, sizeof p, "%s._type", d->path);
		return dn_error_set(err, DN_EINVAL, p,
		    "%s has an unbounded grid that cannot be enumerated: it cannot set hyperparameter %s "
		    "(use quniform or qloguniform)", sp_type_name(d->type), h->name);
	}
	if (d->type == SP_CHOICE) {
		d->hp_vals = calloc((size_t)d->nvalues, sizeof *d->hp_vals);
		if (d->hp_vals == NULL)
			return dn_error_set(err, DN_ENOMEM, d->path, "out of memory");
	}
	if (h->type == CM_HP_CATEGORICAL)
		return bind_categorical(d, h, err);
	if (d->type == SP_CHOICE) {
		for (int64_t i = 0; i < d->nvalues; i++)
			if (bind_listed_number(d, i, h, err) != 0)
				return -1;
		return 0;
	}
	if (d->discrete)
		return bind_progression(d, h, err);
	return bind_continuous(d, h, err);
}

/*
 * Whether dims a and b can never be active together: they lie in different
 * options of a common enclosing choice. A dim and its own ancestor can.
 */
static int
bind_exclusive(const struct sp_space *sp, int a, int b)
{
	int chain[SP_MAX_DEPTH + 2], opt[SP_MAX_DEPTH + 2], n = 0;

	for (int x = a; sp->dims[x].parent >= 0 && n < SP_MAX_DEPTH + 2; x = sp->dims[x].parent) {
		chain[n] = sp->dims[x].parent;
		opt[n++] = sp->dims[x].parent_option;
	}
	for (int k = 0; k < n; k++)
		if (chain[k] == b)
			return 0;
	for (int x = b; sp->dims[x].parent >= 0; x = sp->dims[x].parent) {
		int p = sp->dims[x].parent;
		if (p == a)
			return 0;
		for (int k = 0; k < n; k++)
			if (chain[k] == p)
				return opt[k] != sp->dims[x].parent_option;
	}
	return 0;
}

/* The _name of option `opt` of nested choice dim c, or NULL. */
static const char *
option_name(const struct sp_dim *c, int opt)
{
	if (!c->nested || opt < 0 || opt >= c->nvalues)
		return NULL;
	return json_string_value(json_object_get(c->values[opt], "_name"));
}

/* Whether dim i answers to address a: "key" for a top-level dim,
 * "choice/key" or "choice/option/key" for a nested one. */
static int
addressed(const struct sp_space *sp, int i, const char *a)
{
	const struct sp_dim *d = &sp->dims[i], *c;
	const char *slash = strrchr(a, '/'), *opt;
	size_t ck;

	if (slash == NULL)
		return d->parent < 0 && strcmp(d->key, a) == 0;
	if (d->parent < 0 || strcmp(d->key, slash + 1) != 0)
		return 0;
	c = &sp->dims[d->parent];
	ck = strlen(c->key);
	if (strncmp(a, c->key, ck) != 0 || a[ck] != '/')
		return 0;
	if (a + ck == slash)
		return 1;
	opt = option_name(c, d->parent_option);
	return opt != NULL && strlen(opt) == (size_t)(slash - a - ck - 1) &&
	    strncmp(a + ck + 1, opt, strlen(opt)) == 0;
}

/* Dim i's short address into buf: "key", or "choice/key" for a nested dim
 * (its enclosing choice's key). Returns the length written. */
static int
address(const struct sp_space *sp, int i, char *buf, size_t len)
{
	const struct sp_dim *d = &sp->dims[i];

	if (d->parent < 0)
		return dn_fmt(buf, len, "%s", d->key);
	return dn_fmt(buf, len, "%s/%s", sp->dims[d->parent].key, d->key);
}

/* "did you mean" for an address that matches nothing: the space's
 * addresses ("key", "choice/key"). */
static int
unknown_address(const struct sp_space *sp, const struct sp_bind_pair *m, struct dn_error *err)
{
	char near[200];
	char **addr = calloc((size_t)sp->ndims + 1, sizeof *addr);

	if (addr == NULL)
		return dn_error_set(err, DN_ENOMEM, m->path, "out of memory");
	for (int i = 0; i < sp->ndims; i++) {
		const struct sp_dim *d = &sp->dims[i];
		size_t n = strlen(d->key) + (d->parent >= 0 ? strlen(sp->dims[d->parent].key) + 2 : 1);
		addr[i] = malloc(n);
		if (addr[i] != NULL)
			address(sp, i, addr[i], n);
	}
	dn_suggest(m->from, (const char *const *)addr, sp->ndims, near, sizeof near);
	for (int i = 0; i < sp->ndims; i++)
		free(addr[i]);
	free(addr);
	if (near[0] != '\0')
		return dn_error_set(err, DN_ENOENT, m->path, "the space has no parameter \"%.100s\" (did you mean %s?)",
		    m->from, near);
	return dn_error_set(err, DN_ENOENT, m->path, "the space has no parameter \"%.100s\"", m->from);
}

static int
unknown_hp(const struct cm_model_def *def, const struct sp_bind_pair *m, struct dn_error *err)
{
	char near[200];

	if (cm_def_suggest_hp(def, m->to, near, sizeof near) > 0)
		return dn_error_set(err, DN_ENOENT, m->path, "model %s has no hyperparameter \"%.100s\" (did you mean %s?)",
		    def->name, m->to, near);
	return dn_error_set(err, DN_ENOENT, m->path, "model %s has no hyperparameter \"%.100s\"", def->name, m->to);
}

/* The hyperparameter each dim sets by the explicit map: hp_of[i] = index,
 * or -2 where the map says nothing about dim i. */
static int
map_targets(const struct sp_space *sp, const struct cm_model_def *def, const struct sp_bind_pair *map,
    int nmap, int *hp_of, struct dn_error *err)
{
	for (int i = 0; i < sp->ndims; i++)
		hp_of[i] = -2;
	for (int k = 0; k < nmap; k++) {
		int h = cm_def_find_hp(def, map[k].to), hits = 0;
		if (h < 0)
			return unknown_hp(def, &map[k], err);
		for (int i = 0; i < sp->ndims; i++)
			if (addressed(sp, i, map[k].from)) {
				hp_of[i] = h;
				hits++;
			}
		if (hits == 0)
			return unknown_address(sp, &map[k], err);
	}
	return 0;
}

int
sp_bind(struct sp_space *sp, const struct cm_model_def *def, struct dn_error *err)
{
	return sp_bind_map(sp, def, NULL, 0, err);
}

int
sp_bind_map(struct sp_space *sp, const struct cm_model_def *def, const struct sp_bind_pair *map, int nmap,
    struct dn_error *err)
{
	int nbound = 0;
	int *hp_of = calloc((size_t)sp->ndims + 1, sizeof *hp_of);

	bind_clear(sp);
	if (hp_of == NULL)
		return dn_error_set(err, DN_ENOMEM, "$", "out of memory");
	if (map_targets(sp, def, map, nmap, hp_of, err) != 0)
		goto fail;
	for (int i = 0; i < sp->ndims; i++) {
		struct sp_dim *d = &sp->dims[i];
		int h = hp_of[i] != -2 ? hp_of[i] : bind_find(sp, d, def);
		if (h < 0)
			continue;
		d->hp = h;
		d->hp_type = def->hps[h].type;
		if (bind_dim(d, &def->hps[h], err) != 0)
			goto fail;
		for (int j = 0; j < i; j++)
			if (sp->dims[j].hp == h && !bind_exclusive(sp, j, i)) {
				dn_error_set(err, DN_EINVAL, d->path,
				    "sets hyperparameter %s, which \"%.100s\" (%.100s) already sets",
				    def->hps[h].name, sp->dims[j].name, sp->dims[j].path);
				goto fail;
			}
		nbound++;
	}
	if (nbound == 0) {
		char names[400];
		size_t n = 0;
		names[0] = '\0';
		for (int j = 0; j < def->nhps && n < sizeof names; j++)
			n += (size_t)dn_fmt(names + n, sizeof names - n, "%s%s", j ? ", " : "", def->hps[j].name);
		dn_error_set(err, DN_ENOENT, "$",
		    "the space sets no hyperparameter of model %s (its hyperparameters are: %s)",
		    def->name, def->nhps ? names : "none");
		goto fail;
	}
	free(hp_of);
	return 0;
fail:
	free(hp_of);
	bind_clear(sp);
	return -1;
}

/* Names that are training knobs, not model shape: they pass through
 * without a warning. */
static int
training_knob(const char *key)
{
	static const char *const knobs[] = { "lr", "learning_rate", "momentum", "weight_decay", "wd", "dropout",
		"dropout_rate", "drop_rate", "attention_dropout", "beta1", "beta2", "eps", "epsilon",
		"warmup", "warmup_steps", "warmup_ratio", "lr_decay", "lr_schedule", "label_smoothing", "seed",
		"epochs", "num_epochs", "grad_clip", "clip_norm", "max_grad_norm", "nesterov", "lora_alpha",
		/* peft's rank-stabilized scaling, alpha / sqrt(r): a scale, no cost */
		"use_rslora",
		/* Hugging Face's TrainingArguments and Lightning's Trainer names */
		"num_train_epochs", "max_epochs", "lr_scheduler_type", "adam_beta1", "adam_beta2", "adam_epsilon",
		"label_smoothing_factor", "gradient_clip_val",
		/* torch.optim's flags (query_settings.c costs them where its optimizer runs) */
		"amsgrad", "centered", NULL };

	for (const char *const *k = knobs; *k; k++)
		if (strcasecmp(*k, key) == 0)
			return 1;
	return 0;
}

/* Names of settings the query's workload holds (the optimizer, the
 * precision, checkpointing, ...): they change the costs, but every
 * configuration is costed with the workload's, unless the query parser
 * made the parameter a hyperparameter that sets it per configuration (the
 * optimizer, accumulation, checkpointing, the attention kernel and LoRA's
 * settings in the forms solver/query_settings.c takes: then it is bound). Hugging Face's
 * TrainingArguments names among them. 1: a setting of training alone
 * (the optimizer, checkpointing, accumulation: no cost in inference), 2:
 * of both, 0: none. */
static int
workload_knob(const char *key)
{
	static const char *const training[] = { "optimizer", "optim", "optimizer_impl", "checkpointing",
		"gradient_checkpointing", "grad_accum", "gradient_accumulation_steps", "accumulate_grad_batches",
		"target_modules",
		"lora_target_modules", "lora_targets", "use_dora", NULL };
	static const char *const both[] = { "dtype", "precision", "mixed_precision", "fp16", "bf16", "attention",
		"attn_implementation", "quantize", "load_in_4bit", "load_in_8bit", "bnb_4bit_quant_type",
		"bnb_4bit_use_double_quant", NULL };

	for (const char *const *k = training; *k; k++)
		if (strcasecmp(*k, key) == 0)
			return 1;
	for (const char *const *k = both; *k; k++)
		if (strcasecmp(*k, key) == 0)
			return 2;
	return 0;
}

int
sp_workload_names(const struct sp_space *sp, int training, const char *const *skip, char *buf, size_t len)
{
	size_t used = 0;
	int n = 0;

	buf[0] = '\0';
	for (int i = 0; i < sp->ndims; i++) {
		int k = workload_knob(sp->dims[i].key), skipped = 0;
		for (int j = 0; skip != NULL && skip[j] != NULL; j++)
			skipped |= sp->dims[i].parent < 0 && strcmp(skip[j], sp->dims[i].key) == 0;
		if (sp->dims[i].hp >= 0 || k == 0 || (k == 1 && !training) || skipped)
			continue;
		used += (size_t)dn_fmt(buf + used, len > used ? len - used : 0, "%s", n ? ", " : "");
		used += (size_t)address(sp, i, buf + used, len > used ? len - used : 0);
		n++;
	}
	return n;
}

/* Whether a dim inside nested choice c (at any depth) is bound. */
static int
holds_bound(const struct sp_space *sp, int c)
{
	for (int i = c + 1; i < sp->ndims; i++)
		for (int p = sp->dims[i].parent; p >= 0; p = sp->dims[p].parent)
			if (p == c && sp->dims[i].hp >= 0)
				return 1;
	return 0;
}

int
sp_unbound_names(const struct sp_space *sp, const struct cm_model_def *def, char *buf, size_t len)
{
	size_t used = 0;
	int n = 0;
	char near[200];

	buf[0] = '\0';
	for (int i = 0; i < sp->ndims; i++) {
		const struct sp_dim *d = &sp->dims[i];
		if (d->hp >= 0 || training_knob(d->key) || workload_knob(d->key) || (d->nested && holds_bound(sp, i)))
			continue;
		/* named by its bind address ("choice/key"), not d->name */
		used += (size_t)dn_fmt(buf + used, len > used ? len - used : 0, "%s", n ? ", " : "");
		used += (size_t)address(sp, i, buf + used, len > used ? len - used : 0);
		if (cm_def_suggest_hp(def, d->key, near, sizeof near) > 0)
			used += (size_t)dn_fmt(buf + used, len > used ? len - used : 0, " (did you mean %s?)", near);
		n++;
	}
	return n;
}
