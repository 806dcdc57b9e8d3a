/*
 * drive.c - drive health collector: every drive's SMART data, normalized
 * (lib/model/drive.h), on a slow cadence, off the sampling path.
 *
 * A thread wakes every `drive.interval` (first at start-up), lists whole
 * disks in /sys/block (skipping loop, ram, zram, dm, md, nbd, optical and
 * floppy devices: md/dm members are reported through their physical
 * disks), and reads each in a forked child with a deadline, so a hung
 * device or a hung smartctl costs one timeout, never the probe:
 *
 *   nvme*     NVMe SMART / Health log page through the admin ioctl
 *   sd* (ATA) libatasmart
 *   others    `smartctl --json -a` when installed (SCSI/SAS, USB bridges…)
 *   vd*, xvd* virtual disks: reported as "no SMART", nothing read
 *
 * Snapshots carry gauges per device (labels device, model) from the last
 * read; each new record goes to fl:{H}:drives, and once a day a wear point
 * to fl:{H}:drives:wear:SERIAL for end-of-life projection.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probes/caps.h"
#include "model/drive.h"
#include "store/drives.h"
#include "core/array.h"
#include "core/fnv.h"
#include "core/log.h"
#include "probes/probe.h"
#include "core/timeutil.h"

#define MAX_DRIVES 64

struct drive_probe {
	uint64_t interval_ns, timeout_ns;
	char smartctl[256];
	char sysfs[256];		/* /sys/block, or a test's fake tree */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int stop, started;
	struct drive_record recs[MAX_DRIVES];
	int nrecs;
	uint64_t generation;		/* bumped by every scan */
	uint64_t published;		/* generation last written to Redis */
	uint64_t collected;		/* generation of the last collect */
	uint64_t health_seen;		/* health_sign at the last collect */
	char last_day[MAX_DRIVES][16];	/* per record: day of the last wear point */
};

static int skip_name(const char *n)
{
	static const char *const prefixes[] = { "loop", "ram", "zram", "dm-", "md", "nbd", "sr",
						"fd", "zd" };

	if (n[0] == '.')
		return 1;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(n, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

static void sysfs_str(const char *sysfs, const char *dev, const char *file, char *out,
		      size_t len)
{
	char path[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s/%s", sysfs, dev, file);
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(out, (int)len, f)) {
		size_t n = strlen(out);

		while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
			out[--n] = '\0';
	}
	fclose(f);
}

/* In the child: run smartctl and parse its JSON. */
static void read_smartctl(struct drive_probe *dp, struct drive_record *r, const char *devpath)
{
	int pfd[2];
	pid_t pid;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;

	if (access(dp->smartctl, X_OK)) {
		snprintf(r->status, sizeof(r->status), "no_smart");
		snprintf(r->error, sizeof(r->error), "%.120s is not installed; SCSI/SAS and other "
			 "drives need it (apt-get install smartmontools)", dp->smartctl);
		return;
	}
	if (pipe(pfd))
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		dup2(null, 2);
		close(pfd[0]);
		execl(dp->smartctl, dp->smartctl, "--json", "-a", devpath, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		if (ARRAY_GROW(buf, cap, len + 4096, 65536))
			break;
		n = read(pfd[0], buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len > (8u << 20))
			break;
	}
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	/* smartctl's exit status is a bit mask of findings; its JSON says more */
	drive_from_smartctl_json(r, buf ? buf : "", len);
	free(buf);
	return;
fail:
	snprintf(r->status, sizeof(r->status), "error");
	snprintf(r->error, sizeof(r->error), "cannot run %.120s: %s", dp->smartctl,
		 strerror(errno));
}

/* In the child: read one device by whatever source fits it. */
static void read_device(struct drive_probe *dp, struct drive_record *r, const char *dev)
{
	char devpath[128], vendor[64], buf[256];
	double sectors;

	snprintf(devpath, sizeof(devpath), "/dev/%s", dev);
	sysfs_str(dp->sysfs, dev, "queue/rotational", buf, sizeof(buf));
	if (buf[0])
		r->rotational = buf[0] == '1';
	sysfs_str(dp->sysfs, dev, "size", buf, sizeof(buf));
	sectors = strtod(buf, NULL);
	if (sectors > 0)
		drive_set(r, DF_CAPACITY_BYTES, sectors * 512.0, "sysfs size x 512");
	if (!strncmp(dev, "vd", 2) || !strncmp(dev, "xvd", 3)) {
		snprintf(r->status, sizeof(r->status), "no_smart");
		snprintf(r->error, sizeof(r->error), "virtual disk (%s): no SMART to read", dev);
		return;
	}
	if (!strncmp(dev, "nvme", 4)) {
		sysfs_str(dp->sysfs, dev, "device/model", r->model, sizeof(r->model));
		sysfs_str(dp->sysfs, dev, "device/serial", r->serial, sizeof(r->serial));
		sysfs_str(dp->sysfs, dev, "device/firmware_rev", r->firmware, sizeof(r->firmware));
		drive_from_nvme_device(r, devpath);
		return;
	}
	sysfs_str(dp->sysfs, dev, "device/vendor", vendor, sizeof(vendor));
	if (!strncmp(dev, "sd", 2) && !strcmp(vendor, "ATA")) {
		drive_from_atasmart_device(r, devpath);
		if (strcmp(r->status, "ok") == 0)
			return;
		/* libatasmart could not (e.g. behind a SAS HBA): try smartctl */
		drive_init(r, dev);
	}
	read_smartctl(dp, r, devpath);
}

/* Read dev in a child with a deadline; the parent never blocks on the device. */
static void read_with_deadline(struct drive_probe *dp, struct drive_record *r, const char *dev)
{
	struct strbuf sb = STRBUF_INIT;
	char buf[8192];
	size_t len = 0;
	int pfd[2], status;
	uint64_t deadline;
	pid_t pid;

	drive_init(r, dev);
	if (pipe(pfd)) {
		snprintf(r->status, sizeof(r->status), "error");
		snprintf(r->error, sizeof(r->error), "pipe: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		read_device(dp, r, dev);
		drive_to_json(r, &sb);
		if (write(pfd[1], strbuf_str(&sb), sb.len) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	deadline = time_mono_ns() + dp->timeout_ns;
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		uint64_t now = time_mono_ns();
		ssize_t n;

		if (now >= deadline) {
			kill(pid, SIGKILL);
			snprintf(r->status, sizeof(r->status), "error");
			snprintf(r->error, sizeof(r->error), "timed out after %.0f s reading SMART from "
				 "/dev/%s (hung device or smartctl); will retry next round",
				 (double)dp->timeout_ns / 1e9, dev);
			len = 0;
			break;
		}
		if (poll(&p, 1, (int)((deadline - now) / NSEC_PER_MSEC) + 1) <= 0)
			continue;
		n = read(pfd[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len >= sizeof(buf) - 1)
			break;
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (len) {
		buf[len] = '\0';
		if (drive_from_json(r, buf, len)) {
			drive_init(r, dev);
			snprintf(r->status, sizeof(r->status), "error");
			snprintf(r->error, sizeof(r->error), "reader for /dev/%s returned garbage", dev);
		}
	} else if (!strcmp(r->status, "ok")) {
		snprintf(r->status, sizeof(r->status), "error");
		snprintf(r->error, sizeof(r->error), "reader for /dev/%s died (status %d)", dev,
			 status);
	}
	r->read_at_ms = time_wall_ns() / NSEC_PER_MSEC;
}

/* One pass over every disk. */
static void scan(struct drive_probe *dp)
{
	struct drive_record *recs = calloc(MAX_DRIVES, sizeof(*recs));
	struct dirent *de;
	DIR *d;
	int n = 0;

	if (!recs)
		return;
	d = opendir(dp->sysfs);
	if (!d) {
		log_warn("drive: cannot list %s: %s", dp->sysfs, strerror(errno));
		free(recs);
		return;
	}
	while ((de = readdir(d)) && n < MAX_DRIVES) {
		if (skip_name(de->d_name))
			continue;
		read_with_deadline(dp, &recs[n], de->d_name);
		if (strcmp(recs[n].status, "ok"))
			log_info("drive: %s: %s: %s", recs[n].device, recs[n].status, recs[n].error);
		n++;
	}
	closedir(d);
	pthread_mutex_lock(&dp->lock);
	memcpy(dp->recs, recs, (size_t)n * sizeof(*recs));
	dp->nrecs = n;
	dp->generation++;
	pthread_mutex_unlock(&dp->lock);
	free(recs);
}

static void *drive_thread(void *arg)
{
	struct drive_probe *dp = arg;
	char err[256];

	/* SMART ioctls and smartctl need raw I/O and admin commands, nothing else */
	if (caps_keep(caps_drive, err, sizeof(err)))
		log_warn("drive: keeping every capability: %s", err);

	pthread_mutex_lock(&dp->lock);
	while (!dp->stop) {
		struct timespec ts;

		pthread_mutex_unlock(&dp->lock);
		scan(dp);
		pthread_mutex_lock(&dp->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(dp->interval_ns / NSEC_PER_SEC);
		while (!dp->stop && pthread_cond_timedwait(&dp->wake, &dp->lock, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&dp->lock);
	return NULL;
}

static int drive_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct drive_probe *dp = calloc(1, sizeof(*dp));
	const char *sysfs = getenv("FL_SYS_BLOCK");

	if (!dp)
		return -ENOMEM;
	dp->interval_ns = cfg->drive_interval_ns;
	dp->timeout_ns = cfg->drive_timeout_ns;
	snprintf(dp->smartctl, sizeof(dp->smartctl), "%s", cfg->smartctl);
	snprintf(dp->sysfs, sizeof(dp->sysfs), "%s", sysfs && *sysfs ? sysfs : "/sys/block");
	pthread_mutex_init(&dp->lock, NULL);
	pthread_cond_init(&dp->wake, NULL);
	if (pthread_create(&dp->thread, NULL, drive_thread, dp)) {
		snprintf(err, errlen, "drive: cannot start its thread");
		free(dp);
		return -EAGAIN;
	}
	pthread_setname_np(dp->thread, "fl-drive");
	dp->started = 1;
	*priv = dp;
	return 0;
}

/*
 * What the health flags say, as one number that changes when any drive's
 * does: SMART passed or failed, NVMe critical warning bits, media errors,
 * pending and reallocated sectors.  Under dp->lock.
 */
static uint64_t health_sign(const struct drive_probe *dp)
{
	uint64_t h = FNV64_OFFSET;

	for (int i = 0; i < dp->nrecs; i++) {
		const struct drive_record *r = &dp->recs[i];
		uint64_t v[5] = { (uint64_t)(r->smart_passed + 1), r->critical_warning,
				  (uint64_t)r->f[DF_MEDIA_ERRORS].v,
				  (uint64_t)r->f[DF_PENDING_SECTORS].v,
				  (uint64_t)r->f[DF_REALLOCATED_SECTORS].v };

		h = fnv64_bytes(h, v, sizeof(v));
	}
	return h;
}

/* A scan came in since the last snapshot and a drive's health flags changed. */
static int drive_moved(void *priv)
{
	struct drive_probe *dp = priv;
	int moved = 0;

	/* a scan holding the lock is not waited for: the next look sees it */
	if (pthread_mutex_trylock(&dp->lock))
		return 0;
	/* the first scan is not a change: nothing was known before it */
	if (dp->collected && dp->generation != dp->collected)
		moved = health_sign(dp) != dp->health_seen;
	pthread_mutex_unlock(&dp->lock);
	return moved;
}

static int drive_collect(void *priv, struct snapshot *s)
{
	struct drive_probe *dp = priv;
	int ret = 0;

	pthread_mutex_lock(&dp->lock);
	dp->collected = dp->generation;
	dp->health_seen = health_sign(dp);
	for (int i = 0; i < dp->nrecs && !ret; i++)
		ret = drive_add_series(&dp->recs[i], s);
	pthread_mutex_unlock(&dp->lock);
	return ret;
}

static int drive_publish(void *priv, struct store *st, const char *host)
{
	struct drive_probe *dp = priv;
	char day[16];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(day, sizeof(day), "%Y-%m-%d", &tm);
	pthread_mutex_lock(&dp->lock);
	if (dp->published == dp->generation) {
		pthread_mutex_unlock(&dp->lock);
		return 0;
	}
	for (int i = 0; i < dp->nrecs; i++) {
		const struct drive_record *r = &dp->recs[i];
		int new_day = strcmp(dp->last_day[i], day) != 0;

		drives_put(st, host, r, new_day ? day : NULL);
		if (new_day)
			snprintf(dp->last_day[i], sizeof(dp->last_day[i]), "%s", day);
	}
	dp->published = dp->generation;
	pthread_mutex_unlock(&dp->lock);
	return 0;
}

static void drive_close(void *priv)
{
	struct drive_probe *dp = priv;

	if (!dp)
		return;
	if (dp->started) {
		pthread_mutex_lock(&dp->lock);
		dp->stop = 1;
		pthread_cond_signal(&dp->wake);
		pthread_mutex_unlock(&dp->lock);
		pthread_join(dp->thread, NULL);
	}
	free(dp);
}

/* For tests: wait until the first scan finished. Returns 0 or -ETIMEDOUT. */
int drive_wait_scan(void *priv, uint64_t timeout_ns)
{
	struct drive_probe *dp = priv;
	uint64_t end = time_mono_ns() + timeout_ns;

	while (time_mono_ns() < end) {
		int done;

		pthread_mutex_lock(&dp->lock);
		done = dp->generation > 0;
		pthread_mutex_unlock(&dp->lock);
		if (done)
			return 0;
		usleep(20000);
	}
	return -ETIMEDOUT;
}

const struct collector drive_collector = {
	.name = "drive",
	.needs_bpf = 0,
	.open = drive_open,
	.collect = drive_collect,
	.moved = drive_moved,
	.publish = drive_publish,
	.close = drive_close,
};
