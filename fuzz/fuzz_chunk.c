/*
 * fuzz_chunk.c - libFuzzer target for chunk_decode(), the parser of the
 * rollup tiers' chunks as they come back from Redis (model/chunk.h).
 *
 * The first byte picks what the rest is: odd, a chunk as stored (a zstd
 * frame); even, the columns inside one, compressed here first, so that the
 * fuzzer reaches the column parser instead of zstd's checks.  What decodes
 * must decode the same with compact histograms and, for a range of its
 * points, to those points, and with a pick of its series, to those series;
 * and encode again (or be refused, never crash) to a chunk that decodes to
 * the same points.  Through the queries' chunk cache (store/chunk_cache.h,
 * a small one that evicts) it answers the same, whole and picked, on the
 * miss that decodes it and on the hit after, and fails where decoding does.
 * And as a query takes a chunk's points lent (columns_push_run, no
 * snapshot each), they read back as pushed ones do, and stay unchanged.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <errno.h>

#include "model/chunk.h"
#include "rules/lang/columns.h"
#include "store/chunk_cache.h"

/*
 * Twice through the cache (a miss, then a hit unless evicted): the points
 * of a plain decode (want: ret 0 and pts/n), or its failure.
 */
static void check_cache(const char *buf, size_t len, chunk_series_cb pick, const char *key,
			int want, const struct snapshot *pts, size_t n)
{
	static struct chunk_cache *cc;
	char err[256];

	if (!cc && !(cc = chunk_cache_new(256 << 10)))
		return;
	for (int i = 0; i < 2; i++) {
		struct snapshot *p;
		size_t np;
		int ret = chunk_cache_decode(cc, "h", key, buf, len, 1, 0, UINT64_MAX, pick, NULL,
					     &p, &np, err, sizeof(err));

		if (ret == -ENOMEM || want == -ENOMEM)
			return;
		if ((ret == 0) != (want == 0))
			abort();
		if (ret)
			continue;
		if (np != n)
			abort();
		for (size_t k = 0; k < np; k++)
			if (!snapshot_equal(&p[k], &pts[k]))
				abort();
		chunk_points_free(p, np);
	}
}

/* A pick of about half the columns: those whose names are of even length. */
static int even_names(const char *name, void *arg)
{
	(void)arg;
	return strlen(name) % 2 == 0;
}

/*
 * What decodes whole decodes with a pick too (a pick reads past the rest,
 * checked alike), each point holding exactly the picked series of the
 * whole one, equal to them.
 */
static void check_pick(const char *buf, size_t len, const struct snapshot *a, size_t na)
{
	struct snapshot *p;
	size_t np;
	char err[256];
	int ret = chunk_decode_select(buf, len, 1, 0, UINT64_MAX, even_names, NULL, &p, &np, err,
				      sizeof(err));

	if (ret == -ENOMEM)
		return;
	if (ret || np != na)
		abort();
	check_cache(buf, len, even_names, "even", 0, p, np);
	for (size_t i = 0; i < np; i++) {
		uint32_t k = 0;

		for (uint32_t j = 0; j < a[i].nseries; j++) {
			if (!even_names(a[i].series[j].name, NULL))
				continue;
			/* in the span's order, not the point's: look it up */
			for (k = 0; k < p[i].nseries; k++)
				if (series_equal(&p[i].series[k], &a[i].series[j]))
					break;
			if (k == p[i].nseries)
				abort();
		}
		for (k = 0; k < p[i].nseries; k++)
			if (!even_names(p[i].series[k].name, NULL))
				abort();
	}
	chunk_points_free(p, np);
}

/* The column of y (its identity) in c, or -1. */
static long same_column(const struct columns *c, const struct series *y)
{
	for (uint32_t k = 0; k < c->ncol; k++)
		if (c->col[k].def.kind == y->kind && snapshot_same_series(&c->col[k].def, y))
			return (long)k;
	return -1;
}

/*
 * Compact points pts[0..n) as a run (columns_push_run) and pushed one by
 * one as copies: refused only when they do not rise, else every point
 * holds the same values in both; pts unchanged.
 */
static void check_run(const struct snapshot *pts, size_t n)
{
	struct columns ran, pushed;
	struct snapshot newest, copy;
	int rising = n > 0, ret;

	for (size_t i = 1; i < n; i++)
		rising &= pts[i].ts_ms > pts[i - 1].ts_ms;
	if (!n || snapshot_copy(&newest, &pts[n - 1]))
		return;
	columns_init(&ran);
	columns_init(&pushed);
	ret = columns_push_run(&ran, pts, n, &newest, 3600000, NULL);
	if (ret == -ENOMEM)
		goto out;
	if ((ret == 0) != rising)
		abort();
	if (ret)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (snapshot_copy(&copy, &pts[i]) || columns_push(&pushed, &copy, 3600000, NULL))
			goto out;
	}
	if (columns_len(&ran) != columns_len(&pushed) || ran.ncol != pushed.ncol)
		abort();
	for (uint32_t k = 0; k < ran.ncol; k++) {
		long q = same_column(&pushed, &ran.col[k].def);

		if (q < 0)
			abort();
		for (size_t i = 0; i < columns_len(&ran); i++) {
			struct histogram h1, h2;

			if (columns_ts(&ran, i) != columns_ts(&pushed, i) ||
			    columns_has(&ran, k, i) != columns_has(&pushed, (uint32_t)q, i))
				abort();
			if (!columns_has(&ran, k, i))
				continue;
			if (ran.col[k].def.kind == SERIES_HISTOGRAM) {
				if (columns_hist(&ran, k, i, &h1) ||
				    columns_hist(&pushed, (uint32_t)q, i, &h2) || !hist_equal(&h1, &h2))
					abort();
			} else if (columns_counter(&ran, k, i) !=
				   columns_counter(&pushed, (uint32_t)q, i)) {
				abort();	/* a gauge's double, bit for bit */
			}
		}
	}
out:
	columns_free(&ran);
	columns_free(&pushed);
}

static void check(const char *buf, size_t len)
{
	struct snapshot *a, *b, *c;
	size_t na, nb, nc, elen;
	char err[256], *enc;
	int ra, rb;

	ra = chunk_decode(buf, len, 0, &a, &na, err, sizeof(err));
	rb = chunk_decode(buf, len, 1, &b, &nb, err, sizeof(err));
	check_cache(buf, len, NULL, NULL, rb, b, nb);
	if ((ra == 0) != (rb == 0) && ra != -ENOMEM && rb != -ENOMEM)
		abort();
	if (ra == 0 && rb == 0) {
		if (na != nb)
			abort();
		/* a range of it: the same points as the whole */
		if (na > 2) {
			if (chunk_decode_range(buf, len, 1, a[1].ts_ms, a[na - 2].ts_ms, &c, &nc, err,
					       sizeof(err)) == 0) {
				if (nc != na - 2)
					abort();
				for (size_t i = 0; i < nc; i++)
					if (!snapshot_equal(&c[i], &a[i + 1]))
						abort();
				chunk_points_free(c, nc);
			}
		}
		for (size_t i = 0; i < na; i++)
			if (!snapshot_equal(&a[i], &b[i]))
				abort();
		check_pick(buf, len, b, nb);
		check_run(b, nb);
		for (size_t i = 0; i < nb; i++)
			if (!snapshot_equal(&a[i], &b[i]))
				abort();	/* the run left them as they were */
		if (chunk_encode(a, na, &enc, &elen) == 0) {
			if (chunk_decode(enc, elen, 0, &c, &nc, err, sizeof(err)) || nc != na)
				abort();
			for (size_t i = 0; i < na; i++)
				if (!snapshot_equal(&a[i], &c[i]))
					abort();
			chunk_points_free(c, nc);
			free(enc);
		}
	}
	if (ra == 0)
		chunk_points_free(a, na);
	if (rb == 0)
		chunk_points_free(b, nb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	if (data[0] & 1) {
		check((const char *)data + 1, size - 1);
	} else {
		size_t cap = ZSTD_compressBound(size - 1);
		char *z = malloc(cap);

		if (!z)
			return 0;
		cap = ZSTD_compress(z, cap, data + 1, size - 1, 1);
		if (!ZSTD_isError(cap))
			check(z, cap);
		free(z);
	}
	return 0;
}
