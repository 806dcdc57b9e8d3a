/*
 * prom.c - Prometheus text exposition; see prom.h.
 */
#include "probes/prom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/promtext.h"
#include "model/catalog.h"

struct prom_name {
	char base[256];
	double scale;
	const char *help;
};

/*
 * The metric's one name, scale and help from the catalog (lib/model/catalog.h);
 * a series the catalog does not know (none should reach here) is exposed
 * under faultline_ + its wire name, unscaled.
 */
static void name_of(const struct series *ser, struct prom_name *pn)
{
	const struct metric_info *m = catalog_find_wire(ser->name);
	size_t off;

	if (m) {
		snprintf(pn->base, sizeof(pn->base), "%s", m->name);
		pn->scale = m->scale;
		pn->help = m->help;
		return;
	}
	pn->scale = 1.0;
	pn->help = "faultline metric.";
	off = (size_t)snprintf(pn->base, sizeof(pn->base), "faultline_");
	for (const char *p = ser->name; *p && off + 1 < sizeof(pn->base); p++) {
		char c = *p;

		pn->base[off++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				  (c >= '0' && c <= '9') || c == '_' ? c : '_';
	}
	pn->base[off] = '\0';
}


void prom_metric_name(const struct series *ser, char *name, size_t len, double *scale,
		      const char **help)
{
	struct prom_name pn;

	name_of(ser, &pn);
	snprintf(name, len, "%s", pn.base);
	*scale = pn.scale;
	*help = pn.help;
}

/* {k="v",...,extra} ; extra is an already formatted pair or NULL */
static void labels(struct strbuf *out, const struct series *ser, const char *extra)
{
	if (!ser->nlabels && !extra)
		return;
	strbuf_adds(out, "{");
	for (uint32_t i = 0; i < ser->nlabels; i++) {
		promtext_label(out, ser->labels[i].key, ser->labels[i].value, i == 0);
	}
	if (extra)
		strbuf_addf(out, "%s%s", ser->nlabels ? "," : "", extra);
	strbuf_adds(out, "}");
}

int prom_bounds(const struct prom_buckets *b, const char *metric, const double **bound)
{
	for (int i = 0; b && i < b->n; i++)
		if (!strcmp(b->m[i].metric, metric)) {
			*bound = b->m[i].bound;
			return b->m[i].n;
		}
	return catalog_hist_bounds(catalog_find(metric), bound, NULL);
}

static void render_hist(struct strbuf *out, const struct prom_name *pn, const struct series *ser,
			const struct prom_buckets *b)
{
	const struct histogram *h = ser->hist;
	const double *bound;
	int nb = prom_bounds(b, pn->base, &bound);
	uint64_t cum[PROM_MAX_BOUNDS];
	char le[64];

	hist_cumulative(h, pn->scale, bound, nb, cum);
	for (int k = 0; k < nb; k++) {
		snprintf(le, sizeof(le), "le=\"%.9g\"", bound[k]);
		strbuf_addf(out, "%s_bucket", pn->base);
		labels(out, ser, le);
		strbuf_addf(out, " %llu\n", (unsigned long long)cum[k]);
	}
	strbuf_addf(out, "%s_bucket", pn->base);
	labels(out, ser, "le=\"+Inf\"");
	strbuf_addf(out, " %llu\n", (unsigned long long)h->count);
	strbuf_addf(out, "%s_sum", pn->base);
	labels(out, ser, NULL);
	strbuf_addf(out, " %.9g\n", catalog_to_base((double)h->sum, pn->scale));
	strbuf_addf(out, "%s_count", pn->base);
	labels(out, ser, NULL);
	strbuf_addf(out, " %llu\n", (unsigned long long)h->count);
}

static int by_name(const void *a, const void *b)
{
	const struct series *x = *(const struct series *const *)a;
	const struct series *y = *(const struct series *const *)b;

	return strcmp(x->name, y->name);
}

void prom_render(const struct snapshot *s, const struct prom_buckets *b, struct strbuf *out)
{
	const struct series **order;
	struct prom_name pn;

	order = malloc(s->nseries * sizeof(*order) + 1);
	if (!order)
		return;
	for (uint32_t i = 0; i < s->nseries; i++)
		order[i] = &s->series[i];
	/* stable grouping by name: qsort is not stable, but equal names only
	 * need to be adjacent, not ordered among themselves */
	qsort(order, s->nseries, sizeof(*order), by_name);
	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct series *ser = order[i];

		name_of(ser, &pn);
		if (i == 0 || strcmp(order[i - 1]->name, ser->name) != 0) {
			strbuf_addf(out, "# HELP %s %s\n# TYPE %s %s\n", pn.base, pn.help, pn.base,
				    ser->kind == SERIES_COUNTER ? "counter" :
				    ser->kind == SERIES_GAUGE ? "gauge" : "histogram");
		}
		if (ser->kind == SERIES_HISTOGRAM) {
			render_hist(out, &pn, ser, b);
			continue;
		}
		strbuf_adds(out, pn.base);
		labels(out, ser, NULL);
		if (ser->kind == SERIES_COUNTER && pn.scale == 1.0)
			strbuf_addf(out, " %llu\n", (unsigned long long)ser->counter.value);
		else if (ser->kind == SERIES_COUNTER)
			strbuf_addf(out, " %.9g\n", catalog_to_base((double)ser->counter.value, pn.scale));
		else
			strbuf_addf(out, " %.17g\n", catalog_to_base(ser->gauge.last, pn.scale));
	}
	free(order);
}
