/*
 * stats.h - small robust statistics for comparing two samples: medians
 * and the one-sided Mann–Whitney U test.
 *
 * Mann–Whitney asks whether values of a tend to be larger than values of
 * b without assuming any distribution, so a few outliers or a skewed
 * latency distribution do not fake a regression.  The p-value uses the
 * normal approximation with tie correction and continuity correction,
 * good from about 8 values per sample.
 */
#ifndef FL_STATS_H
#define FL_STATS_H

#include <stddef.h>

/* Median of x[0..n) (x is reordered); NAN when n == 0. */
double stats_median(double *x, size_t n);

/*
 * One-sided Mann–Whitney U test of "a tends to be greater than b".
 * Returns the p-value in [0, 1] (small: a is greater; 1 when every value
 * is tied), or NAN when either sample is empty.  NaNs in the input are
 * skipped.
 */
double stats_mann_whitney_greater(const double *a, size_t na, const double *b, size_t nb);

/*
 * The hypergeometric upper tail: drawing n of N items of which K are
 * marked, the probability of drawing x or more marked ones.  "Were the K
 * hits spread over the N hosts at random, how likely would a domain of n
 * hosts hold x of them?"  1 for x <= 0; 0 when x is impossible.
 */
double stats_hypergeom_tail(size_t N, size_t K, size_t n, size_t x);

/*
 * Were n events independent and spread evenly over a span, the chance that
 * c of them fall within a fraction w (0..1) of it of each other: at most
 * n * C(n-1, c-1) * w^(c-1) (a union bound over the cluster's first
 * event), capped at 1.
 */
double stats_cluster_tail(size_t n, size_t c, double w);

/* Fisher's combination of two independent p-values: t (1 - ln t), t = p1 p2. */
double stats_fisher2(double p1, double p2);

#endif
