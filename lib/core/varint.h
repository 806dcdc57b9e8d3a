/*
 * varint.h - LEB128 varints and zigzag signed integers, for the packed
 * forms that keep numbers in as few bytes as they need (rules/lang/columns.c,
 * model/chunk.c).
 *
 * A varint is 7 bits a byte, least significant first, the high bit set on
 * every byte but the last: 1 byte below 128, at most 10 for a u64.  A
 * signed difference goes through zigzag first (0, -1, 1, -2 ... map to 0,
 * 1, 2, 3 ...) so that small negative numbers stay small.
 */
#ifndef FL_VARINT_H
#define FL_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX 10	/* bytes a u64 takes at most */

/* Write v at p (room for VARINT_MAX bytes); returns the bytes written. */
static inline size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Read a varint this process wrote (never malformed) and advance *p. */
static inline uint64_t varint_get_trusted(const uint8_t **p)
{
	uint64_t v = 0;
	unsigned shift = 0;

	while (**p & 0x80) {
		v |= (uint64_t)(*(*p)++ & 0x7f) << shift;
		shift += 7;
	}
	v |= (uint64_t)*(*p)++ << shift;
	return v;
}

/*
 * Read a varint of untrusted bytes [*p, end) into *v and advance *p.
 * Returns 0, or -1 when it runs past end or is longer than a u64's.
 */
static inline int varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		if (shift == 63 && b > 1)
			return -1;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

static inline uint64_t zigzag_encode(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t zigzag_decode(uint64_t u)
{
	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

#endif
