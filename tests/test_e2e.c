/*
 * test_e2e.c - the whole chain with a real fault: TCP segments with a bad
 * checksum sent between two network namespaces this test builds; the
 * probe (in the receiving namespace), Redis, faultline-rules and
 * faultline-alerter, all the real binaries; a webhook receiver on
 * loopback.  The page must arrive with the sender named as the source
 * peer, and resolve after the fault stops.  Prints the time from the first
 * bad packet to the page.  With every interval long (10 s snapshots, 30 s
 * evaluation and group_wait), the page still comes at once: the probe's
 * watch flushes early and wakes the rules, which evaluate at once, and
 * the alerter does not hold a page for siblings.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers.h"
#include "tests/receiver.h"
#include "core/timeutil.h"
#include "store/conn.h"
#include "store/profile_store.h"
#include "model/profile.h"

#include <hiredis/hiredis.h>

static struct test_redis redis;
static char ns_a[32], ns_b[32], dir[300];
static pid_t procs[3];

static pid_t spawn(char *const argv[])
{
	pid_t p = fork();

	if (p == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	return p;
}

static void setup(void)
{
	if (!test_is_root())
		cr_skip_test("needs root (network namespaces, BPF)");
	cr_assert_eq(test_redis_start(&redis), 0);
	rx_start();
	snprintf(ns_a, sizeof(ns_a), "fl-ea-%d", getpid());
	snprintf(ns_b, sizeof(ns_b), "fl-eb-%d", getpid());
	cr_assert_eq(test_netns_pair(ns_a, ns_b, getpid() % 100000), 0);
	snprintf(dir, sizeof(dir), "%s", redis.dir);
}

static void teardown(void)
{
	for (int i = 0; i < 3; i++)
		if (procs[i] > 0) {
			kill(procs[i], SIGTERM);
			waitpid(procs[i], NULL, 0);
			procs[i] = 0;
		}
	rx_stop();
	if (ns_a[0])
		test_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ns_a, ns_b);
	test_redis_destroy(&redis);
}

static void send_from_a(int n, int gap_us)
{
	char path[64];
	pid_t p = fork();

	if (p == 0) {
		int fd;

		snprintf(path, sizeof(path), "/var/run/netns/%s", ns_a);
		fd = open(path, O_RDONLY);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(2);
		test_send_syns(n, 8471, 1, gap_us);
		_exit(0);
	}
	waitpid(p, NULL, 0);
}

/* The chain's files in the test's folder and the binaries' paths. */
struct chain {
	char rules[400], alerter_cfg[400], probe[256], rules_bin[256], alerter_bin[256];
};

/* Write rules_yaml and an alerter config (grouping, then a receiver on rx). */
static void chain_files(struct chain *ch, const char *rules_yaml, const char *grouping)
{
	FILE *f;

	snprintf(ch->rules, sizeof(ch->rules), "%s/e2e-rules.yaml", dir);
	f = fopen(ch->rules, "w");
	cr_assert_not_null(f);
	fputs(rules_yaml, f);
	fclose(f);
	snprintf(ch->alerter_cfg, sizeof(ch->alerter_cfg), "%s/alerter.yaml", dir);
	f = fopen(ch->alerter_cfg, "w");
	cr_assert_not_null(f);
	fprintf(f, "redis: %s\nconsumer: e2e\n%s"
		"receivers:\n  - name: pager\n    url: http://127.0.0.1:%d/page\n    secret: x\n",
		redis.url, grouping, rx.port);
	fclose(f);
	snprintf(ch->probe, sizeof(ch->probe), "%s/faultline-probe", test_out_dir());
	snprintf(ch->rules_bin, sizeof(ch->rules_bin), "%s/faultline-rules", test_out_dir());
	snprintf(ch->alerter_bin, sizeof(ch->alerter_bin), "%s/faultline-alerter", test_out_dir());
}

Test(e2e, bad_checksums_page_with_the_peer_and_resolve, .init = setup, .fini = teardown,
     .timeout = 120)
{
	struct chain ch;
	uint64_t t_fault, t_page = 0;

	chain_files(&ch, "groups:\n  - name: e2e\n    interval: 1s\n    rules:\n"
		    "      - alert: E2eChecksumErrors\n"
		    "        expr: rate(faultline_tcp_in_csum_errors_total[5s]) > 0.5\n"
		    "        severity: page\n"
		    "        annotations: {summary: \"{{ $labels.host }}: {{ $value }} corrupt "
		    "segments/s\"}\n"
		    "        evidence: [csum_peers]\n", "group_wait: 0s\ngroup_interval: 1s\n");
	{
		char *pa[] = { "ip", "netns", "exec", ns_b, ch.probe, "--redis", redis.url, "--host",
			       "e2e-b", "--metrics-addr", "", "--log-level", "warn", NULL };
		char *ra[] = { ch.rules_bin, "--rules", ch.rules, "--redis", redis.url, "--interval",
			       "1s", "--stale", "30s", "--log-level", "warn", NULL };
		char *aa[] = { ch.alerter_bin, "--config", ch.alerter_cfg, "--log-level", "warn",
			       NULL };

		procs[0] = spawn(pa);
		procs[1] = spawn(ra);
		procs[2] = spawn(aa);
	}
	sleep(4);	/* the probe loads its BPF programs and writes a few snapshots */
	if (waitpid(procs[0], NULL, WNOHANG) == procs[0]) {
		procs[0] = 0;
		cr_skip_test("the probe does not start here (BPF?)");
	}
	cr_assert_eq(rx_count(), 0, "paged before any fault");
	t_fault = time_mono_ns();
	for (int burst = 0; burst < 12 && !t_page; burst++) {
		send_from_a(10, 50000);	/* ~20 bad segments/s */
		if (rx_count() > 0 && !t_page)
			t_page = rx.req[0].at_ns;
	}
	cr_assert_geq(wait_requests(1, 20), 1, "no page for the checksum errors");
	t_page = rx.req[0].at_ns;
	cr_log_info("time to page: %.2f s from the first bad segment",
		    (double)(t_page - t_fault) / 1e9);
	struct request *r = &rx.req[0];

	cr_assert(strstr(r->body, "E2eChecksumErrors"), "%.300s", r->body);
	cr_assert(strstr(r->body, "\"status\":\"firing\""));
	cr_assert(strstr(r->body, "\"peer\":\"192.0.2.1\""),
		  "the evidence does not name the sending peer: %.800s", r->body);
	cr_assert(strstr(r->body, "e2e-b"));
	/* the fault stops: the alert resolves */
	int resolved = 0;

	for (int i = 0; i < 40 && !resolved; i++) {
		usleep(500000);
		pthread_mutex_lock(&rx.lock);
		for (int k = 1; k < rx.n; k++)
			resolved |= strstr(rx.req[k].body, "\"status\":\"resolved\"") != NULL;
		pthread_mutex_unlock(&rx.lock);
	}
	cr_assert(resolved, "no resolved notification after the fault stopped");
	int firing = 0;

	pthread_mutex_lock(&rx.lock);
	for (int k = 0; k < rx.n; k++)
		firing += rx.req[k].status == 200 && strstr(rx.req[k].body, "\"status\":\"firing\"");
	pthread_mutex_unlock(&rx.lock);
	cr_assert_eq(firing, 1, "paged %d times for one fault", firing);
}

/* XLEN key, or -1. */
static long long xlen(struct conn *c, const char *key)
{
	redisReply *r = conn_commandf(c, NULL, "XLEN %s", key);
	long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	if (r)
		freeReplyObject(r);
	return v;
}

Test(e2e, a_page_does_not_wait_for_the_tick, .init = setup, .fini = teardown, .timeout = 150)
{
	struct conn *c = test_redis_connect(&redis);
	struct chain ch;
	uint64_t t_fault;
	int i;

	chain_files(&ch, "groups:\n  - name: e2e\n    interval: 30s\n    rules:\n"
		    "      - alert: E2eChecksumErrors\n"
		    "        expr: increase(faultline_tcp_in_csum_errors_total[2m]) > 0\n"
		    "        severity: page\n", "group_wait: 30s\ngroup_interval: 30s\n");
	{
		char *pa[] = { "ip", "netns", "exec", ns_b, ch.probe, "--redis", redis.url, "--host",
			       "e2e-b", "--interval", "10s", "--metrics-addr", "", "--log-level",
			       "warn", NULL };

		procs[0] = spawn(pa);
	}
	/* the rules start once the host has its first snapshot (they list hosts at the tick) */
	for (i = 0; i < 300 && test_s1_count(c, "e2e-b", 0, 0) < 1; i++)
		usleep(100000);
	if (waitpid(procs[0], NULL, WNOHANG) == procs[0]) {
		procs[0] = 0;
		cr_skip_test("the probe does not start here (BPF?)");
	}
	cr_assert_geq(test_s1_count(c, "e2e-b", 0, 0), 1, "no snapshot in 30 s");
	{
		char *ra[] = { ch.rules_bin, "--rules", ch.rules, "--redis", redis.url, "--interval",
			       "30s", "--stale", "2m", "--log-level", "warn", NULL };
		char *aa[] = { ch.alerter_bin, "--config", ch.alerter_cfg, "--log-level", "warn",
			       NULL };

		procs[1] = spawn(ra);
		procs[2] = spawn(aa);
	}
	sleep(3);	/* the rules' first evaluation reads the host */
	cr_assert_eq(rx_count(), 0, "paged before any fault");
	cr_assert_leq(xlen(c, "fl:wake"), 0, "a wake before any fault");
	t_fault = time_mono_ns();
	send_from_a(3, 1000);
	cr_assert_geq(wait_requests(1, 20), 1, "no page for the checksum errors");
	cr_log_info("time to page at 10 s / 30 s / 30 s intervals: %.2f s",
		    (double)(rx.req[0].at_ns - t_fault) / 1e9);
	cr_assert(strstr(rx.req[0].body, "E2eChecksumErrors") && strstr(rx.req[0].body, "e2e-b"),
		  "%.300s", rx.req[0].body);
	cr_expect_lt(rx.req[0].at_ns - t_fault, 5 * NSEC_PER_SEC,
		     "the page took %.1f s: it waited for a tick",
		     (double)(rx.req[0].at_ns - t_fault) / 1e9);
	cr_assert_eq(xlen(c, "fl:wake"), 1, "the probe did not wake the rules once");
	conn_close(c);
}

/*
 * The early flush is for onsets only: 5 s of bad segments (20 a second, a
 * move every look) make one early snapshot and one wake, not one per
 * interval; after 3 quiet seconds a new burst makes the second.  A sad
 * host's writes do not double.
 */
Test(e2e, a_fault_that_goes_on_wakes_the_rules_once, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = test_redis_connect(&redis);
	struct chain ch;
	long long n1, n2;
	int i;

	chain_files(&ch, "groups: []\n", "");
	{
		char *pa[] = { "ip", "netns", "exec", ns_b, ch.probe, "--redis", redis.url, "--host",
			       "e2e-b", "--metrics-addr", "", "--log-level", "warn", NULL };

		procs[0] = spawn(pa);
	}
	for (i = 0; i < 300 && test_s1_count(c, "e2e-b", 0, 0) < 3; i++)
		usleep(100000);
	if (waitpid(procs[0], NULL, WNOHANG) == procs[0]) {
		procs[0] = 0;
		cr_skip_test("the probe does not start here (BPF?)");
	}
	cr_assert_geq(test_s1_count(c, "e2e-b", 0, 0), 3, "no snapshots in 30 s");
	cr_assert_leq(xlen(c, "fl:wake"), 0, "a wake before any fault");
	send_from_a(100, 50000);	/* 5 s, 20 a second */
	n1 = xlen(c, "fl:wake");
	sleep(3);
	send_from_a(3, 1000);
	for (i = 0; i < 30 && xlen(c, "fl:wake") < 2; i++)
		usleep(100000);
	n2 = xlen(c, "fl:wake");
	cr_expect_eq(n1, 1, "a fault that went on for 5 s woke the rules %lld times", n1);
	cr_expect_eq(n2, 2, "a new burst after 3 quiet seconds: %lld wakes in all", n2);
	conn_close(c);
}

/*
 * The /proc side of the watch, without BPF (--no-bpf): UDP checksum
 * errors, which only /proc/net/snmp counts, moving in a copy of that file
 * the probe reads (FL_PROC_NET_SNMP) make an early snapshot and a wake
 * within 3 s (the /proc files are looked at every 500 ms), 9 s before the
 * next of its 10 s snapshots.
 */
Test(e2e, a_proc_counter_that_moves_flushes_early, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = test_redis_connect(&redis);
	char snmp[400], cmd[2048];
	uint64_t t0;
	int i;

	snprintf(snmp, sizeof(snmp), "%s/snmp", dir);
	cr_assert_eq(test_sh("cp /proc/net/snmp %s", snmp), 0);
	procs[0] = fork();
	if (procs[0] == 0) {
		char probe[256];

		setenv("FL_PROC_NET_SNMP", snmp, 1);
		snprintf(probe, sizeof(probe), "%s/faultline-probe", test_out_dir());
		execl(probe, probe, "--redis", redis.url, "--host", "e2e-proc", "--no-bpf",
		      "--interval", "10s", "--metrics-addr", "", "--log-level", "warn",
		      (char *)NULL);
		_exit(127);
	}
	/* the second snapshot is on the 10 s grid: the next tick is ~9 s after the change */
	for (i = 0; i < 300 && test_s1_count(c, "e2e-proc", 0, 0) < 2; i++)
		usleep(100000);
	cr_assert_geq(test_s1_count(c, "e2e-proc", 0, 0), 2, "no second snapshot in 30 s");
	sleep(1);
	cr_assert_leq(xlen(c, "fl:wake"), 0, "a wake before any change");
	/* "Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors" */
	snprintf(cmd, sizeof(cmd), "awk '/^Udp: [0-9]/ { $8 = $8 + 7 } { print }' %s > %s.new && "
		 "cat %s.new > %s", snmp, snmp, snmp, snmp);	/* the same file: the probe keeps it open */
	t0 = time_mono_ns();
	cr_assert_eq(test_sh("%s", cmd), 0);
	for (i = 0; i < 50 && xlen(c, "fl:wake") < 1; i++)
		usleep(100000);
	cr_expect_eq(xlen(c, "fl:wake"), 1, "no wake within 5 s");
	cr_expect_lt(time_mono_ns() - t0, 3 * NSEC_PER_SEC, "the wake took %.1f s",
		     (double)(time_mono_ns() - t0) / 1e9);
	cr_expect_geq(test_s1_count(c, "e2e-proc", 0, 0), 3, "no early snapshot");
	conn_close(c);
}

/*
 * The unnoticed regression, in Python: a real CPython service (Debian's
 * python3.11) in a v1 cpu cgroup named like a systemd unit runs version 1
 * (render_page most of its time, parse_invoice the rest); it is deployed
 * as version 2, whose parse_invoice is three times slower, and marked with
 * `faultline deploy mark`.  The real probe profiles it (Python frames
 * walked in BPF) into Redis, faultline-rules judges the deploy against the
 * service's own past, and the page that reaches the webhook names the
 * Python function: invoice.parse_invoice, not the interpreter.
 */
static char e2e_cgroup[96];

/* Version v of the service, in the test's cgroup. */
static pid_t start_python_service(const char *script, int v)
{
	char cmd[512];
	pid_t p;

	snprintf(cmd, sizeof(cmd), "echo $$ > /sys/fs/cgroup/cpu/%s/cgroup.procs && "
		 "exec /usr/bin/python3.11 %s %d 0", e2e_cgroup, script, v ? 3 : 1);
	p = fork();
	if (p == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return p;
}

static void stop_python_service(pid_t p)
{
	if (p > 0) {
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
	}
}

static pid_t e2e_py;

static void python_teardown(void)
{
	stop_python_service(e2e_py);
	e2e_py = 0;
	if (e2e_cgroup[0])
		test_sh("rmdir /sys/fs/cgroup/cpu/%s 2>/dev/null", e2e_cgroup);
	teardown();
}

Test(e2e, a_python_deploy_that_got_slower_pages_naming_the_function, .init = setup,
     .fini = python_teardown, .timeout = 240)
{
	struct conn *c = test_redis_connect(&redis);
	char yaml[1024], script[400], service[48], want[128];
	struct chain ch;
	int i, fired = 0;
	FILE *f;

	if (access("/usr/bin/python3.11", X_OK) || access("/sys/fs/cgroup/cpu/cgroup.procs", F_OK))
		cr_skip_test("needs Debian's python3.11 and a v1 cpu controller");
	snprintf(service, sizeof(service), "fl-pyapi-%d", getpid());
	snprintf(e2e_cgroup, sizeof(e2e_cgroup), "%s.service", service);
	cr_assert_eq(test_sh("mkdir -p /sys/fs/cgroup/cpu/%s", e2e_cgroup), 0);
	snprintf(script, sizeof(script), "%s/invoice.py", dir);
	f = fopen(script, "w");
	cr_assert(f);
	fputs(test_python_service, f);
	fclose(f);
	snprintf(yaml, sizeof(yaml),
		 "groups:\n  - name: deploys\n    interval: 1s\n    rules:\n"
		 "      - alert: PostDeployHotFunction\n"
		 "        baseline: {service: %s, window: 30s, profile_share: 10}\n"
		 "        severity: page\n", service);
	chain_files(&ch, yaml, "group_wait: 0s\ngroup_interval: 1s\n");
	e2e_py = start_python_service(script, 0);
	{
		char *pa[] = { ch.probe, "--redis", redis.url, "--host", "e2e-py", "--metrics-addr",
			       "", "--log-level", "warn", NULL };
		char *ra[] = { ch.rules_bin, "--rules", ch.rules, "--redis", redis.url, "--interval",
			       "1s", "--stale", "30s", "--log-level", "warn", NULL };
		char *aa[] = { ch.alerter_bin, "--config", ch.alerter_cfg, "--log-level", "warn",
			       NULL };

		procs[0] = spawn(pa);
		procs[1] = spawn(ra);
		procs[2] = spawn(aa);
	}
	sleep(3);
	if (waitpid(procs[0], NULL, WNOHANG) == procs[0]) {
		procs[0] = 0;
		cr_skip_test("the probe does not start here (BPF?)");
	}
	/* version 1 for 40 s: the 30 s before the deploy are whole 10 s windows */
	sleep(40);
	{
		/* entries and, past a 10-minute boundary, the span chunk before it */
		struct profile seen;
		char err[256];
		int windows;

		profile_init(&seen, "e2e-py");
		windows = profile_read_merge(c, "e2e-py", PROFILE_CPU, 0, 0, NULL, &seen, NULL, err,
					     sizeof(err));
		profile_free(&seen);
		cr_assert_geq(windows, 3, "too few profile windows of version 1 (%s)",
			      windows < 0 ? err : "read");
	}
	stop_python_service(e2e_py);
	e2e_py = start_python_service(script, 1);
	cr_assert_eq(test_sh("%s/faultline deploy mark --service %s --version 2 --hosts e2e-py "
			     "--redis %s >/dev/null", test_out_dir(), service, redis.url), 0);
	cr_assert_eq(rx_count(), 0, "paged before the deploy was judged");
	/* the 30 s after it, their windows flushed, then the judge */
	for (i = 0; i < 120 && !fired; i++) {
		sleep(1);
		pthread_mutex_lock(&rx.lock);
		for (int k = 0; k < rx.n; k++)
			fired |= strstr(rx.req[k].body, "PostDeployHotFunction") != NULL;
		pthread_mutex_unlock(&rx.lock);
	}
	cr_assert(fired, "no PostDeployHotFunction page within 2 min of the deploy");
	pthread_mutex_lock(&rx.lock);
	cr_log_info("paged %d s after the deploy: %.600s", i, rx.req[rx.n - 1].body);
	snprintf(want, sizeof(want), "invoice.parse_invoice (");
	cr_expect(strstr(rx.req[rx.n - 1].body, want),
		  "the page does not name the Python function: %.1000s", rx.req[rx.n - 1].body);
	cr_expect(strstr(rx.req[rx.n - 1].body, "invoice.py)"),
		  "the function's file is not named: %.1000s", rx.req[rx.n - 1].body);
	cr_expect(!strstr(rx.req[rx.n - 1].body, "\"function\":\"_PyEval") &&
		  !strstr(rx.req[rx.n - 1].body, "\"function\":\"Py"),
		  "the interpreter was named: %.1000s", rx.req[rx.n - 1].body);
	pthread_mutex_unlock(&rx.lock);
	conn_close(c);
}
