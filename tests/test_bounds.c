/*
 * test_bounds.c - every read of what a host wrote is bounded, tried with
 * real parts: replies refused at their header before anything is
 * allocated (a fake server announcing a 2^31-element array or a 500 MB
 * string), a value over the bound failing its command only, the local
 * Redis refusing giant values, a flood of deploy markers read to its
 * bound, raw stream reads paged.  (A 1 GB stream entry quarantining its
 * host, not the fleet: test_hosts.c.)
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "core/timeutil.h"
#include "store/conn.h"
#include "store/deploy.h"
#include "store/store.h"
#include "tests/helpers.h"

static int fake_fd = -1;
static const char *fake_reply;

/* Accept one client; answer its first command with fake_reply, then hold the line. */
static void *fake_server(void *arg)
{
	int cfd = accept(fake_fd, NULL, NULL);
	char buf[4096];

	(void)arg;
	if (cfd < 0)
		return NULL;
	if (read(cfd, buf, sizeof(buf)) > 0)
		(void)!write(cfd, fake_reply, strlen(fake_reply));
	sleep(3);
	close(cfd);
	return NULL;
}

static int fake_listen(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);

	fake_fd = socket(AF_INET, SOCK_STREAM, 0);
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	cr_assert_eq(bind(fake_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(fake_fd, 4), 0);
	getsockname(fake_fd, (struct sockaddr *)&sa, &sl);
	return ntohs(sa.sin_port);
}

/*
 * A server announcing an array of 2^31-1 elements, or a 500 MB string,
 * costs no allocation: the reply is refused at its header, at once.
 */
Test(bounds, an_announced_giant_is_refused_before_it_is_allocated, .timeout = 30)
{
	static const char *giants[] = { "*2147483647\r\n", "*1\r\n*1\r\n*100000000\r\n",
					"$500000000\r\nxxxx" };

	for (size_t g = 0; g < sizeof(giants) / sizeof(giants[0]); g++) {
		char url[64], err[256];
		pthread_t th;
		struct conn *c;
		redisReply *r;
		uint64_t t0;
		int p = fake_listen();

		fake_reply = giants[g];
		pthread_create(&th, NULL, fake_server, NULL);
		snprintf(url, sizeof(url), "redis://127.0.0.1:%d", p);
		c = conn_open(url, 2 * NSEC_PER_SEC, err, sizeof(err));
		cr_assert_not_null(c, "%s", err);
		conn_set_reply_limit(c, 64 << 20);
		t0 = time_mono_ns();
		r = conn_commandf(c, NULL, "PING");
		cr_assert_null(r, "giant %zu was read", g);
		cr_expect(strstr(conn_errstr(c), "larger than 67108864 bytes"), "giant %zu: %s", g,
			  conn_errstr(c));
		cr_expect_lt(time_mono_ns() - t0, NSEC_PER_SEC, "refused at once, not read");
		conn_close(c);
		pthread_join(th, NULL);
		close(fake_fd);
	}
}

/* Write key's value (or, for XADD, its one field d) of len bytes; the reply. */
static redisReply *put_big(struct conn *c, const char *cmd, const char *key, const char *val,
			   size_t len)
{
	const char *argv[5] = { cmd, key, "*", "d", val };
	size_t lens[5] = { strlen(cmd), strlen(key), 1, 1, len };
	int xadd = !strcmp(cmd, "XADD");

	if (!xadd) {
		argv[2] = val;
		lens[2] = len;
	}
	return conn_command(c, key, xadd ? 5 : 3, argv, lens);
}

/*
 * A real value over the read bound fails its command with a reason and
 * the connection is made again for the next command.
 */
Test(bounds, a_value_over_the_bound_fails_its_command_only, .timeout = 60)
{
	struct test_redis redis;
	size_t big = 5 << 20;
	char *val = calloc(1, big);
	struct conn *c;
	redisReply *r;

	cr_assert_eq(test_redis_start(&redis), 0);
	c = test_redis_connect(&redis);
	r = put_big(c, "SET", "huge", val, big);
	cr_assert(r && r->type == REDIS_REPLY_STATUS);
	freeReplyObject(r);
	conn_set_reply_limit(c, 1 << 20);
	r = conn_commandf(c, "huge", "GET huge");
	cr_expect_null(r, "a 5 MiB value read under a 1 MiB bound");
	cr_expect(strstr(conn_errstr(c), "larger than 1048576 bytes"), "%s", conn_errstr(c));
	r = conn_commandf(c, "huge", "STRLEN huge");
	cr_expect(r && r->type == REDIS_REPLY_INTEGER && r->integer == (long long)big,
		  "the next command works on a new connection: %s", conn_errstr(c));
	if (r)
		freeReplyObject(r);
	conn_close(c);
	test_redis_destroy(&redis);
	free(val);
}

/*
 * The limits faultline-redis.service gives Redis: no value over 16 MB, no
 * command over 64 MB.  A client (a compromised probe) cannot store an
 * entry of a gigabyte, nor of 20 MB; a snapshot-sized one goes in.
 */
Test(bounds, the_local_redis_refuses_giant_values, .timeout = 60)
{
	struct test_redis redis;
	size_t big = 20 << 20;
	char *val = calloc(1, big);
	struct conn *c;
	redisReply *r;

	cr_assert_eq(test_sh("grep -q -- '--proto-max-bulk-len 16mb --client-query-buffer-limit "
			     "64mb' %s/../etc/systemd/faultline-redis.service", test_out_dir()), 0,
		     "the unit's limits are not the ones this test tries");
	cr_assert_eq(test_redis_start_with(&redis, "--proto-max-bulk-len", "16mb"), 0);
	c = test_redis_connect(&redis);
	r = put_big(c, "XADD", "fl:{web-1}:s1", val, big);
	cr_expect(!r || r->type == REDIS_REPLY_ERROR, "a 20 MB value was stored");
	if (r)
		freeReplyObject(r);
	r = put_big(c, "XADD", "fl:{web-1}:s1", val, 4096);
	cr_expect(r && r->type == REDIS_REPLY_STRING, "a snapshot-sized entry was refused: %s",
		  r ? r->str : conn_errstr(c));
	if (r)
		freeReplyObject(r);
	conn_close(c);
	test_redis_destroy(&redis);
	free(val);
}

static int count_marker(const struct deploy *d, void *arg)
{
	(void)d;
	(*(int *)arg)++;
	return 0;
}

/*
 * Any probe may add a deploy marker; a flood of them (100,500) is read to
 * DEPLOY_LIST_MAX and no further, in bounded time.
 */
Test(bounds, a_flood_of_deploy_markers_is_read_to_its_bound, .timeout = 120)
{
	struct test_redis redis;
	struct deploy d = { .service = "api", .version = "1.0", .hosts = "*", .by = "t" };
	char err[256];
	struct conn *c;
	redisReply *r;
	int seen = 0, n;
	uint64_t t0;

	cr_assert_eq(test_redis_start(&redis), 0);
	c = test_redis_connect(&redis);
	d.ts_ms = time_wall_ns() / NSEC_PER_MSEC;
	cr_assert_eq(deploy_mark(c, &d, err, sizeof(err)), 0, "%s", err);
	r = conn_commandf(c, "fl:deploys", "EVAL %s 1 fl:deploys 100500",
			  "local e = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1][2] "
			  "for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], '*', unpack(e)) "
			  "end return 1");
	cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s", r ? r->str : conn_errstr(c));
	freeReplyObject(r);
	t0 = time_mono_ns();
	n = deploy_list(c, 0, NULL, count_marker, &seen, err, sizeof(err));
	cr_expect_eq(n, DEPLOY_LIST_MAX, "%d markers read: %s", n, err);
	cr_expect_eq(seen, DEPLOY_LIST_MAX);
	cr_log_info("%d deploy markers read in %.2f s", n, (time_mono_ns() - t0) / 1e9);
	conn_close(c);
	test_redis_destroy(&redis);
}

static int count_blob(const char *blob, size_t len, void *arg)
{
	(void)blob;
	(void)len;
	(*(int *)arg)++;
	return 0;
}

/*
 * Raw stream reads (profile windows) are paged under the page bound: 300
 * entries come back whole across pages; a 40 MiB entry (over the bound)
 * fails the read with its reason instead of being held.
 */
Test(bounds, blob_reads_are_paged_and_bounded, .timeout = 60)
{
	struct test_redis redis;
	char err[256];
	struct conn *c;
	redisReply *r;
	int seen = 0, n;
	size_t big = 40 << 20;
	char *val = calloc(1, big);

	cr_assert_eq(test_redis_start(&redis), 0);
	c = test_redis_connect(&redis);
	r = conn_commandf(c, "fl:{web-1}:p10", "EVAL %s 1 fl:{web-1}:p10 300",
			  "for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], i .. '-0', "
			  "'d', 'w' .. i) end return 1");
	cr_assert(r && r->type == REDIS_REPLY_INTEGER, "%s", r ? r->str : conn_errstr(c));
	freeReplyObject(r);
	n = store_read_blobs(c, "fl:{web-1}:p10", 0, 0, count_blob, &seen, err, sizeof(err));
	cr_expect_eq(n, 300, "%d: %s", n, err);
	cr_expect_eq(seen, 300);
	r = put_big(c, "XADD", "fl:{web-1}:p10", val, big);
	cr_assert(r && r->type == REDIS_REPLY_STRING);
	freeReplyObject(r);
	seen = 0;
	n = store_read_blobs(c, "fl:{web-1}:p10", 0, 0, count_blob, &seen, err, sizeof(err));
	cr_expect_lt(n, 0, "a 40 MiB entry was read under a 32 MiB page bound");
	cr_expect(strstr(err, "larger than"), "%s", err);
	conn_close(c);
	test_redis_destroy(&redis);
	free(val);
}
