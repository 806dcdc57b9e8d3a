/*
 * test_sim.c - the fleet simulator: scenario files (every mistake named
 * where it is), and what sim_run writes to a real Redis: the hosts of the
 * generated topology with their labels, one snapshot per host per second,
 * faults only on the hosts an event selects, deploy markers, profiles and
 * drive records, and the timeline.
 */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/host_registry.h"
#include "store/deploy.h"
#include "tests/helpers.h"
#include "sim/scenario.h"
#include "sim/sim.h"
#include "model/profile.h"
#include "model/snapshot.h"
#include "store/store.h"
#include "core/timeutil.h"

static int parse_error(const char *yaml, const char *want)
{
	struct scenario sc;
	char err[512];
	int ret = scenario_parse(&sc, "s.yaml", yaml, strlen(yaml), err, sizeof(err));

	if (!ret) {
		scenario_free(&sc);
		cr_log_error("accepted: %s", yaml);
		return 0;
	}
	cr_expect(strstr(err, want), "want \"%s\" in: %s", want, err);
	return 1;
}

Test(scenario, errors_name_the_place)
{
	cr_expect(parse_error("duration: 5m\nevents:\n  - inject: csum_storm\n", "s.yaml:3:"));
	cr_expect(parse_error("duration: 5m\nevents:\n  - inject: csum_storm\n",
			      "inject: expected one of"));
	cr_expect(parse_error("duration: 5m\nevents:\n  - inject: csum_errors\n    at: 6m\n",
			      "s.yaml:4:9: at: 360 s is not inside"));
	cr_expect(parse_error("events:\n  - inject: throttle\n    value: 2\n", "s.yaml:3:"));
	cr_expect(parse_error("events:\n  - inject: csum_errors\n    rat: 5\n", "rat"));
	cr_expect(parse_error("events:\n  - inject: deploy\n    service: api\n    on: {rack: r1}\n",
			      "on: {host: GLOB} only"));
	cr_expect(parse_error("events:\n  - inject: deploy\n    service: api\n    cpu: 0.3\n",
			      "needs function:"));
	cr_expect(parse_error("events:\n  - inject: silence\n    expect: [{rack: r1}]\n",
			      "needs alertname"));
	cr_expect(parse_error("fleet: {hosts: 0}\n", "s.yaml:1:16: hosts"));
	cr_expect(parse_error("fleet: {hosts: 10, racks: 2}\n", "racks"));
	cr_expect(parse_error("scenario: [a]\n", "s.yaml:1:11"));
	/* what the simulator cannot model is refused, not dropped */
	cr_expect(parse_error("events:\n  - inject: deploy\n    service: api\n    cpu: 0.3\n"
			      "    function: gzip_body\n", "s.yaml:5:15: function: gzip_body is not "
			      "a leaf"));
	cr_expect(parse_error("events:\n  - inject: deploy\n    service: api\n    cpu: 0.3\n"
			      "    function: \"main;;gzip\"\n", "non-empty frames"));
	cr_expect(parse_error("events:\n  - inject: deploy\n    service: api\n"
			      "    function: json_parse\n", "function: needs cpu:"));
	cr_expect(parse_error("events:\n  - inject: rollback\n    service: api\n    cpu: 1\n",
			      "cpu"));
	cr_expect(parse_error("fleet: {rack_sizes: [8, 0]}\n", "s.yaml:1:25: rack_sizes"));
	cr_expect(parse_error("fleet: {rack_sizes: [8], hosts_per_rack: 4}\n", "not both"));
	cr_expect(parse_error("fleet: {switches_per_site: 4, switches_per_agg: 3}\n",
			      "does not divide"));
	cr_expect(parse_error("events:\n  - inject: silence\n    expect: [{alertname: A, "
			      "wear: {row: 1}}]\n", "needs the host"));
	cr_expect(parse_error("events:\n  - inject: silence\n    expect: [{alertname: A, "
			      "evidence: {stack: x}}]\n", "stack"));
	cr_expect(parse_error("events:\n  - inject: silence\n    expect: [{alertname: A, "
			      "within: 0s}]\n", "within: at least 1s"));
}

Test(scenario, shipped_scenarios_parse)
{
	const char *names[] = { "sad-switch", "sad-server", "lying-average", "regression",
				"load-rise", "silent-rack", "line-card", "rack-or-switch",
				"agg-and-tor", "two-services", "new-hot-function",
				"relative-thresholds" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct scenario sc;
		char path[128], err[512];

		snprintf(path, sizeof(path), "scenarios/%s.yaml", names[i]);
		cr_assert_eq(scenario_load(&sc, path, err, sizeof(err)), 0, "%s", err);
		cr_expect_gt(sc.nev, 0, "%s has no events", path);
		scenario_free(&sc);
	}
}

Test(sim, host_names_follow_the_topology)
{
	struct sim_shape sh = { 100, 10, 4, 2 };
	char b[64];

	cr_expect_str_eq(sim_host_name(&sh, 0, b, sizeof(b)), "sw000-r0000-h00");
	cr_expect_str_eq(sim_host_name(&sh, 47, b, sizeof(b)), "sw001-r0004-h07");
}

/* Racks of different sizes: the sizes cycle, hosts fill each rack in turn. */
Test(sim, racks_of_different_sizes)
{
	struct sim_shape sh = { .hosts = 100, .hosts_per_rack = 10, .racks_per_switch = 2,
				.switches_per_site = 2, .rack_sizes = { 4, 12 }, .nrack_sizes = 2 };
	char b[64];

	cr_expect_str_eq(sim_host_name(&sh, 3, b, sizeof(b)), "sw000-r0000-h03");
	cr_expect_str_eq(sim_host_name(&sh, 4, b, sizeof(b)), "sw000-r0001-h00");
	cr_expect_str_eq(sim_host_name(&sh, 15, b, sizeof(b)), "sw000-r0001-h11");
	cr_expect_str_eq(sim_host_name(&sh, 16, b, sizeof(b)), "sw001-r0002-h00");
	cr_expect_str_eq(sim_host_name(&sh, 33, b, sizeof(b)), "sw002-r0004-h01");
}

static struct test_redis redis;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
}

static void teardown(void)
{
	test_redis_destroy(&redis);
}

struct last {
	struct snapshot s;
	int n;
};

static int keep_last(struct snapshot *s, void *arg)
{
	struct last *l = arg;

	if (l->n++)
		snapshot_free(&l->s);
	l->s = *s;
	memset(s, 0, sizeof(*s));
	return 0;
}

static uint64_t csum_of(struct conn *c, const char *host, int *count)
{
	struct last l = { 0 };
	char err[256];
	struct series *x;
	uint64_t v;

	cr_assert_geq(store_read_range(c, host, 1, 0, 0, 0, keep_last, &l, NULL, err,
				       sizeof(err)), 0, "%s", err);
	*count = l.n;
	cr_assert_gt(l.n, 0, "nothing stored for %s", host);
	x = snapshot_find(&l.s, "tcp.in_csum_errors{}");
	cr_assert_not_null(x);
	v = x->counter.value;
	cr_expect_not_null(snapshot_find(&l.s, "cpu.host_utilization{}"));
	int drives = 0;

	for (uint32_t i = 0; i < l.s.nseries; i++)
		drives += !strcmp(l.s.series[i].name, "drive.wear_used_pct");
	cr_expect_eq(drives, 1, "%s reports %d drives", host, drives);
	snapshot_free(&l.s);
	return v;
}

static int count_deploy(const struct deploy *d, void *arg)
{
	cr_expect_str_eq(d->hosts, "sw000-*");
	cr_expect_str_eq(d->service, "api");
	(*(int *)arg)++;
	return 0;
}

/* 16 hosts for 30 s: faults land where the scenario says and nowhere else. */
static int count_kinds(const struct deploy *d, void *arg)
{
	int *n = arg;

	n[0]++;
	n[1] += d->rollback;
	return 0;
}

Test(sim, writes_the_fleet_and_its_faults, .init = setup, .fini = teardown, .timeout = 60)
{
	const char *yaml =
		"scenario: t\nduration: 30s\n"
		"fleet: {hosts: 16, hosts_per_rack: 4, racks_per_switch: 2, switches_per_site: 1}\n"
		"events:\n"
		"  - inject: csum_errors\n    on: {rack: r0001}\n    fraction: 0.5\n    rate: 10\n"
		"    at: 10s\n    expect: [{alertname: X, rack: r0001}]\n"
		"  - inject: deploy\n    on: {host: \"sw000-*\"}\n    service: api\n    at: 5s\n"
		"  - inject: silence\n    on: {host: sw001-r0003-h03}\n    at: 20s\n";
	char timeline[400], err[512];
	struct scenario sc;
	struct sim_stats st;
	struct sim_opts o = { .url = redis.url, .seed = 1, .profiles = 1, .timeline = timeline };
	struct conn *c;
	redisReply *r;
	int n, deploys = 0;

	snprintf(timeline, sizeof(timeline), "%s/tl.json", redis.dir);
	cr_assert_eq(scenario_parse(&sc, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s",
		     err);
	o.start_ms = time_wall_ns() / NSEC_PER_MSEC - 30000;
	cr_assert_eq(sim_run(&sc, &o, &st, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(st.hosts, 16);
	cr_expect_eq(st.snapshots, 16 * 30 - 10, "one per host per second, minus the silence");
	cr_expect_eq(st.deploys, 1);
	cr_expect_geq(st.profiles, 16 * 2);

	c = test_redis_connect(&redis);
	cr_assert(c);
	{
		char **names;
		size_t nn;
		char err[256];

		cr_assert_eq(store_host_names(c, &names, &nn, err, sizeof(err)), 0, "%s", err);
		cr_expect_eq(nn, 16);
		store_host_names_free(names, nn);
	}
	r = conn_commandf(c, NULL, "GET fl:{sw000-r0001-h02}:host");
	cr_assert_eq(r->type, REDIS_REPLY_STRING);
	cr_expect(strstr(r->str, "\"rack\":\"r0001\"") && strstr(r->str, "\"switch\":\"sw000\""),
		  "%s", r->str);
	freeReplyObject(r);
	/* fraction 0.5 of rack r0001 (h00..h03): the 2nd and 4th */
	cr_expect_eq(csum_of(c, "sw000-r0001-h00", &n), 0);
	cr_expect_geq(csum_of(c, "sw000-r0001-h01", &n), 190, "10/s for 20 s");
	cr_expect_eq(csum_of(c, "sw000-r0000-h01", &n), 0, "another rack got errors");
	csum_of(c, "sw001-r0003-h03", &n);
	cr_expect_eq(n, 20, "a silenced host went on writing (%d snapshots)", n);
	cr_expect_eq(deploy_list(c, 0, NULL, count_deploy, &deploys, err, sizeof(err)), 1, "%s",
		     err);
	r = conn_commandf(c, NULL, "XLEN fl:{sw000-r0000-h00}:p10");
	cr_expect_geq(r->integer, 2);
	freeReplyObject(r);
	r = conn_commandf(c, NULL, "HLEN fl:{sw000-r0000-h00}:drives:wear:SIM00000000");
	cr_expect_geq(r->integer, 30, "a month of wear history");
	freeReplyObject(r);
	conn_close(c);

	struct json_object *tl = json_object_from_file(timeline), *evs, *ev, *hosts;

	cr_assert_not_null(tl);
	cr_assert(json_object_object_get_ex(tl, "events", &evs));
	ev = json_object_array_get_idx(evs, 0);
	cr_assert(json_object_object_get_ex(ev, "hosts", &hosts));
	cr_expect_eq(json_object_array_length(hosts), 2);
	cr_expect_str_eq(json_object_get_string(json_object_array_get_idx(hosts, 0)),
			 "sw000-r0001-h01");
	json_object_put(tl);
	scenario_free(&sc);
}

/*
 * A new hot function with its callers lands in the deployed hosts'
 * profiles as its own stack; an aggregation layer labels hosts agg; a
 * rollback stops the regression and is marked as one.
 */
/* Whether the profile window in blob (as stored: zstd or msgpack) names fn. */
static int window_names(const redisReply *blob, const char *fn)
{
	struct profile p;
	char err[256];
	int has = 0;

	cr_assert_eq(blob->type, REDIS_REPLY_STRING);
	cr_assert_eq(profile_decode(blob->str, blob->len, &p, err, sizeof(err)), 0, "%s", err);
	for (uint32_t i = 0; i < p.nstrings && !has; i++)
		has = !strcmp(p.strings[i], fn);
	profile_free(&p);
	return has;
}

Test(sim, new_functions_aggregation_and_rollback, .init = setup, .fini = teardown,
     .timeout = 60)
{
	const char *yaml =
		"scenario: t\nduration: 40s\n"
		"fleet: {hosts: 16, hosts_per_rack: 4, racks_per_switch: 1, switches_per_agg: 2,"
		" switches_per_site: 4}\n"
		"events:\n"
		"  - inject: deploy\n    on: {host: \"sw000-*\"}\n    service: api\n    at: 5s\n"
		"    cpu: 0.5\n    function: \"main;serve;handle_request;gzip_body\"\n"
		"  - inject: rollback\n    on: {host: \"sw000-*\"}\n    service: api\n    at: 25s\n";
	char err[512];
	struct scenario sc;
	struct sim_stats st;
	struct sim_opts o = { .url = redis.url, .seed = 1, .profiles = 1 };
	int sd[2] = { 0, 0 };
	struct conn *c;
	redisReply *r;
	int with_gzip = 0;

	cr_assert_eq(scenario_parse(&sc, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s",
		     err);
	o.start_ms = time_wall_ns() / NSEC_PER_MSEC / 10000 * 10000 - 40000;
	cr_assert_eq(sim_run(&sc, &o, &st, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(st.deploys, 2);
	c = test_redis_connect(&redis);
	cr_assert(c);
	r = conn_commandf(c, NULL, "GET fl:{sw003-r0003-h00}:host");
	cr_assert_eq(r->type, REDIS_REPLY_STRING);
	cr_expect(strstr(r->str, "\"agg\":\"agg01\""), "%s", r->str);
	freeReplyObject(r);
	/* windows ending at 10 s and 20 s carry the new stack; after the rollback none */
	r = conn_commandf(c, NULL, "XRANGE fl:{sw000-r0000-h00}:p10 - +");
	cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *blob = r->element[i]->element[1]->element[1];
		int has = window_names(blob, "gzip_body");

		with_gzip += has;
		if (i + 1 == r->elements)
			cr_expect(!has, "the last window (after the rollback) still has gzip_body");
	}
	cr_expect_geq(with_gzip, 2, "gzip_body in %d profile windows", with_gzip);
	freeReplyObject(r);
	r = conn_commandf(c, NULL, "XRANGE fl:{sw001-r0001-h00}:p10 - +");
	cr_assert_eq(r->type, REDIS_REPLY_ARRAY);
	cr_assert_gt(r->elements, 0, "the undeployed host has no profile windows");
	for (size_t i = 0; i < r->elements; i++) {
		redisReply *blob = r->element[i]->element[1]->element[1];

		cr_expect(!window_names(blob, "gzip_body"), "an undeployed host has it");
	}
	freeReplyObject(r);
	cr_expect_eq(deploy_list(c, 0, NULL, count_kinds, sd, err, sizeof(err)), 2, "%s", err);
	cr_expect_eq(sd[1], 1);
	conn_close(c);
	scenario_free(&sc);
}

Test(sim, an_event_that_selects_nothing_is_an_error, .init = setup, .fini = teardown)
{
	const char *yaml = "duration: 5s\nevents:\n  - inject: silence\n    on: {rack: r9999}\n";
	struct sim_opts o = { .url = redis.url, .seed = 1 };
	struct scenario sc;
	struct sim_stats st;
	char err[512];

	cr_assert_eq(scenario_parse(&sc, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s",
		     err);
	o.start_ms = time_wall_ns() / NSEC_PER_MSEC - 5000;
	cr_expect_neq(sim_run(&sc, &o, &st, err, sizeof(err)), 0);
	cr_expect(strstr(err, "selects no host"), "%s", err);
	scenario_free(&sc);
}
