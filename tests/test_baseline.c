/*
 * test_baseline.c - post-deploy baselines: the Mann–Whitney test against
 * known values, and the engine judging deploys on a simulated fleet whose
 * CPU use is noisy: a 30 % regression on the deployed half fires, naming
 * the deploy and its hosts; the same deploy during a fleet-wide 30 % load
 * rise does not; a deploy to every host is judged against its own past.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/alert.h"
#include "store/deploy.h"
#include "model/profile.h"
#include "probes/probe.h"
#include "rules/engine/engine.h"
#include "rules/engine/fleet.h"
#include "rules/lang/expr.h"
#include "model/catalog.h"
#include "rules/lang/columns.h"
#include "rules/lang/eval.h"
#include "rules/engine/minute_source.h"
#include "tests/helpers.h"
#include "model/histogram.h"
#include "rules/lang/rules.h"
#include "rules/engine/stats.h"
#include "core/timeutil.h"

Test(stats, mann_whitney_against_reference_values)
{
	double a[] = { 6, 7, 8, 9, 10 }, b[] = { 1, 2, 3, 4, 5 };
	double c[] = { 1, 2, 3, 4, 5 }, m[] = { 3, 1, 2 };
	double all_tied[] = { 4, 4, 4 };

	/* U = 25 of 25 pairs: z = (25 - 12.5 - 0.5) / sqrt(25 * 11 / 12); scipy
	 * mannwhitneyu(a, b, alternative="greater", method="asymptotic") agrees */
	cr_expect_float_eq(stats_mann_whitney_greater(a, 5, b, 5), 0.00609, 1e-4);
	cr_expect_gt(stats_mann_whitney_greater(b, 5, a, 5), 0.99);
	cr_expect_float_eq(stats_mann_whitney_greater(c, 5, b, 5), 0.5 * erfc(-0.5 /
			   sqrt(25.0 / 12 * (11 - 30.0 / 90)) / sqrt(2)), 1e-9);
	cr_expect_eq(stats_mann_whitney_greater(all_tied, 3, all_tied, 3), 1.0);
	cr_expect(isnan(stats_mann_whitney_greater(a, 0, b, 5)));
	cr_expect_float_eq(stats_median(m, 3), 2, 1e-12);
	cr_expect_float_eq(stats_median(a, 4), 7.5, 1e-12);
}

#define T0 1790000000000ULL	/* ms */
#define DEPLOY_AT (T0 + 20 * 60 * 1000)

static const char *yaml =
	"groups:\n  - name: deploys\n    interval: 10s\n    rules:\n"
	"      - alert: PostDeployCpuRegression\n"
	"        expr: avg_over_time(faultline_host_cpu_utilization_ratio[1m])\n"
	"        baseline: {service: api, window: 10m, min_change: 0.2, alpha: 0.01}\n"
	"        severity: warning\n"
	"        annotations: {summary: \"{{ $labels.service }} {{ $labels.version }}: CPU x{{ $value }}\"}\n"
	"        evidence: [cpu_stacks]\n";

/*
 * What value baselines read: the 1-minute tier, here rolled up in memory
 * from the snapshots each test gives the engine (feed), as the probe
 * rolls them up into fl:{H}:s60.
 */
static struct minute_source minutes;
/* engine_opts.baseline_batch and baseline_step_ns of the runs (0: the defaults) */
static unsigned read_batch;
static uint64_t read_step_ns;
/* engine_opts.topology of the runs (NULL: none) */
static const struct topology *run_topology;
/* engine_opts.fleet of the runs (NULL: one engine) */
static struct engine_fleet *run_fleet;

/* Reads of the minutes to fail (half delivered, then the connection drops). */
static int fail_reads;

static int flaky_load(void *arg, const char *const *hosts, size_t n, uint64_t from, uint64_t to,
		      int (*cb)(struct snapshot *s, void *cbarg), void *cbarg)
{
	if (fail_reads > 0 && n > 1) {
		fail_reads--;
		minute_source_load(arg, hosts, n / 2, from, to, cb, cbarg);
		return -EIO;
	}
	return minute_source_load(arg, hosts, n, from, to, cb, cbarg);
}

static struct engine *engine_with_minutes(struct ruleset *rs, struct engine_opts o)
{
	struct engine *e;

	minute_source_free(&minutes);
	minute_source_init(&minutes);
	o.load_rollups = flaky_load;
	o.load_rollups_arg = &minutes;
	o.baseline_batch = read_batch;
	o.baseline_step_ns = read_step_ns;
	o.topology = run_topology;
	o.fleet = run_fleet;
	cr_assert_eq(engine_init(&e, rs, &o), 0);
	return e;
}

static void feed(struct engine *e, struct snapshot *s)
{
	cr_assert_eq(minute_source_add(&minutes, s), 0);
	cr_assert_eq(engine_add_snapshot(e, s), 0);
}

/* Deterministic noise in [-1, 1). */
static double noise(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return ((*seed >> 8) & 0xffff) / 32768.0 - 1;
}

/*
 * 8 hosts web-0..web-7 at 40 % CPU ±8 %, a snapshot every 5 s for 45 min;
 * "api 2.0" deployed to web-[0-3] at 20 min.  After it the deployed hosts
 * use regress × their CPU, every host load × its CPU.  Returns the events
 * of evaluating every 10 s.
 */
static void run_with(const char *rules_yaml, engine_profile_fn profiles, double regress,
		     double load, const char *hosts, struct test_events *ev)
{
	struct ruleset rs = { 0 };
	struct engine *e;
	struct deploy d = { .ts_ms = DEPLOY_AT };
	char err[256];
	unsigned seed = 42;

	cr_assert_eq(rules_parse(&rs, "t.yaml", rules_yaml, strlen(rules_yaml), err, sizeof(err)),
		     0, "%s", err);
	e = engine_with_minutes(&rs, (struct engine_opts){ .stale_ms = 15000,
				.load_profile = profiles, .load_profile_arg = &d });
	snprintf(d.service, sizeof(d.service), "api");
	snprintf(d.version, sizeof(d.version), "2.0");
	snprintf(d.hosts, sizeof(d.hosts), "%s", hosts);
	cr_assert_eq(engine_set_deploys(e, &d, 1), 0);
	for (uint64_t t = T0; t <= T0 + 45 * 60 * 1000; t += 5000) {
		for (int h = 0; h < 8; h++) {
			char name[16];
			struct snapshot s;
			double cpu = 0.4 + 0.08 * noise(&seed);

			snprintf(name, sizeof(name), "web-%d", h);
			if (t >= DEPLOY_AT) {
				cpu *= load;
				if (deploy_covers(&d, name))
					cpu *= regress;
			}
			snapshot_init(&s, name, t, 5000, (t - T0) / 5000, 1);
			snapshot_add_gauge(&s, "cpu.host_utilization", cpu, NULL);
			feed(e, &s);
			snapshot_free(&s);
		}
		if ((t - T0) % 10000 == 0)
			engine_eval(e, t, test_events_collect, ev);
	}
	engine_free(e);
}

static void run(double regress, double load, const char *hosts, struct test_events *ev)
{
	run_with(yaml, NULL, regress, load, hosts, ev);
}

Test(baseline, regression_on_the_deployed_half_fires_once_naming_the_deploy)
{
	struct test_events ev = { 0 };
	char at[64], base[64];

	run(1.3, 1.0, "web-[0-3]", &ev);
	cr_assert_eq(ev.n, 1, "expected one firing event, got %d", ev.n);
	cr_expect(strstr(ev.json[0], "\"status\":\"firing\""), "%s", ev.json[0]);
	cr_expect(strstr(ev.json[0], "\"service\":\"api\"") &&
		  strstr(ev.json[0], "\"version\":\"2.0\""), "%s", ev.json[0]);
	cr_expect(strstr(ev.json[0], "\"hosts\":[\"web-0\",\"web-1\",\"web-2\",\"web-3\"]"),
		  "%s", ev.json[0]);
	snprintf(at, sizeof(at), "\"at_ms\":%llu", (unsigned long long)DEPLOY_AT);
	snprintf(base, sizeof(base), "\"base_ms\":%llu",
		 (unsigned long long)(DEPLOY_AT - 10 * 60 * 1000));
	cr_expect(strstr(ev.json[0], at) && strstr(ev.json[0], base), "%s", ev.json[0]);
	/* fired as soon as the 10 m after-window had passed, not before */
	snprintf(at, sizeof(at), "\"startsAt\":\"%s\"",
		 alert_format_time(DEPLOY_AT + 10 * 60 * 1000, base, sizeof(base)));
	cr_expect(strstr(ev.json[0], at), "want %s: %s", at, ev.json[0]);
	cr_expect(strstr(ev.json[0], "CPU x1.2") || strstr(ev.json[0], "CPU x1.3") ||
		  strstr(ev.json[0], "CPU x1.4"), "%s", ev.json[0]);
	test_events_free(&ev);
}

/* ---- deploy trains ------------------------------------------------------------ */

static const char *train_yaml =
	"groups:\n  - name: deploys\n    interval: 10s\n    rules:\n"
	"      - alert: PostDeployCpuRegression\n"
	"        expr: avg_over_time(faultline_host_cpu_utilization_ratio[1m])\n"
	"        baseline: {window: 10m, min_change: 0.2, alpha: 0.01}\n"
	"        severity: warning\n";

/* The verdicts a train's run handed to engine_opts.verdict_cb: "[id rule: verdict by=X]..." */
static char train_verdicts[4096];

static void keep_train_verdict(const struct deploy_verdict *v, void *arg)
{
	(void)arg;
	snprintf(train_verdicts + strlen(train_verdicts),
		 sizeof(train_verdicts) - strlen(train_verdicts), "[%s %s: %s by=%s]", v->id,
		 v->rule, v->verdict, v->by);
}

/*
 * A train: api 2.0 to web-[0-3] at 20 min, sidecar 1.2 to the same hosts
 * gap_min minutes later; after each the deployed hosts' CPU is multiplied
 * by r1, then also by r2.  The firing events of evaluating every 10 s.
 */
static void run_train(double r1, double r2, int gap_min, struct test_events *ev)
{
	struct ruleset rs = { 0 };
	struct engine *e;
	struct deploy d[2] = { { .ts_ms = DEPLOY_AT },
			       { .ts_ms = DEPLOY_AT + (uint64_t)gap_min * 60000 } };
	struct test_events all = { 0 };
	char err[256];
	unsigned seed = 7;

	cr_assert_eq(rules_parse(&rs, "t.yaml", train_yaml, strlen(train_yaml), err,
				 sizeof(err)), 0, "%s", err);
	train_verdicts[0] = '\0';
	e = engine_with_minutes(&rs, (struct engine_opts){ .stale_ms = 15000,
				.verdict_cb = keep_train_verdict });
	snprintf(d[0].id, sizeof(d[0].id), "100-0");
	snprintf(d[1].id, sizeof(d[1].id), "200-0");
	snprintf(d[0].service, sizeof(d[0].service), "api");
	snprintf(d[0].version, sizeof(d[0].version), "2.0");
	snprintf(d[1].service, sizeof(d[1].service), "sidecar");
	snprintf(d[1].version, sizeof(d[1].version), "1.2");
	for (int i = 0; i < 2; i++)
		snprintf(d[i].hosts, sizeof(d[i].hosts), "web-[0-3]");
	cr_assert_eq(engine_set_deploys(e, d, 2), 0);
	for (uint64_t t = T0; t <= T0 + 45 * 60 * 1000; t += 5000) {
		for (int h = 0; h < 8; h++) {
			char name[16];
			struct snapshot s;
			double cpu = 0.4 + 0.08 * noise(&seed);

			snprintf(name, sizeof(name), "web-%d", h);
			if (deploy_covers(&d[0], name) && t >= d[0].ts_ms)
				cpu *= r1;
			if (deploy_covers(&d[1], name) && t >= d[1].ts_ms)
				cpu *= r2;
			snapshot_init(&s, name, t, 5000, (t - T0) / 5000, 1);
			snapshot_add_gauge(&s, "cpu.host_utilization", cpu, NULL);
			feed(e, &s);
			snapshot_free(&s);
		}
		if ((t - T0) % 10000 == 0)
			engine_eval(e, t, test_events_collect, &all);
	}
	engine_free(e);
	for (int i = 0; i < all.n; i++)
		if (strstr(all.json[i], "\"status\":\"firing\""))
			test_events_collect(all.json[i], ev);
	test_events_free(&all);
}

/* api regresses, a harmless sidecar lands on its hosts 4 min later: api pages, sidecar does not. */
Test(baseline, train_the_first_deploy_regresses)
{
	struct test_events ev = { 0 };

	run_train(1.3, 1.0, 4, &ev);
	cr_assert_eq(ev.n, 1, "expected one page (api), got %d: %s", ev.n, ev.n ? ev.json[0] : "");
	cr_expect(strstr(ev.json[0], "\"service\":\"api\""), "%s", ev.json[0]);
	/* both verdicts kept for `faultline deploy list`, each naming the other deploy */
	cr_expect(strstr(train_verdicts,
			 "[100-0 PostDeployCpuRegression: regression by=sidecar 1.2]") &&
		  strstr(train_verdicts,
			 "[200-0 PostDeployCpuRegression: no regression by=api 2.0]"),
		  "%s", train_verdicts);
	test_events_free(&ev);
}

/* A harmless api, then a regressing sidecar on the same hosts: sidecar pages, api does not. */
Test(baseline, train_the_second_deploy_regresses)
{
	struct test_events ev = { 0 };

	run_train(1.0, 1.3, 4, &ev);
	cr_assert_eq(ev.n, 1, "expected one page (sidecar), got %d: %s", ev.n,
		     ev.n ? ev.json[0] : "");
	cr_expect(strstr(ev.json[0], "\"service\":\"sidecar\""), "%s", ev.json[0]);
	test_events_free(&ev);
}

/*
 * Two deploys a minute apart on the same hosts: neither has enough minutes
 * of its own (confounded), so neither is paged for the other's change.
 */
Test(baseline, train_a_minute_apart_is_confounded)
{
	struct test_events ev = { 0 };

	run_train(1.3, 1.0, 1, &ev);
	cr_expect_eq(ev.n, 0, "a confounded train paged: %s", ev.n ? ev.json[0] : "");
	cr_expect(strstr(train_verdicts,
			 "[100-0 PostDeployCpuRegression: confounded by=sidecar 1.2]") &&
		  strstr(train_verdicts, "[200-0 PostDeployCpuRegression: confounded by=api 2.0]"),
		  "%s", train_verdicts);
	test_events_free(&ev);
}

/*
 * A big fleet's verdict is read a batch of hosts per evaluation: 3 hosts
 * at a time and no time for more, the 8 hosts take 3 evaluations, and the
 * verdict is the one read all at once (the same hosts and value), 20 s
 * (two evaluations) later.
 */
Test(baseline, a_verdict_read_in_batches_over_evaluations_is_the_same)
{
	struct test_events whole = { 0 }, batched = { 0 };
	char at[64], ts[64];
	const char *v1, *v2;

	run(1.3, 1.0, "web-[0-3]", &whole);
	read_batch = 3;
	read_step_ns = 1;
	run(1.3, 1.0, "web-[0-3]", &batched);
	read_batch = 0;
	read_step_ns = 0;
	cr_assert_eq(whole.n, 1);
	cr_assert_eq(batched.n, 1, "%d events", batched.n);
	cr_expect(strstr(batched.json[0], "\"hosts\":[\"web-0\",\"web-1\",\"web-2\",\"web-3\"]"),
		  "%s", batched.json[0]);
	v1 = strstr(whole.json[0], "\"value\":");
	v2 = strstr(batched.json[0], "\"value\":");
	cr_assert(v1 && v2);
	cr_expect(!strncmp(v1, v2, 20), "value %.20s read whole, %.20s in batches", v1, v2);
	snprintf(at, sizeof(at), "\"startsAt\":\"%s\"",
		 alert_format_time(DEPLOY_AT + 10 * 60 * 1000 + 20000, ts, sizeof(ts)));
	cr_expect(strstr(batched.json[0], at), "want %s: %s", at, batched.json[0]);
	test_events_free(&whole);
	test_events_free(&batched);
}

/*
 * Redis going away in the middle of a batch: the batch is read again at
 * the next evaluation, and the verdict is the one read without trouble
 * (the same hosts and value), an evaluation later -- not judged without
 * the hosts that batch held.
 */
Test(baseline, a_batch_whose_read_failed_is_read_again_not_left_out)
{
	struct test_events whole = { 0 }, retried = { 0 };
	char at[64], ts[64];
	const char *v1, *v2;

	run(1.3, 1.0, "web-[0-3]", &whole);
	read_batch = 3;
	read_step_ns = 1;
	fail_reads = 1;
	run(1.3, 1.0, "web-[0-3]", &retried);
	read_batch = 0;
	read_step_ns = 0;
	cr_expect_eq(fail_reads, 0, "no read failed");
	fail_reads = 0;
	cr_assert_eq(whole.n, 1);
	cr_assert_eq(retried.n, 1, "%d events", retried.n);
	cr_expect(strstr(retried.json[0], "\"hosts\":[\"web-0\",\"web-1\",\"web-2\",\"web-3\"]"),
		  "%s", retried.json[0]);
	v1 = strstr(whole.json[0], "\"value\":");
	v2 = strstr(retried.json[0], "\"value\":");
	cr_assert(v1 && v2);
	cr_expect(!strncmp(v1, v2, 20), "value %.20s read at once, %.20s after a failed read", v1,
		  v2);
	snprintf(at, sizeof(at), "\"startsAt\":\"%s\"",
		 alert_format_time(DEPLOY_AT + 10 * 60 * 1000 + 30000, ts, sizeof(ts)));
	cr_expect(strstr(retried.json[0], at), "want %s: %s", at, retried.json[0]);
	test_events_free(&whole);
	test_events_free(&retried);
}

/*
 * A judging worker whose fleet has one more worker, slow to publish its
 * deploy verdict's part: gather says "not every worker yet" for
 * slow_gathers calls (-1: ever), then that every part is in (this engine
 * holds every host).
 */
static int slow_gathers, gathers;

static int own_all(void *arg, const char *host)
{
	(void)arg;
	(void)host;
	return 1;
}

static int judge_fleet(void *arg)
{
	(void)arg;
	return 1;
}

static int publish_ok(void *arg, const char *topic, const void *blob, size_t len)
{
	(void)arg;
	(void)topic;
	(void)blob;
	(void)len;
	return 0;
}

static int gather_slowly(void *arg, const char *topic,
			 void (*cb)(const void *blob, size_t len, void *cbarg), void *cbarg)
{
	(void)arg;
	(void)cb;
	(void)cbarg;
	if (strncmp(topic, "baseline/", 9))
		return 1;	/* rollup populations: every part in */
	return slow_gathers < 0 || ++gathers <= slow_gathers ? 0 : 1;
}

/*
 * The judge waits for a slow worker's part longer than 60 of its own
 * evaluations when they pass faster than wall time (a replay): 80 here,
 * in well under a second, and the verdict comes with the part, 80
 * evaluations later; a part that never comes is not judged without
 * before a minute of wall time has passed either.
 */
Test(baseline, the_judge_waits_for_a_slow_workers_part_in_wall_time_too)
{
	struct engine_fleet f = { .owns_host = own_all, .owns_fleet = judge_fleet,
				  .publish = publish_ok, .gather = gather_slowly };
	struct test_events ev = { 0 };
	uint64_t t0 = time_mono_ns();
	char at[64], ts[64];

	run_fleet = &f;
	slow_gathers = 80;
	gathers = 0;
	run(1.3, 1.0, "web-[0-3]", &ev);
	cr_assert_eq(ev.n, 1, "%d events", ev.n);
	cr_expect_eq(gathers, 81, "asked %d times", gathers);
	snprintf(at, sizeof(at), "\"startsAt\":\"%s\"",
		 alert_format_time(DEPLOY_AT + 10 * 60 * 1000 + 80 * 10000, ts, sizeof(ts)));
	cr_expect(strstr(ev.json[0], at), "want %s: %s", at, ev.json[0]);
	test_events_free(&ev);

	slow_gathers = -1;
	run(1.3, 1.0, "web-[0-3]", &ev);
	run_fleet = NULL;
	cr_assert_lt(time_mono_ns() - t0, 30 * NSEC_PER_SEC, "the runs took too long to say");
	cr_expect_eq(ev.n, 0, "judged without the missing part within a second of wall time");
	test_events_free(&ev);
}

/* How many events a run gives; prints the first when there is one. */
static int events_of(double regress, double load)
{
	struct test_events ev = { 0 };
	int n;

	run(regress, load, "web-[0-3]", &ev);
	n = ev.n;
	if (n)
		cr_log_info("%s", ev.json[0]);
	test_events_free(&ev);
	return n;
}

Test(baseline, a_fleet_wide_load_rise_without_regression_is_silent)
{
	cr_expect_eq(events_of(1.0, 1.3), 0);
}

Test(baseline, a_regression_during_a_load_rise_still_fires)
{
	cr_expect_eq(events_of(1.3, 1.3), 1);
}

Test(baseline, noise_alone_is_silent)
{
	cr_expect_eq(events_of(1.03, 1.0), 0);
}

/*
 * A baseline that selects by a label the topology file gives (not the
 * probes): the minutes read from the 1-minute tier carry it as the 1 s
 * snapshots do, so the regression fires; the same rule on a pool the
 * topology gives no host stays silent.
 */
Test(baseline, a_selector_on_topology_labels_matches_the_minutes)
{
	static const char topo_yaml[] = "hosts:\n  \"web-*\": {pool: frontend}\n";
	const char *rule = "groups:\n  - name: deploys\n    interval: 10s\n    rules:\n"
			   "      - alert: PostDeployCpuRegression\n"
			   "        expr: avg_over_time(faultline_host_cpu_utilization_ratio"
			   "{pool=\"%s\"}[1m])\n"
			   "        baseline: {service: api, window: 10m, min_change: 0.2, "
			   "alpha: 0.01}\n";
	struct test_events fe = { 0 }, none = { 0 };
	struct topology topo;
	char y[512], err[256];

	cr_assert_eq(topology_parse(&topo, "topo.yaml", topo_yaml, strlen(topo_yaml), err,
				    sizeof(err)), 0, "%s", err);
	run_topology = &topo;
	snprintf(y, sizeof(y), rule, "frontend");
	run_with(y, NULL, 1.3, 1.0, "web-[0-3]", &fe);
	snprintf(y, sizeof(y), rule, "backend");
	run_with(y, NULL, 1.3, 1.0, "web-[0-3]", &none);
	run_topology = NULL;
	cr_expect_eq(fe.n, 1, "pool=frontend: %d events", fe.n);
	cr_expect(fe.n < 1 || strstr(fe.json[0], "\"hosts\":[\"web-0\",\"web-1\",\"web-2\","
				     "\"web-3\"]"), "%s", fe.n ? fe.json[0] : "");
	cr_expect_eq(none.n, 0, "pool=backend: %d events", none.n);
	test_events_free(&fe);
	test_events_free(&none);
	topology_free(&topo);
}

Test(baseline, a_deploy_to_every_host_is_judged_against_its_own_past)
{
	struct test_events ev = { 0 };

	run(1.3, 1.0, "*", &ev);
	cr_assert_eq(ev.n, 1);
	cr_expect(strstr(ev.json[0], "\"total_hosts\":8"), "%s", ev.json[0]);
	test_events_free(&ev);
}

/*
 * The lying average, after a deploy: web-0 and web-4 carry 100x the write
 * I/O of their neighbours.  The deploy (web-[0-3]) makes web-0's writes
 * 2.5x slower and leaves the light hosts alone, so the deployed hosts'
 * per-host p99s average to +37 % (under min_change 0.5) while the p99 of
 * their merged writes, which is what their users see, is +150 %.  The
 * baseline compares merged distributions: it fires, with the merged ratio.
 * With slow = 1 nothing changed and it stays silent.
 */
static const char *hist_yaml =
	"groups:\n  - name: deploys\n    interval: 10s\n    rules:\n"
	"      - alert: PostDeployWriteLatencyRegression\n"
	"        expr: quantile(0.99, faultline_block_latency_seconds{op=\"write\"}[1m])\n"
	"        baseline: {service: api, window: 10m, min_change: 0.5, alpha: 0.01}\n"
	"        annotations: {summary: \"write p99 x{{ $value }}\"}\n";

static void run_writes(double slow, struct test_events *ev)
{
	struct histogram *cum = calloc(8, sizeof(*cum));
	struct ruleset rs = { 0 };
	struct engine *e;
	struct deploy d = { .ts_ms = DEPLOY_AT };
	char err[256];
	unsigned seed = 7;

	cr_assert(cum);
	cr_assert_eq(rules_parse(&rs, "t.yaml", hist_yaml, strlen(hist_yaml), err, sizeof(err)),
		     0, "%s", err);
	e = engine_with_minutes(&rs, (struct engine_opts){ .stale_ms = 15000 });
	snprintf(d.service, sizeof(d.service), "api");
	snprintf(d.version, sizeof(d.version), "2.0");
	snprintf(d.hosts, sizeof(d.hosts), "web-[0-3]");
	cr_assert_eq(engine_set_deploys(e, &d, 1), 0);
	for (uint64_t t = T0; t <= T0 + 45 * 60 * 1000; t += 5000) {
		for (int h = 0; h < 8; h++) {
			int busy = h % 4 == 0, ios = busy ? 1000 : 10;
			double base = 1e6 * (t >= DEPLOY_AT && h == 0 ? slow : 1.0);
			char name[16];
			struct snapshot s;
			struct series *x;

			for (int i = 0; i < 10; i++)
				hist_record_n(&cum[h], (uint64_t)(base * (1 + 0.1 * noise(&seed))),
					      (uint64_t)ios / 10);
			snprintf(name, sizeof(name), "web-%d", h);
			snapshot_init(&s, name, t, 5000, (t - T0) / 5000, 1);
			x = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda",
					 "op", "write", NULL);
			cr_assert(x);
			*x->hist = cum[h];
			feed(e, &s);
			snapshot_free(&s);
		}
		if ((t - T0) % 10000 == 0)
			engine_eval(e, t, test_events_collect, ev);
	}
	engine_free(e);
	rules_free(&rs);
	free(cum);
}

Test(baseline, a_percentile_regression_hidden_by_averaging_fires_on_merged_writes)
{
	struct test_events ev = { 0 };

	run_writes(2.5, &ev);
	cr_assert_eq(ev.n, 1, "expected one firing event, got %d", ev.n);
	cr_expect(strstr(ev.json[0], "\"status\":\"firing\""), "%s", ev.json[0]);
	cr_expect(strstr(ev.json[0], "write p99 x2.") || strstr(ev.json[0], "write p99 x3"),
		  "the value is not the merged p99 ratio: %s", ev.json[0]);
	test_events_free(&ev);
	run_writes(1.0, &ev);
	cr_expect_eq(ev.n, 0, "nothing changed, yet it fired: %s", ev.n ? ev.json[0] : "");
	test_events_free(&ev);
}

Test(baseline, rule_file_errors)
{
	const char *bad[][2] = {
		{ "baseline: {service: api}", "needs window" },
		{ "baseline: {window: 10m, min_change: lots}", "min_change: expected a number" },
		{ "baseline: {window: 10m, alpha: 2}", "alpha: expected a number" },
		{ "baseline: {window: 10m, typo: 1}", "typo" },
		{ "baseline: {window: 5m}", "9m or more" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char y[512], err[256];
		struct ruleset rs = { 0 };

		snprintf(y, sizeof(y), "groups:\n  - name: g\n    rules:\n      - alert: A\n"
			 "        expr: faultline_cpu_utilization_ratio\n        %s\n", bad[i][0]);
		cr_expect_neq(rules_parse(&rs, "b.yaml", y, strlen(y), err, sizeof(err)), 0, "%s",
			      bad[i][0]);
		cr_expect(strstr(err, "b.yaml:6:") && strstr(err, bad[i][1]), "%s: %s", bad[i][0],
			  err);
		rules_free(&rs);
	}
	{
		const char *y = "groups:\n  - name: g\n    rules:\n      - alert: A\n"
				"        expr: faultline_cpu_utilization_ratio > 0.5\n"
				"        baseline: {window: 10m}\n";
		char err[256];
		struct ruleset rs = { 0 };

		cr_expect_neq(rules_parse(&rs, "b.yaml", y, strlen(y), err, sizeof(err)), 0);
		cr_expect(strstr(err, "b.yaml:5:") && strstr(err, "not a condition"), "%s", err);
		rules_free(&rs);
	}
}

/*
 * A value baseline reads the 1-minute tier: an expression a rollup cannot
 * answer exactly is refused when the rules load, at its position.
 */
Test(baseline, expressions_the_minute_tier_cannot_answer_are_refused)
{
	const char *bad[][3] = {
		{ "deriv(faultline_host_cpu_utilization_ratio[1m])", "5:21:", "1-minute tier" },
		{ "avg_over_time(faultline_host_cpu_utilization_ratio[30s])", "5:29:",
		  "whole minutes" },
		{ "rate(faultline_host_cpu_utilization_ratio[1m])", "5:20:", "rate/increase of a counter" },
		{ "avg(avg_over_time(faultline_host_cpu_utilization_ratio[1m]))", "5:15:",
		  "each host's own" },
		{ "avg_over_time(faultline_host_cpu_utilization_ratio[1m] offset 5m)", "5:29:",
		  "offset" },
		{ "rate(faultline_block_latency_seconds_count[1m])", "5:20:", "_bucket/_sum/_count" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char y[512], err[512];
		struct ruleset rs = { 0 };

		snprintf(y, sizeof(y), "groups:\n  - name: g\n    rules:\n      - alert: A\n"
			 "        expr: %s\n        baseline: {window: 15m}\n", bad[i][0]);
		cr_expect_neq(rules_parse(&rs, "m.yaml", y, strlen(y), err, sizeof(err)), 0, "%s",
			      bad[i][0]);
		cr_expect(strstr(err, bad[i][1]) && strstr(err, bad[i][2]), "%s: %s", bad[i][0], err);
		rules_free(&rs);
	}
}

/*
 * A recording rule's output lives only in the engine's recent history,
 * not in the 1-minute tier: a baseline on it is refused, instant or range.
 */
Test(baseline, a_recorded_metric_is_refused)
{
	static const char *exprs[] = { "host:cpu:avg", "avg_over_time(host:cpu:avg[1m])" };

	for (size_t i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
		char y[512], err[512];
		struct ruleset rs = { 0 };

		snprintf(y, sizeof(y), "groups:\n  - name: g\n    rules:\n"
			 "      - record: host:cpu:avg\n"
			 "        expr: avg_over_time(faultline_host_cpu_utilization_ratio[1m])\n"
			 "      - alert: A\n        expr: %s\n        baseline: {window: 15m}\n",
			 exprs[i]);
		cr_expect_neq(rules_parse(&rs, "r.yaml", y, strlen(y), err, sizeof(err)), 0, "%s",
			      exprs[i]);
		cr_expect(strstr(err, "r.yaml:7:") && strstr(err, "host:cpu:avg"), "%s: %s",
			  exprs[i], err);
		rules_free(&rs);
	}
}

/* expr over host h's minutes from ms (newest last) as one value. */
static double over_minutes(const char *expr, const struct minute_source *ms)
{
	const struct minute_host *mh = &ms->h[0];
	struct columns c;
	struct snapshot newest;
	struct node *n;
	struct value v = { 0 };
	struct host_window w;
	char err[256];
	double x = NAN;

	cr_assert_eq(expr_parse(expr, &n, err, sizeof(err)), 0, "%s", err);
	columns_init(&c);
	cr_assert_eq(snapshot_copy(&newest, &mh->m[mh->n - 1]), 0);
	cr_assert_eq(columns_push(&c, &newest, 1, NULL), 0);
	w = (struct host_window){ "h", &c, columns_len(&c), mh->m, mh->n };
	cr_assert_eq(eval(n, &w, 1, &v, err, sizeof(err)), 0, "%s: %s", expr, err);
	if (v.is_vector && v.n == 1)
		x = v.e[0].v;
	value_free(&v);
	columns_free(&c);
	expr_free(n);
	return x;
}

/*
 * The minute functions give what the minutes' own 1 s samples give: three
 * minutes of 1 s snapshots (a noisy gauge, a counter with a reset, a
 * latency histogram) rolled up as the probe rolls them; each function over
 * the last minute, and over the last two, equals the value computed by
 * hand from those samples.
 */
Test(baseline, minute_functions_equal_what_the_minutes_samples_give)
{
	const uint64_t t0 = 1790000040000ULL;	/* on a minute */
	const double lat_scale = catalog_find_wire("block.latency")->scale;
	struct minute_source ms;
	struct histogram cum = { 0 }, at[182];
	double g[182];
	uint64_t c[182], inc1 = 0, inc2 = 0;
	unsigned seed = 3;
	double sum1 = 0, sum2 = 0, mn = INFINITY, mx = -INFINITY;
	struct histogram d = { 0 };

	minute_source_init(&ms);
	for (int i = 0; i <= 181; i++) {
		struct snapshot s;
		struct series *x;

		g[i] = 0.5 + 0.3 * noise(&seed);
		c[i] = i == 150 ? 3 : (i ? c[i - 1] + (uint64_t)(i % 7) : 1000);	/* reset at 150 */
		hist_record_n(&cum, (uint64_t)(1e6 * (1.5 + noise(&seed))), 1 + (uint64_t)(i % 5));
		at[i] = cum;
		snapshot_init(&s, "h", t0 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1);
		snapshot_add_gauge(&s, "cpu.host_utilization", g[i], NULL);
		snapshot_add_counter(&s, "tcp.in_csum_errors", c[i], NULL);
		x = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op",
				 "write", NULL);
		cr_assert(x);
		*x->hist = cum;
		cr_assert_eq(minute_source_add(&ms, &s), 0);
		snapshot_free(&s);
	}
	cr_assert_eq(ms.nh, 1);
	/* a minute ending at T holds the snapshots of (T - 60 s, T]: t0's alone, then 3 whole */
	cr_assert_eq(ms.h[0].n, 4, "%zu minutes", ms.h[0].n);
	cr_assert_eq(ms.h[0].m[3].ts_ms, t0 + 180000);
	for (int i = 61; i <= 180; i++) {
		uint64_t step = c[i] >= c[i - 1] ? c[i] - c[i - 1] : c[i];

		sum2 += g[i];
		inc2 += step;
		if (i >= 121) {
			sum1 += g[i];
			inc1 += step;
			mn = fmin(mn, g[i]);
			mx = fmax(mx, g[i]);
		}
	}
	cr_expect_float_eq(over_minutes("avg_over_time(faultline_host_cpu_utilization_ratio[1m])",
					&ms), sum1 / 60, 1e-12);
	cr_expect_float_eq(over_minutes("avg_over_time(faultline_host_cpu_utilization_ratio[2m])",
					&ms), sum2 / 120, 1e-12);
	cr_expect_eq(over_minutes("min_over_time(faultline_host_cpu_utilization_ratio[1m])", &ms),
		     mn);
	cr_expect_eq(over_minutes("max_over_time(faultline_host_cpu_utilization_ratio[1m])", &ms),
		     mx);
	cr_expect_eq(over_minutes("last_over_time(faultline_host_cpu_utilization_ratio[1m])", &ms),
		     g[180]);
	cr_expect_eq(over_minutes("count_over_time(faultline_host_cpu_utilization_ratio[2m])",
				  &ms), 120);
	cr_expect_eq(over_minutes("increase(faultline_tcp_in_csum_errors_total[1m])", &ms),
		     (double)inc1);
	cr_expect_float_eq(over_minutes("rate(faultline_tcp_in_csum_errors_total[2m])", &ms),
			   (double)inc2 / 120, 1e-12);
	hist_subtract(&d, &at[180], &at[120]);
	hist_coarsen(&d);	/* a minute keeps the rollup tiers' resolution */
	cr_expect_float_eq(over_minutes("quantile(0.99, faultline_block_latency_seconds[1m])",
					&ms), catalog_to_base((double)hist_quantile(&d, 0.99),
							      lat_scale), 1e-15);
	cr_expect_float_eq(over_minutes("quantile(0.5, faultline_block_latency_seconds[1m])",
					&ms), catalog_to_base((double)hist_quantile(&d, 0.5),
							      lat_scale), 1e-15);
	minute_source_free(&ms);
}

/* ---- profile baselines ------------------------------------------------------ */

static const char *profile_yaml =
	"groups:\n  - name: deploys\n    interval: 10s\n    rules:\n"
	"      - alert: PostDeployHotFunction\n"
	"        baseline: {service: api, window: 10m, profile_share: 10}\n"
	"        severity: warning\n";

static int mix_changes_everywhere;

/*
 * Profiles of one host between from and to: 10 s windows of main;f with
 * parse_request 60 %, compress_block 20 %, write_log 20 % -- after the
 * deploy, on the deployed hosts (or on all when mix_changes_everywhere),
 * 40 / 50 / 10 %.
 */
static int fake_profiles(void *arg, const char *host, uint64_t from, uint64_t to,
			 struct profile *into)
{
	const struct deploy *d = arg;
	const char *fn[] = { "parse_request", "compress_block", "write_log" };
	const uint64_t before[] = { 60, 20, 20 }, after[] = { 40, 50, 10 };
	int n = 0;

	for (uint64_t t = T0; t <= T0 + 45 * 60 * 1000; t += 10000) {
		int changed = t >= d->ts_ms && (mix_changes_everywhere || deploy_covers(d, host));

		if (t < from || t > to)
			continue;
		for (int i = 0; i < 3; i++) {
			const char *frames[] = { "main", fn[i] };

			cr_assert_eq(profile_add(into, "api", "api", 7, frames, 2,
						 changed ? after[i] : before[i]), 0);
		}
		n++;
	}
	return n;
}

Test(baseline, a_function_that_grew_on_the_deployed_hosts_is_named)
{
	struct test_events ev = { 0 };

	mix_changes_everywhere = 0;
	run_with(profile_yaml, fake_profiles, 1.0, 1.0, "web-[0-3]", &ev);
	cr_assert_eq(ev.n, 1, "expected one event, got %d", ev.n);
	cr_expect(strstr(ev.json[0], "\"function\":\"compress_block\""), "%s", ev.json[0]);
	cr_expect(strstr(ev.json[0], "\"hosts\":[\"web-0\",\"web-1\",\"web-2\",\"web-3\"]"),
		  "%s", ev.json[0]);
	cr_expect(strstr(ev.json[0], "\"value\":30"), "30 points: %s", ev.json[0]);
	test_events_free(&ev);
}

/*
 * Profiles where a regression in mark (under main;gc;mark) moves its
 * caller gc's total share exactly as much as its own: main;parse 60 %,
 * main;gc;mark 20 %, gc itself 20 % -- after the deploy, on the deployed
 * hosts, 40 / 40 / 20 %.
 */
static int gc_profiles(void *arg, const char *host, uint64_t from, uint64_t to,
		       struct profile *into)
{
	const struct deploy *d = arg;
	const char *parse[] = { "main", "parse" }, *mark[] = { "main", "gc", "mark" },
		   *gc[] = { "main", "gc" };
	int n = 0;

	for (uint64_t t = T0; t <= T0 + 45 * 60 * 1000; t += 10000) {
		int changed = t >= d->ts_ms && deploy_covers(d, host);

		if (t < from || t > to)
			continue;
		cr_assert_eq(profile_add(into, "api", "api", 7, parse, 2, changed ? 40 : 60), 0);
		cr_assert_eq(profile_add(into, "api", "api", 7, mark, 3, changed ? 40 : 20), 0);
		cr_assert_eq(profile_add(into, "api", "api", 7, gc, 2, 20), 0);
		n++;
	}
	return n;
}

/* The page names the frame whose own time grew (mark), not its caller, and the path to it. */
Test(baseline, the_frame_whose_own_time_grew_is_named_not_its_caller)
{
	struct test_events ev = { 0 };

	run_with(profile_yaml, gc_profiles, 1.0, 1.0, "web-[0-3]", &ev);
	cr_assert_eq(ev.n, 1, "expected one event, got %d", ev.n);
	cr_expect(strstr(ev.json[0], "\"function\":\"mark\""), "%s", ev.json[0]);
	cr_expect(strstr(ev.json[0], "\"call_path\":\"main;gc;mark\""), "%s", ev.json[0]);
	cr_expect(strstr(ev.json[0], "\"value\":20"), "20 points: %s", ev.json[0]);
	test_events_free(&ev);
}

Test(baseline, a_profile_shift_on_every_host_is_not_a_regression)
{
	struct test_events ev = { 0 };

	mix_changes_everywhere = 1;
	run_with(profile_yaml, fake_profiles, 1.0, 1.0, "web-[0-3]", &ev);
	cr_expect_eq(ev.n, 0, "%s", ev.n ? ev.json[0] : "");
	test_events_free(&ev);
}

/* ---- a real Python service ------------------------------------------------ */

/*
 * A Python service whose version 2 made parse_invoice() three times
 * slower, profiled for real (the BPF walker's Python frames) while it
 * runs: version 1 before the deploy on every host and after it on the
 * peers, version 2 after it on the deployed hosts.
 */
static struct profile python_v[2];

static void profile_python_version(const char *dir, int v, struct profile *p)
{
	struct profile_one_filter only = { 0 };
	struct probe_config cfg;
	char err[512], path[128];
	pid_t pid;
	int ret;

	snprintf(path, sizeof(path), "%s/invoice.py", dir);
	pid = fork();
	if (pid == 0) {
		execl("/usr/bin/python3.11", "python3.11", path, v ? "3" : "1", "8", (char *)NULL);
		_exit(127);
	}
	usleep(1000000);	/* past start-up */
	only.pid = (uint32_t)pid;
	probe_config_defaults(&cfg, err, sizeof(err));
	free(cfg.host);
	cfg.host = strdup("test");
	ret = profile_oneshot(&cfg, 3 * NSEC_PER_SEC, 199, &only, p, err, sizeof(err));
	probe_config_free(&cfg);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (ret)
		cr_skip_test("the BPF profiler does not load here: %s", err);
}

static int python_profiles(void *arg, const char *host, uint64_t from, uint64_t to,
			   struct profile *into)
{
	const struct deploy *d = arg;
	int n = 0;

	for (uint64_t t = T0; t <= T0 + 45 * 60 * 1000; t += 10000) {
		const struct profile *src = &python_v[t >= d->ts_ms && deploy_covers(d, host)];

		if (t < from || t > to)
			continue;
		for (uint32_t r = 0; r < src->nrows; r++) {
			const uint32_t *st = src->stacks[src->rows[r].stack];
			const char *frames[256];

			for (uint32_t i = 0; i < st[0] && i < 256; i++)
				frames[i] = src->strings[st[1 + i]];
			cr_assert_eq(profile_add(into, "api", "python3.11", 7, frames,
						 st[0] < 256 ? st[0] : 256, src->rows[r].count), 0);
		}
		n++;
	}
	return n;
}

Test(baseline, a_python_function_that_got_slower_is_named, .timeout = 120)
{
	struct test_events ev = { 0 };
	char dir[64] = "/tmp/fl-pybase.XXXXXX", path[128], want[256];
	FILE *f;

	if (!test_is_root() || access("/usr/bin/python3.11", X_OK))
		cr_skip_test("needs root (BPF) and Debian's python3.11");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/invoice.py", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fputs(test_python_service, f);
	fclose(f);
	profile_python_version(dir, 0, &python_v[0]);
	profile_python_version(dir, 1, &python_v[1]);
	test_sh("rm -rf %s", dir);
	mix_changes_everywhere = 0;
	run_with(profile_yaml, python_profiles, 1.0, 1.0, "web-[0-3]", &ev);
	profile_free(&python_v[0]);
	profile_free(&python_v[1]);
	cr_assert_eq(ev.n, 1, "expected one event, got %d", ev.n);
	/* the Python function, by module, name and file: not the interpreter */
	snprintf(want, sizeof(want), "\"function\":\"invoice.parse_invoice (%s/invoice.py)\"",
		 dir);
	cr_expect(strstr(ev.json[0], want), "want %s: %s", want, ev.json[0]);
	snprintf(want, sizeof(want), "invoice.handle (%s/invoice.py:12);invoice.parse_invoice (",
		 dir);
	cr_expect(strstr(ev.json[0], want), "the call path names handle -> parse_invoice: %s",
		  ev.json[0]);
	test_events_free(&ev);
}

Test(baseline, profile_baseline_rule_errors)
{
	const char *y = "groups:\n  - name: g\n    rules:\n      - alert: A\n"
			"        expr: faultline_cpu_utilization_ratio\n"
			"        baseline: {window: 10m, profile_share: 5}\n";
	char err[256];
	struct ruleset rs = { 0 };

	cr_expect_neq(rules_parse(&rs, "p.yaml", y, strlen(y), err, sizeof(err)), 0);
	cr_expect(strstr(err, "p.yaml:5:") && strstr(err, "drop expr"), "%s", err);
	rules_free(&rs);
}

/* ---- several services ----------------------------------------------------- */

/* A baseline rule with no service: every service's deploys are judged, each on its own. */
static const char *any_service_yaml =
	"groups:\n  - name: deploys\n    interval: 10s\n    rules:\n"
	"      - alert: PostDeployCpuRegression\n"
	"        expr: avg_over_time(faultline_host_cpu_utilization_ratio[1m])\n"
	"        baseline: {window: 10m, min_change: 0.2, alpha: 0.01}\n";

/*
 * 12 hosts web-0..web-11 at 40 % CPU ±8 % for 60 min, markers d[0..nd)
 * (their hosts' CPU times regress[i] from the marker on, until a rollback
 * of the same service); every 10 s evaluated.  Events into ev; the
 * firing/resolved state of each service at the end into state (1 firing).
 */
static void run_services(const struct deploy *d, const double *regress, int nd,
			 struct test_events *ev)
{
	struct ruleset rs = { 0 };
	struct engine *e;
	char err[256];
	unsigned seed = 7;

	cr_assert_eq(rules_parse(&rs, "t.yaml", any_service_yaml, strlen(any_service_yaml), err,
				 sizeof(err)), 0, "%s", err);
	e = engine_with_minutes(&rs, (struct engine_opts){ .stale_ms = 15000 });
	cr_assert_eq(engine_set_deploys(e, d, nd), 0);
	for (uint64_t t = T0; t <= T0 + 60 * 60 * 1000; t += 5000) {
		for (int h = 0; h < 12; h++) {
			char name[16];
			struct snapshot s;
			double cpu = 0.4 + 0.08 * noise(&seed);

			snprintf(name, sizeof(name), "web-%d", h);
			for (int i = 0; i < nd; i++) {
				int rolled_back = 0;

				for (int k = 0; k < nd; k++)
					rolled_back |= d[k].rollback && d[k].ts_ms > d[i].ts_ms &&
						       d[k].ts_ms <= t &&
						       !strcmp(d[k].service, d[i].service);
				if (!d[i].rollback && t >= d[i].ts_ms && !rolled_back &&
				    deploy_covers(&d[i], name))
					cpu *= regress[i];
			}
			snapshot_init(&s, name, t, 5000, (t - T0) / 5000, 1);
			snapshot_add_gauge(&s, "cpu.host_utilization", cpu, NULL);
			feed(e, &s);
			snapshot_free(&s);
		}
		if ((t - T0) % 10000 == 0)
			engine_eval(e, t, test_events_collect, ev);
	}
	engine_free(e);
}

static struct deploy marker(const char *service, const char *version, const char *hosts,
			    uint64_t at_min, int rollback)
{
	struct deploy d = { .ts_ms = T0 + at_min * 60 * 1000, .rollback = rollback };

	snprintf(d.service, sizeof(d.service), "%s", service);
	snprintf(d.version, sizeof(d.version), "%s", version);
	snprintf(d.hosts, sizeof(d.hosts), "%s", hosts);
	return d;
}

/* How many events of status st carry service; the first one's JSON in *first. */
static int count_events(const struct test_events *ev, const char *st, const char *service)
{
	char want_st[64], want_svc[200];
	int n = 0;

	snprintf(want_st, sizeof(want_st), "\"status\":\"%s\"", st);
	snprintf(want_svc, sizeof(want_svc), "\"service\":\"%s\"", service);
	for (int i = 0; i < ev->n; i++)
		n += strstr(ev->json[i], want_st) && strstr(ev->json[i], want_svc);
	return n;
}

/*
 * api regresses (+40 %) on web-[0-3] at 20 min; db deploys harmlessly to
 * web-[4-7] 3 min later.  api is judged (one page, naming api), db is not
 * blamed, and api's page stands after db's verdict (it used to follow the
 * newest deploy of any service: api was never judged at all).
 */
Test(baseline, services_minutes_apart_are_judged_separately)
{
	struct deploy d[2] = { marker("api", "2.0", "web-[0-3]", 20, 0),
			       marker("db", "9.1", "web-[4-7]", 23, 0) };
	double regress[2] = { 1.4, 1.0 };
	struct test_events ev = { 0 };

	run_services(d, regress, 2, &ev);
	cr_expect_eq(count_events(&ev, "firing", "api"), 1, "api's regression not paged once");
	cr_expect_eq(count_events(&ev, "firing", "db"), 0, "db blamed");
	cr_expect_eq(count_events(&ev, "resolved", "api"), 0,
		     "api's page resolved without a deploy of api");
	test_events_free(&ev);
}

/*
 * Both at once, on disjoint hosts: api regresses, db (marked last) does
 * not.  Each is judged; db's peers leave out api's hosts.
 */
Test(baseline, services_deploying_at_once_are_judged_separately)
{
	struct deploy d[2] = { marker("api", "2.0", "web-[0-3]", 20, 0),
			       marker("db", "9.1", "web-[4-7]", 20, 0) };
	double regress[2] = { 1.4, 1.0 };
	struct test_events ev = { 0 };

	run_services(d, regress, 2, &ev);
	cr_expect_eq(count_events(&ev, "firing", "api"), 1, "api's regression not paged once");
	cr_expect_eq(count_events(&ev, "firing", "db"), 0, "db blamed for api's regression");
	test_events_free(&ev);
}

/* A rollback mark of the service ends its standing page; it is not judged itself. */
Test(baseline, a_rollback_resolves_the_services_page)
{
	struct deploy d[2] = { marker("api", "2.0", "web-[0-3]", 20, 0),
			       marker("api", "1.9", "web-[0-3]", 40, 1) };
	double regress[2] = { 1.4, 1.0 };
	struct test_events ev = { 0 };
	int fired_at = -1, resolved_at = -1;

	run_services(d, regress, 2, &ev);
	for (int i = 0; i < ev.n; i++) {
		if (strstr(ev.json[i], "\"status\":\"firing\"") && fired_at < 0)
			fired_at = i;
		if (strstr(ev.json[i], "\"status\":\"resolved\"") && resolved_at < 0)
			resolved_at = i;
	}
	cr_expect_eq(count_events(&ev, "firing", "api"), 1);
	cr_expect_eq(count_events(&ev, "resolved", "api"), 1, "the rollback did not end the page");
	cr_expect_lt(fired_at, resolved_at);
	test_events_free(&ev);
}
