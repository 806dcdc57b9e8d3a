/*
 * fuzz_snapshot.c - libFuzzer target for snapshot_decode() and
 * snapshot_decode_compact() (the rules engine's), the parsers of every byte
 * that comes back from Redis, plain msgpack or a zstd frame.  Whatever
 * decodes must re-encode and decode to the same thing, and the two must
 * agree on what decodes.  Decoded like the previous input (the rules
 * engine's snapshot_decode_like), it must decode the same too.  Decoded on
 * the previous input as its base (snapshot_decode_on: rollup deltas), it
 * must not crash; and what decodes, written as a delta on the previous
 * input where that fits, must decode on it to the very same bits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/snapshot.h"

/* The last input that decoded, as the template of the next (a host's newest). */
static struct snapshot prev;
/* The same, decoded whole: the base of the next delta. */
static struct snapshot base;
static int have_base;

static int same_bits(double a, double b)
{
	return !memcmp(&a, &b, sizeof(double));
}

/* s written as a delta on base decodes on it to s, value for value. */
static void check_delta(const struct snapshot *s)
{
	struct snapshot d;
	char err[256], *buf;
	size_t len;

	if (!have_base || !snapshot_delta_fits(s, &base) ||
	    snapshot_encode_delta(s, &base, &buf, &len))
		return;
	if (snapshot_decode_on(buf, len, &d, &base, 0, err, sizeof(err)))
		abort();
	if (d.nseries != s->nseries)
		abort();
	for (uint32_t i = 0; i < d.nseries; i++) {
		const struct series *x = &s->series[i], *y = &d.series[i];

		if (x->kind != y->kind)
			abort();
		if (x->kind == SERIES_COUNTER && (x->counter.value != y->counter.value ||
						  x->counter.increase != y->counter.increase))
			abort();
		if (x->kind == SERIES_GAUGE &&
		    (!same_bits(x->gauge.last, y->gauge.last) ||
		     !same_bits(x->gauge.min, y->gauge.min) ||
		     !same_bits(x->gauge.max, y->gauge.max) ||
		     !same_bits(x->gauge.sum, y->gauge.sum) || x->gauge.n != y->gauge.n))
			abort();
	}
	snapshot_free(&d);
	free(buf);
}

/* Decoded like prev, data must give what t (its compact decode) holds. */
static void check_like(const uint8_t *data, size_t size, const struct snapshot *t)
{
	struct snapshot u;
	char err[256];

	if (snapshot_decode_like(data, size, &u, prev.host ? &prev : NULL, err, sizeof(err)))
		abort();
	if (u.nseries != t->nseries || strcmp(u.host, t->host))
		abort();
	for (uint32_t i = 0; i < u.nseries; i++)
		if (u.series[i].id != t->series[i].id || strcmp(u.series[i].name, t->series[i].name) ||
		    !snapshot_same_series(&u.series[i], &t->series[i]))
			abort();
	if (snapshot_adopt_strings(&u, &prev) == 0 && prev.host)
		snapshot_free(&prev);
	prev = u;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot s, t;
	char err[256], *buf;
	size_t len;

	int plain = snapshot_decode(data, size, &s, err, sizeof(err));
	int compact = snapshot_decode_compact(data, size, &t, err, sizeof(err));
	struct snapshot on;

	/* a delta on the previous input (or a whole entry, base ignored) */
	if (snapshot_decode_on(data, size, &on, have_base ? &base : NULL, 1, err, sizeof(err)) == 0)
		snapshot_free(&on);

	if (!compact) {
		struct histogram a, b;

		if (plain || t.nseries != s.nseries)
			abort();
		for (uint32_t i = 0; i < t.nseries; i++)
			if (t.series[i].kind == SERIES_HISTOGRAM &&
			    !hist_equal(series_hist(&s.series[i], &a), series_hist(&t.series[i], &b)))
				abort();
		check_like(data, size, &t);
		snapshot_free(&t);
	} else if (!plain) {
		abort();
	}
	if (plain)
		return 0;
	check_delta(&s);
	if (snapshot_encode(&s, &buf, &len) == 0) {
		if (snapshot_decode(buf, len, &t, err, sizeof(err)) != 0)
			abort();
		if (t.nseries != s.nseries || strcmp(t.host, s.host) != 0)
			abort();
		snapshot_free(&t);
		free(buf);
	}
	if (have_base)
		snapshot_free(&base);
	base = s;
	have_base = 1;
	return 0;
}
