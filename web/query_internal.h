/*
 * query_internal.h - what the query's three files share, not for others:
 * query_load.c reads the hosts a query reaches into columns (struct
 * qload), query_hot.c keeps the 1 s tier's tail in memory and serves
 * from it, query.c evaluates and shapes the answer.
 */
#ifndef FL_QUERY_INTERNAL_H
#define FL_QUERY_INTERNAL_H

#include <stdint.h>

#include "core/strmap.h"
#include "rules/lang/columns.h"
#include "rules/lang/expr.h"
#include "store/conn.h"
#include "web/query.h"

/* One host's history over the query's range. */
struct qhost {
	char *name;
	int alerts;			/* not a host: ALERTS and ALERTS_FOR_STATE (below) */
	int borrowed;			/* the tail's (query_hot): not this query's to free */
	struct columns c;		/* every point read (minutes too, on a rollup tier) */
	struct snapshot *m;		/* rollup tiers: the windows themselves, oldest first */
	size_t nm, capm;
};

struct qload {
	const struct query_opts *o;
	struct strmap index;		/* host -> its slot in h */
	struct qhost *h;
	size_t nh, caph;
	uint32_t tier;
	uint64_t keep_ms;
	int reserve;			/* a query's: hosts get room for the range's points */
	uint64_t samples;
	uint64_t deadline_ns;		/* monotonic */
	enum query_error failed;	/* set by the reader's callback: stop */
	int relist;			/* qload_find_hosts lists the registry anew (o->registry) */
	char why[256];
	/*
	 * The series the query's selectors name (wire names, borrowed from
	 * its tree): only they keep their points; any other series of a host
	 * keeps its newest value alone (columns.h), unread.  NULL policy: all.
	 */
	const char *keep[64];
	int nkeep;
	struct columns_policy policy;
	const struct columns_policy *pol;
};

/* ---- query_load.c -------------------------------------------------------- */

/* Whether column identity def is a series the query's selectors name (columns_policy). */
int qload_keeps_named(const struct series *def, void *arg);

/* Keep the points of the series n's selectors name only. */
void qload_keep_only(struct qload *ql, const struct node *n);

/* Whether value v satisfies matcher m (=, !=, =~, !~). */
int query_matcher_ok(const struct expr_matcher *m, const char *v);

/*
 * A host to read into ql (its history empty; a query's gets room for the
 * range's points when ql->reserve).  0 or -ENOMEM.
 */
int qload_add_host(struct qload *ql, const char *name);

/*
 * What a query's selectors ask of a host's own labels, gathered once per
 * query rather than walked per host (a 10,000-host tail is scanned for a
 * switch's hosts): its selectors of host series (ALERTS' are not).
 */
struct reach_plan {
	const struct node *n;		/* the query; NULL: every host */
	const struct node *sel[32];
	int nsel;			/* over 32: the tree is walked per host instead */
};

void qload_reach_plan(struct reach_plan *p, const struct node *n);

/*
 * Whether the host of stub (its name and labels) is one the plan's query
 * can reach among o's hosts: some selector of host series whose every
 * matcher on host, or on a label the host carries, holds.
 */
int qload_host_reached(const struct reach_plan *p, const struct snapshot *stub,
		       const struct query_opts *o);

/*
 * The registered hosts n can reach (n NULL: all of them) into ql.  When
 * every selector names its host, only those hosts' records are read.
 */
enum query_error qload_find_hosts(struct conn *rc, struct qload *ql, const struct node *n,
				  char *err, size_t errlen);

/*
 * A snapshot read (store_readers.snapshot, arg: the qload): into its
 * host's columns, counted against the sample bound and the deadline.
 * 0, or 1 to stop the read (ql->failed and ql->why say why).
 */
int qload_arrived(struct snapshot *s, void *arg);

/* Free ql's hosts (not those borrowed from the tail) and its index. */
void qload_free(struct qload *ql);

/* The host's newest snapshot, to decode the next one like it (store_readers.like). */
const struct snapshot *qload_like_newest(size_t host_index, void *arg);

/* Read the hosts of ql that `which` marks (NULL: all) over [from_ms, to_ms] of ql->tier. */
enum query_error qload_read_hosts_of(struct conn *rc, struct qload *ql, const uint8_t *which,
				     uint64_t from_ms, uint64_t to_ms, char *err, size_t errlen);

/* Read every host of ql over [from_ms, to_ms] of ql->tier. */
enum query_error qload_read_hosts(struct conn *rc, struct qload *ql, uint64_t from_ms,
				  uint64_t to_ms, char *err, size_t errlen);

/* ---- query_hot.c --------------------------------------------------------- */

/*
 * Whether the tail holds every host over [from_ms, end_ms]; if so (1), ql
 * gets the hosts n can reach, borrowed, and the tail's read lock stays
 * held while the caller evaluates: query_hot_release lets it go.
 */
int query_hot_serves(struct query_hot *hot, struct qload *ql, const struct node *n,
		     uint64_t from_ms, uint64_t end_ms);

/* After query_hot_serves said 1 and the answer is made. */
void query_hot_release(struct query_hot *hot);

/*
 * Read ql's hosts over [from_ms, end_ms] from Redis and the tail together
 * (query_hot_serves said no); *memory_from_ms: where the tail's points
 * begin, 0 when it served none.
 */
enum query_error query_hot_read_with_tail(struct conn *rc, struct query_hot *hot,
					  struct qload *ql, uint64_t from_ms, uint64_t end_ms,
					  uint64_t *memory_from_ms, char *err, size_t errlen);

#endif
