/*
 * dn_error.h - the error value that travels from costmodel and solver up to
 * the server and the CLI.
 *
 * Invariants: the first error recorded wins (later dn_error_set calls on a
 * set error are ignored), so the innermost, most precise message survives.
 * `path` is a JSON path into the user's input ("$.layers[3].kernel") or empty
 * when no single field is to blame. Both strings are always NUL-terminated.
 */
#ifndef DN_ERROR_H
#define DN_ERROR_H

#include <stddef.h>

enum dn_error_code {
	DN_OK = 0,
	DN_EINVAL,   /* malformed or semantically wrong input */
	DN_ENOENT,   /* unknown name: template, device, operator, hyperparameter */
	DN_ERANGE,   /* absurd size or a value that overflows 64 bits */
	DN_ENOMEM,   /* allocation failed */
	DN_ETIMEOUT, /* a deadline passed */
	DN_EINTERNAL,
	DN_ETOOBIG,  /* within the rules, but beyond a configured size limit (HTTP 413) */
};

struct dn_error {
	enum dn_error_code code;
	char path[256];
	char message[512];
};

/* Records an error unless one is already recorded; `err` may be NULL.
 * Returns -1 so callers can write `return dn_error_set(...)`. */
int dn_error_set(struct dn_error *err, enum dn_error_code code,
    const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* True when `err` holds an error. */
int dn_error_isset(const struct dn_error *err);

/* Clears `err` for reuse. */
void dn_error_clear(struct dn_error *err);

/* Stable lowercase name of a code ("invalid", "not_found", ...). */
const char *dn_error_code_name(enum dn_error_code code);

/* snprintf for paths and messages where truncation is acceptable (the
 * result is always terminated); returns the length written. */
int dn_fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
