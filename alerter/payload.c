/*
 * payload.c - notification bodies (Alertmanager v4, Slack, PagerDuty
 * Events v2) with faultline's evidence, signing and hashing helpers; see
 * alerter.h.
 *
 * Evidence is read from Redis at send time: the affected hosts' profile
 * windows over the alert's window merged into their top stacks and
 * hottest services (and, for a post-deploy alert, the functions whose CPU
 * share grew since the deploy), the drive record of a drive alert, the top
 * bad-checksum peers of a checksum alert.  It is added piece by piece
 * while the body stays under max_payload_bytes; whatever does not fit is
 * left out and "truncated" says so.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>

#include <json-c/json.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/jsonc.h"
#include "alerter/alerter.h"
#include "model/profile.h"
#include "store/profile_store.h"
#include "model/snapshot.h"
#include "store/drives.h"
#include "store/store.h"
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
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

/*
 * The host is taken by libcurl's own URL parser, the one that will make the
 * request: "http://127.0.0.1@example.com/" names example.com (127.0.0.1 is
 * a user name), and "http://127.0.0.1.example.com/" is not loopback either.
 */
int url_is_loopback(const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL;
	struct in_addr a4;
	int yes = 0;

	if (!u)
		return 0;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host) {
		if (!strcasecmp(host, "localhost") || !strcmp(host, "[::1]"))
			yes = 1;
		else if (inet_pton(AF_INET, host, &a4) == 1)
			yes = (ntohl(a4.s_addr) >> 24) == 127;
	}
	curl_free(host);
	curl_url_cleanup(u);
	return yes;
}

int url_host_port(const char *url, char *host, size_t hostlen)
{
	CURLU *u = curl_url();
	char *h = NULL, *p = NULL;
	int port = -1;

	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &h, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    strlen(h) < hostlen) {
		snprintf(host, hostlen, "%s", h);
		port = atoi(p);
	}
	curl_free(h);
	curl_free(p);
	curl_url_cleanup(u);
	return port;
}

int url_with_host(const char *url, const char *host, char *out, size_t outlen)
{
	CURLU *u = curl_url();
	char *s = NULL;
	int ret = -1;

	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK && strlen(s) < outlen) {
		snprintf(out, outlen, "%s", s);
		ret = 0;
	}
	curl_free(s);
	curl_url_cleanup(u);
	return ret;
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

/* ---- evidence ---------------------------------------------------------- */

/*
 * The hosts' profile windows of a kind (enum profile_kind) over [from, to],
 * the rows in scope (NULL: all), into p.
 */
static size_t load_kind(struct conn *rc, int kind, char **hosts, uint32_t nhosts, uint64_t from,
			uint64_t to, const struct profile_scope *scope, struct profile *p)
{
	char err[128];
	size_t windows = 0;

	profile_init(p, "");
	for (uint32_t i = 0; i < nhosts; i++) {
		int n = profile_read_merge(rc, hosts[i], kind, from, to, scope, p, NULL, err,
					   sizeof(err));

		if (n > 0)
			windows += (size_t)n;
	}
	return windows;
}

/* The hosts an alert is about: its hosts, else its host label (*single holds it). */
static char **alert_hosts(const struct alert *a, char **single, uint32_t *n)
{
	*n = a->nhosts;
	if (!*n && alert_label(a, "host")) {
		single[0] = (char *)alert_label(a, "host");
		*n = 1;
		return single;
	}
	return a->hosts;
}

/* load_kind of CPU profile windows. */
static size_t load_profiles(struct conn *rc, char **hosts, uint32_t nhosts, uint64_t from,
			    uint64_t to, const struct profile_scope *scope, struct profile *p)
{
	return load_kind(rc, PROFILE_CPU, hosts, nhosts, from, to, scope, p);
}

static int row_cmp(const void *a, const void *b)
{
	const struct profile_row *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static json_object *stacks_json(struct profile *p, uint32_t top)
{
	json_object *arr = json_object_new_array();
	struct strbuf sb = STRBUF_INIT;

	qsort(p->rows, p->nrows, sizeof(*p->rows), row_cmp);
	for (uint32_t r = 0; r < p->nrows && r < top; r++) {
		const uint32_t *st = p->stacks[p->rows[r].stack];
		json_object *o = json_object_new_object();

		strbuf_reset(&sb);
		strbuf_adds(&sb, p->strings[p->rows[r].comm]);
		for (uint32_t i = 0; i < st[0]; i++) {
			strbuf_adds(&sb, ";");
			strbuf_adds(&sb, p->strings[st[1 + i]]);
		}
		json_object_object_add(o, "stack", jsonc_string(strbuf_str(&sb)));
		json_object_object_add(o, "service",
				       jsonc_string(p->strings[p->rows[r].service]));
		if (p->rows[r].cgroup)
			json_object_object_add(o, "cgroup",
					       jsonc_string(p->strings[p->rows[r].cgroup]));
		json_object_object_add(o, "samples", json_object_new_int64((int64_t)p->rows[r].count));
		json_object_object_add(o, "share",
				       json_object_new_double((double)p->rows[r].count / (double)p->total));
		json_object_array_add(arr, o);
	}
	strbuf_release(&sb);
	return arr;
}

static json_object *services_json(const struct profile *p)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	uint64_t *per = calloc(p->nstrings + 1, sizeof(*per));

	for (uint32_t r = 0; per && r < p->nrows; r++)
		per[p->rows[r].service] += p->rows[r].count;
	for (int k = 0; per && k < 5; k++) {
		uint32_t best = 0;

		for (uint32_t i = 1; i < p->nstrings; i++)
			if (per[i] > per[best])
				best = i;
		if (!per[best])
			break;
		json_object *s = json_object_new_object();

		json_object_object_add(s, "service", jsonc_string(p->strings[best]));
		json_object_object_add(s, "share", json_object_new_double((double)per[best] /
									  (double)p->total));
		json_object_array_add(arr, s);
		per[best] = 0;
	}
	free(per);
	json_object_put(o);
	return arr;
}

/*
 * What a's CPU evidence is about, from its own labels: a `cgroup` label
 * scopes it to that cgroup (and those below it), else a `service` label
 * (a deploy's) to that service's processes, else it is the hosts' whole
 * CPU.  Its name for people into what ("cgroup /x").
 */
static const struct profile_scope *evidence_scope(const struct alert *a, struct profile_scope *s,
						  char *what, size_t len)
{
	memset(s, 0, sizeof(*s));
	if ((s->cgroup = alert_label(a, "cgroup")) && s->cgroup[0]) {
		snprintf(what, len, "cgroup %s", s->cgroup);
		return s;
	}
	s->cgroup = NULL;
	if ((s->service = alert_label(a, "service")) && s->service[0]) {
		snprintf(what, len, "service %s", s->service);
		return s;
	}
	snprintf(what, len, "the whole CPU of the affected hosts");
	return NULL;
}

/* The time an alert's profile evidence covers: evidence.window up to now. */
struct evidence_span {
	uint64_t from, to;		/* ms */
	char t0[40], t1[40];		/* the same, as RFC 3339 */
};

/* A new evidence object for a, its "window" set from *sp (filled in). */
static json_object *evidence_begin(const struct alerter_config *cfg, const struct alert *a,
				   struct evidence_span *sp)
{
	json_object *o = json_object_new_object(), *w = json_object_new_object();

	sp->to = time_wall_ns() / NSEC_PER_MSEC;
	sp->from = (a->starts_ms ? a->starts_ms : sp->to) - cfg->evidence_window_ns / NSEC_PER_MSEC;
	json_object_object_add(w, "from", jsonc_string(alert_format_time(sp->from, sp->t0,
									sizeof(sp->t0))));
	json_object_object_add(w, "to", jsonc_string(alert_format_time(sp->to, sp->t1,
								      sizeof(sp->t1))));
	json_object_object_add(o, "window", w);
	return o;
}

/* CPU evidence for the affected hosts of a, scoped by evidence_scope. */
static json_object *cpu_evidence(const struct alerter_config *cfg, const struct alert *a,
				 struct conn *rc)
{
	char *single[1], what[300], why[700];
	uint32_t nhosts;
	char **hosts = alert_hosts(a, single, &nhosts);
	struct evidence_span sp;
	json_object *o = evidence_begin(cfg, a, &sp);
	uint64_t from = sp.from, now = sp.to;
	const char *t0 = sp.t0, *t1 = sp.t1;
	struct profile_scope sc;
	const struct profile_scope *scope = evidence_scope(a, &sc, what, sizeof(what));
	struct profile p;
	size_t windows;

	json_object_object_add(o, "scope", jsonc_string(what));
	if (!nhosts) {
		json_object_object_add(o, "missing", jsonc_string("the alert names no hosts"));
		return o;
	}
	windows = load_profiles(rc, hosts, nhosts, from, now, scope, &p);
	if (!p.total) {
		struct profile all;

		/* said, never replaced by the hosts' whole CPU: that is not what paged */
		load_profiles(rc, hosts, nhosts, from, now, NULL, &all);
		if (scope && all.total)
			snprintf(why, sizeof(why), "no CPU samples of %s on the affected hosts from "
				 "%s to %s (%llu samples of other processes there)", what, t0, t1,
				 (unsigned long long)all.total);
		else
			snprintf(why, sizeof(why), "no CPU profile windows for the affected hosts "
				 "from %s to %s (is the probe's profiler on?)", t0, t1);
		json_object_object_add(o, "missing", jsonc_string(why));
		profile_free(&all);
		profile_free(&p);
		return o;
	}
	json_object_object_add(o, "windows", json_object_new_int64((int64_t)windows));
	json_object_object_add(o, "samples", json_object_new_int64((int64_t)p.total));
	json_object_object_add(o, "top_stacks", stacks_json(&p, cfg->top_stacks));
	json_object_object_add(o, "top_services", services_json(&p));
	if (a->deploy_at_ms && a->deploy_base_ms && a->deploy_base_ms < a->deploy_at_ms) {
		struct profile base;
		struct profile_delta *d;
		size_t nd;
		json_object *grew = json_object_new_array();

		load_profiles(rc, hosts, nhosts, a->deploy_base_ms, a->deploy_at_ms, scope, &base);
		nd = profile_diff(&base, &p, &d);
		for (size_t i = 0, shown = 0; i < nd && shown < 5; i++) {
			if (d[i].target <= d[i].base)
				continue;
			json_object *f = json_object_new_object();

			json_object_object_add(f, "function", jsonc_string(d[i].name));
			json_object_object_add(f, "share_before", json_object_new_double(d[i].base));
			json_object_object_add(f, "share_after", json_object_new_double(d[i].target));
			/* its own time: a caller's total moves with its callee's, not this */
			json_object_object_add(f, "self_before", json_object_new_double(d[i].self_base));
			json_object_object_add(f, "self_after", json_object_new_double(d[i].self_target));
			json_object_array_add(grew, f);
			shown++;
		}
		json_object_object_add(o, "grew_since_deploy", grew);
		free(d);
		profile_free(&base);
	}
	profile_free(&p);
	return o;
}

/*
 * I/O evidence for a's device: which processes issue its I/O, through which
 * path (the probe's sampled block requests, fl:{H}:io10), and where they
 * then wait (fl:{H}:iowait10), on the affected hosts over the alert's
 * window.  Never another device's, nor the CPU's.
 */
static json_object *io_evidence(const struct alerter_config *cfg, const struct alert *a,
				struct conn *rc)
{
	const char *device = alert_label(a, "device");
	char *single[1], root[160], what[200], why[600];
	struct evidence_span sp;
	json_object *o = evidence_begin(cfg, a, &sp);
	uint64_t from = sp.from, now = sp.to;
	const char *t0 = sp.t0, *t1 = sp.t1;
	struct profile_scope scope = { 0 };
	struct profile io, wait;
	uint32_t nhosts;
	char **hosts = alert_hosts(a, single, &nhosts);

	if (!device || !device[0] || !nhosts) {
		json_object_object_add(o, "missing", jsonc_string(
			!nhosts ? "the alert names no hosts" : "the alert has no device label: I/O "
			"stacks are per device"));
		return o;
	}
	snprintf(root, sizeof(root), "[%s ", device);
	snprintf(what, sizeof(what), "device %s", device);
	json_object_object_add(o, "scope", jsonc_string(what));
	scope.root = root;
	load_kind(rc, PROFILE_IO, hosts, nhosts, from, now, &scope, &io);
	load_kind(rc, PROFILE_IO_WAIT, hosts, nhosts, from, now, &scope, &wait);
	if (!io.total) {
		snprintf(why, sizeof(why), "no sampled I/O to %s on the affected hosts from %s to %s "
			 "(is the probe's profile.io_interval on?)", device, t0, t1);
		json_object_object_add(o, "missing", jsonc_string(why));
	} else {
		json_object_object_add(o, "sampled_requests", json_object_new_int64((int64_t)io.total));
		/* each stack's share of the device's sampled requests */
		json_object_object_add(o, "writers", stacks_json(&io, cfg->top_stacks));
		json_object_object_add(o, "top_services", services_json(&io));
	}
	if (wait.total) {
		json_object_object_add(o, "waited_us", json_object_new_int64((int64_t)wait.total));
		/* where they wait: each stack's share of the time its submitters waited */
		json_object_object_add(o, "waits", stacks_json(&wait, cfg->top_stacks));
	}
	profile_free(&io);
	profile_free(&wait);
	return o;
}

static json_object *drive_evidence(const struct alert *a, struct conn *rc)
{
	const char *host = a->nhosts ? a->hosts[0] : alert_label(a, "host");
	const char *dev = alert_label(a, "device");
	char *json;
	json_object *o = NULL;

	if (!host || !dev)
		return jsonc_string("the alert names no host and device");
	if ((json = drives_get_json(rc, host, dev))) {
		char why[160];

		o = jsonc_parse(json, strlen(json), why, sizeof(why));
	}
	free(json);
	return o ? o : jsonc_string("no drive record for that device");
}

struct peers_arg {
	json_object *arr;
};

static int peers_cb(struct snapshot *s, void *arg)
{
	struct peers_arg *pa = arg;

	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct series *ser = &s->series[i];
		json_object *o;

		if (strcmp(ser->name, "tcp.bad_csum") || !ser->counter.value)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "host", jsonc_string(s->host));
		json_object_object_add(o, "peer", jsonc_string(series_label(ser, "peer") ?: ""));
		json_object_object_add(o, "interface",
				       jsonc_string(series_label(ser, "interface") ?: ""));
		json_object_object_add(o, "bad_checksums",
				       json_object_new_int64((int64_t)ser->counter.value));
		json_object_array_add(pa->arr, o);
	}
	return 0;
}

static json_object *csum_evidence(const struct alert *a, struct conn *rc)
{
	struct peers_arg pa = { json_object_new_array() };
	char err[128];

	for (uint32_t i = 0; i < a->nhosts && i < 32; i++)
		store_read_latest(rc, a->hosts[i], 1, 1, peers_cb, &pa, NULL, err, sizeof(err));
	if (!a->nhosts && alert_label(a, "host"))
		store_read_latest(rc, alert_label(a, "host"), 1, 1, peers_cb, &pa, NULL, err,
				  sizeof(err));
	return pa.arr;
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

/* Add evidence for each alert to fl (an array), while the document stays small. */
static int add_evidence(const struct alerter_config *cfg, json_object *doc, json_object *evs,
			struct group_alert *const *as, int n, struct conn *rc)
{
	int truncated = 0;

	for (int i = 0; i < n && rc; i++) {
		const struct alert *a = &as[i]->a;
		json_object *e;

		if (!a->firing || !a->evidence)
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "fingerprint", jsonc_string(a->fingerprint));
		if (a->evidence & ALERT_EV_CPU_STACKS)
			json_object_object_add(e, "cpu", cpu_evidence(cfg, a, rc));
		if (a->evidence & ALERT_EV_DRIVE)
			json_object_object_add(e, "drive", drive_evidence(a, rc));
		if (a->evidence & ALERT_EV_CSUM_PEERS)
			json_object_object_add(e, "checksum_peers", csum_evidence(a, rc));
		if (a->evidence & ALERT_EV_IO_STACKS)
			json_object_object_add(e, "io", io_evidence(cfg, a, rc));
		json_object_array_add(evs, e);
		if (strlen(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN)) >
		    cfg->max_payload_bytes) {
			json_object_array_del_idx(evs, json_object_array_length(evs) - 1, 1);
			truncated = 1;
		}
	}
	return truncated;
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
			       json_object_new_boolean(add_evidence(cfg, doc, evs, as, n, rc)));
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
