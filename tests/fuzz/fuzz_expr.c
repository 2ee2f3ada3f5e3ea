/*
 * fuzz_expr.c - libFuzzer target for the expression language: any text is
 * parsed over a few names (one categorical), then evaluated and bounded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const kinds[] = { "basic", "bottleneck" };

static int
resolve(void *ctx, const char *name, size_t len, struct expr_name_info *out)
{
	struct expr_graph *g = ctx;
	static const char *const names[] = { "a", "b", "w", "kind" };

	for (int i = 0; i < 4; i++)
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0) {
			out->id = expr_var(g, i);
			if (i == 3) {
				out->enum_values = kinds;
				out->n_enum = 2;
			}
			return 0;
		}
	return -1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct expr_graph g;
	struct dn_error err;
	char *text;
	expr_id e;

	if (size > 8192 || expr_graph_init(&g) != 0)
		return 0;
	text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	expr_graph_add_var(&g, "a", EXPR_INT);
	expr_graph_add_var(&g, "b", EXPR_INT);
	expr_graph_add_var(&g, "w", EXPR_REAL);
	expr_graph_add_var(&g, "kind", EXPR_INT);
	{
		struct expr_parse_opts o = { resolve, NULL, &g };
		memset(&err, 0, sizeof err);
		e = expr_parse(&g, text, &o, "$.fuzz", &err);
	}
	if (e >= 0) {
		union expr_val vars[4] = { { .i = 7 }, { .i = -3 }, { .r = 0.5 }, { .i = 1 } };
		union expr_val *vals = malloc(sizeof *vals * (size_t)g.n);
		struct expr_ival box[4], *iv = malloc(sizeof *iv * (size_t)g.n);
		char buf[256];
		box[0].lo.i = -100; box[0].hi.i = 100;
		box[1].lo.i = INT64_MIN; box[1].hi.i = INT64_MAX;
		box[2].lo.r = -1.0; box[2].hi.r = 1e300;
		box[3].lo.i = 0; box[3].hi.i = 1;
		(void)expr_eval(&g, vars, vals, NULL);
		expr_bound(&g, box, iv);
		expr_format(&g, e, buf, sizeof buf);
		free(vals);
		free(iv);
	}
	free(text);
	expr_graph_free(&g);
	return 0;
}
