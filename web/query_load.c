/*
 * query_load.c - a query's hosts and their history: which registered
 * hosts its selectors can reach (a host="..." selector reads that host's
 * record alone), and their snapshots over the range read from Redis into
 * columns, the series the query names keeping their points, counted
 * against --query.max-samples and the deadline.  See query_internal.h.
 */
#include "web/query.h"
#include "web/query_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "model/catalog.h"
#include "model/host_entry.h"
#include "rules/lang/rules.h"
#include "store/host_registry.h"
#include "store/store.h"

/* Whether a series of this name is one the query's selectors name. */
static int qload_picks_named(const char *name, void *arg)
{
	const struct qload *ql = arg;

	for (int i = 0; i < ql->nkeep; i++)
		if (!strcmp(name, ql->keep[i]))
			return 1;
	return 0;
}

int qload_keeps_named(const struct series *def, void *arg)
{
	return qload_picks_named(def->name, arg);
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
void qload_keep_only(struct qload *ql, const struct node *n)
{
	ql->policy = (struct columns_policy){ qload_keeps_named, ql, 1 };
	ql->pol = &ql->policy;
	expr_each_selector(n, keep_sel, ql);
}

/* ---- which hosts a query can reach ----------------------------------- */

int query_matcher_ok(const struct expr_matcher *m, const char *v)
{
	switch (m->op) {
	case '=': return !strcmp(v, m->value);
	case '!': return strcmp(v, m->value) != 0;
	case '~': return promregex_match(&m->re, v);
	case '^': return !promregex_match(&m->re, v);
	}
	return 1;
}

/*
 * Whether selector sel may match a series of host s: every matcher on
 * host, or on a label the host carries (the probe's, the topology's),
 * holds.  Matchers on other labels are the series' own: not known here.
 */
static int sel_may_match(const struct node *sel, const struct snapshot *s)
{
	for (int i = 0; i < sel->nm; i++) {
		const struct expr_matcher *m = &sel->m[i];
		const char *v = NULL;

		if (m->label[0] == '_' && !strcmp(m->label, "__name__"))
			continue;	/* the series' name, never a host's label */
		if (!strcmp(m->label, "host"))
			v = s->host;
		/* the first byte before the call: a 10,000-host scan is these compares */
		for (uint32_t k = 0; !v && k < s->nlabels; k++)
			if (s->labels[k].key[0] == m->label[0] && !strcmp(s->labels[k].key, m->label))
				v = s->labels[k].value;
		if (v && !query_matcher_ok(m, v))
			return 0;
	}
	return 1;
}

static void plan_sel(const struct node *sel, void *arg)
{
	struct reach_plan *p = arg;

	if (!catalog_find_wire(sel->wire))
		return;	/* ALERTS: no host's series */
	if (p->nsel < (int)(sizeof(p->sel) / sizeof(p->sel[0])))
		p->sel[p->nsel] = sel;
	p->nsel++;
}

void qload_reach_plan(struct reach_plan *p, const struct node *n)
{
	memset(p, 0, sizeof(*p));
	p->n = n;
	if (n)
		expr_each_selector(n, plan_sel, p);
}

struct reach {
	const struct snapshot *host;
	int any;
};

static void reach_one(const struct node *sel, void *arg)
{
	struct reach *r = arg;

	if (!r->any && catalog_find_wire(sel->wire) && sel_may_match(sel, r->host))
		r->any = 1;
}

/* ---- the registry's listing, reused (query.h: host_list) -------------- */

/* One listing of the whole registry: immutable once published. */
struct host_listing {
	int refs;			/* the list's own, and each reader's */
	uint64_t listed_ms;		/* when its listing began (wall clock) */
	const struct topology *topo;	/* what its stubs were made with */
	struct snapshot *stub;		/* each host: its registry labels, the topology's applied */
	size_t n, cap;
};

struct host_list {
	pthread_mutex_t lock;
	struct host_listing *cur;	/* NULL: none yet */
	uint64_t max_age_ms;
};

struct host_list *host_list_new(uint64_t max_age_ms)
{
	struct host_list *hl = calloc(1, sizeof(*hl));

	if (!hl)
		return NULL;
	pthread_mutex_init(&hl->lock, NULL);
	hl->max_age_ms = max_age_ms;
	return hl;
}

static void listing_free(struct host_listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		snapshot_free(&l->stub[i]);
	free(l->stub);
	free(l);
}

/* A reader's (or the list's) reference to l given back. */
static void listing_put(struct host_list *hl, struct host_listing *l)
{
	int last;

	pthread_mutex_lock(&hl->lock);
	last = !--l->refs;
	pthread_mutex_unlock(&hl->lock);
	if (last)
		listing_free(l);
}

/* The current listing, with a reference, if it is young enough and of topology topo; else NULL. */
static struct host_listing *listing_take(struct host_list *hl, uint64_t now_ms,
					 const struct topology *topo)
{
	struct host_listing *l;

	pthread_mutex_lock(&hl->lock);
	l = hl->cur;
	if (l && l->topo == topo && now_ms < l->listed_ms + hl->max_age_ms)
		l->refs++;
	else
		l = NULL;
	pthread_mutex_unlock(&hl->lock);
	return l;
}

/* l (one reference: the list's) as the current listing, unless a newer one is. */
static void listing_publish(struct host_list *hl, struct host_listing *l)
{
	struct host_listing *old;

	pthread_mutex_lock(&hl->lock);
	old = hl->cur;
	if (old && old->listed_ms > l->listed_ms) {
		old = l;	/* another thread listed after this one began */
	} else {
		hl->cur = l;
	}
	pthread_mutex_unlock(&hl->lock);
	if (old)
		listing_put(hl, old);
}

void host_list_free(struct host_list *hl)
{
	if (!hl)
		return;
	if (hl->cur)
		listing_put(hl, hl->cur);
	pthread_mutex_destroy(&hl->lock);
	free(hl);
}

struct hosts_arg {
	struct qload *ql;
	struct reach_plan plan;		/* of the query (its node NULL: every host) */
	struct host_listing *keep;	/* NULL, or the listing the stubs go to */
	int nomem;
};

/* The most points a host's history is made room for before they arrive. */
#define RESERVE_MAX 4096

int qload_add_host(struct qload *ql, const char *name)
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

int qload_host_reached(const struct reach_plan *p, const struct snapshot *stub,
		       const struct query_opts *o)
{
	int any = 0;

	if (o->hosts) {
		int listed = 0;

		for (size_t i = 0; i < o->nhosts && !listed; i++)
			listed = !strcmp(o->hosts[i], stub->host);
		if (!listed)
			return 0;
	}
	if (!p->n)
		return 1;
	if (p->nsel > (int)(sizeof(p->sel) / sizeof(p->sel[0]))) {
		struct reach r = { stub, 0 };	/* more than the plan holds: walk the tree */

		expr_each_selector(p->n, reach_one, &r);
		return r.any;
	}
	for (int i = 0; i < p->nsel && !any; i++)
		any = sel_may_match(p->sel[i], stub);
	return any;
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
	if (!a->nomem && qload_host_reached(&a->plan, &stub, a->ql->o) && qload_add_host(a->ql, host))
		a->nomem = 1;
	if (a->keep && !a->nomem && !ARRAY_GROW(a->keep->stub, a->keep->cap, a->keep->n + 1, 64)) {
		a->keep->stub[a->keep->n++] = stub;	/* kept for the queries after */
		return;
	}
	if (a->keep) {
		listing_free(a->keep);	/* not whole: not kept */
		a->keep = NULL;
	}
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
enum query_error qload_find_hosts(struct conn *rc, struct qload *ql, const struct node *n,
				  char *err, size_t errlen)
{
	struct hosts_arg a = { .ql = ql };
	struct named_hosts nh = { .all = !n };
	struct host_list *hl = ql->o->registry;
	uint64_t now_ms = time_wall_ns() / 1000000;
	int got;

	qload_reach_plan(&a.plan, n);
	if (n)
		expr_each_selector(n, host_named, &nh);
	if (nh.all && hl && !ql->relist) {
		struct host_listing *l = listing_take(hl, now_ms, ql->o->topology);

		for (size_t i = 0; l && i < l->n && !a.nomem; i++)
			if (qload_host_reached(&a.plan, &l->stub[i], ql->o) &&
			    qload_add_host(ql, l->stub[i].host))
				a.nomem = 1;
		if (l) {
			listing_put(hl, l);
			goto listed;
		}
	}
	if (nh.all && hl && (a.keep = calloc(1, sizeof(*a.keep)))) {
		a.keep->refs = 1;
		a.keep->listed_ms = now_ms;
		a.keep->topo = ql->o->topology;
	}
	if (!nh.all)
		got = store_host_entries_of(rc, nh.name, nh.n, host_seen, &a, err, errlen);
	else
		got = store_host_entries(rc, host_seen, &a, err, errlen);
	if (a.keep && (got < 0 || a.nomem))
		listing_free(a.keep);
	else if (a.keep)
		listing_publish(hl, a.keep);
	if (got < 0)
		return QUERY_UNAVAILABLE;
listed:
	if (a.nomem) {
		snprintf(err, errlen, "out of memory listing the hosts");
		return QUERY_INTERNAL;
	}
	return QUERY_OK;
}

/* ---- reading their history ------------------------------------------- */

/* The limits a read of n more samples reaches (ql->failed set then): 1, else 0. */
static int qload_over(struct qload *ql, uint64_t n)
{
	ql->samples += n;
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
	return 0;
}

int qload_arrived(struct snapshot *s, void *arg)
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
	if (qload_over(ql, s->nseries))
		return 1;
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

/* A copy of a lent point, filed under host h (a chunk may name another inside). */
static int copy_as(struct snapshot *out, const struct snapshot *pt, const struct qhost *h)
{
	if (snapshot_copy(out, pt))
		return -ENOMEM;
	free(out->host);
	if (!(out->host = strdup(h->name))) {
		snapshot_free(out);
		return -ENOMEM;
	}
	return 0;
}

/*
 * An ended chunk's points of host idx, lent (store_run_cb): on the 1 s
 * tier their values go straight into the host's columns
 * (columns_push_run), only the last one copied, as the newest; a rollup
 * tier's (whose windows are kept beside the columns) one by one as copies.
 */
static int qload_arrived_run(struct qload *ql, size_t idx, const struct snapshot *pts, size_t n)
{
	struct qhost *h = &ql->h[idx];
	size_t len = columns_len(&h->c);
	uint64_t samples = 0;
	struct snapshot last;
	int ret;

	if (ql->failed)
		return 1;
	/* not newer than what the host holds: duplicates */
	while (n && len && pts->ts_ms <= columns_ts(&h->c, len - 1)) {
		pts++;
		n--;
	}
	if (!n)
		return 0;
	if (ql->tier != 1) {
		for (size_t i = 0; i < n; i++) {
			if (copy_as(&last, &pts[i], h))
				goto nomem;
			ret = qload_arrived(&last, ql);
			snapshot_free(&last);
			if (ret)
				return ret;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		samples += pts[i].nseries;
	if (qload_over(ql, samples))
		return 1;
	if (copy_as(&last, &pts[n - 1], h))
		goto nomem;
	if (topology_apply(ql->o->topology, &last)) {
		snapshot_free(&last);
		goto nomem;
	}
	ret = columns_push_run(&h->c, pts, n, &last, ql->keep_ms, ql->pol);
	if (ret == -EINVAL) {
		/* the store's runs rise, after what is held: a bug, said as one */
		ql->failed = QUERY_INTERNAL;
		snprintf(ql->why, sizeof(ql->why), "internal error: %s's chunk points out of "
			 "order (%zu from %" PRIu64 " ms)", h->name, n, pts->ts_ms);
		return 1;
	}
	if (ret)
		goto nomem;
	return 0;
nomem:
	ql->failed = QUERY_INTERNAL;
	snprintf(ql->why, sizeof(ql->why), "out of memory reading %s", h->name);
	return 1;
}

void qload_free(struct qload *ql)
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
const struct snapshot *qload_like_newest(size_t host_index, void *arg)
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
	return qload_arrived(s, ((struct read_set *)arg)->ql);
}

static int set_run(size_t k, const struct snapshot *pts, size_t n, void *arg)
{
	const struct read_set *rs = arg;

	return qload_arrived_run(rs->ql, rs->at[k], pts, n);
}

static const struct snapshot *set_like(size_t k, void *arg)
{
	const struct read_set *rs = arg;

	return qload_like_newest(rs->at[k], rs->ql);
}

static int set_picks(const char *name, void *arg)
{
	return qload_picks_named(name, ((struct read_set *)arg)->ql);
}

/*
 * Read the hosts of ql that `which` marks (NULL: all) over [from_ms,
 * to_ms] of ql->tier.
 */
enum query_error qload_read_hosts_of(struct conn *rc, struct qload *ql, const uint8_t *which,
				     uint64_t from_ms, uint64_t to_ms, char *err, size_t errlen)
{
	struct read_set rs = { ql, calloc(ql->nh + 1, sizeof(size_t)) };
	/* a chunk builds the series the query names only (when it names them all) */
	struct store_readers rd = { .snapshot = set_arrived, .like = set_like, .run = set_run,
				    .series = ql->pol ? set_picks : NULL,
				    .cache = ql->o->cache, .arg = &rs };
	const char **names = calloc(ql->nh + 1, sizeof(*names));
	uint64_t *from = calloc(ql->nh + 1, sizeof(*from));
	struct strbuf pick = STRBUF_INIT;
	size_t n = 0;
	int got = 0;

	/*
	 * the cache's name for the pick: the names, in the query's order
	 * ("picks:" alone picks none); no pick, no name (every series)
	 */
	if (rd.series) {
		strbuf_adds(&pick, "picks:");
		for (int i = 0; i < ql->nkeep; i++)
			strbuf_addf(&pick, "%s\n", ql->keep[i]);
		rd.series_key = strbuf_str(&pick);
	}
	if (!names || !from || !rs.at || strbuf_failed(&pick)) {
		free(names);
		free(from);
		free(rs.at);
		strbuf_release(&pick);
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
	strbuf_release(&pick);
	if (ql->failed) {
		snprintf(err, errlen, "%s", ql->why);
		return ql->failed;
	}
	return got < 0 ? QUERY_UNAVAILABLE : QUERY_OK;
}

/* Read every host of ql over [from_ms, to_ms] of ql->tier. */
enum query_error qload_read_hosts(struct conn *rc, struct qload *ql, uint64_t from_ms,
				  uint64_t to_ms, char *err, size_t errlen)
{
	return qload_read_hosts_of(rc, ql, NULL, from_ms, to_ms, err, errlen);
}
