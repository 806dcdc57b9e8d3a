/*
 * config.c - etc/alerter.yaml; see alerter.h.  Errors name file, line,
 * column and key, like every faultline config.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "alerter/alerter.h"
#include "core/backoff.h"
#include "core/config.h"
#include "core/config_schema.h"
#include "core/secret.h"
#include "core/timeutil.h"


static int copy_str(const struct cfg *c, const struct cfg_node *map, const char *key, char *dst,
		    size_t len, char *err, size_t errlen)
{
	char *v = NULL;
	int ret = cfg_string(c, map, key, &v, err, errlen);

	if (ret || !v)
		return ret;
	if (strlen(v) >= len) {
		ret = cfg_error(c, cfg_get(map, key), err, errlen, "%s: longer than %zu characters",
				key, len - 1);
		free(v);
		return ret;
	}
	snprintf(dst, len, "%s", v);
	free(v);
	return 0;
}

/* RFC 9110 field-name: one or more tchar. */
static int header_name_valid(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!(('a' <= *k && *k <= 'z') || ('A' <= *k && *k <= 'Z') ||
		      ('0' <= *k && *k <= '9') || strchr("!#$%&'*+-.^_`|~", *k)))
			return 0;
	return 1;
}

/* A field value: visible characters, spaces and tabs; no CR, LF or NUL. */
static int header_value_valid(const char *v)
{
	for (; *v; v++)
		if ((unsigned char)*v < 0x20 ? *v != '\t' : *v == 0x7f)
			return 0;
	return 1;
}

/*
 * Retries must not hammer a receiver that is down: a floor on the first
 * delay (0 s once sent 15,000 requests in 4 s) and a sane cap.
 */
static int check_backoff(const struct cfg *c, const struct cfg_node *dl,
			 const struct alerter_config *ac, char *err, size_t errlen)
{
	if (ac->backoff_initial_ns < BACKOFF_MIN_INITIAL_NS)
		return cfg_error(c, cfg_get(dl, "backoff_initial") ? cfg_get(dl, "backoff_initial")
			       : dl, err, errlen, "backoff_initial: at least 100ms (Alertmanager "
			       "uses 500ms), so a receiver that is down is not flooded");
	if (ac->backoff_max_ns < ac->backoff_initial_ns || ac->backoff_max_ns > 3600 * NSEC_PER_SEC)
		return cfg_error(c, cfg_get(dl, "backoff_max") ? cfg_get(dl, "backoff_max") : dl,
				 err, errlen, "backoff_max: between backoff_initial and 1h");
	if (ac->claim_idle_ns < NSEC_PER_SEC)
		return cfg_error(c, cfg_get(dl, "claim_idle") ? cfg_get(dl, "claim_idle") : dl,
				 err, errlen, "claim_idle: at least 1s (entries another alerter is "
				 "still working on must not be taken from it)");
	return 0;
}

static int parse_receiver(struct alerter_config *ac, const struct cfg *c, const struct cfg_node *n,
			  char *err, size_t errlen)
{
	struct receiver *r = &ac->receivers[ac->nreceivers];
	const struct cfg_node *h;
	char fmt[32] = "alertmanager", secret_file[256] = "";
	uint64_t conc = 4;
	int ret;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "receivers: each receiver is a map");
	if (ac->nreceivers == MAX_RECEIVERS)
		return cfg_error(c, n, err, errlen, "receivers: at most %d", MAX_RECEIVERS);
	memset(r, 0, sizeof(*r));
	r->timeout_ns = 10 * NSEC_PER_SEC;
	r->resend_interval_ns = AM_API_RESEND_NS;
	if ((ret = copy_str(c, n, "name", r->name, sizeof(r->name), err, errlen)) ||
	    (ret = copy_str(c, n, "url", r->url, sizeof(r->url), err, errlen)) ||
	    (ret = copy_str(c, n, "format", fmt, sizeof(fmt), err, errlen)) ||
	    (ret = copy_str(c, n, "secret", r->secret, sizeof(r->secret), err, errlen)) ||
	    (ret = copy_str(c, n, "secret_file", secret_file, sizeof(secret_file), err, errlen)) ||
	    (ret = copy_str(c, n, "routing_key", r->routing_key, sizeof(r->routing_key), err,
			    errlen)) ||
	    (ret = cfg_duration(c, n, "timeout", &r->timeout_ns, err, errlen)) ||
	    (ret = cfg_uint(c, n, "max_concurrency", 1, 64, &conc, err, errlen)) ||
	    (ret = cfg_bool(c, n, "allow_plain_http", &r->allow_plain_http, err, errlen)) ||
	    (ret = cfg_bool(c, n, "insecure_skip_verify", &r->insecure_skip_verify, err, errlen)) ||
	    (ret = cfg_duration(c, n, "resend_interval", &r->resend_interval_ns, err, errlen)) ||
	    (ret = cfg_map(c, n, "headers", &h, err, errlen)))
		return ret;
	r->max_concurrency = (int)conc;
	if (h && h->nchild > 16)
		return cfg_error(c, &h->child[16], err, errlen, "headers: at most 16");
	for (size_t i = 0; h && i < h->nchild && i < 16; i++) {
		((struct cfg_node *)&h->child[i])->used = 1;
		if (h->child[i].type != CFG_SCALAR)
			return cfg_error(c, &h->child[i], err, errlen, "headers.%s: expected a string",
					 h->child[i].key);
		if (!header_name_valid(h->child[i].key))
			return cfg_error(c, &h->child[i], err, errlen, "headers.%s: not a valid HTTP "
					 "header name (letters, digits and !#$%%&'*+-.^_`|~ only)",
					 h->child[i].key);
		if (!header_value_valid(h->child[i].value))
			return cfg_error(c, &h->child[i], err, errlen, "headers.%s: the value holds a "
					 "control character (CR, LF, NUL...); one line of text only",
					 h->child[i].key);
		if (!strncasecmp(h->child[i].key, "X-Faultline-", 12) ||
		    !strcasecmp(h->child[i].key, "Content-Type") ||
		    !strcasecmp(h->child[i].key, "Content-Length") ||
		    !strcasecmp(h->child[i].key, "Host"))
			return cfg_error(c, &h->child[i], err, errlen, "headers.%s: set by the alerter "
					 "itself; it cannot be overridden", h->child[i].key);
		r->headers[r->nheaders].key = h->child[i].key;
		r->headers[r->nheaders].value = h->child[i].value;
		r->nheaders++;
	}
	if ((ret = cfg_check_unknown(c, n, "name, url, format, secret, secret_file, routing_key, "
				     "timeout, max_concurrency, allow_plain_http, "
				     "insecure_skip_verify, headers, resend_interval", err, errlen)))
		return ret;
	if (!r->name[0] || !r->url[0])
		return cfg_error(c, n, err, errlen, "receivers: every receiver needs a name and a url");
	if (!strcmp(fmt, "alertmanager"))
		r->format = FMT_ALERTMANAGER;
	else if (!strcmp(fmt, "slack"))
		r->format = FMT_SLACK;
	else if (!strcmp(fmt, "pagerduty"))
		r->format = FMT_PAGERDUTY;
	else if (!strcmp(fmt, "alertmanager_api"))
		r->format = FMT_ALERTMANAGER_API;
	else
		return cfg_error(c, cfg_get(n, "format"), err, errlen,
				 "format: expected alertmanager (its webhook payload), "
				 "alertmanager_api (an Alertmanager's /api/v2/alerts), slack or "
				 "pagerduty, found '%s'", fmt);
	if (cfg_get(n, "resend_interval") && r->format != FMT_ALERTMANAGER_API)
		return cfg_error(c, cfg_get(n, "resend_interval"), err, errlen,
				 "resend_interval: only for format: alertmanager_api");
	if (r->resend_interval_ns < NSEC_PER_SEC)
		return cfg_error(c, cfg_get(n, "resend_interval"), err, errlen,
				 "resend_interval: at least 1s");
	if (strncmp(r->url, "https://", 8) && strncmp(r->url, "http://", 7))
		return cfg_error(c, cfg_get(n, "url"), err, errlen, "url: expected http(s)://...");
	if (!strncmp(r->url, "http://", 7) && !url_is_loopback(r->url) && !r->allow_plain_http)
		return cfg_error(c, cfg_get(n, "url"), err, errlen,
				 "url: plain http to a non-loopback host; use https, or set "
				 "allow_plain_http: true if you really mean it");
	if (secret_file[0]) {
		char why[600];

		/* whole or refused, never cut; 0600, as any secret (core/secret.h) */
		if (secret_file_read(secret_file, r->secret, sizeof(r->secret), why, sizeof(why)))
			return cfg_error(c, cfg_get(n, "secret_file"), err, errlen,
					 "secret_file: %s", why);
	}
	ac->nreceivers++;
	/* header pointers point into the cfg tree: copy them */
	for (int i = 0; i < r->nheaders; i++) {
		r->headers[i].key = strdup(r->headers[i].key);
		r->headers[i].value = strdup(r->headers[i].value);
	}
	return 0;
}

static int parse_route(struct alerter_config *ac, const struct cfg *c, const struct cfg_node *n,
		       char *err, size_t errlen)
{
	struct route *rt = &ac->routes[ac->nroutes];
	const struct cfg_node *m, *gb;
	char recv[64] = "";
	int ret;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "routes: each route is a map");
	if (ac->nroutes == MAX_ROUTES)
		return cfg_error(c, n, err, errlen, "routes: at most %d", MAX_ROUTES);
	memset(rt, 0, sizeof(*rt));
	ac->nroutes++;	/* counted now so alerter_config_free() frees its matchers on error */
	if ((ret = copy_str(c, n, "receiver", recv, sizeof(recv), err, errlen)) ||
	    (ret = cfg_map(c, n, "match", &m, err, errlen)))
		return ret;
	gb = cfg_get(n, "group_by");
	for (size_t i = 0; m && i < m->nchild && rt->nm < 8; i++) {
		char spec[400];

		((struct cfg_node *)&m->child[i])->used = 1;
		if (m->child[i].type != CFG_SCALAR)
			return cfg_error(c, &m->child[i], err, errlen, "match.%s: expected a string",
					 m->child[i].key);
		/* "~regex" values match as regular expressions */
		snprintf(spec, sizeof(spec), "%s%s%s", m->child[i].key,
			 m->child[i].value[0] == '~' ? "=~" : "=",
			 m->child[i].value + (m->child[i].value[0] == '~'));
		if (matcher_parse(&rt->m[rt->nm], spec, err, errlen))
			return cfg_error(c, &m->child[i], err, errlen, "match.%s: bad matcher",
					 m->child[i].key);
		rt->nm++;
	}
	if (gb) {
		if (gb->type != CFG_SEQ)
			return cfg_error(c, gb, err, errlen, "group_by: expected a list of labels");
		for (size_t i = 0; i < gb->nchild && rt->ngroup_by < MAX_GROUP_BY; i++)
			snprintf(rt->group_by[rt->ngroup_by++], 64, "%s",
				 gb->child[i].value ? gb->child[i].value : "");
	} else {
		snprintf(rt->group_by[0], 64, "alertname");
		rt->ngroup_by = 1;
	}
	if ((ret = cfg_check_unknown(c, n, "match, receiver, group_by", err, errlen)))
		return ret;
	rt->receiver = -1;
	for (int i = 0; i < ac->nreceivers; i++)
		if (!strcmp(ac->receivers[i].name, recv))
			rt->receiver = i;
	if (rt->receiver < 0)
		return cfg_error(c, cfg_get(n, "receiver"), err, errlen,
				 "receiver: '%s' is not one of the receivers", recv);
	return 0;
}

static void reset(struct alerter_config *ac)
{
	alerter_config_free(ac);
	snprintf(ac->redis_url, sizeof(ac->redis_url), "unix:///run/faultline/redis.sock");
	gethostname(ac->consumer, sizeof(ac->consumer) - 1);
	snprintf(ac->log_level, sizeof(ac->log_level), "info");
	ac->group_wait_ns = 1 * NSEC_PER_SEC;
	ac->group_interval_ns = 30 * NSEC_PER_SEC;
	ac->repeat_interval_ns = 4 * 3600 * NSEC_PER_SEC;
	ac->top_stacks = 10;
	ac->evidence_window_ns = 5 * 60 * NSEC_PER_SEC;
	ac->max_payload_bytes = 256 * 1024;
	ac->backoff_initial_ns = BACKOFF_INITIAL_NS;
	ac->backoff_max_ns = BACKOFF_MAX_NS;
	ac->claim_idle_ns = 60 * NSEC_PER_SEC;
	ac->give_up_after_ns = 24 * 3600 * NSEC_PER_SEC;
}

static int parse_receivers(const struct cfg *c, const struct cfg_node *map, const char *key,
			   void *base, char *err, size_t errlen)
{
	const struct cfg_node *recv = cfg_get(map, key);
	int ret;

	if (recv && recv->type != CFG_SEQ)
		return cfg_error(c, recv, err, errlen, "%s: expected a list", key);
	for (size_t i = 0; recv && i < recv->nchild; i++)
		if ((ret = parse_receiver(base, c, &recv->child[i], err, errlen)))
			return ret;
	return 0;
}

static int parse_routes(const struct cfg *c, const struct cfg_node *map, const char *key,
			void *base, char *err, size_t errlen)
{
	const struct cfg_node *routes = cfg_get(map, key);
	int ret;

	if (routes && routes->type != CFG_SEQ)
		return cfg_error(c, routes, err, errlen, "%s: expected a list", key);
	for (size_t i = 0; routes && i < routes->nchild; i++)
		if ((ret = parse_route(base, c, &routes->child[i], err, errlen)))
			return ret;
	return 0;
}

#define AC struct alerter_config
/* etc/alerter.yaml, key by key: parsing, the unknown-key message and the reference. */
const struct cfg_field alerter_config_schema[] = {
	CFG_CHARS("redis", AC, redis_url, "Redis holding fl:alerts"),
	CFG_CHARS("external_url", AC, external_url, "This alerter's URL, in payloads "
		  "(Alertmanager's externalURL)"),
	CFG_CHARS("consumer", AC, consumer, "Consumer name in the alerter group; empty: "
		  "the hostname"),
	CFG_DURATION("group_wait", AC, group_wait_ns, 0, 3600 * NSEC_PER_SEC,
		     "Wait before a new group's first notification"),
	CFG_DURATION("group_interval", AC, group_interval_ns, 0, 24 * 3600 * NSEC_PER_SEC,
		     "Wait before notifying a group's changes"),
	CFG_DURATION("repeat_interval", AC, repeat_interval_ns, NSEC_PER_SEC,
		     30 * 24 * 3600 * NSEC_PER_SEC, "Re-send a still-firing group after this"),
	CFG_CUSTOM("receivers", parse_receivers, "list of receivers", "Where notifications go "
		   "(name, url, format, secret, ...)"),
	CFG_CUSTOM("routes", parse_routes, "list of routes", "Which alerts go to which receiver, "
		   "grouped how (first match wins)"),
	CFG_UINT("evidence.top_stacks", AC, top_stacks, 0, 1000, "CPU stacks attached to a page"),
	CFG_DURATION("evidence.window", AC, evidence_window_ns, NSEC_PER_SEC,
		     24 * 3600 * NSEC_PER_SEC, "Profile time before the alert the stacks come from"),
	CFG_UINT("evidence.max_payload_bytes", AC, max_payload_bytes, 4096, 64u << 20,
		 "Evidence is cut to keep a payload under this"),
	CFG_DURATION("delivery.backoff_initial", AC, backoff_initial_ns, 0, 0,
		     "First retry delay (at least 100ms)"),
	CFG_DURATION("delivery.backoff_max", AC, backoff_max_ns, 0, 0,
		     "Longest retry delay (backoff_initial .. 1h)"),
	CFG_DURATION("delivery.claim_idle", AC, claim_idle_ns, 0, 0,
		     "Another alerter's entry is taken over after this (at least 1s)"),
	CFG_DURATION("delivery.give_up_after", AC, give_up_after_ns, 0, 30 * 24 * 3600 * NSEC_PER_SEC,
		     "A notification still failing after this long is dead-lettered and its "
		     "entries acknowledged, so it cannot hold its group up for ever; 0: never"),
	CFG_CHARS("log_level", AC, log_level, "error, warn, info or debug"),
	CFG_CHARS("metrics_addr", AC, metrics_addr, "The alerter's own /metrics; empty: off"),
	CFG_CHARS("web_config", AC, web_config, "TLS and basic auth for /metrics: a web config "
		  "file as Prometheus exporters take; empty: plain HTTP"),
};
const size_t alerter_config_nschema = sizeof(alerter_config_schema) /
				      sizeof(alerter_config_schema[0]);
#undef AC

int alerter_config_parse(struct alerter_config *ac, const char *name, const char *text,
			 size_t len, char *err, size_t errlen)
{
	const struct cfg_node *dl;
	struct cfg c;
	int ret;

	memset(ac, 0, sizeof(*ac));
	reset(ac);
	ret = cfg_parse(&c, name, text, len, err, errlen);
	if (ret)
		return ret;
	if ((ret = cfg_apply(&c, alerter_config_schema, alerter_config_nschema, ac, err, errlen)))
		goto out;
	/* the backoff floor holds for the defaults too, with or without a delivery map */
	if ((ret = cfg_map(&c, c.root, "delivery", &dl, err, errlen)) ||
	    (ret = check_backoff(&c, dl ? dl : c.root, ac, err, errlen)))
		goto out;
	if (ac->nroutes == 0 && ac->nreceivers > 0) {
		/* no routes: everything to the first receiver, grouped by alertname */
		ac->routes[0].receiver = 0;
		snprintf(ac->routes[0].group_by[0], 64, "alertname");
		ac->routes[0].ngroup_by = 1;
		ac->nroutes = 1;
	}
out:
	cfg_free(&c);
	return ret;
}

int alerter_config_load(struct alerter_config *ac, const char *path, char *err, size_t errlen)
{
	char *text;
	size_t len;
	int ret = cfg_read_file(path, &text, &len, err, errlen);

	if (ret)
		return ret;
	ret = alerter_config_parse(ac, path, text, len, err, errlen);
	free(text);
	return ret;
}

void alerter_config_free(struct alerter_config *ac)
{
	for (int i = 0; i < ac->nreceivers; i++)
		for (int k = 0; k < ac->receivers[i].nheaders; k++) {
			free(ac->receivers[i].headers[k].key);
			free(ac->receivers[i].headers[k].value);
		}
	for (int i = 0; i < ac->nroutes; i++)
		for (int k = 0; k < ac->routes[i].nm; k++)
			matcher_free(&ac->routes[i].m[k]);
	ac->nreceivers = ac->nroutes = 0;
}
