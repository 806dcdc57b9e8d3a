/*
 * prom.h - render a snapshot in the Prometheus text exposition format.
 *
 * Names become faultline_<name with dots as underscores>; counters get
 * _total, nanosecond metrics become _seconds (values and bucket bounds
 * scaled), byte metrics _bytes.  Series of one name are grouped under one
 * HELP/TYPE, as the format requires.
 *
 * Histograms are Prometheus histograms with a fixed bucket set per metric,
 * the same in every series, every scrape and every host, so `sum by (le)`
 * and histogram_quantile() aggregate them as Prometheus expects: every
 * bound always present, cumulative and monotone, then +Inf, _sum and
 * _count.  The defaults are powers of two: for seconds 1 us .. 16.8 s (25
 * bounds), for bytes 512 B .. 8 MiB (15 bounds); a probe can set its own
 * per metric (probe.yaml metrics_buckets).  A bucket counts the
 * observations whose fleet-layout bucket (hist_layout.h) starts at or
 * below the bound, so a count is exact up to that layout's bucket width at
 * the bound (at most 6.25 % above it); a power-of-two value (a 4096-byte
 * I/O) always counts at its own power-of-two bound.
 */
#ifndef FL_PROM_H
#define FL_PROM_H

#include "model/snapshot.h"
#include "core/strbuf.h"

#define PROM_MAX_BOUNDS 64
#define PROM_MAX_CUSTOM 16

/* Bucket bounds (in the exposed unit: seconds, bytes) set per metric. */
struct prom_buckets {
	struct {
		char metric[64];		/* the metric, faultline_block_latency_seconds */
		double bound[PROM_MAX_BOUNDS];	/* strictly increasing, > 0 */
		int n;
	} m[PROM_MAX_CUSTOM];
	int n;
};

/* Append s rendered as Prometheus text to out; b (NULL: defaults) sets bounds. */
void prom_render(const struct snapshot *s, const struct prom_buckets *b, struct strbuf *out);

/*
 * Append s to out in Prometheus' protobuf exposition (length-delimited
 * io.prometheus.client.MetricFamily messages, proto/metrics.proto): the
 * same families, names, labels and values as prom_render, and every
 * histogram as a native histogram (schema 4; prom_proto.c states the
 * error) besides its classic buckets.  Returns 0 or -ENOMEM.
 */
int prom_render_proto(const struct snapshot *s, const struct prom_buckets *b, struct strbuf *out);

/* The content type of prom_render_proto's output, as a scraper asks for it. */
#define PROM_PROTO_CONTENT_TYPE "application/vnd.google.protobuf; " \
	"proto=io.prometheus.client.MetricFamily; encoding=delimited"

/* Series ser's exposed name (into name), scale (wire x scale = base unit) and help. */
void prom_metric_name(const struct series *ser, char *name, size_t len, double *scale,
		      const char **help);

/* The bounds metric is exposed with under b (NULL: defaults); returns how many. */
int prom_bounds(const struct prom_buckets *b, const char *metric, const double **bound);

#endif
