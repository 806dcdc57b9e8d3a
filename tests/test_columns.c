/*
 * test_columns.c - the rules engine's compact history (rules/lang/columns.h):
 * every point it keeps reads back exactly as the snapshot it came from —
 * counters, gauges (NaN and infinities bit for bit), histograms (packed in
 * full or as deltas, across resets and empty windows), series that come
 * and go — and it keeps the points it promises (every one of the last
 * keep_ms, none older).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/histogram.h"
#include "model/snapshot.h"
#include "rules/lang/columns.h"
#include "model/chunk.h"
#include "rules/lang/hist_pack.h"
#include "tests/helpers.h"

#define STEP_MS 1000
#define KEEP_MS 200000
#define NPOINTS 600

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	return test_rand(&rng);
}

/* A gauge value, now and then one a careless codec would lose. */
static double odd_gauge(void)
{
	switch (next_rand() % 8) {
	case 0: return NAN;
	case 1: return INFINITY;
	case 2: return -INFINITY;
	case 3: return -0.0;
	case 4: return 5e-324;		/* the smallest subnormal */
	default: return (double)(next_rand() % 1000000) / 7.0 - 50000;
	}
}

/*
 * Point t of a host: two counters (one resets every 97 points), gauges,
 * two histograms (one grows in a few buckets, one is emptied now and then
 * as a restarted probe's would be, and has empty windows), and series
 * that are absent from some points.
 */
static void make_point(struct snapshot *s, int t, uint64_t *ctr, struct histogram *grow,
		       struct histogram *restart)
{
	struct series *x;

	snapshot_init(s, "h1", 1000000 + (uint64_t)t * STEP_MS, STEP_MS, (uint64_t)t, 1);
	snapshot_set_label(s, "rack", "r1");
	*ctr += next_rand() % 1000;
	snapshot_add_counter(s, "tcp.in_segs", *ctr, NULL);
	snapshot_add_counter(s, "tcp.in_csum_errors", (uint64_t)(t % 97) * 3, NULL);
	if (t % 13 != 5)	/* a gap every 13 points */
		snapshot_add_gauge(s, "cpu.utilization", odd_gauge(), "cpu", "0", NULL);
	snapshot_add_gauge(s, "drive.wear_used_pct", 42.5, "device", "sda", NULL);
	for (int k = 0, n = (int)(next_rand() % 4); k < n; k++)
		hist_record_n(grow, 1000 + next_rand() % 50000000, 1 + next_rand() % 20);
	x = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read",
			 NULL);
	*x->hist = *grow;
	if (t % 41 == 0)
		memset(restart, 0, sizeof(*restart));	/* a restart: back to empty */
	else if (t % 7 < 3)
		hist_record_n(restart, 100 + next_rand() % 1000000, 1 + next_rand() % 5);
	if (t % 11 != 3) {
		x = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op",
				 "write", NULL);
		*x->hist = *restart;
	}
	if (t >= 100 && t < 300)	/* a series that comes and goes for good */
		snapshot_add_gauge(s, "cgroup.tmp", (double)t, "cgroup", "/job", NULL);
}

/* The column of the series with key key (series_key), or -1. */
static long column_of(const struct columns *c, const char *key)
{
	char buf[512];

	for (uint32_t k = 0; k < c->ncol; k++) {
		series_key(&c->col[k].def, buf, sizeof(buf));
		if (!strcmp(buf, key))
			return (long)k;
	}
	return -1;
}

/* Point i of c holds exactly what snapshot want holds. */
static void check_point(const struct columns *c, size_t i, const struct snapshot *want)
{
	uint32_t present = 0;
	struct histogram *got = malloc(sizeof(*got));

	cr_assert_not_null(got);
	cr_assert_eq(columns_ts(c, i), want->ts_ms);
	for (uint32_t j = 0; j < want->nseries; j++) {
		const struct series *x = &want->series[j];
		char key[512];
		long k;

		series_key(x, key, sizeof(key));
		k = column_of(c, key);
		cr_assert_geq(k, 0, "point %zu: no column for %s", i, key);
		cr_assert(columns_has(c, (uint32_t)k, i), "point %zu: %s missing", i, key);
		if (x->kind == SERIES_COUNTER) {
			cr_assert_eq(columns_counter(c, (uint32_t)k, i), x->counter.value);
		} else if (x->kind == SERIES_GAUGE) {
			double v = columns_scalar(c, (uint32_t)k, i, NULL);

			cr_assert(!memcmp(&v, &x->gauge.last, sizeof(v)),
				  "point %zu: %s is %g, want %g", i, key, v, x->gauge.last);
		} else {
			struct histogram scratch;

			cr_assert_eq(columns_hist(c, (uint32_t)k, i, got), 0);
			cr_assert(hist_equal(got, series_hist(x, &scratch)),
				  "point %zu: histogram %s differs", i, key);
		}
	}
	/* and nothing else */
	for (uint32_t k = 0; k < c->ncol; k++)
		present += (uint32_t)columns_has(c, k, i);
	cr_assert_eq(present, want->nseries, "point %zu holds %u series, want %u", i, present,
		     want->nseries);
	free(got);
}

Test(columns, every_kept_point_reads_back_exactly)
{
	static struct snapshot ref[NPOINTS];
	struct histogram *grow = calloc(1, sizeof(*grow)), *restart = calloc(1, sizeof(*restart));
	struct columns c;
	uint64_t ctr = 0;

	cr_assert(grow && restart);
	columns_init(&c);
	for (int t = 0; t < NPOINTS; t++) {
		struct snapshot copy;
		uint64_t now = 1000000 + (uint64_t)t * STEP_MS;
		size_t n;
		int idx = 0;

		make_point(&ref[t], t, &ctr, grow, restart);
		cr_assert_eq(snapshot_copy(&copy, &ref[t]), 0);
		cr_assert_eq(columns_push(&c, &copy, KEEP_MS, NULL), 0);
		n = columns_len(&c);
		cr_assert_str_eq(c.newest.host, "h1");
		cr_assert_eq(c.newest.ts_ms, now);
		/* the promised points: every one of the last keep_ms, none older */
		for (size_t i = 0; i < n; i++) {
			uint64_t ts = columns_ts(&c, i);

			cr_assert_geq(ts + KEEP_MS, now, "point older than keep_ms kept");
			idx = (int)((ts - 1000000) / STEP_MS);
			if (t % 50 == 0 || t >= NPOINTS - 3 || i + 20 >= n)
				check_point(&c, i, &ref[idx]);
		}
		cr_assert_eq(n, t < KEEP_MS / STEP_MS ? (size_t)t + 1 : (size_t)KEEP_MS / STEP_MS + 1,
			     "every point of the last keep_ms is held");
	}
	/* the series that went away took its column with it */
	cr_assert_eq(column_of(&c, "cgroup.tmp{cgroup=/job}"), -1);
	columns_free(&c);
	for (int t = 0; t < NPOINTS; t++)
		snapshot_free(&ref[t]);
	free(grow);
	free(restart);
}

/*
 * The engine's read path: each point decoded like the newest one held
 * (snapshot_decode_like), its strings adopted on push, columns found by
 * what it repeats.  Every point reads back as the one decoded plain, and
 * the history has the same columns.
 */
Test(columns, points_decoded_like_the_newest_read_back_the_same)
{
	static struct snapshot ref[NPOINTS];
	struct histogram *grow = calloc(1, sizeof(*grow)), *restart = calloc(1, sizeof(*restart));
	struct columns like, plain;
	uint64_t ctr = 0;
	char err[256];

	cr_assert(grow && restart);
	columns_init(&like);
	columns_init(&plain);
	for (int t = 0; t < NPOINTS; t++) {
		struct snapshot a, b;
		size_t len, n;
		char *buf;

		make_point(&ref[t], t, &ctr, grow, restart);
		cr_assert_eq(snapshot_encode(&ref[t], &buf, &len), 0);
		cr_assert_eq(snapshot_decode_like(buf, len, &a, like.newest.host ? &like.newest : NULL,
						  err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(snapshot_decode_compact(buf, len, &b, err, sizeof(err)), 0, "%s", err);
		free(buf);
		if (t > 0)	/* tcp.in_segs, in every point */
			cr_assert(a.series[0].borrowed, "point %d repeats nothing", t);
		cr_assert_eq(columns_push(&like, &a, KEEP_MS, NULL), 0);
		cr_assert_eq(columns_push(&plain, &b, KEEP_MS, NULL), 0);
		for (uint32_t i = 0; i < like.newest.nseries; i++)
			cr_assert(!like.newest.series[i].borrowed, "point %d: series %u not adopted",
				  t, i);
		cr_assert_eq(like.ncol, plain.ncol, "point %d: %u columns, %u decoded plain", t,
			     like.ncol, plain.ncol);
		n = columns_len(&like);
		for (size_t i = n > 3 ? n - 3 : 0; i < n; i++)
			check_point(&like, i, &ref[(columns_ts(&like, i) - 1000000) / STEP_MS]);
	}
	columns_free(&like);
	columns_free(&plain);
	for (int t = 0; t < NPOINTS; t++)
		snapshot_free(&ref[t]);
	free(grow);
	free(restart);
}

Test(columns, packed_histograms_are_small)
{
	struct histogram *h = calloc(1, sizeof(*h));
	struct columns c;
	size_t before;

	cr_assert_not_null(h);
	columns_init(&c);
	/* a disk: ~200 I/Os a second over tens of buckets, for 5 minutes */
	for (int t = 0; t < 300; t++) {
		struct snapshot s;
		struct series *x;

		snapshot_init(&s, "h1", 1000000 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
		for (int k = 0; k < 200; k++)
			hist_record(h, 20000 + next_rand() % 5000000);
		x = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", NULL);
		*x->hist = *h;
		cr_assert_eq(columns_push(&c, &s, 1000000, NULL), 0);
	}
	before = columns_bytes(&c);
	/* a hist_sparse per point would be ~16 bytes a bucket: packed is far less */
	cr_assert_lt(before / 300, hist_nonempty(h) * 16 / 2, "%zu bytes a point, %zu buckets",
		     before / 300, hist_nonempty(h));
	columns_free(&c);
	free(h);
}

Test(columns, recorded_values_join_the_newest_point)
{
	struct columns c;
	struct series *r;

	columns_init(&c);
	for (int t = 0; t < 3; t++) {
		struct snapshot s;

		snapshot_init(&s, "h1", 1000 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
		snapshot_add_counter(&s, "tcp.in_segs", (uint64_t)t, NULL);
		cr_assert_eq(columns_push(&c, &s, 100000, NULL), 0);
		r = snapshot_add_gauge(&c.newest, "job:ratio", 0.5 * t, NULL);
		cr_assert_not_null(r);
		cr_assert_eq(columns_set_newest(&c, r, NULL), 0);
		r->gauge.last = 0.25 * t;	/* re-recorded in the same interval */
		cr_assert_eq(columns_set_newest(&c, r, NULL), 0);
	}
	for (size_t i = 0; i < 3; i++)
		cr_assert_eq(columns_scalar(&c, columns_of(r), i, NULL), 0.25 * (double)i);
	columns_free(&c);
}

static int keeps_segs(const struct series *def, void *arg)
{
	const char *only = arg;

	return !only || !strcmp(def->name, only);
}

Test(columns, a_policy_keeps_only_what_is_read_back)
{
	struct columns_policy p = { keeps_segs, "tcp.in_segs", 1 };
	struct columns c;
	long cpu, segs;

	columns_init(&c);
	for (int t = 0; t < 10; t++) {
		struct snapshot s;

		snapshot_init(&s, "h1", 1000 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
		snapshot_add_counter(&s, "tcp.in_segs", (uint64_t)t * 10, NULL);
		snapshot_add_gauge(&s, "cpu.utilization", 0.5 + t, "cpu", "0", NULL);
		if (t == 9)
			p = (struct columns_policy){ keeps_segs, NULL, 2 };	/* a reload: all */
		cr_assert_eq(columns_push(&c, &s, 100000, &p), 0);
	}
	segs = column_of(&c, "tcp.in_segs{}");
	cpu = column_of(&c, "cpu.utilization{cpu=0}");
	cr_assert(segs >= 0 && cpu >= 0);
	for (size_t i = 0; i < 10; i++)
		cr_assert_eq(columns_counter(&c, (uint32_t)segs, i), i * 10);
	/* cpu kept only its newest value until the reload, then history from there */
	for (size_t i = 0; i < 8; i++)
		cr_assert(!columns_has(&c, (uint32_t)cpu, i), "point %zu", i);
	cr_assert_eq(columns_scalar(&c, (uint32_t)cpu, 8, NULL), 8.5);
	cr_assert_eq(columns_scalar(&c, (uint32_t)cpu, 9, NULL), 9.5);
	/* and a newest-only histogram reads back at the newest point */
	{
		struct snapshot s;
		struct histogram *h = calloc(1, sizeof(*h)), *got = calloc(1, sizeof(*got));
		struct series *x;
		long lat;

		cr_assert(h && got);
		p = (struct columns_policy){ keeps_segs, "tcp.in_segs", 3 };
		snapshot_init(&s, "h1", 20000, 1000, 20, 1);
		hist_record_n(h, 123456, 7);
		x = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", NULL);
		*x->hist = *h;
		cr_assert_eq(columns_push(&c, &s, 100000, &p), 0);
		lat = column_of(&c, "block.latency{device=sda}");
		cr_assert_geq(lat, 0);
		cr_assert_eq(c.col[lat].keep, 0);
		cr_assert_eq(columns_hist(&c, (uint32_t)lat, columns_len(&c) - 1, got), 0);
		cr_assert(hist_equal(got, h));
		cr_assert_eq(columns_hist(&c, (uint32_t)lat, columns_len(&c) - 2, got), -ENOENT);
		free(h);
		free(got);
	}
	columns_free(&c);
}

/* Every point of c reads back as the ref point of its time, and its newest links right. */
static void check_all(const struct columns *c, struct snapshot *ref)
{
	char key[512], want[512];

	for (size_t i = 0; i < columns_len(c); i++)
		check_point(c, i, &ref[(columns_ts(c, i) - 1000000) / STEP_MS]);
	for (uint32_t j = 0; j < c->newest.nseries; j++) {
		const struct series *x = &c->newest.series[j];

		cr_assert(x->link && x->link <= c->ncol, "newest series %u unlinked", j);
		series_key(x, key, sizeof(key));
		series_key(&c->col[columns_of(x)].def, want, sizeof(want));
		cr_assert_str_eq(key, want);
	}
	cr_assert_eq(c->nhash, c->newest.nseries);
}

/*
 * A query's read past the in-memory tail (web/query.c): points read before
 * the tail begins, then the tail's appended column by column.  Whatever
 * the history before (the same points, none, one with a gap, one that
 * keeps fewer series), every point reads back as the snapshot it came
 * from: a histogram delta on a point dst does not hold is rebuilt in full.
 */
Test(columns, appended_points_read_back_as_pushed_ones)
{
	static struct snapshot ref[NPOINTS];
	struct histogram *grow = calloc(1, sizeof(*grow)), *restart = calloc(1, sizeof(*restart));
	struct columns src, dst;
	struct columns_policy p = { keeps_segs, "tcp.in_segs", 1 };
	uint64_t ctr = 0;
	size_t i0;
	long segs, lat;
	int first;

	cr_assert(grow && restart);
	columns_init(&src);
	for (int t = 0; t < NPOINTS; t++) {
		struct snapshot copy;

		make_point(&ref[t], t, &ctr, grow, restart);
		cr_assert_eq(snapshot_copy(&copy, &ref[t]), 0);
		cr_assert_eq(columns_push(&src, &copy, KEEP_MS, NULL), 0);
	}
	/* the tail's point i0, from t = 450 on: one whose read latency is a delta */
	lat = column_of(&src, "block.latency{device=sda,op=read}");
	cr_assert_geq(lat, 0);
	for (i0 = (size_t)columns_last_at(&src, 1000000 + 449 * STEP_MS) + 1;
	     ((uint8_t **)src.col[lat].v)[columns_slot(&src, i0)][0] != HPACK_DELTA; i0++)
		cr_assert_lt(i0, columns_len(&src) - 10);
	first = (int)((columns_ts(&src, i0) - 1000000) / STEP_MS);
	for (int variant = 0; variant < 3; variant++) {
		/* 0: the points before; 1: none; 2: the points before but the last 7 */
		int upto = variant == 1 ? 0 : variant == 2 ? first - 7 : first;

		columns_init(&dst);
		for (int t = 300; t < upto; t++) {
			struct snapshot copy;

			cr_assert_eq(snapshot_copy(&copy, &ref[t]), 0);
			cr_assert_eq(columns_push(&dst, &copy, 1000000, NULL), 0);
		}
		cr_assert_eq(columns_append(&dst, &src, i0, 1000000, NULL), 0);
		cr_assert_eq(columns_len(&dst),
			     (size_t)(upto > 300 ? upto - 300 : 0) + (size_t)(NPOINTS - first),
			     "variant %d", variant);
		cr_assert_eq(dst.newest.ts_ms, ref[NPOINTS - 1].ts_ms);
		check_all(&dst, ref);
		/* not older than what it holds */
		cr_assert_eq(columns_append(&dst, &src, i0, 1000000, NULL), -EINVAL);
		columns_free(&dst);
	}
	/* a history that keeps one series: it keeps the others' newest values alone */
	columns_init(&dst);
	cr_assert_eq(columns_append(&dst, &src, i0, 1000000, &p), 0);
	segs = column_of(&dst, "tcp.in_segs{}");
	cr_assert_geq(segs, 0);
	for (size_t i = 0; i < columns_len(&dst); i++)
		cr_assert_eq(columns_counter(&dst, (uint32_t)segs, i),
			     ref[first + (int)i].series[0].counter.value);
	check_point(&dst, columns_len(&dst) - 1, &ref[NPOINTS - 1]);
	for (uint32_t k = 0; k < dst.ncol; k++)
		cr_assert_eq(dst.col[k].keep, k == (uint32_t)segs);
	columns_free(&dst);
	columns_free(&src);
	for (int t = 0; t < NPOINTS; t++)
		snapshot_free(&ref[t]);
	free(grow);
	free(restart);
}

/*
 * Room made at once (a query's reserve, web/query.c): made before any point,
 * and again while the ring has wrapped (its oldest point past slot 0),
 * every point held reads back as pushed, in order, and pushing past the
 * room made still grows it.  Less room than held changes nothing.
 */
Test(columns, room_made_at_once_keeps_every_point_in_order)
{
	static struct snapshot ref[NPOINTS];
	struct histogram *grow = calloc(1, sizeof(*grow)), *restart = calloc(1, sizeof(*restart));
	struct columns c;
	uint64_t ctr = 0;
	size_t cap;

	cr_assert(grow && restart);
	columns_init(&c);
	cr_assert_eq(columns_reserve(&c, 50), 0);
	cr_assert_eq(c.ring.cap, 50);
	for (int t = 0; t < NPOINTS; t++) {
		struct snapshot copy;

		make_point(&ref[t], t, &ctr, grow, restart);
		cr_assert_eq(snapshot_copy(&copy, &ref[t]), 0);
		cr_assert_eq(columns_push(&c, &copy, KEEP_MS, NULL), 0);
		if (t == 50)	/* past the room made: grown as pushed */
			cr_assert_gt(c.ring.cap, 50);
		if (t == 400) {
			/* the ring wrapped: the oldest point is not in slot 0 */
			cr_assert_neq(c.ring.head, 0);
			cap = c.ring.cap;
			cr_assert_eq(columns_reserve(&c, cap / 2), 0);
			cr_assert_eq(c.ring.cap, cap, "less room than there is changes nothing");
			check_all(&c, ref);
			/* room that cannot be had: -ENOMEM, the wrapped history as it was */
			cr_assert_eq(columns_reserve(&c, (size_t)1 << 55), -ENOMEM);
			cr_assert_eq(columns_reserve(&c, SIZE_MAX), -ENOMEM);
			cr_assert_eq(c.ring.cap, cap);
			cr_assert_neq(c.ring.head, 0);
			check_all(&c, ref);
			cr_assert_eq(columns_reserve(&c, cap + 1000), 0);
			cr_assert_eq(c.ring.cap, cap + 1000);
			cr_assert_eq(c.ring.head, 0);
			check_all(&c, ref);
		}
	}
	cr_assert_eq(columns_len(&c), (size_t)KEEP_MS / STEP_MS + 1);
	check_all(&c, ref);
	columns_free(&c);
	for (int t = 0; t < NPOINTS; t++)
		snapshot_free(&ref[t]);
	free(grow);
	free(restart);
}

/*
 * A chunk's points lent to a query (web/query_load.c): runs of them pushed
 * without a snapshot each (columns_push_run), between single pushes, runs
 * of every length, over a window short enough that points leave in the
 * middle of a run (a histogram delta then rebased on what stays): every
 * point held reads back as the snapshot it came from, as a history of
 * pushes holds it, and the lent points are left as they were.
 */
Test(columns, runs_read_back_as_pushed_points)
{
	static struct snapshot ref[NPOINTS], lent[NPOINTS];
	struct histogram *grow = calloc(1, sizeof(*grow)), *restart = calloc(1, sizeof(*restart));
	struct columns_policy p = { keeps_segs, "tcp.in_segs", 1 };
	static const size_t lens[] = { 1, 2, 60, 17, 1, 5, 120, 3 };
	uint64_t ctr = 0;

	cr_assert(grow && restart);
	for (int t = 0; t < NPOINTS; t++) {
		make_point(&ref[t], t, &ctr, grow, restart);
		cr_assert_eq(snapshot_copy(&lent[t], &ref[t]), 0);
		cr_assert_eq(snapshot_compact(&lent[t]), 0);
	}
	for (int variant = 0; variant < 4; variant++) {
		/*
		 * 0: every series kept; 1: a window of 7 s; 2: a policy keeping
		 * one series; 3: a window that holds the newest point alone
		 */
		uint64_t keep = variant == 1 ? 7000 : variant == 3 ? 500 : KEEP_MS;
		const struct columns_policy *pol = variant == 2 ? &p : NULL;
		struct columns pushed, ran;
		size_t at = 0, k = 0;

		columns_init(&pushed);
		columns_init(&ran);
		for (int t = 0; t < NPOINTS; t++) {
			struct snapshot copy;

			cr_assert_eq(snapshot_copy(&copy, &ref[t]), 0);
			cr_assert_eq(columns_push(&pushed, &copy, keep, pol), 0);
		}
		while (at < NPOINTS) {
			size_t n = lens[k++ % (sizeof(lens) / sizeof(lens[0]))];
			struct snapshot newest;

			if (n > NPOINTS - at)
				n = NPOINTS - at;
			if (k % 3 == 0) {	/* every third a single push between runs */
				cr_assert_eq(snapshot_copy(&newest, &ref[at]), 0);
				cr_assert_eq(columns_push(&ran, &newest, keep, pol), 0);
				at++;
				continue;
			}
			cr_assert_eq(snapshot_copy(&newest, &lent[at + n - 1]), 0);
			cr_assert_eq(columns_push_run(&ran, &lent[at], n, &newest, keep, pol), 0,
				     "variant %d: run of %zu at %zu", variant, n, at);
			cr_assert_null(newest.host, "newest is taken over");
			at += n;
		}
		cr_assert_eq(columns_len(&ran), columns_len(&pushed), "variant %d", variant);
		cr_assert_eq(ran.ncol, pushed.ncol, "variant %d", variant);
		if (!pol) {
			check_all(&ran, ref);
		} else {
			long segs = column_of(&ran, "tcp.in_segs{}");

			cr_assert_geq(segs, 0);
			for (size_t i = 0; i < columns_len(&ran); i++)
				cr_assert_eq(columns_counter(&ran, (uint32_t)segs, i),
					     columns_counter(&pushed, (uint32_t)column_of(
						     &pushed, "tcp.in_segs{}"), i));
			check_point(&ran, columns_len(&ran) - 1, &ref[NPOINTS - 1]);
			for (uint32_t c = 0; c < ran.ncol; c++)
				cr_assert_eq(ran.col[c].keep, c == (uint32_t)segs);
		}
		cr_assert(snapshot_equal(&ran.newest, &lent[NPOINTS - 1]));
		columns_free(&pushed);
		columns_free(&ran);
	}
	/* the lent points are as they were */
	for (int t = 0; t < NPOINTS; t++) {
		struct snapshot c;

		cr_assert_eq(snapshot_copy(&c, &ref[t]), 0);
		cr_assert_eq(snapshot_compact(&c), 0);
		cr_assert(snapshot_equal(&c, &lent[t]), "point %d changed", t);
		snapshot_free(&c);
	}
	/* refused, with nothing done: not newer than what is held, not rising */
	{
		struct columns c;
		struct snapshot newest;

		columns_init(&c);
		cr_assert_eq(snapshot_copy(&newest, &lent[9]), 0);
		cr_assert_eq(columns_push_run(&c, &lent[0], 10, &newest, KEEP_MS, NULL), 0);
		cr_assert_eq(snapshot_copy(&newest, &lent[10]), 0);
		cr_assert_eq(columns_push_run(&c, &lent[5], 6, &newest, KEEP_MS, NULL), -EINVAL);
		cr_assert_null(newest.host);
		cr_assert_eq(snapshot_copy(&newest, &lent[20]), 0);
		{
			struct snapshot two[2] = { lent[20], lent[20] };

			cr_assert_eq(columns_push_run(&c, two, 2, &newest, KEEP_MS, NULL), -EINVAL);
		}
		cr_assert_eq(columns_len(&c), 10);
		check_all(&c, ref);
		columns_free(&c);
	}
	/* a series twice in a point (a hostile chunk): the first counts, and the next point's too */
	{
		struct histogram *h = calloc(3, sizeof(*h)), *got = calloc(1, sizeof(*got));
		struct snapshot two[2], newest;
		struct columns c;
		long k;

		cr_assert(h && got);
		hist_record_n(&h[0], 5000, 3);
		/* h[1] empty: a base the next point would wrongly rise from */
		h[2] = h[0];
		hist_record_n(&h[2], 7000, 2);
		for (int t = 0; t < 2; t++) {
			snapshot_init(&two[t], "h1", 1000 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
			for (int d = 0; d < (t ? 1 : 2); d++)
				*snapshot_add(&two[t], "block.latency", SERIES_HISTOGRAM, "device", "sda",
					      NULL)->hist = h[t ? 2 : d];
			cr_assert_eq(snapshot_compact(&two[t]), 0);
		}
		columns_init(&c);
		cr_assert_eq(snapshot_copy(&newest, &two[1]), 0);
		cr_assert_eq(columns_push_run(&c, two, 2, &newest, KEEP_MS, NULL), 0);
		k = column_of(&c, "block.latency{device=sda}");
		cr_assert_geq(k, 0);
		cr_assert_eq(columns_hist(&c, (uint32_t)k, 0, got), 0);
		cr_assert(hist_equal(got, &h[0]));
		cr_assert_eq(columns_hist(&c, (uint32_t)k, 1, got), 0);
		cr_assert(hist_equal(got, &h[2]));
		columns_free(&c);
		snapshot_free(&two[0]);
		snapshot_free(&two[1]);
		free(h);
		free(got);
	}
	for (int t = 0; t < NPOINTS; t++) {
		snapshot_free(&ref[t]);
		snapshot_free(&lent[t]);
	}
	free(grow);
	free(restart);
}
