/*
 * store_writer.c - the store's writer thread: it turns the spool's entries
 * (spool_internal.h) into Redis commands, pipelines them in batches, sends a
 * rollup entry as a delta against the stream's newest acknowledged one,
 * and keeps entries queued while Redis is away or a Cluster is moving.
 */
#include "store/spool_internal.h"

#include <hiredis/hiredis.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/array.h"
#include "core/log.h"
#include "core/strmap.h"
#include "core/timeutil.h"
#include "store/compaction.h"
#include "store/conn.h"
#include "store/keyspace.h"

#define BATCH_MAX 128
#define BACKOFF_MIN_NS (100 * NSEC_PER_MSEC)
#define BACKOFF_MAX_NS (5 * NSEC_PER_SEC)

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

void *store_writer_main(void *arg)
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
			struct spool_item *ci = spool_ring_remove(st, 0);

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
			struct spool_item *it = spool_ring_remove(st, 0);

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
