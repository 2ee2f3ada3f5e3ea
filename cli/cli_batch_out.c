/*
 * cli_batch_out.c - what `dnnsat prune` writes: the reduced spaces (JSON),
 * the feasible configurations (JSON lines, or CSV with one column per
 * discrete parameter of the space) and the summary (an aligned table, CSV
 * or JSON). Files are written under a temporary name and renamed, so a
 * reader never sees half a file and a failed run leaves no partial output.
 */
#include "cli_batch.h"
#include "fset.h"
#include "space.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REAL_FORMAT JSON_REAL_PRECISION(15)

static int
io_error(struct dn_error *err, const char *path, const char *what, int e)
{
	return dn_error_set(err, DN_EINVAL, path, "cannot %s it: %s", what, strerror(e));
}

static char *
tmp_name(const char *path)
{
	char *t = NULL;

	return asprintf(&t, "%s.tmp", path) < 0 ? NULL : t;
}

int
batch_write_json(const char *path, const json_t *j, struct dn_error *err)
{
	char *tmp = tmp_name(path);
	FILE *f;
	int bad;

	if (tmp == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	f = fopen(tmp, "w");
	if (f == NULL) {
		io_error(err, tmp, "create", errno);
		free(tmp);
		return -1;
	}
	bad = json_dumpf(j, f, JSON_INDENT(2) | REAL_FORMAT) != 0 || fputc('\n', f) == EOF;
	if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
		io_error(err, path, "write", errno);
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

/* ---- configurations ---- */

/* A CSV field: quoted when it holds a comma, a quote, a line break or an
 * outer space (RFC 4180), quotes doubled. */
static void
csv_field(FILE *f, const char *s)
{
	size_t n = strlen(s);

	if (strpbrk(s, ",\"\r\n") == NULL && !(n > 0 && (s[0] == ' ' || s[n - 1] == ' '))) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* A value as a CSV cell: strings as they are, anything else as its JSON
 * text (numbers as `dnnsat list` writes them), absent as empty. */
static void
csv_value(FILE *f, const json_t *v)
{
	char *text;

	if (v == NULL)
		return;
	if (json_is_string(v)) {
		csv_field(f, json_string_value(v));
		return;
	}
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | REAL_FORMAT);
	if (text != NULL)
		csv_field(f, text);
	free(text);
}

/* The CSV columns of an NNI space: its parameters in the space's order,
 * continuous ones included (a configuration is a complete NNI parameter
 * set); a nested one's cell is empty in rows where its option is not
 * chosen. */
static int
csv_columns(struct batch_configs *c, const json_t *space, struct dn_error *err)
{
	struct sp_space sp;
	int *col_of = NULL, rc = -1;

	memset(&sp, 0, sizeof sp);
	if (sp_parse(space, &sp, err) != 0)
		goto out;
	col_of = calloc((size_t)sp.ndims + 1, sizeof *col_of);
	c->parent = calloc((size_t)sp.ndims + 1, sizeof *c->parent);
	c->nested = calloc((size_t)sp.ndims + 1, sizeof *c->nested);
	c->key = calloc((size_t)sp.ndims + 1, sizeof *c->key);
	c->option = calloc((size_t)sp.ndims + 1, sizeof *c->option);
	c->cell = calloc((size_t)sp.ndims + 1, sizeof *c->cell);
	if (col_of == NULL || c->parent == NULL || c->nested == NULL || c->key == NULL || c->option == NULL ||
	    c->cell == NULL) {
		dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (int i = 0; i < sp.ndims; i++) {
		const struct sp_dim *d = &sp.dims[i];
		col_of[i] = -1;
		if (d->parent >= 0 && col_of[d->parent] < 0)
			continue;
		col_of[i] = c->ncols;
		c->parent[c->ncols] = d->parent >= 0 ? col_of[d->parent] : -1;
		c->nested[c->ncols] = d->nested;
		if (d->parent >= 0) {
			/* two options may both hold a "heads": a cell is its own
			 * option's only */
			const char *on = json_string_value(
			    json_object_get(sp.dims[d->parent].values[d->parent_option], "_name"));
			if ((c->option[c->ncols] = strdup(on != NULL ? on : "")) == NULL) {
				dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
				goto out;
			}
		}
		if ((c->key[c->ncols] = strdup(d->key)) == NULL) {
			dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
			goto out;
		}
		c->ncols++;
		if (c->ncols > 1)
			fputc(',', c->f);
		if (d->nested) {
			char *h = NULL;
			if (asprintf(&h, "%s/_name", d->name) < 0) {
				dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
				goto out;
			}
			csv_field(c->f, h);
			free(h);
		} else
			csv_field(c->f, d->name);
	}
	fputc('\n', c->f);
	rc = 0;
out:
	free(col_of);
	sp_free(&sp);
	return rc;
}

int
batch_configs_open(struct batch_configs *c, const char *path, int csv, const json_t *space, struct dn_error *err)
{
	memset(c, 0, sizeof *c);
	c->csv = csv;
	c->space = space;
	c->path = strdup(path);
	c->tmp = tmp_name(path);
	if (c->path == NULL || c->tmp == NULL)
		return dn_error_set(err, DN_ENOMEM, NULL, "out of memory");
	c->f = fopen(c->tmp, "w");
	if (c->f == NULL)
		return io_error(err, c->tmp, "create", errno);
	if (csv && csv_columns(c, space, err) != 0)
		return -1;
	return 0;
}

int
batch_configs_put(void *ctx, json_t *sample)
{
	struct batch_configs *c = ctx;

	if (!c->csv) {
		json_t *ordered = fs_config_in_order(sample, c->space);
		if (ordered == NULL || json_dumpf(ordered, c->f, JSON_COMPACT | REAL_FORMAT) != 0)
			c->failed = 1;
		json_decref(ordered);
		fputc('\n', c->f);
	} else {
		for (int i = 0; i < c->ncols; i++) {
			const json_t *in = c->parent[i] < 0 ? sample : c->cell[c->parent[i]];
			if (c->parent[i] >= 0) {
				const char *chosen = json_string_value(json_object_get(in, "_name"));
				if (chosen == NULL || strcmp(chosen, c->option[i]) != 0)
					in = NULL;      /* another option is chosen: empty */
			}
			c->cell[i] = json_object_get(in, c->key[i]);
			if (i > 0)
				fputc(',', c->f);
			csv_value(c->f, c->nested[i] ? json_object_get(c->cell[i], "_name") : c->cell[i]);
		}
		fputc('\n', c->f);
	}
	json_decref(sample);
	c->rows++;
	if (ferror(c->f) && !c->failed) {
		c->failed = 1;
		c->write_errno = errno;
	}
	return c->failed;
}

int
batch_configs_close(struct batch_configs *c, int keep, struct dn_error *err)
{
	int rc = 0;

	if (c->f != NULL) {
		if (fclose(c->f) != 0 && !c->failed) {
			c->failed = 1;
			c->write_errno = errno;
		}
		c->f = NULL;
		if (c->failed)
			rc = io_error(err, c->path, "write", c->write_errno);
		if (keep && !c->failed && rename(c->tmp, c->path) != 0)
			rc = io_error(err, c->path, "write", errno);
		if (!keep || rc != 0)
			unlink(c->tmp);
	}
	for (int i = 0; i < c->ncols; i++) {
		free(c->key[i]);
		free(c->option[i]);
	}
	free(c->key);
	free(c->option);
	free(c->parent);
	free(c->nested);
	free(c->cell);
	free(c->path);
	free(c->tmp);
	memset(c, 0, sizeof *c);
	return rc;
}

/* ---- the summary ---- */

static const char *
str_of(const json_t *row, const char *key)
{
	const char *s = json_string_value(json_object_get(row, key));

	return s != NULL ? s : "";
}

/* A ratio as a percentage with enough digits to tell it from 0. */
static void
percent(char *buf, size_t len, double r)
{
	if (r == 0 || r * 100 >= 0.01)
		dn_fmt(buf, len, "%.2f%%", r * 100);
	else
		dn_fmt(buf, len, "%.2g%%", r * 100);
}

/* A count for the table: as it is up to 15 digits, else like 1.268e+30
 * (the CSV and JSON summaries keep every digit). */
static const char *
count_cell(const char *digits, char *buf, size_t len)
{
	if (strlen(digits) <= 15)
		return digits;
	dn_fmt(buf, len, "%.3e", strtod(digits, NULL));
	return buf;
}

/* The table's cells of one row (n = 6): space, device, total, feasible,
 * ratio, seconds; bounds read "lower..upper". */
static void
table_cells(const json_t *row, char cells[6][128])
{
	int exact = json_is_true(json_object_get(row, "exact"));
	double total = strtod(str_of(row, "total"), NULL);
	char b1[48], b2[48];

	dn_fmt(cells[0], 128, "%s", str_of(row, "space"));
	dn_fmt(cells[1], 128, "%s", str_of(row, "device"));
	dn_fmt(cells[2], 128, "%s", count_cell(str_of(row, "total"), b1, sizeof b1));
	if (exact) {
		dn_fmt(cells[3], 128, "%s", count_cell(str_of(row, "feasible"), b1, sizeof b1));
		percent(cells[4], 128, json_real_value(json_object_get(row, "ratio")));
	} else {
		char lo[48], hi[48];
		dn_fmt(cells[3], 128, "%s..%s", count_cell(str_of(row, "feasible_lower"), b1, sizeof b1),
		    count_cell(str_of(row, "feasible_upper"), b2, sizeof b2));
		percent(lo, sizeof lo, total > 0 ? strtod(str_of(row, "feasible_lower"), NULL) / total : 0);
		percent(hi, sizeof hi, total > 0 ? strtod(str_of(row, "feasible_upper"), NULL) / total : 0);
		dn_fmt(cells[4], 128, "%s..%s", lo, hi);
	}
	dn_fmt(cells[5], 128, "%.2f", json_real_value(json_object_get(row, "seconds")));
}

static void
print_table(FILE *f, const json_t *rows)
{
	static const char *const head[6] = { "space", "device", "total", "feasible", "ratio", "seconds" };
	char cells[6][128];
	int width[6], bounds = 0;
	size_t i;
	const json_t *row;

	for (int c = 0; c < 6; c++)
		width[c] = (int)strlen(head[c]);
	json_array_foreach(rows, i, row) {
		table_cells(row, cells);
		for (int c = 0; c < 6; c++)
			if ((int)strlen(cells[c]) > width[c])
				width[c] = (int)strlen(cells[c]);
		bounds |= !json_is_true(json_object_get(row, "exact"));
	}
	for (int c = 0; c < 6; c++)
		fprintf(f, c < 2 ? "%-*s%s" : "%*s%s", width[c], head[c], c < 5 ? "  " : "\n");
	json_array_foreach(rows, i, row) {
		table_cells(row, cells);
		for (int c = 0; c < 6; c++)
			fprintf(f, c < 2 ? "%-*s%s" : "%*s%s", width[c], cells[c], c < 5 ? "  " : "\n");
	}
	if (bounds)
		fprintf(f, "(lower..upper: the deadline passed before the count was exact; certified bounds)\n");
}

static void
print_csv(FILE *f, const json_t *rows)
{
	size_t i;
	const json_t *row;

	fputs("space,device,total,feasible,feasible_lower,feasible_upper,exact,ratio,seconds,reduced_space,configs,"
	    "configs_written\n", f);
	json_array_foreach(rows, i, row) {
		static const char *const text[] = { "space", "device", "total", "feasible", "feasible_lower",
			"feasible_upper" };
		for (size_t k = 0; k < sizeof text / sizeof text[0]; k++) {
			csv_field(f, str_of(row, text[k]));
			fputc(',', f);
		}
		fprintf(f, "%s,", json_is_true(json_object_get(row, "exact")) ? "true" : "false");
		csv_value(f, json_object_get(row, "ratio"));
		fprintf(f, ",%.3f,", json_real_value(json_object_get(row, "seconds")));
		csv_field(f, str_of(row, "reduced_space"));
		fputc(',', f);
		csv_field(f, str_of(row, "configs"));
		fprintf(f, ",%lld\n", (long long)json_integer_value(json_object_get(row, "configs_written")));
	}
}

void
batch_summary_print(FILE *f, const json_t *rows, enum batch_format format)
{
	if (format == BATCH_CSV)
		print_csv(f, rows);
	else if (format == BATCH_JSON) {
		json_t *o = json_pack("{s:O}", "results", rows);
		json_dumpf(o, f, JSON_INDENT(2) | REAL_FORMAT);
		fputc('\n', f);
		json_decref(o);
	} else
		print_table(f, rows);
	fflush(f);
}
