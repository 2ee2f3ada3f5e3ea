/*
 * space_parse.c - reading an NNI search space (docs/search-space.md) into a
 * struct sp_space: one dim per parameter, nested sub-spaces flattened
 * depth-first in key order, and the exact grid of every discrete type.
 *
 * Invariants: every error names the JSON path of the offending field and
 * says the problem plainly; a failed parse leaves a space that sp_free
 * releases; sizes are capped where the input arrives (SP_MAX_DIMS dims,
 * SP_MAX_DEPTH nesting levels, SP_MAX_VALUES listed values) so that hostile
 * input costs bounded memory, time and stack. randint and q-grids are kept
 * as progressions and never expanded. Listed choice values are borrowed
 * from the root, of which the space holds one reference.
 */
#include "space.h"
#include "dn_grow.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Integers up to 2^53 are exact in a double: the bound for multiples of q. */
#define EXACT_INT 9007199254740992.0

static const char *const type_names[] = {
	"choice", "randint", "uniform", "quniform", "loguniform",
	"qloguniform", "normal", "qnormal", "lognormal", "qlognormal"
};

struct parser {
	struct sp_space *sp;
	struct dn_error *err;
	int cap;                /* allocated dims */
	size_t nlisted;         /* listed choice values so far */
};

/* A choice value with its position, sorted to find duplicates. */
struct listed {
	const json_t *v;
	char *text;             /* canonical text of a list or object, else NULL */
	size_t idx;
};

const char *
sp_type_name(enum sp_type t)
{
	if ((unsigned)t < sizeof type_names / sizeof type_names[0])
		return type_names[t];
	return "?";
}

/* malloc'd printf; NULL when out of memory. */
static char *
xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || (s = malloc((size_t)n + 1)) == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

static int
is_ident(const char *s)
{
	if (!(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!(isalnum((unsigned char)*s) || *s == '_'))
			return 0;
	return 1;
}

/*
 * The JSON path of `key` inside the object at `parent`: "$.a.b" for
 * identifiers, $["odd key"] otherwise. malloc'd; NULL when out of memory.
 */
static char *
path_member(const char *parent, const char *key)
{
	char *s, *p;
	size_t n = strlen(key);

	if (is_ident(key))
		return xprintf("%s.%s", parent, key);
	/* worst case: every byte escaped */
	if ((p = s = malloc(strlen(parent) + 2 * n + 5)) == NULL)
		return NULL;
	p += sprintf(p, "%s[\"", parent);
	for (; *key; key++) {
		if (*key == '"' || *key == '\\')
			*p++ = '\\';
		*p++ = *key;
	}
	strcpy(p, "\"]");
	return s;
}

/*
 * Equality and order of choice values for the duplicate check: numbers by
 * value (1 and 1.0 are the same value), then strings, then booleans, then
 * null, then lists and objects by their canonical text (sorted keys, so two
 * values are equal exactly when json_equal says so).
 */
static int
value_rank(const json_t *v)
{
	if (json_is_number(v))
		return 0;
	if (json_is_string(v))
		return 1;
	if (json_is_boolean(v))
		return 2;
	if (json_is_null(v))
		return 3;
	return 4;
}

static int
int_real_cmp(json_int_t i, double r)
{
	double t;

	if (r >= 9223372036854775808.0)
		return -1;
	if (r < -9223372036854775808.0)
		return 1;
	t = trunc(r);
	if ((json_int_t)t != i)
		return i < (json_int_t)t ? -1 : 1;
	return r > t ? -1 : r < t ? 1 : 0;
}

static int
bytes_cmp(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);

	if (c != 0)
		return c < 0 ? -1 : 1;
	return la < lb ? -1 : la > lb;
}

/* text: the canonical text of a list or object (NULL for other values) */
static int
value_cmp(const json_t *a, const char *ta, const json_t *b, const char *tb)
{
	int ra = value_rank(a), rb = value_rank(b);

	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (ra == 0) {
		if (json_is_integer(a) && json_is_integer(b)) {
			json_int_t x = json_integer_value(a), y = json_integer_value(b);
			return x < y ? -1 : x > y;
		}
		if (json_is_integer(a))
			return int_real_cmp(json_integer_value(a), json_real_value(b));
		if (json_is_integer(b))
			return -int_real_cmp(json_integer_value(b), json_real_value(a));
		return json_real_value(a) < json_real_value(b) ? -1 :
		    json_real_value(a) > json_real_value(b);
	}
	if (ra == 1)
		return bytes_cmp(json_string_value(a), json_string_length(a),
		    json_string_value(b), json_string_length(b));
	if (ra == 2)
		return json_is_true(a) - json_is_true(b);
	if (ra == 3)
		return 0;
	return strcmp(ta, tb);
}

static int
listed_cmp(const void *x, const void *y)
{
	const struct listed *a = x, *b = y;
	int c = value_cmp(a->v, a->text, b->v, b->text);

	if (c != 0)
		return c;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Writes a short rendering of a choice value for messages. */
static void
value_show(const json_t *v, char *buf, size_t len)
{
	char *s;

	if (json_is_string(v)) {
		dn_fmt(buf, len, "\"%.60s\"", json_string_value(v));
		return;
	}
	if (json_is_real(v)) {
		dn_fmt(buf, len, "%.15g", json_real_value(v));
		return;
	}
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
	dn_fmt(buf, len, "%.60s%s", s != NULL ? s : "?", s != NULL && strlen(s) > 60 ? "..." : "");
	free(s);
}

static void
listed_free(struct listed *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(l[i].text);
	free(l);
}

/*
 * Reports the first duplicate among `n` values (keys[i] is the value of
 * option i, a "_name" for sub-spaces) at the later option's path.
 */
static int
check_duplicates(struct parser *ps, const json_t *const *keys, size_t n,
    const char *path, int nested)
{
	struct listed *l;
	char p[512], shown[96];
	size_t first = 0, dup = 0;
	int found = 0;

	if (n < 2)
		return 0;
	if ((l = malloc(n * sizeof *l)) == NULL)
		return dn_error_set(ps->err, DN_ENOMEM, path, "out of memory");
	for (size_t i = 0; i < n; i++) {
		l[i].v = keys[i];
		l[i].idx = i;
		l[i].text = NULL;
	}
	for (size_t i = 0; i < n; i++)
		if ((json_is_array(keys[i]) || json_is_object(keys[i])) &&
		    (l[i].text = json_dumps(keys[i], JSON_COMPACT | JSON_SORT_KEYS)) == NULL) {
			listed_free(l, n);
			return dn_error_set(ps->err, DN_ENOMEM, path, "out of memory");
		}
	qsort(l, n, sizeof *l, listed_cmp);
	/* of all equal pairs, report the one whose later index comes first */
	for (size_t i = 1; i < n; i++)
		if (value_cmp(l[i - 1].v, l[i - 1].text, l[i].v, l[i].text) == 0 && (!found || l[i].idx < dup)) {
			dup = l[i].idx;
			found = 1;
		}
	if (found) {
		/* the first occurrence is the smallest index of the run */
		for (size_t i = 0; i < n; i++)
			if (l[i].idx == dup) {
				size_t j = i;
				while (j > 0 && value_cmp(l[j - 1].v, l[j - 1].text, l[i].v, l[i].text) == 0)
					j--;
				first = l[j].idx;
				break;
			}
		value_show(keys[dup], shown, sizeof shown);
	}
	listed_free(l, n);
	if (!found)
		return 0;
	if (nested) {
		dn_fmt(p, sizeof p, "%s._value[%zu]._name", path, dup);
		return dn_error_set(ps->err, DN_EINVAL, p,
		    "duplicate option name %s (already the name of _value[%zu])", shown, first);
	}
	dn_fmt(p, sizeof p, "%s._value[%zu]", path, dup);
	return dn_error_set(ps->err, DN_EINVAL, p,
	    "duplicate choice value %s (same as _value[%zu])", shown, first);
}

/* A number of a _value list, for error messages at _value[i]. */
static int
value_number(struct parser *ps, const json_t *vals, size_t i, const char *path,
    const char *what, double *out)
{
	const json_t *v = json_array_get(vals, i);
	char p[512];

	if (!json_is_number(v)) {
		dn_fmt(p, sizeof p, "%s._value[%zu]", path, i);
		return dn_error_set(ps->err, DN_EINVAL, p, "%s must be a number", what);
	}
	*out = json_number_value(v);
	return 0;
}

/* An integer of a _value list; integral reals (2.0) are accepted. */
static int
value_integer(struct parser *ps, const json_t *vals, size_t i, const char *path,
    const char *what, int64_t *out)
{
	const json_t *v = json_array_get(vals, i);
	char p[512];

	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_real(v) && trunc(json_real_value(v)) == json_real_value(v) &&
	    fabs(json_real_value(v)) <= EXACT_INT) {
		*out = (int64_t)json_real_value(v);
		return 0;
	}
	dn_fmt(p, sizeof p, "%s._value[%zu]", path, i);
	return dn_error_set(ps->err, DN_EINVAL, p, "%s must be an integer", what);
}

static int
check_length(struct parser *ps, const json_t *vals, size_t want, const char *path,
    enum sp_type t, const char *form)
{
	char p[512];

	if (json_array_size(vals) == want)
		return 0;
	dn_fmt(p, sizeof p, "%s._value", path);
	return dn_error_set(ps->err, DN_EINVAL, p, "%s takes %s (%zu values), not %zu values",
	    type_names[t], form, want, json_array_size(vals));
}

static int parse_object(struct parser *ps, const json_t *obj, int parent,
    int option, const char *opath, int depth);

/* Two doubles equal within 1e-9 relative (the tolerance of grid ends). */
static int
near(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

static int
is_integral(double x)
{
	return trunc(x) == x && fabs(x) <= EXACT_INT;
}

/*
 * The grid of clip(round(x / q) * q, lo, hi) for x in [lo, hi] (quniform;
 * qloguniform draws x differently over the same interval, so the same set).
 * Python's round() is round-half-even on the double x / q, like rint() in
 * the default rounding mode, so the ends match NNI bit for bit. The
 * multiples of q reached are k = rint(lo/q) .. rint(hi/q); those outside
 * [lo, hi] clip to an end.
 */
static int
build_qgrid(struct parser *ps, struct sp_dim *d, const char *path)
{
	double kmin, kmax, klast;
	char p[512];

	kmin = rint(d->lo / d->q);
	kmax = rint(d->hi / d->q);
	if (!(fabs(kmin) <= EXACT_INT && fabs(kmax) <= EXACT_INT)) {
		dn_fmt(p, sizeof p, "%s._value", path);
		return dn_error_set(ps->err, DN_ERANGE, p,
		    "%s [%g, %g, %g]: low/q and high/q must stay within 2^53 (q is too small for the range)",
		    type_names[d->type], d->lo, d->hi, d->q);
	}
	d->discrete = 1;
	if (near(d->lo, d->hi)) {
		d->head = 1;
		d->nvalues = 1;
		d->k0 = (int64_t)kmin;
		d->start = d->lo;
		d->step = d->q;
		d->integer = is_integral(d->lo);
		return 0;
	}
	/* the lower end: a clipped value or a multiple equal to lo */
	if (kmin * d->q < d->lo || near(kmin * d->q, d->lo)) {
		d->head = 1;
		kmin += 1;
	}
	klast = kmax;
	if (kmax * d->q > d->hi || near(kmax * d->q, d->hi)) {
		d->tail = 1;
		klast -= 1;
	}
	d->k0 = (int64_t)kmin;
	d->nvalues = d->head + d->tail + (klast >= kmin ? (int64_t)(klast - kmin) + 1 : 0);
	d->start = kmin * d->q;
	d->step = d->q;
	d->integer = (!d->head || is_integral(d->lo)) && (!d->tail || is_integral(d->hi));
	if (klast >= kmin) {
		d->integer = d->integer && is_integral(kmin * d->q) && is_integral(klast * d->q);
		if (klast > kmin)
			d->integer = d->integer && is_integral(d->q);
	}
	return 0;
}

/*
 * Adds a dim with its names; returns its index or -1. The address of a
 * nested dim holds the chosen option's "_name" between its parent's address
 * and its key ("attention/few_heads/n_head"); the short name leaves the
 * option names out ("attention/n_head"), as addresses read before them.
 */
static int
add_dim(struct parser *ps, const char *key, int parent, int option,
    const char *path, int depth)
{
	struct sp_space *sp = ps->sp;
	struct sp_dim *d;

	if (sp->ndims == SP_MAX_DIMS)
		return dn_error_set(ps->err, DN_ERANGE, path,
		    "the space has more than %d parameters", SP_MAX_DIMS);
	if (dn_grow_int(&sp->dims, &ps->cap, sp->ndims + 1, sizeof *sp->dims) != 0)
		return dn_error_set(ps->err, DN_ENOMEM, path, "out of memory");
	d = &sp->dims[sp->ndims];
	memset(d, 0, sizeof *d);
	d->parent = parent;
	d->parent_option = option;
	d->depth = depth;
	d->hp = -1;
	sp->ndims++;
	d->key = strdup(key);
	d->path = strdup(path);
	if (parent >= 0) {
		const struct sp_dim *pd = &sp->dims[parent];
		d->name = xprintf("%s/%s/%s", pd->name,
		    json_string_value(json_object_get(pd->values[option], "_name")), key);
		d->short_name = xprintf("%s/%s", pd->short_name, key);
	} else {
		d->name = strdup(key);
		d->short_name = strdup(key);
	}
	if (d->key == NULL || d->path == NULL || d->name == NULL || d->short_name == NULL)
		return dn_error_set(ps->err, DN_ENOMEM, path, "out of memory");
	return sp->ndims - 1;
}

/* An option of a choice of sub-spaces: an object with "_name" (NNI). */
static int
is_subspace(const json_t *v)
{
	return json_is_object(v) && json_object_get(v, "_name") != NULL;
}

/*
 * choice: a non-empty list of distinct JSON values (numbers, strings,
 * booleans, null, lists, objects: NNI hands any of them to the trial), or
 * of sub-spaces, objects that each carry a string "_name". As in NNI's own
 * formatting (hpo_utils), a choice is nested only when every option is an
 * object with "_name"; objects without "_name" are plain values. A list in
 * which some options carry "_name" and others do not is refused: NNI would
 * hand those objects over whole without exploring them, surely not meant.
 */
static int
parse_choice(struct parser *ps, int di, const json_t *vals, const char *path)
{
	size_t n = json_array_size(vals), nsub = 0;
	const json_t **keys;
	json_t **values;
	char p[512];
	int integer = 1, depth = ps->sp->dims[di].depth;

	if (n == 0) {
		dn_fmt(p, sizeof p, "%s._value", path);
		return dn_error_set(ps->err, DN_EINVAL, p, "choice needs at least one value (the list is empty)");
	}
	if (n > SP_MAX_VALUES - ps->nlisted) {
		dn_fmt(p, sizeof p, "%s._value", path);
		return dn_error_set(ps->err, DN_ERANGE, p,
		    "the space lists more than %d choice values", SP_MAX_VALUES);
	}
	ps->nlisted += n;
	for (size_t i = 0; i < n; i++)
		if (is_subspace(json_array_get(vals, i)))
			nsub++;
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(vals, i);
		dn_fmt(p, sizeof p, "%s._value[%zu]", path, i);
		if (nsub > 0 && nsub < n && !is_subspace(v))
			return dn_error_set(ps->err, DN_EINVAL, p,
			    "choice mixes sub-spaces and plain values: other options are sub-spaces (objects "
			    "with \"_name\"), so this one needs \"_name\" too");
		if (nsub > 0 && !json_is_string(json_object_get(v, "_name"))) {
			dn_fmt(p, sizeof p, "%s._value[%zu]._name", path, i);
			return dn_error_set(ps->err, DN_EINVAL, p, "\"_name\" must be a string");
		}
		if (!json_is_integer(v) && !(json_is_real(v) && is_integral(json_real_value(v))))
			integer = 0;
	}
	if (nsub > 0)
		integer = 0;
	values = malloc(n * sizeof *values);
	keys = malloc(n * sizeof *keys);
	if (values == NULL || keys == NULL) {
		free(values);
		free(keys);
		return dn_error_set(ps->err, DN_ENOMEM, path, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		values[i] = json_array_get(vals, i);
		keys[i] = nsub > 0 ? json_object_get(values[i], "_name") : values[i];
	}
	ps->sp->dims[di].values = values;
	ps->sp->dims[di].nvalues = (int64_t)n;
	ps->sp->dims[di].discrete = 1;
	ps->sp->dims[di].nested = nsub > 0;
	ps->sp->dims[di].integer = integer;
	if (check_duplicates(ps, keys, n, path, nsub > 0) != 0) {
		free(keys);
		return -1;
	}
	free(keys);
	if (nsub == 0)
		return 0;
	if (depth + 1 > SP_MAX_DEPTH) {
		dn_fmt(p, sizeof p, "%s._value", path);
		return dn_error_set(ps->err, DN_ERANGE, p,
		    "choices of sub-spaces are nested deeper than %d levels", SP_MAX_DEPTH);
	}
	for (size_t i = 0; i < n; i++) {
		char *opath = xprintf("%s._value[%zu]", path, i);
		int rc;
		if (opath == NULL)
			return dn_error_set(ps->err, DN_ENOMEM, path, "out of memory");
		rc = parse_object(ps, json_array_get(vals, i), di, (int)i, opath, depth + 1);
		free(opath);
		if (rc != 0)
			return -1;
	}
	return 0;
}

/* randint [low, high): integers, low < high, high - low within int64. */
static int
parse_randint(struct parser *ps, struct sp_dim *d, const json_t *vals, const char *path)
{
	int64_t lo, hi;
	char p[512];

	if (check_length(ps, vals, 2, path, SP_RANDINT, "[low, high], high excluded") != 0 ||
	    value_integer(ps, vals, 0, path, "randint low", &lo) != 0 ||
	    value_integer(ps, vals, 1, path, "randint high", &hi) != 0)
		return -1;
	dn_fmt(p, sizeof p, "%s._value", path);
	if (lo >= hi)
		return dn_error_set(ps->err, DN_EINVAL, p,
		    "randint [%lld, %lld) is empty: it needs low < high (high is excluded)",
		    (long long)lo, (long long)hi);
	if ((uint64_t)hi - (uint64_t)lo > (uint64_t)INT64_MAX)
		return dn_error_set(ps->err, DN_ERANGE, p,
		    "randint [%lld, %lld) has more than 2^63 values", (long long)lo, (long long)hi);
	d->discrete = 1;
	d->integer = 1;
	d->ibase = lo;
	d->nvalues = (int64_t)((uint64_t)hi - (uint64_t)lo);
	d->start = (double)lo;
	d->step = 1;
	d->lo = (double)lo;
	d->hi = (double)hi;
	return 0;
}

/* uniform, loguniform [low, high]; quniform, qloguniform [low, high, q]. */
static int
parse_range(struct parser *ps, struct sp_dim *d, const json_t *vals, const char *path)
{
	int quantized = d->type == SP_QUNIFORM || d->type == SP_QLOGUNIFORM;
	int logd = d->type == SP_LOGUNIFORM || d->type == SP_QLOGUNIFORM;
	char p[512];

	if (check_length(ps, vals, quantized ? 3 : 2, path, d->type,
	    quantized ? "[low, high, q]" : "[low, high]") != 0 ||
	    value_number(ps, vals, 0, path, "low", &d->lo) != 0 ||
	    value_number(ps, vals, 1, path, "high", &d->hi) != 0 ||
	    (quantized && value_number(ps, vals, 2, path, "q", &d->q) != 0))
		return -1;
	if (d->lo > d->hi) {
		dn_fmt(p, sizeof p, "%s._value", path);
		return dn_error_set(ps->err, DN_EINVAL, p, "%s [%g, %g]: low is greater than high",
		    type_names[d->type], d->lo, d->hi);
	}
	if (logd && d->lo <= 0) {
		dn_fmt(p, sizeof p, "%s._value[0]", path);
		return dn_error_set(ps->err, DN_EINVAL, p, "%s needs low > 0 (got %g)",
		    type_names[d->type], d->lo);
	}
	if (!quantized)
		return 0;
	if (d->q <= 0) {
		dn_fmt(p, sizeof p, "%s._value[2]", path);
		return dn_error_set(ps->err, DN_EINVAL, p, "q must be > 0 (got %g)", d->q);
	}
	return build_qgrid(ps, d, path);
}

/* normal, lognormal [mu, sigma]; qnormal, qlognormal [mu, sigma, q]. */
static int
parse_normal(struct parser *ps, struct sp_dim *d, const json_t *vals, const char *path)
{
	int quantized = d->type == SP_QNORMAL || d->type == SP_QLOGNORMAL;
	char p[512];

	if (check_length(ps, vals, quantized ? 3 : 2, path, d->type,
	    quantized ? "[mu, sigma, q]" : "[mu, sigma]") != 0 ||
	    value_number(ps, vals, 0, path, "mu", &d->mu) != 0 ||
	    value_number(ps, vals, 1, path, "sigma", &d->sigma) != 0 ||
	    (quantized && value_number(ps, vals, 2, path, "q", &d->q) != 0))
		return -1;
	if (d->sigma <= 0) {
		dn_fmt(p, sizeof p, "%s._value[1]", path);
		return dn_error_set(ps->err, DN_EINVAL, p, "sigma must be > 0 (got %g)", d->sigma);
	}
	if (quantized && d->q <= 0) {
		dn_fmt(p, sizeof p, "%s._value[2]", path);
		return dn_error_set(ps->err, DN_EINVAL, p, "q must be > 0 (got %g)", d->q);
	}
	d->lo = d->type == SP_NORMAL || d->type == SP_QNORMAL ? -HUGE_VAL : 0;
	d->hi = HUGE_VAL;
	return 0;
}

/* One parameter {"_type": T, "_value": [...]} named `key` at `path`. */
static int
parse_param(struct parser *ps, const char *key, const json_t *spec, int parent,
    int option, const char *path, int depth)
{
	const char *fkey, *tname;
	const json_t *v, *t, *vals;
	char p[512];
	int di, ti = -1;

	if (!json_is_object(spec))
		return dn_error_set(ps->err, DN_EINVAL, path,
		    "a parameter must be an object {\"_type\": ..., \"_value\": [...]}");
	json_object_foreach((json_t *)spec, fkey, v) {
		if (strcmp(fkey, "_type") != 0 && strcmp(fkey, "_value") != 0)
			return dn_error_set(ps->err, DN_EINVAL, path,
			    "unknown field \"%.100s\" (a parameter has only \"_type\" and \"_value\")", fkey);
	}
	t = json_object_get(spec, "_type");
	vals = json_object_get(spec, "_value");
	if (t == NULL)
		return dn_error_set(ps->err, DN_EINVAL, path, "the parameter needs \"_type\"");
	dn_fmt(p, sizeof p, "%s._type", path);
	if (!json_is_string(t))
		return dn_error_set(ps->err, DN_EINVAL, p, "\"_type\" must be a string such as \"choice\"");
	tname = json_string_value(t);
	for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
		if (strcmp(tname, type_names[i]) == 0)
			ti = (int)i;
	if (ti < 0)
		return dn_error_set(ps->err, DN_EINVAL, p,
		    "unknown _type \"%.60s\" (choice, randint, uniform, quniform, loguniform, "
		    "qloguniform, normal, qnormal, lognormal or qlognormal)", tname);
	if (vals == NULL)
		return dn_error_set(ps->err, DN_EINVAL, path, "the parameter needs \"_value\"");
	dn_fmt(p, sizeof p, "%s._value", path);
	if (!json_is_array(vals))
		return dn_error_set(ps->err, DN_EINVAL, p, "\"_value\" must be a list");
	if ((di = add_dim(ps, key, parent, option, path, depth)) < 0)
		return -1;
	ps->sp->dims[di].type = (enum sp_type)ti;
	switch ((enum sp_type)ti) {
	case SP_CHOICE:
		return parse_choice(ps, di, vals, path);
	case SP_RANDINT:
		return parse_randint(ps, &ps->sp->dims[di], vals, path);
	case SP_UNIFORM:
	case SP_LOGUNIFORM:
	case SP_QUNIFORM:
	case SP_QLOGUNIFORM:
		return parse_range(ps, &ps->sp->dims[di], vals, path);
	case SP_NORMAL:
	case SP_LOGNORMAL:
	case SP_QNORMAL:
	case SP_QLOGNORMAL:
		return parse_normal(ps, &ps->sp->dims[di], vals, path);
	}
	return -1;
}

/*
 * The parameters of one object: the whole space (parent -1) or one option
 * of a choice of sub-spaces, whose "_name" is not a parameter.
 */
static int
parse_object(struct parser *ps, const json_t *obj, int parent, int option,
    const char *opath, int depth)
{
	const char *key;
	const json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		char *path;
		int rc;
		if (parent >= 0 && strcmp(key, "_name") == 0)
			continue;
		if ((path = path_member(opath, key)) == NULL)
			return dn_error_set(ps->err, DN_ENOMEM, opath, "out of memory");
		rc = parse_param(ps, key, v, parent, option, path, depth);
		free(path);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int
address_cmp(const void *x, const void *y, void *arg)
{
	const struct sp_dim *dims = arg;
	int a = *(const int *)x, b = *(const int *)y;
	int c = strcmp(dims[a].name, dims[b].name);

	return c != 0 ? c : (a > b) - (a < b);
}

/*
 * Addresses are unique by construction unless a key or an option name holds
 * a "/" (a top-level "a/x/b" and "b" in option "x" of choice "a" share the
 * address "a/x/b"): such a space is refused, naming both JSON paths.
 */
static int
check_addresses(struct parser *ps)
{
	struct sp_space *sp = ps->sp;
	int *order;

	if (sp->ndims < 2)
		return 0;
	if ((order = malloc((size_t)sp->ndims * sizeof *order)) == NULL)
		return dn_error_set(ps->err, DN_ENOMEM, "$", "out of memory");
	for (int k = 0; k < sp->ndims; k++)
		order[k] = k;
	qsort_r(order, (size_t)sp->ndims, sizeof *order, address_cmp, sp->dims);
	for (int k = 1; k < sp->ndims; k++) {
		const struct sp_dim *a = &sp->dims[order[k - 1]], *b = &sp->dims[order[k]];
		if (strcmp(a->name, b->name) == 0) {
			dn_error_set(ps->err, DN_EINVAL, b->path,
			    "the parameter's address \"%.200s\" is also the address of %.200s (a \"/\" in a key "
			    "or an option name makes two addresses equal: rename one)", b->name, a->path);
			free(order);
			return -1;
		}
	}
	free(order);
	return 0;
}

int
sp_parse(const json_t *space, struct sp_space *out, struct dn_error *err)
{
	struct parser ps;

	memset(out, 0, sizeof *out);
	memset(&ps, 0, sizeof ps);
	ps.sp = out;
	ps.err = err;
	if (!json_is_object(space))
		return dn_error_set(err, DN_EINVAL, "$",
		    "a search space must be a JSON object {\"name\": {\"_type\": ..., \"_value\": [...]}, ...}");
	if (json_object_size(space) == 0)
		return dn_error_set(err, DN_EINVAL, "$", "the search space is empty: it has no parameter");
	out->root = json_incref((json_t *)space);
	if (parse_object(&ps, space, -1, -1, "$", 0) != 0)
		return -1;
	return check_addresses(&ps);
}

void
sp_free(struct sp_space *sp)
{
	if (sp == NULL)
		return;
	for (int i = 0; i < sp->ndims; i++) {
		struct sp_dim *d = &sp->dims[i];
		free(d->name);
		free(d->short_name);
		free(d->key);
		free(d->path);
		free(d->values);
		free(d->hp_vals);
	}
	free(sp->dims);
	json_decref(sp->root);
	memset(sp, 0, sizeof *sp);
}
