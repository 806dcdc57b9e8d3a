/*
 * expr_fns.c - the functions and aggregations of the rule language, by
 * name: arity, which argument is a range selector; the PromQL functions
 * faultline does not have, with hints; which of them the 1-minute tier
 * answers exactly (baselines); see expr.h.
 */
#include "rules/lang/expr.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/catalog.h"

static const struct expr_fn_info fns[] = {
	{ "rate", FN_RATE, 1, 1, 0 },
	{ "increase", FN_INCREASE, 1, 1, 0 },
	{ "delta", FN_DELTA, 1, 1, 0 },
	{ "avg_over_time", FN_AVG_OVER_TIME, 1, 1, 0 },
	{ "min_over_time", FN_MIN_OVER_TIME, 1, 1, 0 },
	{ "max_over_time", FN_MAX_OVER_TIME, 1, 1, 0 },
	{ "quantile", FN_QUANTILE, 2, 2, 0 },
	{ "sum_over_time", FN_SUM_OVER_TIME, 1, 1, 0 },
	{ "count_over_time", FN_COUNT_OVER_TIME, 1, 1, 0 },
	{ "last_over_time", FN_LAST_OVER_TIME, 1, 1, 0 },
	{ "stddev_over_time", FN_STDDEV_OVER_TIME, 1, 1, 0 },
	{ "stdvar_over_time", FN_STDVAR_OVER_TIME, 1, 1, 0 },
	{ "changes", FN_CHANGES, 1, 1, 0 },
	{ "resets", FN_RESETS, 1, 1, 0 },
	{ "irate", FN_IRATE, 1, 1, 0 },
	{ "idelta", FN_IDELTA, 1, 1, 0 },
	{ "deriv", FN_DERIV, 1, 1, 0 },
	{ "predict_linear", FN_PREDICT_LINEAR, 2, 1, 0 },
	{ "present_over_time", FN_PRESENT_OVER_TIME, 1, 1, 0 },
	{ "quantile_over_time", FN_QUANTILE_OVER_TIME, 2, 2, 0 },
	{ "abs", FN_ABS, 1, 0, 0 },
	{ "ceil", FN_CEIL, 1, 0, 0 },
	{ "floor", FN_FLOOR, 1, 0, 0 },
	{ "round", FN_ROUND, 1, 0, 0 },
	{ "sqrt", FN_SQRT, 1, 0, 0 },
	{ "exp", FN_EXP, 1, 0, 0 },
	{ "ln", FN_LN, 1, 0, 0 },
	{ "log2", FN_LOG2, 1, 0, 0 },
	{ "log10", FN_LOG10, 1, 0, 0 },
	{ "clamp_min", FN_CLAMP_MIN, 2, 0, 0 },
	{ "clamp_max", FN_CLAMP_MAX, 2, 0, 0 },
	{ "clamp", FN_CLAMP, 3, 0, 0 },
	{ "peer_ratio", FN_PEER_RATIO, 2, 0, 0 },
	{ "sum", FN_SUM, 1, 0, 1 },
	{ "min", FN_MIN, 1, 0, 1 },
	{ "max", FN_MAX, 1, 0, 1 },
	{ "avg", FN_AVG, 1, 0, 1 },
	{ "count", FN_COUNT, 1, 0, 1 },
	{ "group", FN_GROUP, 1, 0, 1 },
	{ "stddev", FN_STDDEV, 1, 0, 1 },
	{ "stdvar", FN_STDVAR, 1, 0, 1 },
	{ "absent", FN_ABSENT, 1, 0, 0 },
	{ "scalar", FN_SCALAR, 1, 0, 0 },
	{ "histogram_quantile", FN_HISTOGRAM_QUANTILE, 2, 0, 0 },
	{ "label_replace", FN_LABEL_REPLACE, 5, 0, 0 },
	{ "label_join", FN_LABEL_JOIN, -3, 0, 0 },
	{ "time", FN_TIME, 0, 0, 0 },
	{ "vector", FN_VECTOR, 1, 0, 0 },
	{ "topk", FN_TOPK, 2, 0, 1 },
	{ "bottomk", FN_BOTTOMK, 2, 0, 1 },
};

/* quantile by (...) (q, v) and quantile(q, instant vector): PromQL's aggregation */
static const struct expr_fn_info quantile_agg = { "quantile", FN_QUANTILE_AGG, 2, 0, 1 };

const struct expr_fn_info *expr_fn_quantile_agg(void)
{
	return &quantile_agg;
}

/* Hints for PromQL functions faultline does not have. */
static const struct {
	const char *name, *hint;
} promql_fns[] = {
	{ "absent_over_time", "a host that stops reporting pages HostSilent on its own" },
	{ "timestamp", NULL },
	{ "count_values", NULL },
	{ "sort", NULL },
	{ "sort_desc", NULL }, { "holt_winters", NULL }, { "day_of_week", NULL },
	{ "hour", NULL }, { "minute", NULL }, { "month", NULL }, { "year", NULL },
};

void expr_fn_unknown(const char *name, char *msg, size_t len)
{
	size_t off;

	for (size_t i = 0; i < sizeof(promql_fns) / sizeof(promql_fns[0]); i++)
		if (!strcmp(promql_fns[i].name, name)) {
			snprintf(msg, len, "PromQL's %s() is not supported by faultline's rule "
				 "language%s%s", name, promql_fns[i].hint ? "; " : "",
				 promql_fns[i].hint ? promql_fns[i].hint : "");
			return;
		}
	off = (size_t)snprintf(msg, len, "unknown function '%s' (the functions are: ", name);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]) && off < len; i++)
		off += (size_t)snprintf(msg + off, len - off, "%s%s", i ? ", " : "", fns[i].name);
	if (off < len)
		snprintf(msg + off, len - off, ")");
}

const struct expr_fn_info *expr_fn_find(const char *name)
{
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (!strcmp(fns[i].name, name))
			return &fns[i];
	return NULL;
}

/* Whether range function fn reads a rollup of a kind-series exactly. */
static int minute_fn_ok(enum expr_fn fn, enum series_kind kind)
{
	switch (fn) {
	case FN_AVG_OVER_TIME:
	case FN_MIN_OVER_TIME:
	case FN_MAX_OVER_TIME:
	case FN_SUM_OVER_TIME:
	case FN_COUNT_OVER_TIME:
	case FN_LAST_OVER_TIME:
		return kind == SERIES_GAUGE;
	case FN_RATE:
	case FN_INCREASE:
		return kind == SERIES_COUNTER;
	case FN_QUANTILE:
		return kind == SERIES_HISTOGRAM;
	default:
		return 0;
	}
}

/*
 * expr_rollup_check's walk: who reads which rollups, for the messages ("a
 * baseline reads the 1-minute tier"); host_local: whether the value must
 * be each host's own (a baseline's).
 */
static int rollup_check(const struct node *n, const char *who, int host_local,
			char *const *names, int nnames, const struct node **at, char *why,
			size_t len)
{
	if (!n)
		return 0;
	*at = n;
	if (host_local && !expr_host_local(n)) {
		snprintf(why, len, "a baseline's value is each host's own: no aggregation, "
			 "peer_ratio, absent, scalar, time or on/ignoring in it");
		return -EINVAL;
	}
	if (n->t == N_SUBQ) {
		snprintf(why, len, "%s, where a subquery's steps are not kept", who);
		return -EINVAL;
	}
	if ((n->t == N_SEL || n->t == N_SUBQ) && n->at && !host_local) {
		snprintf(why, len, "%s: %s, where `@` cannot pin a selector", n->metric ?
			 n->metric : "@", who);
		return -EINVAL;
	}
	if (n->t == N_SEL) {
		if (n->hist_part || n->offset_ns) {
			snprintf(why, len, "%s: %s, which has no %s", n->metric, who,
				 n->offset_ns ? "offset" : "_bucket/_sum/_count");
			return -EINVAL;
		}
		for (int i = 0; !n->offset_ns && i < nnames; i++)
			if (!strcmp(n->wire, names[i]))
				return 0;	/* the reader's own series, at each step */
		if (!catalog_find_wire(n->wire)) {
			snprintf(why, len, "%s is a recording rule's output, which only the rules "
				 "engine's recent history has: %s; "
				 "write the recorded expression itself", n->metric, who);
			return -EINVAL;
		}
		return 0;	/* instant: the minute's last value; ranges: under their call */
	}
	for (int i = 0; n->t == N_CALL && i < n->nargs; i++) {
		const struct node *sel = n->args[i];
		const struct metric_info *mi;

		if (sel->t != N_SEL || !sel->range_ns)
			continue;
		mi = catalog_find_wire(sel->wire);
		*at = sel;
		if (sel->hist_part)
			break;	/* refused below, as a selector */
		if (!mi || !minute_fn_ok(n->fn_id, mi->kind)) {
			snprintf(why, len, "%s(%s[...]): %s, where only "
				 "avg/min/max/sum/count/last_over_time of a gauge, rate/increase "
				 "of a counter and quantile of a histogram are exact", n->fn,
				 sel->metric, who);
			return -EINVAL;
		}
		if (sel->range_ns % (60ULL * 1000000000ULL)) {
			snprintf(why, len, "%s[...]: %s: its ranges "
				 "are whole minutes (e.g. [1m])", sel->metric, who);
			return -EINVAL;
		}
	}
	for (int i = 0; i < n->nargs; i++)
		if (rollup_check(n->args[i], who, host_local, names, nnames, at, why, len))
			return -EINVAL;
	if (rollup_check(n->l, who, host_local, names, nnames, at, why, len) ||
	    rollup_check(n->r, who, host_local, names, nnames, at, why, len))
		return -EINVAL;
	return 0;
}

int expr_minute_check(const struct node *n, const struct node **at, char *why, size_t len)
{
	return rollup_check(n, "a baseline reads the 1-minute tier", 1, NULL, 0, at, why, len);
}

int expr_rollup_check(const struct node *n, const char *who, char *const *names, int nnames,
		      const struct node **at, char *why, size_t len)
{
	return rollup_check(n, who, 0, names, nnames, at, why, len);
}

/* The range functions a subquery's samples can feed exactly. */
int expr_fn_takes_subquery(enum expr_fn id)
{
	switch (id) {
	case FN_AVG_OVER_TIME: case FN_MIN_OVER_TIME: case FN_MAX_OVER_TIME:
	case FN_SUM_OVER_TIME: case FN_COUNT_OVER_TIME: case FN_LAST_OVER_TIME:
	case FN_STDDEV_OVER_TIME: case FN_STDVAR_OVER_TIME: case FN_QUANTILE_OVER_TIME:
	case FN_PRESENT_OVER_TIME: case FN_CHANGES: case FN_DERIV:
		return 1;
	default:
		return 0;
	}
}
