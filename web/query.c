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
#include "web/query_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/array.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "model/catalog.h"
#include "rules/lang/columns.h"
#include "rules/lang/eval.h"
#include "rules/lang/expr.h"
#include "rules/engine/engine.h"
#include "rules/lang/rules.h"
#include "store/alert_checkpoint.h"
#include "store/conn.h"

/* What Prometheus says before an error in the query itself. */
#define QUERY_PARAM "invalid parameter \"query\": "
/*
 * Steps from which a range query orders each host's columns by name
 * (eval_columns_by_name: ~8 compares a column of ~150) to find a
 * selector's at every step by a search instead of a look at every column.
 */
#define QUERY_SORT_STEPS 16

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
	/*
	 * per element index: the labels (their string pointers) that went to
	 * hint.  A query's label strings stay where they are until it ends
	 * (eval.h: borrowed from its columns and its expression), so the
	 * same pointers are the same labels: no compare of the strings.
	 */
	struct label **seen;
	int *nseen;			/* -1: none */
	size_t nhint;
};

/* Element i went to its hint with labels l[0..nl). */
static void collector_saw(struct collector *c, size_t i, const struct label *l, int nl)
{
	struct label *keep = realloc(c->seen[i], ((size_t)nl + 1) * sizeof(*keep));

	if (!keep) {
		c->nseen[i] = -1;
		return;
	}
	memcpy(keep, l, (size_t)nl * sizeof(*keep));
	c->seen[i] = keep;
	c->nseen[i] = nl;
}

static void collector_free(struct collector *c)
{
	for (size_t i = 0; c->seen && i < c->nhint; i++)
		free(c->seen[i]);
	free(c->seen);
	free(c->nseen);
	free(c->hint);
	strmap_free(&c->keys);
}

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
		struct label **seen;
		int *nseen;

		if (!h)
			return -ENOMEM;
		c->hint = h;
		if (!(seen = realloc(c->seen, v->n * sizeof(*seen))))
			return -ENOMEM;
		c->seen = seen;
		if (!(nseen = realloc(c->nseen, v->n * sizeof(*nseen))))
			return -ENOMEM;
		c->nseen = nseen;
		for (size_t i = c->nhint; i < v->n; i++) {
			h[i] = UINT32_MAX;
			seen[i] = NULL;
			nseen[i] = -1;
		}
		c->nhint = v->n;
	}
	for (size_t i = 0; i < v->n && !ret; i++) {
		const struct velem *e = &v->e[i];
		struct query_series *s;
		uint32_t idx = c->hint[i];

		if (idx < r->n && c->nseen[i] == e->nlabels &&
		    !memcmp(c->seen[i], e->labels, (size_t)e->nlabels * sizeof(*e->labels))) {
			ret = series_point(&r->s[idx], t, e->v);
			continue;
		}
		if (idx < r->n && series_made_from(&r->s[idx], e->labels, e->nlabels, name)) {
			collector_saw(c, i, e->labels, e->nlabels);
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
		if (!ret)
			collector_saw(c, i, e->labels, e->nlabels);
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
	if (r.nomem || qload_add_host(ql, ""))
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
 * Index of the last point of c at or before t, or -1; *at holds the one of
 * the step before (t only grows; -2: none yet): a step of a range query
 * over points as dense as its steps moves it by one or two, found by a
 * few compares instead of a binary search of the hour.
 */
static long last_at_from(const struct columns *c, uint64_t t, long *at)
{
	size_t len = columns_len(c);
	long k = *at;

	if (k >= -1 && (k < 0 || columns_ts(c, (size_t)k) <= t)) {
		for (int hop = 0; hop < 8; hop++) {
			if ((size_t)(k + 1) >= len || columns_ts(c, (size_t)(k + 1)) > t)
				return *at = k;
			k++;
		}
	}
	return *at = len ? columns_last_at(c, t) : -1;
}

/*
 * Every host's window at t into win: those with a point no older than
 * reach (the query's longest range plus the staleness; instant selectors
 * apply the staleness alone, eval_at).  at: per host, where the step
 * before left it (last_at_from).
 */
static size_t windows_at(const struct qload *ql, uint64_t t, uint64_t reach,
			 struct host_window *win, struct sel_memo **memo, uint32_t **by_name,
			 long *at)
{
	size_t nw = 0;

	for (size_t i = 0; i < ql->nh; i++) {
		const struct qhost *h = &ql->h[i];
		long k = last_at_from(&h->c, t, &at[i]);

		if (k < 0 || columns_ts(&h->c, (size_t)k) + reach < t)
			continue;
		win[nw].host = h->name;
		win[nw].c = &h->c;
		win[nw].n = (size_t)k + 1;
		win[nw].minutes = ql->tier != 1 && !h->alerts ? h->m : NULL;
		win[nw].nminutes = win[nw].minutes ? (size_t)k + 1 : 0;
		win[nw].memo = memo ? memo[i] : NULL;
		win[nw].by_name = by_name ? by_name[i] : NULL;
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
	struct sel_memo **memo = NULL;
	uint32_t **by_name = NULL;
	long *at_step = NULL;
	const struct node *at;
	const char *name;
	uint64_t lookback, from, stale, pinned, reach, now_ms = time_wall_ns() / 1000000;
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
	qload_keep_only(&ql, n);
	if (o->hot && ql.tier == 1 && query_hot_serves(o->hot, &ql, n, from, end_ms))
		hot = o->hot;	/* its lock is held until the result is made */
	if ((!hot && ((ret = qload_find_hosts(rc, &ql, n, err, errlen)) ||
		      (ret = o->hot && ql.tier == 1 ?
			     query_hot_read_with_tail(rc, o->hot, &ql, from, end_ms,
						      &out->memory_from_ms, err, errlen) :
			     qload_read_hosts(rc, &ql, from, end_ms, err, errlen)))) ||
	    (ret = add_alerts(rc, &ql, n, start_ms, end_ms, step_ms, err, errlen)))
		goto out;
	out->from_memory = hot != NULL;
	out->tier = ql.tier;
	out->hosts_read = ql.nh;
	out->samples = ql.samples;
	if (!(win = calloc(ql.nh + 1, sizeof(*win))) ||
	    !(at_step = malloc((ql.nh + 1) * sizeof(*at_step))))
		goto nomem;
	for (size_t i = 0; i < ql.nh; i++)
		at_step[i] = -2;
	reach = expr_max_range(n) / 1000000 + stale;
	/*
	 * a range query's steps read the same columns: what a selector makes
	 * of each (matches, labels) is worked out at its first step alone, and
	 * with enough steps to pay for sorting them (a few compares a column),
	 * the columns of a name are found by a search in their order by name
	 */
	if (step_ms && start_ms < end_ms) {
		int sort = (end_ms - start_ms) / step_ms + 1 >= QUERY_SORT_STEPS;

		if (!(memo = calloc(ql.nh + 1, sizeof(*memo))) ||
		    (sort && !(by_name = calloc(ql.nh + 1, sizeof(*by_name)))))
			goto nomem;
		for (size_t i = 0; i < ql.nh; i++)
			if (ql.h[i].c.ncol &&
			    (!(memo[i] = calloc(ql.h[i].c.ncol, sizeof(**memo))) ||
			     (sort && !(by_name[i] = eval_columns_by_name(&ql.h[i].c)))))
				goto nomem;
	}
	name = expr_result_name(n);
	for (uint64_t t = start_ms;; t += step_ms) {
		struct value v = { 0 };
		size_t nw = windows_at(&ql, t, reach, win, memo, by_name, at_step);
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
	for (size_t i = 0; memo && i < ql.nh; i++)
		sel_memo_free(memo[i], ql.h[i].c.ncol);
	free(memo);
	for (size_t i = 0; by_name && i < ql.nh; i++)
		free(by_name[i]);
	free(by_name);
	if (hot)
		query_hot_release(hot);
	free(win);
	free(at_step);
	collector_free(&keys);
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
		if (!strcmp(sel->m[i].label, "le") && !query_matcher_ok(&sel->m[i], le))
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
		/* one tree holding them all, for qload_find_hosts' reach: an `or` chain */
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
	if ((ret = qload_find_hosts(rc, &ql, all, err, errlen)) ||
	    (ret = qload_read_hosts(rc, &ql, from, end_ms, err, errlen)))
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
