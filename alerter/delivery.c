/*
 * delivery.c - a group's notification (alerter_internal.h): when it is due
 * (group_wait, group_interval, repeat_interval), the signed POST through
 * libcurl's multi interface, retries with backoff, and what a 2xx or a
 * refusal settles.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alerter/alerter_internal.h"
#include "core/log.h"
#include "core/timeutil.h"

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
uint64_t group_due_at(const struct alerter *al, const struct group *g)
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
void maybe_send(struct alerter *al, struct group *g, uint64_t now)
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

void on_done(struct alerter *al, CURLMsg *msg)
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

void free_groups(struct alerter *al)
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
