/*
 * profile_internal.h - what profile.c lends the codecs of profiles
 * (profile_codec.c, profile_span.c) and nobody else: the tables' interning, packing and
 * checked decoding, and a row carried from one profile's tables to
 * another's.
 */
#ifndef FL_PROFILE_INTERNAL_H
#define FL_PROFILE_INTERNAL_H

#include <msgpack.h>

#include "model/profile.h"

#define PROFILE_MAX_STRINGS 1000000
/* the largest window a reader takes, packed or not */
#define PROFILE_MAX_BYTES (64u << 20)
#define PROFILE_MAX_DEPTH 512

/* 1 + the index of mapping (file, build_id) in p, added if new; 0 on -ENOMEM. */
uint32_t profile_intern_map(struct profile *p, uint32_t file, uint32_t build_id);

/* Stack st's locations (n frames) from loc, unless it has them already.  0 or -ENOMEM. */
int profile_set_locs(struct profile *p, uint32_t st, const struct profile_loc *loc, uint32_t n);

/* Index of the stack of string indexes idx[0..n), added if new; UINT32_MAX on -ENOMEM. */
uint32_t profile_intern_stack(struct profile *p, const uint32_t *idx, uint32_t n);

/* Add row r (indexes into p's tables), merged with an equal one. 0 or -ENOMEM. */
int profile_add_row(struct profile *p, const struct profile_row *r);

/*
 * Row `row` of src with its names, stack and the stack's locations
 * interned in dst (a stack dst knows keeps the locations it has: the first
 * seen, as a merge keeps), into *out (count and pid as they were).
 * Nothing is added to dst's rows.  0 or -ENOMEM.
 */
int profile_import_row(struct profile *dst, const struct profile *src,
		       const struct profile_row *row, struct profile_row *out);

/* How many map fields profile_pack_tables packs. */
int profile_tables_fields(const struct profile *p);

/*
 * "str", "stk" and, when p has mappings, "map", "floc", "xloc" and "loc":
 * keys and values (profile.h's wire form).
 */
void profile_pack_tables(msgpack_packer *pk, const struct profile *p);

/* The table keys of a packed profile or span, as found (NULL: absent). */
struct profile_wire_tables {
	const msgpack_object *str, *stk, *map, *loc, *floc, *xloc;
};

/* Whether key k (value val) is a table key: then kept in t. */
int profile_wire_table_key(struct profile_wire_tables *t, const msgpack_object *k,
			   const msgpack_object *val);

/*
 * The tables of a packed profile (str and stk required; map and loc both
 * or neither, floc and xloc only with them) into p (profile_init'd,
 * nothing but "" interned), every index bounded.  0, or -EINVAL with
 * "WHAT: why" in err (p then holds what was read: the caller frees it).
 */
int profile_decode_tables(struct profile *p, const struct profile_wire_tables *t,
			  const char *what, char *err, size_t errlen);

/*
 * The msgpack map at the top of buf[0..len) (untrusted: a zstd frame of it
 * or the msgpack itself, at most 64 MiB either way, containers nested at
 * most depth deep) into *msg (msgpack_unpacked_init'd and destroyed by the
 * caller).  *plain holds the bytes msg points into when buf was a frame
 * (free it after msg; NULL otherwise).  Returns 0, or -EINVAL / -E2BIG /
 * -ENOMEM with "WHAT: why" in err.
 */
int profile_unpack_map(const void *buf, size_t len, int depth, const char *what,
		       msgpack_unpacked *msg, void **plain, char *err, size_t errlen);

/* p's host from a msgpack string (cut to fit). */
void profile_set_host(struct profile *p, const msgpack_object *val);

#endif
