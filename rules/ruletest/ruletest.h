/*
 * ruletest.h - rule unit tests, like `promtool test rules`:
 *
 *   rule_files: [../../etc/rules/faultline.yaml]   # relative to this file
 *   evaluation_interval: 10s
 *   tests:
 *     - name: a worn drive warns after 10 minutes
 *       interval: 1m                     # spacing of input values
 *       input_series:
 *         - series: 'faultline_drive_wear_used_ratio{host="db-1",rack="r1",device="nvme0n1",model="M"}'
 *           values: '0.85 0.88 0.91 0.92 0.93+0.01x10'  # "a+bxn": a, a+b, ... n more; "_": no sample
 *       alert_rule_test:
 *         - eval_time: 15m
 *           alertname: DriveWornOut
 *           exp_alerts:
 *             - exp_labels: {host: db-1, device: nvme0n1, severity: warning}
 *
 * The `host` label names the host; rack, switch, row and site become the
 * host's own labels; the rest are the series' labels.  Series kinds come
 * from the metric catalog.  A histogram's value is one latency (or size)
 * observed `count` times in that step (default 100), in the metric's unit
 * (0.025 for 25 ms):
 *
 *         - series: 'faultline_block_latency_seconds{host="db-1",device="sda",op="write",model="M"}'
 *           values: '0.002+0x20'
 *           count: 500
 *
 * At
 * each eval_time the firing alerts of alertname must be exactly the
 * expected ones (each expected label set a subset of one alert's labels).
 *
 * Baseline rules take their deploy markers from the test case:
 *
 *       deploys:
 *         - {service: api, version: "2.0", hosts: "web-[0-3]", at: 20m}
 *
 * Layer contract.  rules/ruletest includes lib/, rules/lang, rules/engine
 * and itself only: it runs the real engine over series it builds
 * (ruletest.c; promql_expr_test in ruletest_expr.c), with no Redis and no
 * clock but the test's.
 */
#ifndef FL_RULETEST_H
#define FL_RULETEST_H

#include <stdio.h>

/*
 * Run the tests in path, reporting to out.  Returns the number of failed
 * tests (0 = all passed), or -1 when the file itself is invalid (the
 * reason, with file:line:column, is printed to out).
 */
int ruletest_run(const char *path, FILE *out);

#endif
