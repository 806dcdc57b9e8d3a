/*
 * range_fns.c - the range functions of rule expressions (rate, increase,
 * *_over_time, deriv, predict_linear, ...) over one series of a host's
 * window of 1 s points, as PromQL defines them; see eval_internal.h.
 */
#include "rules/lang/eval_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* PromQL's quantile of n sorted values: linear between the closest ranks. */
double quantile_sorted(const double *v, size_t n, double q)
{
	double rank, w;
	size_t lo, hi;

	if (!n || isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	rank = q * (double)(n - 1);
	lo = (size_t)rank;
	hi = lo + 1 < n ? lo + 1 : lo;
	w = rank - (double)lo;
	return v[lo] * (1 - w) + v[hi] * w;
}

/* Index of the last point of window w at or before t, or -1. */
ssize_t window_last_at(const struct host_window *w, uint64_t t)
{
	long i = columns_last_at(w->c, t);

	return i >= (long)w->n ? (ssize_t)w->n - 1 : (ssize_t)i;
}

/*
 * Histogram column k's d = value at point a - value at point b (both
 * held), or d = the value at a when some bucket went down (a restart).
 */
void window_hist_delta(struct histogram *d, const struct columns *c, uint32_t k, size_t a,
			  size_t b)
{
	struct histogram o;

	columns_hist(c, k, a, d);
	columns_hist(c, k, b, &o);
	hist_subtract(d, d, &o);
}

/*
 * delta and quantile read only a window's first and last samples: find the
 * first by binary search and a walk to the first point that holds the
 * series, instead of walking every point in between.  Returns NAN when
 * the window holds fewer than two samples.
 */
static double ends_fn(enum range_fn fn, const struct host_window *w, uint32_t k, uint64_t from,
		      double q)
{
	const struct columns *c = w->c;
	size_t end = w->n - 1, first = end;
	struct histogram d;

	for (size_t i = (size_t)(window_last_at(w, from - 1) + 1); i < end; i++)
		if (columns_has(c, k, i)) {
			first = i;
			break;
		}
	if (first == end)
		return NAN;
	if (fn == RF_DELTA)
		return columns_scalar(c, k, end, NULL) - columns_scalar(c, k, first, NULL);
	if (c->col[k].def.kind != SERIES_HISTOGRAM)
		return NAN;
	window_hist_delta(&d, c, k, end, first);
	return d.count ? (double)hist_quantile(&d, q) : NAN;
}

/*
 * Apply a range function to column k of one host (held at the window's
 * end): walk back over the points inside the range, down one array.
 */
double eval_range_fn(enum range_fn fn, const struct host_window *w, uint32_t k,
		       uint64_t range_ns, double q)
{
	const struct columns *c = w->c;
	size_t end = w->n - 1;
	uint64_t now = columns_ts(c, end), from = now - range_ns / 1000000;
	int counter = c->col[k].def.kind == SERIES_COUNTER, have_first = 0;
	uint64_t first_ts = 0, prev_ts = 0, second_ts = 0, first_u = 0;
	double acc = 0, mn = INFINITY, mx = -INFINITY, sum = 0, sumsq = 0, second = NAN;
	double prev_v = NAN, first_v = NAN;
	double st = 0, stt = 0, stv = 0;	/* least squares, t in s relative to now */
	double *all = NULL;			/* quantile_over_time's values */
	size_t cnt = 0, changes = 0, resets = 0, cap = 0;

	if (fn == RF_DELTA || fn == RF_QUANTILE)
		return ends_fn(fn, w, k, from, q);
	for (size_t i = end + 1; i-- > 0;) {
		uint64_t ts = columns_ts(c, i);
		int has;
		double v;

		if (ts < from)
			break;
		v = columns_scalar(c, k, i, &has);
		if (!has)
			continue;
		if (!cnt) {
			prev_v = v;	/* the newest sample */
			prev_ts = ts;
		}
		if (have_first && counter) {
			uint64_t x = columns_counter(c, k, i);

			acc += first_u >= x ? (double)(first_u - x) : (double)first_u;
		}
		/* first is the next newer sample: did the value change, or go down? */
		if (have_first) {
			changes += first_v != v;
			resets += first_v < v;
		}
		have_first = 1;
		first_v = v;
		first_u = counter ? columns_counter(c, k, i) : 0;
		first_ts = ts;

		if (cnt == 1) {
			second = v;	/* the sample before the newest */
			second_ts = ts;
		}
		if (fn == RF_DERIV || fn == RF_PREDICT) {
			double t = ((double)ts - (double)now) / 1000.0;

			st += t;
			stt += t * t;
			stv += t * v;
		}
		if (fn == RF_QOT) {
			if (ARRAY_GROW(all, cap, cnt + 1, 64)) {
				free(all);
				return NAN;
			}
			all[cnt] = v;
		}
		if (v < mn)
			mn = v;
		if (v > mx)
			mx = v;
		sum += v;
		sumsq += v * v;
		cnt++;
	}
	if (!cnt)
		return NAN;
	switch (fn) {
	case RF_IRATE:
	case RF_IDELTA: {
		double d;

		if (cnt < 2 || prev_ts <= second_ts)
			return NAN;
		d = prev_v - second;
		if (fn == RF_IDELTA)
			return d;
		if (counter && prev_v < second)
			d = prev_v;	/* a reset: the counter restarted from 0 */
		return d / ((double)(prev_ts - second_ts) / 1000.0);
	}
	case RF_DERIV:
	case RF_PREDICT: {
		/* least squares over (t, v); predict_linear's horizon comes as q */
		double n = (double)cnt, den = n * stt - st * st, slope, icpt;

		if (cnt < 2 || den == 0)
			return NAN;
		slope = (n * stv - st * sum) / den;
		icpt = (sum - slope * st) / n;	/* the fit's value now (t = 0) */
		return fn == RF_DERIV ? slope : icpt + slope * q;
	}
	case RF_PRESENT:
		return 1;
	case RF_QOT: {
		double r;

		qsort(all, cnt, sizeof(*all), double_cmp);
		r = quantile_sorted(all, cnt, q);
		free(all);
		return r;
	}
	case RF_INCREASE:
		return cnt > 1 ? acc : NAN;
	case RF_RATE:
		return cnt > 1 && now > first_ts ? acc / ((double)(now - first_ts) / 1000.0) : NAN;
	case RF_AVG:
		return sum / (double)cnt;
	case RF_MIN:
		return mn;
	case RF_MAX:
		return mx;
	case RF_SUM:
		return sum;
	case RF_COUNT:
		return (double)cnt;
	case RF_LAST:
		return prev_v;
	case RF_STDDEV:
	case RF_STDVAR: {
		/* population variance, as PromQL's */
		double mean = sum / (double)cnt, var = sumsq / (double)cnt - mean * mean;

		var = var > 0 ? var : 0;
		return fn == RF_STDVAR ? var : sqrt(var);
	}
	case RF_CHANGES:
		return (double)changes;
	case RF_RESETS:
		return (double)resets;
	case RF_DELTA:		/* ends_fn */
	case RF_QUANTILE:
	case RF_NONE:
		break;
	}
	return NAN;
}
