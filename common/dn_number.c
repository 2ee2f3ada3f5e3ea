/*
 * dn_number.c - decimal numbers from user text (see dn_number.h): the
 * syntax is checked by hand first, then strtod converts what passed, and
 * its range errors are refused instead of rounded to 0 or infinity.
 */
#include "dn_number.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

static int
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int
dn_decimal(const char *s, double *out, const char **end)
{
	const char *p = s;
	char *stop;
	int digits = 0;
	double x;

	if (*p == '+' || *p == '-')
		p++;
	while (is_digit(*p)) {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (is_digit(*p)) {
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return -1;
	if (*p == 'e' || *p == 'E') {
		const char *q = p + 1;
		if (*q == '+' || *q == '-')
			q++;
		if (!is_digit(*q))
			return -1;
		while (is_digit(*q))
			q++;
		p = q;
	}
	errno = 0;
	x = strtod(s, &stop);
	if (stop != p || !isfinite(x))
		return -1;
	if (x != 0 ? fabs(x) < DBL_MIN : errno == ERANGE)
		return -1;      /* underflow: not the number that was written */
	*out = x;
	if (end != NULL)
		*end = p;
	return 0;
}

int
dn_decimal_all(const char *s, double *out)
{
	const char *end;

	return dn_decimal(s, out, &end) == 0 && *end == '\0' ? 0 : -1;
}
