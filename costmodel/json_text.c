/*
 * json_text.c - JSON text writer (see json_text.h).
 */
#include "json_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
jt_init(struct jt *w, size_t cap)
{
	w->len = 0;
	w->failed = 0;
	w->cap = cap > 16 ? cap : 16;
	w->buf = malloc(w->cap);
	if (w->buf == NULL)
		w->failed = 1;
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
	size_t cap;
	char *b;

	if (w->failed)
		return -1;
	if (w->len + n + 1 <= w->cap)
		return 0;
	cap = w->cap * 2;
	while (cap < w->len + n + 1)
		cap *= 2;
	b = realloc(w->buf, cap);
	if (b == NULL) {
		w->failed = 1;
		return -1;
	}
	w->buf = b;
	w->cap = cap;
	return 0;
}

void
jt_raw(struct jt *w, const char *s, size_t n)
{
	if (reserve(w, n) != 0)
		return;
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

void
jt_lit(struct jt *w, const char *s)
{
	jt_raw(w, s, strlen(s));
}

void
jt_str(struct jt *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	/* the common case: nothing to escape, one copy */
	while (s[n] != '\0' && s[n] != '"' && s[n] != '\\' && (unsigned char)s[n] >= 0x20)
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

void
jt_int(struct jt *w, int64_t v)
{
	char tmp[24];
	int n = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		tmp[n++] = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u != 0);
	if (v < 0)
		tmp[n++] = '-';
	if (reserve(w, (size_t)n) != 0)
		return;
	while (n > 0)
		w->buf[w->len++] = tmp[--n];
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
