/*
 * test_chunk_cache.c - ended chunks kept decoded (store/chunk_cache.h):
 * what a hit hands out is what decoding the chunk gives, for any range,
 * pick and histogram form; a different chunk, host or pick is never served
 * another's points; the bound holds; threads sharing one cache while it
 * evicts get right answers.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/chunk.h"
#include "model/snapshot.h"
#include "store/chunk_cache.h"

#define T0 1796166000000ULL	/* a minute's start */

/*
 * A minute of one host's 1 s snapshots from `seed`: a counter, two
 * gauges, a histogram in some points only, one series that appears late.
 */
static void build_minute(struct snapshot *pts, size_t n, uint64_t seed, const char *host)
{
	for (size_t p = 0; p < n; p++) {
		struct snapshot *s = &pts[p];
		struct series *x;

		cr_assert_eq(snapshot_init(s, host, T0 + 1000 * (p + 1), 1000, seed + p, 1), 0);
		cr_assert_eq(snapshot_set_label(s, "rack", "r7"), 0);
		x = snapshot_add_counter(s, "tcp.in_csum_errors", seed * 1000 + p * 3, NULL);
		cr_assert_not_null(x);
		x->counter.increase = 3;
		cr_assert_not_null(snapshot_add_gauge(s, "cpu.utilization",
						      (double)((seed + p) % 100) / 100, "cpu", "0",
						      NULL));
		cr_assert_not_null(snapshot_add_gauge(s, "cpu.utilization",
						      (double)((seed * 7 + p) % 100) / 100, "cpu",
						      "1", NULL));
		if (p % 3) {
			x = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda",
					 NULL);
			cr_assert_not_null(x);
			hist_reset(x->hist);
			hist_record_n(x->hist, 1000000 + 1000 * (seed % 50) + p, 5 + p % 4);
			hist_record(x->hist, 40000000);
		}
		if (p >= 40)
			cr_assert_not_null(snapshot_add_counter(s, "late.one", p, NULL));
	}
}

static void *encode_minute(uint64_t seed, const char *host, size_t *len)
{
	struct snapshot pts[60];
	char *buf;

	build_minute(pts, 60, seed, host);
	cr_assert_eq(chunk_encode(pts, 60, &buf, len), 0);
	for (size_t p = 0; p < 60; p++)
		snapshot_free(&pts[p]);
	return buf;
}

static int picks_cpu(const char *name, void *arg)
{
	(void)arg;
	return !strcmp(name, "cpu.utilization");
}

static int picks_hist(const char *name, void *arg)
{
	(void)arg;
	return !strcmp(name, "block.latency");
}

/* What the cache hands out equals a plain decode of the same arguments. */
static void same_as_decode(struct chunk_cache *cc, const char *host, const void *buf, size_t len,
			   int compact, uint64_t from, uint64_t to, chunk_series_cb want,
			   const char *key)
{
	struct snapshot *a, *b;
	size_t na, nb;
	char err[256];

	cr_assert_eq(chunk_decode_select(buf, len, compact, from, to, want, NULL, &a, &na, err,
					 sizeof(err)), 0, "%s", err);
	cr_assert_eq(chunk_cache_decode(cc, host, key, buf, len, compact, from, to, want, NULL,
					&b, &nb, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(nb, na, "[%llu, %llu] pick %s: %zu points, decoding gives %zu",
		     (unsigned long long)(from - T0), (unsigned long long)(to - T0),
		     key ? key : "-", nb, na);
	for (size_t i = 0; i < na; i++) {
		cr_assert(snapshot_equal(&b[i], &a[i]), "point %zu of [%llu, %llu] pick %s", i,
			  (unsigned long long)(from - T0), (unsigned long long)(to - T0),
			  key ? key : "-");
		for (uint32_t k = 0; want && k < b[i].nseries; k++)
			cr_assert(want(b[i].series[k].name, NULL), "%s not picked",
				  b[i].series[k].name);
	}
	chunk_points_free(a, na);
	chunk_points_free(b, nb);
}

/*
 * Ranges inside, across and outside the chunk, whole and picked, compact
 * and dense: the miss that decodes and keeps, and every hit after it,
 * answer as decoding does.
 */
Test(chunk_cache, a_hit_answers_as_decoding_does)
{
	struct chunk_cache *cc = chunk_cache_new(64 << 20);
	struct chunk_cache_stats st;
	uint64_t ranges[][2] = { { 0, UINT64_MAX }, { T0 + 1000, T0 + 60000 },
				 { T0 + 10500, T0 + 20000 }, { T0 + 60000, T0 + 60000 },
				 { T0 + 61000, UINT64_MAX }, { 0, T0 + 999 },
				 { T0 + 30000, T0 + 29000 } };
	size_t len, nr = sizeof(ranges) / sizeof(ranges[0]);
	void *buf = encode_minute(3, "web-1", &len);

	for (int round = 0; round < 2; round++)
		for (size_t r = 0; r < nr; r++)
			for (int compact = 0; compact < 2; compact++) {
				same_as_decode(cc, "web-1", buf, len, compact, ranges[r][0],
					       ranges[r][1], NULL, NULL);
				same_as_decode(cc, "web-1", buf, len, compact, ranges[r][0],
					       ranges[r][1], picks_cpu, "cpu");
				same_as_decode(cc, "web-1", buf, len, compact, ranges[r][0],
					       ranges[r][1], picks_hist, "hist");
			}
	chunk_cache_stats(cc, &st);
	/* one decode per (compact, pick): everything else was a hit */
	cr_assert_eq(st.misses, 6);
	cr_assert_eq(st.hits, 2 * nr * 6 - 6);
	cr_assert_eq(st.entries, 6);
	cr_assert_leq(st.bytes, st.max_bytes);
	free(buf);
	chunk_cache_free(cc);
}

/*
 * Another chunk (one value differs: the same length, mostly the same
 * bytes), another host's copy of the same bytes, another pick: each is
 * its own entry, never served the first one's points.
 */
Test(chunk_cache, another_chunk_host_or_pick_is_never_served_the_first_ones_points)
{
	struct chunk_cache *cc = chunk_cache_new(64 << 20);
	struct chunk_cache_stats st;
	size_t la, lb;
	void *a = encode_minute(5, "web-1", &la), *b = encode_minute(6, "web-1", &lb);

	same_as_decode(cc, "web-1", a, la, 1, 0, UINT64_MAX, NULL, NULL);
	same_as_decode(cc, "web-1", b, lb, 1, 0, UINT64_MAX, NULL, NULL);
	same_as_decode(cc, "web-1", a, la, 1, 0, UINT64_MAX, picks_cpu, "cpu");
	same_as_decode(cc, "web-1", a, la, 1, 0, UINT64_MAX, picks_hist, "hist");
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.misses, 4);
	cr_assert_eq(st.hits, 0);
	/* the same bytes filed under another host: its own entry, its points as they decode */
	same_as_decode(cc, "web-2", a, la, 1, 0, UINT64_MAX, NULL, NULL);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.misses, 5);
	/*
	 * a chunk differing from a kept one in one byte alone, anywhere
	 * (whether the lookup's hash reads that byte or not): a miss, never
	 * the kept chunk's points
	 */
	for (size_t at = 4; at < la; at += 7) {
		uint8_t *c = malloc(la);
		struct snapshot *pts;
		size_t n;
		char err[256];

		memcpy(c, a, la);
		c[at] ^= 0x40;
		if (!chunk_cache_decode(cc, "web-1", NULL, c, la, 1, 0, UINT64_MAX, NULL, NULL,
					&pts, &n, err, sizeof(err)))
			chunk_points_free(pts, n);
		chunk_cache_stats(cc, &st);
		cr_assert_eq(st.hits, 0, "byte %zu of %zu changed: served the kept chunk's points",
			     at, la);
		free(c);
	}
	free(a);
	free(b);
	chunk_cache_free(cc);
}

/* Bytes that do not decode are the decoder's error, and nothing is kept. */
Test(chunk_cache, a_chunk_that_does_not_decode_is_an_error_and_not_kept)
{
	struct chunk_cache *cc = chunk_cache_new(1 << 20);
	struct chunk_cache_stats st;
	struct snapshot *pts;
	size_t n, len;
	char err[256];
	void *buf = encode_minute(1, "web-1", &len);

	for (int i = 0; i < 2; i++) {
		cr_assert_neq(chunk_cache_decode(cc, "web-1", NULL, buf, len / 2, 1, 0, UINT64_MAX,
						 NULL, NULL, &pts, &n, err, sizeof(err)), 0);
		cr_assert(strstr(err, "chunk"), "%s", err);
		cr_assert_neq(chunk_cache_decode(cc, "web-1", NULL, "garbage", 7, 1, 0, UINT64_MAX,
						 NULL, NULL, &pts, &n, err, sizeof(err)), 0);
	}
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.entries, 0);
	cr_assert_eq(st.bytes, 0);
	cr_assert_eq(st.hits, 0);
	free(buf);
	chunk_cache_free(cc);
}

/*
 * Within the bound: the least recently used go first, the bytes never
 * exceed it, and a chunk over an eighth of it is answered, not kept.
 */
Test(chunk_cache, the_bound_holds_and_the_least_recently_used_go_first)
{
	struct chunk_cache *probe = chunk_cache_new(64 << 20), *cc;
	struct chunk_cache_stats st;
	void *bufs[12];
	size_t lens[12], one;

	for (int i = 0; i < 12; i++)
		bufs[i] = encode_minute(100 + i, "web-1", &lens[i]);
	/* what one entry costs, to size a cache of about ten */
	same_as_decode(probe, "web-1", bufs[0], lens[0], 1, 0, UINT64_MAX, NULL, NULL);
	chunk_cache_stats(probe, &st);
	one = st.bytes;
	cr_assert_gt(one, lens[0], "an entry counts its points, not just its bytes");
	chunk_cache_free(probe);

	cc = chunk_cache_new(one * 10 + one / 2);
	for (int i = 0; i < 12; i++) {
		same_as_decode(cc, "web-1", bufs[i], lens[i], 1, 0, UINT64_MAX, NULL, NULL);
		chunk_cache_stats(cc, &st);
		cr_assert_leq(st.bytes, st.max_bytes, "after chunk %d", i);
		/* keep chunk 0 in use: it must outlive the ones after it */
		same_as_decode(cc, "web-1", bufs[0], lens[0], 1, T0, T0 + 5000, NULL, NULL);
	}
	chunk_cache_stats(cc, &st);
	cr_assert_gt(st.evictions, 0);
	cr_assert_eq(st.too_large, 0);
	/* chunk 0 was used last of all: still there; chunk 1, the oldest untouched, went */
	{
		uint64_t hits = st.hits, misses = st.misses;

		same_as_decode(cc, "web-1", bufs[0], lens[0], 1, 0, UINT64_MAX, NULL, NULL);
		chunk_cache_stats(cc, &st);
		cr_assert_eq(st.hits, hits + 1, "the most recently used is kept");
		same_as_decode(cc, "web-1", bufs[1], lens[1], 1, 0, UINT64_MAX, NULL, NULL);
		chunk_cache_stats(cc, &st);
		cr_assert_eq(st.misses, misses + 1, "the least recently used went first");
	}
	chunk_cache_free(cc);

	/* a bound of four entries: each chunk is over an eighth of it */
	cc = chunk_cache_new(one * 4);
	same_as_decode(cc, "web-1", bufs[2], lens[2], 1, T0 + 3000, T0 + 9000, NULL, NULL);
	same_as_decode(cc, "web-1", bufs[2], lens[2], 1, 0, UINT64_MAX, NULL, NULL);
	chunk_cache_stats(cc, &st);
	cr_assert_eq(st.too_large, 2);
	cr_assert_eq(st.entries, 0);
	cr_assert_eq(st.hits, 0);
	chunk_cache_free(cc);
	for (int i = 0; i < 12; i++)
		free(bufs[i]);
}

#define NCHUNKS 24

struct worker {
	struct chunk_cache *cc;
	void **bufs;
	size_t *lens;
	struct snapshot **want;	/* per chunk: its whole decode */
	size_t *nwant;
	int id, wrong;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(w->id + 1);

	for (int it = 0; it < 400; it++) {
		struct snapshot *pts;
		size_t n, c, lo;
		char err[256];

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		c = x % NCHUNKS;
		lo = (x >> 8) % 60;
		if (chunk_cache_decode(w->cc, "web-1", NULL, w->bufs[c], w->lens[c], 1,
				       T0 + 1000 * (lo + 1), T0 + 1000 * (lo + 10), NULL, NULL,
				       &pts, &n, err, sizeof(err))) {
			w->wrong++;
			continue;
		}
		if (n != (lo + 10 <= 60 ? 10 : 60 - lo))
			w->wrong++;
		for (size_t i = 0; i < n; i++)
			if (!snapshot_equal(&pts[i], &w->want[c][lo + i]))
				w->wrong++;
		chunk_points_free(pts, n);
	}
	return NULL;
}

/*
 * Four threads on one cache that holds ten of the 24 chunks they ask
 * for: entries are let go while others copy out of them, and every answer
 * is still the chunk's.
 */
Test(chunk_cache, threads_sharing_a_cache_that_evicts_get_right_answers, .timeout = 120)
{
	struct chunk_cache *probe = chunk_cache_new(64 << 20), *cc;
	struct chunk_cache_stats st;
	struct snapshot *want[NCHUNKS];
	size_t nwant[NCHUNKS], lens[NCHUNKS];
	void *bufs[NCHUNKS];
	struct worker w[4];
	pthread_t t[4];
	char err[256];

	for (int i = 0; i < NCHUNKS; i++) {
		bufs[i] = encode_minute(200 + i, "web-1", &lens[i]);
		cr_assert_eq(chunk_decode_select(bufs[i], lens[i], 1, 0, UINT64_MAX, NULL, NULL,
						 &want[i], &nwant[i], err, sizeof(err)), 0);
		cr_assert_eq(nwant[i], 60);
	}
	same_as_decode(probe, "web-1", bufs[0], lens[0], 1, 0, UINT64_MAX, NULL, NULL);
	chunk_cache_stats(probe, &st);
	chunk_cache_free(probe);
	cc = chunk_cache_new(st.bytes * 10 + st.bytes / 2);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ cc, bufs, lens, want, nwant, i, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(w[i].wrong, 0, "thread %d: %d wrong answers", i, w[i].wrong);
	}
	chunk_cache_stats(cc, &st);
	cr_assert_gt(st.evictions, 0, "the test must evict to mean anything");
	cr_assert_gt(st.hits, 0);
	cr_assert_leq(st.bytes, st.max_bytes);
	chunk_cache_free(cc);
	for (int i = 0; i < NCHUNKS; i++) {
		chunk_points_free(want[i], nwant[i]);
		free(bufs[i]);
	}
}
