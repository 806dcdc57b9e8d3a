/*
 * snapshot_decode.c - the snapshot decoder; see snapshot.h.
 *
 * Decoding is two passes.  wire_check() (lib/model/wire.h) walks the raw bytes
 * first and rejects any container that claims more elements than bytes
 * remain, and nesting deeper than the format uses.  After it, msgpack-c builds
 * the object tree (at most a small multiple of the input size) and
 * decode_*() check every type and bound while copying into the model.
 * Decoding like a previous snapshot (snapshot_decode_like) reuses that
 * snapshot's strings for every series it repeats.
 */
#include "model/snapshot.h"
#include "model/snapshot_internal.h"
#include "model/snapshot_zstd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "model/wire.h"
#include "model/labels.h"

#define WIRE_MAX_DEPTH 8	/* the format nests 6 deep */

/* ---- decode ------------------------------------------------------------- */

#define FAIL(code, ...)                                   \
	do {                                              \
		snprintf(err, errlen, __VA_ARGS__);       \
		return (code);                            \
	} while (0)

static int get_f64(const msgpack_object *o, double *v)
{
	if (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32)
		*v = o->via.f64;
	else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		*v = (double)o->via.u64;
	else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		*v = (double)o->via.i64;
	else
		return -1;
	return 0;
}

/* Copy a msgpack string into a new C string, rejecting NULs and size. */
static char *get_str(const msgpack_object *o)
{
	char *s;

	if (o->type != MSGPACK_OBJECT_STR || o->via.str.size > SNAPSHOT_MAX_STR)
		return NULL;
	if (memchr(o->via.str.ptr, '\0', o->via.str.size))
		return NULL;
	s = malloc(o->via.str.size + 1);
	if (!s)
		return NULL;
	memcpy(s, o->via.str.ptr, o->via.str.size);
	s[o->via.str.size] = '\0';
	return s;
}

static int decode_labels(const msgpack_object *o, struct label **out, uint32_t *nout,
			 const char *what, char *err, size_t errlen)
{
	struct label *l;
	uint32_t n;

	if (o->type != MSGPACK_OBJECT_MAP)
		FAIL(-EINVAL, "%s: labels must be a map", what);
	n = o->via.map.size;
	if (n > SNAPSHOT_MAX_LABELS)
		FAIL(-E2BIG, "%s: %u labels, at most %d allowed", what, n, SNAPSHOT_MAX_LABELS);
	*out = NULL;
	*nout = 0;
	if (!n)
		return 0;
	l = calloc(n, sizeof(*l));
	if (!l)
		FAIL(-ENOMEM, "%s: out of memory", what);
	for (uint32_t i = 0; i < n; i++) {
		l[i].key = get_str(&o->via.map.ptr[i].key);
		l[i].value = get_str(&o->via.map.ptr[i].val);
		if (!l[i].key || !l[i].value || !l[i].key[0]) {
			snapshot_labels_free(l, n);
			FAIL(-EINVAL, "%s: label %u is not a non-empty string key with a string value",
			     what, i);
		}
	}
	qsort(l, n, sizeof(*l), label_key_cmp);
	for (uint32_t i = 1; i < n; i++) {
		if (strcmp(l[i - 1].key, l[i].key) == 0) {
			snprintf(err, errlen, "%s: duplicate label '%s'", what, l[i].key);
			snapshot_labels_free(l, n);
			return -EINVAL;
		}
	}
	*out = l;
	*nout = n;
	return 0;
}

static int decode_hist(const msgpack_object *o, struct histogram *h, const char *what,
		       char *err, size_t errlen)
{
	const msgpack_object *runs;
	uint64_t total = 0, idx = 0, gap, cnt;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
		FAIL(-EINVAL, "%s: histogram must be [count, sum, runs]", what);
	if (wire_u64(&o->via.array.ptr[0], &h->count) || wire_u64(&o->via.array.ptr[1], &h->sum))
		FAIL(-EINVAL, "%s: histogram count and sum must be unsigned integers", what);
	runs = &o->via.array.ptr[2];
	if (runs->type != MSGPACK_OBJECT_ARRAY || runs->via.array.size % 2)
		FAIL(-EINVAL, "%s: histogram runs must be an array of (gap, count) pairs", what);
	if (runs->via.array.size / 2 > HIST_BUCKETS)
		FAIL(-E2BIG, "%s: more runs than buckets", what);
	for (uint32_t i = 0; i < runs->via.array.size; i += 2) {
		if (wire_u64(&runs->via.array.ptr[i], &gap) ||
		    wire_u64(&runs->via.array.ptr[i + 1], &cnt))
			FAIL(-EINVAL, "%s: histogram run %u is not two unsigned integers", what, i / 2);
		if (gap >= HIST_BUCKETS || idx + gap >= HIST_BUCKETS)
			FAIL(-EINVAL, "%s: histogram bucket index beyond %u", what, HIST_BUCKETS - 1);
		idx += gap;
		if (cnt == 0)
			FAIL(-EINVAL, "%s: histogram run %u has count 0", what, i / 2);
		h->buckets[idx] = cnt;
		if (total + cnt < total)
			FAIL(-EINVAL, "%s: histogram counts overflow", what);
		total += cnt;
		idx++;
	}
	if (total != h->count)
		FAIL(-EINVAL, "%s: histogram count %llu does not match its buckets (%llu)", what,
		     (unsigned long long)h->count, (unsigned long long)total);
	return 0;
}

/*
 * The same wire histogram straight into its compact form (no dense
 * histogram on the way): for readers that keep histograms compact.
 */
static int decode_hist_sparse(const msgpack_object *o, struct hist_sparse **out,
			      const char *what, char *err, size_t errlen)
{
	const msgpack_object *runs;
	struct hist_sparse *h;
	uint64_t total = 0, idx = 0, gap, cnt;

	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 3)
		FAIL(-EINVAL, "%s: histogram must be [count, sum, runs]", what);
	runs = &o->via.array.ptr[2];
	if (runs->type != MSGPACK_OBJECT_ARRAY || runs->via.array.size % 2)
		FAIL(-EINVAL, "%s: histogram runs must be an array of (gap, count) pairs", what);
	if (runs->via.array.size / 2 > HIST_BUCKETS)
		FAIL(-E2BIG, "%s: more runs than buckets", what);
	h = malloc(sizeof(*h) + runs->via.array.size / 2 * sizeof(h->runs[0]));
	if (!h)
		FAIL(-ENOMEM, "%s: out of memory", what);
	h->nruns = 0;
	if (wire_u64(&o->via.array.ptr[0], &h->count) || wire_u64(&o->via.array.ptr[1], &h->sum)) {
		free(h);
		FAIL(-EINVAL, "%s: histogram count and sum must be unsigned integers", what);
	}
	for (uint32_t i = 0; i < runs->via.array.size; i += 2) {
		const char *why = NULL;

		if (wire_u64(&runs->via.array.ptr[i], &gap) ||
		    wire_u64(&runs->via.array.ptr[i + 1], &cnt))
			why = "is not two unsigned integers";
		else if (gap >= HIST_BUCKETS || idx + gap >= HIST_BUCKETS)
			why = "reaches beyond the last bucket";
		else if (cnt == 0)
			why = "has count 0";
		else if (total + cnt < total)
			why = "overflows the counts";
		if (why) {
			free(h);
			FAIL(-EINVAL, "%s: histogram run %u %s", what, i / 2, why);
		}
		idx += gap;
		h->runs[h->nruns].index = (uint32_t)idx;
		h->runs[h->nruns++].count = cnt;
		total += cnt;
		idx++;
	}
	if (total != h->count) {
		uint64_t c = h->count;

		free(h);
		FAIL(-EINVAL, "%s: histogram count %llu does not match its buckets (%llu)", what,
		     (unsigned long long)c, (unsigned long long)total);
	}
	*out = h;
	return 0;
}

/* "series[I]" into what (room for 24): on every series, so not snprintf. */
static void series_what(char *what, uint32_t i)
{
	char digits[12];
	int n = 0, k = 0;

	do
		digits[n++] = (char)('0' + i % 10);
	while ((i /= 10));
	memcpy(what, "series[", 7);
	k = 7;
	while (n)
		what[k++] = digits[--n];
	what[k++] = ']';
	what[k] = '\0';
}

/* Whether msgpack string o is the C string c, byte for byte (one pass: they are short). */
static int wire_str_is(const msgpack_object *o, const char *c)
{
	const char *p = o->via.str.ptr;
	uint32_t n = o->via.str.size, i;

	if (o->type != MSGPACK_OBJECT_STR)
		return 0;
	for (i = 0; i < n; i++)
		if (c[i] != p[i] || !c[i])
			return 0;
	return c[n] == '\0';
}

/*
 * Whether wire series a ([name, labels, kind, value], checked to be an
 * array of 4) has p's name and p's labels, in p's (sorted) order, as
 * encoders write them.  p owns its strings (a borrowed one may go away).
 */
static int wire_same_series(const msgpack_object *a, const struct series *p)
{
	const msgpack_object *m = &a[1];

	if (p->borrowed || m->type != MSGPACK_OBJECT_MAP || m->via.map.size != p->nlabels ||
	    !wire_str_is(&a[0], p->name))
		return 0;
	for (uint32_t i = 0; i < p->nlabels; i++)
		if (!wire_str_is(&m->via.map.ptr[i].key, p->labels[i].key) ||
		    !wire_str_is(&m->via.map.ptr[i].val, p->labels[i].value))
			return 0;
	return 1;
}

/*
 * The series of like that wire series o (the i-th) repeats, or NULL: like's
 * series as far from i as the last match was (*shift: a series added or
 * gone shifts every later one), else one nearer or farther, else the i-th.
 */
static const struct series *like_series(const struct snapshot *like, const msgpack_object *o,
					uint32_t i, long *shift)
{
	long at[4] = { (long)i + *shift, (long)i + *shift - 1, (long)i + *shift + 1, (long)i };

	if (!like || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4)
		return NULL;
	for (int k = 0; k < 4; k++) {
		if (at[k] < 0 || at[k] >= (long)like->nseries || (k == 3 && at[3] == at[0]) ||
		    !wire_same_series(o->via.array.ptr, &like->series[at[k]]))
			continue;
		*shift = at[k] - (long)i;
		return &like->series[at[k]];
	}
	return NULL;
}

/*
 * The series of base a nil value of ser (series i) stands for, into *b:
 * the same series and kind.  -EINVAL when the entry is not a delta (no
 * base), -ENOLINK when its base lacks the series.
 */
static int base_series(const struct snapshot *base, const struct series *ser, uint32_t i,
		       const struct series **b, const char *what, char *err, size_t errlen)
{
	if (!base)
		FAIL(-EINVAL, "%s (%s): nil (the base's value) in an entry that is not a delta",
		     what, ser->name);
	*b = snapshot_base_series(base, ser, i);
	if (!*b)
		FAIL(-ENOLINK, "%s (%s): a delta on a base entry that lacks the series", what,
		     ser->name);
	return 0;
}

/* A gauge's [last, n] or [last, n, sum]: one value all window (last nil: the base's). */
static int decode_constant_gauge(const msgpack_object *v, struct series *ser,
				 const struct snapshot *base, uint32_t i, const char *what,
				 char *err, size_t errlen)
{
	const msgpack_object *a = v->via.array.ptr;
	struct gauge_value *g = &ser->gauge;

	if (a[0].type == MSGPACK_OBJECT_NIL) {
		const struct series *b;
		int ret = base_series(base, ser, i, &b, what, err, errlen);

		if (ret)
			return ret;
		g->last = b->gauge.last;
	} else if (get_f64(&a[0], &g->last)) {
		goto bad;
	}
	if (wire_u64(&a[1], &g->n))
		goto bad;
	g->min = g->max = g->last;
	g->sum = g->last * (double)g->n;
	if (v->via.array.size == 3 && get_f64(&a[2], &g->sum))
		goto bad;
	return 0;
bad:
	FAIL(-EINVAL, "%s (%s): a constant gauge must be [last, n] or [last, n, sum] (last a "
	     "number, or nil in a delta)", what, ser->name);
}

static int decode_series(const msgpack_object *o, struct snapshot *s, uint32_t i, int compact,
			 const struct snapshot *like, const struct snapshot *base, long *shift,
			 char *err, size_t errlen)
{
	const struct series *same = like_series(like, o, i, shift);
	const msgpack_object *a, *v;
	struct label *labels = NULL;
	struct series *ser;
	uint32_t nlabels = 0;
	char what[64];
	uint64_t kind;
	char *name;
	int ret;

	series_what(what, i);
	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4)
		FAIL(-EINVAL, "%s: must be [name, labels, kind, value]", what);
	a = o->via.array.ptr;
	if (same) {
		name = same->name;
		labels = same->labels;
		nlabels = same->nlabels;
	} else {
		name = get_str(&a[0]);
		if (!name || !name[0]) {
			free(name);
			FAIL(-EINVAL, "%s: name must be a non-empty string", what);
		}
		ret = decode_labels(&a[1], &labels, &nlabels, what, err, errlen);
		if (ret) {
			free(name);
			return ret;
		}
	}
	if (wire_u64(&a[2], &kind) || kind > SERIES_HISTOGRAM) {
		if (!same) {
			free(name);
			snapshot_labels_free(labels, nlabels);
		}
		FAIL(-EINVAL, "%s (%.*s): kind must be 0, 1 or 2", what,
		     (int)(a[0].via.str.size < 64 ? a[0].via.str.size : 64), a[0].via.str.ptr);
	}
	/*
	 * The decoded strings are the series' own (no copies); compact: no
	 * dense histogram allocated only to be compacted (kind set below).
	 */
	ser = snapshot_add_series(s, name, compact && kind == SERIES_HISTOGRAM ? SERIES_COUNTER :
				  (enum series_kind)kind, labels, nlabels, same,
				  same ? (uint32_t)(same - like->series) : 0);
	if (!ser)
		FAIL(-ENOMEM, "%s: out of memory, or a name or label key that is not valid", what);
	if (compact && kind == SERIES_HISTOGRAM) {
		ser->kind = SERIES_HISTOGRAM;
		ser->hist = NULL;
		return decode_hist_sparse(&a[3], &ser->sparse, what, err, errlen);
	}
	v = &a[3];
	switch (ser->kind) {
	case SERIES_COUNTER:
		if (wire_u64(v, &ser->counter.value) == 0)
			return 0;
		if (v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 2 &&
		    v->via.array.ptr[0].type == MSGPACK_OBJECT_NIL &&
		    !wire_u64(&v->via.array.ptr[1], &ser->counter.increase)) {
			const struct series *b;

			ret = base_series(base, ser, i, &b, what, err, errlen);
			if (ret)
				return ret;
			ser->counter.value = b->counter.value + ser->counter.increase;
			if (ser->counter.value < b->counter.value)
				FAIL(-EINVAL, "%s (%s): the base's value + increase overflows",
				     what, ser->name);
			return 0;
		}
		if (v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 2 &&
		    !wire_u64(&v->via.array.ptr[0], &ser->counter.value) &&
		    !wire_u64(&v->via.array.ptr[1], &ser->counter.increase))
			return 0;
		FAIL(-EINVAL, "%s (%s): counter value must be u64, [value, increase] or "
		     "[nil, increase]", what, ser->name);
	case SERIES_GAUGE:
		if (get_f64(v, &ser->gauge.last) == 0) {
			ser->gauge.min = ser->gauge.max = ser->gauge.sum = ser->gauge.last;
			ser->gauge.n = 1;
			return 0;
		}
		if (v->type == MSGPACK_OBJECT_ARRAY &&
		    (v->via.array.size == 2 || v->via.array.size == 3))
			return decode_constant_gauge(v, ser, base, i, what, err, errlen);
		if (v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 5 &&
		    !get_f64(&v->via.array.ptr[0], &ser->gauge.last) &&
		    !get_f64(&v->via.array.ptr[1], &ser->gauge.min) &&
		    !get_f64(&v->via.array.ptr[2], &ser->gauge.max) &&
		    !get_f64(&v->via.array.ptr[3], &ser->gauge.sum) &&
		    !wire_u64(&v->via.array.ptr[4], &ser->gauge.n))
			return 0;
		FAIL(-EINVAL, "%s (%s): gauge value must be a number, [last, min, max, sum, n], "
		     "[last, n] or [last, n, sum]", what, ser->name);
	case SERIES_HISTOGRAM:
		return decode_hist(v, ser->hist, what, err, errlen);
	}
	return 0;
}

static int decode_top(const msgpack_object *root, struct snapshot *s, int compact,
		      const struct snapshot *like, const struct snapshot *base, char *err,
		      size_t errlen)
{
	long shift = 0;
	const msgpack_object *series = NULL, *labels = NULL;
	uint64_t version = 0, tier = 1, base_ts = 0;
	int have_host = 0, have_ts = 0, have_base = 0, ret;

	if (root->type != MSGPACK_OBJECT_MAP)
		FAIL(-EINVAL, "snapshot: top level must be a map");
	for (uint32_t i = 0; i < root->via.map.size; i++) {
		const msgpack_object *k = &root->via.map.ptr[i].key;
		const msgpack_object *v = &root->via.map.ptr[i].val;

		if (wire_key_is(k, "v")) {
			if (wire_u64(v, &version))
				FAIL(-EINVAL, "snapshot: 'v' must be an unsigned integer");
		} else if (wire_key_is(k, "host")) {
			free(s->host);
			s->host = get_str(v);
			if (!s->host || !s->host[0])
				FAIL(-EINVAL, "snapshot: 'host' must be a non-empty string");
			have_host = 1;
		} else if (wire_key_is(k, "ts")) {
			if (wire_u64(v, &s->ts_ms))
				FAIL(-EINVAL, "snapshot: 'ts' must be an unsigned integer (ms)");
			have_ts = 1;
		} else if (wire_key_is(k, "iv")) {
			if (wire_u64(v, &s->interval_ms))
				FAIL(-EINVAL, "snapshot: 'iv' must be an unsigned integer (ms)");
		} else if (wire_key_is(k, "seq")) {
			if (wire_u64(v, &s->seq))
				FAIL(-EINVAL, "snapshot: 'seq' must be an unsigned integer");
		} else if (wire_key_is(k, "tier")) {
			if (wire_u64(v, &tier) || tier == 0 || tier > UINT32_MAX)
				FAIL(-EINVAL, "snapshot: 'tier' must be a positive integer (seconds)");
		} else if (wire_key_is(k, "base")) {
			if (wire_u64(v, &base_ts))
				FAIL(-EINVAL, "snapshot: 'base' must be an unsigned integer (ms)");
			have_base = 1;
		} else if (wire_key_is(k, "lbl")) {
			labels = v;
		} else if (wire_key_is(k, "s")) {
			series = v;
		}
	}
	if (version < 1 || version > SNAPSHOT_VERSION)
		FAIL(-EINVAL, "snapshot: version %llu, this build reads versions 1 to %d",
		     (unsigned long long)version, SNAPSHOT_VERSION);
	if (!have_host || !have_ts || !series)
		FAIL(-EINVAL, "snapshot: missing field '%s'",
		     !have_host ? "host" : !have_ts ? "ts" : "s");
	s->tier = (uint32_t)tier;
	if (have_base && (!base || base->ts_ms != base_ts || base->tier != s->tier))
		FAIL(-ENOLINK, "snapshot: a delta on the entry at %llu ms, %s",
		     (unsigned long long)base_ts,
		     !base ? "which was not read (missing, or the read began after it)" :
		     "but the entry before it is another");
	if (!have_base)
		base = NULL;
	if (labels) {
		ret = decode_labels(labels, &s->labels, &s->nlabels, "snapshot", err, errlen);
		if (ret)
			return ret;
	}
	if (series->type != MSGPACK_OBJECT_ARRAY)
		FAIL(-EINVAL, "snapshot: 's' must be an array");
	if (series->via.array.size > SNAPSHOT_MAX_SERIES)
		FAIL(-E2BIG, "snapshot: %u series, at most %d allowed", series->via.array.size,
		     SNAPSHOT_MAX_SERIES);
	for (uint32_t i = 0; i < series->via.array.size; i++) {
		ret = decode_series(&series->via.array.ptr[i], s, i, compact, like, base, &shift,
				    err, errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int decode(const void *buf, size_t len, struct snapshot *s, int compact,
		  const struct snapshot *like, const struct snapshot *base, char *err, size_t errlen)
{
	msgpack_unpacked msg;
	size_t off = 0;
	int ret;

	memset(s, 0, sizeof(*s));
	if (len == 0)
		FAIL(-EINVAL, "snapshot: empty input");
	if (len > SNAPSHOT_MAX_BYTES)
		FAIL(-E2BIG, "snapshot: %zu bytes, at most %u allowed", len, SNAPSHOT_MAX_BYTES);
	if (snapshot_zstd_is_frame(buf, len)) {
		char why[200];
		void *plain;
		size_t plen;

		ret = snapshot_zstd_unpack(buf, len, SNAPSHOT_MAX_BYTES, &plain, &plen, why,
					   sizeof(why));
		if (ret)
			FAIL(ret, "snapshot: %s", why);
		if (snapshot_zstd_is_frame(plain, plen)) {
			free(plain);
			FAIL(-EINVAL, "snapshot: a zstd frame inside a zstd frame");
		}
		ret = decode(plain, plen, s, compact, like, base, err, errlen);
		free(plain);
		return ret;
	}
	if (wire_check(buf, len, WIRE_MAX_DEPTH, &off))
		FAIL(-EINVAL, "snapshot: not well-formed msgpack (truncated, or a container larger than the input)");
	if (off != len)
		FAIL(-EINVAL, "snapshot: %zu trailing bytes after the snapshot", len - off);
	off = 0;
	msgpack_unpacked_init(&msg);
	if (msgpack_unpack_next(&msg, buf, len, &off) != MSGPACK_UNPACK_SUCCESS) {
		msgpack_unpacked_destroy(&msg);
		FAIL(-EINVAL, "snapshot: msgpack unpack failed");
	}
	if (snapshot_init(s, "", 0, 0, 0, 1)) {
		msgpack_unpacked_destroy(&msg);
		FAIL(-ENOMEM, "snapshot: out of memory");
	}
	ret = decode_top(&msg.data, s, compact, like, base, err, errlen);
	msgpack_unpacked_destroy(&msg);
	if (ret)
		snapshot_free(s);
	return ret;
}

int snapshot_decode(const void *buf, size_t len, struct snapshot *s, char *err, size_t errlen)
{
	return decode(buf, len, s, 0, NULL, NULL, err, errlen);
}

int snapshot_decode_compact(const void *buf, size_t len, struct snapshot *s, char *err,
			    size_t errlen)
{
	return decode(buf, len, s, 1, NULL, NULL, err, errlen);
}

int snapshot_decode_like(const void *buf, size_t len, struct snapshot *s,
			 const struct snapshot *like, char *err, size_t errlen)
{
	return decode(buf, len, s, 1, like, NULL, err, errlen);
}

int snapshot_decode_on(const void *buf, size_t len, struct snapshot *s,
		       const struct snapshot *base, int compact, char *err, size_t errlen)
{
	return decode(buf, len, s, compact, NULL, base, err, errlen);
}
