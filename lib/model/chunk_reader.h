/*
 * chunk_reader.h - reading a chunk's bytes, shared by the decoder's two
 * halves: chunk_decode.c (the frame: header, points, label sets, orders)
 * and chunk_column.c (one series' column: presence and values).  Not for
 * other files.
 *
 * Every read is checked against what is left of the buffer (a chunk is
 * outside input): the first failure names what was being read in r->bad,
 * and every read after it returns 0 without moving.  The helpers are
 * inline: a chunk of an hour reads ~10^5 varints through them.
 */
#ifndef FL_CHUNK_READER_H
#define FL_CHUNK_READER_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/varint.h"
#include "model/chunk.h"

struct reader {
	const uint8_t *p, *end;
	const char *bad;	/* what failed to read, NULL while all is well */
	uint8_t version;	/* the chunk's format version */
};

static inline uint64_t get_uv(struct reader *r, const char *what)
{
	uint64_t v = 0;

	if (!r->bad && varint_get(&r->p, r->end, &v))
		r->bad = what;
	return r->bad ? 0 : v;
}

static inline int64_t get_zz(struct reader *r, const char *what)
{
	return zigzag_decode(get_uv(r, what));
}

static inline uint8_t get_u8(struct reader *r, const char *what)
{
	if (r->bad)
		return 0;
	if (r->p >= r->end) {
		r->bad = what;
		return 0;
	}
	return *r->p++;
}

/* A string into buf (SNAPSHOT_MAX_STR + 1 bytes): no NUL inside, not too long. */
static inline const char *get_str(struct reader *r, const char *what, char *buf)
{
	uint64_t l = get_uv(r, what);

	if (r->bad)
		return NULL;
	if (l > SNAPSHOT_MAX_STR || l > (uint64_t)(r->end - r->p) || memchr(r->p, 0, l)) {
		r->bad = what;
		return NULL;
	}
	memcpy(buf, r->p, l);
	buf[l] = 0;
	r->p += l;
	return buf;
}

static inline double get_double(struct reader *r, const char *what)
{
	uint64_t u = 0;
	double x;

	if (r->bad || r->end - r->p < 8) {
		r->bad = what;
		return 0;
	}
	for (int i = 0; i < 8; i++)
		u |= (uint64_t)r->p[i] << (8 * i);
	r->p += 8;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* A label list read into strings of its own (free with labels_release). */
struct label_set {
	struct label l[SNAPSHOT_MAX_LABELS];
	uint32_t n;
};

static inline void labels_release(struct label_set *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		free(s->l[i].key);
		free(s->l[i].value);
	}
	s->n = 0;
}

static inline int get_labels(struct reader *r, const char *what, struct label_set *s)
{
	uint64_t n = get_uv(r, what);
	char buf[SNAPSHOT_MAX_STR + 1];

	s->n = 0;
	if (r->bad)
		return -EINVAL;
	if (n > SNAPSHOT_MAX_LABELS) {
		r->bad = what;
		return -EINVAL;
	}
	for (uint64_t i = 0; i < n; i++) {
		const char *k = get_str(r, what, buf);

		if (!k)
			return -EINVAL;
		s->l[s->n].key = strdup(k);
		if (!s->l[s->n].key)
			return -ENOMEM;
		if (!get_str(r, what, buf) || !(s->l[s->n].value = strdup(buf))) {
			free(s->l[s->n].key);
			return r->bad ? -EINVAL : -ENOMEM;
		}
		s->n++;
	}
	return 0;
}

/* "chunk: " and the message into err; returns ret. */
static inline int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static inline int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "chunk: ");

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return ret;
}

/* Which series decode_plain builds: NULL want, all of them. */
struct series_pick {
	chunk_series_cb want;
	void *arg;
};

/*
 * Read the next series' column (name, labels, kind, presence, values) into
 * the n points pts that want marks, the others' values read and dropped;
 * a column pick refuses is read past without building anything.  Counts
 * each point's series in npresent[] and every value read in *values (and
 * histogram points in *hists) against the chunk's limits.  0, or < 0 with
 * err set (-EINVAL malformed, -E2BIG over a limit, -ENOMEM).
 */
int chunk_get_column(struct reader *r, struct snapshot *pts, size_t n, const uint8_t *want,
		     const struct series_pick *pick, uint32_t *npresent, size_t *values,
		     size_t *hists, char *err, size_t errlen);

#endif
