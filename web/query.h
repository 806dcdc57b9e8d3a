/*
 * query.h - PromQL queries over the Redis tiers, for faultline-web's
 * Prometheus HTTP API (web/prom_api.c).
 *
 * One PromQL implementation: a query is parsed and evaluated by the rules
 * engine's own language (rules/lang: expr_parse, eval), over history read
 * from the tiers the probes write (lib/store):
 *
 *   1 s     when the range the query reads ([start - lookback, end]) is
 *           within the 1 s tier's retention and the step is under a minute
 *   1 min   when it is within the minute tier's and the step under an hour
 *   1 h     otherwise
 *
 * On a rollup tier an expression is checked as a baseline's is
 * (expr_rollup_check): range functions a rollup keeps the inputs of, over
 * whole minutes; anything else is refused with the reason, never answered
 * wrong.
 *
 * Each host's history over the range is read once (pipelined, every host
 * at once: store_read_ranges), kept as columns (rules/lang/columns.h), and
 * the expression is evaluated at each step on every host's window cut at
 * that time: a host takes part at time t when its newest snapshot at or
 * before t is at most `stale` old (5 s on the 1 s tier, as the rules
 * engine sees it; two windows on a rollup tier).
 *
 * Only the hosts a query can reach are read: when every selector in it
 * names host= (or host=~, or a topology label such as rack=), the others
 * are not read at all.
 *
 * Limits, as Prometheus': at most max_samples points read into memory
 * (--query.max-samples) and timeout per query, and at most 11,000 steps.
 */
#ifndef FL_WEB_QUERY_H
#define FL_WEB_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "model/labels.h"
#include "store/store.h"

struct conn;
struct topology;

#define QUERY_MAX_STEPS 11000

struct chunk_cache;

struct query_opts {
	uint64_t retention_ms[STORE_TIERS];	/* what the probes keep of each tier */
	uint64_t stale_ms;		/* 1 s tier: a host this silent is left out (5 s) */
	uint64_t max_samples;		/* points read into memory per query */
	uint64_t timeout_ms;		/* per query */
	const struct topology *topology;	/* host globs -> rack/switch; may be NULL */
	const char *const *hosts;	/* only these hosts (an alert's); NULL: any */
	size_t nhosts;
	struct query_hot *hot;		/* the 1 s tier in memory (query_hot_start); NULL: none */
	struct chunk_cache *cache;	/* ended chunks kept decoded (chunk_cache.h); NULL: none */
	struct host_list *registry;	/* the fleet's listing reused (host_list_new); NULL: none */
};

/*
 * The host registry as last listed whole (every fl:{H}:host record), kept
 * for the queries that reach the whole fleet: a query reuses a listing
 * younger than max_age_ms instead of scanning the keyspace and decoding
 * every host's record again (at 10,000 hosts, ~100 ms a query); an older
 * one is listed again by the first query that needs it (the in-memory
 * tail's relisting every 10 s renews it too).  So a host that registers,
 * or whose labels change, is seen by such queries within max_age_ms, as
 * Prometheus's service discovery sees a target within its refresh
 * interval.  A query naming its hosts (host="...") reads their records as
 * always.  Shared by threads.
 */
struct host_list;
/* faultline-web's: the tail relists every 10 s, so with it a query never lists */
#define HOST_LIST_MAX_AGE_MS 15000
struct host_list *host_list_new(uint64_t max_age_ms);
void host_list_free(struct host_list *hl);

/* Prometheus' error types, for the API's errorType and status. */
enum query_error {
	QUERY_OK = 0,
	QUERY_BAD_DATA,			/* 400: the query or its arguments */
	QUERY_EXECUTION,		/* 422: it cannot be evaluated (too many samples) */
	QUERY_TIMEOUT,			/* 503 */
	QUERY_UNAVAILABLE,		/* 503: Redis is away */
	QUERY_INTERNAL,			/* 500: out of memory */
};

/* One series of a result: its labels (owned) and its points. */
struct query_series {
	struct label *labels;		/* sorted by key; __name__ first when kept */
	int nlabels;
	uint64_t *ts;			/* ms */
	double *v;
	size_t n, cap;
};

enum query_type { QUERY_SCALAR, QUERY_VECTOR, QUERY_MATRIX };

struct query_result {
	enum query_type type;
	uint64_t at_ms;			/* an instant query's time */
	double scalar;			/* QUERY_SCALAR */
	struct query_series *s;		/* QUERY_VECTOR (one point each) and QUERY_MATRIX */
	size_t n, cap;
	/* what it cost: for the logs and the API's stats */
	uint32_t tier;			/* the tier read: 1, 60 or 3600 */
	size_t hosts_read;
	uint64_t samples;		/* points read into memory */
	uint64_t steps;
	int from_memory;		/* answered from the in-memory tail, not Redis */
	uint64_t memory_from_ms;	/* else: the tail served the range from here (0: none) */
};

/*
 * Evaluate expr at every step from start_ms to end_ms (step_ms 0: an
 * instant query at end_ms) over what rc's Redis holds.  *out (zeroed
 * first) is freed with query_result_free, also on error.  Returns
 * QUERY_OK, or an error type with the reason in err, as Prometheus words
 * it (an error in the query itself: 'invalid parameter "query": 1:7: ...').
 */
enum query_error query_run(struct conn *rc, const struct query_opts *o, const char *expr,
			   uint64_t start_ms, uint64_t end_ms, uint64_t step_ms,
			   struct query_result *out, char *err, size_t errlen);

/* The same for a parsed expression (rules/lang/expr.h; a rule's). */
struct node;
enum query_error query_run_expr(struct conn *rc, const struct query_opts *o,
				const struct node *n, uint64_t start_ms, uint64_t end_ms,
				uint64_t step_ms, struct query_result *out, char *err,
				size_t errlen);

void query_result_free(struct query_result *r);

/*
 * The 1 s tier in memory: a thread tails every registered host's 1 s
 * snapshots from Redis (each decoded once, as the rules engine reads them;
 * new hosts listed every 10 s) and keeps window_ms of them as columns.  A
 * query on the 1 s tier whose range lies within what it holds (and whose
 * end is at most 2 s past its newest read) is evaluated on those columns
 * under a read lock, not read from Redis; anything else is read as
 * before.  Memory: every series of every host over the window (columns.h;
 * faultline-web's /metrics says how much).  NULL on -ENOMEM.
 */
struct query_hot;
struct query_hot *query_hot_start(const char *url, const struct query_opts *o, uint64_t window_ms);
void query_hot_stop(struct query_hot *hot);

/* How many hosts the tail holds, and in *bytes (may be NULL) their memory. */
size_t query_hot_hosts(struct query_hot *hot, size_t *bytes);

/*
 * The series the selectors sel[0..nsel) (PromQL selectors: `name{...}`)
 * match in each host's newest snapshot at or before end_ms (no older than
 * start_ms), as the query API names them: __name__, the series' labels,
 * the host's (topology) labels and host; a histogram as its _bucket (one
 * per le), _sum and _count.  nsel 0: every series.  cb is called once per
 * series (labels sorted, borrowed for the call).  Returns QUERY_OK or an
 * error type with the reason in err.
 */
typedef void (*query_series_cb)(const struct label *l, int nl, void *arg);
enum query_error query_series(struct conn *rc, const struct query_opts *o,
			      const char *const *sel, int nsel, uint64_t start_ms,
			      uint64_t end_ms, query_series_cb cb, void *arg, char *err,
			      size_t errlen);

#endif
