/*
 * rollup.h - condense snapshots into a coarser tier (1 s -> 1 min -> 1 h).
 *
 * A rollup accumulates a window of snapshots of one host:
 *
 *   counters    increase = sum of per-interval increases; a value below the
 *               previous one is a reset and counts as an increase of the new
 *               value; `value` is the last cumulative value
 *   gauges      last, min, max, and sum/n for the average
 *   histograms  the increase over the window: per-interval deltas merged
 *               (a reset contributes the new cumulative histogram), at
 *               the coarse resolution (hist_coarsen: 4 buckets a power of
 *               two, quantiles within 12.5 %)
 *
 * Input may be tier-1 snapshots (cumulative: deltas are taken against the
 * previous input, which the rollup remembers across windows so no interval
 * is lost at a boundary) or rollups of a finer tier (already increases:
 * merged as they are).  A series seen for the first time in tier-1 input has
 * no predecessor; its first interval contributes no increase.
 *
 * The probe writes every tier itself (docs/design.md, Storage): it feeds each 1 s
 * snapshot to a minute rollup and each finished minute to an hour rollup.
 */
#ifndef FL_ROLLUP_H
#define FL_ROLLUP_H

#include "model/snapshot.h"
#include "core/strmap.h"

struct rollup {
	uint32_t tier;			/* seconds per output snapshot */
	struct snapshot acc;		/* the window so far */
	struct strmap acc_index;	/* series key -> index in acc */
	struct snapshot prev;		/* last tier-1 input (for deltas) */
	struct strmap prev_index;	/* built when a series is not where it was */
	int have_prev, prev_indexed;
	struct snapshot last;		/* the window emitted last (a delta's base) */
	int have_last;
	uint64_t window_start_ms;	/* 0 when the window is empty */
	uint64_t inputs;		/* snapshots in this window */
	uint64_t seq;			/* sequence of emitted rollups */
};

/* Start an empty rollup of `tier` seconds for host. Returns 0 or -ENOMEM. */
int rollup_init(struct rollup *r, const char *host, uint32_t tier);
void rollup_free(struct rollup *r);

/*
 * Window a snapshot taken at ts_ms belongs to: its start, aligned to the
 * tier on the wall clock (so every host's minute starts at :00).
 */
uint64_t rollup_window_of(const struct rollup *r, uint64_t ts_ms);

/* The same for a tier of tier_s seconds, without a rollup (remote write's windows). */
uint64_t tier_window_of(uint32_t tier_s, uint64_t ts_ms);

/*
 * Add one snapshot (tier 1, or a finer rollup tier) to the window.
 * Returns 0, -EINVAL if s is of this tier or coarser, or -ENOMEM.
 */
int rollup_add(struct rollup *r, const struct snapshot *s);

/* 1 if the window holds at least one input. */
static inline int rollup_pending(const struct rollup *r)
{
	return r->inputs > 0;
}

/*
 * Emit the window as a snapshot of this tier into out (uninitialised; the
 * caller frees it) and start an empty window.  ts_ms of the result is the
 * end of the window, interval_ms its length.  Returns 0, -ENODATA when the
 * window is empty, or -ENOMEM.
 */
int rollup_finish(struct rollup *r, struct snapshot *out);

/*
 * base: the window this rollup emitted before out (NULL: none yet), for a
 * writer that stores out as a delta on it (snapshot_encode_delta; its
 * histograms are compact).
 */
typedef void (*rollup_emit_fn)(const struct snapshot *out, const struct snapshot *base,
			       void *arg);

/*
 * Feed s into a cascade of rollups r[0..n) (finest first, e.g. minute then
 * hour): when s falls in a new window of r[0], the finished window is
 * passed to emit (with the one before it) and fed on to r[1], and so on.  Returns 0, or -ENOMEM
 * (logged by the caller) when s could not be added.
 */
int rollup_cascade(struct rollup *r, int n, const struct snapshot *s, rollup_emit_fn emit,
		   void *arg);

/*
 * rollup_cascade, taking s: r[0] keeps a 1 s snapshot as the one the next
 * second's counters are differenced with instead of copying it (a copy of
 * every series and histogram was a sixth of the probe's snapshot), and s
 * is freed otherwise.  s is the rollup's (or freed) whatever is returned.
 */
int rollup_cascade_take(struct rollup *r, int n, struct snapshot *s, rollup_emit_fn emit,
			void *arg);

#endif
