/*
 * snapshot_encode.c - a snapshot written in its msgpack wire form, whole or
 * as a delta on a base snapshot (snapshot_encode, snapshot_encode_delta);
 * see snapshot.h for the contract and DESIGN.md for the format.  The model
 * is snapshot.c, the decoder snapshot_decode.c.
 */
#include "model/snapshot.h"
#include "model/snapshot_internal.h"
#include "model/snapshot_zstd.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "model/wire.h"

static void pack_labels(msgpack_packer *pk, const struct label *l, uint32_t n)
{
	msgpack_pack_map(pk, n);
	for (uint32_t i = 0; i < n; i++) {
		wire_pack_str(pk, l[i].key);
		wire_pack_str(pk, l[i].value);
	}
}

static void pack_hist(msgpack_packer *pk, const struct histogram *h)
{
	uint32_t n = (uint32_t)hist_nonempty(h), prev = 0;
	int first = 1;

	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, h->count);
	msgpack_pack_uint64(pk, h->sum);
	msgpack_pack_array(pk, n * 2);
	for (uint32_t i = 0; i < HIST_BUCKETS; i++) {
		if (!h->buckets[i])
			continue;
		msgpack_pack_uint32(pk, first ? i : i - prev - 1);
		msgpack_pack_uint64(pk, h->buckets[i]);
		prev = i;
		first = 0;
	}
}

/* The same wire form from a compact histogram. */
static void pack_sparse(msgpack_packer *pk, const struct hist_sparse *h)
{
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, h->count);
	msgpack_pack_uint64(pk, h->sum);
	msgpack_pack_array(pk, h->nruns * 2);
	for (uint32_t i = 0; i < h->nruns; i++) {
		msgpack_pack_uint32(pk, i ? h->runs[i].index - h->runs[i - 1].index - 1 :
				    h->runs[i].index);
		msgpack_pack_uint64(pk, h->runs[i].count);
	}
}

/*
 * Pack a gauge's double in the fewest bytes that hold it exactly: an
 * integer when it is one (drive gauges, counts, sums of them), a float32
 * when that is exact, else a float64.  Readers take any of the three.
 */
static void pack_num(msgpack_packer *pk, double x)
{
	if (isfinite(x) && x == trunc(x) && fabs(x) < 0x1p63 && !(x == 0 && signbit(x))) {
		if (x >= 0)
			msgpack_pack_uint64(pk, (uint64_t)x);
		else
			msgpack_pack_int64(pk, (int64_t)x);
	} else if (!isnan(x) && (double)(float)x == x) {
		msgpack_pack_float(pk, (float)x);
	} else {
		msgpack_pack_double(pk, x);
	}
}

/* Whether a gauge held one value, to the bit, over its window of more than one. */
static int gauge_constant(const struct gauge_value *g)
{
	return g->n > 1 && !memcmp(&g->min, &g->last, sizeof(double)) &&
	       !memcmp(&g->max, &g->last, sizeof(double));
}

/* Whether a constant gauge's sum is last x n to the bit (then it is not written). */
static int gauge_sum_implied(const struct gauge_value *g)
{
	double implied = g->last * (double)g->n;

	return !memcmp(&implied, &g->sum, sizeof(double));
}

const struct series *snapshot_base_series(const struct snapshot *base, const struct series *ser,
					  uint32_t hint)
{
	const struct series *b;

	if (!base)
		return NULL;
	b = snapshot_find_same(base, ser, hint);
	return b && b->kind == ser->kind ? b : NULL;
}

/* A counter that is its base's value plus its increase: written [nil, increase]. */
static int counter_on_base(const struct series *ser, const struct series *b)
{
	return b && b->counter.value + ser->counter.increase >= b->counter.value &&
	       b->counter.value + ser->counter.increase == ser->counter.value;
}

/* A constant gauge at its base's last value: written [nil, n] or [nil, n, sum]. */
static int gauge_on_base(const struct series *ser, const struct series *b)
{
	return b && gauge_constant(&ser->gauge) &&
	       !memcmp(&b->gauge.last, &ser->gauge.last, sizeof(double));
}

/* Whether s needs version 2 of the wire form (the forms version 1 readers lack). */
static int needs_v2(const struct snapshot *s, const struct snapshot *base)
{
	if (base)
		return 1;
	for (uint32_t i = 0; i < s->nseries; i++)
		if (s->series[i].kind == SERIES_GAUGE && gauge_constant(&s->series[i].gauge))
			return 1;
	return 0;
}

static void pack_series(msgpack_packer *pk, const struct series *ser, uint32_t tier,
			const struct series *b)
{
	const struct gauge_value *g = &ser->gauge;

	msgpack_pack_array(pk, 4);
	wire_pack_str(pk, ser->name);
	pack_labels(pk, ser->labels, ser->nlabels);
	msgpack_pack_uint8(pk, (uint8_t)ser->kind);
	switch (ser->kind) {
	case SERIES_COUNTER:
		if (tier <= 1 && ser->counter.increase == 0) {
			msgpack_pack_uint64(pk, ser->counter.value);
		} else {
			msgpack_pack_array(pk, 2);
			if (counter_on_base(ser, b))
				msgpack_pack_nil(pk);
			else
				msgpack_pack_uint64(pk, ser->counter.value);
			msgpack_pack_uint64(pk, ser->counter.increase);
		}
		break;
	case SERIES_GAUGE:
		if (g->n <= 1 && g->min == g->last && g->max == g->last) {
			pack_num(pk, g->last);
		} else if (gauge_constant(g)) {
			int implied = gauge_sum_implied(g);

			msgpack_pack_array(pk, implied ? 2 : 3);
			if (gauge_on_base(ser, b))
				msgpack_pack_nil(pk);
			else
				pack_num(pk, g->last);
			msgpack_pack_uint64(pk, g->n);
			if (!implied)
				pack_num(pk, g->sum);
		} else {
			msgpack_pack_array(pk, 5);
			pack_num(pk, g->last);
			pack_num(pk, g->min);
			pack_num(pk, g->max);
			pack_num(pk, g->sum);
			msgpack_pack_uint64(pk, g->n);
		}
		break;
	case SERIES_HISTOGRAM:
		if (ser->sparse)
			pack_sparse(pk, ser->sparse);
		else
			pack_hist(pk, ser->hist);
		break;
	}
}

uint64_t snapshot_delta_span_ms(uint32_t tier)
{
	if (tier >= 86400 || tier <= 1)
		return 0;
	/* a chain of at most 60 minutes, or of 24 hours */
	return tier < 3600 ? 3600000ULL : 86400000ULL;
}

int snapshot_delta_fits(const struct snapshot *s, const struct snapshot *base)
{
	uint64_t span = snapshot_delta_span_ms(s->tier), iv = (uint64_t)s->tier * 1000;

	if (!span || !base || base->tier != s->tier || strcmp(base->host, s->host) ||
	    s->ts_ms < iv || base->ts_ms != s->ts_ms - iv || base->ts_ms < iv)
		return 0;
	/* both windows start in the same span: a reader from the span's start meets a whole entry */
	return (base->ts_ms - iv) / span == (s->ts_ms - iv) / span;
}

static int encode(const struct snapshot *s, const struct snapshot *base, char **out,
		  size_t *outlen)
{
	int v2 = needs_v2(s, base);
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, base ? 9 : 8);
	wire_pack_str(&pk, "v");
	msgpack_pack_uint32(&pk, v2 ? SNAPSHOT_VERSION : 1);
	wire_pack_str(&pk, "host");
	wire_pack_str(&pk, s->host);
	wire_pack_str(&pk, "ts");
	msgpack_pack_uint64(&pk, s->ts_ms);
	wire_pack_str(&pk, "iv");
	msgpack_pack_uint64(&pk, s->interval_ms);
	wire_pack_str(&pk, "seq");
	msgpack_pack_uint64(&pk, s->seq);
	wire_pack_str(&pk, "tier");
	msgpack_pack_uint32(&pk, s->tier);
	if (base) {
		wire_pack_str(&pk, "base");
		msgpack_pack_uint64(&pk, base->ts_ms);
	}
	wire_pack_str(&pk, "lbl");
	pack_labels(&pk, s->labels, s->nlabels);
	wire_pack_str(&pk, "s");
	msgpack_pack_array(&pk, s->nseries);
	for (uint32_t i = 0; i < s->nseries; i++)
		pack_series(&pk, &s->series[i], s->tier, snapshot_base_series(base, &s->series[i], i));
	/* sbuffer grows by realloc; a failed realloc leaves data NULL */
	if (!sb.data && s->nseries) {
		msgpack_sbuffer_destroy(&sb);
		return -ENOMEM;
	}
	/* compressed when that is smaller (snapshot_zstd.h) */
	{
		void *z;
		size_t zlen;
		int ret = snapshot_zstd_pack(sb.data, sb.size, s->tier, &z, &zlen);

		if (ret == -ENOMEM) {
			msgpack_sbuffer_destroy(&sb);
			return -ENOMEM;
		}
		if (!ret) {
			msgpack_sbuffer_destroy(&sb);
			*out = z;
			*outlen = zlen;
			return 0;
		}
	}
	*out = sb.data;
	*outlen = sb.size;
	return 0;
}

int snapshot_encode(const struct snapshot *s, char **out, size_t *outlen)
{
	return encode(s, NULL, out, outlen);
}

int snapshot_encode_delta(const struct snapshot *s, const struct snapshot *base, char **out,
			  size_t *outlen)
{
	if (!snapshot_delta_fits(s, base))
		return -EINVAL;
	return encode(s, base, out, outlen);
}
