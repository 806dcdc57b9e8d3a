/*
 * eval.c - expression evaluation; see eval.h.
 *
 * Vectors are built by walking each host's newest snapshot for series
 * that match a selector; range functions then walk the same host's older
 * snapshots for the same series (by canonical key).  Binary operations
 * are vector_match.c's.
 */
#include "rules/eval.h"
#include "rules/eval_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/fnv.h"
#include "model/catalog.h"
#include "model/histogram.h"
#include "core/strmap.h"

void value_free(struct value *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->e[i].labels);
	free(v->e);
	memset(v, 0, sizeof(*v));
}

const char *velem_label(const struct velem *e, const char *key)
{
	for (int i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

/* Hash of a sorted label set, for matching vectors' elements. */
uint64_t labels_hash(const struct label *l, int nl)
{
	return snapshot_labels_hash(FNV64_OFFSET, l, (uint32_t)nl);
}

int labels_same(const struct label *a, int na, const struct label *b, int nb)
{
	if (na != nb)
		return 0;
	for (int i = 0; i < na; i++)
		if (strcmp(a[i].key, b[i].key) || strcmp(a[i].value, b[i].value))
			return 0;
	return 1;
}

/* Sort a few labels by key, by insertion (they arrive nearly sorted). */
void labels_sort(struct label *l, int nl)
{
	for (int i = 1; i < nl; i++) {
		struct label t = l[i];
		int k = i;

		while (k > 0 && strcmp(l[k - 1].key, t.key) > 0) {
			l[k] = l[k - 1];
			k--;
		}
		l[k] = t;
	}
}

/* Append an element with labels l (borrowed, sorted by key) and value x. */
int value_push(struct value *v, const struct label *l, int nl, double x)
{
	struct velem *e;

	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;

		e = realloc(v->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		v->e = e;
		v->cap = cap;
	}
	e = &v->e[v->n];
	e->labels = malloc(((size_t)nl + 1) * sizeof(*e->labels));
	if (!e->labels)
		return -ENOMEM;
	if (nl)
		memcpy(e->labels, l, (size_t)nl * sizeof(*l));
	e->nlabels = nl;
	e->hash = labels_hash(e->labels, nl);
	e->v = x;
	v->n++;
	return 0;
}

/* The value of label key of series s of snapshot snap as its element shows it. */
static const char *elem_label(const struct snapshot *snap, const struct series *s,
			      const char *key)
{
	const char *v = series_label(s, key);

	for (uint32_t i = 0; !v && i < snap->nlabels; i++)
		if (!strcmp(snap->labels[i].key, key))
			v = snap->labels[i].value;
	if (!v && !strcmp(key, "host"))
		v = snap->host;
	return v;
}

/*
 * Whether series s of snapshot snap is one sel selects.  Matchers see the
 * labels its element carries — the series' own, the host's (rack, switch)
 * and host — as PromQL's see the labels a target brings.
 */
static int matches(const struct node *sel, const struct snapshot *snap, const struct series *s)
{
	if (s->name_hash != sel->metric_hash || strcmp(s->name, sel->wire))
		return 0;
	for (int i = 0; i < sel->nm; i++) {
		const struct expr_matcher *m = &sel->m[i];
		const char *v;

		if (sel->hist_part == 1 && !strcmp(m->label, "le"))
			continue;	/* the bucket's own label: le_selected() */
		v = elem_label(snap, s, m->label);
		if (!v)
			v = "";
		switch (m->op) {
		case '=': if (strcmp(v, m->value)) return 0; break;
		case '!': if (!strcmp(v, m->value)) return 0; break;
		case '~': if (!promregex_match(&m->re, v)) return 0; break;
		case '^': if (promregex_match(&m->re, v)) return 0; break;
		}
	}
	return 1;
}

/*
 * Labels of an element, sorted by key: the series' own, the host's (rack,
 * switch...) and host=NAME, merged from those three sorted lists; where a
 * key is in more than one, the earlier list wins.
 */
static int elem_labels(const struct snapshot *s, const struct series *ser, struct label *out,
		       int max)
{
	struct label host = { .key = "host", .value = s->host };
	const struct label *src[3] = { ser->labels, s->labels, &host };
	uint32_t len[3] = { ser->nlabels, s->nlabels, 1 }, at[3] = { 0, 0, 0 };
	int n = 0;

	while (n < max) {
		const struct label *next = NULL;

		for (int i = 0; i < 3; i++)
			if (at[i] < len[i] &&
			    (!next || strcmp(src[i][at[i]].key, next->key) < 0))
				next = &src[i][at[i]];
		if (!next)
			break;
		out[n++] = *next;
		for (int i = 0; i < 3; i++)
			if (at[i] < len[i] && !strcmp(src[i][at[i]].key, next->key))
				at[i]++;
	}
	return n;
}

/* d = newer - older for two histogram series, whichever form each is in. */
static void series_hist_delta(struct histogram *d, const struct series *newer,
			      const struct series *older)
{
	struct histogram o;

	if (newer->sparse && older->sparse) {
		hist_subtract_sparse(d, newer->sparse, older->sparse);
		return;
	}
	hist_subtract(d, series_hist(newer, d), series_hist(older, &o));
}

static double scalar_of(const struct series *s)
{
	return s->kind == SERIES_COUNTER ? (double)s->counter.value :
	       s->kind == SERIES_GAUGE ? s->gauge.last : NAN;
}

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

static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* PromQL's quantile of n sorted values: linear between the closest ranks. */
double quantile_sorted(const double *v, size_t n, double q)
{
	double rank, w;
	size_t lo, hi;

	if (!n || isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	rank = q * (double)(n - 1);
	lo = (size_t)rank;
	hi = lo + 1 < n ? lo + 1 : lo;
	w = rank - (double)lo;
	return v[lo] * (1 - w) + v[hi] * w;
}

/*
 * The same series as x (of h->snaps[i]) in h->snaps[i - 1], following the
 * link the engine set when the snapshot arrived (snapshot_link), else by
 * looking it up; NULL if absent.
 */
static const struct series *older(const struct host_window *h, size_t i,
				  const struct series *x, const struct series *latest,
				  uint32_t hint)
{
	const struct snapshot *p = &h->snaps[i - 1];

	if (x && x->link == SERIES_LINK_NONE)
		return NULL;
	if (x && x->link && x->link <= p->nseries)
		return &p->series[x->link - 1];
	return snapshot_find_same(p, latest, hint);
}

/* Index of h's last snapshot at or before t, or -1. */
static ssize_t last_at(const struct host_window *h, uint64_t t)
{
	size_t lo = 0, hi = h->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (h->snaps[mid].ts_ms <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ssize_t)lo - 1;
}

/*
 * delta and quantile read only a window's first and last samples: find the
 * first by binary search and one lookup (with the series' index as the
 * hint) instead of walking every snapshot in between.  Returns NAN when
 * the window holds fewer than two samples.
 */
static double ends_fn(enum range_fn fn, const struct host_window *h, const struct series *latest,
		      uint64_t from, uint32_t hint, double q)
{
	const struct series *first = NULL;
	struct histogram d;

	for (size_t i = (size_t)(last_at(h, from - 1) + 1); i + 1 < h->n && !first; i++) {
		first = snapshot_find_same(&h->snaps[i], latest, hint);
		if (first && first->kind != latest->kind)
			first = NULL;
	}
	if (!first)
		return NAN;
	if (fn == RF_DELTA)
		return scalar_of(latest) - scalar_of(first);
	if (latest->kind != SERIES_HISTOGRAM)
		return NAN;
	series_hist_delta(&d, latest, first);
	return d.count ? (double)hist_quantile(&d, q) : NAN;
}

#define PREFETCH_AHEAD 6

/*
 * Apply a range function to series latest (of the host's newest snapshot)
 * of one host: walk back over the snapshots inside the range.
 */
static double range_fn(enum range_fn fn, const struct host_window *h, const struct series *latest,
		       uint64_t range_ns, double q)
{
	uint64_t now = h->snaps[h->n - 1].ts_ms, from = now - range_ns / 1000000;
	uint32_t hint = (uint32_t)(latest - h->snaps[h->n - 1].series);
	const struct series *first = NULL, *prev = NULL, *x = NULL;
	uint64_t first_ts = 0, prev_ts = 0, second_ts = 0;
	double acc = 0, mn = INFINITY, mx = -INFINITY, sum = 0, sumsq = 0, second = NAN;
	double st = 0, stt = 0, stv = 0;	/* least squares, t in s relative to now */
	double *all = NULL;			/* quantile_over_time's values */
	size_t cnt = 0, changes = 0, resets = 0, cap = 0;

	if (fn == RF_DELTA || fn == RF_QUANTILE)
		return ends_fn(fn, h, latest, from, hint, q);
	for (size_t i = h->n; i-- > 0;) {
		const struct snapshot *s = &h->snaps[i];

		if (s->ts_ms < from)
			break;
		/*
		 * Each step is a cache miss in another snapshot; a series almost
		 * always sits at the same index in all of them, so ask for the
		 * one PREFETCH_AHEAD steps back now and the walk overlaps misses.
		 */
		if (i >= PREFETCH_AHEAD && hint < h->snaps[i - PREFETCH_AHEAD].nseries)
			__builtin_prefetch(&h->snaps[i - PREFETCH_AHEAD].series[hint]);
		x = i + 1 == h->n ? latest : older(h, i + 1, x, latest, hint);
		if (!x || x->kind != latest->kind)
			continue;
		if (!prev) {
			prev = x;	/* the newest sample */
			prev_ts = s->ts_ms;
		}
		if (first && x->kind == SERIES_COUNTER)
			acc += first->counter.value >= x->counter.value ?
			       (double)(first->counter.value - x->counter.value) :
			       (double)first->counter.value;

		double v = scalar_of(x);

		/* first is the next newer sample: did the value change, or go down? */
		if (first) {
			changes += scalar_of(first) != v;
			resets += scalar_of(first) < v;
		}
		first = x;
		first_ts = s->ts_ms;

		if (cnt == 1) {
			second = v;	/* the sample before the newest */
			second_ts = s->ts_ms;
		}
		if (fn == RF_DERIV || fn == RF_PREDICT) {
			double t = ((double)s->ts_ms - (double)now) / 1000.0;

			st += t;
			stt += t * t;
			stv += t * v;
		}
		if (fn == RF_QOT) {
			if (cnt == cap) {
				double *b = realloc(all, (cap = cap ? cap * 2 : 64) * sizeof(*b));

				if (!b) {
					free(all);
					return NAN;
				}
				all = b;
			}
			all[cnt] = v;
		}
		if (v < mn)
			mn = v;
		if (v > mx)
			mx = v;
		sum += v;
		sumsq += v * v;
		cnt++;
	}
	if (!cnt)
		return NAN;
	switch (fn) {
	case RF_IRATE:
	case RF_IDELTA: {
		double last = scalar_of(prev), d;

		if (cnt < 2 || prev_ts <= second_ts)
			return NAN;
		d = last - second;
		if (fn == RF_IDELTA)
			return d;
		if (prev->kind == SERIES_COUNTER && last < second)
			d = last;	/* a reset: the counter restarted from 0 */
		return d / ((double)(prev_ts - second_ts) / 1000.0);
	}
	case RF_DERIV:
	case RF_PREDICT: {
		/* least squares over (t, v); predict_linear's horizon comes as q */
		double n = (double)cnt, den = n * stt - st * st, slope, icpt;

		if (cnt < 2 || den == 0)
			return NAN;
		slope = (n * stv - st * sum) / den;
		icpt = (sum - slope * st) / n;	/* the fit's value now (t = 0) */
		return fn == RF_DERIV ? slope : icpt + slope * q;
	}
	case RF_PRESENT:
		return 1;
	case RF_QOT: {
		double r;

		qsort(all, cnt, sizeof(*all), double_cmp);
		r = quantile_sorted(all, cnt, q);
		free(all);
		return r;
	}
	case RF_INCREASE:
		return cnt > 1 ? acc : NAN;
	case RF_RATE:
		return cnt > 1 && now > first_ts ? acc / ((double)(now - first_ts) / 1000.0) : NAN;
	case RF_DELTA:
		return cnt > 1 ? scalar_of(prev) - scalar_of(first) : NAN;
	case RF_AVG:
		return sum / (double)cnt;
	case RF_MIN:
		return mn;
	case RF_MAX:
		return mx;
	case RF_SUM:
		return sum;
	case RF_COUNT:
		return (double)cnt;
	case RF_LAST:
		return scalar_of(prev);
	case RF_STDDEV:
	case RF_STDVAR: {
		/* population variance, as PromQL's */
		double mean = sum / (double)cnt, var = sumsq / (double)cnt - mean * mean;

		var = var > 0 ? var : 0;
		return fn == RF_STDVAR ? var : sqrt(var);
	}
	case RF_CHANGES:
		return (double)changes;
	case RF_RESETS:
		return (double)resets;
	case RF_QUANTILE: {
		struct histogram d;

		if (cnt < 2 || latest->kind != SERIES_HISTOGRAM)
			return NAN;
		series_hist_delta(&d, prev, first);
		return d.count ? (double)hist_quantile(&d, q) : NAN;
	}
	case RF_NONE:
		break;
	}
	return NAN;
}

/* Whether the le matchers of bucket selector sel accept le. */
static int le_selected(const struct node *sel, const char *le)
{
	for (int i = 0; i < sel->nm; i++) {
		const struct expr_matcher *m = &sel->m[i];

		if (strcmp(m->label, "le"))
			continue;
		if ((m->op == '=' && strcmp(le, m->value)) || (m->op == '!' && !strcmp(le, m->value)) ||
		    (m->op == '~' && !promregex_match(&m->re, le)) ||
		    (m->op == '^' && promregex_match(&m->re, le)))
			return 0;
	}
	return 1;
}

/*
 * Push the elements histogram d of series ser stands for under selector
 * sel (a _bucket, _sum or _count), each value divided by per (1, or the
 * seconds of a rate): for _bucket one element per bound and +Inf, with an
 * le label, counting the observations whose layout bucket starts at or
 * below the bound, exactly as /metrics does (probes/prom.h).
 */
static int push_hist_part(const struct node *sel, const struct snapshot *s,
			  const struct series *ser, const struct histogram *d, double per,
			  struct value *out)
{
	struct label l[SNAPSHOT_MAX_LABELS * 2 + 2];
	int nl = elem_labels(s, ser, l, (int)(sizeof(l) / sizeof(l[0])) - 1);
	uint64_t cum[32];	/* catalog_hist_bounds: at most 25 */
	int ret = 0;

	if (sel->hist_part == 2)
		return value_push(out, l, nl, catalog_to_base((double)d->sum, sel->hist_scale) / per);
	if (sel->hist_part == 3)
		return value_push(out, l, nl, (double)d->count / per);
	hist_cumulative(d, sel->hist_scale, sel->bounds, sel->nbounds, cum);
	for (int k = 0; k <= sel->nbounds && !ret; k++) {
		const char *le = k < sel->nbounds ? sel->le[k] : "+Inf";
		uint64_t c = k < sel->nbounds ? cum[k] : d->count;

		if (!le_selected(sel, le))
			continue;
		l[nl] = (struct label){ .key = "le", .value = (char *)le };
		labels_sort(l, nl + 1);
		ret = value_push(out, l, nl + 1, (double)c / per);
		/* take le out again: the next bound puts its own in */
		for (int a = 0, b = 0; a <= nl; a++)
			if (strcmp(l[a].key, "le"))
				l[b++] = l[a];
	}
	return ret;
}

/*
 * A histogram's _bucket, _sum or _count, instant or under rate, irate,
 * increase, delta, idelta: from the increase between the two samples the
 * function looks at (the oldest in the range and the newest, or the last
 * two), as counters; a histogram that went down restarted from zero.
 */
static int eval_hist_part(const struct node *sel, enum range_fn rf, const struct host_window *w,
			  const struct series *latest, struct value *out)
{
	const struct snapshot *s = &w->snaps[w->n - 1];
	uint32_t hint = (uint32_t)(latest - s->series);
	const struct series *older = NULL;
	uint64_t now = s->ts_ms, older_ts = 0;
	struct histogram *d, scratch;
	double per = 1;
	int ret;

	if (latest->kind != SERIES_HISTOGRAM)
		return 0;
	if (rf == RF_NONE)
		return push_hist_part(sel, s, latest, series_hist(latest, &scratch), 1, out);
	if (rf == RF_IRATE || rf == RF_IDELTA) {
		for (size_t i = w->n - 1; i-- > 0 && !older;) {
			if (w->snaps[i].ts_ms + sel->range_ns / 1000000 < now)
				break;
			older = snapshot_find_same(&w->snaps[i], latest, hint);
			older_ts = w->snaps[i].ts_ms;
		}
	} else {
		uint64_t from = now - sel->range_ns / 1000000;

		for (size_t i = (size_t)(last_at(w, from - 1) + 1); i + 1 < w->n && !older; i++) {
			older = snapshot_find_same(&w->snaps[i], latest, hint);
			older_ts = w->snaps[i].ts_ms;
		}
	}
	if (!older || older->kind != SERIES_HISTOGRAM || older_ts >= now)
		return 0;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	{
		struct histogram o;
		const struct histogram *hn = series_hist(latest, d), *ho = series_hist(older, &o);

		if (hn->count >= ho->count)
			series_hist_delta(d, latest, older);
		else if (hn != d)
			*d = *hn;	/* restarted: all of it is new */
	}
	if (rf == RF_RATE || rf == RF_IRATE)
		per = (double)(now - older_ts) / 1000.0;
	ret = push_hist_part(sel, s, latest, d, per, out);
	free(d);
	return ret;
}

static int eval_selector(const struct node *sel, enum expr_fn fn, double q,
			 const struct host_window *hosts, size_t nh, struct value *out)
{
	struct label l[SNAPSHOT_MAX_LABELS * 2 + 1];
	enum range_fn rf = (enum range_fn)fn;

	out->is_vector = 1;
	for (size_t h = 0; h < nh; h++) {
		struct host_window w = hosts[h];
		const struct snapshot *s;

		if (!w.n)
			continue;
		if (sel->offset_ns) {
			/* as of offset ago: the window ends at the snapshot then */
			uint64_t at = w.snaps[w.n - 1].ts_ms - sel->offset_ns / 1000000;
			ssize_t last = sel->offset_ns / 1000000 > w.snaps[w.n - 1].ts_ms ? -1 :
				       last_at(&w, at);

			if (last < 0)
				continue;	/* no history that old */
			w.n = (size_t)last + 1;
		}
		s = &w.snaps[w.n - 1];
		for (uint32_t i = 0; i < s->nseries; i++) {
			const struct series *ser = &s->series[i];
			double v;
			int nl;

			if (!matches(sel, s, ser))
				continue;
			if (sel->hist_part) {
				if (eval_hist_part(sel, rf, &w, ser, out))
					return -ENOMEM;
				continue;
			}
			v = rf != RF_NONE ? range_fn(rf, &w, ser, sel->range_ns, q) : scalar_of(ser);
			if (isnan(v))
				continue;
			/* the wire's ns, us, percent into the metric's unit; counts stay counts */
			if (rf != RF_COUNT && rf != RF_CHANGES && rf != RF_RESETS && rf != RF_PRESENT)
				v = catalog_to_base(v, sel->scale);
			if (rf == RF_STDVAR)
				v = catalog_to_base(v, sel->scale);	/* a variance is in unit^2 */
			nl = elem_labels(s, ser, l, (int)(sizeof(l) / sizeof(l[0])));
			if (value_push(out, l, nl, v))
				return -ENOMEM;
		}
	}
	return 0;
}

int eval_is_quantile(const struct node *n, double *q)
{
	if (n->t != N_CALL || n->fn_id != FN_QUANTILE || n->nargs != 2 ||
	    n->args[1]->t != N_SEL)
		return 0;
	*q = n->args[0]->num;
	return 1;
}

int eval_merge_quantile_hist(const struct node *n, const struct host_window *hosts, size_t nh,
			     uint64_t to_ms, uint64_t span_ms,
			     int (*side)(const char *host, void *arg), void *arg,
			     struct histogram out[2])
{
	const struct node *sel;
	struct histogram d;
	double q;
	int merged = 0;

	if (!eval_is_quantile(n, &q))
		return -EINVAL;
	sel = n->args[1];
	for (size_t h = 0; h < nh; h++) {
		ssize_t end = last_at(&hosts[h], to_ms), start;
		const struct snapshot *se, *ss;
		int k;

		if (end < 0 || (k = side(hosts[h].host, arg)) < 0 || k > 1)
			continue;
		start = last_at(&hosts[h], to_ms - span_ms);
		if (start < 0)
			start = 0;	/* the host's history begins inside the span */
		if (start == end)
			continue;
		se = &hosts[h].snaps[end];
		ss = &hosts[h].snaps[start];
		for (uint32_t i = 0; i < se->nseries; i++) {
			const struct series *x = &se->series[i], *y;

			if (x->kind != SERIES_HISTOGRAM || !matches(sel, se, x))
				continue;
			y = snapshot_find_same(ss, x, i);
			if (y && y->kind == SERIES_HISTOGRAM)
				series_hist_delta(&d, x, y);
			else if (series_hist(x, &d) != &d)
				d = *x->hist;	/* the series began inside the span */
			hist_merge(&out[k], &d);
			merged++;
		}
	}
	return merged;
}

/*
 * Whether n's value for a host depends on that host's data alone: no
 * aggregation and no peer comparison anywhere in it.  Such a side of
 * `and` can be evaluated over a subset of the hosts without changing any
 * element it would have produced for them.
 */
static int host_local(const struct node *n)
{
	if (!n)
		return 1;
	if (n->t == N_AGG || (n->t == N_CALL && (n->fn_id == FN_PEER_RATIO ||
						 n->fn_id == FN_ABSENT || n->fn_id == FN_SCALAR ||
						 n->fn_id == FN_TIME)))
		return 0;	/* they look across hosts */
	if (n->t == N_BIN && (n->match_on || n->nmatch))
		return 0;	/* on/ignoring may pair elements of different hosts */
	for (int i = 0; i < n->nargs; i++)
		if (!host_local(n->args[i]))
			return 0;
	return host_local(n->l) && host_local(n->r);
}

/*
 * Evaluate n over the hosts that the elements of left name (host label);
 * when some element names no host (an aggregate), over all of them.
 */
static int eval_on_hosts_of(const struct node *n, const struct value *left,
			    const struct host_window *hosts, size_t nh, struct value *out,
			    char *err, size_t errlen)
{
	struct host_window *sub;
	struct strmap named;
	size_t ns = 0;
	int ret;

	if (!left->n) {
		memset(out, 0, sizeof(*out));
		out->is_vector = 1;
		return 0;
	}
	strmap_init(&named);
	for (size_t i = 0; i < left->n; i++) {
		const char *h = velem_label(&left->e[i], "host");

		if (!h || strmap_put(&named, h, 1)) {
			strmap_free(&named);
			return eval(n, hosts, nh, out, err, errlen);
		}
	}
	sub = malloc((named.len + 1) * sizeof(*sub));
	for (size_t h = 0; sub && h < nh; h++) {
		uint32_t v;

		if (hosts[h].n && strmap_get(&named, hosts[h].snaps[hosts[h].n - 1].host, &v))
			sub[ns++] = hosts[h];
	}
	strmap_free(&named);
	if (!sub)
		return -ENOMEM;
	ret = eval(n, sub, ns, out, err, errlen);
	free(sub);
	return ret;
}

/* The scalar that argument a of call n evaluates to (a parameter such as topk's k). */
static int eval_param(const struct node *n, const struct node *a, const struct host_window *hosts,
		      size_t nh, double *x, char *err, size_t errlen)
{
	struct value v;
	int ret = eval(a, hosts, nh, &v, err, errlen);

	if (ret)
		return ret;
	if (v.is_vector) {
		snprintf(err, errlen, "%d:%d: %s's parameter must be a scalar, not a vector",
			 a->line, a->col, n->fn);
		ret = -EINVAL;
	}
	*x = v.scalar;
	value_free(&v);
	return ret;
}

/* The evaluation time in s: the newest snapshot of any host. */
static double eval_time(const struct host_window *hosts, size_t nh)
{
	uint64_t t = 0;

	for (size_t h = 0; h < nh; h++)
		if (hosts[h].n && hosts[h].snaps[hosts[h].n - 1].ts_ms > t)
			t = hosts[h].snaps[hosts[h].n - 1].ts_ms;
	return (double)t / 1000.0;
}

/* time(), vector(s), scalar(v) */
static int eval_misc(const struct node *n, const struct host_window *hosts, size_t nh,
		     struct value *out, char *err, size_t errlen)
{
	struct value a;
	int ret;

	if (n->fn_id == FN_TIME) {
		out->scalar = eval_time(hosts, nh);
		return 0;
	}
	if ((ret = eval(n->args[0], hosts, nh, &a, err, errlen)))
		return ret;
	if (n->fn_id == FN_VECTOR) {
		if (a.is_vector) {
			snprintf(err, errlen, "%d:%d: vector() takes a scalar", n->line, n->col);
			ret = -EINVAL;
		} else {
			out->is_vector = 1;
			ret = value_push(out, NULL, 0, a.scalar);
		}
	} else if (!a.is_vector) {
		snprintf(err, errlen, "%d:%d: scalar() takes a vector", n->line, n->col);
		ret = -EINVAL;
	} else {
		out->scalar = a.n == 1 ? a.e[0].v : NAN;	/* as PromQL: one element or NaN */
	}
	value_free(&a);
	return ret;
}

int eval(const struct node *n, const struct host_window *hosts, size_t nh, struct value *out,
	 char *err, size_t errlen)
{
	struct value a = { 0 }, b = { 0 };
	int ret = 0;

	memset(out, 0, sizeof(*out));
	switch (n->t) {
	case N_NUM:
		out->scalar = n->num;
		return 0;
	case N_STR:
		snprintf(err, errlen, "%d:%d: a string is not a value here", n->line, n->col);
		return -EINVAL;
	case N_SEL:
		if (n->range_ns) {
			snprintf(err, errlen, "%d:%d: a range selector needs a function such as "
				 "rate(...)", n->line, n->col);
			return -EINVAL;
		}
		return eval_selector(n, FN_NONE, 0, hosts, nh, out);
	case N_NEG:
		ret = eval(n->l, hosts, nh, &a, err, errlen);
		if (ret)
			return ret;
		*out = a;
		if (out->is_vector)
			for (size_t i = 0; i < out->n; i++)
				out->e[i].v = -out->e[i].v;
		else
			out->scalar = -out->scalar;
		return 0;
	case N_CALL:
		if (n->fn_id == FN_QUANTILE)
			return eval_selector(n->args[1], n->fn_id, n->args[0]->num, hosts, nh, out);
		if (n->fn_id == FN_PEER_RATIO) {
			ret = eval(n->args[0], hosts, nh, &a, err, errlen);
			if (ret)
				return ret;
			ret = a.is_vector ? peer_ratio(&a, n->args[1]->str, out) : -EINVAL;
			value_free(&a);
			return ret;
		}
		if (n->fn_id >= FN_ABS && n->fn_id <= FN_CLAMP)
			return eval_elementwise(n, hosts, nh, out, err, errlen);
		if (n->fn_id == FN_ABSENT)
			return eval_absent(n, hosts, nh, out, err, errlen);
		if (n->fn_id == FN_TIME || n->fn_id == FN_VECTOR || n->fn_id == FN_SCALAR)
			return eval_misc(n, hosts, nh, out, err, errlen);
		if (n->fn_id == FN_LABEL_REPLACE || n->fn_id == FN_LABEL_JOIN)
			return eval_label_fn(n, hosts, nh, out, err, errlen);
		if (n->fn_id == FN_HISTOGRAM_QUANTILE) {
			double q;

			if ((ret = eval_param(n, n->args[0], hosts, nh, &q, err, errlen)))
				return ret;
			if ((ret = eval(n->args[1], hosts, nh, &a, err, errlen)))
				return ret;
			ret = a.is_vector ? histogram_quantile(q, &a, out) : -EINVAL;
			if (ret == -EINVAL)
				snprintf(err, errlen, "%d:%d: histogram_quantile takes a vector of "
					 "buckets", n->line, n->col);
			value_free(&a);
			return ret;
		}
		if (n->fn_id == FN_PREDICT_LINEAR || n->fn_id == FN_QUANTILE_OVER_TIME) {
			/* the argument that is not the range selector is a scalar parameter */
			int pi = n->fn_id == FN_PREDICT_LINEAR;
			double q;

			ret = eval_param(n, n->args[pi], hosts, nh, &q, err, errlen);
			return ret ? ret : eval_selector(n->args[1 - pi], n->fn_id, q, hosts, nh, out);
		}
		return eval_selector(n->args[0], n->fn_id, 0, hosts, nh, out);
	case N_AGG: {
		double param = 0;

		if (n->nargs == 2 && (ret = eval_param(n, n->args[0], hosts, nh, &param, err,
						       errlen)))
			return ret;
		ret = eval(n->args[n->nargs - 1], hosts, nh, &a, err, errlen);
		if (!ret && !a.is_vector) {
			snprintf(err, errlen, "%d:%d: %s needs a vector", n->line, n->col, n->fn);
			ret = -EINVAL;
		}
		if (!ret)
			ret = n->nargs == 2 ? eval_agg_param(n, param, &a, out) : eval_agg(n, &a, out);
		value_free(&a);
		return ret;
	}
	case N_BIN:
		ret = eval(n->l, hosts, nh, &a, err, errlen);
		if (!ret && n->op == OP_AND && a.is_vector && host_local(n->r) && !n->match_on &&
		    !n->nmatch) {
			/*
			 * only the hosts the left side kept can match on the right
			 * (matching on all labels, host among them; on/ignoring may
			 * pair elements of different hosts)
			 */
			ret = eval_on_hosts_of(n->r, &a, hosts, nh, &b, err, errlen);
		} else if (!ret) {
			ret = eval(n->r, hosts, nh, &b, err, errlen);
		}
		if (!ret)
			ret = eval_bin(n, &a, &b, out, err, errlen);
		value_free(&a);
		value_free(&b);
		return ret;
	}
	return -EINVAL;
}
