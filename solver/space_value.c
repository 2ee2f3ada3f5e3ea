/*
 * space_value.c - what a parsed space holds, read back: a dim by its address
 * (or an unambiguous short form), the
 * i-th value of a grid as a number, as the model sees it and as NNI writes it in a sample,
 * and the exact number of configurations of the whole space.
 *
 * Invariants: nothing here allocates except the JSON values and the count
 * string handed to the caller; a progression's values are computed from
 * integers ((k0 + j) * q, ibase + i), never accumulated, so that the i-th
 * value of a grid of 10^12 values is as exact as the first. Counts use GMP:
 * a space of 10^30 configurations is counted exactly.
 */
#include "space.h"

#include "dn_suggest.h"

#include <gmp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* sp_dim_lookup's error for a name that designates no dim, with the
 * addresses close to it ("did you mean batch_size?"). */
static int
unknown_name(const struct sp_space *sp, const char *name, const char *field, struct dn_error *err)
{
	const char **names = err != NULL ? calloc((size_t)sp->ndims + 1, sizeof *names) : NULL;
	char near[200] = "";

	if (names != NULL) {
		for (int k = 0; k < sp->ndims; k++)
			names[k] = sp->dims[k].name;
		dn_suggest(name, names, sp->ndims, near, sizeof near);
		free(names);
	}
	if (near[0] != '\0')
		return dn_error_set(err, DN_ENOENT, field, "the space has no parameter \"%.200s\" (did you mean %s?)",
		    name, near);
	return dn_error_set(err, DN_ENOENT, field, "the space has no parameter \"%.200s\"", name);
}

int
sp_dim_lookup(const struct sp_space *sp, const char *name, const char *field, struct dn_error *err)
{
	char list[400];
	size_t len = 0;
	int found = -1, n = 0, shown = 0;

	for (int k = 0; k < sp->ndims; k++)
		if (strcmp(sp->dims[k].name, name) == 0)
			return k;
	for (int k = 0; k < sp->ndims; k++)
		if (sp->dims[k].parent >= 0 && strcmp(sp->dims[k].short_name, name) == 0) {
			found = k;
			n++;
		}
	if (n == 1)
		return found;
	if (n == 0)
		return unknown_name(sp, name, field, err);
	/* "a, b or c", as much of it as the message holds */
	list[0] = '\0';
	for (int k = 0; k < sp->ndims && len < sizeof list; k++) {
		if (sp->dims[k].parent < 0 || strcmp(sp->dims[k].short_name, name) != 0)
			continue;
		shown++;
		len += (size_t)dn_fmt(list + len, sizeof list - len, "%s%s",
		    shown == 1 ? "" : shown == n ? " or " : ", ", sp->dims[k].name);
	}
	return dn_error_set(err, DN_EINVAL, field, "%.100s is ambiguous: %s", name, list);
}

int
sp_dim_named(const struct sp_space *sp, const char *name)
{
	return sp_dim_lookup(sp, name, NULL, NULL);
}

const char *
sp_dim_address(const struct sp_space *sp, const char *name)
{
	int k = sp_dim_named(sp, name);

	return k >= 0 ? sp->dims[k].name : name;
}

double
sp_value_num(const struct sp_dim *d, int64_t i)
{
	if (!d->discrete || i < 0 || i >= d->nvalues)
		return NAN;
	switch (d->type) {
	case SP_CHOICE:
		if (d->nested || !json_is_number(d->values[i]))
			return NAN;
		return json_number_value(d->values[i]);
	case SP_RANDINT:
		return (double)(d->ibase + i);
	case SP_QUNIFORM:
	case SP_QLOGUNIFORM:
		if (d->head && i == 0)
			return d->lo;
		if (d->tail && i == d->nvalues - 1)
			return d->hi;
		return (double)(d->k0 + (i - d->head)) * d->q;
	default:
		return NAN;
	}
}

union expr_val
sp_value_hp(const struct sp_dim *d, int64_t i)
{
	union expr_val v;
	int as_int;

	v.i = 0;
	if (!d->discrete || i < 0 || i >= d->nvalues)
		return v;
	if (d->hp >= 0 && d->hp_vals != NULL)
		return d->hp_vals[i];
	if (d->type == SP_CHOICE) {
		/* unbound choice: the option index */
		v.i = i;
		return v;
	}
	as_int = d->hp >= 0 ? d->hp_type != CM_HP_REAL : d->integer;
	if (d->type == SP_RANDINT) {
		if (as_int)
			v.i = d->ibase + i;
		else
			v.r = (double)(d->ibase + i);
		return v;
	}
	if (as_int)
		v.i = (int64_t)llround(sp_value_num(d, i));
	else
		v.r = sp_value_num(d, i);
	return v;
}

json_t *
sp_value_json(const struct sp_dim *d, int64_t i)
{
	double x;

	if (!d->discrete || i < 0 || i >= d->nvalues)
		return NULL;
	if (d->type == SP_CHOICE) {
		if (d->nested)
			return json_incref(json_object_get(d->values[i], "_name"));
		return json_incref(d->values[i]);
	}
	if (d->type == SP_RANDINT)
		return json_integer(d->ibase + i);
	x = sp_value_num(d, i);
	if (d->integer)
		return json_integer((json_int_t)llround(x));
	return json_real(x);
}

/*
 * The count: a discrete dim contributes its number of values, a continuous
 * one 1, a choice of sub-spaces the sum over its options of the product of
 * the option's dims. Dims are in depth-first order, so the subtree of dim d
 * is dims[d .. end[d]) and its direct children are reached by jumping from
 * one subtree's end to the next; children of one option are contiguous.
 */
static void
count_dim(const struct sp_space *sp, const int *end, mpz_t *c, int d)
{
	const struct sp_dim *dim = &sp->dims[d];
	mpz_t prod;
	int64_t with_children = 0;
	int e, opt;

	if (!dim->discrete) {
		mpz_set_ui(c[d], 1);
		return;
	}
	if (!dim->nested || end[d] == d + 1) {
		mpz_set_ui(c[d], 0);
		mpz_add_ui(c[d], c[d], (unsigned long)(dim->nvalues >> 32));
		mpz_mul_2exp(c[d], c[d], 32);
		mpz_add_ui(c[d], c[d], (unsigned long)(dim->nvalues & 0xffffffff));
		return;
	}
	mpz_set_ui(c[d], 0);
	mpz_init(prod);
	for (e = d + 1; e < end[d]; ) {
		opt = sp->dims[e].parent_option;
		mpz_set_ui(prod, 1);
		for (; e < end[d] && sp->dims[e].parent_option == opt; e = end[e])
			mpz_mul(prod, prod, c[e]);
		mpz_add(c[d], c[d], prod);
		with_children++;
	}
	/* options without parameters count once each */
	mpz_add_ui(c[d], c[d], (unsigned long)(dim->nvalues - with_children));
	mpz_clear(prod);
}

char *
sp_count_total(const struct sp_space *sp)
{
	int n = sp->ndims;
	int *end = malloc(((size_t)n + 1) * sizeof *end);
	mpz_t *c = malloc(((size_t)n + 1) * sizeof *c);
	mpz_t total;
	char *s = NULL;

	if (end == NULL || c == NULL) {
		free(end);
		free(c);
		return NULL;
	}
	for (int d = 0; d < n; d++)
		end[d] = d + 1;
	for (int d = n - 1; d >= 0; d--) {
		int p = sp->dims[d].parent;
		if (p >= 0 && end[d] > end[p])
			end[p] = end[d];
	}
	for (int d = n - 1; d >= 0; d--) {
		mpz_init(c[d]);
		count_dim(sp, end, c, d);
	}
	mpz_init_set_ui(total, 1);
	for (int d = 0; d < n; d = end[d])
		mpz_mul(total, total, c[d]);
	if ((s = malloc(mpz_sizeinbase(total, 10) + 2)) != NULL)
		mpz_get_str(s, 10, total);
	mpz_clear(total);
	for (int d = 0; d < n; d++)
		mpz_clear(c[d]);
	free(c);
	free(end);
	return s;
}
