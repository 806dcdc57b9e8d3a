/*
 * test_chunk.c - spans of rollups as columns (model/chunk.h): every value
 * back to the bit through random and adversarial spans, refusal of what
 * cannot be held exactly, and hostile bytes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "core/config.h"
#include "core/strmap.h"
#include "model/catalog.h"
#include "model/chunk.h"
#include "model/rollup.h"
#include "model/snapshot.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double unit(void)
{
	return (double)(next() >> 11) / 0x1p53;
}

/*
 * n minute rollups of one host as a probe writes them: counters rolling
 * on (one reset), ratio gauges at the probe's resolution, gauges that
 * stay, adversarial gauges (NaN, Inf, -0, huge), histograms with empty
 * windows, a series that appears mid-span and one that goes away.
 */
static void build_span(struct snapshot *pts, size_t n)
{
	uint64_t ios = 123456789, inc;
	struct histogram h;

	for (size_t p = 0; p < n; p++) {
		struct snapshot *s = &pts[p];
		struct series *x;

		cr_assert_eq(snapshot_init(s, "db-17", 1764500000000ULL + 60000 * p, 60000,
					   1000 + p, 60), 0);
		cr_assert_eq(snapshot_set_label(s, "rack", p < n / 2 ? "r1" : "r2"), 0);
		cr_assert_eq(snapshot_set_label(s, "switch", "sw1"), 0);
		inc = 300000 + next() % 2000;
		ios = p == n / 3 ? inc : ios + inc;	/* a reset */
		x = snapshot_add_counter(s, "block.ios", ios, "device", "sda", "op", "read", NULL);
		cr_assert_not_null(x);
		x->counter.increase = inc;
		for (int cpu = 0; cpu < 4; cpu++) {
			char c[4];
			double v[60], sum = 0, mn = 1, mx = 0;

			snprintf(c, sizeof(c), "%d", cpu);
			for (int i = 0; i < 60; i++) {
				v[i] = catalog_ratio(0.3 + 0.04 * (unit() - 0.5));
				sum += v[i];
				mn = fmin(mn, v[i]);
				mx = fmax(mx, v[i]);
			}
			x = snapshot_add_gauge(s, "cpu.utilization", v[59], "cpu", c, NULL);
			cr_assert_not_null(x);
			x->gauge.min = mn;
			x->gauge.max = mx;
			x->gauge.sum = sum;
			x->gauge.n = 60;
		}
		x = snapshot_add_gauge(s, "drive.temperature_c", 41, "device", "sda", NULL);
		x->gauge.sum = 41 * 60;
		x->gauge.n = 60;
		x = snapshot_add_gauge(s, "odd.gauge", p % 5 == 0 ? NAN : p % 5 == 1 ? INFINITY :
				       p % 5 == 2 ? -0.0 : p % 5 == 3 ? 1e300 : 0.1, NULL);
		x->gauge.min = -INFINITY;
		x->gauge.n = p;
		if (p >= 7) {
			x = snapshot_add_counter(s, "tcp.bad_csum", p * 3, "peer", "10.0.0.1", NULL);
			x->counter.increase = 3;
		}
		if (p < 20)
			snapshot_add_counter(s, "gone.soon", 5, NULL);
		x = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read",
				 NULL);
		cr_assert_not_null(x);
		hist_reset(&h);
		if (p % 9 != 4)		/* some windows empty */
			for (int i = 0; i < 200; i++)
				hist_record_n(&h, (uint64_t)(2e6 * exp(0.3 * (unit() - 0.5))),
					      1 + next() % 40);
		if (p % 11 == 3)
			hist_record(&h, UINT64_MAX);
		*x->hist = h;
		if (p % 2)
			cr_assert_eq(snapshot_compact(s), 0);
	}
}

static void free_span(struct snapshot *pts, size_t n)
{
	for (size_t p = 0; p < n; p++)
		snapshot_free(&pts[p]);
}

/* Other orders of series in some points: skipped points' orders are read too. */
static void swap_some_orders(struct snapshot *pts, size_t n)
{
	for (size_t p = 10; p < n; p += 7) {
		struct series t = pts[p].series[0];

		pts[p].series[0] = pts[p].series[1];
		pts[p].series[1] = t;
	}
}

Test(chunk, every_value_comes_back_to_the_bit)
{
	struct snapshot pts[60], *back;
	size_t n, len;
	char *buf, err[256];

	build_span(pts, 60);
	cr_assert_eq(chunk_encode(pts, 60, &buf, &len), 0);
	for (int compact = 0; compact < 2; compact++) {
		cr_assert_eq(chunk_decode(buf, len, compact, &back, &n, err, sizeof(err)), 0, "%s",
			     err);
		cr_assert_eq(n, 60);
		for (size_t p = 0; p < n; p++) {
			cr_assert(snapshot_equal(&back[p], &pts[p]), "point %zu", p);
			/* identities too: a column's later points copy its first's */
			for (uint32_t i = 0; i < back[p].nseries; i++)
				cr_assert(back[p].series[i].id == pts[p].series[i].id &&
					  back[p].series[i].name_hash == pts[p].series[i].name_hash &&
					  back[p].series[i].name != pts[p].series[i].name,
					  "point %zu series %u: id, hash or own strings", p, i);
			for (uint32_t i = 0; i < back[p].nseries; i++)
				if (back[p].series[i].kind == SERIES_HISTOGRAM)
					cr_assert(compact ? back[p].series[i].sparse != NULL :
						  back[p].series[i].hist != NULL);
		}
		/* the series mid-span and the one that went away are where they were */
		cr_assert_null(snapshot_find(&back[6], "tcp.bad_csum{peer=10.0.0.1}"));
		cr_assert_not_null(snapshot_find(&back[7], "tcp.bad_csum{peer=10.0.0.1}"));
		cr_assert_null(snapshot_find(&back[20], "gone.soon"));
		cr_assert_str_eq(back[59].labels[0].value, "r2");
		chunk_points_free(back, n);
	}
	free(buf);
	free_span(pts, 60);
}

/*
 * A reader of part of the span (a baseline's 15 minutes of an hour) gets
 * those points, the same as from a whole decode: the differences of the
 * points it skips are still followed.
 */
Test(chunk, a_range_decodes_the_points_in_it_alone)
{
	struct snapshot pts[60], *back;
	size_t n, len;
	char *buf, err[256];

	build_span(pts, 60);
	swap_some_orders(pts, 60);
	cr_assert_eq(chunk_encode(pts, 60, &buf, &len), 0);
	for (int compact = 0; compact < 2; compact++) {
		cr_assert_eq(chunk_decode_range(buf, len, compact, pts[17].ts_ms, pts[31].ts_ms,
						&back, &n, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(n, 15);
		for (size_t k = 0; k < n; k++)
			cr_assert(snapshot_equal(&back[k], &pts[17 + k]), "point %zu", 17 + k);
		chunk_points_free(back, n);
	}
	/* between two points, and after the last: none */
	cr_assert_eq(chunk_decode_range(buf, len, 1, pts[5].ts_ms + 1, pts[6].ts_ms - 1, &back,
					&n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 0);
	chunk_points_free(back, n);
	cr_assert_eq(chunk_decode_range(buf, len, 1, pts[59].ts_ms + 1, UINT64_MAX, &back, &n,
					err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 0);
	chunk_points_free(back, n);
	free(buf);
	free_span(pts, 60);
}

static int picks(const char *name, void *arg)
{
	int *asked = arg;

	(*asked)++;
	return !strcmp(name, "block.latency") || !strcmp(name, "tcp.bad_csum");
}

/*
 * A reader of one metric (a query over a host's hour) gets the points it
 * asked for with the series it picks alone, each value as a whole decode
 * has it; every column is read past to find the next, the others' values
 * and points' own orders included, and the pick is asked once a column.
 */
Test(chunk, a_pick_builds_the_series_it_names_alone)
{
	struct snapshot pts[60], *all, *back;
	size_t n, nall, len;
	char *buf, err[256];
	int asked = 0;

	build_span(pts, 60);
	swap_some_orders(pts, 60);
	cr_assert_eq(chunk_encode(pts, 60, &buf, &len), 0);
	cr_assert_eq(chunk_decode_range(buf, len, 1, pts[3].ts_ms, pts[40].ts_ms, &all, &nall,
					err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(chunk_decode_select(buf, len, 1, pts[3].ts_ms, pts[40].ts_ms, picks, &asked,
					 &back, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 38);
	cr_assert_eq(nall, 38);
	cr_assert_eq(asked, 10, "the pick was asked %d times for 10 columns", asked);
	for (size_t k = 0; k < n; k++) {
		uint32_t want = 0;

		cr_assert_eq(back[k].ts_ms, all[k].ts_ms);
		cr_assert_eq(back[k].nlabels, all[k].nlabels, "point %zu lost its host labels", k);
		for (uint32_t i = 0; i < all[k].nseries; i++) {
			const struct series *a = &all[k].series[i], *b;
			char key[256];

			if (strcmp(a->name, "block.latency") && strcmp(a->name, "tcp.bad_csum"))
				continue;
			want++;
			series_key(a, key, sizeof(key));
			b = snapshot_find(&back[k], key);
			cr_assert_not_null(b, "point %zu: %s not built", k, key);
			cr_assert(series_equal(a, b), "point %zu: %s differs", k, key);
		}
		cr_assert_eq(back[k].nseries, want, "point %zu holds %u series, %u picked", k,
			     back[k].nseries, want);
	}
	chunk_points_free(all, nall);
	chunk_points_free(back, n);
	free(buf);
	free_span(pts, 60);
}


static int picks_one(const char *name, void *arg)
{
	return !strcmp(name, arg);
}

/*
 * Every column read past (its varints counted, not decoded) leaves the
 * reader where the next begins: a pick of any one series builds it as a
 * whole decode does, whichever columns of every kind (counters of ~4-byte
 * varints, fixed-point and raw gauges, histograms) were stepped over.
 */
Test(chunk, any_column_read_past_leaves_the_next_where_it_begins)
{
	static const char *const names[] = { "block.ios", "cpu.utilization",
					     "drive.temperature_c", "odd.gauge", "tcp.bad_csum",
					     "block.latency" };
	struct snapshot pts[60], *all, *back;
	size_t n, nall, len;
	char *buf, err[256];

	build_span(pts, 60);
	swap_some_orders(pts, 60);
	cr_assert_eq(chunk_encode(pts, 60, &buf, &len), 0);
	cr_assert_eq(chunk_decode(buf, len, 1, &all, &nall, err, sizeof(err)), 0, "%s", err);
	for (size_t q = 0; q < sizeof(names) / sizeof(names[0]); q++) {
		size_t built = 0;

		cr_assert_eq(chunk_decode_select(buf, len, 1, 0, UINT64_MAX, picks_one,
						 (void *)names[q], &back, &n, err, sizeof(err)), 0,
			     "%s: %s", names[q], err);
		cr_assert_eq(n, nall);
		for (size_t k = 0; k < n; k++) {
			for (uint32_t i = 0; i < all[k].nseries; i++) {
				const struct series *a = &all[k].series[i], *b;
				char key[256];

				if (strcmp(a->name, names[q]))
					continue;
				series_key(a, key, sizeof(key));
				b = snapshot_find(&back[k], key);
				cr_assert(b && series_equal(a, b), "point %zu: %s differs", k, key);
				built++;
			}
			for (uint32_t i = 0; i < back[k].nseries; i++)
				cr_assert_str_eq(back[k].series[i].name, names[q]);
		}
		cr_assert_gt(built, 0, "%s: nothing built", names[q]);
		chunk_points_free(back, n);
	}
	chunk_points_free(all, nall);
	free(buf);
	free_span(pts, 60);
}

/*
 * A pick of each metric of a real chunk (fuzz_chunk's seed: a flag byte,
 * then the chunk) builds it as a whole decode does.  Returns the values built.
 */
static size_t pick_each_metric(const char *path)
{
	struct snapshot *all, *back;
	size_t n, nall, len, built = 0, pass = 0;
	char *buf, err[256];
	struct strmap names;

	cr_assert_eq(cfg_read_file(path, &buf, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert(len > 1 && (buf[0] & 1));
	cr_assert_eq(chunk_decode(buf + 1, len - 1, 1, &all, &nall, err, sizeof(err)), 0, "%s",
		     err);
	strmap_init(&names);
	for (size_t k = 0; k < nall; k++)
		for (uint32_t i = 0; i < all[k].nseries; i++) {
			const char *name = all[k].series[i].name;
			uint32_t seen;

			if (strmap_get(&names, name, &seen))
				continue;
			cr_assert_eq(strmap_put(&names, name, 1), 0);
			pass++;
			cr_assert_eq(chunk_decode_select(buf + 1, len - 1, 1, 0, UINT64_MAX, picks_one,
							 (void *)name, &back, &n, err, sizeof(err)),
				     0, "%s: %s", name, err);
			cr_assert_eq(n, nall);
			for (size_t p = 0; p < n; p++) {
				uint32_t want = 0;

				for (uint32_t j = 0; j < all[p].nseries; j++) {
					const struct series *a = &all[p].series[j], *b;
					char key[512];

					if (strcmp(a->name, name))
						continue;
					want++;
					series_key(a, key, sizeof(key));
					b = snapshot_find(&back[p], key);
					cr_assert(b && series_equal(a, b), "point %zu: %s differs", p,
						  key);
					built++;
				}
				cr_assert_eq(back[p].nseries, want, "%s: point %zu", name, p);
			}
			chunk_points_free(back, n);
		}
	cr_assert_gt(pass, 20, "%s: only %zu metrics", path, pass);
	strmap_free(&names);
	chunk_points_free(all, nall);
	free(buf);
	return built;
}

/*
 * The same over real chunks: a probe's hour of minutes, its minute of 1 s
 * snapshots as version 1 wrote it and as version 2 does (cumulative
 * histograms with only the buckets that moved).
 */
Test(chunk, any_column_of_a_real_chunk_read_past_leaves_the_next_where_it_begins)
{
	cr_assert_gt(pick_each_metric("fuzz/seeds/fuzz_chunk/real-probe-hour.chunk"), 1000);
	cr_assert_gt(pick_each_metric("fuzz/seeds/fuzz_chunk/real-probe-minute-of-seconds.chunk"),
		     1000);
	cr_assert_gt(pick_each_metric("fuzz/seeds/fuzz_chunk/real-probe-minute-of-seconds-v2.chunk"),
		     1000);
}

/*
 * A cumulative histogram (the 1 s tier's: a few buckets move a second) is
 * written with only the buckets that moved (mode 2, version 2), and reads
 * back exactly, whole, by range and picked.
 */
Test(chunk, a_cumulative_histogram_writes_the_buckets_that_moved)
{
	struct snapshot pts[60], *back;
	struct histogram *h = calloc(1, sizeof(*h));
	size_t n, len;
	char *buf, err[256];
	int asked = 0;

	cr_assert_not_null(h);
	for (size_t p = 0; p < 60; p++) {
		struct series *x;

		cr_assert_eq(snapshot_init(&pts[p], "db-17", 1764500000000ULL + 1000 * p, 1000,
					   p, 1), 0);
		/* 200 buckets filled at first, then two or three move a second */
		for (int k = 0, m = p ? 2 + (int)(next() % 2) : 200; k < m; k++)
			hist_record_n(h, 1000 + next() % 500000000, 1 + next() % 3);
		x = snapshot_add(&pts[p], "block.latency", SERIES_HISTOGRAM, NULL);
		cr_assert_not_null(x);
		*x->hist = *h;
	}
	cr_assert_eq(chunk_encode(pts, 60, &buf, &len), 0);
	{
		unsigned long long size = ZSTD_getFrameContentSize(buf, len);
		char *plain = malloc(size);
		const char *at;

		cr_assert_not_null(plain);
		cr_assert_eq(ZSTD_decompress(plain, size, buf, len), size);
		cr_assert_eq(plain[3], 2, "version %d", plain[3]);
		/* name, no labels, kind, presence (all), then the mode */
		at = memmem(plain, size, "block.latency", 13);
		cr_assert_not_null(at);
		cr_assert_eq(at[13], 0);
		cr_assert_eq(at[14], SERIES_HISTOGRAM);
		cr_assert_eq(at[15], 0);
		cr_assert_eq(at[16], 2, "histogram mode %d, not the buckets that moved", at[16]);
		free(plain);
	}
	/* exact: every point whole, a range's points, a pick */
	cr_assert_eq(chunk_decode(buf, len, 0, &back, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 60);
	for (size_t p = 0; p < 60; p++)
		cr_assert(snapshot_equal(&back[p], &pts[p]), "point %zu differs", p);
	chunk_points_free(back, n);
	cr_assert_eq(chunk_decode_select(buf, len, 1, pts[30].ts_ms, pts[59].ts_ms, picks, &asked,
					 &back, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 30);
	for (size_t p = 0; p < 30; p++)
		cr_assert(series_equal(&back[p].series[0], &pts[30 + p].series[0]), "point %zu", p);
	chunk_points_free(back, n);
	free(buf);
	free_span(pts, 60);
	free(h);
}

Test(chunk, is_smaller_than_the_entries_it_replaces)
{
	struct snapshot pts[60];
	size_t len, entries = 0;
	char *buf;

	build_span(pts, 60);
	for (size_t p = 0; p < 60; p++) {
		char *e;
		size_t elen;

		if (p && snapshot_delta_fits(&pts[p], &pts[p - 1]))
			cr_assert_eq(snapshot_encode_delta(&pts[p], &pts[p - 1], &e, &elen), 0);
		else
			cr_assert_eq(snapshot_encode(&pts[p], &e, &elen), 0);
		entries += elen;
		free(e);
	}
	cr_assert_eq(chunk_encode(pts, 60, &buf, &len), 0);
	/* the random values dominate both; the chunk holds them as differences */
	cr_assert_lt(len * 10, entries * 8, "chunk %zu bytes, entries %zu", len, entries);
	cr_log_info("60 entries %zu bytes, their chunk %zu", entries, len);
	free(buf);
	free_span(pts, 60);
}

Test(chunk, one_point_and_a_day_of_points)
{
	struct snapshot one, *back;
	size_t n, len;
	char *buf, err[256];

	cr_assert_eq(snapshot_init(&one, "h", 3600000, 3600000, 0, 3600), 0);
	cr_assert_eq(chunk_encode(&one, 1, &buf, &len), 0);
	cr_assert_eq(chunk_decode(buf, len, 1, &back, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(n, 1);
	cr_assert(snapshot_equal(&back[0], &one));
	chunk_points_free(back, n);
	free(buf);
	snapshot_free(&one);
}

/*
 * A probe's series come in the order they were first seen in the window:
 * devices and cgroups change places from minute to minute.  Each point's
 * own order comes back.
 */
Test(chunk, series_in_another_order_come_back_in_theirs)
{
	static const char *const order[4][4] = {
		{ "a", "b", "c", "d" }, { "b", "a", "d", "c" }, { "d", "c", "b", "a" },
		{ "a", "e", "c", "b" },
	};
	struct snapshot pts[4], *back;
	char *buf, err[256];
	size_t len, n;

	for (int p = 0; p < 4; p++) {
		cr_assert_eq(snapshot_init(&pts[p], "h", 60000 * (p + 1), 60000, p, 60), 0);
		for (int i = 0; i < 4; i++)
			snapshot_add_counter(&pts[p], order[p][i], (uint64_t)(p * 10 + i), NULL);
	}
	cr_assert_eq(chunk_encode(pts, 4, &buf, &len), 0);
	cr_assert_eq(chunk_decode(buf, len, 1, &back, &n, err, sizeof(err)), 0, "%s", err);
	for (int p = 0; p < 4; p++) {
		cr_assert(snapshot_equal(&back[p], &pts[p]), "point %d", p);
		for (int i = 0; i < 4; i++)
			cr_assert_str_eq(back[p].series[i].name, order[p][i]);
	}
	chunk_points_free(back, n);
	free(buf);
	free_span(pts, 4);
}

Test(chunk, refuses_what_it_cannot_hold_exactly)
{
	struct snapshot pts[2];
	char *buf = NULL;
	size_t len;

	/* a series twice in a point */
	for (int p = 0; p < 2; p++) {
		cr_assert_eq(snapshot_init(&pts[p], "h", 60000 * (p + 1), 60000, p, 60), 0);
		snapshot_add_counter(&pts[p], "a", 1, NULL);
		snapshot_add_counter(&pts[p], p ? "a" : "b", 1, NULL);
	}
	cr_assert_eq(chunk_encode(pts, 2, &buf, &len), -EINVAL);
	free_span(pts, 2);
	/* a series changing kind */
	for (int p = 0; p < 2; p++) {
		cr_assert_eq(snapshot_init(&pts[p], "h", 60000 * (p + 1), 60000, p, 60), 0);
		if (p)
			snapshot_add_gauge(&pts[p], "a", 1, NULL);
		else
			snapshot_add_counter(&pts[p], "a", 1, NULL);
	}
	cr_assert_eq(chunk_encode(pts, 2, &buf, &len), -EINVAL);
	free_span(pts, 2);
	/* not ascending, another host */
	cr_assert_eq(snapshot_init(&pts[0], "h", 120000, 60000, 0, 60), 0);
	cr_assert_eq(snapshot_init(&pts[1], "h", 60000, 60000, 1, 60), 0);
	cr_assert_eq(chunk_encode(pts, 2, &buf, &len), -EINVAL);
	free_span(pts, 2);
	cr_assert_eq(snapshot_init(&pts[0], "h", 60000, 60000, 0, 60), 0);
	cr_assert_eq(snapshot_init(&pts[1], "g", 120000, 60000, 1, 60), 0);
	cr_assert_eq(chunk_encode(pts, 2, &buf, &len), -EINVAL);
	free_span(pts, 2);
	cr_assert_null(buf);
}

Test(chunk, hostile_bytes_are_errors_never_crashes)
{
	struct snapshot pts[60], *back;
	size_t n, len;
	char *buf, err[256];
	int fails = 0;

	build_span(pts, 12);
	cr_assert_eq(chunk_encode(pts, 12, &buf, &len), 0);
	/* every truncation of the frame */
	for (size_t l = 0; l < len; l++) {
		cr_assert_neq(chunk_decode(buf, l, 0, &back, &n, err, sizeof(err)), 0);
		cr_assert_str_neq(err, "");
	}
	/* flipped bytes: zstd's checksum-less frame may decode to other columns */
	for (int i = 0; i < 2000; i++) {
		char *c = malloc(len);

		memcpy(c, buf, len);
		c[next() % len] ^= (char)(1 + next() % 255);
		if (chunk_decode(c, len, next() & 1, &back, &n, err, sizeof(err)))
			fails++;
		else
			chunk_points_free(back, n);
		free(c);
	}
	cr_assert_gt(fails, 0);
	cr_assert_neq(chunk_decode("garbage!", 8, 0, &back, &n, err, sizeof(err)), 0);
	cr_assert(strstr(err, "chunk:"), "%s", err);
	free(buf);
	free_span(pts, 12);
}
