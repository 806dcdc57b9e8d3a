/*
 * prom_proto.c - Prometheus' protobuf exposition, with native histograms;
 * see prom.h (prom_render_proto).
 *
 * A native histogram of schema 4 has 16 exponential buckets per power of
 * two: bucket k holds (2^((k-1)/16), 2^(k/16)], about 4.4 % wide.  Each
 * fleet-layout bucket (hist_layout.h, at most 3.125 % from its midpoint)
 * goes whole into the native bucket of its midpoint, so a quantile read
 * from the native histogram is within about 7.6 % of the same quantile
 * read from the fleet layout; observations of exactly 0 are the zero
 * bucket (threshold 0).  The classic buckets of the text format are sent
 * as well, so a scraper that keeps classic histograms gets the same ones.
 */
#include "probes/prom.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.pb-c.h"
#include "model/catalog.h"
#include "model/hist_layout.h"
#include "model/histogram.h"

#define NATIVE_SCHEMA 4

/* The native bucket index of x > 0 under NATIVE_SCHEMA. */
static int native_index(double x)
{
	return (int)ceil(log2(x) * (1 << NATIVE_SCHEMA) - 1e-9);
}

/* The midpoint of layout bucket i, in the wire's unit. */
static double layout_mid(uint32_t i)
{
	double lo = (double)hist_bucket_lower(i);

	if (i < HIST_SUB)
		return lo;	/* exact */
	return lo + ((double)hist_bucket_lower(i + 1) - lo) / 2;
}

/*
 * Fill h's native part from histogram d (wire unit x scale = base unit):
 * spans and delta-encoded counts, allocated into spans/deltas (the
 * caller frees them).  Returns 0 or -ENOMEM.
 */
static int native_fill(Io__Prometheus__Client__Histogram *h, const struct histogram *d,
		       double scale, Io__Prometheus__Client__BucketSpan **spans,
		       Io__Prometheus__Client__BucketSpan ***span_ptrs, int64_t **deltas)
{
	int lo = 0, hi = -1;
	int64_t *count;
	size_t nspan = 0, ndelta = 0;
	int64_t prev = 0;
	int last = 0;

	h->has_schema = h->has_zero_threshold = h->has_zero_count = 1;
	h->schema = NATIVE_SCHEMA;
	h->zero_threshold = 0;
	h->zero_count = d->buckets[0];
	for (uint32_t i = 1; i < HIST_BUCKETS; i++)
		if (d->buckets[i]) {
			int k = native_index(catalog_to_base(layout_mid(i), scale));

			if (hi < lo) {
				lo = hi = k;
			} else {
				lo = k < lo ? k : lo;
				hi = k > hi ? k : hi;
			}
		}
	if (hi < lo)
		return 0;	/* nothing but zeros */
	count = calloc((size_t)(hi - lo + 1), sizeof(*count));
	*spans = calloc((size_t)(hi - lo + 1), sizeof(**spans));
	*span_ptrs = calloc((size_t)(hi - lo + 1), sizeof(**span_ptrs));
	*deltas = calloc((size_t)(hi - lo + 1), sizeof(**deltas));
	if (!count || !*spans || !*span_ptrs || !*deltas) {
		free(count);
		return -ENOMEM;
	}
	for (uint32_t i = 1; i < HIST_BUCKETS; i++)
		if (d->buckets[i])
			count[native_index(catalog_to_base(layout_mid(i), scale)) - lo] +=
				(int64_t)d->buckets[i];
	/* runs of non-empty buckets become spans; offsets count the gaps */
	for (int k = lo; k <= hi; k++) {
		if (!count[k - lo])
			continue;
		if (!nspan || k != last + 1) {
			Io__Prometheus__Client__BucketSpan *sp = &(*spans)[nspan];

			io__prometheus__client__bucket_span__init(sp);
			sp->has_offset = sp->has_length = 1;
			sp->offset = nspan ? k - last - 1 : k;
			(*span_ptrs)[nspan++] = sp;
		}
		(*spans)[nspan - 1].length++;
		(*deltas)[ndelta++] = count[k - lo] - prev;
		prev = count[k - lo];
		last = k;
	}
	free(count);
	h->n_positive_span = nspan;
	h->positive_span = *span_ptrs;
	h->n_positive_delta = ndelta;
	h->positive_delta = *deltas;
	return 0;
}

/* Append m as a length-delimited message (varint size, then the message). */
static int append_delimited(struct strbuf *out, const Io__Prometheus__Client__MetricFamily *m)
{
	size_t len = io__prometheus__client__metric_family__get_packed_size(m), n = 0;
	uint8_t *buf = malloc(len + 10);

	if (!buf)
		return -ENOMEM;
	for (size_t v = len; ; v >>= 7) {
		buf[n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		if (v < 0x80)
			break;
	}
	n += io__prometheus__client__metric_family__pack(m, buf + n);
	strbuf_add(out, buf, n);
	free(buf);
	return 0;
}

/* The metric of series ser in m (labels, value or histogram); its allocations freed by metric_free. */
static int metric_fill(Io__Prometheus__Client__Metric *m, const struct series *ser, double scale,
		       const struct prom_buckets *b, const char *name)
{
	m->n_label = ser->nlabels;
	m->label = calloc(ser->nlabels + 1, sizeof(*m->label));
	if (!m->label)
		return -ENOMEM;
	for (uint32_t i = 0; i < ser->nlabels; i++) {
		Io__Prometheus__Client__LabelPair *lp = calloc(1, sizeof(*lp));

		if (!lp)
			return -ENOMEM;
		io__prometheus__client__label_pair__init(lp);
		lp->name = ser->labels[i].key;
		lp->value = ser->labels[i].value;
		m->label[i] = lp;
	}
	if (ser->kind == SERIES_COUNTER) {
		m->counter = calloc(1, sizeof(*m->counter));
		if (!m->counter)
			return -ENOMEM;
		io__prometheus__client__counter__init(m->counter);
		m->counter->has_value = 1;
		m->counter->value = catalog_to_base((double)ser->counter.value, scale);
	} else if (ser->kind == SERIES_GAUGE) {
		m->gauge = calloc(1, sizeof(*m->gauge));
		if (!m->gauge)
			return -ENOMEM;
		io__prometheus__client__gauge__init(m->gauge);
		m->gauge->has_value = 1;
		m->gauge->value = catalog_to_base(ser->gauge.last, scale);
	} else {
		Io__Prometheus__Client__Histogram *h = calloc(1, sizeof(*h));
		struct histogram *d = malloc(sizeof(*d));
		const struct histogram *src;
		const double *bound;
		int nb = prom_bounds(b, name, &bound);
		uint64_t cum[PROM_MAX_BOUNDS];

		if (!h || !d) {
			free(h);
			free(d);
			return -ENOMEM;
		}
		m->histogram = h;
		io__prometheus__client__histogram__init(h);
		src = series_hist(ser, d);
		h->has_sample_count = h->has_sample_sum = 1;
		h->sample_count = src->count;
		h->sample_sum = catalog_to_base((double)src->sum, scale);
		h->bucket = calloc((size_t)nb + 1, sizeof(*h->bucket));
		if (!h->bucket) {
			free(d);
			return -ENOMEM;
		}
		hist_cumulative(src, scale, bound, nb, cum);
		for (int k = 0; k < nb; k++) {
			Io__Prometheus__Client__Bucket *bk = calloc(1, sizeof(*bk));

			if (!bk) {
				free(d);
				return -ENOMEM;
			}
			io__prometheus__client__bucket__init(bk);
			bk->has_cumulative_count = bk->has_upper_bound = 1;
			bk->cumulative_count = cum[k];
			bk->upper_bound = bound[k];
			h->bucket[h->n_bucket++] = bk;
		}
		{
			/* the span structs go with the span pointer array (freed in metric_free) */
			Io__Prometheus__Client__BucketSpan *spans = NULL, **ptrs = NULL;
			int64_t *deltas = NULL;
			int ret = native_fill(h, src, scale, &spans, &ptrs, &deltas);

			if (ret || !h->n_positive_span) {
				free(spans);
				free(ptrs);
				free(deltas);
				h->n_positive_span = h->n_positive_delta = 0;
				h->positive_span = NULL;
				h->positive_delta = NULL;
			}
			free(d);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static void metric_free(Io__Prometheus__Client__Metric *m)
{
	for (size_t i = 0; i < m->n_label; i++)
		free(m->label[i]);
	free(m->label);
	free(m->counter);
	free(m->gauge);
	if (m->histogram) {
		for (size_t i = 0; i < m->histogram->n_bucket; i++)
			free(m->histogram->bucket[i]);
		free(m->histogram->bucket);
		if (m->histogram->n_positive_span)
			free(m->histogram->positive_span[0]);	/* the span array itself */
		free(m->histogram->positive_span);
		free(m->histogram->positive_delta);
		free(m->histogram);
	}
	free(m);
}

static int by_name(const void *a, const void *b)
{
	const struct series *x = *(const struct series *const *)a;
	const struct series *y = *(const struct series *const *)b;

	return strcmp(x->name, y->name);
}

int prom_render_proto(const struct snapshot *s, const struct prom_buckets *b, struct strbuf *out)
{
	const struct series **order = malloc(s->nseries * sizeof(*order) + 1);
	int ret = 0;

	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nseries; i++)
		order[i] = &s->series[i];
	qsort(order, s->nseries, sizeof(*order), by_name);
	for (uint32_t i = 0, e; i < s->nseries && !ret; i = e) {
		Io__Prometheus__Client__MetricFamily mf = IO__PROMETHEUS__CLIENT__METRIC_FAMILY__INIT;
		char name[256];
		const char *help;
		double scale;

		for (e = i + 1; e < s->nseries && !strcmp(order[e]->name, order[i]->name); e++)
			;
		prom_metric_name(order[i], name, sizeof(name), &scale, &help);
		mf.name = name;
		mf.help = (char *)help;
		mf.has_type = 1;
		mf.type = order[i]->kind == SERIES_COUNTER ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__COUNTER :
			  order[i]->kind == SERIES_GAUGE ? IO__PROMETHEUS__CLIENT__METRIC_TYPE__GAUGE :
			  IO__PROMETHEUS__CLIENT__METRIC_TYPE__HISTOGRAM;
		mf.metric = calloc(e - i, sizeof(*mf.metric));
		if (!mf.metric) {
			ret = -ENOMEM;
			break;
		}
		for (uint32_t k = i; k < e && !ret; k++) {
			Io__Prometheus__Client__Metric *m = calloc(1, sizeof(*m));

			if (!m) {
				ret = -ENOMEM;
				break;
			}
			io__prometheus__client__metric__init(m);
			mf.metric[mf.n_metric++] = m;
			ret = metric_fill(m, order[k], scale, b, name);
		}
		if (!ret)
			ret = append_delimited(out, &mf);
		for (size_t k = 0; k < mf.n_metric; k++)
			metric_free(mf.metric[k]);
		free(mf.metric);
	}
	free(order);
	return ret;
}
