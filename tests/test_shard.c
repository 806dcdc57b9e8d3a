/*
 * test_shard.c - rules workers sharing a fleet (rules/shard/shard.h,
 * store/workers.h, rules/engine/fleet.h) against a real redis-server: partitions
 * by domain, rendezvous ownership without overlap or gap, a dead worker's
 * share taken over when its leases expire, commits fenced by the leases,
 * the rules that cannot run sharded, and partial aggregates that merge to
 * what one engine would compute.
 */
#include <criterion/criterion.h>
#include <hiredis/hiredis.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "rules/engine/engine.h"
#include "rules/lang/eval.h"
#include "rules/engine/fleet.h"
#include "rules/lang/rules.h"
#include "rules/shard/shard.h"
#include "rules/shard/worker.h"
#include "model/alert.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/alert_checkpoint.h"
#include "store/store.h"
#include "store/workers.h"
#include "tests/helpers.h"

static struct test_redis redis;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
}

static void teardown(void)
{
	test_redis_destroy(&redis);
}

/* Register hosts h-0 .. h-(n-1), spread over `sites` sites, racks of 4. */
static void register_hosts(struct conn *c, int n, int sites)
{
	for (int i = 0; i < n; i++) {
		char key[64], host[32];
		redisReply *r;

		snprintf(host, sizeof(host), "h-%d", i);
		key_host_record(key, sizeof(key), host);
		r = conn_commandf(c, key, "SET %s {\"labels\":{\"site\":\"s%d\",\"rack\":"
				  "\"r%d\"}}", key, i % sites, i / 4);
		cr_assert(r && r->type == REDIS_REPLY_STATUS);
		freeReplyObject(r);
	}
}

static struct shard *new_shard(const char *name)
{
	struct shard *s = shard_new(name, 1000, NULL, NULL);

	cr_assert_not_null(s);
	return s;
}

static void tick(struct shard *s, struct conn *c)
{
	char err[256];

	cr_assert_eq(shard_tick(s, c, err, sizeof(err)), 0, "%s", err);
}

Test(shard, workers_split_the_partitions_without_overlap_or_gap, .init = setup,
     .fini = teardown)
{
	struct conn *c = test_redis_connect(&redis);
	struct shard *a = new_shard("a"), *b = new_shard("b"), *d = new_shard("d");
	int na = 0, nb = 0, nd = 0, hosts_a = 0, hosts_b = 0, hosts_d = 0;

	register_hosts(c, 64, 8);
	/* a starts alone and takes everything; b and d join; a hands over */
	tick(a, c);
	cr_expect_eq(shard_held_count(a), WORKERS_NPART);
	tick(b, c);
	tick(d, c);
	cr_expect_eq(shard_held_count(b), 0, "b cannot take what a holds");
	tick(a, c);	/* a sees three workers: releases what is not its own */
	tick(b, c);
	tick(d, c);
	tick(a, c);
	for (int p = 0; p < WORKERS_NPART; p++) {
		int owners = shard_owns(a, p) + shard_owns(b, p) + shard_owns(d, p);

		cr_expect_eq(owners, 1, "partition %d has %d owners", p, owners);
		na += shard_owns(a, p);
		nb += shard_owns(b, p);
		nd += shard_owns(d, p);
	}
	cr_expect(na > 8 && nb > 8 && nd > 8, "rendezvous hashing spreads 65 partitions: %d %d %d",
		  na, nb, nd);
	/* a site never spans two workers */
	for (int i = 0; i < 64; i++) {
		char h[16], peer[16];

		snprintf(h, sizeof(h), "h-%d", i);
		snprintf(peer, sizeof(peer), "h-%d", (i + 8) % 64);	/* same site */
		cr_expect_eq(shard_part_of_host(a, h), shard_part_of_host(a, peer));
		hosts_a += shard_owns_host(a, h);
		hosts_b += shard_owns_host(b, h);
		hosts_d += shard_owns_host(d, h);
	}
	cr_expect_eq(hosts_a + hosts_b + hosts_d, 64, "every host has exactly one worker");
	shard_free(a);
	shard_free(b);
	shard_free(d);
	conn_close(c);
}

Test(shard, a_dead_workers_share_is_taken_over_when_its_leases_expire, .init = setup,
     .fini = teardown, .timeout = 30)
{
	struct conn *c = test_redis_connect(&redis);
	struct shard *a = new_shard("a"), *b = new_shard("b");
	uint64_t t0;
	int b_had;

	register_hosts(c, 16, 4);
	tick(a, c);
	tick(b, c);
	tick(a, c);
	tick(b, c);
	b_had = (int)shard_held_count(b);
	cr_assert(b_had > 0 && b_had < WORKERS_NPART);
	/* a dies (no more ticks, no leave): within the lease time b holds everything */
	t0 = time_mono_ns();
	while (shard_held_count(b) < WORKERS_NPART && time_mono_ns() - t0 < 10 * NSEC_PER_SEC) {
		usleep(200000);
		tick(b, c);
	}
	cr_expect_eq(shard_held_count(b), WORKERS_NPART, "b took over a's partitions");
	cr_expect_leq(time_mono_ns() - t0, 4 * NSEC_PER_SEC, "within the 1 s lease and membership");
	cr_expect_eq(shard_live_workers(b), 1);
	shard_free(a);
	shard_free(b);
	conn_close(c);
}

/* A partition whose checkpoint could not be read yet is found gained again. */
Test(shard, an_untaken_partition_is_gained_again, .init = setup, .fini = teardown)
{
	struct conn *c = test_redis_connect(&redis);
	struct shard *a = new_shard("a");

	tick(a, c);
	cr_assert(shard_owns(a, 5) && shard_gained(a, 5));
	tick(a, c);
	cr_expect(!shard_gained(a, 5), "held since the last round: not gained again");
	shard_untake(a, 5);
	cr_expect(!shard_owns(a, 5), "untaken: its hosts are not evaluated");
	tick(a, c);
	cr_expect(shard_owns(a, 5) && shard_gained(a, 5), "the next round takes it over again");
	shard_free(a);
	conn_close(c);
}

Test(shard, commits_are_fenced_by_the_leases, .init = setup, .fini = teardown)
{
	struct conn *c = test_redis_connect(&redis);
	struct shard *a = new_shard("a");
	char *events[1] = { "{\"x\":1}" };
	const char *fps[1] = { "0123456789abcdef" }, *states[1] = { "{}" };
	struct workers_state st = { 3, 1, fps, states };
	char refused[1], lost[WORKERS_NPART], err[256], key[64];
	redisReply *r;

	tick(a, c);
	cr_assert(shard_owns(a, 3));
	cr_expect_eq(workers_commit(c, "a", shard_epochs(a), events, 1, &st, 1, refused, lost, err,
				    sizeof(err)), 1, "%s", err);
	r = conn_commandf(c, KEY_ALERTS, "XLEN %s", KEY_ALERTS);
	cr_expect_eq(r->integer, 1);
	freeReplyObject(r);
	/* another worker took partition 3 (a's lease expired meanwhile) */
	key_lease(key, sizeof(key), 3);
	freeReplyObject(conn_commandf(c, KEY_ALERTS, "SET %s other", key));
	cr_expect_eq(workers_commit(c, "a", shard_epochs(a), events, 1, &st, 1, refused, lost, err,
				    sizeof(err)), -ESTALE);
	cr_expect(lost[3]);
	cr_expect(!lost[4]);
	r = conn_commandf(c, KEY_ALERTS, "XLEN %s", KEY_ALERTS);
	cr_expect_eq(r->integer, 1, "nothing written by a worker that lost a lease");
	freeReplyObject(r);
	shard_free(a);
	conn_close(c);
}

/*
 * A worker paused past its lease (a SIGSTOP, a long GC-like stall): another
 * takes the partition and hands it back; when the first wakes, its lease
 * is its own again but under a new epoch, so it counts the partition lost
 * and gained (it re-reads the checkpoint) and a commit under its old
 * epoch is refused.  A lease that merely lapsed, with nobody taking it,
 * comes back under the same epoch.
 */
Test(shard, a_lease_taken_back_after_a_pause_has_a_new_epoch, .init = setup, .fini = teardown,
     .timeout = 30)
{
	struct conn *c = test_redis_connect(&redis);
	struct shard *a = new_shard("a"), *b;
	char *events[1] = { "{\"x\":1}" };
	char refused[1], lost[WORKERS_NPART], err[256];
	uint64_t old[WORKERS_NPART];

	tick(a, c);
	cr_assert(shard_owns(a, 7));
	memcpy(old, shard_epochs(a), sizeof(old));
	cr_assert_gt(old[7], 0);
	/* lapsed, nobody took it: the same epoch, nothing lost */
	usleep(1300 * 1000);
	tick(a, c);
	cr_expect_eq(shard_epochs(a)[7], old[7]);
	cr_expect(!shard_lost(a, 7) && !shard_gained(a, 7));
	/* a pauses past its lease; b takes everything, then leaves */
	usleep(1300 * 1000);
	b = new_shard("b");
	tick(b, c);
	cr_assert(shard_owns(b, 7));
	cr_assert_neq(shard_epochs(b)[7], old[7]);
	cr_assert_eq(workers_leave(c, "b", err, sizeof(err)), 0, "%s", err);
	/* a's commit under its old epoch is refused, whoever holds the lease */
	cr_expect_eq(workers_commit(c, "a", old, events, 1, NULL, 0, refused, lost, err,
				    sizeof(err)), -ESTALE);
	cr_expect(lost[7]);
	/* a wakes: the lease is free, a takes it under a new epoch: lost and gained */
	usleep(1100 * 1000);
	tick(a, c);
	cr_expect(shard_owns(a, 7));
	cr_expect(shard_epochs(a)[7] > shard_epochs(b)[7], "epochs only grow");
	cr_expect(shard_lost(a, 7) && shard_gained(a, 7), "a did not notice it lost partition 7");
	cr_expect_eq(workers_commit(c, "a", shard_epochs(a), events, 1, NULL, 0, refused, lost,
				    err, sizeof(err)), 1, "%s", err);
	shard_free(a);
	shard_free(b);
	conn_close(c);
}

Test(shard, rules_that_compare_across_workers_are_refused)
{
	static const struct {
		const char *expr;
		int ok;
	} cases[] = {
		{ "sum(rate(faultline_tcp_in_csum_errors_total[1m])) > 10", 0 },
		{ "avg without (host) (faultline_host_cpu_utilization_ratio) > 0.9", 0 },
		{ "absent(faultline_host_cpu_utilization_ratio)", 0 },
		{ "sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m])) > 10", 1 },
		{ "sum by (host) (rate(faultline_tcp_in_csum_errors_total[1m])) > 10", 1 },
		{ "max without (cpu) (faultline_cpu_utilization_ratio) > 0.9", 1 },
		{ "peer_ratio(avg_over_time(faultline_host_cpu_utilization_ratio[1m]), \"model\") > 2", 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char yaml[1024], err[512];
		struct ruleset rs = { 0 };
		int ret;

		snprintf(yaml, sizeof(yaml), "groups:\n  - name: g\n    rules:\n      - alert: A\n"
			 "        expr: '%s'\n", cases[i].expr);
		cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0,
			     "%s: %s", cases[i].expr, err);
		ret = shard_check_rules(&rs, NULL, err, sizeof(err));
		if (cases[i].ok)
			cr_expect_eq(ret, 0, "%s: %s", cases[i].expr, err);
		else
			cr_expect(ret == -EINVAL && strstr(err, "rule A") && strstr(err, "workers"),
				  "%s: %d %s", cases[i].expr, ret, err);
		rules_free(&rs);
	}
}

Test(shard, the_shipped_rules_run_sharded)
{
	struct ruleset rs = { 0 };
	char err[512];

	cr_assert_eq(rules_load(&rs, "etc/rules/faultline.yaml", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(shard_check_rules(&rs, NULL, err, sizeof(err)), 0, "%s", err);
	rules_free(&rs);
}

Test(fleet, baseline_parts_merge_to_the_whole)
{
	struct fleet_bpart a, b, whole;
	char *blob;
	size_t len;

	cr_assert_eq(fleet_bpart_init(&a, 1), 0);
	cr_assert_eq(fleet_bpart_init(&b, 1), 0);
	cr_assert_eq(fleet_bpart_init(&whole, 1), 0);
	for (int k = 0; k < FLEET_SLOTS; k++) {
		a.dsum[k] = k;
		a.dn[k] = 1;
		b.psum[k] = 2.0 * k;
		b.pn[k] = 2;
		hist_record(&a.dh[k], 1000 + (uint64_t)k);
		hist_record(&b.ph[k], 5000);
	}
	hist_record(&a.wd[1], 7000);
	fleet_bpart_add_host(&a, "h-1");
	a.total = 3;
	b.total = 4;
	cr_assert_eq(fleet_bpart_encode(&a, &blob, &len), 0);
	cr_assert_eq(fleet_bpart_merge_blob(&whole, blob, len), 0);
	free(blob);
	cr_assert_eq(fleet_bpart_encode(&b, &blob, &len), 0);
	cr_assert_eq(fleet_bpart_merge_blob(&whole, blob, len), 0);
	cr_expect_neq(fleet_bpart_merge_blob(&whole, blob, len - 3), 0, "a cut blob is refused");
	free(blob);
	cr_expect_eq(whole.total, 7, "a refused blob adds nothing");
	for (int k = 0; k < FLEET_SLOTS; k++) {
		cr_expect_eq(whole.dsum[k], k);
		cr_expect_eq(whole.dn[k], 1);
		cr_expect_eq(whole.psum[k], 2.0 * k, "slot %d: %f", k, whole.psum[k]);
		cr_expect_eq(whole.pn[k], 2);
		cr_expect_eq(whole.dh[k].count, 1);
	}
	cr_expect_eq(whole.wd[1].count, 1);
	cr_expect_eq(whole.nhosts, 1);
	cr_expect_str_eq(whole.hosts[0], "h-1");
	cr_expect_eq(fleet_bpart_merge_blob(&whole, "FLBP1", 5), -EINVAL);
	fleet_bpart_free(&a);
	fleet_bpart_free(&b);
	fleet_bpart_free(&whole);
}

/* Two workers' peer groups merge to the fleet's median, within a bucket. */
static struct conn *peer_conn;
static const char *peer_me;

static int t_publish(void *arg, const char *topic, const void *blob, size_t len)
{
	char err[256];

	(void)arg;
	return workers_partial_put(peer_conn, topic, peer_me, blob, len, 60000, err, sizeof(err));
}

struct t_gather {
	void (*cb)(const void *, size_t, void *);
	void *arg;
};

static void t_gather_one(const char *worker, const char *blob, size_t len, void *arg)
{
	struct t_gather *g = arg;

	if (strcmp(worker, peer_me))
		g->cb(blob, len, g->arg);
}

static int t_gather(void *arg, const char *topic, void (*cb)(const void *, size_t, void *),
		    void *cbarg)
{
	struct t_gather g = { cb, cbarg };
	char err[256];

	(void)arg;
	return workers_partials_read(peer_conn, topic, t_gather_one, &g, err, sizeof(err)) < 0 ?
	       -EIO : 1;
}

Test(fleet, peer_medians_merge_across_workers, .init = setup, .fini = teardown)
{
	struct engine_fleet f = { .publish = t_publish, .gather = t_gather };
	char *groups[1] = { "ssd-x" };
	struct histogram ha[1] = { 0 }, hb[1] = { 0 };
	double m;

	peer_conn = test_redis_connect(&redis);
	/* worker a: 1, 2, 3 ms; worker b: 4, 5, 6, 100 ms -> fleet median 4 ms */
	for (int v = 1; v <= 3; v++)
		eval_peer_record(&ha[0], v * 1e-3);
	for (int v = 4; v <= 6; v++)
		eval_peer_record(&hb[0], v * 1e-3);
	eval_peer_record(&hb[0], 0.1);
	peer_me = "b";
	cr_assert_eq(fleet_peer_merge(&f, "peer/t/model/0", groups, hb, 1), 0);
	peer_me = "a";
	cr_assert_eq(fleet_peer_merge(&f, "peer/t/model/0", groups, ha, 1), 0);
	m = eval_peer_median(&ha[0]);
	cr_expect_eq(ha[0].count, 7);
	cr_expect(fabs(m - 4e-3) <= 4e-3 / 16, "median %g, want 4 ms within a bucket", m);
	conn_close(peer_conn);
}

/* ---- switching between one engine and workers ---------------------------------- */

static int part_of(const char *json, void *arg)
{
	return shard_part_of_alert(arg, json);
}

struct collected {
	char fp[8][64], json[8][512];
	int n;
};

static void collect(const char *fp, const char *json, void *arg)
{
	struct collected *c = arg;

	if (c->n < 8) {
		snprintf(c->fp[c->n], sizeof(c->fp[0]), "%s", fp);
		snprintf(c->json[c->n], sizeof(c->json[0]), "%s", json);
		c->n++;
	}
}

static long exists(struct conn *c, const char *key)
{
	redisReply *r = conn_commandf(c, KEY_ALERTS, "EXISTS %s", key);
	long n;

	cr_assert(r && r->type == REDIS_REPLY_INTEGER);
	n = (long)r->integer;
	freeReplyObject(r);
	return n;
}

/*
 * One engine's checkpoint moves into the partitions' when workers start,
 * each record into its host's partition (a deploy verdict's, and one whose
 * host left the registry, into the fleet's), a record a partition already
 * has stays as it is, nothing is left behind; and back into one engine's.
 */
Test(shard, a_single_engines_checkpoint_moves_into_the_partitions_and_back, .init = setup,
     .fini = teardown)
{
	struct conn *c = test_redis_connect(&redis);
	struct shard *a = new_shard("a");
	const char *fps[3] = { "00000000000000a1", "00000000000000b2", "00000000000000c3" };
	const char *states[3] = { "{\"labels\":{\"host\":\"h-1\"},\"v\":\"single\"}",
				  "{\"deploy_service\":\"api\",\"v\":\"single\"}",
				  "{\"labels\":{\"host\":\"gone\"},\"v\":\"single\"}" };
	struct collected got = { 0 }, fleet = { 0 }, back = { 0 };
	char refused[1], err[256], key[64];
	int p1;
	redisReply *r;

	register_hosts(c, 8, 2);
	tick(a, c);
	p1 = shard_part_of_host(a, "h-1");
	cr_assert(p1 >= 0 && p1 < WORKERS_PARTS);
	cr_assert_eq(store_alerts_commit(c, NULL, 0, fps, states, 3, refused, err, sizeof(err)),
		     0, "%s", err);
	/* a worker already wrote a newer state of the first alert */
	key_part_state(key, sizeof(key), p1);
	r = conn_commandf(c, KEY_ALERTS, "HSET %s %s {\"v\":\"worker\"}", key, fps[0]);
	cr_assert(r && r->type == REDIS_REPLY_INTEGER);
	freeReplyObject(r);

	cr_assert_eq(workers_state_from_single(c, part_of, a, err, sizeof(err)), 3, "%s", err);
	cr_expect_eq(exists(c, KEY_ALERTS_STATE), 0, "one engine's checkpoint left behind");
	cr_assert_geq(workers_state_read(c, p1, collect, &got, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(got.n, 1);
	cr_expect_str_eq(got.json[0], "{\"v\":\"worker\"}", "the worker's newer state replaced");
	cr_assert_geq(workers_state_read(c, WORKERS_FLEET, collect, &fleet, err, sizeof(err)), 0);
	cr_expect_eq(fleet.n, 2, "the verdict and the alert of a host gone: the fleet's");
	cr_expect_eq(workers_state_from_single(c, part_of, a, err, sizeof(err)), 0,
		     "a second worker finds nothing to move");

	cr_assert_eq(workers_state_to_single(c, err, sizeof(err)), 3, "%s", err);
	cr_expect_eq(exists(c, key), 0);
	cr_assert_geq(store_alerts_state_read(c, collect, &back, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(back.n, 3);
	shard_free(a);
	conn_close(c);
}

static void export_one(const char *fp, const char *json, void *arg)
{
	collect(fp, json, arg);
}

static void feed_cpu(struct engine *e, const char *host, uint64_t t, double v)
{
	struct snapshot s;

	snapshot_init(&s, host, t, 1000, t / 1000, 1);
	snapshot_set_label(&s, "site", "s1");
	snapshot_add_gauge(&s, "cpu.host_utilization", v, NULL);
	cr_assert_eq(engine_add_snapshot(e, &s), 0);
	snapshot_free(&s);
}

/*
 * An alert firing under one engine whose fault ends after the switch to
 * --shard workers: the worker that owns its host takes it over from the
 * moved checkpoint and resolves it with its startsAt (the workers read only
 * their partitions' checkpoints, so it used never to resolve).
 */
Test(shard, an_alert_firing_before_the_switch_to_workers_resolves_under_them, .init = setup,
     .fini = teardown)
{
	const char *yaml = "groups:\n  - name: g\n    interval: 1s\n    rules:\n"
			   "      - alert: Hot\n"
			   "        expr: faultline_host_cpu_utilization_ratio > 0.5\n";
	struct conn *c = test_redis_connect(&redis);
	struct ruleset rs1 = { 0 }, rs2 = { 0 };
	struct engine_opts o = { 0 };
	struct test_events fired = { 0 }, ev = { 0 };
	struct collected st = { 0 };
	const char *fps[8], *states[8];
	struct engine *e1, *e2;
	struct worker *w;
	uint64_t t0 = 1790000000000ULL, t1 = t0 + 60000;
	char err[256], refused[1], starts[80], want[120];

	register_hosts(c, 8, 2);
	cr_assert_eq(rules_parse(&rs1, "r.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rules_parse(&rs2, "r.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e1, &rs1, NULL), 0);
	feed_cpu(e1, "h-1", t0, 0.9);
	engine_eval(e1, t0, test_events_collect, &fired);
	cr_assert_eq(fired.n, 1, "%d events", fired.n);
	cr_assert_eq(engine_state_export(e1, export_one, &st), 1);
	for (int i = 0; i < st.n; i++) {
		fps[i] = st.fp[i];
		states[i] = st.json[i];
	}
	cr_assert_eq(store_alerts_commit(c, NULL, 0, fps, states, st.n, refused, err, sizeof(err)),
		     0, "%s", err);
	engine_free(e1);

	w = worker_new("w1", 1000000000ULL, &rs2, &o, err, sizeof(err));
	cr_assert_not_null(w, "%s", err);
	cr_assert_eq(engine_init(&e2, &rs2, &o), 0);
	cr_assert_eq(worker_round(w, e2, c, t1, test_events_collect, &ev, err, sizeof(err)), 0,
		     "%s", err);
	feed_cpu(e2, "h-1", t1, 0.1);
	engine_eval(e2, t1, test_events_collect, &ev);
	cr_assert_eq(ev.n, 1, "%d events", ev.n);
	cr_expect(strstr(ev.json[0], "\"status\":\"resolved\""), "%s", ev.json[0]);
	snprintf(want, sizeof(want), "\"startsAt\":\"%s\"",
		 alert_format_time(t0, starts, sizeof(starts)));
	cr_expect(strstr(ev.json[0], want), "not its startsAt (%s): %s", want, ev.json[0]);
	engine_free(e2);
	worker_free(w);
	test_events_free(&fired);
	test_events_free(&ev);
	conn_close(c);
}
