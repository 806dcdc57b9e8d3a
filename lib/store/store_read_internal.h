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
	store_run_cb run;		/* chunk points in runs (NULL: through the snapshot cb) */
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

/*
 * A page's chunks' points in ts order: runs (strictly ascending, each newer
 * than the run before) over the chunks' decoded points, which are either
 * this read's own or lent by the chunk cache (and then never changed).
 */
struct chunk_run {
	struct snapshot *pts;		/* its holder's points */
	size_t at, n;			/* [at, n) left to deliver */
	uint32_t holder;
};

struct chunk_holder {
	struct snapshot *pts;		/* a chunk decoded: owned (ref NULL) or lent */
	size_t n;
	struct chunk_ref *ref;
};

struct chunk_points {
	struct chunk_run *run;
	size_t nrun, caprun, cur;	/* cur: the run delivery is at */
	struct chunk_holder *holder;
	size_t nholder, capholder;
	struct chunk_cache *cache;	/* the lender of holders with a ref */
};

/* Free what is left of cp's points, and cp (NULL is fine). */
void chunk_points_release(struct chunk_points *cp);
/* Keep of cp's points those before ts `before`, and of them the newest `need`. */
void chunk_points_keep(struct chunk_points *cp, uint64_t before, size_t need);
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
