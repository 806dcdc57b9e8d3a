/*
 * probe_config.c - load etc/probe.yaml (and the same text embedded as the
 * default) into struct probe_config; see probe.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/probe.h"
#include "core/config_schema.h"
#include "model/catalog.h"
#include "core/log.h"
#include "core/timeutil.h"


static void free_string_map(struct label **arr, uint32_t *n)
{
	for (uint32_t i = 0; i < *n; i++) {
		free((*arr)[i].key);
		free((*arr)[i].value);
	}
	free(*arr);
	*arr = NULL;
	*n = 0;
}

/*
 * A map of strings under key (labels, deploy_watch) into *arr / *n,
 * replacing what was there.  Returns 0 or -EINVAL / -ENOMEM.
 */
static int load_string_map(const struct cfg *c, const struct cfg_node *map, const char *key,
			   uint32_t max, struct label **arr, uint32_t *n, char *err, size_t errlen)
{
	const struct cfg_node *lm;
	int ret = cfg_map(c, map, key, &lm, err, errlen);

	if (ret || !lm)
		return ret;
	free_string_map(arr, n);
	if (lm->nchild > max)
		return cfg_error(c, lm, err, errlen, "%s: at most %u entries", key, max);
	*arr = calloc(lm->nchild + 1, sizeof(**arr));
	if (!*arr)
		return -ENOMEM;
	for (size_t i = 0; i < lm->nchild; i++) {
		const struct cfg_node *e = &lm->child[i];

		((struct cfg_node *)e)->used = 1;
		if (e->type != CFG_SCALAR || !e->value[0])
			return cfg_error(c, e, err, errlen, "%s.%s: expected a string value", key,
					 e->key);
		if (!e->key[0] || strlen(e->key) > SNAPSHOT_MAX_STR ||
		    strlen(e->value) > SNAPSHOT_MAX_STR)
			return cfg_error(c, e, err, errlen, "%s: keys must be non-empty, keys and "
					 "values at most %d bytes", key, SNAPSHOT_MAX_STR);
		(*arr)[i].key = strdup(e->key);
		(*arr)[i].value = strdup(e->value);
		(*n)++;
	}
	return 0;
}

/*
 * metrics_buckets: {faultline_block_latency_seconds: [0.0005, 0.001, 0.005]}: /metrics bucket
 * bounds per histogram metric, in its exposed unit (seconds, bytes),
 * strictly increasing.  A metric given again replaces its bounds.
 */
static int load_buckets(const struct cfg *c, const struct cfg_node *root,
			struct prom_buckets *b, char *err, size_t errlen)
{
	const struct cfg_node *map;
	int ret = cfg_map(c, root, "metrics_buckets", &map, err, errlen);

	if (ret || !map)
		return ret;
	for (size_t i = 0; i < map->nchild; i++) {
		const struct cfg_node *kv = &map->child[i];
		const struct metric_info *m = catalog_find(kv->key);
		char why[200];
		int slot;

		((struct cfg_node *)kv)->used = 1;
		if (!m)
			return cfg_error(c, kv, err, errlen, "metrics_buckets: %s",
					 catalog_unknown(kv->key, why, sizeof(why)));
		if (m->kind != SERIES_HISTOGRAM)
			return cfg_error(c, kv, err, errlen, "metrics_buckets: '%s' is not a "
					 "histogram metric (`faultline metrics` lists them)", kv->key);
		if (kv->type != CFG_SEQ || !kv->nchild || kv->nchild > PROM_MAX_BOUNDS)
			return cfg_error(c, kv, err, errlen, "metrics_buckets.%s: expected a list of "
					 "1 to %d bounds, such as [0.001, 0.01, 0.1]", kv->key,
					 PROM_MAX_BOUNDS);
		for (slot = 0; slot < b->n && strcmp(b->m[slot].metric, kv->key); slot++)
			;
		if (slot == b->n) {
			if (b->n == PROM_MAX_CUSTOM)
				return cfg_error(c, kv, err, errlen, "metrics_buckets: at most %d "
						 "metrics", PROM_MAX_CUSTOM);
			b->n++;
		}
		snprintf(b->m[slot].metric, sizeof(b->m[slot].metric), "%s", kv->key);
		b->m[slot].n = 0;
		for (size_t k = 0; k < kv->nchild; k++) {
			const struct cfg_node *x = &kv->child[k];
			char *end = NULL;
			double v = x->type == CFG_SCALAR && x->value ? strtod(x->value, &end) : NAN;

			if (!end || end == x->value || *end || !(v > 0) || !isfinite(v) ||
			    (k && v <= b->m[slot].bound[k - 1]))
				return cfg_error(c, x, err, errlen, "metrics_buckets.%s: expected "
						 "positive numbers in increasing order (in %s)", kv->key,
						 m->unit == UNIT_BYTES ? "bytes" : "seconds");
			b->m[slot].bound[b->m[slot].n++] = v;
		}
	}
	return 0;
}

static int parse_labels(const struct cfg *c, const struct cfg_node *map, const char *key,
			void *base, char *err, size_t errlen)
{
	struct probe_config *cfg = base;

	return load_string_map(c, map, key, SNAPSHOT_MAX_LABELS, &cfg->labels, &cfg->nlabels, err,
			       errlen);
}

static int parse_deploy_watch(const struct cfg *c, const struct cfg_node *map, const char *key,
			      void *base, char *err, size_t errlen)
{
	struct probe_config *cfg = base;

	return load_string_map(c, map, key, 64, &cfg->deploy_watch, &cfg->ndeploy_watch, err,
			       errlen);
}

static int parse_buckets(const struct cfg *c, const struct cfg_node *map, const char *key,
			 void *base, char *err, size_t errlen)
{
	(void)key;
	return load_buckets(c, map, &((struct probe_config *)base)->buckets, err, errlen);
}

static int parse_log_level(const struct cfg *c, const struct cfg_node *map, const char *key,
			   void *base, char *err, size_t errlen)
{
	struct probe_config *cfg = base;
	enum log_level lv;
	int ret = cfg_string(c, map, key, &cfg->log_level, err, errlen);

	if (!ret && log_parse_level(cfg->log_level, &lv))
		ret = cfg_error(c, cfg_get(map, key), err, errlen,
				"%s: expected error, warn, info or debug, found '%s'", key,
				cfg->log_level);
	return ret;
}

/* 0 (frame pointers only) or enough rows for libc within a file's share (half). */
static int parse_unwind_rows(const struct cfg *c, const struct cfg_node *map, const char *key,
			     void *base, char *err, size_t errlen)
{
	struct probe_config *cfg = base;
	int ret = cfg_uint(c, map, key, 0, 1ULL << 26, &cfg->profile_unwind_rows, err, errlen);

	if (!ret && cfg->profile_unwind_rows && cfg->profile_unwind_rows < 131072)
		ret = cfg_error(c, cfg_get(map, key), err, errlen,
				"%s: %llu rows cannot hold python3's (~65,000) within the half one "
				"file may take; 0 turns DWARF unwinding off, else at least 131072",
				key, (unsigned long long)cfg->profile_unwind_rows);
	return ret;
}

static int parse_host(const struct cfg *c, const struct cfg_node *map, const char *key,
		      void *base, char *err, size_t errlen)
{
	struct probe_config *cfg = base;
	int ret = cfg_string(c, map, key, &cfg->host, err, errlen);

	if (!ret && cfg->host[0] && !store_host_valid(cfg->host))
		ret = cfg_error(c, cfg_get(map, key), err, errlen,
				"%s: '%s' has characters other than letters, digits, . _ - :", key,
				cfg->host);
	return ret;
}

/* remote_write.tier: one of the tiers the probe keeps. */
static int parse_rw_tier(const struct cfg *c, const struct cfg_node *map, const char *key,
			 void *base, char *err, size_t errlen)
{
	struct probe_config *cfg = base;
	uint64_t *t = &cfg->remote_write.tier_ns;
	int ret = cfg_duration(c, map, key, t, err, errlen);

	if (!ret && *t != NSEC_PER_SEC && *t != 60 * NSEC_PER_SEC && *t != 3600 * NSEC_PER_SEC)
		ret = cfg_error(c, cfg_get(map, key), err, errlen,
				"%s: expected 1s, 1m or 1h (a tier the probe keeps)", key);
	return ret;
}

/* remote_write.url: empty, or an http(s) URL. */
static int parse_rw_url(const struct cfg *c, const struct cfg_node *map, const char *key,
			void *base, char *err, size_t errlen)
{
	struct probe_config *cfg = base;
	char **u = &cfg->remote_write.url;
	int ret = cfg_string(c, map, key, u, err, errlen);

	if (!ret && (*u)[0] && strncmp(*u, "http://", 7) && strncmp(*u, "https://", 8))
		ret = cfg_error(c, cfg_get(map, key), err, errlen,
				"%s: expected an http:// or https:// URL (the receiver's "
				"/api/v1/write), found '%s'", key, *u);
	return ret;
}

#define PC struct probe_config
#define DAY (86400 * NSEC_PER_SEC)
/* etc/probe.yaml, key by key: parsing, the unknown-key message and the reference. */
const struct cfg_field probe_config_schema[] = {
	CFG_CUSTOM_AT("host", parse_host, "string", CFG_F_STRING, PC, host, "Name of this host in Redis keys, /metrics and alerts; "
		   "empty: the system hostname"),
	CFG_DURATION("interval", PC, interval_ns, 10 * NSEC_PER_MSEC, 3600 * NSEC_PER_SEC,
		     "One snapshot of every collector per interval"),
	CFG_DURATION("page_watch", PC, page_watch_ns, 0, 3600 * NSEC_PER_SEC,
		     "Between snapshots, look this often at the counters pages hang on "
		     "(checksum and error counters, drive health) and flush a snapshot at "
		     "once when one moves after a quiet interval; 0s: off"),
	CFG_STRING("redis", PC, redis_url, "Where snapshots go: redis://..., unix:///...sock or redis-cluster://h1:p,h2:p"),
	CFG_DURATION("redis_timeout", PC, redis_timeout_ns, NSEC_PER_MSEC, 600 * NSEC_PER_SEC,
		     "Connect and command timeout for Redis"),
	CFG_STRING("metrics_addr", PC, metrics_addr, "Prometheus /metrics listen address; "
		   "empty: off"),
	CFG_STRING("web_config", PC, web_config, "TLS and basic auth for /metrics: a web config "
		   "file as Prometheus exporters take; empty: plain HTTP"),
	CFG_CUSTOM("metrics_buckets", parse_buckets, "map of number lists", "/metrics bucket bounds per histogram "
		   "metric, in its exposed unit"),
	CFG_BOOL("bpf", PC, bpf, "Load the BPF collectors (false: /proc-based ones only)"),
	CFG_CUSTOM_AT("log_level", parse_log_level, "string", CFG_F_STRING, PC, log_level, "error, warn, info or debug"),
	CFG_CUSTOM("labels", parse_labels, "map of strings", "Labels this host reports about itself "
		   "({rack: r12, switch: sw3})"),
	CFG_CUSTOM("deploy_watch", parse_deploy_watch, "map of strings", "service -> executable whose build-id "
		   "change marks a deploy"),
	CFG_DURATION("retention.s1", PC, retention_ns[0], (60 * NSEC_PER_SEC), 365 * DAY,
		     "How long 1 s snapshots are kept in Redis (a real host: the minute under "
		     "way as entries of 2.4-6.5 KB, ended minutes as chunks of ~18-35 KB; "
		     "0.3-0.6 MB at 15m)"),
	CFG_DURATION("retention.s60", PC, retention_ns[1], (60 * NSEC_PER_SEC), 3650 * DAY,
		     "How long 1 min rollups are kept (a real host: ~0.8-0.95 KB a minute once "
		     "chunked, ~1.2-1.5 MB a day)"),
	CFG_DURATION("retention.s3600", PC, retention_ns[2], (60 * NSEC_PER_SEC), 3650 * DAY,
		     "How long 1 h rollups are kept (a real host: ~2.2-4.7 KB an hour as an "
		     "entry, ~1.4 KB in a day's chunk; ~0.3 MB at 7d, ~3.1 MB at 90d, the "
		     "default before the 4 MB budget; longer history: remote_write)"),
	CFG_DURATION("retention.p10", PC, retention_p10_ns, (60 * NSEC_PER_SEC), 365 * DAY,
		     "How long 10 s profile windows (and I/O stacks) are kept (a real host: "
		     "4-11 KB a window as an entry, ~1.8 KB in its 10 minutes' chunk under a "
		     "test run; ~1.1 MB an hour with I/O stacks)"),
	CFG_DURATION("retention.p3600", PC, retention_p3600_ns, (3600 * NSEC_PER_SEC), 3650 * DAY,
		     "How long hourly profiles are kept (a real host: ~8-9 KB an hour at "
		     "hourly_top 200, less in a day's chunk; ~0.5 MB at 7d)"),
	CFG_CUSTOM_AT("remote_write.url", parse_rw_url, "string", CFG_F_STRING, PC, remote_write.url,
		      "Prometheus remote write receiver (http(s)://.../api/v1/write); empty: off"),
	CFG_CUSTOM_AT("remote_write.tier", parse_rw_tier, "duration", CFG_F_DURATION, PC,
		      remote_write.tier_ns, "Which tier is written: one sample per series "
		      "every 1s, 1m or 1h"),
	CFG_DURATION("remote_write.timeout", PC, remote_write.timeout_ns, 100 * NSEC_PER_MSEC,
		     600 * NSEC_PER_SEC, "One request, answer included"),
	CFG_UINT("remote_write.queue_samples", PC, remote_write.queue_samples, 100, 10000000,
		 "Samples held while the receiver is away; the oldest are dropped past it"),
	CFG_UINT("remote_write.max_samples_per_send", PC, remote_write.max_samples_per_send, 1,
		 1000000, "Samples in one request at most"),
	CFG_DURATION("remote_write.min_backoff", PC, remote_write.min_backoff_ns, NSEC_PER_MSEC,
		     600 * NSEC_PER_SEC, "First wait before a retry"),
	CFG_DURATION("remote_write.max_backoff", PC, remote_write.max_backoff_ns, NSEC_PER_MSEC,
		     3600 * NSEC_PER_SEC, "Longest wait between retries"),
	CFG_STRING("remote_write.bearer_token_file", PC, remote_write.bearer_token_file,
		   "File holding a bearer token sent as Authorization; empty: none"),
	CFG_STRING("remote_write.basic_auth.username", PC, remote_write.basic_auth_username,
		   "Basic auth user; empty: none"),
	CFG_STRING("remote_write.basic_auth.password_file", PC,
		   remote_write.basic_auth_password_file, "File holding the basic auth password"),
	CFG_STRING("remote_write.tls.ca_file", PC, remote_write.ca_file,
		   "CA certificates for an https receiver; empty: the system's"),
	CFG_UINT("spool.max_snapshots", PC, spool_max_snapshots, 1, 10000000,
		 "Snapshots held while Redis is away"),
	CFG_UINT("spool.max_bytes", PC, spool_max_bytes, 4096, 1ULL << 40,
		 "Bytes held while Redis is away"),
	CFG_STRING("spool.path", PC, spool_path, "Where the spool is saved at exit; "
		   "empty: memory only"),
	CFG_BOOL("block.enabled", PC, block_enabled, "The block I/O collector"),
	CFG_UINT("block.max_devices", PC, block_max_devices, 1, 4096, "Whole disks tracked"),
	CFG_UINT("block.slots", PC, block_slots, 1, 1024, "Per-CPU slots of the kernel-side "
		 "table (capped at the CPUs)"),
	CFG_DURATION("drive.interval", PC, drive_interval_ns, NSEC_PER_SEC, 7 * DAY,
		     "How often every drive's SMART data is read"),
	CFG_DURATION("drive.timeout", PC, drive_timeout_ns, NSEC_PER_SEC, 3600 * NSEC_PER_SEC,
		     "A drive read that takes longer is killed and reported"),
	CFG_STRING("drive.smartctl", PC, smartctl, "smartctl, for drives libatasmart and "
		   "NVMe do not cover"),
	CFG_BOOL("profile.enabled", PC, profile_enabled, "The continuous CPU profiler"),
	CFG_UINT("profile.rate", PC, profile_rate_hz, 1, 999, "Samples per second per CPU"),
	CFG_DURATION("profile.window", PC, profile_window_ns, NSEC_PER_SEC, 3600 * NSEC_PER_SEC,
		     "One profile window per period goes to fl:{H}:p10"),
	CFG_UINT("profile.hourly_top", PC, profile_hourly_top, 10, 100000,
		 "Stacks kept in each hourly profile (the rest summed into [other]; 200: a "
		 "busy hour ~8-9 KB, 500: ~16-18 KB)"),
	CFG_DURATION("profile.io_interval", PC, profile_io_interval_ns, 0, 3600 * NSEC_PER_SEC,
		     "I/O stacks: the stacks of at most one block request per CPU per interval "
		     "and where its submitter then waits, to fl:{H}:io10 and fl:{H}:iowait10 "
		     "(0: off)"),
	CFG_CUSTOM_AT("profile.unwind_rows", parse_unwind_rows, "integer", CFG_F_UINT, PC,
		      profile_unwind_rows, "Rows of call frame information held in the kernel "
		      "for DWARF unwinding (16 bytes each): 0 (user stacks by frame pointers "
		      "only) or 131072 .. 67108864"),
	CFG_STRING("profile.unwind_cache", PC, profile_unwind_cache, "Folder where built unwind "
		   "tables are kept by build id, so a restart reads libc's rather than building "
		   "it again; empty: none"),
	CFG_UINT("profile.symbol_bytes", PC, profile_symbol_bytes, 1 << 20, 1ULL << 32,
		 "Bytes of function names (ELF symbols) of sampled binaries held at most; the "
		 "least recently used files' are dropped past it and read again when sampled"),
};
const size_t probe_config_nschema = sizeof(probe_config_schema) / sizeof(probe_config_schema[0]);
#undef PC
#undef DAY

int probe_config_parse(struct probe_config *cfg, const char *name, const char *text,
		       size_t len, char *err, size_t errlen)
{
	struct cfg c;
	int ret;

	ret = cfg_parse(&c, name, text, len, err, errlen);
	if (ret)
		return ret;
	ret = cfg_apply(&c, probe_config_schema, probe_config_nschema, cfg, err, errlen);
	cfg_free(&c);
	return ret;
}

int probe_config_defaults(struct probe_config *cfg, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->host = strdup("");
	cfg->redis_url = strdup("");
	cfg->metrics_addr = strdup("");
	cfg->web_config = strdup("");
	cfg->log_level = strdup("info");
	cfg->smartctl = strdup("/usr/sbin/smartctl");
	cfg->spool_path = strdup("");
	cfg->profile_unwind_cache = strdup("");
	cfg->remote_write.url = strdup("");
	cfg->remote_write.bearer_token_file = strdup("");
	cfg->remote_write.basic_auth_username = strdup("");
	cfg->remote_write.basic_auth_password_file = strdup("");
	cfg->remote_write.ca_file = strdup("");
	if (!cfg->remote_write.url || !cfg->remote_write.bearer_token_file ||
	    !cfg->remote_write.basic_auth_username || !cfg->remote_write.basic_auth_password_file ||
	    !cfg->remote_write.ca_file)
		return -ENOMEM;
	if (!cfg->host || !cfg->redis_url || !cfg->metrics_addr || !cfg->web_config ||
	    !cfg->log_level || !cfg->smartctl || !cfg->spool_path || !cfg->profile_unwind_cache)
		return -ENOMEM;
	return probe_config_parse(cfg, "<built-in etc/probe.yaml>", probe_default_config,
				  strlen(probe_default_config), err, errlen);
}

int probe_config_load(struct probe_config *cfg, const char *path, char *err, size_t errlen)
{
	struct cfg c;
	int ret = cfg_load_file(&c, path, err, errlen);

	if (ret)
		return ret;
	ret = cfg_apply(&c, probe_config_schema, probe_config_nschema, cfg, err, errlen);
	cfg_free(&c);
	return ret;
}

void probe_config_free(struct probe_config *cfg)
{
	free(cfg->host);
	free(cfg->redis_url);
	free(cfg->metrics_addr);
	free(cfg->web_config);
	free(cfg->log_level);
	free(cfg->smartctl);
	free(cfg->spool_path);
	free(cfg->profile_unwind_cache);
	free(cfg->remote_write.url);
	free(cfg->remote_write.bearer_token_file);
	free(cfg->remote_write.basic_auth_username);
	free(cfg->remote_write.basic_auth_password_file);
	free(cfg->remote_write.ca_file);
	free_string_map(&cfg->labels, &cfg->nlabels);
	free_string_map(&cfg->deploy_watch, &cfg->ndeploy_watch);
	memset(cfg, 0, sizeof(*cfg));
}
