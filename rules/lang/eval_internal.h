/*
 * eval_internal.h - what eval.c and vector_fns.c share, and nobody else.
 */
#ifndef FL_EVAL_INTERNAL_H
#define FL_EVAL_INTERNAL_H

#include <sys/types.h>

#include "model/labels.h"
#include "rules/lang/eval.h"

/*
 * What an expression is evaluated over: the hosts' windows, and how
 * peer_ratio reaches the rest of a sharded fleet (NULL: hosts are all of it).
 */
struct eval_in {
	const struct host_window *hosts;
	size_t nh;
	const struct eval_peers *peers;
	uint64_t at_ms;		/* the evaluation time (eval_at); 0: the newest window end */
	uint64_t start_ms, end_ms;	/* a query's range, for @ start() / @ end(); 0: none */
	/*
	 * A query's: an instant selector skips a host whose point at at_ms is
	 * older than this (its windows reach further back for range
	 * selectors); 0: every window's end is current (the rules engine).
	 */
	uint64_t stale_ms;
};

/*
 * Where node n (a selector or subquery) is pinned by `@` in in, or 0: a
 * time, the query's start or end (a rule's `@ start()` is its evaluation
 * time, which it is evaluated at anyway).
 */
static inline uint64_t eval_pinned(const struct node *n, const struct eval_in *in)
{
	return n->at == AT_TIME ? n->at_ms : n->at == AT_START ? in->start_ms :
	       n->at == AT_END ? in->end_ms : 0;
}

/* Evaluate n over in (eval() and eval_sharded() without the wrapping). */
int eval_node(const struct node *n, const struct eval_in *in, struct value *out, char *err,
	      size_t errlen);

/* The range functions, named as the parser resolved them (expr.h). */
enum range_fn {
	RF_NONE = FN_NONE, RF_INCREASE = FN_INCREASE, RF_RATE = FN_RATE, RF_DELTA = FN_DELTA,
	RF_AVG = FN_AVG_OVER_TIME, RF_MIN = FN_MIN_OVER_TIME, RF_MAX = FN_MAX_OVER_TIME,
	RF_QUANTILE = FN_QUANTILE, RF_SUM = FN_SUM_OVER_TIME, RF_COUNT = FN_COUNT_OVER_TIME,
	RF_LAST = FN_LAST_OVER_TIME, RF_STDDEV = FN_STDDEV_OVER_TIME, RF_CHANGES = FN_CHANGES,
	RF_RESETS = FN_RESETS, RF_IRATE = FN_IRATE, RF_IDELTA = FN_IDELTA, RF_DERIV = FN_DERIV,
	RF_PREDICT = FN_PREDICT_LINEAR, RF_PRESENT = FN_PRESENT_OVER_TIME,
	RF_QOT = FN_QUANTILE_OVER_TIME, RF_STDVAR = FN_STDVAR_OVER_TIME,
};

/* Index of the last point of window w at or before t, or -1. */
ssize_t window_last_at(const struct host_window *w, uint64_t t);

/* Into d: histogram k's increase between points a and b of w's columns. */
void window_hist_delta(struct histogram *d, const struct columns *c, uint32_t k, size_t a,
		       size_t b);

/*
 * Range function fn of series k over w's points in its last range_ns
 * (range_fns.c); q is quantile_over_time's quantile.
 */
double eval_range_fn(enum range_fn fn, const struct host_window *w, uint32_t k,
		     uint64_t range_ns, double q);

/*
 * The string v, interned in lf (it must outlive the values that borrow it;
 * at most LABEL_FN_MAX_VALUES).  NULL when out of memory or full.
 */
const char *label_fn_intern(struct label_fn *lf, const char *v);

/*
 * Range function fn (a subquery's: expr.c's subquery_fn_ok) over
 * subquery sq (N_SUBQ), evaluated over in (subquery.c).  q: quantile_over_
 * time's quantile.  Returns 0, -EINVAL (err) or -ENOMEM.
 */
int eval_subquery(const struct node *sq, enum range_fn fn, double q, const struct eval_in *in,
		  struct value *out, char *err, size_t errlen);

/* Append an element with labels l (borrowed, sorted by key) and value x. */
int value_push(struct value *v, const struct label *l, int nl, double x);

/* Sort labels by key; the hash of a sorted label set. */
void labels_sort(struct label *l, int nl);
uint64_t labels_hash(const struct label *l, int nl);

/* sum/avg/min/max/count/group/stddev/stdvar by (or without) labels of in. */
int eval_agg(const struct node *n, const struct value *in, struct value *out);

/*
 * topk/bottomk (k elements of each group, their labels kept) and
 * quantile (param-quantile of each group, the group's labels) by (or
 * without) labels of in.
 */
int eval_agg_param(const struct node *n, double param, const struct value *in, struct value *out);

/*
 * histogram_quantile(q, in): in's elements grouped by their labels but le,
 * each group a classic histogram (le = upper bound, cumulative counts), and
 * the quantile interpolated within its bucket as Prometheus does.
 */
int histogram_quantile(double q, const struct value *in, struct value *out);

/* label_replace and label_join (call n) */
int eval_label_fn(const struct node *n, const struct eval_in *in,
		  struct value *out, char *err, size_t errlen);

/* PromQL's quantile q of n sorted values (linear between the closest ranks). */
double quantile_sorted(const double *v, size_t n, double q);

/*
 * Each element of in over the median of the elements with the same label
 * (over the whole fleet through peers when set).
 */
int peer_ratio(const struct eval_peers *peers, const struct value *in, const char *label,
	       struct value *out);

/* absent(x) and the element functions abs ... clamp of call n. */
int eval_absent(const struct node *n, const struct eval_in *in,
		struct value *out, char *err, size_t errlen);
int eval_elementwise(const struct node *n, const struct eval_in *in,
		     struct value *out, char *err, size_t errlen);

/*
 * l op r for binary node n (arithmetic, comparison, and/or/unless), with
 * PromQL's vector matching (on/ignoring, group_left/group_right).  Returns
 * 0, or -EINVAL with "line:col: reason" in err (e.g. many-to-many).
 */
int eval_bin(const struct node *n, const struct value *l, const struct value *r,
	     struct value *out, char *err, size_t errlen);


/*
 * Range function fn (expr.h's id) of series def over host window w's
 * minutes (w->minutes set): the minutes ending in (newest - range, newest];
 * NAN when none holds the series or fn is not one a rollup answers
 * (minute_eval.c).
 */
double minute_range_fn(enum expr_fn fn, const struct host_window *w, const struct series *def,
		       uint64_t range_ns, double q);

/*
 * Merge into out the histograms sel picks in w's minutes that end in
 * (to_ms - span_ms, to_ms]; returns how many.
 */
int minute_merge_hist(const struct node *sel, const struct host_window *w, uint64_t to_ms,
		      uint64_t span_ms, struct histogram *out);

#endif
