/*
 * chunk.c - a span of rollups as one block of columns: the encoder; see
 * chunk.h (the decoder is chunk_decode.c and chunk_column.c).
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
#include "model/chunk_internal.h"
#include "model/labels.h"

/*
 * zstd level: a rollup chunk is written once a span per host and read by
 * baselines and tools; level 15 is ~5 % smaller than 9 on the simulator's
 * hours for ~2 ms more a chunk.  A minute of 1 s snapshots is compacted by
 * the probe every minute: level 6 takes ~17 % less of that compaction's
 * instructions than 15 (callgrind, a real probe's minute: ~290 M in all)
 * for bytes within the minute-to-minute noise (+-3 %).
 */
#define CHUNK_LEVEL 15
#define CHUNK_LEVEL_SECONDS 6

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
 * A point's histogram as its non-empty buckets, ascending: the compact
 * form a decoded point holds, or one made from a dense histogram (own).
 * The encoder walks these, never HIST_BUCKETS slots.
 */
struct hview {
	const struct hist_run *r;
	uint32_t n;
	uint64_t count, sum;
	struct hist_sparse *own;
};

static const struct hview hview_empty;

static int hview_of(const struct series *x, struct hview *v)
{
	const struct hist_sparse *sp = x->sparse;

	*v = hview_empty;
	if (!sp) {
		if (!x->hist)
			return -EINVAL;
		if (!(v->own = hist_sparse_of(x->hist)))
			return -ENOMEM;
		sp = v->own;
	}
	v->r = sp->runs;
	v->n = sp->nruns;
	v->count = sp->count;
	v->sum = sp->sum;
	return 0;
}

static void hview_release(struct hview *v)
{
	free(v->own);
	*v = hview_empty;
}

/* The buckets of two points, in index order: each non-empty in either. */
struct hwalk {
	const struct hview *p, *c;
	uint32_t i, j;
};

/* The next bucket (idx) and its counts before (pv) and now (cv); 0 past the last. */
static int hwalk_next(struct hwalk *w, uint32_t *idx, uint64_t *pv, uint64_t *cv)
{
	const struct hview *p = w->p, *c = w->c;

	while (w->i < p->n && !p->r[w->i].count)
		w->i++;
	while (w->j < c->n && !c->r[w->j].count)
		w->j++;
	if (w->i == p->n && w->j == c->n)
		return 0;
	if (w->j == c->n || (w->i < p->n && p->r[w->i].index < c->r[w->j].index)) {
		*idx = p->r[w->i].index;
		*pv = p->r[w->i++].count;
		*cv = 0;
	} else if (w->i == p->n || c->r[w->j].index < p->r[w->i].index) {
		*idx = c->r[w->j].index;
		*pv = 0;
		*cv = c->r[w->j++].count;
	} else {
		*idx = c->r[w->j].index;
		*pv = p->r[w->i++].count;
		*cv = c->r[w->j++].count;
	}
	return 1;
}

/*
 * How a histogram column writes its bucket counts: each point's non-empty
 * buckets as differences from the point before's (a steady distribution)
 * or as they are (counts that swing as much as they are large), or only
 * the buckets that changed since the point before, each by how much (a
 * cumulative histogram, as the 1 s tier's are: most of its buckets do not
 * move in a second) — whichever takes the fewest varint bytes, bucket
 * indexes included.  Returns the mode, or < 0.
 */
static int hist_mode(const struct snapshot *pts, size_t n, const struct column *c)
{
	size_t index = 0, delta = 0, raw = 0, changed = 0;	/* varint bytes */
	struct hview prev = hview_empty, cur;
	int ret;

	for (size_t p = 0; p < n; p++) {
		struct hwalk w = { &prev, &cur, 0, 0 };
		uint32_t i, last = 0, lastc = 0, runs = 0, nch = 0;
		uint64_t pv, cv;

		if (c->at[p] < 0)
			continue;
		if ((ret = hview_of(&pts[p].series[c->at[p]], &cur))) {
			hview_release(&prev);
			return ret;
		}
		while (hwalk_next(&w, &i, &pv, &cv)) {
			if (cv != pv) {
				changed += varint_len(nch++ ? i - lastc - 1 : i) +
					   varint_len(zigzag_encode((int64_t)(cv - pv)));
				lastc = i;
			}
			if (!cv)
				continue;
			index += varint_len(runs++ ? i - last - 1 : i);
			delta += varint_len(zigzag_encode((int64_t)(cv - pv)));
			raw += varint_len(cv);
			last = i;
		}
		index += varint_len(runs);
		changed += varint_len(nch);
		hview_release(&prev);
		prev = cur;
	}
	hview_release(&prev);
	if (changed < index + delta && changed < index + raw)
		return HIST_CHANGED;
	return delta < raw ? HIST_DELTA : HIST_RAW;
}

static int put_column(struct strbuf *sb, const struct snapshot *pts, size_t n,
		      const struct column *c)
{
	struct hview prev = hview_empty, cur;
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
		hmode = hist_mode(pts, n, c);
		if (hmode < 0)
			return hmode;
		put_u8(sb, (uint8_t)hmode);
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
			struct hwalk w = { &prev, &cur, 0, 0 };
			uint32_t i, runs = 0, last = 0;
			uint64_t total = 0, pv, cv;
			int first = 1, ret = hview_of(x, &cur);

			if (ret) {
				hview_release(&prev);
				return ret;
			}
			while (hwalk_next(&w, &i, &pv, &cv)) {
				runs += hmode == HIST_CHANGED ? cv != pv : cv != 0;
				total += cv;
			}
			/* the count is the buckets' total but for what overflowed */
			put_zz(sb, (int64_t)(cur.count - total));
			put_zz(sb, (int64_t)(cur.sum - ps));
			ps = cur.sum;
			/* mode 2: the buckets that moved since the point before, by how much */
			put_uv(sb, runs);
			w = (struct hwalk){ &prev, &cur, 0, 0 };
			while (hwalk_next(&w, &i, &pv, &cv)) {
				if (hmode == HIST_CHANGED ? cv == pv : !cv)
					continue;
				put_uv(sb, first ? i : i - last - 1);
				if (hmode == HIST_RAW)
					put_uv(sb, cv);
				else
					put_zz(sb, (int64_t)(cv - pv));
				last = i;
				first = 0;
			}
			hview_release(&prev);
			prev = cur;
			break;
		}
		}
	}
	hview_release(&prev);
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
	struct column *cols = NULL;
	uint32_t ncols = 0;
	int ret = -ENOMEM;

	if (!set_point || !set_of)
		goto out;
	ret = span_columns(pts, n, &cols, &ncols);
	if (ret)
		goto out;
	ret = -ENOMEM;
	strbuf_add(sb, chunk_magic, sizeof(chunk_magic));
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
		ret = put_column(sb, pts, n, &cols[i]);
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
	return ret;
}

uint64_t chunk_span_ms(uint32_t tier)
{
	/* 1 s snapshots are whole entries, no chain: compacted by the minute */
	return tier == 1 ? 60000 : snapshot_delta_span_ms(tier);
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
	cap = ZSTD_compress(z, cap, sb.buf, sb.len,
			    pts[0].tier == 1 ? CHUNK_LEVEL_SECONDS : CHUNK_LEVEL);
	strbuf_release(&sb);
	if (ZSTD_isError(cap)) {
		free(z);
		return -ENOMEM;
	}
	/* exact or refused */
	/* compact: a minute of 1 s points holds hundreds of histograms (snapshot_equal: either form) */
	ret = chunk_decode(z, cap, 1, &back, &nback, err, sizeof(err));
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
