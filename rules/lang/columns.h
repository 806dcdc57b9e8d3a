/*
 * columns.h - one host's history as columns: what the rules engine keeps.
 *
 * A probe sends the same few dozen series every second, so a chain of
 * decoded snapshots (wave 1) kept each series' name, labels and a ~100-byte
 * struct series per point: ~3.9 KB per host per second.  Here a host keeps
 *
 *   - one struct column per series it has sent (its identity: name,
 *     labels, kind, id, stored once) with one value slot per point:
 *     counters as u64, gauges as their last value (a double: every value
 *     exact), histograms packed (below), plus a presence bit per point (a
 *     series may be absent from a snapshot);
 *   - one timestamp per point, shared by every column;
 *   - the newest snapshot decoded, which selectors walk (its series'
 *     `link` is 1 + their column) and which carries the host's labels.
 *
 * Points live in one ring, oldest first: every point of the last keep_ms
 * (the longest range the rules read; baselines read the 1-minute tier
 * instead, rules/lang/minute_eval.c).  Walking one series back is a walk down
 * one array: no pointer chase per point.
 *
 * A histogram point is a byte string of LEB128 varints: count, sum, and
 * (gap to the previous non-empty bucket, count) per non-empty bucket —
 * either in full, or as the increase over the point before (a cumulative
 * histogram grows in a few buckets a second, by small counts).  A delta
 * follows the previous point directly (no gaps), at most COLUMNS_HIST_CHAIN
 * of them after a full one, and the ring's first point of a column is
 * always full (the next one is rebased when the first leaves), so reading
 * any point applies at most COLUMNS_HIST_CHAIN deltas.  A histogram that
 * went down (a restarted probe) is stored in full.  ~60 bytes a point
 * instead of a hist_sparse's ~650.
 *
 * The ring's capacity grows by an eighth (not doubling) and slots wrap by
 * a compare, so it is at most ~12 % larger than it needs.  A column no
 * point holds any more is removed.
 *
 * Most series a probe sends are never read back in time: no rule applies a
 * range function or an offset to them (the shipped rules read 13 of a
 * host's ~30 that way).  A columns_policy says which
 * series keep history; the others keep only their value at the newest
 * point (`keep` 0: no ring values at all).  A column given history later (a
 * reload whose rules read it) keeps it from then on.
 */
#ifndef FL_COLUMNS_H
#define FL_COLUMNS_H

#include <stddef.h>
#include <stdint.h>

#include "model/histogram.h"
#include "model/snapshot.h"

#define COLUMNS_HIST_CHAIN 15

struct col_ring {
	uint64_t *ts;			/* by slot */
	size_t head, n, cap;		/* oldest at slot head */
};

struct column {
	struct series def;		/* identity only: its values are not used */
	void *v;			/* by slot: uint64_t[] | double[] | uint8_t *[] (packed) */
	uint64_t *present;		/* a bit per slot */
	size_t live;			/* points that hold this series */
	unsigned chain;			/* histograms: deltas since the newest full point */
	int keep;			/* 1: history in the ring; 0: only the newest point */
	int now;			/* keep 0: whether the newest point holds it */
	union {
		uint64_t u;
		double d;
		uint8_t *h;		/* packed in full */
	} last;				/* keep 0: its value at the newest point */
};

/*
 * Which series keep history (NULL policy or fn: all of them).  Asked when
 * a column is made, and again for every column when gen changes (a reload).
 */
struct columns_policy {
	int (*keeps)(const struct series *def, void *arg);
	void *arg;
	unsigned gen;
};

struct columns {
	struct col_ring ring;		/* the points' timestamps */
	struct column *col;
	uint32_t ncol, capcol;
	uint32_t *by_id;		/* open addressing on def.id: column + 1, 0 empty */
	uint32_t nby_id;		/* a power of two, >= 2 * ncol */
	unsigned policy_gen;		/* the policy's gen the columns follow */
	/*
	 * newest.series[i].name_hash, packed: a selector scans these 4-byte
	 * hashes, not the ~100-byte series, to find its candidates (at 10,000
	 * hosts the newest snapshots are out of cache when a rule walks them).
	 * Valid while nhash == newest.nseries.
	 */
	uint32_t *hash;
	uint32_t nhash, caphash;
	struct snapshot newest;		/* valid when the history is not empty */
};

/* An empty history. */
void columns_init(struct columns *c);

/* Free everything c owns; c may then be initialised again. */
void columns_free(struct columns *c);

/*
 * Room for n points in all, made at once (a reader that knows how many
 * points it is about to push: a query's range at its tier's interval),
 * instead of growing by an eighth as they come, every kept column copied
 * each time.  Returns 0 or -ENOMEM (nothing changed).
 */
int columns_reserve(struct columns *c, size_t n);

/*
 * Append snapshot s (newer than every point held; histograms in either
 * form) as the newest point, taking it over: s is left empty.  Points older
 * than keep_ms before s are dropped.  Every series of the new newest snapshot is linked to
 * its column.  s may borrow the newest's strings (snapshot_decode_like
 * with c->newest): it adopts them.  Returns 0, or -ENOMEM (then s is freed
 * and the history is as before, but for points aged out).
 */
int columns_push(struct columns *c, struct snapshot *s, uint64_t keep_ms,
		 const struct columns_policy *policy);

/*
 * Append pts[0..n) (n >= 1, strictly ascending, newer than every point
 * held; histograms compact) as if a copy of each had been pushed
 * (columns_push), without changing them or building a snapshot per point:
 * their values go straight to their columns (a query's points lent by a
 * chunk cache).  newest is the history's new newest snapshot, a copy of
 * pts[n - 1] (its series in the same order) that the caller may have
 * relabelled (the host's labels are the newest's); it is taken over and
 * left empty.  Returns 0, -EINVAL (nothing done, newest freed), or
 * -ENOMEM: c then holds some of the points and is only fit to be freed.
 */
int columns_push_run(struct columns *c, const struct snapshot *pts, size_t n,
		     struct snapshot *newest, uint64_t keep_ms,
		     const struct columns_policy *policy);

/*
 * The newest snapshot's series ser (a gauge added to it after the push,
 * e.g. a recording rule's result) is given its column and its value at the
 * newest point; call again after its value changes.  Returns 0 or -ENOMEM.
 */
int columns_set_newest(struct columns *c, struct series *ser, const struct columns_policy *policy);

/*
 * Append src's points from index i0 on to dst, as if each had been pushed
 * (dropping dst's points older than keep_ms before each), without
 * decoding anything: values are copied column by column, a histogram that
 * is a delta on a point not copied is stored in full, and src's newest
 * snapshot is copied as dst's newest.  For a reader that holds the
 * history before what src holds (a query that read Redis up to where an
 * in-memory tail begins).  src's point i0 must be newer than every point
 * of dst (else -EINVAL, nothing done).  Returns 0, or -ENOMEM: dst then
 * holds some of the points and is only fit to be freed.
 */
int columns_append(struct columns *dst, const struct columns *src, size_t i0, uint64_t keep_ms,
		   const struct columns_policy *policy);

/* Points held. */
static inline size_t columns_len(const struct columns *c)
{
	return c->ring.n;
}

/* Slot of point i (< columns_len). */
static inline size_t columns_slot(const struct columns *c, size_t i)
{
	size_t s = c->ring.head + i;

	return s >= c->ring.cap ? s - c->ring.cap : s;
}

/* Timestamp (ms) of point i. */
static inline uint64_t columns_ts(const struct columns *c, size_t i)
{
	return c->ring.ts[columns_slot(c, i)];
}

/* Whether column k holds a value at point i. */
static inline int columns_has(const struct columns *c, uint32_t k, size_t i)
{
	size_t slot;

	if (!c->col[k].keep)
		return c->col[k].now && i + 1 == columns_len(c);
	slot = columns_slot(c, i);
	return (int)((c->col[k].present[slot / 64] >> (slot % 64)) & 1);
}

/*
 * Column k's value at point i as a double (a counter's or a gauge's), or
 * NAN when absent.  *present (may be NULL) says which.
 */
static inline double columns_scalar(const struct columns *c, uint32_t k, size_t i, int *present)
{
	const struct column *col = &c->col[k];
	size_t slot;
	int has;

	if (!col->keep) {
		has = col->now && i + 1 == columns_len(c);
		if (present)
			*present = has;
		if (!has || col->def.kind == SERIES_HISTOGRAM)
			return __builtin_nan("");
		return col->def.kind == SERIES_COUNTER ? (double)col->last.u : col->last.d;
	}
	slot = columns_slot(c, i);
	has = (int)((col->present[slot / 64] >> (slot % 64)) & 1);
	if (present)
		*present = has;
	if (!has)
		return __builtin_nan("");
	if (col->def.kind == SERIES_COUNTER)
		return (double)((const uint64_t *)col->v)[slot];
	if (col->def.kind == SERIES_GAUGE)
		return ((const double *)col->v)[slot];
	return __builtin_nan("");
}

/* A counter column's raw value at point i (0 when absent). */
static inline uint64_t columns_counter(const struct columns *c, uint32_t k, size_t i)
{
	if (!c->col[k].keep)
		return c->col[k].last.u;
	return ((const uint64_t *)c->col[k].v)[columns_slot(c, i)];
}

/*
 * A histogram column's value at point i into out (dense).  Returns 0, or
 * -ENOENT when the column holds nothing there.
 */
int columns_hist(const struct columns *c, uint32_t k, size_t i, struct histogram *out);

/* Index of the last point at or before t, or -1. */
long columns_last_at(const struct columns *c, uint64_t t);

/* The column of series ser of the newest snapshot. */
static inline uint32_t columns_of(const struct series *ser)
{
	return ser->link - 1;
}

/*
 * Bytes c holds (structures, strings, histograms), for the engine's
 * memory figures.
 */
size_t columns_bytes(const struct columns *c);

#endif
