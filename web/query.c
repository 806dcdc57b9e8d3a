/*
 * query.c - PromQL queries over the Redis tiers; see query.h.
 *
 * A query runs in four steps: parse (rules/lang), choose the tier, read
 * the hosts it can reach over its range into columns, then evaluate at
 * every step on each host's window cut at that time.  The history read is
 * the query's alone and freed with it: faultline-web keeps no state, so
 * any number of them answer alike.
 */
#include "web/query.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/array.h"
#include "core/log.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "model/catalog.h"
#include "model/host_entry.h"
#include "rules/lang/columns.h"
#include "rules/lang/eval.h"
#include "rules/lang/expr.h"
#include "rules/engine/engine.h"
#include "rules/lang/rules.h"
#include "store/alert_checkpoint.h"
#include "store/conn.h"
#include "store/host_registry.h"

/* What Prometheus says before an error in the query itself. */
#define QUERY_PARAM "invalid parameter \"query\": "

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

/* Whether a series of this name is one the query's selectors name. */
static int picks_named(const char *name, void *arg)
{
	const struct qload *ql = arg;

	for (int i = 0; i < ql->nkeep; i++)
		if (!strcmp(name, ql->keep[i]))
			return 1;
	return 0;
}

static int keeps_named(const struct series *def, void *arg)
{
	return picks_named(def->name, arg);
}

static void keep_sel(const struct node *sel, void *arg)
{
	struct qload *ql = arg;

	for (int i = 0; i < ql->nkeep; i++)
		if (!strcmp(ql->keep[i], sel->wire))
			return;
	if (ql->nkeep < (int)(sizeof(ql->keep) / sizeof(ql->keep[0])))
		ql->keep[ql->nkeep++] = sel->wire;
	else
		ql->pol = NULL;	/* more than it holds: every series keeps its points */
}

/* Keep the points of the series n's selectors name only. */
static void keep_only(struct qload *ql, const struct node *n)
{
	ql->policy = (struct columns_policy){ keeps_named, ql, 1 };
	ql->pol = &ql->policy;
	expr_each_selector(n, keep_sel, ql);
}

/* ---- which hosts a query can reach ----------------------------------- */

static int matcher_ok(const struct expr_matcher *m, const char *v)
{
	switch (m->op) {
	case '=': return !strcmp(v, m->value);
	case '!': return strcmp(v, m->value) != 0;
	case '~': return promregex_match(&m->re, v);
	case '^': return !promregex_match(&m->re, v);
	}
	return 1;
}

struct reach {
	const struct snapshot *host;	/* a stub: the host's name and labels */
	int any;			/* some selector may match its series */
	int nsel;
};

/*
 * Whether selector sel may match a series of the host: every matcher on
 * host, or on a label the host carries (the probe's, the topology's),
 * holds.  Matchers on other labels are the series' own: not known here.
 */
static void reach_one(const struct node *sel, void *arg)
{
	struct reach *r = arg;
	const struct snapshot *s = r->host;

	if (!catalog_find_wire(sel->wire))
		return;	/* ALERTS: no host's series */
	r->nsel++;
	for (int i = 0; i < sel->nm; i++) {
		const struct expr_matcher *m = &sel->m[i];
		const char *v = NULL;

		if (!strcmp(m->label, "host"))
			v = s->host;
		for (uint32_t k = 0; !v && k < s->nlabels; k++)
			if (!strcmp(s->labels[k].key, m->label))
				v = s->labels[k].value;
		if (v && !matcher_ok(m, v))
			return;
	}
	r->any = 1;
}

struct hosts_arg {
	struct qload *ql;
	const struct node *n;		/* NULL: every host */
	int nomem;
};

/* The most points a host's history is made room for before they arrive. */
#define RESERVE_MAX 4096

static int add_host(struct qload *ql, const char *name)
{
	struct qhost *h;

	if (ARRAY_GROW(ql->h, ql->caph, ql->nh + 1, 64))
		return -ENOMEM;
	h = &ql->h[ql->nh];
	memset(h, 0, sizeof(*h));
	columns_init(&h->c);
	/*
	 * Room for the points the range can hold at the tier's interval, made
	 * once (growing as they come copied every column ~20 times for an
	 * hour); -ENOMEM here is not an error: the ring grows when pushed.
	 * Not the tail's: a host there may stay quiet, and holds nothing then.
	 */
	if (ql->reserve && ql->tier && ql->keep_ms) {
		uint64_t points = ql->keep_ms / (ql->tier * 1000ULL) + 2;

		columns_reserve(&h->c, points < RESERVE_MAX ? points : RESERVE_MAX);
	}
	if (!(h->name = strdup(name)) || strmap_put(&ql->index, name, (uint32_t)ql->nh)) {
		free(h->name);
		return -ENOMEM;
	}
	ql->nh++;
	return 0;
}

/*
 * Whether the host of stub (its name and labels) is one n can reach (n
 * NULL: any) among o's hosts.
 */
static int host_reached(const struct node *n, const struct snapshot *stub,
			const struct query_opts *o)
{
	struct reach r = { stub, 0, 0 };

	if (n)
		expr_each_selector(n, reach_one, &r);
	if (o->hosts) {
		int listed = 0;

		for (size_t i = 0; i < o->nhosts && !listed; i++)
			listed = !strcmp(o->hosts[i], stub->host);
		if (!listed)
			return 0;
	}
	return !n || r.any;
}

static void host_seen(const char *host, const struct host_entry *e, void *arg)
{
	struct hosts_arg *a = arg;
	struct snapshot stub;

	if (a->nomem || snapshot_init(&stub, host, 0, 0, 0, 1)) {
		a->nomem = 1;
		return;
	}
	for (uint32_t i = 0; i < e->nlabels; i++)
		if (snapshot_set_label(&stub, e->labels[i].key, e->labels[i].value))
			a->nomem = 1;
	if (topology_apply(a->ql->o->topology, &stub))
		a->nomem = 1;
	if (!a->nomem && host_reached(a->n, &stub, a->ql->o) && add_host(a->ql, host))
		a->nomem = 1;
	snapshot_free(&stub);
}

/* The hosts a query's selectors name by host="..." (every one of them must). */
struct named_hosts {
	char *name[16];
	size_t n;
	int all;		/* a selector names none, or more than fit: list them all */
};

static void host_named(const struct node *sel, void *arg)
{
	struct named_hosts *nh = arg;
	const char *v = NULL;

	if (!catalog_find_wire(sel->wire))
		return;	/* ALERTS: no host's series */
	for (int i = 0; i < sel->nm && !v; i++)
		if (!strcmp(sel->m[i].label, "host") && sel->m[i].op == '=')
			v = sel->m[i].value;
	if (!v) {
		nh->all = 1;
		return;
	}
	for (size_t i = 0; i < nh->n; i++)
		if (!strcmp(nh->name[i], v))
			return;
	if (nh->n < sizeof(nh->name) / sizeof(nh->name[0]))
		nh->name[nh->n++] = (char *)v;
	else
		nh->all = 1;
}

/*
 * The registered hosts n can reach (n NULL: all of them) into ql.  When
 * every selector names its host (a dashboard's one-host panel), only those
 * hosts' records are read: no scan of the keyspace, no record of the
 * fleet's other hosts decoded.
 */
static enum query_error find_hosts(struct conn *rc, struct qload *ql, const struct node *n,
				   char *err, size_t errlen)
{
	struct hosts_arg a = { ql, n, 0 };
	struct named_hosts nh = { .all = !n };
	int got;

	if (n)
		expr_each_selector(n, host_named, &nh);
	if (!nh.all)
		got = store_host_entries_of(rc, nh.name, nh.n, host_seen, &a, err, errlen);
	else
		got = store_host_entries(rc, host_seen, &a, err, errlen);
	if (got < 0)
		return QUERY_UNAVAILABLE;
	if (a.nomem) {
		snprintf(err, errlen, "out of memory listing the hosts");
		return QUERY_INTERNAL;
	}
	return QUERY_OK;
}

/* ---- reading their history ------------------------------------------- */

static int arrived(struct snapshot *s, void *arg)
{
	struct qload *ql = arg;
	struct qhost *h;
	uint32_t idx;
	size_t len;

	if (ql->failed || !s->host || !strmap_get(&ql->index, s->host, &idx))
		return 1;
	h = &ql->h[idx];
	len = columns_len(&h->c);
	if (len && s->ts_ms <= columns_ts(&h->c, len - 1))
		return 0;	/* not newer: a duplicate */
	ql->samples += s->nseries;
	if (ql->samples > ql->o->max_samples) {
		ql->failed = QUERY_EXECUTION;
		snprintf(ql->why, sizeof(ql->why), "query processing would load too many samples "
			 "into memory in query execution (over %" PRIu64 ", --query.max-samples)",
			 ql->o->max_samples);
		return 1;
	}
	if (time_mono_ns() > ql->deadline_ns) {
		ql->failed = QUERY_TIMEOUT;
		snprintf(ql->why, sizeof(ql->why), "query timed out in query execution "
			 "(reading the %" PRIu32 " s tier)", ql->tier);
		return 1;
	}
	if (topology_apply(ql->o->topology, s))
		goto nomem;
	if (ql->tier != 1) {
		/* minute_eval folds the windows themselves: keep them beside the columns */
		if (ARRAY_GROW(h->m, h->capm, h->nm + 1, 16) || snapshot_copy(&h->m[h->nm], s))
			goto nomem;
		h->nm++;
	}
	if (columns_push(&h->c, s, ql->keep_ms, ql->pol))
		goto nomem;
	return 0;
nomem:
	ql->failed = QUERY_INTERNAL;
	snprintf(ql->why, sizeof(ql->why), "out of memory reading %s", s->host);
	return 1;
}

static void qload_free(struct qload *ql)
{
	for (size_t i = 0; i < ql->nh; i++) {
		if (ql->h[i].borrowed)
			continue;
		free(ql->h[i].name);
		columns_free(&ql->h[i].c);
		for (size_t k = 0; k < ql->h[i].nm; k++)
			snapshot_free(&ql->h[i].m[k]);
		free(ql->h[i].m);
	}
	free(ql->h);
	strmap_free(&ql->index);
}

/*
 * A host's next snapshot most likely repeats its newest (the same series
 * every interval): decoded like it, borrowing its strings, which
 * columns_push adopts (what the rules engine does; 3x less decoding).
 */
static const struct snapshot *like_newest(size_t host_index, void *arg)
{
	const struct qload *ql = arg;

	return host_index < ql->nh && columns_len(&ql->h[host_index].c) ?
	       &ql->h[host_index].c.newest : NULL;
}

/* The hosts one read asks for: slot k of the read is ql's host at[k]. */
struct read_set {
	struct qload *ql;
	size_t *at;
};

static int set_arrived(struct snapshot *s, void *arg)
{
	return arrived(s, ((struct read_set *)arg)->ql);
}

static const struct snapshot *set_like(size_t k, void *arg)
{
	const struct read_set *rs = arg;

	return like_newest(rs->at[k], rs->ql);
}

static int set_picks(const char *name, void *arg)
{
	return picks_named(name, ((struct read_set *)arg)->ql);
}

/*
 * Read the hosts of ql that `which` marks (NULL: all) over [from_ms,
 * to_ms] of ql->tier.
 */
static enum query_error read_hosts_of(struct conn *rc, struct qload *ql, const uint8_t *which,
				      uint64_t from_ms, uint64_t to_ms, char *err, size_t errlen)
{
	struct read_set rs = { ql, calloc(ql->nh + 1, sizeof(size_t)) };
	/* a chunk builds the series the query names only (when it names them all) */
	struct store_readers rd = { .snapshot = set_arrived, .like = set_like,
				    .series = ql->pol ? set_picks : NULL, .arg = &rs };
	const char **names = calloc(ql->nh + 1, sizeof(*names));
	uint64_t *from = calloc(ql->nh + 1, sizeof(*from));
	size_t n = 0;
	int got = 0;

	if (!names || !from || !rs.at) {
		free(names);
		free(from);
		free(rs.at);
		snprintf(err, errlen, "out of memory");
		return QUERY_INTERNAL;
	}
	for (size_t i = 0; i < ql->nh; i++) {
		if (which && !which[i])
			continue;
		rs.at[n] = i;
		names[n] = ql->h[i].name;
		from[n++] = from_ms;
	}
	if (n)
		got = store_read_ranges(rc, names, from, n, ql->tier, to_ms, &rd, NULL, err,
					errlen);
	free(names);
	free(from);
	free(rs.at);
	if (ql->failed) {
		snprintf(err, errlen, "%s", ql->why);
		return ql->failed;
	}
	return got < 0 ? QUERY_UNAVAILABLE : QUERY_OK;
}

/* Read every host of ql over [from_ms, to_ms] of ql->tier. */
static enum query_error read_hosts(struct conn *rc, struct qload *ql, uint64_t from_ms,
				   uint64_t to_ms, char *err, size_t errlen)
{
	return read_hosts_of(rc, ql, NULL, from_ms, to_ms, err, errlen);
}

/* ---- the 1 s tier in memory (query_hot) ------------------------------ */

struct query_hot {
	struct query_opts o;		/* its own: no sample bound, no deadline */
	char url[600];
	uint64_t window_ms;
	pthread_t thread;
	int running;
	volatile int stop;
	pthread_rwlock_t lock;		/* ql: the tail writes, queries read */
	struct qload ql;
	uint64_t from_ms;		/* every host is held from here (its first read) */
	uint64_t read_ms;		/* the last read that completed started then */
	uint64_t listed_ms;		/* the hosts were last listed then */
	int ready;
};

/* A snapshot the tail read: into its host's columns, under the write lock. */
static int hot_arrived(struct snapshot *s, void *arg)
{
	struct query_hot *hot = arg;
	int ret;

	pthread_rwlock_wrlock(&hot->lock);
	ret = arrived(s, &hot->ql);
	pthread_rwlock_unlock(&hot->lock);
	return ret;
}

/* The tail's like callback: only the tail changes its columns, so no lock. */
static const struct snapshot *hot_like(size_t host_index, void *arg)
{
	struct query_hot *hot = arg;

	return like_newest(host_index, &hot->ql);
}

/*
 * With the write lock taken: drop from the tail the hosts the registry no
 * longer lists (found: what it lists now), and let go of the points of
 * those whose newest snapshot is older than the window (a host that went
 * quiet: no query the tail serves reaches them), so a fleet's churn does
 * not grow it.  Returns how many hosts went.
 */
static size_t hot_prune(struct query_hot *hot, const struct qload *found, uint64_t now_ms)
{
	struct qload *ql = &hot->ql;
	size_t kept = 0, gone;
	uint32_t idx;

	for (size_t i = 0; i < ql->nh; i++) {
		struct qhost *h = &ql->h[i];
		size_t len = columns_len(&h->c);

		if (!strmap_get(&found->index, h->name, &idx)) {
			free(h->name);
			columns_free(&h->c);
			continue;
		}
		if (len && columns_ts(&h->c, len - 1) + hot->window_ms + 2000 < now_ms) {
			columns_free(&h->c);
			columns_init(&h->c);
		}
		ql->h[kept++] = *h;
	}
	gone = ql->nh - kept;
	if (gone) {
		ql->nh = kept;
		strmap_free(&ql->index);
		strmap_init(&ql->index);
		for (size_t i = 0; i < ql->nh; i++) {
			if (!strmap_put(&ql->index, ql->h[i].name, (uint32_t)i))
				continue;
			/* no memory: the rest go, and are listed and read again as new */
			for (size_t k = i; k < ql->nh; k++) {
				free(ql->h[k].name);
				columns_free(&ql->h[k].c);
			}
			ql->nh = i;
		}
	}
	return gone;
}

/* The registered hosts into the tail: new ones read from a window ago, departed ones dropped. */
static void hot_list(struct query_hot *hot, struct conn *rc, uint64_t now_ms)
{
	struct qload found = { .o = &hot->o };
	char err[300];
	uint32_t idx;
	size_t gone;

	strmap_init(&found.index);
	if (find_hosts(rc, &found, NULL, err, sizeof(err)) == QUERY_OK) {
		pthread_rwlock_wrlock(&hot->lock);
		gone = hot_prune(hot, &found, now_ms);
		for (size_t i = 0; i < found.nh; i++)
			if (!strmap_get(&hot->ql.index, found.h[i].name, &idx) &&
			    add_host(&hot->ql, found.h[i].name))
				break;
		pthread_rwlock_unlock(&hot->lock);
		if (gone)
			log_info("faultline-web: %zu host(s) left the registry; dropped from the "
				 "in-memory tail", gone);
	} else {
		log_warn("faultline-web: listing the hosts for the in-memory tail: %s", err);
	}
	qload_free(&found);
}

/* One read of every host's new 1 s snapshots.  Returns 0 or -1 (the connection went). */
static int hot_read(struct query_hot *hot, struct conn *rc, uint64_t now_ms)
{
	struct store_readers rd = { .snapshot = hot_arrived, .like = hot_like, .arg = hot };
	const char **names;
	uint64_t *from;
	char err[300];
	size_t n;
	int got;

	/* the names and where each host's read starts: the tail alone changes them */
	n = hot->ql.nh;
	names = calloc(n + 1, sizeof(*names));
	from = calloc(n + 1, sizeof(*from));
	if (!names || !from) {
		free(names);
		free(from);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct columns *c = &hot->ql.h[i].c;
		size_t len = columns_len(c);

		names[i] = hot->ql.h[i].name;
		from[i] = len ? columns_ts(c, len - 1) + 1 : now_ms - hot->window_ms;
	}
	hot->ql.failed = QUERY_OK;
	got = n ? store_read_ranges(rc, names, from, n, 1, 0, &rd, NULL, err, sizeof(err)) : 0;
	free(names);
	free(from);
	if (got < 0)
		log_warn("faultline-web: the in-memory tail could not read: %s; retrying", err);
	return got < 0 ? -1 : 0;
}

static void *hot_loop(void *arg)
{
	struct query_hot *hot = arg;
	struct conn *rc = NULL;
	char err[300];

	while (!hot->stop) {
		uint64_t t0 = time_wall_ns() / 1000000, mono = time_mono_ns();

		if (!rc && !(rc = conn_open(hot->url, 2 * NSEC_PER_SEC, err, sizeof(err))))
			log_warn("faultline-web: the in-memory tail cannot reach Redis: %s", err);
		if (rc && (!hot->listed_ms || t0 >= hot->listed_ms + 10000)) {
			hot_list(hot, rc, t0);
			hot->listed_ms = t0;
		}
		if (rc && hot_read(hot, rc, t0)) {
			conn_close(rc);
			rc = NULL;
		} else if (rc) {
			pthread_rwlock_wrlock(&hot->lock);
			if (!hot->ready)
				hot->from_ms = t0 - hot->window_ms;
			hot->read_ms = t0;
			hot->ready = 1;
			pthread_rwlock_unlock(&hot->lock);
		}
		while (!hot->stop && time_mono_ns() < mono + NSEC_PER_SEC)
			usleep(20000);
	}
	conn_close(rc);
	return NULL;
}

struct query_hot *query_hot_start(const char *url, const struct query_opts *o, uint64_t window_ms)
{
	struct query_hot *hot = calloc(1, sizeof(*hot));

	if (!hot)
		return NULL;
	snprintf(hot->url, sizeof(hot->url), "%s", url);
	hot->o = *o;
	hot->o.max_samples = UINT64_MAX;
	hot->o.hosts = NULL;
	hot->o.hot = NULL;
	hot->window_ms = window_ms;
	hot->ql.o = &hot->o;
	hot->ql.tier = 1;
	hot->ql.keep_ms = window_ms;
	hot->ql.deadline_ns = UINT64_MAX;
	strmap_init(&hot->ql.index);
	pthread_rwlock_init(&hot->lock, NULL);
	if (pthread_create(&hot->thread, NULL, hot_loop, hot)) {
		pthread_rwlock_destroy(&hot->lock);
		strmap_free(&hot->ql.index);
		free(hot);
		return NULL;
	}
	hot->running = 1;
	return hot;
}

void query_hot_stop(struct query_hot *hot)
{
	if (!hot)
		return;
	hot->stop = 1;
	if (hot->running)
		pthread_join(hot->thread, NULL);
	qload_free(&hot->ql);
	pthread_rwlock_destroy(&hot->lock);
	free(hot);
}

size_t query_hot_hosts(struct query_hot *hot, size_t *bytes)
{
	size_t n, b = 0;

	pthread_rwlock_rdlock(&hot->lock);
	n = hot->ql.nh;
	for (size_t i = 0; bytes && i < n; i++)
		b += columns_bytes(&hot->ql.h[i].c);
	pthread_rwlock_unlock(&hot->lock);
	if (bytes)
		*bytes = b;
	return n;
}

/*
 * With the read lock taken: whether the tail holds every host over
 * [from_ms, end_ms] (its newest read at most 2 s behind end_ms: one
 * interval of a probe, at most).  If so, ql gets the hosts n can reach,
 * borrowed, and the caller keeps the lock while it evaluates.
 */
static int hot_serves(struct query_hot *hot, struct qload *ql, const struct node *n,
		      uint64_t from_ms, uint64_t end_ms)
{
	uint64_t now = time_wall_ns() / 1000000;

	if (!hot->ready || from_ms < hot->from_ms || from_ms + hot->window_ms < now + 2000 ||
	    end_ms > hot->read_ms + 2000)
		return 0;
	for (size_t i = 0; i < hot->ql.nh; i++) {
		const struct qhost *h = &hot->ql.h[i];

		if (!columns_len(&h->c) || !host_reached(n, &h->c.newest, ql->o))
			continue;
		if (ARRAY_GROW(ql->h, ql->caph, ql->nh + 1, 64))
			return 0;
		ql->h[ql->nh] = *h;
		ql->h[ql->nh++].borrowed = 1;
	}
	return 1;
}

/*
 * Read ql's hosts over [from_ms, end_ms] from Redis and the tail together
 * (hot_serves said no: the range begins before what the tail holds): a
 * host the tail holds a full window of is read from Redis up to where the
 * tail begins for all of them (cut) and takes the tail's points from
 * there, copied column by column; any other host, or every host when the
 * tail is behind end_ms or the range ends before cut, is read from Redis
 * whole.  Sets *memory_from_ms to cut when the tail served a part (else
 * 0).  The read lock is held throughout, so that the tail does not let go
 * of the points after cut while Redis is read.
 */
static enum query_error read_with_tail(struct conn *rc, struct query_hot *hot, struct qload *ql,
				       uint64_t from_ms, uint64_t end_ms,
				       uint64_t *memory_from_ms, char *err, size_t errlen)
{
	uint64_t now = time_wall_ns() / 1000000, cut = 0, points = 0;
	uint8_t *tailed = calloc(ql->nh + 1, 1), *rest = calloc(ql->nh + 1, 1);
	uint32_t *at = calloc(ql->nh + 1, sizeof(*at));
	enum query_error ret = QUERY_OK;
	size_t ntailed = 0;

	*memory_from_ms = 0;
	if (!tailed || !rest || !at) {
		snprintf(err, errlen, "out of memory");
		ret = QUERY_INTERNAL;
		goto out;
	}
	pthread_rwlock_rdlock(&hot->lock);
	for (size_t i = 0; hot->ready && end_ms <= hot->read_ms + 2000 && i < ql->nh; i++) {
		const struct columns *c;

		if (ql->h[i].alerts || !strmap_get(&hot->ql.index, ql->h[i].name, &at[i]))
			continue;
		c = &hot->ql.h[at[i]].c;
		/* a full window: from the tail's reach on (one interval of slack) */
		if (!columns_len(c) || columns_ts(c, 0) > now - hot->window_ms + 5000)
			continue;
		tailed[i] = 1;
		ntailed++;
		if (columns_ts(c, 0) > cut)
			cut = columns_ts(c, 0);
	}
	if (!ntailed || cut > end_ms || cut <= from_ms) {
		pthread_rwlock_unlock(&hot->lock);
		ret = read_hosts(rc, ql, from_ms, end_ms, err, errlen);
		goto out;
	}
	for (size_t i = 0; i < ql->nh; i++)
		rest[i] = !tailed[i];
	if ((ret = read_hosts_of(rc, ql, tailed, from_ms, cut - 1, err, errlen)) ||
	    (ret = read_hosts_of(rc, ql, rest, from_ms, end_ms, err, errlen))) {
		pthread_rwlock_unlock(&hot->lock);
		goto out;
	}
	for (size_t i = 0; i < ql->nh && !ret; i++) {
		const struct columns *c = &hot->ql.h[at[i]].c;
		long first;

		if (!tailed[i])
			continue;
		first = columns_last_at(c, cut - 1) + 1;
		points += columns_len(c) - (size_t)first;
		/* as Redis counts them: the series the query keeps, at each point */
		for (uint32_t k = 0; k < c->ncol; k++)
			for (size_t p = (size_t)first;
			     p < columns_len(c) && (!ql->pol || keeps_named(&c->col[k].def, ql));
			     p++)
				ql->samples += columns_has(c, k, p);
		if (ql->samples > ql->o->max_samples) {
			snprintf(err, errlen, "query processing would load too many samples into "
				 "memory in query execution (over %" PRIu64 ", --query.max-samples)",
				 ql->o->max_samples);
			ret = QUERY_EXECUTION;
		} else if (columns_append(&ql->h[i].c, c, (size_t)first, ql->keep_ms, ql->pol)) {
			snprintf(err, errlen, "out of memory reading %s from memory", ql->h[i].name);
			ret = QUERY_INTERNAL;
		}
	}
	pthread_rwlock_unlock(&hot->lock);
	if (!ret && points)
		*memory_from_ms = cut;
out:
	free(tailed);
	free(rest);
	free(at);
	return ret;
}

/* ---- the result ------------------------------------------------------ */

void query_result_free(struct query_result *r)
{
	for (size_t i = 0; i < r->n; i++) {
		for (int k = 0; k < r->s[i].nlabels; k++) {
			free(r->s[i].labels[k].key);
			free(r->s[i].labels[k].value);
		}
		free(r->s[i].labels);
		free(r->s[i].ts);
		free(r->s[i].v);
	}
	free(r->s);
	memset(r, 0, sizeof(*r));
}

/* A new series of r with labels l[0..nl) (copied) and __name__ name (may be NULL). */
static struct query_series *series_new(struct query_result *r, const struct label *l, int nl,
				       const char *name)
{
	struct query_series *s;
	int k = 0;

	if (ARRAY_GROW(r->s, r->cap, r->n + 1, 16))
		return NULL;
	s = &r->s[r->n];
	memset(s, 0, sizeof(*s));
	if (!(s->labels = calloc((size_t)nl + 2, sizeof(*s->labels))))
		return NULL;
	r->n++;		/* from here query_result_free frees what it holds */
	if (name) {
		s->labels[k].key = strdup("__name__");
		s->labels[k].value = strdup(name);
		if (!s->labels[k].key || !s->labels[k].value)
			return NULL;
		s->nlabels = ++k;
	}
	for (int i = 0; i < nl; i++, k++) {
		if (!l[i].value[0]) {	/* PromQL: an empty label is no label (ALERTS' host) */
			k--;
			continue;
		}
		s->labels[k].key = strdup(l[i].key);
		s->labels[k].value = strdup(l[i].value);
		s->nlabels = k + 1;
		if (!s->labels[k].key || !s->labels[k].value)
			return NULL;
	}
	return s;
}

static int series_point(struct query_series *s, uint64_t ts, double v)
{
	size_t cap = s->cap;

	if (ARRAY_GROW(s->ts, cap, s->n + 1, 8))
		return -ENOMEM;
	if (ARRAY_GROW(s->v, s->cap, s->n + 1, 8))
		return -ENOMEM;
	s->ts[s->n] = ts;
	s->v[s->n++] = v;
	return 0;
}

/*
 * Which of r's series a step's values go to: by their label set's
 * rendering (keys), and, since a range query's steps mostly repeat the
 * one before, first by the series element i went to then (hint[i]).
 */
struct collector {
	struct strmap keys;
	uint32_t *hint;			/* per element index: a series, or UINT32_MAX */
	size_t nhint;
};

/* Whether series s is what series_new makes of labels l[0..nl) and name. */
static int series_made_from(const struct query_series *s, const struct label *l, int nl,
			    const char *name)
{
	int k = 0;

	if (name && (!s->nlabels || strcmp(s->labels[0].key, "__name__") ||
		     strcmp(s->labels[0].value, name)))
		return 0;
	k = name ? 1 : 0;
	for (int i = 0; i < nl; i++, k++) {
		/* an empty label is no label: such a set goes by its rendering */
		if (!l[i].value[0] || k >= s->nlabels || strcmp(s->labels[k].key, l[i].key) ||
		    strcmp(s->labels[k].value, l[i].value))
			return 0;
	}
	return k == s->nlabels;
}

/* Add value v at t to r: one series per label set. */
static int collect(struct query_result *r, struct collector *c, const struct value *v,
		   const char *name, uint64_t t)
{
	struct strbuf key = STRBUF_INIT;
	int ret = 0;

	if (!v->is_vector) {
		struct query_series *s = r->n ? &r->s[0] : series_new(r, NULL, 0, NULL);

		return s && !series_point(s, t, v->scalar) ? 0 : -ENOMEM;
	}
	if (v->n > c->nhint) {
		uint32_t *h = realloc(c->hint, v->n * sizeof(*h));

		if (!h)
			return -ENOMEM;
		for (size_t i = c->nhint; i < v->n; i++)
			h[i] = UINT32_MAX;
		c->hint = h;
		c->nhint = v->n;
	}
	for (size_t i = 0; i < v->n && !ret; i++) {
		const struct velem *e = &v->e[i];
		struct query_series *s;
		uint32_t idx = c->hint[i];

		if (idx < r->n && series_made_from(&r->s[idx], e->labels, e->nlabels, name)) {
			ret = series_point(&r->s[idx], t, e->v);
			continue;
		}
		strbuf_reset(&key);
		labels_format(&key, e->labels, e->nlabels);
		if (strbuf_failed(&key)) {
			ret = -ENOMEM;
		} else if (strmap_get(&c->keys, strbuf_str(&key), &idx)) {
			ret = series_point(&r->s[idx], t, e->v);
		} else if (!(s = series_new(r, e->labels, e->nlabels, name)) ||
			   strmap_put(&c->keys, strbuf_str(&key), (uint32_t)(r->n - 1)) ||
			   series_point(s, t, e->v)) {
			ret = -ENOMEM;
		} else {
			idx = (uint32_t)(r->n - 1);
		}
		c->hint[i] = idx;
	}
	strbuf_release(&key);
	return ret;
}

static int series_cmp(const void *a, const void *b)
{
	const struct query_series *x = a, *y = b;

	for (int i = 0; i < x->nlabels && i < y->nlabels; i++) {
		int c = strcmp(x->labels[i].key, y->labels[i].key);

		if (c || (c = strcmp(x->labels[i].value, y->labels[i].value)))
			return c;
	}
	return x->nlabels - y->nlabels;
}

/* ---- ALERTS and ALERTS_FOR_STATE ------------------------------------ */

/*
 * Prometheus' series of its alerting rules, from the rules engine's alert
 * checkpoint ({fl:alerts}:rules): ALERTS{alertname, alertstate, severity,
 * labels...} 1 at every step where the alert was pending or firing, and
 * ALERTS_FOR_STATE{...} the time (s) it went pending.  The checkpoint is
 * what is active now, so they hold those alerts from when each began; an
 * alert that has since resolved is not among them (its notifications
 * are: the alerter's /api/v2/alerts, fl:notifications).  They are a
 * pseudo host of their own, "", whose points are the query's steps.
 */
static char *const alert_names[] = { "ALERTS", "ALERTS_FOR_STATE" };

#define ALERT_LABELS SNAPSHOT_MAX_LABELS

struct alert_rec {
	struct label l[ALERT_LABELS];
	int nl;
	uint64_t since_ms, fired_ms;
};

struct alert_recs {
	struct alert_rec *a;
	size_t n, cap;
	size_t refused;			/* records of the wrong shape, or too many labels */
	int nomem;
};

static void alert_rec_one(const char *fp, const char *json, void *arg)
{
	struct alert_recs *r = arg;
	struct alert_rec *a;

	(void)fp;
	if (r->nomem || ARRAY_GROW(r->a, r->cap, r->n + 1, 16)) {
		r->nomem = 1;
		return;
	}
	a = &r->a[r->n];
	a->nl = engine_alert_series(json, a->l, ALERT_LABELS - 1, &a->since_ms, &a->fired_ms);
	if (a->nl < 0)
		r->refused++;
	else
		r->n++;
}

static void alert_recs_free(struct alert_recs *r)
{
	for (size_t i = 0; i < r->n; i++)
		for (int k = 0; k < r->a[i].nl; k++) {
			free(r->a[i].l[k].key);
			free(r->a[i].l[k].value);
		}
	free(r->a);
}

struct alert_use {
	int used;
	const struct node *bad;		/* a range or offset over one */
};

static void alert_sel(const struct node *sel, void *arg)
{
	struct alert_use *u = arg;

	for (size_t i = 0; i < sizeof(alert_names) / sizeof(alert_names[0]); i++)
		if (!strcmp(sel->wire, alert_names[i])) {
			u->used = 1;
			if ((sel->range_ns || sel->offset_ns) && !u->bad)
				u->bad = sel;
		}
}

/* The pseudo host's point at t: every alert active then. */
static int alerts_point(struct qhost *h, const struct alert_recs *r, uint64_t t, uint64_t keep_ms)
{
	struct snapshot s;

	if (snapshot_init(&s, "", t, 0, 0, 1))
		return -ENOMEM;
	for (size_t i = 0; i < r->n; i++) {
		const struct alert_rec *a = &r->a[i];
		struct label l[ALERT_LABELS];
		struct series *ser;

		if (t < a->since_ms)
			continue;
		memcpy(l, a->l, (size_t)a->nl * sizeof(*l));
		if (!(ser = snapshot_add_labels(&s, "ALERTS_FOR_STATE", SERIES_GAUGE, l,
						(uint32_t)a->nl)))
			goto nomem;
		ser->gauge.last = ser->gauge.min = ser->gauge.max = ser->gauge.sum =
			(double)(a->since_ms / 1000);
		ser->gauge.n = 1;
		l[a->nl].key = "alertstate";
		l[a->nl].value = a->fired_ms && t >= a->fired_ms ? "firing" : "pending";
		if (!(ser = snapshot_add_labels(&s, "ALERTS", SERIES_GAUGE, l, (uint32_t)a->nl + 1)))
			goto nomem;
		ser->gauge.last = ser->gauge.min = ser->gauge.max = ser->gauge.sum = 1;
		ser->gauge.n = 1;
	}
	return columns_push(&h->c, &s, keep_ms, NULL);
nomem:
	snapshot_free(&s);
	return -ENOMEM;
}

/*
 * When n reads ALERTS or ALERTS_FOR_STATE, their pseudo host in ql with a
 * point at every step.
 */
static enum query_error add_alerts(struct conn *rc, struct qload *ql, const struct node *n,
				   uint64_t start_ms, uint64_t end_ms, uint64_t step_ms,
				   char *err, size_t errlen)
{
	struct alert_use u = { 0, NULL };
	struct alert_recs r = { 0 };
	enum query_error ret = QUERY_OK;
	struct qhost *h;

	expr_each_selector(n, alert_sel, &u);
	if (!u.used)
		return QUERY_OK;
	if (u.bad) {
		snprintf(err, errlen, QUERY_PARAM "%d:%d: %s: it is answered from the alert checkpoint at each "
			 "step, with no history to take a range or offset over (what fired before: "
			 "the alerter's /api/v2/alerts and fl:notifications)", u.bad->line,
			 u.bad->col, u.bad->metric);
		return QUERY_BAD_DATA;
	}
	if (store_alerts_state_read(rc, alert_rec_one, &r, err, errlen) < 0) {
		alert_recs_free(&r);
		return QUERY_UNAVAILABLE;
	}
	if (r.nomem || add_host(ql, ""))
		goto nomem;
	h = &ql->h[ql->nh - 1];
	h->alerts = 1;
	for (uint64_t t = start_ms;; t += step_ms) {
		if (alerts_point(h, &r, t, ql->keep_ms))
			goto nomem;
		if (!step_ms || t + step_ms > end_ms)
			break;
	}
	goto out;
nomem:
	snprintf(err, errlen, "out of memory reading the alert checkpoint");
	ret = QUERY_INTERNAL;
out:
	alert_recs_free(&r);
	return ret;
}

/* ---- the query ------------------------------------------------------- */

/*
 * The tier a query reading [from_ms, end_ms] at step_ms reads (query.h),
 * and in who why (for the rollup check's messages).
 */
static uint32_t choose_tier(const struct query_opts *o, uint64_t from_ms, uint64_t step_ms,
			    uint64_t now_ms, char *who, size_t len)
{
	static const char *const names[] = { "1 s", "1-minute", "1-hour" };
	char d[32];
	uint64_t age = now_ms > from_ms ? now_ms - from_ms : 0;
	int k;

	if (step_ms < 60000 && age <= o->retention_ms[0])
		return 1;
	k = step_ms < 3600000 && age <= o->retention_ms[1] ? 1 : 2;
	/* why: its step, or how far back it reads (past the finer tier's retention) */
	if (step_ms >= (k == 1 ? 60000ULL : 3600000ULL))
		snprintf(who, len, "a query with a step of %s or more reads the %s tier",
			 k == 1 ? "1m" : "1h", names[k]);
	else
		snprintf(who, len, "a query reaching back past the %s tier's retention (%s) reads "
			 "the %s tier", names[k - 1],
			 duration_format(o->retention_ms[k - 1] * 1000000, d, sizeof(d)), names[k]);
	return k == 1 ? 60 : 3600;
}

/* How old a host's newest point may be and still take part, on tier. */
static uint64_t stale_of(const struct query_opts *o, uint32_t tier)
{
	return tier == 1 ? (o->stale_ms ? o->stale_ms : 5000) : 2ULL * tier * 1000;
}

/*
 * Every host's window at t into win: those with a point no older than
 * reach (the query's longest range plus the staleness; instant selectors
 * apply the staleness alone, eval_at).
 */
static size_t windows_at(const struct qload *ql, uint64_t t, uint64_t reach,
			 struct host_window *win)
{
	size_t nw = 0;

	for (size_t i = 0; i < ql->nh; i++) {
		const struct qhost *h = &ql->h[i];
		long k = columns_len(&h->c) ? columns_last_at(&h->c, t) : -1;

		if (k < 0 || columns_ts(&h->c, (size_t)k) + reach < t)
			continue;
		win[nw].host = h->name;
		win[nw].c = &h->c;
		win[nw].n = (size_t)k + 1;
		win[nw].minutes = ql->tier != 1 && !h->alerts ? h->m : NULL;
		win[nw].nminutes = win[nw].minutes ? (size_t)k + 1 : 0;
		nw++;
	}
	return nw;
}

/* A range Prometheus refuses before it parses the query: 1 (said in err) or 0. */
static int range_refused(uint64_t start_ms, uint64_t end_ms, uint64_t step_ms, char *err,
			 size_t errlen)
{
	if (end_ms < start_ms || (step_ms && (end_ms - start_ms) / step_ms >= QUERY_MAX_STEPS)) {
		snprintf(err, errlen, end_ms < start_ms ? "end timestamp must not be before start "
			 "time" : "exceeded maximum resolution of 11,000 points per timeseries. "
			 "Try decreasing the query resolution (?step=XX)");
		return 1;
	}
	return 0;
}

enum query_error query_run(struct conn *rc, const struct query_opts *o, const char *expr,
			   uint64_t start_ms, uint64_t end_ms, uint64_t step_ms,
			   struct query_result *out, char *err, size_t errlen)
{
	struct node *n = NULL;
	enum query_error ret;
	char why[512];

	memset(out, 0, sizeof(*out));
	if (range_refused(start_ms, end_ms, step_ms, err, errlen))
		return QUERY_BAD_DATA;
	if (expr_parse_query(expr, alert_names, 2, &n, why, sizeof(why))) {
		snprintf(err, errlen, QUERY_PARAM "%s", why);
		return QUERY_BAD_DATA;
	}
	ret = query_run_expr(rc, o, n, start_ms, end_ms, step_ms, out, err, errlen);
	expr_free(n);
	return ret;
}

enum query_error query_run_expr(struct conn *rc, const struct query_opts *o,
				const struct node *n, uint64_t start_ms, uint64_t end_ms,
				uint64_t step_ms, struct query_result *out, char *err,
				size_t errlen)
{
	struct qload ql = { .o = o };
	struct query_hot *hot = NULL;
	struct collector keys = { 0 };
	struct host_window *win = NULL;
	const struct node *at;
	const char *name;
	uint64_t lookback, from, stale, pinned, now_ms = time_wall_ns() / 1000000;
	char who[160], why[300];
	enum query_error ret = QUERY_OK;

	memset(out, 0, sizeof(*out));
	strmap_init(&ql.index);
	strmap_init(&keys.keys);
	ql.deadline_ns = time_mono_ns() + (o->timeout_ms ? o->timeout_ms : 120000) * 1000000;
	if (range_refused(start_ms, end_ms, step_ms, err, errlen))
		return QUERY_BAD_DATA;
	lookback = expr_max_range(n) / 1000000;
	/* `@ <time>` before the start reads back from there */
	if ((pinned = expr_earliest_at(n)) && pinned < start_ms)
		lookback += start_ms - pinned;
	ql.tier = choose_tier(o, start_ms > lookback ? start_ms - lookback : 0, step_ms, now_ms,
			      who, sizeof(who));
	stale = stale_of(o, ql.tier);
	if (ql.tier != 1 && expr_rollup_check(n, who, alert_names, 2, &at, why, sizeof(why))) {
		snprintf(err, errlen, QUERY_PARAM "%d:%d: %s", at->line, at->col, why);
		ret = QUERY_BAD_DATA;
		goto out;
	}
	from = start_ms > lookback + stale ? start_ms - lookback - stale : 0;
	ql.keep_ms = end_ms - from + 1000;
	ql.reserve = 1;
	keep_only(&ql, n);
	if (o->hot && ql.tier == 1) {
		pthread_rwlock_rdlock(&o->hot->lock);
		if (hot_serves(o->hot, &ql, n, from, end_ms))
			hot = o->hot;	/* the lock is held until the result is made */
		else
			pthread_rwlock_unlock(&o->hot->lock);
	}
	if ((!hot && ((ret = find_hosts(rc, &ql, n, err, errlen)) ||
		      (ret = o->hot && ql.tier == 1 ?
			     read_with_tail(rc, o->hot, &ql, from, end_ms, &out->memory_from_ms,
					    err, errlen) :
			     read_hosts(rc, &ql, from, end_ms, err, errlen)))) ||
	    (ret = add_alerts(rc, &ql, n, start_ms, end_ms, step_ms, err, errlen)))
		goto out;
	out->from_memory = hot != NULL;
	out->tier = ql.tier;
	out->hosts_read = ql.nh;
	out->samples = ql.samples;
	if (!(win = calloc(ql.nh + 1, sizeof(*win))))
		goto nomem;
	name = expr_result_name(n);
	for (uint64_t t = start_ms;; t += step_ms) {
		struct value v = { 0 };
		size_t nw = windows_at(&ql, t, expr_max_range(n) / 1000000 + stale, win);
		int bad;

		if (time_mono_ns() > ql.deadline_ns) {
			snprintf(err, errlen, "query timed out in query execution (at step %" PRIu64
				 " of %" PRIu64 ")", out->steps,
				 step_ms ? (end_ms - start_ms) / step_ms + 1 : 1);
			ret = QUERY_TIMEOUT;
			goto out;
		}
		if (eval_at(n, win, nw, t, start_ms, end_ms, stale, &v, err, errlen)) {
			value_free(&v);
			ret = QUERY_EXECUTION;
			goto out;
		}
		out->steps++;
		if (!step_ms && !v.is_vector) {
			out->type = QUERY_SCALAR;
			out->scalar = v.scalar;
			bad = 0;
		} else {
			out->type = !v.is_vector || step_ms ? QUERY_MATRIX : QUERY_VECTOR;
			bad = collect(out, &keys, &v, name, t);
		}
		value_free(&v);
		if (bad)
			goto nomem;
		if (!step_ms || t + step_ms > end_ms)
			break;
	}
	out->at_ms = end_ms;
	if (out->type == QUERY_MATRIX)
		qsort(out->s, out->n, sizeof(*out->s), series_cmp);
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	ret = QUERY_INTERNAL;
out:
	if (hot)
		pthread_rwlock_unlock(&hot->lock);
	free(win);
	strmap_free(&keys.keys);
	free(keys.hint);
	qload_free(&ql);
	if (ret)
		query_result_free(out);
	return ret;
}

/* ---- series, label names and values ---------------------------------- */

struct series_walk {
	const struct node **sel;
	int nsel;
	query_series_cb cb;
	void *arg;
	struct label l[SNAPSHOT_MAX_LABELS * 2 + 3];
};

/* The labels an element of series ser of s carries (eval's), then name. */
static int series_labels(const struct snapshot *s, const struct series *ser, struct label *l,
			 int max)
{
	int n = 0, have_host = 0;

	for (uint32_t i = 0; i < ser->nlabels && n < max; i++)
		l[n++] = ser->labels[i];
	for (uint32_t i = 0; i < s->nlabels && n < max; i++) {
		int dup = 0;

		for (uint32_t k = 0; k < ser->nlabels; k++)
			dup |= !strcmp(ser->labels[k].key, s->labels[i].key);
		if (!dup)
			l[n++] = s->labels[i];
	}
	for (int i = 0; i < n; i++)
		have_host |= !strcmp(l[i].key, "host");
	if (!have_host && n < max) {
		l[n].key = "host";
		l[n++].value = s->host;
	}
	return n;
}

/* Emit one series named name (with le when not NULL) if le passes sel's le matchers. */
static void emit(struct series_walk *w, const struct node *sel, int nl, const char *name,
		 const char *le)
{
	struct label *l = w->l;
	int n = nl;

	for (int i = 0; sel && le && i < sel->nm; i++)
		if (!strcmp(sel->m[i].label, "le") && !matcher_ok(&sel->m[i], le))
			return;
	l[n].key = "__name__";
	l[n++].value = (char *)name;
	if (le) {
		l[n].key = "le";
		l[n++].value = (char *)le;
	}
	qsort(l, (size_t)n, sizeof(*l), label_key_cmp);
	w->cb(l, n, w->arg);
}

/* A series of s as the API lists it: a histogram as its three parts. */
static void walk_series(struct series_walk *w, const struct snapshot *s, const struct series *ser,
			const struct node *sel)
{
	const struct metric_info *mi = catalog_find_wire(ser->name);
	int nl = series_labels(s, ser, w->l, (int)(sizeof(w->l) / sizeof(w->l[0])) - 2);
	char name[160];

	if (!mi)
		return;	/* not faultline's: nothing in the catalog names it */
	if (ser->kind != SERIES_HISTOGRAM) {
		emit(w, sel, nl, mi->name, NULL);
		return;
	}
	if (!sel || sel->hist_part == 0 || sel->hist_part == 1) {
		const double *bound;
		const char *const *le;
		int nb = catalog_hist_bounds(mi, &bound, &le);

		snprintf(name, sizeof(name), "%s_bucket", mi->name);
		for (int i = 0; i < nb; i++)
			emit(w, sel, nl, name, le[i]);
		emit(w, sel, nl, name, "+Inf");
	}
	if (!sel || sel->hist_part != 1) {
		snprintf(name, sizeof(name), "%s_sum", mi->name);
		if (!sel || sel->hist_part != 3)
			emit(w, NULL, nl, name, NULL);
		snprintf(name, sizeof(name), "%s_count", mi->name);
		if (!sel || sel->hist_part != 2)
			emit(w, NULL, nl, name, NULL);
	}
}

enum query_error query_series(struct conn *rc, const struct query_opts *o,
			      const char *const *sel, int nsel, uint64_t start_ms,
			      uint64_t end_ms, query_series_cb cb, void *arg, char *err,
			      size_t errlen)
{
	struct qload ql = { .o = o };
	struct series_walk w = { .cb = cb, .arg = arg, .nsel = nsel };
	struct node **sels = calloc((size_t)nsel + 1, sizeof(*sels));
	struct node *all = NULL;
	uint64_t now_ms = time_wall_ns() / 1000000, from, stale;
	char who[160];
	enum query_error ret = QUERY_OK;

	strmap_init(&ql.index);
	ql.deadline_ns = time_mono_ns() + (o->timeout_ms ? o->timeout_ms : 120000) * 1000000;
	if (!sels) {
		snprintf(err, errlen, "out of memory");
		return QUERY_INTERNAL;
	}
	for (int i = 0; i < nsel; i++) {
		char perr[256];

		if (expr_parse(sel[i], &sels[i], perr, sizeof(perr)) || sels[i]->t != N_SEL ||
		    sels[i]->range_ns) {
			snprintf(err, errlen, "invalid parameter \"match[]\": %s: %s", sel[i],
				 sels[i] && !sels[i]->range_ns ? "a selector is a metric name with "
				 "optional {matchers}" : sels[i] ? "a range is not a selector here" :
				 perr);
			ret = QUERY_BAD_DATA;
			goto out;
		}
		/* one tree holding them all, for find_hosts' reach: an `or` chain */
		if (all) {
			struct node *b = calloc(1, sizeof(*b));

			if (!b)
				goto nomem;
			b->t = N_BIN;
			b->op = OP_OR;
			b->l = all;
			b->r = sels[i];
			all = b;
		} else {
			all = sels[i];
		}
	}
	w.sel = (const struct node **)sels;
	/* each host's newest snapshot at end_ms, on the finest tier that has it */
	ql.tier = choose_tier(o, end_ms, 0, now_ms, who, sizeof(who));
	stale = stale_of(o, ql.tier);
	from = end_ms > stale ? end_ms - stale : 0;
	if (from < start_ms)
		from = start_ms;
	ql.keep_ms = 1;	/* the newest point is all it looks at */
	if ((ret = find_hosts(rc, &ql, all, err, errlen)) ||
	    (ret = read_hosts(rc, &ql, from, end_ms, err, errlen)))
		goto out;
	for (size_t h = 0; h < ql.nh; h++) {
		const struct snapshot *s = &ql.h[h].c.newest;

		if (!columns_len(&ql.h[h].c))
			continue;
		for (uint32_t i = 0; i < s->nseries; i++) {
			if (!nsel) {
				walk_series(&w, s, &s->series[i], NULL);
				continue;
			}
			for (int k = 0; k < nsel; k++)
				if (eval_sel_matches(sels[k], s, &s->series[i]))
					walk_series(&w, s, &s->series[i], sels[k]);
		}
	}
	goto out;
nomem:
	snprintf(err, errlen, "out of memory");
	ret = QUERY_INTERNAL;
out:
	/* free the or-chain's own nodes, not the selectors it links */
	while (all && all->t == N_BIN) {
		struct node *l = all->l;

		free(all);
		all = l;
	}
	for (int i = 0; i < nsel; i++)
		expr_free(sels[i]);
	free(sels);
	qload_free(&ql);
	return ret;
}
