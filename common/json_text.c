/*
 * json_text.c - JSON text writer (see json_text.h).
 */
#include "json_text.h"
#include "dn_grow.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void
jt_init(struct jt *w, size_t cap)
{
	w->len = 0;
	w->failed = 0;
	w->cap = cap > 16 ? cap : 16;
	w->buf = malloc(w->cap);
	if (w->buf == NULL) {
		w->failed = 1;
		w->cap = 0;     /* the inline writers find no room, ever */
	}
}

void
jt_free(struct jt *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->cap = 0;
}

char *
jt_take(struct jt *w, size_t *len)
{
	char *b = w->buf;

	if (w->failed) {
		jt_free(w);
		return NULL;
	}
	b[w->len] = '\0';
	if (len != NULL)
		*len = w->len;
	w->buf = NULL;
	w->len = w->cap = 0;
	return b;
}

/* Room for n more bytes and a terminator; 0 or -1. */
static int
reserve(struct jt *w, size_t n)
{
	if (w->failed)
		return -1;
	if (w->len + n + 1 <= w->cap)
		return 0;
	if (n > SIZE_MAX - w->len - 1 || dn_grow(&w->buf, &w->cap, w->len + n + 1, 1) != 0) {
		w->failed = 1;
		w->cap = 0;     /* the inline writers find no room, ever */
		return -1;
	}
	return 0;
}

void
jt_raw_grow(struct jt *w, const char *s, size_t n)
{
	if (reserve(w, n) != 0)
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

/* 1 for the bytes a JSON string holds as they are: not the terminator, a
 * control character, '"' or '\\' (bytes from 0x80 are UTF-8, kept). */
#define JT_ROW16 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1
static const unsigned char plain_char[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,         /* 0x00-0x0f */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,         /* 0x10-0x1f */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,         /* 0x20-0x2f: '"' */
	JT_ROW16, JT_ROW16,                                     /* 0x30-0x4f */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,         /* 0x50-0x5f: '\\' */
	JT_ROW16, JT_ROW16, JT_ROW16, JT_ROW16, JT_ROW16,       /* 0x60-0xaf */
	JT_ROW16, JT_ROW16, JT_ROW16, JT_ROW16, JT_ROW16,       /* 0xb0-0xff */
};
#undef JT_ROW16

void
jt_str(struct jt *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	/* the common case: nothing to escape, one copy */
	while (plain_char[(unsigned char)s[n]])
		n++;
	if (s[n] == '\0') {
		if (reserve(w, n + 2) != 0)
			return;
		w->buf[w->len++] = '"';
		memcpy(w->buf + w->len, s, n);
		w->len += n;
		w->buf[w->len++] = '"';
		return;
	}
	n += strlen(s + n);
	if (reserve(w, 6 * n + 2) != 0)
		return;
	w->buf[w->len++] = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = *p;
		if (c == '"' || c == '\\') {
			w->buf[w->len++] = '\\';
			w->buf[w->len++] = (char)c;
		} else if (c < 0x20) {
			w->buf[w->len++] = '\\';
			switch (c) {
			case '\n': w->buf[w->len++] = 'n'; break;
			case '\t': w->buf[w->len++] = 't'; break;
			case '\r': w->buf[w->len++] = 'r'; break;
			case '\b': w->buf[w->len++] = 'b'; break;
			case '\f': w->buf[w->len++] = 'f'; break;
			default:
				memcpy(w->buf + w->len, "u00", 3);
				w->len += 3;
				w->buf[w->len++] = hex[c >> 4];
				w->buf[w->len++] = hex[c & 15];
			}
		} else
			w->buf[w->len++] = (char)c;
	}
	w->buf[w->len++] = '"';
}

/* "00" "01" ... "99": integers are written two digits per division */
static const char digit_pairs[] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

static const uint64_t pow10_u64[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
	1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
	100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
	1000000000000000000ULL, 10000000000000000000ULL
};

/* Decimal digits of u (1 for 0): log10 from the bit length (1233/4096 is
 * just above log10(2)), corrected by one comparison. */
static int
decimal_digits(uint64_t u)
{
	int t = ((64 - __builtin_clzll(u | 1)) * 1233) >> 12;
	int d = t + (u >= pow10_u64[t]);

	return d > 0 ? d : 1;
}

/* The eight digits of x < 10^8 at p, leading zeros included: two
 * divisions by constants and four digit pairs, no loop. */
static inline void
put8(char *p, uint32_t x)
{
	uint32_t hi = x / 10000, lo = x - hi * 10000;
	uint32_t a = hi / 100, b = hi - a * 100, c = lo / 100, d = lo - c * 100;

	memcpy(p, digit_pairs + 2 * a, 2);
	memcpy(p + 2, digit_pairs + 2 * b, 2);
	memcpy(p + 4, digit_pairs + 2 * c, 2);
	memcpy(p + 6, digit_pairs + 2 * d, 2);
}

void
jt_int(struct jt *w, int64_t v)
{
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	int d = decimal_digits(u);
	size_t n = (size_t)d + (v < 0);
	char tmp[24];           /* the digits right-aligned: 24 - d .. 23 */

	/* eight-digit groups from the right, in 32-bit arithmetic */
	put8(tmp + 16, (uint32_t)(u % 100000000));
	if (d > 8) {
		uint64_t q = u / 100000000;
		put8(tmp + 8, (uint32_t)(q % 100000000));
		if (d > 16)
			put8(tmp, (uint32_t)(q / 100000000));
	}
	if (v < 0)
		tmp[23 - d] = '-';
	if (w->len + n + 1 <= w->cap) {
		memcpy(w->buf + w->len, tmp + 24 - n, n);
		w->len += n;
	} else
		jt_raw(w, tmp + 24 - n, n);
}

/* 10^k, exact in a double for k <= 22 */
static const double pow10_table[23] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12,
	1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

/* %.15g without printf's multi-precision path for the usual magnitudes:
 * 15 significant digits by scaling with an exact power of ten (one
 * rounding, so the last digit may differ by one unit from a correctly
 * rounded conversion), trailing zeros dropped, the exponent form below
 * 1e-5 and from 1e15 as %g does. 0 when out of its range. */
static int
format_g15(double v, char *out)
{
	double a = fabs(v), m;
	int e, n = 0, lead;
	int64_t mi;
	char digits[16];

	if (!(a >= 1e-8 && a < 1e15))
		return 0;
	e = (int)floor(log10(a));
	if (e - 14 >= 0)
		m = a / pow10_table[e - 14];
	else if (14 - e <= 22)
		m = a * pow10_table[14 - e];
	else
		return 0;
	mi = (int64_t)llround(m);
	if (mi >= 1000000000000000LL) {         /* log10 rounded down a power of ten */
		mi = (mi + 5) / 10;
		e++;
	} else if (mi < 100000000000000LL) {
		mi *= 10;
		e--;
	}
	{
		/* 15 digits: 7 above, 8 below 10^8, two per 32-bit division */
		uint32_t hi = (uint32_t)(mi / 100000000), lo = (uint32_t)(mi % 100000000);
		for (int i = 14; i > 6; i -= 2) {
			uint32_t r = lo % 100;
			lo /= 100;
			digits[i] = digit_pairs[2 * r + 1];
			digits[i - 1] = digit_pairs[2 * r];
		}
		for (int i = 6; i > 0; i -= 2) {
			uint32_t r = hi % 100;
			hi /= 100;
			digits[i] = digit_pairs[2 * r + 1];
			digits[i - 1] = digit_pairs[2 * r];
		}
		digits[0] = (char)('0' + hi);
	}
	lead = 15;
	while (lead > 1 && digits[lead - 1] == '0')
		lead--;
	if (v < 0)
		out[n++] = '-';
	if (e < -4 || e >= 15) {
		out[n++] = digits[0];
		if (lead > 1) {
			out[n++] = '.';
			memcpy(out + n, digits + 1, (size_t)lead - 1);
			n += lead - 1;
		}
		n += snprintf(out + n, 8, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	} else if (e < 0) {
		out[n++] = '0';
		out[n++] = '.';
		for (int i = 0; i < -e - 1; i++)
			out[n++] = '0';
		memcpy(out + n, digits, (size_t)lead);
		n += lead;
	} else {
		for (int i = 0; i <= e; i++)
			out[n++] = i < lead ? digits[i] : '0';
		if (lead > e + 1) {
			out[n++] = '.';
			memcpy(out + n, digits + e + 1, (size_t)(lead - e - 1));
			n += lead - e - 1;
		}
	}
	out[n] = '\0';
	return n;
}

void
jt_real(struct jt *w, double v)
{
	char tmp[40];
	int n;

	if (!isfinite(v)) {
		jt_raw(w, "null", 4);
		return;
	}
	if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
		/* integral values (limits, byte counts) print exactly as %.15g would */
		jt_int(w, (int64_t)v);
		jt_raw(w, ".0", 2);
		return;
	}
	n = format_g15(v, tmp);
	if (n == 0)
		n = snprintf(tmp, sizeof tmp, "%.15g", v);
	if (n <= 0 || (size_t)n >= sizeof tmp)
		return;
	if (strpbrk(tmp, ".eEn") == NULL) {     /* keep it a real, as jansson does */
		tmp[n++] = '.';
		tmp[n++] = '0';
	}
	jt_raw(w, tmp, (size_t)n);
}

void
jt_bool(struct jt *w, int v)
{
	if (v)
		jt_raw(w, "true", 4);
	else
		jt_raw(w, "false", 5);
}

void
jt_key(struct jt *w, const char *k)
{
	jt_str(w, k);
	jt_raw(w, ":", 1);
}
