/*
 * pages.c - faultline-web's HTML: incident pages, the fleet page, the
 * wear report; see pages.h.
 *
 * Each page is written into a memory stream (open_memstream) as plain
 * HTML with inline SVG, every outside string escaped (fputs_xml): alert
 * labels and annotations come from whoever wrote the rules.
 */
#include "web/pages.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/wear_report.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "model/alert.h"
#include "model/flamegraph.h"
#include "model/host_entry.h"
#include "model/profile.h"
#include "rules/lang/expr.h"
#include "rules/lang/rules.h"
#include "store/alert_index.h"
#include "store/conn.h"
#include "store/drives.h"
#include "store/host_registry.h"
#include "store/profile_store.h"

#define HTML_TYPE "text/html; charset=utf-8"
#define CHART_POINTS 600	/* steps of a chart: its width in points */
#define CHART_SERIES 12		/* lines drawn; the rest are counted */
#define MAP_HOSTS 2000		/* hosts drawn on a domain's map */

struct pages {
	char url[600];
	struct query_opts o;
	const struct ruleset *rs;
	struct conn *rc;
};

struct pages *pages_new(const char *url, const struct query_opts *o, const struct ruleset *rs)
{
	struct pages *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	snprintf(p->url, sizeof(p->url), "%s", url);
	p->o = *o;
	p->rs = rs;
	return p;
}

void pages_free(struct pages *p)
{
	if (!p)
		return;
	conn_close(p->rc);
	free(p);
}

/* ---- the page around the content ------------------------------------- */

static void head(FILE *f, const char *title)
{
	fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	      "<title>", f);
	fputs_xml(title, f);
	fputs("</title>\n<style>\n"
	      "body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;"
	      "padding:12px 16px;color:#1d1d1f}\n"
	      "nav a{margin-right:14px}h1{font-size:1.5em;margin:.4em 0}"
	      "h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ddd}\n"
	      ".sev{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;"
	      "background:#888;font-size:.85em}.sev.page,.sev.critical{background:#c62828}"
	      ".sev.warning{background:#ef6c00}\n"
	      "table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:3px 8px;"
	      "border-bottom:1px solid #eee;vertical-align:top}th{width:11em;color:#555}\n"
	      "svg{max-width:100%;height:auto}.note{color:#666}.err{color:#b71c1c}\n"
	      "code{word-break:break-all}\n"
	      ".legend span{display:inline-block;margin-right:12px}\n"
	      "@media (max-width:700px){body{font-size:16px}th{width:auto}}\n"
	      "</style></head><body>\n<nav><a href=\"/fleet\">what fires</a>"
	      "<a href=\"/wear\">SSD wear</a></nav>\n", f);
}

static void tail(FILE *f)
{
	fputs("</body></html>\n", f);
}

static void answer(struct http_response *resp, unsigned int status, char *body, size_t len)
{
	resp->status = status;
	resp->content_type = HTML_TYPE;
	resp->body = body;
	resp->len = body ? len : 0;
}

/* A page saying why there is none. */
static void error_page(struct http_response *resp, unsigned int status, const char *title,
		       const char *why)
{
	char *body = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&body, &len);

	if (!f) {
		answer(resp, 500, NULL, 0);
		return;
	}
	head(f, title);
	fputs("<h1>", f);
	fputs_xml(title, f);
	fputs("</h1>\n<p class=\"err\">", f);
	fputs_xml(why, f);
	fputs("</p>\n", f);
	tail(f);
	fclose(f);
	answer(resp, status, body, len);
}

static struct conn *redis(struct pages *p, char *err, size_t errlen)
{
	if (!p->rc)
		p->rc = conn_open(p->url, 2 * NSEC_PER_SEC, err, errlen);
	return p->rc;
}

static void dropped(struct pages *p)
{
	conn_close(p->rc);
	p->rc = NULL;
}

static char *when(uint64_t ms, char *buf, size_t len)
{
	return ms ? time_format_rfc3339(ms * 1000000, buf, len) : strcpy(buf, "-");
}

static const char *label_of(const struct alert *a, const char *key)
{
	for (uint32_t i = 0; i < a->nlabels; i++)
		if (!strcmp(a->labels[i].key, key))
			return a->labels[i].value;
	return NULL;
}

static const char *annotation_of(const struct alert *a, const char *key)
{
	for (uint32_t i = 0; i < a->nannotations; i++)
		if (!strcmp(a->annotations[i].key, key))
			return a->annotations[i].value;
	return NULL;
}

/* The failure domain an alert is about: "switch=sw3", "host=db-1" or "fleet". */
static void domain_of(const struct alert *a, char *buf, size_t len)
{
	const char *h = label_of(a, "host");

	if (a->domain_label[0])
		snprintf(buf, len, "%s=%s", a->domain_label, a->domain_value);
	else if (h)
		snprintf(buf, len, "host=%s", h);
	else
		snprintf(buf, len, "fleet");
}

static void severity(FILE *f, const struct alert *a)
{
	const char *s = label_of(a, "severity");

	fputs("<span class=\"sev ", f);
	fputs_xml(s ? s : "none", f);
	fputs("\">", f);
	fputs_xml(s ? s : "no severity", f);
	fputs("</span>", f);
}

/* ---- the fleet page -------------------------------------------------- */

static int by_domain(const void *x, const void *y)
{
	const struct alert *a = &((const struct alert_group_member *)x)->a;
	const struct alert *b = &((const struct alert_group_member *)y)->a;
	char da[256], db[256];
	int wa = a->domain_label[0] ? 0 : label_of(a, "host") ? 1 : 2;
	int wb = b->domain_label[0] ? 0 : label_of(b, "host") ? 1 : 2;
	int c;

	if (wa != wb)
		return wa - wb;	/* a domain before a host before the fleet's own */
	domain_of(a, da, sizeof(da));
	domain_of(b, db, sizeof(db));
	if ((c = strcmp(da, db)))
		return c;
	return a->starts_ms < b->starts_ms ? -1 : a->starts_ms > b->starts_ms;
}

static void fleet_page(struct pages *p, struct http_response *resp)
{
	struct alert_index ix = { 0 };
	char err[300], domain[256], last[256] = "", t[40], *body = NULL;
	size_t len = 0;
	struct conn *rc = redis(p, err, sizeof(err));
	FILE *f;

	if (!rc || alert_index_load(rc, &ix, err, sizeof(err))) {
		if (rc)
			dropped(p);
		alert_index_free(&ix);
		error_page(resp, 503, "What fires", err);
		return;
	}
	qsort(ix.m, (size_t)ix.n, sizeof(*ix.m), by_domain);
	if (!(f = open_memstream(&body, &len))) {
		alert_index_free(&ix);
		answer(resp, 500, NULL, 0);
		return;
	}
	head(f, "faultline: what fires");
	fprintf(f, "<h1>What fires</h1>\n<p class=\"note\">%d alert%s firing, by failure "
		"domain, widest first (as the alerters took them).</p>\n", ix.n,
		ix.n == 1 ? "" : "s");
	for (int i = 0; i < ix.n; i++) {
		const struct alert *a = &ix.m[i].a;
		const char *sum = annotation_of(a, "summary");

		domain_of(a, domain, sizeof(domain));
		if (strcmp(domain, last)) {
			if (last[0])
				fputs("</table>\n", f);
			fputs("<h2 class=\"domain\">", f);
			fputs_xml(domain, f);
			fputs("</h2>\n<table>\n", f);
			snprintf(last, sizeof(last), "%s", domain);
		}
		fputs("<tr class=\"alert\"><td><a href=\"/alert/", f);
		fputs_xml(a->fingerprint, f);
		fputs("\">", f);
		fputs_xml(label_of(a, "alertname") ? label_of(a, "alertname") : "?", f);
		fputs("</a> ", f);
		severity(f, a);
		if (a->total_hosts)
			fprintf(f, " <span class=\"note\">%u of %u hosts</span>", a->nhosts,
				a->total_hosts);
		fputs("<br><span class=\"note\">since ", f);
		fputs(when(a->starts_ms, t, sizeof(t)), f);
		fputs("</span>", f);
		if (sum) {
			fputs("<br>", f);
			fputs_xml(sum, f);
		}
		fputs("</td></tr>\n", f);
	}
	if (last[0])
		fputs("</table>\n", f);
	if (ix.bad)
		fprintf(f, "<p class=\"err\">%d record(s) of the index could not be read.</p>\n",
			ix.bad);
	tail(f);
	fclose(f);
	alert_index_free(&ix);
	answer(resp, 200, body, len);
}

/* ---- the failure domain's map ---------------------------------------- */

struct map_host {
	char *name;
	char *level[3];		/* site, switch, rack ("" when not known) */
};

struct map {
	const struct alert *a;
	const struct topology *topo;
	const char *want_label, *want_value;	/* the domain drawn */
	struct map_host *h;
	size_t n, cap, over;
};

static const char *const map_levels[3] = { "site", "switch", "rack" };

static void map_host_seen(const char *host, const struct host_entry *e, void *arg)
{
	struct map *m = arg;
	struct snapshot stub;
	struct map_host *h;
	const char *v = NULL;

	if (snapshot_init(&stub, host, 0, 0, 0, 1))
		return;
	for (uint32_t i = 0; i < e->nlabels; i++)
		snapshot_set_label(&stub, e->labels[i].key, e->labels[i].value);
	topology_apply(m->topo, &stub);
	if (!strcmp(m->want_label, "host"))
		v = host;
	for (uint32_t i = 0; !v && i < stub.nlabels; i++)
		if (!strcmp(stub.labels[i].key, m->want_label))
			v = stub.labels[i].value;
	if (v && !strcmp(v, m->want_value)) {
		if (m->n == MAP_HOSTS) {
			m->over++;
		} else if (m->n < m->cap || (m->h = realloc(m->h, (m->cap = m->cap ? 2 * m->cap
								     : 64) * sizeof(*m->h)))) {
			h = &m->h[m->n++];
			h->name = strdup(host);
			for (int l = 0; l < 3; l++) {
				const char *lv = "";

				for (uint32_t i = 0; i < stub.nlabels; i++)
					if (!strcmp(stub.labels[i].key, map_levels[l]))
						lv = stub.labels[i].value;
				h->level[l] = strdup(lv);
			}
		}
	}
	snapshot_free(&stub);
}

static int map_host_cmp(const void *x, const void *y)
{
	const struct map_host *a = x, *b = y;
	int c;

	for (int l = 0; l < 3; l++)
		if ((c = strcmp(a->level[l] ? a->level[l] : "", b->level[l] ? b->level[l] : "")))
			return c;
	return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

static int hit(const struct alert *a, const char *host)
{
	const char *h = label_of(a, "host");

	for (uint32_t i = 0; i < a->nhosts; i++)
		if (!strcmp(a->hosts[i], host))
			return 1;
	return h && !strcmp(h, host);
}

/*
 * The alert's domain as the fleet's registry and topology place it: one
 * row per rack (site / switch / rack), a square per host, the hit ones
 * red; a host's alert is drawn in its rack.
 */
static void domain_map(struct pages *p, FILE *f, const struct alert *a)
{
	struct map m = { a, p->o.topology, NULL, NULL, NULL, 0, 0, 0 };
	const char *host = label_of(a, "host");
	char err[300], rack[128] = "", row[400] = "";
	const int cell = 14, left = 150;
	int y = 10, x = left, rows = 0, hits = 0, run = 0, widest = 1, width;

	if (a->domain_label[0]) {
		m.want_label = a->domain_label;
		m.want_value = a->domain_value;
	} else if (host) {
		m.want_label = "host";
		m.want_value = host;
	} else {
		fputs("<p class=\"note\">This alert is about the fleet as a whole.</p>\n", f);
		return;
	}
	if (store_host_entries(p->rc, map_host_seen, &m, err, sizeof(err)) < 0) {
		fputs("<p class=\"err\">The registry could not be read: ", f);
		fputs_xml(err, f);
		fputs("</p>\n", f);
		dropped(p);
		goto out;
	}
	/* a host's alert: its whole rack, so its neighbours show how alone it is */
	if (!a->domain_label[0] && m.n == 1 && m.h[0].level[2] && m.h[0].level[2][0]) {
		snprintf(rack, sizeof(rack), "%s", m.h[0].level[2]);
		for (size_t i = 0; i < m.n; i++) {
			free(m.h[i].name);
			for (int l = 0; l < 3; l++)
				free(m.h[i].level[l]);
		}
		m.n = 0;
		m.want_label = "rack";
		m.want_value = rack;
		if (store_host_entries(p->rc, map_host_seen, &m, err, sizeof(err)) < 0)
			dropped(p);
	}
	qsort(m.h, m.n, sizeof(*m.h), map_host_cmp);
	for (size_t i = 0; i < m.n; i++)
		hits += hit(a, m.h[i].name);
	fprintf(f, "<p><b>%d</b> of <b>%zu</b> hosts in ", hits, m.n + m.over);
	fputs_xml(m.want_label, f);
	fputs(" ", f);
	fputs_xml(m.want_value, f);
	if (a->total_hosts)
		fprintf(f, " hit (the rollup counted %u of %u)", a->nhosts, a->total_hosts);
	fputs(".", f);
	if (a->has_domain_p)
		fprintf(f, " <span class=\"pvalue\">p = %.2g</span>: the chance of hits like "
			"these landing here by chance.", a->domain_p);
	fputs("</p>\n", f);
	/* rows: one per rack */
	for (size_t i = 0; i < m.n; i++)
		if (!i || map_host_cmp(&(struct map_host){ NULL, { m.h[i].level[0], m.h[i].level[1],
					m.h[i].level[2] } }, &(struct map_host){ NULL,
					{ m.h[i - 1].level[0], m.h[i - 1].level[1],
					  m.h[i - 1].level[2] } }))
			rows++;
	/* as wide as the widest rack (at most 40 hosts a row), so a phone shows it large */
	for (size_t i = 0; i < m.n; i++) {
		run = i && !strcmp(m.h[i].level[2], m.h[i - 1].level[2]) &&
		      !strcmp(m.h[i].level[1], m.h[i - 1].level[1]) ? run + 1 : 1;
		widest = run > widest ? run : widest;
	}
	width = left + (widest > 40 ? 40 : widest) * cell + 10;
	fprintf(f, "<svg id=\"domain-map\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"failure domain map\">\n",
		width, rows * (cell + 8) + 20, width, rows * (cell + 8) + 20);
	for (size_t i = 0; i < m.n; i++) {
		const struct map_host *h = &m.h[i];
		char here[400];

		snprintf(here, sizeof(here), "%s / %s / %s", h->level[0][0] ? h->level[0] : "-",
			 h->level[1][0] ? h->level[1] : "-", h->level[2][0] ? h->level[2] : "-");
		if (strcmp(here, row)) {
			if (row[0])
				y += cell + 8;
			x = left;
			snprintf(row, sizeof(row), "%s", here);
			fprintf(f, "<text x=\"0\" y=\"%d\" font-size=\"12\">", y + cell - 2);
			fputs_xml(here, f);
			fputs("</text>\n", f);
		} else if (x + cell > left + 40 * cell) {
			continue;	/* a rack wider than 40 hosts: the rest are counted */
		}
		fprintf(f, "<rect class=\"host%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
			"fill=\"%s\"><title>", hit(a, h->name) ? " hit" : "", x, y, cell - 2,
			cell - 2, hit(a, h->name) ? "#d32f2f" : "#b0bec5");
		fputs_xml(h->name, f);
		fputs("</title></rect>\n", f);
		x += cell;
	}
	fputs("</svg>\n<p class=\"legend\"><span style=\"color:#d32f2f\">&#9632; hit</span>"
	      "<span style=\"color:#90a4ae\">&#9632; in the domain, not hit</span></p>\n", f);
out:
	for (size_t i = 0; i < m.n; i++) {
		free(m.h[i].name);
		for (int l = 0; l < 3; l++)
			free(m.h[i].level[l]);
	}
	free(m.h);
}

/* ---- the series behind it -------------------------------------------- */

/*
 * Queries of an alert's page read its hosts only: those it lists, else its
 * host label (one[0] holds it), else (an alert of the fleet) every host.
 */
static void alert_hosts_only(const struct alert *a, struct query_opts *o, const char **one)
{
	o->hosts = NULL;
	o->nhosts = 0;
	if (a->nhosts) {
		o->hosts = (const char *const *)a->hosts;
		o->nhosts = a->nhosts;
	} else if ((one[0] = label_of(a, "host"))) {
		o->hosts = one;
		o->nhosts = 1;
	}
}

static const struct rule *rule_named(const struct ruleset *rs, const char *name)
{
	for (int g = 0; rs && g < rs->ngroups; g++)
		for (int r = 0; r < rs->groups[g].nrules; r++)
			if (!rs->groups[g].rules[r].record &&
			    !strcmp(rs->groups[g].rules[r].name, name))
				return &rs->groups[g].rules[r];
	return NULL;
}

static const char *series_host(const struct query_series *s)
{
	for (int k = 0; k < s->nlabels; k++)
		if (!strcmp(s->labels[k].key, "host"))
			return s->labels[k].value;
	return NULL;
}

/*
 * The rule's expression around the firing, at 1 s where the tier has it:
 * a comparison's left side, its right side (a number) as the threshold;
 * the alert's hosts first, then the others the expression gave.
 */
static void series_chart(struct pages *p, FILE *f, const struct alert *a)
{
	const char *name = label_of(a, "alertname");
	const struct rule *r = name ? rule_named(p->rs, name) : NULL;
	const struct node *n = r ? r->expr : NULL, *shown;
	static const char *const colors[] = { "#d32f2f", "#1976d2", "#388e3c", "#f57c00",
					      "#7b1fa2", "#00796b", "#5d4037", "#c2185b",
					      "#0097a7", "#afb42b", "#455a64", "#e64a19" };
	uint64_t now = time_wall_ns() / 1000000, from, to, step;
	double threshold = NAN, lo = INFINITY, hi = -INFINITY;
	struct query_opts o = p->o;
	struct query_result res;
	const char *one[1];
	const int W = 900, H = 260, L = 70, T = 10, B = 30;
	char err[600], t[40];
	size_t order[CHART_SERIES], nshow = 0;

	if (!n) {
		fputs("<p class=\"note\">No rule of this name is loaded here (faultline-web "
		      "--rules): no chart.</p>\n", f);
		return;
	}
	fputs("<p>Rule <code>", f);
	fputs_xml(r->name, f);
	fputs("</code>: <code>", f);
	fputs_xml(r->expr_text, f);
	fputs("</code></p>\n", f);
	shown = n;
	if (n->t == N_BIN && n->op >= OP_EQ && n->op <= OP_LE && !n->bool_mod) {
		shown = n->l;
		if (n->r->t == N_NUM)
			threshold = n->r->num;
	}
	from = a->starts_ms > 5 * 60000 ? a->starts_ms - 5 * 60000 : 0;
	to = (a->fired_ms ? a->fired_ms : a->starts_ms) + 10 * 60000;
	if (to > now)
		to = now;
	if (to <= from)
		to = from + 1000;
	step = (to - from) / CHART_POINTS;
	step = step < 1000 ? 1000 : (step + 999) / 1000 * 1000;
	alert_hosts_only(a, &o, one);
	if (query_run_expr(p->rc, &o, shown, from, to, step, &res, err, sizeof(err))) {
		fputs("<p class=\"err\">The series could not be read: ", f);
		fputs_xml(err, f);
		fputs("</p>\n", f);
		return;
	}
	for (size_t i = 0; i < res.n && nshow < CHART_SERIES; i++)
		order[nshow++] = i;
	for (size_t k = 0; k < nshow; k++)
		for (size_t i = 0; i < res.s[order[k]].n; i++)
			if (isfinite(res.s[order[k]].v[i])) {
				lo = fmin(lo, res.s[order[k]].v[i]);
				hi = fmax(hi, res.s[order[k]].v[i]);
			}
	if (isfinite(threshold)) {
		lo = fmin(lo, threshold);
		hi = fmax(hi, threshold);
	}
	if (!isfinite(lo)) {
		fputs("<p class=\"note\">No samples of it in this window.</p>\n", f);
		query_result_free(&res);
		return;
	}
	if (hi <= lo)
		hi = lo + (lo ? fabs(lo) : 1);
	fprintf(f, "<svg id=\"series\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"series\">\n",
		W, H + T + B, W, H + T + B);
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
		"stroke=\"#ccc\"/>\n", L, T, W - L - 10, H);
#define XOF(ms) (L + (double)((ms) - from) * (W - L - 10) / (double)(to - from))
#define YOF(v) (T + H - ((v) - lo) * H / (hi - lo))
	for (int g = 0; g <= 4; g++) {
		double v = lo + (hi - lo) * g / 4;

		fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%.4g"
			"</text>\n", L - 4, YOF(v) + 4, v);
	}
	for (int g = 0; g <= 4; g++) {
		uint64_t ms = from + (to - from) * (uint64_t)g / 4;

		time_format_rfc3339(ms * 1000000, t, sizeof(t));
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%.8s"
			"</text>\n", XOF(ms), T + H + 18, strchr(t, 'T') ? strchr(t, 'T') + 1 : t);
	}
	if (isfinite(threshold))
		fprintf(f, "<line class=\"threshold\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#000\" stroke-dasharray=\"6 4\"><title>threshold %g</title></line>\n",
			L, W - 10, YOF(threshold), YOF(threshold), threshold);
	if (a->starts_ms >= from)
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ef6c00\">"
			"<title>began</title></line>\n", XOF(a->starts_ms), XOF(a->starts_ms), T,
			T + H);
	if (a->fired_ms >= from && a->fired_ms <= to)
		fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#c62828\">"
			"<title>fired</title></line>\n", XOF(a->fired_ms), XOF(a->fired_ms), T,
			T + H);
	for (size_t k = 0; k < nshow; k++) {
		const struct query_series *s = &res.s[order[k]];
		const char *h = series_host(s);

		fprintf(f, "<polyline class=\"line\" fill=\"none\" stroke-width=\"1.5\" "
			"stroke=\"%s\" points=\"", colors[k % CHART_SERIES]);
		for (size_t i = 0; i < s->n; i++)
			if (isfinite(s->v[i]))
				fprintf(f, "%.1f,%.1f ", XOF(s->ts[i]), YOF(s->v[i]));
		fputs("\"><title>", f);
		fputs_xml(h ? h : "value", f);
		fputs("</title></polyline>\n", f);
	}
#undef XOF
#undef YOF
	fputs("</svg>\n<p class=\"legend\">", f);
	for (size_t k = 0; k < nshow; k++) {
		const char *h = series_host(&res.s[order[k]]);

		fprintf(f, "<span style=\"color:%s\">&#9644; ", colors[k % CHART_SERIES]);
		fputs_xml(h ? h : "value", f);
		fputs("</span>", f);
	}
	if (res.n > nshow)
		fprintf(f, "<span class=\"note\">and %zu more series</span>", res.n - nshow);
	fprintf(f, "</p>\n<p class=\"note\">%s to %s, one point every %" PRIu64
		" s, from the %s tier.</p>\n", when(from, err, 40), when(to, t, sizeof(t)),
		step / 1000, res.tier == 1 ? "1 s" : res.tier == 60 ? "1-minute" : "1-hour");
	query_result_free(&res);
}

/* ---- the evidence ---------------------------------------------------- */

/* host's CPU profile windows in [from, to] as a flame graph (against base's when given). */
static void flame(struct pages *p, FILE *f, const char *host, uint64_t from, uint64_t to,
		  uint64_t base_from, uint64_t base_to, const char *title)
{
	struct profile after, before;
	char err[300];
	int n, nb = 0;

	profile_init(&after, host);
	profile_init(&before, host);
	n = profile_read_merge(p->rc, host, PROFILE_CPU, from, to, NULL, &after, NULL, err,
			       sizeof(err));
	if (n > 0 && base_to)
		nb = profile_read_merge(p->rc, host, PROFILE_CPU, base_from, base_to, NULL,
					&before, NULL, err, sizeof(err));
	if (n < 0 || nb < 0) {
		fputs("<p class=\"err\">The profiles could not be read: ", f);
		fputs_xml(err, f);
		fputs("</p>\n", f);
	} else if (!n) {
		fputs("<p class=\"note\">No CPU profile of ", f);
		fputs_xml(host, f);
		fputs(" in that window (is its probe's profiler on?).</p>\n", f);
	} else {
		fputs("<div class=\"flame\">\n", f);
		flamegraph_write(f, &after, nb > 0 ? &before : NULL, title);
		fputs("</div>\n", f);
	}
	profile_free(&after);
	profile_free(&before);
}

/*
 * Which peers the corrupt segments came from (hence which switch): the
 * alert's hosts' bad checksums per interface and peer over the 5 minutes
 * up to a minute after it fired.
 */
static void csum_peers(struct pages *p, FILE *f, const struct alert *a)
{
	static const char q[] = "sum by (host, interface, peer) "
				"(increase(faultline_tcp_bad_csum_total[5m]))";
	uint64_t at = (a->fired_ms ? a->fired_ms : a->starts_ms) + 60000;
	uint64_t now = time_wall_ns() / 1000000;
	struct query_opts o = p->o;
	struct query_result r;
	const char *one[1];
	char err[400];
	int rows = 0;

	if (at > now)
		at = now;
	alert_hosts_only(a, &o, one);
	fputs("<h3>Checksum peers</h3>\n", f);
	if (query_run(p->rc, &o, q, at, at, 0, &r, err, sizeof(err))) {
		fputs("<p class=\"err\">", f);
		fputs_xml(err, f);
		fputs("</p>\n", f);
		return;
	}
	fputs("<table id=\"csum-peers\"><tr><th>host</th><th>interface</th><th>peer</th>"
	      "<th>bad segments, 5 min</th></tr>\n", f);
	for (size_t i = 0; i < r.n; i++) {
		const char *col[3] = { "", "", "" };

		if (!(r.s[i].v[0] > 0))
			continue;
		for (int k = 0; k < r.s[i].nlabels; k++) {
			const struct label *l = &r.s[i].labels[k];

			if (!strcmp(l->key, "host"))
				col[0] = l->value;
			else if (!strcmp(l->key, "interface"))
				col[1] = l->value;
			else if (!strcmp(l->key, "peer"))
				col[2] = l->value;
		}
		fputs("<tr class=\"peer\">", f);
		for (int c = 0; c < 3; c++) {
			fputs("<td>", f);
			fputs_xml(col[c], f);
			fputs("</td>", f);
		}
		fprintf(f, "<td>%.0f</td></tr>\n", r.s[i].v[0]);
		rows++;
	}
	fputs("</table>\n", f);
	if (!rows)
		fputs("<p class=\"note\">No bad checksum from any peer then.</p>\n", f);
	query_result_free(&r);
}

struct drive_find {
	const char *device;
	struct drive_record rec;
	int found;
};

static void drive_seen(const struct drive_record *r, void *arg)
{
	struct drive_find *d = arg;

	if (!d->found && !strcmp(r->device, d->device)) {
		d->rec = *r;
		d->found = 1;
	}
}

struct wear_hist {
	char day[64][16];
	double wear[64];
	int n;
};

static void wear_seen(const char *day, double wear, double bytes, double hours, void *arg)
{
	struct wear_hist *w = arg;

	(void)bytes;
	(void)hours;
	if (wear < 0)
		return;
	if (w->n == 64) {	/* the newest 64 days */
		memmove(w->day, w->day + 1, sizeof(w->day[0]) * 63);
		memmove(w->wear, w->wear + 1, sizeof(w->wear[0]) * 63);
		w->n = 63;
	}
	snprintf(w->day[w->n], sizeof(w->day[0]), "%s", day);
	w->wear[w->n++] = wear;
}

/* The alert's drive: its record as the probe read it, and its wear by day. */
static void drive(struct pages *p, FILE *f, const struct alert *a)
{
	const char *host = a->nhosts ? a->hosts[0] : label_of(a, "host");
	struct drive_find d = { .device = label_of(a, "device") };
	struct wear_hist *w;
	char err[300];

	fputs("<h3>The drive</h3>\n", f);
	if (!host || !d.device) {
		fputs("<p class=\"note\">The alert names no host and device.</p>\n", f);
		return;
	}
	if (drives_load(p->rc, host, drive_seen, &d, err, sizeof(err)) < 0 || !d.found) {
		fputs("<p class=\"note\">No drive record for ", f);
		fputs_xml(d.device, f);
		fputs(" on ", f);
		fputs_xml(host, f);
		fputs(".</p>\n", f);
		return;
	}
	fputs("<table id=\"drive\">\n<tr><th>model</th><td>", f);
	fputs_xml(d.rec.model, f);
	fputs("</td></tr>\n<tr><th>serial</th><td>", f);
	fputs_xml(d.rec.serial, f);
	fputs("</td></tr>\n<tr><th>firmware</th><td>", f);
	fputs_xml(d.rec.firmware, f);
	fprintf(f, "</td></tr>\n<tr><th>SMART</th><td>%s</td></tr>\n", d.rec.smart_passed == 1 ?
		"passed" : d.rec.smart_passed == 0 ? "FAILED" : "unknown");
	for (int i = 0; i < DF_COUNT; i++)
		if (d.rec.f[i].present)
			fprintf(f, "<tr><th>%s</th><td>%.15g</td></tr>\n", drive_field_names[i],
				d.rec.f[i].v);
	fputs("</table>\n", f);
	if (!(w = calloc(1, sizeof(*w))))
		return;
	if (d.rec.serial[0] &&
	    drives_wear_history(p->rc, host, d.rec.serial, wear_seen, w, err, sizeof(err)) > 0 &&
	    w->n) {
		const int W = 600, H = 120, L = 40;

		fprintf(f, "<svg id=\"wear-history\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
			"height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"wear history\">"
			"\n<rect x=\"%d\" y=\"5\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
			"stroke=\"#ccc\"/>\n<text x=\"0\" y=\"15\" font-size=\"11\">100%%</text>"
			"<text x=\"0\" y=\"%d\" font-size=\"11\">0%%</text>\n<polyline class=\"wear\" "
			"fill=\"none\" stroke=\"#d32f2f\" stroke-width=\"2\" points=\"", W, H + 25, W,
			H + 25, L, W - L - 5, H, H + 5);
		for (int i = 0; i < w->n; i++)
			fprintf(f, "%.1f,%.1f ", L + (w->n > 1 ? (double)i * (W - L - 10) /
							(w->n - 1) : 0), 5 + H - w->wear[i] * H / 100);
		fputs("\"/>\n<text x=\"40\" y=\"", f);
		fprintf(f, "%d\" font-size=\"11\">", H + 20);
		fputs_xml(w->day[0], f);
		fprintf(f, "</text><text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">",
			W - 5, H + 20);
		fputs_xml(w->day[w->n - 1], f);
		fprintf(f, "</text></svg>\n<p class=\"note\">Wear used, %d day(s) of history.</p>\n",
			w->n);
	}
	free(w);
}

static void evidence(struct pages *p, FILE *f, const struct alert *a)
{
	const char *host = a->nhosts ? a->hosts[0] : label_of(a, "host");
	uint64_t fired = a->fired_ms ? a->fired_ms : a->starts_ms;
	char t1[40], t2[40], title[300];

	if (a->deploy_service[0]) {
		uint64_t at = a->deploy_at_ms, span = fired > at ? fired - at : 60000;

		fputs("<p>Deploy of <b>", f);
		fputs_xml(a->deploy_service, f);
		fprintf(f, "</b> at %s (baseline from %s).", when(at, t1, sizeof(t1)),
			when(a->deploy_base_ms, t2, sizeof(t2)));
		if (a->has_value)
			fprintf(f, " Verdict value: <b>%g</b>.", a->value);
		fputs("</p>\n", f);
		if (host) {
			snprintf(title, sizeof(title), "%s after the deploy against before it", host);
			flame(p, f, host, at, at + span, at > span ? at - span : 0, at, title);
		}
		return;
	}
	if (!host) {
		fputs("<p class=\"note\">No host to show stacks of.</p>\n", f);
		return;
	}
	if (a->evidence & ALERT_EV_CSUM_PEERS)
		csum_peers(p, f, a);
	if (a->evidence & ALERT_EV_DRIVE)
		drive(p, f, a);
	fputs("<h3>Stacks</h3>\n", f);
	snprintf(title, sizeof(title), "%s, the minutes around its firing", host);
	flame(p, f, host, fired > 60000 ? fired - 60000 : 0, fired + 60000, 0, 0, title);
}

/* ---- the incident page ----------------------------------------------- */

static void alert_page(struct pages *p, const char *fp, struct http_response *resp)
{
	struct alert_index ix = { 0 };
	const struct alert *a = NULL;
	char err[300], t[40], *body = NULL, title[300];
	size_t len = 0;
	struct conn *rc = redis(p, err, sizeof(err));
	const char *v;
	FILE *f;

	if (!rc || alert_index_load(rc, &ix, err, sizeof(err))) {
		if (rc)
			dropped(p);
		alert_index_free(&ix);
		error_page(resp, 503, "Incident", err);
		return;
	}
	for (int i = 0; i < ix.n && !a; i++)
		if (!strcmp(ix.m[i].a.fingerprint, fp))
			a = &ix.m[i].a;
	if (!a) {
		alert_index_free(&ix);
		error_page(resp, 404, "Incident", "No firing alert has this fingerprint: it has "
			   "resolved, or was never taken by an alerter. What fires: /fleet.");
		return;
	}
	if (!(f = open_memstream(&body, &len))) {
		alert_index_free(&ix);
		answer(resp, 500, NULL, 0);
		return;
	}
	snprintf(title, sizeof(title), "%s: %s", label_of(a, "alertname") ?
		 label_of(a, "alertname") : "alert", (domain_of(a, t, sizeof(t)), t));
	head(f, title);
	fputs("<h1 id=\"alertname\">", f);
	fputs_xml(label_of(a, "alertname") ? label_of(a, "alertname") : "alert", f);
	fputs("</h1>\n<p>", f);
	severity(f, a);
	fputs(" firing on <b id=\"domain\">", f);
	domain_of(a, title, sizeof(title));
	fputs_xml(title, f);
	fputs("</b></p>\n", f);
	if ((v = annotation_of(a, "summary"))) {
		fputs("<p id=\"summary\">", f);
		fputs_xml(v, f);
		fputs("</p>\n", f);
	}
	fputs("<table id=\"facts\">\n", f);
	fprintf(f, "<tr><th>began</th><td>%s</td></tr>\n", when(a->starts_ms, t, sizeof(t)));
	fprintf(f, "<tr><th>fired</th><td>%s</td></tr>\n", when(a->fired_ms, t, sizeof(t)));
	if (a->has_value)
		fprintf(f, "<tr><th>value</th><td>%g</td></tr>\n", a->value);
	for (uint32_t i = 0; i < a->nlabels; i++) {
		fputs("<tr><th>", f);
		fputs_xml(a->labels[i].key, f);
		fputs("</th><td>", f);
		fputs_xml(a->labels[i].value, f);
		fputs("</td></tr>\n", f);
	}
	for (uint32_t i = 0; i < a->nannotations; i++) {
		if (!strcmp(a->annotations[i].key, "summary"))
			continue;
		fputs("<tr><th>", f);
		fputs_xml(a->annotations[i].key, f);
		fputs("</th><td>", f);
		fputs_xml(a->annotations[i].value, f);
		fputs("</td></tr>\n", f);
	}
	fputs("<tr><th>fingerprint</th><td>", f);
	fputs_xml(a->fingerprint, f);
	fputs("</td></tr>\n</table>\n", f);
	fputs("<h2>Failure domain</h2>\n", f);
	domain_map(p, f, a);
	fputs("<h2>The series behind it</h2>\n", f);
	if (p->rc)
		series_chart(p, f, a);
	fputs("<h2>Evidence</h2>\n", f);
	if (p->rc)
		evidence(p, f, a);
	fputs("<h2>Runbook</h2>\n", f);
	v = annotation_of(a, "runbook_url");
	if (v || a->runbook[0]) {
		fputs("<p id=\"runbook\"><a href=\"", f);
		fputs_xml(v ? v : a->runbook, f);
		fputs("\">", f);
		fputs_xml(v ? v : a->runbook, f);
		fputs("</a></p>\n", f);
	} else {
		fputs("<p class=\"note\">The rule names no runbook.</p>\n", f);
	}
	tail(f);
	fclose(f);
	alert_index_free(&ix);
	answer(resp, 200, body, len);
}

/* ---- the wear report ------------------------------------------------- */

static void wear_page(struct pages *p, struct http_response *resp)
{
	struct wear_row *rows = NULL;
	size_t n = 0, len = 0;
	char err[300], *body = NULL;
	struct conn *rc = redis(p, err, sizeof(err));
	int64_t today = (int64_t)(time_wall_ns() / NSEC_PER_SEC / 86400);
	FILE *f;

	if (!rc || wear_load(rc, &rows, &n, err, sizeof(err))) {
		if (rc)
			dropped(p);
		error_page(resp, 503, "SSD wear", err);
		return;
	}
	if (!(f = open_memstream(&body, &len))) {
		wear_free(rows, n);
		answer(resp, 500, NULL, 0);
		return;
	}
	for (size_t i = 0; i < n; i++)
		wear_assess(&rows[i], today);
	wear_sort(rows, n);
	wear_print_html(f, rows, n, today);
	fclose(f);
	wear_free(rows, n);
	answer(resp, 200, body, len);
}

void pages_handle(void *arg, const struct http_request *req, struct http_response *resp)
{
	struct pages *p = arg;
	const char *path = req->path;

	if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
		error_page(resp, 405, "Not allowed", "These pages are read with GET.");
		return;
	}
	if (!strcmp(path, "/fleet") || !strcmp(path, "/fleet/"))
		fleet_page(p, resp);
	else if (!strncmp(path, "/alert/", 7) && strlen(path + 7) >= 1 &&
		 strlen(path + 7) < 40 && strspn(path + 7, "0123456789abcdef") == strlen(path + 7))
		alert_page(p, path + 7, resp);
	else if (!strcmp(path, "/wear"))
		wear_page(p, resp);
	else
		error_page(resp, 404, "Not found", "faultline-web has /fleet, /alert/FINGERPRINT "
			   "and /wear, and Prometheus' API under /api/v1/.");
}
