/*
 * dn_suggest.c - the closest names of a list for "did you mean" messages
 * (see dn_suggest.h): a case-insensitive Levenshtein distance on one row,
 * and a pick of the three nearest candidates, prefixes and substrings
 * counting as near.
 */
#include "dn_suggest.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "dn_error.h"

#define SUGGEST_MAXLEN 63

int
dn_edit_distance(const char *a, const char *b)
{
	int row[SUGGEST_MAXLEN + 1];
	size_t la = strlen(a), lb = strlen(b);

	if (la > SUGGEST_MAXLEN)
		la = SUGGEST_MAXLEN;
	if (lb > SUGGEST_MAXLEN)
		lb = SUGGEST_MAXLEN;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j], best;
			int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
			best = diag + !same;
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* Whether `hay` contains `needle`, case-insensitive. */
static int
contains(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	if (n == 0)
		return 0;
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return 1;
	return 0;
}

int
dn_suggest(const char *name, const char *const *cands, int n, char *buf, size_t len)
{
	int best[3] = { -1, -1, -1 }, dist[3] = { 0, 0, 0 }, nbest = 0, limit;
	size_t used = 0;

	buf[0] = '\0';
	limit = (int)strlen(name) / 3 > 2 ? (int)strlen(name) / 3 : 2;
	for (int i = 0; i < n; i++) {
		int d, dup = 0, k;
		if (cands[i] == NULL)
			continue;
		d = dn_edit_distance(name, cands[i]);
		if (d > limit) {
			if (!contains(cands[i], name))
				continue;
			d = limit + 1;  /* near, after the close spellings */
		}
		for (k = 0; k < nbest; k++)
			dup |= strcasecmp(cands[best[k]], cands[i]) == 0;
		if (dup)
			continue;
		/* insert by distance, keeping the list order among equals */
		for (k = 0; k < nbest && dist[k] <= d; k++)
			;
		if (k == 3)
			continue;
		for (int m = nbest < 3 ? nbest : 2; m > k; m--) {
			best[m] = best[m - 1];
			dist[m] = dist[m - 1];
		}
		best[k] = i;
		dist[k] = d;
		if (nbest < 3)
			nbest++;
	}
	for (int k = 0; k < nbest; k++)
		used += (size_t)dn_fmt(buf + used, len > used ? len - used : 0, "%s%s",
		    k == 0 ? "" : k == nbest - 1 ? " or " : ", ", cands[best[k]]);
	return nbest;
}
