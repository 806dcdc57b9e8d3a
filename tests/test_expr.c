/*
 * test_expr.c - the rule expression language: the grammar, every error
 * path with its position, and evaluation over a small fleet of snapshots
 * (counters, gauges, histogram quantiles, aggregation, peer comparison,
 * set operations).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lang/eval.h"
#include "rules/lang/expr.h"
#include "probes/prom.h"
#include "core/strbuf.h"

Test(expr, valid_grammar)
{
	static const char *const ok[] = {
		"faultline_tcp_in_csum_errors_total",
		"rate(faultline_tcp_in_csum_errors_total[1m]) > 0.5",
		"quantile(0.99, faultline_block_latency_seconds{op=\"write\",device=~\"nvme.*\"}[5m]) > 50ms",
		"sum by (switch) (rate(faultline_tcp_bad_csum_total[5m])) > 10",
		"max(faultline_cpu_utilization_max_ratio) by (host) >= 0.95",
		"peer_ratio(quantile(0.99, faultline_block_latency_seconds{op=\"write\"}[10m]), \"model\") > 3",
		"faultline_drive_wear_used_ratio >= 0.9 or faultline_drive_smart_passed == 0",
		"faultline_host_cpu_utilization_ratio > 0.9 unless faultline_cgroup_throttled_cgroups > 0",
		"-(1 + 2) * 3 / 4 % 5 - abs(delta(faultline_drive_temperature_celsius[1h]))",
		"avg_over_time(faultline_host_cpu_utilization_ratio[10m]) > bool 0.5",
		"count(faultline_drive_smart_available == 0) > 0 and increase(faultline_block_errors_total[5m]) > 0",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct node *n;
		char err[256] = "";

		cr_assert_eq(expr_parse(ok[i], &n, err, sizeof(err)), 0, "%s: %s", ok[i], err);
		expr_free(n);
	}
	struct node *n;
	char err[256];

	expr_parse("rate(faultline_tcp_in_csum_errors_total[5m]) + quantile(0.5, faultline_block_latency_seconds[1h])", &n, err,
		   sizeof(err));
	cr_assert_eq(expr_max_range(n), 3600ULL * 1000000000ULL);
	expr_free(n);
}

Test(expr, every_error_has_a_position)
{
	static const struct {
		const char *src, *want;
	} bad[] = {
		{ "", "1:1: empty expression" },
		{ "tcp.no_such_metric > 1", "1:1: unknown metric 'tcp.no_such_metric'" },
		/* the old dotted names are refused, naming the metric and its unit */
		{ "quantile(0.99, block.latency[5m]) > 20000000",
		  "1:16: 'block.latency' is now faultline_block_latency_seconds, in seconds (the old "
		  "name counted nanoseconds)" },
		{ "drive.wear_used_pct > 90", "1:1: 'drive.wear_used_pct' is now "
		  "faultline_drive_wear_used_ratio, in ratio 0..1 (the old name counted percent)" },
		{ "rate(tcp.in_csum_errors[1m]) > 1",
		  "1:6: 'tcp.in_csum_errors' is now faultline_tcp_in_csum_errors_total" },
		{ "rate(faultline_tcp_in_csum_errors_total) > 1", "1:6: rate needs a range selector" },
		{ "quantile(0.9, faultline_tcp_in_segs_total[5m])", "1:15: quantile needs a histogram" },
		{ "quantile(faultline_block_latency_seconds[5m])", "1:1: quantile takes 2 arguments" },
		{ "faultline_block_ios_total{op=write}", "1:30: expected a quoted value for label 'op'" },
		{ "faultline_block_ios_total{op~\"w\"}", "1:29: unexpected character '~'" },
		{ "faultline_block_ios_total{op=\"w\"", "1:33: expected ',' or '}'" },
		{ "rate(faultline_block_ios_total[5q])", "1:32: '5q' is not a number or a duration" },
		{ "faultline_block_ios_total[5]", "1:27: expected a range like [5m]" },
		{ "sum by (host rate(faultline_block_ios_total[1m]))", "1:14: expected a label or ')'" },
		{ "(1 + 2", "1:7: expected ')'" },
		{ "1 +", "1:4: expected an expression, found 'end of expression'" },
		{ "faultline_tcp_in_segs_total = 3", "1:29: '=' is not a comparison" },
		{ "faultline_tcp_in_segs_total 3", "1:29: unexpected '3' after the expression" },
		{ "\"open", "1:1: unterminated string" },
		{ "faultline_block_ios_total{device=~\"(\"}", "1:27: '(' is not a valid regular expression" },
		{ "peer_ratio(faultline_drive_wear_used_ratio, model)", "1:45: unknown metric 'model'" },
		{ "faultline_tcp_in_segs_total >\n  and 3", "2:3: expected an expression, found 'and'" },
		/* PromQL that faultline does not have is named as such, never "unknown metric" */
		{ "count_values(\"v\", faultline_tcp_in_segs_total)", "1:1: PromQL's count_values() is not supported" },
		{ "irate(faultline_tcp_in_segs_total)", "1:7: irate needs a range selector" },
		{ "predict_linear(3, faultline_tcp_in_segs_total[1m])", "1:16: predict_linear needs a range selector" },
		{ "time(3)", "1:1: time takes 0 arguments, found 1" },
		{ "rate(faultline_tcp_in_segs_total[5m:1m])", "1:6: rate over a subquery is not supported" },
		{ "max_over_time(faultline_tcp_in_segs_total[5m:])", "1:45: a subquery needs its step" },
		{ "max_over_time(faultline_tcp_in_segs_total @ 1700000000)", "1:43: '@ 1700000000' pins" },
		{ "absent_over_time(faultline_tcp_in_segs_total[5m])", "1:1: PromQL's absent_over_time() is "
		  "not supported by faultline's rule language; a host that stops reporting" },
		{ "histogram_quantile(0.9, x)", "1:25: unknown metric 'x'" },
		{ "topk (faultline_tcp_in_segs_total)", "1:34: expected ',' after the aggregation's parameter" },
		{ "frob(faultline_tcp_in_segs_total)", "1:1: unknown function 'frob' (the functions are: rate," },
		{ "rate(faultline_tcp_in_segs_total[1m] offset -5m)", "1:45: expected a duration after offset" },
		{ "sum without (host (faultline_tcp_in_segs_total)", "1:19: expected a label or ')' in without (...)" },
		{ "faultline_tcp_in_segs_total > group_left faultline_tcp_out_segs_total", "1:31: group_left needs on (...) or ignoring (...) before it" },
		{ "faultline_tcp_in_segs_total and on(host) group_left faultline_tcp_out_segs_total", "1:42: no grouping allowed for and, or, unless" },
		{ "faultline_tcp_in_segs_total / on(host) group_left(host) faultline_tcp_out_segs_total", "1:57: label 'host' must not occur in both on (...) and the grouping clause" },
		{ "faultline_tcp_in_segs_total / ignoring(x faultline_tcp_out_segs_total", "1:42: expected a label or ')' in ignoring (...)" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct node *n = NULL;
		char err[256] = "";

		cr_assert_neq(expr_parse(bad[i].src, &n, err, sizeof(err)), 0, "accepted: %s",
			      bad[i].src);
		cr_assert_null(n);
		cr_assert(strstr(err, bad[i].want), "%s\n  got:  %s\n  want: %s", bad[i].src, err,
			  bad[i].want);
	}
}

/* A fleet of 4 hosts, 3 snapshots 10 s apart. */
static struct snapshot snaps[4][3];
static struct columns cols[4];		/* the same, as the engine keeps them */
static struct host_window fleet[4];
static const char *hosts[4] = { "h1", "h2", "h3", "h4" };

static void build_fleet(void)
{
	for (int h = 0; h < 4; h++) {
		for (int t = 0; t < 3; t++) {
			struct snapshot *s = &snaps[h][t];
			struct series *lat;

			snapshot_init(s, hosts[h], 1000000 + (uint64_t)t * 10000, 10000, (uint64_t)t, 1);
			snapshot_set_label(s, "switch", h < 3 ? "sw1" : "sw2");
			/* h1 gets 5 bad checksums/s, the others none */
			snapshot_add_counter(s, "tcp.in_csum_errors", h == 0 ? (uint64_t)t * 50 : 7, NULL);
			snapshot_add_gauge(s, "drive.wear_used_pct", h == 3 ? 95.0 : 20.0 + h, "device",
					   "nvme0n1", "model", h == 3 ? "B" : "A", NULL);
			lat = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op",
					   "write", NULL);
			/* cumulative: 100 writes per 10 s; h2's are 10x slower */
			for (int k = 0; k <= t; k++)
				hist_record_n(lat->hist, h == 1 ? 5000000 : 500000, 100);
			/* io stall, counted in us: h3 stalls 100 ms of every second */
			snapshot_add_counter(s, "psi.some", h == 2 ? (uint64_t)t * 1000000 : 0,
					     "resource", "io", NULL);
		}
		columns_init(&cols[h]);
		for (int t = 0; t < 3; t++) {
			struct snapshot copy;

			cr_assert_eq(snapshot_copy(&copy, &snaps[h][t]), 0);
			cr_assert_eq(columns_push(&cols[h], &copy, UINT64_MAX / 2, NULL), 0);
		}
		fleet[h].host = hosts[h];
		fleet[h].c = &cols[h];
		fleet[h].n = 3;
	}
}

/*
 * The expression last run: a value borrows label strings from the AST it
 * came from (by () keys, absent()'s labels), so the AST lives until the
 * next run or the end of the test, as a rule's does in the engine.
 */
static struct node *last_expr;

static void free_fleet(void)
{
	expr_free(last_expr);
	last_expr = NULL;
	for (int h = 0; h < 4; h++) {
		for (int t = 0; t < 3; t++)
			snapshot_free(&snaps[h][t]);
		columns_free(&cols[h]);
	}
}


static struct value run(const char *src)
{
	struct value v;
	char err[256];

	expr_free(last_expr);
	last_expr = NULL;
	cr_assert_eq(expr_parse(src, &last_expr, err, sizeof(err)), 0, "%s: %s", src, err);
	cr_assert_eq(eval(last_expr, fleet, 4, &v, err, sizeof(err)), 0, "%s: %s", src, err);
	return v;
}

Test(expr, hostile_nesting_is_an_error_not_a_crash)
{
	static const char *const unit[] = { "-", "(", "abs(" };
	char err[256];
	struct node *n;

	/* 100,000 unary minuses, parentheses or calls: a positioned error, no crash */
	for (int u = 0; u < 3; u++) {
		size_t len = strlen(unit[u]);
		char *src = malloc(100000 * len + 16), *p = src;

		for (int i = 0; i < 100000; i++, p += len)
			memcpy(p, unit[u], len);
		strcpy(p, "1");
		cr_assert_neq(expr_parse(src, &n, err, sizeof(err)), 0);
		cr_assert(strstr(err, "nested"), "%s", err);
		cr_assert_eq(strncmp(err, "1:", 2), 0, "no position: %s", err);
		free(src);
	}
	/* a chain of 100,000 additions nests by its length: refused too */
	{
		char *src = malloc(200000 + 2), *p = src;

		for (int i = 0; i < 100000; i++, p += 2)
			memcpy(p, "1+", 2);
		strcpy(p, "1");
		cr_assert_neq(expr_parse(src, &n, err, sizeof(err)), 0);
		cr_assert(strstr(err, "too long"), "%s", err);
		free(src);
	}
	/* what real rules need still parses */
	cr_assert_eq(expr_parse("- - -(((1)))", &n, err, sizeof(err)), 0, "%s", err);
	expr_free(n);
}

/*
 * One vocabulary: values are in the metric's base unit whatever the wire
 * counts in, and a duration literal is seconds.  The examples the issue
 * gave: a "20 ms" p99 threshold does not fire on 0.5 ms writes, and 100 ms/s
 * of io stall is above 50ms.
 */
Test(expr, values_and_durations_are_in_base_units, .init = build_fleet, .fini = free_fleet)
{
	struct value v;

	v = run("quantile(0.99, faultline_block_latency_seconds{op=\"write\"}[1m]) > 0.02");
	cr_assert_eq(v.n, 0, "a 20 ms threshold fired on 0.5 and 5 ms writes");
	value_free(&v);
	v = run("quantile(0.99, faultline_block_latency_seconds{op=\"write\"}[1m]) > 1ms");
	cr_assert_eq(v.n, 1, "only h2's 5 ms writes are above 1 ms");
	cr_assert(fabs(v.e[0].v - 0.005) < 0.005 / 32, "p99 %g s", v.e[0].v);
	value_free(&v);
	v = run("rate(faultline_psi_some_seconds_total{resource=\"io\"}[1m]) > 50ms");
	cr_assert_eq(v.n, 1, "100 ms/s of io stall is above 50ms");
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h3");
	cr_assert(fabs(v.e[0].v - 0.1) < 1e-9, "stall %g s/s", v.e[0].v);
	value_free(&v);
	v = run("faultline_drive_wear_used_ratio > 0.9");
	cr_assert_eq(v.n, 1, "wear is a ratio: 95 %% is 0.95");
	cr_assert(fabs(v.e[0].v - 0.95) < 1e-12, "wear %g", v.e[0].v);
	value_free(&v);
	/* matchers see a host's labels and host, as its elements carry them */
	v = run("faultline_drive_wear_used_ratio{switch=\"sw1\"}");
	cr_assert_eq(v.n, 3, "switch is a host label of h1..h3: %zu", v.n);
	value_free(&v);
	v = run("faultline_drive_wear_used_ratio{host=~\"h[23]\",switch!=\"sw2\"}");
	cr_assert_eq(v.n, 2, "%zu", v.n);
	value_free(&v);
	/* PromQL's range and element functions; counts are counts, whatever the unit */
	v = run("count_over_time(faultline_psi_some_seconds_total{host=\"h3\"}[1m])");
	cr_assert(v.n == 1 && v.e[0].v == 3, "count_over_time: %zu, %g", v.n, v.n ? v.e[0].v : 0);
	value_free(&v);
	v = run("changes(faultline_tcp_in_csum_errors_total[1m]) > 0");
	cr_assert(v.n == 1 && v.e[0].v == 2, "changes: h1's counter moved twice");
	value_free(&v);
	v = run("resets(faultline_tcp_in_csum_errors_total[1m]) > 0");
	cr_assert_eq(v.n, 0, "no counter went down");
	value_free(&v);
	v = run("sum_over_time(faultline_psi_some_seconds_total{host=\"h3\"}[1m])");
	cr_assert(v.n == 1 && fabs(v.e[0].v - 3.0) < 1e-9, "sum_over_time in seconds: %g",
		  v.n ? v.e[0].v : 0);
	value_free(&v);
	v = run("last_over_time(faultline_drive_wear_used_ratio{host=\"h4\"}[1m])");
	cr_assert(v.n == 1 && fabs(v.e[0].v - 0.95) < 1e-12);
	value_free(&v);
	v = run("clamp_max(faultline_drive_wear_used_ratio, 0.5) == 0.5");
	cr_assert_eq(v.n, 1, "only h4's 0.95 is clamped to 0.5");
	value_free(&v);
	v = run("round(faultline_drive_wear_used_ratio * 10) == 10");
	cr_assert_eq(v.n, 1, "9.5 rounds up to 10");
	value_free(&v);
	v = run("clamp(faultline_drive_wear_used_ratio, 1, 0)");
	cr_assert(v.is_vector && v.n == 0, "clamp with min > max is an empty vector");
	value_free(&v);
	v = run("ceil(stddev_over_time(faultline_drive_wear_used_ratio[1m]))");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++)
		cr_assert_eq(v.e[i].v, 0, "a constant gauge has no spread");
	value_free(&v);
	/* without: every label but those */
	v = run("sum without (host, switch) (faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 2, "one sum per device and model: %zu", v.n);
	for (size_t i = 0; i < v.n; i++) {
		const char *model = velem_label(&v.e[i], "model");

		cr_assert_null(velem_label(&v.e[i], "host"));
		cr_assert(model && fabs(v.e[i].v - (!strcmp(model, "A") ? 0.63 : 0.95)) < 1e-9,
			  "model %s: %g", model, v.e[i].v);
	}
	value_free(&v);
	v = run("count without (host) (faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 2, "A on sw1 (3 hosts), B on sw2");
	value_free(&v);
	/* offset: as of that long ago (snapshots are 10 s apart; h1 counts 0, 50, 100) */
	v = run("faultline_tcp_in_csum_errors_total{host=\"h1\"} offset 10s");
	cr_assert(v.n == 1 && v.e[0].v == 50, "offset 10s: %g", v.n ? v.e[0].v : -1);
	value_free(&v);
	v = run("rate(faultline_tcp_in_csum_errors_total{host=\"h1\"}[10s] offset 10s)");
	cr_assert(v.n == 1 && fabs(v.e[0].v - 5) < 1e-9, "rate as of 10 s ago: %g",
		  v.n ? v.e[0].v : -1);
	value_free(&v);
	v = run("faultline_tcp_in_csum_errors_total offset 1h");
	cr_assert_eq(v.n, 0, "no history an hour back: nothing, not the newest values");
	value_free(&v);
	/* absent, group, stddev, stdvar as PromQL's */
	v = run("absent(faultline_drive_wear_used_ratio{device=\"nope\",model=~\"A\"})");
	cr_assert(v.n == 1 && v.e[0].v == 1 && v.e[0].nlabels == 1, "absent: %zu", v.n);
	cr_assert_str_eq(velem_label(&v.e[0], "device"), "nope");
	value_free(&v);
	v = run("absent(rate(faultline_tcp_in_csum_errors_total[1m]))");
	cr_assert_eq(v.n, 0, "present: absent is empty");
	value_free(&v);
	v = run("group by (switch) (faultline_drive_wear_used_ratio)");
	cr_assert(v.n == 2 && v.e[0].v == 1 && v.e[1].v == 1);
	value_free(&v);
	v = run("stddev(faultline_drive_wear_used_ratio)");
	{
		double m = (0.20 + 0.21 + 0.22 + 0.95) / 4, var = 0, w[] = { 0.20, 0.21, 0.22, 0.95 };

		for (int i = 0; i < 4; i++)
			var += (w[i] - m) * (w[i] - m) / 4;
		cr_assert(v.n == 1 && fabs(v.e[0].v - sqrt(var)) < 1e-9, "stddev %g, want %g",
			  v.n ? v.e[0].v : -1, sqrt(var));
		value_free(&v);
		v = run("stdvar(faultline_drive_wear_used_ratio)");
		cr_assert(v.n == 1 && fabs(v.e[0].v - var) < 1e-9, "stdvar %g", v.n ? v.e[0].v : -1);
	}
	value_free(&v);
	v = run("5m == bool 300");
	cr_assert(!v.is_vector && v.scalar == 1, "5m is not 300 s");
	value_free(&v);
}

Test(expr, evaluation_over_a_fleet, .init = build_fleet, .fini = free_fleet)
{
	struct value v;

	v = run("rate(faultline_tcp_in_csum_errors_total[1m]) > 1");
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h1");
	cr_assert_str_eq(velem_label(&v.e[0], "switch"), "sw1");
	cr_assert(fabs(v.e[0].v - 5.0) < 1e-9, "rate %f", v.e[0].v);
	value_free(&v);

	v = run("increase(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert_eq(v.n, 4);
	value_free(&v);

	v = run("quantile(0.99, faultline_block_latency_seconds{op=\"write\"}[1m]) > 2ms");
	cr_assert_eq(v.n, 1, "only h2's writes are slow");
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h2");
	cr_assert(fabs(v.e[0].v - 5e-3) < 5e-3 / 32, "p99 %f s", v.e[0].v);
	value_free(&v);

	v = run("sum by (switch) (rate(faultline_tcp_in_csum_errors_total[1m]))");
	cr_assert_eq(v.n, 2);
	for (size_t i = 0; i < v.n; i++)
		cr_assert_eq(v.e[i].nlabels, 1, "aggregation keeps only the by labels");
	value_free(&v);

	v = run("count by (switch) (faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 2);
	value_free(&v);

	v = run("peer_ratio(faultline_drive_wear_used_ratio, \"model\") > 1.02");
	/* model A: 20, 21, 22 -> median 21: h3 (22/21 = 1.048) exceeds; B alone: ratio 1 */
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h3");
	value_free(&v);

	v = run("faultline_drive_wear_used_ratio >= 0.9 or rate(faultline_tcp_in_csum_errors_total[1m]) > 1");
	cr_assert_eq(v.n, 2);
	value_free(&v);

	v = run("faultline_drive_wear_used_ratio > 0 unless faultline_drive_wear_used_ratio >= 0.9");
	cr_assert_eq(v.n, 3);
	value_free(&v);

	v = run("faultline_drive_wear_used_ratio > bool 0.5");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++)
		cr_assert(v.e[i].v == 0 || v.e[i].v == 1);
	value_free(&v);

	v = run("(1 + 2) * 3 - 4 / 2");
	cr_assert(!v.is_vector);
	cr_assert_eq(v.scalar, 7);
	value_free(&v);

	/* every level associates left, comparisons too, as in PromQL */
	v = run("8 - 4 - 2 / 2 * 4");
	cr_assert_eq(v.scalar, 0);
	value_free(&v);
	v = run("3 > bool 2 == bool 1");
	cr_assert(!v.is_vector);
	cr_assert_eq(v.scalar, 1, "(3 > bool 2) == bool 1: %g", v.scalar);
	value_free(&v);
	v = run("faultline_drive_wear_used_ratio > 0.205 < 0.215");
	cr_assert_eq(v.n, 1, "%zu", v.n);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h2");
	value_free(&v);
}

/* A host's value in v, or NAN. */
static double host_value(const struct value *v, const char *host)
{
	for (size_t i = 0; i < v->n; i++)
		if (velem_label(&v->e[i], "host") && !strcmp(velem_label(&v->e[i], "host"), host))
			return v->e[i].v;
	return NAN;
}

/*
 * More of PromQL, with its semantics: instant rates and deltas from the
 * last two samples, least-squares deriv and predict_linear, quantiles over
 * time and across elements (PromQL's interpolation), topk/bottomk keeping
 * the elements' labels, time(), vector(), scalar().
 */
Test(expr, promql_functions_mean_what_they_mean_in_prometheus, .init = build_fleet,
     .fini = free_fleet)
{
	struct value v;
	struct node *n = NULL;
	char err[256];

	/* h1's counter: 0, 50, 100 at 0, 10, 20 s */
	v = run("irate(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert_eq(v.n, 4);
	cr_assert(fabs(host_value(&v, "h1") - 5) < 1e-9, "irate %f", host_value(&v, "h1"));
	cr_assert_eq(host_value(&v, "h2"), 0);
	value_free(&v);
	v = run("idelta(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert(fabs(host_value(&v, "h1") - 50) < 1e-9);
	value_free(&v);
	v = run("deriv(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert(fabs(host_value(&v, "h1") - 5) < 1e-9, "deriv %f", host_value(&v, "h1"));
	value_free(&v);
	v = run("predict_linear(faultline_tcp_in_csum_errors_total[1m], 1m)");
	cr_assert(fabs(host_value(&v, "h1") - 400) < 1e-6, "predict %f", host_value(&v, "h1"));
	cr_assert(fabs(host_value(&v, "h2") - 7) < 1e-9);
	value_free(&v);
	/* h1's counter 0, 50, 100: variance 5000/3; a ratio's variance is in ratio^2 */
	v = run("stdvar_over_time(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert(fabs(host_value(&v, "h1") - 5000.0 / 3) < 1e-6, "%f", host_value(&v, "h1"));
	value_free(&v);
	v = run("stddev_over_time(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert(fabs(host_value(&v, "h1") - sqrt(5000.0 / 3)) < 1e-6);
	value_free(&v);
	v = run("quantile_over_time(0.5, faultline_tcp_in_csum_errors_total[1m])");
	cr_assert(fabs(host_value(&v, "h1") - 50) < 1e-9);
	value_free(&v);
	v = run("present_over_time(faultline_drive_wear_used_ratio[1m])");
	cr_assert_eq(v.n, 4);
	cr_assert_eq(v.e[0].v, 1);
	value_free(&v);

	/* wear: h1 0.20, h2 0.21, h3 0.22 (sw1), h4 0.95 (sw2) */
	v = run("topk(1, faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h4");
	cr_assert_str_eq(velem_label(&v.e[0], "device"), "nvme0n1", "topk keeps the labels");
	value_free(&v);
	v = run("topk by (switch) (1, faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 2);
	cr_assert(fabs(host_value(&v, "h3") - 0.22) < 1e-9 && fabs(host_value(&v, "h4") - 0.95) < 1e-9);
	value_free(&v);
	v = run("bottomk(2, faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 2);
	cr_assert(!isnan(host_value(&v, "h1")) && !isnan(host_value(&v, "h2")));
	value_free(&v);
	v = run("quantile(0.5, faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 1);
	cr_assert(fabs(v.e[0].v - 0.215) < 1e-9, "median %f (PromQL interpolates)", v.e[0].v);
	value_free(&v);
	v = run("quantile by (switch) (0.5, faultline_drive_wear_used_ratio)");
	cr_assert_eq(v.n, 2);
	value_free(&v);
	v = run("quantile(0.5, faultline_drive_wear_used_ratio) without (host, device, model)");
	cr_assert_eq(v.n, 2, "one per switch");
	value_free(&v);

	v = run("time()");
	cr_assert(!v.is_vector && v.scalar == 1020, "time() %f", v.scalar);
	value_free(&v);
	v = run("vector(1)");
	cr_assert(v.is_vector && v.n == 1 && v.e[0].nlabels == 0);
	value_free(&v);
	v = run("faultline_drive_wear_used_ratio > 0.5 * scalar(max(faultline_drive_wear_used_ratio))");
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h4");
	value_free(&v);
	v = run("scalar(faultline_drive_wear_used_ratio)");
	cr_assert(!v.is_vector && isnan(v.scalar), "four elements: NaN");
	value_free(&v);

	cr_assert_eq(expr_parse("topk(faultline_drive_wear_used_ratio, faultline_drive_wear_used_ratio)",
				&n, err, sizeof(err)), 0);
	cr_assert_eq(eval(n, fleet, 4, &v, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "1:6: topk's parameter must be a scalar"), "%s", err);
	value_free(&v);
	expr_free(n);
}

/*
 * Histograms as Prometheus sees them: x_bucket (the /metrics bucket set,
 * cumulative, le labels), x_sum and x_count, under rate & co., and
 * histogram_quantile over them, aggregated or not, as the query:
 * the fleet's p99 is the slow host's bucket, its median the fast ones'.
 */
Test(expr, classic_histograms_and_histogram_quantile, .init = build_fleet, .fini = free_fleet)
{
	struct value v;
	struct strbuf text = STRBUF_INIT;
	char want[128];
	struct node *n = NULL;
	char err[256];

	/* h2 writes take 5 ms, the others' 0.5 ms; 10 writes/s each */
	v = run("histogram_quantile(0.99, rate(faultline_block_latency_seconds_bucket[1m]))");
	cr_assert_eq(v.n, 4);
	cr_assert_null(velem_label(&v.e[0], "le"));
	cr_assert(host_value(&v, "h2") > 0.004096 && host_value(&v, "h2") <= 0.008192, "h2 p99 %g",
		  host_value(&v, "h2"));
	cr_assert(host_value(&v, "h1") > 0.000256 && host_value(&v, "h1") <= 0.000512, "h1 p99 %g",
		  host_value(&v, "h1"));
	value_free(&v);

	v = run("histogram_quantile(0.99, sum by (le) (rate(faultline_block_latency_seconds_bucket[1m])))");
	cr_assert_eq(v.n, 1);
	cr_assert_eq(v.e[0].nlabels, 0);
	cr_assert(v.e[0].v > 0.004096 && v.e[0].v <= 0.008192, "fleet p99 %g", v.e[0].v);
	value_free(&v);
	v = run("histogram_quantile(0.5, sum by (le) (rate(faultline_block_latency_seconds_bucket[1m])))");
	cr_assert(v.n == 1 && v.e[0].v > 0.000256 && v.e[0].v < 0.000512, "fleet p50 %g", v.e[0].v);
	value_free(&v);

	v = run("rate(faultline_block_latency_seconds_count[1m])");
	cr_assert_eq(v.n, 4);
	cr_assert(fabs(host_value(&v, "h1") - 10) < 1e-9, "%f", host_value(&v, "h1"));
	value_free(&v);
	v = run("rate(faultline_block_latency_seconds_sum[1m]) / rate(faultline_block_latency_seconds_count[1m])");
	cr_assert(fabs(host_value(&v, "h2") - 5e-3) < 5e-3 * 0.07, "mean %g", host_value(&v, "h2"));
	value_free(&v);

	/* the same buckets and counts as /metrics shows for the same snapshot */
	v = run("faultline_block_latency_seconds_bucket{host=\"h2\", le=~\"0.008192|\\\\+Inf\"}");
	cr_assert_eq(v.n, 2);
	prom_render(&snaps[1][2], NULL, &text);
	for (size_t i = 0; i < v.n; i++) {
		snprintf(want, sizeof(want), "le=\"%s\"} %.0f\n", velem_label(&v.e[i], "le"),
			 v.e[i].v);
		cr_assert(strstr(text.buf, want), "/metrics lacks %s", want);
		cr_assert_eq(v.e[i].v, 300);
	}
	strbuf_release(&text);
	value_free(&v);

	cr_assert_neq(expr_parse("histogram_quantile(0.9, faultline_block_latency_seconds)", &n,
				 err, sizeof(err)), 0);
	cr_assert(strstr(err, "1:25: histogram_quantile takes buckets: "
			 "rate(faultline_block_latency_seconds_bucket[5m])"), "%s", err);
	cr_assert_neq(expr_parse("avg_over_time(faultline_block_latency_seconds_bucket[1m])", &n,
				 err, sizeof(err)), 0);
	cr_assert(strstr(err, "1:15: avg_over_time of faultline_block_latency_seconds_bucket"),
		  "%s", err);
	cr_assert_neq(expr_parse("quantile(0.9, faultline_block_latency_seconds_bucket[1m])", &n,
				 err, sizeof(err)), 0);
}

/* label_replace and label_join as in PromQL; made values outlive their inputs */
Test(expr, label_replace_and_label_join, .init = build_fleet, .fini = free_fleet)
{
	struct value v;
	struct node *n = NULL;
	char err[256];

	v = run("label_replace(faultline_drive_wear_used_ratio, \"bus\", \"${1}-x\", \"device\", "
		"\"(nvme|sd)[0-9].*\")");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++) {
		cr_assert_str_eq(velem_label(&v.e[i], "bus"), "nvme-x");
		cr_assert_str_eq(velem_label(&v.e[i], "device"), "nvme0n1", "the source stays");
	}
	value_free(&v);
	v = run("sum by (bus) (label_replace(faultline_drive_wear_used_ratio, \"bus\", \"$1\", "
		"\"device\", \"(nvme|sd).*\"))");
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "bus"), "nvme");
	cr_assert(fabs(v.e[0].v - 1.58) < 1e-9, "%f", v.e[0].v);
	value_free(&v);
	v = run("label_replace(faultline_drive_wear_used_ratio, \"device\", \"\", \"device\", \".*\")");
	cr_assert_null(velem_label(&v.e[0], "device"), "an empty value removes the label");
	value_free(&v);
	v = run("label_replace(faultline_drive_wear_used_ratio, \"x\", \"y\", \"device\", \"sda\")");
	cr_assert_eq(v.n, 4);
	cr_assert_null(velem_label(&v.e[0], "x"), "no match: unchanged");
	value_free(&v);
	v = run("label_join(faultline_drive_wear_used_ratio, \"where\", \"/\", \"switch\", \"host\")");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++)
		if (!strcmp(velem_label(&v.e[i], "host"), "h4"))
			cr_assert_str_eq(velem_label(&v.e[i], "where"), "sw2/h4");
	value_free(&v);

	cr_assert_neq(expr_parse("label_replace(faultline_drive_wear_used_ratio, \"1bad\", \"\", "
				 "\"device\", \".*\")", &n, err, sizeof(err)), 0);
	cr_assert(strstr(err, "1:48: '1bad' is not a valid label name"), "%s", err);
	cr_assert_neq(expr_parse("label_replace(faultline_drive_wear_used_ratio, \"a\", \"\", "
				 "\"device\", \"(\")", &n, err, sizeof(err)), 0);
	cr_assert(strstr(err, "1:67: '(' is not a valid regular expression"), "%s", err);
	cr_assert_neq(expr_parse("label_join(faultline_drive_wear_used_ratio, \"a\")", &n, err,
				 sizeof(err)), 0);
	cr_assert(strstr(err, "1:1: label_join takes at least 3 arguments, found 2"), "%s", err);
}

/*
 * Vector matching as in PromQL: on/ignoring choose the labels that pair
 * elements, group_left/group_right allow many-to-one and copy labels from
 * the "one" side; the result's labels follow Prometheus' resultMetric, and
 * many-to-many is an error, not a guess.
 */
Test(expr, vector_matching_has_prometheus_semantics, .init = build_fleet, .fini = free_fleet)
{
	struct value v;
	struct node *n = NULL;
	char err[256];

	/* many drives to one host rate: the drive's labels, times its host's rate */
	v = run("faultline_drive_wear_used_ratio * on(host) group_left "
		"rate(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++) {
		cr_assert_not_null(velem_label(&v.e[i], "device"), "the many side's labels stay");
		if (!strcmp(velem_label(&v.e[i], "host"), "h1"))
			cr_assert(fabs(v.e[i].v - 0.2 * 5) < 1e-9, "h1: %f", v.e[i].v);
		else
			cr_assert_eq(v.e[i].v, 0);
	}
	value_free(&v);

	/* one-to-one on(host): only the on labels remain */
	v = run("rate(faultline_tcp_in_csum_errors_total[1m]) + on(host) "
		"faultline_drive_wear_used_ratio");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++)
		cr_assert_eq(v.e[i].nlabels, 1, "on(host) keeps host alone");
	value_free(&v);

	/* ignoring(device, model): matched on host and switch, those dropped; x/0 gives nothing */
	v = run("faultline_drive_wear_used_ratio / ignoring(device, model) "
		"rate(faultline_tcp_in_csum_errors_total[1m])");
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h1");
	cr_assert_null(velem_label(&v.e[0], "model"));
	cr_assert_not_null(velem_label(&v.e[0], "switch"));
	cr_assert(fabs(v.e[0].v - 0.2 / 5) < 1e-9);
	value_free(&v);

	/* group_left(model) copies the model from the one side */
	v = run("rate(faultline_tcp_in_csum_errors_total[1m]) > on(host) group_left(model) "
		"faultline_drive_wear_used_ratio");
	cr_assert_eq(v.n, 1, "a filter: only h1's rate is above its wear");
	cr_assert_str_eq(velem_label(&v.e[0], "model"), "A");
	cr_assert(fabs(v.e[0].v - 5) < 1e-9, "a filter keeps the left value");
	value_free(&v);

	/* group_right: the right side is the many */
	v = run("sum by (switch) (rate(faultline_tcp_in_csum_errors_total[1m])) "
		"* on(switch) group_right faultline_drive_wear_used_ratio");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++)
		cr_assert_not_null(velem_label(&v.e[i], "device"));
	value_free(&v);

	/* set operations on a subset of the labels */
	v = run("faultline_drive_wear_used_ratio and on(host) "
		"(rate(faultline_tcp_in_csum_errors_total[1m]) > 1)");
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h1");
	cr_assert_not_null(velem_label(&v.e[0], "device"), "and keeps the left element whole");
	value_free(&v);

	/* and on(switch): a right element of another host of the switch still matches */
	v = run("faultline_drive_wear_used_ratio{host!=\"h1\"} and on(switch) "
		"(rate(faultline_tcp_in_csum_errors_total[1m]) > 1)");
	cr_assert_eq(v.n, 2, "h2's and h3's drives, behind sw1 where h1's errors are (%zu)", v.n);
	value_free(&v);

	/* three drives per switch on each side: many-to-many is an error */
	cr_assert_eq(expr_parse("faultline_drive_wear_used_ratio + on(switch) "
				"faultline_drive_wear_used_ratio", &n, err, sizeof(err)), 0);
	cr_assert_eq(eval(n, fleet, 4, &v, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "1:33: found duplicate series for the match group {switch=\"sw1\"}"),
		  "%s", err);
	value_free(&v);
	expr_free(n);
	/* many left to one right without group_left: an error that says to add it */
	cr_assert_eq(expr_parse("faultline_drive_wear_used_ratio + on(switch) "
				"sum by (switch) (faultline_drive_wear_used_ratio)", &n, err,
				sizeof(err)), 0);
	cr_assert_eq(eval(n, fleet, 4, &v, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "many-to-one matching must be explicit (group_left/group_right)"),
		  "%s", err);
	value_free(&v);
	expr_free(n);
}

/*
 * Regex matchers mean what they mean in Prometheus (RE2, fully anchored):
 * \d and (?i) work, and a match must cover the whole value.  (POSIX ERE
 * made "nvme\d+n1" never match.)
 */
Test(expr, regex_matchers_have_prometheus_semantics, .init = build_fleet, .fini = free_fleet)
{
	static const struct {
		const char *expr;
		size_t n;
	} cases[] = {
		{ "faultline_drive_wear_used_ratio{device=~\"nvme\\\\d+n1\"}", 4 },
		{ "faultline_drive_wear_used_ratio{device=~\"nvme\\\\d\"}", 0 },	/* anchored: not a prefix */
		{ "faultline_drive_wear_used_ratio{device=~\"(?i)NVME0N1\"}", 4 },
		{ "faultline_drive_wear_used_ratio{device!~\"\\\\w+\"}", 0 },
		{ "faultline_drive_wear_used_ratio{model=~\"A|B\"}", 4 },
		{ "faultline_drive_wear_used_ratio{model=~\"B\"}", 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct value v = run(cases[i].expr);

		cr_expect_eq(v.n, cases[i].n, "%s: %zu elements, want %zu", cases[i].expr, v.n,
			     cases[i].n);
		value_free(&v);
	}
}
