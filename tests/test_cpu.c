/*
 * test_cpu.c - exact CPU use (the "lying average"): a process that
 * saturates one CPU for 300 ms every 2 s shows 100 % in the 100 ms maxima
 * and in the per-CPU series, while the interval and 1 min averages stay
 * low.  Runs the real BPF collector in-process, as root.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/catalog.h"
#include "tests/helpers.h"
#include "probes/probe.h"
#include "model/rollup.h"
#include "core/timeutil.h"

static void *priv;

static void open_cpu(void)
{
	struct probe_config cfg;
	char err[512];

	if (!test_is_root())
		cr_skip_test("needs root (CAP_BPF, CAP_PERFMON)");
	probe_config_defaults(&cfg, err, sizeof(err));
	if (cpu_collector.open(&priv, &cfg, err, sizeof(err))) {
		probe_config_free(&cfg);
		cr_skip_test("the BPF scheduler probe does not load here: %s", err);
	}
	probe_config_free(&cfg);
}

static void close_cpu(void)
{
	if (priv)
		cpu_collector.close(priv);
	priv = NULL;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Child: spin for burst_ms every period_ms on cpu, until killed. */
static pid_t bursty(int cpu, uint64_t burst_ms, uint64_t period_ms)
{
	pid_t pid = fork();

	if (pid == 0) {
		pin(cpu);
		for (;;) {
			uint64_t start = time_mono_ns();

			while (time_mono_ns() - start < burst_ms * NSEC_PER_MSEC)
				;
			usleep((useconds_t)((period_ms - burst_ms) * 1000));
		}
	}
	return pid;
}

/*
 * CPU cpu's busy time in s by the kernel's own accounting (/proc/stat:
 * everything but idle and iowait), the independent measure cpu.busy is
 * checked against on a machine other tests and builds share.
 */
/*
 * CPU cpu's time in /proc/stat, in s: busy (user nice system irq softirq
 * steal) into *busy_s, and every column together as the return value.  The
 * guest's ticks stop only while a vCPU is halted in idle (and are made up as
 * idle when it wakes); ticks missing from the total are time the hypervisor
 * took from the vCPU while a task was on it, which a guest without steal
 * accounting cannot attribute, and sched_switch counts as busy.
 */
static double proc_stat_s(int cpu, double *busy_s)
{
	unsigned long long v[10] = { 0 }, busy = 0, total = 0;
	char line[512], name[16];
	FILE *f = fopen("/proc/stat", "r");

	snprintf(name, sizeof(name), "cpu%d ", cpu);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, name, strlen(name))) {
			sscanf(line + strlen(name), "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
			       &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
			/* user nice system [idle] [iowait] irq softirq steal */
			busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
			total = busy + v[3] + v[4];
		}
	if (f)
		fclose(f);
	*busy_s = (double)busy / (double)sysconf(_SC_CLK_TCK);
	return (double)total / (double)sysconf(_SC_CLK_TCK);
}

/*
 * pid's time on a CPU so far, in s, as the scheduler counts it
 * (/proc/PID/schedstat): the same clock as sched_switch, so it includes
 * what a hypervisor took from the vCPU while the task was on it, which the
 * tick-based /proc/stat of a guest without steal accounting does not.
 */
static double task_run_s(pid_t pid)
{
	unsigned long long ns = 0;
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &ns) != 1)
			ns = 0;
		fclose(f);
	}
	return (double)ns / 1e9;
}

static void sort_doubles(double *v, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (v[j] < v[i]) {
				double t = v[i];

				v[i] = v[j];
				v[j] = t;
			}
}

static const struct series *find(const struct snapshot *s, const char *key)
{
	return snapshot_find(s, key);
}

Test(cpu, burst_visible_in_max_while_average_stays_low, .init = open_cpu, .fini = close_cpu,
     .timeout = 60)
{
	int target = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	char kbusy[64], kutil[64], kmax[64];
	double best_max = 0, best_util = 0, utils[16], kernel[16], diffs[16];
	double kbusy_prev = 0, ktotal_prev = 0, kernel_s = 0;
	int nutils = 0;
	uint64_t busy0 = 0, busy1 = 0;
	double stat0 = 0, stat1 = 0, run0 = 0, run1 = 0, ticks0 = 0, ticks1 = 0;
	uint64_t wall0 = 0, wall1 = 0;
	uint64_t test_start = time_mono_ns();
	struct rollup r;
	struct snapshot out;
	pid_t child;

	snprintf(kbusy, sizeof(kbusy), "cpu.busy{cpu=%d}", target);
	snprintf(kutil, sizeof(kutil), "cpu.utilization{cpu=%d}", target);
	snprintf(kmax, sizeof(kmax), "cpu.utilization_max{cpu=%d}", target);
	cr_assert_eq(rollup_init(&r, "h", 60), 0);
	child = bursty(target, 300, 2000);
	for (int i = 0; i < 9; i++) {
		struct snapshot s;
		const struct series *b, *u, *m;

		usleep(1000000);
		snapshot_init(&s, "h", 1000 + (uint64_t)i * 1000, 1000, (uint64_t)i, 1);
		cr_assert_eq(cpu_collector.collect(priv, &s), 0);
		{
			/* what the kernel's ticks saw of the same interval, a moment apart */
			double kb, kt = proc_stat_s(target, &kb);

			if (i >= 1) {
				kernel[nutils] = kt > ktotal_prev ?
					(kb - kbusy_prev) / (kt - ktotal_prev) : 0;
				kernel_s += kb - kbusy_prev;
			}
			kbusy_prev = kb;
			ktotal_prev = kt;
		}
		b = find(&s, kbusy);
		u = find(&s, kutil);
		m = find(&s, kmax);
		cr_assert_not_null(b, "no cpu.busy for CPU %d", target);
		if (i == 1) {
			busy0 = b->counter.value;
			ticks0 = proc_stat_s(target, &stat0);
			wall0 = time_mono_ns();
			run0 = task_run_s(child);
		}
		if (i == 7) {
			busy1 = b->counter.value;
			ticks1 = proc_stat_s(target, &stat1);
			wall1 = time_mono_ns();
			run1 = task_run_s(child);
		}
		if (i >= 1) {
			cr_assert_not_null(u);
			cr_assert_not_null(m);
			cr_assert(m->gauge.last >= u->gauge.last - 1e-9,
				  "max %.3f below the average %.3f", m->gauge.last, u->gauge.last);
			cr_assert(catalog_ratio(u->gauge.last) == u->gauge.last &&
				  catalog_ratio(m->gauge.last) == m->gauge.last,
				  "%.17g, %.17g: not at a ratio's resolution (2^-16)",
				  u->gauge.last, m->gauge.last);
			if (m->gauge.last > best_max)
				best_max = m->gauge.last;
			if (u->gauge.last > best_util)
				best_util = u->gauge.last;
			utils[nutils++] = u->gauge.last;
			cr_assert_eq(rollup_add(&r, &s), 0);
		}
		snapshot_free(&s);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);

	/*
	 * 3 bursts of 300 ms in the 6 s between i=1 and i=7, plus whatever else
	 * the shared machine ran there.  Every bit of the burster's own time on
	 * the CPU (the scheduler's count) is in it; and no more than that and
	 * what the kernel's tick accounting saw besides (read a moment apart).
	 * Ticks the CPU lost altogether (time the hypervisor took from the vCPU,
	 * which this guest does not report as steal) are logged, not allowed
	 * for: none were lost when the bound failed.  The upper bound caught
	 * a real bug: on this PVM guest no tracepoint fires while the idle task
	 * or the guest agent is current, and the probe counted the idle stretch
	 * after a hidden agent task as busy (2.86 s against 0.92 s of ticks);
	 * the lower one catches the opposite, a run after idle not counted.
	 */
	double busy_s = (double)(busy1 - busy0) / 1e9, stat_s = stat1 - stat0, run_s = run1 - run0;
	double wall_s = (double)(wall1 - wall0) / 1e9;
	double lost_s = fmax(0, wall_s - (ticks1 - ticks0) - 0.05);

	cr_log_info("CPU %d busy %.3f s in %.2f s (burster on it %.3f s, /proc/stat %.2f s busy, "
		    "%.2f s of ticks lost)", target, busy_s, wall_s, run_s, stat_s, lost_s);
	cr_assert_geq(busy_s, 0.85, "CPU %d busy %.3f s in 6 s, below its three 300 ms bursts",
		      target, busy_s);
	cr_assert_geq(busy_s, run_s - 0.05, "CPU %d busy %.3f s, less than the %.3f s its burster "
		      "alone ran", target, busy_s, run_s);
	cr_assert_leq(busy_s, fmax(stat_s, run_s) * 1.2 + 0.4,
		      "CPU %d busy %.3f s in %.2f s; the burster ran %.3f s and the kernel's "
		      "accounting says %.2f s busy (%.2f s not accounted at all)", target, busy_s,
		      wall_s, run_s, stat_s, lost_s);
	{
		char kidle[64];
		struct snapshot t;

		snprintf(kidle, sizeof(kidle), "cpu.idle{cpu=%d}", target);
		snapshot_init(&t, "h", 1, 1000, 0, 1);
		usleep(500000);
		cr_assert_eq(cpu_collector.collect(priv, &t), 0);
		cr_assert_not_null(snapshot_find(&t, kidle), "no %s", kidle);
		cr_assert_not_null(snapshot_find(&t, kbusy), "no %s", kbusy);
		{
			/* idle is each interval minus busy: together they are the time since start */
			double both = (double)(snapshot_find(&t, kidle)->counter.value +
					       snapshot_find(&t, kbusy)->counter.value) / 1e9;
			double since = (double)(time_mono_ns() - test_start) / 1e9;

			/* (the first interval, before the first collection, is not counted) */
			cr_assert(both >= since - 1.5 && both <= since + 0.5,
				  "CPU %d: idle + busy = %.2f s, %.2f s since the test began", target,
				  both, since);
		}
		snapshot_free(&t);
	}
	cr_assert_geq(best_max, 0.95, "the 100 ms maxima never showed the 300 ms burst (%.3f)",
		      best_max);
	/*
	 * The machine is shared: judge the typical interval, not the worst one.
	 * Low when the machine is quiet; when it is not, no higher than what
	 * the kernel saw run in the same interval.  Interval by interval: a
	 * load beside this test that comes and goes (busy in five intervals of
	 * eight) puts the median interval above the window's mean, no bug.
	 */
	for (int i = 0; i < nutils; i++)
		diffs[i] = utils[i] - kernel[i];
	sort_doubles(utils, nutils);
	sort_doubles(diffs, nutils);
	cr_assert(utils[nutils / 2] <= 0.6 || diffs[nutils / 2] <= 0.25,
		  "the median 1 s interval averaged %.3f, %.3f above what /proc/stat saw run in "
		  "the same interval (the median of %d)", utils[nutils / 2], diffs[nutils / 2],
		  nutils);

	cr_assert_eq(rollup_finish(&r, &out), 0);
	const struct series *u = find(&out, kutil), *m = find(&out, kmax);

	cr_assert(u && m);
	double avg = u->gauge.sum / (double)u->gauge.n;

	/*
	 * The average is what ran: low on a quiet CPU, never above what the
	 * kernel saw over the same intervals (kernel_s: the rollup's nutils s).
	 */
	cr_assert_leq(avg, fmax(0.45, kernel_s / nutils + 0.2), "minute average %.3f is not low "
		      "(/proc/stat: %.2f of %d s)", avg, kernel_s, nutils);
	/*
	 * The gap is judged when the CPU ran little besides the bursts (their
	 * 0.9 s and at most a quarter of the rollup's intervals in all, counted
	 * over those intervals themselves): busier, the average is rightly what
	 * ran, and a CPU 35 % busy with other work (a test run beside this
	 * one) leaves a 1.0 max and a 0.51 average, no bug.
	 */
	if (kernel_s / nutils <= 0.25)
		cr_assert_geq(m->gauge.max - avg, 0.5, "the average (%.2f) hides no burst (max %.2f)",
			      avg, m->gauge.max);
	else
		cr_log_info("CPU %d was %.0f %% busy with other work: the average-vs-max gap is not "
			    "judged this run (the max is)", target, kernel_s / nutils * 100);
	cr_assert_geq(m->gauge.max, 0.95, "minute rollup lost the burst (max %.3f)", m->gauge.max);
	cr_log_info("CPU %d: busy %.3f s, 1 s avg max %.2f, 100 ms max %.2f, minute avg %.2f",
		    target, busy_s, best_util, best_max, avg);
	snapshot_free(&out);
	rollup_free(&r);
}

Test(cpu, runq_latency_rises_when_two_spinners_share_a_cpu, .init = open_cpu,
     .fini = close_cpu, .timeout = 60)
{
	int target = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	struct snapshot s0, s1;
	struct histogram d;
	pid_t a, b;

	a = bursty(target, 1000000, 1000001);	/* spins "forever" */
	b = bursty(target, 1000000, 1000001);
	usleep(200000);
	snapshot_init(&s0, "h", 1, 1000, 0, 1);
	cr_assert_eq(cpu_collector.collect(priv, &s0), 0);
	usleep(2000000);
	snapshot_init(&s1, "h", 2, 1000, 1, 1);
	cr_assert_eq(cpu_collector.collect(priv, &s1), 0);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	hist_subtract(&d, find(&s1, "sched.runq_latency{}")->hist,
		      find(&s0, "sched.runq_latency{}")->hist);
	cr_assert_gt(d.count, 50);
	/*
	 * Two CPU-bound tasks on one CPU each wait roughly a slice (ms) per
	 * turn: hundreds of waits of 1 ms or more in 2 s.  Counted, not as a
	 * host-wide p99, which the short waits of whatever else runs on a busy
	 * machine would dilute.
	 */
	uint64_t slow = 0;

	for (uint32_t i = 0; i < HIST_BUCKETS; i++)
		if (hist_bucket_lower(i) >= 1000000)
			slow += d.buckets[i];
	cr_log_info("runq: %llu of %llu waits of 1 ms or more, p99 %llu ns",
		    (unsigned long long)slow, (unsigned long long)d.count,
		    (unsigned long long)hist_quantile(&d, 0.99));
	cr_assert_geq(slow, 100, "only %llu runq waits of 1 ms or more with two spinners on "
		      "one CPU for 2 s", (unsigned long long)slow);
	snapshot_free(&s0);
	snapshot_free(&s1);
}
