/*
 * digest.c - SHA-256 as hex; see digest.h.
 */
#include "core/digest.h"

#include <openssl/evp.h>

void hex_encode(const void *in, size_t n, char *out)
{
	static const char digit[] = "0123456789abcdef";
	const unsigned char *b = in;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digit[b[i] >> 4];
		out[2 * i + 1] = digit[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void sha256_hex(const void *data, size_t len, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	out[0] = '\0';
	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL))
		return;
	hex_encode(md, n < 32 ? n : 32, out);
}
