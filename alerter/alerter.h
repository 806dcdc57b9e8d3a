/*
 * alerter.h - faultline-alerter's configuration, payloads and delivery.
 *
 * Flow: fl:alerts (consumer group "alerter") -> route (first matching
 * route) -> group (receiver + group_by label values) -> after group_wait /
 * group_interval / repeat_interval, one notification per group -> payload
 * in the receiver's format with evidence -> signed POST.
 *
 * Delivery is at least once, and a group's state is shared by every
 * alerter (store/alert_group.h); a stream entry's life (stream.c,
 * groups.c, delivery.c):
 *
 *   read ──► already held by a group? ──yes──► skip (a re-read: our pending
 *    │        (XREADGROUP ">", our own         list after a reconnect, a claim)
 *    │         pending list paged from "0",
 *    │         XAUTOCLAIM of orphans)
 *    ▼
 *   unparsable / no route / trimmed ──► dead letter (fl:alerts:dead) ──► ACK
 *   taken into its group's state in Redis (whatever silences say):
 *     a new state of its alert, or nothing new to a group with a version
 *     not yet notified ──► HELD by the group
 *     nothing new to a group already notified ──► ACK
 *    ▼
 *   due (group_wait / group_interval / repeat_interval) ──► the group
 *   loaded from Redis, silenced alerts muted ──► the version already
 *   notified (by us or a peer), or nothing left to say ──► settled, ACK
 *    ▼
 *   notification built ──► POST ──2xx──► settled: the version recorded as
 *                            │            notified, ACK every entry it covered
 *                            ├─ 5xx/408/429/timeout/refused ──► retry after
 *                            │   backoff (0.5 s x 1.5, +-50 %, <= 60 s): the
 *                            │   same body and key while the group's version
 *                            │   is unchanged, else the newest state instead;
 *                            │   after give_up_after ──► dead letter ──► ACK
 *                            └─ other 4xx ──► dead letter with the body ──► ACK
 *
 * Nothing is acknowledged before a 2xx, a dead letter Redis confirmed, or
 * Redis saying the version was notified.  What is held but not acknowledged
 * stays pending in the consumer group: a restarted alerter reads its whole
 * pending list back (paged), a running one re-reads it after a reconnect
 * (held entries are skipped, never acknowledged twice), and refreshes the
 * idle time of what it holds — while still its own — every claim_idle/4 so
 * that another alerter's XAUTOCLAIM takes over only the entries of a
 * consumer that stopped (idle for claim_idle).
 *
 * The idempotency key (X-Faultline-Idempotency-Key) is derived from the
 * receiver, the group and the group's version (plus the repeat number of a
 * repeat notification): one version is one content, so the same
 * notification rebuilt after a restart, or by a peer, carries the same key.
 */
#ifndef FL_ALERTER_H
#define FL_ALERTER_H

#include <stddef.h>
#include <stdint.h>

struct conn;	/* a connection from conn_open (store/conn.h) */

#include "core/config_schema.h"
#include "core/digest.h"
#include "model/alert.h"
#include "store/silence.h"
#include "core/strbuf.h"
#include "alerter/route.h"
#include "alerter/inhibit.h"
#include "alerter/time_interval.h"

#define MAX_INTEGRATIONS 64	/* every receiver's configs together */
#define MAX_RECEIVER_NAMES 64

enum payload_format {
	FMT_ALERTMANAGER,
	FMT_SLACK,
	FMT_PAGERDUTY,
	FMT_ALERTMANAGER_API,	/* POST /api/v2/alerts of an Alertmanager, as Prometheus does */
};

/*
 * An alertmanager_api receiver resends what fires every resend_interval (as
 * Prometheus' resend delay, so Alertmanager does not let it expire) with
 * endsAt = now + 4 x resend_interval, and sends resolutions with their endsAt.
 */
#define AM_API_RESEND_NS (60ULL * 1000000000ULL)

/*
 * One integration: a place a receiver sends to (an Alertmanager receiver's
 * webhook_configs, slack_configs, pagerduty_configs or faultline_configs
 * entry, or a faultline receiver with its url).  A group notifies one.
 */
struct integration {
	char name[96];		/* "oncall" (faultline's shape) or "oncall/webhook[0]" */
	char receiver[64];	/* the receiver it belongs to: payloads say this */
	char url[512];
	enum payload_format format;
	char secret[256];
	char routing_key[128];	/* PagerDuty */
	uint64_t timeout_ns;
	struct label headers[16];
	int nheaders;
	int max_concurrency;
	int allow_plain_http;
	int insecure_skip_verify;
	uint64_t resend_interval_ns;	/* alertmanager_api: repeat firing alerts this often */
	int send_resolved;		/* resolutions are notified (else only settled) */
	char channel[128];		/* slack: the channel, "" the webhook's own */
	char username[128];		/* slack */
	/* http_config */
	char ca_file[256], cert_file[256], key_file[256], server_name[256];
	char basic_user[128], basic_password[256];
	char auth_type[32], auth_credentials[512];	/* Authorization: TYPE CREDENTIALS */
	int follow_redirects;
};

/* A receiver by name: its integrations, integrations[first .. first + n). */
struct receiver_name {
	char name[64];
	int first, n;
};

struct alerter_config {
	char redis_url[512];
	char external_url[256];
	char consumer[64];
	uint64_t group_wait_ns, group_interval_ns, repeat_interval_ns;
	/*
	 * A new group that holds a firing severity="page" alert waits this
	 * long instead of group_wait when it is shorter (faultline's; 0 by
	 * default: a page goes out as it comes, docs/alerter.md).
	 */
	uint64_t page_group_wait_ns;
	struct integration integrations[MAX_INTEGRATIONS];
	int nintegrations;
	struct receiver_name receiver_names[MAX_RECEIVER_NAMES];
	int nreceiver_names;
	struct route root;		/* the routing tree (route.h) */
	int has_root;
	struct time_interval *time_intervals;	/* time_intervals + mute_time_intervals */
	int ntime_intervals;
	struct inhibit_rule *inhibit_rules;	/* inhibit.h */
	int ninhibit_rules;
	/* Alertmanager's global: section, the defaults of its receivers' configs */
	char slack_api_url[512];
	char pagerduty_url[512];
	struct integration global_http;	/* only its http_config fields */
	int global_follow_redirects_set;	/* global.http_config said follow_redirects */
	uint32_t top_stacks;
	uint64_t evidence_window_ns;
	size_t max_payload_bytes;
	uint64_t backoff_initial_ns, backoff_max_ns;
	uint64_t claim_idle_ns;		/* another alerter's entry is taken over after this */
	uint64_t give_up_after_ns;	/* a notification failing this long is dead-lettered; 0 never */
	char log_level[16];
	char metrics_addr[64];		/* the alerter's own /metrics; "" off */
	char web_config[256];		/* its TLS and basic auth (exporter-toolkit file) */
};

/* The embedded default (etc/alerter.yaml). */
extern const char alerter_default_config[];

/* Defaults, then the YAML text on top. Returns 0 or -EINVAL (file:line:col in err). */
int alerter_config_parse(struct alerter_config *c, const char *name, const char *text,
			 size_t len, char *err, size_t errlen);
int alerter_config_load(struct alerter_config *c, const char *path, char *err, size_t errlen);
void alerter_config_free(struct alerter_config *c);

/* The config's keys, one row each (core/config_schema.h). */
extern const struct cfg_field alerter_config_schema[];
extern const size_t alerter_config_nschema;

/* One alert inside a group, with the stream entry it came from. */
struct group_alert {
	struct alert a;
	char entry_id[32];
};

/*
 * Build the body for receiver r of a notification of alerts[0..n) of the
 * group with key `group_key` and group labels; evidence is read from
 * Redis through rc (NULL: none).  Returns 0 or -ENOMEM.
 */
int payload_build(const struct alerter_config *cfg, const struct integration *r,
		  const char *group_key, const struct label *group_labels, int ngroup_labels,
		  struct group_alert *const *alerts, int n, struct conn *rc, struct strbuf *out);

/*
 * sha256=HMAC-SHA256(secret, ts "." idem "." body) as lowercase hex, into
 * out (72 bytes): the signature covers the timestamp (a receiver refuses
 * old ones: replays) and the idempotency key (a replay under another key
 * would pass a receiver's duplicate check).
 */
void sign_body(const char *secret, uint64_t ts, const char *idem, const char *body, size_t len,
	       char *out);


/* 1 if url's host is a loopback address or "localhost". */
int url_is_loopback(const char *url);

/* url's host into host and its port (the scheme's default if none); -1 when unparsable. */
int url_host_port(const char *url, char *host, size_t hostlen);

/* url with its host replaced by host, into out.  Returns 0 or -1. */
int url_with_host(const char *url, const char *host, char *out, size_t outlen);

#endif
