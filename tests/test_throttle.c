/*
 * test_throttle.c - CPU quota throttling: a busy loop in a cgroup this test
 * creates with a 10 % quota (v1 cpu.cfs_quota_us on this machine, v2
 * cpu.max where the cpu controller is on v2) is reported throttled, under
 * its cgroup path, with about the right throttled time.  The cgroup is
 * removed even when an assertion fails.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/helpers.h"
#include "probes/probe.h"
#include "core/timeutil.h"

static void *priv;
static char cgdir[256], cgname[64];
static pid_t spinner;

static int write_file(const char *dir, const char *file, const char *val)
{
	char path[512];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fputs(val, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void setup(void)
{
	struct probe_config cfg;
	char err[512];

	if (!test_is_root())
		cr_skip_test("needs root to create cgroups");
	snprintf(cgname, sizeof(cgname), "fltest-%d", getpid());
	if (access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", W_OK) == 0) {
		snprintf(cgdir, sizeof(cgdir), "/sys/fs/cgroup/cpu/%s", cgname);
		cr_assert_eq(mkdir(cgdir, 0755), 0, "mkdir %s", cgdir);
		cr_assert_eq(write_file(cgdir, "cpu.cfs_period_us", "100000"), 0);
		cr_assert_eq(write_file(cgdir, "cpu.cfs_quota_us", "10000"), 0);
	} else if (access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) == 0) {
		snprintf(cgdir, sizeof(cgdir), "/sys/fs/cgroup/%s", cgname);
		write_file("/sys/fs/cgroup", "cgroup.subtree_control", "+cpu");
		cr_assert_eq(mkdir(cgdir, 0755), 0, "mkdir %s", cgdir);
		if (write_file(cgdir, "cpu.max", "10000 100000")) {
			rmdir(cgdir);
			cgdir[0] = '\0';
			cr_skip_test("no cpu controller on cgroup v1 or v2 here");
		}
	} else {
		cr_skip_test("no writable cpu cgroup controller");
	}
	probe_config_defaults(&cfg, err, sizeof(err));
	cr_assert_eq(throttle_collector.open(&priv, &cfg, err, sizeof(err)), 0, "%s", err);
	probe_config_free(&cfg);
}

static void teardown(void)
{
	if (spinner > 0) {
		kill(spinner, SIGKILL);
		waitpid(spinner, NULL, 0);
		spinner = 0;
	}
	if (cgdir[0]) {
		/* the killed task leaves asynchronously; retry briefly */
		for (int i = 0; i < 50 && rmdir(cgdir); i++)
			usleep(20000);
		cgdir[0] = '\0';
	}
	if (priv)
		throttle_collector.close(priv);
	priv = NULL;
}

Test(throttle, quota_throttling_is_reported_per_cgroup, .init = setup, .fini = teardown,
     .timeout = 60)
{
	char key_t[128], key_n[128], pid[32];
	struct snapshot s0, s1;
	const struct series *t0, *t1, *n1;

	spinner = fork();
	if (spinner == 0)
		for (;;)
			;
	snprintf(pid, sizeof(pid), "%d", spinner);
	cr_assert_eq(write_file(cgdir, "cgroup.procs", pid), 0);
	snapshot_init(&s0, "h", 1, 1000, 0, 1);
	cr_assert_eq(throttle_collector.collect(priv, &s0), 0);
	sleep(3);
	snapshot_init(&s1, "h", 2, 1000, 1, 1);
	cr_assert_eq(throttle_collector.collect(priv, &s1), 0);

	snprintf(key_t, sizeof(key_t), "cgroup.throttled_time{cgroup=/%s}", cgname);
	snprintf(key_n, sizeof(key_n), "cgroup.nr_throttled{cgroup=/%s}", cgname);
	t1 = snapshot_find(&s1, key_t);
	n1 = snapshot_find(&s1, key_n);
	cr_assert_not_null(t1, "no %s in the snapshot", key_t);
	cr_assert_not_null(n1);
	t0 = snapshot_find(&s0, key_t);
	uint64_t throttled = t1->counter.value - (t0 ? t0->counter.value : 0);

	/* 10 % quota on a busy loop: ~90 ms of every 100 ms period held back */
	cr_assert_geq(n1->counter.value, 20, "only %llu throttled periods in 3 s",
		      (unsigned long long)n1->counter.value);
	cr_assert(throttled >= 2 * NSEC_PER_SEC && throttled <= 4 * NSEC_PER_SEC,
		  "throttled %.2f s in 3 s with a 10 %% quota", (double)throttled / 1e9);
	const struct series *cnt = snapshot_find(&s1, "cgroup.throttled_count{}");

	cr_assert(cnt && cnt->gauge.last >= 1);
	cr_assert_not_null(snapshot_find(&s1, "psi.some{resource=cpu}"));
	snapshot_free(&s0);
	snapshot_free(&s1);
}
