/*
 * test_web.c - faultline-web: Prometheus' HTTP API over the Redis tiers.
 *
 * A fleet of three hosts is written to a real Redis the way probes write
 * it (1 s snapshots for the last minutes, 1-minute rollups for two hours,
 * through lib/store), with values that make every answer known: h1 and h2
 * in rack r1 (their own label) count 2 and 5 checksum errors a second, h3
 * in rack r2 (the topology's label) 1; their CPU is 0.25, 0.5 and 0.75;
 * their reads take 1 ms, 4 ms and 16 ms.  Then the real faultline-web is
 * asked through the real promtool and curl, and web/query.c directly.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <json-c/json.h>

#include "core/jsonc.h"
#include "core/timeutil.h"
#include "model/histogram.h"
#include "model/rollup.h"
#include "rules/engine/engine.h"
#include "rules/lang/columns.h"
#include "rules/lang/expr.h"
#include "rules/lang/rules.h"
#include "model/profile.h"
#include "store/alert_checkpoint.h"
#include "store/alert_group.h"
#include "store/drives.h"
#include "store/profile_store.h"
#include "store/chunk_cache.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/store.h"
#include "tests/helpers.h"
#include "web/float_text.h"
#include "web/prom_api.h"
#include "web/query.h"

static struct test_redis redis;
static pid_t web_pid;
static int port;
static uint64_t t_end;		/* the newest snapshot's time */
static struct topology topo;
static char rules_path[320];

/* Rack r1's two hosts count 2 and 5 bad segments a second: the rack pages. */
static const char incident_rules[] =
	"groups:\n  - name: web\n    rules:\n"
	"      - alert: RackChecksumErrors\n"
	"        expr: rate(faultline_tcp_in_csum_errors_total[30s]) > 1.5\n"
	"        for: 10s\n        severity: page\n"
	"        rollup: {by: [rack], min_hosts: 2, min_fraction: 0.5}\n"
	"        annotations:\n"
	"          summary: \"{{ $labels.rack }}: corrupt segments\"\n"
	"          runbook_url: https://runbooks.example/rack-checksums\n"
	"        evidence: [cpu_stacks, csum_peers]\n";

#define MINUTES 120
#define S1_SECONDS 240

static const struct {
	const char *host, *rack;
	uint64_t csum_per_s;
	double cpu;
	uint64_t read_ns;
} fleet[] = {
	{ "h1", "r1", 2, 0.25, 1000000 },
	{ "h2", "r1", 5, 0.5, 4000000 },
	{ "h3", NULL, 1, 0.75, 16000000 },	/* rack r2 from the topology */
};

static void host_snapshot(struct snapshot *s, int h, uint64_t ts, uint64_t sec)
{
	struct series *lat;

	snapshot_init(s, fleet[h].host, ts, 1000, sec, 1);
	if (fleet[h].rack)
		snapshot_set_label(s, "rack", fleet[h].rack);
	snapshot_add_counter(s, "tcp.in_csum_errors", sec * fleet[h].csum_per_s, NULL);
	snapshot_add_gauge(s, "cpu.host_utilization", fleet[h].cpu, NULL);
	/* the corrupt segments come from one peer for rack r1, another for h3 */
	snapshot_add_counter(s, "tcp.bad_csum", sec * fleet[h].csum_per_s, "interface", "eth0",
			     "peer", fleet[h].rack ? "192.0.2.7" : "192.0.2.9", NULL);
	lat = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read",
			   NULL);
	hist_record_n(lat->hist, fleet[h].read_ns, 10 * (sec + 1));
}

/* Two hours of the fleet: every minute as a rollup, the last S1_SECONDS as 1 s. */
static void write_fleet(void)
{
	struct store_opts so = {
		.url = redis.url,
		.timeout_ns = NSEC_PER_SEC,
		.retention_ms = { 15 * 60 * 1000, 7ULL * 86400 * 1000, 90ULL * 86400 * 1000 },
		.spool_max_entries = 100000,
		.spool_max_bytes = 1 << 30,
	};
	char err[256];
	struct store *st = store_open(&so, err, sizeof(err));
	uint64_t now = time_wall_ns() / 1000000;
	uint64_t t0 = (now / 60000 - MINUTES) * 60000;

	cr_assert_not_null(st, "%s", err);
	t_end = t0 + (uint64_t)MINUTES * 60000;
	for (int h = 0; h < 3; h++) {
		struct rollup r;
		uint64_t win = 0;

		cr_assert_eq(rollup_init(&r, fleet[h].host, 60), 0);
		for (uint64_t sec = 0; t0 + sec * 1000 <= t_end; sec++) {
			uint64_t ts = t0 + sec * 1000;
			struct snapshot s, m;

			host_snapshot(&s, h, ts, sec);
			if (win && rollup_window_of(&r, ts) != win && rollup_pending(&r)) {
				cr_assert_eq(rollup_finish(&r, &m), 0);
				cr_assert_eq(store_put_rollup(st, &m, NULL), 0);
				snapshot_free(&m);
			}
			win = rollup_window_of(&r, ts);
			cr_assert_eq(rollup_add(&r, &s), 0);
			if (ts + S1_SECONDS * 1000 > t_end)
				cr_assert_eq(store_put_snapshot(st, &s), 0);
			snapshot_free(&s);
		}
		rollup_free(&r);
	}
	cr_assert_eq(store_flush(st, 20 * NSEC_PER_SEC), 0);
	store_close(st);
}

static void start(void)
{
	char bin[256], addr[64], tpath[300], err[256];
	FILE *f;

	cr_assert_eq(test_redis_start(&redis), 0);
	write_fleet();
	snprintf(tpath, sizeof(tpath), "%s/topology.yaml", redis.dir);
	f = fopen(tpath, "w");
	cr_assert_not_null(f);
	fprintf(f, "hosts:\n  \"h3\": {rack: r2}\n");
	fclose(f);
	snprintf(rules_path, sizeof(rules_path), "%s/rules.yaml", redis.dir);
	f = fopen(rules_path, "w");
	cr_assert_not_null(f);
	fputs(incident_rules, f);
	fclose(f);
	cr_assert_eq(topology_load(&topo, tpath, err, sizeof(err)), 0, "%s", err);
	port = test_free_port();
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	snprintf(bin, sizeof(bin), "%s/faultline-web", test_out_dir());
	web_pid = fork();
	if (web_pid == 0) {
		execl(bin, bin, "--redis", redis.url, "--listen", addr, "--topology", tpath,
		      "--rules", rules_path, "--log-level", "error", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 50 && test_sh("curl -s -o /dev/null http://%s/-/healthy", addr); i++)
		usleep(100000);
}

static void stop(void)
{
	if (web_pid > 0) {
		kill(web_pid, SIGTERM);
		waitpid(web_pid, NULL, 0);
	}
	web_pid = 0;
	topology_free(&topo);
	test_redis_destroy(&redis);
}

/* stdout of cmd (malloc'd), its exit status in *rc. */
static char *run(const char *cmd, int *rc)
{
	FILE *p = popen(cmd, "r");
	char *out = calloc(1, 1 << 20);
	size_t n = 0;
	int st;

	cr_assert_not_null(p);
	while (n < (1 << 20) - 1 && fgets(out + n, (int)((1 << 20) - n), p))
		n = strlen(out);
	st = pclose(p);
	if (rc)
		*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

/* GET path (already URL-encoded) as JSON, its HTTP status in *status. */
static json_object *get(const char *path, int *status)
{
	char cmd[2048], *out, *nl, err[256];
	json_object *o;

	snprintf(cmd, sizeof(cmd), "curl -s -w '\\n%%{http_code}' 'http://127.0.0.1:%d%s'", port,
		 path);
	out = run(cmd, NULL);
	nl = strrchr(out, '\n');
	cr_assert_not_null(nl, "%s", out);
	*status = atoi(nl + 1);
	*nl = '\0';
	o = jsonc_parse(out, strlen(out), err, sizeof(err));
	cr_assert_not_null(o, "%s: %s", err, out);
	free(out);
	return o;
}

static struct query_opts opts(void)
{
	struct query_opts o = {
		.retention_ms = { 15 * 60 * 1000, 7ULL * 86400 * 1000, 90ULL * 86400 * 1000 },
		.stale_ms = 5000, .max_samples = 50000000, .timeout_ms = 60000,
		.topology = &topo,
	};
	return o;
}

/* The value of r's series whose label key is value (its point k). */
static double value_of(const struct query_result *r, const char *key, const char *value,
		       size_t k)
{
	for (size_t i = 0; i < r->n; i++)
		for (int l = 0; l < r->s[i].nlabels; l++)
			if (!strcmp(r->s[i].labels[l].key, key) &&
			    !strcmp(r->s[i].labels[l].value, value))
				return k < r->s[i].n ? r->s[i].v[k] : NAN;
	return NAN;
}

Test(web, promtool_instant_and_range_queries_answer_from_the_1s_tier, .init = start,
     .fini = stop, .timeout = 120)
{
	char cmd[1024], *out, *line, *save = NULL;
	int rc, lines = 0;

	/* sum by rack: r1 is h1 + h2 (their own label), r2 is h3 (the topology's) */
	snprintf(cmd, sizeof(cmd), "promtool query instant --time=%.3f http://127.0.0.1:%d "
		 "'sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m]))' 2>&1",
		 t_end / 1000.0, port);
	out = run(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "{rack=\"r1\"} => 7 @"), "%s", out);
	cr_assert(strstr(out, "{rack=\"r2\"} => 1 @"), "%s", out);
	free(out);

	/* a plain selector keeps its name, and the host's labels */
	snprintf(cmd, sizeof(cmd), "promtool query instant --time=%.3f http://127.0.0.1:%d "
		 "'faultline_host_cpu_utilization_ratio{rack=\"r2\"}' 2>&1", t_end / 1000.0, port);
	out = run(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	cr_assert(strstr(out, "faultline_host_cpu_utilization_ratio{host=\"h3\", rack=\"r2\"} "
			  "=> 0.75 @"), "%s", out);
	free(out);

	/* the median of h2's 4 ms reads, by classic buckets as Prometheus computes it */
	snprintf(cmd, sizeof(cmd), "promtool query instant --time=%.3f http://127.0.0.1:%d "
		 "'histogram_quantile(0.5, sum by (le) (rate(faultline_block_latency_seconds_bucket"
		 "{host=\"h2\"}[1m])))' 2>&1", t_end / 1000.0, port);
	out = run(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	{
		const char *v = strstr(out, "=> ");
		double q = v ? strtod(v + 3, NULL) : NAN;

		/* 4 ms lies in the bucket (2.048 ms, 4.096 ms] */
		cr_assert(q > 0.002048 && q <= 0.004096, "%s", out);
	}
	free(out);

	/* a range: one value per 10 s step, every one of them h2's rate */
	snprintf(cmd, sizeof(cmd), "promtool query range --start=%.3f --end=%.3f --step=10s "
		 "http://127.0.0.1:%d 'rate(faultline_tcp_in_csum_errors_total{host=\"h2\"}[30s])' "
		 "2>&1", (t_end - 120000) / 1000.0, t_end / 1000.0, port);
	out = run(cmd, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, " @["))
			continue;
		cr_assert(strstr(line, "5 @["), "%s", line);
		lines++;
	}
	cr_assert_eq(lines, 13, "13 steps over 2 minutes at 10 s, got %d", lines);
	free(out);
}

Test(web, a_query_past_the_1s_retention_reads_the_minute_tier, .init = start, .fini = stop,
     .timeout = 120)
{
	struct query_opts o = opts();
	struct query_result r;
	struct conn *c = test_redis_connect(&redis);
	char err[512];
	uint64_t hour_ago = t_end - 3600000;

	/* an hour ago only the minutes hold it: rate over whole minutes is exact */
	cr_assert_eq(query_run(c, &o, "sum by (rack) (rate(faultline_tcp_in_csum_errors_total[5m]))",
			       hour_ago, hour_ago, 0, &r, err, sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(r.tier, 60);
	cr_assert_eq(r.type, QUERY_VECTOR);
	cr_assert_float_eq(value_of(&r, "rack", "r1", 0), 7.0, 1e-9);
	cr_assert_float_eq(value_of(&r, "rack", "r2", 0), 1.0, 1e-9);
	query_result_free(&r);

	/* a range at a 5 m step over 90 minutes: the minute tier, every step 0.5 */
	cr_assert_eq(query_run(c, &o, "avg_over_time(faultline_host_cpu_utilization_ratio"
			       "{host=\"h2\"}[5m])", t_end - 100 * 60000, t_end - 10 * 60000,
			       300000, &r, err, sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(r.tier, 60);
	cr_assert_eq(r.type, QUERY_MATRIX);
	cr_assert_eq(r.n, 1);
	cr_assert_eq(r.s[0].n, 19);
	for (size_t k = 0; k < r.s[0].n; k++)
		cr_assert_float_eq(r.s[0].v[k], 0.5, 1e-9);
	/* only h2 was read: the host= matcher reached the registry */
	cr_assert_eq(r.hosts_read, 1);
	query_result_free(&r);

	/* what a rollup cannot answer is refused, saying why and where */
	cr_assert_eq(query_run(c, &o, "deriv(faultline_host_cpu_utilization_ratio[5m])",
			       hour_ago, hour_ago, 0, &r, err, sizeof(err)), QUERY_BAD_DATA);
	cr_assert(strstr(err, "1:7:") && strstr(err, "1-minute tier"), "%s", err);

	/* two hours at a 1 h step: the hour tier, which has nothing yet (no hour ended) */
	cr_assert_eq(query_run(c, &o, "faultline_host_cpu_utilization_ratio", t_end - 7200000,
			       t_end, 3600000, &r, err, sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(r.tier, 3600);
	query_result_free(&r);

	/* more points than allowed: Prometheus' execution error */
	o.max_samples = 100;
	cr_assert_eq(query_run(c, &o, "faultline_host_cpu_utilization_ratio", t_end - 60000,
			       t_end, 1000, &r, err, sizeof(err)), QUERY_EXECUTION);
	cr_assert(strstr(err, "too many samples"), "%s", err);
	conn_close(c);
}

/* How many SCANs the test's Redis has answered. */
static long long scans(struct conn *c)
{
	redisReply *r = conn_commandf(c, NULL, "INFO commandstats");
	const char *at;
	long long n = 0;

	cr_assert(r && r->type == REDIS_REPLY_STRING);
	at = strstr(r->str, "cmdstat_scan:calls=");
	if (at)
		n = atoll(at + strlen("cmdstat_scan:calls="));
	freeReplyObject(r);
	return n;
}

/*
 * A query whose every selector names its host (host="...") reads those
 * hosts' records alone, without listing the fleet (no SCAN), and answers
 * what the same query listing the fleet answers; a name with no record
 * answers nothing.
 */
Test(web, a_query_naming_its_hosts_reads_their_records_alone, .init = start, .fini = stop,
     .timeout = 120)
{
	struct query_opts o = opts();
	struct query_result a, b;
	struct conn *c = test_redis_connect(&redis);
	char err[512];
	long long before;

	before = scans(c);
	cr_assert_eq(query_run(c, &o, "faultline_host_cpu_utilization_ratio{host=\"h2\"}",
			       t_end - 60000, t_end, 10000, &a, err, sizeof(err)), QUERY_OK, "%s",
		     err);
	cr_assert_eq(scans(c), before, "a one-host query listed the fleet");
	cr_assert_eq(a.hosts_read, 1);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(query_run(c, &o, "faultline_host_cpu_utilization_ratio{host=~\"h2\"}",
			       t_end - 60000, t_end, 10000, &b, err, sizeof(err)), QUERY_OK, "%s",
		     err);
	cr_assert_gt(scans(c), before, "a regex on host lists the fleet (the count works)");
	cr_assert_eq(b.n, 1);
	cr_assert_eq(a.s[0].n, b.s[0].n);
	cr_assert_gt(a.s[0].n, 0);
	cr_assert_eq(a.s[0].nlabels, b.s[0].nlabels, "the host's labels (rack, switch) as listed");
	for (int k = 0; k < a.s[0].nlabels; k++)
		cr_assert_str_eq(a.s[0].labels[k].value, b.s[0].labels[k].value);
	for (size_t k = 0; k < a.s[0].n; k++)
		cr_assert(a.s[0].v[k] == b.s[0].v[k], "step %zu", k);
	query_result_free(&a);
	query_result_free(&b);

	before = scans(c);
	cr_assert_eq(query_run(c, &o, "faultline_host_cpu_utilization_ratio{host=\"h1\"} or "
			       "faultline_host_cpu_utilization_ratio{host=\"h3\"}", t_end, t_end, 0,
			       &a, err, sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(a.hosts_read, 2);
	cr_assert_eq(a.n, 2);
	query_result_free(&a);
	cr_assert_eq(query_run(c, &o, "faultline_host_cpu_utilization_ratio{host=\"nope\"}",
			       t_end, t_end, 0, &a, err, sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(a.hosts_read, 0);
	cr_assert_eq(a.n, 0);
	query_result_free(&a);
	cr_assert_eq(scans(c), before);
	conn_close(c);
}

/* `@` pins a selector: to a time, or the range's start or end, at every step. */
Test(web, at_pins_a_selector_to_a_time_or_the_range_s_ends, .init = start, .fini = stop,
     .timeout = 120)
{
	struct query_opts o = opts();
	struct query_result r;
	struct conn *c = test_redis_connect(&redis);
	uint64_t t0 = t_end - (uint64_t)MINUTES * 60000;	/* h2's counter: 5 a second since */
	char q[256], err[512];
	static const char *const at[] = { "@ %.3f", "@ start()", "@ end()" };
	double want[] = { 5.0 * ((t_end - 60000 - t0) / 1000), 5.0 * ((t_end - 120000 - t0) / 1000),
			  5.0 * ((t_end - t0) / 1000) };

	for (int i = 0; i < 3; i++) {
		char pin[64];

		snprintf(pin, sizeof(pin), at[i], (t_end - 60000) / 1000.0);
		snprintf(q, sizeof(q), "faultline_tcp_in_csum_errors_total{host=\"h2\"} %s", pin);
		cr_assert_eq(query_run(c, &o, q, t_end - 120000, t_end, 30000, &r, err,
				       sizeof(err)), QUERY_OK, "%s: %s", q, err);
		cr_assert_eq(r.n, 1, "%s", q);
		cr_assert_eq(r.s[0].n, 5, "%s", q);
		for (size_t k = 0; k < r.s[0].n; k++)
			cr_assert_float_eq(r.s[0].v[k], want[i], 1e-9, "%s step %zu: %g", q, k,
					   r.s[0].v[k]);
		query_result_free(&r);
	}
	/* a rate as of a minute ago, with its own range, at every step */
	snprintf(q, sizeof(q), "rate(faultline_tcp_in_csum_errors_total{host=\"h1\"}[30s] @ %.3f)",
		 (t_end - 60000) / 1000.0);
	cr_assert_eq(query_run(c, &o, q, t_end - 20000, t_end, 10000, &r, err, sizeof(err)),
		     QUERY_OK, "%s", err);
	cr_assert_eq(r.s[0].n, 3);
	cr_assert_float_eq(r.s[0].v[2], 2.0, 1e-9);
	query_result_free(&r);
	/*
	 * 30 s after the fleet went quiet: no instant value (stale, as the rules
	 * engine sees it), but a range still reads what it holds, as PromQL's
	 */
	cr_assert_eq(query_run(c, &o, "faultline_host_cpu_utilization_ratio", t_end + 30000,
			       t_end + 30000, 0, &r, err, sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(r.n, 0);
	query_result_free(&r);
	cr_assert_eq(query_run(c, &o, "max_over_time(faultline_host_cpu_utilization_ratio[1m])",
			       t_end + 30000, t_end + 30000, 0, &r, err, sizeof(err)), QUERY_OK,
		     "%s", err);
	cr_assert_eq(r.n, 3);
	cr_assert_float_eq(value_of(&r, "host", "h3", 0), 0.75, 1e-9);
	query_result_free(&r);
	/* a rule still may not pin a time: it would see nothing */
	{
		struct node *n = NULL;

		cr_assert_neq(expr_parse("faultline_host_cpu_utilization_ratio @ 1700000000", &n,
					 err, sizeof(err)), 0);
		cr_assert(strstr(err, "fixed time"), "%s", err);
	}
	conn_close(c);
}

Test(web, api_errors_series_labels_and_metadata_have_prometheus_shapes, .init = start,
     .fini = stop, .timeout = 120)
{
	json_object *o, *d;
	char path[512];
	int status, found = 0;

	/* a parse error: 400 bad_data, positioned */
	o = get("/api/v1/query?query=rate(faultline_tcp_in_csum_errors_total%5B1m%5D", &status);
	cr_assert_eq(status, 400);
	cr_assert_str_eq(jsonc_str(o, "status"), "error");
	cr_assert_str_eq(jsonc_str(o, "errorType"), "bad_data");
	cr_assert(strstr(jsonc_str(o, "error"), "1:"), "%s", jsonc_str(o, "error"));
	json_object_put(o);

	/* too fine a range: Prometheus' 11,000 points */
	o = get("/api/v1/query_range?query=up&start=0&end=100000&step=1", &status);
	cr_assert_eq(status, 400);
	cr_assert(strstr(jsonc_str(o, "error"), "11,000"), "%s", jsonc_str(o, "error"));
	json_object_put(o);

	/* a scalar is a scalar, at the query's time */
	o = get("/api/v1/query?query=time()&time=1700000000.5", &status);
	cr_assert_eq(status, 200);
	cr_assert_str_eq(jsonc_str(o, "data.resultType"), "scalar");
	d = jsonc_path(o, "data.result");
	cr_assert_float_eq(json_object_get_double(json_object_array_get_idx(d, 0)), 1700000000.5,
			   1e-6);
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(d, 1)), "1700000000.5");
	json_object_put(o);

	/* series: rack r1's, named and labelled as a query names them */
	snprintf(path, sizeof(path), "/api/v1/series?match%%5B%%5D=faultline_tcp_in_csum_errors_total"
		 "%%7Brack%%3D%%22r1%%22%%7D&end=%.3f", t_end / 1000.0);
	o = get(path, &status);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(o));
	d = jsonc_path(o, "data");
	cr_assert_eq(json_object_array_length(d), 2, "%s", json_object_to_json_string(o));
	for (size_t i = 0; i < 2; i++) {
		json_object *s = json_object_array_get_idx(d, i);

		cr_assert_str_eq(jsonc_str(s, "__name__"), "faultline_tcp_in_csum_errors_total");
		cr_assert_str_eq(jsonc_str(s, "rack"), "r1");
	}
	json_object_put(o);

	/* label names and a label's values, sorted */
	snprintf(path, sizeof(path), "/api/v1/labels?end=%.3f", t_end / 1000.0);
	o = get(path, &status);
	cr_assert_eq(status, 200);
	d = jsonc_path(o, "data");
	for (size_t i = 0; i < json_object_array_length(d); i++) {
		const char *l = json_object_get_string(json_object_array_get_idx(d, i));

		found += !strcmp(l, "__name__") + !strcmp(l, "le") + !strcmp(l, "rack") +
			 !strcmp(l, "device");
	}
	cr_assert_eq(found, 4, "%s", json_object_to_json_string(o));
	json_object_put(o);
	snprintf(path, sizeof(path), "/api/v1/label/host/values?end=%.3f", t_end / 1000.0);
	o = get(path, &status);
	cr_assert_str_eq(json_object_to_json_string_ext(jsonc_path(o, "data"),
							JSON_C_TO_STRING_PLAIN),
			 "[\"h1\",\"h2\",\"h3\"]");
	json_object_put(o);

	/* metadata from the catalog, buildinfo for Grafana */
	o = get("/api/v1/metadata?metric=faultline_tcp_in_csum_errors_total", &status);
	cr_assert_eq(status, 200);
	d = jsonc_path(o, "data.faultline_tcp_in_csum_errors_total");
	cr_assert_not_null(d, "%s", json_object_to_json_string(o));
	cr_assert_str_eq(jsonc_str(json_object_array_get_idx(d, 0), "type"), "counter");
	json_object_put(o);
	o = get("/api/v1/status/buildinfo", &status);
	cr_assert_eq(status, 200);
	cr_assert_str_eq(jsonc_str(o, "data.version"), FL_VERSION);
	cr_assert_str_eq(jsonc_str(o, "data.goVersion"), "none (faultline is C)");
	json_object_put(o);
	o = get("/api/v1/nope", &status);
	cr_assert_eq(status, 404);
	json_object_put(o);
}

/* ---- ALERTS and ALERTS_FOR_STATE from the alert checkpoint --------------- */

/* A real engine evaluates e's rules every second over the fleet's last two minutes. */
static void evaluate_fleet(struct engine *e, engine_event_cb cb, void *arg)
{
	for (uint64_t t = t_end - 120000; t <= t_end; t += 1000) {
		for (int h = 0; h < 3; h++) {
			struct snapshot s;

			host_snapshot(&s, h, t, t / 1000);
			cr_assert_eq(engine_take_snapshot(e, &s), 0);
		}
		engine_eval(e, t, cb, arg);
	}
}

static void no_event(const char *json, void *arg)
{
	(void)json;
	(void)arg;
}

struct records {
	char *fp[8], *json[8];
	int n;
};

static void keep_record(const char *fp, const char *json, void *arg)
{
	struct records *r = arg;

	if (r->n < 8) {
		r->fp[r->n] = strdup(fp);
		r->json[r->n++] = strdup(json);
	}
}

/*
 * A real engine evaluates HostBusy (CPU over 0.4 for 30 s) over the
 * fleet's last two minutes and writes its checkpoint as faultline-rules
 * does: h2 and h3 went pending at t_end - 120 s and fired 30 s later.
 */
static void checkpoint_fleet(struct conn *c)
{
	static const char rules[] = "groups:\n  - name: web\n    rules:\n"
				    "      - alert: HostBusy\n"
				    "        expr: faultline_host_cpu_utilization_ratio > 0.4\n"
				    "        for: 30s\n        severity: warning\n";
	struct engine_opts eo = { .stale_ms = 5000, .topology = &topo };
	struct ruleset rs = { 0 };
	struct records r = { 0 };
	struct engine *e;
	char err[512];
	char refused[1];

	cr_assert_eq(rules_parse(&rs, "web.yaml", rules, strlen(rules), err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(engine_init(&e, &rs, &eo), 0);
	evaluate_fleet(e, no_event, NULL);
	cr_assert_eq(engine_state_export(e, keep_record, &r), 2);
	cr_assert_eq(store_alerts_commit(c, NULL, 0, (const char *const *)r.fp,
					 (const char *const *)r.json, r.n, refused, err,
					 sizeof(err)), 0, "%s", err);
	for (int i = 0; i < r.n; i++) {
		free(r.fp[i]);
		free(r.json[i]);
	}
	engine_free(e);
}

Test(web, alerts_series_come_from_the_alert_checkpoint, .init = start, .fini = stop,
     .timeout = 120)
{
	struct query_opts o = opts();
	struct query_result r;
	struct conn *c = test_redis_connect(&redis);
	char err[512];

	checkpoint_fleet(c);
	/* firing now: h2 and h3, with Prometheus' labels */
	cr_assert_eq(query_run(c, &o, "ALERTS{alertstate=\"firing\"}", t_end, t_end, 0, &r, err,
			       sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(r.n, 2);
	for (size_t i = 0; i < r.n; i++) {
		int seen = 0;

		for (int k = 0; k < r.s[i].nlabels; k++) {
			const struct label *l = &r.s[i].labels[k];

			seen += !strcmp(l->key, "__name__") && !strcmp(l->value, "ALERTS");
			seen += !strcmp(l->key, "alertname") && !strcmp(l->value, "HostBusy");
			seen += !strcmp(l->key, "severity") && !strcmp(l->value, "warning");
			seen += !strcmp(l->key, "host") && (!strcmp(l->value, "h2") ||
							    !strcmp(l->value, "h3"));
		}
		cr_assert_eq(seen, 4);
		cr_assert_float_eq(r.s[i].v[0], 1.0, 1e-9);
	}
	cr_assert_float_eq(value_of(&r, "rack", "r2", 0), 1.0, 1e-9);	/* h3, by topology */
	query_result_free(&r);

	/* when it went pending */
	cr_assert_eq(query_run(c, &o, "ALERTS_FOR_STATE{host=\"h2\"}", t_end, t_end, 0, &r, err,
			       sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(r.n, 1);
	cr_assert_float_eq(r.s[0].v[0], (double)((t_end - 120000) / 1000), 1e-9);
	query_result_free(&r);

	/* over time: nothing before it began, pending for its `for`, then firing */
	cr_assert_eq(query_run(c, &o, "count by (alertstate) (ALERTS)", t_end - 180000, t_end,
			       10000, &r, err, sizeof(err)), QUERY_OK, "%s", err);
	cr_assert_eq(r.n, 2);
	for (size_t i = 0; i < r.n; i++) {
		int firing = !strcmp(r.s[i].labels[0].value, "firing");

		/* pending from -120 s to -91 s: steps -120, -110, -100; firing from -90 s */
		cr_assert_eq(r.s[i].n, firing ? 10 : 3, "%s: %zu", r.s[i].labels[0].value,
			     r.s[i].n);
		cr_assert_eq(r.s[i].ts[0], t_end - (firing ? 90000 : 120000));
		cr_assert_float_eq(r.s[i].v[0], 2.0, 1e-9);
	}
	query_result_free(&r);

	/* no range over them: there is no history to take one over */
	cr_assert_eq(query_run(c, &o, "max_over_time(ALERTS[5m])", t_end, t_end, 0, &r, err,
			       sizeof(err)), QUERY_BAD_DATA);
	cr_assert(strstr(err, "alert checkpoint"), "%s", err);
	conn_close(c);
}

/* ---- the same answers as a real Prometheus ------------------------------ */

static pid_t side[3];		/* probe, prometheus, the I/O load */
static char side_dir[256];
static char loop_dev[64];	/* the load's own disk: no other test's I/O on it */

static pid_t spawn(char *const argv[])
{
	pid_t p = fork();

	if (p == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return p;
}

/* 4 KiB O_DIRECT writes, each synced, every 20 ms on the clock: a steady rate. */
static void steady_writes(const char *path)
{
	struct timespec next;
	void *buf;
	int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT, 0600);

	if (fd < 0 || posix_memalign(&buf, 4096, 4096))
		_exit(1);
	memset(buf, 0x5a, 4096);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (unsigned i = 0;; i++) {
		if (pwrite(fd, buf, 4096, (off_t)(i % 256) * 4096) != 4096)
			_exit(1);
		fdatasync(fd);
		next.tv_nsec += 20000000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
}

static void side_stop(void)
{
	for (int i = 0; i < 3; i++)
		if (side[i] > 0) {
			kill(side[i], SIGTERM);
			waitpid(side[i], NULL, 0);
			side[i] = 0;
		}
	if (web_pid > 0) {
		kill(web_pid, SIGTERM);
		waitpid(web_pid, NULL, 0);
	}
	web_pid = 0;
	if (loop_dev[0])
		test_sh("losetup -d %s", loop_dev);
	loop_dev[0] = '\0';
	if (side_dir[0])
		test_remove_dir(side_dir);
	test_redis_destroy(&redis);
}

/* One instant query's single value from the API at base (faultline-web or Prometheus). */
static double instant(int at_port, const char *q, double t)
{
	char cmd[2048], *out, err[256];
	json_object *o, *res;
	double v = NAN;

	snprintf(cmd, sizeof(cmd), "curl -s -G 'http://127.0.0.1:%d/api/v1/query' "
		 "--data-urlencode 'query=%s' --data-urlencode 'time=%.3f'", at_port, q, t);
	out = run(cmd, NULL);
	o = jsonc_parse(out, strlen(out), err, sizeof(err));
	cr_assert_not_null(o, "%s: %s", err, out);
	res = jsonc_path(o, "data.result");
	cr_assert_not_null(res, "%s: %s", q, out);
	cr_assert_eq(json_object_array_length(res), 1, "%s on :%d: %s", q, at_port, out);
	v = strtod(json_object_get_string(json_object_array_get_idx(
		jsonc_path(json_object_array_get_idx(res, 0), "value"), 1)), NULL);
	json_object_put(o);
	free(out);
	return v;
}

/*
 * Every panel of the shipped faultline-web dashboard is a query
 * faultline-web answers over a real probe's snapshots (Grafana's variables
 * as it would fill them: $host the probe's, $__rate_interval 30s), and the
 * host variable's label_values lists the probe.
 */
static void dashboard_answers(void)
{
	char cmd[2048], *out, *line, *save = NULL, err[256];
	int queries = 0, status;
	json_object *o;

	snprintf(cmd, sizeof(cmd), "cd %s/.. && python3 -c 'import json; "
		 "[print(t[\"expr\"]) for p in json.load(open(\"etc/grafana/faultline-host-web.json\"))"
		 "[\"panels\"] for t in p.get(\"targets\", [])]'", test_out_dir());
	out = run(cmd, NULL);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char q[1024], *res;
		const char *p;
		size_t n = 0;

		for (p = line; *p && n < sizeof(q) - 32; ) {
			if (!strncmp(p, "$host", 5)) {
				n += (size_t)snprintf(q + n, sizeof(q) - n, "webcmp");
				p += 5;
			} else if (!strncmp(p, "$__rate_interval", 16)) {
				n += (size_t)snprintf(q + n, sizeof(q) - n, "30s");
				p += 16;
			} else {
				q[n++] = *p++;
			}
		}
		q[n] = '\0';
		snprintf(cmd, sizeof(cmd), "curl -s -G 'http://127.0.0.1:%d/api/v1/query' "
			 "--data-urlencode 'query=%s'", port, q);
		res = run(cmd, NULL);
		o = jsonc_parse(res, strlen(res), err, sizeof(err));
		cr_assert_not_null(o, "%s: %s", q, res);
		cr_assert_str_eq(jsonc_str(o, "status"), "success", "%s: %s", q, res);
		json_object_put(o);
		free(res);
		queries++;
	}
	free(out);
	cr_assert_geq(queries, 15, "the dashboard's queries were not read");
	o = get("/api/v1/label/host/values?match%5B%5D=faultline_host_cpu_utilization_ratio",
		&status);
	cr_assert_str_eq(json_object_to_json_string_ext(jsonc_path(o, "data"),
							JSON_C_TO_STRING_PLAIN), "[\"webcmp\"]");
	json_object_put(o);
}

Test(web, answers_agree_with_a_real_prometheus_scraping_the_same_probe_at_1s,
     .fini = side_stop, .timeout = 180)
{
	char probe[256], web[256], cfg[300], tsdb[300], file[300], paddr[64], waddr[64],
	     maddr[64], listen[128], cfgarg[320], tsdbarg[320];
	int mport, pport;
	FILE *f;
	static const char *const templates[] = {
		"sum(rate(faultline_block_ios_total{device=\"%s\",op=\"write\"}[30s]))",
		"sum(rate(faultline_block_bytes_total{device=\"%s\",op=\"write\"}[30s]))",
		"histogram_quantile(0.9, sum by (le) "
		"(rate(faultline_block_latency_seconds_bucket{device=\"%s\",op=\"write\"}[30s])))",
		"histogram_quantile(0.5, sum by (le) "
		"(rate(faultline_block_size_bytes_bucket{device=\"%s\",op=\"write\"}[30s])))",
	};
	char queries[4][300];

	cr_assert_eq(test_redis_start(&redis), 0);
	snprintf(side_dir, sizeof(side_dir), "/var/tmp/fl-webcmp-%d", getpid());
	cr_assert_eq(mkdir(side_dir, 0700), 0);
	mport = test_free_port();
	port = test_free_port();
	pport = test_free_port();
	snprintf(maddr, sizeof(maddr), "127.0.0.1:%d", mport);
	snprintf(waddr, sizeof(waddr), "127.0.0.1:%d", port);
	snprintf(paddr, sizeof(paddr), "127.0.0.1:%d", pport);
	snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", side_dir);
	snprintf(tsdb, sizeof(tsdb), "%s/tsdb", side_dir);
	snprintf(file, sizeof(file), "%s/load", side_dir);
	f = fopen(cfg, "w");
	cr_assert_not_null(f);
	fprintf(f, "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
		"scrape_configs:\n  - job_name: probe\n    static_configs: [{targets: ['%s']}]\n",
		maddr);
	fclose(f);
	snprintf(probe, sizeof(probe), "%s/faultline-probe", test_out_dir());
	snprintf(web, sizeof(web), "%s/faultline-web", test_out_dir());
	snprintf(listen, sizeof(listen), "--web.listen-address=%s", paddr);
	snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", cfg);
	snprintf(tsdbarg, sizeof(tsdbarg), "--storage.tsdb.path=%s", tsdb);
	{
		char *pa[] = { probe, "--redis", redis.url, "--host", "webcmp", "--metrics-addr",
			       maddr, "--log-level", "error", NULL };
		char *ma[] = { "prometheus", cfgarg, tsdbarg, listen, NULL };
		char *wa[] = { web, "--redis", redis.url, "--listen", waddr, "--log-level",
			       "error", NULL };

		side[0] = spawn(pa);
		side[1] = spawn(ma);
		web_pid = spawn(wa);
	}
	/* the load writes to a loop device of its own, so only it moves that disk's series */
	{
		char cmd[600];
		FILE *p;

		cr_assert_eq(test_sh("truncate -s 16M %s", file), 0);
		snprintf(cmd, sizeof(cmd), "losetup -f --show --direct-io=on %s", file);
		p = popen(cmd, "r");
		cr_assert(p && fgets(loop_dev, sizeof(loop_dev), p), "losetup failed");
		pclose(p);
		loop_dev[strcspn(loop_dev, "\n")] = '\0';
	}
	side[2] = fork();
	if (side[2] == 0)
		steady_writes(loop_dev);
	/* 30 s windows, then 15 s more so both have a full window of scrapes and snapshots */
	sleep(48);
	cr_assert_eq(waitpid(side[0], NULL, WNOHANG), 0, "the probe stopped");
	cr_assert_eq(waitpid(side[1], NULL, WNOHANG), 0, "prometheus stopped");
	for (int i = 0; i < 4; i++)
		snprintf(queries[i], sizeof(queries[i]), templates[i], strrchr(loop_dev, '/') + 1);
	{
		double t = (double)(time_wall_ns() / 1000000) / 1000.0 - 3;

		for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
			double ours = instant(port, queries[i], t), theirs = instant(pport, queries[i], t);
			/* rates: the windows differ by where the scrape fell in the second */
			double tol = i < 2 ? 0.10 : 0.25;

			cr_log_info("%s: faultline-web %g, prometheus %g", queries[i], ours, theirs);
			cr_assert(isfinite(ours) && isfinite(theirs) && theirs > 0,
				  "%s: faultline-web %g, prometheus %g", queries[i], ours, theirs);
			cr_assert(fabs(ours - theirs) <= tol * theirs,
				  "%s: faultline-web %g, prometheus %g (more than %.0f %% apart)",
				  queries[i], ours, theirs, tol * 100);
		}
	}
	dashboard_answers();
}

/* ---- incident pages, in a real browser ---------------------------------- */

static void keep_firing(const char *json, void *arg)
{
	char **ev = arg;

	if (!*ev && strstr(json, "\"status\":\"firing\""))
		*ev = strdup(json);
}

/*
 * The rack's page as faultline-rules makes it (a real engine over the
 * fleet's last two minutes, faultline-web's address given), taken into the
 * alert index as an alerter takes it; h1's CPU profile around it.
 */
static char *page_the_rack(struct conn *c, char *fp, size_t fplen)
{
	struct engine_opts eo = { .stale_ms = 5000, .topology = &topo };
	struct store_opts so = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				 .retention_ms = { 900000, 86400000, 86400000 },
				 .spool_max_entries = 100, .spool_max_bytes = 1 << 20 };
	static const char *const stack[] = { "main", "handle", "parse_invoice" };
	struct ruleset rs = { 0 };
	struct engine *e;
	struct profile pr;
	struct store *st;
	enum alert_group_verdict verdict;
	char err[512], gid[33], *ev = NULL, *blob;
	json_object *o;
	size_t len;
	int unsent;

	snprintf(eo.web_url, sizeof(eo.web_url), "http://127.0.0.1:%d", port);
	cr_assert_eq(rules_parse(&rs, "rules.yaml", incident_rules, strlen(incident_rules), err,
				 sizeof(err)), 0, "%s", err);
	cr_assert_eq(engine_init(&e, &rs, &eo), 0);
	evaluate_fleet(e, keep_firing, &ev);
	engine_free(e);
	cr_assert_not_null(ev, "the rack did not page");
	o = jsonc_parse(ev, strlen(ev), err, sizeof(err));
	cr_assert_str_eq(jsonc_str(o, "labels.rack"), "r1", "%s", ev);
	cr_assert_null(jsonc_path(o, "labels.host"), "a host paged, not the rack: %s", ev);
	snprintf(fp, fplen, "%s", jsonc_str(o, "fingerprint"));
	{
		char want[128];

		snprintf(want, sizeof(want), "http://127.0.0.1:%d/alert/%s", port, fp);
		cr_assert_str_eq(jsonc_str(o, "generatorURL"), want);
	}
	json_object_put(o);
	alert_group_id("web-test", gid);
	cr_assert_eq(alert_group_take(c, gid, fp, "1-0", 1, t_end - 60000, ev, strlen(ev),
				      &verdict, &unsent, err, sizeof(err)), 0, "%s", err);
	/* h1's stacks: parse_invoice is where its CPU goes */
	st = store_open(&so, err, sizeof(err));
	cr_assert_not_null(st, "%s", err);
	profile_init(&pr, "h1");
	pr.rate_hz = 99;
	pr.duration_ms = 10000;
	pr.ts_ms = t_end - 100000;	/* it fired at about t_end - 109 s */
	profile_add(&pr, "billing.service", "billing", 7, stack, 3, 900);
	profile_add(&pr, "billing.service", "billing", 7, stack, 2, 90);
	cr_assert_eq(profile_encode(&pr, &blob, &len), 0);
	cr_assert_eq(profile_store_put(st, "h1", PROFILE_CPU, pr.ts_ms, 0, blob, len), 0);
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_close(st);
	free(blob);
	profile_free(&pr);
	return ev;
}

/* What chromium --headless makes of path: its DOM (malloc'd), a screenshot in png. */
static char *chromium(const char *path, const char *png, int width)
{
	char cmd[1024];

	if (png) {
		snprintf(cmd, sizeof(cmd), "chromium --headless --no-sandbox --disable-gpu "
			 "--hide-scrollbars --window-size=%d,1600 --screenshot=%s "
			 "'http://127.0.0.1:%d%s' >/dev/null 2>&1", width, png, port, path);
		cr_assert_eq(test_sh("%s", cmd), 0, "%s", cmd);
		return NULL;
	}
	snprintf(cmd, sizeof(cmd), "chromium --headless --no-sandbox --disable-gpu --dump-dom "
		 "'http://127.0.0.1:%d%s' 2>/dev/null", port, path);
	return run(cmd, NULL);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

Test(web, the_incident_page_shows_the_domain_the_series_the_stacks_and_the_runbook,
     .init = start, .fini = stop, .timeout = 180)
{
	struct conn *c = test_redis_connect(&redis);
	char fp[64], path[128], png[320], cmd[700], *dom, *out, *ev, *pv;
	double p;
	long w, red, colours;

	ev = page_the_rack(c, fp, sizeof(fp));
	snprintf(path, sizeof(path), "/alert/%s", fp);
	dom = chromium(path, NULL, 0);
	/* the alert, on its rack */
	cr_assert(strstr(dom, "id=\"alertname\">RackChecksumErrors</h1>"), "%.2000s", dom);
	cr_assert(strstr(dom, "id=\"domain\">rack=r1</b>"), "%.2000s", dom);
	/*
	 * its p-value: both hits of the 3 hosts landing in r1's 2 is 1 / C(3, 2)
	 * by chance, less with their onsets together (Fisher's combination)
	 */
	pv = strstr(dom, "class=\"pvalue\">p = ");
	cr_assert(pv && sscanf(pv + strlen("class=\"pvalue\">p = "), "%lf", &p) == 1,
		  "%.4000s", dom);
	cr_assert(p > 0 && p <= 1.0 / 3 + 1e-9, "p = %g", p);
	cr_assert(strstr(dom, "r1: corrupt segments"), "%.2000s", dom);
	/* the map: r1's two hosts, both hit; h3 is in r2, not on it */
	cr_assert_eq(count(dom, "class=\"host hit\""), 2, "%.4000s", dom);
	cr_assert_eq(count(dom, "class=\"host\""), 0, "%.4000s", dom);
	cr_assert(strstr(dom, "<title>h1</title>") && strstr(dom, "<title>h2</title>") &&
		  !strstr(dom, "<title>h3</title>"));
	/* the series: the rule's left side per host, and its threshold */
	cr_assert(strstr(dom, "id=\"series\""), "%.4000s", dom);
	cr_assert_eq(count(dom, "class=\"line\""), 2, "%.6000s", strstr(dom, "id=\"series\""));
	cr_assert(strstr(dom, "<title>threshold 1.5</title>"));
	/* the evidence: h1's stacks as a flame graph naming the function */
	cr_assert(strstr(dom, "parse_invoice"), "no flame graph naming parse_invoice");
	/* the runbook */
	cr_assert(strstr(dom, "href=\"https://runbooks.example/rack-checksums\""));
	free(dom);

	/* on a phone: the page is drawn, the hit hosts in red */
	snprintf(png, sizeof(png), "%s/incident.png", getenv("FL_KEEP_PNG") ? "/tmp" : redis.dir);
	chromium(path, png, 400);
	snprintf(cmd, sizeof(cmd), "python3 %s/../tests/tools/png_colors.py %s d32f2f",
		 test_out_dir(), png);
	out = run(cmd, NULL);
	cr_assert_eq(sscanf(out, "%ld %*d d32f2f %ld colours %ld", &w, &red, &colours), 3, "%s",
		     out);
	cr_assert_eq(w, 400, "%s", out);
	cr_assert_geq(red, 2 * 12 * 12 / 2, "the hit hosts are not drawn red: %s", out);
	cr_assert_geq(colours, 50, "a blank page: %s", out);
	free(out);

	/* the fleet page lists it under its rack, linked */
	dom = chromium("/fleet", NULL, 0);
	cr_assert(strstr(dom, "class=\"domain\">rack=r1</h2>"), "%.3000s", dom);
	snprintf(path, sizeof(path), "href=\"/alert/%s\"", fp);
	cr_assert(strstr(dom, path), "%.3000s", dom);
	free(dom);

	/* the checksum peers: rack r1's two hosts, both from 192.0.2.7 */
	snprintf(path, sizeof(path), "/alert/%s", fp);
	dom = chromium(path, NULL, 0);
	cr_assert(strstr(dom, "id=\"csum-peers\""), "%.3000s", dom);
	cr_assert_eq(count(dom, "class=\"peer\""), 2, "%.6000s", strstr(dom, "csum-peers"));
	cr_assert(strstr(dom, "192.0.2.7") && !strstr(dom, "192.0.2.9"));
	free(dom);

	/* an unknown alert, and the wear page */
	dom = chromium("/alert/00000000000000ff", NULL, 0);
	cr_assert(strstr(dom, "No firing alert has this fingerprint"), "%.2000s", dom);
	free(dom);
	dom = chromium("/wear", NULL, 0);
	cr_assert(strstr(dom, "Fleet SSD wear report"), "%.2000s", dom);
	free(dom);
	free(ev);
	conn_close(c);
}

/* A drive's alert shows the drive's record and its wear by day. */
Test(web, a_drive_alert_s_page_shows_the_record_and_the_wear_history, .init = start,
     .fini = stop, .timeout = 120)
{
	struct store_opts so = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				 .retention_ms = { 900000, 86400000, 86400000 },
				 .spool_max_entries = 100, .spool_max_bytes = 1 << 20 };
	static const char *const days[] = { "2026-11-01", "2026-11-15", "2026-12-01" };
	struct conn *c = test_redis_connect(&redis);
	struct drive_record rec = { 0 };
	enum alert_group_verdict verdict;
	char err[512], gid[33], ev[1024], t[40], *dom;
	struct store *st = store_open(&so, err, sizeof(err));
	int unsent;

	cr_assert_not_null(st, "%s", err);
	snprintf(rec.device, sizeof(rec.device), "sda");
	snprintf(rec.protocol, sizeof(rec.protocol), "ata");
	snprintf(rec.model, sizeof(rec.model), "ACME SSD 960");
	snprintf(rec.serial, sizeof(rec.serial), "S3RIAL42");
	snprintf(rec.status, sizeof(rec.status), "ok");
	rec.smart_passed = 1;
	rec.rotational = 0;
	rec.read_at_ms = t_end;
	for (int i = 0; i < 3; i++) {
		rec.f[DF_WEAR_USED_PCT].present = 1;
		rec.f[DF_WEAR_USED_PCT].v = 40 + 10 * i;
		drives_put(st, "h1", &rec, days[i]);
	}
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_close(st);
	snprintf(ev, sizeof(ev), "{\"status\":\"firing\",\"fingerprint\":\"00000000000000d5\","
		 "\"labels\":{\"alertname\":\"DriveWearing\",\"device\":\"sda\",\"host\":\"h1\","
		 "\"severity\":\"warning\"},\"annotations\":{\"summary\":\"sda wears\"},"
		 "\"startsAt\":\"%s\",\"generatorURL\":\"\",\"faultline\":{\"evidence\":[\"drive\"]}}",
		 time_format_rfc3339((t_end - 60000) * 1000000, t, sizeof(t)));
	alert_group_id("web-drive", gid);
	cr_assert_eq(alert_group_take(c, gid, "00000000000000d5", "2-0", 1, t_end - 60000, ev,
				      strlen(ev), &verdict, &unsent, err, sizeof(err)), 0, "%s", err);
	dom = chromium("/alert/00000000000000d5", NULL, 0);
	cr_assert(strstr(dom, "id=\"drive\""), "%.3000s", dom);
	cr_assert(strstr(dom, "ACME SSD 960") && strstr(dom, "S3RIAL42"), "%.3000s", dom);
	cr_assert(strstr(dom, "id=\"wear-history\""), "%.5000s", strstr(dom, "id=\"drive\""));
	cr_assert(strstr(dom, "3 day(s) of history"), "%.5000s", strstr(dom, "id=\"drive\""));
	/* its map: h1 in its rack r1, beside h2 */
	cr_assert_eq(count(dom, "class=\"host hit\""), 1);
	cr_assert_eq(count(dom, "class=\"host\""), 1);
	free(dom);
	conn_close(c);
}

/*
 * A deploy regression's page: the deploy's numbers, and the minutes after
 * it against as long before it as a differential flame graph, whose frames
 * say which grew.
 */
Test(web, a_deploy_regression_s_page_shows_the_deploy_and_the_differential_stacks,
     .init = start, .fini = stop, .timeout = 120)
{
	struct store_opts so = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				 .retention_ms = { 900000, 86400000, 86400000 },
				 .spool_max_entries = 100, .spool_max_bytes = 1 << 20 };
	static const char *const hot[] = { "main", "handle", "parse_invoice" };
	static const char *const other[] = { "main", "handle", "render" };
	struct conn *c = test_redis_connect(&redis);
	uint64_t at = t_end - 120000, fired = t_end - 60000;
	enum alert_group_verdict verdict;
	char err[512], gid[33], ev[1400], t1[40], t2[40], *dom;
	struct store *st = store_open(&so, err, sizeof(err));
	int unsent;

	cr_assert_not_null(st, "%s", err);
	/* before the deploy render and parse_invoice share the CPU; after, parse_invoice takes it */
	for (int side = 0; side < 2; side++) {
		struct profile pr;
		char *blob;
		size_t len;

		profile_init(&pr, "h2");
		pr.rate_hz = 99;
		pr.duration_ms = 10000;
		pr.ts_ms = side ? at + 30000 : at - 30000;
		profile_add(&pr, "billing.service", "billing", 7, hot, 3, side ? 900 : 100);
		profile_add(&pr, "billing.service", "billing", 7, other, 3, 100);
		cr_assert_eq(profile_encode(&pr, &blob, &len), 0);
		cr_assert_eq(profile_store_put(st, "h2", PROFILE_CPU, pr.ts_ms, 0, blob, len), 0);
		free(blob);
		profile_free(&pr);
	}
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
	store_close(st);
	snprintf(ev, sizeof(ev), "{\"status\":\"firing\",\"fingerprint\":\"00000000000000d7\","
		 "\"labels\":{\"alertname\":\"PostDeployHotFunction\",\"host\":\"h2\","
		 "\"service\":\"billing\",\"severity\":\"warning\"},\"annotations\":{},"
		 "\"startsAt\":\"%s\",\"generatorURL\":\"\",\"faultline\":{\"firedAt\":\"%s\","
		 "\"value\":2.5,\"deploy\":{\"service\":\"billing\",\"at_ms\":%" PRIu64
		 ",\"base_ms\":%" PRIu64 "}}}",
		 time_format_rfc3339(fired * 1000000, t1, sizeof(t1)),
		 time_format_rfc3339(fired * 1000000, t2, sizeof(t2)), at, at - 900000);
	alert_group_id("web-deploy", gid);
	cr_assert_eq(alert_group_take(c, gid, "00000000000000d7", "3-0", 1, fired, ev, strlen(ev),
				      &verdict, &unsent, err, sizeof(err)), 0, "%s", err);
	dom = chromium("/alert/00000000000000d7", NULL, 0);
	cr_assert(strstr(dom, "Deploy of <b>billing</b>"), "%.4000s", dom);
	cr_assert(strstr(dom, "Verdict value: <b>2.5</b>"), "%.4000s", dom);
	cr_assert(strstr(dom, "h2 after the deploy against before it"), "no differential graph");
	cr_assert(strstr(dom, "red: share grew since the base"), "not a differential graph");
	cr_assert(strstr(dom, "parse_invoice") && strstr(dom, "render"));
	free(dom);
	conn_close(c);
}

/* a and b hold the same series, labels and values (NaN as NaN), and some. */
static void same_answers(const struct query_result *a, const struct query_result *b,
			 const char *what)
{
	cr_assert_eq(a->n, b->n, "%s: %zu series from memory, %zu from Redis", what, a->n, b->n);
	cr_assert_gt(a->n, 0, "%s", what);
	for (size_t i = 0; i < a->n; i++) {
		cr_assert_eq(a->s[i].nlabels, b->s[i].nlabels);
		for (int k = 0; k < a->s[i].nlabels; k++)
			cr_assert_str_eq(a->s[i].labels[k].value, b->s[i].labels[k].value);
		cr_assert_eq(a->s[i].n, b->s[i].n, "%s", what);
		for (size_t k = 0; k < a->s[i].n; k++)
			cr_assert(a->s[i].ts[k] == b->s[i].ts[k] &&
				  (a->s[i].v[k] == b->s[i].v[k] ||
				   (isnan(a->s[i].v[k]) && isnan(b->s[i].v[k]))),
				  "%s: step %zu: %g from memory, %g from Redis", what, k,
				  a->s[i].v[k], b->s[i].v[k]);
	}
}

/*
 * The in-memory tail answers as Redis does: the same queries, the same
 * series and values, from memory, or from Redis and the tail together for a
 * range that begins before what it holds; a query older than what it
 * holds goes to Redis.
 */
Test(web, the_in_memory_tail_answers_as_redis_does, .init = start, .fini = stop,
     .timeout = 120)
{
	static const char *const queries[] = {
		"sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m]))",
		"faultline_host_cpu_utilization_ratio{rack=\"r1\"}",
		"histogram_quantile(0.5, sum by (le) (rate(faultline_block_latency_seconds_bucket[1m])))",
		"max_over_time(rate(faultline_tcp_in_csum_errors_total{host=\"h2\"}[10s])[1m:10s])",
		"faultline_tcp_in_csum_errors_total{host=\"h1\"} @ end()",
	};
	struct query_opts cold = opts(), warm = opts();
	struct query_result a, b;
	struct conn *c = test_redis_connect(&redis);
	char err[512];
	int served = 0;

	/*
	 * It holds from 170 s before t_end (t_end is the minute the fleet was
	 * written in, up to a minute ago): the queries below reach back 105 s,
	 * the one it must leave to Redis 235 s (the fleet's 1 s tier: 240 s).
	 */
	warm.hot = query_hot_start(redis.url, &warm,
				   time_wall_ns() / 1000000 - t_end + 170000);
	cr_assert_not_null(warm.hot);
	for (int i = 0; i < 100 && !served; i++) {
		cr_assert_eq(query_run(c, &warm, queries[0], t_end, t_end, 0, &a, err, sizeof(err)),
			     QUERY_OK, "%s", err);
		served = a.from_memory;
		query_result_free(&a);
		if (!served)
			usleep(100000);
	}
	cr_assert(served, "the tail never served a query");
	cr_assert_eq(query_hot_hosts(warm.hot, NULL), 3);
	for (size_t q = 0; q < sizeof(queries) / sizeof(queries[0]); q++) {
		cr_assert_eq(query_run(c, &warm, queries[q], t_end - 30000, t_end, 10000, &a, err,
				       sizeof(err)), QUERY_OK, "%s: %s", queries[q], err);
		cr_assert_eq(query_run(c, &cold, queries[q], t_end - 30000, t_end, 10000, &b, err,
				       sizeof(err)), QUERY_OK, "%s: %s", queries[q], err);
		cr_assert(a.from_memory && !b.from_memory, "%s", queries[q]);
		same_answers(&a, &b, queries[q]);
		query_result_free(&a);
		query_result_free(&b);
		/*
		 * a range that begins before what the tail holds: Redis up to
		 * where it begins, the tail's points from there, copied (its
		 * histograms' deltas on points not copied rebuilt in full)
		 */
		cr_assert_eq(query_run(c, &warm, queries[q], t_end - 200000, t_end, 5000, &a, err,
				       sizeof(err)), QUERY_OK, "%s: %s", queries[q], err);
		cr_assert_eq(query_run(c, &cold, queries[q], t_end - 200000, t_end, 5000, &b, err,
				       sizeof(err)), QUERY_OK, "%s: %s", queries[q], err);
		cr_assert(!a.from_memory && !b.from_memory && !b.memory_from_ms, "%s", queries[q]);
		cr_assert(a.memory_from_ms > t_end - 200000 && a.memory_from_ms < t_end - 150000,
			  "%s: the tail served from %" PRIu64 " (t_end %" PRIu64 ")", queries[q],
			  a.memory_from_ms, t_end);
		same_answers(&a, &b, queries[q]);
		query_result_free(&a);
		query_result_free(&b);
	}
	/* older than it holds (and within the 4 min of 1 s the fleet has): Redis answers */
	cr_assert_eq(query_run(c, &warm, queries[1], t_end - 230000, t_end - 230000, 0, &a, err,
			       sizeof(err)), QUERY_OK, "%s", err);
	cr_assert(!a.from_memory);
	cr_assert_eq(a.n, 2);
	query_result_free(&a);
	query_hot_stop(warm.hot);
	conn_close(c);
}

/*
 * Ended chunks kept decoded (--query.chunk-cache-mb): the 1 s tier's ended
 * minutes and the minute tier's ended hour, asked twice through a cache,
 * answer as a reader without one does, the second time from the cache;
 * a query of other series is not served the first one's points.
 */
Test(web, the_chunk_cache_answers_as_decoding_does, .init = start, .fini = stop,
     .timeout = 120)
{
	static const struct {
		const char *q;
		uint64_t back_ms, step_ms;	/* the range: [t_end - back_ms, t_end] */
	} asks[] = {
		{ "sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m]))", 200000, 5000 },
		{ "faultline_host_cpu_utilization_ratio{rack=\"r1\"}", 230000, 1000 },
		{ "histogram_quantile(0.5, sum by (le) (rate("
		  "faultline_block_latency_seconds_bucket[1m])))", 200000, 10000 },
		{ "faultline_tcp_in_csum_errors_total{host=\"h1\"}", 230000, 1000 },
		/* the minute tier: its first hour ended, a chunk */
		{ "sum by (rack) (rate(faultline_tcp_in_csum_errors_total[5m]))",
		  (MINUTES - 10) * 60000ULL, 60000 },
	};
	struct query_opts cold = opts(), warm = opts();
	struct chunk_cache_stats st;
	struct query_result a, b;
	struct conn *c = test_redis_connect(&redis);
	uint64_t misses;
	char err[512];

	warm.cache = chunk_cache_new(64 << 20);
	cr_assert_not_null(warm.cache);
	for (int round = 0; round < 2; round++) {
		for (size_t q = 0; q < sizeof(asks) / sizeof(asks[0]); q++) {
			uint64_t from = t_end - asks[q].back_ms;

			cr_assert_eq(query_run(c, &warm, asks[q].q, from, t_end, asks[q].step_ms,
					       &a, err, sizeof(err)), QUERY_OK, "%s: %s",
				     asks[q].q, err);
			cr_assert_eq(query_run(c, &cold, asks[q].q, from, t_end, asks[q].step_ms,
					       &b, err, sizeof(err)), QUERY_OK, "%s: %s",
				     asks[q].q, err);
			cr_assert_eq(a.tier, b.tier);
			cr_assert_eq(a.tier, q == 4 ? 60 : 1, "%s read the %u s tier", asks[q].q,
				     a.tier);
			same_answers(&a, &b, asks[q].q);
			query_result_free(&a);
			query_result_free(&b);
		}
		chunk_cache_stats(warm.cache, &st);
		if (!round) {
			cr_assert_gt(st.misses, 0, "the first round decodes the chunks");
			misses = st.misses;
		} else {
			cr_assert_eq(st.misses, misses, "the second round decodes none");
			cr_assert_geq(st.hits, misses, "the second round takes every chunk kept");
		}
	}
	/* another pick of the same chunks: decoded for it, never the first picks' points */
	cr_assert_eq(query_run(c, &warm, "faultline_host_cpu_utilization_ratio{host=\"h2\"}",
			       t_end - 230000, t_end, 1000, &a, err, sizeof(err)), QUERY_OK, "%s",
		     err);
	cr_assert_eq(query_run(c, &cold, "faultline_host_cpu_utilization_ratio{host=\"h2\"}",
			       t_end - 230000, t_end, 1000, &b, err, sizeof(err)), QUERY_OK, "%s",
		     err);
	same_answers(&a, &b, "h2's utilization");
	query_result_free(&a);
	query_result_free(&b);
	chunk_cache_stats(warm.cache, &st);
	cr_assert_gt(st.entries, 0);
	cr_assert_leq(st.bytes, st.max_bytes);
	chunk_cache_free(warm.cache);
	conn_close(c);
}

/* Times are written as seconds, exactly, and read back to the same ms. */
Test(prom_api, times_are_written_exactly_and_read_back)
{
	uint64_t x = 88172645463325252ULL;

	for (long i = 0; i < 400000; i++) {
		char got[40], want[40];
		uint64_t ms, back;
		size_t n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		ms = i < 100000 ? (uint64_t)i : i % 2 ? x % 100000000000000ULL : (x % 10000000) * 1000;
		n = prom_time_text(ms, got);
		got[n] = '\0';
		if (ms % 1000) {
			char frac[8];

			snprintf(frac, sizeof(frac), "%03u", (unsigned)(ms % 1000));
			while (frac[strlen(frac) - 1] == '0')
				frac[strlen(frac) - 1] = '\0';
			snprintf(want, sizeof(want), "%" PRIu64 ".%s", ms / 1000, frac);
		} else {
			snprintf(want, sizeof(want), "%" PRIu64, ms / 1000);
		}
		cr_assert_str_eq(got, want, "%" PRIu64 " ms", ms);
		cr_assert_eq(prom_parse_time(got, &back), 0, "%s", got);
		cr_assert_eq(back, ms, "%s", got);
	}
}

/*
 * v's text checked against what it must be, without the code under test:
 * plain notation that reads back as v, the digits printf rounds v to at
 * that many significant digits, and one digit fewer not reading back.
 */
static void check_float_text(double v)
{
	char got[FLOAT_TEXT_MAX], sci[64], digits[64], *end;
	size_t n = float_text(v, got), nd = 0;
	int s = 0, seen = 0;

	cr_assert_eq(n, strlen(got));
	cr_assert_null(strpbrk(got, "eE"), "%s", got);
	cr_assert_eq(memcmp(&(double){ strtod(got, &end) }, &v, sizeof(v)), 0, "%.17g as %s", v,
		     got);
	cr_assert_eq(*end, '\0', "%s", got);
	/* no empty or zero-ended fraction: "1.", "1.50" are not shortest */
	cr_assert(got[n - 1] != '.' && (!strchr(got, '.') || got[n - 1] != '0'), "%s", got);
	if (v == 0)
		return;
	/* significant digits: from the first non-zero, trailing zeros of an integer kept */
	for (const char *p = got; *p; p++) {
		if (*p < '0' || *p > '9')
			continue;
		seen |= *p != '0';
		if (seen)
			digits[nd++] = *p;
	}
	digits[nd] = '\0';
	s = (int)nd;
	if (!strchr(got, '.'))		/* an integer: its trailing zeros are padding */
		while (s > 1 && digits[s - 1] == '0')
			digits[--s] = '\0';
	snprintf(sci, sizeof(sci), "%.*e", s - 1, fabs(v));
	nd = 0;
	for (const char *p = sci; *p && *p != 'e'; p++)
		if (*p != '.')
			sci[nd++] = *p;
	sci[nd] = '\0';
	cr_assert_str_eq(digits, sci, "%.17g as %s", v, got);
	if (s > 1) {
		snprintf(sci, sizeof(sci), "%.*e", s - 2, v);
		cr_assert_neq(strtod(sci, NULL), v, "%.17g: %s is shorter than %s", v, sci, got);
	}
}

/*
 * Sample values are written as Go's strconv.FormatFloat(v, 'f', -1, 64):
 * the shortest decimal that reads back, in plain notation, whether the fast
 * exact path (dyadic values of up to 16 digits, integers) or Ryu writes it.
 */
Test(prom_api, values_are_written_shortest_in_plain_notation)
{
	static const double fixed[] = { 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e-7, 123.456, 0.5,
		0.25, 0.2583160400390625, 0.24700927734375, 1e15, 1e15 - 1, 999999999999999.9,
		9007199254740991.0, 9007199254740993.0, 1e21, 1e300, 5e-324, 2.2250738585072014e-308,
		0x1p-16, 0x1p-38, 0x1p-39, 3 * 0x1p-40, 4503599627370495.5, 0.0009765625, 1.5e-5,
		65535.9999847412109375, 1 - 0x1p-53, 1 + 0x1p-52, 100, 1e14 + 0.5, 1e15 + 0.5 };
	char got[FLOAT_TEXT_MAX];
	uint64_t x = 0x9E3779B97F4A7C15ULL;

	cr_assert_eq(float_text(-0.0, got), 2);
	cr_assert_str_eq(got, "-0");
	float_text(0.0, got);
	cr_assert_str_eq(got, "0");
	float_text(NAN, got);
	cr_assert_str_eq(got, "NaN");
	float_text(-INFINITY, got);
	cr_assert_str_eq(got, "-Inf");
	float_text(1e-7, got);
	cr_assert_str_eq(got, "0.0000001");
	float_text(0.2583160400390625, got);
	cr_assert_str_eq(got, "0.2583160400390625");
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		check_float_text(fixed[i]);
		check_float_text(-fixed[i]);
	}
	for (long i = 0; i < 300000; i++) {
		double v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (i % 5) {
		case 0:		/* a ratio of 2^-16, as the probe's */
			v = ldexp((double)(x % 65537), -16);
			break;
		case 1:		/* an odd multiple of 2^-k, any k */
			v = ldexp((double)((x >> 20) | 1), -(int)(x % 90));
			break;
		case 2:		/* an integer up to 2^60 */
			v = (double)(x >> (x % 40 + 4));
			break;
		case 3:		/* any finite double */
			memcpy(&v, &x, sizeof(v));
			if (!isfinite(v))
				continue;
			break;
		default:	/* a rate: a count over a window */
			v = (double)(x % 100000) / (double)(x % 300 + 1);
			break;
		}
		check_float_text(x & 1 ? v : -v);
	}
}

/* r's series whose labels render as key (k=v,... in order), or NULL. */
static const struct query_series *series_by(const struct query_result *r, const char *key)
{
	for (size_t i = 0; i < r->n; i++) {
		char buf[512] = "";
		size_t at = 0;

		for (int l = 0; l < r->s[i].nlabels && at < sizeof(buf); l++)
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s=%s,",
					       r->s[i].labels[l].key, r->s[i].labels[l].value);
		if (!strcmp(buf, key))
			return &r->s[i];
	}
	return NULL;
}

/*
 * A range query evaluates its steps as instant queries do: what a selector
 * makes of each column is worked out at the first step and kept (eval.h:
 * sel_memo), a step's elements go to the series they went to before by
 * their labels' pointers (web/query.c: collect).  Whatever two selectors,
 * label functions, offsets or series that come and go do, every step holds
 * the instant query's answer at its time, series for series.
 */
Test(web, every_step_of_a_range_query_is_the_instant_query_then, .init = start,
     .fini = stop, .timeout = 120)
{
	static const char *const queries[] = {
		"rate(faultline_tcp_in_csum_errors_total[30s]) + on(host) "
		"faultline_host_cpu_utilization_ratio",
		"faultline_host_cpu_utilization_ratio{host=~\"h[12]\"} or "
		"faultline_tcp_in_csum_errors_total{host=\"h3\"}",
		"sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m]))",
		"label_replace(faultline_host_cpu_utilization_ratio, \"who\", \"$1\", \"host\", "
		"\"h(.)\")",
		"faultline_tcp_in_csum_errors_total offset 30s",
		/* h1 goes as it grows past 14300, h3 comes past 7150: elements move */
		"faultline_tcp_in_csum_errors_total > 7150 < 14300",
	};
	struct query_opts o = opts();
	struct conn *c = test_redis_connect(&redis);
	char err[512];

	/* steps of 10 s, and of 1 s (each step's point found from the step before's) */
	for (size_t q = 0; q < 2 * sizeof(queries) / sizeof(queries[0]); q++) {
		uint64_t step = q % 2 ? 1000 : 10000, from = t_end - (q % 2 ? 30000 : 100000);
		struct query_result range;
		size_t points = 0;

		const char *qs = queries[q / 2];

		cr_assert_eq(query_run(c, &o, qs, from, t_end, step, &range, err, sizeof(err)),
			     QUERY_OK, "%s: %s", qs, err);
		for (uint64_t t = from; t <= t_end; t += step) {
			struct query_result at;

			cr_assert_eq(query_run(c, &o, qs, t, t, 0, &at, err, sizeof(err)), QUERY_OK,
				     "%s: %s", qs, err);
			for (size_t i = 0; i < at.n; i++) {
				char key[512] = "";
				const struct query_series *rs;
				size_t off = 0, k;

				for (int l = 0; l < at.s[i].nlabels; l++)
					off += (size_t)snprintf(key + off, sizeof(key) - off, "%s=%s,",
								at.s[i].labels[l].key,
								at.s[i].labels[l].value);
				rs = series_by(&range, key);
				cr_assert_not_null(rs, "%s: %s at %" PRIu64 " not in the range's answer",
						   qs, key, t);
				for (k = 0; k < rs->n && rs->ts[k] != t; k++)
					;
				cr_assert_lt(k, rs->n, "%s: %s has no step at %" PRIu64, qs,
					     key, t);
				cr_assert(rs->v[k] == at.s[i].v[0], "%s: %s at %" PRIu64 ": %g, the "
					  "instant query %g", qs, key, t, rs->v[k],
					  at.s[i].v[0]);
				points++;
			}
			query_result_free(&at);
		}
		/* and nothing more: the range holds the instant answers alone */
		for (size_t i = 0; i < range.n; i++)
			points -= range.s[i].n;
		cr_assert_eq(points, 0, "%s: the range holds steps the instant queries do not",
			     qs);
		cr_assert_gt(range.n, 0, "%s", qs);
		query_result_free(&range);
	}
	conn_close(c);
}

/* The tail's hosts and bytes, once both satisfy ok, within secs: 1, or 0. */
static int wait_tail(struct query_hot *hot, int secs, size_t *hosts, size_t *bytes,
		     int (*ok)(size_t hosts, size_t bytes))
{
	for (int i = 0; i < secs * 10; i++) {
		*hosts = query_hot_hosts(hot, bytes);
		if (ok(*hosts, *bytes))
			return 1;
		usleep(100000);
	}
	return 0;
}

static int four_hosts_held(size_t hosts, size_t bytes)
{
	return hosts == 4 && bytes > 4 * sizeof(struct columns);
}

static int h9_dropped(size_t hosts, size_t bytes)
{
	(void)bytes;
	return hosts == 3;
}

static int nothing_held(size_t hosts, size_t bytes)
{
	return hosts == 3 && bytes <= 3 * sizeof(struct columns);
}

/*
 * A fleet's churn does not grow the tail: a host that leaves the registry
 * is dropped from it, and the points of a host gone quiet for longer than
 * the window are let go (the fleet's three hosts are quiet since t_end).
 */
Test(web, the_tail_drops_hosts_that_left_and_lets_quiet_ones_go, .init = start, .fini = stop,
     .timeout = 120)
{
	struct store_opts so = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				 .retention_ms = { 900000, 86400000, 86400000 },
				 .spool_max_entries = 100, .spool_max_bytes = 1 << 20 };
	struct query_opts warm = opts();
	struct conn *c = test_redis_connect(&redis);
	char err[256], key[128];
	struct store *st = store_open(&so, err, sizeof(err));
	size_t hosts = 0, bytes = 0;
	redisReply *r;
	int held = 0;

	cr_assert_not_null(st, "%s", err);
	warm.hot = query_hot_start(redis.url, &warm, 5000);
	cr_assert_not_null(warm.hot);
	/* h9 reports every second until the tail holds it */
	for (uint64_t sec = 0; sec < 20 && !held; sec++) {
		struct snapshot s;

		snapshot_init(&s, "h9", time_wall_ns() / 1000000, 1000, sec, 1);
		snapshot_add_counter(&s, "tcp.in_csum_errors", sec, NULL);
		cr_assert_eq(store_put_snapshot(st, &s), 0);
		snapshot_free(&s);
		cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
		held = wait_tail(warm.hot, 1, &hosts, &bytes, four_hosts_held);
	}
	store_close(st);
	cr_assert(held, "the tail never held h9's points: %zu host(s), %zu bytes", hosts, bytes);
	/* h9 leaves the registry (as `faultline hosts` would see it gone) */
	key_host_record(key, sizeof(key), "h9");
	r = conn_commandf(c, key, "DEL %s", key);
	cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
	freeReplyObject(r);
	cr_assert(wait_tail(warm.hot, 30, &hosts, &bytes, h9_dropped),
		  "h9 left the registry but the tail holds %zu host(s)", hosts);
	/* every host left is quiet for longer than the window: their points go */
	cr_assert(wait_tail(warm.hot, 30, &hosts, &bytes, nothing_held),
		  "quiet hosts still hold %zu bytes in the tail", bytes);
	query_hot_stop(warm.hot);
	conn_close(c);
}

/* h9's snapshots of seconds [from, to) before t0, counter = its second, into Redis. */

/* h9's seconds [from, to) from t0, labelled rack=rack (NULL: no label). */
static void write_h9_in(struct store *st, uint64_t t0, int from, int to, const char *rack)
{
	for (int sec = from; sec < to; sec++) {
		struct snapshot s;

		snapshot_init(&s, "h9", t0 + (uint64_t)sec * 1000, 1000, (uint64_t)sec, 1);
		if (rack)
			snapshot_set_label(&s, "rack", rack);
		snapshot_add_counter(&s, "tcp.in_csum_errors", 3.0 * sec, NULL);
		cr_assert_eq(store_put_snapshot(st, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(store_flush(st, 5 * NSEC_PER_SEC), 0);
}

/* The hosts the tail reaches for rack="rack" now: how many, and whether h9 is one. */
static size_t rack_now(struct conn *c, struct query_opts *o, const char *rack, uint64_t t,
		       int *h9, int *from_memory)
{
	char q[128], err[512];
	struct query_result r;
	size_t n;

	snprintf(q, sizeof(q), "faultline_tcp_in_csum_errors_total{rack=\"%s\"}", rack);
	cr_assert_eq(query_run(c, o, q, t, t, 0, &r, err, sizeof(err)), QUERY_OK, "%s", err);
	*h9 = 0;
	for (size_t i = 0; i < r.n; i++)
		for (int k = 0; k < r.s[i].nlabels; k++)
			if (!strcmp(r.s[i].labels[k].key, "host") &&
			    !strcmp(r.s[i].labels[k].value, "h9"))
				*h9 = 1;
	*from_memory = r.from_memory;
	n = r.n;
	query_result_free(&r);
	return n;
}

/*
 * A query that reaches the whole fleet lists the registry once for as long
 * as the listing is young (query.h: host_list): the next one scans
 * nothing and answers as listing every time does; a host that registers
 * meanwhile is reached by a listing made after it, and by the reused one
 * once that is older than its age.
 */
Test(web, a_fleet_listing_is_reused_while_it_is_young, .init = start, .fini = stop,
     .timeout = 120)
{
	static const char q[] = "sum by (rack) (rate(faultline_tcp_in_csum_errors_total[1m]))";
	struct store_opts so = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				 .retention_ms = { 900000, 86400000, 86400000 },
				 .spool_max_entries = 1000, .spool_max_bytes = 1 << 20 };
	struct query_opts cold = opts(), warm = opts(), brief = opts();
	struct conn *c = test_redis_connect(&redis);
	uint64_t t0 = (time_wall_ns() / 1000000 / 1000 - 40) * 1000;
	struct query_result a, b;
	struct store *st;
	long long before;
	int h9 = 0, mem = 0;
	char err[512];

	warm.registry = host_list_new(600000);
	brief.registry = host_list_new(300);
	cr_assert(warm.registry && brief.registry);
	before = scans(c);
	cr_assert_eq(query_run(c, &warm, q, t_end, t_end, 0, &a, err, sizeof(err)), QUERY_OK,
		     "%s", err);
	cr_assert_gt(scans(c), before, "the first query lists the registry");
	before = scans(c);
	cr_assert_eq(query_run(c, &warm, q, t_end, t_end, 0, &b, err, sizeof(err)), QUERY_OK,
		     "%s", err);
	cr_assert_eq(scans(c), before, "the second reuses the listing");
	same_answers(&a, &b, "a reused listing");
	query_result_free(&b);
	cr_assert_eq(query_run(c, &cold, q, t_end, t_end, 0, &b, err, sizeof(err)), QUERY_OK,
		     "%s", err);
	same_answers(&a, &b, "a listing of its own");
	query_result_free(&a);
	query_result_free(&b);

	/* h9 registers: the young listing does not know it, a new one does */
	st = store_open(&so, err, sizeof(err));
	cr_assert_not_null(st, "%s", err);
	write_h9_in(st, t0, 0, 20, "r5");
	store_close(st);
	rack_now(c, &warm, "r5", t0 + 19000, &h9, &mem);
	cr_assert(!h9, "a listing made before h9 registered reached it");
	rack_now(c, &cold, "r5", t0 + 19000, &h9, &mem);
	cr_assert(h9, "a listing of its own does not reach h9");
	rack_now(c, &brief, "r5", t0 + 19000, &h9, &mem);
	cr_assert(h9);
	usleep(400000);		/* older than brief's 300 ms: listed again */
	before = scans(c);
	rack_now(c, &brief, "r5", t0 + 19000, &h9, &mem);
	cr_assert(h9);
	cr_assert_gt(scans(c), before, "a listing older than its age was reused");
	host_list_free(warm.registry);
	host_list_free(brief.registry);
	conn_close(c);
}

/*
 * The tail finds a rack's hosts by its label index, not by scanning every
 * host: a host that moves racks is found under its new rack as soon as
 * the tail has read it there, and no longer under the old one.
 */
Test(web, the_tail_finds_a_host_under_the_rack_it_moved_to, .init = start, .fini = stop,
     .timeout = 120)
{
	struct store_opts so = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				 .retention_ms = { 900000, 86400000, 86400000 },
				 .spool_max_entries = 1000, .spool_max_bytes = 1 << 20 };
	struct query_opts warm = opts();
	struct conn *c = test_redis_connect(&redis);
	uint64_t t0 = (time_wall_ns() / 1000000 / 1000 - 40) * 1000;
	char err[512];
	struct store *st = store_open(&so, err, sizeof(err));
	int h9 = 0, mem = 0;

	cr_assert_not_null(st, "%s", err);
	warm.hot = query_hot_start(redis.url, &warm, 120000);
	cr_assert_not_null(warm.hot);
	write_h9_in(st, t0, 0, 20, "r5");
	for (int i = 0; i < 250 && !(h9 && mem); i++) {	/* new hosts are listed every 10 s */
		rack_now(c, &warm, "r5", t0 + 19000, &h9, &mem);
		if (!(h9 && mem))
			usleep(100000);
	}
	cr_assert(h9 && mem, "the tail never served h9 in r5");
	/* h9 moves to r6: found there from the tail's next read */
	write_h9_in(st, t0, 20, 35, "r6");
	store_close(st);
	for (int i = 0; i < 100; i++) {
		rack_now(c, &warm, "r6", t0 + 34000, &h9, &mem);
		if (h9 && mem)
			break;
		usleep(100000);
	}
	cr_assert(h9 && mem, "h9 not found in r6 from memory (from memory: %d)", mem);
	cr_assert_eq(rack_now(c, &warm, "r5", t0 + 34000, &h9, &mem), 0);
	cr_assert(mem && !h9, "h9 still under r5");
	query_hot_stop(warm.hot);
	conn_close(c);
}

/*
 * Snapshots delivered late (a probe's spool draining after an outage: a
 * burst of seconds older than now, in order) reach the tail as they reach
 * Redis, and a query from memory over the outage answers what Redis does.
 */
Test(web, the_tail_takes_what_a_spool_delivers_late, .init = start, .fini = stop,
     .timeout = 120)
{
	static const char q[] = "rate(faultline_tcp_in_csum_errors_total{host=\"h9\"}[10s])";
	struct store_opts so = { .url = redis.url, .timeout_ns = NSEC_PER_SEC,
				 .retention_ms = { 900000, 86400000, 86400000 },
				 .spool_max_entries = 1000, .spool_max_bytes = 1 << 20 };
	struct query_opts warm = opts(), cold = opts();
	struct conn *c = test_redis_connect(&redis);
	uint64_t t0 = (time_wall_ns() / 1000000 / 1000 - 70) * 1000;
	struct query_result a, b;
	char err[512];
	struct store *st = store_open(&so, err, sizeof(err));
	int served = 0;

	cr_assert_not_null(st, "%s", err);
	warm.hot = query_hot_start(redis.url, &warm, 120000);
	cr_assert_not_null(warm.hot);
	/* before the outage: 70 s ago to 50 s ago, read by the tail */
	write_h9_in(st, t0, 0, 20, NULL);
	for (int i = 0; i < 250 && !served; i++) {	/* new hosts are listed every 10 s */
		cr_assert_eq(query_run(c, &warm, q, t0 + 15000, t0 + 15000, 0, &a, err,
				       sizeof(err)), QUERY_OK, "%s", err);
		served = a.from_memory && a.n == 1;
		query_result_free(&a);
		if (!served)
			usleep(100000);
	}
	cr_assert(served, "the tail never served h9");
	/* the outage's 45 s, delivered at once when it ends */
	write_h9_in(st, t0, 20, 65, NULL);
	store_close(st);
	/* the tail reads every second: up to 10 s on a busy machine */
	for (int i = 0;; i++) {
		cr_assert_eq(query_run(c, &warm, q, t0 + 15000, t0 + 60000, 5000, &a, err,
				       sizeof(err)), QUERY_OK, "%s", err);
		if (i == 100 || (a.n == 1 && a.s[0].n == 10))
			break;
		query_result_free(&a);
		usleep(100000);
	}
	cr_assert_eq(query_run(c, &cold, q, t0 + 15000, t0 + 60000, 5000, &b, err, sizeof(err)),
		     QUERY_OK, "%s", err);
	cr_assert(a.from_memory && !b.from_memory);
	cr_assert_eq(a.n, 1);
	cr_assert_eq(b.n, 1);
	cr_assert_eq(b.s[0].n, 10, "Redis has %zu of the 10 steps", b.s[0].n);
	cr_assert_eq(a.s[0].n, b.s[0].n, "the tail answered %zu steps, Redis %zu", a.s[0].n,
		     b.s[0].n);
	for (size_t k = 0; k < a.s[0].n; k++) {
		cr_assert_eq(a.s[0].ts[k], b.s[0].ts[k]);
		cr_assert_float_eq(a.s[0].v[k], 3.0, 1e-9, "step %zu: %g from memory", k,
				   a.s[0].v[k]);
		cr_assert_float_eq(b.s[0].v[k], 3.0, 1e-9, "step %zu: %g from Redis", k,
				   b.s[0].v[k]);
	}
	query_result_free(&a);
	query_result_free(&b);
	query_hot_stop(warm.hot);
	conn_close(c);
}
