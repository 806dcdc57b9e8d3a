/*
 * chunk_decode.c - reading a chunk back: whole (chunk_decode), a time range
 * of it (chunk_decode_range) or some of its series (chunk_decode_select);
 * see chunk.h.  This file reads the frame (header, points, label sets,
 * orders); each series' column is chunk_column.c's.  Every field is checked
 * against what is left of the buffer: a chunk is outside input.
 */
#include "model/chunk_reader.h"

#include <inttypes.h>

#include "model/chunk_internal.h"
#include "model/snapshot_zstd.h"

void chunk_points_free(struct snapshot *pts, size_t n)
{
	for (size_t p = 0; pts && p < n; p++)
		snapshot_free(&pts[p]);
	free(pts);
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
		ret = chunk_get_column(&r, pts, n, want, pick, npresent, &values, &hists, err, errlen);
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
