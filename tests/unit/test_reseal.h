/*
 * test_reseal.h - rewrites the checksum a count's saved progress ends with
 * (FNV-1a 64 of every byte before it, little-endian; solver/fset_progress.c)
 * after a test or a fuzz target changed the blob, so that the loader's
 * structural checks are reached instead of its checksum. Header-only.
 */
#ifndef DN_TEST_RESEAL_H
#define DN_TEST_RESEAL_H

#include <stddef.h>
#include <stdint.h>

static void __attribute__((unused))
test_reseal(uint8_t *b, size_t len)
{
	uint64_t h = 0xCBF29CE484222325ULL;

	if (len < 8)
		return;
	for (size_t i = 0; i + 8 < len; i++) {
		h ^= b[i];
		h *= 0x100000001B3ULL;
	}
	for (int i = 0; i < 8; i++)
		b[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
}

#endif
