/*
 * test_deploy.c - deploy markers in a real Redis: mark through the CLI and
 * the library, list with filters, host globs, retention trimming, and
 * entries that are not markers.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "deploy.h"
#include "helpers.h"
#include "store.h"
#include "timeutil.h"

static struct test_redis redis;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0, "cannot start redis-server (is it installed?)");
}

static void teardown(void)
{
	test_redis_destroy(&redis);
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
	redisContext *rc = store_connect(redis.url, NSEC_PER_SEC, err, sizeof(err));
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
	redisFree(rc);
}

Test(deploy, bad_markers_and_foreign_entries)
{
	char err[256];
	redisContext *rc = store_connect(redis.url, NSEC_PER_SEC, err, sizeof(err));
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

	/* someone else's entry in the stream is skipped, not fatal */
	r = redisCommand(rc, "XADD fl:deploys * hello world");
	freeReplyObject(r);
	snprintf(d.version, sizeof(d.version), "2");
	cr_assert_eq(deploy_mark(rc, &d, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(deploy_list(rc, 0, NULL, collect, &s, err, sizeof(err)), 1);
	cr_expect_str_eq(s.d[0].version, "2");
	redisFree(rc);
}

Test(deploy, markers_older_than_90_days_are_trimmed)
{
	char err[256];
	redisContext *rc = store_connect(redis.url, NSEC_PER_SEC, err, sizeof(err));
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	redisReply *r;

	cr_assert(rc, "%s", err);
	/* 200 markers 100 days ago (ids at that time), then one now */
	for (int i = 0; i < 200; i++) {
		r = redisCommand(rc, "XADD fl:deploys %llu-%d service old version %d hosts * "
				 "ts_ms %llu", (unsigned long long)(now - DEPLOY_RETENTION_MS -
								     10ULL * 86400000), i, i,
				 (unsigned long long)(now - DEPLOY_RETENTION_MS - 10ULL * 86400000));
		cr_assert(r && r->type == REDIS_REPLY_STRING);
		freeReplyObject(r);
	}
	struct deploy d = { 0 };

	snprintf(d.service, sizeof(d.service), "api");
	snprintf(d.version, sizeof(d.version), "3");
	cr_assert_eq(deploy_mark(rc, &d, err, sizeof(err)), 0, "%s", err);
	r = redisCommand(rc, "XLEN fl:deploys");
	/* MINID ~ trims whole radix-tree nodes: most of the old ones go */
	cr_expect_lt(r->integer, 200, "XLEN %lld", r->integer);
	freeReplyObject(r);
	redisFree(rc);
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
