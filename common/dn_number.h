/*
 * dn_number.h - numbers read from text that people and clients write
 * (query strings, flags, size strings such as "16 GiB"): decimal only.
 * strtod alone also takes hexadecimal ("0x20"), "inf", "nan" and leading
 * spaces, and turns 1e-400 into 0 and 1e400 into infinity without a word;
 * every reader of user text goes through dn_decimal instead.
 */
#ifndef DN_NUMBER_H
#define DN_NUMBER_H

/* Reads a decimal number at the start of s:
 *   [+-]? digits* [. digits*] [(e|E) [+-]? digits+]  (a digit before or after the point)
 * Returns 0 with *out the value and *end (when not NULL) just past it; -1
 * when s does not start with one (hexadecimal, inf, nan, a space, no digit)
 * or the value is beyond double's range (overflow to infinity, or a nonzero
 * number that underflows below the smallest normal double). */
int dn_decimal(const char *s, double *out, const char **end);

/* The same for the whole of s (nothing may follow the number). */
int dn_decimal_all(const char *s, double *out);

#endif
