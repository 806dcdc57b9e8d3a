/*
 * remote_write.c - Prometheus remote write 1.0 out of the probe; see
 * remote_write.h.
 *
 * A request body is built one series at a time: each TimeSeries is packed
 * by protobuf-c on its own and appended as field 1 of the WriteRequest
 * (tag, length, bytes), which is how protobuf encodes a repeated message,
 * so no series' strings need to outlive its own packing.  The whole body is
 * then snappy-compressed (the block format, as the protocol says).
 */
#include "probes/remote_write.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote.pb-c.h"
#include "core/backoff.h"
#include "core/log.h"
#include "core/secret.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "model/catalog.h"
#include "model/rollup.h"

/* One compressed request, waiting. */
struct rw_request {
	struct rw_request *next;
	char *body;
	size_t len;
	uint32_t samples;
};

struct remote_write {
	struct remote_write_config cfg;	/* strings borrowed from the caller's config */
	char host[256];
	struct label *labels;		/* the probe's own, copied */
	uint32_t nlabels;
	struct prom_buckets buckets;
	uint64_t window;		/* the tier window last offered + 1; 0 none yet */
	struct histogram coarse;	/* remote_write_samples' scratch for a rollup tier */

	char bearer[4096];		/* secrets, read once at open */
	char password[4096];

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct rw_request *head, *tail;	/* head is in flight while busy */
	int busy;
	int stop;
	uint64_t stop_deadline_ns;	/* monotonic */
	struct remote_write_stats st;
	uint64_t dropped_logged;	/* st.dropped when a drop was last logged */
	uint64_t drop_logged_ns;
};

/* ---- the samples of a snapshot ---- */

struct sample_labels {
	struct label l[SNAPSHOT_MAX_LABELS + 3 + SNAPSHOT_MAX_LABELS];
	uint32_t n;
};

/*
 * Series labels first, then host and the probe's labels where the series
 * has no label of that name, then __name__ (and le): sorted, each name once.
 */
static void base_labels(struct sample_labels *sl, const struct series *ser, const char *host,
			const struct label *own, uint32_t nown)
{
	sl->n = 0;
	for (uint32_t i = 0; i < ser->nlabels && i < SNAPSHOT_MAX_LABELS; i++)
		sl->l[sl->n++] = ser->labels[i];
	for (uint32_t i = 0; i <= nown && i < SNAPSHOT_MAX_LABELS + 1; i++) {
		const char *k = i == nown ? "host" : own[i].key;
		const char *v = i == nown ? host : own[i].value;
		uint32_t j = 0;

		while (j < sl->n && strcmp(sl->l[j].key, k))
			j++;
		if (j == sl->n) {
			sl->l[sl->n].key = (char *)k;
			sl->l[sl->n].value = (char *)v;
			sl->n++;
		}
	}
}

static void emit(const struct sample_labels *base, const char *name, const char *le, double value,
		 int64_t ts_ms, remote_write_sample_fn fn, void *arg)
{
	struct sample_labels sl = *base;

	sl.l[sl.n].key = (char *)"__name__";
	sl.l[sl.n++].value = (char *)name;
	if (le) {
		sl.l[sl.n].key = (char *)"le";
		sl.l[sl.n++].value = (char *)le;
	}
	qsort(sl.l, sl.n, sizeof(sl.l[0]), label_key_cmp);
	fn(sl.l, sl.n, value, ts_ms, arg);
}

size_t remote_write_samples(const struct snapshot *s, const char *host, const struct label *labels,
			    uint32_t nlabels, const struct prom_buckets *b,
			    struct histogram *coarse, remote_write_sample_fn fn, void *arg)
{
	struct sample_labels base;
	int64_t ts = (int64_t)s->ts_ms;
	size_t n = 0;

	for (uint32_t i = 0; i < s->nseries; i++) {
		const struct series *ser = &s->series[i];
		char name[256], sub[300], le[64];
		const char *help;
		double scale;

		prom_metric_name(ser, name, sizeof(name), &scale, &help);
		base_labels(&base, ser, host, labels, nlabels);
		if (ser->kind == SERIES_COUNTER) {
			emit(&base, name, NULL, catalog_to_base((double)ser->counter.value, scale), ts,
			     fn, arg);
			n++;
		} else if (ser->kind == SERIES_GAUGE) {
			emit(&base, name, NULL, catalog_to_base(ser->gauge.last, scale), ts, fn, arg);
			n++;
		} else if (ser->hist) {
			const struct histogram *h = ser->hist;
			const double *bound;
			int nb = prom_bounds(b, name, &bound);
			uint64_t cum[PROM_MAX_BOUNDS];

			if (coarse) {
				/* what the rollup tiers hold of it (linear: rate() agrees) */
				memcpy(coarse, h, sizeof(*coarse));
				hist_coarsen(coarse);
				h = coarse;
			}

			hist_cumulative(h, scale, bound, nb, cum);
			snprintf(sub, sizeof(sub), "%s_bucket", name);
			for (int k = 0; k < nb; k++) {
				snprintf(le, sizeof(le), "%.9g", bound[k]);
				emit(&base, sub, le, (double)cum[k], ts, fn, arg);
			}
			emit(&base, sub, "+Inf", (double)h->count, ts, fn, arg);
			snprintf(sub, sizeof(sub), "%s_sum", name);
			emit(&base, sub, NULL, catalog_to_base((double)h->sum, scale), ts, fn, arg);
			snprintf(sub, sizeof(sub), "%s_count", name);
			emit(&base, sub, NULL, (double)h->count, ts, fn, arg);
			n += (size_t)nb + 3;
		}
	}
	return n;
}

/* ---- requests ---- */

struct builder {
	struct remote_write *rw;
	struct strbuf body;		/* the WriteRequest so far, uncompressed */
	uint32_t samples;
	int err;
	int queued;			/* samples queued by this offer */
};

static void put_varint(struct strbuf *out, uint64_t v)
{
	char b[10];
	size_t n = 0;

	do {
		b[n++] = (char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	strbuf_add(out, b, n);
}

/* Drop the oldest requests not in flight until `more` fits; under the lock. */
static void make_room(struct remote_write *rw, uint64_t more)
{
	struct rw_request **pp = rw->busy ? &rw->head->next : &rw->head;

	while (*pp && rw->st.pending + more > rw->cfg.queue_samples) {
		struct rw_request *r = *pp;

		*pp = r->next;
		rw->st.pending -= r->samples;
		rw->st.dropped += r->samples;
		free(r->body);
		free(r);
	}
	rw->tail = rw->head;
	while (rw->tail && rw->tail->next)
		rw->tail = rw->tail->next;
}

/* Compress the builder's body into a request and queue it. */
static void finish_request(struct builder *bd)
{
	struct remote_write *rw = bd->rw;
	struct rw_request *r;
	size_t max;

	if (!bd->err && strbuf_failed(&bd->body))
		bd->err = -ENOMEM;
	if (!bd->samples || bd->err)
		return;
	r = calloc(1, sizeof(*r));
	max = snappy_max_compressed_length(bd->body.len);
	if (!r || !(r->body = malloc(max))) {
		free(r);
		bd->err = -ENOMEM;
		return;
	}
	r->len = max;
	if (snappy_compress(strbuf_str(&bd->body), bd->body.len, r->body, &r->len) != SNAPPY_OK) {
		free(r->body);
		free(r);
		bd->err = -ENOMEM;
		return;
	}
	r->samples = bd->samples;
	pthread_mutex_lock(&rw->lock);
	make_room(rw, r->samples);
	if (rw->tail)
		rw->tail->next = r;
	else
		rw->head = r;
	rw->tail = r;
	rw->st.pending += r->samples;
	pthread_cond_signal(&rw->wake);
	pthread_mutex_unlock(&rw->lock);
	bd->queued += (int)bd->samples;
	bd->samples = 0;
	strbuf_reset(&bd->body);
}

static void add_sample(const struct label *labels, uint32_t nlabels, double value, int64_t ts_ms,
		       void *arg)
{
	struct builder *bd = arg;
	Prometheus__Label lv[SNAPSHOT_MAX_LABELS * 2 + 3], *lp[SNAPSHOT_MAX_LABELS * 2 + 3];
	Prometheus__Sample sample = PROMETHEUS__SAMPLE__INIT, *sp = &sample;
	Prometheus__TimeSeries ts = PROMETHEUS__TIME_SERIES__INIT;
	size_t len;
	uint8_t *buf;

	if (bd->err)
		return;
	for (uint32_t i = 0; i < nlabels; i++) {
		prometheus__label__init(&lv[i]);
		lv[i].name = labels[i].key;
		lv[i].value = labels[i].value;
		lp[i] = &lv[i];
	}
	sample.value = value;
	sample.timestamp = ts_ms;
	ts.n_labels = nlabels;
	ts.labels = lp;
	ts.n_samples = 1;
	ts.samples = &sp;
	len = prometheus__time_series__get_packed_size(&ts);
	buf = malloc(len ? len : 1);
	if (!buf) {
		bd->err = -ENOMEM;
		return;
	}
	prometheus__time_series__pack(&ts, buf);
	strbuf_add(&bd->body, "\x0a", 1);	/* field 1, length-delimited */
	put_varint(&bd->body, len);
	strbuf_add(&bd->body, buf, len);
	free(buf);
	if (++bd->samples >= bd->rw->cfg.max_samples_per_send)
		finish_request(bd);
}

int remote_write_offer(struct remote_write *rw, const struct snapshot *s)
{
	/* the tiers' own windows: a snapshot stamped :00 ends the one before */
	uint64_t window = tier_window_of((uint32_t)(rw->cfg.tier_ns / NSEC_PER_SEC), s->ts_ms) + 1;
	struct builder bd = { .rw = rw, .body = STRBUF_INIT };

	if (window == rw->window)
		return 0;
	rw->window = window;
	remote_write_samples(s, rw->host, rw->labels, rw->nlabels, &rw->buckets,
			     rw->cfg.tier_ns >= 60 * NSEC_PER_SEC ? &rw->coarse : NULL, add_sample,
			     &bd);
	finish_request(&bd);
	strbuf_release(&bd.body);
	pthread_mutex_lock(&rw->lock);
	if (rw->st.dropped > rw->dropped_logged &&
	    time_mono_ns() - rw->drop_logged_ns > 60 * NSEC_PER_SEC) {
		log_warn("remote write: %llu samples dropped so far, the queue (%llu samples) being "
			 "full while %s does not take them; raise remote_write.queue_samples to "
			 "hold a longer outage", (unsigned long long)rw->st.dropped,
			 (unsigned long long)rw->cfg.queue_samples, rw->cfg.url);
		rw->dropped_logged = rw->st.dropped;
		rw->drop_logged_ns = time_mono_ns();
	}
	pthread_mutex_unlock(&rw->lock);
	return bd.err ? bd.err : bd.queued;
}

/* ---- the sender ---- */

struct answer {
	char text[512];
	size_t len;
};

static size_t keep_answer(char *p, size_t s, size_t n, void *u)
{
	struct answer *a = u;

	for (size_t i = 0; i < s * n && a->len + 1 < sizeof(a->text); i++) {
		unsigned char c = (unsigned char)p[i];

		a->text[a->len++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
	}
	a->text[a->len] = 0;
	return s * n;
}

enum outcome { SENT, REFUSED, RETRY };

/* POST one request; what to do with it, and why in why. */
static enum outcome post(struct remote_write *rw, const struct rw_request *r, char *why,
			 size_t whylen)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct answer a = { .len = 0 };
	char errbuf[CURL_ERROR_SIZE] = "", hdr[4200];
	long status = 0;
	CURLcode rc;

	if (!c) {
		snprintf(why, whylen, "libcurl: out of memory");
		return RETRY;
	}
	h = curl_slist_append(h, "Content-Encoding: snappy");
	h = curl_slist_append(h, "Content-Type: application/x-protobuf");
	h = curl_slist_append(h, "X-Prometheus-Remote-Write-Version: 0.1.0");
	h = curl_slist_append(h, "Expect:");	/* no 100-continue round trip */
	snprintf(hdr, sizeof(hdr), "User-Agent: faultline-probe/%s", FL_VERSION);
	h = curl_slist_append(h, hdr);
	if (rw->bearer[0]) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", rw->bearer);
		h = curl_slist_append(h, hdr);
	}
	curl_easy_setopt(c, CURLOPT_URL, rw->cfg.url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)r->len);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(rw->cfg.timeout_ns / NSEC_PER_MSEC));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_answer);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	if (rw->cfg.ca_file[0])
		curl_easy_setopt(c, CURLOPT_CAINFO, rw->cfg.ca_file);
	if (rw->cfg.basic_auth_username[0]) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERNAME, rw->cfg.basic_auth_username);
		curl_easy_setopt(c, CURLOPT_PASSWORD, rw->password);
	}
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK) {
		snprintf(why, whylen, "%s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
		return RETRY;
	}
	if (status >= 200 && status < 300)
		return SENT;
	snprintf(why, whylen, "HTTP %ld: %s", status, a.len ? a.text : "(no answer)");
	return status >= 500 || status == 429 ? RETRY : REFUSED;
}

/* Remove the head (sent or refused); under the lock. */
static struct rw_request *pop(struct remote_write *rw)
{
	struct rw_request *r = rw->head;

	rw->head = r->next;
	if (!rw->head)
		rw->tail = NULL;
	rw->st.pending -= r->samples;
	return r;
}

static void *sender(void *arg)
{
	struct remote_write *rw = arg;
	struct backoff bo;
	uint64_t failing = 0;	/* attempts that failed since the last success */
	char why[700];

	if (rw->cfg.thread_start)
		rw->cfg.thread_start();
	backoff_init(&bo, rw->cfg.min_backoff_ns, rw->cfg.max_backoff_ns);
	pthread_mutex_lock(&rw->lock);
	for (;;) {
		struct rw_request *r;
		enum outcome o;

		while (!rw->head && !rw->stop)
			pthread_cond_wait(&rw->wake, &rw->lock);
		if (!rw->head || (rw->stop && time_mono_ns() >= rw->stop_deadline_ns))
			break;
		r = rw->head;
		rw->busy = 1;
		pthread_mutex_unlock(&rw->lock);
		o = post(rw, r, why, sizeof(why));
		pthread_mutex_lock(&rw->lock);
		rw->busy = 0;
		if (o == SENT) {
			pop(rw);
			rw->st.sent += r->samples;
			rw->st.last_sent_ms = time_wall_ns() / NSEC_PER_MSEC;
			if (failing)
				log_info("remote write: %s takes samples again, after %llu failed "
					 "attempt(s)", rw->cfg.url, (unsigned long long)failing);
			failing = 0;
			backoff_reset(&bo);
		} else if (o == REFUSED) {
			pop(rw);
			rw->st.failed += r->samples;
			log_error("remote write: %s refused %u samples, dropped (%s); check the "
				  "receiver's limits and that it takes remote write at that path",
				  rw->cfg.url, r->samples, why);
		} else {
			struct timespec until;
			uint64_t delay = backoff_next(&bo), wake = time_wall_ns() + delay;

			if (rw->stop)
				break;	/* exiting: what is left is dropped */
			rw->st.retries++;
			if (!failing++)
				log_warn("remote write: %s: %s; retrying with backoff, %llu samples "
					 "queued", rw->cfg.url, why,
					 (unsigned long long)rw->st.pending);
			until.tv_sec = (time_t)(wake / NSEC_PER_SEC);
			until.tv_nsec = (long)(wake % NSEC_PER_SEC);
			pthread_cond_timedwait(&rw->wake, &rw->lock, &until);
			continue;
		}
		free(r->body);
		free(r);
	}
	pthread_mutex_unlock(&rw->lock);
	return NULL;
}

/* ---- open, stats, close ---- */

/* [a-zA-Z_][a-zA-Z0-9_]*, not __reserved: what a receiver takes as a label name. */
static int prom_label_name(const char *k)
{
	if (!*k || (k[0] == '_' && k[1] == '_') || (*k >= '0' && *k <= '9'))
		return 0;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_'))
			return 0;
	return 1;
}

struct remote_write *remote_write_open(const struct remote_write_config *cfg, const char *host,
				       const struct label *labels, uint32_t nlabels,
				       const struct prom_buckets *b, char *err, size_t errlen)
{
	struct remote_write *rw;

	if (strncmp(cfg->url, "http://", 7) && strncmp(cfg->url, "https://", 8)) {
		snprintf(err, errlen, "remote_write.url: '%s' is not an http:// or https:// URL",
			 cfg->url);
		return NULL;
	}
	if (!cfg->tier_ns || !cfg->max_samples_per_send ||
	    cfg->queue_samples < cfg->max_samples_per_send) {
		snprintf(err, errlen, "remote_write: queue_samples (%llu) must hold at least one "
			 "request (max_samples_per_send %llu)",
			 (unsigned long long)cfg->queue_samples,
			 (unsigned long long)cfg->max_samples_per_send);
		return NULL;
	}
	/* refused here, once, rather than by the receiver every minute */
	for (uint32_t i = 0; i < nlabels; i++)
		if (!prom_label_name(labels[i].key)) {
			snprintf(err, errlen, "remote_write: the label '%s' (labels:) is not a "
				 "Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not __...); the "
				 "receiver would refuse every sample", labels[i].key);
			return NULL;
		}
	rw = calloc(1, sizeof(*rw));
	if (!rw) {
		snprintf(err, errlen, "remote write: out of memory");
		return NULL;
	}
	rw->cfg = *cfg;
	snprintf(rw->host, sizeof(rw->host), "%s", host);
	if (b)
		rw->buckets = *b;
	if (cfg->bearer_token_file[0] &&
	    secret_file_read(cfg->bearer_token_file, rw->bearer, sizeof(rw->bearer), err,
			     errlen))
		goto fail;
	if (cfg->basic_auth_username[0] &&
	    (!cfg->basic_auth_password_file[0] ||
	     secret_file_read(cfg->basic_auth_password_file, rw->password, sizeof(rw->password),
			      err, errlen))) {
		if (!cfg->basic_auth_password_file[0])
			snprintf(err, errlen, "remote_write.basic_auth: a username needs a "
				 "password_file");
		goto fail;
	}
	if (nlabels) {
		rw->labels = calloc(nlabels, sizeof(*rw->labels));
		if (!rw->labels)
			goto nomem;
		for (uint32_t i = 0; i < nlabels; i++) {
			rw->labels[i].key = strdup(labels[i].key);
			rw->labels[i].value = strdup(labels[i].value);
			rw->nlabels++;
			if (!rw->labels[i].key || !rw->labels[i].value)
				goto nomem;
		}
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_mutex_init(&rw->lock, NULL);
	pthread_cond_init(&rw->wake, NULL);
	if (pthread_create(&rw->thread, NULL, sender, rw)) {
		snprintf(err, errlen, "remote write: cannot start its thread");
		pthread_mutex_destroy(&rw->lock);
		pthread_cond_destroy(&rw->wake);
		goto fail;
	}
	return rw;
nomem:
	snprintf(err, errlen, "remote write: out of memory");
fail:
	for (uint32_t i = 0; i < rw->nlabels; i++) {
		free(rw->labels[i].key);
		free(rw->labels[i].value);
	}
	free(rw->labels);
	free(rw);
	return NULL;
}

void remote_write_get_stats(struct remote_write *rw, struct remote_write_stats *st)
{
	pthread_mutex_lock(&rw->lock);
	*st = rw->st;
	pthread_mutex_unlock(&rw->lock);
}

void remote_write_close(struct remote_write *rw, uint64_t grace_ns)
{
	uint64_t left;

	if (!rw)
		return;
	pthread_mutex_lock(&rw->lock);
	rw->stop = 1;
	rw->stop_deadline_ns = time_mono_ns() + grace_ns;
	pthread_cond_signal(&rw->wake);
	pthread_mutex_unlock(&rw->lock);
	pthread_join(rw->thread, NULL);
	left = rw->st.pending;
	while (rw->head) {
		struct rw_request *r = pop(rw);

		rw->st.dropped += r->samples;
		free(r->body);
		free(r);
	}
	if (left)
		log_warn("remote write: %llu samples not sent to %s before exit, dropped",
			 (unsigned long long)left, rw->cfg.url);
	pthread_mutex_destroy(&rw->lock);
	pthread_cond_destroy(&rw->wake);
	for (uint32_t i = 0; i < rw->nlabels; i++) {
		free(rw->labels[i].key);
		free(rw->labels[i].value);
	}
	free(rw->labels);
	explicit_bzero(rw->bearer, sizeof(rw->bearer));
	explicit_bzero(rw->password, sizeof(rw->password));
	free(rw);
}
