/*
 * store.c - the probe's spooling writer; see store.h (the readers are in
 * store_read.c, the rules' alert transaction in alert_checkpoint.c, the host
 * registry's readers in host_registry.c, the spool's file across restarts in
 * spool_file.c).
 *
 * The spool is a ring of pointers to encoded commands, guarded by one
 * mutex.  The producer (the probe's sampling loop) holds the mutex only to
 * push; the writer thread holds it only to take a batch and to pop what
 * Redis acknowledged, so encoding and network I/O happen outside it.  The
 * first `inflight` entries belong to the writer while it talks to Redis;
 * the producer never drops those, which is what lets it free entries
 * without reference counts.
 */
#include "store/store.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/array.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/strbuf.h"
#include "core/timeutil.h"
#include "model/host_entry.h"
#include "model/snapshot_zstd.h"
#include "store/compaction.h"
#include "store/conn.h"
#include "store/keyspace.h"
#include "store/spool_file.h"

_Static_assert(SPOOL_MAX_FIELDS == STORE_MAX_FIELDS, "a spool file holds what a store queues");

const uint32_t store_tiers[STORE_TIERS] = { 1, 60, 3600 };

#define BATCH_MAX 128
/* spans waiting for the compactor at most (~280 bytes each) */
#define COMPACT_QUEUE_MAX 65536
#define BACKOFF_MIN_NS (100 * NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (5 * NSEC_PER_SEC)

struct store {
	struct store_opts opts;
	char url[512];
	char spool_path[512];
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* producer -> writer */
	pthread_cond_t drained;		/* writer -> store_flush */
	struct spool_item **ring;
	size_t cap, head, n, inflight, bytes;
	int stop;
	struct store_stats stats;
	struct compactor *compactor;	/* runs the spool's ITEM_COMPACTs (compaction.h) */
};

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

static size_t item_bytes(const struct spool_item *it)
{
	return sizeof(*it) + it->bloblen + it->deltalen;
}

/* Remove the entry at ring position pos (0 = head), shifting the tail. */
static struct spool_item *ring_remove(struct store *st, size_t pos)
{
	size_t idx = (st->head + pos) % st->cap;
	struct spool_item *it = st->ring[idx];

	if (pos == 0) {
		st->head = (st->head + 1) % st->cap;
	} else {
		for (size_t i = pos; i + 1 < st->n; i++)
			st->ring[(st->head + i) % st->cap] =
				st->ring[(st->head + i + 1) % st->cap];
	}
	st->n--;
	st->bytes -= item_bytes(it);
	return it;
}

static int spool_full(const struct store *st, size_t extra_bytes)
{
	return st->n + 1 > st->opts.spool_max_entries ||
	       st->bytes + extra_bytes > st->opts.spool_max_bytes;
}

/* Push it (taking ownership); drops the oldest idle entries to make room. */
static void spool_push(struct store *st, struct spool_item *it)
{
	pthread_mutex_lock(&st->lock);
	while (spool_full(st, item_bytes(it)) && st->n > st->inflight) {
		struct spool_item *old = ring_remove(st, st->inflight);

		if (old->kind == ITEM_XADD)
			st->stats.dropped++;
		spool_item_free(old);
	}
	if (spool_full(st, item_bytes(it)) || st->n == st->cap) {
		/* everything queued is in flight: drop the newcomer */
		if (it->kind == ITEM_XADD)
			st->stats.dropped++;
		pthread_mutex_unlock(&st->lock);
		spool_item_free(it);
		return;
	}
	st->ring[(st->head + st->n) % st->cap] = it;
	st->n++;
	st->bytes += item_bytes(it);
	pthread_cond_signal(&st->wake);
	pthread_mutex_unlock(&st->lock);
}

/* ---- writer thread ------------------------------------------------------ */

static int append_item(struct conn *c, struct spool_item *it)
{
	char id[48], minid[32];
	const char *argv[6 + 2 * STORE_MAX_FIELDS];
	size_t lens[6 + 2 * STORE_MAX_FIELDS];
	int argc = 0;

#define ARG(s, l) do { argv[argc] = (s); lens[argc] = (l); argc++; } while (0)
	if (it->kind == ITEM_XADD || it->kind == ITEM_XADD_FIELDS) {
		if (it->star)
			snprintf(id, sizeof(id), "*");
		else
			snprintf(id, sizeof(id), "%" PRIu64 "-0", it->ts_ms);
		snprintf(minid, sizeof(minid), "%" PRIu64, it->maxlen ? it->maxlen : it->minid);
		ARG("XADD", 4);
		ARG(it->key, strlen(it->key));
		if (it->maxlen)
			ARG("MAXLEN", 6);
		else
			ARG("MINID", 5);
		ARG("~", 1);
		ARG(minid, strlen(minid));
		ARG(id, strlen(id));
		if (it->kind == ITEM_XADD) {
			ARG("d", 1);
			if (it->sent_delta)
				ARG(it->delta, it->deltalen);
			else
				ARG(it->blob, it->bloblen);
		} else {
			const char *f = it->blob;

			for (int i = 0; i < 2 * it->nfields; i++, f += strlen(f) + 1)
				ARG(f, strlen(f));
		}
	} else if (it->host_registry) {
		/* its own key (a spool file from before 0.2 says fl:hosts: same host) */
		if (key_host_record(it->key, sizeof(it->key), it->field) < 0)
			return -EINVAL;
		ARG("SET", 3);
		ARG(it->key, strlen(it->key));
		ARG(it->blob, it->bloblen);
	} else {
		ARG("HSET", 4);
		ARG(it->key, strlen(it->key));
		ARG(it->field, strlen(it->field));
		ARG(it->blob, it->bloblen);
	}
#undef ARG
	return conn_append(c, it->key, argc, argv, lens);
}

/*
 * The writer's view of each rollup stream's newest entry, for deltas: the
 * ts of the last entry Redis acknowledged on this connection.  Forgotten
 * when the connection is lost (Redis may have restarted empty, or a
 * replica without the last writes taken over) and when Redis refuses an
 * entry; then the stream's next entry is sent whole.  An entry whose base
 * is still unacknowledged (both in one pipeline, as when a spool drains)
 * is sent whole too: a delta never lands without its base.
 */
struct chain_view {
	struct strmap index;	/* stream key -> slot in ts[] */
	uint64_t *ts;		/* 0: not known */
	uint32_t n, cap;
};

static uint64_t chain_newest(const struct chain_view *cv, const char *key)
{
	uint32_t i;

	return strmap_get(&cv->index, key, &i) ? cv->ts[i] : 0;
}

static void chain_set(struct chain_view *cv, const char *key, uint64_t ts)
{
	uint32_t i;

	if (strmap_get(&cv->index, key, &i)) {
		cv->ts[i] = ts;
		return;
	}
	if (ARRAY_GROW(cv->ts, cv->cap, cv->n + 1, 64))
		return;		/* not known: sent whole */
	if (strmap_put(&cv->index, key, cv->n))
		return;
	cv->ts[cv->n++] = ts;
}

static void chain_reset(struct chain_view *cv)
{
	for (uint32_t i = 0; i < cv->n; i++)
		cv->ts[i] = 0;
}

static void chain_free(struct chain_view *cv)
{
	strmap_free(&cv->index);
	free(cv->ts);
	memset(cv, 0, sizeof(*cv));
}

/*
 * A count that changes whenever the connection's view of where keys live
 * does (a redirect followed, the slot map read again, a node reconnected):
 * a failover may have promoted a replica that missed the last write, so
 * the chains start over (whole entries) when it moves.
 */
static uint64_t topology_epoch(const struct conn *c)
{
	struct conn_stats cs;

	conn_get_stats(c, &cs);
	return cs.moved + cs.ask + cs.refreshes + cs.reconnects;
}

static int transient_error(const char *msg)
{
	static const char *const prefixes[] = { "LOADING", "OOM", "BUSY", "TRYAGAIN",
						"MASTERDOWN", "READONLY", "CLUSTERDOWN" };

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(msg, prefixes[i], strlen(prefixes[i])) == 0)
			return 1;
	return 0;
}

/* Interpret one reply for it. Returns 1 to back off (transient error). */
static int handle_reply(struct store *st, struct chain_view *cv, struct spool_item *it,
			redisReply *r)
{
	if (it->chain)
		chain_set(cv, it->key, r->type != REDIS_REPLY_ERROR ? it->ts_ms : 0);
	if (r->type != REDIS_REPLY_ERROR) {
		it->done = 1;
		return 0;
	}
	if (it->kind != ITEM_HSET && strstr(r->str, "equal or smaller")) {
		if (it->attempts > 1) {
			it->done = 1;	/* a replay of a write that landed */
		} else {
			log_warn("redis: %s: entry %" PRIu64 " is older than the stream's newest "
				 "(wall clock stepped back?); writing it with a new id", it->key,
				 it->ts_ms);
			it->star = 1;
		}
		return 0;
	}
	if (transient_error(r->str)) {
		log_warn("redis: %s (will retry)", r->str);
		return 1;
	}
	log_error("redis refused a write to %s: %s; dropping that entry", it->key, r->str);
	pthread_mutex_lock(&st->lock);
	st->stats.errors++;
	pthread_mutex_unlock(&st->lock);
	it->done = 2;
	return 0;
}

static void wait_ns(struct store *st, uint64_t ns)
{
	struct timespec ts;

	ts = time_wall_after(ns);
	pthread_cond_timedwait(&st->wake, &st->lock, &ts);
}

static void *writer_main(void *arg)
{
	struct store *st = arg;
	struct spool_item *batch[BATCH_MAX];
	uint64_t backoff = BACKOFF_MIN_NS;
	struct chain_view cv = { 0 };
	uint64_t epoch = 0;
	struct conn *c = NULL;
	int was_down = 0;
	char err[256];

	if (st->opts.thread_start)
		st->opts.thread_start();

	pthread_mutex_lock(&st->lock);
	while (!st->stop) {
		size_t nb, sent = 0, got = 0;
		int ioerr = 0, slow = 0;	/* ioerr 1: an append failed, 2: a reply */

		if (st->n == 0) {
			pthread_cond_broadcast(&st->drained);
			pthread_cond_wait(&st->wake, &st->lock);
			continue;
		}
		if (!c) {
			pthread_mutex_unlock(&st->lock);
			c = conn_open(st->url, st->opts.timeout_ns, err, sizeof(err));
			pthread_mutex_lock(&st->lock);
			if (!c) {
				if (!was_down)
					log_warn("%s; keeping up to %zu entries in memory until it "
						 "returns (%zu queued)", err,
						 st->opts.spool_max_entries, st->n);
				was_down = 1;
				st->stats.connected = 0;
				wait_ns(st, backoff);
				backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
				continue;
			}
			st->stats.reconnects++;
		}
		if (topology_epoch(c) != epoch) {
			epoch = topology_epoch(c);
			chain_reset(&cv);
		}
		/* a compaction goes to the compactor once what was queued before it landed */
		while (st->n && st->ring[st->head]->kind == ITEM_COMPACT) {
			struct spool_item *ci = ring_remove(st, 0);

			compactor_queue(st->compactor, ci->field, ci->tier, ci->ts_ms, ci->minid);
			spool_item_free(ci);
		}
		if (st->n == 0)
			continue;
		nb = st->n < BATCH_MAX ? st->n : BATCH_MAX;
		for (size_t i = 0; i < nb; i++) {
			batch[i] = st->ring[(st->head + i) % st->cap];
			if (batch[i]->kind == ITEM_COMPACT) {
				nb = i;
				break;
			}
		}
		st->inflight = nb;
		pthread_mutex_unlock(&st->lock);

		for (size_t i = 0; i < nb; i++) {
			if (batch[i]->done)
				continue;
			batch[i]->attempts++;
			batch[i]->sent_delta = batch[i]->delta &&
					       chain_newest(&cv, batch[i]->key) == batch[i]->base_ts;
			if (append_item(c, batch[i])) {
				ioerr = 1;
				break;
			}
			sent++;
		}
		/*
		 * On a cluster one node may fail while the others answer: every
		 * reply is read, and what failed stays spooled for the next try.
		 */
		for (size_t i = 0; i < nb && ioerr != 1 && got < sent; i++) {
			redisReply *r;

			if (batch[i]->done)
				continue;
			got++;
			r = conn_reply(c);
			if (!r) {
				ioerr = 2;
				continue;
			}
			slow |= handle_reply(st, &cv, batch[i], r);
			freeReplyObject(r);
		}
		if (ioerr) {
			chain_reset(&cv);
			if (!was_down)
				log_warn("lost the redis connection (%s); spooling until it returns",
					 conn_errstr(c)[0] ? conn_errstr(c) : "unknown error");
			was_down = 1;
			/*
			 * A single server's conn is opened again; a cluster's keeps
			 * its slot map and reconnects the node that failed (or
			 * finds its replica promoted) by itself.
			 */
			if (!conn_is_cluster(c)) {
				conn_close(c);
				c = NULL;
			}
		} else if (got) {
			if (was_down)
				log_info("redis is back; draining %zu spooled entries", st->n);
			was_down = 0;
			backoff = BACKOFF_MIN_NS;
		}

		pthread_mutex_lock(&st->lock);
		st->inflight = 0;
		while (st->n && st->ring[st->head]->done) {
			struct spool_item *it = ring_remove(st, 0);

			if (it->kind == ITEM_XADD && it->done == 1)
				st->stats.written++;
			spool_item_free(it);
		}
		st->stats.connected = !ioerr;
		if (slow || ioerr) {
			wait_ns(st, backoff);
			if (ioerr)
				backoff = backoff * 2 > BACKOFF_MAX_NS ? BACKOFF_MAX_NS : backoff * 2;
		}
	}
	pthread_mutex_unlock(&st->lock);
	conn_close(c);
	chain_free(&cv);
	return NULL;
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
	if (pthread_create(&st->thread, NULL, writer_main, st)) {
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

/* Queue s (a delta on base too, when it fits; see struct spool_item). */
static int put_snapshot(struct store *st, const struct snapshot *s, const struct snapshot *base)
{
	struct spool_item *it;
	int slot = tier_slot(s->tier), pending;
	uint64_t ret_ms, span = snapshot_delta_span_ms(s->tier);

	if (slot < 0)
		return -EINVAL;
	it = calloc(1, sizeof(*it));
	if (!it)
		return -ENOMEM;
	it->kind = ITEM_XADD;
	key_tier(it->key, sizeof(it->key), s->host, s->tier);
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
		    (base->ts_ms - iv) / span < (s->ts_ms - iv) / span) {
			uint64_t start = (base->ts_ms - iv) - (base->ts_ms - iv) % span;
			struct spool_item *ci = calloc(1, sizeof(*ci));

			if (!ci)
				return -ENOMEM;
			ci->kind = ITEM_COMPACT;
			ci->tier = s->tier;
			/* not it->key: it belongs to the writer once pushed */
			key_tier(ci->key, sizeof(ci->key), s->host, s->tier);
			snprintf(ci->field, sizeof(ci->field), "%s", s->host);
			ci->ts_ms = start;
			ci->minid = ret_ms && start > ret_ms ? start - ret_ms : 0;
			spool_push(st, ci);
		}
	}

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
		spool_item_free(ring_remove(st, 0));
	pthread_mutex_destroy(&st->lock);
	pthread_cond_destroy(&st->wake);
	pthread_cond_destroy(&st->drained);
	free(st->ring);
	free(st);
}
