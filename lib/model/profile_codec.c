/*
 * profile_codec.c - a profile's wire form (profile.h): packing its tables
 * (frame locations once per name: "floc", "xloc") and windows, and the
 * checked decoding of both, which profile_span.c shares.  What a profile
 * is and how rows are added, merged and shown is profile.c's.
 */
#include "model/profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "model/snapshot_zstd.h"
#include "model/profile_internal.h"
#include "model/wire.h"

int profile_tables_fields(const struct profile *p)
{
	return p->nmaps ? 6 : 2;
}

/*
 * Whether a frame named by its location `by_name` (what "floc" says of the
 * name) may stand for the location `at`: the same mapping and kind, and for
 * a frame named "module+0xoffset" the same address.  A symbol's frame sits
 * at another address in every stack it is in (a return address inside the
 * function); any of them names the function.
 */
static int loc_stands_for(const struct profile_loc *by_name, const struct profile_loc *at)
{
	if (by_name->map != at->map)
		return 0;
	return !at->map || (by_name->named == at->named && (at->named || by_name->addr == at->addr));
}

/* Location k of stack st as p holds it: zero when not known. */
static struct profile_loc stack_loc(const struct profile *p, uint32_t st, uint32_t k)
{
	static const struct profile_loc none;

	return st < p->cap_locs && p->locs[st] ? p->locs[st][k] : none;
}

/*
 * The address in a frame name "module+0xOFFSET" (the symbolizer's name for
 * a frame in no symbol) into *addr: 0, or -1 when the name does not end so.
 */
static int name_offset(const char *name, uint64_t *addr)
{
	const char *plus = strrchr(name, '+');
	uint64_t v = 0;
	size_t n;

	if (!plus || strncmp(plus, "+0x", 3))
		return -1;
	plus += 3;
	n = strspn(plus, "0123456789abcdefABCDEF");
	if (!n || n > 16 || plus[n])
		return -1;
	for (size_t i = 0; i < n; i++) {
		int c = plus[i];

		v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	*addr = v;
	return 0;
}

struct name_loc {
	uint64_t addr;
	uint32_t name, map, named;
};

static int name_loc_cmp(const void *a, const void *b)
{
	const struct name_loc *x = a, *y = b;

	if (x->map != y->map)
		return x->map < y->map ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/*
 * "floc": the location of each name in by_name (zero: none) as four
 * columns, sorted by mapping and address so that an address is written as
 * the step from the one before it in the same mapping, and not at all
 * (nil) when the name says it ("libz.so.1+0x3f10", not a symbol).
 */
static void pack_flocs(msgpack_packer *pk, const struct profile *p,
		       const struct profile_loc *by_name)
{
	struct name_loc *e = NULL;
	uint32_t n = 0;

	for (uint32_t s = 0; by_name && s < p->nstrings; s++)
		n += by_name[s].map != 0;
	if (n && !(e = malloc(n * sizeof(*e))))
		n = 0;
	for (uint32_t s = 0, i = 0; i < n; s++) {
		if (by_name[s].map)
			e[i++] = (struct name_loc){ .addr = by_name[s].addr, .name = s,
						    .map = by_name[s].map,
						    .named = by_name[s].named };
	}
	qsort(e, n, sizeof(*e), name_loc_cmp);
	wire_pack_str(pk, "floc");
	msgpack_pack_array(pk, 4);
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++)
		msgpack_pack_uint32(pk, e[i].name);
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++)
		msgpack_pack_uint32(pk, e[i].map);
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++)
		msgpack_pack_uint32(pk, e[i].named);
	msgpack_pack_array(pk, n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t said;

		if (!e[i].named && !name_offset(p->strings[e[i].name], &said) &&
		    said == e[i].addr)
			msgpack_pack_nil(pk);
		else
			msgpack_pack_uint64(pk, e[i].addr -
				(i && e[i - 1].map == e[i].map ? e[i - 1].addr : 0));
	}
	free(e);
}

/* Whether a frame's address is the offset its name ends with (not written, then). */
static int addr_in_name(const struct profile *p, uint32_t name, const struct profile_loc *l)
{
	uint64_t said;

	return !l->named && !name_offset(p->strings[name], &said) && said == l->addr;
}

/*
 * "xloc": the frames not where "floc" puts their names (by_name), as five
 * columns: stack (the step from the one before), frame, map (0: no
 * location), named, address (nil: the name's offset).  n of them.
 */
static void pack_xlocs(msgpack_packer *pk, const struct profile *p,
		       const struct profile_loc *by_name, uint32_t n)
{
	wire_pack_str(pk, "xloc");
	msgpack_pack_array(pk, 5);
	for (int col = 0; col < 5; col++) {
		uint32_t prev = 0;

		msgpack_pack_array(pk, n);
		for (uint32_t i = 0; n && i < p->nstacks; i++) {
			for (uint32_t k = 0; k < p->stacks[i][0]; k++) {
				struct profile_loc l = stack_loc(p, i, k);
				uint32_t name = p->stacks[i][1 + k];

				if (loc_stands_for(&by_name[name], &l))
					continue;
				if (col == 0)
					msgpack_pack_uint32(pk, i - prev);
				else if (col == 1)
					msgpack_pack_uint32(pk, k);
				else if (col == 2)
					msgpack_pack_uint32(pk, l.map);
				else if (col == 3)
					msgpack_pack_uint32(pk, l.named);
				else if (addr_in_name(p, name, &l))
					msgpack_pack_nil(pk);
				else
					msgpack_pack_uint64(pk, l.addr);
				prev = i;
			}
		}
	}
}

/*
 * "floc", "xloc" and "loc": a location for each frame name (by_name, one
 * per string, zero where no stack has one), the frames that are not where
 * their name's is, and for readers before "floc" one "loc" per stack, []
 * (they read no location; the map and loc keys must be there for them to
 * read the window at all).  Out of memory: "floc" and "xloc" empty and
 * every stack's locations in its "loc", as version 1 wrote them.
 *
 * A name's location is the one most of its frames agree with (a majority
 * vote, one pass: "_start" and "main" are in every program, and the binary
 * most of a name's frames are in is the one worth not writing again).
 */
static void pack_locations(msgpack_packer *pk, const struct profile *p)
{
	struct profile_loc *by_name = calloc(p->nstrings, sizeof(*by_name));
	uint32_t *votes = calloc(p->nstrings, sizeof(*votes)), nx = 0;

	if (!votes) {
		free(by_name);
		by_name = NULL;
	}
	for (uint32_t i = 0; by_name && i < p->nstacks; i++) {
		for (uint32_t k = 0; k < p->stacks[i][0]; k++) {
			struct profile_loc l = stack_loc(p, i, k);
			uint32_t name = p->stacks[i][1 + k];

			if (!l.map)
				continue;
			if (!votes[name])
				by_name[name] = l;
			if (!votes[name] || loc_stands_for(&by_name[name], &l))
				votes[name]++;
			else
				votes[name]--;
		}
	}
	for (uint32_t i = 0; by_name && i < p->nstacks; i++) {
		for (uint32_t k = 0; k < p->stacks[i][0]; k++) {
			struct profile_loc l = stack_loc(p, i, k);

			nx += !loc_stands_for(&by_name[p->stacks[i][1 + k]], &l);
		}
	}
	pack_flocs(pk, p, by_name);
	pack_xlocs(pk, p, by_name, nx);
	wire_pack_str(pk, "loc");
	msgpack_pack_array(pk, p->nstacks);
	for (uint32_t i = 0; i < p->nstacks; i++) {
		uint32_t n = by_name ? 0 : p->stacks[i][0];

		msgpack_pack_array(pk, 3 * n);
		for (uint32_t k = 0; k < n; k++) {
			struct profile_loc l = stack_loc(p, i, k);

			msgpack_pack_uint32(pk, l.map);
			msgpack_pack_uint64(pk, l.addr);
			msgpack_pack_uint32(pk, l.named);
		}
	}
	free(by_name);
	free(votes);
}

void profile_pack_tables(msgpack_packer *pk, const struct profile *p)
{
	wire_pack_str(pk, "str");
	msgpack_pack_array(pk, p->nstrings);
	for (uint32_t i = 0; i < p->nstrings; i++)
		wire_pack_str(pk, p->strings[i]);
	wire_pack_str(pk, "stk");
	msgpack_pack_array(pk, p->nstacks);
	for (uint32_t i = 0; i < p->nstacks; i++) {
		msgpack_pack_array(pk, p->stacks[i][0]);
		for (uint32_t k = 0; k < p->stacks[i][0]; k++)
			msgpack_pack_uint32(pk, p->stacks[i][1 + k]);
	}
	if (p->nmaps) {
		wire_pack_str(pk, "map");
		msgpack_pack_array(pk, p->nmaps);
		for (uint32_t i = 0; i < p->nmaps; i++) {
			msgpack_pack_array(pk, 2);
			msgpack_pack_uint32(pk, p->maps[i].file);
			msgpack_pack_uint32(pk, p->maps[i].build_id);
		}
		pack_locations(pk, p);
	}
}

int profile_encode(const struct profile *p, char **out, size_t *outlen)
{
	return profile_encode_level(p, PROFILE_LEVEL_WINDOW, out, outlen);
}

int profile_encode_level(const struct profile *p, int level, char **out, size_t *outlen)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	int any_cgroup = 0;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	for (uint32_t i = 0; i < p->nrows && !any_cgroup; i++)
		any_cgroup = p->rows[i].cgroup != 0;
	msgpack_pack_map(&pk, 6 + profile_tables_fields(p) + any_cgroup);
	wire_pack_str(&pk, "v");
	msgpack_pack_uint32(&pk, PROFILE_VERSION);
	wire_pack_str(&pk, "host");
	wire_pack_str(&pk, p->host);
	wire_pack_str(&pk, "ts");
	msgpack_pack_uint64(&pk, p->ts_ms);
	wire_pack_str(&pk, "dur");
	msgpack_pack_uint64(&pk, p->duration_ms);
	wire_pack_str(&pk, "hz");
	msgpack_pack_uint32(&pk, p->rate_hz);
	profile_pack_tables(&pk, p);
	wire_pack_str(&pk, "rows");
	msgpack_pack_array(&pk, p->nrows);
	for (uint32_t i = 0; i < p->nrows; i++) {
		msgpack_pack_array(&pk, 5);
		msgpack_pack_uint32(&pk, p->rows[i].service);
		msgpack_pack_uint32(&pk, p->rows[i].comm);
		msgpack_pack_uint32(&pk, p->rows[i].pid);
		msgpack_pack_uint32(&pk, p->rows[i].stack);
		msgpack_pack_uint64(&pk, p->rows[i].count);
	}
	if (any_cgroup) {
		wire_pack_str(&pk, "cg");
		msgpack_pack_array(&pk, p->nrows);
		for (uint32_t i = 0; i < p->nrows; i++)
			msgpack_pack_uint32(&pk, p->rows[i].cgroup);
	}
	if (!sb.data) {
		msgpack_sbuffer_destroy(&sb);
		return -ENOMEM;
	}
	if (level > 0) {
		void *z;
		size_t zlen;
		int ret = snapshot_zstd_pack_level(sb.data, sb.size, level, &z, &zlen);

		if (ret == 0) {
			msgpack_sbuffer_destroy(&sb);
			*out = z;
			*outlen = zlen;
			return 0;
		}
		if (ret != -EAGAIN) {
			msgpack_sbuffer_destroy(&sb);
			return ret;
		}
	}
	*out = sb.data;
	*outlen = sb.size;
	return 0;
}

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

int profile_unpack_map(const void *buf, size_t len, int depth, const char *what,
		       msgpack_unpacked *msg, void **plain, char *err, size_t errlen)
{
	char why[200];
	size_t off = 0, plen;
	int ret;

	*plain = NULL;
	if (snapshot_zstd_is_frame(buf, len)) {
		ret = snapshot_zstd_unpack(buf, len, PROFILE_MAX_BYTES, plain, &plen, why,
					   sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: %s", what, why);
			return ret;
		}
		if (snapshot_zstd_is_frame(*plain, plen))
			FAIL("%s: a zstd frame inside a zstd frame", what);
		buf = *plain;
		len = plen;
	}
	if (len == 0 || len > PROFILE_MAX_BYTES)
		FAIL("%s: %zu bytes (empty, or over 64 MiB)", what, len);
	if (wire_check(buf, len, depth, &off) || off != len)
		FAIL("%s: not well-formed msgpack (truncated, or a container larger than the input)",
		     what);
	off = 0;
	if (msgpack_unpack_next(msg, buf, len, &off) != MSGPACK_UNPACK_SUCCESS || off != len)
		FAIL("%s: not well-formed msgpack", what);
	if (msg->data.type != MSGPACK_OBJECT_MAP)
		FAIL("%s: top level must be a map", what);
	return 0;
fail:
	free(*plain);
	*plain = NULL;
	return -EINVAL;
}

void profile_set_host(struct profile *p, const msgpack_object *val)
{
	snprintf(p->host, sizeof(p->host), "%.*s",
		 (int)(val->via.str.size < sizeof(p->host) - 1 ? val->via.str.size :
		       sizeof(p->host) - 1), val->via.str.ptr);
}

/*
 * o as n columns into col[0..n): 0, -1 when it is not an array of n, -2
 * when they are not all arrays of one length.
 */
static int wire_columns(const msgpack_object *o, int n, const msgpack_object **col)
{
	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != (uint32_t)n)
		return -1;
	for (int c = 0; c < n; c++) {
		col[c] = &o->via.array.ptr[c];
		if (col[c]->type != MSGPACK_OBJECT_ARRAY ||
		    col[c]->via.array.size != col[0]->via.array.size)
			return -2;
	}
	return 0;
}

/*
 * "floc" (four columns: name, map, named, address as pack_flocs writes
 * them) as a location per string of p, zero where none; NULL with err set
 * when it is not that.  Columns of different lengths, an index past its
 * table, a name twice or a nil address whose name holds none are errors;
 * the order is not checked (any order reads as the steps say).
 */
static struct profile_loc *decode_flocs(const struct profile *p, const msgpack_object *flocs,
					const char *what, char *err, size_t errlen)
{
	struct profile_loc *by_name = NULL;
	const msgpack_object *col[4];
	uint64_t prev_addr = 0;
	uint32_t n, prev_map = 0;

	switch (wire_columns(flocs, 4, col)) {
	case -1:
		FAIL("%s: 'floc' must be 4 columns: name, map, named, address", what);
	case -2:
		FAIL("%s: 'floc' must be 4 columns of one length", what);
	}
	n = col[0]->via.array.size;
	by_name = calloc(p->nstrings, sizeof(*by_name));
	if (!by_name)
		FAIL("%s: out of memory", what);
	for (uint32_t i = 0; i < n; i++) {
		const msgpack_object *a = &col[3]->via.array.ptr[i];
		uint64_t name, map, named, addr;

		if (wire_u64(&col[0]->via.array.ptr[i], &name) || name >= p->nstrings ||
		    wire_u64(&col[1]->via.array.ptr[i], &map) || !map || map > p->nmaps ||
		    wire_u64(&col[2]->via.array.ptr[i], &named) || named > 1)
			FAIL("%s: frame location %u is not [name, map, named, address]", what, i);
		if (by_name[name].map)
			FAIL("%s: frame location %u names string %u again", what, i,
			     (uint32_t)name);
		if (a->type == MSGPACK_OBJECT_NIL) {
			if (name_offset(p->strings[name], &addr))
				FAIL("%s: frame location %u: no address, and its name has no "
				     "+0x offset", what, i);
		} else if (!wire_u64(a, &addr)) {
			addr += map == prev_map ? prev_addr : 0;
		} else {
			FAIL("%s: frame location %u's address is not a number", what, i);
		}
		by_name[name] = (struct profile_loc){ .map = (uint32_t)map,
						      .named = (uint32_t)named, .addr = addr };
		prev_map = (uint32_t)map;
		prev_addr = addr;
	}
	return by_name;
fail:
	free(by_name);
	return NULL;
}

/*
 * "xloc" (five columns: stack step, frame, map, named, address, as
 * pack_xlocs writes them) over the locations p has: each frame it names
 * takes its location (map 0: none).  0, or -1 with err set.
 */
static int decode_xlocs(struct profile *p, const msgpack_object *xlocs, const char *what,
			char *err, size_t errlen)
{
	static const struct profile_loc none[PROFILE_MAX_DEPTH];
	const msgpack_object *col[5];
	uint64_t stack = 0;

	switch (wire_columns(xlocs, 5, col)) {
	case -1:
		FAIL("%s: 'xloc' must be 5 columns: stack, frame, map, named, address", what);
	case -2:
		FAIL("%s: 'xloc' must be 5 columns of one length", what);
	}
	for (uint32_t i = 0; i < col[0]->via.array.size; i++) {
		const msgpack_object *a = &col[4]->via.array.ptr[i];
		uint64_t step, frame, map, named, addr = 0;
		uint32_t name;

		if (wire_u64(&col[0]->via.array.ptr[i], &step) || step >= p->nstacks - stack ||
		    wire_u64(&col[1]->via.array.ptr[i], &frame) ||
		    frame >= p->stacks[stack + step][0] ||
		    wire_u64(&col[2]->via.array.ptr[i], &map) || map > p->nmaps ||
		    wire_u64(&col[3]->via.array.ptr[i], &named) || named > 1)
			FAIL("%s: frame exception %u is not [stack, frame, map, named, address]",
			     what, i);
		stack += step;
		name = p->stacks[stack][1 + frame];
		if (a->type == MSGPACK_OBJECT_NIL) {
			if (name_offset(p->strings[name], &addr))
				FAIL("%s: frame exception %u: no address, and its name has no "
				     "+0x offset", what, i);
		} else if (wire_u64(a, &addr)) {
			FAIL("%s: frame exception %u's address is not a number", what, i);
		}
		/* a stack no name put anywhere gets its locations here */
		if (profile_set_locs(p, (uint32_t)stack, none, p->stacks[stack][0]))
			FAIL("%s: out of memory", what);
		p->locs[stack][frame] = (struct profile_loc){ .map = (uint32_t)map,
							      .named = (uint32_t)named,
							      .addr = addr };
	}
	return 0;
fail:
	return -1;
}

/* Stack st's locations from its frames' names, when any name has one. */
static int locs_by_name(struct profile *p, uint32_t st, const struct profile_loc *by_name)
{
	struct profile_loc loc[PROFILE_MAX_DEPTH];
	uint32_t n = p->stacks[st][0], any = 0;

	for (uint32_t k = 0; k < n; k++) {
		loc[k] = by_name[p->stacks[st][1 + k]];
		any |= loc[k].map;
	}
	return any ? profile_set_locs(p, st, loc, n) : 0;
}

int profile_wire_table_key(struct profile_wire_tables *t, const msgpack_object *k,
			   const msgpack_object *val)
{
	static const char *const keys[] = { "str", "stk", "map", "loc", "floc", "xloc" };
	const msgpack_object **slot[] = { &t->str, &t->stk, &t->map, &t->loc, &t->floc, &t->xloc };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (wire_key_is(k, keys[i])) {
			*slot[i] = val;
			return 1;
		}
	}
	return 0;
}

int profile_decode_tables(struct profile *p, const struct profile_wire_tables *t,
			  const char *what, char *err, size_t errlen)
{
	const msgpack_object *str = t->str, *stk = t->stk, *maps = t->map, *locs = t->loc;
	struct profile_loc *by_name = NULL;
	uint64_t v;
	char *tmp;

	if (!str || !stk || str->type != MSGPACK_OBJECT_ARRAY || stk->type != MSGPACK_OBJECT_ARRAY)
		FAIL("%s: 'str' and 'stk' must be arrays", what);
	if (str->via.array.size > PROFILE_MAX_STRINGS || str->via.array.size == 0)
		FAIL("%s: %u strings", what, str->via.array.size);
	/* string 0 is "" and already interned */
	for (uint32_t i = 1; i < str->via.array.size; i++) {
		const msgpack_object *s = &str->via.array.ptr[i];

		if (s->type != MSGPACK_OBJECT_STR || s->via.str.size > 4096 ||
		    memchr(s->via.str.ptr, 0, s->via.str.size))
			FAIL("%s: string %u is not a string", what, i);
		tmp = strndup(s->via.str.ptr, s->via.str.size);
		if (!tmp)
			FAIL("%s: out of memory", what);
		/* duplicates in hostile input would shift indexes: reject them */
		if (profile_intern(p, tmp) != i) {
			free(tmp);
			FAIL("%s: string %u is a duplicate", what, i);
		}
		free(tmp);
	}
	for (uint32_t i = 0; i < stk->via.array.size; i++) {
		const msgpack_object *s = &stk->via.array.ptr[i];
		uint32_t idx[PROFILE_MAX_DEPTH];

		if (s->type != MSGPACK_OBJECT_ARRAY || s->via.array.size > PROFILE_MAX_DEPTH)
			FAIL("%s: stack %u is not an array of at most %d frames", what, i,
			     PROFILE_MAX_DEPTH);
		for (uint32_t k = 0; k < s->via.array.size; k++) {
			if (wire_u64(&s->via.array.ptr[k], &v) || v >= p->nstrings)
				FAIL("%s: stack %u frame %u is not a string index", what, i, k);
			idx[k] = (uint32_t)v;
		}
		if (profile_intern_stack(p, idx, s->via.array.size) != i)
			FAIL("%s: stack %u is a duplicate", what, i);
	}
	if (maps || locs || t->floc || t->xloc) {
		if (!maps || !locs || maps->type != MSGPACK_OBJECT_ARRAY ||
		    locs->type != MSGPACK_OBJECT_ARRAY || locs->via.array.size != p->nstacks)
			FAIL("%s: 'map' and 'loc' must be arrays, 'loc' one entry per stack", what);
		for (uint32_t i = 0; i < maps->via.array.size; i++) {
			const msgpack_object *m = &maps->via.array.ptr[i];
			uint64_t fi, bi;

			if (m->type != MSGPACK_OBJECT_ARRAY || m->via.array.size != 2 ||
			    wire_u64(&m->via.array.ptr[0], &fi) || wire_u64(&m->via.array.ptr[1], &bi) ||
			    fi >= p->nstrings || bi >= p->nstrings)
				FAIL("%s: mapping %u must be [file, build_id] string indexes", what, i);
			if (profile_intern_map(p, (uint32_t)fi, (uint32_t)bi) != i + 1)
				FAIL("%s: mapping %u is a duplicate", what, i);
		}
		if (t->floc && !(by_name = decode_flocs(p, t->floc, what, err, errlen)))
			goto fail;
		for (uint32_t i = 0; i < p->nstacks; i++) {
			const msgpack_object *l = &locs->via.array.ptr[i];
			struct profile_loc loc[PROFILE_MAX_DEPTH];
			uint32_t n = p->stacks[i][0];

			if (l->type != MSGPACK_OBJECT_ARRAY ||
			    (l->via.array.size && l->via.array.size != 3 * n))
				FAIL("%s: 'loc' of stack %u must hold 3 values per frame", what, i);
			if (!l->via.array.size) {
				if (by_name && locs_by_name(p, i, by_name))
					FAIL("%s: out of memory", what);
				continue;
			}
			for (uint32_t k = 0; k < n; k++) {
				uint64_t m, named;

				if (wire_u64(&l->via.array.ptr[3 * k], &m) || m > p->nmaps ||
				    wire_u64(&l->via.array.ptr[3 * k + 1], &loc[k].addr) ||
				    wire_u64(&l->via.array.ptr[3 * k + 2], &named) || named > 1)
					FAIL("%s: location %u of stack %u is not [map, addr, named]", what,
					     k, i);
				loc[k].map = (uint32_t)m;
				loc[k].named = (uint32_t)named;
			}
			if (profile_set_locs(p, i, loc, n))
				FAIL("%s: out of memory", what);
		}
		if (t->xloc && decode_xlocs(p, t->xloc, what, err, errlen))
			goto fail;
	}
	free(by_name);
	return 0;
fail:
	free(by_name);
	return -EINVAL;
}

int profile_decode(const void *buf, size_t len, struct profile *p, char *err, size_t errlen)
{
	struct profile_wire_tables t = { 0 };
	const msgpack_object *rows = NULL, *cgs = NULL;
	msgpack_unpacked msg;
	void *plain = NULL;
	uint64_t v, version = 0;
	int ret;

	/* a failed decode leaves p as profile_free does, whichever way it fails */
	if (profile_init(p, ""))
		return -ENOMEM;
	msgpack_unpacked_init(&msg);
	ret = profile_unpack_map(buf, len, 4, "profile", &msg, &plain, err, errlen);
	if (ret)
		goto out;
	for (uint32_t i = 0; i < msg.data.via.map.size; i++) {
		const msgpack_object *k = &msg.data.via.map.ptr[i].key, *val = &msg.data.via.map.ptr[i].val;

		if (wire_key_is(k, "v") && !wire_u64(val, &v))
			version = v;
		else if (wire_key_is(k, "host") && val->type == MSGPACK_OBJECT_STR)
			profile_set_host(p, val);
		else if (wire_key_is(k, "ts") && !wire_u64(val, &v))
			p->ts_ms = v;
		else if (wire_key_is(k, "dur") && !wire_u64(val, &v))
			p->duration_ms = v;
		else if (wire_key_is(k, "hz") && !wire_u64(val, &v))
			p->rate_hz = (uint32_t)v;
		else if (profile_wire_table_key(&t, k, val))
			continue;
		else if (wire_key_is(k, "rows"))
			rows = val;
		else if (wire_key_is(k, "cg"))
			cgs = val;
	}
	if (version != PROFILE_VERSION)
		FAIL("profile: version %llu, this build reads %d", (unsigned long long)version,
		     PROFILE_VERSION);
	if (!rows || rows->type != MSGPACK_OBJECT_ARRAY)
		FAIL("profile: 'rows' must be an array");
	if (profile_decode_tables(p, &t, "profile", err, errlen))
		goto fail;
	if (cgs && (cgs->type != MSGPACK_OBJECT_ARRAY || cgs->via.array.size != rows->via.array.size))
		FAIL("profile: 'cg' must be an array with a cgroup per row");
	for (uint32_t i = 0; i < rows->via.array.size; i++) {
		const msgpack_object *r = &rows->via.array.ptr[i];
		uint64_t f[5], cg = 0;

		if (r->type != MSGPACK_OBJECT_ARRAY || r->via.array.size != 5)
			FAIL("profile: row %u must be [service, comm, pid, stack, count]", i);
		for (int k = 0; k < 5; k++)
			if (wire_u64(&r->via.array.ptr[k], &f[k]))
				FAIL("profile: row %u field %d is not an unsigned integer", i, k);
		if (f[0] >= p->nstrings || f[1] >= p->nstrings || f[3] >= p->nstacks ||
		    f[2] > UINT32_MAX)
			FAIL("profile: row %u refers past the tables", i);
		if (cgs && (wire_u64(&cgs->via.array.ptr[i], &cg) || cg >= p->nstrings))
			FAIL("profile: the cgroup of row %u is not a string index", i);
		if (profile_add_row(p, &(struct profile_row){ (uint32_t)f[0], (uint32_t)f[1],
								 (uint32_t)f[2], (uint32_t)f[3], f[4],
								 (uint32_t)cg }))
			FAIL("profile: out of memory");
	}
	msgpack_unpacked_destroy(&msg);
	free(plain);
	return 0;
fail:
	ret = -EINVAL;
out:
	msgpack_unpacked_destroy(&msg);
	free(plain);
	profile_free(p);
	return ret;
}
