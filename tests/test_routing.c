/*
 * test_routing.c - on-call routing as Alertmanager does it: matchers in its
 * syntax, the routing tree checked against the real amtool (`amtool config
 * routes test` on the same file), inheritance of group_by and timers, the
 * keys of an alertmanager.yml faultline refuses (positioned), and a real
 * alerter fanning one alert out to two receivers (continue) and three
 * integrations, its stream entry acknowledged only when every one settled.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "alerter/alerter.h"
#include "alerter/route.h"
#include "core/timeutil.h"
#include "model/matcher.h"
#include "store/conn.h"
#include "store/silence.h"
#include "tests/helpers.h"
#include "tests/receiver.h"

/* ---- matchers ------------------------------------------------------------- */

static struct alert one_label(const char *k, const char *v, struct label *l)
{
	struct alert a;

	memset(&a, 0, sizeof(a));
	l->key = (char *)k;
	l->value = (char *)v;
	a.labels = l;
	a.nlabels = 1;
	return a;
}

Test(routing, matchers_read_as_amtool_writes_them)
{
	static const struct {
		const char *spec;
		const char *name, *value;
		int op;
	} ok[] = {
		{ "rack=r12", "rack", "r12", MATCH_EQ },
		{ "rack=~\"r1.*\"", "rack", "r1.*", MATCH_RE },
		{ " rack !~ \"r1.*\" ", "rack", "r1.*", MATCH_NRE },
		{ "team!=\"db\"", "team", "db", MATCH_NE },
		{ "msg=\"a \\\"quoted\\\" word\"", "msg", "a \"quoted\" word", MATCH_EQ },
		{ "re=~\"nvme\\\\d+\"", "re", "nvme\\d+", MATCH_RE },
		{ "empty=\"\"", "empty", "", MATCH_EQ },
		{ "a_b:c=x,y", "a_b:c", "x,y", MATCH_EQ },
	};
	static const char *const bad[] = { "=x", "9a=x", "rack", "rack=\"open", "rack=a\"b",
					   "rack==x\"", "rack=~\"(\"" };
	struct matcher m;
	char err[400], buf[2200];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_assert_eq(matcher_parse(&m, ok[i].spec, err, sizeof(err)), 0, "%s: %s",
			     ok[i].spec, err);
		cr_expect_str_eq(m.name, ok[i].name, "%s", ok[i].spec);
		cr_expect_str_eq(m.value, ok[i].value, "%s", ok[i].spec);
		cr_expect_eq(m.op, ok[i].op, "%s", ok[i].spec);
		/* what it writes reads back the same */
		struct matcher back;

		matcher_format(&m, buf, sizeof(buf));
		cr_assert_eq(matcher_parse(&back, buf, err, sizeof(err)), 0, "%s: %s", buf, err);
		cr_expect_str_eq(back.value, m.value, "%s -> %s", ok[i].spec, buf);
		cr_expect_eq(back.op, m.op);
		matcher_free(&back);
		matcher_free(&m);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		cr_expect_neq(matcher_parse(&m, bad[i], err, sizeof(err)), 0, "'%s' was taken",
			      bad[i]);
		cr_expect(strstr(err, "matcher"), "'%s': the error does not say what: %s", bad[i],
			  err);
	}
	/* a value over the bound is an error, never cut */
	memset(buf, 'v', sizeof(buf));
	memcpy(buf, "k=", 2);
	buf[MATCHER_VALUE_MAX + 10] = 0;
	cr_expect_neq(matcher_parse(&m, buf, err, sizeof(err)), 0);
	cr_expect(strstr(err, "longer than"), "%s", err);
}

Test(routing, matcher_semantics_and_lists)
{
	struct matcher ms[4];
	struct label l;
	struct alert a = one_label("rack", "r12", &l);
	char err[400];
	int n;

	n = matchers_parse(ms, 4, "{rack=~\"r1.*\", msg=\"a,b\", team!~\"db|st\"}", err,
			   sizeof(err));
	cr_assert_eq(n, 3, "%s", err);
	cr_expect_str_eq(ms[1].value, "a,b", "a comma inside quotes split the list");
	cr_expect(matcher_match(&ms[0], &a));
	cr_expect(!matcher_match(&ms[1], &a), "an absent label is \"\", not a,b");
	cr_expect(matcher_match(&ms[2], &a), "!~ of an absent label (\"\") matches");
	for (int i = 0; i < n; i++)
		matcher_free(&ms[i]);
	/* anchored: r1 does not match r12 */
	cr_assert_eq(matchers_parse(ms, 4, "rack=~r1", err, sizeof(err)), 1);
	cr_expect(!matcher_match(&ms[0], &a), "a regex matched a prefix: not anchored");
	matcher_free(&ms[0]);
	/* the n-th past the limit is an error, not dropped */
	cr_expect_lt(matchers_parse(ms, 2, "a=1,b=2,c=3", err, sizeof(err)), 0);
	cr_expect(strstr(err, "more than 2"), "%s", err);
}

/* ---- the tree against amtool ---------------------------------------------- */

/*
 * Alertmanager's documented example tree (doc/examples/simple.yml), its
 * receivers made webhooks, with continue, match_re, matchers, '...' and a
 * receiver without configs added.
 */
static const char am_config[] =
	"global:\n"
	"  resolve_timeout: 5m\n"
	"route:\n"
	"  group_by: ['alertname', 'cluster', 'service']\n"
	"  group_wait: 30s\n"
	"  group_interval: 5m\n"
	"  repeat_interval: 3h\n"
	"  receiver: team-X-mails\n"
	"  routes:\n"
	"    - matchers:\n"
	"        - service=~\"foo1|foo2|baz\"\n"
	"      receiver: team-X-mails\n"
	"      routes:\n"
	"        - matchers:\n"
	"            - severity=\"critical\"\n"
	"          receiver: team-X-pager\n"
	"    - matchers:\n"
	"        - service=\"files\"\n"
	"      receiver: team-Y-mails\n"
	"      routes:\n"
	"        - matchers:\n"
	"            - severity=\"critical\"\n"
	"          receiver: team-Y-pager\n"
	"    - matchers: [service=\"database\"]\n"
	"      receiver: team-DB-pager\n"
	"      group_by: [alertname, cluster, database]\n"
	"      routes:\n"
	"        - matchers: [owner=\"team-X\"]\n"
	"          receiver: team-X-pager\n"
	"          continue: true\n"
	"        - matchers: [owner=\"team-Y\"]\n"
	"          receiver: team-Y-pager\n"
	"    - match_re:\n"
	"        rack: 'r1.*'\n"
	"      receiver: rack-oncall\n"
	"      continue: true\n"
	"      group_by: ['...']\n"
	"      group_wait: 1s\n"
	"    - matchers: ['severity=\"page\"', 'team!~\"db|storage\"']\n"
	"      receiver: team-Y-pager\n"
	"      continue: true\n"
	"    - match: {severity: page}\n"
	"      receiver: blackhole\n"
	"receivers:\n"
	"  - name: team-X-mails\n"
	"    webhook_configs: [{url: 'http://127.0.0.1:1/x-mails'}]\n"
	"  - name: team-X-pager\n"
	"    webhook_configs: [{url: 'http://127.0.0.1:1/x-pager'}]\n"
	"    pagerduty_configs: [{routing_key: 'abc', url: 'http://127.0.0.1:1/pd'}]\n"
	"  - name: team-Y-mails\n"
	"    webhook_configs: [{url: 'http://127.0.0.1:1/y-mails'}]\n"
	"  - name: team-Y-pager\n"
	"    webhook_configs: [{url: 'http://127.0.0.1:1/y-pager', send_resolved: false}]\n"
	"  - name: team-DB-pager\n"
	"    slack_configs: [{api_url: 'https://hooks.slack.test/db', channel: '#db'}]\n"
	"  - name: rack-oncall\n"
	"    webhook_configs: [{url: 'http://127.0.0.1:1/rack'}]\n"
	"  - name: blackhole\n";

static const char *const label_sets[] = {
	"service=foo1 severity=critical",
	"service=foo2",
	"service=files severity=critical",
	"service=files severity=warning",
	"service=database owner=team-X",
	"service=database owner=team-Y",
	"service=database owner=team-Z",
	"service=database owner=team-X rack=r12",
	"rack=r12 severity=page",
	"rack=r2 severity=page team=db",
	"rack=r2 severity=page team=web",
	"severity=page",
	"alertname=Other",
	"rack=r1",
	"rack=r10 severity=page team=storage",
};

static char *run(const char *cmd)
{
	char *out = NULL;
	size_t len = 0;
	FILE *p = popen(cmd, "r");

	cr_assert_not_null(p);
	if (getdelim(&out, &len, '\0', p) < 0) {
		free(out);
		out = strdup("");
	}
	pclose(p);
	for (size_t n = strlen(out); n && (out[n - 1] == '\n' || out[n - 1] == ' '); n--)
		out[n - 1] = 0;
	return out;
}

Test(routing, the_tree_reaches_the_receivers_amtool_says)
{
	char dir[] = "/tmp/fl-routing.XXXXXX", path[128], cmd[1024];
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/alertmanager.yml", dir);
	f = fopen(path, "w");
	fputs(am_config, f);
	fclose(f);
	if (system("command -v amtool >/dev/null 2>&1"))
		cr_assert_fail("amtool is missing: make deps installs prometheus-alertmanager");
	snprintf(cmd, sizeof(cmd), "amtool check-config %s >/dev/null 2>&1", path);
	cr_assert_eq(system(cmd), 0, "amtool refuses the test's own config");
	snprintf(cmd, sizeof(cmd), "%s/faultline-alerter --check-config %s 2>&1",
		 test_out_dir(), path);
	char *said = run(cmd);

	cr_expect(strstr(said, "good: 7 receiver(s) with 7 integration(s), 11 route(s)"),
		  "faultline reads the file otherwise: %s", said);
	free(said);
	for (size_t i = 0; i < sizeof(label_sets) / sizeof(label_sets[0]); i++) {
		char *am, *fl;

		snprintf(cmd, sizeof(cmd), "amtool config routes test --config.file=%s %s "
			 "2>/dev/null", path, label_sets[i]);
		am = run(cmd);
		snprintf(cmd, sizeof(cmd), "%s/faultline-alerter --config %s --routes-test %s",
			 test_out_dir(), path, label_sets[i]);
		fl = run(cmd);
		cr_expect(am[0], "amtool said nothing for %s", label_sets[i]);
		cr_expect_str_eq(fl, am, "{%s}: faultline reaches '%s', Alertmanager '%s'",
				 label_sets[i], fl, am);
		free(am);
		free(fl);
	}
	unlink(path);
	rmdir(dir);
}

/*
 * The example an on-call team moves over (etc/examples/alertmanager.yml,
 * shown in docs/alerter.md): both tools take it, and route alike.
 */
Test(routing, the_shipped_alertmanager_yml_moves_over_unchanged)
{
	static const char *const sets[] = {
		"severity=page team=db", "severity=page", "team=storage", "severity=info",
		"severity=warning rack=r1", "alertname=RackDown severity=page rack=r1",
	};
	char path[512], cmd[1200], *said;

	snprintf(path, sizeof(path), "%s/../etc/examples/alertmanager.yml", test_out_dir());
	if (access(path, R_OK))
		snprintf(path, sizeof(path), "etc/examples/alertmanager.yml");
	snprintf(cmd, sizeof(cmd), "amtool check-config %s >/dev/null 2>&1", path);
	cr_assert_eq(system(cmd), 0, "amtool refuses %s", path);
	snprintf(cmd, sizeof(cmd), "%s/faultline-alerter --check-config %s 2>&1", test_out_dir(),
		 path);
	said = run(cmd);
	cr_expect(strstr(said, "good: 3 receiver(s) with 4 integration(s), 4 route(s), 2 inhibit "
			 "rule(s), 2 time interval(s)"), "%s", said);
	free(said);
	for (size_t i = 0; i < sizeof(sets) / sizeof(sets[0]); i++) {
		char *am, *fl;

		snprintf(cmd, sizeof(cmd), "amtool config routes test --config.file=%s %s "
			 "2>/dev/null", path, sets[i]);
		am = run(cmd);
		snprintf(cmd, sizeof(cmd), "%s/faultline-alerter --config %s --routes-test %s",
			 test_out_dir(), path, sets[i]);
		fl = run(cmd);
		cr_expect(am[0], "amtool said nothing for %s", sets[i]);
		cr_expect_str_eq(fl, am, "{%s}: faultline '%s', Alertmanager '%s'", sets[i], fl, am);
		free(am);
		free(fl);
	}
}

Test(routing, children_inherit_what_they_do_not_set)
{
	struct alerter_config cfg;
	const struct route *out[8];
	struct label ls[3] = { { "service", "database" }, { "owner", "team-X" },
			       { "database", "users" } };
	struct alert a;
	struct label gl[8];
	char err[512];
	int n;

	cr_assert_eq(alerter_config_parse(&cfg, "am.yml", am_config, sizeof(am_config) - 1, err,
					  sizeof(err)), 0, "%s", err);
	memset(&a, 0, sizeof(a));
	a.labels = ls;
	a.nlabels = 3;
	n = route_match(&cfg.root, &a, out, 8);
	cr_assert_eq(n, 1, "owner=team-X (continue) and nothing after it matches; got %d", n);
	/* database/owner=team-X: group_by from its parent, timers from the root */
	cr_expect_eq(out[0]->ngroup_by, 3);
	cr_expect_str_eq(out[0]->group_by[2], "database");
	cr_expect_eq(out[0]->group_wait_ns, 30 * NSEC_PER_SEC);
	cr_expect_eq(out[0]->group_interval_ns, 300 * NSEC_PER_SEC);
	cr_expect_eq(out[0]->repeat_interval_ns, 3 * 3600 * NSEC_PER_SEC);
	cr_expect_str_eq(out[0]->key, "{}/{service=\"database\"}/{owner=\"team-X\"}");
	cr_expect_str_eq(out[0]->id, "{}/{service=\"database\"}/2/{owner=\"team-X\"}/0");
	/* group labels: the ones it has, sorted (Alertmanager's groupLabels) */
	n = route_group_labels(out[0], &a, gl, 8);
	cr_assert_eq(n, 1, "alertname and cluster are absent: not group labels");
	cr_expect_str_eq(gl[0].key, "database");
	cr_expect_str_eq(gl[0].value, "users");
	/* '...': every label; its own group_wait */
	struct label rl[2] = { { "rack", "r12" }, { "host", "h1" } };

	a.labels = rl;
	a.nlabels = 2;
	n = route_match(&cfg.root, &a, out, 8);
	cr_assert_geq(n, 1);
	cr_expect(out[0]->group_by_all);
	cr_expect_eq(out[0]->group_wait_ns, NSEC_PER_SEC);
	cr_expect_eq(route_group_labels(out[0], &a, gl, 8), 2);
	/* integrations: two for team-X-pager, none for blackhole; send_resolved defaults */
	for (int i = 0; i < cfg.nreceiver_names; i++) {
		const struct receiver_name *rn = &cfg.receiver_names[i];

		if (!strcmp(rn->name, "team-X-pager")) {
			cr_expect_eq(rn->n, 2);
			cr_expect_str_eq(cfg.integrations[rn->first + 1].name,
					 "team-X-pager/pagerduty[0]");
			cr_expect_eq(cfg.integrations[rn->first + 1].format, FMT_PAGERDUTY);
		}
		if (!strcmp(rn->name, "blackhole"))
			cr_expect_eq(rn->n, 0);
		if (!strcmp(rn->name, "team-Y-pager"))
			cr_expect_eq(cfg.integrations[rn->first].send_resolved, 0);
		if (!strcmp(rn->name, "team-DB-pager")) {
			cr_expect_eq(cfg.integrations[rn->first].send_resolved, 0,
				     "Slack's send_resolved defaults to false, as in Alertmanager");
			cr_expect_str_eq(cfg.integrations[rn->first].channel, "#db");
		}
	}
	alerter_config_free(&cfg);
}

Test(routing, global_http_config_reaches_every_integration)
{
	static const char yaml[] =
		"global:\n  http_config:\n    follow_redirects: false\n"
		"    tls_config: {server_name: hooks.internal, insecure_skip_verify: true}\n"
		"route: {receiver: a}\n"
		"receivers:\n  - name: a\n    webhook_configs:\n"
		"      - url: https://127.0.0.1/one\n"
		"      - url: https://127.0.0.1/two\n        http_config: {follow_redirects: true}\n";
	struct alerter_config cfg;
	char err[512];

	cr_assert_eq(alerter_config_parse(&cfg, "am.yml", yaml, sizeof(yaml) - 1, err,
					  sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.nintegrations, 2);
	cr_expect_eq(cfg.integrations[0].follow_redirects, 0, "global follow_redirects ignored");
	cr_expect_eq(cfg.integrations[1].follow_redirects, 1, "the integration's own lost");
	cr_expect_str_eq(cfg.integrations[0].server_name, "hooks.internal");
	cr_expect_eq(cfg.integrations[1].insecure_skip_verify, 1);
	alerter_config_free(&cfg);
}

Test(routing, what_faultline_does_not_do_is_refused_where_it_is_written)
{
	static const struct {
		const char *yaml, *where, *says;
	} cases[] = {
		{ "route: {receiver: a}\nreceivers: [{name: a}]\ntemplates: ['/etc/x/*.tmpl']\n",
		  "am.yml:3:", "templates" },
		{ "route: {receiver: a}\nreceivers: [{name: a}]\ninhibit_rules:\n  - equal: [x]\n",
		  "am.yml:4:", "needs target_matchers" },
		{ "route: {receiver: a}\nreceivers:\n  - name: a\n    email_configs: [{to: x}]\n",
		  "am.yml:4:", "email_configs" },
		{ "route: {receiver: a}\nreceivers:\n  - name: a\n    slack_configs:\n"
		  "      - api_url: https://x.test/\n        title: '{{ .X }}'\n",
		  "am.yml:6:", "templates are not supported" },
		{ "route:\n  receiver: a\n  routes:\n    - receiver: a\n"
		  "      mute_time_intervals: [night]\nreceivers: [{name: a}]\n",
		  "am.yml:5:", "'night' is not one of the time_intervals" },
		{ "route:\n  receiver: a\n  group_by: ['...', host]\nreceivers: [{name: a}]\n",
		  "am.yml:3:", "'...'" },
		{ "route:\n  receiver: a\n  matchers: [x=y]\nreceivers: [{name: a}]\n",
		  "am.yml:2:", "root route" },
		{ "route:\n  receiver: a\n  routes:\n    - receiver: b\nreceivers: [{name: a}]\n",
		  "am.yml:4:", "'b' is not one of the receivers" },
		{ "route: {receiver: a}\nreceivers:\n  - name: a\n    webhook_configs:\n"
		  "      - url: http://127.0.0.1/\n        max_alerts: 5\n",
		  "am.yml:6:", "max_alerts" },
		{ "route: {receiver: a}\nreceivers:\n  - name: a\n    webhook_configs:\n"
		  "      - url: http://127.0.0.1/\n        http_config: {proxy_url: 'http://p/'}\n",
		  "am.yml:6:", "proxy_url" },
		{ "route:\n  receiver: a\n  routes:\n    - matchers: ['x=\"open']\n"
		  "      receiver: a\nreceivers: [{name: a}]\n", "am.yml:4:", "never closed" },
		{ "route: {receiver: a}\nroutes: []\nreceivers: [{name: a}]\n", "am.yml:1:",
		  "not both" },
		{ "route: {receiver: a}\nreceivers: [{name: a}, {name: a}]\n", "am.yml:2:",
		  "defined twice" },
		{ "route:\n  receiver: a\n  routes:\n    - receiver: a\n      typo: 1\n"
		  "receivers: [{name: a}]\n", "am.yml:5:", "typo" },
	};
	struct alerter_config cfg;
	char err[600];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = 0;
		cr_expect_neq(alerter_config_parse(&cfg, "am.yml", cases[i].yaml,
						   strlen(cases[i].yaml), err, sizeof(err)), 0,
			      "case %zu was taken:\n%s", i, cases[i].yaml);
		cr_expect(strstr(err, cases[i].where) && strstr(err, cases[i].says),
			  "case %zu: expected %s ... %s, got: %s", i, cases[i].where,
			  cases[i].says, err);
		alerter_config_free(&cfg);
	}
}

/* ---- a real alerter fanning out ------------------------------------------- */

static struct test_redis redis;
static pid_t alerter_pid;

static void fan_setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
	rx_start();
}

static void fan_teardown(void)
{
	if (alerter_pid > 0) {
		kill(alerter_pid, SIGTERM);
		waitpid(alerter_pid, NULL, 0);
	}
	alerter_pid = 0;
	rx_stop();
	test_redis_destroy(&redis);
}

static void emit(struct conn *c, const char *fp, const char *status, const char *labels)
{
	char all[900];

	snprintf(all, sizeof(all), "\"alertname\":\"Fan\"%s", labels);
	test_emit_alert(c, fp, status, all);
}

/* Requests to path (the request line names it) the receiver took (2xx), holding status. */
static int to_path(const char *path, const char *status)
{
	char line[128];
	int n = 0;

	snprintf(line, sizeof(line), "POST %s ", path);
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++)
		n += !strncmp(rx.req[i].headers, line, strlen(line)) && rx.req[i].status < 300 &&
		     (!status || strstr(rx.req[i].body, status));
	pthread_mutex_unlock(&rx.lock);
	return n;
}

Test(routing, one_alert_reaches_every_receiver_and_is_acked_when_all_settled, .init = fan_setup,
     .fini = fan_teardown, .timeout = 90)
{
	char path[300], bin[256];
	struct conn *c;
	FILE *f;

	snprintf(path, sizeof(path), "%s/alertmanager.yml", redis.dir);
	f = fopen(path, "w");
	fprintf(f,
		"route:\n  receiver: rest\n  group_by: [alertname]\n  group_wait: 1s\n"
		"  group_interval: 1s\n  routes:\n"
		"    - matchers: ['rack=~\"r1.*\"']\n      receiver: pager\n      continue: true\n"
		"    - matchers: ['severity=\"page\"']\n      receiver: chat\n"
		"receivers:\n"
		"  - name: pager\n    webhook_configs:\n"
		"      - url: http://127.0.0.1:%d/pager-a\n"
		"      - url: http://127.0.0.1:%d/pager-b\n        send_resolved: false\n"
		"  - name: chat\n    webhook_configs: [{url: 'http://127.0.0.1:%d/chat'}]\n"
		"  - name: rest\n    webhook_configs: [{url: 'http://127.0.0.1:%d/rest'}]\n",
		rx.port, rx.port, rx.port, rx.port);
	fclose(f);
	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	c = test_redis_connect(&redis);
	/* the chat receiver fails for a while: the entry stays pending meanwhile */
	rx.status = 503;
	rx.status_until_ns = time_mono_ns() + 4 * NSEC_PER_SEC;
	alerter_pid = fork();
	if (alerter_pid == 0) {
		const char *level = getenv("FL_ALERTER_LOG");

		execl(bin, bin, "--config", path, "--redis", redis.url, "--log-level",
		      level ? level : "warn", (char *)NULL);
		_exit(127);
	}
	sleep(1);
	emit(c, "a1a1a1a1a1a1a1a1", "firing", ",\"rack\":\"r12\",\"severity\":\"page\"");
	for (int i = 0; i < 150 && !(to_path("/pager-a", NULL) && to_path("/pager-b", NULL) &&
				     to_path("/chat", "\"firing\"") >= 1); i++)
		usleep(100000);
	cr_assert_geq(to_path("/pager-a", "\"firing\""), 1);
	cr_assert_geq(to_path("/pager-b", "\"firing\""), 1);
	cr_expect_eq(to_path("/rest", NULL), 0, "the root's receiver got an alert a child took");
	/* wait for chat's 2xx: only then is the entry acknowledged */
	for (int i = 0; i < 150 && test_alerts_pending(c, NULL) != 0; i++)
		usleep(100000);
	cr_assert_eq(test_alerts_pending(c, NULL), 0,
		     "acknowledged before or never after every receiver settled");
	pthread_mutex_lock(&rx.lock);
	int ok_chat = 0;

	for (int i = 0; i < rx.n; i++)
		ok_chat |= !strncmp(rx.req[i].headers, "POST /chat ", 11) &&
			   rx.req[i].status == 200;
	pthread_mutex_unlock(&rx.lock);
	cr_assert(ok_chat, "acknowledged with chat never answered 2xx");
	/* the receiver's name in the payload is the receiver's, the groupKey Alertmanager's */
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++)
		if (!strncmp(rx.req[i].headers, "POST /pager-a ", 14)) {
			cr_expect(strstr(rx.req[i].body, "\"receiver\":\"pager\""), "%s",
				  rx.req[i].body);
			cr_expect(strstr(rx.req[i].body, "\"groupKey\":\"{}\\/{rack=~\\\"r1.*\\\"}:"
					 "{alertname=\\\"Fan\\\"}\""), "%s", rx.req[i].body);
		}
	pthread_mutex_unlock(&rx.lock);
	/* resolved: pager-a and chat hear it, pager-b (send_resolved: false) does not */
	emit(c, "a1a1a1a1a1a1a1a1", "resolved", ",\"rack\":\"r12\",\"severity\":\"page\"");
	for (int i = 0; i < 150 && !(to_path("/pager-a", "\"resolved\"") &&
				     to_path("/chat", "\"resolved\"")); i++)
		usleep(100000);
	cr_expect_eq(to_path("/pager-a", "\"status\":\"resolved\""), 1);
	cr_expect_eq(to_path("/chat", "\"status\":\"resolved\""), 1);
	for (int i = 0; i < 50 && test_alerts_pending(c, NULL) != 0; i++)
		usleep(100000);
	cr_expect_eq(test_alerts_pending(c, NULL), 0, "the resolution was not settled everywhere");
	sleep(2);
	cr_expect_eq(to_path("/pager-b", "\"status\":\"resolved\""), 0,
		     "send_resolved: false, yet the resolution was sent");
	cr_expect_eq(to_path("/pager-b", NULL), 1, "pager-b: one notification taken, the firing "
		     "one");
	conn_close(c);
}

/* ---- silences as amtool takes them ---------------------------------------- */

Test(routing, silences_take_what_amtool_silence_add_takes, .init = fan_setup,
     .fini = fan_teardown, .timeout = 60)
{
	char cmd[1024], *id, *out;
	struct conn *c = test_redis_connect(&redis);
	struct silence *all;
	struct label ls[2] = { { "alertname", "DiskFull" }, { "rack", "r12" } };
	struct alert a;
	char err[400];
	int n;

	snprintf(cmd, sizeof(cmd), "%s/faultline silence add 'rack=~\"r1.*\"' alertname=DiskFull "
		 "--comment 'switch swap' --author alice --duration 1h --redis %s",
		 test_out_dir(), redis.url);
	id = run(cmd);
	cr_assert(strchr(id, '-'), "no id: %s", id);
	/* the quoted regex is a regex, not a value with quotes in it */
	n = silence_load(c, &all, err, sizeof(err));
	cr_assert_eq(n, 1, "%s", err);
	memset(&a, 0, sizeof(a));
	a.labels = ls;
	a.nlabels = 2;
	cr_expect_not_null(silence_find(all, n, &a, time_wall_ns() / NSEC_PER_MSEC),
			   "'rack=~\"r1.*\"' does not mute rack=r12");
	ls[1].value = "r2";
	cr_expect_null(silence_find(all, n, &a, time_wall_ns() / NSEC_PER_MSEC));
	cr_expect_str_eq(all[0].created_by, "alice");
	cr_expect_eq(all[0].ends_ms - all[0].starts_ms, 3600000);
	silence_free_all(all, n);
	/* query filters as Alertmanager's: by the silence's matchers */
	snprintf(cmd, sizeof(cmd), "%s/faultline silence query -q 'rack=~\"r1.*\"' --redis %s",
		 test_out_dir(), redis.url);
	out = run(cmd);
	cr_expect_str_eq(out, id);
	free(out);
	snprintf(cmd, sizeof(cmd), "%s/faultline silence query -q alertname=Other --redis %s",
		 test_out_dir(), redis.url);
	out = run(cmd);
	cr_expect_str_eq(out, "", "a filter that does not match listed it");
	free(out);
	/* update keeps the id and moves the end */
	snprintf(cmd, sizeof(cmd), "%s/faultline silence update %s --end 2099-01-01T00:00:00Z "
		 "--redis %s", test_out_dir(), id, redis.url);
	out = run(cmd);
	cr_expect_str_eq(out, id);
	free(out);
	n = silence_load(c, &all, err, sizeof(err));
	cr_assert_eq(n, 1);
	cr_expect_eq(all[0].ends_ms, 4070908800000ULL);
	silence_free_all(all, n);
	/* expired: out of query, into query --expired */
	snprintf(cmd, sizeof(cmd), "%s/faultline silence expire %s --redis %s && %s/faultline "
		 "silence query -q --expired --redis %s", test_out_dir(), id, redis.url,
		 test_out_dir(), redis.url);
	out = run(cmd);
	cr_expect_str_eq(out, id);
	free(out);
	/* what amtool refuses, faultline refuses */
	snprintf(cmd, sizeof(cmd), "%s/faultline silence add 'rack=\"open' --redis %s 2>&1; "
		 "echo rc=$?", test_out_dir(), redis.url);
	out = run(cmd);
	cr_expect(strstr(out, "never closed") && strstr(out, "rc=2"), "%s", out);
	free(out);
	free(id);
	conn_close(c);
}

Test(routing, silence_query_filter_is_alertmanagers)
{
	struct silence s = { 0 };
	struct matcher f[2];
	char err[300];

	cr_assert_eq(matcher_parse(&s.m[0], "rack=~\"r1.*\"", err, sizeof(err)), 0);
	cr_assert_eq(matcher_parse(&s.m[1], "team=db", err, sizeof(err)), 0);
	s.nm = 2;
	cr_assert_eq(matchers_parse(f, 2, "team=db", err, sizeof(err)), 1);
	cr_expect(silence_matches_filter(&s, f, 1));
	matcher_free(&f[0]);
	cr_assert_eq(matchers_parse(f, 2, "team=~d.*,rack=~\"r1\\\\.\\\\*\"", err, sizeof(err)), 2,
		     "%s", err);
	cr_expect(silence_matches_filter(&s, f, 2), "the filter matches the matcher's value text");
	matcher_free(&f[0]);
	matcher_free(&f[1]);
	cr_assert_eq(matchers_parse(f, 2, "host=\"\"", err, sizeof(err)), 1);
	cr_expect(silence_matches_filter(&s, f, 1), "an empty value: no host matcher is fine");
	matcher_free(&f[0]);
	cr_assert_eq(matchers_parse(f, 2, "team!=\"\"", err, sizeof(err)), 1);
	cr_expect(silence_matches_filter(&s, f, 1), "team!=\"\": it has a team matcher");
	matcher_free(&f[0]);
	cr_assert_eq(matchers_parse(f, 2, "team=web", err, sizeof(err)), 1);
	cr_expect(!silence_matches_filter(&s, f, 1));
	matcher_free(&f[0]);
	matcher_free(&s.m[0]);
	matcher_free(&s.m[1]);
}

/* ---- SIGHUP --------------------------------------------------------------- */

static void write_route_to(const char *path, const char *where, const char *extra)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f, "route:\n  receiver: r\n  group_by: [alertname]\n  group_wait: 500ms\n"
		"  group_interval: 1s\n%s"
		"receivers:\n  - name: r\n    webhook_configs: [{url: 'http://127.0.0.1:%d/%s'}]\n",
		extra, rx.port, where);
	fclose(f);
}

Test(routing, sighup_reads_the_config_again_and_a_bad_one_keeps_the_old, .init = fan_setup,
     .fini = fan_teardown, .timeout = 60)
{
	char path[300], log[300], bin[256], *said;
	struct conn *c = test_redis_connect(&redis);
	int status;

	snprintf(path, sizeof(path), "%s/alertmanager.yml", redis.dir);
	snprintf(log, sizeof(log), "%s/alerter.log", redis.dir);
	write_route_to(path, "one", "");
	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	alerter_pid = fork();
	if (alerter_pid == 0) {
		cr_assert_not_null(freopen(log, "w", stderr));
		execl(bin, bin, "--config", path, "--redis", redis.url, (char *)NULL);
		_exit(127);
	}
	sleep(1);
	emit(c, "b1b1b1b1b1b1b1b1", "firing", ",\"job\":\"first\"");
	for (int i = 0; i < 100 && !to_path("/one", "b1b1b1b1b1b1b1b1"); i++)
		usleep(100000);
	cr_assert_eq(to_path("/one", "b1b1b1b1b1b1b1b1"), 1);
	/* a broken file: said, and the running config stays */
	write_route_to(path, "two", "  routes: [{receiver: nobody}]\n");
	kill(alerter_pid, SIGHUP);
	sleep(1);
	cr_assert_eq(waitpid(alerter_pid, &status, WNOHANG), 0, "the alerter died of a bad file");
	emit(c, "b2b2b2b2b2b2b2b2", "firing", ",\"job\":\"second\"");
	for (int i = 0; i < 100 && !to_path("/one", "b2b2b2b2b2b2b2b2"); i++)
		usleep(100000);
	cr_expect_eq(to_path("/one", "b2b2b2b2b2b2b2b2"), 1, "the old config was not kept");
	/* a good one: new alerts go where it says */
	write_route_to(path, "two", "");
	kill(alerter_pid, SIGHUP);
	sleep(1);
	emit(c, "b3b3b3b3b3b3b3b3", "firing", ",\"job\":\"third\"");
	for (int i = 0; i < 100 && !to_path("/two", "b3b3b3b3b3b3b3b3"); i++)
		usleep(100000);
	cr_expect_geq(to_path("/two", "b3b3b3b3b3b3b3b3"), 1, "the new config was not taken");
	for (int i = 0; i < 50 && test_alerts_pending(c, NULL) != 0; i++)
		usleep(100000);
	cr_expect_eq(test_alerts_pending(c, NULL), 0, "entries left pending across the reload");
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "cat %s", log);
	said = run(cmd);
	cr_expect(strstr(said, "SIGHUP: ") && strstr(said, "alertmanager.yml:") &&
		  strstr(said, "'nobody' is not one of the receivers") &&
		  strstr(said, "keeping the running config"), "the log does not say what was "
		  "wrong where: %s", said);
	if (getenv("FL_TEST_SHOW_LOG"))
		fprintf(stderr, "%s\n", said);
	free(said);
	conn_close(c);
}
