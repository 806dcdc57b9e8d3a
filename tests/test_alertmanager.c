/*
 * test_alertmanager.c - faultline-alerter delivering to a real Alertmanager
 * (Debian's prometheus-alertmanager 0.25) through its /api/v2/alerts, as
 * Prometheus does: the alert shows up in Alertmanager's API under the same
 * fingerprint, Alertmanager's own webhook fires for it, and the resolution
 * reaches Alertmanager and its webhook too.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "model/alert.h"
#include "tests/helpers.h"
#include "tests/receiver.h"
#include "core/strbuf.h"
#include "core/timeutil.h"

#define AM_BIN "/usr/bin/prometheus-alertmanager"

static struct test_redis redis;
static pid_t am, alerter;
static int am_port;

/* Alertmanager's GET path (via curl) into a json object, or NULL. */
static json_object *am_get(const char *path)
{
	char cmd[700], out[400];
	json_object *o;

	snprintf(out, sizeof(out), "%s/am-get.json", redis.dir);
	snprintf(cmd, sizeof(cmd), "curl -sf -o %s http://127.0.0.1:%d%s", out, am_port, path);
	if (test_sh("%s", cmd))
		return NULL;
	o = json_object_from_file(out);
	return o;
}

static void setup(void)
{
	char cfg[400], data[400], listen[64], bin[300];
	FILE *f;

	cr_assert_eq(access(AM_BIN, X_OK), 0, AM_BIN " is missing (scripts/deps.sh installs it)");
	cr_assert_eq(test_redis_start(&redis), 0);
	rx_start();
	am_port = test_free_port();
	snprintf(cfg, sizeof(cfg), "%s/am.yml", redis.dir);
	snprintf(data, sizeof(data), "%s/am-data", redis.dir);
	f = fopen(cfg, "w");
	cr_assert(f);
	fprintf(f, "route:\n  receiver: rx\n  group_by: [alertname]\n  group_wait: 0s\n"
		"  group_interval: 1s\n  repeat_interval: 1h\n"
		"receivers:\n  - name: rx\n    webhook_configs:\n"
		"      - url: http://127.0.0.1:%d/am\n        send_resolved: true\n", rx.port);
	fclose(f);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", am_port);
	am = fork();
	if (am == 0) {
		char c1[450], c2[450];

		snprintf(c1, sizeof(c1), "--config.file=%s", cfg);
		snprintf(c2, sizeof(c2), "--storage.path=%s", data);
		if (!freopen("/dev/null", "w", stderr))
			_exit(126);
		execl(AM_BIN, AM_BIN, c1, c2, listen, "--cluster.listen-address=",
		      (char *)NULL);
		_exit(127);
	}
	/* ready when its API answers */
	json_object *status = NULL;

	for (int i = 0; i < 100 && !status; i++)
		if (!(status = am_get("/api/v2/status")))
			usleep(100000);
	cr_assert_not_null(status, "Alertmanager did not start listening on port %d", am_port);
	json_object_put(status);
	snprintf(cfg, sizeof(cfg), "%s/alerter.yaml", redis.dir);
	f = fopen(cfg, "w");
	cr_assert(f);
	fprintf(f, "redis: %s\nconsumer: test\ngroup_wait: 0s\ngroup_interval: 1s\n"
		"repeat_interval: 1h\nreceivers:\n  - name: am\n    format: alertmanager_api\n"
		"    url: http://127.0.0.1:%d/api/v2/alerts\n    resend_interval: 2s\n"
		"delivery:\n  backoff_initial: 200ms\n  backoff_max: 1s\n", redis.url, am_port);
	fclose(f);
	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	alerter = fork();
	if (alerter == 0) {
		execl(bin, bin, "--config", cfg, "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
}

static void teardown(void)
{
	if (alerter > 0) {
		kill(alerter, SIGTERM);
		waitpid(alerter, NULL, 0);
	}
	if (am > 0) {
		kill(am, SIGTERM);
		waitpid(am, NULL, 0);
	}
	alerter = am = 0;
	rx_stop();
	test_redis_destroy(&redis);
}

/* An event as faultline-rules writes it: fingerprint from its labels, as both compute it. */
static void emit(struct conn *c, int firing, uint64_t starts, uint64_t ends, char fp[17])
{
	struct label l[] = { { "alertname", "TcpChecksumErrors" }, { "severity", "page" },
			     { "switch", "sw001" } };
	struct alert a = { 0 };
	struct strbuf sb = STRBUF_INIT;
	char *hosts[] = { "h1", "h2", "h3" };

	alert_fingerprint(l, 3, fp);
	a.firing = firing;
	snprintf(a.fingerprint, sizeof(a.fingerprint), "%s", fp);
	a.labels = l;
	a.nlabels = 3;
	a.starts_ms = starts;
	a.ends_ms = ends;
	snprintf(a.generator_url, sizeof(a.generator_url), "https://rules.test/f.yaml#TcpChecksumErrors");
	snprintf(a.runbook, sizeof(a.runbook), "runbooks/tcp-checksum-errors.md");
	a.hosts = hosts;
	a.nhosts = 3;
	a.total_hosts = 16;
	cr_assert_eq(alert_encode(&a, &sb), 0);
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:alerts * e %b", strbuf_str(&sb), sb.len));
	strbuf_release(&sb);
}

/* How many AM webhook notifications with status st have arrived. */
static int am_notifications(const char *st)
{
	char want[64];
	int n = 0;

	snprintf(want, sizeof(want), "\"status\":\"%s\"", st);
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++)
		n += rx.req[i].body && strstr(rx.req[i].body, want) &&
		     strstr(rx.req[i].body, "TcpChecksumErrors");
	pthread_mutex_unlock(&rx.lock);
	return n;
}

Test(alertmanager, alerts_reach_a_real_alertmanager_and_resolve, .init = setup,
     .fini = teardown, .timeout = 90)
{
	struct conn *c = test_redis_connect(&redis);
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char fp[17];
	const char *am_fp = NULL;
	json_object *alerts = NULL;

	emit(c, 1, now - 60000, 0, fp);
	for (int i = 0; i < 150 && !am_fp; i++) {
		json_object_put(alerts);
		alerts = am_get("/api/v2/alerts");
		if (alerts && json_object_array_length(alerts) == 1) {
			json_object *a = json_object_array_get_idx(alerts, 0), *x;

			if (json_object_object_get_ex(a, "fingerprint", &x))
				am_fp = json_object_get_string(x);
		}
		if (!am_fp)
			usleep(100000);
	}
	cr_assert_not_null(am_fp, "the alert never showed up in Alertmanager's API");
	cr_expect_str_eq(am_fp, fp, "Alertmanager's fingerprint differs from faultline's");
	{
		json_object *a = json_object_array_get_idx(alerts, 0), *x, *ann;

		cr_assert(json_object_object_get_ex(a, "generatorURL", &x));
		cr_expect_str_eq(json_object_get_string(x),
				 "https://rules.test/f.yaml#TcpChecksumErrors");
		cr_assert(json_object_object_get_ex(a, "annotations", &ann));
		cr_expect(json_object_object_get_ex(ann, "runbook_url", &x));
		cr_expect(json_object_object_get_ex(ann, "faultline_hosts", &x) &&
			  strstr(json_object_get_string(x), "3 of 16"));
	}
	json_object_put(alerts);
	/* Alertmanager's own routing delivers it */
	for (int i = 0; i < 100 && !am_notifications("firing"); i++)
		usleep(100000);
	cr_assert_geq(am_notifications("firing"), 1, "Alertmanager's webhook never fired");

	emit(c, 0, now - 60000, time_wall_ns() / NSEC_PER_MSEC, fp);
	for (int i = 0; i < 150 && !am_notifications("resolved"); i++)
		usleep(100000);
	cr_assert_geq(am_notifications("resolved"), 1,
		      "the resolution never reached Alertmanager's webhook");
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++)
		cr_log_info("rx %d: %.400s", i, rx.req[i].body);
	pthread_mutex_unlock(&rx.lock);
	/* and Alertmanager no longer lists it as active */
	uint64_t t0 = time_mono_ns();
	int active = 1;

	while (active && time_mono_ns() - t0 < 20 * NSEC_PER_SEC) {
		alerts = am_get("/api/v2/alerts");
		cr_assert_not_null(alerts);
		active = 0;
		for (size_t i = 0; i < json_object_array_length(alerts); i++) {
			json_object *a = json_object_array_get_idx(alerts, i), *st, *x;

			if (json_object_object_get_ex(a, "status", &st) &&
			    json_object_object_get_ex(st, "state", &x))
				active |= !strcmp(json_object_get_string(x), "active");
		}
		if (active)
			cr_log_info("%.1f s: %s", (double)(time_mono_ns() - t0) / 1e9,
				    json_object_to_json_string(alerts));
		json_object_put(alerts);
		usleep(500000);
	}
	cr_expect(!active, "still active in Alertmanager after resolving");
	conn_close(c);
}
