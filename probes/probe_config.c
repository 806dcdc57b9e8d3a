/*
 * probe_config.c - load etc/probe.yaml (and the same text embedded as the
 * default) into struct probe_config; see probe.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "catalog.h"
#include "log.h"
#include "timeutil.h"

#define TOP_KEYS "host, interval, redis, redis_timeout, metrics_addr, bpf, log_level, " \
		 "labels, deploy_watch, retention, spool, block, drive, profile, metrics_buckets"

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
 * metrics_buckets: {block.latency: [0.0005, 0.001, 0.005]}: /metrics bucket
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
		int slot;

		((struct cfg_node *)kv)->used = 1;
		if (!m || m->kind != SERIES_HISTOGRAM)
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

int probe_config_parse(struct probe_config *cfg, const char *name, const char *text,
		       size_t len, char *err, size_t errlen)
{
	const struct cfg_node *root, *ret_map, *spool, *block, *drive, *prof;
	static const char *const tier_keys[STORE_TIERS] = { "s1", "s60", "s3600" };
	struct cfg c;
	int ret;

	ret = cfg_parse(&c, name, text, len, err, errlen);
	if (ret)
		return ret;
	root = c.root;
	if ((ret = cfg_string(&c, root, "host", &cfg->host, err, errlen)) ||
	    (ret = cfg_duration(&c, root, "interval", &cfg->interval_ns, err, errlen)) ||
	    (ret = cfg_string(&c, root, "redis", &cfg->redis_url, err, errlen)) ||
	    (ret = cfg_duration(&c, root, "redis_timeout", &cfg->redis_timeout_ns, err, errlen)) ||
	    (ret = cfg_string(&c, root, "metrics_addr", &cfg->metrics_addr, err, errlen)) ||
	    (ret = cfg_bool(&c, root, "bpf", &cfg->bpf, err, errlen)) ||
	    (ret = cfg_string(&c, root, "log_level", &cfg->log_level, err, errlen)) ||
	    (ret = load_string_map(&c, root, "labels", SNAPSHOT_MAX_LABELS, &cfg->labels,
				   &cfg->nlabels, err, errlen)) ||
	    (ret = load_string_map(&c, root, "deploy_watch", 64, &cfg->deploy_watch,
				   &cfg->ndeploy_watch, err, errlen)))
		goto out;
	if ((ret = cfg_map(&c, root, "retention", &ret_map, err, errlen)))
		goto out;
	for (int i = 0; i < STORE_TIERS; i++)
		if ((ret = cfg_duration(&c, ret_map, tier_keys[i], &cfg->retention_ns[i], err,
					errlen)))
			goto out;
	if ((ret = cfg_check_unknown(&c, ret_map, "s1, s60, s3600", err, errlen)))
		goto out;
	if ((ret = cfg_map(&c, root, "spool", &spool, err, errlen)) ||
	    (ret = cfg_uint(&c, spool, "max_snapshots", 1, 10000000, &cfg->spool_max_snapshots,
			    err, errlen)) ||
	    (ret = cfg_uint(&c, spool, "max_bytes", 4096, 1ULL << 40, &cfg->spool_max_bytes, err,
			    errlen)) ||
	    (ret = cfg_string(&c, spool, "path", &cfg->spool_path, err, errlen)) ||
	    (ret = cfg_check_unknown(&c, spool, "max_snapshots, max_bytes, path", err, errlen)))
		goto out;
	if ((ret = cfg_map(&c, root, "block", &block, err, errlen)) ||
	    (ret = cfg_bool(&c, block, "enabled", &cfg->block_enabled, err, errlen)) ||
	    (ret = cfg_uint(&c, block, "max_devices", 1, 4096, &cfg->block_max_devices, err,
			    errlen)) ||
	    (ret = cfg_uint(&c, block, "slots", 1, 1024, &cfg->block_slots, err, errlen)) ||
	    (ret = cfg_check_unknown(&c, block, "enabled, max_devices, slots", err, errlen)))
		goto out;
	if ((ret = cfg_map(&c, root, "drive", &drive, err, errlen)) ||
	    (ret = cfg_duration(&c, drive, "interval", &cfg->drive_interval_ns, err, errlen)) ||
	    (ret = cfg_duration(&c, drive, "timeout", &cfg->drive_timeout_ns, err, errlen)) ||
	    (ret = cfg_string(&c, drive, "smartctl", &cfg->smartctl, err, errlen)) ||
	    (ret = cfg_check_unknown(&c, drive, "interval, timeout, smartctl", err, errlen)))
		goto out;
	if ((ret = cfg_map(&c, root, "profile", &prof, err, errlen)) ||
	    (ret = cfg_bool(&c, prof, "enabled", &cfg->profile_enabled, err, errlen)) ||
	    (ret = cfg_uint(&c, prof, "rate", 1, 999, &cfg->profile_rate_hz, err, errlen)) ||
	    (ret = cfg_duration(&c, prof, "window", &cfg->profile_window_ns, err, errlen)) ||
	    (ret = cfg_uint(&c, prof, "hourly_top", 10, 100000, &cfg->profile_hourly_top, err,
			    errlen)) ||
	    (ret = cfg_check_unknown(&c, prof, "enabled, rate, window, hourly_top", err, errlen)))
		goto out;
	if ((ret = load_buckets(&c, root, &cfg->buckets, err, errlen)))
		goto out;
	if ((ret = cfg_check_unknown(&c, root, TOP_KEYS, err, errlen)))
		goto out;
	if (cfg->interval_ns < 10 * NSEC_PER_MSEC) {
		ret = cfg_error(&c, cfg_get(root, "interval"), err, errlen,
				"interval: must be at least 10ms");
		goto out;
	}
	if (cfg->host[0] && !store_host_valid(cfg->host)) {
		ret = cfg_error(&c, cfg_get(root, "host"), err, errlen,
				"host: '%s' has characters other than letters, digits, . _ - :",
				cfg->host);
		goto out;
	}
	{
		enum log_level lv;

		if (log_parse_level(cfg->log_level, &lv)) {
			ret = cfg_error(&c, cfg_get(root, "log_level"), err, errlen,
					"log_level: expected error, warn, info or debug, found '%s'",
					cfg->log_level);
			goto out;
		}
	}
out:
	cfg_free(&c);
	return ret;
}

int probe_config_defaults(struct probe_config *cfg, char *err, size_t errlen)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->host = strdup("");
	cfg->redis_url = strdup("");
	cfg->metrics_addr = strdup("");
	cfg->log_level = strdup("info");
	cfg->smartctl = strdup("/usr/sbin/smartctl");
	cfg->spool_path = strdup("");
	if (!cfg->host || !cfg->redis_url || !cfg->metrics_addr || !cfg->log_level ||
	    !cfg->smartctl || !cfg->spool_path)
		return -ENOMEM;
	return probe_config_parse(cfg, "<built-in etc/probe.yaml>", probe_default_config,
				  strlen(probe_default_config), err, errlen);
}

int probe_config_load(struct probe_config *cfg, const char *path, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int ret;

	ret = cfg_read_file(path, &text, &len, err, errlen);
	if (ret)
		return ret;
	ret = probe_config_parse(cfg, path, text, len, err, errlen);
	free(text);
	return ret;
}

void probe_config_free(struct probe_config *cfg)
{
	free(cfg->host);
	free(cfg->redis_url);
	free(cfg->metrics_addr);
	free(cfg->log_level);
	free(cfg->smartctl);
	free(cfg->spool_path);
	free_string_map(&cfg->labels, &cfg->nlabels);
	free_string_map(&cfg->deploy_watch, &cfg->ndeploy_watch);
	memset(cfg, 0, sizeof(*cfg));
}
