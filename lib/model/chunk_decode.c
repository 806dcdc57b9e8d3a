/*
 * chunk_decode.c - reading a chunk back: whole (chunk_decode) or a time
 * range of it (chunk_decode_range); see chunk.h.  Every field is checked
 * against what is left of the buffer: a chunk is outside input.
 */
#include "model/chunk.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/strbuf.h"
#include "core/varint.h"
#include "model/chunk_internal.h"
#include "model/labels.h"
#include "model/snapshot_zstd.h"

/* ---- decode ------------------------------------------------------------- */

struct reader {
	const uint8_t *p, *end;
	const char *bad;	/* what failed to read, NULL while all is well */
	uint8_t version;	/* the chunk's format version */
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
/*
 * A column's running state: each value is a difference from the point
 * before's (unsigned: hostile differences wrap instead of overflowing).
 */
struct column_prev {
	uint64_t v, i, n, s, l, sum;
	uint64_t total;			/* the point before's buckets' total */
	int k;				/* gauge scale: 2^-k fixed point, or GAUGE_RAW */
	int hmode;			/* HIST_DELTA, HIST_RAW or HIST_CHANGED */
	/*
	 * Histograms: the point before's buckets (dense, updated in place),
	 * which of them are not empty (ascending), and scratch for the next
	 * point's: a point costs its runs, not HIST_BUCKETS.
	 */
	struct histogram *hist;
	uint32_t *nz, nnz, *nz_next;
	struct hist_run *runs;
};

/* The presence bitmap of n points into bits (mode 0: all present). */
static void get_presence(struct reader *r, size_t n, uint8_t *bits, size_t size)
{
	switch (get_u8(r, "presence")) {
	case 0:
		memset(bits, 0xff, size);
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
}

static void get_gauge(struct reader *r, struct gauge_value *g, struct column_prev *cp)
{
	int k = cp->k;

	cp->n += (uint64_t)get_zz(r, "gauge n");
	g->n = cp->n;
	if (k == GAUGE_RAW) {
		g->last = get_double(r, "gauge last");
		g->min = get_double(r, "gauge min");
		g->max = get_double(r, "gauge max");
		g->sum = get_double(r, "gauge sum");
		return;
	}
	cp->l += (uint64_t)get_zz(r, "gauge last");
	g->last = ldexp((double)(int64_t)cp->l, -k);
	g->min = ldexp((double)(int64_t)(cp->l - (uint64_t)get_zz(r, "gauge min")), -k);
	g->max = ldexp((double)(int64_t)(cp->l + (uint64_t)get_zz(r, "gauge max")), -k);
	cp->sum += (uint64_t)get_zz(r, "gauge sum");
	g->sum = ldexp((double)(int64_t)cp->sum, -k);
}

/* Run i's bucket index after *at (a gap past it; run 0's the index itself). */
static int next_bucket(struct reader *r, uint64_t i, uint32_t *at)
{
	uint64_t gap = get_uv(r, "histogram bucket");

	if (gap >= HIST_BUCKETS || (i ? *at + 1 + gap : gap) >= HIST_BUCKETS) {
		r->bad = "histogram bucket";
		return -1;
	}
	*at = (uint32_t)(i ? *at + 1 + gap : gap);
	return 0;
}

/*
 * One point's histogram: the column's state (cp) moves to it, and *out
 * (out NULL: a point not built) gets its compact form, malloc'd.  Returns
 * 0 or -ENOMEM; a malformed point sets r->bad.
 */
static int get_hist(struct reader *r, struct column_prev *cp, struct hist_sparse **out)
{
	uint64_t runs, total = 0, over = (uint64_t)get_zz(r, "histogram count");
	uint64_t *b = cp->hist->buckets;
	uint32_t at = 0, n = 0;

	cp->s += (uint64_t)get_zz(r, "histogram sum");
	runs = get_uv(r, "histogram runs");
	if (runs > HIST_BUCKETS) {
		r->bad = "histogram runs";
		return 0;
	}
	/* the runs, read against the point before's buckets */
	for (uint64_t i = 0; i < runs && !r->bad; i++) {
		if (next_bucket(r, i, &at))
			return 0;
		cp->runs[i].index = at;
		if (cp->hmode == HIST_RAW)
			cp->runs[i].count = get_uv(r, "histogram bucket count");
		else	/* a difference from the point before's bucket */
			cp->runs[i].count = b[at] + (uint64_t)get_zz(r, "histogram bucket count");
	}
	if (r->bad)
		return 0;
	if (cp->hmode == HIST_CHANGED) {
		/* the buckets not written are the point before's: merge the two lists */
		uint32_t j = 0, k = 0;

		total = cp->total;
		for (uint64_t i = 0; i < runs; i++) {
			total += cp->runs[i].count - b[cp->runs[i].index];
			b[cp->runs[i].index] = cp->runs[i].count;
		}
		while (j < cp->nnz || k < runs) {
			uint32_t x = k == runs || (j < cp->nnz && cp->nz[j] < cp->runs[k].index) ?
				     cp->nz[j++] : cp->runs[k++].index;

			if (j < cp->nnz && cp->nz[j] == x)
				j++;	/* in both */
			if (b[x])
				cp->nz_next[n++] = x;
		}
	} else {
		/* the buckets written are the point's all: the rest are empty */
		for (uint32_t j = 0; j < cp->nnz; j++)
			b[cp->nz[j]] = 0;
		for (uint64_t i = 0; i < runs; i++) {
			b[cp->runs[i].index] = cp->runs[i].count;
			total += cp->runs[i].count;
			if (cp->runs[i].count)
				cp->nz_next[n++] = cp->runs[i].index;
		}
	}
	{
		uint32_t *t = cp->nz;

		cp->nz = cp->nz_next;
		cp->nz_next = t;
		cp->nnz = n;
	}
	cp->total = total;
	cp->hist->count = total + over;
	cp->hist->sum = cp->s;
	if (!out)
		return 0;
	*out = malloc(sizeof(**out) + n * sizeof((*out)->runs[0]));
	if (!*out)
		return -ENOMEM;
	(*out)->count = cp->hist->count;
	(*out)->sum = cp->hist->sum;
	(*out)->nruns = n;
	for (uint32_t i = 0; i < n; i++)
		(*out)->runs[i] = (struct hist_run){ cp->nz[i], b[cp->nz[i]] };
	return 0;
}

/* One point's value of a series of kind into x.  0, or < 0 (out of memory). */
static int get_value(struct reader *r, uint8_t kind, struct series *x, int skipped,
		     struct column_prev *cp)
{
	switch (kind) {
	case SERIES_COUNTER:
		cp->i += (uint64_t)get_zz(r, "counter increase");
		cp->v += cp->i + (uint64_t)get_zz(r, "counter value");
		x->counter.increase = cp->i;
		x->counter.value = cp->v;
		return 0;
	case SERIES_GAUGE:
		get_gauge(r, &x->gauge, cp);
		return 0;
	default:	/* histograms: get_hist */
		(void)skipped;
		return -EINVAL;
	}
}

/* Past a label list, checked as get_labels checks it, nothing kept. */
static void skip_labels(struct reader *r, const char *what)
{
	uint64_t n = get_uv(r, what);
	char buf[SNAPSHOT_MAX_STR + 1];

	if (!r->bad && n > SNAPSHOT_MAX_LABELS)
		r->bad = what;
	for (uint64_t i = 0; i < 2 * n && !r->bad; i++)
		get_str(r, what, buf);
}

/*
 * Past k varints: each ends at its first byte under 0x80, so they are
 * counted eight bytes at a time, not decoded.  What a varint holds is not
 * checked (nor that it fits 64 bits): the bytes skipped are never used.
 */
static void skip_varints(struct reader *r, uint64_t k, const char *what)
{
	const uint8_t *p = r->p;

	while (k && r->end - p >= 8) {
		uint64_t w, ends;
		unsigned n;

		memcpy(&w, p, 8);
		ends = ~w & 0x8080808080808080ULL;	/* the last byte of each varint */
		/* one bit a byte at most: a multiply sums them into the top byte
		 * (popcount is a libgcc call on the x86-64 baseline) */
		n = (unsigned)(((ends >> 7) * 0x0101010101010101ULL) >> 56);
		if (n >= k)	/* the k-th ends in these 8 bytes, maybe before their end */
			break;
		k -= n;
		p += 8;
	}
	while (k && p < r->end)
		k -= !(*p++ & 0x80);
	if (k) {
		if (!r->bad)
			r->bad = what;
		return;
	}
	r->p = p;
}

/* Past the present points' values of a column not built (np points). */
static void skip_values(struct reader *r, uint8_t kind, const struct column_prev *cp,
			uint64_t np)
{
	switch (kind) {
	case SERIES_COUNTER:
		skip_varints(r, 2 * np, "counter value");	/* increase, value */
		return;
	case SERIES_GAUGE:
		if (cp->k != GAUGE_RAW) {
			skip_varints(r, 5 * np, "gauge value");	/* n, last, min, max, sum */
			return;
		}
		for (uint64_t i = 0; i < np && !r->bad; i++) {
			get_uv(r, "gauge n");
			if (!r->bad && r->end - r->p < 32)
				r->bad = "gauge value";
			else if (!r->bad)
				r->p += 32;
		}
		return;
	default:
		for (uint64_t i = 0; i < np && !r->bad; i++) {
			uint64_t runs;

			skip_varints(r, 2, "histogram count");	/* count, sum */
			runs = get_uv(r, "histogram runs");
			if (runs > HIST_BUCKETS && !r->bad)
				r->bad = "histogram runs";
			skip_varints(r, 2 * runs, "histogram bucket");	/* gap, count */
		}
	}
}

/* A column's header after its name and labels: kind, presence, mode or scale. */
static int get_column_head(struct reader *r, size_t n, uint8_t *kind, uint8_t *bits,
			   size_t size, struct column_prev *cp, int build)
{
	*kind = get_u8(r, "series kind");
	if (*kind > SERIES_HISTOGRAM)
		return -EINVAL;
	get_presence(r, n, bits, size);
	cp->hmode = HIST_DELTA;
	if (*kind == SERIES_HISTOGRAM) {
		if (build) {
			cp->hist = calloc(1, sizeof(*cp->hist));
			cp->nz = malloc(2 * HIST_BUCKETS * sizeof(*cp->nz));
			cp->runs = malloc(HIST_BUCKETS * sizeof(*cp->runs));
			if (!cp->hist || !cp->nz || !cp->runs)
				return -ENOMEM;
			cp->nz_next = cp->nz + HIST_BUCKETS;
		}
		cp->hmode = get_u8(r, "histogram mode");
		if (cp->hmode != HIST_DELTA && cp->hmode != HIST_RAW &&
		    (cp->hmode != HIST_CHANGED || r->version < 2) && !r->bad)
			r->bad = "histogram mode";
	}
	if (*kind == SERIES_GAUGE) {
		cp->k = get_u8(r, "gauge scale");
		if (cp->k != GAUGE_RAW && cp->k > 32 && !r->bad)
			r->bad = "gauge scale";
	}
	return 0;
}

/* Which series decode_plain builds: NULL want, all of them. */
struct series_pick {
	chunk_series_cb want;
	void *arg;
};

/*
 * A column pick does not build: read past, each point counted (npresent,
 * the limits), its values' varints counted rather than decoded, nothing
 * allocated.  A decode that builds the column checks what it holds.
 */
static int skip_column(struct reader *r, size_t n, const char *name, uint32_t *npresent,
		       size_t *values, size_t *hists, char *err, size_t errlen)
{
	uint8_t kind, bits[(CHUNK_MAX_POINTS + 7) / 8];
	struct column_prev cp = { 0 };
	uint64_t np = 0;

	skip_labels(r, "series labels");
	if (r->bad)
		return fail(err, errlen, -EINVAL, "%s: labels malformed", name);
	if (get_column_head(r, n, &kind, bits, sizeof(bits), &cp, 0))
		return fail(err, errlen, -EINVAL, "%s: kind %u unknown", name, kind);
	for (size_t p = 0; p < n && !r->bad; p++) {
		if (!(bits[p / 8] & (1u << (p % 8))))
			continue;
		if (++*values > CHUNK_MAX_VALUES ||
		    (kind == SERIES_HISTOGRAM && ++*hists > CHUNK_MAX_HIST_POINTS))
			return fail(err, errlen, -E2BIG, "more than %u values", CHUNK_MAX_VALUES);
		npresent[p]++;
		np++;
	}
	skip_values(r, kind, &cp, np);
	if (r->bad)
		return fail(err, errlen, -EINVAL, "%s: %s malformed or truncated", name, r->bad);
	return 0;
}

static void column_prev_free(struct column_prev *cp)
{
	free(cp->hist);
	free(cp->nz < cp->nz_next ? cp->nz : cp->nz_next);	/* one block, swapped around */
	free(cp->runs);
}

static int get_column(struct reader *r, struct snapshot *pts, size_t n, const uint8_t *want,
		      const struct series_pick *pick, uint32_t *npresent, size_t *values,
		      size_t *hists, char *err, size_t errlen)
{
	struct series skipped;	/* the values of a point not asked for, read and dropped */
	const struct series *proto = NULL;	/* the column's first series built */
	char name[SNAPSHOT_MAX_STR + 1];
	struct label_set ls;
	uint8_t kind, bits[(CHUNK_MAX_POINTS + 7) / 8];
	struct column_prev cp = { 0 };
	int ret;

	if (!get_str(r, "series name", name))
		return fail(err, errlen, -EINVAL, "series %zu's name is malformed", *values);
	if (pick->want && !pick->want(name, pick->arg))
		return skip_column(r, n, name, npresent, values, hists, err, errlen);
	ret = get_labels(r, "series labels", &ls);
	if (ret) {
		labels_release(&ls);
		return ret == -ENOMEM ? fail(err, errlen, ret, "out of memory") :
			fail(err, errlen, ret, "%s: labels malformed", name);
	}
	ret = get_column_head(r, n, &kind, bits, sizeof(bits), &cp, 1);
	if (ret) {
		column_prev_free(&cp);
		labels_release(&ls);
		return ret == -ENOMEM ? fail(err, errlen, ret, "out of memory") :
			fail(err, errlen, ret, "%s: kind %u unknown", name, kind);
	}
	for (size_t p = 0; p < n && !r->bad && !ret; p++) {
		struct hist_sparse *sp = NULL;
		struct series *x = &skipped;

		if (!(bits[p / 8] & (1u << (p % 8))))
			continue;
		if (++*values > CHUNK_MAX_VALUES ||
		    (kind == SERIES_HISTOGRAM && ++*hists > CHUNK_MAX_HIST_POINTS)) {
			ret = fail(err, errlen, -E2BIG, "more than %u values", CHUNK_MAX_VALUES);
			break;
		}
		npresent[p]++;
		if (kind == SERIES_HISTOGRAM) {
			/* read into the column's state; a point built gets its compact form */
			if (get_hist(r, &cp, want[p] ? &sp : NULL)) {
				ret = fail(err, errlen, -ENOMEM, "out of memory");
				break;
			}
			if (!want[p] || r->bad) {
				free(sp);
				continue;
			}
			if (!proto) {
				x = snapshot_add_sparse(&pts[p], name, ls.l, ls.n, sp);
			} else if ((x = snapshot_add_like(&pts[p], proto))) {
				x->sparse = sp;
			} else {
				free(sp);
			}
		} else if (want[p]) {
			x = proto ? snapshot_add_like(&pts[p], proto) :
			    snapshot_add_labels(&pts[p], name, (enum series_kind)kind, ls.l, ls.n);
		} else {
			memset(&skipped, 0, sizeof(skipped));
		}
		if (!x) {
			ret = fail(err, errlen, -EINVAL, "series %s not valid in point %zu", name, p);
			break;
		}
		/*
		 * the column's later points copy the first one's identity: its
		 * strings, id and hash (pts[p] gets no other series meanwhile,
		 * so the pointer holds)
		 */
		if (!proto && x != &skipped)
			proto = x;
		if (kind != SERIES_HISTOGRAM && get_value(r, kind, x, x == &skipped, &cp))
			ret = fail(err, errlen, -ENOMEM, "out of memory");
	}
	column_prev_free(&cp);
	labels_release(&ls);
	if (!ret && r->bad)
		return fail(err, errlen, -EINVAL, "%s: %s malformed or truncated", name, r->bad);
	return ret;
}

/*
 * Put the points put_orders names back in their own order of series (the
 * points asked for: the others' orders are read and dropped).
 */
static int get_orders(struct reader *r, struct snapshot *pts, size_t n, const uint8_t *want,
		      const uint32_t *npresent, int reorder)
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
			if (want[p] && reorder)
				tmp[i] = pts[p].series[k];
		}
		if (want[p] && reorder)
			memcpy(pts[p].series, tmp, ns * sizeof(*tmp));
	}
	ret = 0;
out:
	free(tmp);
	free(seen);
	return ret;
}

static int decode_plain(const uint8_t *buf, size_t len, uint64_t from_ms, uint64_t to_ms,
			const struct series_pick *pick, struct snapshot **out, size_t *nout,
			char *err, size_t errlen)
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

	if (len < 4 || memcmp(buf, chunk_magic, 3))
		return fail(err, errlen, -EINVAL, "not a chunk (bad magic)");
	if (buf[3] < 1 || buf[3] > CHUNK_VERSION)
		return fail(err, errlen, -EINVAL,
			    "version %u, this reader knows 1 to %u (a newer writer: upgrade the "
			    "reader)", buf[3], CHUNK_VERSION);
	r.version = buf[3];
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
		if (!want[p])
			continue;
		ret = snapshot_set_labels(&pts[p], sets[s].l, sets[s].n);
		if (ret == -ENOMEM)
			goto out;
		if (ret)
			goto malformed;
	}
	nseries = get_uv(&r, "series count");
	if (r.bad || nseries > SNAPSHOT_MAX_SERIES)
		goto malformed;
	for (uint64_t i = 0; i < nseries; i++) {
		ret = get_column(&r, pts, n, want, pick, npresent, &values, &hists, err, errlen);
		if (ret)
			goto out_err;
	}
	/* a point's own order is of all its series: a pick keeps the span's */
	ret = get_orders(&r, pts, n, want, npresent, !pick->want);
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
	return chunk_decode_select(buf, len, compact, from_ms, to_ms, NULL, NULL, pts, n, err,
				   errlen);
}

int chunk_decode_select(const void *buf, size_t len, int compact, uint64_t from_ms,
			uint64_t to_ms, chunk_series_cb want, void *arg, struct snapshot **pts,
			size_t *n, char *err, size_t errlen)
{
	struct series_pick pick = { want, arg };
	char zerr[160];
	void *plain;
	size_t size;
	int ret;

	/* the thread's kept decompression context: making one costs more than a chunk */
	ret = snapshot_zstd_unpack(buf, len, CHUNK_MAX_BYTES, &plain, &size, zerr, sizeof(zerr));
	if (ret)
		return fail(err, errlen, ret, "%s", zerr);
	ret = decode_plain(plain, size, from_ms, to_ms, &pick, pts, n, err, errlen);
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
