/*
 * chunk_cache.h - ended chunks kept decoded, for a reader that asks for
 * the same history again (faultline-web: a dashboard refreshing its last
 * hour every 30 s decodes each of the hour's chunks once, not per refresh).
 *
 * A chunk is immutable once written (compaction.h), so what it decodes to
 * depends on its bytes alone: an entry is found by the chunk's exact bytes
 * (compared in full, not by a hash), the stream's host and how it was
 * decoded (compact histograms, the series pick), and holds the points
 * chunk_decode_select builds from the whole chunk.  A hit hands out copies
 * of the points in the asked range: the answer is the one decoding gives,
 * so readers with and without a cache, or with caches of any age, answer
 * alike; a chunk retention trimmed is no longer read, so never served.
 *
 * Bounded by bytes (the points' heap, snapshot_bytes, and the bytes kept
 * to compare), least recently used first out; a chunk whose points alone
 * would take more than an eighth of the bound is decoded and not kept.
 * Safe to share between threads: lookups and inserts take a mutex, copies
 * are made outside it (an entry in use is freed by its last user).
 */
#ifndef FL_CHUNK_CACHE_H
#define FL_CHUNK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "model/chunk.h"
#include "model/snapshot.h"

struct chunk_cache;

/* A cache of at most max_bytes (> 0), or NULL on -ENOMEM. */
struct chunk_cache *chunk_cache_new(size_t max_bytes);

/* Free cc and every entry (none may be in use). */
void chunk_cache_free(struct chunk_cache *cc);

struct chunk_cache_stats {
	uint64_t hits, misses;		/* lookups since the start */
	uint64_t evictions;		/* entries let go to stay within the bound */
	uint64_t too_large;		/* chunks decoded but not kept (over an eighth) */
	size_t entries, bytes, max_bytes;
};

void chunk_cache_stats(struct chunk_cache *cc, struct chunk_cache_stats *st);

/*
 * chunk_decode_select(buf, len, compact, from_ms, to_ms, want, arg, ...)
 * through cc: the points of the chunk in [from_ms, to_ms] into *pts and *n
 * (free with chunk_points_free), from cc when it holds the chunk as host's
 * decoded with this pick, else decoded whole and kept.  pick_key names
 * what want picks (NULL or "" with want NULL: every series); two picks
 * with one key must pick the same series.  Same returns and err as
 * chunk_decode_select: a chunk that does not decode is not kept.
 */
int chunk_cache_decode(struct chunk_cache *cc, const char *host, const char *pick_key,
		       const void *buf, size_t len, int compact, uint64_t from_ms,
		       uint64_t to_ms, chunk_series_cb want, void *arg, struct snapshot **pts,
		       size_t *n, char *err, size_t errlen);

/*
 * A chunk's decoded points lent to a reader (chunk_cache_get): held until
 * chunk_cache_put, an evicted entry included.
 */
struct chunk_ref;

/*
 * chunk_cache_decode without the copies: every point of the chunk (not
 * only a range) into *pts and *n, borrowed from cc and valid until
 * chunk_cache_put(cc, *ref); they must not be changed.  A chunk too large
 * to keep is lent all the same (freed by its put).  Same returns as
 * chunk_cache_decode; nothing to put on an error.
 */
int chunk_cache_get(struct chunk_cache *cc, const char *host, const char *pick_key,
		    const void *buf, size_t len, int compact, chunk_series_cb want, void *arg,
		    const struct snapshot **pts, size_t *n, struct chunk_ref **ref, char *err,
		    size_t errlen);

/* Give back what chunk_cache_get lent (NULL is fine). */
void chunk_cache_put(struct chunk_cache *cc, struct chunk_ref *ref);

#endif
