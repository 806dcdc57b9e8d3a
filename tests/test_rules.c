/*
 * test_rules.c - rule files and the rules engine: positioned errors in
 * rule files; a simulated fleet (hosts in racks under switches) written
 * to a real Redis: errors on 5 of 8 hosts behind one switch give exactly
 * one switch alert and no host alerts; the same number of errors spread
 * one per rack gives host alerts only; for / keep_firing_for / resolution;
 * a silent host.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rules/engine/engine.h"
#include "rules/lang/eval.h"
#include "rules/lang/expr.h"
#include "tests/helpers.h"
#include "rules/lang/rules.h"
#include "rules/ruletest/ruletest.h"
#include "store/conn.h"
#include "store/store.h"
#include "core/timeutil.h"

Test(rules, file_errors_are_positioned)
{
	static const struct {
		const char *yaml, *want;
	} bad[] = {
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: \"rate(faultline_tcp_in_csum_errors_total[1m) > 1\"\n",
		  "r.yaml:5:58: expr: expected ']'" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: tcp.nope > 1\n",
		  "r.yaml:5:15: expr: unknown metric 'tcp.nope'" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: faultline_tcp_in_segs_total > 1\n        for: soon\n",
		  "r.yaml:6:14: for: expected a duration" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: faultline_tcp_in_segs_total > 1\n        severty: page\n",
		  "r.yaml:6:18: severty: unknown key" },
		{ "groups:\n  - name: g\n    rules:\n      - expr: faultline_tcp_in_segs_total > 1\n",
		  "alert: every rule needs a name" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: faultline_tcp_in_segs_total > 1\n        evidence: [flames]\n",
		  "r.yaml:6:20: evidence: 'flames' is not one of" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: faultline_tcp_in_segs_total > 1\n        rollup: {min_hosts: 2}\n",
		  "rollup: needs by" },
		/* recording rules: a metric name of their own, their keys, their uses */
		{ "groups:\n  - name: g\n    rules:\n      - record: 1x\n        expr: faultline_tcp_in_segs_total\n",
		  "r.yaml:4:17: record: expected a metric name" },
		{ "groups:\n  - name: g\n    rules:\n      - record: faultline_tcp_in_segs_total\n        expr: faultline_tcp_in_segs_total\n",
		  "r.yaml:4:17: record: faultline_tcp_in_segs_total is a metric faultline already has" },
		{ "groups:\n  - name: g\n    rules:\n      - record: x:y\n        expr: faultline_tcp_in_segs_total\n        for: 1m\n",
		  "r.yaml:6:14: for: unknown key" },
		{ "groups:\n  - name: g\n    rules:\n      - record: x:y\n        alert: A\n        expr: faultline_tcp_in_segs_total\n",
		  "r.yaml:5:16: a rule is either alert: or record:" },
		{ "groups:\n  - name: g\n    rules:\n      - record: x:y\n        expr: faultline_tcp_in_segs_total\n      - record: x:y\n        expr: faultline_tcp_in_segs_total\n",
		  "r.yaml:6:17: record: x:y is recorded by another rule already" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: x:z > 1\n",
		  "r.yaml:5:15: expr: unknown metric 'x:z'" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: faultline_tcp_in_segs_total @ 1700000000 > 1\n",
		  "r.yaml:5:43: expr: '@ 1700000000' pins the selector to a fixed time" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: faultline_tcp_in_segs_total @ end() @ end() > 1\n",
		  "r.yaml:5:51: expr: unexpected '@'" },
		/* subqueries: a step, a function that takes one, a plain range only on a selector */
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: max_over_time(faultline_tcp_in_segs_total[10m:]) > 1\n",
		  "r.yaml:5:60: expr: a subquery needs its step" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: rate(sum(faultline_tcp_in_segs_total)[10m:1m]) > 1\n",
		  "r.yaml:5:20: expr: rate over a subquery is not supported" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: max_over_time(faultline_tcp_in_segs_total[1m:10m]) > 1\n",
		  "r.yaml:5:59: expr: the step (10m) is longer than the range" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: max_over_time(sum(faultline_tcp_in_segs_total)[5m]) > 1\n",
		  "expected ':STEP' in a subquery" },
		{ "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: max_over_time(max_over_time(faultline_tcp_in_segs_total[1m:10s])[5m:1m]) > 1\n",
		  "r.yaml:5:29: expr: a subquery inside a subquery is not supported" },
		{ "groups: 3\n", "groups: expected a list" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ruleset rs = { 0 };
		char err[512] = "";

		cr_assert_neq(rules_parse(&rs, "r.yaml", bad[i].yaml, strlen(bad[i].yaml), err,
					  sizeof(err)), 0, "accepted case %zu", i);
		cr_assert(strstr(err, bad[i].want), "case %zu: got %s", i, err);
		rules_free(&rs);
	}
	struct ruleset rs = { 0 };
	char err[512];

	cr_assert_eq(rules_load(&rs, "etc/rules/faultline.yaml", err, sizeof(err)), 0, "%s", err);
	rules_free(&rs);
	/* an alert may select what a later group records */
	{
		const char *ok = "groups:\n  - name: a\n    rules:\n      - alert: A\n"
				 "        expr: 'host:segs:rate1m > 1'\n  - name: b\n    rules:\n"
				 "      - record: host:segs:rate1m\n"
				 "        expr: rate(faultline_tcp_in_segs_total[1m])\n"
				 "        labels: {source: rec}\n";

		cr_assert_eq(rules_parse(&rs, "r.yaml", ok, strlen(ok), err, sizeof(err)), 0, "%s",
			     err);
		cr_assert_eq(rs.nrecords, 1);
		cr_assert(rs.groups[1].rules[0].record);
		rules_free(&rs);
	}
}

/*
 * An error inside a multi-line expression is reported where its character
 * was written, whatever the scalar's style: a literal block (|), a folded
 * one (>), a plain scalar over two lines, a quoted one, and a template in a
 * block annotation.  The expected position is found in the file itself
 * (the marker's line and column), not written down.
 */
Test(rules, errors_inside_multi_line_scalars_point_at_the_character)
{
	static const char *const files[] = {
		"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: |\n"
		"          sum by (host) (\n            rate(faultline_tcp_in_segs_total[1m])\n"
		"          ) > MARKER(3)\n        for: 1m\n",
		"groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: >-\n"
		"          sum by (host) (rate(faultline_tcp_in_segs_total[1m]))\n\n"
		"            > 1 and\n          MARKER(3)\n",
		"groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: sum by (host) (rate(faultline_tcp_in_segs_total[1m]))\n"
		"          > MARKER(1)\n",
		"groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: \"sum by (host) (rate(faultline_tcp_in_segs_total[1m]))\n"
		"          > MARKER(1)\"\n",
		"groups:\r\n  - name: g\r\n    rules:\r\n      - alert: A\r\n        expr: |\r\n"
		"          rate(faultline_tcp_in_segs_total[1m])\r\n          > MARKER(1)\r\n",
		"groups:\n  - name: g\n    rules:\n      - alert: A\n"
		"        expr: faultline_tcp_in_segs_total > 1\n        annotations:\n"
		"          summary: |\n            {{ $labels.host }} is slow\n"
		"            {{ MARKER }}\n",
	};

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct ruleset rs = { 0 };
		const char *at = strstr(files[i], "MARKER"), *p;
		char err[512] = "", want[64];
		int line = 1, col = 1;

		for (p = files[i]; p < at; p++) {
			if (*p == '\n') {
				line++;
				col = 1;
			} else if (*p != '\r') {
				col++;
			}
		}
		snprintf(want, sizeof(want), "r.yaml:%d:%d: ", line, col);
		cr_expect_neq(rules_parse(&rs, "r.yaml", files[i], strlen(files[i]), err,
					  sizeof(err)), 0, "case %zu accepted", i);
		cr_expect(!strncmp(err, want, strlen(want)), "case %zu: want %s..., got %s", i, want,
			  err);
		rules_free(&rs);
	}
}

Test(rules, annotation_templates)
{
	struct label l[2] = { { "device", "sda" }, { "host", "db-1" } };
	char out[128];

	rules_template("{{ $labels.host }}/{{$labels.device}} at {{ $value }}%", 91.5, l, 2, NULL, out,
		       sizeof(out));
	cr_assert_str_eq(out, "db-1/sda at 91.5%");
}

/* Prometheus' template functions render as Prometheus renders them. */
Test(rules, template_functions)
{
	static const struct {
		const char *tmpl;
		double value;
		const char *want;
	} cases[] = {
		{ "{{ $value | humanize }}", 1234567, "1.235M" },
		{ "{{ $value | humanize }}", 0.0025, "2.5m" },
		{ "{{ humanize $value }}", 0, "0" },
		{ "{{ $value | humanize1024 }}", 1048576, "1Mi" },
		{ "{{ $value | humanizeDuration }}", 93784, "1d 2h 3m 4s" },
		{ "{{ $value | humanizeDuration }}", 0.0125, "12.5ms" },
		{ "{{ $value | humanizePercentage }}", 0.256, "25.6%" },
		{ "{{ printf \"%.2f\" $value }}", 3.14159, "3.14" },
		{ "{{ $value | printf \"%5.1f%%\" }}", 42.04, " 42.0%" },
		{ "{{ printf \"%d\" $value }}", 7.9, "7" },
		{ "{{ .Labels.host | toUpper }} {{ title $labels.device }}", 0, "DB-1 Sda" },
		{ "{{- $value -}}", 2, "2" },
		/* "{{- " and " -}}" trim the white space beside them, as in Go */
		{ "x = \n  {{- $value -}}  \n%", 2, "x =2%" },
		{ "a {{ $value }} b", 2, "a 2 b" },
		/* control structures as Go's */
		{ "{{ if gt $value 1.0 }}big{{ else }}small{{ end }}", 2, "big" },
		{ "{{ if gt $value 1.0 }}big{{ else }}small{{ end }}", 0.5, "small" },
		{ "{{ if eq $labels.host \"db-1\" }}db{{ else if ge $value 3 }}hot{{ else }}-{{ end }}", 9, "db" },
		{ "{{ if ne $labels.host \"db-1\" }}x{{ else if ge $value 3 }}hot{{ else }}-{{ end }}", 9, "hot" },
		{ "{{ if and (gt $value 1) (not (eq $labels.device \"sdb\")) }}ok{{ end }}", 2, "ok" },
		{ "{{ if or (lt $value 1) $labels.nosuch }}y{{ else }}n{{ end }}", 2, "n" },
		{ "{{ if $value }}nonzero{{ end }}{{ if $labels.nosuch }}never{{ end }}", 3, "nonzero" },
		{ "{{ range $k, $v := $labels }}{{ $k }}={{ $v }};{{ end }}", 0, "device=sda;host=db-1;" },
		{ "{{ range $labels }}[{{ . | toUpper }}]{{ end }}", 0, "[SDA][DB-1]" },
		{ "{{ range $k, $v := $labels -}}\n  {{ if eq $k \"host\" }}{{ $v }}{{ end }}\n{{- end }}", 0, "db-1" },
		/* what the engine adds: promtool's external_url and external_labels */
		{ "{{ $externalURL }}/alerts?dc={{ $externalLabels.dc }}", 0, "https://fl.example/alerts?dc=eu-1" },
		{ "{{ if eq $externalLabels.dc \"eu-1\" }}EU{{ end }}{{ $externalLabels.nosuch }}", 0, "EU" },
	};
	struct label l[2] = { { "device", "sda" }, { "host", "db-1" } };
	struct label ext[1] = { { "dc", "eu-1" } };
	struct rules_template_ctx ctx = { "https://fl.example", ext, 1 };
	char out[128], why[256];
	size_t off;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(rules_template_check(cases[i].tmpl, why, sizeof(why), &off), 0,
			     "%s: %s", cases[i].tmpl, why);
		rules_template(cases[i].tmpl, cases[i].value, l, 2, &ctx, out, sizeof(out));
		cr_expect_str_eq(out, cases[i].want, "%s", cases[i].tmpl);
	}
}

/* What templates do not support is a positioned error at load, never an empty rendering. */
Test(rules, unsupported_templates_are_refused_where_they_are)
{
	static const struct {
		const char *summary, *want;
	} cases[] = {
		{ "\"{{ with $value }}big{{ end }}\"", "t.yaml:6:36: annotations.summary: 'with' is not supported" },
		{ "\"{{ if gt $value 1.0 }}big\"", "t.yaml:6:36: annotations.summary: 'if' without its {{ end }}" },
		{ "\"{{ if frob $value 1 }}big{{ end }}\"", "'frob' is not a condition" },
		{ "\"x{{ end }}\"", "'end' without an if or range before it" },
		{ "\"{{ else }}\"", "'else' without an if or range before it" },
		{ "\"{{ $k }}\"", "'$k' is not defined here" },
		{ "\"{{ range $k, $v := $value }}{{ end }}\"", "range goes over $labels" },
		{ "\"{{ $value | frob }}\"", "t.yaml:6:45: annotations.summary: template function 'frob'" },
		{ "\"{{ $externalLabels }}\"", "'$externalLabels' is not supported" },
		{ "\"{{ printf \\\"%d %s\\\" $value }}\"", "printf needs a quoted format with one conversion" },
		{ "\"{{ $value\"", "'{{' without its '}}'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char yaml[512], err[512] = "";
		struct ruleset rs = { 0 };

		snprintf(yaml, sizeof(yaml), "groups:\n  - name: g\n    rules:\n      - alert: A\n"
			 "        expr: faultline_tcp_curr_estab > 3\n        annotations: {summary: %s}\n",
			 cases[i].summary);
		cr_expect_neq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0,
			      "accepted %s", cases[i].summary);
		cr_expect(strstr(err, cases[i].want), "%s: got \"%s\"", cases[i].summary, err);
		rules_free(&rs);
	}
}

/* ---- engine over a fleet in Redis ------------------------------------------ */

static const char *rules_yaml =
	"groups:\n  - name: net\n    rules:\n"
	"      - alert: TcpChecksumErrors\n"
	"        expr: rate(faultline_tcp_in_csum_errors_total[1m]) > 0.5\n"
	"        keep_firing_for: 20s\n"
	"        severity: page\n"
	"        annotations: {summary: \"{{ $labels.host }} corrupt segments\"}\n"
	"        evidence: [csum_peers]\n"
	"        rollup: {by: switch, min_hosts: 3, min_fraction: 0.2}\n";

/* 16 hosts: h1-h8 behind sw1 (racks r1, r2), h9-h16 behind sw2 (r3, r4). */
static void write_fleet(struct store *st, const int *bad, int nbad, uint64_t t0, int labels)
{
	for (int h = 1; h <= 16; h++) {
		char name[16], rack[8];
		int is_bad = 0;

		for (int i = 0; i < nbad; i++)
			is_bad |= bad[i] == h;
		snprintf(name, sizeof(name), "h%d", h);
		snprintf(rack, sizeof(rack), "r%d", (h - 1) / 4 + 1);
		for (int t = 0; t < 4; t++) {
			struct snapshot s;

			snapshot_init(&s, name, t0 + (uint64_t)t * 10000, 10000, (uint64_t)t, 1);
			if (labels) {
				snapshot_set_label(&s, "switch", h <= 8 ? "sw1" : "sw2");
				snapshot_set_label(&s, "rack", rack);
			}
			snapshot_add_counter(&s, "tcp.in_csum_errors",
					     is_bad ? (uint64_t)t * 100 : 3, NULL);
			store_put_snapshot(st, &s);
			snapshot_free(&s);
		}
	}
	cr_assert_eq(store_flush(st, 10 * NSEC_PER_SEC), 0);
}

/*
 * Write the fleet to a real Redis and evaluate yaml over it at t0 + 30 s;
 * with reload, the rules are reloaded (SIGHUP's engine_reload) after the
 * first half of the history was read, so the newer snapshots arrive after
 * the reload (they must still get the topology's labels).
 */
static void run_fleet_reload(const char *yaml, const struct topology *topo, const int *bad,
			     int nbad, struct test_events *ev, int reload)
{
	struct test_redis redis;
	struct store_opts o = { .timeout_ns = NSEC_PER_SEC };
	struct ruleset rs = { 0 };
	struct engine *e;
	struct store *st;
	struct conn *rc;
	char err[512];
	uint64_t t0 = time_wall_ns() / NSEC_PER_MSEC - 30000;

	cr_assert_eq(test_redis_start(&redis), 0);
	o.url = redis.url;
	st = store_open(&o, err, sizeof(err));
	cr_assert_not_null(st, "%s", err);
	write_fleet(st, bad, nbad, t0, topo == NULL);
	store_close(st);
	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	{
		struct engine_opts eo = { .stale_ms = 60000, .topology = topo };

		cr_assert_eq(engine_init(&e, &rs, &eo), 0);
	}
	rc = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));
	if (reload) {
		struct ruleset again = { 0 };

		cr_assert_eq(engine_load_redis(e, rc, t0 + 15000, err, sizeof(err)), 16 * 2,
			     "%s", err);
		cr_assert_eq(rules_parse(&again, "t.yaml", yaml, strlen(yaml), err, sizeof(err)),
			     0, "%s", err);
		cr_assert_eq(engine_reload(e, &again), 0);
		cr_assert_eq(engine_load_redis(e, rc, 0, err, sizeof(err)), 16 * 2, "%s", err);
	} else {
		cr_assert_eq(engine_load_redis(e, rc, 0, err, sizeof(err)), 16 * 4, "%s", err);
	}
	engine_eval(e, t0 + 30000, test_events_collect, ev);
	conn_close(rc);
	engine_free(e);
	test_redis_destroy(&redis);
}

static void run_fleet_with(const char *yaml, const struct topology *topo, const int *bad,
			   int nbad, struct test_events *ev)
{
	run_fleet_reload(yaml, topo, bad, nbad, ev, 0);
}

static void run_fleet(const int *bad, int nbad, struct test_events *ev)
{
	run_fleet_with(rules_yaml, NULL, bad, nbad, ev);
}

static json_object *parse(const char *s)
{
	json_object *o = json_tokener_parse(s);

	cr_assert_not_null(o, "event is not JSON: %s", s);
	return o;
}

static const char *path(json_object *o, const char *a, const char *b)
{
	json_object *x, *y;

	if (!json_object_object_get_ex(o, a, &x) || !json_object_object_get_ex(x, b, &y))
		return NULL;
	return json_object_get_string(y);
}

Test(rules, five_of_eight_behind_a_switch_is_one_switch_alert, .timeout = 60)
{
	static const int bad[] = { 1, 2, 3, 5, 6 };
	struct test_events ev = { 0 };
	json_object *o, *hosts, *fl;

	run_fleet(bad, 5, &ev);
	cr_assert_eq(ev.n, 1, "expected one switch alert, got %d events", ev.n);
	o = parse(ev.json[0]);
	cr_assert_str_eq(path(o, "labels", "switch"), "sw1");
	cr_assert_str_eq(path(o, "labels", "alertname"), "TcpChecksumErrors");
	cr_assert_null(path(o, "labels", "host"), "a domain alert has no host label");
	cr_assert(json_object_object_get_ex(o, "faultline", &fl));
	cr_assert(json_object_object_get_ex(fl, "hosts", &hosts));
	cr_assert_eq(json_object_array_length(hosts), 5);
	cr_assert_str_eq(path(fl, "domain", "value"), "sw1");
	json_object *tot;

	cr_assert(json_object_object_get_ex(fl, "total_hosts", &tot) && json_object_get_int(tot) == 8);
	json_object_put(o);
	test_events_free(&ev);
}

Test(rules, the_same_errors_spread_over_racks_are_host_alerts_only, .timeout = 60)
{
	static const int bad[] = { 1, 5, 9, 13 };
	struct test_events ev = { 0 };

	run_fleet(bad, 4, &ev);
	cr_assert_eq(ev.n, 4, "expected 4 host alerts, got %d", ev.n);
	for (int i = 0; i < ev.n; i++) {
		json_object *o = parse(ev.json[i]);

		cr_assert_not_null(path(o, "labels", "host"), "%s", ev.json[i]);
		cr_assert_null(path(o, "labels", "switch") && !path(o, "labels", "host") ? "x" : NULL);
		json_object_put(o);
	}
	test_events_free(&ev);
}

/*
 * Recording rules keep their output in each host's history: a later rule
 * selects it now and over a range (max_over_time sees the recorded past,
 * not just this round), the rule's labels are on it, and a result without
 * a host label is an evaluation error, counted, not dropped quietly.
 */
Test(rules, recording_rules_keep_history_per_host)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n"
			   "      - record: host:drive_temp:max\n"
			   "        expr: max by (host) (faultline_drive_temperature_celsius)\n"
			   "        labels: {source: rec}\n"
			   "      - alert: WasHot\n"
			   "        expr: max_over_time(host:drive_temp:max{source=\"rec\"}[30s]) > 60\n"
			   "      - record: fleet:drive_temp:max\n"
			   "        expr: max(faultline_drive_temperature_celsius)\n";
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine_counts counts;
	struct engine *e;
	struct value v;
	struct node *n;
	char err[256];
	uint64_t t0 = 1764500000000ULL, now = t0;

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, &(struct engine_opts){ .stale_ms = 30000 }), 0);
	/* host a is hot (70) for the first 10 s only; b never */
	for (int t = 0; t <= 30; t += 5) {
		const char *hosts[2] = { "a", "b" };

		now = t0 + (uint64_t)t * 1000;
		for (int h = 0; h < 2; h++) {
			struct snapshot s;

			snapshot_init(&s, hosts[h], now, 5000, (uint64_t)t, 1);
			snapshot_add_gauge(&s, "drive.temperature_c", h == 0 && t <= 10 ? 70 : 40,
					   "device", "sda", NULL);
			engine_add_snapshot(e, &s);
			snapshot_free(&s);
		}
		engine_eval(e, now, test_events_collect, &ev);
	}
	/* at 30 s a is cool, but the recorded history still holds its 70 */
	cr_assert_eq(ev.n, 1, "WasHot fired %d times", ev.n);
	cr_assert(strstr(ev.json[0], "\"host\":\"a\""), "%s", ev.json[0]);
	cr_assert_eq(expr_parse_names("host:drive_temp:max", engine_rules(e)->records,
				      engine_rules(e)->nrecords, &n, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_query(e, n, now, &v, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(v.n, 2);
	for (size_t i = 0; i < v.n; i++) {
		cr_assert_str_eq(velem_label(&v.e[i], "source"), "rec");
		cr_assert_eq(v.e[i].v, 40);
	}
	value_free(&v);
	expr_free(n);
	/* the fleet-wide max has no host: an error each round, not a quiet loss */
	engine_counts(e, &counts);
	cr_assert_geq(counts.eval_errors, 7, "%llu", (unsigned long long)counts.eval_errors);
	test_events_free(&ev);
	engine_free(e);
}

/*
 * A failure-domain level no host has a label for is skipped, and said
 * (once) where someone wrote it: a typo in rollup.by is not a quiet no-op.
 */
Test(rules, a_rollup_level_no_host_has_is_said_once)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n      - alert: Hot\n"
			   "        expr: faultline_drive_temperature_celsius > 60\n"
			   "        rollup: {by: [swtich], min_hosts: 2}\n";
	char path[] = "/tmp/fl-stderr-XXXXXX", buf[4096] = "";
	int fd = mkstemp(path), saved = dup(2), said = 0;
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine *e;
	char err[256];
	FILE *f;

	cr_assert_geq(fd, 0);
	unlink(path);	/* gone whatever happens; the fd keeps it readable */
	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, &(struct engine_opts){ .stale_ms = 30000 }), 0);
	fflush(stderr);
	dup2(fd, 2);
	for (int t = 0; t < 3; t++) {
		for (int h = 0; h < 3; h++) {
			struct snapshot s;
			char host[8];

			snprintf(host, sizeof(host), "h%d", h);
			snapshot_init(&s, host, 1764500000000ULL + (uint64_t)t * 1000, 1000,
				      (uint64_t)t, 1);
			snapshot_set_label(&s, "switch", "sw1");
			snapshot_add_gauge(&s, "drive.temperature_c", 70, "device", "sda", NULL);
			engine_add_snapshot(e, &s);
			snapshot_free(&s);
		}
		engine_eval(e, 1764500000000ULL + (uint64_t)t * 1000, test_events_collect, &ev);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(fd, "r");
	rewind(f);
	for (char line[512]; fgets(line, sizeof(line), f);)
		said += strstr(line, "Hot: failure-domain level 'swtich' is skipped: no host has a "
			       "'swtich' label (a typo in rollup.by") != NULL;
	fclose(f);
	cr_assert_eq(said, 1, "said %d times: %s", said, buf);
	cr_assert_eq(ev.n, 3, "the hits stay host alerts (%d events)", ev.n);
	test_events_free(&ev);
	engine_free(e);
}

/* In-process: for, keep_firing_for, resolution, and a host going silent. */
Test(rules, for_keep_firing_for_resolution_and_silent_hosts)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n      - alert: Hot\n"
			   "        expr: faultline_drive_temperature_celsius > 60\n        for: 20s\n"
			   "        keep_firing_for: 15s\n";
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine *e;
	char err[256];
	uint64_t t0 = 1764500000000ULL;

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, &(struct engine_opts){ .stale_ms = 30000 }), 0);
	/* temperature 70 from t=0 to t=60 s, then 40; host b stops at t=30 s */
	for (int t = 0; t <= 120; t += 5) {
		struct snapshot s;
		uint64_t now = t0 + (uint64_t)t * 1000;

		snapshot_init(&s, "a", now, 5000, (uint64_t)t, 1);
		snapshot_add_gauge(&s, "drive.temperature_c", t <= 60 ? 70 : 40, "device", "sda",
				   NULL);
		engine_add_snapshot(e, &s);
		snapshot_free(&s);
		if (t <= 30) {
			snapshot_init(&s, "b", now, 5000, (uint64_t)t, 1);
			snapshot_add_gauge(&s, "drive.temperature_c", 30, "device", "sda", NULL);
			engine_add_snapshot(e, &s);
			snapshot_free(&s);
		}
		engine_eval(e, now, test_events_collect, &ev);
		if (t == 15)
			cr_assert_eq(ev.n, 0, "fired before its for: 20s");
		if (t == 20) {
			cr_assert_eq(ev.n, 1, "did not fire once for had passed");
			cr_assert(strstr(ev.json[0], "\"status\":\"firing\""));
		}
		if (t == 70)
			for (int i = 0; i < ev.n; i++)
				cr_assert(!(strstr(ev.json[i], "\"alertname\":\"Hot\"") &&
					    strstr(ev.json[i], "resolved")),
					  "resolved before keep_firing_for ran out");
	}
	int resolved = 0, silent = 0;

	for (int i = 0; i < ev.n; i++) {
		resolved += strstr(ev.json[i], "\"alertname\":\"Hot\"") &&
			    strstr(ev.json[i], "\"status\":\"resolved\"");
		silent += strstr(ev.json[i], "HostSilent") && strstr(ev.json[i], "\"host\":\"b\"") &&
			  strstr(ev.json[i], "firing");
	}
	cr_assert_eq(resolved, 1, "Hot never resolved (%d events)", ev.n);
	cr_assert_eq(silent, 1, "host b going silent raised no HostSilent");
	engine_free(e);
	test_events_free(&ev);
}

/*
 * Range functions follow each series back through the engine's history by
 * the links set on arrival: series that change order between snapshots,
 * or miss one, still give exact increases (a rises 1/s, b 2/s; a is
 * missing at t=25 s; their order flips every second).
 */
Test(rules, range_functions_follow_reordered_and_gapped_series)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n      - alert: Exact\n"
			   "        expr: increase(faultline_tcp_in_csum_errors_total{k=\"a\"}[20s]) == 20 or "
			   "increase(faultline_tcp_in_csum_errors_total{k=\"b\"}[20s]) == 40\n";
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine *e;
	char err[256];
	uint64_t t0 = 1764500000000ULL;

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, NULL), 0);
	for (int t = 0; t <= 30; t++) {
		struct snapshot s;

		snapshot_init(&s, "h", t0 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
		for (int i = 0; i < 2; i++) {
			int a = (i + t) % 2;

			if (a && t == 25)
				continue;
			snapshot_add_counter(&s, "tcp.in_csum_errors", (uint64_t)(a ? t : 2 * t),
					     "k", a ? "a" : "b", NULL);
		}
		cr_assert_eq(engine_take_snapshot(e, &s), 0);
		cr_assert_eq(s.nseries, 0, "take left the snapshot behind");
	}
	engine_eval(e, t0 + 30000, test_events_collect, &ev);
	cr_expect_eq(ev.n, 2, "expected both series' increases exact, got %d alerts", ev.n);
	for (int i = 0; i < ev.n; i++)
		cr_expect(strstr(ev.json[i], "\"status\":\"firing\""), "%s", ev.json[i]);
	engine_free(e);
	test_events_free(&ev);
	rules_free(&rs);
}

/*
 * Baselines read the 1-minute tier when they judge (rules/lang/minute_eval.c),
 * not the engine's history: 40 min of 1 s snapshots under a 15 min
 * baseline and a 1 min rate keep the last minute and 5 s only (the rate
 * stays exact); series that come and go keep their strings valid (ASan).
 */
Test(rules, history_is_only_the_longest_range_baselines_read_the_minute_tier)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n"
			   "      - alert: Exact\n"
			   "        expr: increase(faultline_tcp_in_csum_errors_total[1m]) == 60\n"
			   "      - alert: Base\n"
			   "        expr: avg_over_time(faultline_host_cpu_utilization_ratio[1m])\n"
			   "        baseline: {service: api, window: 15m}\n";
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine *e;
	char err[256];
	uint64_t t0 = 1764500000000ULL;
	size_t kept;

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, NULL), 0);
	for (int t = 0; t <= 2400; t++) {
		struct snapshot s;

		snapshot_init(&s, "h", t0 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
		snapshot_add_counter(&s, "tcp.in_csum_errors", (uint64_t)t, NULL);
		snapshot_add_gauge(&s, "cpu.host_utilization", 0.5, NULL);
		if (t % 7 < 3)	/* a series that comes and goes */
			snapshot_add_gauge(&s, "cpu.utilization", 0.4, "cpu", "1", NULL);
		cr_assert_eq(engine_take_snapshot(e, &s), 0);
	}
	kept = engine_history(e, "h");
	cr_expect(kept >= 60 && kept <= 66, "kept %zu snapshots of 2,401", kept);
	engine_eval(e, t0 + 2400 * 1000, test_events_collect, &ev);
	cr_expect_eq(ev.n, 1, "the 1 m increase is no longer exact (%d alerts)", ev.n);
	engine_free(e);
	test_events_free(&ev);
	rules_free(&rs);
}

/*
 * `A and B` evaluates B only on the hosts A kept when B is host-local, but
 * a peer comparison on the right needs every peer: h1 runs 10x hotter than
 * its two peers, so it must fire (restricted to h1 alone, its peers'
 * median would be itself and the ratio 1).
 */
/*
 * A subquery's inner selector reads back in time though it has no range of
 * its own: the engine keeps its history (the subquery's range plus the
 * inner's), and the steps are whole multiples of the step.
 */
Test(rules, a_subquery_keeps_the_history_its_inner_expression_needs)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n"
			   "      - alert: Climbed\n"
			   "        expr: max_over_time(faultline_host_cpu_utilization_ratio[2m:10s])"
			   " - min_over_time(faultline_host_cpu_utilization_ratio[2m:10s]) > 0.5\n";
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine *e;
	char err[256];
	uint64_t t0 = 1764500000000ULL;	/* a multiple of 10 s */
	size_t kept;

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, NULL), 0);
	for (int t = 0; t <= 600; t++) {
		struct snapshot s;

		/* 0.1 until 5 min, then 0.9: the climb is inside the last 2 minutes */
		snapshot_init(&s, "h", t0 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
		snapshot_add_gauge(&s, "cpu.host_utilization", t < 500 ? 0.1 : 0.9, NULL);
		cr_assert_eq(engine_take_snapshot(e, &s), 0);
	}
	kept = engine_history(e, "h");
	cr_expect(kept >= 120 && kept <= 130, "kept %zu snapshots: the subquery needs 2 min",
		  kept);
	engine_eval(e, t0 + 600 * 1000, test_events_collect, &ev);
	cr_expect_eq(ev.n, 1, "the climb within the subquery's range was not seen (%d alerts)",
		     ev.n);
	test_events_free(&ev);
	memset(&ev, 0, sizeof(ev));
	/* three minutes later the climb is older than the range: resolved */
	for (int t = 601; t <= 800; t++) {
		struct snapshot s;

		snapshot_init(&s, "h", t0 + (uint64_t)t * 1000, 1000, (uint64_t)t, 1);
		snapshot_add_gauge(&s, "cpu.host_utilization", 0.9, NULL);
		cr_assert_eq(engine_take_snapshot(e, &s), 0);
	}
	engine_eval(e, t0 + 800 * 1000, test_events_collect, &ev);
	cr_expect_eq(ev.n, 1, "expected the resolution (%d events)", ev.n);
	cr_expect(ev.n && strstr(ev.json[0], "\"resolved\""), "%s", ev.n ? ev.json[0] : "");
	engine_free(e);
	test_events_free(&ev);
	rules_free(&rs);
}

/* A subquery that would hold millions of points fails, said, instead of eating memory. */
Test(rules, a_subquery_too_big_to_hold_is_an_evaluation_error, .timeout = 60)
{
	struct ruleset rs = { 0 };
	struct engine_opts eo = { .keep_all_history = 1, .min_keep_ms = 3 * 3600 * 1000ULL };
	struct engine *e;
	struct node *n;
	struct value v;
	char err[300], cpu[8];
	uint64_t t0 = 1764500000000ULL;
	int ret;

	cr_assert_eq(engine_init(&e, &rs, &eo), 0);
	/* 300 series a host, every 10 s for 2 h 50 m */
	for (int t = 0; t <= 1020; t++) {
		struct snapshot s;

		snapshot_init(&s, "h", t0 + (uint64_t)t * 10000, 10000, (uint64_t)t, 1);
		for (int c = 0; c < 300; c++) {
			snprintf(cpu, sizeof(cpu), "%d", c);
			snapshot_add_gauge(&s, "cpu.utilization", 0.5, "cpu", cpu, NULL);
		}
		cr_assert_eq(engine_take_snapshot(e, &s), 0);
	}
	/* 9,900 steps x 300 series */
	cr_assert_eq(expr_parse("max_over_time(faultline_cpu_utilization_ratio[2h45m:1s])", &n, err,
				sizeof(err)), 0, "%s", err);
	ret = engine_query(e, n, t0 + 1020 * 10000, &v, err, sizeof(err));
	cr_expect_eq(ret, -EINVAL);
	cr_expect(strstr(err, "more than 2000000 points"), "%s", err);
	if (!ret)
		value_free(&v);
	expr_free(n);
	/* a tenth of the steps is fine: every series' max */
	cr_assert_eq(expr_parse("max_over_time(faultline_cpu_utilization_ratio[2h45m:10s])", &n,
				err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_query(e, n, t0 + 1020 * 10000, &v, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(v.n, 300);
	cr_expect_float_eq(v.n ? v.e[0].v : 0, 0.5, 1e-12);
	value_free(&v);
	expr_free(n);
	engine_free(e);
}

Test(rules, and_keeps_peer_comparisons_whole)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n      - alert: HotVsPeers\n"
			   "        expr: faultline_drive_temperature_celsius > 5 and "
			   "peer_ratio(faultline_drive_temperature_celsius, \"model\") > 2\n";
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine *e;
	char err[256];
	uint64_t t0 = 1764500000000ULL;

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, NULL), 0);
	for (int h = 1; h <= 3; h++) {
		struct snapshot s;
		char name[8];

		snprintf(name, sizeof(name), "h%d", h);
		snapshot_init(&s, name, t0, 1000, 1, 1);
		snapshot_add_gauge(&s, "drive.temperature_c", h == 1 ? 10 : 1, "device", "sda",
				   "model", "M", NULL);
		cr_assert_eq(engine_take_snapshot(e, &s), 0);
	}
	engine_eval(e, t0, test_events_collect, &ev);
	cr_expect_eq(ev.n, 1, "want one alert for h1, got %d", ev.n);
	if (ev.n)
		cr_expect(strstr(ev.json[0], "\"host\":\"h1\""), "%s", ev.json[0]);
	engine_free(e);
	test_events_free(&ev);
	rules_free(&rs);
}

Test(rules, nested_domains_and_topology, .timeout = 60)
{
	/* labels come only from the topology file here, not from the probes */
	static const char *topo_yaml =
		"hosts:\n"
		"  \"h*\": {switch: sw1, rack: r1}\n"
		"  \"h[5-8]\": {rack: r2}\n"
		"  \"h9\": {switch: sw2, rack: r3}\n  \"h1[0-2]\": {switch: sw2, rack: r3}\n"
		"  \"h1[3-6]\": {switch: sw2, rack: r4}\n";
	static const char *yaml =
		"groups:\n  - name: net\n    rules:\n"
		"      - alert: Csum\n        expr: rate(faultline_tcp_in_csum_errors_total[1m]) > 0.5\n"
		"        rollup: {by: [switch, rack], min_hosts: 3, min_fraction: 0.5}\n";
	/* 5 of 8 behind sw1 (a switch alert; its racks are not looked at again),
	 * 3 of 4 in rack r3 under sw2 (3/8 of sw2: no switch alert, a rack alert) */
	static const int bad[] = { 1, 2, 3, 5, 6, 9, 10, 11 };
	struct topology topo;
	struct test_events ev = { 0 };
	char err[256];
	int sw1 = 0, r3 = 0;

	cr_assert_eq(topology_parse(&topo, "topo.yaml", topo_yaml, strlen(topo_yaml), err,
				    sizeof(err)), 0, "%s", err);
	/* the same after a SIGHUP reload between two reads (it used to drop the topology) */
	for (int reload = 0; reload < 2; reload++) {
		sw1 = r3 = 0;
		run_fleet_reload(yaml, &topo, bad, 8, &ev, reload);
		for (int i = 0; i < ev.n; i++) {
			json_object *o = parse(ev.json[i]);

			cr_assert_null(path(o, "labels", "host"), "a host alert leaked: %s", ev.json[i]);
			sw1 += path(o, "labels", "switch") && !strcmp(path(o, "labels", "switch"), "sw1");
			r3 += path(o, "labels", "rack") && !strcmp(path(o, "labels", "rack"), "r3");
			json_object_put(o);
		}
		cr_assert_eq(ev.n, 2, "expected a switch and a rack alert, got %d events (reload %d)",
			     ev.n, reload);
		cr_assert_eq(sw1, 1);
		cr_assert_eq(r3, 1);
		test_events_free(&ev);
	}
	topology_free(&topo);
}

/* Every shipped rule has unit tests in tests/rules/, and they pass. */
Test(rules, shipped_rule_unit_tests_pass, .timeout = 120)
{
	const char *files[] = { "tests/rules/drives.test.yaml", "tests/rules/network.test.yaml",
				"tests/rules/cpu.test.yaml", "tests/rules/deploys.test.yaml",
				"tests/rules/writes.test.yaml" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);
		int failed = ruletest_run(files[i], out);

		fclose(out);
		cr_expect_eq(failed, 0, "%s", buf);
		cr_expect(strstr(buf, "PASS"), "%s ran no test: %s", files[i], buf);
		free(buf);
	}
}

/*
 * Rule and rule-test files written from Prometheus habits mean the same to
 * faultline and to promtool: both accept the rules, both pass the tests,
 * both fail them when an expectation is wrong (tests/tools/promtool_compat.sh).
 */
Test(rules, promtool_agrees_on_prometheus_shaped_files, .timeout = 120)
{
	if (test_sh("command -v promtool >/dev/null") != 0)
		cr_skip_test("promtool is not installed (make deps installs Debian's prometheus)");
	cr_assert_eq(test_sh("tests/tools/promtool_compat.sh %s/faultline >&2", test_out_dir()), 0,
		     "faultline and promtool disagree (above)");
}

/*
 * Run the rule test file text (a printf format over args) through
 * ruletest_run from a temporary file; its report into *report (freed by
 * the caller).  Returns what ruletest_run returned.
 */
static int run_ruletest(char **report, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int run_ruletest(char **report, const char *fmt, ...)
{
	char path[] = "/tmp/fl-ruletest-XXXXXX";
	size_t len = 0;
	int fd = mkstemp(path), ret;
	FILE *f = fdopen(fd, "w"), *out;
	va_list ap;

	cr_assert_not_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	out = open_memstream(report, &len);
	ret = ruletest_run(path, out);
	fclose(out);
	unlink(path);
	return ret;
}

/* A wrong expectation fails, saying what fired instead, where. */
Test(rules, rule_unit_test_reports_a_wrong_expectation)
{
	char *buf = NULL, cwd[512];

	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_expect_eq(run_ruletest(&buf, "rule_files: [%s/etc/rules/faultline.yaml]\n"
		   "evaluation_interval: 1m\n"
		   "tests:\n"
		   "  - name: healthy drive\n"
		   "    interval: 1m\n"
		   "    input_series:\n"
		   "      - series: 'faultline_drive_wear_used_ratio{host=\"db-9\",device=\"sda\",model=\"M\"}'\n"
		   "        values: '0.95+0x20'\n"
		   "    alert_rule_test:\n"
		   "      - eval_time: 15m\n"
		   "        alertname: DriveWornOut\n"
		   "        exp_alerts: []\n", cwd), 1);
	cr_expect(strstr(buf, ":10:9: test 'healthy drive': at 15m, DriveWornOut: expected 0"),
		  "%s", buf);
	cr_expect(strstr(buf, "host=\"db-9\""), "%s", buf);
	free(buf);
}

Test(rules, malformed_rule_test_files_are_errors_not_crashes)
{
	/* the fuzzer's crash: a rule_files entry that is not a string */
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "rule_files: [{a: b}]\nevaluation_interval: 1m\ntests: []\n",
		  ":1:14: rule_files: each entry is a file name" },
		{ "rule_files: [[x]]\nevaluation_interval: 1m\ntests: []\n",
		  ":1:14: rule_files: each entry is a file name" },
		{ "rule_files: [a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q]\nevaluation_interval: 1m\n"
		  "tests: []\n", "rule_files: at most 16" },
		/* promtool's keys faultline does not do are refused, never ignored */
		{ "rule_files: [x]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n"
		  "    promql_expr_test:\n      - expr: x\n        exp_sampels: []\n",
		  ":7:22: exp_sampels: unknown key (valid here: expr, eval_time, exp_samples)" },
		{ "rule_files: [x]\ngroup_eval_order: [a]\ntests: []\n",
		  ":2:19: group_eval_order: promtool's, not supported" },
		/* external_labels belong to a test, as in promtool */
		{ "rule_files: [x]\nexternal_labels: {a: b}\ntests: []\n",
		  ":2:18: external_labels: unknown key" },
		{ "rule_files: [x]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n"
		  "    external_labels: [a]\n", ":5:22: external_labels: expected a map" },
		{ "rule_files: [x]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n"
		  "    alert_rule_test:\n      - eval_time: 1m\n        alertname: A\n"
		  "        exp_alerts:\n          - exp_lables: {a: b}\n",
		  ":9:25: exp_lables: unknown key (valid here: exp_labels, exp_annotations)" },
		{ "rule_files: [x]\nevaluaton_interval: 1m\ntests: []\n",
		  ":2:21: evaluaton_interval: unknown key" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;

		cr_expect_lt(run_ruletest(&buf, "%s", cases[i].text), 0, "case %zu accepted", i);
		cr_expect(strstr(buf, cases[i].want), "case %zu: %s", i, buf);
		free(buf);
	}
}

/* promtool's series notation: what is not one of its forms is an error, said. */
Test(rules, series_values_not_in_promtools_notation_are_refused)
{
	static const struct {
		const char *values, *want;
	} cases[] = {
		{ "1x", "n in a+bxn is a count" },
		{ "_x", "not of the form _xn" },
		{ "_x-2", "not of the form _xn" },
		{ "1+x3", "not of the form a+bxn" },
		{ "stale", "not a value, _, a+bxn, a-bxn, axn or _xn" },
		{ "1*2x3", "not a value, _, a+bxn, a-bxn, axn or _xn" },
	};
	char cwd[512];

	cr_assert(getcwd(cwd, sizeof(cwd)));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;

		/* the test fails (not the file), at the input's position */
		cr_expect_gt(run_ruletest(&buf, "rule_files: [%s/etc/rules/faultline.yaml]\n"
					  "evaluation_interval: 1s\ntests:\n  - interval: 1s\n"
					  "    input_series:\n"
					  "      - series: 'faultline_tcp_in_segs_total{host=\"a\"}'\n"
					  "        values: '%s'\n", cwd, cases[i].values), 0,
			     "'%s' accepted", cases[i].values);
		cr_expect(buf && strstr(buf, ":6:9: input_series: ") && strstr(buf, cases[i].want),
			  "'%s': %s", cases[i].values, buf);
		free(buf);
	}
}

/* Classic histogram inputs that faultline cannot hold as written: said where. */
Test(rules, classic_histogram_inputs_that_cannot_be_held_are_refused)
{
	static const struct {
		const char *series, *want;
	} cases[] = {
		{ "      - series: 'faultline_block_latency_seconds_bucket{host=\"a\",le=\"0.1\"}'\n"
		  "        values: '0+1x3'\n",
		  ":6:9: input_series: le=\"0.1\" is not a bucket bound of "
		  "faultline_block_latency_seconds (classic buckets are the ones /metrics shows: 1e-06" },
		{ "      - series: 'faultline_block_latency_seconds_bucket{host=\"a\"}'\n"
		  "        values: '0+1x3'\n", "a _bucket series needs its le label" },
		{ "      - series: 'faultline_block_latency_seconds_bucket{host=\"a\",le=\"0.001024\"}'\n"
		  "        values: '0+5x3'\n"
		  "      - series: 'faultline_block_latency_seconds_bucket{host=\"a\",le=\"+Inf\"}'\n"
		  "        values: '0+4x3'\n",
		  "at step 1 le=0.001024 counts 5, more than le=+Inf's 4 (bucket counts are "
		  "cumulative)" },
		{ "      - series: 'faultline_block_latency_seconds_bucket{host=\"a\",le=\"+Inf\"}'\n"
		  "        values: '0+4x3'\n"
		  "      - series: 'faultline_block_latency_seconds_count{host=\"a\"}'\n"
		  "        values: '0+5x3'\n", "at step 1 _count is 5, the +Inf bucket 4" },
		{ "      - series: 'faultline_block_latency_seconds_sum{host=\"a\"}'\n"
		  "        values: '0+5x3'\n", "without the histogram's _bucket series" },
		{ "      - series: 'faultline_block_latency_seconds_bucket{host=\"a\",le=\"+Inf\"}'\n"
		  "        values: '0+4x3'\n"
		  "      - series: 'faultline_block_latency_seconds_bucket{host=\"a\",le=\"+Inf\"}'\n"
		  "        values: '0+4x3'\n", "this le given twice for one histogram" },
	};
	char cwd[512];

	cr_assert(getcwd(cwd, sizeof(cwd)));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *buf = NULL;

		cr_expect_gt(run_ruletest(&buf, "rule_files: [%s/etc/rules/faultline.yaml]\n"
					  "evaluation_interval: 1s\ntests:\n  - interval: 1s\n"
					  "    input_series:\n%s", cwd, cases[i].series), 0,
			     "case %zu accepted", i);
		cr_expect(buf && strstr(buf, cases[i].want), "case %zu: %s", i, buf);
		free(buf);
	}
}

Test(rules, evaluation_errors_are_counted_not_dropped)
{
	/* passes `rules check` today, fails every evaluation: and needs two vectors */
	const char *yaml = "groups:\n  - name: g\n    rules:\n"
			   "      - alert: Broken\n        expr: 1 and faultline_drive_temperature_celsius > 60\n"
			   "      - alert: Fine\n        expr: faultline_drive_temperature_celsius > 60\n";
	struct ruleset rs = { 0 };
	struct test_events ev = { 0 };
	struct engine_counts counts;
	struct engine *e;
	struct snapshot s;
	char err[256];
	uint64_t t0 = 1764500000000ULL;

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, NULL), 0);
	snapshot_init(&s, "h", t0, 1000, 1, 1);
	snapshot_add_gauge(&s, "drive.temperature_c", 70, "device", "sda", NULL);
	cr_assert_eq(engine_take_snapshot(e, &s), 0);
	engine_eval(e, t0, test_events_collect, &ev);
	engine_eval(e, t0 + 1000, test_events_collect, &ev);
	engine_counts(e, &counts);
	cr_assert_eq(counts.eval_errors, 2, "evaluation errors: %llu",
		     (unsigned long long)counts.eval_errors);
	cr_assert_eq(ev.n, 1, "the other rule must still fire");
	cr_assert(strstr(ev.json[0], "\"alertname\":\"Fine\""), "%s", ev.json[0]);
	engine_free(e);
	test_events_free(&ev);
}

/*
 * As in promtool, an expected alert's labels are exact (a subset no longer
 * passes) and exp_annotations are compared with the rendered annotations.
 */
Test(rules, rule_tests_compare_labels_exactly_and_annotations)
{
	static const char *const exp[] = {
		/* a subset of the labels: fails */
		"          - exp_labels: {host: db-9, device: sda, severity: warning}\n",
		/* the labels exactly, a wrong annotation: fails */
		"          - exp_labels: {host: db-9, device: sda, model: M, severity: warning}\n"
		"            exp_annotations: {summary: \"wrong\"}\n",
		/* both right: passes */
		"          - exp_labels: {host: db-9, device: sda, model: M, severity: warning}\n"
		"            exp_annotations:\n"
		"              summary: \"db-9 sda (M) has used 95% of its rated endurance\"\n",
	};
	char cwd[512];

	cr_assert(getcwd(cwd, sizeof(cwd)));
	for (int i = 0; i < 3; i++) {
		char *buf = NULL;
		int ret = run_ruletest(&buf, "rule_files: [%s/etc/rules/faultline.yaml]\n"
			"evaluation_interval: 1m\n"
			"tests:\n  - name: worn\n    interval: 1m\n    input_series:\n"
			"      - series: 'faultline_drive_wear_used_ratio{host=\"db-9\",device=\"sda\",model=\"M\"}'\n"
			"        values: '0.95+0x20'\n    alert_rule_test:\n      - eval_time: 15m\n"
			"        alertname: DriveWornOut\n        exp_alerts:\n%s", cwd, exp[i]);

		cr_expect_eq(ret, i < 2 ? 1 : 0, "case %d: %s", i, buf);
		free(buf);
	}
}

/* Relative runbooks point where they are once a base is given; URLs and absolute paths stay. */
Test(rules, runbook_base_makes_relative_runbooks_resolvable)
{
	static const char yaml[] = "groups:\n  - name: g\n    rules:\n"
		"      - alert: A\n        expr: faultline_tcp_curr_estab > 3\n"
		"        runbook: runbooks/a.md\n"
		"      - alert: B\n        expr: faultline_tcp_curr_estab > 3\n"
		"        runbook: https://wiki.example/ops/b\n"
		"      - alert: C\n        expr: faultline_tcp_curr_estab > 3\n"
		"        runbook: /srv/runbooks/c.md\n";
	struct ruleset rs = { 0 };
	char err[256], longbase[300];

	cr_assert_eq(rules_parse(&rs, "r.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rules_runbook_base(&rs, "file:///usr/share/faultline/", err, sizeof(err)), 0);
	cr_assert_str_eq(rs.groups[0].rules[0].runbook,
			 "file:///usr/share/faultline/runbooks/a.md");
	cr_assert_str_eq(rs.groups[0].rules[1].runbook, "https://wiki.example/ops/b");
	cr_assert_str_eq(rs.groups[0].rules[2].runbook, "/srv/runbooks/c.md");
	rules_free(&rs);
	memset(longbase, 'x', sizeof(longbase) - 1);
	longbase[sizeof(longbase) - 1] = '\0';
	cr_assert_eq(rules_parse(&rs, "r.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(rules_runbook_base(&rs, longbase, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "rule A: runbook runbooks/a.md"), "%s", err);
	rules_free(&rs);
}

/* promql_expr_test: the samples must be exactly the expected ones; a wrong value fails, saying what came. */
Test(rules, promql_expr_test_compares_samples)
{
	char cwd[512], *buf = NULL;

	cr_assert(getcwd(cwd, sizeof(cwd)));
	cr_expect_eq(run_ruletest(&buf, "rule_files: [%s/etc/rules/faultline.yaml]\n"
		"evaluation_interval: 10s\n"
		"tests:\n  - name: temperatures\n    interval: 10s\n    input_series:\n"
		"      - series: 'faultline_drive_temperature_celsius{host=\"a\",rack=\"r1\",device=\"sda\"}'\n"
		"        values: '40+1x10'\n"
		"      - series: 'faultline_drive_temperature_celsius{host=\"b\",rack=\"r2\",device=\"sda\"}'\n"
		"        values: '30+0x10'\n"
		"    promql_expr_test:\n"
		"      - expr: max(faultline_drive_temperature_celsius)\n        eval_time: 30s\n"
		"        exp_samples:\n          - labels: '{}'\n            value: 43\n"
		"      - expr: faultline_drive_temperature_celsius{rack=\"r2\"}\n        eval_time: 30s\n"
		"        exp_samples:\n"
		"          - labels: 'faultline_drive_temperature_celsius{device=\"sda\",host=\"b\",rack=\"r2\"}'\n"
		"            value: 31\n", cwd), 1, "a wrong value passed");
	cr_expect(strstr(buf, "faultline_drive_temperature_celsius{rack=\"r2\"}: expected 1 "
			 "sample(s), got 1: {device=\"sda\",host=\"b\",rack=\"r2\"} 30"), "%s", buf);
	cr_expect_null(strstr(buf, "max(faultline"), "the right one failed: %s", buf);
	free(buf);
}

/* ---- the checkpoint: pending `for:` timers and records of any shape ------ */

static void hot_snapshot(struct engine *e, uint64_t now, double temp)
{
	struct snapshot s;

	snapshot_init(&s, "a", now, 1000, now / 1000, 1);
	snapshot_add_gauge(&s, "drive.temperature_c", temp, "device", "sda", NULL);
	engine_add_snapshot(e, &s);
	snapshot_free(&s);
}

struct kept_records {
	char fp[8][17];
	char *json[8];
	int n;
};

static void keep_record(const char *fp, const char *json, void *arg)
{
	struct kept_records *k = arg;

	cr_assert_lt(k->n, 8);
	snprintf(k->fp[k->n], sizeof(k->fp[0]), "%s", fp);
	k->json[k->n++] = strdup(json);
}

static struct engine *hot_engine(uint64_t grace_ms)
{
	const char *yaml = "groups:\n  - name: g\n    rules:\n      - alert: Hot\n"
			   "        expr: faultline_drive_temperature_celsius > 60\n"
			   "        for: 30s\n";
	struct ruleset rs = { 0 };
	struct engine *e;
	char err[256];

	cr_assert_eq(rules_parse(&rs, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(engine_init(&e, &rs, &(struct engine_opts){ .stale_ms = 60000,
							       .for_grace_ms = grace_ms }), 0);
	return e;
}

/*
 * The engine stops 20 s into a 30 s `for` and starts again 5 s later: the
 * alert fires 10 s of evaluation after the restart (at 35 s, as Prometheus
 * restores it: the 5 s nobody looked do not count), not 30 s after it.
 */
Test(rules, a_pending_for_timer_survives_a_restart)
{
	uint64_t t0 = 1764500000000ULL, fired_at = 0;
	struct test_events ev = { 0 };
	struct kept_records k = { 0 };
	struct engine *e = hot_engine(0);
	char err[256];

	for (int t = 0; t <= 20; t++) {
		hot_snapshot(e, t0 + (uint64_t)t * 1000, 70);
		engine_eval(e, t0 + (uint64_t)t * 1000, test_events_collect, &ev);
	}
	cr_assert_eq(ev.n, 0, "fired inside its for");
	cr_assert_eq(engine_pending_alerts(e), 1);
	cr_assert_eq(engine_state_export(e, keep_record, &k), 1, "the pending alert was not "
		     "checkpointed");
	cr_assert(strstr(k.json[0], "\"pending\":true"), "%s", k.json[0]);
	engine_free(e);

	e = hot_engine(0);
	cr_assert_eq(engine_state_import(e, k.fp[0], k.json[0], t0 + 25000, test_events_collect,
					 &ev, err, sizeof(err)), 0, "%s", err);
	for (int t = 25; t <= 60 && !fired_at; t++) {
		hot_snapshot(e, t0 + (uint64_t)t * 1000, 70);
		engine_eval(e, t0 + (uint64_t)t * 1000, test_events_collect, &ev);
		if (ev.n)
			fired_at = (uint64_t)t;
	}
	cr_assert_eq(fired_at, 35, "fired at %llu s after the fault (expected 35: 20 s spent "
		     "before the stop, 10 s after the restart)", (unsigned long long)fired_at);
	cr_assert(strstr(ev.json[0], "\"status\":\"firing\""));
	engine_free(e);
	test_events_free(&ev);
	free(k.json[0]);
}

/*
 * A `for` longer than the grace, restored with less than the grace left,
 * fires no sooner than the grace after the restore (10 s here), as
 * Prometheus' for-grace-period; a pending record whose condition no longer
 * holds is dropped without an event.
 */
Test(rules, a_restored_pending_alert_waits_the_grace_or_goes_quietly)
{
	uint64_t t0 = 1764500000000ULL, fired_at = 0;
	struct test_events ev = { 0 };
	const char *rec = "{\"rule\":\"Hot\",\"severity\":\"\",\"labels\":{\"device\":\"sda\","
			  "\"host\":\"a\"},\"pending\":true,\"at_ms\":1764500028000,"
			  "\"since_ms\":1764500000000,\"last_true_ms\":1764500028000}";
	struct kept_records k = { 0 };
	struct engine *e = hot_engine(10000);
	char err[256];

	/* the alert's own fingerprint, from an engine that saw it */
	hot_snapshot(e, t0, 70);
	engine_eval(e, t0, test_events_collect, &ev);
	cr_assert_eq(engine_state_export(e, keep_record, &k), 1);
	free(k.json[0]);
	engine_free(e);
	e = hot_engine(10000);
	cr_assert_eq(engine_state_import(e, k.fp[0], rec, t0 + 40000,
					 test_events_collect, &ev, err, sizeof(err)), 0, "%s", err);
	for (int t = 40; t <= 80 && !fired_at; t++) {
		hot_snapshot(e, t0 + (uint64_t)t * 1000, 70);
		engine_eval(e, t0 + (uint64_t)t * 1000, test_events_collect, &ev);
		if (ev.n)
			fired_at = (uint64_t)t;
	}
	cr_assert_eq(fired_at, 50, "fired at %llu (2 s of `for` were left; the grace is 10 s "
		     "after the restore at 40)", (unsigned long long)fired_at);
	engine_free(e);
	test_events_free(&ev);

	e = hot_engine(0);
	cr_assert_eq(engine_state_import(e, k.fp[0], rec, t0 + 40000,
					 test_events_collect, &ev, err, sizeof(err)), 0, "%s", err);
	hot_snapshot(e, t0 + 41000, 20);
	engine_eval(e, t0 + 41000, test_events_collect, &ev);
	cr_assert_eq(ev.n, 0, "a pending alert that no longer holds sent an event");
	cr_assert_eq(engine_pending_alerts(e), 0);
	engine_free(e);
	test_events_free(&ev);
}

/*
 * A checkpoint record is outside input (whoever can write the key wrote
 * it): each of these is refused whole, with the field named, and the
 * engine goes on (the first crashed every engine on every restart).
 */
Test(rules, checkpoint_records_of_any_shape_are_refused_not_crashed_on)
{
	static const struct {
		const char *json, *field;
	} bad[] = {
		{ "{\"rule\":\"Gone\",\"labels\":{},\"hosts\":[null]}", "hosts[0]" },
		{ "{\"rule\":\"Hot\",\"labels\":{\"host\":null}}", "label \"host\"" },
		{ "{\"rule\":\"Hot\",\"labels\":{\"host\":7}}", "label \"host\"" },
		{ "{\"rule\":\"Hot\",\"labels\":[]}", "\"labels\"" },
		{ "{\"rule\":\"Hot\"}", "\"labels\"" },
		{ "{\"rule\":17,\"labels\":{}}", "\"rule\"" },
		{ "{\"labels\":{}}", "\"rule\"" },
		{ "{\"rule\":\"Hot\",\"labels\":{},\"since_ms\":-5}", "\"since_ms\"" },
		{ "{\"rule\":\"Hot\",\"labels\":{},\"since_ms\":\"x\"}", "\"since_ms\"" },
		{ "{\"rule\":\"Hot\",\"labels\":{},\"hosts\":\"h1\"}", "\"hosts\"" },
		{ "{\"rule\":\"Hot\",\"labels\":{},\"pending\":1}", "\"pending\"" },
		{ "{\"rule\":\"Hot\",\"labels\":{},\"value\":\"hot\"}", "\"value\"" },
		{ "[1,2]", "not a JSON object" },
		{ "\xff\xfe", "not a JSON object" },
	};
	struct test_events ev = { 0 };
	struct engine *e = hot_engine(0);
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		cr_assert_eq(engine_state_import(e, "0123456789abcdef", bad[i].json, 1000,
						 test_events_collect, &ev, err, sizeof(err)),
			     -EINVAL, "accepted %s", bad[i].json);
		cr_assert(strstr(err, bad[i].field), "%s: the error does not name %s: %s",
			  bad[i].json, bad[i].field, err);
	}
	cr_assert_eq(engine_state_import(e, "not-hex-at-all!!", "{\"rule\":\"Hot\",\"labels\":{}}",
					 1000, test_events_collect, &ev, err, sizeof(err)),
		     -EINVAL);
	cr_assert_eq(ev.n, 0);
	cr_assert_eq(engine_pending_alerts(e), 0);
	/* and a good one is still taken */
	cr_assert_eq(engine_state_import(e, "0123456789abcdef", "{\"rule\":\"Hot\",\"labels\":"
					 "{\"host\":\"a\"},\"since_ms\":5,\"hosts\":[\"a\"]}", 1000,
					 test_events_collect, &ev, err, sizeof(err)), 0, "%s", err);
	engine_free(e);
}

/*
 * The built-in alerts about paging itself: AlertDeliveryBacklog while more
 * events wait than the bound, AlertsDeadLettered while dead letters were
 * written in the last hour; each resolves when that ends.  Under --shard
 * only the fleet partition's owner raises them.
 */
Test(rules, paging_itself_raises_backlog_and_dead_letter_alerts)
{
	struct test_events ev = { 0 };
	struct ruleset rs = { 0 };
	struct engine *e;
	char err[256];
	int backlog = 0, dead = 0, resolved = 0;

	cr_assert_eq(rules_parse(&rs, "t.yaml", "groups: []\n", 11, err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(engine_init(&e, &rs, &(struct engine_opts){ .alert_backlog_max = 10 }), 0);
	engine_set_alert_backlog(e, 10, 1000);
	engine_eval(e, 1000, test_events_collect, &ev);
	cr_assert_eq(ev.n, 0, "at the bound is not over it");
	engine_set_alert_backlog(e, 11, 1000);
	engine_set_dead_letters(e, 2);
	engine_eval(e, 2000, test_events_collect, &ev);
	engine_set_alert_backlog(e, 0, 0);
	engine_set_dead_letters(e, 0);
	engine_eval(e, 3000, test_events_collect, &ev);
	for (int i = 0; i < ev.n; i++) {
		int firing = strstr(ev.json[i], "\"status\":\"firing\"") != NULL;

		backlog += firing && strstr(ev.json[i], "AlertDeliveryBacklog") &&
			   strstr(ev.json[i], "alert-delivery-backlog.md");
		dead += firing && strstr(ev.json[i], "AlertsDeadLettered") &&
			strstr(ev.json[i], "alerts-dead-lettered.md");
		resolved += !firing;
	}
	cr_expect_eq(backlog, 1, "%d events", ev.n);
	cr_expect_eq(dead, 1);
	cr_expect_eq(resolved, 2, "both resolve once it ends");
	test_events_free(&ev);
	engine_free(e);
}
