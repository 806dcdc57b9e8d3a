/*
 * test_histogram.c - the fleet-wide histogram: quantile error bound on
 * random and adversarial samples, merge, subtract, extreme values.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/histogram.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	/* xorshift64*: deterministic, so a failure reproduces */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Exact quantile with the same rank rule as hist_quantile. */
static uint64_t exact_quantile(const uint64_t *sorted, size_t n, double q)
{
	double r = q * (double)n;
	size_t rank = (size_t)r;

	if ((double)rank < r)
		rank++;
	if (rank == 0)
		rank = 1;
	return sorted[rank - 1];
}

/*
 * Every quantile of v's histogram is within the layout's bound of the
 * exact one, and so is the coarse (rollup tiers') histogram's within
 * HIST_COARSE_ERROR, of the exact quantile and of the fine one.
 */
static void check_quantiles(uint64_t *v, size_t n)
{
	static const double qs[] = { 0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1 };
	struct histogram *h = calloc(1, sizeof(*h)), *coarse = calloc(1, sizeof(*coarse));

	for (size_t i = 0; i < n; i++)
		hist_record(h, v[i]);
	memcpy(coarse, h, sizeof(*h));
	hist_coarsen(coarse);
	qsort(v, n, sizeof(*v), cmp_u64);
	cr_assert_eq(h->count, n);
	cr_assert_eq(coarse->count, n);
	cr_assert_eq(coarse->sum, h->sum);
	for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t want = exact_quantile(v, n, qs[i]);
		uint64_t got = hist_quantile(h, qs[i]), cgot = hist_quantile(coarse, qs[i]);
		/* bound: 2^-(G+1) relative, exact below 2^G */
		double bound = (double)want / (double)(1u << (HIST_G + 1));
		double diff = got > want ? (double)(got - want) : (double)(want - got);
		double cdiff = cgot > want ? (double)(cgot - want) : (double)(want - cgot);
		double fdiff = cgot > got ? (double)(cgot - got) : (double)(got - cgot);

		cr_assert(diff <= bound + 0.5,
			  "q=%g: got %llu, exact %llu, |diff| %.0f > bound %.0f", qs[i],
			  (unsigned long long)got, (unsigned long long)want, diff, bound);
		cr_assert(cdiff <= HIST_COARSE_ERROR * (double)want + 0.5 &&
			  fdiff <= HIST_COARSE_ERROR * (double)got + 0.5,
			  "q=%g: coarse %llu, exact %llu, fine %llu: off by more than %g", qs[i],
			  (unsigned long long)cgot, (unsigned long long)want,
			  (unsigned long long)got, HIST_COARSE_ERROR);
	}
	free(coarse);
	free(h);
}

Test(histogram, layout_is_contiguous_and_covers_u64)
{
	cr_assert_eq(hist_bucket_index(0), 0);
	cr_assert_eq(hist_bucket_index(UINT64_MAX), HIST_BUCKETS - 1);
	cr_assert_eq(hist_bucket_upper(HIST_BUCKETS - 1), UINT64_MAX);
	for (uint32_t i = 0; i + 1 < HIST_BUCKETS; i++) {
		cr_assert_eq(hist_bucket_upper(i) + 1, hist_bucket_lower(i + 1), "gap after %u", i);
		cr_assert_eq(hist_bucket_index(hist_bucket_lower(i)), i);
		cr_assert_eq(hist_bucket_index(hist_bucket_upper(i)), i);
	}
}

Test(histogram, exact_below_2g)
{
	for (uint64_t v = 0; v < HIST_SUB; v++) {
		cr_assert_eq(hist_bucket_lower(hist_bucket_index(v)), v);
		cr_assert_eq(hist_bucket_upper(hist_bucket_index(v)), v);
	}
}

Test(histogram, values_at_and_above_2_31_and_2_63)
{
	static const uint64_t vals[] = {
		(1ULL << 31) - 1, 1ULL << 31, (1ULL << 31) + 1, 1ULL << 32,
		(1ULL << 63) - 1, 1ULL << 63, (1ULL << 63) + 1, UINT64_MAX,
	};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint32_t idx = hist_bucket_index(vals[i]);

		cr_assert(idx < HIST_BUCKETS);
		cr_assert(hist_bucket_lower(idx) <= vals[i] && vals[i] <= hist_bucket_upper(idx),
			  "%llu not within bucket %u [%llu, %llu]", (unsigned long long)vals[i],
			  idx, (unsigned long long)hist_bucket_lower(idx),
			  (unsigned long long)hist_bucket_upper(idx));
	}
	cr_assert_eq(hist_bucket_lower(hist_bucket_index(1ULL << 31)), 1ULL << 31);
	cr_assert_eq(hist_bucket_lower(hist_bucket_index(1ULL << 63)), 1ULL << 63);
	cr_assert_neq(hist_bucket_index((1ULL << 63) - 1), hist_bucket_index(1ULL << 63));

	struct histogram *h = calloc(1, sizeof(*h));
	hist_record(h, 1ULL << 63);
	hist_record(h, UINT64_MAX);
	uint64_t q = hist_quantile(h, 1.0);
	cr_assert(q >= (1ULL << 63) + (1ULL << 62), "p100 of {2^63, 2^64-1} is %llu",
		  (unsigned long long)q);
	free(h);
}

Test(histogram, quantiles_random_uniform_within_bound)
{
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));

	for (size_t i = 0; i < n; i++)
		v[i] = rng() % 10000000;
	check_quantiles(v, n);
	free(v);
}

Test(histogram, quantiles_random_log_spread_within_bound)
{
	size_t n = 200000;
	uint64_t *v = malloc(n * sizeof(*v));

	/* every magnitude from 1 to 2^64 */
	for (size_t i = 0; i < n; i++)
		v[i] = rng() >> (rng() % 64);
	check_quantiles(v, n);
	free(v);
}

Test(histogram, quantiles_adversarial_within_bound)
{
	size_t n = 100000;
	uint64_t *v = malloc(n * sizeof(*v));

	/* values at bucket edges: just below/at each power of two and sub-bucket */
	for (size_t i = 0; i < n; i++) {
		uint32_t idx = (uint32_t)(rng() % HIST_BUCKETS);

		v[i] = (i & 1) ? hist_bucket_lower(idx) : hist_bucket_upper(idx);
	}
	check_quantiles(v, n);
	/* a bimodal sample: a million fast, a few pathological slow */
	for (size_t i = 0; i < n; i++)
		v[i] = i % 1000 == 0 ? 5000000000ULL + i : 100 + (i % 7);
	check_quantiles(v, n);
	/* all identical */
	for (size_t i = 0; i < n; i++)
		v[i] = 123456789;
	check_quantiles(v, n);
	free(v);
}

/*
 * Coarsening keeps values below 2^G exact, leaves at most one bucket in
 * four, and is linear and idempotent: the hour made of coarse minutes is
 * the coarse hour, and a delta of coarse histograms the coarse delta.
 */
Test(histogram, coarse_is_exact_below_2g_linear_and_idempotent)
{
	struct histogram *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct histogram *sum = calloc(1, sizeof(*sum)), *twice = calloc(1, sizeof(*twice));

	for (uint64_t v = 0; v < HIST_SUB; v++)
		hist_record(a, v);
	for (int i = 0; i < 50000; i++) {
		hist_record(a, rng() >> (rng() % 64));
		hist_record(b, rng() % 5000000);
	}
	size_t fine = hist_nonempty(a);
	uint64_t exact[HIST_SUB];

	memcpy(exact, a->buckets, sizeof(exact));
	hist_merge(sum, a);
	hist_merge(sum, b);
	hist_coarsen(a);
	hist_coarsen(b);
	hist_coarsen(sum);
	for (uint32_t i = 0; i < HIST_SUB; i++)
		cr_assert(a->buckets[i] == exact[i] && exact[i] >= 1, "value %u is no longer exact",
			  i);
	for (uint32_t i = HIST_SUB; i < HIST_BUCKETS; i++)
		cr_assert(a->buckets[i] == 0 || (i & 3) == 1, "bucket %u kept", i);
	cr_assert_lt(hist_nonempty(a) - HIST_SUB, (fine - HIST_SUB) / 2,
		     "%zu buckets of %zu left", hist_nonempty(a), fine);
	memcpy(twice, a, sizeof(*a));
	hist_merge(twice, b);
	cr_assert(hist_equal(twice, sum), "coarse(a) + coarse(b) != coarse(a + b)");
	hist_coarsen(twice);
	cr_assert(hist_equal(twice, sum), "coarsening twice changed it");
	cr_assert_eq(hist_subtract(twice, sum, b), 0);
	cr_assert(hist_equal(twice, a), "coarse(a + b) - coarse(b) != coarse(a)");
	free(a);
	free(b);
	free(sum);
	free(twice);
}

Test(histogram, merge_of_n_equals_union)
{
	enum { N = 16, PER = 5000 };
	struct histogram *parts = calloc(N, sizeof(*parts));
	struct histogram *merged = calloc(1, sizeof(*merged));
	struct histogram *all = calloc(1, sizeof(*all));

	for (int p = 0; p < N; p++) {
		for (int i = 0; i < PER; i++) {
			uint64_t v = rng() >> (rng() % 64);

			hist_record(&parts[p], v);
			hist_record(all, v);
		}
	}
	for (int p = 0; p < N; p++)
		hist_merge(merged, &parts[p]);
	cr_assert(hist_equal(merged, all));
	cr_assert_eq(merged->count, N * PER);
	free(parts);
	free(merged);
	free(all);
}

Test(histogram, subtract_gives_delta_and_detects_reset)
{
	struct histogram *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct histogram *d = calloc(1, sizeof(*d)), *want = calloc(1, sizeof(*want));

	for (int i = 0; i < 1000; i++)
		hist_record(a, (uint64_t)i * 37);
	memcpy(b, a, sizeof(*a));
	for (int i = 0; i < 500; i++) {
		hist_record(b, (uint64_t)i * 1013);
		hist_record(want, (uint64_t)i * 1013);
	}
	cr_assert_eq(hist_subtract(d, b, a), 0);
	cr_assert(hist_equal(d, want));
	/* reversed: a reset; the result is the newer histogram */
	cr_assert_eq(hist_subtract(d, a, b), -ERANGE);
	cr_assert(hist_equal(d, a));
	free(a);
	free(b);
	free(d);
	free(want);
}

Test(histogram, sparse_lists_nonempty_buckets_in_order)
{
	struct histogram *h = calloc(1, sizeof(*h));
	struct hist_run runs[8];

	hist_record_n(h, 5, 3);
	hist_record(h, 1000);
	hist_record(h, UINT64_MAX);
	cr_assert_eq(hist_to_sparse(h, runs, 8), 3);
	cr_assert_eq(runs[0].index, 5);
	cr_assert_eq(runs[0].count, 3);
	cr_assert_eq(runs[1].index, hist_bucket_index(1000));
	cr_assert_eq(runs[2].index, HIST_BUCKETS - 1);
	cr_assert_eq(hist_to_sparse(h, runs, 1), 3, "reports the total even when truncated");
	cr_assert_eq(h->sum, 5 * 3 + 1000 + UINT64_MAX);	/* modulo 2^64 */
	free(h);
}

Test(histogram, empty_quantile_is_zero)
{
	struct histogram *h = calloc(1, sizeof(*h));

	cr_assert_eq(hist_quantile(h, 0.99), 0);
	cr_assert_eq(hist_mean(h), 0.0);
	free(h);
}

/* The compact form: same histogram back, same deltas, resets detected. */
Test(histogram, sparse_round_trip_and_subtract)
{
	struct histogram *a = calloc(4, sizeof(*a)), *b = a + 1, *d1 = a + 2, *d2 = a + 3;
	struct hist_sparse *sa, *sb;

	cr_assert(a);
	for (uint64_t v = 1; v < 5000000; v = v * 3 + 7)
		hist_record_n(a, v, v % 5 + 1);
	*b = *a;
	hist_record_n(b, 123456, 10);
	hist_record_n(b, 9, 2);
	sa = hist_sparse_of(a);
	sb = hist_sparse_of(b);
	cr_assert(sa && sb);
	cr_expect_eq(sa->nruns, hist_nonempty(a));
	hist_from_sparse(d1, sa);
	cr_expect(hist_equal(d1, a), "dense -> sparse -> dense changed the histogram");
	cr_expect_eq(hist_subtract_sparse(d1, sb, sa), 0);
	cr_expect_eq(hist_subtract(d2, b, a), 0);
	cr_expect(hist_equal(d1, d2), "sparse and dense deltas differ");
	cr_expect_eq(d1->count, 12);
	cr_expect_eq(hist_subtract_sparse(d1, sa, sb), -ERANGE, "a reset went unnoticed");
	cr_expect(hist_equal(d1, a), "after a reset the delta is the newer histogram");
	free(sa);
	free(sb);
	free(a);
}
