/*
 * fset_bytes.c - the byte-level pieces of the engine's binary formats (a
 * count's saved progress, fset_progress.c; a distributed job's data,
 * fset_jobdata.c): a growing write buffer, little-endian integers,
 * unsigned LEB128 varints (at most FS_VARINT_MAX bytes, the shortest
 * encoding only, at most 128 bits) and the FNV-1a 64 checksum.
 *
 * Invariants: a write buffer that ran out of memory stays so (w->oom) and
 * ignores later writes; the reader never reads past r->n (get_le's
 * callers check the length first; fs_get_varint checks every byte).
 */
#include "fset_priv.h"
#include "dn_grow.h"

#include <stdint.h>
#include <string.h>

void
fs_put_bytes(struct fs_wbuf *w, const void *src, size_t n)
{
	if (w->oom)
		return;
	if (n > SIZE_MAX - w->n || dn_grow(&w->p, &w->cap, w->n + n, 1) != 0) {
		w->oom = 1;
		return;
	}
	memcpy(w->p + w->n, src, n);
	w->n += n;
}

void
fs_put_le(struct fs_wbuf *w, fs_count x, int n)
{
	uint8_t b[16];

	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(x >> (8 * i));
	fs_put_bytes(w, b, (size_t)n);
}

void
fs_put_varint(struct fs_wbuf *w, fs_count x)
{
	uint8_t b[FS_VARINT_MAX];
	int n = 0;

	do {
		b[n] = (uint8_t)(x & 0x7F);
		x >>= 7;
		if (x != 0)
			b[n] |= 0x80;
		n++;
	} while (x != 0);
	fs_put_bytes(w, b, (size_t)n);
}

fs_count
fs_get_le(struct fs_rbuf *r, int n)
{
	fs_count x = 0;

	for (int i = 0; i < n; i++)
		x |= (fs_count)r->p[r->at + (size_t)i] << (8 * i);
	r->at += (size_t)n;
	return x;
}

int
fs_get_varint(struct fs_rbuf *r, fs_count *x)
{
	fs_count v = 0;

	for (int i = 0; i < FS_VARINT_MAX; i++) {
		uint8_t b;
		if (r->at >= r->n)
			return -1;
		b = r->p[r->at++];
		if (i == FS_VARINT_MAX - 1 && (b & 0x7F) > 0x03)
			return -1;      /* 18 * 7 = 126 bits before it: 2 left */
		v |= (fs_count)(b & 0x7F) << (7 * i);
		if (!(b & 0x80)) {
			if (b == 0 && i > 0)
				return -1;      /* not the shortest encoding */
			*x = v;
			return 0;
		}
	}
	return -1;
}

uint64_t
fs_fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 0xCBF29CE484222325ULL;    /* FNV-1a 64's offset basis and prime (the FNV spec) */

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001B3ULL;
	}
	return h;
}
