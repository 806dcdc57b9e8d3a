/*
 * minute_eval.c - range functions over a host's 1-minute rollups.
 *
 * Baselines judge a deploy on 15+ minutes before and after it.  Rather
 * than keep that much 1 s history per host (thinned, wave 2's first cut),
 * the engine reads the probe's 1-minute tier (fl:{H}:s60) when it judges,
 * and evaluates the rule's expression on it (rules/engine/baseline.c).  A rollup
 * keeps what the range functions below need, exactly: a gauge's sum and
 * sample count, min, max and last; a counter's increase; a histogram's
 * increase (lib/model/rollup.h).  So over whole minutes
 *
 *   avg_over_time   = sum of sums / sum of counts
 *   min/max_over_time, sum_over_time, count_over_time, last_over_time
 *   increase        = sum of increases;  rate = that / the minutes' seconds
 *   quantile(q, h)  = the quantile of the minutes' merged increases
 *
 * are the values those functions give over the minutes' 1 s snapshots (up
 * to where a counter's boundary interval falls: a minute counts the
 * interval that ends in it), except that a minute's histogram is coarse
 * (hist_coarsen: its quantiles within 12.5 % of the 1 s tier's).  Both
 * sides of a baseline read minutes, so they compare like with like.  Other functions (deriv, changes, irate...)
 * need the points themselves, so a baseline expression that uses them is
 * refused when the rules load (expr_minute_check), never evaluated wrong.
 */
#include "rules/lang/eval_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>


/* The series of rollup m with def's identity (and kind), or NULL. */
static const struct series *minute_series(const struct snapshot *m, const struct series *def)
{
	for (uint32_t i = 0; i < m->nseries; i++)
		if (m->series[i].id == def->id && m->series[i].kind == def->kind)
			return &m->series[i];
	return NULL;
}

double minute_range_fn(enum expr_fn fn, const struct host_window *w, const struct series *def,
		       uint64_t range_ns, double q)
{
	const struct snapshot *m = w->minutes;
	uint64_t now = m[w->nminutes - 1].ts_ms, from = now - range_ns / 1000000;
	uint64_t inc = 0, span_ms = 0;
	double sum = 0, n = 0, mn = INFINITY, mx = -INFINITY, last = NAN;
	struct histogram acc, scratch;
	int any = 0;

	memset(&acc, 0, sizeof(acc));
	/* the minutes whose end lies in (now - range, now], newest first */
	for (size_t i = w->nminutes; i-- > 0 && m[i].ts_ms > from;) {
		const struct series *s = minute_series(&m[i], def);

		if (!s)
			continue;
		switch (def->kind) {
		case SERIES_GAUGE:
			if (!any)
				last = s->gauge.last;
			sum += s->gauge.sum;
			n += (double)s->gauge.n;
			mn = fmin(mn, s->gauge.min);
			mx = fmax(mx, s->gauge.max);
			break;
		case SERIES_COUNTER:
			inc += s->counter.increase;
			span_ms += m[i].interval_ms;
			break;
		case SERIES_HISTOGRAM:
			hist_merge(&acc, series_hist(s, &scratch));
			break;
		}
		any = 1;
	}
	if (!any)
		return NAN;
	switch (fn) {
	case FN_AVG_OVER_TIME:
		return n ? sum / n : NAN;
	case FN_MIN_OVER_TIME:
		return mn;
	case FN_MAX_OVER_TIME:
		return mx;
	case FN_SUM_OVER_TIME:
		return sum;
	case FN_COUNT_OVER_TIME:
		return n;
	case FN_LAST_OVER_TIME:
		return last;
	case FN_INCREASE:
		return (double)inc;
	case FN_RATE:
		return span_ms ? (double)inc / ((double)span_ms / 1000.0) : NAN;
	case FN_QUANTILE:
		return acc.count ? (double)hist_quantile(&acc, q) : NAN;
	default:
		return NAN;	/* refused by expr_minute_check */
	}
}

int minute_merge_hist(const struct node *sel, const struct host_window *w, uint64_t to_ms,
		      uint64_t span_ms, struct histogram *out)
{
	struct histogram scratch;
	int merged = 0;

	for (size_t i = 0; i < w->nminutes; i++) {
		const struct snapshot *m = &w->minutes[i];

		if (m->ts_ms > to_ms || m->ts_ms + span_ms <= to_ms)
			continue;
		for (uint32_t k = 0; k < m->nseries; k++)
			if (m->series[k].kind == SERIES_HISTOGRAM &&
			    eval_sel_matches(sel, m, &m->series[k])) {
				hist_merge(out, series_hist(&m->series[k], &scratch));
				merged++;
			}
	}
	return merged;
}
