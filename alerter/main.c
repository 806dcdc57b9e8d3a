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

#include "alerter.h"
#include "log.h"
#include "store.h"
#include "timeutil.h"

#define STREAM "fl:alerts"
#define GROUP "alerter"

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
	/* the notification in flight or waiting to be retried */
	CURL *easy;
	struct curl_slist *hdrs;
	struct strbuf body;
	char idem[65];
	int nids_sent;
	int attempts;
	uint64_t retry_at_ns;
	int pending;			/* a notification exists (in flight or waiting) */
	int in_flight;
	char errbuf[CURL_ERROR_SIZE];
};

struct alerter {
	struct alerter_config cfg;
	redisContext *rc;
	CURLM *multi;
	struct group **groups;
	int ngroups;
	int inflight[MAX_RECEIVERS];
	struct silence *silences;
	int nsilences;
	uint64_t silences_at;
	uint64_t seq;
};

static volatile sig_atomic_t stopping;

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
"answered 2xx; 5xx and network errors are retried with backoff, other 4xx are\n"
"dead-lettered to fl:alerts:dead.  The built-in default config is\n"
"etc/alerter.yaml (--print-config shows it).\n"
"\n"
"  -c, --config FILE     read FILE instead of the built-in default\n"
"  -r, --redis URL       override the config's redis\n"
"  -l, --log-level LVL   error, warn, info or debug\n"
"      --print-config    print the built-in default config and exit\n"
"  -h, --help            this text\n"
"  -V, --version         print the version\n");
}

/* ---- Redis ------------------------------------------------------------- */

static int ensure_redis(struct alerter *al)
{
	char err[256];
	redisReply *r;

	if (al->rc)
		return 0;
	al->rc = store_connect(al->cfg.redis_url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!al->rc) {
		log_warn("%s; retrying", err);
		return -1;
	}
	r = redisCommand(al->rc, "XGROUP CREATE %s %s 0 MKSTREAM", STREAM, GROUP);
	if (r)
		freeReplyObject(r);	/* BUSYGROUP when it exists: fine */
	log_info("connected to %s", al->cfg.redis_url);
	return 0;
}

static void redis_lost(struct alerter *al)
{
	log_warn("lost the redis connection (%s); reconnecting",
		 al->rc && al->rc->errstr[0] ? al->rc->errstr : "error");
	if (al->rc)
		redisFree(al->rc);
	al->rc = NULL;
}

static void ack(struct alerter *al, char (*ids)[32], int n)
{
	for (int i = 0; i < n && al->rc; i++) {
		redisReply *r = redisCommand(al->rc, "XACK %s %s %s", STREAM, GROUP, ids[i]);

		if (!r) {
			redis_lost(al);
			return;
		}
		freeReplyObject(r);
	}
}

/* Append a record of what happened to a notification (sent, dead, silenced). */
static void record(struct alerter *al, const char *stream, const char *what, const char *group,
		   const char *detail)
{
	redisReply *r;

	if (!al->rc)
		return;
	r = redisCommand(al->rc, "XADD %s MAXLEN ~ 100000 * what %s group %s detail %s", stream,
			 what, group, detail ? detail : "");
	if (r)
		freeReplyObject(r);
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

/* Put the alert of entry id into its group (replacing its older state). */
static void take_event(struct alerter *al, const char *id, const char *json, size_t len)
{
	struct group_alert *ga = calloc(1, sizeof(*ga));
	const struct silence *sil;
	struct group *g;
	char err[256];
	int route;

	if (!ga)
		return;
	if (alert_parse(&ga->a, json, len, err, sizeof(err))) {
		log_error("fl:alerts entry %s is not an alert event (%s); dead-lettered", id, err);
		record(al, "fl:alerts:dead", "unparsable", id, err);
		ack(al, (char (*)[32])id, 1);
		free(ga);
		return;
	}
	snprintf(ga->entry_id, sizeof(ga->entry_id), "%s", id);
	ga->sent_state = -1;
	sil = silence_find(al->silences, al->nsilences, &ga->a, time_wall_ns() / NSEC_PER_MSEC);
	if (sil) {
		char detail[800];

		snprintf(detail, sizeof(detail), "%s %s silenced by %s (%s)", ga->a.fingerprint,
			 alert_label(&ga->a, "alertname"), sil->id, sil->comment);
		record(al, "fl:notifications", "silenced", alert_label(&ga->a, "alertname"), detail);
		log_info("%s", detail);
		ack(al, (char (*)[32])id, 1);
		alert_free(&ga->a);
		free(ga);
		return;
	}
	route = route_of(&al->cfg, &ga->a);
	if (route < 0) {
		log_warn("alert %s matches no route; dead-lettered (add a catch-all route)",
			 alert_label(&ga->a, "alertname"));
		record(al, "fl:alerts:dead", "no route", alert_label(&ga->a, "alertname"),
		       ga->a.fingerprint);
		ack(al, (char (*)[32])id, 1);
		alert_free(&ga->a);
		free(ga);
		return;
	}
	g = group_for(al, route, &ga->a);
	if (!g) {
		alert_free(&ga->a);
		free(ga);
		return;
	}
	/* dedup by fingerprint: the newest state wins */
	for (int i = 0; i < g->nalerts; i++) {
		if (!strcmp(g->alerts[i]->a.fingerprint, ga->a.fingerprint)) {
			if (g->alerts[i]->a.firing == ga->a.firing) {
				/* a repeat of the state we hold: nothing new to tell */
				ack(al, (char (*)[32])id, 1);
				alert_free(&ga->a);
				free(ga);
				return;
			}
			g->changed = 1;
			ga->sent_state = g->alerts[i]->sent_state;
			alert_free(&g->alerts[i]->a);
			free(g->alerts[i]);
			g->alerts[i] = ga;
			goto add_id;
		}
	}
	{
		struct group_alert **n = realloc(g->alerts, (size_t)(g->nalerts + 1) * sizeof(*n));

		if (!n) {
			alert_free(&ga->a);
			free(ga);
			return;
		}
		g->alerts = n;
		g->alerts[g->nalerts++] = ga;
		g->changed = 1;
	}
add_id:
	{
		char (*n)[32] = realloc(g->ids, (size_t)(g->nids + 1) * sizeof(*n));

		if (n) {
			g->ids = n;
			snprintf(g->ids[g->nids++], 32, "%s", id);
		}
	}
}

/* ---- delivery ---------------------------------------------------------- */

static size_t discard(char *p, size_t s, size_t n, void *u)
{
	(void)p;
	(void)u;
	return s * n;
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
	curl_easy_setopt(g->easy, CURLOPT_WRITEFUNCTION, discard);
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
	return firing ? g->last_sent_ns + cfg->repeat_interval_ns : UINT64_MAX;
}

/* Decide whether g should send now; if so build the notification. */
static void maybe_send(struct alerter *al, struct group *g, uint64_t now)
{
	const struct alerter_config *cfg = &al->cfg;
	struct strbuf idem = STRBUF_INIT;
	int due;

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
	strbuf_reset(&g->body);
	if (payload_build(cfg, &cfg->receivers[g->receiver], g->key, g->glabels, g->ngl,
			  g->alerts, g->nalerts, al->rc, &g->body)) {
		log_error("out of memory building a notification for %s", g->key);
		return;
	}
	strbuf_addf(&idem, "%s|%s|%llu", cfg->receivers[g->receiver].name, g->key,
		    (unsigned long long)++al->seq);
	for (int i = 0; i < g->nalerts; i++)
		strbuf_addf(&idem, "|%s:%d:%llu", g->alerts[i]->a.fingerprint, g->alerts[i]->a.firing,
			    (unsigned long long)g->alerts[i]->a.starts_ms);
	sha256_hex(strbuf_str(&idem), idem.len, g->idem);
	strbuf_release(&idem);
	g->nids_sent = g->nids;
	for (int i = 0; i < g->nalerts; i++)
		g->alerts[i]->sent_state = g->alerts[i]->a.firing;
	g->attempts = 0;
	g->pending = 1;
	g->changed = 0;
	start_request(al, g);
}

static void finish_group_send(struct alerter *al, struct group *g, int delivered)
{
	/* acknowledge what this notification carried; keep later arrivals */
	ack(al, g->ids, g->nids_sent);
	memmove(g->ids, g->ids + g->nids_sent, (size_t)(g->nids - g->nids_sent) * sizeof(*g->ids));
	g->nids -= g->nids_sent;
	g->nids_sent = 0;
	g->pending = 0;
	g->sent_once = 1;
	g->last_sent_ns = time_mono_ns();
	if (delivered) {
		/* alerts whose resolution was in this notification are done */
		for (int i = 0; i < g->nalerts;) {
			if (!g->alerts[i]->a.firing && g->alerts[i]->sent_state == 0) {
				alert_free(&g->alerts[i]->a);
				free(g->alerts[i]);
				g->alerts[i] = g->alerts[--g->nalerts];
			} else {
				i++;
			}
		}
	}
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
		record(al, "fl:notifications", "sent", g->key, detail);
		finish_group_send(al, g, 1);
		return;
	}
	if (result == CURLE_OK && code >= 400 && code < 500 && code != 408 && code != 429) {
		snprintf(detail, sizeof(detail), "HTTP %ld from %s: the receiver refused the "
			 "notification; not retried", code, rname);
		log_error("%s (%s)", detail, g->key);
		if (al->rc) {
			redisReply *r = redisCommand(al->rc, "XADD fl:alerts:dead * group %s receiver %s "
						     "reason %s body %b", g->key, rname, detail,
						     strbuf_str(&g->body), g->body.len);

			if (r)
				freeReplyObject(r);
		}
		finish_group_send(al, g, 0);
		return;
	}
	/* 5xx, 408, 429, timeout, connection error: back off and retry */
	uint64_t backoff = cfg->backoff_initial_ns;

	for (int i = 1; i < g->attempts && backoff < cfg->backoff_max_ns; i++)
		backoff *= 2;
	if (backoff > cfg->backoff_max_ns)
		backoff = cfg->backoff_max_ns;
	backoff = backoff / 2 + (uint64_t)rand() % (backoff / 2 + 1);	/* jitter */
	g->retry_at_ns = time_mono_ns() + backoff;
	if (result != CURLE_OK)
		log_warn("delivering %s to %s failed: %s; retry %d in %.1f s", g->key, rname,
			 g->errbuf[0] ? g->errbuf : curl_easy_strerror(result),
			 g->attempts, (double)backoff / 1e9);
	else
		log_warn("delivering %s to %s: HTTP %ld; retry %d in %.1f s", g->key, rname, code,
			 g->attempts, (double)backoff / 1e9);
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

/* Read entries: pending ones ("0") first after a (re)start, then new (">"). */
static int read_entries(struct alerter *al, const char *from, int block_ms)
{
	redisReply *r;
	int n = 0;

	if (block_ms)
		r = redisCommand(al->rc, "XREADGROUP GROUP %s %s COUNT 100 BLOCK %d STREAMS %s %s",
				 GROUP, al->cfg.consumer, block_ms, STREAM, from);
	else
		r = redisCommand(al->rc, "XREADGROUP GROUP %s %s COUNT 100 STREAMS %s %s", GROUP,
				 al->cfg.consumer, STREAM, from);
	if (!r) {
		redis_lost(al);
		return -1;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		log_warn("XREADGROUP: %s", r->str);
		freeReplyObject(r);
		if (strstr(r->str, "NOGROUP")) {
			redis_lost(al);
		}
		return -1;
	}
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 1) {
		redisReply *entries = r->element[0]->element[1];

		for (size_t i = 0; i < entries->elements; i++) {
			redisReply *e = entries->element[i], *f = e->element[1];

			n++;
			if (f->type != REDIS_REPLY_ARRAY) {
				continue;	/* pending entry whose data was trimmed */
			}
			for (size_t k = 0; k + 1 < f->elements; k += 2)
				if (!strcmp(f->element[k]->str, "e"))
					take_event(al, e->element[0]->str, f->element[k + 1]->str,
						   f->element[k + 1]->len);
		}
	}
	freeReplyObject(r);
	return n;
}

static void reclaim(struct alerter *al)
{
	/* our own pending entries first (a restart after a crash) */
	while (al->rc && read_entries(al, "0", 0) > 0) {
		int fresh = 0;

		/* every read returns the same pending list until acked: read once */
		(void)fresh;
		break;
	}
	/* then entries other, dead alerter instances left idle for a minute */
	if (al->rc) {
		redisReply *r = redisCommand(al->rc, "XAUTOCLAIM %s %s %s 60000 0-0 COUNT 100", STREAM,
					     GROUP, al->cfg.consumer);

		if (r)
			freeReplyObject(r);
		read_entries(al, "0", 0);
	}
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

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "redis", required_argument, NULL, 'r' },
		{ "log-level", required_argument, NULL, 'l' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *config = NULL, *redis = NULL, *level = NULL;
	struct alerter al = { 0 };
	char err[512];
	int c, reclaimed = 0, running_before = 0;
	enum log_level lv;

	log_init("faultline-alerter");
	while ((c = getopt_long(argc, argv, "c:r:l:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'r': redis = optarg; break;
		case 'l': level = optarg; break;
		case 'P': fputs(alerter_default_config, stdout); return 0;
		case 'h': usage(stdout); return 0;
		case 'V': printf("faultline-alerter %s\n", FL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
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
	srand((unsigned)time_mono_ns());
	log_info("consuming %s as %s/%s; %d receiver(s), %d route(s)", STREAM, GROUP,
		 al.cfg.consumer, al.cfg.nreceivers, al.cfg.nroutes);
	while (!stopping) {
		uint64_t now = time_mono_ns();
		int running, left;
		CURLMsg *msg;

		if (ensure_redis(&al)) {
			usleep(500000);
			continue;
		}
		refresh_silences(&al, now);
		if (!reclaimed) {
			reclaim(&al);
			reclaimed = 1;
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
		if (al.rc && al.cfg.nreceivers)
			read_entries(&al, ">", block_ms);
		else
			usleep(200000);
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
		if (!al.rc)
			reclaimed = 0;	/* reconnecting: read our pending entries again */
	}
	log_info("stopping; unacknowledged alerts stay pending in %s for the next start", STREAM);
	free_groups(&al);
	curl_multi_cleanup(al.multi);
	curl_global_cleanup();
	if (al.rc)
		redisFree(al.rc);
	silence_free_all(al.silences, al.nsilences);
	alerter_config_free(&al.cfg);
	return 0;
}
