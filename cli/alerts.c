/*
 * alerts.c - `faultline alerts`: what fires across the fleet, by failure
 * domain (widest first: site, switch, row, rack, other labels, host), with
 * what mutes each alert (a silence, an inhibiting alert) and where it
 * goes.  Read from Redis as the alerters took the alerts (store/
 * alert_index.h) and worked out with the alerter's config as its API does
 * (alerter/alert_view.h), so it answers what `amtool alert query` asks an
 * alerter, without one.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/alert_view.h"
#include "alerter/alerter.h"
#include "cli/cli.h"
#include "core/config.h"
#include "core/jsonc.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "store/alert_index.h"
#include "store/conn.h"
#include "store/silence.h"

static void alerts_usage(FILE *out)
{
	fprintf(out,
"Usage: faultline alerts [MATCHER...] [--active] [--json] [--config FILE] [--redis URL]\n\n"
"What fires across the fleet, by failure domain, widest first (site, switch,\n"
"row, rack, any other label, host): the domain, the alert, its severity, since\n"
"when, how many hosts it covers, and its state -- active, or suppressed with\n"
"the silence or the inhibiting alert that mutes it -- and its receivers.  The\n"
"alerts are the fleet's as the alerters took them ({fl:alerts}:active); the\n"
"state is worked out with the alerter's config as its API does.\n\n"
"  MATCHER         only alerts matching every matcher (Alertmanager's syntax:\n"
"                  rack=~\"r1.*\", severity!=info)\n"
"  --active        only the alerts nothing mutes (what pages now)\n"
"  --json          Alertmanager's API v2 shape (GET /api/v2/alerts), with the\n"
"                  domain as faultline.domain\n"
"  --config FILE   the alerter's config (default: /etc/faultline/alerter.yaml,\n"
"                  else the built-in one)\n"
"  --redis URL     default unix:///run/faultline/redis.sock, or the config's\n");
}

/* The domain an alert is about, for sorting and showing ("rack=r1", "host=h1", "fleet"). */
static void domain_of(const struct alert *a, char *out, size_t len, int *rank)
{
	/* widest first; an event without a rolled-up domain is about its narrowest label */
	static const char *const order[] = { "site", "switch", "row", "rack", "", "host" };

	if (a->domain_label[0]) {
		snprintf(out, len, "%s=%s", a->domain_label, a->domain_value);
		*rank = 4;	/* another label: between the rack and the host */
		for (int i = 0; i < 6; i++)
			if (!strcmp(a->domain_label, order[i]))
				*rank = i;
		return;
	}
	for (int i = 5; i >= 0; i--) {
		const char *v = order[i][0] ? alert_label(a, order[i]) : NULL;

		if (v) {
			snprintf(out, len, "%s=%s", order[i], v);
			*rank = i;
			return;
		}
	}
	snprintf(out, len, "fleet");
	*rank = -1;
}

struct row {
	struct alert_view v;
	char domain[200];
	int rank;
};

static int by_domain(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	int c;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if ((c = strcmp(a->domain, b->domain)))
		return c;
	if ((c = strcmp(alert_label(a->v.a, "alertname"), alert_label(b->v.a, "alertname"))))
		return c;
	return strcmp(a->v.a->fingerprint, b->v.a->fingerprint);
}

static const char *lv(const struct alert *a, const char *name)
{
	const char *v = alert_label(a, name);

	return v ? v : "";
}

static void print_table(struct row *rows, int n, const struct alert_index *ix)
{
	struct strbuf state = STRBUF_INIT;

	printf("%-22s %-24s %-9s %-20s %-7s %s\n", "DOMAIN", "ALERT", "SEVERITY", "SINCE",
	       "HOSTS", "STATE / RECEIVERS");
	for (int i = 0; i < n; i++) {
		const struct alert_view *v = &rows[i].v;
		char since[40], hosts[24] = "-";

		strbuf_reset(&state);
		alert_format_time(v->a->starts_ms, since, sizeof(since));
		since[19] = 'Z';
		since[20] = '\0';
		if (v->a->total_hosts)
			snprintf(hosts, sizeof(hosts), "%u/%u", v->a->nhosts, v->a->total_hosts);
		else if (v->a->nhosts)
			snprintf(hosts, sizeof(hosts), "%u", v->a->nhosts);
		if (v->inhibited_by) {
			const char *by = "";

			for (int k = 0; k < ix->n; k++)
				if (!strcmp(ix->m[k].a.fingerprint, v->inhibited_by))
					by = lv(&ix->m[k].a, "alertname");
			strbuf_addf(&state, "inhibited by %s %s", by, v->inhibited_by);
		}
		for (int k = 0; k < v->nsil; k++)
			if (alert_view_silenced_by(v, k))
				strbuf_addf(&state, "%ssilenced by %s", state.len ? ", " : "",
					    v->sil[k].id);
		if (!state.len)
			strbuf_adds(&state, "active");
		for (int k = 0; k < v->nreceivers; k++)
			strbuf_addf(&state, "%s%s", k ? "," : " -> ", v->receivers[k]);
		if (!v->nreceivers)
			strbuf_adds(&state, " -> no route");
		printf("%-22s %-24s %-9s %-20s %-7s %s\n", rows[i].domain, lv(v->a, "alertname"),
		       lv(v->a, "severity")[0] ? lv(v->a, "severity") : "-", since, hosts,
		       strbuf_str(&state));
	}
	strbuf_release(&state);
	printf("%d firing alert(s)\n", n);
}

int cmd_alerts(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "active", no_argument, NULL, 'A' },
		{ "json", no_argument, NULL, 'j' },
		{ "config", required_argument, NULL, 'c' },
		{ "redis", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *url = NULL;
	struct matcher m[32];
	int nm = 0, only_active = 0, json = 0, opt, nsil, ret = 1, nrows = 0;
	struct alerter_config cfg;
	struct alert_index ix;
	struct silence *sil = NULL;
	struct row *rows = NULL;
	struct conn *rc = NULL;
	char err[1024], path[600];
	uint64_t now_ms = time_wall_ns() / NSEC_PER_MSEC;

	if (help_asked(argc, argv)) {
		alerts_usage(stdout);
		return 0;
	}
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'A': only_active = 1; break;
		case 'j': json = 1; break;
		case 'c': config = optarg; break;
		case 'r': url = optarg; break;
		default:
			alerts_usage(stderr);
			return 2;
		}
	}
	for (int i = optind; i < argc; i++) {
		int got = matchers_parse(m + nm, 32 - nm, argv[i], err, sizeof(err));

		if (got < 0) {
			fprintf(stderr, "faultline alerts: %s\n", err);
			for (int k = 0; k < nm; k++)
				matcher_free(&m[k]);
			return 2;
		}
		nm += got;
	}
	if (!config)
		config = cfg_find("alerter.yaml", 0, path, sizeof(path));
	if (config ? alerter_config_load(&cfg, config, err, sizeof(err))
		   : alerter_config_parse(&cfg, "<built-in etc/alerter.yaml>",
					  alerter_default_config, strlen(alerter_default_config),
					  err, sizeof(err))) {
		fprintf(stderr, "faultline alerts: %s\n", err);
		alerter_config_free(&cfg);
		goto out_m;
	}
	if (!url)
		url = config ? cfg.redis_url : "unix:///run/faultline/redis.sock";
	rc = conn_open(url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!rc) {
		fprintf(stderr, "faultline alerts: Redis %s: %s\n", url, err);
		goto out_cfg;
	}
	if (alert_index_load(rc, &ix, err, sizeof(err))) {
		fprintf(stderr, "faultline alerts: reading the fleet's alerts: %s\n", err);
		goto out_conn;
	}
	if (ix.bad)
		fprintf(stderr, "faultline alerts: %d record(s) of the wrong shape skipped%s%s\n",
			ix.bad, err[0] ? ": " : "", err);
	nsil = silence_load(rc, &sil, err, sizeof(err));
	if (nsil < 0) {
		fprintf(stderr, "faultline alerts: reading the silences: %s\n", err);
		goto out_ix;
	}
	rows = calloc((size_t)ix.n + 1, sizeof(*rows));
	if (!rows)
		goto out_sil;
	for (int i = 0; i < ix.n; i++) {
		struct row *r = &rows[nrows];
		int keep = 1;

		for (int k = 0; k < nm && keep; k++)
			keep = matcher_match(&m[k], &ix.m[i].a);
		if (!keep)
			continue;
		alert_view_of(&cfg, &ix, sil, nsil, now_ms, &ix.m[i], &r->v);
		if (only_active && (r->v.nsilenced || r->v.inhibited_by))
			continue;
		domain_of(&ix.m[i].a, r->domain, sizeof(r->domain), &r->rank);
		nrows++;
	}
	qsort(rows, (size_t)nrows, sizeof(*rows), by_domain);
	if (json) {
		json_object *out = json_object_new_array();

		for (int i = 0; i < nrows; i++) {
			json_object *o = alert_view_json(&rows[i].v), *fl = json_object_new_object();

			jsonc_put(fl, "domain", jsonc_string(rows[i].domain));
			jsonc_put(o, "faultline", fl);
			json_object_array_add(out, o);
		}
		puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PRETTY |
						    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(out);
	} else {
		print_table(rows, nrows, &ix);
	}
	ret = 0;
	free(rows);
out_sil:
	silence_free_all(sil, nsil);
out_ix:
	alert_index_free(&ix);
out_conn:
	conn_close(rc);
out_cfg:
	alerter_config_free(&cfg);
out_m:
	for (int k = 0; k < nm; k++)
		matcher_free(&m[k]);
	return ret;
}
