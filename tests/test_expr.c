/*
 * test_expr.c - the rule expression language: the grammar, every error
 * path with its position, and evaluation over a small fleet of snapshots
 * (counters, gauges, histogram quantiles, aggregation, peer comparison,
 * set operations).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rules/eval.h"
#include "rules/expr.h"

Test(expr, valid_grammar)
{
	static const char *const ok[] = {
		"tcp.in_csum_errors",
		"rate(tcp.in_csum_errors[1m]) > 0.5",
		"quantile(0.99, block.latency{op=\"write\",device=~\"nvme.*\"}[5m]) > 50ms",
		"sum by (switch) (rate(tcp.bad_csum[5m])) > 10",
		"max(cpu.utilization_max{cpu!=\"all\"}) by (host) >= 0.95",
		"peer_ratio(quantile(0.99, block.latency{op=\"write\"}[10m]), \"model\") > 3",
		"drive.wear_used_pct >= 90 or drive.smart_passed == 0",
		"cpu.utilization{cpu=\"all\"} > 0.9 unless cgroup.throttled_count > 0",
		"-(1 + 2) * 3 / 4 % 5 - abs(delta(drive.temperature_c[1h]))",
		"avg_over_time(cpu.utilization{cpu=\"all\"}[10m]) > bool 0.5",
		"count(drive.smart_available == 0) > 0 and increase(block.errors[5m]) > 0",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct node *n;
		char err[256] = "";

		cr_assert_eq(expr_parse(ok[i], &n, err, sizeof(err)), 0, "%s: %s", ok[i], err);
		expr_free(n);
	}
	struct node *n;
	char err[256];

	expr_parse("rate(tcp.in_csum_errors[5m]) + quantile(0.5, block.latency[1h])", &n, err,
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
		{ "rate(tcp.in_csum_errors) > 1", "1:6: rate needs a range selector" },
		{ "quantile(0.9, tcp.in_segs[5m])", "1:15: quantile needs a histogram" },
		{ "quantile(block.latency[5m])", "1:1: quantile takes 2 arguments" },
		{ "block.ios{op=write}", "1:14: expected a quoted value for label 'op'" },
		{ "block.ios{op~\"w\"}", "1:13: unexpected character '~'" },
		{ "block.ios{op=\"w\"", "1:17: expected ',' or '}'" },
		{ "rate(block.ios[5q])", "1:16: '5q' is not a number or a duration" },
		{ "block.ios[5]", "1:11: expected a range like [5m]" },
		{ "sum by (host rate(block.ios[1m]))", "1:14: expected a label or ')'" },
		{ "(1 + 2", "1:7: expected ')'" },
		{ "1 +", "1:4: expected an expression, found 'end of expression'" },
		{ "tcp.in_segs = 3", "1:13: '=' is not a comparison" },
		{ "tcp.in_segs 3", "1:13: unexpected '3' after the expression" },
		{ "\"open", "1:1: unterminated string" },
		{ "block.ios{device=~\"(\"}", "1:11: '(' is not a valid regular expression" },
		{ "peer_ratio(drive.wear_used_pct, model)", "1:33: unknown metric 'model'" },
		{ "tcp.in_segs >\n  and 3", "2:3: expected an expression, found 'and'" },
		/* PromQL that faultline does not have is named as such, never "unknown metric" */
		{ "irate(tcp.in_segs[1m])", "1:1: PromQL's irate() is not supported" },
		{ "histogram_quantile(0.9, x)", "1:1: PromQL's histogram_quantile() is not "
		  "supported by faultline's rule language; faultline's histograms" },
		{ "topk (3, tcp.in_segs)", "1:1: PromQL's topk() is not supported" },
		{ "frob(tcp.in_segs)", "1:1: unknown function 'frob' (the functions are: rate," },
		{ "rate(tcp.in_segs[1m] offset 5m)", "1:22: PromQL's 'offset' is not supported" },
		{ "sum without (host) (tcp.in_segs)", "1:5: PromQL's 'without' is not supported" },
		{ "tcp.in_segs > on(host) tcp.out_segs", "1:15: PromQL's 'on' is not supported" },
		{ "tcp.in_segs / ignoring(x) tcp.out_segs", "1:15: PromQL's 'ignoring' is not" },
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
		}
		fleet[h].host = hosts[h];
		fleet[h].snaps = snaps[h];
		fleet[h].n = 3;
	}
}

static void free_fleet(void)
{
	for (int h = 0; h < 4; h++)
		for (int t = 0; t < 3; t++)
			snapshot_free(&snaps[h][t]);
}

static struct value run(const char *src)
{
	struct node *n;
	struct value v;
	char err[256];

	cr_assert_eq(expr_parse(src, &n, err, sizeof(err)), 0, "%s: %s", src, err);
	cr_assert_eq(eval(n, fleet, 4, &v, err, sizeof(err)), 0, "%s: %s", src, err);
	expr_free(n);
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

Test(expr, evaluation_over_a_fleet, .init = build_fleet, .fini = free_fleet)
{
	struct value v;

	v = run("rate(tcp.in_csum_errors[1m]) > 1");
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h1");
	cr_assert_str_eq(velem_label(&v.e[0], "switch"), "sw1");
	cr_assert(fabs(v.e[0].v - 5.0) < 1e-9, "rate %f", v.e[0].v);
	value_free(&v);

	v = run("increase(tcp.in_csum_errors[1m])");
	cr_assert_eq(v.n, 4);
	value_free(&v);

	v = run("quantile(0.99, block.latency{op=\"write\"}[1m]) > 2ms");
	cr_assert_eq(v.n, 1, "only h2's writes are slow");
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h2");
	cr_assert(fabs(v.e[0].v - 5e6) < 5e6 / 32, "p99 %f", v.e[0].v);
	value_free(&v);

	v = run("sum by (switch) (rate(tcp.in_csum_errors[1m]))");
	cr_assert_eq(v.n, 2);
	for (size_t i = 0; i < v.n; i++)
		cr_assert_eq(v.e[i].nlabels, 1, "aggregation keeps only the by labels");
	value_free(&v);

	v = run("count by (switch) (drive.wear_used_pct)");
	cr_assert_eq(v.n, 2);
	value_free(&v);

	v = run("peer_ratio(drive.wear_used_pct, \"model\") > 1.02");
	/* model A: 20, 21, 22 -> median 21: h3 (22/21 = 1.048) exceeds; B alone: ratio 1 */
	cr_assert_eq(v.n, 1);
	cr_assert_str_eq(velem_label(&v.e[0], "host"), "h3");
	value_free(&v);

	v = run("drive.wear_used_pct >= 90 or rate(tcp.in_csum_errors[1m]) > 1");
	cr_assert_eq(v.n, 2);
	value_free(&v);

	v = run("drive.wear_used_pct > 0 unless drive.wear_used_pct >= 90");
	cr_assert_eq(v.n, 3);
	value_free(&v);

	v = run("drive.wear_used_pct > bool 50");
	cr_assert_eq(v.n, 4);
	for (size_t i = 0; i < v.n; i++)
		cr_assert(v.e[i].v == 0 || v.e[i].v == 1);
	value_free(&v);

	v = run("(1 + 2) * 3 - 4 / 2");
	cr_assert(!v.is_vector);
	cr_assert_eq(v.scalar, 7);
	value_free(&v);
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
		{ "drive.wear_used_pct{device=~\"nvme\\\\d+n1\"}", 4 },
		{ "drive.wear_used_pct{device=~\"nvme\\\\d\"}", 0 },	/* anchored: not a prefix */
		{ "drive.wear_used_pct{device=~\"(?i)NVME0N1\"}", 4 },
		{ "drive.wear_used_pct{device!~\"\\\\w+\"}", 0 },
		{ "drive.wear_used_pct{model=~\"A|B\"}", 4 },
		{ "drive.wear_used_pct{model=~\"B\"}", 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct value v = run(cases[i].expr);

		cr_expect_eq(v.n, cases[i].n, "%s: %zu elements, want %zu", cases[i].expr, v.n,
			     cases[i].n);
		value_free(&v);
	}
}
