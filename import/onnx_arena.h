/*
 * onnx_arena.h - the importer's memory: everything one import allocates
 * (the parsed model, the symbolic values, the strings of expressions) hangs
 * off one arena that is freed at once when the import ends. Allocation is
 * bounded: past `limit` bytes in all, onnx_arena_alloc fails, so a hostile
 * file cannot make the importer take more than the caller allows.
 */
#ifndef DN_ONNX_ARENA_H
#define DN_ONNX_ARENA_H

#include <stddef.h>

struct onnx_arena_block;
struct onnx_arena {
	struct onnx_arena_block *head;
	size_t used;  /* bytes handed out so far, all blocks together */
	size_t limit; /* the most bytes the arena may hand out */
};

/* An empty arena that will hand out at most `limit` bytes. */
void onnx_arena_init(struct onnx_arena *a, size_t limit);
/* n zeroed bytes, aligned for any type, or NULL (out of memory, past the
 * limit, or n * count overflowing). Freed only by onnx_arena_free. */
void *onnx_arena_alloc(struct onnx_arena *a, size_t count, size_t n);
/* A NUL-terminated copy of s[0..len) (s may hold no NUL), or NULL. */
char *onnx_arena_strndup(struct onnx_arena *a, const char *s, size_t len);
/* printf into the arena, or NULL. */
char *onnx_arena_printf(struct onnx_arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Frees every block; the arena is empty (and reusable) afterwards. */
void onnx_arena_free(struct onnx_arena *a);

#endif
