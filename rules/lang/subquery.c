/*
 * subquery.c - PromQL subqueries, `max_over_time(rate(x[1m])[10m:1m])`:
 * the inner expression evaluated at every step of the range, and a range
 * function over what it gave; see eval_internal.h.
 *
 * Steps are PromQL's: multiples of the step (since the epoch, or a rule
 * test's start: eval_set_time_origin) from the
 * range's start up to the evaluation time, both ends included (Prometheus
 * 2.x, as Debian's promtool evaluates).  At a step each host's window ends
 * at its last point at or before it, within PromQL's 5-minute lookback;
 * the evaluation time is the newest window end (eval_at's time when given).  What the steps give is
 * pushed, one point per step, into columns of their own, so the range
 * functions are the very ones selectors use (range_fns.c); the parser
 * allows only those that need neither counter semantics nor extrapolation
 * to the range's edges (expr.c: subquery_fn_ok), which these columns hold
 * exactly.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules/lang/eval_internal.h"

#define LOOKBACK_MS (5 * 60 * 1000ULL)	/* PromQL's default lookback delta */

static uint64_t time_origin_ms;

void eval_set_time_origin(uint64_t ms)
{
	time_origin_ms = ms;
}
#define SUBQUERY_WIRE "subquery"
/*
 * What one subquery may hold: steps x elements (PromQL's query.max-samples
 * is 50 M per query; a rule runs every interval, so much less).
 */
#define SUBQUERY_MAX_POINTS 2000000

/* The step's results as one snapshot of the subquery's own columns. */
static int push_step(struct columns *cols, const struct value *v, uint64_t t, uint64_t keep_ms,
		     uint64_t seq, char *err, size_t errlen)
{
	struct snapshot s;
	int ret;

	snapshot_init(&s, "", t, 0, seq, 1);
	if (!v->is_vector) {
		struct series *ser = snapshot_add_labels(&s, SUBQUERY_WIRE, SERIES_GAUGE, NULL, 0);

		if (!ser)
			goto nomem;
		ser->gauge.last = ser->gauge.min = ser->gauge.max = ser->gauge.sum = v->scalar;
		ser->gauge.n = 1;
	}
	for (size_t i = 0; v->is_vector && i < v->n; i++) {
		struct series *ser;

		if (v->e[i].nlabels > SNAPSHOT_MAX_LABELS) {
			snapshot_free(&s);
			snprintf(err, errlen, "a subquery's inner expression gave an element of %d "
				 "labels, more than the %d a subquery keeps", v->e[i].nlabels,
				 SNAPSHOT_MAX_LABELS);
			return -EINVAL;
		}
		ser = snapshot_add_labels(&s, SUBQUERY_WIRE, SERIES_GAUGE, v->e[i].labels,
					  (uint32_t)v->e[i].nlabels);
		if (!ser)
			goto nomem;
		ser->gauge.last = ser->gauge.min = ser->gauge.max = ser->gauge.sum = v->e[i].v;
		ser->gauge.n = 1;
	}
	ret = columns_push(cols, &s, keep_ms, NULL);
	if (ret)
		goto nomem;
	return 0;
nomem:
	snapshot_free(&s);
	snprintf(err, errlen, "out of memory evaluating a subquery");
	return -ENOMEM;
}

int eval_subquery(const struct node *sq, enum range_fn fn, double q, const struct eval_in *in,
		  struct value *out, char *err, size_t errlen)
{
	uint64_t end = 0, start, first, step = sq->step_ns / 1000000, range = sq->range_ns / 1000000;
	uint64_t seq = 0;
	size_t points = 0;
	struct host_window *win, all;
	struct columns cols;
	int ret = 0;

	out->is_vector = 1;
	for (size_t h = 0; h < in->nh; h++)
		if (in->hosts[h].n) {
			uint64_t ts = columns_ts(in->hosts[h].c, in->hosts[h].n - 1);

			end = ts > end ? ts : end;
		}
	if (in->at_ms)
		end = in->at_ms;	/* eval_at: the query's time, not its newest point */
	if (eval_pinned(sq, in))
		end = eval_pinned(sq, in);	/* @: its own time */
	if (!end || sq->offset_ns / 1000000 >= end || !step)
		return 0;
	end -= sq->offset_ns / 1000000;
	start = end > range ? end - range : 0;
	if (start < time_origin_ms)
		start = time_origin_ms;	/* nothing is older than a test's start */
	first = start - (start - time_origin_ms) % step;
	if (first < start)
		first += step;
	win = calloc(in->nh + 1, sizeof(*win));
	if (!win) {
		snprintf(err, errlen, "out of memory evaluating a subquery");
		return -ENOMEM;
	}
	columns_init(&cols);
	for (uint64_t t = first; t <= end && !ret; t += step) {
		struct eval_in at = { win, 0, in->peers, in->at_ms ? t : 0, in->start_ms, in->end_ms,
				      in->stale_ms };
		struct value v = { 0 };

		/* each host as of t: its last point then, if it is recent enough */
		for (size_t h = 0; h < in->nh; h++) {
			struct host_window w = in->hosts[h];
			ssize_t last;

			if (w.n && eval_pinned(sq, in))
				w.n = columns_len(w.c);	/* pinned: past the step too */
			if (!w.n || (last = window_last_at(&w, t)) < 0 ||
			    t - columns_ts(w.c, (size_t)last) > LOOKBACK_MS)
				continue;
			w.n = (size_t)last + 1;
			win[at.nh++] = w;
		}
		ret = eval_node(sq->l, &at, &v, err, errlen);
		points += v.is_vector ? v.n : 1;
		if (!ret && points > SUBQUERY_MAX_POINTS) {
			snprintf(err, errlen, "%d:%d: the subquery holds more than %d points (steps "
				 "x elements): a longer step, a shorter range or fewer series",
				 sq->line, sq->col, SUBQUERY_MAX_POINTS);
			ret = -EINVAL;
		}
		if (!ret)
			ret = push_step(&cols, &v, t, range + step, ++seq, err, errlen);
		value_free(&v);
	}
	free(win);
	all = (struct host_window){ .host = "", .c = &cols, .n = columns_len(&cols) };
	for (uint32_t k = 0; !ret && all.n && k < cols.ncol; k++) {
		const struct series *def = &cols.col[k].def;
		struct label l[SNAPSHOT_MAX_LABELS];
		double x = eval_range_fn(fn, &all, k, sq->range_ns, q);
		int nl = 0;

		if (isnan(x))
			continue;	/* as a selector's: too few samples (deriv), no value */
		for (uint32_t i = 0; i < def->nlabels; i++) {
			l[nl].key = (char *)label_fn_intern(sq->lf, def->labels[i].key);
			l[nl].value = (char *)label_fn_intern(sq->lf, def->labels[i].value);
			if (!l[nl].key || !l[nl].value) {
				snprintf(err, errlen, "a subquery's results have more than %d distinct "
					 "label names and values", LABEL_FN_MAX_VALUES);
				ret = -EINVAL;
				break;
			}
			nl++;
		}
		if (!ret && value_push(out, l, nl, x))
			ret = -ENOMEM;
	}
	columns_free(&cols);
	return ret;
}
