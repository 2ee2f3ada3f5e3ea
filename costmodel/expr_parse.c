/*
 * expr_parse.c - the expression language of model files (grammar in
 * docs/model-format.md), parsed by recursive descent straight into the
 * expression graph.
 *
 *   ternary := or ('?' ternary ':' ternary)?
 *   or      := and ('||' and)*        and := cmp ('&&' cmp)*
 *   cmp     := add (('=='|'!='|'<'|'<='|'>'|'>=') add)?
 *   add     := mul (('+'|'-') mul)*   mul := unary (('*'|'/'|'//'|'%') unary)*
 *   unary   := ('-'|'+'|'!') unary | primary
 *   primary := number | 'string' | name | name '(' args ')' | '(' ternary ')'
 *
 * Strings exist only as the other side of == / != against a categorical
 * variable, where they become the value's index. Constant division by zero
 * is an error here; a non-constant divisor is reported to the caller
 * (on_divisor) which turns it into a validity constraint. Errors name the
 * JSON path and quote the text around the problem. Nesting is capped so that
 * hostile input cannot exhaust the stack.
 */
#include "expr.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_TEXT 4096

/* A parsed operand: a node, or a string literal waiting for a comparison;
 * `enums` is set when the node is a bare categorical variable. */
struct term {
	expr_id id;
	const char *str;
	size_t strlen;
	const char *const *enums;
	int nenum;
};

struct parser {
	struct expr_graph *g;
	const struct expr_parse_opts *opts;
	const char *text, *p;
	const char *path;
	struct dn_error *err;
	int depth;
	int failed;
};

static void
fail(struct parser *ps, const char *at, const char *what)
{
	size_t off = (size_t)(at - ps->text);

	if (!ps->failed)
		dn_error_set(ps->err, DN_EINVAL, ps->path,
		    "expression \"%.200s\": %s at offset %zu%s%.40s%s", ps->text, what, off,
		    *at ? " (near \"" : "", at, *at ? "\")" : "");
	ps->failed = 1;
}

static void
skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

static int
accept(struct parser *ps, const char *tok)
{
	size_t n = strlen(tok);

	skip_ws(ps);
	if (strncmp(ps->p, tok, n) != 0)
		return 0;
	/* do not take '<' out of '<=', '/' out of '//', '=' alone, etc. */
	if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && ps->p[1] == '=')
		return 0;
	if (n == 1 && tok[0] == '/' && ps->p[1] == '/')
		return 0;
	ps->p += n;
	return 1;
}

static struct term ternary(struct parser *ps);

static struct term
node(expr_id id)
{
	struct term t;

	memset(&t, 0, sizeof t);
	t.id = id;
	return t;
}

/* Turns a term into a node; a lone string literal is an error. */
static expr_id
value(struct parser *ps, struct term t, const char *at)
{
	if (ps->failed)
		return EXPR_NONE;
	if (t.str != NULL) {
		fail(ps, at, "a string can only be compared (==, !=) with a categorical hyperparameter");
		return EXPR_NONE;
	}
	if (t.id == EXPR_NONE) {
		if (dn_error_isset(&ps->g->err))
			dn_error_set(ps->err, ps->g->err.code, ps->path, "expression \"%.200s\": %s",
			    ps->text, ps->g->err.message);
		ps->failed = 1;
	}
	return t.id;
}

static struct term
call(struct parser *ps, const char *name, size_t len, const char *at)
{
	expr_id args[2] = { EXPR_NONE, EXPR_NONE };
	int nargs = 0, want;
	struct expr_graph *g = ps->g;
	expr_id r = EXPR_NONE;

	static const struct { const char *name; int nargs; } fns[] = {
		{ "min", 2 }, { "max", 2 }, { "floor", 1 }, { "ceil", 1 },
		{ "round", 1 }, { "ceil_div", 2 }, { "make_divisible", 2 },
	};
	int which = -1;
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
		if (strlen(fns[i].name) == len && strncmp(fns[i].name, name, len) == 0)
			which = (int)i;
	if (which < 0) {
		fail(ps, at, "unknown function");
		return node(EXPR_NONE);
	}
	want = fns[which].nargs;
	skip_ws(ps);
	if (!accept(ps, ")")) {
		do {
			const char *argat = ps->p;
			struct term t = ternary(ps);
			if (ps->failed)
				return node(EXPR_NONE);
			if (nargs == 2) {
				fail(ps, argat, "too many arguments");
				return node(EXPR_NONE);
			}
			args[nargs++] = value(ps, t, argat);
			if (ps->failed)         /* a string argument, or a graph error */
				return node(EXPR_NONE);
		} while (accept(ps, ","));
		if (!accept(ps, ")")) {
			fail(ps, ps->p, "expected ')' after the arguments");
			return node(EXPR_NONE);
		}
	}
	if (nargs != want) {
		fail(ps, at, want == 1 ? "this function takes 1 argument" : "this function takes 2 arguments");
		return node(EXPR_NONE);
	}
	switch (which) {
	case 0: r = expr_min(g, args[0], args[1]); break;
	case 1: r = expr_max(g, args[0], args[1]); break;
	case 2: r = expr_floor(g, args[0]); break;
	case 3: r = expr_ceil(g, args[0]); break;
	case 4: r = expr_round(g, args[0]); break;
	case 5:
		if (expr_type_of(g, args[0]) != EXPR_INT || expr_type_of(g, args[1]) != EXPR_INT) {
			fail(ps, at, "ceil_div takes integers");
			return node(EXPR_NONE);
		}
		if (expr_is_int_const(g, args[1], 0)) {
			fail(ps, at, "division by zero");
			return node(EXPR_NONE);
		}
		if (!expr_is_const(g, args[1]) && ps->opts->on_divisor)
			ps->opts->on_divisor(ps->opts->ctx, args[1]);
		r = expr_cdiv(g, args[0], args[1]);
		break;
	case 6: {
		/* torchvision _make_divisible(v, d): max(d, int(v + d/2) // d * d),
		 * plus d when that fell below 90% of v. */
		expr_id v = expr_to_real(g, args[0]), d = args[1], dr, nv;
		if (expr_type_of(g, d) != EXPR_INT || !expr_is_const(g, d) || g->nodes[d].k.i <= 0) {
			fail(ps, at, "make_divisible needs a positive integer constant divisor");
			return node(EXPR_NONE);
		}
		dr = expr_to_real(g, d);
		nv = expr_mul(g, expr_div(g, expr_floor(g, expr_add(g, v, expr_div(g, dr, expr_real(g, 2.0)))), d), d);
		nv = expr_max(g, d, nv);
		r = expr_ite(g, expr_lt(g, expr_to_real(g, nv), expr_mul(g, expr_real(g, 0.9), v)),
		    expr_add(g, nv, d), nv);
		break;
	}
	}
	return node(r);
}

static struct term
primary(struct parser *ps)
{
	const char *at;
	struct term t;

	skip_ws(ps);
	at = ps->p;
	if (++ps->depth > MAX_DEPTH) {
		fail(ps, at, "expression nested too deeply");
		return node(EXPR_NONE);
	}
	if (accept(ps, "(")) {
		t = ternary(ps);
		if (!ps->failed && !accept(ps, ")"))
			fail(ps, ps->p, "expected ')'");
		ps->depth--;
		return t;
	}
	if (isdigit((unsigned char)*at) || (*at == '.' && isdigit((unsigned char)at[1]))) {
		const char *q = at;
		int real = 0;
		while (isdigit((unsigned char)*q))
			q++;
		if (*q == '.' || *q == 'e' || *q == 'E')
			real = 1;
		errno = 0;
		if (real) {
			char *end;
			double v = strtod(at, &end);
			if (errno != 0 || v != v || v > 1e300 || v < -1e300) {
				fail(ps, at, "number out of range");
				return node(EXPR_NONE);
			}
			ps->p = end;
			ps->depth--;
			return node(expr_real(ps->g, v));
		} else {
			char *end;
			long long v = strtoll(at, &end, 10);
			if (errno == ERANGE) {
				fail(ps, at, "integer does not fit 64 bits");
				return node(EXPR_NONE);
			}
			ps->p = end;
			ps->depth--;
			return node(expr_int(ps->g, v));
		}
	}
	if (*at == '\'' || *at == '"') {
		char quote = *at;
		const char *q = at + 1;
		while (*q && *q != quote)
			q++;
		if (*q != quote) {
			fail(ps, at, "unterminated string");
			return node(EXPR_NONE);
		}
		memset(&t, 0, sizeof t);
		t.id = EXPR_NONE;
		t.str = at + 1;
		t.strlen = (size_t)(q - at - 1);
		ps->p = q + 1;
		ps->depth--;
		return t;
	}
	if (isalpha((unsigned char)*at) || *at == '_') {
		const char *q = at;
		struct expr_name_info info;
		while (isalnum((unsigned char)*q) || *q == '_' || *q == '.')
			q++;
		ps->p = q;
		skip_ws(ps);
		if (*ps->p == '(') {
			ps->p++;
			t = call(ps, at, (size_t)(q - at), at);
			ps->depth--;
			return t;
		}
		if ((size_t)(q - at) == 4 && strncmp(at, "true", 4) == 0) {
			ps->depth--;
			return node(expr_int(ps->g, 1));
		}
		if ((size_t)(q - at) == 5 && strncmp(at, "false", 5) == 0) {
			ps->depth--;
			return node(expr_int(ps->g, 0));
		}
		memset(&info, 0, sizeof info);
		if (ps->opts == NULL || ps->opts->resolve == NULL ||
		    ps->opts->resolve(ps->opts->ctx, at, (size_t)(q - at), &info) != 0) {
			char msg[160];
			snprintf(msg, sizeof msg, "unknown name '%.*s' (not a hyperparameter, argument or index)",
			    (int)(q - at > 64 ? 64 : q - at), at);
			fail(ps, at, msg);
			return node(EXPR_NONE);
		}
		memset(&t, 0, sizeof t);
		t.id = info.id;
		t.enums = info.enum_values;
		t.nenum = info.n_enum;
		ps->depth--;
		return t;
	}
	fail(ps, at, *at ? "unexpected character" : "unexpected end of expression");
	return node(EXPR_NONE);
}

static struct term
unary(struct parser *ps)
{
	const char *at;
	struct term t;

	skip_ws(ps);
	at = ps->p;
	if (++ps->depth > MAX_DEPTH) {
		fail(ps, at, "expression nested too deeply");
		return node(EXPR_NONE);
	}
	if (accept(ps, "-")) {
		t = unary(ps);
		ps->depth--;
		expr_id v = value(ps, t, at);
		if (v < 0)
			return node(EXPR_NONE);
		return node(expr_sub(ps->g, expr_type_of(ps->g, v) == EXPR_INT ?
		    expr_int(ps->g, 0) : expr_real(ps->g, 0.0), v));
	}
	if (accept(ps, "+")) {
		t = unary(ps);
		ps->depth--;
		return node(value(ps, t, at));
	}
	if (accept(ps, "!")) {
		t = unary(ps);
		ps->depth--;
		return node(expr_not(ps->g, value(ps, t, at)));
	}
	t = primary(ps);
	ps->depth--;
	return t;
}

static struct term
mul(struct parser *ps)
{
	const char *at = ps->p;
	struct term t = unary(ps);

	while (!ps->failed) {
		int op;
		const char *opat;
		skip_ws(ps);
		opat = ps->p;
		if (accept(ps, "*")) op = '*';
		else if (accept(ps, "//")) op = 'f';
		else if (accept(ps, "/")) op = '/';
		else if (accept(ps, "%")) op = '%';
		else break;
		expr_id a = value(ps, t, at);
		expr_id b = value(ps, unary(ps), opat);
		if (ps->failed)
			break;
		if (op != '*') {
			struct expr_graph *g = ps->g;
			int zero = expr_is_const(g, b) &&
			    (expr_type_of(g, b) == EXPR_INT ? g->nodes[b].k.i == 0 : g->nodes[b].k.r == 0.0);
			if (zero) {
				fail(ps, opat, "division by zero");
				break;
			}
			if (!expr_is_const(g, b) && ps->opts != NULL && ps->opts->on_divisor)
				ps->opts->on_divisor(ps->opts->ctx, b);
			if (op == '%' && (expr_type_of(g, a) != EXPR_INT || expr_type_of(g, b) != EXPR_INT)) {
				fail(ps, opat, "% takes integers");
				break;
			}
		}
		switch (op) {
		case '*': t = node(expr_mul(ps->g, a, b)); break;
		case '/': t = node(expr_div(ps->g, a, b)); break;
		case '%': t = node(expr_mod(ps->g, a, b)); break;
		default:
			if (expr_type_of(ps->g, a) == EXPR_INT && expr_type_of(ps->g, b) == EXPR_INT)
				t = node(expr_div(ps->g, a, b));
			else
				t = node(expr_floor(ps->g, expr_div(ps->g, a, b)));
			break;
		}
	}
	return t;
}

static struct term
add(struct parser *ps)
{
	const char *at = ps->p;
	struct term t = mul(ps);

	while (!ps->failed) {
		int minus;
		const char *opat;
		skip_ws(ps);
		opat = ps->p;
		if (accept(ps, "+")) minus = 0;
		else if (accept(ps, "-")) minus = 1;
		else break;
		expr_id a = value(ps, t, at);
		expr_id b = value(ps, mul(ps), opat);
		if (ps->failed)
			break;
		t = node(minus ? expr_sub(ps->g, a, b) : expr_add(ps->g, a, b));
	}
	return t;
}

/* Resolves `name == 'literal'` to `var == index`. */
static expr_id
enum_compare(struct parser *ps, struct term var, struct term lit, int ne, const char *at)
{
	for (int i = 0; i < var.nenum; i++)
		if (strlen(var.enums[i]) == lit.strlen &&
		    strncmp(var.enums[i], lit.str, lit.strlen) == 0) {
			expr_id r = expr_eq(ps->g, var.id, expr_int(ps->g, i));
			return ne ? expr_not(ps->g, r) : r;
		}
	char msg[200];
	snprintf(msg, sizeof msg, "'%.*s' is not one of the categorical's values",
	    (int)(lit.strlen > 64 ? 64 : lit.strlen), lit.str);
	fail(ps, at, msg);
	return EXPR_NONE;
}

static struct term
cmp(struct parser *ps)
{
	const char *at = ps->p;
	struct term t = add(ps), u;
	int op;
	const char *opat;

	if (ps->failed)
		return t;
	skip_ws(ps);
	opat = ps->p;
	if (accept(ps, "==")) op = 'e';
	else if (accept(ps, "!=")) op = 'n';
	else if (accept(ps, "<=")) op = 'l';
	else if (accept(ps, ">=")) op = 'g';
	else if (accept(ps, "<")) op = '<';
	else if (accept(ps, ">")) op = '>';
	else return t;
	u = add(ps);
	if (ps->failed)
		return node(EXPR_NONE);
	if ((op == 'e' || op == 'n') && (t.str != NULL || u.str != NULL)) {
		if (t.str != NULL && u.enums != NULL)
			return node(enum_compare(ps, u, t, op == 'n', at));
		if (u.str != NULL && t.enums != NULL)
			return node(enum_compare(ps, t, u, op == 'n', opat));
		fail(ps, at, "a string can only be compared with a categorical hyperparameter");
		return node(EXPR_NONE);
	}
	if (t.enums != NULL || u.enums != NULL) {
		/* its values are strings: `block == 1` would silently mean its
		 * second value */
		struct term c = t.enums != NULL ? t : u;
		char msg[300];
		snprintf(msg, sizeof msg, "a categorical hyperparameter can only be compared (==, !=) with one of its "
		    "values as a string ('%.64s'%s)", c.enums[0], c.nenum > 1 ? ", ..." : "");
		fail(ps, t.enums != NULL ? at : opat, msg);
		return node(EXPR_NONE);
	}
	expr_id a = value(ps, t, at), b = value(ps, u, opat);
	switch (op) {
	case 'e': return node(expr_eq(ps->g, a, b));
	case 'n': return node(expr_ne(ps->g, a, b));
	case 'l': return node(expr_le(ps->g, a, b));
	case 'g': return node(expr_ge(ps->g, a, b));
	case '<': return node(expr_lt(ps->g, a, b));
	default:  return node(expr_gt(ps->g, a, b));
	}
}

static struct term
and_(struct parser *ps)
{
	const char *at = ps->p;
	struct term t = cmp(ps);

	while (!ps->failed && accept(ps, "&&")) {
		const char *bat = ps->p;
		expr_id a = value(ps, t, at), b = value(ps, cmp(ps), bat);
		t = node(expr_and(ps->g, a, b));
	}
	return t;
}

static struct term
or_(struct parser *ps)
{
	const char *at = ps->p;
	struct term t = and_(ps);

	while (!ps->failed && accept(ps, "||")) {
		const char *bat = ps->p;
		expr_id a = value(ps, t, at), b = value(ps, and_(ps), bat);
		t = node(expr_or(ps->g, a, b));
	}
	return t;
}

static struct term
ternary(struct parser *ps)
{
	const char *at = ps->p;
	struct term c;

	if (++ps->depth > MAX_DEPTH) {
		fail(ps, at, "expression nested too deeply");
		return node(EXPR_NONE);
	}
	c = or_(ps);
	if (!ps->failed && accept(ps, "?")) {
		const char *aat = ps->p;
		struct term a = ternary(ps);
		if (!ps->failed && !accept(ps, ":")) {
			fail(ps, ps->p, "expected ':' in 'c ? a : b'");
			return node(EXPR_NONE);
		}
		const char *bat = ps->p;
		struct term b = ternary(ps);
		expr_id cv = value(ps, c, at), av = value(ps, a, aat), bv = value(ps, b, bat);
		ps->depth--;
		return node(expr_ite(ps->g, cv, av, bv));
	}
	ps->depth--;
	return c;
}

expr_id
expr_parse(struct expr_graph *g, const char *text,
    const struct expr_parse_opts *opts, const char *path, struct dn_error *err)
{
	struct parser ps;
	struct term t;
	expr_id r;

	memset(&ps, 0, sizeof ps);
	ps.g = g;
	ps.opts = opts;
	ps.text = ps.p = text;
	ps.path = path;
	ps.err = err;
	if (strlen(text) > MAX_TEXT) {
		dn_error_set(err, DN_ERANGE, path, "expression longer than %d characters", MAX_TEXT);
		return EXPR_NONE;
	}
	t = ternary(&ps);
	if (ps.failed)
		return EXPR_NONE;
	skip_ws(&ps);
	if (*ps.p != '\0') {
		fail(&ps, ps.p, "unexpected text after the expression");
		return EXPR_NONE;
	}
	r = value(&ps, t, text);
	if (ps.failed)
		return EXPR_NONE;
	return r;
}
