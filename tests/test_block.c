/*
 * test_block.c - block I/O in full, against slow devices this test builds:
 *
 *  - a loop device whose backing file lives on slowfs (a FUSE filesystem
 *    that sleeps on every write): writes show a device-time p99 of at least
 *    the injected delay, reads do not, sizes match what was written;
 *  - two stacked loop devices with a v1 blkio.throttle.write_iops_device
 *    limit on the lower one: the upper one's requests are slow (device time);
 *  - the throttled device itself: its bios are held before they become
 *    requests, so its device time stays low and the wait shows up as I/O
 *    wait (sched.iowait), not as device latency.
 *
 * Everything it creates (mount, loop devices, cgroup) is removed even when
 * an assertion fails.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers.h"
#include "probes/probe.h"
#include "core/timeutil.h"

#define DELAY_MS 5

static char dir[256], mnt[300], loops[2][64], cgdir[128];
static pid_t fuse_pid;
static void *blk, *cpu;

static void losetup(const char *file, const char *dio, char *out, size_t len)
{
	char cmd[512];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "losetup -f --show --direct-io=%s '%s'", dio, file);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(out, (int)len, f), "losetup %s failed", file);
	pclose(f);
	out[strcspn(out, "\n")] = '\0';
}

static void open_collectors(void)
{
	struct probe_config cfg;
	char err[512];

	probe_config_defaults(&cfg, err, sizeof(err));
	if (block_collector.open(&blk, &cfg, err, sizeof(err)) ||
	    cpu_collector.open(&cpu, &cfg, err, sizeof(err))) {
		probe_config_free(&cfg);
		cr_skip_test("the BPF probes do not load here: %s", err);
	}
	probe_config_free(&cfg);
}

static void setup(void)
{
	if (!test_is_root())
		cr_skip_test("needs root (loop devices, FUSE, cgroups, BPF)");
	snprintf(dir, sizeof(dir), "/tmp/fl-block.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	open_collectors();
}

static void teardown(void)
{
	for (int i = 1; i >= 0; i--) {
		if (loops[i][0])
			test_sh("losetup -d %s", loops[i]);
		loops[i][0] = '\0';
	}
	if (fuse_pid > 0) {
		test_sh("fusermount3 -u '%s' 2>/dev/null", mnt);
		kill(fuse_pid, SIGTERM);
		waitpid(fuse_pid, NULL, 0);
		fuse_pid = 0;
	}
	if (cgdir[0]) {
		for (int i = 0; i < 50 && rmdir(cgdir); i++)
			usleep(20000);
		cgdir[0] = '\0';
	}
	if (blk)
		block_collector.close(blk);
	if (cpu)
		cpu_collector.close(cpu);
	blk = cpu = NULL;
	if (dir[0])
		test_sh("rm -rf '%s'", dir);
	dir[0] = '\0';
}

static void snap(struct snapshot *s)
{
	snapshot_init(s, "h", 1, 1000, 0, 1);
	cr_assert_eq(block_collector.collect(blk, s), 0);
	cr_assert_eq(cpu_collector.collect(cpu, s), 0);
}

/* Delta histogram of metric{device=dev,op=op} between two snapshots. */
static void delta(const struct snapshot *a, const struct snapshot *b, const char *metric,
		  const char *dev, const char *op, struct histogram *out)
{
	char key[256];
	const struct series *x, *y;

	/* latency histograms name the device's model: a loop device's is its kind */
	if (dev && strstr(metric, "latency"))
		snprintf(key, sizeof(key), "%s{device=%s,model=loop,op=%s}", metric,
			 strrchr(dev, '/') + 1, op);
	else if (dev)
		snprintf(key, sizeof(key), "%s{device=%s,op=%s}", metric, strrchr(dev, '/') + 1, op);
	else
		snprintf(key, sizeof(key), "%s{}", metric);
	y = snapshot_find(b, key);
	cr_assert_not_null(y, "no %s in the snapshot", key);
	x = snapshot_find(a, key);
	if (x)
		hist_subtract(out, y->hist, x->hist);
	else
		*out = *y->hist;
}

static void direct_io(const char *dev, int write, int n, size_t bs)
{
	void *buf;
	int fd = open(dev, (write ? O_WRONLY : O_RDONLY) | O_DIRECT);

	cr_assert_geq(fd, 0, "open %s", dev);
	cr_assert_eq(posix_memalign(&buf, 4096, bs), 0);
	memset(buf, 0x5a, bs);
	for (int i = 0; i < n; i++) {
		ssize_t r = write ? pwrite(fd, buf, bs, (off_t)i * (off_t)bs)
				  : pread(fd, buf, bs, (off_t)i * (off_t)bs);

		cr_assert_eq(r, (ssize_t)bs, "%s %s #%d", write ? "write" : "read", dev, i);
	}
	free(buf);
	close(fd);
}

Test(block, slow_fuse_backed_loop_device, .init = setup, .fini = teardown, .timeout = 90)
{
	char bin[256], img[400], delay[16];
	struct snapshot s0, s1;
	struct histogram w, r, sz;

	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	mkdir(mnt, 0755);
	snprintf(bin, sizeof(bin), "%s/tests/tools/slowfs", test_out_dir());
	snprintf(delay, sizeof(delay), "%d", DELAY_MS);
	fuse_pid = fork();
	if (fuse_pid == 0) {
		execl(bin, bin, mnt, "-f", "--", "16", delay, (char *)NULL);
		_exit(127);
	}
	snprintf(img, sizeof(img), "%s/disk.img", mnt);
	for (int i = 0; i < 100 && access(img, F_OK); i++)
		usleep(50000);
	if (access(img, F_OK))
		cr_skip_test("slowfs did not mount (no FUSE here?)");
	losetup(img, "off", loops[0], sizeof(loops[0]));

	snap(&s0);
	direct_io(loops[0], 1, 40, 4096);
	direct_io(loops[0], 0, 40, 4096);
	usleep(100000);
	snap(&s1);

	delta(&s0, &s1, "block.latency", loops[0], "write", &w);
	delta(&s0, &s1, "block.latency", loops[0], "read", &r);
	delta(&s0, &s1, "block.size", loops[0], "write", &sz);
	cr_assert_geq(w.count, 40);
	cr_assert_geq(r.count, 40);
	uint64_t wp50 = hist_quantile(&w, 0.5), wp99 = hist_quantile(&w, 0.99);
	uint64_t rp99 = hist_quantile(&r, 0.99);

	cr_log_info("slowfs loop: write p50 %.2f ms p99 %.2f ms, read p99 %.3f ms",
		    wp50 / 1e6, wp99 / 1e6, rp99 / 1e6);
	cr_assert_geq(wp99, DELAY_MS * NSEC_PER_MSEC * 31 / 32, "write p99 %.2f ms < %d ms delay",
		      wp99 / 1e6, DELAY_MS);
	cr_assert_geq(wp50, DELAY_MS * NSEC_PER_MSEC * 31 / 32);
	cr_assert_lt(rp99, DELAY_MS * NSEC_PER_MSEC / 2, "reads are slow too: p99 %.2f ms",
		     rp99 / 1e6);
	uint64_t size = hist_quantile(&sz, 0.5);

	cr_assert(size >= 4096 - 4096 / 32 && size <= 4096 + 4096 / 32, "size p50 %llu",
		  (unsigned long long)size);
	snapshot_free(&s0);
	snapshot_free(&s1);
}

static void make_throttle_cgroup(const char *lower)
{
	struct stat st;
	char rule[64];
	FILE *f;

	if (access("/sys/fs/cgroup/blkio/blkio.throttle.write_iops_device", W_OK))
		cr_skip_test("no cgroup v1 blkio throttling here");
	cr_assert_eq(stat(lower, &st), 0);
	snprintf(cgdir, sizeof(cgdir), "/sys/fs/cgroup/blkio/fltest-%d", getpid());
	cr_assert_eq(mkdir(cgdir, 0755), 0);
	snprintf(rule, sizeof(rule), "%u:%u 10", major(st.st_rdev), minor(st.st_rdev));
	char path[256];

	snprintf(path, sizeof(path), "%s/blkio.throttle.write_iops_device", cgdir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(rule, f);
	cr_assert_eq(fclose(f), 0, "setting %s", rule);
}

/* Run n O_DIRECT 4 KiB writes to dev from a child inside the cgroup. */
static void throttled_writes(const char *dev, int n)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		char path[256], me[32];
		FILE *f;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgdir);
		snprintf(me, sizeof(me), "%d", getpid());
		f = fopen(path, "w");
		if (!f || fputs(me, f) < 0 || fclose(f))
			_exit(3);
		int fd = open(dev, O_WRONLY | O_DIRECT);
		void *buf;

		if (fd < 0 || posix_memalign(&buf, 4096, 4096))
			_exit(4);
		memset(buf, 1, 4096);
		for (int i = 0; i < n; i++)
			if (pwrite(fd, buf, 4096, (off_t)i * 4096) != 4096)
				_exit(5);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer child failed (%d)",
		  WEXITSTATUS(status));
}

static uint64_t count_at_least(const struct histogram *h, uint64_t v)
{
	uint64_t n = 0;

	for (uint32_t i = hist_bucket_index(v); i < HIST_BUCKETS; i++)
		n += h->buckets[i];
	return n;
}

Test(block, throttled_lower_loop_makes_upper_slow_but_itself_shows_iowait, .init = setup,
     .fini = teardown, .timeout = 120)
{
	char img[400];
	struct snapshot s0, s1, s2;
	struct histogram up, low, iow;

	snprintf(img, sizeof(img), "%s/lower.img", dir);
	cr_assert_eq(test_sh("truncate -s 64M '%s'", img), 0);
	losetup(img, "off", loops[0], sizeof(loops[0]));
	/* direct I/O, so the upper device's writes reach the lower one as bios
	 * submitted on behalf of the writer's cgroup (not page-cache writeback) */
	losetup(loops[0], "on", loops[1], sizeof(loops[1]));
	make_throttle_cgroup(loops[0]);

	/* upper device: its requests wait for the throttled lower one */
	snap(&s0);
	throttled_writes(loops[1], 12);
	snap(&s1);
	delta(&s0, &s1, "block.latency", loops[1], "write", &up);
	cr_assert_geq(up.count, 12);
	cr_log_info("upper loop over throttled lower: write p50 %.1f ms",
		    hist_quantile(&up, 0.5) / 1e6);
	cr_assert_geq(hist_quantile(&up, 0.5), 50 * NSEC_PER_MSEC,
		      "upper write p50 %.1f ms; 10 IOPS below should make it ~100 ms",
		      hist_quantile(&up, 0.5) / 1e6);

	/* the throttled device itself: held bios are not requests yet */
	throttled_writes(loops[0], 12);
	snap(&s2);
	delta(&s1, &s2, "block.latency", loops[0], "write", &low);
	delta(&s1, &s2, "sched.iowait", NULL, NULL, &iow);
	cr_log_info("throttled lower loop: device write p99 %.2f ms, iowait >= 50 ms: %llu",
		    hist_quantile(&low, 0.99) / 1e6,
		    (unsigned long long)count_at_least(&iow, 50 * NSEC_PER_MSEC));
	cr_assert_geq(low.count, 12);
	cr_assert_lt(hist_quantile(&low, 0.99), 20 * NSEC_PER_MSEC,
		     "the throttle showed up as device time (p99 %.1f ms)",
		     hist_quantile(&low, 0.99) / 1e6);
	cr_assert_geq(count_at_least(&iow, 50 * NSEC_PER_MSEC), 8,
		      "the throttled waits did not show up as I/O wait");
	snapshot_free(&s0);
	snapshot_free(&s1);
	snapshot_free(&s2);
}
