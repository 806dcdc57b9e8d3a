/*
 * test_hosts.c - every host is monitored or loudly not (real Redis, the
 * engine in process): unreadable entries page HostUndecodable for the
 * stream's host, a snapshot naming another host inside is filed under the
 * stream's (no phantom host), a future-dated entry does not freeze its
 * host, a registered host that never wrote pages HostSilent, an
 * over-long host name does not grow the engine, over-long label values
 * still decode, and HostSilent waits while spools drain after an outage.
 */
#include <criterion/criterion.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "rules/engine/engine.h"
#include "tests/helpers.h"
#include "model/snapshot.h"
#include "store/store.h"
#include "core/timeutil.h"

/* How many events are `status` of alertname with "host":"host" among them. */
static int count(const struct test_events *ev, const char *alertname, const char *host,
		 const char *status)
{
	char a[160], h[160], st[40];
	int n = 0;

	snprintf(a, sizeof(a), "\"alertname\":\"%s\"", alertname);
	snprintf(h, sizeof(h), "\"host\":\"%s\"", host);
	snprintf(st, sizeof(st), "\"status\":\"%s\"", status);
	for (int i = 0; i < ev->n; i++)
		n += strstr(ev->json[i], a) && strstr(ev->json[i], h) && strstr(ev->json[i], st);
	return n;
}

static struct test_redis redis;
static struct conn *rc;
static struct engine *e;

static struct engine_counts counts(void)
{
	struct engine_counts c;

	engine_counts(e, &c);
	return c;
}

/* Its own Redis and an engine with one rule, DriveHot: expr. */
static void start_engine(const char *expr)
{
	char yaml[300], err[256];
	struct ruleset rs = { 0 };

	snprintf(yaml, sizeof(yaml), "groups:\n  - name: t\n    rules:\n      - alert: DriveHot\n"
		 "        expr: %s\n", expr);
	cr_assert_eq(test_redis_start(&redis), 0);
	rc = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	cr_assert_not_null(rc, "%s", err);
	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, &(struct engine_opts){ .stale_ms = 5000 }), 0);
}

static void setup(void)
{
	start_engine("faultline_drive_temperature_celsius > 60");
}

/* The same rule over 2 minutes: the engine reads 2 min 5 s back. */
static void setup_2m(void)
{
	start_engine("max_over_time(faultline_drive_temperature_celsius[2m]) > 60");
}

static void teardown(void)
{
	engine_free(e);
	conn_close(rc);
	test_redis_destroy(&redis);
}

/* Write a snapshot of `host` at ts through the store (registers the host). */
static void put(const char *host, uint64_t ts, const char *inside, double temp)
{
	struct store_opts o = { .url = redis.url, .timeout_ns = NSEC_PER_SEC };
	char err[256];
	struct store *st = store_open(&o, err, sizeof(err));
	struct snapshot s;

	cr_assert_not_null(st, "%s", err);
	snapshot_init(&s, inside ? inside : host, ts, 1000, ts / 1000, 1);
	snapshot_add_gauge(&s, "drive.temperature_c", temp, "device", "sda", NULL);
	if (inside) {
		/* a stream entry of `host` whose snapshot names another host */
		char *buf;
		size_t len;

		cr_assert_eq(snapshot_encode(&s, &buf, &len), 0);
		freeReplyObject(conn_commandf(rc, NULL, "XADD fl:{%s}:s1 %llu-0 d %b", host,
					     (unsigned long long)ts, buf, len));
		freeReplyObject(conn_commandf(rc, NULL, "SET fl:{%s}:host {}", host));
		free(buf);
	} else {
		store_put_snapshot(st, &s);
	}
	snapshot_free(&s);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_close(st);
}

static void eval_at(uint64_t now, struct test_events *ev)
{
	char err[256];

	cr_assert_geq(engine_load_redis(e, rc, 0, err, sizeof(err)), 0, "%s", err);
	engine_eval(e, now, test_events_collect, ev);
}

Test(hosts, unreadable_entries_page_the_streams_host, .init = setup, .fini = teardown)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct test_events ev = { 0 };

	put("good-1", now - 2000, NULL, 30);
	put("bad-1", now - 2000, NULL, 30);
	for (int i = 0; i < 4; i++)
		freeReplyObject(conn_commandf(rc, NULL, "XADD fl:{bad-1}:s1 %llu-0 d garbage%d",
					     (unsigned long long)(now - 1500 + i * 100), i));
	eval_at(now, &ev);
	cr_assert_eq(count(&ev, "HostUndecodable", "bad-1", "firing"), 1,
		     "unreadable entries did not page their host");
	cr_assert_eq(count(&ev, "HostUndecodable", "good-1", "firing"), 0);
	cr_assert_eq(counts().undecodable, 4, "each unreadable entry counted once");
	/* read again: counted once, and it resolves a minute after the last one */
	eval_at(now + 1000, &ev);
	cr_assert_eq(counts().undecodable, 4, "an unreadable entry was counted twice");
	test_events_free(&ev);
	eval_at(now + 70000, &ev);
	cr_assert_eq(count(&ev, "HostUndecodable", "bad-1", "resolved"), 1);
	test_events_free(&ev);
}

Test(hosts, a_wrong_type_stream_is_unreadable_too, .init = setup, .fini = teardown)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct test_events ev = { 0 };

	freeReplyObject(conn_commandf(rc, NULL, "SET fl:{odd-1}:s1 x"));
	freeReplyObject(conn_commandf(rc, NULL, "SET fl:{odd-1}:host {}"));
	for (int i = 0; i < 3; i++)
		eval_at(now + (uint64_t)i * 1000, &ev);
	cr_assert_eq(count(&ev, "HostUndecodable", "odd-1", "firing"), 1);
	test_events_free(&ev);
}

Test(hosts, a_snapshot_is_filed_under_its_streams_host, .init = setup, .fini = teardown)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct test_events ev = { 0 };

	put("web-1", now - 3000, NULL, 30);
	put("web-1", now - 2000, "phantom-9", 70);
	eval_at(now, &ev);
	cr_assert_eq(engine_history(e, "phantom-9"), 0, "a phantom host was created");
	cr_assert_eq(engine_history(e, "web-1"), 2);
	cr_assert_eq(count(&ev, "DriveHot", "web-1", "firing"), 1,
		     "the hot reading was not filed under the stream's host");
	test_events_free(&ev);
}

Test(hosts, a_future_dated_entry_does_not_freeze_its_host, .init = setup, .fini = teardown)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct test_events ev = { 0 };

	put("db-1", now - 3000, NULL, 30);
	put("db-1", now + 3600 * 1000, NULL, 30);	/* a clock an hour ahead, once */
	eval_at(now, &ev);
	for (int i = 1; i <= 8; i++) {
		put("db-1", now + (uint64_t)i * 1000, NULL, i >= 6 ? 70 : 30);
		eval_at(now + (uint64_t)i * 1000 + 500, &ev);
	}
	cr_assert_eq(count(&ev, "HostSilent", "db-1", "firing"), 0,
		     "the future-dated entry froze the host");
	cr_assert_eq(count(&ev, "DriveHot", "db-1", "firing"), 1,
		     "snapshots after the future-dated one were not read");
	test_events_free(&ev);
}

Test(hosts, a_host_that_never_wrote_is_silent, .init = setup, .fini = teardown)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct test_events ev = { 0 };

	put("up-1", now - 1000, NULL, 30);
	freeReplyObject(conn_commandf(rc, NULL, "SET fl:{never-1}:host {}"));
	eval_at(now, &ev);
	cr_assert_eq(count(&ev, "HostSilent", "never-1", "firing"), 0, "no grace at all");
	put("up-1", now + 5000, NULL, 30);
	eval_at(now + 6000, &ev);
	cr_assert_eq(count(&ev, "HostSilent", "never-1", "firing"), 1,
		     "a registered host that never wrote is silently unmonitored");
	cr_assert_eq(count(&ev, "HostSilent", "up-1", "firing"), 0);
	test_events_free(&ev);
}

Test(hosts, an_overlong_host_name_does_not_grow_the_engine, .init = setup, .fini = teardown)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct test_events ev = { 0 };
	char name[301];
	size_t before;

	memset(name, 'h', 300);
	name[300] = '\0';
	put("up-1", now - 1000, NULL, 30);
	freeReplyObject(conn_commandf(rc, NULL, "SET fl:{%s}:host {}", name));
	eval_at(now, &ev);
	before = counts().hosts;
	for (int i = 1; i <= 5; i++)
		eval_at(now + (uint64_t)i * 100, &ev);
	cr_assert_eq(counts().hosts, before, "hosts grew from %zu to %zu", before, counts().hosts);
	cr_assert_eq(before, 1);
	test_events_free(&ev);
}

Test(hosts, overlong_label_values_still_decode)
{
	struct snapshot s, d;
	char *v = malloc(5000), err[256], *buf;
	size_t len;

	memset(v, 'x', 4999);
	v[4999] = '\0';
	snapshot_init(&s, "h", 1, 1000, 1, 1);
	cr_assert_eq(snapshot_set_label(&s, "rack", v), 0);
	cr_assert_not_null(snapshot_add_counter(&s, "cgroup.throttled_time", 5, "cgroup", v, NULL));
	cr_assert_neq(snapshot_set_label(&s, "", "x"), 0, "an empty label key was accepted");
	cr_assert_null(snapshot_add_counter(&s, "cgroup.throttled_time", 5, "", "x", NULL));
	cr_assert_eq(snapshot_encode(&s, &buf, &len), 0);
	cr_assert_eq(snapshot_decode(buf, len, &d, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(strlen(d.series[0].labels[0].value), SNAPSHOT_MAX_STR);
	cr_assert_eq(strncmp(d.series[0].labels[0].value, v, 100), 0);
	snapshot_free(&d);
	snapshot_free(&s);
	free(buf);
	free(v);
}

Test(hosts, host_silent_waits_for_spools_to_drain, .init = setup, .fini = teardown)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	struct test_events ev = { 0 };

	put("db-1", now - 1000, NULL, 30);
	eval_at(now, &ev);
	/* the engine saw Redis come back after 20 s away: the daemon sets this */
	engine_hold_silent(e, now + 20000 + engine_options(e)->stale_ms);
	eval_at(now + 10000, &ev);
	cr_assert_eq(count(&ev, "HostSilent", "db-1", "firing"), 0, "paged while spools drain");
	eval_at(now + 30000, &ev);
	cr_assert_eq(count(&ev, "HostSilent", "db-1", "firing"), 1, "never paged after the grace");
	test_events_free(&ev);
}

/*
 * The first read of a fleet larger than the engine's first allocation (64
 * hosts): adding hosts moves the engine's host table, and the names handed
 * to the pipelined read used to point into the old one (a use after free:
 * with freed memory overwritten, as M_PERTURB does, hosts read nothing or
 * garbage names paged HostSilent).  Every host's snapshot must arrive.
 */
Test(hosts, the_first_read_of_a_large_fleet_reads_every_host, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct store_opts o = { .url = redis.url, .timeout_ns = NSEC_PER_SEC };
	char err[256], name[32];
	struct store *st = store_open(&o, err, sizeof(err));
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	int loaded;

	cr_assert_not_null(st, "%s", err);
	for (int h = 0; h < 300; h++) {
		struct snapshot s;

		snprintf(name, sizeof(name), "big-%03d", h);
		snapshot_init(&s, name, now - 1000, 1000, 1, 1);
		snapshot_add_gauge(&s, "drive.temperature_c", 40, "device", "sda", NULL);
		store_put_snapshot(st, &s);
		snapshot_free(&s);
	}
	cr_assert_eq(store_flush(st, 10 * NSEC_PER_SEC), 0);
	store_close(st);
	mallopt(M_PERTURB, 0x5a);	/* freed memory is overwritten, not left readable */
	loaded = engine_load_redis(e, rc, 0, err, sizeof(err));
	mallopt(M_PERTURB, 0);
	cr_assert_eq(loaded, 300, "%s", err);
	for (int h = 0; h < 300; h++) {
		snprintf(name, sizeof(name), "big-%03d", h);
		cr_expect_eq(engine_history(e, name), 1, "%s was not read", name);
	}
}

/*
 * 21 hosts, read; then host huge-1's next stream entry is one of nparts
 * fields of part bytes, and every host's next snapshot arrives; the engine
 * (a rule over 2 min: it reads that far back, however long the giant took
 * to write) reads through a connection with timeout_ns.  Checks that huge-1 alone is
 * quarantined (HostUndecodable, not HostSilent, not read again) and the 20
 * are read in the same interval; the two intervals' read times out.
 */
static void put_fleet(uint64_t ts, double huge_temp)
{
	/*
	 * Entries only: a store that compacts would, once a minute ends, read
	 * huge-1's giant entries back to make its chunk, and Redis busy with
	 * that answer for seconds held this store's writes past the flush
	 * below (CI, 2026-12-07).  The rules' reads are what is tested.
	 */
	struct store_opts o = { .url = redis.url, .timeout_ns = 5 * NSEC_PER_SEC,
				.s1_entries_only = 1 };
	char err[256];
	struct store *st = store_open(&o, err, sizeof(err));
	struct snapshot sn;

	cr_assert_not_null(st, "%s", err);
	for (int i = 0; i <= 20; i++) {
		char host[16];

		snprintf(host, sizeof(host), i < 20 ? "good-%d" : "huge-1", i);
		snapshot_init(&sn, host, ts, 1000, ts / 1000, 1);
		snapshot_add_gauge(&sn, "drive.temperature_c", i < 20 ? 30 : huge_temp, "device",
				   "sda", NULL);
		store_put_snapshot(st, &sn);
		snapshot_free(&sn);
	}
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_close(st);
}

static void giant_entry_case(size_t part, int nparts, uint64_t timeout_ns, uint64_t *first_ns,
			     uint64_t *second_ns)
{
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, t0;
	struct test_events ev = { 0 };
	char *big = malloc(part), err[256], key[64] = "fl:{huge-1}:s1", id[32];
	const char *argv[9] = { "XADD", key, id, "a", big, "b", big, "c", big };
	size_t lens[9] = { 4, strlen(key), 0, 1, part, 1, part, 1, part };
	struct conn *slow, *ec;
	redisReply *r;
	int got;

	/* the fleet as the engine knows it: every host read up to now - 1000 */
	put_fleet(now - 1000, 30);
	ec = conn_open(redis.url, timeout_ns, err, sizeof(err));
	cr_assert_not_null(ec, "%s", err);
	cr_assert_eq(engine_load_redis(e, ec, 0, err, sizeof(err)), 21, "%s", err);
	/* then huge-1's next entry is the giant (a gigabyte takes a patient connection) */
	cr_assert_not_null(big);
	memset(big, 'z', part);
	snprintf(id, sizeof(id), "%llu-0", (unsigned long long)(now - 500));
	lens[2] = strlen(id);
	slow = conn_open(redis.url, 120 * NSEC_PER_SEC, err, sizeof(err));
	cr_assert_not_null(slow, "%s", err);
	r = conn_command(slow, key, 3 + 2 * nparts, argv, lens);
	cr_assert(r && r->type == REDIS_REPLY_STRING, "redis did not take the entry: %s",
		  r ? r->str : conn_errstr(slow));
	freeReplyObject(r);
	conn_close(slow);
	free(big);
	/* and, however long that took, everyone's next snapshot (huge-1's hot: never read) */
	now = time_wall_ns() / NSEC_PER_MSEC;
	put_fleet(now - 500, 99);
	t0 = time_mono_ns();
	got = engine_load_redis(e, ec, 0, err, sizeof(err));
	*first_ns = time_mono_ns() - t0;
	cr_assert_geq(got, 20, "%d snapshot(s) read: %s", got, err);
	engine_eval(e, now, test_events_collect, &ev);
	cr_expect_eq(counts().oversize, 1);
	cr_expect_eq(counts().quarantined, 1, "%zu hosts quarantined", counts().quarantined);
	cr_expect_eq(count(&ev, "HostUndecodable", "huge-1", "firing"), 1,
		     "the host with the giant entry was not paged");
	cr_expect_eq(count(&ev, "DriveHot", "huge-1", "firing"), 0,
		     "something after the giant entry was read");
	for (int i = 0; i < 20; i++) {
		char host[16];

		snprintf(host, sizeof(host), "good-%d", i);
		cr_expect_eq(count(&ev, "HostSilent", host, "firing") +
			     count(&ev, "HostUndecodable", host, "firing"), 0, "%s was not read", host);
	}
	t0 = time_mono_ns();
	cr_assert_geq(engine_load_redis(e, ec, 0, err, sizeof(err)), 0, "%s", err);
	*second_ns = time_mono_ns() - t0;
	engine_eval(e, now + 2000, test_events_collect, &ev);
	cr_expect_eq(counts().oversize, 1, "a quarantined host was read again");
	cr_expect_eq(count(&ev, "HostSilent", "huge-1", "firing"), 0,
		     "a quarantined host pages HostSilent as well");
	conn_close(ec);
	test_events_free(&ev);
}

/*
 * An entry of 40 MiB (over the 32 MiB page bound): its reply is refused
 * unread at the bound, its host quarantined, the interval (1 s) kept.
 */
Test(hosts, an_entry_over_the_page_bound_quarantines_its_host, .init = setup_2m, .fini = teardown,
     .timeout = 120)
{
	uint64_t first_ns, second_ns;

	giant_entry_case(40u << 20, 1, 2 * NSEC_PER_SEC, &first_ns, &second_ns);
	cr_expect_lt(first_ns, NSEC_PER_SEC, "the interval took %.2f s", first_ns / 1e9);
	cr_expect_lt(second_ns, NSEC_PER_SEC / 2, "the next took %.2f s", second_ns / 1e9);
	cr_log_info("40 MiB entry: first interval's read %.3f s, the next %.3f s",
		    first_ns / 1e9, second_ns / 1e9);
}

/*
 * An entry of 1 GB (three fields of 330 MiB: 1.04 GB, about the most a
 * stream entry holds, and what Redis' default proto-max-bulk-len lets any
 * client write).  Redis takes most of a second to build such an answer
 * (0.7 s here) before it sends a byte of the pipeline it is in; read with
 * a 500 ms timeout, the pipeline times out (here; where Redis is faster,
 * the page bound is met instead), Redis answers a PING once done, and the
 * pipeline's hosts are asked one at a time to find which: huge-1 alone is
 * quarantined, every other host read in the same interval, which runs over
 * by at most two timeouts.  (Redis as
 * faultline-redis runs it, proto-max-bulk-len 16mb, refuses such an entry
 * outright: docs/security.md.)
 */
Test(hosts, a_gigabyte_entry_quarantines_its_host_not_the_fleet, .init = setup_2m,
     .fini = teardown, .timeout = 180)
{
	uint64_t first_ns, second_ns;

	uint64_t redis_ns, t0;
	struct conn *slow;
	redisReply *r;
	char err[256];

	giant_entry_case(330u << 20, 3, 500 * NSEC_PER_MSEC, &first_ns, &second_ns);
	/*
	 * How long Redis itself is busy with that answer: 0.7 s on a quiet
	 * machine, several seconds on a slow one.  The interval may
	 * run over by that, plus two timeouts, plus a second of slack.
	 */
	slow = conn_open(redis.url, 120 * NSEC_PER_SEC, err, sizeof(err));
	cr_assert_not_null(slow, "%s", err);
	t0 = time_mono_ns();
	/* Redis copies the entries as for a reply; the client is spared the gigabyte */
	r = conn_commandf(slow, NULL, "EVAL %s 1 fl:{huge-1}:s1",
			  "return #redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 3)");
	redis_ns = time_mono_ns() - t0;
	cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 2, "%s",
		  r ? "not the giant entry" : conn_errstr(slow));
	freeReplyObject(r);
	conn_close(slow);
	cr_expect_lt(first_ns, redis_ns + 2 * 500 * NSEC_PER_MSEC + NSEC_PER_SEC,
		     "the interval took %.2f s; Redis answers that entry alone in %.2f s",
		     first_ns / 1e9, redis_ns / 1e9);
	cr_expect_lt(second_ns, NSEC_PER_SEC / 2, "the next took %.2f s", second_ns / 1e9);
	cr_log_info("1 GB entry: first interval's read %.3f s (Redis alone: %.3f s), the next "
		    "%.3f s", first_ns / 1e9, redis_ns / 1e9, second_ns / 1e9);
}
