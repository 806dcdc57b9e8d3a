/*
 * expr.h - faultline's rule expression language: a small PromQL.
 *
 *   expr     := or
 *   or       := and ( "or" [match] and )*
 *   and      := cmp ( ("and" | "unless") [match] cmp )*
 *   cmp      := add [ ("==" | "!=" | ">" | "<" | ">=" | "<=") ["bool"] [match] add ]
 *   add      := mul ( ("+" | "-") [match] mul )*
 *   mul      := unary ( ("*" | "/" | "%") [match] unary )*
 *   match    := ("on" | "ignoring") "(" LABEL,* ")"
 *               [ ("group_left" | "group_right") [ "(" LABEL,* ")" ] ]
 *   unary    := "-" unary | primary
 *   primary  := NUMBER [unit] | STRING | "(" expr ")" | agg | call | selector
 *   selector := METRIC [ "{" matcher ("," matcher)* "}" ] [ "[" DURATION "]" ]
 *               [ "offset" DURATION ] [ "@" ("start()" | "end()") ]  (either order;
 *               a query's also "@" UNIX_TIME)
 *   subquery := (selector | "(" expr ")" | call | agg) "[" DURATION ":" DURATION "]"
 *               [ "offset" DURATION ] [ "@" ("start()" | "end()") ]
 *               as the range argument of avg/min/max/sum/count/last/stddev/stdvar/
 *               quantile/present_over_time, changes or deriv
 *   matcher  := LABEL ("=" | "!=" | "=~" | "!~") STRING
 *   call     := FUNC "(" [ expr ("," expr)* ] ")"
 *   agg      := ("sum"|"min"|"max"|"avg"|"count") [ "by" "(" LABEL,* ")" ] "(" expr ")"
 *               [ "by" "(" LABEL,* ")" ]
 *
 * Metric names are the catalog's (lib/model/catalog.h), the same as on
 * /metrics: faultline_block_latency_seconds, faultline_tcp_in_csum_errors_total;
 * an unknown metric is an error, not an empty result, and an old dotted
 * name (block.latency) is refused naming the new one.  Values are in base
 * units (seconds, bytes, ratios 0..1), and a number with a duration unit
 * (250ms, 5m) is that many seconds, so `> 20ms` means 0.02 s as in Grafana.
 *
 * Functions: rate, increase, delta, avg_over_time, min_over_time,
 * max_over_time (over a range selector), quantile(q, hist[range]) on the
 * merged histogram increase (never averaged percentiles), abs, and
 * peer_ratio(v, "label"): each value divided by the median of the values
 * with the same label (a drive against its model's peers).
 *
 * expr_parse() builds the AST once; errors say where, 1-based line and
 * column within the text, and what was expected.
 */
#ifndef FL_EXPR_H
#define FL_EXPR_H

#include "core/promregex.h"
#include <stddef.h>
#include <stdint.h>

#define SUBQUERY_MAX_STEPS 10000	/* range / step of one subquery (none nested) */

enum node_type {
	N_NUM,
	N_STR,
	N_SEL,
	N_CALL,
	N_AGG,
	N_BIN,
	N_NEG,
	N_SUBQ,		/* l[range:step] offset: l evaluated every step back over range */
};

enum bin_op {
	OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD,
	OP_EQ, OP_NE, OP_GT, OP_LT, OP_GE, OP_LE,
	OP_AND, OP_OR, OP_UNLESS,
};

/*
 * What label_replace and label_join keep: the compiled regex, and every
 * label value they made, interned (an element's labels are borrowed from
 * the expression, eval.h), at most LABEL_FN_MAX_VALUES distinct ones.
 */
#define LABEL_FN_MAX_VALUES 100000
struct label_fn {
	struct prom_regex re;
	char **made;
	size_t nmade;
	void *index;		/* struct strmap: value -> index in made */
};

/* How a binary operation pairs elements (PromQL's cardinality) */
enum match_card { CARD_ONE_TO_ONE, CARD_MANY_TO_ONE, CARD_ONE_TO_MANY };

struct expr_matcher {
	char *label;
	char *value;
	int op;			/* '=', '!', '~' (=~), '^' (!~) */
	struct prom_regex re;
	int has_re;
};

/*
 * The functions and aggregations of the language, resolved from their name
 * once at parse time (struct node's fn_id); the table in expr.c says each
 * one's arity and whether it takes a range selector.
 */
enum expr_fn {
	FN_NONE,
	/* over a range selector, per series */
	FN_INCREASE, FN_RATE, FN_DELTA, FN_AVG_OVER_TIME, FN_MIN_OVER_TIME, FN_MAX_OVER_TIME,
	FN_QUANTILE, FN_SUM_OVER_TIME, FN_COUNT_OVER_TIME, FN_LAST_OVER_TIME,
	FN_STDDEV_OVER_TIME, FN_CHANGES, FN_RESETS, FN_IRATE, FN_IDELTA, FN_DERIV,
	FN_PREDICT_LINEAR, FN_PRESENT_OVER_TIME, FN_QUANTILE_OVER_TIME, FN_STDVAR_OVER_TIME,
	/* over a vector, element by element */
	FN_ABS, FN_CEIL, FN_FLOOR, FN_ROUND, FN_SQRT, FN_EXP, FN_LN, FN_LOG2, FN_LOG10,
	FN_CLAMP_MIN, FN_CLAMP_MAX, FN_CLAMP,
	/* over a vector, across elements */
	FN_PEER_RATIO, FN_ABSENT, FN_SCALAR, FN_HISTOGRAM_QUANTILE, FN_LABEL_REPLACE, FN_LABEL_JOIN,
	/* of nothing or a scalar */
	FN_TIME, FN_VECTOR,
	/* aggregations (`sum by (x) (...)`); the last three take a parameter first */
	FN_SUM, FN_AVG, FN_MIN, FN_MAX, FN_COUNT, FN_GROUP, FN_STDDEV, FN_STDVAR,
	FN_TOPK, FN_BOTTOMK, FN_QUANTILE_AGG,
};

struct expr_fn_info {
	const char *name;
	enum expr_fn id;
	int nargs;		/* arguments a call takes; -n: at least n */
	int range;		/* which argument (1-based) is a range selector; 0: none */
	int aggregation;
};

/* The function or aggregation called name, or NULL (expr_fns.c). */
const struct expr_fn_info *expr_fn_find(const char *name);

/*
 * Whether range function id can take a subquery's samples exactly: the
 * *_over_time functions, changes and deriv, which need neither counter
 * semantics nor extrapolation to the range's edges.
 */
int expr_fn_takes_subquery(enum expr_fn id);

/* PromQL's quantile aggregation (quantile by (x) (q, v)), which shares quantile's name. */
const struct expr_fn_info *expr_fn_quantile_agg(void);

/*
 * Why name is not a function of the language, into msg: a PromQL function
 * faultline does not have (with a hint where it has another way), or an
 * unknown one (with the list of those it has).
 */
void expr_fn_unknown(const char *name, char *msg, size_t len);

struct node {
	enum node_type t;
	int line, col;
	double num;
	char *str;
	/* selector */
	char *metric;		/* its one name, as written (for messages) */
	const char *wire;	/* the snapshots' series name (the catalog's) */
	uint32_t metric_hash;	/* snapshot_name_hash(wire) */
	double scale;		/* wire value x scale = the value in the metric's unit */
	struct expr_matcher *m;
	int nm;
	uint64_t range_ns;
	uint64_t offset_ns;	/* "offset 1h": evaluated as of that long ago */
	uint64_t step_ns;	/* a subquery's step */
	/*
	 * `@`: a selector or subquery pinned to the query's start (AT_START),
	 * end (AT_END) or a time (AT_TIME, at_ms).  A rule's evaluation time
	 * is both its start and end.
	 */
	enum { AT_NONE, AT_START, AT_END, AT_TIME } at;
	uint64_t at_ms;
	/* a histogram's _bucket (1), _sum (2) or _count (3), as on /metrics */
	int hist_part;
	double hist_scale;	/* the histogram's wire value x hist_scale = base unit */
	const double *bounds;	/* _bucket: the upper bounds (base unit), and their le */
	const char *const *le;
	int nbounds;
	/* call / aggregation */
	struct label_fn *lf;	/* label_replace / label_join: regex and made label values */
	char *fn;		/* its name, for messages */
	enum expr_fn fn_id;
	struct node **args;
	int nargs;
	char **by;
	int nby;
	int without;		/* by holds the labels dropped (without), not kept */
	/* binary */
	enum bin_op op;
	int bool_mod;
	struct node *l, *r;
	/* vector matching: on (...) / ignoring (...), group_left / group_right (...) */
	int match_on;		/* match holds the labels matched on (else those ignored) */
	char **match;
	int nmatch;
	enum match_card card;
	char **include;		/* labels copied from the "one" side */
	int ninclude;
};

/*
 * Parse text into *out.  Returns 0, or -EINVAL with "line:col: message"
 * in err (positions 1-based, within text).
 */
int expr_parse(const char *text, struct node **out, char *err, size_t errlen);

/*
 * The same, where the names[0..nnames) (recording rules' outputs) are
 * metrics too: gauges the engine writes into the hosts' history.
 */
int expr_parse_names(const char *text, char *const *names, int nnames, struct node **out,
		     char *err, size_t errlen);
/*
 * The same for a query of the HTTP API (faultline-web), which is
 * evaluated at times of its own choosing: `@ <unix time>` is taken too.
 */
int expr_parse_query(const char *text, char *const *names, int nnames, struct node **out,
		     char *err, size_t errlen);

/* The earliest `@ <time>` in n (ms), or 0 when it has none. */
uint64_t expr_earliest_at(const struct node *n);
void expr_free(struct node *n);

/* Longest range any selector in n asks for (ns); 0 if none. */
uint64_t expr_max_range(const struct node *n);

/*
 * Call fn with the series name (wire) of every selector of n that reads
 * back in time: one with a range or an offset.  The rules engine keeps
 * history only for these (rules/lang/columns.h).
 */
/*
 * Whether n's value for a host depends on that host's data alone: no
 * aggregation and no peer comparison anywhere in it.
 */
int expr_host_local(const struct node *n);

/*
 * Whether n can be evaluated on 1-minute rollups exactly (what a baseline
 * reads, rules/lang/minute_eval.c): per host, ranges of whole minutes under
 * functions a rollup keeps the inputs of.  Returns 0, or -EINVAL with *at
 * the offending node (its line and column) and the reason in why.
 */
int expr_minute_check(const struct node *n, const struct node **at, char *why, size_t len);

/*
 * The same for any reader of the rollup tiers (1 min, 1 h) across hosts (a
 * query of the HTTP API): aggregations are allowed; who names the reader
 * and tier in the reason ("this range reads the 1-minute tier");
 * names[0..nnames) are series of the reader's own (expr_parse_names),
 * taken as instant selectors.
 */
int expr_rollup_check(const struct node *n, const char *who, char *const *names, int nnames,
		      const struct node **at, char *why, size_t len);

/* Call fn with every selector node of n (those inside subqueries too). */
void expr_each_selector(const struct node *n, void (*fn)(const struct node *sel, void *arg),
			void *arg);

/*
 * The metric name PromQL keeps on n's elements (its __name__), or NULL:
 * a plain selector's, through label_replace/label_join, topk/bottomk, a
 * filtering comparison and and/unless (or: when both sides keep the same
 * one); arithmetic and other functions drop it.
 */
const char *expr_result_name(const struct node *n);

void expr_history_names(const struct node *n, void (*fn)(const char *wire, void *arg), void *arg);

/*
 * Whether n filters rather than computes: its top is a comparison without
 * `bool` or a set operation (and, or, unless).
 */
int expr_is_comparison(const struct node *n);

#endif
