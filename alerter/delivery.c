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
#include "alerter/mute.h"
#include "core/array.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "store/alert_group.h"

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
	const struct integration *r = &al->cfg.integrations[g->integration];
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
		sign_body(r->secret, now, g->idem, strbuf_str(&g->body), g->body.len, sig);
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
	/* http_config: tls_config, basic_auth, authorization, follow_redirects */
	if (r->ca_file[0])
		curl_easy_setopt(g->easy, CURLOPT_CAINFO, r->ca_file);
	if (r->cert_file[0]) {
		curl_easy_setopt(g->easy, CURLOPT_SSLCERT, r->cert_file);
		curl_easy_setopt(g->easy, CURLOPT_SSLKEY, r->key_file);
	}
	if (r->server_name[0]) {
		/* verify (and send as SNI) server_name while connecting where the URL says */
		char host[300];
		int port = url_host_port(r->url, host, sizeof(host));

		if (port > 0) {
			snprintf(hdr, sizeof(hdr), "%s:%d:%s:%d", r->server_name, port, host, port);
			g->connect_to = curl_slist_append(NULL, hdr);
			curl_easy_setopt(g->easy, CURLOPT_CONNECT_TO, g->connect_to);
			url_with_host(r->url, r->server_name, g->url, sizeof(g->url));
			curl_easy_setopt(g->easy, CURLOPT_URL, g->url);
		}
	}
	if (r->basic_user[0]) {
		curl_easy_setopt(g->easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(g->easy, CURLOPT_USERNAME, r->basic_user);
		curl_easy_setopt(g->easy, CURLOPT_PASSWORD, r->basic_password);
	}
	if (r->auth_credentials[0]) {
		snprintf(hdr, sizeof(hdr), "Authorization: %s %s", r->auth_type, r->auth_credentials);
		g->hdrs = curl_slist_append(g->hdrs, hdr);
		curl_easy_setopt(g->easy, CURLOPT_HTTPHEADER, g->hdrs);
	}
	if (r->follow_redirects) {
		curl_easy_setopt(g->easy, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(g->easy, CURLOPT_MAXREDIRS, 10L);
		curl_easy_setopt(g->easy, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
	}
	curl_multi_add_handle(al->multi, g->easy);
	g->in_flight = 1;
	g->attempts++;
	al->inflight[g->integration]++;
}

/* How long a new group waits for siblings before its first notification. */
static uint64_t first_wait(const struct alerter_config *cfg, const struct group *g)
{
	return g->page && cfg->page_group_wait_ns < g->group_wait_ns ? cfg->page_group_wait_ns
								     : g->group_wait_ns;
}

/*
 * When g next wants something done (mono ns): a retry, its first
 * notification after group_wait (page_group_wait for a page), a change after group_interval, a muted
 * firing alert looked at again after group_interval, a repeat;
 * UINT64_MAX when nothing.
 */
uint64_t group_due_at(const struct alerter *al, const struct group *g)
{
	const struct alerter_config *cfg = &al->cfg;
	uint64_t due = UINT64_MAX;

	if (g->pending)
		return g->in_flight ? UINT64_MAX : g->retry_at_ns;
	if (g->changed || g->nids)
		due = g->sent_once ? g->last_sent_ns + g->group_interval_ns
				   : g->created_ns + first_wait(cfg, g);
	else if (g->firing)
		due = cfg->integrations[g->integration].format == FMT_ALERTMANAGER_API &&
		      cfg->integrations[g->integration].resend_interval_ns < g->repeat_interval_ns ?
		      g->last_sent_ns + cfg->integrations[g->integration].resend_interval_ns :
		      g->last_sent_ns + g->repeat_interval_ns;
	if (g->muted_firing && !g->changed && !g->nids &&
	    g->looked_ns + g->group_interval_ns < due)
		due = g->looked_ns + g->group_interval_ns;
	if (due != UINT64_MAX && g->load_retry_ns > due)
		due = g->load_retry_ns;
	return due;
}

/*
 * The notification's idempotency key: SHA-256 of the receiver, the group
 * and the group's version in Redis, plus for a repeat when the
 * notification it repeats was made (repeat_of_ms, the group's notified
 * time in Redis; 0: not a repeat).  A version is one content of the group,
 * whoever loads it: the same notification rebuilt after a restart, or sent
 * by a peer, carries the same key, so a receiver can drop the redelivery;
 * any change of the group is a new version, so a new key; each repeat is
 * a new key, the same whichever alerter (or restarted one) sends it.
 */
static void idempotency_key(const char *receiver, const struct group *g, uint64_t version,
			    uint64_t repeat_of_ms, char out[65])
{
	struct strbuf k = STRBUF_INIT;

	strbuf_addf(&k, "%s|%s|v%llu", receiver, g->key, (unsigned long long)version);
	if (repeat_of_ms)
		strbuf_addf(&k, "|repeat-of:%llu", (unsigned long long)repeat_of_ms);
	sha256_hex(strbuf_str(&k), k.len, out);
	strbuf_release(&k);
}

/* Whether g's repeat (or, to an Alertmanager, its resend) is due at now. */
static int repeat_due(const struct alerter_config *cfg, const struct group *g, uint64_t now)
{
	uint64_t every = g->repeat_interval_ns;

	if (cfg->integrations[g->integration].format == FMT_ALERTMANAGER_API &&
	    cfg->integrations[g->integration].resend_interval_ns < every)
		every = cfg->integrations[g->integration].resend_interval_ns;
	return now >= g->last_sent_ns + every;
}

static int by_fingerprint(const void *a, const void *b)
{
	const struct group_alert *x = *(struct group_alert *const *)a;
	const struct group_alert *y = *(struct group_alert *const *)b;

	return strcmp(x->a.fingerprint, y->a.fingerprint);
}

/* What a notification of alerts[0..n) says, as a hash: fingerprint, status, startsAt each. */
static void content_key(struct group_alert **alerts, int n, char out[65])
{
	struct strbuf k = STRBUF_INIT;

	qsort(alerts, (size_t)n, sizeof(*alerts), by_fingerprint);
	for (int i = 0; i < n; i++)
		strbuf_addf(&k, "%s:%d:%llu|", alerts[i]->a.fingerprint, alerts[i]->a.firing,
			    (unsigned long long)alerts[i]->a.starts_ms);
	sha256_hex(strbuf_str(&k), k.len, out);
	strbuf_release(&k);
}

/* Replace the group's alerts by the members of st (moved out of it). */
static void take_members(struct group *g, struct alert_group_state *st)
{
	struct group_alert **n = calloc((size_t)st->n + 1, sizeof(*n));

	for (int k = 0; k < g->nalerts; k++)
		drop_alert(g->alerts[k]);
	free(g->alerts);
	g->alerts = NULL;
	g->nalerts = 0;
	if (!n)
		return;
	for (int i = 0; i < st->n; i++) {
		struct group_alert *ga = calloc(1, sizeof(*ga));

		if (!ga) {
			alert_free(&st->m[i].a);
			continue;
		}
		ga->a = st->m[i].a;
		snprintf(ga->entry_id, sizeof(ga->entry_id), "%s", st->m[i].entry_id);
		n[g->nalerts++] = ga;
	}
	st->n = 0;	/* the alerts are the group's now */
	g->alerts = n;
}

/* Note a resolution g's notification settles (sent, or muted). */
static void add_done(struct group *g, const struct group_alert *ga)
{
	/* on failure it stays a resolved member: the next notification settles it */
	if (ARRAY_GROW(g->done_fps, g->done_fps_cap, (size_t)g->ndone + 1, 8) ||
	    ARRAY_GROW(g->done_ids, g->done_ids_cap, (size_t)g->ndone + 1, 8))
		return;
	snprintf(g->done_fps[g->ndone], sizeof(g->done_fps[0]), "%s", ga->a.fingerprint);
	snprintf(g->done_ids[g->ndone], sizeof(g->done_ids[0]), "%s", ga->entry_id);
	g->ndone++;
}

/*
 * The notification of g's version `version` is settled (delivered, muted
 * as a whole, already notified, or dead-lettered): the group records it in
 * Redis, and the entries it covered are acknowledged.  Returns 0, or -1
 * when Redis did not take it (nothing acknowledged: the entries are read
 * again and the version notified again, with the same key).
 */
static int settle(struct alerter *al, struct group *g, uint64_t version, int nids)
{
	const char **fps = calloc((size_t)g->ndone + 1, sizeof(*fps));
	const char **ids = calloc((size_t)g->ndone + 1, sizeof(*ids));
	char err[300];
	int ret = -1;

	if (!fps || !ids || !redis_ready(al))
		goto out;
	for (int i = 0; i < g->ndone; i++) {
		fps[i] = g->done_fps[i];
		ids[i] = g->done_ids[i];
	}
	if ((version || g->ndone) &&
	    redis_result(al, alert_group_notified(al->rc, g->gid, version,
							     time_wall_ns() / NSEC_PER_MSEC, fps,
							     ids, g->ndone, err, sizeof(err)),
				    err) < 0)
		goto out;
	release(al, g->ids, nids);
	if (g->nids > nids)
		memmove(g->ids, g->ids + nids, (size_t)(g->nids - nids) * sizeof(*g->ids));
	g->nids -= nids;
	g->ndone = 0;
	ret = 0;
out:
	free(fps);
	free(ids);
	return ret;
}

/* Forget g's pending notification (settled, or to be rebuilt). */
static void drop_notification(struct group *g)
{
	g->pending = 0;
	g->nids_sent = 0;
	g->ndone = 0;
	strbuf_reset(&g->body);
}

/*
 * Load g's state and notify it: see maybe_send.  repeat: nothing changed
 * since the last notification (a repeat_interval, or a look at muted
 * alerts).
 */
static void flush(struct alerter *al, struct group *g, uint64_t now)
{
	const struct alerter_config *cfg = &al->cfg;
	struct alert_group_state st;
	struct group_alert **send;
	uint64_t wall_ms = time_wall_ns() / NSEC_PER_MSEC;
	int nsend = 0, repeat = g->sent_once && !g->changed && !g->nids, firing = 0, muted = 0;
	int time_muted;
	char err[300], content[65], why[700];
	uint64_t version, notified_version, notified_ms;

	if (!redis_ready(al)) {
		g->load_retry_ns = now + NSEC_PER_SEC;
		return;
	}
	if (redis_result(al, alert_group_load(al->rc, g->gid, &st, err, sizeof(err)), err) < 0) {
		g->load_retry_ns = now + NSEC_PER_SEC;
		return;
	}
	g->load_retry_ns = 0;
	if (st.bad) {
		al->bad_records += (uint64_t)st.bad;
		log_error("alert group %s: %d record(s) of the wrong shape skipped%s%s", g->key,
			  st.bad, err[0] ? ": " : "", err[0] ? err : "");
	}
	err[0] = '\0';
	version = st.version;
	notified_version = st.notified_version;
	notified_ms = st.notified_ms;
	take_members(g, &st);
	alert_group_state_free(&st);
	g->changed = 0;
	g->ndone = 0;
	/*
	 * Time intervals, inhibition and silences mute notifications, never
	 * state: decided now, as Alertmanager decides at flush (mute.c).
	 */
	send = calloc((size_t)g->nalerts + 1, sizeof(*send));
	if (!send)
		return;
	time_muted = mute_group(al, g, (time_t)(wall_ms / 1000), why, sizeof(why));
	if (time_muted && !repeat) {
		char detail[800];

		snprintf(detail, sizeof(detail), "%d alert(s) not notified: the route is %s",
			 g->nalerts, why);
		record(al, "muted", g->key, detail);
		log_info("group %s: %s", g->key, detail);
	}
	for (int i = 0; i < g->nalerts; i++) {
		struct group_alert *ga = g->alerts[i];
		enum mute_kind mk = time_muted ? MUTE_NONE : mute_alert(al, &ga->a, wall_ms, why,
									 sizeof(why));
		int is_muted = time_muted || mk != MUTE_NONE;

		muted += is_muted && ga->a.firing;
		if (mk != MUTE_NONE && !repeat) {
			char detail[1200];

			snprintf(detail, sizeof(detail), "%s %s %s %s", ga->a.fingerprint,
				 alert_label(&ga->a, "alertname"),
				 ga->a.firing ? "firing" : "resolved", why);
			record(al, mk == MUTE_SILENCED ? "silenced" : "inhibited", g->key, detail);
			log_info("%s", detail);
		}
		if (!is_muted && (ga->a.firing || cfg->integrations[g->integration].send_resolved)) {
			/* without send_resolved a resolution is settled, never sent */
			send[nsend++] = ga;
			firing |= ga->a.firing;
		}
		if (!ga->a.firing)
			add_done(g, ga);	/* muted or sent, a resolution is settled by this */
	}
	g->firing = firing;
	g->muted_firing = muted > 0;
	g->looked_ns = now;
	content_key(send, nsend, content);
	if (!repeat && version && version == notified_version) {
		/* this very version was notified already, by us before a restart or by a peer */
		log_debug("group %s: version %llu was notified already; acknowledging %d entr%s",
			  g->key, (unsigned long long)version, g->nids, g->nids == 1 ? "y" : "ies");
		g->ndone = 0;
		settle(al, g, 0, g->nids);
		g->sent_once = 1;
		g->last_sent_ns = now;
		snprintf(g->content, sizeof(g->content), "%s", content);
		goto out;
	}
	if (repeat && !repeat_due(cfg, g, now)) {
		/*
		 * A look at muted alerts, not a repeat: send only what a silence
		 * that ended has unmuted since the last notification.
		 */
		if (!strcmp(content, g->content) || !nsend)
			goto out;
	} else if (repeat && notified_ms && notified_version == version &&
		   notified_ms + g->repeat_interval_ns / NSEC_PER_MSEC > wall_ms + 1000 &&
		   cfg->integrations[g->integration].format != FMT_ALERTMANAGER_API) {
		/* a peer repeated it lately: the next repeat counts from then */
		g->last_sent_ns = now - (wall_ms - notified_ms) * NSEC_PER_MSEC;
		goto out;
	}
	if (!firing && !notified_version)
		nsend = 0;	/* resolutions of what was never notified: nothing to say */
	if (!nsend) {
		/* everything muted, or nothing left: settled without a notification */
		settle(al, g, muted ? 0 : version, g->nids);
		g->sent_once = 1;
		g->last_sent_ns = now;
		g->content[0] = '\0';
		goto out;
	}
	strbuf_reset(&g->body);
	if (payload_build(cfg, &cfg->integrations[g->integration], g->pkey, g->glabels, g->ngl, send,
			  nsend, al->rc, &g->body)) {
		log_error("out of memory building a notification for %s", g->key);
		g->load_retry_ns = now + NSEC_PER_SEC;
		goto out;
	}
	idempotency_key(cfg->integrations[g->integration].name, g, version,
			repeat ? (notified_ms ? notified_ms : 1) : 0, g->idem);
	g->sent_version = version;
	/* with a firing alert muted, this version is not all notified: unmuted, it is sent */
	g->mark_version = muted ? 0 : version;
	snprintf(g->content, sizeof(g->content), "%s", content);
	g->nids_sent = g->nids;
	g->attempts = 0;
	g->first_attempt_ns = now;
	backoff_init(&g->backoff, cfg->backoff_initial_ns, cfg->backoff_max_ns);
	g->pending = 1;
	start_request(al, g);
out:
	free(send);
}

void maybe_send(struct alerter *al, struct group *g, uint64_t now)
{
	const struct alerter_config *cfg = &al->cfg;

	if (g->pending) {
		uint64_t version;
		char err[300];

		if (g->in_flight || now < g->retry_at_ns ||
		    al->inflight[g->integration] >= cfg->integrations[g->integration].max_concurrency)
			return;
		/* a retry: is what it carries still the group's newest state? */
		if (!redis_ready(al) ||
		    redis_result(al, alert_group_version(al->rc, g->gid, &version, err,
							 sizeof(err)), err) < 0) {
			g->retry_at_ns = now + backoff_next(&g->backoff);
			return;
		}
		if (version == g->sent_version) {
			start_request(al, g);
			return;
		}
		al->superseded++;
		log_info("group %s changed while its notification was being retried (version "
			 "%llu -> %llu): sending the newest state instead", g->key,
			 (unsigned long long)g->sent_version, (unsigned long long)version);
		drop_notification(g);
		g->changed = 1;
		flush(al, g, now);
		return;
	}
	if (now < group_due_at(al, g) ||
	    al->inflight[g->integration] >= cfg->integrations[g->integration].max_concurrency)
		return;
	flush(al, g, now);
}

/*
 * The notification g had pending is settled: delivered (2xx) or
 * dead-lettered.  The group records the version notified and the entries
 * it carried are acknowledged (later arrivals stay held for the next one).
 */
static void finish_group_send(struct alerter *al, struct group *g)
{
	if (settle(al, g, g->mark_version, g->nids_sent) < 0)
		log_warn("group %s: the notification went out but Redis did not record it; its "
			 "entries stay pending and the same version is sent again (same "
			 "idempotency key)", g->key);
	drop_notification(g);
	g->sent_once = 1;
	g->last_sent_ns = time_mono_ns();
}

/* The ids g's pending notification carries, space-separated, for a dead letter. */
static void ids_text(const struct group *g, struct strbuf *out)
{
	for (int i = 0; i < g->nids_sent; i++)
		strbuf_addf(out, "%s%s", i ? " " : "", g->ids[i]);
}

/* Dead-letter g's notification (why in detail) and settle it; 0 once Redis took it. */
static int give_up(struct alerter *al, struct group *g, const char *detail)
{
	struct strbuf ids = STRBUF_INIT;
	const char *rname = al->cfg.integrations[g->integration].name;
	int ret;

	ids_text(g, &ids);
	ret = dead_letter(al, detail, g->key, rname, strbuf_str(&ids), strbuf_str(&g->body),
			  g->body.len);
	strbuf_release(&ids);
	if (ret == 0) {
		log_error("%s (%s); dead-lettered to %s", detail, g->key, DEAD_STREAM);
		finish_group_send(al, g);
	}
	return ret;
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
	curl_slist_free_all(g->connect_to);
	g->easy = NULL;
	g->hdrs = NULL;
	g->connect_to = NULL;
	g->in_flight = 0;
	al->inflight[g->integration]--;
	const char *rname = cfg->integrations[g->integration].name;

	if (result == CURLE_OK && code >= 200 && code < 300) {
		snprintf(detail, sizeof(detail), "HTTP %ld after %d attempt(s), version %llu", code,
			 g->attempts, (unsigned long long)g->sent_version);
		log_info("delivered %s to %s (%s)", g->key, rname, detail);
		al->sent[g->integration]++;
		record(al, "sent", g->key, detail);
		finish_group_send(al, g);
		return;
	}
	if (result == CURLE_OK && code >= 400 && code < 500 && code != 408 && code != 429) {
		al->refused[g->integration]++;
		snprintf(detail, sizeof(detail), "HTTP %ld from %s: the receiver refused the "
			 "notification; not retried; it answered: %.300s", code, rname,
			 g->answer_len ? g->answer : "(nothing)");
		if (give_up(al, g, detail)) {
			/* not recorded: keep it and decide again once Redis answers */
			log_error("%s (%s); cannot dead-letter it while Redis is away: retrying",
				  detail, g->key);
			g->retry_at_ns = time_mono_ns() + backoff_next(&g->backoff);
		}
		return;
	}
	/* 5xx, 408, 429, timeout, connection error: back off and retry, up to give_up_after */
	uint64_t delay = backoff_next(&g->backoff), now = time_mono_ns();

	al->failed[g->integration]++;
	g->retry_at_ns = now + delay;
	if (result != CURLE_OK)
		snprintf(detail, sizeof(detail), "%s", g->errbuf[0] ? g->errbuf :
			 curl_easy_strerror(result));
	else
		snprintf(detail, sizeof(detail), "HTTP %ld (%.200s)", code,
			 g->answer_len ? g->answer : "no answer");
	if (cfg->give_up_after_ns && now - g->first_attempt_ns >= cfg->give_up_after_ns) {
		char why[700];

		snprintf(why, sizeof(why), "gave up delivering to %s after %d attempts over %.0f s "
			 "(delivery.give_up_after); the last: %s", rname, g->attempts,
			 (double)(now - g->first_attempt_ns) / 1e9, detail);
		if (give_up(al, g, why) == 0) {
			al->gave_up++;
			return;
		}
	}
	log_warn("delivering %s to %s: %s; retry %d in %.1f s", g->key, rname, detail,
		 g->attempts, (double)delay / 1e9);
}

void group_free(struct alerter *al, struct group *g)
{
	if (g->easy) {
		curl_multi_remove_handle(al->multi, g->easy);
		curl_easy_cleanup(g->easy);
	}
	curl_slist_free_all(g->hdrs);
	curl_slist_free_all(g->connect_to);
	for (int k = 0; k < g->nalerts; k++)
		drop_alert(g->alerts[k]);
	for (int k = 0; k < g->ngl; k++) {
		free(g->glabels[k].key);
		free(g->glabels[k].value);
	}
	free(g->glabels);
	free(g->key);
	free(g->pkey);
	free(g->alerts);
	free(g->ids);
	free(g->done_fps);
	free(g->done_ids);
	strbuf_release(&g->body);
	free(g);
}

void free_groups(struct alerter *al)
{
	for (int i = 0; i < al->ngroups; i++)
		group_free(al, al->groups[i]);
	free(al->groups);
	al->groups = NULL;
	al->ngroups = 0;
}
