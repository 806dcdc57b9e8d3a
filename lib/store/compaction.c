/*
 * compaction.c - an ended span of a rollup tier replaced by its chunk; see
 * compaction.h.
 */
#include "store/compaction.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "model/chunk.h"
#include "model/profile.h"
#include "model/profile_span.h"
#include "model/snapshot.h"
#include "store/conn.h"
#include "store/keyspace.h"

/* The entry e's field "d", or NULL. */
static const redisReply *entry_data(const redisReply *e)
{
	const redisReply *f;

	if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_ARRAY)
		return NULL;
	f = e->element[1];
	for (size_t k = 0; k + 1 < f->elements; k += 2)
		if (f->element[k]->type == REDIS_REPLY_STRING && !strcmp(f->element[k]->str, "d") &&
		    f->element[k + 1]->type == REDIS_REPLY_STRING)
			return f->element[k + 1];
	return NULL;
}

/*
 * Decode the span's entries along their chain into pts[0..n), histograms
 * compact: a minute of a real host's 1 s snapshots holds ~800 histograms,
 * 6 MB dense.  Whole entries (the 1 s tier's: `whole`) are decoded like
 * the one before, borrowing the strings of every series they repeat
 * (snapshot_decode_like): the points live until the chunk is made and
 * are freed together, the lenders with them.  Returns 0 or -EINVAL.
 */
static int decode_span(const redisReply *r, int whole, struct snapshot *pts, size_t *n,
		       char *why, size_t whylen)
{
	*n = 0;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *d = entry_data(r->element[i]);
		char derr[200];

		if (!d) {
			snprintf(why, whylen, "entry %s has no \"d\" field",
				 r->element[i]->type == REDIS_REPLY_ARRAY &&
				 r->element[i]->elements ? r->element[i]->element[0]->str : "?");
			return -EINVAL;
		}
		if (whole ? snapshot_decode_like(d->str, d->len, &pts[*n], *n ? &pts[*n - 1] : NULL,
						 derr, sizeof(derr)) :
		    snapshot_decode_on(d->str, d->len, &pts[*n], *n ? &pts[*n - 1] : NULL, 1, derr,
				       sizeof(derr))) {
			snprintf(why, whylen, "entry %s: %s", r->element[i]->element[0]->str, derr);
			return -EINVAL;
		}
		(*n)++;
	}
	return 0;
}

/*
 * The swap, atomic: the chunk added, then the entries it holds removed,
 * only when Redis took it (a chunk id must be above the stream's newest;
 * a refused chunk leaves the entries where they are).  Both keys carry the
 * host's hash tag: one slot, so it runs on a cluster too.
 */
static const char swap_script[] =
	"local ok = redis.pcall('XADD', KEYS[2], 'MINID', '~', ARGV[1], ARGV[2], 'c', ARGV[3]) "
	"if type(ok) == 'table' and ok.err then return ok end "
	"return redis.call('XDEL', KEYS[1], unpack(ARGV, 4))";

static int swap_in(struct conn *c, const char *key, const char *ckey, uint64_t span_start,
		   uint64_t minid, const char *blob, size_t len, const redisReply *r, char *err,
		   size_t errlen)
{
	size_t argc = 8 + r->elements;
	const char **argv = malloc(argc * sizeof(*argv));
	size_t *lens = malloc(argc * sizeof(*lens));
	char id[32], mid[32];
	redisReply *x;
	int ret = 0;

	if (!argv || !lens) {
		free(argv);
		free(lens);
		snprintf(err, errlen, "out of memory");
		return -EAGAIN;
	}
	snprintf(id, sizeof(id), "%" PRIu64 "-0", span_start);
	snprintf(mid, sizeof(mid), "%" PRIu64, minid);
	argv[0] = "EVAL";
	argv[1] = swap_script;
	argv[2] = "2";
	argv[3] = key;
	argv[4] = ckey;
	argv[5] = mid;
	argv[6] = id;
	argv[7] = blob;
	for (size_t i = 0; i < r->elements; i++)
		argv[8 + i] = r->element[i]->element[0]->str;
	for (size_t i = 0; i < argc; i++)
		lens[i] = i == 7 ? len : strlen(argv[i]);
	x = conn_command(c, key, (int)argc, argv, lens);
	free(argv);
	free(lens);
	if (!x) {
		snprintf(err, errlen, "redis: %s", conn_errstr(c));
		return -EIO;
	}
	if (x->type == REDIS_REPLY_ERROR && strstr(x->str, "equal or smaller")) {
		log_warn("%s: a chunk at or after span %" PRIu64 " is there already; the span stays "
			 "as %zu entries", ckey, span_start, r->elements);
	} else if (x->type != REDIS_REPLY_INTEGER) {
		snprintf(err, errlen, "redis: compacting %s: %s", key,
			 x->type == REDIS_REPLY_ERROR ? x->str : "unexpected reply");
		ret = -EAGAIN;
	}
	freeReplyObject(x);
	return ret;
}

/*
 * What an encoded span comes to (ret: its encoder's answer, why: the
 * reason it gave): swapped in for its entries r, left as entries for good
 * (logged), or retried (-EAGAIN: no memory).  Frees blob and r.  Returns
 * as store_compact_span.
 */
static int finish_span(struct conn *c, const char *key, const char *ckey, uint64_t span_start,
		       uint64_t minid, int ret, char *blob, size_t len, const char *why,
		       redisReply *r, char *err, size_t errlen)
{
	if (ret == -ENOMEM) {
		snprintf(err, errlen, "out of memory");
		ret = -EAGAIN;
	} else if (ret) {
		log_warn("%s: span %" PRIu64 " stays as %zu entries (%s)", key, span_start,
			 r->elements, why);
		ret = 0;
	} else {
		ret = swap_in(c, key, ckey, span_start, minid, blob, len, r, err, errlen);
		if (!ret)
			log_debug("%s: span %" PRIu64 ": %zu entries -> a %zu-byte chunk", key,
				  span_start, r->elements, len);
	}
	free(blob);
	freeReplyObject(r);
	return ret;
}

/*
 * XRANGE of key's entries with ids in (start, start + span] into *out.
 * 0, or -EIO / -EAGAIN with the reason in err (store_compact_span).
 */
static int read_span(struct conn *c, const char *key, uint64_t start, uint64_t span,
		     redisReply **out, char *err, size_t errlen)
{
	char from[32], to[32];
	const char *argv[4] = { "XRANGE", key, from, to };
	redisReply *r;

	snprintf(from, sizeof(from), "%" PRIu64, start + 1);
	snprintf(to, sizeof(to), "%" PRIu64, start + span);
	r = conn_command(c, key, 4, argv, NULL);
	if (!r) {
		snprintf(err, errlen, "redis: reading %s: %s", key, conn_errstr(c));
		return -EIO;
	}
	if (r->type != REDIS_REPLY_ARRAY) {
		snprintf(err, errlen, "redis: reading %s: %s", key,
			 r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
		freeReplyObject(r);
		return -EAGAIN;
	}
	*out = r;
	return 0;
}

/*
 * Entry i of a profile span r as a window into w, its end checked against
 * its id: readers tell a chunk's windows from entries by their ends.
 * 0, or -EINVAL / -ENOMEM with the reason in why.
 */
static int span_window(const redisReply *r, size_t i, struct profile *w, char *why,
		       size_t whylen)
{
	const redisReply *d = entry_data(r->element[i]);
	const char *id = r->element[i]->element[0]->str;
	char derr[200];
	int ret;

	if (!d) {
		snprintf(why, whylen, "entry %s has no \"d\" field", id);
		return -EINVAL;
	}
	ret = profile_decode(d->str, d->len, w, derr, sizeof(derr));
	if (ret) {
		snprintf(why, whylen, "entry %s: %s", id, derr);
		return ret;
	}
	if (w->ts_ms != strtoull(id, NULL, 10)) {
		snprintf(why, whylen, "entry %s: its window ends at %" PRIu64, id, w->ts_ms);
		profile_free(w);
		return -EINVAL;
	}
	return 0;
}

/*
 * The windows of r into one span blob (*blob, *len), built a window at a
 * time (a busy host's 60 windows decoded at once are ~10 MB), then
 * decoded back and compared with each entry again.  0, or -EINVAL /
 * -ENOMEM with the reason in why.
 */
static int encode_profile_span(const redisReply *r, char **blob, size_t *len, char *why,
			       size_t whylen)
{
	struct profile_span s = { 0 }, back = { 0 };
	struct profile w;
	char derr[200];
	int ret = 0;

	for (size_t i = 0; i < r->elements && !ret; i++) {
		ret = span_window(r, i, &w, why, whylen);
		if (ret)
			break;
		ret = profile_span_add(&s, &w);
		profile_free(&w);
	}
	if (!ret)
		ret = profile_span_pack(&s, PROFILE_LEVEL_ARCHIVE, blob, len);
	profile_span_free(&s);
	if (ret) {
		if (!why[0])
			snprintf(why, whylen, "a span cannot hold its windows");
		return ret;
	}
	ret = profile_span_decode(*blob, *len, &back, derr, sizeof(derr));
	if (ret)
		snprintf(why, whylen, "the span does not read back: %s", derr);
	for (size_t i = 0; i < r->elements && !ret; i++) {
		ret = span_window(r, i, &w, why, whylen);
		if (ret)
			break;
		if (!profile_span_window_is(&back, (uint32_t)i, &w)) {
			snprintf(why, whylen, "entry %s reads back otherwise from the span",
				 r->element[i]->element[0]->str);
			ret = -EINVAL;
		}
		profile_free(&w);
	}
	if (!ret && back.nwindows != r->elements)
		ret = -EINVAL;
	profile_span_free(&back);
	if (ret) {
		free(*blob);
		*blob = NULL;
	}
	return ret == -ENOMEM ? ret : ret ? -EINVAL : 0;
}

/*
 * Host's profile stream of kind: the windows of the span at span_start
 * into one profile_span blob (profile_span.h), swapped in for them as a
 * tier's chunk is.  Returns as store_compact_span.
 */
static int compact_profile_span(struct conn *c, const char *host, int kind,
				uint64_t span_start, uint64_t minid, char *err, size_t errlen)
{
	char key[320], ckey[320], why[256] = "";
	size_t len = 0;
	redisReply *r;
	char *blob = NULL;
	int ret;

	if (key_profile(key, sizeof(key), host, kind) < 0 ||
	    key_profile_chunks(ckey, sizeof(ckey), host, kind) < 0)
		return 0;
	ret = read_span(c, key, span_start, key_profile_span_ms(kind), &r, err, errlen);
	if (ret)
		return ret;
	if (r->elements == 0) {
		freeReplyObject(r);
		return 0;
	}
	if (r->elements > PROFILE_SPAN_MAX_WINDOWS) {
		snprintf(why, sizeof(why), "more than %d windows", PROFILE_SPAN_MAX_WINDOWS);
		ret = -EINVAL;
	} else {
		ret = encode_profile_span(r, &blob, &len, why, sizeof(why));
	}
	return finish_span(c, key, ckey, span_start, minid, ret, blob, len, why, r, err, errlen);
}

int store_compact_span(struct conn *c, const char *host, uint32_t tier, uint64_t span_start,
		       uint64_t minid, char *err, size_t errlen)
{
	uint64_t span = chunk_span_ms(tier);
	char key[320], ckey[320], why[256] = "";
	struct snapshot *pts = NULL;
	size_t n = 0, len = 0;
	redisReply *r;
	char *blob = NULL;
	int ret;

	if (tier >= COMPACT_PROFILE_BASE && tier < COMPACT_PROFILE(KEY_PROFILE_KINDS))
		return compact_profile_span(c, host, (int)(tier - COMPACT_PROFILE_BASE), span_start,
					    minid, err, errlen);
	if (!span || key_tier(key, sizeof(key), host, tier) < 0 ||
	    key_chunks(ckey, sizeof(ckey), host, tier) < 0)
		return 0;
	/* the windows that start in the span: ids (window ends) in (start, start + span] */
	ret = read_span(c, key, span_start, span, &r, err, errlen);
	if (ret)
		return ret;
	if (r->elements == 0 || r->elements > CHUNK_MAX_POINTS) {
		freeReplyObject(r);
		return 0;
	}
	pts = calloc(r->elements, sizeof(*pts));
	if (!pts) {
		freeReplyObject(r);
		snprintf(err, errlen, "out of memory");
		return -EAGAIN;
	}
	ret = decode_span(r, tier == 1, pts, &n, why, sizeof(why));
	if (!ret) {
		ret = chunk_encode(pts, n, &blob, &len);
		if (ret == -EINVAL)
			snprintf(why, sizeof(why), "a chunk cannot hold its points exactly");
	}
	for (size_t i = 0; i < n; i++)
		snapshot_free(&pts[i]);
	free(pts);
	return finish_span(c, key, ckey, span_start, minid, ret, blob, len, why, r, err, errlen);
}

/* ---- the compactor thread ------------------------------------------------ */

#define COMPACT_TRIES 3		/* a span Redis refuses is tried this often */
#define BACKOFF_MIN_NS (100 * NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (5 * NSEC_PER_SEC)

struct compact_job {
	char host[256];
	uint32_t tier;
	int tries;
	uint64_t span_start, minid;
};

struct compactor {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* a job queued, or stop */
	pthread_cond_t idle;		/* nothing queued or running */
	struct compact_job *q;		/* jobs q[head .. head + n) */
	size_t head, n, cap, max;
	int busy, stop;
	uint64_t dropped;
	char url[512];
	uint64_t timeout_ns;
	void (*thread_start)(void);
};

/* Wait on cp->wake (lock held) for ns, or until stopped. */
static void pause_ns(struct compactor *cp, uint64_t ns)
{
	struct timespec ts;

	if (cp->stop)
		return;
	ts = time_wall_after(ns);
	pthread_cond_timedwait(&cp->wake, &cp->lock, &ts);
}

static void *compactor_main(void *arg)
{
	struct compactor *cp = arg;
	uint64_t backoff = BACKOFF_MIN_NS;
	struct conn *c = NULL;
	int was_down = 0;

	if (cp->thread_start)
		cp->thread_start();
	pthread_mutex_lock(&cp->lock);
	while (!cp->stop) {
		struct compact_job job;
		char err[256];
		int ret;

		if (!cp->n) {
			if (cp->busy) {
				/*
				 * What the spans decoded came from this thread's
				 * arena, which keeps it once freed: give it back, or
				 * the probe's RSS stays at the largest span's peak.
				 */
				pthread_mutex_unlock(&cp->lock);
				malloc_trim(0);
				pthread_mutex_lock(&cp->lock);
				if (cp->n || cp->stop)
					continue;
			}
			cp->busy = 0;
			pthread_cond_broadcast(&cp->idle);
			pthread_cond_wait(&cp->wake, &cp->lock);
			continue;
		}
		cp->busy = 1;
		job = cp->q[cp->head];
		pthread_mutex_unlock(&cp->lock);
		if (!c)
			c = conn_open(cp->url, cp->timeout_ns, err, sizeof(err));
		ret = c ? store_compact_span(c, job.host, job.tier, job.span_start, job.minid, err,
					     sizeof(err)) : -EIO;
		pthread_mutex_lock(&cp->lock);
		if (ret == -EIO) {
			/* Redis away: the span waits, its tries untouched */
			if (!was_down)
				log_info("compacting %s's span %" PRIu64 ": %s; will retry", job.host,
					 job.span_start, err);
			was_down = 1;
			if (c && !conn_is_cluster(c)) {
				conn_close(c);
				c = NULL;
			}
			pause_ns(cp, backoff);
			backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
			continue;
		}
		was_down = 0;
		backoff = BACKOFF_MIN_NS;
		if (ret == -EAGAIN && ++cp->q[cp->head].tries < COMPACT_TRIES) {
			log_info("%s; will retry", err);
			pause_ns(cp, BACKOFF_MIN_NS);
			continue;
		}
		if (ret == -EAGAIN)
			log_warn("%s; span %" PRIu64 " of %s stays as entries (readers read them as "
				 "before)", err, job.span_start, job.host);
		cp->head++;
		cp->n--;
	}
	cp->busy = 0;
	pthread_cond_broadcast(&cp->idle);
	pthread_mutex_unlock(&cp->lock);
	conn_close(c);
	return NULL;
}

struct compactor *compactor_start(const char *url, uint64_t timeout_ns, size_t max_queued,
				  void (*thread_start)(void), char *err, size_t errlen)
{
	struct compactor *cp = calloc(1, sizeof(*cp));

	if (!cp) {
		snprintf(err, errlen, "compactor: out of memory");
		return NULL;
	}
	snprintf(cp->url, sizeof(cp->url), "%s", url);
	cp->timeout_ns = timeout_ns;
	cp->max = max_queued ? max_queued : 1;
	cp->thread_start = thread_start;
	pthread_mutex_init(&cp->lock, NULL);
	pthread_cond_init(&cp->wake, NULL);
	pthread_cond_init(&cp->idle, NULL);
	if (pthread_create(&cp->thread, NULL, compactor_main, cp)) {
		snprintf(err, errlen, "compactor: cannot start its thread");
		pthread_mutex_destroy(&cp->lock);
		pthread_cond_destroy(&cp->wake);
		pthread_cond_destroy(&cp->idle);
		free(cp);
		return NULL;
	}
	pthread_setname_np(cp->thread, "fl-compact");
	return cp;
}

void compactor_queue(struct compactor *cp, const char *host, uint32_t tier,
		     uint64_t span_start, uint64_t minid)
{
	struct compact_job *j;

	pthread_mutex_lock(&cp->lock);
	if (cp->n >= cp->max) {
		if (!cp->dropped++ || cp->dropped % 1000 == 0)
			log_warn("compactor: %zu spans waiting; %s's span %" PRIu64 " stays as "
				 "entries (%" PRIu64 " so far)", cp->n, host, span_start,
				 cp->dropped);
		pthread_mutex_unlock(&cp->lock);
		return;
	}
	if (cp->head + cp->n == cp->cap) {
		if (cp->head) {
			memmove(cp->q, cp->q + cp->head, cp->n * sizeof(*cp->q));
			cp->head = 0;
		} else {
			size_t cap = cp->cap ? 2 * cp->cap : 64;
			struct compact_job *q = realloc(cp->q, cap * sizeof(*q));

			if (!q) {
				cp->dropped++;
				pthread_mutex_unlock(&cp->lock);
				return;
			}
			cp->q = q;
			cp->cap = cap;
		}
	}
	j = &cp->q[cp->head + cp->n++];
	memset(j, 0, sizeof(*j));
	snprintf(j->host, sizeof(j->host), "%s", host);
	j->tier = tier;
	j->span_start = span_start;
	j->minid = minid;
	pthread_cond_signal(&cp->wake);
	pthread_mutex_unlock(&cp->lock);
}

int compactor_flush(struct compactor *cp, uint64_t timeout_ns)
{
	uint64_t deadline = time_mono_ns() + timeout_ns;
	int ret = 0;

	pthread_mutex_lock(&cp->lock);
	while (cp->n || cp->busy) {
		struct timespec ts;

		if (time_mono_ns() >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		ts = time_wall_after(50 * NSEC_PER_MSEC);
		pthread_cond_timedwait(&cp->idle, &cp->lock, &ts);
	}
	pthread_mutex_unlock(&cp->lock);
	return ret;
}

void compactor_stop(struct compactor *cp)
{
	if (!cp)
		return;
	pthread_mutex_lock(&cp->lock);
	cp->stop = 1;
	pthread_cond_signal(&cp->wake);
	pthread_mutex_unlock(&cp->lock);
	pthread_join(cp->thread, NULL);
	if (cp->n)
		log_info("compactor: stopping with %zu span%s not compacted; they stay as entries",
			 cp->n, cp->n == 1 ? "" : "s");
	pthread_mutex_destroy(&cp->lock);
	pthread_cond_destroy(&cp->wake);
	pthread_cond_destroy(&cp->idle);
	free(cp->q);
	free(cp);
}
