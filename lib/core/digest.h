/*
 * digest.h - SHA-256 as lowercase hex (OpenSSL's EVP), for identities
 * derived from content: alert groups, idempotency keys, PagerDuty dedup
 * keys.
 */
#ifndef FL_CORE_DIGEST_H
#define FL_CORE_DIGEST_H

#include <stddef.h>

/* in[0..n) as lowercase hex into out (2n + 1 bytes, NUL-terminated). */
void hex_encode(const void *in, size_t n, char *out);

/* Hex SHA-256 of data[0..len) into out (65 bytes, NUL-terminated). */
void sha256_hex(const void *data, size_t len, char *out);

#endif
