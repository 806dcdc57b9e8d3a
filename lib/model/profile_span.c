/*
 * profile_span.c - a span of profile windows sharing one set of tables;
 * see profile_span.h.
 */
#include "model/profile_span.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "core/array.h"
#include "model/profile_internal.h"
#include "model/snapshot_zstd.h"
#include "model/wire.h"

#define SPAN_VERSION 1
#define SPAN_ROW_FIELDS 6

void profile_span_free(struct profile_span *s)
{
	profile_free(&s->tables);
	free(s->windows);
	free(s->rows);
	memset(s, 0, sizeof(*s));
}

/* Room for one more row in s. 0 or -ENOMEM. */
static int grow_rows(struct profile_span *s)
{
	return ARRAY_GROW(s->rows, s->cap_rows, s->nrows + 1, 256);
}

void profile_span_view(const struct profile_span *s, uint32_t i, struct profile *view)
{
	const struct profile_span_window *w = &s->windows[i];

	*view = s->tables;
	view->ts_ms = w->ts_ms;
	view->duration_ms = w->duration_ms;
	view->rate_hz = w->rate_hz;
	view->rows = s->rows + w->first;
	view->nrows = w->nrows;
	view->cap_rows = w->nrows;
	view->total = w->total;
}

/* ---- encode ------------------------------------------------------------ */

int profile_span_add(struct profile_span *s, const struct profile *w)
{
	struct profile_span_window *sw;

	if (!s->tables.strings && profile_init(&s->tables, w->host))
		return -ENOMEM;
	if (strcmp(w->host, s->tables.host) || s->nwindows >= PROFILE_SPAN_MAX_WINDOWS)
		return -EINVAL;
	if (ARRAY_GROW(s->windows, s->cap_windows, s->nwindows + 1, 64))
		return -ENOMEM;
	sw = &s->windows[s->nwindows];
	memset(sw, 0, sizeof(*sw));
	sw->ts_ms = w->ts_ms;
	sw->duration_ms = w->duration_ms;
	sw->rate_hz = w->rate_hz;
	sw->first = s->nrows;
	for (uint32_t r = 0; r < w->nrows; r++) {
		if (grow_rows(s) ||
		    profile_import_row(&s->tables, w, &w->rows[r], &s->rows[s->nrows])) {
			s->nrows = sw->first;	/* the window is not added (its names may stay) */
			return -ENOMEM;
		}
		sw->total += s->rows[s->nrows++].count;
		sw->nrows++;
	}
	s->nwindows++;
	return 0;
}

static void pack(msgpack_packer *pk, const struct profile_span *s)
{
	msgpack_pack_map(pk, 3 + profile_tables_fields(&s->tables));
	wire_pack_str(pk, "v");
	msgpack_pack_uint32(pk, SPAN_VERSION);
	wire_pack_str(pk, "host");
	wire_pack_str(pk, s->tables.host);
	profile_pack_tables(pk, &s->tables);
	wire_pack_str(pk, "win");
	msgpack_pack_array(pk, s->nwindows);
	for (uint32_t k = 0; k < s->nwindows; k++) {
		const struct profile_span_window *w = &s->windows[k];

		msgpack_pack_array(pk, 4);
		msgpack_pack_uint64(pk, w->ts_ms);
		msgpack_pack_uint64(pk, w->duration_ms);
		msgpack_pack_uint32(pk, w->rate_hz);
		msgpack_pack_array(pk, SPAN_ROW_FIELDS * w->nrows);
		for (uint32_t i = w->first; i < w->first + w->nrows; i++) {
			const struct profile_row *r = &s->rows[i];

			msgpack_pack_uint32(pk, r->service);
			msgpack_pack_uint32(pk, r->comm);
			msgpack_pack_uint32(pk, r->pid);
			msgpack_pack_uint32(pk, r->stack);
			msgpack_pack_uint64(pk, r->count);
			msgpack_pack_uint32(pk, r->cgroup);
		}
	}
}

/* Whether string a of pa is string b of pb. */
static int same_str(const struct profile *pa, uint32_t a, const struct profile *pb, uint32_t b)
{
	return !strcmp(pa->strings[a], pb->strings[b]);
}

/* Whether row ra of pa and row rb of pb are the same samples of the same stack. */
static int same_row(const struct profile *pa, const struct profile_row *ra,
		    const struct profile *pb, const struct profile_row *rb)
{
	const uint32_t *sa = pa->stacks[ra->stack], *sb = pb->stacks[rb->stack];

	if (ra->pid != rb->pid || ra->count != rb->count || sa[0] != sb[0] ||
	    !same_str(pa, ra->service, pb, rb->service) || !same_str(pa, ra->comm, pb, rb->comm) ||
	    !same_str(pa, ra->cgroup, pb, rb->cgroup))
		return 0;
	for (uint32_t i = 0; i < sa[0]; i++)
		if (!same_str(pa, sa[1 + i], pb, sb[1 + i]))
			return 0;
	return 1;
}

int profile_span_window_is(const struct profile_span *s, uint32_t i, const struct profile *w)
{
	struct profile v;

	if (i >= s->nwindows || strcmp(s->tables.host, w->host))
		return 0;
	profile_span_view(s, i, &v);
	if (v.ts_ms != w->ts_ms || v.duration_ms != w->duration_ms || v.rate_hz != w->rate_hz ||
	    v.nrows != w->nrows)
		return 0;
	for (uint32_t r = 0; r < v.nrows; r++)
		if (!same_row(&v, &v.rows[r], w, &w->rows[r]))
			return 0;
	return 1;
}

int profile_span_pack(const struct profile_span *s, int level, char **out, size_t *outlen)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	void *z;
	size_t zlen;
	int ret;

	if (!s->nwindows)
		return -EINVAL;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack(&pk, s);
	if (!sb.data)
		return -ENOMEM;
	ret = snapshot_zstd_pack_level(sb.data, sb.size, level > 0 ? level : 1, &z, &zlen);
	msgpack_sbuffer_destroy(&sb);
	if (ret == -EAGAIN)	/* compression off: a span is only ever kept packed */
		return -EINVAL;
	if (ret)
		return ret;
	*out = z;
	*outlen = zlen;
	return 0;
}

int profile_span_encode(const struct profile *w, size_t n, int level, char **out,
			size_t *outlen)
{
	struct profile_span s = { 0 }, back;
	char err[200];
	int ret = n && n <= PROFILE_SPAN_MAX_WINDOWS ? 0 : -EINVAL;

	for (size_t k = 0; k < n && !ret; k++)
		ret = profile_span_add(&s, &w[k]);
	if (!ret)
		ret = profile_span_pack(&s, level, out, outlen);
	profile_span_free(&s);
	if (ret)
		return ret;
	ret = profile_span_decode(*out, *outlen, &back, err, sizeof(err));
	for (size_t k = 0; k < n && !ret; k++)
		if (!profile_span_window_is(&back, (uint32_t)k, &w[k]))
			ret = -EINVAL;
	if (!ret && back.nwindows != n)
		ret = -EINVAL;
	if (ret) {
		free(*out);
		*out = NULL;
		ret = ret == -ENOMEM ? ret : -EINVAL;
	}
	profile_span_free(&back);
	return ret;
}

/* ---- decode ------------------------------------------------------------ */

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

/* Window k (untrusted) of s's "win" into s. */
static int decode_window(struct profile_span *s, const msgpack_object *o, uint32_t k,
			 char *err, size_t errlen)
{
	struct profile_span_window *w = &s->windows[k];
	const msgpack_object *rows;
	uint64_t v[3];

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4 ||
	    wire_u64(&o->via.array.ptr[0], &v[0]) || wire_u64(&o->via.array.ptr[1], &v[1]) ||
	    wire_u64(&o->via.array.ptr[2], &v[2]) || v[2] > UINT32_MAX)
		FAIL("profile span: window %u must be [ts, dur, hz, rows]", k);
	rows = &o->via.array.ptr[3];
	if (rows->type != MSGPACK_OBJECT_ARRAY || rows->via.array.size % SPAN_ROW_FIELDS)
		FAIL("profile span: the rows of window %u must be %d values each", k,
		     SPAN_ROW_FIELDS);
	w->ts_ms = v[0];
	w->duration_ms = v[1];
	w->rate_hz = (uint32_t)v[2];
	w->first = s->nrows;
	for (uint32_t i = 0; i < rows->via.array.size; i += SPAN_ROW_FIELDS) {
		const struct profile *t = &s->tables;
		struct profile_row *r;
		uint64_t f[SPAN_ROW_FIELDS];

		for (int j = 0; j < SPAN_ROW_FIELDS; j++)
			if (wire_u64(&rows->via.array.ptr[i + j], &f[j]))
				FAIL("profile span: row %u of window %u: field %d is not an "
				     "unsigned integer", i / SPAN_ROW_FIELDS, k, j);
		if (f[0] >= t->nstrings || f[1] >= t->nstrings || f[2] > UINT32_MAX ||
		    f[3] >= t->nstacks || f[5] >= t->nstrings)
			FAIL("profile span: row %u of window %u refers past the tables",
			     i / SPAN_ROW_FIELDS, k);
		if (w->total + f[4] < w->total)
			FAIL("profile span: the counts of window %u overflow", k);
		if (grow_rows(s))
			FAIL("profile span: out of memory");
		r = &s->rows[s->nrows++];
		r->service = (uint32_t)f[0];
		r->comm = (uint32_t)f[1];
		r->pid = (uint32_t)f[2];
		r->stack = (uint32_t)f[3];
		r->count = f[4];
		r->cgroup = (uint32_t)f[5];
		w->total += f[4];
		w->nrows++;
	}
	return 0;
fail:
	return -EINVAL;
}

int profile_span_decode(const void *buf, size_t len, struct profile_span *s, char *err,
			size_t errlen)
{
	struct profile_wire_tables t = { 0 };
	const msgpack_object *win = NULL;
	msgpack_unpacked msg;
	void *plain = NULL;
	uint64_t v, version = 0;
	int ret;

	memset(s, 0, sizeof(*s));
	if (profile_init(&s->tables, ""))
		return -ENOMEM;
	msgpack_unpacked_init(&msg);
	ret = profile_unpack_map(buf, len, 5, "profile span", &msg, &plain, err, errlen);
	if (ret)
		goto out;
	for (uint32_t i = 0; i < msg.data.via.map.size; i++) {
		const msgpack_object *k = &msg.data.via.map.ptr[i].key;
		const msgpack_object *val = &msg.data.via.map.ptr[i].val;

		if (wire_key_is(k, "v") && !wire_u64(val, &v))
			version = v;
		else if (wire_key_is(k, "host") && val->type == MSGPACK_OBJECT_STR)
			profile_set_host(&s->tables, val);
		else if (profile_wire_table_key(&t, k, val))
			continue;
		else if (wire_key_is(k, "win"))
			win = val;
	}
	if (version != SPAN_VERSION)
		FAIL("profile span: version %llu, this build reads %d",
		     (unsigned long long)version, SPAN_VERSION);
	if (!win || win->type != MSGPACK_OBJECT_ARRAY || !win->via.array.size ||
	    win->via.array.size > PROFILE_SPAN_MAX_WINDOWS)
		FAIL("profile span: 'win' must be an array of 1 to %d windows",
		     PROFILE_SPAN_MAX_WINDOWS);
	if (profile_decode_tables(&s->tables, &t, "profile span", err, errlen))
		goto fail;
	s->windows = calloc(win->via.array.size, sizeof(*s->windows));
	if (!s->windows)
		FAIL("profile span: out of memory");
	s->cap_windows = win->via.array.size;
	for (uint32_t k = 0; k < win->via.array.size; k++) {
		if (decode_window(s, &win->via.array.ptr[k], k, err, errlen))
			goto fail;
		s->nwindows++;
	}
	msgpack_unpacked_destroy(&msg);
	free(plain);
	return 0;
fail:
	ret = -EINVAL;
out:
	msgpack_unpacked_destroy(&msg);
	free(plain);
	profile_span_free(s);
	return ret;
}
