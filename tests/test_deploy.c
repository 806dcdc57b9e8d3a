/*
 * test_deploy.c - deploy markers in a real Redis: mark through the CLI and
 * the library, list with filters, host globs, retention trimming, and
 * entries that are not markers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "store/keyspace.h"
#include "store/deploy.h"
#include "tests/helpers.h"
#include "probes/probe.h"
#include "probes/symbolize.h"
#include "store/store.h"
#include "core/timeutil.h"

static struct test_redis redis;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0, "cannot start redis-server (is it installed?)");
}

static char scratch[64];	/* a test's temporary directory, removed even if it fails */

static void teardown(void)
{
	test_redis_destroy(&redis);
	if (scratch[0])
		test_sh("rm -rf %s", scratch);
	scratch[0] = '\0';
}

struct seen {
	struct deploy d[16];
	int n;
};

static int collect(const struct deploy *d, void *arg)
{
	struct seen *s = arg;

	if (s->n < 16)
		s->d[s->n++] = *d;
	return 0;
}

TestSuite(deploy, .init = setup, .fini = teardown, .timeout = 30);

Test(deploy, mark_list_filter_and_cover)
{
	char err[256];
	struct conn *rc = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	struct deploy a = { .ts_ms = 1000000 }, b = { .ts_ms = 2000000 };
	struct seen s = { 0 };

	cr_assert(rc, "%s", err);
	snprintf(a.service, sizeof(a.service), "api");
	snprintf(a.version, sizeof(a.version), "1.4.2");
	snprintf(a.hosts, sizeof(a.hosts), "web-[0-3]");
	snprintf(b.service, sizeof(b.service), "db");
	snprintf(b.version, sizeof(b.version), "15.2");
	cr_assert_eq(deploy_mark(rc, &a, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(deploy_mark(rc, &b, err, sizeof(err)), 0, "%s", err);
	cr_expect(a.id[0] && b.id[0]);
	cr_expect_str_eq(b.hosts, "*", "no hosts means every host");

	cr_assert_eq(deploy_list(rc, 0, NULL, collect, &s, err, sizeof(err)), 2, "%s", err);
	cr_expect_str_eq(s.d[0].service, "api");
	cr_expect_str_eq(s.d[0].version, "1.4.2");
	cr_expect_eq(s.d[0].ts_ms, 1000000);
	cr_expect_str_eq(s.d[1].service, "db");

	s.n = 0;
	cr_expect_eq(deploy_list(rc, 0, "db", collect, &s, err, sizeof(err)), 1);
	s.n = 0;
	cr_expect_eq(deploy_list(rc, 1500000, NULL, collect, &s, err, sizeof(err)), 1);
	cr_expect_str_eq(s.d[0].service, "db");

	cr_expect(deploy_covers(&a, "web-2"));
	cr_expect(!deploy_covers(&a, "web-7"));
	cr_expect(deploy_covers(&b, "anything"));
	conn_close(rc);
}

Test(deploy, bad_markers_and_foreign_entries)
{
	char err[256];
	struct conn *rc = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	struct deploy d = { 0 };
	struct seen s = { 0 };
	redisReply *r;

	cr_assert(rc, "%s", err);
	snprintf(d.service, sizeof(d.service), "api");
	cr_expect_eq(deploy_mark(rc, &d, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "version"), "%s", err);
	snprintf(d.version, sizeof(d.version), "1\n2");
	cr_expect_eq(deploy_mark(rc, &d, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "control"), "%s", err);

	/* someone else's entry in the stream is skipped, not fatal; so is a marker
	 * of a kind this version does not know (it would be misjudged) */
	r = conn_commandf(rc, NULL, "XADD fl:deploys * hello world");
	freeReplyObject(r);
	r = conn_commandf(rc, NULL, "XADD fl:deploys * service api version 3 hosts * ts_ms 5 kind canary");
	freeReplyObject(r);
	snprintf(d.version, sizeof(d.version), "2");
	cr_assert_eq(deploy_mark(rc, &d, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(deploy_list(rc, 0, NULL, collect, &s, err, sizeof(err)), 1);
	cr_expect_str_eq(s.d[0].version, "2");
	conn_close(rc);
}

/* A rollback is a marker of its own kind, written and read back as one (CLI too). */
Test(deploy, rollback_marks)
{
	char err[256], cmd[600];
	struct conn *rc = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	struct deploy d = { .ts_ms = 1000000, .rollback = 1 };
	struct seen s = { 0 };

	cr_assert(rc, "%s", err);
	snprintf(d.service, sizeof(d.service), "api");
	snprintf(d.version, sizeof(d.version), "1.9");
	cr_assert_eq(deploy_mark(rc, &d, err, sizeof(err)), 0, "%s", err);
	snprintf(cmd, sizeof(cmd), "%s/faultline deploy rollback --service db --all --redis %s "
		 ">/dev/null", test_out_dir(), redis.url);
	cr_assert_eq(test_sh("%s", cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s/faultline deploy mark --service web --version 2 --all "
		 "--redis %s >/dev/null", test_out_dir(), redis.url);
	cr_assert_eq(test_sh("%s", cmd), 0, "%s", cmd);
	cr_assert_eq(deploy_list(rc, 0, NULL, collect, &s, err, sizeof(err)), 3, "%s", err);
	cr_expect(s.d[0].rollback);
	cr_expect_str_eq(s.d[0].version, "1.9");
	cr_expect(s.d[1].rollback);
	cr_expect_str_eq(s.d[1].service, "db");
	cr_expect_str_eq(s.d[1].version, "rollback", "a rollback without --version");
	cr_expect(!s.d[2].rollback);
	conn_close(rc);
}

Test(deploy, markers_older_than_90_days_are_trimmed)
{
	char err[256];
	struct conn *rc = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	redisReply *r;

	cr_assert(rc, "%s", err);
	/* 200 markers 100 days ago (ids at that time), then one now */
	for (int i = 0; i < 200; i++) {
		r = conn_commandf(rc, NULL, "XADD fl:deploys %llu-%d service old version %d hosts * "
				 "ts_ms %llu", (unsigned long long)(now - KEY_DEPLOYS_RETENTION_MS -
								     10ULL * 86400000), i, i,
				 (unsigned long long)(now - KEY_DEPLOYS_RETENTION_MS - 10ULL * 86400000));
		cr_assert(r && r->type == REDIS_REPLY_STRING);
		freeReplyObject(r);
	}
	struct deploy d = { 0 };

	snprintf(d.service, sizeof(d.service), "api");
	snprintf(d.version, sizeof(d.version), "3");
	cr_assert_eq(deploy_mark(rc, &d, err, sizeof(err)), 0, "%s", err);
	r = conn_commandf(rc, NULL, "XLEN fl:deploys");
	/* MINID ~ trims whole radix-tree nodes: most of the old ones go */
	cr_expect_lt(r->integer, 200, "XLEN %lld", r->integer);
	freeReplyObject(r);
	conn_close(rc);
}

Test(deploy, cli_mark_and_list)
{
	char cmd[1024], out[4096] = "";
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "%s/faultline deploy mark --service api --version 9.9 "
		 "--hosts 'web-*' --by ci --redis %s 2>&1", test_out_dir(), redis.url);
	p = popen(cmd, "r");
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	cr_expect_eq(pclose(p), 0, "%s", out);
	cr_expect(strchr(out, '-'), "prints the marker id: %s", out);

	snprintf(cmd, sizeof(cmd), "%s/faultline deploy list --redis %s 2>&1", test_out_dir(),
		 redis.url);
	p = popen(cmd, "r");
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	cr_expect_eq(pclose(p), 0, "%s", out);
	cr_expect(strstr(out, "api") && strstr(out, "9.9") && strstr(out, "hosts=web-*") &&
		  strstr(out, "by=ci") && strstr(out, "1 deploy marker(s)"), "%s", out);

	snprintf(cmd, sizeof(cmd), "%s/faultline deploy mark --service api --redis %s 2>&1",
		 test_out_dir(), redis.url);
	p = popen(cmd, "r");
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	cr_expect_eq(WEXITSTATUS(pclose(p)), 2, "%s", out);
	cr_expect(strstr(out, "--hosts GLOB or --all"), "%s", out);
}

/* Verdicts stored for a marker come back by id and rule, and `deploy list` shows them. */
static void keep_verdict(const struct deploy_verdict *v, void *arg)
{
	char *out = arg;

	snprintf(out + strlen(out), 1024 - strlen(out), "[%s|%s|%s|%s|%s %s|%g]", v->id, v->rule,
		 v->verdict, v->by, v->service, v->version, v->value);
}

static struct deploy_verdict verdict_of(const char *id, const char *rule, const char *verdict,
					const char *by)
{
	struct deploy_verdict v = { .judged_ms = 1 };

	snprintf(v.id, sizeof(v.id), "%s", id);
	snprintf(v.rule, sizeof(v.rule), "%s", rule);
	snprintf(v.verdict, sizeof(v.verdict), "%s", verdict);
	snprintf(v.by, sizeof(v.by), "%s", by);
	snprintf(v.service, sizeof(v.service), "sidecar");
	snprintf(v.version, sizeof(v.version), "1.2");
	return v;
}

Test(deploy, verdicts_are_stored_and_listed)
{
	struct conn *c = conn_open(redis.url, NSEC_PER_SEC, NULL, 0);
	struct deploy d = { 0 };
	struct deploy_verdict v;
	char err[256], got[1024] = "", cmd[1024], out[4096] = "";
	FILE *p;
	size_t n;

	cr_assert_not_null(c);
	snprintf(d.service, sizeof(d.service), "sidecar");
	snprintf(d.version, sizeof(d.version), "1.2");
	snprintf(d.hosts, sizeof(d.hosts), "web-*");
	cr_assert_eq(deploy_mark(c, &d, err, sizeof(err)), 0, "%s", err);
	v = verdict_of(d.id, "PostDeployCpuRegression", "confounded", "api 4.0");
	cr_assert_eq(deploy_verdict_put(c, &v, err, sizeof(err)), 0, "%s", err);
	v = verdict_of(d.id, "PostDeployHotFunction", "regression", "");
	v.value = 12.5;
	snprintf(v.function, sizeof(v.function), "json_parse");
	cr_assert_eq(deploy_verdict_put(c, &v, err, sizeof(err)), 0, "%s", err);
	/* an unknown verdict or a rule with a space is refused, not written */
	v = verdict_of(d.id, "PostDeployCpuRegression", "maybe", "");
	cr_expect_eq(deploy_verdict_put(c, &v, err, sizeof(err)), -EINVAL);
	v = verdict_of(d.id, "Two words", "regression", "");
	cr_expect_eq(deploy_verdict_put(c, &v, err, sizeof(err)), -EINVAL);
	cr_assert_eq(deploy_verdicts_read(c, keep_verdict, got, err, sizeof(err)), 2, "%s", err);
	cr_expect(strstr(got, "|PostDeployCpuRegression|confounded|api 4.0|sidecar 1.2|0]") &&
		  strstr(got, "|PostDeployHotFunction|regression||sidecar 1.2|12.5]") &&
		  strstr(got, d.id), "%s", got);
	/* fields and values another writer left are skipped, each with a warning */
	freeReplyObject(conn_commandf(c, NULL, "HSET %s %s %s", KEY_DEPLOY_VERDICTS, "nospace",
				      "x"));
	freeReplyObject(conn_commandf(c, NULL, "HSET %s %s %s", KEY_DEPLOY_VERDICTS, "1-0 R",
				      "{\"verdict\":\"regression\",\"value\":\"x\"}"));
	freeReplyObject(conn_commandf(c, NULL, "HSET %s %s %s", KEY_DEPLOY_VERDICTS, "1-0 S",
				      "{\"verdict\":\"perhaps\"}"));
	freeReplyObject(conn_commandf(c, NULL, "HSET %s %s %s", KEY_DEPLOY_VERDICTS, "x-0 T",
				      "{\"verdict\":\"regression\"}"));
	got[0] = 0;
	cr_expect_eq(deploy_verdicts_read(c, keep_verdict, got, err, sizeof(err)), 2, "%s", got);
	conn_close(c);

	snprintf(cmd, sizeof(cmd), "%s/faultline deploy list --redis %s 2>&1", test_out_dir(),
		 redis.url);
	p = popen(cmd, "r");
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	cr_expect_eq(pclose(p), 0, "%s", out);
	cr_expect(strstr(out, "verdict PostDeployCpuRegression: confounded (other deploys on its "
			  "hosts: api 4.0)") &&
		  strstr(out, "verdict PostDeployHotFunction: regression in json_parse"), "%s", out);
	cr_expect(strstr(out, "unknown verdict 'perhaps'") && strstr(out, "\"value\" is not"),
		  "the skipped verdicts are not named: %s", out);
}

/*
 * Verdicts of markers fl:deploys no longer holds (older than its 90 days)
 * are deleted as new ones are written, once there are enough to sweep; the
 * newer stay.
 */
Test(deploy, old_verdicts_are_pruned)
{
	struct conn *c = conn_open(redis.url, NSEC_PER_SEC, NULL, 0);
	uint64_t now = 200ULL * 24 * 3600 * 1000;
	struct deploy_verdict v;
	char err[256], id[32];
	redisReply *r;

	cr_assert_not_null(c);
	for (int i = 0; i < DEPLOY_VERDICTS_PRUNE_AT; i++) {
		/* half of them from before the retention, half after */
		uint64_t ms = i % 2 ? now - 3600000ULL * (uint64_t)(i + 1) :
			      now - KEY_DEPLOYS_RETENTION_MS - 3600000ULL * (uint64_t)(i + 1);

		snprintf(id, sizeof(id), "%" PRIu64 "-0", ms);
		v = verdict_of(id, "PostDeployCpuRegression", "no regression", "");
		/* the sweeps while it fills delete nothing: none is 90 days older than it */
		cr_assert_eq(deploy_verdict_put(c, &v, err, sizeof(err)), 0, "%s", err);
	}
	snprintf(id, sizeof(id), "%" PRIu64 "-0", now);
	v = verdict_of(id, "PostDeployCpuRegression", "regression", "");
	cr_assert_eq(deploy_verdict_put(c, &v, err, sizeof(err)), 0, "%s", err);
	r = conn_commandf(c, NULL, "HLEN %s", KEY_DEPLOY_VERDICTS);
	cr_assert(r && r->type == REDIS_REPLY_INTEGER);
	cr_expect_eq(r->integer, DEPLOY_VERDICTS_PRUNE_AT / 2 + 1,
		     "%lld verdicts left, want the %d within the retention", r->integer,
		     DEPLOY_VERDICTS_PRUNE_AT / 2 + 1);
	freeReplyObject(r);
	conn_close(c);
}

/* ---- the probe marks deploys when a watched executable's build-id changes ---- */

static void build(const char *dir, const char *out, int version)
{
	cr_assert_eq(test_sh("printf 'int main(void){return %d;}\\n' > %s/app.c && "
			     "gcc -O1 -Wl,--build-id -o %s/%s %s/app.c", version, dir, dir, out, dir),
		     0, "cannot build the test executable");
}

static int keep(const struct deploy *d, void *arg)
{
	return collect(d, arg);
}

Test(deploy, probe_marks_a_deploy_when_the_build_id_changes)
{
	char *dir, yaml[1400], err[256], bin[600], id[96];
	struct probe_config cfg;
	struct store_opts o = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				.spool_max_entries = 64 };
	struct store *st;
	struct conn *rc;
	struct seen s = { 0 };
	void *priv;

	snprintf(scratch, sizeof(scratch), "/tmp/fl-dw.XXXXXX");
	cr_assert(mkdtemp(scratch));
	dir = scratch;
	snprintf(bin, sizeof(bin), "%s/api-server", dir);
	build(dir, "api-server", 1);
	cr_assert_eq(probe_config_defaults(&cfg, err, sizeof(err)), 0, "%s", err);
	snprintf(yaml, sizeof(yaml), "deploy_watch: {api: %s, gone: %s/nothing-here}\n", bin, dir);
	cr_assert_eq(probe_config_parse(&cfg, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(cfg.ndeploy_watch, 2);
	st = store_open(&o, err, sizeof(err));
	cr_assert(st, "%s", err);
	cr_assert_eq(deploy_watch_collector.open(&priv, &cfg, err, sizeof(err)), 0, "%s", err);

	/* first sight: remembered, not a deploy; nothing changed: nothing */
	deploy_watch_collector.publish(priv, st, "web-1");
	deploy_watch_collector.publish(priv, st, "web-1");
	/* a deploy replaces the file (new inode, new build-id) */
	build(dir, "api-server.new", 2);
	cr_assert_eq(test_sh("mv %s/api-server.new %s", dir, bin), 0);
	deploy_watch_collector.publish(priv, st, "web-1");
	deploy_watch_collector.publish(priv, st, "web-1");
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);

	rc = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	cr_assert(rc, "%s", err);
	cr_assert_eq(deploy_list(rc, 0, NULL, keep, &s, err, sizeof(err)), 1, "%s", err);
	cr_assert_eq(sym_file_build_id(bin, id, sizeof(id)), 0);
	cr_expect_str_eq(s.d[0].service, "api");
	cr_expect_str_eq(s.d[0].hosts, "web-1");
	cr_expect_str_eq(s.d[0].by, "faultline-probe");
	cr_expect_eq(strncmp(s.d[0].version, id, 16), 0, "%s vs %s", s.d[0].version, id);
	cr_expect_eq(strlen(s.d[0].version), 16);

	deploy_watch_collector.close(priv);
	store_close(st);
	probe_config_free(&cfg);
	conn_close(rc);
}

Test(deploy, deploy_watch_config_errors)
{
	struct probe_config cfg;
	char err[256];
	const char *y = "deploy_watch:\n  api: [a, b]\n";

	cr_assert_eq(probe_config_defaults(&cfg, err, sizeof(err)), 0);
	cr_expect_neq(probe_config_parse(&cfg, "p.yaml", y, strlen(y), err, sizeof(err)), 0);
	cr_expect(strstr(err, "p.yaml:2:") && strstr(err, "deploy_watch.api"), "%s", err);
	probe_config_free(&cfg);
}
