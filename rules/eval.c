/*
 * eval.c - expression evaluation; see eval.h.
 *
 * Vectors are built by walking each host's newest snapshot for series
 * that match a selector; range functions then walk the same host's older
 * snapshots for the same series (by canonical key).  Binary operations
 * between vectors match elements with identical label sets.
 */
#include "eval.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "histogram.h"

static int lab_cmp(const void *a, const void *b)
{
	return strcmp(((const struct label *)a)->key, ((const struct label *)b)->key);
}

void value_free(struct value *v)
{
	for (size_t i = 0; i < v->n; i++) {
		for (int k = 0; k < v->e[i].nlabels; k++) {
			free(v->e[i].labels[k].key);
			free(v->e[i].labels[k].value);
		}
		free(v->e[i].labels);
	}
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

static int push(struct value *v, const struct label *l, int nl, double x)
{
	struct velem *e = realloc(v->e, (v->n + 1) * sizeof(*e));

	if (!e)
		return -ENOMEM;
	v->e = e;
	e = &v->e[v->n];
	e->labels = calloc((size_t)nl + 1, sizeof(*e->labels));
	if (!e->labels)
		return -ENOMEM;
	for (int i = 0; i < nl; i++) {
		e->labels[i].key = strdup(l[i].key);
		e->labels[i].value = strdup(l[i].value);
	}
	e->nlabels = nl;
	e->v = x;
	qsort(e->labels, (size_t)nl, sizeof(*e->labels), lab_cmp);
	v->n++;
	return 0;
}

static int labels_equal(const struct velem *a, const struct velem *b)
{
	if (a->nlabels != b->nlabels)
		return 0;
	for (int i = 0; i < a->nlabels; i++)
		if (strcmp(a->labels[i].key, b->labels[i].key) ||
		    strcmp(a->labels[i].value, b->labels[i].value))
			return 0;
	return 1;
}

static int matches(const struct node *sel, const struct series *s)
{
	if (strcmp(s->name, sel->metric))
		return 0;
	for (int i = 0; i < sel->nm; i++) {
		const struct expr_matcher *m = &sel->m[i];
		const char *v = series_label(s, m->label);

		if (!v)
			v = "";
		switch (m->op) {
		case '=': if (strcmp(v, m->value)) return 0; break;
		case '!': if (!strcmp(v, m->value)) return 0; break;
		case '~': if (regexec(&m->re, v, 0, NULL, 0)) return 0; break;
		case '^': if (!regexec(&m->re, v, 0, NULL, 0)) return 0; break;
		}
	}
	return 1;
}

/* Labels of an element: the series', the host's, host=NAME. */
static int elem_labels(const struct snapshot *s, const struct series *ser, struct label *out,
		       int max)
{
	int n = 0;

	for (uint32_t i = 0; i < ser->nlabels && n < max; i++)
		out[n++] = ser->labels[i];
	for (uint32_t i = 0; i < s->nlabels && n < max; i++)
		out[n++] = s->labels[i];
	if (n < max) {
		out[n].key = "host";
		out[n].value = s->host;
		n++;
	}
	return n;
}

static double scalar_of(const struct series *s)
{
	return s->kind == SERIES_COUNTER ? (double)s->counter.value :
	       s->kind == SERIES_GAUGE ? s->gauge.last : NAN;
}

/* Apply a range function to one series of one host. */
static double range_fn(const char *fn, const struct host_window *h, const struct series *latest,
		       uint64_t range_ns, double q)
{
	uint64_t now = h->snaps[h->n - 1].ts_ms, from = now - range_ns / 1000000;
	const struct snapshot *last = &h->snaps[h->n - 1];
	uint32_t hint = latest >= last->series && latest < last->series + last->nseries ?
			(uint32_t)(latest - last->series) : 0;
	const struct series *first = NULL, *prev = NULL;
	uint64_t first_ts = 0;
	double acc = 0, mn = INFINITY, mx = -INFINITY, sum = 0;
	size_t cnt = 0;

	for (size_t i = 0; i < h->n; i++) {
		const struct snapshot *s = &h->snaps[i];
		const struct series *x;

		if (s->ts_ms < from)
			continue;
		x = snapshot_find_same(s, latest, hint);
		if (!x || x->kind != latest->kind)
			continue;
		if (!first) {
			first = x;
			first_ts = s->ts_ms;
		}
		double v = scalar_of(x);

		if (prev && x->kind == SERIES_COUNTER)
			acc += x->counter.value >= prev->counter.value ?
			       (double)(x->counter.value - prev->counter.value) : (double)x->counter.value;
		if (v < mn)
			mn = v;
		if (v > mx)
			mx = v;
		sum += v;
		cnt++;
		prev = x;
	}
	if (!cnt)
		return NAN;
	if (!strcmp(fn, "increase"))
		return cnt > 1 ? acc : NAN;
	if (!strcmp(fn, "rate"))
		return cnt > 1 && now > first_ts ? acc / ((double)(now - first_ts) / 1000.0) : NAN;
	if (!strcmp(fn, "delta"))
		return cnt > 1 ? scalar_of(prev) - scalar_of(first) : NAN;
	if (!strcmp(fn, "avg_over_time"))
		return sum / (double)cnt;
	if (!strcmp(fn, "min_over_time"))
		return mn;
	if (!strcmp(fn, "max_over_time"))
		return mx;
	if (!strcmp(fn, "quantile")) {
		struct histogram d;

		if (cnt < 2 || latest->kind != SERIES_HISTOGRAM)
			return NAN;
		hist_subtract(&d, prev->hist, first->hist);
		return d.count ? (double)hist_quantile(&d, q) : NAN;
	}
	return NAN;
}

static int eval_selector(const struct node *sel, const char *fn, double q,
			 const struct host_window *hosts, size_t nh, struct value *out)
{
	struct label l[SNAPSHOT_MAX_LABELS * 2 + 1];

	out->is_vector = 1;
	for (size_t h = 0; h < nh; h++) {
		const struct snapshot *s;

		if (!hosts[h].n)
			continue;
		s = &hosts[h].snaps[hosts[h].n - 1];
		for (uint32_t i = 0; i < s->nseries; i++) {
			const struct series *ser = &s->series[i];
			double v;
			int nl;

			if (!matches(sel, ser))
				continue;
			v = fn ? range_fn(fn, &hosts[h], ser, sel->range_ns, q) : scalar_of(ser);
			if (isnan(v))
				continue;
			nl = elem_labels(s, ser, l, (int)(sizeof(l) / sizeof(l[0])));
			if (push(out, l, nl, v))
				return -ENOMEM;
		}
	}
	return 0;
}

static int cmp_true(enum bin_op op, double a, double b)
{
	switch (op) {
	case OP_EQ: return a == b;
	case OP_NE: return a != b;
	case OP_GT: return a > b;
	case OP_LT: return a < b;
	case OP_GE: return a >= b;
	case OP_LE: return a <= b;
	default: return 0;
	}
}

static double arith(enum bin_op op, double a, double b)
{
	switch (op) {
	case OP_ADD: return a + b;
	case OP_SUB: return a - b;
	case OP_MUL: return a * b;
	case OP_DIV: return b != 0 ? a / b : NAN;
	case OP_MOD: return b != 0 ? fmod(a, b) : NAN;
	default: return NAN;
	}
}

static int is_cmp(enum bin_op op)
{
	return op >= OP_EQ && op <= OP_LE;
}

static int eval_bin(const struct node *n, const struct value *l, const struct value *r,
		    struct value *out, char *err, size_t errlen)
{
	if (n->op == OP_AND || n->op == OP_OR || n->op == OP_UNLESS) {
		if (!l->is_vector || !r->is_vector) {
			snprintf(err, errlen, "%d:%d: and/or/unless need vectors on both sides",
				 n->line, n->col);
			return -EINVAL;
		}
		out->is_vector = 1;
		for (size_t i = 0; i < l->n; i++) {
			int in_r = 0;

			for (size_t k = 0; k < r->n && !in_r; k++)
				in_r = labels_equal(&l->e[i], &r->e[k]);
			if ((n->op == OP_UNLESS) != in_r || n->op == OP_OR)
				push(out, l->e[i].labels, l->e[i].nlabels, l->e[i].v);
		}
		for (size_t k = 0; n->op == OP_OR && k < r->n; k++) {
			int in_l = 0;

			for (size_t i = 0; i < l->n && !in_l; i++)
				in_l = labels_equal(&l->e[i], &r->e[k]);
			if (!in_l)
				push(out, r->e[k].labels, r->e[k].nlabels, r->e[k].v);
		}
		return 0;
	}
	if (!l->is_vector && !r->is_vector) {
		out->scalar = is_cmp(n->op) ? cmp_true(n->op, l->scalar, r->scalar)
					    : arith(n->op, l->scalar, r->scalar);
		return 0;
	}
	out->is_vector = 1;
	const struct value *vec = l->is_vector ? l : r;

	for (size_t i = 0; i < vec->n; i++) {
		double a, b, x;

		if (l->is_vector && r->is_vector) {
			size_t k;

			for (k = 0; k < r->n && !labels_equal(&l->e[i], &r->e[k]); k++)
				;
			if (k == r->n)
				continue;
			a = l->e[i].v;
			b = r->e[k].v;
		} else {
			a = l->is_vector ? vec->e[i].v : l->scalar;
			b = r->is_vector ? vec->e[i].v : r->scalar;
		}
		if (is_cmp(n->op)) {
			int t = cmp_true(n->op, a, b);

			if (n->bool_mod)
				x = t;
			else if (t)
				x = vec->e[i].v;
			else
				continue;
		} else {
			x = arith(n->op, a, b);
			if (isnan(x))
				continue;
		}
		push(out, vec->e[i].labels, vec->e[i].nlabels, x);
	}
	return 0;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int eval_agg(const struct node *n, const struct value *in, struct value *out)
{
	out->is_vector = 1;
	int *done = calloc(in->n + 1, sizeof(int));

	if (!done)
		return -ENOMEM;
	for (size_t i = 0; i < in->n; i++) {
		struct label key[16];
		double acc = 0, mn = INFINITY, mx = -INFINITY;
		size_t cnt = 0;
		int nk = 0;

		if (done[i])
			continue;
		for (int b = 0; b < n->nby && nk < 16; b++) {
			const char *v = velem_label(&in->e[i], n->by[b]);

			key[nk].key = n->by[b];
			key[nk].value = (char *)(v ? v : "");
			nk++;
		}
		for (size_t k = i; k < in->n; k++) {
			int same = 1;

			if (done[k])
				continue;
			for (int b = 0; b < nk && same; b++) {
				const char *v = velem_label(&in->e[k], key[b].key);

				same = !strcmp(v ? v : "", key[b].value);
			}
			if (!same)
				continue;
			done[k] = 1;
			acc += in->e[k].v;
			if (in->e[k].v < mn)
				mn = in->e[k].v;
			if (in->e[k].v > mx)
				mx = in->e[k].v;
			cnt++;
		}
		double x = !strcmp(n->fn, "sum") ? acc : !strcmp(n->fn, "avg") ? acc / (double)cnt :
			   !strcmp(n->fn, "min") ? mn : !strcmp(n->fn, "max") ? mx : (double)cnt;

		if (push(out, key, nk, x)) {
			free(done);
			return -ENOMEM;
		}
	}
	free(done);
	return 0;
}

static int peer_ratio(const struct value *in, const char *label, struct value *out)
{
	double *vals = calloc(in->n + 1, sizeof(double));

	out->is_vector = 1;
	if (!vals)
		return -ENOMEM;
	for (size_t i = 0; i < in->n; i++) {
		const char *g = velem_label(&in->e[i], label);
		size_t m = 0;

		for (size_t k = 0; k < in->n; k++) {
			const char *h = velem_label(&in->e[k], label);

			if (!strcmp(g ? g : "", h ? h : ""))
				vals[m++] = in->e[k].v;
		}
		qsort(vals, m, sizeof(double), dbl_cmp);
		double med = m % 2 ? vals[m / 2] : (vals[m / 2 - 1] + vals[m / 2]) / 2;

		if (med != 0)
			push(out, in->e[i].labels, in->e[i].nlabels, in->e[i].v / med);
	}
	free(vals);
	return 0;
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
		return eval_selector(n, NULL, 0, hosts, nh, out);
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
		if (!strcmp(n->fn, "quantile"))
			return eval_selector(n->args[1], n->fn, n->args[0]->num, hosts, nh, out);
		if (!strcmp(n->fn, "abs") || !strcmp(n->fn, "peer_ratio")) {
			ret = eval(n->args[0], hosts, nh, &a, err, errlen);
			if (ret)
				return ret;
			if (!strcmp(n->fn, "peer_ratio")) {
				ret = a.is_vector ? peer_ratio(&a, n->args[1]->str, out) : -EINVAL;
				value_free(&a);
				return ret;
			}
			*out = a;
			for (size_t i = 0; i < out->n; i++)
				out->e[i].v = fabs(out->e[i].v);
			out->scalar = fabs(out->scalar);
			return 0;
		}
		return eval_selector(n->args[0], n->fn, 0, hosts, nh, out);
	case N_AGG:
		ret = eval(n->args[0], hosts, nh, &a, err, errlen);
		if (!ret && !a.is_vector) {
			snprintf(err, errlen, "%d:%d: %s needs a vector", n->line, n->col, n->fn);
			ret = -EINVAL;
		}
		if (!ret)
			ret = eval_agg(n, &a, out);
		value_free(&a);
		return ret;
	case N_BIN:
		ret = eval(n->l, hosts, nh, &a, err, errlen);
		if (!ret)
			ret = eval(n->r, hosts, nh, &b, err, errlen);
		if (!ret)
			ret = eval_bin(n, &a, &b, out, err, errlen);
		value_free(&a);
		value_free(&b);
		return ret;
	}
	return -EINVAL;
}
