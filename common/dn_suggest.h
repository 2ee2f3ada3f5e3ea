/*
 * dn_suggest.h - "did you mean" for unknown names: the closest candidates of
 * a list by edit distance (case-insensitive), for messages about unknown
 * devices, hyperparameters and space parameters.
 *
 * Invariants: nothing is allocated; the text written is always terminated
 * and empty when no candidate is close enough.
 */
#ifndef DN_SUGGEST_H
#define DN_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance of a and b, case-insensitive, on their first 63
 * characters. */
int dn_edit_distance(const char *a, const char *b);

/* Writes into buf the (at most three, closest first, distinct) candidates
 * close to `name` as "x, y or z": those within max(2, strlen(name) / 3)
 * edits, or those that start with or contain `name`. Candidates that are
 * NULL are skipped. Returns how many were written (0: buf is ""). */
int dn_suggest(const char *name, const char *const *cands, int n, char *buf, size_t len);

#endif
