/*
 * srv_digest.c - SHA-256 as hex (srv_digest.h). nettle does the hashing;
 * this file only feeds it and writes the digest out, so the one place that
 * names the library is here.
 */
#include "srv_digest.h"

#include <nettle/sha2.h>
#include <stdint.h>

void
srv_sha256_hex(const void *data, size_t len, char hex[SRV_SHA256_HEX])
{
	static const char digits[] = "0123456789abcdef";
	struct sha256_ctx ctx;
	uint8_t d[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof d, d);
	for (size_t i = 0; i < sizeof d; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[2 * sizeof d] = '\0';
}
