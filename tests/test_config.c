/*
 * test_config.c - YAML config loading: every error names file:line:column
 * and the key; the shipped etc/probe.yaml is the embedded default.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "tests/helpers.h"
#include "probes/probe.h"
#include "core/timeutil.h"
#include "core/strbuf.h"

static int parse(const char *text, struct probe_config *cfg, char *err, size_t errlen)
{
	char e[512];

	cr_assert_eq(probe_config_defaults(cfg, e, sizeof(e)), 0, "%s", e);
	return probe_config_parse(cfg, "probe.yaml", text, strlen(text), err, errlen);
}

Test(config, embedded_default_is_etc_probe_yaml)
{
	struct probe_config cfg;
	char err[512], *text;
	size_t len;

	cr_assert_eq(cfg_read_file("etc/probe.yaml", &text, &len, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(text, probe_default_config);
	free(text);
	cr_assert_eq(probe_config_defaults(&cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.interval_ns, NSEC_PER_SEC);
	cr_assert_eq(cfg.retention_ns[0], 15 * 60 * NSEC_PER_SEC);
	cr_assert_eq(cfg.retention_ns[1], 86400 * NSEC_PER_SEC);
	cr_assert_eq(cfg.retention_ns[2], 7 * 86400 * NSEC_PER_SEC);
	cr_assert_eq(cfg.retention_p10_ns, 3600 * NSEC_PER_SEC);
	cr_assert_eq(cfg.retention_p3600_ns, 7 * 86400 * NSEC_PER_SEC);
	cr_assert_eq(cfg.spool_max_snapshots, 3600);
	cr_assert_eq(cfg.bpf, 1);
	cr_assert_str_eq(cfg.metrics_addr, "127.0.0.1:9464");
	probe_config_free(&cfg);
}

Test(config, overrides_apply)
{
	struct probe_config cfg;
	char err[512];

	cr_assert_eq(parse("interval: 250ms\nlabels:\n  rack: r12\n  switch: sw3\n"
			   "block:\n  max_devices: 8\nbpf: false\n", &cfg, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(cfg.interval_ns, 250 * NSEC_PER_MSEC);
	cr_assert_eq(cfg.nlabels, 2);
	cr_assert_str_eq(cfg.labels[0].key, "rack");
	cr_assert_str_eq(cfg.labels[1].value, "sw3");
	cr_assert_eq(cfg.block_max_devices, 8);
	cr_assert_eq(cfg.block_slots, 16, "untouched keys keep their defaults");
	cr_assert_eq(cfg.bpf, 0);
	probe_config_free(&cfg);
}

struct bad_case {
	const char *text;
	const char *want;	/* substring of the error */
};

/*
 * The reference in docs/probe.md is the schema table, printed with the
 * built-in defaults: a key added to the table and not to the docs fails.
 */
Test(config, the_reference_in_docs_is_the_schema)
{
	struct probe_config cfg;
	struct strbuf sb = STRBUF_INIT;
	char err[256];

	cr_assert_eq(probe_config_defaults(&cfg, err, sizeof(err)), 0, "%s", err);
	cfg_schema_markdown(probe_config_schema, probe_config_nschema, &cfg, &sb);
	test_doc_holds("docs/probe.md", strbuf_str(&sb), "faultline-probe --config-reference");
	strbuf_release(&sb);
	probe_config_free(&cfg);
}

Test(config, errors_name_file_line_column_and_key)
{
	static const struct bad_case cases[] = {
		{ "interval: fast\n", "probe.yaml:1:11: interval: expected a duration" },
		{ "host: a\nintervall: 1s\n", "probe.yaml:2:12: intervall: unknown key" },
		{ "retention:\n  s1: 15m\n  s5: 1h\n", "probe.yaml:3:7: s5: unknown key" },
		{ "spool:\n  max_snapshots: -3\n", "probe.yaml:2:18: max_snapshots: expected a whole number" },
		{ "spool:\n  max_snapshots: 0\n", "max_snapshots: 0 is out of range" },
		{ "bpf: maybe\n", "probe.yaml:1:6: bpf: expected true or false" },
		{ "block: 7\n", "probe.yaml:1:8: block: expected a map" },
		{ "interval: [1s]\n", "interval: expected a duration, found a list" },
		{ "host: a\nhost: b\n", "probe.yaml:2:1: host: duplicate key (first at line 1)" },
		{ "interval: 1s\n  bad: [\n", "probe.yaml:2:" },
		{ "- a\n- b\n", "top level must be a map" },
		{ "log_level: loud\n", "log_level: expected error, warn, info or debug" },
		{ "host: \"bad host\"\n", "host: 'bad host' has characters" },
		{ "interval: 1ms\n", "probe.yaml:1:11: interval: must be between 10ms and 1h" },
		{ "drive:\n  interval: 30d\n", "probe.yaml:2:13: interval: must be between 1s and 7d" },
		{ "profile:\n  rate: 5000\n", "rate: 5000 is out of range" },
		{ "profile:\n  unwind_rows: 5000\n",
		  "probe.yaml:2:16: unwind_rows: 5000 rows cannot hold python3's" },
		/* the unknown-key message lists the level's keys, from the schema table */
		{ "drive:\n  smartclt: x\n",
		  "probe.yaml:2:13: smartclt: unknown key (valid here: interval, timeout, smartctl)" },
		{ "colour: red\n", "colour: unknown key (valid here: host, interval, page_watch, redis, "
		  "redis_timeout, metrics_addr, web_config, metrics_buckets, bpf, log_level, labels, "
		  "deploy_watch, retention, remote_write, spool, block, drive, profile)" },
		{ "remote_write:\n  url: localhost:9090\n",
		  "probe.yaml:2:8: url: expected an http:// or https:// URL" },
		{ "remote_write:\n  tier: 5m\n", "probe.yaml:2:9: tier: expected 1s, 1m or 1h" },
		{ "remote_write:\n  queue: 5\n", "probe.yaml:2:10: queue: unknown key (valid here: url, "
		  "tier, timeout, queue_samples, max_samples_per_send, min_backoff, max_backoff, "
		  "bearer_token_file, basic_auth, tls)" },
		{ "a: &x 1\nb: *x\n", "aliases are not supported" },
		{ "labels:\n  rack: [1]\n", "labels.rack: expected a string value" },
		{ "labels:\n  \"\": r1\n", "labels: keys must be non-empty" },
		{ "spool:\n  path: [1]\n", "path: expected a string" },
		{ "metrics_buckets:\n  faultline_tcp_in_segs_total: [1]\n",
		  "probe.yaml:2:32: metrics_buckets: 'faultline_tcp_in_segs_total' is not a histogram "
		  "metric" },
		/* the old dotted name: refused, naming the metric */
		{ "metrics_buckets:\n  block.latency: [0.01]\n",
		  "probe.yaml:2:18: metrics_buckets: 'block.latency' is now "
		  "faultline_block_latency_seconds, in seconds" },
		{ "metrics_buckets:\n  faultline_block_latency_seconds: [0.01, 0.001]\n",
		  "probe.yaml:2:43: metrics_buckets.faultline_block_latency_seconds: expected positive "
		  "numbers in "
		  "increasing order (in seconds)" },
		{ "metrics_buckets:\n  faultline_block_latency_seconds: 5\n",
		  "expected a list of 1 to 64 bounds" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct probe_config cfg;
		char err[512] = "";

		cr_assert_neq(parse(cases[i].text, &cfg, err, sizeof(err)), 0,
			      "accepted bad config %zu: %s", i, cases[i].text);
		cr_assert(strstr(err, cases[i].want), "case %zu: got \"%s\", want \"%s\"", i, err,
			  cases[i].want);
		probe_config_free(&cfg);
	}
}

Test(config, missing_file_is_named)
{
	struct probe_config cfg;
	char err[512];

	probe_config_defaults(&cfg, err, sizeof(err));
	cr_assert_neq(probe_config_load(&cfg, "/nonexistent/probe.yaml", err, sizeof(err)), 0);
	cr_assert(strstr(err, "/nonexistent/probe.yaml: cannot open"), "%s", err);
	probe_config_free(&cfg);
}

Test(config, durations)
{
	uint64_t v;
	char buf[32];

	cr_assert_eq(duration_parse("1m30s", &v), 0);
	cr_assert_eq(v, 90 * NSEC_PER_SEC);
	cr_assert_eq(duration_parse("250ms", &v), 0);
	cr_assert_eq(v, 250 * NSEC_PER_MSEC);
	cr_assert_eq(duration_parse("7d", &v), 0);
	cr_assert_str_eq(duration_format(v, buf, sizeof(buf)), "7d");
	cr_assert_str_eq(duration_format(90 * NSEC_PER_SEC, buf, sizeof(buf)), "1m30s");
	cr_assert_neq(duration_parse("10", &v), 0, "a unit is required");
	cr_assert_neq(duration_parse("1x", &v), 0);
	cr_assert_neq(duration_parse("", &v), 0);
	cr_assert_neq(duration_parse("99999999999999999999s", &v), 0);
}

/* NAME=DUR lists (--retention): any order, unknown names, zero and repeats refused by name. */
Test(config, duration_lists)
{
	static const char *const names[] = { "s1", "s60", "s3600" };
	uint64_t v[3] = { 1, 2, 3 };
	char err[256];

	cr_assert_eq(duration_list_parse("s3600=90d,s1=15m", names, 3, v, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(v[0], 15 * 60 * NSEC_PER_SEC);
	cr_assert_eq(v[1], 2, "a name not given keeps its value");
	cr_assert_eq(v[2], 90ULL * 86400 * NSEC_PER_SEC);
	cr_assert_eq(duration_list_parse("", names, 3, v, err, sizeof(err)), 0);
	cr_assert_neq(duration_list_parse("s6=1h", names, 3, v, err, sizeof(err)), 0);
	cr_assert(strstr(err, "'s6=1h'") && strstr(err, "s1, s60, s3600"), "%s", err);
	cr_assert_neq(duration_list_parse("s1", names, 3, v, err, sizeof(err)), 0);
	cr_assert(strstr(err, "'s1'"), "%s", err);
	cr_assert_neq(duration_list_parse("s1=15m,s60=0", names, 3, v, err, sizeof(err)), 0);
	cr_assert(strstr(err, "'s60=0'"), "%s", err);
	cr_assert_neq(duration_list_parse("s60=1x", names, 3, v, err, sizeof(err)), 0);
	cr_assert_neq(duration_list_parse("s1=1m,s1=2m", names, 3, v, err, sizeof(err)), 0);
	cr_assert(strstr(err, "twice"), "%s", err);
	cr_assert_neq(duration_list_parse("s1=1m,", names, 3, v, err, sizeof(err)), 0,
		      "an empty item after a comma");
}

/* cfg_number: a number in range, positioned errors otherwise (an empty value is not 0). */
Test(config, numbers)
{
	static const char text[] = "a: 0.25\nb: \"\"\nc: 2\nd: lots\n";
	struct cfg c;
	char err[256];
	double v = -1;

	cr_assert_eq(cfg_parse(&c, "n.yaml", text, strlen(text), err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(cfg_number(&c, c.root, "a", 0, 1, &v, err, sizeof(err)), 0, "%s", err);
	cr_expect_float_eq(v, 0.25, 1e-12);
	cr_expect_eq(cfg_number(&c, c.root, "absent", 0, 1, &v, err, sizeof(err)), 0);
	cr_expect_float_eq(v, 0.25, 1e-12, "an absent key leaves the value alone");
	cr_expect_neq(cfg_number(&c, c.root, "b", 0, 1, &v, err, sizeof(err)), 0);
	cr_expect(strstr(err, "n.yaml:2:"), "%s", err);
	cr_expect_neq(cfg_number(&c, c.root, "c", 0, 1, &v, err, sizeof(err)), 0);
	cr_expect(strstr(err, "n.yaml:3:") && strstr(err, "c: expected a number in 0..1"), "%s",
		  err);
	cr_expect_neq(cfg_number(&c, c.root, "d", 0, 1, &v, err, sizeof(err)), 0);
	cr_expect(strstr(err, "found 'lots'"), "%s", err);
	cfg_free(&c);
}

Test(config, metrics_listen_on_loopback_unless_told_otherwise)
{
	struct probe_config cfg;
	char err[512];

	cr_assert_eq(probe_config_defaults(&cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(strncmp(cfg.metrics_addr, "127.0.0.1:", 10), 0,
		     "the built-in /metrics address is %s, not loopback", cfg.metrics_addr);
	probe_config_free(&cfg);
}

/* /metrics bucket bounds per histogram metric: parsed, later entries replacing earlier. */
Test(config, metrics_buckets)
{
	struct probe_config cfg;
	char err[512] = "";

	cr_assert_eq(parse("metrics_buckets:\n  faultline_block_latency_seconds: [0.001, 0.01, 0.1]\n"
			   "  faultline_block_size_bytes: [4096, 65536]\n", &cfg, err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(cfg.buckets.n, 2);
	cr_expect_str_eq(cfg.buckets.m[0].metric, "faultline_block_latency_seconds");
	cr_expect_eq(cfg.buckets.m[0].n, 3);
	cr_expect_float_eq(cfg.buckets.m[0].bound[2], 0.1, 1e-12);
	cr_expect_eq(cfg.buckets.m[1].n, 2);
	probe_config_free(&cfg);
}
