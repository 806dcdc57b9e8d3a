/*
 * test_store.c - the Redis store against a real redis-server: layout, read
 * back, host registry, retention trimming, garbage in a stream, and the
 * spool across a Redis outage (nothing lost within the bound, drops counted
 * beyond it).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "tests/helpers.h"
#include "store/alert_checkpoint.h"
#include "store/store.h"
#include "store/profile_store.h"
#include "core/timeutil.h"
#include "model/chunk.h"
#include "store/wake.h"
#include "store/host_usage.h"
#include "store/compaction.h"
#include "store/chunk_cache.h"
#include "model/profile.h"

static struct test_redis redis;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0, "cannot start redis-server (is it installed?)");
}

static void teardown(void)
{
	test_redis_destroy(&redis);
}

static struct store *open_store(size_t spool_max)
{
	struct store_opts o = {
		.url = redis.url,
		.timeout_ns = NSEC_PER_SEC,
		.retention_ms = { 15 * 60 * 1000, 7ULL * 86400 * 1000, 90ULL * 86400 * 1000 },
		.spool_max_entries = spool_max,
	};
	char err[256];
	struct store *st = store_open(&o, err, sizeof(err));

	cr_assert_not_null(st, "%s", err);
	return st;
}

static void make_snap(struct snapshot *s, uint64_t ts, uint64_t seq)
{
	struct series *h;

	snapshot_init(s, "web-1", ts, 1000, seq, 1);
	snapshot_set_label(s, "rack", "r7");
	snapshot_add_counter(s, "tcp.in_csum_errors", seq * 3, NULL);
	h = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read", NULL);
	hist_record_n(h->hist, 100000 + seq, seq + 1);
}

struct collect {
	uint64_t seqs[4096];
	size_t n;
};

static int collect_cb(struct snapshot *s, void *arg)
{
	struct collect *c = arg;

	if (c->n < 4096)
		c->seqs[c->n++] = s->seq;
	return 0;
}

static struct conn *conn(void)
{
	char err[256];
	struct conn *c = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));

	cr_assert_not_null(c, "%s", err);
	return c;
}

Test(store_url, parses_forms)
{
	struct conn_url u;
	char err[256];

	cr_assert_eq(conn_url_parse("redis://127.0.0.1:6380/2", &u, err, sizeof(err)), 0);
	cr_assert_str_eq(u.host, "127.0.0.1");
	cr_assert_eq(u.port, 6380);
	cr_assert_eq(u.db, 2);
	cr_assert_eq(conn_url_parse("redis://:s3cret@db.example:7000", &u, err, sizeof(err)), 0);
	cr_assert_str_eq(u.password, "s3cret");
	cr_assert_str_eq(u.user, "");
	cr_assert_eq(conn_url_parse("redis://fl:pw@h", &u, err, sizeof(err)), 0);
	cr_assert_str_eq(u.user, "fl");
	cr_assert_str_eq(u.password, "pw");
	cr_assert_eq(u.port, 6379);
	cr_assert_eq(conn_url_parse("unix:///run/x.sock?db=3&password=p", &u, err, sizeof(err)), 0);
	cr_assert_str_eq(u.path, "/run/x.sock");
	cr_assert_eq(u.db, 3);
	cr_assert_str_eq(u.password, "p");
	cr_assert_neq(conn_url_parse("http://x", &u, err, sizeof(err)), 0);
	cr_assert(strstr(err, "unknown scheme") && strstr(err, "expected redis[s]://"), "%s", err);
	cr_assert_neq(conn_url_parse("redis://h:99999", &u, err, sizeof(err)), 0);
	cr_assert_eq(conn_url_parse("rediss://h", &u, err, sizeof(err)), 0, "%s", err);
	cr_assert(u.tls);
}

/* Commands are written as hiredis writes them, byte for byte: any arguments. */
Test(store_url, commands_are_formatted_as_hiredis_formats_them)
{
	static char big[70000];
	uint64_t seed = 7;

	memset(big, 'x', sizeof(big));
	for (int round = 0; round < 500; round++) {
		const char *argv[12];
		size_t lens[12];
		char bufs[12][64];
		int argc = 1 + (int)(test_rand(&seed) % 12);
		char *a = NULL, *b = NULL;
		int la, lb;

		for (int i = 0; i < argc; i++) {
			size_t n = test_rand(&seed) % 64;

			for (size_t k = 0; k < n; k++)
				bufs[i][k] = (char)test_rand(&seed);	/* any byte, \0 and \r too */
			argv[i] = bufs[i];
			lens[i] = n;
		}
		if (round % 50 == 0) {
			argv[0] = big;
			lens[0] = round % 100 ? sizeof(big) : 0;
		}
		la = conn_format(&a, argc, argv, lens);
		lb = redisFormatCommandArgv(&b, argc, argv, lens);
		cr_assert_eq(la, lb, "round %d: %d bytes, hiredis %d", round, la, lb);
		cr_assert(!memcmp(a, b, (size_t)la), "round %d differs", round);
		free(a);
		redisFreeCommand(b);
	}
	{
		const char *argv[] = { "XRANGE", "fl:{h}:s1", "-", "+" };
		char *a = NULL, *b = NULL;
		int la = conn_format(&a, 4, argv, NULL), lb = redisFormatCommandArgv(&b, 4, argv, NULL);

		cr_assert_eq(la, lb);
		cr_assert(!memcmp(a, b, (size_t)la));
		free(a);
		redisFreeCommand(b);
	}
}

Test(store, keys_carry_host_hash_tag)
{
	char k[128];

	key_tier(k, sizeof(k), "db-17", 60);
	cr_assert_str_eq(k, "fl:{db-17}:s60");
	cr_assert(store_host_valid("db-17.r12.example"));
	cr_assert(!store_host_valid("bad{host}"));
	cr_assert(!store_host_valid(""));
}

Test(store, write_and_read_back, .init = setup, .fini = teardown)
{
	struct store *st = open_store(100);
	struct collect got = { 0 };
	struct store_stats stats;
	struct conn *c;
	redisReply *r;
	char err[256];
	uint64_t t0 = 1764500000000ULL;

	for (uint64_t i = 0; i < 20; i++) {
		struct snapshot s;

		make_snap(&s, t0 + i * 1000, i);
		cr_assert_eq(store_put_snapshot(st, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_get_stats(st, &stats);
	cr_assert_eq(stats.written, 20);
	cr_assert_eq(stats.dropped, 0);

	c = conn();
	cr_assert_eq(store_read_range(c, "web-1", 1, t0 + 5000, t0 + 9000, 0, collect_cb, &got,
				      NULL, err, sizeof(err)), 5, "%s", err);
	cr_assert_eq(got.seqs[0], 5);
	cr_assert_eq(got.seqs[4], 9);
	got.n = 0;
	cr_assert_eq(store_read_latest(c, "web-1", 1, 3, collect_cb, &got, NULL, err,
				       sizeof(err)), 3);
	cr_assert_eq(got.seqs[0], 17, "latest come oldest first");
	cr_assert_eq(got.seqs[2], 19);

	r = conn_commandf(c, NULL, "GET fl:{web-1}:host");
	cr_assert_eq(r->type, REDIS_REPLY_STRING);
	cr_assert(strstr(r->str, "\"rack\":\"r7\""), "%s", r->str);
	cr_assert(strstr(r->str, "\"last_seen_ms\":"), "%s", r->str);
	freeReplyObject(r);
	r = conn_commandf(c, NULL, "EXISTS fl:{web-1}:s1");
	cr_assert_eq(r->integer, 1);
	freeReplyObject(r);
	conn_close(c);
	store_close(st);
}

/* store_read_ranges: many hosts in one pipelined exchange, a bad key skipped and counted. */
Test(store, pipelined_read_of_many_hosts, .init = setup, .fini = teardown)
{
	struct store *st = open_store(100);
	struct collect got = { 0 };
	const char *hosts[3] = { "web-1", "broken", "web-1" };
	uint64_t t0 = 1764500000000ULL, from[3] = { t0 + 7000, 0, t0 + 9000 };
	size_t bad = 0;
	struct conn *c;
	redisReply *r;
	char err[256];

	for (uint64_t i = 0; i < 10; i++) {
		struct snapshot s;

		make_snap(&s, t0 + i * 1000, i);
		cr_assert_eq(store_put_snapshot(st, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	c = conn();
	r = conn_commandf(c, NULL, "SET fl:{broken}:s1 not-a-stream");
	freeReplyObject(r);
	struct store_readers rd = { .snapshot = collect_cb, .arg = &got };

	cr_assert_eq(store_read_ranges(c, hosts, from, 3, 1, 0, &rd, &bad, err, sizeof(err)), 4,
		     "%s", err);
	cr_expect_eq(bad, 1, "the WRONGTYPE host was not counted");
	cr_expect_eq(got.seqs[0], 7);
	cr_expect_eq(got.seqs[2], 9);
	cr_expect_eq(got.seqs[3], 9, "the second read of web-1 starts at its own from");
	conn_close(c);
	store_close(st);
}

Test(store, replayed_write_is_not_a_duplicate, .init = setup, .fini = teardown)
{
	struct store *st = open_store(100);
	struct snapshot s;
	struct conn *c;
	redisReply *r;

	make_snap(&s, 1764500000000ULL, 1);
	store_put_snapshot(st, &s);
	store_flush(st, 5 * NSEC_PER_SEC);
	/* the same snapshot again, as after a reconnect mid-pipeline */
	store_put_snapshot(st, &s);
	/* and one stamped earlier (wall clock stepped back): kept, new id */
	snapshot_free(&s);
	make_snap(&s, 1764499990000ULL, 2);
	store_put_snapshot(st, &s);
	snapshot_free(&s);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	c = conn();
	r = conn_commandf(c, NULL, "XLEN fl:{web-1}:s1");
	/* first attempt of the replay is treated like the clock case, so it
	 * is written once more under a fresh id; nothing is lost either way */
	cr_assert_geq(r->integer, 2);
	cr_assert_leq(r->integer, 3);
	freeReplyObject(r);
	conn_close(c);
	store_close(st);
}

Test(store, retention_trims_by_age, .init = setup, .fini = teardown)
{
	struct store_opts o = {
		.url = redis.url,
		.timeout_ns = NSEC_PER_SEC,
		.retention_ms = { 60 * 1000, 0, 0 },
	};
	char err[256];
	struct store *st = store_open(&o, err, sizeof(err));
	struct conn *c;
	redisReply *r;
	uint64_t t0 = 1764500000000ULL;

	for (uint64_t i = 0; i < 400; i++) {
		struct snapshot s;

		make_snap(&s, t0 + i * 10, i);	/* 4 s worth of old entries */
		store_put_snapshot(st, &s);
		snapshot_free(&s);
	}
	store_flush(st, 5 * NSEC_PER_SEC);
	struct snapshot s;

	make_snap(&s, t0 + 3600 * 1000, 999);	/* an hour later */
	store_put_snapshot(st, &s);
	snapshot_free(&s);
	store_flush(st, 5 * NSEC_PER_SEC);
	c = conn();
	r = conn_commandf(c, NULL, "XLEN fl:{web-1}:s1");
	/* MINID ~ trims whole stream nodes (100 entries each) */
	cr_assert_lt(r->integer, 150, "XLEN %lld after the old entries aged out", r->integer);
	freeReplyObject(r);
	conn_close(c);
	store_close(st);
}

Test(store, garbage_entries_are_skipped_and_counted, .init = setup, .fini = teardown)
{
	struct collect got = { 0 };
	struct conn *c = conn();
	size_t bad = 0;
	char err[256];
	struct store *st = open_store(10);
	struct snapshot s;

	freeReplyObject(conn_commandf(c, NULL, "XADD fl:{web-1}:s1 1000-0 d garbage"));
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:{web-1}:s1 1500-0 other field"));
	make_snap(&s, 2000, 7);
	store_put_snapshot(st, &s);
	snapshot_free(&s);
	store_flush(st, 5 * NSEC_PER_SEC);
	cr_assert_eq(store_read_range(c, "web-1", 1, 0, 0, 0, collect_cb, &got, &bad, err,
				      sizeof(err)), 1);
	cr_assert_eq(bad, 2);
	cr_assert_eq(got.seqs[0], 7);
	conn_close(c);
	store_close(st);
}

Test(store, outage_within_spool_loses_nothing, .init = setup, .fini = teardown, .timeout = 60)
{
	struct store *st = open_store(1000);
	struct collect got = { 0 };
	struct store_stats stats;
	struct conn *c;
	char err[256];
	uint64_t t0 = 1764500000000ULL, i = 0;

	for (; i < 10; i++) {
		struct snapshot s;

		make_snap(&s, t0 + i * 1000, i);
		store_put_snapshot(st, &s);
		snapshot_free(&s);
	}
	store_flush(st, 5 * NSEC_PER_SEC);
	test_redis_stop(&redis, 1);
	uint64_t start = time_mono_ns();
	for (; i < 60; i++) {
		struct snapshot s;
		uint64_t t = time_mono_ns();

		make_snap(&s, t0 + i * 1000, i);
		store_put_snapshot(st, &s);
		snapshot_free(&s);
		/* the producer never waits for Redis */
		cr_assert_lt(time_mono_ns() - t, 50 * NSEC_PER_MSEC);
		usleep(40000);
	}
	cr_assert_gt(time_mono_ns() - start, NSEC_PER_SEC);
	store_get_stats(st, &stats);
	cr_assert_eq(stats.connected, 0);
	cr_assert_geq(stats.spooled, 50);
	cr_assert_eq(test_redis_restart(&redis), 0);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0, "spool did not drain");
	store_get_stats(st, &stats);
	cr_assert_eq(stats.dropped, 0);
	c = conn();
	/* redis restarted empty (no persistence): the 50 spooled ones are there */
	cr_assert_eq(store_read_range(c, "web-1", 1, 0, 0, 0, collect_cb, &got, NULL, err,
				      sizeof(err)), 50, "%s", err);
	for (size_t k = 0; k < got.n; k++)
		cr_assert_eq(got.seqs[k], 10 + k, "out of order or missing at %zu", k);
	conn_close(c);
	store_close(st);
}

/*
 * A host's registry entry still queued is refreshed in place by the next
 * snapshot (one per host); when its size changes the spool's byte count
 * follows, so once drained it is back to 0 (it used to drift, and a count
 * that wrapped below 0 would have made the spool drop every snapshot).
 */
Test(store, spool_bytes_follow_refreshed_registry_entries, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct store *st = open_store(1000);
	struct store_stats stats;
	uint64_t t0 = 1764500000000ULL;
	char label[64];

	test_redis_stop(&redis, 1);
	for (uint64_t i = 0; i < 40; i++) {
		struct snapshot s;

		make_snap(&s, t0 + i * 1000, i);
		/* the entry carries the labels: a different size every time */
		snprintf(label, sizeof(label), "%.*s", (int)(1 + (i * 7) % 40),
			 "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
		snapshot_set_label(&s, "build", label);
		store_put_snapshot(st, &s);
		snapshot_free(&s);
	}
	store_get_stats(st, &stats);
	/* and the compaction of the minute before the last (a run before may have left it) */
	cr_assert_eq(stats.spooled, 42, "40 snapshots, one registry entry, one compaction: %llu",
		     (unsigned long long)stats.spooled);
	cr_assert_eq(test_redis_restart(&redis), 0);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0, "spool did not drain");
	store_get_stats(st, &stats);
	cr_expect_eq(stats.spooled, 0);
	cr_expect_eq(stats.spooled_bytes, 0, "%llu bytes counted in an empty spool",
		     (unsigned long long)stats.spooled_bytes);
	cr_expect_eq(stats.dropped, 0);
	/* and the next snapshot is written, not dropped as if the spool were full */
	{
		struct snapshot s;

		make_snap(&s, t0 + 41 * 1000, 41);
		store_put_snapshot(st, &s);
		snapshot_free(&s);
	}
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	store_get_stats(st, &stats);
	cr_expect_eq(stats.dropped, 0, "%llu dropped after the outage",
		     (unsigned long long)stats.dropped);
	store_close(st);
}

Test(store, outage_beyond_spool_drops_oldest_and_counts, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct store *st = open_store(10);
	struct collect got = { 0 };
	struct store_stats stats;
	struct conn *c;
	char err[256];

	test_redis_stop(&redis, 1);
	for (uint64_t i = 0; i < 25; i++) {
		struct snapshot s;

		make_snap(&s, 1764500000000ULL + i * 1000, i);
		store_put_snapshot(st, &s);
		snapshot_free(&s);
	}
	cr_assert_eq(test_redis_restart(&redis), 0);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	store_get_stats(st, &stats);
	c = conn();
	store_read_range(c, "web-1", 1, 0, 0, 0, collect_cb, &got, NULL, err, sizeof(err));
	/* the host-registry entry shares the spool, so 9 or 10 snapshots fit */
	cr_assert_eq(stats.dropped + got.n, 25, "dropped %llu + kept %zu != 25",
		     (unsigned long long)stats.dropped, got.n);
	cr_assert_geq(got.n, 9);
	cr_assert_eq(got.seqs[got.n - 1], 24, "the newest survive");
	conn_close(c);
	store_close(st);
}

/* Minute window m of web-1 (tier 60): counters that grow, a gauge that stays. */
static void make_rollup(struct snapshot *s, uint64_t t0, uint64_t m)
{
	struct series *c;

	snapshot_init(s, "web-1", t0 + (m + 1) * 60000, 60000, m, 60);
	c = snapshot_add_counter(s, "tcp.in_segs", 1000000 + m * m * 7919, NULL);
	c->counter.increase = m ? (2 * m - 1) * 7919 : 0;
	for (int d = 0; d < 8; d++) {
		char dev[8] = { 's', 'd', (char)('a' + d) };

		c = snapshot_add_counter(s, "block.bytes", (1ULL << 42) * (d + 1) + m * 4096,
					 "device", dev, NULL);
		c->counter.increase = m ? 4096 : 0;
	}
	c = snapshot_add_gauge(s, "drive.temperature_c", 40, NULL);
	c->gauge.n = 60;
	c->gauge.sum = 2400;
}

struct rollups {
	uint64_t ts[256], value[256];
	size_t n;
	size_t runs, run_points;	/* what came through run_cb */
	size_t run_host;		/* 1 + the host index runs came for (0: none yet) */
};

static int rollup_cb(struct snapshot *s, void *arg)
{
	struct rollups *r = arg;
	struct series *c = snapshot_find(s, "tcp.in_segs{}");

	if (r->n < 256 && c) {
		r->ts[r->n] = s->ts_ms;
		r->value[r->n++] = c->counter.value;
	}
	return 0;
}

/* Lent runs of chunk points (store_readers.run): each point as rollup_cb takes it. */
static int run_cb(size_t h, const struct snapshot *pts, size_t n, void *arg)
{
	struct rollups *r = arg;

	cr_assert(n > 0);
	cr_assert(!r->run_host || r->run_host == h + 1, "runs of two hosts");
	r->run_host = h + 1;
	r->runs++;
	r->run_points += n;
	for (size_t i = 0; i < n; i++) {
		struct snapshot copy;

		cr_assert(!i || pts[i].ts_ms > pts[i - 1].ts_ms, "a run that does not rise");
		cr_assert_eq(snapshot_copy(&copy, &pts[i]), 0);
		rollup_cb(&copy, arg);
		snapshot_free(&copy);
	}
	return 0;
}

/* rollup_cb, then the snapshot taken away (a reader may keep it: store.h) */
static int stealing_cb(struct snapshot *s, void *arg)
{
	rollup_cb(s, arg);
	snapshot_free(s);
	memset(s, 0, sizeof(*s));
	return 0;
}

/* Entries of key that do not decode on their own (deltas), of all. */
static size_t count_deltas(struct conn *c, const char *key, size_t *all)
{
	redisReply *r = conn_commandf(c, key, "XRANGE %s - +", key);
	size_t deltas = 0;

	cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *d = r->element[i]->element[1]->element[1];
		struct snapshot s;
		char err[256];

		if (snapshot_decode(d->str, d->len, &s, err, sizeof(err)) == -ENOLINK)
			deltas++;
		else
			snapshot_free(&s);
	}
	*all = r->elements;
	freeReplyObject(r);
	return deltas;
}

/*
 * Minute rollups through store_put_rollup land as deltas on the entry
 * before them, except each hour's first; an hour that has ended is
 * replaced by its chunk (compaction.h); a read from any minute, of one
 * host or of many, gets every window from there on, value for value,
 * across chunks and entries.
 */
Test(store, rollups_chain_as_deltas_ended_hours_become_chunks_read_back_from_any_minute,
     .init = setup, .fini = teardown, .timeout = 60)
{
	struct store *st = open_store(1000);
	uint64_t t0 = 1796166000000ULL;	/* an hour's start */
	struct snapshot prev = { 0 };
	struct rollups got = { 0 };
	size_t all, bad = 0;
	struct conn *c;
	char err[256];

	for (uint64_t m = 0; m < 130; m++) {
		struct snapshot s;

		make_rollup(&s, t0, m);
		cr_assert_eq(store_put_rollup(st, &s, m ? &prev : NULL), 0);
		/* acknowledged before the next: a delta goes only on a base Redis holds */
		cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
		if (m)
			snapshot_free(&prev);
		prev = s;
	}
	snapshot_free(&prev);
	c = conn();
	/* hours 0 and 1 are chunks; hour 2's minutes are entries, all but its first deltas */
	size_t nd = count_deltas(c, "fl:{web-1}:s60", &all);
	redisReply *r = conn_commandf(c, "fl:{web-1}:s60:chunks", "XRANGE %s - +",
				      "fl:{web-1}:s60:chunks");

	cr_assert_eq(nd, 9, "%zu of %zu", nd, all);
	cr_assert_eq(all, 10);
	cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
	cr_assert_eq(r->elements, 2);
	cr_assert_eq(strtoull(r->element[0]->element[0]->str, NULL, 10), t0);
	cr_assert_eq(strtoull(r->element[1]->element[0]->str, NULL, 10), t0 + 3600000);
	for (size_t i = 0; i < 2; i++) {
		redisReply *d = r->element[i]->element[1]->element[1];
		struct snapshot *pts;
		size_t n;

		cr_assert_eq(chunk_decode(d->str, d->len, 0, &pts, &n, err, sizeof(err)), 0, "%s",
			     err);
		cr_assert_eq(n, 60);
		for (size_t k = 0; k < n; k++) {
			struct snapshot want;

			make_rollup(&want, t0, i * 60 + k);
			cr_assert(snapshot_equal(&pts[k], &want), "minute %zu", i * 60 + k);
			snapshot_free(&want);
		}
		chunk_points_free(pts, n);
	}
	freeReplyObject(r);
	/* from minute 75: the chain is read from 60, delivered from 75 */
	cr_assert_eq(store_read_range(c, "web-1", 60, t0 + 76 * 60000, 0, 0, rollup_cb, &got,
				      &bad, err, sizeof(err)), 130 - 75, "%s", err);
	cr_assert_eq(bad, 0);
	for (size_t k = 0; k < got.n; k++) {
		cr_assert_eq(got.ts[k], t0 + (76 + k) * 60000);
		cr_assert_eq(got.value[k], 1000000 + (75 + k) * (75 + k) * 7919, "minute %zu",
			     75 + k);
	}
	/* a reader that keeps (here: frees) what it is given breaks no chain */
	got.n = 0;
	cr_assert_eq(store_read_range(c, "web-1", 60, t0 + 61 * 60000, 0, 0, stealing_cb, &got,
				      &bad, err, sizeof(err)), 130 - 60, "%s", err);
	cr_assert_eq(bad, 0);
	cr_assert_eq(got.value[69], 1000000 + 129 * 129 * 7919);
	/* at most max, from where asked */
	got.n = 0;
	cr_assert_eq(store_read_range(c, "web-1", 60, t0 + 119 * 60000, 0, 3, rollup_cb, &got,
				      &bad, err, sizeof(err)), 3, "%s", err);
	cr_assert_eq(got.ts[0], t0 + 119 * 60000);
	cr_assert_eq(got.value[2], 1000000 + 120 * 120 * 7919);
	/* many hosts' reads (the pipelined reader) follow the chain too */
	{
		const char *hosts[] = { "web-1", "nosuch" };
		uint64_t from[] = { t0 + 30 * 60000, 0 };
		struct store_readers rd = { .snapshot = rollup_cb, .arg = &got };

		got.n = 0;
		cr_assert_eq(store_read_ranges(c, hosts, from, 2, 60, 0, &rd, &bad, err,
					       sizeof(err)), 101, "%s", err);
		cr_assert_eq(got.value[0], 1000000 + 29 * 29 * 7919);
		cr_assert_eq(bad, 0);
	}
	conn_close(c);
	store_close(st);
}

/*
 * What a reader meets besides whole hours of chunks: an hour a chunk
 * cannot hold exactly (a series changes its kind) stays as entries, older
 * than the chunks after it; a span in a chunk and still in entries (read
 * between the two, or a chunk written twice) comes once.  Every minute
 * comes once, in order, from one host's read and from the pipelined one.
 */
Test(store, an_hour_left_as_entries_and_points_in_both_are_read_once_in_order, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct store *st = open_store(1000);
	uint64_t t0 = 1796166000000ULL;	/* an hour's start */
	struct snapshot prev = { 0 }, part[5];
	struct rollups got = { 0 };
	size_t all, bad = 0, len;
	struct conn *c;
	redisReply *r;
	char err[256], *blob;

	for (uint64_t m = 0; m < 185; m++) {
		struct snapshot s;

		make_rollup(&s, t0, m);
		if (m == 30) {
			/* the temperature a counter for one minute */
			s.series[9].kind = SERIES_COUNTER;
			s.series[9].counter.value = 40;
			s.series[9].counter.increase = 0;
		}
		cr_assert_eq(store_put_rollup(st, &s, m ? &prev : NULL), 0);
		cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
		if (m)
			snapshot_free(&prev);
		prev = s;
	}
	snapshot_free(&prev);
	c = conn();
	/* hour 0 as its 60 entries, hours 1 and 2 as chunks, hour 3's 5 minutes */
	count_deltas(c, "fl:{web-1}:s60", &all);
	cr_assert_eq(all, 65);
	/* hour 3's minutes in a chunk too, as if compacted after a reader read the entries */
	for (int m = 0; m < 5; m++)
		make_rollup(&part[m], t0, 180 + m);
	cr_assert_eq(chunk_encode(part, 5, &blob, &len), 0);
	r = conn_commandf(c, "fl:{web-1}:s60:chunks", "XADD %s %llu-0 c %b",
			  "fl:{web-1}:s60:chunks", (unsigned long long)(t0 + 3 * 3600000), blob,
			  len);
	cr_assert_eq(r->type, REDIS_REPLY_STRING, "%s", r->str);
	freeReplyObject(r);
	free(blob);
	for (int m = 0; m < 5; m++)
		snapshot_free(&part[m]);

	cr_assert_eq(store_read_range(c, "web-1", 60, 0, 0, 0, rollup_cb, &got, &bad, err,
				      sizeof(err)), 185, "%s", err);
	cr_assert_eq(bad, 0);
	for (size_t k = 0; k < got.n; k++) {
		cr_assert_eq(got.ts[k], t0 + (k + 1) * 60000, "minute %zu", k);
		cr_assert_eq(got.value[k], 1000000 + k * k * 7919, "minute %zu", k);
	}
	/* from the last minute of hour 0 (an entry, a delta, ending on the hour) */
	got.n = 0;
	cr_assert_eq(store_read_range(c, "web-1", 60, t0 + 60 * 60000, 0, 2, rollup_cb, &got,
				      &bad, err, sizeof(err)), 2, "%s", err);
	cr_assert_eq(bad, 0);
	cr_assert_eq(got.ts[0], t0 + 60 * 60000);
	cr_assert_eq(got.value[0], 1000000 + 59 * 59 * 7919);
	cr_assert_eq(got.ts[1], t0 + 61 * 60000);
	/* from inside hour 2 to inside hour 3, at most 7 */
	got.n = 0;
	cr_assert_eq(store_read_range(c, "web-1", 60, t0 + 176 * 60000, 0, 7, rollup_cb, &got,
				      &bad, err, sizeof(err)), 7, "%s", err);
	cr_assert_eq(got.ts[0], t0 + 176 * 60000);
	cr_assert_eq(got.ts[6], t0 + 182 * 60000);
	{
		const char *hosts[] = { "nosuch", "web-1" };
		uint64_t from[] = { 0, t0 + 50 * 60000 };
		struct store_readers rd = { .snapshot = rollup_cb, .arg = &got };

		got.n = 0;
		cr_assert_eq(store_read_ranges(c, hosts, from, 2, 60, t0 + 184 * 60000, &rd, &bad,
					       err, sizeof(err)), 135, "%s", err);
		cr_assert_eq(bad, 0);
		for (size_t k = 0; k < got.n; k++)
			cr_assert_eq(got.value[k], 1000000 + (49 + k) * (49 + k) * 7919,
				     "minute %zu", 49 + k);
		/*
		 * the chunks' points in runs (lent, from a cache or not; the
		 * second cached read is all hits): the same minutes, once, in
		 * order; hour 3's chunk points are its entries' instead
		 */
		for (int pass = 0; pass < 3; pass++) {
			struct chunk_cache *cc = pass ? chunk_cache_new(1 << 20) : NULL;

			memset(&got, 0, sizeof(got));
			rd.run = run_cb;
			rd.cache = cc;
			for (int again = 0; again < (cc ? 2 : 1); again++) {
				memset(&got, 0, sizeof(got));
				cr_assert_eq(store_read_ranges(c, hosts, from, 2, 60, t0 + 184 * 60000,
							       &rd, &bad, err, sizeof(err)), 135,
					     "%s", err);
				cr_assert_eq(bad, 0);
				cr_assert_eq(got.n, 135);
				for (size_t k = 0; k < got.n; k++) {
					cr_assert_eq(got.ts[k], t0 + (50 + k) * 60000, "minute %zu",
						     49 + k);
					cr_assert_eq(got.value[k],
						     1000000 + (49 + k) * (49 + k) * 7919,
						     "minute %zu", 49 + k);
				}
				cr_assert_eq(got.run_host, 2, "runs are web-1's, index 1");
				cr_assert_eq(got.run_points, 120, "hours 1 and 2 in runs");
			}
			if (cc) {
				struct chunk_cache_stats st;

				chunk_cache_stats(cc, &st);
				cr_assert_geq(st.hits, 2, "the second read from the cache");
			}
			chunk_cache_free(cc);
		}
	}
	conn_close(c);
	store_close(st);
}

/*
 * Redis stalls (SIGSTOP, 5 s) at the hour boundary, while the writer
 * writes the next hour's first minute or the compactor compacts the hour
 * that ended: the hour still becomes a chunk once Redis answers again, and
 * every minute reads back.  (It does not tell the compactor's retry of a
 * lost connection from a script Redis runs late once it wakes: with the
 * retry counted as one of three tries, this passed too.)
 */
Test(store, an_hour_ends_while_redis_stalls_and_still_becomes_a_chunk, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct store *st = open_store(1000);
	uint64_t t0 = 1796166000000ULL;	/* an hour's start */
	struct snapshot prev = { 0 };
	struct rollups got = { 0 };
	size_t bad = 0;
	struct conn *c = conn();
	redisReply *r;
	char err[256];

	for (uint64_t m = 0; m < 62; m++) {
		struct snapshot s;

		make_rollup(&s, t0, m);
		cr_assert_eq(store_put_rollup(st, &s, m ? &prev : NULL), 0);
		if (m == 60) {
			/* the minute that ends the hour landed: the compaction is next */
			for (int i = 0; i < 5000; i++) {
				long long n;

				r = conn_commandf(c, NULL, "XLEN fl:{web-1}:s60");
				n = r->integer;
				freeReplyObject(r);
				if (n >= 61)
					break;
				usleep(200);
			}
			kill(redis.pid, SIGSTOP);
			usleep(5000000);
			kill(redis.pid, SIGCONT);
		}
		cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
		if (m)
			snapshot_free(&prev);
		prev = s;
	}
	snapshot_free(&prev);
	conn_close(c);
	c = conn();
	r = conn_commandf(c, NULL, "XLEN fl:{web-1}:s60:chunks");
	cr_assert_eq(r->integer, 1, "the hour is %lld chunks", r->integer);
	freeReplyObject(r);
	r = conn_commandf(c, NULL, "XLEN fl:{web-1}:s60");
	cr_assert_eq(r->integer, 2);
	freeReplyObject(r);
	cr_assert_eq(store_read_range(c, "web-1", 60, 0, 0, 0, rollup_cb, &got, &bad, err,
				      sizeof(err)), 62, "%s", err);
	cr_assert_eq(bad, 0);
	for (size_t k = 0; k < got.n; k++)
		cr_assert_eq(got.value[k], 1000000 + k * k * 7919, "minute %zu", k);
	conn_close(c);
	store_close(st);
}

/* XRANGE calls Redis has answered so far (INFO commandstats). */
static long long xrange_calls(struct conn *c)
{
	redisReply *r = conn_commandf(c, NULL, "INFO commandstats");
	const char *p;
	long long n = 0;

	cr_assert_eq(r->type, REDIS_REPLY_STRING);
	p = strstr(r->str, "cmdstat_xrange:calls=");
	if (p)
		n = strtoll(p + strlen("cmdstat_xrange:calls="), NULL, 10);
	freeReplyObject(r);
	return n;
}

/*
 * The 1 s tier is compacted a minute at a time, once the next has begun:
 * after 200 s, minutes 0 to 2 are chunks (an early flush between two ticks
 * inside one of them), minute 3 entries.  A read from any second, of one
 * host or of many, open or closed, gets every snapshot from there in
 * order, value for value; a reader that keeps up reads no chunk (one
 * XRANGE), one that is behind reads them after the entries (two); the
 * newest snapshots come from the chunk when the entries are too few.
 */
Test(store, ended_minutes_of_seconds_become_chunks_read_back_from_any_second,
     .init = setup, .fini = teardown, .timeout = 60)
{
	struct store *st = open_store(1000);
	uint64_t t0 = 1796166000000ULL;	/* a minute's start */
	uint64_t froms[] = { 0, t0 + 30000, t0 + 30500, t0 + 60001, t0 + 119000, t0 + 121000,
			     t0 + 199000 };
	struct collect got = { 0 };
	size_t bad = 0;
	struct conn *c;
	redisReply *r;
	char err[256];
	long long x;

	for (uint64_t k = 1; k <= 200; k++) {
		struct snapshot s;

		make_snap(&s, t0 + k * 1000, 2 * k);
		cr_assert_eq(store_put_snapshot(st, &s), 0);
		snapshot_free(&s);
		if (k == 30) {
			/* an early flush, off the second grid */
			make_snap(&s, t0 + 30500, 61);
			cr_assert_eq(store_put_snapshot(st, &s), 0);
			snapshot_free(&s);
		}
	}
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	c = conn();
	r = conn_commandf(c, NULL, "XLEN fl:{web-1}:s1");
	cr_assert_eq(r->integer, 20, "minute 3 stays entries: %lld", r->integer);
	freeReplyObject(r);
	r = conn_commandf(c, NULL, "XRANGE fl:{web-1}:s1:chunks - +");
	cr_assert_eq(r->elements, 3);
	for (size_t i = 0; i < 3; i++) {
		redisReply *d = r->element[i]->element[1]->element[1];
		struct snapshot *pts;
		size_t n;

		cr_assert_eq(strtoull(r->element[i]->element[0]->str, NULL, 10), t0 + i * 60000);
		cr_assert_eq(chunk_decode(d->str, d->len, 0, &pts, &n, err, sizeof(err)), 0, "%s",
			     err);
		cr_assert_eq(n, i ? 60 : 61);
		for (size_t k = 0; k < n; k++) {
			uint64_t sec = i * 60 + (i || k <= 29 ? k + 1 : k);
			struct snapshot w;

			if (!i && k == 30)
				make_snap(&w, t0 + 30500, 61);
			else
				make_snap(&w, t0 + sec * 1000, 2 * sec);
			cr_assert(snapshot_equal(&pts[k], &w), "minute %zu point %zu", i, k);
			snapshot_free(&w);
		}
		chunk_points_free(pts, n);
	}
	freeReplyObject(r);

	for (size_t f = 0; f < sizeof(froms) / sizeof(froms[0]); f++) {
		const char *hosts[] = { "nosuch", "web-1" };
		uint64_t from[] = { 0, froms[f] };
		struct store_readers rd = { .snapshot = collect_cb, .arg = &got };

		for (int many = 0; many < 2; many++) {
			size_t k = 0;

			got.n = 0;
			if (many)
				cr_assert_geq(store_read_ranges(c, hosts, from, 2, 1, 0, &rd, &bad, err,
								sizeof(err)), 0, "%s", err);
			else
				cr_assert_geq(store_read_range(c, "web-1", 1, froms[f], 0, 0, collect_cb,
							       &got, &bad, err, sizeof(err)), 0,
					      "%s", err);
			cr_assert_eq(bad, 0);
			/* every second from froms[f] on, and the early flush once, in order */
			for (uint64_t sec = 1; sec <= 200; sec++) {
				if (t0 + sec * 1000 >= froms[f]) {
					cr_assert_lt(k, got.n, "from %llu: %zu delivered",
						     (unsigned long long)froms[f], got.n);
					cr_assert_eq(got.seqs[k++], 2 * sec, "from %llu, second %llu",
						     (unsigned long long)froms[f],
						     (unsigned long long)sec);
				}
				if (sec == 30 && t0 + 30500 >= froms[f]) {
					cr_assert_lt(k, got.n);
					cr_assert_eq(got.seqs[k++], 61);
				}
			}
			cr_assert_eq(k, got.n, "from %llu (%s): %zu delivered, %zu wanted",
				     (unsigned long long)froms[f], many ? "many" : "one", got.n, k);
		}
	}
	/* closed ranges wholly inside the chunks, and across chunks and entries */
	got.n = 0;
	cr_assert_eq(store_read_range(c, "web-1", 1, t0 + 10000, t0 + 70000, 0, collect_cb, &got,
				      &bad, err, sizeof(err)), 62, "%s", err);
	cr_assert_eq(got.seqs[0], 20);
	cr_assert_eq(got.seqs[61], 140);
	{
		const char *hosts[] = { "web-1" };
		uint64_t from[] = { t0 + 100000 };
		struct store_readers rd = { .snapshot = collect_cb, .arg = &got };

		got.n = 0;
		cr_assert_eq(store_read_ranges(c, hosts, from, 1, 1, t0 + 130000, &rd, &bad, err,
					       sizeof(err)), 31, "%s", err);
		cr_assert_eq(got.seqs[0], 200);
		cr_assert_eq(got.seqs[30], 260);
	}
	/* at most max, from inside a chunk */
	got.n = 0;
	cr_assert_eq(store_read_range(c, "web-1", 1, t0 + 59000, 0, 3, collect_cb, &got, &bad,
				      err, sizeof(err)), 3, "%s", err);
	cr_assert_eq(got.seqs[0], 118);
	cr_assert_eq(got.seqs[2], 122);
	/* the newest two are entries */
	got.n = 0;
	cr_assert_eq(store_read_latest(c, "web-1", 1, 2, collect_cb, &got, &bad, err,
				       sizeof(err)), 2, "%s", err);
	cr_assert_eq(got.seqs[0], 398);
	cr_assert_eq(got.seqs[1], 400);
	/* a reader that keeps up sends one XRANGE; one behind, the chunks' too */
	{
		const char *hosts[] = { "web-1" };
		uint64_t from[] = { t0 + 190001 };
		struct store_readers rd = { .snapshot = collect_cb, .arg = &got };

		x = xrange_calls(c);
		cr_assert_eq(store_read_ranges(c, hosts, from, 1, 1, 0, &rd, &bad, err,
					       sizeof(err)), 10, "%s", err);
		cr_assert_eq(xrange_calls(c) - x, 1, "kept up: the entries only");
		from[0] = t0 + 200001;
		x = xrange_calls(c);
		cr_assert_eq(store_read_ranges(c, hosts, from, 1, 1, 0, &rd, &bad, err,
					       sizeof(err)), 0, "%s", err);
		cr_assert_eq(xrange_calls(c) - x, 1, "nothing new: the entries only");
		from[0] = t0 + 90001;
		x = xrange_calls(c);
		cr_assert_eq(store_read_ranges(c, hosts, from, 1, 1, 0, &rd, &bad, err,
					       sizeof(err)), 110, "%s", err);
		cr_assert_eq(xrange_calls(c) - x, 2, "behind: the chunks too");
	}
	/* one second into a minute: the newest before it come from its chunk */
	for (uint64_t k = 1; k <= 61; k++) {
		struct snapshot s;

		make_snap(&s, t0 + k * 1000, 2 * k);
		free(s.host);
		s.host = strdup("web-2");
		cr_assert_eq(store_put_snapshot(st, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	r = conn_commandf(c, NULL, "XLEN fl:{web-2}:s1");
	cr_assert_eq(r->integer, 1);
	freeReplyObject(r);
	for (size_t count = 1; count <= 4; count++) {
		got.n = 0;
		cr_assert_eq(store_read_latest(c, "web-2", 1, count, collect_cb, &got, &bad, err,
					       sizeof(err)), (int)count, "%s", err);
		for (size_t k = 0; k < count; k++)
			cr_assert_eq(got.seqs[k], 2 * (61 - count + 1 + k), "count %zu, %zu", count,
				     k);
	}
	conn_close(c);
	store_close(st);
}

/*
 * Redis restarted empty: the writer cannot know what it holds, so the
 * next rollup is written whole, not as a delta on an entry that is gone.
 */
Test(store, a_rollup_after_redis_restarted_empty_is_written_whole, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct store *st = open_store(1000);
	uint64_t t0 = 1796166000000ULL;
	struct snapshot w[4];
	struct rollups got = { 0 };
	size_t bad = 0, all;
	struct conn *c;
	char err[256];

	for (uint64_t m = 0; m < 4; m++) {
		make_rollup(&w[m], t0, m);
		if (m == 3) {
			test_redis_stop(&redis, 1);
			cr_assert_eq(test_redis_restart(&redis), 0);
		}
		cr_assert_eq(store_put_rollup(st, &w[m], m ? &w[m - 1] : NULL), 0);
		cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	}
	c = conn();
	cr_assert_eq(count_deltas(c, "fl:{web-1}:s60", &all), 0);
	cr_assert_eq(all, 1);
	cr_assert_eq(store_read_range(c, "web-1", 60, 0, 0, 0, rollup_cb, &got, &bad, err,
				      sizeof(err)), 1, "%s", err);
	cr_assert_eq(bad, 0);
	cr_assert_eq(got.value[0], 1000000 + 9 * 7919);
	for (int m = 0; m < 4; m++)
		snapshot_free(&w[m]);
	conn_close(c);
	store_close(st);
}

/*
 * The profile keys through their one owner (store/profile_store.h): a
 * burst request is read back, then expires; windows put for a host are
 * merged back from its tier.
 */
Test(store, profile_burst_and_windows_round_trip, .init = setup, .fini = teardown)
{
	struct store *st = open_store(100);
	struct profile p, into;
	char *blob;
	size_t len;
	char err[256];
	struct conn *c = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	const char *frames[2] = { "main", "hot_loop" };
	int n;

	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(profile_burst_get(c, "web-1"), 0, "no burst asked yet");
	cr_assert_eq(profile_burst_set(c, "web-1", 499, 300, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(profile_burst_get(c, "web-1"), 499);
	cr_assert_eq(profile_burst_get(c, "web-2"), 0, "the burst is per host");
	usleep(600000);
	cr_assert_eq(profile_burst_get(c, "web-1"), 0, "the burst outlived its time");

	profile_init(&p, "web-1");
	profile_add(&p, "api", "api-server", 42, frames, 2, 7);
	cr_assert_eq(profile_encode(&p, &blob, &len), 0);
	cr_assert_eq(profile_store_put(st, "web-1", 0, 1764500000000ULL, 0, blob, len), 0);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	profile_init(&into, "web-1");
	cr_assert_eq(profile_read_merge(c, "web-1", 0, 0, 0, NULL, &into, NULL, err,
					sizeof(err)), 1, "%s", err);
	cr_assert_eq(profile_read_merge(c, "web-1", 1, 0, 0, NULL, &into, NULL, err,
					sizeof(err)), 0, "an hourly window was not asked for");
	/*
	 * a retention given (retention.p10: 30 s): 400 windows, then one 10 min
	 * later; MINID ~ trims whole stream nodes (100 entries each), so the
	 * default hour would keep all 401 and 30 s at most the newest node's
	 */
	for (int k = 0; k <= 400; k++)
		cr_assert_eq(profile_store_put(st, "web-2", 0, 1764500000000ULL + (k == 400 ?
					       600000ULL : k * 10ULL), 30000, blob, len), 0);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	profile_free(&into);
	profile_init(&into, "web-2");
	n = profile_read_merge(c, "web-2", 0, 0, 0, NULL, &into, NULL, err, sizeof(err));
	cr_assert(n >= 1 && n < 150, "%d windows kept under a 30 s retention", n);
	free(blob);
	profile_free(&p);
	profile_free(&into);
	conn_close(c);
	store_close(st);
}

/* Window k of host's CPU profile of period_ms windows from t0: its own frame, k + 1 samples. */
static void put_window_every(struct store *st, const char *host, uint64_t t0, int k,
			     uint64_t period_ms)
{
	struct profile p;
	char own[32], *blob;
	const char *frames[3] = { "main", k % 2 ? "serve" : "gc", own };
	size_t len;

	snprintf(own, sizeof(own), "window_%d", k);
	profile_init(&p, host);
	p.ts_ms = t0 + period_ms * (uint64_t)(k + 1);
	p.duration_ms = period_ms;
	p.rate_hz = 19;
	cr_assert_eq(profile_add(&p, "api", "api-server", 42, frames, 3, (uint64_t)k + 1), 0);
	cr_assert_eq(profile_encode(&p, &blob, &len), 0);
	cr_assert_eq(profile_store_put(st, host, PROFILE_CPU, p.ts_ms, 0, blob, len), 0);
	free(blob);
	profile_free(&p);
}

/* Window k of host's 10 s CPU profile from t0. */
static void put_window(struct store *st, const char *host, uint64_t t0, int k)
{
	put_window_every(st, host, t0, k, 10000);
}

/* Merge host's CPU windows ending in [from, to]: how many, their samples, which frames. */
static int read_windows(struct conn *c, const char *host, uint64_t from, uint64_t to,
			uint64_t *total, size_t *bad, int *seen, int nseen)
{
	struct profile into;
	char err[256];
	int n;

	profile_init(&into, host);
	n = profile_read_merge(c, host, PROFILE_CPU, from, to, NULL, &into, bad, err,
			       sizeof(err));
	cr_assert_geq(n, 0, "%s", err);
	*total = into.total;
	for (int k = 0; k < nseen; k++) {
		char own[32];

		snprintf(own, sizeof(own), "window_%d", k);
		seen[k] = 0;
		for (uint32_t i = 0; i < into.nstrings; i++)
			seen[k] |= !strcmp(into.strings[i], own);
	}
	profile_free(&into);
	return n;
}

static long long stream_len(struct conn *c, const char *key)
{
	redisReply *r = conn_commandf(c, key, "XLEN %s", key);
	long long n;

	cr_assert(r && r->type == REDIS_REPLY_INTEGER);
	n = r->integer;
	freeReplyObject(r);
	return n;
}

/*
 * A profile stream is kept as spans (10 min of 10 s windows): once a
 * window of the next span lands, the ended span's windows go into one
 * chunk and leave the stream; the newest span stays entries.  A read
 * takes every window in its range exactly once: whole, from the middle of
 * one chunk to the middle of the next, when a chunk and the entries both
 * hold a span (compacted between a reader's two reads), and past a chunk
 * that does not decode (counted bad).
 */
Test(store, profile_spans_compact_and_read_back_once, .init = setup, .fini = teardown)
{
	const uint64_t t0 = 1764500400000ULL;	/* a 10-minute boundary */
	struct store *st = open_store(1000);
	struct conn *c = conn();
	uint64_t total;
	size_t bad;
	int seen[130], n;

	cr_assert_eq(t0 % KEY_PROFILE_SPAN_10S_MS, 0);
	for (int k = 0; k < 130; k++)
		put_window(st, "web-3", t0, k);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	cr_assert_eq(stream_len(c, "fl:{web-3}:p10"), 10, "the newest span stays entries");
	cr_assert_eq(stream_len(c, "fl:{web-3}:p10:chunks"), 2, "two ended spans, two chunks");

	n = read_windows(c, "web-3", 0, 0, &total, &bad, seen, 130);
	cr_assert_eq(n, 130);
	cr_assert_eq(total, 130 * 131 / 2, "every window's samples once");
	cr_assert_eq(bad, 0);
	for (int k = 0; k < 130; k++)
		cr_assert(seen[k], "window %d is missing", k);

	/* windows ending in [t0 + 300 s, t0 + 900 s]: k + 1 in [30, 90] */
	n = read_windows(c, "web-3", t0 + 300000, t0 + 900000, &total, &bad, seen, 130);
	cr_assert_eq(n, 61);
	cr_assert_eq(total, (90 * 91 - 29 * 30) / 2);
	for (int k = 0; k < 130; k++)
		cr_assert_eq(seen[k], k >= 29 && k <= 89, "window %d", k);

	/* the first span both compacted and (again) entries: each window once */
	{
		struct store_opts o = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
					.spool_max_entries = 1000, .profiles_entries_only = 1 };
		char err[256];
		struct store *plain = store_open(&o, err, sizeof(err));

		cr_assert_not_null(plain, "%s", err);
		for (int k = 0; k < 70; k++)
			put_window(plain, "web-4", t0, k);
		cr_assert_eq(store_flush(plain, 20 * NSEC_PER_SEC), 0);
		store_close(plain);
	}
	cr_assert_eq(stream_len(c, "fl:{web-4}:p10"), 70, "entries only: nothing compacted");
	freeReplyObject(conn_commandf(c, "fl:{web-4}:p10", "COPY fl:{web-4}:p10 fl:{web-4}:keep"));
	{
		char err[256];

		cr_assert_eq(store_compact_span(c, "web-4", COMPACT_PROFILE(PROFILE_CPU), t0, 0, err,
						sizeof(err)), 0, "%s", err);
	}
	cr_assert_eq(stream_len(c, "fl:{web-4}:p10"), 10);
	cr_assert_eq(stream_len(c, "fl:{web-4}:p10:chunks"), 1);
	freeReplyObject(conn_commandf(c, "fl:{web-4}:p10",
				      "COPY fl:{web-4}:keep fl:{web-4}:p10 REPLACE"));
	cr_assert_eq(stream_len(c, "fl:{web-4}:p10"), 70);
	n = read_windows(c, "web-4", 0, 0, &total, &bad, seen, 70);
	cr_assert_eq(n, 70, "%d windows merged from 70 entries and a chunk of 60 of them", n);
	cr_assert_eq(total, 70 * 71 / 2);

	/* a chunk that does not decode: counted, the rest read */
	freeReplyObject(conn_commandf(c, "fl:{web-3}:p10", "XADD fl:{web-3}:p10:chunks %llu-0 c junk",
				      (unsigned long long)(t0 + 1200000)));
	n = read_windows(c, "web-3", 0, 0, &total, &bad, seen, 130);
	cr_assert_eq(n, 130);
	cr_assert_eq(bad, 1);

	/* a span holding an entry that does not decode stays entries: nothing lost */
	freeReplyObject(conn_commandf(c, "fl:{web-5}:p10", "XADD fl:{web-5}:p10 %llu-0 d junk",
				      (unsigned long long)(t0 + 5000)));
	for (int k = 0; k < 61; k++)
		put_window(st, "web-5", t0, k);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	cr_assert_eq(stream_len(c, "fl:{web-5}:p10"), 62);
	cr_assert_eq(stream_len(c, "fl:{web-5}:p10:chunks"), 0);
	n = read_windows(c, "web-5", 0, 0, &total, &bad, seen, 61);
	cr_assert_eq(n, 61);
	cr_assert_eq(bad, 1);
	conn_close(c);
	store_close(st);
}

static void count_state(const char *fp, const char *json, void *arg)
{
	(void)json;
	cr_expect_str_eq(fp, "fp1");
	(*(int *)arg)++;
}

/*
 * A single server set up before the checkpoint moved into fl:alerts' slot
 * keeps its firing alerts: the old hash is taken over on first read.
 */
/*
 * faultline usage's measure of a host: what is entries and what is chunks,
 * the points the chunks hold (counted by decoding them; a chunk that does
 * not decode is counted apart), and a projection whose cost a point beyond
 * the span under way is a chunk's.
 */
Test(store, host_usage_counts_entries_chunk_points_and_projects, .init = setup,
     .fini = teardown, .timeout = 60)
{
	const uint64_t t0 = 1796166000000ULL;	/* a 10-minute boundary */
	struct store *st = open_store(1000);
	struct host_usage u, none;
	const struct stream_usage *s1 = &u.s[USAGE_S1], *p10 = &u.s[USAGE_P10];
	double entry_cost, chunk_cost, at15, at30;
	struct conn *c = conn();
	char err[256], basis;

	cr_assert_eq(t0 % KEY_PROFILE_SPAN_10S_MS, 0);
	for (uint64_t k = 1; k <= 150; k++) {
		struct snapshot sn;

		make_snap(&sn, t0 + k * 1000, k);
		cr_assert_eq(store_put_snapshot(st, &sn), 0);
		snapshot_free(&sn);
	}
	for (int k = 0; k < 130; k++)
		put_window(st, "web-1", t0, k);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	store_close(st);
	freeReplyObject(conn_commandf(c, "fl:{web-1}:p10:chunks",
				      "XADD fl:{web-1}:p10:chunks %llu-0 c junk",
				      (unsigned long long)(t0 + 3 * KEY_PROFILE_SPAN_10S_MS)));

	cr_assert_eq(host_usage_read(c, "web-1", &u, err, sizeof(err)), 0, "%s", err);
	/* the third minute under way is entries, two ended minutes are chunks of 60 */
	cr_assert_eq(s1->entries, 30);
	cr_assert_eq(s1->chunks, 2);
	cr_assert_eq(s1->chunk_points, 120);
	cr_assert_eq(s1->bad_chunks, 0);
	cr_assert_eq(s1->step_ms, 1000, "the interval measured from the entries");
	cr_assert_eq(s1->oldest_ms, t0 + 121000);
	cr_assert_eq(s1->newest_ms, t0 + 150000);
	cr_assert(s1->entry_bytes > 0 && s1->chunk_bytes > 0);
	/* 13 windows a span: 10 entries, 2 chunks of 60, and the junk one counted apart */
	cr_assert_eq(p10->entries, 10);
	cr_assert_eq(p10->chunks, 3);
	cr_assert_eq(p10->chunk_points, 120);
	cr_assert_eq(p10->bad_chunks, 1);
	cr_assert_eq(p10->step_ms, 10000);
	cr_assert_eq(u.s[USAGE_S60].entries + u.s[USAGE_S60].chunks, 0);

	/* steady state: half a minute as entries, the rest at a chunk point's cost */
	entry_cost = (double)s1->entry_bytes / 30;
	chunk_cost = (double)s1->chunk_bytes / 120;
	cr_assert_lt(chunk_cost, entry_cost, "a chunk point costs %.0f B, an entry %.0f",
		     chunk_cost, entry_cost);
	cr_assert_float_eq(stream_usage_at(s1, 20000, &basis), 20 * entry_cost, 1e-6,
			   "within half a span, all of it entries");
	cr_assert_eq(basis, 'b');
	at15 = stream_usage_at(s1, 15 * 60000, &basis);
	at30 = stream_usage_at(s1, 30 * 60000, &basis);
	cr_assert_float_eq(at15, 30 * entry_cost + 870 * chunk_cost, 1e-3);
	cr_assert_float_eq(at30 - at15, 900 * chunk_cost, 1e-3,
			   "each second past the span under way costs a chunk point");
	cr_assert_lt(at15, 900 * entry_cost);

	/* a host with nothing: zeros, basis '-' */
	cr_assert_eq(host_usage_read(c, "nobody-9", &none, err, sizeof(err)), 0, "%s", err);
	cr_assert_float_eq(stream_usage_at(&none.s[USAGE_S1], 900000, &basis), 0, 1e-9);
	cr_assert_eq(basis, '-');
	cr_assert_eq(none.other_bytes, 0);
	/* entries only (no chunk yet): all of it at an entry's cost, said so */
	{
		struct stream_usage e = *s1;

		e.chunks = e.chunk_points = e.chunk_bytes = 0;
		cr_assert_float_eq(stream_usage_at(&e, 900000, &basis), 900 * entry_cost, 1e-3);
		cr_assert_eq(basis, 'e');
	}
	/*
	 * young chunks (under half a span a chunk: a probe's first chunk of
	 * hourly profiles holds its first day's last hours) are said to be,
	 * projected as any; whole spans are not, a junk chunk not counted
	 */
	{
		struct stream_usage y = *s1;

		cr_assert_not(stream_chunks_young(s1), "two chunks of 60 seconds each");
		cr_assert_not(stream_chunks_young(p10), "two chunks of 60 windows and a junk one");
		y.chunks = 1;
		y.chunk_points = 29;
		cr_assert_float_eq(stream_usage_at(&y, 15 * 60000, &basis),
				   30 * entry_cost + 870 * (double)y.chunk_bytes / 29, 1e-3);
		cr_assert_eq(basis, 'y');
		y.chunk_points = 30;
		stream_usage_at(&y, 15 * 60000, &basis);
		cr_assert_eq(basis, 'b', "half a span is not young");
		y.entries = 0;
		y.chunk_points = 2;
		stream_usage_at(&y, 15 * 60000, &basis);
		cr_assert_eq(basis, 'y', "chunks only, young");
	}
	/*
	 * a probe with profile.window: 30s: its step is measured, from the
	 * entries, and with none from what the chunk's windows cover
	 */
	st = open_store(1000);
	for (int k = 0; k < 40; k++)
		put_window_every(st, "web-30", t0, k, 30000);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	store_close(st);
	cr_assert_eq(host_usage_read(c, "web-30", &u, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p10->entries, 20);
	cr_assert_eq(p10->chunk_points, 20);
	cr_assert_eq(p10->step_ms, 30000, "from the entries: %llu",
		     (unsigned long long)p10->step_ms);
	freeReplyObject(conn_commandf(c, "fl:{web-30}:p10", "DEL fl:{web-30}:p10"));
	cr_assert_eq(host_usage_read(c, "web-30", &u, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p10->entries, 0);
	cr_assert_eq(p10->step_ms, 30000, "from the chunk: %llu", (unsigned long long)p10->step_ms);
	cr_assert_float_eq(stream_usage_at(p10, 3600000, &basis), 120 * (double)p10->chunk_bytes / 20,
			   1e-3, "an hour is 120 windows of 30 s");

	/*
	 * a probe that paused (down 200 s, then back): its entries' ids
	 * average 20 s a window, its interval is still 10 s
	 */
	st = open_store(1000);
	for (int k = 0; k < 40; k++)
		if (k < 10 || k >= 30)
			put_window(st, "web-gap", t0, k);
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	store_close(st);
	cr_assert_eq(host_usage_read(c, "web-gap", &u, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p10->entries, 20);
	cr_assert_eq(p10->chunks, 0, "the case under test: one span under way, as entries");
	cr_assert_eq(p10->newest_ms - p10->oldest_ms, 390000);
	cr_assert_eq(p10->step_ms, 10000, "a pause taken for the interval: %llu",
		     (unsigned long long)p10->step_ms);

	conn_close(c);
}

Test(store, legacy_alert_checkpoint_is_taken_over, .init = setup, .fini = teardown)
{
	struct conn *c = conn();
	redisReply *r;
	char err[256];
	int n = 0;

	freeReplyObject(conn_commandf(c, NULL, "HSET %s fp1 {}", KEY_ALERTS_STATE_LEGACY));
	cr_expect_eq(store_alerts_state_read(c, count_state, &n, err, sizeof(err)), 1, "%s", err);
	cr_expect_eq(n, 1);
	r = conn_commandf(c, NULL, "EXISTS %s", KEY_ALERTS_STATE_LEGACY);
	cr_expect_eq(r->integer, 0, "the legacy key is gone");
	freeReplyObject(r);
	r = conn_commandf(c, NULL, "HLEN %s", KEY_ALERTS_STATE);
	cr_expect_eq(r->integer, 1);
	freeReplyObject(r);
	conn_close(c);
}

struct woken_names {
	char names[8][64];
	int n;
};

static int take_name(const char *host, void *arg)
{
	struct woken_names *w = arg;

	if (w->n < 8)
		snprintf(w->names[w->n++], 64, "%s", host);
	return strcmp(host, "web-3") != 0;	/* web-3 is not ours */
}

/*
 * fl:wake: the cursor starts after what is there (an old wake is not
 * news), each wake is read once, a name that is not a host name is
 * skipped and passed over, and the stream is trimmed by length.
 */
Test(store, wakes_are_read_once_past_the_cursor, .init = setup, .fini = teardown)
{
	struct store *st = open_store(100);
	struct conn *c = conn();
	struct wake_cursor cur;
	struct woken_names w = { 0 };
	char err[256];
	redisReply *r;

	cr_assert_eq(store_put_wake(st, "old-1"), 0);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	cr_assert_eq(wake_cursor_init(c, &cur, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(store_put_wake(st, "bad name!"), -EINVAL);
	cr_assert_eq(store_put_wake(st, "web-1"), 0);
	cr_assert_eq(store_put_wake(st, "web-3"), 0);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:wake * h %s", "bad name!"));
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:wake * x web-9"));
	cr_assert_eq(wake_wait(c, &cur, 100, take_name, &w, err, sizeof(err)), 1, "%s", err);
	cr_assert_eq(w.n, 2);
	cr_expect_str_eq(w.names[0], "web-1");
	cr_expect_str_eq(w.names[1], "web-3");
	/* read once: the cursor is past all four, the malformed ones included */
	w.n = 0;
	cr_assert_eq(wake_wait(c, &cur, 100, take_name, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(w.n, 0);
	/* trimmed by length as it is written */
	for (int i = 0; i < 3 * KEY_WAKE_MAXLEN; i++)
		cr_assert_eq(store_put_wake(st, "web-1"), 0);
	cr_assert_eq(store_flush(st, 10 * NSEC_PER_SEC), 0);
	r = conn_commandf(c, NULL, "XLEN fl:wake");
	cr_assert(r && r->type == REDIS_REPLY_INTEGER);
	cr_expect_lt(r->integer, 2 * KEY_WAKE_MAXLEN, "fl:wake holds %lld entries", r->integer);
	freeReplyObject(r);
	conn_close(c);
	store_close(st);
}
