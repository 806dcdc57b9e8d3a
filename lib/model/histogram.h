/*
 * histogram.h - log-linear histograms over u64 (the fleet-wide layout).
 *
 * A struct histogram is dense: HIST_BUCKETS counters plus count and sum.
 * Dense makes record, merge and subtract branch-free loops; the wire form
 * (snapshot.c) is sparse, since most buckets of a latency histogram are
 * empty.  See hist_layout.h for the bucket layout and its error bound:
 *
 *   every quantile returned is within 2^-(HIST_G+1) = 3.125 % (relative) of
 *   the exact quantile of the recorded values, and exact below 2^HIST_G.
 *
 * Counts are cumulative where the producer is cumulative (a probe's block
 * latency histogram never shrinks); hist_subtract() turns two cumulative
 * histograms into the delta between them.  `sum` is kept modulo 2^64, which
 * keeps deltas exact even across wrap-around.
 */
#ifndef FL_HISTOGRAM_H
#define FL_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "model/hist_layout.h"

struct histogram {
	uint64_t count;			/* number of values recorded */
	uint64_t sum;			/* sum of values, modulo 2^64 */
	uint64_t buckets[HIST_BUCKETS];
};

/* One non-empty bucket, the unit of the sparse form. */
struct hist_run {
	uint32_t index;
	uint64_t count;
};

/* Zero h. */
void hist_reset(struct histogram *h);

/* Record value v, n times. */
void hist_record_n(struct histogram *h, uint64_t v, uint64_t n);

static inline void hist_record(struct histogram *h, uint64_t v)
{
	hist_record_n(h, v, 1);
}

/* Smallest and largest value that land in bucket idx (inclusive). */
uint64_t hist_bucket_lower(uint32_t idx);

/*
 * Classic cumulative counts of h at the increasing upper bounds
 * bound[0..n) (in a unit where a layout bucket starts at its lower bound x
 * scale) into cum[0..n): each counts the observations whose layout bucket
 * starts at or below the bound.  What /metrics and the rules' _bucket show.
 */
void hist_cumulative(const struct histogram *h, double scale, const double *bound, int n,
		     uint64_t *cum);
uint64_t hist_bucket_upper(uint32_t idx);

/* dst += src, bucket-wise (merge across hosts or time). */
void hist_merge(struct histogram *dst, const struct histogram *src);

/*
 * dst = newer - older, for two cumulative histograms of the same source.
 * Returns 0, or -ERANGE when some bucket of newer is below older (the
 * source was reset); then dst = newer, which is the increase since the
 * reset.  dst may alias newer.
 */
int hist_subtract(struct histogram *dst, const struct histogram *newer,
		  const struct histogram *older);

/*
 * Estimate the q-quantile (0 <= q <= 1) as the midpoint of the bucket
 * holding the value of rank ceil(q * count) (rank 1 for q = 0).  Returns 0
 * for an empty histogram.
 */
uint64_t hist_quantile(const struct histogram *h, double q);

/* Mean of recorded values, 0 when empty. */
double hist_mean(const struct histogram *h);

/*
 * The rollup tiers' resolution (native histograms' schema 4 -> 2): from
 * 2^HIST_G up, each power of two keeps 4 sub-buckets instead of 16, every
 * group of 4 adjacent buckets moved into its second one, (idx & ~3) | 1;
 * below 2^HIST_G values stay exact.  The layout is unchanged, so every
 * reader, merge and subtraction works on coarse histograms as on fine ones;
 * the map is linear and coarsening twice is coarsening once, so the hour
 * tier made of coarse minutes equals the coarse hour.  A quantile is then
 * within HIST_COARSE_ERROR (relative) of the exact one: a value in a group
 * [lo, lo + 4w) with lo >= 16w is reported as lo + 1.5w, at worst 1.5w/16w
 * below or 2.5w/20w above.  count and sum are untouched.
 */
#define HIST_COARSE_ERROR 0.125
void hist_coarsen(struct histogram *h);

/* Number of non-empty buckets. */
size_t hist_nonempty(const struct histogram *h);

/*
 * Write the non-empty buckets, in index order, into runs (room for max).
 * Returns how many there are, which may exceed max (then only max were
 * written).
 */
size_t hist_to_sparse(const struct histogram *h, struct hist_run *runs, size_t max);

/* 1 if a and b have identical count, sum and buckets. */
int hist_equal(const struct histogram *a, const struct histogram *b);

/*
 * The compact form for histograms that are kept rather than worked on (a
 * rules engine holds minutes of every host's snapshots): only the
 * non-empty buckets, one allocation.  A latency histogram has tens of
 * them, so this is ~0.3 KiB instead of the dense form's 7.6 KiB.
 */
struct hist_sparse {
	uint64_t count, sum;
	uint32_t nruns;
	struct hist_run runs[];		/* index order */
};

/* A malloc'd compact copy of h (free with free()), or NULL on -ENOMEM. */
struct hist_sparse *hist_sparse_of(const struct histogram *h);

/* dst = the dense form of s. */
void hist_from_sparse(struct histogram *dst, const struct hist_sparse *s);

/*
 * hist_subtract() for compact operands: dst = newer - older, or dst =
 * newer and -ERANGE when some bucket went down (a reset).
 */
int hist_subtract_sparse(struct histogram *dst, const struct hist_sparse *newer,
			 const struct hist_sparse *older);

#endif
