/*
 * wire.h - a bounds pre-check for untrusted msgpack.
 *
 * msgpack-c's unpacker allocates a container's element array up front
 * from the size the input claims, so a 5-byte input could ask for
 * gigabytes.  wire_check() walks the raw bytes first and rejects any
 * container that claims more elements than bytes remain, and nesting
 * deeper than the caller's format uses; after it, unpacking costs at most
 * a small multiple of the input size.  Every decoder of outside msgpack
 * (snapshots, profile windows) calls it first.  The small helpers below
 * are shared by those codecs too.
 */
#ifndef FL_WIRE_H
#define FL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

/*
 * Check that buf holds one well-formed msgpack item nested at most
 * max_depth deep.  Returns 0 and its length in *end, or -1.
 */
int wire_check(const void *buf, size_t len, int max_depth, size_t *end);

/* Pack s as a msgpack string. */
void wire_pack_str(msgpack_packer *pk, const char *s);

/* 1 if k is the string name. */
int wire_key_is(const msgpack_object *k, const char *name);

/* *v = o's value if o is a non-negative integer; returns 0 or -1. */
int wire_u64(const msgpack_object *o, uint64_t *v);

#endif
