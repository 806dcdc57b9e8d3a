/*
 * api.c - Alertmanager's API v2 on the alerter, the part that reads what
 * fires and keeps silences: what amtool, Grafana's Alertmanager data
 * source and Karma ask.
 *
 *   GET    /api/v2/alerts          filter, active, silenced, inhibited,
 *                                  unprocessed, receiver (Alertmanager's)
 *   GET    /api/v2/alerts/groups   the same, grouped as the routes group
 *   GET    /api/v2/silences        filter
 *   POST   /api/v2/silences        a new silence, or an update of one (id)
 *   GET    /api/v2/silence/ID
 *   DELETE /api/v2/silence/ID      expires it
 *   GET    /api/v2/receivers, /api/v2/status
 *   GET    /-/healthy, /-/ready    (ready: Redis answers)
 *
 * It is served on metrics_addr beside /metrics, behind the same web config
 * (TLS, basic auth), from the server's thread with a Redis connection of
 * its own.  What fires is the fleet's index ({fl:alerts}:active, store/
 * alert_index.h) as every alerter took it, so any alerter of a fleet
 * answers the same; an alert's state (silenced by, inhibited by, its
 * receivers) is worked out per request from the silences, the inhibit
 * rules and the routing tree, under the config's read lock (SIGHUP swaps
 * the config under its write lock).
 *
 * Alerts come from the rules engine, so POST /api/v2/alerts is refused
 * (501), not taken into a second path.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "alerter/alerter_internal.h"
#include "alerter/alert_view.h"
#include "alerter/api.h"
#include "core/config.h"
#include "core/jsonc.h"
#include "core/log.h"
#include "core/promregex.h"
#include "core/timeutil.h"
#include "model/labels.h"
#include "store/alert_index.h"
#include "store/conn.h"
#include "store/silence.h"

#define JSON_TYPE "application/json"

struct api {
	struct alerter *al;
	struct conn *rc;		/* the API's own: the loop's is not ours to use */
	char config_path[600];
	uint64_t started_ms;
};

static struct api api;

/* ---- answers -------------------------------------------------------------- */

static void reply_json(struct http_response *resp, unsigned int status, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);

	resp->status = status;
	resp->content_type = JSON_TYPE;
	resp->body = strdup(s);
	resp->len = resp->body ? strlen(resp->body) : 0;
	json_object_put(o);
}

/* An error as Alertmanager's API gives one: a JSON string. */
static void reply_error(struct http_response *resp, unsigned int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply_error(struct http_response *resp, unsigned int status, const char *fmt, ...)
{
	char msg[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_json(resp, status, jsonc_string(msg));
}

static void reply_text(struct http_response *resp, unsigned int status, const char *text)
{
	resp->status = status;
	resp->content_type = "text/plain; charset=utf-8";
	resp->body = strdup(text);
	resp->len = resp->body ? strlen(resp->body) : 0;
}

/* The API's connection, opened (again) when there is none. */
static struct conn *redis(struct http_response *resp)
{
	char err[300];

	if (api.rc)
		return api.rc;
	api.rc = conn_open(api.al->cfg.redis_url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!api.rc)
		reply_error(resp, 503, "Redis is unreachable: %s", err);
	return api.rc;
}

/* A Redis call failed: the connection is dropped, the next request opens one. */
static void redis_failed(struct http_response *resp, const char *what, const char *err)
{
	conn_close(api.rc);
	api.rc = NULL;
	reply_error(resp, 503, "%s: %s", what, err);
}

/* ---- filters -------------------------------------------------------------- */

struct filter {
	struct matcher m[64];
	int n;
	char err[600];
	int bad;
};

static void filter_add(const char *value, void *arg)
{
	struct filter *f = arg;
	int got;

	if (f->bad)
		return;
	got = matchers_parse(f->m + f->n, 64 - f->n, value, f->err, sizeof(f->err));
	if (got < 0)
		f->bad = 1;
	else
		f->n += got;
}

static void filter_free(struct filter *f)
{
	for (int i = 0; i < f->n; i++)
		matcher_free(&f->m[i]);
}

/* A boolean query argument (Alertmanager's default when absent). */
static int flag(const struct http_request *req, const char *name, int dflt, int *bad)
{
	const char *v = http_arg(req, name);

	if (!v)
		return dflt;
	if (!strcmp(v, "true"))
		return 1;
	if (!strcmp(v, "false"))
		return 0;
	*bad = 1;
	return dflt;
}

/* ---- alerts --------------------------------------------------------------- */

/* The alerts the request asks for, by Alertmanager's filters: fn for each. */
struct alerts_query {
	struct filter f;
	int active, silenced, inhibited;
	struct prom_regex receiver;
	int has_receiver;
};

static int alerts_query_parse(const struct http_request *req, struct alerts_query *q,
			      struct http_response *resp)
{
	const char *recv = http_arg(req, "receiver");
	int bad = 0;
	char err[300];

	memset(q, 0, sizeof(*q));
	http_args(req, "filter", filter_add, &q->f);
	if (q->f.bad) {
		reply_error(resp, 400, "filter: %s", q->f.err);
		filter_free(&q->f);
		return -1;
	}
	q->active = flag(req, "active", 1, &bad);
	q->silenced = flag(req, "silenced", 1, &bad);
	q->inhibited = flag(req, "inhibited", 1, &bad);
	(void)flag(req, "unprocessed", 1, &bad);	/* every alert here is processed */
	if (bad) {
		reply_error(resp, 400, "active, silenced, inhibited and unprocessed take true or "
			    "false");
		filter_free(&q->f);
		return -1;
	}
	if (recv && *recv) {
		if (promregex_compile(&q->receiver, recv, err, sizeof(err))) {
			reply_error(resp, 400, "receiver: %s", err);
			filter_free(&q->f);
			return -1;
		}
		q->has_receiver = 1;
	}
	return 0;
}

static void alerts_query_free(struct alerts_query *q)
{
	filter_free(&q->f);
	if (q->has_receiver)
		promregex_free(&q->receiver);
}

static int wanted(const struct alerts_query *q, const struct alert_view *v)
{
	int hit = !q->has_receiver;

	for (int i = 0; i < q->f.n; i++)
		if (!matcher_match(&q->f.m[i], v->a))
			return 0;
	if (!q->silenced && v->nsilenced)
		return 0;
	if (!q->inhibited && v->inhibited_by)
		return 0;
	if (!q->active && !v->nsilenced && !v->inhibited_by)
		return 0;
	for (int i = 0; i < v->nreceivers && !hit; i++)
		hit = promregex_match(&q->receiver, v->receivers[i]);
	return hit;
}

/* GET /api/v2/alerts and /api/v2/alerts/groups. */
static void get_alerts(const struct http_request *req, struct http_response *resp, int grouped)
{
	struct alerter *al = api.al;
	struct alerts_query q;
	struct alert_index ix;
	struct silence *sil = NULL;
	struct alert_view *v;
	struct conn *rc;
	json_object *out;
	struct strmap groups;
	uint64_t now_ms = time_wall_ns() / NSEC_PER_MSEC;
	char err[300];
	int nsil, ngroups = 0;

	if (alerts_query_parse(req, &q, resp))
		return;
	if (!(rc = redis(resp)))
		goto out_q;
	if (alert_index_load(rc, &ix, err, sizeof(err))) {
		redis_failed(resp, "reading the fleet's alerts", err);
		goto out_q;
	}
	nsil = silence_load(rc, &sil, err, sizeof(err));
	if (nsil < 0) {
		alert_index_free(&ix);
		redis_failed(resp, "reading the silences", err);
		goto out_q;
	}
	v = malloc(sizeof(*v));
	out = json_object_new_array();
	strmap_init(&groups);
	pthread_rwlock_rdlock(&al->cfg_lock);
	for (int i = 0; v && i < ix.n; i++) {
		alert_view_of(&al->cfg, &ix, sil, nsil, now_ms, &ix.m[i], v);
		if (!wanted(&q, v))
			continue;
		if (!grouped) {
			json_object_array_add(out, alert_view_json(v));
			continue;
		}
		/* one alert group per (receiver, group labels), as the routes group */
		for (int r = 0; r < v->nroutes; r++) {
			int max = (int)v->a->nlabels + v->routes[r]->ngroup_by + 1;
			struct label *gl = calloc((size_t)max, sizeof(*gl));
			struct strbuf key = STRBUF_INIT;
			const char *rname = al->cfg.receiver_names[v->routes[r]->receiver].name;
			json_object *g;
			uint32_t at;
			int ngl;

			if (!gl)
				break;
			ngl = route_group_labels(v->routes[r], v->a, gl, max);

			strbuf_addf(&key, "%s\n%s\n", rname, v->routes[r]->id);
			labels_format(&key, gl, ngl);
			if (strmap_get(&groups, strbuf_str(&key), &at) == 1) {
				g = json_object_array_get_idx(out, at);
			} else {
				json_object *rv = json_object_new_object();

				g = json_object_new_object();
				jsonc_put(g, "labels", alert_view_labels(gl, (uint32_t)ngl));
				jsonc_put(rv, "name", jsonc_string(rname));
				jsonc_put(g, "receiver", rv);
				jsonc_put(g, "alerts", json_object_new_array());
				json_object_array_add(out, g);
				strmap_put(&groups, strbuf_str(&key), (uint32_t)ngroups++);
			}
			json_object_array_add(jsonc_path(g, "alerts"), alert_view_json(v));
			strbuf_release(&key);
			free(gl);
		}
	}
	pthread_rwlock_unlock(&al->cfg_lock);
	strmap_free(&groups);
	free(v);
	silence_free_all(sil, nsil);
	alert_index_free(&ix);
	reply_json(resp, 200, out);
out_q:
	alerts_query_free(&q);
}

/* ---- silences ------------------------------------------------------------- */

static json_object *silence_json(const struct silence *s, uint64_t now_ms)
{
	json_object *o = json_object_new_object(), *ms = json_object_new_array();
	json_object *st = json_object_new_object();

	jsonc_put(o, "id", jsonc_string(s->id));
	for (int i = 0; i < s->nm; i++) {
		json_object *m = json_object_new_object();
		int op = s->m[i].op;

		jsonc_put(m, "name", jsonc_string(s->m[i].name));
		jsonc_put(m, "value", jsonc_string(s->m[i].value));
		jsonc_put(m, "isRegex", json_object_new_boolean(op == MATCH_RE || op == MATCH_NRE));
		jsonc_put(m, "isEqual", json_object_new_boolean(op == MATCH_EQ || op == MATCH_RE));
		json_object_array_add(ms, m);
	}
	jsonc_put(o, "matchers", ms);
	jsonc_put(o, "startsAt", alert_view_time(s->starts_ms));
	jsonc_put(o, "endsAt", alert_view_time(s->ends_ms));
	jsonc_put(o, "updatedAt", alert_view_time(s->starts_ms));
	jsonc_put(o, "createdBy", jsonc_string(s->created_by));
	jsonc_put(o, "comment", jsonc_string(s->comment));
	jsonc_put(st, "state", jsonc_string(s->ends_ms <= now_ms ? "expired" :
					     s->starts_ms > now_ms ? "pending" : "active"));
	jsonc_put(o, "status", st);
	return o;
}

static void get_silences(const struct http_request *req, struct http_response *resp)
{
	struct filter f = { .n = 0 };
	struct silence *sil;
	struct conn *rc;
	json_object *out;
	uint64_t now_ms = time_wall_ns() / NSEC_PER_MSEC;
	char err[300];
	int n;

	http_args(req, "filter", filter_add, &f);
	if (f.bad) {
		reply_error(resp, 400, "filter: %s", f.err);
		filter_free(&f);
		return;
	}
	if (!(rc = redis(resp))) {
		filter_free(&f);
		return;
	}
	n = silence_load(rc, &sil, err, sizeof(err));
	if (n < 0) {
		filter_free(&f);
		redis_failed(resp, "reading the silences", err);
		return;
	}
	out = json_object_new_array();
	for (int i = 0; i < n; i++)
		if (silence_matches_filter(&sil[i], f.m, f.n))
			json_object_array_add(out, silence_json(&sil[i], now_ms));
	silence_free_all(sil, n);
	filter_free(&f);
	reply_json(resp, 200, out);
}

/* A postableSilence (the body) into s; -1 with the answer given. */
static int silence_from_json(const struct http_request *req, struct silence *s,
			     struct http_response *resp)
{
	char err[600];

	if (silence_parse_postable(s, req->body, req->len, time_wall_ns() / NSEC_PER_MSEC, err,
				   sizeof(err))) {
		reply_error(resp, 400, "%s", err);
		return -1;
	}
	return 0;
}

static void post_silence(const struct http_request *req, struct http_response *resp)
{
	struct silence s, old;
	struct conn *rc;
	json_object *out;
	char err[300];
	int ret, update;

	if (silence_from_json(req, &s, resp))
		return;
	if (!(rc = redis(resp)))
		goto out;
	update = s.id[0] != '\0';
	if (update) {
		/* an update: of a silence that exists */
		ret = silence_get(rc, s.id, &old, err, sizeof(err));
		if (ret == -ENOENT) {
			reply_error(resp, 404, "silence %s not found", s.id);
			goto out;
		}
		if (ret == -EIO) {
			redis_failed(resp, "reading the silence", err);
			goto out;
		}
		if (ret == 0)
			for (int i = 0; i < old.nm; i++)
				matcher_free(&old.m[i]);
		ret = silence_put(rc, &s, err, sizeof(err));
	} else {
		ret = silence_add(rc, &s, err, sizeof(err));
	}
	if (ret) {
		redis_failed(resp, "storing the silence", err);
		goto out;
	}
	log_info("API: silence %s %s by %s (%s)", s.id, update ? "updated" : "added",
		 s.created_by, s.comment);
	out = json_object_new_object();
	jsonc_put(out, "silenceID", jsonc_string(s.id));
	reply_json(resp, 200, out);
out:
	for (int i = 0; i < s.nm; i++)
		matcher_free(&s.m[i]);
}

static void one_silence(const struct http_request *req, struct http_response *resp,
			const char *id)
{
	struct silence s;
	struct conn *rc;
	char err[300];
	int ret;

	if (!*id || strchr(id, '/')) {
		reply_error(resp, 404, "no such silence");
		return;
	}
	if (!(rc = redis(resp)))
		return;
	if (!strcmp(req->method, "DELETE")) {
		ret = silence_expire(rc, id, err, sizeof(err));
		if (ret == -ENOENT)
			reply_error(resp, 404, "silence %s not found", id);
		else if (ret)
			redis_failed(resp, "expiring the silence", err);
		else {
			log_info("API: silence %s expired", id);
			reply_json(resp, 200, json_object_new_object());
		}
		return;
	}
	ret = silence_get(rc, id, &s, err, sizeof(err));
	if (ret == -ENOENT) {
		reply_error(resp, 404, "silence %s not found", id);
	} else if (ret == -EINVAL) {
		reply_error(resp, 500, "silence %s is not of the right shape in Redis: %s", id, err);
	} else if (ret) {
		redis_failed(resp, "reading the silence", err);
	} else {
		reply_json(resp, 200, silence_json(&s, time_wall_ns() / NSEC_PER_MSEC));
		for (int i = 0; i < s.nm; i++)
			matcher_free(&s.m[i]);
	}
}

/* ---- the rest ------------------------------------------------------------- */

static void get_receivers(struct http_response *resp)
{
	json_object *out = json_object_new_array();

	pthread_rwlock_rdlock(&api.al->cfg_lock);
	for (int i = 0; i < api.al->cfg.nreceiver_names; i++) {
		json_object *r = json_object_new_object();

		jsonc_put(r, "name", jsonc_string(api.al->cfg.receiver_names[i].name));
		json_object_array_add(out, r);
	}
	pthread_rwlock_unlock(&api.al->cfg_lock);
	reply_json(resp, 200, out);
}

static void get_status(struct http_response *resp)
{
	json_object *o = json_object_new_object(), *cl = json_object_new_object();
	json_object *cf = json_object_new_object();
	char *text = NULL;
	size_t len = 0;
	char err[300];

	jsonc_put(cl, "status", jsonc_string("disabled"));
	jsonc_put(cl, "peers", json_object_new_array());
	jsonc_put(o, "cluster", cl);
	jsonc_put(o, "versionInfo", jsonc_build_info());
	if (api.config_path[0] && cfg_read_file(api.config_path, &text, &len, err, sizeof(err)))
		text = NULL;
	jsonc_put(cf, "original", jsonc_string(api.config_path[0] ? (text ? text : "")
								   : alerter_default_config));
	free(text);
	jsonc_put(o, "config", cf);
	jsonc_put(o, "uptime", alert_view_time(api.started_ms));
	reply_json(resp, 200, o);
}

static void serve_api(void *arg, const struct http_request *req, struct http_response *resp)
{
	const char *p = req->path + strlen("/api/v2");
	int get = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");

	(void)arg;
	if (!strcmp(p, "/alerts") && get)
		get_alerts(req, resp, 0);
	else if (!strcmp(p, "/alerts") && !strcmp(req->method, "POST"))
		reply_error(resp, 501, "faultline-alerter takes alerts from its rules engine "
			    "(fl:alerts), not over this API");
	else if (!strcmp(p, "/alerts/groups") && get)
		get_alerts(req, resp, 1);
	else if (!strcmp(p, "/silences") && get)
		get_silences(req, resp);
	else if (!strcmp(p, "/silences") && !strcmp(req->method, "POST"))
		post_silence(req, resp);
	else if (!strncmp(p, "/silence/", 9) && (get || !strcmp(req->method, "DELETE")))
		one_silence(req, resp, p + 9);
	else if (!strcmp(p, "/receivers") && get)
		get_receivers(resp);
	else if (!strcmp(p, "/status") && get)
		get_status(resp);
	else
		reply_error(resp, 404, "%s %s: not part of faultline's Alertmanager API (see "
			    "docs/alerter.md)", req->method, req->path);
}

static void serve_health(void *arg, const struct http_request *req, struct http_response *resp)
{
	struct conn *rc;

	(void)arg;
	if (!strcmp(req->path, "/-/healthy")) {
		reply_text(resp, 200, "OK");
	} else if (!strcmp(req->path, "/-/ready")) {
		/* ready: the API can answer, which needs Redis */
		uint64_t version;
		char err[300];

		if ((rc = redis(resp))) {
			if (alert_index_version(rc, &version, err, sizeof(err)) == 0)
				reply_text(resp, 200, "OK");
			else
				redis_failed(resp, "not ready: Redis", err);
		}
	} else {
		reply_text(resp, 404, "not found\n");
	}
}

int api_start(struct alerter *al, struct metrics_server *m, const char *config_path)
{
	api.al = al;
	api.started_ms = time_wall_ns() / NSEC_PER_MSEC;
	snprintf(api.config_path, sizeof(api.config_path), "%s", config_path ? config_path : "");
	if (metrics_server_route(m, "/api/v2/", serve_api, NULL) ||
	    metrics_server_route(m, "/-/", serve_health, NULL))
		return -1;
	return 0;
}

void api_stop(void)
{
	conn_close(api.rc);
	api.rc = NULL;
}
