/*
 * dn_error.c - recording errors as values (see dn_error.h): first error wins.
 */
#include "dn_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int
dn_error_set(struct dn_error *err, enum dn_error_code code, const char *path,
    const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || err->code != DN_OK)
		return -1;
	err->code = code;
	snprintf(err->path, sizeof err->path, "%s", path != NULL ? path : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	return -1;
}

int
dn_error_isset(const struct dn_error *err)
{
	return err != NULL && err->code != DN_OK;
}

void
dn_error_clear(struct dn_error *err)
{
	if (err != NULL)
		memset(err, 0, sizeof *err);
}

const char *
dn_error_code_name(enum dn_error_code code)
{
	switch (code) {
	case DN_OK:        return "ok";
	case DN_EINVAL:    return "invalid";
	case DN_ENOENT:    return "not_found";
	case DN_ERANGE:    return "out_of_range";
	case DN_ENOMEM:    return "out_of_memory";
	case DN_ETIMEOUT:  return "timeout";
	case DN_EINTERNAL: return "internal";
	case DN_ETOOBIG:   return "too_large";
	}
	return "unknown";
}

int
dn_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (len == 0)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		buf[0] = '\0';
		return 0;
	}
	return (size_t)n >= len ? (int)len - 1 : n;
}
