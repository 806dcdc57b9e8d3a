/*
 * snapshot.h - one host's series at one instant, and its msgpack codec.
 *
 * A series is a dotted metric name plus labels (sorted by key on insert, so
 * a series has one canonical key "name{k=v,k2=v2}").  Three kinds:
 *
 *   counter    u64, cumulative; `increase` is the growth over the interval
 *              (0 in 1 s snapshots, filled in by rollups)
 *   gauge      double; rollups keep min, max, last, sum and n (for avg)
 *   histogram  log-linear (histogram.h); cumulative in 1 s snapshots, the
 *              increase over the window in rollups
 *
 * `tier` says which: 1 for a probe's 1 s snapshot, 60 and 3600 for the
 * minute and hour rollups (rollup.h).
 *
 * Wire form (version 2; version 1 lacks the forms marked v2 and "base"), a
 * msgpack map with short keys so that fields can be added without
 * breaking readers:
 *
 *   { "v": 2, "host": str, "ts": u64 ms (wall, end of interval),
 *     "iv": u64 ms (interval covered), "seq": u64, "tier": u32,
 *     "base": u64 ms (v2, a delta entry: the ts of the entry it is on),
 *     "lbl": { str: str }, "s": [ series... ] }
 *   series     [ name, { str: str }, kind (0 counter, 1 gauge, 2 hist), v ]
 *   counter v  u64 | [ value, increase ]
 *              | [ nil, increase ]  (v2 delta: the base's value + increase)
 *   gauge v    num | [ last, min, max, sum, n ]
 *              | [ last, n ] | [ last, n, sum ]  (v2: one value all window,
 *                min = max = last; sum = last x n to the bit unless given)
 *              last is nil in a delta: the base's last
 *   num        float64, float32 or integer: whichever holds it exactly
 *   hist v     [ count, sum, [ gap, n, gap, n, ... ] ]   (sparse: gap is
 *              the number of empty buckets skipped since the last one)
 *
 * A writer uses "v": 1 when an entry needs none of the v2 forms, so that a
 * reader of the version before reads it.  Deltas are for rollups: a minute
 * (or hour) rollup written on the entry of the window just before it, in
 * the same hour (day): counters whose value follows from the base's, and
 * gauges that stayed at the base's value, are a byte or two.  A chain
 * never crosses an hour (day) boundary, so a reader that starts at one
 * always meets a whole entry first (snapshot_delta_span_ms).
 *
 * An entry is this msgpack, or the same compressed as a zstd frame with a
 * dictionary (snapshot_zstd.h) when that is smaller; snapshot_decode reads
 * both.  Unknown top-level keys are ignored (forward compatibility); a newer major
 * "v" is rejected.  snapshot_decode() treats its input as hostile: bounded
 * sizes, every type checked, never crashes (see fuzz/fuzz_snapshot.c).
 */
#ifndef FL_SNAPSHOT_H
#define FL_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "model/histogram.h"
#include "model/labels.h"

#define SNAPSHOT_VERSION 2
#define SNAPSHOT_MAX_SERIES 200000
#define SNAPSHOT_MAX_LABELS 32
#define SNAPSHOT_MAX_STR 1024
#define SNAPSHOT_MAX_BYTES (64u << 20)
#define SERIES_LINK_NONE UINT32_MAX

enum series_kind {
	SERIES_COUNTER = 0,
	SERIES_GAUGE = 1,
	SERIES_HISTOGRAM = 2,
};

struct gauge_value {
	double last, min, max, sum;
	uint64_t n;
};

struct series {
	char *name;
	struct label *labels;
	uint32_t nlabels;
	enum series_kind kind;
	uint64_t id;		/* hash of name and labels, set on add */
	uint32_t name_hash;	/* snapshot_name_hash(name), set on add */
	/*
	 * For readers that keep a host's snapshots in order (the rules
	 * engine): 1 + the index of the same series in the previous snapshot,
	 * SERIES_LINK_NONE if it was absent there, 0 if nobody linked it.
	 * Not encoded; copies and decodes start at 0.
	 */
	uint32_t link;
	union {
		struct {
			uint64_t value;
			uint64_t increase;
		} counter;
		struct gauge_value gauge;
		struct histogram *hist;		/* dense; NULL once compacted */
	};
	struct hist_sparse *sparse;	/* compacted histogram (snapshot_compact) */
	/*
	 * Name and labels belong to another snapshot: the one this was
	 * decoded like (until snapshot_adopt_strings), or the one that
	 * adopted them.  Not freed with this series.
	 */
	int borrowed;
	uint32_t like;	/* 1 + the index of the series of the snapshot decoded like */
};

struct snapshot {
	char *host;
	uint64_t ts_ms;
	uint64_t interval_ms;
	uint64_t seq;
	uint32_t tier;
	struct label *labels;
	uint32_t nlabels;
	/*
	 * labels and their strings are one allocation (snapshot_set_labels);
	 * snapshot_set_label makes them separate again before it changes one
	 */
	int labels_one;
	struct series *series;
	uint32_t nseries;
	uint32_t cap;
};

/* A hash of a metric name, for selectors to compare before the string. */
uint32_t snapshot_name_hash(const char *name);

/*
 * h (fnv.h) extended by labels l[0..n) in their order, key and value each
 * after a separator.  Alert fingerprints (rules/engine/engine.c) are
 * snapshot_labels_hash(fnv64_str(FNV64_OFFSET, alertname), labels, n);
 * series ids the same with the metric name.
 */
uint64_t snapshot_labels_hash(uint64_t h, const struct label *l, uint32_t n);

/*
 * Turn every histogram of s into its compact form (hist_sparse), for
 * snapshots that are kept rather than added to.  Afterwards read
 * histograms with series_hist(); snapshot_copy, _encode and _free handle
 * either form.  Returns 0 or -ENOMEM (then some histograms stay dense).
 */
int snapshot_compact(struct snapshot *s);

/*
 * The same for one histogram series: 0 once ser holds its compact form
 * (already, or now), -ENOMEM, or -EINVAL when ser holds no histogram.
 */
int series_compact(struct series *ser);

/*
 * The dense histogram of histogram series ser: ser->hist, or ser's compact
 * form expanded into scratch.
 */
const struct histogram *series_hist(const struct series *ser, struct histogram *scratch);

/* Initialise an empty snapshot. host is copied. Returns 0 or -ENOMEM. */
int snapshot_init(struct snapshot *s, const char *host, uint64_t ts_ms,
		  uint64_t interval_ms, uint64_t seq, uint32_t tier);

/* Free everything s owns; s may then be initialised again. */
void snapshot_free(struct snapshot *s);

/*
 * The heap bytes s holds (malloc_usable_size of each of its allocations,
 * borrowed strings not counted) plus the struct itself: what keeping it
 * costs a cache.
 */
size_t snapshot_bytes(const struct snapshot *s);

/* Deep copy src into dst (uninitialised). Returns 0 or -ENOMEM. */
int snapshot_copy(struct snapshot *dst, const struct snapshot *src);

/* Set a host-level label (e.g. rack=r12). Returns 0 or -ENOMEM. */
int snapshot_set_label(struct snapshot *s, const char *key, const char *value);

/*
 * Set the host labels l[0..n) on s: what n calls of snapshot_set_label
 * leave.  When s has none yet and l is as set_label keeps labels (keys
 * strictly ascending by label_key_cmp, values within SNAPSHOT_MAX_STR: a
 * decoded chunk's sets, another snapshot's labels), the array and its
 * strings are one allocation (labels_one), for a decoder that sets one
 * set on many snapshots.  Returns 0, -EINVAL (a key empty or too long:
 * nothing set) or -ENOMEM.
 */
int snapshot_set_labels(struct snapshot *s, const struct label *l, uint32_t n);

/*
 * Add a series.  Labels follow as key, value pairs of const char *,
 * terminated by NULL: snapshot_add(s, "block.ios", SERIES_COUNTER,
 * "device", "sda", "op", "read", NULL).  A histogram series gets a zeroed
 * histogram.  Returns the new series, or NULL on -ENOMEM or too many labels.
 */
struct series *snapshot_add(struct snapshot *s, const char *name,
			    enum series_kind kind, ...) __attribute__((sentinel));

/* The same, labels given as an array (copied, then sorted). */
struct series *snapshot_add_labels(struct snapshot *s, const char *name,
				   enum series_kind kind,
				   const struct label *labels, uint32_t nlabels);

/*
 * Add histogram series name{labels} (copied, then sorted) holding sp, its
 * compact form, taken over: no dense histogram is made (a decoder's).
 * Returns the series, or NULL (sp freed) on -ENOMEM or too many labels.
 */
struct series *snapshot_add_sparse(struct snapshot *s, const char *name,
				   const struct label *labels, uint32_t nlabels,
				   struct hist_sparse *sp);

/*
 * Add a series with proto's identity: its name and labels copied (they are
 * already valid and sorted), its kind, id and name hash taken, not made
 * again; no value (a histogram gets neither form: give it one).  For a
 * decoder that adds one series to many snapshots (a chunk's column, point
 * after point).  Returns the series, or NULL on -ENOMEM or too many series.
 */
struct series *snapshot_add_like(struct snapshot *s, const struct series *proto);

/* Convenience wrappers around snapshot_add for the scalar kinds. */
struct series *snapshot_add_counter(struct snapshot *s, const char *name,
				    uint64_t value, ...) __attribute__((sentinel));
struct series *snapshot_add_gauge(struct snapshot *s, const char *name,
				  double value, ...) __attribute__((sentinel));

/* Value of a label of series, or NULL. */
const char *series_label(const struct series *ser, const char *key);

/*
 * Write the canonical key "name{k=v,...}" of ser into buf.  Returns the
 * length it needed (like snprintf).
 */
int series_key(const struct series *ser, char *buf, size_t len);

/*
 * The series of s with the same name and labels as like, or NULL.  A
 * probe writes its series in the same order every interval, so the index
 * hint is tried first; the search is linear only when it misses.  This is
 * the hot lookup of range functions: no key is formatted.
 */
struct series *snapshot_find_same(const struct snapshot *s, const struct series *like,
				  uint32_t hint);

/*
 * Whether a and b are the same series: same name and labels (compared as
 * strings after their ids; kinds not compared).
 */
int snapshot_same_series(const struct series *a, const struct series *b);

/* Find a series by canonical key, or NULL (linear; for tests and tools). */
struct series *snapshot_find(const struct snapshot *s, const char *key);

/*
 * Encode s.  On success *out is a malloc'd buffer of *outlen bytes owned by
 * the caller.  Returns 0 or -ENOMEM.
 */
int snapshot_encode(const struct snapshot *s, char **out, size_t *outlen);

/*
 * How far a chain of deltas of a tier-`tier` entry may reach: the span
 * (ms, aligned on the wall clock) whose first entry is always whole; 0 for
 * tiers that are never deltas (1 s snapshots).
 */
uint64_t snapshot_delta_span_ms(uint32_t tier);

/*
 * Whether s may be written as a delta on base: the same host and tier, base
 * the window just before s, both in one span.
 */
int snapshot_delta_fits(const struct snapshot *s, const struct snapshot *base);

/*
 * Encode s as a delta on base (see above); a reader needs base to decode
 * it.  Returns 0, -EINVAL when !snapshot_delta_fits(s, base), or -ENOMEM.
 */
int snapshot_encode_delta(const struct snapshot *s, const struct snapshot *base, char **out,
			  size_t *outlen);

/*
 * Decode len bytes of untrusted input into s (uninitialised).  Returns 0,
 * or -EINVAL / -E2BIG / -ENOMEM with a reason naming the field in err (a
 * caller buffer of errlen bytes); s holds nothing to free on failure.
 */
int snapshot_decode(const void *buf, size_t len, struct snapshot *s,
		    char *err, size_t errlen);

/*
 * The same, histograms decoded straight into their compact form
 * (series.sparse; read them with series_hist()), for readers that keep
 * them (the rules engine): no dense 7.6 KiB histogram per series on the way.
 */
int snapshot_decode_compact(const void *buf, size_t len, struct snapshot *s,
			    char *err, size_t errlen);

/*
 * snapshot_decode_compact for a reader that keeps a host's newest snapshot
 * and decodes the next one (the rules engine): every series that repeats
 * one of like's (NULL: none), name and labels byte for byte, uses like's
 * strings, id and name hash instead of copying, sorting and hashing its
 * own: most of a decode's cost, as consecutive snapshots of a host repeat
 * their series in the same order.  Such series are borrowed
 * (series.borrowed, .like) until snapshot_adopt_strings(s, like); s may be
 * freed before that, like must not be.
 */
int snapshot_decode_like(const void *buf, size_t len, struct snapshot *s,
			 const struct snapshot *like, char *err, size_t errlen);

/*
 * snapshot_decode (compact: snapshot_decode_compact) of an entry that may
 * be a delta: base is the entry before it as decoded (NULL: none).  A
 * delta on anything but base (none given, another ts, a series the base
 * lacks) is -ENOLINK with the reason in err; a whole entry ignores base.
 */
int snapshot_decode_on(const void *buf, size_t len, struct snapshot *s,
		       const struct snapshot *base, int compact, char *err, size_t errlen);

/*
 * s, decoded like `like` (snapshot_decode_like), takes over the strings it
 * borrows from it, before like is freed: like's series are marked borrowed.
 * A string s borrows from elsewhere (it was decoded like another snapshot)
 * is copied.  Returns 0, or -ENOMEM when a copy failed: then s still
 * borrows it, and like must be kept (leaked) rather than freed.
 */
int snapshot_adopt_strings(struct snapshot *s, struct snapshot *like);

#endif
