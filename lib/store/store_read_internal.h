/*
 * store_read_internal.h - what the one-host readers (store_read.c) and the
 * pipelined many-host reader (store_read_ranges.c) share: the state of a
 * read of one host's entries and chunks, and the steps that deliver them.
 * Not an API: lib/store only.
 */
#ifndef FL_STORE_READ_INTERNAL_H
#define FL_STORE_READ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "store/store.h"

/*
 * What the readers do besides delivering: the stream's host (a snapshot
 * naming another host inside is filed under the stream's, never under a
 * phantom host), and whom to tell about entries that do not decode.
 */
struct read_ctx {
	const char *host;		/* NULL: not checked */
	int compact;			/* histograms decoded compact (snapshot_decode_compact) */
	size_t index;			/* the host's index for bad_cb */
	store_bad_cb bad_cb;
	store_like_cb like;		/* decode like the host's newest (store_read_ranges) */
	chunk_series_cb series;		/* the series chunks' points are built with (NULL: all) */
	struct chunk_cache *cache;	/* chunks kept decoded (NULL: none) */
	const char *series_key;		/* names the pick series makes, for the cache */
	void *arg;
	/*
	 * A rollup tier's chain (snapshot.h: deltas): the entry before the
	 * next, as decoded, and where delivery begins (the read starts
	 * earlier, at the chain's whole entry).
	 */
	int chain;
	struct snapshot *base;		/* NULL: none yet */
	uint64_t deliver_from;
	size_t max;			/* entries to deliver at most (0: all) */
	/*
	 * The tier's chunks' points in the range (ended spans, compaction.h),
	 * delivered in ts order among the entries; an entry of the same ts
	 * (read before the chunks, then compacted) is delivered instead.
	 */
	struct chunk_points *chunks;
	int stopped;			/* cb asked to stop, or max delivered */
};

struct chunk_points {
	struct snapshot *pts;
	size_t n, at;
};

/* Free what is left of cp's points, and cp (NULL is fine). */
void chunk_points_release(struct chunk_points *cp);
/* Free the chain's base rc holds. */
void chain_end(struct read_ctx *rc);
/* Where a read of tier from from_ms must start: its chain's whole entry. */
uint64_t chain_start(uint32_t tier, uint64_t from_ms);
/* The chunks of reply r into rc->chunks, the points of [rc->deliver_from, to_ms]. */
void chunks_take(struct read_ctx *rc, redisReply *r, uint64_t to_ms, size_t *bad);
/* Deliver the chunks' points before ts `before` (0: all); 1 when delivery is to stop. */
int chunks_deliver(struct read_ctx *rc, uint64_t before, store_snapshot_cb cb, void *arg, int *delivered);
/* Deliver the entries of XRANGE reply r (reverse: XREVRANGE), among rc's chunk points. */
int deliver_entries(redisReply *r, int reverse, store_snapshot_cb cb, void *arg, struct read_ctx *rc, size_t *bad, char *err, size_t errlen);
/* Queue the XRANGE of host's chunks of tier from from_ms's span. */
int append_chunks(struct conn *c, const char *host, uint32_t tier, uint64_t from_ms, const char *to);
/* Whether a tier without chains must read its chunks, given its entries' reply r. */
int chunks_may_hold(uint32_t tier, uint64_t from_ms, uint64_t to_ms, const redisReply *r);

#endif
