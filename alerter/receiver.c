/*
 * receiver.c - `receivers:` and `global:` of the alerter's config, in
 * either shape (see receiver.h): each receiver becomes its integrations.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "alerter/alerter.h"
#include "alerter/receiver.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/timeutil.h"

#define PAGERDUTY_EVENTS_URL "https://events.pagerduty.com/v2/enqueue"

int cfg_copy_str(const struct cfg *c, const struct cfg_node *map, const char *key, char *dst,
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

/* key_file: a secret's file (core/secret.h) into dst, when the key is there. */
static int secret_from(const struct cfg *c, const struct cfg_node *map, const char *key,
		       char *dst, size_t len, char *err, size_t errlen)
{
	char path[512] = "", why[600];
	int ret = cfg_copy_str(c, map, key, path, sizeof(path), err, errlen);

	if (ret || !path[0])
		return ret;
	if (secret_file_read(path, dst, len, why, sizeof(why)))
		return cfg_error(c, cfg_get(map, key), err, errlen, "%s: %s", key, why);
	return 0;
}

/* Both of key and key_file given, or neither when one is needed. */
static int one_of(const struct cfg *c, const struct cfg_node *map, const char *key,
		  const char *key_file, char *err, size_t errlen)
{
	if (cfg_get(map, key) && cfg_get(map, key_file))
		return cfg_error(c, cfg_get(map, key_file), err, errlen, "%s and %s: give one, not "
				 "both", key, key_file);
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

static int parse_headers(struct integration *r, const struct cfg *c, const struct cfg_node *h,
			 char *err, size_t errlen)
{
	if (h && h->nchild > 16)
		return cfg_error(c, &h->child[16], err, errlen, "headers: at most 16");
	for (size_t i = 0; h && i < h->nchild; i++) {
		const struct cfg_node *e = &h->child[i];

		((struct cfg_node *)e)->used = 1;
		if (e->type != CFG_SCALAR)
			return cfg_error(c, e, err, errlen, "headers.%s: expected a string", e->key);
		if (!header_name_valid(e->key))
			return cfg_error(c, e, err, errlen, "headers.%s: not a valid HTTP header name "
					 "(letters, digits and !#$%%&'*+-.^_`|~ only)", e->key);
		if (!header_value_valid(e->value))
			return cfg_error(c, e, err, errlen, "headers.%s: the value holds a control "
					 "character (CR, LF, NUL...); one line of text only", e->key);
		if (!strncasecmp(e->key, "X-Faultline-", 12) || !strcasecmp(e->key, "Content-Type") ||
		    !strcasecmp(e->key, "Content-Length") || !strcasecmp(e->key, "Host"))
			return cfg_error(c, e, err, errlen, "headers.%s: set by the alerter itself; it "
					 "cannot be overridden", e->key);
		r->headers[r->nheaders].key = strdup(e->key);
		r->headers[r->nheaders].value = strdup(e->value);
		r->nheaders++;
	}
	return 0;
}

/*
 * An http_config map (Prometheus' common HTTP client config) into r: TLS,
 * basic auth, an Authorization header, redirects.  What faultline does
 * not do is refused by name.
 */
static int parse_http_config(struct integration *r, const struct cfg *c,
			     const struct cfg_node *n, char *err, size_t errlen)
{
	static const char *const unsupported[] = { "proxy_url", "no_proxy", "proxy_from_environment",
		"proxy_connect_header", "oauth2", "enable_http2" };
	const struct cfg_node *tls, *ba, *au;
	char bearer[512] = "";
	int ret;

	if (!n)
		return 0;
	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "http_config: expected a map");
	for (size_t i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++)
		if (cfg_get(n, unsupported[i]))
			return cfg_error(c, cfg_get(n, unsupported[i]), err, errlen, "http_config.%s: "
					 "not supported by faultline (it would be ignored)",
					 unsupported[i]);
	if ((ret = cfg_map(c, n, "tls_config", &tls, err, errlen)) ||
	    (ret = cfg_map(c, n, "basic_auth", &ba, err, errlen)) ||
	    (ret = cfg_map(c, n, "authorization", &au, err, errlen)) ||
	    (ret = cfg_bool(c, n, "follow_redirects", &r->follow_redirects, err, errlen)) ||
	    (ret = one_of(c, n, "bearer_token", "bearer_token_file", err, errlen)) ||
	    (ret = cfg_copy_str(c, n, "bearer_token", bearer, sizeof(bearer), err, errlen)) ||
	    (ret = secret_from(c, n, "bearer_token_file", bearer, sizeof(bearer), err, errlen)))
		return ret;
	if (tls && ((ret = cfg_copy_str(c, tls, "ca_file", r->ca_file, sizeof(r->ca_file), err,
					errlen)) ||
		    (ret = cfg_copy_str(c, tls, "cert_file", r->cert_file, sizeof(r->cert_file), err,
					errlen)) ||
		    (ret = cfg_copy_str(c, tls, "key_file", r->key_file, sizeof(r->key_file), err,
					errlen)) ||
		    (ret = cfg_copy_str(c, tls, "server_name", r->server_name,
					sizeof(r->server_name), err, errlen)) ||
		    (ret = cfg_bool(c, tls, "insecure_skip_verify", &r->insecure_skip_verify, err,
				    errlen)) ||
		    (ret = cfg_check_unknown(c, tls, "ca_file, cert_file, key_file, server_name, "
					     "insecure_skip_verify", err, errlen))))
		return ret;
	if (!!r->cert_file[0] != !!r->key_file[0])
		return cfg_error(c, tls, err, errlen, "tls_config: a client certificate needs both "
				 "cert_file and key_file");
	{
		const char *const files[] = { r->ca_file, r->cert_file, r->key_file };

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
			if (files[i][0] && access(files[i], R_OK))
				return cfg_error(c, tls, err, errlen, "tls_config: cannot read %s",
						 files[i]);
	}
	if (ba && ((ret = cfg_copy_str(c, ba, "username", r->basic_user, sizeof(r->basic_user),
				       err, errlen)) ||
		   (ret = one_of(c, ba, "password", "password_file", err, errlen)) ||
		   (ret = cfg_copy_str(c, ba, "password", r->basic_password,
				       sizeof(r->basic_password), err, errlen)) ||
		   (ret = secret_from(c, ba, "password_file", r->basic_password,
				      sizeof(r->basic_password), err, errlen)) ||
		   (ret = cfg_check_unknown(c, ba, "username, password, password_file", err,
					    errlen))))
		return ret;
	if (ba && !r->basic_user[0])
		return cfg_error(c, ba, err, errlen, "basic_auth: username is required");
	if (au) {
		snprintf(r->auth_type, sizeof(r->auth_type), "Bearer");
		if ((ret = cfg_copy_str(c, au, "type", r->auth_type, sizeof(r->auth_type), err,
					errlen)) ||
		    (ret = one_of(c, au, "credentials", "credentials_file", err, errlen)) ||
		    (ret = cfg_copy_str(c, au, "credentials", r->auth_credentials,
					sizeof(r->auth_credentials), err, errlen)) ||
		    (ret = secret_from(c, au, "credentials_file", r->auth_credentials,
				       sizeof(r->auth_credentials), err, errlen)) ||
		    (ret = cfg_check_unknown(c, au, "type, credentials, credentials_file", err,
					     errlen)))
			return ret;
		if (!strcasecmp(r->auth_type, "basic"))
			return cfg_error(c, au, err, errlen, "authorization: type Basic is basic_auth's "
					 "job");
	}
	if (bearer[0]) {
		if (au || ba)
			return cfg_error(c, n, err, errlen, "http_config: bearer_token with "
					 "authorization or basic_auth: give one");
		snprintf(r->auth_type, sizeof(r->auth_type), "Bearer");
		snprintf(r->auth_credentials, sizeof(r->auth_credentials), "%s", bearer);
	}
	if (ba && au)
		return cfg_error(c, n, err, errlen, "http_config: basic_auth and authorization: "
				 "give one");
	if (!header_value_valid(r->auth_type) || !header_value_valid(r->auth_credentials) ||
	    strchr(r->auth_type, ' '))
		return cfg_error(c, au ? au : n, err, errlen, "authorization: the type or the "
				 "credentials hold a control character");
	return cfg_check_unknown(c, n, "tls_config, basic_auth, authorization, bearer_token, "
				 "bearer_token_file, follow_redirects", err, errlen);
}

/* The url's scheme and, for plain http beyond loopback, whether it may go. */
static int check_url(struct integration *r, const struct cfg *c, const struct cfg_node *at,
		     int am_shape, char *err, size_t errlen)
{
	if (strncmp(r->url, "https://", 8) && strncmp(r->url, "http://", 7))
		return cfg_error(c, at, err, errlen, "url: expected http(s)://...");
	if (strncmp(r->url, "http://", 7) || url_is_loopback(r->url) || r->allow_plain_http)
		return 0;
	if (!am_shape)
		return cfg_error(c, at, err, errlen, "url: plain http to a non-loopback host; use "
				 "https, or set allow_plain_http: true if you really mean it");
	/* Alertmanager sends plain http where its file says so: so does faultline, aloud */
	log_warn("%s:%d: %s: plain http to a non-loopback host: notifications and their evidence "
		 "travel unencrypted", c->file, at->line, r->name);
	return 0;
}

/* A new integration of receiver `receiver`, its defaults set. */
static struct integration *integration_new(struct alerter_config *ac, const struct cfg *c,
					   const struct cfg_node *at, const char *receiver,
					   const char *kind, int index, char *err, size_t errlen)
{
	struct integration *r;

	if (ac->nintegrations == MAX_INTEGRATIONS) {
		cfg_error(c, at, err, errlen, "receivers: at most %d integrations (configs) in all",
			  MAX_INTEGRATIONS);
		return NULL;
	}
	r = &ac->integrations[ac->nintegrations++];
	memset(r, 0, sizeof(*r));
	snprintf(r->receiver, sizeof(r->receiver), "%s", receiver);
	if (kind)
		snprintf(r->name, sizeof(r->name), "%s/%s[%d]", receiver, kind, index);
	else
		snprintf(r->name, sizeof(r->name), "%s", receiver);
	r->timeout_ns = 10 * NSEC_PER_SEC;
	r->resend_interval_ns = AM_API_RESEND_NS;
	r->max_concurrency = 4;
	r->send_resolved = 1;
	r->follow_redirects = kind != NULL;	/* Prometheus' HTTP client follows them */
	/* global.http_config, under what the config itself says */
	memcpy(r->ca_file, ac->global_http.ca_file, sizeof(r->ca_file));
	memcpy(r->cert_file, ac->global_http.cert_file, sizeof(r->cert_file));
	memcpy(r->key_file, ac->global_http.key_file, sizeof(r->key_file));
	memcpy(r->server_name, ac->global_http.server_name, sizeof(r->server_name));
	r->insecure_skip_verify = ac->global_http.insecure_skip_verify;
	if (kind && ac->global_follow_redirects_set)
		r->follow_redirects = ac->global_http.follow_redirects;
	return r;
}

/*
 * faultline's own receiver fields (url, format, secret, headers, ...) of
 * map n into r.  named: n is a whole receiver (it has a name).
 */
static int parse_faultline_fields(struct integration *r, const struct cfg *c,
				  const struct cfg_node *n, int named, char *err, size_t errlen)
{
	const struct cfg_node *h;
	char fmt[32] = "alertmanager", secret_file[256] = "";
	uint64_t conc = 4;
	int ret;

	if ((ret = cfg_copy_str(c, n, "url", r->url, sizeof(r->url), err, errlen)) ||
	    (ret = cfg_copy_str(c, n, "format", fmt, sizeof(fmt), err, errlen)) ||
	    (ret = cfg_copy_str(c, n, "secret", r->secret, sizeof(r->secret), err, errlen)) ||
	    (ret = cfg_copy_str(c, n, "secret_file", secret_file, sizeof(secret_file), err,
				errlen)) ||
	    (ret = cfg_copy_str(c, n, "routing_key", r->routing_key, sizeof(r->routing_key), err,
				errlen)) ||
	    (ret = cfg_duration(c, n, "timeout", &r->timeout_ns, err, errlen)) ||
	    (ret = cfg_uint(c, n, "max_concurrency", 1, 64, &conc, err, errlen)) ||
	    (ret = cfg_bool(c, n, "allow_plain_http", &r->allow_plain_http, err, errlen)) ||
	    (ret = cfg_bool(c, n, "insecure_skip_verify", &r->insecure_skip_verify, err, errlen)) ||
	    (ret = cfg_bool(c, n, "send_resolved", &r->send_resolved, err, errlen)) ||
	    (ret = cfg_duration(c, n, "resend_interval", &r->resend_interval_ns, err, errlen)) ||
	    (ret = cfg_map(c, n, "headers", &h, err, errlen)) ||
	    (ret = parse_headers(r, c, h, err, errlen)) ||
	    (ret = parse_http_config(r, c, cfg_get(n, "http_config"), err, errlen)))
		return ret;
	r->max_concurrency = (int)conc;
	if ((ret = cfg_check_unknown(c, n, named ? "name, url, format, secret, secret_file, "
				     "routing_key, timeout, max_concurrency, allow_plain_http, "
				     "insecure_skip_verify, send_resolved, headers, "
				     "resend_interval, http_config" :
				     "url, format, secret, secret_file, routing_key, timeout, "
				     "max_concurrency, allow_plain_http, insecure_skip_verify, "
				     "send_resolved, headers, resend_interval, http_config", err,
				     errlen)))
		return ret;
	if (!r->url[0])
		return cfg_error(c, n, err, errlen, "url: every receiver needs one");
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
	if ((ret = check_url(r, c, cfg_get(n, "url"), 0, err, errlen)))
		return ret;
	if (secret_file[0]) {
		char why[600];

		/* whole or refused, never cut; 0600, as any secret (core/secret.h) */
		if (secret_file_read(secret_file, r->secret, sizeof(r->secret), why, sizeof(why)))
			return cfg_error(c, cfg_get(n, "secret_file"), err, errlen,
					 "secret_file: %s", why);
	}
	return 0;
}

/* Keys of Slack's and PagerDuty's configs that are Go templates: faultline writes the message. */
static const char *const slack_templates[] = { "title", "title_link", "text", "pretext",
	"fallback", "color", "footer", "fields", "actions", "callback_id", "icon_emoji", "icon_url",
	"image_url", "thumb_url", "link_names", "mrkdwn_in", "short_fields" };
static const char *const pagerduty_templates[] = { "client", "client_url", "description",
	"details", "images", "links", "severity", "class", "component", "group", "source" };

static int refuse_templates(const struct cfg *c, const struct cfg_node *n, const char *list,
			    const char *const *keys, size_t nkeys, char *err, size_t errlen)
{
	for (size_t i = 0; i < nkeys; i++)
		if (cfg_get(n, keys[i]))
			return cfg_error(c, cfg_get(n, keys[i]), err, errlen, "%s.%s: templates are "
					 "not supported: faultline writes the message itself, "
					 "with its evidence (docs/alerter.md)", list, keys[i]);
	return 0;
}

static int parse_am_config(struct alerter_config *ac, const struct cfg *c,
			   const struct cfg_node *n, const char *receiver, const char *list,
			   int index, char *err, size_t errlen)
{
	struct integration *r;
	const char *kind = !strcmp(list, "webhook_configs") ? "webhook" :
			   !strcmp(list, "slack_configs") ? "slack" :
			   !strcmp(list, "pagerduty_configs") ? "pagerduty" : "faultline";
	uint64_t max_alerts = 0;
	int ret;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "%s: each item is a map", list);
	r = integration_new(ac, c, n, receiver, kind, index, err, errlen);
	if (!r)
		return -EINVAL;
	if (!strcmp(kind, "faultline"))
		return parse_faultline_fields(r, c, n, 0, err, errlen);
	if ((ret = cfg_bool(c, n, "send_resolved", &r->send_resolved, err, errlen)) ||
	    (ret = parse_http_config(r, c, cfg_get(n, "http_config"), err, errlen)))
		return ret;
	if (!strcmp(kind, "webhook")) {
		r->format = FMT_ALERTMANAGER;
		if ((ret = one_of(c, n, "url", "url_file", err, errlen)) ||
		    (ret = cfg_copy_str(c, n, "url", r->url, sizeof(r->url), err, errlen)) ||
		    (ret = secret_from(c, n, "url_file", r->url, sizeof(r->url), err, errlen)) ||
		    (ret = cfg_uint(c, n, "max_alerts", 0, 0, &max_alerts, err, errlen)) ||
		    (ret = cfg_check_unknown(c, n, "url, url_file, send_resolved, http_config, "
					     "max_alerts (0 only: faultline never cuts a "
					     "notification's alerts)", err, errlen)))
			return ret;
	} else if (!strcmp(kind, "slack")) {
		r->format = FMT_SLACK;
		r->send_resolved = 0;	/* Alertmanager's default for Slack */
		if ((ret = cfg_bool(c, n, "send_resolved", &r->send_resolved, err, errlen)) ||
		    (ret = refuse_templates(c, n, list, slack_templates, sizeof(slack_templates) /
					    sizeof(slack_templates[0]), err, errlen)) ||
		    (ret = one_of(c, n, "api_url", "api_url_file", err, errlen)) ||
		    (ret = cfg_copy_str(c, n, "api_url", r->url, sizeof(r->url), err, errlen)) ||
		    (ret = secret_from(c, n, "api_url_file", r->url, sizeof(r->url), err,
				       errlen)) ||
		    (ret = cfg_copy_str(c, n, "channel", r->channel, sizeof(r->channel), err,
					errlen)) ||
		    (ret = cfg_copy_str(c, n, "username", r->username, sizeof(r->username), err,
					errlen)) ||
		    (ret = cfg_check_unknown(c, n, "api_url, api_url_file, channel, username, "
					     "send_resolved, http_config", err, errlen)))
			return ret;
		if (!r->url[0])
			snprintf(r->url, sizeof(r->url), "%s", ac->slack_api_url);
		if (!r->url[0])
			return cfg_error(c, n, err, errlen, "%s: no api_url (nor global.slack_api_url)",
					 list);
	} else {
		r->format = FMT_PAGERDUTY;
		if (cfg_get(n, "service_key") || cfg_get(n, "service_key_file"))
			return cfg_error(c, cfg_get(n, "service_key") ? cfg_get(n, "service_key") :
					 cfg_get(n, "service_key_file"), err, errlen, "service_key: "
					 "PagerDuty's Events API v1 is not supported; use an Events "
					 "v2 routing_key");
		if ((ret = refuse_templates(c, n, list, pagerduty_templates,
					    sizeof(pagerduty_templates) /
					    sizeof(pagerduty_templates[0]), err, errlen)) ||
		    (ret = one_of(c, n, "routing_key", "routing_key_file", err, errlen)) ||
		    (ret = cfg_copy_str(c, n, "routing_key", r->routing_key,
					sizeof(r->routing_key), err, errlen)) ||
		    (ret = secret_from(c, n, "routing_key_file", r->routing_key,
				       sizeof(r->routing_key), err, errlen)) ||
		    (ret = cfg_copy_str(c, n, "url", r->url, sizeof(r->url), err, errlen)) ||
		    (ret = cfg_check_unknown(c, n, "routing_key, routing_key_file, url, "
					     "send_resolved, http_config", err, errlen)))
			return ret;
		if (!r->routing_key[0])
			return cfg_error(c, n, err, errlen, "%s: routing_key (or routing_key_file) "
					 "is required", list);
		if (!r->url[0])
			snprintf(r->url, sizeof(r->url), "%s", ac->pagerduty_url[0] ?
				 ac->pagerduty_url : PAGERDUTY_EVENTS_URL);
	}
	if (!r->url[0])
		return cfg_error(c, n, err, errlen, "%s: url (or url_file) is required", list);
	return check_url(r, c, cfg_get(n, "url") ? cfg_get(n, "url") :
			 cfg_get(n, "api_url") ? cfg_get(n, "api_url") : n, 1, err, errlen);
}

/* Alertmanager's integrations faultline does not send to: refused by name. */
static const char *const unsupported_configs[] = { "email_configs", "opsgenie_configs",
	"wechat_configs", "pushover_configs", "victorops_configs", "sns_configs",
	"telegram_configs", "webex_configs", "discord_configs", "msteams_configs" };
static const char *const am_configs[] = { "webhook_configs", "slack_configs",
	"pagerduty_configs", "faultline_configs" };

static int parse_receiver(struct alerter_config *ac, const struct cfg *c, const struct cfg_node *n,
			  char *err, size_t errlen)
{
	struct receiver_name *rn;
	char name[64] = "";
	int ret;

	if (n->type != CFG_MAP)
		return cfg_error(c, n, err, errlen, "receivers: each receiver is a map");
	if ((ret = cfg_copy_str(c, n, "name", name, sizeof(name), err, errlen)))
		return ret;
	if (!name[0])
		return cfg_error(c, n, err, errlen, "receivers: every receiver needs a name");
	for (int i = 0; i < ac->nreceiver_names; i++)
		if (!strcmp(ac->receiver_names[i].name, name))
			return cfg_error(c, cfg_get(n, "name"), err, errlen, "name: receiver '%s' is "
					 "defined twice", name);
	if (ac->nreceiver_names == MAX_RECEIVER_NAMES)
		return cfg_error(c, n, err, errlen, "receivers: at most %d", MAX_RECEIVER_NAMES);
	rn = &ac->receiver_names[ac->nreceiver_names++];
	snprintf(rn->name, sizeof(rn->name), "%s", name);
	rn->first = ac->nintegrations;
	if (cfg_get(n, "url") || cfg_get(n, "format")) {
		/* faultline's shape: the receiver is its one integration */
		struct integration *r = integration_new(ac, c, n, name, NULL, 0, err, errlen);

		if (!r || (ret = parse_faultline_fields(r, c, n, 1, err, errlen)))
			return r ? ret : -EINVAL;
		rn->n = 1;
		return 0;
	}
	for (size_t i = 0; i < sizeof(unsupported_configs) / sizeof(unsupported_configs[0]); i++)
		if (cfg_get(n, unsupported_configs[i]))
			return cfg_error(c, cfg_get(n, unsupported_configs[i]), err, errlen,
					 "%s: not supported by faultline (webhook_configs, "
					 "slack_configs, pagerduty_configs and faultline_configs "
					 "are)", unsupported_configs[i]);
	for (size_t k = 0; k < sizeof(am_configs) / sizeof(am_configs[0]); k++) {
		const struct cfg_node *l = cfg_get(n, am_configs[k]);

		if (l && l->type != CFG_SEQ)
			return cfg_error(c, l, err, errlen, "%s: expected a list", am_configs[k]);
		for (size_t i = 0; l && i < l->nchild; i++)
			if ((ret = parse_am_config(ac, c, &l->child[i], name, am_configs[k], (int)i,
						   err, errlen)))
				return ret;
	}
	rn->n = ac->nintegrations - rn->first;
	/* no configs: Alertmanager's way to drop what a route sends there */
	return cfg_check_unknown(c, n, "name, webhook_configs, slack_configs, pagerduty_configs, "
				 "faultline_configs (or faultline's url, format, ...)", err, errlen);
}

int receivers_parse(const struct cfg *c, const struct cfg_node *map, const char *key, void *base,
		    char *err, size_t errlen)
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

int global_parse(const struct cfg *c, const struct cfg_node *map, const char *key, void *base,
		 char *err, size_t errlen)
{
	struct alerter_config *ac = base;
	const struct cfg_node *g;
	uint64_t resolve_timeout = 0;
	int ret;

	if ((ret = cfg_map(c, map, key, &g, err, errlen)) || !g)
		return ret;
	for (size_t i = 0; i < g->nchild; i++)
		if (!strncmp(g->child[i].key, "smtp_", 5) || !strncmp(g->child[i].key, "opsgenie_", 9) ||
		    !strncmp(g->child[i].key, "wechat_", 7) || !strncmp(g->child[i].key, "victorops_", 10) ||
		    !strncmp(g->child[i].key, "telegram_", 9) || !strncmp(g->child[i].key, "webex_", 6))
			return cfg_error(c, &g->child[i], err, errlen, "global.%s: for an integration "
					 "faultline does not send to", g->child[i].key);
	if ((ret = cfg_duration(c, g, "resolve_timeout", &resolve_timeout, err, errlen)) ||
	    (ret = one_of(c, g, "slack_api_url", "slack_api_url_file", err, errlen)) ||
	    (ret = cfg_copy_str(c, g, "slack_api_url", ac->slack_api_url, sizeof(ac->slack_api_url),
				err, errlen)) ||
	    (ret = secret_from(c, g, "slack_api_url_file", ac->slack_api_url,
			       sizeof(ac->slack_api_url), err, errlen)) ||
	    (ret = cfg_copy_str(c, g, "pagerduty_url", ac->pagerduty_url, sizeof(ac->pagerduty_url),
				err, errlen)) ||
	    (ret = parse_http_config(&ac->global_http, c, cfg_get(g, "http_config"), err, errlen)))
		return ret;
	ac->global_follow_redirects_set = cfg_get(g, "http_config") &&
					  cfg_get(cfg_get(g, "http_config"), "follow_redirects");
	if (ac->global_http.basic_user[0] || ac->global_http.auth_credentials[0])
		return cfg_error(c, cfg_get(g, "http_config"), err, errlen, "global.http_config: "
				 "credentials belong to each receiver's http_config");
	/*
	 * resolve_timeout applies to alerts that come without an end; faultline's
	 * rules always send their resolution, so it never applies: read, not used.
	 */
	return cfg_check_unknown(c, g, "resolve_timeout, slack_api_url, slack_api_url_file, "
				 "pagerduty_url, http_config", err, errlen);
}
