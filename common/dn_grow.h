/*
 * dn_grow.h - the one way arrays grow in dnnsat. Every growable array
 * (graph nodes, undo logs, token lists, output buffers...) keeps a pointer
 * and a capacity; dn_grow makes room for `need` elements by doubling (at
 * least 8, at least `need`), with every size product checked for overflow,
 * so that no caller open-codes `cap * 2` and `sizeof *p * cap` again.
 *
 * The pointer is passed by address as void * (it must point to an object
 * pointer, e.g. `&g->nodes`); it is read and written with memcpy, so any
 * element type works without casts. On failure nothing changes: the old
 * array stays valid and owned by the caller.
 */
#ifndef DN_GROW_H
#define DN_GROW_H

#include <stddef.h>

/* Ensures *cap >= need for the array at *(T **)arrp of elements of `elem`
 * bytes. 0, or -1 (out of memory, or need * elem beyond SIZE_MAX) with the
 * array and *cap unchanged. Elements past the old capacity are not
 * initialised. */
int dn_grow(void *arrp, size_t *cap, size_t need, size_t elem);

/* The same for an int capacity (most of the engine's counts are int);
 * -1 also when the grown capacity would not fit an int, or need < 0. */
int dn_grow_int(void *arrp, int *cap, int need, size_t elem);

#endif
