/*
 * test_security.c - a fleet deployment no one can get into, tried with
 * real parts: redis-server over TLS only (certificates this test makes,
 * a wrong CA refused), a TLS Redis Cluster, Redis passwords from files,
 * `faultline acl` users in a real Redis with the real binaries, the spool
 * file against a planted symlink.  (Bounded reads: test_bounds.c.)
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "alerter/alerter.h"
#include "core/secret.h"
#include "core/timeutil.h"
#include "model/snapshot.h"
#include "store/conn.h"
#include "store/host_registry.h"
#include "store/spool_file.h"
#include "store/store.h"
#include "tests/cluster.h"
#include "tests/helpers.h"
#include "tests/receiver.h"

static char dir[256];
static pid_t server = -1;
static int port;

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/fl-test-security.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void cleanup(void)
{
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
		server = -1;
	}
	if (dir[0])
		test_remove_dir(dir);
	dir[0] = '\0';
}

/* redis-cli PING over TLS (with the client certificate) until it answers. */
static int wait_tls_ping(void)
{
	for (int i = 0; i < 300; i++) {
		if (test_sh("redis-cli --tls --cacert %s/ca.crt --cert %s/client.crt "
			    "--key %s/client.key -h 127.0.0.1 -p %d PING 2>/dev/null | "
			    "grep -q PONG", dir, dir, dir, port) == 0)
			return 0;
		usleep(20000);
	}
	return -1;
}

/* A redis-server listening on TLS only, asking clients for a certificate. */
static void start_tls_redis(const char *extra)
{
	port = test_free_port();
	cr_assert_eq(test_tls_certs(dir), 0, "openssl could not make the certificates "
		     "(see %s/openssl.log)", dir);
	server = fork();
	if (server == 0) {
		char cmd[2048];

		snprintf(cmd, sizeof(cmd), "exec redis-server --port 0 --tls-port %d "
			 "--bind 127.0.0.1 --tls-cert-file %s/server.crt --tls-key-file "
			 "%s/server.key --tls-ca-cert-file %s/ca.crt --save '' --appendonly no "
			 "--dir %s %s >%s/redis.log 2>&1", port, dir, dir, dir, dir, extra, dir);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(wait_tls_ping(), 0, "redis-server over TLS did not start (%s/redis.log)",
		     dir);
}

static void tls_url(char *url, size_t len, const char *ca, const char *more)
{
	snprintf(url, len, "rediss://127.0.0.1:%d?tls_ca=%s/%s&tls_cert=%s/client.crt"
		 "&tls_key=%s/client.key%s", port, dir, ca, dir, dir, more);
}

Test(security_url, tls_options_ipv6_and_percent_decoding)
{
	struct conn_url u;
	char err[512], out[512];

	cr_assert_eq(conn_url_parse("rediss://fl-probe:p%40ss%3Aw0rd@[::1]:6380/2?tls_ca=/etc/ca.crt"
				    "&tls_server_name=redis.example", &u, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect(u.tls);
	cr_expect_str_eq(u.host, "::1");
	cr_expect_eq(u.port, 6380);
	cr_expect_eq(u.db, 2);
	cr_expect_str_eq(u.user, "fl-probe");
	cr_expect_str_eq(u.password, "p@ss:w0rd");
	cr_expect_str_eq(u.tls_ca, "/etc/ca.crt");
	cr_expect_str_eq(u.tls_server_name, "redis.example");
	/* a bare '@' in the password: the last '@' ends the user info */
	cr_assert_eq(conn_url_parse("redis://:a@b@db:7000", &u, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(u.password, "a@b");
	cr_expect_str_eq(u.host, "db");
	cr_assert_eq(conn_url_parse("rediss-cluster://[::1]:7000,10.0.0.2:7001?tls_ca=/c", &u, err,
				    sizeof(err)), 0, "%s", err);
	cr_expect(u.cluster && u.tls);
	cr_expect_eq(u.nseeds, 2);
	cr_expect_str_eq(u.seeds[0].host, "::1");
	cr_expect_eq(u.seeds[0].port, 7000);
	cr_assert_eq(conn_url_parse("redis://db?password_file=/etc/faultline/redis.pass&user=rules",
				    &u, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(u.password_file, "/etc/faultline/redis.pass");
	cr_expect_str_eq(u.user, "rules");
	/* nothing ignored: an unknown option, TLS options without TLS, both secrets */
	cr_assert_neq(conn_url_parse("redis://db?tls_verify=no", &u, err, sizeof(err)), 0);
	cr_expect(strstr(err, "unknown option 'tls_verify'"), "%s", err);
	cr_assert_neq(conn_url_parse("redis://db?tls_ca=/c", &u, err, sizeof(err)), 0);
	cr_expect(strstr(err, "only with rediss"), "%s", err);
	cr_assert_neq(conn_url_parse("redis://:pw@db?password_file=/p", &u, err, sizeof(err)), 0);
	cr_expect(strstr(err, "give one"), "%s", err);
	cr_assert_neq(conn_url_parse("redis://[::1:6379", &u, err, sizeof(err)), 0);
	cr_assert_neq(conn_url_parse("redis://:%zz@db", &u, err, sizeof(err)), 0);
	cr_assert_neq(conn_url_parse("redis://:%00@db", &u, err, sizeof(err)), 0, "a NUL byte");
	/* redaction covers every shape */
	conn_url_redacted("rediss-cluster://u:hunter2@h:1,h:2?tls_ca=/c", out, sizeof(out));
	cr_expect_str_eq(out, "rediss-cluster://u:****@h:1,h:2?tls_ca=/c");
	conn_url_redacted("redis://:a@hunter2@db", out, sizeof(out));
	cr_expect_null(strstr(out, "hunter2"), "%s", out);
	conn_url_redacted("redis://db?user=u&password=hunter2", out, sizeof(out));
	cr_expect_str_eq(out, "redis://db?user=u&password=****");
}

/*
 * A TLS-only Redis: faultline's conn speaks to it with a verified server
 * certificate and its client certificate - single commands, a pipeline of
 * a thousand, a 3 MiB value both ways - and refuses a server its CA did
 * not sign, a server whose certificate names someone else, and a client
 * without a certificate is refused by the server.
 */
Test(tls, single_server_verified_both_ways, .init = make_dir, .fini = cleanup, .timeout = 60)
{
	char url[1024], err[512];
	struct conn *c;
	redisReply *r;
	size_t big = 3 << 20;
	char *val = malloc(big);

	cr_assert_not_null(val);
	for (size_t i = 0; i < big; i++)
		val[i] = (char)('a' + i % 26);
	start_tls_redis("");
	tls_url(url, sizeof(url), "ca.crt", "");
	c = conn_open(url, 5 * NSEC_PER_SEC, err, sizeof(err));
	cr_assert_not_null(c, "%s", err);
	{
		const char *argv[3] = { "SET", "big", val };
		size_t lens[3] = { 3, 3, big };

		r = conn_command(c, "big", 3, argv, lens);
		cr_assert(r && r->type == REDIS_REPLY_STATUS, "%s", r ? r->str : conn_errstr(c));
		freeReplyObject(r);
	}
	r = conn_commandf(c, "big", "GET big");
	cr_assert(r && r->type == REDIS_REPLY_STRING && r->len == big && !memcmp(r->str, val, big),
		  "the 3 MiB value did not come back whole over TLS");
	freeReplyObject(r);
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(conn_appendf(c, NULL, "INCR n"), 0, "%s", conn_errstr(c));
	for (int i = 0; i < 1000; i++) {
		r = conn_reply(c);
		cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == i + 1,
			  "pipeline reply %d: %s", i, r ? "wrong" : conn_errstr(c));
		freeReplyObject(r);
	}
	conn_close(c);

	/* a CA that did not sign the server's certificate */
	tls_url(url, sizeof(url), "other-ca.crt", "");
	c = conn_open(url, 5 * NSEC_PER_SEC, err, sizeof(err));
	cr_assert_null(c, "a server signed by another CA was trusted");
	cr_expect(strstr(err, "not trusted"), "%s", err);
	/* the right CA, but the certificate does not name the server asked for */
	tls_url(url, sizeof(url), "ca.crt", "&tls_server_name=redis.elsewhere.example");
	c = conn_open(url, 5 * NSEC_PER_SEC, err, sizeof(err));
	cr_assert_null(c, "a certificate for another name was accepted");
	cr_expect(strstr(err, "not trusted") && strstr(err, "redis.elsewhere.example"), "%s", err);
	/*
	 * no client certificate: the server (tls-auth-clients yes) refuses; in
	 * TLS 1.3 the client learns it at its first command
	 */
	snprintf(url, sizeof(url), "rediss://127.0.0.1:%d?tls_ca=%s/ca.crt", port, dir);
	c = conn_open(url, 5 * NSEC_PER_SEC, err, sizeof(err));
	if (c) {
		r = conn_commandf(c, NULL, "PING");
		cr_assert_null(r, "a client without a certificate got in");
		/* the alert says "certificate required", or the reset overtakes it */
		cr_expect(conn_errstr(c)[0], "refused without a reason");
		conn_close(c);
	}
	/* plain text to the TLS port: an error within the timeout, not a hang */
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
	{
		uint64_t t0 = time_mono_ns();

		c = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
		if (c) {
			r = conn_commandf(c, NULL, "PING");
			cr_assert_null(r, "plain text was answered on the TLS port");
			conn_close(c);
		}
		cr_expect_lt(time_mono_ns() - t0, 5 * NSEC_PER_SEC);
	}
	free(val);
}

/*
 * A TLS Redis Cluster (client, bus and replication over TLS): keys on
 * every master are written and read back through the slot map the TLS
 * seeds gave.
 */
Test(tls, cluster_over_tls, .init = make_dir, .fini = cleanup, .timeout = 120)
{
	struct test_cluster cl;
	struct conn_stats st;
	char err[512];
	struct conn *c;

	cr_assert_eq(test_tls_certs(dir), 0);
	cr_assert_eq(test_cluster_start_tls(&cl, 3, 0, dir), 0, "the TLS cluster did not start");
	c = conn_open(cl.url, 5 * NSEC_PER_SEC, err, sizeof(err));
	if (!c)
		test_cluster_destroy(&cl);
	cr_assert_not_null(c, "%s", err);
	for (int i = 0; i < 200; i++) {
		char key[32];

		snprintf(key, sizeof(key), "k%d", i);
		cr_assert_eq(conn_appendf(c, key, "SET %s %d", key, i), 0, "%s", conn_errstr(c));
	}
	for (int i = 0; i < 200; i++) {
		redisReply *r = conn_reply(c);

		cr_expect(r && r->type == REDIS_REPLY_STATUS, "%s", conn_errstr(c));
		if (r)
			freeReplyObject(r);
	}
	for (int i = 0; i < 200; i += 37) {
		char key[32];
		redisReply *r;

		snprintf(key, sizeof(key), "k%d", i);
		r = conn_commandf(c, key, "GET %s", key);
		cr_expect(r && r->type == REDIS_REPLY_STRING && atoi(r->str) == i, "%s",
			  r ? "wrong value" : conn_errstr(c));
		if (r)
			freeReplyObject(r);
	}
	conn_get_stats(c, &st);
	cr_expect_eq(st.nodes, 3, "three masters over TLS");
	conn_close(c);
	test_cluster_destroy(&cl);
}

/* ---- secrets from files ---------------------------------------------------- */

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
}

/*
 * A Redis password from a 0600 file works; the same file readable by
 * others, or longer than a password may be, is refused with the reason,
 * never used cut or exposed.
 */
Test(secrets, redis_password_from_a_file_taken_whole_or_refused, .init = make_dir,
     .fini = cleanup, .timeout = 60)
{
	char path[300], url[600], err[512], buf[256], longer[400];
	struct conn *c;
	redisReply *r;

	port = test_free_port();
	server = fork();
	if (server == 0) {
		char p[16];

		snprintf(p, sizeof(p), "%d", port);
		execlp("redis-server", "redis-server", "--port", p, "--bind", "127.0.0.1",
		       "--requirepass", "s3cret-from-a-file", "--save", "", "--appendonly", "no",
		       (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/redis.pass", dir);
	write_file(path, "s3cret-from-a-file\n", 0600);
	snprintf(url, sizeof(url), "redis://127.0.0.1:%d?password_file=%s", port, path);
	c = NULL;
	for (int i = 0; i < 100 && !c; i++) {
		usleep(50000);
		c = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
	}
	cr_assert_not_null(c, "%s", err);
	r = conn_commandf(c, NULL, "PING");
	cr_expect(r && r->type == REDIS_REPLY_STATUS);
	if (r)
		freeReplyObject(r);
	conn_close(c);

	chmod(path, 0644);
	c = conn_open(url, NSEC_PER_SEC, err, sizeof(err));
	cr_assert_null(c, "a password file others can read was used");
	cr_expect(strstr(err, "chmod 600") && strstr(err, path), "%s", err);
	cr_expect_null(strstr(err, "s3cret"), "the password is not shown: %s", err);

	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	write_file(path, longer, 0600);
	cr_expect_neq(secret_file_read(path, buf, sizeof(buf), err, sizeof(err)), 0);
	cr_expect(strstr(err, "longer than 255 bytes"), "%s", err);
	cr_expect_eq(buf[0], '\0', "nothing of a refused secret is kept");
	/* 255 bytes and a newline fit a 256-byte buffer exactly */
	longer[255] = '\n';
	longer[256] = '\0';
	write_file(path, longer, 0600);
	cr_expect_eq(secret_file_read(path, buf, sizeof(buf), err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(strlen(buf), 255);
	write_file(path, "two\nlines\n", 0600);
	cr_expect_neq(secret_file_read(path, buf, sizeof(buf), err, sizeof(err)), 0);

	/* the alerter's webhook secret_file: the same rules, errors positioned */
	{
		struct alerter_config cfg;
		char yaml[800];

		memset(longer, 'k', sizeof(longer) - 1);
		longer[sizeof(longer) - 1] = '\0';
		write_file(path, longer, 0600);
		snprintf(yaml, sizeof(yaml), "receivers:\n  - name: a\n    url: https://x.test/h\n"
			 "    secret_file: %s\n", path);
		cr_expect_neq(alerter_config_parse(&cfg, "a.yaml", yaml, strlen(yaml), err,
						   sizeof(err)), 0, "a secret longer than fits was cut");
		cr_expect(strstr(err, "a.yaml:4:18: secret_file:") && strstr(err, "longer than"),
			  "%s", err);
		write_file(path, "webhook-key\n", 0644);
		chmod(path, 0644);
		cr_expect_neq(alerter_config_parse(&cfg, "a.yaml", yaml, strlen(yaml), err,
						   sizeof(err)), 0, "a secret others can read was used");
		cr_expect(strstr(err, "chmod 600"), "%s", err);
		chmod(path, 0600);
		cr_expect_eq(alerter_config_parse(&cfg, "a.yaml", yaml, strlen(yaml), err,
						  sizeof(err)), 0, "%s", err);
		cr_expect_str_eq(cfg.integrations[0].secret, "webhook-key");
		alerter_config_free(&cfg);
	}
}

/* ---- least privilege in Redis ------------------------------------------------ */

static struct test_redis acl_redis;

static void acl_teardown(void)
{
	if (acl_redis.pid > 0)
		test_redis_destroy(&acl_redis);
	memset(&acl_redis, 0, sizeof(acl_redis));
	cleanup();
}

/* A conn as user (password from its file in dir/secrets). */
static struct conn *open_as(const char *user)
{
	char url[800], err[512];
	struct conn *c;

	snprintf(url, sizeof(url), "unix://%s?user=%s&password_file=%s/secrets/%s.pass",
		 acl_redis.sock, user, dir, user);
	c = conn_open(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	cr_assert_not_null(c, "%s: %s", user, err);
	return c;
}

/* 1 if Redis refuses cmd to c for want of permission. */
static int refused(struct conn *c, const char *cmd)
{
	redisReply *r = conn_commandf(c, NULL, cmd);
	int no = r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOPERM", 6);

	if (r)
		freeReplyObject(r);
	return no;
}

static int allowed(struct conn *c, const char *cmd)
{
	redisReply *r = conn_commandf(c, NULL, cmd);
	int ok = r && !(r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOPERM", 6));

	if (r)
		freeReplyObject(r);
	return ok;
}

/*
 * `faultline acl` users loaded into a real Redis: the probe of web-1 writes
 * its snapshots and registry record through the real store, and can write
 * nothing of the fleet's: not fl:silences, not fl:alerts, not web-2's
 * stream or record, not the consumer group; scripts cannot get round it.
 * The rules engine (the real binary, --once) runs with its user, which
 * cannot write silences or host data either; the CLI adds a silence as
 * fl-operator, which cannot write fl:alerts.
 */
Test(acl, each_role_may_do_its_part_and_nothing_more, .init = make_dir, .fini = acl_teardown,
     .timeout = 120)
{
	struct store_opts o = { 0 };
	char url[800], err[512], path[600];
	struct snapshot s;
	struct store *st;
	struct conn *admin, *probe, *rules, *alerter, *op;
	redisReply *r;

	cr_assert_eq(test_sh("%s/faultline acl --secrets %s/secrets --host web-1 --host web-2 "
			     ">%s/users.acl 2>%s/acl.log && "
			     "echo 'user admin on nopass ~* &* +@all' >>%s/users.acl",
			     test_out_dir(), dir, dir, dir, dir), 0, "faultline acl failed");
	cr_expect_eq(test_sh("%s/faultline acl --secrets %s/secrets --host web-1 --host web-1 "
			     ">/dev/null 2>&1", test_out_dir(), dir), 2,
		     "a host given twice made an aclfile Redis refuses whole");
	cr_assert_eq(test_sh("grep -q 'user default off' %s/users.acl && "
			     "test $(stat -c %%a %s/secrets/fl-probe-web-1.pass) = 600", dir, dir), 0,
		     "the default user is left on, or a password file is readable by others");
	snprintf(path, sizeof(path), "%s/users.acl", dir);
	cr_assert_eq(test_redis_start_with(&acl_redis, "--aclfile", path), 0,
		     "redis-server refused the ACL file");
	{
		char aurl[400];

		snprintf(aurl, sizeof(aurl), "unix://%s?user=admin&password=x", acl_redis.sock);
		admin = conn_open(aurl, 2 * NSEC_PER_SEC, err, sizeof(err));
		cr_assert_not_null(admin, "%s", err);
	}

	/* the probe's real write path: snapshots and its registry record */
	snprintf(url, sizeof(url), "unix://%s?user=fl-probe-web-1&password_file=%s/secrets/"
		 "fl-probe-web-1.pass", acl_redis.sock, dir);
	o.url = url;
	st = store_open(&o, err, sizeof(err));
	cr_assert_not_null(st, "%s", err);
	snapshot_init(&s, "web-1", time_wall_ns() / NSEC_PER_MSEC, 1000, 1, 1);
	snapshot_add_counter(&s, "tcp.in_csum_errors", 7, NULL);
	cr_assert_eq(store_put_snapshot(st, &s), 0);
	cr_assert_eq(store_put_wake(st, "web-1"), 0);
	snapshot_free(&s);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0, "the probe's user could not write its "
		     "own snapshots");
	{
		struct store_stats ss;

		store_get_stats(st, &ss);
		cr_expect_eq(ss.errors, 0, "Redis refused some of the probe's own writes");
	}
	store_close(st);
	r = conn_commandf(admin, NULL, "XLEN fl:{web-1}:s1");
	cr_expect(r && r->integer == 1, "web-1's snapshot is not in its stream");
	freeReplyObject(r);
	r = conn_commandf(admin, NULL, "XLEN fl:wake");
	cr_expect(r && r->integer == 1, "web-1's wake is not in fl:wake");
	freeReplyObject(r);
	r = conn_commandf(admin, NULL, "EXISTS fl:{web-1}:host");
	cr_expect(r && r->integer == 1, "web-1's registry record was not written");
	freeReplyObject(r);

	probe = open_as("fl-probe-web-1");
	cr_expect(refused(probe, "HSET fl:silences s1 {}"), "a probe could write a silence");
	cr_expect(refused(probe, "XADD fl:alerts * e {}"), "a probe could forge an alert event");
	cr_expect(refused(probe, "XTRIM fl:alerts MAXLEN 0"), "a probe could trim fl:alerts");
	cr_expect(refused(probe, "XGROUP DESTROY fl:alerts alerter"),
		  "a probe could destroy the alerters' consumer group");
	cr_expect(refused(probe, "XADD fl:{web-2}:s1 * d x"), "a probe could write another "
		  "host's stream");
	cr_expect(refused(probe, "SET fl:{web-2}:host {}"), "a probe could register another host");
	cr_expect(refused(probe, "XRANGE fl:{web-2}:s1 - +"), "a probe could read another host");
	cr_expect(refused(probe, "SET {fl:alerts}:lease:0 me|1"), "a probe could take a lease");
	cr_expect(refused(probe, "XTRIM fl:wake MAXLEN 0"), "a probe could trim fl:wake");
	cr_expect(refused(probe, "XRANGE fl:wake - +"), "a probe could read fl:wake");
	cr_expect(refused(probe, "FLUSHALL"), "a probe could flush Redis");
	cr_expect(refused(probe, "CONFIG SET appendonly no"), "a probe could reconfigure Redis");
	{
		redisReply *e = conn_commandf(probe, NULL, "EVAL %s 0",
					      "return redis.call('HSET','fl:silences','s','{}')");

		cr_expect(e && e->type == REDIS_REPLY_ERROR, "a script wrote a silence");
		if (e)
			freeReplyObject(e);
	}
	r = conn_commandf(admin, NULL, "EXISTS fl:silences fl:alerts fl:{web-2}:s1");
	cr_expect(r && r->integer == 0, "something the probe was refused exists");
	freeReplyObject(r);
	/* a million fake hosts from web-1's credential: every one refused, none registered */
	{
		int noperm = 0;
		char **names;
		size_t nn;

		for (int b = 0; b < 100; b++) {
			for (int i = 0; i < 10000; i++)
				conn_appendf(probe, NULL, "SET fl:{fake-%d}:host {}", b * 10000 + i);
			for (int i = 0; i < 10000; i++) {
				r = conn_reply(probe);
				noperm += r && r->type == REDIS_REPLY_ERROR &&
					  !strncmp(r->str, "NOPERM", 6);
				if (r)
					freeReplyObject(r);
			}
		}
		cr_expect_eq(noperm, 1000000, "only %d of a million fake registrations refused",
			     noperm);
		cr_assert_eq(store_host_names(admin, &names, &nn, err, sizeof(err)), 0, "%s", err);
		cr_expect(nn == 1 && !strcmp(names[0], "web-1"), "%zu hosts registered", nn);
		store_host_names_free(names, nn);
	}
	conn_close(probe);

	/* the real rules engine, once, as fl-rules */
	snprintf(url, sizeof(url), "unix://%s?user=fl-rules&password_file=%s/secrets/"
		 "fl-rules.pass", acl_redis.sock, dir);
	cr_expect_eq(test_sh("cd %s/.. && %s/faultline-rules --once --redis '%s' "
			     "--rules etc/rules/faultline.yaml >%s/rules.log 2>&1 && "
			     "! grep -q NOPERM %s/rules.log", test_out_dir(), test_out_dir(), url,
			     dir, dir), 0, "faultline-rules could not run as fl-rules (%s/rules.log)",
		     dir);
	rules = open_as("fl-rules");
	cr_expect(allowed(rules, "XRANGE fl:{web-1}:s1 - +"), "rules cannot read a host");
	cr_expect(allowed(rules, "XREAD COUNT 1 STREAMS fl:wake 0-0"), "rules cannot read fl:wake");
	cr_expect(refused(rules, "XADD fl:wake * h web-1"), "rules could forge a wake");
	cr_expect(refused(rules, "XADD fl:{web-1}:s1 * d x"), "rules could write host data");
	cr_expect(refused(rules, "HSET fl:silences s {}"), "rules could write a silence");
	conn_close(rules);

	alerter = open_as("fl-alerter");
	cr_expect(allowed(alerter, "XGROUP CREATE fl:alerts alerter $ MKSTREAM"),
		  "the alerter cannot make its consumer group");
	cr_expect(allowed(alerter, "HGETALL fl:silences"), "the alerter cannot read silences");
	/* its Alertmanager API takes silences (behind the web config's auth) */
	cr_expect(allowed(alerter, "HSET fl:silences s {}"), "the alerter cannot take a silence");
	cr_expect(allowed(alerter, "HDEL fl:silences s"), "the alerter cannot drop a silence");
	cr_expect(allowed(alerter, "HGETALL {fl:alerts}:active"),
		  "the alerter cannot read the fleet's alerts");
	cr_expect(refused(alerter, "HSET fl:deploys:verdicts x {}"),
		  "the alerter could forge a deploy verdict");
	cr_expect(refused(alerter, "XADD fl:alerts * e {}"), "the alerter could forge an event");
	cr_expect(refused(alerter, "SET fl:{web-1}:host {}"), "the alerter could write host data");
	conn_close(alerter);
	/*
	 * the real alerter as fl-alerter: a firing event is delivered (group
	 * state, notification record, acknowledgement), an unreadable one
	 * dead-lettered
	 */
	freeReplyObject(conn_commandf(admin, NULL, "XADD fl:alerts * e %s",
				      "{\"status\":\"firing\",\"fingerprint\":\"ac1000000000000a\","
				      "\"labels\":{\"alertname\":\"AclTest\",\"host\":\"web-1\"},"
				      "\"startsAt\":\"2026-12-03T10:00:00Z\"}"));
	freeReplyObject(conn_commandf(admin, NULL, "XADD fl:alerts * e not-an-event"));
	rx_start();
	snprintf(path, sizeof(path), "%s/alerter.yaml", dir);
	{
		FILE *f = fopen(path, "w");

		cr_assert_not_null(f);
		fprintf(f, "redis: unix://%s?user=fl-alerter&password_file=%s/secrets/fl-alerter.pass\n"
			"metrics_addr: \"\"\ngroup_wait: 100ms\ngroup_interval: 200ms\n"
			"receivers:\n  - name: hook\n    url: http://127.0.0.1:%d/hook\n",
			acl_redis.sock, dir, rx.port);
		fclose(f);
	}
	test_sh("timeout -s INT 5 %s/faultline-alerter --config %s >%s/alerter.log 2>&1",
		test_out_dir(), path, dir);
	{
		int got = rx_count();

		cr_expect(got >= 1 && rx.req[0].status == 200 && rx.req[0].body &&
			  strstr(rx.req[0].body, "\"AclTest\""),
			  "the alerter did not deliver as fl-alerter (%s/alerter.log)", dir);
	}
	rx_stop();
	cr_expect_neq(test_sh("grep -q NOPERM %s/alerter.log", dir), 0,
		      "faultline-alerter was refused something as fl-alerter (%s/alerter.log)", dir);
	r = conn_commandf(admin, NULL, "XLEN fl:alerts:dead");
	cr_expect(r && r->integer == 1, "the alerter did not dead-letter the unreadable event "
		  "(%s/alerter.log)", dir);
	freeReplyObject(r);
	r = conn_commandf(admin, NULL, "XPENDING fl:alerts alerter");
	cr_expect(r && r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 0,
		  "events left unacknowledged (%s/alerter.log)", dir);
	freeReplyObject(r);

	/* the CLI as fl-operator */
	snprintf(url, sizeof(url), "unix://%s?user=fl-operator&password_file=%s/secrets/"
		 "fl-operator.pass", acl_redis.sock, dir);
	cr_expect_eq(test_sh("%s/faultline silence add --match host=web-1 --for 1h --redis '%s' "
			     ">%s/op.log 2>&1", test_out_dir(), url, dir), 0,
		     "faultline silence add failed as fl-operator (%s/op.log)", dir);
	op = open_as("fl-operator");
	cr_expect(refused(op, "XADD fl:alerts * e {}"), "the operator could forge an event");
	cr_expect(refused(op, "SET fl:{web-1}:host {}"), "the operator could write host data");
	conn_close(op);

	/* faultline-web as fl-web: it answers a query, and may write nothing */
	snprintf(url, sizeof(url), "unix://%s?user=fl-web&password_file=%s/secrets/"
		 "fl-web.pass", acl_redis.sock, dir);
	{
		int port = test_free_port();

		cr_expect_eq(test_sh("cd %s/.. && (%s/faultline-web --redis '%s' --listen "
				     "127.0.0.1:%d >%s/web.log 2>&1 & p=$!; "
				     "for i in $(seq 50); do curl -sf -o /dev/null "
				     "http://127.0.0.1:%d/-/healthy && break; sleep 0.1; done; "
				     "curl -s 'http://127.0.0.1:%d/api/v1/query?query="
				     "max_over_time(faultline_tcp_in_csum_errors_total%%5B5m%%5D)' >%s/web.json; kill $p; wait $p) "
				     "&& grep -q '\"host\":\"web-1\"' %s/web.json && "
				     "! grep -q NOPERM %s/web.log", test_out_dir(), test_out_dir(), url,
				     port, dir, port, port, dir, dir, dir), 0,
			     "faultline-web could not answer as fl-web (%s/web.json, %s/web.log)",
			     dir, dir);
	}
	op = open_as("fl-web");
	cr_expect(allowed(op, "XRANGE fl:{web-1}:s1 - +"), "fl-web cannot read a host");
	cr_expect(allowed(op, "HGETALL {fl:alerts}:active"), "fl-web cannot read what fires");
	cr_expect(refused(op, "HSET fl:silences s {}"), "fl-web could write a silence");
	cr_expect(refused(op, "XADD fl:alerts * e {}"), "fl-web could forge an event");
	cr_expect(refused(op, "SET fl:{web-1}:host {}"), "fl-web could write host data");
	cr_expect(refused(op, "DEL fl:{web-1}:s1"), "fl-web could delete a host's data");
	conn_close(op);
	conn_close(admin);
}

/* ---- the spool file ------------------------------------------------------------ */

static const struct spool_item *one_item(void *arg, size_t i)
{
	(void)i;
	return arg;
}

/*
 * A symlink planted at the spool's temporary name is refused, not written
 * through: the file it points at keeps its content.
 */
Test(spool, a_symlink_at_the_temporary_name_is_not_followed, .init = make_dir, .fini = cleanup)
{
	struct spool_item it = { .kind = ITEM_XADD, .key = "fl:{h}:s1", .ts_ms = 1, .blob = "x",
				 .bloblen = 1 };
	char path[300], tmp[320], victim[300], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/spool", dir);
	snprintf(tmp, sizeof(tmp), "%s/spool.tmp", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	write_file(victim, "precious\n", 0600);
	cr_assert_eq(symlink(victim, tmp), 0);
	cr_expect_neq(spool_file_save(path, one_item, &it, 1), 0, "wrote through a symlink");
	f = fopen(victim, "r");
	cr_assert_not_null(f);
	cr_expect_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	cr_expect_str_eq(buf, "precious\n", "the symlink's target was overwritten");
	unlink(tmp);
	cr_expect_eq(spool_file_save(path, one_item, &it, 1), 0, "without the symlink it saves");
}
