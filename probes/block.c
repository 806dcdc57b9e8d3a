/*
 * block.c - block I/O collector: loads bpf/block.bpf.c, reads its tables
 * through mmap (no syscalls per sample) and turns them into per device and
 * op counters and histograms.
 *
 * Series (see lib/model/catalog.c): block.ios, block.bytes, block.untimed,
 * block.latency, block.queue_latency, block.size, each with
 * device=<disk name> and op=read|write|flush|discard|other; block.errors
 * with class=io|timeout|medium|other too; block.inflight (from the kernel's
 * own per-disk counts in sysfs); and block.device_overflow.
 *
 * The kernel tables are cumulative since the probe loaded them; snapshots
 * carry them as they are and readers take deltas.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "model/hist_layout.h"
#include "bpf/block.h"
#include "block.skel.h"
#include "probes/bpfmap.h"
#include "core/log.h"
#include "probes/probe.h"

static const char *const op_names[BLOCK_OPS] = { "read", "write", "flush", "discard", "other" };

const char *block_op_name(unsigned op)
{
	return op_names[op < BLOCK_OPS ? op : BLOCK_OP_OTHER];
}
static const char *const err_names[BLOCK_ERR_CLASSES] = { "io", "timeout", "medium", "other" };

struct block_probe {
	struct block_bpf *skel;
	struct block_stats **dev_stats;	/* per device slot: its entries, mapped once it has I/O */
	struct bpfmap_window *windows;	/* the mappings behind dev_stats */
	__u64 *devs;			/* mmap of the device table */
	size_t devs_len;
	__u32 max_devs, nslots;
	char (*names)[64];		/* resolved name per device slot */
	char (*models)[64];		/* and its model (device_model()) */
	__u64 *named_dev;		/* dev each name was resolved for */
	int *map_errno;			/* per device slot: why mapping it last failed (0: not) */
	struct histogram *scratch;
};

/*
 * Value of enumerator `name` in the running kernel's BTF.  Returns 0, or
 * -ENOENT when no enum has it (older kernels #define QUEUE_FLAG_*).
 */
static int kernel_enum_value(const char *name, long long *val)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int ret = -ENOENT;
	__u32 n;

	if (!btf)
		return -errno;
	n = btf__type_cnt(btf);
	for (__u32 id = 1; id < n && ret; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);

		if (!btf_is_enum(t))
			continue;
		const struct btf_enum *e = btf_enum(t);

		for (__u16 i = 0; i < btf_vlen(t); i++) {
			if (strcmp(btf__name_by_offset(btf, e[i].name_off), name) == 0) {
				*val = e[i].val;
				ret = 0;
				break;
			}
		}
	}
	btf__free(btf);
	return ret;
}

static void explain_load_failure(int err, char *buf, size_t len)
{
	const char *why;

	if (access("/sys/kernel/btf/vmlinux", R_OK))
		why = "this kernel has no BTF (/sys/kernel/btf/vmlinux is missing); "
		      "faultline's BPF programs are CO-RE and need a kernel built with "
		      "CONFIG_DEBUG_INFO_BTF=y";
	else if (err == -EPERM || err == -EACCES)
		why = "not permitted: faultline-probe needs CAP_BPF and CAP_PERFMON "
		      "(run it as root, or grant them with setcap/systemd AmbientCapabilities)";
	else
		why = "the kernel rejected the program (run with --log-level debug for the "
		      "verifier log)";
	snprintf(buf, len, "cannot load the BPF block probe: %s: %s; pass --no-bpf to run the "
		 "/proc-based collectors alone", strerror(-err), why);
}

static int block_open(void **priv, const struct probe_config *cfg, char *err, size_t errlen)
{
	struct block_probe *bp;
	long long stats_bit = -1;
	int ncpu, ret;

	bp = calloc(1, sizeof(*bp));
	if (!bp)
		return -ENOMEM;
	ncpu = libbpf_num_possible_cpus();
	bp->max_devs = (__u32)cfg->block_max_devices;
	bp->nslots = (__u32)(cfg->block_slots < (uint64_t)ncpu ? cfg->block_slots : (uint64_t)ncpu);
	if (bp->nslots == 0)
		bp->nslots = 1;
	if (kernel_enum_value("QUEUE_FLAG_STATS", &stats_bit))
		log_info("block: QUEUE_FLAG_STATS not found in kernel BTF; timing every request "
			 "with a per-request map entry");

	bp->skel = block_bpf__open();
	if (!bp->skel) {
		ret = -errno;
		explain_load_failure(ret, err, errlen);
		goto fail;
	}
	bp->skel->rodata->max_devs = bp->max_devs;
	bp->skel->rodata->nslots = bp->nslots;
	bp->skel->rodata->stats_bit = (int)stats_bit;
	bpf_map__set_max_entries(bp->skel->maps.stats, bp->nslots * bp->max_devs * BLOCK_OPS);
	bpf_map__set_max_entries(bp->skel->maps.devs, bp->max_devs);
	ret = block_bpf__load(bp->skel);
	if (ret) {
		explain_load_failure(ret, err, errlen);
		goto fail;
	}
	ret = block_bpf__attach(bp->skel);
	if (ret) {
		snprintf(err, errlen, "cannot attach the BPF block probe to block_rq_issue/"
			 "block_rq_complete: %s; pass --no-bpf to run without it", strerror(-ret));
		goto fail;
	}
	bp->devs = bpfmap_mmap(bp->skel->maps.devs, &bp->devs_len);
	if (!bp->devs) {
		ret = -errno;
		snprintf(err, errlen, "cannot mmap the block probe's maps: %s (kernel < 5.5?)",
			 strerror(errno));
		goto fail;
	}
	bp->names = calloc(bp->max_devs, sizeof(*bp->names));
	bp->named_dev = calloc(bp->max_devs, sizeof(*bp->named_dev));
	bp->models = calloc(bp->max_devs, sizeof(*bp->models));
	bp->scratch = calloc(3, sizeof(*bp->scratch));
	bp->dev_stats = calloc(bp->max_devs, sizeof(*bp->dev_stats));
	bp->windows = calloc(bp->max_devs, sizeof(*bp->windows));
	bp->map_errno = calloc(bp->max_devs, sizeof(*bp->map_errno));
	if (!bp->names || !bp->named_dev || !bp->models || !bp->scratch || !bp->dev_stats ||
	    !bp->windows || !bp->map_errno) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	log_info("block: BPF probe attached (%u devices x %u slots, kernel request timestamps %s)",
		 bp->max_devs, bp->nslots, stats_bit >= 0 ? "used where enabled" : "unavailable");
	*priv = bp;
	return 0;
fail:
	block_collector.close(bp);
	return ret;
}

void block_dev_name(uint64_t dev, char *out, size_t len)
{
	unsigned maj = (unsigned)(dev >> 20), min = (unsigned)(dev & 0xfffff);
	char path[96], line[256];
	FILE *f;

	snprintf(out, len, "%u:%u", maj, min);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", maj, min);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%.63s", line + 8);
			break;
		}
	}
	fclose(f);
}

/*
 * What a disk's latency is compared with: its model (sysfs device/model, as
 * ATA, SCSI and NVMe report it, blanks trimmed), else its driver
 * (virtio_blk), else its kind (the name without digits: loop, zram).  A
 * partition answers for its disk.
 */
static void device_model(const char *name, char *out, size_t len)
{
	char dev[128], path[160], buf[128], *p;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/block/%s/partition", name);
	snprintf(dev, sizeof(dev), "/sys/class/block/%s%s/device", name,
		 access(path, F_OK) == 0 ? "/.." : "");
	snprintf(path, sizeof(path), "%s/model", dev);
	f = fopen(path, "r");
	if (f) {
		p = fgets(buf, sizeof(buf), f);
		fclose(f);
		if (p) {
			for (p = buf + strlen(buf); p > buf && isspace((unsigned char)p[-1]); p--)
				;
			*p = '\0';
			for (p = buf; isspace((unsigned char)*p); p++)
				;
			if (*p) {
				snprintf(out, len, "%s", p);
				return;
			}
		}
	}
	snprintf(path, sizeof(path), "%s/driver", dev);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		p = strrchr(buf, '/');
		snprintf(out, len, "%s", p ? p + 1 : buf);
		return;
	}
	snprintf(out, len, "%.*s", (int)strcspn(name, "0123456789"), name);
}

static void sum_hist(struct histogram *h, const volatile __u64 *src, uint32_t n, __u64 sum)
{
	for (uint32_t i = 0; i < n; i++) {
		h->buckets[i] += src[i];
		h->count += src[i];
	}
	h->sum += sum;
}

static int block_collect(void *priv, struct snapshot *s)
{
	struct block_probe *bp = priv;
	struct histogram *lat = &bp->scratch[0], *queue = &bp->scratch[1], *size = &bp->scratch[2];

	for (__u32 d = 0; d < bp->max_devs; d++) {
		__u64 dev = ((volatile __u64 *)bp->devs)[d];

		if (!dev)
			continue;
		if (!bp->dev_stats[d]) {
			/* its first I/O: map its entries (all of them would be resident) */
			bp->dev_stats[d] = bpfmap_window_open(
				bpf_map__fd(bp->skel->maps.stats), sizeof(struct block_stats),
				(size_t)d * bp->nslots * BLOCK_OPS, (size_t)bp->nslots * BLOCK_OPS,
				PROT_READ, &bp->windows[d]);
			/*
			 * Said once, not every tick; the other devices are still
			 * reported, and the mapping is tried again each tick.
			 */
			if (!bp->dev_stats[d]) {
				int e = errno ? errno : EIO;

				if (bp->map_errno[d] != e)
					log_warn("block: cannot map device slot %u's counters: %s; "
						 "its I/O is not reported until it can be (retried "
						 "every interval)", d, strerror(e));
				bp->map_errno[d] = e;
				continue;
			}
			if (bp->map_errno[d])
				log_info("block: device slot %u's counters are mapped now", d);
			bp->map_errno[d] = 0;
		}
		if (bp->named_dev[d] != dev) {
			block_dev_name(dev, bp->names[d], sizeof(bp->names[d]));
			device_model(bp->names[d], bp->models[d], sizeof(bp->models[d]));
			bp->named_dev[d] = dev;
		}
		for (int op = 0; op < BLOCK_OPS; op++) {
			__u64 ios = 0, bytes = 0, errors[BLOCK_ERR_CLASSES] = { 0 }, untimed = 0;
			struct series *ser;

			for (__u32 sl = 0; sl < bp->nslots; sl++)
				ios += bp->dev_stats[d][sl * BLOCK_OPS + op].ios;
			if (!ios)
				continue;
			hist_reset(lat);
			hist_reset(queue);
			hist_reset(size);
			for (__u32 sl = 0; sl < bp->nslots; sl++) {
				const volatile struct block_stats *st =
					&bp->dev_stats[d][sl * BLOCK_OPS + op];

				bytes += st->bytes;
				for (int e = 0; e < BLOCK_ERR_CLASSES; e++)
					errors[e] += st->errors[e];
				untimed += st->untimed;
				sum_hist(lat, st->lat, BLOCK_LAT_BUCKETS, st->lat_sum_ns);
				sum_hist(queue, st->queue, BLOCK_LAT_BUCKETS, st->queue_sum_ns);
				sum_hist(size, st->size, BLOCK_SIZE_BUCKETS, 0);
			}
			/* the size sum is exactly the bytes moved */
			size->sum = bytes;
			const char *dn = bp->names[d], *on = op_names[op];

			if (!snapshot_add_counter(s, "block.ios", ios, "device", dn, "op", on, NULL) ||
			    !snapshot_add_counter(s, "block.bytes", bytes, "device", dn, "op", on,
						  NULL) ||
			    !snapshot_add_counter(s, "block.untimed", untimed, "device", dn, "op",
						  on, NULL))
				return -ENOMEM;
			for (int e = 0; e < BLOCK_ERR_CLASSES; e++)
				if (!snapshot_add_counter(s, "block.errors", errors[e], "device", dn,
							  "op", on, "class", err_names[e], NULL))
					return -ENOMEM;
			/* latency carries the model: rules compare a disk with its peers */
			ser = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", dn, "op",
					   on, "model", bp->models[d], NULL);
			if (!ser)
				return -ENOMEM;
			*ser->hist = *lat;
			ser = snapshot_add(s, "block.queue_latency", SERIES_HISTOGRAM, "device", dn,
					   "op", on, "model", bp->models[d], NULL);
			if (!ser)
				return -ENOMEM;
			*ser->hist = *queue;
			ser = snapshot_add(s, "block.size", SERIES_HISTOGRAM, "device", dn, "op", on,
					   NULL);
			if (!ser)
				return -ENOMEM;
			*ser->hist = *size;
		}
	}
	for (__u32 d = 0; d < bp->max_devs; d++) {
		char path[128], buf[64];
		unsigned long r, w;
		FILE *f;

		if (!bp->named_dev[d])
			continue;
		/* the kernel keeps in-flight counts per disk; no BPF needed */
		snprintf(path, sizeof(path), "/sys/class/block/%s/inflight", bp->names[d]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f) && sscanf(buf, "%lu %lu", &r, &w) == 2 &&
		    (!snapshot_add_gauge(s, "block.inflight", (double)r, "device", bp->names[d],
					 "op", "read", NULL) ||
		     !snapshot_add_gauge(s, "block.inflight", (double)w, "device", bp->names[d],
					 "op", "write", NULL))) {
			fclose(f);
			return -ENOMEM;
		}
		fclose(f);
	}
	if (!snapshot_add_counter(s, "block.device_overflow", bp->skel->bss->dev_overflow, NULL))
		return -ENOMEM;
	return 0;
}

static void block_close(void *priv)
{
	struct block_probe *bp = priv;

	if (!bp)
		return;
	for (__u32 d = 0; bp->windows && d < bp->max_devs; d++)
		bpfmap_window_close(&bp->windows[d]);
	free(bp->windows);
	free(bp->dev_stats);
	free(bp->map_errno);
	if (bp->devs)
		munmap(bp->devs, bp->devs_len);
	block_bpf__destroy(bp->skel);
	free(bp->names);
	free(bp->models);
	free(bp->named_dev);
	free(bp->scratch);
	free(bp);
}

static int block_enabled(const struct probe_config *cfg, int once, const char **why)
{
	(void)once;
	*why = "block.enabled: false";
	return cfg->block_enabled;
}

const struct collector block_collector = {
	.name = "block",
	.enabled = block_enabled,
	.needs_bpf = 1,
	.open = block_open,
	.collect = block_collect,
	.close = block_close,
};
