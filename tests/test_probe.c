/*
 * test_probe.c - faultline-probe end to end, as root with real BPF: O_DIRECT
 * writes to a loop device this test creates show up in the snapshots in
 * Redis with the right count and plausible latencies and sizes, /metrics
 * serves them, and a 10 s Redis outage loses no snapshot.
 *
 * Without root, or where the BPF programs cannot load, the tests report
 * themselves skipped (with the reason), never passed.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers.h"
#include "store/conn.h"
#include "store/store.h"
#include "core/timeutil.h"

static struct test_redis redis;
static char loopdev[64], backing[512], host[64];
static pid_t probe_pid;
static int metrics_port;

static void skip_unless_bpf(void)
{
	char cmd[512];

	if (!test_is_root())
		cr_skip_test("needs root (CAP_BPF, CAP_PERFMON, loop devices)");
	snprintf(cmd, sizeof(cmd), "%s/faultline-probe --once --metrics-addr '' "
		 "--interval 10ms >/dev/null 2>&1", test_out_dir());
	if (test_sh("%s", cmd) != 0)
		cr_skip_test("the BPF block probe does not load on this machine "
			     "(run faultline-probe --once to see why)");
}

static void start_probe(void)
{
	char bin[256], url[400], port[32];

	snprintf(bin, sizeof(bin), "%s/faultline-probe", test_out_dir());
	snprintf(url, sizeof(url), "%s", redis.url);
	metrics_port = 20000 + getpid() % 20000;
	snprintf(port, sizeof(port), "127.0.0.1:%d", metrics_port);
	probe_pid = fork();
	cr_assert_geq(probe_pid, 0);
	if (probe_pid == 0) {
		execl(bin, bin, "--redis", url, "--host", host, "--interval", "1s",
		      "--metrics-addr", port, "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
}

static void setup(void)
{
	FILE *f;

	skip_unless_bpf();
	cr_assert_eq(test_redis_start_persistent(&redis), 0, "cannot start redis-server");
	snprintf(host, sizeof(host), "fltest-%d", getpid());
	snprintf(backing, sizeof(backing), "%s/loop.img", redis.dir);
	cr_assert_eq(test_sh("truncate -s 64M '%s'", backing), 0);
	{
		char cmd[1024];

		snprintf(cmd, sizeof(cmd), "losetup -f --show '%s'", backing);
		f = popen(cmd, "r");
		cr_assert_not_null(f);
		cr_assert_not_null(fgets(loopdev, sizeof(loopdev), f), "losetup failed");
		pclose(f);
		loopdev[strcspn(loopdev, "\n")] = '\0';
	}
	start_probe();
}

static void teardown(void)
{
	if (probe_pid > 0) {
		kill(probe_pid, SIGTERM);
		waitpid(probe_pid, NULL, 0);
		probe_pid = 0;
	}
	if (loopdev[0])
		test_sh("losetup -d '%s'", loopdev);
	loopdev[0] = '\0';
	test_redis_destroy(&redis);
}

struct latest {
	struct snapshot s;
	int have;
};

static int latest_cb(struct snapshot *s, void *arg)
{
	struct latest *l = arg;

	if (l->have)
		snapshot_free(&l->s);
	l->have = snapshot_copy(&l->s, s) == 0;
	return 0;
}

static int read_latest(struct conn *c, struct latest *l)
{
	char err[256];

	if (l->have)
		snapshot_free(&l->s);
	l->have = 0;
	return store_read_latest(c, host, 1, 1, latest_cb, l, NULL, err, sizeof(err));
}

static struct conn *conn(void)
{
	char err[256];
	struct conn *c = conn_open(redis.url, NSEC_PER_SEC, err, sizeof(err));

	cr_assert_not_null(c, "%s", err);
	return c;
}

/* Wait until the probe has written a snapshot with seq >= want. */
static uint64_t wait_seq(struct conn *c, uint64_t want, int seconds)
{
	struct latest l = { 0 };
	uint64_t seq = 0;

	for (int i = 0; i < seconds * 10; i++) {
		if (read_latest(c, &l) == 1 && l.s.seq >= want) {
			seq = l.s.seq;
			break;
		}
		usleep(100000);
	}
	if (l.have)
		snapshot_free(&l.s);
	cr_assert_geq(seq, want, "the probe wrote no snapshot %llu within %d s",
		      (unsigned long long)want, seconds);
	return seq;
}

static const char *dev_name(void)
{
	return strrchr(loopdev, '/') + 1;
}

static struct series *find(const struct snapshot *s, const char *metric, const char *op)
{
	char key[256];

	/* latency histograms also name the model; a loop device's is "loop" */
	snprintf(key, sizeof(key), "%s{device=%s,%sop=%s}", metric, dev_name(),
		 strstr(metric, "latency") ? "model=loop," : "", op);
	return snapshot_find(s, key);
}

static void direct_writes(int n, size_t bs)
{
	void *buf;
	int fd = open(loopdev, O_WRONLY | O_DIRECT);

	cr_assert_geq(fd, 0, "open %s: %s", loopdev, strerror(errno));
	cr_assert_eq(posix_memalign(&buf, 4096, bs), 0);
	memset(buf, 0xab, bs);
	for (int i = 0; i < n; i++)
		cr_assert_eq(pwrite(fd, buf, bs, (off_t)(i % 1000) * (off_t)bs), (ssize_t)bs);
	free(buf);
	close(fd);
}

static size_t http_get(int port, const char *path, char *out, size_t outlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	char req[128];
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return 0;
	}
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
	if (write(fd, req, strlen(req)) < 0) {
		close(fd);
		return 0;
	}
	while (got + 1 < outlen && (n = read(fd, out + got, outlen - got - 1)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(fd);
	return got;
}

Test(probe, direct_writes_to_loop_device_are_counted, .init = setup, .fini = teardown,
     .timeout = 60)
{
	struct conn *c = conn();
	struct latest before = { 0 }, after = { 0 };
	uint64_t ios0 = 0, lat0 = 0, seq;
	const int N = 300;
	struct series *ios, *lat, *size;
	struct histogram d;
	static char body[1 << 20];

	seq = wait_seq(c, 1, 15);
	cr_assert_eq(read_latest(c, &before), 1);
	if ((ios = find(&before.s, "block.ios", "write")))
		ios0 = ios->counter.value;
	if ((lat = find(&before.s, "block.latency", "write")))
		lat0 = lat->hist->count;

	direct_writes(N, 4096);
	wait_seq(c, seq + 3, 15);
	cr_assert_eq(read_latest(c, &after), 1);

	ios = find(&after.s, "block.ios", "write");
	lat = find(&after.s, "block.latency", "write");
	size = find(&after.s, "block.size", "write");
	cr_assert(ios && lat && size, "no block series for %s in the snapshot", loopdev);
	cr_assert_geq(ios->counter.value - ios0, (uint64_t)N);
	cr_assert_leq(ios->counter.value - ios0, (uint64_t)N + 5, "%llu writes counted for %d",
		      (unsigned long long)(ios->counter.value - ios0), N);
	cr_assert_geq(lat->hist->count - lat0, (uint64_t)N - 5);
	hist_reset(&d);
	struct series *olat = find(&before.s, "block.latency", "write");
	if (olat)
		hist_subtract(&d, lat->hist, olat->hist);
	else
		d = *lat->hist;
	uint64_t p50 = hist_quantile(&d, 0.5), p99 = hist_quantile(&d, 0.99);
	cr_assert(p50 > 500 && p50 < NSEC_PER_SEC, "write p50 %llu ns is implausible",
		  (unsigned long long)p50);
	cr_assert(p99 >= p50 && p99 < 10 * NSEC_PER_SEC);
	uint64_t sz = hist_quantile(size->hist, 0.5);
	cr_assert(sz >= 4096 - 4096 / 32 && sz <= 4096 + 4096 / 32, "size p50 %llu, wrote 4096",
		  (unsigned long long)sz);

	cr_assert_gt(http_get(metrics_port, "/metrics", body, sizeof(body)), 0,
		     "/metrics did not answer");
	cr_assert(strstr(body, " 200 OK\r\n"), "%.200s", body);
	char want[256];
	snprintf(want, sizeof(want), "faultline_block_latency_seconds_bucket{device=\"%s\","
		 "model=\"loop\",op=\"write\",le=", dev_name());
	cr_assert(strstr(body, want), "/metrics lacks %s", want);
	cr_assert(strstr(body, "faultline_tcp_in_csum_errors_total "));
	cr_assert_gt(http_get(metrics_port, "/nope", body, sizeof(body)), 0);
	cr_assert(strstr(body, "404"));

	snapshot_free(&before.s);
	snapshot_free(&after.s);
	conn_close(c);
}

struct seqs {
	uint64_t v[4096];
	size_t n;
};

static int seq_cb(struct snapshot *s, void *arg)
{
	struct seqs *q = arg;

	if (q->n < 4096)
		q->v[q->n++] = s->seq;
	return 0;
}

Test(probe, redis_outage_of_10s_loses_no_snapshot, .init = setup, .fini = teardown,
     .timeout = 90)
{
	struct conn *c = conn();
	struct seqs *q = calloc(1, sizeof(*q));
	uint64_t before, after;
	char err[256];

	before = wait_seq(c, 2, 15);
	conn_close(c);
	test_redis_stop(&redis, 0);	/* SIGTERM: the AOF keeps what was written */
	sleep(10);
	cr_assert_eq(test_redis_restart(&redis), 0);
	c = conn();
	/* 10 s of spooled snapshots plus a few new ones */
	after = wait_seq(c, before + 13, 20);
	cr_assert_geq(store_read_range(c, host, 1, 0, 0, 0, seq_cb, q, NULL, err, sizeof(err)), 1,
		      "%s", err);
	cr_assert_eq(q->v[q->n - 1] - q->v[0] + 1, q->n, "entries missing between %llu and %llu",
		     (unsigned long long)q->v[0], (unsigned long long)q->v[q->n - 1]);
	for (size_t i = 1; i < q->n; i++)
		cr_assert_eq(q->v[i], q->v[i - 1] + 1, "gap in snapshot sequence: %llu then %llu",
			     (unsigned long long)q->v[i - 1], (unsigned long long)q->v[i]);
	cr_assert_leq(q->v[0], before, "snapshots before the outage are missing");
	cr_assert_geq(q->v[q->n - 1], after);
	free(q);
	conn_close(c);
}
