/*
 * test_am_api.c - Alertmanager's API v2 on the alerter, asked by the real
 * amtool: `amtool alert query` lists what fires and hides what a rack's
 * page inhibits (shown with -i, with its source); `amtool silence add`,
 * `query`, `update` and `expire` work against faultline and meet the same
 * silences `faultline silence` keeps; the groups are the routes' groups;
 * TLS and basic auth from the web config hold for the API as for
 * /metrics; what the API does not take is refused with a reason; and
 * `faultline alerts` shows the same, by failure domain.
 */
#include <criterion/criterion.h>
#include <crypt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "store/conn.h"
#include "tests/helpers.h"

static struct test_redis redis;
static pid_t alerter_pid;
static int port;
static char amtool[512];	/* "amtool --alertmanager.url=... " */

/* stdout of cmd (malloc'd), its exit status in *rc. */
static char *run(const char *cmd, int *rc)
{
	FILE *p = popen(cmd, "r");
	char *out = calloc(1, 1 << 16);
	size_t n = 0;
	int st;

	cr_assert_not_null(p);
	while (n < (1 << 16) - 1 && fgets(out + n, (int)((1 << 16) - n), p))
		n = strlen(out);
	st = pclose(p);
	if (rc)
		*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

static void start(const char *web_config)
{
	char path[300], bin[256], addr[64];
	FILE *f;

	cr_assert_eq(test_redis_start(&redis), 0);
	port = test_free_port();
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(path, sizeof(path), "%s/alertmanager.yml", redis.dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	/* receivers nobody listens on: the API is about what fires, not delivery */
	fprintf(f, "route:\n  receiver: ops\n  group_by: [alertname, rack]\n  routes:\n"
		"    - matchers: [severity=page]\n      receiver: pager\n      continue: true\n"
		"receivers:\n"
		"  - {name: ops, webhook_configs: [{url: 'http://127.0.0.1:9/ops'}]}\n"
		"  - {name: pager, webhook_configs: [{url: 'http://127.0.0.1:9/pager'}]}\n"
		"inhibit_rules:\n"
		"  - source_matchers: [alertname=RackDown]\n"
		"    target_matchers: [severity=warning]\n"
		"    equal: [rack]\n");
	fclose(f);
	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	alerter_pid = fork();
	if (alerter_pid == 0) {
		execl(bin, bin, "--config", path, "--redis", redis.url, "--metrics-addr", addr,
		      "--web-config", web_config ? web_config : "", "--log-level", "error",
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 50 && test_sh("curl -sk -o /dev/null %s://127.0.0.1:%d/-/healthy",
					   web_config ? "https" : "http", port); i++)
		usleep(100000);
	snprintf(amtool, sizeof(amtool), "amtool --alertmanager.url=http://127.0.0.1:%d ", port);
}

static void stop(void)
{
	if (alerter_pid > 0) {
		kill(alerter_pid, SIGTERM);
		waitpid(alerter_pid, NULL, 0);
	}
	alerter_pid = 0;
	test_redis_destroy(&redis);
}

static void plain(void)
{
	start(NULL);
}

/* The rack's page and two warnings: one in the rack (inhibited), one elsewhere. */
static void fire(struct conn *c)
{
	test_emit_alert(c, "00000000000000d0", "firing", "\"alertname\":\"RackDown\","
			"\"rack\":\"r1\",\"severity\":\"page\"");
	test_emit_alert(c, "00000000000000d1", "firing", "\"alertname\":\"DriveWear\","
			"\"rack\":\"r1\",\"host\":\"h1\",\"severity\":\"warning\"");
	test_emit_alert(c, "00000000000000d2", "firing", "\"alertname\":\"DriveWear\","
			"\"rack\":\"r2\",\"host\":\"h7\",\"severity\":\"warning\"");
}

/* Wait until amtool lists n alerts (with args). */
static char *query_until(const char *args, const char *needle)
{
	char cmd[1024], *out = NULL;

	snprintf(cmd, sizeof(cmd), "%s alert query %s 2>/dev/null", amtool, args);
	for (int i = 0; i < 100; i++) {
		free(out);
		out = run(cmd, NULL);
		if (strstr(out, needle))
			break;
		usleep(100000);
	}
	return out;
}

Test(am_api, amtool_alert_query_sees_what_fires_and_what_is_inhibited, .init = plain,
     .fini = stop, .timeout = 60)
{
	struct conn *c = test_redis_connect(&redis);
	char cmd[1024], *out;
	int rc;

	fire(c);
	out = query_until("-o extended", "r2");
	/* the rack's page and the other rack's warning; the inhibited one hidden */
	cr_expect(strstr(out, "RackDown") && strstr(out, "rack=\"r2\""), "%s", out);
	cr_expect(!strstr(out, "h1"), "amtool's default hides inhibited alerts:\n%s", out);
	free(out);
	/* -i: the inhibited one, suppressed, and the JSON names its source */
	snprintf(cmd, sizeof(cmd), "%s alert query -i -o json 2>/dev/null", amtool);
	out = run(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "\"fingerprint\":\"00000000000000d1\"") &&
		  strstr(out, "\"inhibitedBy\":[\"00000000000000d0\"]") &&
		  strstr(out, "\"state\":\"suppressed\""), "%s", out);
	cr_expect(!strstr(out, "00000000000000d2"), "-i lists only inhibited alerts:\n%s", out);
	free(out);
	/* matchers filter as Alertmanager's do; receivers as the routes say */
	snprintf(cmd, sizeof(cmd), "%s alert query 'rack=~\"r.*\"' severity=page -o json "
		 "2>/dev/null", amtool);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "00000000000000d0") && !strstr(out, "00000000000000d2"), "%s", out);
	/* a child that matched ends the walk: the root's receiver is not reached */
	cr_expect(strstr(out, "\"receivers\":[{\"name\":\"pager\"}]"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s alert query --receiver=pager -o json 2>/dev/null", amtool);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "00000000000000d0") && !strstr(out, "00000000000000d2"),
		  "--receiver=pager: %s", out);
	free(out);
	/* the groups are the routes' groups: pager's rack r1, ops' three */
	snprintf(cmd, sizeof(cmd), "curl -s http://127.0.0.1:%d/api/v2/alerts/groups", port);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "{\"labels\":{\"alertname\":\"RackDown\",\"rack\":\"r1\"},"
			 "\"receiver\":{\"name\":\"pager\"}"), "%s", out);
	cr_expect(strstr(out, "{\"labels\":{\"alertname\":\"DriveWear\",\"rack\":\"r2\"},"
			 "\"receiver\":{\"name\":\"ops\"}"), "%s", out);
	free(out);
	/* faultline alerts: the same, widest domain first, with what mutes each */
	snprintf(cmd, sizeof(cmd), "%s/faultline alerts --redis %s --config %s/alertmanager.yml",
		 test_out_dir(), redis.url, redis.dir);
	out = run(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	{
		char *rack = strstr(out, "rack=r1"), *h1 = strstr(out, "host=h1");

		cr_expect(rack && h1 && rack < h1, "the rack is not listed before its host:\n%s",
			  out);
		cr_expect(h1 && strstr(h1, "inhibited by RackDown 00000000000000d0"), "%s", out);
		cr_expect(strstr(out, "3 firing alert(s)"), "%s", out);
	}
	free(out);
	conn_close(c);
}

Test(am_api, amtool_silences_are_faultlines_silences, .init = plain, .fini = stop,
     .timeout = 60)
{
	struct conn *c = test_redis_connect(&redis);
	char cmd[1200], *id, *out;
	int rc;

	fire(c);
	free(query_until("", "r2"));
	snprintf(cmd, sizeof(cmd), "%s silence add 'rack=~\"r2\"' alertname=DriveWear -c 'disk "
		 "swap' -a alice -d 1h 2>/dev/null", amtool);
	id = run(cmd, &rc);
	cr_assert_eq(rc, 0, "amtool silence add: %s", id);
	id[strcspn(id, "\n")] = '\0';
	cr_assert(*id, "no silence id");
	/* the alert amtool silenced is suppressed, silencedBy names the silence */
	snprintf(cmd, sizeof(cmd), "%s alert query -s -o json 2>/dev/null", amtool);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "00000000000000d2") && strstr(out, id), "%s", out);
	free(out);
	/* faultline's CLI and amtool see one store */
	snprintf(cmd, sizeof(cmd), "%s/faultline silence query -q alertname=DriveWear --redis %s",
		 test_out_dir(), redis.url);
	out = run(cmd, &rc);
	cr_expect(!strncmp(out, id, strlen(id)), "faultline silence query: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s silence query -q 'rack=~\"r2\"' 2>/dev/null", amtool);
	out = run(cmd, &rc);
	cr_expect(!strncmp(out, id, strlen(id)), "amtool silence query: %s", out);
	free(out);
	/* update (GET then POST with the id) keeps the id and moves the end */
	snprintf(cmd, sizeof(cmd), "%s silence update %s -d 3h -o json 2>/dev/null", amtool, id);
	out = run(cmd, &rc);
	cr_expect_eq(rc, 0, "amtool silence update: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "curl -s http://127.0.0.1:%d/api/v2/silence/%s", port, id);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "\"createdBy\":\"alice\"") && strstr(out, "\"state\":\"active\""),
		  "%s", out);
	free(out);
	/* expire: no longer listed, listed with --expired, the alert active again */
	snprintf(cmd, sizeof(cmd), "%s silence expire %s 2>/dev/null && %s silence query -q "
		 "--expired 2>/dev/null", amtool, id, amtool);
	out = run(cmd, &rc);
	cr_expect_eq(rc, 0);
	cr_expect(!strncmp(out, id, strlen(id)), "not expired: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s silence query -q 2>/dev/null", amtool);
	out = run(cmd, &rc);
	cr_expect_str_eq(out, "", "an expired silence is still listed");
	free(out);
	/* what the API does not take: said, not dropped */
	snprintf(cmd, sizeof(cmd), "curl -s -w ' %%{http_code}' -XPOST "
		 "http://127.0.0.1:%d/api/v2/silences -d '{\"matchers\":[{\"name\":\"a\","
		 "\"value\":\".*\",\"isRegex\":true}],\"startsAt\":\"2026-01-01T00:00:00Z\","
		 "\"endsAt\":\"2099-01-01T00:00:00Z\",\"createdBy\":\"x\"}'", port);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "must not match the empty string") && strstr(out, " 400"), "%s",
		  out);
	free(out);
	snprintf(cmd, sizeof(cmd), "curl -s -w ' %%{http_code}' -XPOST "
		 "http://127.0.0.1:%d/api/v2/alerts -d '[]'", port);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "rules engine") && strstr(out, " 501"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "curl -s -w ' %%{http_code}' "
		 "'http://127.0.0.1:%d/api/v2/alerts?filter=rack%%3D%%22open'", port);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "never closed") && strstr(out, " 400"), "%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "curl -s -w ' %%{http_code}' http://127.0.0.1:%d/-/ready",
		 port);
	out = run(cmd, &rc);
	cr_expect_str_eq(out, "OK 200");
	free(out);
	free(id);
	conn_close(c);
}

static char webdir[64];

static void with_auth(void)
{
	char wc[128];
	struct crypt_data cd = { 0 };
	char *salt, *hash;
	FILE *f;

	snprintf(webdir, sizeof(webdir), "/tmp/fl-amapi.XXXXXX");
	cr_assert_not_null(mkdtemp(webdir));
	cr_assert_eq(test_tls_certs(webdir), 0);
	salt = crypt_gensalt_ra("$2b$", 5, NULL, 0);
	hash = crypt_r("s3cret", salt, &cd);
	free(salt);
	snprintf(wc, sizeof(wc), "%s/web.yml", webdir);
	f = fopen(wc, "w");
	fprintf(f, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
		"basic_auth_users:\n  oncall: '%s'\n", hash);
	fclose(f);
	start(wc);
}

static void auth_stop(void)
{
	stop();
	test_remove_dir(webdir);
}

Test(am_api, the_web_config_guards_the_api_too, .init = with_auth, .fini = auth_stop,
     .timeout = 60)
{
	char cmd[1200], *out;
	int rc;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "curl -s -o /dev/null -w '%%{http_code}' --cacert %s/ca.crt "
		 "https://127.0.0.1:%d/api/v2/silences", webdir, port);
	out = run(cmd, &rc);
	cr_expect_str_eq(out, "401", "the API answered without credentials");
	free(out);
	/* amtool with its http config: CA and basic auth */
	snprintf(cmd, sizeof(cmd), "%s/amtool.yml", webdir);
	f = fopen(cmd, "w");
	fprintf(f, "basic_auth:\n  username: oncall\n  password: s3cret\ntls_config:\n"
		"  ca_file: %s/ca.crt\n", webdir);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "amtool --alertmanager.url=https://127.0.0.1:%d "
		 "--http.config.file=%s/amtool.yml silence add alertname=X -c t -a bob -d 10m "
		 "2>&1", port, webdir);
	out = run(cmd, &rc);
	cr_expect_eq(rc, 0, "amtool over TLS with basic auth: %s", out);
	free(out);
	snprintf(cmd, sizeof(cmd), "amtool --alertmanager.url=https://127.0.0.1:%d "
		 "--http.config.file=%s/amtool.yml silence query -o json 2>/dev/null", port, webdir);
	out = run(cmd, &rc);
	cr_expect(strstr(out, "\"createdBy\":\"bob\""), "%s", out);
	free(out);
}
