/*
 * test_rollup.c - rollup arithmetic: counters summed (with resets), gauges
 * min/max/last, histograms merged; the 1 min rollup of 60 synthetic
 * snapshots equals the merge of their per-interval deltas.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/chunk.h"
#include "model/rollup.h"

#define T0 1764500040000ULL	/* a minute boundary (ms) */

Test(rollup, sixty_snapshots_equal_the_merge)
{
	struct histogram *cum = calloc(1, sizeof(*cum)), *want = calloc(1, sizeof(*want));
	struct histogram *delta = calloc(1, sizeof(*delta));
	struct rollup r;
	struct snapshot out, base;
	uint64_t counter = 5000, want_inc = 0;
	double gmin = 1e9, gmax = -1e9, glast = 0;

	cr_assert_eq(rollup_init(&r, "h1", 60), 0);
	/* baseline: the last 1 s snapshot of the previous minute */
	snapshot_init(&base, "h1", T0, 1000, 0, 1);
	snapshot_add_counter(&base, "tcp.in_csum_errors", counter, NULL);
	snapshot_add_gauge(&base, "cpu.busy", 0.5, NULL);
	snapshot_add(&base, "block.latency", SERIES_HISTOGRAM, "op", "write", NULL);
	cr_assert_eq(rollup_add(&r, &base), 0);
	cr_assert_eq(rollup_finish(&r, &out), 0);
	snapshot_free(&out);
	snapshot_free(&base);

	for (int i = 1; i <= 60; i++) {
		struct snapshot s;
		struct series *h;
		double g = (double)((i * 37) % 101) / 10.0;

		hist_reset(delta);
		for (int k = 0; k < 100 + i; k++)
			hist_record(delta, (uint64_t)(k * 1000 + i * 13) << (i % 20));
		hist_merge(cum, delta);
		hist_merge(want, delta);
		counter += (uint64_t)i;
		want_inc += (uint64_t)i;
		if (g < gmin)
			gmin = g;
		if (g > gmax)
			gmax = g;
		glast = g;

		snapshot_init(&s, "h1", T0 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1);
		snapshot_add_counter(&s, "tcp.in_csum_errors", counter, NULL);
		snapshot_add_gauge(&s, "cpu.busy", g, NULL);
		h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "op", "write", NULL);
		memcpy(h->hist, cum, sizeof(*cum));
		cr_assert_eq(rollup_window_of(&r, s.ts_ms), T0);
		cr_assert_eq(rollup_add(&r, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(rollup_finish(&r, &out), 0);
	cr_assert_eq(out.tier, 60);
	cr_assert_eq(out.ts_ms, T0 + 60000);
	cr_assert_eq(out.interval_ms, 60000);

	struct series *c = snapshot_find(&out, "tcp.in_csum_errors{}");
	struct series *g = snapshot_find(&out, "cpu.busy{}");
	struct series *h = snapshot_find(&out, "block.latency{op=write}");

	cr_assert(c && g && h);
	cr_assert_eq(c->counter.increase, want_inc);
	cr_assert_eq(c->counter.value, counter);
	cr_assert_eq(g->gauge.min, gmin);
	cr_assert_eq(g->gauge.max, gmax);
	cr_assert_eq(g->gauge.last, glast);
	cr_assert_eq(g->gauge.n, 60);
	/* the minute keeps the coarse resolution (hist_coarsen), within its bound */
	for (double q = 0.1; q < 1; q += 0.2)
		cr_assert_leq(fabs((double)hist_quantile(h->hist, q) -
				   (double)hist_quantile(want, q)),
			      HIST_COARSE_ERROR * (double)hist_quantile(want, q) + 0.5, "q=%g", q);
	hist_coarsen(want);
	cr_assert(hist_equal(h->hist, want), "minute histogram != coarse merge of 60 deltas");
	snapshot_free(&out);
	rollup_free(&r);
	free(cum);
	free(want);
	free(delta);
}

Test(rollup, counter_reset_counts_new_value)
{
	struct rollup r;
	struct snapshot s, out;
	const uint64_t vals[] = { 100, 150, 20, 50 };	/* reset after 150 */

	rollup_init(&r, "h", 60);
	for (int i = 0; i < 4; i++) {
		snapshot_init(&s, "h", T0 + 1000 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1);
		snapshot_add_counter(&s, "c", vals[i], NULL);
		rollup_add(&r, &s);
		snapshot_free(&s);
	}
	cr_assert_eq(rollup_finish(&r, &out), 0);
	/* 50 (100->150) + 20 (reset) + 30 (20->50) */
	cr_assert_eq(out.series[0].counter.increase, 100);
	snapshot_free(&out);
	rollup_free(&r);
}

Test(rollup, hour_of_minutes_merges_increases)
{
	struct rollup m, hr;
	struct snapshot s, minute, hour;
	struct histogram *want = calloc(1, sizeof(*want));
	uint64_t counter = 0;

	rollup_init(&m, "h", 60);
	rollup_init(&hr, "h", 3600);
	/* 3 minutes of 1 s snapshots, starting with a zero baseline */
	for (int i = 0; i <= 180; i++) {
		struct series *h;

		snapshot_init(&s, "h", T0 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1);
		counter += i ? 2 : 0;
		snapshot_add_counter(&s, "c", counter, NULL);
		h = snapshot_add(&s, "lat", SERIES_HISTOGRAM, NULL);
		if (i)
			hist_record(want, (uint64_t)i);
		memcpy(h->hist, want, sizeof(*want));
		if (i && rollup_window_of(&m, s.ts_ms) != m.window_start_ms && rollup_pending(&m)) {
			cr_assert_eq(rollup_finish(&m, &minute), 0);
			cr_assert_eq(rollup_add(&hr, &minute), 0);
			snapshot_free(&minute);
		}
		cr_assert_eq(rollup_add(&m, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(rollup_finish(&m, &minute), 0);
	cr_assert_eq(rollup_add(&hr, &minute), 0);
	snapshot_free(&minute);
	cr_assert_eq(rollup_finish(&hr, &hour), 0);
	cr_assert_eq(hour.series[0].counter.increase, 360);
	hist_coarsen(want);
	cr_assert(hist_equal(hour.series[1].hist, want), "the hour of coarse minutes is not "
		  "the coarse hour");
	cr_assert_eq(rollup_add(&hr, &hour), -EINVAL, "a tier cannot roll up itself");
	snapshot_free(&hour);
	rollup_free(&m);
	rollup_free(&hr);
	free(want);
}

/*
 * Series are looked for where they were the second before, and by name when
 * they are not there: snapshots whose series come in a new order every
 * second, with one that appears mid-minute (shifting the rest) and one that
 * changes kind, roll up exactly as the same series in a fixed order.
 */
Test(rollup, series_in_any_order_roll_up_the_same)
{
	struct rollup fixed, moving;
	struct snapshot a, b;
	char name[32];

	cr_assert_eq(rollup_init(&fixed, "h1", 60), 0);
	cr_assert_eq(rollup_init(&moving, "h1", 60), 0);
	for (int i = 0; i <= 60; i++) {
		int n = i < 30 ? 6 : 7;	/* c6 appears at 30 s */

		snapshot_init(&a, "h1", T0 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1);
		snapshot_init(&b, "h1", T0 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1);
		for (int k = 0; k < n; k++) {
			int kb = (k + i) % n;	/* b's k-th series is a's (k + i) mod n-th */

			snprintf(name, sizeof(name), "c%d", k);
			snapshot_add_counter(&a, name, (uint64_t)(1000 * k + i * (k + 1)), "x", "1",
					     NULL);
			snprintf(name, sizeof(name), "c%d", kb);
			snapshot_add_counter(&b, name, (uint64_t)(1000 * kb + i * (kb + 1)), "x", "1",
					     NULL);
		}
		/* "g" a gauge, then a counter from 40 s on: skipped when its kind changed */
		if (i < 40) {
			snapshot_add_gauge(&a, "g", i, NULL);
			snapshot_add_gauge(&b, "g", i, NULL);
		} else {
			snapshot_add_counter(&a, "g", (uint64_t)i, NULL);
			snapshot_add_counter(&b, "g", (uint64_t)i, NULL);
		}
		cr_assert_eq(rollup_add(&fixed, &a), 0);
		cr_assert_eq(rollup_add(&moving, &b), 0);
		snapshot_free(&a);
		snapshot_free(&b);
	}
	cr_assert_eq(rollup_finish(&fixed, &a), 0);
	cr_assert_eq(rollup_finish(&moving, &b), 0);
	cr_assert_eq(a.nseries, b.nseries);
	for (int k = 0; k < 7; k++) {
		struct series *x, *y;
		char key[64];

		snprintf(key, sizeof(key), "c%d{x=1}", k);
		x = snapshot_find(&a, key);
		y = snapshot_find(&b, key);
		cr_assert(x && y, "%s", key);
		/* c_k grows by k + 1 a second: 60 s of it (c6: from its second snapshot) */
		cr_assert_eq(x->counter.increase, (uint64_t)(k + 1) * (k < 6 ? 60 : 30), "%s: %llu",
			     key, (unsigned long long)x->counter.increase);
		cr_assert_eq(y->counter.increase, x->counter.increase, "%s: %llu against %llu", key,
			     (unsigned long long)y->counter.increase,
			     (unsigned long long)x->counter.increase);
		cr_assert_eq(y->counter.value, x->counter.value);
	}
	cr_assert_eq(snapshot_find(&b, "g{}")->kind, SERIES_GAUGE);
	cr_assert_eq(snapshot_find(&b, "g{}")->gauge.max, 39);
	cr_assert_eq(snapshot_find(&a, "g{}")->gauge.max, 39);
	snapshot_free(&a);
	snapshot_free(&b);
	rollup_free(&fixed);
	rollup_free(&moving);
}

/* What a cascade emits, encoded, in order (to compare two cascades). */
struct emitted_log {
	struct snapshot out[8];
	int n;
};

static void keep_emit(const struct snapshot *out, const struct snapshot *base, void *arg)
{
	struct emitted_log *log = arg;

	(void)base;
	cr_assert_lt(log->n, 8);
	cr_assert_eq(snapshot_copy(&log->out[log->n++], out), 0);
}

/*
 * The probe hands its 1 s snapshot to the cascade (rollup_cascade_take),
 * which keeps it rather than copying it: what the minutes and the hour
 * emit is what rollup_cascade emits for the same seconds, bit for bit,
 * with counters reset, histograms and a series coming and going.
 */
Test(rollup, a_cascade_that_takes_its_snapshots_emits_the_same)
{
	struct rollup copied[2], taken[2];
	struct emitted_log a = { 0 }, b = { 0 };
	const uint64_t t0 = 1796166000000ULL - 200 * 1000;	/* 200 s before an hour */

	cr_assert_eq(rollup_init(&copied[0], "h1", 60), 0);
	cr_assert_eq(rollup_init(&copied[1], "h1", 3600), 0);
	cr_assert_eq(rollup_init(&taken[0], "h1", 60), 0);
	cr_assert_eq(rollup_init(&taken[1], "h1", 3600), 0);
	for (int sec = 1; sec <= 330; sec++) {
		struct snapshot s, t;
		struct series *h;

		snapshot_init(&s, "h1", t0 + (uint64_t)sec * 1000, 1000, (uint64_t)sec, 1);
		snapshot_add_counter(&s, "tcp.in_segs", (uint64_t)(sec % 97) * 10, NULL);
		snapshot_add_gauge(&s, "cpu.busy", sec % 7, NULL);
		if (sec % 50 < 25)
			snapshot_add_counter(&s, "tcp.in_errs", (uint64_t)sec, NULL);
		h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "op", "read", NULL);
		for (int k = 0; k < sec; k++)
			hist_record(h->hist, (uint64_t)(1000 + 37 * k));
		cr_assert_eq(snapshot_copy(&t, &s), 0);
		cr_assert_eq(rollup_cascade(copied, 2, &s, keep_emit, &a), 0);
		snapshot_free(&s);
		cr_assert_eq(rollup_cascade_take(taken, 2, &t, keep_emit, &b), 0);
	}
	cr_assert_eq(a.n, 7, "6 minutes and an hour: %d", a.n);
	cr_assert_eq(b.n, a.n);
	for (int i = 0; i < a.n; i++) {
		cr_assert(snapshot_equal(&a.out[i], &b.out[i]), "window %d (tier %u) differs", i,
			  a.out[i].tier);
		snapshot_free(&a.out[i]);
		snapshot_free(&b.out[i]);
	}
	for (int i = 0; i < 2; i++) {
		rollup_free(&copied[i]);
		rollup_free(&taken[i]);
	}
}
