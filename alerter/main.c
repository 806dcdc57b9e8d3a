/*
 * main.c - faultline-alerter: consume fl:alerts, group, deliver; see
 * alerter.h for the flow and guarantees.
 *
 * One thread.  Redis is read with XREADGROUP, blocking (at most 200 ms)
 * only when no transfer runs and no group is due, so the loop also ticks
 * the group timers and drives libcurl's multi
 * interface: several receivers' requests are in flight at once, at most
 * max_concurrency per receiver.  A group has at most one notification in
 * flight; its retries reuse the same body and idempotency key.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "alerter/alerter.h"
#include "core/backoff.h"
#include "core/config.h"
#include "core/log.h"
#include "core/promtext.h"
#include "probes/metrics_server.h"
#include "core/notify.h"
#include "store/conn.h"
#include "store/alert_stream.h"
#include "store/keyspace.h"
#include "store/store.h"
#include "core/strmap.h"
#include "core/timeutil.h"

#define STREAM KEY_ALERTS		/* for messages; store/keyspace.h owns them */
#define DEAD_STREAM KEY_ALERTS_DEAD
#define GROUP KEY_ALERTS_GROUP
#define PAGE 100			/* entries per XREADGROUP / XAUTOCLAIM page */

struct group {
	char key[512];
	int receiver;
	struct label glabels[MAX_GROUP_BY];
	int ngl;
	struct group_alert **alerts;
	int nalerts;
	char (*ids)[32];		/* stream entries folded into this group, unacked */
	int nids;
	uint64_t created_ns, last_sent_ns;
	int changed, sent_once;
	uint32_t repeats;		/* repeat notifications sent of unchanged content */
	/* the notification in flight or waiting to be retried */
	CURL *easy;
	struct curl_slist *hdrs;
	struct strbuf body;
	char idem[65];
	int nids_sent;
	int attempts;
	struct backoff backoff;
	uint64_t retry_at_ns;
	int pending;			/* a notification exists (in flight or waiting) */
	int in_flight;
	char errbuf[CURL_ERROR_SIZE];
	char answer[400];		/* the start of the receiver's answer, for logs */
	size_t answer_len;
};

struct alerter {
	struct alerter_config cfg;
	struct conn *rc;
	char redis_shown[512];		/* the URL with its password masked, for logs */
	CURLM *multi;
	struct group **groups;
	int ngroups;
	int inflight[MAX_RECEIVERS];
	struct silence *silences;
	int nsilences;
	uint64_t silences_at;
	struct strmap held;		/* entry ids some group holds unacked */
	int read_pending;		/* our own pending list must be read (start, reconnect) */
	uint64_t claim_at_ns;		/* next XAUTOCLAIM + refresh of held entries */
	struct backoff redis_backoff;	/* Redis unreachable or answering errors */
	uint64_t redis_retry_at_ns;
	uint64_t redis_error_said_ns;	/* rate limit for repeated Redis errors */
	/* self-monitoring (--metrics-addr), named as Alertmanager names them */
	uint64_t sent[MAX_RECEIVERS], failed[MAX_RECEIVERS], refused[MAX_RECEIVERS];
	uint64_t received[2];		/* events read: [0] resolved, [1] firing */
	uint64_t dead_letters, redis_errors, redis_reconnects;
};

static volatile sig_atomic_t stopping;

static const char *const format_names[] = {
	[FMT_ALERTMANAGER] = "webhook", [FMT_SLACK] = "slack", [FMT_PAGERDUTY] = "pagerduty",
	[FMT_ALERTMANAGER_API] = "alertmanager",
};

/*
 * The alerter's own metrics, for /metrics, under Alertmanager's names
 * where it has the same thing (alertmanager_notifications_total per
 * integration, _failed_total by reason, alerts received by status), so
 * the alerts and dashboards kept for Alertmanager read them unchanged.
 */
/* {receiver="...",integration="..."[,reason="..."]}, the name escaped (it is the config's) */
static void receiver_labels(struct strbuf *sb, const struct receiver *r, const char *reason)
{
	strbuf_adds(sb, "{");
	promtext_label(sb, "receiver", r->name, 1);
	promtext_label(sb, "integration", format_names[r->format], 0);
	if (reason)
		promtext_label(sb, "reason", reason, 0);
	strbuf_adds(sb, "}");
}

static void render_metrics(const struct alerter *al, struct strbuf *sb)
{
	const struct alerter_config *cfg = &al->cfg;
	size_t held = 0;

	for (int i = 0; i < al->ngroups; i++)
		held += (size_t)al->groups[i]->nids;
	strbuf_adds(sb, "# HELP alertmanager_notifications_total Notifications delivered "
		    "(2xx), per receiver and integration.\n"
		    "# TYPE alertmanager_notifications_total counter\n");
	for (int r = 0; r < cfg->nreceivers; r++) {
		strbuf_adds(sb, "alertmanager_notifications_total");
		receiver_labels(sb, &cfg->receivers[r], NULL);
		strbuf_addf(sb, " %llu\n", (unsigned long long)al->sent[r]);
	}
	strbuf_adds(sb, "# HELP alertmanager_notifications_failed_total Notification "
		    "attempts that failed: retried (5xx, timeout, refused connection) or refused "
		    "(4xx, dead-lettered).\n"
		    "# TYPE alertmanager_notifications_failed_total counter\n");
	for (int r = 0; r < cfg->nreceivers; r++) {
		strbuf_adds(sb, "alertmanager_notifications_failed_total");
		receiver_labels(sb, &cfg->receivers[r], "retried");
		strbuf_addf(sb, " %llu\n", (unsigned long long)al->failed[r]);
		strbuf_adds(sb, "alertmanager_notifications_failed_total");
		receiver_labels(sb, &cfg->receivers[r], "refused");
		strbuf_addf(sb, " %llu\n", (unsigned long long)al->refused[r]);
	}
	strbuf_addf(sb, "# HELP alertmanager_alerts_received_total Alert events read from "
		    "fl:alerts, by status.\n# TYPE alertmanager_alerts_received_total counter\n"
		    "alertmanager_alerts_received_total{status=\"firing\"} %llu\n"
		    "alertmanager_alerts_received_total{status=\"resolved\"} %llu\n",
		    (unsigned long long)al->received[1], (unsigned long long)al->received[0]);
	strbuf_addf(sb, "# HELP faultline_alerter_dead_letters_total Entries and notifications "
		    "written to fl:alerts:dead.\n# TYPE faultline_alerter_dead_letters_total counter\n"
		    "faultline_alerter_dead_letters_total %llu\n",
		    (unsigned long long)al->dead_letters);
	strbuf_addf(sb, "# HELP faultline_alerter_held_entries Stream entries held by groups, "
		    "not yet delivered (the queue).\n# TYPE faultline_alerter_held_entries gauge\n"
		    "faultline_alerter_held_entries %zu\n", held);
	strbuf_addf(sb, "# HELP faultline_alerter_groups Alert groups in memory.\n"
		    "# TYPE faultline_alerter_groups gauge\nfaultline_alerter_groups %d\n",
		    al->ngroups);
	strbuf_addf(sb, "# HELP faultline_alerter_redis_errors_total Redis connections lost and "
		    "commands Redis refused.\n# TYPE faultline_alerter_redis_errors_total counter\n"
		    "faultline_alerter_redis_errors_total %llu\n",
		    (unsigned long long)al->redis_errors);
	strbuf_addf(sb, "# HELP faultline_alerter_redis_up Whether the alerter holds a Redis "
		    "connection.\n# TYPE faultline_alerter_redis_up gauge\n"
		    "faultline_alerter_redis_up %d\n", al->rc != NULL);
}

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
"Usage: faultline-alerter [--config FILE] [--redis URL] [--log-level LEVEL]\n"
"\n"
"Consume alert events from the fl:alerts stream (consumer group \"alerter\"),\n"
"group and deduplicate them, and deliver signed webhooks: Alertmanager-\n"
"compatible JSON (version 4) with a \"faultline\" evidence section, Slack, or\n"
"PagerDuty Events v2.  An event is acknowledged only after its receiver\n"
"answered 2xx or it was dead-lettered to fl:alerts:dead (4xx, unparsable, no\n"
"route); 5xx and network errors are retried with backoff (0.5 s x 1.5,\n"
"jittered, up to 60 s).  Unacknowledged events survive restarts and are\n"
"taken over by another alerter after 60 s.  The built-in default config is\n"
"etc/alerter.yaml (--print-config shows it).\n"
"\n"
"  -c, --config FILE     read FILE instead of the built-in default (default:\n"
"                        /etc/faultline/alerter.yaml or /usr/local/etc/faultline/\n"
"                        alerter.yaml when installed there)\n"
"  -r, --redis URL       override the config's redis\n"
"  -l, --log-level LVL   error, warn, info or debug\n"
"      --log-format FMT  text (default), json or logfmt, for log shippers\n"
"      --web-config FILE TLS and basic auth for /metrics (Prometheus'\n"
"                        exporter-toolkit web config format; default: the\n"
"                        config's web_config)\n"
"  -m, --metrics-addr A  serve the alerter's own metrics (notifications sent and\n"
"                        failed per receiver, dead letters, held entries,\n"
"                        Redis errors) as Prometheus text on http://A/metrics,\n"
"                        e.g. 127.0.0.1:9466 (default: the config's\n"
"                        metrics_addr, off when empty)\n"
"      --print-config    print the built-in default config and exit\n"
"      --config-reference  print every config key (type, bounds, default,\n"
"                        description) as a Markdown table and exit\n"
"  -h, --help            this text\n"
"  -V, --version         print the version\n");
}

/* ---- Redis ------------------------------------------------------------- */

/*
 * Every Redis exchange of the alerter is in this section.  A command that
 * fails on the connection drops it (redis_lost); one Redis answers with an
 * error (WRONGTYPE, NOGROUP, OOM...) is logged at most every 10 s and the
 * Redis work backs off, so a misconfigured key is not a busy loop.
 */

static void redis_lost(struct alerter *al)
{
	log_warn("lost the redis connection to %s (%s); reconnecting", al->redis_shown,
		 al->rc && conn_errstr(al->rc)[0] ? conn_errstr(al->rc) : "error");
	if (al->rc)
		conn_close(al->rc);
	al->rc = NULL;
	al->redis_errors++;
	al->redis_retry_at_ns = time_mono_ns() + backoff_next(&al->redis_backoff);
}

/* Redis answered an error (msg: "COMMAND KEY: error"): log (rate-limited) and back off. */
static void redis_refused(struct alerter *al, const char *msg)
{
	uint64_t now = time_mono_ns(), delay = backoff_next(&al->redis_backoff);

	al->redis_errors++;

	if (!al->redis_error_said_ns || now - al->redis_error_said_ns >= 10 * NSEC_PER_SEC) {
		if (strstr(msg, "WRONGTYPE"))
			log_error("%s: the key %s is not a stream; rename or delete it "
				  "(redis-cli TYPE %s) — alerts cannot be read until then",
				  msg, STREAM, STREAM);
		else
			log_error("%s; retrying in %.1f s", msg, (double)delay / 1e9);
		al->redis_error_said_ns = now;
	}
	al->redis_retry_at_ns = now + delay;
}

/*
 * What an alert_stream call returned, applied: a dropped connection is
 * dropped here too, a refusal backs off; a stream or group that is gone
 * (Redis restarted empty) reconnects, which creates the group again.
 * Returns ret, or -1 for any failure.
 */
static int redis_result(struct alerter *al, int ret, const char *err)
{
	if (ret == ALERT_STREAM_LOST) {
		redis_lost(al);
	} else if (ret == ALERT_STREAM_REFUSED) {
		redis_refused(al, err);
	} else if (ret == ALERT_STREAM_NOGROUP) {
		redis_refused(al, err);
		redis_lost(al);
	}
	return ret < 0 ? -1 : ret;
}

/* 1 when Redis work may run now. */
static int redis_ready(struct alerter *al)
{
	return al->rc && time_mono_ns() >= al->redis_retry_at_ns;
}

static int ensure_redis(struct alerter *al)
{
	char err[300];

	if (al->rc)
		return 0;
	if (time_mono_ns() < al->redis_retry_at_ns)
		return -1;
	al->rc = conn_open(al->cfg.redis_url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!al->rc) {
		uint64_t delay = backoff_next(&al->redis_backoff);

		log_warn("%s; retrying in %.1f s", err, (double)delay / 1e9);
		al->redis_retry_at_ns = time_mono_ns() + delay;
		return -1;
	}
	if (redis_result(al, alert_stream_create_group(al->rc, err, sizeof(err)), err) < 0 &&
	    !al->rc)
		return -1;
	log_info("connected to %s", al->redis_shown);
	backoff_reset(&al->redis_backoff);
	al->read_pending = 1;	/* what we held may be ours again, or gone */
	al->claim_at_ns = 0;
	return 0;
}

/*
 * Acknowledge ids (one XACK) and forget them.  Returns 0, or -1 when the
 * acknowledgement was not confirmed (the entries stay pending in Redis and
 * are read again after the reconnect; what they carry is then a repeat).
 */
static int ack(struct alerter *al, char (*ids)[32], int n)
{
	const char **argv;
	char err[300];
	int ret;

	for (int i = 0; i < n; i++)
		strmap_del(&al->held, ids[i]);
	if (!n)
		return 0;
	if (!al->rc)
		return -1;
	argv = malloc((size_t)n * sizeof(*argv));
	if (!argv)
		return -1;
	for (int i = 0; i < n; i++)
		argv[i] = ids[i];
	ret = redis_result(al, alert_stream_ack(al->rc, argv, n, err, sizeof(err)), err);
	free(argv);
	return ret < 0 ? -1 : 0;
}

static int ack_one(struct alerter *al, const char *id)
{
	char one[1][32];

	snprintf(one[0], sizeof(one[0]), "%s", id);
	return ack(al, one, 1);
}

/*
 * Put a dead letter on fl:alerts:dead: why, which group and receiver (empty
 * when it never reached one), the stream entries it stands for, and the
 * event or notification body.  One shape for every reason.  Returns 0 once
 * Redis has it; the caller acknowledges the entries only then.
 */
static int dead_letter(struct alerter *al, const char *reason, const char *group,
		       const char *receiver, const char *ids, const char *body, size_t len)
{
	char err[300];
	int ret;

	if (!al->rc)
		return -1;
	ret = redis_result(al, alert_stream_dead_letter(al->rc, reason, group, receiver, ids, body,
							len, err, sizeof(err)), err);
	al->dead_letters += ret == 0;
	return ret < 0 ? -1 : 0;
}

/* Append a record of what happened to a notification (sent, silenced). */
static void record(struct alerter *al, const char *what, const char *group, const char *detail)
{
	char err[300];

	if (al->rc && alert_stream_record(al->rc, what, group, detail, err, sizeof(err)) ==
	    ALERT_STREAM_LOST)
		redis_lost(al);
}

/* Stream ids "ms-seq" in stream order (-1, 0, 1). */
static int entry_id_cmp(const char *a, const char *b)
{
	unsigned long long am = 0, as = 0, bm = 0, bs = 0;

	sscanf(a, "%llu-%llu", &am, &as);
	sscanf(b, "%llu-%llu", &bm, &bs);
	return am != bm ? (am < bm ? -1 : 1) : as != bs ? (as < bs ? -1 : 1) : 0;
}

/* ---- grouping ---------------------------------------------------------- */

static int route_of(const struct alerter_config *cfg, const struct alert *a)
{
	for (int i = 0; i < cfg->nroutes; i++) {
		int all = 1;

		for (int k = 0; k < cfg->routes[i].nm && all; k++)
			all = matcher_match(&cfg->routes[i].m[k], a);
		if (all)
			return i;
	}
	return -1;
}

static struct group *group_for(struct alerter *al, int route, const struct alert *a)
{
	const struct route *rt = &al->cfg.routes[route];
	char key[512];
	size_t off;
	struct group *g, **n;

	off = (size_t)snprintf(key, sizeof(key), "%s:{", al->cfg.receivers[rt->receiver].name);
	for (int i = 0; i < rt->ngroup_by && off < sizeof(key); i++) {
		const char *v = alert_label(a, rt->group_by[i]);

		off += (size_t)snprintf(key + off, sizeof(key) - off, "%s%s=\"%s\"", i ? "," : "",
					rt->group_by[i], v ? v : "");
	}
	if (off < sizeof(key))
		snprintf(key + off, sizeof(key) - off, "}");
	for (int i = 0; i < al->ngroups; i++)
		if (!strcmp(al->groups[i]->key, key))
			return al->groups[i];
	g = calloc(1, sizeof(*g));
	n = realloc(al->groups, (size_t)(al->ngroups + 1) * sizeof(*n));
	if (!g || !n) {
		free(g);
		return NULL;
	}
	al->groups = n;
	snprintf(g->key, sizeof(g->key), "%s", key);
	g->receiver = rt->receiver;
	for (int i = 0; i < rt->ngroup_by; i++) {
		const char *v = alert_label(a, rt->group_by[i]);

		g->glabels[g->ngl].key = strdup(rt->group_by[i]);
		g->glabels[g->ngl].value = strdup(v ? v : "");
		g->ngl++;
	}
	g->created_ns = time_mono_ns();
	strbuf_init(&g->body);
	al->groups[al->ngroups++] = g;
	return g;
}

/* Hold entry id in g until a notification carrying it is delivered. */
static void hold(struct alerter *al, struct group *g, const char *id)
{
	char (*n)[32] = realloc(g->ids, (size_t)(g->nids + 1) * sizeof(*n));

	if (!n) {
		/* not held: it stays pending in Redis and comes back on a re-read */
		log_error("out of memory holding %s entry %s", STREAM, id);
		return;
	}
	g->ids = n;
	snprintf(g->ids[g->nids++], 32, "%s", id);
	strmap_put(&al->held, id, 1);
}

static void drop_alert(struct group_alert *ga)
{
	alert_free(&ga->a);
	free(ga);
}

/*
 * Take stream entry id (an event, json) into its group.  An entry some
 * group already holds is a re-read (our pending list after a reconnect, a
 * claim): it is skipped, never acknowledged again.  Otherwise the entry is
 * either acknowledged now because it tells nothing new — a copy of a state
 * the group already holds or delivered (same status and startsAt), or older
 * than the state held — or dead-lettered, or held by its group until the
 * notification that carries it is delivered.  A firing event whose startsAt
 * differs from the firing alert held is a new incident, never a duplicate.
 */
/* Record that ga's entry is the newest of its alert this alerter took (several alerters). */
static void mark_latest(struct alerter *al, const struct group_alert *ga)
{
	char err[256];

	if (redis_ready(al))
		redis_result(al, alert_stream_mark_latest(al->rc, ga->a.fingerprint, ga->entry_id,
							  err, sizeof(err)), err);
}

/*
 * Drop from g the alerts another alerter has since taken a newer event of
 * (several alerters on one group): that state is the other's to notify,
 * and this one's would arrive after it, out of date.  Their entries stay
 * in g->ids and are acknowledged with g's next notification.
 */
static void drop_superseded(struct alerter *al, struct group *g)
{
	const char **fps = calloc((size_t)g->nalerts + 1, sizeof(*fps));
	const char **ids = calloc((size_t)g->nalerts + 1, sizeof(*ids));
	char *newer = calloc((size_t)g->nalerts + 1, 1), err[256];
	int n = g->nalerts;

	if (!fps || !ids || !newer || !redis_ready(al))
		goto out;
	for (int i = 0; i < n; i++) {
		fps[i] = g->alerts[i]->a.fingerprint;
		ids[i] = g->alerts[i]->entry_id;
	}
	if (redis_result(al, alert_stream_superseded(al->rc, fps, ids, n, newer, err,
						     sizeof(err)), err) < 0)
		goto out;
	for (int i = n - 1; i >= 0; i--) {
		if (!newer[i])
			continue;
		log_info("%s %s: another alerter took a newer event of this alert; leaving it "
			 "to that one", alert_label(&g->alerts[i]->a, "alertname"),
			 g->alerts[i]->a.fingerprint);
		drop_alert(g->alerts[i]);
		g->alerts[i] = g->alerts[--g->nalerts];
		g->changed = 1;
	}
out:
	free(fps);
	free(ids);
	free(newer);
}

static void take_event(struct alerter *al, const char *id, const char *json, size_t len)
{
	struct group_alert *ga;
	const struct silence *sil;
	struct group *g;
	char err[256];
	uint32_t dummy;
	int route;

	if (strmap_get(&al->held, id, &dummy))
		return;
	ga = calloc(1, sizeof(*ga));
	if (!ga)
		return;
	if (alert_parse(&ga->a, json, len, err, sizeof(err))) {
		log_error("%s entry %s is not an alert event (%s); dead-lettered to %s", STREAM, id,
			  err, DEAD_STREAM);
		if (dead_letter(al, err, "", "", id, json, len) == 0)
			ack_one(al, id);
		free(ga);
		return;
	}
	snprintf(ga->entry_id, sizeof(ga->entry_id), "%s", id);
	ga->sent_state = -1;
	al->received[ga->a.firing ? 1 : 0]++;
	sil = silence_find(al->silences, al->nsilences, &ga->a, time_wall_ns() / NSEC_PER_MSEC);
	if (sil) {
		char detail[800];

		snprintf(detail, sizeof(detail), "%s %s silenced by %s (%s)", ga->a.fingerprint,
			 alert_label(&ga->a, "alertname"), sil->id, sil->comment);
		record(al, "silenced", alert_label(&ga->a, "alertname"), detail);
		log_info("%s", detail);
		ack_one(al, id);
		drop_alert(ga);
		return;
	}
	route = route_of(&al->cfg, &ga->a);
	if (route < 0) {
		log_warn("alert %s matches no route; dead-lettered to %s (add a catch-all route)",
			 alert_label(&ga->a, "alertname"), DEAD_STREAM);
		if (dead_letter(al, "no route", "", "", id, json, len) == 0)
			ack_one(al, id);
		drop_alert(ga);
		return;
	}
	g = group_for(al, route, &ga->a);
	if (!g) {
		drop_alert(ga);
		return;
	}
	for (int i = 0; i < g->nalerts; i++) {
		struct group_alert *held = g->alerts[i];

		if (strcmp(held->a.fingerprint, ga->a.fingerprint))
			continue;
		if (entry_id_cmp(id, held->entry_id) < 0 ||
		    (held->a.firing == ga->a.firing && held->a.starts_ms == ga->a.starts_ms)) {
			/*
			 * Older than what we hold, or the same state again: the entry that
			 * carries the state is held (or was delivered), so this one may go.
			 */
			ack_one(al, id);
			drop_alert(ga);
			return;
		}
		/* the newest state wins; a different startsAt is a new incident */
		g->changed = 1;
		ga->sent_state = held->sent_state;
		if (ga->a.firing && held->a.starts_ms != ga->a.starts_ms)
			ga->sent_state = -1;
		drop_alert(held);
		g->alerts[i] = ga;
		hold(al, g, id);
		mark_latest(al, ga);
		return;
	}
	{
		struct group_alert **n = realloc(g->alerts, (size_t)(g->nalerts + 1) * sizeof(*n));

		if (!n) {
			drop_alert(ga);
			return;
		}
		g->alerts = n;
		g->alerts[g->nalerts++] = ga;
		g->changed = 1;
	}
	hold(al, g, id);
	mark_latest(al, ga);
}

/* ---- delivery ---------------------------------------------------------- */

/* Keep the start of the receiver's answer (why it refused, in its words); drop the rest. */
static size_t keep_answer(char *p, size_t s, size_t n, void *u)
{
	struct group *g = u;
	size_t len = s * n;

	for (size_t i = 0; i < len && g->answer_len + 1 < sizeof(g->answer); i++) {
		unsigned char c = (unsigned char)p[i];

		g->answer[g->answer_len++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
	}
	g->answer[g->answer_len] = 0;
	return len;
}

static void start_request(struct alerter *al, struct group *g)
{
	const struct receiver *r = &al->cfg.receivers[g->receiver];
	char sig[80], hdr[600], ts[32];
	uint64_t now = time_wall_ns() / NSEC_PER_SEC;

	g->easy = curl_easy_init();
	if (!g->easy)
		return;
	g->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	snprintf(ts, sizeof(ts), "%llu", (unsigned long long)now);
	snprintf(hdr, sizeof(hdr), "X-Faultline-Timestamp: %s", ts);
	g->hdrs = curl_slist_append(g->hdrs, hdr);
	if (r->secret[0]) {
		sign_body(r->secret, now, strbuf_str(&g->body), g->body.len, sig);
		snprintf(hdr, sizeof(hdr), "X-Faultline-Signature: %s", sig);
		g->hdrs = curl_slist_append(g->hdrs, hdr);
	}
	snprintf(hdr, sizeof(hdr), "X-Faultline-Idempotency-Key: %s", g->idem);
	g->hdrs = curl_slist_append(g->hdrs, hdr);
	snprintf(hdr, sizeof(hdr), "User-Agent: faultline-alerter/%s", FL_VERSION);
	g->hdrs = curl_slist_append(g->hdrs, hdr);
	for (int i = 0; i < r->nheaders; i++) {
		snprintf(hdr, sizeof(hdr), "%s: %s", r->headers[i].key, r->headers[i].value);
		g->hdrs = curl_slist_append(g->hdrs, hdr);
	}
	curl_easy_setopt(g->easy, CURLOPT_URL, r->url);
	curl_easy_setopt(g->easy, CURLOPT_HTTPHEADER, g->hdrs);
	curl_easy_setopt(g->easy, CURLOPT_POSTFIELDS, strbuf_str(&g->body));
	curl_easy_setopt(g->easy, CURLOPT_POSTFIELDSIZE, (long)g->body.len);
	curl_easy_setopt(g->easy, CURLOPT_TIMEOUT_MS, (long)(r->timeout_ns / NSEC_PER_MSEC));
	curl_easy_setopt(g->easy, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(g->easy, CURLOPT_NOSIGNAL, 1L);
	g->answer_len = 0;
	g->answer[0] = 0;
	curl_easy_setopt(g->easy, CURLOPT_WRITEFUNCTION, keep_answer);
	curl_easy_setopt(g->easy, CURLOPT_WRITEDATA, g);
	curl_easy_setopt(g->easy, CURLOPT_ERRORBUFFER, g->errbuf);
	curl_easy_setopt(g->easy, CURLOPT_PRIVATE, g);
	if (r->insecure_skip_verify) {
		curl_easy_setopt(g->easy, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(g->easy, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	curl_multi_add_handle(al->multi, g->easy);
	g->in_flight = 1;
	g->attempts++;
	al->inflight[g->receiver]++;
}

/*
 * When g next wants something done (mono ns): a retry, acknowledging what
 * it holds, its first notification after group_wait, a change after
 * group_interval, a repeat; UINT64_MAX when nothing.
 */
static uint64_t group_due_at(const struct alerter *al, const struct group *g)
{
	const struct alerter_config *cfg = &al->cfg;
	int firing = 0;

	if (g->pending)
		return g->in_flight ? UINT64_MAX : g->retry_at_ns;
	if (!g->nalerts)
		return g->nids ? 0 : UINT64_MAX;
	for (int i = 0; i < g->nalerts; i++)
		firing |= g->alerts[i]->a.firing;
	if (!g->sent_once)
		return g->created_ns + cfg->group_wait_ns;
	if (g->changed)
		return g->last_sent_ns + cfg->group_interval_ns;
	if (!firing)
		return UINT64_MAX;
	if (cfg->receivers[g->receiver].format == FMT_ALERTMANAGER_API &&
	    cfg->receivers[g->receiver].resend_interval_ns < cfg->repeat_interval_ns)
		return g->last_sent_ns + cfg->receivers[g->receiver].resend_interval_ns;
	return g->last_sent_ns + cfg->repeat_interval_ns;
}

static int by_fingerprint(const void *a, const void *b)
{
	const struct group_alert *x = *(struct group_alert *const *)a;
	const struct group_alert *y = *(struct group_alert *const *)b;

	return strcmp(x->a.fingerprint, y->a.fingerprint);
}

/*
 * The notification's idempotency key: SHA-256 of the receiver, the group
 * and, in fingerprint order, each alert's fingerprint, status and startsAt
 * (plus the repeat number of a repeat notification).  Content only: the
 * same notification rebuilt after a restart carries the same key, so a
 * receiver can drop the redelivery; a new incident (new startsAt) or a
 * resolution gets a new one.
 */
static void idempotency_key(const char *receiver, struct group *g, char out[65])
{
	struct strbuf k = STRBUF_INIT;
	struct group_alert **sorted = malloc((size_t)g->nalerts * sizeof(*sorted) + 1);

	strbuf_addf(&k, "%s|%s", receiver, g->key);
	if (sorted) {
		memcpy(sorted, g->alerts, (size_t)g->nalerts * sizeof(*sorted));
		qsort(sorted, (size_t)g->nalerts, sizeof(*sorted), by_fingerprint);
		for (int i = 0; i < g->nalerts; i++)
			strbuf_addf(&k, "|%s:%s:%llu", sorted[i]->a.fingerprint,
				    sorted[i]->a.firing ? "firing" : "resolved",
				    (unsigned long long)sorted[i]->a.starts_ms);
		free(sorted);
	}
	if (g->repeats)
		strbuf_addf(&k, "|repeat:%u", g->repeats);
	sha256_hex(strbuf_str(&k), k.len, out);
	strbuf_release(&k);
}

/* Decide whether g should send now; if so build the notification. */
static void maybe_send(struct alerter *al, struct group *g, uint64_t now)
{
	const struct alerter_config *cfg = &al->cfg;
	int due, repeat;

	if (g->pending) {
		if (!g->in_flight && now >= g->retry_at_ns &&
		    al->inflight[g->receiver] < cfg->receivers[g->receiver].max_concurrency)
			start_request(al, g);
		return;
	}
	if (!g->nalerts) {
		/* entries that carried nothing new: acknowledge them */
		if (g->nids) {
			ack(al, g->ids, g->nids);
			g->nids = 0;
		}
		return;
	}
	due = now >= group_due_at(al, g);
	if (!due || al->inflight[g->receiver] >= cfg->receivers[g->receiver].max_concurrency)
		return;
	drop_superseded(al, g);
	if (!g->nalerts)
		return;		/* its entries are acknowledged on the next pass */
	repeat = g->sent_once && !g->changed;
	g->repeats = repeat ? g->repeats + 1 : 0;
	strbuf_reset(&g->body);
	if (payload_build(cfg, &cfg->receivers[g->receiver], g->key, g->glabels, g->ngl,
			  g->alerts, g->nalerts, al->rc, &g->body)) {
		log_error("out of memory building a notification for %s", g->key);
		return;
	}
	idempotency_key(cfg->receivers[g->receiver].name, g, g->idem);
	g->nids_sent = g->nids;
	for (int i = 0; i < g->nalerts; i++)
		g->alerts[i]->sent_state = g->alerts[i]->a.firing;
	g->attempts = 0;
	backoff_init(&g->backoff, cfg->backoff_initial_ns, cfg->backoff_max_ns);
	g->pending = 1;
	g->changed = 0;
	start_request(al, g);
}

/*
 * The notification g had pending is settled: delivered (2xx) or
 * dead-lettered.  Acknowledge the entries it carried (later arrivals stay
 * held for the next one).
 */
static void finish_group_send(struct alerter *al, struct group *g, int delivered)
{
	ack(al, g->ids, g->nids_sent);
	if (g->nids > g->nids_sent)
		memmove(g->ids, g->ids + g->nids_sent,
			(size_t)(g->nids - g->nids_sent) * sizeof(*g->ids));
	g->nids -= g->nids_sent;
	g->nids_sent = 0;
	g->pending = 0;
	g->sent_once = 1;
	g->last_sent_ns = time_mono_ns();
	if (delivered) {
		/* alerts whose resolution was in this notification are done */
		for (int i = 0; i < g->nalerts;) {
			if (!g->alerts[i]->a.firing && g->alerts[i]->sent_state == 0) {
				drop_alert(g->alerts[i]);
				g->alerts[i] = g->alerts[--g->nalerts];
			} else {
				i++;
			}
		}
	}
}

/* The ids g's pending notification carries, space-separated, for a dead letter. */
static void ids_text(const struct group *g, struct strbuf *out)
{
	for (int i = 0; i < g->nids_sent; i++)
		strbuf_addf(out, "%s%s", i ? " " : "", g->ids[i]);
}

static void on_done(struct alerter *al, CURLMsg *msg)
{
	struct group *g;
	const struct alerter_config *cfg = &al->cfg;
	long code = 0;
	char detail[512];
	CURLcode result = msg->data.result;	/* msg is gone after the cleanup below */

	curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&g);
	curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
	curl_multi_remove_handle(al->multi, msg->easy_handle);
	curl_easy_cleanup(msg->easy_handle);
	curl_slist_free_all(g->hdrs);
	g->easy = NULL;
	g->hdrs = NULL;
	g->in_flight = 0;
	al->inflight[g->receiver]--;
	const char *rname = cfg->receivers[g->receiver].name;

	if (result == CURLE_OK && code >= 200 && code < 300) {
		snprintf(detail, sizeof(detail), "HTTP %ld after %d attempt(s)", code, g->attempts);
		log_info("delivered %s to %s (%s)", g->key, rname, detail);
		al->sent[g->receiver]++;
		record(al, "sent", g->key, detail);
		finish_group_send(al, g, 1);
		return;
	}
	if (result == CURLE_OK && code >= 400 && code < 500 && code != 408 && code != 429) {
		struct strbuf ids = STRBUF_INIT;

		al->refused[g->receiver]++;
		snprintf(detail, sizeof(detail), "HTTP %ld from %s: the receiver refused the "
			 "notification; not retried; it answered: %.300s", code, rname,
			 g->answer_len ? g->answer : "(nothing)");
		ids_text(g, &ids);
		if (dead_letter(al, detail, g->key, rname, strbuf_str(&ids), strbuf_str(&g->body),
				g->body.len) == 0) {
			log_error("%s (%s); dead-lettered to %s", detail, g->key, DEAD_STREAM);
			finish_group_send(al, g, 0);
		} else {
			/* not recorded: keep it and decide again once Redis answers */
			log_error("%s (%s); cannot dead-letter it while Redis is away: retrying",
				  detail, g->key);
			g->retry_at_ns = time_mono_ns() + backoff_next(&g->backoff);
		}
		strbuf_release(&ids);
		return;
	}
	/* 5xx, 408, 429, timeout, connection error: back off and retry */
	uint64_t delay = backoff_next(&g->backoff);

	al->failed[g->receiver]++;
	g->retry_at_ns = time_mono_ns() + delay;
	if (result != CURLE_OK)
		log_warn("delivering %s to %s failed: %s; retry %d in %.1f s", g->key, rname,
			 g->errbuf[0] ? g->errbuf : curl_easy_strerror(result),
			 g->attempts, (double)delay / 1e9);
	else
		log_warn("delivering %s to %s: HTTP %ld (%.200s); retry %d in %.1f s", g->key,
			 rname, code, g->answer_len ? g->answer : "no answer", g->attempts,
			 (double)delay / 1e9);
}

static void free_groups(struct alerter *al)
{
	for (int i = 0; i < al->ngroups; i++) {
		struct group *g = al->groups[i];

		if (g->easy) {
			curl_multi_remove_handle(al->multi, g->easy);
			curl_easy_cleanup(g->easy);
		}
		curl_slist_free_all(g->hdrs);
		for (int k = 0; k < g->nalerts; k++) {
			alert_free(&g->alerts[k]->a);
			free(g->alerts[k]);
		}
		for (int k = 0; k < g->ngl; k++) {
			free(g->glabels[k].key);
			free(g->glabels[k].value);
		}
		free(g->alerts);
		free(g->ids);
		strbuf_release(&g->body);
		free(g);
	}
	free(al->groups);
	al->groups = NULL;
	al->ngroups = 0;
}

/* ---- the loop ---------------------------------------------------------- */

/*
 * Take the entries of one stream reply: an array of [id, [field, value...]]
 * (fields nil for an entry trimmed away while pending: it can never be
 * delivered, so it is dead-lettered).  Copies the last id into last.
 * Returns the number of entries, or -1 if the reply is not of that shape.
 */
static void take_entry(const char *id, const char *event, size_t len, const char *why,
		       void *arg)
{
	struct alerter *al = arg;
	uint32_t dummy;

	if (event) {
		take_event(al, id, event, len);
		return;
	}
	if (strmap_get(&al->held, id, &dummy))
		return;
	log_error("%s entry %s: %s; dead-lettered to %s", STREAM, id, why, DEAD_STREAM);
	if (dead_letter(al, why, "", "", id, "", 0) == 0)
		ack_one(al, id);
}

/*
 * XREADGROUP from `from`: ">" for new entries (blocking up to block_ms),
 * or an id to page through our own pending list.  Returns the number of
 * entries, 0 when none, -1 on an error (connection dropped or backed off).
 */
static int read_entries(struct alerter *al, const char *from, int block_ms, char *last,
			size_t lastlen)
{
	char err[300];
	int n = redis_result(al, alert_stream_read(al->rc, al->cfg.consumer, from, PAGE, block_ms,
						   take_entry, al, last, lastlen, err,
						   sizeof(err)), err);

	if (n > 0)
		backoff_reset(&al->redis_backoff);
	return n;
}

/*
 * Read our whole pending list back, a page at a time (after a start or a
 * reconnect: what a previous run, or this one before the connection
 * dropped, read but never settled).  Entries a group already holds are
 * skipped by take_event.
 */
static void read_own_pending(struct alerter *al)
{
	char from[32] = "0";
	int n, total = 0;

	while (al->rc && (n = read_entries(al, from, 0, from, sizeof(from))) > 0)
		total += n;
	if (al->rc && n == 0) {
		al->read_pending = 0;
		if (total)
			log_info("read back %d pending %s entr%s of consumer %s", total, STREAM,
				 total == 1 ? "y" : "ies", al->cfg.consumer);
	}
}

/*
 * Keep what we hold ours: reset the idle time of every held entry (XCLAIM
 * to ourselves, JUSTID), so another alerter's XAUTOCLAIM does not take
 * entries we are still retrying.
 */
static void refresh_held(struct alerter *al)
{
	const char **ids = NULL;
	char err[300];
	int n = 0, cap = 0;

	for (int gi = 0; gi < al->ngroups; gi++) {
		const struct group *g = al->groups[gi];

		for (int i = 0; i < g->nids; i++) {
			if (n == cap) {
				int ncap = cap ? cap * 2 : 64;
				const char **m = realloc(ids, (size_t)ncap * sizeof(*m));

				if (!m) {
					free(ids);
					return;
				}
				ids = m;
				cap = ncap;
			}
			ids[n++] = g->ids[i];
		}
	}
	if (n && al->rc && alert_stream_hold(al->rc, al->cfg.consumer, ids, n, err, sizeof(err)) ==
	    ALERT_STREAM_LOST)
		redis_lost(al);
	free(ids);
}

/*
 * How often orphans are claimed and our held entries refreshed: a quarter
 * of claim_idle (so what we hold never looks idle to others), 1..15 s.
 */
static uint64_t claim_every(const struct alerter_config *cfg)
{
	uint64_t every = cfg->claim_idle_ns / 4;

	return every < NSEC_PER_SEC ? NSEC_PER_SEC : every > 15 * NSEC_PER_SEC ?
	       15 * NSEC_PER_SEC : every;
}

/*
 * Take over entries other alerters left idle (a dead or
 * stuck consumer) for claim_idle, page by page with XAUTOCLAIM's cursor,
 * and process them as our own.  Runs at start and every claim_every().
 */
static void claim_orphans(struct alerter *al)
{
	char cursor[32] = "0-0", err[300];
	int pages = 0, total = 0, n;

	refresh_held(al);
	do {
		if (!al->rc)
			return;
		n = redis_result(al, alert_stream_claim(al->rc, al->cfg.consumer,
							al->cfg.claim_idle_ns / NSEC_PER_MSEC, cursor,
							take_entry, al, err, sizeof(err)), err);
		if (n < 0)
			return;
		total += n;
	} while (strcmp(cursor, "0-0") && ++pages < 10000);
	if (total)
		log_info("took over %d %s entr%s idle for %.0f s or more (another alerter died?)",
			 total, STREAM, total == 1 ? "y" : "ies",
			 (double)al->cfg.claim_idle_ns / 1e9);
}

static void refresh_silences(struct alerter *al, uint64_t now)
{
	char err[256];
	struct silence *s;
	int n;

	if (!al->rc || now - al->silences_at < 5 * NSEC_PER_SEC)
		return;
	al->silences_at = now;
	n = silence_load(al->rc, &s, err, sizeof(err));
	if (n < 0)
		return;
	silence_free_all(al->silences, al->nsilences);
	al->silences = s;
	al->nsilences = n;
}

/* The config reference from the schema table, with the built-in defaults. */
static int print_config_reference(void)
{
	struct alerter_config cfg;
	struct strbuf sb = STRBUF_INIT;
	char err[256];

	if (alerter_config_parse(&cfg, "<built-in etc/alerter.yaml>", alerter_default_config,
				 strlen(alerter_default_config), err, sizeof(err))) {
		fprintf(stderr, "faultline-alerter: built-in config: %s\n", err);
		return 1;
	}
	/* the consumer's default is this machine's name: show what it means, not it */
	snprintf(cfg.consumer, sizeof(cfg.consumer), "(hostname)");
	cfg_schema_markdown(alerter_config_schema, alerter_config_nschema, &cfg, &sb);
	fputs(strbuf_str(&sb), stdout);
	strbuf_release(&sb);
	alerter_config_free(&cfg);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "redis", required_argument, NULL, 'r' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "log-format", required_argument, NULL, 'F' },
		{ "web-config", required_argument, NULL, 'W' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "config-reference", no_argument, NULL, 'C' },
		{ "metrics-addr", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *config = NULL, *redis = NULL, *level = NULL, *metrics_addr = NULL;
	const char *web_config = NULL;
	struct metrics_server *metrics = NULL;
	struct strbuf ms = STRBUF_INIT;
	uint64_t metrics_at = 0;
	struct alerter al = { 0 };
	char err[512];
	int c, running_before = 0;
	enum log_level lv;

	log_init("faultline-alerter");
	while ((c = getopt_long(argc, argv, "c:r:l:m:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'r': redis = optarg; break;
		case 'l': level = optarg; break;
		case 'm': metrics_addr = optarg; break;
		case 'P': fputs(alerter_default_config, stdout); return 0;
		case 'C': return print_config_reference();
		case 'F':
			if (log_format_option("faultline-alerter", optarg))
				return 2;
			break;
		case 'W': web_config = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("faultline-alerter %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!config) {
		/* installed: /etc/faultline/alerter.yaml instead of the built-in default */
		static char found[600];

		config = cfg_find("alerter.yaml", 0, found, sizeof(found));
		if (config)
			log_info("reading %s (no --config given)", config);
	}
	if (config ? alerter_config_load(&al.cfg, config, err, sizeof(err))
		   : alerter_config_parse(&al.cfg, "<built-in etc/alerter.yaml>",
					  alerter_default_config, strlen(alerter_default_config),
					  err, sizeof(err))) {
		log_error("%s", err);
		return 1;
	}
	if (redis)
		snprintf(al.cfg.redis_url, sizeof(al.cfg.redis_url), "%s", redis);
	if (log_parse_level(level ? level : al.cfg.log_level, &lv) == 0)
		log_set_level(lv);
	if (!al.cfg.nreceivers)
		log_warn("no receivers configured: alerts will be read and held, not delivered "
			 "(add receivers to the config)");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	al.multi = curl_multi_init();
	strmap_init(&al.held);
	backoff_init(&al.redis_backoff, 0, 10 * NSEC_PER_SEC);
	conn_url_redacted(al.cfg.redis_url, al.redis_shown, sizeof(al.redis_shown));
	log_info("consuming %s as %s/%s from %s; %d receiver(s), %d route(s)", STREAM, GROUP,
		 al.cfg.consumer, al.redis_shown, al.cfg.nreceivers, al.cfg.nroutes);
	if (!metrics_addr)
		metrics_addr = al.cfg.metrics_addr;
	if (!web_config)
		web_config = al.cfg.web_config;
	if (metrics_addr[0]) {
		metrics = metrics_server_start(metrics_addr, web_config, err, sizeof(err));
		if (!metrics) {
			log_error("metrics: %s", err);
			return 1;
		}
		log_info("serving the alerter's metrics on http://%s/metrics", metrics_addr);
	}
	notify_ready("consuming fl:alerts");
	while (!stopping) {
		uint64_t now = time_mono_ns();
		int running, left;
		CURLMsg *msg;

		notify_watchdog();
		ensure_redis(&al);
		if (redis_ready(&al) && al.cfg.nreceivers) {
			refresh_silences(&al, now);
			if (al.read_pending)
				read_own_pending(&al);
			if (al.rc && now >= al.claim_at_ns) {
				claim_orphans(&al);
				al.claim_at_ns = now + claim_every(&al.cfg);
			}
		}
		/*
		 * Wait for new entries only while there is nothing else to do: not
		 * while transfers run (curl_multi_poll below waits for those) and
		 * not past the next group's due time.
		 */
		int block_ms = 200;

		for (int i = 0; i < al.ngroups && block_ms; i++) {
			uint64_t due = group_due_at(&al, al.groups[i]);

			if (due <= now)
				block_ms = 0;
			else if (due - now < (uint64_t)block_ms * 1000000)
				block_ms = (int)((due - now) / 1000000) + 1;
		}
		if (running_before)
			block_ms = 0;
		if (redis_ready(&al) && al.cfg.nreceivers && !al.read_pending)
			read_entries(&al, ">", block_ms, NULL, 0);
		else if (!running_before)
			usleep((useconds_t)block_ms * 1000 + 1000);
		now = time_mono_ns();
		for (int i = 0; i < al.ngroups; i++)
			maybe_send(&al, al.groups[i], now);
		curl_multi_perform(al.multi, &running);
		while ((msg = curl_multi_info_read(al.multi, &left)))
			if (msg->msg == CURLMSG_DONE)
				on_done(&al, msg);
		if (running)
			curl_multi_poll(al.multi, NULL, 0, 50, NULL);
		running_before = running;
		if (metrics) {
			/* render at most every 500 ms; the server thread answers scrapes from it */
			if (now >= metrics_at) {
				strbuf_reset(&ms);
				render_metrics(&al, &ms);
				metrics_server_set_body(metrics, strbuf_str(&ms), ms.len);
				metrics_at = now + 500 * NSEC_PER_MSEC;
			}
		}
	}
	notify_stopping();
	/* let notifications already on the wire finish (and be acknowledged) */
	for (uint64_t until = time_mono_ns() + 3 * NSEC_PER_SEC; time_mono_ns() < until;) {
		int running, left;
		CURLMsg *msg;

		curl_multi_perform(al.multi, &running);
		while ((msg = curl_multi_info_read(al.multi, &left)))
			if (msg->msg == CURLMSG_DONE)
				on_done(&al, msg);
		if (!running)
			break;
		curl_multi_poll(al.multi, NULL, 0, 50, NULL);
	}
	log_info("stopping; unacknowledged alerts stay pending in %s for the next start", STREAM);
	free_groups(&al);
	curl_multi_cleanup(al.multi);
	curl_global_cleanup();
	if (al.rc)
		conn_close(al.rc);
	silence_free_all(al.silences, al.nsilences);
	strmap_free(&al.held);
	alerter_config_free(&al.cfg);
	metrics_server_stop(metrics);
	strbuf_release(&ms);
	return 0;
}
