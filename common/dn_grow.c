/*
 * dn_grow.c - overflow-checked geometric growth of arrays (see dn_grow.h).
 */
#include "dn_grow.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int
dn_grow(void *arrp, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap;
	void *old, *p;

	if (need <= ncap)
		return 0;
	if (elem == 0)
		elem = 1;
	if (ncap < 8)
		ncap = 8;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2) {
			ncap = need;
			break;
		}
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / elem) {
		ncap = need;                    /* doubling overflowed: the exact need may still fit */
		if (ncap > SIZE_MAX / elem)
			return -1;
	}
	memcpy(&old, arrp, sizeof old);
	p = realloc(old, ncap * elem);
	if (p == NULL)
		return -1;
	memcpy(arrp, &p, sizeof p);
	*cap = ncap;
	return 0;
}

int
dn_grow_int(void *arrp, int *cap, int need, size_t elem)
{
	size_t c = *cap > 0 ? (size_t)*cap : 0;

	if (need < 0)
		return -1;
	if (need <= *cap)
		return 0;
	if (dn_grow(arrp, &c, (size_t)need, elem) != 0)
		return -1;
	if (c > INT_MAX) {
		/* keep the larger block (it is valid) but report only what an int holds */
		c = INT_MAX;
	}
	*cap = (int)c;
	return 0;
}
