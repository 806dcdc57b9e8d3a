/*
 * fnv.h - FNV-1a, 64-bit: the one string hash faultline uses for hash
 * tables (strmap), series identity (snapshot) and alert fingerprints.
 *
 * Hashes are built up piece by piece: start from FNV64_OFFSET, add strings
 * with fnv64_str() and put fnv64_sep() between pieces, so that ("ab", "c")
 * and ("a", "bc") differ.  The separator is a 0xff byte, which no UTF-8
 * text holds.  Alert fingerprints are shown to users and compared across
 * restarts: the arithmetic here must not change.
 */
#ifndef FL_FNV_H
#define FL_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV64_OFFSET 0xcbf29ce484222325ULL
#define FNV64_PRIME 0x100000001b3ULL

/* h extended by the bytes of s. */
static inline uint64_t fnv64_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * FNV64_PRIME;
	return h;
}

/* h extended by n bytes at p (binary data: cache files, health flags). */
static inline uint64_t fnv64_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * FNV64_PRIME;
	return h;
}

/* h extended by a separator between two pieces. */
static inline uint64_t fnv64_sep(uint64_t h)
{
	return (h ^ 0xff) * FNV64_PRIME;
}

#endif
