/*
 * vector_fns.c - functions over a vector's elements: aggregations (sum,
 * avg, min, max, count, group, stddev, stdvar by/without labels),
 * peer_ratio, absent, and the element functions (abs ... clamp); see
 * eval_internal.h.  eval.c builds the vectors; these combine them.
 */
#include "rules/lang/eval_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/strmap.h"

#define GROUP_KEY_MAX (SNAPSHOT_MAX_LABELS * 2 + 1)

/*
 * The grouping labels of e under n's clause: by (labels), absent ones as
 * ""; or without (labels), every label of e but those (sorted, as e's).
 */
static int group_key(const struct node *n, const struct velem *e, struct label *key, int max)
{
	int nk = 0;

	if (n->without) {
		for (int i = 0; i < e->nlabels && nk < max; i++) {
			int dropped = 0;

			for (int b = 0; b < n->nby && !dropped; b++)
				dropped = !strcmp(e->labels[i].key, n->by[b]);
			if (!dropped)
				key[nk++] = e->labels[i];
		}
		return nk;
	}
	for (int b = 0; b < n->nby && nk < max; b++) {
		const char *v = velem_label(e, n->by[b]);

		key[nk].key = n->by[b];
		key[nk].value = (char *)(v ? v : "");
		nk++;
	}
	return nk;
}

struct grouped {
	uint64_t hash;		/* of the element's group key */
	size_t i;		/* element index */
};

static int grouped_cmp(const void *a, const void *b)
{
	const struct grouped *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

struct group {
	size_t first;		/* index of the group's first element */
	double acc, accsq, mn, mx;
	size_t cnt;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * sum/min/max/avg/count by (labels): elements are sorted by the hash of
 * their group key, so each group is found in O(n log n); groups come out
 * in the order of their first element, values summed in input order.
 */
int eval_agg(const struct node *n, const struct value *in, struct value *out)
{
	struct grouped *g = malloc((in->n + 1) * sizeof(*g));
	struct group *grp = malloc((in->n + 1) * sizeof(*grp));
	char *done = calloc(in->n + 1, 1);
	struct label key[GROUP_KEY_MAX], other[GROUP_KEY_MAX];
	size_t ngrp = 0;
	int ret = 0;

	out->is_vector = 1;
	if (!g || !grp || !done) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		int nk = group_key(n, &in->e[i], key, GROUP_KEY_MAX);

		g[i].hash = labels_hash(key, nk);
		g[i].i = i;
	}
	qsort(g, in->n, sizeof(*g), grouped_cmp);
	for (size_t s = 0, e; s < in->n; s = e) {
		for (e = s + 1; e < in->n && g[e].hash == g[s].hash; e++)
			;
		/* One hash, almost always one key: split the run by exact key. */
		for (size_t j = s; j < e; j++) {
			struct group *gr = &grp[ngrp];
			int nk;

			if (done[j])
				continue;
			nk = group_key(n, &in->e[g[j].i], key, GROUP_KEY_MAX);
			*gr = (struct group){ .first = g[j].i, .mn = INFINITY, .mx = -INFINITY };
			for (size_t k = j; k < e; k++) {
				const struct velem *x = &in->e[g[k].i];
				int same = 1;

				if (done[k])
					continue;
				if (k != j) {
					/* without: the keys themselves can differ, too */
					int no = group_key(n, x, other, GROUP_KEY_MAX);

					same = labels_equal(key, nk, other, no);
				}
				if (!same)
					continue;
				done[k] = 1;
				gr->acc += x->v;
				gr->accsq += x->v * x->v;
				gr->mn = x->v < gr->mn ? x->v : gr->mn;
				gr->mx = x->v > gr->mx ? x->v : gr->mx;
				gr->cnt++;
			}
			ngrp++;
		}
	}
	qsort(grp, ngrp, sizeof(*grp), group_cmp);
	for (size_t i = 0; i < ngrp && !ret; i++) {
		const struct group *gr = &grp[i];
		int nk = group_key(n, &in->e[gr->first], key, GROUP_KEY_MAX);
		double x;

		labels_sort(key, nk);
		x = n->fn_id == FN_SUM ? gr->acc :
		    n->fn_id == FN_AVG ? gr->acc / (double)gr->cnt :
		    n->fn_id == FN_MIN ? gr->mn : n->fn_id == FN_MAX ? gr->mx :
		    n->fn_id == FN_GROUP ? 1 : n->fn_id == FN_COUNT ? (double)gr->cnt :
		    /* population variance, as PromQL's stdvar and stddev */
		    fmax(gr->accsq / (double)gr->cnt -
			 (gr->acc / (double)gr->cnt) * (gr->acc / (double)gr->cnt), 0);
		if (n->fn_id == FN_STDDEV)
			x = sqrt(x);
		ret = value_push(out, key, nk, x);
	}
out:
	free(g);
	free(grp);
	free(done);
	return ret;
}

struct peer {
	const char *group;	/* the peer label's value, "" if absent */
	double v;
	size_t i;
};

static int peer_cmp(const void *a, const void *b)
{
	const struct peer *x = a, *y = b;
	int c = strcmp(x->group, y->group);

	if (c)
		return c;
	return x->v < y->v ? -1 : x->v > y->v;
}

/* Peer groups' values in histograms, to 1e-9 (eval_peer_record). */
#define PEER_VALUE_SCALE 1e9

void eval_peer_record(struct histogram *h, double v)
{
	hist_record(h, v > 0 && isfinite(v) ?
		    (uint64_t)llround(fmin(v * PEER_VALUE_SCALE, 9e18)) : 0);
}

double eval_peer_median(const struct histogram *h)
{
	return h->count ? (double)hist_quantile(h, 0.5) / PEER_VALUE_SCALE : NAN;
}

/*
 * Sharded: each group's median over the whole fleet, from this worker's
 * values p[0..n) (sorted by group) and the other workers' histograms,
 * into med[] (indexed like the input).
 */
static int fleet_medians(const struct eval_peers *peers, const struct peer *p, size_t n,
			 const char *label, double *med)
{
	size_t ngroups = 0;
	char **groups = malloc((n + 1) * sizeof(*groups));
	struct histogram *h = calloc(n + 1, sizeof(*h));
	int ret = 0;

	if (!groups || !h) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t s = 0, e; s < n; s = e) {
		for (e = s; e < n && !strcmp(p[e].group, p[s].group); e++)
			eval_peer_record(&h[ngroups], p[e].v);
		groups[ngroups++] = (char *)p[s].group;
	}
	peers->merge(peers->arg, label, groups, h, ngroups);	/* it says why when it fails */
	for (size_t s = 0, e, g = 0; s < n; s = e, g++) {
		double m = eval_peer_median(&h[g]);

		for (e = s; e < n && !strcmp(p[e].group, p[s].group); e++)
			med[p[e].i] = m;
	}
out:
	free(groups);
	free(h);
	return ret;
}

/*
 * peer_ratio(v, label): each element divided by the median of the
 * elements with the same value of label (its peers, itself included).
 * Sorting by (group, value) finds every group's median in O(n log n).
 */
int peer_ratio(const struct eval_peers *peers, const struct value *in, const char *label,
	       struct value *out)
{
	struct peer *p = malloc((in->n + 1) * sizeof(*p));
	double *med = malloc((in->n + 1) * sizeof(*med));
	int ret = 0;

	out->is_vector = 1;
	if (!p || !med) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		const char *g = velem_label(&in->e[i], label);

		p[i] = (struct peer){ .group = g ? g : "", .v = in->e[i].v, .i = i };
	}
	qsort(p, in->n, sizeof(*p), peer_cmp);
	if (peers) {
		ret = fleet_medians(peers, p, in->n, label, med);
		goto divide;
	}
	for (size_t s = 0, e; s < in->n; s = e) {
		size_t m;
		double x;

		for (e = s + 1; e < in->n && !strcmp(p[e].group, p[s].group); e++)
			;
		m = e - s;
		x = m % 2 ? p[s + m / 2].v : (p[s + m / 2 - 1].v + p[s + m / 2].v) / 2;
		for (size_t k = s; k < e; k++)
			med[p[k].i] = x;
	}
divide:
	for (size_t i = 0; i < in->n && !ret; i++)
		if (med[i] != 0 && !isnan(med[i]))
			ret = value_push(out, in->e[i].labels, in->e[i].nlabels, in->e[i].v / med[i]);
out:
	free(p);
	free(med);
	return ret;
}

/*
 * absent(v): nothing when v has elements; else one element of value 1 with
 * the labels v's selector pins with '=' (absent(x{device="sda"}) is
 * {device="sda"} 1), as PromQL does.
 */
int eval_absent(const struct node *n, const struct eval_in *in,
		       struct value *out, char *err, size_t errlen)
{
	const struct node *sel = n->args[0];
	struct label l[16];
	struct value v = { 0 };
	int nl = 0, ret = eval_node(n->args[0], in, &v, err, errlen);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->is_vector = 1;
	if (!v.is_vector || v.n) {
		value_free(&v);
		return 0;
	}
	value_free(&v);
	while (sel && sel->t == N_CALL && sel->nargs)
		sel = sel->args[sel->nargs - 1];	/* absent(rate(x{a="b"}[5m])) */
	for (int i = 0; sel && sel->t == N_SEL && i < sel->nm && nl < 16; i++)
		if (sel->m[i].op == '=') {
			l[nl].key = sel->m[i].label;
			l[nl++].value = sel->m[i].value;
		}
	labels_sort(l, nl);
	return value_push(out, l, nl, 1);
}

/* The scalar argument i of call n (clamp's bounds): 0, or -EINVAL. */
static int scalar_arg(const struct node *n, int i, const struct eval_in *in,
		      double *out, char *err, size_t errlen)
{
	struct value v = { 0 };
	int ret = eval_node(n->args[i], in, &v, err, errlen);

	if (!ret && v.is_vector) {
		snprintf(err, errlen, "%d:%d: %s's argument %d is a number, not a vector",
			 n->args[i]->line, n->args[i]->col, n->fn, i + 1);
		ret = -EINVAL;
	}
	*out = v.scalar;
	value_free(&v);
	return ret;
}

static double apply_fn(enum expr_fn fn, double x, double lo, double hi)
{
	switch (fn) {
	case FN_ABS: return fabs(x);
	case FN_CEIL: return ceil(x);
	case FN_FLOOR: return floor(x);
	case FN_ROUND: return floor(x + 0.5);	/* PromQL rounds half up */
	case FN_SQRT: return sqrt(x);
	case FN_EXP: return exp(x);
	case FN_LN: return log(x);
	case FN_LOG2: return log2(x);
	case FN_LOG10: return log10(x);
	case FN_CLAMP_MIN: return fmax(x, lo);
	case FN_CLAMP_MAX: return fmin(x, hi);
	case FN_CLAMP: return lo > hi ? NAN : fmin(fmax(x, lo), hi);
	default: return NAN;
	}
}

/* abs, ceil, ..., clamp: the function of each element (or of a scalar). */
int eval_elementwise(const struct node *n, const struct eval_in *in,
			    struct value *out, char *err, size_t errlen)
{
	double lo = -INFINITY, hi = INFINITY;
	int ret = eval_node(n->args[0], in, out, err, errlen);

	if (ret)
		return ret;
	if (n->fn_id == FN_CLAMP_MIN || n->fn_id == FN_CLAMP)
		ret = scalar_arg(n, 1, in, &lo, err, errlen);
	if (!ret && n->fn_id == FN_CLAMP_MAX)
		ret = scalar_arg(n, 1, in, &hi, err, errlen);
	if (!ret && n->fn_id == FN_CLAMP)
		ret = scalar_arg(n, 2, in, &hi, err, errlen);
	if (ret) {
		value_free(out);
		return ret;
	}
	if (n->fn_id == FN_CLAMP && lo > hi && out->is_vector) {
		value_free(out);	/* as PromQL: an empty vector */
		out->is_vector = 1;
		return 0;
	}
	for (size_t i = 0; i < out->n; i++)
		out->e[i].v = apply_fn(n->fn_id, out->e[i].v, lo, hi);
	out->scalar = apply_fn(n->fn_id, out->scalar, lo, hi);
	return 0;
}


struct ranked {
	uint64_t hash;		/* of the group key */
	const struct label *key;	/* the group key (sorted), in a pool */
	int nk;
	double v;
	size_t i;		/* element index */
};

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	if (x->nk != y->nk)
		return x->nk < y->nk ? -1 : 1;
	for (int k = 0; k < x->nk; k++) {
		int c = strcmp(x->key[k].key, y->key[k].key);

		if (c || (c = strcmp(x->key[k].value, y->key[k].value)))
			return c;
	}
	/* NaN ranks below every number, as in PromQL's topk */
	if (isnan(x->v) || isnan(y->v))
		return isnan(x->v) ? (isnan(y->v) ? 0 : -1) : 1;
	return x->v < y->v ? -1 : x->v > y->v;
}

static int same_group(const struct ranked *x, const struct ranked *y)
{
	return x->hash == y->hash && labels_equal(x->key, x->nk, y->key, y->nk);
}

/*
 * topk / bottomk / quantile by (labels): the elements sorted by (group
 * key, value), so each group is a run, in O(n log n).
 */
int eval_agg_param(const struct node *n, double param, const struct value *in, struct value *out)
{
	struct ranked *r = malloc((in->n + 1) * sizeof(*r));
	struct label *pool = malloc((in->n + 1) * GROUP_KEY_MAX * sizeof(*pool));
	double *vals = malloc((in->n + 1) * sizeof(*vals));
	int ret = 0;

	out->is_vector = 1;
	if (!r || !pool || !vals) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		struct label *key = pool + i * GROUP_KEY_MAX;
		int nk = group_key(n, &in->e[i], key, GROUP_KEY_MAX);

		labels_sort(key, nk);
		r[i] = (struct ranked){ .hash = labels_hash(key, nk), .key = key, .nk = nk,
					.v = in->e[i].v, .i = i };
	}
	qsort(r, in->n, sizeof(*r), ranked_cmp);
	for (size_t s = 0, e; s < in->n && !ret; s = e) {
		size_t len, k;

		for (e = s + 1; e < in->n && same_group(&r[s], &r[e]); e++)
			;
		len = e - s;
		if (n->fn_id == FN_QUANTILE_AGG) {
			for (size_t j = 0; j < len; j++)
				vals[j] = r[s + j].v;
			ret = value_push(out, r[s].key, r[s].nk, quantile_sorted(vals, len, param));
			continue;
		}
		/* k < 1 selects nothing; a fractional k is truncated, as in PromQL */
		k = param >= 1 ? (param < (double)len ? (size_t)param : len) : 0;
		for (size_t j = 0; j < k && !ret; j++) {
			const struct velem *x = &in->e[r[n->fn_id == FN_TOPK ? e - 1 - j : s + j].i];

			ret = value_push(out, x->labels, x->nlabels, x->v);
		}
	}
out:
	free(r);
	free(pool);
	free(vals);
	return ret;
}

struct hbucket {
	uint64_t hash;		/* of the element's labels but le */
	const struct velem *e;
	double upper;		/* le */
};

/* Order by group (labels but le), then by upper bound. */
static int hbucket_cmp(const void *a, const void *b)
{
	const struct hbucket *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->upper < y->upper ? -1 : x->upper > y->upper;
}

/* Whether x and y have the same labels but le. */
static int same_but_le(const struct velem *x, const struct velem *y)
{
	int i = 0, k = 0;

	for (;;) {
		while (i < x->nlabels && !strcmp(x->labels[i].key, "le"))
			i++;
		while (k < y->nlabels && !strcmp(y->labels[k].key, "le"))
			k++;
		if (i == x->nlabels || k == y->nlabels)
			return i == x->nlabels && k == y->nlabels;
		if (strcmp(x->labels[i].key, y->labels[k].key) ||
		    strcmp(x->labels[i].value, y->labels[k].value))
			return 0;
		i++;
		k++;
	}
}

/* Prometheus' bucketQuantile over one group's buckets, sorted by upper bound. */
static double bucket_quantile(double q, struct hbucket *b, size_t n)
{
	double rank, start = 0, end, count, prev = 0;

	if (isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	if (n < 2 || !isinf(b[n - 1].upper))
		return NAN;	/* no +Inf bucket: not a histogram */
	/* counts that go down (buckets scraped apart) are read as monotone */
	{
		double total = 0;
		size_t at;

		for (size_t i = 0; i < n; i++)
			total = fmax(total, b[i].e->v);
		if (total == 0)
			return NAN;
		rank = q * total;
		prev = 0;
		for (at = 0; at < n; at++) {
			double c = fmax(prev, b[at].e->v);

			if (c >= rank)
				break;
			prev = c;
		}
		if (at >= n - 1)
			return b[n - 2].upper;	/* in the +Inf bucket: the highest finite bound */
		if (at == 0 && b[0].upper <= 0)
			return b[0].upper;
		end = b[at].upper;
		count = fmax(prev, b[at].e->v);
		if (at > 0) {
			start = b[at - 1].upper;
			count -= prev;
			rank -= prev;
		}
		return count > 0 ? start + (end - start) * (rank / count) : start;
	}
}

int histogram_quantile(double q, const struct value *in, struct value *out)
{
	struct hbucket *b = malloc((in->n + 1) * sizeof(*b));
	struct label key[GROUP_KEY_MAX];
	size_t nb = 0;
	int ret = 0;

	out->is_vector = 1;
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < in->n; i++) {
		const char *le = velem_label(&in->e[i], "le");
		char *end;
		int nk = 0;

		if (!le)
			continue;	/* not a bucket, as Prometheus ignores it */
		b[nb].upper = strtod(le, &end);
		if (end == le || *end)
			continue;
		for (int k = 0; k < in->e[i].nlabels && nk < GROUP_KEY_MAX; k++)
			if (strcmp(in->e[i].labels[k].key, "le"))
				key[nk++] = in->e[i].labels[k];
		b[nb].hash = labels_hash(key, nk);
		b[nb].e = &in->e[i];
		nb++;
	}
	qsort(b, nb, sizeof(*b), hbucket_cmp);
	for (size_t s = 0, e; s < nb && !ret; s = e) {
		int nk = 0;

		for (e = s + 1; e < nb && b[e].hash == b[s].hash; e++)
			;
		/* one hash is almost always one group; a collision would mix two: skip it */
		for (size_t k = s + 1; k < e; k++)
			if (!same_but_le(b[s].e, b[k].e))
				goto next;
		for (int k = 0; k < b[s].e->nlabels && nk < GROUP_KEY_MAX; k++)
			if (strcmp(b[s].e->labels[k].key, "le"))
				key[nk++] = b[s].e->labels[k];
		{
			double x = bucket_quantile(q, &b[s], e - s);

			if (!isnan(x))
				ret = value_push(out, key, nk, x);
		}
next:;
	}
	free(b);
	return ret;
}

const char *label_fn_intern(struct label_fn *lf, const char *v)
{
	uint32_t at;
	char **m;

	if (strmap_get(lf->index, v, &at))
		return lf->made[at];
	if (lf->nmade >= LABEL_FN_MAX_VALUES)
		return NULL;
	m = realloc(lf->made, (lf->nmade + 1) * sizeof(*m));
	if (!m)
		return NULL;
	lf->made = m;
	if (!(m[lf->nmade] = strdup(v)) || strmap_put(lf->index, v, (uint32_t)lf->nmade)) {
		free(m[lf->nmade]);
		return NULL;
	}
	return lf->made[lf->nmade++];
}

/*
 * label_replace(v, dst, replacement, src, regex): where regex matches all
 * of src's value, dst becomes the expanded replacement (removed if empty);
 * elsewhere the element is unchanged.  label_join(v, dst, sep, src...):
 * dst becomes the sources' values joined by sep.  As in PromQL.
 */
int eval_label_fn(const struct node *n, const struct eval_in *in,
		  struct value *out, char *err, size_t errlen)
{
	struct value v;
	struct label l[GROUP_KEY_MAX + 1];
	char made[1024];
	const char *dst = n->args[1]->str;
	int ret = eval_node(n->args[0], in, &v, err, errlen);

	if (ret)
		return ret;
	out->is_vector = 1;
	if (!v.is_vector) {
		snprintf(err, errlen, "%d:%d: %s takes a vector", n->line, n->col, n->fn);
		ret = -EINVAL;
	}
	for (size_t i = 0; !ret && i < v.n; i++) {
		const struct velem *e = &v.e[i];
		const char *v = made;
		int nl = 0, r = 1;

		if (n->fn_id == FN_LABEL_REPLACE) {
			const char *src = velem_label(e, n->args[3]->str);

			r = promregex_expand(&n->lf->re, src ? src : "", n->args[2]->str, made,
					     sizeof(made));
		} else {
			size_t off = 0;

			made[0] = '\0';
			for (int k = 3; k < n->nargs && off < sizeof(made); k++) {
				const char *src = velem_label(e, n->args[k]->str);

				off += (size_t)snprintf(made + off, sizeof(made) - off, "%s%s",
							k > 3 ? n->args[2]->str : "", src ? src : "");
			}
			r = off < sizeof(made) ? 1 : -ENOSPC;
		}
		if (r < 0) {
			snprintf(err, errlen, "%d:%d: %s: %s", n->line, n->col, n->fn,
				 r == -ENOSPC ? "the new label value is longer than 1023 bytes" :
				 "the replacement refers to a group badly");
			ret = -EINVAL;
			break;
		}
		if (!r) {
			ret = value_push(out, e->labels, e->nlabels, e->v);
			continue;
		}
		if (*made && !(v = label_fn_intern(n->lf, made))) {
			snprintf(err, errlen, "%d:%d: %s made more than %d distinct label values",
				 n->line, n->col, n->fn, LABEL_FN_MAX_VALUES);
			ret = -EINVAL;
			break;
		}
		for (int k = 0; k < e->nlabels && nl < GROUP_KEY_MAX; k++)
			if (strcmp(e->labels[k].key, dst))
				l[nl++] = e->labels[k];
		if (*made)
			l[nl++] = (struct label){ .key = (char *)dst, .value = (char *)v };
		labels_sort(l, nl);
		ret = value_push(out, l, nl, e->v);
	}
	value_free(&v);
	return ret;
}
