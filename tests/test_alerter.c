/*
 * test_alerter.c - faultline-alerter with real HTTP and a real Redis: a
 * receiver this test runs on loopback records every request and answers
 * as the test says.  Payload shape (Alertmanager v4), signature, evidence
 * with the hot function of a program profiled by the probe, 503-then-200
 * with nothing lost or doubled, kill -9 mid-delivery, 4xx dead letters,
 * silences, grouping; Slack and PagerDuty shapes; config errors.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "store/conn.h"
#include "alerter/alerter.h"
#include "tests/helpers.h"
#include "tests/receiver.h"
#include "probes/probe.h"
#include "model/profile.h"
#include "store/store.h"
#include "core/timeutil.h"

/* ---- the alerter ---------------------------------------------------------- */

static struct test_redis redis;
static char cfgpath[300];
static pid_t alerter;

static void write_config(const char *extra_receiver)
{
	FILE *f;

	snprintf(cfgpath, sizeof(cfgpath), "%s/alerter.yaml", redis.dir);
	f = fopen(cfgpath, "w");
	fprintf(f, "redis: %s\nconsumer: test\nexternal_url: http://faultline.test/\n"
		"group_wait: 1s\npage_group_wait: 1s\ngroup_interval: 2s\nrepeat_interval: 1h\n"
		"receivers:\n  - name: hook\n    url: http://127.0.0.1:%d/hook\n"
		"    secret: s3cret\n    timeout: 5s\n%s"
		"delivery:\n  backoff_initial: 200ms\n  backoff_max: 2s\n"
		"evidence:\n  top_stacks: 5\n  window: 10m\n",
		redis.url, rx.port, extra_receiver ? extra_receiver : "");
	fclose(f);
}

static void start_alerter(void)
{
	char bin[256];

	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	alerter = fork();
	if (alerter == 0) {
		execl(bin, bin, "--config", cfgpath, "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
}

static void stop_alerter(int sig)
{
	if (alerter > 0) {
		kill(alerter, sig);
		waitpid(alerter, NULL, 0);
	}
	alerter = 0;
}

static void setup(void)
{
	cr_assert_eq(test_redis_start(&redis), 0);
	rx_start();
	write_config(NULL);
}

/* What a scoped-evidence test made (killed and removed by teardown, even on failure). */
static pid_t spinners[2], probe_pid;
static char cg_root[128], loop_dev[64], io_dir[64];

static void remove_spinners(void)
{
	if (probe_pid > 0) {
		kill(probe_pid, SIGTERM);
		waitpid(probe_pid, NULL, 0);
	}
	probe_pid = 0;
	for (int i = 0; i < 2; i++) {
		if (spinners[i] > 0) {
			kill(spinners[i], SIGKILL);
			waitpid(spinners[i], NULL, 0);
		}
		spinners[i] = 0;
	}
	if (cg_root[0]) {
		/* killed tasks leave their cgroup asynchronously: retry briefly */
		for (int i = 0; i < 50 && test_sh("rmdir %s/*/ %s 2>/dev/null", cg_root, cg_root); i++)
			usleep(20000);
		cg_root[0] = '\0';
	}
	if (loop_dev[0])
		test_sh("losetup -d %s", loop_dev);
	loop_dev[0] = '\0';
	if (io_dir[0])
		test_sh("rm -rf %s", io_dir);
	io_dir[0] = '\0';
}

static void teardown(void)
{
	remove_spinners();
	stop_alerter(SIGTERM);
	rx_stop();
	test_redis_destroy(&redis);
}

static struct conn *conn(void)
{
	return test_redis_connect(&redis);
}

static void emit(struct conn *c, const char *name, const char *fp, const char *status,
		 const char *extra_labels, const char *faultline)
{
	char json[2048], t[40];

	snprintf(json, sizeof(json),
		 "{\"status\":\"%s\",\"fingerprint\":\"%s\",\"labels\":{\"alertname\":\"%s\","
		 "\"severity\":\"page\"%s},\"annotations\":{\"summary\":\"%s is unhappy\"},"
		 "\"startsAt\":\"%s\",\"generatorURL\":\"http://faultline.test/rules\"%s%s}",
		 status, fp, name, extra_labels ? extra_labels : "", name,
		 alert_format_time(time_wall_ns() / NSEC_PER_MSEC, t, sizeof(t)),
		 faultline ? ",\"faultline\":" : "", faultline ? faultline : "");
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:alerts * e %s", json));
}

/*
 * Profile process pid for 2 s (its samples only: the evidence shows the
 * host's top stacks, and on a busy machine other processes' stacks would
 * push it out of the top ten), kill it, and put the window into
 * fl:{host}:p10.  Returns 0, or -1 when BPF does not load here.
 */
static int seed_window(struct conn *c, const char *host, pid_t pid)
{
	struct profile_one_filter only = { .pid = pid };
	struct probe_config cfg;
	struct profile p;
	char err[512], *buf;
	size_t len;
	int ret;

	probe_config_defaults(&cfg, err, sizeof(err));
	free(cfg.host);
	cfg.host = strdup(host);
	ret = profile_oneshot(&cfg, 2 * NSEC_PER_SEC, 99, &only, &p, err, sizeof(err));
	probe_config_free(&cfg);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	if (ret)
		return -1;
	p.ts_ms = time_wall_ns() / NSEC_PER_MSEC;
	profile_encode(&p, &buf, &len);
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:{%s}:p10 %llu-0 d %b", host,
				     (unsigned long long)p.ts_ms, buf, len));
	free(buf);
	profile_free(&p);
	return 0;
}

/* Put a real profile window of a hot test program into fl:{host}:p10. */
static int seed_profile(struct conn *c, const char *host)
{
	static const char src[] =
		"#include <stdlib.h>\n#include <time.h>\nstatic volatile unsigned long s;\n"
		"__attribute__((noinline)) void hot_function(void){for(int i=0;i<100000;i++)s+=i;}\n"
		"int main(int c,char**v){time_t e=time(0)+atoi(v[1]);while(time(0)<e)hot_function();}\n";
	char dir[64] = "/tmp/fl-alert.XXXXXX", path[128], bin[128];
	FILE *f;
	pid_t hot;
	int ret;

	if (!test_is_root() || !mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/hot.c", dir);
	f = fopen(path, "w");
	fputs(src, f);
	fclose(f);
	snprintf(bin, sizeof(bin), "%s/flalerthot", dir);
	if (test_sh("gcc -O1 -o %s %s", bin, path)) {
		test_sh("rm -rf %s", dir);
		return -1;
	}
	hot = fork();
	if (hot == 0) {
		execl(bin, "flalerthot", "3", (char *)NULL);
		_exit(1);
	}
	ret = seed_window(c, host, hot);
	test_sh("rm -rf %s", dir);
	return ret;
}

/* The same for a real Python script whose time goes to parse_invoice() under handle(). */
static int seed_python_profile(struct conn *c, const char *host)
{
	char dir[64] = "/tmp/fl-alertpy.XXXXXX";
	static const char script[] =
		"import sys, time\n"
		"def parse_invoice(text):\n"
		"    return sum((ord(ch) * i) % 7 for i, ch in enumerate(text))\n"
		"def handle():\n"
		"    return parse_invoice('invoice-line;' * 2000)\n"
		"end = time.time() + 4\n"
		"while time.time() < end:\n"
		"    handle()\n";
	char path[128];
	FILE *f;
	pid_t py;
	int ret;

	if (!test_is_root() || access("/usr/bin/python3.11", X_OK) || !mkdtemp(dir))
		return -1;
	snprintf(path, sizeof(path), "%s/invoice.py", dir);
	f = fopen(path, "w");
	fputs(script, f);
	fclose(f);
	py = fork();
	if (py == 0) {
		execl("/usr/bin/python3.11", "python3.11", path, (char *)NULL);
		_exit(1);
	}
	usleep(500000);		/* past start-up */
	ret = seed_window(c, host, py);
	test_sh("rm -rf %s", dir);
	return ret;
}

Test(alerter, alertmanager_payload_signature_and_evidence, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	json_object *doc, *x, *a0;
	char ts[64], sig[128], want[80], idem[100];
	int have_profile = seed_profile(c, "db-1") == 0;

	start_alerter();
	emit(c, "CpuSaturated", "00aa11bb22cc33dd", "firing", ",\"host\":\"db-1\"",
	     "{\"hosts\":[\"db-1\"],\"total_hosts\":1,\"value\":0.97,\"runbook\":"
	     "\"runbooks/cpu.md\",\"evidence\":[\"cpu_stacks\"]}");
	cr_assert_geq(wait_requests(1, 15), 1, "nothing delivered");
	struct request *r = &rx.req[0];

	cr_assert(strstr(r->headers, "POST /hook"), "%s", r->headers);
	cr_assert_not_null(header(r, "X-Faultline-Timestamp", ts, sizeof(ts)));
	cr_assert_not_null(header(r, "X-Faultline-Signature", sig, sizeof(sig)));
	cr_assert_not_null(header(r, "X-Faultline-Idempotency-Key", idem, sizeof(idem)));
	sign_body("s3cret", strtoull(ts, NULL, 10), idem, r->body, strlen(r->body), want);
	cr_assert_str_eq(sig, want, "signature does not verify");
	/* it covers the idempotency key and the timestamp: either changed, it fails */
	sign_body("s3cret", strtoull(ts, NULL, 10), "0000", r->body, strlen(r->body), want);
	cr_assert_str_neq(sig, want, "the signature does not cover the idempotency key");
	sign_body("s3cret", strtoull(ts, NULL, 10) + 1, idem, r->body, strlen(r->body), want);
	cr_assert_str_neq(sig, want, "the signature does not cover the timestamp");
	doc = json_tokener_parse(r->body);
	cr_assert_not_null(doc, "body is not JSON: %.200s", r->body);
	cr_assert(json_object_object_get_ex(doc, "version", &x) &&
		  !strcmp(json_object_get_string(x), "4"));
	static const char *const strs[] = { "receiver", "status", "groupKey", "externalURL" };
	for (int i = 0; i < 4; i++)
		cr_assert(json_object_object_get_ex(doc, strs[i], &x) &&
			  json_object_is_type(x, json_type_string), "%s missing", strs[i]);
	static const char *const objs[] = { "groupLabels", "commonLabels", "commonAnnotations" };
	for (int i = 0; i < 3; i++)
		cr_assert(json_object_object_get_ex(doc, objs[i], &x) &&
			  json_object_is_type(x, json_type_object), "%s missing", objs[i]);
	cr_assert(json_object_object_get_ex(doc, "truncatedAlerts", &x) &&
		  json_object_is_type(x, json_type_int));
	cr_assert(json_object_object_get_ex(doc, "alerts", &x) && json_object_array_length(x) == 1);
	a0 = json_object_array_get_idx(x, 0);
	static const char *const afields[] = { "status", "startsAt", "endsAt", "generatorURL",
					       "fingerprint" };
	for (int i = 0; i < 5; i++)
		cr_assert(json_object_object_get_ex(a0, afields[i], &x) &&
			  json_object_is_type(x, json_type_string), "alert.%s", afields[i]);
	cr_assert(json_object_object_get_ex(a0, "labels", &x) &&
		  json_object_is_type(x, json_type_object));
	cr_assert(strstr(r->body, "\"runbook\":\"runbooks\\/cpu.md\"") ||
		  strstr(r->body, "\"runbook\":\"runbooks/cpu.md\""), "%.300s", r->body);
	if (have_profile)
		cr_assert(strstr(r->body, "hot_function"),
			  "the evidence lacks the profiled program's hot function: %.600s", r->body);
	else
		cr_log_warn("no BPF here: evidence content not checked against a real profile");
	json_object_put(doc);
	for (int i = 0; i < 20 && test_alerts_pending(c, NULL) != 0; i++)
		usleep(100000);
	cr_assert_eq(test_alerts_pending(c, NULL), 0, "delivered but not acknowledged");
	conn_close(c);
	if (!have_profile)
		cr_skip_test("needs root and BPF for the evidence part");
}

/*
 * The project's CPU burner (tests/tools/hotloop: demo_hot_function) copied
 * to dir/name, so its samples carry that comm, and started inside cgroup
 * directory cgdir (it joins before exec: the profiler sees it there from
 * its first sample).  Its pid, or -1.
 */
static pid_t spin_in_cgroup(const char *dir, const char *name, const char *cgdir)
{
	char bin[256], procs[300], me[16];
	pid_t pid;
	int fd;

	snprintf(bin, sizeof(bin), "%s/%s", dir, name);
	if (test_sh("cp %s/tests/tools/hotloop %s", test_out_dir(), bin))
		return -1;
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgdir);
	pid = fork();
	if (pid == 0) {
		snprintf(me, sizeof(me), "%d\n", (int)getpid());
		fd = open(procs, O_WRONLY);
		if (fd < 0 || write(fd, me, strlen(me)) < 0)
			_exit(126);
		close(fd);
		execl(bin, name, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The alerter's request whose body holds `needle`, or NULL. */
static struct request *request_with(const char *needle)
{
	for (int i = 0; i < rx.n; i++)
		if (strstr(rx.req[i].body, needle))
			return &rx.req[i];
	return NULL;
}

/*
 * Evidence scoped by the alert's own labels (issue 42): two programs spin,
 * each in its own cgroup of the cpu controller, one capped by a quota.  The
 * page about the capped cgroup shows only its program's stacks and says
 * what it is scoped to and over which window; a page about a cgroup with no
 * samples says so rather than showing the host's stacks.
 */
Test(alerter, evidence_is_scoped_to_the_alerts_cgroup, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = conn();
	char dir[64] = "/tmp/fl-scope.XXXXXX", capped[200], free_cg[200], labels[300];
	char err[512], *buf;
	struct profile_one_filter only = { 0 };
	struct probe_config cfg;
	struct profile p;
	struct request *r;
	size_t len;
	int ret;

	if (!test_is_root() || access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", W_OK))
		cr_skip_test("needs root and the cpu controller on cgroup v1 (this machine's kind)");
	cr_assert(mkdtemp(dir));
	snprintf(cg_root, sizeof(cg_root), "/sys/fs/cgroup/cpu/fl-scope-%d", (int)getpid());
	snprintf(capped, sizeof(capped), "%s/capped", cg_root);
	snprintf(free_cg, sizeof(free_cg), "%s/free", cg_root);
	cr_assert_eq(test_sh("mkdir -p %s %s && echo 100000 > %s/cpu.cfs_period_us && "
			     "echo 20000 > %s/cpu.cfs_quota_us", capped, free_cg, capped, capped),
		     0, "cannot make the test's cgroups under %s", cg_root);
	spinners[0] = spin_in_cgroup(dir, "capped_spinner", capped);
	spinners[1] = spin_in_cgroup(dir, "free_spinner", free_cg);
	cr_assert(spinners[0] > 0 && spinners[1] > 0, "cannot start the spinners");
	usleep(300000);

	/* a real profile of both (the test's parent cgroup: nothing else on the machine) */
	probe_config_defaults(&cfg, err, sizeof(err));
	free(cfg.host);
	cfg.host = strdup("db-2");
	snprintf(only.cgroup, sizeof(only.cgroup), "/fl-scope-%d", (int)getpid());
	ret = profile_oneshot(&cfg, 2 * NSEC_PER_SEC, 99, &only, &p, err, sizeof(err));
	probe_config_free(&cfg);
	test_sh("rm -rf %s", dir);
	if (ret)
		cr_skip_test("no BPF profiler here: %s", err);
	p.ts_ms = time_wall_ns() / NSEC_PER_MSEC;
	cr_assert_eq(profile_encode(&p, &buf, &len), 0);
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:{db-2}:p10 %llu-0 d %b",
				     (unsigned long long)p.ts_ms, buf, len));
	free(buf);
	profile_free(&p);

	start_alerter();
	snprintf(labels, sizeof(labels), ",\"host\":\"db-2\",\"cgroup\":\"/fl-scope-%d/capped\"",
		 (int)getpid());
	emit(c, "CpuThrottled", "10aa11bb22cc33dd", "firing", labels,
	     "{\"hosts\":[\"db-2\"],\"total_hosts\":1,\"value\":0.8,\"evidence\":[\"cpu_stacks\"]}");
	snprintf(labels, sizeof(labels), ",\"host\":\"db-2\",\"cgroup\":\"/fl-scope-%d/idle\"",
		 (int)getpid());
	emit(c, "CpuThrottledIdle", "20aa11bb22cc33dd", "firing", labels,
	     "{\"hosts\":[\"db-2\"],\"total_hosts\":1,\"value\":0.8,\"evidence\":[\"cpu_stacks\"]}");
	cr_assert_geq(wait_requests(2, 20), 2, "the two pages were not delivered");

	r = request_with("\"alertname\":\"CpuThrottled\"");
	cr_assert_not_null(r);
	cr_expect(strstr(r->body, "capped_spinner;") && strstr(r->body, "demo_hot_function"),
		  "the capped cgroup's process is not in its "
		  "evidence: %.1500s", r->body);
	cr_expect(!strstr(r->body, "free_spinner"), "the other cgroup's process is in the "
		  "evidence: %.1500s", r->body);
	snprintf(labels, sizeof(labels), "\"scope\":\"cgroup \\/fl-scope-%d\\/capped\"",
		 (int)getpid());
	cr_expect(strstr(r->body, labels) && strstr(r->body, "\"window\":{\"from\":"),
		  "the evidence does not say its scope and window: %.1500s", r->body);

	r = request_with("\"alertname\":\"CpuThrottledIdle\"");
	cr_assert_not_null(r);
	cr_expect(strstr(r->body, "no CPU samples of cgroup") && !strstr(r->body, "top_stacks") &&
		  !strstr(r->body, "spinner"), "a cgroup without samples did not say so (or fell "
		  "back to the host's stacks): %.1500s", r->body);
	conn_close(c);
}

/*
 * I/O evidence names who writes to the alert's device and where it waits
 * (issue 42): a real probe samples a block request per CPU every
 * microsecond (profile.io_interval: 1us, about all of them) while dd writes
 * to a loop device with O_DIRECT and a program spins beside it.  The page about that device names dd and its kernel write
 * path, its waits in io_schedule, and not the spinner; a device nobody
 * wrote to says so.
 */
/*
 * A Python service's page carries its Python functions as evidence, not
 * the interpreter's: the stacks name handle -> parse_invoice with file
 * and line, the frames the BPF walker read at each sample.
 */
Test(alerter, python_functions_reach_the_evidence, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	char want[160];

	if (seed_python_profile(c, "app-1")) {
		conn_close(c);
		cr_skip_test("needs root, BPF and Debian's python3.11");
	}
	start_alerter();
	emit(c, "CpuSaturated", "00aa11bb22cc33ee", "firing", ",\"host\":\"app-1\"",
	     "{\"hosts\":[\"app-1\"],\"total_hosts\":1,\"value\":0.97,"
	     "\"evidence\":[\"cpu_stacks\"]}");
	cr_assert_geq(wait_requests(1, 15), 1, "nothing delivered");
	/* the body may escape '/' in the file's path: look for what has none */
	snprintf(want, sizeof(want), "invoice.handle (");
	cr_assert(strstr(rx.req[0].body, want), "no handle in the evidence: %.800s",
		  rx.req[0].body);
	cr_assert(strstr(rx.req[0].body, "invoice.parse_invoice ("),
		  "no parse_invoice in the evidence: %.800s", rx.req[0].body);
	cr_assert(strstr(rx.req[0].body, "invoice.py:5)"),
		  "handle's frame lacks its file and line: %.800s", rx.req[0].body);
	cr_expect(!strstr(rx.req[0].body, "[python]"), "an unnamed Python frame: %.800s",
		  rx.req[0].body);
	conn_close(c);
}

Test(alerter, io_evidence_names_the_devices_writer_and_its_wait, .init = setup,
     .fini = teardown, .timeout = 120)
{
	struct conn *c = conn();
	char cfg[128], probe[256], labels[200], img[128], cmd[300];
	struct request *r;
	const char *io;
	FILE *f;

	if (!test_is_root())
		cr_skip_test("needs root for BPF and a loop device");
	snprintf(io_dir, sizeof(io_dir), "/tmp/fl-io.XXXXXX");
	cr_assert(mkdtemp(io_dir));
	snprintf(img, sizeof(img), "%s/disk.img", io_dir);
	cr_assert_eq(test_sh("truncate -s 64M %s", img), 0);
	snprintf(cmd, sizeof(cmd), "losetup -f --show --direct-io=off %s", img);
	f = popen(cmd, "r");
	cr_assert(f && fgets(loop_dev, sizeof(loop_dev), f), "losetup failed");
	pclose(f);
	loop_dev[strcspn(loop_dev, "\n")] = '\0';

	snprintf(cfg, sizeof(cfg), "%s/probe.yaml", io_dir);
	f = fopen(cfg, "w");
	fputs("profile:\n  window: 2s\n  io_interval: 1us\n  unwind_rows: 0\n", f);
	fclose(f);
	snprintf(probe, sizeof(probe), "%s/faultline-probe", test_out_dir());
	probe_pid = fork();
	if (probe_pid == 0) {
		execl(probe, probe, "--config", cfg, "--redis", redis.url, "--host", "io-1",
		      "--metrics-addr", "", "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	sleep(2);	/* its BPF programs load */
	if (waitpid(probe_pid, NULL, WNOHANG) == probe_pid) {
		probe_pid = 0;
		cr_skip_test("the probe does not start here (BPF?)");
	}
	spinners[0] = spin_in_cgroup(io_dir, "cpu_hog_beside", "/sys/fs/cgroup/cpu");
	cr_assert_gt(spinners[0], 0);
	/* ~4 s of synchronous direct writes: two whole windows of them */
	cr_assert_eq(test_sh("timeout 4 sh -c 'while :; do dd if=/dev/zero of=%s bs=4k "
			     "count=2000 oflag=direct status=none; done'; true", loop_dev), 0);
	sleep(3);	/* the last window is published */

	start_alerter();
	snprintf(labels, sizeof(labels), ",\"host\":\"io-1\",\"device\":\"%s\"",
		 strrchr(loop_dev, '/') + 1);
	emit(c, "SlowWrites", "30aa11bb22cc33dd", "firing", labels,
	     "{\"hosts\":[\"io-1\"],\"total_hosts\":1,\"value\":9,\"evidence\":[\"io_stacks\"]}");
	emit(c, "SlowWritesElsewhere", "40aa11bb22cc33dd", "firing",
	     ",\"host\":\"io-1\",\"device\":\"sdzz\"",
	     "{\"hosts\":[\"io-1\"],\"total_hosts\":1,\"value\":9,\"evidence\":[\"io_stacks\"]}");
	cr_assert_geq(wait_requests(2, 20), 2, "the two pages were not delivered");

	r = request_with("\"alertname\":\"SlowWrites\"");
	cr_assert_not_null(r);
	io = strstr(r->body, "\"io\":");
	cr_assert(io, "no I/O evidence: %.1500s", r->body);
	cr_expect(strstr(io, "\"writers\"") && strstr(io, "dd;[") &&
		  (strstr(io, "blkdev_write_iter") || strstr(io, "submit_bio")),
		  "the writers are not dd through its write path: %.3000s", io);
	cr_expect(strstr(io, "\"waits\"") && strstr(io, "io_schedule"),
		  "no waits in io_schedule: %.3000s", io);
	cr_expect(!strstr(io, "cpu_hog_beside"), "the spinner is in the I/O evidence: %.3000s",
		  io);
	snprintf(labels, sizeof(labels), "\"scope\":\"device %s\"", strrchr(loop_dev, '/') + 1);
	cr_expect(strstr(io, labels), "the evidence does not say its device: %.3000s", io);

	{
		/* the probe stores its CPU windows as zstd frames (profile.h) */
		redisReply *x = conn_commandf(c, NULL, "XRANGE fl:{io-1}:p10 - +");
		size_t frames = 0, big_plain = 0;

		cr_assert(x && x->type == REDIS_REPLY_ARRAY, "no p10 stream");
		for (size_t i = 0; i < x->elements; i++) {
			redisReply *f = x->element[i]->element[1];
			int frame;

			cr_assert_eq(f->elements, 2);
			frame = f->element[1]->len >= 4 &&
				!memcmp(f->element[1]->str, "\x28\xb5\x2f\xfd", 4);
			frames += frame;
			/* only a window zstd cannot shrink (a few stacks) stays msgpack */
			big_plain += !frame && f->element[1]->len > 512;
		}
		cr_expect(frames > 0 && big_plain == 0, "of %zu CPU windows %zu are zstd frames, "
			  "%zu larger ones are not", x->elements, frames, big_plain);
		freeReplyObject(x);
	}

	r = request_with("\"alertname\":\"SlowWritesElsewhere\"");
	cr_assert_not_null(r);
	cr_expect(strstr(r->body, "\"missing\":\"no sampled I") &&
		  strstr(r->body, "to sdzz on the affected hosts") && !strstr(r->body, "\"writers\""),
		  "a device nobody wrote to did not say so: %.1500s", r->body);
	conn_close(c);
}

/*
 * One synthetic 10 s profile window of host at ts_ms: main;fn[i] counted
 * n[i] times each, in service svc[i] (svc NULL: all "api").
 */
static void put_window(struct conn *c, const char *host, uint64_t ts_ms, const char *const *svc,
		       const char *const *fn, const uint64_t *n, int nfn)
{
	struct profile p;
	char *buf;
	size_t len;

	profile_init(&p, host);
	p.ts_ms = ts_ms;
	p.duration_ms = 10000;
	p.rate_hz = 19;
	for (int i = 0; i < nfn; i++) {
		const char *frames[] = { "main", fn[i] };

		cr_assert_eq(profile_add(&p, svc ? svc[i] : "api", svc ? svc[i] : "api", 42, frames,
					 2, n[i]), 0);
	}
	cr_assert_eq(profile_encode(&p, &buf, &len), 0);
	freeReplyObject(conn_commandf(c, NULL, "XADD fl:{%s}:p10 %llu-0 d %b", host,
				     (unsigned long long)ts_ms, buf, len));
	free(buf);
	profile_free(&p);
}

/*
 * A post-deploy alert's evidence names the function whose CPU share grew
 * between the window before the deploy and the alert's window, among the
 * deployed service's processes (its systemd unit api.service): a batch job
 * beside it that grows more is not in it, neither in the stacks nor in
 * the shares.
 */
Test(alerter, deploy_alert_names_the_function_that_grew, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC, at = now - 15 * 60000;
	const char *fns[] = { "parse_request", "compress_block", "write_log", "batch_crunch" };
	const char *svc[] = { "api.service", "api.service", "api.service", "batch.service" };
	const uint64_t before[] = { 600, 200, 200, 100 }, after[] = { 400, 500, 100, 5000 };
	char fl[512];
	const char *g;

	for (int w = 0; w < 3; w++) {
		put_window(c, "web-1", at - (uint64_t)(w + 1) * 60000, svc, fns, before, 4);
		put_window(c, "web-1", now - (uint64_t)(w + 1) * 60000, svc, fns, after, 4);
	}
	snprintf(fl, sizeof(fl), "{\"hosts\":[\"web-1\"],\"total_hosts\":2,\"value\":1.3,"
		 "\"evidence\":[\"cpu_stacks\"],\"deploy\":{\"service\":\"api\",\"at_ms\":%llu,"
		 "\"base_ms\":%llu}}", (unsigned long long)at, (unsigned long long)(at - 15 * 60000));
	start_alerter();
	emit(c, "PostDeployCpuRegression", "11aa22bb33cc44dd", "firing",
	     ",\"service\":\"api\",\"version\":\"2.0\"", fl);
	cr_assert_geq(wait_requests(1, 15), 1, "nothing delivered");
	g = strstr(rx.req[0].body, "grew_since_deploy");
	cr_assert(g, "no grew_since_deploy in %.800s", rx.req[0].body);
	/* compress_block went from 20 % to 50 %: listed first; parse_request shrank: absent */
	cr_expect(strstr(g, "compress_block"), "%.600s", g);
	cr_expect(!strstr(g, "parse_request"), "%.600s", g);
	cr_expect(strstr(g, "\"share_before\":0.2") && strstr(g, "\"share_after\":0.5"), "%.600s",
		  g);
	cr_expect(!strstr(rx.req[0].body, "batch_crunch") &&
		  strstr(rx.req[0].body, "\"scope\":\"service api\""),
		  "the evidence is not scoped to service api: %.1500s", rx.req[0].body);
	conn_close(c);
}

Test(alerter, outage_503_for_30s_then_200_loses_and_doubles_nothing, .init = setup,
     .fini = teardown, .timeout = 120)
{
	struct conn *c = conn();
	char k1[80], k2[80];

	pthread_mutex_lock(&rx.lock);
	rx.status = 503;
	rx.status_until_ns = time_mono_ns() + 30 * NSEC_PER_SEC;
	pthread_mutex_unlock(&rx.lock);
	start_alerter();
	emit(c, "LinkErrors", "1111111111111111", "firing", ",\"rack\":\"r1\"", NULL);
	emit(c, "DiskWorn", "2222222222222222", "firing", ",\"rack\":\"r2\"", NULL);
	sleep(5);
	emit(c, "LinkErrors", "1111111111111111", "resolved", ",\"rack\":\"r1\"", NULL);
	/* wait past the outage for both groups to get through */
	for (int i = 0; i < 80; i++) {
		int ok = 0;

		pthread_mutex_lock(&rx.lock);
		for (int k = 0; k < rx.n; k++)
			ok += rx.req[k].status == 200;
		pthread_mutex_unlock(&rx.lock);
		if (ok >= 3 && test_alerts_pending(c, NULL) == 0)
			break;
		usleep(500000);
	}
	int ok_link = 0, ok_disk = 0, retries = 0;

	pthread_mutex_lock(&rx.lock);
	for (int k = 0; k < rx.n; k++) {
		struct request *r = &rx.req[k];

		if (r->status != 200) {
			retries++;
			continue;
		}
		ok_link += strstr(r->body, "LinkErrors") != NULL;
		ok_disk += strstr(r->body, "DiskWorn") != NULL;
	}
	/* retries of one notification carry the same idempotency key */
	header(&rx.req[0], "X-Faultline-Idempotency-Key", k1, sizeof(k1));
	for (int k = 1; k < rx.n; k++)
		if (strstr(rx.req[k].body, "DiskWorn") && strstr(rx.req[0].body, "DiskWorn") &&
		    rx.req[k - 1].status != 200) {
			header(&rx.req[k], "X-Faultline-Idempotency-Key", k2, sizeof(k2));
			cr_assert_str_eq(k1, k2, "a retry changed the idempotency key");
			break;
		}
	pthread_mutex_unlock(&rx.lock);
	cr_log_info("%d refused attempts, then link %d, disk %d delivered", retries, ok_link,
		    ok_disk);
	cr_assert_gt(retries, 3, "the outage was not retried");
	cr_assert_eq(ok_disk, 1, "DiskWorn delivered %d times", ok_disk);
	/*
	 * LinkErrors: its firing notification was retried until the resolution
	 * arrived; the retry re-read the group, found the newer state, and as the
	 * receiver never heard of the alert, said nothing (Alertmanager does not
	 * notify the resolution of what it never notified).  The old code resent
	 * the stale FIRING after the resolution had happened.
	 */
	cr_assert_eq(ok_link, 0, "LinkErrors delivered %d times, expected none (it resolved "
		     "before any attempt got through)", ok_link);
	/* no notification arrived twice: every 200 has its own idempotency key */
	pthread_mutex_lock(&rx.lock);
	for (int i = 0; i < rx.n; i++)
		for (int j = i + 1; j < rx.n; j++) {
			char a[80], b[80];

			if (rx.req[i].status != 200 || rx.req[j].status != 200)
				continue;
			header(&rx.req[i], "X-Faultline-Idempotency-Key", a, sizeof(a));
			header(&rx.req[j], "X-Faultline-Idempotency-Key", b, sizeof(b));
			cr_assert_str_neq(a, b, "a notification was delivered twice");
		}
	pthread_mutex_unlock(&rx.lock);
	cr_assert_eq(test_alerts_pending(c, NULL), 0, "entries left unacknowledged");
	conn_close(c);
}

Test(alerter, kill_9_mid_delivery_then_restart_loses_nothing, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();

	pthread_mutex_lock(&rx.lock);
	rx.delay_ms = 3000;
	pthread_mutex_unlock(&rx.lock);
	start_alerter();
	emit(c, "HostSilent", "3333333333333333", "firing", ",\"host\":\"web-9\"", NULL);
	cr_assert_geq(wait_requests(1, 15), 1);
	stop_alerter(SIGKILL);	/* while the receiver is still answering */
	cr_assert_eq(test_alerts_pending(c, NULL), 1, "the entry must still be pending after the crash");
	pthread_mutex_lock(&rx.lock);
	rx.delay_ms = 0;
	pthread_mutex_unlock(&rx.lock);
	start_alerter();
	cr_assert_geq(wait_requests(2, 20), 2, "the restarted alerter did not deliver it");
	for (int i = 0; i < 40 && test_alerts_pending(c, NULL) != 0; i++)
		usleep(100000);
	cr_assert_eq(test_alerts_pending(c, NULL), 0);
	cr_assert(strstr(rx.req[1].body, "HostSilent"));
	conn_close(c);
}

Test(alerter, client_error_is_dead_lettered_with_reason, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	redisReply *r;

	rx.status = 400;
	start_alerter();
	emit(c, "BadPayload", "4444444444444444", "firing", NULL, NULL);
	cr_assert_geq(wait_requests(1, 15), 1);
	for (int i = 0; i < 40 && test_alerts_pending(c, NULL) != 0; i++)
		usleep(100000);
	cr_assert_eq(test_alerts_pending(c, NULL), 0);
	sleep(2);
	cr_assert_eq(rx_count(), 1, "a 400 must not be retried");
	r = conn_commandf(c, NULL, "XRANGE fl:alerts:dead - +");
	cr_assert(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
	int found = 0;

	for (size_t k = 0; k < r->element[0]->element[1]->elements; k++)
		found |= strstr(r->element[0]->element[1]->element[k]->str, "HTTP 400") &&
			 strstr(r->element[0]->element[1]->element[k]->str,
				"refused by the test receiver");
	cr_assert(found, "the dead letter does not say why, in the receiver's words");
	freeReplyObject(r);
	conn_close(c);
}

Test(alerter, silenced_alert_is_recorded_not_sent_and_grouping_merges, .init = setup,
     .fini = teardown, .timeout = 60)
{
	struct conn *c = conn();
	struct silence s = { 0 };
	char err[256];
	redisReply *r;

	cr_assert_eq(matcher_parse(&s.m[0], "rack=r12", err, sizeof(err)), 0);
	s.nm = 1;
	s.starts_ms = time_wall_ns() / NSEC_PER_MSEC - 1000;
	s.ends_ms = s.starts_ms + 3600000;
	snprintf(s.comment, sizeof(s.comment), "maintenance");
	cr_assert_eq(silence_add(c, &s, err, sizeof(err)), 0, "%s", err);
	matcher_free(&s.m[0]);
	start_alerter();
	sleep(1);
	emit(c, "Quiet", "5555555555555555", "firing", ",\"rack\":\"r12\"", NULL);
	/* two alerts of one group within group_wait: one notification */
	emit(c, "Burst", "6666666666666661", "firing", ",\"host\":\"a\"", NULL);
	emit(c, "Burst", "6666666666666662", "firing", ",\"host\":\"b\"", NULL);
	cr_assert_geq(wait_requests(1, 15), 1);
	sleep(3);
	cr_assert_eq(rx_count(), 1, "expected one grouped notification and nothing for the "
		     "silenced alert, got %d requests", rx_count());
	cr_assert(!strstr(rx.req[0].body, "Quiet"), "the silenced alert was sent");
	cr_assert(strstr(rx.req[0].body, "6666666666666661") &&
		  strstr(rx.req[0].body, "6666666666666662"), "the group did not merge both");
	r = conn_commandf(c, NULL, "XRANGE fl:notifications - +");
	int silenced = 0;

	for (size_t i = 0; r && i < r->elements; i++)
		for (size_t k = 0; k < r->element[i]->element[1]->elements; k++)
			silenced |= !strcmp(r->element[i]->element[1]->element[k]->str, "silenced");
	freeReplyObject(r);
	cr_assert(silenced, "the silenced alert was not recorded");
	cr_assert_eq(test_alerts_pending(c, NULL), 0);
	conn_close(c);
}

static struct group_alert *mk(const char *json)
{
	struct group_alert *g = calloc(1, sizeof(*g));
	char err[256];

	cr_assert_eq(alert_parse(&g->a, json, strlen(json), err, sizeof(err)), 0, "%s", err);
	return g;
}

Test(alerter, slack_and_pagerduty_shapes)
{
	struct alerter_config cfg;
	char err[512];
	const char *yaml = "receivers:\n  - name: s\n    url: https://hooks.slack.test/x\n"
			   "    format: slack\n  - name: p\n    url: https://events.pd.test/v2\n"
			   "    format: pagerduty\n    routing_key: rk1\n";
	struct group_alert *a = mk("{\"status\":\"firing\",\"fingerprint\":\"ab\",\"labels\":"
				   "{\"alertname\":\"SwitchCsum\",\"severity\":\"page\","
				   "\"switch\":\"sw3\"},\"annotations\":{\"summary\":\"bad "
				   "checksums behind sw3\"},\"startsAt\":\"2026-11-30T14:00:00Z\","
				   "\"faultline\":{\"domain\":{\"label\":\"switch\",\"value\":"
				   "\"sw3\"},\"hosts\":[\"h1\",\"h2\"],\"total_hosts\":8}}");
	struct group_alert *as[1] = { a };
	struct label gl = { "alertname", "SwitchCsum" };
	struct strbuf out = STRBUF_INIT;
	json_object *doc, *x;

	cr_assert_eq(alerter_config_parse(&cfg, "t.yaml", yaml, strlen(yaml), err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(payload_build(&cfg, &cfg.integrations[0], "k", &gl, 1, as, 1, NULL, &out), 0);
	doc = json_tokener_parse(strbuf_str(&out));
	cr_assert(json_object_object_get_ex(doc, "text", &x));
	cr_assert(strstr(json_object_get_string(x), "FIRING"));
	cr_assert(json_object_object_get_ex(doc, "blocks", &x) && json_object_array_length(x) >= 2);
	cr_assert(strstr(strbuf_str(&out), "switch `sw3`: 2 of 8 hosts"), "%s", strbuf_str(&out));
	json_object_put(doc);
	strbuf_reset(&out);
	{
		/* outside strings cannot ping a channel, mention a user or plant a link */
		struct group_alert *h = mk("{\"status\":\"firing\",\"fingerprint\":\"ac\","
					   "\"labels\":{\"alertname\":\"<!channel> A&B\"},"
					   "\"annotations\":{\"summary\":\"proc <@U123> "
					   "<https://evil.test|click>\"},\"startsAt\":"
					   "\"2026-11-30T14:00:00Z\"}");
		struct group_alert *hs[1] = { h };

		cr_assert_eq(payload_build(&cfg, &cfg.integrations[0], "k", &gl, 1, hs, 1, NULL, &out), 0);
		cr_expect_null(strstr(strbuf_str(&out), "<!channel>"), "%s", strbuf_str(&out));
		cr_expect_null(strstr(strbuf_str(&out), "<@U123>"), "%s", strbuf_str(&out));
		cr_expect_null(strstr(strbuf_str(&out), "<https://evil"), "%s", strbuf_str(&out));
		cr_expect(strstr(strbuf_str(&out), "&lt;!channel&gt; A&amp;B") &&
			  strstr(strbuf_str(&out), "&lt;@U123&gt;"), "%s", strbuf_str(&out));
		strbuf_reset(&out);
		alert_free(&h->a);
		free(h);
	}
	cr_assert_eq(payload_build(&cfg, &cfg.integrations[1], "k", &gl, 1, as, 1, NULL, &out), 0);
	doc = json_tokener_parse(strbuf_str(&out));
	cr_assert(json_object_object_get_ex(doc, "routing_key", &x) &&
		  !strcmp(json_object_get_string(x), "rk1"));
	cr_assert(json_object_object_get_ex(doc, "event_action", &x) &&
		  !strcmp(json_object_get_string(x), "trigger"));
	cr_assert(json_object_object_get_ex(doc, "dedup_key", &x) &&
		  strlen(json_object_get_string(x)) == 64);
	cr_assert(json_object_object_get_ex(doc, "payload", &x));
	json_object *sev;

	cr_assert(json_object_object_get_ex(x, "severity", &sev) &&
		  !strcmp(json_object_get_string(sev), "critical"));
	json_object_put(doc);
	strbuf_release(&out);
	alert_free(&a->a);
	free(a);
	alerter_config_free(&cfg);
}

Test(alerter, config_errors_are_positioned)
{
	static const struct {
		const char *yaml, *want;
	} cases[] = {
		{ "receivers:\n  - name: a\n    url: http://10.1.2.3/x\n", "t.yaml:3:10: url: plain http" },
		{ "receivers:\n  - name: a\n    url: https://x\n    format: teams\n",
		  "t.yaml:4:13: format: expected alertmanager (its webhook payload), alertmanager_api" },
		{ "routes:\n  - receiver: nobody\n", "receiver: 'nobody' is not one of the receivers" },
		{ "group_wait: soon\n", "t.yaml:1:13: group_wait: expected a duration" },
		{ "receivers: 5\n", "receivers: expected a list" },
		{ "recievers: []\n", "recievers: unknown key" },
		/* a userinfo of 127.0.0.1 does not make example.com loopback */
		{ "receivers:\n  - name: a\n    url: http://127.0.0.1@example.com/x\n",
		  "t.yaml:3:10: url: plain http" },
		{ "receivers:\n  - name: a\n    url: http://127.0.0.1.example.com/x\n",
		  "t.yaml:3:10: url: plain http" },
		{ "receivers:\n  - name: a\n    url: https://x\n    headers:\n"
		  "      X-Team: \"a\\r\\nX-Evil: 1\"\n",
		  "t.yaml:5:15: headers.X-Team: the value holds a control character" },
		{ "receivers:\n  - name: a\n    url: https://x\n    headers:\n"
		  "      \"Bad Name\": x\n", "headers.Bad Name: not a valid HTTP header name" },
		{ "receivers:\n  - name: a\n    url: https://x\n    headers:\n"
		  "      X-Faultline-Signature: forged\n", "set by the alerter itself" },
		{ "delivery:\n  backoff_initial: 0s\n", "t.yaml:2:20: backoff_initial: at least 100ms" },
		{ "delivery:\n  backoff_initial: 2s\n  backoff_max: 1s\n",
		  "t.yaml:3:16: backoff_max: between backoff_initial and 1h" },
		{ "delivery:\n  claim_idle: 10ms\n", "t.yaml:2:15: claim_idle: at least 1s" },
		/* from the schema table: each level's keys, bounds */
		{ "delivery:\n  retries: 3\n",
		  "t.yaml:2:12: retries: unknown key (valid here: backoff_initial, backoff_max, "
		  "claim_idle, give_up_after)" },
		{ "evidence:\n  top_stacks: 5000\n", "t.yaml:2:15: top_stacks: 5000 is out of range" },
		{ "consumer: \"0123456789012345678901234567890123456789012345678901234567890123\"\n",
		  "consumer: longer than 63 characters" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct alerter_config cfg;
		char err[512] = "";

		cr_assert_neq(alerter_config_parse(&cfg, "t.yaml", cases[i].yaml,
						   strlen(cases[i].yaml), err, sizeof(err)), 0,
			      "accepted: %s", cases[i].yaml);
		cr_assert(strstr(err, cases[i].want), "case %zu: %s", i, err);
		alerter_config_free(&cfg);
	}
	struct alerter_config cfg;
	char err[512];

	cr_assert_eq(alerter_config_parse(&cfg, "<built-in>", alerter_default_config,
					  strlen(alerter_default_config), err, sizeof(err)), 0, "%s",
		     err);
	cr_assert_eq(cfg.group_wait_ns, 1 * NSEC_PER_SEC);
	alerter_config_free(&cfg);
}

/* docs/alerter.md's reference is the schema table (what --config-reference prints). */
Test(alerter, the_reference_in_docs_is_the_schema)
{
	char cmd[512], *out = NULL;
	size_t len = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s/faultline-alerter --config-reference", test_out_dir());
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	cr_assert_gt(getdelim(&out, &len, '\0', p), 0);
	cr_assert_eq(pclose(p), 0);
	test_doc_holds("docs/alerter.md", out, "faultline-alerter --config-reference");
	free(out);
}

Test(alerter, loopback_is_decided_by_the_url_parser)
{
	static const struct {
		const char *url;
		int loopback;
	} cases[] = {
		{ "http://127.0.0.1:9000/hook", 1 },
		{ "http://127.9.8.7/", 1 },
		{ "http://localhost/x", 1 },
		{ "http://LOCALHOST:1/x", 1 },
		{ "http://[::1]:80/x", 1 },
		{ "http://127.0.0.1@example.com/", 0 },
		{ "http://user:pw@127.0.0.1.example.com/", 0 },
		{ "http://128.0.0.1/", 0 },
		{ "http://example.com/127.0.0.1", 0 },
		{ "http://[::2]/", 0 },
		{ "not a url", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(url_is_loopback(cases[i].url), cases[i].loopback, "%s", cases[i].url);
}

Test(alerter, webhook_tokens_and_secrets_never_reach_the_log, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	char logpath[320], bin[256], line[2048];
	int leaked = 0, lines = 0;
	pid_t pid;
	FILE *f;

	/* a Slack-style URL with its token in the path, a signing secret, a 500 */
	f = fopen(cfgpath, "w");
	fprintf(f, "redis: %s\nconsumer: test\ngroup_wait: 200ms\n"
		"receivers:\n  - name: hook\n    url: http://127.0.0.1:%d/services/T0K3N5ECRET\n"
		"    secret: hmac-S3CRET-value\n    headers: {Authorization: \"Bearer B34R3R-T0K\"}\n"
		"delivery:\n  backoff_initial: 100ms\n  backoff_max: 500ms\n", redis.url, rx.port);
	fclose(f);
	pthread_mutex_lock(&rx.lock);
	rx.status = 500;
	pthread_mutex_unlock(&rx.lock);
	snprintf(logpath, sizeof(logpath), "%s/alerter.log", redis.dir);
	snprintf(bin, sizeof(bin), "%s/faultline-alerter", test_out_dir());
	pid = fork();
	if (pid == 0) {
		int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 2);
		execl(bin, bin, "--config", cfgpath, "--log-level", "debug", (char *)NULL);
		_exit(127);
	}
	emit(c, "TokenTest", "5555555555555555", "firing", NULL, NULL);
	cr_assert_geq(wait_requests(3, 15), 3, "no retries to log about");
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	f = fopen(logpath, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		leaked |= strstr(line, "T0K3N5ECRET") || strstr(line, "S3CRET") ||
			  strstr(line, "B34R3R");
	}
	fclose(f);
	cr_assert_gt(lines, 2, "nothing was logged");
	cr_assert_not(leaked, "a webhook token, secret or header value is in the log");
	/* and the built-in config has no secret to print */
	cr_assert_eq(test_sh("%s --print-config | grep -Ev '^ *#' | grep -Eiq "
			     "'secret|token|password'", bin), 1,
		     "--print-config prints a secret");
	conn_close(c);
}

/*
 * The alerter's own /metrics: a delivered notification and a refused one
 * are counted per receiver and integration, the refusal as a dead letter.
 */
Test(alerter, serves_its_own_metrics, .init = setup, .fini = teardown, .timeout = 60)
{
	struct conn *c = conn();
	char *buf = malloc(1 << 16);
	int port = test_free_port(), found = 0;
	FILE *f = fopen(cfgpath, "a");

	cr_assert(f && buf);
	fprintf(f, "metrics_addr: 127.0.0.1:%d\n", port);
	fclose(f);
	start_alerter();
	emit(c, "Delivered", "5555555555555555", "firing", NULL, NULL);
	cr_assert_geq(wait_requests(1, 15), 1);
	for (int i = 0; i < 40 && !found; i++) {
		usleep(250000);
		found = test_scrape(port, buf, 1 << 16) > 0 &&
			strstr(buf, "alertmanager_notifications_total{receiver=\"hook\","
				    "integration=\"webhook\"} 1\n");
	}
	cr_assert(found, "the delivery is not counted: %.3000s", buf);
	rx.status = 400;
	emit(c, "Refused", "6666666666666666", "firing", NULL, NULL);
	found = 0;
	for (int i = 0; i < 60 && !found; i++) {
		usleep(250000);
		found = test_scrape(port, buf, 1 << 16) > 0 &&
			strstr(buf, "reason=\"refused\"} 1\n") &&
			strstr(buf, "faultline_alerter_dead_letters_total 1\n");
	}
	cr_assert(found, "the refusal is not counted: %.3000s", buf);
	cr_expect(strstr(buf, "alertmanager_alerts_received_total{status=\"firing\"} 2\n"),
		  "%.3000s", buf);
	cr_expect(strstr(buf, "faultline_alerter_redis_up 1\n"));
	free(buf);
	conn_close(c);
}

/*
 * page_group_wait (0s by default): a new group holding a firing page goes
 * out as it comes; a warning's group still waits its group_wait (15 s
 * here), and is sent then, not dropped.
 */
Test(alerter, a_page_does_not_wait_for_its_siblings, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = conn();
	FILE *f = fopen(cfgpath, "w");
	uint64_t t0;
	int page = -1, warn = -1;

	cr_assert(f);
	fprintf(f, "redis: %s\nconsumer: test\ngroup_wait: 15s\ngroup_interval: 15s\n"
		"receivers:\n  - name: hook\n    url: http://127.0.0.1:%d/hook\n"
		"    secret: s3cret\n", redis.url, rx.port);
	fclose(f);
	start_alerter();
	sleep(1);
	t0 = time_mono_ns();
	test_emit_alert(c, "00000000000000a1", "firing", "\"alertname\":\"DriveWear\","
			"\"host\":\"h1\",\"severity\":\"warning\"");
	test_emit_alert(c, "00000000000000a2", "firing", "\"alertname\":\"TcpCsum\","
			"\"host\":\"h1\",\"severity\":\"page\"");
	for (int i = 0; i < 100 && !rx_carried("00000000000000a2", "firing", &page); i++)
		usleep(100000);
	cr_assert_geq(page, 0, "the page was not sent within 10 s (group_wait is 15 s)");
	cr_expect_lt(rx.req[page].at_ns - t0, 10 * NSEC_PER_SEC);
	cr_assert(!rx_carried("00000000000000a1", "firing", NULL),
		  "the warning went out with the page: it must wait its group_wait");
	for (int i = 0; i < 300 && !rx_carried("00000000000000a1", "firing", &warn); i++)
		usleep(100000);
	cr_assert_geq(warn, 0, "the warning was never sent");
	cr_expect_geq(rx.req[warn].at_ns - t0, 14 * NSEC_PER_SEC,
		      "the warning did not wait group_wait: sent after %.1f s",
		      (double)(rx.req[warn].at_ns - t0) / 1e9);
	conn_close(c);
}
