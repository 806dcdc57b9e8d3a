/*
 * wire.c - a bounds pre-check for untrusted msgpack; see wire.h.
 */
#include "model/wire.h"

#include <stdint.h>
#include <string.h>

static int wire_need(size_t have, size_t need)
{
	return need <= have;
}

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * Skip one msgpack item at *off.  Returns 0, or -1 if it is truncated,
 * malformed, nests deeper than WIRE_MAX_DEPTH, or a container claims more
 * elements than there are bytes left.
 */
static int wire_skip(const unsigned char *b, size_t len, size_t *off, int depth, int max_depth)
{
	size_t o = *off, n = 0, items = 0;
	unsigned char t;
	int lenbytes = 0;

	if (depth > max_depth || o >= len)
		return -1;
	t = b[o++];
	if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
		/* fixint, nil, bool */
	} else if (t >= 0xa0 && t <= 0xbf) {
		n = t & 0x1f;
	} else if (t >= 0x80 && t <= 0x8f) {
		items = (size_t)(t & 0x0f) * 2;
	} else if (t >= 0x90 && t <= 0x9f) {
		items = t & 0x0f;
	} else {
		switch (t) {
		case 0xcc: case 0xd0: n = 1; break;
		case 0xcd: case 0xd1: n = 2; break;
		case 0xca: case 0xce: case 0xd2: n = 4; break;
		case 0xcb: case 0xcf: case 0xd3: n = 8; break;
		case 0xd4: n = 2; break;
		case 0xd5: n = 3; break;
		case 0xd6: n = 5; break;
		case 0xd7: n = 9; break;
		case 0xd8: n = 17; break;
		case 0xc4: case 0xd9: lenbytes = 1; break;
		case 0xc5: case 0xda: lenbytes = 2; break;
		case 0xc6: case 0xdb: lenbytes = 4; break;
		case 0xc7: lenbytes = 1; n = 1; break;
		case 0xc8: lenbytes = 2; n = 1; break;
		case 0xc9: lenbytes = 4; n = 1; break;
		case 0xdc: case 0xde:
			if (!wire_need(len - o, 2))
				return -1;
			items = be(b + o, 2) * (t == 0xde ? 2 : 1);
			o += 2;
			break;
		case 0xdd: case 0xdf:
			if (!wire_need(len - o, 4))
				return -1;
			items = be(b + o, 4) * (t == 0xdf ? 2 : 1);
			o += 4;
			break;
		default:
			return -1;	/* 0xc1, never used */
		}
	}
	if (lenbytes) {
		if (!wire_need(len - o, lenbytes))
			return -1;
		n += be(b + o, lenbytes);
		o += lenbytes;
	}
	if (!wire_need(len - o, n))
		return -1;
	o += n;
	if (items > len - o)
		return -1;
	for (size_t i = 0; i < items; i++)
		if (wire_skip(b, len, &o, depth + 1, max_depth))
			return -1;
	*off = o;
	return 0;
}

int wire_check(const void *buf, size_t len, int max_depth, size_t *end)
{
	size_t off = 0;

	if (wire_skip(buf, len, &off, 0, max_depth))
		return -1;
	*end = off;
	return 0;
}

void wire_pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

int wire_key_is(const msgpack_object *k, const char *name)
{
	size_t n = strlen(name);

	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
	       memcmp(k->via.str.ptr, name, n) == 0;
}

int wire_u64(const msgpack_object *o, uint64_t *v)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return -1;
	*v = o->via.u64;
	return 0;
}
