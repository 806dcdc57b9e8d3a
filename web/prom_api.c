/*
 * prom_api.c - Prometheus' HTTP API over faultline's tiers; see prom_api.h.
 *
 * Requests are served one at a time on the server's thread (metrics_server
 * routes), each with the API's one Redis connection.  Arguments come from
 * the URL or a POSTed form alike (http_arg), as Prometheus takes them.
 */
#include "web/prom_api.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "core/jsonc.h"
#include "core/strbuf.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "model/catalog.h"
#include "store/alert_index.h"
#include "store/conn.h"
#include "web/float_text.h"

#define JSON_TYPE "application/json"
#define MAX_MATCH 64

struct prom_api {
	char url[600];
	struct query_opts o;
	struct conn *rc;
	pthread_mutex_t lock;		/* st: written on the server's thread, read by main */
	struct prom_api_stats st;
};

struct prom_api *prom_api_new(const char *url, const struct query_opts *o)
{
	struct prom_api *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	snprintf(a->url, sizeof(a->url), "%s", url);
	a->o = *o;
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

void prom_api_free(struct prom_api *a)
{
	if (!a)
		return;
	conn_close(a->rc);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void prom_api_stats(struct prom_api *a, struct prom_api_stats *out)
{
	pthread_mutex_lock(&a->lock);
	*out = a->st;
	pthread_mutex_unlock(&a->lock);
}

/* ---- arguments ------------------------------------------------------- */

/*
 * s as a number of seconds (fractions too), the form times and durations
 * share: 1 with *out_ms set, 0 when s is not a plain number, -1 when it is
 * one out of range.
 */
static int parse_seconds(const char *s, uint64_t *out_ms)
{
	char *end;
	double x = strtod(s, &end);

	if (end == s || *end)
		return 0;
	if (!isfinite(x) || x < 0 || x > 9.2e12)
		return -1;
	*out_ms = (uint64_t)llround(x * 1000.0);
	return 1;
}

int prom_parse_time(const char *s, uint64_t *out_ms)
{
	struct tm tm;
	const char *p;
	long off = 0, ms = 0;
	time_t t;
	int num;

	if (!s || !*s)
		return -1;
	if ((num = parse_seconds(s, out_ms)))
		return num > 0 ? 0 : -1;
	memset(&tm, 0, sizeof(tm));
	if (!(p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		return -1;
	if (*p == '.') {
		long scale = 100;

		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			ms += scale > 0 ? (*p - '0') * scale : 0;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int h = atoi(p + 1), m = atoi(p + 4);

		off = (*p == '-' ? -1 : 1) * (h * 3600L + m * 60L);
		p += 6;
	} else {
		return -1;
	}
	if (*p || (t = timegm(&tm)) == (time_t)-1 || t - off < 0)
		return -1;
	*out_ms = (uint64_t)(t - off) * 1000 + (uint64_t)ms;
	return 0;
}

int prom_parse_duration(const char *s, uint64_t *out_ms)
{
	uint64_t ns;
	int num;

	if (!s || !*s)
		return -1;
	if ((num = parse_seconds(s, out_ms)))
		return num > 0 ? 0 : -1;
	if (duration_parse(s, &ns))
		return -1;
	*out_ms = ns / 1000000;
	return 0;
}

/* ---- answers --------------------------------------------------------- */

static void reply(struct http_response *resp, unsigned int status, json_object *o)
{
	const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						       JSON_C_TO_STRING_NOSLASHESCAPE);

	resp->status = status;
	resp->content_type = JSON_TYPE;
	resp->body = s ? strdup(s) : NULL;
	resp->len = resp->body ? strlen(resp->body) : 0;
	json_object_put(o);
}

static void reply_data(struct http_response *resp, json_object *data, json_object *extra)
{
	json_object *o = json_object_new_object();

	jsonc_put(o, "status", jsonc_string("success"));
	jsonc_put(o, "data", data);
	if (extra)
		jsonc_put(o, "faultline", extra);
	reply(resp, 200, o);
}

static const char *const error_type[] = {
	[QUERY_BAD_DATA] = "bad_data", [QUERY_EXECUTION] = "execution",
	[QUERY_TIMEOUT] = "timeout", [QUERY_UNAVAILABLE] = "unavailable",
	[QUERY_INTERNAL] = "internal",
};
static const unsigned int error_status[] = {
	[QUERY_BAD_DATA] = 400, [QUERY_EXECUTION] = 422, [QUERY_TIMEOUT] = 503,
	[QUERY_UNAVAILABLE] = 503, [QUERY_INTERNAL] = 500,
};

static void reply_error(struct prom_api *a, struct http_response *resp, enum query_error e,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void reply_error(struct prom_api *a, struct http_response *resp, enum query_error e,
			const char *fmt, ...)
{
	json_object *o = json_object_new_object();
	char msg[1200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	jsonc_put(o, "status", jsonc_string("error"));
	jsonc_put(o, "errorType", jsonc_string(error_type[e]));
	jsonc_put(o, "error", jsonc_string(msg));
	pthread_mutex_lock(&a->lock);
	a->st.failed++;
	pthread_mutex_unlock(&a->lock);
	reply(resp, error_status[e], o);
}

size_t prom_time_text(uint64_t ms, char *buf)
{
	size_t n = uint_text(ms / 1000, buf);
	unsigned int frac = (unsigned int)(ms % 1000);
	int digits = 3;

	if (!frac)
		return n;
	while (frac % 10 == 0) {	/* ".25", not ".250" */
		frac /= 10;
		digits--;
	}
	buf[n++] = '.';
	for (int i = digits - 1; i >= 0; i--, frac /= 10)
		buf[n + (size_t)i] = (char)('0' + frac % 10);
	return n + (size_t)digits;
}

/* A timestamp as a JSON number written as prom_time_text writes it. */
static json_object *json_time(uint64_t ms)
{
	char buf[33];

	buf[prom_time_text(ms, buf)] = '\0';
	return json_object_new_double_s((double)ms / 1000.0, buf);
}

static json_object *json_labels(const struct label *l, int n)
{
	json_object *m = json_object_new_object();

	for (int i = 0; i < n; i++)
		jsonc_put(m, l[i].key, jsonc_string(l[i].value));
	return m;
}

/*
 * A point as the API writes one, [1764500000.25,"0.5"], straight into sb:
 * a range of an hour at 1 s is 3,600 of them, and a json-c array, number
 * and string apiece cost more than the query's evaluation.  Neither part
 * needs escaping (digits, '.', "NaN", "+Inf", "-Inf").
 */
static void write_point(struct strbuf *sb, uint64_t ms, double v)
{
	char buf[32 + FLOAT_TEXT_MAX + 8], *p = buf;

	*p++ = '[';
	p += prom_time_text(ms, p);
	*p++ = ',';
	*p++ = '"';
	p += float_text(v, p);
	*p++ = '"';
	*p++ = ']';
	strbuf_add(sb, buf, (size_t)(p - buf));
}

/*
 * The answer of a query: Prometheus's {"status":"success","data":{...}} with
 * faultline's extra object beside it (taken over).  Labels and extra go
 * through json-c (escaping, UTF-8); the points are written by write_point.
 */
static void reply_result(struct http_response *resp, const struct query_result *r,
			 json_object *extra)
{
	static const char *const type[] = {
		[QUERY_SCALAR] = "scalar", [QUERY_VECTOR] = "vector", [QUERY_MATRIX] = "matrix",
	};
	struct strbuf sb = STRBUF_INIT;

	strbuf_adds(&sb, "{\"status\":\"success\",\"data\":{\"resultType\":\"");
	strbuf_adds(&sb, type[r->type]);
	strbuf_adds(&sb, "\",\"result\":");
	if (r->type == QUERY_SCALAR)
		write_point(&sb, r->at_ms, r->scalar);
	else
		strbuf_add(&sb, "[", 1);
	for (size_t i = 0; r->type != QUERY_SCALAR && i < r->n; i++) {
		json_object *m = json_labels(r->s[i].labels, r->s[i].nlabels);

		strbuf_adds(&sb, i ? ",{\"metric\":" : "{\"metric\":");
		jsonc_append(&sb, m);
		json_object_put(m);
		if (r->type == QUERY_VECTOR) {
			strbuf_adds(&sb, ",\"value\":");
			write_point(&sb, r->s[i].ts[0], r->s[i].v[0]);
		} else {
			strbuf_adds(&sb, ",\"values\":[");
			for (size_t k = 0; k < r->s[i].n; k++) {
				if (k)
					strbuf_add(&sb, ",", 1);
				write_point(&sb, r->s[i].ts[k], r->s[i].v[k]);
			}
			strbuf_add(&sb, "]", 1);
		}
		strbuf_add(&sb, "}", 1);
	}
	if (r->type != QUERY_SCALAR)
		strbuf_add(&sb, "]", 1);
	strbuf_adds(&sb, "},\"faultline\":");
	jsonc_append(&sb, extra);
	json_object_put(extra);
	strbuf_add(&sb, "}", 1);
	resp->status = 200;
	resp->content_type = JSON_TYPE;
	if (strbuf_failed(&sb)) {
		strbuf_release(&sb);
		resp->status = 500;
		resp->body = NULL;
		resp->len = 0;
		return;
	}
	resp->len = sb.len;
	resp->body = sb.buf;	/* taken over: the server frees it */
}

/* The API's Redis connection, opened (again) when there is none; NULL: answered. */
static struct conn *redis(struct prom_api *a, struct http_response *resp)
{
	char err[300];

	if (a->rc)
		return a->rc;
	a->rc = conn_open(a->url, 2 * NSEC_PER_SEC, err, sizeof(err));
	if (!a->rc)
		reply_error(a, resp, QUERY_UNAVAILABLE, "Redis is unreachable: %s", err);
	return a->rc;
}

/* A query failed for want of Redis: the connection is dropped, the next opens one. */
static void unavailable(struct prom_api *a)
{
	conn_close(a->rc);
	a->rc = NULL;
}

/* ---- /api/v1/query, /api/v1/query_range ------------------------------ */

static const char *tier_name(uint32_t tier)
{
	return tier == 1 ? "1s" : tier == 60 ? "1m" : "1h";
}

/* The query's own timeout argument, no longer than the server's. */
static int query_timeout(struct prom_api *a, const struct http_request *req,
			 struct http_response *resp, struct query_opts *o)
{
	const char *t = http_arg(req, "timeout");
	uint64_t ms;

	*o = a->o;
	if (!t)
		return 0;
	if (prom_parse_duration(t, &ms)) {
		reply_error(a, resp, QUERY_BAD_DATA, "invalid parameter \"timeout\": cannot parse "
			    "\"%s\" to a valid duration", t);
		return -1;
	}
	if (ms && ms < o->timeout_ms)
		o->timeout_ms = ms;
	return 0;
}

static void answer_query(struct prom_api *a, const struct http_request *req,
			 struct http_response *resp, int range)
{
	const char *q = http_arg(req, "query");
	const char *names[3] = { range ? "start" : "time", "end", "step" };
	uint64_t v[3] = { 0 }, t0 = time_mono_ns();
	struct query_result r;
	struct query_opts o;
	json_object *extra;
	enum query_error e;
	struct conn *rc;
	char err[1024];

	v[0] = v[1] = time_wall_ns() / 1000000;
	for (int i = 0; i < (range ? 3 : 1); i++) {
		const char *s = http_arg(req, names[i]);

		if (!s && !range)
			continue;	/* time: now */
		if (!s || (i < 2 ? prom_parse_time(s, &v[i]) : prom_parse_duration(s, &v[i]))) {
			reply_error(a, resp, QUERY_BAD_DATA, "invalid parameter \"%s\": %s", names[i],
				    !s ? "missing" : i < 2 ? "cannot parse it to a valid timestamp" :
				    "cannot parse it to a valid duration");
			return;
		}
	}
	if (!range)
		v[1] = v[0];
	if (range && !v[2]) {
		reply_error(a, resp, QUERY_BAD_DATA, "zero or negative query resolution step widths "
			    "are not accepted. Try a positive integer");
		return;
	}
	if (!q || !*q) {
		reply_error(a, resp, QUERY_BAD_DATA, "invalid parameter \"query\": no query given");
		return;
	}
	if (query_timeout(a, req, resp, &o) || !(rc = redis(a, resp)))
		return;
	e = query_run(rc, &o, q, v[0], v[1], range ? v[2] : 0, &r, err, sizeof(err));
	pthread_mutex_lock(&a->lock);
	a->st.seconds += (double)(time_mono_ns() - t0) / 1e9;
	if (!e) {
		a->st.queries[r.tier == 1 ? 0 : r.tier == 60 ? 1 : 2]++;
		a->st.samples += r.samples;
	}
	pthread_mutex_unlock(&a->lock);
	if (e) {
		if (e == QUERY_UNAVAILABLE)
			unavailable(a);
		reply_error(a, resp, e, "%s", err);
		return;
	}
	extra = json_object_new_object();
	jsonc_put(extra, "tier", jsonc_string(tier_name(r.tier)));
	jsonc_put(extra, "memory", json_object_new_boolean(r.from_memory));
	if (r.memory_from_ms)	/* the tail served the range from there, Redis before */
		jsonc_put(extra, "memory_from", json_time(r.memory_from_ms));
	jsonc_put(extra, "hosts", json_object_new_int64((int64_t)r.hosts_read));
	jsonc_put(extra, "samples", json_object_new_int64((int64_t)r.samples));
	jsonc_put(extra, "steps", json_object_new_int64((int64_t)r.steps));
	reply_result(resp, &r, extra);
	query_result_free(&r);
}

/* ---- /api/v1/series, /labels, /label/NAME/values --------------------- */

struct matches {
	const char *m[MAX_MATCH];
	int n, over;
};

static void match_add(const char *value, void *arg)
{
	struct matches *m = arg;

	if (m->n < MAX_MATCH)
		m->m[m->n++] = value;
	else
		m->over = 1;
}

enum listing { LIST_SERIES, LIST_LABELS, LIST_VALUES };

struct lister {
	enum listing what;
	const char *label;		/* LIST_VALUES: whose values */
	struct strmap seen;
	json_object *out;		/* an array */
	struct strbuf key;
	int nomem;
};

static void listed(const struct label *l, int nl, void *arg)
{
	struct lister *ls = arg;
	uint32_t idx;

	for (int i = 0; i < nl; i++) {
		const char *k = ls->what == LIST_LABELS ? l[i].key : l[i].value;

		if (ls->what == LIST_SERIES)
			break;
		if (ls->what == LIST_VALUES && strcmp(l[i].key, ls->label))
			continue;
		if (strmap_get(&ls->seen, k, &idx))
			continue;
		if (strmap_put(&ls->seen, k, 0))
			ls->nomem = 1;
		else
			json_object_array_add(ls->out, jsonc_string(k));
	}
	if (ls->what != LIST_SERIES)
		return;
	strbuf_reset(&ls->key);
	for (int i = 0; i < nl; i++)
		strbuf_addf(&ls->key, "%s\x1f%s\x1e", l[i].key, l[i].value);
	if (strbuf_failed(&ls->key) || strmap_get(&ls->seen, strbuf_str(&ls->key), &idx))
		return;
	if (strmap_put(&ls->seen, strbuf_str(&ls->key), 0))
		ls->nomem = 1;
	else
		json_object_array_add(ls->out, json_labels(l, nl));
}

static int str_cmp(const void *x, const void *y)
{
	const char *a = json_object_get_string(*(json_object *const *)x);
	const char *b = json_object_get_string(*(json_object *const *)y);

	return strcmp(a, b);
}

static void answer_list(struct prom_api *a, const struct http_request *req,
			struct http_response *resp, enum listing what, const char *label)
{
	struct lister ls = { what, label, { 0 }, NULL, STRBUF_INIT, 0 };
	struct matches m = { { 0 }, 0, 0 };
	uint64_t start = 0, end = time_wall_ns() / 1000000;
	const char *s;
	enum query_error e;
	struct conn *rc;
	char err[1024];

	http_args(req, "match[]", match_add, &m);
	if (m.over) {
		reply_error(a, resp, QUERY_BAD_DATA, "more than %d match[] parameters", MAX_MATCH);
		return;
	}
	if (what == LIST_SERIES && !m.n) {
		reply_error(a, resp, QUERY_BAD_DATA, "no match[] parameter provided");
		return;
	}
	if (((s = http_arg(req, "start")) && prom_parse_time(s, &start)) ||
	    ((s = http_arg(req, "end")) && prom_parse_time(s, &end))) {
		reply_error(a, resp, QUERY_BAD_DATA, "invalid parameter \"%s\": cannot parse \"%s\" "
			    "to a valid timestamp", s == http_arg(req, "start") ? "start" : "end", s);
		return;
	}
	if (!(rc = redis(a, resp)))
		return;
	strmap_init(&ls.seen);
	ls.out = json_object_new_array();
	if (what == LIST_LABELS)
		listed(&(struct label){ "__name__", "" }, 1, &ls);	/* every series has one */
	e = query_series(rc, &a->o, m.m, m.n, start, end, listed, &ls, err, sizeof(err));
	strmap_free(&ls.seen);
	strbuf_release(&ls.key);
	if (e || ls.nomem) {
		json_object_put(ls.out);
		if (e == QUERY_UNAVAILABLE)
			unavailable(a);
		reply_error(a, resp, e ? e : QUERY_INTERNAL, "%s", e ? err : "out of memory");
		return;
	}
	if (what != LIST_SERIES)
		json_object_array_sort(ls.out, str_cmp);
	reply_data(resp, ls.out, NULL);
}

/* ---- /api/v1/metadata, /api/v1/status/buildinfo ---------------------- */

static void answer_metadata(struct prom_api *a, const struct http_request *req,
			    struct http_response *resp)
{
	const char *metric = http_arg(req, "metric"), *ls = http_arg(req, "limit");
	json_object *data = json_object_new_object();
	long limit = ls ? strtol(ls, NULL, 10) : -1, n = 0;

	(void)a;
	for (const struct metric_info *m = catalog; m->name && (limit < 0 || n < limit); m++) {
		json_object *arr, *e;

		if ((metric && *metric && strcmp(metric, m->name)))
			continue;
		arr = json_object_new_array();
		e = json_object_new_object();
		jsonc_put(e, "type", jsonc_string(m->kind == SERIES_COUNTER ? "counter" :
						  m->kind == SERIES_GAUGE ? "gauge" : "histogram"));
		jsonc_put(e, "help", jsonc_string(m->help));
		jsonc_put(e, "unit", jsonc_string(m->unit == UNIT_NONE ? "" :
						  catalog_unit_name(m->unit)));
		json_object_array_add(arr, e);
		jsonc_put(data, m->name, arr);
		n++;
	}
	reply_data(resp, data, NULL);
}

static void answer_buildinfo(struct http_response *resp)
{
	reply_data(resp, jsonc_build_info(), NULL);
}

/* ---- routing --------------------------------------------------------- */

void prom_api_handle(void *arg, const struct http_request *req, struct http_response *resp)
{
	struct prom_api *a = arg;
	const char *p = req->path, *get = !strcmp(req->method, "GET") ? "" : NULL;
	int post = !strcmp(req->method, "POST");
	char label[256];
	size_t len;

	if (!strcmp(p, "/-/healthy")) {
		resp->status = 200;
		resp->content_type = "text/plain; charset=utf-8";
		resp->body = strdup("faultline-web is Healthy.\n");
		resp->len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	if (!strcmp(p, "/-/ready")) {
		uint64_t version;
		char err[300];
		int up = redis(a, resp) && alert_index_version(a->rc, &version, err,
								 sizeof(err)) == 0;

		if (a->rc && !up)
			unavailable(a);
		if (resp->body)
			return;	/* redis() answered */
		resp->status = up ? 200 : 503;
		resp->content_type = "text/plain; charset=utf-8";
		resp->body = strdup(up ? "faultline-web is Ready.\n" :
				    "faultline-web is not ready: Redis does not answer.\n");
		resp->len = resp->body ? strlen(resp->body) : 0;
		return;
	}
	if (!get && !post) {
		reply_error(a, resp, QUERY_BAD_DATA, "method %s is not allowed here", req->method);
		resp->status = 405;
		return;
	}
	if (!strcmp(p, "/api/v1/query"))
		answer_query(a, req, resp, 0);
	else if (!strcmp(p, "/api/v1/query_range"))
		answer_query(a, req, resp, 1);
	else if (!strcmp(p, "/api/v1/series"))
		answer_list(a, req, resp, LIST_SERIES, NULL);
	else if (!strcmp(p, "/api/v1/labels"))
		answer_list(a, req, resp, LIST_LABELS, NULL);
	else if (!strncmp(p, "/api/v1/label/", 14) && (len = strlen(p)) > 14 + 7 &&
		 !strcmp(p + len - 7, "/values") && len - 14 - 7 < sizeof(label)) {
		snprintf(label, sizeof(label), "%.*s", (int)(len - 14 - 7), p + 14);
		answer_list(a, req, resp, LIST_VALUES, label);
	} else if (!strcmp(p, "/api/v1/metadata"))
		answer_metadata(a, req, resp);
	else if (!strcmp(p, "/api/v1/status/buildinfo"))
		answer_buildinfo(resp);
	else {
		reply_error(a, resp, QUERY_BAD_DATA, "%s is not an endpoint of faultline-web's "
			    "Prometheus API (query, query_range, series, labels, label/NAME/values, "
			    "metadata, status/buildinfo)", p);
		resp->status = 404;
	}
}
