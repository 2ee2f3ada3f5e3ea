/*
 * expr_format.c - printing an expression as infix text over variable names,
 * for explanations and error messages ("(H + 2*p - k) / s + 1").
 * Output is always NUL-terminated and truncated to the buffer, ending in
 * "..." when cut; the walk stops when the buffer is full (a graph shares
 * its nodes, so the text of n nodes can be 2^n long).
 */
#include "expr.h"

#include <stdio.h>
#include <string.h>

struct out {
	char *buf;
	size_t len, used;
};

static void
put(struct out *o, const char *s)
{
	size_t n = strlen(s);

	if (o->used < o->len) {
		size_t room = o->len - o->used - 1;
		size_t k = n < room ? n : room;
		memcpy(o->buf + o->used, s, k);
		o->buf[o->used + k] = '\0';
	}
	o->used += n;
}

static const char *
infix(enum expr_kind k)
{
	switch (k) {
	case EK_ADD: return " + ";
	case EK_SUB: return " - ";
	case EK_MUL: return " * ";
	case EK_DIV: return " / ";
	case EK_MOD: return " % ";
	case EK_EQ:  return " == ";
	case EK_NE:  return " != ";
	case EK_LT:  return " < ";
	case EK_LE:  return " <= ";
	case EK_AND: return " && ";
	case EK_OR:  return " || ";
	default:     return NULL;
	}
}

static void
fmt(const struct expr_graph *g, expr_id e, struct out *o, int depth)
{
	const struct expr_node *n;
	char tmp[64];
	const char *op;

	/* the buffer is full: stop (the graph shares nodes, and printed as
	 * a tree a graph of n nodes can need 2^n characters) */
	if (o->used + 1 >= o->len) {
		o->used = o->len;
		return;
	}
	if (e < 0 || e >= g->n) {
		put(o, "?");
		return;
	}
	if (depth > 64) {
		put(o, "...");
		return;
	}
	n = &g->nodes[e];
	switch (n->kind) {
	case EK_CONST:
		if (n->type == EXPR_INT)
			snprintf(tmp, sizeof tmp, "%lld", (long long)n->k.i);
		else
			snprintf(tmp, sizeof tmp, "%.10g", n->k.r);
		put(o, tmp);
		return;
	case EK_VAR:
		put(o, g->vars[n->k.i].name);
		return;
	case EK_TOREAL:
		fmt(g, n->a, o, depth + 1);
		return;
	case EK_NOT:
		put(o, "!(");
		fmt(g, n->a, o, depth + 1);
		put(o, ")");
		return;
	case EK_ITE:
		put(o, "(");
		fmt(g, n->a, o, depth + 1);
		put(o, " ? ");
		fmt(g, n->b, o, depth + 1);
		put(o, " : ");
		fmt(g, n->c, o, depth + 1);
		put(o, ")");
		return;
	case EK_CDIV: case EK_MIN: case EK_MAX:
		put(o, n->kind == EK_CDIV ? "ceil_div(" : n->kind == EK_MIN ? "min(" : "max(");
		fmt(g, n->a, o, depth + 1);
		put(o, ", ");
		fmt(g, n->b, o, depth + 1);
		put(o, ")");
		return;
	case EK_FLOOR: case EK_CEIL: case EK_ROUND:
		put(o, n->kind == EK_FLOOR ? "floor(" : n->kind == EK_CEIL ? "ceil(" : "round(");
		fmt(g, n->a, o, depth + 1);
		put(o, ")");
		return;
	default:
		break;
	}
	op = infix((enum expr_kind)n->kind);
	if (op == NULL) {
		put(o, "?");
		return;
	}
	put(o, "(");
	fmt(g, n->a, o, depth + 1);
	put(o, n->kind == EK_DIV && n->type == EXPR_INT ? " // " : op);
	fmt(g, n->b, o, depth + 1);
	put(o, ")");
}

size_t
expr_format(const struct expr_graph *g, expr_id e, char *buf, size_t len)
{
	struct out o = { buf, len, 0 };

	if (len > 0)
		buf[0] = '\0';
	fmt(g, e, &o, 0);
	if (o.used >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	return o.used;
}
