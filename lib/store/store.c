/*
 * store.c - the probe's spooling writer, producer side; see store.h.  The
 * spool's layout is in spool_internal.h, the thread that drains it to Redis
 * in store_writer.c, the spool's file across restarts in spool_file.c;
 * the readers are in store_read.c, the rules' alert transaction in
 * alert_checkpoint.c, the host registry's readers in host_registry.c.
 *
 * Every put encodes its command here, on the caller's thread, and pushes
 * it; when the spool is full the oldest entries not in flight make room.
 */
#include "store/spool_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "model/chunk.h"
#include "model/host_entry.h"
#include "model/snapshot_zstd.h"
#include "store/compaction.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/spool_file.h"

_Static_assert(SPOOL_MAX_FIELDS == STORE_MAX_FIELDS, "a spool file holds what a store queues");

const uint32_t store_tiers[STORE_TIERS] = { 1, 60, 3600 };

/* spans waiting for the compactor at most (~280 bytes each) */
#define COMPACT_QUEUE_MAX 65536

/* ---- keys ---------------------------------------------------------------- */

int store_host_valid(const char *name)
{
	size_t n = 0;

	for (const char *p = name; *p; p++, n++) {
		char c = *p;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == ':'))
			return 0;
	}
	return n > 0 && n < 200;
}

/* ---- spool -------------------------------------------------------------- */

static int spool_full(const struct store *st, size_t extra_bytes)
{
	return st->n + 1 > st->opts.spool_max_entries ||
	       st->bytes + extra_bytes > st->opts.spool_max_bytes;
}

/* Push it (taking ownership); drops the oldest idle entries to make room. */
static void spool_push(struct store *st, struct spool_item *it)
{
	pthread_mutex_lock(&st->lock);
	while (spool_full(st, spool_item_bytes(it)) && st->n > st->inflight) {
		struct spool_item *old = spool_ring_remove(st, st->inflight);

		if (old->kind == ITEM_XADD)
			st->stats.dropped++;
		spool_item_free(old);
	}
	if (spool_full(st, spool_item_bytes(it)) || st->n == st->cap) {
		/* everything queued is in flight: drop the newcomer */
		if (it->kind == ITEM_XADD)
			st->stats.dropped++;
		pthread_mutex_unlock(&st->lock);
		spool_item_free(it);
		return;
	}
	st->ring[(st->head + st->n) % st->cap] = it;
	st->n++;
	st->bytes += spool_item_bytes(it);
	pthread_cond_signal(&st->wake);
	pthread_mutex_unlock(&st->lock);
}

/* ---- public writer API -------------------------------------------------- */

/* ---- spool file (lib/store/spool_file.c) -------------------------------- */

static const struct spool_item *ring_at(void *arg, size_t i)
{
	const struct store *st = arg;

	return st->ring[(st->head + i) % st->cap];
}

static void push_to_store(void *arg, struct spool_item *it)
{
	spool_push(arg, it);
}

struct store *store_open(const struct store_opts *opts, char *err, size_t errlen)
{
	struct conn_url u;
	struct store *st;

	if (conn_url_parse(opts->url, &u, err, errlen))
		return NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		goto nomem;
	st->opts = *opts;
	if (!st->opts.spool_max_entries)
		st->opts.spool_max_entries = 3600;
	if (!st->opts.spool_max_bytes)
		st->opts.spool_max_bytes = 256u << 20;
	snprintf(st->url, sizeof(st->url), "%s", opts->url);
	st->opts.url = st->url;
	snprintf(st->spool_path, sizeof(st->spool_path), "%s",
		 opts->spool_path ? opts->spool_path : "");
	st->opts.spool_path = st->spool_path;
	if (st->spool_path[0]) {
		/* found out now, not at the stop when the spool would be lost */
		char dir[520], *slash;

		snprintf(dir, sizeof(dir), "%s", st->spool_path);
		slash = strrchr(dir, '/');
		if (slash == dir)
			dir[1] = '\0';
		else if (slash)
			*slash = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		if (access(dir, W_OK | X_OK)) {
			snprintf(err, errlen, "spool.path %s: cannot write in %s (%s); create it or "
				 "set another path", st->spool_path, dir, strerror(errno));
			free(st->ring);
			free(st);
			return NULL;
		}
	}
	st->cap = st->opts.spool_max_entries + 1;
	st->ring = calloc(st->cap, sizeof(*st->ring));
	if (!st->ring)
		goto nomem;
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->wake, NULL);
	pthread_cond_init(&st->drained, NULL);
	if (st->spool_path[0]) {
		size_t n = spool_file_load(st->opts.spool_path, st->opts.spool_max_bytes,
					    push_to_store, st);

		if (n)
			log_info("read back %zu entr%s the last run spooled to %s while Redis was "
				 "away", n, n == 1 ? "y" : "ies", st->spool_path);
	}
	st->compactor = compactor_start(st->url, st->opts.timeout_ns, COMPACT_QUEUE_MAX,
					st->opts.thread_start, err, errlen);
	if (!st->compactor) {
		free(st->ring);
		free(st);
		return NULL;
	}
	if (pthread_create(&st->thread, NULL, store_writer_main, st)) {
		snprintf(err, errlen, "store: cannot start the writer thread");
		compactor_stop(st->compactor);
		free(st->ring);
		free(st);
		return NULL;
	}
	pthread_setname_np(st->thread, "fl-store");
	return st;
nomem:
	if (st)
		free(st->ring);
	free(st);
	snprintf(err, errlen, "store: out of memory");
	return NULL;
}

static int tier_slot(uint32_t tier)
{
	for (int i = 0; i < STORE_TIERS; i++)
		if (store_tiers[i] == tier)
			return i;
	return -1;
}

static struct spool_item *host_item(const struct snapshot *s)
{
	struct spool_item *it = calloc(1, sizeof(*it));
	struct strbuf sb = STRBUF_INIT;

	if (!it)
		return NULL;
	it->kind = ITEM_HSET;
	it->host_registry = 1;
	key_host_record(it->key, sizeof(it->key), s->host);
	snprintf(it->field, sizeof(it->field), "%s", s->host);
	host_entry_encode(s, &sb);
	if (strbuf_failed(&sb)) {
		strbuf_release(&sb);
		free(it);
		return NULL;
	}
	it->blob = sb.buf;
	it->bloblen = sb.len;
	return it;
}

/*
 * Queue the compaction of host's span of `what` (a snapshot tier, or
 * COMPACT_PROFILE(kind): compaction.h) at start, stream key, behind what
 * is queued now: it runs once those entries landed.  The chunk stream is
 * trimmed to the stream's retention.  0 or -ENOMEM.
 */
static int queue_compaction(struct store *st, const char *host, uint32_t what,
			    const char *key, uint64_t start, uint64_t ret_ms)
{
	struct spool_item *ci = calloc(1, sizeof(*ci));

	if (!ci)
		return -ENOMEM;
	ci->kind = ITEM_COMPACT;
	ci->tier = what;
	snprintf(ci->key, sizeof(ci->key), "%s", key);
	snprintf(ci->field, sizeof(ci->field), "%s", host);
	ci->ts_ms = start;
	ci->minid = ret_ms && start > ret_ms ? start - ret_ms : 0;
	spool_push(st, ci);
	return 0;
}

int store_span_ended(struct store *st, const char *host, uint32_t what, const char *key,
		     uint64_t ts_ms, uint64_t span, uint64_t ret_ms)
{
	uint64_t now = chunk_span_of(ts_ms, span) / span, last = 0;
	char name[300];
	uint32_t known_span = 0;
	int known, ret = 0;

	if (!snapshot_zstd_enabled())
		return 0;
	/* spans as 32-bit indexes: a minute's lasts until the year 10000 */
	if (now > UINT32_MAX)
		return 0;
	snprintf(name, sizeof(name), "%u:%s", what, host);
	pthread_mutex_lock(&st->lock);
	known = strmap_get(&st->spans, name, &known_span);
	last = known_span;
	if (!known || now > last)
		ret = strmap_put(&st->spans, name, (uint32_t)now);
	pthread_mutex_unlock(&st->lock);
	if (ret || (known && now <= last) || now < 1)
		return ret;
	return queue_compaction(st, host, what, key, (known ? last : now - 1) * span, ret_ms);
}

/* Queue s (a delta on base too, when it fits; see struct spool_item). */
static int put_snapshot(struct store *st, const struct snapshot *s, const struct snapshot *base)
{
	struct spool_item *it;
	int slot = tier_slot(s->tier), pending;
	uint64_t ret_ms, span = snapshot_delta_span_ms(s->tier);
	char key[320];

	if (slot < 0)
		return -EINVAL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->kind = ITEM_XADD;
	key_tier(it->key, sizeof(it->key), s->host, s->tier);
	snprintf(key, sizeof(key), "%s", it->key);
	it->ts_ms = s->ts_ms;
	ret_ms = st->opts.retention_ms[slot];
	it->minid = ret_ms && s->ts_ms > ret_ms ? s->ts_ms - ret_ms : 0;
	/* trimmed at a span's start, where a chain begins whole: no delta loses its base */
	if (span)
		it->minid -= it->minid % span;
	it->chain = span != 0;
	if (snapshot_encode(s, &it->blob, &it->bloblen)) {
		free(it);
		return -ENOMEM;
	}
	if (snapshot_delta_fits(s, base) &&
	    snapshot_encode_delta(s, base, &it->delta, &it->deltalen) == 0) {
		it->base_ts = base->ts_ms;
		/* a delta that is not smaller is not worth a chain */
		if (it->deltalen >= it->bloblen) {
			free(it->delta);
			it->delta = NULL;
			it->deltalen = 0;
		}
	}
	spool_push(st, it);
	/* compressed writes only: plain ones are for tools that read entries themselves */
	if (span && base && base->tier == s->tier && !strcmp(base->host, s->host) &&
	    snapshot_zstd_enabled()) {
		uint64_t iv = (uint64_t)s->tier * 1000;

		/* the first window of a span: the span before it has ended */
		if (base->ts_ms >= iv && base->ts_ms < s->ts_ms &&
		    (base->ts_ms - iv) / span < (s->ts_ms - iv) / span &&
		    queue_compaction(st, s->host, s->tier, key,
				     (base->ts_ms - iv) - (base->ts_ms - iv) % span, ret_ms))
			return -ENOMEM;
	}
	if (s->tier == 1 && !st->opts.s1_entries_only &&
	    store_span_ended(st, s->host, 1, key, s->ts_ms, chunk_span_ms(1), ret_ms))
		return -ENOMEM;

	if (s->tier == 1) {
		struct spool_item *h = host_item(s);

		if (!h)
			return -ENOMEM;
		/* one queued registry entry per host: refresh it if it is still waiting */
		pthread_mutex_lock(&st->lock);
		pending = 0;
		for (size_t i = st->inflight; i < st->n && !pending; i++) {
			struct spool_item *q = st->ring[(st->head + i) % st->cap];

			if (q->host_registry && !strcmp(q->field, h->field)) {
				/* the spool's byte count follows (it is taken off by size) */
				st->bytes = st->bytes - q->bloblen + h->bloblen;
				free(q->blob);
				q->blob = h->blob;
				q->bloblen = h->bloblen;
				h->blob = NULL;
				pending = 1;
			}
		}
		pthread_mutex_unlock(&st->lock);
		if (pending)
			spool_item_free(h);
		else
			spool_push(st, h);
	}
	return 0;
}

int store_put_snapshot(struct store *st, const struct snapshot *s)
{
	return put_snapshot(st, s, NULL);
}

int store_put_rollup(struct store *st, const struct snapshot *s, const struct snapshot *base)
{
	return put_snapshot(st, s, base);
}

int store_put_stream(struct store *st, const char *key, uint64_t ts_ms, uint64_t retention_ms,
		     const void *blob, size_t len)
{
	struct spool_item *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->kind = ITEM_XADD;
	snprintf(it->key, sizeof(it->key), "%s", key);
	it->ts_ms = ts_ms;
	it->minid = retention_ms && ts_ms > retention_ms ? ts_ms - retention_ms : 0;
	it->blob = malloc(len + 1);
	if (!it->blob) {
		free(it);
		return -ENOMEM;
	}
	memcpy(it->blob, blob, len);
	it->bloblen = len;
	spool_push(st, it);
	return 0;
}

/* An ITEM_XADD_FIELDS of key with nfields pairs fv (copied), not queued yet; NULL: no memory. */
static struct spool_item *fields_item(const char *key, const char *const *fv, int nfields)
{
	struct spool_item *it;
	size_t len = 0, off = 0;

	for (int i = 0; i < 2 * nfields; i++)
		len += strlen(fv[i]) + 1;
	it = calloc(1, sizeof(*it));
	if (!it || !(it->blob = malloc(len))) {
		free(it);
		return NULL;
	}
	it->kind = ITEM_XADD_FIELDS;
	snprintf(it->key, sizeof(it->key), "%s", key);
	for (int i = 0; i < 2 * nfields; i++) {
		size_t l = strlen(fv[i]) + 1;

		memcpy(it->blob + off, fv[i], l);
		off += l;
	}
	it->bloblen = len;
	it->nfields = nfields;
	return it;
}

int store_put_fields(struct store *st, const char *key, uint64_t ts_ms, uint64_t retention_ms,
		     const char *const *fv, int nfields)
{
	struct spool_item *it;

	if (nfields < 1 || nfields > STORE_MAX_FIELDS)
		return -EINVAL;
	it = fields_item(key, fv, nfields);
	if (!it)
		return -ENOMEM;
	it->ts_ms = ts_ms;
	it->minid = retention_ms && ts_ms > retention_ms ? ts_ms - retention_ms : 0;
	spool_push(st, it);
	return 0;
}

int store_put_wake(struct store *st, const char *host)
{
	const char *fv[2] = { "h", host };
	struct spool_item *it;

	if (!store_host_valid(host))
		return -EINVAL;
	it = fields_item(KEY_WAKE, fv, 1);
	if (!it)
		return -ENOMEM;
	it->star = 1;		/* hosts wake in the same millisecond */
	it->maxlen = KEY_WAKE_MAXLEN;
	spool_push(st, it);
	return 0;
}

int store_put_hash(struct store *st, const char *key, const char *field, const char *value,
		   size_t len)
{
	struct spool_item *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->kind = ITEM_HSET;
	snprintf(it->key, sizeof(it->key), "%s", key);
	snprintf(it->field, sizeof(it->field), "%s", field);
	it->blob = malloc(len + 1);
	if (!it->blob) {
		free(it);
		return -ENOMEM;
	}
	memcpy(it->blob, value, len);
	it->bloblen = len;
	spool_push(st, it);
	return 0;
}

int store_flush(struct store *st, uint64_t timeout_ns)
{
	uint64_t deadline = time_mono_ns() + timeout_ns;
	int ret = 0;

	pthread_mutex_lock(&st->lock);
	while (st->n) {
		uint64_t now = time_mono_ns();
		struct timespec ts;

		if (now >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		ts = time_wall_after(50 * NSEC_PER_MSEC);
		pthread_cond_signal(&st->wake);
		pthread_cond_timedwait(&st->drained, &st->lock, &ts);
	}
	pthread_mutex_unlock(&st->lock);
	if (!ret) {
		uint64_t now = time_mono_ns();

		ret = compactor_flush(st->compactor, deadline > now ? deadline - now : 0);
	}
	return ret;
}

void store_get_stats(struct store *st, struct store_stats *out)
{
	pthread_mutex_lock(&st->lock);
	*out = st->stats;
	out->spooled = st->n;
	out->spooled_bytes = st->bytes;
	pthread_mutex_unlock(&st->lock);
}

void store_close(struct store *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->lock);
	st->stop = 1;
	pthread_cond_signal(&st->wake);
	pthread_mutex_unlock(&st->lock);
	pthread_join(st->thread, NULL);
	compactor_stop(st->compactor);
	if (st->n && st->spool_path[0])
		spool_file_save(st->opts.spool_path, ring_at, st, st->n);
	while (st->n)
		spool_item_free(spool_ring_remove(st, 0));
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->wake);
	pthread_cond_destroy(&st->drained);
	strmap_free(&st->spans);
	free(st->ring);
	free(st);
}
