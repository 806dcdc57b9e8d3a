/*
 * test_mute.c - what mutes a notification, as Alertmanager mutes it:
 * time intervals (Alertmanager's periods, in a zone with summer time, the
 * days counted from a month's end, the errors at their position) and
 * inhibit rules (source, target, equal, the two-sided rule), then a real
 * alerter: a rack's page mutes its hosts' warnings and only theirs, across
 * the order they arrive in, and they go out once the rack resolves; a
 * route's mute and active intervals decide which receivers hear an alert.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "alerter/alerter.h"
#include "alerter/inhibit.h"
#include "alerter/route.h"
#include "alerter/time_interval.h"
#include "core/timeutil.h"
#include "store/alert_index.h"
#include "store/conn.h"
#include "tests/helpers.h"
#include "tests/receiver.h"

static time_t utc(int y, int mon, int d, int h, int min)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mon - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = min };

	return timegm(&tm);
}

static void parse_ok(struct alerter_config *cfg, const char *yaml)
{
	char err[600] = "";

	cr_assert_eq(alerter_config_parse(cfg, "am.yml", yaml, strlen(yaml), err, sizeof(err)), 0,
		     "%s", err);
}

/* ---- time intervals ------------------------------------------------------- */

static const char intervals_yaml[] =
	"time_intervals:\n"
	"  - name: office\n"
	"    time_intervals:\n"
	"      - weekdays: ['Monday:friday']\n"
	"        times: [{start_time: '09:00', end_time: '17:00'}]\n"
	"        location: Europe/Berlin\n"
	"  - name: last-week\n"
	"    time_intervals:\n"
	"      - days_of_month: ['-7:-1']\n"
	"mute_time_intervals:\n"
	"  - name: q1-2027\n"
	"    time_intervals:\n"
	"      - months: ['january:3']\n"
	"        years: ['2027']\n"
	"      - days_of_month: ['31']\n"
	"        months: [april]\n"
	"route:\n"
	"  receiver: a\n"
	"  routes:\n"
	"    - receiver: a\n"
	"      mute_time_intervals: [last-week]\n"
	"      active_time_intervals: [office]\n"
	"receivers: [{name: a}]\n";

Test(mute, time_intervals_hold_when_alertmanager_says)
{
	struct alerter_config cfg;
	const struct time_interval *office, *last, *q1;
	const struct route *child;
	int outside;

	parse_ok(&cfg, intervals_yaml);
	cr_assert_eq(cfg.ntime_intervals, 3, "time_intervals and mute_time_intervals share names");
	office = &cfg.time_intervals[time_interval_find(cfg.time_intervals, 3, "office")];
	last = &cfg.time_intervals[time_interval_find(cfg.time_intervals, 3, "last-week")];
	q1 = &cfg.time_intervals[time_interval_find(cfg.time_intervals, 3, "q1-2027")];
	/* Friday 4 Dec 2026: 10:00 UTC is 11:00 in Berlin (CET), 16:30 UTC is 17:30 */
	cr_expect(time_interval_holds(office, utc(2026, 12, 4, 10, 0)));
	cr_expect(!time_interval_holds(office, utc(2026, 12, 4, 16, 30)), "17:30 CET is after 17:00");
	cr_expect(time_interval_holds(office, utc(2026, 12, 4, 15, 59)));
	cr_expect(!time_interval_holds(office, utc(2026, 12, 4, 16, 0)), "the end is excluded");
	cr_expect(!time_interval_holds(office, utc(2026, 12, 5, 10, 0)), "a Saturday");
	/* summer time: 07:30 UTC is 09:30 CEST in July, 08:30 CET in January */
	cr_expect(time_interval_holds(office, utc(2026, 7, 1, 7, 30)), "CEST not applied");
	cr_expect(!time_interval_holds(office, utc(2027, 1, 6, 7, 30)));
	/* the last seven days of a 31-day month and of February 2027 (28 days) */
	cr_expect(time_interval_holds(last, utc(2026, 12, 25, 0, 0)));
	cr_expect(!time_interval_holds(last, utc(2026, 12, 24, 23, 59)));
	cr_expect(time_interval_holds(last, utc(2027, 2, 22, 0, 0)));
	cr_expect(!time_interval_holds(last, utc(2027, 2, 21, 12, 0)));
	/* months by name and number; a period's parts all hold, any period does */
	cr_expect(time_interval_holds(q1, utc(2027, 3, 31, 23, 59)));
	cr_expect(!time_interval_holds(q1, utc(2027, 4, 1, 0, 0)));
	cr_expect(!time_interval_holds(q1, utc(2026, 2, 1, 0, 0)), "2026 is not 2027");
	cr_expect(!time_interval_holds(q1, utc(2027, 4, 30, 12, 0)), "April has no 31st day");
	/* the route: muted in the last week, and outside office hours */
	child = &cfg.root.child[0];
	cr_expect_null(route_time_muted(child, cfg.time_intervals, utc(2026, 12, 4, 10, 0),
					&outside));
	cr_expect_str_eq(route_time_muted(child, cfg.time_intervals, utc(2026, 12, 4, 16, 30),
					  &outside), "office");
	cr_expect_eq(outside, 1);
	cr_expect_str_eq(route_time_muted(child, cfg.time_intervals, utc(2026, 12, 28, 10, 0),
					  &outside), "last-week");
	cr_expect_eq(outside, 0);
	cr_expect_null(route_time_muted(&cfg.root, cfg.time_intervals, utc(2026, 12, 28, 10, 0),
					&outside), "the root has no intervals");
	alerter_config_free(&cfg);
}

Test(mute, a_bad_time_interval_is_refused_where_it_is_written)
{
	static const struct {
		const char *body, *where, *says;
	} cases[] = {
		{ "      - days_of_month: ['0']\n", "am.yml:4:", "out of range" },
		{ "      - days_of_month: ['5:3']\n", "am.yml:4:", "starts after it ends" },
		{ "      - weekdays: [funday]\n", "am.yml:4:", "'funday' is not a weekday" },
		{ "      - months: ['13']\n", "am.yml:4:", "out of range" },
		{ "      - times: [{start_time: '10:00', end_time: '09:00'}]\n", "am.yml:4:",
		  "not after start_time" },
		{ "      - times: [{start_time: '25:00', end_time: '26:00'}]\n", "am.yml:4:",
		  "start_time" },
		{ "      - location: Mars/Olympus\n", "am.yml:4:", "'Mars/Olympus' is not a time "
		  "zone" },
		{ "      - hours: ['1']\n", "am.yml:4:", "hours" },
	};
	struct alerter_config cfg;
	char yaml[600], err[600];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(yaml, sizeof(yaml), "time_intervals:\n  - name: x\n    time_intervals:\n"
			 "%sroute: {receiver: a}\nreceivers: [{name: a}]\n", cases[i].body);
		err[0] = 0;
		cr_expect_neq(alerter_config_parse(&cfg, "am.yml", yaml, strlen(yaml), err,
						   sizeof(err)), 0, "case %zu taken:\n%s", i, yaml);
		cr_expect(strstr(err, cases[i].where) && strstr(err, cases[i].says),
			  "case %zu: expected %s ... %s, got: %s", i, cases[i].where, cases[i].says,
			  err);
		alerter_config_free(&cfg);
	}
	/* names: defined twice (across both sections), unknown, given to the root */
	static const struct {
		const char *yaml, *where, *says;
	} more[] = {
		{ "time_intervals: [{name: n}]\nmute_time_intervals: [{name: n}]\n"
		  "route: {receiver: a}\nreceivers: [{name: a}]\n", "am.yml:2:", "defined twice" },
		{ "route:\n  receiver: a\n  routes:\n    - active_time_intervals: [nope]\n"
		  "receivers: [{name: a}]\n", "am.yml:4:", "'nope' is not one of the time_intervals" },
		{ "time_intervals: [{name: n}]\nroute:\n  receiver: a\n"
		  "  mute_time_intervals: [n]\nreceivers: [{name: a}]\n", "am.yml:4:",
		  "the root route takes none" },
	};

	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
		err[0] = 0;
		cr_expect_neq(alerter_config_parse(&cfg, "am.yml", more[i].yaml,
						   strlen(more[i].yaml), err, sizeof(err)), 0,
			      "names case %zu taken", i);
		cr_expect(strstr(err, more[i].where) && strstr(err, more[i].says),
			  "names case %zu: expected %s ... %s, got: %s", i, more[i].where,
			  more[i].says, err);
		alerter_config_free(&cfg);
	}
}

/* ---- inhibit rules -------------------------------------------------------- */

static void member(struct alert_group_member *m, const char *fp, int firing, const char *labels)
{
	char json[1024], err[300];

	snprintf(json, sizeof(json), "{\"status\":\"%s\",\"fingerprint\":\"%s\",\"labels\":{%s},"
		 "\"annotations\":{},\"startsAt\":\"2026-12-04T10:00:00Z\"}",
		 firing ? "firing" : "resolved", fp, labels);
	memset(m, 0, sizeof(*m));
	cr_assert_eq(alert_parse(&m->a, json, strlen(json), err, sizeof(err)), 0, "%s", err);
}

static const char inhibit_yaml[] =
	"route: {receiver: a}\nreceivers: [{name: a}]\n"
	"inhibit_rules:\n"
	"  - source_matchers: [alertname=RackDown]\n"
	"    target_matchers: ['severity=~\"warning|info\"']\n"
	"    equal: [rack]\n"
	"  - source_match: {severity: page}\n"
	"    target_match_re: {severity: 'warn.*'}\n"
	"    equal: [alertname, host]\n"
	"  - source_matchers: [team=db]\n"
	"    target_matchers: [team=db]\n"
	"    equal: [cluster]\n";

Test(mute, inhibit_rules_mute_as_alertmanager_mutes)
{
	struct alerter_config cfg;
	struct alert_group_member src[5], t;
	int rule = -1;

	parse_ok(&cfg, inhibit_yaml);
	cr_assert_eq(cfg.ninhibit_rules, 3);
	member(&src[0], "0000000000000001", 1, "\"alertname\":\"RackDown\",\"rack\":\"r1\","
	       "\"severity\":\"page\"");
	member(&src[1], "0000000000000002", 1, "\"alertname\":\"HostSlow\",\"host\":\"h1\","
	       "\"severity\":\"page\"");
	member(&src[2], "0000000000000003", 0, "\"alertname\":\"RackDown\",\"rack\":\"r3\"");
	member(&src[3], "0000000000000004", 1, "\"alertname\":\"Lag\",\"team\":\"db\","
	       "\"cluster\":\"c1\"");
	member(&src[4], "0000000000000005", 1, "\"alertname\":\"RackDown\"");

	/* a host's warning in the rack that is down: muted by the rack's page */
	member(&t, "00000000000000a1", 1, "\"alertname\":\"DriveWear\",\"rack\":\"r1\","
	       "\"host\":\"h9\",\"severity\":\"warning\"");
	cr_expect_eq(inhibit_source(cfg.inhibit_rules, 3, src, 5, &t.a, &rule), 0);
	cr_expect_eq(rule, 0);
	alert_free(&t.a);
	/* another rack: not muted; a rack whose RackDown resolved: not muted */
	member(&t, "00000000000000a2", 1, "\"alertname\":\"DriveWear\",\"rack\":\"r2\","
	       "\"severity\":\"warning\"");
	cr_expect_eq(inhibit_source(cfg.inhibit_rules, 3, src, 5, &t.a, &rule), -1);
	alert_free(&t.a);
	member(&t, "00000000000000a3", 1, "\"alertname\":\"DriveWear\",\"rack\":\"r3\","
	       "\"severity\":\"warning\"");
	cr_expect_eq(inhibit_source(cfg.inhibit_rules, 3, src, 5, &t.a, &rule), -1,
		     "a resolved source muted");
	alert_free(&t.a);
	/* a label both lack is equal: the rack-less RackDown mutes rack-less warnings */
	member(&t, "00000000000000a4", 1, "\"alertname\":\"Fan\",\"severity\":\"info\"");
	cr_expect_eq(inhibit_source(cfg.inhibit_rules, 3, src, 5, &t.a, &rule), 4);
	alert_free(&t.a);
	/* severity page mutes the same alert's warning on the same host only */
	member(&t, "00000000000000a5", 1, "\"alertname\":\"HostSlow\",\"host\":\"h1\","
	       "\"severity\":\"warning\",\"rack\":\"r7\"");
	cr_expect_eq(inhibit_source(cfg.inhibit_rules, 3, src, 5, &t.a, &rule), 1);
	cr_expect_eq(rule, 1);
	alert_free(&t.a);
	member(&t, "00000000000000a6", 1, "\"alertname\":\"HostSlow\",\"host\":\"h2\","
	       "\"severity\":\"warning\",\"rack\":\"r7\"");
	cr_expect_eq(inhibit_source(cfg.inhibit_rules, 3, src, 5, &t.a, &rule), -1);
	alert_free(&t.a);
	/* two-sided: alerts matching source and target do not mute one another */
	member(&t, "00000000000000a7", 1, "\"alertname\":\"Lag2\",\"team\":\"db\","
	       "\"cluster\":\"c1\"");
	cr_expect_eq(inhibit_source(cfg.inhibit_rules, 3, src, 5, &t.a, &rule), -1,
		     "an alert that is source and target was muted by its peer");
	alert_free(&t.a);
	/* a critical alert is no rule's target */
	member(&t, "00000000000000a8", 1, "\"alertname\":\"DriveWear\",\"rack\":\"r1\","
	       "\"severity\":\"critical\"");
	cr_expect(!inhibit_may_target(cfg.inhibit_rules, 3, &t.a));
	alert_free(&t.a);
	for (int i = 0; i < 5; i++)
		alert_free(&src[i].a);
	alerter_config_free(&cfg);
}

Test(mute, a_bad_inhibit_rule_is_refused_where_it_is_written)
{
	static const struct {
		const char *rule, *where, *says;
	} cases[] = {
		{ "  - target_matchers: [a=b]\n", "am.yml:4:", "needs source_matchers" },
		{ "  - source_matchers: [a=b]\n    equal: [rack]\n", "am.yml:4:",
		  "needs target_matchers" },
		{ "  - source_matchers: [a=b]\n    target_matchers: ['c=~\"(\"']\n", "am.yml:5:",
		  "c=~" },
		{ "  - source_matchers: [a=b]\n    target_matchers: [c=d]\n    equal: ['1x']\n",
		  "am.yml:6:", "'1x' is not a label name" },
		{ "  - source_matchers: [a=b]\n    target_matchers: [c=d]\n    eqaul: [x]\n",
		  "am.yml:6:", "eqaul" },
	};
	struct alerter_config cfg;
	char yaml[600], err[600];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(yaml, sizeof(yaml), "route: {receiver: a}\nreceivers: [{name: a}]\n"
			 "inhibit_rules:\n%s", cases[i].rule);
		err[0] = 0;
		cr_expect_neq(alerter_config_parse(&cfg, "am.yml", yaml, strlen(yaml), err,
						   sizeof(err)), 0, "case %zu taken:\n%s", i, yaml);
		cr_expect(strstr(err, cases[i].where) && strstr(err, cases[i].says),
			  "case %zu: expected %s ... %s, got: %s", i, cases[i].where, cases[i].says,
			  err);
		alerter_config_free(&cfg);
	}
}

/* ---- a real alerter ------------------------------------------------------- */

static struct test_redis redis;
static pid_t alerter_pid;

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
	rx_start();
}

static void teardown(void)
{
	if (alerter_pid > 0) {
		kill(alerter_pid, SIGTERM);
		waitpid(alerter_pid, NULL, 0);
	}
	alerter_pid = 0;
	rx_stop();
	test_redis_destroy(&redis);
}

static void start_alerter(const char *config)
{
	char path[300], bin[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/alertmanager.yml", redis.dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(config, f);
	fclose(f);
	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	alerter_pid = fork();
	if (alerter_pid == 0) {
		const char *level = getenv("FL_ALERTER_LOG");

		execl(bin, bin, "--config", path, "--redis", redis.url, "--log-level",
		      level ? level : "warn", (char *)NULL);
		_exit(127);
	}
}

/* The "what detail" of every fl:notifications record, one per line (malloc'd). */
static char *records(struct conn *c)
{
	redisReply *r = conn_commandf(c, NULL, "XRANGE fl:notifications - +");
	size_t cap = 1 << 16, len = 0;
	char *out = calloc(1, cap);

	for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
		const redisReply *kv = r->element[i]->element[1];
		const char *what = "", *detail = "";

		for (size_t k = 0; k + 1 < kv->elements; k += 2) {
			if (!strcmp(kv->element[k]->str, "what"))
				what = kv->element[k + 1]->str;
			if (!strcmp(kv->element[k]->str, "detail"))
				detail = kv->element[k + 1]->str;
		}
		len += (size_t)snprintf(out + len, cap - len, "%s %s\n", what, detail);
		if (len >= cap)
			len = cap - 1;
	}
	if (r)
		freeReplyObject(r);
	return out;
}

/* An alerter grouping by rack whose racks' RackDown pages inhibit their warnings. */
static void start_rack_inhibiting_alerter(void)
{
	char yaml[1200];

	snprintf(yaml, sizeof(yaml),
		 "route:\n  receiver: r\n  group_by: [alertname, rack]\n  group_wait: 1s\n"
		 "  group_interval: 1s\n"
		 "receivers:\n  - name: r\n    webhook_configs: [{url: 'http://127.0.0.1:%d/'}]\n"
		 "inhibit_rules:\n"
		 "  - source_matchers: [alertname=RackDown]\n"
		 "    target_matchers: [severity=warning]\n"
		 "    equal: [rack]\n", rx.port);
	start_alerter(yaml);
}

Test(mute, a_racks_page_mutes_its_hosts_warnings_until_it_resolves, .init = setup,
     .fini = teardown, .timeout = 90)
{
	char *rec;
	struct conn *c = test_redis_connect(&redis);
	struct alert_index ix;
	char err[300];

	start_rack_inhibiting_alerter();
	sleep(1);
	/* the hosts' warnings first, the rack's page a moment later (within group_wait) */
	test_emit_alert(c, "00000000000000b1", "firing", "\"alertname\":\"DriveWear\","
			"\"rack\":\"r1\",\"host\":\"h1\",\"severity\":\"warning\"");
	test_emit_alert(c, "00000000000000b2", "firing", "\"alertname\":\"DriveWear\","
			"\"rack\":\"r2\",\"host\":\"h7\",\"severity\":\"warning\"");
	usleep(200000);
	test_emit_alert(c, "00000000000000b0", "firing", "\"alertname\":\"RackDown\","
			"\"rack\":\"r1\",\"severity\":\"page\"");
	for (int i = 0; i < 150 && !(rx_carried("00000000000000b0", "firing", NULL) &&
				     rx_carried("00000000000000b2", "firing", NULL)); i++)
		usleep(100000);
	cr_assert_eq(rx_carried("00000000000000b0", "firing", NULL), 1, "the rack's page");
	cr_assert_eq(rx_carried("00000000000000b2", "firing", NULL), 1,
		     "a warning in another rack was held back");
	/* the muted warning stays muted while the rack is down, looked at every interval */
	sleep(3);
	cr_expect_eq(rx_carried("00000000000000b1", NULL, NULL), 0,
		     "a warning in the rack that is down was sent");
	rec = records(c);
	cr_expect(strstr(rec, "inhibited 00000000000000b1 DriveWear firing inhibited by "
			 "00000000000000b0 RackDown"), "no record of the inhibition:\n%s", rec);
	free(rec);
	cr_expect_eq(test_alerts_pending(c, NULL), 0, "a muted alert's entry stays pending");
	/* the fleet's index holds the three firing alerts, whoever's group they are in */
	cr_assert_eq(alert_index_load(c, &ix, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(ix.n, 3);
	cr_expect_eq(ix.bad, 0);
	alert_index_free(&ix);
	/* the rack resolves: the host's warning goes out at its next look */
	test_emit_alert(c, "00000000000000b0", "resolved", "\"alertname\":\"RackDown\","
			"\"rack\":\"r1\",\"severity\":\"page\"");
	for (int i = 0; i < 100 && !rx_carried("00000000000000b1", "firing", NULL); i++)
		usleep(100000);
	cr_expect_eq(rx_carried("00000000000000b1", "firing", NULL), 1,
		     "the warning was not sent once its source resolved");
	cr_assert_eq(alert_index_load(c, &ix, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(ix.n, 2, "the resolved rack is still counted as firing");
	cr_expect_eq(ix.resolved, 1);
	alert_index_free(&ix);
	conn_close(c);
}

Test(mute, a_routes_time_intervals_decide_which_receivers_hear_it, .init = setup,
     .fini = teardown, .timeout = 60)
{
	char yaml[1600], *rec;
	struct conn *c = test_redis_connect(&redis);

	snprintf(yaml, sizeof(yaml),
		 "time_intervals:\n"
		 "  - name: always\n    time_intervals: [{years: ['1970:9999']}]\n"
		 "  - name: never\n    time_intervals: [{years: ['1999']}]\n"
		 "route:\n  receiver: r\n  group_by: [alertname]\n  group_wait: 500ms\n"
		 "  group_interval: 1s\n  routes:\n"
		 "    - {receiver: muted, mute_time_intervals: [always], continue: true}\n"
		 "    - {receiver: inactive, active_time_intervals: [never], continue: true}\n"
		 "    - {receiver: active, active_time_intervals: [never, always], "
		 "mute_time_intervals: [never]}\n"
		 "receivers:\n"
		 "  - {name: r, webhook_configs: [{url: 'http://127.0.0.1:%d/r'}]}\n"
		 "  - {name: muted, webhook_configs: [{url: 'http://127.0.0.1:%d/muted'}]}\n"
		 "  - {name: inactive, webhook_configs: [{url: 'http://127.0.0.1:%d/inactive'}]}\n"
		 "  - {name: active, webhook_configs: [{url: 'http://127.0.0.1:%d/active'}]}\n",
		 rx.port, rx.port, rx.port, rx.port);
	start_alerter(yaml);
	sleep(1);
	test_emit_alert(c, "00000000000000c1", "firing", "\"alertname\":\"Fan\"");
	cr_assert_geq(wait_requests(1, 15), 1);
	sleep(3);
	cr_expect_eq(rx_count(), 1, "only the active route's receiver hears it, got %d",
		     rx_count());
	cr_expect(!strncmp(rx.req[0].headers, "POST /active ", 13), "%.40s", rx.req[0].headers);
	rec = records(c);
	cr_expect(strstr(rec, "muted 1 alert(s) not notified: the route is in its mute time "
			 "interval 'always'"), "%s", rec);
	cr_expect(strstr(rec, "muted 1 alert(s) not notified: the route is outside its active "
			 "time interval 'never'"), "%s", rec);
	free(rec);
	cr_expect_eq(test_alerts_pending(c, NULL), 0);
	conn_close(c);
}

/*
 * An alerter upgraded from before the fleet's index: its groups hold alerts
 * firing since, which no new event will bring.  The first start fills the
 * index from them, newest record per alert, once.
 */
Test(mute, the_index_is_filled_from_the_groups_of_an_older_alerter, .init = setup,
     .fini = teardown, .timeout = 30)
{
	struct conn *c = test_redis_connect(&redis);
	enum alert_group_verdict verdict;
	struct alert_index ix;
	char err[300];
	int unsent, groups, taken;
	static const char fire[] = "{\"status\":\"firing\",\"fingerprint\":\"00000000000000e1\","
				   "\"labels\":{\"alertname\":\"RackDown\",\"rack\":\"r1\"},"
				   "\"annotations\":{},\"startsAt\":\"2026-12-04T10:00:00Z\"}";
	static const char other[] = "{\"status\":\"firing\",\"fingerprint\":\"00000000000000e2\","
				    "\"labels\":{\"alertname\":\"Fan\"},"
				    "\"annotations\":{},\"startsAt\":\"2026-12-04T10:00:00Z\"}";
	static const char gone[] = "{\"status\":\"resolved\",\"fingerprint\":\"00000000000000e2\","
				   "\"labels\":{\"alertname\":\"Fan\"},"
				   "\"annotations\":{},\"startsAt\":\"2026-12-04T10:00:00Z\"}";

	/* two groups hold RackDown (two receivers); Fan fired and resolved */
	cr_assert_eq(alert_group_take(c, "aaaa", "00000000000000e1", "1000-0", 1, 1, fire,
				      strlen(fire), &verdict, &unsent, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(alert_group_take(c, "bbbb", "00000000000000e1", "1000-0", 1, 1, fire,
				      strlen(fire), &verdict, &unsent, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(alert_group_take(c, "bbbb", "00000000000000e2", "1001-0", 1, 1, other,
				      strlen(other), &verdict, &unsent, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(alert_group_take(c, "bbbb", "00000000000000e2", "1002-0", 0, 1, gone,
				      strlen(gone), &verdict, &unsent, err, sizeof(err)), 0, "%s", err);
	/* as an older alerter left it: the groups, no index */
	cr_assert_eq(test_sh("redis-cli -s %s DEL '{fl:alerts}:active' >/dev/null", redis.sock),
		     0);
	cr_assert_eq(alert_index_backfill(c, &groups, &taken, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(groups, 2);
	cr_expect_eq(taken, 3, "RackDown from both groups and Fan's newest record");
	cr_assert_eq(alert_index_load(c, &ix, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(ix.n, 1, "only RackDown fires");
	cr_expect_str_eq(ix.n ? ix.m[0].a.fingerprint : "", "00000000000000e1");
	cr_expect_eq(ix.resolved, 1, "Fan's resolution is known");
	alert_index_free(&ix);
	/* once: a second run reads no group */
	cr_assert_eq(alert_index_backfill(c, &groups, &taken, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(groups, 0);
	conn_close(c);
}

/*
 * An alert muted when it came (its entry acknowledged: it waits in its
 * group's state, not in the stream) survives the alerter's restart: the
 * next alerter takes its group up and sends it once nothing mutes it,
 * though no new event of it comes.
 */
Test(mute, a_muted_alert_is_sent_after_a_restart_once_its_mute_ends, .init = setup,
     .fini = teardown, .timeout = 90)
{
	char *rec = NULL;
	struct conn *c = test_redis_connect(&redis);

	start_rack_inhibiting_alerter();
	sleep(1);
	test_emit_alert(c, "00000000000000b0", "firing", "\"alertname\":\"RackDown\","
			"\"rack\":\"r1\",\"severity\":\"page\"");
	test_emit_alert(c, "00000000000000b1", "firing", "\"alertname\":\"DriveWear\","
			"\"rack\":\"r1\",\"host\":\"h1\",\"severity\":\"warning\"");
	for (int i = 0; i < 150; i++) {
		free(rec);
		rec = records(c);
		if (strstr(rec, "inhibited 00000000000000b1") &&
		    rx_carried("00000000000000b0", "firing", NULL))
			break;
		usleep(100000);
	}
	cr_assert(strstr(rec, "inhibited 00000000000000b1"), "the warning was not muted:\n%s",
		  rec);
	free(rec);
	cr_assert_eq(test_alerts_pending(c, NULL), 0, "the muted alert's entry is still pending");
	/* the alerter stops; the rack resolves while none runs */
	kill(alerter_pid, SIGTERM);
	waitpid(alerter_pid, NULL, 0);
	alerter_pid = 0;
	test_emit_alert(c, "00000000000000b0", "resolved", "\"alertname\":\"RackDown\","
			"\"rack\":\"r1\",\"severity\":\"page\"");
	start_rack_inhibiting_alerter();
	for (int i = 0; i < 150 && !rx_carried("00000000000000b1", "firing", NULL); i++)
		usleep(100000);
	cr_assert_eq(rx_carried("00000000000000b1", "firing", NULL), 1,
		     "the warning muted before the restart was not sent once its mute ended");
	sleep(2);
	cr_expect_eq(rx_carried("00000000000000b1", "firing", NULL), 1, "sent more than once");
}

/*
 * A firing alert notified before the alerter restarts is repeated by the
 * next one at its repeat_interval, counted from when it was notified,
 * with no new event of it (it used to wait for the alert's next change).
 */
Test(mute, repeats_go_on_after_a_restart, .init = setup, .fini = teardown, .timeout = 90)
{
	char yaml[600];
	struct conn *c = test_redis_connect(&redis);
	uint64_t first_ns, second_ns;

	snprintf(yaml, sizeof(yaml),
		 "route:\n  receiver: r\n  group_by: [alertname]\n  group_wait: 0s\n"
		 "  group_interval: 1s\n  repeat_interval: 4s\n"
		 "receivers:\n  - name: r\n    webhook_configs: [{url: 'http://127.0.0.1:%d/'}]\n",
		 rx.port);
	start_alerter(yaml);
	sleep(1);
	test_emit_alert(c, "00000000000000c1", "firing", "\"alertname\":\"DiskFull\","
			"\"host\":\"h1\",\"severity\":\"page\"");
	for (int i = 0; i < 150 && !rx_carried("00000000000000c1", "firing", NULL); i++)
		usleep(50000);
	first_ns = time_mono_ns();
	cr_assert_eq(rx_carried("00000000000000c1", "firing", NULL), 1, "never sent");
	/* the alerter restarts at once; nothing new about the alert comes */
	kill(alerter_pid, SIGTERM);
	waitpid(alerter_pid, NULL, 0);
	alerter_pid = 0;
	cr_assert_eq(test_alerts_pending(c, NULL), 0, "its entry is still pending");
	start_alerter(yaml);
	for (int i = 0; i < 200 && rx_carried("00000000000000c1", "firing", NULL) < 2; i++)
		usleep(50000);
	second_ns = time_mono_ns();
	cr_assert_eq(rx_carried("00000000000000c1", "firing", NULL), 2,
		     "the restarted alerter never repeated the firing alert");
	/* at its repeat_interval after the first notification, not at once */
	cr_assert_geq(second_ns - first_ns, 3 * NSEC_PER_SEC, "repeated %.1f s after it was sent",
		      (double)(second_ns - first_ns) / 1e9);
	/* and it goes on */
	for (int i = 0; i < 200 && rx_carried("00000000000000c1", "firing", NULL) < 3; i++)
		usleep(50000);
	cr_assert_eq(rx_carried("00000000000000c1", "firing", NULL), 3);
}
