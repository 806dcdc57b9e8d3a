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
#include "alerter/receiver.h"
#include "alerter/route.h"
#include "core/backoff.h"
#include "core/config.h"
#include "core/config_schema.h"
#include "core/secret.h"
#include "core/timeutil.h"


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

static void reset(struct alerter_config *ac)
{
	alerter_config_free(ac);
	snprintf(ac->redis_url, sizeof(ac->redis_url), "unix:///run/faultline/redis.sock");
	gethostname(ac->consumer, sizeof(ac->consumer) - 1);
	snprintf(ac->log_level, sizeof(ac->log_level), "info");
	ac->group_wait_ns = 1 * NSEC_PER_SEC;
	ac->group_interval_ns = 30 * NSEC_PER_SEC;
	ac->page_group_wait_ns = 0;
	ac->repeat_interval_ns = 4 * 3600 * NSEC_PER_SEC;
	ac->top_stacks = 10;
	ac->evidence_window_ns = 5 * 60 * NSEC_PER_SEC;
	ac->max_payload_bytes = 256 * 1024;
	ac->backoff_initial_ns = BACKOFF_INITIAL_NS;
	ac->backoff_max_ns = BACKOFF_MAX_NS;
	ac->claim_idle_ns = 60 * NSEC_PER_SEC;
	ac->give_up_after_ns = 24 * 3600 * NSEC_PER_SEC;
}

static int parse_route_tree(const struct cfg *c, const struct cfg_node *map, const char *key,
			    void *base, char *err, size_t errlen)
{
	const struct cfg_node *n = cfg_get(map, key);

	if (!n)
		return 0;
	if (cfg_get(map, "routes"))
		return cfg_error(c, n, err, errlen, "route and routes: give the tree (route) or "
				 "faultline's flat list (routes), not both");
	return route_tree_parse(base, c, n, err, errlen);
}

static int parse_route_list(const struct cfg *c, const struct cfg_node *map, const char *key,
			    void *base, char *err, size_t errlen)
{
	const struct cfg_node *n = cfg_get(map, key);

	return n ? route_list_parse(base, c, n, err, errlen) : 0;
}

static int parse_time_intervals(const struct cfg *c, const struct cfg_node *map, const char *key,
				void *base, char *err, size_t errlen)
{
	struct alerter_config *ac = base;
	const struct cfg_node *n = cfg_get(map, key);

	return n ? time_intervals_parse(c, n, &ac->time_intervals, &ac->ntime_intervals, err,
					errlen) : 0;
}

static int parse_inhibit_rules(const struct cfg *c, const struct cfg_node *map, const char *key,
			       void *base, char *err, size_t errlen)
{
	struct alerter_config *ac = base;
	const struct cfg_node *n = cfg_get(map, key);

	return n ? inhibit_rules_parse(c, n, &ac->inhibit_rules, &ac->ninhibit_rules, err,
				       errlen) : 0;
}

/*
 * Alertmanager sections faultline does not do yet: an empty one is read
 * (an alertmanager.yml often carries `templates: []`), anything in one is
 * refused rather than ignored.
 */
static int refuse_section(const struct cfg *c, const struct cfg_node *map, const char *key,
			  void *base, char *err, size_t errlen)
{
	const struct cfg_node *n = cfg_get(map, key);

	(void)base;
	if (!n || (n->type == CFG_SEQ && !n->nchild) || (n->type == CFG_SCALAR && !n->value))
		return 0;
	return cfg_error(c, n, err, errlen, "%s: not supported by faultline yet (it would be "
			 "ignored); take it out, or keep this file with Alertmanager", key);
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
	CFG_DURATION("page_group_wait", AC, page_group_wait_ns, 0, 3600 * NSEC_PER_SEC,
		     "Wait before a new group's first notification when it holds a firing "
		     "severity=\"page\" alert, if shorter than group_wait (faultline's; set "
		     "it to group_wait for Alertmanager's timing)"),
	CFG_DURATION("group_interval", AC, group_interval_ns, 0, 24 * 3600 * NSEC_PER_SEC,
		     "Wait before notifying a group's changes"),
	CFG_DURATION("repeat_interval", AC, repeat_interval_ns, NSEC_PER_SEC,
		     30 * 24 * 3600 * NSEC_PER_SEC, "Re-send a still-firing group after this"),
	CFG_CUSTOM("global", global_parse, "map", "Alertmanager's global section: "
		   "resolve_timeout, slack_api_url, pagerduty_url, http_config"),
	CFG_CUSTOM("receivers", receivers_parse, "list of receivers", "Where notifications go: "
		   "faultline's (name, url, format, secret, ...) or Alertmanager's (name, "
		   "webhook_configs, slack_configs, pagerduty_configs, faultline_configs)"),
	CFG_CUSTOM("time_intervals", parse_time_intervals, "list of time intervals",
		   "Alertmanager's named recurring periods (times, weekdays, days_of_month, "
		   "months, years, location) that routes mute or activate notifications by"),
	CFG_CUSTOM("mute_time_intervals", parse_time_intervals, "list of time intervals",
		   "The older name of time_intervals (both may be given; names are shared)"),
	CFG_CUSTOM("route", parse_route_tree, "routing tree", "Alertmanager's routing tree: "
		   "matchers, continue, group_by, timers, nested routes"),
	CFG_CUSTOM("routes", parse_route_list, "list of routes", "faultline's flat list: which "
		   "alerts go to which receiver, grouped how (first match wins)"),
	CFG_CUSTOM("inhibit_rules", parse_inhibit_rules, "list of rules", "Alertmanager's "
		   "inhibit rules: a firing alert matching source_matchers mutes the "
		   "notifications of alerts matching target_matchers with the same `equal` "
		   "labels"),
	CFG_CUSTOM("templates", refuse_section, "list", "Alertmanager's templates: refused when "
		   "not empty (faultline writes the messages)"),
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
	CFG_CHARS("metrics_addr", AC, metrics_addr, "The alerter's own /metrics and "
		  "Alertmanager's API v2 (/api/v2/); empty: off"),
	CFG_CHARS("web_config", AC, web_config, "TLS and basic auth for /metrics and the API: "
		  "a web config "
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
	if (!ac->has_root && ac->nreceiver_names > 0) {
		/* no routes: everything to the first receiver, grouped by alertname */
		if ((ret = route_default(ac)))
			goto out;
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
	for (int i = 0; i < ac->nintegrations; i++)
		for (int k = 0; k < ac->integrations[i].nheaders; k++) {
			free(ac->integrations[i].headers[k].key);
			free(ac->integrations[i].headers[k].value);
		}
	route_free(&ac->root);
	ac->has_root = 0;
	time_intervals_free(ac->time_intervals, ac->ntime_intervals);
	ac->time_intervals = NULL;
	ac->ntime_intervals = 0;
	inhibit_rules_free(ac->inhibit_rules, ac->ninhibit_rules);
	ac->inhibit_rules = NULL;
	ac->ninhibit_rules = 0;
	ac->nintegrations = ac->nreceiver_names = 0;
}
