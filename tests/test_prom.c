/*
 * test_prom.c - Prometheus text exposition of a snapshot.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/prom.h"
#include "metrics.pb-c.h"
#include "model/histogram.h"
#include "core/promtext.h"

static const char *count_of(const char *hay, const char *needle, int *n)
{
	const char *p = hay;

	*n = 0;
	while ((p = strstr(p, needle))) {
		(*n)++;
		p++;
	}
	return hay;
}

Test(prom, renders_counters_gauges_and_histograms)
{
	struct snapshot s;
	struct strbuf out = STRBUF_INIT;
	struct series *h;
	int n;

	snapshot_init(&s, "h", 1, 1000, 0, 1);
	snapshot_add_counter(&s, "tcp.in_csum_errors", 7, NULL);
	snapshot_add_gauge(&s, "tcp.curr_estab", 12, NULL);
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read",
			 NULL);
	hist_record_n(h->hist, 1000, 3);	/* 1 us */
	hist_record_n(h->hist, 2000000, 1);	/* 2 ms */
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sd\"b", "op", "write",
			 NULL);
	hist_record(h->hist, 5);
	prom_render(&s, NULL, &out);
	const char *t = strbuf_str(&out);

	cr_assert(strstr(t, "# TYPE faultline_tcp_in_csum_errors_total counter\n"
			    "faultline_tcp_in_csum_errors_total 7\n"), "%s", t);
	cr_assert(strstr(t, "faultline_tcp_curr_estab 12\n"), "%s", t);
	count_of(t, "# TYPE faultline_block_latency_seconds histogram", &n);
	cr_assert_eq(n, 1, "one TYPE line per metric name");
	cr_assert(strstr(t, "faultline_block_latency_seconds_bucket{device=\"sda\",op=\"read\","
			    "le=\"+Inf\"} 4\n"), "%s", t);
	cr_assert(strstr(t, "faultline_block_latency_seconds_count{device=\"sda\",op=\"read\"} 4"));
	cr_assert(strstr(t, "faultline_block_latency_seconds_sum{device=\"sda\",op=\"read\"} "
			    "0.002003\n"), "%s", t);
	/* the fixed bounds: 1 us holds the three 1 us reads, 2.048 ms all four */
	cr_assert(strstr(t, "faultline_block_latency_seconds_bucket{device=\"sda\",op=\"read\","
			    "le=\"1e-06\"} 3\n"), "%s", t);
	cr_assert(strstr(t, "faultline_block_latency_seconds_bucket{device=\"sda\",op=\"read\","
			    "le=\"0.001024\"} 3\n"), "%s", t);
	cr_assert(strstr(t, "le=\"0.002048\"} 4\n"), "%s", t);
	cr_assert(strstr(t, "le=\"0.001024\"} 3\n"), "%s", t);
	cr_assert(strstr(t, "device=\"sd\\\"b\""), "label values are escaped: %s", t);
	strbuf_release(&out);
	snapshot_free(&s);
}

/* The (le, value) pairs of name_bucket lines whose labels contain `match`, summed by le. */
struct by_le {
	double le[128], v[128];
	int n;
};

static void sum_by_le(const char *text, const char *name, struct by_le *out)
{
	const char *p = text;
	char prefix[128];

	snprintf(prefix, sizeof(prefix), "%s_bucket{", name);
	out->n = 0;
	while ((p = strstr(p, prefix))) {
		const char *le = strstr(p, "le=\""), *end = strchr(p, '\n');
		double bound, v;
		int k;

		cr_assert(le && end && le < end);
		bound = strncmp(le + 4, "+Inf", 4) ? strtod(le + 4, NULL) : INFINITY;
		v = strtod(strchr(le, '}') + 1, NULL);
		for (k = 0; k < out->n && out->le[k] != bound; k++)
			;
		if (k == out->n) {
			cr_assert_lt(out->n, 128);
			out->le[out->n] = bound;
			out->v[out->n++] = 0;
		}
		out->v[k] += v;
		p = end;
	}
}

/* Prometheus' histogram_quantile: linear interpolation inside the bucket holding rank q. */
static double histogram_quantile(double q, const struct by_le *b)
{
	double rank = q * b->v[b->n - 1], lower = 0, below = 0;

	for (int i = 0; i < b->n; i++) {
		if (b->v[i] >= rank) {
			if (isinf(b->le[i]))
				return lower;
			return lower + (b->le[i] - lower) * (rank - below) / (b->v[i] - below);
		}
		lower = b->le[i];
		below = b->v[i];
	}
	return NAN;
}

/*
 * Histograms Prometheus can aggregate: two series with different data
 * carry the same bounds, cumulative and monotone, so
 * histogram_quantile(0.99, sum by (le) (...)) lands in the right bucket.
 * (Sparse per-series bounds, as before, made sum by (le) mix bounds that
 * only some series had: 10.5 ms when no op's p99 exceeded 2 ms.)
 */
Test(prom, histograms_aggregate_across_series)
{
	struct snapshot s;
	struct strbuf out = STRBUF_INIT;
	struct series *r, *w;
	struct by_le b;
	double p99;
	int lines_r = 0, lines_w = 0;

	snapshot_init(&s, "h", 1, 1000, 0, 1);
	r = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read",
			 NULL);
	w = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "write",
			 NULL);
	for (int i = 0; i < 10000; i++)
		hist_record(r->hist, 500000 + (uint64_t)i * 100);	/* 0.5 .. 1.5 ms */
	for (int i = 0; i < 1000; i++)
		hist_record(w->hist, 1800000 + (uint64_t)i * 100);	/* 1.8 .. 1.9 ms */
	prom_render(&s, NULL, &out);
	count_of(strbuf_str(&out), "op=\"read\",le=", &lines_r);
	count_of(strbuf_str(&out), "op=\"write\",le=", &lines_w);
	cr_assert_eq(lines_r, 26, "25 bounds and +Inf for every series");
	cr_assert_eq(lines_w, 26);
	sum_by_le(strbuf_str(&out), "faultline_block_latency_seconds", &b);
	cr_assert_eq(b.n, 26);
	for (int i = 1; i < b.n; i++)
		cr_assert_geq(b.v[i], b.v[i - 1], "cumulative buckets go down at le=%g", b.le[i]);
	cr_assert_eq(b.v[b.n - 1], 11000);
	p99 = histogram_quantile(0.99, &b);
	/* the true merged p99 is ~1.89 ms: in (1.024, 2.048] ms */
	cr_assert(p99 > 0.001024 && p99 <= 0.002048, "p99 %g s", p99);
	strbuf_release(&out);
	snapshot_free(&s);
}

/* Bounds set per metric replace the defaults, for that metric only. */
Test(prom, custom_bounds)
{
	struct prom_buckets pb = { .n = 1 };
	struct snapshot s;
	struct strbuf out = STRBUF_INIT;
	struct series *h;
	const char *t;

	snprintf(pb.m[0].metric, sizeof(pb.m[0].metric), "faultline_block_latency_seconds");
	pb.m[0].bound[0] = 0.001;
	pb.m[0].bound[1] = 0.01;
	pb.m[0].n = 2;
	snapshot_init(&s, "h", 1, 1000, 0, 1);
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "op", "read", NULL);
	hist_record_n(h->hist, 500000, 2);
	hist_record_n(h->hist, 5000000, 1);
	hist_record_n(h->hist, 50000000, 1);
	h = snapshot_add(&s, "block.size", SERIES_HISTOGRAM, "op", "read", NULL);
	hist_record(h->hist, 4096);
	prom_render(&s, &pb, &out);
	t = strbuf_str(&out);
	cr_assert(strstr(t, "faultline_block_latency_seconds_bucket{op=\"read\",le=\"0.001\"} 2\n"
			    "faultline_block_latency_seconds_bucket{op=\"read\",le=\"0.01\"} 3\n"
			    "faultline_block_latency_seconds_bucket{op=\"read\",le=\"+Inf\"} 4\n"),
		  "%s", t);
	cr_assert(strstr(t, "faultline_block_size_bytes_bucket{op=\"read\",le=\"4096\"} 1\n"), "%s",
		  t);
	strbuf_release(&out);
	snapshot_free(&s);
}

/*
 * Label values from configs (a receiver's name) and hosts are escaped as
 * the text format wants, by the one writer every /metrics uses.
 */
Test(prom, label_values_are_escaped)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_adds(&sb, "m{");
	promtext_label(&sb, "receiver", "on \"call\"\\\nteam", 1);
	promtext_label(&sb, "integration", "webhook", 0);
	strbuf_adds(&sb, "} 1\n");
	cr_assert_str_eq(strbuf_str(&sb),
			 "m{receiver=\"on \\\"call\\\"\\\\\\nteam\",integration=\"webhook\"} 1\n");
	strbuf_release(&sb);
}

/* Split delimited MetricFamily messages; returns how many (at most max). */
static int unpack_families(const struct strbuf *b, Io__Prometheus__Client__MetricFamily **out,
			   int max)
{
	size_t off = 0;
	int n = 0;

	while (off < b->len && n < max) {
		uint64_t len = 0;
		int shift = 0;

		while (off < b->len) {
			uint8_t c = (uint8_t)b->buf[off++];

			len |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
			if (!(c & 0x80))
				break;
		}
		cr_assert_leq(off + len, b->len, "a message runs past the end");
		out[n] = io__prometheus__client__metric_family__unpack(NULL, len,
								      (const uint8_t *)b->buf + off);
		cr_assert_not_null(out[n], "message %d does not unpack", n);
		n++;
		off += len;
	}
	return n;
}

/*
 * The protobuf exposition: the same families as the text, and each
 * histogram as a native one (schema 4) whose counts add up, whose zero
 * bucket holds the zeros, and whose quantiles are within the stated 7.6 %
 * of the fleet layout's; classic buckets equal the text's.
 */
Test(prom, protobuf_exposition_with_native_histograms)
{
	struct snapshot s;
	struct series *h;
	struct strbuf text = STRBUF_INIT, pb = STRBUF_INIT;
	Io__Prometheus__Client__MetricFamily *mf[8];
	int n, seen_hist = 0;

	snapshot_init(&s, "h", 1000, 1000, 1, 1);
	snapshot_add_counter(&s, "tcp.in_csum_errors", 42, NULL);
	snapshot_add_gauge(&s, "drive.wear_used_pct", 95, "device", "sda", NULL);
	h = snapshot_add(&s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "write",
			 NULL);
	hist_record_n(h->hist, 5000000, 900);		/* 5 ms */
	hist_record_n(h->hist, 50000000, 95);		/* 50 ms */
	hist_record_n(h->hist, 0, 5);
	prom_render(&s, NULL, &text);
	cr_assert_eq(prom_render_proto(&s, NULL, &pb), 0);
	n = unpack_families(&pb, mf, 8);
	cr_assert_eq(n, 3, "one family per metric");
	for (int i = 0; i < n; i++) {
		Io__Prometheus__Client__MetricFamily *f = mf[i];

		cr_assert_eq(f->n_metric, 1);
		cr_assert(strstr(text.buf, f->name), "%s is not in the text exposition", f->name);
		if (!strcmp(f->name, "faultline_tcp_in_csum_errors_total")) {
			cr_assert_eq(f->type, IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER);
			cr_assert_eq(f->metric[0]->counter->value, 42);
		} else if (!strcmp(f->name, "faultline_drive_wear_used_ratio")) {
			cr_assert_eq(f->metric[0]->gauge->value, 0.95, "base units, divided exactly");
			cr_assert_str_eq(f->metric[0]->label[0]->name, "device");
		} else {
			const Io__Prometheus__Client__Histogram *x = f->metric[0]->histogram;
			uint64_t total = x->zero_count, cum = 0;
			int64_t c = 0;
			int k = 0;
			double p50 = 0, p99 = 0;
			char want[160];

			seen_hist = 1;
			cr_assert_str_eq(f->name, "faultline_block_latency_seconds");
			cr_assert_eq(f->type, IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM);
			cr_assert_eq(x->sample_count, 1000);
			cr_assert_eq(x->schema, 4);
			cr_assert_eq(x->zero_count, 5, "the zeros are the zero bucket");
			cr_assert_eq(x->zero_threshold, 0);
			/* decode spans and deltas; the quantile is the bucket's upper bound */
			for (size_t sp = 0, d = 0; sp < x->n_positive_span; sp++) {
				k += x->positive_span[sp]->offset;
				for (uint32_t j = 0; j < x->positive_span[sp]->length; j++, k++) {
					double upper = pow(2, (double)k / 16);

					c += x->positive_delta[d++];
					cr_assert_gt(c, 0, "an empty bucket inside a span");
					total += (uint64_t)c;
					cum += (uint64_t)c;
					if (!p50 && cum + x->zero_count >= 500)
						p50 = upper;
					if (!p99 && cum + x->zero_count >= 990)
						p99 = upper;
				}
			}
			cr_assert_eq(total, 1000, "native counts add up to %llu",
				     (unsigned long long)total);
			cr_assert(fabs(p50 - 0.005) / 0.005 < 0.076, "native p50 %g vs 5 ms", p50);
			cr_assert(fabs(p99 - 0.05) / 0.05 < 0.076, "native p99 %g vs 50 ms", p99);
			/* classic buckets: the text's, bound for bound */
			cr_assert_eq(x->n_bucket, 25);
			for (size_t b = 0; b < x->n_bucket; b++) {
				snprintf(want, sizeof(want), "le=\"%.9g\"} %llu\n", x->bucket[b]->upper_bound,
					 (unsigned long long)x->bucket[b]->cumulative_count);
				cr_assert(strstr(text.buf, want), "text lacks %s", want);
			}
		}
		io__prometheus__client__metric_family__free_unpacked(f, NULL);
	}
	cr_assert(seen_hist);
	strbuf_release(&text);
	strbuf_release(&pb);
	snapshot_free(&s);
}
