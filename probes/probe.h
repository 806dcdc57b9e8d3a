/*
 * probe.h - faultline-probe's configuration and collector interface.
 *
 * A collector is a (name, open, collect, close) table.  open() runs once at
 * start-up and fails loudly (the probe exits, naming what is missing);
 * collect() runs on the sampling loop every interval and adds series to
 * the snapshot; it must not block (no network, no sleeping), since every
 * other collector waits behind it.
 */
#ifndef FL_PROBE_H
#define FL_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "core/config_schema.h"
#include "core/config.h"
#include "probes/prom.h"
#include "probes/remote_write.h"
#include "model/snapshot.h"
#include "store/store.h"

struct probe_config {
	char *host;
	uint64_t interval_ns;
	uint64_t page_watch_ns;		/* 100 ms by default (etc/probe.yaml); 0: off */
	char *redis_url;
	uint64_t redis_timeout_ns;
	char *metrics_addr;
	char *web_config;		/* exporter-toolkit web config for /metrics; "" none */
	int bpf;
	char *log_level;
	struct label *labels;
	uint32_t nlabels;
	struct label *deploy_watch;	/* service -> executable path */
	uint32_t ndeploy_watch;
	uint64_t retention_ns[STORE_TIERS];
	uint64_t retention_p10_ns;	/* profile windows and I/O stacks */
	uint64_t retention_p3600_ns;	/* hourly profiles */
	uint64_t spool_max_snapshots;
	uint64_t spool_max_bytes;
	char *spool_path;		/* "": memory only */
	int block_enabled;
	uint64_t block_max_devices;
	uint64_t block_slots;
	uint64_t profile_rate_hz;
	uint64_t profile_window_ns;
	uint64_t profile_hourly_top;
	uint64_t profile_unwind_rows;
	uint64_t profile_symbol_bytes;	/* ELF symbols held at most (sym_set_budget) */
	char *profile_unwind_cache;	/* folder of built unwind tables by build id; "": none */
	uint64_t profile_io_interval_ns;
	int profile_enabled;
	uint64_t drive_interval_ns;
	uint64_t drive_timeout_ns;
	char *smartctl;
	struct prom_buckets buckets;	/* /metrics histogram bounds (metrics_buckets) */
	struct remote_write_config remote_write;	/* url "": off */
};

/* The embedded default config (etc/probe.yaml), NUL-terminated. */
extern const char probe_default_config[];

/* Fill cfg with the embedded defaults. Returns 0 or -EINVAL (a build bug). */
int probe_config_defaults(struct probe_config *cfg, char *err, size_t errlen);

/*
 * Apply the YAML file at path on top of cfg.  Returns 0, or -errno /
 * -EINVAL with "file:line:col: key: reason" in err.
 */
int probe_config_load(struct probe_config *cfg, const char *path, char *err, size_t errlen);

/* Apply len bytes of YAML text (name for messages) on top of cfg. */
int probe_config_parse(struct probe_config *cfg, const char *name, const char *text,
		       size_t len, char *err, size_t errlen);

void probe_config_free(struct probe_config *cfg);

/* The config's keys, one row each (core/config_schema.h); --config-reference prints them. */
extern const struct cfg_field probe_config_schema[];
extern const size_t probe_config_nschema;

/*
 * Between two snapshots the probe looks every page_watch (100 ms) at the
 * counters pages hang on (collector.moved); when one moves after a quiet
 * interval it takes and flushes a snapshot at once and wakes the rules
 * (store_put_wake), so a page does not wait for the next tick.
 */
struct collector {
	const char *name;
	int needs_bpf;
	/*
	 * optional: whether cfg turns this collector on (NULL: always), with
	 * the reason in *why when not.  once: a one-shot --once run, which
	 * publishes nothing.  The bpf switch is not its business: needs_bpf.
	 */
	int (*enabled)(const struct probe_config *cfg, int once, const char **why);
	int (*open)(void **priv, const struct probe_config *cfg, char *err, size_t errlen);
	int (*collect)(void *priv, struct snapshot *s);
	/*
	 * optional: whether a counter a page hangs on (checksum and error
	 * counters, a drive's health flags) moved since the last collect().
	 * Called every page_watch between snapshots, so it
	 * must cost next to nothing: a mapped BPF counter, one pread.
	 */
	int (*moved)(void *priv);
	/* optional: write what is not a series (drive records) to Redis */
	int (*publish)(void *priv, struct store *st, const char *host);
	void (*close)(void *priv);
};

extern const struct collector block_collector;

/*
 * A disk's name ("sda", "loop0") from its dev_t in the kernel's encoding
 * (major << 20 | minor, as the BPF programs see it), through sysfs;
 * "MAJOR:MINOR" when sysfs does not know it.
 */
void block_dev_name(uint64_t dev, char *out, size_t len);

/* The name of a BLOCK_OP_* (bpf/block.h): "read", "write", ...; "other" past them. */
const char *block_op_name(unsigned op);
extern const struct collector tcp_collector;
extern const struct collector cpu_collector;
extern const struct collector throttle_collector;
extern const struct collector drive_collector;
extern const struct collector profile_collector;
extern const struct collector deploy_watch_collector;

struct profile;

/* What a one-shot profile keeps: pid 0 and cgroup "" keep everything. */
struct profile_one_filter {
	uint32_t pid;			/* one process (its threads included) */
	char cgroup[256];		/* a cgroup path, e.g. /system.slice/nginx.service */
};

/*
 * Profile this host for duration_ns at hz without Redis (the one-shot
 * `faultline-probe profile`), keeping the samples only lets through (NULL:
 * all).  *out is initialised.  Returns 0 or -errno.
 */
int profile_oneshot(const struct probe_config *cfg, uint64_t duration_ns, uint32_t hz,
		    const struct profile_one_filter *only, struct profile *out, char *err,
		    size_t errlen);

/* drive collector, for tests: wait for its first scan. */
int drive_wait_scan(void *priv, uint64_t timeout_ns);

#endif
