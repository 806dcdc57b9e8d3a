/*
 * throttle.c - throttling and pressure: CPU quota throttling per cgroup,
 * pressure stall information, thermal throttling and CPU frequency.
 *
 * Cgroups: machines mix hierarchies (here the cpu controller is on cgroup
 * v1 while v2 holds only pressure files), so every cgroup mount from
 * /proc/self/mountinfo that can throttle (v1 with the cpu controller, v2)
 * is walked, and each cpu.stat with throttling fields is read: v1
 * nr_periods/nr_throttled/throttled_time (ns), v2 nr_periods/nr_throttled/
 * throttled_usec.  The tree is rescanned every RESCAN_TICKS samples; the
 * files are read every sample.  Only the top `TOP_N` cgroups by throttled
 * time in the last interval are emitted (plus a count of all throttled
 * ones), which bounds the series a big host produces.
 *
 * PSI: /proc/pressure/{cpu,io,memory} "some"/"full" totals (µs counters),
 * and the same for emitted v2 cgroups.  Thermal throttle counts and CPU
 * frequency come from sysfs where the hardware exposes them; where it does
 * not, the series are absent (never zero) and probe.feature_present says so.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/array.h"
#include "core/log.h"
#include "probes/probe.h"
#include "core/strmap.h"
#include "model/catalog.h"

#define RESCAN_TICKS 10
#define TOP_N 10
#define MAX_CGROUPS 20000

struct cg {
	char *path;		/* absolute path of the cgroup directory */
	const char *rel;	/* path inside its hierarchy ("/" for the root) */
	int v2;
	uint64_t periods, throttled, throttled_ns;
	uint64_t prev_throttled_ns;
	int seen;		/* read in this tick */
	int had_prev;
};

struct throttle_probe {
	char roots[8][256];
	int root_v2[8];
	int nroots;
	struct cg *cgs;
	size_t ncg, cap;
	struct strmap index;	/* path -> slot in cgs */
	uint64_t ticks;
	int ncpu;
	int has_thermal, has_freq;
};

static struct throttle_probe *walking;	/* nftw has no user pointer */
static int walking_root;

static int read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

static int read_u64_file(const char *path, uint64_t *v)
{
	char buf[64];

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	*v = strtoull(buf, NULL, 10);
	return 0;
}

/* Value of "key N" in a key-value file body, or -1 if absent. */
static int kv(const char *body, const char *key, uint64_t *v)
{
	size_t kl = strlen(key);

	for (const char *p = body; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, key, kl) == 0 && p[kl] == ' ') {
			*v = strtoull(p + kl + 1, NULL, 10);
			return 0;
		}
	}
	return -1;
}

static void find_roots(struct throttle_probe *tp)
{
	char line[1024];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && tp->nroots < 8) {
		char mnt[256], fstype[32], super[256];
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(sep + 3, "%31s %*s %255s", fstype, super) != 2)
			continue;
		if (strcmp(fstype, "cgroup2") == 0) {
			tp->root_v2[tp->nroots] = 1;
		} else if (strcmp(fstype, "cgroup") == 0) {
			/* super options like "rw,cpu" or "rw,cpu,cpuacct" */
			char *save, *opt, copy[256];
			int cpu = 0;

			snprintf(copy, sizeof(copy), "%s", super);
			for (opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save))
				cpu |= strcmp(opt, "cpu") == 0;
			if (!cpu)
				continue;
			tp->root_v2[tp->nroots] = 0;
		} else {
			continue;
		}
		snprintf(tp->roots[tp->nroots], sizeof(tp->roots[0]), "%s", mnt);
		tp->nroots++;
	}
	fclose(f);
}

static int visit(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	struct throttle_probe *tp = walking;
	char file[4352];
	uint32_t idx;

	(void)st;
	(void)ftw;
	if (flag != FTW_D || tp->ncg >= MAX_CGROUPS)
		return 0;
	snprintf(file, sizeof(file), "%s/cpu.stat", path);
	if (access(file, R_OK))
		return 0;
	if (strmap_get(&tp->index, path, &idx)) {
		tp->cgs[idx].seen = 1;
		return 0;
	}
	if (ARRAY_GROW(tp->cgs, tp->cap, tp->ncg + 1, 64))
		return 0;
	struct cg *c = &tp->cgs[tp->ncg];

	memset(c, 0, sizeof(*c));
	c->path = strdup(path);
	if (!c->path)
		return 0;
	c->rel = c->path + strlen(tp->roots[walking_root]);
	if (!*c->rel)
		c->rel = "/";
	c->v2 = tp->root_v2[walking_root];
	c->seen = 1;
	strmap_put(&tp->index, path, (uint32_t)tp->ncg);
	tp->ncg++;
	return 0;
}

static void rescan(struct throttle_probe *tp)
{
	size_t kept = 0;

	for (size_t i = 0; i < tp->ncg; i++)
		tp->cgs[i].seen = 0;
	walking = tp;
	for (int r = 0; r < tp->nroots; r++) {
		walking_root = r;
		nftw(tp->roots[r], visit, 16, FTW_PHYS | FTW_MOUNT);
	}
	/* drop cgroups that are gone, rebuild the index */
	strmap_free(&tp->index);
	strmap_init(&tp->index);
	for (size_t i = 0; i < tp->ncg; i++) {
		if (!tp->cgs[i].seen) {
			free(tp->cgs[i].path);
			continue;
		}
		tp->cgs[kept] = tp->cgs[i];
		strmap_put(&tp->index, tp->cgs[kept].path, (uint32_t)kept);
		kept++;
	}
	tp->ncg = kept;
}

static int throttle_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct throttle_probe *tp = calloc(1, sizeof(*tp));
	char path[128];

	(void)cfg;
	(void)err;
	(void)errlen;
	if (!tp)
		return -ENOMEM;
	strmap_init(&tp->index);
	find_roots(tp);
	tp->ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	tp->has_thermal = access("/sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count",
				 R_OK) == 0;
	tp->has_freq = access("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", R_OK) == 0;
	snprintf(path, sizeof(path), "%d", tp->nroots);
	log_info("throttle: %d cgroup hierarch%s with CPU throttling; thermal throttle counters %s; "
		 "CPU frequency %s", tp->nroots, tp->nroots == 1 ? "y" : "ies",
		 tp->has_thermal ? "present" : "absent on this machine (not reported as zero)",
		 tp->has_freq ? "present" : "absent on this machine");
	*priv = tp;
	return 0;
}

static int by_delta(const void *a, const void *b)
{
	const struct cg *x = *(const struct cg *const *)a, *y = *(const struct cg *const *)b;
	uint64_t dx = x->throttled_ns - x->prev_throttled_ns;
	uint64_t dy = y->throttled_ns - y->prev_throttled_ns;

	return dx < dy ? 1 : dx > dy ? -1 : 0;
}

static int add_psi(struct snapshot *s, const char *file, const char *resource,
		   const char *cgroup)
{
	char body[512];
	const char *kinds[2] = { "some", "full" };

	if (read_file(file, body, sizeof(body)) <= 0)
		return 0;
	for (int k = 0; k < 2; k++) {
		const char *line = strstr(body, kinds[k]);
		const char *tot = line ? strstr(line, "total=") : NULL;
		char name[32];

		if (!tot)
			continue;
		snprintf(name, sizeof(name), "psi.%s", kinds[k]);
		if (cgroup ? !snapshot_add_counter(s, name, strtoull(tot + 6, NULL, 10), "resource",
						   resource, "cgroup", cgroup, NULL)
			   : !snapshot_add_counter(s, name, strtoull(tot + 6, NULL, 10), "resource",
						   resource, NULL))
			return -ENOMEM;
	}
	return 0;
}

static int throttle_collect(void *priv, struct snapshot *s)
{
	static const char *const res[3] = { "cpu", "io", "memory" };
	struct throttle_probe *tp = priv;
	struct cg **order;
	size_t nthrottled = 0, n = 0;
	char path[4352], body[1024];
	int ret;

	if (tp->ticks++ % RESCAN_TICKS == 0)
		rescan(tp);
	order = calloc(tp->ncg + 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < tp->ncg; i++) {
		struct cg *c = &tp->cgs[i];
		uint64_t t;

		snprintf(path, sizeof(path), "%s/cpu.stat", c->path);
		if (read_file(path, body, sizeof(body)) <= 0 || kv(body, "nr_throttled", &c->throttled))
			continue;
		kv(body, "nr_periods", &c->periods);
		c->prev_throttled_ns = c->throttled_ns;
		if (kv(body, "throttled_time", &t) == 0)
			c->throttled_ns = t;
		else if (kv(body, "throttled_usec", &t) == 0)
			c->throttled_ns = t * 1000;
		if (!c->had_prev) {
			c->prev_throttled_ns = c->throttled_ns;
			c->had_prev = 1;
		}
		if (c->throttled_ns > c->prev_throttled_ns)
			nthrottled++;
		order[n++] = c;
	}
	qsort(order, n, sizeof(*order), by_delta);
	for (size_t i = 0; i < n && i < TOP_N; i++) {
		struct cg *c = order[i];

		if (c->throttled_ns == c->prev_throttled_ns && c->throttled == 0)
			break;	/* never throttled: nothing to show */
		if (!snapshot_add_counter(s, "cgroup.throttled_time", c->throttled_ns, "cgroup",
					  c->rel, NULL) ||
		    !snapshot_add_counter(s, "cgroup.nr_throttled", c->throttled, "cgroup", c->rel,
					  NULL) ||
		    !snapshot_add_counter(s, "cgroup.nr_periods", c->periods, "cgroup", c->rel,
					  NULL)) {
			free(order);
			return -ENOMEM;
		}
		for (int r = 0; c->v2 && r < 3; r++) {
			snprintf(path, sizeof(path), "%s/%s.pressure", c->path, res[r]);
			if ((ret = add_psi(s, path, res[r], c->rel))) {
				free(order);
				return ret;
			}
		}
	}
	free(order);
	if (!snapshot_add_gauge(s, "cgroup.throttled_count", (double)nthrottled, NULL))
		return -ENOMEM;
	for (int r = 0; r < 3; r++) {
		snprintf(path, sizeof(path), "/proc/pressure/%s", res[r]);
		if ((ret = add_psi(s, path, res[r], NULL)))
			return ret;
	}
	for (int c = 0; c < tp->ncpu && (tp->has_thermal || tp->has_freq); c++) {
		char cpu[16];
		uint64_t v, max;

		snprintf(cpu, sizeof(cpu), "%d", c);
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/thermal_throttle/core_throttle_count", c);
		if (tp->has_thermal && read_u64_file(path, &v) == 0 &&
		    !snapshot_add_counter(s, "cpu.thermal_throttle", v, "cpu", cpu, NULL))
			return -ENOMEM;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", c);
		if (tp->has_freq && read_u64_file(path, &v) == 0) {
			if (!snapshot_add_gauge(s, "cpu.frequency", (double)v * 1000.0, "cpu", cpu, NULL))
				return -ENOMEM;
			snprintf(path, sizeof(path),
				 "/sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", c);
			if (read_u64_file(path, &max) == 0 && max &&
			    !snapshot_add_gauge(s, "cpu.frequency_ratio",
						catalog_ratio((double)v / (double)max), "cpu", cpu,
						NULL))
				return -ENOMEM;
		}
	}
	if (!snapshot_add_gauge(s, "probe.feature_present", tp->has_thermal, "feature",
				"thermal_throttle", NULL) ||
	    !snapshot_add_gauge(s, "probe.feature_present", tp->has_freq, "feature", "cpufreq",
				NULL))
		return -ENOMEM;
	return 0;
}

static void throttle_close(void *priv)
{
	struct throttle_probe *tp = priv;

	if (!tp)
		return;
	for (size_t i = 0; i < tp->ncg; i++)
		free(tp->cgs[i].path);
	free(tp->cgs);
	strmap_free(&tp->index);
	free(tp);
}

const struct collector throttle_collector = {
	.name = "throttle",
	.needs_bpf = 0,
	.open = throttle_open,
	.collect = throttle_collect,
	.close = throttle_close,
};
