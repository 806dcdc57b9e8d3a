/*
 * ruletest_input.c - a rule test's input series; see ruletest_input.h.
 */
#include "rules/ruletest/ruletest_input.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rules/engine/engine.h"
#include "rules/engine/minute_source.h"

static int is_host_label(const char *k)
{
	return !strcmp(k, "rack") || !strcmp(k, "switch") || !strcmp(k, "row") ||
	       !strcmp(k, "site");
}

/*
 * A _bucket series' le: one of the bounds faultline's /metrics shows for
 * histogram m (or +Inf), into *le.  Another bound cannot be held by the
 * fleet's bucket layout exactly, so it is an error naming the bounds.
 */
static int classic_le(const struct metric_info *m, const char *val, double *le, char *err,
		      size_t errlen)
{
	const double *bound;
	const char *const *les;
	int n = catalog_hist_bounds(m, &bound, &les), o;
	char *end;
	double v;

	if (!strcmp(val, "+Inf")) {
		*le = INFINITY;
		return 0;
	}
	v = strtod(val, &end);
	for (int i = 0; *end == '\0' && end != val && i < n; i++)
		if (!strcmp(val, les[i]) || fabs(v - bound[i]) <= 1e-9 * bound[i]) {
			*le = bound[i];
			return 0;
		}
	o = snprintf(err, errlen, "le=\"%s\" is not a bucket bound of %s (classic buckets are "
		     "the ones /metrics shows:", val, m->name);
	for (int i = 0; i < n && o > 0 && (size_t)o < errlen; i++)
		o += snprintf(err + o, errlen - (size_t)o, " %s", les[i]);
	if (o > 0 && (size_t)o < errlen)
		snprintf(err + o, errlen - (size_t)o, " +Inf)");
	return -1;
}

/* 'metric{k="v",...}' */
static int parse_series(const char *s, struct input *in, char *err, size_t errlen)
{
	const char *b = strchr(s, '{');
	size_t ml = b ? (size_t)(b - s) : strlen(s);

	snprintf(in->metric, sizeof(in->metric), "%.*s", (int)ml, s);
	in->mi = catalog_find(in->metric);
	if (!in->mi && (in->mi = catalog_find_hist_part(in->metric, &in->part)) == NULL) {
		catalog_unknown(in->metric, err, errlen);
		return -1;
	}
	for (const char *p = b ? b + 1 : NULL; p && *p && *p != '}';) {
		char key[64], val[128];
		const char *eq = strchr(p, '='), *q1, *q2;

		if (!eq || !(q1 = strchr(eq, '"')) || !(q2 = strchr(q1 + 1, '"'))) {
			snprintf(err, errlen, "expected k=\"v\" in '%s'", s);
			return -1;
		}
		snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
		snprintf(val, sizeof(val), "%.*s", (int)(q2 - q1 - 1), q1 + 1);
		if (!strcmp(key, "host"))
			snprintf(in->host, sizeof(in->host), "%s", val);
		else if (in->part == 1 && !strcmp(key, "le")) {
			if (classic_le(in->mi, val, &in->le, err, errlen))
				return -1;
			in->le_given = 1;
		} else if (is_host_label(key)) {
			if (in->nhlabels == 8) {
				snprintf(err, errlen, "more than 8 host labels in '%s'", s);
				return -1;
			}
			in->hlabels[in->nhlabels].key = strdup(key);
			in->hlabels[in->nhlabels++].value = strdup(val);
		} else {
			if (in->nlabels == 16) {
				snprintf(err, errlen, "more than 16 labels in '%s'", s);
				return -1;
			}
			in->labels[in->nlabels].key = strdup(key);
			in->labels[in->nlabels++].value = strdup(val);
		}
		p = q2 + 1;
		while (*p == ',' || *p == ' ')
			p++;
	}
	if (!in->host[0]) {
		snprintf(err, errlen, "series '%s' needs a host=\"...\" label", s);
		return -1;
	}
	if (in->part == 1 && !in->le_given) {
		snprintf(err, errlen, "'%s': a _bucket series needs its le label", s);
		return -1;
	}
	return 0;
}

/* Append one step (have = 0: no sample).  Returns 0 or -1. */
static int push_point(struct input *in, double v, int have, char *err, size_t errlen)
{
	if (in->n == MAX_POINTS) {
		snprintf(err, errlen, "more than %d values in one series", MAX_POINTS);
		return -1;
	}
	if (in->n == in->cap) {
		int cap = in->cap ? in->cap * 2 : 64;
		double *nv = realloc(in->v, (size_t)cap * sizeof(*nv));
		unsigned char *nh = nv ? realloc(in->have, (size_t)cap) : NULL;

		if (nv)
			in->v = nv;
		if (!nh) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		in->have = nh;
		in->cap = cap;
	}
	in->v[in->n] = v;
	in->have[in->n++] = (unsigned char)have;
	return 0;
}

/*
 * promtool's series notation: "1 2 _ 3+1x4 10-2x3 7x2 _x3": a value, _ (no
 * sample), a+bxn and a-bxn (a, then n more samples each b further), axn
 * (a, n + 1 times: a+0xn) and _xn (n missing samples).
 */
static int parse_values(const char *s, struct input *in, char *err, size_t errlen)
{
	char buf[4096], *save, *tok;

	if (strlen(s) >= sizeof(buf)) {
		snprintf(err, errlen, "values: longer than %zu bytes", sizeof(buf) - 1);
		return -1;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *x = strrchr(tok, 'x'), *end, *send;
		double a, step = 0;
		long n = 0;

		if (!strcmp(tok, "_")) {
			if (push_point(in, 0, 0, err, errlen))
				return -1;
			continue;
		}
		if (!strncmp(tok, "_x", 2)) {
			n = strtol(tok + 2, &end, 10);
			if (end == tok + 2 || *end || n < 0 || n >= MAX_POINTS) {
				snprintf(err, errlen, "'%s' is not of the form _xn (n missing samples, "
					 "n < %d)", tok, MAX_POINTS);
				return -1;
			}
			for (long i = 0; i < n; i++)
				if (push_point(in, 0, 0, err, errlen))
					return -1;
			continue;
		}
		if (x)
			*x = '\0';	/* else strtod would read "+0x22" as hex */
		a = strtod(tok, &end);
		if (end == tok || (!x && *end) || (x && *end && *end != '+' && *end != '-')) {
			if (x)
				*x = 'x';
			snprintf(err, errlen, "'%s' is not a value, _, a+bxn, a-bxn, axn or _xn", tok);
			return -1;
		}
		if (x) {
			if (*end) {
				step = strtod(end, &send);
				if (send == end || *send) {
					*x = 'x';
					snprintf(err, errlen, "'%s' is not of the form a+bxn", tok);
					return -1;
				}
			}
			n = strtol(x + 1, &send, 10);
			if (send == x + 1 || *send || n < 0) {
				*x = 'x';
				snprintf(err, errlen, "'%s': n in a+bxn is a count", tok);
				return -1;
			}
		}
		if (n >= MAX_POINTS) {
			snprintf(err, errlen, "'%s': more than %d values in one series", tok, MAX_POINTS);
			return -1;
		}
		for (long i = 0; i <= n; i++)
			if (push_point(in, a + step * (double)i, 1, err, errlen))
				return -1;
	}
	return 0;
}

static int same_labels(const struct input *a, const struct input *b)
{
	if (a->mi != b->mi || a->nlabels != b->nlabels)
		return 0;
	for (int k = 0; k < a->nlabels; k++)
		if (strcmp(a->labels[k].key, b->labels[k].key) ||
		    strcmp(a->labels[k].value, b->labels[k].value))
			return 0;
	return 1;
}

/*
 * One classic histogram's value at step (its group of inputs, those with
 * group == g in [from, nin)) as faultline's histogram: each bucket's count
 * recorded at its bound (whose layout bucket starts above the bound below
 * it), what passes the last bound above it, _sum as the sum.  So the
 * _bucket, _sum and _count rules read back are what the test wrote.
 * Returns 1 when the snapshot got the series (a bucket had a sample).
 */
static int classic_series(struct snapshot *s, const struct input *in, int g, int from, int nin,
			  uint64_t step)
{
	const struct metric_info *mi = in[g].mi;
	struct { double le, cum; } b[64];
	double sum = NAN, count = NAN, prev = 0, top = 0;
	struct series *ser;
	int nb = 0;

	for (int k = from; k < nin && !strcmp(in[k].host, in[g].host); k++) {
		if (!in[k].part || in[k].group != g || step >= (uint64_t)in[k].n || !in[k].have[step])
			continue;
		if (in[k].part == 2)
			sum = in[k].v[step];
		else if (in[k].part == 3)
			count = in[k].v[step];
		else if (nb < 64)
			b[nb++] = (typeof(b[0])){ in[k].le, in[k].v[step] };
	}
	if (!nb)
		return 0;
	/* by le (a few dozen at most) */
	for (int x = 1; x < nb; x++)
		for (int y = x; y > 0 && b[y].le < b[y - 1].le; y--) {
			typeof(b[0]) t = b[y];

			b[y] = b[y - 1];
			b[y - 1] = t;
		}
	ser = snapshot_add_labels(s, mi->wire, SERIES_HISTOGRAM, in[g].labels,
				  (uint32_t)in[g].nlabels);
	if (!ser)
		return 0;
	hist_reset(ser->hist);
	for (int k = 0; k < nb; k++) {
		double at = isinf(b[k].le) ? top * 2 : b[k].le;
		double n = b[k].cum - prev;

		if (n > 0)
			hist_record_n(ser->hist, (uint64_t)llround(catalog_to_wire(at, mi->scale)),
				      (uint64_t)llround(n));
		if (!isinf(b[k].le))
			top = b[k].le;
		prev = b[k].cum > prev ? b[k].cum : prev;
	}
	if (!isnan(count) && count > prev)
		hist_record_n(ser->hist, (uint64_t)llround(catalog_to_wire(top * 2, mi->scale)),
			      (uint64_t)llround(count - prev));
	ser->hist->sum = isnan(sum) ? 0 : (uint64_t)llround(fmax(catalog_to_wire(sum, mi->scale),
								    0));
	return 1;
}

/*
 * Give the engine one snapshot per host for input step: all of a host's
 * series that have a sample at this step, as one probe would send them.
 * in[] is sorted by host, so each host's series are one run.
 */
void feed_step(struct engine *e, struct minute_source *ms, struct input *in, int nin,
		      uint64_t step, uint64_t ts_ms, uint64_t interval_ms)
{
	for (int i = 0, j; i < nin; i = j) {
		struct snapshot s;
		int any = 0;

		snapshot_init(&s, in[i].host, ts_ms, interval_ms, step, 1);
		for (j = i; j < nin && !strcmp(in[j].host, in[i].host); j++) {
			const struct metric_info *mi = in[j].mi;
			struct series *ser;
			double wire;

			for (int h = 0; h < in[j].nhlabels; h++)
				snapshot_set_label(&s, in[j].hlabels[h].key, in[j].hlabels[h].value);
			if (in[j].part) {
				if (in[j].group == j && classic_series(&s, in, j, i, nin, step))
					any = 1;
				continue;
			}
			if (step >= (uint64_t)in[j].n || !in[j].have[step])
				continue;
			/* values are in the metric's unit; snapshots hold the wire's */
			wire = catalog_to_wire(in[j].v[step], mi->scale);
			ser = snapshot_add_labels(&s, mi->wire, mi->kind, in[j].labels,
						  (uint32_t)in[j].nlabels);
			if (!ser)
				continue;
			any = 1;
			if (mi->kind == SERIES_COUNTER) {
				ser->counter.value = (uint64_t)llround(fmax(wire, 0));
			} else if (mi->kind == SERIES_HISTOGRAM) {
				if (!in[j].cum && !(in[j].cum = calloc(1, sizeof(*in[j].cum))))
					continue;
				hist_record_n(in[j].cum, (uint64_t)llround(fmax(wire, 0)),
					      in[j].count);
				*ser->hist = *in[j].cum;
			} else {
				ser->gauge.last = ser->gauge.min = ser->gauge.max = wire;
				ser->gauge.sum = wire;
				ser->gauge.n = 1;
			}
		}
		if (any) {
			minute_source_add(ms, &s);	/* what baselines read, as s60 */
			engine_add_snapshot(e, &s);
		}
		snapshot_free(&s);
	}
}

static int by_host(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->host, ((const struct input *)b)->host);
}

/* Free inputs in[0..n). */
void inputs_free(struct input *in, size_t n)
{
	for (size_t i = 0; in && i < n; i++) {
		free(in[i].v);
		free(in[i].have);
		free(in[i].cum);
		for (int k = 0; k < in[i].nlabels; k++) {
			free(in[i].labels[k].key);
			free(in[i].labels[k].value);
		}
		for (int k = 0; k < in[i].nhlabels; k++) {
			free(in[i].hlabels[k].key);
			free(in[i].hlabels[k].value);
		}
	}
	free(in);
}

/*
 * Group the classic histograms' inputs (same host, histogram and labels)
 * and check each group whole: _bucket series, at most 64, each le once,
 * counts that do not go down as le goes up, a _count equal to the +Inf
 * bucket.  Returns 0, or -1 with "line:col: reason" in err.
 */
static int classic_groups(struct input *in, int nin, char *err, size_t errlen)
{
	for (int j = 0; j < nin; j++) {
		int nb = 0;

		if (!in[j].part)
			continue;
		in[j].group = j;
		for (int k = j - 1; k >= 0 && !strcmp(in[k].host, in[j].host); k--)
			if (in[k].part && same_labels(&in[k], &in[j]))
				in[j].group = in[k].group;
		if (in[j].group != j)
			continue;
		for (int k = j; k < nin && !strcmp(in[k].host, in[j].host); k++) {
			if (!in[k].part || !same_labels(&in[k], &in[j]))
				continue;
			in[k].group = j;
			nb += in[k].part == 1;
			for (int q = j; q < k; q++)
				if (in[q].part && in[q].group == j && in[q].part == in[k].part &&
				    (in[k].part != 1 || in[q].le == in[k].le)) {
					snprintf(err, errlen, "%d:%d: input_series: %s given twice for "
						 "one histogram", in[k].line, in[k].col,
						 in[k].part == 1 ? "this le" : in[k].metric);
					return -1;
				}
		}
		if (!nb) {
			snprintf(err, errlen, "%d:%d: input_series: %s without the histogram's _bucket "
				 "series", in[j].line, in[j].col, in[j].metric);
			return -1;
		}
		if (nb > 64) {
			snprintf(err, errlen, "%d:%d: input_series: more than 64 _bucket series for one "
				 "histogram", in[j].line, in[j].col);
			return -1;
		}
		/* every step: counts by le never go down; _count is the +Inf bucket */
		for (int k = j; k < nin && !strcmp(in[k].host, in[j].host); k++) {
			if (!in[k].part || in[k].group != j)
				continue;
			for (int q = j; q < nin && !strcmp(in[q].host, in[j].host); q++) {
				int both = in[q].part && in[q].group == j && q != k;

				for (int t = 0; both && t < in[k].n && t < in[q].n; t++) {
					if (!in[k].have[t] || !in[q].have[t])
						continue;
					if (in[k].part == 1 && in[q].part == 1 && in[k].le < in[q].le &&
					    in[k].v[t] > in[q].v[t]) {
						char hi[32] = "+Inf";

						if (!isinf(in[q].le))
							snprintf(hi, sizeof(hi), "%g", in[q].le);
						snprintf(err, errlen, "%d:%d: input_series: at step %d "
							 "le=%g counts %g, more than le=%s's %g (bucket "
							 "counts are cumulative)", in[k].line, in[k].col,
							 t, in[k].le, in[k].v[t], hi, in[q].v[t]);
						return -1;
					}
					if (in[k].part == 3 && in[q].part == 1 && isinf(in[q].le) &&
					    in[k].v[t] != in[q].v[t]) {
						snprintf(err, errlen, "%d:%d: input_series: at step %d "
							 "_count is %g, the +Inf bucket %g", in[k].line,
							 in[k].col, t, in[k].v[t], in[q].v[t]);
						return -1;
					}
				}
			}
		}
	}
	return 0;
}

/*
 * A test's input_series into in[0..*nin) (room for all of them), sorted by
 * host.  Returns 0, or 1 after printing the error to out.
 */
int read_inputs(const struct cfg *c, const struct cfg_node *inputs, struct input *in,
		       int *nin, FILE *out)
{
	char err[512];

	for (size_t i = 0; inputs && i < inputs->nchild; i++) {
		const struct cfg_node *sn = cfg_get(&inputs->child[i], "series");
		const struct cfg_node *vn = cfg_get(&inputs->child[i], "values");

		if (!sn || !vn || !sn->value || !vn->value ||
		    parse_series(sn->value, &in[*nin], err, sizeof(err)) ||
		    parse_values(vn->value, &in[*nin], err, sizeof(err))) {
			if (!sn || !vn)
				snprintf(err, sizeof(err), "each input needs series and values");
			fprintf(out, "%s:%d:%d: input_series: %s\n", c->file, inputs->child[i].line,
				inputs->child[i].col, err);
			return 1;
		}
		in[*nin].count = 100;
		in[*nin].line = inputs->child[i].line;
		in[*nin].col = inputs->child[i].col;
		if (cfg_uint(c, &inputs->child[i], "count", 1, 1000000000, &in[*nin].count, err,
			     sizeof(err))) {
			fprintf(out, "%s\n", err);
			return 1;
		}
		(*nin)++;
	}
	qsort(in, (size_t)*nin, sizeof(*in), by_host);
	if (classic_groups(in, *nin, err, sizeof(err))) {
		fprintf(out, "%s:%s\n", c->file, err);
		return 1;
	}
	return 0;
}
