/*
 * onnx_arena.c - a bump allocator in blocks (see onnx_arena.h). Blocks are
 * at least 64 KiB; a larger request gets a block of its own. Invariant:
 * a->used counts the bytes of every request granted, so the limit bounds
 * what a file can make the importer hold.
 */
#include "onnx_arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_MIN ((size_t)64 * 1024)
#define ALIGN ((size_t)16)

struct onnx_arena_block {
	struct onnx_arena_block *next;
	size_t size, off;
	max_align_t data[];
};

void
onnx_arena_init(struct onnx_arena *a, size_t limit)
{
	a->head = NULL;
	a->used = 0;
	a->limit = limit;
}

void *
onnx_arena_alloc(struct onnx_arena *a, size_t count, size_t n)
{
	struct onnx_arena_block *b = a->head;
	size_t want;
	char *p;

	if (n != 0 && count > SIZE_MAX / n)
		return NULL;
	want = count * n;
	if (want > SIZE_MAX - ALIGN)
		return NULL;
	want = (want + ALIGN - 1) & ~(ALIGN - 1);
	if (want == 0)
		want = ALIGN;
	if (want > a->limit || a->used > a->limit - want)
		return NULL;
	if (b == NULL || b->size - b->off < want) {
		size_t size = want > BLOCK_MIN ? want : BLOCK_MIN;
		b = malloc(sizeof *b + size);
		if (b == NULL)
			return NULL;
		b->size = size;
		b->off = 0;
		b->next = a->head;
		a->head = b;
	}
	p = (char *)b->data + b->off;
	b->off += want;
	a->used += want;
	memset(p, 0, want);
	return p;
}

char *
onnx_arena_strndup(struct onnx_arena *a, const char *s, size_t len)
{
	char *p;

	if (len == SIZE_MAX)
		return NULL;
	p = onnx_arena_alloc(a, 1, len + 1);
	if (p == NULL)
		return NULL;
	if (len > 0)
		memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *
onnx_arena_printf(struct onnx_arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = onnx_arena_alloc(a, 1, (size_t)n + 1);
	if (p == NULL)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void
onnx_arena_free(struct onnx_arena *a)
{
	while (a->head != NULL) {
		struct onnx_arena_block *b = a->head;
		a->head = b->next;
		free(b);
	}
	a->used = 0;
}
