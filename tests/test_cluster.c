/*
 * test_cluster.c - struct conn and the store on a real Redis Cluster:
 * slot computation against CLUSTER KEYSLOT, routing and pipelines across
 * masters, ASK and MOVED during a slot migration, a reshard with
 * `redis-cli --cluster reshard` under a running writer, and a master
 * killed under a running writer (its replica promoted).
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "model/snapshot.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/alert_checkpoint.h"
#include "store/host_registry.h"
#include "store/store.h"
#include "tests/cluster.h"
#include "tests/helpers.h"

static struct test_cluster cl;

static void start3(void)
{
	cr_assert_eq(test_cluster_start(&cl, 3, 0), 0, "cannot start a Redis Cluster");
}

static void start3x2(void)
{
	cr_assert_eq(test_cluster_start(&cl, 3, 1), 0, "cannot start a Redis Cluster");
}

static void stop(void)
{
	test_cluster_destroy(&cl);
}

static struct conn *open_cluster(void)
{
	char err[512];
	struct conn *c = conn_open(cl.url, NSEC_PER_SEC, err, sizeof(err));

	cr_assert_not_null(c, "%s", err);
	cr_assert(conn_is_cluster(c));
	return c;
}

static struct store *open_store(void)
{
	struct store_opts o = {
		.url = cl.url,
		.timeout_ns = NSEC_PER_SEC,
		.retention_ms = { 15 * 60 * 1000, 7ULL * 86400 * 1000, 90ULL * 86400 * 1000 },
		.spool_max_entries = 100000,
	};
	char err[512];
	struct store *st = store_open(&o, err, sizeof(err));

	cr_assert_not_null(st, "%s", err);
	return st;
}

static void put(struct store *st, const char *host, uint64_t ts, uint64_t seq)
{
	struct snapshot s;

	snapshot_init(&s, host, ts, 1000, seq, 1);
	snapshot_add_counter(&s, "tcp.in_csum_errors", seq, NULL);
	cr_assert_eq(store_put_snapshot(st, &s), 0);
	snapshot_free(&s);
}

/* Minute rollup m of host from hour_ms (tier 60), a delta on prev when it can be. */
static void put_rollup(struct store *st, const char *host, uint64_t hour_ms, uint64_t m,
		       struct snapshot *prev)
{
	struct snapshot s;
	struct series *c;

	snapshot_init(&s, host, hour_ms + (m + 1) * 60000, 60000, m, 60);
	for (int d = 0; d < 8; d++) {
		char dev[8] = { 's', 'd', (char)('a' + d) };

		c = snapshot_add_counter(&s, "block.bytes", (1ULL << 40) + m * 4096, "device", dev,
					 NULL);
		c->counter.increase = 4096;
	}
	cr_assert_eq(store_put_rollup(st, &s, m ? prev : NULL), 0);
	if (m)
		snapshot_free(prev);
	*prev = s;
}

static int count_rollup(struct snapshot *s, void *arg)
{
	(void)s;
	++*(size_t *)arg;
	return 0;
}

struct per_host {
	size_t n[64];
	uint64_t last[64];
	int out_of_order;
	size_t index;
};

static int count_cb(struct snapshot *s, void *arg)
{
	struct per_host *p = arg;
	int h = atoi(strrchr(s->host, '-') + 1);

	if (h >= 0 && h < 64) {
		if (s->seq <= p->last[h] && p->n[h])
			p->out_of_order = 1;
		p->last[h] = s->seq;
		p->n[h]++;
	}
	return 0;
}

/* Read hosts h-0 .. h-(n-1) in one store_read_ranges pipeline. */
static int read_all(struct conn *c, int n, struct per_host *p)
{
	char names[64][32];
	const char *hosts[64];
	uint64_t from[64] = { 0 };
	char err[256];
	int got;

	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "h-%d", i);
		hosts[i] = names[i];
	}
	memset(p, 0, sizeof(*p));
	struct store_readers rd = { .snapshot = count_cb, .arg = p };

	got = store_read_ranges(c, hosts, from, (size_t)n, 1, 0, &rd, NULL, err, sizeof(err));
	cr_assert_geq(got, 0, "%s", err);
	return got;
}

Test(cluster, key_slots_match_redis, .init = start3, .fini = stop, .timeout = 120)
{
	struct conn *c = open_cluster();
	static const char *const fixed[] = {
		"fl:hosts", "fl:alerts", "{fl:alerts}:rules", "fl:{db-1}:s1", "foo", "{user1000}.following",
		"foo{}{bar}", "foo{{bar}}zap", "foo{bar}{zap}", "{", "}", "{}", "a{b", "a}b{c}",
		"", "\xff\xfe{\x01}", "123456789",
	};
	int checked = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) + 400; i++) {
		char key[64];
		const char *k = key;
		size_t len;
		const char *argv[3] = { "CLUSTER", "KEYSLOT", NULL };
		size_t lens[3] = { 7, 7, 0 };
		redisReply *r;

		if (i < sizeof(fixed) / sizeof(fixed[0])) {
			k = fixed[i];
			len = strlen(k);
		} else {
			len = 1 + (size_t)rand() % 40;
			for (size_t j = 0; j < len; j++)
				key[j] = "ab{}:-_.0123456789\x80\xff"[rand() % 20];
			key[len] = '\0';
		}
		argv[2] = k;
		lens[2] = len;
		r = conn_command(c, NULL, 3, argv, lens);
		cr_assert_not_null(r, "%s", conn_errstr(c));
		cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "%s", r->str);
		cr_expect_eq((long long)conn_key_slot(k, len), r->integer,
			     "key '%.*s': ours %u, redis %lld", (int)len, k, conn_key_slot(k, len),
			     r->integer);
		freeReplyObject(r);
		checked++;
	}
	cr_expect_eq(conn_key_slot("123456789", 9), 0x31C3 & 16383, "CRC16-XMODEM check value");
	/* the slots keyspace.h documents for the fleet-wide keys */
	cr_expect_eq(conn_key_slot(KEY_DEPLOYS, strlen(KEY_DEPLOYS)), 3313);
	cr_expect_eq(conn_key_slot(KEY_SILENCES, strlen(KEY_SILENCES)), 9711);
	cr_expect_eq(conn_key_slot(KEY_ALERTS, strlen(KEY_ALERTS)), 1464);
	cr_expect_eq(conn_key_slot(KEY_ALERTS_STATE, strlen(KEY_ALERTS_STATE)), 1464);
	cr_expect_eq(conn_key_slot(KEY_ALERTS_DEAD, strlen(KEY_ALERTS_DEAD)), 6460);
	cr_expect_eq(conn_key_slot(KEY_NOTIFICATIONS, strlen(KEY_NOTIFICATIONS)), 14376);
	cr_assert_geq(checked, 400);
	conn_close(c);
}

Test(cluster, store_spreads_hosts_and_reads_them_back, .init = start3, .fini = stop,
     .timeout = 120)
{
	struct store *st = open_store();
	struct conn *c;
	struct per_host p;
	uint64_t t0 = time_wall_ns() / NSEC_PER_MSEC - 60000;
	int masters_used = 0;
	char **names;
	size_t nnames;
	char err[256];
	struct conn_stats cs;

	for (int seq = 1; seq <= 5; seq++)
		for (int h = 0; h < 60; h++) {
			char host[32];

			snprintf(host, sizeof(host), "h-%d", h);
			put(st, host, t0 + (uint64_t)seq * 1000, (uint64_t)seq);
		}
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0, "the writer did not drain");
	store_close(st);

	c = open_cluster();
	cr_expect_eq(read_all(c, 60, &p), 300);
	cr_expect(!p.out_of_order);
	for (int h = 0; h < 60; h++)
		cr_expect_eq(p.n[h], 5, "host h-%d: %zu snapshots", h, p.n[h]);
	/* the hash tags spread 60 hosts over every master */
	for (int i = 0; i < cl.n; i++) {
		char out[64];

		cr_assert_eq(test_cluster_cli(&cl, i, out, sizeof(out), "DBSIZE"), 0);
		masters_used += atoi(out) > 0;
	}
	cr_expect_eq(masters_used, 3, "keys on %d of 3 masters", masters_used);
	cr_assert_eq(store_host_names(c, &names, &nnames, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(nnames, 60);
	store_host_names_free(names, nnames);
	conn_get_stats(c, &cs);
	cr_expect_eq(cs.nodes, 3);
	cr_expect_eq(cs.moved, 0, "a fresh slot map needs no redirect");
	conn_close(c);
}

/*
 * Ended hours of several hosts' minute rollups become chunks on whichever
 * master holds each host (the swap is one script on the host's slot), and
 * read back whole.
 */
Test(cluster, ended_hours_become_chunks_on_each_hosts_master, .init = start3, .fini = stop,
     .timeout = 120)
{
	struct store *st = open_store();
	uint64_t hour = (time_wall_ns() / NSEC_PER_MSEC / 3600000 - 3) * 3600000;
	struct snapshot prev[6] = { 0 };
	struct conn *c;
	char err[256];

	for (uint64_t m = 0; m < 75; m++)
		for (int h = 0; h < 6; h++) {
			char host[32];

			snprintf(host, sizeof(host), "h-%d", h);
			put_rollup(st, host, hour, m, &prev[h]);
			if (h == 5)
				cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
		}
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0, "the writer did not drain");
	store_close(st);
	c = open_cluster();
	for (int h = 0; h < 6; h++) {
		char host[32], key[64];
		size_t rollups = 0, bad = 0;
		redisReply *r;

		snprintf(host, sizeof(host), "h-%d", h);
		key_chunks(key, sizeof(key), host, 60);
		r = conn_commandf(c, key, "XLEN %s", key);
		cr_expect_eq(r->integer, 1, "%s: %lld chunks", key, r->integer);
		freeReplyObject(r);
		key_tier(key, sizeof(key), host, 60);
		r = conn_commandf(c, key, "XLEN %s", key);
		cr_expect_eq(r->integer, 15, "%s: %lld entries", key, r->integer);
		freeReplyObject(r);
		cr_expect_eq(store_read_range(c, host, 60, 0, 0, 0, count_rollup, &rollups, &bad,
					      err, sizeof(err)), 75, "%s", err);
		cr_expect_eq(bad, 0);
		snapshot_free(&prev[h]);
	}
	conn_close(c);
}

static int state_count;

static void state_cb(const char *fp, const char *json, void *arg)
{
	(void)arg;
	cr_expect_str_eq(fp, "abc");
	cr_expect_str_eq(json, "{\"x\":1}");
	state_count++;
}

Test(cluster, alert_commit_is_one_transaction_on_a_cluster, .init = start3, .fini = stop,
     .timeout = 120)
{
	struct conn *c = open_cluster();
	char *events[2] = { "{\"a\":1}", "{\"a\":2}" };
	const char *fps[1] = { "abc" }, *states[1] = { "{\"x\":1}" };
	char refused[2], err[256];
	redisReply *r;

	cr_expect_eq(conn_key_slot(KEY_ALERTS, strlen(KEY_ALERTS)),
		     conn_key_slot(KEY_ALERTS_STATE, strlen(KEY_ALERTS_STATE)),
		     "the checkpoint shares fl:alerts' slot");
	cr_assert_eq(store_alerts_commit(c, events, 2, fps, states, 1, refused, err, sizeof(err)),
		     2, "%s", err);
	r = conn_commandf(c, KEY_ALERTS, "XLEN %s", KEY_ALERTS);
	cr_assert_not_null(r);
	cr_expect_eq(r->integer, 2);
	freeReplyObject(r);
	cr_expect_eq(store_alerts_state_read(c, state_cb, NULL, err, sizeof(err)), 1, "%s", err);
	cr_expect_eq(state_count, 1);
	conn_close(c);
}

/* The node id of node i. */
static void node_id(int i, char *id, size_t len)
{
	cr_assert_eq(test_cluster_cli(&cl, i, id, len, "CLUSTER MYID"), 0);
	id[strcspn(id, "\r\n")] = '\0';
	cr_assert_eq(strlen(id), 40, "CLUSTER MYID: '%s'", id);
}

static long long get_int(struct conn *c, const char *key)
{
	redisReply *r = conn_commandf(c, key, "GET %s", key);
	long long v;

	cr_assert_not_null(r, "%s", conn_errstr(c));
	cr_assert_eq(r->type, REDIS_REPLY_STRING, "GET %s: type %d %s", key, r->type,
		     r->type == REDIS_REPLY_ERROR ? r->str : "");
	v = atoll(r->str);
	freeReplyObject(r);
	return v;
}

Test(cluster, follows_ask_during_a_migration_and_moved_after_it, .init = start3, .fini = stop,
     .timeout = 120)
{
	struct conn *c = open_cluster();
	const char *k1 = "fl:{mig}:a", *k2 = "fl:{mig}:b";
	int slot = (int)conn_key_slot(k1, strlen(k1)), src, dst;
	char src_id[64], dst_id[64], out[256];
	struct conn_stats cs;
	redisReply *r;

	r = conn_commandf(c, k1, "SET %s 1", k1);
	freeReplyObject(r);
	r = conn_commandf(c, k2, "SET %s 2", k2);
	freeReplyObject(r);
	src = test_cluster_master_of(&cl, slot);
	cr_assert_geq(src, 0);
	dst = (src + 1) % 3;
	node_id(src, src_id, sizeof(src_id));
	node_id(dst, dst_id, sizeof(dst_id));

	/* migrate k1 only: the slot is half moved, src answers ASK for k1 */
	cr_assert_eq(test_cluster_cli(&cl, dst, out, sizeof(out), "CLUSTER SETSLOT %d IMPORTING %s",
				      slot, src_id), 0, "%s", out);
	cr_assert_eq(test_cluster_cli(&cl, src, out, sizeof(out), "CLUSTER SETSLOT %d MIGRATING %s",
				      slot, dst_id), 0, "%s", out);
	cr_assert_eq(test_cluster_cli(&cl, src, out, sizeof(out), "MIGRATE 127.0.0.1 %d %s 0 5000",
				      cl.port[dst], k1), 0, "%s", out);
	cr_assert(strstr(out, "OK"), "MIGRATE: %s", out);
	cr_expect_eq(get_int(c, k1), 1);
	cr_expect_eq(get_int(c, k2), 2);
	conn_get_stats(c, &cs);
	cr_expect_eq(cs.ask, 1, "one ASK for the migrated key, none for the other (%" PRIu64 ")",
		     cs.ask);
	cr_expect_eq(cs.moved, 0);

	/* finish: the slot belongs to dst; src answers MOVED once */
	cr_assert_eq(test_cluster_cli(&cl, src, out, sizeof(out), "MIGRATE 127.0.0.1 %d %s 0 5000",
				      cl.port[dst], k2), 0, "%s", out);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(test_cluster_cli(&cl, i, out, sizeof(out), "CLUSTER SETSLOT %d NODE %s",
					      slot, dst_id), 0, "%s", out);
	cr_expect_eq(get_int(c, k2), 2);
	cr_expect_eq(get_int(c, k1), 1);
	cr_expect_eq(get_int(c, k2), 2);
	conn_get_stats(c, &cs);
	cr_expect_eq(cs.moved, 1, "one MOVED, then the map knows (%" PRIu64 ")", cs.moved);
	cr_expect_geq(cs.refreshes, 2, "a MOVED refreshes the slot map");
	conn_close(c);
}

Test(cluster, writer_rides_through_a_reshard, .init = start3, .fini = stop, .timeout = 240)
{
	struct store *st = open_store();
	struct store_stats ss;
	struct conn *c;
	struct per_host p;
	uint64_t t0 = time_wall_ns() / NSEC_PER_MSEC - 600000;
	char id0[64], id1[64], cmd[512];
	pid_t pid;
	int seq = 0, status;

	node_id(0, id0, sizeof(id0));
	node_id(1, id1, sizeof(id1));
	snprintf(cmd, sizeof(cmd), "redis-cli --cluster reshard 127.0.0.1:%d --cluster-from %s "
		 "--cluster-to %s --cluster-slots 3000 --cluster-yes >%s/reshard.log 2>&1",
		 cl.port[0], id0, id1, cl.dir);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(system(cmd) == 0 ? 0 : 1);
	/* write while slots move, until the reshard is over (and a little after) */
	for (int after = 0; after < 20;) {
		seq++;
		for (int h = 0; h < 40; h++) {
			char host[32];

			snprintf(host, sizeof(host), "h-%d", h);
			put(st, host, t0 + (uint64_t)seq * 1000, (uint64_t)seq);
		}
		usleep(20000);
		if (after || waitpid(pid, &status, WNOHANG) == pid)
			after++;
		cr_assert_lt(seq, 20000, "the reshard never ended");
	}
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reshard failed (%s/reshard.log)",
		  cl.dir);
	cr_assert_eq(store_flush(st, 60 * NSEC_PER_SEC), 0, "the writer did not drain");
	store_get_stats(st, &ss);
	cr_expect_eq(ss.dropped, 0);
	cr_expect_eq(ss.errors, 0);
	cr_expect_eq(ss.written, (uint64_t)seq * 40,
		     "written %" PRIu64 " of %d", ss.written, seq * 40);
	store_close(st);

	c = open_cluster();
	cr_expect_eq(read_all(c, 40, &p), seq * 40);
	cr_expect(!p.out_of_order);
	for (int h = 0; h < 40; h++)
		cr_expect_eq(p.n[h], (size_t)seq, "host h-%d: %zu of %d", h, p.n[h], seq);
	conn_close(c);
}

Test(cluster, writer_rides_through_a_master_failover, .init = start3x2, .fini = stop,
     .timeout = 240)
{
	struct store *st = open_store();
	struct store_stats ss;
	struct conn *c;
	struct per_host p;
	uint64_t t0 = time_wall_ns() / NSEC_PER_MSEC - 600000;
	int seq = 0, victim, survivor;

	/* the master of h-0's slot dies after a few rounds */
	{
		char key[64];

		key_tier(key, sizeof(key), "h-0", 1);
		victim = test_cluster_master_of(&cl, (int)conn_key_slot(key, strlen(key)));
		cr_assert_geq(victim, 0);
	}
	survivor = (victim + 1) % cl.n;
	/* and h-0's minute rollups, deltas on the one before, across the failover */
	uint64_t hour = (t0 / 3600000 - 1) * 3600000;
	struct snapshot prev = { 0 };
	size_t rollups = 0, bad = 0;
	char err[256];

	for (int round = 0; round < 60; round++) {
		put_rollup(st, "h-0", hour, (uint64_t)round, &prev);
		seq++;
		for (int h = 0; h < 30; h++) {
			char host[32];

			snprintf(host, sizeof(host), "h-%d", h);
			put(st, host, t0 + (uint64_t)seq * 1000, (uint64_t)seq);
		}
		if (round == 5)
			test_cluster_kill(&cl, victim);
		usleep(100000);
	}
	cr_assert_eq(test_cluster_wait_ok(&cl, survivor, 60), 0, "no replica was promoted");
	cr_assert_eq(store_flush(st, 60 * NSEC_PER_SEC), 0, "the writer did not drain");
	store_get_stats(st, &ss);
	cr_expect_eq(ss.dropped, 0, "the spool covered the failover");
	cr_expect_eq(ss.errors, 0);
	store_close(st);

	c = open_cluster();
	cr_expect_eq(read_all(c, 30, &p), seq * 30);
	cr_expect(!p.out_of_order);
	for (int h = 0; h < 30; h++)
		cr_expect_eq(p.n[h], (size_t)seq, "host h-%d: %zu of %d", h, p.n[h], seq);
	/* every rollup decodes: no delta landed without its base on the promoted replica */
	cr_expect_eq(store_read_range(c, "h-0", 60, 0, 0, 0, count_rollup, &rollups, &bad, err,
				      sizeof(err)), 60, "%s", err);
	cr_expect_eq(bad, 0);
	snapshot_free(&prev);
	conn_close(c);
}

Test(cluster, url_and_redirect_parsing)
{
	struct conn_url u;
	struct conn_addr a;
	unsigned slot;
	char err[256], shown[256];

	cr_assert_eq(conn_url_parse("redis-cluster://fl:pw@h1:7000,h2:7001,10.0.0.3:7002", &u, err,
				    sizeof(err)), 0, "%s", err);
	cr_expect(u.cluster);
	cr_expect_eq(u.nseeds, 3);
	cr_expect_str_eq(u.seeds[1].host, "h2");
	cr_expect_eq(u.seeds[2].port, 7002);
	cr_expect_str_eq(u.user, "fl");
	cr_expect_str_eq(u.password, "pw");
	cr_expect_neq(conn_url_parse("redis-cluster://h1:7000/2", &u, err, sizeof(err)), 0,
		      "a cluster has no database 2");
	cr_expect_neq(conn_url_parse("redis-cluster://h1", &u, err, sizeof(err)), 0,
		      "seed without a port");
	cr_expect_neq(conn_url_parse("redis-cluster://h1:1,", &u, err, sizeof(err)), 0);
	cr_expect_neq(conn_url_parse("redis-cluster://", &u, err, sizeof(err)), 0);
	conn_url_redacted("redis-cluster://fl:pw@h1:7000,h2:7001", shown, sizeof(shown));
	cr_expect_str_eq(shown, "redis-cluster://fl:****@h1:7000,h2:7001");

	cr_expect_eq(conn_parse_redirect("MOVED 3999 127.0.0.1:6381", &slot, &a), 1);
	cr_expect_eq(slot, 3999);
	cr_expect_str_eq(a.host, "127.0.0.1");
	cr_expect_eq(a.port, 6381);
	cr_expect_eq(conn_parse_redirect("ASK 12 ::1:7000", &slot, &a), 2);
	cr_expect_str_eq(a.host, "::1");
	cr_expect_eq(conn_parse_redirect("ERR wrong", &slot, &a), 0);
	cr_expect_lt(conn_parse_redirect("MOVED 99999 h:1", &slot, &a), 0);
	cr_expect_lt(conn_parse_redirect("MOVED 1 h", &slot, &a), 0);
	cr_expect_lt(conn_parse_redirect("MOVED x h:1", &slot, &a), 0);
}
