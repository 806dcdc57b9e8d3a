/*
 * chunk.c - a span of rollups as one block of columns; see chunk.h.
 */
#include "model/chunk.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "core/array.h"
#include "core/strbuf.h"
#include "core/varint.h"
#include "model/labels.h"

static const char magic[4] = { 'F', 'L', 'K', CHUNK_VERSION };

/*
 * zstd level: a chunk is written once a span per host and read by
 * baselines and tools; level 15 is ~5 % smaller than 9 on the simulator's
 * hours for ~2 ms more a chunk.
 */
#define CHUNK_LEVEL 15
#define GAUGE_RAW 255
enum { HIST_DELTA = 0, HIST_RAW = 1 };	/* a histogram column's bucket counts */

/* ---- encode ------------------------------------------------------------- */

static void put_uv(struct strbuf *sb, uint64_t v)
{
	uint8_t b[VARINT_MAX];

	strbuf_add(sb, b, varint_put(b, v));
}

static void put_zz(struct strbuf *sb, int64_t v)
{
	put_uv(sb, zigzag_encode(v));
}

static void put_u8(struct strbuf *sb, uint8_t v)
{
	strbuf_add(sb, &v, 1);
}

static void put_str(struct strbuf *sb, const char *s)
{
	size_t l = strlen(s);

	put_uv(sb, l);
	strbuf_add(sb, s, l);
}

static void put_labels(struct strbuf *sb, const struct label *l, uint32_t n)
{
	put_uv(sb, n);
	for (uint32_t i = 0; i < n; i++) {
		put_str(sb, l[i].key);
		put_str(sb, l[i].value);
	}
}

/* A series of the span: its first appearance, and where it is in each point. */
struct column {
	const struct series *def;
	int32_t *at;		/* per point: index in its series, -1 when absent */
};

static void columns_free(struct column *c, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(c[i].at);
	free(c);
}

/*
 * The span's series in one order (a series first seen in a later point
 * goes after the one before it there), which most points' series follow;
 * a point that orders them otherwise gets its order written beside
 * (point_order).  -EINVAL for what a chunk cannot hold: a series twice in
 * a point, a series changing its kind.
 */
static int span_columns(const struct snapshot *pts, size_t n, struct column **out,
			uint32_t *nout)
{
	struct column *c = NULL;
	uint32_t nc = 0, cap = 0;

	for (size_t p = 0; p < n; p++) {
		int64_t pos = -1;

		for (uint32_t i = 0; i < pts[p].nseries; i++) {
			const struct series *x = &pts[p].series[i];
			int64_t at = -1;

			for (uint32_t k = (uint32_t)(pos + 1); k < nc; k++)
				if (snapshot_same_series(c[k].def, x)) {
					at = k;
					break;
				}
			for (int64_t k = 0; at < 0 && k <= pos; k++)
				if (snapshot_same_series(c[k].def, x))
					at = k;		/* out of the span's order */
			if (at >= 0 && c[at].at[p] >= 0)
				goto invalid;		/* twice in one point */
			if (at < 0) {
				int32_t *where = malloc(n * sizeof(*where));

				if (!where || ARRAY_GROW(c, cap, nc + 1, 32)) {
					free(where);
					columns_free(c, nc);
					return -ENOMEM;
				}
				for (size_t q = 0; q < n; q++)
					where[q] = -1;
				at = pos + 1;
				memmove(&c[at + 1], &c[at], (nc - (uint32_t)at) * sizeof(*c));
				c[at].def = x;
				c[at].at = where;
				nc++;
			} else if (c[at].def->kind != x->kind) {
				goto invalid;
			}
			c[at].at[p] = (int32_t)i;
			if (at > pos)
				pos = at;
		}
	}
	*out = c;
	*nout = nc;
	return 0;
invalid:
	columns_free(c, nc);
	return -EINVAL;
}

static int scale_holds(double x, int k)
{
	double y;

	if (!isfinite(x) || (x == 0 && signbit(x)))
		return 0;
	y = ldexp(x, k);
	return fabs(y) < 0x1p53 && y == trunc(y);
}

/* The smallest scale k (2^-k units) every value of the gauge column holds in, or GAUGE_RAW. */
static int gauge_scale(const struct snapshot *pts, size_t n, const struct column *c)
{
	static const int scales[] = { 0, 16, 32 };

	for (size_t s = 0; s < sizeof(scales) / sizeof(scales[0]); s++) {
		int k = scales[s], ok = 1;

		for (size_t p = 0; p < n && ok; p++) {
			const struct gauge_value *g;

			if (c->at[p] < 0)
				continue;
			g = &pts[p].series[c->at[p]].gauge;
			ok = scale_holds(g->last, k) && scale_holds(g->min, k) &&
			     scale_holds(g->max, k) && scale_holds(g->sum, k);
		}
		if (ok)
			return k;
	}
	return GAUGE_RAW;
}

static int64_t units(double x, int k)
{
	return (int64_t)ldexp(x, k);
}

static void put_double(struct strbuf *sb, double x)
{
	uint64_t u;
	uint8_t b[8];

	memcpy(&u, &x, sizeof(u));
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(u >> (8 * i));
	strbuf_add(sb, b, 8);
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/*
 * How a histogram column writes its bucket counts: as differences from the
 * point before's (a steady distribution) or as they are (counts that
 * swing as much as they are large), whichever takes fewer varint bytes.
 */
static int hist_mode(const struct snapshot *pts, size_t n, const struct column *c,
		     struct histogram *prev, struct histogram *cur)
{
	size_t delta = 0, raw = 0;

	hist_reset(prev);
	for (size_t p = 0; p < n; p++) {
		const struct histogram *h;

		if (c->at[p] < 0)
			continue;
		h = series_hist(&pts[p].series[c->at[p]], cur);
		if (!h)
			continue;
		for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
			if (!h->buckets[i])
				continue;
			delta += varint_len(zigzag_encode((int64_t)(h->buckets[i] - prev->buckets[i])));
			raw += varint_len(h->buckets[i]);
		}
		if (h != prev)
			*prev = *h;
	}
	return delta < raw ? HIST_DELTA : HIST_RAW;
}

static int put_column(struct strbuf *sb, const struct snapshot *pts, size_t n,
		      const struct column *c, struct histogram *prev, struct histogram *cur)
{
	const struct series *d = c->def;
	int all = 1, k = 0, hmode = HIST_DELTA;
	uint64_t pv = 0, pi = 0, pn = 0, ps = 0;
	int64_t pl = 0, psum = 0;

	put_str(sb, d->name);
	put_labels(sb, d->labels, d->nlabels);
	put_u8(sb, (uint8_t)d->kind);
	for (size_t p = 0; p < n; p++)
		all &= c->at[p] >= 0;
	if (all) {
		put_u8(sb, 0);
	} else {
		put_u8(sb, 1);
		for (size_t p = 0; p < n; p += 8) {
			uint8_t bits = 0;

			for (size_t b = 0; b < 8 && p + b < n; b++)
				bits |= (uint8_t)((c->at[p + b] >= 0) << b);
			put_u8(sb, bits);
		}
	}
	if (d->kind == SERIES_GAUGE) {
		k = gauge_scale(pts, n, c);
		put_u8(sb, (uint8_t)k);
	}
	if (d->kind == SERIES_HISTOGRAM) {
		hmode = hist_mode(pts, n, c, prev, cur);
		put_u8(sb, (uint8_t)hmode);
		hist_reset(prev);
	}
	for (size_t p = 0; p < n; p++) {
		const struct series *x;

		if (c->at[p] < 0)
			continue;
		x = &pts[p].series[c->at[p]];
		switch (d->kind) {
		case SERIES_COUNTER:
			put_zz(sb, (int64_t)(x->counter.increase - pi));
			put_zz(sb, (int64_t)(x->counter.value - pv - x->counter.increase));
			pi = x->counter.increase;
			pv = x->counter.value;
			break;
		case SERIES_GAUGE: {
			const struct gauge_value *g = &x->gauge;

			put_zz(sb, (int64_t)(g->n - pn));
			pn = g->n;
			if (k == GAUGE_RAW) {
				put_double(sb, g->last);
				put_double(sb, g->min);
				put_double(sb, g->max);
				put_double(sb, g->sum);
				break;
			}
			put_zz(sb, units(g->last, k) - pl);
			put_zz(sb, units(g->last, k) - units(g->min, k));
			put_zz(sb, units(g->max, k) - units(g->last, k));
			put_zz(sb, units(g->sum, k) - psum);
			pl = units(g->last, k);
			psum = units(g->sum, k);
			break;
		}
		case SERIES_HISTOGRAM: {
			const struct histogram *h = series_hist(x, cur);
			uint32_t runs = 0, last = 0;
			uint64_t total = 0;
			int first = 1;

			if (!h)
				return -EINVAL;
			for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
				runs += h->buckets[i] != 0;
				total += h->buckets[i];
			}
			/* the count is the buckets' total but for what overflowed */
			put_zz(sb, (int64_t)(h->count - total));
			put_zz(sb, (int64_t)(h->sum - ps));
			ps = h->sum;
			put_uv(sb, runs);
			for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
				if (!h->buckets[i])
					continue;
				put_uv(sb, first ? i : i - last - 1);
				if (hmode == HIST_DELTA)
					put_zz(sb, (int64_t)(h->buckets[i] - prev->buckets[i]));
				else
					put_uv(sb, h->buckets[i]);
				last = i;
				first = 0;
			}
			if (h != prev)
				*prev = *h;
			break;
		}
		}
	}
	return 0;
}

/*
 * The points whose series are not in the span's order: how many, then for
 * each its index and, for each of its series in its own order, where the
 * series stands among the point's in the span's order.
 */
static int put_orders(struct strbuf *sb, const struct snapshot *pts, size_t n,
		      const struct column *cols, uint32_t ncols)
{
	uint32_t *rank = NULL, cap = 0, nout = 0;
	struct strbuf tail = STRBUF_INIT;

	for (size_t p = 0; p < n; p++) {
		uint32_t r = 0, same = 1;

		if (ARRAY_GROW(rank, cap, pts[p].nseries + 1, 64)) {
			strbuf_release(&tail);
			return -ENOMEM;
		}
		for (uint32_t k = 0; k < ncols; k++)
			if (cols[k].at[p] >= 0)
				rank[cols[k].at[p]] = r++;
		for (uint32_t i = 0; i < pts[p].nseries; i++)
			same &= rank[i] == i;
		if (same)
			continue;
		put_uv(&tail, p);
		for (uint32_t i = 0; i < pts[p].nseries; i++)
			put_uv(&tail, rank[i]);
		nout++;
	}
	free(rank);
	put_uv(sb, nout);
	strbuf_add(sb, tail.buf ? tail.buf : "", tail.len);
	strbuf_release(&tail);
	return 0;
}

static int encode_plain(const struct snapshot *pts, size_t n, struct strbuf *sb)
{
	uint32_t *set_point = calloc(n, sizeof(*set_point)), nsets = 0;
	uint32_t *set_of = calloc(n, sizeof(*set_of));	/* per point: its label set */
	struct histogram *prev = malloc(2 * sizeof(*prev));
	struct column *cols = NULL;
	uint32_t ncols = 0;
	int ret = -ENOMEM;

	if (!set_point || !set_of || !prev)
		goto out;
	ret = span_columns(pts, n, &cols, &ncols);
	if (ret)
		goto out;
	ret = -ENOMEM;
	strbuf_add(sb, magic, sizeof(magic));
	put_str(sb, pts[0].host);
	put_uv(sb, pts[0].tier);
	put_uv(sb, n);
	for (size_t p = 0; p < n; p++) {
		put_uv(sb, p ? pts[p].ts_ms - pts[p - 1].ts_ms : pts[p].ts_ms);
		put_uv(sb, pts[p].interval_ms);
		put_zz(sb, p ? (int64_t)(pts[p].seq - pts[p - 1].seq - 1) : (int64_t)pts[p].seq);
	}
	for (size_t p = 0; p < n; p++) {
		uint32_t s;

		for (s = 0; s < nsets; s++)
			if (labels_equal(pts[set_point[s]].labels, pts[set_point[s]].nlabels,
					 pts[p].labels, pts[p].nlabels))
				break;
		/* set s is the labels of point set_point[s] */
		if (s == nsets)
			set_point[nsets++] = (uint32_t)p;
		set_of[p] = s;
	}
	put_uv(sb, nsets);
	for (uint32_t s = 0; s < nsets; s++)
		put_labels(sb, pts[set_point[s]].labels, pts[set_point[s]].nlabels);
	for (size_t p = 0; nsets > 1 && p < n; p++)
		put_uv(sb, set_of[p]);
	put_uv(sb, ncols);
	for (uint32_t i = 0; i < ncols; i++) {
		ret = put_column(sb, pts, n, &cols[i], &prev[0], &prev[1]);
		if (ret)
			goto out;
	}
	ret = put_orders(sb, pts, n, cols, ncols);
	if (!ret)
		ret = strbuf_failed(sb) ? -ENOMEM : 0;
out:
	columns_free(cols, ncols);
	free(set_of);
	free(set_point);
	free(prev);
	return ret;
}

int chunk_encode(const struct snapshot *pts, size_t n, char **out, size_t *outlen)
{
	struct strbuf sb = STRBUF_INIT;
	struct snapshot *back = NULL;
	size_t nback = 0, cap;
	char err[128];
	void *z;
	int ret;

	if (n < 1 || n > CHUNK_MAX_POINTS)
		return -EINVAL;
	for (size_t p = 1; p < n; p++)
		if (strcmp(pts[p].host, pts[0].host) || pts[p].tier != pts[0].tier ||
		    pts[p].ts_ms <= pts[p - 1].ts_ms)
			return -EINVAL;
	ret = encode_plain(pts, n, &sb);
	if (ret) {
		strbuf_release(&sb);
		return ret;
	}
	if (sb.len > CHUNK_MAX_BYTES) {
		strbuf_release(&sb);
		return -EINVAL;
	}
	cap = ZSTD_compressBound(sb.len);
	z = malloc(cap);
	if (!z) {
		strbuf_release(&sb);
		return -ENOMEM;
	}
	cap = ZSTD_compress(z, cap, sb.buf, sb.len, CHUNK_LEVEL);
	strbuf_release(&sb);
	if (ZSTD_isError(cap)) {
		free(z);
		return -ENOMEM;
	}
	/* exact or refused */
	ret = chunk_decode(z, cap, 0, &back, &nback, err, sizeof(err));
	if (ret == -ENOMEM) {
		free(z);
		return ret;
	}
	if (!ret && nback == n) {
		for (size_t p = 0; p < n && !ret; p++)
			if (!snapshot_equal(&back[p], &pts[p]))
				ret = -EINVAL;
	} else {
		ret = -EINVAL;
	}
	chunk_points_free(back, nback);
	if (ret) {
		free(z);
		return ret;
	}
	*out = z;
	*outlen = cap;
	return 0;
}

/* ---- decode ------------------------------------------------------------- */

struct reader {
	const uint8_t *p, *end;
	const char *bad;	/* what failed to read, NULL while all is well */
};

static uint64_t get_uv(struct reader *r, const char *what)
{
	uint64_t v = 0;

	if (!r->bad && varint_get(&r->p, r->end, &v))
		r->bad = what;
	return r->bad ? 0 : v;
}

static int64_t get_zz(struct reader *r, const char *what)
{
	return zigzag_decode(get_uv(r, what));
}

static uint8_t get_u8(struct reader *r, const char *what)
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
static const char *get_str(struct reader *r, const char *what, char *buf)
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

static double get_double(struct reader *r, const char *what)
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

static void labels_release(struct label_set *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		free(s->l[i].key);
		free(s->l[i].value);
	}
	s->n = 0;
}

static int get_labels(struct reader *r, const char *what, struct label_set *s)
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

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "chunk: ");

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return ret;
}

void chunk_points_free(struct snapshot *pts, size_t n)
{
	for (size_t p = 0; pts && p < n; p++)
		snapshot_free(&pts[p]);
	free(pts);
}

/* Read one series' columns into the points that have it. */
static int get_column(struct reader *r, struct snapshot *pts, size_t n, const uint8_t *want,
		      uint32_t *npresent, size_t *values, size_t *hists, char *err, size_t errlen)
{
	struct series skipped;	/* the values of a point not asked for, read and dropped */
	char name[SNAPSHOT_MAX_STR + 1];
	struct label_set ls;
	uint8_t kind, bits[(CHUNK_MAX_POINTS + 7) / 8];
	int ret, k = 0, hmode = HIST_DELTA;
	/* unsigned: hostile differences wrap instead of overflowing */
	uint64_t pv = 0, pi = 0, pn = 0, ps = 0, pl = 0, psum = 0;
	struct histogram *prev = NULL;

	if (!get_str(r, "series name", name))
		return fail(err, errlen, -EINVAL, "series %zu's name is malformed", *values);
	ret = get_labels(r, "series labels", &ls);
	if (ret) {
		labels_release(&ls);
		return ret == -ENOMEM ? fail(err, errlen, ret, "out of memory") :
			fail(err, errlen, ret, "%s: labels malformed", name);
	}
	kind = get_u8(r, "series kind");
	if (kind > SERIES_HISTOGRAM) {
		labels_release(&ls);
		return fail(err, errlen, -EINVAL, "%s: kind %u unknown", name, kind);
	}
	switch (get_u8(r, "presence")) {
	case 0:
		memset(bits, 0xff, sizeof(bits));
		break;
	case 1:
		if ((size_t)(r->end - r->p) < (n + 7) / 8) {
			r->bad = "presence";
			break;
		}
		memcpy(bits, r->p, (n + 7) / 8);
		r->p += (n + 7) / 8;
		break;
	default:
		if (!r->bad)
			r->bad = "presence";
	}
	/* the previous point's histogram, and a skipped point's */
	if (kind == SERIES_HISTOGRAM && !(prev = calloc(2, sizeof(*prev)))) {
		labels_release(&ls);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
	if (kind == SERIES_HISTOGRAM) {
		hmode = get_u8(r, "histogram mode");
		if (hmode != HIST_DELTA && hmode != HIST_RAW && !r->bad)
			r->bad = "histogram mode";
	}
	if (kind == SERIES_GAUGE) {
		k = get_u8(r, "gauge scale");
		if (k != GAUGE_RAW && k > 32 && !r->bad)
			r->bad = "gauge scale";
	}
	for (size_t p = 0; p < n && !r->bad; p++) {
		struct series *x;

		if (!(bits[p / 8] & (1u << (p % 8))))
			continue;
		if (++*values > CHUNK_MAX_VALUES ||
		    (kind == SERIES_HISTOGRAM && ++*hists > CHUNK_MAX_HIST_POINTS)) {
			free(prev);
			labels_release(&ls);
			return fail(err, errlen, -E2BIG, "more than %u values", CHUNK_MAX_VALUES);
		}
		npresent[p]++;
		if (want[p]) {
			x = snapshot_add_labels(&pts[p], name, (enum series_kind)kind, ls.l, ls.n);
		} else {
			memset(&skipped, 0, sizeof(skipped));
			skipped.hist = prev ? &prev[1] : NULL;
			if (prev)
				hist_reset(skipped.hist);
			x = &skipped;
		}
		if (!x) {
			free(prev);
			labels_release(&ls);
			return fail(err, errlen, -EINVAL, "series %s not valid in point %zu", name, p);
		}
		switch (kind) {
		case SERIES_COUNTER:
			pi += (uint64_t)get_zz(r, "counter increase");
			pv += pi + (uint64_t)get_zz(r, "counter value");
			x->counter.increase = pi;
			x->counter.value = pv;
			break;
		case SERIES_GAUGE: {
			struct gauge_value *g = &x->gauge;

			pn += (uint64_t)get_zz(r, "gauge n");
			g->n = pn;
			if (k == GAUGE_RAW) {
				g->last = get_double(r, "gauge last");
				g->min = get_double(r, "gauge min");
				g->max = get_double(r, "gauge max");
				g->sum = get_double(r, "gauge sum");
				break;
			}
			pl += (uint64_t)get_zz(r, "gauge last");
			g->last = ldexp((double)(int64_t)pl, -k);
			g->min = ldexp((double)(int64_t)(pl - (uint64_t)get_zz(r, "gauge min")), -k);
			g->max = ldexp((double)(int64_t)(pl + (uint64_t)get_zz(r, "gauge max")), -k);
			psum += (uint64_t)get_zz(r, "gauge sum");
			g->sum = ldexp((double)(int64_t)psum, -k);
			break;
		}
		case SERIES_HISTOGRAM: {
			struct histogram *h = x->hist;
			uint64_t runs;
			uint32_t at = 0;

			uint64_t total = 0, over = (uint64_t)get_zz(r, "histogram count");

			ps += (uint64_t)get_zz(r, "histogram sum");
			h->sum = ps;
			runs = get_uv(r, "histogram runs");
			if (runs > HIST_BUCKETS) {
				r->bad = "histogram runs";
				break;
			}
			for (uint64_t i = 0; i < runs && !r->bad; i++) {
				uint64_t gap = get_uv(r, "histogram bucket");

				if (gap >= HIST_BUCKETS || (i ? at + 1 + gap : gap) >= HIST_BUCKETS) {
					r->bad = "histogram bucket";
					break;
				}
				at = (uint32_t)(i ? at + 1 + gap : gap);
				/* as it is, or a difference from the point before's bucket */
				if (hmode == HIST_RAW)
					h->buckets[at] = get_uv(r, "histogram bucket count");
				else
					h->buckets[at] = prev->buckets[at] +
						(uint64_t)get_zz(r, "histogram bucket count");
				total += h->buckets[at];
			}
			h->count = total + over;
			*prev = *h;
			if (x == &skipped)
				break;
			ret = series_compact(x);
			if (ret) {
				free(prev);
				labels_release(&ls);
				return fail(err, errlen, ret, "out of memory");
			}
			break;
		}
		}
	}
	free(prev);
	labels_release(&ls);
	if (r->bad)
		return fail(err, errlen, -EINVAL, "%s: %s malformed or truncated", name, r->bad);
	return 0;
}

/*
 * Put the points put_orders names back in their own order of series (the
 * points asked for: the others' orders are read and dropped).
 */
static int get_orders(struct reader *r, struct snapshot *pts, size_t n, const uint8_t *want,
		      const uint32_t *npresent)
{
	uint64_t norders = get_uv(r, "orders");
	struct series *tmp = NULL;
	uint8_t *seen = NULL;
	uint32_t cap = 0;
	int64_t last = -1;
	int ret = -EINVAL;

	if (r->bad || norders > n) {
		r->bad = "orders";
		return -EINVAL;
	}
	for (uint64_t o = 0; o < norders; o++) {
		uint64_t p = get_uv(r, "order point");
		uint32_t ns;

		if (r->bad || p >= n || (int64_t)p <= last) {
			r->bad = "order point";
			goto out;
		}
		last = (int64_t)p;
		ns = npresent[p];
		if (ns > cap) {
			struct series *t = realloc(tmp, ns * sizeof(*t));
			uint8_t *sn = realloc(seen, ns);

			if (t)
				tmp = t;
			if (sn)
				seen = sn;
			if (!t || !sn) {
				ret = -ENOMEM;
				goto out;
			}
			cap = ns;
		}
		memset(seen, 0, ns);
		for (uint32_t i = 0; i < ns; i++) {
			uint64_t k = get_uv(r, "order");

			if (r->bad || k >= ns || seen[k]) {
				r->bad = "order";
				goto out;
			}
			seen[k] = 1;
			if (want[p])
				tmp[i] = pts[p].series[k];
		}
		if (want[p])
			memcpy(pts[p].series, tmp, ns * sizeof(*tmp));
	}
	ret = 0;
out:
	free(tmp);
	free(seen);
	return ret;
}

static int decode_plain(const uint8_t *buf, size_t len, uint64_t from_ms, uint64_t to_ms,
			struct snapshot **out, size_t *nout, char *err, size_t errlen)
{
	struct reader r = { buf, buf + len, NULL };
	char host[SNAPSHOT_MAX_STR + 1];
	struct label_set *sets = NULL;
	struct snapshot *pts = NULL;
	uint8_t *want = NULL;		/* per point: in [from_ms, to_ms] */
	uint32_t *npresent = NULL;	/* per point: its series, built or not */
	uint64_t tier, n, nsets, nseries, ts = 0, seq = 0;
	size_t values = 0, hists = 0, npts = 0;
	int ret = -EINVAL;

	if (len < 4 || memcmp(buf, magic, 3))
		return fail(err, errlen, -EINVAL, "not a chunk (bad magic)");
	if (buf[3] != CHUNK_VERSION)
		return fail(err, errlen, -EINVAL,
			    "version %u, this reader knows %u (a newer writer: upgrade the reader)",
			    buf[3], CHUNK_VERSION);
	r.p += 4;
	if (!get_str(&r, "host", host) || !host[0])
		return fail(err, errlen, -EINVAL, "host malformed");
	tier = get_uv(&r, "tier");
	n = get_uv(&r, "points");
	if (r.bad || tier < 1 || tier > 86400 || n < 1 || n > CHUNK_MAX_POINTS)
		return fail(err, errlen, -EINVAL, "tier %" PRIu64 " or point count %" PRIu64
			    " out of range", tier, n);
	pts = calloc(n, sizeof(*pts));
	want = calloc(n, 1);
	npresent = calloc(n, sizeof(*npresent));
	if (!pts || !want || !npresent) {
		free(pts);
		free(want);
		free(npresent);
		return fail(err, errlen, -ENOMEM, "out of memory");
	}
	for (npts = 0; npts < n; npts++) {
		uint64_t dt = get_uv(&r, "point ts"), iv = get_uv(&r, "point interval");
		int64_t ds = get_zz(&r, "point seq");

		if (r.bad || ts + dt < ts || (npts && !dt))
			goto malformed;
		ts += dt;
		want[npts] = ts >= from_ms && ts <= to_ms;
		seq = npts ? seq + 1 + (uint64_t)ds : (uint64_t)ds;
		if (snapshot_init(&pts[npts], host, ts, iv, seq, (uint32_t)tier)) {
			ret = -ENOMEM;
			goto out;
		}
	}
	nsets = get_uv(&r, "label sets");
	if (r.bad || nsets < 1 || nsets > n)
		goto malformed;
	sets = calloc(nsets, sizeof(*sets));
	if (!sets) {
		ret = -ENOMEM;
		goto out;
	}
	for (uint64_t s = 0; s < nsets; s++) {
		ret = get_labels(&r, "host labels", &sets[s]);
		if (ret == -ENOMEM)
			goto out;
		if (ret)
			goto malformed;
	}
	for (size_t p = 0; p < n; p++) {
		uint64_t s = nsets > 1 ? get_uv(&r, "point label set") : 0;

		if (r.bad || s >= nsets)
			goto malformed;
		for (uint32_t i = 0; want[p] && i < sets[s].n; i++) {
			ret = snapshot_set_label(&pts[p], sets[s].l[i].key, sets[s].l[i].value);
			if (ret == -ENOMEM)
				goto out;
			if (ret)
				goto malformed;
		}
	}
	nseries = get_uv(&r, "series count");
	if (r.bad || nseries > SNAPSHOT_MAX_SERIES)
		goto malformed;
	for (uint64_t i = 0; i < nseries; i++) {
		ret = get_column(&r, pts, n, want, npresent, &values, &hists, err, errlen);
		if (ret)
			goto out_err;
	}
	ret = get_orders(&r, pts, n, want, npresent);
	if (ret == -ENOMEM)
		goto out;
	if (ret)
		goto malformed;
	if (r.p != r.end) {
		r.bad = "end (trailing bytes)";
		goto malformed;
	}
	for (uint64_t s = 0; s < nsets; s++)
		labels_release(&sets[s]);
	free(sets);
	/* the points asked for, in order */
	*nout = 0;
	for (size_t p = 0; p < n; p++) {
		if (want[p])
			pts[(*nout)++] = pts[p];
		else
			snapshot_free(&pts[p]);
	}
	free(want);
	free(npresent);
	*out = pts;
	return 0;
malformed:
	ret = fail(err, errlen, -EINVAL, "%s malformed or truncated", r.bad ? r.bad : "header");
	goto out_err;
out:
	if (ret == -ENOMEM)
		fail(err, errlen, ret, "out of memory");
out_err:
	for (uint64_t s = 0; sets && s < nsets; s++)
		labels_release(&sets[s]);
	free(sets);
	free(want);
	free(npresent);
	chunk_points_free(pts, npts);
	return ret;
}

int chunk_decode(const void *buf, size_t len, int compact, struct snapshot **pts, size_t *n,
		 char *err, size_t errlen)
{
	return chunk_decode_range(buf, len, compact, 0, UINT64_MAX, pts, n, err, errlen);
}

int chunk_decode_range(const void *buf, size_t len, int compact, uint64_t from_ms,
		       uint64_t to_ms, struct snapshot **pts, size_t *n, char *err, size_t errlen)
{
	unsigned long long size = ZSTD_getFrameContentSize(buf, len);
	void *plain;
	size_t got;
	int ret;

	if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
		return fail(err, errlen, -EINVAL, "not a zstd frame with its size");
	if (size > CHUNK_MAX_BYTES)
		return fail(err, errlen, -E2BIG, "%llu bytes decompressed, more than %u", size,
			    CHUNK_MAX_BYTES);
	plain = malloc(size ? size : 1);
	if (!plain)
		return fail(err, errlen, -ENOMEM, "out of memory");
	got = ZSTD_decompress(plain, size, buf, len);
	if (ZSTD_isError(got) || got != size) {
		free(plain);
		return fail(err, errlen, -EINVAL, "zstd: %s",
			    ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
	}
	ret = decode_plain(plain, size, from_ms, to_ms, pts, n, err, errlen);
	free(plain);
	if (ret || compact)
		return ret;
	/* dense histograms for readers that work on them */
	for (size_t p = 0; p < *n; p++)
		for (uint32_t i = 0; i < (*pts)[p].nseries; i++) {
			struct series *x = &(*pts)[p].series[i];

			if (x->kind != SERIES_HISTOGRAM || !x->sparse)
				continue;
			x->hist = malloc(sizeof(*x->hist));
			if (!x->hist) {
				chunk_points_free(*pts, *n);
				return fail(err, errlen, -ENOMEM, "out of memory");
			}
			hist_from_sparse(x->hist, x->sparse);
			free(x->sparse);
			x->sparse = NULL;
		}
	return 0;
}

/* ---- equality ----------------------------------------------------------- */

static int same_bits(double a, double b)
{
	return !memcmp(&a, &b, sizeof(a));
}

int snapshot_equal(const struct snapshot *a, const struct snapshot *b)
{
	struct histogram *ha, *hb;
	int eq = 1;

	if (strcmp(a->host, b->host) || a->ts_ms != b->ts_ms || a->interval_ms != b->interval_ms ||
	    a->seq != b->seq || a->tier != b->tier || a->nseries != b->nseries ||
	    !labels_equal(a->labels, a->nlabels, b->labels, b->nlabels))
		return 0;
	ha = malloc(2 * sizeof(*ha));
	if (!ha)
		return 0;
	hb = ha + 1;
	for (uint32_t i = 0; i < a->nseries && eq; i++) {
		const struct series *x = &a->series[i], *y = &b->series[i];

		if (x->kind != y->kind || strcmp(x->name, y->name) ||
		    !labels_equal(x->labels, x->nlabels, y->labels, y->nlabels))
			eq = 0;
		else if (x->kind == SERIES_COUNTER)
			eq = x->counter.value == y->counter.value &&
			     x->counter.increase == y->counter.increase;
		else if (x->kind == SERIES_GAUGE)
			eq = x->gauge.n == y->gauge.n && same_bits(x->gauge.last, y->gauge.last) &&
			     same_bits(x->gauge.min, y->gauge.min) &&
			     same_bits(x->gauge.max, y->gauge.max) &&
			     same_bits(x->gauge.sum, y->gauge.sum);
		else
			eq = hist_equal(series_hist(x, ha), series_hist(y, hb));
	}
	free(ha);
	return eq;
}
