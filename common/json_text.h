/*
 * json_text.h - writing JSON text straight into a growing buffer
 * (json_text.c), for the hot paths where building jansson objects and
 * dumping them costs more than the answer itself (a /check response:
 * ~30 us through jansson, ~2 us here). The caller writes the structure
 * (braces, commas) with jt_lit; values are escaped and formatted here as
 * jansson prints them with JSON_REAL_PRECISION(15) (reals always with a
 * '.' or an exponent, 15 significant digits - the last one within a unit
 * of printf's - non-finite as null), so both paths read the same.
 *
 * Invariants: after any allocation failure `failed` is set and cap is 0,
 * so further writes do nothing; jt_take returns NULL then.
 */
#ifndef DN_JSON_TEXT_H
#define DN_JSON_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct jt {
	char *buf;
	size_t len, cap;
	int failed;
};

void jt_init(struct jt *w, size_t cap);
void jt_free(struct jt *w);
/* The text (NUL-terminated, malloc'd: the caller frees it) and its length. */
char *jt_take(struct jt *w, size_t *len);

/* n bytes as they are (jt_raw), or a literal fragment: "{", "\"a\":", ","
 * (jt_lit). Inline: the common case, room in the buffer, is one copy; a
 * literal's length is then known at compile time. */
void jt_raw_grow(struct jt *w, const char *s, size_t n);

static inline void
jt_raw(struct jt *w, const char *s, size_t n)
{
	if (w->len + n + 1 <= w->cap) {
		memcpy(w->buf + w->len, s, n);
		w->len += n;
	} else
		jt_raw_grow(w, s, n);
}

static inline void
jt_lit(struct jt *w, const char *s)
{
	jt_raw(w, s, strlen(s));
}

void jt_str(struct jt *w, const char *s);       /* a JSON string, escaped */
void jt_int(struct jt *w, int64_t v);
void jt_real(struct jt *w, double v);
void jt_bool(struct jt *w, int v);
void jt_key(struct jt *w, const char *k);       /* "k": (k escaped) */

#endif
