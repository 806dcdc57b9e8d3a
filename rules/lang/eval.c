/*
 * eval.c - expression evaluation; see eval.h.
 *
 * Vectors are built by walking each host's newest snapshot (or, for a
 * window cut short, the columns held at its end) for series that match a
 * selector; range functions then walk that series' column back over the
 * window (rules/lang/columns.h).  Binary operations are vector_match.c's.
 */
#include "rules/lang/eval.h"
#include "rules/lang/eval_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "model/catalog.h"
#include "model/histogram.h"
#include "core/strmap.h"

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
int eval_sel_matches(const struct node *sel, const struct snapshot *snap, const struct series *s)
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
 * Column k (series def) is held at the window's end.
 */
static int eval_hist_part(const struct node *sel, enum range_fn rf, const struct host_window *w,
			  const struct series *def, uint32_t k, struct value *out)
{
	const struct columns *c = w->c;
	const struct snapshot *s = &c->newest;
	size_t end = w->n - 1, older = end;
	uint64_t now = columns_ts(c, end);
	struct histogram *d;
	double per = 1;
	int ret;

	if (def->kind != SERIES_HISTOGRAM)
		return 0;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (rf == RF_NONE) {
		columns_hist(c, k, end, d);
		ret = push_hist_part(sel, s, def, d, 1, out);
		free(d);
		return ret;
	}
	if (rf == RF_IRATE || rf == RF_IDELTA) {
		for (size_t i = end; i-- > 0;) {
			if (columns_ts(c, i) + sel->range_ns / 1000000 < now)
				break;
			if (columns_has(c, k, i)) {
				older = i;
				break;
			}
		}
	} else {
		uint64_t from = now - sel->range_ns / 1000000;

		for (size_t i = (size_t)(window_last_at(w, from - 1) + 1); i < end; i++)
			if (columns_has(c, k, i)) {
				older = i;
				break;
			}
	}
	if (older == end || columns_ts(c, older) >= now) {
		free(d);
		return 0;
	}
	/* a histogram that went down restarted: all of it is new */
	window_hist_delta(d, c, k, end, older);
	if (rf == RF_RATE || rf == RF_IRATE)
		per = (double)(now - columns_ts(c, older)) / 1000.0;
	ret = push_hist_part(sel, s, def, d, per, out);
	free(d);
	return ret;
}

/*
 * Call fn(def, column, arg) for every series window w holds at its end:
 * the newest snapshot's series in their order (only those whose name
 * hashes to name_hash, when the columns' hash index is current: fn must
 * check the name itself anyway), or for a window cut short the columns
 * named so that hold a value at its last point.  Stops at the first non-zero
 * return and returns it.
 */
static int each_at_end(const struct host_window *w, uint32_t name_hash,
		       int (*fn)(const struct series *def, uint32_t k, void *arg), void *arg)
{
	const struct columns *c = w->c;
	int ret = 0;

	if (w->n == columns_len(c)) {
		const struct series *ser = c->newest.series;

		if (c->nhash == c->newest.nseries) {
			/* only the series named like the selector's metric: 4-byte hashes */
			for (uint32_t i = 0; i < c->nhash && !ret; i++)
				if (c->hash[i] == name_hash && ser[i].link)
					ret = fn(&ser[i], columns_of(&ser[i]), arg);
			return ret;
		}
		for (uint32_t i = 0; i < c->newest.nseries && !ret; i++)
			if (ser[i].link)
				ret = fn(&ser[i], columns_of(&ser[i]), arg);
		return ret;
	}
	if (w->by_name) {
		/* the first column of that name, by a binary search; then those after it */
		size_t lo = 0, hi = c->ncol;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (c->col[w->by_name[mid]].def.name_hash < name_hash)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < c->ncol && !ret; lo++) {
			uint32_t k = w->by_name[lo];

			if (c->col[k].def.name_hash != name_hash)
				break;
			if (columns_has(c, k, w->n - 1))
				ret = fn(&c->col[k].def, k, arg);
		}
		return ret;
	}
	/* by name first (an int compare): a tail's history holds every series of the host */
	for (uint32_t k = 0; k < c->ncol && !ret; k++)
		if (c->col[k].def.name_hash == name_hash && columns_has(c, k, w->n - 1))
			ret = fn(&c->col[k].def, k, arg);
	return ret;
}

static int by_name_cmp(const void *a, const void *b, void *arg)
{
	const struct columns *c = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t hx = c->col[x].def.name_hash, hy = c->col[y].def.name_hash;

	if (hx != hy)
		return hx < hy ? -1 : 1;
	return x < y ? -1 : x > y;
}

uint32_t *eval_columns_by_name(const struct columns *c)
{
	uint32_t *order = c->ncol ? malloc(c->ncol * sizeof(*order)) : NULL;

	if (!order)
		return NULL;
	for (uint32_t k = 0; k < c->ncol; k++)
		order[k] = k;
	qsort_r(order, c->ncol, sizeof(*order), by_name_cmp, (void *)c);
	return order;
}

struct sel_arg {
	const struct node *sel;
	enum range_fn rf;
	double q;
	const struct host_window *w;
	struct value *out;
};

void sel_memo_free(struct sel_memo *memo, size_t n)
{
	for (size_t i = 0; memo && i < n; i++)
		free(memo[i].l);
	free(memo);
}

/*
 * Whether selector sel matches the series def (column k) of window w, and
 * its element's labels into *l / *nl: from w's memo when it holds them
 * (else worked out, and kept there).  -ENOMEM, else 1 or 0.
 */
static int sel_elem(const struct node *sel, const struct host_window *w,
		    const struct series *def, uint32_t k, struct label *buf,
		    const struct label **l, int *nl)
{
	const struct snapshot *s = &w->c->newest;
	struct sel_memo *m = w->memo ? &w->memo[k] : NULL;

	if (m && m->sel == sel) {
		*l = m->l;
		*nl = m->nl;
		return m->matches;
	}
	if (!eval_sel_matches(sel, s, def))
		*nl = -1;
	else if (sel->hist_part)
		*nl = 0;	/* its elements' labels are push_hist_part's */
	else
		*nl = elem_labels(s, def, buf, SNAPSHOT_MAX_LABELS * 2 + 1);
	*l = buf;
	if (m) {
		struct label *keep = *nl > 0 ? malloc((size_t)*nl * sizeof(*keep)) : NULL;

		if (*nl > 0 && !keep)
			return -ENOMEM;
		free(m->l);
		if (keep)
			memcpy(keep, buf, (size_t)*nl * sizeof(*keep));
		m->l = keep;
		m->nl = *nl;
		m->matches = *nl >= 0;
		m->sel = sel;
	}
	return *nl >= 0;
}

static int select_one(const struct series *def, uint32_t k, void *arg)
{
	struct sel_arg *a = arg;
	const struct node *sel = a->sel;
	struct label buf[SNAPSHOT_MAX_LABELS * 2 + 1];
	const struct label *l;
	enum range_fn rf = a->rf;
	double v;
	int nl, ret = sel_elem(sel, a->w, def, k, buf, &l, &nl);

	if (ret <= 0)
		return ret;
	if (sel->hist_part)
		return eval_hist_part(sel, rf, a->w, def, k, a->out) ? -ENOMEM : 0;
	if (rf == RF_NONE)
		v = columns_scalar(a->w->c, k, a->w->n - 1, NULL);
	else if (a->w->minutes)
		v = minute_range_fn((enum expr_fn)rf, a->w, def, sel->range_ns, a->q);
	else
		v = eval_range_fn(rf, a->w, k, sel->range_ns, a->q);
	if (isnan(v))
		return 0;
	/* the wire's ns, us, percent into the metric's unit; counts stay counts */
	if (rf != RF_COUNT && rf != RF_CHANGES && rf != RF_RESETS && rf != RF_PRESENT)
		v = catalog_to_base(v, sel->scale);
	if (rf == RF_STDVAR)
		v = catalog_to_base(v, sel->scale);	/* a variance is in unit^2 */
	return value_push(a->out, l, nl, v) ? -ENOMEM : 0;
}

/* A pinned instant selector reads back at most PromQL's lookback. */
#define PINNED_LOOKBACK_MS (5 * 60 * 1000ULL)

static int eval_selector(const struct node *sel, enum expr_fn fn, double q,
			 const struct eval_in *in, struct value *out)
{
	struct sel_arg a = { sel, (enum range_fn)fn, q, NULL, out };
	const struct host_window *hosts = in->hosts;
	size_t nh = in->nh;
	uint64_t pin = eval_pinned(sel, in);

	out->is_vector = 1;
	for (size_t h = 0; h < nh; h++) {
		struct host_window w = hosts[h];

		if (!w.n)
			continue;
		if (in->stale_ms && !pin && !sel->offset_ns && fn == FN_NONE && !sel->range_ns &&
		    in->at_ms > columns_ts(w.c, w.n - 1) + in->stale_ms)
			continue;	/* silent at the query's time: no instant value */
		if (sel->offset_ns || pin) {
			/*
			 * as of offset ago (from the pinned time, when `@` pins it): the
			 * window ends at the point then; pinned, it may lie past the step
			 */
			uint64_t last_ts = pin ? pin : columns_ts(w.c, w.n - 1);
			uint64_t at = last_ts - sel->offset_ns / 1000000;
			ssize_t last;

			if (pin)
				w.n = columns_len(w.c);
			last = sel->offset_ns / 1000000 > last_ts ? -1 : window_last_at(&w, at);
			if (last < 0 || (pin && !sel->range_ns &&
					 at - columns_ts(w.c, (size_t)last) > PINNED_LOOKBACK_MS))
				continue;	/* no history that old */
			w.n = (size_t)last + 1;
		}
		a.w = &w;
		if (h + 2 < nh && hosts[h + 2].c->hash)
			__builtin_prefetch(hosts[h + 2].c->hash);	/* the walk's next misses */
		if (each_at_end(&w, sel->metric_hash, select_one, &a))
			return -ENOMEM;
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

struct merge_arg {
	const struct node *sel;
	const struct host_window *w;
	size_t start, end;
	struct histogram *out;
	int merged;
};

static int merge_one(const struct series *def, uint32_t k, void *arg)
{
	struct merge_arg *a = arg;
	const struct columns *c = a->w->c;
	struct histogram d;

	if (def->kind != SERIES_HISTOGRAM || !eval_sel_matches(a->sel, &c->newest, def))
		return 0;
	if (columns_has(c, k, a->start))
		window_hist_delta(&d, c, k, a->end, a->start);
	else
		columns_hist(c, k, a->end, &d);	/* it began inside the span */
	hist_merge(a->out, &d);
	a->merged++;
	return 0;
}

int eval_merge_quantile_hist(const struct node *n, const struct host_window *hosts, size_t nh,
			     uint64_t to_ms, uint64_t span_ms,
			     int (*side)(const char *host, void *arg), void *arg,
			     struct histogram out[2])
{
	struct merge_arg a = { 0 };
	double q;

	if (!eval_is_quantile(n, &q))
		return -EINVAL;
	a.sel = n->args[1];
	for (size_t h = 0; h < nh; h++) {
		ssize_t end = window_last_at(&hosts[h], to_ms), start;
		struct host_window w = hosts[h];
		int k;

		if ((!w.minutes && end < 0) || (k = side(hosts[h].host, arg)) < 0 || k > 1)
			continue;
		if (w.minutes) {
			a.merged += minute_merge_hist(a.sel, &w, to_ms, span_ms, &out[k]);
			continue;
		}
		start = window_last_at(&hosts[h], to_ms - span_ms);
		if (start < 0)
			start = 0;	/* the host's history begins inside the span */
		if (start == end)
			continue;
		w.n = (size_t)end + 1;
		a.w = &w;
		a.start = (size_t)start;
		a.end = (size_t)end;
		a.out = &out[k];
		each_at_end(&w, a.sel->metric_hash, merge_one, &a);
	}
	return a.merged;
}

/*
 * Evaluate n over the hosts that the elements of left name (host label);
 * when some element names no host (an aggregate), over all of them.
 */
static int eval_on_hosts_of(const struct node *n, const struct value *left,
			    const struct eval_in *in, struct value *out,
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
			return eval_node(n, in, out, err, errlen);
		}
	}
	sub = malloc((named.len + 1) * sizeof(*sub));
	for (size_t h = 0; sub && h < in->nh; h++) {
		const struct host_window *w = &in->hosts[h];
		uint32_t v;

		if (w->n && strmap_get(&named, w->host, &v))
			sub[ns++] = *w;
	}
	strmap_free(&named);
	if (!sub)
		return -ENOMEM;
	{
		struct eval_in part = { sub, ns, in->peers, in->at_ms, in->start_ms, in->end_ms,
					in->stale_ms };

		ret = eval_node(n, &part, out, err, errlen);
	}
	free(sub);
	return ret;
}

/* The scalar that argument a of call n evaluates to (a parameter such as topk's k). */
static int eval_param(const struct node *n, const struct node *a, const struct eval_in *in,
		      double *x, char *err, size_t errlen)
{
	struct value v;
	int ret = eval_node(a, in, &v, err, errlen);

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

/* The evaluation time in s: eval_at's, else the newest snapshot of any host. */
static double eval_time(const struct eval_in *in)
{
	const struct host_window *hosts = in->hosts;
	uint64_t t = 0;

	if (in->at_ms)
		return (double)in->at_ms / 1000.0;
	for (size_t h = 0; h < in->nh; h++)
		if (hosts[h].n && columns_ts(hosts[h].c, hosts[h].n - 1) > t)
			t = columns_ts(hosts[h].c, hosts[h].n - 1);
	return (double)t / 1000.0;
}

/* time(), vector(s), scalar(v) */
static int eval_misc(const struct node *n, const struct eval_in *in,
		     struct value *out, char *err, size_t errlen)
{
	struct value a;
	int ret;

	if (n->fn_id == FN_TIME) {
		out->scalar = eval_time(in);
		return 0;
	}
	if ((ret = eval_node(n->args[0], in, &a, err, errlen)))
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

int eval_node(const struct node *n, const struct eval_in *in, struct value *out, char *err,
	      size_t errlen)
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
		return eval_selector(n, FN_NONE, 0, in, out);
	case N_SUBQ:
		snprintf(err, errlen, "%d:%d: a subquery needs a function such as "
			 "max_over_time(...)", n->line, n->col);
		return -EINVAL;
	case N_NEG:
		ret = eval_node(n->l, in, &a, err, errlen);
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
			return eval_selector(n->args[1], n->fn_id, n->args[0]->num, in, out);
		if (n->fn_id == FN_PEER_RATIO) {
			ret = eval_node(n->args[0], in, &a, err, errlen);
			if (ret)
				return ret;
			ret = a.is_vector ? peer_ratio(in->peers, &a, n->args[1]->str, out) : -EINVAL;
			value_free(&a);
			return ret;
		}
		if (n->fn_id >= FN_ABS && n->fn_id <= FN_CLAMP)
			return eval_elementwise(n, in, out, err, errlen);
		if (n->fn_id == FN_ABSENT)
			return eval_absent(n, in, out, err, errlen);
		if (n->fn_id == FN_TIME || n->fn_id == FN_VECTOR || n->fn_id == FN_SCALAR)
			return eval_misc(n, in, out, err, errlen);
		if (n->fn_id == FN_LABEL_REPLACE || n->fn_id == FN_LABEL_JOIN)
			return eval_label_fn(n, in, out, err, errlen);
		if (n->fn_id == FN_HISTOGRAM_QUANTILE) {
			double q;

			if ((ret = eval_param(n, n->args[0], in, &q, err, errlen)))
				return ret;
			if ((ret = eval_node(n->args[1], in, &a, err, errlen)))
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

			ret = eval_param(n, n->args[pi], in, &q, err, errlen);
			if (ret)
				return ret;
			if (n->args[1 - pi]->t == N_SUBQ)
				return eval_subquery(n->args[1 - pi], (enum range_fn)n->fn_id, q, in,
						     out, err, errlen);
			return eval_selector(n->args[1 - pi], n->fn_id, q, in, out);
		}
		if (n->args[0]->t == N_SUBQ)
			return eval_subquery(n->args[0], (enum range_fn)n->fn_id, 0, in, out, err,
					     errlen);
		return eval_selector(n->args[0], n->fn_id, 0, in, out);
	case N_AGG: {
		double param = 0;

		if (n->nargs == 2 && (ret = eval_param(n, n->args[0], in, &param, err,
						       errlen)))
			return ret;
		ret = eval_node(n->args[n->nargs - 1], in, &a, err, errlen);
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
		ret = eval_node(n->l, in, &a, err, errlen);
		if (!ret && n->op == OP_AND && a.is_vector && expr_host_local(n->r) && !n->match_on &&
		    !n->nmatch) {
			/*
			 * only the hosts the left side kept can match on the right
			 * (matching on all labels, host among them; on/ignoring may
			 * pair elements of different hosts)
			 */
			ret = eval_on_hosts_of(n->r, &a, in, &b, err, errlen);
		} else if (!ret) {
			ret = eval_node(n->r, in, &b, err, errlen);
		}
		if (!ret)
			ret = eval_bin(n, &a, &b, out, err, errlen);
		value_free(&a);
		value_free(&b);
		return ret;
	}
	return -EINVAL;
}

int eval(const struct node *n, const struct host_window *hosts, size_t nh, struct value *out,
	 char *err, size_t errlen)
{
	struct eval_in in = { hosts, nh, NULL };

	return eval_node(n, &in, out, err, errlen);
}

int eval_at(const struct node *n, const struct host_window *hosts, size_t nh, uint64_t at_ms,
	    uint64_t start_ms, uint64_t end_ms, uint64_t stale_ms, struct value *out, char *err,
	    size_t errlen)
{
	struct eval_in in = { hosts, nh, NULL, at_ms, start_ms, end_ms, stale_ms };

	return eval_node(n, &in, out, err, errlen);
}

int eval_sharded(const struct node *n, const struct host_window *hosts, size_t nh,
		 const struct eval_peers *peers, struct value *out, char *err, size_t errlen)
{
	struct eval_in in = { hosts, nh, peers };

	return eval_node(n, &in, out, err, errlen);
}
