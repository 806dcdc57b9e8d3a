/*
 * payload.c - notification bodies (Alertmanager v4, Slack, PagerDuty
 * Events v2, Alertmanager's /api/v2/alerts) and their signature; see
 * alerter.h.  The evidence inside them is evidence.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/digest.h"
#include "core/jsonc.h"
#include "alerter/alerter.h"
#include "alerter/evidence.h"
#include "core/timeutil.h"

void sign_body(const char *secret, uint64_t ts, const char *idem, const char *body, size_t len,
	       char *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	char tsbuf[160];
	size_t tl = (size_t)snprintf(tsbuf, sizeof(tsbuf), "%llu.%.100s.", (unsigned long long)ts,
				     idem);
	unsigned char *msg = malloc(tl + len + 1);

	strcpy(out, "sha256=");
	if (!msg)
		return;
	memcpy(msg, tsbuf, tl);
	memcpy(msg + tl, body, len);
	HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, tl + len, md, &n);
	free(msg);
	hex_encode(md, n, out + 7);
}

static json_object *labels_json(const struct label *l, int n)
{
	json_object *o = json_object_new_object();

	for (int i = 0; i < n; i++)
		json_object_object_add(o, l[i].key, jsonc_string(l[i].value));
	return o;
}

/* Labels (or annotations) every alert of the group shares. */
static json_object *common(struct group_alert *const *as, int n, int annotations)
{
	json_object *o = json_object_new_object();
	const struct alert *a0 = &as[0]->a;
	uint32_t cnt = annotations ? a0->nannotations : a0->nlabels;
	const struct label *l = annotations ? a0->annotations : a0->labels;

	for (uint32_t i = 0; i < cnt; i++) {
		int all = 1;

		for (int k = 1; k < n && all; k++) {
			const char *v = annotations ? alert_annotation(&as[k]->a, l[i].key)
						    : alert_label(&as[k]->a, l[i].key);

			all = v && !strcmp(v, l[i].value);
		}
		if (all)
			json_object_object_add(o, l[i].key, jsonc_string(l[i].value));
	}
	return o;
}

/* ---- formats ----------------------------------------------------------- */

static json_object *alert_json(const struct alert *a)
{
	json_object *o = json_object_new_object();
	char t[40];

	json_object_object_add(o, "status", jsonc_string(a->firing ? "firing" : "resolved"));
	json_object_object_add(o, "labels", labels_json(a->labels, (int)a->nlabels));
	json_object_object_add(o, "annotations", labels_json(a->annotations, (int)a->nannotations));
	json_object_object_add(o, "startsAt", jsonc_string(alert_format_time(a->starts_ms,
										      t, sizeof(t))));
	json_object_object_add(o, "endsAt", jsonc_string(
		a->firing || !a->ends_ms ? "0001-01-01T00:00:00Z" : alert_format_time(a->ends_ms, t,
										      sizeof(t))));
	json_object_object_add(o, "generatorURL", jsonc_string(a->generator_url));
	json_object_object_add(o, "fingerprint", jsonc_string(a->fingerprint));
	return o;
}

static json_object *faultline_json(const struct alert *a)
{
	json_object *o = json_object_new_object(), *hosts = json_object_new_array();

	json_object_object_add(o, "fingerprint", jsonc_string(a->fingerprint));
	if (a->domain_label[0]) {
		json_object *d = json_object_new_object();

		json_object_object_add(d, "label", jsonc_string(a->domain_label));
		json_object_object_add(d, "value", jsonc_string(a->domain_value));
		if (a->domain_same[0])
			json_object_object_add(d, "same_as", jsonc_string(a->domain_same));
		if (a->has_domain_p)
			json_object_object_add(d, "p", json_object_new_double(a->domain_p));
		json_object_object_add(o, "domain", d);
	}
	for (uint32_t i = 0; i < a->nhosts; i++)
		json_object_array_add(hosts, jsonc_string(a->hosts[i]));
	json_object_object_add(o, "hosts", hosts);
	json_object_object_add(o, "total_hosts", json_object_new_int((int)a->total_hosts));
	if (a->has_value)
		json_object_object_add(o, "value", json_object_new_double(a->value));
	if (a->runbook[0])
		json_object_object_add(o, "runbook", jsonc_string(a->runbook));
	if (a->fired_ms) {
		char t[40];

		json_object_object_add(o, "firedAt", jsonc_string(
					       alert_format_time(a->fired_ms, t, sizeof(t))));
	}
	return o;
}

static json_object *alertmanager_doc(const struct alerter_config *cfg, const struct integration *r,
				     const char *group_key, const struct label *gl, int ngl,
				     struct group_alert *const *as, int n, struct conn *rc)
{
	json_object *doc = json_object_new_object(), *alerts = json_object_new_array();
	json_object *fl = json_object_new_object(), *fla = json_object_new_array();
	json_object *evs = json_object_new_array();
	int firing = 0;

	for (int i = 0; i < n; i++) {
		firing |= as[i]->a.firing;
		json_object_array_add(alerts, alert_json(&as[i]->a));
		json_object_array_add(fla, faultline_json(&as[i]->a));
	}
	json_object_object_add(doc, "version", jsonc_string("4"));
	json_object_object_add(doc, "groupKey", jsonc_string(group_key));
	json_object_object_add(doc, "truncatedAlerts", json_object_new_int(0));
	json_object_object_add(doc, "status", jsonc_string(firing ? "firing" : "resolved"));
	json_object_object_add(doc, "receiver", jsonc_string(r->receiver[0] ? r->receiver : r->name));
	json_object_object_add(doc, "groupLabels", labels_json(gl, ngl));
	json_object_object_add(doc, "commonLabels", common(as, n, 0));
	json_object_object_add(doc, "commonAnnotations", common(as, n, 1));
	json_object_object_add(doc, "externalURL", jsonc_string(cfg->external_url));
	json_object_object_add(doc, "alerts", alerts);
	json_object_object_add(fl, "alerts", fla);
	json_object_object_add(fl, "evidence", evs);
	json_object_object_add(doc, "faultline", fl);
	json_object_object_add(fl, "truncated",
			       json_object_new_boolean(evidence_add(cfg, doc, evs, as, n, rc)));
	return doc;
}

static const char *summary_of(const struct alert *a)
{
	const char *s = alert_annotation(a, "summary");

	return s ? s : alert_label(a, "alertname");
}

/* Append a Slack Block Kit section of mrkdwn text to blocks. */
/*
 * Slack's mrkdwn gives '&', '<' and '>' meaning (<!channel>, <@U123>,
 * <https://x|text>): every outside string is escaped as Slack asks, so a
 * process or label value cannot ping a channel or plant a link.
 */
static void slack_escaped(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '&')
			strbuf_adds(sb, "&amp;");
		else if (*s == '<')
			strbuf_adds(sb, "&lt;");
		else if (*s == '>')
			strbuf_adds(sb, "&gt;");
		else
			strbuf_add(sb, s, 1);
	}
}

static void add_section(json_object *blocks, const char *mrkdwn)
{
	json_object *x = json_object_new_object(), *t = json_object_new_object();

	json_object_object_add(x, "type", jsonc_string("section"));
	json_object_object_add(t, "type", jsonc_string("mrkdwn"));
	json_object_object_add(t, "text", jsonc_string(mrkdwn));
	json_object_object_add(x, "text", t);
	json_object_array_add(blocks, x);
}

static json_object *slack_doc(const struct alerter_config *cfg, const struct integration *r,
			      const char *group_key, const struct label *gl, int ngl,
			      struct group_alert *const *as, int n, struct conn *rc)
{
	json_object *am = alertmanager_doc(cfg, r, group_key, gl, ngl, as, n, rc);
	json_object *doc = json_object_new_object(), *blocks = json_object_new_array(), *x;
	struct strbuf sb = STRBUF_INIT;
	int nfiring = 0;

	for (int i = 0; i < n; i++)
		nfiring += as[i]->a.firing;
	strbuf_addf(&sb, "[%s] ", nfiring ? "FIRING:" : "RESOLVED");
	slack_escaped(&sb, alert_label(&as[0]->a, "alertname"));
	if (nfiring)
		strbuf_addf(&sb, " (%d)", nfiring);
	json_object_object_add(doc, "text", jsonc_string(strbuf_str(&sb)));
	if (r->channel[0])
		json_object_object_add(doc, "channel", jsonc_string(r->channel));
	if (r->username[0])
		json_object_object_add(doc, "username", jsonc_string(r->username));
	x = json_object_new_object();
	json_object_object_add(x, "type", jsonc_string("header"));
	json_object *t = json_object_new_object();

	json_object_object_add(t, "type", jsonc_string("plain_text"));
	json_object_object_add(t, "text", jsonc_string(strbuf_str(&sb)));
	json_object_object_add(x, "text", t);
	json_object_array_add(blocks, x);
	for (int i = 0; i < n && i < 10; i++) {
		const struct alert *a = &as[i]->a;

		strbuf_reset(&sb);
		strbuf_addf(&sb, "*%s* ", a->firing ? "firing" : "resolved");
		slack_escaped(&sb, summary_of(a));
		if (a->domain_label[0]) {
			strbuf_adds(&sb, "\n");
			slack_escaped(&sb, a->domain_label);
			strbuf_adds(&sb, " `");
			slack_escaped(&sb, a->domain_value);
			strbuf_adds(&sb, "`");
			if (a->domain_same[0]) {
				strbuf_adds(&sb, " (the same hosts as ");
				slack_escaped(&sb, a->domain_same);
				strbuf_adds(&sb, ")");
			}
			strbuf_addf(&sb, ": %u of %u hosts", a->nhosts, a->total_hosts);
		}
		if (a->runbook[0]) {
			strbuf_adds(&sb, "\nrunbook: ");
			slack_escaped(&sb, a->runbook);
		}
		add_section(blocks, strbuf_str(&sb));
	}
	/* the top stacks of the first alert with CPU evidence, as a code block */
	json_object *fl, *evs;

	if (json_object_object_get_ex(am, "faultline", &fl) &&
	    json_object_object_get_ex(fl, "evidence", &evs) && json_object_array_length(evs)) {
		json_object *cpu, *stacks;

		json_object *missing;

		if (json_object_object_get_ex(json_object_array_get_idx(evs, 0), "cpu", &cpu) &&
		    json_object_object_get_ex(cpu, "missing", &missing)) {
			strbuf_reset(&sb);
			strbuf_adds(&sb, "CPU evidence: ");
			slack_escaped(&sb, json_object_get_string(missing));
			add_section(blocks, strbuf_str(&sb));
		} else if (cpu && json_object_object_get_ex(cpu, "top_stacks", &stacks)) {
			json_object *sc;

			strbuf_reset(&sb);
			strbuf_adds(&sb, "Top CPU stacks");
			if (json_object_object_get_ex(cpu, "scope", &sc)) {
				strbuf_adds(&sb, " (");
				slack_escaped(&sb, json_object_get_string(sc));
				strbuf_adds(&sb, ")");
			}
			strbuf_adds(&sb, ":\n```");
			for (size_t i = 0; i < json_object_array_length(stacks) && i < 5; i++) {
				json_object *s = json_object_array_get_idx(stacks, i), *v, *sh;
				char line[256];

				json_object_object_get_ex(s, "stack", &v);
				json_object_object_get_ex(s, "share", &sh);
				/* inside ``` too: Slack still reads <!channel> there */
				snprintf(line, sizeof(line), "%.200s", json_object_get_string(v));
				strbuf_addf(&sb, "%5.1f%% ", 100 * json_object_get_double(sh));
				slack_escaped(&sb, line);
				strbuf_adds(&sb, "\n");
			}
			strbuf_adds(&sb, "```");
			add_section(blocks, strbuf_str(&sb));
		}
	}
	json_object_object_add(doc, "blocks", blocks);
	strbuf_release(&sb);
	json_object_put(am);
	return doc;
}

static json_object *pagerduty_doc(const struct alerter_config *cfg, const struct integration *r,
				  const char *group_key, const struct label *gl, int ngl,
				  struct group_alert *const *as, int n, struct conn *rc)
{
	json_object *am = alertmanager_doc(cfg, r, group_key, gl, ngl, as, n, rc);
	json_object *doc = json_object_new_object(), *pl = json_object_new_object(), *fl;
	const struct alert *a0 = &as[0]->a;
	const char *sev = alert_label(a0, "severity");
	char dedup[65], t[40];
	int firing = 0;

	for (int i = 0; i < n; i++)
		firing |= as[i]->a.firing;
	sha256_hex(group_key, strlen(group_key), dedup);
	json_object_object_add(doc, "routing_key", jsonc_string(r->routing_key));
	json_object_object_add(doc, "event_action", jsonc_string(firing ? "trigger"
										  : "resolve"));
	json_object_object_add(doc, "dedup_key", jsonc_string(dedup));
	json_object_object_add(pl, "summary", jsonc_string(summary_of(a0)));
	json_object_object_add(pl, "source", jsonc_string(
		a0->domain_value[0] ? a0->domain_value :
		alert_label(a0, "host") ? alert_label(a0, "host") : "faultline"));
	json_object_object_add(pl, "severity", jsonc_string(
		!sev ? "error" : !strcmp(sev, "page") || !strcmp(sev, "critical") ? "critical" :
		!strcmp(sev, "warning") ? "warning" : !strcmp(sev, "info") ? "info" : "error"));
	json_object_object_add(pl, "timestamp", jsonc_string(
		alert_format_time(a0->starts_ms, t, sizeof(t))));
	json_object_object_add(pl, "component", jsonc_string(alert_label(a0, "alertname")));
	if (json_object_object_get_ex(am, "faultline", &fl))
		json_object_object_add(pl, "custom_details", json_object_get(fl));
	json_object_object_add(doc, "payload", pl);
	if (a0->runbook[0]) {
		json_object *links = json_object_new_array(), *l = json_object_new_object();

		json_object_object_add(l, "href", jsonc_string(a0->runbook));
		json_object_object_add(l, "text", jsonc_string("runbook"));
		json_object_array_add(links, l);
		json_object_object_add(doc, "links", links);
	}
	json_object_put(am);
	return doc;
}

/*
 * Alertmanager's API (POST /api/v2/alerts): the alerts as Prometheus sends
 * them — labels, annotations (plus runbook_url and the affected hosts),
 * startsAt, endsAt (firing: now + 4 x resend_interval, so an alerter that
 * stops resending lets them expire; resolved: when it resolved),
 * generatorURL.  Alertmanager does its own grouping, silencing and routing.
 */
static json_object *alertmanager_api_doc(const struct integration *r, struct group_alert *const *as,
					 int n)
{
	json_object *arr = json_object_new_array();
	uint64_t now = time_wall_ns() / NSEC_PER_MSEC;
	char t[40];

	for (int i = 0; i < n; i++) {
		const struct alert *a = &as[i]->a;
		json_object *o = json_object_new_object(), *ann;
		uint64_t ends = a->firing ? now + 4 * (r->resend_interval_ns / NSEC_PER_MSEC) :
				a->ends_ms;

		json_object_object_add(o, "labels", labels_json(a->labels, (int)a->nlabels));
		ann = labels_json(a->annotations, (int)a->nannotations);
		if (a->runbook[0] && !alert_annotation(a, "runbook_url"))
			json_object_object_add(ann, "runbook_url", jsonc_string(a->runbook));
		if (a->nhosts > 1) {
			struct strbuf sb = STRBUF_INIT;

			for (uint32_t k = 0; k < a->nhosts && sb.len < 900; k++)
				strbuf_addf(&sb, "%s%s", k ? "," : "", a->hosts[k]);
			strbuf_addf(&sb, " (%u of %u hosts)", a->nhosts, a->total_hosts);
			json_object_object_add(ann, "faultline_hosts",
					       jsonc_string(strbuf_str(&sb)));
			strbuf_release(&sb);
		}
		json_object_object_add(o, "annotations", ann);
		json_object_object_add(o, "startsAt", jsonc_string(
					       alert_format_time(a->starts_ms, t, sizeof(t))));
		json_object_object_add(o, "endsAt", jsonc_string(
					       alert_format_time(ends, t, sizeof(t))));
		json_object_object_add(o, "generatorURL", jsonc_string(a->generator_url));
		json_object_array_add(arr, o);
	}
	return arr;
}

int payload_build(const struct alerter_config *cfg, const struct integration *r,
		  const char *group_key, const struct label *gl, int ngl,
		  struct group_alert *const *as, int n, struct conn *rc, struct strbuf *out)
{
	json_object *doc;

	switch (r->format) {
	case FMT_SLACK:
		doc = slack_doc(cfg, r, group_key, gl, ngl, as, n, rc);
		break;
	case FMT_PAGERDUTY:
		doc = pagerduty_doc(cfg, r, group_key, gl, ngl, as, n, rc);
		break;
	case FMT_ALERTMANAGER_API:
		doc = alertmanager_api_doc(r, as, n);
		break;
	default:
		doc = alertmanager_doc(cfg, r, group_key, gl, ngl, as, n, rc);
		break;
	}
	if (!doc)
		return -1;
	strbuf_adds(out, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
	return strbuf_failed(out) ? -1 : 0;
}
