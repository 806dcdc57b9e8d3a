/*
 * snapshot.c - snapshot model and msgpack codec; see snapshot.h.
 *
 * Decoding is two passes.  wire_check() (lib/model/wire.h) walks the raw bytes
 * first and rejects any container that claims more elements than bytes
 * remain, and nesting deeper than the format uses.  After it, msgpack-c builds
 * the object tree (at most a small multiple of the input size) and
 * decode_*() check every type and bound while copying into the model.
 */
#include "model/snapshot.h"
#include "model/snapshot_zstd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "core/fnv.h"
#include "model/wire.h"

#define WIRE_MAX_DEPTH 8	/* the format nests 6 deep */

/* ---- model -------------------------------------------------------------- */

int snapshot_init(struct snapshot *s, const char *host, uint64_t ts_ms,
		  uint64_t interval_ms, uint64_t seq, uint32_t tier)
{
	memset(s, 0, sizeof(*s));
	s->host = strdup(host ? host : "");
	if (!s->host)
		return -ENOMEM;
	s->ts_ms = ts_ms;
	s->interval_ms = interval_ms;
	s->seq = seq;
	s->tier = tier;
	return 0;
}

static void labels_free(struct label *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

static void series_free(struct series *ser)
{
	if (!ser->borrowed) {
		free(ser->name);
		labels_free(ser->labels, ser->nlabels);
	}
	if (ser->kind == SERIES_HISTOGRAM) {
		free(ser->hist);
		free(ser->sparse);
	}
}

void snapshot_free(struct snapshot *s)
{
	for (uint32_t i = 0; i < s->nseries; i++)
		series_free(&s->series[i]);
	free(s->series);
	labels_free(s->labels, s->nlabels);
	free(s->host);
	memset(s, 0, sizeof(*s));
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->key, ((const struct label *)b)->key);
}

/*
 * A label value as the decoder will accept it: one longer than
 * SNAPSHOT_MAX_STR (a deep cgroup path, a long configured label) keeps its
 * head and ends in "~" and the FNV-64 of the whole value, so it stays
 * unique and the host stays decodable (an undecodable host is unmonitored).
 */
static char *value_dup(const char *v)
{
	size_t n = strlen(v);
	char *out;

	if (n <= SNAPSHOT_MAX_STR)
		return strdup(v);
	out = malloc(SNAPSHOT_MAX_STR + 1);
	if (out) {
		int head = SNAPSHOT_MAX_STR - 17;

		snprintf(out, SNAPSHOT_MAX_STR + 1, "%.*s~%016llx", head, v,
			 (unsigned long long)fnv64_str(FNV64_OFFSET, v));
	}
	return out;
}

/* A label key the decoder accepts: non-empty, at most SNAPSHOT_MAX_STR. */
static int key_valid(const char *k)
{
	return k && k[0] && strlen(k) <= SNAPSHOT_MAX_STR;
}

static struct label *labels_dup(const struct label *src, uint32_t n)
{
	struct label *l;

	if (!n)
		return NULL;
	l = calloc(n, sizeof(*l));
	if (!l)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		l[i].key = strdup(src[i].key);
		l[i].value = value_dup(src[i].value);
		if (!l[i].key || !l[i].value) {
			labels_free(l, n);
			return NULL;
		}
	}
	return l;
}

int snapshot_copy(struct snapshot *dst, const struct snapshot *src)
{
	if (snapshot_init(dst, src->host, src->ts_ms, src->interval_ms, src->seq, src->tier))
		return -ENOMEM;
	for (uint32_t i = 0; i < src->nlabels; i++)
		if (snapshot_set_label(dst, src->labels[i].key, src->labels[i].value))
			goto fail;
	for (uint32_t i = 0; i < src->nseries; i++) {
		const struct series *a = &src->series[i];
		struct series *b = snapshot_add_labels(dst, a->name, a->kind, a->labels, a->nlabels);

		if (!b)
			goto fail;
		if (a->kind == SERIES_HISTOGRAM && a->sparse) {
			size_t len = sizeof(*a->sparse) + a->sparse->nruns * sizeof(a->sparse->runs[0]);

			free(b->hist);
			b->hist = NULL;
			b->sparse = malloc(len);
			if (!b->sparse)
				goto fail;
			memcpy(b->sparse, a->sparse, len);
		} else if (a->kind == SERIES_HISTOGRAM)
			memcpy(b->hist, a->hist, sizeof(*a->hist));
		else if (a->kind == SERIES_COUNTER)
			b->counter = a->counter;
		else
			b->gauge = a->gauge;
	}
	return 0;
fail:
	snapshot_free(dst);
	return -ENOMEM;
}

int snapshot_set_label(struct snapshot *s, const char *key, const char *value)
{
	struct label *l;
	char *v;

	if (!key_valid(key))
		return -EINVAL;
	for (uint32_t i = 0; i < s->nlabels; i++) {
		if (strcmp(s->labels[i].key, key) == 0) {
			v = value_dup(value);
			if (!v)
				return -ENOMEM;
			free(s->labels[i].value);
			s->labels[i].value = v;
			return 0;
		}
	}
	l = realloc(s->labels, (s->nlabels + 1) * sizeof(*l));
	if (!l)
		return -ENOMEM;
	s->labels = l;
	l[s->nlabels].key = strdup(key);
	l[s->nlabels].value = value_dup(value);
	if (!l[s->nlabels].key || !l[s->nlabels].value) {
		free(l[s->nlabels].key);
		free(l[s->nlabels].value);
		return -ENOMEM;
	}
	s->nlabels++;
	qsort(s->labels, s->nlabels, sizeof(*s->labels), label_cmp);
	return 0;
}

uint32_t snapshot_name_hash(const char *name)
{
	return (uint32_t)fnv64_str(FNV64_OFFSET, name);
}

uint64_t snapshot_labels_hash(uint64_t h, const struct label *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		h = fnv64_str(fnv64_sep(fnv64_str(fnv64_sep(h), l[i].key)), l[i].value);
	return h;
}

/*
 * Add a series whose name and labels (sorted by key, unique) the snapshot
 * takes over: no copies.  On failure they are freed and NULL is returned.
 * With same (a series of another snapshot with these very strings, see
 * snapshot_decode_like), they stay same's: the series borrows them, with
 * same's id and name hash, and nothing is freed on failure.
 */
static struct series *add_series(struct snapshot *s, char *name, enum series_kind kind,
				 struct label *labels, uint32_t nlabels, const struct series *same,
				 uint32_t same_index)
{
	struct series *ser;

	if (nlabels > SNAPSHOT_MAX_LABELS || s->nseries >= SNAPSHOT_MAX_SERIES ||
	    (!same && !key_valid(name)))
		goto fail;
	for (uint32_t i = 0; i < nlabels && !same; i++)
		if (!key_valid(labels[i].key))
			goto fail;
	if (s->nseries == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 16;
		struct series *n = realloc(s->series, cap * sizeof(*n));

		if (!n)
			goto fail;
		s->series = n;
		s->cap = cap;
	}
	ser = &s->series[s->nseries];
	memset(ser, 0, sizeof(*ser));
	ser->kind = kind;
	ser->name = name;
	ser->labels = labels;
	ser->nlabels = nlabels;
	if (same) {
		ser->id = same->id;
		ser->name_hash = same->name_hash;
		ser->borrowed = 1;
		ser->like = same_index + 1;
	} else {
		/* finding a series in an older snapshot then compares one integer first */
		ser->id = snapshot_labels_hash(fnv64_str(FNV64_OFFSET, ser->name), ser->labels,
					       ser->nlabels);
		ser->name_hash = snapshot_name_hash(ser->name);
	}
	if (kind == SERIES_HISTOGRAM) {
		ser->hist = calloc(1, sizeof(*ser->hist));
		if (!ser->hist)
			goto fail;
	}
	s->nseries++;
	return ser;
fail:
	if (!same) {
		free(name);
		labels_free(labels, nlabels);
	}
	return NULL;
}

static struct series *add_owned(struct snapshot *s, char *name, enum series_kind kind,
				struct label *labels, uint32_t nlabels)
{
	return add_series(s, name, kind, labels, nlabels, NULL, 0);
}

struct series *snapshot_add_labels(struct snapshot *s, const char *name,
				   enum series_kind kind,
				   const struct label *labels, uint32_t nlabels)
{
	struct label *l;
	char *n;

	if (nlabels > SNAPSHOT_MAX_LABELS || !key_valid(name))
		return NULL;
	n = strdup(name);
	l = labels_dup(labels, nlabels);
	if (!n || (nlabels && !l)) {
		free(n);
		labels_free(l, nlabels);
		return NULL;
	}
	if (nlabels > 1)
		qsort(l, nlabels, sizeof(*l), label_cmp);
	return add_owned(s, n, kind, l, nlabels);
}

static struct series *add_va(struct snapshot *s, const char *name,
			     enum series_kind kind, va_list ap)
{
	struct label l[SNAPSHOT_MAX_LABELS];
	uint32_t n = 0;
	const char *k;

	while ((k = va_arg(ap, const char *)) != NULL) {
		if (n == SNAPSHOT_MAX_LABELS)
			return NULL;
		l[n].key = (char *)k;
		l[n].value = va_arg(ap, char *);
		if (!l[n].value)
			return NULL;
		n++;
	}
	return snapshot_add_labels(s, name, kind, l, n);
}

struct series *snapshot_add(struct snapshot *s, const char *name, enum series_kind kind, ...)
{
	struct series *ser;
	va_list ap;

	va_start(ap, kind);
	ser = add_va(s, name, kind, ap);
	va_end(ap);
	return ser;
}

struct series *snapshot_add_counter(struct snapshot *s, const char *name, uint64_t value, ...)
{
	struct series *ser;
	va_list ap;

	va_start(ap, value);
	ser = add_va(s, name, SERIES_COUNTER, ap);
	va_end(ap);
	if (ser)
		ser->counter.value = value;
	return ser;
}

struct series *snapshot_add_gauge(struct snapshot *s, const char *name, double value, ...)
{
	struct series *ser;
	va_list ap;

	va_start(ap, value);
	ser = add_va(s, name, SERIES_GAUGE, ap);
	va_end(ap);
	if (ser) {
		ser->gauge.last = ser->gauge.min = ser->gauge.max = ser->gauge.sum = value;
		ser->gauge.n = 1;
	}
	return ser;
}

const char *series_label(const struct series *ser, const char *key)
{
	for (uint32_t i = 0; i < ser->nlabels; i++)
		if (strcmp(ser->labels[i].key, key) == 0)
			return ser->labels[i].value;
	return NULL;
}

int series_key(const struct series *ser, char *buf, size_t len)
{
	size_t off = 0;
	int n;

#define APPEND(...)                                                        \
	do {                                                               \
		n = snprintf(buf + (off < len ? off : len), off < len ? len - off : 0, \
			     __VA_ARGS__);                                 \
		off += (size_t)n;                                          \
	} while (0)
	APPEND("%s{", ser->name);
	for (uint32_t i = 0; i < ser->nlabels; i++)
		APPEND("%s%s=%s", i ? "," : "", ser->labels[i].key, ser->labels[i].value);
	APPEND("}");
#undef APPEND
	return (int)off;
}

/* Labels are kept sorted, so equal series have equal label arrays. */
int snapshot_same_series(const struct series *a, const struct series *b)
{
	if (a->id != b->id || a->nlabels != b->nlabels || strcmp(a->name, b->name))
		return 0;
	for (uint32_t i = 0; i < a->nlabels; i++)
		if (strcmp(a->labels[i].key, b->labels[i].key) ||
		    strcmp(a->labels[i].value, b->labels[i].value))
			return 0;
	return 1;
}

struct series *snapshot_find_same(const struct snapshot *s, const struct series *like,
				  uint32_t hint)
{
	if (hint < s->nseries && snapshot_same_series(&s->series[hint], like))
		return &s->series[hint];
	for (uint32_t i = 0; i < s->nseries; i++)
		if (i != hint && snapshot_same_series(&s->series[i], like))
			return &s->series[i];
	return NULL;
}

int snapshot_compact(struct snapshot *s)
{
	for (uint32_t i = 0; i < s->nseries; i++) {
		struct series *ser = &s->series[i];

		if (ser->kind != SERIES_HISTOGRAM || !ser->hist)
			continue;
		ser->sparse = hist_sparse_of(ser->hist);
		if (!ser->sparse)
			return -ENOMEM;
		free(ser->hist);
		ser->hist = NULL;
	}
	return 0;
}

const struct histogram *series_hist(const struct series *ser, struct histogram *scratch)
{
	if (ser->hist)
		return ser->hist;
	hist_from_sparse(scratch, ser->sparse);
	return scratch;
}

int snapshot_adopt_strings(struct snapshot *s, struct snapshot *like)
{
	int ret = 0;

	for (uint32_t i = 0; i < s->nseries; i++) {
		struct series *x = &s->series[i], *p;
		struct label *l;
		char *n;

		if (!x->borrowed || !x->like)
			continue;
		p = like && x->like <= like->nseries ? &like->series[x->like - 1] : NULL;
		if (p && !p->borrowed && p->name == x->name && p->labels == x->labels) {
			p->borrowed = 1;
			x->borrowed = 0;
			x->like = 0;
			continue;
		}
		n = strdup(x->name);
		l = labels_dup(x->labels, x->nlabels);
		if (!n || (x->nlabels && !l)) {
			free(n);
			labels_free(l, x->nlabels);
			ret = -ENOMEM;
			continue;
		}
		x->name = n;
		x->labels = l;
		x->borrowed = 0;
		x->like = 0;
	}
	return ret;
}

struct series *snapshot_find(const struct snapshot *s, const char *key)
{
	char buf[2048];

	for (uint32_t i = 0; i < s->nseries; i++) {
		series_key(&s->series[i], buf, sizeof(buf));
		if (strcmp(buf, key) == 0)
			return &s->series[i];
	}
	return NULL;
}

/* ---- encode ------------------------------------------------------------- */

static void pack_labels(msgpack_packer *pk, const struct label *l, uint32_t n)
{
	msgpack_pack_map(pk, n);
	for (uint32_t i = 0; i < n; i++) {
		wire_pack_str(pk, l[i].key);
		wire_pack_str(pk, l[i].value);
	}
}

static void pack_hist(msgpack_packer *pk, const struct histogram *h)
{
	uint32_t n = (uint32_t)hist_nonempty(h), prev = 0;
	int first = 1;

	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, h->count);
	msgpack_pack_uint64(pk, h->sum);
	msgpack_pack_array(pk, n * 2);
	for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
		if (!h->buckets[i])
			continue;
		msgpack_pack_uint32(pk, first ? i : i - prev - 1);
		msgpack_pack_uint64(pk, h->buckets[i]);
		prev = i;
		first = 0;
	}
}

/* The same wire form from a compact histogram. */
static void pack_sparse(msgpack_packer *pk, const struct hist_sparse *h)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, h->count);
	msgpack_pack_uint64(pk, h->sum);
	msgpack_pack_array(pk, h->nruns * 2);
	for (uint32_t i = 0; i < h->nruns; i++) {
		msgpack_pack_uint32(pk, i ? h->runs[i].index - h->runs[i - 1].index - 1 :
				    h->runs[i].index);
		msgpack_pack_uint64(pk, h->runs[i].count);
	}
}

static void pack_series(msgpack_packer *pk, const struct series *ser, uint32_t tier)
{
	const struct gauge_value *g = &ser->gauge;

	msgpack_pack_array(pk, 4);
	wire_pack_str(pk, ser->name);
	pack_labels(pk, ser->labels, ser->nlabels);
	msgpack_pack_uint8(pk, (uint8_t)ser->kind);
	switch (ser->kind) {
	case SERIES_COUNTER:
		if (tier <= 1 && ser->counter.increase == 0) {
			msgpack_pack_uint64(pk, ser->counter.value);
		} else {
			msgpack_pack_array(pk, 2);
			msgpack_pack_uint64(pk, ser->counter.value);
			msgpack_pack_uint64(pk, ser->counter.increase);
		}
		break;
	case SERIES_GAUGE:
		if (g->n <= 1 && g->min == g->last && g->max == g->last) {
			msgpack_pack_double(pk, g->last);
		} else {
			msgpack_pack_array(pk, 5);
			msgpack_pack_double(pk, g->last);
			msgpack_pack_double(pk, g->min);
			msgpack_pack_double(pk, g->max);
			msgpack_pack_double(pk, g->sum);
			msgpack_pack_uint64(pk, g->n);
		}
		break;
	case SERIES_HISTOGRAM:
		if (ser->sparse)
			pack_sparse(pk, ser->sparse);
		else
			pack_hist(pk, ser->hist);
		break;
	}
}

int snapshot_encode(const struct snapshot *s, char **out, size_t *outlen)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 8);
	wire_pack_str(&pk, "v");
	msgpack_pack_uint32(&pk, SNAPSHOT_VERSION);
	wire_pack_str(&pk, "host");
	wire_pack_str(&pk, s->host);
	wire_pack_str(&pk, "ts");
	msgpack_pack_uint64(&pk, s->ts_ms);
	wire_pack_str(&pk, "iv");
	msgpack_pack_uint64(&pk, s->interval_ms);
	wire_pack_str(&pk, "seq");
	msgpack_pack_uint64(&pk, s->seq);
	wire_pack_str(&pk, "tier");
	msgpack_pack_uint32(&pk, s->tier);
	wire_pack_str(&pk, "lbl");
	pack_labels(&pk, s->labels, s->nlabels);
	wire_pack_str(&pk, "s");
	msgpack_pack_array(&pk, s->nseries);
	for (uint32_t i = 0; i < s->nseries; i++)
		pack_series(&pk, &s->series[i], s->tier);
	/* sbuffer grows by realloc; a failed realloc leaves data NULL */
	if (!sb.data && s->nseries) {
		msgpack_sbuffer_destroy(&sb);
		return -ENOMEM;
	}
	/* compressed when that is smaller (snapshot_zstd.h) */
	{
		void *z;
		size_t zlen;
		int ret = snapshot_zstd_pack(sb.data, sb.size, s->tier, &z, &zlen);

		if (ret == -ENOMEM) {
			msgpack_sbuffer_destroy(&sb);
			return -ENOMEM;
		}
		if (!ret) {
			msgpack_sbuffer_destroy(&sb);
			*out = z;
			*outlen = zlen;
			return 0;
		}
	}
	*out = sb.data;
	*outlen = sb.size;
	return 0;
}

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
			labels_free(l, n);
			FAIL(-EINVAL, "%s: label %u is not a non-empty string key with a string value",
			     what, i);
		}
	}
	qsort(l, n, sizeof(*l), label_cmp);
	for (uint32_t i = 1; i < n; i++) {
		if (strcmp(l[i - 1].key, l[i].key) == 0) {
			snprintf(err, errlen, "%s: duplicate label '%s'", what, l[i].key);
			labels_free(l, n);
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

static int decode_series(const msgpack_object *o, struct snapshot *s, uint32_t i, int compact,
			 const struct snapshot *like, long *shift, char *err, size_t errlen)
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
			labels_free(labels, nlabels);
		}
		FAIL(-EINVAL, "%s (%.*s): kind must be 0, 1 or 2", what,
		     (int)(a[0].via.str.size < 64 ? a[0].via.str.size : 64), a[0].via.str.ptr);
	}
	/*
	 * The decoded strings are the series' own (no copies); compact: no
	 * dense histogram allocated only to be compacted (kind set below).
	 */
	ser = add_series(s, name, compact && kind == SERIES_HISTOGRAM ? SERIES_COUNTER :
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
		    !wire_u64(&v->via.array.ptr[0], &ser->counter.value) &&
		    !wire_u64(&v->via.array.ptr[1], &ser->counter.increase))
			return 0;
		FAIL(-EINVAL, "%s (%s): counter value must be u64 or [value, increase]",
		     what, ser->name);
	case SERIES_GAUGE:
		if (get_f64(v, &ser->gauge.last) == 0) {
			ser->gauge.min = ser->gauge.max = ser->gauge.sum = ser->gauge.last;
			ser->gauge.n = 1;
			return 0;
		}
		if (v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 5 &&
		    !get_f64(&v->via.array.ptr[0], &ser->gauge.last) &&
		    !get_f64(&v->via.array.ptr[1], &ser->gauge.min) &&
		    !get_f64(&v->via.array.ptr[2], &ser->gauge.max) &&
		    !get_f64(&v->via.array.ptr[3], &ser->gauge.sum) &&
		    !wire_u64(&v->via.array.ptr[4], &ser->gauge.n))
			return 0;
		FAIL(-EINVAL, "%s (%s): gauge value must be a number or [last, min, max, sum, n]",
		     what, ser->name);
	case SERIES_HISTOGRAM:
		return decode_hist(v, ser->hist, what, err, errlen);
	}
	return 0;
}

static int decode_top(const msgpack_object *root, struct snapshot *s, int compact,
		      const struct snapshot *like, char *err, size_t errlen)
{
	long shift = 0;
	const msgpack_object *series = NULL, *labels = NULL;
	uint64_t version = 0, tier = 1;
	int have_host = 0, have_ts = 0, ret;

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
		} else if (wire_key_is(k, "lbl")) {
			labels = v;
		} else if (wire_key_is(k, "s")) {
			series = v;
		}
	}
	if (version != SNAPSHOT_VERSION)
		FAIL(-EINVAL, "snapshot: version %llu, this build reads version %d",
		     (unsigned long long)version, SNAPSHOT_VERSION);
	if (!have_host || !have_ts || !series)
		FAIL(-EINVAL, "snapshot: missing field '%s'",
		     !have_host ? "host" : !have_ts ? "ts" : "s");
	s->tier = (uint32_t)tier;
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
		ret = decode_series(&series->via.array.ptr[i], s, i, compact, like, &shift, err,
				    errlen);
		if (ret)
			return ret;
	}
	return 0;
}

static int decode(const void *buf, size_t len, struct snapshot *s, int compact,
		  const struct snapshot *like, char *err, size_t errlen)
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
		void *plain;
		size_t plen;

		ret = snapshot_zstd_unpack(buf, len, SNAPSHOT_MAX_BYTES, &plain, &plen, err, errlen);
		if (ret)
			return ret;
		if (snapshot_zstd_is_frame(plain, plen)) {
			free(plain);
			FAIL(-EINVAL, "snapshot: a zstd frame inside a zstd frame");
		}
		ret = decode(plain, plen, s, compact, like, err, errlen);
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
	ret = decode_top(&msg.data, s, compact, like, err, errlen);
	msgpack_unpacked_destroy(&msg);
	if (ret)
		snapshot_free(s);
	return ret;
}

int snapshot_decode(const void *buf, size_t len, struct snapshot *s, char *err, size_t errlen)
{
	return decode(buf, len, s, 0, NULL, err, errlen);
}

int snapshot_decode_compact(const void *buf, size_t len, struct snapshot *s, char *err,
			    size_t errlen)
{
	return decode(buf, len, s, 1, NULL, err, errlen);
}

int snapshot_decode_like(const void *buf, size_t len, struct snapshot *s,
			 const struct snapshot *like, char *err, size_t errlen)
{
	return decode(buf, len, s, 1, like, err, errlen);
}
