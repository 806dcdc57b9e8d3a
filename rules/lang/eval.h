/*
 * eval.h - evaluate rule expressions over a fleet's recent snapshots.
 *
 * The caller keeps, per host, its recent 1 s snapshots as columns
 * (rules/lang/columns.h: as many as the longest range in its rules needs) and
 * asks for the value of an expression at the newest of them, or at an
 * older point (a window cut short: offset, baselines).  The result is a scalar or an
 * instant vector: elements with labels (the series' labels, the host's own
 * labels such as rack and switch, and host=NAME) and a value.  A rule
 * fires for every element its expression returns.
 */
#ifndef FL_EVAL_H
#define FL_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "rules/lang/columns.h"
#include "rules/lang/expr.h"
#include "model/histogram.h"
#include "model/snapshot.h"

struct host_window {
	const char *host;
	const struct columns *c;	/* the host's history */
	size_t n;			/* its first n points: the window ends at point n - 1 */
	/*
	 * Or (baselines, rules/lang/minute_eval.c) the host's 1-minute rollups
	 * minutes[0..nminutes), oldest first, each stamped with the end of its
	 * minute: c then holds the newest of them (what selectors match and
	 * instant selectors read) and range functions fold the minutes that
	 * end inside their range.  NULL: c's points.
	 */
	const struct snapshot *minutes;
	size_t nminutes;
	/*
	 * NULL, or one entry per column of c, kept by a caller that evaluates
	 * many steps over the same histories (a range query): what a selector
	 * made of each column (whether it matches, its element's labels),
	 * worked out once instead of at every step.  Valid while c and its
	 * newest snapshot stay as they are; free with sel_memo_free.
	 */
	struct sel_memo *memo;
	/*
	 * NULL, or c's column indices ordered by their name's hash, then by
	 * index (eval_columns_by_name), kept alongside memo and valid as long:
	 * a window cut short finds the columns a selector names by a binary
	 * search instead of looking at every column at every step.
	 */
	const uint32_t *by_name;
};

struct sel_memo {
	const struct node *sel;		/* what the entry holds is this selector's (NULL: none) */
	int matches;
	int nl;
	struct label *l;		/* the element's labels, borrowed strings */
};

/*
 * c's column indices, c->ncol of them, ordered by their name's hash and
 * then their index: host_window.by_name.  Malloc'd (the caller frees), or
 * NULL on -ENOMEM or when c has no column.
 */
uint32_t *eval_columns_by_name(const struct columns *c);

/* Free what memo[0..n) holds, and memo. */
void sel_memo_free(struct sel_memo *memo, size_t n);

/*
 * An element's label strings are borrowed, never copied: they point into
 * the snapshots and the expression evaluated, so a value lives no longer
 * than both (callers that keep labels, such as the engine's alert state,
 * copy them).
 */
struct velem {
	struct label *labels;		/* sorted by key */
	int nlabels;
	double v;
};

struct label_slab;	/* the elements' label arrays, a few allocations a value */

struct value {
	int is_vector;
	double scalar;
	struct velem *e;
	size_t n, cap;
	struct label_slab *slab;	/* where value_push puts e[i].labels */
};

/*
 * Evaluate n over hosts[0..nhosts).  Returns 0, or -EINVAL with a reason
 * in err (type errors the parser could not see).  The caller frees *out
 * with value_free().
 */
int eval(const struct node *n, const struct host_window *hosts, size_t nhosts,
	 struct value *out, char *err, size_t errlen);
void value_free(struct value *v);

/*
 * eval() at time at_ms (> 0) rather than at the newest window end: what
 * time() says and where subqueries' steps end.  For queries at a chosen
 * time (faultline-web); hosts' windows are cut there by the caller, who
 * keeps each host's whole history in its columns: `@` pins a selector to
 * a time (start_ms, end_ms: the query's range, for @ start() / @ end()),
 * which may lie past the window's end.  An instant selector leaves out a
 * host whose newest point at at_ms is older than stale_ms (> 0), so the
 * windows may reach as far back as the query's ranges do.
 */
int eval_at(const struct node *n, const struct host_window *hosts, size_t nh, uint64_t at_ms,
	    uint64_t start_ms, uint64_t end_ms, uint64_t stale_ms, struct value *out, char *err,
	    size_t errlen);

/*
 * Whether series s of snapshot snap is one selector sel selects: matchers
 * see the labels its element carries (the series' own, the host's, host).
 */
int eval_sel_matches(const struct node *sel, const struct snapshot *snap, const struct series *s);

/*
 * Where subqueries' steps are counted from (ms; PromQL: the epoch, 0).  A
 * rule test sets its own start, since promtool's tests start at 0: a
 * [10m:1m] step then falls where promtool's does.  Process-wide; the
 * daemons never set it.
 */
void eval_set_time_origin(uint64_t ms);

/* Whether n is quantile(q, histogram selector); sets *q. */
int eval_is_quantile(const struct node *n, double *q);

/*
 * For baselines over quantile(q, sel[r]), which compare distributions, not
 * averaged percentiles: merge, across hosts, the increase of every series
 * sel matches over (to_ms - span_ms, to_ms] (between each host's last
 * snapshots at or before the two ends, or merging the minutes that end
 * there; sel's own range is not used) into
 * out[side(host, arg)], skipping hosts for which side returns -1.  out[]
 * must be initialised.  Returns the number of series merged, or -EINVAL
 * if n is not such an expression.
 */
int eval_merge_quantile_hist(const struct node *n, const struct host_window *hosts, size_t nh,
			     uint64_t to_ms, uint64_t span_ms,
			     int (*side)(const char *host, void *arg), void *arg,
			     struct histogram out[2]);

/*
 * How peer_ratio sees the rest of a sharded fleet (rules/shard/shard.h), whose
 * other hosts another worker evaluates.  merge is given this worker's peer
 * groups of one peer_ratio(v, label) call, groups[0..n), and hists[g], a
 * histogram of group g's values (eval_peer_record); it adds the other
 * workers' histograms of the same groups into hists and returns 0, or < 0
 * when it could not (hists then hold this worker's values only).  Each
 * group's median is then eval_peer_median(&hists[g]).
 */
struct eval_peers {
	void *arg;
	int (*merge)(void *arg, const char *label, char *const *groups, struct histogram *hists,
		     size_t n);
};

/* eval() on a sharded worker: hosts are its own, peers reach the others'. */
int eval_sharded(const struct node *n, const struct host_window *hosts, size_t nhosts,
		 const struct eval_peers *peers, struct value *out, char *err, size_t errlen);

/* Record value v (>= 0; less counts as 0) in a peer group's histogram. */
void eval_peer_record(struct histogram *h, double v);

/* The median of a peer group's (merged) histogram, or NAN when empty. */
double eval_peer_median(const struct histogram *h);

/* Value of label key of e, or NULL. */
const char *velem_label(const struct velem *e, const char *key);

#endif
