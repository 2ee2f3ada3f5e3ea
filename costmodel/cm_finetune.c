/*
 * cm_finetune.c - fine-tuning settings of a workload (struct cm_finetune):
 * reading them from JSON and from the CLI's comma lists, writing them back,
 * and deciding which operators they pick (cm_ft_frozen, cm_ft_lora_target,
 * model_build_priv.h).
 *
 * Design: selectors are plain strings kept in fixed arrays inside the
 * workload, so a workload stays a value (copied into every built model) and
 * matching is a few string compares per operator at build time. What a
 * frozen weight means is PyTorch's requires_grad=False, applied by the
 * builder (op_build.c): no gradient, no optimizer state, and an operator
 * none of whose inputs or weights needs a gradient makes no autograd node,
 * so it keeps nothing for backward and has no backward pass. LoRA follows
 * peft's LoraLayer for nn.Linear, lora_dropout and DoRA included
 * (op_linear.c, op_dora.c).
 */
#include "model_build_priv.h"
#include "dn_suggest.h"

#include <stdio.h>
#include <string.h>

/* attention's projections: selector suffix -> the sub-operator names
 * op_attention.c gives them (separate: BertSelfAttention, fused: GPT2,
 * in_proj: nn.MultiheadAttention) */
static const struct {
	const char *sel;
	const char *subs[5];
} attn_parts[] = {
	{ "attention.q", { "query", "c_attn", "in_proj", NULL } },
	{ "attention.k", { "key", "c_attn", "in_proj", NULL } },
	{ "attention.v", { "value", "c_attn", "in_proj", NULL } },
	{ "attention.qkv", { "query", "key", "value", "c_attn", "in_proj" } },
	{ "attention.out", { "output", "c_proj", "out_proj", NULL } },
	/* BERT's attention.output.dense: peft's "dense" picks it beside the
	 * MLP's and pooler's (module_parts) */
	{ "dense", { "output", NULL } },
};
#define NPARTS (sizeof attn_parts / sizeof attn_parts[0])
#define NSUBS (sizeof attn_parts[0].subs / sizeof attn_parts[0].subs[0])

/* peft's target_modules names (Hugging Face's module names: LlamaAttention's
 * q_proj .. o_proj, BertSelfAttention's query, key, value, GPT2Attention's
 * c_attn) -> the selectors above: peft matches a module whose name ends
 * with the target, which on these models is the projection */
static const struct {
	const char *name, *sel;
} peft_names[] = {
	{ "q_proj", "attention.q" }, { "k_proj", "attention.k" }, { "v_proj", "attention.v" },
	{ "o_proj", "attention.out" }, { "query", "attention.q" }, { "key", "attention.k" },
	{ "value", "attention.v" }, { "c_attn", "attention.qkv" },
};
#define NPEFT (sizeof peft_names / sizeof peft_names[0])

/* Module names of linears outside attention that people target, as
 * Hugging Face names them: the SwiGLU MLP's (op_mlp.c names its linears as
 * LlamaMLP does), GPT2MLP's c_fc and c_proj, and BERT's dense (its
 * intermediate, output and pooler linears). A name matches the operator
 * whose instance path has that component: a sub-operator of that name, or
 * an item a model file names with "module" (model_build.c), as peft
 * matches a module whose name ends with the target. Any other name of
 * that shape is a module name of the model's own (cm_ft_check_modules). */
static const char *const module_parts[] = { "gate_proj", "up_proj", "down_proj", "c_fc", "c_proj", "dense" };
#define NMODULES (sizeof module_parts / sizeof module_parts[0])

int
cm_ft_module_name(const char *s)
{
	return s != NULL && strlen(s) < CM_FT_SEL_LEN && cm_ident(s, strlen(s));
}

/* Whether a component of instance path `path` (between dots, or after the
 * last one; a repeat's "[3]" ends it too) is `name`. */
static int
path_has_component(const char *path, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = strchr(path, '.'); p != NULL; p = strchr(p + 1, '.'))
		if (strncmp(p + 1, name, n) == 0 && (p[1 + n] == '\0' || p[1 + n] == '.' || p[1 + n] == '['))
			return 1;
	return 0;
}

/* A peft name's selector, or s itself. */
static const char *
resolve_peft(const char *s)
{
	for (size_t i = 0; i < NPEFT; i++)
		if (strcmp(s, peft_names[i].name) == 0)
			return peft_names[i].sel;
	return s;
}

/* The selectors that have names (not path prefixes), for "did you mean":
 * the keywords, the operator types people adapt or freeze, and the tables
 * above. Returns how many are in out (room for CM_FT_NAMED). */
#define CM_FT_NAMED 40
static int
named_selectors(const char **out)
{
	static const char *const fixed[] = { "all", "all-linear", "linear", "embedding", "layernorm", "attention" };
	int n = 0;

	_Static_assert(sizeof fixed / sizeof fixed[0] + NPARTS + NPEFT + NMODULES <= CM_FT_NAMED, "room for the names");

	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		out[n++] = fixed[i];
	for (size_t i = 0; i < NPARTS; i++)
		out[n++] = attn_parts[i].sel;
	for (size_t i = 0; i < NPEFT; i++)
		out[n++] = peft_names[i].name;
	for (size_t i = 0; i < NMODULES; i++)
		out[n++] = module_parts[i];
	return n;
}

static int
known_selector(const char *s)
{
	s = resolve_peft(s);
	if (strcmp(s, "all") == 0 || strcmp(s, "all-linear") == 0 || op_rule_find(s) != NULL || strncmp(s, "$.", 2) == 0)
		return 1;
	for (size_t i = 0; i < NPARTS; i++)
		if (strcmp(s, attn_parts[i].sel) == 0)
			return 1;
	for (size_t i = 0; i < NMODULES; i++)
		if (strcmp(s, module_parts[i]) == 0)
			return 1;
	return 0;
}

int
cm_ft_add_selectors(char (*sel)[CM_FT_SEL_LEN], int *n, const char *list,
    const char *path, struct dn_error *err)
{
	const char *p = list;

	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		if (len == 0)
			return dn_error_set(err, DN_EINVAL, path, "an empty selector (give \"all\", an operator type "
			    "such as \"linear\", attention.q/k/v/qkv/out, a peft module name such as q_proj or a path "
			    "prefix \"$.layers[3]\")");
		if (len >= CM_FT_SEL_LEN)
			return dn_error_set(err, DN_EINVAL, path, "selector \"%.40s...\" is longer than %d characters",
			    p, CM_FT_SEL_LEN - 1);
		if (*n >= CM_FT_MAX_SEL)
			return dn_error_set(err, DN_EINVAL, path, "more than %d selectors", CM_FT_MAX_SEL);
		memcpy(sel[*n], p, len);
		sel[*n][len] = '\0';
		if (!known_selector(sel[*n]) && !cm_ft_module_name(sel[*n])) {
			const char *named[CM_FT_NAMED];
			char near[128] = "";
			dn_suggest(sel[*n], named, named_selectors(named), near, sizeof near);
			if (near[0] != '\0')
				return dn_error_set(err, DN_EINVAL, path, "unknown selector \"%s\" (did you mean %s?)",
				    sel[*n], near);
			return dn_error_set(err, DN_EINVAL, path, "unknown selector \"%s\" (give \"all\", an operator "
			    "type such as \"linear\" or \"embedding\", attention.q, attention.k, attention.v, "
			    "attention.qkv, attention.out, a module name (q_proj, k_proj, v_proj, o_proj, query, key, "
			    "value, c_attn, c_proj, c_fc, dense, gate_proj, up_proj, down_proj, or the model's own), or an "
			    "operator path prefix such as \"$.layers[3]\")", sel[*n]);
		}
		(*n)++;
		if (end == NULL)
			return 0;
		p = end + 1;
	}
}

int
cm_ft_set_dropout(struct cm_finetune *ft, double p, const char *path, struct dn_error *err)
{
	/* nn.Dropout takes p = 1 (all zeros); an adapter that never sees its
	 * input is not a configuration anyone trains */
	if (!(p >= 0.0 && p < 1.0))
		return dn_error_set(err, DN_EINVAL, path, "must be a number from 0 to below 1 (peft's lora_dropout: "
		    "the probability of zeroing an element of the adapters' input)");
	ft->lora_dropout = p;
	return 0;
}

/* A JSON list of selector strings into `sel`. */
static int
selectors_from_json(char (*sel)[CM_FT_SEL_LEN], int *n, const json_t *v, const char *path,
    struct dn_error *err)
{
	char ipath[96];
	size_t i;
	json_t *x;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return dn_error_set(err, DN_EINVAL, path, "must be a non-empty list of selectors "
		    "(e.g. [\"embedding\", \"attention.qkv\", \"$.layers[3]\"])");
	json_array_foreach(v, i, x) {
		dn_fmt(ipath, sizeof ipath, "%s[%zu]", path, i);
		if (!json_is_string(x) || strchr(json_string_value(x), ',') != NULL)
			return dn_error_set(err, DN_EINVAL, ipath, "must be one selector string");
		if (cm_ft_add_selectors(sel, n, json_string_value(x), ipath, err) != 0)
			return -1;
	}
	return 0;
}

/* LoRA's rank: 1 .. CM_FT_MAX_RANK, or an expression string. */
#define CM_FT_MAX_RANK 65536

static int
lora_from_json(struct cm_finetune *ft, const json_t *v, struct dn_error *err)
{
	const char *key;
	json_t *x;

	if (!json_is_object(v))
		return dn_error_set(err, DN_EINVAL, "$.workload.lora", "must be an object {\"rank\": R, "
		    "\"targets\": [...]}");
	json_object_foreach((json_t *)v, key, x) {
		if (strcmp(key, "rank") == 0) {
			if (json_is_integer(x) && json_integer_value(x) >= 1 && json_integer_value(x) <= CM_FT_MAX_RANK) {
				ft->lora_rank = (int)json_integer_value(x);
				ft->rank_expr[0] = '\0';
			} else if (json_is_string(x) && json_string_length(x) > 0 &&
			    json_string_length(x) < CM_FT_SEL_LEN) {
				ft->lora_rank = 1;
				snprintf(ft->rank_expr, sizeof ft->rank_expr, "%s", json_string_value(x));
			} else
				return dn_error_set(err, DN_EINVAL, "$.workload.lora.rank", "must be an integer from 1 "
				    "to %d, or an expression over the model's hyperparameters (at most %d characters)",
				    CM_FT_MAX_RANK, CM_FT_SEL_LEN - 1);
		} else if (strcmp(key, "targets") == 0) {
			ft->ntargets = 0;
			if (selectors_from_json(ft->targets, &ft->ntargets, x, "$.workload.lora.targets", err) != 0)
				return -1;
		} else if (strcmp(key, "alpha") == 0) {
			/* alpha only scales the update: no cost */
			if (!json_is_number(x))
				return dn_error_set(err, DN_EINVAL, "$.workload.lora.alpha", "must be a number (it costs "
				    "nothing)");
		} else if (strcmp(key, "dropout") == 0) {
			if (cm_ft_set_dropout(ft, json_is_number(x) ? json_number_value(x) : -1.0, "$.workload.lora.dropout",
			    err) != 0)
				return -1;
		} else if (strcmp(key, "use_dora") == 0) {
			if (!json_is_boolean(x))
				return dn_error_set(err, DN_EINVAL, "$.workload.lora.use_dora", "must be true or false "
				    "(peft's use_dora)");
			ft->use_dora = json_is_true(x);
		} else
			return dn_error_set(err, DN_EINVAL, "$.workload.lora", "unknown field \"%.64s\" (rank, "
			    "targets, alpha, dropout, use_dora)", key);
	}
	if (ft->lora_rank == 0)
		return dn_error_set(err, DN_EINVAL, "$.workload.lora.rank", "is required");
	if (ft->ntargets == 0)
		return dn_error_set(err, DN_EINVAL, "$.workload.lora.targets", "is required (e.g. "
		    "[\"attention.q\", \"attention.v\"], peft's default for GPT and LLaMA models)");
	return 0;
}

int
cm_ft_from_json(struct cm_finetune *ft, const char *key, const json_t *v, struct dn_error *err)
{
	if (strcmp(key, "freeze") == 0) {
		ft->nfreeze = 0;
		return selectors_from_json(ft->freeze, &ft->nfreeze, v, "$.workload.freeze", err);
	}
	if (strcmp(key, "train") == 0) {
		ft->ntrain = 0;
		return selectors_from_json(ft->train, &ft->ntrain, v, "$.workload.train", err);
	}
	if (strcmp(key, "lora") == 0)
		return lora_from_json(ft, v, err);
	if (strcmp(key, "quantize") == 0) {
		int rc = json_is_string(v) ? cm_quant_parse(json_string_value(v), &ft->quant) : -1;
		if (rc == -2)
			return dn_error_set(err, DN_EINVAL, "$.workload.quantize", CM_QUANT_UNMODELLED
			    "; int8 (has_fp16_weights=False: frozen int8 base weights, as QLoRA-style fine-tuning "
			    "with load_in_8bit) is");
		if (rc != 0)
			return dn_error_set(err, DN_EINVAL, "$.workload.quantize", "must be nf4, nf4-dq, fp4, fp4-dq "
			    "(bitsandbytes' 4-bit base weights; -dq: double quantization) or int8 (LLM.int8())");
		return 0;
	}
	return dn_error_set(err, DN_EINVAL, "$.workload", "unknown field \"%s\"", key);
}

int
cm_ft_check(const struct cm_finetune *ft, struct dn_error *err)
{
	if (ft->lora_rank > 0 && ft->ntargets == 0)
		return dn_error_set(err, DN_EINVAL, "--lora-targets", "LoRA needs target modules (e.g. "
		    "--lora-targets attention.q,attention.v)");
	if (ft->lora_rank == 0 && ft->ntargets > 0)
		return dn_error_set(err, DN_EINVAL, "--lora-rank", "LoRA targets need a rank (--lora-rank R)");
	if (ft->lora_rank == 0 && ft->lora_dropout > 0.0)
		return dn_error_set(err, DN_EINVAL, "--lora-dropout", "a LoRA dropout needs LoRA (--lora-rank R "
		    "--lora-targets ...)");
	if (ft->lora_rank == 0 && ft->use_dora)
		return dn_error_set(err, DN_EINVAL, "--use-dora", "DoRA needs LoRA (--lora-rank R --lora-targets ...)");
	return 0;
}

int
cm_ft_active(const struct cm_finetune *ft)
{
	return ft->nfreeze > 0 || ft->ntrain > 0 || ft->lora_rank > 0 || ft->quant != CM_QUANT_NONE;
}

static json_t *
list_json(const char (*sel)[CM_FT_SEL_LEN], int n)
{
	json_t *a = json_array();

	for (int i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a, json_string(sel[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int
cm_ft_to_json(const struct cm_finetune *ft, json_t *w)
{
	int fail = 0;

	if (ft->nfreeze > 0)
		fail |= json_object_set_new(w, "freeze", list_json(ft->freeze, ft->nfreeze));
	if (ft->ntrain > 0)
		fail |= json_object_set_new(w, "train", list_json(ft->train, ft->ntrain));
	if (ft->lora_rank > 0) {
		json_t *l = json_pack("{s:o,s:o}", "rank", ft->rank_expr[0] ? json_string(ft->rank_expr) :
		    json_integer(ft->lora_rank), "targets", list_json(ft->targets, ft->ntargets));
		/* written only when it costs something, so that the queries of
		 * earlier versions keep their ids */
		if (l != NULL && ft->lora_dropout > 0.0)
			fail |= json_object_set_new(l, "dropout", json_real(ft->lora_dropout));
		if (l != NULL && ft->use_dora)
			fail |= json_object_set_new(l, "use_dora", json_true());
		fail |= json_object_set_new(w, "lora", l);
	}
	if (ft->quant != CM_QUANT_NONE)
		fail |= json_object_set_new(w, "quantize", json_string(cm_quant_name(ft->quant)));
	return fail ? -1 : 0;
}

/* The last component of an operator path ("...[1].c_attn" -> "c_attn"). */
static const char *
last_component(const char *path)
{
	const char *dot = strrchr(path, '.');

	return dot != NULL ? dot + 1 : path;
}

static int
match_one(const char *sel, const char *rule, const char *parent, const char *path)
{
	size_t n;

	if (strcmp(sel, "all") == 0)
		return 1;
	if (strncmp(sel, "$.", 2) == 0) {
		n = strlen(sel);
		return strncmp(path, sel, n) == 0 && (path[n] == '\0' || path[n] == '.' || path[n] == '[');
	}
	if (cm_ft_module_name(sel) && strcmp(last_component(path), sel) == 0)
		return 1;       /* a module of that name (module_parts) */
	sel = resolve_peft(sel);
	if (strcmp(sel, "all-linear") == 0)
		sel = "linear";         /* the output layer: cm_ft_lora_target */
	if (strcmp(sel, rule) == 0 || (parent != NULL && strcmp(sel, parent) == 0))
		return 1;
	if (parent == NULL || strcmp(parent, "attention") != 0)
		return 0;
	for (size_t i = 0; i < NPARTS; i++)
		if (strcmp(sel, attn_parts[i].sel) == 0)
			for (size_t j = 0; j < NSUBS && attn_parts[i].subs[j] != NULL; j++)
				if (strcmp(last_component(path), attn_parts[i].subs[j]) == 0)
					return 1;
	return 0;
}

int
cm_ft_match(const char (*sel)[CM_FT_SEL_LEN], int n, const char *rule, const char *parent,
    const char *path)
{
	for (int i = 0; i < n; i++)
		if (match_one(sel[i], rule, parent, path))
			return 1;
	return 0;
}

int
cm_ft_frozen(const struct cm_workload *wl, const char *rule, const char *parent, const char *path)
{
	const struct cm_finetune *ft = &wl->ft;

	if (!wl->training || cm_ft_match(ft->train, ft->ntrain, rule, parent, path))
		return 0;
	return ft->lora_rank > 0 || cm_ft_match(ft->freeze, ft->nfreeze, rule, parent, path);
}

int
cm_ft_tied_frozen(const struct cm_workload *wl, const char *path)
{
	const struct cm_finetune *ft = &wl->ft;

	if (!wl->training || cm_ft_match(ft->train, ft->ntrain, "linear", NULL, path) ||
	    cm_ft_match(ft->train, ft->ntrain, "embedding", NULL, ""))
		return 0;
	return ft->lora_rank > 0 || cm_ft_match(ft->freeze, ft->nfreeze, "embedding", NULL, "") ||
	    cm_ft_match(ft->freeze, ft->nfreeze, "linear", NULL, path);
}

/* Whether s picks linears by their kind ("all", "all-linear", "linear"). */
static int
by_kind(const char *s)
{
	return strcmp(s, "all") == 0 || strcmp(s, "all-linear") == 0 || strcmp(s, "linear") == 0;
}

/* Whether list sel (n selectors) picks the linear (rule "linear" or
 * CM_FT_PARAM_LINEAR) or (rule) convolution at path. */
static int
targets_pick(const char (*sel)[CM_FT_SEL_LEN], int n, const char *rule, const char *parent, const char *path)
{
	int param = strcmp(rule, CM_FT_PARAM_LINEAR) == 0;
	int linear = param || strcmp(rule, "linear") == 0;

	for (int i = 0; i < n; i++) {
		/* peft's all-linear leaves out a Hugging Face model's output
		 * embeddings (get_output_embeddings: the LM head, lm_head in
		 * every causal LM of transformers), nothing else */
		if (strcmp(sel[i], "all-linear") == 0 && strcmp(last_component(path), "lm_head") == 0)
			continue;
		/* a weight that is not an nn.Linear module's (nn.MultiheadAttention's
		 * in_proj_weight: op_attention.c's in_proj, an ONNX import's
		 * "linear_module": false): peft's all-linear (every nn.Linear
		 * and Conv1D module) leaves it out, and so do the selectors of
		 * linears by kind; attention.qkv, q, k and v, its module name and
		 * a path still name it */
		if (param && by_kind(sel[i]))
			continue;
		/* a convolution by its rule, its module name or a path: "all"
		 * and the linear selectors keep their meaning of linears */
		if (!linear && by_kind(sel[i]))
			continue;
		if (cm_ft_match(&sel[i], 1, linear ? "linear" : rule, parent, path))
			return 1;
	}
	return 0;
}

int
cm_ft_lora_target(const struct cm_workload *wl, const char *rule, const char *parent, const char *path)
{
	return wl->training && wl->ft.lora_rank > 0 &&
	    targets_pick(wl->ft.targets, wl->ft.ntargets, rule, parent, path);
}

void
cm_ft_config_rank(const struct cm_model_def *def, const struct cm_workload *wl, union expr_val *vals)
{
	int h = cm_def_find_hp(def, "lora_r");
	const struct cm_hparam *hp = h >= 0 ? &def->hps[h] : NULL;

	if (!wl->training || wl->ft.lora_rank == 0 || wl->ft.rank_expr[0] != '\0' || hp == NULL ||
	    hp->type != CM_HP_INT || (hp->has_min && wl->ft.lora_rank < hp->min) ||
	    (hp->has_max && wl->ft.lora_rank > hp->max))
		return;
	vals[h].i = wl->ft.lora_rank;
}

expr_id
cm_ft_dora_on(struct expr_graph *g, const struct cm_workload *wl)
{
	if (!wl->training || wl->ft.lora_rank == 0)
		return expr_int(g, 0);
	if (wl->ft.dora_hp > 0)
		return wl->ft.dora_on < 0 ? expr_int(g, 0) :
		    expr_eq(g, expr_var(g, wl->ft.dora_hp - 1), expr_int(g, wl->ft.dora_on));
	return expr_int(g, wl->ft.use_dora != 0);
}

/* The module name of op path `path` for suggestions: its last component,
 * or, for a part of a LoRA composite, the adapted linear's; NULL when it
 * is not a name (a repeat's "[3]", a branch). Written into buf. */
static const char *
path_module(const char *path, char *buf, size_t len)
{
	static const char *const lora_parts[] = { "base_layer", "lora_A", "lora_B", "lora_scale", "lora_add",
		"lora_dropout", "lora_magnitude_vector" };
	const char *c = last_component(path);

	for (size_t i = 0; i < sizeof lora_parts / sizeof lora_parts[0] && c > path; i++)
		if (strcmp(c, lora_parts[i]) == 0) {
			const char *e = c - 1, *b = e;
			while (b > path && b[-1] != '.')
				b--;
			if ((size_t)(e - b) >= len)
				return NULL;
			memcpy(buf, b, (size_t)(e - b));
			buf[e - b] = '\0';
			return cm_ft_module_name(buf) ? buf : NULL;
		}
	if (!cm_ft_module_name(c) || strlen(c) >= len)
		return NULL;
	strcpy(buf, c);
	return buf;
}

/* One list: each of its names that is no selector dnnsat knows
 * (known_selector) must be a module of the model, a component of an
 * operator's path; else DN_EINVAL at path. */
static int
check_list(const char (*sel)[CM_FT_SEL_LEN], int n, const struct cm_graph *m, const char *model, const char *path,
    struct dn_error *err)
{
	for (int i = 0; i < n; i++) {
		const char *cands[CM_FT_NAMED + 64];
		char where[160];
		char names[64][CM_FT_SEL_LEN], buf[CM_FT_SEL_LEN], near[128] = "";
		int nc, nn = 0, found = 0;
		if (known_selector(sel[i]))
			continue;
		for (int k = 0; k < m->nops && !found; k++)
			found = m->ops[k].path != NULL && path_has_component(m->ops[k].path, sel[i]);
		if (found)
			continue;
		/* did you mean: the selectors dnnsat knows and the model's module names */
		nc = named_selectors(cands);
		for (int k = 0; k < m->nops && nn < 64; k++) {
			const char *c = m->ops[k].path != NULL ? path_module(m->ops[k].path, buf, sizeof buf) : NULL;
			int dup = 0;
			for (int j = 0; c != NULL && j < nn && !dup; j++)
				dup = strcmp(names[j], c) == 0;
			if (c != NULL && !dup) {
				strcpy(names[nn], c);
				cands[nc++] = names[nn++];
			}
		}
		dn_suggest(sel[i], cands, nc, near, sizeof near);
		/* the list's i-th selector (of a JSON list, its element; a
		 * space's value is one comma-separated string) */
		if (strncmp(path, "$.space.", 8) == 0)
			dn_fmt(where, sizeof where, "%s", path);
		else
			dn_fmt(where, sizeof where, "%s[%d]", path, i);
		if (near[0] != '\0')
			return dn_error_set(err, DN_EINVAL, where, "unknown selector \"%s\": model %s has no module of that "
			    "name (did you mean %s?)", sel[i], model, near);
		return dn_error_set(err, DN_EINVAL, where, "unknown selector \"%s\": model %s has no module of that name "
		    "(give \"all\", an operator type such as \"linear\", attention.q/k/v/qkv/out, a module name such as "
		    "q_proj, c_fc or dense, or an operator path prefix such as \"$.layers[3]\")", sel[i], model);
	}
	return 0;
}

int
cm_ft_check_modules(const struct cm_workload *wl, const struct cm_model_def *def, const struct cm_graph *m,
    struct dn_error *err)
{
	const struct cm_finetune *ft = &wl->ft;
	const char *model = def->name != NULL ? def->name : "(unnamed)";

	if (check_list(ft->freeze, ft->nfreeze, m, model, "$.workload.freeze", err) != 0 ||
	    check_list(ft->train, ft->ntrain, m, model, "$.workload.train", err) != 0)
		return -1;
	if (ft->lora_rank > 0 && ft->targets_hp == 0 &&
	    check_list(ft->targets, ft->ntargets, m, model, "$.workload.lora.targets", err) != 0)
		return -1;
	for (int j = 0; ft->lora_rank > 0 && ft->targets_hp > 0 && j < ft->ntgt_choices; j++) {
		char path[128];
		dn_fmt(path, sizeof path, "$.space.%.64s._value[%d]", def->hps[ft->targets_hp - 1].name, j);
		if (check_list(ft->tgt_choices[j], ft->ntgt[j], m, model, path, err) != 0)
			return -1;
	}
	return 0;
}
