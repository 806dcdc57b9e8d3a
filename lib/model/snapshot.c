/*
 * snapshot.c - the snapshot model: a host's labels and series, built,
 * copied, found; see snapshot.h.  The encoder is snapshot_encode.c, the
 * decoder snapshot_decode.c.
 */
#include "model/snapshot.h"
#include "model/snapshot_internal.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/fnv.h"
#include "model/labels.h"

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

void snapshot_labels_free(struct label *l, uint32_t n)
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
		snapshot_labels_free(ser->labels, ser->nlabels);
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
	if (s->labels_one)
		free(s->labels);
	else
		snapshot_labels_free(s->labels, s->nlabels);
	free(s->host);
	memset(s, 0, sizeof(*s));
}

static size_t labels_bytes(const struct label *l, uint32_t n)
{
	size_t b = malloc_usable_size((void *)l);

	for (uint32_t i = 0; i < n; i++)
		b += malloc_usable_size(l[i].key) + malloc_usable_size(l[i].value);
	return b;
}

size_t snapshot_bytes(const struct snapshot *s)
{
	size_t b = sizeof(*s) + malloc_usable_size(s->host) + malloc_usable_size(s->series);

	b += s->labels_one ? malloc_usable_size(s->labels) : labels_bytes(s->labels, s->nlabels);
	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct series *ser = &s->series[i];

		if (!ser->borrowed)
			b += malloc_usable_size(ser->name) + labels_bytes(ser->labels, ser->nlabels);
		if (ser->kind == SERIES_HISTOGRAM)
			b += malloc_usable_size(ser->hist) + malloc_usable_size(ser->sparse);
	}
	return b;
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
			snapshot_labels_free(l, n);
			return NULL;
		}
	}
	return l;
}

int snapshot_copy(struct snapshot *dst, const struct snapshot *src)
{
	if (snapshot_init(dst, src->host, src->ts_ms, src->interval_ms, src->seq, src->tier))
		return -ENOMEM;
	/* src's labels and series are as set_label and add keep them: copied as they are */
	if (snapshot_set_labels(dst, src->labels, src->nlabels))
		goto fail;
	/* the series array at its size: a copy is kept, seldom added to */
	if (src->nseries) {
		dst->series = malloc(src->nseries * sizeof(*dst->series));
		if (!dst->series)
			goto fail;
		dst->cap = src->nseries;
	}
	for (uint32_t i = 0; i < src->nseries; i++) {
		const struct series *a = &src->series[i];
		struct series *b = snapshot_add_like(dst, a);

		if (!b)
			goto fail;
		if (a->kind == SERIES_HISTOGRAM && a->sparse) {
			size_t len = sizeof(*a->sparse) + a->sparse->nruns * sizeof(a->sparse->runs[0]);

			b->sparse = malloc(len);
			if (!b->sparse)
				goto fail;
			memcpy(b->sparse, a->sparse, len);
		} else if (a->kind == SERIES_HISTOGRAM) {
			b->hist = malloc(sizeof(*b->hist));
			if (!b->hist)
				goto fail;
			memcpy(b->hist, a->hist, sizeof(*a->hist));
		} else if (a->kind == SERIES_COUNTER)
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
	if (s->labels_one) {	/* separate strings, to change one */
		struct label *sep = labels_dup(s->labels, s->nlabels);

		if (!sep)
			return -ENOMEM;
		free(s->labels);
		s->labels = sep;
		s->labels_one = 0;
	}
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
	qsort(s->labels, s->nlabels, sizeof(*s->labels), label_key_cmp);
	return 0;
}

/*
 * l[0..n) as one block when it is as set_label keeps labels (keys valid,
 * strictly ascending, values within SNAPSHOT_MAX_STR) and s has none:
 * 0, -ENOMEM, or -EINVAL when it is not such a set (nothing done).
 */
static int set_labels_block(struct snapshot *s, const struct label *l, uint32_t n)
{
	size_t need = n * sizeof(*l), klen[SNAPSHOT_MAX_LABELS], vlen[SNAPSHOT_MAX_LABELS];
	struct label *copy;
	char *p;

	if (s->nlabels || n > SNAPSHOT_MAX_LABELS)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		if (!key_valid(l[i].key) || (vlen[i] = strlen(l[i].value)) > SNAPSHOT_MAX_STR ||
		    (i && label_key_cmp(&l[i - 1], &l[i]) >= 0))
			return -EINVAL;
		klen[i] = strlen(l[i].key);
		need += klen[i] + vlen[i] + 2;
	}
	if (!n)
		return 0;
	copy = malloc(need);
	if (!copy)
		return -ENOMEM;
	p = (char *)(copy + n);
	for (uint32_t i = 0; i < n; i++) {
		copy[i].key = memcpy(p, l[i].key, klen[i] + 1);
		p += klen[i] + 1;
		copy[i].value = memcpy(p, l[i].value, vlen[i] + 1);
		p += vlen[i] + 1;
	}
	free(s->labels);
	s->labels = copy;
	s->nlabels = n;
	s->labels_one = 1;
	return 0;
}

int snapshot_set_labels(struct snapshot *s, const struct label *l, uint32_t n)
{
	int ret;

	for (uint32_t i = 0; i < n; i++)
		if (!key_valid(l[i].key))
			return -EINVAL;
	ret = set_labels_block(s, l, n);
	if (ret != -EINVAL)
		return ret;
	/* not a canonical set, or s has labels: one by one, as set_label does */
	for (uint32_t i = 0; i < n; i++) {
		ret = snapshot_set_label(s, l[i].key, l[i].value);
		if (ret)
			return ret;
	}
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

/* See snapshot_internal.h. */
/* s's next series, zeroed (not yet counted), or NULL: too many, or -ENOMEM. */
static struct series *series_slot(struct snapshot *s)
{
	/* from 4: a chunk's point often holds the one series a query picks */
	if (s->nseries >= SNAPSHOT_MAX_SERIES || ARRAY_GROW(s->series, s->cap, s->nseries + 1, 4))
		return NULL;
	memset(&s->series[s->nseries], 0, sizeof(s->series[0]));
	return &s->series[s->nseries];
}

struct series *snapshot_add_series(struct snapshot *s, char *name, enum series_kind kind,
				   struct label *labels, uint32_t nlabels, const struct series *same,
				   uint32_t same_index)
{
	struct series *ser;

	if (nlabels > SNAPSHOT_MAX_LABELS || (!same && !key_valid(name)))
		goto fail;
	for (uint32_t i = 0; i < nlabels && !same; i++)
		if (!key_valid(labels[i].key))
			goto fail;
	ser = series_slot(s);
	if (!ser)
		goto fail;
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
		snapshot_labels_free(labels, nlabels);
	}
	return NULL;
}

struct series *snapshot_add_sparse(struct snapshot *s, const char *name,
				   const struct label *labels, uint32_t nlabels,
				   struct hist_sparse *sp)
{
	/* added as a gauge (nothing to allocate), then made the histogram it is */
	struct series *ser = snapshot_add_labels(s, name, SERIES_GAUGE, labels, nlabels);

	if (!ser) {
		free(sp);
		return NULL;
	}
	ser->kind = SERIES_HISTOGRAM;
	ser->sparse = sp;
	return ser;
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
		snapshot_labels_free(l, nlabels);
		return NULL;
	}
	if (nlabels > 1)
		qsort(l, nlabels, sizeof(*l), label_key_cmp);
	return snapshot_add_series(s, n, kind, l, nlabels, NULL, 0);
}

struct series *snapshot_add_like(struct snapshot *s, const struct series *proto)
{
	struct label *l = labels_dup(proto->labels, proto->nlabels);
	char *n = strdup(proto->name);
	struct series *ser;

	if (!n || (proto->nlabels && !l) || !(ser = series_slot(s))) {
		free(n);
		if (l)
			snapshot_labels_free(l, proto->nlabels);
		return NULL;
	}
	s->nseries++;
	ser->kind = proto->kind;
	ser->name = n;
	ser->labels = l;
	ser->nlabels = proto->nlabels;
	ser->id = proto->id;
	ser->name_hash = proto->name_hash;
	return ser;
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

/* Append str to buf (len bytes) at *off as snprintf would: cut to fit, NUL-terminated. */
static void key_append(char *buf, size_t len, size_t *off, const char *str)
{
	size_t n = strlen(str);

	if (*off + 1 < len) {
		size_t room = len - 1 - *off;

		memcpy(buf + *off, str, n < room ? n : room);
		buf[*off + (n < room ? n : room)] = '\0';
	}
	*off += n;
}

/* One a snapshot's series, every rollup step: copies, not snprintf's formatting. */
int series_key(const struct series *ser, char *buf, size_t len)
{
	size_t off = 0;

	if (len)
		buf[0] = '\0';
	key_append(buf, len, &off, ser->name);
	key_append(buf, len, &off, "{");
	for (uint32_t i = 0; i < ser->nlabels; i++) {
		if (i)
			key_append(buf, len, &off, ",");
		key_append(buf, len, &off, ser->labels[i].key);
		key_append(buf, len, &off, "=");
		key_append(buf, len, &off, ser->labels[i].value);
	}
	key_append(buf, len, &off, "}");
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

int series_compact(struct series *ser)
{
	if (ser->sparse || !ser->hist)
		return ser->sparse ? 0 : -EINVAL;
	ser->sparse = hist_sparse_of(ser->hist);
	if (!ser->sparse)
		return -ENOMEM;
	free(ser->hist);
	ser->hist = NULL;
	return 0;
}

int snapshot_compact(struct snapshot *s)
{
	for (uint32_t i = 0; i < s->nseries; i++) {
		struct series *ser = &s->series[i];

		if (ser->kind == SERIES_HISTOGRAM && ser->hist && series_compact(ser))
			return -ENOMEM;
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
			snapshot_labels_free(l, x->nlabels);
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
