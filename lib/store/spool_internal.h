/*
 * spool_internal.h - the spool a struct store is, shared by its producer side
 * (store.c: the public API, which pushes) and its writer thread
 * (store_writer.c, which sends and pops); nobody outside lib/store sees it.
 *
 * The spool is a ring of pointers to encoded commands, guarded by one
 * mutex.  The producer holds the mutex only to push; the writer thread
 * holds it only to take a batch and to pop what Redis acknowledged, so
 * encoding and network I/O happen outside it.  The first `inflight`
 * entries belong to the writer while it talks to Redis; the producer never
 * drops those, which is what lets it free entries without reference
 * counts.
 */
#ifndef FL_SPOOL_INTERNAL_H
#define FL_SPOOL_INTERNAL_H

#include <pthread.h>
#include <stddef.h>

#include "core/strmap.h"
#include "store/spool_file.h"
#include "store/store.h"

struct compactor;

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
	struct strmap spans;		/* "what:host" -> its newest span (lock): store_span_ended */
};

/* What an entry counts against spool.max_bytes. */
static inline size_t spool_item_bytes(const struct spool_item *it)
{
	return sizeof(*it) + it->bloblen + it->deltalen;
}

/*
 * Remove and return the entry at ring position pos (0 = head), shifting
 * the tail; the caller holds st->lock and owns the entry after.
 */
static inline struct spool_item *spool_ring_remove(struct store *st, size_t pos)
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
	st->bytes -= spool_item_bytes(it);
	return it;
}

/*
 * The writer thread (store_writer.c), started by store_open with st as its
 * argument: sends the spool's entries to Redis in pipelined batches, pops
 * what Redis took, backs off while Redis is away, and returns once
 * st->stop is set (whatever is still queued stays for store_close).
 */
void *store_writer_main(void *arg);

/*
 * Stream `key` of host is kept as spans of span ms (what: its compaction
 * job, a snapshot tier or COMPACT_PROFILE(kind), compaction.h), and an
 * entry at ts_ms was just queued to it: when ts_ms starts a span newer
 * than the last one seen of (what, host), that one ended and is queued
 * for compaction behind the entry, its chunk stream trimmed to ret_ms
 * (spans as model/chunk.h's: entry ids in (S, S + span], chunk_span_of).
 * The newest span is never compacted (readers count on its entries); the
 * first entry a store sees compacts the span before, which a run before
 * may have left.  Compacting a span without entries finds none.  Nothing
 * when compression is off (FAULTLINE_WIRE_COMPRESS=0).  0 or -ENOMEM.
 */
int store_span_ended(struct store *st, const char *host, uint32_t what, const char *key,
		     uint64_t ts_ms, uint64_t span, uint64_t ret_ms);

#endif
