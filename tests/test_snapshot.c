/*
 * test_snapshot.c - snapshot model and codec: round trip, versioning, and
 * hostile input (truncated, oversized, wrong-typed, random).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/catalog.h"
#include "model/chunk.h"
#include "model/rollup.h"
#include "model/snapshot.h"
#include "model/snapshot_zstd.h"

static void build(struct snapshot *s)
{
	struct series *h;

	cr_assert_eq(snapshot_init(s, "db-17", 1764500000123ULL, 1000, 42, 1), 0);
	cr_assert_eq(snapshot_set_label(s, "rack", "r12"), 0);
	cr_assert_not_null(snapshot_add_counter(s, "tcp.in_csum_errors", 17, NULL));
	cr_assert_not_null(snapshot_add_counter(s, "block.ios", 99, "op", "write",
						"device", "nvme0n1", NULL));
	cr_assert_not_null(snapshot_add_gauge(s, "drive.temperature_c", 41.5,
					      "device", "nvme0n1", NULL));
	h = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "nvme0n1", "op",
			 "write", NULL);
	cr_assert_not_null(h);
	for (uint64_t v = 1; v < 1ULL << 40; v *= 3)
		hist_record_n(h->hist, v, v % 7 + 1);
	hist_record(h->hist, UINT64_MAX);
}

static void assert_same(const struct snapshot *a, const struct snapshot *b)
{
	char ka[512], kb[512];

	cr_assert_str_eq(a->host, b->host);
	cr_assert_eq(a->ts_ms, b->ts_ms);
	cr_assert_eq(a->interval_ms, b->interval_ms);
	cr_assert_eq(a->seq, b->seq);
	cr_assert_eq(a->tier, b->tier);
	cr_assert_eq(a->nlabels, b->nlabels);
	cr_assert_eq(a->nseries, b->nseries);
	for (uint32_t i = 0; i < a->nseries; i++) {
		const struct series *x = &a->series[i], *y = &b->series[i];

		series_key(x, ka, sizeof(ka));
		series_key(y, kb, sizeof(kb));
		cr_assert_str_eq(ka, kb);
		cr_assert_eq(x->kind, y->kind);
		if (x->kind == SERIES_COUNTER) {
			cr_assert_eq(x->counter.value, y->counter.value);
			cr_assert_eq(x->counter.increase, y->counter.increase);
		} else if (x->kind == SERIES_GAUGE) {
			cr_assert_eq(x->gauge.last, y->gauge.last);
			cr_assert_eq(x->gauge.min, y->gauge.min);
			cr_assert_eq(x->gauge.max, y->gauge.max);
			cr_assert_eq(x->gauge.n, y->gauge.n);
		} else {
			cr_assert(hist_equal(x->hist, y->hist));
		}
	}
}

Test(snapshot, labels_sorted_into_canonical_key)
{
	struct snapshot s;
	char key[256];

	build(&s);
	series_key(&s.series[1], key, sizeof(key));
	cr_assert_str_eq(key, "block.ios{device=nvme0n1,op=write}");
	cr_assert_not_null(snapshot_find(&s, "tcp.in_csum_errors{}"));
	cr_assert_str_eq(series_label(&s.series[1], "op"), "write");
	/* a buffer too short: cut and terminated, the length it needed returned (as snprintf) */
	for (size_t len = 0; len < 40; len++) {
		char cut[40];

		memset(cut, 'x', sizeof(cut));
		cr_assert_eq(series_key(&s.series[1], cut, len), 34, "len %zu", len);
		if (len)
			cr_assert(strlen(cut) == (len - 1 < 34 ? len - 1 : 34) &&
				  !strncmp(cut, "block.ios{device=nvme0n1,op=write}", strlen(cut)),
				  "len %zu: %s", len, cut);
		else
			cr_assert_eq(cut[0], 'x', "len 0 writes nothing");
	}
	snapshot_free(&s);
}

/*
 * A label set given at once (snapshot_set_labels, a chunk's points) leaves
 * what setting its labels one by one leaves: in one block when it is as
 * snapshot_set_label keeps them, label by label when not (unsorted, a key
 * twice, a value too long) or when the snapshot has labels; a key
 * set_label refuses (empty) is refused with nothing set.
 */
Test(snapshot, a_label_set_given_at_once_is_the_one_set_label_by_label)
{
	char long_value[SNAPSHOT_MAX_STR + 2];
	const struct label good[] = { { "rack", "r7" }, { "site", "s1" }, { "switch", "sw3" } };
	const struct label unsorted[] = { { "site", "s1" }, { "rack", "r7" } };
	const struct label twice[] = { { "rack", "r7" }, { "rack", "r8" } };
	const struct label empty_key[] = { { "", "x" } };
	struct label too_long[] = { { "rack", long_value } };
	struct snapshot a, b;

	memset(long_value, 'v', sizeof(long_value) - 1);
	long_value[sizeof(long_value) - 1] = '\0';
	snapshot_init(&a, "h1", 1000, 1000, 1, 1);
	snapshot_init(&b, "h1", 1000, 1000, 1, 1);
	cr_assert_eq(snapshot_set_labels(&a, good, 3), 0);
	for (int i = 2; i >= 0; i--)
		cr_assert_eq(snapshot_set_label(&b, good[i].key, good[i].value), 0);
	cr_assert_eq(a.nlabels, 3);
	for (uint32_t i = 0; i < 3; i++) {
		cr_assert_str_eq(a.labels[i].key, b.labels[i].key);
		cr_assert_str_eq(a.labels[i].value, b.labels[i].value);
		cr_assert_neq(a.labels[i].key, good[i].key, "copied, not borrowed");
	}
	cr_assert(a.labels_one, "one block");
	/* a copy holds the same; a label changed or added after: as on b */
	struct snapshot c;

	cr_assert_eq(snapshot_copy(&c, &a), 0);
	cr_assert(snapshot_equal(&c, &b));
	cr_assert_eq(snapshot_set_label(&a, "rack", "r9"), 0);
	cr_assert_eq(snapshot_set_label(&b, "rack", "r9"), 0);
	cr_assert_eq(snapshot_set_label(&a, "row", "2"), 0);
	cr_assert_eq(snapshot_set_label(&b, "row", "2"), 0);
	cr_assert(!a.labels_one, "separate strings once one changed");
	cr_assert(snapshot_equal(&a, &b));
	cr_assert_str_eq(c.labels[0].value, "r7", "the copy kept its own");
	snapshot_free(&c);
	snapshot_free(&a);
	snapshot_free(&b);
	/* not a canonical set: set label by label, as set_label leaves them */
	const struct label *odd[] = { unsorted, twice, too_long };
	const uint32_t nodd[] = { 2, 2, 1 };

	for (int k = 0; k < 3; k++) {
		snapshot_init(&a, "h1", 1000, 1000, 1, 1);
		snapshot_init(&b, "h1", 1000, 1000, 1, 1);
		cr_assert_eq(snapshot_set_labels(&a, odd[k], nodd[k]), 0, "set %d", k);
		for (uint32_t i = 0; i < nodd[k]; i++)
			cr_assert_eq(snapshot_set_label(&b, odd[k][i].key, odd[k][i].value), 0);
		cr_assert(snapshot_equal(&a, &b), "set %d", k);
		cr_assert(!a.labels_one, "set %d", k);
		snapshot_free(&a);
		snapshot_free(&b);
	}
	/* a key set_label refuses: refused, nothing set */
	snapshot_init(&a, "h1", 1000, 1000, 1, 1);
	const struct label half_bad[] = { { "rack", "r7" }, { "", "x" } };

	cr_assert_eq(snapshot_set_labels(&a, empty_key, 1), -EINVAL);
	cr_assert_eq(snapshot_set_labels(&a, half_bad, 2), -EINVAL);
	cr_assert_eq(a.nlabels, 0);
	cr_assert_null(a.labels);
	snapshot_free(&a);
	/* on a snapshot with labels: added to them, as set_label does */
	snapshot_init(&a, "h1", 1000, 1000, 1, 1);
	snapshot_init(&b, "h1", 1000, 1000, 1, 1);
	cr_assert_eq(snapshot_set_label(&a, "zone", "z1"), 0);
	cr_assert_eq(snapshot_set_labels(&a, good, 3), 0);
	cr_assert_eq(snapshot_set_label(&b, "zone", "z1"), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(snapshot_set_label(&b, good[i].key, good[i].value), 0);
	cr_assert(snapshot_equal(&a, &b));
	snapshot_free(&a);
	snapshot_free(&b);
	snapshot_init(&a, "h1", 1000, 1000, 1, 1);
	cr_assert_eq(snapshot_set_labels(&a, NULL, 0), 0);
	cr_assert_eq(a.nlabels, 0);
	snapshot_free(&a);
}

Test(snapshot, round_trip)
{
	struct snapshot s, d;
	char err[256], *buf;
	size_t len;

	build(&s);
	cr_assert_eq(snapshot_encode(&s, &buf, &len), 0);
	cr_assert_eq(snapshot_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	assert_same(&s, &d);
	free(buf);
	snapshot_free(&d);
	snapshot_free(&s);
}

Test(snapshot, round_trip_rollup_forms)
{
	struct snapshot s, d;
	char err[256], *buf;
	size_t len;
	struct series *c, *g;

	cr_assert_eq(snapshot_init(&s, "h", 60000, 60000, 1, 60), 0);
	c = snapshot_add_counter(&s, "c", 1000, NULL);
	c->counter.increase = 60;
	g = snapshot_add_gauge(&s, "g", 3.0, NULL);
	g->gauge.min = -1;
	g->gauge.max = 9;
	g->gauge.sum = 120;
	g->gauge.n = 60;
	cr_assert_eq(snapshot_encode(&s, &buf, &len), 0);
	cr_assert_eq(snapshot_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	assert_same(&s, &d);
	cr_assert_eq(d.series[0].counter.increase, 60);
	cr_assert_eq(d.series[1].gauge.sum, 120);
	free(buf);
	snapshot_free(&d);
	snapshot_free(&s);
}

Test(snapshot, sparse_encoding_is_compact)
{
	struct snapshot s;
	struct series *h;
	char *buf;
	size_t len;

	snapshot_init(&s, "h", 1, 1000, 0, 1);
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, NULL);
	hist_record_n(h->hist, 250000, 1000);
	hist_record_n(h->hist, 4000000, 10);
	cr_assert_eq(snapshot_encode(&s, &buf, &len), 0);
	/* 976 dense buckets would be > 976 bytes; two runs are a few bytes */
	cr_assert_lt(len, 120, "encoded %zu bytes", len);
	free(buf);
	snapshot_free(&s);
}

/* s encoded as plain msgpack, as every entry before compression (and the inside of a frame). */
static void encode_plain(const struct snapshot *s, char **buf, size_t *len)
{
	char err[256];
	void *plain;
	size_t plen;

	cr_assert_eq(snapshot_encode(s, buf, len), 0);
	if (!snapshot_zstd_is_frame(*buf, *len))
		return;
	cr_assert_eq(snapshot_zstd_unpack(*buf, *len, SNAPSHOT_MAX_BYTES, &plain, &plen, err,
					  sizeof(err)), 0, "%s", err);
	free(*buf);
	*buf = plain;
	*len = plen;
}

/* A probe's 1 s snapshot as the simulator writes one: what compression is for. */
static void build_probe_like(struct snapshot *s, uint32_t tier)
{
	snapshot_init(s, "sw000-r0000-h00", 1796151420000ULL, tier * 1000, 30, tier);
	snapshot_set_label(s, "rack", "r0000");
	snapshot_set_label(s, "switch", "sw000");
	for (int c = 0; c < 4; c++) {
		char cpu[4];

		snprintf(cpu, sizeof(cpu), "%d", c);
		snapshot_add_gauge(s, "cpu.utilization", 0.29 + c / 100.0, "cpu", cpu, NULL);
		snapshot_add_gauge(s, "cpu.utilization_max", 0.41 + c / 97.0, "cpu", cpu, NULL);
	}
	snapshot_add_counter(s, "tcp.in_segs", 9642834, NULL);
	snapshot_add_counter(s, "tcp.out_segs", 9274708, NULL);
	snapshot_add_counter(s, "tcp.in_csum_errors", 0, NULL);
	for (int op = 0; op < 2; op++) {
		const char *name = op ? "write" : "read";
		struct series *h;

		snapshot_add_counter(s, "block.ios", 348352 + op, "device", "sda", "op", name, NULL);
		snapshot_add_counter(s, "block.bytes", 5707399168ULL, "device", "sda", "op", name,
				     NULL);
		h = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "model",
				 "SAMSUNG MZ7LH960HAJR-00005", "op", name, NULL);
		for (uint64_t v = 20000; v < 20000000; v = v * 11 / 10)
			hist_record_n(h->hist, v, 1 + v % 97);
	}
	snapshot_add_gauge(s, "drive.wear_used_pct", 47.1, "device", "sda", "model",
			   "SAMSUNG MZ7LH960HAJR-00005", NULL);
	snapshot_add_gauge(s, "drive.temperature_c", 36, "device", "sda", "model",
			   "SAMSUNG MZ7LH960HAJR-00005", NULL);
}

Test(snapshot, entries_are_compressed_and_round_trip)
{
	for (uint32_t tier = 1; tier <= 60; tier += 59) {
		struct snapshot s, d;
		char err[256], *z, *plain;
		size_t zlen, plen;

		build_probe_like(&s, tier);
		cr_assert_eq(snapshot_encode(&s, &z, &zlen), 0);
		cr_assert(snapshot_zstd_is_frame(z, zlen), "tier %u not compressed", tier);
		encode_plain(&s, &plain, &plen);
		cr_assert_lt(zlen * 3, plen, "tier %u: %zu bytes compressed of %zu", tier, zlen, plen);
		cr_assert_eq(snapshot_decode(z, zlen, &d, err, sizeof(err)), 0, "%s", err);
		assert_same(&s, &d);
		snapshot_free(&d);
		/* an entry written before compression reads the same */
		cr_assert_eq(snapshot_decode(plain, plen, &d, err, sizeof(err)), 0, "%s", err);
		assert_same(&s, &d);
		snapshot_free(&d);
		free(z);
		/* and a frame made without a dictionary (id 0, as profile windows are) */
		cr_assert_eq(snapshot_zstd_pack_level(plain, plen, 3, (void **)&z, &zlen), 0);
		cr_assert(snapshot_zstd_is_frame(z, zlen));
		cr_assert_eq(snapshot_decode(z, zlen, &d, err, sizeof(err)), 0, "%s", err);
		assert_same(&s, &d);
		snapshot_free(&d);
		free(z);
		free(plain);
		snapshot_free(&s);
	}
}

Test(snapshot, compression_can_be_turned_off)
{
	struct snapshot s;
	char *buf;
	size_t len;

	setenv("FAULTLINE_WIRE_COMPRESS", "0", 1);	/* read once per process: this test's */
	build_probe_like(&s, 1);
	cr_assert_eq(snapshot_encode(&s, &buf, &len), 0);
	cr_assert(!snapshot_zstd_is_frame(buf, len));
	cr_assert_eq((unsigned char)buf[0] & 0xf0, 0x80, "not a msgpack map");
	free(buf);
	snapshot_free(&s);
}

/* A minute of 60 one-second ratios x (xorshift), rolled up and encoded plain. */
static size_t minute_of_ratios(int at_resolution, struct gauge_value *g)
{
	uint64_t x = 0x9E3779B97F4A7C15ULL;
	struct snapshot s, out;
	struct rollup r;
	char *buf, err[128];
	size_t len;

	cr_assert_eq(rollup_init(&r, "h", 60), 0);
	for (int i = 1; i <= 60; i++) {
		double u;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		u = (double)(x >> 11) / 9007199254740992.0;
		cr_assert_eq(snapshot_init(&s, "h", 60000 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1), 0);
		snapshot_add_gauge(&s, "cpu.utilization", at_resolution ? catalog_ratio(u) : u, "cpu",
				   "0", NULL);
		cr_assert_eq(rollup_add(&r, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(rollup_finish(&r, &out), 0);
	cr_assert_eq(snapshot_encode(&out, &buf, &len), 0);
	snapshot_free(&out);
	cr_assert_eq(snapshot_decode(buf, len, &out, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(out.nseries, 1);
	*g = out.series[0].gauge;
	snapshot_free(&out);
	rollup_free(&r);
	free(buf);
	return len;
}

/*
 * Ratios at their resolution (catalog_ratio: multiples of 2^-16, what the
 * probe and the simulator report): within half a step of the value, stable,
 * and a minute's last, min, max and sum each hold in a float32, so the
 * entry is 16 bytes smaller than with full doubles, to the bit on decode.
 */
Test(snapshot, ratios_at_their_resolution_pack_in_four_bytes)
{
	struct gauge_value full, q;
	size_t full_len, q_len;

	setenv("FAULTLINE_WIRE_COMPRESS", "0", 1);	/* read once per process: this test's */
	cr_assert_eq(catalog_ratio(0), 0);
	cr_assert_eq(catalog_ratio(1), 1);
	cr_assert(isnan(catalog_ratio(NAN)));
	cr_assert(isinf(catalog_ratio(INFINITY)));
	for (double u = 0.0001; u < 1; u += 0.0173) {
		double r = catalog_ratio(u);

		cr_assert_leq(fabs(r - u), 0.5 / 65536, "%.17g -> %.17g", u, r);
		cr_assert_eq(catalog_ratio(r), r);
		cr_assert_eq((double)(float)r, r, "%.17g is not a float32", r);
	}
	full_len = minute_of_ratios(0, &full);
	q_len = minute_of_ratios(1, &q);
	cr_assert_eq(q.n, 60, "%lu seconds in the minute", (unsigned long)q.n);
	cr_assert_eq((double)(float)q.sum, q.sum, "a minute's sum %.17g is not a float32", q.sum);
	cr_assert_eq(catalog_ratio(q.last), q.last, "decoded to the bit");
	cr_assert_eq(full_len - q_len, 16, "%zu bytes plain, %zu at the resolution", full_len, q_len);
	cr_assert_leq(fabs(q.sum / 60 - full.sum / 60), 0.5 / 65536, "the mean moved");
}

Test(snapshot, bad_frames_are_errors_that_say_why)
{
	struct snapshot s, d;
	char err[256], *z, *mut;
	size_t zlen, off;
	uint64_t x = 0x2545F4914F6CDD1DULL;

	build_probe_like(&s, 1);
	cr_assert_eq(snapshot_encode(&s, &z, &zlen), 0);
	cr_assert(snapshot_zstd_is_frame(z, zlen));
	/* every truncation */
	for (size_t cut = 4; cut < zlen; cut++) {
		err[0] = '\0';
		cr_assert_neq(snapshot_decode(z, cut, &d, err, sizeof(err)), 0, "cut at %zu", cut);
		cr_assert_neq(err[0], '\0');
	}
	/* a dictionary this build does not have: the frame header's dictionary id */
	mut = malloc(zlen);
	memcpy(mut, z, zlen);
	cr_assert_eq(mut[4] & 3, 1, "a one-byte dictionary id");
	off = 5 + !((mut[4] >> 5) & 1);	/* a window byte unless single-segment */
	cr_assert_eq(mut[off], 3, "the 1 s snapshots' dictionary of version 2");
	mut[off] = 7;
	cr_assert_neq(snapshot_decode(mut, zlen, &d, err, sizeof(err)), 0);
	cr_assert(strstr(err, "dictionary 7"), "%s", err);
	/* random damage: an error or a snapshot, never a crash (ASan/fuzz_snapshot) */
	for (int iter = 0; iter < 5000; iter++) {
		memcpy(mut, z, zlen);
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		mut[4 + x % (zlen - 4)] = (char)(x >> 32);
		if (snapshot_decode(mut, zlen, &d, err, sizeof(err)) == 0)
			snapshot_free(&d);
	}
	free(mut);
	free(z);
	snapshot_free(&s);
}

Test(snapshot, every_truncation_is_an_error)
{
	struct snapshot s, d;
	char err[256], *buf;
	size_t len;

	build(&s);
	encode_plain(&s, &buf, &len);
	for (size_t cut = 0; cut < len; cut++) {
		err[0] = '\0';
		cr_assert_neq(snapshot_decode(buf, cut, &d, err, sizeof(err)), 0,
			      "decoded a snapshot cut at %zu of %zu", cut, len);
		cr_assert_neq(err[0], '\0', "no reason given at cut %zu", cut);
	}
	free(buf);
	snapshot_free(&s);
}

Test(snapshot, random_mutations_never_crash)
{
	struct snapshot s, d;
	char err[256], *buf, *mut;
	size_t len;
	uint64_t x = 88172645463325252ULL;
	int ok = 0;

	build(&s);
	encode_plain(&s, &buf, &len);
	mut = malloc(len);
	for (int iter = 0; iter < 20000; iter++) {
		memcpy(mut, buf, len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			mut[x % len] = (char)(x >> 32);
		}
		if (snapshot_decode(mut, len, &d, err, sizeof(err)) == 0) {
			ok++;
			snapshot_free(&d);
		}
	}
	/* some mutations only change values and still decode; that is fine */
	cr_log_info("%d of 20000 mutations still decoded", ok);
	free(mut);
	free(buf);
	snapshot_free(&s);
}

static int decode_packed(void (*fill)(msgpack_packer *), char *err, size_t errlen)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	struct snapshot d;
	int ret;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	fill(&pk);
	ret = snapshot_decode(sb.data, sb.size, &d, err, errlen);
	if (ret == 0)
		snapshot_free(&d);
	msgpack_sbuffer_destroy(&sb);
	return ret;
}

static void str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

static void header(msgpack_packer *pk, int nkeys)
{
	msgpack_pack_map(pk, nkeys);
	str(pk, "v");
	msgpack_pack_uint32(pk, 1);
	str(pk, "host");
	str(pk, "h1");
	str(pk, "ts");
	msgpack_pack_uint64(pk, 1000);
}

static void fill_wrong_version(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 4);
	str(pk, "v");
	msgpack_pack_uint32(pk, 3);
	str(pk, "host");
	str(pk, "h1");
	str(pk, "ts");
	msgpack_pack_uint64(pk, 1);
	str(pk, "s");
	msgpack_pack_array(pk, 0);
}

static void fill_host_not_string(msgpack_packer *pk)
{
	msgpack_pack_map(pk, 4);
	str(pk, "v");
	msgpack_pack_uint32(pk, 1);
	str(pk, "host");
	msgpack_pack_uint32(pk, 7);
	str(pk, "ts");
	msgpack_pack_uint64(pk, 1);
	str(pk, "s");
	msgpack_pack_array(pk, 0);
}

static void fill_hist_count_mismatch(msgpack_packer *pk)
{
	header(pk, 4);
	str(pk, "s");
	msgpack_pack_array(pk, 1);
	msgpack_pack_array(pk, 4);
	str(pk, "lat");
	msgpack_pack_map(pk, 0);
	msgpack_pack_uint8(pk, 2);
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, 10);	/* claims 10 */
	msgpack_pack_uint64(pk, 0);
	msgpack_pack_array(pk, 2);
	msgpack_pack_uint32(pk, 3);
	msgpack_pack_uint64(pk, 4);	/* has 4 */
}

static void fill_hist_index_beyond(msgpack_packer *pk)
{
	header(pk, 4);
	str(pk, "s");
	msgpack_pack_array(pk, 1);
	msgpack_pack_array(pk, 4);
	str(pk, "lat");
	msgpack_pack_map(pk, 0);
	msgpack_pack_uint8(pk, 2);
	msgpack_pack_array(pk, 3);
	msgpack_pack_uint64(pk, 1);
	msgpack_pack_uint64(pk, 0);
	msgpack_pack_array(pk, 2);
	msgpack_pack_uint32(pk, HIST_BUCKETS);
	msgpack_pack_uint64(pk, 1);
}

static void fill_counter_negative(msgpack_packer *pk)
{
	header(pk, 4);
	str(pk, "s");
	msgpack_pack_array(pk, 1);
	msgpack_pack_array(pk, 4);
	str(pk, "c");
	msgpack_pack_map(pk, 0);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_int64(pk, -5);
}

static void fill_bad_kind(msgpack_packer *pk)
{
	header(pk, 4);
	str(pk, "s");
	msgpack_pack_array(pk, 1);
	msgpack_pack_array(pk, 4);
	str(pk, "c");
	msgpack_pack_map(pk, 0);
	msgpack_pack_uint8(pk, 9);
	msgpack_pack_uint64(pk, 5);
}

Test(snapshot, wrong_types_and_values_named_in_error)
{
	char err[256];

	cr_assert_neq(decode_packed(fill_wrong_version, err, sizeof(err)), 0);
	cr_assert(strstr(err, "version 3"), "%s", err);
	cr_assert_neq(decode_packed(fill_host_not_string, err, sizeof(err)), 0);
	cr_assert(strstr(err, "'host'"), "%s", err);
	cr_assert_neq(decode_packed(fill_hist_count_mismatch, err, sizeof(err)), 0);
	cr_assert(strstr(err, "series[0]") && strstr(err, "count 10"), "%s", err);
	cr_assert_neq(decode_packed(fill_hist_index_beyond, err, sizeof(err)), 0);
	cr_assert(strstr(err, "bucket index"), "%s", err);
	cr_assert_neq(decode_packed(fill_counter_negative, err, sizeof(err)), 0);
	cr_assert(strstr(err, "counter value"), "%s", err);
	cr_assert_neq(decode_packed(fill_bad_kind, err, sizeof(err)), 0);
	cr_assert(strstr(err, "kind") && strstr(err, "(c)"), "%s", err);
}

Test(snapshot, oversized_claims_rejected_without_allocating)
{
	/* array32 claiming 4 billion elements in 5 bytes */
	static const unsigned char huge_array[] = { 0xdd, 0xff, 0xff, 0xff, 0xff };
	/* map32 claiming 2^32-1 pairs */
	static const unsigned char huge_map[] = { 0xdf, 0xff, 0xff, 0xff, 0xff, 0x01 };
	/* str32 claiming 4 GB */
	static const unsigned char huge_str[] = { 0xdb, 0xff, 0xff, 0xff, 0xff, 'a' };
	/* nesting deeper than the format allows */
	unsigned char deep[64];
	struct snapshot d;
	char err[256];

	cr_assert_neq(snapshot_decode(huge_array, sizeof(huge_array), &d, err, sizeof(err)), 0);
	cr_assert_neq(snapshot_decode(huge_map, sizeof(huge_map), &d, err, sizeof(err)), 0);
	cr_assert_neq(snapshot_decode(huge_str, sizeof(huge_str), &d, err, sizeof(err)), 0);
	memset(deep, 0x91, sizeof(deep));
	deep[63] = 0x01;
	cr_assert_neq(snapshot_decode(deep, sizeof(deep), &d, err, sizeof(err)), 0);
	cr_assert_neq(snapshot_decode("", 0, &d, err, sizeof(err)), 0);
	cr_assert_neq(snapshot_decode("\xc1", 1, &d, err, sizeof(err)), 0);
}

Test(snapshot, random_bytes_never_crash)
{
	unsigned char buf[512];
	struct snapshot d;
	char err[256];
	uint64_t x = 1;

	for (int iter = 0; iter < 20000; iter++) {
		size_t len = 1 + iter % sizeof(buf);

		for (size_t i = 0; i < len; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			buf[i] = (unsigned char)(x >> 56);
		}
		if (snapshot_decode(buf, len, &d, err, sizeof(err)) == 0)
			snapshot_free(&d);
	}
}

/* snapshot_find_same: by name and labels, whether the index hint is right or not. */
Test(snapshot, find_same_with_and_without_hint)
{
	struct snapshot a, b;
	struct series *x, *y, *z;

	snapshot_init(&a, "h", 1000, 1000, 1, 1);
	snapshot_init(&b, "h", 2000, 1000, 2, 1);
	x = snapshot_add_gauge(&a, "cpu.utilization", 0.5, "cpu", "1", NULL);
	snapshot_add_gauge(&b, "cpu.utilization", 0.7, "cpu", "0", NULL);
	y = snapshot_add_gauge(&b, "cpu.utilization", 0.9, "cpu", "1", NULL);
	z = snapshot_add_gauge(&a, "cpu.utilization", 0.1, "cpu", "2", NULL);
	y = snapshot_find(&b, "cpu.utilization{cpu=1}");	/* adding may move series */
	x = snapshot_find(&a, "cpu.utilization{cpu=1}");
	z = snapshot_find(&a, "cpu.utilization{cpu=2}");
	cr_assert(x && y && z);
	cr_expect_eq(snapshot_find_same(&b, x, 1), y, "hint right");
	cr_expect_eq(snapshot_find_same(&b, x, 0), y, "hint wrong");
	cr_expect_eq(snapshot_find_same(&b, x, 99), y, "hint out of range");
	cr_expect_null(snapshot_find_same(&b, z, 1), "absent");
	cr_expect_eq(snapshot_find_same(&a, x, 0), x);
	snapshot_free(&a);
	snapshot_free(&b);
}

/* A compacted snapshot encodes, copies and reads back like the dense one. */
Test(snapshot, compact_histograms_encode_and_copy_the_same)
{
	struct snapshot s, c, d;
	struct histogram scratch;
	char *a = NULL, *b = NULL, err[256];
	size_t la = 0, lb = 0;

	build(&s);
	cr_assert_eq(snapshot_encode(&s, &a, &la), 0);
	cr_assert_eq(snapshot_compact(&s), 0);
	cr_assert_eq(snapshot_encode(&s, &b, &lb), 0);
	cr_expect(la == lb && !memcmp(a, b, la), "compact encodes differently");
	cr_assert_eq(snapshot_copy(&c, &s), 0);
	cr_assert_eq(snapshot_decode(a, la, &d, err, sizeof(err)), 0, "%s", err);
	for (uint32_t i = 0; i < d.nseries; i++) {
		if (d.series[i].kind != SERIES_HISTOGRAM)
			continue;
		cr_expect_null(c.series[i].hist);
		cr_expect(hist_equal(series_hist(&c.series[i], &scratch), d.series[i].hist));
	}
	free(a);
	free(b);
	snapshot_free(&s);
	snapshot_free(&c);
	snapshot_free(&d);
}

static void encode_or_fail(const struct snapshot *s, char **buf, size_t *len)
{
	cr_assert_eq(snapshot_encode(s, buf, len), 0);
}

/*
 * The next snapshot of a host, decoded like the one before: a series added
 * in front (every later one shifted), one gone, one relabelled.
 */
static void next_of(struct snapshot *b)
{
	struct series *h;

	cr_assert_eq(snapshot_init(b, "db-17", 1764500001123ULL, 1000, 43, 1), 0);
	cr_assert_eq(snapshot_set_label(b, "rack", "r12"), 0);
	cr_assert_not_null(snapshot_add_counter(b, "tcp.in_segs", 5, NULL));
	cr_assert_not_null(snapshot_add_counter(b, "tcp.in_csum_errors", 18, NULL));
	cr_assert_not_null(snapshot_add_counter(b, "block.ios", 99, "op", "read",
						"device", "nvme0n1", NULL));
	h = snapshot_add(b, "block.latency", SERIES_HISTOGRAM, "device", "nvme0n1", "op",
			 "write", NULL);
	cr_assert_not_null(h);
	hist_record_n(h->hist, 1000000, 3);
}

/* Decoded like the previous snapshot: repeated series share its strings, and values are read. */
Test(snapshot, decode_like_shares_repeated_series)
{
	struct snapshot a, b, da, db, want;
	char *ea, *eb, err[256];
	size_t la, lb;

	build(&a);
	next_of(&b);
	encode_or_fail(&a, &ea, &la);
	encode_or_fail(&b, &eb, &lb);
	cr_assert_eq(snapshot_decode_compact(ea, la, &da, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_decode_like(eb, lb, &db, &da, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_decode_compact(eb, lb, &want, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(db.nseries, want.nseries);
	cr_expect_eq(db.ts_ms, want.ts_ms);
	for (uint32_t i = 0; i < db.nseries; i++) {
		struct histogram x, y;

		cr_expect_eq(db.series[i].id, want.series[i].id, "series %u id", i);
		cr_expect_eq(db.series[i].name_hash, want.series[i].name_hash, "series %u", i);
		cr_expect(snapshot_same_series(&db.series[i], &want.series[i]), "series %u", i);
		cr_assert_eq(db.series[i].kind, want.series[i].kind, "series %u kind", i);
		if (db.series[i].kind == SERIES_HISTOGRAM)
			cr_expect(hist_equal(series_hist(&db.series[i], &x),
					     series_hist(&want.series[i], &y)), "series %u", i);
		else
			cr_expect_eq(db.series[i].counter.value, want.series[i].counter.value);
	}
	/* a: csum_errors, ios{write}, temperature, latency; b: in_segs, csum_errors, ios{read}, latency */
	cr_expect(!db.series[0].borrowed, "tcp.in_segs is new");
	cr_expect(db.series[1].borrowed && db.series[1].name == da.series[0].name &&
		  db.series[1].like == 1, "tcp.in_csum_errors (shifted by one) not shared");
	cr_expect(!db.series[2].borrowed, "block.ios{op=read} is not a's block.ios{op=write}");
	cr_expect(db.series[3].borrowed && db.series[3].labels == da.series[3].labels,
		  "block.latency not shared");
	cr_expect_eq(db.series[1].counter.value, 18);
	cr_assert_eq(snapshot_adopt_strings(&db, &da), 0);
	cr_expect(!db.series[1].borrowed && !db.series[3].borrowed && !db.series[1].like);
	cr_expect(da.series[0].borrowed && da.series[3].borrowed && !da.series[1].borrowed);
	snapshot_free(&da);	/* ASan: db's strings outlive it */
	cr_expect_str_eq(db.series[3].labels[1].value, "write");
	cr_expect_str_eq(db.series[1].name, "tcp.in_csum_errors");
	snapshot_free(&db);
	snapshot_free(&want);
	snapshot_free(&a);
	snapshot_free(&b);
	free(ea);
	free(eb);
}

/*
 * Freeing a snapshot decoded like another before adopting leaves the other
 * whole; adopting from a snapshot it was not decoded like copies.
 */
Test(snapshot, decode_like_without_adopting_and_adopting_elsewhere)
{
	struct snapshot a, da, db, dc, other;
	char *ea, err[256];
	size_t la;

	build(&a);
	encode_or_fail(&a, &ea, &la);
	cr_assert_eq(snapshot_decode_compact(ea, la, &da, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_decode_like(ea, la, &db, &da, err, sizeof(err)), 0, "%s", err);
	for (uint32_t i = 0; i < db.nseries; i++)
		cr_expect(db.series[i].borrowed, "series %u of the same snapshot not shared", i);
	snapshot_free(&db);
	cr_expect_str_eq(da.series[1].labels[0].value, "nvme0n1", "freeing db took da's strings");
	cr_assert_eq(snapshot_decode_like(ea, la, &dc, &da, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(snapshot_copy(&other, &da), 0);
	cr_assert_eq(snapshot_adopt_strings(&dc, &other), 0);
	for (uint32_t i = 0; i < dc.nseries; i++) {
		cr_expect(!dc.series[i].borrowed && dc.series[i].name != da.series[i].name,
			  "series %u not copied", i);
		cr_expect(!da.series[i].borrowed && !other.series[i].borrowed);
	}
	snapshot_free(&da);
	snapshot_free(&other);
	cr_expect_str_eq(dc.series[3].name, "block.latency");
	snapshot_free(&dc);
	snapshot_free(&a);
	free(ea);
}

/* An entry that fails to decode like another leaves the other as it was. */
Test(snapshot, decode_like_failure_leaves_the_template)
{
	struct snapshot a, da, db;
	char *ea, err[256];
	size_t la;

	build(&a);
	encode_or_fail(&a, &ea, &la);
	cr_assert_eq(snapshot_decode_compact(ea, la, &da, err, sizeof(err)), 0, "%s", err);
	cr_expect_neq(snapshot_decode_like(ea, la - 3, &db, &da, err, sizeof(err)), 0,
		      "a truncated entry decoded");
	for (uint32_t i = 0; i < da.nseries; i++)
		cr_expect(!da.series[i].borrowed);
	cr_expect_str_eq(da.series[0].name, "tcp.in_csum_errors");
	snapshot_free(&da);
	snapshot_free(&a);
	free(ea);
}
