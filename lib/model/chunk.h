/*
 * chunk.h - a span of one host's rollups (an hour of minute rollups, a day
 * of hour rollups) as one block of columns, for the long tail of the
 * rollup tiers.
 *
 * A minute rollup stored on its own is a row: every series' name, labels
 * and values, ~410 compressed bytes on the simulator plus ~60 of Redis's
 * per-entry overhead, and most of those bytes are values that differ
 * little from the minute before.  A chunk turns the span's rows into
 * columns: each series once, then its values over the span next to each
 * other as differences from the point before (a counter's value follows
 * from its increase; a gauge's min and max are offsets from its last), so
 * that what is stored is how much each value moved.  The probe writes
 * minutes as entries (readers see each at once) and, once its span has
 * ended, replaces them by their chunk (store.h).
 *
 * Exact or refused: chunk_encode decodes what it wrote and compares every
 * point with its input, field by field and bit by bit, series in their
 * order; a span it cannot hold exactly (a series twice in a point, or
 * changing its kind) is -EINVAL, and stays as entries.
 *
 * Format, version 2 (version 1: the same without histogram mode 2; both
 * are read): a zstd frame (no dictionary) of
 *
 *   "FLK" 2                     magic, version
 *   str host  uv tier  uv n     n points, ts ascending
 *   n x [ uv ts - previous ts (the first: ts), uv interval_ms,
 *         zz seq - previous seq - 1 ]
 *   uv nsets, nsets x labels    the host's label sets; when nsets > 1,
 *   n x uv set                  which one each point has
 *   uv nseries, nseries x [ str name, labels, u8 kind, presence, values ]
 *   labels     uv count, count x [ str key, str value ]
 *   presence   0: in every point | 1 and a bitmap of ceil(n / 8) bytes
 *   values     for each point the series is in:
 *     counter    zz increase - previous increase,
 *                zz value - previous value - increase     (mod 2^64)
 *     gauge      u8 scale k once (255: raw), then per point zz n - previous
 *                n and, in units of 2^-k: zz last - previous last,
 *                zz last - min, zz max - last, zz sum - previous sum;
 *                raw: last, min, max, sum as little-endian doubles
 *     histogram  u8 mode once (0: the non-empty buckets as differences,
 *                1: as they are, 2: only the buckets that differ from the
 *                previous point's, as differences; a bucket not written is
 *                the previous point's), then per point zz count - the
 *                buckets' total, zz sum - previous sum, uv runs, runs x
 *                [ uv index gap, zz bucket - the previous point's bucket |
 *                uv bucket ]   (the first point's "previous": all zero)
 *   uv norders, norders x [ uv point, the point's series in its own order:
 *         uv where each stands in the span's order ]   (points whose
 *         series are not in the span's order, ascending)
 *   uv = LEB128 varint, zz = zigzag varint, str = uv length + bytes
 *
 * chunk_decode treats its input as hostile: every count bounded, every
 * read checked (fuzz/fuzz_chunk.c).
 */
#ifndef FL_CHUNK_H
#define FL_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "model/snapshot.h"

#define CHUNK_VERSION 2
#define CHUNK_MAX_POINTS 1440		/* a day of minutes */
#define CHUNK_MAX_BYTES (16u << 20)	/* decompressed */
#define CHUNK_MAX_VALUES (1u << 20)	/* series x points present */
#define CHUNK_MAX_HIST_POINTS 16384	/* histogram series x points present */

/*
 * The span (ms, aligned on the wall clock) one chunk of a tier-`tier`
 * stream holds: a minute of 1 s snapshots, an hour of minutes, a day of
 * hours (for the rollups, the span of their delta chains too).  Entry ids
 * are window ends, so a span starting at S holds the entries with ids in
 * (S, S + span]: chunk_span_of.
 */
uint64_t chunk_span_ms(uint32_t tier);

/* The start of the span (of span ms) the entry with id ts_ms belongs to. */
static inline uint64_t chunk_span_of(uint64_t ts_ms, uint64_t span)
{
	return ts_ms ? (ts_ms - 1) - (ts_ms - 1) % span : 0;
}

/*
 * Encode pts[0..n) (one host, one tier, ts ascending, 1 <= n <=
 * CHUNK_MAX_POINTS) into *out (malloc'd, *outlen bytes), checked to decode
 * back to every point exactly.  Returns 0, -EINVAL when the points cannot
 * be held exactly (not one host and tier, not ascending, a series twice
 * in a point or changing its kind, too large), or -ENOMEM.
 */
int chunk_encode(const struct snapshot *pts, size_t n, char **out, size_t *outlen);

/*
 * Decode a chunk of untrusted bytes into *pts (a malloc'd array of *n
 * snapshots; free with chunk_points_free); histograms in their compact form
 * when compact (snapshot_decode_compact).  Returns 0, or -EINVAL / -E2BIG /
 * -ENOMEM with the reason, naming the field, in err; nothing to free then.
 */
int chunk_decode(const void *buf, size_t len, int compact, struct snapshot **pts, size_t *n,
		 char *err, size_t errlen);

/*
 * chunk_decode of the points with ts in [from_ms, to_ms] only (*n may be
 * 0): the others' values are read and dropped, never built, as a reader
 * of 15 minutes of an hour's chunk needs.
 */
int chunk_decode_range(const void *buf, size_t len, int compact, uint64_t from_ms,
		       uint64_t to_ms, struct snapshot **pts, size_t *n, char *err, size_t errlen);

/*
 * Which series a reader builds (chunk_decode_select): 1 to build the
 * series named name, 0 to read its values and drop them.
 */
typedef int (*chunk_series_cb)(const char *name, void *arg);

/*
 * chunk_decode_range building only the series want picks (want NULL: all,
 * as chunk_decode_range): a query of one metric over a host's hour reads
 * every column, as it must to find the next, but builds one.  The points
 * then hold the picked series in the span's order, not in each point's
 * own (a reader that picks does not compare points whole).
 */
int chunk_decode_select(const void *buf, size_t len, int compact, uint64_t from_ms,
			uint64_t to_ms, chunk_series_cb want, void *arg, struct snapshot **pts,
			size_t *n, char *err, size_t errlen);

/* Free what chunk_decode returned. */
void chunk_points_free(struct snapshot *pts, size_t n);

/*
 * Whether a and b hold the same snapshot: host, times, labels, series in
 * order, and every value to the bit (histograms dense or compact alike).
 */
int snapshot_equal(const struct snapshot *a, const struct snapshot *b);

/* The same for one series: name, labels, kind and every value to the bit. */
int series_equal(const struct series *x, const struct series *y);

#endif
