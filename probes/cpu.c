/*
 * cpu.c - exact CPU use and scheduling latency: loads bpf/cpu.bpf.c and
 * reads its tables through mmap.
 *
 * Series (lib/model/catalog.c):
 *   cpu.busy{cpu}              busy ns, cumulative (exact, from sched_switch)
 *   cpu.idle{cpu}              idle ns since the probe started (interval - busy)
 *   cpu.utilization{cpu}       busy share of the last interval, 0..1;
 *                              (cpu.host_utilization: the host average)
 *   cpu.utilization_max{cpu}   the highest 100 ms sub-window of the interval,
 *                              so a burst survives averaging and rollups;
 *                              (cpu.host_utilization_max: the highest of any CPU)
 *   sched.runq_latency         histogram, runnable -> running
 *   sched.iowait               histogram, asleep in iowait -> woken
 *
 * An entry is read under its sequence count (retried while odd or changed)
 * so busy time, last switch and the window ring are consistent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "model/catalog.h"
#include "model/hist_layout.h"
#include "probes/bpfmap.h"
#include "core/log.h"
#include "probes/probe.h"
#include "bpf/cpu.h"
#include "cpu.skel.h"
#include "core/timeutil.h"

#define SCHED_SLOTS_MAX 16

/* A CPU's window ring as one read saw it, to notice windows filled later */
struct seen_windows {
	uint64_t id[SCHED_WINDOWS];
	uint64_t busy[SCHED_WINDOWS];
};

struct cpu_probe {
	struct cpu_bpf *skel;
	struct cpu_busy *busy;
	size_t busy_len;
	struct sched_lat *lat;
	size_t lat_len;
	int ncpu;
	__u32 nslots;
	uint64_t prev_now;
	uint64_t *prev_busy;	/* per CPU, at prev_now */
	uint64_t *idle;		/* per CPU, idle ns accumulated since the probe started */
	struct seen_windows *seen;	/* per CPU, the ring as the last read saw it */
	struct histogram *scratch;
};

static __u32 read_pid_max(void)
{
	FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
	unsigned long v = 32768;

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 32768;
		fclose(f);
	}
	return v > (1UL << 22) ? 1U << 22 : (__u32)v;
}

static int cpu_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct cpu_probe *cp = calloc(1, sizeof(*cp));
	__u32 pid_max = read_pid_max();
	int ret;

	(void)cfg;
	if (!cp)
		return -ENOMEM;
	cp->ncpu = libbpf_num_possible_cpus();
	cp->nslots = cp->ncpu < SCHED_SLOTS_MAX ? (__u32)cp->ncpu : SCHED_SLOTS_MAX;
	cp->skel = cpu_bpf__open();
	if (!cp->skel) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the BPF scheduler probe: %s", strerror(errno));
		goto fail;
	}
	cp->skel->rodata->nslots = cp->nslots;
	cp->skel->rodata->pid_max = pid_max;
	bpf_map__set_max_entries(cp->skel->maps.busy, (__u32)cp->ncpu);
	bpf_map__set_max_entries(cp->skel->maps.lat, cp->nslots);
	bpf_map__set_max_entries(cp->skel->maps.task_ts, pid_max);
	bpf_map__set_max_entries(cp->skel->maps.hidden, pid_max);
	ret = cpu_bpf__load(cp->skel);
	if (!ret)
		ret = cpu_bpf__attach(cp->skel);
	if (ret) {
		snprintf(err, errlen, "cannot load the BPF scheduler probe (sched_switch, "
			 "sched_wakeup): %s; faultline-probe needs CAP_BPF and CAP_PERFMON and a "
			 "kernel with BTF; pass --no-bpf to run without it", strerror(-ret));
		goto fail;
	}
	cp->busy = bpfmap_mmap(cp->skel->maps.busy, &cp->busy_len);
	cp->lat = bpfmap_mmap(cp->skel->maps.lat, &cp->lat_len);
	cp->prev_busy = calloc((size_t)cp->ncpu, sizeof(*cp->prev_busy));
	cp->idle = calloc((size_t)cp->ncpu, sizeof(*cp->idle));
	cp->seen = calloc((size_t)cp->ncpu, sizeof(*cp->seen));
	cp->scratch = calloc(1, sizeof(*cp->scratch));
	if (!cp->busy || !cp->lat || !cp->prev_busy || !cp->idle || !cp->seen || !cp->scratch) {
		ret = -ENOMEM;
		snprintf(err, errlen, "cannot map the scheduler probe's tables: %s",
			 strerror(errno));
		goto fail;
	}
	log_info("cpu: BPF scheduler probe attached (%d CPUs, pid_max %u)", cp->ncpu, pid_max);
	*priv = cp;
	return 0;
fail:
	cpu_collector.close(cp);
	return ret;
}

/* Copy CPU c's entry consistently. Returns 0, or -EAGAIN if it kept changing. */
static int read_busy(const struct cpu_probe *cp, int c, struct cpu_busy *out)
{
	const volatile struct cpu_busy *src = &cp->busy[c];

	for (int tries = 0; tries < 1000; tries++) {
		__u64 s1 = src->seq, s2;

		if (s1 & 1)
			continue;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		memcpy(out, (const void *)src, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = src->seq;
		if (s1 == s2)
			return 0;
	}
	return -EAGAIN;
}

/*
 * Where CPU b's open run ends as far as it is counted: now, or sooner when
 * its task has run less than that since it was put on the CPU (its
 * /proc/PID/schedstat run time, the scheduler's own count): a task not yet
 * known to be hidden may have left the CPU where no switch is seen, and
 * counting the idle stretch after it as busy, only to take it back from the
 * next interval (a counter never goes down), made that interval read low.
 * The scheduler updates a running task's count on its tick, so a task that
 * still runs is counted up to a tick short, made good by the next read.  A
 * run time that cannot be read leaves the run counted to now.
 */
static uint64_t open_end(const struct cpu_busy *b, uint64_t now)
{
	char path[48], buf[64];
	unsigned long long ran;
	uint64_t end = now;
	ssize_t n;
	int fd;

	if (b->running != CPU_RUNS_TASK || !b->last_ns || !b->cur_pid)
		return now;
	snprintf(path, sizeof(path), "/proc/%u/schedstat", b->cur_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return now;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return now;
	buf[n] = '\0';
	if (sscanf(buf, "%llu", &ran) == 1 && ran >= b->cur_runtime_ns &&
	    ran - b->cur_runtime_ns < now - b->last_ns)
		end = b->last_ns + (ran - b->cur_runtime_ns);
	return end;
}

/* Busy ns of the open run (if any; counted up to end, open_end) that overlaps [from, to). */
static uint64_t open_overlap(const struct cpu_busy *b, uint64_t from, uint64_t to, uint64_t end)
{
	uint64_t lo, hi;

	if (b->running != CPU_RUNS_TASK || !b->last_ns)
		return 0;
	lo = b->last_ns > from ? b->last_ns : from;
	hi = end < to ? end : to;
	return hi > lo ? hi - lo : 0;
}

/*
 * The busiest 100 ms window this read learned of: the windows that closed
 * since the last read, and older ones (still in the ring) that a switch
 * seen only now filled in after that read, as after a run that began where
 * the probe could not see it.  Updates *seen.
 */
static double window_max(const struct cpu_busy *b, struct seen_windows *seen, uint64_t since,
			 uint64_t now, uint64_t open_to)
{
	uint64_t w0 = (since + SCHED_WINDOW_NS - 1) / SCHED_WINDOW_NS;
	uint64_t w1 = now / SCHED_WINDOW_NS;	/* exclusive: the current one is not over */
	uint64_t first = w1 > SCHED_WINDOWS ? w1 - SCHED_WINDOWS : 0;
	double best = 0;

	for (uint64_t w = first; w < w1; w++) {
		uint32_t r = (uint32_t)(w % SCHED_WINDOWS);
		uint64_t closed = b->win_id[r] == w ? b->win_busy[r] : 0;
		uint64_t busy = closed + open_overlap(b, w * SCHED_WINDOW_NS,
						      (w + 1) * SCHED_WINDOW_NS, open_to);
		int news = w >= w0 || seen->id[r] != w || seen->busy[r] != busy;
		double u = (double)busy / (double)SCHED_WINDOW_NS;

		seen->id[r] = w;
		seen->busy[r] = busy;
		if (news && u > best)
			best = u > 1.0 ? 1.0 : u;
	}
	return best;
}

static int add_lat(struct snapshot *s, struct cpu_probe *cp, int iowait)
{
	struct histogram *h = cp->scratch;
	struct series *ser;

	hist_reset(h);
	for (__u32 sl = 0; sl < cp->nslots; sl++) {
		const volatile struct sched_lat *l = &cp->lat[sl];
		const volatile __u64 *b = iowait ? l->iowait : l->runq;

		for (uint32_t i = 0; i < SCHED_LAT_BUCKETS; i++) {
			h->buckets[i] += b[i];
			h->count += b[i];
		}
		h->sum += iowait ? l->iowait_sum_ns : l->runq_sum_ns;
	}
	ser = snapshot_add(s, iowait ? "sched.iowait" : "sched.runq_latency", SERIES_HISTOGRAM,
			   NULL);
	if (!ser)
		return -ENOMEM;
	*ser->hist = *h;
	return 0;
}

static int cpu_collect(void *priv, struct snapshot *s)
{
	struct cpu_probe *cp = priv;
	uint64_t now = time_mono_ns(), span = now - cp->prev_now;
	double sum_util = 0, max_util = 0;
	int counted = 0, ret;
	char cpu[16];

	for (int c = 0; c < cp->ncpu; c++) {
		struct cpu_busy b;
		uint64_t total, open_to;

		if (read_busy(cp, c, &b) || !b.last_ns)
			continue;	/* offline, or not switched yet */
		open_to = open_end(&b, now);
		total = b.busy_ns + open_overlap(&b, b.last_ns, now, open_to);
		/* the open run counted last time may close a few µs shorter
		 * by the scheduler's clock: a counter never goes back */
		if (total < cp->prev_busy[c])
			total = cp->prev_busy[c];
		snprintf(cpu, sizeof(cpu), "%d", c);
		if (!snapshot_add_counter(s, "cpu.busy", total, "cpu", cpu, NULL))
			return -ENOMEM;
		if (cp->prev_now && cp->prev_busy[c] && span) {
			double u = (double)(total - cp->prev_busy[c]) / (double)span;
			double m = window_max(&b, &cp->seen[c], cp->prev_now, now, open_to);

			uint64_t d = total - cp->prev_busy[c];

			cp->idle[c] += d < span ? span - d : 0;
			if (!snapshot_add_counter(s, "cpu.idle", cp->idle[c], "cpu", cpu, NULL))
				return -ENOMEM;
			if (u > 1.0)
				u = 1.0;
			if (m < u)	/* intervals shorter than a window */
				m = u;
			u = catalog_ratio(u);
			m = catalog_ratio(m);
			if (!snapshot_add_gauge(s, "cpu.utilization", u, "cpu", cpu, NULL) ||
			    !snapshot_add_gauge(s, "cpu.utilization_max", m, "cpu", cpu, NULL))
				return -ENOMEM;
			sum_util += u;
			if (m > max_util)
				max_util = m;
			counted++;
		}
		cp->prev_busy[c] = total;
	}
	if (counted &&
	    (!snapshot_add_gauge(s, "cpu.host_utilization", catalog_ratio(sum_util / counted),
				 NULL) ||
	     !snapshot_add_gauge(s, "cpu.host_utilization_max", max_util, NULL)))
		return -ENOMEM;
	cp->prev_now = now;
	if ((ret = add_lat(s, cp, 0)) || (ret = add_lat(s, cp, 1)))
		return ret;
	return 0;
}

static void cpu_close(void *priv)
{
	struct cpu_probe *cp = priv;

	if (!cp)
		return;
	if (cp->busy)
		munmap(cp->busy, cp->busy_len);
	if (cp->lat)
		munmap(cp->lat, cp->lat_len);
	cpu_bpf__destroy(cp->skel);
	free(cp->prev_busy);
	free(cp->idle);
	free(cp->seen);
	free(cp->scratch);
	free(cp);
}

const struct collector cpu_collector = {
	.name = "cpu",
	.needs_bpf = 1,
	.open = cpu_open,
	.collect = cpu_collect,
	.close = cpu_close,
};
