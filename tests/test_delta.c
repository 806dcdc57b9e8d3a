/*
 * test_delta.c - rollup entries in version 2 of the wire form: numbers in
 * the fewest exact bytes, constant gauges, and deltas on the entry before
 * (snapshot.h).  Property tests over random and adversarial windows
 * (counter resets, NaN/Inf/-0 gauges, series that come and go, empty
 * histograms): every chain decodes to the very bits it was made of.
 * Entries written by version 1 (tests/data/v1-*) still decode.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/rollup.h"
#include "model/snapshot.h"
#include "model/snapshot_zstd.h"
#include "tests/helpers.h"

static uint64_t rng = 0x9E3779B97F4A7C15ULL;

static uint64_t next(void)
{
	return test_rand(&rng);
}

static int same_bits(double a, double b)
{
	return !memcmp(&a, &b, sizeof(double));
}

/* a and b hold the same series with the same values, to the bit. */
static void assert_identical(const struct snapshot *a, const struct snapshot *b)
{
	struct histogram ha, hb;
	char ka[512], kb[512];

	cr_assert_str_eq(a->host, b->host);
	cr_assert_eq(a->ts_ms, b->ts_ms);
	cr_assert_eq(a->tier, b->tier);
	cr_assert_eq(a->nseries, b->nseries, "%u series became %u", a->nseries, b->nseries);
	for (uint32_t i = 0; i < a->nseries; i++) {
		const struct series *x = &a->series[i], *y = &b->series[i];

		series_key(x, ka, sizeof(ka));
		series_key(y, kb, sizeof(kb));
		cr_assert_str_eq(ka, kb);
		cr_assert_eq(x->kind, y->kind, "%s", ka);
		switch (x->kind) {
		case SERIES_COUNTER:
			cr_assert_eq(x->counter.value, y->counter.value, "%s", ka);
			cr_assert_eq(x->counter.increase, y->counter.increase, "%s", ka);
			break;
		case SERIES_GAUGE:
			cr_assert(same_bits(x->gauge.last, y->gauge.last), "%s last %g / %g", ka,
				  x->gauge.last, y->gauge.last);
			cr_assert(same_bits(x->gauge.min, y->gauge.min), "%s min", ka);
			cr_assert(same_bits(x->gauge.max, y->gauge.max), "%s max", ka);
			cr_assert(same_bits(x->gauge.sum, y->gauge.sum), "%s sum %.17g / %.17g", ka,
				  x->gauge.sum, y->gauge.sum);
			cr_assert_eq(x->gauge.n, y->gauge.n, "%s", ka);
			break;
		case SERIES_HISTOGRAM:
			cr_assert(hist_equal(series_hist(x, &ha), series_hist(y, &hb)), "%s", ka);
			break;
		}
	}
}

/* A gauge value: often one that repeats or is whole, sometimes one that is not a number. */
static double gauge_value(int g, int minute)
{
	static const double odd[] = { NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e300, -1e-310,
				      0.1, 3.0, 0.5 };
	uint64_t r = next();

	switch (g % 5) {
	case 0:
		return (double)(r % 1000) / 997.0;	/* a ratio: every bit is noise */
	case 1:
		return 41.0 + minute / 10;		/* a temperature: whole, steps */
	case 2:
		return odd[r % (sizeof(odd) / sizeof(odd[0]))];
	case 3:
		return (float)(r % 100000) / 8.0f;	/* exact as a float32 */
	default:
		return 47.139912;			/* wear: one value for hours */
	}
}

/*
 * Minute `minute` of a host: counters that grow, reset or stay; gauges of
 * every kind, some constant over the window; a histogram that is empty in
 * some windows; a series that exists only in some.
 */
static void window(struct snapshot *s, uint64_t t0, int minute, uint64_t *counters)
{
	char dev[16];

	cr_assert_eq(snapshot_init(s, "db-7", t0 + (uint64_t)(minute + 1) * 60000, 60000,
				   (uint64_t)minute, 60), 0);
	snapshot_set_label(s, "rack", "r3");
	for (int c = 0; c < 6; c++) {
		struct series *ser;
		uint64_t inc = c == 0 ? 0 : next() % (1ULL << (c * 8));

		snprintf(dev, sizeof(dev), "sd%c", 'a' + c);
		if (c == 5 && next() % 7 == 0) {
			counters[c] = next() % 100;	/* a reset: the value starts over */
			inc = counters[c];
		} else {
			counters[c] += inc;
		}
		ser = snapshot_add_counter(s, "block.ios", counters[c], "device", dev, NULL);
		ser->counter.increase = inc;
	}
	if (minute % 3)		/* a series that comes and goes */
		snapshot_add_counter(s, "tcp.in_csum_errors", 5, NULL)->counter.increase = 0;
	for (int g = 0; g < 10; g++) {
		struct series *ser;
		double a = gauge_value(g, minute), b = gauge_value(g, minute);

		snprintf(dev, sizeof(dev), "g%d", g);
		ser = snapshot_add_gauge(s, "cpu.utilization", a, "cpu", dev, NULL);
		ser->gauge.n = 1 + next() % 60;
		if (g % 5 == 4 || g % 5 == 1 || next() % 3 == 0) {
			/* one value all window, its sum as a probe adds it */
			ser->gauge.sum = 0;
			for (uint64_t k = 0; k < ser->gauge.n; k++)
				ser->gauge.sum += a;
		} else {
			ser->gauge.min = fmin(a, b);
			ser->gauge.max = fmax(a, b);
			ser->gauge.last = b;
			ser->gauge.sum = a + b * (double)(ser->gauge.n - 1);
		}
	}
	struct series *h = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda",
					NULL);
	for (int k = 0; minute % 4 && k < 20; k++)
		hist_record_n(h->hist, next() % 100000000, 1 + next() % 5);
}

/* Decode buf (a delta on base, or whole) and compare it with want. */
static void assert_decodes_to(const char *buf, size_t len, const struct snapshot *base,
			      const struct snapshot *want, struct snapshot *got)
{
	char err[256];

	for (int compact = 0; compact <= 1; compact++) {
		cr_assert_eq(snapshot_decode_on(buf, len, got, base, compact, err, sizeof(err)), 0,
			     "%s", err);
		assert_identical(want, got);
		if (!compact)
			snapshot_free(got);
	}
}

Test(delta, chains_of_random_windows_decode_to_the_bit)
{
	uint64_t t0 = 1796166000000ULL;	/* an hour's start */
	uint64_t counters[6] = { 0 };
	struct snapshot prev = { 0 }, prev_dec = { 0 };
	size_t whole = 0, delta = 0, deltas = 0;

	for (int m = 0; m < 150; m++) {
		struct snapshot s, got;
		char *w, *d;
		size_t wl, dl;
		int fits;

		window(&s, t0, m, counters);
		cr_assert_eq(snapshot_encode(&s, &w, &wl), 0);
		assert_decodes_to(w, wl, NULL, &s, &got);
		snapshot_free(&got);
		fits = m > 0 && snapshot_delta_fits(&s, &prev);
		/* the first window of each hour is never a delta */
		cr_assert_eq(fits, m > 0 && m % 60 != 0, "minute %d", m);
		if (fits) {
			cr_assert_eq(snapshot_encode_delta(&s, &prev, &d, &dl), 0);
			/* the reader's base is what it decoded, not what was written */
			assert_decodes_to(d, dl, &prev_dec, &s, &got);
			snapshot_free(&prev_dec);
			prev_dec = got;
			delta += dl;
			whole += wl;
			deltas++;
			free(d);
		} else {
			cr_assert_eq(snapshot_encode_delta(&s, m ? &prev : &s, &d, &dl), -EINVAL);
			if (m)
				snapshot_free(&prev_dec);
			assert_decodes_to(w, wl, NULL, &s, &prev_dec);
		}
		free(w);
		if (m)
			snapshot_free(&prev);
		prev = s;
	}
	cr_assert_eq(deltas, 147);
	cr_assert_lt(delta, whole, "deltas %zu bytes, whole entries %zu", delta, whole);
	snapshot_free(&prev);
	snapshot_free(&prev_dec);
}

Test(delta, a_delta_without_its_base_is_an_error_that_says_so)
{
	uint64_t t0 = 1796166000000ULL, counters[6] = { 0 };
	struct snapshot a, b, c, got;
	char err[256], *d;
	size_t dl;

	window(&a, t0, 0, counters);
	window(&b, t0, 1, counters);
	window(&c, t0, 2, counters);
	cr_assert_eq(snapshot_encode_delta(&c, &b, &d, &dl), 0);
	cr_assert_eq(snapshot_decode_on(d, dl, &got, NULL, 1, err, sizeof(err)), -ENOLINK);
	cr_assert(strstr(err, "a delta on the entry at 1796166120000 ms") &&
		  strstr(err, "not read"), "%s", err);
	cr_assert_eq(snapshot_decode_on(d, dl, &got, &a, 1, err, sizeof(err)), -ENOLINK);
	cr_assert(strstr(err, "another"), "%s", err);
	/* the plain decoders know no base */
	cr_assert_eq(snapshot_decode(d, dl, &got, err, sizeof(err)), -ENOLINK);
	/* not a delta across a gap, another host, or another tier */
	cr_assert_eq(snapshot_delta_fits(&c, &a), 0);
	free(b.host);
	b.host = strdup("db-8");
	cr_assert_eq(snapshot_delta_fits(&c, &b), 0);
	free(d);
	snapshot_free(&a);
	snapshot_free(&b);
	snapshot_free(&c);
}

static void str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

/* A base's value (nil) in an entry that names no base is an error, not a zero. */
Test(delta, nil_outside_a_delta_is_an_error)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct snapshot got;
	char err[256];

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 5);
	str(&pk, "v");
	msgpack_pack_uint32(&pk, 2);
	str(&pk, "host");
	str(&pk, "db-7");
	str(&pk, "ts");
	msgpack_pack_uint64(&pk, 1796166060000ULL);
	str(&pk, "tier");
	msgpack_pack_uint32(&pk, 60);
	str(&pk, "s");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_array(&pk, 4);
	str(&pk, "drive.temperature_c");
	msgpack_pack_map(&pk, 0);
	msgpack_pack_uint8(&pk, 1);
	msgpack_pack_array(&pk, 2);
	msgpack_pack_nil(&pk);
	msgpack_pack_uint8(&pk, 60);
	cr_assert_eq(snapshot_decode_on(sb.data, sb.size, &got, NULL, 1, err, sizeof(err)),
		     -EINVAL);
	cr_assert(strstr(err, "drive.temperature_c") && strstr(err, "not a delta"), "%s", err);
	msgpack_sbuffer_destroy(&sb);
}

Test(delta, a_base_that_lacks_a_series_is_an_error_not_a_guess)
{
	uint64_t t0 = 1796166000000ULL, counters[6] = { 0 };
	struct snapshot a, b, got;
	char err[256], *d;
	size_t dl;

	window(&a, t0, 0, counters);
	window(&b, t0, 1, counters);
	cr_assert_eq(snapshot_encode_delta(&b, &a, &d, &dl), 0);
	/* the reader's base misses block.ios{device=sdb} (as a damaged one would) */
	for (uint32_t i = 0; i < a.nseries; i++)
		if (!strcmp(a.series[i].name, "block.ios") &&
		    !strcmp(series_label(&a.series[i], "device"), "sdb")) {
			free(a.series[i].labels[0].value);
			a.series[i].labels[0].value = strdup("sdz");
			a.series[i].id ^= 1;
		}
	cr_assert_eq(snapshot_decode_on(d, dl, &got, &a, 1, err, sizeof(err)), -ENOLINK);
	cr_assert(strstr(err, "block.ios") && strstr(err, "lacks the series"), "%s", err);
	free(d);
	snapshot_free(&a);
	snapshot_free(&b);
}

Test(delta, numbers_take_the_fewest_bytes_that_hold_them)
{
	static const double v[] = { 28934, 1, 0, -3, 0.5, 1e10, 0.1, -0.0, INFINITY, NAN, 1e300,
				    4.9e-324 };
	struct snapshot s, got;
	char err[256], *buf;
	size_t len, v1len = 0;	/* the names and numbers as version 1 wrote them */

	setenv("FAULTLINE_WIRE_COMPRESS", "0", 1);	/* read once per process: this test's */
	cr_assert_eq(snapshot_init(&s, "h", 1796166060000ULL, 1000, 0, 1), 0);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char name[16];

		snprintf(name, sizeof(name), "g.%zu", i);
		snapshot_add_gauge(&s, name, v[i], NULL);
		v1len += 9 + 1 + strlen(name) + 3;	/* [name, {}, 1, float64] */
	}
	cr_assert_eq(snapshot_encode(&s, &buf, &len), 0);
	cr_assert_eq(snapshot_decode(buf, len, &got, err, sizeof(err)), 0, "%s", err);
	assert_identical(&s, &got);
	/* 28934 as a uint16, 0.5 as a float32, 0.1 as the float64 it must stay */
	cr_assert(memmem(buf, len, "\xcd\x71\x06", 3), "28934 not 3 bytes");
	cr_assert(memmem(buf, len, "\xca\x3f\x00\x00\x00", 5), "0.5 not a float32");
	cr_assert(memmem(buf, len, "\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a", 9), "0.1 changed");
	cr_assert_lt(len, v1len + 12 * 8, "%zu bytes", len);
	/* a 1 s snapshot with none of the v2 forms says version 1: old readers read it */
	cr_assert_eq((unsigned char)buf[0] & 0xf0, 0x80);
	cr_assert(memmem(buf, len, "\xa1v\x01", 3), "not version 1");
	free(buf);
	snapshot_free(&got);
	snapshot_free(&s);
}

/* An entry of tests/data, as Redis held it. */
static char *fixture(const char *name, size_t *len)
{
	char path[256];
	FILE *f;
	char *buf = malloc(1 << 16);

	snprintf(path, sizeof(path), "tests/data/%s", name);
	f = fopen(path, "rb");
	cr_assert_not_null(f, "%s (run from the repository's top)", path);
	*len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

Test(delta, entries_of_version_1_still_decode)
{
	static const char *const names[] = { "v1-rollup-s60.msgpack", "v1-rollup-s60.zst",
					     "v1-snapshot-s1.zst" };

	for (size_t k = 0; k < 3; k++) {
		struct snapshot s, again;
		char err[256], *buf, *re;
		size_t len, relen;
		struct series *ser;

		buf = fixture(names[k], &len);
		cr_assert_eq(snapshot_decode_on(buf, len, &s, NULL, 1, err, sizeof(err)), 0,
			     "%s: %s", names[k], err);
		cr_assert_str_eq(s.host, "sw000-r0000-h00");
		cr_assert_eq(s.tier, k < 2 ? 60 : 1);
		ser = snapshot_find(&s, "drive.smart_passed{device=sda,model=SAMSUNG MZ7LH960HAJR-00005}");
		cr_assert_not_null(ser, "%s", names[k]);
		cr_assert_eq(ser->gauge.last, 1.0);
		if (k == 0) {	/* the one printed in docs: values as they were */
			cr_assert_eq(s.ts_ms, 1796165940000ULL);
			cr_assert_eq(s.nseries, 30);
			ser = snapshot_find(&s, "tcp.in_segs{}");
			cr_assert_eq(ser->counter.value, 1874544);
			cr_assert_eq(ser->counter.increase, 314890);
			ser = snapshot_find(&s, "cpu.host_utilization{}");
			cr_assert_eq(ser->gauge.n, 60);
		}
		/* and what this version writes of it reads back the same */
		cr_assert_eq(snapshot_encode(&s, &re, &relen), 0);
		cr_assert_eq(snapshot_decode_on(re, relen, &again, NULL, 1, err, sizeof(err)), 0,
			     "%s", err);
		assert_identical(&s, &again);
		snapshot_free(&again);
		snapshot_free(&s);
		free(re);
		free(buf);
	}
}

/* rollup_cascade hands each window its predecessor: the base a writer chains on. */
static struct {
	int n, with_base, fits;
} emitted;

static void count_emit(const struct snapshot *out, const struct snapshot *base, void *arg)
{
	(void)arg;
	if (out->tier != 60)
		return;
	emitted.n++;
	emitted.with_base += base != NULL;
	emitted.fits += snapshot_delta_fits(out, base);
}

Test(delta, the_cascade_gives_each_window_the_one_before)
{
	struct rollup r[2];
	uint64_t t0 = 1796166000000ULL;

	cr_assert_eq(rollup_init(&r[0], "db-7", 60), 0);
	cr_assert_eq(rollup_init(&r[1], "db-7", 3600), 0);
	for (int sec = 1; sec <= 3 * 3600 + 1; sec++) {
		struct snapshot s;

		snapshot_init(&s, "db-7", t0 + (uint64_t)sec * 1000, 1000, (uint64_t)sec, 1);
		snapshot_add_counter(&s, "tcp.in_segs", (uint64_t)sec * 10, NULL);
		snapshot_add_gauge(&s, "drive.temperature_c", 40, NULL);
		cr_assert_eq(rollup_cascade(r, 2, &s, count_emit, NULL), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(emitted.n, 180);
	cr_assert_eq(emitted.with_base, 179);
	/* 3 hours: all but each hour's first window chain */
	cr_assert_eq(emitted.fits, 177);
	rollup_free(&r[0]);
	rollup_free(&r[1]);
}
