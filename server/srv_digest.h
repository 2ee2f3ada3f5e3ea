/*
 * srv_digest.h - SHA-256 for the service's content-addressed ids (model
 * ids, api_models.c), computed by nettle (Debian's libnettle, the smallest
 * of the maintained libraries that ship it: GnuTLS's own hash code).
 */
#ifndef SRV_DIGEST_H
#define SRV_DIGEST_H

#include <stddef.h>

#define SRV_SHA256_HEX 65       /* 64 lowercase hex digits and the NUL */

/* hex = the SHA-256 of the `len` bytes at `data` (FIPS 180-4), as 64
 * lowercase hex digits: what `sha256sum` prints for the same bytes. */
void srv_sha256_hex(const void *data, size_t len, char hex[SRV_SHA256_HEX]);

#endif
