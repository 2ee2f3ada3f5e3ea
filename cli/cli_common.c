/*
 * cli_common.c - what the commands share: error and warning lines, the
 * budgets line, JSON files read safely ("-": standard input, once), and the
 * options that build a solver query as JSON (solver/query.h) for count ...
 * max, min and prune: cli_req_*, and their --threads and --timeout.
 * (estimate's options: cli_query.c.) What a query takes once (the model,
 * the space, a budget of each quantity, a binding of each parameter) is an
 * error the second time, naming both: the last would win unsaid.
 * Errors name the option; nothing here exits the process.
 */
#include "cli.h"
#include "dn_number.h"
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

int
cli_fail(const struct dn_error *err)
{
	cli_print_error(err);
	return err->code == DN_ETIMEOUT ? 3 : 2;      /* the --timeout passed, or bad input */
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

int
cli_parse_threads(const char *opt, const char *v, int *out, struct dn_error *err)
{
	char *end;
	long x;

	errno = 0;
	x = v != NULL ? strtol(v, &end, 10) : 0;
	if (v == NULL || *v == '\0' || *end != '\0' || errno != 0 || x < 1 || x > 1024)
		return dn_error_set(err, DN_EINVAL, opt, "must be a number of threads from 1 to 1024");
	*out = (int)x;
	return 0;
}

int
cli_parse_timeout(const char *opt, const char *v, double *out, struct dn_error *err)
{
	double t;

	if (v == NULL || dn_decimal_all(v, &t) != 0 || !(t > 0 && t <= CLI_MAX_TIMEOUT))
		return dn_error_set(err, DN_EINVAL, opt, "must be seconds, more than 0 and at most %d (a day)",
		    CLI_MAX_TIMEOUT);
	*out = t;
	return 0;
}

/* ---- the options that build a solver query (count ... max, min, prune) ---- */

/* cli_load_json_file of "-": standard input, which can be read once (a
 * second "-" would find it at its end). */
static int
load_stdin(const char *what, json_t **out, struct dn_error *err)
{
	static const char *read_for;    /* what read it, for the error of a second "-" */
	json_error_t jerr;

	if (read_for != NULL)
		return dn_error_set(err, DN_EINVAL, what, "-: standard input was read already (for %s): give one "
		    "file as -", read_for);
	read_for = what != NULL ? what : "an input";
	*out = json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr);
	if (*out == NULL)
		return dn_error_set(err, DN_EINVAL, what, "standard input: line %d, column %d: %s", jerr.line,
		    jerr.column, jerr.text);
	return 0;
}

int
cli_load_json_file(const char *file, const char *what, json_t **out, struct dn_error *err)
{
	json_error_t jerr;
	struct stat st;
	FILE *f;
	int fd;

	*out = NULL;
	if (strcmp(file, "-") == 0)
		return load_stdin(what, out, err);
	/* opened without blocking and checked before reading: a FIFO named
	 * x.json would otherwise wait for a writer forever */
	fd = open(file, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return dn_error_set(err, DN_EINVAL, what, "%s: no such file", file);
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
	r->given = json_object();
}

/* Records that `what` ("model", "the memory budget") was given as
 * `typed` ("--preset resnet50"); -1 with err naming opt and both when it
 * was given before: the last would win unsaid. */
static int
given_once(json_t *given, const char *opt, const char *what, const char *typed, struct dn_error *err)
{
	const char *first = json_string_value(json_object_get(given, what));

	if (first == NULL)
		return json_object_set_new(given, what, json_string(typed)) == 0 ? 0 :
		    dn_error_set(err, DN_ENOMEM, opt, "out of memory");
	if (strcmp(what, "model") == 0)
		return dn_error_set(err, DN_EINVAL, opt, "give one model (%s and %s)", first, typed);
	return dn_error_set(err, DN_EINVAL, opt, "%s given twice (%s and %s): give one", what, first, typed);
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

/* memory=LIMIT:safe or memory=LIMIT:expected (LIMIT may be empty: the
 * device's usable memory) into the query's {"limit": LIMIT, "estimate": E}. */
static int
memory_estimate(json_t *budgets, const char *opt, struct dn_error *err)
{
	const char *v = json_string_value(json_object_get(budgets, "memory")), *colon;
	json_t *o;

	if (v == NULL || (colon = strrchr(v, ':')) == NULL)
		return 0;
	if (strcmp(colon + 1, "safe") != 0 && strcmp(colon + 1, "expected") != 0)
		return dn_error_set(err, DN_EINVAL, opt, "memory=%s: the estimate after ':' must be \"safe\" "
		    "or \"expected\" (e.g. memory=16GiB:safe)", v);
	o = json_pack("{s:s}", "estimate", colon + 1);
	if (colon > v)
		json_object_set_new(o, "limit", json_stringn(v, (size_t)(colon - v)));
	json_object_set_new(budgets, "memory", o);
	return 0;
}

int
cli_budget_option(json_t *budgets, json_t *given, const char *opt, const char *v, struct dn_error *err)
{
	const char *eq = strchr(v, '=');

	if (eq != NULL && eq > v && eq - v <= 100) {   /* else req_set_pair says what is wrong */
		char what[160], typed[512];
		dn_fmt(what, sizeof what, "the %.*s budget", (int)(eq - v), v);
		dn_fmt(typed, sizeof typed, "%s %s", opt, v);
		if (given_once(given, opt, what, typed, err) != 0)
			return -1;
	}
	if (req_set_pair(budgets, opt, v, err) != 0)
		return -1;
	return strncmp(v, "memory=", 7) == 0 ? memory_estimate(budgets, opt, err) : 0;
}

/* Appends the comma-separated items of `v` to the list obj[key] (made when
 * missing); the query parser checks each. 0, or -1 when out of memory. */
static int
append_list(json_t *obj, const char *key, const char *v)
{
	json_t *a = json_object_get(obj, key);
	const char *end;

	if (a == NULL && json_object_set_new(obj, key, a = json_array()) != 0)
		return -1;
	for (;;) {
		end = strchr(v, ',');
		if (json_array_append_new(a, end != NULL ? json_stringn(v, (size_t)(end - v)) : json_string(v)) != 0)
			return -1;
		if (end == NULL)
			return 0;
		v = end + 1;
	}
}

/* What option `a` with value `v` gives that may be given once, into
 * what: "model", "the search space", "the binding of NAME"; 0 when it is
 * repeatable (budgets: cli_budget_option checks each quantity once). */
static int
once_key(const char *a, const char *v, char *what, size_t len)
{
	const char *eq = strchr(v, '=');

	if (strcmp(a, "--preset") == 0 || strcmp(a, "--template") == 0 || strcmp(a, "--model") == 0)
		return dn_fmt(what, len, "model") > 0;
	if (strcmp(a, "--space") == 0)
		return dn_fmt(what, len, "the search space") > 0;
	if (eq == NULL || eq - v > 100)
		return 0;       /* not NAME=VALUE: the option's own check says so */
	if (strcmp(a, "--bind") == 0)
		return dn_fmt(what, len, "the binding of %.*s", (int)(eq - v), v) > 0;
	return 0;
}

int
cli_req_option(struct cli_req *r, const char *a, const char *v, struct dn_error *err)
{
	static const char *const with_value[] = { "--preset", "--template", "--model", "--space", "--device",
		"--budget", "--set", "--constraint", "--optimizer", "--dtype", "--attention", "--grad-accum",
		"--bind", "--freeze", "--train", "--lora-rank", "--lora-targets", "--lora-dropout", "--quantize", "--zero-grad",
		"--optimizer-impl", "--softmax-saves", "--pytorch", "--convention" };
	json_t *j;
	size_t i;
	char what[160];

	if (strcmp(a, "--inference") == 0) {
		json_object_set_new(r->workload, "mode", json_string("inference"));
		return 1;
	}
	if (strcmp(a, "--checkpointing") == 0) {
		json_object_set_new(r->workload, "checkpointing", json_true());
		return 1;
	}
	if (strcmp(a, "--use-dora") == 0) {
		json_t *lora = json_object_get(r->workload, "lora");
		if (lora == NULL)
			json_object_set_new(r->workload, "lora", lora = json_object());
		json_object_set_new(lora, "use_dora", json_true());
		return 1;
	}
	for (i = 0; i < sizeof with_value / sizeof with_value[0] && strcmp(a, with_value[i]) != 0; i++)
		;
	if (i == sizeof with_value / sizeof with_value[0])
		return 0;
	if (v == NULL)
		return dn_error_set(err, DN_EINVAL, a, "needs a value");
	if (once_key(a, v, what, sizeof what)) {
		char typed[512];
		dn_fmt(typed, sizeof typed, "%s %s", a, v);
		if (given_once(r->given, a, what, typed, err) != 0)
			return -1;
	}
	if (strcmp(a, "--preset") == 0 || strcmp(a, "--template") == 0) {
		json_object_set_new(r->req, "model", json_pack("{s:s}", a + 2, v));
	} else if (strcmp(a, "--model") == 0 || strcmp(a, "--space") == 0) {
		if ((a[2] == 'm' ? cli_load_model_file(v, &j, err) : cli_load_json_file(v, a, &j, err)) != 0)
			return -1;
		json_object_set_new(r->req, a + 2, j);
	} else if (strcmp(a, "--device") == 0) {
		json_object_set_new(r->req, "device", json_string(v));
	} else if (strcmp(a, "--budget") == 0) {
		if (cli_budget_option(r->budgets, r->given, a, v, err) != 0)
			return -1;
	} else if (strcmp(a, "--set") == 0) {
		if (req_set_pair(r->fixed, a, v, err) != 0)
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
	} else if (strcmp(a, "--freeze") == 0 || strcmp(a, "--train") == 0) {
		if (append_list(r->workload, a + 2, v) != 0)
			return dn_error_set(err, DN_ENOMEM, a, "out of memory");
	} else if (strcmp(a, "--lora-rank") == 0 || strcmp(a, "--lora-targets") == 0 ||
	    strcmp(a, "--lora-dropout") == 0) {
		/* {"lora": {"rank": R, "targets": [...], "dropout": P}}: the query parser checks them */
		json_t *lora = json_object_get(r->workload, "lora");
		if (lora == NULL)
			json_object_set_new(r->workload, "lora", lora = json_object());
		if (a[7] == 't') {
			if (append_list(lora, "targets", v) != 0)
				return dn_error_set(err, DN_ENOMEM, a, "out of memory");
		} else {
			json_t *n = json_loads(v, JSON_DECODE_ANY, NULL);
			json_object_set_new(lora, a[7] == 'r' ? "rank" : "dropout", n != NULL ? n : json_string(v));
		}
	} else if (cm_choice_by_option(a) != NULL) {     /* --zero-grad, --optimizer-impl, --softmax-saves */
		json_object_set_new(r->workload, cm_choice_field(cm_choice_by_option(a)), json_string(v));
	} else if (strcmp(a, "--convention") == 0) {
		/* how MACs (and the macs, flops budgets) count, as estimate's option */
		json_object_set_new(r->workload, "macs_convention", json_string(v));
	} else if (strcmp(a, "--grad-accum") == 0) {
		/* an integer when it reads as one; the query parser names anything else */
		json_t *n = json_loads(v, JSON_DECODE_ANY, NULL);
		json_object_set_new(r->workload, "grad_accum", n != NULL ? n : json_string(v));
	} else
		json_object_set_new(r->workload, a + 2, json_string(v));
	return 2;
}

/* The options' `mine` added to the query's field `key` (a query file's):
 * an object's members set over the file's (the option wins for its own
 * member only), an array extended, anything else replaced, as prune
 * applies them to each query file (cli_batch_input.c). */
static void
req_add(json_t *req, const char *key, json_t *mine)
{
	json_t *file = json_object_get(req, key), *both = NULL;

	if (json_is_object(file) && json_is_object(mine)) {
		if ((both = json_deep_copy(file)) != NULL)
			json_object_update(both, mine);
	} else if (json_is_array(file) && json_is_array(mine)) {
		if ((both = json_deep_copy(file)) != NULL)
			json_array_extend(both, mine);
	}
	if (both != NULL)
		json_object_set_new(req, key, both);
	else
		json_object_set(req, key, mine);
}

json_t *
cli_req_finish(struct cli_req *r)
{
	json_t *req = r->req;

	r->req = NULL;
	if (json_object_size(r->budgets) > 0)
		req_add(req, "budgets", r->budgets);
	if (json_array_size(r->constraints) > 0)
		req_add(req, "constraints", r->constraints);
	if (json_object_size(r->fixed) > 0)
		req_add(req, "fixed", r->fixed);
	if (json_object_size(r->workload) > 0)
		req_add(req, "workload", r->workload);
	if (json_object_size(r->bind) > 0)
		req_add(req, "bind", r->bind);
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
	json_decref(r->given);
	memset(r, 0, sizeof *r);
}

void
cli_print_rules(const json_t *item)
{
	const json_t *rules = json_object_get(item, "rules");
	int complete = json_is_true(json_object_get(item, "rules_complete"));
	json_int_t unnamed = json_integer_value(json_object_get(item, "rules_failing")) -
	    (json_int_t)json_array_size(rules);
	size_t i;
	json_t *r;

	if (rules == NULL)
		return;
	if (json_array_size(rules) == 0)
		printf("    (%s)\n", complete ? "each shape rule holds somewhere: they conflict only together, or with the "
		    "other parts" : "no rule found that fails everywhere, before the deadline or among the first 64");
	json_array_foreach(rules, i, r) {
		json_int_t more = json_integer_value(json_object_get(r, "places")) - 1;
		printf("    no configuration satisfies: %s (%s", json_string_value(json_object_get(r, "rule")),
		    json_string_value(json_object_get(r, "path")));
		if (more > 0)
			printf(" and %" JSON_INTEGER_FORMAT " more place%s", more, more == 1 ? "" : "s");
		printf(")\n");
	}
	if (unnamed > 0)
		printf("    and %" JSON_INTEGER_FORMAT " more rule%s that no configuration satisfies\n", unnamed,
		    unnamed == 1 ? "" : "s");
	if (json_array_size(rules) > 0 && !complete)
		printf("    (rules checked: the first 64 distinct ones, before the deadline; others may fail too)\n");
}

/* One part of a check: "FAIL memory 8.90 GiB > 3 GiB" for a budget (its
 * value in its unit, the limit as the query states it), "ok   hidden %
 * heads == 0 (value 0)" for a constraint with a value. */
void
cli_print_part(const json_t *c)
{
	const char *label = json_string_value(json_object_get(c, "constraint"));
	const char *path = json_string_value(json_object_get(c, "path"));
	const char *op = label != NULL ? strstr(label, " <= ") : NULL;
	json_t *v = json_object_get(c, "value");
	int holds = json_is_true(json_object_get(c, "holds"));
	char num[64];

	if (op == NULL && label != NULL)
		op = strstr(label, " >= ");
	printf("%s ", holds ? "ok  " : "FAIL");
	if (op != NULL && json_is_number(v) && path != NULL && strncmp(path, "$.budgets.", 10) == 0) {
		cli_human_budget(path + 10, json_number_value(v), num, sizeof num);
		printf("%.*s %s %s %s\n", (int)(op - label), label, num,
		    holds ? (op[1] == '<' ? "<=" : ">=") : (op[1] == '<' ? ">" : "<"), op + 4);
		return;
	}
	printf("%s", label != NULL ? label : "");
	if (json_is_integer(v))
		printf(" (value %lld)", (long long)json_integer_value(v));
	else if (json_is_real(v))
		printf(" (value %.6g)", json_real_value(v));
	printf("\n");
}
