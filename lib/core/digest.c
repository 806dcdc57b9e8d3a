/*
 * digest.c - SHA-256 as hex; see digest.h.
 */
#include "core/digest.h"

#include <stdio.h>

#include <openssl/evp.h>

void sha256_hex(const void *data, size_t len, char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	out[0] = '\0';
	if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL))
		return;
	for (unsigned i = 0; i < n && i < 32; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}
