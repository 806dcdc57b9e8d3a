/*
 * test_remote_write.c - Prometheus remote write out of the probe
 * (probes/remote_write.h): the samples are /metrics' own, the requests are
 * WriteRequests a receiver decodes, retries keep order and count every
 * sample once, and a real Prometheus that took them answers rate() and
 * histogram_quantile() with what faultline's minute tier holds.
 */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "remote.pb-c.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "model/rollup.h"
#include "probes/prom.h"
#include "probes/remote_write.h"
#include "tests/helpers.h"
#include "tests/receiver.h"

static const struct label own[] = { { "rack", "r7" }, { "switch", "sw2" } };

/* A probe-like snapshot: a counter, a gauge in ns (scaled), a latency histogram. */
static void fill(struct snapshot *s, uint64_t ts_ms, uint64_t ios, uint64_t fast, uint64_t slow)
{
	struct series *h;

	cr_assert_eq(snapshot_init(s, "web-3", ts_ms, 1000, ts_ms / 1000, 1), 0);
	snapshot_add_counter(s, "block.ios", ios, "device", "sda", "op", "read", NULL);
	snapshot_add_gauge(s, "probe.collect_duration", 2500000.0, NULL);
	h = snapshot_add(s, "block.latency", SERIES_HISTOGRAM, "device", "sda", "op", "read", NULL);
	hist_record_n(h->hist, 3000000, fast);		/* 3 ms */
	hist_record_n(h->hist, 40000000, slow);		/* 40 ms */
}

struct seen {
	struct strbuf lines;	/* "name{labels} value" as /metrics would print it */
	int sorted, has_host, has_rack, n;
};

static void collect_sample(const struct label *l, uint32_t n, double v, int64_t ts, void *arg)
{
	struct seen *sn = arg;
	const char *name = NULL;
	int first = 1;

	(void)ts;
	sn->n++;
	for (uint32_t i = 0; i < n; i++) {
		if (i && strcmp(l[i - 1].key, l[i].key) >= 0)
			sn->sorted = 0;
		if (!strcmp(l[i].key, "__name__"))
			name = l[i].value;
		sn->has_host += !strcmp(l[i].key, "host") && !strcmp(l[i].value, "web-3");
		sn->has_rack += !strcmp(l[i].key, "rack") && !strcmp(l[i].value, "r7");
	}
	cr_assert_not_null(name);
	/* /metrics has no host or probe labels (a scraper adds its own): left out */
	strbuf_adds(&sn->lines, name);
	for (uint32_t i = 0; i < n; i++) {
		if (!strcmp(l[i].key, "__name__") || !strcmp(l[i].key, "host") ||
		    !strcmp(l[i].key, "rack") || !strcmp(l[i].key, "switch") ||
		    !strcmp(l[i].key, "le"))
			continue;
		strbuf_addf(&sn->lines, "%s%s=\"%s\"", first ? "{" : ",", l[i].key, l[i].value);
		first = 0;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(l[i].key, "le"))
			strbuf_addf(&sn->lines, "%sle=\"%s\"", first ? "{" : ",", l[i].value), first = 0;
	strbuf_addf(&sn->lines, "%s %.9g\n", first ? "" : "}", v);
}

/* Every sample is a line of /metrics with the same value, plus host and the probe's labels. */
Test(remote_write, samples_are_what_metrics_shows)
{
	struct snapshot s;
	struct strbuf text = STRBUF_INIT;
	struct seen sn = { .lines = STRBUF_INIT, .sorted = 1 };
	size_t n;
	char *save = NULL, *line;

	fill(&s, 1700000000000ULL, 1234, 90, 10);
	prom_render(&s, NULL, &text);
	n = remote_write_samples(&s, "web-3", own, 2, NULL, NULL, collect_sample, &sn);
	cr_assert_eq((int)n, sn.n);
	cr_assert(sn.sorted, "labels not sorted by name");
	cr_assert_eq(sn.has_host, sn.n, "every sample carries host=\"web-3\"");
	cr_assert_eq(sn.has_rack, sn.n, "every sample carries the probe's rack label");
	/* counter, gauge, and the histogram's buckets + +Inf + _sum + _count */
	cr_assert_gt(n, 2 + 3 + 10, "%zu samples", n);
	for (line = strtok_r(sn.lines.buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[512], key[520], want[600];
		double v;
		const char *at;

		cr_assert_eq(sscanf(line, "%511s %lf", name, &v), 2, "%s", line);
		snprintf(key, sizeof(key), "\n%s ", name);	/* a sample's line, not its HELP */
		at = strstr(strbuf_str(&text), key);
		cr_assert_not_null(at, "%s is not on /metrics:\n%s", name, strbuf_str(&text));
		snprintf(want, sizeof(want), "%s %.9g", name, strtod(at + strlen(key), NULL));
		cr_assert_str_eq(line, want, "remote write and /metrics differ: %s against %s", line, want);
	}
	strbuf_release(&text);
	strbuf_release(&sn.lines);
	snapshot_free(&s);
}

static struct remote_write_config config(const char *url, uint64_t tier_ns)
{
	struct remote_write_config c = {
		.url = (char *)url,
		.tier_ns = tier_ns,
		.timeout_ns = 5 * NSEC_PER_SEC,
		.queue_samples = 50000,
		.max_samples_per_send = 2000,
		.min_backoff_ns = 30 * NSEC_PER_MSEC,
		.max_backoff_ns = 200 * NSEC_PER_MSEC,
		.bearer_token_file = (char *)"",
		.basic_auth_username = (char *)"",
		.basic_auth_password_file = (char *)"",
		.ca_file = (char *)"",
	};
	return c;
}

/* Decode request i of the receiver: snappy, then a WriteRequest. */
static Prometheus__WriteRequest *decode(int i)
{
	const struct request *r = &rx.req[i];
	char hv[128];
	size_t len;
	char *raw;
	Prometheus__WriteRequest *w;

	cr_assert_not_null(header(r, "Content-Encoding", hv, sizeof(hv)));
	cr_assert_str_eq(hv, "snappy");
	cr_assert_not_null(header(r, "Content-Type", hv, sizeof(hv)));
	cr_assert_str_eq(hv, "application/x-protobuf");
	cr_assert_not_null(header(r, "X-Prometheus-Remote-Write-Version", hv, sizeof(hv)));
	cr_assert_str_eq(hv, "0.1.0");
	cr_assert_eq(snappy_uncompressed_length(r->body, r->body_len, &len), SNAPPY_OK,
		     "request %d is not snappy", i);
	raw = malloc(len + 1);
	cr_assert_eq(snappy_uncompress(r->body, r->body_len, raw, &len), SNAPPY_OK);
	w = prometheus__write_request__unpack(NULL, len, (const uint8_t *)raw);
	cr_assert_not_null(w, "request %d is not a WriteRequest", i);
	free(raw);
	return w;
}

/*
 * One request a tier window (the first snapshot in it), requests split at
 * max_samples_per_send, and every sample of the offer decoded with its
 * labels and the snapshot's timestamp.
 */
Test(remote_write, one_offer_a_tier_window_decodes_as_write_requests, .timeout = 60)
{
	struct remote_write_config c;
	struct remote_write *rw;
	struct remote_write_stats st;
	char url[64], err[256];
	uint64_t t0 = 1700000040500ULL;	/* 0.5 s into a minute, as a probe stamps */
	int offered = 0, decoded = 0, requests;

	rx_start();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write", rx.port);
	c = config(url, 60 * NSEC_PER_SEC);
	c.max_samples_per_send = 10;
	rw = remote_write_open(&c, "web-3", own, 2, NULL, err, sizeof(err));
	cr_assert_not_null(rw, "%s", err);
	/* 3 minutes of 1 s snapshots: 3 windows, so 3 offers taken */
	for (int k = 0; k < 180; k++) {
		struct snapshot s;
		int q;

		fill(&s, t0 + (uint64_t)k * 1000, 100 + (uint64_t)k, 9, 1);
		q = remote_write_offer(rw, &s);
		cr_assert_geq(q, 0);
		cr_assert(k % 60 == 0 ? q > 0 : q == 0, "second %d queued %d samples", k, q);
		offered += q;
		snapshot_free(&s);
	}
	requests = (offered + 9) / 10;
	cr_assert_eq(wait_requests(requests, 20), requests);
	for (int i = 0; i < rx_count(); i++) {
		Prometheus__WriteRequest *w = decode(i);

		cr_assert_leq(w->n_timeseries, 10);
		for (size_t t = 0; t < w->n_timeseries; t++) {
			const Prometheus__TimeSeries *ts = w->timeseries[t];

			cr_assert_eq(ts->n_samples, 1);
			cr_assert_eq((ts->samples[0]->timestamp - (int64_t)t0) % 60000, 0,
				     "a sample at %lld, not on a minute",
				     (long long)ts->samples[0]->timestamp);
			cr_assert_str_eq(ts->labels[0]->name, "__name__");
			for (size_t l = 1; l < ts->n_labels; l++)
				cr_assert_lt(strcmp(ts->labels[l - 1]->name, ts->labels[l]->name), 0);
			if (!strcmp(ts->labels[0]->value, "faultline_block_ios_total"))
				cr_assert_eq(ts->samples[0]->value,
					     100 + (ts->samples[0]->timestamp - (int64_t)t0) / 1000);
			decoded++;
		}
		prometheus__write_request__free_unpacked(w, NULL);
	}
	cr_assert_eq(decoded, offered);
	remote_write_get_stats(rw, &st);
	cr_assert_eq(st.sent, (uint64_t)offered);
	cr_assert_eq(st.pending + st.failed + st.dropped + st.retries, 0);
	cr_assert_gt(st.last_sent_ms, 0);
	remote_write_close(rw, NSEC_PER_SEC);
	rx_stop();
}

/*
 * A receiver that answers 503 for a while: the requests are retried, in
 * order, none lost or doubled.  Then one that refuses (400): those samples
 * are failed, not retried.  Then a queue too small for an outage: the
 * oldest are dropped.  Every sample is counted exactly once.
 */
Test(remote_write, retries_keep_order_refusals_and_drops_are_counted, .timeout = 90)
{
	struct remote_write_config c;
	struct remote_write *rw;
	struct remote_write_stats st;
	char url[64], err[256];
	uint64_t t0 = 1700000000000ULL, offered = 0, accepted = 0;
	int64_t last_ts = 0;

	rx_start();
	rx.status = 503;
	rx.status_until_ns = time_mono_ns() + 1500 * NSEC_PER_MSEC;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write", rx.port);
	c = config(url, NSEC_PER_SEC);
	rw = remote_write_open(&c, "web-3", own, 2, NULL, err, sizeof(err));
	cr_assert_not_null(rw, "%s", err);
	for (int k = 0; k < 5; k++) {
		struct snapshot s;

		fill(&s, t0 + (uint64_t)k * 1000, (uint64_t)k, 1, 0);
		offered += (uint64_t)remote_write_offer(rw, &s);
		snapshot_free(&s);
	}
	for (int i = 0; i < 100; i++) {
		remote_write_get_stats(rw, &st);
		if (st.sent == offered)
			break;
		usleep(100000);
	}
	cr_assert_eq(st.sent, offered, "sent %llu of %llu after the receiver came back",
		     (unsigned long long)st.sent, (unsigned long long)offered);
	cr_assert_gt(st.retries, 0);
	/* what the receiver took (200s): each offer once, in order */
	for (int i = 0; i < rx_count(); i++) {
		Prometheus__WriteRequest *w;

		if (rx.req[i].status != 200)
			continue;
		w = decode(i);
		cr_assert_geq(w->timeseries[0]->samples[0]->timestamp, last_ts);
		cr_assert_neq(w->timeseries[0]->samples[0]->timestamp, last_ts, "sent twice");
		last_ts = w->timeseries[0]->samples[0]->timestamp;
		accepted += w->n_timeseries;
		prometheus__write_request__free_unpacked(w, NULL);
	}
	cr_assert_eq(accepted, offered);

	/* a refusal: failed at once, never retried */
	rx.status = 400;
	rx.status_until_ns = 0;
	{
		struct snapshot s;
		uint64_t before = st.retries, q;
		int n0 = rx_count();

		fill(&s, t0 + 10000, 10, 1, 0);
		q = (uint64_t)remote_write_offer(rw, &s);
		offered += q;
		snapshot_free(&s);
		cr_assert_eq(wait_requests(n0 + 1, 10), n0 + 1);
		for (int i = 0; i < 50; i++) {
			remote_write_get_stats(rw, &st);
			if (st.failed == q)
				break;
			usleep(100000);
		}
		cr_assert_eq(st.failed, q);
		usleep(300000);
		cr_assert_eq(rx_count(), n0 + 1, "a refused request was sent again");
		remote_write_get_stats(rw, &st);
		cr_assert_eq(st.retries, before);
	}
	remote_write_close(rw, 0);

	/* an outage longer than the queue: the oldest go, counted */
	rx.status = 503;
	c.queue_samples = 100;
	c.max_samples_per_send = 100;
	rw = remote_write_open(&c, "web-3", own, 2, NULL, err, sizeof(err));
	cr_assert_not_null(rw, "%s", err);
	offered = 0;
	for (int k = 0; k < 20; k++) {
		struct snapshot s;

		fill(&s, t0 + (uint64_t)k * 1000, (uint64_t)k, 1, 0);
		offered += (uint64_t)remote_write_offer(rw, &s);
		snapshot_free(&s);
	}
	remote_write_get_stats(rw, &st);
	cr_assert_gt(st.dropped, 0, "a queue of 100 held %llu samples",
		     (unsigned long long)offered);
	cr_assert_leq(st.pending, 100 + 40, "pending %llu", (unsigned long long)st.pending);
	cr_assert_eq(st.sent + st.failed + st.dropped + st.pending, offered);
	remote_write_close(rw, 0);
	rx_stop();
}

/*
 * Credentials come from files (core/secret.h): a bearer token is sent as
 * Authorization, basic auth as such; a token file others can read, or a
 * username without a password file, is refused at open, naming the key.
 */
/* the secrets' folder, removed even when the test fails */
static char secrets_dir[64];

static void remove_secrets(void)
{
	if (secrets_dir[0])
		test_remove_dir(secrets_dir);
	secrets_dir[0] = '\0';
}

Test(remote_write, credentials_come_from_files, .fini = remove_secrets, .timeout = 60)
{
	struct remote_write_config c;
	struct remote_write *rw;
	struct snapshot s;
	char url[64], err[256], *dir = secrets_dir, tok[96], pw[96], hv[256];

	snprintf(secrets_dir, sizeof(secrets_dir), "/tmp/fl-rwsec.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(tok, sizeof(tok), "%s/token", dir);
	snprintf(pw, sizeof(pw), "%s/password", dir);
	cr_assert_eq(test_sh("umask 077; printf 's3cr3t-token\\n' > %s; printf 'pw' > %s", tok,
			     pw), 0);
	rx_start();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write", rx.port);
	c = config(url, NSEC_PER_SEC);
	c.bearer_token_file = tok;
	rw = remote_write_open(&c, "web-3", NULL, 0, NULL, err, sizeof(err));
	cr_assert_not_null(rw, "%s", err);
	fill(&s, 1700000000500ULL, 1, 1, 0);
	cr_assert_gt(remote_write_offer(rw, &s), 0);
	cr_assert_eq(wait_requests(1, 10), 1);
	cr_assert_not_null(header(&rx.req[0], "Authorization", hv, sizeof(hv)));
	cr_assert_str_eq(hv, "Bearer s3cr3t-token");
	remote_write_close(rw, NSEC_PER_SEC);

	c.bearer_token_file = (char *)"";
	c.basic_auth_username = (char *)"fleet";
	c.basic_auth_password_file = pw;
	rw = remote_write_open(&c, "web-3", NULL, 0, NULL, err, sizeof(err));
	cr_assert_not_null(rw, "%s", err);
	s.ts_ms += 1000;
	cr_assert_gt(remote_write_offer(rw, &s), 0);
	cr_assert_eq(wait_requests(2, 10), 2);
	cr_assert_not_null(header(&rx.req[1], "Authorization", hv, sizeof(hv)));
	cr_assert_str_eq(hv, "Basic ZmxlZXQ6cHc=");	/* fleet:pw */
	remote_write_close(rw, NSEC_PER_SEC);
	snapshot_free(&s);

	c.basic_auth_password_file = (char *)"";
	{
		/* a label the receiver would refuse every minute is refused at open */
		static const struct label bad[] = { { "rack-row", "r7" } };

		cr_assert_null(remote_write_open(&c, "web-3", bad, 1, NULL, err, sizeof(err)));
		cr_assert(strstr(err, "'rack-row' (labels:) is not a Prometheus label name"), "%s",
			  err);
	}
	cr_assert_null(remote_write_open(&c, "web-3", NULL, 0, NULL, err, sizeof(err)));
	cr_assert(strstr(err, "basic_auth: a username needs a password_file"), "%s", err);
	c.basic_auth_username = (char *)"";
	c.bearer_token_file = tok;
	cr_assert_eq(test_sh("chmod 644 %s", tok), 0);
	cr_assert_null(remote_write_open(&c, "web-3", NULL, 0, NULL, err, sizeof(err)));
	cr_assert(strstr(err, tok), "the error names the file: %s", err);
	rx_stop();
}

/* ---- against a real Prometheus ---- */

static pid_t prom_pid, probe_pid;
static char prom_dir[64];
static struct test_redis probe_redis;

/* Prometheus, and the probe and its Redis if a test started them, even when it failed. */
static void stop_prometheus(void)
{
	if (probe_pid > 0) {
		kill(probe_pid, SIGTERM);
		waitpid(probe_pid, NULL, 0);
	}
	probe_pid = 0;
	if (probe_redis.url[0])
		test_redis_destroy(&probe_redis);
	memset(&probe_redis, 0, sizeof(probe_redis));
	if (prom_pid > 0) {
		kill(prom_pid, SIGTERM);
		waitpid(prom_pid, NULL, 0);
	}
	prom_pid = 0;
	if (prom_dir[0])
		test_remove_dir(prom_dir);
	prom_dir[0] = '\0';
}

static size_t keep(char *p, size_t s, size_t n, void *u)
{
	strbuf_add(u, p, s * n);
	return s * n;
}

/* GET url into out; the HTTP status. */
static long get(const char *url, struct strbuf *out)
{
	CURL *c = curl_easy_init();
	long status = 0;

	strbuf_reset(out);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	return status;
}

/* The one value of an instant query at t (s), NAN if none; *host gets its host label. */
static double query(int port, const char *q, uint64_t t, char *host, size_t hostlen)
{
	struct strbuf out = STRBUF_INIT;
	char url[1024], *esc;
	CURL *c = curl_easy_init();
	double v = NAN;
	json_object *doc, *res, *el, *val, *metric, *h;

	esc = curl_easy_escape(c, q, 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/query?query=%s&time=%llu", port,
		 esc, (unsigned long long)t);
	curl_free(esc);
	curl_easy_cleanup(c);
	cr_assert_eq(get(url, &out), 200, "%s: %s", q, strbuf_str(&out));
	doc = json_tokener_parse(strbuf_str(&out));
	cr_assert_not_null(doc);
	if (json_object_object_get_ex(doc, "data", &res) &&
	    json_object_object_get_ex(res, "result", &res) && json_object_array_length(res) == 1) {
		el = json_object_array_get_idx(res, 0);
		if (json_object_object_get_ex(el, "value", &val))
			v = strtod(json_object_get_string(json_object_array_get_idx(val, 1)), NULL);
		if (host && json_object_object_get_ex(el, "metric", &metric) &&
		    json_object_object_get_ex(metric, "host", &h))
			snprintf(host, hostlen, "%s", json_object_get_string(h));
	}
	cr_log_info("Prometheus: %s = %g", q, v);
	json_object_put(doc);
	strbuf_release(&out);
	return v;
}

/* The classic bucket (its upper bound) that x falls in, of the default seconds bounds. */
static double bucket_of(double x)
{
	double le = 1e-6;

	while (le < x)
		le *= 2;
	return le;
}

/* Debian's Prometheus on 127.0.0.1:port with the remote write receiver on, ready. */
static void start_prometheus(int pport)
{
	struct strbuf out = STRBUF_INIT;
	char url[128];

	snprintf(prom_dir, sizeof(prom_dir), "/tmp/fl-rw.XXXXXX");
	cr_assert_not_null(mkdtemp(prom_dir));
	cr_assert_eq(test_sh("printf 'global: {scrape_interval: 1m}\\n' > %s/prometheus.yml",
			     prom_dir), 0);
	prom_pid = test_prometheus_start(prom_dir, pport, "--web.enable-remote-write-receiver");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/-/ready", pport);
	for (int i = 0; i < 300 && get(url, &out) != 200; i++)
		usleep(100000);
	cr_assert_eq(get(url, &out), 200, "Prometheus did not get ready (log: %s/prometheus.log)",
		     prom_dir);

	strbuf_release(&out);
}

/* faultline's minute tier over (from, to]: the counter's increase, the histograms merged */
struct minutes {
	uint64_t from_ms, to_ms, increase;
	struct histogram merged;
};

static void on_minute(const struct snapshot *out, const struct snapshot *base, void *arg)
{
	struct minutes *mt = arg;
	struct histogram scratch;

	(void)base;
	if (out->ts_ms <= mt->from_ms || out->ts_ms > mt->to_ms)
		return;
	for (uint32_t i = 0; i < out->nseries; i++) {
		const struct series *se = &out->series[i];

		if (se->kind == SERIES_COUNTER)
			mt->increase += se->counter.increase;
		if (se->kind == SERIES_HISTOGRAM)
			hist_merge(&mt->merged, series_hist(se, &scratch));
	}
}

/*
 * Six minutes of a host's 1 s snapshots: faultline rolls them into its
 * minute tier and remote-writes that tier to Debian's Prometheus.  Then
 * Prometheus' increase() over 5 minutes is the sum of faultline's five
 * minute rollups, exactly, and its histogram_quantile() lands in the same
 * classic bucket as the quantile of faultline's merged minute histograms.
 */
Test(remote_write, prometheus_answers_what_the_minute_tier_holds, .fini = stop_prometheus,
     .timeout = 180)
{
	struct remote_write_config c;
	struct remote_write *rw;
	struct remote_write_stats st;
	struct rollup minute;
		char url[128], err[256], host[64] = "";
	int pport = test_free_port();
	uint64_t now_s = time_wall_ns() / NSEC_PER_SEC, end_s = (now_s / 60 - 2) * 60;
	uint64_t start_ms = (end_s - 360) * 1000, ios = 0, fast = 0, slow = 0;
	struct minutes mt = { .from_ms = (end_s - 300) * 1000, .to_ms = end_s * 1000 };
	double p_incr, p50, p99, fl50, fl99;

	start_prometheus(pport);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/v1/write", pport);
	c = config(url, 60 * NSEC_PER_SEC);
	rw = remote_write_open(&c, "web-3", own, 2, NULL, err, sizeof(err));
	cr_assert_not_null(rw, "%s", err);
	cr_assert_eq(rollup_init(&minute, "web-3", 60), 0);
	hist_reset(&mt.merged);
	/*
	 * 1 s snapshots from end-6m to end+1s.  A snapshot stamped :00 closes
	 * the minute before (rollup.h); the one stamped :01 opens the next and
	 * is the one remote-written.  No I/O is counted in the second ending
	 * :01, so that sample is the value the minute closed on.
	 */
	for (uint64_t k = 0; k <= 361; k++) {
		uint64_t ts = start_ms + k * 1000;
		struct snapshot s;

		if (ts / 1000 % 60 != 1) {
			ios += 7 + k % 5;
			fast += 20 + k % 3;
			slow += k % 4 == 0;
		}
		fill(&s, ts, ios, fast, slow);
		cr_assert_geq(remote_write_offer(rw, &s), 0);
		cr_assert_eq(rollup_cascade(&minute, 1, &s, on_minute, &mt), 0);
		snapshot_free(&s);
	}
	for (int i = 0; i < 100; i++) {
		remote_write_get_stats(rw, &st);
		if (!st.pending)
			break;
		usleep(100000);
	}
	cr_assert_eq(st.failed + st.dropped + st.pending, 0, "Prometheus refused samples: see "
		     "%s/prometheus.log", prom_dir);
	remote_write_close(rw, NSEC_PER_SEC);
	rollup_free(&minute);

	/* (end-5m, end]'s minutes, and Prometheus' samples at end-299 s .. end+1 s */
	p_incr = query(pport, "increase(faultline_block_ios_total[5m])", end_s + 1, host,
		       sizeof(host));
	cr_assert_str_eq(host, "web-3", "the series carries host");
	cr_assert_eq(p_incr, (double)mt.increase, "Prometheus %g, faultline's minutes %llu", p_incr,
		     (unsigned long long)mt.increase);
	p50 = query(pport, "histogram_quantile(0.5, rate(faultline_block_latency_seconds_bucket[5m]))",
		    end_s + 1, NULL, 0);
	p99 = query(pport, "histogram_quantile(0.99, rate(faultline_block_latency_seconds_bucket[5m]))",
		    end_s + 1, NULL, 0);
	fl50 = (double)hist_quantile(&mt.merged, 0.5) * 1e-9;
	fl99 = (double)hist_quantile(&mt.merged, 0.99) * 1e-9;
	cr_log_info("p50 Prometheus %g s, faultline %g s; p99 %g s, %g s", p50, fl50, p99, fl99);
	/* the minutes are coarse (hist_coarsen), and so is what was sent for them */
	cr_assert(fabs(fl50 - 0.003) < 0.003 * HIST_COARSE_ERROR &&
		  fabs(fl99 - 0.04) < 0.04 * HIST_COARSE_ERROR,
		  "faultline's own quantiles are off: %g, %g", fl50, fl99);
	cr_assert_eq(bucket_of(p50), bucket_of(fl50), "p50: Prometheus %g, faultline %g", p50, fl50);
	cr_assert_eq(bucket_of(p99), bucket_of(fl99), "p99: Prometheus %g, faultline %g", p99, fl99);
}

/*
 * The probe itself, configured from a file: each second (tier 1s) its
 * series reach Prometheus under their /metrics names with host and the
 * probe's labels, and its own counters say they were sent.
 */
Test(remote_write, the_probe_writes_its_series_to_prometheus, .fini = stop_prometheus,
     .timeout = 120)
{
	char cfg[128], bin[256], q[256];
	int pport = test_free_port();
	double series = NAN, sent = NAN;

	start_prometheus(pport);
	cr_assert_eq(test_redis_start(&probe_redis), 0, "cannot start redis-server");
	snprintf(cfg, sizeof(cfg), "%s/probe.yaml", prom_dir);
	cr_assert_eq(test_sh("printf 'labels: {rack: r7}\\nremote_write:\\n  url: "
			     "http://127.0.0.1:%d/api/v1/write\\n  tier: 1s\\n' > %s", pport, cfg),
		     0);
	snprintf(bin, sizeof(bin), "%s/faultline-probe", test_out_dir());
	probe_pid = fork();
	if (probe_pid == 0) {
		execl(bin, bin, "--config", cfg, "--redis", probe_redis.url, "--host", "rw-probe",
		      "--no-bpf", "--metrics-addr", "", "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	/* poll: the probe's series with host and rack, and its own sent counter */
	for (int i = 0; i < 60 && !(series > 10 && sent > 0); i++) {
		sleep(1);
		series = query(pport, "count({host=\"rw-probe\",rack=\"r7\"})",
			       time_wall_ns() / NSEC_PER_SEC, NULL, 0);
		snprintf(q, sizeof(q), "faultline_probe_remote_write_samples_total"
			 "{host=\"rw-probe\",outcome=\"sent\"}");
		sent = query(pport, q, time_wall_ns() / NSEC_PER_SEC, NULL, 0);
	}
	cr_assert_gt(series, 10, "Prometheus holds %g of the probe's series", series);
	cr_assert_gt(sent, 0, "the probe does not count what it sent");
	cr_assert_eq(query(pport, "max(faultline_probe_remote_write_samples_total"
			   "{outcome=~\"failed|dropped\"})", time_wall_ns() / NSEC_PER_SEC, NULL, 0),
		     0, "samples were refused or dropped");
}
