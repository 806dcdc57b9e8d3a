/*
 * chunk_column.c - one series' column of a chunk read back into the points
 * that have it (chunk_get_column, chunk_reader.h): its presence bitmap and
 * values, each a difference from the point before's; a column nobody asked
 * for is counted and skipped, not decoded.  The frame around the columns
 * is chunk_decode.c; the format is documented in chunk.h.
 */
#include "model/chunk_reader.h"

#include <math.h>

#include "model/chunk_internal.h"
#include "model/histogram.h"

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

int chunk_get_column(struct reader *r, struct snapshot *pts, size_t n, const uint8_t *want,
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
