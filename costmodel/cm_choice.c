/*
 * cm_choice.c - the workload options that pick one of a few named values
 * (cm_choice_*): zero_grad (set_to_none|zeros), optimizer_impl
 * (foreach|for_loop|fused) and softmax_saves (output|output_and_input). One
 * table gives each its JSON workload field, its command-line option, its
 * values (the first is the default) with what each means, and the int
 * member of struct cm_workload that holds the index of the value chosen;
 * the query parser (solver/query_parse.c), `dnnsat
 * estimate`'s options (cli/cli_query.c) and the estimate's JSON body
 * (cli/cli_estimate.c) all read it, so a value is spelled, checked and
 * explained in one place.
 *
 * cm_flag_on is a true/false setting a search space may pick (Hugging
 * Face's fp16, load_in_4bit, ...) as a condition; cm_alt_add keeps a list
 * of a setting's values, each under its condition.
 *
 * Errors name the field ("$.workload.zero_grad") or the option
 * ("--zero-grad"), list the allowed values and add the closest one when
 * the text given is near it (common/dn_suggest.c: "zero" -> zeros).
 */
#include "costmodel.h"
#include "dn_suggest.h"

#include <stddef.h>
#include <string.h>

struct cm_choice {
	const char *field;          /* the JSON workload field */
	const char *option;         /* the command-line option */
	const char *values[CM_CHOICE_MAX];     /* [0] is the default; NULL after the last */
	const char *notes[CM_CHOICE_MAX];      /* what each value means (the JSON error says it) */
	size_t member;              /* offsetof the int in struct cm_workload: the index chosen */
};

/* The defaults and their meaning: PyTorch 2.0's release notes
 * (optimizer.zero_grad(set_to_none=True) became the default; torch.optim
 * uses the foreach implementation on CUDA by default); softmax_saves:
 * derivatives.yaml's formulas for _softmax and _log_softmax named `self`
 * up to PyTorch 1.10, so autograd kept the input beside the result
 * (pytorch/pytorch issue 64000); since pull 66018 (October 2021, PyTorch
 * 1.11) they take only its dtype. optimizer_impl fused: torch.optim's
 * fused=True (one CUDA kernel updates each group of weights in place:
 * Adam and AdamW, SGD; Hugging Face's optim="adamw_torch_fused", its
 * default from PyTorch 2.8). */
static const struct cm_choice choices[] = {
	{ "zero_grad", "--zero-grad", { "set_to_none", "zeros" },
	  { "the default since PyTorch 2.0", "set_to_none=False: gradients stay allocated across steps" },
	  offsetof(struct cm_workload, keep_grads) },
	{ "optimizer_impl", "--optimizer-impl", { "foreach", "for_loop", "fused" },
	  { "the default on CUDA since PyTorch 2.0", "one weight at a time: PyTorch < 2.0, transformers.AdamW",
	    "fused=True: in place, no temporaries; Adam, AdamW and SGD" },
	  offsetof(struct cm_workload, optimizer_impl) },
	{ "softmax_saves", "--softmax-saves", { "output", "output_and_input" },
	  { "the result only: PyTorch >= 1.11", "the input too: PyTorch <= 1.10" },
	  offsetof(struct cm_workload, softmax_keeps_input) },
};
#define NCHOICES ((int)(sizeof choices / sizeof choices[0]))

/* The choice whose option (by_option) or field is name, or NULL. */
static const struct cm_choice *
find(const char *name, int by_option)
{
	for (int i = 0; i < NCHOICES; i++)
		if (strcmp(name, by_option ? choices[i].option : choices[i].field) == 0)
			return &choices[i];
	return NULL;
}

const struct cm_choice *
cm_choice_by_field(const char *field)
{
	return find(field, 0);
}

const struct cm_choice *
cm_choice_by_option(const char *option)
{
	return find(option, 1);
}

const char *
cm_choice_field(const struct cm_choice *c)
{
	return c->field;
}

/* The member of wl that holds c's index. */
static int *
slot(const struct cm_choice *c, struct cm_workload *wl)
{
	return (int *)(void *)((char *)wl + c->member);
}

static int
chosen(const struct cm_choice *c, const struct cm_workload *wl)
{
	return *(const int *)(const void *)((const char *)wl + c->member);
}

/* How many values c has. */
static int
nvalues(const struct cm_choice *c)
{
	int n = 0;

	while (n < CM_CHOICE_MAX && c->values[n] != NULL)
		n++;
	return n;
}

/* The index of s among c's values, or -1 (s NULL or not one of them). */
static int
value_index(const struct cm_choice *c, const char *s)
{
	for (int i = 0; s != NULL && i < nvalues(c); i++)
		if (strcmp(s, c->values[i]) == 0)
			return i;
	return -1;
}

/* Sets err at path to message + " (did you mean X?)" when s is close to a
 * value. Returns -1. */
static int
refuse(const struct cm_choice *c, const char *s, const char *path, const char *message, struct dn_error *err)
{
	char near[128] = "";     /* at most the values */

	if (s != NULL)
		dn_suggest(s, c->values, nvalues(c), near, sizeof near);
	if (near[0] != '\0')
		return dn_error_set(err, DN_EINVAL, path, "%s (did you mean %s?)", message, near);
	return dn_error_set(err, DN_EINVAL, path, "%s", message);
}

/* Appends c's values to buf: ` "a" (note), "b" (note) or "c" (note)`
 * quoted with their notes (JSON errors), ` a, b or c` bare (options). */
static void
list_values(const struct cm_choice *c, int with_notes, char *buf, size_t size)
{
	int n = nvalues(c);

	for (int k = 0; k < n; k++) {
		size_t len = strlen(buf);
		const char *sep = k == 0 ? "" : k == n - 1 ? " or" : ",";
		if (with_notes)
			dn_fmt(buf + len, size - len, "%s \"%s\" (%s)", sep, c->values[k], c->notes[k]);
		else
			dn_fmt(buf + len, size - len, "%s %s", sep, c->values[k]);
	}
}

int
cm_choice_from_json(const struct cm_choice *c, const json_t *v, struct cm_workload *wl, struct dn_error *err)
{
	const char *s = json_string_value(v);
	int i = value_index(c, s);
	char path[64], message[sizeof err->message] = "must be";

	if (i < 0) {
		dn_fmt(path, sizeof path, "$.workload.%s", c->field);
		list_values(c, 1, message, sizeof message);
		return refuse(c, s, path, message, err);
	}
	*slot(c, wl) = i;
	return 0;
}

int
cm_choice_from_option(const struct cm_choice *c, const char *v, struct cm_workload *wl, struct dn_error *err)
{
	int i = value_index(c, v);
	char message[sizeof err->message];

	if (i < 0) {
		dn_fmt(message, sizeof message, "\"%s\" is not", v != NULL ? v : "");
		list_values(c, 0, message, sizeof message);
		return refuse(c, v, c->option, message, err);
	}
	*slot(c, wl) = i;
	return 0;
}

int
cm_choice_to_json(const struct cm_workload *wl, json_t *workload)
{
	for (int i = 0; i < NCHOICES; i++) {
		int k = chosen(&choices[i], wl);
		if (k != 0 && json_object_set_new(workload, choices[i].field, json_string(choices[i].values[k])) != 0)
			return -1;
	}
	return 0;
}

expr_id
cm_flag_on(struct expr_graph *g, int hp, int on, int fixed)
{
	if (hp <= 0)
		return expr_int(g, fixed != 0);
	if (on < 0)
		return expr_int(g, 0);
	return expr_eq(g, expr_var(g, hp - 1), expr_int(g, on));
}

void
cm_alt_add(struct expr_graph *g, int value, expr_id cond, int *n, int *values, expr_id *conds)
{
	if (expr_is_int_const(g, cond, 0))
		return;
	for (int i = 0; i < *n; i++)
		if (values[i] == value) {
			conds[i] = expr_or(g, conds[i], cond);
			return;
		}
	values[*n] = value;
	conds[(*n)++] = cond;
}
